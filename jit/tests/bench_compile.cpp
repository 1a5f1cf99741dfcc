//===- bench_compile.cpp - How fast the JIT answers -----------------------===//
//
//   attngen-bench-compile [--arch=sm_80|sm_90a|both] [--json=FILE]
//
// For each kernel specialization: a cold compile (empty cache, spec -> PTX
// in process), a disk-cache hit (a new JIT on the same folder) and a
// memory-cache hit (mean over many requests). With a GPU, also the whole
// first request of attngen_jit_get_kernel (compile + load), a load from the
// disk cache, and a memory hit of get_kernel. Aims: cold < 0.5 s, warm
// (memory hit) < 1 ms.
//
//===----------------------------------------------------------------------===//
#include "attngen/attngen.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void die(const char *what) {
  std::fprintf(stderr, "attngen-bench-compile: %s: %s\n", what, attngen_last_error());
  std::exit(1);
}

attngen_jit *makeJit(const std::string &dir) {
  attngen_jit_options options;
  attngen_jit_options_init(&options);
  options.cache_dir = dir.c_str();
  options.disk_cache = 1;
  attngen_jit *jit = nullptr;
  if (attngen_jit_create(&options, &jit))
    die("attngen_jit_create");
  return jit;
}

struct Case {
  const char *label;
  int headDim, causal, dtype;
};

attngen_spec specOf(const Case &c) {
  attngen_spec spec;
  attngen_spec_init(&spec);
  spec.head_dim = c.headDim;
  spec.causal = c.causal;
  spec.dtype = c.dtype;
  return spec;
}

struct Row {
  std::string arch, label, what;
  double seconds;
};

} // namespace

int main(int argc, char **argv) {
  std::string archFlag = "both", jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--arch=", 0) == 0)
      archFlag = a.substr(7);
    else if (a.rfind("--json=", 0) == 0)
      jsonPath = a.substr(7);
    else {
      std::fprintf(stderr, "usage: attngen-bench-compile [--arch=sm_80|sm_90a|both] [--json=FILE]\n");
      return 2;
    }
  }
  std::vector<std::string> arches;
  if (archFlag == "both")
    arches = {"sm_90a", "sm_80"};
  else
    arches = {archFlag};

  char tmpl[] = "/tmp/attngen-bench-XXXXXX";
  if (!mkdtemp(tmpl))
    return 1;
  std::string root = tmpl;
  const std::vector<Case> cases = {{"bf16 d128", 128, 0, ATTNRT_DTYPE_BF16},
                                   {"bf16 d128 causal", 128, 1, ATTNRT_DTYPE_BF16},
                                   {"f16 d64", 64, 0, ATTNRT_DTYPE_F16},
                                   {"bf16 d256", 256, 0, ATTNRT_DTYPE_BF16}};
  std::vector<Row> rows;
  const int memoryRepeats = 10000;
  bool first = true;
  int dirIndex = 0;
  for (const std::string &arch : arches)
    for (const Case &c : cases) {
      attngen_spec spec = specOf(c);
      std::string dir = root + "/" + std::to_string(dirIndex++);
      attngen_jit *jit = makeJit(dir);
      const attngen_compiled *out = nullptr;
      double t0 = now();
      if (attngen_jit_compile(jit, &spec, arch.c_str(), &out))
        die("compile");
      double cold = now() - t0;
      rows.push_back({arch, c.label,
                      first ? "cold compile (first in process)" : "cold compile", cold});
      first = false;
      t0 = now();
      for (int i = 0; i < memoryRepeats; ++i)
        if (attngen_jit_compile(jit, &spec, arch.c_str(), &out))
          die("memory hit");
      rows.push_back({arch, c.label, "memory hit", (now() - t0) / memoryRepeats});
      attngen_jit *second = makeJit(dir);
      t0 = now();
      if (attngen_jit_compile(second, &spec, arch.c_str(), &out))
        die("disk hit");
      rows.push_back({arch, c.label, "disk hit", now() - t0});
      attngen_jit_destroy(second);
      attngen_jit_destroy(jit);
    }

  char deviceArch[16];
  bool gpu = attngen_device_arch(deviceArch, sizeof(deviceArch)) == ATTNGEN_OK;
  if (gpu) {
    for (const Case &c : cases) {
      attngen_spec spec = specOf(c);
      std::string dir = root + "/gpu" + std::to_string(dirIndex++);
      attngen_jit *jit = makeJit(dir);
      const attngen_kernel *kernel = nullptr;
      double t0 = now();
      if (attngen_jit_get_kernel(jit, &spec, &kernel))
        die("get_kernel");
      rows.push_back({deviceArch, c.label, "get_kernel: compile + load", now() - t0});
      t0 = now();
      for (int i = 0; i < memoryRepeats; ++i)
        if (attngen_jit_get_kernel(jit, &spec, &kernel))
          die("get_kernel memory hit");
      rows.push_back({deviceArch, c.label, "get_kernel: memory hit", (now() - t0) / memoryRepeats});
      attngen_jit *second = makeJit(dir);
      t0 = now();
      if (attngen_jit_get_kernel(second, &spec, &kernel))
        die("get_kernel disk hit");
      rows.push_back({deviceArch, c.label, "get_kernel: disk hit + load", now() - t0});
      attngen_jit_destroy(second);
      attngen_jit_destroy(jit);
    }
  }
  std::string cleanup = "rm -rf '" + root + "'";
  if (std::system(cleanup.c_str()) != 0)
    std::fprintf(stderr, "warning: could not remove %s\n", root.c_str());

  std::printf("attngen compile speed (compiler %s)%s\n", attngen_compiler_id(),
              gpu ? "" : "; no GPU: load figures left out");
  std::printf("%-7s %-17s %-32s %12s\n", "arch", "kernel", "what", "time");
  for (const Row &r : rows) {
    bool small = r.seconds < 1e-3;
    std::printf("%-7s %-17s %-32s %9.3f %s\n", r.arch.c_str(), r.label.c_str(), r.what.c_str(),
                small ? r.seconds * 1e6 : r.seconds * 1e3, small ? "us" : "ms");
  }
  if (!jsonPath.empty()) {
    FILE *f = std::fopen(jsonPath.c_str(), "w");
    if (!f)
      return 1;
    std::fprintf(f, "{\"compiler\": \"%s\", \"rows\": [\n", attngen_compiler_id());
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(f, "  {\"arch\": \"%s\", \"kernel\": \"%s\", \"what\": \"%s\", \"seconds\": %.9f}%s\n",
                   rows[i].arch.c_str(), rows[i].label.c_str(), rows[i].what.c_str(),
                   rows[i].seconds, i + 1 < rows.size() ? "," : "");
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
