//===- TileConfig.h - tile sizes per spec and target -----------*- C++ -*-===//
#ifndef ATTN_PASSES_TILECONFIG_H
#define ATTN_PASSES_TILECONFIG_H

#include "attn/Dialect/AttnDialect.h"
#include "llvm/Support/Error.h"

namespace mlir::attn {

/// Tile sizes and thread organisation of one kernel.
struct TileConfig {
  int64_t blockM = 0;   ///< query rows per CTA
  int64_t blockN = 0;   ///< key/value rows per loop iteration
  int64_t numWarps = 0; ///< warps per CTA (the consumer warps when
                        ///< warp-specialized)
  int64_t stages = 0;   ///< K/V pipe stages (0: single buffers, no pipes)
  /// attn-causal-blocks peels the unmasked blocks into their own loop
  /// (false: one loop, the mask under a branch, so a software-pipelined
  /// loop never drains between them).
  bool peelMaskedBlocks = true;
  /// CTAs per SM the kernel asks ptxas to allow for (.minnctapersm): 1, the
  /// tile shape decides occupancy and ptxas allocates the registers the
  /// kernel needs instead of capping some small kernels near 96 or 128 and
  /// spilling.
  int64_t minCtasPerSm = 1;
};

//===----------------------------------------------------------------------===//
// Shared-memory layout of the Q, K and V tiles (docs/DESIGN.md, "Head dims")
//===----------------------------------------------------------------------===//
//
// A head dimension D (a multiple of 8) is padded inside the kernel to
// C = D rounded up to 16, the MMA's k step; columns D..C-1 are zero in
// shared memory (TMA's out-of-bounds fill on sm_90a; zeroed once at entry
// on sm_80) and never read from global memory. The tile
// is stored in the widest swizzle whose panel divides C, so every panel is
// whole (TMA boxes, wgmma atoms) and no column beyond C costs shared memory:
//
//   D = 128, 192, 256   C = D   128-byte swizzle, C/64 panels of 64 columns
//   D =  96, 160, 224   C = D    64-byte swizzle, C/32 panels of 32 columns
//   D =  80, 112, 144   C = D    32-byte swizzle, C/16 panels of 16 columns
//   D =  40 (C = 48)             32-byte swizzle, 3 panels; column 40..47 = 0
//
//   d96, 64-byte swizzle:   panel 0        panel 1        panel 2
//                          cols 0..31     cols 32..63    cols 64..95
//                          rows x 64 B    rows x 64 B    rows x 64 B
//   d40, 32-byte swizzle:   cols 0..15  cols 16..31  cols 32..47 (40..47 = 0)

/// Columns of the Q, K and V shared-memory tiles for head dimension D.
int64_t smemTileCols(int64_t headDim);

/// Swizzle span (bytes) of a shared-memory tile of `cols` columns of
/// `elementBytes` each: the widest of 128, 64 and 32 whose panel (span /
/// elementBytes columns) divides it.
int64_t smemTileSwizzle(int64_t cols, int64_t elementBytes = 2);

/// The swizzle all of a kernel's Q, K, V and O tiles share: the runtime
/// encodes every TMA descriptor of a kernel with one panel width (docs/
/// ABI.md). The widest that divides both the head dim's and V's padded
/// tiles (headDimV 0: the head dim).
int64_t kernelTileSwizzle(int64_t headDim, int64_t headDimV = 0);

/// Columns of the output accumulator O: D on sm_80 (mma.sync computes
/// 8-column blocks), the padded tile width on sm_90a (wgmma reads the
/// N-major V in whole swizzle panels); the store writes D of them.
int64_t outputAccumulatorCols(TargetKind target, int64_t headDim);

/// Whether the backward's dkdv kernel runs its query loop twice, dV's
/// GEMMs in the first pass and dK's in the second: above the head dim where
/// both f32 accumulators (D registers a thread together) and the step's
/// S^T and dP^T tiles no longer fit one warpgroup's registers. `plain`: no
/// mask, soft cap, ALiBi or packed batch, each of which keeps more live.
bool dkdvTakesTwoPasses(TargetKind target, int64_t headDim, bool plain);

/// The default configuration for a head dimension, mask and target, and
/// whether the kernel will be warp-specialized (sm_90a). `causal` is true
/// for every mask around a diagonal (causal or a sliding window): both keep
/// per-row limits live and mask edge blocks; `window` says the mask has a
/// window side beyond the causal diagonal (its lowering differs);
/// `fixedMaxSoftcap` that the scores are soft-capped for a fixed-max softmax
/// (isFixedMaxSoftcap), whose MUFU-bound softmax wants shorter phases.
TileConfig chooseTileConfig(TargetKind target, int64_t headDim, bool causal,
                            bool warpSpecialized = false, bool window = false,
                            bool fixedMaxSoftcap = false);

/// FP8 (e4m3, sm_90a warp-specialized) tiles for head dim 64, 128 or 256:
/// key blocks of 128 (whole 128-byte panels of the transposed V, four k32
/// steps of the P V wgmma).
TileConfig chooseFp8TileConfig(int64_t headDim);

/// Bytes of one Q/K/V element of `dtype`: 1 for e4m3, else 2.
inline int64_t elementBytesOf(DType dtype) {
  return dtype == DType::e4m3 ? 1 : 2;
}

/// `config` with every positive override (block-m, block-n, warps, stages)
/// in place of its own.
TileConfig withOverrides(TileConfig config, int64_t blockM, int64_t blockN,
                         int64_t numWarps, int64_t stages);

/// The default configuration with every positive override applied.
TileConfig resolveTileConfig(TargetKind target, int64_t headDim, bool causal,
                             int64_t blockM, int64_t blockN, int64_t numWarps,
                             bool warpSpecialized = false, int64_t stages = 0,
                             bool window = false, bool fixedMaxSoftcap = false);

/// Checks a (possibly user-overridden) configuration against what the target's
/// code generator supports, and returns an error that says what to change.
/// `smemLimit` > 0 caps the target's shared memory (a GPU that allows less,
/// as an RTX 4090's 99 KB under sm_80).
llvm::Error checkTileConfig(const TileConfig &config, TargetKind target,
                            int64_t headDim, int64_t smemLimit = 0,
                            int64_t elementBytes = 2);

/// `config` with its K/V stages, then its query block (and warps), then its
/// key block given back until its shared memory fits `smemLimit` bytes;
/// the `keep*` flags protect what the caller chose. Unchanged when it fits
/// (or when nothing more can be given back: checkTileConfig then says so).
TileConfig fitSharedMemory(TileConfig config, int64_t headDim,
                           int64_t smemLimit, bool keepStages, bool keepBlockM,
                           bool keepBlockN);

/// Registers one thread may use (the PTX ISA limit); a kernel needing more
/// spills to local memory.
constexpr int64_t kMaxRegistersPerThread = 255;

/// A rough estimate of the 32-bit registers per thread the kernel of
/// `config` keeps live in its key/value loop (see TileConfig.cpp for the
/// heuristic). Used to warn about overrides that obviously spill; the
/// defaults stay below kMaxRegistersPerThread.
int64_t estimateRegistersPerThread(const TileConfig &config, int64_t headDim);

/// Shared-memory layout of a tile program (codegen places buffers by it):
/// each tile starts on a 1024-byte boundary (the 128-byte swizzle atom),
/// then one 8-byte mbarrier per tile, plus 1024 bytes of slack to align
/// the dynamic shared-memory base at run time.
constexpr int64_t kSmemTileAlignment = 1024;
constexpr int64_t kMbarrierBytes = 8;

/// One shared-memory allocation of a tile program: a buffer (`stages` 0,
/// one mbarrier) or a pipe of `stages` buffers (a full and an empty mbarrier
/// per stage).
struct SmemAllocation {
  int64_t tileBytes = 0;
  int64_t stages = 0;
};

/// Dynamic shared memory (bytes) of that layout for these allocations.
int64_t sharedMemoryLayoutBytes(llvm::ArrayRef<SmemAllocation> allocations);

/// A kernel's shared-memory tiles in allocation order, as that layout takes
/// them: each attn.alloc_smem (one buffer) and attn.create_pipe (its stages)
/// under `kernel`, with its entry. attn-to-nvvm places them so; passes that
/// add a tile ask the layout's size with it.
llvm::SmallVector<std::pair<Value, SmemAllocation>>
smemAllocationsOf(Operation *kernel);

/// Shared memory (bytes) the kernel of `config` needs: Q, K and V tiles
/// (with `config.stages` > 0, pipes: Q `qStages` (attn-prefetch-q: 2), K
/// and V `stages` each), and with `outputTile` a 16-bit O tile of Q's shape
/// after them (attn-tma-store); Q, K and V of `elementBytes` each.
int64_t sharedMemoryBytes(const TileConfig &config, int64_t headDim,
                          bool outputTile = false, int64_t elementBytes = 2,
                          int64_t qStages = 1);

/// The most dynamic shared memory one CTA may use on the target.
int64_t maxSharedMemoryBytes(TargetKind target);

//===--- KV-cache (decoding) kernels: KvCacheTileConfig.cpp ----------------===//

/// The default configuration of an attn.attention_kvcache kernel: 64 query
/// rows (one wgmma slice, or one 16-row slice per warp on sm_80) so that a
/// decoding step's few rows are not mostly padding, and key blocks as long
/// as the shared memory allows for a deep K/V pipe (the kernel streams the
/// cache from memory). A paged cache's `pageSize` (0: contiguous) narrows
/// the key block to one that lies in a page or covers whole pages. FP8
/// caches (`elementBytes` 1) take 128-key blocks.
TileConfig chooseKvCacheTileConfig(TargetKind target, int64_t headDim,
                                   int64_t pageSize, int64_t elementBytes = 2);

/// chooseKvCacheTileConfig with every positive override applied; a key block
/// override must still fit the pages.
TileConfig resolveKvCacheTileConfig(TargetKind target, int64_t headDim,
                                    int64_t pageSize, int64_t blockM,
                                    int64_t blockN, int64_t numWarps,
                                    int64_t stages, int64_t elementBytes = 2);

/// checkTileConfig plus what a KV-cache kernel needs: `headPack` heads of
/// whole 8-row groups in block_m, and key blocks that fit `pageSize`.
llvm::Error checkKvCacheTileConfig(const TileConfig &config, TargetKind target,
                                   int64_t headDim, int64_t pageSize,
                                   int64_t headPack, int64_t elementBytes = 2);

/// Whether a key block of `blockN` rows fits pages of `pageSize` rows (0:
/// no pages): it lies in one page or covers whole pages.
bool fitsPages(int64_t blockN, int64_t pageSize);

/// The longest key block of whole 16-row steps up to `blockN` that fits the
/// pages (16 always does: pages are multiples of 16).
int64_t fitToPages(int64_t blockN, int64_t pageSize);

/// The tile of a split-KV combine kernel: the split kernel's rows (so its
/// head packing tiles them the same way) over 4 warps.
TileConfig combineTileConfig(int64_t blockM);

} // namespace mlir::attn

#endif // ATTN_PASSES_TILECONFIG_H
