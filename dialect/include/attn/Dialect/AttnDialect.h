//===- AttnDialect.h - the attn dialect -------------------------*- C++ -*-===//
#ifndef ATTN_DIALECT_ATTNDIALECT_H
#define ATTN_DIALECT_ATTNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Error.h"

#include "attn/Dialect/AttnDialect.h.inc"
#include "attn/Dialect/Problem.h"

namespace mlir::attn {
/// Most stages a shared-memory pipe may have (more never fit in shared memory
/// with the tiles attention uses).
constexpr int64_t kMaxPipeStages = 8;
/// Head dimensions the kernels support: multiples of kHeadDimMultiple
/// (rows of 16 bytes, what TMA and cp.async copy) up to kMaxHeadDim.
constexpr int64_t kHeadDimMultiple = 8;
constexpr int64_t kMaxHeadDim = 256;
} // namespace mlir::attn

namespace mlir::OpTrait::attn {
/// Inside attn.warp_specialize, the op belongs in the producer region
/// (AttnOps.td, Attn_ProducerOnly).
template <typename ConcreteType>
class ProducerOnly : public TraitBase<ConcreteType, ProducerOnly> {};
/// Inside attn.warp_specialize, the op belongs in the consumers region.
template <typename ConcreteType>
class ConsumersOnly : public TraitBase<ConcreteType, ConsumersOnly> {};
/// Inside attn.warp_specialize, the op belongs in the transposer region.
template <typename ConcreteType>
class TransposerOnly : public TraitBase<ConcreteType, TransposerOnly> {};
} // namespace mlir::OpTrait::attn

#include "attn/Dialect/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "attn/Dialect/AttnAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "attn/Dialect/AttnTypes.h.inc"
#define GET_OP_CLASSES
#include "attn/Dialect/AttnOps.h.inc"

namespace mlir::attn {
/// A warpgroup, the unit of wgmma and of attn.warp_specialize's roles and
/// register budgets: 4 warps, 128 threads, and the 64 rows of one wgmma m64
/// slice of a register tile.
constexpr int64_t kWarpgroupWarps = 4;
constexpr int64_t kWarpgroupThreads = 32 * kWarpgroupWarps;
constexpr int64_t kWarpgroupRows = 64;
/// Warps of the producer warpgroup that transpose FP8's V (attn-transpose-v):
/// all but warp 0, which issues the TMA.
constexpr int64_t kTransposerWarps = 3;

/// Name of the module attribute holding the #attn.target.
constexpr llvm::StringLiteral kTargetAttrName = "attn.target";
/// Name of the function attribute holding the #attn.tiling of a tile program.
constexpr llvm::StringLiteral kTilingAttrName = "attn.tiling";
/// Name of the function attribute marking a tile-program kernel.
constexpr llvm::StringLiteral kKernelAttrName = "attn.kernel";
/// Name of the kernel attribute naming the role of each argument (an array
/// of strings: "q", "k", "v", "o", "lse"), so the ABI follows roles, not
/// positions.
constexpr llvm::StringLiteral kTensorsAttrName = "attn.tensors";
/// Name of the kernel attribute holding its #attn.grid.
constexpr llvm::StringLiteral kGridAttrName = "attn.grid";
/// Name of the unit attribute marking the scf.for over a persistent
/// kernel's tiles (attn-persistent), as opposed to a key/value loop.
constexpr llvm::StringLiteral kTileLoopAttrName = "attn.tile_loop";
/// Name of the kernel attribute holding its #attn.problem (attn-tile sets
/// it from the op it tiles; the tile order, the lowering and the metadata
/// read it).
constexpr llvm::StringLiteral kProblemAttrName = "attn.problem";
/// Name of the kernel attribute holding its #attn.schedule (attn-configure
/// sets it; each technique's pass reads its switch).
constexpr llvm::StringLiteral kScheduleAttrName = "attn.schedule";

/// The #attn.problem of a kernel (a tile program or a lowered kernel), if
/// it has one.
std::optional<AttentionProblem> getProblem(Operation *kernel);
/// The problem of a kernel function: its #attn.problem once tiled, before
/// that the problem() of the attn.attention, attn.attention_kvcache or
/// attn.combine_splits it holds; none if it has neither.
std::optional<AttentionProblem> problemOfKernel(Operation *func);

/// Fails, saying to run attn-tile first, when `root` holds a problem op that
/// is not tiled yet: a tile-level pass (`pass`, its argument) run on one
/// would otherwise change nothing and exit 0.
LogicalResult requireTiled(Operation *root, llvm::StringRef pass);

/// The #attn.schedule of a kernel function, if it has one.
std::optional<AttentionSchedule> getSchedule(Operation *kernel);
/// Whether the schedule of `kernel` (a kernel function) turns the technique
/// `on` (a member of AttentionSchedule) on: true without a schedule (a
/// hand-written tile program gets every pass that is run).
inline bool scheduleApplies(Operation *kernel, bool AttentionSchedule::*on) {
  std::optional<AttentionSchedule> schedule = getSchedule(kernel);
  return !schedule || (*schedule).*on;
}
/// Whether `kernel`'s #attn.problem has a causal mask / a packed
/// (variable-length) batch / is a backward kernel / is the split-KV combine.
inline bool isCausalKernel(Operation *kernel) {
  std::optional<AttentionProblem> problem = getProblem(kernel);
  return problem && problem->causal;
}
inline bool isVarlenKernel(Operation *kernel) {
  std::optional<AttentionProblem> problem = getProblem(kernel);
  return problem && problem->varlen;
}
inline bool isBackwardKernel(Operation *kernel) {
  std::optional<AttentionProblem> problem = getProblem(kernel);
  return problem && problem->backward != BackwardPart::none;
}
inline bool isCombineKernel(Operation *kernel) {
  std::optional<AttentionProblem> problem = getProblem(kernel);
  return problem && problem->combine;
}

/// Whether `op` reads or produces a register tile (consumer work, in warp
/// specialization's terms).
bool touchesRegisterTiles(Operation *op);

/// The target of the module enclosing `op`, if it has one.
std::optional<TargetKind> getTarget(Operation *op);

/// Checks a softmax scale: positive and finite, and representable where the
/// kernels use it: as an f32 and folded into the exp2 constant
/// `scale * log2(e)` (f32), neither of which may round to 0 or overflow.
/// Shared by the op verifier, the spec checks of the CLI and the C API, and
/// the metadata writer, so every path refuses the same scales. A soft cap,
/// which takes the scale's place in the exp2 constant, is checked the same
/// way; `what` names the value in the message and `symbol` in its formula.
llvm::Error checkSoftmaxScale(double scale,
                              llvm::StringRef what = "softmax scale",
                              llvm::StringRef symbol = "scale");

/// Checks a head dimension: a multiple of 8 from 8 to 256. The message says
/// how to pad an unsupported one. Shared by the op verifier and the spec
/// checks of the CLI and the C API.
llvm::Error checkHeadDim(int64_t headDim);

/// Whether a [B, N, H, D] (or packed [total, H, D]) tensor is K-major: its
/// rows contiguous (stride 1 on N), as FP8 attention's V stored transposed
/// [B, H, D, N]. Copies load such a tensor transposed, into D-row tiles.
bool isKeyMajor(MemRefType type);
} // namespace mlir::attn

#endif // ATTN_DIALECT_ATTNDIALECT_H
