"""Builds the package from source with the repository's CMake build (python/..): the extension
module darcy._darcy and the `darcy` binary, which LocalCluster starts as node processes, go into
the package beside its Python files. The build folder is $DARCY_BUILD_DIR, else the repository's
build/ (configured like `make build` when it has no CMakeCache.txt); nothing is downloaded."""

import os
import pathlib
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent.parent


class build_with_cmake(build_py):
    def run(self):
        super().run()
        build = pathlib.Path(os.environ.get("DARCY_BUILD_DIR") or ROOT / "build").resolve()
        if not (build / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(build), *generator,
                                   "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 1),
                               "--target", "darcy_python", "darcy"])
        package = pathlib.Path(self.build_lib) / "darcy"
        modules = list((build / "python" / "darcy").glob("_darcy*.so"))
        if not modules:
            raise RuntimeError(f"darcy: the build in {build} made no _darcy module")
        for module in modules:
            shutil.copy2(module, package / module.name)
        (package / "bin").mkdir(exist_ok=True)
        shutil.copy2(build / "apps" / "darcy", package / "bin" / "darcy")


class binary_distribution(Distribution):
    """A wheel for this platform and Python only: it holds compiled code."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": build_with_cmake}, distclass=binary_distribution)
