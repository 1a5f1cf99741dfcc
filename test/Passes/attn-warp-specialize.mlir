// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks -attn-online-softmax -canonicalize -cse -attn-multibuffer -attn-warp-specialize -split-input-file -verify-diagnostics | FileCheck %s

// The producer keeps the pipe acquires and loads (and the loops that issue
// them), the consumers everything else; pipes and scalars stay shared in
// front. Two consumer warpgroups (num_warps = 8) get 240 registers, the
// producer 24.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @roles
  // CHECK: %[[QP:.*]] = attn.create_pipe {per_thread_release} : !attn.pipe<1,
  // CHECK: attn.warp_specialize producer {
  // CHECK-NOT: attn.mma
  // CHECK-NOT: attn.pipe_wait
  // CHECK:   attn.pipe_acquire %[[QP]]
  // CHECK:   attn.pipe_load
  // CHECK:   scf.for
  // CHECK-NOT: iter_args
  // CHECK:     attn.pipe_acquire
  // CHECK:     attn.pipe_load
  // CHECK-NOT: attn.mma
  // CHECK: } consumers {
  // CHECK-NOT: attn.pipe_acquire
  // CHECK-NOT: attn.pipe_load
  // CHECK:   attn.pipe_wait %[[QP]]
  // CHECK:   scf.for {{.*}} iter_args
  // CHECK:     attn.pipe_wait
  // CHECK:     attn.mma
  // CHECK:     attn.pipe_release
  // CHECK:   attn.store
  // CHECK: } {consumer_regs = 240 : i64, consumer_warpgroups = 2 : i64, producer_regs = 24 : i64, producer_warps = 4 : i64, uniform_warp_index}
  // CHECK-NEXT: return
  func.func @roles(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                   %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// Three consumer warpgroups (d64's 192-row block): 32/160 registers.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @three
  // CHECK: {consumer_regs = 160 : i64, consumer_warpgroups = 3 : i64, producer_regs = 32 : i64, producer_warps = 4 : i64, uniform_warp_index}
  func.func @three(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                   %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
    return
  }
}

// -----

// Causal d256 keeps each thread's own warp index: its peeled masked loop
// spills more with the index broadcast from lane 0, so no
// uniform_warp_index.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @wide_causal
  // CHECK: attn.warp_specialize producer {
  // CHECK: } {consumer_regs = {{[0-9]+}} : i64, consumer_warpgroups = 2 : i64, producer_regs = {{[0-9]+}} : i64, producer_warps = 4 : i64}
  // CHECK-NEXT: return
  func.func @wide_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                         %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0625 : f32}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>
    return
  }
}
