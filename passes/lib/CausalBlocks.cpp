//===- CausalBlocks.cpp - attn-causal-blocks: skip and peel masked blocks -===//
//
// One masked loop over all key/value blocks
//   ->  loop bounds moved in to the blocks some row can see (causal and
//       sliding-window block skipping)
//       + an unmasked loop over the fully visible blocks
//       + masked loops over the edge blocks only: those a window's left
//         edge, the causal diagonal or a window's right edge, or the ragged
//         key tail cuts.
// Masking costs a compare and select per score; skipping saves whole GEMMs.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "attn-causal-blocks"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCAUSALBLOCKS
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The single attn.mask directly in `loop`'s body, if any.
MaskOp findMask(scf::ForOp loop) {
  MaskOp found;
  for (Operation &op : loop.getBody()->without_terminator())
    if (auto mask = dyn_cast<MaskOp>(op)) {
      if (found)
        return {};
      found = mask;
    }
  return found;
}

/// Which key blocks one query block visits and which of them need the mask,
/// as index values computed ahead of the loop:
///
///   block:  lo ... unmaskedLo ... unmaskedHi ... hi
///           [ masked ) [   unmasked    ) [ masked )
///
/// lo < hi always: a query block whose rows see no key still visits one
/// (fully masked) block, so the prologue's first K copy is consumed and its
/// rows end with l = 0, i.e. O = 0 and LSE = -inf.
struct KeyBlockBounds {
  Value lo;         ///< first visited block (unset: block 0)
  Value hi;         ///< one past the last visited block
  Value unmaskedLo; ///< first block no left window edge cuts (unset: lo)
  Value unmaskedHi; ///< first block the diagonal, right edge or tail cuts
};

/// Emits the bounds of `mask`'s band for the query block at its row.
///
/// Rows r0 .. r0 + block_m - 1 of the block have the diagonal d = r + off,
/// off = 0 (top-left) or kv_len - q_len (bottom-right; signed, negative
/// when Nq > Nk), and see keys in [d - L, d + R] (L, R: the window sides;
/// causal is R = 0; an absent side is unbounded) within [0, kv_len):
///
///   hi         = (min(d0 + block_m - 1 + R, kv_len - 1) clamped at 0) / block_n + 1
///   unmaskedHi = min(kv_len / block_n, min(d0 + 1 + R, kv_len) clamped / block_n, hi)
///   lo         = min((max(d0, L) - L) / block_n, hi - 1)
///   unmaskedLo = min(ceil((max(d0 + block_m - 1, L) - L) / block_n), hi)
///
/// with d0 = r0 + off. Sums with R are formed as min(x, kv_len - R) + R and
/// differences with L as max(x, L) - L so that no 32-bit index overflows
/// whatever the window (up to 2^31 - 1) and the lengths.
KeyBlockBounds emitBounds(OpBuilder &b, Location loc, MaskOp mask,
                          TilingAttr tiling, Value numBlocks) {
  Value blockM = arith::ConstantIndexOp::create(b, loc, tiling.getBlockM());
  Value blockN = arith::ConstantIndexOp::create(b, loc, tiling.getBlockN());
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value row = mask.getRow(), kvLen = mask.getKvLen();
  std::optional<int64_t> left = mask.getLeftBound();
  std::optional<int64_t> right = mask.getRightBound();
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };

  KeyBlockBounds bounds;
  // Blocks wholly inside the keys: j < kv_len / block_n.
  Value full = arith::DivUIOp::create(b, loc, kvLen, blockN);
  bounds.hi = numBlocks;
  if (right || left) {
    // The query block's first row has its diagonal at d0 = row
    // (top-left), or row + kv_len - q_len (bottom-right).
    Value diag = row;
    if (mask.isBottomRight())
      diag = arith::AddIOp::create(
          b, loc, row,
          arith::SubIOp::create(b, loc, kvLen, mask.getQLen()));
    // Bottom-right bounds are clamped at 0 where rows see nothing.
    auto clampAtZero = [&](Value v) -> Value {
      if (!mask.isBottomRight())
        return v;
      return arith::MaxSIOp::create(b, loc, v, index(0));
    };
    // min(x + R, kv_len) without forming x + R: min(x, kv_len - R) + R.
    auto plusRightCapped = [&](Value x, Value cap) -> Value {
      Value r = index(*right);
      return arith::AddIOp::create(
          b, loc,
          arith::MinSIOp::create(b, loc, x,
                                 arith::SubIOp::create(b, loc, cap, r)),
          r);
    };
    if (right) {
      // The last query row of the block sees columns <= d0 + block_m - 1 + R,
      // so blocks from that column's block + 1 on are all -inf: skip.
      Value lastRowDiag = arith::SubIOp::create(
          b, loc, arith::AddIOp::create(b, loc, diag, blockM), c1);
      Value lastCol =
          *right == 0
              ? lastRowDiag
              : plusRightCapped(lastRowDiag,
                                arith::SubIOp::create(b, loc, kvLen, c1));
      lastCol = clampAtZero(lastCol);
      Value visible = arith::AddIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, lastCol, blockN), c1);
      bounds.hi = arith::MinUIOp::create(b, loc, numBlocks, visible);
      // Block j is left of every row's right edge iff (j + 1) * block_n - 1
      // <= d0 + R, i.e. j < (d0 + R + 1) / block_n.
      Value diagEnd = arith::AddIOp::create(b, loc, diag, c1);
      if (*right > 0)
        diagEnd = plusRightCapped(diagEnd, kvLen);
      Value inside =
          arith::DivUIOp::create(b, loc, clampAtZero(diagEnd), blockN);
      full = arith::MinUIOp::create(b, loc, full, inside);
    }
    if (left) {
      // max(x, L) - L: the column x - L, clamped at 0 (no key left of 0).
      Value l = index(*left);
      auto minusLeft = [&](Value x) -> Value {
        return arith::SubIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, x, l), l);
      };
      // The first row sees columns >= d0 - L: blocks before that column's
      // block are all -inf for every row. Clamped below hi, so a block
      // whose window starts past the keys still visits one (masked) block.
      Value first = arith::DivUIOp::create(b, loc, minusLeft(diag), blockN);
      Value lastVisited = arith::SubIOp::create(b, loc, bounds.hi, c1);
      bounds.lo = arith::MinUIOp::create(b, loc, first, lastVisited);
      // Block j is right of every row's left edge iff j * block_n >=
      // d0 + block_m - 1 - L (the last row's edge).
      Value lastRowDiag = arith::SubIOp::create(
          b, loc, arith::AddIOp::create(b, loc, diag, blockM), c1);
      Value edge = arith::CeilDivUIOp::create(b, loc, minusLeft(lastRowDiag),
                                              blockN);
      bounds.unmaskedLo = arith::MinUIOp::create(b, loc, edge, bounds.hi);
    }
  }
  full = arith::MinUIOp::create(b, loc, full, bounds.hi);
  // Blocks the left edge cuts come first: the unmasked range starts after.
  if (bounds.unmaskedLo)
    full = arith::MaxUIOp::create(b, loc, full, bounds.unmaskedLo);
  bounds.unmaskedHi = full;
  return bounds;
}

/// The copies ahead of `loop` into buffers it waits on: they load the
/// block the loop's first iteration consumes (the prologue's first K).
SmallVector<CopyAsyncOp> findFirstBlockCopies(scf::ForOp loop) {
  SmallVector<CopyAsyncOp> copies;
  DenseSet<Value> waited;
  for (auto wait : loop.getBody()->getOps<WaitOp>())
    waited.insert(wait.getBuffer());
  for (Operation *op = loop->getPrevNode(); op; op = op->getPrevNode())
    if (auto copy = dyn_cast<CopyAsyncOp>(op); copy && waited.contains(copy.getDst()))
      copies.insert(copies.begin(), copy);
  return copies;
}

/// Makes `loop` start at block `lo`: the copies ahead of it load block
/// `lo` instead of block 0, and every fill inside it counts from 0 at
/// `lo` (fill f of block f becomes f - lo), so that an mbarrier's first
/// wait is for fill 0 whatever block the loop starts at.
LogicalResult startLoopAt(scf::ForOp loop, Value lo,
                          ArrayRef<CopyAsyncOp> firstCopies, int64_t blockN) {
  WalkResult pipes = loop.walk([&](Operation *op) {
    if (isa<PipeAcquireOp, PipeLoadOp, PipeWaitOp, PipeReleaseOp>(op)) {
      op->emitOpError("attn-causal-blocks renumbers the fills of a loop that "
                      "no longer starts at block 0 and runs before "
                      "attn-multibuffer: run it on the program with "
                      "attn.copy_async / attn.wait");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (pipes.wasInterrupted())
    return failure();
  for (CopyAsyncOp copy : firstCopies) {
    if (getConstantIntValue(copy.getRow()) != 0 ||
        getConstantIntValue(copy.getFill()) != 0)
      return copy.emitOpError("loads the first block of a key/value loop "
                              "that attn-causal-blocks moves: it must read "
                              "row 0 as fill 0");
    OpBuilder b(copy);
    copy.getRowMutable().assign(arith::MulIOp::create(
        b, copy.getLoc(), lo,
        arith::ConstantIndexOp::create(b, copy.getLoc(), blockN)));
  }
  // One shifted value per fill value, right after its definition (at the
  // top of the body for the induction variable or a value from outside).
  DenseMap<Value, Value> shifted;
  auto shift = [&](Value fill, Location loc) -> Value {
    if (Value done = shifted.lookup(fill))
      return done;
    OpBuilder b(loop.getContext());
    Operation *def = fill.getDefiningOp();
    if (def && loop->isProperAncestor(def))
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(loop.getBody());
    Value result = arith::SubIOp::create(b, loc, fill, lo);
    shifted[fill] = result;
    return result;
  };
  loop.walk([&](Operation *op) {
    if (auto wait = dyn_cast<WaitOp>(op))
      wait.getFillMutable().assign(shift(wait.getFill(), wait.getLoc()));
    else if (auto copy = dyn_cast<CopyAsyncOp>(op))
      copy.getFillMutable().assign(shift(copy.getFill(), copy.getLoc()));
  });
  loop.setLowerBound(lo);
  return success();
}

/// Whether `value` is available at `point`: defined outside `point`'s
/// block, or before it in that block.
bool dominatesOp(Value value, Operation *point) {
  Operation *def = value.getDefiningOp();
  Block *block = value.getParentBlock();
  if (block != point->getBlock())
    return block->getParentOp()->isProperAncestor(point);
  return !def || def->isBeforeInBlock(point);
}

/// Moves the mask of `loop` under `if (masked)`, so the loop's unmasked
/// blocks skip it at the cost of a uniform branch.
void guardMask(MaskOp mask, Value masked) {
  OpBuilder ib(mask);
  auto branch = scf::IfOp::create(ib, mask.getLoc(), mask.getType(), masked,
                                  /*withElseRegion=*/true);
  OpBuilder thenB = OpBuilder::atBlockEnd(branch.thenBlock());
  mask->moveBefore(thenB.getInsertionBlock(), thenB.getInsertionPoint());
  scf::YieldOp::create(thenB, mask.getLoc(), mask.getResult());
  OpBuilder elseB = OpBuilder::atBlockEnd(branch.elseBlock());
  scf::YieldOp::create(elseB, mask.getLoc(), mask.getInput());
  mask.getResult().replaceAllUsesExcept(branch.getResult(0),
                                        branch.thenBlock()->getTerminator());
}

/// Splits `loop` (which masks every block) into skip / masked / unmasked /
/// masked, or with `peel` false keeps one loop whose mask runs only on the
/// edge blocks.
LogicalResult peelMaskedBlocks(scf::ForOp loop, MaskOp mask,
                               TilingAttr tiling, bool peel) {
  if (getConstantIntValue(loop.getLowerBound()) != 0 ||
      loop.getConstantStep() != 1)
    return mask.emitOpError("attn-causal-blocks expects the key/value loop "
                            "to start at block 0 with step 1");
  SmallVector<Value, 3> inputs = {mask.getRow(), mask.getKvLen()};
  if (Value qLen = mask.getQLen())
    inputs.push_back(qLen);
  for (Value v : inputs)
    if (loop->isAncestor(v.getParentBlock()->getParentOp()))
      return mask.emitOpError("mask bounds must be defined outside the "
                              "key/value loop");
  // The mask's column must be the block index times block_n.
  Value ub = loop.getUpperBound();
  bool movesLowerBound = mask.getLeftBound().has_value();
  SmallVector<CopyAsyncOp> firstCopies;
  Operation *boundsAt = loop;
  if (movesLowerBound) {
    // The first block's copy ahead of the loop will read block lo, so the
    // bounds go before it.
    firstCopies = findFirstBlockCopies(loop);
    if (!firstCopies.empty())
      boundsAt = firstCopies.front();
    inputs.push_back(ub);
    for (Value v : inputs)
      if (!dominatesOp(v, boundsAt))
        return mask.emitOpError("mask bounds and the block count must be "
                                "defined before the copies of the key/value "
                                "loop's first block");
  }
  OpBuilder b(boundsAt);
  Location loc = loop.getLoc();
  KeyBlockBounds bounds = emitBounds(b, loc, mask, tiling, ub);

  // Every use of the block count inside the loop (its bound, the prefetch
  // guard) now means "one past the last visible block".
  ub.replaceUsesWithIf(bounds.hi, [&](OpOperand &use) {
    return loop->isAncestor(use.getOwner());
  });
  if (movesLowerBound &&
      failed(startLoopAt(loop, bounds.lo, firstCopies, tiling.getBlockN())))
    return failure();

  if (!peel) {
    OpBuilder cb(mask);
    Value iv = loop.getInductionVar();
    Value masked = arith::CmpIOp::create(cb, mask.getLoc(),
                                         arith::CmpIPredicate::uge, iv,
                                         bounds.unmaskedHi);
    if (bounds.unmaskedLo)
      masked = arith::OrIOp::create(
          cb, mask.getLoc(),
          arith::CmpIOp::create(cb, mask.getLoc(), arith::CmpIPredicate::ult,
                                iv, bounds.unmaskedLo),
          masked);
    guardMask(mask, masked);
    return success();
  }

  OpBuilder cb(loop);
  if (bounds.unmaskedLo) {
    // The blocks a window's left edge cuts, masked, come first.
    IRMapping leftMapping;
    auto leftEdge = cast<scf::ForOp>(cb.clone(*loop, leftMapping));
    leftEdge.setUpperBound(bounds.unmaskedLo);
    loop.getInitArgsMutable().assign(leftEdge.getResults());
  }
  IRMapping mapping;
  auto unmasked = cast<scf::ForOp>(cb.clone(*loop, mapping));
  if (bounds.unmaskedLo)
    unmasked.setLowerBound(bounds.unmaskedLo);
  unmasked.setUpperBound(bounds.unmaskedHi);
  auto clonedMask = cast<MaskOp>(mapping.lookup(mask.getOperation()));
  clonedMask.replaceAllUsesWith(clonedMask.getInput());
  clonedMask.erase();

  loop.setLowerBound(bounds.unmaskedHi);
  loop.getInitArgsMutable().assign(unmasked.getResults());
  return success();
}

struct AttnCausalBlocksPass
    : public mlir::attn::impl::AttnCausalBlocksBase<AttnCausalBlocksPass> {
  using AttnCausalBlocksBase::AttnCausalBlocksBase;
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    getOperation().walk([&](func::FuncOp func) {
      auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
      if (!tiling || !scheduleApplies(func, &AttentionSchedule::skipMaskedBlocks))
        return;
      // The peel option, when given; else the kernel's tiling says.
      bool peelMasked =
          peel.hasValue() ? bool(peel) : tiling.getPeelMaskedBlocks();
      SmallVector<std::pair<scf::ForOp, MaskOp>> loops;
      func.walk([&](scf::ForOp loop) {
        if (MaskOp mask = findMask(loop))
          loops.emplace_back(loop, mask);
      });
      for (auto [loop, mask] : loops)
        if (failed(peelMaskedBlocks(loop, mask, tiling, peelMasked)))
          return signalPassFailure();
    });
  }
};

} // namespace
