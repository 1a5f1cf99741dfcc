"""Helper of gpu-scripts.test: check_and_bench.Runtime over both libraries
(its structs built from each library's own layout),
then a varlen kernel's re-serialized metadata through attnrt_metadata_parse,
then how run_child_process reports a child check that passed or failed, crashed
or hung."""
import ctypes
import json
import os
import sys

import attngen
import check_and_bench as cb

for path in (sys.argv[1], attngen._library_path):
    rt = cb.Runtime(path)  # builds its structs from the library's layout
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

# A generous limit for the children that end (a busy machine cannot make them
# miss it); one that sleeps far past a short limit for the hang.
exit_with = [sys.executable, "-c"]
for code, what, limit in (("raise SystemExit(0)", "passed", 300),
                          ("raise SystemExit(1)", "failed", 300),
                          ("raise SystemExit(3)", "crashed", 300),
                          ("import time; time.sleep(600)", "hung", 2)):
    print(f"child that {what}: {cb.run_child_process(exit_with + [code], timeout=limit)}")
