// RUN: attngen-opt %s -attn-configure -attn-tile -attn-longest-first -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure=longest-first=false -attn-tile -attn-longest-first -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-longest-first -attn-longest-first -split-input-file | FileCheck %s --check-prefix=TWICE
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-longest-first=wave=512 -split-input-file | FileCheck %s --check-prefix=WAVE
// RUN: not attngen-opt %s -attn-configure -attn-tile -attn-longest-first=wave=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

// Causal dkdv: the launch's linear CTA number, cut into sections of
// span = min(ceil(wave / key blocks), pairs) (k/v head, batch) pairs; within
// a section (the last may be narrower) the key block's rank comes first
// (key block 0, which sees every query block, first), then the pair.
// The grid itself is unchanged.
// With the switch off the CTAs keep grid order; run twice, the pass
// numbers once (the numbered kernel reads num_programs).
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @dkdv
  // CHECK-SAME: longest_first = true
  // CHECK: %[[X:.*]] = attn.program_id 0
  // CHECK-NEXT: %[[Y:.*]] = attn.program_id 1
  // CHECK-NEXT: %[[Z:.*]] = attn.program_id 2
  // CHECK-NEXT: %[[NX:.*]] = attn.num_programs 0
  // CHECK-NEXT: %[[NY:.*]] = attn.num_programs 1
  // CHECK-NEXT: %[[NZ:.*]] = attn.num_programs 2
  // CHECK-NEXT: %[[YZ:.*]] = arith.muli %[[NY]], %[[Z]]
  // CHECK-NEXT: %[[ROW:.*]] = arith.addi %[[Y]], %[[YZ]]
  // CHECK-NEXT: %[[XROW:.*]] = arith.muli %[[NX]], %[[ROW]]
  // CHECK-NEXT: %[[LIN:.*]] = arith.addi %[[X]], %[[XROW]]
  // CHECK-NEXT: %[[PAIRS:.*]] = arith.muli %[[NY]], %[[NZ]]
  // CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
  // CHECK-NEXT: %[[HEADS:.*]] = arith.ceildivui %[[C128]], %[[NX]]
  // CHECK-NEXT: %[[SPAN:.*]] = arith.minui %[[HEADS]], %[[PAIRS]]
  // CHECK-NEXT: %[[CTAS:.*]] = arith.muli %[[SPAN]], %[[NX]]
  // CHECK-NEXT: %[[SECTION:.*]] = arith.divui %[[LIN]], %[[CTAS]]
  // CHECK-NEXT: %[[WITHIN:.*]] = arith.remui %[[LIN]], %[[CTAS]]
  // CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[SECTION]], %[[SPAN]]
  // CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[PAIRS]], %[[FIRST]]
  // CHECK-NEXT: %[[WIDTH:.*]] = arith.minui %[[SPAN]], %[[LEFT]]
  // CHECK-NEXT: %[[KB:.*]] = arith.divui %[[WITHIN]], %[[WIDTH]]
  // CHECK-NEXT: %[[COL:.*]] = arith.remui %[[WITHIN]], %[[WIDTH]]
  // CHECK-NEXT: %[[PAIR:.*]] = arith.addi %[[FIRST]], %[[COL]]
  // CHECK-NEXT: %[[KH:.*]] = arith.remui %[[PAIR]], %[[NY]]
  // CHECK-NEXT: %[[B:.*]] = arith.divui %[[PAIR]], %[[NY]]
  // CHECK-NOT: attn.program_id
  // CHECK: arith.muli %[[KB]], %{{.*}}
  // CHECK: attn.copy_async %{{.*}}[%[[B]], %{{.*}}, %[[KH]]]
  // OFF-LABEL: func.func @dkdv
  // OFF-SAME: longest_first = false
  // OFF-NOT: attn.num_programs
  // OFF: return
  // ERR: error: attn-longest-first: wave = 0 is out of range; use the number of CTAs the GPU runs at once (at least 1)
  // WAVE-LABEL: func.func @dkdv
  // WAVE: arith.constant 512 : index
  // TWICE-LABEL: func.func @dkdv
  // TWICE-COUNT-3: attn.num_programs
  // TWICE-NOT: attn.num_programs
  // TWICE: return
  func.func @dkdv(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                  %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dkdv>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}

// -----

// Causal dq: the last query block sees the most key blocks, so rank r
// takes query block nx - 1 - r.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @dq
  // CHECK: %[[NX:.*]] = attn.num_programs 0
  // CHECK: arith.subi
  // CHECK-NEXT: %[[WIDTH:.*]] = arith.minui
  // CHECK-NEXT: %[[RANK:.*]] = arith.divui %{{.*}}, %[[WIDTH]]
  // CHECK: %[[LAST:.*]] = arith.subi %[[NX]], %c1
  // CHECK-NEXT: %[[QB:.*]] = arith.subi %[[LAST]], %[[RANK]]
  // CHECK-NOT: attn.program_id
  // CHECK: arith.muli %[[QB]], %{{.*}}
  func.func @dq(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dq>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}

// -----

// The one-kernel backward's fused kernel owns key blocks as dkdv does;
// unmasked and sliding-window kernels (their CTAs as long as each other,
// but for the edges) and the elementwise pre keep grid order.
!t = memref<?x?x?x64xbf16>
!r = memref<?x?x?xf32>
!a = memref<?x?x?x64xf32>
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @fused
  // CHECK-SAME: longest_first = true
  // CHECK: %[[LEFT:.*]] = arith.subi
  // CHECK-NEXT: %[[WIDTH:.*]] = arith.minui %{{.*}}, %[[LEFT]]
  // CHECK-NEXT: %[[KB:.*]] = arith.divui %{{.*}}, %[[WIDTH]]
  // CHECK-NOT: arith.subi
  // CHECK-NOT: attn.program_id
  // CHECK: arith.muli %[[KB]], %{{.*}}
  func.func @fused(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                   %dq: !t, %dk: !t, %dv: !t, %acc: !a) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        dq_accum(%acc : !a) {backward = #attn.backward<fused>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
  // CHECK-LABEL: func.func @unmasked
  // CHECK-SAME: longest_first = false
  // CHECK-NOT: attn.num_programs
  // CHECK: return
  func.func @unmasked(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                      %dq: !t, %dk: !t, %dv: !t, %acc: !a) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        dq_accum(%acc : !a) {backward = #attn.backward<fused>, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
  // CHECK-LABEL: func.func @window
  // CHECK-SAME: longest_first = false
  // CHECK-NOT: attn.num_programs
  // CHECK: return
  func.func @window(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                    %dq: !t, %dk: !t, %dv: !t) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        {backward = #attn.backward<dkdv>, causal, window_left = 256 : i64, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
  // CHECK-LABEL: func.func @pre
  // CHECK-SAME: longest_first = false
  // CHECK-NOT: attn.num_programs
  // CHECK: return
  func.func @pre(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !r, %delta: !r,
                 %dq: !t, %dk: !t, %dv: !t, %acc: !a) {
    attn.attention_backward %q, %k, %v, %o, %do, %lse, %delta, %dq, %dk, %dv
        dq_accum(%acc : !a) {backward = #attn.backward<pre>, causal, scale = 0.125 : f32}
      : !t, !t, !t, !t, !t, !r, !r, !t, !t, !t
    return
  }
}
