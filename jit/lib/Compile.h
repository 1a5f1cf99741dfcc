//===- Compile.h - A spec to PTX in process ---------------------*- C++ -*-===//
#ifndef ATTNGEN_JIT_COMPILE_H
#define ATTNGEN_JIT_COMPILE_H

#include "attn/Codegen/Codegen.h"
#include "attn/Spec/Spec.h"
#include "attngen/attngen.h"

#include <string>

namespace attngen {

/// The product of one compile: what the disk cache stores.
struct CompiledKernel {
  std::string key; ///< cacheKey() of the spec it was built from
  std::string kernelName;
  std::string arch; ///< "sm_80" / "sm_90a"
  std::string ptx;
  std::string metadata; ///< JSON of docs/ABI.md
};

/// Reads a caller's attngen_spec (any struct_size up to ours) into the
/// compiler's spec for `arch`, and checks it.
attngen_status readSpec(const attngen_spec *spec, mlir::attn::TargetKind arch,
                        mlir::attn::AttentionSpec &out);

/// "sm_80" / "sm_90a" -> target; anything else is ATTNGEN_ERROR_INVALID_SPEC.
attngen_status parseArch(const char *arch, mlir::attn::TargetKind &out);
const char *archName(mlir::attn::TargetKind arch);

/// Everything that decides the generated code, plus the compiler's
/// identity, as one printable line: equal keys mean identical kernels.
std::string cacheKey(const mlir::attn::AttentionSpec &spec);

/// Runs the whole compiler in process. Slow compiles (over a second) report
/// their stages on stderr; ATTNGEN_LOG=2 always does.
attngen_status compileKernel(const mlir::attn::AttentionSpec &spec,
                             CompiledKernel &out);

/// "<version>+llvm<ver>+build.<gnu build id of this library>".
const std::string &compilerId();

} // namespace attngen

#endif // ATTNGEN_JIT_COMPILE_H
