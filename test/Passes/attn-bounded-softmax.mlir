// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-bounded-softmax | FileCheck %s
// RUN: attngen-opt %s -split-input-file -attn-configure=warp-specialize=false -attn-tile -attn-causal-blocks -attn-bounded-softmax -attn-online-softmax -canonicalize | FileCheck %s --check-prefix=EXPAND

// A soft cap of 30 on bf16: the max starts at the offset 0 and is yielded
// unchanged through both loops of the causal kernel (the unmasked blocks,
// then the masked ones), and each online softmax is marked fixed_max. Each
// loop also carries the sum of the f32 P (a fourth iter arg, from 0, then
// from the first loop's), from which the finalize forms the LSE.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @cap30
  // CHECK:      attn.splat 0xFF800000
  // CHECK-NEXT: %[[M0:.*]] = attn.splat 0.000000e+00 -> !attn.regs<64xf32, row>
  // CHECK:      %[[R1:.*]]:4 = scf.for {{.*}} iter_args(%{{[^ ]*}} = %{{[^ ]*}}, %[[M:[^ ]*]] = %[[M0]], %{{[^ ]*}} = %[[L0:[^ ]*]], %[[X:[^ ]*]] = %[[L0]])
  // CHECK:        %[[P:.*]], %{{.*}}, %{{.*}}, %{{.*}} = attn.online_softmax %{{.*}}, %[[M]], %{{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  // CHECK-NEXT:   %[[X1:.*]] = attn.row_reduce sum %[[P]], %[[X]] :
  // CHECK:        scf.yield %{{.*}}, %[[M]], %{{.*}}, %[[X1]] :
  // CHECK:      %[[R2:.*]]:4 = scf.for {{.*}} iter_args(%{{[^ ]*}} = %[[R1]]#0, %[[MM:[^ ]*]] = %[[R1]]#1, %{{[^ ]*}} = %[[R1]]#2, %{{[^ ]*}} = %[[R1]]#3)
  // CHECK:        attn.online_softmax %{{.*}}, %[[MM]], %{{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  // CHECK:        scf.yield %{{.*}}, %[[MM]], %{{.*}}, %{{.*}} :
  // CHECK:      attn.softmax_finalize %[[R2]]#0, %[[R2]]#1, %[[R2]]#2 {scale = 3.000000e+01 : f32} : {{.*}} lse_sum %[[R2]]#3
  // CHECK-NOT:  online_softmax
  //
  // Expanded: no row max, no rescale, the sum accumulates P as the P V GEMM
  // takes it (rounded to bf16) and normalises O; the LSE reads the offset
  // (the canonicalizer drops the loop-invariant max) and the f32 sum.
  // EXPAND-LABEL: func.func @cap30
  // EXPAND-NOT:   row_reduce max
  // EXPAND-NOT:   attn.rescale
  // EXPAND:       %[[Z:.*]] = attn.splat 0.000000e+00 -> !attn.regs<64xf32, row>
  // EXPAND:       scf.for
  // EXPAND:         attn.exp2_diff %{{.*}}, %[[Z]] {scale_log2e = 43.2808495 : f32}
  // EXPAND-NEXT:    attn.row_reduce sum %{{.*}}, %{{.*}} {rounded}
  // EXPAND-NEXT:    attn.row_reduce sum %{{.*}}, %{{.*}} :
  // EXPAND:       %[[F:.*]]:3 = scf.for
  // EXPAND:       attn.normalize %[[F]]#0, %[[F]]#1
  // EXPAND:       attn.lse %[[Z]], %[[F]]#2 {scale = 3.000000e+01 : f32}
  // EXPAND-NOT:   row_reduce max
  // EXPAND-NOT:   attn.rescale
  func.func @cap30(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                   %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>,
                   %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, scale = 0.0883883 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?xf32>
    return
  }
}

// -----

// A window on sm_80 peels its masked blocks at both ends: three chained
// loops. The third's max comes through the second (itself fed by the first),
// so it is fixed too, and the exact sum runs through all three: the LSE
// never reads the rounded sum (which would be off by up to 2e-3 on a row
// that sees one key).
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @window_three_loops
  // CHECK:      %[[R1:.*]]:4 = scf.for
  // CHECK:        attn.online_softmax {{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  // CHECK:      %[[R2:.*]]:4 = scf.for {{.*}} iter_args({{.*}} = %[[R1]]#3)
  // CHECK:        attn.online_softmax {{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  // CHECK:      %[[R3:.*]]:4 = scf.for {{.*}} iter_args({{.*}} = %[[R2]]#1, {{.*}} = %[[R2]]#2, {{.*}} = %[[R2]]#3)
  // CHECK:        attn.online_softmax {{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  // CHECK:      attn.softmax_finalize %[[R3]]#0, %[[R3]]#1, %[[R3]]#2 {{.*}} lse_sum %[[R3]]#3
  func.func @window_three_loops(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                                %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                                %lse: memref<?x?x?xf32>) {
    attn.attention %q, %k, %v, %o lse %lse {causal, causal_align = #attn.causal_align<bottom_right>,
        scale = 0.125 : f32, softcap = 30.0 : f32, window_left = 64 : i64}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>
    return
  }
}

// -----

// A cap of 50 takes the offset (50 - 30) / 50 = 0.4 in tanh units: the
// exponents stay within [-70, 30].
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @cap50
  // CHECK:      attn.splat 0xFF800000
  // CHECK-NEXT: %[[M0:.*]] = attn.splat 4.000000e-01 -> !attn.regs<64xf32, row>
  // CHECK:      attn.online_softmax {{.*}} {fixed_max, scale = 5.000000e+01 : f32}
  func.func @cap50(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                   %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 50.0 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}

// -----

// Where a fixed max could overflow or underflow, the running max stays: a
// cap above 50, f16 P (its exponents end at 2^15), no cap at all.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @cap51
  // CHECK:       attn.splat 0xFF800000
  // CHECK-NOT:   fixed_max
  // EXPAND-LABEL: func.func @cap51
  // EXPAND:       attn.row_reduce max
  // EXPAND:       attn.rescale
  func.func @cap51(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                   %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 51.0 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
  // CHECK-LABEL: func.func @f16
  // CHECK-NOT:   fixed_max
  func.func @f16(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>,
                 %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
    return
  }
  // CHECK-LABEL: func.func @nocap
  // CHECK-NOT:   fixed_max
  func.func @nocap(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                   %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}

// -----

// A decoding kernel's scores reach the softmax through the mask branch
// (scf.if); both arms are capped, so it applies there too.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @decode
  // CHECK:      attn.splat 0xFF800000
  // CHECK-NEXT: attn.splat 0.000000e+00 -> !attn.regs<64xf32, row>
  // CHECK:      attn.online_softmax {{.*}} {fixed_max, scale = 3.000000e+01 : f32}
  func.func @decode(%q: memref<?x?x?x128xbf16>, %kc: memref<?x?x?x128xbf16>, %vc: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>, %s: memref<?xi32>) {
    attn.attention_kvcache %q, %kc, %vc, %o, %s {causal, head_pack = 4 : i64, scale = 0.0883883 : f32, softcap = 30.0 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?xi32>
    return
  }
}
