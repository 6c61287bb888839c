"""What a program asks the emulator's runtime about its devices (docs/emulator.md, "Device
information"): the run mode, attributes, stream priorities, status, utilization, the
process's core limits and the current default stream, through the raw cffi binding. Each
rule gives the vendor's status code and a message naming the call and the argument; nothing
leaks (the conftest's live-object check)."""
from __future__ import annotations

import json
import threading

import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version

from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules of the emulator's runtime")


def test_run_mode_is_host():
    mode = ffi.new("aclrtRunMode *", 99)
    ok(lib.aclrtGetRunMode(mode), "aclrtGetRunMode")
    assert mode[0] == lib.ACL_HOST == 1
    assert lib.ACL_DEVICE == 0


def test_run_mode_null_output_is_refused():
    expect(lib.aclrtGetRunMode(ffi.NULL), 100000, "aclrtGetRunMode", "runMode")


def test_run_mode_needs_no_init(run_python):
    """CANN's aclrtGetRunMode asks the driver, without aclInit or a context (hicann/runtime
    src/runtime/api/impl/api_impl.cc GetRunMode)."""
    r = run_python("""
        from acl_py.raw import ffi, lib
        mode = ffi.new("aclrtRunMode *", 99)
        print(lib.aclrtGetRunMode(mode), mode[0])
        n = ffi.new("uint32_t *")
        print(lib.aclrtGetDeviceCount(n), n[0])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "1", "0", "1"]  # nor does aclrtGetDeviceCount


# ---- device attributes --------------------------------------------------------------------

@pytest.fixture
def dev():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    yield 0
    lib.aclrtResetDeviceResLimit(0)
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


def info(attr, device=0):
    v = ffi.new("int64_t *", -99)
    ok(lib.aclrtGetDeviceInfo(device, attr, v), "aclrtGetDeviceInfo")
    return v[0]


SOC = ffi.string(lib.aclrtGetSocName()).decode()


# Each part's platform configuration (hicann/runtime src/platform/platform_config/cann/<part>.ini,
# cann-dev/ for Ascend950PR_9599): ai_cpu_cnt, ai_core_cnt, cube_core_cnt (None: the file has
# none), vector_core_cnt, l2_size, NpuArch.
PLATFORM = {
    "Ascend910B2": (6, 24, 24, 48, 192 << 20, 2201),
    "Ascend910_9391": (6, 24, 24, 48, 192 << 20, 2201),
    "Ascend950PR_9599": (6, 36, 36, 72, 128 << 20, 3510),
    "Ascend310P3": (7, 8, None, 7, 16 << 20, 2002),
    "Ascend910A": (4, 32, None, 0, 32 << 20, 1001),
}


@pytest.mark.skipif(SOC not in PLATFORM, reason=f"{SOC}: no figures in PLATFORM (the five "
                    "parts the suite runs under)")
def test_device_info_is_the_parts(dev):
    """The part's platform configuration, not a virtual device, the emulated memory's total;
    on the default part also no SIMT units (warp size 0) and a PCIe card."""
    cpu, core, cube, vector, l2, arch = PLATFORM[SOC]
    names = ("AICPU_CORE_NUM", "AICORE_CORE_NUM", "VECTOR_CORE_NUM", "L2_CACHE_SIZE",
             "NPU_ARCH", "IS_VIRTUAL")
    assert [info(getattr(lib, "ACL_DEV_ATTR_" + n)) for n in names] == \
        [cpu, core, vector, l2, arch, 0]
    if cube is not None:
        assert info(lib.ACL_DEV_ATTR_CUBE_CORE_NUM) == cube
    total = ffi.new("size_t[2]")
    ok(lib.aclrtGetMemInfo(lib.ACL_HBM_MEM, total, total + 1))
    assert info(lib.ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE) == total[1]
    if SOC == "Ascend910B2":
        assert info(lib.ACL_DEV_ATTR_WARP_SIZE) == 0
        assert info(lib.ACL_DEV_ATTR_DEVICE_FORM_FACTOR) == lib.ACL_DEVICE_FORM_FACTOR_PCIE_CARD


def test_device_info_needs_no_current_device():
    """The runtime reads a device's figures by its id, with no context (in a thread that
    has none)."""
    out = {}
    t = threading.Thread(target=lambda: out.update(rc=lib.aclrtGetDeviceInfo(
        0, lib.ACL_DEV_ATTR_AICORE_CORE_NUM, out.setdefault("v", ffi.new("int64_t *")))))
    t.start()
    t.join()
    assert out["rc"] == 0 and out["v"][0] > 0


def test_device_info_rules(dev):
    v = ffi.new("int64_t *", 5)
    expect(lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_AICORE_CORE_NUM, ffi.NULL), 100000,
           "aclrtGetDeviceInfo", "value")
    for bad in (1, 64, 2 ** 32 - 1):
        expect(lib.aclrtGetDeviceInfo(bad, lib.ACL_DEV_ATTR_AICORE_CORE_NUM, v), 107000,
               "aclrtGetDeviceInfo", "deviceId", str(bad))
    for bad in (0, 2, 103, 300, 999, 2 ** 31):
        expect(lib.aclrtGetDeviceInfo(0, bad, v), 107000, "aclrtGetDeviceInfo", "attr")
    assert v[0] == 5   # nothing written on a refusal


def test_priority_range_status_and_utilization(dev):
    least, greatest = ffi.new("int32_t *", -1), ffi.new("int32_t *", -1)
    ok(lib.aclrtDeviceGetStreamPriorityRange(least, greatest))
    assert (least[0], greatest[0]) == (7, 0)
    ok(lib.aclrtDeviceGetStreamPriorityRange(ffi.NULL, greatest))
    ok(lib.aclrtDeviceGetStreamPriorityRange(least, ffi.NULL))
    ok(lib.aclrtDeviceGetStreamPriorityRange(ffi.NULL, ffi.NULL))

    status = ffi.new("aclrtDeviceStatus *", 7)
    ok(lib.aclrtQueryDeviceStatus(0, status))
    assert status[0] == lib.ACL_RT_DEVICE_STATUS_NORMAL
    expect(lib.aclrtQueryDeviceStatus(0, ffi.NULL), 100000, "aclrtQueryDeviceStatus",
           "deviceStatus")
    for bad in (-1, 1, 64):
        expect(lib.aclrtQueryDeviceStatus(bad, status), 107001, "aclrtQueryDeviceStatus",
               "deviceId")

    u = ffi.new("aclrtUtilizationInfo *")
    ok(lib.aclrtGetDeviceUtilizationRate(0, u))
    assert (u.cubeUtilization, u.vectorUtilization, u.aicpuUtilization,
            u.memoryUtilization) == (0, 0, 0, -1)
    # another device than the thread's, or none: the runtime gives nothing, the ACL layer -1s
    for other in (1, -1, 99):
        ok(lib.aclrtGetDeviceUtilizationRate(other, u))
        assert (u.cubeUtilization, u.vectorUtilization, u.aicpuUtilization,
                u.memoryUtilization) == (-1, -1, -1, -1)
    expect(lib.aclrtGetDeviceUtilizationRate(0, ffi.NULL), 100000,
           "aclrtGetDeviceUtilizationRate", "utilizationInfo")
    u.utilizationExtend = ffi.cast("aclrtUtilizationExtendInfo *", 8)
    expect(lib.aclrtGetDeviceUtilizationRate(0, u), 100000, "aclrtGetDeviceUtilizationRate",
           "utilizationExtend")


# ---- core limits ----------------------------------------------------------------------------

CUBE, VECTOR = 0, 1


def limit(kind, device=0):
    v = ffi.new("uint32_t *")
    ok(lib.aclrtGetDeviceResLimit(device, kind, v), "aclrtGetDeviceResLimit")
    return v[0]


def thread_limit(kind):
    v = ffi.new("uint32_t *")
    ok(lib.aclrtGetResInCurrentThread(kind, v), "aclrtGetResInCurrentThread")
    return v[0]


def test_core_limits_default_set_reset(dev):
    cube, vector = (info(lib.ACL_DEV_ATTR_AICORE_CORE_NUM),
                    info(lib.ACL_DEV_ATTR_VECTOR_CORE_NUM))
    assert (limit(CUBE), limit(VECTOR)) == (cube, vector)
    assert (thread_limit(CUBE), thread_limit(VECTOR)) == (cube, vector)
    some = min(vector, 1)           # a part without vector cores (Ascend910A) takes only 0
    ok(lib.aclrtSetDeviceResLimit(0, VECTOR, some))
    ok(lib.aclrtSetDeviceResLimit(0, CUBE, 0))          # 0 is taken
    assert (limit(CUBE), limit(VECTOR)) == (0, some)
    assert (thread_limit(CUBE), thread_limit(VECTOR)) == (0, some)
    ok(lib.aclrtSetDeviceResLimit(0, CUBE, cube))       # the total itself is taken
    assert limit(CUBE) == cube
    ok(lib.aclrtResetDeviceResLimit(0))
    assert (limit(CUBE), limit(VECTOR)) == (cube, vector)


def test_a_cube_limit_rewrites_the_cube_core_count(dev):
    """CANN reads ACL_DEV_ATTR_CUBE_CORE_NUM from the platform configuration, which
    aclrtSetDeviceResLimit(CUBE) rewrites; the AI core count comes from the driver. On a part
    whose configuration has no cube count (the Atlas training and inference series) the
    query is 107000 until a limit writes one, and again after the reset."""
    def cube():
        v = ffi.new("int64_t *", -99)
        rc = lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_CUBE_CORE_NUM, v)
        assert rc in (0, 107000), rc
        return v[0] if rc == 0 else rc
    ai, before = info(lib.ACL_DEV_ATTR_AICORE_CORE_NUM), cube()
    assert (before == 107000) == (short_soc_version(SOC) in ("Ascend910", "Ascend310P"))
    ok(lib.aclrtSetDeviceResLimit(0, CUBE, 3))
    assert (info(lib.ACL_DEV_ATTR_AICORE_CORE_NUM), cube()) == (ai, 3)
    ok(lib.aclrtResetDeviceResLimit(0))
    assert cube() == before


def test_parts_without_a_cube_core_count(run_python):
    """Ascend910A's platform configuration has no cube_core_cnt: 107000, until a cube limit
    writes one; 32 AI cores, no vector cores (so no vector limit above 0)."""
    r = run_python("""
        from acl_py.raw import ffi, lib
        v = ffi.new("int64_t *")
        lib.aclInit(ffi.NULL)
        lib.aclrtSetDevice(0)
        out = [lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_CUBE_CORE_NUM, v)]
        lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_AICORE_CORE_NUM, v)
        out.append(v[0])
        lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_VECTOR_CORE_NUM, v)
        out.append(v[0])
        out.append(lib.aclrtSetDeviceResLimit(0, 1, 1))
        out.append(lib.aclrtSetDeviceResLimit(0, 0, 30))
        out.append(lib.aclrtGetDeviceInfo(0, lib.ACL_DEV_ATTR_CUBE_CORE_NUM, v))
        out.append(v[0])
        print(*out)
        lib.aclrtResetDevice(0)
        lib.aclFinalize()
    """, env={"ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["107000", "32", "0", "107000", "0", "0", "30"]


def test_core_limit_rules(dev):
    v = ffi.new("uint32_t *", 5)
    vector = info(lib.ACL_DEV_ATTR_VECTOR_CORE_NUM)
    expect(lib.aclrtSetDeviceResLimit(0, VECTOR, vector + 1), 107000,
           "aclrtSetDeviceResLimit", "value", str(vector + 1))
    assert limit(VECTOR) == vector
    # the ACL layer's NULL check first, then a negative id, then the type, then the id
    expect(lib.aclrtGetDeviceResLimit(-1, 9, ffi.NULL), 100000, "aclrtGetDeviceResLimit",
           "value")
    expect(lib.aclrtGetDeviceResLimit(-1, 9, v), 107001, "aclrtGetDeviceResLimit", "deviceId")
    expect(lib.aclrtGetDeviceResLimit(7, 2, v), 107000, "aclrtGetDeviceResLimit", "type")
    expect(lib.aclrtGetDeviceResLimit(7, VECTOR, v), 107001, "aclrtGetDeviceResLimit",
           "deviceId")
    expect(lib.aclrtSetDeviceResLimit(-1, 9, 1), 107001, "aclrtSetDeviceResLimit", "deviceId")
    expect(lib.aclrtSetDeviceResLimit(0, 5, 1), 107000, "aclrtSetDeviceResLimit", "type")
    expect(lib.aclrtSetDeviceResLimit(7, CUBE, 1), 107001, "aclrtSetDeviceResLimit",
           "deviceId")
    expect(lib.aclrtResetDeviceResLimit(-3), 107001, "aclrtResetDeviceResLimit", "deviceId")
    expect(lib.aclrtResetDeviceResLimit(64), 107001, "aclrtResetDeviceResLimit", "deviceId")
    expect(lib.aclrtGetResInCurrentThread(CUBE, ffi.NULL), 100000,
           "aclrtGetResInCurrentThread", "value")
    expect(lib.aclrtGetResInCurrentThread(2, v), 107000, "aclrtGetResInCurrentThread", "type")
    assert v[0] == 5


def test_core_limits_belong_to_a_held_device_and_go_with_it(run_python):
    """Device 1, never set: no device object (507033); set, limited, reset: the limit went
    with it. A thread without a device: 107002."""
    r = run_python("""
        import json, threading
        from acl_py.raw import ffi, lib
        out = {}
        def msg():
            p = lib.aclGetRecentErrMsg()
            return ffi.string(p).decode() if p != ffi.NULL else None
        v = ffi.new("uint32_t *")
        lib.aclInit(ffi.NULL)
        out["unset"] = [lib.aclrtGetDeviceResLimit(1, 1, v), lib.aclrtSetDeviceResLimit(1, 1, 1),
                        lib.aclrtResetDeviceResLimit(1), msg()]
        out["thread"] = [lib.aclrtGetResInCurrentThread(0, v), msg()]
        lib.aclrtSetDevice(1)
        lib.aclrtSetDeviceResLimit(1, 1, 3)
        lib.aclrtGetDeviceResLimit(1, 1, v)
        out["limited"] = v[0]
        lib.aclrtResetDevice(1)
        out["after_reset"] = lib.aclrtGetDeviceResLimit(1, 1, v)
        lib.aclrtSetDevice(1)
        lib.aclrtGetDeviceResLimit(1, 1, v)
        out["set_again"] = v[0]
        total = ffi.new("int64_t *")
        lib.aclrtGetDeviceInfo(1, lib.ACL_DEV_ATTR_VECTOR_CORE_NUM, total)
        out["total"] = total[0]
        lib.aclrtResetDevice(1)
        lib.aclFinalize()
        print(json.dumps(out))
    """, env={"ACL_EMU_DEVICE_COUNT": "2", "ACL_EMU_SOC": "Ascend910B2"})   # 48 vector cores
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["unset"][:3] == [507033] * 3
    assert out["unset"][3].startswith("aclrtResetDeviceResLimit:") and "deviceId 1" in out["unset"][3]
    assert out["thread"][0] == 107002 and out["thread"][1].startswith("aclrtGetResInCurrentThread:")
    assert out["limited"] == 3 and out["after_reset"] == 507033
    assert out["set_again"] == out["total"] > 3


# ---- the current default stream --------------------------------------------------------------

def live_streams():
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return out.streams


def test_current_default_stream_is_a_stream_handle(dev):
    before = live_streams()
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCtxGetCurrentDefaultStream(s), "aclrtCtxGetCurrentDefaultStream")
    assert s[0] != ffi.NULL
    again = ffi.new("aclrtStream *")
    ok(lib.aclrtCtxGetCurrentDefaultStream(again))
    assert again[0] == s[0]
    assert live_streams() == before          # no created stream
    # every stream call takes it, as the default (NULL) stream
    buf = ffi.new("void **")
    ok(lib.aclrtMalloc(buf, 64, 0))
    try:
        ok(lib.aclrtMemsetAsync(buf[0], 64, 7, 64, s[0]), "aclrtMemsetAsync")
        ok(lib.aclrtSynchronizeStream(s[0]), "aclrtSynchronizeStream")
        status = ffi.new("aclrtStreamStatus *")
        ok(lib.aclrtStreamQuery(s[0], status))
        assert status[0] == lib.ACL_STREAM_STATUS_COMPLETE
        host = ffi.new("uint8_t[64]")
        ok(lib.aclrtMemcpy(host, 64, buf[0], 64, lib.ACL_MEMCPY_DEVICE_TO_HOST))
        assert bytes(host) == b"\x07" * 64
    finally:
        ok(lib.aclrtFree(buf[0]))
    expect(lib.aclrtDestroyStream(s[0]), 100000, "aclrtDestroyStream", "default stream")
    expect(lib.aclrtDestroyStreamForce(s[0]), 100000, "aclrtDestroyStreamForce",
           "default stream")
    ok(lib.aclrtSynchronizeStream(s[0]))      # still alive


def test_current_default_stream_rules(dev):
    expect(lib.aclrtCtxGetCurrentDefaultStream(ffi.NULL), 100000,
           "aclrtCtxGetCurrentDefaultStream", "stream")
    out = {}

    def no_device():
        s = ffi.new("aclrtStream *")
        out["rc"] = lib.aclrtCtxGetCurrentDefaultStream(s)
        p = lib.aclGetRecentErrMsg()
        out["msg"] = ffi.string(p).decode()
    t = threading.Thread(target=no_device)
    t.start()
    t.join()
    assert out["rc"] == 107002 and out["msg"].startswith("aclrtCtxGetCurrentDefaultStream:")


def test_current_default_stream_goes_with_its_device(run_python):
    """After the device's teardown the handle is no live stream (107017), and the next
    default stream is a new one."""
    r = run_python("""
        from acl_py.raw import ffi, lib
        lib.aclInit(ffi.NULL)
        lib.aclrtSetDevice(0)
        s = ffi.new("aclrtStream *")
        lib.aclrtCtxGetCurrentDefaultStream(s)
        old = s[0]
        lib.aclrtResetDevice(0)
        lib.aclrtSetDevice(0)
        print(lib.aclrtSynchronizeStream(old) if False else "", end="")
        lib.aclrtCtxGetCurrentDefaultStream(s)
        print(lib.aclrtResetDevice(0), lib.aclrtSynchronizeStream(s[0]), lib.aclFinalize())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "107017", "0"]
