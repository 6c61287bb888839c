"""Event flags (``Event(flags=...)``, ``Event.flags``, ``acl_py.EventFlag``):
aclrtCreateEventWithFlag, and what each flag allows Stream.wait, Event.elapsed_ms and
Event.timestamp_us."""
from __future__ import annotations

import time

import numpy as np
import pytest

import acl_py
from acl_py import AclArgumentError, AclTypeError, DeviceTensor, Event, EventFlag, Stream


def test_the_flags_are_cann_s():
    assert (EventFlag.SYNC, EventFlag.CAPTURE_STREAM_PROGRESS, EventFlag.TIME_LINE) == \
        (0x1, 0x2, 0x8)
    assert acl_py.EventFlag is EventFlag


def test_an_event_keeps_its_flags():
    with Event(flags=EventFlag.SYNC | EventFlag.TIME_LINE) as e:
        assert e.flags == EventFlag.SYNC | EventFlag.TIME_LINE
        assert isinstance(e.flags, EventFlag)
    with Event(flags=np.uint32(8)) as e:    # any integer
        assert e.flags is EventFlag.TIME_LINE
    with Event() as e:
        assert e.flags is None


def test_timing_events_time_the_work_between_them():
    with Stream() as s, Event(flags=EventFlag.TIME_LINE) as a, \
            Event(flags=EventFlag.TIME_LINE) as b:
        a.record(s)
        s.launch_host_func(lambda: time.sleep(0.03))
        b.record(s)
        b.synchronize()
        assert a.elapsed_ms(b) >= 25.0
        assert b.timestamp_us() > a.timestamp_us() > 0


def test_a_sync_event_orders_two_streams():
    x = np.arange(1024, dtype=np.float32)
    with Stream() as s1, Stream() as s2, Event(flags=EventFlag.SYNC) as ev:
        with DeviceTensor.from_numpy(x, s1) as d:
            s1.launch_host_func(lambda: time.sleep(0.02))
            ev.record(s1)
            s2.wait(ev)
            assert np.array_equal(d.to_numpy(s2), x)


def test_an_event_without_sync_cannot_be_waited_for():
    with Stream() as s, Event(flags=EventFlag.TIME_LINE) as ev:
        ev.record(s)
        with pytest.raises(AclArgumentError) as info:
            s.wait(ev)
        assert info.value.argument == "other" and "EventFlag.SYNC" in info.value.problem
        assert info.value.code == 207000 and info.value.call == "aclrtStreamWaitEvent"
        s.synchronize()


def test_an_event_without_time_line_has_no_timestamps():
    """CANN's runtime answers 0 on Atlas A2/A3; acl-py refuses the meaningless number."""
    with Stream() as s, Event(flags=EventFlag.SYNC) as a, Event() as b:
        a.record(s)
        b.record(s)
        s.synchronize()
        for call in (lambda: a.elapsed_ms(b), lambda: b.elapsed_ms(a), a.timestamp_us):
            with pytest.raises(AclArgumentError) as info:
                call()
            assert "EventFlag.TIME_LINE" in info.value.problem
        assert b.timestamp_us() > 0     # aclrtCreateEvent's events have timestamps


@pytest.mark.parametrize("flags, exc", [
    (0, AclArgumentError), (0x10, AclArgumentError), (0x20, AclArgumentError),
    (0x4, AclArgumentError), (-1, AclArgumentError), (True, AclTypeError),
    ("SYNC", AclTypeError), (1.0, AclTypeError)])
def test_bad_flags_are_refused_naming_the_argument(flags, exc):
    with pytest.raises(exc) as info:
        Event(flags=flags)
    assert info.value.argument == "flags"
