"""What a program asks the emulator's runtime about its devices (docs/emulator.md, "Device
information"): the run mode, through the raw cffi binding. Each rule gives the vendor's
status code and a message naming the call and the argument."""
from __future__ import annotations

import pytest

from acl_py.raw import ffi, lib

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
        print(lib.aclrtGetDeviceCount(ffi.new("uint32_t *")))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "1", "100001"]  # the second call does need aclInit
