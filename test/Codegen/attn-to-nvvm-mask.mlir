// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -attn-allocate-smem -attn-to-nvvm -split-input-file | FileCheck %s

// attn.mask lowers the same way on both targets (FragmentLowering.cpp): per
// fragment row one limit, then a signed compare and select per score.
// Top-left: limit = min(kv_len, row + r + 1).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @top_left_sm80(
  // CHECK: %[[LIM:.*]] = arith.minsi %{{[0-9]+}}, %{{[0-9]+}} : i32
  // CHECK-NEXT: %[[REL:.*]] = arith.subi %[[LIM]], %{{[0-9]+}} : i32
  // CHECK: %[[MASKED:.*]] = arith.cmpi sge, %{{[0-9]+}}, %[[REL]] : i32
  // CHECK-NEXT: arith.select %[[MASKED]], %{{.*}}, %{{.*}} : f32
  func.func @top_left_sm80(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                           %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// Bottom-right: the tile's first row moves by kv_len - q_len (once per tile),
// limit = row + r + 1 + kv_len - q_len with no min (it is <= kv_len for every
// row < q_len); signed compares, so a negative limit masks the whole row.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @bottom_right_sm80(
  // CHECK: %[[OFF:.*]] = arith.subi %[[KV:[0-9]+]], %[[QL:[0-9]+]] : i32
  // CHECK-NEXT: %[[DIAG:.*]] = arith.addi %{{[0-9]+}}, %[[OFF]] : i32
  // CHECK-NEXT: arith.constant 0xFF800000 : f32
  // CHECK: %[[R:.*]] = arith.addi %[[DIAG]], %{{[0-9]+}} : i32
  // CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
  // CHECK-NEXT: %[[END:.*]] = arith.addi %[[R]], %[[ONE]] : i32
  // CHECK-NEXT: %[[REL:.*]] = arith.subi %[[END]], %{{[0-9]+}} : i32
  // CHECK: %[[MASKED:.*]] = arith.cmpi sge, %{{[0-9]+}}, %[[REL]] : i32
  // CHECK-NEXT: arith.select %[[MASKED]], %{{.*}}, %{{.*}} : f32
  // CHECK-NOT: arith.minsi
  func.func @bottom_right_sm80(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                               %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// The same lowering on sm_90a; the kernel keeps the alignment for the metadata.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @bottom_right_sm90a(
  // CHECK-SAME: causal = true,{{.*}} causal_align = bottom_right,
  // CHECK: %[[OFF:.*]] = arith.subi %{{[0-9]+}}, %{{[0-9]+}} : i32
  // CHECK-NEXT: arith.addi %{{[0-9]+}}, %[[OFF]] : i32
  // CHECK-NEXT: arith.constant 0xFF800000 : f32
  // CHECK-NOT: arith.minsi
  func.func @bottom_right_sm90a(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                                %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// A window (left 100, right 50, bottom-right): the right limit is
// min(d + 1, kv_len - 50) + 50 (kv_len - 50 once per tile; never
// overflows), the left limit max(d, 100) - 100; both are taken relative to
// the tile's and the thread's first column, so each score compares them
// with its column offset as an immediate (sle right, sgt left) and selects.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @window_sm80(
  // CHECK-SAME: causal_align = bottom_right, softcap = 0.0, window_left = 100, window_right = 50,
  // CHECK: %[[OFF:.*]] = arith.subi %[[KV:[0-9]+]], %{{[0-9]+}} : i32
  // CHECK-NEXT: %[[DIAG:.*]] = arith.addi %{{[0-9]+}}, %[[OFF]] : i32
  // CHECK-NEXT: arith.constant 0xFF800000 : f32
  // CHECK-NEXT: %[[R:.*]] = arith.constant 50 : i32
  // CHECK-NEXT: %[[RCAP:.*]] = arith.subi %[[KV]], %[[R]] : i32
  // CHECK-NEXT: %[[L:.*]] = arith.constant 100 : i32
  // CHECK: %[[LANECOL:.*]] = arith.addi %{{[0-9]+}}, %{{.*}} : i32
  // CHECK: %[[ROW:.*]] = arith.addi %[[DIAG]], %{{[0-9]+}} : i32
  // CHECK: %[[END:.*]] = arith.addi %[[ROW]], %{{.*}} : i32
  // CHECK-NEXT: %[[CAPPED:.*]] = arith.minsi %[[END]], %[[RCAP]] : i32
  // CHECK-NEXT: %[[LIM:.*]] = arith.addi %[[CAPPED]], %[[R]] : i32
  // CHECK-NEXT: %[[REL:.*]] = arith.subi %[[LIM]], %[[COL0:[0-9]+]] : i32
  // CHECK-NEXT: %[[RIGHT:.*]] = arith.subi %[[REL]], %[[LANECOL]] : i32
  // CHECK-NEXT: %[[LMAX:.*]] = arith.maxsi %[[ROW]], %[[L]] : i32
  // CHECK-NEXT: %[[LLIM:.*]] = arith.subi %[[LMAX]], %[[L]] : i32
  // CHECK-NEXT: %[[LREL:.*]] = arith.subi %[[LLIM]], %[[COL0]] : i32
  // CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[LREL]], %[[LANECOL]] : i32
  // CHECK-NEXT: %[[E0:.*]] = arith.constant 0 : i32
  // CHECK-NEXT: %[[M0R:.*]] = arith.cmpi sle, %[[RIGHT]], %[[E0]] : i32
  // CHECK-NEXT: %[[M0L:.*]] = arith.cmpi sgt, %[[LEFT]], %[[E0]] : i32
  // CHECK-NEXT: %[[M0:.*]] = arith.ori %[[M0R]], %[[M0L]] : i1
  // CHECK-NEXT: arith.select %[[M0]], %{{.*}}, %{{.*}} : f32
  // CHECK-NEXT: %[[E1:.*]] = arith.constant 1 : i32
  // CHECK-NEXT: arith.cmpi sle, %[[RIGHT]], %[[E1]] : i32
  func.func @window_sm80(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                         %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_left = 100, window_right = 50}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// A causal window on sm_90a (left 256, top-left): causal gives the right
// limit min(kv_len, d + 1), the window the left one; no minsi with a window
// cap.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @causal_window_sm90a(
  // CHECK-SAME: causal = true,{{.*}} window_left = 256,
  // CHECK: %[[L:.*]] = arith.constant 256 : i32
  // CHECK: %[[LIM:.*]] = arith.minsi %{{[0-9]+}}, %{{[0-9]+}} : i32
  // CHECK-NEXT: %[[REL:.*]] = arith.subi %[[LIM]], %{{[0-9]+}} : i32
  // CHECK-NEXT: arith.subi %[[REL]], %{{[0-9]+}} : i32
  // CHECK-NEXT: %[[LMAX:.*]] = arith.maxsi %{{[0-9]+}}, %[[L]] : i32
  // CHECK-NEXT: arith.subi %[[LMAX]], %[[L]] : i32
  func.func @causal_window_sm90a(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                                 %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32, window_left = 256}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
