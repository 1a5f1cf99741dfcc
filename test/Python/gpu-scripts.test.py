"""Helper of gpu-scripts.test: gpu/harness.py's Runtime over both libraries
(its structs built from each library's own layout), then a varlen kernel's
re-serialized metadata through attnrt_metadata_parse and the mask the harness
reads off it, then the argument structs the harness fills (dense and packed)
checked by attnrt_check_forward_args (no GPU needed), then how
run_child_process reports a child check that passed or failed, crashed or
hung."""
import ctypes
import json
import math
import os
import sys

import attngen
import harness

for path in (sys.argv[1], attngen._library_path):
    rt = harness.Runtime(path)  # builds its structs from the library's layout
    print(f"structs of {os.path.basename(path)}: "
          f"{ctypes.sizeof(rt.KernelInfo)} and {ctypes.sizeof(rt.ForwardArgs)} bytes, "
          f"softcap at {rt.KernelInfo.softcap.offset}")
rt.lib.attnrt_metadata_parse.restype = ctypes.c_int
rt.lib.attnrt_metadata_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(rt.KernelInfo)]
k = attngen.compile(arch="sm_80", head_dim=96, causal_align="bottom-right",
                    window_size=(100, 30), varlen=True)
info = rt.KernelInfo()
status = rt.lib.attnrt_metadata_parse(json.dumps(k.metadata).encode(), ctypes.byref(info))
print(f"{info.kernel.decode()}: varlen {info.varlen} window {info.window_left},"
      f"{info.window_right} causal_align {info.causal_align}" if status == 0
      else f"parse failed: {rt.lib.attnrt_last_error().decode()}")
print(f"its mask: {harness.kernel_mask(harness.struct_dict(info))}")


class Tensor:
    """What the harness reads of a tensor: an address, its shape, strides, dtype."""

    def __init__(self, shape, strides=None, address=1 << 24):
        self.shape, self.address, self.dtype = shape, address, "torch.bfloat16"
        self.strides = strides or tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))

    def data_ptr(self):
        return self.address

    def stride(self):
        return self.strides

    def numel(self):
        return math.prod(self.shape)


def parse(kernel):
    info = rt.KernelInfo()
    assert rt.lib.attnrt_metadata_parse(json.dumps(kernel.metadata).encode(),
                                        ctypes.byref(info)) == 0
    return info


def verdict(info, args):
    error = rt.check_args(info, args)
    return "ok" if error is None else str(error)


# Dense: q, k, v, o of [B, N, H, D] stored as [B, H, N, D]; packed: row-padded q.
dense = parse(attngen.compile(arch="sm_80", head_dim=64))
b, n, h, hkv, d = 2, 100, 4, 2, 64
q, o = (Tensor((b, n, h, d), (h * n * d, d, n * d, 1), address=a) for a in (1 << 24, 1 << 25))
kv = Tensor((b, n, hkv, d), (hkv * n * d, d, n * d, 1), address=1 << 26)
lse = Tensor((b, h, n), address=1 << 27)
print("dense args:", verdict(dense, rt.forward_args(q, kv, kv, o, lse)))
q, o = (Tensor((300, 4, 96), (4 * 104, 104, 1), address=a) for a in (1 << 24, 1 << 25))
kv = Tensor((200, 2, 96), address=1 << 26)
lse, cu = Tensor((4, 300), address=1 << 27), Tensor((3,), address=1 << 28)
print("varlen args:", verdict(info, rt.varlen_forward_args(q, kv, kv, o, lse, cu, cu, 200, 200)))
q.strides = (4 * 100, 100, 1)
print("varlen args, rows of 100:",
      verdict(info, rt.varlen_forward_args(q, kv, kv, o, None, cu, cu, 200, 200)))

# A generous limit for the children that end (a busy machine cannot make them
# miss it); one that sleeps far past a short limit for the hang.
exit_with = [sys.executable, "-c"]
for code, what, limit in (("raise SystemExit(0)", "passed", 300),
                          ("raise SystemExit(1)", "failed", 300),
                          ("raise SystemExit(3)", "crashed", 300),
                          ("import time; time.sleep(600)", "hung", 2)):
    print(f"child that {what}: {harness.run_child_process(exit_with + [code], timeout=limit)}")
