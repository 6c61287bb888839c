"""tools/sanitize.py's machinery, end to end but in seconds: a small library built with the
emulator's own sanitizer flags (emulator/build.py), placed in a prefix's lib64/, is called from
Python under the environment sanitize.py gives pytest. Its leak, overflow and undefined
behaviour are reported; the interpreter's and the compiler's exit-time leaks are not; a clean
run is clean. (`make test-sanitize` runs the suite against the real sanitized emulator.)"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sanitize = _load(ROOT / "tools" / "sanitize.py", "acl_py_sanitize")
emulator_build = _load(ROOT / "emulator" / "build.py", "acl_py_emulator_build")
CC = os.environ.get("CC", "cc").split()

BUGGY = r"""
#include <stdlib.h>
#include <string.h>
int clean(int n) { char *p = malloc(n); memset(p, 1, n); int v = p[n - 1]; free(p); return v; }
int leak(int n) { char *p = malloc(n); memset(p, 1, n); return p[0]; }
int overflow(int n) { char *p = malloc(n); memset(p, 0, n); int v = p[n]; free(p); return v; }
int shift(int n) { return 1 << n; }
static _Thread_local int calls;
int count(void) { return ++calls; }
"""


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    try:
        for name in ("libasan.so", "libubsan.so"):
            sanitize.runtime_library(CC, name)
    except SystemExit as e:
        pytest.fail(str(e))
    root = tmp_path_factory.mktemp("sanitized")
    (root / "lib64").mkdir()
    src = root / "buggy.c"
    src.write_text(BUGGY)
    # The emulator's flags, minus -Werror (the bugs here are deliberate) and -O3/-O1 (so the
    # optimizer cannot fold them away).
    flags = [f for f in emulator_build.CFLAGS + emulator_build.SANITIZE_FLAGS
             if f != "-Werror" and not f.startswith("-O")] + ["-O0"]
    subprocess.run([*CC, *flags, "-shared", "-o", str(root / "lib64" / "libbuggy.so"), str(src)],
                   check=True, capture_output=True)
    return root


def run_under_sanitizers(prefix: Path, logs: Path, call: str,
                         exit_line: str = "") -> subprocess.CompletedProcess:
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    env = sanitize.sanitizer_env(prefix, logs, CC)
    code = textwrap.dedent(f"""
        import ctypes, faulthandler, os
        faulthandler.enable()  # as under pytest: it must hand fatal signals on to ASan
        # Kept mapped until exit, as acl-py's loader keeps the CANN libraries (RTLD_NODELETE).
        lib = ctypes.CDLL({str(prefix / 'lib64' / 'libbuggy.so')!r},
                          mode=os.RTLD_NOW | os.RTLD_GLOBAL | os.RTLD_NODELETE)
        print({call})
        import numpy  # the interpreter and NumPy leave their own allocations at exit
        # and one leak outside the emulator for certain (the filter must drop it)
        malloc = ctypes.CDLL(None).malloc
        malloc.restype = ctypes.c_void_p
        malloc(777)
        {exit_line}
    """)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_clean_run_has_no_reports_and_ignores_the_interpreter(prefix, tmp_path):
    proc = run_under_sanitizers(prefix, tmp_path / "logs", "lib.clean(64)")
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr
    failures, ignored = sanitize.classify(tmp_path / "logs", prefix)
    assert failures == []
    assert ignored > 0  # the leak outside the emulator: the filter, not luck, drops it


def test_a_leaking_process_keeps_its_exit_status(prefix, tmp_path):
    # LeakSanitizer's own exit-time check ended a leaking process with status 0 (ASan's
    # exitcode), so a failing smoke run or sample "passed"; the check sanitize.py runs instead
    # reports the leak and leaves the status alone.
    proc = run_under_sanitizers(prefix, tmp_path / "logs", "lib.leak(40)",
                                "import sys; sys.exit(3)")
    assert proc.returncode == 3, proc.stderr
    failures, _ignored = sanitize.classify(tmp_path / "logs", prefix)
    assert len(failures) == 1 and "lib64/libbuggy.so" in failures[0]


def test_leak_in_the_library_is_reported(prefix, tmp_path):
    proc = run_under_sanitizers(prefix, tmp_path / "logs", "lib.leak(40)")
    assert proc.returncode == 0  # exit status is not the signal: the logs are
    failures, _ = sanitize.classify(tmp_path / "logs", prefix)
    assert len(failures) == 1, failures
    assert "Direct leak of 40 byte(s)" in failures[0] and "libbuggy.so" in failures[0]
    assert "in leak" in failures[0]


def test_a_library_with_tls_loaded_late_leaves_the_leak_check_working(prefix, tmp_path):
    # GCC 12's LeakSanitizer crashed reading dynamic TLS when libraries with thread-local
    # storage were loaded late (see tools/sanitize.py, LSAN_OPTIONS): with a thread-local of
    # the library and libstdc++ loaded after it, the leak is found and the exit status kept.
    proc = run_under_sanitizers(prefix, tmp_path / "logs", "lib.count() + lib.leak(24)",
                                "ctypes.CDLL('libstdc++.so.6'); import sys; sys.exit(5)")
    assert proc.returncode == 5, proc.stderr
    failures, _ = sanitize.classify(tmp_path / "logs", prefix)
    assert len(failures) == 1 and "Direct leak of 24 byte(s)" in failures[0], failures


def test_a_crashed_leak_check_fails_the_run(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "asan.123").write_text(
        "Tracer caught signal 11: addr=0x2fb8 pc=0x7f18316e80f0 sp=0x7f1827030d10\n"
        "==123==LeakSanitizer has encountered a fatal error.\n"
        "==123==HINT: For debugging, try setting environment variable "
        "LSAN_OPTIONS=verbosity=1:log_threads=1\n")
    failures, ignored = sanitize.classify(logs, tmp_path)
    assert ignored == 0 and len(failures) == 1
    assert failures[0].startswith("asan.123: the leak check crashed"), failures


def test_heap_overflow_is_reported(prefix, tmp_path):
    run_under_sanitizers(prefix, tmp_path / "logs", "lib.overflow(16)")
    failures, _ = sanitize.classify(tmp_path / "logs", prefix)
    assert any("heap-buffer-overflow" in f and "in overflow" in f for f in failures), failures


def test_undefined_behaviour_is_reported(prefix, tmp_path):
    run_under_sanitizers(prefix, tmp_path / "logs", "lib.shift(40)")
    failures, _ = sanitize.classify(tmp_path / "logs", prefix)
    # A trap: ASan reports the signal with the stack, whose first frame in the library is the
    # undefined operation, file and line.
    line = BUGGY.splitlines().index(next(l for l in BUGGY.splitlines() if "shift" in l)) + 1
    assert any("ILL" in f and f"in shift {prefix}/buggy.c:{line}" in f for f in failures), failures


def test_compiler_runs_under_the_sanitizer_environment(prefix, tmp_path):
    # Tests compile C and C++ under LD_PRELOAD=libasan; the compiler's own exit-time leaks
    # must neither fail the compile nor the run.
    logs = tmp_path / "logs"
    logs.mkdir()
    env = sanitize.sanitizer_env(prefix, logs, CC)
    src = tmp_path / "x.c"
    src.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run([*CC, str(src), "-o", str(tmp_path / "x")], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    failures, _ = sanitize.classify(logs, prefix)
    assert failures == []
