"""Where memory lies and who uses a device's memory, in Python: ``acl_py.memory_location``,
``DeviceBuffer.location`` / ``HostBuffer.location``, ``Device.memory_usage()`` and the
``memory_usage`` ``acl-py info`` reports (docs/emulator.md, "Memory")."""
from __future__ import annotations

import json

import numpy as np
import pytest

import acl_py
from acl_py import AclArgumentError, AclTypeError, MemoryLocation, MemoryUsage

from _part_runs import only_where, reports_memory_usage

# the usage of a part that reports it; elsewhere no test (Ascend 950 does not: memory_usage()
# is None there, test_memory_usage_is_none_where_the_part_has_none)
reporting_part = only_where(reports_memory_usage())


def test_locations(emulator):
    with acl_py.DeviceBuffer(4 << 20) as d, acl_py.HostBuffer(100) as h:
        assert d.location == MemoryLocation("device", 0, 2 << 20)
        assert acl_py.memory_location(d.address + 5) == d.location
        assert h.location == MemoryLocation("host", None, 4096)
    x = np.zeros(8)
    assert acl_py.memory_location(x.ctypes.data) == MemoryLocation("unregistered", None, 4096)


def test_location_refusals(emulator):
    b = acl_py.DeviceBuffer(64)
    address = b.address
    b.close()
    acl_py.Device(0).synchronize()
    with pytest.raises(AclArgumentError) as e:
        acl_py.memory_location(address)
    assert e.value.argument == "address" and e.value.code == 107000
    assert e.value.call == "aclrtPointerGetAttributes"
    with pytest.raises(AclArgumentError, match="address: is 0"):
        acl_py.memory_location(0)
    with pytest.raises(AclTypeError):
        acl_py.memory_location("0x1000")
    with pytest.raises(acl_py.ClosedError):
        b.location


@reporting_part
def test_memory_usage_follows_the_programs_allocations(emulator):
    dev = acl_py.Device(0)
    before = sum(u.current for u in dev.memory_usage() or [])
    with acl_py.DeviceBuffer(1 << 20):
        usage = dev.memory_usage()
        assert [u.module for u in usage] == ["APP"]
        assert isinstance(usage[0], MemoryUsage)
        assert usage[0].current >= before + (1 << 20)
        assert usage[0].peak >= usage[0].current
        free, total = dev.mem_info()
        assert usage[0].current == total - free


@reporting_part
def test_info_reports_who_uses_the_memory(run_python, emulator):
    r = run_python("""
        import json, acl_py
        from acl_py import info
        buf = acl_py.DeviceBuffer(3 << 20)       # the runtime stays up: info reports it
        data = info.collect()
        print(json.dumps(data["devices"][0]["memory_usage"]))
        print(info.format_text(data))
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    usage = json.loads(lines[0])
    assert [u["module"] for u in usage] == ["APP"] and usage[0]["current"] == 3 << 20
    assert "            in use: APP 3.0 MiB (peak 3.0 MiB)" in lines


def test_memory_usage_is_none_where_the_part_has_none(run_python, emulator):
    r = run_python("""
        import acl_py
        print(acl_py.Device(0).memory_usage())
    """, env={"ACL_EMU_SOC": "Ascend950PR_9599"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "None"


@pytest.mark.hardware
def test_locations_and_usage_on_the_device():
    dev = acl_py.Device(0)
    with acl_py.DeviceBuffer(4 << 20) as d, acl_py.HostBuffer(4096) as h:
        assert d.location.kind == "device" and d.location.device == 0
        assert d.location.page_size in (4096, 64 << 10, 2 << 20, 1 << 30)
        assert h.location.kind == "host"
        usage = dev.memory_usage()
        if usage is not None:
            assert usage == sorted(usage, key=lambda u: -u.current)
            assert all(u.peak >= u.current > 0 for u in usage)


# ---- 32-bit fills (aclrtMemsetD32) ----

def test_memset32_sync_and_on_a_stream():
    with acl_py.DeviceBuffer(64) as buf, acl_py.Stream() as s:
        buf.memset(0)
        buf.memset32(0xDEADBEEF, 3)
        want = np.zeros(16, dtype=np.uint32)
        want[:3] = 0xDEADBEEF
        np.testing.assert_array_equal(np.frombuffer(buf.copy_to_host(), dtype=np.uint32), want)
        buf.memset32(7, offset=8, stream=s)          # the rest: 14 words
        s.synchronize()
        want[2:] = 7
        np.testing.assert_array_equal(np.frombuffer(buf.copy_to_host(), dtype=np.uint32), want)


def test_memset32_argument_checks():
    with acl_py.DeviceBuffer(16) as buf:
        for bad in (-1, 2 ** 32, True, 1.0):
            with pytest.raises(AclArgumentError, match="value"):
                buf.memset32(bad)
        with pytest.raises(AclArgumentError, match="offset: words start on a multiple of 4"):
            buf.memset32(1, offset=2)
        with pytest.raises(AclArgumentError, match="count"):
            buf.memset32(1, 5)
        buf.memset32(1, 0)                            # nothing to do
