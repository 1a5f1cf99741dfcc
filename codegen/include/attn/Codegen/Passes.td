//===- Passes.td - code generation passes -------------------*- tablegen -*-===//
#ifndef ATTN_CODEGEN_PASSES_TD
#define ATTN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnToNVVM : Pass<"attn-to-nvvm", "ModuleOp"> {
  let summary = "Lower tile programs to the LLVM and NVVM dialects for the module's target";
  let description = [{
    Turns each tile-program kernel (`func.func` with `attn.kernel`) into an
    `llvm.func` with the kernel ABI of docs/ABI.md (TMA descriptors on sm_90a,
    tensor pointers, element strides, sizes) and lowers its body:

    * register tiles become per-thread scalars laid out as MMA fragments
      (shared by both targets: masks, row reductions with `shfl.sync.bfly`,
      `ex2.approx`, rescales, the epilogue stores); an `attn.exp2_diff` with
      `emulated_eighths = k` computes k/8 of its fragment blocks by the
      software exp2 instead (`max`, three `add`/`sub`, three `fma`, `shl`,
      `add.s32` per element; the kernel's metadata then says
      `exp2_emulated_eighths`);
    * sm_80: `attn.copy_async` -> `cp.async.cg` 16-byte chunks into the tile's
      32/64/128-byte swizzle (a tile padded past the head dim has its padding
      zeroed once at entry), `attn.wait` -> `cp.async.wait_group` +
      `bar.sync`, `attn.mma` -> `ldmatrix` (`.x2` for an odd last 8-column
      block) + `mma.sync.m16n8k16`;
    * sm_90a: `attn.copy_async` -> `mbarrier.arrive.expect_tx` +
      `cp.async.bulk.tensor` (TMA, one box per swizzle panel), `attn.wait` ->
      `mbarrier.try_wait.parity`, `attn.mma` -> `wgmma.mma_async` m64nNk16
      with shared-memory descriptors of the tile's swizzle mode (A from
      registers for P V).

    The result still holds `scf`/`arith` ops; `attngen` finishes with the
    upstream conversions to LLVM before translating to LLVM IR.

    A kernel flushes f32 denormals to zero (`denormal-fp-math-f32 =
    preserve-sign`) where its `#attn.schedule` says `flush_denormals = true`
    (a kernel without a schedule does; the `flush-denormals` option, when
    given, overrides both): `ex2.approx.ftz.f32` is one
    MUFU operation, where the IEEE form costs a range check and two
    predicated multiplies per exponential; denormal probabilities and
    rescale factors are below what the f32 row sum resolves.
  }];
  let options = [
    Option<"flushDenormals", "flush-denormals", "bool", "true",
           "Flush f32 denormals to zero in the kernel (ftz arithmetic); when "
           "not given, as each kernel's #attn.schedule says">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // ATTN_CODEGEN_PASSES_TD
