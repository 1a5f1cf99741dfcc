//===- Backward.cpp - the backward pass's kernels, in order ---------------===//
//
// The backward pass runs as the deterministic pair (docs/ABI.md
// "Backward"): dq, which writes delta = rowsum(dO O) and dQ, then dkdv,
// which reads delta and writes dK and dV; or as the one-kernel backward:
// pre (delta, the f32 dQ accumulator zeroed), fused (dK, dV, and dQ added
// into the accumulator) and post (dQ from it). Every kernel reads the same
// args, and all are checked before any runs.
//
//===----------------------------------------------------------------------===//
#include "Error.h"
#include "Module.h"
#include "Validate.h"

namespace {

/// The kernels of one backward pass, each the part it must be and all
/// compiled from one spec, checked against the call's args.
attnrt_status checkBackwardKernels(const char *function, attnrt_module *const *kernels,
                                   const attnrt_backward_part *parts, int count,
                                   const char *usage, const attnrt_forward_args *args) {
  for (int i = 0; i < count; ++i)
    if (!kernels[i])
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT, "%s needs %s and the call's args",
                          function, usage);
  if (!args)
    return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT, "%s needs %s and the call's args", function,
                        usage);
  for (int i = 0; i < count; ++i)
    if (kernels[i]->info.backward != parts[i])
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "%s takes %s, in that order; kernel %d is '%s'", function, usage, i + 1,
                          kernels[i]->info.kernel);
  const attnrt_kernel_info &a = kernels[0]->info;
  for (int i = 1; i < count; ++i) {
    const attnrt_kernel_info &b = kernels[i]->info;
    if (a.head_dim != b.head_dim || a.dtype != b.dtype || a.causal != b.causal ||
        a.causal_align != b.causal_align || a.scale != b.scale || a.softcap != b.softcap ||
        a.window_left != b.window_left || a.window_right != b.window_right ||
        a.alibi != b.alibi || a.varlen != b.varlen)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "backward kernels '%s' and '%s' compute different problems (head dim, "
                          "dtype, mask, scale, soft cap, ALiBi and varlen must agree): compile "
                          "them from one spec",
                          a.kernel, b.kernel);
  }
  for (int i = 0; i < count; ++i)
    if (attnrt_status s = attnrt::checkForwardArgs(kernels[i]->info, *args))
      return s;
  return ATTNRT_OK;
}

} // namespace

extern "C" attnrt_status attnrt_backward(attnrt_module *dq, attnrt_module *dkdv,
                                         const attnrt_forward_args *args, void *stream) {
  return attnrt::guardApi("attnrt_backward", [&]() -> attnrt_status {
    attnrt_module *kernels[] = {dq, dkdv};
    const attnrt_backward_part parts[] = {ATTNRT_BACKWARD_DQ, ATTNRT_BACKWARD_DKDV};
    if (attnrt_status s = checkBackwardKernels(
            "attnrt_backward", kernels, parts, 2,
            "the loaded dq and dkdv kernels (attngen --backward=dq and --backward=dkdv)", args))
      return s;
    if (attnrt_status s = attnrt_forward(dq, args, stream))
      return s;
    return attnrt_forward(dkdv, args, stream);
  });
}

extern "C" attnrt_status attnrt_backward_fused(attnrt_module *pre, attnrt_module *fused,
                                               attnrt_module *post,
                                               const attnrt_forward_args *args, void *stream) {
  return attnrt::guardApi("attnrt_backward_fused", [&]() -> attnrt_status {
    attnrt_module *kernels[] = {pre, fused, post};
    const attnrt_backward_part parts[] = {ATTNRT_BACKWARD_PRE, ATTNRT_BACKWARD_FUSED,
                                          ATTNRT_BACKWARD_POST};
    if (attnrt_status s = checkBackwardKernels(
            "attnrt_backward_fused", kernels, parts, 3,
            "the loaded pre, fused and post kernels (attngen --backward=pre, --backward=fused and "
            "--backward=post)",
            args))
      return s;
    for (attnrt_module *kernel : kernels)
      if (attnrt_status s = attnrt_forward(kernel, args, stream))
        return s;
    return ATTNRT_OK;
  });
}
