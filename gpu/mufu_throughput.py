"""Throughput of the MUFU (XU pipe) transcendentals the softmax uses, beside FFMA.

Each thread runs eight independent chains of one instruction (ex2.approx.ftz.f32,
tanh.approx.f32, the two alternating, or fma.rn.ftz.f32), 2048 threads per SM; the result
is instructions per SM per clock at the device's nominal clock. Run 16 of 2026-12-01 on the
H200: ex2 and tanh 16.0 each (so a soft cap doubles the MUFU work per score; tanh is not
slower than ex2), FFMA 108 (docs/PERF.md, "Soft caps without a running max").

    python3 gpu/mufu_throughput.py
"""
import ctypes

import torch

OPS = {
    "ffma": ["fma.rn.ftz.f32 %f{i}, %f{i}, 0f3F7FFFFE, 0f33800000;"] * 2,
    "ex2": ["ex2.approx.ftz.f32 %f{i}, %f{i};"] * 2,
    "tanh": ["tanh.approx.f32 %f{i}, %f{i};"] * 2,
    "ex2+tanh": ["ex2.approx.ftz.f32 %f{i}, %f{i};", "tanh.approx.f32 %f{i}, %f{i};"],
}
CHAINS, UNROLL, ITERS = 8, 4, 2000


def ptx(name, op):
    body = "".join(f"  {op[i % 2].format(i=i)}\n" for i in range(CHAINS)) * UNROLL
    init = "".join(f"  add.f32 %f{i}, %f8, 0f3D{i}00000;\n" for i in range(CHAINS))
    return f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n) {{
  .reg .b64 %rd<4>; .reg .b32 %r<4>; .reg .f32 %f<10>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x; cvt.rn.f32.u32 %f8, %r2; mul.f32 %f8, %f8, 0f3A800000;
{init}  mov.u32 %r3, 0;
LOOP:
{body}  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra LOOP;
  add.f32 %f0, %f0, %f1; add.f32 %f2, %f2, %f3; add.f32 %f4, %f4, %f5; add.f32 %f6, %f6, %f7;
  add.f32 %f0, %f0, %f2; add.f32 %f4, %f4, %f6; add.f32 %f0, %f0, %f4;
  mul.wide.u32 %rd2, %r2, 4; add.u64 %rd3, %rd1, %rd2; st.global.f32 [%rd3], %f0;
  ret;
}}
""".encode() + b"\0"


def main():
    torch.zeros(1, device="cuda")  # the primary context
    cu = ctypes.CDLL("libcuda.so.1")

    def check(status, what):
        if status != 0:
            raise RuntimeError(f"{what} failed: CUresult {status}")

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    khz = ctypes.c_int()
    check(cu.cuDeviceGetAttribute(ctypes.byref(khz), 13, 0), "clock rate")  # CLOCK_RATE
    ghz = khz.value / 1e6
    out = torch.zeros(1 << 20, device="cuda")
    print(f"{sms} SMs, nominal clock {ghz:.2f} GHz; instructions per SM per clock:")
    for name, op in OPS.items():
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(cu.cuModuleLoadData(ctypes.byref(module), ptx(name, op)), "cuModuleLoadData")
        check(cu.cuModuleGetFunction(ctypes.byref(fn), module, b"k"), "cuModuleGetFunction")
        ptr, iters = ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(ITERS)
        args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(ptr), ctypes.c_void_p),
                                     ctypes.cast(ctypes.byref(iters), ctypes.c_void_p))
        threads = 1024
        blocks = sms * 2048 // threads

        def launch():
            check(cu.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, None, args, None),
                  "cuLaunchKernel")

        launch()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            launch()
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 5
        ops = blocks * threads * ITERS * CHAINS * UNROLL
        print(f"  {name:9s} {ops / (ms * 1e-3) / sms / (ghz * 1e9):6.1f}  ({ms:.3f} ms)")
        check(cu.cuModuleUnload(module), "cuModuleUnload")


if __name__ == "__main__":
    main()
