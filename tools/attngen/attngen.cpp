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
#include "attn/Spec/Spec.h"
#include "attn/Passes/Passes.h"
#include "attn/Passes/TileConfig.h"

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
static cl::opt<int64_t>
    headDim("head-dim",
            cl::desc("Head dimension: a multiple of 8 from 8 to 256"),
            cl::init(128), cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::desc("Element type: f16 or bf16"),
                                  cl::init("bf16"), cl::cat(category));
static cl::opt<bool> causal("causal",
                            cl::desc("Causal mask (top-left aligned unless "
                                     "--causal-align says otherwise)"),
                            cl::cat(category));
static cl::opt<std::string> causalAlign(
    "causal-align",
    cl::desc("Diagonal of a causal mask or a window when Nq != Nk: top-left "
             "(default; query i sees keys j <= i, as PyTorch's is_causal) or "
             "bottom-right (j <= i + Nk - Nq, as FlashAttention)"),
    cl::init("top-left"), cl::cat(category));
static cl::opt<std::string> window(
    "window",
    cl::desc("Sliding window L,R (FlashAttention's window_size): query i sees "
             "keys within L before and R after its diagonal; -1: unbounded "
             "side (default -1,-1: no window; L,0 is a causal window)"),
    cl::value_desc("L,R"), cl::init("-1,-1"), cl::cat(category));
static cl::opt<double> scale("scale",
                             cl::desc("Softmax scale (default 1/sqrt(head dim))"),
                             cl::init(0.0), cl::cat(category));
static cl::opt<double> softcap(
    "softcap",
    cl::desc("Soft cap c of the scores: c * tanh(scale * QK^T / c) before the "
             "softmax (Gemma 2, Grok); 0 (default): none"),
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
static cl::opt<bool> noWarpSpecialize(
    "no-warp-specialize",
    cl::desc("sm_90a: one role for all warps, FlashAttention-2 style (ablation)"),
    cl::cat(category));
static cl::opt<int64_t> stages(
    "stages", cl::desc("sm_90a: K/V pipe stages (default 2)"), cl::init(0),
    cl::cat(category));
static cl::opt<bool> noIntraWgOverlap(
    "no-intra-wg-overlap",
    cl::desc("sm_90a: do not overlap the softmax with the GEMMs (ablation)"),
    cl::cat(category));
static cl::opt<bool> noPingpong(
    "no-pingpong",
    cl::desc("sm_90a: do not alternate the consumer warpgroups (ablation)"),
    cl::cat(category));
static cl::opt<bool> noBoundedSoftmax(
    "no-bounded-softmax",
    cl::desc("Keep the running max of a soft-capped bf16 softmax instead of "
             "a fixed offset (ablation)"),
    cl::cat(category));
static cl::opt<cl::boolOrDefault> tmaStore(
    "tma-store",
    cl::desc("sm_90a: store the output through shared memory and the TMA; "
             "the default is on wherever the tile fits, up to d176 "
             "(--tma-store=false: from registers, kernel suffix _notma; "
             "--tma-store=true is refused where it cannot apply)"),
    cl::cat(category));
static cl::opt<cl::boolOrDefault> persistentGrid(
    "persistent",
    cl::desc("sm_90a: CTAs loop over tiles (one per SM) instead of one CTA "
             "per tile; the default is on for unmasked d64 and d128 kernels "
             "and for causal masks up to d128 and at d256, varlen included "
             "(--persistent=false: one CTA per tile, kernel suffix _nopers)"),
    cl::cat(category));
static cl::opt<bool> noFlushDenormals(
    "no-ftz",
    cl::desc("Keep f32 denormals in the kernel (IEEE exp2: a range fix-up "
             "around every exponential; ablation)"),
    cl::cat(category));
static cl::opt<bool> varlen(
    "varlen",
    cl::desc("Variable-length batch: packed [total, H, D] tensors with int32 "
             "cu_seqlens_q/k [B + 1] (flash_attn_varlen_func's layout); the "
             "grid covers max_seqlen_q, kernel names get _varlen"),
    cl::cat(category));
static cl::opt<std::string> exp2Emulate(
    "exp2-emulate",
    cl::desc("Fraction of the score exponentials computed by a polynomial on "
             "the FMA pipe instead of MUFU.EX2: 0 (default), k/8, 1/4, 3/8, "
             "1/2, ... 1 (a multiple of 1/8; the name gets _exp2emu<k>o8)"),
    cl::value_desc("F"), cl::init("0"), cl::cat(category));
// Decoding with a KV cache (attn.attention_kvcache; docs/DESIGN.md
// "Decoding").
static cl::opt<bool> kvCache(
    "kv-cache",
    cl::desc("A KV-cache kernel (flash_attn_with_kvcache): each sequence "
             "attends to the first cache_seqlens[b] keys of its cache; "
             "--causal is bottom-right to them"),
    cl::cat(category));
static cl::opt<int64_t> pagedKv(
    "paged-kv",
    cl::desc("KV cache in pages of this many rows (a multiple of 16): "
             "k/v [num_blocks, page_size, Hkv, D] and a block table "
             "(implies --kv-cache)"),
    cl::value_desc("page-size"), cl::init(0), cl::cat(category));
static cl::opt<bool> splitKv(
    "split-kv",
    cl::desc("Split each sequence's keys over CTAs (flash-decoding): "
             "partial results go to a workspace that the --combine kernel "
             "merges (implies --kv-cache)"),
    cl::cat(category));
static cl::opt<int64_t> headPack(
    "head-pack",
    cl::desc("Query heads sharing a key/value head packed into one tile "
             "(GQA decoding; default 1)"),
    cl::init(1), cl::cat(category));
static cl::opt<bool> combineKernel(
    "combine",
    cl::desc("The combine kernel of a --split-kv spec (merges the splits' "
             "partial outputs and LSEs)"),
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

/// A --flag=true|false option as a spec field: unset unless given.
static std::optional<bool> askedChoice(cl::boolOrDefault value) {
  if (value == cl::BOU_UNSET)
    return std::nullopt;
  return value == cl::BOU_TRUE;
}

/// Reads --exp2-emulate's fraction, "0", "1" or "k/n" with 0 <= k <= n, as
/// eighths; false unless it is a whole number of eighths.
static bool parseExp2Emulate(StringRef text, int64_t &eighths) {
  constexpr int64_t kEighths = 8;
  auto [num, den] = text.trim().split('/');
  int64_t k = 0, n = 1;
  if (num.trim().getAsInteger(10, k) ||
      (!den.empty() && den.trim().getAsInteger(10, n)) ||
      (den.empty() && text.contains('/')))
    return false;
  if (n <= 0 || k < 0 || k > n || (k * kEighths) % n != 0)
    return false;
  eighths = k * kEighths / n;
  return true;
}

/// Reads --window's "L,R" (two integers, -1 for an unbounded side); the
/// ranges are validateSpec's to check.
static bool parseWindow(StringRef text, int64_t &left, int64_t &right) {
  auto [l, r] = text.split(',');
  return !r.contains(',') && !l.trim().getAsInteger(10, left) &&
         !r.trim().getAsInteger(10, right);
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
  int64_t headDim = 0;
  bool bf16 = true;
  bool causal = false;
  CausalAlign causalAlign = CausalAlign::top_left;
  int64_t windowLeft = -1, windowRight = -1; ///< -1: unbounded
  bool withLse = true;
  float scale = 0;
  float softcap = 0; ///< 0: none
  bool varlen = false;
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

/// Reads what the kernel op of `stage` fixes of the spec.
static ModuleKernel describeKernel(Operation *op, Stage stage) {
  ModuleKernel kernel;
  kernel.stage = stage;
  kernel.op = op;
  auto readScale = [&](Operation *holder) {
    if (auto attr = holder->getAttrOfType<FloatAttr>("attn.scale"))
      kernel.scale = attr.getValueAsDouble();
    if (auto attr = holder->getAttrOfType<FloatAttr>("attn.softcap"))
      kernel.softcap = attr.getValueAsDouble();
    if (auto attr = holder->getAttrOfType<CausalAlignAttr>("attn.causal_align"))
      kernel.causalAlign = attr.getValue();
    if (auto attr = holder->getAttrOfType<IntegerAttr>("attn.window_left"))
      kernel.windowLeft = attr.getInt();
    if (auto attr = holder->getAttrOfType<IntegerAttr>("attn.window_right"))
      kernel.windowRight = attr.getInt();
  };
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    kernel.headDim = attention.getHeadDim();
    kernel.bf16 = attention.getElementType().isBF16();
    kernel.causal = attention.getCausal();
    kernel.withLse = attention.getLse() != nullptr;
    kernel.scale = attention.getScale().convertToFloat();
    if (attention.isBottomRight())
      kernel.causalAlign = CausalAlign::bottom_right;
    kernel.windowLeft = attention.getLeftBound().value_or(-1);
    if (IntegerAttr right = attention.getWindowRightAttr())
      kernel.windowRight = right.getInt();
    if (std::optional<APFloat> cap = attention.getSoftcap())
      kernel.softcap = cap->convertToFloat();
    kernel.varlen = attention.isVarlen();
  } else if (auto func = dyn_cast<func::FuncOp>(op)) {
    // A tiled kernel takes q, k, v, o[, lse][, cu_seqlens_q, cu_seqlens_k]
    // (attn.tensors names them): q is [B, N, H, D] or, packed, [total, H, D].
    kernel.varlen = func->hasAttr(kVarlenAttrName);
    auto q = func.getNumArguments() ? dyn_cast<MemRefType>(
                                          func.getArgumentTypes().front())
                                    : MemRefType();
    if (q && q.getRank() != (kernel.varlen ? 3 : 4))
      q = MemRefType();
    kernel.headDim = q ? q.getDimSize(q.getRank() - 1) : 0;
    kernel.bf16 = q && q.getElementType().isBF16();
    kernel.causal = func->hasAttr(kCausalAttrName);
    auto roles = func->getAttrOfType<ArrayAttr>(kTensorsAttrName);
    kernel.withLse =
        roles ? llvm::is_contained(roles, StringAttr::get(func.getContext(),
                                                          "lse"))
              : func.getNumArguments() == 5;
    readScale(func);
    if (auto tiling = func->getAttrOfType<TilingAttr>(kTilingAttrName))
      kernel.tiling = TileConfig{tiling.getBlockM(), tiling.getBlockN(),
                                 tiling.getNumWarps()};
  } else {
    auto getInt = [&](StringRef name) {
      auto attr = op->getAttrOfType<IntegerAttr>(name);
      return attr ? attr.getInt() : 0;
    };
    kernel.headDim = getInt("attn.head_dim");
    auto dtypeAttr = op->getAttrOfType<StringAttr>("attn.dtype");
    kernel.bf16 = dtypeAttr && dtypeAttr.getValue() == "bf16";
    kernel.causal = op->hasAttr(kCausalAttrName);
    auto lse = op->getAttrOfType<BoolAttr>("attn.lse");
    kernel.withLse = lse && lse.getValue();
    kernel.varlen = op->hasAttr(kVarlenAttrName);
    readScale(op);
    kernel.tiling = TileConfig{getInt("attn.block_m"), getInt("attn.block_n"),
                               getInt("attn.num_threads") / 32};
  }
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
  return describeKernel(kernels[0].first, kernels[0].second);
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
    if (arch.getNumOccurrences() && target.getKind() != flags.target)
      return module.emitError() << fmt::format(
                 "--arch={} contradicts the module's attn.target {}; drop "
                 "the flag or change the module",
                 arch.getValue(), stringifyTargetKind(target.getKind()).str());
    spec.target = target.getKind();
  } else {
    module->setAttr(kTargetAttrName,
                    TargetAttr::get(module.getContext(), flags.target));
  }
  if (headDim.getNumOccurrences() && headDim != kernel.headDim)
    return contradicts(fmt::format("--head-dim={}", headDim.getValue()),
                       std::to_string(kernel.headDim), "head dimension");
  const char *moduleDtype = kernel.bf16 ? "bf16" : "f16";
  if (dtype.getNumOccurrences() && dtype != moduleDtype)
    return contradicts("--dtype=" + dtype.getValue(), moduleDtype,
                       "element type");
  if (causal.getNumOccurrences() && causal != kernel.causal)
    return contradicts(fmt::format("--causal={}", causal.getValue()),
                       kernel.causal ? "true" : "false", "causal =");
  if (causalAlign.getNumOccurrences() &&
      (causalAlign == "bottom-right") !=
          (kernel.causalAlign == CausalAlign::bottom_right))
    return contradicts("--causal-align=" + causalAlign.getValue(),
                       kernel.causalAlign == CausalAlign::bottom_right
                           ? "bottom-right"
                           : "top-left",
                       "causal alignment");
  // A causal kernel's right side is 0, which --window may spell -1 or 0.
  bool windowAgrees = flags.windowLeft == kernel.windowLeft &&
                      (kernel.causal ? flags.windowRight <= 0
                                     : flags.windowRight == kernel.windowRight);
  if (window.getNumOccurrences() && !windowAgrees)
    return contradicts("--window=" + window.getValue(),
                       fmt::format("{},{}", kernel.windowLeft,
                                   kernel.causal ? 0 : kernel.windowRight),
                       "window");
  if (softcap.getNumOccurrences() &&
      static_cast<float>(softcap) != kernel.softcap)
    return contradicts(fmt::format("--softcap={}", softcap.getValue()),
                       fmt::format("{}", kernel.softcap), "softcap");
  if (noLse.getNumOccurrences() && !noLse != kernel.withLse)
    return contradicts(fmt::format("--no-lse={}", noLse.getValue()),
                       kernel.withLse ? "operand" : "(none)", "lse");
  if (varlen.getNumOccurrences() && varlen != kernel.varlen)
    return contradicts(fmt::format("--varlen={}", varlen.getValue()),
                       kernel.varlen ? "true" : "false", "varlen =");
  if (scale.getNumOccurrences()) {
    double asked = scale > 0 ? scale : 1.0 / std::sqrt(double(kernel.headDim));
    if (static_cast<float>(asked) != kernel.scale)
      return contradicts(fmt::format("--scale={}", scale.getValue()),
                         fmt::format("{}", kernel.scale), "scale");
  }
  spec.headDim = kernel.headDim;
  spec.bf16 = kernel.bf16;
  spec.causal = kernel.causal;
  spec.causalAlign = kernel.causalAlign;
  spec.windowLeft = kernel.windowLeft;
  spec.windowRight = kernel.windowRight;
  spec.withLse = kernel.withLse;
  spec.scale = kernel.scale;
  spec.softcap = kernel.softcap;
  spec.varlen = kernel.varlen;
  if (kernel.tiling) {
    std::tuple<const char *, cl::opt<int64_t> &, int64_t> overrides[] = {
        {"block-m", blockM, kernel.tiling->blockM},
        {"block-n", blockN, kernel.tiling->blockN},
        {"num-warps", numWarps, kernel.tiling->numWarps}};
    for (auto &[name, flag, value] : overrides)
      if (flag.getNumOccurrences() && flag != value)
        return contradicts(fmt::format("--{}={}", name, flag.getValue()),
                           std::to_string(value), name);
    if (noBlockSkip.getNumOccurrences())
      return op->emitError("--no-block-skip has no effect on a kernel that "
                           "is already tiled; pass it when tiling");
    // attn-online-softmax marks the exponentials; a tiled module has them.
    if (exp2Emulate.getNumOccurrences())
      return op->emitError("--exp2-emulate has no effect on a kernel that "
                           "is already tiled; pass it when tiling");
    spec.blockM = kernel.tiling->blockM;
    spec.blockN = kernel.tiling->blockN;
    spec.numWarps = kernel.tiling->numWarps;
  }
  return spec;
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
  if (causalAlign != "top-left" && causalAlign != "bottom-right")
    return fail(fmt::format("unsupported --causal-align={}; supported: "
                            "top-left, bottom-right",
                            causalAlign.getValue()));
  if (emit != "mlir" && emit != "nvvm" && emit != "llvm" && emit != "ptx")
    return fail(fmt::format("unsupported --emit={}; supported: mlir, nvvm, "
                            "llvm, ptx",
                            emit.getValue()));
  spec.bf16 = dtype == "bf16";
  spec.headDim = headDim;
  spec.causal = causal;
  spec.causalAlign = causalAlign == "bottom-right" ? CausalAlign::bottom_right
                                                   : CausalAlign::top_left;
  if (!parseWindow(window, spec.windowLeft, spec.windowRight))
    return fail(fmt::format("invalid --window={}; give two integers L,R, each "
                            "-1 (unbounded) or a number of keys, e.g. "
                            "--window=256,0",
                            window.getValue()));
  spec.scale = scale;
  spec.softcap = softcap;
  spec.withLse = !noLse;
  spec.blockM = blockM;
  spec.blockN = blockN;
  spec.numWarps = numWarps;
  spec.skipMaskedBlocks = !noBlockSkip;
  spec.warpSpecialize = !noWarpSpecialize;
  spec.stages = stages;
  spec.intraWgOverlap = !noIntraWgOverlap;
  spec.pingpong = !noPingpong;
  spec.boundedSoftmax = !noBoundedSoftmax;
  spec.tmaStore = askedChoice(tmaStore);
  spec.persistent = askedChoice(persistentGrid);
  spec.flushDenormals = !noFlushDenormals;
  spec.varlen = varlen;
  if (!parseExp2Emulate(exp2Emulate, spec.exp2EmulatedEighths))
    return fail(fmt::format("invalid --exp2-emulate={}; give a fraction from "
                            "0 to 1 in eighths: 0, 1/8, 1/4, 3/8, 1/2, 5/8, "
                            "3/4, 7/8 or 1",
                            exp2Emulate.getValue()));
  spec.llvmOptLevel = llvmOptLevel;
  spec.kvCache = kvCache || pagedKv != 0 || splitKv || combineKernel;
  spec.pageSize = pagedKv;
  spec.splitKv = splitKv;
  spec.headPack = headPack;
  spec.combine = combineKernel;
  // A KV cache's causal diagonal is bottom-right (flash_attn_with_kvcache).
  if (spec.kvCache && spec.causal && !causalAlign.getNumOccurrences())
    spec.causalAlign = CausalAlign::bottom_right;
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
    FailureOr<AttentionSpec> merged = mergeSpecFlags(*module, *kernel, spec);
    if (failed(merged))
      return 1;
    spec = *merged;
    stage = kernel->stage;
    if (stage == Stage::lowered && emit == "mlir")
      return fail("the input is already lowered to the LLVM dialect; use "
                  "--emit=nvvm, llvm or ptx");
  }
  if (llvm::Error error = validateSpec(spec))
    return fail(llvm::toString(std::move(error)));
  if (stage != Stage::lowered) {
    TileConfig config = tileConfigOf(spec);
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
  if (!module)
    module = buildSpecModule(context, spec);

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  if (stage == Stage::problem)
    buildTilePipeline(pm, spec);
  if (emit != "mlir" && stage != Stage::lowered)
    buildLoweringPipeline(pm, spec.flushDenormals);
  if (failed(pm.run(*module)))
    return 1;

  std::string text;
  if (emit == "mlir" || emit == "nvvm") {
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
