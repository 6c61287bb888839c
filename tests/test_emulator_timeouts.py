"""The emulator's bounded waits and stream failure modes, through the raw cffi binding, against
docs/emulator.md ("Timeouts and failed tasks"): aclrtSynchronizeStreamWithTimeout,
aclrtSynchronizeEventWithTimeout, aclrtSynchronizeDeviceWithTimeout (codes and argument rules
of hicann/runtime src/acl/aclrt_impl and src/runtime/api/impl/api_error.cc),
aclrtSetStreamFailureMode, and the task faults that make a stream's task hang or fail
(aclemuSetFaults "name:n:hang[=ms]" / "name:n:fail[=code]").

Timing is asserted only one way: a timed-out wait returned the timeout code and not before its
time had elapsed (the machine is shared; nothing is asserted about how late)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_status import errmsg, expect, ok  # noqa: F401
from _part_runs import has_stream_control

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: task faults are the emulator's")

H2D, D2H = 1, 2
STREAM_SYNC_TIMEOUT, EVENT_SYNC_TIMEOUT = 507046, 507047
PARAM_INVALID, INVALID_PARAM, INVALID_HANDLE = 107000, 100000, 107017
FEATURE_NOT_SUPPORT, VECTOR_CORE_EXCEPTION = 207000, 507035
CONTINUE, STOP = lib.ACL_CONTINUE_ON_FAILURE, lib.ACL_STOP_ON_FAILURE


def live():
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return (out.device_allocations, out.host_allocations, out.streams, out.events)


@pytest.fixture
def dev():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    before = live()
    yield 0
    ok(lib.aclemuSetFaults(ffi.NULL))    # releases any hung task
    lib.aclrtSynchronizeDevice()
    assert live() == before, "runtime objects leaked by the test"
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


@pytest.fixture
def stream(dev):
    p = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(p))
    yield p[0]
    ok(lib.aclemuSetFaults(ffi.NULL))
    ok(lib.aclrtDestroyStream(p[0]), "aclrtDestroyStream")


@pytest.fixture
def event(dev):
    p = ffi.new("aclrtEvent *")
    ok(lib.aclrtCreateEvent(p))
    yield p[0]
    ok(lib.aclemuSetFaults(ffi.NULL))
    lib.aclrtSynchronizeDevice()    # waits; a stopped stream's failure is the test's
    ok(lib.aclrtDestroyEvent(p[0]), "aclrtDestroyEvent")


@pytest.fixture
def counter(dev):
    """A 4-byte device word and a pinned host word."""
    d, h = ffi.new("void **"), ffi.new("void **")
    ok(lib.aclrtMalloc(d, 4, 0))
    ok(lib.aclrtMallocHost(h, 4))
    yield d[0], h[0]
    ok(lib.aclemuSetFaults(ffi.NULL))
    lib.aclrtSynchronizeDevice()    # waits; a stopped stream's failure is the test's
    ok(lib.aclrtFree(d[0]))
    ok(lib.aclrtFreeHost(h[0]))


def memset_async(ptr, value, s):
    ok(lib.aclrtMemsetAsync(ptr, 4, value, 4, s), "aclrtMemsetAsync")


def read_word(ptr):
    host = np.zeros(4, np.uint8)
    ok(lib.aclrtMemcpy(ffi.cast("void *", host.ctypes.data), 4, ptr, 4, D2H))
    return host.tolist()


def hang_next(call="aclrtMemsetAsync", ms=None):
    """The next call of `call` queues a task that hangs (for ms, or until released)."""
    spec = f"{call}:1:hang" + ("" if ms is None else f"={ms}")
    ok(lib.aclemuSetFaults(spec.encode()), "aclemuSetFaults")


# ---- the argument rules ---------------------------------------------------------------------

@pytest.mark.parametrize("timeout", [-2, -1000, -2**31])
def test_timeouts_below_minus_one_are_refused_by_every_call(stream, event, timeout):
    expect(lib.aclrtSynchronizeStreamWithTimeout(stream, timeout), PARAM_INVALID,
           "aclrtSynchronizeStreamWithTimeout", f"timeout {timeout}")
    expect(lib.aclrtSynchronizeEventWithTimeout(event, timeout), PARAM_INVALID,
           "aclrtSynchronizeEventWithTimeout", f"timeout {timeout}")
    expect(lib.aclrtSynchronizeDeviceWithTimeout(timeout), PARAM_INVALID,
           "aclrtSynchronizeDeviceWithTimeout", f"timeout {timeout}")


def test_timeout_zero_is_refused_as_cann_runtime_refuses_it(stream, event):
    """The header says 0 checks at once; CANN's runtime refuses it (api_error.cc: 'greater
    than or equal to -1 and not equal to 0'), and so does its API reference (-1 or > 0)."""
    for call, fn in [("aclrtSynchronizeStreamWithTimeout",
                      lambda: lib.aclrtSynchronizeStreamWithTimeout(stream, 0)),
                     ("aclrtSynchronizeEventWithTimeout",
                      lambda: lib.aclrtSynchronizeEventWithTimeout(event, 0)),
                     ("aclrtSynchronizeDeviceWithTimeout",
                      lambda: lib.aclrtSynchronizeDeviceWithTimeout(0))]:
        expect(fn(), PARAM_INVALID, call, "timeout 0")


def test_argument_order_is_cann_s(dev):
    # the ACL layer's timeout check comes before the event's NULL check and the handles ...
    expect(lib.aclrtSynchronizeEventWithTimeout(ffi.NULL, -5), PARAM_INVALID,
           "aclrtSynchronizeEventWithTimeout", "timeout")
    bogus = ffi.cast("void *", 0x1234)
    expect(lib.aclrtSynchronizeStreamWithTimeout(bogus, -5), PARAM_INVALID,
           "aclrtSynchronizeStreamWithTimeout", "timeout")
    # ... the runtime's (0) after them
    expect(lib.aclrtSynchronizeEventWithTimeout(ffi.NULL, 0), INVALID_PARAM,
           "aclrtSynchronizeEventWithTimeout", "event is NULL")
    expect(lib.aclrtSynchronizeStreamWithTimeout(bogus, 0), INVALID_HANDLE,
           "aclrtSynchronizeStreamWithTimeout", "not a live stream")


def test_idle_waits_succeed_with_any_valid_timeout(stream, event):
    for t in (-1, 1, 2**31 - 1):
        ok(lib.aclrtSynchronizeStreamWithTimeout(stream, t))
        ok(lib.aclrtSynchronizeStreamWithTimeout(ffi.NULL, t))
        ok(lib.aclrtSynchronizeEventWithTimeout(event, t))   # never recorded: at once
        ok(lib.aclrtSynchronizeDeviceWithTimeout(t))


# ---- timeouts ------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["stream", "default stream", "device"])
def test_hung_stream_times_out_with_507046_not_before_the_timeout(stream, counter, target):
    d, _h = counter
    s = ffi.NULL if target == "default stream" else stream
    hang_next()
    memset_async(d, 7, s)
    memset_async(d, 9, s)       # queued behind the hung task
    call = {"stream": lambda: lib.aclrtSynchronizeStreamWithTimeout(s, 300),
            "default stream": lambda: lib.aclrtSynchronizeStreamWithTimeout(s, 300),
            "device": lambda: lib.aclrtSynchronizeDeviceWithTimeout(300)}[target]
    name = ("aclrtSynchronizeDeviceWithTimeout" if target == "device"
            else "aclrtSynchronizeStreamWithTimeout")
    t0 = time.monotonic()
    rc = call()
    elapsed = time.monotonic() - t0
    expect(rc, STREAM_SYNC_TIMEOUT, name, "300 ms")
    assert elapsed >= 0.3
    q = ffi.new("aclrtStreamStatus *")
    ok(lib.aclrtStreamQuery(s, q))
    assert q[0] == lib.ACL_STREAM_STATUS_NOT_READY   # the work stays queued
    ok(lib.aclemuSetFaults(ffi.NULL))                # released: the tasks then run
    ok(lib.aclrtSynchronizeStreamWithTimeout(s, -1))
    assert read_word(d) == [9] * 4


def test_hung_event_times_out_with_507047(stream, event, counter):
    d, _h = counter
    hang_next()
    memset_async(d, 1, stream)
    ok(lib.aclrtRecordEvent(event, stream))
    t0 = time.monotonic()
    rc = lib.aclrtSynchronizeEventWithTimeout(event, 250)
    assert time.monotonic() - t0 >= 0.25
    expect(rc, EVENT_SYNC_TIMEOUT, "aclrtSynchronizeEventWithTimeout", "250 ms")
    ok(lib.aclemuSetFaults(ffi.NULL))
    ok(lib.aclrtSynchronizeEventWithTimeout(event, -1))


def test_a_slow_task_finishes_within_a_longer_timeout(stream, counter):
    d, _h = counter
    hang_next(ms=200)
    memset_async(d, 3, stream)
    t0 = time.monotonic()
    ok(lib.aclrtSynchronizeStreamWithTimeout(stream, 60000))
    assert time.monotonic() - t0 >= 0.2              # it did take its 200 ms
    assert read_word(d) == [3] * 4


def test_minus_one_waits_without_a_limit(stream, counter):
    """-1 is aclrtSynchronizeStream: it returns once the task is released, however long."""
    d, _h = counter
    hang_next()
    memset_async(d, 5, stream)
    result = {}

    def wait():
        ok(lib.aclrtSetDevice(0))
        result["rc"] = lib.aclrtSynchronizeStreamWithTimeout(stream, -1)
        ok(lib.aclrtResetDevice(0))
    t = threading.Thread(target=wait)
    t.start()
    t.join(0.5)
    assert t.is_alive(), "returned while the task still hung"
    ok(lib.aclemuSetFaults(ffi.NULL))
    t.join(30)
    assert not t.is_alive() and result["rc"] == 0
    assert read_word(d) == [5] * 4


def test_destroying_a_stream_releases_its_hung_task(dev, counter):
    d, _h = counter
    p = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(p))
    hang_next()
    memset_async(d, 4, p[0])
    expect(lib.aclrtSynchronizeStreamWithTimeout(p[0], 50), STREAM_SYNC_TIMEOUT,
           "aclrtSynchronizeStreamWithTimeout")
    ok(lib.aclrtDestroyStream(p[0]))   # drains: the hang ends with the stream
    assert read_word(d) == [4] * 4


def test_freeing_memory_a_hung_task_uses_is_refused(stream, counter):
    d, _h = counter
    hang_next()
    memset_async(d, 1, stream)
    expect(lib.aclrtSynchronizeStreamWithTimeout(stream, 20), STREAM_SYNC_TIMEOUT,
           "aclrtSynchronizeStreamWithTimeout")
    expect(lib.aclrtFree(d), PARAM_INVALID, "aclrtFree", "in use by pending work")


# ---- failure modes --------------------------------------------------------------------------

def fail_second_memset(code=None):
    spec = "aclrtMemsetAsync:2:fail" + ("" if code is None else f"={code}")
    ok(lib.aclemuSetFaults(spec.encode()), "aclemuSetFaults")


def three_memsets(d, s):
    """As the vendor's failure-mode example: a task, a failing one, a task (each sets the word
    to a new value, so the result says which ran)."""
    memset_async(d, 1, s)
    memset_async(d, 2, s)   # fails
    memset_async(d, 3, s)


def test_continue_on_failure_runs_later_tasks_and_reports_once(stream, counter):
    d, _h = counter
    fail_second_memset()
    three_memsets(d, stream)
    expect(lib.aclrtSynchronizeStream(stream), VECTOR_CORE_EXCEPTION, "aclrtSynchronizeStream",
           "aclrtMemsetAsync", "failed")
    assert read_word(d) == [3] * 4      # the task after the failed one ran
    ok(lib.aclrtSynchronizeStream(stream))   # reported once
    memset_async(d, 6, stream)
    ok(lib.aclrtSynchronizeStreamWithTimeout(stream, 10000))
    assert read_word(d) == [6] * 4


def test_stop_on_failure_stops_the_stream_for_good(stream, event, counter):
    d, _h = counter
    ok(lib.aclrtSetStreamFailureMode(stream, STOP))
    fail_second_memset(507015)
    three_memsets(d, stream)
    ok(lib.aclrtRecordEvent(event, stream))
    expect(lib.aclrtSynchronizeStream(stream), 507015, "aclrtSynchronizeStream",
           "ACL_STOP_ON_FAILURE")
    assert read_word(d) == [1] * 4      # the task after the failed one did not run
    # every later synchronize says so; the event's record completed, with the stream's error
    expect(lib.aclrtSynchronizeStreamWithTimeout(stream, 1000), 507015,
           "aclrtSynchronizeStreamWithTimeout")
    expect(lib.aclrtSynchronizeEvent(event), 507015, "aclrtSynchronizeEvent",
           "ACL_STOP_ON_FAILURE")
    # new tasks are accepted and do not run (the API reference: none may be queued after it)
    memset_async(d, 8, stream)
    expect(lib.aclrtSynchronizeStream(stream), 507015, "aclrtSynchronizeStream")
    assert read_word(d) == [1] * 4
    expect(lib.aclrtSynchronizeDevice(), 507015, "aclrtSynchronizeDevice")
    expect(lib.aclrtSetStreamFailureMode(stream, CONTINUE), FEATURE_NOT_SUPPORT,
           "aclrtSetStreamFailureMode", "cannot be changed back")


def test_failure_mode_rules(stream, dev):
    ok(lib.aclrtSetStreamFailureMode(stream, CONTINUE))      # the default again: fine
    ok(lib.aclrtSetStreamFailureMode(stream, 2))             # bit 0 counts: continue
    if has_stream_control():                                 # the default stream
        ok(lib.aclrtSetStreamFailureMode(ffi.NULL, CONTINUE))
    else:                                                    # no GetCurStream for NULL
        expect(lib.aclrtSetStreamFailureMode(ffi.NULL, CONTINUE), PARAM_INVALID,
               "aclrtSetStreamFailureMode", "stream is NULL")
    ok(lib.aclrtSetStreamFailureMode(stream, 3))             # bit 0 set: stop
    ok(lib.aclrtSetStreamFailureMode(stream, STOP))          # the same again: fine
    expect(lib.aclrtSetStreamFailureMode(ffi.cast("void *", 0x1234), STOP), INVALID_HANDLE,
           "aclrtSetStreamFailureMode", "not a live stream")


def test_a_stop_mode_stream_that_never_fails_runs_everything(stream, counter):
    d, _h = counter
    ok(lib.aclrtSetStreamFailureMode(stream, STOP))
    for v in (1, 2, 3):
        memset_async(d, v, stream)
    ok(lib.aclrtSynchronizeStream(stream))
    assert read_word(d) == [3] * 4


def test_task_fault_spec_syntax(dev):
    for bad in ("aclrtMemsetAsync:1:explode", "aclrtMemsetAsync:1:fail=", "aclrtMemsetAsync:1:"
                "hang=x", "aclrtMemsetAsync:1:fail=0"):
        assert lib.aclemuSetFaults(bad.encode()) == INVALID_PARAM, bad
        assert "aclemuSetFaults" in errmsg()
    ok(lib.aclemuSetFaults(b"aclrtMemsetAsync:1:hang=5, aclrtMemcpyAsync:2:fail=507015"))
    ok(lib.aclemuSetFaults(ffi.NULL))
