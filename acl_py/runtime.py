"""Process state, devices, and the registry that releases everything in a valid order.

Life cycle
----------
* ``init()`` calls ``aclInit`` the first time and counts; ``finalize()`` uncounts, and when the
  count reaches 0 it tears everything down (below). Both are safe to repeat: ``finalize()``
  while not initialized does nothing.
* Using acl-py without ``init()`` initializes lazily (device 0 unless another is chosen). That
  implicit initialization holds no count: a later ``init()``/``finalize()`` pair, or a lone
  ``finalize()``, tears it down; otherwise interpreter exit does.
* After the final ``finalize()`` every object created before is closed (using one raises
  :class:`FinalizedError`, which is both a ``NotInitializedError`` and a ``ClosedError``), and
  creating objects raises ``NotInitializedError``: acl-py never re-initializes behind the
  user's back. An explicit ``init()`` starts a new session (``aclInit`` again, which the
  emulator allows; on a CANN release that refuses it, its error is raised as is).
* If something else in the process already called ``aclInit`` (100002), acl-py shares that
  session and leaves ``aclFinalize`` to its owner.

Teardown (the final ``finalize()`` and interpreter exit, via ``atexit``), in this order:
every stream synchronized and its deferred work run (stream-ordered frees); executors, then
tensors and arrays, then events destroyed; buffers freed; memory pools emptied; streams
destroyed; each device reset as many times as acl-py set it; ``aclFinalize`` last. Failures
are collected: ``finalize()`` raises the first one after releasing everything else; at exit
nothing escapes.

Devices
-------
The current device is per thread, as in CANN. ``Device(i)`` as a context manager (or
``Device(i).use()``) makes ``i`` the calling thread's device for acl-py; objects created with
``device=None`` go to it (device 0 when the thread never chose one). Before any C call that
needs a device, acl-py makes the object's device current on the calling thread (one
``aclrtSetDevice`` per change), so a finalizer or a stream can be used from any thread. acl-py
keeps every device it set until teardown, so the runtime never destroys a device's streams
under live objects. Code mixing raw ``aclrtSetDevice`` calls with acl-py on one thread should
know that acl-py may change the thread's current device.

Registry
--------
Every wrapper owning a C resource registers a :class:`Releaser`: a weak reference to the
wrapper plus the release function and its arguments (which must not reference the wrapper).
Exactly one of ``close()``, garbage collection and teardown runs it. A release that fails in
``close()`` raises and stays registered (``close()`` may be retried; teardown retries); one
that fails during garbage collection is retried by :func:`release_unused` and at teardown.
Other modules (operators) register their objects with the ``ORDER_*`` constants.
"""
from __future__ import annotations

import atexit
import itertools
import operator
import threading
import weakref
from collections import namedtuple

from ._ffi import ffi
from .errors import (AclArgumentError, AclTypeError, ClosedError, NotInitializedError,
                     make_error)

# Release order at teardown (lower first).
ORDER_EXECUTOR = 0
ORDER_HANDLE = 1      # aclTensor, aclIntArray, aclBoolArray
ORDER_EVENT = 2
ORDER_MEMORY = 3      # device and pinned host buffers
ORDER_POOL = 4        # memory pools' cached blocks
ORDER_STREAM = 5
_ORDERS = (ORDER_EXECUTOR, ORDER_HANDLE, ORDER_EVENT, ORDER_MEMORY, ORDER_POOL, ORDER_STREAM)

_UNINIT, _INIT, _FINALIZED = "uninitialized", "initialized", "finalized"

_lock = threading.RLock()
_state = _UNINIT
_count = 0            # explicit init() calls not yet matched by finalize()
_owns_acl = False     # False when aclInit had been called by someone else (100002)
lib = None            # the bound Library (set at first initialization, kept after)
gen = 0               # session number: bumped at every teardown; objects record theirs
_set_counts: dict = {}  # device id -> aclrtSetDevice calls acl-py made this session
_device_count = None
_tearing_down = False  # set while _teardown runs: releases ignore what could delay them
last_teardown_errors: list = []


class FinalizedError(NotInitializedError, ClosedError):
    """An object is used after ``acl_py.finalize()`` released it, or a call needs the runtime
    after the final ``finalize()``. Both a NotInitializedError and a ClosedError."""

    def __init__(self, what, call="", message=None, name=None):
        if message is None:
            message = (f"{what}: acl_py.finalize() has released the runtime and every object "
                       f"of the session; call acl_py.init() to start a new session")
        super().__init__(100001, call or "acl_py", message, name)


def closed_error(st, what):
    """The error for using ``what`` whose state ``st`` (with a ``gen``) is closed: a
    FinalizedError when a teardown closed it, else a ClosedError."""
    if st.gen != gen:
        return FinalizedError(what)
    return ClosedError(f"{what} is closed")


class _TLS(threading.local):
    dev = None      # device acl-py last made current on this thread (C level)
    user = None     # device the user chose for this thread (None: device 0)
    stack = None    # Device context-manager stack


_tls = _TLS()


# ---- initialization -----------------------------------------------------------------------

def _do_init(config):
    global lib, _state, _owns_acl, _device_count
    from ._loader import library
    L = library()
    cfg = ffi.NULL if config is None else str(config).encode()
    st = L.aclInit(cfg)
    if st == 100002:        # someone else initialized: share, never finalize for them
        owns = False
    elif st:
        raise make_error(st, "aclInit")
    else:
        owns = True
    lib = L
    _owns_acl = owns
    _device_count = None
    _state = _INIT


def init(config=None):
    """Initializes the runtime (``aclInit(config)`` the first time) and counts the call."""
    global _count
    with _lock:
        if _state != _INIT:
            if config is not None and not isinstance(config, (str, bytes)) and \
                    not hasattr(config, "__fspath__"):
                raise AclTypeError("config", f"expected a path or None, got {config!r}")
            _do_init(config)
        _count += 1


def ensure():
    """The bound library, initializing lazily; raises after the final ``finalize()``."""
    if _state is _INIT:
        return lib
    with _lock:
        if _state == _INIT:
            return lib
        if _state == _FINALIZED:
            raise FinalizedError("runtime", "acl_py",
                                 "acl_py.finalize() was called; call acl_py.init() to start "
                                 "a new session")
        _do_init(None)
        return lib


def is_initialized():
    return _state == _INIT


def state():
    """'uninitialized', 'initialized' or 'finalized'."""
    return _state


def finalize():
    """Uncounts one ``init()``; at 0 (or when only lazily initialized) tears everything down
    in a valid order and calls ``aclFinalize``. Does nothing when not initialized. Raises the
    first release failure, after releasing everything else."""
    global _count
    with _lock:
        if _state != _INIT:
            return
        if _count > 1:
            _count -= 1
            return
        _count = 0
        errs = _teardown()
    if errs:
        raise errs[0]


def backend():
    """The active backend (name, root, libraries, reason); opens the libraries, does not
    initialize the runtime."""
    from ._loader import library
    return library().backend


# ---- devices ------------------------------------------------------------------------------

def _set_device(dev):
    """Makes ``dev`` current on the calling thread (C level)."""
    L = ensure()
    st = L.aclrtSetDevice(dev)
    if st:
        raise make_error(st, "aclrtSetDevice")
    with _lock:
        _set_counts[dev] = _set_counts.get(dev, 0) + 1
    _tls.dev = dev


def activate(dev):
    """Ensures ``dev`` is the calling thread's current device before a C call needing one."""
    if _tls.dev != dev or _state is not _INIT:
        _set_device(dev)


def current_device_id():
    d = _tls.user
    return 0 if d is None else d


def device_count():
    """Number of devices the runtime sees."""
    global _device_count
    n = _device_count
    if n is None or _state is not _INIT:
        L = ensure()
        p = ffi.new("uint32_t *")
        st = L.aclrtGetDeviceCount(p)
        if st:
            raise make_error(st, "aclrtGetDeviceCount")
        n = _device_count = int(p[0])
    return n


def _as_device_id(device, argument="device"):
    if device is None:
        return current_device_id()
    if isinstance(device, Device):
        return device.id
    if isinstance(device, bool):
        raise AclTypeError(argument, f"expected a device id (int) or Device, got {device!r}")
    try:
        dev = operator.index(device)
    except TypeError:
        raise AclTypeError(argument, f"expected a device id (int) or Device, got "
                           f"{type(device).__name__}") from None
    if dev < 0:
        raise AclArgumentError(argument, f"device id must be >= 0, got {dev}")
    n = device_count()
    if dev >= n:
        raise AclArgumentError(argument, f"device {dev} does not exist: the runtime sees "
                               f"{n} device(s), ids 0..{n - 1}")
    return dev


def resolve_device(device, argument="device"):
    """Device id for a ``device=`` argument (None: the calling thread's current device)."""
    if device is None:
        d = _tls.user
        return 0 if d is None else d
    return _as_device_id(device, argument)


MemInfo = namedtuple("MemInfo", "free total")

_device_objects: dict = {}


class Device:
    """A device id, usable as a context manager that makes it the calling thread's device::

        with acl_py.Device(1) as dev:
            t = acl_py.DeviceTensor.from_numpy(x)     # on device 1
            dev.synchronize()

    Stateless apart from the id (one object per id), so it stays valid across sessions."""

    __slots__ = ("id",)

    def __new__(cls, device=None):
        if isinstance(device, Device):
            return device
        dev = _as_device_id(device)
        obj = _device_objects.get(dev)
        if obj is None:
            obj = object.__new__(cls)
            obj.id = dev
            obj = _device_objects.setdefault(dev, obj)
        return obj

    def use(self):
        """Makes this device the calling thread's current device (without a ``with``)."""
        activate(self.id)
        _tls.user = self.id
        return self

    def __enter__(self):
        tls = _tls
        if tls.stack is None:
            tls.stack = []
        tls.stack.append(tls.user)
        self.use()
        return self

    def __exit__(self, *exc):
        tls = _tls
        prev = tls.stack.pop() if tls.stack else None
        tls.user = prev
        # Back on the previous device for C-level calls too (cheap when unchanged); a thread
        # that had none stays on this one (CANN has no "unset").
        if prev is not None and _state is _INIT:
            activate(prev)
        return False

    def synchronize(self):
        """Waits for all work on every stream of this device (``aclrtSynchronizeDevice``) and
        runs the streams' deferred releases."""
        L = ensure()
        activate(self.id)
        from . import stream as _stream
        marks = _stream._marks_of_device(self.id)
        st = L.aclrtSynchronizeDevice()
        if st:
            raise make_error(st, "aclrtSynchronizeDevice")
        _stream._complete_marks(marks)

    @property
    def default_stream(self):
        """The device's default stream (the NULL stream)."""
        from .stream import default_stream
        return default_stream(self.id)

    @property
    def memory_pool(self):
        """The device's default :class:`MemoryPool` (tensor storage, workspaces)."""
        from .memory import get_pool
        return get_pool(self.id)

    def mem_info(self):
        """``MemInfo(free, total)`` in bytes (``aclrtGetMemInfo(ACL_HBM_MEM)``)."""
        return mem_info(self.id)

    def __index__(self):
        return self.id

    __int__ = __index__

    def __repr__(self):
        return f"<acl_py.Device {self.id}>"

    def __reduce__(self):
        return (Device, (self.id,))


def current_device():
    """The calling thread's current :class:`Device` (device 0 unless one was chosen)."""
    return Device(current_device_id())


def set_device(device):
    """Makes ``device`` the calling thread's device; same as ``Device(device).use()``."""
    return Device(device).use()


def mem_info(device=None):
    """``MemInfo(free, total)`` of a device's memory, in bytes."""
    dev = resolve_device(device)
    L = ensure()
    activate(dev)
    f = ffi.new("size_t[2]")
    st = L.aclrtGetMemInfo(1, f, f + 1)  # ACL_HBM_MEM: the device's own memory
    if st:
        raise make_error(st, "aclrtGetMemInfo")
    return MemInfo(int(f[0]), int(f[1]))


def synchronize(device=None):
    """Waits for all work on a device (default: current) and runs deferred releases."""
    Device(resolve_device(device)).synchronize()


# ---- registry -----------------------------------------------------------------------------

_live: dict = {}          # key -> Releaser, in creation order
_keys = itertools.count(1)


class Releaser:
    """Runs ``fn(*args)`` exactly once: from :meth:`release` (explicit close), when ``owner``
    is garbage collected, or at teardown (by ``order``). ``args`` must not reference
    ``owner``. ``owner=None`` registers an orphan, released by :func:`release_unused` or at
    teardown."""

    __slots__ = ("fn", "args", "order", "key", "wr")

    def __init__(self, owner, fn, args, order):
        self.fn = fn
        self.args = args
        self.order = order
        self.key = next(_keys)
        self.wr = None if owner is None else weakref.ref(owner, self._on_gc)
        _live[self.key] = self

    def _on_gc(self, _ref):
        self.wr = None          # breaks the releaser <-> weakref cycle
        try:
            if _live.pop(self.key, None) is None:
                return
            try:
                self.fn(*self.args)
            except BaseException:
                self.wr = None
                _live[self.key] = self   # retried by release_unused() or at teardown
        except BaseException:           # interpreter shutdown: module globals may be gone
            pass

    def release(self):
        """Runs the release now; False if it already ran. A failure raises and leaves the
        releaser armed, so the resource is not lost."""
        if _live.pop(self.key, None) is None:
            return False
        try:
            self.fn(*self.args)
        except BaseException:
            _live[self.key] = self
            raise
        self.wr = None          # the owner lives on; drop the callback (and the cycle)
        return True

    @property
    def alive(self):
        return self.key in _live


def live_count(order=None):
    """Number of registered, not yet released resources (of one order, or all)."""
    return sum(1 for r in list(_live.values()) if order is None or r.order == order)


def _retry_orphans():
    errs = []
    for r in list(_live.values()):
        if r.wr is None or r.wr() is None:
            try:
                r.release()
            except Exception as e:
                errs.append(e)
    return errs


_cache_clearers: list = []


def register_cache(clear):
    """Registers ``clear()``, which empties a cache of reusable C objects (operators' argument
    arrays, per-stream workspaces); :func:`release_unused` calls it first."""
    _cache_clearers.append(clear)


def release_unused():
    """Empties the registered caches (see :func:`register_cache`), synchronizes every live
    stream (running deferred stream-ordered frees), retries releases that failed during
    garbage collection, and empties every memory pool's cache. Afterwards device memory in
    use is exactly what live objects hold. Returns nothing; raises the first failure."""
    if _state is not _INIT:
        return
    import gc
    gc.collect()
    from . import memory as _memory, stream as _stream
    errs = []
    for clear in list(_cache_clearers):
        try:
            clear()
        except Exception as e:
            errs.append(e)
    errs += _stream._synchronize_all()
    errs += _retry_orphans()
    errs += _memory._free_all_pools()
    if errs:
        raise errs[0]


def _teardown():
    """Releases everything (see the module doc). Caller holds _lock. Returns the errors."""
    global _state, _tls, gen, _set_counts, _device_count, _tearing_down
    _tearing_down = True
    try:
        return _teardown_steps()
    finally:
        _tearing_down = False


def _teardown_steps():
    global _state, _tls, gen, _set_counts, _device_count
    errs = []
    from . import memory as _memory, stream as _stream
    try:
        errs += _stream._synchronize_all(force=True)
    except Exception as e:  # pragma: no cover - defensive
        errs.append(e)
    for order in _ORDERS:
        if order == ORDER_STREAM:
            # Deferred work still queued (a failed synchronize) runs before streams go.
            errs += _stream._flush_all_deferred()
        batch = sorted((r for r in list(_live.values()) if r.order == order),
                       key=lambda r: r.key, reverse=True)
        for r in batch:
            for _attempt in range(2):   # one retry: a release may fail transiently
                try:
                    r.release()
                    break
                except Exception as e:
                    if _attempt:
                        errs.append(e)
            _live.pop(r.key, None)  # never retried past teardown
    try:
        _memory._teardown()
        _stream._teardown()
    except Exception as e:  # pragma: no cover - defensive
        errs.append(e)
    L = lib
    for dev, n in sorted(_set_counts.items()):
        for _ in range(n):
            st = L.aclrtResetDevice(dev)
            if st:
                errs.append(make_error(st, "aclrtResetDevice"))
                break
    if _owns_acl:
        st = L.aclFinalize()
        if st:
            errs.append(make_error(st, "aclFinalize"))
    _set_counts = {}
    _device_count = None
    _tls = _TLS()
    gen += 1
    _state = _FINALIZED
    last_teardown_errors[:] = errs
    return errs


@atexit.register
def _at_exit():
    global _count
    # A daemon thread stuck inside acl-py must not hang the exit: wait a while, then give up
    # (the process is ending; the runtime's own exit handling remains).
    if not _lock.acquire(timeout=10):
        return
    try:
        if _state == _INIT:
            _count = 0
            _teardown()
    except BaseException:  # nothing may escape at interpreter exit
        pass
    finally:
        _lock.release()


__all__ = ["init", "finalize", "ensure", "is_initialized", "state", "backend", "Device",
           "current_device", "set_device", "device_count", "mem_info", "synchronize",
           "MemInfo", "Releaser", "release_unused", "FinalizedError", "ORDER_EXECUTOR",
           "ORDER_HANDLE", "ORDER_EVENT", "ORDER_MEMORY", "ORDER_POOL", "ORDER_STREAM"]
