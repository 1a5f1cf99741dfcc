//===- MultibufferCpAsync.h - attn-multibuffer's sm_80 schedule -*- C++ -*-===//
//
// Phase of attn-multibuffer for sm_80 (MultibufferCpAsync.cpp), run after the
// copied tiles became pipes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_LIB_MULTIBUFFERCPASYNC_H
#define ATTN_PASSES_LIB_MULTIBUFFERCPASYNC_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::attn {

/// Software-pipelines the pipe fills of `func`'s key/value loops for
/// `stages`-deep cp.async rings: every fill moves `stages - 1` blocks ahead
/// (predicated on the block existing, so each fill commits one group on
/// every path), the fills the loops no longer issue go to the prologue,
/// every `attn.pipe_wait` gets its `pending` group count and an
/// `attn.barrier`, and each refill is checked to follow a barrier after the
/// release of the fill it overwrites. Emits a located error and fails on a
/// program it cannot schedule faithfully.
LogicalResult scheduleCpAsyncPipes(func::FuncOp func, int64_t stages);

} // namespace mlir::attn

#endif // ATTN_PASSES_LIB_MULTIBUFFERCPASYNC_H
