"""Builds libattngen with CMake and puts it inside the Python package.

    pip install .                     # from the attngen source tree

The C++ build is scripts/build.sh (build/, ninja, LLVM/MLIR 22 from Debian:
scripts/install-deps.sh installs them). Set ATTNGEN_LIBRARY to package an
already built libattngen.so instead (e.g. the self-contained one of
scripts/build-self-contained.sh).
"""

import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "attngen", "_lib")
        shutil.rmtree(target, ignore_errors=True)  # nothing left from another build
        os.makedirs(target)
        library = os.environ.get("ATTNGEN_LIBRARY")
        if library:
            shutil.copy2(library, os.path.join(target, "libattngen.so"))
            return
        # pip shows a build's output only with -v: say what is going on for
        # those who look, and let ninja's progress stream through.
        print("attngen: building libattngen (the whole compiler: several minutes on a fresh "
              "clone) with scripts/build.sh; `pip install -v .` shows the progress", flush=True)
        subprocess.check_call(["bash", os.path.join(ROOT, "scripts", "build.sh"), "attngen_jit"])
        lib_dir = os.path.join(ROOT, "build", "lib")
        # libattngen finds libattnrt beside it ($ORIGIN) and LLVM/MLIR in
        # /usr/lib/llvm-22/lib.
        shutil.copy2(os.path.join(lib_dir, "libattngen.so"), os.path.join(target, "libattngen.so"))
        for runtime in glob.glob(os.path.join(lib_dir, "libattnrt.so.*")):
            shutil.copy2(runtime, os.path.join(target, os.path.basename(runtime)))


try:  # setuptools >= 70.1 ships bdist_wheel itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel


class PlatformWheel(bdist_wheel):
    """The native library is reached through ctypes, not the Python C API:
    one wheel serves every Python 3 on the platform (py3-none-<platform>)."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel},
      distclass=BinaryDistribution)
