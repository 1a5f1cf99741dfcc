//===- Passes.td - the FlashAttention passes ---------------*- tablegen -*-===//
#ifndef ATTN_PASSES_PASSES_TD
#define ATTN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnTile : Pass<"attn-tile", "ModuleOp"> {
  let summary = "FlashAttention-2 tiling: one CTA per (query block, head, batch) and a loop over key/value blocks";
  let description = [{
    Rewrites every function that holds an `attn.attention` into a tile-program
    kernel. The grid runs over (query block, head, batch) — sequence
    parallelism, so a long sequence fills the GPU even at batch 1. Each CTA
    copies its query block to shared memory once, then loops over key/value
    blocks: S = Q K^T, mask, one online-softmax step, O += P V. Copies are
    asynchronous and overlapped FlashAttention-2 style: V_j loads while
    S = Q K_j^T and the softmax run; K_{j+1} loads while O += P V_j runs.

    Tile sizes come from head dim, causal flag and the module's
    `#attn.target` (sm_80: 128 query rows, 4 warps, key blocks of 64 for
    d64 and 48 (32 causal) for d128; sm_90a: 64 x 128 with one
    warpgroup, two CTAs per SM); the options override them.

    Before:
    ```mlir
    func.func @attn(%q: memref<?x?x?x128xbf16>, ...) {
      attn.attention %q, %k, %v, %o {scale = 0.0883 : f32} : ...
      return
    }
    ```
    After (abridged):
    ```mlir
    func.func @attn(...) attributes {attn.kernel, attn.tiling = #attn.tiling<...>} {
      %qb = attn.program_id 0 ...
      attn.copy_async %q[%b, %row, %h] -> %qs ...
      %r:3 = scf.for %j = %c0 to %nblocks step %c1 iter_args(%acc = .., %m = .., %l = ..) {
        attn.wait %ks, %j ...
        %s = attn.mma %qs, %ks {transpose_b} ...
        %sm = attn.mask %s, %row, %col, %nk ...
        %p, %m1, %l1, %alpha = attn.online_softmax %sm, %m, %l ...
        ...
      }
      %out, %lse = attn.softmax_finalize %r#0, %r#1, %r#2 ...
      attn.store %out -> %o[%b, %row, %h] ...
    }
    ```
  }];
  let options = [
    Option<"blockM", "block-m", "int64_t", "0",
           "Query rows per CTA (0: chosen from the spec and target)">,
    Option<"blockN", "block-n", "int64_t", "0",
           "Key/value rows per loop iteration (0: chosen)">,
    Option<"numWarps", "num-warps", "int64_t", "0",
           "Warps per CTA (0: chosen)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AttnCausalBlocks : Pass<"attn-causal-blocks", "ModuleOp"> {
  let summary = "Skip key/value blocks that are fully masked and mask only the blocks that need it";
  let description = [{
    `attn-tile` masks every block. This pass classifies the key/value blocks
    of a query block: with `causal`, blocks entirely above the diagonal are
    dropped by lowering the loop's upper bound (about half the work of a
    causal square problem); blocks entirely visible (below the diagonal and
    before the end of the keys) move to a first loop without `attn.mask`; only
    the diagonal block(s) and a ragged last block stay in a second, masked
    loop. Leaving the pass out keeps the correct, fully masked loop (ablation).

    After (abridged):
    ```mlir
    %full = <first block that needs a mask>
    %hi   = <one past the last block with a visible key>
    %r0:3 = scf.for %j = %c0 to %full ...       // no attn.mask
    %r1:3 = scf.for %j = %full to %hi iter_args(%r0#0, ...) {
      %sm = attn.mask ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def AttnOnlineSoftmax : Pass<"attn-online-softmax", "ModuleOp"> {
  let summary = "Expand the online softmax into running max/sum updates, exp2 and rescales";
  let description = [{
    The recomputation technique of FlashAttention: the score block never
    leaves registers, the running max `m` and sum `l` are updated per block,
    the output accumulator is rescaled by `alpha = exp(scale*(m_old - m_new))`
    and divided by `l` once after the loop; LSE = scale * m + log(l).
    The softmax scale and log2(e) are folded into one constant so each
    exponential is a single `ex2.approx`.

    Before:
    ```mlir
    %p, %m1, %l1, %alpha = attn.online_softmax %s, %m, %l {scale = 0.125 : f32} ...
    ```
    After:
    ```mlir
    %m1    = attn.row_reduce max %s, %m ...
    %p     = attn.exp2_diff %s, %m1 {scale_log2e = 0.180336878 : f32} ...
    %alpha = attn.exp2_diff %m, %m1 {scale_log2e = 0.180336878 : f32} ...
    %ls    = attn.rescale %l, %alpha ...
    %l1    = attn.row_reduce sum %p, %ls ...
    ```
  }];
}

#endif // ATTN_PASSES_PASSES_TD
