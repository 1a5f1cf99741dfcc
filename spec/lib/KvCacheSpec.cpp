//===- KvCacheSpec.cpp - specs of the decoding kernels --------------------===//
#include "KvCacheSpec.h"


#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <fmt/format.h>

using namespace mlir;
using namespace mlir::attn;

/// Pages are whole 16-row MMA k steps; this many rows at most (a sanity
/// bound: real caches use 16 to 512).
static constexpr int64_t kPageRowMultiple = 16;
static constexpr int64_t kMaxPageSize = 1 << 16;
/// Most query heads one tile may pack.
/// Most query heads one tile packs: 8 rows each in a block-m of at most 256.
static constexpr int64_t kMaxHeadPack = 32;

static llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Tiles are chosen and checked for the wider of the two head dims (a value
/// head dim of its own).
static int64_t widestHeadDim(const AttentionSpec &spec) {
  return std::max(spec.headDim, spec.valueHeadDim());
}

TileConfig mlir::attn::kvCacheTileConfig(const AttentionSpec &spec) {
  if (spec.combine)
    return combineTileConfig(spec.blockM > 0 ? spec.blockM : 64);
  return resolveKvCacheTileConfig(spec.target, widestHeadDim(spec), spec.pageSize,
                                  spec.blockM, spec.blockN, spec.numWarps,
                                  spec.stages, elementBytesOf(spec.dtype));
}

llvm::Error mlir::attn::checkPageSize(const AttentionSpec &spec) {
  if (spec.pageSize < 0 || spec.pageSize > kMaxPageSize ||
      spec.pageSize % kPageRowMultiple != 0)
    return fail(fmt::format("page size {} is not supported; use 0 (a "
                            "contiguous cache) or a multiple of 16 up to {}",
                            spec.pageSize, kMaxPageSize));
  return llvm::Error::success();
}

llvm::Error mlir::attn::validateKvCacheSpec(const AttentionSpec &spec) {
  if (!spec.kvCache) {
    // A varlen forward kernel may read a paged K/V too (Validate.cpp).
    if ((spec.pageSize != 0 && !spec.varlen) || spec.splitKv ||
        spec.headPack != 1 || spec.combine)
      return fail("paged K/V, split-KV, head packing and the combine kernel "
                  "belong to KV-cache kernels: set kv_cache (--kv-cache); "
                  "a varlen kernel (--varlen) reads a paged K/V too");
    return checkPageSize(spec);
  }
  if (llvm::Error error = checkPageSize(spec))
    return error;
  if (spec.headPack < 1 || spec.headPack > kMaxHeadPack)
    return fail(fmt::format("head-pack = {} is out of range; use 1 to {} (the "
                            "query heads sharing a key/value head that one "
                            "tile packs, 8 rows each in at most 256)",
                            spec.headPack, kMaxHeadPack));
  // The mask as it will be compiled: window (-1, 0) is causal, and causal
  // forces the right side to 0 (flash_attn's spellings).
  AttentionSpec mask = canonicalSpec(spec);
  if (hasDiagonal(mask) && mask.causalAlign != CausalAlign::bottom_right)
    return fail("a KV-cache kernel aligns its causal diagonal and window "
                "bottom-right, to each sequence's cache_seqlens (as "
                "flash_attn_with_kvcache): set causal_align to bottom-right "
                "(--causal-align=bottom-right)");
  if (spec.exp2EmulatedEighths != 0)
    return fail("a KV-cache kernel computes every exponential on MUFU.EX2: drop "
                "exp2 emulation (--exp2-emulate=0)");
  if (spec.varlen)
    return fail("a KV-cache kernel takes a padded batch of caches with "
                "cache_seqlens, not a packed variable-length one: drop varlen "
                "(--varlen)");
  if (spec.combine && !spec.splitKv)
    return fail("the combine kernel merges a split-KV kernel's partial "
                "results: set split_kv (--split-kv) with it");
  if (spec.persistent.value_or(false))
    return fail("KV-cache kernels are not persistent; drop --persistent");
  TileConfig config = kvCacheTileConfig(spec);
  if (spec.combine) {
    if (config.blockM % (16 * config.numWarps) != 0 ||
        config.blockM % spec.headPack != 0 ||
        (config.blockM / spec.headPack) % 8 != 0)
      return fail(fmt::format(
          "block-m = {} does not suit the combine kernel: a multiple of 64 "
          "with 8 rows or more per packed head (head pack {})",
          config.blockM, spec.headPack));
    return llvm::Error::success();
  }
  return checkKvCacheTileConfig(config, spec.target, widestHeadDim(spec),
                                spec.pageSize, spec.headPack,
                                elementBytesOf(spec.dtype));
}

OwningOpRef<ModuleOp> mlir::attn::buildKvCacheSpecModule(MLIRContext &ctx,
                                                         const AttentionSpec &spec,
                                                         StringRef name) {
  Type element = elementTypeOf(ctx, spec);
  Type f32 = Float32Type::get(&ctx);
  int64_t dyn = ShapedType::kDynamic;
  // Q and K have the head dim; V, O and the partial outputs the value one.
  const int64_t dv = spec.valueHeadDim();
  auto tensorType = MemRefType::get({dyn, dyn, dyn, spec.headDim}, element);
  // FP8 (e4m3) q and caches write a bf16 output.
  const bool fp8 = spec.dtype == DType::e4m3;
  auto outType = MemRefType::get(
      {dyn, dyn, dyn, dv}, fp8 ? Type(BFloat16Type::get(&ctx)) : element);
  auto rowsType = MemRefType::get({dyn, dyn, dyn}, f32);
  auto partialType = MemRefType::get({dyn, dyn, dyn, dv}, f32);
  SmallVector<Type> args;
  if (spec.combine) {
    args = {partialType, rowsType, outType};
    if (spec.withLse)
      args.push_back(rowsType);
  } else {
    // A paged cache [num_blocks, page_size, Hkv, D] has a static page size.
    auto cacheType = [&](int64_t cols) -> Type {
      return MemRefType::get({dyn, spec.pageSize > 0 ? spec.pageSize : dyn,
                              dyn, cols},
                             element);
    };
    Type i32 = IntegerType::get(&ctx, 32);
    args = {tensorType, cacheType(spec.headDim), cacheType(dv), outType,
            MemRefType::get({dyn}, i32)};
    if (spec.pageSize > 0)
      args.push_back(MemRefType::get({dyn, dyn}, i32));
    if (spec.withLse)
      args.push_back(rowsType);
    if (spec.splitKv)
      args.append({partialType, rowsType});
    // ALiBi's slopes, f32 [B, H] (the batch stride may be 0), last.
    if (spec.alibi)
      args.push_back(MemRefType::get({dyn, dyn}, Float32Type::get(&ctx)));
    // FP8's descales of q, k and v, f32 [B, Hkv], after everything else.
    if (fp8)
      args.append(3, MemRefType::get({dyn, dyn}, f32));
  }
  return buildProblemModule(
      ctx, spec, name, args, [&](OpBuilder &b, Location loc, Block &body) {
        auto arg = [&](unsigned i) { return body.getArgument(i); };
        if (spec.combine) {
          createProblemOp<CombineSplitsOp>(
              b, loc,
              {arg(0), arg(1), arg(2), spec.withLse ? arg(3) : Value()}, spec);
          return;
        }
        unsigned next = 5;
        Value table = spec.pageSize > 0 ? arg(next++) : Value();
        Value lse = spec.withLse ? arg(next++) : Value();
        Value oPartial = spec.splitKv ? arg(next) : Value();
        Value lsePartial = spec.splitKv ? arg(next + 1) : Value();
        unsigned descales = body.getNumArguments() - (fp8 ? 3 : 0);
        Value slopes = spec.alibi ? arg(descales - 1) : Value();
        createProblemOp<AttentionKvCacheOp>(
            b, loc,
            {arg(0), arg(1), arg(2), arg(3), arg(4), table, lse, oPartial,
             lsePartial, slopes, fp8 ? arg(descales) : Value(),
             fp8 ? arg(descales + 1) : Value(),
             fp8 ? arg(descales + 2) : Value()},
            spec);
      });
}

AttentionSpec mlir::attn::combineSpecOf(const AttentionSpec &split) {
  AttentionSpec spec;
  spec.target = split.target;
  // The combine kernel merges outputs: the value head dim is its only one.
  spec.headDim = split.valueHeadDim();
  // An FP8 kernel's output, and so its combine kernel's, is bf16.
  spec.dtype = split.dtype == DType::e4m3 ? DType::bf16 : split.dtype;
  spec.withLse = split.withLse;
  spec.llvmOptLevel = split.llvmOptLevel;
  spec.kvCache = true;
  spec.splitKv = true;
  spec.combine = true;
  spec.headPack = split.headPack;
  // The split kernel's tile rows, so that the head packing fits the same.
  spec.blockM = kvCacheTileConfig(split).blockM;
  return spec;
}
