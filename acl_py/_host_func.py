"""Python functions run by a stream, in its order (``Stream.launch_host_func``), through
``aclrtLaunchHostFunc``.

The runtime calls one C function for all of them, :data:`_TRAMPOLINE` (a single
``ffi.callback`` made at import, never freed: no callback object per launch to keep alive or
to leak), with an integer key as its ``args``. The key names a :class:`_Call` in
:data:`_pending`; the trampoline pops it and runs it, so the Python function is released
right after it ran, on the runtime's thread, and a key the runtime would call after a
teardown forgot it finds nothing (the runtime drains every stream before it goes, so that is
only a safety net). A launch the runtime drops unrun (``aclrtStreamAbort``, a stream a failed
task stopped) is popped by its deferred check, once the stream is known to have passed it.

The function runs on the runtime's host-function thread, not the launching one: cffi takes
the GIL for it (the launching thread's C calls, a synchronize included, release it). An
exception it raises is kept on its record, which the stream's timeline holds as deferred work
(``Timeline.defer``) at the launch's number: the first synchronize that learns the stream ran
past it (``Stream.synchronize``, an event's, ``Device.synchronize``, ``close()``) raises it
as :class:`HostFunctionError`, its ``__cause__`` the original, the way an asynchronous device
error surfaces at the next synchronize. One raised when nothing will synchronize again (it
ran during the session's teardown) goes to ``sys.unraisablehook``.

CANN forbids a host function to allocate, free, synchronize or launch work (hicann/runtime
docs/zh/api_ref/12_execution_control.md): acl-py refuses a launch or a synchronize made from
inside one before it takes a stream's lock (a thread closing the stream may hold it while it
waits for this very function), and the emulator refuses the C calls.
"""
from __future__ import annotations

import itertools
import sys
import threading
import types

from ._ffi import ffi
from . import runtime as _rt
from .errors import HostFunctionError

_pending: dict = {}         # key -> _Call, launched and not yet run
_keys = itertools.count(1)


class _Running(threading.local):
    """Per thread: ``call``, the _Call this thread is running, or None. A class default, not
    ``getattr(local, "call", None)``: on a thread that never set it, getattr would build and
    drop an AttributeError (its message formatted) on every synchronize."""
    call: _Call | None = None


_inside = _Running()


class _Call:
    """One launch: the function until it has run, then the exception it raised, if any."""

    __slots__ = ("key", "fn", "name", "error", "reported")

    def __init__(self, key, fn):
        self.key = key          # its entry in _pending until it runs
        self.fn = fn
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.error = None
        self.reported = False   # the deferred check ran: nobody else will raise it


def _run(key_ptr):
    key = int(ffi.cast("uintptr_t", key_ptr))
    call = _pending.pop(key, None)
    if call is None:
        return
    fn, call.fn = call.fn, None     # released once it has run, whatever happens next
    _inside.call = call
    try:
        fn()
    except BaseException as e:  # nothing may unwind into the runtime's thread
        call.error = e
        if call.reported:
            _unraisable(call, e)
    finally:
        _inside.call = None
        del fn


def _unraisable(call, e):
    sys.unraisablehook(types.SimpleNamespace(
        exc_type=type(e), exc_value=e, exc_traceback=e.__traceback__,
        err_msg=f"Exception in host function {call.name} (acl_py.Stream.launch_host_func) "
                f"after its stream's last synchronize", object=None))


def _on_error(exc_type, exc_value, tb):
    # Only reachable if _run itself fails (it catches the function's exceptions).
    return None


_TRAMPOLINE = ffi.callback("aclrtHostFunc", _run, onerror=_on_error)


def inside():
    """True while the calling thread runs a host function."""
    return _inside.call is not None


def check_not_inside(what):
    """Raises RuntimeError for a launch or synchronize made from inside a host function (see
    the module doc)."""
    if _inside.call is not None:
        raise RuntimeError(f"{what} called from inside a host function: a host function must "
                           f"not launch work or synchronize (CANN forbids it; it would wait "
                           f"for itself)")


def _surface(call):
    call.reported = True
    # The stream is known to have passed the launch, and a host function holds its stream
    # until it has run (aclrtLaunchHostFunc blocks): one still pending was dropped, by
    # aclrtStreamAbort or a stream a failed task stopped (ACL_STOP_ON_FAILURE), and will never
    # run. The runtime freed its task; its record and function go now, not at the teardown.
    if _pending.pop(call.key, None) is not None:
        call.fn = None
    if call.error is not None:
        err = HostFunctionError(call.name, call.error)
        err.__cause__ = call.error
        call.error = None
        raise err


def _launch_c(key_ptr, handle):
    return _rt.lib.aclrtLaunchHostFunc(handle, _TRAMPOLINE, key_ptr)


def launch(state, fn):
    """Queues ``fn()`` on the stream of ``state`` (an open StreamState, its device current).
    Returns the aclError status; on success the launch is numbered on the timeline and its
    exception check deferred to that number."""
    key = next(_keys)
    call = _Call(key, fn)
    _pending[key] = call
    status = state.enqueue(_launch_c, ffi.cast("void *", key))
    if status:
        _pending.pop(key, None)
        return status
    state.defer(state.seq, _surface, call)
    return 0


def _drop_after_fork():
    """Forked child: the parent's launches never run here."""
    _pending.clear()


_rt.register_step("fork", _drop_after_fork)
