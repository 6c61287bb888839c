"""Streams and events, and the bookkeeping behind stream-ordered release.

Each stream keeps a submission counter. Code that enqueues work on a stream calls
:meth:`Stream.mark_used` (or the internal ``_StreamState.submit``) right after the enqueue
succeeds, naming the buffers/tensors the work touches and any host object to keep alive. A
buffer released while a stream has such work not yet known complete is freed only after that
stream has synchronized past it (``Stream.synchronize``, ``Event.synchronize`` of a later
record, ``Device.synchronize``, ``Stream.close``, teardown). Deferred work runs on the thread
that synchronized.

A stream may be shared by several threads: submissions and the deferred list are locked, and
the runtime queues work in the order the calls return.
"""
from __future__ import annotations

import threading
import weakref

from ._ffi import ffi
from . import runtime as _rt
from .errors import AclArgumentError, AclTypeError, make_error

_streams = weakref.WeakSet()   # live _StreamState objects, default streams included
_defaults: dict = {}           # device id -> Stream wrapping the NULL stream


class _StreamState:
    """The C-side state of a stream, shared by its wrapper, the buffers that used it and the
    releaser (never references the wrapper)."""

    __slots__ = ("handle", "device", "seq", "done", "deferred", "lock", "run_lock", "running",
                 "closed", "is_default", "gen", "sync_fn", "__weakref__")

    def __init__(self, handle, device, is_default):
        self.handle = handle
        self.device = device
        self.seq = 0           # submissions so far
        self.done = 0          # submissions known complete
        self.deferred = []     # (seq, fn or None, arg): fn(arg) once done >= seq
        self.lock = threading.Lock()
        # Held while deferred work runs. A thread whose synchronize finds its work claimed by
        # another thread's complete() waits on it, so that when synchronize returns, what
        # waited for the stream (a copy back into a NumPy array) has run, not just started.
        self.run_lock = threading.RLock()
        self.running = 0       # complete() calls between claiming work and finishing it
        self.closed = False
        self.is_default = is_default
        self.gen = _rt.gen
        self.sync_fn = _rt.ensure().aclrtSynchronizeStream   # bound once (hot path)
        _streams.add(self)

    def submit(self, buffers=(), keep=None):
        """Records one submission that uses ``buffers`` (``_BufState``s) and keeps ``keep``
        alive until it is complete. Returns its sequence number."""
        # No lock for the counter (hot path): two racing submissions may share a number,
        # which is harmless: a number is read only after the enqueue it tags returned, so
        # any number <= the target a synchronize read first tags work enqueued before it.
        seq = self.seq = self.seq + 1
        if keep is not None:
            with self.lock:     # complete() swaps the list under the lock
                self.deferred.append((seq, None, keep))
        for b in buffers:
            b.uses[self] = seq
        return seq

    def defer(self, seq, fn, arg):
        """Runs ``fn(arg)`` once submissions up to ``seq`` are complete (now, if they are)."""
        with self.lock:
            if self.done < seq and not self.closed:
                self.deferred.append((seq, fn, arg))
                return
        fn(arg)

    def complete(self, upto):
        """Marks submissions up to ``upto`` complete and runs what waited for them. Returns
        the errors of deferred functions (every one runs)."""
        with self.run_lock:
            with self.lock:
                if upto > self.done:
                    self.done = upto
                if not self.deferred:
                    return []
                ready = [d for d in self.deferred if d[0] <= self.done]
                if not ready:
                    return []
                self.running += 1   # before the list shrinks: see wait_running()
                self.deferred = [d for d in self.deferred if d[0] > self.done]
            errs = []
            try:
                for _seq, fn, arg in ready:
                    if fn is not None:
                        try:
                            fn(arg)
                        except Exception as e:
                            errs.append(e)
            finally:
                self.running -= 1
            return errs

    def wait_running(self):
        """Waits until deferred work another thread claimed has run. Callers read
        ``deferred`` (empty) before ``running``; complete() raises ``running`` before it
        empties the list, so claimed-but-unfinished work is always seen."""
        if self.running:
            with self.run_lock:
                pass

    def sync(self):
        """aclrtSynchronizeStream, then the deferred work it made due. Raises the sync failure
        (deferred work then stays queued) or the first deferred failure."""
        if _rt._state is _rt._INIT:
            L = _rt.lib
            if _rt._tls.dev != self.device:
                _rt.activate(self.device)
        else:
            L = _rt.ensure()
            _rt.activate(self.device)
        target = self.seq
        st = L.aclrtSynchronizeStream(self.handle)
        if st:
            raise make_error(st, "aclrtSynchronizeStream")
        if self.deferred:
            errs = self.complete(target)
            if errs:
                raise errs[0]
        elif self.done < target:
            # Nothing waits: advance the counter without complete()'s lock (the hot path of
            # a launch + synchronize loop). A racing sync may store a smaller target after a
            # larger one, which only makes later checks conservative; work deferred by a
            # racing thread meanwhile is picked up by the re-check.
            self.done = target
            if self.deferred:
                errs = self.complete(target)
                if errs:
                    raise errs[0]
        self.wait_running()


_closed_error = _rt.closed_error


def _create(dev, ctype, create):
    """A new ``ctype`` object made by the runtime function ``create`` (aclrtCreateStream,
    aclrtCreateEvent) on device ``dev``."""
    L = _rt.ensure()
    _rt.activate(dev)
    p = ffi.new(ctype)
    s = getattr(L, create)(p)
    if s:
        raise make_error(s, create)
    return p[0]


def _destroy_stream(st):
    """Releaser of a created stream: synchronize, destroy, run what waited."""
    if st.closed:
        return
    L = _rt.lib
    _rt.activate(st.device)
    target = st.seq
    sync_err = None
    s = L.aclrtSynchronizeStream(st.handle)
    if s:
        sync_err = make_error(s, "aclrtSynchronizeStream")
    s = L.aclrtDestroyStream(st.handle)
    if s:
        raise make_error(s, "aclrtDestroyStream")
    # Destroy drains the stream: everything submitted is complete now.
    with st.lock:
        st.closed = True
        st.handle = None
    _streams.discard(st)
    errs = st.complete(max(target, st.seq))
    if sync_err is not None:
        raise sync_err
    if errs:
        raise errs[0]


class Stream:
    """An ``aclrtStream`` on a device (default: the calling thread's current device).

    ``with Stream() as s:`` closes it on exit; ``close()`` synchronizes, destroys the stream
    and runs the releases that waited for it. Wrapping the default (NULL) stream, see
    :func:`default_stream`; closing that one only synchronizes it."""

    __slots__ = ("_st", "_rel", "__weakref__")

    def __init__(self, device=None):
        dev = _rt.resolve_device(device)
        st = self._st = _StreamState(_create(dev, "aclrtStream *", "aclrtCreateStream"), dev,
                                     False)
        self._rel = _rt.Releaser(self, _destroy_stream, (st,), _rt.ORDER_STREAM)

    @classmethod
    def _wrap_default(cls, dev):
        self = object.__new__(cls)
        self._st = _StreamState(ffi.NULL, dev, True)
        self._rel = None
        return self

    @property
    def handle(self):
        """The ``aclrtStream`` (NULL for a default stream)."""
        st = self._st
        if st.closed:
            raise _closed_error(st, repr(self))
        return st.handle

    @property
    def device(self):
        return _rt.Device(self._st.device)

    @property
    def closed(self):
        return self._st.closed

    @property
    def is_default(self):
        return self._st.is_default

    def synchronize(self):
        """Waits until everything queued on the stream has run, then runs the releases that
        waited for it."""
        st = self._st
        if st.closed:
            raise _closed_error(st, repr(self))
        # A closed state covers teardown too (it closes every stream of the session).
        if st.deferred or _rt._tls.dev != st.device:
            st.sync()
            return
        # _StreamState.sync's common case inlined: one C call and a counter update.
        target = st.seq
        r = st.sync_fn(st.handle)
        if r:
            raise make_error(r, "aclrtSynchronizeStream")
        if st.done < target:
            st.done = target    # see _StreamState.sync
        if st.deferred:         # deferred meanwhile by another thread
            errs = st.complete(target)
            if errs:
                raise errs[0]
        elif st.running:        # claimed by another thread's synchronize, maybe not run yet
            st.wait_running()

    def mark_used(self, *objects, keep=None):
        """Call right after enqueuing work on this stream: the memory of ``objects``
        (DeviceBuffer, HostBuffer, DeviceTensor) is not freed, and ``keep`` is kept alive,
        until the stream has synchronized past this point. Returns the submission number."""
        st = self._st
        if st.closed:
            raise _closed_error(st, repr(self))
        return st.submit([o._bst for o in objects], keep)

    def keep_alive(self, obj):
        """Keeps ``obj`` alive until the work queued so far has completed."""
        return self.mark_used(keep=obj)

    def defer(self, fn):
        """Calls ``fn()`` (on the synchronizing thread) once the work queued so far has
        completed; at once if the stream is idle as far as acl-py knows."""
        st = self._st
        if st.closed:
            raise _closed_error(st, repr(self))
        st.defer(st.seq, _call, fn)

    def close(self):
        """Synchronizes and destroys the stream (a default stream is only synchronized).
        Safe to repeat."""
        st = self._st
        if st.is_default:
            if not st.closed and st.gen == _rt.gen and _rt._state is _rt._INIT:
                st.sync()
            return
        if self._rel is not None:
            self._rel.release()

    def __enter__(self):
        if self._st.closed:
            raise _closed_error(self._st, repr(self))
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other._st is self._st

    def __hash__(self):
        return id(self._st)

    def __repr__(self):
        st = self._st
        if st.is_default:
            return f"<acl_py.Stream default of device {st.device}>"
        state = "closed" if st.closed else hex(int(ffi.cast("uintptr_t", st.handle)))
        return f"<acl_py.Stream {state} on device {st.device}>"


def _call(fn):
    fn()


def default_stream(device=None):
    """The default (NULL) stream of a device (default: the current one), as a Stream."""
    dev = _rt.resolve_device(device)
    _rt.ensure()
    s = _defaults.get(dev)
    if s is None or s._st.closed:
        with _rt._lock:
            s = _defaults.get(dev)
            if s is None or s._st.closed:
                s = _defaults[dev] = Stream._wrap_default(dev)
    return s


def as_stream(stream, device, argument="stream"):
    """A Stream for a ``stream=`` argument: None means ``device``'s default stream; a Stream
    of another device is refused before any C call."""
    if stream is None:
        s = _defaults.get(device)
        if s is None or s._st.closed:
            s = default_stream(device)
        return s
    if not isinstance(stream, Stream):
        raise AclTypeError(argument, f"expected an acl_py.Stream or None, got "
                           f"{type(stream).__name__}")
    if stream._st.device != device:
        raise AclArgumentError(argument, f"{stream!r} belongs to device {stream._st.device}, "
                               f"the data to device {device}")
    if stream._st.closed:
        raise _closed_error(stream._st, repr(stream))
    return stream


# ---- events -------------------------------------------------------------------------------

class _EventState:
    __slots__ = ("handle", "device", "recorded", "closed", "gen")

    def __init__(self, handle, device):
        self.handle = handle
        self.device = device
        self.recorded = None   # (stream state, seq) of the last record
        self.closed = False
        self.gen = _rt.gen


def _destroy_event(st):
    if st.closed:
        return
    L = _rt.lib
    _rt.activate(st.device)
    s = L.aclrtDestroyEvent(st.handle)
    if s:
        raise make_error(s, "aclrtDestroyEvent")
    st.closed = True
    st.handle = None


class Event:
    """An ``aclrtEvent``: ``record(stream)``, ``synchronize()``, ``elapsed_ms(end)``."""

    __slots__ = ("_st", "_rel", "__weakref__")

    def __init__(self, device=None):
        dev = _rt.resolve_device(device)
        st = self._st = _EventState(_create(dev, "aclrtEvent *", "aclrtCreateEvent"), dev)
        self._rel = _rt.Releaser(self, _destroy_event, (st,), _rt.ORDER_EVENT)

    def _live(self):
        st = self._st
        if st.closed:
            raise _closed_error(st, repr(self))
        return st

    @property
    def handle(self):
        return self._live().handle

    @property
    def device(self):
        return _rt.Device(self._st.device)

    @property
    def closed(self):
        return self._st.closed

    def record(self, stream=None):
        """Records the event on ``stream`` (default: the device's default stream)."""
        st = self._live()
        s = as_stream(stream, st.device)
        sst = s._st
        _rt.activate(st.device)
        target = sst.seq
        r = _rt.lib.aclrtRecordEvent(st.handle, sst.handle)
        if r:
            raise make_error(r, "aclrtRecordEvent")
        st.recorded = (sst, target)
        return self

    def synchronize(self):
        """Waits for the last record; the work queued on its stream before the record is then
        complete, and the releases that waited for it run."""
        st = self._live()
        _rt.activate(st.device)
        rec = st.recorded
        r = _rt.lib.aclrtSynchronizeEvent(st.handle)
        if r:
            raise make_error(r, "aclrtSynchronizeEvent")
        if rec is not None:
            errs = rec[0].complete(rec[1])
            if errs:
                raise errs[0]

    def elapsed_ms(self, end):
        """Milliseconds from this event's record to ``end``'s (both recorded and complete)."""
        if not isinstance(end, Event):
            raise AclTypeError("end", f"expected an acl_py.Event, got {type(end).__name__}")
        st = self._live()
        est = end._live()
        if est.device != st.device:
            raise AclArgumentError("end", f"event of device {est.device}, this one is on "
                                   f"device {st.device}")
        _rt.activate(st.device)
        ms = ffi.new("float *")
        r = _rt.lib.aclrtEventElapsedTime(ms, st.handle, est.handle)
        if r:
            raise make_error(r, "aclrtEventElapsedTime")
        return float(ms[0])

    def close(self):
        """Destroys the event. Safe to repeat."""
        self._rel.release()

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self._st.closed else "live"
        return f"<acl_py.Event {state} on device {self._st.device}>"


# ---- whole-process helpers (runtime teardown, Device.synchronize, tests) ------------------

def _marks_of_device(dev):
    return [(s, s.seq) for s in list(_streams) if s.device == dev and not s.closed]


def _complete_marks(marks):
    errs = []
    for s, seq in marks:
        errs += s.complete(seq)
    if errs:
        raise errs[0]


def _synchronize_all(force=False):
    """Synchronizes every live stream (acl-py's and the default ones) and runs their deferred
    work. Returns the errors. ``force``: run deferred work even if a synchronize failed (used
    at teardown, where nothing else will run it)."""
    errs = []
    for s in list(_streams):
        if s.closed or s.gen != _rt.gen:
            continue
        try:
            s.sync()
        except Exception as e:
            errs.append(e)
            if force:
                errs += s.complete(s.seq)
    return errs


def _flush_all_deferred():
    errs = []
    for s in list(_streams):
        errs += s.complete(s.seq)
    return errs


def _teardown():
    """After the releases: default streams are closed, the bookkeeping emptied."""
    for s in list(_streams):
        if not s.closed:
            s.complete(s.seq)
            s.closed = True
            s.handle = None
    _streams.clear()
    _defaults.clear()


__all__ = ["Stream", "Event", "default_stream"]
