"""The emulator's event waits with a timeout, wait status, event ids, operator timeouts and
aclrtCheckArchCompatibility through the raw cffi binding, against docs/emulator.md ("Event
waits with a timeout, wait status and ids", "Operator timeouts"), with the rules and codes of
hicann/runtime src/acl/aclrt_impl/event.cpp, device.cpp, src/runtime/api/api_c_stream.cc,
api_c.cc and src/runtime/api/impl/api_error.cc, api_impl.cc.

aclrtSetOpWaitTimeout and aclrtSetOpExecuteTimeOut set the whole process's runtime (and stay
set, as CANN's): their tests run in a child process. Timing is asserted only one way (a wait
lasted at least so long); the machine is shared."""
from __future__ import annotations

import time

import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_objects import dev, events, streams  # noqa: F401 (fixtures)
from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: the SoC is chosen with ACL_EMU_SOC")

PARAM_INVALID, INVALID_PARAM, INVALID_HANDLE = 107000, 100000, 107017
FEATURE_NOT_SUPPORT, TASK_TIMEOUT, INTERNAL_ERROR = 207000, 107020, 507000
SYNC, PROGRESS, TIME_LINE, EXTERNAL, IPC = 1, 2, 8, 0x20, 0x40
BOGUS = ffi.cast("void *", 0x1234)
# Whether this process's part has the STARS task scheduler (Atlas A2/A3 and Ascend 950): there
# an event wait takes its own timeout (StreamWaitEventTimeout::CUSTOM; api_c_stream.cc
# rtStreamWaitEventWithTimeout; elsewhere the wait lasts as aclrtSetOpWaitTimeout says, never
# set here: no limit), IPC events exist, and an event no stream can wait for gets no id.
STARS = short_soc_version(soc_name()) in ("Ascend910B", "Ascend910_93", "Ascend950")


def wait_status(e):
    st = ffi.new("aclrtEventWaitStatus *")
    ok(lib.aclrtQueryEventWaitStatus(e, st), "aclrtQueryEventWaitStatus")
    return st[0]


def stream_done(s):
    q = ffi.new("aclrtStreamStatus *")
    ok(lib.aclrtStreamQuery(s, q))
    return q[0] == lib.ACL_STREAM_STATUS_COMPLETE


def event_id(e):
    p = ffi.new("uint32_t *")
    ok(lib.aclrtGetEventId(e, p), "aclrtGetEventId")
    return p[0]


def test_the_wait_status_enum_is_the_vendors():
    assert (lib.ACL_EVENT_WAIT_STATUS_COMPLETE, lib.ACL_EVENT_WAIT_STATUS_NOT_READY,
            lib.ACL_EVENT_WAIT_STATUS_RESERVED) == (0, 1, 0xFFFF)


# ---- aclrtStreamWaitEventWithTimeout ----------------------------------------------------------

def test_wait_with_timeout_argument_checks_in_cannS_order(events, streams):
    call = "aclrtStreamWaitEventWithTimeout"
    s, e = streams(), events(SYNC)
    ok(lib.aclrtRecordEvent(e, s))
    lib.aclrtGetLastError(0)
    # the ACL layer's check first, before the handles; it leaves the thread's last error
    expect(lib.aclrtStreamWaitEventWithTimeout(BOGUS, ffi.NULL, -1), PARAM_INVALID, call,
           "timeout -1")
    assert lib.aclrtPeekAtLastError(0) == 0
    # then the stream's handle, then the NULL event (the runtime's 107000, not 100000)
    expect(lib.aclrtStreamWaitEventWithTimeout(BOGUS, ffi.NULL, 1), INVALID_HANDLE, call,
           "not a live stream")
    expect(lib.aclrtStreamWaitEventWithTimeout(s, ffi.NULL, 1), PARAM_INVALID, call,
           "event is NULL")
    assert lib.aclrtGetLastError(0) == PARAM_INVALID
    expect(lib.aclrtStreamWaitEventWithTimeout(s, BOGUS, 1), INVALID_HANDLE, call, "event")
    # an event without ACL_EVENT_SYNC: no stream waits for it
    expect(lib.aclrtStreamWaitEventWithTimeout(s, events(TIME_LINE), 1), FEATURE_NOT_SUPPORT,
           call, "without ACL_EVENT_SYNC")
    ok(lib.aclrtStreamWaitEventWithTimeout(s, e, 0))
    ok(lib.aclrtStreamWaitEventWithTimeout(ffi.NULL, e, 2**31 - 1))
    ok(lib.aclrtSynchronizeDevice())


def test_a_wait_that_runs_out_of_time_fails_its_task_and_0_has_no_limit(events, streams):
    s, unlimited, other, e = streams(), streams(), streams(), events(SYNC)
    ok(lib.aclrtStreamWaitEventWithTimeout(s, e, 1))   # never recorded: nothing comes
    ok(lib.aclrtStreamWaitEventWithTimeout(unlimited, e, 0))
    t0 = time.monotonic()
    if STARS:
        expect(lib.aclrtSynchronizeStream(s), TASK_TIMEOUT, "aclrtSynchronizeStream",
               "within the wait's timeout")
        assert time.monotonic() - t0 >= 0.9
    else:                           # the device got no timeout: the wait holds past 1 s
        time.sleep(1.2)
        assert not stream_done(s)
    time.sleep(0.3)
    assert not stream_done(unlimited)
    ok(lib.aclrtRecordEvent(e, other))
    ok(lib.aclrtSynchronizeStream(unlimited))
    ok(lib.aclrtSynchronizeStream(s))
    # one whose record comes in time passes
    ok(lib.aclrtStreamWaitEventWithTimeout(s, e, 30))
    ok(lib.aclrtRecordEvent(e, other))
    ok(lib.aclrtSynchronizeStream(s))


# ---- aclrtQueryEventWaitStatus ----------------------------------------------------------------

def test_query_wait_status_argument_checks(events):
    call = "aclrtQueryEventWaitStatus"
    st = ffi.new("aclrtEventWaitStatus *")
    expect(lib.aclrtQueryEventWaitStatus(ffi.NULL, ffi.NULL), INVALID_PARAM, call, "event")
    expect(lib.aclrtQueryEventWaitStatus(events(SYNC), ffi.NULL), INVALID_PARAM, call, "status")
    expect(lib.aclrtQueryEventWaitStatus(BOGUS, st), INVALID_HANDLE, call, "event")
    expect(lib.aclrtQueryEventWaitStatus(events(SYNC, ex=True), st), FEATURE_NOT_SUPPORT, call,
           "aclrtCreateEventExWithFlag")
    expect(lib.aclrtQueryEventWaitStatus(events(EXTERNAL), st), FEATURE_NOT_SUPPORT, call,
           "ACL_EVENT_EXTERNAL")
    if STARS:                       # elsewhere no IPC event can be made (207000)
        expect(lib.aclrtQueryEventWaitStatus(events(IPC, ex=True), st), FEATURE_NOT_SUPPORT,
               call)


def test_query_wait_status_follows_the_queued_waits(events, streams):
    s, other, e = streams(), streams(), events(SYNC)
    assert wait_status(e) == lib.ACL_EVENT_WAIT_STATUS_COMPLETE   # no wait queued
    assert wait_status(events(TIME_LINE)) == lib.ACL_EVENT_WAIT_STATUS_COMPLETE
    ok(lib.aclrtStreamWaitEvent(s, e))          # waits for the first record
    ok(lib.aclrtStreamWaitEventWithTimeout(other, e, 30))
    time.sleep(0.05)
    assert wait_status(e) == lib.ACL_EVENT_WAIT_STATUS_NOT_READY
    ok(lib.aclrtRecordEvent(e, ffi.NULL))
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtSynchronizeStream(other))
    assert wait_status(e) == lib.ACL_EVENT_WAIT_STATUS_COMPLETE


# ---- aclrtGetEventId ------------------------------------------------------------------------

def test_get_event_id_argument_checks(events):
    call = "aclrtGetEventId"
    p = ffi.new("uint32_t *")
    expect(lib.aclrtGetEventId(ffi.NULL, ffi.NULL), INVALID_PARAM, call, "event is NULL")
    expect(lib.aclrtGetEventId(events(SYNC), ffi.NULL), INVALID_PARAM, call, "eventId")
    expect(lib.aclrtGetEventId(BOGUS, p), INVALID_HANDLE, call, "event")
    if STARS:                       # elsewhere no IPC event can be made (207000)
        expect(lib.aclrtGetEventId(events(IPC, ex=True), p), FEATURE_NOT_SUPPORT, call,
               "ACL_EVENT_IPC")


def test_event_ids_come_when_the_runtime_gives_them(events, streams):
    call = "aclrtGetEventId"
    p = ffi.new("uint32_t *")
    s = streams()
    with_flag = [events(SYNC), events(SYNC | TIME_LINE), events(EXTERNAL)]
    ids = [event_id(e) for e in with_flag]           # given at creation
    assert len(set(ids)) == 3
    plain, ex = events(), events(SYNC, ex=True)      # at the first record
    for e in (plain, ex):
        expect(lib.aclrtGetEventId(e, p), INTERNAL_ERROR, call, "first record")
        ok(lib.aclrtRecordEvent(e, s))
        ids.append(event_id(e))
        assert event_id(e) == ids[-1]                 # kept across records
    assert len(set(ids)) == 5
    # an event no stream can wait for gets none on the parts with the STARS scheduler (A2/A3,
    # 950: InitEventAllocFlag), one as any event elsewhere (test_training_parts_give_ids_...)
    timeline = events(TIME_LINE)
    ok(lib.aclrtRecordEvent(timeline, s))
    if STARS:
        expect(lib.aclrtGetEventId(timeline, p), INTERNAL_ERROR, call, "gets none on this part")
    else:
        ids.append(event_id(timeline))
        assert len(set(ids)) == 6
    ok(lib.aclrtSynchronizeStream(s))


def test_a_destroyed_events_id_is_given_again(dev):
    p = ffi.new("aclrtEvent *")
    ok(lib.aclrtCreateEventWithFlag(p, SYNC))
    first, e = event_id(p[0]), p[0]
    ok(lib.aclrtCreateEventWithFlag(p, SYNC))
    second = p[0]
    assert event_id(second) != first
    ok(lib.aclrtDestroyEvent(e))
    ok(lib.aclrtCreateEventWithFlag(p, SYNC))
    assert event_id(p[0]) == first
    ok(lib.aclrtDestroyEvent(p[0]))
    ok(lib.aclrtDestroyEvent(second))


def test_training_parts_give_ids_to_every_event(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        assert lib.aclrtSetDevice(0) == 0
        p, i = ffi.new("aclrtEvent *"), ffi.new("uint32_t *")
        assert lib.aclrtCreateEventWithFlag(p, 8) == 0
        print(lib.aclrtGetEventId(p[0], i), lib.aclrtDestroyEvent(p[0]))
        lib.aclrtResetDevice(0)
    """, env={"ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "0"]


# ---- operator timeouts (a child process each: they set the whole process's runtime) ---------

PRELUDE = """
        import time
        from acl_py.raw import ffi, lib
        assert lib.aclrtSetDevice(0) == 0
        p = ffi.new("aclrtEvent *"); assert lib.aclrtCreateEventWithFlag(p, 1) == 0; e = p[0]
        def stream():
            s = ffi.new("aclrtStream *"); assert lib.aclrtCreateStream(s) == 0
            return s[0]
        def done(s):
            q = ffi.new("aclrtStreamStatus *"); assert lib.aclrtStreamQuery(s, q) == 0
            return q[0] == 0
"""


def test_op_wait_timeout_bounds_the_waits_queued_after_it(run_python):
    r = run_python(PRELUDE + """
        plain, by_flag, own, later = stream(), stream(), stream(), stream()
        print(lib.aclrtSetOpWaitTimeout(1))
        assert lib.aclrtStreamWaitEvent(plain, e) == 0
        assert lib.aclrtStreamWaitEventWithFlag(by_flag, e, 0xFFFFFFFF, 0) == 0
        assert lib.aclrtStreamWaitEventWithTimeout(own, e, 30) == 0  # its own outranks it
        print(lib.aclrtSetOpWaitTimeout(0))                           # no limit from now on
        assert lib.aclrtStreamWaitEvent(later, e) == 0
        t0 = time.monotonic()
        print(lib.aclrtSynchronizeStream(plain), lib.aclrtSynchronizeStream(by_flag),
              time.monotonic() - t0 >= 0.9)
        time.sleep(0.3)
        print(done(own), done(later))
        assert lib.aclrtRecordEvent(e, ffi.NULL) == 0
        print(lib.aclrtSynchronizeStream(own), lib.aclrtSynchronizeStream(later))
    """, env={"ACL_EMU_SOC": "Ascend910B2"})     # a part whose waits take their own timeout
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0", "0", f"{TASK_TIMEOUT} {TASK_TIMEOUT} True",
                                     "False False", "0 0"]


def test_parts_whose_waits_take_no_timeout_wait_as_the_op_wait_timeout_says(run_python):
    """Atlas training series: rtStreamWaitEventWithTimeout hands the device no timeout of its
    own (StreamWaitEventTimeout::NOT_SUPPORT); aclrtSetOpWaitTimeout's covers every wait."""
    r = run_python(PRELUDE + """
        before, after = stream(), stream()
        assert lib.aclrtStreamWaitEventWithTimeout(before, e, 1) == 0
        print(lib.aclrtSetOpWaitTimeout(1))
        assert lib.aclrtStreamWaitEventWithTimeout(after, e, 100) == 0
        t0 = time.monotonic()
        print(lib.aclrtSynchronizeStream(after), time.monotonic() - t0 >= 0.9)
        time.sleep(0.3)
        print(done(before))
        assert lib.aclrtRecordEvent(e, ffi.NULL) == 0
        print(lib.aclrtSynchronizeStream(before))
    """, env={"ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0", f"{TASK_TIMEOUT} True", "False", "0"]


def test_inference_parts_refuse_the_op_wait_timeout(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        print(lib.aclrtSetOpWaitTimeout(5), ffi.string(lib.aclGetRecentErrMsg()).decode())
        print(lib.aclrtSetOpExecuteTimeOut(5))
    """, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{FEATURE_NOT_SUPPORT} aclrtSetOpWaitTimeout: Ascend310P3")
    assert lines[1] == "0"


OP_EXECUTE_SCRIPT = """
    import time
    import numpy as np
    import acl_py
    from acl_py.raw import ffi, lib
    acl_py.init()
    print(lib.aclrtSetOpExecuteTimeOut(0), lib.aclrtSetOpExecuteTimeOut(0xFFFFFFFF),
          lib.aclrtSetOpExecuteTimeOut(1))
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    with acl_py.Device(0), acl_py.Stream() as s:
        t = acl_py.DeviceTensor.from_numpy(x, s)
        s.synchronize()
        assert lib.aclemuSetFaults(HANG) == 0
        t0 = time.monotonic()
        acl_py.layer_norm(t, [8], stream=s)
        try:
            s.synchronize()
            print("ran")
        except acl_py.AclError as e:
            print(e.code, time.monotonic() - t0 >= 0.9, "aclrtSetOpExecuteTimeOut" in str(e))
        y = acl_py.layer_norm(t, [8], stream=s)[0]
        print(np.allclose(y.to_numpy(), acl_py.layer_norm(x, [8])[0], atol=1e-5))
    acl_py.finalize()
"""


@pytest.mark.parametrize("soc,hang,first,setter", [
    # the training series times kernels in seconds: a kernel made to hang is ended at 1 s
    ("Ascend910A", b"aclnnLayerNorm:1:hang", "507034 True True", "aclrtSetOpExecuteTimeOut(1)"),
    # ... set in milliseconds too
    ("Ascend910A", b"aclnnLayerNorm:1:hang", "507034 True True",
     "aclrtSetOpExecuteTimeOutWithMs(1000)"),
    # Atlas A2 rounds 1 s up to one scheduler interval, 4.29 s: a 1.5 s kernel runs
    ("Ascend910B2", b"aclnnLayerNorm:1:hang=1500", "ran", "aclrtSetOpExecuteTimeOut(1)"),
])
def test_op_execute_timeout_ends_a_kernel_that_outlasts_it(run_python, soc, hang, first,
                                                            setter):
    """A kernel made to hang (aclemuSetFaults) is ended at aclrtSetOpExecuteTimeOut's time
    (or aclrtSetOpExecuteTimeOutWithMs's), as the part's scheduler counts it, and fails its
    stream with 507034; the stream and later kernels work on. Any value is taken."""
    script = OP_EXECUTE_SCRIPT.replace("HANG", repr(hang)).replace(
        "lib.aclrtSetOpExecuteTimeOut(1))", f"lib.{setter})")
    r = run_python(script, env={"ACL_EMU_SOC": soc})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0 0 0", first, "True"]


# ---- the kernel time limit in milliseconds and microseconds, read back --------------------

OP_EXECUTE_READ_SCRIPT = """
    from acl_py.raw import ffi, lib
    ms = ffi.new("uint32_t *"); us = ffi.new("uint64_t *")
    def get():
        rc = lib.aclrtGetOpExecuteTimeout(ms)
        return ms[0] if rc == 0 else rc
    def v2(t):
        rc = lib.aclrtSetOpExecuteTimeOutV2(t, us)
        return us[0] if rc == 0 else rc
    out = {"default": get()}
    out["null"] = [lib.aclrtGetOpExecuteTimeout(ffi.NULL),
                   lib.aclrtGetOpTimeOutInterval(ffi.NULL),
                   lib.aclrtSetOpExecuteTimeOutV2(1, ffi.NULL)]
    # no current device: the runtime's context (107002); nothing set
    out["no_device"] = [lib.aclrtGetOpTimeOutInterval(us), lib.aclrtSetOpExecuteTimeOutV2(1, us)]
    out["still_default"] = get()
    lib.aclrtSetOpExecuteTimeOut(1); out["1 s"] = get()
    lib.aclrtSetOpExecuteTimeOutWithMs(5000); out["5000 ms"] = get()
    lib.aclrtSetOpExecuteTimeOutWithMs(2000000); out["2000000 ms"] = get()
    lib.aclrtSetOpExecuteTimeOutWithMs(0); out["0 ms"] = get()
    lib.aclrtSetDevice(0)
    lib.aclrtGetOpTimeOutInterval(us); out["interval"] = us[0]
    out["v2 1000000"] = [v2(1000000), get()]
    out["v2 0"] = [v2(0), get()]
    out["v2 max"] = [v2(2 ** 64 - 1), get()]
    lib.aclrtResetDevice(0)
    print(out)
"""

TICK = {"Ascend910B2": 4294967.296, "Ascend950PR_9599": 4294967.296,
        "Ascend310P3": 2147483.648, "Ascend910A": 68719476.736}


@pytest.mark.parametrize("soc,default_ticks,max_ticks", [
    ("Ascend910B2", 254, 254), ("Ascend950PR_9599", 254, 254), ("Ascend310P3", 255, 255),
    ("Ascend910A", 1, 32)])
def test_op_execute_timeout_in_ms_and_us_and_read_back(run_python, soc, default_ticks,
                                                       max_ticks):
    """aclrtGetOpExecuteTimeout answers the runtime's computation: whole ticks of the part's
    scheduler (aclrtGetOpTimeOutInterval), its default or maximum count, in milliseconds
    rounded up; aclrtSetOpExecuteTimeOutWithMs takes milliseconds (above 1000000: 1000000),
    aclrtSetOpExecuteTimeOutV2 microseconds and answers the ticks it makes (at most 254) times
    the tick; NULL outputs 100000, the interval and V2 without a device 107002."""
    import math
    r = run_python(OP_EXECUTE_READ_SCRIPT, env={"ACL_EMU_SOC": soc})
    assert r.returncode == 0, r.stderr
    got = eval(r.stdout)
    tick = TICK[soc]

    def ms(ticks):
        return math.ceil(ticks * tick / 1000)

    def ticks_of(us):
        return int((us + tick - 1) // tick)

    assert got["default"] == got["still_default"] == ms(default_ticks), got
    assert got["null"] == [INVALID_PARAM] * 3
    assert got["no_device"] == [107002, 107002]
    assert got["1 s"] == ms(ticks_of(10 ** 6))
    assert got["5000 ms"] == ms(ticks_of(5 * 10 ** 6))
    # 2000000 ms is 1000000 ms: 10**9 us, above the maximum on the inference series
    assert got["2000000 ms"] == (ms(ticks_of(10 ** 9)) if 10 ** 9 <= tick * max_ticks
                                 else ms(max_ticks))
    assert got["0 ms"] == ms(max_ticks)
    assert got["interval"] == int(tick)
    assert got["v2 1000000"] == [int(1 * tick), ms(ticks_of(10 ** 6))]
    assert got["v2 0"] == [int(254 * tick), ms(max_ticks)]
    assert got["v2 max"] == [int(254 * tick), ms(max_ticks)]


# ---- aclrtCheckArchCompatibility --------------------------------------------------------------

def compatible(name):
    out = ffi.new("int32_t *")
    ok(lib.aclrtCheckArchCompatibility(name, out), "aclrtCheckArchCompatibility")
    return out[0]


# parts by their NpuArch (src/platform/platform_config/cann*/<part>.ini)
NPU_ARCH = {"Ascend910B2": 2201, "Ascend910B3": 2201, "Ascend910_9391": 2201, "Ascend910A": 1001,
            "Ascend910B": 1001, "Ascend310P1": 2002, "Ascend310P3": 2002,
            "Ascend950PR_9599": 3510, "Ascend310B1": 3002, "Ascend035": 3505}


def test_check_arch_compatibility_compares_npu_architectures():
    """No device needed: 1 for exactly the parts of the emulated part's NpuArch."""
    own = NPU_ARCH[soc_name()]
    got = {n: compatible(n.encode()) for n in NPU_ARCH}
    assert got == {n: int(arch == own) for n, arch in NPU_ARCH.items()}
    assert sum(got.values()) >= 1


def test_check_arch_compatibility_argument_checks():
    call = "aclrtCheckArchCompatibility"
    out = ffi.new("int32_t *")
    expect(lib.aclrtCheckArchCompatibility(ffi.NULL, out), PARAM_INVALID, call, "socVersion")
    expect(lib.aclrtCheckArchCompatibility(b"Ascend910B2", ffi.NULL), PARAM_INVALID, call,
           "canCompatible")
    expect(lib.aclrtCheckArchCompatibility(b"", out), PARAM_INVALID, call, "empty")
    expect(lib.aclrtCheckArchCompatibility(b"Ascend9999", out), PARAM_INVALID, call,
           "Ascend9999", "platform configuration")
