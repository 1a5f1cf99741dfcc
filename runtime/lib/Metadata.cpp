//===- Metadata.cpp - Kernel metadata reader and validator ------------------===//
//
// The metadata JSON sits beside the PTX and tells the runtime everything it
// needs to launch the kernel (docs/ABI.md "Metadata JSON"). Every key is
// required (but "varlen", false when absent, which older metadata lacks);
// unknown keys are ignored so newer compilers can add facts.
//
//===----------------------------------------------------------------------===//

#include "Metadata.h"

#include "Error.h"
#include "Json.h"

#include <charconv>
#include <cstdint>
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
/// TMA boxes' inner extent must be a multiple of 16 bytes.
static constexpr int kTmaInnerAlignBytes = 16;
/// Largest window side (keys): the kernels' index arithmetic is 32-bit.
static constexpr long long kMaxWindowSide = INT32_MAX;

unsigned KernelParam::bytes() const {
  switch (kind) {
  case ParamKind::TensorMap:
    return kTensorMapBytes;
  case ParamKind::Pointer:
  case ParamKind::Stride:
    return 8;
  case ParamKind::Size:
    return 4;
  }
  return 0;
}

/// Names of the attnrt_size values, in order.
static constexpr const char *kSizeNames[] = {"batch",        "nq",         "nk",
                                             "num_heads",    "num_kv_heads", "max_seqlen_q",
                                             "num_splits",   "max_blocks", "num_blocks",
                                             "max_seqlen_k"};
/// Number of attnrt_size values.
static constexpr int kNumSizes = sizeof(kSizeNames) / sizeof(kSizeNames[0]);
/// Names of the attnrt_kernel_kind values, in order.
static constexpr const char *kKindNames[] = {"forward", "combine"};
/// Largest page a paged kernel may declare (a multiple of 16).
static constexpr int kMaxPageSize = 1 << 16;
/// Rows per page step: pages are whole 16-row MMA k steps.
static constexpr int kPageRowMultiple = 16;
/// Most query heads one tile may pack.
static constexpr int kMaxHeadPack = 64;
/// Stride dimension letters.
static constexpr const char *kStrideDims[] = {"b", "n", "h"};
/// Most CTAs per SM a persistent kernel may ask for.
static constexpr int kMaxCtasPerSm = 32;

const char *sizeName(int size) {
  return size >= 0 && size < kNumSizes ? kSizeNames[size] : "invalid";
}

const char *tensorRoleName(TensorRole role) {
  int t = static_cast<int>(role);
  return t >= 0 && t < kNumTensorRoles ? abi::kTensorRoleNames[t] : "invalid";
}

int tmaSwizzleSpanOf(int boxCols, int elementBytes) {
  int bytes = boxCols * elementBytes;
  return bytes == 32 || bytes == 64 || bytes == 128 ? bytes : 0;
}

int tmaElementBytes(TensorRole role, int dtype) {
  if (role == TensorRole::DqAccum)
    return 4;
  // FP8 kernels: one-byte Q, K and V, a bf16 O.
  return dtype == ATTNRT_DTYPE_E4M3 && role != TensorRole::O ? 1 : kElementBytes;
}

const char *dtypeName(int dtype) {
  switch (dtype) {
  case ATTNRT_DTYPE_F16:
    return "f16";
  case ATTNRT_DTYPE_BF16:
    return "bf16";
  case ATTNRT_DTYPE_E4M3:
    return "e4m3";
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
  /// Reads the members of `object`; `prefix` ("params[3].") goes in front of
  /// every key in messages.
  explicit MetadataReader(const JsonValue &object, std::string keyPrefix = "")
      : root(object), prefix(std::move(keyPrefix)) {}

  /// The member `key` of the given kind (no copy), for nested values.
  attnrt_status getValue(const char *key, JsonValue::Kind kind, const char *expected,
                         const JsonValue *&value) {
    return lookup(key, kind, expected, value);
  }

  /// "params[3].tensor" for messages.
  std::string keyName(const char *key) const { return prefix + key; }

  /// A string that is one of `choices` (n of them); `out` gets its index.
  attnrt_status getChoice(const char *key, const char *const *choices, int n, int &out) {
    std::string text;
    if (attnrt_status s = getString(key, text))
      return s;
    std::string list;
    for (int i = 0; i < n; ++i) {
      if (text == choices[i]) {
        out = i;
        return ATTNRT_OK;
      }
      list += std::string(i ? ", \"" : "\"") + choices[i] + "\"";
    }
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"%s\" = \"%s\" is not one of %s; %s", keyName(key).c_str(),
                text.c_str(), list.c_str(), kRegenerate);
  }

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
                  "kernel metadata key \"%s\" must be an integer but is %s: %s", keyName(key).c_str(), text.c_str(),
                  kRegenerate);
    long long parsed = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc() || end != text.data() + text.size() || parsed < lo || parsed > hi)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%s\" = %s is out of range: it must be between %lld and "
                  "%lld; %s",
                  keyName(key).c_str(), text.c_str(), lo, hi, kRegenerate);
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
                  keyName(key).c_str(), text.c_str(), allowZero ? ">=" : ">", kRegenerate);
    out = parsed;
    return ATTNRT_OK;
  }

private:
  const JsonValue &root;

  const std::string prefix;

  attnrt_status lookup(const char *key, JsonValue::Kind kind, const char *expected,
                       const JsonValue *&value) {
    value = root.find(key);
    if (!value)
      return fail(ATTNRT_ERROR_INVALID_METADATA, "kernel metadata has no key \"%s\": %s",
                  keyName(key).c_str(), kRegenerate);
    if (value->kind != kind)
      return fail(ATTNRT_ERROR_INVALID_METADATA, "kernel metadata key \"%s\" must be %s but is %s; %s",
                  keyName(key).c_str(), expected, describeKind(value->kind), kRegenerate);
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

/// Reads one entry of "params" (an object) into `param`.
attnrt_status readParam(const JsonValue &item, size_t index, int dtype, KernelParam &param) {
  std::string prefix = "params[" + std::to_string(index) + "].";
  if (item.kind != JsonValue::Kind::Object)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"params\" must be an array of objects but element %zu is %s; %s",
                index, describeKind(item.kind), kRegenerate);
  MetadataReader reader(item, prefix);
  if (attnrt_status s = reader.getString("name", param.name))
    return s;
  static constexpr const char *kinds[] = {"tensor_map", "pointer", "stride", "size"};
  int kind = 0;
  if (attnrt_status s = reader.getChoice("kind", kinds, 4, kind))
    return s;
  param.kind = static_cast<ParamKind>(kind);
  if (param.kind == ParamKind::Size)
    return reader.getChoice("size", kSizeNames, kNumSizes, param.size);
  int tensor = 0;
  if (attnrt_status s = reader.getChoice("tensor", abi::kTensorRoleNames, kNumTensorRoles, tensor))
    return s;
  param.tensor = static_cast<TensorRole>(tensor);
  // TMA descriptors exist for the tensors the kernels copy in (q, k, v)
  // and the output they store with the TMA (o);
  // strides for the [B, N, H, D] tensors (q, k, v, o, o_partial: b, n, h)
  // and the block table's rows (b); the row vectors are contiguous.
  // The backward kernels copy dout in too and address dq, dk and dv with
  // strides.
  bool mapped = param.tensor <= TensorRole::O || param.tensor == TensorRole::Dout ||
                param.tensor == TensorRole::DqAccum;
  bool descale = param.tensor == TensorRole::QDescale || param.tensor == TensorRole::KDescale ||
                 param.tensor == TensorRole::VDescale;
  bool strided = param.tensor <= TensorRole::O || param.tensor == TensorRole::OPartial ||
                 param.tensor == TensorRole::BlockTable || param.tensor == TensorRole::AlibiSlopes ||
                 (param.tensor >= TensorRole::Dout && param.tensor <= TensorRole::Dv &&
                  param.tensor != TensorRole::Delta) ||
                 param.tensor == TensorRole::DqAccum || descale;
  if ((param.kind == ParamKind::TensorMap && !mapped) ||
      (param.kind == ParamKind::Stride && !strided))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"%stensor\" = \"%s\" cannot have a %s parameter (%s); %s",
                prefix.c_str(), abi::kTensorRoleNames[tensor], kinds[kind],
                param.kind == ParamKind::TensorMap
                    ? "TMA descriptors exist for q, k, v, o, dout and dq_accum"
                    : "strides exist for q, k, v, o, o_partial, block_table, alibi_slopes, dout, "
                      "dq, dk, dv, dq_accum and the descales",
                kRegenerate);
  if (param.kind == ParamKind::Stride) {
    if (attnrt_status s = reader.getChoice("dim", kStrideDims, 3, param.dim))
      return s;
    bool matrix =
        param.tensor == TensorRole::BlockTable || param.tensor == TensorRole::AlibiSlopes;
    if (matrix && param.dim != 0)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%sdim\" of %s must be \"b\" (its row stride); %s",
                  prefix.c_str(), abi::kTensorRoleNames[tensor], kRegenerate);
    if (descale && param.dim == 1)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"%sdim\" of %s must be \"b\" or \"h\" (a [B, Hkv] "
                  "descale); %s",
                  prefix.c_str(), abi::kTensorRoleNames[tensor], kRegenerate);
    return ATTNRT_OK;
  }
  if (param.kind != ParamKind::TensorMap)
    return ATTNRT_OK;
  const JsonValue *box;
  if (attnrt_status s = reader.getValue("box", JsonValue::Kind::Array, "an array [columns, rows]", box))
    return s;
  if (box->items.size() != 2 || box->items[0].kind != JsonValue::Kind::Number ||
      box->items[1].kind != JsonValue::Kind::Number)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"%sbox\" must be two integers [columns, rows]; %s", prefix.c_str(),
                kRegenerate);
  JsonValue dims;
  dims.kind = JsonValue::Kind::Object;
  dims.members = {{"box[0]", box->items[0]}, {"box[1]", box->items[1]}};
  MetadataReader boxReader(dims, prefix);
  if (attnrt_status s = boxReader.getInt("box[0]", 1, kMaxTmaBox, param.boxCols))
    return s;
  if (attnrt_status s = boxReader.getInt("box[1]", 1, kMaxTmaBox, param.boxRows))
    return s;
  // A box row is one swizzle span: 32, 64 or 128 bytes.
  int elementBytes = tmaElementBytes(param.tensor, dtype);
  if (tmaSwizzleSpanOf(param.boxCols, elementBytes) == 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"%sbox\" has %d columns, invalid for a swizzled TMA box: its "
                "row (%d bytes) must be one swizzle span of 32, 64 or 128 bytes (of %d-byte "
                "elements); %s",
                prefix.c_str(), param.boxCols, param.boxCols * elementBytes, elementBytes,
                kRegenerate);
  return ATTNRT_OK;
}

/// A varlen kernel ("varlen": true) reads both cu_seqlens pointers, and a
/// dense one neither; packed tensors have no batch stride, and only a varlen
/// kernel's grid or sizes may name max_seqlen_q (a dense call has none).
attnrt_status checkVarlenParams(const attnrt_kernel_info &info, const KernelAbi &abi,
                                const bool pointer[kNumTensorRoles]) {
  bool cuQ = pointer[static_cast<int>(TensorRole::CuSeqlensQ)];
  bool cuK = pointer[static_cast<int>(TensorRole::CuSeqlensK)];
  if (cuQ != cuK || cuQ != (info.varlen != 0))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"varlen\": %s but \"params\" has %s: a variable-length "
                "kernel reads both cu_seqlens_q and cu_seqlens_k, a dense one neither; %s",
                info.varlen ? "true" : "false",
                cuQ && cuK ? "both cu_seqlens pointers"
                : cuQ      ? "a cu_seqlens_q pointer only"
                : cuK      ? "a cu_seqlens_k pointer only"
                           : "no cu_seqlens pointer",
                kRegenerate);
  for (const KernelParam &p : abi.params) {
    // ALiBi's slopes and FP8's descales are [B, H] in a packed batch too (B
    // its sequences).
    bool perSequence = p.tensor == TensorRole::AlibiSlopes || p.tensor == TensorRole::QDescale ||
                       p.tensor == TensorRole::KDescale || p.tensor == TensorRole::VDescale ||
                       p.tensor == TensorRole::BlockTable;
    // A paged K/V keeps its page (b) stride.
    perSequence = perSequence || (info.page_size > 0 && (p.tensor == TensorRole::K ||
                                                         p.tensor == TensorRole::V));
    if (info.varlen && p.kind == ParamKind::Stride && p.dim == 0 && !perSequence)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata parameter \"%s\" is a batch stride, but a varlen kernel's "
                  "tensors are packed [total, H, D] and have none; %s",
                  p.name.c_str(), kRegenerate);
    if (!info.varlen && p.kind == ParamKind::Size &&
        (p.size == ATTNRT_SIZE_MAX_SEQLEN_Q || p.size == ATTNRT_SIZE_MAX_SEQLEN_K))
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata parameter \"%s\" is %s, which only a varlen kernel "
                  "(\"varlen\": true) takes; %s",
                  p.name.c_str(), kSizeNames[p.size], kRegenerate);
  }
  if (!info.varlen)
    for (int d = 0; d < info.grid_dims; ++d)
      if (info.grid_size[d] == ATTNRT_SIZE_MAX_SEQLEN_Q ||
          info.grid_size[d] == ATTNRT_SIZE_MAX_SEQLEN_K)
        return fail(ATTNRT_ERROR_INVALID_METADATA,
                    "kernel metadata key \"grid.tiles[%d].size\" is \"%s\", which only a "
                    "varlen kernel (\"varlen\": true) has; %s",
                    d, kSizeNames[info.grid_size[d]], kRegenerate);
  return ATTNRT_OK;
}

/// Reads "params" and checks it describes a forward kernel: pointers to q,
/// k, v and o (lse exactly when the kernel writes it), no parameter twice,
/// descriptors exactly when uses_tma; fills the tma_* fields of `info`.
attnrt_status readParams(const JsonValue &root, attnrt_kernel_info &info, KernelAbi &abi) {
  MetadataReader reader(root);
  const JsonValue *list;
  if (attnrt_status s = reader.getValue("params", JsonValue::Kind::Array, "an array of objects", list))
    return s;
  abi.params.clear();
  for (size_t i = 0; i < list->items.size(); ++i) {
    KernelParam param;
    if (attnrt_status s = readParam(list->items[i], i, info.dtype, param))
      return s;
    for (const KernelParam &other : abi.params)
      if (other.kind == param.kind && other.tensor == param.tensor && other.dim == param.dim &&
          other.size == param.size)
        return fail(ATTNRT_ERROR_INVALID_METADATA,
                    "kernel metadata \"params\" lists parameter \"%s\" twice (\"%s\" is the same): each tensor "
                    "map, pointer, stride and size is passed once; %s",
                    param.name.c_str(), other.name.c_str(), kRegenerate);
    abi.params.push_back(param);
  }
  bool pointer[kNumTensorRoles] = {}, anyMap = false, size[kNumSizes] = {};
  for (const KernelParam &p : abi.params) {
    if (p.kind == ParamKind::Pointer)
      pointer[static_cast<int>(p.tensor)] = true;
    if (p.kind == ParamKind::Size)
      size[p.size] = true;
    if (p.kind == ParamKind::TensorMap) {
      anyMap = true;
      int *rows[] = {&info.tma_box_rows_q, &info.tma_box_rows_k, &info.tma_box_rows_v,
                      &info.tma_box_rows_o};
      // dout's box is q's (the same rows of a query block).
      if (p.tensor <= TensorRole::O)
        *rows[static_cast<int>(p.tensor)] = p.boxRows;
      // The f32 dQ accumulator's panels are as wide in bytes, not columns.
      if (p.tensor == TensorRole::DqAccum)
        continue;
      // An FP8 kernel's one-byte Q, K and V (V transposed: a panel of keys)
      // and its bf16 O each have their own panel width.
      if (info.dtype == ATTNRT_DTYPE_E4M3) {
        if (!info.tma_box_cols)
          info.tma_box_cols = p.boxCols;
        continue;
      }
      if (info.tma_box_cols && info.tma_box_cols != p.boxCols)
        return fail(ATTNRT_ERROR_INVALID_METADATA,
                    "kernel metadata parameter \"%s\" has a %d-column TMA box but another has %d: "
                    "the kernels use one panel width; %s",
                    p.name.c_str(), p.boxCols, info.tma_box_cols, kRegenerate);
      info.tma_box_cols = p.boxCols;
    }
  }
  // What each kind of kernel must take (docs/ABI.md "Kernel parameters",
  // "KV cache and split-KV").
  struct Need {
    bool present;
    const char *what;
    const char *why;
  };
  bool combine = info.kind == ATTNRT_KERNEL_COMBINE;
  bool paged = info.page_size > 0;
  auto role = [](TensorRole r) { return static_cast<int>(r); };
  const Need needs[] = {
      {combine || pointer[0], "pointer to q", "a forward kernel reads q, k, v and writes o"},
      {combine || pointer[1], "pointer to k", "a forward kernel reads q, k, v and writes o"},
      {combine || pointer[2], "pointer to v", "a forward kernel reads q, k, v and writes o"},
      {pointer[3], "pointer to o", "a forward kernel reads q, k, v and writes o"},
      {!info.kv_cache || pointer[role(TensorRole::CacheSeqlens)], "pointer to cache_seqlens",
       "a KV-cache kernel reads each sequence's key count"},
      {!paged || (pointer[role(TensorRole::BlockTable)] && size[ATTNRT_SIZE_MAX_BLOCKS] &&
                   size[ATTNRT_SIZE_NUM_BLOCKS]),
       "the block_table pointer and the max_blocks and num_blocks sizes",
       "a paged kernel looks its pages up in the block table"},
      {!(info.split_kv || combine) ||
           (pointer[role(TensorRole::OPartial)] && pointer[role(TensorRole::LsePartial)] &&
            size[ATTNRT_SIZE_NUM_SPLITS]),
       "the o_partial and lse_partial pointers and the num_splits size",
       "split-KV and combine kernels exchange partial results through the workspace"},
  };
  bool backward = info.backward != ATTNRT_BACKWARD_NONE;
  bool gradients = pointer[role(TensorRole::Dout)] && pointer[role(TensorRole::Delta)] &&
                   pointer[role(TensorRole::Dq)] && pointer[role(TensorRole::Dk)] &&
                   pointer[role(TensorRole::Dv)];
  if (backward != gradients)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"backward\": \"%s\" but \"params\" %s the pointers to "
                "dout, delta, dq, dk and dv; %s",
                backward ? "dq, dkdv, pre, fused or post" : "none", gradients ? "has" : "lacks",
                kRegenerate);
  bool accumulates = info.backward == ATTNRT_BACKWARD_PRE ||
                     info.backward == ATTNRT_BACKWARD_FUSED ||
                     info.backward == ATTNRT_BACKWARD_POST;
  if (accumulates != (pointer[role(TensorRole::DqAccum)] != 0))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata's \"backward\" and its pointer to dq_accum disagree (only the "
                "one-kernel backward's pre, fused and post kernels take one); %s",
                kRegenerate);
  for (const Need &need : needs)
    if (!need.present)
      return fail(ATTNRT_ERROR_INVALID_METADATA, "kernel metadata \"params\" has no %s: %s; %s",
                  need.what, need.why, kRegenerate);
  // A varlen kernel may read a paged K/V through a block table.
  bool pagedVarlen = info.varlen && paged;
  if (!info.kv_cache && !combine &&
      (pointer[role(TensorRole::CacheSeqlens)] ||
       (pointer[role(TensorRole::BlockTable)] && !pagedVarlen) ||
       pointer[role(TensorRole::OPartial)] || pointer[role(TensorRole::LsePartial)]))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata \"params\" binds a KV-cache or split-KV tensor but the kernel is "
                "neither (\"kv_cache\": false, \"kind\": \"forward\"); %s",
                kRegenerate);
  if (pointer[role(TensorRole::AlibiSlopes)] != (info.alibi != 0))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"alibi\": %s but \"params\" %s; %s",
                info.alibi ? "true" : "false",
                info.alibi ? "has no pointer to alibi_slopes" : "has a pointer to alibi_slopes",
                kRegenerate);
  if (pointer[4] != (info.lse != 0))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"lse\": %s but \"params\" %s; %s", info.lse ? "true" : "false",
                pointer[4] ? "has a pointer to lse" : "has no pointer to lse", kRegenerate);
  if (anyMap != (info.uses_tma != 0))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"uses_tma\": %s but \"params\" %s TMA descriptors; %s",
                info.uses_tma ? "true" : "false", anyMap ? "has" : "has no", kRegenerate);
  return checkVarlenParams(info, abi, pointer);
}

/// Reads "grid": {"tiles": [{"size", "tile"}, ...], "ctas_per_sm"}.
attnrt_status readGrid(const JsonValue &root, attnrt_kernel_info &info) {
  MetadataReader reader(root);
  const JsonValue *grid;
  if (attnrt_status s = reader.getValue("grid", JsonValue::Kind::Object, "an object", grid))
    return s;
  MetadataReader gridReader(*grid, "grid.");
  const JsonValue *tiles;
  if (attnrt_status s = gridReader.getValue("tiles", JsonValue::Kind::Array, "an array of objects", tiles))
    return s;
  if (tiles->items.empty() || tiles->items.size() > 3)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"grid.tiles\" has %zu entries: a grid has 1 to 3 dimensions; %s",
                tiles->items.size(), kRegenerate);
  info.grid_dims = static_cast<int>(tiles->items.size());
  for (int i = 0; i < info.grid_dims; ++i) {
    const JsonValue &tile = tiles->items[i];
    if (tile.kind != JsonValue::Kind::Object)
      return fail(ATTNRT_ERROR_INVALID_METADATA,
                  "kernel metadata key \"grid.tiles\" must be an array of objects but element %d is "
                  "%s; %s",
                  i, describeKind(tile.kind), kRegenerate);
    MetadataReader tileReader(tile, "grid.tiles[" + std::to_string(i) + "].");
    if (attnrt_status s = tileReader.getChoice("size", kSizeNames, kNumSizes, info.grid_size[i]))
      return s;
    if (attnrt_status s = tileReader.getInt("tile", 1, kMaxBlockRows, info.grid_tile[i]))
      return s;
    // Optional: a size multiplying the tiles (split-KV's num_splits).
    info.grid_times[i] = -1;
    if (tile.find("times"))
      if (attnrt_status s = tileReader.getChoice("times", kSizeNames, kNumSizes, info.grid_times[i]))
        return s;
  }
  return gridReader.getInt("ctas_per_sm", 0, kMaxCtasPerSm, info.ctas_per_sm);
}

//===----------------------------------------------------------------------===//
// The problem: the PROBLEM rows of spec_fields.def, each under its metadata
// key, read by its kind; then the rules across them.
//===----------------------------------------------------------------------===//

/// The range of an integer problem key (others: any int).
struct IntRange {
  const char *key;
  long long lo, hi;
};
constexpr IntRange kIntRanges[] = {{"head_dim", 1, kMaxHeadDim},
                                   {"head_dim_v", 0, kMaxHeadDim},
                                   {"window_left", -1, kMaxWindowSide},
                                   {"window_right", -1, kMaxWindowSide},
                                   {"page_size", 0, kMaxPageSize},
                                   {"head_pack", 1, kMaxHeadPack}};
/// Keys metadata written before variable-length batches, the KV cache, the
/// backward, ALiBi, FP8 block scales and FP8's row-major V lacks: they read
/// as their defaults when absent.
constexpr const char *kOptionalKeys[] = {"varlen",       "kind",       "kv_cache",
                                         "split_kv",     "page_size",  "head_pack",
                                         "backward",     "alibi",      "head_dim_v",
                                         "block_scales", "v_row_major"};

/// How a problem field of each kind is read from its key (spec_fields.def's
/// kinds, as the C struct holds them).
namespace kind {
struct Bool {
  static attnrt_status read(MetadataReader &r, const char *key, int &out) { return r.getBool(key, out); }
};
using NoBool = Bool;
struct Int {
  static attnrt_status read(MetadataReader &r, const char *key, int &out) {
    long long lo = INT32_MIN, hi = INT32_MAX;
    for (const IntRange &range : kIntRanges)
      if (std::strcmp(range.key, key) == 0)
        lo = range.lo, hi = range.hi;
    return r.getInt(key, lo, hi, out);
  }
};
using Window = Int;
struct Real {
  /// The scale is positive; a soft cap may be 0 (none).
  static attnrt_status read(MetadataReader &r, const char *key, double &out) {
    return r.getFiniteReal(key, /*allowZero=*/std::strcmp(key, "scale") != 0, out);
  }
};
struct Element {
  static attnrt_status read(MetadataReader &r, const char *key, int &out) {
    static constexpr const char *names[] = {"f16", "bf16", "e4m3"};
    static constexpr int dtypes[] = {ATTNRT_DTYPE_F16, ATTNRT_DTYPE_BF16, ATTNRT_DTYPE_E4M3};
    int index = 0;
    if (attnrt_status s = r.getChoice(key, names, 3, index))
      return s;
    out = dtypes[index];
    return ATTNRT_OK;
  }
};
struct Align {
  /// "none" (no diagonal) reads as top-left; readProblem checks it fits.
  /// The CLI's spelling, and the IR's that earlier metadata used.
  static attnrt_status read(MetadataReader &r, const char *key, int &out) {
    static constexpr const char *names[] = {"top-left", "bottom-right", "none", "top_left",
                                            "bottom_right"};
    int index = 0;
    if (attnrt_status s = r.getChoice(key, names, 5, index))
      return s;
    out = index % 3 == 1 ? ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT : ATTNRT_CAUSAL_ALIGN_TOP_LEFT;
    return ATTNRT_OK;
  }
};
struct Backward {
  static attnrt_status read(MetadataReader &r, const char *key, int &out) {
    static constexpr const char *names[] = {"none", "dq", "dkdv", "pre", "fused", "post"};
    return r.getChoice(key, names, 6, out);
  }
};
struct Combine {
  static attnrt_status read(MetadataReader &r, const char *key, int &out) {
    return r.getChoice(key, kKindNames, 2, out);
  }
};
} // namespace kind

/// Reads one problem field: its key, or its default where an optional key
/// is absent.
template <class Kind, class T>
attnrt_status readProblemField(MetadataReader &reader, const JsonValue &root, const char *key,
                               T defaultValue, T &out) {
  out = defaultValue;
  if (!root.find(key))
    for (const char *optional : kOptionalKeys)
      if (std::strcmp(optional, key) == 0)
        return ATTNRT_OK;
  return Kind::read(reader, key, out);
}

attnrt_status readProblem(const JsonValue &root, attnrt_kernel_info &info) {
  MetadataReader reader(root);
#define SPEC_FIELD(Group, InC, Member, name, json, Kind, Default, ...)         \
  ATTNRT_READ_##Group(json, Kind, Default)
#define ATTNRT_READ_PROBLEM(json, Kind, Default)                               \
  if (attnrt_status s = readProblemField<kind::Kind>(reader, root, #json,      \
                                                     decltype(info.json)(Default), info.json)) \
    return s;
#define ATTNRT_READ_TARGET(...)
#define ATTNRT_READ_TILING(...)
#define ATTNRT_READ_SCHEDULE(...)
#define ATTNRT_READ_BACKEND(...)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNRT_READ_PROBLEM
#undef ATTNRT_READ_TARGET
#undef ATTNRT_READ_TILING
#undef ATTNRT_READ_SCHEDULE
#undef ATTNRT_READ_BACKEND

  if (info.head_dim % (kTmaInnerAlignBytes / kElementBytes) != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"head_dim\" = %d is not a multiple of 8: attngen kernels copy "
                "16-byte chunks of a row; %s",
                info.head_dim, kRegenerate);
  if (info.head_dim_v % (kTmaInnerAlignBytes / kElementBytes) != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"head_dim_v\" = %d is not a multiple of 8: attngen kernels "
                "copy 16-byte chunks of a row; %s",
                info.head_dim_v, kRegenerate);
  // The forward kernels (dense, varlen, KV cache) and the deterministic
  // backward pair take a value head dim of its own; the combine kernel and
  // the one-kernel backward have one head dim.
  bool pair = info.backward == ATTNRT_BACKWARD_NONE || info.backward == ATTNRT_BACKWARD_DQ ||
              info.backward == ATTNRT_BACKWARD_DKDV;
  if (info.head_dim_v != 0 && (info.kind == ATTNRT_KERNEL_COMBINE || !pair))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata gives \"head_dim_v\" = %d to a combine or one-kernel backward "
                "kernel, which have one head dim; %s",
                info.head_dim_v, kRegenerate);
  if (info.causal && info.window_right > 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"causal\": true with \"window_right\" = %d, but a causal "
                "row sees no key right of its diagonal (window_right is -1 or 0 then); %s",
                info.window_right, kRegenerate);
  // causal_align places the diagonal of a causal mask or a window.
  // ALiBi measures its distances from that diagonal too.
  bool diagonal =
      info.causal || info.window_left >= 0 || info.window_right >= 0 || info.alibi;
  std::string align;
  if (attnrt_status s = reader.getString("causal_align", align))
    return s;
  if ((align == "none") == diagonal)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"causal_align\" = \"%s\" does not fit \"causal\": %s, "
                "\"window_left\": %d, \"window_right\": %d: it must be \"none\" for a kernel "
                "without a causal mask or a window and \"top-left\" or \"bottom-right\" for "
                "one with either; %s",
                align.c_str(), info.causal ? "true" : "false", info.window_left, info.window_right,
                kRegenerate);
  if (info.page_size % kPageRowMultiple != 0)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata key \"page_size\" = %d is not a multiple of 16; %s",
                info.page_size, kRegenerate);
  bool combine = info.kind == ATTNRT_KERNEL_COMBINE;
  if (!info.kv_cache && !combine &&
      ((info.page_size && !info.varlen) || info.split_kv || info.head_pack != 1))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata has \"page_size\", \"split_kv\" or \"head_pack\" of a KV-cache "
                "kernel but \"kv_cache\": false (only a varlen kernel may read pages); %s",
                kRegenerate);
  // A varlen kernel's pages: the forward only (the compiler's rule).
  if (!info.kv_cache && info.page_size && info.backward != ATTNRT_BACKWARD_NONE)
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata has a \"page_size\" on a varlen backward kernel; only the "
                "varlen forward reads pages; %s",
                kRegenerate);
  if (combine && (info.kv_cache || info.page_size))
    return fail(ATTNRT_ERROR_INVALID_METADATA,
                "kernel metadata says \"kind\": \"combine\" with \"kv_cache\": true or a page "
                "size: a combine kernel reads only the split-KV workspace; %s",
                kRegenerate);
  return ATTNRT_OK;
}

/// Reads every key of the metadata object into `info` and `abi`.
attnrt_status readMetadata(const JsonValue &root, attnrt_kernel_info &info, KernelAbi &abi) {
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

  if (attnrt_status s = readProblem(root, info))
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
  if (attnrt_status s = readGrid(root, info))
    return s;
  return readParams(root, info, abi);
}

} // namespace

attnrt_status parseMetadata(const char *json, attnrt_kernel_info &out, KernelAbi *abiOut) {
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
  info.num_sms = info.max_ctas_per_sm = -1;
  KernelAbi abi;
  if (attnrt_status s = readMetadata(root, info, abi))
    return s;
  out = info;
  if (abiOut)
    *abiOut = std::move(abi);
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
