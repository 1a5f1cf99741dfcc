// attngen from C++: ask for a kernel, get PTX (no GPU needed) and, with a
// GPU, run it on device memory and check it against a CPU reference.
//
//   jit_example [--arch=sm_80|sm_90a]   PTX only, for that architecture
//   jit_example                         the current GPU's kernel, run + check
#include "attngen/attngen.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef ATTNGEN_EXAMPLE_CUDART
#include <cuda_runtime.h>
#endif

namespace {

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

#ifdef ATTNGEN_EXAMPLE_CUDART
/// Runs one GQA + causal problem with ragged lengths; returns the relative
/// error against a float reference (or -1 when there is no GPU).
double runOnGpu(attngen::JIT &jit) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return -1;
  cudaFree(nullptr); // make the primary context current on this thread

  const int B = 2, Nq = 300, Nk = 517, H = 4, Hkv = 2, D = 128;
  attngen::Spec spec;
  spec.headDim = D;
  spec.causal = true;
  attngen::Kernel kernel = jit.kernel(spec);
  std::printf("running %s on the GPU (%d registers)\n",
              std::string(kernel.compiled().kernelName()).c_str(), kernel.info().num_regs);

  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  auto fill = [&](size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v)
      x = toBf16(normal(rng));
    return v;
  };
  std::vector<uint16_t> q = fill(size_t(B) * Nq * H * D), k = fill(size_t(B) * Nk * Hkv * D),
                        v = fill(size_t(B) * Nk * Hkv * D), o(q.size());
  void *dq, *dk, *dv, *dout;
  cudaMalloc(&dq, q.size() * 2);
  cudaMalloc(&dk, k.size() * 2);
  cudaMalloc(&dv, v.size() * 2);
  cudaMalloc(&dout, o.size() * 2);
  cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, k.data(), k.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, v.data(), v.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xff, o.size() * 2); // NaN: every element must be written

  kernel.forward(attngen::bnhdArgs(dq, dk, dv, dout, nullptr, B, Nq, Nk, H, Hkv, spec));
  if (cudaDeviceSynchronize() != cudaSuccess)
    throw std::runtime_error("the kernel failed");
  cudaMemcpy(o.data(), dout, o.size() * 2, cudaMemcpyDeviceToHost);
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dout);

  // Float reference, top-left causal mask, query head h reads kv head h/2.
  double num = 0, den = 0;
  const float scale = 1.0f / std::sqrt(float(D));
  std::vector<float> s(Nk);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Nq; ++i) {
        const uint16_t *qi = &q[((size_t(b) * Nq + i) * H + h) * D];
        int kvh = h / (H / Hkv), keys = std::min(Nk, i + 1);
        float m = -INFINITY, l = 0;
        for (int j = 0; j < keys; ++j) {
          const uint16_t *kj = &k[((size_t(b) * Nk + j) * Hkv + kvh) * D];
          float dot = 0;
          for (int d = 0; d < D; ++d)
            dot += fromBf16(qi[d]) * fromBf16(kj[d]);
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        for (int j = 0; j < keys; ++j)
          l += (s[j] = std::exp(s[j] - m));
        for (int d = 0; d < D; ++d) {
          float acc = 0;
          for (int j = 0; j < keys; ++j)
            acc += s[j] * fromBf16(v[((size_t(b) * Nk + j) * Hkv + kvh) * D + d]);
          float ref = acc / l, got = fromBf16(o[((size_t(b) * Nq + i) * H + h) * D + d]);
          num += double(got - ref) * (got - ref);
          den += double(ref) * ref;
        }
      }
  return std::sqrt(num / den);
}
#endif

} // namespace

int main(int argc, char **argv) {
  std::string arch;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--arch=", 7) == 0)
      arch = argv[i] + 7;
  try {
    attngen::JIT jit; // disk cache: ATTNGEN_CACHE_DIR or ~/.cache/attngen
    attngen::Spec spec;
    spec.causal = true;
    attngen::Compiled compiled = jit.compile(spec, arch.empty() ? "sm_90a" : arch);
    std::printf("compiled %s for %s: %zu bytes of PTX\n",
                std::string(compiled.kernelName()).c_str(),
                std::string(compiled.arch()).c_str(), compiled.ptx().size());
    if (!arch.empty())
      return 0;
#ifdef ATTNGEN_EXAMPLE_CUDART
    double error = runOnGpu(jit);
    if (error < 0) {
      std::printf("no GPU: stopped after the PTX\n");
      return 0;
    }
    std::printf("relative error vs the CPU reference: %.2e\n", error);
    return error < 1e-2 ? 0 : 1;
#else
    std::printf("built without the CUDA runtime: stopped after the PTX\n");
    return 0;
#endif
  } catch (const attngen::Error &e) {
    std::fprintf(stderr, "attngen error: %s\n", e.what());
    return 1;
  }
}
