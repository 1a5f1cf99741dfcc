//===- Compile.cpp - A spec to PTX in process -----------------------------===//
#include "Compile.h"
#include "Log.h"
#include "Status.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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
  std::string hint = spec::Arch::hintFor(name);
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
  out = AttentionSpec();
  out.target = arch;
  // Each C field of spec_fields.def, converted by its kind; fields appended
  // since the caller's header (a smaller struct_size) keep their defaults.
  std::string error;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, ...)                      \
  ATTNGEN_READ_##InC(Member, name, Kind)
#define ATTNGEN_READ_NOC(Member, name, Kind)
#define ATTNGEN_READ_C(Member, name, Kind)                                     \
  if (error.empty() && spec->struct_size >= offsetof(attngen_spec, name) +     \
                                                sizeof(spec->name)) {          \
    auto value = spec::Kind::fromC(spec->name, #name);                         \
    if (value)                                                                 \
      out.Member = *value;                                                     \
    else                                                                       \
      error = llvm::toString(value.takeError());                               \
  }
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNGEN_READ_C
#undef ATTNGEN_READ_NOC
  // A caller built before causal_align existed was built for top-left, which
  // was every mask's alignment then; bottom-right is the default since.
  if (spec->struct_size < offsetof(attngen_spec, causal_align) +
                              sizeof(spec->causal_align))
    out.causalAlign = CausalAlign::top_left;
  if (!error.empty())
    return fail(ATTNGEN_ERROR_INVALID_SPEC, "{}", error);
  if (llvm::Error error = validateSpec(out))
    return fail(ATTNGEN_ERROR_INVALID_SPEC, "{} (arch {})",
                llvm::toString(std::move(error)), archName(arch));
  // Equal masks, however spelled, share one kernel and cache entry.
  out = canonicalSpec(out);
  return ATTNGEN_OK;
}

std::string attngen::cacheKey(const AttentionSpec &spec) {
  return specKey(spec) + " compiler=" + compilerId();
}

attngen_status attngen::compileKernel(const AttentionSpec &spec,
                                      CompiledKernel &out) {
  DialectRegistry registry;
  registerCodegenDialects(registry);
  // One small function per compile: a thread pool would only cost start-up.
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // The driver's problem module, configured and named (spec/lib).
  OwningOpRef<ModuleOp> module = buildKernelModule(context, spec);
  std::string name =
      cast<func::FuncOp>(module->getBody()->front()).getName().str();
  Progress progress(name);

  // Collect diagnostics into the error instead of printing them.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  progress.stageDone("built the attn.attention module");
  PassManager tile(&context);
  buildAttnTilePipeline(tile);
  if (failed(tile.run(*module)))
    return fail(ATTNGEN_ERROR_COMPILE,
                "the FlashAttention passes failed on {} (a compiler bug; "
                "please report it with this message): {}",
                name, diagnostics);
  progress.stageDone("ran the FlashAttention passes");
  PassManager lower(&context);
  buildLoweringPipeline(lower);
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
  auto ptx = emitPtx(*module, spec.target, /*emitLlvm=*/false,
                     spec.llvmOptLevel);
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
