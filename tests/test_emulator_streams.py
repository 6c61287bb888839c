"""The emulator's stream configuration and control, notifies and stream memory values, through
the raw cffi binding, against docs/emulator.md ("Stream configuration, stop and abort"):
aclrtCreateStreamWithConfig and the stream queries, aclrtStreamStop/aclrtStreamAbort,
aclrtRegStreamStateCallback, aclrtResetEvent, the notify calls and aclrtValueWrite/Wait, with
the argument rules and codes of hicann/runtime src/acl/aclrt_impl and src/runtime/api.

Timing is asserted only one way (a wait lasted at least so long); the machine is shared."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_objects import allocated_bytes
from _emu_status import errmsg, expect, ok  # noqa: F401
from _part_runs import has_stream_control, only_where

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: task faults are the emulator's")

H2D, D2H, D2D = 1, 2, 3
PARAM_INVALID, INVALID_PARAM, INVALID_HANDLE, CONTEXT_NULL = 107000, 100000, 107017, 107002
INTERNAL, FEATURE_NOT_SUPPORT, VECTOR_CORE_EXCEPTION = 507000, 207000, 507035
TASK_TIMEOUT = 107020
BOGUS = ffi.cast("void *", 0x1234)
STREAM_CONTROL = has_stream_control()
# the tests of stop, abort and the value tasks: defined on the parts with them; on the
# others each call is refused (test_stop_abort_and_value_tasks_are_atlas_a2_a3_and_950_only),
# so they could never run there
needs_stream_control = only_where(STREAM_CONTROL)


def live():
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return (out.device_allocations, out.streams, out.events, out.notifies)


@pytest.fixture
def dev():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    before = live()
    yield 0
    ok(lib.aclemuSetFaults(ffi.NULL))
    lib.aclrtSynchronizeDevice()
    assert live() == before, "runtime objects leaked by the test"
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


def new_stream(priority=None, flags=0):
    p = ffi.new("aclrtStream *")
    if priority is None:
        ok(lib.aclrtCreateStream(p))
    else:
        ok(lib.aclrtCreateStreamWithConfig(p, priority, flags))
    return p[0]


@pytest.fixture
def streams(dev):
    made = []

    def make(priority=None, flags=0):
        made.append(new_stream(priority, flags))
        return made[-1]
    yield make
    ok(lib.aclemuSetFaults(ffi.NULL))
    for s in made:
        lib.aclrtSynchronizeStream(s)   # a stopped stream's failure is the test's
        ok(lib.aclrtDestroyStream(s), "aclrtDestroyStream")


@pytest.fixture
def word(dev):
    """An 8-byte device word, zeroed."""
    d = ffi.new("void **")
    ok(lib.aclrtMalloc(d, 8, 0))
    ok(lib.aclrtMemset(d[0], 8, 0, 8))
    yield d[0]
    ok(lib.aclemuSetFaults(ffi.NULL))
    lib.aclrtSynchronizeDevice()
    ok(lib.aclrtFree(d[0]))


def read_u64(ptr):
    host = np.zeros(1, np.uint64)
    ok(lib.aclrtMemcpy(ffi.cast("void *", host.ctypes.data), 8, ptr, 8, D2H))
    return int(host[0])


def query(s):
    q = ffi.new("aclrtStreamStatus *")
    ok(lib.aclrtStreamQuery(s, q))
    return q[0]


def info(s):
    sid, prio, flags = ffi.new("int32_t *"), ffi.new("uint32_t *"), ffi.new("uint32_t *")
    ok(lib.aclrtStreamGetId(s, sid))
    ok(lib.aclrtStreamGetPriority(s, prio))
    ok(lib.aclrtStreamGetFlags(s, flags))
    return sid[0], prio[0], flags[0]


def hang_next(call, ms=None):
    ok(lib.aclemuSetFaults(f"{call}:1:hang{'' if ms is None else f'={ms}'}".encode()))


def in_thread_without_device(fn):
    """fn() on a fresh thread, which has no current device; returns its result."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("rc", fn()))
    t.start()
    t.join()
    return out["rc"]


# ---- configuration and queries --------------------------------------------------------------

def test_streams_keep_their_priority_flags_and_lowest_free_id(dev):
    made = [new_stream(3, lib.ACL_STREAM_FAST_LAUNCH | lib.ACL_STREAM_FAST_SYNC), new_stream()]
    try:
        a, b = made
        id_a, id_b = info(a)[0], info(b)[0]
        assert info(a) == (id_a, 3, lib.ACL_STREAM_FAST_LAUNCH | lib.ACL_STREAM_FAST_SYNC)
        assert info(b) == (id_b, 0, 0)    # aclrtCreateStream: highest priority, no flags
        assert 1 <= id_a < id_b           # (other tests' streams may hold lower ids)
        assert info(ffi.NULL) == (0, 0, 0)    # the default stream
        made.append(new_stream())
        ok(lib.aclrtDestroyStream(made.pop(0)))
        made.append(new_stream())
        assert info(made[-1])[0] == id_a  # the lowest free id: the one a destroyed stream freed
        assert len({info(s)[0] for s in made}) == 3
    finally:
        for s in made:
            ok(lib.aclrtDestroyStream(s))


def test_priority_outside_0_to_7_is_clamped_and_unknown_flag_bits_dropped(streams):
    """CANN's runtime clamps the priority taken as int32_t (api_error.cc StreamCreate) and
    the ACL layer passes on only the flags it knows (aclrtCreateStreamWithConfigImpl)."""
    assert info(streams(8))[1:] == (7, 0)
    assert info(streams(0xFFFFFFFF))[1:] == (0, 0)      # -1 as int32_t
    assert info(streams(5, 0xFFFFFFC0 | lib.ACL_STREAM_HUGE))[1:] == (5, lib.ACL_STREAM_HUGE)
    least, greatest = ffi.new("int32_t *"), ffi.new("int32_t *")
    ok(lib.aclrtDeviceGetStreamPriorityRange(least, greatest))
    assert (least[0], greatest[0]) == (7, 0)
    ok(lib.aclrtDeviceGetStreamPriorityRange(ffi.NULL, ffi.NULL))


def test_query_arguments_give_cann_s_codes(streams):
    s = streams()
    expect(lib.aclrtCreateStreamWithConfig(ffi.NULL, 0, 0), INVALID_PARAM,
           "aclrtCreateStreamWithConfig", "stream (output pointer) is NULL")
    expect(lib.aclrtStreamGetId(s, ffi.NULL), INVALID_PARAM, "aclrtStreamGetId", "streamId")
    expect(lib.aclrtStreamGetPriority(s, ffi.NULL), INVALID_PARAM, "aclrtStreamGetPriority",
           "priority")
    expect(lib.aclrtStreamGetFlags(s, ffi.NULL), INVALID_PARAM, "aclrtStreamGetFlags", "flags")
    out = ffi.new("uint32_t *")
    expect(lib.aclrtStreamGetFlags(BOGUS, out), INVALID_HANDLE, "aclrtStreamGetFlags",
           "not a live stream")
    # a current device is needed for the default stream, and by GetPriority/GetFlags always;
    # GetId answers for a given stream without one
    sid = ffi.new("int32_t *")
    assert in_thread_without_device(lambda: lib.aclrtStreamGetId(ffi.NULL, sid)) == CONTEXT_NULL
    assert in_thread_without_device(lambda: lib.aclrtStreamGetId(s, sid)) == 0
    assert sid[0] == info(s)[0]
    assert in_thread_without_device(lambda: lib.aclrtStreamGetPriority(s, out)) == CONTEXT_NULL
    assert in_thread_without_device(
        lambda: lib.aclrtCreateStreamWithConfig(ffi.new("aclrtStream *"), 0, 0)) == CONTEXT_NULL


def test_a_device_use_only_stream_takes_no_host_task_and_never_waits(streams, word):
    s = streams(0, lib.ACL_STREAM_DEVICE_USE_ONLY)
    assert info(s)[2] == lib.ACL_STREAM_DEVICE_USE_ONLY
    expect(lib.aclrtMemsetAsync(word, 8, 1, 8, s), INTERNAL, "aclrtMemsetAsync",
           "ACL_STREAM_DEVICE_USE_ONLY")
    if STREAM_CONTROL:
        expect(lib.aclrtValueWrite(word, 1, 0, s), INTERNAL, "aclrtValueWrite",
               "ACL_STREAM_DEVICE_USE_ONLY")
    else:       # the part's refusal comes first (api_c_memory.cc rtsValueWrite)
        expect(lib.aclrtValueWrite(word, 1, 0, s), FEATURE_NOT_SUPPORT, "aclrtValueWrite")
    expect(lib.aclrtSetStreamFailureMode(s, lib.ACL_STOP_ON_FAILURE), FEATURE_NOT_SUPPORT,
           "aclrtSetStreamFailureMode", "ACL_STREAM_DEVICE_USE_ONLY")
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtSynchronizeStreamWithTimeout(s, 1))
    assert query(s) == lib.ACL_STREAM_STATUS_COMPLETE
    if STREAM_CONTROL:
        ok(lib.aclrtStreamStop(s))
    else:
        expect(lib.aclrtStreamStop(s), FEATURE_NOT_SUPPORT, "aclrtStreamStop")
    assert read_u64(word) == 0


def test_a_persistent_stream_s_synchronize_returns_at_once(streams, word):
    """CANN answers synchronize and query of ACL_STREAM_PERSISTENT (and CPU_SCHEDULE) streams
    at once; their tasks run in order as any stream's (the emulator has no models)."""
    s = streams(0, lib.ACL_STREAM_PERSISTENT)
    hang_next("aclrtMemsetAsync")
    ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s))
    ok(lib.aclrtSynchronizeStream(s))        # the hung task is not waited for
    assert query(s) == lib.ACL_STREAM_STATUS_COMPLETE
    ok(lib.aclemuSetFaults(ffi.NULL))


# ---- stop and abort ---------------------------------------------------------------------------

@needs_stream_control
def test_abort_ends_the_running_task_drops_the_queued_ones_and_reports_once(streams, word):
    s = streams()
    hang_next("aclrtMemsetAsync")
    ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s))      # runs and hangs
    ok(lib.aclrtValueWrite(word, 2, 0, s))          # queued behind it
    time.sleep(0.05)
    ok(lib.aclrtStreamAbort(s))
    assert query(s) == lib.ACL_STREAM_STATUS_COMPLETE  # nothing left when abort returns
    expect(lib.aclrtSynchronizeStream(s), VECTOR_CORE_EXCEPTION, "aclrtSynchronizeStream",
           "stopped midway")
    assert read_u64(word) == 0                      # neither task took effect
    ok(lib.aclrtSynchronizeStream(s))               # reported once; the stream goes on
    ok(lib.aclrtValueWrite(word, 3, 0, s))
    ok(lib.aclrtSynchronizeStream(s))
    assert read_u64(word) == 3


@needs_stream_control
def test_abort_of_an_idle_or_default_stream_succeeds(streams):
    s = streams()
    ok(lib.aclrtStreamAbort(s))
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtStreamAbort(ffi.NULL))              # the default stream
    ok(lib.aclrtSynchronizeStream(ffi.NULL))


@needs_stream_control
def test_stop_ends_the_running_task_only(streams, word):
    s = streams()
    hang_next("aclrtMemsetAsync")
    ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s))
    ok(lib.aclrtValueWrite(word, 2, 0, s))
    time.sleep(0.05)
    ok(lib.aclrtStreamStop(s))
    expect(lib.aclrtSynchronizeStream(s), VECTOR_CORE_EXCEPTION, "aclrtSynchronizeStream",
           "aclrtMemsetAsync")
    assert read_u64(word) == 2                      # the queued task ran


def test_stop_and_abort_arguments(streams):
    expect(lib.aclrtStreamStop(ffi.NULL), PARAM_INVALID, "aclrtStreamStop",
           "default stream cannot be stopped")
    expect(lib.aclrtStreamStop(BOGUS), INVALID_HANDLE, "aclrtStreamStop", "not a live stream")
    expect(lib.aclrtStreamAbort(BOGUS), INVALID_HANDLE, "aclrtStreamAbort", "not a live stream")
    s = streams()
    assert in_thread_without_device(lambda: lib.aclrtStreamAbort(s)) == CONTEXT_NULL


# ---- stream state callbacks -------------------------------------------------------------------

def test_state_callbacks_run_after_create_and_before_destroy_in_name_order(dev):
    seen = []

    @ffi.callback("aclrtStreamStateCallback")
    def second(stream, state, args):
        seen.append(("b", stream, state, ffi.from_handle(args)))

    @ffi.callback("aclrtStreamStateCallback")
    def first(stream, state, args):
        # at DESTROY_PRE the stream is still live
        q = ffi.new("aclrtStreamStatus *")
        seen.append(("a", stream, state, lib.aclrtStreamQuery(stream, q)))

    tag = ffi.new_handle("tag")
    ok(lib.aclrtRegStreamStateCallback(b"zz-second", second, tag))
    ok(lib.aclrtRegStreamStateCallback(b"aa-first", first, ffi.NULL))
    try:
        expect(lib.aclrtRegStreamStateCallback(b"aa-first", first, ffi.NULL), PARAM_INVALID,
               "aclrtRegStreamStateCallback", "registered already")
        s = new_stream()
        assert seen == [("a", s, lib.ACL_RT_STREAM_STATE_CREATE_POST, 0),
                        ("b", s, lib.ACL_RT_STREAM_STATE_CREATE_POST, "tag")]
        del seen[:]
        ok(lib.aclrtDestroyStream(s))
        assert seen == [("a", s, lib.ACL_RT_STREAM_STATE_DESTROY_PRE, 0),
                        ("b", s, lib.ACL_RT_STREAM_STATE_DESTROY_PRE, "tag")]
    finally:
        ok(lib.aclrtRegStreamStateCallback(b"aa-first", ffi.NULL, ffi.NULL))
        ok(lib.aclrtRegStreamStateCallback(b"zz-second", ffi.NULL, ffi.NULL))
    del seen[:]
    ok(lib.aclrtDestroyStream(new_stream()))
    assert seen == []
    ok(lib.aclrtRegStreamStateCallback(b"never-registered", ffi.NULL, ffi.NULL))
    expect(lib.aclrtRegStreamStateCallback(ffi.NULL, first, ffi.NULL), INVALID_PARAM,
           "aclrtRegStreamStateCallback", "regName is NULL")


# ---- aclrtResetEvent --------------------------------------------------------------------------

def test_reset_event_returns_it_to_not_recorded_in_stream_order(streams):
    s = streams()
    e = ffi.new("aclrtEvent *")
    ok(lib.aclrtCreateEvent(e))
    status = ffi.new("aclrtEventRecordedStatus *")
    try:
        ok(lib.aclrtRecordEvent(e[0], s))
        ok(lib.aclrtSynchronizeStream(s))
        ok(lib.aclrtQueryEventStatus(e[0], status))
        assert status[0] == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE
        ok(lib.aclrtResetEvent(e[0], s))
        ok(lib.aclrtSynchronizeStream(s))
        ok(lib.aclrtQueryEventStatus(e[0], status))
        assert status[0] == lib.ACL_EVENT_RECORDED_STATUS_NOT_READY
        ok(lib.aclrtRecordEvent(e[0], s))
        ok(lib.aclrtSynchronizeEvent(e[0]))
        ok(lib.aclrtQueryEventStatus(e[0], status))
        assert status[0] == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE
        expect(lib.aclrtResetEvent(ffi.NULL, s), INVALID_PARAM, "aclrtResetEvent", "event")
        expect(lib.aclrtResetEvent(e[0], BOGUS), INVALID_HANDLE, "aclrtResetEvent",
               "not a live stream")
    finally:
        ok(lib.aclrtDestroyEvent(e[0]))


def test_a_wait_queued_after_a_reset_waits_for_the_next_record(streams, word):
    """CANN's wait task waits for the event's flag, which a reset task clears (hicann/runtime
    src/runtime/core/src/event/event.cc Event::WaitSendCheck sends the wait when a reset
    followed the completed record): the record made before the reset no longer satisfies it.
    A wait nothing will satisfy ends with its stream's destruction (or a stop or an abort)."""
    s1, s2 = streams(), streams()
    e = ffi.new("aclrtEvent *")
    ok(lib.aclrtCreateEvent(e))
    try:
        ok(lib.aclrtRecordEvent(e[0], s1))
        ok(lib.aclrtSynchronizeStream(s1))
        ok(lib.aclrtResetEvent(e[0], s2))
        ok(lib.aclrtStreamWaitEvent(s2, e[0]))      # accepted: the event has been recorded
        ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s2))  # queued behind the wait
        time.sleep(0.1)
        assert query(s2) == lib.ACL_STREAM_STATUS_NOT_READY
        assert read_u64(word) == 0
        ok(lib.aclrtRecordEvent(e[0], s1))          # the next record releases it
        ok(lib.aclrtSynchronizeStream(s2))
        assert read_u64(word) == 0x0101010101010101
        ok(lib.aclrtResetEvent(e[0], s2))           # a wait queued before the reset passes
        ok(lib.aclrtSynchronizeStream(s2))
        ok(lib.aclrtRecordEvent(e[0], s1))
        ok(lib.aclrtStreamWaitEvent(s2, e[0]))
        ok(lib.aclrtResetEvent(e[0], s2))
        ok(lib.aclrtSynchronizeStream(s2))
        p = ffi.new("aclrtStream *")                # a wait nothing records again
        ok(lib.aclrtCreateStream(p))
        ok(lib.aclrtResetEvent(e[0], p[0]))
        ok(lib.aclrtStreamWaitEvent(p[0], e[0]))
        ok(lib.aclrtDestroyStream(p[0]))            # ends it (it waited for ever before)
    finally:
        ok(lib.aclrtDestroyEvent(e[0]))


@needs_stream_control
def test_a_stop_before_the_hang_s_release_still_stops_the_task(streams, word):
    """aclrtStreamStop does not wait for the task it stops; a hang released right after (the
    end of an inject_faults block) must not end the task normally first: the stop came
    first, so the next synchronize reports the stopped task (507035) every time."""
    s = streams()
    for _ in range(3):
        hang_next("aclrtMemsetAsync")
        ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s))  # runs and hangs
        time.sleep(0.05)
        ok(lib.aclrtStreamStop(s))
        ok(lib.aclemuSetFaults(ffi.NULL))           # releases the hang at once
        expect(lib.aclrtSynchronizeStream(s), VECTOR_CORE_EXCEPTION, "aclrtSynchronizeStream",
               "stopped midway")
        assert read_u64(word) == 0                  # the stopped memset did not take effect


# ---- notifies ---------------------------------------------------------------------------------

@pytest.fixture
def notify(dev):
    n = ffi.new("aclrtNotify *")
    ok(lib.aclrtCreateNotify(n, lib.ACL_NOTIFY_DEFAULT))
    yield n[0]
    ok(lib.aclemuSetFaults(ffi.NULL))
    lib.aclrtSynchronizeDevice()
    ok(lib.aclrtDestroyNotify(n[0]))


def test_a_notify_orders_two_streams(streams, notify, word):
    s1, s2 = streams(), streams()
    copy = ffi.new("void **")
    ok(lib.aclrtMalloc(copy, 8, 0))
    try:
        hang_next("aclrtMemsetAsync", ms=200)
        ok(lib.aclrtMemsetAsync(word, 8, 5, 8, s1))      # slow: 200 ms
        ok(lib.aclrtRecordNotify(notify, s1))
        ok(lib.aclrtWaitAndResetNotify(notify, s2, 0))
        ok(lib.aclrtMemcpyAsync(copy[0], 8, word, 8, D2D, s2))  # runs after the memset
        t0 = time.monotonic()
        ok(lib.aclrtSynchronizeStreamWithTimeout(s2, 10000))
        assert time.monotonic() - t0 >= 0.1
        assert read_u64(copy[0]) == 0x0505050505050505
    finally:
        ok(lib.aclrtFree(copy[0]))
    # the wait reset it: a second wait needs a second record
    ok(lib.aclrtWaitAndResetNotify(notify, s2, 1))
    t0 = time.monotonic()
    expect(lib.aclrtSynchronizeStream(s2), TASK_TIMEOUT, "aclrtSynchronizeStream",
           "aclrtWaitAndResetNotify")
    assert time.monotonic() - t0 >= 0.9


@needs_stream_control
def test_a_wait_for_a_notify_ends_with_an_abort(streams, notify):
    s = streams()
    ok(lib.aclrtWaitAndResetNotify(notify, s, 0))   # nobody records it
    time.sleep(0.02)
    ok(lib.aclrtStreamAbort(s))
    expect(lib.aclrtSynchronizeStream(s), VECTOR_CORE_EXCEPTION, "aclrtSynchronizeStream")


def test_notify_arguments_give_cann_s_codes(streams, notify):
    s = streams()
    n = ffi.new("aclrtNotify *")
    expect(lib.aclrtCreateNotify(ffi.NULL, 0), INVALID_PARAM, "aclrtCreateNotify", "notify")
    expect(lib.aclrtCreateNotify(n, 2), PARAM_INVALID, "aclrtCreateNotify", "flag 2")
    assert in_thread_without_device(lambda: lib.aclrtCreateNotify(n, 0)) == CONTEXT_NULL
    for call, fn in [("aclrtRecordNotify", lambda x: lib.aclrtRecordNotify(x, s)),
                     ("aclrtWaitAndResetNotify", lambda x: lib.aclrtWaitAndResetNotify(x, s, 0)),
                     ("aclrtDestroyNotify", lib.aclrtDestroyNotify)]:
        expect(fn(ffi.NULL), INVALID_PARAM, call, "notify is NULL")
        expect(fn(BOGUS), INVALID_HANDLE, call, "not a live notify")
    expect(lib.aclrtRecordNotify(notify, BOGUS), INVALID_HANDLE, "aclrtRecordNotify",
           "not a live stream")
    ok(lib.aclrtCreateNotify(n, lib.ACL_NOTIFY_DEVICE_USE_ONLY))
    ok(lib.aclrtDestroyNotify(n[0]))
    expect(lib.aclrtDestroyNotify(n[0]), INVALID_HANDLE, "aclrtDestroyNotify")


RESET_SCRIPT = """
from acl_py.raw import ffi, lib
lib.aclInit(ffi.NULL)
assert lib.aclrtSetDevice(0) == 0
n, live = ffi.new("aclrtNotify *"), ffi.new("aclemuLiveObjects *")
assert lib.aclrtCreateNotify(n, 0) == 0
lib.aclemuGetLiveObjects(live)
print(live.notifies)
assert lib.aclrtResetDevice(0) == 0    # the device's last reference: torn down
lib.aclemuGetLiveObjects(live)
print(live.notifies, lib.aclrtDestroyNotify(n[0]))
"""


def test_reset_device_destroys_its_notifies(run_python):
    r = run_python(RESET_SCRIPT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "0", str(INVALID_HANDLE)]


DEFAULT_STREAM_STATE_SCRIPT = """
from acl_py.raw import ffi, lib
seen = []
CREATE, DESTROY = lib.ACL_RT_STREAM_STATE_CREATE_POST, lib.ACL_RT_STREAM_STATE_DESTROY_PRE

@ffi.callback("aclrtStreamStateCallback")
def cb(stream, state, args):
    seen.append((int(ffi.cast("uintptr_t", stream)), int(state)))

lib.aclInit(ffi.NULL)
assert lib.aclrtRegStreamStateCallback(b"watch", cb, ffi.NULL) == 0
assert lib.aclrtSetDevice(0) == 0
at_set = list(seen)                     # the default stream is created now, not at first use
d, p = ffi.new("aclrtStream *"), ffi.new("aclrtStream *")
assert lib.aclrtCtxGetCurrentDefaultStream(d) == 0
print(at_set == [(int(ffi.cast("uintptr_t", d[0])), CREATE)])
assert lib.aclrtSetDevice(0) == 0       # a second reference: no stream is created
assert lib.aclrtCreateStream(p) == 0
assert lib.aclrtResetDevice(0) == 0     # not the last reference: nothing destroyed
print(seen == [(int(ffi.cast("uintptr_t", d[0])), CREATE), (int(ffi.cast("uintptr_t", p[0])), CREATE)])
del seen[:]
assert lib.aclrtResetDevice(0) == 0     # the last: the default stream, then the one left
print(seen == [(int(ffi.cast("uintptr_t", d[0])), DESTROY), (int(ffi.cast("uintptr_t", p[0])), DESTROY)])
del seen[:]
assert lib.aclrtSetDevice(0) == 0
print(len(seen) == 1 and seen[0][1] == CREATE)
assert lib.aclFinalize() == 0           # aclFinalize resets the device too
print(seen[1:] == [(seen[0][0], DESTROY)])
"""


def test_the_default_stream_s_state_callbacks_run_at_set_device_and_reset(run_python):
    """CANN creates a device's default (primary) stream when the device opens
    (src/runtime/core/src/device/raw_device.cc RawDevice::Start -> Stream::Setup, which
    calls the stream state callbacks with CREATE_POST) and calls them with DESTROY_PRE for it
    when the primary context goes (runtime.cc PrimaryContextCallBack), before the context's
    teardown does so for every stream still alive (context.cc TearDownStreamAndFinalize)."""
    r = run_python(DEFAULT_STREAM_STATE_SCRIPT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True"] * 5


# ---- aclrtValueWrite / aclrtValueWait ---------------------------------------------------------

@needs_stream_control
@pytest.mark.parametrize("flag,value,now,met", [
    ("GEQ", 5, 5, True), ("GEQ", 5, 7, True), ("GEQ", 5, 4, False),
    ("GEQ", 1, 2**64 - 1, False),                    # (int64_t)(now - value) < 0
    ("EQ", 9, 9, True), ("EQ", 9, 8, False),
    ("AND", 0b1010, 0b0010, True), ("AND", 0b1010, 0b0101, False),
    ("NOR", 0, 2**64 - 1, False), ("NOR", 1, 2, True)])
def test_value_wait_comparisons(streams, word, flag, value, now, met):
    s1, s2 = streams(), streams()
    ok(lib.aclrtValueWrite(word, now, 0, s1))
    ok(lib.aclrtSynchronizeStream(s1))
    ok(lib.aclrtValueWait(word, value, getattr(lib, f"ACL_STREAM_WAIT_VALUE_{flag}"), s2))
    rc = lib.aclrtSynchronizeStreamWithTimeout(s2, 100)
    assert rc == (0 if met else 507046), errmsg()
    if not met:
        ok(lib.aclrtStreamAbort(s2))
        lib.aclrtSynchronizeStream(s2)


@needs_stream_control
def test_a_value_wait_holds_its_stream_until_another_writes(streams, word):
    s1, s2 = streams(), streams()
    ok(lib.aclrtValueWait(word, 100, lib.ACL_STREAM_WAIT_VALUE_EQ, s1))
    ok(lib.aclrtValueWrite(word, 7, 0, s1))           # queued behind the wait
    time.sleep(0.1)
    assert query(s1) == lib.ACL_STREAM_STATUS_NOT_READY
    assert read_u64(word) == 0
    ok(lib.aclrtValueWrite(word, 100, 0, s2))
    ok(lib.aclrtSynchronizeStream(s1))
    assert read_u64(word) == 7


def test_value_arguments_give_cann_s_codes(streams, word):
    """acl's NULL check of devAddr comes before the runtime's check of the part's feature
    (hicann/runtime src/acl/aclrt_impl/memory.cpp aclrtValueWriteImpl, then
    src/runtime/api/api_c_memory.cc rtsValueWrite/rtsValueWait): 100000 on every part; the
    other arguments are judged only on the parts with the value tasks, elsewhere 207000."""
    def expect_here(rc, code, call, words):
        if STREAM_CONTROL:
            expect(rc, code, call, words)
        else:
            expect(rc, FEATURE_NOT_SUPPORT, call, "no stream value tasks")
    s = streams()
    host = ffi.new("void **")
    ok(lib.aclrtMallocHost(host, 16))
    try:
        for call, fn in [("aclrtValueWrite", lib.aclrtValueWrite),
                         ("aclrtValueWait", lib.aclrtValueWait)]:
            expect(fn(ffi.NULL, 1, 0, s), INVALID_PARAM, call, "devAddr is NULL")
            expect_here(fn(word, 1, 0, BOGUS), INVALID_HANDLE, call, "not a live stream")
            expect_here(fn(host[0], 1, 0, s), PARAM_INVALID, call, "device allocation")
            # 4 bytes before the end of what the runtime allocated for the word's 8
            expect_here(fn(ffi.cast("char *", word) + allocated_bytes(8) - 4, 1, 0, s),
                        PARAM_INVALID, call, "8 bytes are not inside")
        expect_here(lib.aclrtValueWrite(word, 1, 1, s), PARAM_INVALID, "aclrtValueWrite",
                    "flag 1")
        expect_here(lib.aclrtValueWait(word, 1, 4, s), PARAM_INVALID, "aclrtValueWait",
                    "flag 4")
    finally:
        ok(lib.aclrtFreeHost(host[0]))


# ---- what depends on the part (ACL_EMU_SOC is read once per process) --------------------------

SOC_SCRIPT = """
from acl_py.raw import ffi, lib
lib.aclInit(ffi.NULL)
assert lib.aclrtSetDevice(0) == 0
p, d = ffi.new("aclrtStream *"), ffi.new("void **")
assert lib.aclrtCreateStream(p) == 0 and lib.aclrtMalloc(d, 8, 0) == 0
print(lib.aclrtStreamAbort(p[0]), lib.aclrtStreamStop(p[0]),
      lib.aclrtValueWrite(d[0], 1, 0, p[0]), lib.aclrtValueWait(d[0], 0, 0, p[0]))
"""


@pytest.mark.parametrize("soc,codes", [("Ascend310P3", [FEATURE_NOT_SUPPORT] * 4),
                                       ("Ascend910A", [FEATURE_NOT_SUPPORT] * 4),
                                       ("Ascend910_9391", [0] * 4),
                                       ("Ascend950PR_9599", [0] * 4)])
def test_stop_abort_and_value_tasks_are_atlas_a2_a3_and_950_only(run_python, soc, codes):
    r = run_python(SOC_SCRIPT, env={"ACL_EMU_SOC": soc})
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == codes
