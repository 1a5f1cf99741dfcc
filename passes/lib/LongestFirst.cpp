//===- LongestFirst.cpp - attn-longest-first: long CTAs start first -------===//
//
//   %blk = program_id 0               lin = x + nx * (y + ny * z)   (launch
//   order) %h   = program_id 1      ->       span = ceil(wave / nx) (head,
//   batch) pairs %b   = program_id 2               section lin / (span nx):
//   block-major,
//                                     the longest block first (dq: nx-1-rank)
//
// Under a causal mask the CTAs of a backward kernel differ in length along
// the block axis: key block j of the key-owning kernels (dkdv, fused) visits
// the query blocks from j on, query block i of dq the key blocks up to i.
// The GPU starts CTAs in launch order (x fastest), so in grid order every
// head's long CTAs wait behind the heads before it, and the last heads' run
// alone at the end. With few heads (GQA's key-owning grid: a CTA per key
// block and k/v head) that tail is a third of the kernel.
//
// Numbered block-major over every head, the longest first, the kernel is
// balanced (the longest-processing-time order), but the CTAs at work at once
// then belong to every head, and short sequences lose more in L2 (each
// head's Q, dO and dQ accumulator read by CTAs far apart in time) than they
// gain. So the order goes section by section: a section is the blocks of
// about a wave's worth of CTAs' heads (`wave`, about the CTAs the GPU runs
// at once), block-major within it. The heads at work at once are a section
// or two, as in grid order, and each section's short CTAs fill in under the
// next one's long ones.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "attn-longest-first"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLONGESTFIRST
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Renumbers the CTAs of `kernel` section by section, each section a few
/// heads' blocks, block-major within it: `wave` is about as many CTAs as
/// the GPU runs at once, and a section spans ceil(wave / blocks) heads.
void numberLongestFirst(func::FuncOp kernel, bool ascending, int64_t wave) {
  SmallVector<ProgramIdOp> ids;
  kernel.walk([&](ProgramIdOp id) { ids.push_back(id); });
  OpBuilder b(kernel.getBody());
  Location loc = kernel.getLoc();
  Type index = b.getIndexType();
  auto mul = [&](Value l, Value r) {
    return arith::MulIOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) {
    return arith::AddIOp::create(b, loc, l, r);
  };
  auto div = [&](Value l, Value r) {
    return arith::DivUIOp::create(b, loc, l, r);
  };
  auto rem = [&](Value l, Value r) {
    return arith::RemUIOp::create(b, loc, l, r);
  };
  Value x = ProgramIdOp::create(b, loc, index, 0);
  Value y = ProgramIdOp::create(b, loc, index, 1);
  Value z = ProgramIdOp::create(b, loc, index, 2);
  Value blocks = NumProgramsOp::create(b, loc, index, 0);
  Value ny = NumProgramsOp::create(b, loc, index, 1);
  Value nz = NumProgramsOp::create(b, loc, index, 2);
  // The launch order's number of this CTA.
  Value lin = add(x, mul(blocks, add(y, mul(ny, z))));
  // Sections of `span` (head, batch) pairs, the last one perhaps narrower.
  Value pairs = mul(ny, nz);
  Value span = arith::MinUIOp::create(
      b, loc,
      arith::CeilDivUIOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, wave), blocks),
      pairs);
  Value sectionCtas = mul(span, blocks);
  Value section = div(lin, sectionCtas);
  Value within = rem(lin, sectionCtas);
  Value first = mul(section, span);
  Value width = arith::MinUIOp::create(
      b, loc, span, arith::SubIOp::create(b, loc, pairs, first));
  // Within a section: the block's rank (the longest first), then the pair.
  Value rank = div(within, width);
  Value pair = add(first, rem(within, width));
  Value block = rank;
  if (!ascending)
    block = arith::SubIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, blocks,
                              arith::ConstantIndexOp::create(b, loc, 1)),
        rank);
  Value tile[3] = {block, rem(pair, ny), div(pair, ny)};
  for (ProgramIdOp id : ids) {
    id.getResult().replaceAllUsesWith(tile[id.getDim()]);
    id.erase();
  }
}

struct AttnLongestFirstPass
    : public mlir::attn::impl::AttnLongestFirstBase<AttnLongestFirstPass> {
  using AttnLongestFirstBase::AttnLongestFirstBase;

  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    if (wave < 1) {
      getOperation().emitError()
          << "attn-longest-first: wave = " << static_cast<int64_t>(wave)
          << " is out of range; use the number of CTAs the GPU runs at once "
             "(at least 1)";
      return signalPassFailure();
    }
    SmallVector<std::pair<func::FuncOp, bool>> kernels;
    getOperation().walk([&](func::FuncOp func) {
      std::optional<AttentionProblem> problem = getProblem(func);
      if (!func->hasAttr(kKernelAttrName) || !problem ||
          !problem->hasMonotoneBlockLengths() ||
          !scheduleApplies(func, &AttentionSchedule::longestFirst))
        return;
      // A kernel that reads num_programs already walks tiles of its own
      // (attn-persistent) or was numbered by this pass.
      bool numbered = false;
      func.walk([&](NumProgramsOp) { numbered = true; });
      // Key-owning kernels: key block 0 sees the most queries; dq: the
      // last query block sees the most keys.
      if (!numbered)
        kernels.push_back({func, problem->backward != BackwardPart::dq});
    });
    for (auto [kernel, ascending] : kernels)
      numberLongestFirst(kernel, ascending, wave);
  }
};

} // namespace
