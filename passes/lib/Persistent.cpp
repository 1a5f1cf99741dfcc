//===- Persistent.cpp - attn-persistent: each CTA loops over tiles --------===//
//
//   %qb = program_id 0 ...                %t0, %n = program_id, num_programs
//   <the tile program>             ->     for %t = %t0 to %tiles step %n
//                                             iter_args(%kv = 0, %done = 0) {
//                                           %qb, %h, %b = <tile %t>
//                                           <the tile program, fills + %kv>
//                                           yield %kv + blocks, %done + 1
//                                         } {attn.tile_loop}
//   causal:                               for %u = 0 to <this CTA's tiles> ...
//                                           %qb, %h, %b = <its tile %u>
//
// One CTA per tile pays the Q load and the first K load with the tensor
// cores idle, and its epilogue too; a CTA that stays resident loads the next
// tile's Q and K (warp-specialized: on the producer) while the current one
// finishes. Fills keep counting across tiles because the pipes' mbarrier
// phases follow them.
//
// Causal tiles differ in length (query block q visits about q + 1 key
// blocks), so a causal CTA instead walks its own list of tiles, dealt out
// in pairs of equal total length (CausalUnits): no CTA has more than one
// unit above the average, and the CTAs at work at once share a few heads'
// K and V in L2.
//
// A varlen kernel's tile space covers the longest sequence, and its program
// sits in a guard (query block inside its sequence); a tile that fails the
// guard does nothing, so it adds no fills and is not counted. Its CTAs
// number only the live tiles, sequence by sequence (VarlenTiles), so mixed
// lengths do not hand some CTAs more work than others.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "attn-persistent"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPERSISTENT
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Most CTAs per SM the runtime's grid rule accepts.
constexpr int64_t kMaxCtasPerSm = 32;
/// The tile dimensions of a forward kernel: query block, head, batch.
constexpr unsigned kTileDims = 3;

/// The kernel argument `attn.tensors` names `role`; null when none does.
Value argumentOfRole(func::FuncOp kernel, StringRef role) {
  auto roles = kernel->getAttrOfType<ArrayAttr>(kTensorsAttrName);
  if (!roles)
    return Value();
  for (auto [i, name] : llvm::enumerate(roles)) {
    auto text = dyn_cast<StringAttr>(name);
    if (text && text.getValue() == role)
      return kernel.getArgument(i);
  }
  return Value();
}

/// The size `kind` of the kernel, read off its tensors by role (q for the
/// query sizes, k for the key/value ones; `attn.tensors` names both).
Value problemSize(OpBuilder &b, func::FuncOp kernel, SizeKind kind) {
  // A packed (varlen) kernel's batch and longest sequence are launch sizes
  // of their own ([total, H, D] tensors have neither).
  if (isVarlenKernel(kernel))
    return ProblemSizeOp::create(b, kernel.getLoc(), b.getIndexType(), kind);
  bool query = kind == SizeKind::batch || kind == SizeKind::nq ||
               kind == SizeKind::num_heads;
  Value tensor = argumentOfRole(kernel, query ? "q" : "k");
  int64_t dim = kind == SizeKind::batch                        ? 0
                : kind == SizeKind::nq || kind == SizeKind::nk ? 1
                                                               : 2;
  return memref::DimOp::create(b, kernel.getLoc(), tensor, dim).getResult();
}

/// Whether `op` can stay in front of the tile loop: the buffers, and
/// effect-free scalar ops that do not depend on the tile.
bool staysInFront(Operation *op, const DenseSet<Value> &front) {
  if (isa<AllocSmemOp>(op))
    return true;
  if (isa<ProgramIdOp>(op) || op->getNumRegions() != 0 ||
      !isMemoryEffectFree(op) || touchesRegisterTiles(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value v) {
    return isa<BlockArgument>(v) || front.contains(v);
  });
}

/// The key/value loops of the tile body: its scf.for ops that wait on a
/// refilled buffer. They must follow one another (the peeled form's
/// unmasked loop ends where the masked one starts).
FailureOr<SmallVector<scf::ForOp>>
keyValueLoops(Block &body, const DenseSet<Value> &blockBuffers,
              func::FuncOp kernel) {
  SmallVector<scf::ForOp> loops;
  for (auto loop : body.getOps<scf::ForOp>()) {
    bool waits = false;
    loop.walk([&](WaitOp wait) {
      waits |= blockBuffers.contains(wait.getBuffer());
    });
    if (waits)
      loops.push_back(loop);
  }
  if (loops.empty())
    return kernel.emitOpError("attn-persistent found no key/value loop (an "
                              "scf.for that waits on a refilled buffer) in "
                              "the kernel");
  for (size_t i = 1; i < loops.size(); ++i)
    if (loops[i].getLowerBound() != loops[i - 1].getUpperBound())
      return loops[i].emitOpError(
          "starts where the previous key/value loop does not end; "
          "attn-persistent counts the blocks a tile visits as one range");
  for (scf::ForOp loop : loops)
    if (loop.getConstantStep() != 1)
      return loop.emitOpError("attn-persistent expects key/value loops that "
                              "step by one block");
  return loops;
}

/// The (query block, head, batch) of tile `t` of a non-causal kernel: query
/// blocks fastest, so the CTAs working at once share a head's K and V in L2.
SmallVector<Value> tileCoordinates(OpBuilder &b, Location loc, Value t,
                                   ArrayRef<Value> extents) {
  Value qBlocks = extents[0];
  Value heads = extents[1];
  Value rest = arith::DivUIOp::create(b, loc, t, qBlocks);
  return {arith::RemUIOp::create(b, loc, t, qBlocks),
          arith::RemUIOp::create(b, loc, rest, heads),
          arith::DivUIOp::create(b, loc, rest, heads)};
}

/// How many of numbers 0 .. total - 1 CTA `cta` of `ctas` takes when each
/// takes every ctas-th from its own: ceil((total - cta) / ctas).
Value shareOf(OpBuilder &b, Location loc, Value total, Value cta, Value ctas) {
  Value left = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, total, cta), cta);
  return arith::CeilDivUIOp::create(b, loc, left, ctas);
}

/// Unit `pair` of a head's `blocks` query blocks (CausalUnits): the longer
/// block of the pair (blocks - 1 - odd - pair, pair), and the head's last
/// block, the unit alone of an odd count.
std::pair<Value, Value> longerOfPair(OpBuilder &b, Location loc, Value blocks,
                                     Value odd, Value pair) {
  Value last = arith::SubIOp::create(
      b, loc, blocks, arith::ConstantIndexOp::create(b, loc, 1));
  Value longer = arith::SubIOp::create(
      b, loc, arith::SubIOp::create(b, loc, last, odd), pair);
  return {longer, last};
}

/// A causal kernel's tiles, dealt out in units of equal length. Query block
/// q of a head visits about q + 1 key blocks, so blocks i and m - 1 - i of
/// the head's m pair up into m + 1 (m even); with m odd, blocks i and
/// m - 2 - i pair into m and the last block, m long too, is a unit alone.
/// Units are numbered pairs first, head by head (a head's pairs follow one
/// another, so the CTAs working at once share few heads' K and V in L2),
/// then the lone blocks; CTA c takes units c, c + P, c + 2P, ... (P CTAs),
/// so no CTA has more than one unit above the average.
struct CausalUnits {
  Value qBlocks, heads;
  Value half;  ///< pairs per head: m / 2
  Value odd;   ///< m % 2: whether the last block is a unit alone
  Value pairs; ///< pair units in all heads
  Value cta, ctas;
  Value pairsHere; ///< pair units of this CTA
  Value tilesHere; ///< tiles of this CTA: two per pair, one per lone block

  CausalUnits(OpBuilder &b, Location loc, ArrayRef<Value> extents, Value cta,
              Value ctas)
      : qBlocks(extents[0]), heads(extents[1]), cta(cta), ctas(ctas) {
    Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
    Value headBatch = arith::MulIOp::create(b, loc, heads, extents[2]);
    half = arith::DivUIOp::create(b, loc, qBlocks, c2);
    odd = arith::RemUIOp::create(b, loc, qBlocks, c2);
    pairs = arith::MulIOp::create(b, loc, headBatch, half);
    Value units = arith::AddIOp::create(
        b, loc, pairs, arith::MulIOp::create(b, loc, headBatch, odd));
    pairsHere = shareOf(b, loc, pairs, cta, ctas);
    tilesHere = arith::AddIOp::create(b, loc, shareOf(b, loc, units, cta, ctas),
                                      pairsHere);
  }

  /// The (query block, head, batch) of this CTA's tile number `u`: its pairs
  /// first, the longer block of each before the shorter, then its lone
  /// blocks.
  SmallVector<Value> coordinates(OpBuilder &b, Location loc, Value u) const {
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
    Value isPair =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, u,
                              arith::MulIOp::create(b, loc, pairsHere, c2));
    Value nth = arith::SelectOp::create(
        b, loc, isPair, arith::DivUIOp::create(b, loc, u, c2),
        arith::SubIOp::create(b, loc, u, pairsHere));
    Value unit = arith::AddIOp::create(
        b, loc, cta, arith::MulIOp::create(b, loc, nth, ctas));
    // Pair unit g: head g / half, pair g % half; lone unit g: head g - pairs.
    Value perHead = arith::MaxUIOp::create(b, loc, half, c1);
    Value head = arith::SelectOp::create(
        b, loc, isPair, arith::DivUIOp::create(b, loc, unit, perHead),
        arith::SubIOp::create(b, loc, unit, pairs));
    Value pair = arith::RemUIOp::create(b, loc, unit, perHead);
    auto [longer, last] = longerOfPair(b, loc, qBlocks, odd, pair);
    Value shorter = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, arith::RemUIOp::create(b, loc, u, c2),
        arith::ConstantIndexOp::create(b, loc, 0));
    Value inPair = arith::SelectOp::create(b, loc, shorter, pair, longer);
    return {arith::SelectOp::create(b, loc, isPair, inPair, last),
            arith::RemUIOp::create(b, loc, head, heads),
            arith::DivUIOp::create(b, loc, head, heads)};
  }
};

/// A varlen kernel's live tiles: those inside their sequences, numbered
/// sequence by sequence (a static order over the longest sequence's tile
/// space would hand CTAs unequal shares of the live ones). Sequence b of
/// m_b query blocks holds H * m_b tiles, query blocks fastest so the CTAs
/// at work at once share a head's K and V; causal, it holds H * ceil(m_b/2)
/// units, CausalUnits' pairs of equal length taken within the sequence (a
/// pair's second tile is dead for the lone block of an odd m_b). CTA c takes
/// numbers c, c + P, ...: the loop runs over the whole tile space and the
/// numbers past the last sequence's are dead tiles, failing the guard. Each
/// CTA walks the sequences once, carrying (sequence, its first number)
/// from tile to tile.
struct VarlenTiles {
  Value cuSeqlens, totalRows, batches, heads, blockRows;
  bool causal;
  Value deadBlock; ///< a query block past every sequence: fails the guard

  VarlenTiles(OpBuilder &b, Location loc, func::FuncOp kernel,
              ArrayRef<Value> extents, int64_t blockM, bool causal)
      : cuSeqlens(argumentOfRole(kernel, "cu_seqlens_q")),
        totalRows(
            memref::DimOp::create(b, loc, argumentOfRole(kernel, "q"), 0)),
        batches(extents[2]), heads(extents[1]), causal(causal) {
    blockRows = arith::ConstantIndexOp::create(b, loc, blockM);
    deadBlock = arith::CeilDivUIOp::create(b, loc, totalRows, blockRows);
  }

  /// `batch` clamped into [0, B - 1], for reading cu_seqlens_q.
  Value inRangeSequence(OpBuilder &b, Location loc, Value batch) const {
    Value last = arith::SubIOp::create(
        b, loc, batches, arith::ConstantIndexOp::create(b, loc, 1));
    return arith::MinUIOp::create(b, loc, batch, last);
  }

  /// Sequence `batch`'s query blocks (batch < B).
  Value queryBlocks(OpBuilder &b, Location loc, Value batch) const {
    auto seq = SequenceOp::create(b, loc, cuSeqlens, batch, totalRows);
    return arith::CeilDivUIOp::create(b, loc, seq.getLength(), blockRows);
  }

  /// The numbers sequence `batch` holds: H tiles or units per query block
  /// (causal: per pair).
  Value numbersOf(OpBuilder &b, Location loc, Value blocks) const {
    if (causal)
      blocks = arith::CeilDivUIOp::create(
          b, loc, blocks, arith::ConstantIndexOp::create(b, loc, 2));
    return arith::MulIOp::create(b, loc, heads, blocks);
  }

  /// From (sequence, first number) at or before number `n`'s, the sequence
  /// that holds `n` and its first number; B when `n` is past them all.
  std::pair<Value, Value> advance(OpBuilder &b, Location loc, Value n,
                                  Value batch, Value first) const {
    Type index = b.getIndexType();
    auto walk = scf::WhileOp::create(
        b, loc, TypeRange{index, index, index}, ValueRange{batch, first},
        [&](OpBuilder &wb, Location wl, ValueRange args) {
          Value inRange = arith::CmpIOp::create(
              wb, wl, arith::CmpIPredicate::ult, args[0], batches);
          Value seq = inRangeSequence(wb, wl, args[0]);
          Value end = arith::AddIOp::create(
              wb, wl, args[1], numbersOf(wb, wl, queryBlocks(wb, wl, seq)));
          Value past =
              arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::uge, n, end);
          scf::ConditionOp::create(wb, wl,
                                   arith::AndIOp::create(wb, wl, inRange, past),
                                   ValueRange{args[0], args[1], end});
        },
        [&](OpBuilder &wb, Location wl, ValueRange args) {
          Value c1 = arith::ConstantIndexOp::create(wb, wl, 1);
          scf::YieldOp::create(
              wb, wl,
              ValueRange{arith::AddIOp::create(wb, wl, args[0], c1), args[2]});
        });
    return {walk.getResult(0), walk.getResult(1)};
  }

  /// The (query block, head, batch) of number `n` in sequence `batch`
  /// (from advance) whose first number is `first`; `second` (causal) picks
  /// a unit's shorter tile. Dead tiles get deadBlock.
  SmallVector<Value> coordinates(OpBuilder &b, Location loc, Value n,
                                 Value batch, Value first, Value second) const {
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
    Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, batch,
                                       batches);
    Value seq = inRangeSequence(b, loc, batch);
    // At least one block, so that the divisions are safe where the
    // sequence is empty (it holds no number then, so its tiles are dead).
    Value blocks = arith::MaxUIOp::create(b, loc, queryBlocks(b, loc, seq), c1);
    Value local = arith::SubIOp::create(b, loc, n, first);
    Value perHead =
        causal ? arith::CeilDivUIOp::create(b, loc, blocks, c2) : blocks;
    Value head = arith::DivUIOp::create(b, loc, local, perHead);
    Value block = arith::RemUIOp::create(b, loc, local, perHead);
    if (causal) {
      // Unit j of m blocks: the pair (m - 1 - m % 2 - j, j) while j < m / 2,
      // else the lone last block, whose second tile is dead.
      Value half = arith::DivUIOp::create(b, loc, blocks, c2);
      Value odd = arith::RemUIOp::create(b, loc, blocks, c2);
      Value isPair =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, half);
      auto [longer, lone] = longerOfPair(b, loc, blocks, odd, block);
      Value inPair = arith::SelectOp::create(b, loc, second, block, longer);
      block = arith::SelectOp::create(b, loc, isPair, inPair, lone);
      Value firstTile = arith::XOrIOp::create(
          b, loc, second, arith::ConstantIntOp::create(b, loc, 1, 1));
      live = arith::AndIOp::create(
          b, loc, live, arith::OrIOp::create(b, loc, isPair, firstTile));
    }
    return {arith::SelectOp::create(b, loc, live, block, deadBlock),
            arith::SelectOp::create(b, loc, live, head, c0), seq};
  }
};

/// What attn-persistent rewrites, found before anything changes (a failed
/// check leaves the kernel untouched).
struct TileProgram {
  SmallVector<Operation *> moved;  ///< the ops that become the loop body
  DenseSet<Value> front;           ///< values defined in front of the loop
  /// Copies and waits whose fill counts tiles (Q) or blocks (K, V).
  SmallVector<Operation *> perTileFills, blockFills;
  SmallVector<scf::ForOp> kvLoops; ///< the key/value loops, in order
  /// varlen: the guard the program sits in (its tile may lie past its
  /// sequence); null otherwise.
  scf::IfOp guard;
};

/// A varlen kernel's guard: the one scf.if of the entry block, without
/// results or else branch, that holds the copies and the loops.
FailureOr<scf::IfOp> varlenGuard(func::FuncOp kernel) {
  SmallVector<scf::IfOp> ifs(kernel.getBody().front().getOps<scf::IfOp>());
  if (ifs.size() != 1 || ifs.front().getNumResults() != 0 ||
      !ifs.front().getElseRegion().empty())
    return kernel.emitOpError(
        "is a varlen kernel without attn-tile's guard (one scf.if, no "
        "results, no else, around the tile program); attn-persistent "
        "cannot tell the tiles past a sequence");
  return ifs.front();
}

/// `v` computed in front of `guard`: the pure, region-free ops that make it
/// inside the guard are cloned before it. Fails on anything else (a load).
FailureOr<Value> hoistBefore(Value v, scf::IfOp guard, OpBuilder &b,
                             IRMapping &mapping) {
  if (Value known = mapping.lookupOrNull(v))
    return known;
  Operation *def = v.getDefiningOp();
  if (!def || !guard->isAncestor(def))
    return v;
  if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return failure();
  for (Value operand : def->getOperands())
    if (failed(hoistBefore(operand, guard, b, mapping)))
      return failure();
  Operation *clone = b.clone(*def, mapping);
  return clone->getResult(cast<OpResult>(v).getResultNumber());
}

FailureOr<TileProgram> analyze(func::FuncOp kernel, GridAttr grid) {
  if (grid.getTiles().size() != kTileDims)
    return kernel.emitOpError()
           << "attn-persistent expects the (query block, head, batch) tile "
              "space of attn-tile, but 'attn.grid' has "
           << grid.getTiles().size() << " dimensions";
  auto names = [&](StringRef role) {
    return static_cast<bool>(argumentOfRole(kernel, role));
  };
  if (!names("q") || !names("k"))
    return kernel.emitOpError("needs 'attn.tensors' naming its q and k "
                              "arguments, whose sizes give the tile space; "
                              "run attn-tile first");
  if (isVarlenKernel(kernel) && !names("cu_seqlens_q"))
    return kernel.emitOpError("is a varlen kernel whose 'attn.tensors' name "
                              "no cu_seqlens_q argument; attn-persistent "
                              "numbers its tiles by the query sequences' "
                              "lengths; run attn-tile first");
  TileProgram program;
  Block &entry = kernel.getBody().front();
  // Where the copies and loops are: the entry block, or a varlen guard's.
  Block *tileBody = &entry;
  if (isVarlenKernel(kernel)) {
    FailureOr<scf::IfOp> guard = varlenGuard(kernel);
    if (failed(guard))
      return failure();
    program.guard = *guard;
    tileBody = guard->thenBlock();
  }
  for (Operation &op : entry.without_terminator()) {
    if (staysInFront(&op, program.front)) {
      program.front.insert(op.getResults().begin(), op.getResults().end());
      continue;
    }
    program.moved.push_back(&op);
  }
  // A buffer copied once, outside every loop (Q) is refilled once per tile;
  // the others once per key/value block.
  DenseSet<Value> blockBuffers;
  for (AllocSmemOp alloc : entry.getOps<AllocSmemOp>()) {
    SmallVector<Operation *> copies, users;
    for (Operation *user : alloc->getUsers()) {
      if (auto copy = dyn_cast<CopyAsyncOp>(user)) {
        if (!copy.getFill())
          return copy.emitOpError("attn-persistent needs copies that name "
                                  "their fill (attn-tile's do)");
        copies.push_back(user);
        users.push_back(user);
      } else if (isa<WaitOp>(user)) {
        users.push_back(user);
      }
    }
    if (copies.empty())
      continue;
    bool perTile = copies.size() == 1 && copies.front()->getBlock() == tileBody;
    if (!perTile)
      blockBuffers.insert(alloc.getResult());
    llvm::append_range(perTile ? program.perTileFills : program.blockFills,
                       users);
  }
  FailureOr<SmallVector<scf::ForOp>> loops =
      keyValueLoops(*tileBody, blockBuffers, kernel);
  if (failed(loops))
    return failure();
  program.kvLoops = std::move(*loops);
  return program;
}

LogicalResult makePersistent(func::FuncOp kernel, int64_t ctasPerSm) {
  auto grid = kernel->getAttrOfType<GridAttr>(kGridAttrName);
  if (!grid)
    return kernel.emitOpError("has no 'attn.grid' (its tile space); run "
                              "attn-tile first");
  FailureOr<TileProgram> program = analyze(kernel, grid);
  if (failed(program))
    return failure();
  Block &entry = kernel.getBody().front();
  Location loc = kernel.getLoc();

  // The tile space and the loop over it, after everything that stays in
  // front (some of it may come after tile-dependent ops today).
  OpBuilder b(entry.getTerminator());
  SmallVector<Value> extents;
  Value tiles = arith::ConstantIndexOp::create(b, loc, 1);
  for (unsigned d = 0; d < kTileDims; ++d) {
    GridDimAttr dim = grid.getTile(d);
    Value extent = arith::CeilDivUIOp::create(
        b, loc, problemSize(b, kernel, dim.getSize()),
        arith::ConstantIndexOp::create(b, loc, dim.getTile()));
    extents.push_back(extent);
    tiles = arith::MulIOp::create(b, loc, tiles, extent);
  }
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  Value cta = ProgramIdOp::create(b, loc, b.getIndexType(), 0);
  Value ctas = NumProgramsOp::create(b, loc, b.getIndexType(), 0);
  // Non-causal tiles are equally long: tile cta, cta + ctas, ... A causal
  // CTA walks its own tiles 0 .. tilesHere - 1 (CausalUnits).
  // Varlen: numbers of live tiles (VarlenTiles); a causal CTA's two
  // numbers per unit, 0 .. 2 * (its share of the unit space) - 1.
  bool causal = isCausalKernel(kernel);
  std::optional<CausalUnits> units;
  std::optional<VarlenTiles> varlen;
  Value lower = causal ? c0 : cta, upper = tiles, step = causal ? c1 : ctas;
  if (program->guard) {
    varlen.emplace(b, loc, kernel, extents, grid.getTile(0).getTile(), causal);
    if (causal) {
      Value c2 = arith::ConstantIndexOp::create(b, loc, 2);
      Value unitSpace = arith::MulIOp::create(
          b, loc, arith::MulIOp::create(b, loc, extents[1], extents[2]),
          arith::CeilDivUIOp::create(b, loc, extents[0], c2));
      upper = arith::MulIOp::create(b, loc,
                                    shareOf(b, loc, unitSpace, cta, ctas), c2);
    }
  } else if (causal) {
    units.emplace(b, loc, extents, cta, ctas);
    upper = units->tilesHere;
  }
  SmallVector<Value> inits(varlen ? 4 : 2, c0);
  auto loop =
      scf::ForOp::create(b, loc, lower, upper, step, inits,
                         [](OpBuilder &, Location, Value, ValueRange) {});
  loop->setAttr(kTileLoopAttrName, b.getUnitAttr());
  Block *body = loop.getBody();
  Value kvFills = loop.getRegionIterArgs()[0];
  Value tilesDone = loop.getRegionIterArgs()[1];
  for (Operation *op : program->moved)
    op->moveBefore(body, body->end());

  // Program ids -> the tile's coordinates.
  OpBuilder tb = OpBuilder::atBlockBegin(body);
  Value iv = loop.getInductionVar();
  SmallVector<Value> coords, sequenceState;
  if (varlen) {
    Value number = iv, second = arith::ConstantIntOp::create(tb, loc, 0, 1);
    if (causal) {
      Value c2 = arith::ConstantIndexOp::create(tb, loc, 2);
      number = arith::AddIOp::create(
          tb, loc, cta,
          arith::MulIOp::create(tb, loc,
                                arith::DivUIOp::create(tb, loc, iv, c2), ctas));
      second =
          arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ne,
                                arith::RemUIOp::create(tb, loc, iv, c2), c0);
    }
    auto [batch, first] =
        varlen->advance(tb, loc, number, loop.getRegionIterArgs()[2],
                        loop.getRegionIterArgs()[3]);
    coords = varlen->coordinates(tb, loc, number, batch, first, second);
    sequenceState = {batch, first};
  } else {
    coords = causal ? units->coordinates(tb, loc, iv)
                    : tileCoordinates(tb, loc, iv, extents);
  }
  SmallVector<ProgramIdOp> ids;
  body->walk([&](ProgramIdOp id) { ids.push_back(id); });
  for (ProgramIdOp id : ids) {
    id.replaceAllUsesWith(coords[id.getDim()]);
    id.erase();
  }

  // Fills keep counting across tiles.
  auto fillOf = [](Operation *op) -> OpOperand & {
    if (auto copy = dyn_cast<CopyAsyncOp>(op))
      return copy.getFillMutable()[0];
    return cast<WaitOp>(op).getFillMutable();
  };
  for (Operation *op : program->perTileFills)
    fillOf(op).set(tilesDone);
  for (Operation *op : program->blockFills) {
    OpOperand &fill = fillOf(op);
    OpBuilder fb(op);
    fill.set(arith::AddIOp::create(fb, op->getLoc(), kvFills, fill.get()));
  }

  // Each tile consumes one fill per key/value block it visits; a varlen
  // tile past its sequence visits none and loads no Q.
  Value kvUpper = program->kvLoops.back().getUpperBound();
  Value kvLower = program->kvLoops.front().getLowerBound();
  Value done = c1;
  if (scf::IfOp guard = program->guard) {
    OpBuilder gb(guard);
    IRMapping mapping;
    FailureOr<Value> hoistedUpper = hoistBefore(kvUpper, guard, gb, mapping);
    FailureOr<Value> hoistedLower = hoistBefore(kvLower, guard, gb, mapping);
    if (failed(hoistedUpper) || failed(hoistedLower))
      return program->kvLoops.front().emitOpError(
          "has key/value loop bounds that depend on more than index "
          "arithmetic inside the varlen guard; attn-persistent needs them "
          "in front of it to count a tile's fills");
    Value live = guard.getCondition();
    Value visited =
        arith::SubIOp::create(gb, loc, *hoistedUpper, *hoistedLower);
    kvUpper = arith::SelectOp::create(gb, loc, live, visited, c0);
    kvLower = c0;
    done = arith::SelectOp::create(gb, loc, live, c1, c0);
  }
  OpBuilder yb = OpBuilder::atBlockEnd(body);
  Value visited = arith::SubIOp::create(yb, loc, kvUpper, kvLower);
  SmallVector<Value> yielded = {
      arith::AddIOp::create(yb, loc, kvFills, visited),
      arith::AddIOp::create(yb, loc, tilesDone, done)};
  llvm::append_range(yielded, sequenceState);
  scf::YieldOp::create(yb, loc, yielded);

  kernel->setAttr(kGridAttrName, GridAttr::get(kernel.getContext(),
                                               grid.getTiles(), ctasPerSm));
  LLVM_DEBUG(llvm::dbgs() << "made " << kernel.getName() << " persistent ("
                          << ctasPerSm << " CTAs per SM)\n");
  return success();
}

struct AttnPersistentPass
    : public mlir::attn::impl::AttnPersistentBase<AttnPersistentPass> {
  using AttnPersistentBase::AttnPersistentBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    ModuleOp module = getOperation();
    if (ctasPerSm < 1 || ctasPerSm > kMaxCtasPerSm) {
      module.emitError() << "attn-persistent: ctas-per-sm = "
                         << static_cast<int64_t>(ctasPerSm)
                         << " is out of range; use 1 to " << kMaxCtasPerSm;
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels;
    module.walk([&](func::FuncOp func) {
      auto grid = func->getAttrOfType<GridAttr>(kGridAttrName);
      if (func->hasAttr(kKernelAttrName) &&
          (!grid || grid.getCtasPerSm() == 0) &&
          scheduleApplies(func, &AttentionSchedule::persistent))
        kernels.push_back(func);
    });
    for (func::FuncOp kernel : kernels)
      if (failed(makePersistent(kernel, ctasPerSm)))
        return signalPassFailure();
  }
};

} // namespace
