//===- BlockBoundsCheck.cpp - attngen-block-bounds-check ------------------===//
//
// Checks the key-block bounds attn-causal-blocks emits, and the fills the
// pipelines derive from them, against a brute-force model, for many query
// and key lengths, tile shapes, causal masks and sliding windows of both
// alignments:
//
//   1. build attn.attention with the mask, run the passes (attn-tile +
//      attn-causal-blocks peeled and in one loop, the whole sm_90a
//      FlashAttention-3 tile pipeline, persistent CTAs included, or sm_80's
//      cp.async rings);
//   2. run the program's scalar skeleton (index arithmetic, scf.for /
//      scf.if, 32-bit wrapping as in the kernels) for one query block and
//      record what it copies, waits for and masks;
//   3. compare with the model: exactly the blocks some row of the query
//      block sees are visited (one fully masked block when none is), in
//      order; exactly those not fully visible to every row are masked;
//      every buffer's or pipe's fills count 0, 1, ... from the first
//      visited block, copies and waits pair up, and fill f reads the f-th
//      visited block;
//   4. for the persistent programs, run every CTA of several grid sizes
//      over several heads and sequences: each tile's Q is loaded exactly
//      once, and square causal CTAs load within one unit of work of each
//      other (attn-persistent's pairs of query blocks).
//
// Prints "<n> cases, <m> checks, <k> failed" and exits non-zero on failure.
//
//===----------------------------------------------------------------------===//
#include "attn/Codegen/Codegen.h"
#include "attn/Spec/Spec.h"
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/TypeSwitch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Lengths past 2^31 - 2^10 would wrap the kernels' 32-bit row indices
/// (qb * block_m + block_m); the largest case stays below.
constexpr int64_t kLargeLength = (int64_t(1) << 31) - 1100;
/// Failures printed before the rest are only counted.
constexpr int kMaxReported = 12;

/// One mask: causal and/or a window (-1: unbounded side), and its alignment.
struct MaskCase {
  bool causal = false;
  int64_t left = -1, right = -1;
  bool bottomRight = false;

  std::string str() const {
    return fmt::format("causal={} window=({},{}) align={}", causal, left,
                       right, bottomRight ? "bottom-right" : "top-left");
  }
};

/// How one program was built.
struct Pipeline {
  std::string name;
  int64_t blockM = 0, blockN = 0;
  bool persistent = false; ///< CTAs loop over query blocks (attn-persistent)
};

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// What a query block must visit and mask, by brute force over its rows
/// (all block_m of them: padding rows past Nq are modelled as rows too, as
/// the kernels bound them).
struct Expected {
  std::vector<int64_t> visited; ///< empty: no row sees a key
  std::vector<bool> full;       ///< per block of visited: no mask needed
};

Expected model(const MaskCase &m, int64_t nq, int64_t nk, int64_t qb,
               int64_t blockM, int64_t blockN) {
  int64_t off = m.bottomRight ? nk - nq : 0;
  int64_t right = m.causal ? 0 : m.right;
  int64_t blocks = (nk + blockN - 1) / blockN;
  int64_t first = blocks, last = -1;
  // Per row the visible columns are [lo, hi] (empty when lo > hi).
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t r = qb * blockM; r < (qb + 1) * blockM; ++r) {
    int64_t d = r + off;
    int64_t lo = m.left >= 0 ? std::max<int64_t>(0, d - m.left) : 0;
    int64_t hi = right >= 0 ? std::min(nk - 1, d + right) : nk - 1;
    rows.push_back({lo, hi});
    if (lo <= hi) {
      first = std::min(first, lo / blockN);
      last = std::max(last, hi / blockN);
    }
  }
  Expected e;
  for (int64_t j = first; j <= last; ++j) {
    int64_t begin = j * blockN, end = (j + 1) * blockN - 1;
    bool full = end < nk;
    for (auto [lo, hi] : rows)
      full = full && lo <= begin && hi >= end;
    e.visited.push_back(j);
    e.full.push_back(full);
  }
  return e;
}

//===----------------------------------------------------------------------===//
// The scalar skeleton interpreter
//===----------------------------------------------------------------------===//

/// What the program did, in the order one role issued it.
struct Event {
  enum Kind { copy, wait, acquire, load, pipeWait, release, mask } kind;
  int tensor = -1; ///< 0 q, 1 k, 2 v (the copied argument)
  int64_t row = 0, fill = 0, col = 0;
  int64_t batch = 0, head = 0; ///< the copied tile's (copies, pipe loads)
};

/// Runs the index arithmetic and control flow of a tile program for one CTA
/// (program `pid` of `programs` along the grid's first dimension: a query
/// block, or the first tile of a persistent CTA), with the kernels' 32-bit
/// index (unsigned ops on uint32).
class Interpreter {
public:
  /// `heads` query heads over one key/value head, `batch` sequences.
  Interpreter(int64_t nq, int64_t nk, int64_t pid, int64_t programs,
              int64_t heads = 1, int64_t batch = 1)
      : nq(nq), nk(nk), pid(pid), programs(programs), heads(heads),
        batch(batch) {}

  /// Runs `func`; the events of each role land in its own trace (the
  /// producer's and the consumers' of a warp-specialized kernel).
  LogicalResult run(func::FuncOp func) {
    func.walk([&](Operation *op) {
      if (auto copy = dyn_cast<CopyAsyncOp>(op))
        tensorOf[copy.getDst()] = argIndex(copy.getSrc());
      else if (auto load = dyn_cast<PipeLoadOp>(op))
        tensorOf[load.getPipe()] = argIndex(load.getSrc());
    });
    traces.assign(1, {});
    return runBlock(func.getBody().front());
  }

  std::vector<std::vector<Event>> traces;
  std::string error;

private:
  static int argIndex(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? static_cast<int>(arg.getArgNumber()) : -1;
  }
  static unsigned widthOf(Type type) {
    if (auto integer = dyn_cast<IntegerType>(type))
      return integer.getWidth();
    return 32; // index: the kernels' index bitwidth
  }
  static bool isScalar(Type type) {
    return isa<IndexType, IntegerType>(type);
  }
  /// `v` wrapped to `width` bits, sign-extended.
  static int64_t wrap(int64_t v, unsigned width) {
    if (width >= 64)
      return v;
    uint64_t mask = (uint64_t(1) << width) - 1;
    uint64_t u = uint64_t(v) & mask;
    if (width > 1 && (u >> (width - 1)))
      u |= ~mask;
    return int64_t(u);
  }
  static uint64_t unsignedOf(int64_t v, unsigned width) {
    return width >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << width) - 1);
  }

  LogicalResult fail(Operation *op, const std::string &what) {
    std::string name = op->getName().getStringRef().str();
    error = fmt::format("{}: {}", name, what);
    return failure();
  }
  int64_t get(Value v) { return env.lookup(v); }
  void set(Value v, int64_t x) { env[v] = wrap(x, widthOf(v.getType())); }
  void emit(Event e) { traces.back().push_back(e); }

  LogicalResult runBlock(Block &block) {
    for (Operation &op : block)
      if (failed(runOp(&op)))
        return failure();
    return success();
  }

  /// Runs `region`'s block and returns its terminator's scalar operands.
  LogicalResult runYielding(Region &region, SmallVectorImpl<int64_t> &out) {
    Block &block = region.front();
    if (failed(runBlock(block)))
      return failure();
    out.clear();
    for (Value v : block.getTerminator()->getOperands())
      out.push_back(isScalar(v.getType()) ? get(v) : 0);
    return success();
  }

  LogicalResult runFor(scf::ForOp loop) {
    int64_t lo = get(loop.getLowerBound()), hi = get(loop.getUpperBound());
    int64_t step = get(loop.getStep());
    if (step < 1)
      return fail(loop, "step is not positive");
    SmallVector<int64_t> carried;
    for (Value init : loop.getInitArgs())
      carried.push_back(isScalar(init.getType()) ? get(init) : 0);
    // Unsigned 32-bit compare, as scf.for lowers on index.
    for (int64_t j = lo; unsignedOf(j, 32) < unsignedOf(hi, 32); j = wrap(j + step, 32)) {
      set(loop.getInductionVar(), j);
      for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), carried))
        if (isScalar(arg.getType()))
          set(arg, value);
      if (failed(runYielding(loop.getRegion(), carried)))
        return failure();
      if (++iterations > kMaxIterations)
        return fail(loop, "runs away (more than a million iterations)");
    }
    for (auto [result, value] : llvm::zip(loop.getResults(), carried))
      if (isScalar(result.getType()))
        set(result, value);
    return success();
  }

  LogicalResult runIf(scf::IfOp branch) {
    SmallVector<int64_t> yielded;
    bool taken = get(branch.getCondition()) & 1;
    if (!taken && branch.getElseRegion().empty())
      return success();
    if (failed(runYielding(taken ? branch.getThenRegion()
                                 : branch.getElseRegion(),
                           yielded)))
      return failure();
    for (auto [result, value] : llvm::zip(branch.getResults(), yielded))
      if (isScalar(result.getType()))
        set(result, value);
    return success();
  }

  /// Index arithmetic of the skeleton; false when `op` is not one.
  std::optional<int64_t> arith(Operation *op) {
    auto in = [&](unsigned i) { return get(op->getOperand(i)); };
    unsigned w = op->getNumResults() ? widthOf(op->getResult(0).getType()) : 32;
    auto u = [&](unsigned i) { return unsignedOf(in(i), widthOf(op->getOperand(i).getType())); };
    return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
        .Case<arith::ConstantOp>([&](auto c) -> std::optional<int64_t> {
          if (auto attr = dyn_cast<IntegerAttr>(c.getValue()))
            return attr.getValue().getSExtValue();
          return std::nullopt;
        })
        .Case<arith::AddIOp>([&](auto) { return in(0) + in(1); })
        .Case<arith::SubIOp>([&](auto) { return in(0) - in(1); })
        .Case<arith::MulIOp>([&](auto) { return in(0) * in(1); })
        .Case<arith::DivUIOp>([&](auto) -> std::optional<int64_t> {
          if (u(1) == 0)
            return std::nullopt;
          return int64_t(u(0) / u(1));
        })
        .Case<arith::CeilDivUIOp>([&](auto) -> std::optional<int64_t> {
          if (u(1) == 0)
            return std::nullopt;
          return int64_t((u(0) + u(1) - 1) / u(1));
        })
        .Case<arith::RemUIOp>([&](auto) -> std::optional<int64_t> {
          if (u(1) == 0)
            return std::nullopt;
          return int64_t(u(0) % u(1));
        })
        .Case<arith::MinUIOp>([&](auto) { return int64_t(std::min(u(0), u(1))); })
        .Case<arith::MaxUIOp>([&](auto) { return int64_t(std::max(u(0), u(1))); })
        .Case<arith::MinSIOp>([&](auto) { return std::min(in(0), in(1)); })
        .Case<arith::MaxSIOp>([&](auto) { return std::max(in(0), in(1)); })
        .Case<arith::AndIOp>([&](auto) { return in(0) & in(1); })
        .Case<arith::OrIOp>([&](auto) { return in(0) | in(1); })
        .Case<arith::XOrIOp>([&](auto) { return in(0) ^ in(1); })
        .Case<arith::IndexCastOp>([&](auto) { return in(0); })
        .Case<arith::SelectOp>([&](auto) { return (in(0) & 1) ? in(1) : in(2); })
        .Case<arith::CmpIOp>([&](arith::CmpIOp c) -> std::optional<int64_t> {
          int64_t a = in(0), b = in(1);
          uint64_t ua = u(0), ub = u(1);
          switch (c.getPredicate()) {
          case arith::CmpIPredicate::eq: return a == b;
          case arith::CmpIPredicate::ne: return a != b;
          case arith::CmpIPredicate::slt: return a < b;
          case arith::CmpIPredicate::sle: return a <= b;
          case arith::CmpIPredicate::sgt: return a > b;
          case arith::CmpIPredicate::sge: return a >= b;
          case arith::CmpIPredicate::ult: return ua < ub;
          case arith::CmpIPredicate::ule: return ua <= ub;
          case arith::CmpIPredicate::ugt: return ua > ub;
          case arith::CmpIPredicate::uge: return ua >= ub;
          }
          return std::nullopt;
        })
        .Case<memref::DimOp>([&](memref::DimOp dim) -> std::optional<int64_t> {
          std::optional<int64_t> index = dim.getConstantIndex();
          int tensor = argIndex(dim.getSource());
          if (!index || tensor < 0)
            return index ? std::optional<int64_t>(1) : std::nullopt;
          bool query = tensor == 0 || tensor == 3;
          if (*index == 0)
            return batch;
          if (*index == 1)
            return query ? nq : nk;
          return query ? heads : int64_t(1); // one kv head
        })
        .Case<ProgramIdOp>([&](ProgramIdOp id) -> std::optional<int64_t> {
          return id.getDim() == 0 ? pid : 0;
        })
        .Case<NumProgramsOp>([&](NumProgramsOp n) -> std::optional<int64_t> {
          return n.getDim() == 0 ? programs : 1;
        })
        .Case<WarpgroupIdOp>([&](auto) { return int64_t(0); })
        .Default([&](Operation *) {
          (void)w;
          return std::nullopt;
        });
  }

  LogicalResult runOp(Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return runFor(loop);
    if (auto branch = dyn_cast<scf::IfOp>(op))
      return runIf(branch);
    if (isa<scf::YieldOp, func::ReturnOp>(op))
      return success();
    if (isa<WarpSpecializeOp>(op)) {
      // Each role its own trace: they run concurrently on the GPU.
      for (Region &region : op->getRegions()) {
        if (region.empty())
          continue; // no transposer
        traces.emplace_back();
        if (failed(runBlock(region.front())))
          return failure();
      }
      return success();
    }
    auto tensor = [&](Value buffer) {
      auto it = tensorOf.find(buffer);
      return it == tensorOf.end() ? -1 : it->second;
    };
    // The batch of a varlen copy is a sequence (no scalar): 0.
    auto scalarOr0 = [&](Value v) {
      return isScalar(v.getType()) ? get(v) : 0;
    };
    if (auto copy = dyn_cast<CopyAsyncOp>(op)) {
      Event e{Event::copy, argIndex(copy.getSrc()), get(copy.getRow()),
              get(copy.getFill())};
      e.batch = scalarOr0(copy.getBatch());
      e.head = get(copy.getHead());
      emit(e);
      return success();
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      emit({Event::wait, tensor(wait.getBuffer()), 0, get(wait.getFill())});
      return success();
    }
    if (auto acquire = dyn_cast<PipeAcquireOp>(op)) {
      emit({Event::acquire, tensor(acquire.getPipe()), 0,
            get(acquire.getFill())});
      return success();
    }
    if (auto load = dyn_cast<PipeLoadOp>(op)) {
      // A predicated fill that is off (an sm_80 ring past the last block)
      // copies nothing: not a fill.
      if (Value valid = load.getValid(); valid && !(get(valid) & 1))
        return success();
      Event e{Event::load, argIndex(load.getSrc()), get(load.getRow()),
              get(load.getFill())};
      e.batch = scalarOr0(load.getBatch());
      e.head = get(load.getHead());
      emit(e);
      return success();
    }
    if (auto wait = dyn_cast<PipeWaitOp>(op)) {
      emit({Event::pipeWait, tensor(wait.getPipe()), 0, get(wait.getFill())});
      return success();
    }
    if (auto release = dyn_cast<PipeReleaseOp>(op)) {
      emit({Event::release, tensor(release.getPipe()), 0,
            get(release.getFill())});
      return success();
    }
    if (auto mask = dyn_cast<MaskOp>(op)) {
      Event e{Event::mask};
      e.col = get(mask.getCol());
      emit(e);
      return success();
    }
    bool scalarResults = llvm::any_of(op->getResultTypes(), isScalar);
    if (!scalarResults)
      return success(); // tiles, stores, barriers: no index arithmetic
    std::optional<int64_t> value = arith(op);
    if (!value)
      return fail(op, "is not index arithmetic the checker knows");
    set(op->getResult(0), *value);
    return success();
  }

  static constexpr int64_t kMaxIterations = 1 << 20;
  int64_t nq, nk, pid, programs, heads, batch;
  int64_t iterations = 0;
  DenseMap<Value, int64_t> env;
  DenseMap<Value, int> tensorOf;
};

//===----------------------------------------------------------------------===//
// Programs and checks
//===----------------------------------------------------------------------===//

/// module { func @k(q, k, v, o) { attn.attention {mask} } } for `target`.
OwningOpRef<ModuleOp> buildModule(MLIRContext &ctx, const MaskCase &m,
                                  TargetKind target, int64_t headDim) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(kTargetAttrName, TargetAttr::get(&ctx, target));
  int64_t dyn = ShapedType::kDynamic;
  auto type = MemRefType::get({dyn, dyn, dyn, headDim}, b.getBF16Type());
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, "k",
                                   b.getFunctionType({type, type, type, type}, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto side = [&](int64_t v) {
    return v >= 0 ? b.getI64IntegerAttr(v) : IntegerAttr();
  };
  bool diagonal = m.causal || m.left >= 0 || m.right >= 0;
  AttentionOp::create(
      b, loc, body->getArgument(0), body->getArgument(1), body->getArgument(2),
      body->getArgument(3), /*lse=*/Value(), /*cu_seqlens_q=*/Value(),
      /*cu_seqlens_k=*/Value(), /*block_table=*/Value(),
      /*alibi_slopes=*/Value(),
      /*q_descale=*/Value(), /*k_descale=*/Value(), /*v_descale=*/Value(),
      m.causal ? b.getUnitAttr() : UnitAttr(),
      diagonal && m.bottomRight
          ? CausalAlignAttr::get(&ctx, CausalAlign::bottom_right)
          : CausalAlignAttr(),
      b.getF32FloatAttr(0.125f), FloatAttr(), side(m.left), side(m.right));
  func::ReturnOp::create(b, loc);
  return module;
}

/// Counts checks and reports the first failures.
struct Checker {
  int64_t checks = 0, failed = 0;
  std::string where;

  void expect(bool ok, const std::string &what) {
    ++checks;
    if (ok)
      return;
    if (++failed <= kMaxReported)
      fmt::print(stderr, "FAIL {}: {}\n", where, what);
  }
};

std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : " ") + std::to_string(x);
  return "[" + s + "]";
}

/// The fills of one copied tensor as the producer issued them (copies, or
/// pipe acquires + loads) and as the consumer waited for them (waits, or
/// pipe waits + releases).
struct Fills {
  std::vector<int64_t> rows; ///< the row each fill copied, by fill
  size_t waits = 0;          ///< fills waited for
};

/// Checks that both sides count fills 0, 1, ..., n - 1 in order (acquire
/// before load, release after wait); `producer` and `consumer` are the
/// same trace without warp specialization (`oneRole`: then each wait must
/// also come after its fill's copy).
Fills checkFills(Checker &c, const std::vector<Event> &producer,
                 const std::vector<Event> &consumer, int tensor, bool pipes,
                 bool oneRole) {
  Fills fills;
  std::vector<int64_t> acquired;
  for (const Event &e : producer) {
    if (e.tensor != tensor)
      continue;
    if (e.kind == Event::acquire)
      acquired.push_back(e.fill);
    if (e.kind != Event::copy && e.kind != Event::load)
      continue;
    c.expect(e.fill == int64_t(fills.rows.size()),
             fmt::format("tensor {} copy #{} is fill {}", tensor,
                         fills.rows.size(), e.fill));
    if (pipes)
      c.expect(!acquired.empty() && acquired.back() == e.fill,
               fmt::format("tensor {} fill {} loaded without its acquire",
                           tensor, e.fill));
    fills.rows.push_back(e.row);
  }
  size_t copied = 0, released = 0;
  for (const Event &e : consumer) {
    if (e.tensor != tensor)
      continue;
    if (e.kind == Event::copy || e.kind == Event::load)
      ++copied;
    if (e.kind == Event::wait || e.kind == Event::pipeWait) {
      c.expect(e.fill == int64_t(fills.waits),
               fmt::format("tensor {} wait #{} is for fill {}", tensor,
                           fills.waits, e.fill));
      // One trace: the copy must come first.
      if (oneRole)
        c.expect(e.fill < int64_t(copied),
                 fmt::format("tensor {} waits for fill {} before its copy",
                             tensor, e.fill));
      ++fills.waits;
    } else if (e.kind == Event::release) {
      c.expect(e.fill == int64_t(released) && released < fills.waits,
               fmt::format("tensor {} release #{} is of fill {}", tensor,
                           released, e.fill));
      ++released;
    }
  }
  if (pipes)
    c.expect(released == fills.waits,
             fmt::format("tensor {}: {} fills waited for, {} released",
                         tensor, fills.waits, released));
  return fills;
}

/// Runs the program for one (Nq, Nk) as CTA `pid` of `programs`, which
/// computes the query blocks `qbs` in that order (one, or a persistent
/// CTA's), and compares it with the model: the blocks of each query block
/// one after the other, the fills counting on across them.
void checkCase(Checker &c, func::FuncOp func, const MaskCase &m,
               const Pipeline &p, int64_t nq, int64_t nk, int64_t pid,
               int64_t programs, ArrayRef<int64_t> qbs) {
  c.where = fmt::format("{} {}x{} {} nq={} nk={} cta={}/{} qbs={}", p.name,
                        p.blockM, p.blockN, m.str(), nq, nk, pid, programs,
                        join(std::vector<int64_t>(qbs.begin(), qbs.end())));
  Interpreter run(nq, nk, pid, programs);
  if (failed(run.run(func))) {
    c.expect(false, "the skeleton does not run: " + run.error);
    return;
  }
  // Roles: one trace, or the producer's and the consumers' (the first
  // trace then holds only what precedes warp specialization).
  bool roles = run.traces.size() > 1;
  const std::vector<Event> &producer = roles ? run.traces[1] : run.traces[0];
  const std::vector<Event> &consumer = roles ? run.traces[2] : run.traces[0];
  bool pipes = llvm::any_of(consumer, [](const Event &e) {
    return e.kind == Event::pipeWait;
  });
  Fills k = checkFills(c, producer, consumer, 1, pipes, !roles);
  Fills v = checkFills(c, producer, consumer, 2, pipes, !roles);
  // The visited blocks, from the rows of the K fills.
  std::vector<int64_t> visited;
  for (int64_t row : k.rows) {
    c.expect(row % p.blockN == 0,
             fmt::format("K fill reads row {}, not a block start", row));
    visited.push_back(row / p.blockN);
  }
  c.expect(k.rows == v.rows,
           fmt::format("K fills read rows {} but V fills {}", join(k.rows),
                       join(v.rows)));
  c.expect(k.waits == k.rows.size() && v.waits == v.rows.size(),
           fmt::format("{} K and {} V fills copied, {} and {} waited for",
                       k.rows.size(), v.rows.size(), k.waits, v.waits));
  std::vector<int64_t> masked;
  for (const Event &ev : consumer)
    if (ev.kind == Event::mask)
      masked.push_back(ev.col / p.blockN);
  // Per query block in turn: its visited blocks (one, masked, when no row
  // sees a key: the kernel writes O = 0, LSE = -inf and consumes the
  // prologue's copy) and the masked ones among them.
  std::vector<int64_t> expectedMasked;
  size_t at = 0;
  for (int64_t qb : qbs) {
    Expected e = model(m, nq, nk, qb, p.blockM, p.blockN);
    if (e.visited.empty()) {
      c.expect(at < visited.size(),
               fmt::format("query block {} sees no key and visits no block",
                           qb));
      if (at < visited.size())
        expectedMasked.push_back(visited[at]);
      ++at;
      continue;
    }
    std::vector<int64_t> got(visited.begin() + std::min(at, visited.size()),
                             visited.begin() +
                                 std::min(at + e.visited.size(), visited.size()));
    c.expect(got == e.visited,
             fmt::format("query block {} visits blocks {}, expected {}", qb,
                         join(got), join(e.visited)));
    for (size_t i = 0; i < e.visited.size(); ++i)
      if (!e.full[i])
        expectedMasked.push_back(e.visited[i]);
    at += e.visited.size();
  }
  c.expect(at == visited.size(),
           fmt::format("visits {} blocks, expected {}", visited.size(), at));
  c.expect(masked == expectedMasked,
           fmt::format("masks blocks {}, expected {} (of {})", join(masked),
                       join(expectedMasked), join(visited)));
}

/// The masks: no mask, causal, and windows with and without causal, of
/// both alignments.
std::vector<MaskCase> maskCases() {
  std::vector<MaskCase> cases;
  const int64_t lefts[] = {-1, 0, 1, 64, 100, 255, 1000};
  const int64_t rights[] = {-1, 0, 1, 50, 200};
  for (bool bottomRight : {false, true})
    for (int64_t left : lefts) {
      for (int64_t right : rights) {
        if (bottomRight && left < 0 && right < 0)
          continue; // no diagonal to align
        cases.push_back({false, left, right, bottomRight});
      }
      cases.push_back({true, left, -1, bottomRight});
      cases.push_back({true, left, 0, bottomRight}); // causal, right = 0
    }
  // Sides up to the verifier's bound: the bounds must not overflow.
  const int64_t huge = std::numeric_limits<int32_t>::max();
  for (bool bottomRight : {false, true}) {
    cases.push_back({false, huge, huge, bottomRight});
    cases.push_back({false, huge, -1, bottomRight});
    cases.push_back({true, huge, -1, bottomRight});
    cases.push_back({false, 3, huge, bottomRight});
  }
  return cases;
}

/// The query blocks persistent CTA `pid` of `programs` computes, in order
/// (attn-persistent's, one head and batch here): tiles pid, pid + programs,
/// ...; a causal kernel deals out units of equal length instead, the pairs
/// (m - 1 - i, i) of its m query blocks (m odd: (m - 2 - i, i) and the last
/// block alone, after every pair), unit pid, pid + programs, ...
std::vector<int64_t> persistentTiles(int64_t pid, int64_t programs,
                                     int64_t qBlocks, bool causal) {
  std::vector<int64_t> qbs;
  if (!causal) {
    for (int64_t t = pid; t < qBlocks; t += programs)
      qbs.push_back(t);
    return qbs;
  }
  std::vector<std::vector<int64_t>> units;
  int64_t odd = qBlocks % 2;
  for (int64_t i = 0; i < qBlocks / 2; ++i)
    units.push_back({qBlocks - 1 - odd - i, i});
  if (odd)
    units.push_back({qBlocks - 1});
  for (size_t u = pid; u < units.size(); u += programs)
    qbs.insert(qbs.end(), units[u].begin(), units[u].end());
  return qbs;
}

/// A persistent program's tile space over several heads and sequences: the
/// CTAs of every grid size between them load each (batch, query block,
/// head) tile's Q exactly once, and, where a tile's work is its number of
/// key blocks (square causal tiles, Nq = Nk), no CTA has more than one
/// unit of work (attn-persistent's pair of query blocks) above another.
void checkTileCoverage(Checker &c, func::FuncOp func, const MaskCase &m,
                       const Pipeline &p, int64_t &cases) {
  bool causal = isCausalKernel(func);
  for (int64_t n : {int64_t(1), int64_t(129), int64_t(1000)})
    for (auto [heads, batch] : {std::pair<int64_t, int64_t>(3, 1), {2, 3}})
      for (int64_t programs : {1, 2, 5, 7, 132}) {
        c.where = fmt::format("{} {}x{} {} tile space n={} heads={} batch={} "
                              "ctas={}",
                              p.name, p.blockM, p.blockN, m.str(), n, heads,
                              batch, programs);
        int64_t qBlocks = (n + p.blockM - 1) / p.blockM;
        std::map<std::tuple<int64_t, int64_t, int64_t>, int> loads;
        std::vector<int64_t> work; // key blocks each CTA loads
        for (int64_t pid = 0; pid < programs; ++pid) {
          Interpreter run(n, n, pid, programs, heads, batch);
          if (failed(run.run(func))) {
            c.expect(false, "the skeleton does not run: " + run.error);
            return;
          }
          int64_t blocks = 0;
          for (const std::vector<Event> &trace : run.traces)
            for (const Event &e : trace) {
              bool fill = e.kind == Event::copy || e.kind == Event::load;
              if (fill && e.tensor == 0)
                ++loads[{e.batch, e.row / p.blockM, e.head}];
              blocks += fill && e.tensor == 1;
            }
          work.push_back(blocks);
        }
        ++cases;
        int64_t tiles = qBlocks * heads * batch;
        bool once = int64_t(loads.size()) == tiles;
        for (auto [tile, count] : loads) {
          auto [b, qb, h] = tile;
          once = once && count == 1 && b < batch && qb < qBlocks && h < heads;
        }
        c.expect(once, fmt::format("{} distinct Q tiles loaded of {}, each "
                                   "once: {}",
                                   loads.size(), tiles, once));
        if (!causal || m.left >= 0 || p.blockM != p.blockN)
          continue;
        int64_t unit = qBlocks + 1 - qBlocks % 2;
        auto [lo, hi] = std::minmax_element(work.begin(), work.end());
        c.expect(*hi - *lo <= unit,
                 fmt::format("CTAs load {} to {} key blocks, more than one "
                             "unit ({}) apart",
                             *lo, *hi, unit));
      }
}

/// Checks one program over every length pair and query block.
void checkProgram(Checker &c, func::FuncOp func, const MaskCase &m,
                  const Pipeline &p, int64_t &cases) {
  const int64_t lengths[] = {1, 17, 64, 65, 129, 333, 1000};
  if (p.persistent) {
    // CTAs that each loop over several query blocks.
    bool causal = isCausalKernel(func);
    for (int64_t nq : lengths)
      for (int64_t nk : lengths) {
        int64_t qBlocks = (nq + p.blockM - 1) / p.blockM;
        for (int64_t programs : {int64_t(1), int64_t(2), int64_t(3)})
          for (int64_t pid = 0; pid < std::min(programs, qBlocks); ++pid) {
            checkCase(c, func, m, p, nq, nk, pid, programs,
                      persistentTiles(pid, programs, qBlocks, causal));
            ++cases;
          }
      }
    checkTileCoverage(c, func, m, p, cases);
    return;
  }
  for (int64_t nq : lengths)
    for (int64_t nk : lengths)
      for (int64_t qb = 0; qb * p.blockM < nq; ++qb) {
        checkCase(c, func, m, p, nq, nk, qb, (nq + p.blockM - 1) / p.blockM,
                  {qb});
        ++cases;
      }
  // Lengths near the 32-bit limit, with windows narrow enough to run: the
  // first, a middle and the last query block.
  bool narrow = (m.left >= 0 && m.left <= 1000) &&
                (m.causal || (m.right >= 0 && m.right <= 1000));
  if (!narrow)
    return;
  for (auto [nq, nk] : {std::pair(kLargeLength, kLargeLength),
                        std::pair(kLargeLength, int64_t(1000)),
                        std::pair(int64_t(1000), kLargeLength)}) {
    int64_t last = (nq - 1) / p.blockM;
    for (int64_t qb : {int64_t(0), last / 2, last}) {
      checkCase(c, func, m, p, nq, nk, qb, last + 1, {qb});
      ++cases;
    }
  }
}

/// attn-configure (sm_80, the given tiles, attn-tile's single buffers: the
/// rings are below), attn-tile and attn-causal-blocks.
LogicalResult runTilePasses(ModuleOp module, int64_t blockM, int64_t blockN,
                            bool peel) {
  PassManager pm(module.getContext());
  AttentionSpec tiles;
  tiles.blockM = blockM;
  tiles.blockN = blockN;
  tiles.numWarps = 4;
  tiles.stages = 1;
  pm.addPass(createAttnConfigure(tiles));
  pm.addPass(createAttnTile());
  AttnCausalBlocksOptions blocks;
  blocks.peel = peel;
  pm.addPass(createAttnCausalBlocks(blocks));
  return pm.run(module);
}

} // namespace

int main() {
  DialectRegistry registry;
  registerCodegenDialects(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  Checker c;
  int64_t cases = 0, programs = 0;
  auto kernelOf = [](ModuleOp module) {
    return *module.getOps<func::FuncOp>().begin();
  };

  // The tile program after attn-causal-blocks, peeled and in one loop.
  const std::pair<int64_t, int64_t> tilings[] = {
      {64, 64}, {128, 48}, {192, 128}, {64, 80}};
  for (const MaskCase &m : maskCases())
    for (auto [blockM, blockN] : tilings)
      for (bool peel : {true, false}) {
        OwningOpRef<ModuleOp> module =
            buildModule(ctx, m, TargetKind::sm_80, 128);
        Pipeline p{peel ? "attn-causal-blocks" : "attn-causal-blocks=peel=false",
                   blockM, blockN};
        if (failed(runTilePasses(*module, blockM, blockN, peel))) {
          c.where = p.name + " " + m.str();
          c.expect(false, "the passes failed");
          continue;
        }
        ++programs;
        checkProgram(c, kernelOf(*module), m, p, cases);
      }

  // The sm_90a FlashAttention-3 schedule (pipes, warp roles, the rotated
  // loop, pingpong) as attngen builds it, per head dim; and ablations.
  // And sm_80's cp.async rings (two stages by default at d64 and d128,
  // three as the ablation).
  struct Fa3 {
    const char *name;
    int64_t headDim;
    bool overlap;
    int64_t stages;
    TargetKind target = TargetKind::sm_90a;
    bool persistent = false;
  };
  const Fa3 fa3s[] = {{"fa3 d64", 64, true, 0},
                      {"fa3 d128", 128, true, 0},
                      {"fa3 d256", 256, true, 0},
                      {"fa3 d128 stages=3", 128, true, 3},
                      {"fa3 d128 no-overlap", 128, false, 0},
                      {"sm80 rings d64", 64, false, 0, TargetKind::sm_80},
                      {"sm80 rings d128", 128, false, 0, TargetKind::sm_80},
                      {"sm80 rings d128 stages=3", 128, false, 3, TargetKind::sm_80},
                      {"fa3 d128 persistent", 128, true, 0, TargetKind::sm_90a, true},
                      {"fa3 d64 persistent", 64, true, 0, TargetKind::sm_90a, true}};
  for (const MaskCase &m : maskCases())
    for (const Fa3 &f : fa3s) {
      AttentionSpec spec;
      spec.target = f.target;
      spec.headDim = f.headDim;
      spec.causal = m.causal;
      spec.windowLeft = m.left;
      spec.windowRight = m.causal ? -1 : m.right;
      spec.causalAlign = m.bottomRight ? CausalAlign::bottom_right
                                       : CausalAlign::top_left;
      spec.intraWgOverlap = f.overlap;
      spec.stages = f.stages;
      spec.persistent = f.persistent;
      spec.withLse = false;
      if (llvm::Error error = validateSpec(spec)) {
        c.where = std::string(f.name) + " " + m.str();
        c.expect(false, llvm::toString(std::move(error)));
        continue;
      }
      OwningOpRef<ModuleOp> module = buildKernelModule(ctx, spec);
      PassManager pm(&ctx);
      buildAttnTilePipeline(pm);
      if (failed(pm.run(*module))) {
        c.where = std::string(f.name) + " " + m.str();
        c.expect(false, "the passes failed");
        continue;
      }
      func::FuncOp func = kernelOf(*module);
      auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName);
      Pipeline p{f.name, tiling.getBlockM(), tiling.getBlockN(), f.persistent};
      ++programs;
      checkProgram(c, func, m, p, cases);
    }

  fmt::print("{} programs, {} cases, {} checks, {} failed\n", programs, cases,
             c.checks, c.failed);
  return c.failed == 0 ? 0 : 1;
}
