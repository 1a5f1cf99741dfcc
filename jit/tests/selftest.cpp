//===- selftest.cpp - libattngen's API, error paths and caches, no GPU ----===//
//
//   attngen-jit-selftest                  all in-process checks
//   attngen-jit-selftest compile DIR [causal]
//       one request through a fresh JIT on cache folder DIR; prints the
//       JIT's counters and a hash of the PTX (the lit test runs several of
//       these at once to check that processes share the cache safely).
//
//===----------------------------------------------------------------------===//
#include "attngen/attngen.h"
#include "attngen/attngen.hpp"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

int checks = 0, failures = 0;

void expect(bool ok, const std::string &what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

/// `status` is `want` and the message contains `needle`.
void expectError(attngen_status status, attngen_status want, const char *needle,
                 const std::string &what) {
  std::string message = attngen_last_error();
  expect(status == want && message.find(needle) != std::string::npos,
         what + ": got " + attngen_status_name(status) + " '" + message +
             "', want " + attngen_status_name(want) + " containing '" + needle + "'");
}

std::string makeTempDir() {
  char path[] = "/tmp/attngen-selftest-XXXXXX";
  if (!mkdtemp(path)) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  return path;
}

void removeTree(const std::string &dir) {
  std::string command = "rm -rf '" + dir + "'";
  if (std::system(command.c_str()) != 0)
    std::fprintf(stderr, "warning: could not remove %s\n", dir.c_str());
}

std::vector<std::string> entries(const std::string &dir, const char *suffix) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > std::strlen(suffix) &&
          name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        out.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  return out;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

attngen_jit_stats stats(attngen_jit *jit) {
  attngen_jit_stats s;
  attngen_jit_get_stats(jit, &s);
  return s;
}

attngen_jit *makeJit(const std::string &dir, int disk = 1) {
  attngen_jit_options options;
  attngen_jit_options_init(&options);
  options.cache_dir = dir.c_str();
  options.disk_cache = disk;
  attngen_jit *jit = nullptr;
  if (attngen_jit_create(&options, &jit) != ATTNGEN_OK) {
    std::fprintf(stderr, "attngen_jit_create: %s\n", attngen_last_error());
    std::exit(2);
  }
  return jit;
}

attngen_spec specOf(int headDim, int causal, int dtype = ATTNRT_DTYPE_BF16) {
  attngen_spec spec;
  attngen_spec_init(&spec);
  spec.head_dim = headDim;
  spec.causal = causal;
  spec.dtype = dtype;
  return spec;
}

/// Compiles through `jit`; returns the PTX ("" on failure, reported).
std::string compile(attngen_jit *jit, const attngen_spec &spec, const char *arch,
                    const std::string &what) {
  const attngen_compiled *out = nullptr;
  attngen_status s = attngen_jit_compile(jit, &spec, arch, &out);
  expect(s == ATTNGEN_OK && out, what + ": " + attngen_last_error());
  return out ? attngen_compiled_ptx(out) : "";
}

void testErrors() {
  attngen_jit *jit = makeJit("", 0);
  const attngen_compiled *out = nullptr;
  attngen_spec spec = specOf(128, 0);

  expectError(attngen_jit_compile(jit, nullptr, "sm_90a", &out),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "attngen_spec_init", "NULL spec");
  attngen_spec raw;
  std::memset(&raw, 0, sizeof(raw));
  expectError(attngen_jit_compile(jit, &raw, "sm_90a", &out),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "struct_size is 0", "uninitialised spec");
  attngen_spec bad = spec;
  bad.head_dim = 100;
  expectError(attngen_jit_compile(jit, &bad, "sm_90a", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "head dimension 100 is not supported: use a multiple of 8", "head dim 100");
  bad.head_dim = 264;
  expectError(attngen_jit_compile(jit, &bad, "sm_80", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "head dimension 264 is not supported: the largest is 256", "head dim 264");
  bad.head_dim = 0;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "head dimension 0 is not supported: it must be a positive multiple of 8",
              "head dim 0");
  bad = spec;
  bad.dtype = 7;
  expectError(attngen_jit_compile(jit, &bad, "sm_80", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "dtype 7 is not supported", "dtype 7");
  bad = spec;
  bad.causal = 2;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "must be 0 or 1", "causal = 2");
  bad = spec;
  bad.scale = -1;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "positive and finite", "negative scale");
  bad = spec;
  bad.block_m = -64;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "must be 0 (tuned default) or positive", "negative block_m");
  bad = spec;
  bad.block_m = 48;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC, "(arch sm_90a)",
              "block_m 48 on sm_90a");
  expectError(attngen_jit_compile(jit, &spec, "sm_90", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "need sm_90a", "arch sm_90");
  expectError(attngen_jit_compile(jit, &spec, "sm_86", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "compile for sm_80", "arch sm_86");
  expectError(attngen_jit_compile(jit, &spec, "gfx90a", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "supported: sm_80, sm_90a", "arch gfx90a");
  expect(attngen_spec_check(&spec, "sm_90a") == ATTNGEN_OK, "default spec is valid");
  expectError(attngen_jit_compile(jit, &spec, "sm_80", nullptr),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "non-NULL out", "NULL out");
  expectError(attngen_jit_compile(nullptr, &spec, "sm_80", &out),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "attngen_jit_create", "NULL jit");
  expectError(attngen_jit_create(nullptr, nullptr), ATTNGEN_ERROR_INVALID_ARGUMENT,
              "out = NULL", "create with NULL out");
  attngen_jit_options options;
  std::memset(&options, 0, sizeof(options));
  attngen_jit *other = nullptr;
  expectError(attngen_jit_create(&options, &other), ATTNGEN_ERROR_INVALID_ARGUMENT,
              "attngen_jit_options_init", "uninitialised options");
  expectError(attngen_kernel_forward(nullptr, nullptr, nullptr),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "attngen_jit_get_kernel", "forward on NULL");

  // Without a usable GPU, asking for a device kernel names the reason
  // (the runtime's own message and status).
  int major = 0, minor = 0;
  attnrt_status device = attnrt_current_device(nullptr, nullptr, &major, &minor);
  if (device != ATTNRT_OK) {
    std::string runtimeMessage = attnrt_last_error();
    const attngen_kernel *kernel = nullptr;
    attngen_status s = attngen_jit_get_kernel(jit, &spec, &kernel);
    expect(s == static_cast<attngen_status>(device) && kernel == nullptr &&
               runtimeMessage == attngen_last_error(),
           std::string("get_kernel without a GPU: ") + attngen_status_name(s) + " " +
               attngen_last_error());
    char arch[16];
    expect(attngen_device_arch(arch, sizeof(arch)) == static_cast<attngen_status>(device),
           "device_arch without a GPU");
    expect(attngen_jit_compile(jit, &spec, "auto", &out) == static_cast<attngen_status>(device),
           "compile for auto without a GPU");
  }
  expect(std::string(attngen_status_name(ATTNGEN_ERROR_INVALID_SPEC)) ==
             "ATTNGEN_ERROR_INVALID_SPEC",
         "status name");
  expect(std::string(attngen_status_name(static_cast<attngen_status>(99))) == "ATTNGEN_UNKNOWN",
         "unknown status name");
  expect(attngen_sizeof_spec() == sizeof(attngen_spec), "sizeof spec");

  // The C++ layer throws the same message.
  try {
    attngen::JIT cxx("", false);
    attngen::Spec s;
    s.headDim = 84;
    cxx.compile(s, "sm_80");
    expect(false, "C++: head dim 84 did not throw");
  } catch (const attngen::Error &e) {
    expect(e.status() == ATTNGEN_ERROR_INVALID_SPEC &&
               std::string(e.what()).find("head dimension 84") != std::string::npos,
           std::string("C++ error: ") + e.what());
  }
  attngen_jit_destroy(jit);
}

void testCompileOutput() {
  attngen_jit *jit = makeJit("", 0);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    attngen_spec spec = specOf(64, 1, ATTNRT_DTYPE_F16);
    const attngen_compiled *c = nullptr;
    expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
           std::string("compile ") + arch + ": " + attngen_last_error());
    if (!c)
      continue;
    std::string ptx = attngen_compiled_ptx(c);
    std::string name = attngen_compiled_kernel_name(c);
    expect(ptx.find(std::string(".target ") + arch) != std::string::npos, "PTX target");
    expect(ptx.find(".entry " + name) != std::string::npos, "PTX entry " + name);
    attnrt_kernel_info info;
    expect(attnrt_metadata_parse(attngen_compiled_metadata(c), &info) == ATTNRT_OK &&
               info.head_dim == 64 && info.causal == 1 && info.dtype == ATTNRT_DTYPE_F16 &&
               std::string(info.arch) == arch && name == info.kernel,
           "metadata matches the spec");
    expect(std::string(attngen_compiled_arch(c)) == arch, "compiled arch");
    expect(std::string(attngen_compiled_cache_key(c)).find(attngen_compiler_id()) !=
               std::string::npos,
           "the key names the compiler build");
  }
  // Head dims that are not 64, 128 or 256: d96 in 64-byte swizzle panels
  // (a TMA box of 32 columns), d40 padded to 48 columns in 32-byte ones.
  for (auto [headDim, boxCols, wgmma] :
       {std::tuple(96, 32, "m64n96k16"), std::tuple(40, 16, "m64n48k16")}) {
    for (const char *arch : {"sm_80", "sm_90a"}) {
      attngen_spec spec = specOf(headDim, 0);
      const attngen_compiled *c = nullptr;
      std::string what = std::string(arch) + " d" + std::to_string(headDim);
      expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
             "compile " + what + ": " + attngen_last_error());
      if (!c)
        continue;
      attnrt_kernel_info info;
      bool tma = std::string(arch) == "sm_90a";
      expect(attnrt_metadata_parse(attngen_compiled_metadata(c), &info) == ATTNRT_OK &&
                 info.head_dim == headDim && info.tma_box_cols == (tma ? boxCols : 0),
             "metadata of " + what);
      std::string ptx = attngen_compiled_ptx(c);
      expect(std::string(arch) == "sm_80" || ptx.find(wgmma) != std::string::npos,
             what + " computes O with " + wgmma);
    }
  }
  attngen_jit_destroy(jit);
}

/// Whether `text` ends with `suffix`.
bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// causal_align through the C and C++ APIs: bottom-right by default (as
/// flash_attn), top-left on request; the kernel name, metadata and key carry
/// it; bad values are refused; a spec from an older header (a struct_size
/// without the field) keeps the top-left it was built for.
void testCausalAlign() {
  attngen_jit *jit = makeJit("", 0);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    attngen_spec spec = specOf(64, 1, ATTNRT_DTYPE_F16);
    expect(spec.causal_align == ATTNGEN_CAUSAL_BOTTOM_RIGHT,
           "attngen_spec_init's alignment is bottom-right");
    const attngen_compiled *c = nullptr;
    expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
           std::string("bottom-right compile ") + arch + ": " + attngen_last_error());
    if (!c)
      continue;
    std::string name = attngen_compiled_kernel_name(c);
    expect(endsWith(name, "_f16_d64_causal"), "bottom-right kernel name " + name);
    attnrt_kernel_info info;
    expect(attnrt_metadata_parse(attngen_compiled_metadata(c), &info) == ATTNRT_OK &&
               info.causal == 1 && info.causal_align == ATTNRT_CAUSAL_ALIGN_BOTTOM_RIGHT,
           std::string("bottom-right metadata ") + arch);
    expect(std::string(attngen_compiled_metadata(c)).find("\"causal_align\": \"bottom-right\"") !=
               std::string::npos,
           "the metadata spells the alignment as the CLI does");
    expect(std::string(attngen_compiled_cache_key(c)).find("causal_align=bottom_right") !=
               std::string::npos,
           "the key names the alignment");
    std::string brPtx = attngen_compiled_ptx(c);

    attngen_spec topLeft = specOf(64, 1, ATTNRT_DTYPE_F16);
    topLeft.causal_align = ATTNGEN_CAUSAL_TOP_LEFT;
    expect(attngen_jit_compile(jit, &topLeft, arch, &c) == ATTNGEN_OK,
           std::string("top-left compile ") + arch + ": " + attngen_last_error());
    std::string tlPtx;
    if (c) {
      tlPtx = attngen_compiled_ptx(c);
      expect(endsWith(attngen_compiled_kernel_name(c), "_f16_d64_causal_tl") &&
                 attnrt_metadata_parse(attngen_compiled_metadata(c), &info) == ATTNRT_OK &&
                 info.causal == 1 && info.causal_align == ATTNRT_CAUSAL_ALIGN_TOP_LEFT &&
                 brPtx != tlPtx,
             std::string("top-left kernel ") + arch);
    }

    attngen_spec old = specOf(64, 1, ATTNRT_DTYPE_F16);
    old.struct_size = offsetof(attngen_spec, causal_align);
    old.causal_align = 7; // past the caller's struct: never read
    expect(attngen_jit_compile(jit, &old, arch, &c) == ATTNGEN_OK,
           std::string("spec of the 0.1.0 size ") + arch + ": " + attngen_last_error());
    if (c)
      expect(endsWith(attngen_compiled_kernel_name(c), "_f16_d64_causal_tl") &&
                 tlPtx == attngen_compiled_ptx(c),
             std::string("an old-size spec is top-left ") + arch);
  }
  attngen_spec bad = specOf(64, 1);
  bad.causal_align = 5;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "causal_align 5 is not supported; supported: ATTNGEN_CAUSAL_TOP_LEFT (0), "
              "ATTNGEN_CAUSAL_BOTTOM_RIGHT (1)",
              "causal_align = 5");
  // Without a diagonal either alignment is the same kernel.
  attngen_spec plain = specOf(64, 0);
  expect(attngen_spec_check(&plain, "sm_90a") == ATTNGEN_OK,
         std::string("bottom-right, not causal: ") + attngen_last_error());

  attngen::JIT cxx("", false);
  attngen::Spec s;
  s.causal = true;
  expect(endsWith(std::string(cxx.compile(s, "sm_90a").kernelName()), "_bf16_d128_causal"),
         "C++: bottom-right kernel by default");
  s.causalAlign = attngen::CausalAlign::topLeft;
  expect(endsWith(std::string(cxx.compile(s, "sm_90a").kernelName()), "_bf16_d128_causal_tl"),
         "C++: top-left kernel");
  attngen_jit_destroy(jit);
}

/// softcap through the C and C++ APIs: name, metadata and key carry it; bad
/// values are refused; a spec of the size before the field has no soft cap.
void testSoftcap() {
  attngen_jit *jit = makeJit("", 0);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    attngen_spec spec = specOf(64, 0, ATTNRT_DTYPE_F16);
    spec.softcap = 30;
    const attngen_compiled *c = nullptr;
    expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
           std::string("softcap compile ") + arch + ": " + attngen_last_error());
    if (!c)
      continue;
    std::string name = attngen_compiled_kernel_name(c);
    expect(endsWith(name, "_f16_d64_softcap30"), "softcap kernel name " + name);
    expect(std::string(attngen_compiled_metadata(c)).find("\"softcap\": 30") !=
               std::string::npos,
           "the metadata says the cap");
    expect(std::string(attngen_compiled_cache_key(c)).find("softcap=0x1.ep+4") !=
               std::string::npos,
           std::string("the key holds the cap: ") + attngen_compiled_cache_key(c));
    expect(std::string(attngen_compiled_ptx(c)).find("tanh.approx.f32") != std::string::npos,
           "the PTX has tanh.approx.f32");

    attngen_spec old = specOf(64, 0, ATTNRT_DTYPE_F16);
    old.struct_size = offsetof(attngen_spec, softcap);
    old.softcap = 30; // past the caller's struct: never read
    expect(attngen_jit_compile(jit, &old, arch, &c) == ATTNGEN_OK && c &&
               endsWith(attngen_compiled_kernel_name(c), "_f16_d64"),
           std::string("a spec without the softcap field has none ") + arch);
  }
  for (double bad : {-1.0, std::nan(""), 1e39}) {
    attngen_spec spec = specOf(64, 0);
    spec.softcap = bad;
    expectError(attngen_spec_check(&spec, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
                " (or 0 for none)",
                "softcap " + std::to_string(bad));
  }
  attngen::JIT cxx("", false);
  attngen::Spec s;
  s.softcap = 50.5;
  expect(endsWith(std::string(cxx.compile(s, "sm_80").kernelName()), "_d128_softcap50p5"),
         "C++: softcap kernel");
  attngen_jit_destroy(jit);
}

/// A sliding window through the C and C++ APIs: name, metadata and key carry
/// it; (L, 0) and causal with (L, -1) are one kernel; bad sides are refused;
/// a spec of the size before the fields has no window.
void testWindow() {
  attngen_jit *jit = makeJit("", 0);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    attngen_spec spec = specOf(64, 0, ATTNRT_DTYPE_F16);
    spec.window_left = 100;
    spec.window_right = 50;
    spec.causal_align = ATTNGEN_CAUSAL_BOTTOM_RIGHT;
    const attngen_compiled *c = nullptr;
    expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
           std::string("window compile ") + arch + ": " + attngen_last_error());
    if (!c)
      continue;
    std::string name = attngen_compiled_kernel_name(c);
    expect(endsWith(name, "_f16_d64_window_l100_r50"), "window kernel name " + name);
    std::string meta = attngen_compiled_metadata(c);
    expect(meta.find("\"window_left\": 100") != std::string::npos &&
               meta.find("\"window_right\": 50") != std::string::npos &&
               meta.find("\"causal_align\": \"bottom-right\"") != std::string::npos,
           "the metadata says the window: " + meta);
    attnrt_kernel_info info;
    expect(attnrt_metadata_parse(meta.c_str(), &info) == ATTNRT_OK &&
               info.causal == 0 && info.window_left == 100 && info.window_right == 50,
           std::string("a window alone is not causal, its sides read back ") + arch);
    expect(std::string(attngen_compiled_cache_key(c)).find("window_left=100 window_right=50") !=
               std::string::npos,
           std::string("the key holds the window: ") + attngen_compiled_cache_key(c));

    // FlashAttention's spellings of a causal window share one kernel.
    attngen_spec causal = specOf(64, 1, ATTNRT_DTYPE_F16);
    causal.window_left = 256;
    attngen_spec zero = specOf(64, 0, ATTNRT_DTYPE_F16);
    zero.window_left = 256;
    zero.window_right = 0;
    const attngen_compiled *a = nullptr, *b = nullptr;
    expect(attngen_jit_compile(jit, &causal, arch, &a) == ATTNGEN_OK &&
               attngen_jit_compile(jit, &zero, arch, &b) == ATTNGEN_OK && a == b &&
               endsWith(attngen_compiled_kernel_name(a), "_f16_d64_window_l256_r0"),
           std::string("causal + (256, -1) and (256, 0) are one kernel ") + arch);
    // flash_attn's rule: causal forces the right side to 0.
    attngen_spec forced = specOf(64, 1, ATTNRT_DTYPE_F16);
    forced.window_left = 256;
    forced.window_right = 64;
    const attngen_compiled *f = nullptr;
    expect(attngen_jit_compile(jit, &forced, arch, &f) == ATTNGEN_OK && f == a,
           std::string("causal + (256, 64) is the (256, 0) kernel ") + arch);

    attngen_spec old = specOf(64, 0, ATTNRT_DTYPE_F16);
    old.struct_size = offsetof(attngen_spec, window_left);
    old.window_left = old.window_right = 3; // past the caller's struct
    expect(attngen_jit_compile(jit, &old, arch, &c) == ATTNGEN_OK && c &&
               endsWith(attngen_compiled_kernel_name(c), "_f16_d64"),
           std::string("a spec without the window fields has none ") + arch);
  }
  struct Bad {
    int causal, left, right;
    const char *message;
  };
  const Bad bads[] = {
      {0, -2, -1, "window left = -2 is out of range; use -1 (unbounded) or 0 to 2147483647 keys"},
      {0, 4, -7, "window right = -7 is out of range"},
      {1, 4, -7, "window right = -7 is out of range"}};
  for (const Bad &bad : bads) {
    attngen_spec spec = specOf(128, bad.causal);
    spec.window_left = bad.left;
    spec.window_right = bad.right;
    expectError(attngen_spec_check(&spec, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC, bad.message,
                std::string("window ") + std::to_string(bad.left) + "," +
                    std::to_string(bad.right));
  }
  attngen::JIT cxx("", false);
  attngen::Spec s;
  s.windowRight = 64;
  s.causalAlign = attngen::CausalAlign::bottomRight;
  expect(endsWith(std::string(cxx.compile(s, "sm_90a").kernelName()),
                  "_bf16_d128_window_linf_r64"),
         "C++: window kernel");
  attngen_jit_destroy(jit);
}

/// varlen through the C and C++ APIs: name, metadata, parameters and key
/// carry it; a spec that ends before the field is dense; bad values and the
/// persistent combination are refused; varlenArgs fills the packed layout.
void testVarlen() {
  attngen_jit *jit = makeJit("", 0);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    attngen_spec spec = specOf(128, 1);
    spec.varlen = 1;
    spec.causal_align = ATTNGEN_CAUSAL_BOTTOM_RIGHT;
    const attngen_compiled *c = nullptr;
    expect(attngen_jit_compile(jit, &spec, arch, &c) == ATTNGEN_OK,
           std::string("varlen compile ") + arch + ": " + attngen_last_error());
    if (!c)
      continue;
    std::string name = attngen_compiled_kernel_name(c);
    expect(endsWith(name, "_bf16_d128_varlen_causal"), "varlen kernel name " + name);
    std::string meta = attngen_compiled_metadata(c);
    for (const char *fact : {"\"varlen\": true", "\"tensor\": \"cu_seqlens_q\"",
                             "\"tensor\": \"cu_seqlens_k\"", "\"size\": \"max_seqlen_q\""})
      expect(meta.find(fact) != std::string::npos,
             std::string("the varlen metadata has ") + fact);
    expect(meta.find("\"dim\": \"b\"") == std::string::npos,
           "a varlen kernel has no batch strides");
    expect(std::string(attngen_compiled_cache_key(c)).find("varlen=1") != std::string::npos,
           std::string("the key holds varlen: ") + attngen_compiled_cache_key(c));
    attnrt_kernel_info info;
    expect(attnrt_metadata_parse(meta.c_str(), &info) == ATTNRT_OK && info.varlen == 1,
           "the runtime reads a varlen kernel");

    attngen_spec old = specOf(128, 1);
    old.struct_size = offsetof(attngen_spec, varlen);
    old.varlen = 1; // past the caller's struct: never read
    expect(attngen_jit_compile(jit, &old, arch, &c) == ATTNGEN_OK && c &&
               std::string(attngen_compiled_kernel_name(c)).find("varlen") == std::string::npos,
           std::string("a spec without the varlen field is dense ") + arch);
  }
  attngen_spec bad = specOf(128, 0);
  bad.varlen = 2;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "varlen must be 0 or 1, got 2", "varlen = 2");
  attngen::JIT cxx("", false);
  attngen::Spec s;
  s.varlen = true;
  s.headDim = 64;
  expect(endsWith(std::string(cxx.compile(s, "sm_90a").kernelName()), "_d64_varlen"),
         "C++: varlen kernel");
  int32_t cu[3] = {0, 5, 9};
  attnrt_forward_args a =
      attngen::varlenArgs(nullptr, nullptr, nullptr, nullptr, nullptr, cu, cu, 2, 9, 9, 5, 5, 4,
                          2, s);
  expect(a.nq == 9 && a.nk == 9 && a.batch == 2 && a.q_strides[0] == 0 &&
             a.q_strides[1] == 4 * 64 && a.k_strides[1] == 2 * 64 && a.cu_seqlens_q == cu &&
             a.max_seqlen_q == 5,
         "C++: varlenArgs fills the packed layout");
  expect(attnrt_check_cu_seqlens(&a, cu, cu) == ATTNRT_OK,
         std::string("C++: varlenArgs' sizes fit their cu_seqlens: ") + attnrt_last_error());
  attngen_jit_destroy(jit);
}

void testCache() {
  std::string dir = makeTempDir();
  attngen_spec spec = specOf(128, 0);
  attngen_jit *a = makeJit(dir);
  std::string ptx = compile(a, spec, "sm_90a", "miss");
  attngen_jit_stats s = stats(a);
  expect(s.compiles == 1 && s.disk_writes == 1 && s.disk_hits == 0, "first request compiles");
  expect(entries(dir, ".kernel").size() == 1, "one entry on disk");
  expect(entries(dir, ".tmp").empty(), "no temporary files left");
  compile(a, spec, "sm_90a", "memory hit");
  attngen_spec explicitScale = spec;
  explicitScale.scale = 1.0 / std::sqrt(128.0);
  compile(a, explicitScale, "sm_90a", "explicit default scale");
  s = stats(a);
  expect(s.compiles == 1 && s.memory_hits == 2 && s.requests == 3,
         "memory hits (scale 0 and 1/sqrt(d) share a kernel)");
  attngen_spec causal = specOf(128, 1);
  compile(a, causal, "sm_90a", "another spec");
  compile(a, spec, "sm_80", "another arch");
  expect(stats(a).compiles == 3, "other specs and arches miss");

  attngen_jit *b = makeJit(dir);
  std::string fromDisk = compile(b, spec, "sm_90a", "disk hit");
  s = stats(b);
  expect(s.disk_hits == 1 && s.compiles == 0 && fromDisk == ptx, "a new JIT reads the disk");
  attngen_jit_destroy(b);

  // Corrupt entries: each is detected, never used, and rebuilt.
  std::string entry;
  for (const std::string &path : entries(dir, ".kernel"))
    if (readFile(path).find("arch=sm_90a dtype=bf16 head_dim=128 causal=0") != std::string::npos)
      entry = path;
  expect(!entry.empty(), "found the entry");
  std::string good = readFile(entry);
  std::string causalEntry;
  for (const std::string &path : entries(dir, ".kernel"))
    if (readFile(path).find("causal=1") != std::string::npos)
      causalEntry = path;
  struct Corruption {
    const char *name;
    std::function<std::string(const std::string &)> apply;
  };
  std::vector<Corruption> corruptions = {
      {"truncated", [](const std::string &g) { return g.substr(0, g.size() / 2); }},
      {"empty", [](const std::string &) { return std::string(); }},
      {"flipped PTX byte",
       [](const std::string &g) {
         std::string c = g;
         size_t at = c.find(".entry");
         c[at + 1] ^= 0x20;
         return c;
       }},
      {"garbage header", [](const std::string &g) { return "not a cache entry\n" + g; }},
      {"bad length",
       [](const std::string &g) {
         std::string c = g;
         size_t at = c.find("\nptx ") + 5;
         c.insert(at, "9");
         return c;
       }},
      // A whole, checksummed entry of another key at this key's path: what
      // an entry from another compiler build (or a hash clash) looks like.
      {"another key", [&](const std::string &) { return readFile(causalEntry); }},
  };
  for (const Corruption &corruption : corruptions) {
    writeFile(entry, corruption.apply(good));
    attngen_jit *c = makeJit(dir);
    std::string rebuilt = compile(c, spec, "sm_90a", std::string("rebuild ") + corruption.name);
    s = stats(c);
    expect(s.corrupt_entries == 1 && s.compiles == 1 && s.disk_writes == 1 && rebuilt == ptx,
           std::string("corrupt entry (") + corruption.name + ") detected and rebuilt");
    attngen_jit_destroy(c);
    expect(readFile(entry) == good, std::string("entry rewritten after ") + corruption.name);
  }

  // An unwritable cache folder degrades to memory-only caching.
  attngen_jit *readOnly = makeJit("/proc/attngen-cannot-write-here");
  compile(readOnly, spec, "sm_80", "unwritable cache folder");
  s = stats(readOnly);
  expect(s.compiles == 1 && s.disk_writes == 0, "unwritable folder: compiled, not written");
  attngen_jit_destroy(readOnly);
  // A file where the folder should be: memory only, and no folder reported.
  writeFile(dir + "/a-file", "not a folder");
  attngen_jit *onFile = makeJit(dir + "/a-file");
  expect(std::string(attngen_jit_cache_dir(onFile)).empty(),
         "a cache folder that is a file is reported as none");
  compile(onFile, spec, "sm_80", "cache folder that is a file");
  s = stats(onFile);
  expect(s.compiles == 1 && s.disk_writes == 0, "cache folder that is a file: compiled, not written");
  attngen_jit_destroy(onFile);

  // Several threads asking for the same kernels: each compiles once.
  attngen_jit *shared = makeJit(dir + "/threads");
  std::vector<std::thread> threads;
  std::vector<const attngen_compiled *> results(16, nullptr);
  std::atomic<int> errors{0};
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      attngen_spec mine = specOf(64, i % 2);
      if (attngen_jit_compile(shared, &mine, "sm_80", &results[i]) != ATTNGEN_OK)
        ++errors;
    });
  for (std::thread &t : threads)
    t.join();
  s = stats(shared);
  expect(errors == 0 && s.compiles == 2 && s.memory_hits == 14 && s.requests == 16,
         "16 threads, 2 kernels: compiled " + std::to_string(s.compiles) + " times");
  bool same = true;
  for (int i = 2; i < 16; ++i)
    same &= results[i] == results[i % 2];
  expect(same, "threads share the compiled kernels");
  attngen_jit_destroy(shared);

  attngen_jit_destroy(a);
  removeTree(dir);
}

/// Cache entries that are not regular files of a sane size (a FIFO that
/// would block a reader forever, a symbolic link to /dev/zero, a 10 GiB
/// sparse file) are discarded without being read, and rebuilt as files.
void testEntryKinds() {
  std::string dir = makeTempDir();
  attngen_spec spec = specOf(64, 0);
  attngen_jit *a = makeJit(dir);
  std::string ptx = compile(a, spec, "sm_80", "entry kinds: first compile");
  attngen_jit_destroy(a);
  std::vector<std::string> found = entries(dir, ".kernel");
  expect(found.size() == 1, "entry kinds: one entry");
  if (found.size() != 1) {
    removeTree(dir);
    return;
  }
  const std::string entry = found[0];
  const std::string good = readFile(entry);
  struct Kind {
    const char *name;
    std::function<bool()> make; ///< replaces the entry; false on failure
  };
  const Kind kinds[] = {
      {"a FIFO", [&] { return mkfifo(entry.c_str(), 0600) == 0; }},
      {"a symbolic link to /dev/zero", [&] { return symlink("/dev/zero", entry.c_str()) == 0; }},
      {"a symbolic link to a good entry",
       [&] {
         writeFile(entry + ".copy", good);
         return symlink((entry + ".copy").c_str(), entry.c_str()) == 0;
       }},
      {"a 10 GiB sparse file",
       [&] {
         writeFile(entry, good);
         return truncate(entry.c_str(), off_t(10) << 30) == 0;
       }},
      {"an empty folder", [&] { return mkdir(entry.c_str(), 0700) == 0; }},
  };
  for (const Kind &kind : kinds) {
    std::string what = std::string("entry kinds: ") + kind.name;
    unlink(entry.c_str());
    if (!kind.make()) {
      expect(false, what + ": could not set it up: " + std::strerror(errno));
      continue;
    }
    attngen_jit *b = makeJit(dir);
    std::string rebuilt = compile(b, spec, "sm_80", what + ": rebuild");
    attngen_jit_stats s = stats(b);
    attngen_jit_destroy(b);
    struct stat st;
    bool isFile = lstat(entry.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    expect(s.corrupt_entries == 1 && s.compiles == 1 && s.disk_writes == 1 && rebuilt == ptx,
           what + ": discarded and rebuilt");
    expect(isFile && readFile(entry) == good, what + ": replaced by a good entry");
  }
  removeTree(dir);
}

/// Compiles that fail (here a scale whose float32 overflows, which the
/// metadata could not even spell in JSON) leave nothing in the disk cache.
void testFailedCompileNotCached() {
  std::string dir = makeTempDir();
  attngen_jit *jit = makeJit(dir);
  attngen_spec spec = specOf(64, 0);
  spec.scale = 1e39;
  const attngen_compiled *out = nullptr;
  attngen_status s = attngen_jit_compile(jit, &spec, "sm_80", &out);
  expect(s != ATTNGEN_OK && !out, std::string("scale 1e39 is refused, got ") +
                                      attngen_status_name(s) + ": " + attngen_last_error());
  expect(entries(dir, ".kernel").empty() && entries(dir, ".tmp").empty(),
         "scale 1e39: nothing written to the disk cache");
  expect(stats(jit).disk_writes == 0, "scale 1e39: no disk write counted");
  attngen_jit_destroy(jit);
  removeTree(dir);
}

/// Only NULL and "auto" mean the current device: an empty arch is an error.
void testEmptyArch() {
  attngen_jit *jit = makeJit("", 0);
  attngen_spec spec = specOf(64, 0);
  const attngen_compiled *out = nullptr;
  expectError(attngen_jit_compile(jit, &spec, "", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "unsupported arch ''; supported: sm_80, sm_90a, or auto", "empty arch");
  attngen_jit_destroy(jit);
}

/// The `compile` subcommand: one request on a fresh JIT.
int compileOnce(const std::string &dir, bool causal) {
  attngen_jit *jit = makeJit(dir);
  attngen_spec spec = specOf(128, causal);
  const attngen_compiled *c = nullptr;
  if (attngen_jit_compile(jit, &spec, "sm_90a", &c) != ATTNGEN_OK) {
    std::fprintf(stderr, "error: %s\n", attngen_last_error());
    return 1;
  }
  attngen_jit_stats s = stats(jit);
  std::printf("compiles=%llu disk_hits=%llu corrupt=%llu ptx_hash=%zx\n",
              (unsigned long long)s.compiles, (unsigned long long)s.disk_hits,
              (unsigned long long)s.corrupt_entries,
              std::hash<std::string>()(attngen_compiled_ptx(c)));
  attngen_jit_destroy(jit);
  return 0;
}

/// Scales whose f32 value or folded exp2 constant (scale * log2(e)) is not
/// a finite f32 are refused like the CLI refuses them (one shared check):
/// such a kernel would multiply by inf and its metadata would not be JSON.
void testScaleRange() {
  attngen_jit *jit = makeJit("", 0);
  const attngen_compiled *out = nullptr;
  attngen_spec bad = specOf(64, 0);
  bad.scale = 1e39;
  expectError(attngen_jit_compile(jit, &bad, "sm_80", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "softmax scale 1e+39 is too large", "scale 1e39");
  bad.scale = 3e38;
  expectError(attngen_jit_compile(jit, &bad, "sm_90a", &out), ATTNGEN_ERROR_INVALID_SPEC,
              "softmax scale 3e+38 is too large", "scale 3e38 (scale * log2(e) overflows)");
  bad.scale = 1e-50;
  expectError(attngen_spec_check(&bad, "sm_80"), ATTNGEN_ERROR_INVALID_SPEC,
              "softmax scale 1e-50 is too small", "scale 1e-50");
  attngen_jit_destroy(jit);
}

} // namespace

/// attngen_spec_init never writes past the caller's struct: the 0.1.0
/// entry point (what binaries built against that header call) writes its
/// 48 bytes only, the sized one at most the size it is given, and both
/// specs compile.
#undef attngen_spec_init
extern "C" void attngen_spec_init(attngen_spec *spec);
void testSpecInitSizes() {
  constexpr size_t kOldSize = offsetof(attngen_spec, causal_align);
  unsigned char buffer[sizeof(attngen_spec) + 16];
  std::memset(buffer, 0xAB, sizeof(buffer));
  auto *spec = reinterpret_cast<attngen_spec *>(buffer);
  attngen_spec_init(spec);
  bool untouched = true;
  for (size_t i = kOldSize; i < sizeof(buffer); ++i)
    untouched &= buffer[i] == 0xAB;
  expect(untouched && spec->struct_size == kOldSize && spec->head_dim == 128,
         "the 0.1.0 attngen_spec_init writes the 0.1.0 fields only");
  attngen_jit *jit = makeJit("", 0);
  const attngen_compiled *out = nullptr;
  expect(attngen_jit_compile(jit, spec, "sm_80", &out) == ATTNGEN_OK,
         std::string("a 0.1.0-sized spec compiles: ") + attngen_last_error());
  std::memset(buffer, 0xAB, sizeof(buffer));
  attngen_spec_init_sized(spec, sizeof(attngen_spec));
  expect(buffer[sizeof(attngen_spec)] == 0xAB &&
             spec->struct_size == sizeof(attngen_spec),
         "attngen_spec_init_sized stops at the size it is given");
  attngen_jit_destroy(jit);
}
#define attngen_spec_init(spec) attngen_spec_init_sized((spec), sizeof(*(spec)))

/// KV-cache specs: a split-KV kernel carries its combine kernel; the spec's
/// decoding fields are checked; a spec sized before them reads defaults.
void testKvCache() {
  attngen_jit *jit = makeJit("", 0);
  attngen_spec spec = specOf(128, 1);
  spec.kv_cache = 1;
  spec.split_kv = 1;
  spec.head_pack = 4;
  spec.page_size = 64;
  spec.causal_align = ATTNGEN_CAUSAL_BOTTOM_RIGHT;
  for (const char *arch : {"sm_80", "sm_90a"}) {
    const attngen_compiled *out = nullptr;
    attngen_status s = attngen_jit_compile(jit, &spec, arch, &out);
    expect(s == ATTNGEN_OK && out, std::string("kv-cache split kernel compiles for ") + arch +
                                       ": " + attngen_last_error());
    if (!out)
      continue;
    const attngen_compiled *combine = attngen_compiled_combine(out);
    expect(combine && std::string(attngen_compiled_kernel_name(combine)).rfind("attn_combine_", 0) == 0,
           std::string("the split kernel carries its combine kernel on ") + arch);
    expect(std::string(attngen_compiled_metadata(out)).find("\"split_kv\": true") != std::string::npos,
           "the split kernel's metadata says split_kv");
    expect(combine && std::string(attngen_compiled_metadata(combine)).find("\"kind\": \"combine\"") !=
                          std::string::npos,
           "the combine kernel's metadata says kind combine");
  }
  attngen_spec plain = specOf(128, 0);
  plain.kv_cache = 1;
  const attngen_compiled *out = nullptr;
  expect(attngen_jit_compile(jit, &plain, "sm_90a", &out) == ATTNGEN_OK && out &&
             !attngen_compiled_combine(out),
         "a kernel that does not split has no combine kernel");
  attngen_spec bad = spec;
  bad.page_size = 24;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "page size 24 is not supported",
              "a page size that is not a multiple of 16");
  bad = spec;
  bad.head_pack = 3;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "head-pack = 3 does not fit block-m = 64",
              "a head pack that does not divide the query block");
  bad = spec;
  bad.split_kv = 2;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "split_kv must be 0 or 1, got 2",
              "split_kv outside 0/1");
  bad = spec;
  bad.causal_align = ATTNGEN_CAUSAL_TOP_LEFT;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "aligns its causal diagonal and window bottom-right",
              "a causal KV-cache kernel aligned top-left");
  bad = spec;
  bad.window_left = 128;
  expect(attngen_spec_check(&bad, "sm_90a") == ATTNGEN_OK,
         std::string("a KV-cache spec with a window is valid: ") +
             attngen_last_error());
  bad = spec;
  bad.head_dim = 96;
  expect(attngen_spec_check(&bad, "sm_80") == ATTNGEN_OK,
         std::string("a d96 KV-cache spec is valid: ") + attngen_last_error());
  bad = specOf(128, 0);
  bad.split_kv = 1;
  expectError(attngen_spec_check(&bad, "sm_90a"), ATTNGEN_ERROR_INVALID_SPEC,
              "belong to KV-cache kernels",
              "split_kv without kv_cache");
  // A spec whose struct ends before the decoding fields is a dense kernel
  // even when the bytes after it say otherwise.
  attngen_spec old = spec;
  old.struct_size = offsetof(attngen_spec, kv_cache);
  expect(attngen_jit_compile(jit, &old, "sm_80", &out) == ATTNGEN_OK && out &&
             std::string(attngen_compiled_kernel_name(out)).rfind("attn_fwd_", 0) == 0,
         std::string("a spec sized before kv_cache compiles a dense kernel: ") +
             attngen_last_error());
  expectError(attngen_kernel_plan(nullptr, nullptr, nullptr, nullptr),
              ATTNGEN_ERROR_INVALID_ARGUMENT, "the kernel is NULL",
              "attngen_kernel_plan on a NULL kernel");
  attngen_jit_destroy(jit);
}

int main(int argc, char **argv) {
  if (argc >= 3 && std::string(argv[1]) == "compile")
    return compileOnce(argv[2], argc >= 4 && std::string(argv[3]) == "causal");
  testErrors();
  testCompileOutput();
  testCausalAlign();
  testSoftcap();
  testWindow();
  testVarlen();
  testCache();
  testEntryKinds();
  testFailedCompileNotCached();
  testEmptyArch();
  testScaleRange();
  testSpecInitSizes();
  testKvCache();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
