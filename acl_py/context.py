"""Explicit contexts (``aclrtContext``), for code that mixes acl-py with C calls that need
one.

A CANN context is a device's execution environment: it holds the device (a device is torn
down only once its ``aclrtSetDevice`` references and its contexts are all gone) and the
streams created while it is current. ``aclrtSetDevice`` gives each device a default context,
which the runtime manages and which cannot be destroyed; ``aclrtCreateContext`` makes another
(hicann/runtime docs/zh/api_ref/05_context_management.md, docs/zh/dev_guide/
06_context_management.md). The vendor's rules this module keeps:

* a context is current on one thread at a time per thread (``set_current``); creating one
  does not change the calling thread's current context here (CANN's ``aclrtCreateContext``
  makes the new one current: acl-py puts the previous one back);
* its streams (made by C code while it was current) must be destroyed before it; the device
  outlives it: acl-py's teardown destroys the contexts still open after every stream and
  event, and before it resets the devices;
* after ``close()`` the handle is gone: using it (``handle``, ``set_current``) raises
  :class:`~acl_py.ClosedError`.

acl-py's own objects (streams, buffers, tensors, operators) live in the devices' default
contexts: acl-py's next call on a thread after :meth:`Context.set_current` makes the device's
default context current again. ``handle`` is the ``aclrtContext`` for C code (cffi, ctypes
through ``int(ffi.cast("uintptr_t", ctx.handle))``).

``Context(device)`` as a context manager closes it on exit; ``close()`` does it explicitly;
the garbage collector, or the teardown, as a safety net.
"""
from __future__ import annotations

import threading
from typing import Any, Literal

from ._ffi import ffi
from . import device as _device
from . import runtime as _rt
from .device import Device, DeviceLike
from .errors import make_error

__all__ = ["Context"]


class _ContextState:
    """The handle and what its release needs (no reference to the Context: see Releaser)."""

    __slots__ = ("handle", "device", "gen", "closed", "lock")

    def __init__(self, handle, device, gen):
        self.handle = handle
        self.device = device
        self.gen = gen
        self.closed = False
        self.lock = threading.Lock()


def _destroy_context(st):
    """Releaser: ``aclrtDestroyContext`` once; the handle is gone after it."""
    with st.lock:
        if st.closed:
            return
        s = _rt.lib.aclrtDestroyContext(st.handle)
        if s:
            raise make_error(s, "aclrtDestroyContext")
        st.closed = True
        st.handle = None
    # The calling thread's context may have been this one: acl-py's next call sets the device
    # (its default context) again.
    _device.thread_state.dev = None


def _current_handle(L):
    """The calling thread's current context, or None when it has none (107002)."""
    out = ffi.new("aclrtContext *")
    return out[0] if L.aclrtGetCurrentContext(out) == 0 else None


class Context:
    """An explicit context on ``device`` (default: the calling thread's current device)::

        with acl_py.Context(0) as ctx:
            ctx.set_current()       # C calls on this thread now run in ctx
            my_c_library.run(int(acl_py.raw.ffi.cast("uintptr_t", ctx.handle)))
    """

    __slots__ = ("_state", "_rel", "__weakref__")

    def __init__(self, device: DeviceLike = None) -> None:
        dev = _device.resolve_device(device)
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        before = _current_handle(L)
        out = ffi.new("aclrtContext *")
        s = L.aclrtCreateContext(out, dev)
        if s:
            raise make_error(s, "aclrtCreateContext")
        st = self._state = _ContextState(out[0], dev, made_in)
        self._rel = _rt.Releaser(self, _destroy_context, (st,), _rt.ORDER_CONTEXT, made_in)
        # aclrtCreateContext made it current: the thread's previous context comes back (with
        # none before, acl-py's next call on the thread sets the device again).
        if before is None:
            _device.thread_state.dev = None
            return
        s = L.aclrtSetCurrentContext(before)
        if s:
            err = make_error(s, "aclrtSetCurrentContext")
            self.close()
            raise err

    @property
    def handle(self) -> Any:
        """The ``aclrtContext``, for C code."""
        st = self._state
        if st.closed:
            raise _rt.closed_error(st.gen, repr(self))
        return st.handle

    @property
    def device(self) -> Device:
        return Device(self._state.device)

    @property
    def closed(self) -> bool:
        return self._state.closed

    def set_current(self) -> None:
        """Makes this the calling thread's current context (``aclrtSetCurrentContext``), for
        the C calls that follow on this thread. acl-py's own next call on the thread makes the
        device's default context current again (its objects live there)."""
        st = self._state
        with st.lock:   # not destroyed meanwhile by another thread
            if st.closed:
                raise _rt.closed_error(st.gen, repr(self))
            s = _rt.ensure().aclrtSetCurrentContext(st.handle)
        if s:
            raise make_error(s, "aclrtSetCurrentContext")
        _device.thread_state.dev = None

    def close(self) -> None:
        """Destroys the context (``aclrtDestroyContext``); destroy the streams C code made in
        it first, as CANN requires. A second call does nothing."""
        rel = self._rel
        if rel is not None:
            rel.release()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        state = "closed" if self._state.closed else "open"
        return f"<acl_py.Context on device {self._state.device}, {state}>"
