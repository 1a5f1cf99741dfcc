//===- AllocateSmem.cpp - attn-allocate-smem: place the shared memory -----===//
//
// Every shared-memory tile and mbarrier of a kernel gets its byte offset in
// the dynamic shared memory, visible in the IR: the layout of TileConfig.h's
// sharedMemoryLayoutBytes, which attn-tma-store's fit check asks too.
//
//===----------------------------------------------------------------------===//
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "attn-allocate-smem"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNALLOCATESMEM
#include "attn/Passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The tiles (a pipe's stages one after the other) in allocation order,
/// each 1024-byte aligned, then the mbarriers: one per buffer, a full and
/// an empty array per pipe.
void placeKernel(func::FuncOp kernel) {
  Builder b(kernel.getContext());
  auto allocations = smemAllocationsOf(kernel);
  int64_t offset = 0;
  for (auto &[buffer, allocation] : allocations) {
    int64_t tileBytes = llvm::alignTo(allocation.tileBytes, kSmemTileAlignment);
    Operation *op = buffer.getDefiningOp();
    op->setAttr("offset", b.getI64IntegerAttr(offset));
    offset += tileBytes * std::max<int64_t>(allocation.stages, 1);
  }
  for (auto &[buffer, allocation] : allocations) {
    Operation *op = buffer.getDefiningOp();
    if (auto pipe = dyn_cast<CreatePipeOp>(op)) {
      int64_t stages = allocation.stages;
      pipe.setFullBarriersAttr(b.getI64IntegerAttr(offset));
      pipe.setEmptyBarriersAttr(
          b.getI64IntegerAttr(offset + stages * kMbarrierBytes));
      offset += 2 * stages * kMbarrierBytes;
      continue;
    }
    cast<AllocSmemOp>(op).setBarrierAttr(b.getI64IntegerAttr(offset));
    offset += kMbarrierBytes;
  }
  SmallVector<SmemAllocation> sizes;
  for (auto &[buffer, allocation] : allocations)
    sizes.push_back(allocation);
  kernel->setAttr("attn.smem_bytes",
                  b.getI64IntegerAttr(sharedMemoryLayoutBytes(sizes)));
}

struct AttnAllocateSmemPass
    : public mlir::attn::impl::AttnAllocateSmemBase<AttnAllocateSmemPass> {
  using AttnAllocateSmemBase::AttnAllocateSmemBase;
  void runOnOperation() override {
    if (failed(requireTiled(getOperation(), getArgument())))
      return signalPassFailure();
    getOperation().walk([&](func::FuncOp func) {
      if (func->hasAttr(kKernelAttrName))
        placeKernel(func);
    });
  }
};

} // namespace
