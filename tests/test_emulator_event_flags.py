"""The emulator's event flags through the raw cffi binding, against docs/emulator.md ("Event
flags"): aclrtCreateEventWithFlag, aclrtCreateEventExWithFlag, aclrtRecordEventWithFlag and
aclrtStreamWaitEventWithFlag, and what each flag allows the other event calls, with the rules
and codes of hicann/runtime src/acl/aclrt_impl/event.cpp, stream.cpp and
src/runtime/api/impl/api_error.cc, api_impl.cc (the A2/A3 runtime).

Timing is asserted only one way (a wait lasted at least so long); the machine is shared."""
from __future__ import annotations

import time

import numpy as np
import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_objects import RUNTIME_OBJECTS, dev, events, live_objects, streams  # noqa: F401
from _emu_status import expect, ok
from _part_runs import cases_where, event_waits_take_a_timeout, only_where

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: the SoC is chosen with ACL_EMU_SOC")

D2H = 2
PARAM_INVALID, INVALID_PARAM, INVALID_HANDLE, CONTEXT_NULL = 107000, 100000, 107017, 107002
FEATURE_NOT_SUPPORT, STREAM_NOT_CAPTURED, TASK_TIMEOUT = 207000, 107029, 107020
SYNC, PROGRESS, DDSYNC, TIME_LINE, DEVICE_ONLY, EXTERNAL, IPC = 1, 2, 4, 8, 0x10, 0x20, 0x40
BOGUS = ffi.cast("void *", 0x1234)
# What the emulated part has: IPC events only on the Atlas A2/A3 series and Ascend 950
# (RT_FEATURE_IPC_EVENT, src/runtime/config/{910_B_93,950}/dev_info_reg.cc), where a record's
# time also comes only with ACL_EVENT_TIME_LINE (event_task.cc; the older parts time every
# record: event_task_v100.cc); device-only events everywhere but the Atlas training series
# (the API reference). The refusals: test_training_parts_have_no_device_only_events,
# test_parts_without_ipc_events_refuse_them.
FAMILY = short_soc_version(soc_name())
STARS = FAMILY in ("Ascend910B", "Ascend910_93", "Ascend950")
DEVICE_ONLY_EVENTS = FAMILY != "Ascend910"
# a test or case of such events could never run on a part without them: no test there
ipc_events, device_only_events = only_where(STARS), only_where(DEVICE_ONLY_EVENTS)


def live():
    return live_objects(*RUNTIME_OBJECTS)


@pytest.fixture
def word(dev):
    """An 8-byte device word, zeroed."""
    d = ffi.new("void **")
    ok(lib.aclrtMalloc(d, 8, 0))
    ok(lib.aclrtMemset(d[0], 8, 0, 8))
    yield d[0]
    lib.aclrtSynchronizeDevice()
    ok(lib.aclrtFree(d[0]))


def mark(word, s):
    """Queues on ``s`` a task that sets the word to MARKED (a memset: every part has one)."""
    ok(lib.aclrtMemsetAsync(word, 8, 1, 8, s))


MARKED = 0x0101010101010101


def read_u64(ptr):
    host = np.zeros(1, np.uint64)
    ok(lib.aclrtMemcpy(ffi.cast("void *", host.ctypes.data), 8, ptr, 8, D2H))
    return int(host[0])


def status(e):
    st = ffi.new("aclrtEventRecordedStatus *")
    ok(lib.aclrtQueryEventStatus(e, st))
    return st[0]


def stream_done(s):
    q = ffi.new("aclrtStreamStatus *")
    ok(lib.aclrtStreamQuery(s, q))
    return q[0] == lib.ACL_STREAM_STATUS_COMPLETE


def test_the_flag_macros_are_the_vendors():
    assert (lib.ACL_EVENT_SYNC, lib.ACL_EVENT_CAPTURE_STREAM_PROGRESS, lib.ACL_EVENT_TIME_LINE,
            lib.ACL_EVENT_DEVICE_USE_ONLY, lib.ACL_EVENT_EXTERNAL, lib.ACL_EVENT_IPC) == \
        (SYNC, PROGRESS, TIME_LINE, DEVICE_ONLY, EXTERNAL, IPC)
    assert (lib.ACL_EVENT_RECORD_DEFAULT, lib.ACL_EVENT_RECORD_EXTERNAL,
            lib.ACL_EVENT_WAIT_DEFAULT, lib.ACL_EVENT_WAIT_EXTERNAL) == (0, 1, 0, 1)


# ---- creation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", [SYNC, PROGRESS, DDSYNC, TIME_LINE, SYNC | TIME_LINE,
                                  SYNC | PROGRESS | DDSYNC | TIME_LINE,
                                  *cases_where(DEVICE_ONLY_EVENTS, DEVICE_ONLY), EXTERNAL])
def test_create_with_flag_takes_each_flag_and_their_or(events, flag):
    events(flag)


@pytest.mark.parametrize("flag, words", [
    (0, "is not an OR"), (IPC, "is not an OR"), (0x80, "is not an OR"),
    (SYNC | 0x100, "is not an OR"),
    (DEVICE_ONLY | SYNC, "ACL_EVENT_DEVICE_USE_ONLY (0x10) is not combined"),
    (EXTERNAL | TIME_LINE, "ACL_EVENT_EXTERNAL (0x20) is not combined"),
    (EXTERNAL | DEVICE_ONLY, "is not combined")])
def test_create_with_flag_refuses_other_flags(dev, flag, words):
    p = ffi.new("aclrtEvent *", BOGUS)
    before = live()
    expect(lib.aclrtCreateEventWithFlag(p, flag), PARAM_INVALID, "aclrtCreateEventWithFlag",
           words)
    assert p[0] == BOGUS and live() == before


@pytest.mark.parametrize("flag", [SYNC, TIME_LINE, SYNC | PROGRESS | DDSYNC | TIME_LINE,
                                  *cases_where(STARS, IPC)])
def test_create_ex_takes_its_flags(events, flag):
    events(flag, ex=True)


@pytest.mark.parametrize("flag, words", [
    (0, "ACL_EVENT_IPC (0x40) alone"), (DEVICE_ONLY, "is not an OR"),
    (EXTERNAL, "is not an OR"), (0x80, "is not an OR"),
    (IPC | SYNC, "ACL_EVENT_IPC (0x40) is not combined"),
    (EXTERNAL | SYNC, "ACL_EVENT_EXTERNAL (0x20) is not combined")])
def test_create_ex_refuses_other_flags(dev, flag, words):
    p = ffi.new("aclrtEvent *")
    expect(lib.aclrtCreateEventExWithFlag(p, flag), PARAM_INVALID,
           "aclrtCreateEventExWithFlag", words)


def test_create_checks_the_pointer_then_the_flag_then_the_device(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        assert lib.aclInit(ffi.NULL) == 0
        p = ffi.new("aclrtEvent *")
        for fn in (lib.aclrtCreateEventWithFlag, lib.aclrtCreateEventExWithFlag):
            print(fn(ffi.NULL, 0), fn(p, 0), fn(p, 1))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == [f"{INVALID_PARAM} {PARAM_INVALID} {CONTEXT_NULL}"] * 2


def test_training_parts_have_no_device_only_events(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        assert lib.aclInit(ffi.NULL) == 0 and lib.aclrtSetDevice(0) == 0
        p = ffi.new("aclrtEvent *")
        print(lib.aclrtCreateEventWithFlag(p, 0x10), ffi.string(lib.aclGetRecentErrMsg()).decode())
        print(lib.aclrtCreateEventWithFlag(p, 0x20), lib.aclrtDestroyEvent(p[0]))
        lib.aclrtResetDevice(0)
    """, env={"ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{FEATURE_NOT_SUPPORT} aclrtCreateEventWithFlag: flag "
                               "ACL_EVENT_DEVICE_USE_ONLY: Ascend910A")
    assert lines[1:] == ["0 0"]


# The parts whose runtime lacks RT_FEATURE_IPC_EVENT (hicann/runtime src/runtime/config/cloud
# and dc dev_info_reg.cc: the Atlas training and inference series; api_error.cc EventCreateEx
# returns RT_ERROR_FEATURE_NOT_SUPPORT for ACL_EVENT_IPC there, after the flag's OR rules)
@pytest.mark.parametrize("part", ["Ascend910A", "Ascend310P3"])
def test_parts_without_ipc_events_refuse_them(run_python, part):
    r = run_python("""
        from acl_py.raw import ffi, lib
        assert lib.aclInit(ffi.NULL) == 0 and lib.aclrtSetDevice(0) == 0
        bogus = ffi.cast("aclrtEvent", 0x1234)
        p = ffi.new("aclrtEvent *", bogus)
        print(lib.aclrtCreateEventExWithFlag(p, 0x40), ffi.string(lib.aclGetRecentErrMsg()).decode())
        print(p[0] == bogus)
        print(lib.aclrtCreateEventExWithFlag(p, 0x40 | 0x1))    # the OR rule comes first
        print(lib.aclrtCreateEventExWithFlag(p, 0x1), lib.aclrtDestroyEvent(p[0]))
        lib.aclrtResetDevice(0)
    """, env={"ACL_EMU_SOC": part})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == (f"{FEATURE_NOT_SUPPORT} aclrtCreateEventExWithFlag: flag "
                        f"ACL_EVENT_IPC: {part} does not support IPC events")
    assert lines[1:] == ["True", f"{PARAM_INVALID}", "0 0"]


# ---- what each flag allows ------------------------------------------------------------------

def test_an_event_without_sync_cannot_be_waited_for_nor_reset(events, streams):
    s = streams()
    for flag in (TIME_LINE, PROGRESS, PROGRESS | TIME_LINE):
        e = events(flag)
        ok(lib.aclrtRecordEvent(e, s))
        expect(lib.aclrtStreamWaitEvent(s, e), FEATURE_NOT_SUPPORT, "aclrtStreamWaitEvent",
               "without ACL_EVENT_SYNC", "wait for")
        expect(lib.aclrtResetEvent(e, s), FEATURE_NOT_SUPPORT, "aclrtResetEvent",
               "without ACL_EVENT_SYNC", "reset")
        ok(lib.aclrtSynchronizeEvent(e))
        assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE


@device_only_events
def test_a_device_only_event_is_refused_by_record_wait_and_reset(events, streams):
    s, e = streams(), events(DEVICE_ONLY)
    for call, args in (("aclrtRecordEvent", (e, s)), ("aclrtStreamWaitEvent", (s, e)),
                       ("aclrtResetEvent", (e, s))):
        expect(getattr(lib, call)(*args), PARAM_INVALID, call, "ACL_EVENT_DEVICE_USE_ONLY",
               "only the device")


def test_an_external_event_is_recorded_and_waited_for_but_not_synchronized_queried_or_timed(
        events, streams):
    s, e, t = streams(), events(EXTERNAL), events()
    ok(lib.aclrtRecordEvent(t, s))
    ok(lib.aclrtRecordEvent(e, s))
    ok(lib.aclrtStreamWaitEvent(s, e))
    ok(lib.aclrtSynchronizeStream(s))
    st, ms, ts = (ffi.new("aclrtEventRecordedStatus *"), ffi.new("float *"),
                  ffi.new("uint64_t *"))
    for call, args in (("aclrtSynchronizeEvent", (e,)),
                       ("aclrtSynchronizeEventWithTimeout", (e, 100)),
                       ("aclrtQueryEventStatus", (e, st)),
                       ("aclrtEventElapsedTime", (ms, t, e)),
                       ("aclrtEventGetTimestamp", (e, ts))):
        expect(getattr(lib, call)(*args), FEATURE_NOT_SUPPORT, call, "ACL_EVENT_EXTERNAL")
    ok(lib.aclrtResetEvent(e, s))


@ipc_events
def test_an_ipc_event_is_not_reset_nor_timed(events, streams):
    s, e = streams(), events(IPC, ex=True)
    ok(lib.aclrtRecordEvent(e, s))
    ok(lib.aclrtSynchronizeEvent(e))
    assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE
    expect(lib.aclrtResetEvent(e, s), FEATURE_NOT_SUPPORT, "aclrtResetEvent", "IPC event")
    expect(lib.aclrtEventGetTimestamp(e, ffi.new("uint64_t *")), FEATURE_NOT_SUPPORT,
           "aclrtEventGetTimestamp", "ACL_EVENT_IPC")
    expect(lib.aclrtEventElapsedTime(ffi.new("float *"), e, e), FEATURE_NOT_SUPPORT,
           "aclrtEventElapsedTime", "ACL_EVENT_IPC")


def test_a_sync_event_never_recorded_is_waited_for_until_its_first_record(events, streams,
                                                                          word):
    """An ACL_EVENT_SYNC event's wait waits for its flag (event.cc Event::Wait refuses a wait
    before any record only for events without SYNC or EXTERNAL)."""
    s1, s2, e = streams(), streams(), events(SYNC)
    ok(lib.aclrtStreamWaitEvent(s2, e))
    mark(word, s2)
    time.sleep(0.1)
    assert not stream_done(s2) and read_u64(word) == 0
    ok(lib.aclrtRecordEvent(e, s1))
    ok(lib.aclrtSynchronizeStream(s2))
    assert read_u64(word) == MARKED
    # aclrtCreateEvent's events refuse it, as before
    expect(lib.aclrtStreamWaitEvent(s2, events()), PARAM_INVALID, "aclrtStreamWaitEvent",
           "never been recorded")


def test_a_sync_event_is_reset_like_one_of_create_event(events, streams):
    for e in (events(SYNC), events()):    # the runtime's code takes both (docs/emulator.md)
        s = streams()
        ok(lib.aclrtRecordEvent(e, s))
        ok(lib.aclrtSynchronizeStream(s))
        ok(lib.aclrtResetEvent(e, s))
        ok(lib.aclrtSynchronizeStream(s))
        assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_NOT_READY


def test_timestamps_come_with_time_line_only_on_stars_parts(events, streams):
    """On Atlas A2/A3 and Ascend 950 a record's time comes from a completion report the
    runtime asks for only for ACL_EVENT_TIME_LINE events (event_task.cc): the others' is 0.
    The older parts time every record (event_task_v100.cc)."""
    s = streams()
    a, b, c, d = events(TIME_LINE), events(TIME_LINE), events(SYNC), events(SYNC)
    ok(lib.aclrtRecordEvent(a, s))
    ok(lib.aclrtRecordEvent(c, s))
    time.sleep(0.02)
    ok(lib.aclrtRecordEvent(b, s))
    ok(lib.aclrtRecordEvent(d, s))
    ok(lib.aclrtSynchronizeStream(s))
    ms, ts = ffi.new("float *"), ffi.new("uint64_t *")
    ok(lib.aclrtEventElapsedTime(ms, a, b))
    assert ms[0] >= 15.0
    ok(lib.aclrtEventGetTimestamp(a, ts))
    assert ts[0] > 0
    ok(lib.aclrtEventElapsedTime(ms, c, d))
    assert ms[0] == 0.0 if STARS else ms[0] >= 15.0
    ok(lib.aclrtEventGetTimestamp(c, ts))
    assert ts[0] == 0 if STARS else ts[0] > 0


# ---- the events of aclrtCreateEventExWithFlag -------------------------------------------------

def test_an_ex_event_never_recorded_is_complete_and_waits_for_nothing(events, streams, word):
    s, e = streams(), events(SYNC, ex=True)
    assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE
    ok(lib.aclrtStreamWaitEvent(s, e))
    mark(word, s)
    ok(lib.aclrtSynchronizeStream(s))
    assert read_u64(word) == MARKED


def test_an_ex_event_is_waited_for_after_a_record_on_another_stream(events, streams, word):
    s1, s2, s3, e = streams(), streams(), streams(), events(SYNC, ex=True)
    gate = events(SYNC)                     # holds s1 until recorded
    ok(lib.aclrtStreamWaitEvent(s1, gate))
    ok(lib.aclrtRecordEvent(e, s1))
    assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_NOT_READY
    ok(lib.aclrtStreamWaitEvent(s2, e))
    mark(word, s2)
    time.sleep(0.1)
    assert read_u64(word) == 0
    ok(lib.aclrtRecordEvent(gate, s3))
    ok(lib.aclrtSynchronizeStream(s2))
    assert read_u64(word) == MARKED
    # recorded again without a reset: a reset is refused, the event needs none
    ok(lib.aclrtRecordEvent(e, s1))
    ok(lib.aclrtSynchronizeEvent(e))
    expect(lib.aclrtResetEvent(e, s1), FEATURE_NOT_SUPPORT, "aclrtResetEvent",
           "aclrtCreateEventExWithFlag")


# ---- aclrtRecordEventWithFlag and aclrtStreamWaitEventWithFlag --------------------------------

def test_record_with_flag_default_is_a_record(events, streams):
    s, e = streams(), events(SYNC)
    ok(lib.aclrtRecordEventWithFlag(e, s, lib.ACL_EVENT_RECORD_DEFAULT))
    ok(lib.aclrtSynchronizeEvent(e))
    assert status(e) == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE


def test_record_with_flag_argument_checks(events, streams):
    s, e, ex = streams(), events(SYNC), events(SYNC, ex=True)
    call = "aclrtRecordEventWithFlag"
    expect(lib.aclrtRecordEventWithFlag(ffi.NULL, s, 7), INVALID_PARAM, call, "event is NULL")
    expect(lib.aclrtRecordEventWithFlag(e, s, 2), INVALID_PARAM, call, "flag 2")
    expect(lib.aclrtRecordEventWithFlag(BOGUS, s, 1), INVALID_HANDLE, call)
    expect(lib.aclrtRecordEventWithFlag(e, BOGUS, 1), INVALID_HANDLE, call)
    expect(lib.aclrtRecordEventWithFlag(e, s, 1), FEATURE_NOT_SUPPORT, call,
           "aclrtCreateEventExWithFlag with ACL_EVENT_SYNC alone")
    expect(lib.aclrtRecordEventWithFlag(events(SYNC | TIME_LINE, ex=True), s, 1),
           FEATURE_NOT_SUPPORT, call, "flag 0x9")
    # the one event it takes: refused on a stream not being captured
    expect(lib.aclrtRecordEventWithFlag(ex, s, 1), STREAM_NOT_CAPTURED, call,
           "not being captured")
    # that first record fixed the event's record flag, though it failed (the API reference)
    expect(lib.aclrtRecordEvent(ex, s), PARAM_INVALID, "aclrtRecordEvent",
           "ACL_EVENT_RECORD_EXTERNAL", "cannot switch to ACL_EVENT_RECORD_DEFAULT")


def test_wait_with_flag_argument_checks(events, streams):
    s, e, ex = streams(), events(SYNC), events(SYNC, ex=True)
    call = "aclrtStreamWaitEventWithFlag"
    expect(lib.aclrtStreamWaitEventWithFlag(s, ffi.NULL, 0, 0), INVALID_PARAM, call,
           "event is NULL")
    expect(lib.aclrtStreamWaitEventWithFlag(s, e, 0, 2), INVALID_PARAM, call, "flag 2")
    expect(lib.aclrtStreamWaitEventWithFlag(s, e, 5, 1), INVALID_PARAM, call, "timeout 5")
    expect(lib.aclrtStreamWaitEventWithFlag(BOGUS, e, 0, 1), INVALID_HANDLE, call)
    expect(lib.aclrtStreamWaitEventWithFlag(s, e, 0, 1), FEATURE_NOT_SUPPORT, call,
           "not of aclrtCreateEventExWithFlag")
    expect(lib.aclrtStreamWaitEventWithFlag(s, ex, 0, 1), STREAM_NOT_CAPTURED, call,
           "not being captured")
    expect(lib.aclrtStreamWaitEvent(s, ex), PARAM_INVALID, "aclrtStreamWaitEvent",
           "cannot switch to ACL_EVENT_WAIT_DEFAULT")


def test_a_wait_with_a_timeout_fails_its_task_when_no_record_comes(events, streams, word):
    """Where the part's event waits take a timeout of their own (event_waits_take_a_timeout);
    elsewhere the device gets none: the wait holds past its second until a record comes."""
    s, s2, e = streams(), streams(), events(SYNC)
    ok(lib.aclrtStreamWaitEventWithFlag(s, e, 1, lib.ACL_EVENT_WAIT_DEFAULT))
    mark(word, s)
    t0 = time.monotonic()
    if event_waits_take_a_timeout():
        expect(lib.aclrtSynchronizeStream(s), TASK_TIMEOUT, "aclrtSynchronizeStream",
               "within the wait's timeout")
        assert time.monotonic() - t0 >= 0.9
    else:
        time.sleep(1.2)
        held = not stream_done(s) and read_u64(word) == 0
        ok(lib.aclrtRecordEvent(e, s2))         # released before judging: nothing hangs
        ok(lib.aclrtSynchronizeStream(s))
        assert held and read_u64(word) == MARKED
    # a wait whose record comes in time passes
    ok(lib.aclrtStreamWaitEventWithFlag(s, e, 30, lib.ACL_EVENT_WAIT_DEFAULT))
    ok(lib.aclrtRecordEvent(e, s2))
    ok(lib.aclrtSynchronizeStream(s))
