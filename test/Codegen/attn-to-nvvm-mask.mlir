// RUN: attngen-opt %s -attn-tile -attn-causal-blocks -attn-online-softmax -attn-to-nvvm -split-input-file | FileCheck %s

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
  // CHECK-SAME: attn.causal
  // CHECK-SAME: attn.causal_align = #attn.causal_align<bottom_right>
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
