//===- selftest.cpp - attnrt checks that need no GPU ------------------------===//
//
// Exercises every validation path of the C API without a GPU and without a
// CUDA driver: metadata parsing, PTX/metadata consistency, driver loading
// failures and forward-argument checks. Prints one line per check,
//   PASS <name>            or   FAIL <name>: <why>
// then "N passed, M failed", and exits nonzero if any check failed.
//
//===----------------------------------------------------------------------===//

#include "attnrt/attnrt.h"
#include "attnrt/attnrt_quantize.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

int passed = 0;
int failed = 0;

/// Records one check.
void report(bool ok, const std::string &name, const std::string &why = "") {
  if (ok) {
    ++passed;
    std::printf("PASS %s\n", name.c_str());
  } else {
    ++failed;
    std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
  }
}

/// Checks `got` == `want` and that the last error contains every fragment.
void expectStatus(const std::string &name, attnrt_status got, attnrt_status want,
                  std::vector<std::string> fragments = {}) {
  std::string message = attnrt_last_error();
  if (got != want) {
    report(false, name,
           std::string("expected ") + attnrt_status_name(want) + ", got " + attnrt_status_name(got) +
               " (" + message + ")");
    return;
  }
  if (want != ATTNRT_OK) {
    for (const std::string &fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        report(false, name, "message lacks '" + fragment + "': " + message);
        return;
      }
    }
  }
  report(true, name);
}

//===----------------------------------------------------------------------===//
// Metadata and PTX fixtures
//===----------------------------------------------------------------------===//

/// An ordered JSON object built from raw value texts, so a test can drop or
/// replace one key.
using Fields = std::vector<std::pair<std::string, std::string>>;

std::string toJson(const Fields &fields) {
  std::string json = "{\n";
  for (size_t i = 0; i < fields.size(); ++i)
    json += "  \"" + fields[i].first + "\": " + fields[i].second + (i + 1 < fields.size() ? ",\n" : "\n");
  return json + "}\n";
}

Fields without(Fields fields, const std::string &key) {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].first == key) {
      fields.erase(fields.begin() + static_cast<long>(i));
      break;
    }
  return fields;
}

Fields with(Fields fields, const std::string &key, const std::string &value) {
  for (auto &field : fields)
    if (field.first == key) {
      field.second = value;
      return fields;
    }
  fields.emplace_back(key, value);
  return fields;
}

/// One parameter object of the metadata's "params" (docs/ABI.md).
std::string param(const std::string &name, const std::string &kind, const std::string &rest) {
  return "{\"name\": \"" + name + "\", \"kind\": \"" + kind + "\", " + rest + "}";
}

/// The ABI v2 parameter objects of a forward kernel, in attngen's order:
/// [3 tensor maps with boxes of `boxCols` x 128,] 5 (4 without LSE)
/// pointers, 12 strides, 5 sizes.
std::vector<std::string> paramObjects(bool tma, bool lse = true, int boxCols = 64) {
  std::vector<std::string> params;
  if (tma)
    for (const char *t : {"q", "k", "v"})
      params.push_back(param(std::string("tma_") + t, "tensor_map",
                             std::string("\"tensor\": \"") + t + "\", \"box\": [" +
                                 std::to_string(boxCols) + ", 128]"));
  for (const char *t : {"q", "k", "v", "o", "lse"})
    if (lse || std::string(t) != "lse")
      params.push_back(param(t, "pointer", std::string("\"tensor\": \"") + t + "\""));
  for (const char *t : {"q", "k", "v", "o"})
    for (const char *d : {"b", "n", "h"})
      params.push_back(param(std::string(t) + "_stride_" + d, "stride",
                             std::string("\"tensor\": \"") + t + "\", \"dim\": \"" + d + "\""));
  for (const char *size : {"batch", "nq", "nk", "num_heads", "num_kv_heads"})
    params.push_back(param(size, "size", std::string("\"size\": \"") + size + "\""));
  return params;
}

std::string jsonArray(const std::vector<std::string> &items) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ", " : "") + items[i];
  return text + "]";
}

/// The forward kernels' grid rule: (ceil(nq / 128), num_heads, batch).
const char *kForwardGrid = "{\"tiles\": [{\"size\": \"nq\", \"tile\": 128}, {\"size\": "
                           "\"num_heads\", \"tile\": 1}, {\"size\": \"batch\", \"tile\": 1}], "
                           "\"ctas_per_sm\": 0}";

/// Metadata of an sm_90a bf16 d128 causal TMA kernel.
Fields sm90aFields() {
  return {{"format", "\"attngen-kernel-v2\""},
          {"kernel", "\"attn_fwd_test\""},
          {"arch", "\"sm_90a\""},
          {"dtype", "\"bf16\""},
          {"head_dim", "128"},
          {"causal", "true"},
          {"causal_align", "\"top-left\""},
          {"window_left", "-1"},
          {"window_right", "-1"},
          {"lse", "true"},
          {"scale", "0.08838834764831845"},
          {"softcap", "0"},
          {"block_m", "128"},
          {"block_n", "128"},
          {"num_threads", "384"},
          {"smem_bytes", "98304"},
          {"uses_tma", "true"},
          {"grid", kForwardGrid},
          {"params", jsonArray(paramObjects(true))}};
}

/// Metadata of an sm_80 f16 d64 non-causal kernel.
Fields sm80Fields() {
  Fields f = sm90aFields();
  f = with(f, "kernel", "\"attn_fwd_sm80\"");
  f = with(f, "arch", "\"sm_80\"");
  f = with(f, "dtype", "\"f16\"");
  f = with(f, "head_dim", "64");
  f = with(f, "causal", "false");
  f = with(f, "causal_align", "\"none\"");
  f = with(f, "scale", "0.125");
  f = with(f, "block_n", "64");
  f = with(f, "num_threads", "128");
  f = with(f, "smem_bytes", "49152");
  f = with(f, "uses_tma", "false");
  return with(f, "params", jsonArray(paramObjects(false)));
}

/// A PTX module whose entry has the given parameter declarations.
std::string ptxText(const char *target, const char *entry, const std::vector<std::string> &params) {
  std::string ptx = "//\n// Generated for the attnrt self-test\n//\n\n.version 8.0\n.target ";
  ptx += target;
  ptx += "\n.address_size 64\n\n\t// .globl\t";
  ptx += entry;
  ptx += "\n.visible .entry ";
  ptx += entry;
  ptx += "(\n";
  for (size_t i = 0; i < params.size(); ++i)
    ptx += "\t" + params[i] + (i + 1 < params.size() ? ",\n" : "\n");
  ptx += ")\n.maxntid 128, 1, 1\n{\n\tret;\n}\n";
  return ptx;
}

/// Parameter declarations as LLVM's NVPTX backend writes them.
std::vector<std::string> ptxParams(const char *entry, bool tma) {
  std::vector<std::string> params;
  int index = 0;
  auto name = [&] { return std::string(entry) + "_param_" + std::to_string(index++); };
  if (tma)
    for (int i = 0; i < 3; ++i)
      params.push_back(".param .align 64 .b8 " + name() + "[128]");
  for (int i = 0; i < 5; ++i)
    params.push_back(".param .u64 .ptr .global .align 16 " + name());
  for (int i = 0; i < 12; ++i)
    params.push_back(".param .u64 " + name());
  for (int i = 0; i < 5; ++i)
    params.push_back(".param .u32 " + name());
  return params;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

void testBasics() {
  report(attnrt_abi_version() == ATTNRT_ABI_VERSION && ATTNRT_ABI_VERSION == 3,
         "basics: ABI version is 3");
  report(attnrt_sizeof_forward_args() == sizeof(attnrt_forward_args),
         "basics: sizeof(attnrt_forward_args) agrees with the header");
  report(attnrt_sizeof_kernel_info() == sizeof(attnrt_kernel_info),
         "basics: sizeof(attnrt_kernel_info) agrees with the header");
  report(std::strcmp(attnrt_status_name(ATTNRT_ERROR_INVALID_METADATA),
                     "ATTNRT_ERROR_INVALID_METADATA") == 0,
         "basics: status names");
}

void testMetadata() {
  attnrt_kernel_info info;
  attnrt_status s = attnrt_metadata_parse(toJson(sm90aFields()).c_str(), &info);
  expectStatus("metadata: sm_90a TMA kernel parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.head_dim == 128 && info.dtype == ATTNRT_DTYPE_BF16 && info.causal == 1 &&
             info.uses_tma == 1 && info.block_m == 128 && info.num_threads == 384 &&
             info.smem_bytes == 98304 && info.tma_box_cols == 64 && info.tma_box_rows_v == 128 && info.tma_box_rows_o == 0 &&
             std::strcmp(info.kernel, "attn_fwd_test") == 0 && std::strcmp(info.arch, "sm_90a") == 0 &&
             info.scale > 0.0883883 && info.scale < 0.0883884 && info.lse == 1 && info.device == -1 &&
             info.grid_dims == 3 && info.grid_size[0] == ATTNRT_SIZE_NQ && info.grid_tile[0] == 128 &&
             info.grid_size[2] == ATTNRT_SIZE_BATCH && info.ctas_per_sm == 0 && info.num_sms == -1 &&
             info.max_ctas_per_sm == -1,
         "metadata: sm_90a fields read back");
  // An output stored with the TMA (attn-tma-store): a box of one consumer
  // warpgroup's 64 rows.
  std::vector<std::string> withOutputMap = paramObjects(true);
  withOutputMap.insert(withOutputMap.begin() + 3,
                       param("tma_o", "tensor_map", "\"tensor\": \"o\", \"box\": [64, 64]"));
  s = attnrt_metadata_parse(
      toJson(with(sm90aFields(), "params", jsonArray(withOutputMap))).c_str(), &info);
  expectStatus("metadata: sm_90a kernel with a TMA store of o parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.tma_box_rows_o == 64 && info.tma_box_rows_q == 128,
         "metadata: the o descriptor's box rows read back");
  s = attnrt_metadata_parse(toJson(sm80Fields()).c_str(), &info);
  expectStatus("metadata: sm_80 kernel parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.dtype == ATTNRT_DTYPE_F16 && info.uses_tma == 0 && info.head_dim == 64,
         "metadata: sm_80 fields read back");
  report(s == ATTNRT_OK && info.causal == 0 && info.causal_align == ATTNRT_CAUSAL_ALIGN_TOP_LEFT,
         "metadata: a non-causal kernel reads as causal 0");
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "causal_align", "\"bottom-right\"")).c_str(),
                            &info);
  expectStatus("metadata: bottom-right causal kernel parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.causal == 1 && info.causal_align == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT,
         "metadata: bottom-right causal reads as causal 1, causal_align bottom-right");
  // Metadata written before the alignment took the CLI's spelling.
  for (const char *old : {"\"bottom_right\"", "\"top_left\""}) {
    s = attnrt_metadata_parse(toJson(with(sm90aFields(), "causal_align", old)).c_str(), &info);
    report(s == ATTNRT_OK && info.causal_align == (old[1] == 'b' ? ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT
                                                                  : ATTNRT_CAUSAL_ALIGN_TOP_LEFT),
           std::string("metadata: the older spelling ") + old + " reads back");
  }
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "softcap", "30")).c_str(), &info);
  report(s == ATTNRT_OK && info.softcap == 30.0,
         "metadata: the soft cap reads back (attnrt_kernel_info::softcap)");

  // The layouts bindings build their structs from: every member where the
  // compiler put it, the size the struct's.
  size_t count = 0, size = 0;
  const attnrt_field *fields = attnrt_struct_fields("attnrt_kernel_info", &count, &size);
  bool softcapAt = false, headDimAt = false;
  for (size_t i = 0; fields && i < count; ++i) {
    std::string name = fields[i].name;
    softcapAt |= name == "softcap" && fields[i].offset == offsetof(attnrt_kernel_info, softcap) &&
                 fields[i].type == ATTNRT_FIELD_DOUBLE && fields[i].count == 1;
    headDimAt |= name == "head_dim" && fields[i].offset == offsetof(attnrt_kernel_info, head_dim) &&
                 fields[i].type == ATTNRT_FIELD_INT;
  }
  report(fields && size == sizeof(attnrt_kernel_info) && softcapAt && headDimAt,
         "layout: attnrt_kernel_info's members as compiled");
  fields = attnrt_struct_fields("attnrt_forward_args", &count, &size);
  report(fields && size == sizeof(attnrt_forward_args) && fields[0].type == ATTNRT_FIELD_POINTER &&
             std::string(fields[11].name) == "q_strides" && fields[11].count == 4 &&
             fields[11].offset == offsetof(attnrt_forward_args, q_strides),
         "layout: attnrt_forward_args's members as compiled");
  report(attnrt_struct_fields("attnrt_nothing", &count, &size) == nullptr,
         "layout: another name has none");

  // Every key is required and must have its type.
  const std::vector<std::pair<std::string, std::string>> wrongTypes = {
      {"format", "1"},        {"kernel", "true"},      {"arch", "90"},          {"dtype", "null"},
      {"head_dim", "\"128\""}, {"causal", "1"},        {"lse", "\"false\""},  {"scale", "\"0.1\""},
      {"causal_align", "1"},  {"softcap", "\"30\""}, {"window_left", "\"256\""},
      {"window_right", "0.5"},
      {"block_m", "[128]"},    {"block_n", "{}"},       {"num_threads", "128.0"}, {"smem_bytes", "false"},
      {"uses_tma", "\"true\""}, {"grid", "[1]"}, {"params", "\"q,k,v\""}};
  for (const auto &field : sm90aFields()) {
    const std::string &key = field.first;
    s = attnrt_metadata_parse(toJson(without(sm90aFields(), key)).c_str(), &info);
    expectStatus("metadata: missing key \"" + key + "\"", s, ATTNRT_ERROR_INVALID_METADATA,
                 {"no key \"" + key + "\""});
  }
  for (const auto &wrong : wrongTypes) {
    s = attnrt_metadata_parse(toJson(with(sm90aFields(), wrong.first, wrong.second)).c_str(), &info);
    expectStatus("metadata: ill-typed key \"" + wrong.first + "\" = " + wrong.second, s,
                 ATTNRT_ERROR_INVALID_METADATA, {"\"" + wrong.first + "\""});
  }

  // Values.
  struct BadValue {
    const char *key;
    const char *value;
    const char *fragment;
  };
  const BadValue badValues[] = {
      {"format", "\"attngen-kernel-v1\"", "but this runtime reads \"attngen-kernel-v2\""},
      {"format", "\"\"", "\"format\" is \"\""},
      {"kernel", "\"1bad\"", "not a PTX entry name"},
      {"kernel", "\"\"", "not a PTX entry name"},
      {"arch", "\"sm_75\"", "\"arch\" = \"sm_75\" is not supported"},
      {"arch", "\"sm_90\"", "it must be \"sm_80\" or \"sm_90a\""},
      {"dtype", "\"fp32\"", "\"dtype\" = \"fp32\" is not one of \"f16\", \"bf16\""},
      {"head_dim", "0", "\"head_dim\" = 0 is out of range"},
      {"head_dim", "100", "\"head_dim\" = 100 is not a multiple of 8"},
      {"head_dim", "512", "\"head_dim\" = 512 is out of range"},
      {"num_threads", "100", "\"num_threads\" = 100 is not a multiple of the warp size"},
      {"num_threads", "2048", "\"num_threads\" = 2048 is out of range"},
      {"block_m", "0", "\"block_m\" = 0 is out of range"},
      {"block_m", "-64", "\"block_m\" = -64 is out of range"},
      {"smem_bytes", "-1", "\"smem_bytes\" = -1 is out of range"},
      {"smem_bytes", "99999999999999999999", "\"smem_bytes\" = 99999999999999999999 is out of range"},
      {"scale", "0", "\"scale\" = 0 is invalid"},
      {"scale", "-0.125", "\"scale\" = -0.125 is invalid"},
      {"softcap", "-30", "\"softcap\" = -30 is invalid: it must be a finite number >= 0"},
      {"grid", "{\"tiles\": [], \"ctas_per_sm\": 0}", "\"grid.tiles\" has 0 entries"},
      {"grid", "{\"tiles\": [{\"size\": \"nq\", \"tile\": 0}], \"ctas_per_sm\": 0}",
       "\"grid.tiles[0].tile\" = 0 is out of range"},
      {"grid", "{\"tiles\": [{\"size\": \"rows\", \"tile\": 1}], \"ctas_per_sm\": 0}",
       "\"grid.tiles[0].size\" = \"rows\" is not one of \"batch\", \"nq\""},
      {"grid", "{\"tiles\": [{\"size\": \"nq\", \"tile\": 64}], \"ctas_per_sm\": -1}",
       "\"grid.ctas_per_sm\" = -1 is out of range"},
      {"grid", "{\"tiles\": [{\"size\": \"nq\", \"tile\": 64}]}", "no key \"grid.ctas_per_sm\""},
      {"causal_align", "\"none\"",
       "\"causal_align\" = \"none\" does not fit \"causal\": true, \"window_left\": -1, "
       "\"window_right\": -1: it must be \"none\" for a kernel without a causal mask or a window "
       "and \"top-left\" or \"bottom-right\" for one with either"},
      {"window_left", "-2", "\"window_left\" = -2 is out of range: it must be between -1 and "
                            "2147483647"},
      {"window_right", "2147483648", "\"window_right\" = 2147483648 is out of range"},
      {"window_right", "5", "\"causal\": true with \"window_right\" = 5, but a causal row sees "
                            "no key right of its diagonal"},
      {"causal_align", "\"bottomright\"",
       "\"causal_align\" = \"bottomright\" is not one of \"top-left\", \"bottom-right\", \"none\""}};
  for (const BadValue &bad : badValues) {
    s = attnrt_metadata_parse(toJson(with(sm90aFields(), bad.key, bad.value)).c_str(), &info);
    expectStatus(std::string("metadata: bad value \"") + bad.key + "\" = " + bad.value, s,
                 ATTNRT_ERROR_INVALID_METADATA, {bad.fragment});
  }
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "softcap", "30.5")).c_str(), &info);
  expectStatus("metadata: a soft-capped kernel parses", s, ATTNRT_OK);
  // Boxes of one 64-byte or 32-byte swizzle panel (head dims 96, 40, ...).
  for (int cols : {32, 16}) {
    Fields f = with(sm90aFields(), "params", jsonArray(paramObjects(true, true, cols)));
    s = attnrt_metadata_parse(toJson(with(f, "head_dim", "96")).c_str(), &info);
    expectStatus("metadata: a TMA box of " + std::to_string(cols) + " columns parses", s, ATTNRT_OK);
    report(info.tma_box_cols == cols, "metadata: the box width of " + std::to_string(cols),
           "tma_box_cols = " + std::to_string(info.tma_box_cols));
  }
  std::vector<std::string> twoWidths = paramObjects(true);
  twoWidths[1] = param("tma_k", "tensor_map", "\"tensor\": \"k\", \"box\": [32, 128]");
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "params", jsonArray(twoWidths))).c_str(), &info);
  expectStatus("metadata: TMA boxes of two widths", s, ATTNRT_ERROR_INVALID_METADATA,
               {"\"tma_k\" has a 32-column TMA box but another has 64"});
  s = attnrt_metadata_parse(toJson(with(sm80Fields(), "causal_align", "\"top-left\"")).c_str(), &info);
  expectStatus("metadata: an alignment on a kernel without causal or window", s,
               ATTNRT_ERROR_INVALID_METADATA,
               {"\"causal_align\" = \"top-left\" does not fit \"causal\": false"});
  // A sliding window: its sides and alignment read back; causal is the
  // causal mask only.
  Fields window = with(with(sm80Fields(), "window_left", "100"), "window_right", "50");
  s = attnrt_metadata_parse(toJson(with(window, "causal_align", "\"bottom-right\"")).c_str(), &info);
  expectStatus("metadata: a bottom-right window kernel parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.causal == 0 && info.window_left == 100 && info.window_right == 50 &&
             info.causal_align == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT,
         "metadata: a window alone reads back its sides and alignment, causal 0");
  s = attnrt_metadata_parse(toJson(window).c_str(), &info);
  expectStatus("metadata: a window without an alignment", s, ATTNRT_ERROR_INVALID_METADATA,
               {"\"causal_align\" = \"none\" does not fit", "\"window_left\": 100"});
  s = attnrt_metadata_parse(
      toJson(with(with(sm90aFields(), "window_left", "256"), "window_right", "0")).c_str(), &info);
  expectStatus("metadata: a causal window with window_right 0 parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.causal == 1 && info.causal_align == ATTNRT_CAUSAL_ALIGN_TOP_LEFT &&
             info.window_left == 256,
         "metadata: a causal window reads as causal, its left side kept");
  s = attnrt_metadata_parse(toJson(with(sm80Fields(), "uses_tma", "true")).c_str(), &info);
  expectStatus("metadata: uses_tma on sm_80", s, ATTNRT_ERROR_INVALID_METADATA,
               {"\"uses_tma\": true with \"arch\": \"sm_80\""});

  // The params list: objects the runtime can bind, describing a forward
  // kernel. Its order is the kernel's (the PTX check compares sizes).
  std::vector<std::string> noO = paramObjects(true);
  noO.erase(noO.begin() + 6); // the pointer to o
  std::vector<std::string> twice = paramObjects(true);
  twice.push_back(param("nq_again", "size", "\"size\": \"nq\""));
  std::vector<std::string> reordered = paramObjects(true);
  std::swap(reordered[3], reordered[4]);
  auto withParam = [](const Fields &f, size_t index, const std::string &object) {
    std::vector<std::string> params = paramObjects(true);
    params[index] = object;
    return with(f, "params", jsonArray(params));
  };
  struct BadParams {
    const char *name;
    Fields fields;
    const char *fragment;
  };
  const BadParams badParams[] = {
      {"no pointer to o", with(sm90aFields(), "params", jsonArray(noO)), "has no pointer to o"},
      {"a parameter twice", with(sm90aFields(), "params", jsonArray(twice)),
       "\"params\" lists parameter \"nq_again\" twice (\"nq\" is the same)"},
      {"TMA descriptors on a non-TMA kernel", with(sm80Fields(), "params", jsonArray(paramObjects(true))),
       "\"uses_tma\": false but \"params\" has TMA descriptors"},
      {"no descriptors on a TMA kernel", with(sm90aFields(), "params", jsonArray(paramObjects(false))),
       "\"uses_tma\": true but \"params\" has no TMA descriptors"},
      {"an lse pointer on a kernel without LSE",
       with(sm90aFields(), "lse", "false"), "\"lse\": false but \"params\" has a pointer to lse"},
      {"no lse pointer on a kernel with LSE",
       with(sm90aFields(), "params", jsonArray(paramObjects(true, false))),
       "\"lse\": true but \"params\" has no pointer to lse"},
      {"unknown kind", withParam(sm90aFields(), 0, param("tma_q", "texture", "\"tensor\": \"q\"")),
       "\"params[0].kind\" = \"texture\" is not one of \"tensor_map\""},
      {"unknown tensor", withParam(sm90aFields(), 3, param("x", "pointer", "\"tensor\": \"x\"")),
       "\"params[3].tensor\" = \"x\" is not one of \"q\", \"k\", \"v\", \"o\", \"lse\""},
      {"descriptor of lse", withParam(sm90aFields(), 0, param("tma_lse", "tensor_map",
                                                              "\"tensor\": \"lse\", \"box\": [64, 128]")),
       "\"params[0].tensor\" = \"lse\" cannot have a tensor_map parameter (TMA descriptors exist "
       "for q, k, v, o, dout and dq_accum)"},
      {"stride of lse", withParam(sm90aFields(), 8, param("lse_stride_b", "stride",
                                                          "\"tensor\": \"lse\", \"dim\": \"b\"")),
       "\"params[8].tensor\" = \"lse\" cannot have a stride parameter"},
      {"stride of d", withParam(sm90aFields(), 8, param("q_stride_d", "stride",
                                                        "\"tensor\": \"q\", \"dim\": \"d\"")),
       "\"params[8].dim\" = \"d\" is not one of \"b\", \"n\", \"h\""},
      {"box without rows", withParam(sm90aFields(), 1, param("tma_k", "tensor_map",
                                                             "\"tensor\": \"k\", \"box\": [64]")),
       "\"params[1].box\" must be two integers"},
      {"box of 128 columns", withParam(sm90aFields(), 1, param("tma_k", "tensor_map",
                                                               "\"tensor\": \"k\", \"box\": [128, 128]")),
       "\"params[1].box\" has 128 columns, invalid for a swizzled TMA box"},
      {"box of 8 columns", withParam(sm90aFields(), 1, param("tma_k", "tensor_map",
                                                             "\"tensor\": \"k\", \"box\": [8, 128]")),
       "its row (16 bytes) must be one swizzle span of 32, 64 or 128 bytes"},
      {"box of 48 columns", withParam(sm90aFields(), 1, param("tma_k", "tensor_map",
                                                              "\"tensor\": \"k\", \"box\": [48, 128]")),
       "\"params[1].box\" has 48 columns"},
      {"box of 12 columns", withParam(sm90aFields(), 1, param("tma_k", "tensor_map",
                                                              "\"tensor\": \"k\", \"box\": [12, 128]")),
       "has 12 columns"},
      {"box of 257 rows", withParam(sm90aFields(), 2, param("tma_v", "tensor_map",
                                                            "\"tensor\": \"v\", \"box\": [64, 257]")),
       "\"params[2].box[1]\" = 257 is out of range"},
      {"no name", withParam(sm90aFields(), 5, "{\"kind\": \"pointer\", \"tensor\": \"v\"}"),
       "no key \"params[5].name\""},
      {"non-object element", with(sm90aFields(), "params", "[\"tma_q\", 2]"), "element 0 is a string"},
      {"empty", with(sm90aFields(), "params", "[]"), "has no pointer to q"}};
  for (const BadParams &bad : badParams) {
    s = attnrt_metadata_parse(toJson(bad.fields).c_str(), &info);
    expectStatus(std::string("metadata: params list ") + bad.name, s, ATTNRT_ERROR_INVALID_METADATA,
                 {"params", bad.fragment});
  }
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "params", jsonArray(reordered))).c_str(), &info);
  expectStatus("metadata: the runtime binds parameters by kind, in the kernel's order", s, ATTNRT_OK);

  // Strict JSON.
  std::string valid = toJson(sm90aFields());
  std::string trailingComma = valid;
  trailingComma.insert(trailingComma.rfind(']') + 1, ",");
  std::string duplicateKey = toJson(with(sm90aFields(), "zz", "\"bf16\""));
  duplicateKey.replace(duplicateKey.find("\"zz\""), 4, "\"dtype\"");
  const std::pair<const char *, std::string> badJson[] = {
      {"trailing comma", trailingComma},
      {"truncated", valid.substr(0, valid.size() / 2)},
      {"text after the object", valid + "{}"},
      {"duplicate key", duplicateKey},
      {"leading zero", toJson(with(sm90aFields(), "head_dim", "0128"))},
      {"comment", "// metadata\n" + valid},
      {"single quotes", "{'format': 'attngen-kernel-v1'}"},
      {"bad escape", toJson(with(sm90aFields(), "kernel", "\"a\\qb\""))},
      {"raw newline in a string", toJson(with(sm90aFields(), "kernel", "\"a\nb\""))},
      {"empty text", ""}};
  for (const auto &bad : badJson) {
    s = attnrt_metadata_parse(bad.second.c_str(), &info);
    expectStatus(std::string("metadata: invalid JSON, ") + bad.first, s, ATTNRT_ERROR_INVALID_METADATA,
                 {"not valid JSON (line "});
  }
  s = attnrt_metadata_parse(("[" + valid + "]").c_str(), &info);
  expectStatus("metadata: top-level array", s, ATTNRT_ERROR_INVALID_METADATA,
               {"must be a JSON object but is an array"});
  s = attnrt_metadata_parse(nullptr, &info);
  expectStatus("metadata: NULL text", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"metadata JSON text is NULL"});
  s = attnrt_metadata_parse(valid.c_str(), nullptr);
  expectStatus("metadata: NULL output", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"out = NULL"});

  // Unknown keys (any value) are ignored; escapes are decoded.
  Fields extended = with(sm90aFields(), "compiler", "{\"name\": \"attngen\", \"passes\": [1, [2.5e-3, null]]}");
  extended = with(extended, "note", "\"tab\\there \\u00e9 \\ud83d\\ude00\"");
  s = attnrt_metadata_parse(toJson(extended).c_str(), &info);
  expectStatus("metadata: unknown keys are ignored", s, ATTNRT_OK);
  s = attnrt_metadata_parse(toJson(with(sm90aFields(), "kernel", "\"attn_\\u0066wd\"")).c_str(), &info);
  report(s == ATTNRT_OK && std::strcmp(info.kernel, "attn_fwd") == 0, "metadata: \\u escapes decode",
         attnrt_last_error());
}

/// Module loading: what is checked before the driver is touched.
void testModuleLoad() {
  const std::string json90 = toJson(sm90aFields());
  const std::string ptx90 = ptxText("sm_90a", "attn_fwd_test", ptxParams("attn_fwd_test", true));
  const std::string json80 = toJson(sm80Fields());
  const std::string ptx80 = ptxText("sm_80", "attn_fwd_sm80", ptxParams("attn_fwd_sm80", false));
  attnrt_module *m = reinterpret_cast<attnrt_module *>(0x1);

  attnrt_status s = attnrt_module_load(ptx90.c_str(), json90.c_str(), nullptr);
  expectStatus("load: NULL output", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"out = NULL"});
  s = attnrt_module_load(nullptr, json90.c_str(), &m);
  expectStatus("load: NULL PTX", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"PTX text is NULL"});
  report(m == nullptr, "load: output is NULL after a failure");
  s = attnrt_module_load(ptx90.c_str(), nullptr, &m);
  expectStatus("load: NULL metadata", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"metadata JSON text is NULL"});
  s = attnrt_module_load(ptx90.c_str(), toJson(without(sm90aFields(), "smem_bytes")).c_str(), &m);
  expectStatus("load: bad metadata is reported before the driver is loaded", s,
               ATTNRT_ERROR_INVALID_METADATA, {"no key \"smem_bytes\""});

  // PTX against metadata.
  s = attnrt_module_load(ptx80.c_str(), json90.c_str(), &m);
  expectStatus("load: PTX .target differs from \"arch\"", s, ATTNRT_ERROR_INVALID_PTX,
               {"the PTX targets sm_80 but its metadata says \"arch\": \"sm_90a\""});
  std::string renamed = ptxText("sm_90a", "other_kernel", ptxParams("other_kernel", true));
  s = attnrt_module_load(renamed.c_str(), json90.c_str(), &m);
  expectStatus("load: PTX lacks the metadata's entry", s, ATTNRT_ERROR_INVALID_PTX,
               {"no .entry named 'attn_fwd_test' (it has: other_kernel)"});
  s = attnrt_module_load(ptxText("sm_90a", "attn_fwd_test", ptxParams("attn_fwd_test", false)).c_str(),
                         json90.c_str(), &m);
  expectStatus("load: PTX entry without the TMA parameters", s, ATTNRT_ERROR_INVALID_PTX,
               {"has 22 parameters but its metadata lists 25"});
  std::vector<std::string> narrowStride = ptxParams("attn_fwd_sm80", false);
  narrowStride[6] = ".param .u32 attn_fwd_sm80_param_6";
  s = attnrt_module_load(ptxText("sm_80", "attn_fwd_sm80", narrowStride).c_str(), json80.c_str(), &m);
  expectStatus("load: PTX parameter of the wrong size", s, ATTNRT_ERROR_INVALID_PTX,
               {"parameter 6 ('attn_fwd_sm80_param_6') is 4 bytes but the metadata's parameter 6 "
                "(\"q_stride_n\") is 8 bytes"});
  s = attnrt_module_load("this is not PTX", json80.c_str(), &m);
  expectStatus("load: text without .target", s, ATTNRT_ERROR_INVALID_PTX, {"no .target directive"});
  s = attnrt_module_load_files("/nonexistent/k.ptx", "/nonexistent/k.json", &m);
  expectStatus("load: missing PTX file", s, ATTNRT_ERROR_IO,
               {"cannot open the PTX file '/nonexistent/k.ptx'"});

  // Without a driver: the self-test forces a library that does not exist,
  // so it behaves the same on a GPU machine.
  setenv("ATTNRT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  s = attnrt_module_load(ptx90.c_str(), json90.c_str(), &m);
  expectStatus("load: no driver library (sm_90a)", s, ATTNRT_ERROR_NO_DRIVER,
               {"could not load the CUDA driver library '/nonexistent/libcuda.so.1'",
                "install the NVIDIA driver"});
  s = attnrt_module_load(ptx80.c_str(), json80.c_str(), &m);
  expectStatus("load: no driver library (sm_80)", s, ATTNRT_ERROR_NO_DRIVER, {"ATTNRT_CUDA_DRIVER"});
  report(m == nullptr, "load: output stays NULL without a driver");
#ifdef ATTNRT_TEST_STUB_DRIVER
  if (FILE *stub = std::fopen(ATTNRT_TEST_STUB_DRIVER, "rb")) {
    std::fclose(stub);
    setenv("ATTNRT_CUDA_DRIVER", ATTNRT_TEST_STUB_DRIVER, 1);
    s = attnrt_module_load(ptx90.c_str(), json90.c_str(), &m);
    expectStatus("load: the toolkit's stub driver is refused", s, ATTNRT_ERROR_NO_DRIVER,
                 {"is the CUDA toolkit's stub library", "CUDA_ERROR_STUB_LIBRARY"});
  } else {
    std::printf("SKIP load: stub driver %s not found\n", ATTNRT_TEST_STUB_DRIVER);
  }
#endif
  setenv("ATTNRT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);

  s = attnrt_forward(nullptr, nullptr, nullptr);
  expectStatus("forward: NULL module", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"module = NULL"});
  attnrt_kernel_info info;
  s = attnrt_module_info(nullptr, &info);
  expectStatus("info: NULL module", s, ATTNRT_ERROR_INVALID_ARGUMENT, {"needs a loaded module"});
  expectStatus("unload: NULL is a no-op", attnrt_module_unload(nullptr), ATTNRT_OK);
}

/// Fake, suitably aligned device addresses: the checks never dereference.
constexpr uintptr_t kQ = 0x7f0000000000, kK = 0x7f1000000000, kV = 0x7f2000000000,
                    kO = 0x7f3000000000, kLse = 0x7f4000000000;

/// Fills contiguous [B, N, H, D] strides.
void contiguous(int64_t strides[4], int64_t n, int64_t h, int64_t d) {
  strides[0] = n * h * d;
  strides[1] = h * d;
  strides[2] = d;
  strides[3] = 1;
}

/// A valid call for `info`: B=2, Nq=1000, Nk=333, H=4, Hkv=2, contiguous.
attnrt_forward_args validArgs(const attnrt_kernel_info &info) {
  attnrt_forward_args a;
  std::memset(&a, 0, sizeof(a));
  a.q = reinterpret_cast<const void *>(kQ);
  a.k = reinterpret_cast<const void *>(kK);
  a.v = reinterpret_cast<const void *>(kV);
  a.o = reinterpret_cast<void *>(kO);
  a.lse = reinterpret_cast<float *>(kLse);
  a.batch = 2;
  a.nq = 1000;
  a.nk = 333;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.head_dim = info.head_dim;
  contiguous(a.q_strides, a.nq, a.num_heads, a.head_dim);
  contiguous(a.k_strides, a.nk, a.num_kv_heads, a.head_dim);
  contiguous(a.v_strides, a.nk, a.num_kv_heads, a.head_dim);
  contiguous(a.o_strides, a.nq, a.num_heads, a.head_dim);
  a.dtype = info.dtype;
  return a;
}

void testArgs() {
  attnrt_kernel_info info;
  if (attnrt_metadata_parse(toJson(sm90aFields()).c_str(), &info) != ATTNRT_OK) {
    report(false, "args: fixture metadata parses", attnrt_last_error());
    return;
  }
  const attnrt_forward_args base = validArgs(info);
  auto check = [&](const std::string &name, attnrt_forward_args a, attnrt_status want,
                   std::vector<std::string> fragments = {}) {
    expectStatus("args: " + name, attnrt_check_forward_args(&info, &a), want, std::move(fragments));
  };
  constexpr attnrt_status kBad = ATTNRT_ERROR_INVALID_ARGUMENT;

  check("valid GQA call", base, ATTNRT_OK);
  unsigned grid[3], block[3], smem;
  attnrt_status s = attnrt_launch_dims(&info, &base, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 8 && grid[1] == 4 && grid[2] == 2 && block[0] == 384 &&
             block[1] == 1 && smem == 98304,
         "args: launch dims are (ceil(1000/128), H, B) x (num_threads) with smem_bytes",
         attnrt_last_error());
  expectStatus("args: NULL info", attnrt_check_forward_args(nullptr, &base), kBad, {"kernel info is NULL"});
  expectStatus("args: NULL args", attnrt_check_forward_args(&info, nullptr), kBad, {"args is NULL"});

  attnrt_forward_args a = base;
  a.lse = nullptr;
  check("lse may be NULL", a, ATTNRT_OK);

  // ALiBi's slopes: only for an ALiBi kernel, and then required, f32-aligned,
  // with a batch stride of 0 or at least H.
  static float slopes[64];
  a = base;
  a.alibi_slopes = slopes;
  check("slopes for a kernel without ALiBi", a, kBad,
        {"args.alibi_slopes is not NULL but kernel", "compiled without ALiBi"});
  attnrt_kernel_info alibiInfo = info;
  alibiInfo.alibi = 1;
  auto checkAlibi = [&](const std::string &name, attnrt_forward_args args, attnrt_status want,
                        std::vector<std::string> fragments = {}) {
    expectStatus("args: " + name, attnrt_check_forward_args(&alibiInfo, &args), want,
                 std::move(fragments));
  };
  a = base;
  checkAlibi("an ALiBi kernel without slopes", a, kBad, {"args.alibi_slopes is NULL"});
  a.alibi_slopes = slopes;
  checkAlibi("slopes per head (stride 0)", a, ATTNRT_OK);
  a.alibi_slopes_stride = a.num_heads;
  checkAlibi("slopes per (batch, head)", a, ATTNRT_OK);
  a.alibi_slopes_stride = a.num_heads - 1;
  checkAlibi("a batch stride below H", a, kBad, {"args.alibi_slopes_stride = 3 is invalid"});
  a.alibi_slopes_stride = 0;
  a.alibi_slopes = reinterpret_cast<const float *>(reinterpret_cast<const char *>(slopes) + 2);
  checkAlibi("misaligned slopes", a, kBad, {"is not 4-byte aligned"});

  // Empty problems launch nothing, whatever the pointers.
  a = base;
  a.nq = 0;
  a.q = nullptr;
  a.o = nullptr;
  check("nq == 0 is a no-op", a, ATTNRT_OK);
  s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 0 && grid[1] == 0 && grid[2] == 0, "args: nq == 0 has an empty grid");
  a = base;
  a.batch = 0;
  a.k = nullptr;
  check("batch == 0 is a no-op", a, ATTNRT_OK);

  // dtype and head_dim are compiled into the kernel.
  a = base;
  a.dtype = 7;
  check("dtype out of range", a, kBad, {"args.dtype = 7 is not a dtype"});
  a = base;
  a.dtype = ATTNRT_DTYPE_F16;
  check("dtype mismatch", a, kBad,
        {"args.dtype is f16 but kernel 'attn_fwd_test' was compiled for bf16"});
  a = base;
  a.head_dim = 64;
  check("head_dim mismatch", a, kBad, {"args.head_dim = 64 but kernel 'attn_fwd_test' was compiled "
                                       "for head_dim = 128"});

  // Sizes.
  const struct {
    const char *name;
    int64_t attnrt_forward_args::*field;
    int64_t value;
    const char *fragment;
  } sizes[] = {
      {"negative batch", &attnrt_forward_args::batch, -1, "args.batch = -1 is negative"},
      {"negative nq", &attnrt_forward_args::nq, -5, "args.nq = -5 is negative"},
      {"nk == 0", &attnrt_forward_args::nk, 0, "args.nk = 0 is invalid: it must be >= 1"},
      {"negative nk", &attnrt_forward_args::nk, -2, "args.nk = -2 is invalid"},
      {"num_heads == 0", &attnrt_forward_args::num_heads, 0, "args.num_heads = 0 is invalid"},
      {"num_kv_heads == 0", &attnrt_forward_args::num_kv_heads, 0, "args.num_kv_heads = 0 is invalid"},
      {"H not a multiple of Hkv", &attnrt_forward_args::num_heads, 5,
       "num_heads = 5 is not a multiple of num_kv_heads = 2"},
      {"nq beyond int32", &attnrt_forward_args::nq, int64_t(1) << 31,
       "args.nq = 2147483648 exceeds the kernel's 32-bit limit"},
      {"nk beyond int32", &attnrt_forward_args::nk, int64_t(3) << 31,
       "args.nk = 6442450944 exceeds the kernel's 32-bit limit"},
      {"num_heads beyond gridDim.y", &attnrt_forward_args::num_heads, 70000,
       "args.num_heads = 70000 exceeds the CUDA grid limit gridDim.y <= 65535"},
      {"batch beyond gridDim.z", &attnrt_forward_args::batch, 65536,
       "args.batch = 65536 exceeds the CUDA grid limit gridDim.z <= 65535"}};
  for (const auto &size : sizes) {
    a = base;
    a.*size.field = size.value;
    check(size.name, a, kBad, {size.fragment});
  }

  // Pointers.
  const struct {
    const char *name;
    const void *attnrt_forward_args::*field;
  } inputs[] = {{"q", &attnrt_forward_args::q}, {"k", &attnrt_forward_args::k}, {"v", &attnrt_forward_args::v}};
  for (const auto &input : inputs) {
    a = base;
    a.*input.field = nullptr;
    check(std::string("NULL ") + input.name, a, kBad, {std::string("args.") + input.name + " is NULL"});
    a = base;
    a.*input.field = reinterpret_cast<const char *>(a.*input.field) + 8;
    check(std::string("misaligned ") + input.name, a, kBad,
          {std::string("args.") + input.name + " = ", "is not 16-byte aligned"});
  }
  a = base;
  a.o = nullptr;
  check("NULL o", a, kBad, {"args.o is NULL"});
  a = base;
  a.o = reinterpret_cast<char *>(a.o) + 2;
  check("misaligned o", a, kBad, {"is not 16-byte aligned"});
  a = base;
  a.lse = reinterpret_cast<float *>(kLse + 4);
  check("misaligned lse", a, kBad, {"args.lse = ", "is not 16-byte aligned"});
  a = base;
  a.o = const_cast<void *>(a.k);
  check("o aliasing k", a, kBad, {"args.o is the same address as args.k"});

  // Strides.
  const struct {
    const char *name;
    int64_t *(*slot)(attnrt_forward_args &);
    int index;
    int64_t value;
    const char *fragment;
  } strides[] = {
      {"q_stride_n = 100", [](attnrt_forward_args &x) { return x.q_strides; }, 1, 100,
       "q_stride_n (q_strides[1]) = 100 is not a multiple of 8 elements: attngen kernels copy "
       "16-byte chunks; pad the stride"},
      {"k_stride_b = 12", [](attnrt_forward_args &x) { return x.k_strides; }, 0, 12,
       "k_stride_b (k_strides[0]) = 12 is not a multiple of 8 elements"},
      {"v_stride_h = 130", [](attnrt_forward_args &x) { return x.v_strides; }, 2, 130,
       "v_stride_h (v_strides[2]) = 130 is not a multiple of 8 elements"},
      {"o_stride_n = 4", [](attnrt_forward_args &x) { return x.o_strides; }, 1, 4,
       "o_stride_n (o_strides[1]) = 4 is not a multiple of 8 elements"},
      {"q_stride_d = 2", [](attnrt_forward_args &x) { return x.q_strides; }, 3, 2,
       "q_stride_d (q_strides[3]) = 2 but the head dimension must be contiguous (stride 1)"},
      {"v_stride_d = 0", [](attnrt_forward_args &x) { return x.v_strides; }, 3, 0,
       "v_stride_d (v_strides[3]) = 0 but the head dimension must be contiguous"},
      {"negative k_stride_n", [](attnrt_forward_args &x) { return x.k_strides; }, 1, -256,
       "k_stride_n (k_strides[1]) = -256 is negative"},
      {"q_stride_b beyond TMA's 2^40 bytes", [](attnrt_forward_args &x) { return x.q_strides; }, 0,
       int64_t(1) << 39, "q_stride_b (q_strides[0]) = 549755813888 elements is 2^40 bytes or more"}};
  for (const auto &stride : strides) {
    a = base;
    stride.slot(a)[stride.index] = stride.value;
    check(stride.name, a, kBad, {stride.fragment});
  }

  a = base;
  a.nk = INT32_MAX;
  a.k_strides[1] = int64_t(1) << 38;
  check("K span beyond 2^63 elements", a, kBad, {"K spans more than 2^63"});

  // Layouts that are fine.
  a = base;
  a.batch = 1;
  a.q_strides[0] = 3; // never stepped over when B == 1
  a.k_strides[0] = 0;
  check("stride of an extent-1 dimension is free", a, ATTNRT_OK);
  a = base; // Q made as (B, H, N, D) and viewed as (B, N, H, D)
  a.q_strides[0] = a.num_heads * a.nq * a.head_dim;
  a.q_strides[1] = a.head_dim;
  a.q_strides[2] = a.nq * a.head_dim;
  check("transposed (B, H, N, D) view", a, ATTNRT_OK);
  a = base; // rows padded to D + 8
  a.o_strides[2] = a.head_dim + 8;
  a.o_strides[1] = a.num_heads * (a.head_dim + 8);
  a.o_strides[0] = a.nq * a.o_strides[1];
  check("padded head stride", a, ATTNRT_OK);
  a = base;
  a.num_heads = a.num_kv_heads = 1;
  a.nq = a.nk = 1;
  check("single row, single head", a, ATTNRT_OK);

  // A non-TMA kernel allows strides beyond 2^40 bytes.
  attnrt_kernel_info info80;
  if (attnrt_metadata_parse(toJson(sm80Fields()).c_str(), &info80) == ATTNRT_OK) {
    a = validArgs(info80);
    a.q_strides[0] = int64_t(1) << 39;
    expectStatus("args: sm_80 kernel takes strides beyond 2^40 bytes", attnrt_check_forward_args(&info80, &a),
                 ATTNRT_OK);
  }
}

/// A kernel built without LSE ("lse": false) refuses an LSE pointer: it
/// would leave the caller's LSE tensor unwritten.
void testNoLse() {
  attnrt_kernel_info info;
  Fields f = with(with(with(sm80Fields(), "lse", "false"), "kernel", "\"attn_fwd_sm80_nolse\""),
                  "params", jsonArray(paramObjects(false, /*lse=*/false)));
  if (attnrt_metadata_parse(toJson(f).c_str(), &info) != ATTNRT_OK) {
    report(false, "nolse: metadata parses", attnrt_last_error());
    return;
  }
  report(info.lse == 0, "nolse: \"lse\": false reads back as info.lse = 0");
  attnrt_forward_args a = validArgs(info);
  expectStatus("nolse: an LSE pointer is refused", attnrt_check_forward_args(&info, &a),
               ATTNRT_ERROR_INVALID_ARGUMENT,
               {"args.lse is not NULL but kernel 'attn_fwd_sm80_nolse' was compiled without LSE",
                "pass lse = NULL"});
  unsigned grid[3], block[3], smem;
  expectStatus("nolse: launch dims refuse it too", attnrt_launch_dims(&info, &a, grid, block, &smem),
               ATTNRT_ERROR_INVALID_ARGUMENT, {"compiled without LSE"});
  a.lse = nullptr;
  expectStatus("nolse: lse = NULL is accepted", attnrt_check_forward_args(&info, &a), ATTNRT_OK);
}

/// The grid follows the metadata's rule: the tile space, or for a persistent
/// kernel at most ctas_per_sm CTAs per SM of the loaded module's device.
void testGridRule() {
  attnrt_kernel_info info;
  if (attnrt_metadata_parse(toJson(sm90aFields()).c_str(), &info) != ATTNRT_OK) {
    report(false, "grid: metadata parses", attnrt_last_error());
    return;
  }
  attnrt_forward_args a = validArgs(info);
  a.batch = 3;
  a.nq = 1000;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  unsigned grid[3], block[3], smem;
  attnrt_status s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 8 && grid[1] == 4 && grid[2] == 3 && block[0] == 384,
         "grid: (ceil(nq / 128), num_heads, batch) from the metadata's tiles");
  Fields persistent = with(sm90aFields(), "grid",
                           "{\"tiles\": [{\"size\": \"nq\", \"tile\": 128}, {\"size\": "
                           "\"num_heads\", \"tile\": 1}, {\"size\": \"batch\", \"tile\": 1}], "
                           "\"ctas_per_sm\": 1}");
  if (attnrt_metadata_parse(toJson(persistent).c_str(), &info) != ATTNRT_OK) {
    report(false, "grid: persistent metadata parses", attnrt_last_error());
    return;
  }
  expectStatus("grid: a persistent kernel needs the device's SM count",
               attnrt_launch_dims(&info, &a, grid, block, &smem), ATTNRT_ERROR_INVALID_ARGUMENT,
               {"is persistent", "pass the info of a loaded module"});
  info.num_sms = 132;
  s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 96 && grid[1] == 1 && grid[2] == 1,
         "grid: persistent, fewer tiles (96) than SMs: one CTA per tile");
  a.nq = 8192;
  s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 132 && grid[1] == 1 && grid[2] == 1,
         "grid: persistent, more tiles than SMs: one CTA per SM");
  // A persistent grid has no y/z dimension to overflow.
  a.num_heads = a.num_kv_heads = 70000;
  s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 132, "grid: persistent kernels take 70000 heads");
}

//===----------------------------------------------------------------------===//
// Variable-length (packed) batches
//===----------------------------------------------------------------------===//

/// The parameter objects of a varlen kernel: [3 tensor maps,] 7 pointers
/// (cu_seqlens last), the n and h strides of q, k, v, o, 6 sizes.
std::vector<std::string> varlenParamObjects(bool tma) {
  std::vector<std::string> params;
  if (tma)
    for (const char *t : {"q", "k", "v"})
      params.push_back(param(std::string("tma_") + t, "tensor_map",
                             std::string("\"tensor\": \"") + t + "\", \"box\": [64, 128]"));
  for (const char *t : {"q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k"})
    params.push_back(param(t, "pointer", std::string("\"tensor\": \"") + t + "\""));
  for (const char *t : {"q", "k", "v", "o"})
    for (const char *d : {"n", "h"})
      params.push_back(param(std::string(t) + "_stride_" + d, "stride",
                             std::string("\"tensor\": \"") + t + "\", \"dim\": \"" + d + "\""));
  for (const char *size : {"batch", "nq", "nk", "num_heads", "num_kv_heads", "max_seqlen_q"})
    params.push_back(param(size, "size", std::string("\"size\": \"") + size + "\""));
  return params;
}

/// A varlen kernel's grid rule: (ceil(max_seqlen_q / 128), num_heads, batch).
const char *kVarlenGrid = "{\"tiles\": [{\"size\": \"max_seqlen_q\", \"tile\": 128}, "
                          "{\"size\": \"num_heads\", \"tile\": 1}, {\"size\": \"batch\", "
                          "\"tile\": 1}], \"ctas_per_sm\": 0}";

/// Metadata of an sm_90a varlen kernel.
Fields varlenFields() {
  Fields f = with(sm90aFields(), "kernel", "\"attn_fwd_varlen\"");
  f = with(f, "varlen", "true");
  f = with(f, "grid", kVarlenGrid);
  return with(f, "params", jsonArray(varlenParamObjects(true)));
}

constexpr uintptr_t kCuQ = 0x7f5000000000, kCuK = 0x7f5000001000;

/// A valid varlen call: 3 sequences, total_q 300, total_k 500, H 4 / Hkv 2,
/// contiguous packed tensors (no batch stride).
attnrt_forward_args validVarlenArgs(const attnrt_kernel_info &info) {
  attnrt_forward_args a = validArgs(info);
  a.batch = 3;
  a.nq = 300;
  a.nk = 500;
  contiguous(a.q_strides, a.nq, a.num_heads, a.head_dim);
  contiguous(a.k_strides, a.nk, a.num_kv_heads, a.head_dim);
  contiguous(a.v_strides, a.nk, a.num_kv_heads, a.head_dim);
  contiguous(a.o_strides, a.nq, a.num_heads, a.head_dim);
  a.q_strides[0] = a.k_strides[0] = a.v_strides[0] = a.o_strides[0] = 0;
  a.cu_seqlens_q = reinterpret_cast<const int32_t *>(kCuQ);
  a.cu_seqlens_k = reinterpret_cast<const int32_t *>(kCuK);
  a.max_seqlen_q = 200;
  a.max_seqlen_k = 250;
  return a;
}

void testVarlen() {
  attnrt_kernel_info info;
  attnrt_status s = attnrt_metadata_parse(toJson(varlenFields()).c_str(), &info);
  expectStatus("varlen: metadata parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.varlen == 1 && info.grid_size[0] == ATTNRT_SIZE_MAX_SEQLEN_Q,
         "varlen: info.varlen and the max_seqlen_q grid");
  attnrt_kernel_info dense;
  s = attnrt_metadata_parse(toJson(sm90aFields()).c_str(), &dense);
  report(s == ATTNRT_OK && dense.varlen == 0,
         "varlen: metadata without a \"varlen\" key is a dense kernel");

  // Metadata that does not describe a varlen kernel consistently.
  const struct {
    const char *name;
    Fields fields;
    const char *fragment;
  } badMetadata[] = {
      {"\"varlen\": false with cu_seqlens pointers", with(varlenFields(), "varlen", "false"),
       "says \"varlen\": false but \"params\" has both cu_seqlens pointers"},
      {"\"varlen\": true without cu_seqlens pointers", with(sm90aFields(), "varlen", "true"),
       "says \"varlen\": true but \"params\" has no cu_seqlens pointer"},
      {"\"varlen\" not a bool", with(varlenFields(), "varlen", "1"),
       "\"varlen\" must be true or false"},
      {"dense kernel with a max_seqlen_q grid", with(sm90aFields(), "grid", kVarlenGrid),
       "\"grid.tiles[0].size\" is \"max_seqlen_q\", which only a varlen kernel"},
      {"unknown tensor", with(varlenFields(), "params",
                              jsonArray({param("x", "pointer", "\"tensor\": \"cu_seqlens\"")})),
       "\"params[0].tensor\" = \"cu_seqlens\" is not one of"},
  };
  for (const auto &bad : badMetadata)
    expectStatus(std::string("varlen: metadata ") + bad.name,
                 attnrt_metadata_parse(toJson(bad.fields).c_str(), &dense),
                 ATTNRT_ERROR_INVALID_METADATA, {bad.fragment});
  std::vector<std::string> withBatchStride = varlenParamObjects(true);
  withBatchStride.push_back(param("q_stride_b", "stride", "\"tensor\": \"q\", \"dim\": \"b\""));
  expectStatus("varlen: metadata with a batch stride",
               attnrt_metadata_parse(toJson(with(varlenFields(), "params",
                                                 jsonArray(withBatchStride)))
                                         .c_str(),
                                     &dense),
               ATTNRT_ERROR_INVALID_METADATA, {"is a batch stride, but a varlen kernel's tensors"});
  std::vector<std::string> cuQOnly = varlenParamObjects(true);
  cuQOnly.erase(cuQOnly.begin() + 9); // cu_seqlens_k
  expectStatus("varlen: metadata with cu_seqlens_q only",
               attnrt_metadata_parse(toJson(with(varlenFields(), "params", jsonArray(cuQOnly))).c_str(),
                                     &dense),
               ATTNRT_ERROR_INVALID_METADATA, {"a cu_seqlens_q pointer only"});

  // Scalar arguments.
  const attnrt_forward_args base = validVarlenArgs(info);
  auto check = [&](const std::string &name, attnrt_forward_args a, attnrt_status want,
                   std::vector<std::string> fragments = {}) {
    expectStatus("varlen: args: " + name, attnrt_check_forward_args(&info, &a), want,
                 std::move(fragments));
  };
  constexpr attnrt_status kBad = ATTNRT_ERROR_INVALID_ARGUMENT;
  check("valid call", base, ATTNRT_OK);
  unsigned grid[3], block[3], smem;
  s = attnrt_launch_dims(&info, &base, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 2 && grid[1] == 4 && grid[2] == 3,
         "varlen: launch dims are (ceil(max_seqlen_q / 128), H, B)", attnrt_last_error());
  attnrt_forward_args a = base;
  a.max_seqlen_q = 100000; // larger than any sequence: more CTAs, all exit
  s = attnrt_launch_dims(&info, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 782, "varlen: max_seqlen_q beyond total_q widens the grid");
  a = base;
  a.cu_seqlens_q = nullptr;
  check("NULL cu_seqlens_q", a, kBad, {"args.cu_seqlens_q is NULL but kernel 'attn_fwd_varlen' is a varlen kernel"});
  a = base;
  a.cu_seqlens_k = reinterpret_cast<const int32_t *>(kCuK + 2);
  check("misaligned cu_seqlens_k", a, kBad, {"args.cu_seqlens_k = ", "is not 4-byte aligned"});
  a = base;
  a.max_seqlen_q = 0;
  check("max_seqlen_q = 0 with queries", a, kBad, {"args.max_seqlen_q = 0 but Q has args.nq = 300 rows"});
  a = base;
  a.max_seqlen_k = -1;
  check("negative max_seqlen_k", a, kBad, {"args.max_seqlen_k = -1 is negative"});
  a = base;
  a.max_seqlen_q = int64_t(1) << 31;
  check("max_seqlen_q beyond int32", a, kBad, {"args.max_seqlen_q = 2147483648 exceeds"});
  a = base;
  a.nk = 0;
  check("no key rows at all", a, kBad, {"args.nk = 0 is invalid", "total_k >= 1"});
  a = base;
  a.nq = 0;
  a.cu_seqlens_q = nullptr;
  check("total_q == 0 is a no-op", a, ATTNRT_OK);
  a = base;
  a.batch = 4;
  a.q_strides[0] = 12345; // the batch stride of a packed tensor is unused
  check("the batch stride is unused", a, ATTNRT_OK);
  a = base;
  a.q_strides[1] = 100;
  check("q_stride_n = 100", a, kBad, {"q_stride_n (q_strides[1]) = 100 is not a multiple of 8"});

  // A dense kernel refuses the varlen fields.
  attnrt_forward_args d = validArgs(dense);
  d.cu_seqlens_q = reinterpret_cast<const int32_t *>(kCuQ);
  expectStatus("varlen: dense kernel given cu_seqlens_q", attnrt_check_forward_args(&dense, &d), kBad,
               {"args.cu_seqlens_q is set but kernel 'attn_fwd_test' takes a dense [B, N, H, D] batch"});
  d = validArgs(dense);
  d.max_seqlen_k = 7;
  expectStatus("varlen: dense kernel given max_seqlen_k", attnrt_check_forward_args(&dense, &d), kBad,
               {"args.max_seqlen_k is set"});
  // A kernel that reads no pages refuses a block table (it would ignore it).
  a = base;
  a.block_table = reinterpret_cast<const int32_t *>(kCuQ);
  a.page_size = 64;
  check("block table on a varlen kernel without pages", a, kBad,
        {"reads no pages and would ignore them", "attngen --varlen --paged-kv=N"});

  // The values of cu_seqlens, on host copies.
  const int32_t goodQ[] = {0, 100, 100, 300}; // sequence 1 is empty
  const int32_t goodK[] = {0, 250, 250, 500};
  expectStatus("varlen: cu_seqlens: valid, with an empty sequence",
               attnrt_check_cu_seqlens(&base, goodQ, goodK), ATTNRT_OK);
  const struct {
    const char *name;
    std::vector<int32_t> q, k;
    const char *fragment;
  } values[] = {
      {"not monotone", {0, 100, 50, 300}, {0, 250, 250, 500},
       "cu_seqlens_q is not monotone: cu_seqlens_q[2] = 50 < cu_seqlens_q[1] = 100"},
      {"last entry != total_q", {0, 100, 100, 299}, {0, 250, 250, 500},
       "cu_seqlens_q[3] = 299 ends the last sequence, but the packed tensor has args.nq = 300 rows"},
      {"last entry != total_k", {0, 100, 100, 300}, {0, 250, 400, 600},
       "cu_seqlens_k[3] = 600 ends the last sequence, but the packed tensor has args.nk = 500"},
      {"first entry != 0", {4, 100, 100, 300}, {0, 250, 250, 500},
       "cu_seqlens_q[0] = 4 but the first sequence starts at row 0"},
      {"sequence longer than max_seqlen_q", {0, 10, 10, 300}, {0, 250, 250, 500},
       "sequence 2 has 290 query rows, more than args.max_seqlen_q = 200"},
      {"key sequence longer than max_seqlen_k", {0, 100, 100, 300}, {0, 10, 10, 500},
       "sequence 2 has 490 key rows, more than args.max_seqlen_k = 250"},
      {"negative entry", {0, 100, -5, 300}, {0, 250, 250, 500},
       "cu_seqlens_q[2] = -5 < cu_seqlens_q[1] = 100"},
  };
  for (const auto &v : values)
    expectStatus(std::string("varlen: cu_seqlens: ") + v.name,
                 attnrt_check_cu_seqlens(&base, v.q.data(), v.k.data()), kBad, {v.fragment});
  expectStatus("varlen: cu_seqlens: NULL host copy", attnrt_check_cu_seqlens(&base, goodQ, nullptr),
               kBad, {"the host copy of cu_seqlens_k is NULL"});
  expectStatus("varlen: cu_seqlens: NULL args", attnrt_check_cu_seqlens(nullptr, goodQ, goodK), kBad,
               {"args is NULL"});
  a = base;
  a.batch = -1;
  expectStatus("varlen: cu_seqlens: negative batch", attnrt_check_cu_seqlens(&a, goodQ, goodK), kBad,
               {"args.batch = -1 is out of range"});
}

//===----------------------------------------------------------------------===//
// KV cache and split-KV (docs/ABI.md "KV cache and split-KV")
//===----------------------------------------------------------------------===//

/// Metadata of an sm_90a split-KV GQA kernel over 64-row pages, as attngen
/// writes it: 64-row tiles of 4 packed heads, the splits in the grid.
Fields kvCacheFields() {
  std::vector<std::string> params;
  for (const char *t : {"q", "k", "v"})
    params.push_back(param(std::string("tma_") + t, "tensor_map",
                           std::string("\"tensor\": \"") + t + "\", \"box\": [64, " +
                               (std::string(t) == "q" ? "16" : "64") + "]"));
  for (const char *t : {"q", "k", "v", "o", "cache_seqlens", "block_table", "lse", "o_partial",
                        "lse_partial"})
    params.push_back(param(t, "pointer", std::string("\"tensor\": \"") + t + "\""));
  for (const char *t : {"q", "k", "v", "o"})
    for (const char *d : {"b", "n", "h"})
      params.push_back(param(std::string(t) + "_stride_" + d, "stride",
                             std::string("\"tensor\": \"") + t + "\", \"dim\": \"" + d + "\""));
  params.push_back(param("block_table_stride_b", "stride", "\"tensor\": \"block_table\", \"dim\": \"b\""));
  for (const char *d : {"b", "n", "h"})
    params.push_back(param(std::string("o_partial_stride_") + d, "stride",
                           std::string("\"tensor\": \"o_partial\", \"dim\": \"") + d + "\""));
  for (const char *size : {"batch", "nq", "nk", "num_heads", "num_kv_heads", "num_splits",
                           "max_blocks", "num_blocks"})
    params.push_back(param(size, "size", std::string("\"size\": \"") + size + "\""));
  Fields f = sm90aFields();
  f = with(f, "kernel", "\"attn_kvcache_test\"");
  f = with(f, "causal_align", "\"bottom-right\"");
  f = with(f, "block_m", "64");
  f = with(f, "num_threads", "256");
  f = with(f, "smem_bytes", "214128");
  f = with(f, "grid", "{\"tiles\": [{\"size\": \"nq\", \"tile\": 16, \"times\": \"num_splits\"}, "
                      "{\"size\": \"num_heads\", \"tile\": 4}, {\"size\": \"batch\", \"tile\": 1}], "
                      "\"ctas_per_sm\": 0}");
  f = with(f, "params", jsonArray(params));
  f = with(f, "kind", "\"forward\"");
  f = with(f, "kv_cache", "true");
  f = with(f, "page_size", "64");
  f = with(f, "head_pack", "4");
  return with(f, "split_kv", "true");
}

/// Device-looking int32 and workspace addresses for the checks.
constexpr uintptr_t kSeqlens = 0x7f0000600000, kBlockTable = 0x7f0000700000,
                    kWorkspace = 0x7f0000800000;

/// A valid decoding call for the kvCacheFields kernel: B=3, Nq=1, H=32,
/// Hkv=8, pages of 64 rows, 16 pages per sequence in a cache of 40.
attnrt_forward_args kvCacheArgs(const attnrt_kernel_info &info) {
  attnrt_forward_args a = validArgs(info);
  a.batch = 3;
  a.nq = 1;
  a.num_heads = 32;
  a.num_kv_heads = 8;
  a.page_size = 64;
  a.max_blocks = 16;
  a.num_blocks = 40;
  a.nk = a.max_blocks * a.page_size;
  a.block_table_stride = 16;
  a.cache_seqlens = reinterpret_cast<const int32_t *>(kSeqlens);
  a.block_table = reinterpret_cast<const int32_t *>(kBlockTable);
  contiguous(a.q_strides, a.nq, a.num_heads, a.head_dim);
  contiguous(a.o_strides, a.nq, a.num_heads, a.head_dim);
  contiguous(a.k_strides, a.page_size, a.num_kv_heads, a.head_dim);
  contiguous(a.v_strides, a.page_size, a.num_kv_heads, a.head_dim);
  a.num_splits = 1;
  return a;
}

void testKvCache() {
  attnrt_kernel_info info;
  attnrt_status s = attnrt_metadata_parse(toJson(kvCacheFields()).c_str(), &info);
  expectStatus("kvcache: metadata parses", s, ATTNRT_OK);
  report(s == ATTNRT_OK && info.kind == ATTNRT_KERNEL_FORWARD && info.kv_cache == 1 &&
             info.page_size == 64 && info.head_pack == 4 && info.split_kv == 1 &&
             info.grid_times[0] == ATTNRT_SIZE_NUM_SPLITS && info.grid_times[1] == -1 &&
             info.tma_box_rows_q == 16 && info.tma_box_rows_k == 64,
         "kvcache: kind, kv_cache, page_size, head_pack, split_kv, grid times, boxes");
  // A dense kernel's metadata without the new keys still parses as one.
  attnrt_kernel_info dense;
  s = attnrt_metadata_parse(toJson(sm90aFields()).c_str(), &dense);
  report(s == ATTNRT_OK && dense.kind == ATTNRT_KERNEL_FORWARD && dense.kv_cache == 0 &&
             dense.head_pack == 1 && dense.grid_times[0] == -1,
         "kvcache: metadata without the decoding keys is a dense forward kernel");
  struct {
    const char *name;
    Fields fields;
    const char *fragment;
  } badMetadata[] = {
      {"page size 24", with(kvCacheFields(), "page_size", "24"), "\"page_size\" = 24 is not a multiple of 16"},
      {"no block table", with(kvCacheFields(), "params", jsonArray({})), "has no pointer to q"},
      {"pages without kv_cache", with(kvCacheFields(), "kv_cache", "false"),
       "of a KV-cache kernel but \"kv_cache\": false"},
      {"unknown kind", with(kvCacheFields(), "kind", "\"backward\""), "\"kind\" = \"backward\" is not one of"},
      {"unknown times", with(kvCacheFields(), "grid", "{\"tiles\": [{\"size\": \"nq\", \"tile\": 16, \"times\": \"rows\"}], \"ctas_per_sm\": 0}"),
       "\"grid.tiles[0].times\" = \"rows\" is not one of"},
  };
  for (const auto &bad : badMetadata)
    expectStatus(std::string("kvcache: metadata: ") + bad.name,
                 attnrt_metadata_parse(toJson(bad.fields).c_str(), &dense),
                 ATTNRT_ERROR_INVALID_METADATA, {bad.fragment});
  // A paged kernel needs its block table, a split one its workspace.
  Fields noTable = kvCacheFields();
  {
    std::string params = noTable.back().second;
    for (auto &field : noTable)
      if (field.first == "params") {
        std::string &text = field.second;
        size_t at = text.find("{\"name\": \"block_table\", \"kind\": \"pointer\"");
        size_t end = text.find('}', at);
        text.erase(at, end - at + 3);
      }
  }
  expectStatus("kvcache: metadata: a paged kernel without the block-table pointer",
               attnrt_metadata_parse(toJson(noTable).c_str(), &dense), ATTNRT_ERROR_INVALID_METADATA,
               {"has no the block_table pointer and the max_blocks and num_blocks sizes"});

  const attnrt_forward_args base = kvCacheArgs(info);
  auto check = [&](const std::string &name, attnrt_forward_args a, attnrt_status want,
                   std::vector<std::string> fragments = {}) {
    expectStatus("kvcache: args: " + name, attnrt_check_forward_args(&info, &a), want,
                 std::move(fragments));
  };
  constexpr attnrt_status kBad = ATTNRT_ERROR_INVALID_ARGUMENT;
  check("a valid paged decoding call", base, ATTNRT_OK);
  attnrt_forward_args a = base;
  a.cache_seqlens = nullptr;
  check("no cache_seqlens (every sequence holds nk keys)", a, ATTNRT_OK);
  a = base;
  a.page_size = 32;
  check("another page size", a, kBad, {"args.page_size = 32", "reads pages of a different size"});
  a = base;
  a.block_table = nullptr;
  check("no block table", a, kBad, {"args.block_table is NULL", "paged KV cache"});
  a = base;
  a.max_blocks = int64_t(1) << 30;
  a.nk = a.max_blocks * a.page_size;
  check("a block table past 2^31 keys", a, kBad,
        {"exceeds the kernel's 32-bit limit", "give the block table fewer columns"});
  a = base;
  a.block_table = reinterpret_cast<const int32_t *>(kBlockTable + 2);
  check("misaligned block table", a, kBad, {"args.block_table", "4-byte aligned"});
  a = base;
  a.cache_seqlens = reinterpret_cast<const int32_t *>(kSeqlens + 1);
  check("misaligned cache_seqlens", a, kBad, {"args.cache_seqlens", "4-byte aligned"});
  a = base;
  a.max_blocks = 0;
  check("no block-table columns", a, kBad, {"args.max_blocks = 0 is out of range"});
  a = base;
  a.num_blocks = 0;
  check("no pages", a, kBad, {"args.num_blocks = 0 is out of range"});
  a = base;
  a.block_table_stride = 8;
  check("overlapping block-table rows", a, kBad, {"args.block_table_stride = 8", "stride >= max_blocks"});
  a = base;
  a.nk = 1000;
  check("nk not max_blocks * page_size", a, kBad, {"args.nk = 1000", "set nk = max_blocks * page_size"});
  a = base;
  a.num_kv_heads = 16;
  a.num_heads = 32;
  check("a head pack that does not divide the group", a, kBad,
        {"packs 4 query heads per tile, which must divide the 2 query heads"});
  a = base;
  a.num_splits = 300;
  check("too many splits", a, kBad, {"args.num_splits = 300 is out of range"});
  a = base;
  a.num_splits = 4;
  check("splits without a workspace", a, kBad, {"args.workspace is NULL", "attnrt_kvcache_plan"});
  a.workspace = reinterpret_cast<void *>(kWorkspace);
  a.workspace_bytes = 100;
  check("a workspace too small", a, kBad, {"args.workspace_bytes = 100 is too small"});
  int64_t splits = -1;
  size_t bytes = 0;
  s = attnrt_kvcache_plan(&info, &a, &splits, &bytes);
  // 4 splits x 3 sequences x 1 query x 32 heads: outputs of 128 f32, LSEs.
  size_t outputs = 4 * 3 * 1 * 32 * 128 * 4, lses = 4 * 3 * 32 * 4;
  report(s == ATTNRT_OK && splits == 4 && bytes == outputs + (lses + 15) / 16 * 16,
         "kvcache: plan of 4 splits: outputs then 16-byte aligned LSEs");
  a.workspace_bytes = bytes;
  check("a workspace of the plan's size", a, ATTNRT_OK);
  a.workspace = reinterpret_cast<void *>(kWorkspace + 8);
  check("a misaligned workspace", a, kBad, {"args.workspace", "16-byte aligned"});

  // The runtime's choice: none with tiles enough, several with few tiles.
  a = base;
  a.num_splits = 0;
  expectStatus("kvcache: choosing splits needs the device's SM count",
               attnrt_kvcache_plan(&info, &a, &splits, &bytes), kBad,
               {"chooses its splits from the device's SM count"});
  attnrt_kernel_info device = info;
  device.num_sms = 132;
  a.batch = 64; // 64 x 8 head groups = 512 tiles: the GPU is full
  s = attnrt_kvcache_plan(&device, &a, &splits, &bytes);
  report(s == ATTNRT_OK && splits == 1 && bytes == 0, "kvcache: plan: 512 tiles on 132 SMs do not split");
  a.batch = 1; // 8 tiles, 1024 keys in 8 blocks of 128: one block per split
  s = attnrt_kvcache_plan(&device, &a, &splits, &bytes);
  report(s == ATTNRT_OK && splits == 8 && bytes > 0,
         "kvcache: plan: 8 tiles of 8 key blocks split 8 ways");
  a.max_blocks = 128; // 8k keys, 64 blocks of 128 rows
  a.nk = a.max_blocks * a.page_size;
  s = attnrt_kvcache_plan(&device, &a, &splits, &bytes);
  // 64 blocks: 13 splits (of 5 blocks) fill 79% of 132 slots, 16 (of 4) 97%.
  report(s == ATTNRT_OK && splits == 16, "kvcache: plan: 8 tiles of 8k keys split 16 ways of 4 blocks");
  // A loaded module's occupancy sets the CTA slots: two CTAs per SM are 264
  // slots, which 32 splits (of 2 blocks) fill.
  attnrt_kernel_info twoPerSm = device;
  twoPerSm.max_ctas_per_sm = 2;
  s = attnrt_kvcache_plan(&twoPerSm, &a, &splits, &bytes);
  report(s == ATTNRT_OK && splits == 32, "kvcache: plan: two CTAs per SM (occupancy) split 32 ways");
  // The grid: (ceil(nq / 16) x splits, heads / 4, batch).
  a.num_splits = 15;
  a.workspace = reinterpret_cast<void *>(kWorkspace);
  a.workspace_bytes = SIZE_MAX;
  unsigned grid[3], block[3], smem;
  s = attnrt_launch_dims(&device, &a, grid, block, &smem);
  report(s == ATTNRT_OK && grid[0] == 15 && grid[1] == 8 && grid[2] == 1 && block[0] == 256,
         "kvcache: grid (ceil(nq / 16) x num_splits, num_heads / 4, batch)");
}

/// The quantize kernel's argument checks (no GPU): a dense call, and a
/// packed (varlen) one, which must be row-major with aligned cu_seqlens.
void testQuantizeArgs() {
  alignas(16) static unsigned char src[16], dst[16];
  alignas(16) static float descales[4];
  alignas(16) static int32_t cuSeqlens[4];
  attnrt_quantize_args a;
  std::memset(&a, 0, sizeof a);
  a.src = src;
  a.dst = dst;
  a.descale_out = descales;
  a.batch = 2;
  a.n = 300;
  a.num_heads = 4;
  a.head_dim = 128;
  a.src_dtype = ATTNRT_DTYPE_BF16;
  int64_t rowMajor[4] = {300 * 4 * 128, 4 * 128, 128, 1};
  std::memcpy(a.src_strides, rowMajor, sizeof rowMajor);
  std::memcpy(a.dst_strides, rowMajor, sizeof rowMajor);
  expectStatus("quantize: dense row-major block scales", attnrt_check_quantize_args(128, ATTNRT_DTYPE_BF16, &a),
               ATTNRT_OK);
  a.cu_seqlens = cuSeqlens;
  expectStatus("quantize: packed row-major block scales", attnrt_check_quantize_args(128, ATTNRT_DTYPE_BF16, &a),
               ATTNRT_OK);
  a.cu_seqlens = reinterpret_cast<const int32_t *>(reinterpret_cast<const char *>(cuSeqlens) + 2);
  expectStatus("quantize: packed with unaligned cu_seqlens", attnrt_check_quantize_args(128, ATTNRT_DTYPE_BF16, &a),
               ATTNRT_ERROR_INVALID_ARGUMENT, {"cu_seqlens is not 4-byte aligned"});
  a.cu_seqlens = cuSeqlens;
  int64_t keyMajor[4] = {4 * 128 * 304, 1, 128 * 304, 304};
  std::memcpy(a.dst_strides, keyMajor, sizeof keyMajor);
  expectStatus("quantize: packed K-major", attnrt_check_quantize_args(128, ATTNRT_DTYPE_BF16, &a),
               ATTNRT_ERROR_INVALID_ARGUMENT, {"packed (varlen) batch is quantized row-major"});
  a.cu_seqlens = nullptr;
  expectStatus("quantize: dense K-major v", attnrt_check_quantize_args(128, ATTNRT_DTYPE_BF16, &a), ATTNRT_OK);
}

} // namespace

int main() {
  testBasics();
  testMetadata();
  testModuleLoad();
  testArgs();
  testNoLse();
  testGridRule();
  testVarlen();
  testKvCache();
  testQuantizeArgs();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
