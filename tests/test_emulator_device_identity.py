"""Which device is which, through the raw cffi binding, against docs/emulator.md ("Device
identity and topology"): aclrtDeviceGetUuid, aclrtDeviceGetPCIBusId, aclrtDeviceGetByPCIBusId,
aclrtGetDevicesTopo, the six device id mappings and aclGetDeviceCapability, with the checks
and codes of hicann/runtime src/acl/aclrt_impl/device.cpp and acl.cpp,
src/runtime/api/api_c_device.cc, api/impl/api_error.cc and api_impl.cc. The deprecated
aclrtGetVersion and aclsysGetCANNVersion (declared outside cffi's reach, as CANN marks them)
are called through ctypes."""
from __future__ import annotations

import ctypes
import json
import uuid

import pytest

from acl_py import _loader
from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: devices and part chosen with ACL_EMU_*")

HCCS, PIX, PIB, PHB, SYS, SIO, HCCS_SW = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40
# An 8-NPU server's buses, machine device 0..7 (docs/emulator.md).
BUSES = ["0000:c1:00.0", "0000:81:00.0", "0000:41:00.0", "0000:01:00.0",
         "0000:c2:00.0", "0000:82:00.0", "0000:42:00.0", "0000:02:00.0"]
MAPPINGS = ["aclrtGetLogicDevIdByUserDevId", "aclrtGetUserDevIdByLogicDevId",
            "aclrtGetLogicDevIdByPhyDevId", "aclrtGetPhyDevIdByLogicDevId",
            "aclrtGetUserDevIdByPhyDevId", "aclrtGetPhyDevIdByUserDevId"]


def test_the_declarations_are_the_vendors():
    assert (lib.ACL_RT_DEVS_TOPOLOGY_HCCS, lib.ACL_RT_DEVS_TOPOLOGY_PIX,
            lib.ACL_RT_DEVS_TOPOLOGY_PIB, lib.ACL_RT_DEVS_TOPOLOGY_PHB,
            lib.ACL_RT_DEVS_TOPOLOGY_SYS, lib.ACL_RT_DEVS_TOPOLOGY_SIO,
            lib.ACL_RT_DEVS_TOPOLOGY_HCCS_SW) == (HCCS, PIX, PIB, PHB, SYS, SIO, HCCS_SW)
    assert ffi.sizeof("aclrtUuid") == 16
    assert (lib.ACL_DEVICE_INFO_AI_CORE_NUM, lib.ACL_DEVICE_INFO_VECTOR_CORE_NUM,
            lib.ACL_DEVICE_INFO_L2_SIZE) == (0, 1, 2)
    assert (lib.ACL_MAJOR_VERSION, lib.ACL_MINOR_VERSION, lib.ACL_PATCH_VERSION) == (1, 17, 0)


# This process's part: the Atlas training and inference series have no UUID or PCI bus id
# (207000 after the argument checks: the API reference lists them as unsupported), and an
# inference part's link with itself is PIX (docs/emulator.md, "Device identity and
# topology"). The machines of several devices below run on the parts they describe.
SOC = soc_name()
HAS_IDS = short_soc_version(SOC) not in ("Ascend910", "Ascend310P")
SELF_LINK = PIX if short_soc_version(SOC) == "Ascend310P" else HCCS
A2 = "Ascend910B2"


def test_device_0_of_one():
    u = ffi.new("aclrtUuid *")
    bus = ffi.new("char[16]", b"x" * 15)
    d = ffi.new("int32_t *", -5)
    if HAS_IDS:
        ok(lib.aclrtDeviceGetUuid(0, u), "aclrtDeviceGetUuid")
        assert str(uuid.UUID(bytes=bytes(ffi.buffer(u.bytes)))) == \
            "41434c45-4d55-4000-8000-000000000000"
        ok(lib.aclrtDeviceGetPCIBusId(0, bus, 16), "aclrtDeviceGetPCIBusId")
        assert ffi.string(bus) == b"0000:c1:00.0"
        ok(lib.aclrtDeviceGetPCIBusId(0, bus, 13))        # exactly 13 bytes is enough
        ok(lib.aclrtDeviceGetByPCIBusId(b"0000:c1:00.0", d), "aclrtDeviceGetByPCIBusId")
        assert d[0] == 0
    else:
        expect(lib.aclrtDeviceGetUuid(0, u), 207000, "aclrtDeviceGetUuid")
        expect(lib.aclrtDeviceGetPCIBusId(0, bus, 16), 207000, "aclrtDeviceGetPCIBusId")
        expect(lib.aclrtDeviceGetByPCIBusId(b"0000:c1:00.0", d), 107000,
               "aclrtDeviceGetByPCIBusId")               # no device has a bus id
    v = ffi.new("uint64_t *")
    ok(lib.aclrtGetDevicesTopo(0, 0, v), "aclrtGetDevicesTopo")
    assert v[0] == SELF_LINK                           # a device with itself
    for name in MAPPINGS:
        ok(getattr(lib, name)(0, d), name)
        assert d[0] == 0, name


def test_identity_refusals():
    u = ffi.new("aclrtUuid *")
    bus = ffi.new("char[16]")
    d = ffi.new("int32_t *")
    call = "aclrtDeviceGetUuid"
    expect(lib.aclrtDeviceGetUuid(0, ffi.NULL), 100000, call, "uuid")
    expect(lib.aclrtDeviceGetUuid(-1, u), 107001, call, "deviceId -1", "negative")
    expect(lib.aclrtDeviceGetUuid(1, u), 107001, call, "deviceId 1", "ACL_EMU_DEVICE_COUNT")
    call = "aclrtDeviceGetPCIBusId"
    expect(lib.aclrtDeviceGetPCIBusId(0, ffi.NULL, 16), 100000, call, "pciBusId")
    # the runtime's order: a negative id, then the length, then the id's conversion
    expect(lib.aclrtDeviceGetPCIBusId(-1, bus, 12), 107001, call, "deviceId -1")
    expect(lib.aclrtDeviceGetPCIBusId(5, bus, 12), 107000, call, "len 12", "13 bytes")
    expect(lib.aclrtDeviceGetPCIBusId(5, bus, 13), 107001, call, "deviceId 5")
    call = "aclrtDeviceGetByPCIBusId"
    expect(lib.aclrtDeviceGetByPCIBusId(ffi.NULL, d), 100000, call, "pciBusId")
    expect(lib.aclrtDeviceGetByPCIBusId(b"0000:c1:00.0", ffi.NULL), 100000, call, "deviceId")
    for other in (b"0000:C1:00.0", b"0000:c1:00.0 ", b"c1:00.0", b"", b"0000:81:00.0"):
        expect(lib.aclrtDeviceGetByPCIBusId(other, d), 107000, call, "is no device's")
    v = ffi.new("uint64_t *")
    call = "aclrtGetDevicesTopo"
    expect(lib.aclrtGetDevicesTopo(0, 0, ffi.NULL), 100000, call, "value")
    expect(lib.aclrtGetDevicesTopo(1, 0, v), 107001, call, "deviceId 1")
    expect(lib.aclrtGetDevicesTopo(0, 2**32 - 1, v), 107001, call, "otherDeviceId 4294967295")


@pytest.mark.parametrize("name", MAPPINGS)
def test_mapping_refusals(name):
    d = ffi.new("int32_t *")
    fn = getattr(lib, name)
    out = name.split("By")[0][len("aclrtGet"):]     # LogicDevId, UserDevId, PhyDevId
    expect(fn(0, ffi.NULL), 100000, name, "output pointer")
    # the rts wrapper refuses a negative id (107000) before the id is converted (107001)
    expect(fn(-1, d), 107000, name, "-1", ">= 0")
    expect(fn(1, d), 107001, name, " 1 ")
    assert out in ("LogicDevId", "UserDevId", "PhyDevId")


def test_device_capability():
    v = ffi.new("int64_t *", -1)
    call = "aclGetDeviceCapability"
    got = []
    for info in (0, 1, 2):
        ok(lib.aclGetDeviceCapability(0, info, v), call)
        got.append(v[0])
    if SOC == A2:
        assert got == [24, 48, 201326592]             # Ascend910B2's .ini
    attrs = ffi.new("int64_t *")                      # aclrtGetDeviceInfo's figures
    for info, attr in zip((0, 1, 2), (101, 201, 302)):
        ok(lib.aclrtGetDeviceInfo(0, attr, attrs))
        ok(lib.aclGetDeviceCapability(0, info, v))
        assert v[0] == attrs[0]
    expect(lib.aclGetDeviceCapability(0, 0, ffi.NULL), 100000, call, "value")
    expect(lib.aclGetDeviceCapability(1, 0, v), 100000, call, "deviceId 1")
    for bad in (-1, 3, 0x7FFFFFFF):
        expect(lib.aclGetDeviceCapability(0, bad, v), 100000, call, f"deviceInfo {bad}")


EIGHT = """
    import json, uuid
    from acl_py.raw import ffi, lib
    u = ffi.new("aclrtUuid *"); bus = ffi.new("char[13]"); d = ffi.new("int32_t *")
    v = ffi.new("uint64_t *"); n = ffi.new("uint32_t *")
    assert lib.aclrtGetDeviceCount(n) == 0
    out = {"uuid": [], "bus": [], "topo": [], "back": [], "maps": {}}
    for i in range(n[0]):
        st = lib.aclrtDeviceGetUuid(i, u)
        out["uuid"].append(str(uuid.UUID(bytes=bytes(ffi.buffer(u.bytes)))) if st == 0 else st)
        st = lib.aclrtDeviceGetPCIBusId(i, bus, 13)
        out["bus"].append(ffi.string(bus).decode() if st == 0 else st)
        if st == 0:
            assert lib.aclrtDeviceGetByPCIBusId(bus, d) == 0
            out["back"].append(d[0])
        out["topo"].append([(lib.aclrtGetDevicesTopo(i, j, v), v[0])[1]
                            for j in range(n[0])])
    for name in %r:
        row = []
        for i in range(10):
            st = getattr(lib, name)(i, d)
            row.append(d[0] if st == 0 else st)
        out["maps"][name] = row
    print(json.dumps(out))
""" % (MAPPINGS,)


def run_eight(run_python, **env):
    r = run_python(EIGHT, env={"ACL_EMU_DEVICE_COUNT": "8", "ACL_EMU_SOC": A2, **env})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_an_atlas_a2_server(run_python):
    out = run_eight(run_python)
    assert out["uuid"] == [f"41434c45-4d55-4000-8000-{i:012x}" for i in range(8)]
    assert out["bus"] == BUSES
    assert out["back"] == list(range(8))
    assert out["topo"] == [[HCCS] * 8] * 8           # one HCCS full mesh
    for name in MAPPINGS:                             # no container, no visible list:
        assert out["maps"][name] == list(range(8)) + [107001, 107001], name


def test_visible_devices_renumber_the_users_ids_only(run_python):
    out = run_eight(run_python, ASCEND_RT_VISIBLE_DEVICES="2,5,7")
    assert out["uuid"] == [f"41434c45-4d55-4000-8000-{m:012x}" for m in (2, 5, 7)]
    assert out["bus"] == [BUSES[m] for m in (2, 5, 7)]
    assert out["back"] == [0, 1, 2]
    m = out["maps"]
    bad = 107001
    # user -> logical/physical: the machine's id
    for name in ("aclrtGetLogicDevIdByUserDevId", "aclrtGetPhyDevIdByLogicDevId",
                 "aclrtGetPhyDevIdByUserDevId"):
        assert m[name] == [2, 5, 7] + [bad] * 7, name
    # machine -> user: the visible ones only
    for name in ("aclrtGetUserDevIdByLogicDevId", "aclrtGetLogicDevIdByPhyDevId",
                 "aclrtGetUserDevIdByPhyDevId"):
        assert m[name] == [bad, bad, 0, bad, bad, 1, bad, 2, bad, bad], name


def test_a_hidden_devices_bus_id_is_refused(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        d = ffi.new("int32_t *")
        print(lib.aclrtDeviceGetByPCIBusId(b"0000:01:00.0", d))
        print(lib.aclrtDeviceGetByPCIBusId(b"0000:81:00.0", d), d[0])
        print(lib.aclrtDeviceGetByPCIBusId(b"0001:c1:00.0", d))
        print(ffi.string(lib.aclGetRecentErrMsg()).decode())
    """, env={"ACL_EMU_DEVICE_COUNT": "8", "ACL_EMU_SOC": A2, "ASCEND_RT_VISIBLE_DEVICES": "1"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == ["107001", "0 0", "107000"]


def test_more_than_eight_devices_take_another_domain(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        bus = ffi.new("char[13]"); v = ffi.new("uint64_t *")
        assert lib.aclrtDeviceGetPCIBusId(9, bus, 13) == 0
        assert lib.aclrtGetDevicesTopo(1, 9, v) == 0
        print(ffi.string(bus).decode(), v[0])
    """, env={"ACL_EMU_DEVICE_COUNT": "16", "ACL_EMU_SOC": A2})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0001:81:00.0", str(SYS)]


@pytest.mark.parametrize("soc,topo", [
    ("Ascend910_9382", [[HCCS, SIO] + [HCCS_SW] * 6, [SIO, HCCS] + [HCCS_SW] * 6]),
    ("Ascend910A", [[HCCS] * 4 + [SYS] * 4, [HCCS] * 4 + [SYS] * 4]),
    ("Ascend310P3", [[PIX, PIX] + [PHB] * 6, [PIX, PIX] + [PHB] * 6]),
    ("Ascend950PR_9599", [[HCCS] * 8, [HCCS] * 8]),
])
def test_topology_by_part(run_python, soc, topo):
    out = run_eight(run_python, ACL_EMU_SOC=soc)
    assert out["topo"][:2] == topo
    # symmetric
    assert all(out["topo"][i][j] == out["topo"][j][i] for i in range(8) for j in range(8))
    unsupported = soc in ("Ascend910A", "Ascend310P3")
    assert out["uuid"] == ([207000] * 8 if unsupported else
                           [f"41434c45-4d55-4000-8000-{i:012x}" for i in range(8)])
    assert out["bus"] == ([207000] * 8 if unsupported else BUSES)


def test_parts_without_a_pcie_identity_say_so(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        u = ffi.new("aclrtUuid *"); d = ffi.new("int32_t *")
        msg = lambda: ffi.string(lib.aclGetRecentErrMsg()).decode()
        print(lib.aclrtDeviceGetUuid(5, u), msg())     # the id is checked first
        print(lib.aclrtDeviceGetUuid(0, u), msg())
        print(lib.aclrtDeviceGetByPCIBusId(b"0000:c1:00.0", d), msg())
    """, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("107001 aclrtDeviceGetUuid: deviceId 5")
    assert lines[1].startswith("207000 aclrtDeviceGetUuid: the Atlas inference series "
                               "(Ascend310P3)")
    assert lines[2].startswith("107000 aclrtDeviceGetByPCIBusId:")
    assert "this part has no PCI bus ids" in lines[2]


# ---- the deprecated calls, through ctypes ----

class CannPackageVersion(ctypes.Structure):
    _fields_ = [("version", ctypes.c_char * 128), ("majorVersion", ctypes.c_char * 64),
                ("minorVersion", ctypes.c_char * 64), ("releaseVersion", ctypes.c_char * 64),
                ("patchVersion", ctypes.c_char * 64), ("reserved", ctypes.c_char * 128)]


def runtime_library():
    return ctypes.CDLL(str(lib.backend.libraries["ascendcl"]))


def test_get_version_is_the_headers_interface_version():
    L = runtime_library()
    a, b, c = ctypes.c_int32(-1), ctypes.c_int32(-1), ctypes.c_int32(-1)
    assert L.aclrtGetVersion(ctypes.byref(a), ctypes.byref(b), ctypes.byref(c)) == 0
    assert (a.value, b.value, c.value) == (1, 17, 0)
    for k in range(3):
        args = [ctypes.byref(a), ctypes.byref(b), ctypes.byref(c)]
        args[k] = None
        expect(L.aclrtGetVersion(*args), 100000, "aclrtGetVersion",
               ["majorVersion", "minorVersion", "patchVersion"][k])


def write_version(root, package, text):
    d = root / "share" / "info" / package
    d.mkdir(parents=True, exist_ok=True)
    (d / "version.info").write_text(text)


def cann_version(L, name):
    v = CannPackageVersion()
    st = L.aclsysGetCANNVersion(name, ctypes.byref(v))
    parts = (v.version, v.majorVersion, v.minorVersion, v.releaseVersion, v.patchVersion)
    return st, tuple(p.decode() for p in parts)


def test_cann_version_of_the_prefix(monkeypatch):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(_loader.emulator_prefix()))
    L = runtime_library()
    for name in (0, 1):                               # ACL_PKG_NAME_CANN, _RUNTIME
        assert cann_version(L, name) == (0, ("9.1.0", "9", "1", "0", "0"))
    for name in (2, 3, 4, 5, 6):                      # not in the emulator's prefix
        st, _ = cann_version(L, name)
        assert st == 100003
    assert cann_version(L, 7)[0] == 100003            # the driver: none
    expect(L.aclsysGetCANNVersion(1, None), 100000, "aclsysGetCANNVersion", "version")
    monkeypatch.delenv("ASCEND_HOME_PATH")
    expect(L.aclsysGetCANNVersion(1, ctypes.byref(CannPackageVersion())), 100003,
           "aclsysGetCANNVersion", "ASCEND_HOME_PATH is not set")
    for bad in (-1, 8):
        expect(L.aclsysGetCANNVersion(bad, ctypes.byref(CannPackageVersion())), 100000,
               "aclsysGetCANNVersion", f"name {bad}")


def test_cann_version_splits_as_the_runtime_does(run_python, tmp_path):
    root = tmp_path / "install"
    write_version(root, "runtime", "Version=8.5.0-beta.1\n")
    write_version(root, "hccl", "Version=8.5\n")
    write_version(root, "ops_legacy", "Version=8.5.0.alpha001.7\n")   # '-' tried as '_'
    write_version(root, "oam-tools", "Version=8..0\n")
    write_version(root, "bisheng-compiler", "Version=9\n")
    r = run_python(f"""
        import ctypes, sys
        sys.path.insert(0, {str(__import__('os').path.dirname(__file__))!r})
        from test_emulator_device_identity import cann_version, runtime_library
        L = runtime_library()
        for name in (1, 3, 5, 4, 2):
            print(cann_version(L, name))
    """, env={"ASCEND_HOME_PATH": str(root)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "(0, ('8.5.0.beta1', '8', '5', '0', 'beta1'))",
        "(0, ('8.5', '8', '5', '0', '0'))",
        "(0, ('8.5.0.alpha001.7', '8', '5', '0', 'alpha001'))",
        "(100003, ('', '', '', '', ''))",
        "(100003, ('', '', '', '', ''))",
    ]
