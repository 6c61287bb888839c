"""Streams and events.

Work acl-py enqueues on a stream is numbered on the stream's timeline (``acl_py._ordering``):
code that enqueues work calls :meth:`Stream.mark_used` (acl-py's own modules: the timeline's
``submit`` and the resources' ``Uses`` records) right after the enqueue succeeds, naming the
buffers/tensors the work touches and any host object to keep alive. A buffer released while
a stream has such work not yet known complete is freed only after that stream has
synchronized past it (``Stream.synchronize``, ``Event.synchronize`` of a later record,
``Device.synchronize``, ``Stream.close``, teardown). Deferred work runs on the thread that
synchronized.

A stream may be shared by several threads: submissions and the deferred list are locked, and
the runtime queues work in the order the calls return.
"""
from __future__ import annotations

import enum
import threading
from typing import Any, Callable, Literal

from ._ffi import ffi
from ._integers import as_int
from . import _host_func
from . import _ordering
from . import device as _device
from . import _timeout
from ._timeout import to_milliseconds
from . import runtime as _rt
from .errors import AclArgumentError, AclTypeError, make_error
from .device import Device, DeviceLike

_defaults: dict = {}           # device id -> Stream wrapping the NULL stream

# Stream priorities (aclrtCreateStreamWithConfig): 0 is the highest, every part has 0..7.
HIGHEST_PRIORITY, LOWEST_PRIORITY = 0, 7


class StreamFlag(enum.IntFlag):
    """What a stream is for (``Stream(flags=...)``, ``Stream.flags``; CANN's
    ``ACL_STREAM_*``, docs/zh/api_ref/06_stream_management.md). ``FAST_LAUNCH``: the
    runtime's resources are taken at creation, so launches cost less. ``FAST_SYNC``: a
    synchronize polls instead of sleeping. ``PERSISTENT``: for building a model (its tasks
    run when the model does). ``HUGE``: room for more tasks. ``CPU_SCHEDULE``: reserved.
    ``DEVICE_USE_ONLY``: used by the device only: the host queues no work on it. The last
    three streams' synchronize returns at once."""

    FAST_LAUNCH = 0x01
    FAST_SYNC = 0x02
    PERSISTENT = 0x04
    HUGE = 0x08
    CPU_SCHEDULE = 0x10
    DEVICE_USE_ONLY = 0x20


class EventFlag(enum.IntFlag):
    """What an event is for (``Event(flags=...)``, ``Event.flags``; CANN's ``ACL_EVENT_*`` of
    ``aclrtCreateEventWithFlag``, docs/zh/api_ref/07_event_management.md). ``SYNC``: a stream
    can wait for it (:meth:`Stream.wait`). ``TIME_LINE``: its records carry a timestamp
    (:meth:`Event.elapsed_ms`, :meth:`Event.timestamp_us`; it costs the runtime some work).
    ``CAPTURE_STREAM_PROGRESS``: it tracks a stream's progress (query and synchronize only).
    CANN's device-only, graph-capture (``EXTERNAL``) and IPC flags are not offered: the host
    could neither record nor wait for such an event here. ``Event()`` without flags is
    ``aclrtCreateEvent``'s event, which does all three."""

    SYNC = 0x01
    CAPTURE_STREAM_PROGRESS = 0x02
    TIME_LINE = 0x08


class StreamState(_ordering.Timeline):
    """A stream's C handle and timeline, shared by its wrapper, the records of the work
    enqueued on it and its releaser (never references the wrapper). For acl-py's modules:
    ``Stream.state``."""

    __slots__ = ("handle", "is_default", "destroy_lock")

    def __init__(self, handle, device, is_default):
        super().__init__(device)
        self.handle = handle
        self.is_default = is_default
        # Held while the stream is destroyed, by synchronizations acl-py makes of streams it
        # found through its records (wait_if_open), which may be another thread's, and by
        # enqueues (enqueue): such a stream's handle is never used while, or after,
        # another thread destroys it. Reentrant: work run by the synchronize may drop the
        # stream's last wrapper.
        self.destroy_lock = threading.RLock()

    def synchronize(self, timeout_ms=None):
        """aclrtSynchronizeStream (``timeout_ms`` -1) or aclrtSynchronizeStreamWithTimeout,
        then the deferred work it made due; ``timeout_ms`` None: the limit of waits made
        without a timeout (``_timeout.limit_ms``). Raises the sync failure (deferred work
        then stays queued: after a timeout the stream may still use that memory) or the
        first deferred failure."""
        _host_func.check_not_inside("Stream.synchronize")
        if _device.thread_state.dev != self.device or not _rt.ready:
            _rt.ensure()
            _device.activate(self.device)
        target = self.seq
        err = _wait(self.handle, _timeout.limit_ms if timeout_ms is None else timeout_ms)
        if err is not None:
            raise err
        if not (self.deferred or self.kept or self.running):
            # Nothing waits on it: the counter is all (see complete), unless another
            # thread deferred work meanwhile.
            if target > self.done:
                self.done = target
            if not self.deferred:
                return
        errs = self.complete(target)
        if errs:
            raise errs[0]

    def query(self):
        """aclrtStreamQuery (never blocks): True if everything submitted has run; the
        deferred work it made due then runs, as after synchronize()."""
        if _device.thread_state.dev != self.device or not _rt.ready:
            _rt.ensure()
            _device.activate(self.device)
        target = self.seq
        if not _query("aclrtStreamQuery", self.handle, "aclrtStreamStatus *",
                      _rt.lib.ACL_STREAM_STATUS_COMPLETE):
            return False
        errs = self.complete(target)
        if errs:
            raise errs[0]
        return True

    def drop_after_fork(self):
        super().drop_after_fork()
        self.destroy_lock = threading.RLock()

    def wait_if_open(self):
        """synchronize(), unless the stream is closed: for streams acl-py found through its
        records (a buffer's pending work, a pool's cached blocks), which another thread may
        be closing. Returns False if it was closed."""
        with self.destroy_lock:
            if self.closed:
                return False
            self.synchronize()
            return True

    def enqueue(self, fn, *args):
        """``fn(*args, handle)``: a C call enqueuing work on this stream (its handle the last
        argument), made holding ``destroy_lock``; when it returns 0 the work is numbered
        (:meth:`submit`: ``seq`` is then at least its number). A thread closing the stream
        meanwhile (after the caller's check at the start, in state_for) has then either
        finished, and this raises ClosedError, or waits for the enqueue: a destroyed handle
        is a dangling pointer on a device, and work enqueued between the close's synchronize
        and its destroy would break aclrtDestroyStream's rule that the stream be idle
        (hicann/runtime include/external/acl/acl_rt.h). Returns the call's status. One call
        for both: the launch path is timed, and a call costs more than the lock."""
        lock = self.destroy_lock
        if not lock.acquire(False):     # not `with`: half the cost (CPython 3.11)
            # Held by another thread (closing the stream, which waits for its host
            # functions): a host function must not wait for it.
            _host_func.check_not_inside("a launch on a stream")
            lock.acquire()
        try:
            if self.closed:
                raise self.closed_error(f"stream on device {self.device}")
            status = fn(*args, self.handle)
            if not status:
                self.seq += 1   # submit(), inline: see Timeline.submit on the counter
            return status
        finally:
            lock.release()

    def closed_error(self, what):
        return _rt.closed_error(self.gen, what)


def _query(call, handle, ctype, complete):
    """``call(handle, status)``, the runtime query named ``call`` with an enum out-parameter
    of type ``ctype``: whether it answered ``complete``. Raises the call's typed error."""
    status = ffi.new(ctype)
    r = getattr(_rt.lib, call)(handle, status)
    if r:
        raise make_error(r, call)
    return status[0] == complete


def _create(dev, ctype, create, *args):
    """A new ``ctype`` object made by the runtime function ``create`` (aclrtCreateStream,
    aclrtCreateEvent, aclrtCreateStreamWithConfig with ``args``) on device ``dev``."""
    L = _rt.ensure()
    _device.activate(dev)
    p = ffi.new(ctype)
    s = getattr(L, create)(p, *args)
    if s:
        raise make_error(s, create)
    return p[0]


def _wait(handle, ms):
    """Waits for the stream's work: ``aclrtSynchronizeStream`` (``ms`` < 0: no limit) or
    ``aclrtSynchronizeStreamWithTimeout``. Returns the failure as an AclError, or None."""
    if ms < 0:
        st = _rt.lib.aclrtSynchronizeStream(handle)
        return make_error(st, "aclrtSynchronizeStream") if st else None
    st = _rt.lib.aclrtSynchronizeStreamWithTimeout(handle, ms)
    return make_error(st, "aclrtSynchronizeStreamWithTimeout") if st else None


def _check_event_flags(flags):
    """``Event``'s flags, checked: an EventFlag of at least one known bit."""
    flags = as_int(flags, "flags", "acl_py.EventFlag bits")
    unknown = int(flags) & ~int(sum(EventFlag))
    if unknown or flags <= 0:
        raise AclArgumentError("flags", f"{flags:#x} is not a non-empty OR of EventFlag bits "
                               f"(SYNC, CAPTURE_STREAM_PROGRESS, TIME_LINE)")
    return EventFlag(flags)


def _check_config(priority, flags):
    """``Stream``'s priority and flags, checked: (priority, flags) as ints."""
    if priority is not None:
        priority = as_int(priority, "priority", "an int or None")
        if not HIGHEST_PRIORITY <= priority <= LOWEST_PRIORITY:
            # CANN would clamp it: a value out of range is a mistake to name, not to round
            raise AclArgumentError("priority", f"{priority} is outside {HIGHEST_PRIORITY} "
                                   f"(highest) .. {LOWEST_PRIORITY} (lowest)")
    flags = as_int(flags, "flags", "acl_py.StreamFlag bits")
    unknown = int(flags) & ~int(sum(StreamFlag))
    if unknown or flags < 0:
        raise AclArgumentError("flags", f"{flags:#x} has bits that are no StreamFlag "
                               f"({unknown:#x})")
    return priority, int(flags)


def _destroy_stream(st):
    """Releaser of a created stream: synchronize, destroy, run what waited."""
    with st.destroy_lock:
        if st.closed:
            return
        L = _rt.lib
        # CANN destroys a stream only with its device current (hicann/runtime api_impl.cc,
        # StreamDestroy); the thread's device is restored after: a garbage collection may run
        # this release inside another operation of the thread, on another device.
        with _device.restoring(st.device):
            target = st.seq
            sync_err = _wait(st.handle, _timeout.limit_ms)
            if isinstance(sync_err, TimeoutError):
                # Its work is still queued: CANN destroys only an idle stream (acl_rt.h,
                # aclrtDestroyStream). Not destroyed, still owned.
                raise sync_err
            try:
                s = L.aclrtDestroyStream(st.handle)
            except BaseException:
                # Interrupted (KeyboardInterrupt) as the destroy returned, or just before:
                # taken as destroyed. An open stream over a destroyed handle would be used
                # again; one never destroyed is held until the session ends.
                st.close()
                st.handle = None
                raise
            if s:
                raise make_error(s, "aclrtDestroyStream")
        # Destroy drains the stream: everything submitted is complete now.
        st.close()
        st.handle = None
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

    __slots__ = ("state", "_rel", "__weakref__")

    def __init__(self, device: DeviceLike = None, *, stop_on_failure: bool = False,
                 priority: int | None = None, flags: int = 0) -> None:
        """``priority``: 0 (highest, also a stream's default) to 7; ``flags``:
        :class:`StreamFlag` bits (``aclrtCreateStreamWithConfig``)."""
        dev = _device.resolve_device(device)
        if not isinstance(stop_on_failure, bool):
            raise AclTypeError("stop_on_failure", f"expected a bool, got "
                               f"{type(stop_on_failure).__name__}")
        priority, flags = _check_config(priority, flags)
        made_in = _rt.gen   # before the C call: see Releaser
        if priority is None and not flags:
            handle = _create(dev, "aclrtStream *", "aclrtCreateStream")
        else:
            handle = _create(dev, "aclrtStream *", "aclrtCreateStreamWithConfig",
                             priority or HIGHEST_PRIORITY, flags)
        st = self.state = StreamState(handle, dev, False)
        self._rel = _rt.Releaser(self, _destroy_stream, (st,), _rt.ORDER_STREAM, made_in)
        if stop_on_failure:
            try:
                self.stop_on_failure()
            except BaseException:
                self.close()
                raise

    def stop_on_failure(self) -> None:
        """Makes the stream stop at its first failed task (``aclrtSetStreamFailureMode``,
        ``ACL_STOP_ON_FAILURE``): the work queued after it does not run, and every later
        synchronize raises that task's error; closing the stream still works. The default
        (``ACL_CONTINUE_ON_FAILURE``) runs the later work and reports the failure at the next
        synchronize only. CANN cannot switch a stream back."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        _device.activate(st.device)
        r = _rt.lib.aclrtSetStreamFailureMode(explicit_handle(st.handle),
                                              _rt.lib.ACL_STOP_ON_FAILURE)
        if r:
            raise make_error(r, "aclrtSetStreamFailureMode")

    @classmethod
    def _wrap_default(cls, dev):
        self = object.__new__(cls)
        self.state = StreamState(ffi.NULL, dev, True)
        self._rel = None
        return self

    @property
    def handle(self) -> Any:
        """The ``aclrtStream`` (NULL for a default stream)."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        return st.handle

    @property
    def device(self) -> Device:
        return _device.Device(self.state.device)

    @property
    def closed(self) -> bool:
        return self.state.closed

    def _get(self, call, ctype):
        """``call(handle, out)``, a stream query with the stream's device current."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        _rt.ensure()
        _device.activate(st.device)
        out = ffi.new(ctype)
        r = getattr(_rt.lib, call)(st.handle, out)
        if r:
            raise make_error(r, call)
        return out[0]

    @property
    def priority(self) -> int:
        """0 (highest) to 7 (``aclrtStreamGetPriority``); a default stream's is 0."""
        return int(self._get("aclrtStreamGetPriority", "uint32_t *"))

    @property
    def flags(self) -> StreamFlag:
        """The :class:`StreamFlag` bits the stream was created with (``aclrtStreamGetFlags``)."""
        return StreamFlag(self._get("aclrtStreamGetFlags", "uint32_t *"))

    @property
    def id(self) -> int:
        """The runtime's number for the stream on its device (``aclrtStreamGetId``)."""
        return int(self._get("aclrtStreamGetId", "int32_t *"))

    @property
    def is_default(self) -> bool:
        return self.state.is_default

    def synchronize(self, timeout: float | None = None) -> None:
        """Waits until everything queued on the stream has run, then runs the releases that
        waited for it. ``timeout``: at most that many seconds (None: no limit, unless a limit
        is set for the process: ``acl_py._timeout.wait_limit``); past it
        :class:`~acl_py.errors.AclTimeoutError` (a ``TimeoutError``) is raised, the work stays
        queued and the stream usable, and nothing it may still use is released."""
        # The common case without a call: this synchronize is on the per-call path.
        ms = _timeout.limit_ms if timeout is None else to_milliseconds(timeout)
        st = self.state
        if st.closed:   # teardown too: it closes every stream of the session
            raise st.closed_error(repr(self))
        st.synchronize(ms)

    def query(self) -> bool:
        """True if all the work queued on the stream so far has run; never blocks. The
        releases that waited for that work then run, as after :meth:`synchronize`."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        return st.query()

    def mark_used(self, *objects: Any, keep: object = None) -> int:
        """Call right after enqueuing work on this stream: the memory of ``objects``
        (DeviceBuffer, HostBuffer, DeviceTensor: anything with an ``allocation``) is not
        freed, a HostRegistration not ended, and ``keep`` is kept alive, until the stream has
        synchronized past this point.
        Returns the submission number."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        seq = st.submit(keep)
        for o in objects:
            o.allocation.uses[st] = st.seq    # the newest number: see Timeline.submit
        return seq

    def wait(self, other: Event | Stream | Notify, timeout: float | None = None) -> None:
        """Makes the work queued on this stream from now on wait, on the device, for
        ``other``: an :class:`Event` (its last record so far), another :class:`Stream`
        (everything queued on it so far, through an event recorded there) or a
        :class:`Notify` (until it is recorded; the wait then clears it). The host does not
        block. Both must be on this stream's device (CANN refuses a wait across devices). An
        event or notify a stream waits for is destroyed, once closed, only after that stream
        has synchronized past the wait (CANN requires it for events).

        ``timeout``: seconds the wait may last on the device (rounded up to whole seconds, as
        CANN takes them; None: no limit of its own). A wait that runs out of time fails its
        task: the stream's next synchronize raises its error (107020 on the emulator). For an
        event or a stream this is ``aclrtStreamWaitEventWithTimeout``, whose timeout CANN's
        runtime hands to the device on Atlas A2/A3 and Ascend 950 only: on the other parts
        the wait lasts as ``aclrtSetOpWaitTimeout`` says."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        seconds = _timeout.to_device_seconds(timeout)
        if isinstance(other, Notify):
            nst = other._live()
            if nst.device != st.device:
                raise AclArgumentError("other", f"notify of device {nst.device}, this stream is "
                                       f"on device {st.device}: a stream waits only for "
                                       f"notifies of its own device")
            sst = state_for(self, st.device)
            r = sst.enqueue(_wait_notify, nst.handle, seconds)
            if r:
                raise make_error(r, "aclrtWaitAndResetNotify")
            nst.uses[sst] = sst.seq     # numbered by enqueue: the destroy waits for it
            return
        if isinstance(other, Stream):
            ost = other.state
            if ost is st:
                return      # a stream's work is in order already
            if ost.device != st.device:
                raise AclArgumentError("other", f"{other!r} belongs to device {ost.device}, "
                                       f"this stream to device {st.device}: a stream waits "
                                       f"only for work of its own device")
            with Event(st.device) as ev:    # destroyed once this stream is past the wait
                ev.record(other)
                self._wait_event(ev._live(), seconds)
            return
        if not isinstance(other, Event):
            raise AclTypeError("other", f"expected an acl_py.Event, acl_py.Stream or "
                               f"acl_py.Notify, got {type(other).__name__}")
        est = other._live()
        if est.device != st.device:
            raise AclArgumentError("other", f"event of device {est.device}, this stream is on "
                                   f"device {st.device}: a stream waits only for events of its "
                                   f"own device")
        self._wait_event(est, seconds)

    def _wait_event(self, est, seconds):
        """Queues this stream's wait for the event of state ``est`` (of its device), with a
        device-side limit of ``seconds`` (0: none)."""
        sst = state_for(self, est.device)
        if seconds:
            call = "aclrtStreamWaitEventWithTimeout"
            r = sst.enqueue(_wait_event_with_timeout, est.handle, seconds)
        else:
            call = "aclrtStreamWaitEvent"
            r = sst.enqueue(_wait_event, est.handle)
        if r:
            err = make_error(r, call)
            # CANN refuses an event never recorded with a bare "invalid value" (107000): name
            # the argument if acl-py never recorded it (recorded through its handle
            # elsewhere, the library decides).
            if r == _NOT_RECORDED and est.recorded is None:
                e = AclArgumentError("other", "event never recorded: record(stream) it before "
                                     "a stream waits for it")
                e.refused(err)
                raise e from err
            if r == _NO_WAIT and est.flags is not None and not est.flags & EventFlag.SYNC:
                e = AclArgumentError("other", f"event created with flags {est.flags!r}, "
                                     f"without EventFlag.SYNC: a stream cannot wait for it")
                e.refused(err)
                raise e from err
            raise err
        est.uses[sst] = sst.seq     # numbered by enqueue: the destroy waits for the wait

    def launch_host_func(self, fn: Callable[[], object]) -> None:
        """Queues ``fn()`` on the stream: it runs after the work queued before it and the work
        queued after it waits until it returns (``aclrtLaunchHostFunc``). It runs on a thread
        the runtime owns, not this one, holding the GIL meanwhile; it must not launch work,
        synchronize, allocate or free (CANN forbids it; acl-py and the emulator refuse it).
        ``fn`` is kept alive until it has run and released then. An exception it raises is
        raised, as :class:`~acl_py.errors.HostFunctionError` (the original its
        ``__cause__``), by the first synchronize that learns the stream ran it."""
        if not callable(fn):
            raise AclTypeError("fn", f"expected a callable taking no arguments, got "
                               f"{type(fn).__name__}")
        _host_func.check_not_inside("Stream.launch_host_func")
        st = state_for(self, self.state.device)
        status = _host_func.launch(st, fn)
        if status:
            raise make_error(status, "aclrtLaunchHostFunc")

    def abort(self) -> None:
        """Stops the stream's work (``aclrtStreamAbort``): the task running is ended and the
        work queued and not started is dropped; when it returns the stream is empty and
        usable. The releases that waited for that work then run. The next synchronize raises
        the ended task's error, if a task was running (a kernel ended so: 507035). Atlas
        A2/A3 and Ascend 950 only (:class:`~acl_py.errors.NotSupportedError` elsewhere)."""
        _host_func.check_not_inside("Stream.abort")
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        _rt.ensure()
        _device.activate(st.device)
        with st.destroy_lock:
            target = st.seq
            r = _rt.lib.aclrtStreamAbort(explicit_handle(st.handle))
        if r:
            raise make_error(r, "aclrtStreamAbort")
        errs = st.complete(target)   # nothing queued before the abort runs any more
        if errs:
            raise errs[0]

    def stop(self) -> None:
        """Ends the task running on the stream (``aclrtStreamStop``); the work queued behind
        it stays queued and runs. The next synchronize raises the ended task's error, if a
        task was running (a kernel ended so: 507035). Atlas A2/A3 and Ascend 950 only
        (:class:`~acl_py.errors.NotSupportedError` elsewhere); not a default stream (CANN
        refuses it): :class:`AclArgumentError` naming ``stream``."""
        _host_func.check_not_inside("Stream.stop")
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        if st.is_default:
            raise AclArgumentError("stream", f"{self!r} is a default stream: aclrtStreamStop "
                                   f"takes a created stream only")
        _rt.ensure()
        _device.activate(st.device)
        r = _rt.lib.aclrtStreamStop(st.handle)
        if r:
            raise make_error(r, "aclrtStreamStop")

    def keep_alive(self, obj: object) -> int:
        """Keeps ``obj`` alive until the work queued so far has completed."""
        return self.mark_used(keep=obj)

    def defer(self, fn: Callable[[], object]) -> None:
        """Calls ``fn()`` (on the synchronizing thread) once the work queued so far has
        completed; at once if the stream is idle as far as acl-py knows."""
        st = self.state
        if st.closed:
            raise st.closed_error(repr(self))
        st.defer(st.seq, _call, fn)

    def close(self) -> None:
        """Synchronizes and destroys the stream (a default stream is only synchronized).
        Safe to repeat. Under a wait limit (``acl_py._timeout.wait_limit``) a synchronize
        that runs out of time raises :class:`~acl_py.errors.AclTimeoutError` and leaves the
        stream open (its work still queued): close it again later."""
        st = self.state
        if st.is_default:
            if not st.closed and st.gen == _rt.gen and _rt.ready:
                st.synchronize()
            return
        if self._rel is not None:
            self._rel.release()

    def __enter__(self) -> Stream:
        if self.state.closed:
            raise self.state.closed_error(repr(self))
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __eq__(self, other):
        return isinstance(other, Stream) and other.state is self.state

    def __hash__(self):
        return id(self.state)

    def __repr__(self):
        st = self.state
        if st.is_default:
            return f"<acl_py.Stream default of device {st.device}>"
        state = "closed" if st.closed else hex(int(ffi.cast("uintptr_t", st.handle)))
        return f"<acl_py.Stream {state} on device {st.device}>"


def _call(fn):
    fn()


def explicit_handle(handle):
    """``handle``, or for NULL (a default stream) the current context's default stream as
    ``aclrtCtxGetCurrentDefaultStream`` hands it; the caller has made the stream's device
    current. For the runtime calls that take NULL as the default stream on Atlas A2/A3 and
    Ascend 950 only and refuse it elsewhere (107000: their runtime resolves it through
    GetCurStream, hicann/runtime src/runtime/core/src/runtime.cc): ``aclrtMemcpy2dAsync``,
    ``aclrtSetStreamFailureMode``, ``aclrtStreamAbort``. The handle named is the stream NULL
    stands for where it is taken, so such a call does the same on every part."""
    if handle != ffi.NULL:
        return handle
    out = ffi.new("aclrtStream *")
    r = _rt.lib.aclrtCtxGetCurrentDefaultStream(out)
    if r:
        raise make_error(r, "aclrtCtxGetCurrentDefaultStream")
    return out[0]


def default_stream(device: DeviceLike = None) -> Stream:
    """The default (NULL) stream of a device (default: the current one), as a Stream."""
    dev = _device.resolve_device(device)
    _rt.ensure()
    s = _defaults.get(dev)
    if s is None or s.state.closed:
        with _rt.lock:
            s = _defaults.get(dev)
            if s is None or s.state.closed:
                s = _defaults[dev] = Stream._wrap_default(dev)
    return s


_device.provide("default_stream", default_stream)


def as_stream(stream, device, argument="stream"):
    """A Stream for a ``stream=`` argument: None means ``device``'s default stream; a Stream
    of another device is refused before any C call."""
    if stream is None:
        s = _defaults.get(device)
        if s is None or s.state.closed:
            s = default_stream(device)
        return s
    if not isinstance(stream, Stream):
        raise AclTypeError(argument, f"expected an acl_py.Stream or None, got "
                           f"{type(stream).__name__}")
    st = stream.state
    if st.device != device:
        raise AclArgumentError(argument, f"{stream!r} belongs to device {st.device}, "
                               f"the data to device {device}")
    if st.closed:
        raise st.closed_error(repr(stream))
    return stream


def state_for(stream, device, argument="stream"):
    """The open StreamState to enqueue on for a ``stream=`` argument (see :func:`as_stream`),
    checked, with ``device`` made current on this thread: the start of every launch."""
    if stream is None:
        s = _defaults.get(device)
        st = None if s is None else s.state
    elif type(stream) is Stream:
        st = stream.state
        if st.device != device:
            st = None
    else:
        st = None
    if st is None or st.closed:
        st = as_stream(stream, device, argument).state
    if _device.thread_state.dev != device or not _rt.ready:
        _device.activate(device)
    return st


# ---- events -------------------------------------------------------------------------------

_NEVER_RECORDED = 507000   # aclrtEventElapsedTime of an event never recorded (hicann/runtime)
_NOT_RECORDED = 107000     # aclrtStreamWaitEvent of an event never recorded (event.cc Wait)
_NO_WAIT = 207000          # aclrtStreamWaitEvent of an event without SYNC (api_error.cc)


def _wait_event(event, stream):
    """aclrtStreamWaitEvent with the stream last (StreamState.enqueue passes it so)."""
    return _rt.lib.aclrtStreamWaitEvent(stream, event)


def _wait_event_with_timeout(event, seconds, stream):
    return _rt.lib.aclrtStreamWaitEventWithTimeout(stream, event, seconds)


def _wait_notify(notify, seconds, stream):
    return _rt.lib.aclrtWaitAndResetNotify(notify, stream, seconds)


class _HandleState:
    """A runtime handle of one device that streams record or wait for (an event, a notify):
    ``destroy_call`` destroys it once the streams have passed that work (``uses``)."""

    __slots__ = ("handle", "device", "closed", "gen", "uses")
    destroy_call = ""

    def __init__(self, handle, device):
        self.handle = handle    # None once destroyed
        self.device = device
        self.closed = False     # the wrapper's state: the destroy may wait for streams
        self.gen = _rt.gen
        self.uses = _ordering.Uses()


class _EventState(_HandleState):
    # The streams' waits for the event (Stream.wait) are its uses: CANN asks that they have
    # run before the event is destroyed (include/external/acl/acl_rt.h, aclrtDestroyEvent).
    __slots__ = ("flags", "recorded")
    destroy_call = "aclrtDestroyEvent"

    def __init__(self, handle, device, flags):
        super().__init__(handle, device)
        self.flags = flags      # EventFlag bits, or None: aclrtCreateEvent's event
        self.recorded = None    # (stream state, seq) of the last record


class _NotifyState(_HandleState):
    # The streams' records of the notify and waits for it are its uses.
    __slots__ = ()
    destroy_call = "aclrtDestroyNotify"


def _destroy_handle(st):
    if st.handle is None:
        return
    # No device made current: CANN destroys an event or a notify in its own context
    # (hicann/runtime api_impl.cc, EventDestroy), and a release the garbage collector runs
    # inside another operation must not switch that operation's device.
    s = getattr(_rt.lib, st.destroy_call)(st.handle)
    if s:
        raise make_error(s, st.destroy_call)
    st.closed = True
    st.handle = None


def _release_handle(st):
    """Releaser of an event or a notify: closed now, destroyed once the streams that used it
    have passed that work (at once when none has)."""
    if st.handle is None:
        return
    _ordering.close_then_release(st, _destroy_handle, _rt.ORDER_EVENT)


class _StreamOrderedHandle(_device.DeviceObject):
    """What Event and Notify share: a handle of one device (the state ``_st``) that streams
    record or wait for."""

    __slots__ = ("_st", "_rel", "__weakref__")
    _st: _HandleState
    _kind = ""      # the class's name in its repr

    @property
    def handle(self) -> Any:
        return self._live().handle

    def __repr__(self):
        state = "closed" if self._st.closed else "live"
        return f"<acl_py.{self._kind} {state} on device {self._st.device}>"


class Event(_StreamOrderedHandle):
    """An ``aclrtEvent``: ``record(stream)``, ``synchronize()``, ``query()``,
    ``elapsed_ms(end)``, ``timestamp_us()``; a stream waits for it with :meth:`Stream.wait`.
    ``close()`` destroys it (safe to repeat)."""

    __slots__ = ()
    _st: _EventState
    _kind = "Event"

    def __init__(self, device: DeviceLike = None, flags: int | None = None) -> None:
        """``flags``: :class:`EventFlag` bits (``aclrtCreateEventWithFlag``), or None for
        ``aclrtCreateEvent``'s event (waits and timestamps both)."""
        if flags is not None:
            flags = _check_event_flags(flags)
        dev = _device.resolve_device(device)
        made_in = _rt.gen   # before the C call: see Releaser
        if flags is None:
            handle = _create(dev, "aclrtEvent *", "aclrtCreateEvent")
        else:
            handle = _create(dev, "aclrtEvent *", "aclrtCreateEventWithFlag", int(flags))
        st = self._st = _EventState(handle, dev, flags)
        self._rel = _rt.Releaser(self, _release_handle, (st,), _rt.ORDER_EVENT, made_in)

    @property
    def flags(self) -> EventFlag | None:
        """The :class:`EventFlag` bits it was created with; None for ``Event()`` without."""
        return self._st.flags

    def _check_timed(self, st, argument, call):
        """An event created without TIME_LINE has no timestamps: CANN's runtime answers 0 on
        Atlas A2/A3 (the record's completion report is asked for only with TIME_LINE); a
        meaningless number is refused here instead."""
        if st.flags is not None and not st.flags & EventFlag.TIME_LINE:
            raise AclArgumentError(argument, f"event created with flags {st.flags!r}, without "
                                   f"EventFlag.TIME_LINE: it has no timestamp for {call}")

    def record(self, stream: Stream | None = None) -> Event:
        """Records the event on ``stream`` (default: the device's default stream)."""
        st = self._live()
        sst = state_for(stream, st.device)
        _device.activate(st.device)
        target = sst.seq
        r = sst.enqueue(_rt.lib.aclrtRecordEvent, st.handle)
        if r:
            raise make_error(r, "aclrtRecordEvent")
        st.recorded = (sst, target)
        return self

    def synchronize(self, timeout: float | None = None) -> None:
        """Waits for the last record; the work queued on its stream before the record is then
        complete, and the releases that waited for it run. ``timeout``: at most that many
        seconds (None: no limit, unless one is set for the process:
        ``acl_py._timeout.wait_limit``); past it :class:`~acl_py.errors.AclTimeoutError` is
        raised and nothing is released."""
        ms = to_milliseconds(timeout)
        st = self._live()
        _device.activate(st.device)
        rec = st.recorded
        if ms < 0:
            r = _rt.lib.aclrtSynchronizeEvent(st.handle)
            if r:
                raise make_error(r, "aclrtSynchronizeEvent")
        else:
            r = _rt.lib.aclrtSynchronizeEventWithTimeout(st.handle, ms)
            if r:
                raise make_error(r, "aclrtSynchronizeEventWithTimeout")
        self._completed(rec)

    def query(self) -> bool:
        """True if the work the last record captured has run; never blocks. An event never
        recorded is not ready (CANN's answer for the events of aclrtCreateEvent). The
        releases that waited for that work then run."""
        st = self._live()
        rec = st.recorded
        if not _query("aclrtQueryEventStatus", st.handle, "aclrtEventRecordedStatus *",
                      _rt.lib.ACL_EVENT_RECORDED_STATUS_COMPLETE):
            return False
        self._completed(rec)
        return True

    def _completed(self, rec):
        """The runtime said the last record is done: the work before ``rec`` (the last record
        as read before the call) is complete, unless another thread recorded the event again
        meanwhile (the call then answered for that record, maybe on another stream)."""
        if rec is not None and self._st.recorded is rec:
            errs = rec[0].complete(rec[1])
            if errs:
                raise errs[0]

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event's record to ``end``'s (both recorded and complete)."""
        if not isinstance(end, Event):
            raise AclTypeError("end", f"expected an acl_py.Event, got {type(end).__name__}")
        st = self._live()
        est = end._live()
        self._check_timed(st, "self", "elapsed_ms")
        self._check_timed(est, "end", "elapsed_ms")
        if est.device != st.device:
            raise AclArgumentError("end", f"event of device {est.device}, this one is on "
                                   f"device {st.device}")
        _device.activate(st.device)
        ms = ffi.new("float *")
        r = _rt.lib.aclrtEventElapsedTime(ms, st.handle, est.handle)
        if r:
            err = make_error(r, "aclrtEventElapsedTime")
            # CANN's code for an event never recorded is an internal error (507000): name the
            # event instead, if acl-py never recorded it (the library decides: an event
            # recorded through its handle elsewhere is not refused here).
            never = [n for n, s in (("self", st), ("end", est)) if s.recorded is None]
            if r == _NEVER_RECORDED and never:
                e = AclArgumentError(never[0], "event never recorded: call record(stream) "
                                     "before elapsed_ms")
                e.refused(err)
                raise e from err
            raise err
        return float(ms[0])

    def timestamp_us(self) -> int:
        """When the last record completed, in microseconds since the device started
        (``aclrtEventGetTimestamp``; the emulator counts from the host's start). The record
        must be complete: synchronize the event or its stream first."""
        st = self._live()
        self._check_timed(st, "self", "timestamp_us")
        _device.activate(st.device)
        out = ffi.new("uint64_t *")
        r = _rt.lib.aclrtEventGetTimestamp(st.handle, out)
        if r:
            err = make_error(r, "aclrtEventGetTimestamp")
            if r == _NEVER_RECORDED and st.recorded is None:  # as elapsed_ms names it
                e = AclArgumentError("self", "event never recorded: call record(stream) "
                                     "before timestamp_us")
                e.refused(err)
                raise e from err
            raise err
        return int(out[0])


# ---- notifies --------------------------------------------------------------------------------

class Notify(_StreamOrderedHandle):
    """An ``aclrtNotify``: a flag on the device that :meth:`record` sets, in the order of the
    stream it is recorded on, and that a stream waiting for it (:meth:`Stream.wait`, CANN's
    ``aclrtWaitAndResetNotify``) waits for and then clears, so each record lets one wait
    pass. A lighter signal between two streams of one device than an event, with no host
    synchronize, query or timing (docs/zh/api_ref/08_notify_management.md). ``close()``
    destroys it once the streams recording it or waiting for it have passed that work (safe
    to repeat)."""

    __slots__ = ()
    _kind = "Notify"

    def __init__(self, device: DeviceLike = None) -> None:
        dev = _device.resolve_device(device)
        made_in = _rt.gen   # before the C call: see Releaser
        handle = _create(dev, "aclrtNotify *", "aclrtCreateNotify", 0)  # ACL_NOTIFY_DEFAULT
        st = self._st = _NotifyState(handle, dev)
        self._rel = _rt.Releaser(self, _release_handle, (st,), _rt.ORDER_EVENT, made_in)

    def record(self, stream: Stream | None = None) -> Notify:
        """Sets the notify once the work queued on ``stream`` so far (default: the device's
        default stream) has run."""
        st = self._live()
        sst = state_for(stream, st.device)
        _device.activate(st.device)
        r = sst.enqueue(_rt.lib.aclrtRecordNotify, st.handle)
        if r:
            raise make_error(r, "aclrtRecordNotify")
        st.uses[sst] = sst.seq
        return self


# ---- the session's steps ------------------------------------------------------------------

def _synchronize_all(force):
    """Synchronizes every live stream (acl-py's and the default ones) and runs their deferred
    work. Returns the errors. ``force``: run deferred work even if a synchronize failed (at
    teardown, where nothing else will run it). Each stream may be another thread's, closed
    (or collected) meanwhile: synchronized under its destroy lock, skipped once closed
    (wait_if_open), never through a destroyed handle."""
    errs = []
    for s in _ordering.timelines():
        if s.closed or s.gen != _rt.gen or not isinstance(s, StreamState):
            continue
        try:
            s.wait_if_open()
        except Exception as e:
            errs.append(e)
            if force:
                errs += s.flush()
    return errs


def _forget():
    """Teardown, after the releases: the default streams are dropped."""
    for s in _defaults.values():
        s.state.handle = None
    _defaults.clear()
    return []


def _drop_after_fork():
    """Forked child: the default streams' wrappers are the parent's (their timelines are
    closed by the _ordering module's step)."""
    _defaults.clear()


_rt.register_step("synchronize", _synchronize_all)
_rt.register_step("forget", _forget)
_rt.register_step("fork", _drop_after_fork)

__all__ = ["Stream", "Event", "Notify", "default_stream"]
