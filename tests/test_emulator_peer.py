"""The emulator's peer access (P2P) between devices, at the C level: aclrtDeviceCanAccessPeer,
aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess, aclrtDevicePeerAccessStatus and the
device-to-device copies between two devices they allow (docs/emulator.md, "Peer access").

Each case runs in a fresh interpreter with several emulated devices (ACL_EMU_DEVICE_COUNT)."""
from __future__ import annotations

import textwrap

import pytest

from acl_py.raw import lib
from test_emulator_runtime import run_raw

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules of the emulator's peer access")

# A prologue for run_raw: calls returning (status, message), a 256-byte block per device.
PROLOGUE = """
    def call(fn, *args):
        rc = getattr(lib, fn)(*args)
        return rc, errmsg()
    def can(d, p):
        v = ffi.new("int32_t *", -1)
        rc = lib.aclrtDeviceCanAccessPeer(v, d, p)
        return rc, v[0]
    def status(d, p):
        v = ffi.new("int32_t *", -1)
        rc = lib.aclrtDevicePeerAccessStatus(d, p, v)
        return rc, v[0]
    lib.aclInit(NULL)
"""


def run(body, env):
    return run_raw(textwrap.dedent(PROLOGUE) + textwrap.dedent(body), env=env)


def test_checks_in_the_vendors_order_and_codes():
    r = run("""
        v = ffi.new("int32_t *")
        # aclrtDeviceCanAccessPeer: same ids first (even out of range), then the peer, then
        # deviceId, then the output pointer (the runtime's check: 107000)
        out["can_same"] = call("aclrtDeviceCanAccessPeer", v, 9, 9)
        out["can_bad_peer"] = call("aclrtDeviceCanAccessPeer", NULL, 0, 7)
        out["can_bad_dev"] = call("aclrtDeviceCanAccessPeer", NULL, 7, 0)
        out["can_huge_dev"] = call("aclrtDeviceCanAccessPeer", NULL, 64, 0)
        out["can_negative_dev"] = call("aclrtDeviceCanAccessPeer", NULL, -1, 0)
        out["can_null"] = call("aclrtDeviceCanAccessPeer", NULL, 0, 1)
        out["can_01"] = can(0, 1)
        out["can_21"] = can(2, 1)
        # enable / disable: flags first (even with no device), then the current device
        out["enable_flags"] = call("aclrtDeviceEnablePeerAccess", 1, 1)
        out["enable_no_device"] = call("aclrtDeviceEnablePeerAccess", 1, 0)
        out["disable_no_device"] = call("aclrtDeviceDisablePeerAccess", 1)
        lib.aclrtSetDevice(0)
        out["enable_self"] = call("aclrtDeviceEnablePeerAccess", 0, 0)
        out["disable_self"] = call("aclrtDeviceDisablePeerAccess", 0)
        out["enable_bad_peer"] = call("aclrtDeviceEnablePeerAccess", 3, 0)
        out["enable_negative_peer"] = call("aclrtDeviceEnablePeerAccess", -2, 0)
        out["disable_bad_peer"] = call("aclrtDeviceDisablePeerAccess", 3)
        # aclrtDevicePeerAccessStatus: the output pointer (ACL layer, 100000) first
        out["status_null"] = call("aclrtDevicePeerAccessStatus", 9, 9, NULL)
        out["status_bad_dev"] = call("aclrtDevicePeerAccessStatus", 5, 0, v)
        out["status_huge_dev"] = call("aclrtDevicePeerAccessStatus", 99, 0, v)
        out["status_bad_peer"] = call("aclrtDevicePeerAccessStatus", 0, 3, v)
        out["status_self"] = status(0, 0)
        lib.aclrtResetDevice(0)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "3"})
    def check(key, code, *words):
        rc, msg = r[key]
        assert rc == code, (key, r[key])
        assert msg.split(":")[0] in ("aclrtDeviceCanAccessPeer", "aclrtDeviceEnablePeerAccess",
                                     "aclrtDeviceDisablePeerAccess",
                                     "aclrtDevicePeerAccessStatus"), msg
        for w in words:
            assert w in msg, (key, w, msg)
    check("can_same", 100000, "peerDeviceId 9", "its own peer")
    check("can_bad_peer", 107001, "peerDeviceId 7")
    check("can_bad_dev", 107001, "deviceId 7")
    check("can_huge_dev", 107000, "deviceId 64", "[0, 64)")
    check("can_negative_dev", 107000, "deviceId -1")
    check("can_null", 107000, "canAccessPeer")
    assert r["can_01"] == [0, 1] and r["can_21"] == [0, 1]
    check("enable_flags", 200006, "flags (1)", "reserved")
    check("enable_no_device", 107002)
    check("disable_no_device", 107002)
    check("enable_self", 100000, "peerDeviceId 0", "own peer")
    check("disable_self", 100000, "own peer")
    check("enable_bad_peer", 107001, "peerDeviceId 3")
    check("enable_negative_peer", 107001, "peerDeviceId -2")
    check("disable_bad_peer", 107001, "peerDeviceId 3")
    check("status_null", 100000, "status")
    check("status_bad_dev", 107001, "deviceId 5")
    check("status_huge_dev", 107000, "deviceId 99")
    check("status_bad_peer", 107000, "peerDeviceId 3", "physical")
    assert r["status_self"] == [0, 0]


def test_state_per_current_device_and_peer_idempotent_calls():
    r = run("""
        lib.aclrtSetDevice(0)
        out["before"] = status(0, 1)
        out["enable"] = call("aclrtDeviceEnablePeerAccess", 1, 0)
        out["enable_again"] = call("aclrtDeviceEnablePeerAccess", 1, 0)
        out["after"] = [status(0, 1), status(1, 0), status(0, 2)]
        lib.aclrtSetDevice(1)
        out["other_way"] = call("aclrtDeviceEnablePeerAccess", 0, 0)
        out["both"] = [status(0, 1), status(1, 0)]
        out["disable_other"] = call("aclrtDeviceDisablePeerAccess", 0)
        out["disable_unset"] = call("aclrtDeviceDisablePeerAccess", 2)
        out["after_disable"] = [status(0, 1), status(1, 0)]
        # the state is the process's: a device reset keeps it, aclFinalize drops it
        lib.aclrtResetDevice(1); lib.aclrtResetDevice(0)
        out["after_reset"] = status(0, 1)
        lib.aclFinalize(); lib.aclInit(NULL)
        out["after_reinit"] = status(0, 1)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "3"})
    assert r["before"] == [0, 0]
    assert r["enable"] == [0, None] and r["enable_again"] == [0, None]
    assert r["after"] == [[0, 1], [0, 0], [0, 0]]   # per (current device, peer): one way
    assert r["other_way"] == [0, None] and r["both"] == [[0, 1], [0, 1]]
    assert r["disable_other"] == [0, None] and r["disable_unset"] == [0, None]
    assert r["after_disable"] == [[0, 1], [0, 0]]
    assert r["after_reset"] == [0, 1] and r["after_reinit"] == [0, 0]


def test_copies_between_devices_need_peer_access():
    r = run("""
        def buf(dev, value):
            lib.aclrtSetDevice(dev)
            p = ffi.new("void **"); lib.aclrtMalloc(p, 256, 0)
            lib.aclrtMemset(p[0], 256, value, 256)
            return p[0]
        def read(dev, p):
            lib.aclrtSetDevice(dev)
            h = bytearray(256); lib.aclrtMemcpy(ffi.from_buffer(h), 256, p, 256, 2)
            return h[0], h[255]
        a = buf(0, 7); b = buf(1, 9)
        lib.aclrtSetDevice(1)
        out["refused"] = call("aclrtMemcpy", b, 256, a, 256, 3)
        out["refused_default_kind"] = call("aclrtMemcpy", b, 256, a, 256, 4)
        out["refused_async"] = call("aclrtMemcpyAsync", b, 256, a, 256, 3, NULL)
        out["untouched"] = read(1, b)
        out["live_after_refusals"] = live()
        # the data-copy guide's way: on the destination, for the source
        lib.aclrtSetDevice(1); lib.aclrtDeviceEnablePeerAccess(0, 0)
        out["copy_0_to_1"] = call("aclrtMemcpy", b, 256, a, 256, 3)
        out["b"] = read(1, b)
        # the API reference's "(current 1, peer 0): 1 to 0" way is taken too
        lib.aclrtMemset(b, 256, 5, 256)
        lib.aclrtSetDevice(0)
        out["copy_1_to_0"] = call("aclrtMemcpy", a, 256, b, 256, 3)
        out["a"] = read(0, a)
        # an asynchronous copy on a stream of either device (the current one's)
        lib.aclrtMemset(a, 256, 3, 256)
        lib.aclrtSetDevice(1)
        out["async_on_1"] = call("aclrtMemcpyAsync", b, 256, a, 256, 3, NULL)
        lib.aclrtSynchronizeStream(NULL)
        out["b_async"] = read(1, b)
        # a third device, as the current one, may run the copy
        c = buf(2, 1)
        lib.aclrtSetDevice(2)
        out["third_device_refused"] = call("aclrtMemcpy", c, 256, a, 256, 3)
        lib.aclrtDeviceEnablePeerAccess(0, 0)
        out["third_device"] = call("aclrtMemcpy", c, 256, a, 256, 3)
        # disabled again: refused again
        lib.aclrtSetDevice(1); lib.aclrtDeviceDisablePeerAccess(0)
        out["after_disable"] = call("aclrtMemcpy", b, 256, a, 256, 3)
        for d, p in ((0, a), (1, b), (2, c)):
            lib.aclrtSetDevice(d); lib.aclrtFree(p)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "3"})
    for key in ("refused", "refused_default_kind", "refused_async"):
        rc, msg = r[key]
        assert rc == 107000, (key, r[key])
        assert msg.startswith("aclrtMemcpy"), msg
        for w in ("dst is on device 1", "src on device 0", "peer access",
                  "aclrtDeviceEnablePeerAccess(0, 0)"):
            assert w in msg, (w, msg)
    assert r["untouched"] == [9, 9]
    assert r["live_after_refusals"]["device_allocations"] == 2   # nothing leaked or freed
    assert r["copy_0_to_1"] == [0, None] and r["b"] == [7, 7]
    assert r["copy_1_to_0"] == [0, None] and r["a"] == [5, 5]
    assert r["async_on_1"] == [0, None]
    assert r["b_async"] == [3, 3]
    assert r["third_device_refused"][0] == 107000
    assert r["third_device"] == [0, None]
    assert r["after_disable"][0] == 107000


def test_a_pair_without_a_link():
    r = run("""
        out["can"] = [can(0, 1), can(1, 0), can(0, 2), can(1, 2)]
        lib.aclrtSetDevice(0)
        out["enable"] = call("aclrtDeviceEnablePeerAccess", 1, 0)
        out["status"] = status(0, 1)
        out["disable"] = call("aclrtDeviceDisablePeerAccess", 1)
        out["enable_other"] = call("aclrtDeviceEnablePeerAccess", 2, 0)
        lib.aclrtResetDevice(0)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "3", "ACL_EMU_NO_PEER": "1:0"})
    assert r["can"] == [[0, 0], [0, 0], [0, 1], [0, 1]]
    rc, msg = r["enable"]
    assert rc == 207000 and msg.startswith("aclrtDeviceEnablePeerAccess:")
    assert "peerDeviceId 1" in msg and "ACL_EMU_NO_PEER" in msg
    assert r["status"] == [0, 0] and r["disable"] == [0, None]
    assert r["enable_other"] == [0, None]


def test_physical_ids_under_visible_devices():
    """Enable takes a process device id, the status query a physical one (the vendor's header
    says so); ACL_EMU_NO_PEER names machine devices."""
    r = run("""
        lib.aclrtSetDevice(0)
        out["enable"] = call("aclrtDeviceEnablePeerAccess", 1, 0)   # process 1 = machine 5
        out["status_phys"] = status(0, 5)
        out["status_logical"] = status(0, 1)
        out["can"] = [can(0, 1), can(1, 2)]          # machine 2-5 reach, 5-7 do not
        lib.aclrtResetDevice(0)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "8", "ASCEND_RT_VISIBLE_DEVICES": "2,5,7",
              "ACL_EMU_NO_PEER": "7:5"})
    assert r["enable"] == [0, None]
    assert r["status_phys"] == [0, 1] and r["status_logical"] == [0, 0]
    assert r["can"] == [[0, 1], [0, 0]]


@pytest.mark.parametrize("value", ["0", "0:0", "0:3", "0:1,", "a:b", "0-1"])
def test_malformed_no_peer_fails_init(value):
    r = run_raw("""
        out["init"] = lib.aclInit(NULL), errmsg()
    """, env={"ACL_EMU_DEVICE_COUNT": "3", "ACL_EMU_NO_PEER": value})
    assert r["init"][0] == 100000 and "ACL_EMU_NO_PEER" in r["init"][1]
