"""Imported at the start of every Python process of `make test-sanitize` (tools/sanitize.py
puts this directory first on PYTHONPATH), before anything loads the emulator.

LeakSanitizer's own exit-time check ends a process that leaks with ASAN_OPTIONS' exitcode (0
there, because CPython and the compiler leak at exit by design), so a process that meant to
exit 1 (a smoke run that failed, a sample whose results are wrong) exited 0 whenever a leak was
found. tools/sanitize.py turns that check off (leak_check_at_exit=0) and this runs the same
check, recoverably (reporting to the same logs, the exit status left alone), from the atexit
handler registered first, so it runs last: after acl-py's own teardown has released the
emulator's objects. (Run later, from a library destructor, LeakSanitizer's tracer crashes.)
"""
import atexit
import ctypes

# GCC 12's LeakSanitizer was seen to crash in its exit-time check ("Tracer caught signal 11"
# reading a bogus dynamic-TLS range of the main thread, then "LeakSanitizer has encountered a
# fatal error"; the process exits with ASan's exitcode, 0, its leaks unchecked) in `acl-py
# smoke` runs once ml_dtypes was imported late (acl-py imports it only when a bfloat16 is
# met): its extension loads libstdc++, a library with thread-local storage, after the
# emulator's. Importing ml_dtypes first, or loading libstdc++ first as here, made it go away;
# tools/sanitize.py fails the run on such a crash wherever it still happens.
try:
    ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
except OSError:
    pass


def _leak_check() -> None:
    try:
        ctypes.CDLL(None).__lsan_do_recoverable_leak_check()
    except (AttributeError, OSError):   # not under the ASan runtime
        pass


atexit.register(_leak_check)
