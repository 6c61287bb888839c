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


# A thread that holds the ASan allocator's locks (through the runtime's own LockAllocator, as
# LeakSanitizer and a fork handler take them) while the main thread forks; the child then
# allocates more of one size class than a thread's cache holds, so from the class's region,
# under its lock. The child's wait status, or -1 if it had not ended after wait_ms (killed).
HOLDER = r"""
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*runtime_fn)(void);
static runtime_fn lock_allocator, unlock_allocator;
static int held;

static void *hold(void *arg) {
    lock_allocator();
    __atomic_store_n(&held, 1, __ATOMIC_SEQ_CST);
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    unlock_allocator();
    return arg;
}

int fork_while_held(runtime_fn lock, runtime_fn unlock, int wait_ms) {
    lock_allocator = lock;
    unlock_allocator = unlock;
    pthread_t thread;
    if (pthread_create(&thread, NULL, hold, NULL) != 0)
        return -2;
    while (!__atomic_load_n(&held, __ATOMIC_SEQ_CST))
        sched_yield();
    pid_t pid = fork();       /* no allocation between the lock and here */
    if (pid == 0) {
        static void *blocks[4096];
        for (int i = 0; i < 4096; i++)
            blocks[i] = malloc(48);
        for (int i = 0; i < 4096; i++)
            free(blocks[i]);
        _exit(0);
    }
    pthread_join(thread, NULL);
    int status;
    for (int waited = 0; waited < wait_ms; waited += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        usleep(10 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}
"""


def test_a_child_forked_while_another_thread_allocates_can_allocate(prefix, tmp_path):
    """GCC 12's ASan runtime has no fork handler: a child forked while another thread held an
    allocator lock waits for it for ever (tests/test_processes.py's forked children hung now
    and then). sanitize.py preloads tools/sanitize/fork_guard.c, which takes the locks around
    fork() as compiler-rt 18's runtime does: the fork waits for the thread, the child allocates.
    Without the guard, on a runtime that lacks its own handler, the child hangs: shown too."""
    runtime = sanitize.runtime_library(CC, "libasan.so")
    functions = sanitize.elf_functions(Path(runtime))
    names = [sanitize.FORK_GUARD_ANCHOR, sanitize.FORK_GUARD_FUNCTIONS["LOCK_ALLOCATOR"],
             sanitize.FORK_GUARD_FUNCTIONS["UNLOCK_ALLOCATOR"]]
    if any(name not in functions for name in names):
        pytest.skip(f"{runtime} has no symbol table entries for {names}: the guard is not "
                    f"built for it (sanitize.py warns)")
    anchor, lock, unlock = (functions[name] for name in names)
    src = tmp_path / "holder.c"
    src.write_text(HOLDER)
    lib = tmp_path / "libholder.so"
    subprocess.run([*CC, "-shared", "-fPIC", "-O1", "-pthread", "-o", str(lib), str(src)],
                   check=True, capture_output=True)
    code = textwrap.dedent(f"""
        import ctypes
        holder = ctypes.CDLL({str(lib)!r})
        holder.fork_while_held.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        anchor = ctypes.cast(ctypes.CDLL(None).__asan_init, ctypes.c_void_p).value
        print(holder.fork_while_held(anchor + {lock - anchor}, anchor + {unlock - anchor},
                                     int(__import__("sys").argv[1])))
    """)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = sanitize.sanitizer_env(prefix, logs, CC)
    guarded = env["LD_PRELOAD"].split()
    guards = [p for p in guarded if Path(p).name.startswith("fork_guard-")]
    assert len(guards) == 1 or (not guards and sanitize.OWN_FORK_HANDLER in functions), guarded
    proc = subprocess.run([sys.executable, "-c", code, "30000"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stdout + proc.stderr
    if sanitize.OWN_FORK_HANDLER not in functions:
        env["LD_PRELOAD"] = " ".join(p for p in guarded
                                     if not Path(p).name.startswith("fork_guard-"))
        proc = subprocess.run([sys.executable, "-c", code, "2000"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout.strip() == "-1", proc.stdout + proc.stderr


def test_a_sanitized_process_gets_one_runtime_and_one_guard(prefix, tmp_path, monkeypatch):
    """sanitizer_env in a process already under the sanitizer (this file's tests, run by `make
    test-sanitize`) keeps the inherited list's other libraries and not a second runtime or
    guard: two guards each lock the runtime before a fork(), and the second waits for ever on
    the thread registry the first holds (the fork test above then hung)."""
    first = sanitize.sanitizer_env(prefix, tmp_path / "a" / "logs", CC)
    for name, value in first.items():      # as `make test-sanitize` runs this file
        monkeypatch.setenv(name, value)
    other = str(tmp_path / "libother.so")
    monkeypatch.setenv("LD_PRELOAD", f"{first['LD_PRELOAD']}:{other}")
    again = sanitize.sanitizer_env(prefix, tmp_path / "b" / "logs", CC)["LD_PRELOAD"].split()
    names = [Path(p).name for p in again]
    assert len(set(again)) == len(again), again
    assert sum(n.startswith("fork_guard-") for n in names) <= 1, again
    assert sum(n.startswith("libasan") for n in names) == 1, again
    assert again[-1] == other, again
