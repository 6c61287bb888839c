"""The emulator's acl_base.h helpers and package versions, through the raw cffi binding: data
buffers (aclCreateDataBuffer and friends), aclDataTypeSize, the float16 conversions and
aclsysGetVersionStr / aclsysGetVersionNum, against CANN's rules (docs/emulator.md)."""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import _loader
from acl_py.raw import ffi, lib

from _emu_status import errmsg, expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")


def data_buffers():
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return out.data_buffers


# ---- data buffers ---------------------------------------------------------------------------

def test_data_buffer_describes_caller_memory():
    before = data_buffers()
    mem = ffi.new("char[64]")
    b = lib.aclCreateDataBuffer(mem, 64)
    assert b != ffi.NULL
    assert data_buffers() == before + 1
    assert lib.aclGetDataBufferAddr(b) == mem
    assert lib.aclGetDataBufferSizeV2(b) == 64
    other = ffi.new("char[8]")
    ok(lib.aclUpdateDataBuffer(b, other, 8))
    assert lib.aclGetDataBufferAddr(b) == other and lib.aclGetDataBufferSizeV2(b) == 8
    ok(lib.aclDestroyDataBuffer(b))
    assert data_buffers() == before
    mem[0] = b"x"  # the memory is still the caller's


def test_data_buffer_takes_any_address_and_size():
    """CANN checks neither (a NULL address with size 0 describes an empty buffer)."""
    b = lib.aclCreateDataBuffer(ffi.NULL, 0)
    assert b != ffi.NULL and lib.aclGetDataBufferAddr(b) == ffi.NULL
    ok(lib.aclDestroyDataBuffer(b))
    b = lib.aclCreateDataBuffer(ffi.NULL, 1 << 40)
    assert lib.aclGetDataBufferSizeV2(b) == 1 << 40
    ok(lib.aclDestroyDataBuffer(b))


def test_data_buffer_null_and_dead_are_refused():
    expect(lib.aclDestroyDataBuffer(ffi.NULL), 100000, "aclDestroyDataBuffer", "dataBuffer")
    expect(lib.aclUpdateDataBuffer(ffi.NULL, ffi.NULL, 0), 100000, "aclUpdateDataBuffer",
           "dataBuffer")
    assert lib.aclGetDataBufferAddr(ffi.NULL) == ffi.NULL
    assert lib.aclGetDataBufferSizeV2(ffi.NULL) == 0
    b = lib.aclCreateDataBuffer(ffi.NULL, 4)
    ok(lib.aclDestroyDataBuffer(b))
    expect(lib.aclDestroyDataBuffer(b), 100000, "aclDestroyDataBuffer", "not a live")
    expect(lib.aclUpdateDataBuffer(b, ffi.NULL, 0), 100000, "aclUpdateDataBuffer", "not a live")
    assert lib.aclGetDataBufferAddr(b) == ffi.NULL
    assert "not a live" in errmsg()
    garbage = ffi.cast("aclDataBuffer *", 0x1000)
    assert lib.aclGetDataBufferSizeV2(garbage) == 0
    assert "aclGetDataBufferSizeV2" in errmsg()


# ---- element sizes ----------------------------------------------------------------------------

def test_data_type_sizes_are_cann_table():
    sizes = {"ACL_FLOAT": 4, "ACL_FLOAT16": 2, "ACL_INT8": 1, "ACL_INT32": 4, "ACL_UINT8": 1,
             "ACL_INT16": 2, "ACL_UINT16": 2, "ACL_UINT32": 4, "ACL_INT64": 8, "ACL_UINT64": 8,
             "ACL_DOUBLE": 8, "ACL_BOOL": 1, "ACL_STRING": 0, "ACL_DT_UNDEFINED": 0,
             "ACL_COMPLEX64": 8, "ACL_COMPLEX128": 16, "ACL_BF16": 2, "ACL_INT4": 1,
             "ACL_UINT1": 1, "ACL_COMPLEX32": 4, "ACL_HIFLOAT8": 1, "ACL_FLOAT8_E5M2": 1,
             "ACL_FLOAT8_E4M3FN": 1, "ACL_FLOAT8_E8M0": 1,
             # not in CANN's table: its default, eight
             "ACL_FLOAT6_E3M2": 8, "ACL_FLOAT6_E2M3": 8, "ACL_FLOAT4_E2M1": 8,
             "ACL_FLOAT4_E1M2": 8}
    for name, size in sizes.items():
        assert lib.aclDataTypeSize(getattr(lib, name)) == size, name
    assert lib.aclDataTypeSize(12345) == 8


# ---- float16 --------------------------------------------------------------------------------

def test_float_to_float16_rounds_to_nearest_even_and_saturates():
    rng = np.random.default_rng(7)
    finite = np.concatenate([
        rng.standard_normal(4000).astype(np.float32) * np.float32(100),
        (rng.random(2000) * 2 - 1).astype(np.float32) * np.float32(7e-5),  # subnormal range
        np.float32([0.0, -0.0, 1.625, 65504, 65519.99, -65519.99, 2.0 ** -25, 2.0 ** -24,
                    3 * 2.0 ** -26, 2.0 ** -26, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
                    1e-30, -1e-40])])
    for x in finite:
        want = np.float32(x).astype(np.float16).view(np.uint16)
        assert lib.aclFloatToFloat16(float(x)) == want, x
    # Saturation: what IEEE rounding makes infinite, infinities and NaN give +-65504.
    for x, want in [(65520.0, 0x7BFF), (-65520.0, 0xFBFF), (1e30, 0x7BFF),
                    (float("inf"), 0x7BFF), (float("-inf"), 0xFBFF), (float("nan"), 0x7BFF)]:
        assert lib.aclFloatToFloat16(x) == want, x


def test_float16_to_float_is_exact_and_reads_inf_nan_as_numbers():
    bits = np.arange(0x10000, dtype=np.uint32).astype(np.uint16)
    halves = bits.view(np.float16)
    for b, h in zip(bits[::97], halves[::97]):
        got = lib.aclFloat16ToFloat(int(b))
        exp = (int(b) >> 10) & 0x1F
        if exp != 0x1F:
            assert got == float(h) and np.signbit(got) == np.signbit(h), hex(b)
        else:  # CANN's saturating reading: exponent 31 is an ordinary exponent
            mag = (1 + (int(b) & 0x3FF) / 1024) * 65536.0
            assert got == (-mag if b & 0x8000 else mag), hex(b)
    assert lib.aclFloat16ToFloat(0x7C00) == 65536.0
    assert lib.aclFloat16ToFloat(0xFC00) == -65536.0
    assert lib.aclFloat16ToFloat(0x7E00) == 98304.0


# ---- package versions -------------------------------------------------------------------------

def version_str(name):
    out = ffi.new("char[]", 128)
    rc = lib.aclsysGetVersionStr(ffi.new("char[]", name.encode()), out)
    return rc, ffi.string(out).decode()


def version_num(name):
    out = ffi.new("int32_t *")
    rc = lib.aclsysGetVersionNum(ffi.new("char[]", name.encode()), out)
    return rc, out[0]


@pytest.fixture
def install(monkeypatch, tmp_path):
    """An install root in ASCEND_HOME_PATH; write(pkg, text) sets a package's version.info."""
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))

    def write(pkg, text):
        d = tmp_path / "share" / "info" / pkg
        d.mkdir(parents=True, exist_ok=True)
        (d / "version.info").write_text(text)
    return write


def test_versions_of_the_emulator_prefix(monkeypatch):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(_loader.emulator_prefix()))
    assert version_str("runtime") == (0, "9.1.0")
    assert version_num("runtime") == (0, 90100000)
    assert version_str("opbase") == (0, "9.0.0")
    # ops_math is recorded with '_', ops-nn with '-': either spelling finds each.
    assert version_str("ops-math") == (0, "9.1.0")
    assert version_str("ops_nn") == (0, "9.1.0")


@pytest.mark.parametrize("text,num", [
    ("Version=8.5.0\n", 80500000), ("Version= 8.5.1 \r\n", 80501000),
    ("x=1\nVersion=9.0.0-rc1\n", 90000000 - 100 + 1), ("Version=9.0.0.beta2", 90000000 - 200 + 2),
    ("Version=9.0.0alpha", 90000000 - 300), ("Version=9.0.0RC.3", 90000000 - 100 + 3),
    ("Version=7.1.2.3", None), ("Version=9.0.0-rc1a", None), ("Version=9.0.0--rc1", None),
    ("Version=9..0", None), ("Version=.1.0", None), ("Version=a.1.0", None),
    ("Version=9.0.0rc..1", None)])
def test_version_number_rules(install, text, num):
    install("pkg", text)
    rc, got = version_num("pkg")
    if num is None:
        assert rc == 500000, got
        assert "aclsysGetVersionNum" in errmsg()
    else:
        assert (rc, got) == (0, num)


def test_version_errors(install, monkeypatch, tmp_path):
    expect(version_str("nothing")[0], 100003, "aclsysGetVersionStr", "nothing")
    install("empty", "Name=x\n")
    expect(version_str("empty")[0], 100003, "aclsysGetVersionStr", "Version=")
    install("long", "Version=9.1." + "0" * 130 + "\n")
    expect(version_str("long")[0], 500000, "aclsysGetVersionStr", "ACL_PKG_VERSION_MAX_SIZE")
    assert version_num("long") == (0, 90100000)  # no length limit on the number's path
    expect(version_str("driver")[0], 100003, "aclsysGetVersionStr", "driver")
    out = ffi.new("char[]", 128)
    expect(lib.aclsysGetVersionStr(ffi.new("char[]", b"x"), ffi.NULL), 100000,
           "aclsysGetVersionStr", "versionStr")
    expect(lib.aclsysGetVersionStr(ffi.NULL, out), 100000, "aclsysGetVersionStr", "pkgName")
    expect(lib.aclsysGetVersionNum(ffi.NULL, ffi.new("int32_t *")), 100000,
           "aclsysGetVersionNum", "pkgName")
    expect(lib.aclsysGetVersionNum(ffi.new("char[]", b"x"), ffi.NULL), 100000,
           "aclsysGetVersionNum", "versionNum")
    monkeypatch.delenv("ASCEND_HOME_PATH")
    expect(version_str("runtime")[0], 100003, "aclsysGetVersionStr", "ASCEND_HOME_PATH")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "gone"))
    expect(version_num("runtime")[0], 100003, "aclsysGetVersionNum", "does not exist")


# ---- the Python surface: acl_py.cann_version, acl-py info -------------------------------------

def test_cann_version(monkeypatch):
    import acl_py
    from acl_py import errors, info
    monkeypatch.setenv("ASCEND_HOME_PATH", str(_loader.emulator_prefix()))
    assert acl_py.cann_version() == "9.1.0"
    assert acl_py.cann_version("opbase") == "9.0.0"
    assert info.collect()["cann_version"] == {"runtime": "9.1.0", "error": None}
    assert "cann       runtime 9.1.0" in info.format_text(info.collect())
    with pytest.raises(errors.InvalidParameterError) as e:
        acl_py.cann_version("no-such-package")
    assert e.value.code == 100003 and "no_such_package" in e.value.message  # the 2nd try
    with pytest.raises(errors.AclTypeError):
        acl_py.cann_version(b"runtime")
    monkeypatch.delenv("ASCEND_HOME_PATH")
    got = info.collect()["cann_version"]
    assert got["runtime"] is None and "ASCEND_HOME_PATH" in got["error"]
    assert "runtime version unknown" in info.format_text(info.collect())
