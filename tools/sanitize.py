"""Runs the test suite against the emulator built with AddressSanitizer + UBSan (`make
test-sanitize`, run by CI). Fails on any sanitizer report that concerns the emulator.

1. Builds the emulator with `emulator/build.py --sanitize --prefix build/emulator-asan`.
2. Runs pytest with ACL_PY_BACKEND=emulator, ACL_PY_EMULATOR_PREFIX=<that prefix>, the
   compiler's libasan and libubsan in LD_PRELOAD (Python is not instrumented, so the ASan
   runtime must come first in every process that loads the emulator) and PYTHONMALLOC=malloc
   (so LeakSanitizer sees, and scans, Python's objects: a handle held by a live Python object is
   reachable, not leaked).
3. Reads the reports, which every process writes to build/sanitize-logs/ (tests spawn Python
   subprocesses, the compiler and C++ programs, all under LD_PRELOAD):
   - any AddressSanitizer error (overflow, use after free, double free, ...) or UBSan
     "runtime error", in any process: failure;
   - a leak: failure when a frame of its allocation stack lies in the emulator's libraries.
     CPython, NumPy, cffi and the compiler free some memory only at exit by design, and their
     leaks never pass through the emulator, so this filter drops exactly those and can never
     hide the emulator's (the alternative, suppressing by interpreter frames, would also match
     an emulator leak called from Python, whose stack holds interpreter frames too).
   Because reports go to files, ASAN's exit code is 0: compiler runs that leak by design still
   succeed, and the verdict is taken from the logs plus pytest's own exit status.

Usage: python tools/sanitize.py [--no-build] [--prefix DIR] [PYTEST_ARGS...]
  default PYTEST_ARGS: the whole suite except hardware tests (see DEFAULT_PYTEST_ARGS)
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / "build" / "emulator-asan"
LOGS = ROOT / "build" / "sanitize-logs"
LIBRARIES = ("libascendcl.so", "libnnopbase.so", "libopapi.so", "libopapi_nn.so")

# Measured on the 2-core CI machine: see the README's "Reliability" section.
DEFAULT_PYTEST_ARGS = ["-q", "-x", "-p", "no:cacheprovider", "-m", "not hardware and not slow"]

# %m: the module of each frame, always; the leak filter reads it.
STACK_FORMAT = "    #%n %p %F %L (%m+%o)"


def runtime_library(cc: list[str], name: str) -> str:
    out = subprocess.run([*cc, f"-print-file-name={name}"], capture_output=True, text=True,
                         check=True).stdout.strip()
    if not os.path.isabs(out) or not os.path.exists(out):
        raise SystemExit(f"sanitize: the compiler ({' '.join(cc)}) has no {name}; "
                         f"install its sanitizer runtime (Debian: libasan8, libubsan1)")
    return os.path.realpath(out)


def build(prefix: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "emulator" / "build.py"), "--sanitize",
                    "--prefix", str(prefix)], check=True)
    for name in LIBRARIES:
        data = (prefix / "lib64" / name).read_bytes()
        if b"__asan_init" not in data or b"__ubsan_handle" not in data:
            raise SystemExit(f"sanitize: {prefix / 'lib64' / name} is not instrumented "
                             f"(stale build? rerun with the build forced)")


def sanitizer_env(prefix: Path, logs: Path, cc: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    preload = [runtime_library(cc, "libasan.so"), runtime_library(cc, "libubsan.so")]
    env.update({
        "ACL_PY_BACKEND": "emulator",
        "ACL_PY_EMULATOR_PREFIX": str(prefix),
        "LD_PRELOAD": " ".join(preload + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else [])),
        "PYTHONMALLOC": "malloc",
        "ASAN_OPTIONS": ":".join([
            "detect_leaks=1", "halt_on_error=1", "exitcode=0",
            "allocator_may_return_null=1",  # the emulator's out-of-memory paths, as in production
            "detect_stack_use_after_return=0",  # Python's deep stacks; too slow for the gain
            "check_initialization_order=1", "strict_init_order=1",
            "detect_invalid_pointer_pairs=0",
            f"log_path={logs / 'asan'}",
            f"stack_trace_format='{STACK_FORMAT}'",
        ]),
        "UBSAN_OPTIONS": ":".join([
            "halt_on_error=1", "print_stacktrace=1", "exitcode=0",
            f"log_path={logs / 'ubsan'}",
            f"stack_trace_format='{STACK_FORMAT}'",
        ]),
    })
    env.pop("ACL_EMU_FAIL", None)
    return env


_LEAK_HEAD = re.compile(r"^(Direct|Indirect) leak of \d+ byte", re.M)


def classify(logs: Path, prefix: Path) -> tuple[list[str], int]:
    """(the reports that fail the run, the number of leak reports ignored as not ours)."""
    ours = str(prefix.resolve() / "lib64") + "/"
    failures: list[str] = []
    ignored = 0
    for path in sorted(logs.glob("*")):
        text = path.read_text(errors="replace")
        # A report is either a leak summary (split into one block per leak) or an error.
        for chunk in re.split(r"(?m)^={10,}\s*$", text):
            chunk = chunk.strip()
            if not chunk:
                continue
            if "LeakSanitizer: detected memory leaks" in chunk:
                starts = [m.start() for m in _LEAK_HEAD.finditer(chunk)] + [len(chunk)]
                for a, b in zip(starts, starts[1:]):
                    block = chunk[a:b].split("SUMMARY:")[0].strip()
                    # Also counted: memory allocated straight from an unknown module, i.e. a
                    # library unloaded before the exit-time check (acl-py keeps the emulator
                    # loaded, RTLD_NODELETE, so this should not happen; if it does, the leak
                    # may be ours and is not dropped).
                    if ours in block or re.search(r"^\s*#1 0x[0-9a-f]+ +\(<unknown module>\)",
                                                  block, re.M):
                        failures.append(f"{path.name}:\n{block}")
                    else:
                        ignored += 1
            elif re.search(r"ERROR: AddressSanitizer|runtime error:|ERROR: \w+Sanitizer", chunk):
                failures.append(f"{path.name}:\n{chunk}")
    return failures, ignored


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="Other arguments go to pytest.")
    ap.add_argument("--no-build", action="store_true", help="use the prefix as it is")
    ap.add_argument("--prefix", type=Path, default=PREFIX,
                    help=f"sanitized emulator prefix (default {PREFIX.relative_to(ROOT)})")
    args, pytest_args = ap.parse_known_args(argv)
    cc = os.environ.get("CC", "cc").split()
    prefix = args.prefix.resolve()
    t0 = time.monotonic()
    if not args.no_build:
        build(prefix)
    if LOGS.exists():
        shutil.rmtree(LOGS)
    LOGS.mkdir(parents=True)
    env = sanitizer_env(prefix, LOGS, cc)
    cmd = [sys.executable, "-m", "pytest", *(pytest_args or DEFAULT_PYTEST_ARGS)]
    print(f"sanitize: {' '.join(cmd)}\n  with ASan+UBSan emulator {prefix}", flush=True)
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    failures, ignored = classify(LOGS, prefix)
    minutes = (time.monotonic() - t0) / 60
    for report in failures:
        print(f"\nsanitize: REPORT {report}", file=sys.stderr)
    print(f"\nsanitize: pytest exit status {rc}; {len(failures)} sanitizer report(s) about the "
          f"emulator; {ignored} leak report(s) outside the emulator ignored (interpreter, "
          f"compiler); logs in {LOGS}; {minutes:.1f} min", flush=True)
    if failures:
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
