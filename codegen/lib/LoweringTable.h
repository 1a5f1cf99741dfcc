//===- LoweringTable.h - where each attn op is lowered ---------*- C++ -*-===//
//
// attn-to-nvvm lowers every attn op through one table. An op is registered
// once, beside the code that lowers it, in one of four populate functions:
// the kernel-level ops (KernelOpLowering.cpp), the target-independent
// register-tile ops (FragmentLowering.cpp) and each target's ops
// (Sm80Lowering.cpp, Sm90Lowering.cpp). An entry may add a check that
// checkLowerable runs before anything is emitted (which kernel tensor the
// op may touch); which warp role may hold an op is its ODS trait
// (ProducerOnly, ConsumersOnly). An attn op with no entry for the target
// is refused up front.
//
// The walker in AttnToNVVM.cpp keeps what is not an attn op: structured
// control flow, memref.dim, func.return and scalar arith.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CODEGEN_LOWERINGTABLE_H
#define ATTN_CODEGEN_LOWERINGTABLE_H

#include "Lowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/TypeID.h"

#include <functional>
#include <optional>

namespace mlir::attn {

/// What an op's up-front check may ask of the kernel.
class KernelFacts {
public:
  KernelFacts(func::FuncOp func, TilingAttr tiling, ArrayRef<Tensor> roles)
      : func(func), tiling(tiling), roles(roles) {}

  func::FuncOp func;
  TilingAttr tiling;

  /// The tensor role of `v` if it is a kernel argument.
  std::optional<Tensor> roleOf(Value v) const;
  /// Emits `what` on `op` unless `tensor` is a kernel argument whose role
  /// is one of `allowed`.
  LogicalResult expect(Operation *op, Value tensor, ArrayRef<Tensor> allowed,
                       StringRef what) const;

private:
  ArrayRef<Tensor> roles;
};

/// How attn-to-nvvm lowers one op.
struct OpLowering {
  using LowerFn = std::function<LogicalResult(Lowering &, Operation *)>;
  using CheckFn = std::function<LogicalResult(Operation *, const KernelFacts &)>;

  LowerFn lower;
  /// Optional: run by checkLowerable before anything is emitted.
  CheckFn check;

  OpLowering &checkedBy(CheckFn fn) {
    check = std::move(fn);
    return *this;
  }
};

/// The lowerings of one target.
class LoweringTable {
public:
  explicit LoweringTable(TargetKind target) : target(target) {}

  /// Registers `lower` for OpT, which takes (Lowering &, OpT) and returns
  /// LogicalResult or nothing (an op that cannot fail).
  template <typename OpT, typename Fn>
  OpLowering &add(Fn lower) {
    OpLowering &entry = entries[TypeID::get<OpT>()];
    entry.lower = [lower](Lowering &l, Operation *op) -> LogicalResult {
      if constexpr (std::is_void_v<decltype(lower(l, cast<OpT>(op)))>) {
        lower(l, cast<OpT>(op));
        return success();
      } else {
        return lower(l, cast<OpT>(op));
      }
    };
    return entry;
  }

  /// The entry of `op`, or null if this target does not lower it.
  const OpLowering *lookup(Operation *op) const {
    auto it = entries.find(op->getName().getTypeID());
    return it == entries.end() ? nullptr : &it->second;
  }

  TargetKind target;
  /// Emitted once at kernel entry, after the buffers are placed.
  std::function<LogicalResult(Lowering &)> prologue;

private:
  llvm::DenseMap<TypeID, OpLowering> entries;
};

/// The table of `target`: all its populate functions.
LoweringTable buildLoweringTable(TargetKind target);

void populateKernelOpLowerings(LoweringTable &table);
void populateFragmentLowerings(LoweringTable &table);
void populateBackwardLowerings(LoweringTable &table);
void populateSm80Lowerings(LoweringTable &table);
void populateSm90Lowerings(LoweringTable &table);

/// Checks, before anything is emitted, that every op of `func` is one the
/// table lowers faithfully (CheckLowerable.cpp).
LogicalResult checkLowerable(func::FuncOp func, const KernelFacts &facts,
                             const LoweringTable &table);

/// Checks shared by both targets' copies and pipe loads: they read q, k or
/// v, and a paged one its pages from the block table.
LogicalResult checkCopySource(Operation *op, Value src, Value pages,
                              const KernelFacts &facts, StringRef what);

/// Both targets' check of attn.accumulate_dq: it adds into dq_accum.
LogicalResult checkAccumulateDq(Operation *op, const KernelFacts &facts);

/// The size parameter `kind` of the kernel (null if it takes none).
Value sizeParam(const KernelParams &params, SizeKind kind);

} // namespace mlir::attn

#endif // ATTN_CODEGEN_LOWERINGTABLE_H
