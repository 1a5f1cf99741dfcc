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
tools = ["attngen", "attngen-opt", "FileCheck", "not", "count"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
config.substitutions.append(
    ("%attnrt_selftest", os.path.join(config.attngen_obj_root, "bin", "attnrt-selftest")))

# PTX tests assemble the generated kernels with ptxas when it is installed.
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
