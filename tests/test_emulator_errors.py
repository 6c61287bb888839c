"""The emulator's error reports besides the message, through the raw cffi binding: the
thread's last error (aclrtPeekAtLastError / aclrtGetLastError) and a device's fault summary
(aclrtGetErrorVerbose), against CANN's rules (docs/emulator.md, "Error reports")."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_status import errmsg, expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")

THREAD = 0  # ACL_RT_THREAD_LEVEL


@pytest.fixture(autouse=True)
def device():
    """A runtime with device 0 set, and the thread's last error cleared before the test."""
    import acl_py
    acl_py.init()
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    lib.aclrtGetLastError(THREAD)
    yield
    lib.aclrtGetLastError(THREAD)


def test_runtime_failure_sets_the_last_error_until_read():
    assert lib.aclrtPeekAtLastError(THREAD) == 0
    expect(lib.aclrtSetDevice(4096), 107001, "aclrtSetDevice")
    assert lib.aclrtPeekAtLastError(THREAD) == 107001  # peek leaves it
    assert lib.aclrtPeekAtLastError(THREAD) == 107001
    ok(lib.aclrtSetDevice(0))                          # success clears nothing
    assert lib.aclrtGetLastError(THREAD) == 107001     # get returns it and clears it
    assert lib.aclrtGetLastError(THREAD) == 0
    assert lib.aclrtPeekAtLastError(THREAD) == 0


def test_the_latest_runtime_failure_replaces_the_one_before():
    expect(lib.aclrtSetDevice(4096), 107001, "aclrtSetDevice")
    bogus = ffi.cast("aclrtStream", 0x1234)
    expect(lib.aclrtSynchronizeStream(bogus), 107017, "aclrtSynchronizeStream")
    assert lib.aclrtGetLastError(THREAD) == 107017


def test_acl_layer_checks_leave_the_last_error_alone():
    """CANN's ACL layer returns before its runtime: NULL outputs (100000) and a timeout below
    -1 (107000, a runtime code the ACL layer returns itself) record nothing."""
    expect(lib.aclrtGetDevice(ffi.NULL), 100000, "aclrtGetDevice")
    assert lib.aclrtPeekAtLastError(THREAD) == 0
    expect(lib.aclrtSynchronizeStreamWithTimeout(ffi.NULL, -2), 107000,
           "aclrtSynchronizeStreamWithTimeout")
    expect(lib.aclrtSynchronizeDeviceWithTimeout(-5), 107000, "aclrtSynchronizeDeviceWithTimeout")
    assert lib.aclrtPeekAtLastError(THREAD) == 0
    # A timeout of 0 is the runtime's refusal: recorded.
    expect(lib.aclrtSynchronizeDeviceWithTimeout(0), 107000, "aclrtSynchronizeDeviceWithTimeout")
    assert lib.aclrtGetLastError(THREAD) == 107000


def test_the_last_error_is_the_calling_threads():
    expect(lib.aclrtSetDevice(4096), 107001, "aclrtSetDevice")
    seen = []

    def other():
        seen.append(lib.aclrtPeekAtLastError(THREAD))
        lib.aclrtSetDevice(4097)
        seen.append(lib.aclrtGetLastError(THREAD))
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0, 107001]
    assert lib.aclrtGetLastError(THREAD) == 107001


def test_invalid_level_is_refused_and_changes_nothing():
    expect(lib.aclrtSetDevice(4096), 107001, "aclrtSetDevice")
    expect(lib.aclrtPeekAtLastError(1), 100000, "aclrtPeekAtLastError", "level 1")
    expect(lib.aclrtGetLastError(2), 100000, "aclrtGetLastError", "ACL_RT_THREAD_LEVEL")
    assert lib.aclrtGetLastError(THREAD) == 107001


def test_a_failed_task_is_the_synchronizing_threads_last_error():
    """An injected task failure reaches the thread that synchronizes, with the task's status
    (a failure of the runtime's synchronize)."""
    import acl_py.emulator as emu
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    try:
        with emu.inject_faults("aclrtMemsetAsync:1:fail=507015"):
            mem = ffi.new("void **")
            ok(lib.aclrtMalloc(mem, 64, 0))
            ok(lib.aclrtMemsetAsync(mem[0], 64, 0, 64, s[0]))
            assert lib.aclrtPeekAtLastError(THREAD) == 0  # the launch succeeded
            expect(lib.aclrtSynchronizeStream(s[0]), 507015, "aclrtSynchronizeStream")
            assert lib.aclrtGetLastError(THREAD) == 507015
            ok(lib.aclrtFree(mem[0]))
    finally:
        ok(lib.aclrtDestroyStream(s[0]))


def test_injected_call_failure_is_recorded():
    import acl_py.emulator as emu
    with emu.inject_faults("aclrtGetDevice:1"):
        d = ffi.new("int32_t *")
        rc = lib.aclrtGetDevice(d)
    assert rc != 0 and lib.aclrtGetLastError(THREAD) == rc


# ---- aclrtGetErrorVerbose ------------------------------------------------------------------

# aclrtErrorInfo, opaque to cffi: CANN's LP64 layout (the emulator asserts it when built).
INFO_SIZE = 8 + 8 + 20 * 128


def error_info(fill=7):
    raw = ffi.new("uint8_t[]", INFO_SIZE)
    ffi.memmove(raw, bytes([fill]) * INFO_SIZE, INFO_SIZE)
    return raw, ffi.cast("aclrtErrorInfo *", raw)


# Whether this process's part reports device faults (RT_FEATURE_DFX_ERR_GET_AND_REPAIR:
# Atlas A2/A3 and Ascend 950 of the parts emulated); elsewhere every call that reaches the
# runtime is 207000, checked before the device id (hicann/runtime src/runtime/api/
# api_c_device.cc rtsGetErrorVerbose).
REPORTS_FAULTS = short_soc_version(soc_name()) in ("Ascend910B", "Ascend910_93", "Ascend950")


def test_error_verbose_reports_no_fault():
    raw, info = error_info()
    if not REPORTS_FAULTS:
        expect(lib.aclrtGetErrorVerbose(0, info), 207000, "aclrtGetErrorVerbose",
               soc_name())
        assert bytes(ffi.buffer(raw)) == b"\x07" * INFO_SIZE     # left alone
        assert lib.aclrtGetLastError(THREAD) == 207000
        return
    ok(lib.aclrtGetErrorVerbose(0, info), "aclrtGetErrorVerbose")
    data = bytes(ffi.buffer(raw))
    assert data[0] == 0 and data[1] == 0                       # tryRepair, hasDetail
    assert data[2:4] == b"\x07\x07"                             # reserved: left alone
    assert int.from_bytes(data[4:8], "little") == lib.ACL_RT_NO_ERROR
    assert int.from_bytes(data[8:12], "little") == lib.ACL_RT_AICORE_ERROR_UNKNOWN
    assert data[12:] == b"\x07" * (INFO_SIZE - 12)               # the rest: left alone
    assert lib.aclrtPeekAtLastError(THREAD) == 0


def test_error_verbose_arguments():
    _raw, info = error_info()
    expect(lib.aclrtGetErrorVerbose(0, ffi.NULL), 100000, "aclrtGetErrorVerbose", "errorInfo")
    assert lib.aclrtPeekAtLastError(THREAD) == 0
    code = 107001 if REPORTS_FAULTS else 207000
    for bad in (-1, 4096):
        expect(lib.aclrtGetErrorVerbose(bad, info), code, "aclrtGetErrorVerbose",
               f"deviceId {bad}" if REPORTS_FAULTS else soc_name())
        assert lib.aclrtGetLastError(THREAD) == code


def test_error_verbose_unsupported_part():
    """Parts whose runtime does not report device faults (first-generation training, Atlas
    inference): 207000, a runtime failure."""
    code = textwrap.dedent("""
        import acl_py
        from acl_py.raw import ffi, lib
        acl_py.init()
        raw = ffi.new("uint8_t[]", 4096)  # kept alive: the cast does not own it
        rc = lib.aclrtGetErrorVerbose(0, ffi.cast("aclrtErrorInfo *", raw))
        print(rc, lib.aclrtGetLastError(0), ffi.string(lib.aclGetRecentErrMsg()).decode())
    """)
    for soc in ("Ascend910A", "Ascend310P3"):
        env = dict(os.environ, ACL_EMU_SOC=soc)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        rc, last, msg = r.stdout.split(" ", 2)
        assert (rc, last) == ("207000", "207000"), r.stdout
        assert msg.startswith("aclrtGetErrorVerbose:") and soc in msg, msg
    assert errmsg() is None
