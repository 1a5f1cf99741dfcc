// RUN: attngen-opt %s --attn-tile-pipeline -split-input-file | FileCheck %s
// RUN: attngen-opt %s --attn-tile-pipeline="prefetch-q=false" -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attngen-opt %s --attn-tile-pipeline -attn-prefetch-q -split-input-file | FileCheck %s --check-prefix=TWICE

// attn-prefetch-q: a persistent CTA's Q pipe gets a second stage, so the
// producer loads the next tile's Q (then its first K) right after this
// tile's last V. d128: 32 KB more beside the K/V pipes and O's tile.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d128
  // CHECK-SAME: prefetch_q = true
  // CHECK: %[[QP:.+]] = attn.create_pipe {per_thread_release} : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
  // CHECK: attn.warp_specialize producer {
  // CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[TILE:.+]] = %{{.+}})
  // CHECK: attn.pipe_acquire %[[QP]][%[[TILE]]] : !attn.pipe<2,
  // CHECK-NEXT: attn.pipe_load %{{.+}} -> %[[QP]][%[[TILE]]] : memref<?x?x?x128xbf16>, !attn.pipe<2,
  // CHECK: } consumers {
  // CHECK: attn.pipe_wait %[[QP]][%{{.+}}] : !attn.pipe<2,
  // CHECK: attn.pipe_release %[[QP]][%{{.+}}] : !attn.pipe<2,
  // CHECK: attn.tma_store
  // OFF-LABEL: func.func @d128
  // OFF-SAME: prefetch_q = false
  // OFF: attn.create_pipe {per_thread_release} : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
  // TWICE-LABEL: func.func @d128
  // TWICE: attn.create_pipe {per_thread_release} : !attn.pipe<2, <128x128xbf16, swizzle = 128>>
  func.func @d128(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                  %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.088388 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>
    return
  }
}

// -----

// d256 causal is persistent, but its 64 KB Q tile beside the K/V pipes
// leaves no room for a second: attn-configure leaves the switch off.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @d256
  // CHECK-SAME: persistent = true
  // CHECK-SAME: prefetch_q = false
  // CHECK: attn.create_pipe {per_thread_release} : !attn.pipe<1, <128x256xbf16, swizzle = 128>>
  func.func @d256(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
                  %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.0625 : f32}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>,
        memref<?x?x?x256xbf16>
    return
  }
}

// -----

// One CTA per tile: Q is filled once, outside any loop; nothing to prefetch.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @window
  // CHECK-SAME: persistent = false
  // CHECK-SAME: prefetch_q = false
  // CHECK: attn.create_pipe {per_thread_release} : !attn.pipe<1, <128x128xbf16, swizzle = 128>>
  func.func @window(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                    %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {window_left = 256, window_right = 0, scale = 0.088388 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>,
        memref<?x?x?x128xbf16>
    return
  }
}
