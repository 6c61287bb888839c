"""Bounded waits and stream failure modes in Python: ``Stream.synchronize(timeout=)``,
``Event.synchronize(timeout=)``, ``Device.synchronize(timeout=)`` (seconds, validated before
any C call), :class:`acl_py.AclTimeoutError` (also a ``TimeoutError``) after which the objects
stay usable and nothing the queued work may still use is freed, and
``Stream(stop_on_failure=True)``. The hangs and failed tasks are the emulator's task faults
(docs/emulator.md); the no_leaks fixture checks every test's live objects."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

import acl_py
from acl_py import AclTimeoutError, Device, DeviceTensor, Event, Stream
from acl_py.errors import AclArgumentError, AclError, AclTypeError

HANG_FIRST_COPY = "aclrtMemcpyAsync:1:hang"


@pytest.mark.parametrize("bad", [-0.001, -5, math.nan, math.inf, -math.inf, 3e6])
def test_bad_timeouts_are_refused_naming_timeout(bad):
    with Stream() as s, Event() as e:
        for call in (s.synchronize, e.synchronize, Device(0).synchronize):
            with pytest.raises(AclArgumentError) as info:
                call(timeout=bad)
            assert info.value.argument == "timeout" and info.value.code is None


@pytest.mark.parametrize("bad", ["1", True, [1], 1j])
def test_timeouts_must_be_numbers(bad):
    with Stream() as s:
        with pytest.raises(AclTypeError) as info:
            s.synchronize(timeout=bad)
        assert info.value.argument == "timeout"


def test_idle_waits_with_timeouts_return_at_once():
    with Stream() as s, Event() as e:
        for t in (0, 0.0001, 1, 2**31 // 1000):
            s.synchronize(timeout=t)
            e.synchronize(timeout=t)
            Device(0).synchronize(timeout=t)
            acl_py.synchronize(timeout=t)


def test_timeout_error_is_typed_and_a_timeout_error(emulator):
    with Stream() as s:
        emulator.set_faults(HANG_FIRST_COPY)
        t = DeviceTensor.from_numpy(np.arange(1024, dtype=np.float32), s)
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as info:
            s.synchronize(timeout=0.3)
        assert time.monotonic() - t0 >= 0.3
        err = info.value
        assert isinstance(err, AclTimeoutError) and isinstance(err, AclError)
        assert err.code == 507046 and err.name == "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"
        assert err.call == "aclrtSynchronizeStreamWithTimeout"
        assert "300 ms" in err.message     # aclGetRecentErrMsg()
        emulator.set_faults(None)
        s.synchronize(timeout=30)          # usable again
        assert np.array_equal(t.to_numpy(s), np.arange(1024, dtype=np.float32))
        t.close()


def test_memory_queued_work_uses_is_not_freed_after_a_timeout(emulator):
    """The copy into the tensor is still queued after the timeout: closing the tensor defers
    its free to the stream's order (the allocation stays live) until a later synchronize
    gets past the copy."""
    s = Stream()
    try:
        emulator.set_faults(HANG_FIRST_COPY)
        t = DeviceTensor.from_numpy(np.ones(4096, dtype=np.float32), s, pool=False)
        before = emulator.live_objects()["device_allocations"]
        with pytest.raises(AclTimeoutError):
            s.synchronize(timeout=0.05)
        t.close()
        with pytest.raises(AclTimeoutError):
            s.synchronize(timeout=0.05)                  # still queued: still not released
        assert emulator.live_objects()["device_allocations"] == before
        emulator.set_faults(None)
        s.synchronize()
        assert emulator.live_objects()["device_allocations"] == before - 1
    finally:
        emulator.set_faults(None)
        s.close()


def test_event_and_device_timeouts(emulator):
    with Stream() as s, Event() as e:
        emulator.set_faults(HANG_FIRST_COPY)
        t = DeviceTensor.from_numpy(np.ones(16, dtype=np.float32), s)
        e.record(s)
        with pytest.raises(AclTimeoutError) as info:
            e.synchronize(timeout=0.1)
        assert info.value.code == 507047 and info.value.call == "aclrtSynchronizeEventWithTimeout"
        with pytest.raises(AclTimeoutError) as info:
            Device(0).synchronize(timeout=0.1)
        assert info.value.code == 507046
        assert info.value.call == "aclrtSynchronizeDeviceWithTimeout"
        assert not e.query()
        emulator.set_faults(None)
        e.synchronize(timeout=30)
        t.close()


def test_a_stream_closes_cleanly_after_a_timeout(emulator):
    s = Stream()
    emulator.set_faults(HANG_FIRST_COPY)
    t = DeviceTensor.from_numpy(np.ones(16, dtype=np.float32), s)
    with pytest.raises(AclTimeoutError):
        s.synchronize(timeout=0.05)
    t.close()
    emulator.set_faults(None)   # the work finishes (close waits for it, as on a device)
    s.close()
    assert s.closed
    s.close()       # repeatable


def test_continue_on_failure_reports_a_failed_task_once(emulator):
    with Stream() as s:
        emulator.set_faults("aclrtMemcpyAsync:1:fail")
        t = DeviceTensor.from_numpy(np.ones(16, dtype=np.float32), s)
        with pytest.raises(AclError) as info:
            s.synchronize()
        assert info.value.code == 507035 and "aclrtMemcpyAsync" in info.value.message
        s.synchronize(timeout=10)   # reported once; the stream goes on
        t.copy_from_numpy(np.full(16, 2, dtype=np.float32), s)
        assert np.array_equal(t.to_numpy(s), np.full(16, 2, dtype=np.float32))
        t.close()


def test_stop_on_failure_stops_the_stream(emulator):
    s = Stream(stop_on_failure=True)
    emulator.set_faults("aclrtMemcpyAsync:1:fail=507015")
    t = DeviceTensor.from_numpy(np.ones(16, dtype=np.float32), s)
    u = DeviceTensor.from_numpy(np.ones(16, dtype=np.float32), s)   # does not run
    for _ in range(2):
        with pytest.raises(AclError) as info:
            s.synchronize(timeout=10)
        assert info.value.code == 507015 and "ACL_STOP_ON_FAILURE" in info.value.message
    t.close()
    u.close()
    with pytest.raises(AclError) as info:   # the destroy's synchronize reports it too ...
        s.close()
    assert info.value.code == 507015
    assert s.closed                          # ... and the stream is destroyed all the same


def test_stop_on_failure_as_a_method_and_its_argument():
    with Stream() as s:
        s.stop_on_failure()
        s.stop_on_failure()       # the same mode again: fine
    with pytest.raises(AclTypeError) as info:
        Stream(stop_on_failure=1)
    assert info.value.argument == "stop_on_failure"
