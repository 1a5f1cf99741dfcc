// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-online-softmax -attn-allocate-smem -attn-to-nvvm -split-input-file | FileCheck %s

// attn.softcap lowers the same way on both targets (FragmentLowering.cpp):
// per score one multiply by scale / cap and llvm's tanh with afn (NVPTX's
// tanh.approx.f32), before the mask; the cap is then the softmax scale, so
// exp2's constant is cap * log2(e) (30 * 1.4427 = 43.28).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: llvm.func @softcap_sm80(
  // CHECK-SAME: softcap = 30.0,
  // CHECK: %[[C:.*]] = arith.constant 0.00416666688 : f32
  // CHECK-NEXT: %[[X:.*]] = arith.mulf %{{.*}}, %[[C]] : f32
  // CHECK-NEXT: llvm.intr.tanh(%[[X]]) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
  // CHECK: arith.constant 43.2808495 : f32
  func.func @softcap_sm80(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: llvm.func @softcap_sm90a(
  // CHECK-SAME: softcap = 50.0,
  // CHECK: %[[C:.*]] = arith.constant 0.00176776689 : f32
  // CHECK-NEXT: %[[X:.*]] = arith.mulf %{{.*}}, %[[C]] : f32
  // CHECK-NEXT: llvm.intr.tanh(%[[X]]) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
  func.func @softcap_sm90a(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                           %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0883883461 : f32, softcap = 50.0 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}
