// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -canonicalize -split-input-file | FileCheck %s --check-prefix=FOLD

// Causal: the loop bound stops after the diagonal (blocks above it are never
// visited); an unmasked loop covers the blocks below the diagonal, and only
// the second loop keeps the mask.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @causal
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK:.*]], %c96
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
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK:.*]], %c96
  // CHECK: %[[WHOLE:.*]] = arith.divui %[[NK]], %c96
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

// -----

// Bottom-right: the diagonal of the block's first row is at
// diag = row + (nk - nq), a runtime value that is negative when Nq > Nk.
// Both numerators are clamped at 0 (signed), so a query block whose rows see
// no key keeps one fully masked block (hi >= 1) and an empty unmasked loop;
// the masked loop's mask keeps the query length.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @bottom_right
  // CHECK: %[[NK:.*]] = memref.dim %arg1, %{{.*}} : memref<?x?x?x64xf16>
  // CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c128
  // CHECK: %[[NQ:.*]] = memref.dim %arg0, %{{.*}} : memref<?x?x?x64xf16>
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK]], %c96
  // CHECK: %[[WHOLE:.*]] = arith.divui %[[NK]], %[[BN:.*]] : index
  // CHECK: %[[OFF:.*]] = arith.subi %[[NK]], %[[NQ]]
  // CHECK: %[[DIAG:.*]] = arith.addi %[[ROW]], %[[OFF]]
  // CHECK: %[[END:.*]] = arith.addi %[[DIAG]], %[[BM:.*]] : index
  // CHECK: %[[LAST:.*]] = arith.subi %[[END]], %[[ONE:.*]] : index
  // CHECK: %[[LASTC:.*]] = arith.maxsi %[[LAST]], %[[Z0:.*]] : index
  // CHECK: %[[LB:.*]] = arith.divui %[[LASTC]], %[[BN]]
  // CHECK: %[[VIS:.*]] = arith.addi %[[LB]], %[[ONE]]
  // CHECK: %[[HI:.*]] = arith.minui %[[NB]], %[[VIS]]
  // CHECK: %[[DE:.*]] = arith.addi %[[DIAG]], %[[ONE]]
  // CHECK: %[[DEC:.*]] = arith.maxsi %[[DE]], %[[Z1:.*]] : index
  // CHECK: %[[BELOW:.*]] = arith.divui %[[DEC]], %[[BN]]
  // CHECK: %[[CAP:.*]] = arith.minui %[[WHOLE]], %[[BELOW]]
  // CHECK: %[[FULL:.*]] = arith.minui %[[CAP]], %[[HI]]
  // CHECK: %[[R0:.*]]:3 = scf.for %{{.*}} = %c0 to %[[FULL]]
  // CHECK-NOT: attn.mask
  // CHECK:   arith.cmpi ult, %{{.*}}, %[[HI]]
  // CHECK: scf.yield
  // CHECK: scf.for %{{.*}} = %[[FULL]] to %[[HI]] {{.*}} iter_args(%{{.*}} = %[[R0]]#0, %{{.*}} = %[[R0]]#1, %{{.*}} = %[[R0]]#2)
  // CHECK:   attn.mask %{{.*}}, %[[ROW]], %{{.*}}, %[[NK]] q_len %[[NQ]] {causal, causal_align = #attn.causal_align<bottom_right>}
  // CHECK:   arith.cmpi ult, %{{.*}}, %[[HI]]
  func.func @bottom_right(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                          %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// With static lengths the bounds fold (second RUN line, canonicalized):
// Nq = 1000, Nk = 300, block 64 x 128, so diag = row - 700 and
//   hi   = min((max(row - 637, 0)) / 128 + 1, ceil(300 / 128) = 3)
//   full = min(max(row - 699, 0) / 128, 300 / 128 = 2, hi)
// Query blocks with row + 63 < 700 (no row sees a key) get hi = 1, full = 0.
module attributes {attn.target = #attn.target<sm_90a>} {
  // FOLD-LABEL: func.func @bottom_right_static
  // FOLD-DAG: %[[LASTOFF:.*]] = arith.constant -637 : index
  // FOLD-DAG: %[[ENDOFF:.*]] = arith.constant -699 : index
  // FOLD-DAG: %[[ROW:.*]] = arith.muli %{{.*}}, %c64 : index
  // FOLD: %[[LAST:.*]] = arith.addi %[[ROW]], %[[LASTOFF]] : index
  // FOLD: %[[LASTC:.*]] = arith.maxsi %[[LAST]], %c0 : index
  // FOLD: %[[LB:.*]] = arith.divui %[[LASTC]], %c128 : index
  // FOLD: %[[VIS:.*]] = arith.addi %[[LB]], %c1 : index
  // FOLD: %[[HI:.*]] = arith.minui %[[VIS]], %c3 : index
  // FOLD: %[[DE:.*]] = arith.addi %[[ROW]], %[[ENDOFF]] : index
  // FOLD: %[[DEC:.*]] = arith.maxsi %[[DE]], %c0 : index
  // FOLD: %[[BELOW:.*]] = arith.divui %[[DEC]], %c128 : index
  // FOLD: %[[CAP:.*]] = arith.minui %[[BELOW]], %c2 : index
  // FOLD: %[[FULL:.*]] = arith.minui %[[CAP]], %[[HI]] : index
  // FOLD: scf.for %{{.*}} = %c0 to %[[FULL]]
  // FOLD: scf.for %{{.*}} = %[[FULL]] to %[[HI]]
  func.func @bottom_right_static(%q: memref<2x1000x4x128xbf16>, %k: memref<2x300x2x128xbf16>,
                                 %v: memref<2x300x2x128xbf16>, %o: memref<2x1000x4x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32}
      : memref<2x1000x4x128xbf16>, memref<2x300x2x128xbf16>, memref<2x300x2x128xbf16>, memref<2x1000x4x128xbf16>
    return
  }
}

// -----

// A sliding window (left 100, right 50, top-left; block 128 x 96): the loop
// starts at the block of the first row's left edge, lo = (max(row, 100) -
// 100) / 96 (clamped below hi), and ends after the last row's right edge,
// hi = (min(row + 127, nk - 1 - 50) + 50) / 96 + 1 (no overflow whatever
// the window). Three loops: the blocks the left edge cuts (masked), the
// fully visible ones, the ones the right edge or the key tail cuts
// (masked). The first K copy ahead of the loops reads block lo, and every
// fill counts from 0 there (fill = j - lo), continuing across the loops.
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @window
  // CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c128 : index
  // CHECK: %[[K:.*]] = attn.alloc_smem : !attn.smem<96x64xf16, swizzle = 128>
  // CHECK: %[[V:.*]] = attn.alloc_smem : !attn.smem<96x64xf16, swizzle = 128>
  // CHECK: %[[NB:.*]] = arith.ceildivui %[[NK:.*]], %c96 : index
  // CHECK: attn.copy_async %arg0
  // CHECK: %[[LASTROW:.*]] = arith.subi %{{.*}}, %[[ONE:.*]] : index
  // CHECK: %[[NK1:.*]] = arith.subi %[[NK]], %[[ONE]] : index
  // CHECK: %[[R:.*]] = arith.constant 50 : index
  // CHECK: %[[CAP:.*]] = arith.subi %[[NK1]], %[[R]] : index
  // CHECK: %[[M:.*]] = arith.minsi %[[LASTROW]], %[[CAP]] : index
  // CHECK: %[[LASTCOL:.*]] = arith.addi %[[M]], %[[R]] : index
  // CHECK: %[[LB:.*]] = arith.divui %[[LASTCOL]], %[[BN:.*]] : index
  // CHECK: %[[VIS:.*]] = arith.addi %[[LB]], %[[ONE]] : index
  // CHECK: %[[HI:.*]] = arith.minui %[[NB]], %[[VIS]] : index
  // CHECK: %[[L:.*]] = arith.constant 100 : index
  // CHECK: %[[FIRSTMAX:.*]] = arith.maxsi %[[ROW]], %[[L]] : index
  // CHECK: %[[FIRSTCOL:.*]] = arith.subi %[[FIRSTMAX]], %[[L]] : index
  // CHECK: %[[FIRST:.*]] = arith.divui %[[FIRSTCOL]], %[[BN]] : index
  // CHECK: %[[LASTVISITED:.*]] = arith.subi %[[HI]], %[[ONE]] : index
  // CHECK: %[[LO:.*]] = arith.minui %[[FIRST]], %[[LASTVISITED]] : index
  // CHECK: %[[EDGE:.*]] = arith.ceildivui %{{.*}}, %[[BN]] : index
  // CHECK: %[[ULO:.*]] = arith.minui %[[EDGE]], %[[HI]] : index
  // CHECK: %[[FULL:.*]] = arith.minui %{{.*}}, %[[HI]] : index
  // CHECK: %[[UHI:.*]] = arith.maxui %[[FULL]], %[[ULO]] : index
  // CHECK: %[[FIRSTROW:.*]] = arith.muli %[[LO]], %{{.*}} : index
  // CHECK: attn.copy_async %arg1[%{{.*}}, %[[FIRSTROW]], %{{.*}}] -> %[[K]] fill %c0 :
  // CHECK: %[[R0:.*]]:3 = scf.for %[[J0:.*]] = %[[LO]] to %[[ULO]]
  // CHECK:   %[[F0:.*]] = arith.subi %[[J0]], %[[LO]] : index
  // CHECK:   attn.wait %[[K]], %[[F0]]
  // CHECK:   attn.copy_async %arg2{{.*}} -> %[[V]] fill %[[F0]] :
  // CHECK:   attn.mask {{.*}} {window_left = 100 : i64, window_right = 50 : i64}
  // CHECK:   attn.wait %[[V]], %[[F0]]
  // CHECK:   %[[NEXT0:.*]] = arith.addi %[[J0]], %c1 : index
  // CHECK:   %[[NF0:.*]] = arith.subi %[[NEXT0]], %[[LO]] : index
  // CHECK:   arith.cmpi ult, %[[NEXT0]], %[[HI]] : index
  // CHECK:     attn.copy_async %arg1{{.*}} -> %[[K]] fill %[[NF0]] :
  // CHECK: %[[R1:.*]]:3 = scf.for %[[J1:.*]] = %[[ULO]] to %[[UHI]] {{.*}} iter_args(%{{.*}} = %[[R0]]#0, %{{.*}} = %[[R0]]#1, %{{.*}} = %[[R0]]#2)
  // CHECK:   arith.subi %[[J1]], %[[LO]] : index
  // CHECK-NOT: attn.mask
  // CHECK: scf.yield
  // CHECK: scf.for %[[J2:.*]] = %[[UHI]] to %[[HI]] {{.*}} iter_args(%{{.*}} = %[[R1]]#0, %{{.*}} = %[[R1]]#1, %{{.*}} = %[[R1]]#2)
  // CHECK:   arith.subi %[[J2]], %[[LO]] : index
  // CHECK:   attn.mask {{.*}} {window_left = 100 : i64, window_right = 50 : i64}
  func.func @window(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                    %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, window_left = 100, window_right = 50}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
}

// -----

// A bottom-right causal window of 256 keys with static lengths (Nq = 1000,
// Nk = 300, block 64 x 128): the diagonal is row - 700, causal bounds the
// right side as before, the left edge gives lo = (max(row - 700, 256) -
// 256) / 128, clamped below hi, and the unmasked blocks start at
// ceil((max(row - 637, 256) - 256) / 128).
module attributes {attn.target = #attn.target<sm_90a>} {
  // FOLD-LABEL: func.func @causal_window_static
  // FOLD-DAG: %[[ROW:.*]] = arith.muli %{{.*}}, %c64 : index
  // FOLD: %[[DIAG:.*]] = arith.addi %[[ROW]], %c-700 : index
  // FOLD: %[[FM:.*]] = arith.maxsi %[[DIAG]], %c256 : index
  // FOLD: %[[FC:.*]] = arith.subi %[[FM]], %c256 : index
  // FOLD: %[[F:.*]] = arith.divui %[[FC]], %c128 : index
  // FOLD: %[[LO:.*]] = arith.minui %[[F]], %{{.*}} : index
  // FOLD: %[[LAST:.*]] = arith.addi %[[ROW]], %c-637 : index
  // FOLD: %[[LM:.*]] = arith.maxsi %[[LAST]], %c256 : index
  // FOLD: %[[LC:.*]] = arith.subi %[[LM]], %c256 : index
  // FOLD: %[[EDGE:.*]] = arith.ceildivui %[[LC]], %c128 : index
  // FOLD: %[[ULO:.*]] = arith.minui %[[EDGE]], %{{.*}} : index
  // FOLD: %[[FIRSTROW:.*]] = arith.muli %[[LO]], %c128 : index
  // FOLD: attn.copy_async %arg1[%{{.*}}, %[[FIRSTROW]], %{{.*}}] -> %{{.*}} fill %c0
  // FOLD: scf.for %{{.*}} = %[[LO]] to %[[ULO]]
  // FOLD: scf.for %{{.*}} = %[[ULO]] to
  // FOLD: scf.for
  // FOLD-NOT: scf.for
  func.func @causal_window_static(%q: memref<2x1000x4x128xbf16>, %k: memref<2x300x2x128xbf16>,
                                  %v: memref<2x300x2x128xbf16>, %o: memref<2x1000x4x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, causal_align = #attn.causal_align<bottom_right>, scale = 0.125 : f32, window_left = 256}
      : memref<2x1000x4x128xbf16>, memref<2x300x2x128xbf16>, memref<2x300x2x128xbf16>, memref<2x1000x4x128xbf16>
    return
  }
}
