"""aclrtGetDeviceCapability through the raw cffi binding, against docs/emulator.md ("Device
information"): the two aclrtDevFeatureType answers for the emulated part and the argument
checks of hicann/runtime src/acl/aclrt_impl/device.cpp and src/runtime/api/api_c_device.cc
rtsDeviceGetCapability."""
from __future__ import annotations

import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: the SoC is chosen with ACL_EMU_SOC")

TASK_UPDATE, MEMQ_EVENT_CROSS_DEV = 1, 21


def capability(feature, device=0):
    v = ffi.new("int32_t *", -7)
    ok(lib.aclrtGetDeviceCapability(device, feature, v), "aclrtGetDeviceCapability")
    return v[0]


def test_the_declarations_are_the_vendors():
    assert (lib.ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV,
            lib.ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV) == (TASK_UPDATE, MEMQ_EVENT_CROSS_DEV)
    assert (lib.ACL_DEV_FEATURE_SUPPORT, lib.ACL_DEV_FEATURE_NOT_SUPPORT) == (1, 0)


def test_the_part_s_task_update_and_no_queue_events():
    """Task update where the part has the kernel tiling-key sink (RT_FEATURE_KERNEL_TILING_
    KEY_SINK: src/runtime/config/{910_B_93,950,dc}/dev_info_reg.cc), not on the Atlas
    training series; cross-device queue events nowhere (docs/emulator.md)."""
    want = (lib.ACL_DEV_FEATURE_NOT_SUPPORT if short_soc_version(soc_name()) == "Ascend910"
            else lib.ACL_DEV_FEATURE_SUPPORT)
    assert capability(TASK_UPDATE) == want
    assert capability(MEMQ_EVENT_CROSS_DEV) == lib.ACL_DEV_FEATURE_NOT_SUPPORT


def test_argument_checks():
    v = ffi.new("int32_t *")
    call = "aclrtGetDeviceCapability"
    expect(lib.aclrtGetDeviceCapability(0, TASK_UPDATE, ffi.NULL), 100000, call, "value")
    for bad in (0, 2, 10001, 20001, 20002, 0x7FFFFFFF):
        expect(lib.aclrtGetDeviceCapability(0, bad, v), 107000, call, f"devFeatureType {bad}")
    for dev in (-1, 1, 64):
        expect(lib.aclrtGetDeviceCapability(dev, TASK_UPDATE, v), 107001, call,
               f"deviceId {dev}")


def test_training_parts_have_no_task_update(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        assert lib.aclInit(ffi.NULL) == 0
        v = ffi.new("int32_t *")
        print(lib.aclrtGetDeviceCapability(0, 1, v), v[0])
        print(lib.aclrtGetDeviceCapability(1, 1, v))
    """, env={"ACL_EMU_SOC": "Ascend910A", "ACL_EMU_DEVICE_COUNT": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["0 0", "0"]
