//===- NamedBarriers.h - who owns which hardware barrier -------*- C++ -*-===//
//
// A CTA has 16 hardware barriers (bar.sync / bar.arrive ids 0..15). Every
// pass that creates named barriers takes its ids from here, so no two
// schedules collide:
//
//   id 0        the CTA barrier (bar.sync 0: attn.wait, kernel prologue)
//   ids 1..3    attn-pingpong: one per consumer warpgroup
//   ids 4..6    zeroed value rows (attn.pipe_wait zero_from, KV caches):
//               one per consumer warpgroup
//   ids 7..9    attn-tma-store: a warpgroup's output buffer is free, then
//               written; one per consumer warpgroup
//   ids 10..12  attn.accumulate_dq: a warpgroup's dQ block staged for
//               its TMA reduction; one per consumer warpgroup
//   id 13       attn.accumulate_dq: every consumer wrote its dS^T rows,
//               then every wgmma read them
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_PASSES_NAMEDBARRIERS_H
#define ATTN_PASSES_NAMEDBARRIERS_H

#include <cstdint>

namespace mlir::attn {
constexpr int64_t kNumHardwareBarriers = 16;
constexpr int64_t kCtaBarrier = 0;
/// First of the pingpong barriers; consumer warpgroup w waits on id
/// kFirstPingpongBarrier + w.
constexpr int64_t kFirstPingpongBarrier = 1;
constexpr int64_t kMaxPingpongBarriers = 3;
/// First of the barriers that order a warpgroup's zeroing of a value
/// tile's rows before its wgmma reads them: warpgroup w uses
/// kFirstZeroRowsBarrier + w.
constexpr int64_t kFirstZeroRowsBarrier =
    kFirstPingpongBarrier + kMaxPingpongBarriers;
constexpr int64_t kMaxZeroRowsBarriers = 3;
/// First of the barriers of the epilogue through shared memory: warpgroup
/// w uses kFirstEpilogueBarrier + w.
constexpr int64_t kFirstEpilogueBarrier =
    kFirstZeroRowsBarrier + kMaxZeroRowsBarriers;
constexpr int64_t kMaxEpilogueBarriers = 3;
/// First of the barriers of attn.accumulate_dq: warpgroup w uses
/// kFirstDsBarrier + w.
constexpr int64_t kFirstDsBarrier =
    kFirstEpilogueBarrier + kMaxEpilogueBarriers;
constexpr int64_t kMaxDsBarriers = 3;
/// The barrier of all consumer threads around the dQ GEMM's reads of dS^T.
constexpr int64_t kAllConsumersDsBarrier = kFirstDsBarrier + kMaxDsBarriers;
static_assert(kAllConsumersDsBarrier + 1 <=
                  kNumHardwareBarriers,
              "barrier ids overflow the hardware's 16");
} // namespace mlir::attn

#endif // ATTN_PASSES_NAMEDBARRIERS_H
