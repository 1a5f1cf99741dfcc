// RUN: attngen-opt %s -attn-tile -attn-causal-blocks -split-input-file | FileCheck %s

// Causal: the loop bound stops after the diagonal (blocks above it are never
// visited); an unmasked loop covers the blocks below the diagonal, and only
// the second loop keeps the mask.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @causal
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK:.*]], %c64
  // CHECK: %[[LAST:.*]] = arith.subi
  // CHECK: %[[VIS:.*]] = arith.addi %{{.*}}, %c1
  // CHECK: %[[HI:.*]] = arith.minui %[[NB]], %[[VIS]]
  // CHECK: %[[CAP:.*]] = arith.minui
  // CHECK: %[[FULL:.*]] = arith.minui %[[CAP]], %[[HI]]
  // CHECK: %[[R0:.*]]:3 = scf.for %{{.*}} = %c0 to %[[FULL]]
  // CHECK-NOT: attn.mask
  // CHECK:   arith.cmpi ult, %{{.*}}, %[[HI]]
  // CHECK: scf.yield
  // CHECK: scf.for %{{.*}} = %[[FULL]] to %[[HI]] {{.*}} iter_args(%{{.*}} = %[[R0]]#0, %{{.*}} = %[[R0]]#1, %{{.*}} = %[[R0]]#2)
  // CHECK:   attn.mask {{.*}} {causal}
  // CHECK:   arith.cmpi ult, %{{.*}}, %[[HI]]
  func.func @causal(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                    %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// Not causal: every block is visited; only a ragged last block is masked.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @full
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK:.*]], %c64
  // CHECK: %[[WHOLE:.*]] = arith.divui %[[NK]], %c64
  // CHECK: %[[FULL:.*]] = arith.minui %[[WHOLE]], %[[NB]]
  // CHECK: scf.for %{{.*}} = %c0 to %[[FULL]]
  // CHECK-NOT: attn.mask
  // CHECK: scf.yield
  // CHECK: scf.for %{{.*}} = %[[FULL]] to %[[NB]]
  // CHECK:   attn.mask
  // CHECK-NOT: causal
  func.func @full(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                  %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

