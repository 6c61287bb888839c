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


def _leak_check() -> None:
    try:
        ctypes.CDLL(None).__lsan_do_recoverable_leak_check()
    except (AttributeError, OSError):   # not under the ASan runtime
        pass


atexit.register(_leak_check)
