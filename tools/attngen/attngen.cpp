//===- attngen.cpp - the attngen compiler driver --------------------------===//
//
//   attngen --arch=sm_90a --head-dim=128 --dtype=bf16 [--causal] -o attn.ptx
//   attngen input.mlir --emit=mlir
//
// Builds (or reads) an attn.attention module, runs the FlashAttention passes
// and the lowering, and writes the tile program, the LLVM/NVVM-dialect
// module, LLVM IR or PTX. With PTX it also writes the launch metadata JSON.
//
//===----------------------------------------------------------------------===//
#include "attn/Codegen/Codegen.h"
#include "attn/Passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#ifndef ATTNGEN_VERSION
#error "ATTNGEN_VERSION must be defined by the build"
#endif

using namespace mlir;
using namespace mlir::attn;
namespace cl = llvm::cl;

static cl::OptionCategory category("attngen options");
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
static cl::opt<std::string> arch("arch", cl::desc("Target: sm_80 or sm_90a"),
                                 cl::init("sm_90a"), cl::cat(category));
static cl::opt<int64_t> headDim("head-dim",
                                cl::desc("Head dimension: 64, 128 or 256"),
                                cl::init(128), cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::desc("Element type: f16 or bf16"),
                                  cl::init("bf16"), cl::cat(category));
static cl::opt<bool> causal("causal",
                            cl::desc("Causal mask (top-left aligned, as "
                                     "PyTorch's is_causal)"),
                            cl::cat(category));
static cl::opt<double> scale("scale",
                             cl::desc("Softmax scale (default 1/sqrt(head dim))"),
                             cl::init(0.0), cl::cat(category));
static cl::opt<bool> noLse("no-lse", cl::desc("Do not write the log-sum-exp"),
                           cl::cat(category));
static cl::opt<int64_t> blockM("block-m", cl::desc("Override query rows per CTA"),
                               cl::init(0), cl::cat(category));
static cl::opt<int64_t> blockN("block-n",
                               cl::desc("Override key/value rows per iteration"),
                               cl::init(0), cl::cat(category));
static cl::opt<int64_t> numWarps("num-warps", cl::desc("Override warps per CTA"),
                                 cl::init(0), cl::cat(category));
static cl::opt<bool> noBlockSkip(
    "no-block-skip",
    cl::desc("Leave out attn-causal-blocks: mask every block (ablation)"),
    cl::cat(category));
static cl::opt<int> llvmOptLevel(
    "llvm-opt-level", cl::desc("LLVM optimisation level before the NVPTX "
                               "backend: 1, 2 or 3 (default)"),
    cl::init(3), cl::cat(category));
static cl::opt<std::string> emit(
    "emit",
    cl::desc("What to write: mlir (tile program after the FlashAttention "
             "passes), nvvm (LLVM+NVVM dialects), llvm (LLVM IR), ptx"),
    cl::init("ptx"), cl::cat(category));

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

/// Where the metadata goes: --metadata, or with --emit=ptx and -o X.ptx,
/// X.json. Refuses a metadata file that would overwrite the output.
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
  auto normalized = [](StringRef file) {
    llvm::SmallString<256> absolute(file);
    if (file != "-")
      llvm::sys::fs::make_absolute(absolute);
    llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
    return std::string(absolute);
  };
  bool same = normalized(path) == normalized(outputFile);
  bool equivalent = false;
  if (!same && !llvm::sys::fs::equivalent(path, outputFile, equivalent))
    same = equivalent;
  if (same) {
    fail(fmt::format("the metadata file '{}' would overwrite the PTX output "
                     "-o {}; name the output X.ptx or pass --metadata with "
                     "another file",
                     path, outputFile.getValue()));
    return failure();
  }
  return path;
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

  AttentionSpec spec;
  if (arch == "sm_80")
    spec.target = TargetKind::sm_80;
  else if (arch == "sm_90a")
    spec.target = TargetKind::sm_90a;
  else
    return fail(fmt::format("unsupported --arch={}; supported: sm_80, sm_90a",
                            arch.getValue()));
  if (dtype != "bf16" && dtype != "f16")
    return fail(fmt::format("unsupported --dtype={}; supported: f16, bf16",
                            dtype.getValue()));
  if (emit != "mlir" && emit != "nvvm" && emit != "llvm" && emit != "ptx")
    return fail(fmt::format("unsupported --emit={}; supported: mlir, nvvm, "
                            "llvm, ptx",
                            emit.getValue()));
  spec.bf16 = dtype == "bf16";
  spec.headDim = headDim;
  spec.causal = causal;
  spec.scale = scale;
  spec.withLse = !noLse;
  spec.blockM = blockM;
  spec.blockN = blockN;
  spec.numWarps = numWarps;
  spec.skipMaskedBlocks = !noBlockSkip;
  spec.llvmOptLevel = llvmOptLevel;
  FailureOr<std::string> metaPath = metadataPath();
  if (failed(metaPath))
    return 1;
  if (llvm::Error error = validateSpec(spec))
    return fail(llvm::toString(std::move(error)));

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
    if (!(*module)->hasAttr(kTargetAttrName))
      (*module)->setAttr(kTargetAttrName, TargetAttr::get(&context, spec.target));
    spec.target = *getTarget(*module);
  } else {
    module = buildSpecModule(context, spec);
  }

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  buildTilePipeline(pm, spec);
  if (emit != "mlir")
    buildLoweringPipeline(pm);
  if (failed(pm.run(*module)))
    return 1;

  std::string text;
  if (emit == "mlir" || emit == "nvvm") {
    llvm::raw_string_ostream os(text);
    module->print(os);
  } else {
    auto result = emitPtx(*module, spec.target, emit == "llvm", spec.llvmOptLevel);
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
