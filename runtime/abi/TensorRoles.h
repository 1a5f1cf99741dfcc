//===- TensorRoles.h - the tensors of the kernel ABI -----------*- C++ -*-===//
//
// The tensors a kernel parameter can belong to (docs/ABI.md, "Kernel
// parameters"): the compiler names them in `attn.tensors` and in the
// metadata's params (codegen/lib/KernelAbi), the runtime binds them
// (runtime/lib/Metadata). Both read this one table, so a new role is added
// once. Header-only and dependency-free: the runtime builds without LLVM,
// and it is not installed (the C API does not expose roles).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNRT_ABI_TENSORROLES_H
#define ATTNRT_ABI_TENSORROLES_H

namespace attnrt::abi {

/// A kernel tensor's role. A varlen kernel's cu_seqlens vectors (int32
/// [B + 1]) follow the dense ones; the decoding kernels add the
/// per-sequence key counts and the block table of a KV cache, and the
/// split-KV workspace (partial outputs and log-sum-exps); the backward
/// kernels its inputs and gradients.
enum class TensorRole {
  Q = 0,
  K = 1,
  V = 2,
  O = 3,
  Lse = 4,
  CuSeqlensQ = 5,
  CuSeqlensK = 6,
  CacheSeqlens = 7,
  BlockTable = 8,
  OPartial = 9,
  LsePartial = 10,
  // The backward pass: dL/dO, delta = rowsum(dO O) ([B, H, Nq] f32, as the
  // LSE) and the three gradients.
  Dout = 11,
  Delta = 12,
  Dq = 13,
  Dk = 14,
  Dv = 15,
  // ALiBi's slopes: f32 [B, H] (a batch stride of 0 for one per head).
  AlibiSlopes = 16,
  // The one-kernel backward's dQ accumulator: f32, shaped as dq, contiguous.
  DqAccum = 17,
  // FP8 (e4m3) kernels: the f32 descales of q, k and v, one per (batch,
  // key/value head), as FlashAttention-3's q_descale, k_descale, v_descale
  // (block-scale kernels: one per 128-row block of each head).
  QDescale = 18,
  KDescale = 19,
  VDescale = 20,
};

/// Number of tensor roles.
inline constexpr int kNumTensorRoles = 21;

/// The roles' names, in TensorRole order: what `attn.tensors` and the
/// metadata's "tensor" keys spell.
inline constexpr const char *kTensorRoleNames[kNumTensorRoles] = {
    "q",            "k",           "v",         "o",
    "lse",          "cu_seqlens_q", "cu_seqlens_k", "cache_seqlens",
    "block_table",  "o_partial",   "lse_partial", "dout",
    "delta",        "dq",          "dk",           "dv",
    "alibi_slopes", "dq_accum",    "q_descale", "k_descale",
    "v_descale"};

} // namespace attnrt::abi

#endif // ATTNRT_ABI_TENSORROLES_H
