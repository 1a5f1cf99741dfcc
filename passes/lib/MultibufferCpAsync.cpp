//===- MultibufferCpAsync.cpp - attn-multibuffer on sm_80: cp.async rings -===//
//
// On sm_80 every thread copies (cp.async chunks, one commit group per fill)
// and every thread reads, so a ring of `S` stages is a schedule of the
// copies rather than a protocol between roles. From attn-tile's
// single-buffer order
//
//   prologue: Q, K_0; wait Q
//   loop j:   wait K_j; V_j; S = Q K_j^T ...; wait V_j; K_{j+1} if j+1 < n; O += P V_j
//
// every fill in the loop moves S - 1 blocks ahead, and the fills the loop no
// longer issues go to the prologue, in the order the loop would have issued
// them (S = 2):
//
//   prologue: Q, K_0, V_0, K_1 if 1 < n; wait Q {pending = 3}; barrier
//   loop j:   wait K_j {pending = 2}; barrier; V_{j+1} if j+1 < n
//             S = Q K_j^T ...; release K_j
//             wait V_j {pending = 2}; barrier; K_{j+2} if j+2 < n
//             O += P V_j; release V_j
//
// A fill `if` false commits an empty group, so the count of groups between a
// fill and its wait is the same on every path; `pending` is that count
// (2 (S - 1) here), so wait_group leaves exactly the younger fills in
// flight. A fill overwrites the stage of fill - S, which the single-buffer
// program refilled at the same place, so the barrier that made that refill
// safe still does; the pass checks it on the result all the same.
//
// A nest may start at block `lo` (a sliding window's, from
// attn-causal-blocks) and number its fills from 0 there: fill f is block
// lo + f. Copies read rows of the block, guards test the block against the
// block count, fills are block - lo; from block 0 block and fill are one
// value, as above.
//
//===----------------------------------------------------------------------===//
#include "MultibufferCpAsync.h"

#include "attn/Dialect/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// One pipe op of a key/value loop body, in program order.
struct PipeEvent {
  enum Kind { wait, load, release, barrier } kind;
  Value pipe;
  /// The op's block minus the loop's induction variable.
  int64_t offset = 0;
  Operation *op = nullptr;
  /// For a load: its acquire, and the `scf.if` guarding both (if any).
  PipeAcquireOp acquire;
  scf::IfOp guard;
  /// For a load: the block it copies (its fill when the nest starts at 0).
  Value block;

  bool sameShape(const PipeEvent &other) const {
    return kind == other.kind && pipe == other.pipe && offset == other.offset;
  }
};

/// Whether `op` is or holds a pipe op.
bool holdsPipeOps(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isa<PipeAcquireOp, PipeLoadOp, PipeWaitOp, PipeReleaseOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// `fill - iv` when `fill` is `iv` or `iv + constant`.
std::optional<int64_t> offsetFromIv(Value fill, Value iv) {
  if (fill == iv)
    return 0;
  if (auto add = fill.getDefiningOp<arith::AddIOp>())
    for (auto [x, c] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())})
      if (x == iv)
        if (std::optional<int64_t> k = getConstantIntValue(c))
          return *k;
  return std::nullopt;
}

int64_t stagesOf(Value pipe) {
  return cast<PipeType>(pipe.getType()).getStages();
}
int64_t rowsOf(Value pipe) {
  return cast<PipeType>(pipe.getType()).getBuffer().getRows();
}

/// The acquire right before `load`, for the same pipe and fill.
FailureOr<PipeAcquireOp> acquireOf(PipeLoadOp load) {
  auto acquire = dyn_cast_or_null<PipeAcquireOp>(load->getPrevNode());
  if (!acquire || acquire.getPipe() != load.getPipe() ||
      acquire.getFill() != load.getFill())
    return load.emitOpError("must directly follow the attn.pipe_acquire of "
                            "its fill for attn-multibuffer to move it");
  return acquire;
}

/// Whether `row` is `block * rows` for this load's pipe (a constant product
/// when the block is a constant).
bool isBlockTimesRows(PipeLoadOp load, Value block, Value row) {
  int64_t rows = rowsOf(load.getPipe());
  if (std::optional<int64_t> constant = getConstantIntValue(block))
    return getConstantIntValue(row) == *constant * rows;
  auto mul = row.getDefiningOp<arith::MulIOp>();
  if (!mul)
    return false;
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())})
    if (x == block && getConstantIntValue(c) == rows)
      return true;
  return false;
}

/// The first row of the copied range when the copy of `block` reads rows
/// `block * rows + base` (a KV-cache split starts its rows at `base`):
/// `base`, or a null value for `block * rows`. Fails when the row has
/// neither form. A copy of block 0 reads `base` itself, which only the
/// loop's loads can tell apart from any other row: `knownBase` is theirs.
FailureOr<Value> rowBase(PipeLoadOp load, Value block,
                         Value knownBase = Value()) {
  Value row = load.getRow();
  if (isBlockTimesRows(load, block, row))
    return Value();
  if (knownBase && row == knownBase &&
      getConstantIntValue(block) == std::optional<int64_t>(0))
    return knownBase;
  if (auto add = row.getDefiningOp<arith::AddIOp>())
    for (auto [x, base] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())})
      if (isBlockTimesRows(load, block, x) && (!knownBase || base == knownBase))
        return base;
  return failure();
}

/// Whether the copy reads rows `block * rows [+ base]` (what moving it by
/// whole blocks assumes).
bool rowIsBlockTimesRows(PipeLoadOp load, Value block,
                         Value knownBase = Value()) {
  return succeeded(rowBase(load, block, knownBase));
}

/// The block a fill names, and its offset from the loop's block `iv`: the
/// fill itself (`iv` or `iv + c`) in a nest from block 0, else the block
/// `B` of `fill = B - base` (B being `iv` or `iv + c`).
std::optional<std::pair<int64_t, Value>> blockOf(Value fill, Value iv,
                                                 Value base) {
  Value block = fill;
  if (base) {
    auto sub = fill.getDefiningOp<arith::SubIOp>();
    if (!sub || sub.getRhs() != base)
      return std::nullopt;
    block = sub.getLhs();
  }
  if (std::optional<int64_t> offset = offsetFromIv(block, iv))
    return std::pair(*offset, block);
  return std::nullopt;
}

/// The pipe ops of one key/value loop body, in order. A fill may sit under
/// an `scf.if` that only checks that its block exists (`block < bound`); the
/// bound is returned through `guardBounds`. `base` is the nest's first block
/// when it is not block 0 (fills are then `block - base`).
LogicalResult collectEvents(scf::ForOp loop, SmallVectorImpl<PipeEvent> &events,
                            SmallVectorImpl<Value> &guardBounds, Value base) {
  Value iv = loop.getInductionVar();
  auto blockOfFill = [&](Operation *op, Value fill)
      -> FailureOr<std::pair<int64_t, Value>> {
    if (std::optional<std::pair<int64_t, Value>> block = blockOf(fill, iv, base))
      return *block;
    if (base)
      return op->emitOpError("names a fill attn-multibuffer cannot relate to "
                             "the loop's block index: a nest that starts at "
                             "block lo needs fills (index + constant) - lo");
    return op->emitOpError("names a fill attn-multibuffer cannot relate to "
                           "the loop's block index (it needs the index "
                           "itself or the index plus a constant)");
  };
  auto offsetOf = [&](Operation *op, Value fill) -> FailureOr<int64_t> {
    FailureOr<std::pair<int64_t, Value>> block = blockOfFill(op, fill);
    if (failed(block))
      return failure();
    return block->first;
  };
  auto addLoad = [&](PipeLoadOp load, scf::IfOp guard) -> LogicalResult {
    FailureOr<PipeAcquireOp> acquire = acquireOf(load);
    FailureOr<std::pair<int64_t, Value>> block =
        blockOfFill(load, load.getFill());
    if (failed(acquire) || failed(block))
      return failure();
    if (block->first < 0)
      return load.emitOpError("fills a block before the loop's own; "
                              "attn-multibuffer moves fills ahead only");
    if (!rowIsBlockTimesRows(load, block->second))
      return load.emitOpError("copies rows that are not block * block rows "
                              "(plus a loop-invariant first row); "
                              "attn-multibuffer moves fills by whole blocks");
    PipeEvent event{PipeEvent::load, load.getPipe(), block->first, load};
    event.acquire = *acquire;
    event.guard = guard;
    event.block = block->second;
    events.push_back(event);
    return success();
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto wait = dyn_cast<PipeWaitOp>(op)) {
      FailureOr<int64_t> offset = offsetOf(wait, wait.getFill());
      if (failed(offset))
        return failure();
      events.push_back({PipeEvent::wait, wait.getPipe(), *offset, wait});
    } else if (auto release = dyn_cast<PipeReleaseOp>(op)) {
      FailureOr<int64_t> offset = offsetOf(release, release.getFill());
      if (failed(offset))
        return failure();
      events.push_back({PipeEvent::release, release.getPipe(), *offset, release});
    } else if (isa<BarrierOp>(op)) {
      events.push_back({PipeEvent::barrier, Value(), 0, &op});
    } else if (isa<PipeAcquireOp>(op)) {
      // Taken with the load that follows it.
      auto load = dyn_cast_or_null<PipeLoadOp>(op.getNextNode());
      if (!load)
        return op.emitOpError("must be followed by the attn.pipe_load of its "
                              "fill for attn-multibuffer to move it");
    } else if (auto load = dyn_cast<PipeLoadOp>(op)) {
      if (failed(addLoad(load, {})))
        return failure();
    } else if (auto guard = dyn_cast<scf::IfOp>(op); guard && holdsPipeOps(guard)) {
      // scf.if (fill < bound) { pipe_acquire; pipe_load }, plus pure ops.
      SmallVector<PipeLoadOp> loads;
      bool onlyFill = guard.getNumResults() == 0 && guard.getElseRegion().empty();
      for (Operation &inner : guard.thenBlock()->without_terminator()) {
        if (auto load = dyn_cast<PipeLoadOp>(inner))
          loads.push_back(load);
        else if (!isa<PipeAcquireOp>(inner) && !isPure(&inner))
          onlyFill = false;
      }
      auto cmp = guard.getCondition().getDefiningOp<arith::CmpIOp>();
      std::optional<std::pair<int64_t, Value>> block =
          loads.size() == 1 ? blockOf(loads.front().getFill(), iv, base)
                            : std::nullopt;
      if (!onlyFill || !block || !cmp ||
          (cmp.getPredicate() != arith::CmpIPredicate::ult &&
           cmp.getPredicate() != arith::CmpIPredicate::slt) ||
          cmp.getLhs() != block->second)
        return guard.emitOpError(
            "guards a pipe fill in a way attn-multibuffer cannot pipeline "
            "(it takes scf.if (block < bound) { pipe_acquire; pipe_load })");
      if (failed(addLoad(loads.front(), guard)))
        return failure();
      guardBounds.push_back(cmp.getRhs());
    } else if (holdsPipeOps(&op)) {
      return op.emitOpError("holds pipe ops attn-multibuffer cannot pipeline "
                            "(they must sit directly in the key/value loop, "
                            "a fill at most under an scf.if guard)");
    }
  }
  return success();
}

/// The key/value loops of a function and what the schedule needs of them.
struct LoopNest {
  SmallVector<scf::ForOp> loops;
  /// Pipe ops before the first loop, in order.
  SmallVector<Operation *> prologue;
  /// The events of every loop body (all alike).
  SmallVector<PipeEvent> events;
  /// One past the last block: the last loop's upper bound.
  Value numBlocks;
  /// The first loop's first block when it is not block 0 (fill f is block
  /// base + f); null from block 0.
  Value base;
};

/// The block that holds the tile program: the function's body, or in a
/// varlen kernel the body of the top-level scf.if that lets only the CTAs
/// whose query block lies inside their sequence run it.
Block &programBlock(func::FuncOp func) {
  Block &body = func.getBody().front();
  if (!isVarlenKernel(func))
    return body;
  for (auto guard : body.getOps<scf::IfOp>())
    if (guard.getNumResults() == 0 && guard.getElseRegion().empty() &&
        holdsPipeOps(guard))
      return *guard.thenBlock();
  return body;
}

LogicalResult findLoopNest(func::FuncOp func, LoopNest &nest,
                           SmallVectorImpl<Value> &guardBounds) {
  for (Operation &op : programBlock(func)) {
    if (isa<PipeAcquireOp, PipeLoadOp, PipeWaitOp, PipeReleaseOp>(op)) {
      if (!nest.loops.empty())
        return op.emitOpError("follows the key/value loops; attn-multibuffer "
                              "(sm_80) schedules fills before and inside them "
                              "only");
      nest.prologue.push_back(&op);
      continue;
    }
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!holdsPipeOps(&op))
      continue;
    if (!loop)
      return op.emitOpError("holds pipe ops outside a key/value loop; "
                            "attn-multibuffer (sm_80) cannot schedule them");
    if (loop.getConstantStep() != 1)
      return loop.emitOpError("attn-multibuffer (sm_80) pipelines key/value "
                              "loops of step 1 only");
    // The first loop starts at block 0 or at a block `base` (a window's):
    // the others continue where the previous one ended.
    if (nest.loops.empty() && getConstantIntValue(loop.getLowerBound()) !=
                                  std::optional<int64_t>(0))
      nest.base = loop.getLowerBound();
    if (!nest.loops.empty() &&
        loop.getLowerBound() != nest.loops.back().getUpperBound())
      return loop.emitOpError("attn-multibuffer (sm_80) needs the key/value "
                              "loops to cover their blocks in order (each "
                              "from where the previous one ended)");
    SmallVector<PipeEvent> events;
    if (failed(collectEvents(loop, events, guardBounds, nest.base)))
      return failure();
    if (!nest.loops.empty() &&
        (events.size() != nest.events.size() ||
         !llvm::all_of(llvm::zip(events, nest.events), [](auto pair) {
           return std::get<0>(pair).sameShape(std::get<1>(pair));
         })))
      return loop.emitOpError("runs its pipe ops in another order than the "
                              "key/value loop before it; attn-multibuffer "
                              "(sm_80) needs one order for all of them");
    if (nest.loops.empty())
      nest.events = events;
    nest.loops.push_back(loop);
  }
  if (!nest.loops.empty())
    nest.numBlocks = nest.loops.back().getUpperBound();
  return success();
}

/// Per pipe filled in the loops: one fill, one wait and one release of the
/// loop's own block per iteration; returns the fill offsets.
LogicalResult checkLoopPipes(LoopNest &nest,
                             llvm::MapVector<Value, int64_t> &fillOffset) {
  for (const PipeEvent &event : nest.events)
    if (event.kind == PipeEvent::load &&
        !fillOffset.insert({event.pipe, event.offset}).second)
      return event.op->emitOpError("is the second fill of its pipe in one "
                                   "iteration; attn-multibuffer (sm_80) "
                                   "takes one per block");
  for (auto [pipe, offset] : fillOffset) {
    int waits = 0, releases = 0;
    for (const PipeEvent &event : nest.events) {
      if (event.pipe != pipe)
        continue;
      if (event.kind != PipeEvent::load && event.offset != 0)
        return event.op->emitOpError("names block j + ")
               << event.offset << "; attn-multibuffer (sm_80) waits for and "
               << "releases the loop's own block j";
      waits += event.kind == PipeEvent::wait;
      releases += event.kind == PipeEvent::release;
    }
    if (waits != 1 || releases != 1)
      return nest.loops.front().emitOpError()
             << "waits for " << waits << " and releases " << releases
             << " fills of one pipe per iteration; attn-multibuffer (sm_80) "
                "needs one of each";
  }
  return success();
}

/// Emits `pipe_acquire; pipe_load` of `block` as `fill` like `like` (rows
/// from `rowStart` on, when given), predicated on `valid` when given.
void emitFill(OpBuilder &b, PipeLoadOp like, Value block, Value fill,
              Value valid, Value rowStart) {
  Location loc = like.getLoc();
  Value row = arith::MulIOp::create(
      b, loc, block, arith::ConstantIndexOp::create(b, loc, rowsOf(like.getPipe())));
  if (rowStart)
    row = arith::AddIOp::create(b, loc, row, rowStart);
  PipeAcquireOp::create(b, loc, like.getPipe(), fill);
  PipeLoadOp::create(b, loc, like.getSrc(), like.getBatch(), row,
                     like.getHead(), like.getPipe(), fill, valid,
                     like.getPages(), like.getHeadPackAttr(),
                     like.getTransposeAttr());
}

/// Moves every fill of the loops `stages - 1` blocks ahead (predicated on
/// `fill < numBlocks`) and issues the fills the loops skip in the prologue.
LogicalResult movePipeFills(func::FuncOp func, LoopNest &nest,
                            const llvm::MapVector<Value, int64_t> &fillOffset,
                            int64_t stages) {
  const int64_t shift = stages - 1;
  // Where each loop pipe's rows start (a KV-cache split's first block).
  llvm::DenseMap<Value, Value> bases;
  for (const PipeEvent &event : nest.events)
    if (event.kind == PipeEvent::load) {
      auto load = cast<PipeLoadOp>(event.op);
      bases[load.getPipe()] = *rowBase(load, event.block);
    }
  // The prologue's fills of the loop pipes: blocks 0 .. offset - 1.
  llvm::MapVector<Value, SmallVector<PipeLoadOp>> prologueFills;
  for (Operation *op : nest.prologue)
    if (auto load = dyn_cast<PipeLoadOp>(op); load &&
        fillOffset.contains(load.getPipe()))
      prologueFills[load.getPipe()].push_back(load);
  Operation *insertionPoint = nullptr;
  for (auto [pipe, offset] : fillOffset) {
    SmallVector<PipeLoadOp> &loads = prologueFills[pipe];
    for (auto [i, load] : llvm::enumerate(loads)) {
      // Fill i is block i, or block base (the nest's first; only it is
      // filled ahead of a nest that starts elsewhere).
      Value block = load.getFill();
      if (nest.base && i == 0)
        block = nest.base;
      if (getConstantIntValue(load.getFill()) != std::optional<int64_t>(i) ||
          (nest.base && i > 0) ||
          !rowIsBlockTimesRows(load, block, bases.lookup(pipe)) ||
          rowBase(load, block, bases.lookup(pipe)).value_or(Value()) !=
              bases.lookup(pipe) ||
          load.getValid())
        return load.emitOpError("is not the prologue's fill of block ")
               << i << "; attn-multibuffer (sm_80) needs blocks 0, 1, ... "
               << "(or the first block of a nest that starts elsewhere) "
               << "filled in order before the key/value loop";
    }
    if (static_cast<int64_t>(loads.size()) != offset)
      return nest.loops.front().emitOpError()
             << "fills block j + " << offset << " of a pipe whose prologue "
             << "fills " << loads.size() << " blocks; attn-multibuffer "
             << "(sm_80) needs exactly the blocks before the loop's first";
    for (PipeLoadOp load : loads) {
      FailureOr<PipeAcquireOp> acquire = acquireOf(load);
      if (failed(acquire))
        return failure();
      if (!insertionPoint || acquire->getOperation()->isBeforeInBlock(insertionPoint))
        insertionPoint = *acquire;
    }
  }
  if (!insertionPoint)
    insertionPoint = nest.loops.front();

  // The prologue needs the block count, batch and head where it starts.
  IRRewriter rewriter(func.getContext());
  SmallVector<Value> needed = {nest.numBlocks};
  if (nest.base)
    needed.push_back(nest.base);
  for (const PipeEvent &event : nest.events)
    if (event.kind == PipeEvent::load) {
      auto load = cast<PipeLoadOp>(event.op);
      needed.append({load.getBatch(), load.getHead()});
      if (Value base = bases.lookup(load.getPipe()))
        needed.push_back(base);
    }
  if (failed(moveValueDefinitions(rewriter, needed, insertionPoint)))
    return nest.loops.front().emitOpError(
        "needs the block count, batch and head of its fills before the "
        "prologue's first fill, and attn-multibuffer cannot move their "
        "definitions there");

  // Prologue: what iterations -shift - offset .. -1 would have issued.
  OpBuilder b(insertionPoint);
  int64_t maxOffset = 0;
  for (auto [pipe, offset] : fillOffset)
    maxOffset = std::max(maxOffset, offset);
  for (int64_t t = -(shift + maxOffset); t < 0; ++t)
    for (const PipeEvent &event : nest.events) {
      if (event.kind != PipeEvent::load)
        continue;
      int64_t fill = t + event.offset + shift;
      if (fill < 0)
        continue;
      Location loc = event.op->getLoc();
      Value fillValue = arith::ConstantIndexOp::create(b, loc, fill);
      Value block = fillValue;
      if (nest.base)
        block = fill == 0 ? nest.base
                          : arith::AddIOp::create(b, loc, nest.base, fillValue)
                                .getResult();
      // The first block always exists (a kernel has at least one key
      // block; a window's nest visits at least one).
      Value valid =
          fill == 0 ? Value()
                    : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            block, nest.numBlocks)
                          .getResult();
      auto like = cast<PipeLoadOp>(event.op);
      emitFill(b, like, block, fillValue, valid, bases.lookup(like.getPipe()));
    }
  for (auto &[pipe, loads] : prologueFills)
    for (PipeLoadOp load : loads) {
      Operation *acquire = load->getPrevNode();
      load.erase();
      acquire->erase();
    }

  // The loops: block j + offset -> j + offset + shift, if it exists.
  for (scf::ForOp loop : nest.loops) {
    SmallVector<PipeEvent> events;
    SmallVector<Value> bounds;
    if (failed(collectEvents(loop, events, bounds, nest.base)))
      return failure();
    for (PipeEvent &event : events) {
      if (event.kind != PipeEvent::load)
        continue;
      auto load = cast<PipeLoadOp>(event.op);
      Operation *at = event.guard ? event.guard.getOperation()
                                  : event.acquire.getOperation();
      OpBuilder lb(at);
      Location loc = load.getLoc();
      Value iv = loop.getInductionVar();
      Value block = arith::AddIOp::create(
          lb, loc, iv,
          arith::ConstantIndexOp::create(lb, loc, event.offset + shift));
      Value fill = nest.base ? arith::SubIOp::create(lb, loc, block, nest.base)
                                   .getResult()
                             : block;
      Value valid = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult,
                                          block, nest.numBlocks);
      emitFill(lb, load, block, fill, valid, bases.lookup(load.getPipe()));
      if (event.guard) {
        event.guard.erase();
      } else {
        load.erase();
        event.acquire.erase();
      }
    }
  }
  return success();
}

/// Index of the last commit of `fill` of `pipe` in `groups`.
std::optional<size_t> lastCommit(ArrayRef<std::pair<Value, int64_t>> groups,
                                 Value pipe, int64_t fill) {
  for (size_t i = groups.size(); i-- > 0;)
    if (groups[i] == std::pair(pipe, fill))
      return i;
  return std::nullopt;
}

/// Sets every wait's `pending`: the fewest groups committed after its fill's
/// on any path (every fill commits exactly one group), found by replaying
/// the prologue and enough iterations to reach the steady state.
LogicalResult setPendingCounts(LoopNest &nest) {
  MLIRContext *ctx = nest.loops.front().getContext();
  auto setPending = [&](PipeWaitOp wait, int64_t pending) {
    wait.setPendingAttr(IntegerAttr::get(IntegerType::get(ctx, 64), pending));
  };
  SmallVector<std::pair<Value, int64_t>> groups;
  for (Operation *op : nest.prologue) {
    auto fillOf = [&](Value fill) -> FailureOr<int64_t> {
      if (std::optional<int64_t> constant = getConstantIntValue(fill))
        return *constant;
      return op->emitOpError("names a fill that is not a constant before the "
                             "key/value loop");
    };
    if (auto load = dyn_cast<PipeLoadOp>(op)) {
      FailureOr<int64_t> fill = fillOf(load.getFill());
      if (failed(fill))
        return failure();
      groups.push_back({load.getPipe(), *fill});
    } else if (auto wait = dyn_cast<PipeWaitOp>(op)) {
      FailureOr<int64_t> fill = fillOf(wait.getFill());
      if (failed(fill))
        return failure();
      std::optional<size_t> at = lastCommit(groups, wait.getPipe(), *fill);
      if (!at)
        return wait.emitOpError("waits for a fill no attn.pipe_load before it "
                                "commits");
      setPending(wait, groups.size() - 1 - *at);
    }
  }
  int64_t maxOffset = 0, maxStages = 1;
  for (const PipeEvent &event : nest.events) {
    maxOffset = std::max(maxOffset, event.offset);
    if (event.pipe)
      maxStages = std::max(maxStages, stagesOf(event.pipe));
  }
  SmallVector<int64_t> pending(nest.events.size(),
                               std::numeric_limits<int64_t>::max());
  const int64_t iterations = maxOffset + 2 * maxStages + 2;
  for (int64_t t = 0; t < iterations; ++t)
    for (auto [i, event] : llvm::enumerate(nest.events)) {
      if (event.kind == PipeEvent::load)
        groups.push_back({event.pipe, t + event.offset});
      if (event.kind != PipeEvent::wait)
        continue;
      std::optional<size_t> at = lastCommit(groups, event.pipe, t + event.offset);
      if (!at)
        return event.op->emitOpError("waits for block j + ")
               << event.offset << " before any attn.pipe_load commits it";
      pending[i] = std::min<int64_t>(pending[i], groups.size() - 1 - *at);
    }
  for (scf::ForOp loop : nest.loops) {
    size_t i = 0;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto wait = dyn_cast<PipeWaitOp>(op)) {
        while (nest.events[i].kind != PipeEvent::wait)
          ++i;
        setPending(wait, pending[i++]);
      }
    }
  }
  return success();
}

/// Puts an attn.barrier after every wait that lacks one: the other threads'
/// chunks are visible only after it.
void addBarriersAfterWaits(func::FuncOp func) {
  func.walk([](PipeWaitOp wait) {
    if (isa_and_present<BarrierOp>(wait->getNextNode()))
      return;
    OpBuilder b(wait->getContext());
    b.setInsertionPointAfter(wait);
    BarrierOp::create(b, wait.getLoc());
  });
}

/// Checks that every refill follows a barrier that every thread passes after
/// releasing the fill it overwrites (`stages` earlier), and that the
/// prologue fills only fresh stages.
LogicalResult checkRefills(LoopNest &nest) {
  for (Operation *op : nest.prologue)
    if (auto load = dyn_cast<PipeLoadOp>(op))
      if (getConstantIntValue(load.getFill()).value_or(0) >=
          stagesOf(load.getPipe()))
        return load.emitOpError("refills a stage before the key/value loop "
                                "released it; attn-multibuffer (sm_80) needs "
                                "more stages or fewer blocks ahead");
  const int64_t n = nest.events.size();
  auto barrierIn = [&](int64_t from, int64_t to) { // open interval
    for (int64_t i = from + 1; i < to; ++i)
      if (nest.events[i].kind == PipeEvent::barrier)
        return true;
    return false;
  };
  for (auto [x, load] : llvm::enumerate(nest.events)) {
    if (load.kind != PipeEvent::load)
      continue;
    for (auto [y, release] : llvm::enumerate(nest.events)) {
      if (release.kind != PipeEvent::release || release.pipe != load.pipe)
        continue;
      // Block j + offset overwrites block j + offset - stages, released in
      // the iteration `distance` iterations back.
      int64_t distance = stagesOf(load.pipe) - load.offset + release.offset;
      int64_t xi = x, yi = y;
      bool safe = distance >= 2   ? barrierIn(-1, n)
                  : distance == 1 ? barrierIn(yi, n) || barrierIn(-1, xi)
                  : distance == 0 ? yi < xi && barrierIn(yi, xi)
                                  : false;
      if (!safe)
        return load.op->emitOpError()
               << "refills the stage of block j + " << load.offset << " - "
               << stagesOf(load.pipe)
               << " without an attn.barrier after every thread released it; "
                  "use more stages or fill later";
    }
  }
  return success();
}

} // namespace

LogicalResult mlir::attn::scheduleCpAsyncPipes(func::FuncOp func,
                                               int64_t stages) {
  LoopNest nest;
  SmallVector<Value> guardBounds;
  if (failed(findLoopNest(func, nest, guardBounds)))
    return failure();
  if (nest.loops.empty())
    return success();
  llvm::MapVector<Value, int64_t> fillOffset;
  if (failed(checkLoopPipes(nest, fillOffset)))
    return failure();
  for (auto [pipe, offset] : fillOffset)
    if (stagesOf(pipe) != stages)
      return nest.loops.front().emitOpError()
             << "fills a pipe of " << stagesOf(pipe) << " stages; "
             << "attn-multibuffer schedules " << stages;
  for (Value bound : guardBounds)
    if (bound != nest.numBlocks)
      return nest.loops.front().emitOpError(
          "guards a fill with a bound other than the last key/value loop's "
          "upper bound; attn-multibuffer (sm_80) predicates every fill on "
          "that block count");
  if (failed(movePipeFills(func, nest, fillOffset, stages)))
    return failure();
  addBarriersAfterWaits(func);
  // Check the result as it now is.
  LoopNest result;
  SmallVector<Value> unused;
  if (failed(findLoopNest(func, result, unused)) ||
      failed(setPendingCounts(result)) || failed(checkRefills(result)))
    return failure();
  return success();
}
