// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks=peel=false -split-input-file | FileCheck %s --check-prefix=ONE

// peel=false: the same bounds, one loop; the mask only runs from the first
// block that needs it on, under a uniform branch.
module attributes {attn.target = #attn.target<sm_80>} {
  // ONE-LABEL: func.func @one_loop
  // ONE: %[[HI:.*]] = arith.minui %{{.*}}, %{{.*}}
  // ONE: %[[FULL:.*]] = arith.minui %{{.*}}, %[[HI]]
  // ONE: scf.for %[[J:.*]] = %c0 to %[[HI]]
  // ONE:   %[[MASKED:.*]] = arith.cmpi uge, %[[J]], %[[FULL]]
  // ONE:   scf.if %[[MASKED]] -> (!attn.regs<128x96xf32, acc>) {
  // ONE:     attn.mask {{.*}} {causal}
  // ONE:   } else {
  // ONE-NOT: scf.for
  func.func @one_loop(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                      %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// Bottom-right: the same clamped bounds (see attn-causal-blocks.mlir) in one
// loop; the mask under the branch keeps the query length.
module attributes {attn.target = #attn.target<sm_80>} {
  // ONE-LABEL: func.func @one_loop_bottom_right
  // ONE: arith.maxsi
  // ONE: %[[HI:.*]] = arith.minui %{{.*}}, %{{.*}}
  // ONE: arith.maxsi
  // ONE: %[[FULL:.*]] = arith.minui %{{.*}}, %[[HI]]
  // ONE: scf.for %[[J:.*]] = %c0 to %[[HI]]
  // ONE:   %[[MASKED:.*]] = arith.cmpi uge, %[[J]], %[[FULL]]
  // ONE:   scf.if %[[MASKED]] -> (!attn.regs<128x96xf32, acc>) {
  // ONE:     attn.mask {{.*}} q_len %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>}
  // ONE-NOT: scf.for
  func.func @one_loop_bottom_right(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                                   %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// A window in one loop (the sm_90a FA3 form): the loop starts at lo, fills
// count from 0 there, and the mask runs on the blocks either edge cuts:
// j < unmaskedLo (left edge) or j >= unmaskedHi (right edge, key tail).
module attributes {attn.target = #attn.target<sm_80>} {
  // ONE-LABEL: func.func @one_loop_window
  // ONE: arith.ceildivui %{{.*}}, %c96 : index
  // ONE: %[[EDGE:.*]] = arith.ceildivui
  // ONE-NEXT: %[[ULO:.*]] = arith.minui %[[EDGE]], %[[HI:.*]] : index
  // ONE-NEXT: %[[FULL:.*]] = arith.minui %{{.*}}, %[[HI]] : index
  // ONE-NEXT: %[[UHI:.*]] = arith.maxui %[[FULL]], %[[ULO]] : index
  // ONE: scf.for %[[J:.*]] = %[[LO:.*]] to %[[HI]]
  // ONE:   arith.subi %[[J]], %[[LO]] : index
  // ONE:   %[[RIGHT:.*]] = arith.cmpi uge, %[[J]], %[[UHI]] : index
  // ONE:   %[[LEFT:.*]] = arith.cmpi ult, %[[J]], %[[ULO]] : index
  // ONE:   %[[MASKED:.*]] = arith.ori %[[LEFT]], %[[RIGHT]] : i1
  // ONE:   scf.if %[[MASKED]] -> (!attn.regs<128x96xf32, acc>) {
  // ONE:     attn.mask {{.*}} q_len %{{.*}} {causal, causal_align = #attn.causal_align<bottom_right>, window_left = 1024 : i64}
  // ONE-NOT: scf.for
  func.func @one_loop_window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                             %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_left = 1024}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}
