// RUN: attngen-opt %s -attn-tile -attn-causal-blocks=peel=false | FileCheck %s --check-prefix=ONE

// peel=false: the same bounds, one loop; the mask only runs from the first
// block that needs it on, under a uniform branch.
module attributes {attn.target = #attn.target<sm_80>} {
  // ONE-LABEL: func.func @one_loop
  // ONE: %[[HI:.*]] = arith.minui %{{.*}}, %{{.*}}
  // ONE: %[[FULL:.*]] = arith.minui %{{.*}}, %[[HI]]
  // ONE: scf.for %[[J:.*]] = %c0 to %[[HI]]
  // ONE:   %[[MASKED:.*]] = arith.cmpi uge, %[[J]], %[[FULL]]
  // ONE:   scf.if %[[MASKED]] -> (!attn.regs<128x64xf32, acc>) {
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
