//===- Tile.cpp - attn-tile: FlashAttention-2 tiling ----------------------===//
//
// attn.attention (whole tensors)  ->  tile program: grid over
// (query block, head, batch), a loop over key/value blocks, asynchronous
// copies overlapped with the two GEMMs as in FlashAttention-2.
//
//===----------------------------------------------------------------------===//
#include "TileBackward.h"
#include "TileBuilder.h"
#include "TileKvCache.h"
#include "attn/Passes/BoundedSoftmax.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <limits>

#define DEBUG_TYPE "attn-tile"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNTILE
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Builds the tile program of one attn.attention in place of it.
class TileProgramBuilder : TileBuilder {
public:
  TileProgramBuilder(AttentionOp op, const TileConfig &config,
                     TargetKind target)
      : TileBuilder(op, config, target, op.getHeadDim(), op.getElementType(),
                    op.getHeadDimV()),
        op(op) {}

  void build();

private:
  /// A copy of one key or value block, through the block table when K and
  /// V are paged.
  CopyAsyncOp copyKv(Value src, Value batch, Value row, Value kvHead,
                     Value tile, Value fill) {
    return CopyAsyncOp::create(b, loc, src, batch, row, kvHead, tile, fill,
                               op.getBlockTable(), IntegerAttr(), UnitAttr());
  }
  /// Sequence `batch`'s keys in a paged K/V: cu_seqlens_k[b + 1] -
  /// cu_seqlens_k[b] (flash_attn_varlen_func's rule with a block_table),
  /// clamped to [0, the keys its row of the block table addresses], so no
  /// copy reads a page the table does not name.
  Value pagedKeyLength(Value batch);

  AttentionOp op;
};

Value TileProgramBuilder::pagedKeyLength(Value batch) {
  Value c0 = index(0);
  Value capacity = arith::MulIOp::create(
      b, loc, memref::DimOp::create(b, loc, op.getBlockTable(), 1),
      index(op.getPageSize()));
  Value start = LoadIndexOp::create(b, loc, b.getIndexType(),
                                    op.getCuSeqlensK(), batch, c0);
  Value end = LoadIndexOp::create(
      b, loc, b.getIndexType(), op.getCuSeqlensK(),
      arith::AddIOp::create(b, loc, batch, index(1)), c0);
  Value length = arith::SubIOp::create(b, loc, end, start);
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, length, c0), capacity);
}

void TileProgramBuilder::build() {
  MLIRContext *ctx = b.getContext();
  // O's accumulator: the head dim, or on sm_90a the padded tile width
  // (the store writes the first D columns).
  const int64_t outCols = outputAccumulatorCols(target, op.getHeadDimV());
  // Soft-capping, c * tanh(scale * s / c): attn.softcap computes the tanh
  // with scale / c, and c takes the softmax scale's place (folded into exp2
  // and the LSE), so the softmax sees the capped scores.
  FloatAttr scale = op.getScaleAttr();
  FloatAttr capScale;
  if (FloatAttr cap = op.getSoftcapAttr()) {
    capScale = b.getF32FloatAttr(scale.getValueAsDouble() /
                                 cap.getValueAsDouble());
    scale = cap;
  }
  Value c0 = index(0), c1 = index(1);
  Value blockM = index(config.blockM), blockN = index(config.blockN);

  // Grid: (query block, head, batch). Query head h reads kv head h / group.
  Value qBlock = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value head = ProgramIdOp::create(b, loc, b.getIndexType(), 1);
  Value batch = ProgramIdOp::create(b, loc, b.getIndexType(), 2);
  // A packed (varlen) batch has no batch dimension: [total, H, D].
  bool packed = op.isVarlen();
  // A packed batch over a paged K/V: K and V keep [num_blocks, page_size,
  // Hkv, D], read through the block table by (sequence, key row).
  bool paged = op.isPaged();
  int64_t rowsDim = packed ? 0 : 1, headsDim = packed ? 1 : 2;
  Value nq, nk;
  if (!packed)
    nk = memref::DimOp::create(b, loc, op.getK(), rowsDim);
  Value numHeads = memref::DimOp::create(b, loc, op.getQ(), headsDim);
  Value numKvHeads =
      memref::DimOp::create(b, loc, op.getK(), paged ? 2 : headsDim);
  Value group = arith::DivUIOp::create(b, loc, numHeads, numKvHeads);
  Value kvHead = arith::DivUIOp::create(b, loc, head, group);
  Value row = arith::MulIOp::create(b, loc, qBlock, blockM);
  // What the tile ops address the tensors by: the batch index, or the
  // sequence of this batch entry, whose lengths then take N's place.
  Value qBatch = batch, kBatch = batch;
  if (packed) {
    auto qSeq = SequenceOp::create(
        b, loc, op.getCuSeqlensQ(), batch,
        memref::DimOp::create(b, loc, op.getQ(), rowsDim));
    qBatch = qSeq.getSeq();
    nq = qSeq.getLength();
    if (paged) {
      nk = pagedKeyLength(batch);
    } else {
      auto kSeq = SequenceOp::create(
          b, loc, op.getCuSeqlensK(), batch,
          memref::DimOp::create(b, loc, op.getK(), rowsDim));
      kBatch = kSeq.getSeq();
      nk = kSeq.getLength();
    }
  } else if (op.isBottomRight() || op.isAlibiBottomRight()) {
    // A bottom-right mask (or ALiBi) places its diagonal with the query
    // length.
    nq = memref::DimOp::create(b, loc, op.getQ(), rowsDim);
  }

  // ALiBi's distances are from the mask's diagonal: offset Nk - Nq
  // bottom-right, 0 top-left.
  // FP8: the descales of this (batch, key/value head), q's times k's for the
  // scores and v's for the output, as run-time factors of the softmax; P is
  // scaled by 2^8 to use e4m3's range, and the product P V reads V
  // transposed (FP8 wgmma takes K-major operands only): a K-major V lands
  // in a D x blockN tile.
  // Block quantization: q's descale per query row's 128-row block, and k's
  // and v's per key block. k's multiplies each block's scores in the loop;
  // v's cannot ride on P V's operands (e4m3 P has no range to spare), so the
  // accumulator holds O in units of the last visited V block's descale: the
  // online softmax's alpha also moves it from block j-1's scale to block
  // j's (times s_{j-1} / s_j), the loop carries s_j, and the finalize
  // multiplies by the last one.
  const bool fp8 = isa<Float8E4M3FNType>(op.getElementType());
  const bool blockScales = fp8 && op.problem().blockScales;
  Value scoreFactor, outFactor;
  IntegerAttr probsLog2Scale;
  if (blockScales) {
    scoreFactor = DescaleOp::create(b, loc, rowType(),
                                    ValueRange{op.getQDescale()}, batch, head,
                                    row, /*block=*/Value());
  } else if (fp8) {
    scoreFactor = DescaleOp::create(
        b, loc, rowType(), ValueRange{op.getQDescale(), op.getKDescale()},
        batch, kvHead, /*row=*/Value(), /*block=*/Value());
  }
  if (fp8 && !blockScales)
    outFactor = DescaleOp::create(b, loc, rowType(),
                                  ValueRange{op.getVDescale()}, batch, kvHead,
                                  /*row=*/Value(), /*block=*/Value());
  if (fp8)
    probsLog2Scale = b.getI64IntegerAttr(kFp8ProbsLog2Scale);
  // A soft cap and ALiBi act on the true scores: FP8's descales multiply
  // the scores themselves first (one multiply per score) instead of riding
  // on the softmax's scale.
  const bool descaleScores = fp8 && (capScale || op.getAlibiSlopes());
  Value rowDescale = descaleScores ? scoreFactor : Value();
  if (descaleScores)
    scoreFactor = Value();

  Value alibiOffset;
  if (op.getAlibiSlopes())
    alibiOffset = op.isAlibiBottomRight()
                      ? arith::SubIOp::create(b, loc, nk, nq).getResult()
                      : c0;

  Value qTile = AllocSmemOp::create(b, loc, smemType(config.blockM));
  Value kTile = AllocSmemOp::create(b, loc, smemType(config.blockN));
  Value vTile = AllocSmemOp::create(
      b, loc,
      fp8 ? fp8TileType(op.getHeadDimV(), config.blockN)
          : smemType(config.blockN, /*cols=*/op.getHeadDimV()));
  if (packed) {
    // The grid covers the longest sequence: a CTA whose query block starts
    // past its own sequence's end has nothing to do and exits at once.
    Value live =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, nq);
    auto guard = scf::IfOp::create(b, loc, live, /*withElseRegion=*/false);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
  }
  Value numBlocks = arith::CeilDivUIOp::create(b, loc, nk, blockN);
  // A sequence without keys still runs one (fully masked) block: its rows
  // end with O = 0 and LSE = -inf, and the prologue's K copy is consumed.
  if (packed)
    numBlocks = arith::MaxUIOp::create(b, loc, numBlocks, c1);

  // Prologue: Q once per CTA, and the first K block. Each copy names its
  // fill (the key/value block index), which its wait names too;
  // attn-causal-blocks renumbers them when the loop no longer starts at
  // block 0.
  CopyAsyncOp::create(b, loc, op.getQ(), qBatch, row, head, qTile, c0);
  copyKv(op.getK(), kBatch, c0, kvHead, kTile, c0);
  WaitOp::create(b, loc, qTile, c0);

  Value acc0 = splat(accType(outCols), 0.0f);
  Value max0 = splat(rowType(), -std::numeric_limits<float>::infinity());
  Value sum0 = splat(rowType(), 0.0f);
  SmallVector<Value> inits = {acc0, max0, sum0};
  // The v descale the accumulator is in (any before the first block: the
  // accumulator is 0 and its alpha too).
  if (blockScales)
    inits.push_back(splat(rowType(), 1.0f));
  // A packed batch's k/v descales hold ceil(max_seqlen_k / 128) blocks per
  // (sequence, head): a sequence longer than the caller's max_seqlen_k
  // reads its last one rather than past the row.
  Value lastKeyBlock;
  if (blockScales && packed) {
    Value maxKeys = ProblemSizeOp::create(b, loc, b.getIndexType(),
                                          SizeKind::max_seqlen_k);
    Value keyBlocks = arith::MaxUIOp::create(
        b, loc, arith::CeilDivUIOp::create(b, loc, maxKeys, blockN), c1);
    lastKeyBlock = arith::SubIOp::create(b, loc, keyBlocks, c1);
  }

  auto loop = scf::ForOp::create(
      b, loc, c0, numBlocks, c1, inits,
      [&](OpBuilder &lb, Location l, Value j, ValueRange iter) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        Value acc = iter[0], max = iter[1], sum = iter[2];
        Value col = arith::MulIOp::create(b, l, j, blockN);
        // K_j landed (and everyone is done with V_{j-1}): start V_j.
        // Block scales: block j's descales first, so that their loads run
        // under the waits and the GEMM instead of stalling the softmax.
        Value kBlockScale, kInverse, vScale, vInverse;
        if (blockScales) {
          Value descaleBlock =
              lastKeyBlock ? arith::MinUIOp::create(b, l, j, lastKeyBlock).getResult() : j;
          auto blockDescale = [&](Value factors, bool reciprocal) {
            auto d = DescaleOp::create(b, l, rowType(), ValueRange{factors},
                                       batch, kvHead, /*row=*/Value(), descaleBlock);
            d.setReciprocal(reciprocal);
            return d.getResult();
          };
          kBlockScale = blockDescale(op.getKDescale(), false);
          // The softmax takes k's factor with its inverse (no multiply per
          // score) unless the scores need their true values first.
          if (!descaleScores)
            kInverse = blockDescale(op.getKDescale(), true);
          vScale = blockDescale(op.getVDescale(), false);
          vInverse = blockDescale(op.getVDescale(), true);
        }
        // A page's value rows past the sequence hold whatever the cache held
        // (0 * NaN would poison P V): V's wait zeroes them, or FP8's
        // transpose of this fill, so the count comes before the copy.
        Value valueRows =
            paged ? arith::SubIOp::create(b, l, nk, col).getResult() : Value();
        WaitOp::create(b, l, kTile, j);
        auto vCopy = copyKv(op.getV(), kBatch, col, kvHead, vTile, j);
        // A row-major FP8 V lands transposed all the same: attn-transpose-v
        // gives the copy its staging tile and transposing warps.
        if (fp8 && op.problem().vRowMajor)
          vCopy.setTranspose(true);
        // S = Q K_j^T, masked, then one online-softmax step.
        Value scores = MmaOp::create(b, l, accType(config.blockN), qTile,
                                     kTile, Value(), /*transpose_b=*/true);
        if (blockScales && descaleScores)
          scores =
              RescaleOp::create(b, l, scores.getType(), scores, kBlockScale);
        if (rowDescale)
          scores = RescaleOp::create(b, l, scores.getType(), scores, rowDescale);
        if (capScale)
          scores = SoftcapOp::create(b, l, scores.getType(), scores, capScale);
        // ALiBi on every block, in the units the softmax then scales.
        if (Value slopes = op.getAlibiSlopes())
          scores = AlibiOp::create(
              b, l, scores.getType(), scores, slopes, batch, head, row, col,
              alibiOffset, b.getF32FloatAttr(1.0 / scale.getValueAsDouble()),
              /*head_pack=*/IntegerAttr());
        auto mask = MaskOp::create(
            b, l, scores.getType(), scores, row, col, nk,
            op.isBottomRight() ? nq : Value(), op.getCausalAttr(),
            op.hasDiagonal() ? op.getCausalAlignAttr() : CausalAlignAttr(),
            op.getWindowLeftAttr(),
            op.getWindowRightAttr(), /*head_pack=*/IntegerAttr());
        Type rowTy = rowType();
        auto softmax = OnlineSoftmaxOp::create(
            b, l, scores.getType(), rowTy, rowTy, rowTy, mask.getResult(), max,
            sum, scoreFactor, kInverse ? kBlockScale : Value(), kInverse, scale,
            /*fixed_max=*/UnitAttr(), probsLog2Scale);
        Value alpha = softmax.getAlpha();
        if (blockScales) {
          Value moved = RescaleOp::create(b, l, rowTy, alpha, iter[3]);
          alpha = RescaleOp::create(b, l, rowTy, moved, vInverse);
        }
        Value rescaled =
            RescaleOp::create(b, l, acc.getType(), acc, alpha).getResult();
        auto operandType =
            RegTileType::get(ctx, {config.blockM, config.blockN},
                             op.getElementType(), FragmentKind::operand_a);
        Value probs =
            ConvertOp::create(b, l, operandType, softmax.getProbs());
        // V_j landed (and everyone is done with K_j): start K_{j+1}.
        WaitOp::create(b, l, vTile, j, valueRows);
        Value next = arith::AddIOp::create(b, l, j, c1);
        Value hasNext = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              next, numBlocks);
        scf::IfOp::create(b, l, hasNext, [&](OpBuilder &ib, Location il) {
          Value nextCol = arith::MulIOp::create(ib, il, next, blockN);
          OpBuilder::InsertionGuard nextGuard(b);
          b.setInsertionPoint(ib.getInsertionBlock(), ib.getInsertionPoint());
          copyKv(op.getK(), kBatch, nextCol, kvHead, kTile, next);
          scf::YieldOp::create(ib, il);
        });
        // O += P V_j.
        Value newAcc = MmaOp::create(b, l, accType(outCols), probs, vTile,
                                     rescaled, /*transpose_b=*/fp8);
        SmallVector<Value> yields = {newAcc, softmax.getNewMax(),
                                     softmax.getNewSum()};
        if (vScale)
          yields.push_back(vScale);
        scf::YieldOp::create(b, l, yields);
      });
  if (blockScales)
    outFactor = loop.getResult(3);

  auto finalize = SoftmaxFinalizeOp::create(
      b, loc, accType(outCols), rowType(), loop.getResult(0),
      loop.getResult(1), loop.getResult(2), /*lse_sum=*/Value(), scoreFactor,
      outFactor, scale, probsLog2Scale);
  // The epilogue reads its sequence's rows again (one load per CTA) rather
  // than keep them in registers across the key/value loop.
  Value outSeq = qBatch;
  if (packed)
    outSeq = SequenceOp::create(
                 b, loc, op.getCuSeqlensQ(), batch,
                 memref::DimOp::create(b, loc, op.getQ(), rowsDim))
                 .getSeq();
  StoreOp::create(b, loc, finalize.getOut(), op.getO(), outSeq, row, head);
  if (Value lse = op.getLse())
    StoreRowsOp::create(b, loc, finalize.getLse(), lse, outSeq, head, row);
  op.erase();
}

/// Checks that `op` sits alone in a function whose arguments it uses: the
/// function becomes the kernel, its arguments the kernel's tensors.
LogicalResult checkKernelShape(AttentionOp op, func::FuncOp func) {
  if (!func)
    return op.emitOpError("must be inside a func.func to be tiled");
  for (Value operand : op->getOperands()) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner()->getParentOp() != func)
      return op.emitOpError("operands must be arguments of the enclosing "
                            "function, which becomes the kernel");
  }
  if (func.getNumArguments() != op->getNumOperands())
    return op.emitOpError("the enclosing function must take exactly the "
                          "attention's tensors as arguments");
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (operand != func.getArgument(i))
      return op.emitOpError("the enclosing function's arguments must be q, "
                            "k, v, o[, lse][, cu_seqlens_q, cu_seqlens_k]"
                            "[, alibi_slopes] "
                            "in this order");
  if (func.getBody().front().getOperations().size() != 2)
    return op.emitOpError("must be the only operation of its function "
                          "besides the return");
  return success();
}

/// The kernel's arguments by role, in order: q, k, v, o[, lse][, cu_seqlens].
ArrayAttr tensorRoles(AttentionOp op) {
  return Builder(op.getContext())
      .getStrArrayAttr(kernelTensorRoles(op.problem()));
}

/// The tile space of the program attn-tile builds: one CTA per (query
/// block, head, batch), matching attn.program_id 0, 1 and 2. A packed batch
/// has as many query blocks as its longest sequence.
GridAttr forwardGrid(MLIRContext *ctx, const TileConfig &config,
                     bool packed) {
  Builder b(ctx);
  SizeKind queries = packed ? SizeKind::max_seqlen_q : SizeKind::nq;
  return GridAttr::get(
      ctx,
      b.getArrayAttr({GridDimAttr::get(ctx, queries, config.blockM),
                      GridDimAttr::get(ctx, SizeKind::num_heads, 1),
                      GridDimAttr::get(ctx, SizeKind::batch, 1)}),
      /*ctasPerSm=*/0);
}

/// The tiles attn-configure chose for the kernel `func` (its attn.tiling);
/// an error on `op` if none was chosen.
FailureOr<TileConfig> chosenTiling(func::FuncOp func, Operation *op) {
  auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
  if (!tiling)
    return op->emitOpError("needs its function's 'attn.tiling', which "
                           "attn-configure chooses: run attn-configure (or "
                           "attn-pipeline) before attn-tile");
  return TileConfig{tiling.getBlockM(), tiling.getBlockN(),
                    tiling.getNumWarps(), tiling.getStages(),
                    tiling.getPeelMaskedBlocks()};
}

struct AttnTilePass : public mlir::attn::impl::AttnTileBase<AttnTilePass> {
  using AttnTileBase::AttnTileBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TargetKind> target = getTarget(module);
    SmallVector<AttentionOp> ops;
    module.walk([&](AttentionOp op) { ops.push_back(op); });
    if (!ops.empty() && !target) {
      module.emitError("attn-tile needs the module attribute 'attn.target' "
                       "(#attn.target<sm_80> or #attn.target<sm_90a>)");
      return signalPassFailure();
    }
    for (AttentionOp op : ops) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (failed(checkKernelShape(op, func)))
        return signalPassFailure();
      FailureOr<TileConfig> config = chosenTiling(func, op);
      if (failed(config))
        return signalPassFailure();
      if (llvm::Error error = checkTileConfig(
              *config, *target, op.problem().tileHeadDim(), /*smemLimit=*/0,
              elementBytesOf(op.problem().dtype))) {
        op.emitOpError() << "invalid tile configuration: "
                         << llvm::toString(std::move(error));
        return signalPassFailure();
      }
      // Block scales are per 128 keys: one per key block of the loop.
      if (op.problem().blockScales && config->blockN != 128) {
        op.emitOpError() << "invalid tile configuration: block-n = "
                         << config->blockN
                         << " with block scales, which are per 128 keys; "
                            "use block-n 128";
        return signalPassFailure();
      }
      LLVM_DEBUG(llvm::dbgs() << "tiling " << func.getName() << " with "
                              << config->blockM << "x" << config->blockN
                              << ", " << config->numWarps << " warps\n");
      func->setAttr(kKernelAttrName, UnitAttr::get(&getContext()));
      func->setAttr(kTensorsAttrName, tensorRoles(op));
      func->setAttr(kGridAttrName,
                    forwardGrid(&getContext(), *config, op.isVarlen()));
      func->setAttr(kProblemAttrName,
                    ProblemAttr::get(&getContext(), op.problem()));
      TileProgramBuilder(op, *config, *target).build();
    }
    // The decoding kernels (TileKvCache.cpp, TileCombine.cpp).
    if (failed(tileDecodingKernels(module, target)))
      return signalPassFailure();
  }

  /// Tiles every attn.attention_kvcache, attn.combine_splits and
  /// attn.attention_backward of `module`.
  LogicalResult tileDecodingKernels(ModuleOp module,
                                    std::optional<TargetKind> target) {
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<AttentionKvCacheOp, CombineSplitsOp, AttentionBackwardOp>(op))
        ops.push_back(op);
    });
    if (!ops.empty() && !target)
      return module.emitError("attn-tile needs the module attribute "
                              "'attn.target' (#attn.target<sm_80> or "
                              "#attn.target<sm_90a>)");
    for (Operation *op : ops) {
      auto func = op->getParentOfType<func::FuncOp>();
      if (failed(checkProblemKernelShape(op, func)))
        return failure();
      FailureOr<TileConfig> config = chosenTiling(func, op);
      if (failed(config))
        return failure();
      if (auto backward = dyn_cast<AttentionBackwardOp>(op)) {
        if (llvm::Error error =
                checkTileConfig(*config, *target, backward.getHeadDim())) {
          backward.emitOpError() << "invalid tile configuration: "
                                 << llvm::toString(std::move(error));
          return failure();
        }
        if (failed(tileBackward(backward, func, *config, *target)))
          return failure();
        continue;
      }
      if (auto combine = dyn_cast<CombineSplitsOp>(op)) {
        int64_t pack = combine.headPack();
        if (config->blockM % (16 * config->numWarps) != 0 ||
            config->blockM % pack != 0 || (config->blockM / pack) % 8 != 0)
          return combine.emitOpError()
                 << "invalid tile configuration: block-m = " << config->blockM
                 << " must be a multiple of " << 16 * config->numWarps
                 << " with 8 rows or more per packed head";
        tileCombine(combine, func, *config);
        continue;
      }
      auto kv = cast<AttentionKvCacheOp>(op);
      if (llvm::Error error =
              checkKvCacheTileConfig(*config, *target,
                                     std::max(kv.getHeadDim(), kv.getHeadDimV()),
                                     kv.getPageSize(), kv.headPack(),
                                     elementBytesOf(kv.problem().dtype))) {
        kv.emitOpError() << "invalid tile configuration: "
                         << llvm::toString(std::move(error));
        return failure();
      }
      tileKvCache(kv, func, *config, *target);
    }
    return success();
  }
};

} // namespace
