//===- Metadata.cpp - Kernel metadata reader and validator ------------------===//
//
// The metadata JSON sits beside the PTX and tells the runtime everything it
// needs to launch the kernel (docs/ABI.md "Metadata JSON"). Every key is
// required; unknown keys are ignored so newer compilers can add facts.
//
//===----------------------------------------------------------------------===//

#include "Metadata.h"

#include "Error.h"
#include "Json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace attnrt {

/// Largest head dim a kernel may declare (a 16-byte multiple up to 256).
static constexpr int kMaxHeadDim = 256;
/// CUDA's limit on threads per block.
static constexpr int kMaxThreadsPerBlock = 1024;
/// Threads per warp: num_threads must be whole warps.
static constexpr int kWarpSize = 32;
/// Largest tile a kernel may declare along M or N.
static constexpr int kMaxBlockRows = 1024;
/// Generous upper bound on dynamic shared memory; the device's own opt-in
/// limit (227 KiB on H100/H200) is checked at load time.
static constexpr int kMaxSharedBytes = 1 << 20;
/// cuTensorMapEncodeTiled: each box dimension is at most 256 elements.
static constexpr int kMaxTmaBox = 256;
/// With CU_TENSOR_MAP_SWIZZLE_128B the box's inner extent is at most 128 B.
static constexpr int kSwizzleSpanBytes = 128;
/// TMA boxes' inner extent must be a multiple of 16 bytes.
static constexpr int kTmaInnerAlignBytes = 16;

const std::vector<AbiParam> &abiParams(bool usesTma) {
  static const std::vector<AbiParam> common = {
      {"q", 8},          {"k", 8},          {"v", 8},          {"o", 8},          {"lse", 8},
      {"q_stride_b", 8}, {"q_stride_n", 8}, {"q_stride_h", 8}, {"k_stride_b", 8}, {"k_stride_n", 8},
      {"k_stride_h", 8}, {"v_stride_b", 8}, {"v_stride_n", 8}, {"v_stride_h", 8}, {"o_stride_b", 8},
      {"o_stride_n", 8}, {"o_stride_h", 8}, {"nq", 4},         {"nk", 4},         {"num_heads", 4},
      {"num_kv_heads", 4}};
  static const std::vector<AbiParam> withTma = [] {
    std::vector<AbiParam> params = {
        {"tma_q", kTensorMapBytes}, {"tma_k", kTensorMapBytes}, {"tma_v", kTensorMapBytes}};
    params.insert(params.end(), common.begin(), common.end());
    return params;
  }();
  return usesTma ? withTma : common;
}

const char *dtypeName(int dtype) {
  switch (dtype) {
  case ATTNRT_DTYPE_F16:
    return "f16";
  case ATTNRT_DTYPE_BF16:
    return "bf16";
  default:
    return "invalid";
  }
}

namespace {

/// Hint appended to every metadata error.
constexpr const char *kRegenerate = "regenerate the kernel and its .json with attngen (docs/ABI.md lists every key)";

/// Typed access to the keys of the metadata object; each getter records a
/// message naming the key on failure.
class MetadataReader {
public:
  explicit MetadataReader(const JsonValue &object) : root(object) {}

  attnrt_status getString(const char *key, std::string &out) {
    const JsonValue *value;
    if (attnrt_status s = lookup(key, JsonValue::Kind::String, "a string", value))
      return s;
    out = value->text;
    return ATTNRT_OK;
  }

  attnrt_status getBool(const char *key, int &out) {
    const JsonValue *value;
    if (attnrt_status s = lookup(key, JsonValue::Kind::Bool, "true or false", value))
      return s;
    out = value->boolean ? 1 : 0;
    return ATTNRT_OK;
  }

  /// An integer (no fraction, no exponent) within [lo, hi].
  attnrt_status getInt(const char *key, long long lo, long long hi, int &out) {
    const JsonValue *value;
    if (attnrt_status s = lookup(key, JsonValue::Kind::Number, "an integer", value))
      return s;
    const std::string &text = value->text;
    if (text.find_first_of(".eE") != std::string::npos)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%s\" must be an integer but is %s: %s", key, text.c_str(),
                  kRegenerate);
    long long parsed = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc() || end != text.data() + text.size() || parsed < lo || parsed > hi)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%s\" = %s is out of range: it must be between %lld and "
                  "%lld; %s",
                  key, text.c_str(), lo, hi, kRegenerate);
    out = static_cast<int>(parsed);
    return ATTNRT_OK;
  }

  /// A finite number > 0.
  attnrt_status getPositiveReal(const char *key, double &out) {
    return getFiniteReal(key, /*allowZero=*/false, out);
  }

  /// A finite number >= 0.
  attnrt_status getNonNegativeReal(const char *key, double &out) {
    return getFiniteReal(key, /*allowZero=*/true, out);
  }

  /// A finite number > 0, or >= 0 with `allowZero`.
  attnrt_status getFiniteReal(const char *key, bool allowZero, double &out) {
    const JsonValue *value;
    if (attnrt_status s = lookup(key, JsonValue::Kind::Number, "a number", value))
      return s;
    const std::string &text = value->text;
    double parsed = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    bool inRange = allowZero ? parsed >= 0 : parsed > 0;
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(parsed) || !inRange)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%s\" = %s is invalid: it must be a finite number %s 0; %s",
                  key, text.c_str(), allowZero ? ">=" : ">", kRegenerate);
    out = parsed;
    return ATTNRT_OK;
  }

  /// An array whose elements are all strings.
  attnrt_status getStringArray(const char *key, std::vector<std::string> &out) {
    const JsonValue *value;
    if (attnrt_status s = lookup(key, JsonValue::Kind::Array, "an array of strings", value))
      return s;
    out.clear();
    for (size_t i = 0; i < value->items.size(); ++i) {
      const JsonValue &item = value->items[i];
      if (item.kind != JsonValue::Kind::String)
        return fail(ATTNRT_ERROR_INVALID_METADATA,
                    "kernel metadata key \"%s\" must be an array of strings but element %zu is %s; "
                    "%s",
                    key, i, describeKind(item.kind), kRegenerate);
      out.push_back(item.text);
    }
    return ATTNRT_OK;
  }

private:
  const JsonValue &root;

  attnrt_status lookup(const char *key, JsonValue::Kind kind, const char *expected,
                       const JsonValue *&value) {
    value = root.find(key);
    if (!value)
      return fail(ATTNRT_ERROR_INVALID_METADATA, "kernel metadata has no key \"%s\": %s", key,
                  kRegenerate);
    if (value->kind != kind)
      return fail(ATTNRT_ERROR_INVALID_METADATA, "kernel metadata key \"%s\" must be %s but is %s; %s",
                  key, expected, describeKind(value->kind), kRegenerate);
    return ATTNRT_OK;
  }
};

/// PTX identifiers: [A-Za-z_$][A-Za-z0-9_$]* (a leading % is reserved).
bool isPtxIdentifier(const std::string &name) {
  if (name.empty())
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0))
      return false;
  }
  return true;
}

/// "a, b, c" for the expected params list in messages.
std::string joinNames(const std::vector<AbiParam> &params) {
  std::string text;
  for (const AbiParam &param : params) {
    if (!text.empty())
      text += ", ";
    text += param.name;
  }
  return text;
}

/// Checks "params" against abiParams(usesTma), naming the first difference.
attnrt_status checkParams(const std::vector<std::string> &params, bool usesTma) {
  const std::vector<AbiParam> &expected = abiParams(usesTma);
  size_t common = params.size() < expected.size() ? params.size() : expected.size();
  for (size_t i = 0; i < common; ++i)
    if (params[i] != expected[i].name)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"params\" differs from the ABI v1 parameter list (uses_tma = "
                  "%s) at position %zu: expected \"%s\", found \"%s\"; the runtime passes [%s]; %s",
                  usesTma ? "true" : "false", i, expected[i].name, params[i].c_str(),
                  joinNames(expected).c_str(), kRegenerate);
  if (params.size() != expected.size())
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"params\" has %zu entries but the ABI v1 parameter list "
                "(uses_tma = %s) has %zu: the runtime passes [%s]; %s",
                params.size(), usesTma ? "true" : "false", expected.size(), joinNames(expected).c_str(),
                kRegenerate);
  return ATTNRT_OK;
}

/// Reads every key of the metadata object into `info`.
attnrt_status readMetadata(const JsonValue &root, attnrt_kernel_info &info) {
  MetadataReader reader(root);
  std::string text;

  if (attnrt_status s = reader.getString("format", text))
    return s;
  if (text != ATTNRT_METADATA_FORMAT)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"format\" is \"%s\" but this runtime reads \"%s\": build the "
                "runtime and the kernels from the same attngen version",
                text.c_str(), ATTNRT_METADATA_FORMAT);

  if (attnrt_status s = reader.getString("kernel", text))
    return s;
  if (!isPtxIdentifier(text) || text.size() >= sizeof(info.kernel))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"kernel\" = \"%s\" is not a PTX entry name (letters, digits, "
                "'_' or '$', not starting with a digit, at most %zu characters); %s",
                text.c_str(), sizeof(info.kernel) - 1, kRegenerate);
  std::memcpy(info.kernel, text.c_str(), text.size() + 1);

  if (attnrt_status s = reader.getString("arch", text))
    return s;
  if (text != "sm_80" && text != "sm_90a")
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"arch\" = \"%s\" is not supported: it must be \"sm_80\" or "
                "\"sm_90a\"; %s",
                text.c_str(), kRegenerate);
  std::memcpy(info.arch, text.c_str(), text.size() + 1);

  if (attnrt_status s = reader.getString("dtype", text))
    return s;
  if (text == "f16")
    info.dtype = ATTNRT_DTYPE_F16;
  else if (text == "bf16")
    info.dtype = ATTNRT_DTYPE_BF16;
  else
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"dtype\" = \"%s\" is not supported: it must be \"f16\" or "
                "\"bf16\"; %s",
                text.c_str(), kRegenerate);

  if (attnrt_status s = reader.getInt("head_dim", 1, kMaxHeadDim, info.head_dim))
    return s;
  if (info.head_dim % (kTmaInnerAlignBytes / kElementBytes) != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"head_dim\" = %d is not a multiple of 8: attngen kernels copy "
                "16-byte chunks of a row; %s",
                info.head_dim, kRegenerate);
  int causal = 0;
  if (attnrt_status s = reader.getBool("causal", causal))
    return s;
  if (attnrt_status s = reader.getString("causal_align", text))
    return s;
  if (text == "none" && !causal)
    info.causal = ATTNRT_CAUSAL_NONE;
  else if (text == "top_left" && causal)
    info.causal = ATTNRT_CAUSAL_TOP_LEFT;
  else if (text == "bottom_right" && causal)
    info.causal = ATTNRT_CAUSAL_BOTTOM_RIGHT;
  else
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"causal_align\" = \"%s\" does not fit \"causal\": %s: it "
                "must be \"none\" for a kernel without a causal mask and \"top_left\" or "
                "\"bottom_right\" for a causal one; %s",
                text.c_str(), causal ? "true" : "false", kRegenerate);
  if (attnrt_status s = reader.getBool("lse", info.lse))
    return s;
  if (attnrt_status s = reader.getPositiveReal("scale", info.scale))
    return s;
  // The soft cap is baked into the kernel and changes nothing at launch:
  // checked, not kept (attnrt_kernel_info has no room left for it).
  double softcap = 0;
  if (attnrt_status s = reader.getNonNegativeReal("softcap", softcap))
    return s;
  if (attnrt_status s = reader.getInt("block_m", 1, kMaxBlockRows, info.block_m))
    return s;
  if (attnrt_status s = reader.getInt("block_n", 1, kMaxBlockRows, info.block_n))
    return s;
  if (attnrt_status s = reader.getInt("num_threads", kWarpSize, kMaxThreadsPerBlock, info.num_threads))
    return s;
  if (info.num_threads % kWarpSize != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"num_threads\" = %d is not a multiple of the warp size 32; %s",
                info.num_threads, kRegenerate);
  if (attnrt_status s = reader.getInt("smem_bytes", 0, kMaxSharedBytes, info.smem_bytes))
    return s;

  if (attnrt_status s = reader.getBool("uses_tma", info.uses_tma))
    return s;
  if (info.uses_tma && std::strcmp(info.arch, "sm_90a") != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"uses_tma\": true with \"arch\": \"%s\", but TMA exists only "
                "on sm_90a; %s",
                info.arch, kRegenerate);
  // The TMA keys are always present (0 when unused); their ranges matter
  // only for TMA kernels.
  if (attnrt_status s = reader.getInt("tma_box_cols", 0, kMaxTmaBox, info.tma_box_cols))
    return s;
  if (attnrt_status s = reader.getInt("tma_box_rows_q", 0, kMaxTmaBox, info.tma_box_rows_q))
    return s;
  if (attnrt_status s = reader.getInt("tma_box_rows_k", 0, kMaxTmaBox, info.tma_box_rows_k))
    return s;
  if (attnrt_status s = reader.getInt("tma_box_rows_v", 0, kMaxTmaBox, info.tma_box_rows_v))
    return s;
  if (info.uses_tma) {
    int innerBytes = info.tma_box_cols * kElementBytes;
    if (info.tma_box_cols == 0 || innerBytes % kTmaInnerAlignBytes != 0 || innerBytes > kSwizzleSpanBytes)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"tma_box_cols\" = %d is invalid for a 128B-swizzled TMA box: "
                  "its row must be 16 to 128 bytes in 16-byte steps (8 to 64 elements of %s); %s",
                  info.tma_box_cols, dtypeName(info.dtype), kRegenerate);
    const char *rowKeys[] = {"tma_box_rows_q", "tma_box_rows_k", "tma_box_rows_v"};
    int rows[] = {info.tma_box_rows_q, info.tma_box_rows_k, info.tma_box_rows_v};
    for (int i = 0; i < 3; ++i)
      if (rows[i] < 1)
        return fail(ATTNRT_ERROR_INVALID_METADATA,
                    "kernel metadata key \"%s\" = %d is invalid: a TMA box has 1 to 256 rows; %s",
                    rowKeys[i], rows[i], kRegenerate);
  }

  std::vector<std::string> params;
  if (attnrt_status s = reader.getStringArray("params", params))
    return s;
  return checkParams(params, info.uses_tma != 0);
}

} // namespace

attnrt_status parseMetadata(const char *json, attnrt_kernel_info &out) {
  if (!json)
    return fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                "the metadata JSON text is NULL: pass the contents of the kernel's .json file");
  JsonValue root;
  std::string error;
  if (!parseJson(json, root, error))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata is not valid JSON (%s): fix or regenerate the .json file",
                error.c_str());
  if (root.kind != JsonValue::Kind::Object)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata must be a JSON object but is %s: pass the kernel's .json file, not "
                "the PTX or another file",
                describeKind(root.kind));

  attnrt_kernel_info info;
  std::memset(&info, 0, sizeof(info));
  info.device = info.cc_major = info.cc_minor = -1;
  info.num_regs = info.local_bytes = info.static_smem_bytes = info.max_threads_per_block = -1;
  if (attnrt_status s = readMetadata(root, info))
    return s;
  out = info;
  return ATTNRT_OK;
}

} // namespace attnrt

extern "C" attnrt_status attnrt_metadata_parse(const char *metadata_json, attnrt_kernel_info *out) {
  return attnrt::guardApi("attnrt_metadata_parse", [&] {
    if (!out)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_metadata_parse got out = NULL: pass the address of an "
                          "attnrt_kernel_info to fill");
    return attnrt::parseMetadata(metadata_json, *out);
  });
}
