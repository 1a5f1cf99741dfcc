//===- attngen.cpp - the attngen compiler driver --------------------------===//
//
//   attngen --arch=sm_90a --head-dim=128 --dtype=bf16 [--causal] -o attn.ptx
//   attngen input.mlir --emit=mlir
//
// Builds (or reads) an attn.attention module, runs the FlashAttention passes
// and the lowering, and writes the tile program, the LLVM/NVVM-dialect
// module, LLVM IR or PTX. With PTX it also writes the launch metadata JSON.
// An input module may also be one attngen wrote itself (--emit=mlir or
// --emit=nvvm): the driver then runs only the steps that are left.
//
//===----------------------------------------------------------------------===//
#include "attn/Codegen/Codegen.h"
#include "attn/Codegen/Quantize.h"
#include "attn/Spec/Spec.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"
#include "SpecOptions.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#ifndef ATTNGEN_VERSION
#error "ATTNGEN_VERSION must be defined by the build"
#endif

using namespace mlir;
using namespace mlir::attn;
namespace cl = llvm::cl;
namespace cli = attngen::cli;

cl::OptionCategory &attngen::cli::specCategory() {
  static cl::OptionCategory category("attngen options");
  return category;
}
static cl::OptionCategory &category = cli::specCategory();
static cl::OptionCategory mlirCategory(
    "MLIR options (--print-ir-* is accepted for --mlir-print-ir-*)");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("[input.mlir]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> metadataFile(
    "metadata",
    cl::desc("Where to write the launch metadata JSON (default with "
             "--emit=ptx and -o X.ptx: X.json)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
/// One option per spec field (spec_fields.def): --head-dim, --causal, ...
static cli::SpecOptions options;
static cl::opt<std::string> emit(
    "emit",
    cl::desc("What to write: problem (the attn.attention module, configured: "
             "what attngen-opt --attn-pipeline takes), mlir (tile program "
             "after the FlashAttention passes), nvvm (LLVM+NVVM dialects), "
             "llvm (LLVM IR), ptx"),
    cl::init("ptx"), cl::cat(category));

static cl::opt<bool> quantizeFp8(
    "quantize-fp8",
    cl::desc("Emit the FP8 quantize kernel instead of an attention kernel: "
             "a --dtype (bf16 or f16) [B, N, H, D] tensor to e4m3 with one "
             "scale per 128 rows or given scales, row-major or K-major "
             "(docs/ABI.md \"Quantize kernel\"); takes --head-dim, --dtype, "
             "--arch, --hadamard"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> hadamard(
    "hadamard",
    cl::desc("With --quantize-fp8: rotate each row by a Hadamard transform "
             "with random signs first (incoherent processing; use it on q "
             "and k alike)"),
    cl::init(false), cl::cat(category));
static cl::opt<uint64_t> hadamardSeed(
    "hadamard-seed", cl::desc("With --hadamard: the random signs' seed"),
    cl::init(QuantizeKernelSpec::kDefaultHadamardSeed), cl::cat(category));

/// MLIR's parser recurses once per nested region, block, attribute or type:
/// input nested deeper than this is refused before parsing, because deeper
/// nesting can overflow the stack (10,000 `module {` does). Real kernels nest
/// fewer than 20 levels.
static constexpr int kMaxNestingDepth = 256;

/// MLIR spells its pass-manager flags --mlir-print-ir-*; accept the short
/// spellings too.
static std::vector<char *> aliasPassManagerFlags(int argc, char **argv,
                                                 std::vector<std::string> &storage) {
  storage.reserve(argc);
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    for (const char *prefix : {"--print-ir-", "-print-ir-"})
      if (arg.rfind(prefix, 0) == 0) {
        arg = "--mlir-print-ir-" + arg.substr(std::strlen(prefix));
        break;
      }
    storage.push_back(arg);
  }
  for (std::string &s : storage)
    args.push_back(s.data());
  return args;
}

/// Registers the passes attngen runs, so that the pass-manager flags that
/// name a pass (--mlir-print-ir-after=attn-tile) find them.
static void registerPipelinePasses() {
  registerAttnPasses();
  registerCodegenPasses();
  registerSpecPasses();
  registerCanonicalizerPass();
  registerCSEPass();
  registerSCFToControlFlowPass();
  registerArithToLLVMConversionPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertNVVMToLLVMPass();
  registerReconcileUnrealizedCastsPass();
}

/// Shows only attngen's options and MLIR's pass-manager, context and printer
/// options in --help, not the hundreds of backend options linked into LLVM.
static void hideUnrelatedOptions() {
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    if (entry.first.starts_with("mlir-") &&
        !llvm::is_contained(option->Categories, &category))
      option->Categories.assign({&mlirCategory});
  }
  cl::HideUnrelatedOptions({&category, &mlirCategory});
}

static int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "attngen") << message << "\n";
  return 1;
}

/// Finds the first bracket of `buffer` nested deeper than kMaxNestingDepth,
/// counting (, [, { and < (string literals and // comments skipped). A `>`
/// without its `<` (as in `->`) lowers the count, which can only make the
/// check miss deep input, never refuse shallow input.
static const char *findTooDeepNesting(StringRef buffer) {
  int depth = 0;
  for (const char *p = buffer.begin(), *end = buffer.end(); p < end; ++p) {
    switch (*p) {
    case '"':
      for (++p; p < end && *p != '"'; ++p)
        if (*p == '\\')
          ++p;
      break;
    case '/':
      if (p + 1 < end && p[1] == '/')
        while (p < end && *p != '\n')
          ++p;
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      if (++depth > kMaxNestingDepth)
        return p;
      break;
    case ')':
    case ']':
    case '}':
    case '>':
      depth = std::max(0, depth - 1);
      break;
    default:
      break;
    }
  }
  return nullptr;
}

namespace {

/// How far an input module has come: attngen resumes from there.
enum class Stage {
  problem, ///< holds attn.attention: run everything
  tiled,   ///< a tile program (func.func with attn.kernel): lower it
  lowered, ///< an LLVM-dialect kernel (llvm.func with attn.params): emit it
};

/// The one kernel of an input module and what it fixes of the spec.
struct ModuleKernel {
  Stage stage = Stage::problem;
  Operation *op = nullptr; ///< attn.attention, or the kernel function
  /// The problem fields the module fixes, as a request (specOfProblem;
  /// the target and the other fields are the flags').
  AttentionSpec problem;
  std::optional<TileConfig> tiling; ///< fixed once tiled
};

} // namespace

/// The name under which `op`, a kernel of some stage, is reported.
static std::string kernelNameOf(Operation *op) {
  if (auto func = dyn_cast<FunctionOpInterface>(op))
    return func.getName().str();
  if (auto func = op->getParentOfType<FunctionOpInterface>())
    return func.getName().str();
  return "<no function>";
}

/// Reads what the kernel op of `stage` fixes of the spec: the problem of
/// the attn.attention op, or the #attn.problem and #attn.tiling of a tiled
/// or lowered kernel.
static FailureOr<ModuleKernel> describeKernel(Operation *op, Stage stage) {
  ModuleKernel kernel;
  kernel.stage = stage;
  kernel.op = op;
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    kernel.problem = specOfProblem(TargetKind::sm_90a, attention.problem());
    // A problem module attngen configured (--emit=problem) has its tiles.
    auto func = op->getParentOfType<func::FuncOp>();
    if (auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName))
      kernel.tiling = TileConfig{tiling.getBlockM(), tiling.getBlockN(),
                                 tiling.getNumWarps(), tiling.getStages(),
                                 tiling.getPeelMaskedBlocks()};
    return kernel;
  }
  std::optional<AttentionProblem> problem = getProblem(op);
  auto tiling = op->getAttrOfType<TilingAttr>(kTilingAttrName);
  if (!problem || !tiling)
    return op->emitError("a tiled or lowered kernel carries its "
                         "#attn.problem and #attn.tiling (attn.problem, "
                         "attn.tiling); this one lacks them: compile it "
                         "from its attn.attention op");
  kernel.problem = specOfProblem(TargetKind::sm_90a, *problem);
  kernel.tiling = TileConfig{tiling.getBlockM(), tiling.getBlockN(),
                             tiling.getNumWarps(), tiling.getStages(),
                             tiling.getPeelMaskedBlocks()};
  return kernel;
}

/// Finds the one kernel of an input module: an attn.attention op, a tile
/// program or a lowered kernel. Refuses nested modules, modules with several
/// kernels (the PTX would hold them all but the metadata describes one) and
/// modules with none, with an error located in the input.
static FailureOr<ModuleKernel> findKernel(ModuleOp module, StringRef file) {
  SmallVector<std::pair<Operation *, Stage>> kernels;
  Operation *nested = nullptr;
  module.walk([&](Operation *op) {
    if (isa<ModuleOp>(op) && op != module.getOperation() && !nested)
      nested = op;
    else if (isa<AttentionOp>(op))
      kernels.push_back({op, Stage::problem});
    else if (isa<func::FuncOp>(op) && op->hasAttr(kKernelAttrName))
      kernels.push_back({op, Stage::tiled});
    else if (isa<LLVM::LLVMFuncOp>(op) && op->hasAttr("attn.params"))
      kernels.push_back({op, Stage::lowered});
  });
  if (nested)
    return nested->emitError("nested modules are not supported: put the "
                             "kernel's function in the top-level module");
  if (kernels.empty()) {
    fail(fmt::format("no attn.attention op in {}", file.str()));
    return failure();
  }
  if (kernels.size() > 1) {
    SmallVector<std::string> names;
    for (auto [op, stage] : kernels)
      names.push_back(kernelNameOf(op));
    return kernels[1].first->emitError()
           << "one attn.attention per module; found " << kernels.size()
           << " (" << llvm::join(names, ", ")
           << "): put each kernel in a module of its own";
  }
  // The kernel's function is the module's only function: another one would
  // reach the PTX translation, which has no way to say what is wrong.
  auto [op, stage] = kernels[0];
  Operation *owner =
      stage == Stage::problem ? op->getParentOfType<func::FuncOp>() : op;
  for (Operation &top : module.getBody()->getOperations()) {
    auto function = dyn_cast<FunctionOpInterface>(&top);
    if (!function || &top == owner)
      continue;
    return top.emitError() << "a second function @" << function.getName()
                           << " beside the kernel's: attngen compiles one "
                              "kernel function per module and nothing else; "
                              "remove @"
                           << function.getName();
  }
  return describeKernel(op, stage);
}

/// A problem field as the kernel holds it: a canonical mask, the scale
/// spelled out, reals as the f32 of the IR.
static AttentionSpec problemAsHeld(const AttentionSpec &spec) {
  AttentionSpec held = canonicalSpec(spec);
  held.scale = softmaxScaleOf(held);
  spec::forEachFieldOf<spec::Group::PROBLEM>(
      held, [](const spec::FieldInfo &, auto kind, auto &value) {
        if constexpr (std::is_same_v<decltype(kind), spec::Real>)
          value = static_cast<float>(value);
      });
  return held;
}

/// A field's value as the kernel holds it, for messages (reals as f32).
template <class Kind, class T> static std::string heldText(const T &value) {
  if constexpr (std::is_same_v<Kind, spec::Real>)
    return fmt::format("{}", static_cast<float>(value));
  else
    return Kind::text(value);
}

/// Checks the spec flags given on the command line against an input module:
/// a flag the module leaves open takes effect (the target of a module
/// without attn.target, the tile overrides before tiling); one that
/// contradicts the module is refused, naming both values. Returns the spec
/// the module and the flags describe together.
static FailureOr<AttentionSpec> mergeSpecFlags(ModuleOp module,
                                               const ModuleKernel &kernel,
                                               const AttentionSpec &flags) {
  Operation *op = kernel.op;
  auto contradicts = [&](const std::string &flag, const std::string &value,
                         StringRef what) {
    return op->emitError() << fmt::format(
               "{} contradicts this kernel's {} {}; drop the flag or change "
               "the module",
               flag, what, value);
  };
  AttentionSpec spec = flags;
  if (auto target = module->getAttrOfType<TargetAttr>(kTargetAttrName)) {
    if (options.target.given() && target.getKind() != flags.target)
      return module.emitError() << fmt::format(
                 "{} contradicts the module's attn.target {}; drop the flag "
                 "or change the module",
                 options.target.asGiven(),
                 stringifyTargetKind(target.getKind()).str());
    spec.target = target.getKind();
  } else {
    module->setAttr(kTargetAttrName,
                    TargetAttr::get(module.getContext(), flags.target));
  }
  // Every problem field is the module's. The given flags laid over the
  // module's fields must describe the same problem, compared in the
  // kernel's own terms (a canonical mask, the scale spelled out, f32 reals);
  // the first field that differs is refused, naming its flag.
  AttentionSpec merged = kernel.problem;
#define SPEC_FIELD(G, InC, Member, ...)                                        \
  if (spec::Group::G == spec::Group::PROBLEM && options.given(options.Member)) \
    merged.Member = flags.Member;
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
  AttentionSpec asked = problemAsHeld(merged),
                held = problemAsHeld(kernel.problem);
  std::optional<std::string> differs;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, ...)                      \
  if constexpr (spec::Group::G == spec::Group::PROBLEM) {                      \
    if (asked.Member != held.Member) {                                         \
      std::string what = #name " =";                                           \
      std::string value = heldText<spec::Kind>(held.Member);                   \
      if (options.given(options.Member))                                       \
        return contradicts(options.asGiven(options.Member), value, what);      \
      if (!differs)                                                            \
        differs = what + " " + value;                                          \
    }                                                                          \
    spec.Member = kernel.problem.Member;                                       \
  }
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
  if (differs)
    return op->emitError() << fmt::format(
               "the flags contradict this kernel's {}; drop them or change "
               "the module",
               *differs);
  if (kernel.tiling) {
    std::tuple<const char *, const cli::NumberOption<int64_t> &, int64_t>
        overrides[] = {{"block-m", options.blockM, kernel.tiling->blockM},
                       {"block-n", options.blockN, kernel.tiling->blockN},
                       {"num-warps", options.numWarps, kernel.tiling->numWarps}};
    for (auto &[name, option, value] : overrides) {
      int64_t given = 0;
      llvm::cantFail(option.read(given));
      if (option.given() && given != value)
        return contradicts(option.asGiven(), std::to_string(value), name);
    }
    // The schedule is chosen with the tiles (#attn.schedule): a switch
    // given now would change nothing.
    std::string late;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, ...)       \
  if (spec::Group::G == spec::Group::SCHEDULE && late.empty() &&               \
      options.Member.given())                                                  \
    late = options.Member.flagName();
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
    if (options.stages.given() && late.empty())
      late = "--stages";
    if (!late.empty())
      return op->emitError() << late
                             << " has no effect on a kernel that is already "
                                "tiled (or configured); pass it when tiling";
    spec.blockM = kernel.tiling->blockM;
    spec.blockN = kernel.tiling->blockN;
    spec.numWarps = kernel.tiling->numWarps;
  }
  return spec;
}

/// Where the metadata goes: --metadata, or with --emit=ptx and -o X.ptx,
/// X.json. Refuses a metadata file that would overwrite the output.
/// Whether two paths name one file: the same path once absolute and without
/// dots, or two names of one existing file ("-", standard input or output,
/// is only itself).
static bool isSameFile(StringRef a, StringRef b) {
  if (a == "-" || b == "-")
    return a == b;
  auto normalized = [](StringRef file) {
    llvm::SmallString<256> absolute(file);
    llvm::sys::fs::make_absolute(absolute);
    llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
    return std::string(absolute);
  };
  if (normalized(a) == normalized(b))
    return true;
  bool equivalent = false;
  return !llvm::sys::fs::equivalent(a, b, equivalent) && equivalent;
}

static FailureOr<std::string> metadataPath() {
  if (emit != "ptx") {
    if (!metadataFile.empty()) {
      fail(fmt::format("--metadata is written only with --emit=ptx, not "
                       "--emit={}",
                       emit.getValue()));
      return failure();
    }
    return std::string();
  }
  std::string path = metadataFile;
  if (path.empty() && outputFile != "-") {
    llvm::SmallString<256> json(outputFile.getValue());
    llvm::sys::path::replace_extension(json, "json");
    path = std::string(json);
  }
  if (path.empty())
    return path;
  if (isSameFile(path, outputFile)) {
    fail(fmt::format("the metadata file '{}' would overwrite the PTX output "
                     "-o {}; name the output X.ptx or pass --metadata with "
                     "another file",
                     path, outputFile.getValue()));
    return failure();
  }
  if (!inputFile.empty() && inputFile != "-" && isSameFile(path, inputFile)) {
    fail(fmt::format("the metadata file '{}' would overwrite the input {}; "
                     "pass --metadata with another file",
                     path, inputFile.getValue()));
    return failure();
  }
  return path;
}

/// --quantize-fp8: the quantize kernel of --head-dim, reading --dtype (bf16
/// or f16), with its small metadata JSON beside the PTX. Attention's other
/// flags mean nothing here and are refused.
static int emitQuantizeKernel(const AttentionSpec &spec) {
  std::string unrelated;
#define SPEC_FIELD(G, InC, Member, name, json, Kind, Default, Flag, ...)       \
  if (unrelated.empty() && options.Member.given() &&                           \
      std::string(#Member) != "headDim" && std::string(#Member) != "dtype" &&  \
      std::string(#Member) != "target")                                        \
    unrelated = options.Member.flagName();
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
  if (!unrelated.empty())
    return fail(fmt::format("{} is an attention flag; --quantize-fp8 takes "
                            "--head-dim, --dtype (the source: bf16 or f16), "
                            "--arch and --hadamard",
                            unrelated));
  if (!inputFile.empty())
    return fail("--quantize-fp8 builds its kernel from flags; it reads no "
                "input module");
  QuantizeKernelSpec q;
  q.target = spec.target;
  q.headDim = spec.headDim;
  q.source = spec.dtype;
  q.hadamard = hadamard;
  q.seed = hadamardSeed;
  if (spec.dtype == DType::e4m3)
    return fail("--quantize-fp8 --dtype names the source type (bf16 or f16); "
                "the output is e4m3");
  if (llvm::Error error = checkQuantizeSpec(q))
    return fail(llvm::toString(std::move(error)));
  FailureOr<std::string> metaPath = metadataPath();
  if (failed(metaPath))
    return 1;
  if (emit == "problem")
    return fail("--quantize-fp8 has no problem module; use --emit=mlir, "
                "nvvm, llvm or ptx");

  DialectRegistry registry;
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  buildQuantizeKernel(*module, q);
  if (emit != "mlir" && failed(lowerQuantizeModule(*module)))
    return fail("the quantize kernel failed to lower");
  std::string text;
  if (emit == "mlir" || emit == "nvvm") {
    llvm::raw_string_ostream os(text);
    module->print(os);
  } else {
    auto result = emitPtx(*module, q.target, emit == "llvm", spec.llvmOptLevel);
    if (!result)
      return fail(llvm::toString(result.takeError()));
    text = std::move(*result);
  }
  QuantizeLaunch launch = quantizeLaunch(q);
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  output->os() << text;
  if (!metaPath->empty()) {
    auto metaOut = openOutputFile(*metaPath, &error);
    if (!metaOut)
      return fail(error);
    metaOut->os() << fmt::format(
        "{{\n  \"kernel\": \"{}\",\n  \"kind\": \"quantize\",\n  \"arch\": "
        "\"sm_90a\",\n  \"head_dim\": {},\n  \"source\": \"{}\",\n  "
        "\"hadamard\": {},\n  \"hadamard_seed\": {},\n  \"num_threads\": {},\n  "
        "\"smem_bytes\": {},\n  \"block_rows\": {},\n  \"grid\": "
        "\"ceil(n / block_rows), num_heads, batch\"\n}}\n",
        launch.kernel, q.headDim, spec::Element::text(q.source),
        q.hadamard ? "true" : "false", q.seed, launch.numThreads,
        launch.smemBytes, kQuantizeBlockRows);
    metaOut->keep();
  }
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::vector<std::string> storage;
  std::vector<char *> args = aliasPassManagerFlags(argc, argv, storage);
  // Before the pass-manager options, whose pass-name lists read the registry.
  registerPipelinePasses();
  registerPassManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  hideUnrelatedOptions();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attngen " << ATTNGEN_VERSION << " (LLVM " << LLVM_VERSION_STRING
       << ")\n";
  });
  cl::ParseCommandLineOptions(
      static_cast<int>(args.size()), args.data(),
      "attngen: FlashAttention-class kernels from a declarative spec\n");

  if (emit != "problem" && emit != "mlir" && emit != "nvvm" &&
      emit != "llvm" && emit != "ptx")
    return fail(fmt::format("unsupported --emit={}; supported: problem, "
                            "mlir, nvvm, llvm, ptx",
                            emit.getValue()));
  llvm::Expected<AttentionSpec> flags = options.read();
  if (!flags)
    return fail(llvm::toString(flags.takeError()));
  AttentionSpec spec = *flags;
  if (quantizeFp8)
    return emitQuantizeKernel(spec);
  if (hadamard || hadamardSeed.getNumOccurrences())
    return fail("--hadamard and --hadamard-seed go with --quantize-fp8 (the "
                "quantize kernel rotates q and k; attention needs no flag)");
  // A paged, split or combine kernel is a KV-cache kernel (a paged varlen
  // one is a varlen kernel over a paged K/V).
  spec.kvCache = spec.kvCache || (spec.pageSize != 0 && !spec.varlen) ||
                 spec.splitKv ||
                 spec.combine;
  // A flag that changes nothing is refused, not dropped.
  if (inputFile.empty() && options.causalAlign.given() &&
      !placesDiagonal(canonicalSpec(spec)))
    return fail(fmt::format(
        "--causal-align={} places the diagonal of a causal mask, a window or "
        "ALiBi, and this kernel has none: add --causal, --window=L,R or "
        "--alibi, or drop --causal-align",
        spec::Align::text(spec.causalAlign)));
  if (!inputFile.empty() && inputFile != "-" &&
      isSameFile(outputFile, inputFile))
    return fail(fmt::format("the output -o {} would overwrite the input {}; "
                            "write the output to another file",
                            outputFile.getValue(), inputFile.getValue()));
  FailureOr<std::string> metaPath = metadataPath();
  if (failed(metaPath))
    return 1;

  DialectRegistry registry;
  registerCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // The located error and the source line say enough; the generic form of
  // the op is there on request (--mlir-print-op-on-diagnostic).
  cl::Option *printOp =
      cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    context.printOpOnDiagnostic(false);
  // Errors read `file:line:col: error: ...` with the offending line.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module;
  Operation *inputKernel = nullptr; ///< the input module's kernel op
  Stage stage = Stage::problem;
  if (!inputFile.empty()) {
    std::string error;
    auto file = openInputFile(inputFile, &error);
    if (!file)
      return fail(error);
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    StringRef buffer = sourceMgr.getMemoryBuffer(id)->getBuffer();
    if (const char *deep = findTooDeepNesting(buffer)) {
      sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(deep),
                             llvm::SourceMgr::DK_Error,
                             fmt::format("input nested deeper than {} levels; "
                                         "attngen refuses it before parsing",
                                         kMaxNestingDepth));
      return 1;
    }
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
    FailureOr<ModuleKernel> kernel = findKernel(*module, inputFile);
    if (failed(kernel))
      return 1;
    inputKernel = kernel->op;
    FailureOr<AttentionSpec> merged = mergeSpecFlags(*module, *kernel, spec);
    if (failed(merged))
      return 1;
    spec = *merged;
    stage = kernel->stage;
    if (stage == Stage::lowered && emit == "mlir")
      return fail("the input is already lowered to the LLVM dialect; use "
                  "--emit=nvvm, llvm or ptx");
    if (stage != Stage::problem && emit == "problem")
      return fail("the input is already tiled; --emit=problem prints a "
                  "problem module (attn.attention)");
  }
  if (llvm::Error error = validateSpec(spec))
    return fail(llvm::toString(std::move(error)));
  if (stage != Stage::lowered) {
    TileConfig config = configure(canonicalSpec(spec)).tiling;
    // The estimate is rough; the defaults are measured (some spill a few
    // bytes on purpose, sm_80 d128's 128x64 is over the estimate without
    // spilling), so only overrides that change the tiles are warned about.
    int64_t registers = estimateRegistersPerThread(config, spec.headDim);
    if (overridesTiles(spec) && registers > kMaxRegistersPerThread)
      llvm::WithColor::warning(llvm::errs(), "attngen") << fmt::format(
          "a {}x{} tile with {} warps at head dim {} needs about {} registers "
          "per thread, more than the {} available: the kernel will spill; "
          "use more warps or smaller blocks\n",
          config.blockM, config.blockN, config.numWarps, spec.headDim,
          registers, kMaxRegistersPerThread);
  }
  // The driver (spec/lib): the problem module, configured once
  // (attn.tiling, attn.schedule) and, when built here, named after its
  // configuration; an input module keeps its function's name.
  if (!module)
    module = buildKernelModule(context, spec);
  else if (stage == Stage::problem)
    configureKernel(inputKernel->getParentOfType<func::FuncOp>(),
                    canonicalSpec(spec), /*name=*/false);

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  if (stage == Stage::problem && emit != "problem")
    buildAttnTilePipeline(pm);
  if (emit != "mlir" && emit != "problem" && stage != Stage::lowered)
    buildLoweringPipeline(pm);
  if (failed(pm.run(*module)))
    return 1;

  std::string text;
  if (emit == "mlir" || emit == "nvvm" || emit == "problem") {
    llvm::raw_string_ostream os(text);
    module->print(os);
  } else {
    auto result =
        emitPtx(*module, spec.target, emit == "llvm", spec.llvmOptLevel);
    if (!result)
      return fail(llvm::toString(result.takeError()));
    text = std::move(*result);
  }

  // Read the metadata before writing anything, so that an error leaves no
  // PTX without its metadata behind.
  std::string json;
  if (!metaPath->empty()) {
    auto meta = readKernelMetadata(*module);
    if (!meta)
      return fail(llvm::toString(meta.takeError()));
    json = metadataToJson(*meta);
  }
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  output->os() << text;
  if (!metaPath->empty()) {
    auto metaOut = openOutputFile(*metaPath, &error);
    if (!metaOut)
      return fail(error);
    metaOut->os() << json;
    metaOut->keep();
  }
  output->keep();
  return 0;
}
