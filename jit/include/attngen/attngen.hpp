//===- attngen.hpp - attngen JIT, C++ API -----------------------*- C++ -*-===//
//
// A header-only C++ layer over the stable C API of attngen.h: RAII handles
// and exceptions (attngen::Error) instead of status codes.
//
//   attngen::JIT jit;                              // caches in ~/.cache/attngen
//   attngen::Spec spec;                            // bf16, d128
//   spec.causal = true;
//   attngen::Kernel kernel = jit.kernel(spec);     // for the current GPU
//   kernel.forward(attngen::bnhdArgs(q, k, v, o, lse, B, Nq, Nk, H, Hkv,
//                                    spec), stream);
//
//   // No GPU needed: PTX and launch metadata for a given architecture.
//   attngen::Compiled c = jit.compile(spec, "sm_90a");
//   std::cout << c.ptx();
//
//===----------------------------------------------------------------------===//
#ifndef ATTNGEN_ATTNGEN_HPP
#define ATTNGEN_ATTNGEN_HPP

#include "attngen/attngen.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace attngen {

/// A failed call: the C status plus its message.
class Error : public std::runtime_error {
public:
  Error(attngen_status status, const std::string &message)
      : std::runtime_error(message), code(status) {}
  attngen_status status() const { return code; }

private:
  attngen_status code;
};

inline void check(attngen_status status) {
  if (status != ATTNGEN_OK)
    throw Error(status, std::string(attngen_status_name(status)) + ": " +
                            attngen_last_error());
}

enum class DType { f16 = ATTNRT_DTYPE_F16, bf16 = ATTNRT_DTYPE_BF16 };

/// Where the diagonal of a causal mask or a window sits when Nq != Nk (see
/// attngen_causal_align).
enum class CausalAlign {
  topLeft = ATTNGEN_CAUSAL_TOP_LEFT,        ///< j <= i, PyTorch's is_causal
  bottomRight = ATTNGEN_CAUSAL_BOTTOM_RIGHT ///< j <= i + Nk - Nq, FlashAttention's
};

/// Which kernel of the backward pass a spec asks for (see attnrt_backward_part).
enum class Backward {
  none = ATTNRT_BACKWARD_NONE, ///< a forward kernel
  dq = ATTNRT_BACKWARD_DQ,     ///< delta = rowsum(dO O) and dQ; runs first
  dkdv = ATTNRT_BACKWARD_DKDV  ///< dK and dV, per key/value head
};

namespace detail {
/// The C++ type of each kind of spec field (attnrt/spec_fields.def), and
/// its conversion from and to the C struct's value.
template <class T, class C = int> struct Field {
  using type = T;
  static type fromC(C v) { return static_cast<type>(v); }
  static C toC(type v) { return static_cast<C>(v); }
};
namespace kind {
using Bool = Field<bool>;
using NoBool = Field<bool>;
using Int = Field<int>;
using Window = Field<int>;
using Real = Field<double, double>;
using Element = Field<DType>;
using Align = Field<CausalAlign>;
using Backward = Field<attngen::Backward>;
} // namespace kind
} // namespace detail

/// One attention kernel variant: the C rows of attnrt/spec_fields.def (see
/// attngen_spec), with the table's defaults. A causal KV-cache kernel needs
/// causalAlign = bottomRight.
struct Spec {
#define SPEC_FIELD(Group, InC, Member, name, json, Kind, Default, ...)        \
  ATTNGEN_HPP_MEMBER_##InC(Member, Kind, Default)
#define ATTNGEN_HPP_MEMBER_C(Member, Kind, Default)                            \
  detail::kind::Kind::type Member = detail::kind::Kind::fromC(Default);
#define ATTNGEN_HPP_MEMBER_NOC(Member, Kind, Default)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNGEN_HPP_MEMBER_C
#undef ATTNGEN_HPP_MEMBER_NOC

  attngen_spec toC() const {
    attngen_spec spec;
    attngen_spec_init(&spec);
#define SPEC_FIELD(Group, InC, Member, name, json, Kind, ...)                  \
  ATTNGEN_HPP_TO_C_##InC(Member, name, Kind)
#define ATTNGEN_HPP_TO_C_C(Member, name, Kind)                                 \
  spec.name = detail::kind::Kind::toC(Member);
#define ATTNGEN_HPP_TO_C_NOC(Member, name, Kind)
#include "attnrt/spec_fields.def"
#undef SPEC_FIELD
#undef ATTNGEN_HPP_TO_C_C
#undef ATTNGEN_HPP_TO_C_NOC
    return spec;
  }
};

/// PTX and launch metadata; a view owned by its JIT.
class Compiled {
public:
  explicit Compiled(const attngen_compiled *handle) : handle(handle) {}
  std::string_view ptx() const { return attngen_compiled_ptx(handle); }
  std::string_view metadata() const { return attngen_compiled_metadata(handle); }
  std::string_view kernelName() const { return attngen_compiled_kernel_name(handle); }
  std::string_view arch() const { return attngen_compiled_arch(handle); }
  std::string_view cacheKey() const { return attngen_compiled_cache_key(handle); }
  /// A split-KV kernel's combine kernel (null handle() otherwise).
  Compiled combine() const { return Compiled(attngen_compiled_combine(handle)); }
  const attngen_compiled *get() const { return handle; }

private:
  const attngen_compiled *handle;
};

/// A kernel loaded in one CUDA context; a view owned by its JIT.
class Kernel {
public:
  explicit Kernel(const attngen_kernel *handle) : handle(handle) {}
  /// Launches asynchronously on `stream` (cudaStream_t / CUstream).
  void forward(const attnrt_forward_args &args, void *stream = nullptr) const {
    check(attngen_kernel_forward(handle, &args, stream));
  }
  attnrt_kernel_info info() const {
    attnrt_kernel_info out;
    check(attngen_kernel_info(handle, &out));
    return out;
  }
  Compiled compiled() const { return Compiled(attngen_kernel_compiled(handle)); }
  /// The splits and workspace bytes a KV-cache call needs (allocate the
  /// workspace, set args.workspace / workspace_bytes, then forward()).
  std::pair<int64_t, size_t> plan(const attnrt_forward_args &args) const {
    int64_t splits = 0;
    size_t bytes = 0;
    check(attngen_kernel_plan(handle, &args, &splits, &bytes));
    return {splits, bytes};
  }

private:
  const attngen_kernel *handle;
};

class JIT {
public:
  /// `cacheDir` empty: ATTNGEN_CACHE_DIR or ~/.cache/attngen.
  explicit JIT(const std::string &cacheDir = "", bool diskCache = true) {
    attngen_jit_options options;
    attngen_jit_options_init(&options);
    options.cache_dir = cacheDir.c_str();
    options.disk_cache = diskCache && options.disk_cache;
    check(attngen_jit_create(&options, &handle));
  }
  ~JIT() { attngen_jit_destroy(handle); }
  JIT(const JIT &) = delete;
  JIT &operator=(const JIT &) = delete;

  /// The kernel for the current CUDA device, compiled or cached.
  Kernel kernel(const Spec &spec) {
    attngen_spec c = spec.toC();
    const attngen_kernel *out = nullptr;
    check(attngen_jit_get_kernel(handle, &c, &out));
    return Kernel(out);
  }
  /// PTX for `arch` ("sm_80", "sm_90a", "auto"); needs no GPU.
  Compiled compile(const Spec &spec, const std::string &arch) {
    attngen_spec c = spec.toC();
    const attngen_compiled *out = nullptr;
    check(attngen_jit_compile(handle, &c, arch.c_str(), &out));
    return Compiled(out);
  }
  attngen_jit_stats stats() const {
    attngen_jit_stats out;
    check(attngen_jit_get_stats(handle, &out));
    return out;
  }
  std::string cacheDir() const { return attngen_jit_cache_dir(handle); }
  void clearMemoryCache() { check(attngen_jit_clear_memory_cache(handle)); }
  attngen_jit *get() const { return handle; }

private:
  attngen_jit *handle = nullptr;
};

/// Arguments for contiguous [B, N, H, D] tensors (PyTorch's (batch, seqlen,
/// heads, head_dim) layout; V and O [B, N, H, head_dim_v] when the spec sets
/// it); `lse` may be null.
inline attnrt_forward_args bnhdArgs(const void *q, const void *k, const void *v,
                                    void *o, float *lse, int64_t batch,
                                    int64_t nq, int64_t nk, int64_t heads,
                                    int64_t kvHeads, const Spec &spec) {
  attnrt_forward_args a{};
  a.q = q;
  a.k = k;
  a.v = v;
  a.o = o;
  a.lse = lse;
  a.batch = batch;
  a.nq = nq;
  a.nk = nk;
  a.num_heads = heads;
  a.num_kv_heads = kvHeads;
  a.head_dim = spec.headDim;
  a.dtype = static_cast<int>(spec.dtype);
  auto strides = [&](int64_t *s, int64_t n, int64_t h, int64_t d) {
    s[3] = 1;
    s[2] = d;
    s[1] = h * d;
    s[0] = n * h * d;
  };
  // V and O are [.., head_dim_v] when the spec gives them a head dim.
  int64_t dv = spec.headDimV ? spec.headDimV : spec.headDim;
  strides(a.q_strides, nq, heads, spec.headDim);
  strides(a.o_strides, nq, heads, dv);
  strides(a.k_strides, nk, kvHeads, spec.headDim);
  strides(a.v_strides, nk, kvHeads, dv);
  return a;
}

/// Arguments for a varlen kernel (spec.varlen) on contiguous packed tensors:
/// q, o [totalQ, H, D], k, v [totalK, Hkv, D], `lse` [H, totalQ] (may be
/// null), and the device int32 vectors cuSeqlensQ/K [batch + 1] (sequence b
/// is rows cu[b] .. cu[b+1] - 1), as flash_attn_varlen_func takes them.
/// attnrt_check_cu_seqlens checks host copies of the vectors.
inline attnrt_forward_args varlenArgs(const void *q, const void *k,
                                      const void *v, void *o, float *lse,
                                      const int32_t *cuSeqlensQ,
                                      const int32_t *cuSeqlensK,
                                      int64_t batch, int64_t totalQ,
                                      int64_t totalK, int64_t maxSeqlenQ,
                                      int64_t maxSeqlenK, int64_t heads,
                                      int64_t kvHeads, const Spec &spec) {
  attnrt_forward_args a =
      bnhdArgs(q, k, v, o, lse, batch, totalQ, totalK, heads, kvHeads, spec);
  // Packed: no batch dimension (its stride is unused).
  a.q_strides[0] = a.k_strides[0] = a.v_strides[0] = a.o_strides[0] = 0;
  a.cu_seqlens_q = cuSeqlensQ;
  a.cu_seqlens_k = cuSeqlensK;
  a.max_seqlen_q = maxSeqlenQ;
  a.max_seqlen_k = maxSeqlenK;
  return a;
}

} // namespace attngen

#endif // ATTNGEN_ATTNGEN_HPP
