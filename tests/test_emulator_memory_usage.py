"""Where memory lies and who uses a device's memory, through the raw cffi binding, against
docs/emulator.md ("Memory": aclrtPointerGetAttributes, aclrtGetMemUsageInfo): the checks and
codes of hicann/runtime src/acl/aclrt_impl/memory.cpp, src/runtime/api/impl/api_error.cc and
api_impl.cc."""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_status import expect, ok
from _part_runs import only_where, reports_memory_usage

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw runtime state of the emulator")

HOST, DEVICE, UNREGISTERED = 0, 1, 2

# the counts of a part that reports them; elsewhere no test (Ascend 950 refuses the call:
# test_memory_usage_needs_a_current_device_and_is_not_on_950)
reporting_part = only_where(reports_memory_usage())


@pytest.fixture
def dev0():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    yield
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


def attributes(p):
    a = ffi.new("aclrtPtrAttributes *")
    a.rsv[0] = 77
    ok(lib.aclrtPointerGetAttributes(p, a), "aclrtPointerGetAttributes")
    assert list(a.rsv) == [0, 0, 0, 0]
    return int(a.location.type), int(a.location.id), int(a.pageSize)


def malloc(size, policy):
    p = ffi.new("void **")
    ok(lib.aclrtMalloc(p, size, policy), "aclrtMalloc")
    return p[0]


def test_the_declarations_are_the_vendors():
    assert (lib.ACL_MEM_LOCATION_TYPE_HOST, lib.ACL_MEM_LOCATION_TYPE_DEVICE,
            lib.ACL_MEM_LOCATION_TYPE_UNREGISTERED, lib.ACL_MEM_LOCATION_TYPE_MANAGED,
            lib.ACL_MEM_LOCATION_TYPE_HOST_NUMA) == (0, 1, 2, 3, 4)
    assert ffi.sizeof("aclrtPtrAttributes") == 28
    assert ffi.sizeof("aclrtMemUsageInfo") == 32 + 8 + 8 + 8 * 8
    assert ffi.offsetof("aclrtPtrAttributes", "pageSize") == 8


def test_where_memory_lies(dev0):
    page = 4096
    big, small = 4 << 20, 1000
    blocks = {
        (big, 0): 2 << 20, (small, 0): page,      # HUGE_FIRST: huge pages from 2 MiB
        (small, 1): 2 << 20, (big, 2): page,      # HUGE_ONLY, NORMAL_ONLY
        (small, 6): 1 << 30,                      # HUGE1G_ONLY
    }
    ptrs = []
    try:
        for (size, policy), want in blocks.items():
            p = malloc(size, policy)
            ptrs.append(p)
            assert attributes(p) == (DEVICE, 0, want), (size, policy)
            # anywhere inside the block, as the driver looks at pages
            assert attributes(ffi.cast("char *", p) + size - 1) == (DEVICE, 0, want)
        h = ffi.new("void **")
        ok(lib.aclrtMallocHost(h, 100))
        assert attributes(h[0]) == (HOST, 0, page)
        ok(lib.aclrtFreeHost(h[0]))
        x = np.zeros(16)
        assert attributes(ffi.cast("void *", x.ctypes.data)) == (UNREGISTERED, 0, page)
    finally:
        for p in ptrs:
            ok(lib.aclrtFree(p))


def test_registered_host_memory_is_host(dev0):
    buf = np.zeros(3 * 4096, dtype=np.uint8)
    base = (buf.ctypes.data + 4095) // 4096 * 4096
    ok(lib.aclrtHostRegisterV2(ffi.cast("void *", base), 4096, lib.ACL_HOST_REG_PINNED))
    try:
        assert attributes(ffi.cast("void *", base + 100))[0] == HOST
    finally:
        ok(lib.aclrtHostUnregister(ffi.cast("void *", base)))
    assert attributes(ffi.cast("void *", base + 100))[0] == UNREGISTERED


def test_pointer_refusals(dev0):
    a = ffi.new("aclrtPtrAttributes *")
    call = "aclrtPointerGetAttributes"
    expect(lib.aclrtPointerGetAttributes(ffi.NULL, a), 100000, call, "ptr")
    p = malloc(64, 0)
    expect(lib.aclrtPointerGetAttributes(p, ffi.NULL), 100000, call, "attributes")
    ok(lib.aclrtFree(p))
    expect(lib.aclrtPointerGetAttributes(p, a), 107000, call, "no live aclrtMalloc block")


def usage(device=0, n=128):
    info = ffi.new("aclrtMemUsageInfo[]", n)
    out = ffi.new("size_t *", 99)
    ok(lib.aclrtGetMemUsageInfo(device, info, n, out), "aclrtGetMemUsageInfo")
    return [(ffi.string(info[i].name).decode(), info[i].curMemSize, info[i].memPeakSize)
            for i in range(out[0])]


@reporting_part
def test_memory_usage_counts_the_programs_allocations(dev0):
    assert usage() == []
    p = malloc(3000, 0)
    [(_, _, peak_before)] = usage()            # the peak since the runtime came up
    q = malloc(5000, 0)
    try:
        peak = max(peak_before, 8000)
        assert usage() == [("APP", 8000, peak)]
        ok(lib.aclrtFree(q))
        q = None
        assert usage(n=1) == [("APP", 3000, peak)]
        free, total = ffi.new("size_t *"), ffi.new("size_t *")
        ok(lib.aclrtGetMemInfo(1, free, total))
        assert total[0] - free[0] == 3000      # the same bytes aclrtGetMemInfo counts
    finally:
        ok(lib.aclrtFree(p))
        if q is not None:
            ok(lib.aclrtFree(q))
    assert usage() == []                       # a module using none is left out


@reporting_part
def test_the_peak_is_the_runtimes_since_it_came_up(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        info = ffi.new("aclrtMemUsageInfo[1]"); out = ffi.new("size_t *"); p = ffi.new("void **")
        def peak():
            assert lib.aclrtMalloc(p, 10, 0) == 0
            assert lib.aclrtGetMemUsageInfo(0, info, 1, out) == 0 and out[0] == 1
            assert lib.aclrtFree(p[0]) == 0
            return info[0].memPeakSize
        assert lib.aclrtSetDevice(0) == 0 and lib.aclrtMalloc(p, 5000, 0) == 0
        assert lib.aclrtFree(p[0]) == 0
        print(peak())
        assert lib.aclFinalize() == 0 and lib.aclInit(ffi.NULL) == 0
        assert lib.aclrtSetDevice(0) == 0
        print(peak())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["5000", "10"]


def test_memory_usage_refusals(dev0):
    info = ffi.new("aclrtMemUsageInfo[2]")
    out = ffi.new("size_t *", 5)
    call = "aclrtGetMemUsageInfo"
    expect(lib.aclrtGetMemUsageInfo(0, ffi.NULL, 2, out), 100000, call, "memUsageInfo")
    expect(lib.aclrtGetMemUsageInfo(0, info, 2, ffi.NULL), 100000, call, "outputNum")
    expect(lib.aclrtGetMemUsageInfo(0, info, 0, out), 107000, call, "inputNum is 0")
    assert out[0] == 0                         # cleared before the checks that follow it
    for bad in (-1, 1):
        expect(lib.aclrtGetMemUsageInfo(bad, info, 2, out), 107001, call, f"deviceId {bad}")


def test_memory_usage_needs_a_current_device_and_is_not_on_950(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        info = ffi.new("aclrtMemUsageInfo[2]"); out = ffi.new("size_t *")
        msg = lambda: ffi.string(lib.aclGetRecentErrMsg()).decode()
        print(lib.aclrtGetMemUsageInfo(0, info, 2, out), msg())
        assert lib.aclrtSetDevice(0) == 0
        print(lib.aclrtGetMemUsageInfo(0, info, 2, out), msg())
    """, env={"ACL_EMU_SOC": "Ascend950PR_9599"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("107002 aclrtGetMemUsageInfo:")
    assert lines[1].startswith("207000 aclrtGetMemUsageInfo: the Ascend 950PR/950DT")
