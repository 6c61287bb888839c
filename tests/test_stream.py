"""Streams, events, and stream-ordered release."""
import gc
import threading
import time
import weakref

import numpy as np
import pytest

import acl_py
from acl_py import errors
from acl_py._ffi import ffi


def test_stream_lifecycle(emulator):
    n = emulator.live_objects()["streams"]
    s = acl_py.Stream()
    assert emulator.live_objects()["streams"] == n + 1
    assert s.handle != ffi.NULL and not s.closed and s.device is acl_py.Device(0)
    s.synchronize()
    s.close()
    assert s.closed and emulator.live_objects()["streams"] == n
    s.close()                                       # double close: nothing
    with pytest.raises(errors.ClosedError):
        s.synchronize()
    with pytest.raises(errors.ClosedError):
        s.handle
    with pytest.raises(errors.ClosedError):
        with s:
            pass


def test_stream_with_closes_even_on_exception(emulator):
    n = emulator.live_objects()["streams"]
    with pytest.raises(KeyError):
        with acl_py.Stream() as s:
            assert emulator.live_objects()["streams"] == n + 1
            raise KeyError("boom")
    assert s.closed and emulator.live_objects()["streams"] == n


def test_stream_released_by_gc_only(emulator):
    n = emulator.live_objects()["streams"]
    s = acl_py.Stream()
    b = acl_py.DeviceBuffer(1 << 16)
    b.copy_from_host_async(np.ones(1 << 14, np.float32), s)
    del s, b                                          # no close anywhere
    gc.collect()
    assert emulator.live_objects()["streams"] == n


def test_default_stream():
    d = acl_py.default_stream()
    assert d is acl_py.default_stream(0) is acl_py.Device(0).default_stream
    assert d.is_default and d.handle == ffi.NULL
    b = acl_py.DeviceBuffer(64)
    x = np.arange(16, dtype=np.float32)
    b.copy_from_host_async(x, d)
    out = np.empty_like(x)
    b.copy_to_host_async(out)                         # None: the default stream
    d.synchronize()
    assert (out == x).all()
    d.close()                                         # only synchronizes
    assert not d.closed
    with d:
        pass
    assert not d.closed
    b.close()


def test_stream_argument_errors():
    b = acl_py.DeviceBuffer(64)
    with pytest.raises(errors.AclTypeError) as info:
        b.copy_from_host_async(bytes(64), "stream")
    assert info.value.argument == "stream"
    s = acl_py.Stream()
    s.close()
    with pytest.raises(errors.ClosedError):
        b.copy_from_host_async(bytes(64), s)
    with pytest.raises(errors.AclTypeError):
        acl_py.Stream(device="0")
    b.close()


def test_buffer_closed_with_pending_copy_is_freed_after_synchronize(emulator):
    s = acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(1 << 22)
    x = np.random.default_rng(0).random(1 << 19)
    b.copy_from_host_async(x, s)
    b.close()
    assert b.closed
    with pytest.raises(errors.ClosedError):
        b.ptr
    # still allocated: the copy may be running
    assert emulator.live_objects()["device_allocations"] == n + 1
    s.synchronize()
    assert emulator.live_objects()["device_allocations"] == n
    s.close()


def test_buffer_collected_with_pending_copy_waits_for_stream(emulator):
    s = acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(1 << 20)
    b.copy_from_host_async(np.ones(1 << 18, np.float32), s)
    del b
    gc.collect()
    assert emulator.live_objects()["device_allocations"] == n + 1
    s.close()                                          # close = synchronize + destroy
    assert emulator.live_objects()["device_allocations"] == n


def test_buffer_used_by_two_streams_waits_for_both(emulator):
    s1, s2 = acl_py.Stream(), acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(4096)
    b.copy_from_host_async(bytes(4096), s1)
    out = bytearray(4096)
    b.copy_to_host_async(out, s2)
    b.close()
    s1.synchronize()
    assert emulator.live_objects()["device_allocations"] == n + 1
    s2.synchronize()
    assert emulator.live_objects()["device_allocations"] == n
    s1.close()
    s2.close()


def test_buffer_synchronized_before_close_is_freed_at_once(emulator):
    s = acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(4096)
    b.copy_from_host_async(bytes(4096), s)
    s.synchronize()
    b.close()
    assert emulator.live_objects()["device_allocations"] == n
    s.close()


def test_event_synchronize_releases_work_before_its_record(emulator):
    s = acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(4096)
    b.copy_from_host_async(bytes(4096), s)
    ev = acl_py.Event().record(s)
    late = acl_py.DeviceBuffer(4096)
    late.copy_from_host_async(bytes(4096), s)          # after the record
    b.close()
    late.close()
    ev.synchronize()
    # b's copy preceded the record: freed; late's copy came after: still waiting
    assert emulator.live_objects()["device_allocations"] == n + 1
    s.synchronize()
    assert emulator.live_objects()["device_allocations"] == n
    ev.close()
    s.close()


def test_async_copy_from_pageable_memory_is_staged():
    """Only a copy from pinned memory is queued (from pageable memory aclrtMemcpyAsync waits
    for the stream): a NumPy source is staged through pinned memory, so it may be changed as
    soon as the call returns."""
    s = acl_py.Stream()
    b = acl_py.DeviceBuffer(1 << 16)
    x = np.arange(1 << 14, dtype=np.float32)
    b.copy_from_host_async(x, s)
    x[:] = -1                                          # too late to matter
    s.synchronize()
    out = b.copy_to_host()
    assert (np.frombuffer(out, np.float32) == np.arange(1 << 14)).all()
    b.close()
    s.close()


def test_async_copy_to_pageable_memory_fills_it_at_synchronize(emulator):
    s = acl_py.Stream()
    x = np.arange(1 << 14, dtype=np.float32)
    b = acl_py.DeviceBuffer(x.nbytes)
    b.copy_from_host(x)
    out = np.zeros_like(x)
    ref = weakref.ref(out)
    n_host = emulator.live_objects()["host_allocations"]
    assert b.copy_to_host_async(out, s) is out
    assert emulator.live_objects()["host_allocations"] == n_host + 1   # the staging buffer
    out2 = np.zeros_like(x)
    b.copy_to_host_async(out2, s)
    del out
    gc.collect()
    assert ref() is not None                           # kept until the stream is done
    s.synchronize()
    assert (out2 == x).all()
    assert emulator.live_objects()["host_allocations"] == n_host
    gc.collect()
    assert ref() is None                               # and released after
    b.close()
    s.close()


def test_defer_runs_after_synchronize_and_immediately_when_idle():
    s = acl_py.Stream()
    ran = []
    s.defer(lambda: ran.append("idle"))
    assert ran == ["idle"]                               # nothing submitted: at once
    b = acl_py.DeviceBuffer(64)
    b.copy_from_host_async(bytes(64), s)
    s.defer(lambda: ran.append("after"))
    assert ran == ["idle"]
    s.synchronize()
    assert ran == ["idle", "after"]
    b.close()
    s.close()


def test_failed_synchronize_keeps_deferred_frees_for_next(emulator):
    s = acl_py.Stream()
    n = emulator.live_objects()["device_allocations"]
    b = acl_py.DeviceBuffer(4096)
    b.copy_from_host_async(bytes(4096), s)
    b.close()
    with emulator.inject_faults("aclrtSynchronizeStream:1"):
        with pytest.raises(errors.InternalError) as info:
            s.synchronize()
    assert info.value.code == 507000 and info.value.call == "aclrtSynchronizeStream"
    assert emulator.live_objects()["device_allocations"] == n + 1
    s.synchronize()
    assert emulator.live_objects()["device_allocations"] == n
    s.close()


def test_stream_close_failure_keeps_stream(emulator):
    n = emulator.live_objects()["streams"]
    s = acl_py.Stream()
    with emulator.inject_faults("aclrtDestroyStream:1"):
        with pytest.raises(errors.InternalError):
            s.close()
    assert not s.closed and emulator.live_objects()["streams"] == n + 1
    s.synchronize()                                     # still usable
    s.close()
    assert s.closed and emulator.live_objects()["streams"] == n


def test_create_failure_raises_device_memory_error(emulator):
    n = emulator.live_objects()["streams"]
    with emulator.inject_faults("aclrtCreateStream:1"):
        with pytest.raises(errors.DeviceMemoryError) as info:
            acl_py.Stream()
    assert info.value.call == "aclrtCreateStream"
    assert emulator.live_objects()["streams"] == n


def test_events(emulator):
    n = emulator.live_objects()["events"]
    s = acl_py.Stream()
    with acl_py.Event() as start, acl_py.Event() as end:
        assert emulator.live_objects()["events"] == n + 2
        start.record(s)
        b = acl_py.DeviceBuffer(1 << 20)
        b.memset(7, stream=s)
        end.record(s)
        end.synchronize()
        ms = start.elapsed_ms(end)
        assert isinstance(ms, float) and ms >= 0.0
        b.close()
    assert start.closed and end.closed and emulator.live_objects()["events"] == n
    with pytest.raises(errors.ClosedError):
        start.record(s)
    s.close()


def test_event_errors(emulator):
    e1, e2 = acl_py.Event(), acl_py.Event()
    with pytest.raises(errors.AclTypeError) as info:
        e1.elapsed_ms(3)
    assert info.value.argument == "end"
    # never recorded: the runtime's ACL_ERROR_RT_INTERNAL_ERROR, as CANN's (docs/emulator.md),
    # raised as an argument error naming the event, with the status and message
    with pytest.raises(errors.AclArgumentError) as info:
        e1.elapsed_ms(e2)
    assert info.value.argument == "self" and "never recorded" in info.value.problem
    assert info.value.call == "aclrtEventElapsedTime" and info.value.code == 507000
    assert "never been recorded" in info.value.message
    assert isinstance(info.value.__cause__, errors.InternalError)
    s = acl_py.Stream()
    e1.record(s)
    with pytest.raises(errors.AclArgumentError) as info:
        e1.elapsed_ms(e2)
    assert info.value.argument == "end" and info.value.code == 507000
    s.close()
    e1.synchronize()                                    # never recorded: returns at once
    e1.close()
    e1.close()
    e2.close()


def _slow_then_mark(buf, stream, value, rounds=12):
    """Queues `rounds` memsets of the whole buffer on `stream`, the last one writing `value`:
    tens of ms, so that another stream's unordered work would run first."""
    for k in range(rounds):
        buf.memset(value if k == rounds - 1 else 0, stream=stream)


@pytest.mark.parametrize("on", ["event", "stream"])
def test_stream_wait_orders_work_across_streams(emulator, on):
    """b.wait(event or stream): b's later work runs after a's, on the device; the host does
    not block, and only b is synchronized."""
    a, b = acl_py.Stream(), acl_py.Stream()
    n = 32 << 20
    buf, host = acl_py.DeviceBuffer(n), acl_py.HostBuffer(n)
    events = emulator.live_objects()["events"]
    for value in (3, 4):
        _slow_then_mark(buf, a, value)
        if on == "event":
            with acl_py.Event() as ev:
                ev.record(a)
                b.wait(ev)
        else:
            b.wait(a)
        buf.copy_to_host_async(host, b)
        b.synchronize()
        view = host.numpy()
        assert view[0] == value and view[-1] == value
        del view
    b.wait(b)                           # a stream is in order with itself: nothing to do
    # the events the waits used are gone once b has passed the waits
    assert emulator.live_objects()["events"] == events
    a.close()
    b.close()
    buf.close()
    host.close()


def test_event_a_stream_waits_for_is_destroyed_after_the_wait(emulator):
    """Closing an event a queued wait still refers to: the wrapper closes at once, the destroy
    waits until the stream has passed the wait (CANN asks it; the emulator refuses the
    destroy before, so an early one would raise here)."""
    a, b = acl_py.Stream(), acl_py.Stream()
    buf = acl_py.DeviceBuffer(32 << 20)
    events = emulator.live_objects()["events"]
    ev = acl_py.Event()
    _slow_then_mark(buf, a, 1)
    ev.record(a)
    b.wait(ev)
    ev.close()
    assert ev.closed
    with pytest.raises(errors.ClosedError):
        b.wait(ev)
    assert emulator.live_objects()["events"] == events + 1     # b has not passed the wait
    b.synchronize()
    assert emulator.live_objects()["events"] == events
    # garbage collection, the same
    ev = acl_py.Event()
    ev.record(a)
    b.wait(ev)
    del ev
    gc.collect()
    b.synchronize()
    assert emulator.live_objects()["events"] == events
    a.close()
    b.close()
    buf.close()


def test_stream_wait_errors(emulator):
    s = acl_py.Stream()
    with pytest.raises(errors.AclTypeError) as info:
        s.wait(3)
    assert info.value.argument == "other"
    # never recorded: CANN's 107000 ("invalid value"), raised naming the event, with the
    # status, call and message, chained to the library's refusal
    with acl_py.Event() as ev:
        with pytest.raises(errors.AclArgumentError) as info:
            s.wait(ev)
        assert info.value.argument == "other" and "never recorded" in info.value.problem
        assert info.value.call == "aclrtStreamWaitEvent" and info.value.code == 107000
        assert "never been recorded" in info.value.message
        ev.record(s)
        # an injected failure: the runtime's typed error; nothing is left waiting
        emulator.set_faults("aclrtStreamWaitEvent:1")
        with pytest.raises(errors.InternalError) as info:
            s.wait(ev)
        assert info.value.code == 507000
        emulator.set_faults(None)
        s.wait(ev)
    closed = acl_py.Stream()
    closed.close()
    with pytest.raises(errors.ClosedError):
        closed.wait(s)
    with pytest.raises(errors.ClosedError):
        s.wait(closed)
    s.close()


def _poll(done, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the work never completed"
        time.sleep(0.001)


def test_queries_never_block_and_release_what_waited(emulator):
    """Stream.query() / Event.query(): False while the work runs, True after, never
    blocking; a free deferred to the stream runs once a query finds the work done, without
    a synchronize."""
    a = acl_py.Stream()
    n = 32 << 20
    buf = acl_py.DeviceBuffer(n)
    ev = acl_py.Event()
    assert a.query() and not ev.query()             # idle; never recorded: not ready
    allocations = emulator.live_objects()["device_allocations"]
    _slow_then_mark(buf, a, 2)
    used = acl_py.DeviceBuffer(1 << 20)
    used.memset(1, stream=a)
    used.close()                                    # freed once a is past the memset
    ev.record(a)
    assert not a.query() and not ev.query()
    assert emulator.live_objects()["device_allocations"] == allocations + 1
    _poll(ev.query)
    assert emulator.live_objects()["device_allocations"] == allocations  # ran by the query
    used = acl_py.DeviceBuffer(1 << 20)
    _slow_then_mark(buf, a, 3)
    used.memset(1, stream=a)
    used.close()
    _poll(a.query)
    assert emulator.live_objects()["device_allocations"] == allocations
    emulator.set_faults("aclrtStreamQuery:1,aclrtQueryEventStatus:1")
    with pytest.raises(errors.InternalError):
        a.query()
    with pytest.raises(errors.InternalError):
        ev.query()
    emulator.set_faults(None)
    ev.close()
    with pytest.raises(errors.ClosedError):
        ev.query()
    a.close()
    with pytest.raises(errors.ClosedError):
        a.query()
    buf.close()


def test_stream_wait_across_devices_is_refused(emulator, run_python):
    """CANN's multi-device guide: a stream does not wait for an event of another device.
    Refused before any C call, naming the argument."""
    proc = run_python("""
        import acl_py
        from acl_py import errors
        s0 = acl_py.Stream(0)
        s1 = acl_py.Stream(1)
        e1 = acl_py.Event(1).record(s1)
        for other in (e1, s1):
            try:
                s0.wait(other)
            except errors.AclArgumentError as e:
                assert e.argument == "other" and "device 1" in str(e), e
            else:
                raise SystemExit("not refused")
        s0.wait(acl_py.Event(0).record(s0))
        print("ok")
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_threads_each_with_own_stream():
    errors_seen = []

    def worker(i):
        try:
            with acl_py.Stream() as s:
                for k in range(20):
                    x = np.full(1000, i * 100 + k, np.float64)
                    b = acl_py.DeviceBuffer(x.nbytes)
                    b.copy_from_host_async(x, s)
                    out = np.empty_like(x)
                    b.copy_to_host_async(out, s)
                    b.close()                          # deferred to the stream
                    s.synchronize()
                    assert (out == x).all()
        except Exception as e:                          # pragma: no cover - reported below
            errors_seen.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors_seen == []


def test_shared_stream_between_threads_is_safe():
    s = acl_py.Stream()
    bad = []

    def worker(i):
        try:
            for k in range(20):
                x = np.full(256, i * 1000 + k, np.int32)
                b = acl_py.DeviceBuffer(x.nbytes)
                b.copy_from_host_async(x, s)
                out = np.empty_like(x)
                b.copy_to_host_async(out, s)
                b.close()
                s.synchronize()
                if not (out == x).all():
                    bad.append((i, k))
        except Exception as e:                          # pragma: no cover
            bad.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert bad == []
    s.close()


def test_garbage_collection_inside_a_streams_lock_does_not_deadlock(run_python, emulator):
    """A collection can start at any allocation, also while a thread holds a stream's lock
    (deferring work, completing it); the releases it runs may defer work on that very
    stream. Run with every collection threshold that can fire inside the locked sections:
    no deadlock (the child would hang: a timeout fails), and every free deferred meanwhile
    runs at the next synchronize (none is lost)."""
    proc = run_python("""
        import gc, acl_py
        from acl_py import emulator as emu
        from acl_py.raw import lib
        acl_py.init()
        s = acl_py.Stream()
        st = s.state
        base = emu.live_objects()["device_allocations"]
        def noop(_):
            pass
        def garbage():
            buf = acl_py.DeviceBuffer(4096)     # unpooled: freed after its pending use
            buf.memset(1, stream=s)
            cycle = [buf]
            cycle.append(cycle)                 # found by the collector only
        for threshold in range(1, 40):
            for locked in (lambda: st.defer(st.seq, noop, None),
                           lambda: st.complete(st.seq - 1)):
                st.defer(st.seq, noop, None)    # work waiting: complete() takes the lock
                gc.disable()
                gc.collect()                    # counts from zero: the same place each run
                garbage()
                lib.aclrtSynchronizeStream(st.handle)   # complete(seq - 1) tells the truth
                gc.set_threshold(threshold)
                gc.enable()
                locked()
                gc.disable()
        gc.set_threshold(700)
        gc.enable()
        gc.collect()
        s.synchronize()
        print("LEFT", emu.live_objects()["device_allocations"] - base)
        s.close()
        acl_py.finalize()
    """, env={"ACL_PY_BACKEND": "emulator"}, timeout=30)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LEFT 0" in proc.stdout, proc.stdout


def test_last_use_recorded_by_threads_sharing_a_stream_never_goes_back(emulator):
    """Threads sharing a stream number their submissions, then record each buffer's last use
    (``uses[stream] = number``). A thread switched out between the two (here inside submit,
    at the keep-alive append, where CPython may switch) lets another thread submit a later
    launch using the same buffer and record it; the first thread's record must not then
    replace the later number with its own earlier one. Otherwise a synchronize that had
    reached only the first launch (another thread's, its target read before the later
    submission) makes the buffer look done while the later launch is queued: its memory is
    freed under that launch. Each record now stores the stream's newest number."""
    from _reliability import switched_out_in_submit
    s = acl_py.Stream()
    st = s.state
    n = live_allocations(emulator)
    x = acl_py.DeviceBuffer(4096)

    def other_threads():
        s.synchronize()                 # target: the first submission (this thread's)
        x.memset(1, stream=s)           # a later launch using x, recorded as such
        assert x.allocation.uses[st] == st.seq

    with switched_out_in_submit(s, other_threads):   # at the keep-alive append
        first = s.mark_used(x, keep=object())   # this thread's launch using x
    assert st.done == first < st.seq
    assert x.allocation.uses[st] == st.seq      # the later launch's number, not first
    x.close()
    assert live_allocations(emulator) == n + 1  # waits for the memset
    s.synchronize()
    assert live_allocations(emulator) == n
    s.close()


def live_allocations(emulator):
    return emulator.live_objects()["device_allocations"]


@pytest.mark.parametrize("window", ["after", "during"])
@pytest.mark.parametrize("launch", ["copy_from_host_async", "copy_to_host_async", "copy_from",
                                    "memset", "event_record"])
def test_enqueue_racing_another_threads_close_of_its_stream(emulator, monkeypatch, launch,
                                                            window):
    """A thread enqueues on a stream (checked open at the start) while another thread closes
    it. The close may end before the enqueue reaches its C call ("after": put right after
    the check), or be under way ("during": the other thread's destroy has run, the stream is
    not yet marked closed). Either way the enqueue must raise ClosedError without passing
    the handle to the runtime: a destroyed handle is a dangling pointer on a device (and an
    enqueue between the close's synchronize and its destroy breaks aclrtDestroyStream's
    rule that the stream be idle); before, it raised cffi's TypeError (the handle was None)
    or the runtime's refusal of a dead stream."""
    from acl_py import memory, stream as stream_mod
    n = emulator.live_objects()
    s = acl_py.Stream()
    st = s.state
    b, src = acl_py.DeviceBuffer(4096), acl_py.DeviceBuffer(4096)
    ev = acl_py.Event()
    enqueue = {
        "copy_from_host_async": lambda: b.copy_from_host_async(np.ones(1024, np.float32), s),
        "copy_to_host_async": lambda: b.copy_to_host_async(np.empty(1024, np.float32), s),
        "copy_from": lambda: b.copy_from(src, stream=s),
        "memset": lambda: b.memset(1, stream=s),
        "event_record": lambda: ev.record(s),
    }[launch]
    outcome = []

    def run_enqueue():
        try:
            enqueue()
            outcome.append(None)
        except BaseException as e:      # noqa: BLE001 - checked below
            outcome.append(e)

    if window == "after":
        real = stream_mod.state_for

        def checked_then_closed(*args, **kwargs):
            sst = real(*args, **kwargs)
            if sst is st:
                s.close()               # the other thread's close lands right after
            return sst

        monkeypatch.setattr(stream_mod, "state_for", checked_then_closed)
        monkeypatch.setattr(memory._stream, "state_for", checked_then_closed)
        run_enqueue()
        monkeypatch.undo()
    else:
        # The other thread's enqueue runs while this thread's close is between the destroy and
        # marking the stream closed; this thread goes on once that enqueue has finished or
        # waits for the stream's lock (an Event, set by a lock wrapper for that thread only).
        reached = threading.Event()
        real_lock = st.destroy_lock

        class SignallingLock:
            def __enter__(self):
                if threading.current_thread() is not closer:
                    reached.set()
                return real_lock.__enter__()

            def __exit__(self, *exc):
                return real_lock.__exit__(*exc)

            def acquire(self, *a, **k):
                if threading.current_thread() is not closer:
                    reached.set()
                return real_lock.acquire(*a, **k)

            def release(self):
                return real_lock.release()

        def enqueue_then_signal():
            try:
                run_enqueue()
            finally:
                reached.set()

        class EnqueuedWhileClosing(stream_mod.StreamState):
            __slots__ = ()

            def close(self):
                other.start()
                reached.wait()
                super().close()

        closer = threading.current_thread()
        other = threading.Thread(target=enqueue_then_signal, daemon=True)
        st.destroy_lock = SignallingLock()
        st.__class__ = EnqueuedWhileClosing
        try:
            s.close()
        finally:
            st.__class__ = stream_mod.StreamState
        other.join()
    for o in (b, src, ev):
        o.close()
    assert len(outcome) == 1
    assert isinstance(outcome[0], errors.ClosedError), repr(outcome[0])
    acl_py.release_unused()
    assert emulator.live_objects() == n     # the staging buffer too
