"""Runs the test suite against the emulator built with AddressSanitizer + UBSan (`make
test-sanitize`, run by CI). Fails on any sanitizer report that concerns the emulator.

1. Builds the emulator with `emulator/build.py --sanitize --prefix build/emulator-asan`
   (ASan, and UBSan in trap mode: see SANITIZE_FLAGS there for why).
2. Runs pytest with ACL_PY_BACKEND=emulator, ACL_PY_EMULATOR_PREFIX=<that prefix>, the
   compiler's libasan (and libubsan when the libraries need it) in LD_PRELOAD (Python is not
   instrumented, so the ASan runtime must come first in every process that loads the emulator)
   and PYTHONMALLOC=malloc (so LeakSanitizer sees, and scans, Python's objects: a handle held by
   a live Python object is reachable, not leaked). After the runtime, LD_PRELOAD holds the fork
   handler it lacks before compiler-rt 18 (tools/sanitize/fork_guard.c, built here for that
   runtime: see fork_guard), without which a child forked while another thread of its parent
   was allocating could wait for ever on the allocator's lock.
3. Reads the reports, which every process writes to build/sanitize-logs/ (tests spawn Python
   subprocesses, the compiler and C++ programs, all under LD_PRELOAD):
   - any AddressSanitizer error (overflow, use after free, double free, ...; undefined
     behaviour arrives as a deadly SIGILL report), in any process: failure;
   - a leak: failure when a frame of its allocation stack lies in the emulator's libraries.
     CPython, NumPy, cffi and the compiler free some memory only at exit by design, and their
     leaks never pass through the emulator, so this filter drops exactly those and can never
     hide the emulator's (the alternative, suppressing by interpreter frames, would also match
     an emulator leak called from Python, whose stack holds interpreter frames too).
   Because reports go to files, ASan's exit code is 0: compiler runs that leak by design still
   succeed, and the verdict is taken from the logs plus pytest's own exit status. Python
   processes run the leak check at exit recoverably (tools/sanitize/sitecustomize.py), so each
   keeps its own exit status: LeakSanitizer's built-in check, off here, ends a leaking process
   with that exit code 0. (C and C++ programs the tests build get no exit-time leak check.)

Usage: python tools/sanitize.py [--no-build] [--prefix DIR] [PYTEST_ARGS...]
  default PYTEST_ARGS: see DEFAULT_PYTEST_ARGS
"""
from __future__ import annotations

import os
import re
import hashlib
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / "build" / "emulator-asan"
LOGS = ROOT / "build" / "sanitize-logs"
LIBRARIES = ("libascendcl.so", "libnnopbase.so", "libopapi.so", "libopapi_nn.so",
             "libopapi_math.so")

# The whole suite, as `make test` runs it. Measured on the shared 2-core machine: 1004 tests
# in 6.4 min under ASan, 7.1 min with the sanitized build (emulator rebuilt), so no
# subset is needed to keep CI under 20 minutes.
DEFAULT_PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-m", "not hardware and not slow"]

# %m: the module of each frame, always; the leak filter reads it.
STACK_FORMAT = "    #%n %p %F %L (%m+%o)"


def runtime_library(cc: list[str], name: str) -> str:
    out = subprocess.run([*cc, f"-print-file-name={name}"], capture_output=True, text=True,
                         check=True).stdout.strip()
    if not os.path.isabs(out) or not os.path.exists(out):
        raise SystemExit(f"sanitize: the compiler ({' '.join(cc)}) has no {name}; "
                         f"install its sanitizer runtime (Debian: libasan8, libubsan1)")
    return os.path.realpath(out)


# tools/sanitize/fork_guard.c calls these functions of the ASan runtime around fork(): its
# macro suffix -> the runtime's (local) symbol. Their offsets come from the runtime's symbol
# table, relative to ANCHOR; CHECK, a second exported symbol, tells the guard that the runtime
# it runs with is the one read.
FORK_GUARD_FUNCTIONS = {
    "LOCK_THREADS": "_ZN6__lsan18LockThreadRegistryEv",
    "UNLOCK_THREADS": "_ZN6__lsan20UnlockThreadRegistryEv",
    "LOCK_ALLOCATOR": "_ZN6__lsan13LockAllocatorEv",
    "UNLOCK_ALLOCATOR": "_ZN6__lsan15UnlockAllocatorEv",
    "LOCK_DEPOT": "_ZN11__sanitizer17StackDepotLockAllEv",
    "UNLOCK_DEPOT": "_ZN11__sanitizer19StackDepotUnlockAllEv",
}
FORK_GUARD_ANCHOR, FORK_GUARD_CHECK = "__asan_init", "__lsan_do_recoverable_leak_check"
# A runtime that defines this installs the handler itself (compiler-rt 18 and later).
OWN_FORK_HANDLER = "_ZN6__asan20InstallAtForkHandlerEv"


def elf_functions(path: Path) -> dict[str, int]:
    """{name: value} of the functions an ELF64 little-endian library defines, from its
    .symtab (local symbols included) and .dynsym; {} for any other file."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    out: dict[str, int] = {}
    for _name, kind, _flags, _addr, offset, size, link, *_ in sections:
        if kind not in (2, 11):                     # SHT_SYMTAB, SHT_DYNSYM
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, 24):
            name, info, _other, shndx, value, _size = struct.unpack_from("<IBBHQQ", data, at)
            if info & 0xF != 2 or shndx == 0:       # STT_FUNC, defined here
                continue
            start = strings + name
            out[data[start:data.index(b"\0", start)].decode()] = value
    return out


def fork_guard(cc: list[str], runtime: str, out_dir: Path) -> str | None:
    """The fork guard's library for this ASan runtime (built into out_dir when missing), or
    None when the runtime has its own fork handler or lacks the functions (said on stderr)."""
    functions = elf_functions(Path(runtime))
    if OWN_FORK_HANDLER in functions:
        return None
    wanted = [FORK_GUARD_ANCHOR, FORK_GUARD_CHECK, *FORK_GUARD_FUNCTIONS.values()]
    missing = [name for name in wanted if name not in functions]
    if missing:
        print(f"sanitize: warning: {runtime} has neither a fork handler nor the functions "
              f"tools/sanitize/fork_guard.c calls ({', '.join(missing)}): a child forked while "
              f"another thread of its parent was allocating may hang", file=sys.stderr)
        return None
    anchor = functions[FORK_GUARD_ANCHOR]
    defines = [f"-DRUNTIME_PATH=\"{runtime}\"",
               f"-DANCHOR_TO_CHECK=({functions[FORK_GUARD_CHECK] - anchor}LL)",
               *(f"-DANCHOR_TO_{key}=({functions[name] - anchor}LL)"
                 for key, name in FORK_GUARD_FUNCTIONS.items())]
    source = ROOT / "tools" / "sanitize" / "fork_guard.c"
    key = hashlib.sha256("\0".join([*cc, *defines, source.read_text()]).encode()).hexdigest()
    out = out_dir / f"fork_guard-{key[:16]}.so"
    if not out.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run([*cc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", *defines, "-o",
                        str(tmp), str(source), "-ldl", "-pthread"], check=True)
        tmp.replace(out)
    return str(out)


def build(prefix: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "emulator" / "build.py"), "--sanitize",
                    "--prefix", str(prefix)], check=True)
    check_instrumented(prefix)


def check_instrumented(prefix: Path) -> None:
    for name in LIBRARIES:
        if b"__asan_init" not in (prefix / "lib64" / name).read_bytes():
            raise SystemExit(f"sanitize: {prefix / 'lib64' / name} is not built with "
                             f"AddressSanitizer (build it with emulator/build.py --sanitize)")


def sanitizer_env(prefix: Path, logs: Path, cc: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    asan = runtime_library(cc, "libasan.so")
    preload = [asan]
    if any(b"libubsan.so" in p.read_bytes() for p in (prefix / "lib64").glob("*.so")):
        preload.append(runtime_library(cc, "libubsan.so"))
    guard = fork_guard(cc, asan, logs.parent / "asan-fork-guard")
    if guard is not None:
        preload.append(guard)
    # A process already under the sanitizer (this tool's own tests, run by `make
    # test-sanitize`) has the runtimes and a guard preloaded: keep the rest of its list, not a
    # second copy of those. Two guards would each take the runtime's locks before a fork(),
    # and the second would wait for ever on the thread registry the first holds.
    preload += [p for p in re.split(r"[:\s]+", env.get("LD_PRELOAD", ""))
                if p and p not in preload and not Path(p).name.startswith("fork_guard-")]
    env.update({
        "ACL_PY_BACKEND": "emulator",
        "ACL_PY_EMULATOR_PREFIX": str(prefix),
        "LD_PRELOAD": " ".join(preload),
        "PYTHONMALLOC": "malloc",
        # sitecustomize.py there: the exit-time leak check that keeps each exit status.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tools" / "sanitize"),
                                                    env.get("PYTHONPATH")])),
        # For tests whose figures mean nothing under ASan (RSS with its quarantine, valgrind,
        # which cannot run an ASan process): they check this and skip that part, saying why.
        "ACL_PY_SANITIZER": "address,undefined",
        "ASAN_OPTIONS": ":".join([
            # Python processes check leaks at exit from tools/sanitize/sitecustomize.py,
            # recoverably: LeakSanitizer's own check would end a leaking process with status
            # `exitcode`, whatever status it meant to exit with.
            "detect_leaks=1", "leak_check_at_exit=0", "halt_on_error=1", "exitcode=0",
            "handle_sigill=1",               # undefined behaviour traps (SIGILL)
            "allocator_may_return_null=1",   # the emulator's out-of-memory paths, as in production
            f"log_path={logs / 'asan'}",
            f"stack_trace_format='{STACK_FORMAT}'",
        ]),
        # Thread-local storage is not scanned for pointers: GCC 12's LeakSanitizer crashed
        # reading a bogus dynamic-TLS range of the main thread ("Tracer caught signal 11",
        # then "LeakSanitizer has encountered a fatal error": the process exits with
        # `exitcode`, 0, its leaks unchecked), seen in `acl-py smoke` runs and another process of the suite.
        # The emulator keeps no heap block reachable from thread-locals alone (its
        # _Thread_local pointers are to static strings or to objects its lists hold), so skipping
        # them hides none of its leaks; a crash that still happens fails the run (classify).
        "LSAN_OPTIONS": "use_tls=0",
        # Only used if the libraries were built with the UBSan runtime (ACL_EMU_CFLAGS);
        # its reports then go to stderr (see emulator/build.py).
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
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
                    # The frames name their module because acl-py's loader opens the
                    # emulator RTLD_NODELETE: still mapped when LeakSanitizer runs at exit.
                    if ours in block:
                        failures.append(f"{path.name}:\n{block}")
                    else:
                        ignored += 1
            elif re.search(r"ERROR: \w+Sanitizer|runtime error:", chunk):
                failures.append(f"{path.name}:\n{chunk}")
            elif "LeakSanitizer has encountered a fatal error" in chunk:
                # The leak check itself crashed: that process's leaks went unchecked and its
                # exit status became ASan's exitcode (0).
                failures.append(f"{path.name}: the leak check crashed, its leaks unchecked:\n"
                                f"{chunk}")
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
    if args.no_build:
        check_instrumented(prefix)
    else:
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
