"""Event timestamps: ``Event.timestamp_us()`` and, on the emulator, aclrtEventGetTimestamp's
rules (CANN's order and codes, docs/emulator.md)."""
from __future__ import annotations

import time

import pytest

import acl_py
from acl_py import errors
from acl_py.raw import ffi, lib

from _emu_status import expect


def test_timestamps_follow_the_records(emulator):
    s = acl_py.Stream()
    with acl_py.Event() as start, acl_py.Event() as end:
        before_us = time.monotonic_ns() // 1000
        start.record(s)
        b = acl_py.DeviceBuffer(1 << 22)
        for _ in range(8):
            b.memset(1, stream=s)
        end.record(s)
        s.synchronize()
        after_us = time.monotonic_ns() // 1000
        t0, t1 = start.timestamp_us(), end.timestamp_us()
        assert isinstance(t0, int) and before_us <= t0 <= t1 <= after_us
        # The same clock as elapsed_ms (float milliseconds; timestamps truncate to 1 us).
        assert abs((t1 - t0) - start.elapsed_ms(end) * 1000) <= 2
        b.close()
    s.close()


def test_timestamp_errors(emulator):
    e = acl_py.Event()
    with pytest.raises(errors.AclArgumentError) as info:
        e.timestamp_us()
    assert info.value.argument == "self" and info.value.code == 507000
    assert info.value.call == "aclrtEventGetTimestamp"
    e.close()
    with pytest.raises(errors.ClosedError):
        e.timestamp_us()


def test_raw_timestamp_rules(emulator):
    acl_py.init()
    acl_py.set_device(0)
    out = ffi.new("uint64_t *")
    ev = ffi.new("aclrtEvent *")
    assert lib.aclrtCreateEvent(ev) == 0
    try:
        expect(lib.aclrtEventGetTimestamp(ev[0], ffi.NULL), 100000, "aclrtEventGetTimestamp",
               "timestamp")
        expect(lib.aclrtEventGetTimestamp(ffi.NULL, out), 100000, "aclrtEventGetTimestamp",
               "event is NULL")
        expect(lib.aclrtEventGetTimestamp(ffi.cast("aclrtEvent", 0x10), out), 107017,
               "aclrtEventGetTimestamp")
        expect(lib.aclrtEventGetTimestamp(ev[0], out), 507000, "aclrtEventGetTimestamp",
               "never been recorded")
        # A record behind a hung task has no timestamp yet (107006) until it completes.
        s = acl_py.Stream()
        b = acl_py.DeviceBuffer(64)
        with emulator.inject_faults("aclrtMemsetAsync:1:hang=400"):
            b.memset(0, stream=s)
            assert lib.aclrtRecordEvent(ev[0], s.handle) == 0
            expect(lib.aclrtEventGetTimestamp(ev[0], out), 107006, "aclrtEventGetTimestamp",
                   "not completed")
            s.synchronize()
        assert lib.aclrtEventGetTimestamp(ev[0], out) == 0
        assert 0 < out[0] <= time.monotonic_ns() // 1000
        b.close()
        s.close()
    finally:
        assert lib.aclrtDestroyEvent(ev[0]) == 0
