// Naive attention kernels that follow docs/ABI.md exactly: known-correct (slow)
// stand-ins for attngen's kernels, used to validate libattnrt and
// gpu/check_and_bench.py on a GPU. One query row per thread, online softmax in
// float32, K/V read straight from global memory.
//
// The TMA flavour (NAIVE_TMA=1, sm_90a) takes the three CUtensorMaps the
// runtime encodes and checks them: thread 0 loads one box of Q, K and V with
// cp.async.bulk.tensor and every thread compares one box row with the same
// elements read from global memory (out-of-bounds rows must read as 0). On a
// mismatch the CTA writes NaN to O, which the harness reports.
//
// Compiled once per variant (see make_kernels.py) with:
//   NAIVE_NAME    entry name          NAIVE_T       __half or __nv_bfloat16
//   NAIVE_D       head dim            NAIVE_CAUSAL  0 or 1
//   NAIVE_TMA     0 or 1 (sm_90a)     NAIVE_BLOCK_M query rows (= threads) per CTA
//   NAIVE_SCALE   softmax scale (float literal)
//   NAIVE_BOX_COLS  TMA box columns: 64, 32 or 16 (a 128, 64 or 32-byte
//                   swizzle span; default 64)
//   NAIVE_BOX_COL0  the box's first column (default 0; the last panel of a
//                   padded head dim, e.g. 32 for D = 40 with 16-column boxes,
//                   checks that columns >= D read as 0)
//   NAIVE_FAULT   0, or a deliberate bug proving the harness catches it:
//                 1 TMA check ignores the swizzle, 2 last row of each CTA unwritten,
//                 3 out-of-bounds store (kills the CUDA context)

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace {

constexpr int kD = NAIVE_D;
constexpr int kBlockM = NAIVE_BLOCK_M;
#ifndef NAIVE_BOX_COLS
#define NAIVE_BOX_COLS 64
#endif
#ifndef NAIVE_BOX_COL0
#define NAIVE_BOX_COL0 0
#endif
/// TMA box: one swizzle span of two-byte columns (64: 128 bytes, 32: 64,
/// 16: 32), kBlockM rows, from column kBoxCol0.
constexpr int kBoxCols = NAIVE_BOX_COLS;
constexpr int kBoxCol0 = NAIVE_BOX_COL0;
constexpr int kBoxRows = kBlockM;
constexpr int kBoxBytes = kBoxCols * kBoxRows * 2;
/// Chunks of 16 bytes are XORed with (row >> kSwizzleShift) & kSwizzleMask:
/// row % 8 for 128 bytes, (row / 2) % 4 for 64, (row / 4) % 2 for 32.
constexpr int kSwizzleShift = kBoxCols == 64 ? 0 : kBoxCols == 32 ? 1 : 2;
constexpr int kSwizzleMask = kBoxCols / 8 - 1;
/// The widest swizzle repeats every 8 rows of 128 bytes: boxes start
/// 1024-aligned (which the narrower ones' 512 and 256 divide).
constexpr int kSwizzleAlign = 1024;

using T = NAIVE_T;

#ifndef NAIVE_FAULT
#define NAIVE_FAULT 0
#endif

__device__ inline float toFloat(__half x) { return __half2float(x); }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename U> __device__ inline U fromFloat(float x);
template <> __device__ inline __half fromFloat<__half>(float x) { return __float2half_rn(x); }
template <> __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

struct Strides {
  int64_t qb, qn, qh, kb, kn, kh, vb, vn, vh, ob, on, oh;
};

#if NAIVE_TMA
__device__ inline uint32_t smemAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Loads one box at coordinates {kBoxCol0, row, head, batch} into `dst`.
__device__ inline void tmaLoad(void *dst, const CUtensorMap *map, int row, int head, int batch,
                               uint64_t *bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :
               : "r"(smemAddress(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(kBoxCol0), "r"(row),
                 "r"(head), "r"(batch), "r"(smemAddress(bar))
               : "memory");
}

/// Compares row `r` of a swizzled box with global memory.
///   16-byte chunk c of box row r lives at chunk c ^ ((r >> shift) & mask) of
///   that row; rows past the tensor's and columns past D read as 0.
__device__ inline bool boxRowMatches(const uint16_t *box, int r, const T *base, int64_t strideN,
                                     int rows) {
  const uint16_t *global = reinterpret_cast<const uint16_t *>(base);
  bool ok = true;
  for (int c = 0; c < kBoxCols; ++c) {
    int chunk = (c / 8) ^ ((r >> kSwizzleShift) & kSwizzleMask);
    int physical = NAIVE_FAULT == 1 ? c : chunk * 8 + (c % 8);
    uint16_t got = box[r * kBoxCols + physical];
    int col = kBoxCol0 + c;
    uint16_t want = r < rows && col < kD ? global[r * strideN + col] : 0;
    ok = ok && got == want;
  }
  return ok;
}
#endif

__device__ void attention(const T *q, const T *k, const T *v, T *o, float *lse, const Strides &s,
                          int nq, int nk, int numHeads, int numKvHeads, float *qStage,
                          bool poison) {
  constexpr float kScale = NAIVE_SCALE; // 1/sqrt(D), the metadata's "scale"
  const int row = blockIdx.x * kBlockM + threadIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (numHeads / numKvHeads);
  if (row >= nq)
    return;
  // Q row, pre-scaled, in shared memory transposed ([d][thread]: no bank conflicts).
  const T *qRow = q + b * s.qb + row * s.qn + h * s.qh;
  for (int d = 0; d < kD; ++d)
    qStage[d * kBlockM + threadIdx.x] = toFloat(qRow[d]) * kScale;
  float acc[kD];
  for (int d = 0; d < kD; ++d)
    acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;
  const int end = NAIVE_CAUSAL ? min(nk, row + 1) : nk;
  for (int j = 0; j < end; ++j) {
    const T *kRow = k + b * s.kb + j * s.kn + hk * s.kh;
    const T *vRow = v + b * s.vb + j * s.vn + hk * s.vh;
    float score = 0.f;
    for (int d = 0; d < kD; ++d)
      score += qStage[d * kBlockM + threadIdx.x] * toFloat(kRow[d]);
    float mNew = fmaxf(m, score);
    float correction = expf(m - mNew);
    float p = expf(score - mNew);
    l = l * correction + p;
    for (int d = 0; d < kD; ++d)
      acc[d] = acc[d] * correction + p * toFloat(vRow[d]);
    m = mNew;
  }
  T *oRow = o + b * s.ob + row * s.on + h * s.oh;
  if (NAIVE_FAULT == 2 && threadIdx.x == kBlockM - 1)
    return;
  if (NAIVE_FAULT == 3 && row == 0)
    oRow[int64_t(1) << 40] = fromFloat<T>(0.f);
  for (int d = 0; d < kD; ++d)
    oRow[d] = fromFloat<T>(poison ? __int_as_float(0x7fc00000) : acc[d] / l);
  if (lse)
    lse[(int64_t(b) * numHeads + h) * nq + row] = m + logf(l);
}

} // namespace

extern "C" __global__ void __launch_bounds__(kBlockM) NAIVE_NAME(
#if NAIVE_TMA
    const __grid_constant__ CUtensorMap tmaQ, const __grid_constant__ CUtensorMap tmaK,
    const __grid_constant__ CUtensorMap tmaV,
#endif
    const T *q, const T *k, const T *v, T *o, float *lse, int64_t qsb, int64_t qsn, int64_t qsh,
    int64_t ksb, int64_t ksn, int64_t ksh, int64_t vsb, int64_t vsn, int64_t vsh, int64_t osb,
    int64_t osn, int64_t osh, int batch, int nq, int nk, int numHeads, int numKvHeads) {
  extern __shared__ __align__(16) unsigned char smem[];
  float *qStage = reinterpret_cast<float *>(smem);
  const Strides s{qsb, qsn, qsh, ksb, ksn, ksh, vsb, vsn, vsh, osb, osn, osh};
  bool poison = false;
#if NAIVE_TMA
  __shared__ __align__(8) uint64_t bar;
  __shared__ int mismatches;
  uintptr_t boxBase = reinterpret_cast<uintptr_t>(smem + kD * kBlockM * sizeof(float));
  boxBase = (boxBase + kSwizzleAlign - 1) & ~uintptr_t(kSwizzleAlign - 1);
  uint16_t *boxes = reinterpret_cast<uint16_t *>(boxBase);
  const int h = blockIdx.y, b = blockIdx.z, hk = h / (numHeads / numKvHeads);
  const int row0 = blockIdx.x * kBlockM;
  if (threadIdx.x == 0) {
    mismatches = 0;
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddress(&bar)), "r"(1) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddress(&bar)),
                 "r"(3 * kBoxBytes)
                 : "memory");
    tmaLoad(boxes, &tmaQ, row0, h, b, &bar);
    tmaLoad(boxes + kBoxCols * kBoxRows, &tmaK, 0, hk, b, &bar);
    tmaLoad(boxes + 2 * kBoxCols * kBoxRows, &tmaV, 0, hk, b, &bar);
  }
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(smemAddress(&bar)), "r"(0)
                 : "memory");
  const int r = threadIdx.x;
  bool ok = boxRowMatches(boxes, r, q + b * qsb + row0 * qsn + h * qsh, qsn, nq - row0) &&
            boxRowMatches(boxes + kBoxCols * kBoxRows, r, k + b * ksb + hk * ksh, ksn, nk) &&
            boxRowMatches(boxes + 2 * kBoxCols * kBoxRows, r, v + b * vsb + hk * vsh, vsn, nk);
  if (!ok && atomicAdd(&mismatches, 1) == 0 && blockIdx.x == 0 && blockIdx.y == 0 &&
      blockIdx.z == 0)
    printf("naive TMA check: box row %d of CTA (0, 0, 0) differs from global memory\n", r);
  __syncthreads();
  poison = mismatches != 0;
#endif
  attention(q, k, v, o, lse, s, nq, nk, numHeads, numKvHeads, qStage, poison);
}
