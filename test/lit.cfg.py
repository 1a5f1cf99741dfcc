# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTNGEN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attngen_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

llvm_config.use_default_substitutions()
tool_dirs = [os.path.join(config.attngen_obj_root, "bin"), config.llvm_tools_dir]
tools = ["attngen", "attngen-opt", "attngen-block-bounds-check",
         "attngen-exp2-emulation-check", "FileCheck", "not", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
_selftest = os.path.join(config.attngen_obj_root, "bin", "attnrt-selftest")
config.substitutions.append(("%attnrt_selftest", _selftest))
# The runtime needs cuda.h to build; without it its tests are unsupported.
if os.path.exists(_selftest):
    config.available_features.add("runtime")

# PTX tests assemble the generated kernels with ptxas when it is installed.
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))

config.substitutions.append(("%attngen_src", config.attngen_src_root))
config.substitutions.append(("%attngen_obj", config.attngen_obj_root))

# Numeric GPU tests need a CUDA device and PyTorch (for the reference).
def _has_gpu():
    import shutil
    import subprocess
    if not shutil.which("nvidia-smi"):
        return False
    try:
        probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
        return subprocess.run(["python3", "-c", probe], timeout=120,
                              capture_output=True).returncode == 0
    except Exception:
        return False

if _has_gpu():
    config.available_features.add("gpu")

# libattngen (the JIT) is built with the runtime; its tests need both.
_jit_lib = os.path.join(config.attngen_obj_root, "lib", "libattngen.so")
if os.path.exists(_jit_lib):
    config.available_features.add("jit")
    for _tool in ("attngen-jit-selftest", "attngen-bench-compile"):
        config.substitutions.append(
            ("%" + _tool.replace("-", "_"),
             os.path.join(config.attngen_obj_root, "bin", _tool)))
    config.substitutions.append(("%attngen_lib", _jit_lib))
config.substitutions.append(("%python", "python3"))
# Tests must not touch the user's kernel cache or be steered by their
# environment.
for _var in ("ATTNGEN_CACHE_DIR", "ATTNGEN_LOG", "ATTNGEN_DISABLE_DISK_CACHE",
             "ATTNGEN_LIBRARY"):
    config.environment.pop(_var, None)
config.environment["HOME"] = os.path.join(config.attngen_obj_root, "test", "home")

# scripts/exp2_poly.py (the software exp2's coefficients) needs numpy: the
# first python3 on PATH that has it runs the script (%numpy_python).
def _python_with_numpy():
    import shutil
    import subprocess
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        python = shutil.which("python3", path=directory)
        if not python:
            continue
        try:
            if subprocess.run([python, "-c", "import numpy"], timeout=60,
                              capture_output=True).returncode == 0:
                return python
        except Exception:
            pass
    return None

_numpy_python = _python_with_numpy()
if _numpy_python:
    config.available_features.add("numpy")
    config.substitutions.append(("%numpy_python", _numpy_python))
