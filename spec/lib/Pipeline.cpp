//===- Pipeline.cpp - the pass pipeline, one for the CLI and the JIT ------===//
//
// One fixed pipeline takes a problem module to the LLVM dialect: every
// FlashAttention technique is a pass in its place, and each applies where
// the kernel's #attn.schedule (chosen by attn-configure) turns it on. The
// CLI and the JIT run it; attngen-opt --attn-pipeline replays it.
//
//===----------------------------------------------------------------------===//
#include "TuningOptions.h"
#include "attn/Codegen/Codegen.h"
#include "attn/Passes/Passes.h"
#include "attn/Spec/Spec.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildAttnTilePipeline(OpPassManager &pm,
                                       const AttentionSpec &tuning) {
  // Configure (where the driver has not), tile, then the softmax.
  pm.addPass(createAttnConfigure(tuning));
  pm.addPass(createAttnTile());
  pm.addPass(createAttnCausalBlocks());
  pm.addPass(createAttnLongestFirst());
  pm.addPass(createAttnBoundedSoftmax());
  pm.addPass(createAttnOnlineSoftmax());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The schedule: a persistent grid, K/V pipes (sm_90a) or rings (sm_80),
  // producer/consumer warpgroups, then the consumers' two GEMM schedules
  // and the epilogue.
  pm.addPass(createAttnPersistent());
  pm.addPass(createAttnMultibuffer());
  pm.addPass(createAttnTransposeV());
  pm.addPass(createAttnWarpSpecialize());
  pm.addPass(createAttnIntraWgOverlap());
  pm.addPass(createAttnBackwardOverlap());
  pm.addPass(createAttnPingpong());
  pm.addPass(createAttnTmaStore());
  pm.addPass(createAttnPrefetchQ());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::attn::buildAttnPipeline(OpPassManager &pm,
                                   const AttentionSpec &tuning) {
  buildAttnTilePipeline(pm, tuning);
  buildLoweringPipeline(pm);
}

namespace {
/// The options of attn-pipeline and attn-tile-pipeline: attn-configure's.
struct AttnPipelineOptions : public PassPipelineOptions<AttnPipelineOptions> {
  template <class T> using ATTN_OPTION = PassPipelineOptions::Option<T>;
#include "TuningOptionMembers.def"

  /// The spec whose tiling and schedule fields the options give.
  AttentionSpec tuning() const {
    AttentionSpec spec;
    // The values are checked when attn-configure reads them again.
    llvm::consumeError(tuning::readTuningOptions(*this, spec));
    return spec;
  }
};
} // namespace

void mlir::attn::registerSpecPasses() {
  registerPass([] { return createAttnConfigure(AttentionSpec()); });
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-pipeline",
      "What attngen runs from a problem module to the LLVM dialect: "
      "attn-tile-pipeline, then attn-lowering-pipeline",
      [](OpPassManager &pm, const AttnPipelineOptions &options) {
        buildAttnPipeline(pm, options.tuning());
      });
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-tile-pipeline",
      "The FlashAttention passes from a problem module to tile programs "
      "(what attngen --emit=mlir runs)",
      [](OpPassManager &pm, const AttnPipelineOptions &options) {
        buildAttnTilePipeline(pm, options.tuning());
      });
  PassPipelineRegistration<>(
      "attn-lowering-pipeline",
      "attn-to-nvvm and the upstream conversions to the LLVM dialect",
      [](OpPassManager &pm) { buildLoweringPipeline(pm); });
}
