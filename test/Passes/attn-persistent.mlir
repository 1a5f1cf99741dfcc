// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks=peel=true -attn-online-softmax -canonicalize -cse -attn-persistent -canonicalize -cse -split-input-file | FileCheck %s
// RUN: attngen-opt %s -attn-configure -attn-tile -attn-causal-blocks=peel=true -attn-online-softmax -canonicalize -cse -attn-persistent -attn-multibuffer -split-input-file | FileCheck %s --check-prefix=PIPES

// The program becomes the body of a loop over tiles, from this CTA's id in
// steps of the grid size; the grid rule says persistent (1 CTA per SM).
// Non-causal: query blocks fastest. Fills keep counting across tiles: the
// key/value fills add the blocks of earlier tiles, Q counts tiles.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @full
  // CHECK-SAME: attn.grid = #attn.grid<tiles = [#attn.grid_dim<size = nq, tile = 128>, #attn.grid_dim<size = num_heads, tile = 1>, #attn.grid_dim<size = batch, tile = 1>], ctas_per_sm = 1>
  // CHECK-DAG: %[[H:.*]] = memref.dim %arg0, %c2
  // CHECK-DAG: %[[Q:.*]] = attn.alloc_smem
  // CHECK-DAG: %[[KB:.*]] = arith.ceildivui %dim, %c128
  // CHECK: %[[NQ:.*]] = memref.dim %arg0, %c1
  // CHECK-NEXT: %[[QB:.*]] = arith.ceildivui %[[NQ]], %c128
  // CHECK-NEXT: %[[QH:.*]] = arith.muli %[[QB]], %[[H]]
  // CHECK-NEXT: %[[B:.*]] = memref.dim %arg0, %c0
  // CHECK-NEXT: %[[TILES:.*]] = arith.muli %[[QH]], %[[B]]
  // CHECK-NEXT: %[[FIRST:.*]] = attn.program_id 0
  // CHECK-NEXT: %[[STEP:.*]] = attn.num_programs 0
  // CHECK-NEXT: scf.for %[[T:.*]] = %[[FIRST]] to %[[TILES]] step %[[STEP]] iter_args(%[[KV:.*]] = %c0, %[[DONE:.*]] = %c0)
  // CHECK-NEXT: %[[REST:.*]] = arith.divui %[[T]], %[[QB]]
  // CHECK-NEXT: %[[QBLOCK:.*]] = arith.remui %[[T]], %[[QB]]
  // CHECK-NEXT: %[[HEAD:.*]] = arith.remui %[[REST]], %[[H]]
  // CHECK-NEXT: %[[BATCH:.*]] = arith.divui %[[REST]], %[[H]]
  // CHECK: %[[ROW:.*]] = arith.muli %[[QBLOCK]], %c128
  // CHECK-NEXT: attn.copy_async %arg0[%[[BATCH]], %[[ROW]], %[[HEAD]]] -> %[[Q]] fill %[[DONE]]
  // CHECK-NEXT: attn.copy_async %arg1[{{.*}}] -> %{{.*}} fill %[[KV]]
  // CHECK-NEXT: attn.wait %[[Q]], %[[DONE]]
  // CHECK: scf.for %[[J:.*]] = %c0 to
  // CHECK: %[[F:.*]] = arith.addi %[[KV]], %[[J]]
  // CHECK-NEXT: attn.wait %{{.*}}, %[[F]]
  // CHECK-NEXT: attn.copy_async %arg2{{.*}} fill %[[F]]
  // CHECK: scf.for %{{.*}} = %{{.*}} to %[[KB]]
  // CHECK: attn.store
  // CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[KV]], %[[KB]]
  // CHECK-NEXT: %[[DONE1:.*]] = arith.addi %[[DONE]], %c1
  // CHECK-NEXT: scf.yield %[[NEXT]], %[[DONE1]]
  // CHECK-NEXT: } {attn.tile_loop}
  // The Q tile is refilled once per tile: one stage, released after its
  // last reader (the key/value loop) so the producer can load the next.
  // PIPES-LABEL: func.func @full
  // PIPES: %[[QP:.*]] = attn.create_pipe {per_thread_release} : !attn.pipe<1,
  // PIPES: scf.for
  // PIPES: attn.pipe_acquire %[[QP]][%[[DONE:.*]]]
  // PIPES: %[[QT:.*]] = attn.pipe_wait %[[QP]][%[[DONE]]]
  // PIPES: scf.for
  // PIPES: attn.mma %[[QT]]
  // PIPES: attn.pipe_release %[[QP]][%[[DONE]]]
  // PIPES-NEXT: attn.normalize
  // PIPES: } {attn.tile_loop}
  func.func @full(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                  %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// Causal: the tiles in units of equal length. A (head, batch) pair's m
// query blocks pair up, i with m - 1 - i (m - 2 - i when m is odd, its last
// block then a unit alone, after all pairs); CTA c takes units c, c + P, ...
// and walks its own tiles 0 .. tiles - 1: two per pair unit, the longer
// block first, then one per lone unit. A tile visits its loop's blocks from
// 0 to the causal bound.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @causal
  // CHECK: %[[NQ:.*]] = memref.dim %arg0, %c1
  // CHECK-NEXT: %[[QB:.*]] = arith.ceildivui %[[NQ]], %c128
  // CHECK: %[[CTA:.*]] = attn.program_id 0
  // CHECK-NEXT: %[[P:.*]] = attn.num_programs 0
  // CHECK-NEXT: %[[HB:.*]] = arith.muli %[[H:.*]], %{{.*}} :
  // CHECK-NEXT: %[[HALF:.*]] = arith.divui %[[QB]], %c2
  // CHECK-NEXT: %[[ODD:.*]] = arith.remui %[[QB]], %c2
  // CHECK-NEXT: %[[PAIRS:.*]] = arith.muli %[[HB]], %[[HALF]]
  // CHECK-NEXT: %[[LONE:.*]] = arith.muli %[[HB]], %[[ODD]]
  // CHECK-NEXT: %[[UNITS:.*]] = arith.addi %[[PAIRS]], %[[LONE]]
  // CHECK-NEXT: %[[M1:.*]] = arith.maxui %[[PAIRS]], %[[CTA]]
  // CHECK-NEXT: %[[L1:.*]] = arith.subi %[[M1]], %[[CTA]]
  // CHECK-NEXT: %[[MYPAIRS:.*]] = arith.ceildivui %[[L1]], %[[P]]
  // CHECK-NEXT: %[[M2:.*]] = arith.maxui %[[UNITS]], %[[CTA]]
  // CHECK-NEXT: %[[L2:.*]] = arith.subi %[[M2]], %[[CTA]]
  // CHECK-NEXT: %[[MYUNITS:.*]] = arith.ceildivui %[[L2]], %[[P]]
  // CHECK-NEXT: %[[MYTILES:.*]] = arith.addi %[[MYUNITS]], %[[MYPAIRS]]
  // CHECK-NEXT: scf.for %[[U:.*]] = %c0 to %[[MYTILES]] step %c1 iter_args(%[[KV:.*]] = %c0, %{{.*}} = %c0)
  // CHECK-NEXT: %[[SLOTS:.*]] = arith.muli %[[MYPAIRS]], %c2
  // CHECK-NEXT: %[[ISPAIR:.*]] = arith.cmpi ult, %[[U]], %[[SLOTS]]
  // CHECK: %[[NTH:.*]] = arith.select %[[ISPAIR]]
  // CHECK-NEXT: %[[STRIDE:.*]] = arith.muli %[[NTH]], %[[P]]
  // CHECK-NEXT: %[[UNIT:.*]] = arith.addi %[[CTA]], %[[STRIDE]]
  // CHECK: %[[HEAD:.*]] = arith.select %[[ISPAIR]]
  // CHECK-NEXT: %[[PAIR:.*]] = arith.remui %[[UNIT]]
  // CHECK-NEXT: %[[LAST:.*]] = arith.subi %[[QB]], %c1
  // CHECK-NEXT: %[[LAST2:.*]] = arith.subi %[[LAST]], %[[ODD]]
  // CHECK-NEXT: %[[LONGER:.*]] = arith.subi %[[LAST2]], %[[PAIR]]
  // CHECK-NEXT: %[[SIDE:.*]] = arith.remui %[[U]], %c2
  // CHECK-NEXT: %[[SHORTER:.*]] = arith.cmpi ne, %[[SIDE]], %c0
  // CHECK-NEXT: %[[INPAIR:.*]] = arith.select %[[SHORTER]], %[[PAIR]], %[[LONGER]]
  // CHECK-NEXT: %[[QBLOCK:.*]] = arith.select %[[ISPAIR]], %[[INPAIR]], %[[LAST]]
  // CHECK-NEXT: arith.remui %[[HEAD]], %[[H]]
  // CHECK-NEXT: arith.divui %[[HEAD]], %[[H]]
  // CHECK: arith.muli %[[QBLOCK]], %c128
  // CHECK: %[[HI:.*]] = arith.minui %{{.*}}, %{{.*}} :
  // CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step
  // CHECK: scf.for %{{.*}} = %{{.*}} to %[[HI]] step
  // CHECK: arith.addi %[[KV]], %[[HI]]
  // CHECK: } {attn.tile_loop}
  func.func @causal(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>,
                    %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
    attn.attention %q, %k, %v, %o {causal, scale = 0.125 : f32}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>
    return
  }
}

// -----

// Varlen: the loop runs over the whole tile space (max_seqlen_q / 128,
// heads, sequences, read from the launch sizes), but number t is the t-th
// live tile, counted sequence by sequence: the scf.while walks on from the
// sequence the CTA's previous tile was in (carried in the last two
// iter_args) to the one holding t, each sequence holding H * ceil(len / 128)
// tiles. Numbers past the last sequence's get a query block past the tensor
// (ceil(total / 128)) and fail the guard; only live tiles add their
// key/value blocks and a Q fill to the counts.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @varlen
  // CHECK-SAME: ctas_per_sm = 1
  // CHECK:      %[[TOTAL:.*]] = memref.dim %arg0, %c0
  // CHECK:      %[[MAXQ:.*]] = attn.problem_size max_seqlen_q
  // CHECK-NEXT: %[[QBS:.*]] = arith.ceildivui %[[MAXQ]], %c128
  // CHECK-NEXT: %[[H:.*]] = attn.problem_size num_heads
  // CHECK-NEXT: %[[QH:.*]] = arith.muli %[[QBS]], %[[H]]
  // CHECK-NEXT: %[[B:.*]] = attn.problem_size batch
  // CHECK-NEXT: %[[TILES:.*]] = arith.muli %[[QH]], %[[B]]
  // CHECK:      %[[DEAD:.*]] = arith.ceildivui %[[TOTAL]], %c128
  // CHECK:      scf.for %[[T:.*]] = %{{.*}} to %[[TILES]] step %{{.*}} iter_args(%[[KV:.*]] = %c0, %[[DONE:.*]] = %c0, %[[SEQ:.*]] = %c0, %[[FIRST:.*]] = %c0)
  // CHECK-NEXT:   %[[WALK:.*]]:3 = scf.while (%[[S:.*]] = %[[SEQ]], %[[F:.*]] = %[[FIRST]])
  // CHECK-NEXT:     %[[INB:.*]] = arith.cmpi ult, %[[S]], %[[B]]
  // CHECK:          %[[SL:.*]], %[[SLEN:.*]] = attn.sequence %arg4
  // CHECK-NEXT:     %[[SBLOCKS:.*]] = arith.ceildivui %[[SLEN]], %c128
  // CHECK-NEXT:     %[[STILES:.*]] = arith.muli %[[H]], %[[SBLOCKS]]
  // CHECK-NEXT:     %[[END:.*]] = arith.addi %[[F]], %[[STILES]]
  // CHECK-NEXT:     %[[PAST:.*]] = arith.cmpi uge, %[[T]], %[[END]]
  // CHECK-NEXT:     %[[MORE:.*]] = arith.andi %[[INB]], %[[PAST]]
  // CHECK-NEXT:     scf.condition(%[[MORE]]) %[[S]], %[[F]], %[[END]]
  // CHECK:        } do {
  // CHECK:          scf.yield %{{.*}}, %{{.*}} : index, index
  // CHECK:        %[[INSEQ:.*]] = arith.cmpi ult, %[[WALK]]#0, %[[B]]
  // CHECK:        %[[SQ:.*]], %[[LQ:.*]] = attn.sequence %arg4
  // CHECK:        %[[LOCAL:.*]] = arith.subi %[[T]], %[[WALK]]#1
  // CHECK:        %[[QBLOCK:.*]] = arith.select %[[INSEQ]], %{{.*}}, %[[DEAD]]
  // CHECK:        %[[LIVE:.*]] = arith.cmpi ult, %{{.*}}, %[[LQ]] : index
  // CHECK:        %[[BLOCKS:.*]] = arith.maxui %{{.*}}, %c1 : index
  // CHECK-NEXT:   %[[VISITED:.*]] = arith.select %[[LIVE]], %[[BLOCKS]], %c0 : index
  // CHECK-NEXT:   %[[ONE:.*]] = arith.select %[[LIVE]], %c1, %c0 : index
  // CHECK-NEXT:   scf.if %[[LIVE]] {
  // CHECK-NEXT:     attn.copy_async %arg0[%[[SQ]], {{.*}} fill %[[DONE]] :
  // CHECK-NEXT:     attn.copy_async %arg1[{{.*}} fill %[[KV]] :
  // CHECK:          attn.store
  // CHECK-NEXT:   }
  // CHECK-NEXT:   %[[KV1:.*]] = arith.addi %[[KV]], %[[VISITED]] : index
  // CHECK-NEXT:   %[[DONE1:.*]] = arith.addi %[[DONE]], %[[ONE]] : index
  // CHECK-NEXT:   scf.yield %[[KV1]], %[[DONE1]], %[[WALK]]#0, %[[WALK]]#1 : index, index, index, index
  // CHECK-NEXT: } {attn.tile_loop}
  func.func @varlen(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                    %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                    %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
      {scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>
    return
  }
}

// -----

// Causal varlen: sequence b holds H * ceil(m_b / 2) units (m_b query
// blocks), pairs of blocks (m_b - 1 - m_b % 2 - j, j) of equal length and,
// for an odd m_b, the last block alone. The loop takes two numbers per unit,
// 0 .. 2 * (this CTA's share of the unit space) - 1; the second number of
// a lone block's unit is a dead tile.
module attributes {attn.target = #attn.target<sm_90a>} {
  // CHECK-LABEL: func.func @varlen_causal
  // CHECK:      %[[CTA:.*]] = attn.program_id 0
  // CHECK-NEXT: %[[CTAS:.*]] = attn.num_programs 0
  // CHECK:      %[[HALF:.*]] = arith.ceildivui %{{.*}}, %c2
  // CHECK-NEXT: %[[HB:.*]] = arith.muli %{{.*}}, %{{.*}} : index
  // CHECK-NEXT: %[[UNITS:.*]] = arith.muli %[[HB]], %[[HALF]] : index
  // CHECK-NEXT: %[[AT:.*]] = arith.maxui %[[UNITS]], %[[CTA]]
  // CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[AT]], %[[CTA]]
  // CHECK-NEXT: %[[MINE:.*]] = arith.ceildivui %[[LEFT]], %[[CTAS]]
  // CHECK-NEXT: %[[SLOTS:.*]] = arith.muli %[[MINE]], %c2
  // CHECK-NEXT: scf.for %[[I:.*]] = %c0 to %[[SLOTS]] step %c1 iter_args(
  // CHECK-NEXT:   %[[NTH:.*]] = arith.divui %[[I]], %c2
  // CHECK-NEXT:   %[[OFF:.*]] = arith.muli %[[NTH]], %[[CTAS]]
  // CHECK-NEXT:   %[[UNIT:.*]] = arith.addi %[[CTA]], %[[OFF]]
  // CHECK-NEXT:   %[[SIDE:.*]] = arith.remui %[[I]], %c2
  // CHECK-NEXT:   %[[SECOND:.*]] = arith.cmpi ne, %[[SIDE]], %c0
  // CHECK-NEXT:   scf.while
  // CHECK:          %[[SBLOCKS:.*]] = arith.ceildivui %{{.*}}, %c128
  // CHECK-NEXT:     %[[SPAIRS:.*]] = arith.ceildivui %[[SBLOCKS]], %c2
  // CHECK-NEXT:     %[[SUNITS:.*]] = arith.muli %{{.*}}, %[[SPAIRS]]
  // CHECK:          arith.cmpi uge, %[[UNIT]], %{{.*}}
  // CHECK:        %[[INPAIR:.*]] = arith.select %[[SECOND]], %{{.*}}, %{{.*}} : index
  // CHECK:        } {attn.tile_loop}
  func.func @varlen_causal(%q: memref<?x?x128xbf16>, %k: memref<?x?x128xbf16>,
                           %v: memref<?x?x128xbf16>, %o: memref<?x?x128xbf16>,
                           %cq: memref<?xi32>, %ck: memref<?xi32>) {
    attn.attention %q, %k, %v, %o varlen(%cq, %ck : memref<?xi32>, memref<?xi32>)
      {causal, scale = 0.0883883 : f32}
      : memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>, memref<?x?x128xbf16>
    return
  }
}
