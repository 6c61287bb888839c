"""The FLOAT16/BF16 conversion paths of the emulator give identical bits.

emulator/src/ops/convert.c converts FLOAT16 with the CPU's instructions (AVX-512 16 lanes,
F16C 8 lanes) where it has them and with portable integer code elsewhere. tests/c/convert_check.c
runs every path this CPU supports on all 65536 FLOAT16 and BF16 patterns, on ~8 M binary32
patterns chosen around every rounding boundary (ties, just above and below, subnormals,
overflow, NaN payloads), on short runs at every alignment (the vector tails), and again with
MXCSR set to flush-to-zero, denormals-are-zero and round-toward-zero, and compares each with the
portable path. It is compiled here with the emulator's own flags, once as the default build
(run-time selection) and once per variant of tests/test_kernel_clones.py, to check that each
variant really selects the path it is meant to test.
"""
from __future__ import annotations

import importlib.util
import platform
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "c" / "convert_check.c"
SOURCES = [CHECK, *(ROOT / "emulator" / "src" / "ops").glob("*.[ch]")]

# x86-64-v4 in the CPU flags' names (what the default build's run-time selection tests)
V4_FLAGS = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
V3_FLAGS = {"avx2", "fma", "f16c", "bmi1", "bmi2", "movbe"}

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the conversion instructions checked are x86-64's; "
                                "elsewhere the portable path is the only one")


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _emulator_cflags() -> list[str]:
    spec = importlib.util.spec_from_file_location("acl_py_emulator_build",
                                                  ROOT / "emulator" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return [*mod.CFLAGS, *(f"-I{p}" for p in mod.INCLUDES)]


def _build(name: str, extra: tuple[str, ...]) -> Path:
    exe = ROOT / "tests" / ".build" / f"convert_check-{name}"
    if exe.exists() and exe.stat().st_mtime >= max(p.stat().st_mtime for p in SOURCES):
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", *_emulator_cflags(), "-g0", *extra, "-o", str(exe), str(CHECK)],
                   check=True)
    return exe


def _default_path() -> str:
    flags = _cpu_flags()
    if V4_FLAGS <= flags and V3_FLAGS <= flags:
        return "avx512"
    if V3_FLAGS <= flags:
        return "f16c"
    return "portable"


# (build name, extra flags, path it must select); the variants are test_kernel_clones.py's
BUILDS = [
    ("default", (), None),
    ("baseline", ("-DACLEMU_NO_CLONES",), "portable"),
    ("x86-64-v3", ("-DACLEMU_NO_CLONES", "-march=x86-64-v3"), "f16c"),
]


@pytest.mark.parametrize("name,extra,expected", BUILDS, ids=[b[0] for b in BUILDS])
def test_every_path_gives_the_portable_bits(name, extra, expected):
    expected = expected or _default_path()
    if expected == "f16c" and not V3_FLAGS <= _cpu_flags():
        pytest.skip("this CPU is not x86-64-v3: the F16C build cannot run here")
    r = subprocess.run([str(_build(name, extra))], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: every path gives the portable bits" in r.stdout
    assert f"(selected: {expected})" in r.stdout, r.stdout
