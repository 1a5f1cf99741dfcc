//===- TileKvCache.cpp - attn-tile: the KV-cache (decoding) program -------===//
//
// attn.attention_kvcache  ->  tile program. One CTA per (query tile [x
// split], packed head group, batch):
//
//   kv_len = clamp(cache_seqlens[b], 0, capacity)
//   blocks = the key blocks the tile's rows see (causal or a window:
//            around the diagonals bottom-right to kv_len), split s of S
//            taking [lo, lo + n) of them, n >= 1
//   copy Q (head_pack heads x P positions); copy K_lo; wait Q
//   for i in 0..n: (acc, m, l)
//     wait K_i; copy V_i
//     S = Q K_i^T; [softcap]; mask if i >= first masked block; softmax step
//     wait V_i, zeroing rows past kv_len; copy K_{i+1} if i + 1 < n
//     acc = P V_i + acc * alpha
//   S == 1: store O, LSE;  S > 1: store O_s, LSE_s to the partials
//
// FP8 (e4m3) caches follow attn.attention's FP8 program: the descales of
// (batch, kv head) ride on the softmax's scale and the final normalisation,
// P is scaled by 2^8 into e4m3's range, and each V tile is copied
// transposed (attn-transpose-v's staging tile and transposing warps), its
// keys past kv_len zeroed by the transpose.
//
// Fills count from 0 per CTA (the pipes' barrier phases follow them) and
// rows are `fill * block_n + lo * block_n`, the form attn-multibuffer moves.
// A range with no key keeps one fully masked block, so the prologue's K
// fill is always consumed and the rows end with O = 0, LSE = -inf.
//
//===----------------------------------------------------------------------===//
#include "TileKvCache.h"
#include "TileBuilder.h"

#include "attn/Passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

class KvCacheProgramBuilder : TileBuilder {
public:
  KvCacheProgramBuilder(AttentionKvCacheOp op, const TileConfig &config,
                        TargetKind target)
      : TileBuilder(op, config, target, op.getHeadDim(), op.getElementType(),
                    op.getHeadDimV()),
        op(op) {}

  void build();

private:
  IntegerAttr packAttr() {
    return op.headPack() > 1 ? b.getI64IntegerAttr(op.headPack())
                             : IntegerAttr();
  }
  /// A copy of one key or value block: rows `row` of sequence `batch`.
  CopyAsyncOp copyKv(Value src, Value batch, Value row, Value kvHead,
                     Value tile, Value fill) {
    return CopyAsyncOp::create(b, loc, src, batch, row, kvHead, tile, fill,
                               op.getBlockTable(), IntegerAttr(), UnitAttr());
  }

  AttentionKvCacheOp op;
};

void KvCacheProgramBuilder::build() {
  MLIRContext *ctx = b.getContext();
  // O's accumulator: V's head dim, or on sm_90a the padded tile width (the
  // stores write the first Dv columns).
  const int64_t outCols = outputAccumulatorCols(target, op.getHeadDimV());
  const int64_t pack = op.headPack();
  // Rows of one packed head: positions per tile.
  const int64_t positions = config.blockM / pack;
  FloatAttr scale = op.getScaleAttr();
  FloatAttr capScale;
  if (FloatAttr cap = op.getSoftcapAttr()) {
    capScale = b.getF32FloatAttr(scale.getValueAsDouble() /
                                 cap.getValueAsDouble());
    scale = cap;
  }
  Value c0 = index(0), c1 = index(1);
  Value blockN = index(config.blockN);

  // Grid: (query tile [x split], head group, batch).
  Value x = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value headGroup = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value batch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  Value nq = memref::DimOp::create(b, loc, op.getQ(), 1);
  Value qTile = x, split, numSplits;
  if (op.isSplit()) {
    // x = split * query tiles + query tile.
    numSplits = ProblemSizeOp::create(b, loc, b.getIndexType(),
                                      SizeKind::num_splits);
    Value qTiles = arith::CeilDivUIOp::create(b, loc, nq, index(positions));
    qTile = arith::RemUIOp::create(b, loc, x, qTiles);
    split = arith::DivUIOp::create(b, loc, x, qTiles);
  }
  Value numHeads = memref::DimOp::create(b, loc, op.getQ(), 2);
  Value numKvHeads = memref::DimOp::create(b, loc, op.getKCache(), 2);
  Value group = arith::DivUIOp::create(b, loc, numHeads, numKvHeads);
  Value head = arith::MulIOp::create(b, loc, headGroup, index(pack));
  Value kvHead = arith::DivUIOp::create(b, loc, head, group);
  Value row = arith::MulIOp::create(b, loc, qTile, index(positions));

  // The keys of this sequence: cache_seqlens[b] clamped to the capacity, so
  // no value reads past the cache.
  Value capacity =
      op.getBlockTable()
          ? arith::MulIOp::create(
                b, loc, memref::DimOp::create(b, loc, op.getBlockTable(), 1),
                index(op.getPageSize()))
                .getResult()
          : memref::DimOp::create(b, loc, op.getKCache(), 1).getResult();
  Value stored = LoadIndexOp::create(b, loc, b.getIndexType(),
                                     op.getCacheSeqlens(), batch, capacity);
  Value kvLen = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, stored, c0), capacity);

  // Keys the tile's rows see, [first, visible): all of them, or around the
  // bottom-right diagonals d = i + kv_len - nq of its first row `row` and
  // of its last existing one, min(row + P, nq) - 1: up to that last
  // diagonal (+ the window's right side), and from the first one's minus
  // the window's left side. The sums stay in 32 bits whatever the sides:
  // min(R, kv_len - 1 - d) for d + R, and max(d, L) - L for d - L.
  std::optional<int64_t> right = op.getCausal() ? std::optional<int64_t>(0)
                                 : op.getWindowRightAttr()
                                     ? std::optional<int64_t>(
                                           op.getWindowRightAttr().getInt())
                                     : std::nullopt;
  IntegerAttr leftAttr = op.getWindowLeftAttr();
  Value visible = kvLen, unmaskedKeys = kvLen, first;
  if (right || leftAttr) {
    Value end = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, row, index(positions)), nq);
    Value offset = arith::SubIOp::create(b, loc, kvLen, nq);
    // The keys a row sees up to, from `next` = d + 1: d + 1 + min(R, kv_len
    // - 1 - d); with R = 0 (causal) d + 1, an existing row's d being below
    // kv_len.
    auto rightEdge = [&](Value next) -> Value {
      if (*right == 0)
        return next;
      Value room = arith::SubIOp::create(b, loc, kvLen, next);
      return arith::AddIOp::create(
          b, loc, next, arith::MinSIOp::create(b, loc, index(*right), room));
    };
    // d + 1 is end + offset for the last row, row + offset + 1 for the first.
    if (right)
      visible = arith::MaxSIOp::create(
          b, loc, rightEdge(arith::AddIOp::create(b, loc, end, offset)), c0);
    Value firstDiag = arith::AddIOp::create(b, loc, row, offset);
    // The first row's edge bounds the blocks no row masks (with a left
    // side, every block is masked).
    if (right && !leftAttr)
      unmaskedKeys = arith::MinSIOp::create(
          b, loc, kvLen,
          arith::MaxSIOp::create(
              b, loc,
              rightEdge(arith::AddIOp::create(b, loc, firstDiag, c1)), c0));
    if (leftAttr) {
      Value left = index(leftAttr.getInt());
      first = arith::SubIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, firstDiag, left), left);
    }
  }
  // Key blocks [firstBlock, firstBlock + total); a window's left edge cuts
  // blocks from the first one on, so a windowed tile masks every block.
  Value total = arith::CeilDivUIOp::create(b, loc, visible, blockN);
  Value firstBlock;
  if (leftAttr) {
    firstBlock = arith::DivUIOp::create(b, loc, first, blockN);
    total = arith::SubIOp::create(
        b, loc, arith::MaxUIOp::create(b, loc, total, firstBlock), firstBlock);
  }
  Value lo = c0, count = total;
  if (op.isSplit()) {
    Value perSplit = arith::CeilDivUIOp::create(b, loc, total, numSplits);
    lo = arith::MinUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, split, perSplit), total);
    Value hi = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, lo, perSplit), total);
    count = arith::SubIOp::create(b, loc, hi, lo);
  }
  // At least one block: a range without keys runs one fully masked block.
  Value numBlocks = arith::MaxUIOp::create(b, loc, count, c1);
  Value base = arith::MulIOp::create(
      b, loc, firstBlock ? arith::AddIOp::create(b, loc, firstBlock, lo) : lo,
      blockN);
  // Local index of the first block that needs the mask.
  Value firstMasked = c0;
  if (!leftAttr)
    firstMasked = arith::MinSIOp::create(
        b, loc,
        arith::MaxSIOp::create(
            b, loc,
            arith::SubIOp::create(
                b, loc, arith::DivUIOp::create(b, loc, unmaskedKeys, blockN),
                lo),
            c0),
        numBlocks);
  Value qLen = op.hasDiagonal() ? nq : Value();
  UnitAttr causal = op.getCausal() ? b.getUnitAttr() : UnitAttr();
  CausalAlignAttr align =
      op.hasDiagonal() ? CausalAlignAttr::get(ctx, CausalAlign::bottom_right)
                       : CausalAlignAttr();

  // FP8: q's and k's descales scale the scores through the softmax's scale
  // (or, under a soft cap or ALiBi, the scores themselves), v's the output.
  const bool fp8 = isa<Float8E4M3FNType>(op.getElementType());
  Value scoreFactor, outFactor;
  IntegerAttr probsLog2Scale;
  if (fp8) {
    scoreFactor = DescaleOp::create(
        b, loc, rowType(), ValueRange{op.getQDescale(), op.getKDescale()},
        batch, kvHead, /*row=*/Value(), /*block=*/Value());
    outFactor = DescaleOp::create(b, loc, rowType(),
                                  ValueRange{op.getVDescale()}, batch, kvHead,
                                  /*row=*/Value(), /*block=*/Value());
    probsLog2Scale = b.getI64IntegerAttr(kFp8ProbsLog2Scale);
  }
  Value rowDescale;
  if (fp8 && (capScale || op.getAlibiSlopes()))
    std::swap(rowDescale, scoreFactor);

  Value qTileBuf = AllocSmemOp::create(b, loc, smemType(config.blockM));
  Value kTile = AllocSmemOp::create(b, loc, smemType(config.blockN));
  Value vTile = AllocSmemOp::create(
      b, loc,
      fp8 ? fp8TileType(op.getHeadDimV(), config.blockN)
          : smemType(config.blockN, /*cols=*/op.getHeadDimV()));

  CopyAsyncOp::create(b, loc, op.getQ(), batch, row, head, qTileBuf, c0,
                      Value(), packAttr(), UnitAttr());
  copyKv(op.getKCache(), batch, base, kvHead, kTile, c0);
  WaitOp::create(b, loc, qTileBuf, c0);

  Value acc0 = splat(accType(outCols), 0.0f);
  Value max0 = splat(rowType(), -std::numeric_limits<float>::infinity());
  Value sum0 = splat(rowType(), 0.0f);

  auto loop = scf::ForOp::create(
      b, loc, c0, numBlocks, c1, ValueRange{acc0, max0, sum0},
      [&](OpBuilder &lb, Location l, Value j, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value acc = iter[0], max = iter[1], sum = iter[2];
        Value col = arith::AddIOp::create(
            b, l, arith::MulIOp::create(b, l, j, blockN), base);
        // The value rows past the sequence's keys are zeroed (they hold what
        // the cache held, and 0 * NaN would poison P V): on the wait, or in
        // FP8's transpose, which attn-transpose-v gives this count.
        Value valueRows = arith::SubIOp::create(b, l, kvLen, col);
        WaitOp::create(b, l, kTile, j);
        CopyAsyncOp vCopy =
            copyKv(op.getVCache(), batch, col, kvHead, vTile, j);
        // FP8's V lands transposed: attn-transpose-v gives the copy its
        // staging tile and transposing warps.
        if (fp8)
          vCopy.setTranspose(true);
        Value scores = MmaOp::create(b, l, accType(config.blockN), qTileBuf,
                                     kTile, Value(), /*transpose_b=*/true);
        if (rowDescale)
          scores = RescaleOp::create(b, l, scores.getType(), scores, rowDescale);
        if (capScale)
          scores = SoftcapOp::create(b, l, scores.getType(), scores, capScale);
        // ALiBi on every block, from each sequence's bottom-right diagonal
        // (offset kv_len - nq), per packed head.
        if (Value slopes = op.getAlibiSlopes())
          scores = AlibiOp::create(
              b, l, scores.getType(), scores, slopes, batch, head, row, col,
              arith::SubIOp::create(b, l, kvLen, nq),
              b.getF32FloatAttr(1.0 / scale.getValueAsDouble()), packAttr());
        // The ragged last block and the diagonal ones are masked, under a
        // branch that is uniform over the CTA.
        Value masked = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             j, firstMasked);
        auto branch = scf::IfOp::create(b, l, scores.getType(), masked,
                                        /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToEnd(branch.thenBlock());
          Value m = MaskOp::create(b, l, scores.getType(), scores, row, col,
                                   kvLen, qLen, causal, align, leftAttr,
                                   op.getCausal() ? IntegerAttr()
                                                  : op.getWindowRightAttr(),
                                   packAttr());
          scf::YieldOp::create(b, l, m);
          b.setInsertionPointToEnd(branch.elseBlock());
          scf::YieldOp::create(b, l, scores);
        }
        Type rowTy = rowType();
        auto softmax = OnlineSoftmaxOp::create(
            b, l, scores.getType(), rowTy, rowTy, rowTy, branch.getResult(0),
            max, sum, scoreFactor, /*block_factor=*/Value(),
            /*inverse_block_factor=*/Value(), scale,
            /*fixed_max=*/UnitAttr(), probsLog2Scale);
        Value rescaled =
            RescaleOp::create(b, l, acc.getType(), acc, softmax.getAlpha());
        auto operandType =
            RegTileType::get(ctx, {config.blockM, config.blockN},
                             op.getElementType(), FragmentKind::operand_a);
        Value probs = ConvertOp::create(b, l, operandType, softmax.getProbs());
        WaitOp::create(b, l, vTile, j, valueRows);
        Value next = arith::AddIOp::create(b, l, j, c1);
        Value hasNext = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              next, numBlocks);
        scf::IfOp::create(b, l, hasNext, [&](OpBuilder &ib, Location il) {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPoint(ib.getInsertionBlock(), ib.getInsertionPoint());
          Value nextCol = arith::AddIOp::create(
              b, il, arith::MulIOp::create(b, il, next, blockN), base);
          copyKv(op.getKCache(), batch, nextCol, kvHead, kTile, next);
          scf::YieldOp::create(b, il);
        });
        Value newAcc = MmaOp::create(b, l, accType(outCols), probs, vTile,
                                     rescaled, /*transpose_b=*/fp8);
        scf::YieldOp::create(b, l,
                             SmallVector<Value>{newAcc, softmax.getNewMax(),
                                                softmax.getNewSum()});
      });

  auto finalize = SoftmaxFinalizeOp::create(
      b, loc, accType(outCols), rowType(), loop.getResult(0),
      loop.getResult(1), loop.getResult(2), /*lse_sum=*/Value(), scoreFactor,
      outFactor, scale, probsLog2Scale);
  auto storeTo = [&](OpBuilder &sb, Value o, Value lse, Value outBatch) {
    StoreOp::create(sb, loc, finalize.getOut(), o, outBatch, row, head,
                    packAttr());
    if (lse)
      StoreRowsOp::create(sb, loc, finalize.getLse(), lse, outBatch, head, row,
                          packAttr());
  };
  if (!op.isSplit()) {
    storeTo(b, op.getO(), op.getLse(), batch);
  } else {
    // One split writes the outputs itself; several write their partial
    // results to row split * B + b of the workspace for the combine kernel.
    Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         numSplits, c1);
    Value batches = memref::DimOp::create(b, loc, op.getQ(), 0);
    auto branch = scf::IfOp::create(b, loc, TypeRange(), single,
                                    /*withElseRegion=*/true);
    OpBuilder tb = OpBuilder::atBlockBegin(branch.thenBlock());
    storeTo(tb, op.getO(), op.getLse(), batch);
    OpBuilder eb = OpBuilder::atBlockBegin(branch.elseBlock());
    Value partialBatch = arith::AddIOp::create(
        eb, loc, arith::MulIOp::create(eb, loc, split, batches), batch);
    storeTo(eb, op.getOPartial(), op.getLsePartial(), partialBatch);
  }
  op.erase();
}

/// The kernel's arguments by role, in operand order.
ArrayAttr kvCacheTensorRoles(AttentionKvCacheOp op) {
  return Builder(op.getContext())
      .getStrArrayAttr(kernelTensorRoles(op.problem()));
}

/// The tile space: (query tile of P positions [x num_splits], group of
/// head_pack heads, batch), matching attn.program_id 0, 1 and 2.
GridAttr kvCacheGrid(MLIRContext *ctx, const TileConfig &config,
                     int64_t headPack, bool split) {
  Builder b(ctx);
  std::optional<SizeKind> times;
  if (split)
    times = SizeKind::num_splits;
  return GridAttr::get(
      ctx,
      b.getArrayAttr(
          {GridDimAttr::get(ctx, SizeKind::nq, config.blockM / headPack, times),
           GridDimAttr::get(ctx, SizeKind::num_heads, headPack),
           GridDimAttr::get(ctx, SizeKind::batch, 1)}),
      /*ctasPerSm=*/0);
}

} // namespace

LogicalResult mlir::attn::checkProblemKernelShape(Operation *op,
                                                  func::FuncOp func) {
  if (!func)
    return op->emitOpError("must be inside a func.func to be tiled");
  if (func.getNumArguments() != op->getNumOperands() ||
      !llvm::equal(op->getOperands(), func.getArguments()))
    return op->emitOpError("the enclosing function's arguments must be the "
                           "op's operands, in order: the function becomes "
                           "the kernel and its arguments the kernel's "
                           "tensors");
  if (func.getBody().front().getOperations().size() != 2)
    return op->emitOpError("must be the only operation of its function "
                           "besides the return");
  return success();
}

void mlir::attn::tileKvCache(AttentionKvCacheOp op, func::FuncOp func,
                             const TileConfig &config, TargetKind target) {
  MLIRContext *ctx = op.getContext();
  Builder b(ctx);
  func->setAttr(kKernelAttrName, UnitAttr::get(ctx));
  func->setAttr(kTensorsAttrName, kvCacheTensorRoles(op));
  func->setAttr(kGridAttrName,
                kvCacheGrid(ctx, config, op.headPack(), op.isSplit()));
  func->setAttr(kProblemAttrName, ProblemAttr::get(ctx, op.problem()));
  KvCacheProgramBuilder(op, config, target).build();
}
