"""Build hooks: generate acl_py/_ffi.py from bindings/include and build the CPU emulator.

Both steps are plain Python scripts in the tree (bindings/build_ffi.py, emulator/build.py) so
that `pip install .`, `pip install -e .` and the Makefile share them. Set ACL_PY_NO_EMULATOR=1
to skip the emulator (a CANN-only install; no C compiler needed then).
"""
import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPy(build_py):
    def run(self):
        super().run()
        # Editable installs import acl_py from the source tree: build there.
        if getattr(self, "editable_mode", False):
            package_dir = ROOT / "acl_py"
        else:
            package_dir = Path(self.build_lib) / "acl_py"
        _load(ROOT / "bindings" / "build_ffi.py").build(package_dir)
        if not getattr(self, "editable_mode", False):
            # `acl-py sample` runs the sample ports; a wheel carries them as package data.
            samples = package_dir / "_samples"
            samples.mkdir(parents=True, exist_ok=True)
            for src in (ROOT / "samples").glob("*.py"):
                shutil.copy2(src, samples / src.name)
        if os.environ.get("ACL_PY_NO_EMULATOR") != "1":
            _load(ROOT / "emulator" / "build.py").build(package_dir / "_emulator", quiet=True)


class BinaryDistribution(Distribution):
    """The wheel carries the emulator's shared libraries: it is platform specific."""

    def has_ext_modules(self):
        return os.environ.get("ACL_PY_NO_EMULATOR") != "1"


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
