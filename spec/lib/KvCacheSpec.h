//===- KvCacheSpec.h - specs of the decoding kernels ------------*- C++ -*-===//
//
// The spec-level side of the KV-cache kernels (AttentionSpec::kvCache) and
// their split-KV combine kernels (AttentionSpec::combine): checks, tiles,
// the problem module.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SPEC_LIB_KVCACHESPEC_H
#define ATTN_SPEC_LIB_KVCACHESPEC_H

#include "attn/Spec/Spec.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// What validateSpec checks of the decoding fields: none of them without
/// kvCache; a page size that is 0 or a positive multiple of 16, a head pack
/// that fits the tile, bottom-right causal alignment, a combine kernel only
/// of a split-KV spec, and the KV-cache tile configuration.
llvm::Error validateKvCacheSpec(const AttentionSpec &spec);

/// A page size of 0 (no pages) or a positive multiple of 16 up to 2^16.
llvm::Error checkPageSize(const AttentionSpec &spec);

/// The tile configuration a KV-cache spec's kernel gets.
TileConfig kvCacheTileConfig(const AttentionSpec &spec);

/// The spec's element type: bf16 or f16.
Type elementTypeOf(MLIRContext &ctx, const AttentionSpec &spec);

/// `module attributes {attn.target} { func.func @<name>(args) { ... } }`:
/// the problem module of a spec, whose function body `build` fills before
/// its return (ProblemModule.cpp; the dense and KV-cache problems share it).
OwningOpRef<ModuleOp> buildProblemModule(
    MLIRContext &ctx, const AttentionSpec &spec, llvm::StringRef name,
    llvm::ArrayRef<Type> args,
    llvm::function_ref<void(OpBuilder &, Location, Block &)> build);

/// Sets the spec's problem on a problem op (attn.attention,
/// attn.attention_kvcache, attn.combine_splits): each PROBLEM field of
/// spec_fields.def for which the op declares an attribute of the same name,
/// unless the field holds its default; the scale spelled out. A new field
/// reaches its op through the table, with no edit here.
void setProblemAttributes(Operation *op, const AttentionSpec &spec);

/// Creates a problem op OpT on `operands` (null: an absent optional
/// operand) with the spec's problem as its attributes.
template <class OpT>
OpT createProblemOp(OpBuilder &b, Location loc, llvm::ArrayRef<Value> operands,
                    const AttentionSpec &spec) {
  OperationState state(loc, OpT::getOperationName());
  llvm::SmallVector<int32_t> segments;
  for (Value operand : operands) {
    segments.push_back(operand ? 1 : 0);
    if (operand)
      state.addOperands(operand);
  }
  if constexpr (OpT::template hasTrait<OpTrait::AttrSizedOperandSegments>())
    llvm::copy(segments, state.getOrAddProperties<typename OpT::Properties>()
                             .operandSegmentSizes.begin());
  Operation *op = b.create(state);
  setProblemAttributes(op, spec);
  return cast<OpT>(op);
}

/// `module { func.func @<name>(...) { attn.attention_kvcache | 
/// attn.combine_splits } }` for a KV-cache or combine spec.
OwningOpRef<ModuleOp> buildKvCacheSpecModule(MLIRContext &ctx,
                                             const AttentionSpec &spec,
                                             llvm::StringRef name);

} // namespace mlir::attn

#endif // ATTN_SPEC_LIB_KVCACHESPEC_H
