//===- Backward.cpp - attnrt_backward: the two backward kernels, in order -===//
//
// The backward pass runs as two kernels (docs/ABI.md "Backward"): dq, which
// writes delta = rowsum(dO O) and dQ, then dkdv, which reads delta and
// writes dK and dV. Both read the same args; both are checked before
// either runs.
//
//===----------------------------------------------------------------------===//
#include "Error.h"
#include "Module.h"
#include "Validate.h"

extern "C" attnrt_status attnrt_backward(attnrt_module *dq, attnrt_module *dkdv,
                                         const attnrt_forward_args *args, void *stream) {
  return attnrt::guardApi("attnrt_backward", [&]() -> attnrt_status {
    if (!dq || !dkdv || !args)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_backward needs the loaded dq and dkdv kernels (attngen "
                          "--backward=dq and --backward=dkdv) and the call's args");
    if (dq->info.backward != ATTNRT_BACKWARD_DQ || dkdv->info.backward != ATTNRT_BACKWARD_DKDV)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "attnrt_backward takes the dq kernel first and the dkdv kernel second; "
                          "got '%s' and '%s'",
                          dq->info.kernel, dkdv->info.kernel);
    const attnrt_kernel_info &a = dq->info, &b = dkdv->info;
    if (a.head_dim != b.head_dim || a.dtype != b.dtype || a.causal != b.causal ||
        a.causal_align != b.causal_align || a.scale != b.scale || a.softcap != b.softcap ||
        a.window_left != b.window_left || a.window_right != b.window_right)
      return attnrt::fail(ATTNRT_ERROR_INVALID_ARGUMENT,
                          "backward kernels '%s' and '%s' compute different problems (head dim, "
                          "dtype, mask, scale and soft cap must agree): compile both from one spec",
                          a.kernel, b.kernel);
    if (attnrt_status s = attnrt::checkForwardArgs(a, *args))
      return s;
    if (attnrt_status s = attnrt::checkForwardArgs(b, *args))
      return s;
    if (attnrt_status s = attnrt_forward(dq, args, stream))
      return s;
    return attnrt_forward(dkdv, args, stream);
  });
}
