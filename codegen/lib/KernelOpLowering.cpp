//===- KernelOpLowering.cpp - the kernel-level attn ops -------------------===//
//
// The ops that are neither register-tile math nor target-specific: the
// launch grid (program ids, problem sizes), scalar loads, sequences of a
// packed batch, warp roles and named barriers. Each is registered once in
// populateKernelOpLowerings (LoweringTable.h).
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

using namespace mlir;
using namespace mlir::attn;

/// The size parameter `kind` of the kernel (null if it takes none).
Value mlir::attn::sizeParam(const KernelParams &params, SizeKind kind) {
  switch (kind) {
  case SizeKind::batch:
    return params.batch;
  case SizeKind::nq:
    return params.nq;
  case SizeKind::nk:
    return params.nk;
  case SizeKind::num_heads:
    return params.numHeads;
  case SizeKind::num_kv_heads:
    return params.numKvHeads;
  case SizeKind::num_splits:
    return params.numSplits;
  case SizeKind::max_blocks:
    return params.maxBlocks;
  case SizeKind::num_blocks:
    return params.numBlocks;
  case SizeKind::max_seqlen_q:
    return params.maxSeqlenQ;
  case SizeKind::max_seqlen_k:
    return params.maxSeqlenK;
  }
  return Value();
}

namespace {

/// Producer warpgroup(s) first, then the consumer warpgroups; each role
/// moves registers with setmaxnreg, the producer continues on one thread,
/// the consumers see warps numbered from 0 so register tiles are laid out
/// over them alone.
LogicalResult lowerWarpSpecialize(Lowering &l, WarpSpecializeOp op) {
  OpBuilder &b = l.b;
  Location loc = op.getLoc();
  Value isProducer = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, l.warp,
      l.i32(op.getProducerWarps()));
  auto ifOp = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  LogicalResult status = success();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, loc, op.getProducerRegs(),
                                   NVVM::SetMaxRegisterAction::decrease);
    Value elected = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          l.tid, l.i32(0));
    l.emitIf(elected, [&] {
      l.singleThread = true;
      status = l.lowerBlock(op.getProducer().front());
      l.singleThread = false;
    });
    // FP8's in-kernel V transpose: the producer warpgroup's other warps.
    if (succeeded(status) && !op.getTransposer().empty()) {
      Value transposes = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne, l.warp, l.i32(0));
      l.emitIf(transposes, [&] {
        status = l.lowerBlock(op.getTransposer().front());
      });
    }
  }
  if (failed(status))
    return failure();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  NVVM::SetMaxRegisterOp::create(b, loc, op.getConsumerRegs(),
                                 NVVM::SetMaxRegisterAction::increase);
  Value warp = l.warp;
  l.warp = arith::SubIOp::create(b, loc, warp, l.i32(op.getProducerWarps()));
  // The consumers' warp index broadcast from lane 0 where the op asks
  // (attn-warp-specialize decides): uniform registers for what derives
  // from it.
  if (op.getUniformWarpIndex())
    l.warp = NVVM::ShflOp::create(b, loc, b.getI32Type(), l.i32(-1), l.warp,
                                   l.i32(0), l.i32(0x1f), NVVM::ShflKind::idx,
                                   UnitAttr());
  status = l.lowerBlock(op.getConsumers().front());
  l.warp = warp;
  return status;
}

/// Rows cu[b] .. cu[b+1] - 1 of a packed tensor of `total_rows` rows,
/// clamped into [0, total_rows] (unsigned, so a negative entry clamps too):
/// a wrong cu_seqlens can never send a copy or store outside the tensor.
LogicalResult lowerSequence(Lowering &l, SequenceOp op) {
  OpBuilder &b = l.b;
  Location loc = op.getLoc();
  Value base = l.params.ptr[static_cast<int>(l.tensors.lookup(op.getCuSeqlens()))];
  auto globalPtr = LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
  Value batch = l.toI64(l.toI32(l.scalar(op.getBatch())));
  auto entry = [&](int64_t offset) -> Value {
    Value index = arith::AddIOp::create(b, loc, batch, l.i64(offset));
    Value addr = LLVM::GEPOp::create(b, loc, globalPtr, b.getI32Type(), base,
                                     ValueRange{index});
    // A non-coherent (L1-cached) load, as an asm statement with side
    // effects: a program that reads a sequence again after its key/value
    // loop (attn-tile's epilogue does) gets a load there, which LLVM would
    // otherwise merge with the first one into a register kept live across
    // the loop (sm_90a d64 spilled 8 bytes more that way). cu_seqlens does
    // not change while the kernel runs, and a persistent CTA reads it at
    // every tile (its walk over the sequences): a volatile load went to L2
    // each time.
    auto load = LLVM::InlineAsmOp::create(
        b, loc, b.getI32Type(), ValueRange{addr}, "ld.global.nc.b32 $0, [$1];",
        "=r,l", /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    return load.getResult(0);
  };
  Value total = l.toI32(l.scalar(op.getTotalRows()));
  Value start = arith::MinUIOp::create(b, loc, entry(0), total);
  Value end = arith::MinUIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, entry(1), start), total);
  Value length = arith::SubIOp::create(b, loc, end, start);
  l.seqs[op.getSeq()] = {start, length};
  l.scalars[op.getLength()] =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), length);
  return success();
}

/// The grid coordinate `dim` (0, 1, 2) read by program_id / num_programs.
Value gridCoordinate(Lowering &l, int64_t dim, bool count) {
  OpBuilder &b = l.b;
  Type i32 = b.getI32Type();
  if (count) {
    if (dim == 0)
      return NVVM::GridDimXOp::create(b, l.loc, i32);
    if (dim == 1)
      return NVVM::GridDimYOp::create(b, l.loc, i32);
    return NVVM::GridDimZOp::create(b, l.loc, i32);
  }
  if (dim == 0)
    return NVVM::BlockIdXOp::create(b, l.loc, i32);
  if (dim == 1)
    return NVVM::BlockIdYOp::create(b, l.loc, i32);
  return NVVM::BlockIdZOp::create(b, l.loc, i32);
}

void setIndex(Lowering &l, Value result, Value i32Value) {
  l.scalars[result] =
      arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(), i32Value);
}

LogicalResult lowerProblemSize(Lowering &l, ProblemSizeOp op) {
  Value size = sizeParam(l.params, op.getSize());
  if (!size)
    return op.emitOpError() << "reads the size "
                            << stringifySizeKind(op.getSize())
                            << ", which the kernel takes no parameter for";
  setIndex(l, op, size);
  return success();
}

/// An i32 entry of an optional tensor: the fallback where the tensor is
/// absent (a null pointer).
void lowerLoadIndex(Lowering &l, LoadIndexOp op) {
  OpBuilder &b = l.b;
  Location loc = op.getLoc();
  Value base = l.params.ptr[static_cast<int>(l.tensors.lookup(op.getSrc()))];
  Value isNull = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), base), l.i64(0));
  Value fallback = l.toI32(l.scalar(op.getFallback()));
  auto branch = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, isNull,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, loc, fallback);
    b.setInsertionPointToStart(branch.elseBlock());
    auto ptrType =
        LLVM::LLVMPointerType::get(b.getContext(), kGlobalAddressSpace);
    Value addr = LLVM::GEPOp::create(
        b, loc, ptrType, b.getI32Type(), base,
        ValueRange{l.toI64(l.toI32(l.scalar(op.getIndex())))});
    auto load = LLVM::LoadOp::create(b, loc, b.getI32Type(), addr,
                                     /*alignment=*/4);
    load.setInvariant(true);
    scf::YieldOp::create(b, loc, load.getResult());
  }
  setIndex(l, op, branch.getResult(0));
}

/// A warp_specialize's consumer warpgroups must be the tiling's warps.
LogicalResult checkConsumerWarps(Operation *op, const KernelFacts &facts) {
  auto ws = cast<WarpSpecializeOp>(op);
  int64_t warps = facts.tiling.getNumWarps();
  if (4 * static_cast<int64_t>(ws.getConsumerWarpgroups()) == warps)
    return success();
  int64_t built = 4 * static_cast<int64_t>(ws.getConsumerWarpgroups());
  return ws.emitOpError()
         << "declares " << ws.getConsumerWarpgroups()
         << " consumer warpgroups (" << built
         << " warps), but the kernel's tiling has num_warps = " << warps
         << ": the program was built for " << built
         << "; change the spec and regenerate the tile program (attngen "
            "--num-warps=N --emit=mlir) instead of the attribute";
}

} // namespace

void mlir::attn::populateKernelOpLowerings(LoweringTable &table) {
  table.add<ProgramIdOp>([](Lowering &l, ProgramIdOp op) {
    setIndex(l, op, gridCoordinate(l, op.getDim(), /*count=*/false));
  });
  table.add<NumProgramsOp>([](Lowering &l, NumProgramsOp op) {
    setIndex(l, op, gridCoordinate(l, op.getDim(), /*count=*/true));
  });
  table.add<ProblemSizeOp>(lowerProblemSize);
  table.add<LoadIndexOp>(lowerLoadIndex)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<LoadIndexOp>(op).getSrc(),
                            {Tensor::CacheSeqlens, Tensor::CuSeqlensK},
                            "must read the kernel's \"cache_seqlens\" or "
                            "\"cu_seqlens_k\" argument");
      });
  table.add<SequenceOp>(lowerSequence)
      .checkedBy([](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<SequenceOp>(op).getCuSeqlens(),
                            {Tensor::CuSeqlensQ, Tensor::CuSeqlensK},
                            "must read the kernel's \"cu_seqlens_q\" or "
                            "\"cu_seqlens_k\" argument");
      });
  table.add<WarpSpecializeOp>(lowerWarpSpecialize)
      .checkedBy(checkConsumerWarps);
  table.add<WarpgroupIdOp>([](Lowering &l, WarpgroupIdOp op) {
    setIndex(l, op, l.warpgroupIndex());
  });
  table.add<NamedBarrierSyncOp>([](Lowering &l, NamedBarrierSyncOp op) {
    NVVM::BarrierOp::create(l.b, op.getLoc(), TypeRange{},
                            l.toI32(l.scalar(op.getId())),
                            l.i32(op.getThreads()), {}, Value());
  });
  table.add<NamedBarrierArriveOp>([](Lowering &l, NamedBarrierArriveOp op) {
    NVVM::BarrierArriveOp::create(l.b, op.getLoc(),
                                  l.toI32(l.scalar(op.getId())),
                                  l.i32(op.getThreads()));
  });
  table.add<BarrierOp>([](Lowering &l, BarrierOp op) {
    NVVM::Barrier0Op::create(l.b, op.getLoc());
  });
  // Placed at kernel entry, before the walk (attn-allocate-smem's offsets).
  table.add<AllocSmemOp>([](Lowering &, AllocSmemOp) {});
  table.add<CreatePipeOp>([](Lowering &, CreatePipeOp) {});
}

LoweringTable mlir::attn::buildLoweringTable(TargetKind target) {
  LoweringTable table(target);
  populateKernelOpLowerings(table);
  populateFragmentLowerings(table);
  populateBackwardLowerings(table);
  if (target == TargetKind::sm_90a)
    populateSm90Lowerings(table);
  else
    populateSm80Lowerings(table);
  return table;
}
