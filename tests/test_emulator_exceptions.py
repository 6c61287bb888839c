"""The emulator's exception callbacks and task ids, through the raw cffi binding:
aclrtExceptionInfoCallbackRegister / Unregister, the aclrtExceptionInfo accessors and
aclrtGetThreadLastTaskId, against CANN's rules (docs/emulator.md, "Exception callbacks")."""
from __future__ import annotations

import threading
import time

import pytest

import acl_py
from acl_py.raw import ffi, lib

from _emu_status import expect, ok
from _part_runs import has_stream_control, only_where

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")

INVALID = 0xFFFFFFFF


class Recorder:
    """An exception callback that records what the accessors say, on the thread it runs on."""

    def __init__(self, inside=None):
        self.seen = []
        self.inside = inside  # called inside the callback, its result recorded

        @ffi.callback("void(aclrtExceptionInfo *)")
        def cb(info):
            entry = {"task": lib.aclrtGetTaskIdFromExceptionInfo(info),
                     "stream": lib.aclrtGetStreamIdFromExceptionInfo(info),
                     "tid": lib.aclrtGetThreadIdFromExceptionInfo(info),
                     "device": lib.aclrtGetDeviceIdFromExceptionInfo(info),
                     "code": lib.aclrtGetErrorCodeFromExceptionInfo(info),
                     "thread": threading.get_native_id()}
            if self.inside is not None:
                entry["inside"] = self.inside()
            self.seen.append(entry)
        self.cb = cb


@pytest.fixture
def stream():
    acl_py.set_device(0)
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    yield s[0]
    ok(lib.aclrtDestroyStreamForce(s[0]))


def failing_memset(stream, emulator, code=507015, stop=False):
    """Queues a memset on `stream` that fails with `code`; returns its task id and the
    synchronize's status."""
    if stop:
        ok(lib.aclrtSetStreamFailureMode(stream, lib.ACL_STOP_ON_FAILURE))
    mem = ffi.new("void **")
    ok(lib.aclrtMalloc(mem, 64, 0))
    try:
        with emulator.inject_faults(f"aclrtMemsetAsync:1:fail={code}"):
            ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
            task = ffi.new("uint32_t *")
            ok(lib.aclrtGetThreadLastTaskId(task))
            rc = lib.aclrtSynchronizeStream(stream)
        return task[0], rc
    finally:
        ok(lib.aclrtFree(mem[0]))


def test_a_failed_task_calls_the_callbacks(stream, emulator):
    a, b = Recorder(), Recorder()
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))  # twice: once
    ok(lib.aclrtExceptionInfoCallbackRegister(b.cb))
    try:
        task, rc = failing_memset(stream, emulator)
        assert rc == 507015
        want = {"task": task, "tid": threading.get_native_id(), "device": 0, "code": 507015}
        for rec in (a, b):  # both ran, once each, before the synchronize returned
            assert len(rec.seen) == 1
            got = dict(rec.seen[0])
            assert got.pop("thread") != threading.get_native_id()  # a runtime thread
            assert got.pop("stream") == a.seen[0]["stream"]
            assert got == want
        ok(lib.aclrtExceptionInfoCallbackUnregister(b.cb))
        ok(lib.aclrtExceptionInfoCallbackUnregister(b.cb))  # not registered: nothing
        failing_memset(stream, emulator, code=507035, stop=True)
        assert [e["code"] for e in a.seen] == [507015, 507035] and len(b.seen) == 1
        assert a.seen[1]["stream"] == a.seen[0]["stream"]
        other = ffi.new("aclrtStream *")
        ok(lib.aclrtCreateStream(other))
        try:
            failing_memset(other[0], emulator)
        finally:
            ok(lib.aclrtDestroyStream(other[0]))
        assert a.seen[2]["stream"] != a.seen[0]["stream"]  # each stream its own id
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))
        ok(lib.aclrtExceptionInfoCallbackUnregister(b.cb))


def test_the_stream_id_is_aclrtStreamGetId(stream, emulator):
    a = Recorder()
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    try:
        failing_memset(stream, emulator)
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))
    sid = ffi.new("int32_t *")
    ok(lib.aclrtStreamGetId(stream, sid))
    assert [e["stream"] for e in a.seen] == [sid[0]]


# the parts without stream stop nor abort refuse them (test_emulator_streams): no test there
@only_where(has_stream_control())
def test_tasks_a_stop_or_an_abort_ends_or_drops_call_no_callback(stream, emulator):
    """A task stopped midway (reported 507035 at the next synchronize) and one dropped by the
    abort (its injected failure never happens: the task does not run) did not fail on the
    device: CANN's abort reclaims them without reading their completions."""
    a = Recorder()
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    mem = ffi.new("void **")
    ok(lib.aclrtMalloc(mem, 64, 0))
    try:
        for end in (lib.aclrtStreamAbort, lib.aclrtStreamStop):
            with emulator.inject_faults("aclrtMemsetAsync:1:hang"):
                ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))  # runs and hangs
                time.sleep(0.05)
                ok(end(stream))
                # inside: leaving releases a hang that a stop (which does not wait) left running
                assert lib.aclrtSynchronizeStream(stream) == 507035
        with emulator.inject_faults("aclrtMemsetAsync:1:hang,aclrtValueWrite:1:fail"):
            ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
            ok(lib.aclrtValueWrite(mem[0], 1, 0, stream))  # dropped by the abort
            time.sleep(0.05)
            ok(lib.aclrtStreamAbort(stream))
        assert lib.aclrtSynchronizeStream(stream) == 507035  # the stopped task's, once
        ok(lib.aclrtSynchronizeStream(stream))
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))
        ok(lib.aclrtFree(mem[0]))
    assert a.seen == []


def test_a_stopped_stream_calls_back_for_its_failure_only(stream, emulator):
    """ACL_STOP_ON_FAILURE: the first failure calls the callbacks; a later task the stopped
    stream drops does not run, so its own injected failure never happens."""
    a = Recorder()
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    mem = ffi.new("void **")
    ok(lib.aclrtMalloc(mem, 64, 0))
    try:
        ok(lib.aclrtSetStreamFailureMode(stream, lib.ACL_STOP_ON_FAILURE))
        with emulator.inject_faults("aclrtMemsetAsync:1:fail=507015,aclrtMemcpyAsync:1:fail"):
            ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
            ok(lib.aclrtMemcpyAsync(mem[0], 32, ffi.cast("char *", mem[0]) + 32, 32,
                                    lib.ACL_MEMCPY_DEVICE_TO_DEVICE, stream))
            assert lib.aclrtSynchronizeStream(stream) == 507015
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))
        ok(lib.aclrtFree(mem[0]))
    assert [e["code"] for e in a.seen] == [507015]


def test_no_callback_without_a_failure(stream, emulator):
    a = Recorder()
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    try:
        mem = ffi.new("void **")
        ok(lib.aclrtMalloc(mem, 64, 0))
        ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
        ok(lib.aclrtSynchronizeStream(stream))
        ok(lib.aclrtFree(mem[0]))
        assert a.seen == []
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))


def test_forbidden_calls_inside_the_callback_are_refused(stream, emulator):
    """CANN warns they may fail or deadlock (docs/zh/api_ref/13_exception_handling.md): a
    synchronize or an allocation inside the callback is refused (107000), as in a host
    function."""
    def inside():
        mem = ffi.new("void **")
        return (lib.aclrtSynchronizeStream(stream), lib.aclrtMalloc(mem, 64, 0))
    a = Recorder(inside)
    ok(lib.aclrtExceptionInfoCallbackRegister(a.cb))
    try:
        failing_memset(stream, emulator)
        assert a.seen[0]["inside"] == (107000, 107000)
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(a.cb))


def test_registration_rules():
    """NULL is CANN's ACL layer's refusal (107000, not the thread's last error); neither call
    needs a device."""
    lib.aclrtGetLastError(0)
    expect(lib.aclrtExceptionInfoCallbackRegister(ffi.NULL), 107000,
           "aclrtExceptionInfoCallbackRegister", "callback")
    expect(lib.aclrtExceptionInfoCallbackUnregister(ffi.NULL), 107000,
           "aclrtExceptionInfoCallbackUnregister", "callback")
    assert lib.aclrtGetLastError(0) == 0


def test_accessors_of_null():
    for name in ("Task", "Stream", "Thread", "Device", "ErrorCode"):
        fn = getattr(lib, f"aclrtGet{name}IdFromExceptionInfo" if name != "ErrorCode"
                     else "aclrtGetErrorCodeFromExceptionInfo")
        assert fn(ffi.NULL) == INVALID
    ptr, size = ffi.new("void **"), ffi.new("uint32_t *")
    assert lib.aclrtGetArgsFromExceptionInfo(ffi.NULL, ptr, size) == -1
    assert lib.aclrtGetFuncHandleFromExceptionInfo(ffi.NULL, ffi.new("aclrtFuncHandle *")) == -1


def test_kernel_queries_on_an_emulated_task(stream, emulator):
    """Emulated tasks are no AI Core / AI CPU kernels: no arguments (0xFFFFFFFF, as CANN
    answers for other tasks) and no function handle (107000)."""
    def inside():
        ptr, size = ffi.new("void **"), ffi.new("uint32_t *")
        fh = ffi.new("aclrtFuncHandle *")
        return (lib.aclrtGetArgsFromExceptionInfo(info_box[0], ptr, size),
                lib.aclrtGetFuncHandleFromExceptionInfo(info_box[0], fh), fh[0] == ffi.NULL)
    info_box = [None]

    @ffi.callback("void(aclrtExceptionInfo *)")
    def cb(info):
        info_box[0] = info
        results.append(inside())
        ptr = ffi.new("void **")
        results.append(lib.aclrtGetArgsFromExceptionInfo(info, ptr, ffi.NULL))
    results = []
    ok(lib.aclrtExceptionInfoCallbackRegister(cb))
    try:
        failing_memset(stream, emulator)
    finally:
        ok(lib.aclrtExceptionInfoCallbackUnregister(cb))
    assert results == [(-1, 107000, True), 100000]


def test_thread_last_task_id(stream):
    mem = ffi.new("void **")
    ok(lib.aclrtMalloc(mem, 64, 0))
    task = ffi.new("uint32_t *")
    ids = []
    for _ in range(3):
        ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
        ok(lib.aclrtGetThreadLastTaskId(task))
        ids.append(task[0])
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]  # the stream numbers its tasks

    seen = []

    def other():  # another thread has its own last task
        t = ffi.new("uint32_t *")
        lib.aclrtGetThreadLastTaskId(t)
        seen.append(t[0])
    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert seen == [0]
    ok(lib.aclrtGetThreadLastTaskId(task))
    assert task[0] == ids[2]
    expect(lib.aclrtGetThreadLastTaskId(ffi.NULL), 100000, "aclrtGetThreadLastTaskId", "taskId")
    ok(lib.aclrtSynchronizeStream(stream))
    ok(lib.aclrtFree(mem[0]))


def test_a_callback_the_stopped_stream_drops_is_not_pending(stream, emulator):
    """ACL_STOP_ON_FAILURE: a callback queued after the failed task never runs, and the
    stream's subscribed thread can still be unsubscribed (as the vendor's
    2_callback_exception example does after the failure)."""
    done = threading.Event()
    ran = []

    def processor():
        acl_py.set_device(0)
        while not done.is_set():
            lib.aclrtProcessReport(50)
    th = threading.Thread(target=processor)
    th.start()
    try:
        while not th.native_id:
            pass
        tid = th.ident  # CANN's threadId: the processing thread's pthread_self()
        ok(lib.aclrtSubscribeReport(tid, stream))

        @ffi.callback("void(void *)")
        def cb(_arg):
            ran.append(1)
        ok(lib.aclrtSetStreamFailureMode(stream, lib.ACL_STOP_ON_FAILURE))
        mem = ffi.new("void **")
        ok(lib.aclrtMalloc(mem, 64, 0))
        with emulator.inject_faults("aclrtMemsetAsync:1:fail=507015"):
            ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, stream))
            ok(lib.aclrtLaunchCallback(cb, ffi.NULL, lib.ACL_CALLBACK_BLOCK, stream))
            assert lib.aclrtSynchronizeStream(stream) == 507015
        ok(lib.aclrtUnSubscribeReport(tid, stream), "aclrtUnSubscribeReport")
        ok(lib.aclrtFree(mem[0]))
        assert ran == []
    finally:
        done.set()
        th.join()
