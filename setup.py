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
from setuptools.command.bdist_wheel import bdist_wheel
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
            emulator = _load(ROOT / "emulator" / "build.py")
            try:
                # Not quiet: its progress lines keep pip's spinner turning (`pip -v` shows them).
                emulator.build(package_dir / "_emulator")
            except emulator.BuildError as e:
                raise SystemExit(f"error: {e}") from None


class BinaryDistribution(Distribution):
    """The wheel carries the emulator's shared libraries: it is platform specific."""

    def has_ext_modules(self):
        return os.environ.get("ACL_PY_NO_EMULATOR") != "1"


class BdistWheel(bdist_wheel):
    """Tags the wheel ``py3-none-<platform>``: the emulator's libraries are plain C shared
    objects opened through cffi's ABI mode, not CPython extensions, so one wheel serves every
    Python 3 on that platform (an offline server copies one file whatever its Python)."""

    def get_tag(self):
        impl, abi, plat = super().get_tag()
        if self.root_is_pure:   # ACL_PY_NO_EMULATOR=1: py3-none-any already
            return impl, abi, plat
        return "py3", "none", plat


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel},
      distclass=BinaryDistribution)
