// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer -split-input-file -verify-diagnostics | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-online-softmax -canonicalize -cse -attn-multibuffer=stages=3 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=S3

// Q (filled once) becomes a one-stage pipe, K and V two-stage rings; every
// copy acquires a stage and loads into it, every wait becomes a pipe_wait
// whose buffer the MMA reads, released right after that MMA. No CTA-wide
// attn.wait remains.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @rings
  // CHECK-DAG: %[[QP:.*]] = attn.create_pipe {per_thread_release} : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
  // CHECK-DAG: %[[KP:.*]] = attn.create_pipe : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
  // CHECK-DAG: %[[VP:.*]] = attn.create_pipe : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
  // CHECK: attn.pipe_acquire %[[QP]][%{{c0.*}}]
  // CHECK-NEXT: attn.pipe_load %{{.*}} -> %[[QP]][%{{c0.*}}]
  // CHECK: attn.pipe_acquire %[[KP]][%{{c0.*}}]
  // CHECK-NEXT: attn.pipe_load %{{.*}} -> %[[KP]][%{{c0.*}}]
  // CHECK: %[[Q:.*]] = attn.pipe_wait %[[QP]][%{{c0.*}}]
  // CHECK: scf.for %[[J:.*]] = %c0
  // CHECK:   %[[K:.*]] = attn.pipe_wait %[[KP]][%[[J]]]
  // CHECK:   attn.pipe_acquire %[[VP]][%[[J]]]
  // CHECK:   attn.pipe_load {{.*}} -> %[[VP]][%[[J]]]
  // CHECK:   attn.mma %[[Q]], %[[K]] {transpose_b}
  // CHECK-NEXT: attn.pipe_release %[[KP]][%[[J]]]
  // CHECK:   %[[V:.*]] = attn.pipe_wait %[[VP]][%[[J]]]
  // CHECK:   scf.if
  // CHECK:     attn.pipe_acquire %[[KP]][%[[NEXT:.*]]]
  // CHECK:     attn.pipe_load {{.*}} -> %[[KP]][%[[NEXT]]]
  // CHECK:   attn.mma %{{.*}}, %[[V]], %{{.*}} :
  // CHECK-NEXT: attn.pipe_release %[[VP]][%[[J]]]
  // CHECK-NOT: attn.wait
  // CHECK-NOT: attn.alloc_smem
  // S3: attn.create_pipe : !attn.pipe<3, <128x128xbf16, swizzle = 128>>
  func.func @rings(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                   %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// A pipe's protocol depends on the target: without one there is nothing to
// build (sm_80's rings: attn-multibuffer-sm80.mlir).
// expected-error @+1 {{attn-multibuffer needs the module attribute 'attn.target' (mbarrier pipes on sm_90a, cp.async rings on sm_80)}}
module {
  func.func @no_target(%K: memref<?x?x?x64xf16>, %i: index) {
    %k = attn.alloc_smem : !attn.smem<64x64xf16, swizzle = 128>
    attn.copy_async %K[%i, %i, %i] -> %k : memref<?x?x?x64xf16>, !attn.smem<64x64xf16, swizzle = 128>
    return
  }
}
