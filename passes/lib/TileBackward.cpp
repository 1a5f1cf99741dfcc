//===- TileBackward.cpp - attn-tile: the backward pass's two kernels ------===//
//
// attn.attention_backward (whole tensors)  ->  one of two tile programs,
// FlashAttention-2's backward split so that no gradient is accumulated in
// global memory:
//
//   dq   (grid: query block, head, batch; a loop over key blocks, shaped as
//        the forward's, so attn-causal-blocks bounds and peels it)
//          delta = rowsum(dO * O)                     -> delta (for dkdv)
//          for j: S = Q K_j^T; mask; P = exp(scale S - LSE)      recompute
//                 dP = dO V_j^T; dS = scale P (dP - delta); dQ += dS K_j
//   dkdv (grid: key block, kv head, batch; a loop over the query blocks of
//        every query head of the group: GQA is reduced in registers)
//          for i: S^T = K Q_i^T; mask^T; P^T = exp(scale S^T - LSE_i)
//                 dP^T = V dO_i^T; dS^T = scale P^T (dP^T - delta_i)
//                 dK += dS^T Q_i; dV += P^T dO_i
//
// Both sum their gradients in registers in a fixed order: the backward is
// deterministic. The one-kernel backward (FlashAttention-2/3's, faster, not
// deterministic) computes S and dP once:
//
//   pre   (grid as dq)    delta = rowsum(dO * O); dq_accum rows = 0
//   fused (grid as dkdv)  dkdv's loop, and dS^T -> shared memory;
//                         dq_accum[i] += dS_i K      (attn.accumulate_dq)
//   post  (grid as dq)    dQ = dq_accum
// The key-owning kernel computes the transposed tiles, so
// each GEMM is one the forward already has (smem x smem^T, registers x
// smem), and its LSE and delta are per-column vectors (attn.load_cols).
//
//===----------------------------------------------------------------------===//
#include "TileBackward.h"
#include "TileBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

class BackwardProgramBuilder : TileBuilder {
public:
  BackwardProgramBuilder(AttentionBackwardOp op, const TileConfig &config,
                         TargetKind target)
      : TileBuilder(op, config, target, op.getHeadDim(), op.getElementType(),
                    op.getHeadDimV() == op.getHeadDim() ? 0
                                                        : op.getHeadDimV()),
        op(op) {}

  void buildDq();
  void buildDkdv(bool fused);
  void buildPre();
  void buildPost();

private:
  /// The softmax scale and, with a soft cap, tanh's scale: the scores are
  /// S (scale) or c * tanh((scale / c) S) (c, capScale).
  void scales() {
    scale = op.getScaleAttr().getValueAsDouble();
    logitScale = scale;
    if (FloatAttr cap = op.getSoftcapAttr()) {
      capScale = b.getF32FloatAttr(scale / cap.getValueAsDouble());
      logitScale = cap.getValueAsDouble();
    }
  }
  /// A [rows x cols] f32 accumulator.
  RegTileType acc(int64_t rows, int64_t cols) {
    return RegTileType::get(b.getContext(), {rows, cols}, b.getF32Type(),
                            FragmentKind::acc);
  }
  RegTileType operand(int64_t rows, int64_t cols) {
    return RegTileType::get(b.getContext(), {rows, cols}, op.getElementType(),
                            FragmentKind::operand_a);
  }
  RegTileType vector(int64_t n, FragmentKind kind) {
    return RegTileType::get(b.getContext(), {n}, b.getF32Type(), kind);
  }
  /// The problem's extents for grid entry `batch`: the tensors' batch index
  /// and lengths, or for a packed (varlen) batch the sequences of entry
  /// `batch`, whose lengths then take Nq's and Nk's place.
  struct Extents {
    Value qBatch, kBatch, nq, nk, numHeads, numKvHeads;
  };
  Extents extents(Value batch) {
    Extents e;
    bool packed = op.isVarlen();
    int64_t rowsDim = packed ? 0 : 1, headsDim = packed ? 1 : 2;
    if (!packed) {
      e.qBatch = e.kBatch = batch;
      e.nq = memref::DimOp::create(b, loc, op.getQ(), rowsDim);
      e.nk = memref::DimOp::create(b, loc, op.getK(), rowsDim);
    } else {
      auto qSeq = querySequence(batch);
      auto kSeq = keySequence(batch);
      e.qBatch = qSeq.getSeq();
      e.kBatch = kSeq.getSeq();
      e.nq = qSeq.getLength();
      e.nk = kSeq.getLength();
    }
    e.numHeads = memref::DimOp::create(b, loc, op.getQ(), headsDim);
    e.numKvHeads = memref::DimOp::create(b, loc, op.getK(), headsDim);
    return e;
  }
  SequenceOp querySequence(Value batch) {
    return SequenceOp::create(b, loc, op.getCuSeqlensQ(), batch,
                              memref::DimOp::create(b, loc, op.getQ(), 0));
  }
  SequenceOp keySequence(Value batch) {
    return SequenceOp::create(b, loc, op.getCuSeqlensK(), batch,
                              memref::DimOp::create(b, loc, op.getK(), 0));
  }
  /// ALiBi's bias on a tile whose rows start at `row` and columns at `col`,
  /// distances measured as |row + offset - col|: the forward's on dq's
  /// tiles (rows are queries), with the offset negated on dkdv's transposed
  /// ones (|k - (q + off)| = |k + (-off) - q|).
  Value alibi(Location l, Value s, Value batch, Value head, Value row,
              Value col, Value offset) {
    return AlibiOp::create(b, l, s.getType(), s, op.getAlibiSlopes(), batch,
                           head, row, col, offset,
                           b.getF32FloatAttr(1.0 / logitScale),
                           /*head_pack=*/IntegerAttr());
  }
  /// ALiBi's diagonal offset: Nk - Nq bottom-right, 0 top-left.
  Value alibiOffset(Value nq, Value nk) {
    if (!op.getAlibiSlopes())
      return Value();
    return op.isAlibiBottomRight()
               ? arith::SubIOp::create(b, loc, nk, nq).getResult()
               : index(0);
  }

  /// A packed batch's grid covers its longest sequence: a CTA whose block
  /// starts at or past its own sequence's end exits at once (the rest of
  /// the program goes inside this guard).
  void exitPastEnd(Value row, Value length) {
    if (!op.isVarlen())
      return;
    Value live =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, length);
    auto guard = scf::IfOp::create(b, loc, live, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }

  /// P from the scores `s` (soft-capped first: `tanh` returns the capped
  /// tile, which dS needs; then ALiBi's bias, which dS does not: it is
  /// constant) and the LSE vector.
  Value probs(Location l, Value s, Value lse, Value &tanh,
              llvm::function_ref<Value(Value)> mask,
              llvm::function_ref<Value(Value)> alibi) {
    if (capScale) {
      s = SoftcapOp::create(b, l, s.getType(), s, capScale);
      tanh = s;
    }
    if (op.getAlibiSlopes())
      s = alibi(s);
    s = mask(s);
    // An LSE loaded (or spread) as the exponent's bias is added as it is.
    bool biased = false;
    if (auto loaded = lse.getDefiningOp<LoadColsOp>())
      biased = loaded.getExp2Bias();
    if (auto spread = lse.getDefiningOp<SpreadColsOp>())
      biased = spread.getExp2Bias();
    return RecomputeProbsOp::create(
        b, l, s.getType(), s, lse,
        b.getF32FloatAttr(logitScale * M_LOG2E),
        /*biased=*/biased ? b.getUnitAttr()
                                                    : UnitAttr());
  }

  AttentionBackwardOp op;
  double scale = 0, logitScale = 0;
  FloatAttr capScale;
};

void BackwardProgramBuilder::buildDq() {
  scales();
  const int64_t bm = config.blockM, bn = config.blockN;
  const int64_t outCols = outputAccumulatorCols(target, op.getHeadDim());
  Value c0 = index(0), c1 = index(1);
  Value blockM = index(bm), blockN = index(bn);
  Value qBlock = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value head = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value gridBatch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Extents e = extents(gridBatch);
  Value batch = e.qBatch, kBatch = e.kBatch, nq = e.nq, nk = e.nk;
  Value group = arith::DivUIOp::create(b, loc, e.numHeads, e.numKvHeads);
  Value kvHead = arith::DivUIOp::create(b, loc, head, group);
  Value row = arith::MulIOp::create(b, loc, qBlock, blockM);

  // Q and K have the head dim, dO and V the value head dim.
  const int64_t dv = op.getHeadDimV();
  Value qTile = AllocSmemOp::create(b, loc, smemType(bm));
  Value doTile = AllocSmemOp::create(b, loc, smemType(bm, dv));
  Value kTile = AllocSmemOp::create(b, loc, smemType(bn));
  Value vTile = AllocSmemOp::create(b, loc, smemType(bn, dv));
  exitPastEnd(row, nq);
  Value offset = alibiOffset(nq, nk);
  Value numBlocks = arith::CeilDivUIOp::create(b, loc, nk, blockN);
  // A sequence without keys still runs one (fully masked) block: its rows
  // get dQ = 0, and the prologue's K copy is consumed.
  if (op.isVarlen())
    numBlocks = arith::MaxUIOp::create(b, loc, numBlocks, c1);

  CopyAsyncOp::create(b, loc, op.getQ(), batch, row, head, qTile, c0);
  CopyAsyncOp::create(b, loc, op.getDout(), batch, row, head, doTile, c0);
  CopyAsyncOp::create(b, loc, op.getK(), kBatch, c0, kvHead, kTile, c0);
  // delta = rowsum(dO * O), from global memory while the copies land; the
  // dkdv kernel reads it back per column.
  RegTileType rows = vector(bm, FragmentKind::row);
  Value o = LoadOp::create(b, loc, acc(bm, dv), op.getO(), batch,
                           row, head, IntegerAttr());
  Value dout = LoadOp::create(b, loc, acc(bm, dv), op.getDout(),
                              batch, row, head, IntegerAttr());
  Value delta = RowDotOp::create(b, loc, rows, dout, o);
  StoreRowsOp::create(b, loc, delta, op.getDelta(), batch, head, row);
  Value lse = LoadRowsOp::create(b, loc, rows, op.getLse(), batch, head, row,
                                 IntegerAttr());
  WaitOp::create(b, loc, qTile, c0);
  WaitOp::create(b, loc, doTile, c0);

  Value dq0 = splat(acc(bm, outCols), 0.0f);
  auto loop = scf::ForOp::create(
      b, loc, c0, numBlocks, c1, ValueRange{dq0},
      [&](OpBuilder &lb, Location l, Value j, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value col = arith::MulIOp::create(b, l, j, blockN);
        // K_j landed (everyone is done with V_{j-1}): start V_j.
        WaitOp::create(b, l, kTile, j);
        CopyAsyncOp::create(b, l, op.getV(), kBatch, col, kvHead, vTile, j);
        Value s = MmaOp::create(b, l, acc(bm, bn), qTile, kTile, Value(),
                                /*transpose_b=*/true);
        Value tanh;
        Value p = probs(l, s, lse, tanh, [&](Value scores) {
          return MaskOp::create(
              b, l, scores.getType(), scores, row, col, nk,
              op.isBottomRight() ? nq : Value(), op.getCausalAttr(),
              op.hasDiagonal() ? op.getCausalAlignAttr() : CausalAlignAttr(),
              op.getWindowLeftAttr(), op.getWindowRightAttr(),
              /*head_pack=*/IntegerAttr());
        }, [&](Value scores) {
          return alibi(l, scores, gridBatch, head, row, col, offset);
        });
        WaitOp::create(b, l, vTile, j);
        Value dp = MmaOp::create(b, l, acc(bm, bn), doTile, vTile, Value(),
                                 /*transpose_b=*/true);
        Value ds = SoftmaxGradOp::create(b, l, p.getType(), p, dp, delta,
                                         tanh, b.getF32FloatAttr(scale));
        Value dsOperand = ConvertOp::create(b, l, operand(bm, bn), ds);
        Value dq = MmaOp::create(b, l, acc(bm, outCols), dsOperand, kTile,
                                 iter[0], /*transpose_b=*/false);
        // Everyone is done with K_j: start K_{j+1}.
        BarrierOp::create(b, l, /*refill=*/true);
        Value next = arith::AddIOp::create(b, l, j, c1);
        Value hasNext = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              next, numBlocks);
        scf::IfOp::create(b, l, hasNext, [&](OpBuilder &ib, Location il) {
          Value nextCol = arith::MulIOp::create(ib, il, next, blockN);
          CopyAsyncOp::create(ib, il, op.getK(), kBatch, nextCol, kvHead,
                              kTile, next);
          scf::YieldOp::create(ib, il);
        });
        scf::YieldOp::create(b, l, dq);
      });
  // A packed batch's epilogue reads its sequence again, as the forward's.
  Value outBatch =
      op.isVarlen() ? querySequence(gridBatch).getSeq() : batch;
  StoreOp::create(b, loc, loop.getResult(0), op.getDq(), outBatch, row, head);
  op.erase();
}

/// The one-kernel backward's first kernel: delta, and its query block's
/// rows of the dQ accumulator zeroed (the fused kernel adds into them).
void BackwardProgramBuilder::buildPre() {
  const int64_t bm = config.blockM;
  Value qBlock = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value head = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value gridBatch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Extents e = extents(gridBatch);
  Value row = arith::MulIOp::create(b, loc, qBlock, index(bm));
  exitPastEnd(row, e.nq);
  // Whole rows per warp access: these kernels only stream memory.
  DotRowsOp::create(b, loc, op.getDout(), op.getO(), e.qBatch, row, head,
                    op.getDelta(), b.getI64IntegerAttr(bm));
  ClearRowsOp::create(b, loc, op.getDqAccum(), e.qBatch, row, head,
                      b.getI64IntegerAttr(bm));
  op.erase();
}

/// The one-kernel backward's last kernel: dQ, converted from the f32
/// accumulator (dS carries the softmax scale already).
void BackwardProgramBuilder::buildPost() {
  const int64_t bm = config.blockM;
  Value qBlock = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value head = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value gridBatch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Extents e = extents(gridBatch);
  Value row = arith::MulIOp::create(b, loc, qBlock, index(bm));
  exitPastEnd(row, e.nq);
  ConvertRowsOp::create(b, loc, op.getDqAccum(), e.qBatch, row, head,
                        op.getDq(), b.getI64IntegerAttr(bm));
  op.erase();
}

void BackwardProgramBuilder::buildDkdv(bool fused) {
  scales();
  const int64_t bm = config.blockM, bn = config.blockN;
  // dK's accumulator has the head dim's columns, dV's the value head dim's.
  const int64_t outCols = outputAccumulatorCols(target, op.getHeadDim());
  const int64_t dv = op.getHeadDimV();
  const int64_t outColsV = outputAccumulatorCols(target, dv);
  Value c0 = index(0), c1 = index(1);
  Value blockN = index(bn);
  Value kBlock = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value kvHead = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value gridBatch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Extents e = extents(gridBatch);
  Value qBatch = e.qBatch, batch = e.kBatch, nq = e.nq, nk = e.nk;
  Value group = arith::DivUIOp::create(b, loc, e.numHeads, e.numKvHeads);
  Value firstHead = arith::MulIOp::create(b, loc, kvHead, group);
  Value row = arith::MulIOp::create(b, loc, kBlock, index(bm));

  // The query blocks some key row of this block sees: key k sees queries
  // [k - off - R, k - off + L] (off = 0, or Nk - Nq bottom-right; L, R the
  // forward's window sides, causal R = 0). Differences with R as
  // max(x, R) - R and sums with L as min(x, cap - L) + L: no 32-bit index
  // overflows whatever the window. A block no key row of which sees a query
  // still visits one (fully masked) block, so its first copy is consumed.
  Value numBlocks = arith::CeilDivUIOp::create(b, loc, nq, blockN);
  Value lo = c0, hi = numBlocks;
  std::optional<int64_t> left = op.getWindowLeftAttr()
                                    ? std::optional(op.getWindowLeftAttr().getInt())
                                    : std::nullopt;
  std::optional<int64_t> right =
      op.getCausal() ? std::optional<int64_t>(0)
      : op.getWindowRightAttr()
          ? std::optional(op.getWindowRightAttr().getInt())
          : std::nullopt;
  if (left || right) {
    // d0 = row - off: the first key row's diagonal, in query coordinates.
    Value diag = row;
    if (op.isBottomRight())
      diag = arith::SubIOp::create(b, loc, row,
                                   arith::SubIOp::create(b, loc, nk, nq));
    if (right) {
      Value r = index(*right);
      Value first = arith::SubIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, diag, r), r);
      lo = arith::DivUIOp::create(b, loc, first, blockN);
    }
    if (left) {
      // The last key row sees queries <= d0 + bm - 1 + L, capped at Nq - 1.
      Value l = index(*left);
      Value lastDiag = arith::AddIOp::create(b, loc, diag, index(bm - 1));
      Value cap = arith::SubIOp::create(b, loc, nq, c1);
      Value last = arith::AddIOp::create(
          b, loc,
          arith::MinSIOp::create(b, loc, lastDiag,
                                 arith::SubIOp::create(b, loc, cap, l)),
          l);
      // ceil((last + 1) / bn), with last >= -1.
      Value end = arith::AddIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, last, index(-1)), c1);
      hi = arith::CeilDivUIOp::create(b, loc, end, blockN);
    }
    lo = arith::MinUIOp::create(
        b, loc, lo, arith::SubIOp::create(b, loc, numBlocks, c1));
  }
  Value span = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, hi, lo), c1);
  // One flat loop over (query head of the group, query block): fills count
  // its iterations.
  Value trips = arith::MulIOp::create(b, loc, span, group);

  Value kTile = AllocSmemOp::create(b, loc, smemType(bm));
  Value vTile = AllocSmemOp::create(b, loc, smemType(bm, dv));
  Value qTile = AllocSmemOp::create(b, loc, smemType(bn));
  Value doTile = AllocSmemOp::create(b, loc, smemType(bn, dv));
  // The fused kernel's dS^T [keys x queries], the B of its dQ GEMM, and
  // the f32 tile its warpgroups stage their dQ blocks in: each multiplies
  // 64 head-dim rows by `width` queries over all the keys (d128: one
  // half of the head dim each; d64: half of the queries), so the dS^T
  // panels are `width` columns wide.
  // sm_80 (four warps, mma.sync) multiplies the whole dQ^T [D x step] in
  // 16-row slices of the head dim and adds it from registers: no stage.
  Value dsTile, stageTile;
  RegTileType dqBlock;
  bool tmaDrain = target == TargetKind::sm_90a;
  if (fused) {
    int64_t warpgroups = config.numWarps / kWarpgroupWarps;
    int64_t chunks = op.getHeadDim() / kWarpgroupRows;
    int64_t width =
        tmaDrain ? bn / std::max<int64_t>(warpgroups / chunks, 1) : bn;
    // attn.dq_mma's blocks: 64 head-dim rows by `width` queries each
    // (sm_80: one block of every head-dim row).
    dqBlock = tmaDrain ? acc(warpgroups * kWarpgroupRows, width)
                       : acc(op.getHeadDim(), bn);
    dsTile = AllocSmemOp::create(
        b, loc,
        SmemTileType::get(b.getContext(), {bm, bn}, op.getElementType(),
                          smemTileSwizzle(width)));
    if (tmaDrain)
      stageTile = AllocSmemOp::create(
          b, loc,
          SmemTileType::get(b.getContext(), {warpgroups * width, 64},
                            b.getF32Type(), 128));
  }
  exitPastEnd(row, nk);
  // ALiBi on the transposed tiles: the offset negated (Nq - Nk).
  Value offset = alibiOffset(nk, nq);
  CopyAsyncOp::create(b, loc, op.getK(), batch, row, kvHead, kTile, c0);
  CopyAsyncOp::create(b, loc, op.getV(), batch, row, kvHead, vTile, c0);
  Value firstCol = arith::MulIOp::create(b, loc, lo, blockN);
  CopyAsyncOp::create(b, loc, op.getQ(), qBatch, firstCol, firstHead, qTile,
                      c0);
  WaitOp::create(b, loc, kTile, c0);
  WaitOp::create(b, loc, vTile, c0);

  // The transposed mask: rows are keys, columns queries, so the band is the
  // forward's mirrored (sides swapped, the diagonal at -off): what the
  // forward's lowering (and the mask's own checks) already handle.
  IntegerAttr maskLeft, maskRight;
  if (right)
    maskLeft = b.getI64IntegerAttr(*right);
  if (left)
    maskRight = b.getI64IntegerAttr(*left);
  bool masked = left || right;
  // Whether the step's tile (key rows [r, r + bm), query columns
  // [c, c + bn)) holds a masked score: it crosses Nq, or some key row
  // sees fewer than all its columns. Key row k sees the queries
  // [k - off - R, k - off + L] (off = Nk - Nq bottom-right, else 0).
  auto stepNeedsMask = [&](Location l, Value r, Value c) -> Value {
    auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
      return arith::CmpIOp::create(b, l, p, x, y);
    };
    Value last = arith::AddIOp::create(b, l, c, index(bn));
    Value needs = cmp(arith::CmpIPredicate::sgt, last, nq);
    if (!masked)
      return needs;
    Value diag = r;
    if (op.isBottomRight())
      diag = arith::SubIOp::create(b, l, r,
                                   arith::SubIOp::create(b, l, nk, nq));
    if (right) {
      // The last key row's first visible query is past c.
      Value first = arith::SubIOp::create(
          b, l, arith::AddIOp::create(b, l, diag, index(bm - 1)),
          index(*right));
      needs = arith::OrIOp::create(
          b, l, needs, cmp(arith::CmpIPredicate::sgt, first, c));
    }
    if (left) {
      // The first key row's last visible query is before c + bn - 1.
      Value lastSeen = arith::AddIOp::create(b, l, diag, index(*left));
      needs = arith::OrIOp::create(
          b, l, needs,
          cmp(arith::CmpIPredicate::slt, lastSeen,
              arith::SubIOp::create(b, l, last, index(1))));
    }
    return needs;
  };

  // One pass of the loop over the (query head, query block) steps,
  // accumulating dK and dV, or one of them. Its Q and dO fills are
  // numbered from `fillBase` (none: from 0), so that a second pass's fills
  // follow the first's: a pipe's stage and phase are the fill number's.
  enum class Grads { kAndV, v, k };
  // The step's LSE (and delta) come in `lanes` tiles loaded by the step
  // before (the first step's before the loop) and carried across the loop
  // edge: two registers a thread each. Loaded in the step that uses them,
  // ptxas put their first reader among the S and dP wgmmas, and the warp
  // stopped issuing the GEMM until the load came back (ncu: 7% of the
  // fused kernel's stalls). Above d128 the two registers would spill, and
  // the step loads its own.
  bool ahead = std::max(op.getHeadDim(), dv) <= 128;
  auto loadAhead = [&](Location l, Value src, Value head, Value col) {
    return LoadColsOp::create(b, l, vector(bn, FragmentKind::lanes), src,
                              qBatch, head, col, /*exp2_bias=*/UnitAttr())
        .getResult();
  };
  auto buildPass = [&](Grads grads, Value fillBase,
                       ValueRange grads0) -> scf::ForOp {
    bool wantK = grads != Grads::v, wantV = grads != Grads::k;
    auto fillOf = [&](Location l, Value n) -> Value {
      return fillBase ? arith::AddIOp::create(b, l, fillBase, n).getResult()
                      : n;
    };
    size_t numGrads = grads0.size();
    SmallVector<Value> inits(grads0);
    if (ahead) {
      inits.push_back(loadAhead(loc, op.getLse(), firstHead, firstCol));
      if (wantK)
        inits.push_back(loadAhead(loc, op.getDelta(), firstHead, firstCol));
    }
    return scf::ForOp::create(
        b, loc, c0, trips, c1, inits,
        [&](OpBuilder &lb, Location l, Value it, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value i = arith::AddIOp::create(
              b, l, lo, arith::RemUIOp::create(b, l, it, span));
          Value head = arith::AddIOp::create(
              b, l, firstHead, arith::DivUIOp::create(b, l, it, span));
          Value col = arith::MulIOp::create(b, l, i, blockN);
          Value fill = fillOf(l, it);
          // Q_i landed (everyone is done with dO_{i-1}): start dO_i.
          WaitOp::create(b, l, qTile, fill);
          CopyAsyncOp::create(b, l, op.getDout(), qBatch, col, head, doTile,
                              fill);
          RegTileType cols = vector(bn, FragmentKind::col);
          Value lse, delta;
          if (ahead) {
            lse = SpreadColsOp::create(b, l, cols, iter[numGrads],
                                       /*exp2_bias=*/b.getUnitAttr());
            if (wantK)
              delta = SpreadColsOp::create(b, l, cols, iter[numGrads + 1],
                                           UnitAttr());
          } else {
            lse = LoadColsOp::create(b, l, cols, op.getLse(), qBatch, head,
                                     col, /*exp2_bias=*/b.getUnitAttr());
            if (wantK)
              delta = LoadColsOp::create(b, l, cols, op.getDelta(), qBatch,
                                         head, col, UnitAttr());
          }
          Value st = MmaOp::create(b, l, acc(bm, bn), kTile, qTile, Value(),
                                   /*transpose_b=*/true);
          Value tanh;
          Value pt = probs(l, st, lse, tanh, [&](Value scores) {
            // Key rows [row, row + bm), query columns [col, col + bn): the
            // query tail is masked by the length test (kv_len = Nq here).
            // Only steps that cross the tail or the band's edges mask: the
            // mask is a compare and a select per score, a quarter of the
            // step's instructions where nothing is masked.
            auto branch = scf::IfOp::create(b, l, scores.getType(),
                                            stepNeedsMask(l, row, col),
                                            /*withElseRegion=*/true);
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPointToEnd(branch.thenBlock());
            Value m = MaskOp::create(
                b, l, scores.getType(), scores, row, col, nq,
                op.isBottomRight() ? nk : Value(), UnitAttr(),
                masked ? op.getCausalAlignAttr() : CausalAlignAttr(),
                maskLeft, maskRight, /*head_pack=*/IntegerAttr());
            scf::YieldOp::create(b, l, m);
            b.setInsertionPointToEnd(branch.elseBlock());
            scf::YieldOp::create(b, l, scores);
            return branch.getResult(0);
          }, [&](Value scores) {
            return alibi(l, scores, gridBatch, head, row, col, offset);
          });
          SmallVector<Value> grads;
          Value dqProduct, pOperand;
          if (wantK) {
            WaitOp::create(b, l, doTile, fill);
            Value dpt = MmaOp::create(b, l, acc(bm, bn), vTile, doTile,
                                      Value(), /*transpose_b=*/true);
            Value dst = SoftmaxGradOp::create(b, l, pt.getType(), pt, dpt,
                                              delta, tanh,
                                              b.getF32FloatAttr(scale));
            Value dsOperand = ConvertOp::create(b, l, operand(bm, bn), dst);
            if (fused)
              StoreSmemOp::create(b, l, dst, dsTile);
            grads.push_back(MmaOp::create(b, l, acc(bm, outCols), dsOperand,
                                          qTile, iter[0],
                                          /*transpose_b=*/false));
            // The fused kernel's dQ GEMM reads dS^T from shared memory; it
            // is issued before dV's GEMM, so that its drain's stage writes
            // run under dV (FlashAttention-3 issues dQ's before dK's too:
            // here dK's registers would spill beside the dQ block, as do
            // ALiBi's beside dV's, which then issues first).
            if (fused && tmaDrain && !op.getAlibiSlopes()) {
              pOperand = ConvertOp::create(b, l, operand(bm, bn), pt);
              dqProduct = DqMmaOp::create(b, l, dqBlock, kTile, dsTile,
                                          /*async=*/UnitAttr());
            }
          }
          // Everyone is done with Q_i: start Q_{i+1} under the dV GEMM.
          BarrierOp::create(b, l, /*refill=*/true);
          Value next = arith::AddIOp::create(b, l, it, c1);
          Value hasNext = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ult, next, trips);
          scf::IfOp::create(b, l, hasNext, [&](OpBuilder &ib, Location il) {
            Value nextI = arith::AddIOp::create(
                ib, il, lo, arith::RemUIOp::create(ib, il, next, span));
            Value nextHead = arith::AddIOp::create(
                ib, il, firstHead,
                arith::DivUIOp::create(ib, il, next, span));
            Value nextCol = arith::MulIOp::create(ib, il, nextI, blockN);
            CopyAsyncOp::create(ib, il, op.getQ(), qBatch, nextCol, nextHead,
                                qTile, fillOf(il, next));
            scf::YieldOp::create(ib, il);
          });
          if (wantV) {
            if (!wantK)
              WaitOp::create(b, l, doTile, fill);
            if (!pOperand)
              pOperand = ConvertOp::create(b, l, operand(bm, bn), pt);
            grads.push_back(MmaOp::create(b, l, acc(bm, outColsV), pOperand,
                                          doTile, iter[numGrads - 1],
                                          /*transpose_b=*/false));
          }
          // The next step's LSE and delta (the last step reads its own
          // again), under the dQ drain or the accumulating GEMMs.
          SmallVector<Value> yielded(grads);
          if (ahead) {
            Value step = arith::SelectOp::create(b, l, hasNext, next, it);
            Value stepHead = arith::AddIOp::create(
                b, l, firstHead, arith::DivUIOp::create(b, l, step, span));
            Value stepCol = arith::MulIOp::create(
                b, l,
                arith::AddIOp::create(
                    b, l, lo, arith::RemUIOp::create(b, l, step, span)),
                blockN);
            yielded.push_back(loadAhead(l, op.getLse(), stepHead, stepCol));
            if (wantK)
              yielded.push_back(
                  loadAhead(l, op.getDelta(), stepHead, stepCol));
          }
          // dQ_i += dS_i K, added into the accumulator: S and dP are not
          // computed again (the one-kernel backward's dQ drain).
          if (fused && !dqProduct)
            dqProduct = DqMmaOp::create(b, l, dqBlock, kTile, dsTile,
                                        /*async=*/UnitAttr());
          if (fused)
            AccumulateDqOp::create(b, l, dqProduct, stageTile, op.getDqAccum(),
                                   qBatch, col, head);
          scf::YieldOp::create(b, l, yielded);
        });
  };

  // A packed batch's epilogue reads its key sequence again, after the loop.
  auto outBatch = [&]() -> Value {
    return op.isVarlen() ? keySequence(gridBatch).getSeq() : batch;
  };
  Value zero = splat(acc(bm, outCols), 0.0f);
  Value zeroV = outColsV == outCols ? zero : splat(acc(bm, outColsV), 0.0f);
  bool plain = !op.hasDiagonal() && !op.getSoftcapAttr() &&
               !op.getAlibiSlopes() && !op.isVarlen();
  // dK and dV take (D + Dv) / 2 registers a thread together.
  int64_t accumulatorCols = (op.getHeadDim() + dv + 1) / 2;
  if (fused || !dkdvTakesTwoPasses(target, accumulatorCols, plain)) {
    scf::ForOp loop = buildPass(Grads::kAndV, Value(), {zero, zeroV});
    Value seq = outBatch();
    StoreOp::create(b, loc, loop.getResult(0), op.getDk(), seq, row, kvHead);
    StoreOp::create(b, loc, loop.getResult(1), op.getDv(), seq, row, kvHead);
  } else {
    // Two passes over the query blocks (wide head dims): dV's, which needs
    // neither V nor delta, then dK's, which computes S^T again. Each holds
    // one f32 accumulator instead of two.
    scf::ForOp vPass = buildPass(Grads::v, Value(), {zeroV});
    StoreOp::create(b, loc, vPass.getResult(0), op.getDv(), outBatch(), row,
                    kvHead);
    CopyAsyncOp::create(b, loc, op.getQ(), qBatch, firstCol, firstHead, qTile,
                        trips);
    scf::ForOp kPass = buildPass(Grads::k, trips, {zero});
    StoreOp::create(b, loc, kPass.getResult(0), op.getDk(), outBatch(), row,
                    kvHead);
  }
  op.erase();
}

/// The kernel's arguments by role: the op's operands, in order.
ArrayAttr backwardTensorRoles(AttentionBackwardOp op) {
  return Builder(op.getContext())
      .getStrArrayAttr(kernelTensorRoles(op.problem()));
}

/// dq: one CTA per (query block, head, batch), as the forward; dkdv: one
/// per (key block, key/value head, batch).
GridAttr backwardGrid(MLIRContext *ctx, const TileConfig &config,
                      BackwardPart part, bool packed) {
  // pre and post own query blocks as dq does; fused owns key blocks.
  bool dq = part == BackwardPart::dq || part == BackwardPart::pre ||
            part == BackwardPart::post;
  // A packed batch's grid covers its longest sequence.
  SizeKind rows = dq ? (packed ? SizeKind::max_seqlen_q : SizeKind::nq)
                     : (packed ? SizeKind::max_seqlen_k : SizeKind::nk);
  Builder b(ctx);
  return GridAttr::get(
      ctx,
      b.getArrayAttr(
          {GridDimAttr::get(ctx, rows, config.blockM),
           GridDimAttr::get(ctx,
                            dq ? SizeKind::num_heads : SizeKind::num_kv_heads,
                            1),
           GridDimAttr::get(ctx, SizeKind::batch, 1)}),
      /*ctasPerSm=*/0);
}

} // namespace

LogicalResult mlir::attn::tileBackward(AttentionBackwardOp op,
                                       func::FuncOp func,
                                       const TileConfig &config,
                                       TargetKind target) {
  MLIRContext *ctx = op.getContext();
  func->setAttr(kKernelAttrName, UnitAttr::get(ctx));
  func->setAttr(kTensorsAttrName, backwardTensorRoles(op));
  func->setAttr(kGridAttrName, backwardGrid(ctx, config, op.getBackward(),
                                            op.isVarlen()));
  func->setAttr(kProblemAttrName, ProblemAttr::get(ctx, op.problem()));
  BackwardProgramBuilder builder(op, config, target);
  switch (op.getBackward()) {
  case BackwardPart::dq:
    builder.buildDq();
    break;
  case BackwardPart::pre:
    builder.buildPre();
    break;
  case BackwardPart::post:
    builder.buildPost();
    break;
  default:
    builder.buildDkdv(op.getBackward() == BackwardPart::fused);
  }
  return success();
}
