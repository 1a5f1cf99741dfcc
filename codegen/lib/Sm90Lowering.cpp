//===- Sm90Lowering.cpp - copies and MMAs for sm_90a (H100/H200) ----------===//
//
//   attn.copy_async -> one thread: mbarrier.arrive.expect_tx(bytes) and one
//                      cp.async.bulk.tensor.4d per swizzle panel (TMA, a box
//                      of one panel in the tile's swizzle; rows past N and
//                      columns past D read as zero; .3d for a packed batch's
//                      [total, H, D] tensors)
//   attn.wait       -> mbarrier.try_wait.parity(fill % 2) spin; bar.sync 0
//   attn.mma        -> wgmma.fence; wgmma.mma_async.m64nNk16 per k step and
//                      64-row warpgroup slice; commit_group; wait_group 0
//   attn.tma_store  -> thread 0 of each consumer warpgroup: one
//                      cp.async.bulk.tensor.4d store per swizzle panel of
//                      its 64 rows; cp.async.bulk.commit_group
//   attn.tma_store_wait -> the same thread: cp.async.bulk.wait_group.read N
//
// Shared-memory matrix descriptor (64 bits) of a swizzled operand whose
// panels have rows of S = 32, 64 or 128 bytes (AttnBase.td draws them):
//
//   bits  0-13  start address >> 4
//   bits 16-29  leading-dimension byte offset >> 4
//   bits 32-45  stride-dimension byte offset >> 4
//   bits 62-63  swizzle mode (1 = 128 bytes, 2 = 64, 3 = 32)
//
//   K-major (Q, K: the reduction dim is contiguous): rows of S bytes, 8-row
//     groups 8 * S bytes apart (stride offset); a panel holds S / 32 k16
//     steps, each 32 bytes further; the next panel is rows * S bytes on.
//   MN-major (V for P V, transposed B): the N dim is contiguous in panels of
//     S / 2 columns, `rows * S` bytes apart (leading offset); 8 k-rows are
//     8 * S bytes apart (stride offset); a k16 step advances 16 rows.
//
//     V, d96 (S = 64), one k16 step of a wgmma m64n96k16:
//       k-row 0..7  : [n 0..31 | LBO | n 32..63 | LBO | n 64..95]
//       k-row 8..15 : the same, SBO = 512 bytes further
//
//===----------------------------------------------------------------------===//
#include "LoweringTable.h"
#include "attn/Passes/NamedBarriers.h"
#include "attn/Passes/TileConfig.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <string>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Rows of a swizzle atom (the stride offset spans them).
constexpr int64_t kAtomRows = 8;
/// Bytes a k16 step advances inside a K-major panel row.
constexpr int64_t kKStepBytes = 32;
/// Elements of one k step.
constexpr int64_t kKStep = 16;
/// mbarrier try_wait suspend-time hint (ns), as CUTLASS uses.
constexpr int64_t kTryWaitTicks = 0x989680;
/// Rows of one wgmma: a warpgroup's slice.
constexpr int64_t kWgmmaRows = kWarpgroupRows;

Value barrierPtr(Lowering &l, const SmemBuffer &buffer) {
  return l.smemPtr(l.i32(buffer.barrierOffset));
}

Value isThreadZero(Lowering &l) {
  return arith::CmpIOp::create(l.b, l.loc, arith::CmpIPredicate::eq, l.tid,
                               l.i32(0));
}

/// Runs `body` on thread 0 only, unless the code already runs on one
/// elected thread (the producer region).
void onOneThread(Lowering &l, llvm::function_ref<void()> body) {
  if (l.singleThread)
    return body();
  l.emitIf(isThreadZero(l), body);
}

/// Whether every consumer thread arrives on `pipe`'s empty barrier rather
/// than lane 0 of each consumer warp: as its attn.create_pipe says
/// (per_thread_release, which attn-multibuffer sets).
bool releasedByEveryThread(const SmemPipe &pipe) {
  return pipe.perThreadRelease;
}

/// Thread 0 initialises one mbarrier per buffer (one arrival: the thread
/// that arms it with expect_tx) and, per pipe stage, a full barrier (one
/// arrival plus the TMA bytes) and an empty barrier (one arrival per
/// consumer warp, or per consumer thread: releasedByEveryThread); everyone
/// waits for the initialisation.
LogicalResult lowerPrologue(Lowering &l) {
  l.emitIf(isThreadZero(l), [&] {
    for (Value buffer : l.bufferOrder) {
      if (auto pipe = l.pipes.find(buffer); pipe != l.pipes.end()) {
        for (int64_t s = 0; s < pipe->second.type.getStages(); ++s) {
          NVVM::MBarrierInitOp::create(
              l.b, l.loc,
              l.smemPtr(l.i32(pipe->second.fullBarrierOffset + s * kMbarrierBytes)),
              l.i32(pipe->second.fillArrivals ? pipe->second.fillArrivals : 1),
              Value());
          int64_t arrivals = pipe->second.releaseArrivals
                                 ? pipe->second.releaseArrivals
                             : releasedByEveryThread(pipe->second)
                                 ? 32 * l.numWarps()
                                 : l.numWarps();
          NVVM::MBarrierInitOp::create(
              l.b, l.loc,
              l.smemPtr(
                  l.i32(pipe->second.emptyBarrierOffset + s * kMbarrierBytes)),
              l.i32(arrivals), Value());
        }
        continue;
      }
      NVVM::MBarrierInitOp::create(l.b, l.loc,
                                   barrierPtr(l, l.buffers[buffer]), l.i32(1),
                                   Value());
    }
    NVVM::FenceMbarrierInitOp::create(l.b, l.loc);
  });
  NVVM::Barrier0Op::create(l.b, l.loc);
  return success();
}

/// The role of kernel argument `tensor` when the kernel has a TMA descriptor
/// of it (the ABI gives one to each tensor a TMA copies or stores).
std::optional<Tensor> tmaRoleOf(Lowering &l, Value tensor) {
  auto it = l.tensors.find(tensor);
  if (it == l.tensors.end() || !l.params.tma[static_cast<int>(it->second)])
    return std::nullopt;
  return it->second;
}

/// Block-table entries a TMA thread loads ahead of the boxes they address.
constexpr int64_t kPagesInFlight = 4;

/// Arms `bar` with the tile's byte count and issues one TMA per swizzle
/// panel of `buffer` (run by one thread). A tile packing `headPack` heads
/// takes one box of rows / headPack rows per head and panel (rows of head g
/// from row g * rows / headPack on); a tile of a paged cache (`pages`) one
/// box per page it covers and panel, the page read from the block table and
/// given as the outermost (batch) coordinate. TMA counts a box's
/// out-of-bounds elements (rows past N, columns past D, pages past the
/// cache) as transferred bytes too, so the count is the whole tile's. The
/// destination is a CTA shared address (`.shared::cta`, PTX 8.6, which the
/// sm_90a kernels target): the `.shared::cluster` form needs a generic
/// round trip (two cvta, 64-bit registers) per panel, which spilled 8-20
/// bytes in the persistent kernels with three or more panels.

LogicalResult emitTmaLoad(Lowering &l, Operation *op, Value src,
                          const SmemBuffer &buffer, Value bar, Value batchIdx,
                          Value rowIdx, Value headIdx, Value pages,
                          int64_t headPack) {
  OpBuilder &b = l.b;
  std::optional<Tensor> role = tmaRoleOf(l, src);
  if (!role)
    return op->emitOpError("copies from a tensor the kernel has no TMA "
                           "descriptor for (its ABI gives one to each "
                           "copied kernel argument)");
  Value descriptor = l.params.tma[static_cast<int>(*role)];
  SwizzleGeometry g(buffer.type);
  bool keyMajor = isKeyMajor(cast<MemRefType>(src.getType()));
  int64_t panels = buffer.type.getNumPanels();
  int64_t bytes = buffer.type.getSizeInBytes();
  int64_t rows = buffer.type.getRows();
  int64_t boxes = 1, boxRows = rows;
  if (headPack > 1) {
    boxes = headPack;
    boxRows = rows / headPack;
  } else if (pages && l.pageSize < rows) {
    boxes = rows / l.pageSize;
    boxRows = l.pageSize;
  }
  Value head = l.toI32(l.scalar(headIdx));
  // A packed tensor's descriptor is 3-D, {D, total, H}: the tile's rows
  // past its sequence read the next sequence's (masked keys, query rows
  // never stored), and rows past the tensor read as zero.
  TileRows tileRows = l.tileRows(*role, batchIdx, rowIdx);
  Value row = tileRows.row;
  onOneThread(l, [&] {
    // A box is one page (boxRows = pageSize) or lies in one: box k reads
    // rows from row % pageSize on of the table's slot row / pageSize + k.
    // The pages of a group of boxes are loaded before the group's first TMA
    // is issued, so their block-table loads overlap instead of each waiting
    // behind the previous box's copy (the copies are ordered); a group of
    // kPagesInFlight keeps the 24-register TMA thread from spilling.
    Value rowInPage = row, slot;
    SmallVector<Value> pageOfBox(boxes, tileRows.batch);
    const bool paged = pages && headPack == 1;
    if (paged) {
      rowInPage = arith::RemUIOp::create(b, l.loc, row, l.i32(l.pageSize));
      slot = arith::DivUIOp::create(b, l.loc, row, l.i32(l.pageSize));
    }
    auto loadPages = [&](int64_t first) {
      for (int64_t box = first;
           paged && box < std::min(boxes, first + kPagesInFlight); ++box)
        pageOfBox[box] = l.loadPage(
            tileRows.batch, arith::AddIOp::create(b, l.loc, slot, l.i32(box)));
    };
    loadPages(0);
    NVVM::MBarrierArriveExpectTxOp::create(b, l.loc, Type(), bar, l.i32(bytes),
                                           NVVM::MemScopeKind::CTA,
                                           /*relaxed=*/false, Value());
    for (int64_t box = 0; box < boxes; ++box) {
      if (box > 0 && box % kPagesInFlight == 0)
        loadPages(box);
      // Coordinates {row, head[, batch]} of this box (a packed varlen
      // tensor has no batch coordinate).
      Value boxRow = rowInPage, boxHead = head, boxBatch = pageOfBox[box];
      if (headPack > 1)
        boxHead = arith::AddIOp::create(b, l.loc, head, l.i32(box));
      for (int64_t p = 0; p < panels; ++p) {
        Value dst = l.smemPtr(l.bufferOffset(
            buffer, p * g.panelBytes + box * boxRows * g.rowBytes));
        // Coordinates {column, row, head[, batch]}; a K-major source's
        // descriptor runs along its rows first (the tile is its transpose:
        // panels of rows, D tile rows).
        SmallVector<Value> coords = {l.i32(p * g.panelCols), boxRow, boxHead};
        if (keyMajor)
          coords = {arith::AddIOp::create(b, l.loc, boxRow,
                                          l.i32(p * g.panelCols)),
                    l.i32(0), boxHead};
        if (boxBatch)
          coords.push_back(boxBatch);
        NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
            b, l.loc, dst, descriptor, coords, bar, ValueRange(), Value(),
            Value(), NVVM::TMALoadMode::TILE, /*isCTAOnly=*/true,
            NVVM::CTAGroupKindAttr(), Value());
      }
    }
  });
  return success();
}

/// Zeroes rows [from, rows) of `buffer` when `from` (i32, signed) is below
/// its rows, then makes the zeros visible to wgmma (fence.proxy.async) and
/// orders them before every reader: inside warp specialization each
/// consumer warpgroup zeroes the whole tail itself and syncs its own 128
/// threads (the warpgroups run out of phase under pingpong; writing the
/// same zeros twice is harmless), outside it every thread takes a share and
/// the caller's bar.sync 0 follows. The chunks follow Lowering.h's
/// ChunkWalk, so each costs a compare and a store at a constant offset
/// from a per-thread base.
/// Zeroes rows [from, rows) of `buffer`, shared among `threads` threads
/// (this one is `thread`), then fences the writes for the async proxy
/// (wgmma reads the tile).
void zeroRowsFrom(Lowering &l, const SmemBuffer &buffer, Value from,
                  Value thread, int64_t threads) {
  OpBuilder &b = l.b;
  ChunkWalk walk = l.chunkWalk(buffer, thread, threads);
  walk.forEach(l, [&](int64_t step) {
    Value zero = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::sge,
                                       walk.row(l, step), from);
    l.emitIf(zero, [&] { l.zeroSharedChunk(walk.dstOffset(l, step)); });
  });
  NVVM::FenceProxyOp::create(
      b, l.loc, NVVM::ProxyKindAttr::get(b.getContext(),
                                         NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

LogicalResult lowerCopy(Lowering &l, CopyAsyncOp op) {
  const SmemBuffer &buffer = l.buffers[op.getDst()];
  return emitTmaLoad(l, op, op.getSrc(), buffer, barrierPtr(l, buffer),
                     op.getBatch(), op.getRow(), op.getHead(), op.getPages(),
                     op.headPack());
}

/// The stage of a fill: fill % stages.
Value stageOf(Lowering &l, const SmemPipe &pipe, Value fillIndex) {
  return arith::RemUIOp::create(l.b, l.loc, l.toI32(l.scalar(fillIndex)),
                                l.i32(pipe.type.getStages()));
}

/// The phase parity a fill completes: (fill / stages) % 2.
Value phaseOf(Lowering &l, const SmemPipe &pipe, Value fillIndex) {
  Value round =
      arith::DivUIOp::create(l.b, l.loc, l.toI32(l.scalar(fillIndex)),
                             l.i32(pipe.type.getStages()));
  return arith::AndIOp::create(l.b, l.loc, round, l.i32(1));
}

/// Pointer to barrier `stage` of the array at `offset`.
Value stageBarrier(Lowering &l, int64_t offset, Value stage) {
  return l.smemPtr(arith::AddIOp::create(
      l.b, l.loc, l.i32(offset),
      arith::MulIOp::create(l.b, l.loc, stage, l.i32(kMbarrierBytes))));
}

/// The buffer of `stage` as a tile whose offset is known at run time.
SmemBuffer stageBuffer(Lowering &l, const SmemPipe &pipe, Value stage) {
  SmemBuffer buffer;
  buffer.type = pipe.type.getBuffer();
  buffer.dynamicOffset = arith::AddIOp::create(
      l.b, l.loc, l.i32(pipe.offset),
      arith::MulIOp::create(l.b, l.loc, stage, l.i32(pipe.stageBytes)));
  return buffer;
}

LogicalResult lowerPipeAcquire(Lowering &l, PipeAcquireOp op) {
  const SmemPipe &pipe = l.pipes[op.getPipe()];
  Value stage = stageOf(l, pipe, op.getFill());
  Value phase = phaseOf(l, pipe, op.getFill());
  // A fresh barrier counts as having completed the phase before phase 0,
  // so the first round of fills waits on parity 1 and passes at once.
  Value parity = arith::XOrIOp::create(l.b, l.loc, phase, l.i32(1));
  onOneThread(l, [&] {
    NVVM::MBarrierTryWaitParityOp::create(
        l.b, l.loc, stageBarrier(l, pipe.emptyBarrierOffset, stage), parity,
        l.i32(kTryWaitTicks));
  });
  return success();
}

LogicalResult lowerPipeLoad(Lowering &l, PipeLoadOp op) {
  const SmemPipe &pipe = l.pipes[op.getPipe()];
  Value stage = stageOf(l, pipe, op.getFill());
  return emitTmaLoad(l, op, op.getSrc(), stageBuffer(l, pipe, stage),
                     stageBarrier(l, pipe.fullBarrierOffset, stage),
                     op.getBatch(), op.getRow(), op.getHead(), op.getPages(),
                     op.headPack());
}

LogicalResult lowerPipeWait(Lowering &l, PipeWaitOp op) {
  const SmemPipe &pipe = l.pipes[op.getPipe()];
  Value stage = stageOf(l, pipe, op.getFill());
  Value phase = phaseOf(l, pipe, op.getFill());
  NVVM::MBarrierTryWaitParityOp::create(
      l.b, l.loc, stageBarrier(l, pipe.fullBarrierOffset, stage), phase,
      l.i32(kTryWaitTicks));
  SmemBuffer buffer = stageBuffer(l, pipe, stage);
  if (op.getZeroFrom())
    return op.emitOpError("zeroes rows in a way the sm_90a lowering leaves "
                          "to the IR: attn-warp-specialize spells zero_from "
                          "out (attn.zero_rows and a named barrier)");
  l.buffers[op.getBuffer()] = buffer;
  return success();
}

LogicalResult lowerPipeRelease(Lowering &l, PipeReleaseOp op) {
  const SmemPipe &pipe = l.pipes[op.getPipe()];
  Value stage = stageOf(l, pipe, op.getFill());
  Value barrier = stageBarrier(l, pipe.emptyBarrierOffset, stage);
  auto arrive = [&] {
    NVVM::MBarrierArriveOp::create(l.b, l.loc, Type(), barrier, Value(),
                                   NVVM::MemScopeKind::CTA, /*relaxed=*/false);
  };
  if (releasedByEveryThread(pipe)) {
    arrive();
    return success();
  }
  // One arrival per consumer warp: the warp's MMAs reading the stage have
  // completed (wgmma waits are warp-wide), so lane 0 speaks for the warp.
  l.emitIf(arith::CmpIOp::create(l.b, l.loc, arith::CmpIPredicate::eq, l.lane,
                                 l.i32(0)),
           arrive);
  return success();
}

/// Byte offset of the 16-byte chunk at byte column `byteCol` (a multiple of
/// 16) of row `row` of a swizzled tile: its panel, its row in the panel, and
/// the chunk's position after the swizzle's XOR.
Value swizzledChunkOffset(Lowering &l, const SmemBuffer &buffer, Value row,
                          Value byteCol) {
  OpBuilder &b = l.b;
  SwizzleGeometry g(buffer.type);
  Value panel = arith::DivUIOp::create(b, l.loc, byteCol, l.i32(g.rowBytes));
  Value chunk = arith::ShRUIOp::create(
      b, l.loc, arith::RemUIOp::create(b, l.loc, byteCol, l.i32(g.rowBytes)),
      l.i32(4));
  Value xorSource = arith::AndIOp::create(
      b, l.loc, arith::ShRUIOp::create(b, l.loc, row, l.i32(g.xorShift)),
      l.i32(g.xorMask));
  Value swizzled = arith::XOrIOp::create(b, l.loc, chunk, xorSource);
  Value offset = arith::AddIOp::create(
      b, l.loc, arith::MulIOp::create(b, l.loc, panel, l.i32(g.panelBytes)),
      arith::MulIOp::create(b, l.loc, row, l.i32(g.rowBytes)));
  offset = arith::AddIOp::create(
      b, l.loc, offset, arith::ShLIOp::create(b, l.loc, swizzled, l.i32(4)));
  return arith::AddIOp::create(b, l.loc, offset, l.bufferOffset(buffer, 0));
}

/// The bytes of `a` and `b` that `selector` picks (prmt.b32).
Value permuteBytes(Lowering &l, Value a, Value b, int64_t selector) {
  return LLVM::InlineAsmOp::create(
             l.b, l.loc, l.b.getI32Type(), ValueRange{a, b},
             llvm::formatv("prmt.b32 $0, $1, $2, {0:x};", selector).str(),
             "=r,r,r", /*has_side_effects=*/false, /*is_align_stack=*/false,
             LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

/// attn.pipe_transpose, on the producer warpgroup's warps 1..3 (AttnSchedule-
/// Ops.td says what it does). The staging tile is keys x D bytes, the
/// destination D x keys; each warp takes every third block of 16 keys x 32
/// bytes. Per block, ldmatrix.x4 reads matrix m = lane / 8 from key row
/// 2 (lane % 8) + m % 2 and bytes 16 (m / 2): register m of lane (k, q) =
/// (lane / 4, lane % 4) holds bytes 4q..4q+3 of key 2k + m % 2. Interleaving
/// the even and odd key's bytes (prmt) gives 16-bit pairs (key 2k, key
/// 2k + 1) of head-dim bytes 4q, 4q + 1 (and 4q + 2, 4q + 3): row k, columns
/// 2q and 2q + 1 of four 8x8 16-bit matrices whose columns are head-dim
/// bytes. stmatrix.trans writes each matrix's column c as one 16-byte row:
/// keys 0..15 of head-dim byte 16 (m / 2) + 2 (m % 2) + 4 (c / 2) + c % 2.
/// With `zero_from`, register m of lane (k, q) is zeroed when its key,
/// 2 pair(k) + m % 2 of the block, is at or past the count.
LogicalResult lowerPipeTranspose(Lowering &l, PipeTransposeOp op) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  const SmemPipe &src = l.pipes[op.getSrc()];
  const SmemPipe &dst = l.pipes[op.getDst()];
  Value srcStage = stageOf(l, src, op.getFill());
  Value dstStage = stageOf(l, dst, op.getFill());
  // The staging fill has landed, and the consumers have released the
  // destination stage's previous fill (a fresh barrier passes parity 1).
  NVVM::MBarrierTryWaitParityOp::create(
      b, l.loc, stageBarrier(l, src.fullBarrierOffset, srcStage),
      phaseOf(l, src, op.getFill()), l.i32(kTryWaitTicks));
  NVVM::MBarrierTryWaitParityOp::create(
      b, l.loc, stageBarrier(l, dst.emptyBarrierOffset, dstStage),
      arith::XOrIOp::create(b, l.loc, phaseOf(l, dst, op.getFill()), l.i32(1)),
      l.i32(kTryWaitTicks));
  SmemBuffer from = stageBuffer(l, src, srcStage);
  SmemBuffer to = stageBuffer(l, dst, dstStage);
  int64_t keyBlocks = from.type.getRows() / 16;
  int64_t blocks = keyBlocks * (from.type.getCols() / 32);

  auto shr = [&](Value v, int64_t n) {
    return arith::ShRUIOp::create(b, l.loc, v, l.i32(n)).getResult();
  };
  auto andI = [&](Value v, int64_t n) {
    return arith::AndIOp::create(b, l.loc, v, l.i32(n)).getResult();
  };
  auto mul = [&](Value v, int64_t n) {
    return arith::MulIOp::create(b, l.loc, v, l.i32(n)).getResult();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, l.loc, x, y).getResult();
  };
  Value matrix = shr(l.lane, 3), row = andI(l.lane, 7);
  // Lane row r reads key pair r, or with interleaved keys pair
  // r / 2 + 4 (r % 2): stmatrix then writes the pairs 0, 4, 1, 5, 2, 6, 3, 7.
  Value pairOfLane =
      op.getInterleaveKeys()
          ? add(shr(row, 1), mul(andI(row, 1), 4))
          : row;
  Value keyOfLane = add(mul(pairOfLane, 2), andI(matrix, 1));
  Value byteOfLane = mul(shr(matrix, 1), 16);
  Value dimOfLane = add(add(mul(shr(matrix, 1), 16), mul(andI(matrix, 1), 2)),
                        add(mul(shr(row, 1), 4), andI(row, 1)));
  Value transposerWarp = arith::SubIOp::create(b, l.loc, l.warp, l.i32(1));
  // The even key of this lane's registers within a block (the odd one
  // follows it), and the count of keys kept.
  Value zeroFrom, evenKeyOfLane;
  if (op.getZeroFrom()) {
    zeroFrom = l.toI32(l.scalar(op.getZeroFrom()));
    Value quad = shr(l.lane, 2);
    Value pair = op.getInterleaveKeys()
                     ? add(shr(quad, 1), mul(andI(quad, 1), 4))
                     : quad;
    evenKeyOfLane = mul(pair, 2);
  }
  Type i32 = b.getI32Type();
  auto shape = NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8);
  scf::ForOp::create(
      b, l.loc, transposerWarp, l.i32(blocks), l.i32(kTransposerWarps),
      ValueRange(), [&](OpBuilder &, Location, Value block, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToEnd(b.getInsertionBlock());
        Value keyBlock = arith::RemUIOp::create(b, l.loc, block, l.i32(keyBlocks));
        Value byteBlock = arith::DivUIOp::create(b, l.loc, block, l.i32(keyBlocks));
        Value readAt = swizzledChunkOffset(
            l, from, add(mul(keyBlock, 16), keyOfLane),
            add(mul(byteBlock, 32), byteOfLane));
        auto structType =
            LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(4, i32));
        Value loaded = NVVM::LdMatrixOp::create(
            b, l.loc, structType, l.smemPtr(readAt), 4, NVVM::MMALayout::row,
            shape, NVVM::LdStMatrixEltType::B16);
        Value r[4];
        for (int64_t i = 0; i < 4; ++i)
          r[i] = LLVM::ExtractValueOp::create(b, l.loc, loaded, i);
        if (zeroFrom) {
          Value even = add(mul(keyBlock, 16), evenKeyOfLane);
          Value keep[2] = {
              arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt, even,
                                    zeroFrom),
              arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::slt,
                                    add(even, l.i32(1)), zeroFrom)};
          for (int64_t i = 0; i < 4; ++i)
            r[i] = arith::SelectOp::create(b, l.loc, keep[i % 2], r[i],
                                           l.i32(0));
        }
        SmallVector<Value> pairs = {
            permuteBytes(l, r[0], r[1], 0x5140), permuteBytes(l, r[0], r[1], 0x7362),
            permuteBytes(l, r[2], r[3], 0x5140), permuteBytes(l, r[2], r[3], 0x7362)};
        Value writeAt = swizzledChunkOffset(
            l, to, add(mul(byteBlock, 32), dimOfLane), mul(keyBlock, 16));
        NVVM::StMatrixOp::create(
            b, l.loc, l.smemPtr(writeAt), pairs,
            NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), shape,
            NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
        scf::YieldOp::create(b, l.loc);
      });
  // The wgmma reads the tile through the async proxy; then one arrival per
  // warp completes the fill and releases the staging stage.
  NVVM::FenceProxyOp::create(
      b, l.loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  NVVM::SyncWarpOp::create(b, l.loc, l.i32(-1));
  l.emitIf(arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::eq, l.lane,
                                 l.i32(0)),
           [&] {
             for (Value barrier :
                  {stageBarrier(l, dst.fullBarrierOffset, dstStage),
                   stageBarrier(l, src.emptyBarrierOffset, srcStage)})
               NVVM::MBarrierArriveOp::create(b, l.loc, Type(), barrier,
                                              Value(), NVVM::MemScopeKind::CTA,
                                              /*relaxed=*/false);
           });
  return success();
}

/// Ties `values` to an empty asm statement with side effects, so no use of
/// them is scheduled above the preceding wgmma wait (reading accumulators
/// in flight makes ptxas serialize every wgmma).
void fenceRegisters(Lowering &l, SmallVector<Value> &values) {
  OpBuilder &b = l.b;
  if (values.empty())
    return;
  SmallVector<Type> types;
  for (Value v : values)
    types.push_back(v.getType());
  std::string constraints;
  for (size_t i = 0; i < values.size(); ++i)
    constraints += (i ? ",=" : "=") + std::string(
        values[i].getType().isF32() ? "f" : "r");
  for (size_t i = 0; i < values.size(); ++i)
    constraints += "," + std::to_string(i);
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, l.loc, structType, values, "", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = LLVM::ExtractValueOp::create(b, l.loc, asmOp.getResult(0), i);
}

LogicalResult lowerMmaWait(Lowering &l, MmaWaitOp op) {
  NVVM::WgmmaWaitGroupSyncOp::create(l.b, l.loc, op.getPending());
  SmallVector<Value> values = l.tiles[op.getInput()];
  fenceRegisters(l, values);
  l.tiles[op.getResult()] = values;
  // The wgmma also read its A operand from registers asynchronously: using
  // them in the fence after the wait keeps their registers from being
  // reused for anything else while the MMA may still read them.
  auto mma = op.getInput().getDefiningOp<MmaOp>();
  if (mma && isa<RegTileType>(mma.getA().getType())) {
    SmallVector<Value> a = l.tiles[mma.getA()];
    fenceRegisters(l, a);
  }
  return success();
}

LogicalResult lowerWait(Lowering &l, WaitOp op) {
  if (l.producerWarps > 0)
    return op.emitOpError("is a CTA-wide barrier, which warp-specialized "
                          "kernels cannot use; use a pipe (attn-multibuffer)");
  const SmemBuffer &buffer = l.buffers[op.getBuffer()];
  Value fill = l.toI32(l.scalar(op.getFill()));
  Value parity = arith::AndIOp::create(l.b, l.loc, fill, l.i32(1));
  NVVM::MBarrierTryWaitParityOp::create(l.b, l.loc, barrierPtr(l, buffer),
                                        parity, l.i32(kTryWaitTicks));
  if (Value from = op.getZeroFrom()) {
    // Every thread of the CTA zeroes its share while rows remain; the wait's
    // own CTA barrier orders the zeros before any read.
    Value fromRow = l.toI32(l.scalar(from));
    Value pending = arith::CmpIOp::create(l.b, l.loc, arith::CmpIPredicate::slt,
                                          fromRow,
                                          l.i32(buffer.type.getRows()));
    l.emitIf(pending, [&] {
      zeroRowsFrom(l, buffer, fromRow, l.tid, l.numThreads());
    });
  }
  NVVM::Barrier0Op::create(l.b, l.loc);
  return success();
}

} // namespace

/// A warpgroup's (or any group of `threads` consecutive threads') share of
/// zeroing the rows past `from`: thread tid % threads of the group.
static LogicalResult lowerZeroRows(Lowering &l, ZeroRowsOp op) {
  const SmemBuffer &buffer = l.buffers[op.getBuffer()];
  Value thread = arith::AndIOp::create(l.b, l.loc, l.tid,
                                       l.i32(op.getThreads() - 1));
  zeroRowsFrom(l, buffer, l.toI32(l.scalar(op.getFrom())), thread,
               op.getThreads());
  return success();
}

namespace {

/// The descriptor's swizzle-mode field for panels of `rowBytes` bytes.
int64_t descriptorSwizzleMode(int64_t rowBytes) {
  switch (rowBytes) {
  case 128:
    return 1;
  case 64:
    return 2;
  default:
    assert(rowBytes == 32 && "swizzle spans are 32, 64 or 128 bytes");
    return 3;
  }
}

/// Builds a descriptor for the operand at `byteOffset` of a tile with
/// swizzle geometry `g`. (The start-address field is addr >> 4 in 14 bits;
/// shared addresses stay below 2^18, so constant offsets may be added to
/// the whole descriptor.)
Value makeDescriptor(Lowering &l, Value byteOffset, const SwizzleGeometry &g,
                     int64_t leadingBytes, int64_t strideBytes) {
  OpBuilder &b = l.b;
  Value addr = l.smemAddress(byteOffset);
  Value start = arith::AndIOp::create(
      b, l.loc, arith::ShRUIOp::create(b, l.loc, addr, l.i32(4)),
      l.i32(0x3FFF));
  uint64_t constant = (uint64_t(leadingBytes >> 4) & 0x3FFF) << 16 |
                      (uint64_t(strideBytes >> 4) & 0x3FFF) << 32 |
                      uint64_t(descriptorSwizzleMode(g.rowBytes)) << 62;
  return arith::OrIOp::create(b, l.loc, l.toI64(start),
                              l.i64(static_cast<int64_t>(constant)));
}

/// `desc` advanced by `bytes` (a multiple of 16).
Value addToDescriptor(Lowering &l, Value desc, int64_t bytes) {
  if (bytes == 0)
    return desc;
  return arith::AddIOp::create(l.b, l.loc, desc, l.i64(bytes >> 4));
}

/// wgmma with A from registers: no NVVM op takes a register A fragment, so
/// this one instruction is inline PTX. FP8 (k32) has no transpose
/// immediate: its B is K-major.
SmallVector<Value> wgmmaRegisterA(Lowering &l, ArrayRef<Value> acc,
                                  ArrayRef<Value> a, Value descB, int64_t n,
                                  bool transposeB, Type element) {
  OpBuilder &b = l.b;
  int64_t numAcc = acc.size();
  bool fp8 = isa<Float8E4M3FNType>(element);
  std::string dtype = fp8 ? "e4m3" : element.isBF16() ? "bf16" : "f16";
  std::string asmText = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                        std::to_string(2 * numAcc + 5) + ", 0;\n";
  asmText += llvm::formatv(
                 "wgmma.mma_async.sync.aligned.m64n{0}k{2}.f32.{1}.{1} {{", n,
                 dtype, operandKStep(element))
                 .str();
  for (int64_t i = 0; i < numAcc; ++i)
    asmText += (i ? ", $" : "$") + std::to_string(i);
  asmText += "}, {";
  for (int64_t i = 0; i < 4; ++i)
    asmText += (i ? ", $" : "$") + std::to_string(2 * numAcc + i);
  asmText += fp8 ? llvm::formatv("}, ${0}, p, 1, 1;\n}", 2 * numAcc + 4).str()
                 : llvm::formatv("}, ${0}, p, 1, 1, {1};\n}", 2 * numAcc + 4,
                                 transposeB ? 1 : 0)
                       .str();
  std::string constraints;
  for (int64_t i = 0; i < numAcc; ++i)
    constraints += "=f,";
  for (int64_t i = 0; i < numAcc; ++i)
    constraints += std::to_string(i) + ",";
  constraints += "r,r,r,r,l,r";
  SmallVector<Type> f32s(numAcc, b.getF32Type());
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), f32s);
  SmallVector<Value> operands(acc.begin(), acc.end());
  operands.append(a.begin(), a.end());
  operands.push_back(descB);
  operands.push_back(l.i32(1));
  auto asmOp = LLVM::InlineAsmOp::create(
      b, l.loc, resultType, operands, asmText, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> result;
  for (int64_t i = 0; i < numAcc; ++i)
    result.push_back(
        LLVM::ExtractValueOp::create(b, l.loc, asmOp.getResult(0), i));
  return result;
}

LogicalResult lowerMma(Lowering &l, MmaOp op) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  auto resultType = cast<RegTileType>(op.getType());
  FragmentShape shape = l.fragmentShape(resultType);
  int64_t n = resultType.getShape()[1];
  int64_t accPerSlice = shape.nBlocks * 4;
  const SmemBuffer &bBuffer = l.buffers[op.getB()];
  bool transposeB = op.getTransposeB();
  int64_t k = transposeB ? bBuffer.type.getCols() : bBuffer.type.getRows();
  // A k step is 32 bytes of a K-major row: 16 elements, or 32 of FP8.
  Type element = bBuffer.type.getElementType();
  int64_t kStep = operandKStep(element);
  int64_t kSteps = k / kStep;
  bool aInRegisters = isa<RegTileType>(op.getA().getType());

  SmallVector<Value> acc;
  if (op.getAcc())
    acc = l.tiles[op.getAcc()];
  else
    acc.assign(shape.mTiles * accPerSlice, l.f32(0.0f));

  // This warp's warpgroup computes the 64-row slices starting at
  // 64 * (warp / 4) + 16 * W * t.
  Value groupRow =
      arith::MulIOp::create(b, l.loc, l.warpgroupIndex(), l.i32(kWgmmaRows));

  // Descriptor of B's first k step; every other step adds a constant. A
  // K-major operand's leading offset is unused (1 by convention).
  SwizzleGeometry gB(bBuffer.type);
  Value descBBase =
      transposeB ? makeDescriptor(l, l.bufferOffset(bBuffer, 0), gB,
                                  /*leadingBytes=*/16, kAtomRows * gB.rowBytes)
                 : makeDescriptor(l, l.bufferOffset(bBuffer, 0), gB,
                                  gB.panelBytes, kAtomRows * gB.rowBytes);
  int64_t bStepsPerPanel = gB.panelCols / kStep;

  NVVM::WgmmaFenceAlignedOp::create(b, l.loc);
  for (int64_t t = 0; t < shape.mTiles; ++t) {
    SmallVector<Value> slice(acc.begin() + t * accPerSlice,
                             acc.begin() + (t + 1) * accPerSlice);
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      Value descB;
      if (transposeB) {
        // B = K [N, D], K-major: the panel of step ks, 32 bytes per k step
        // inside it.
        int64_t offset = (ks / bStepsPerPanel) * gB.panelBytes +
                         (ks % bStepsPerPanel) * kKStepBytes;
        descB = addToDescriptor(l, descBBase, offset);
      } else {
        // B = V [K, N], MN-major: 16 k-rows per step, panels `rows * S`
        // bytes apart along N.
        int64_t offset = ks * kKStep * gB.rowBytes;
        descB = addToDescriptor(l, descBBase, offset);
      }
      if (aInRegisters) {
        const SmallVector<Value> &regs = l.tiles[op.getA()];
        int64_t base = (t * kSteps + ks) * 4;
        slice = wgmmaRegisterA(l, slice, ArrayRef(regs).slice(base, 4), descB,
                               n, !transposeB, element);
        continue;
      }
      // A from shared memory, K-major.
      const SmemBuffer &aBuffer = l.buffers[op.getA()];
      SwizzleGeometry gA(aBuffer.type);
      int64_t aStepsPerPanel = gA.panelCols / kStep;
      Value rowOffset = arith::MulIOp::create(
          b, l.loc,
          arith::AddIOp::create(b, l.loc, groupRow,
                                l.i32(16 * l.numWarps() * t)),
          l.i32(gA.rowBytes));
      int64_t panelOffset = (ks / aStepsPerPanel) * gA.panelBytes +
                            (ks % aStepsPerPanel) * kKStepBytes;
      Value aOffset = arith::AddIOp::create(
          b, l.loc, rowOffset, l.bufferOffset(aBuffer, panelOffset));
      Value descA = makeDescriptor(l, aOffset, gA, 16, kAtomRows * gA.rowBytes);
      SmallVector<Type> f32s(accPerSlice, b.getF32Type());
      auto structType = LLVM::LLVMStructType::getLiteral(ctx, f32s);
      Value inout = LLVM::PoisonOp::create(b, l.loc, structType);
      for (int64_t i = 0; i < accPerSlice; ++i)
        inout = LLVM::InsertValueOp::create(b, l.loc, inout, slice[i], i);
      bool zeroInit = !op.getAcc() && ks == 0;
      NVVM::WGMMATypes type = isa<Float8E4M3FNType>(element)
                                  ? NVVM::WGMMATypes::e4m3
                              : element.isBF16() ? NVVM::WGMMATypes::bf16
                                                 : NVVM::WGMMATypes::f16;
      Value out = NVVM::WgmmaMmaAsyncOp::create(
          b, l.loc, structType, inout, descA, descB,
          NVVM::MMAShapeAttr::get(ctx, kWgmmaRows, n, kStep),
          NVVM::WGMMATypesAttr::get(ctx, type),
          NVVM::WGMMATypesAttr::get(ctx, type),
          NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
          NVVM::WGMMAScaleOutAttr::get(ctx, zeroInit ? NVVM::WGMMAScaleOut::zero
                                                     : NVVM::WGMMAScaleOut::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          NVVM::MMALayoutAttr::get(ctx, transposeB ? NVVM::MMALayout::col
                                                   : NVVM::MMALayout::row),
          NVVM::MMAIntOverflowAttr());
      for (int64_t i = 0; i < accPerSlice; ++i)
        slice[i] = LLVM::ExtractValueOp::create(b, l.loc, out, i);
    }
    std::copy(slice.begin(), slice.end(), acc.begin() + t * accPerSlice);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l.loc);
  // An asynchronous MMA stays in flight until its attn.mma_wait.
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, l.loc, 0);
  l.tiles[op] = acc;
  return success();
}

/// `value + offset` (i64) that LLVM cannot hoist out of the loop: the dQ
/// GEMM's descriptors are loop-invariant, and a dozen of them held across
/// the loop beside dK and dV would spill.
Value addInLoop(Lowering &l, Value value, int64_t offset) {
  if (offset == 0)
    return value;
  return LLVM::InlineAsmOp::create(
             l.b, l.loc, l.b.getI64Type(), ValueRange{value, l.i64(offset)},
             "add.s64 $0, $1, $2;", "=l,l,l", /*has_side_effects=*/true,
             /*is_align_stack=*/false, LLVM::TailCallKind::None,
             LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

/// Whether this thread issues its consumer warpgroup's TMA stores and
/// reductions (and waits for them): lane 0 of the warpgroup's first warp.
Value issuesWarpgroupCopies(Lowering &l) {
  OpBuilder &b = l.b;
  Value firstWarp = arith::CmpIOp::create(
      b, l.loc, arith::CmpIPredicate::eq,
      arith::AndIOp::create(b, l.loc, l.warp, l.i32(kWarpgroupWarps - 1)),
      l.i32(0));
  Value firstLane = arith::CmpIOp::create(b, l.loc, arith::CmpIPredicate::eq,
                                          l.lane, l.i32(0));
  return arith::AndIOp::create(b, l.loc, firstWarp, firstLane);
}

/// How the one-kernel backward's W consumer warpgroups split dQ^T = K^T
/// dS^T (D x Bq) into W blocks of 64 head-dim rows by `width` queries:
/// block (chunk, part) of warpgroup w = (w / G, w % G), G = W / (D / 64).
struct DqSplit {
  int64_t warpgroups, chunks, groups, width;
  Value wg, chunk, part;
};

FailureOr<DqSplit> splitDq(Lowering &l, Operation *op, int64_t headDim,
                           int64_t queries) {
  OpBuilder &b = l.b;
  DqSplit split;
  split.warpgroups = l.numWarps() / kWarpgroupWarps;
  split.chunks = headDim / kWgmmaRows;
  if (split.chunks == 0 || split.chunks > split.warpgroups ||
      split.warpgroups % split.chunks != 0)
    return op->emitOpError()
           << "splits dQ^T into one 64-row block per consumer warpgroup: a "
              "head dim of "
           << headDim << " needs " << split.chunks
           << " warpgroups' worth, this kernel has " << split.warpgroups;
  split.groups = split.warpgroups / split.chunks;
  split.width = queries / split.groups;
  if (queries % split.groups != 0 || split.width % 8 != 0)
    return op->emitOpError()
           << "gives each of " << split.warpgroups << " warpgroups " << queries
           << " / " << split.groups << " queries: not a multiple of 8";
  split.wg = l.warpgroupIndex();
  split.chunk = arith::DivUIOp::create(b, l.loc, split.wg, l.i32(split.groups));
  split.part = arith::RemUIOp::create(b, l.loc, split.wg, l.i32(split.groups));
  return split;
}

void namedBarrier(Lowering &l, Value id, int64_t threads) {
  NVVM::BarrierOp::create(l.b, l.loc, TypeRange{}, id, l.i32(threads), {},
                          Value());
}

/// attn.dq_mma: each warpgroup's block (DqSplit) is one wgmma chain over
/// all Bk keys, A = K^T (the K tile read MN-major, panel `chunk`), B = dS^T
/// (MN-major, the panels of queries `part * width`).
///
/// Barrier: all consumers, after every warpgroup wrote its dS^T rows (the
/// writers fenced them for the async proxy). The thread that issues its
/// warpgroup's TMA reductions waits for the previous attn.accumulate_dq's
/// to have read the stage before it, so the TMA reads it while the step
/// runs and the barrier tells the warpgroup the stage is free.
LogicalResult lowerDqMma(Lowering &l, DqMmaOp op) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  const SmemBuffer &kBuffer = l.buffers[op.getK()];
  const SmemBuffer &dsBuffer = l.buffers[op.getDs()];
  SwizzleGeometry gK(kBuffer.type), gS(dsBuffer.type);
  int64_t keys = dsBuffer.type.getRows();
  auto blockType = cast<RegTileType>(op.getType());
  FailureOr<DqSplit> split =
      splitDq(l, op, kBuffer.type.getCols(), dsBuffer.type.getCols());
  if (failed(split))
    return failure();
  int64_t width = split->width;
  if (width % gS.panelCols != 0 || blockType.getShape()[1] != width ||
      blockType.getRows() != split->warpgroups * kWgmmaRows)
    return op.emitOpError()
           << "gives each of " << split->warpgroups << " warpgroups " << width
           << " queries: 'ds' needs panels of at most " << width
           << " columns and the result " << split->warpgroups * kWgmmaRows
           << "x" << width << "; got " << dsBuffer.type << " and " << blockType;
  int64_t numAcc = width / 2;
  int64_t consumers = split->warpgroups * kWarpgroupThreads;
  Value chunk = split->chunk, part = split->part;
  // The previous call's reduction has read this warpgroup's stage rows
  // (its issuing thread waits here, not at the end of that call, so the
  // TMA reads under the step's GEMMs); the barrier passes that on.
  l.emitIf(issuesWarpgroupCopies(l), [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(b, l.loc, 0, UnitAttr::get(ctx));
  });
  namedBarrier(l, l.i32(kAllConsumersDsBarrier), consumers);

  Value aBase = arith::AddIOp::create(
      b, l.loc, l.bufferOffset(kBuffer, 0),
      arith::MulIOp::create(b, l.loc, chunk, l.i32(gK.panelBytes)));
  Value bBase = arith::AddIOp::create(
      b, l.loc, l.bufferOffset(dsBuffer, 0),
      arith::MulIOp::create(b, l.loc, part,
                            l.i32(width / gS.panelCols * gS.panelBytes)));
  Value descA0 = makeDescriptor(l, aBase, gK, gK.panelBytes,
                                kAtomRows * gK.rowBytes);
  Value descB0 = makeDescriptor(l, bBase, gS, gS.panelBytes,
                                kAtomRows * gS.rowBytes);
  SmallVector<Type> f32s(numAcc, b.getF32Type());
  auto structType = LLVM::LLVMStructType::getLiteral(ctx, f32s);
  NVVM::WGMMATypes type = l.elementType.isBF16() ? NVVM::WGMMATypes::bf16
                                                 : NVVM::WGMMATypes::f16;
  NVVM::WgmmaFenceAlignedOp::create(b, l.loc);
  Value acc = LLVM::PoisonOp::create(b, l.loc, structType);
  for (int64_t i = 0; i < numAcc; ++i)
    acc = LLVM::InsertValueOp::create(b, l.loc, acc, l.f32(0.0f), i);
  for (int64_t ks = 0; ks < keys / kKStep; ++ks) {
    // Both operands MN-major: a k16 step is 16 rows further.
    Value descA = addInLoop(l, descA0, (ks * kKStep * gK.rowBytes) >> 4);
    Value descB = addInLoop(l, descB0, (ks * kKStep * gS.rowBytes) >> 4);
    acc = NVVM::WgmmaMmaAsyncOp::create(
        b, l.loc, structType, acc, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, kWgmmaRows, width, 16),
        NVVM::WGMMATypesAttr::get(ctx, type),
        NVVM::WGMMATypesAttr::get(ctx, type),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, ks == 0 ? NVVM::WGMMAScaleOut::zero
                                                  : NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, l.loc);
  // An asynchronous product stays in flight until its attn.mma_wait.
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, l.loc, 0);
  SmallVector<Value> values;
  for (int64_t i = 0; i < numAcc; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, l.loc, acc, i));
  l.tiles[op] = values;
  return success();
}

/// attn.accumulate_dq: after a barrier of all consumers (every wgmma has
/// read dS^T: the next step writes it again), each warpgroup writes its
/// block, transposed back to [queries x 64] rows, into its rows of the f32
/// stage tile (128-byte swizzle: two panels of 32 columns), and its first
/// thread adds each panel into dQ's accumulator with one TMA reduction,
/// after a barrier of the warpgroup's own. The reduction is waited for by
/// the next attn.dq_mma's issuing thread, the last one by the
/// attn.tma_store_wait that attn-warp-specialize puts after the loop.
LogicalResult lowerAccumulateDq(Lowering &l, AccumulateDqOp op) {
  OpBuilder &b = l.b;
  MLIRContext *ctx = b.getContext();
  const SmemBuffer &stageBuffer = l.buffers[op.getStage()];
  SwizzleGeometry gT(stageBuffer.type);
  auto blockType = cast<RegTileType>(op.getBlock().getType());
  int64_t headDim = cast<MemRefType>(op.getDst().getType()).getShape().back();
  int64_t width = blockType.getShape()[1];
  FailureOr<DqSplit> split = splitDq(l, op, headDim,
                                     width * (l.numWarps() / kWarpgroupWarps) /
                                         (headDim / kWgmmaRows));
  if (failed(split))
    return failure();
  if (split->width != width ||
      stageBuffer.type.getRows() != split->warpgroups * width)
    return op.emitOpError() << "'stage' needs " << split->warpgroups * width
                            << " rows for blocks of " << width
                            << " queries, got " << stageBuffer.type;
  int64_t consumers = split->warpgroups * kWarpgroupThreads;
  Value wg = split->wg, chunk = split->chunk, part = split->part;
  SmallVector<Value> acc = l.tiles[op.getBlock()];
  namedBarrier(l, l.i32(kAllConsumersDsBarrier), consumers);

  // The stage: element (query c, head-dim r) of the block at row
  // w * width + c, column r, in panels of 32 columns whose 16-byte chunks
  // are XORed with the row % 8. The fragment's r = 16 (warp % 4) + lane / 4
  // + 8h and c = 8n + 2 (lane % 4) + e: its panel, its row % 8 and its
  // chunk's bits other than bit 1 (8h) do not depend on n, so four bases
  // per thread (e, h) and an immediate 1024 n address every value.
  Value warpInGroup = arith::AndIOp::create(b, l.loc, l.warp, l.i32(3));
  Value quad = arith::AndIOp::create(b, l.loc, l.lane, l.i32(3));
  Value laneRow = arith::ShRUIOp::create(b, l.loc, l.lane, l.i32(2));
  Value r0 = arith::AddIOp::create(
      b, l.loc, arith::MulIOp::create(b, l.loc, warpInGroup, l.i32(16)),
      laneRow);
  Value panel = arith::ShRUIOp::create(b, l.loc, r0, l.i32(5));
  Value rowMod = arith::ShLIOp::create(b, l.loc, quad, l.i32(1));
  Value chunk0 = arith::AndIOp::create(
      b, l.loc, arith::ShRUIOp::create(b, l.loc, r0, l.i32(2)), l.i32(7));
  Value threadBase = arith::AddIOp::create(
      b, l.loc,
      arith::AddIOp::create(
          b, l.loc,
          arith::MulIOp::create(b, l.loc, panel, l.i32(gT.panelBytes)),
          arith::MulIOp::create(
              b, l.loc,
              arith::AddIOp::create(
                  b, l.loc, arith::MulIOp::create(b, l.loc, wg, l.i32(width)),
                  rowMod),
              l.i32(gT.rowBytes))),
      arith::ShLIOp::create(
          b, l.loc, arith::AndIOp::create(b, l.loc, r0, l.i32(3)), l.i32(2)));
  threadBase =
      arith::AddIOp::create(b, l.loc, threadBase, l.bufferOffset(stageBuffer, 0));
  for (int64_t e = 0; e < 2; ++e)
    for (int64_t h = 0; h < 2; ++h) {
      Value swizzled = arith::XOrIOp::create(
          b, l.loc, chunk0,
          arith::XOrIOp::create(b, l.loc, rowMod, l.i32(e | (2 * h))));
      Value base = arith::AddIOp::create(
          b, l.loc, threadBase,
          arith::AddIOp::create(
              b, l.loc, arith::ShLIOp::create(b, l.loc, swizzled, l.i32(4)),
              l.i32(e * gT.rowBytes)));
      for (int64_t n = 0; n < width / 8; ++n) {
        Value value = acc[4 * n + e + 2 * h];
        Value addr = arith::AddIOp::create(b, l.loc, base,
                                           l.i32(n * 8 * gT.rowBytes));
        LLVM::StoreOp::create(b, l.loc, value, l.smemPtr(addr),
                              /*alignment=*/4);
      }
    }
  NVVM::FenceProxyOp::create(
      b, l.loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  namedBarrier(l, arith::AddIOp::create(b, l.loc, wg, l.i32(kFirstDsBarrier)),
               kWarpgroupThreads);

  // One TMA reduction per panel of the warpgroup's rows; rows past N are
  // clipped by the TMA.
  Value descriptor = l.params.tma[static_cast<int>(Tensor::DqAccum)];
  TileRows rows = l.tileRows(Tensor::DqAccum, op.getBatch(), op.getCol());
  Value head = l.toI32(l.scalar(op.getHead()));
  Value firstRow = arith::AddIOp::create(
      b, l.loc, rows.row, arith::MulIOp::create(b, l.loc, part, l.i32(width)));
  Value rowsOffset = arith::MulIOp::create(
      b, l.loc, arith::MulIOp::create(b, l.loc, wg, l.i32(width)),
      l.i32(gT.rowBytes));
  l.emitIf(issuesWarpgroupCopies(l), [&] {
    for (int64_t p = 0; p < stageBuffer.type.getNumPanels(); ++p) {
      Value src = l.smemPtr(arith::AddIOp::create(
          b, l.loc, l.bufferOffset(stageBuffer, p * gT.panelBytes),
          rowsOffset));
      Value col = arith::AddIOp::create(
          b, l.loc, arith::MulIOp::create(b, l.loc, chunk, l.i32(kWgmmaRows)),
          l.i32(p * gT.panelCols));
      NVVM::CpAsyncBulkTensorReduceOp::create(
          b, l.loc, descriptor, src, NVVM::TMAReduxKind::ADD,
          NVVM::TMAStoreMode::TILE, ValueRange{col, firstRow, head, rows.batch},
          Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, l.loc);
  });
  return success();
}

} // namespace


//===----------------------------------------------------------------------===//
// The epilogue through shared memory
//===----------------------------------------------------------------------===//

/// Whether this thread issues its consumer warpgroup's TMA stores (and waits
/// for them): lane 0 of the warpgroup's first warp.
static Value issuesWarpgroupStores(Lowering &l) {
  return issuesWarpgroupCopies(l);
}

static LogicalResult lowerTmaStore(Lowering &l, TmaStoreOp op) {
  OpBuilder &b = l.b;
  std::optional<Tensor> role = tmaRoleOf(l, op.getDst());
  if (!role)
    return op->emitOpError("stores to a tensor the kernel has no TMA "
                           "descriptor for (its ABI gives one to each "
                           "stored kernel argument)");
  Value descriptor = l.params.tma[static_cast<int>(*role)];
  const SmemBuffer &buffer = l.buffers[op.getBuffer()];
  SwizzleGeometry g(buffer.type);
  // The warpgroup's rows: a box of 64 rows per panel, from row 64 * wg.
  Value wg = l.warpgroupIndex();
  Value rowsOffset =
      arith::MulIOp::create(b, l.loc, wg, l.i32(kWarpgroupRows * g.rowBytes));
  // A packed tensor's descriptor is {D, total, H}: its rows from the
  // sequence's start, no batch coordinate.
  TileRows tileRows = l.tileRows(*role, op.getBatch(), op.getRow());
  Value row = arith::AddIOp::create(
      b, l.loc, tileRows.row,
      arith::MulIOp::create(b, l.loc, wg, l.i32(kWarpgroupRows)));
  Value head = l.toI32(l.scalar(op.getHead()));
  l.emitIf(issuesWarpgroupStores(l), [&] {
    for (int64_t p = 0; p < buffer.type.getNumPanels(); ++p) {
      Value src = l.smemPtr(arith::AddIOp::create(
          b, l.loc, l.bufferOffset(buffer, p * g.panelBytes), rowsOffset));
      SmallVector<Value> coords = {l.i32(p * g.panelCols), row, head};
      if (tileRows.batch)
        coords.push_back(tileRows.batch);
      NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
          b, l.loc, descriptor, src, coords, Value(), NVVM::TMAStoreMode::TILE,
          Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, l.loc);
  });
  return success();
}

static LogicalResult lowerTmaStoreWait(Lowering &l, TmaStoreWaitOp op) {
  l.emitIf(issuesWarpgroupStores(l), [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(l.b, l.loc,
                                         static_cast<uint32_t>(op.getPending()),
                                         UnitAttr::get(l.b.getContext()));
  });
  return success();
}

void mlir::attn::populateSm90Lowerings(LoweringTable &table) {
  table.prologue = lowerPrologue;
  table.add<CopyAsyncOp>(lowerCopy).checkedBy(
      [](Operation *op, const KernelFacts &facts) -> LogicalResult {
        auto copy = cast<CopyAsyncOp>(op);
        if (copy.getTranspose())
          return op->emitOpError("transposes bytes, which no TMA does: run "
                                 "attn-multibuffer and attn-transpose-v "
                                 "(a staging pipe and transposing warps)");
        return checkCopySource(op, copy.getSrc(), copy.getPages(), facts,
                               "copies from the kernel's q, k or v argument "
                               "(or a backward kernel's dout) only");
      });
  table.add<WaitOp>(lowerWait);
  table.add<MmaOp>(lowerMma);
  table.add<DqMmaOp>(lowerDqMma);
  table.add<AccumulateDqOp>(lowerAccumulateDq).checkedBy(checkAccumulateDq);
  table.add<MmaWaitOp>(lowerMmaWait);
  table.add<PipeAcquireOp>(lowerPipeAcquire);
  table.add<PipeLoadOp>(lowerPipeLoad).checkedBy(
      [](Operation *op, const KernelFacts &facts) -> LogicalResult {
        auto load = cast<PipeLoadOp>(op);
        if (load.getTranspose())
          return op->emitOpError("transposes bytes, which no TMA does: run "
                                 "attn-transpose-v (a staging pipe and the "
                                 "producer warpgroup's transposing warps)");
        return checkCopySource(op, load.getSrc(), load.getPages(), facts,
                               "loads from the kernel's q, k or v argument "
                               "only");
      });
  table.add<PipeWaitOp>(lowerPipeWait);
  table.add<PipeReleaseOp>(lowerPipeRelease);
  table.add<PipeTransposeOp>(lowerPipeTranspose);
  table.add<ZeroRowsOp>(lowerZeroRows);
  table.add<TmaStoreOp>(lowerTmaStore).checkedBy(
      [](Operation *op, const KernelFacts &facts) {
        return facts.expect(op, cast<TmaStoreOp>(op).getDst(), {Tensor::O},
                            "must write the kernel's \"o\" argument");
      });
  table.add<TmaStoreWaitOp>(lowerTmaStoreWait);
}
