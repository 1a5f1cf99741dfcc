//===- QuantizeKernel.cpp - the FP8 quantize kernel, built and lowered ----===//
//
// One CTA quantizes 128 rows of one head (grid: row block, head, batch).
// Each thread holds E columns (16, or 32 at d256) of P rows (P passes), so
// a row is L = D / E consecutive lanes:
//
//   load      16-byte vectors, rows past N read as 0
//   rotate    (hadamard) x *= signs (an XOR of the loaded words' sign
//             bits); log2(E) butterflies in the thread,
//             log2(L) across the row's lanes (shfl.bfly and one FMA with
//             the lane's sign); 1/sqrt(D) is folded into the scale
//   amax      the thread's, the warp's (shfl), the CTA's (shared memory)
//   scale     448 / amax (block mode: descale_out gets amax / 448), or the
//             caller's descale_in (block descale 0: a block of zeros)
//   store     cvt.rn.satfinite.e4m3x2; row-major: 16-byte stores; K-major
//             (V for the PV GEMM): through shared memory, each thread
//             transposing a 4-column x 16-row byte block with prmt
//
// The memory traffic is one read and one write; the shuffles of the
// rotation stay below the memory time (log2(L) <= 3 per element).
//
// A packed (varlen) batch passes cu_seqlens: sequence b's rows start at
// row cu_seqlens[b] of src and dst and number cu_seqlens[b + 1] -
// cu_seqlens[b]; the grid covers the longest, and a block past its
// sequence's end writes the descale 0 (a block of zeros).
//
//===----------------------------------------------------------------------===//
#include "attn/Codegen/Quantize.h"
#include "attn/Codegen/Codegen.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <fmt/format.h>

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr unsigned kGlobal = 1, kShared = 3;
constexpr float kE4m3Max = 448.0f;
constexpr llvm::StringLiteral kSmemSymbol = "attn_quantize_smem";

/// The thread layout of one head dim. The first `stashed` passes wait in
/// shared memory (as f32, thread-major) for the block's amax, so that the
/// registers hold one pass and two CTAs fit an SM.
struct Layout {
  int64_t d, e, threads, stashed;
  int64_t lanesPerRow() const { return d / e; }
  int64_t rowsPerPass() const { return threads / lanesPerRow(); }
  int64_t passes() const { return kQuantizeBlockRows / rowsPerPass(); }
  /// Shared memory: the K-major staging tile, then one f32 per warp for the
  /// amax. Rows are padded by 4 bytes and every 16-row group by 16 more, so
  /// that both the row writes and the transposing column reads of a warp
  /// (8 groups x 4 columns) hit distinct banks.
  int64_t rowPitch() const { return d + 4; }
  int64_t rowOffset(int64_t row) const { return row * rowPitch() + row / 16 * 16; }
  int64_t reduceOffset() const { return rowOffset(kQuantizeBlockRows); }
  int64_t stashOffset() const { return (reduceOffset() + 4 * (threads / 32) + 15) / 16 * 16; }
  int64_t smemBytes() const { return stashOffset() + stashed * e * threads * 4; }
};

/// 32 values per thread in registers: enough warps per SM to cover the
/// loads, and at most 3 shuffle rounds per element. d256 holds 64, half of
/// them stashed: 512 threads, two CTAs per SM.
Layout layoutOf(int64_t headDim) {
  if (headDim == 256)
    return {256, 32, 512, 1};
  return {headDim, 16, headDim * 4, 0};
}

/// splitmix64: the signs are a pure function of (seed, column).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class QuantizeBuilder {
public:
  QuantizeBuilder(OpBuilder &b, Location loc, const QuantizeKernelSpec &spec)
      : b(b), loc(loc), spec(spec), layout(layoutOf(spec.headDim)) {}

  void build(LLVM::LLVMFuncOp kernel);

private:
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value i64(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value f32(float v) {
    return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                          llvm::APFloat(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value wide(Value x) {
    return arith::ExtUIOp::create(b, loc, b.getI64Type(), x);
  }
  Value globalPtr(Value base, Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), kGlobal),
                               b.getI8Type(), base, ValueRange{byteOffset});
  }
  Value sharedPtr(Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext(), kShared),
                               b.getI8Type(), smem, ValueRange{byteOffset});
  }
  Value isNull(Value ptr) {
    Value addr = LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), ptr);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, addr, i64(0));
  }
  void emitIf(Value cond, llvm::function_ref<void()> then,
              llvm::function_ref<void()> otherwise = nullptr) {
    auto op = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/bool(otherwise));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&op.getThenRegion().front());
    then();
    if (otherwise) {
      b.setInsertionPointToStart(&op.getElseRegion().front());
      otherwise();
    }
  }
  Value asmI32(StringRef text, StringRef constraints, ValueRange operands) {
    return LLVM::InlineAsmOp::create(b, loc, b.getI32Type(), operands, text,
                                     constraints, /*has_side_effects=*/false,
                                     /*is_align_stack=*/false,
                                     LLVM::TailCallKind::None,
                                     LLVM::AsmDialectAttr(), ArrayAttr())
        .getResult(0);
  }
  Value shuffle(Value v, int64_t mask) {
    return NVVM::ShflOp::create(b, loc, b.getF32Type(), i32(-1), v, i32(mask),
                                i32(0x1f), NVVM::ShflKind::bfly, UnitAttr());
  }

  SmallVector<Value> signMasks();
  /// firstSrcRow and n of the CTA's sequence: cu_seqlens[batch] and the
  /// difference to the next entry, or 0 and the parameter n.
  void readSequence();
  void loadRows();
  void rotate(SmallVector<Value> &row);
  /// The values of pass `p`: its registers, or loads of its stash.
  SmallVector<Value> valuesOf(int64_t p);
  Value blockAmax(Value threadMax);
  Value multiplier(Value amax);
  Value stashPtr(int64_t p, int64_t i);
  void storeRowMajor(Value scale);
  void storeKeyMajor(Value scale);
  /// Four f32 as four e4m3 bytes, `a` lowest.
  Value pack(Value a, Value b2, Value c, Value d) {
    return asmI32("{\n.reg .b16 lo, hi;\n"
                  "cvt.rn.satfinite.e4m3x2.f32 lo, $2, $1;\n"
                  "cvt.rn.satfinite.e4m3x2.f32 hi, $4, $3;\n"
                  "mov.b32 $0, {lo, hi};\n}",
                  "=r,f,f,f,f", ValueRange{a, b2, c, d});
  }
  /// The row (in the block) of pass `p`.
  Value rowOf(int64_t p) { return add(rowInPass, i32(p * layout.rowsPerPass())); }

  OpBuilder &b;
  Location loc;
  const QuantizeKernelSpec &spec;
  Layout layout;

  // Parameters and coordinates.
  Value src, dst, descaleOut, descaleIn, cuSeqlens;
  Value srcStride[3], dstStride[4], descaleStride[2];
  /// n: the rows of this CTA's sequence; firstSrcRow: its first row's index
  /// in src and dst (0 unless packed).
  Value n, keyMajor, firstSrcRow;
  Value tid, group, rowInPass, block, head, batch, firstRow, smem;
  /// x[p][e]: column group * E + e of row rowOf(p).
  SmallVector<SmallVector<Value>> x;
};

void QuantizeBuilder::readSequence() {
  auto given = scf::IfOp::create(b, loc, TypeRange{b.getI32Type(), b.getI32Type()},
                                 arith::XOrIOp::create(b, loc, isNull(cuSeqlens),
                                                       arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&given.getThenRegion().front());
    auto entry = [&](Value index) {
      auto load = LLVM::LoadOp::create(b, loc, b.getI32Type(),
                                       globalPtr(cuSeqlens, mul(wide(index), i64(4))), 4);
      load.setInvariant(true);
      return load.getResult();
    };
    Value start = entry(batch), end = entry(add(batch, i32(1)));
    // A decreasing pair (a caller's bad offsets) counts as no rows.
    Value rows = arith::MaxSIOp::create(b, loc, arith::SubIOp::create(b, loc, end, start), i32(0));
    scf::YieldOp::create(b, loc, ValueRange{start, rows});
    b.setInsertionPointToStart(&given.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{i32(0), n});
  }
  firstSrcRow = given.getResult(0);
  n = given.getResult(1);
}

void QuantizeBuilder::loadRows() {
  const int64_t e = layout.e, elemBytes = 2;
  auto vec = VectorType::get({4}, b.getI32Type());
  Value zero = LLVM::ZeroOp::create(b, loc, vec);
  Value base = add(mul(wide(batch), srcStride[0]), mul(wide(head), srcStride[2]));
  base = add(base, wide(mul(group, i32(e))));
  x.assign(layout.passes(), {});
  // The rotation's signs flip the 16-bit values' sign bits, two per XOR.
  SmallVector<Value> signs;
  if (spec.hadamard)
    signs = signMasks();
  for (int64_t p = 0; p < layout.passes(); ++p) {
    Value row = add(firstRow, rowOf(p));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, n);
    Value offset = add(base, mul(wide(add(firstSrcRow, row)), srcStride[1]));
    for (int64_t v = 0; v < e / 8; ++v) {
      Value byteOffset = mul(add(offset, i64(8 * v)), i64(elemBytes));
      Value addr = arith::SelectOp::create(b, loc, inside,
                                           globalPtr(src, byteOffset), src);
      auto load = LLVM::LoadOp::create(b, loc, vec, addr, /*alignment=*/16);
      load.setInvariant(true);
      Value words = arith::SelectOp::create(b, loc, inside, load, zero);
      for (int64_t k = 0; k < 4; ++k) {
        Value w = LLVM::ExtractElementOp::create(b, loc, words, i32(k));
        if (spec.hadamard)
          w = arith::XOrIOp::create(b, loc, w, signs[4 * v + k]);
        if (spec.source == DType::bf16) {
          Value lo = arith::ShLIOp::create(b, loc, w, i32(16));
          Value hi = arith::AndIOp::create(b, loc, w, i32(0xffff0000));
          x[p].push_back(arith::BitcastOp::create(b, loc, b.getF32Type(), lo));
          x[p].push_back(arith::BitcastOp::create(b, loc, b.getF32Type(), hi));
        } else {
          auto half2 = VectorType::get({2}, b.getF16Type());
          Value pair = LLVM::BitcastOp::create(b, loc, half2, w);
          for (int64_t h = 0; h < 2; ++h)
            x[p].push_back(arith::ExtFOp::create(
                b, loc, b.getF32Type(),
                LLVM::ExtractElementOp::create(b, loc, pair, i32(h)).getResult()));
        }
      }
    }
  }
}

/// The random signs of the thread's columns (c = group * E + i) as XOR
/// masks of its loaded words: word k holds columns 2k and 2k + 1, their
/// sign bits 15 and 31.
SmallVector<Value> QuantizeBuilder::signMasks() {
  const int64_t e = layout.e;
  // One 32-bit word of sign bits per 32 columns; a group's bits start at
  // (group * E) % 32 of word (group * E) / 32.
  SmallVector<uint32_t> words(spec.headDim / 32, 0);
  for (int64_t c = 0; c < spec.headDim; ++c)
    if (hadamardSignNegative(spec.seed, c))
      words[c / 32] |= 1u << (c % 32);
  Value bit0 = mul(group, i32(e));
  Value wordIndex = arith::ShRUIOp::create(b, loc, bit0, i32(5));
  Value word = i32(static_cast<int32_t>(words[0]));
  for (size_t w = 1; w < words.size(); ++w) {
    Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, wordIndex,
                                     i32(static_cast<int64_t>(w)));
    word = arith::SelectOp::create(b, loc, is, i32(static_cast<int32_t>(words[w])), word);
  }
  Value bits = arith::ShRUIOp::create(
      b, loc, word, arith::AndIOp::create(b, loc, bit0, i32(31)));
  SmallVector<Value> masks;
  for (int64_t i = 0; i < e; i += 2) {
    auto signBit = [&](int64_t column, int64_t at) {
      Value bit = arith::AndIOp::create(
          b, loc, arith::ShRUIOp::create(b, loc, bits, i32(column)), i32(1));
      return arith::ShLIOp::create(b, loc, bit, i32(at));
    };
    masks.push_back(arith::OrIOp::create(b, loc, signBit(i, 15), signBit(i + 1, 31)));
  }
  return masks;
}

/// row <- H row, unnormalized (the signs were applied as x loaded).
void QuantizeBuilder::rotate(SmallVector<Value> &row) {
  const int64_t e = layout.e, lanes = layout.lanesPerRow();
  SmallVector<int64_t> laneMasks;
  SmallVector<Value> laneSigns;
  for (int64_t m = 1; m < lanes; m *= 2) {
    Value upper = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, group, i32(m)), i32(0));
    laneMasks.push_back(m);
    laneSigns.push_back(arith::SelectOp::create(b, loc, upper, f32(-1.0f), f32(1.0f)));
  }
  // Butterflies over the column bits the thread holds ...
  for (int64_t s = 1; s < e; s *= 2)
    for (int64_t i = 0; i < e; ++i)
      if (!(i & s)) {
        Value u = row[i], v = row[i + s];
        row[i] = arith::AddFOp::create(b, loc, u, v);
        row[i + s] = arith::SubFOp::create(b, loc, u, v);
      }
  // ... then over those of the row's lanes: the lower partner keeps u + v,
  // the upper u - v (its partner's value minus its own): one FMA with the
  // lane's sign per element.
  for (auto [stage, m] : llvm::enumerate(laneMasks))
    for (int64_t i = 0; i < e; ++i)
      row[i] = LLVM::FMAOp::create(b, loc, row[i], laneSigns[stage],
                                   shuffle(row[i], m));
}

/// The stash of pass p: value i of thread t at (i * threads + t) * 4, so a
/// warp's accesses are consecutive words.
Value QuantizeBuilder::stashPtr(int64_t p, int64_t i) {
  int64_t slot = (p * layout.e + i) * layout.threads;
  return sharedPtr(add(i32(layout.stashOffset() + 4 * slot), mul(tid, i32(4))));
}

SmallVector<Value> QuantizeBuilder::valuesOf(int64_t p) {
  if (p >= layout.stashed)
    return x[p];
  SmallVector<Value> values;
  for (int64_t i = 0; i < layout.e; ++i)
    values.push_back(LLVM::LoadOp::create(b, loc, b.getF32Type(), stashPtr(p, i), 4));
  return values;
}

/// max |x| over the CTA's rows, from the thread's `m`.
Value QuantizeBuilder::blockAmax(Value m) {
  for (int64_t s = 16; s >= 1; s /= 2)
    m = arith::MaxNumFOp::create(b, loc, m, shuffle(m, s));
  Value warp = arith::ShRUIOp::create(b, loc, tid, i32(5));
  Value lane = arith::AndIOp::create(b, loc, tid, i32(31));
  Value reduce = i32(layout.reduceOffset());
  emitIf(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, i32(0)),
         [&] {
           LLVM::StoreOp::create(b, loc, m,
                                 sharedPtr(add(reduce, mul(warp, i32(4)))), 4);
         });
  NVVM::Barrier0Op::create(b, loc);
  Value amax = f32(0.0f);
  for (int64_t w = 0; w < layout.threads / 32; ++w)
    amax = arith::MaxNumFOp::create(
        b, loc, amax,
        LLVM::LoadOp::create(b, loc, b.getF32Type(),
                             sharedPtr(add(reduce, i32(4 * w))), 4));
  return amax;
}

/// What x is multiplied by before the conversion: 448 / amax (block mode,
/// which also writes the block's descale), or 1 / descale_in[b, h]; both
/// with the rotation's 1 / sqrt(D).
Value QuantizeBuilder::multiplier(Value amax) {
  float norm = spec.hadamard ? std::sqrt(static_cast<float>(spec.headDim)) : 1.0f;
  auto given = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()},
                                 arith::XOrIOp::create(b, loc, isNull(descaleIn),
                                                       arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&given.getThenRegion().front());
    Value offset = add(mul(wide(batch), descaleStride[0]), mul(wide(head), descaleStride[1]));
    Value d = LLVM::LoadOp::create(b, loc, b.getF32Type(),
                                   globalPtr(descaleIn, mul(offset, i64(4))), 4);
    Value scale = arith::DivFOp::create(b, loc, f32(1.0f),
                                        arith::MulFOp::create(b, loc, d, f32(norm)));
    scf::YieldOp::create(b, loc, scale);

    b.setInsertionPointToStart(&given.getElseRegion().front());
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, amax, f32(0.0f));
    Value safe = arith::SelectOp::create(b, loc, positive, amax, f32(1.0f));
    Value blockScale = arith::SelectOp::create(
        b, loc, positive, arith::DivFOp::create(b, loc, f32(kE4m3Max), safe), f32(0.0f));
    // A block of zeros gets descale 0 (its amax): a maximum over blocks
    // (per-tensor and per-head scales) then sees only the blocks with data.
    Value descale = arith::DivFOp::create(b, loc, amax, f32(kE4m3Max * norm));
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, i32(0));
    Value writes = arith::AndIOp::create(
        b, loc, first,
        arith::XOrIOp::create(b, loc, isNull(descaleOut),
                              arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
    emitIf(writes, [&] {
      Value blocks = NVVM::GridDimXOp::create(b, loc, b.getI32Type());
      Value heads = NVVM::GridDimYOp::create(b, loc, b.getI32Type());
      Value index = add(mul(add(mul(batch, heads), head), blocks), block);
      LLVM::StoreOp::create(b, loc, descale,
                            globalPtr(descaleOut, mul(wide(index), i64(4))), 4);
    });
    scf::YieldOp::create(b, loc, blockScale);
  }
  return given.getResult(0);
}

void QuantizeBuilder::storeRowMajor(Value scale) {
  const int64_t e = layout.e;
  auto vec = VectorType::get({4}, b.getI32Type());
  Value base = add(mul(wide(batch), dstStride[0]), mul(wide(head), dstStride[2]));
  base = add(base, wide(mul(group, i32(e))));
  // The passes in registers first, then the stashed ones.
  for (int64_t p = layout.passes() - 1; p >= 0; --p) {
    SmallVector<Value> values = valuesOf(p);
    SmallVector<Value> words;
    for (int64_t i = 0; i < e; i += 4) {
      auto scaled = [&](int64_t k) {
        return arith::MulFOp::create(b, loc, values[i + k], scale);
      };
      words.push_back(pack(scaled(0), scaled(1), scaled(2), scaled(3)));
    }
    Value row = add(firstRow, rowOf(p));
    Value offset = add(base, mul(wide(add(firstSrcRow, row)), dstStride[1]));
    emitIf(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, n), [&] {
      for (int64_t v = 0; v < e / 16; ++v) {
        Value packed = LLVM::UndefOp::create(b, loc, vec);
        for (int64_t k = 0; k < 4; ++k)
          packed = LLVM::InsertElementOp::create(b, loc, packed, words[4 * v + k], i32(k));
        LLVM::StoreOp::create(b, loc, packed,
                              globalPtr(dst, add(offset, i64(16 * v))), 16);
      }
    });
  }
}

/// Rows land in shared memory as e4m3 bytes; then thread t takes columns
/// 4c..4c+3 (c = t / 8) of rows 16k..16k+15 (k = t % 8),
/// transposes that 16 x 4 byte block with prmt and stores four 16-byte
/// column pieces. Rows past N hold zeros; the pieces past the 16-row
/// padding of N are not stored.
void QuantizeBuilder::storeKeyMajor(Value scale) {
  const int64_t e = layout.e, d = spec.headDim, pitch = layout.rowPitch();
  auto rowOffset = [&](Value row) {
    return add(mul(row, i32(pitch)),
               mul(arith::ShRUIOp::create(b, loc, row, i32(4)), i32(16)));
  };
  for (int64_t p = layout.passes() - 1; p >= 0; --p) {
    SmallVector<Value> values = valuesOf(p);
    Value rowBase = add(rowOffset(rowOf(p)), mul(group, i32(e)));
    for (int64_t i = 0; i < e; i += 4) {
      auto scaled = [&](int64_t k) {
        return arith::MulFOp::create(b, loc, values[i + k], scale);
      };
      LLVM::StoreOp::create(b, loc, pack(scaled(0), scaled(1), scaled(2), scaled(3)),
                            sharedPtr(add(rowBase, i32(i))), 4);
    }
  }
  NVVM::Barrier0Op::create(b, loc);
  // Lanes 8c..8c+7 take the 8 row chunks of column group c: each column's
  // 128 bytes are one warp store's.
  const int64_t chunks = kQuantizeBlockRows / 16, pieces = d / 4 * chunks;
  Value chunk = arith::RemUIOp::create(b, loc, tid, i32(chunks));
  Value colGroup = arith::DivUIOp::create(b, loc, tid, i32(chunks));
  Value firstKey = add(firstRow, mul(chunk, i32(16)));
  // N rounded up to 16: the K-major tensor's padded rows.
  Value padded = arith::AndIOp::create(b, loc, add(n, i32(15)), i32(~15));
  Value active = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, i32(pieces)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, firstKey, padded));
  emitIf(active, [&] {
    SmallVector<Value> w;
    for (int64_t r = 0; r < 16; ++r) {
      Value offset = add(rowOffset(add(mul(chunk, i32(16)), i32(r))),
                         mul(colGroup, i32(4)));
      w.push_back(LLVM::LoadOp::create(b, loc, b.getI32Type(), sharedPtr(offset), 4));
    }
    // cols[j][k]: byte j of w[4k .. 4k + 3].
    SmallVector<SmallVector<Value>> cols(4);
    auto prmt = [&](Value a, Value c, uint32_t selector) {
      return asmI32("prmt.b32 $0, $1, $2, $3;", "=r,r,r,r",
                    ValueRange{a, c, i32(static_cast<int32_t>(selector))});
    };
    for (int64_t k = 0; k < 4; ++k) {
      Value x01 = prmt(w[4 * k], w[4 * k + 1], 0x5140);
      Value x23 = prmt(w[4 * k + 2], w[4 * k + 3], 0x5140);
      Value y01 = prmt(w[4 * k], w[4 * k + 1], 0x7362);
      Value y23 = prmt(w[4 * k + 2], w[4 * k + 3], 0x7362);
      cols[0].push_back(prmt(x01, x23, 0x5410));
      cols[1].push_back(prmt(x01, x23, 0x7632));
      cols[2].push_back(prmt(y01, y23, 0x5410));
      cols[3].push_back(prmt(y01, y23, 0x7632));
    }
    auto vec = VectorType::get({4}, b.getI32Type());
    Value base = add(add(mul(wide(batch), dstStride[0]), mul(wide(head), dstStride[2])),
                     wide(firstKey));
    for (int64_t j = 0; j < 4; ++j) {
      Value column = add(mul(colGroup, i32(4)), i32(j));
      Value packed = LLVM::UndefOp::create(b, loc, vec);
      for (int64_t k = 0; k < 4; ++k)
        packed = LLVM::InsertElementOp::create(b, loc, packed, cols[j][k], i32(k));
      LLVM::StoreOp::create(
          b, loc, packed,
          globalPtr(dst, add(base, mul(wide(column), dstStride[3]))), 16);
    }
  });
}

void QuantizeBuilder::build(LLVM::LLVMFuncOp kernel) {
  Block *entry = kernel.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  auto args = kernel.getArguments();
  src = args[0];
  dst = args[1];
  descaleOut = args[2];
  descaleIn = args[3];
  for (int i = 0; i < 3; ++i)
    srcStride[i] = args[4 + i];
  for (int i = 0; i < 4; ++i)
    dstStride[i] = args[7 + i];
  descaleStride[0] = args[11];
  descaleStride[1] = args[12];
  n = args[13];
  keyMajor = args[14];
  cuSeqlens = args[15];

  Type i32Type = b.getI32Type();
  tid = NVVM::ThreadIdXOp::create(b, loc, i32Type);
  block = NVVM::BlockIdXOp::create(b, loc, i32Type);
  head = NVVM::BlockIdYOp::create(b, loc, i32Type);
  batch = NVVM::BlockIdZOp::create(b, loc, i32Type);
  firstRow = mul(block, i32(kQuantizeBlockRows));
  group = arith::RemUIOp::create(b, loc, tid, i32(layout.lanesPerRow()));
  rowInPass = arith::DivUIOp::create(b, loc, tid, i32(layout.lanesPerRow()));
  smem = LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), kShared), kSmemSymbol);
  readSequence();

  loadRows();
  // Pass by pass: rotate, fold into the thread's amax, and stash the first
  // passes where the registers are short.
  Value threadMax = f32(0.0f);
  for (int64_t p = 0; p < layout.passes(); ++p) {
    if (spec.hadamard)
      rotate(x[p]);
    for (Value v : x[p])
      threadMax = arith::MaxNumFOp::create(b, loc, threadMax,
                                           LLVM::FAbsOp::create(b, loc, v));
    if (p < layout.stashed)
      for (int64_t i = 0; i < layout.e; ++i)
        LLVM::StoreOp::create(b, loc, x[p][i], stashPtr(p, i), 4);
  }
  Value scale = multiplier(blockAmax(threadMax));
  // dst NULL: only the block descales (the first pass of a per-tensor or
  // per-head quantization).
  Value stores = arith::XOrIOp::create(b, loc, isNull(dst),
                                       arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  emitIf(stores, [&] {
    Value kMajor = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, keyMajor, i32(0));
    emitIf(kMajor, [&] { storeKeyMajor(scale); }, [&] { storeRowMajor(scale); });
  });
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

} // namespace

bool mlir::attn::hadamardSignNegative(uint64_t seed, int64_t column) {
  return mix(seed * 0x100000001b3ull + static_cast<uint64_t>(column)) & 1;
}

llvm::Error mlir::attn::checkQuantizeSpec(const QuantizeKernelSpec &spec) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (spec.target != TargetKind::sm_90a)
    return fail("the FP8 quantize kernel needs sm_90a (e4m3 conversion and "
                "FP8 attention); sm_80 has no FP8");
  if (spec.headDim != 64 && spec.headDim != 128 && spec.headDim != 256)
    return fail(fmt::format("the FP8 quantize kernel supports head dims 64, "
                            "128 and 256 (those of FP8 attention), not {}",
                            spec.headDim));
  if (spec.source != DType::bf16 && spec.source != DType::f16)
    return fail("the FP8 quantize kernel reads bf16 or f16");
  return llvm::Error::success();
}

QuantizeLaunch mlir::attn::quantizeLaunch(const QuantizeKernelSpec &spec) {
  Layout layout = layoutOf(spec.headDim);
  QuantizeLaunch launch;
  launch.kernel = fmt::format(
      "attn_quantize_e4m3_d{}_{}{}", spec.headDim,
      spec.source == DType::f16 ? "f16" : "bf16",
      spec.hadamard ? fmt::format("_hadamard{:x}", spec.seed) : std::string());
  launch.numThreads = layout.threads;
  launch.smemBytes = layout.smemBytes();
  return launch;
}

void mlir::attn::buildQuantizeKernel(ModuleOp module,
                                     const QuantizeKernelSpec &spec) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  QuantizeLaunch launch = quantizeLaunch(spec);
  LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                         /*isConstant=*/false, LLVM::Linkage::External,
                         kSmemSymbol, Attribute(), /*alignment=*/16, kShared);
  auto ptr = LLVM::LLVMPointerType::get(ctx, kGlobal);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  SmallVector<Type> params = {ptr, ptr, ptr, ptr};
  params.append(3 + 4 + 2, i64);
  params.append({i32, i32, ptr});
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  auto kernel = LLVM::LLVMFuncOp::create(b, loc, launch.kernel, type);
  kernel->setAttr("nvvm.kernel", UnitAttr::get(ctx));
  kernel->setAttr("nvvm.maxntid",
                  DenseI32ArrayAttr::get(ctx, {int32_t(launch.numThreads), 1, 1}));
  // Two CTAs per SM: registers capped at 64 (what the stash is for).
  if (layoutOf(spec.headDim).stashed)
    kernel->setAttr("nvvm.minctasm", b.getI32IntegerAttr(2));
  for (int i = 0; i < 4; ++i)
    kernel.setArgAttr(i, "llvm.noalias", UnitAttr::get(ctx));
  kernel.setArgAttr(15, "llvm.noalias", UnitAttr::get(ctx));
  QuantizeBuilder(b, loc, spec).build(kernel);
}

LogicalResult mlir::attn::lowerQuantizeModule(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  return pm.run(module);
}

llvm::Expected<std::string>
mlir::attn::emitQuantizePtx(MLIRContext &context,
                            const QuantizeKernelSpec &spec) {
  if (llvm::Error error = checkQuantizeSpec(spec))
    return std::move(error);
  DialectRegistry registry;
  registerCodegenDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  buildQuantizeKernel(*module, spec);
  if (failed(verify(*module)) || failed(lowerQuantizeModule(*module)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the quantize kernel failed to lower");
  return emitPtx(*module, spec.target);
}
