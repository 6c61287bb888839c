"""acl_py.Notify (aclrtCreateNotify, aclrtRecordNotify, aclrtDestroyNotify) and Stream.wait's
notify and timeout forms (aclrtWaitAndResetNotify, aclrtStreamWaitEventWithTimeout): ordering
between streams, device-side timeouts that fail the waiting task, stream-ordered destroy
exactly once, typed errors naming the argument."""
from __future__ import annotations

import gc
import time

import numpy as np
import pytest

import acl_py
from acl_py import AclArgumentError, AclError, AclTypeError, ClosedError, Event, EventFlag
from acl_py import Notify, Stream

from _part_runs import event_waits_take_a_timeout

TASK_TIMEOUT = 107020


def notifies(emulator):
    return emulator.live_objects()["notifies"]


def test_a_wait_for_a_notify_holds_the_stream_until_the_record(emulator):
    x = np.arange(16, dtype=np.float32)
    with Stream() as a, Stream() as b, Notify() as n:
        src, dst = acl_py.DeviceBuffer(x.nbytes), acl_py.DeviceBuffer(x.nbytes)
        src.copy_from_host(x)
        dst.memset(0)
        emulator.set_faults("aclrtMemsetAsync:1:hang")
        scratch = acl_py.DeviceBuffer(8)
        scratch.memset(0, stream=a)          # a hangs here
        n.record(a)                           # ... so the notify is set only after it
        b.wait(n)
        dst.copy_from(src, stream=b)
        time.sleep(0.1)
        assert not b.query()
        emulator.set_faults(None)
        b.synchronize()
        assert np.array_equal(np.frombuffer(dst.copy_to_host(), np.float32), x)
        # each record lets one wait pass: the wait cleared it
        b.wait(n, timeout=1)
        with pytest.raises(AclError) as e:
            b.synchronize()
        assert e.value.code == TASK_TIMEOUT
        scratch.close()
        src.close()
        dst.close()


# Whether an event wait takes a timeout of its own (_part_runs.event_waits_take_a_timeout;
# aclrtSetOpWaitTimeout is never set here: no limit elsewhere). A notify's wait takes its
# timeout on every part the emulator models (RT_FEATURE_NOTIFY_WAIT_TIMEOUT).
EVENT_WAITS_TAKE_A_TIMEOUT = event_waits_take_a_timeout()


def test_timed_waits_fail_their_task_when_nothing_comes(emulator):
    with Stream() as s1, Stream() as s2, Stream() as s3, Notify() as n, \
            Event(flags=EventFlag.SYNC) as e:
        s1.wait(n, timeout=0.5)               # rounded up to 1 s
        s2.wait(e, timeout=1)                 # never recorded: nothing comes
        t0 = time.monotonic()
        with pytest.raises(AclError) as err:
            s1.synchronize()
        assert err.value.code == TASK_TIMEOUT
        assert time.monotonic() - t0 >= 0.9
        if EVENT_WAITS_TAKE_A_TIMEOUT:
            with pytest.raises(AclError) as err:
                s2.synchronize()
            assert err.value.code == TASK_TIMEOUT
        else:                                 # the event wait's timeout is not the device's
            assert not s2.query()
            e.record(s3)
            s2.synchronize()
        # waits whose signal comes in time pass
        s1.wait(n, timeout=30)
        n.record(s3)
        s2.wait(s3, timeout=30)
        s1.synchronize()
        s2.synchronize()


def test_wait_arguments_are_typed_errors_naming_them():
    with Stream() as s, Notify() as n:
        for bad in (-1, float("nan"), float("inf"), 2.0**40):
            with pytest.raises(AclArgumentError) as e:
                s.wait(n, timeout=bad)
            assert e.value.argument == "timeout"
        for bad in ("1", True):
            with pytest.raises(AclTypeError) as e:
                s.wait(n, timeout=bad)
            assert e.value.argument == "timeout"
        with pytest.raises(AclTypeError, match="Notify") as e:
            s.wait(object())
        assert e.value.argument == "other"


def test_a_notify_is_destroyed_once_after_the_work_queued_on_it(emulator):
    before = notifies(emulator)
    emulator.reset_call_counts()
    with Stream() as s:
        n = Notify()
        assert notifies(emulator) == before + 1
        s.wait(n, timeout=1)                  # nothing records it: it ends at its timeout
        n.close()
        assert n.closed and notifies(emulator) == before + 1   # the wait still holds it
        for use in (lambda: n.handle, lambda: n.record(s), lambda: s.wait(n)):
            with pytest.raises(ClosedError):
                use()
        n.close()
        with pytest.raises(AclError, match="aclrtWaitAndResetNotify") as err:
            s.synchronize()                   # the ended wait's failure: the stream is past it
        assert err.value.code == TASK_TIMEOUT
        s.synchronize()                       # reported once; the releases it held run now
        assert notifies(emulator) == before
    assert emulator.call_counts().get("aclrtDestroyNotify") == 1
    Notify()                                  # dropped: the collector destroys it
    gc.collect()
    assert notifies(emulator) == before
    assert emulator.call_counts().get("aclrtDestroyNotify") == 2
    assert "closed" in repr(n)


def test_a_notify_left_open_is_destroyed_by_the_teardown(run_python):
    r = run_python("""
        import acl_py
        from acl_py import emulator
        acl_py.init()
        n, s = acl_py.Notify(), acl_py.Stream()
        n.record(s)
        s.wait(n)
        print(emulator.live_objects()["notifies"])
        emulator.reset_call_counts()
        acl_py.finalize()
        print(emulator.call_counts().get("aclrtDestroyNotify"), n.closed)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["1", "1 True"]
