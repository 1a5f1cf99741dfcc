//===- Compile.cpp - A spec to PTX in process -----------------------------===//
#include "Compile.h"
#include "Log.h"
#include "Status.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <cstring>

using namespace attngen;
using namespace mlir;
using namespace mlir::attn;

namespace {

/// Compiles slower than this report their stages even when ATTNGEN_LOG is
/// unset, so a long first-time build never looks like a hang (ATTNGEN_LOG=0
/// turns that off).
constexpr double kSlowCompileSeconds = 1.0;

/// Stage-by-stage progress of one compile.
class Progress {
public:
  explicit Progress(std::string kernel) : kernel(std::move(kernel)) {}
  void stageDone(const char *stage) {
    double now = clock.seconds();
    if (logLevel() >= LogLevel::Debug ||
        (logLevel() != LogLevel::Off && now > kSlowCompileSeconds))
      logLine(fmt::format("compiling {}: {} ({:.3f} s; {:.3f} s in all)",
                          kernel, stage, now - last, now));
    last = now;
  }
  double seconds() const { return clock.seconds(); }

private:
  std::string kernel;
  Stopwatch clock;
  double last = 0;
};

} // namespace

attngen_status attngen::parseArch(const char *arch, TargetKind &out) {
  std::string name = arch ? arch : "";
  if (name == "sm_80") {
    out = TargetKind::sm_80;
    return ATTNGEN_OK;
  }
  if (name == "sm_90a") {
    out = TargetKind::sm_90a;
    return ATTNGEN_OK;
  }
  std::string hint;
  if (name == "sm_90")
    hint = " (Hopper kernels use wgmma and TMA, which need sm_90a)";
  else if (name.rfind("sm_8", 0) == 0 || name.rfind("sm_10", 0) == 0 ||
           name.rfind("sm_12", 0) == 0)
    hint = " (compile for sm_80: the driver runs sm_80 PTX on newer GPUs)";
  return fail(ATTNGEN_ERROR_INVALID_SPEC,
              "unsupported arch '{}'{}; supported: sm_80, sm_90a, or auto "
              "for the current GPU",
              name, hint);
}

const char *attngen::archName(TargetKind arch) {
  return arch == TargetKind::sm_90a ? "sm_90a" : "sm_80";
}

attngen_status attngen::readSpec(const attngen_spec *spec, TargetKind arch,
                                 AttentionSpec &out) {
  if (!spec)
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the spec is NULL: pass an attngen_spec set up with "
                "attngen_spec_init");
  constexpr size_t minimum = offsetof(attngen_spec, num_warps) + sizeof(int);
  if (spec->struct_size < minimum || spec->struct_size > (1u << 16))
    return fail(ATTNGEN_ERROR_INVALID_ARGUMENT,
                "the spec's struct_size is {}: initialise the spec with "
                "attngen_spec_init before setting its fields",
                spec->struct_size);
  // Fields appended since: a caller built against an older header leaves
  // them out (a smaller struct_size) and gets their defaults.
  auto hasField = [&](size_t offset, size_t size) {
    return spec->struct_size >= offset + size;
  };
  int causalAlign = ATTNGEN_CAUSAL_TOP_LEFT;
  if (hasField(offsetof(attngen_spec, causal_align), sizeof(int)))
    causalAlign = spec->causal_align;
  if (causalAlign != ATTNGEN_CAUSAL_TOP_LEFT &&
      causalAlign != ATTNGEN_CAUSAL_BOTTOM_RIGHT)
    return fail(ATTNGEN_ERROR_INVALID_SPEC,
                "causal_align {} is not supported; supported: "
                "ATTNGEN_CAUSAL_TOP_LEFT ({}), ATTNGEN_CAUSAL_BOTTOM_RIGHT ({})",
                causalAlign, int(ATTNGEN_CAUSAL_TOP_LEFT),
                int(ATTNGEN_CAUSAL_BOTTOM_RIGHT));
  if (spec->dtype != ATTNRT_DTYPE_F16 && spec->dtype != ATTNRT_DTYPE_BF16)
    return fail(ATTNGEN_ERROR_INVALID_SPEC,
                "dtype {} is not supported; supported: ATTNRT_DTYPE_F16 ({}), "
                "ATTNRT_DTYPE_BF16 ({})",
                spec->dtype, int(ATTNRT_DTYPE_F16), int(ATTNRT_DTYPE_BF16));
  for (int flag : {spec->causal, spec->with_lse})
    if (flag != 0 && flag != 1)
      return fail(ATTNGEN_ERROR_INVALID_SPEC,
                  "causal and with_lse must be 0 or 1, got {}", flag);
  int varlen = 0;
  if (hasField(offsetof(attngen_spec, varlen), sizeof(int)))
    varlen = spec->varlen;
  if (varlen != 0 && varlen != 1)
    return fail(ATTNGEN_ERROR_INVALID_SPEC, "varlen must be 0 or 1, got {}",
                varlen);
  out = AttentionSpec();
  out.target = arch;
  out.headDim = spec->head_dim;
  out.bf16 = spec->dtype == ATTNRT_DTYPE_BF16;
  out.causal = spec->causal;
  out.causalAlign = causalAlign == ATTNGEN_CAUSAL_BOTTOM_RIGHT
                        ? CausalAlign::bottom_right
                        : CausalAlign::top_left;
  out.scale = spec->scale;
  if (hasField(offsetof(attngen_spec, softcap), sizeof(double)))
    out.softcap = spec->softcap;
  if (hasField(offsetof(attngen_spec, window_left), sizeof(int)))
    out.windowLeft = spec->window_left;
  if (hasField(offsetof(attngen_spec, window_right), sizeof(int)))
    out.windowRight = spec->window_right;
  out.withLse = spec->with_lse;
  out.varlen = varlen == 1;
  out.blockM = spec->block_m;
  out.blockN = spec->block_n;
  out.numWarps = spec->num_warps;
  // The KV-cache fields, each read only where the caller's struct has it.
  int kvCache = 0, splitKv = 0;
  if (hasField(offsetof(attngen_spec, kv_cache), sizeof(int)))
    kvCache = spec->kv_cache;
  if (hasField(offsetof(attngen_spec, page_size), sizeof(int)))
    out.pageSize = spec->page_size;
  if (hasField(offsetof(attngen_spec, split_kv), sizeof(int)))
    splitKv = spec->split_kv;
  if (hasField(offsetof(attngen_spec, head_pack), sizeof(int)))
    out.headPack = spec->head_pack;
  for (int flag : {kvCache, splitKv})
    if (flag != 0 && flag != 1)
      return fail(ATTNGEN_ERROR_INVALID_SPEC,
                  "kv_cache and split_kv must be 0 or 1, got {}", flag);
  out.kvCache = kvCache;
  out.splitKv = splitKv;
  if (llvm::Error error = validateSpec(out))
    return fail(ATTNGEN_ERROR_INVALID_SPEC, "{} (arch {})",
                llvm::toString(std::move(error)), archName(arch));
  // Equal masks, however spelled, share one kernel and cache entry.
  out = canonicalSpec(out);
  return ATTNGEN_OK;
}

std::string attngen::cacheKey(const AttentionSpec &spec) {
  // The default scale is spelled out so that scale=0 and an explicit
  // 1/sqrt(d) share a kernel; %a keeps every bit of the double.
  double scale = softmaxScaleOf(spec);
  // Decoding kernels append their fields (a dense kernel's key is as it
  // was); a combine kernel depends on none of the mask's.
  std::string decoding;
  if (spec.kvCache)
    decoding = fmt::format(" kv_cache=1 page={} split={} pack={} combine={}",
                           spec.pageSize, int(spec.splitKv), spec.headPack,
                           int(spec.combine));
  return fmt::format("attn_fwd arch={} dtype={} d={} causal={} "
                     "causal_align={} window_left={} window_right={} "
                     "scale={} softcap={} lse={} block_m={} "
                     "block_n={} warps={} block_skip={} varlen={}{} compiler={}",
                     archName(spec.target), spec.bf16 ? "bf16" : "f16",
                     spec.headDim, int(spec.causal),
                     stringifyCausalAlign(spec.causalAlign), spec.windowLeft,
                     spec.windowRight,
                     fmt::format("{:a}", scale),
                     fmt::format("{:a}", spec.softcap), int(spec.withLse),
                     spec.blockM, spec.blockN, spec.numWarps,
                     int(spec.skipMaskedBlocks), int(spec.varlen), decoding,
                     compilerId());
}

attngen_status attngen::compileKernel(const AttentionSpec &spec,
                                      CompiledKernel &out) {
  std::string name = kernelName(spec);
  Progress progress(name);

  DialectRegistry registry;
  registerCodegenDialects(registry);
  // One small function per compile: a thread pool would only cost start-up.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Collect diagnostics into the error instead of printing them.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  OwningOpRef<ModuleOp> module = buildSpecModule(context, spec);
  progress.stageDone("built the attn.attention module");
  PassManager tile(&context);
  buildTilePipeline(tile, spec);
  if (failed(tile.run(*module)))
    return fail(ATTNGEN_ERROR_COMPILE,
                "the FlashAttention passes failed on {} (a compiler bug; "
                "please report it with this message): {}",
                name, diagnostics);
  progress.stageDone("ran the FlashAttention passes");
  PassManager lower(&context);
  buildLoweringPipeline(lower, spec.flushDenormals);
  if (failed(lower.run(*module)))
    return fail(ATTNGEN_ERROR_COMPILE,
                "lowering {} to NVVM failed (a compiler bug; please report "
                "it with this message): {}",
                name, diagnostics);
  progress.stageDone("lowered to NVVM");
  auto metadata = readKernelMetadata(*module);
  if (!metadata)
    return fail(ATTNGEN_ERROR_COMPILE, "no launch metadata for {}: {}", name,
                llvm::toString(metadata.takeError()));
  auto ptx = emitPtx(*module, spec.target);
  if (!ptx)
    return fail(ATTNGEN_ERROR_COMPILE, "PTX emission for {} failed: {}", name,
                llvm::toString(ptx.takeError()));
  progress.stageDone("emitted PTX (LLVM O3, NVPTX)");

  // The runtime's reader is the one judge of metadata: what it refuses is
  // never returned, cached on disk or loaded.
  std::string json = metadataToJson(*metadata);
  attnrt_kernel_info info;
  if (attnrt_metadata_parse(json.c_str(), &info) != ATTNRT_OK)
    return fail(ATTNGEN_ERROR_COMPILE,
                "the compiler produced launch metadata for {} that the runtime "
                "refuses (a compiler bug; please report it with this "
                "message): {}",
                name, attnrt_last_error());

  out.key = cacheKey(spec);
  out.kernelName = name;
  out.arch = archName(spec.target);
  out.ptx = std::move(*ptx);
  out.metadata = std::move(json);
  logAt(LogLevel::Info, "compiled {} for {} in {:.3f} s", name, out.arch,
        progress.seconds());
  return ATTNGEN_OK;
}
