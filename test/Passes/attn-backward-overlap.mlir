// RUN: attngen-opt %s -attn-configure -attn-tile -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-backward-overlap -canonicalize -cse -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -canonicalize -cse -attn-multibuffer -attn-warp-specialize -attn-backward-overlap=hoist-accumulators=true -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=HOIST

// Causal dkdv: S and dP issue together and P is recomputed while dP runs
// (masked only on the steps that cross the diagonal or Nq);
// dK and dV issue in their order, the next step's LSE and delta are loaded
// under them, and the buffer releases wait for the GEMMs that read them,
// Q's (S, dK) before dO's (dP, dV); no GEMM stays in flight past the step.
// With hoist-accumulators, dV (which needs only P) issues before dP is
// waited for, so dS is formed under it, and dO's release comes first.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @dkdv
  // CHECK: } consumers {
  // CHECK: scf.for %[[J:.*]] = {{.*}} iter_args(%[[DK:[^ ]*]] = %{{[^,]*}}, %[[DV:[^ ]*]] = %{{[^,]*}}, %[[LSE:[^ ]*]] = %{{[^,]*}}, %[[DELTA:[^ ]*]] = %{{[^)]*}})
  // CHECK-NEXT: %[[Q:.*]] = attn.pipe_wait %[[QP:.*]][%[[J]]]
  // CHECK-NEXT: %[[S:.*]] = attn.mma %{{.*}}, %[[Q]] {async, transpose_b}
  // CHECK-NEXT: %[[DO:.*]] = attn.pipe_wait %[[DOP:.*]][%[[J]]]
  // CHECK-NEXT: %[[DP:.*]] = attn.mma %{{.*}}, %[[DO]] {async, transpose_b}
  // CHECK: attn.spread_cols %[[LSE]] {exp2_bias}
  // CHECK-NEXT: attn.spread_cols %[[DELTA]]
  // CHECK: %[[SW:.*]] = attn.mma_wait %[[S]] {pending = 1 : i64}
  // CHECK-NEXT: %[[M:.*]] = scf.if %{{.*}} -> (!attn.regs<128x64xf32, acc>) {
  // CHECK-NEXT: %[[MASKED:.*]] = attn.mask %[[SW]]
  // CHECK-NEXT: scf.yield %[[MASKED]]
  // CHECK-NEXT: } else {
  // CHECK-NEXT: scf.yield %[[SW]]
  // CHECK-NEXT: }
  // CHECK-NEXT: %[[P:.*]] = attn.recompute_probs %[[M]]
  // CHECK-NEXT: %[[DPW:.*]] = attn.mma_wait %[[DP]] {pending = 0 : i64}
  // CHECK-NEXT: %[[DS:.*]] = attn.softmax_grad %[[P]], %[[DPW]]
  // CHECK-NEXT: %[[DS16:.*]] = attn.convert %[[DS]]
  // CHECK-NEXT: %[[DKA:.*]] = attn.mma %[[DS16]], %[[Q]], %[[DK]] {async}
  // CHECK: %[[P16:.*]] = attn.convert %[[P]]
  // CHECK-NEXT: %[[DVA:.*]] = attn.mma %[[P16]], %[[DO]], %[[DV]] {async}
  // CHECK: %[[LSE2:.*]] = attn.load_cols %{{.*}} -> !attn.regs<64xf32, lanes>
  // CHECK-NEXT: %[[DELTA2:.*]] = attn.load_cols %{{.*}} -> !attn.regs<64xf32, lanes>
  // CHECK-NEXT: %[[DKW:.*]] = attn.mma_wait %[[DKA]] {pending = 1 : i64}
  // CHECK-NEXT: attn.pipe_release %[[QP]][%[[J]]]
  // CHECK-NEXT: %[[DVW:.*]] = attn.mma_wait %[[DVA]] {pending = 0 : i64}
  // CHECK-NEXT: attn.pipe_release %[[DOP]][%[[J]]]
  // CHECK-NEXT: scf.yield %[[DKW]], %[[DVW]], %[[LSE2]], %[[DELTA2]]

  // HOIST-LABEL: func.func @dkdv
  // HOIST: scf.for %[[J:.*]] = {{.*}} iter_args(%[[DK:[^ ]*]] = %{{[^,]*}}, %[[DV:[^ ]*]] = %{{[^,]*}},
  // HOIST-NEXT: attn.pipe_wait
  // HOIST-NEXT: attn.mma {{.*}} {async, transpose_b}
  // HOIST-NEXT: %[[DO:.*]] = attn.pipe_wait %[[DOP:.*]][%[[J]]]
  // HOIST-NEXT: %[[DP:.*]] = attn.mma %{{.*}}, %[[DO]] {async, transpose_b}
  // HOIST: %[[P:.*]] = attn.recompute_probs
  // HOIST-NEXT: %[[P16:.*]] = attn.convert %[[P]]
  // HOIST-NEXT: %[[DVA:.*]] = attn.mma %[[P16]], %[[DO]], %[[DV]] {async}
  // HOIST-NEXT: %[[DPW:.*]] = attn.mma_wait %[[DP]] {pending = 1 : i64}
  // HOIST-NEXT: %[[DS:.*]] = attn.softmax_grad %[[P]], %[[DPW]]
  // HOIST-NEXT: %[[DS16:.*]] = attn.convert %[[DS]]
  // HOIST-NEXT: %[[DKA:.*]] = attn.mma %[[DS16]], %{{.*}}, %[[DK]] {async}
  // HOIST: attn.load_cols
  // HOIST-NEXT: attn.load_cols
  // HOIST-NEXT: %[[DVW:.*]] = attn.mma_wait %[[DVA]] {pending = 1 : i64}
  // HOIST-NEXT: attn.pipe_release %[[DOP]][%[[J]]]
  // HOIST-NEXT: %[[DKW:.*]] = attn.mma_wait %[[DKA]] {pending = 0 : i64}
  // HOIST-NEXT: attn.pipe_release
  // HOIST-NEXT: scf.yield %[[DKW]], %[[DVW]]
  func.func @dkdv(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                  %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dkdv>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}

// -----

// dq: dP issues right after S; V's buffer is released once dP is in, and
// K's after dQ, the last GEMM of the step.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @dq
  // CHECK-COUNT-2: attn.mma %{{.*}} {async, transpose_b}
  // CHECK: attn.mma_wait %{{.*}} {pending = 1 : i64}
  // CHECK: attn.recompute_probs
  // CHECK: attn.mma_wait %{{.*}} {pending = 0 : i64}
  // CHECK: attn.softmax_grad
  // CHECK: attn.mma %{{.*}} {async} :
  // CHECK-NEXT: attn.pipe_release
  // CHECK-NEXT: attn.mma_wait %{{.*}} {pending = 0 : i64}
  // CHECK-NEXT: attn.pipe_release
  // CHECK-NEXT: scf.yield
  func.func @dq(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dq>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}

// -----

// attn-configure turns the overlap on where it measured faster: not for an
// unmasked dkdv (nothing to hide under dP; it costs registers).
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @unmasked
  // CHECK: intra_wg_overlap = false
  // CHECK-NOT: {async
  // CHECK-NOT: attn.mma_wait
  // CHECK: return
  func.func @unmasked(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                      %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dkdv>, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}

// -----

// sm_80 (no warp specialization, mma.sync): the steps stay synchronous.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_80>} {
  // CHECK-LABEL: func.func @sm80
  // CHECK-NOT: {async
  // CHECK-NOT: attn.mma_wait
  // CHECK: return
  func.func @sm80(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                  %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dkdv>, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}
