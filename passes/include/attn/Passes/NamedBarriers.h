//===- NamedBarriers.h - who owns which hardware barrier -------*- C++ -*-===//
//
// A CTA has 16 hardware barriers (bar.sync / bar.arrive ids 0..15). Every
// pass that creates named barriers takes its ids from here, so no two
// schedules collide:
//
//   id 0        the CTA barrier (bar.sync 0: attn.wait, kernel prologue)
//   ids 1..3    attn-pingpong: one per consumer warpgroup
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
static_assert(kFirstPingpongBarrier + kMaxPingpongBarriers <=
                  kNumHardwareBarriers,
              "barrier ids overflow the hardware's 16");
} // namespace mlir::attn

#endif // ATTN_PASSES_NAMEDBARRIERS_H
