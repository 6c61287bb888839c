"""The session: the library binding, ``init``/``finalize``, and the registry that releases
every C resource exactly once, in a valid order.

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
* A process forked while its session is initialized (``os.fork``, multiprocessing's default
  start method on Linux) inherits a copy of a runtime whose threads and device contexts
  belong to the parent: CANN installs no fork handler and its ``aclInit`` in the child would
  answer "already initialized" (hicann/runtime src/acl/aclrt_impl/acl.cpp, aclInitImpl). So
  in the child the session is ``"forked"``: the parent's objects are dropped from the
  registry without a C call (closing one, or its garbage collection, releases nothing; the
  exit tears nothing down), and any runtime call, through a parent's object or a new one,
  ``init()`` included, raises :class:`ForkedError`, which names the 'spawn' start method;
  so do ``soc_name()`` and ``supports_bfloat16()`` without a part name, which need no
  session but call the parent's copied runtime. ``backend()`` still answers (it reports
  which libraries are loaded, calling none), and ``acl_py.raw.lib`` stays the loaded
  library, unchecked like everything in ``acl_py.raw``: a raw call there is the caller's.
  A process forked before the parent's first initialization, or after its final
  ``finalize()``, runs its own session as usual.

Teardown (the final ``finalize()`` and interpreter exit, via ``atexit``), in this order:
every stream synchronized and its deferred work run (stream-ordered frees); executors, then
tensors and arrays, then events destroyed; buffers freed; memory pools emptied; streams
destroyed; each device reset as many times as acl-py set it; ``aclFinalize`` last. Failures
are collected: ``finalize()`` raises the first one after releasing everything else; at exit
nothing escapes.

This module knows nothing of devices, streams or memory: those modules contribute their
part of :func:`release_unused` and of the teardown as steps (:func:`register_step`), so the
session sits below all of them and imports none.

Registry
--------
Every wrapper owning a C resource registers a :class:`Releaser`: a weak reference to the
wrapper plus the release function and its arguments (which must not reference the wrapper),
and the session the resource was made in, so that a resource registered across a teardown is
never kept for the next session.
Exactly one of ``close()``, garbage collection and teardown runs it. A release that fails in
``close()`` raises and stays registered (``close()`` may be retried; teardown retries); one
that fails during garbage collection is retried by :func:`release_unused` and at teardown.
Other modules (operators) register their objects with the ``ORDER_*`` constants.
"""
from __future__ import annotations

import atexit
import os
import itertools
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ._ffi import ffi
from .errors import AclTypeError, ClosedError, NotInitializedError, make_error

if TYPE_CHECKING:
    from ._loader import Backend

# Release order at teardown (lower first).
ORDER_EXECUTOR = 0
ORDER_HANDLE = 1      # aclTensor, aclIntArray, aclBoolArray
ORDER_EVENT = 2
ORDER_HOST_REGISTRATION = 3   # host memory registrations: before the memory they register
ORDER_MEMORY = 4      # device and pinned host buffers
ORDER_POOL = 5        # memory pools' cached blocks
ORDER_STREAM = 6
ORDER_CONTEXT = 7     # explicit contexts: after their streams, before the devices' reset
_ORDERS = (ORDER_EXECUTOR, ORDER_HANDLE, ORDER_EVENT, ORDER_HOST_REGISTRATION, ORDER_MEMORY,
           ORDER_POOL, ORDER_STREAM, ORDER_CONTEXT)

_UNINIT, _INIT, _FINALIZED, _FORKED = "uninitialized", "initialized", "finalized", "forked"

lock = threading.RLock()   # the session's lock: state changes, per-session singletons
_state = _UNINIT
ready = False         # initialized: the hot paths' one check (lib is bound and usable)
tearing_down = False  # set while the teardown runs: releases skip what could delay them
_count = 0            # explicit init() calls not yet matched by finalize()
_owns_acl = False     # False when aclInit had been called by someone else (100002)
lib: Any = None       # the bound Library (set at first initialization, kept after)
gen = 0               # session number: bumped at every teardown; objects record theirs
last_teardown_errors: list = []
forked_from = None    # in a forked child: the parent's pid (its session is not this one's)
_forked_gen = None    # in a forked child: the parent's session number


class FinalizedError(NotInitializedError, ClosedError):
    """An object is used after ``acl_py.finalize()`` released it, or a call needs the runtime
    after the final ``finalize()``. Both a NotInitializedError and a ClosedError."""

    def __init__(self, what: str, call: str = "", message: str | None = None,
                 name: str | None = None) -> None:
        if message is None:
            message = (f"{what}: acl_py.finalize() has released the runtime and every object "
                       f"of the session; call acl_py.init() to start a new session")
        super().__init__(100001, call or "acl_py", message, name)


class ForkedError(NotInitializedError, ClosedError):
    """This process was forked from one whose acl-py session was initialized: the runtime,
    and every object the parent made, belong to the parent; neither can be used here, nor a
    session started. Both a NotInitializedError and a ClosedError."""

    def __init__(self, what: str, call: str = "") -> None:
        message = (f"{what}: this process (pid {os.getpid()}) was forked from process "
                   f"{forked_from} after it had initialized acl-py; the runtime, its devices, "
                   f"streams and memory belong to that process and cannot be used in a "
                   f"forked child, nor initialized again. Start worker processes with the "
                   f"'spawn' start method (multiprocessing.get_context('spawn')), or fork "
                   f"them before the parent first uses acl-py")
        super().__init__(100001, call or "acl_py", message)


def closed_error(obj_gen, what):
    """The error for using ``what``, made in session ``obj_gen``, once closed: a
    FinalizedError when a teardown closed it (a ForkedError when it is a forked parent's),
    else a ClosedError."""
    if obj_gen != gen:
        if obj_gen == _forked_gen:
            return ForkedError(what)
        return FinalizedError(what)
    return ClosedError(f"{what} is closed")


# ---- steps other modules contribute --------------------------------------------------------

# name -> functions, each returning a list of errors (never raising):
#   "caches"         release_unused, first: drop caches of reusable C objects
#   "synchronize"    release_unused (fn(False)) and teardown (fn(True), first): synchronize
#                    what can hold deferred work and run it (True: run it even if a
#                    synchronize failed: nothing else will)
#   "free_cached"    release_unused, last: return cached memory to the runtime
#   "before_streams" teardown, before the streams are destroyed
#   "forget"         teardown, after every release: drop per-session bookkeeping
#   "devices"        teardown, before aclFinalize: reset the devices acl-py set
#   "fork"           in a child forked from an initialized session: drop the parent's
#                    bookkeeping and mark its objects closed, with no C call and no lock a
#                    parent's thread may have held (returns nothing)
_steps: dict = {k: [] for k in ("caches", "synchronize", "free_cached", "before_streams",
                                "forget", "devices", "fork")}


def register_step(name, fn):
    """Adds ``fn`` to one step of :func:`release_unused` / the teardown (see ``_steps``)."""
    _steps[name].append(fn)


def register_cache(clear):
    """Registers ``clear()``, which empties a cache of reusable C objects (operators' argument
    arrays); :func:`release_unused` calls it first."""
    def step():
        clear()
        return []
    register_step("caches", step)


def _run_step(name, *args):
    errs = []
    for fn in list(_steps[name]):
        try:
            errs += fn(*args)
        except Exception as e:  # a step reports its errors; this is a safety net
            errs.append(e)
    return errs


# ---- initialization -----------------------------------------------------------------------

def _do_init(config):
    global lib, _state, _owns_acl, ready
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
    _state = _INIT
    ready = True


def init(config: str | bytes | os.PathLike[str] | None = None) -> None:
    """Initializes the runtime (``aclInit(config)`` the first time) and counts the call.
    Raises :class:`ForkedError` in a process forked from an initialized one."""
    global _count
    with lock:
        if _state != _INIT:
            if _state == _FORKED:
                raise ForkedError("acl_py.init()")
            if config is not None and not isinstance(config, (str, bytes)) and \
                    not hasattr(config, "__fspath__"):
                raise AclTypeError("config", f"expected a path or None, got {config!r}")
            _do_init(config)
        _count += 1


def ensure():
    """The bound library, initializing lazily; raises after the final ``finalize()``."""
    if ready:
        return lib
    with lock:
        if _state == _INIT:
            return lib
        if _state == _FORKED:
            raise ForkedError("runtime")
        if _state == _FINALIZED:
            raise FinalizedError("runtime", "acl_py",
                                 "acl_py.finalize() was called; call acl_py.init() to start "
                                 "a new session")
        _do_init(None)
        return lib


def is_initialized():
    return _state == _INIT


def state():
    """'uninitialized', 'initialized', 'finalized' or 'forked' (a child forked from an
    initialized process: see the module doc)."""
    return _state


def finalize() -> None:
    """Uncounts one ``init()``; at 0 (or when only lazily initialized) tears everything down
    in a valid order and calls ``aclFinalize``. Does nothing when not initialized. Raises the
    first release failure, after releasing everything else."""
    global _count
    with lock:
        if _state != _INIT:
            return
        if _count > 1:
            _count -= 1
            return
        _count = 0
        errs = _teardown()
    if errs:
        raise errs[0]


def backend() -> Backend:
    """The active backend (name, root, libraries, reason); opens the libraries, does not
    initialize the runtime. Answers in a forked child too: it reports which files are
    loaded (the record the loader kept) and calls nothing in them."""
    from ._loader import library
    return library().backend


def refuse_if_forked(what):
    """Raises ForkedError for ``what`` in a forked child (see the module doc). For the calls
    that reach the library without initializing the runtime (``aclrtGetSocName``, ``acl-py
    info``'s probe): in a forked child they would read the parent's copied runtime."""
    if _state == _FORKED:
        raise ForkedError(what)


# ---- registry -----------------------------------------------------------------------------

_live: dict = {}          # key -> Releaser, in creation order
_keys = itertools.count(1)


_Closable = TypeVar("_Closable", bound="ClosedByReleaser")


class ClosedByReleaser:
    """close() and the context manager of an object whose resource its Releaser (``_rel``)
    releases: ``with`` enters only while it is live (``_live()`` raises ClosedError once
    closed) and closes it on exit; close() is safe to repeat."""

    __slots__ = ()
    _rel: Releaser

    def _live(self) -> Any:
        raise NotImplementedError   # the object's state, or ClosedError once closed

    def close(self) -> None:
        """Releases the object's resource (see the class for when). Safe to repeat."""
        self._rel.release()

    def __enter__(self: _Closable) -> _Closable:
        self._live()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False


class Releaser:
    """Runs ``fn(*args)`` exactly once: from :meth:`release` (explicit close), when ``owner``
    is garbage collected, or at teardown (by ``order``). ``args`` must not reference
    ``owner``. ``owner=None`` registers an orphan, released by :func:`release_unused` or at
    teardown.

    ``made_in`` is the session (:data:`gen`) the resource belongs to: read before the C call
    that made it (a resource taken from another's, a pool's block, is that one's, the pool's
    session). Registered in another session (a teardown ran meanwhile, maybe followed by a
    new ``init()``, in another thread), the resource went with its session: it is dropped,
    never kept for the next one (see :func:`_drop_outlived`)."""

    __slots__ = ("fn", "args", "order", "key", "wr", "made_in")

    def __init__(self, owner, fn, args, order, made_in):
        self.fn = fn
        self.args = args
        self.order = order
        self.made_in = made_in
        self.key = key = next(_keys)
        self.wr = None if owner is None else weakref.ref(owner, self._on_gc)
        _live[key] = self
        if made_in != gen:   # checked after the insert: see the end of the teardown
            _drop_outlived(self)
            if owner is not None:
                raise FinalizedError(
                    "object", "acl_py",
                    "acl_py.finalize() (another thread's, or the exit's) released the "
                    "runtime while this object was being made, and its resource with it; "
                    "make it again (after acl_py.init() if no session has started since)")

    def _rearm(self):
        """After a failed release: registered again, retried later, in its own session only.
        A teardown that ran meanwhile (it never saw this releaser) took the resource with
        the session: then it is dropped, never retried in the next session on a stale
        handle."""
        _live[self.key] = self
        if self.made_in != gen:     # checked after the insert: see the end of the teardown
            _drop_outlived(self)

    def _on_gc(self, _ref):
        self.wr = None          # breaks the releaser <-> weakref cycle
        try:
            if _live.pop(self.key, None) is None:
                return
            try:
                self.fn(*self.args)
            except Exception:
                self.wr = None
                self._rearm()   # retried by release_unused() or at teardown
        except BaseException:           # interpreter shutdown: module globals may be gone
            pass

    def release(self):
        """Runs the release now; False if it already ran. A failure raises and leaves the
        releaser armed, so the resource is not lost. An interrupt (KeyboardInterrupt, or
        another BaseException that is no Exception) is not a failure of the release: Python
        raises it where the signal is handled, often as the release's C call returns, after
        the resource was freed. So the releaser is not armed again: the resource is never
        released twice (a double free may free another allocation at the same address); an
        interrupt before the C call leaves it held until the session ends."""
        if _live.pop(self.key, None) is None:
            return False
        try:
            self.fn(*self.args)
        except Exception:
            self._rearm()
            raise
        self.wr = None          # the owner lives on; drop the callback (and the cycle)
        return True

    def move_to(self, owner):
        """Ownership moves to another wrapper (a DeviceTensor's storage to the DeviceBuffer
        made for it on demand): from now on ``owner``'s garbage collection runs the release,
        the previous owner's no longer does. The caller keeps both alive meanwhile, so there
        is no moment without an owner; a release that already ran stays done."""
        if self.key in _live:
            self.wr = weakref.ref(owner, self._on_gc)

    @property
    def alive(self):
        return self.key in _live


def _drop_outlived(r):
    """A resource registered, or re-armed after a failed release, once its session's
    teardown had released everything (another thread's finalize(), maybe followed by its
    init()): never kept for a later session, whose teardown would release a stale handle (a
    device address the new session may have handed out again). The runtime's resources went
    with the devices' reset and aclFinalize; the operator library's host objects (tensors,
    arrays, executors) need no runtime and are destroyed now."""
    if _live.pop(r.key, None) is None:
        return
    r.wr = None
    if r.order in (ORDER_EXECUTOR, ORDER_HANDLE):
        try:
            r.fn(*r.args)
        except Exception:   # nothing to report it to: its session is over
            pass


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


def release_unused() -> None:
    """Empties the registered caches, synchronizes every live stream (running deferred
    stream-ordered frees), retries releases that failed during garbage collection, and
    empties every memory pool's cache. Afterwards device memory in use is exactly what live
    objects hold. Returns nothing; raises the first failure."""
    if _state is not _INIT:
        return
    import gc
    gc.collect()
    errs = _run_step("caches")
    errs += _run_step("synchronize", False)
    errs += _retry_orphans()
    errs += _run_step("free_cached")
    if errs:
        raise errs[0]


def _teardown():
    """Releases everything (see the module doc). Caller holds the lock. Returns the errors."""
    global tearing_down
    tearing_down = True
    try:
        return _teardown_steps()
    finally:
        tearing_down = False


def _teardown_steps():
    global _state, gen, ready
    errs = _run_step("synchronize", True)
    errs += _release_registered()
    if _live:
        # Registered meanwhile by another thread, after the pass over its order: a
        # second pass, while the runtime is still up.
        errs += _release_registered(hooks=False)
    errs += _run_step("forget")
    errs += _run_step("devices")
    if _owns_acl:
        st = lib.aclFinalize()
        if st:
            errs.append(make_error(st, "aclFinalize"))
    gen += 1
    ready = False
    _state = _FINALIZED
    # Registered by another thread after the second pass: its check of ``ready`` came
    # before the line above, so it is listed now; one that registers later sees ``ready``
    # false and drops itself (Releaser).
    for r in list(_live.values()):
        _drop_outlived(r)
    last_teardown_errors[:] = errs
    return errs


def _release_registered(hooks=True):
    """The teardown's pass over the registry, by order (``hooks``: with the steps that run
    between orders). Returns the errors."""
    errs = []
    for order in _ORDERS:
        if order == ORDER_STREAM and hooks:
            errs += _run_step("before_streams")
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
    return errs


class _ForkedLibrary:
    """Stands for the bound library in a forked child: any runtime call made through it
    (by a parent's object whose check ran before, or a path that found ``lib`` bound)
    raises ForkedError instead of reaching the parent's runtime."""

    __slots__ = ()

    def __getattr__(self, name):
        raise ForkedError(name, name)


def _after_fork_in_child():
    """os.fork() hook, in the child: see the module doc. Runs in the forking thread, the
    child's only one; takes no lock (another thread of the parent may have held it)."""
    global lock, _state, ready, lib, gen, _count, _owns_acl, forked_from, _forked_gen
    global tearing_down
    lock = threading.RLock()    # the parent's may be held by a thread absent here
    if _state != _INIT:
        return                  # nothing of the runtime inherited: a session of its own
    forked_from = os.getppid()
    _live.clear()               # the parent's resources: never released by this process
    _forked_gen = gen
    gen += 1
    _count = 0
    _owns_acl = False
    tearing_down = False
    ready = False
    lib = _ForkedLibrary()
    _state = _FORKED
    for fn in _steps["fork"]:
        fn()


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _at_exit():
    global _count
    # A daemon thread stuck inside acl-py must not hang the exit: wait a while, then give up
    # (the process is ending; the runtime's own exit handling remains).
    if not lock.acquire(timeout=10):
        return
    try:
        if _state == _INIT:
            _count = 0
            _teardown()
    except BaseException:  # nothing may escape at interpreter exit
        pass
    finally:
        lock.release()


__all__ = ["init", "finalize", "ensure", "is_initialized", "state", "backend",
           "refuse_if_forked", "Releaser",
           "release_unused", "register_cache", "register_step", "FinalizedError", "ForkedError",
           "ORDER_EXECUTOR", "ORDER_HANDLE", "ORDER_EVENT", "ORDER_HOST_REGISTRATION",
           "ORDER_MEMORY", "ORDER_POOL",
           "ORDER_STREAM", "ORDER_CONTEXT"]
