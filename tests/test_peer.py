"""Peer access (P2P) between devices through acl-py's objects: ``Device.can_access_peer``,
``enable_peer_access``/``disable_peer_access``, ``DeviceBuffer.copy_from`` of another device's
buffer, ``DeviceTensor.copy_to``, their errors, and the stream-ordered lifetimes of copies
between devices. Each case runs in a fresh process with several emulated devices
(ACL_EMU_DEVICE_COUNT); the emulator's C-level rules are tests/test_emulator_peer.py's."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_runtime import script

pytestmark = pytest.mark.usefixtures("emulator")   # emulated devices, counts, faults

TWO = {"ACL_EMU_DEVICE_COUNT": "2"}


def ok_run(run_python, body, env=TWO):
    r = run_python(script(body), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().endswith("OK"), r.stdout + r.stderr
    return r


def test_peer_access_api_and_its_errors(run_python):
    ok_run(run_python, '''
        import acl_py
        from acl_py import emulator as emu
        from acl_py.errors import AclArgumentError, AclTypeError, NotSupportedError
        acl_py.init()
        d0, d1, d2 = acl_py.Device(0), acl_py.Device(1), acl_py.Device(2)
        assert d0.can_access_peer(1) and d1.can_access_peer(d0)
        assert not d0.can_access_peer(2) and not d2.can_access_peer(0)   # ACL_EMU_NO_PEER
        for call in (d0.can_access_peer, d0.enable_peer_access, d0.disable_peer_access,
                     d0.peer_access_enabled):
            for bad, cls, words in ((0, AclArgumentError, "not its own peer"),
                                    (d0, AclArgumentError, "not its own peer"),
                                    (3, AclArgumentError, "does not exist"),
                                    (-1, AclArgumentError, ">= 0"),
                                    ("1", AclTypeError, "device id"),
                                    (True, AclTypeError, "device id")):
                try:
                    call(bad)
                    raise SystemExit(f"{call.__name__}({bad!r}) passed")
                except cls as e:
                    assert e.argument == "peer" and words in str(e), (call, bad, e)
        emu.reset_call_counts()
        assert not d0.peer_access_enabled(1)
        d0.enable_peer_access(1)
        d0.enable_peer_access(acl_py.Device(1))          # acl-py's record: no second call
        assert emu.call_counts().get("aclrtDeviceEnablePeerAccess") == 1
        assert d0.peer_access_enabled(1) and not d1.peer_access_enabled(0)  # one way
        # the caller's current device is left as it was
        from acl_py.raw import ffi, lib
        cur = ffi.new("int32_t *")
        with acl_py.Device(1):
            d2.enable_peer_access(1)                      # made with device 2 current
            assert lib.aclrtGetDevice(cur) == 0 and cur[0] == 1
            d1.disable_peer_access(2)                     # never enabled: no call
            assert emu.call_counts().get("aclrtDeviceDisablePeerAccess") is None
        assert d2.peer_access_enabled(1)
        try:
            d0.enable_peer_access(2)
            raise SystemExit("enabled a pair without a link")
        except NotSupportedError as e:
            assert e.code == 207000 and "peerDeviceId 2" in str(e)
        assert not d0.peer_access_enabled(2)
        d0.disable_peer_access(1)
        d0.disable_peer_access(1)
        assert emu.call_counts().get("aclrtDeviceDisablePeerAccess") == 1
        assert not d0.peer_access_enabled(1)
        # a failed enable leaves nothing recorded, and a retry works
        emu.set_faults("aclrtDeviceEnablePeerAccess:1")
        try:
            d1.enable_peer_access(0)
            raise SystemExit("fault not raised")
        except acl_py.AclError as e:
            assert e.call == "aclrtDeviceEnablePeerAccess"
        emu.set_faults(None)
        assert not d1.peer_access_enabled(0)
        d1.enable_peer_access(0)
        assert d1.peer_access_enabled(0)
        acl_py.finalize()           # (the call counts were reset above: no balance here)
        print("OK")
    ''', env={"ACL_EMU_DEVICE_COUNT": "3", "ACL_EMU_NO_PEER": "0:2"})


def test_teardown_disables_what_acl_py_enabled(run_python):
    ok_run(run_python, '''
        import acl_py
        from acl_py import emulator as emu
        from acl_py.raw import ffi, lib
        acl_py.init()
        acl_py.Device(0).enable_peer_access(1)
        acl_py.Device(1).enable_peer_access(0)
        emu.reset_call_counts()
        acl_py.finalize()
        c = emu.call_counts()
        assert c.get("aclrtDeviceDisablePeerAccess") == 2, c
        # each disable made with its device current (one set each, reset with the others)
        assert c.get("aclrtSetDevice") == 2 and c.get("aclrtResetDevice", 0) >= 2, c
        acl_py.init()            # a new session: nothing enabled in acl-py's record
        assert not acl_py.Device(0).peer_access_enabled(1)
        acl_py.finalize()
        print("OK")
    ''')


def test_copy_between_devices_needs_peer_access(run_python):
    ok_run(run_python, '''
        import numpy as np
        import acl_py
        from acl_py import emulator as emu
        from acl_py.errors import AclArgumentError, InvalidParameterError
        acl_py.init()
        a = acl_py.DeviceBuffer(4096, 0)
        b = acl_py.DeviceBuffer(4096, 1)
        pattern = np.arange(4096, dtype=np.uint32).astype(np.uint8)
        a.copy_from_host(pattern)
        b.memset(7)
        s1 = acl_py.Stream(1)
        live = emu.live_objects()
        for kw in ({}, {"stream": s1}, {"stream": acl_py.default_stream(0)}):
            try:
                b.copy_from(a, **kw)
                raise SystemExit(f"copied without peer access ({kw})")
            except AclArgumentError as e:
                assert e.argument == "src" and e.code == 107000, e
                assert "acl_py.Device(1).enable_peer_access(0)" in str(e), e
                assert isinstance(e.__cause__, InvalidParameterError)
        now = emu.live_objects()
        assert [now[k] == live[k] for k in ("device_allocations", "device_bytes")] == \
            [True, True], "a refused copy changed the memory"
        assert bytes(b.copy_to_host()) == bytes([7]) * 4096
        # the data-copy guide's way: the destination enables access to the source
        acl_py.Device(1).enable_peer_access(0)
        b.copy_from(a)
        assert bytes(b.copy_to_host()) == pattern.tobytes()
        # the other way needs nothing more on the emulator (either way is taken)
        b.memset(3)
        a.copy_from(b, 100, src_offset=10, offset=20)
        got = np.frombuffer(a.copy_to_host(), np.uint8)
        assert (got[20:120] == 3).all() and (got[:20] == pattern[:20]).all()
        # queued on a stream of the destination's device, then of the source's
        a.copy_from_host(pattern)
        b.memset(0)
        b.copy_from(a, stream=s1)
        s1.synchronize()
        assert bytes(b.copy_to_host()) == pattern.tobytes()
        b.memset(9)
        s0 = acl_py.Stream(0)
        a.copy_from(b, stream=s0)
        s0.synchronize()
        assert bytes(a.copy_to_host()) == bytes([9]) * 4096
        # range errors name their argument before any copy
        for kw, arg in (({"nbytes": 5000}, "nbytes"), ({"src_offset": 5000}, "src_offset")):
            try:
                b.copy_from(a, **kw)
                raise SystemExit("range not checked")
            except AclArgumentError as e:
                assert e.argument == arg, e
        for x in (s0, s1, a, b):
            x.close()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("OK")
    ''')


def test_stream_ordered_release_of_both_buffers(run_python):
    """A copy between devices queued on a stream of device 0 uses a buffer of device 1:
    closing either right after the enqueue frees nothing until that stream has passed the
    copy (the emulator refuses aclrtFree of memory a queued copy reads: an early free would
    raise), and a pooled block of device 1 is not handed to another stream before then."""
    ok_run(run_python, '''
        import numpy as np
        import acl_py
        from acl_py import emulator as emu
        acl_py.init()
        acl_py.Device(0).enable_peer_access(1)
        n = 8 << 20
        s0 = acl_py.Stream(0)
        # unpooled: both closed at once
        src = acl_py.DeviceBuffer(n, 1)
        src.memset(5)
        dst = acl_py.DeviceBuffer(n, 0)
        keep = acl_py.DeviceBuffer(n, 0)
        before = emu.live_objects()["device_allocations"]
        for _ in range(4):                       # a queue long enough to still be running
            dst.copy_from(src, stream=s0)
        keep.copy_from(dst, stream=s0)
        src.close()
        dst.close()
        assert src.closed and dst.closed
        s0.synchronize()
        assert emu.live_objects()["device_allocations"] == before - 2
        assert bytes(keep.copy_to_host()[:16]) == bytes([5]) * 16
        # pooled: a block of device 1's pool used on device 0's stream
        pool1 = acl_py.Device(1).memory_pool
        t = acl_py.DeviceTensor.from_numpy(np.full(n // 4, 2.0, np.float32), device=1)
        addr = t.buffer.address
        out = acl_py.DeviceBuffer(n, 0)
        for _ in range(4):
            out.copy_from(t.buffer, stream=s0)
        t.close()
        # not done on device 0's stream: another allocation of device 1 gets other memory
        other = acl_py.DeviceBuffer(n, 1, pool=pool1)
        assert other.address != addr
        s0.synchronize()
        again = acl_py.DeviceBuffer(n, 1, pool=pool1)
        assert again.address == addr              # reused once the stream passed the copy
        assert np.frombuffer(out.copy_to_host(), np.float32)[:4].tolist() == [2.0] * 4
        for x in (other, again, out, keep, s0):
            x.close()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("OK")
    ''')


def test_out_of_memory_waits_for_another_devices_stream(run_python):
    """Memory of device 1 whose free waits for a stream of device 0 (a copy between devices
    used it there) is given back when device 1 runs out of memory."""
    ok_run(run_python, '''
        import acl_py
        from acl_py import emulator as emu
        acl_py.init()
        acl_py.Device(0).enable_peer_access(1)
        s0 = acl_py.Stream(0)
        big = 3 << 20
        src = acl_py.DeviceBuffer(big, 1)
        dst = acl_py.DeviceBuffer(big, 0)
        dst.copy_from(src, stream=s0)
        src.close()                     # deferred to device 0's stream, nobody synchronizes
        again = acl_py.DeviceBuffer(big, 1)   # needs that memory back
        def used(d):
            m = acl_py.Device(d).mem_info()
            return m.total - m.free
        # allocated on device 1, not on the device whose stream the give-back synchronized
        assert used(1) >= big and used(0) < 2 * big, (used(0), used(1))
        for x in (again, dst, s0):
            x.close()
        acl_py.Device(0).synchronize()
        assert emu.live_objects()["device_allocations"] == 0
        acl_py.finalize()
        print("OK")
    ''', env={"ACL_EMU_DEVICE_COUNT": "2", "ACL_EMU_DEVICE_MEMORY": "4M"})


def test_tensor_copy_to_another_device(run_python):
    ok_run(run_python, '''
        import numpy as np
        import acl_py
        from acl_py import emulator as emu
        from acl_py.errors import AclArgumentError
        acl_py.init()
        x = np.arange(24, dtype=np.float32).reshape(4, 6)
        t = acl_py.DeviceTensor.from_numpy(x, device=0)
        acl_py.release_unused()                  # the pools' caches count as live memory
        live = emu.live_objects()
        try:
            t.copy_to(1)
            raise SystemExit("copied without peer access")
        except AclArgumentError as e:
            assert e.argument == "src" and "enable_peer_access(0)" in str(e)
        acl_py.release_unused()
        assert emu.live_objects() == live, "a refused copy_to kept its new storage"
        acl_py.Device(1).enable_peer_access(0)
        u = t.copy_to(1)
        assert u.device.id == 1 and u.shape == (4, 6) and u.dtype == np.float32
        assert (u.to_numpy() == x).all()
        # views keep their layout: strided, transposed, offset
        for view, ref in ((t[:, 1::2], x[:, 1::2]), (t.T, x.T), (t[1:3], x[1:3]),
                          (t[:0], x[:0])):
            c = view.copy_to(acl_py.Device(1))
            assert c.shape == ref.shape and (c.to_numpy() == ref).all(), (view, ref)
            c.close()
        # on a stream of either device; the source may be closed at once
        s0, s1 = acl_py.Stream(0), acl_py.Stream(1)
        w = acl_py.DeviceTensor.from_numpy(x * 2, device=0)
        v1 = w.copy_to(1, s1)
        v0 = w.copy_to(1, s0)
        w.close()
        assert (v1.to_numpy(s1) == x * 2).all()
        s0.synchronize()
        assert (v0.to_numpy() == x * 2).all()
        # the same device: a copy
        same = t.copy_to(0)
        assert same.buffer.address != t.buffer.address and (same.to_numpy() == x).all()
        for y in (same, v0, v1, u, t, s0, s1):
            y.close()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("OK")
    ''')


_COPY_2D_BETWEEN_DEVICES = '''
    import numpy as np
    import acl_py
    from acl_py import emulator as emu
    from acl_py.errors import AclArgumentError, InvalidParameterError
    acl_py.init()
    W, H, SP, DP = 5, 6, 9, 12          # rows of 5 bytes, 9 apart in a, 12 apart in b
    a = acl_py.DeviceBuffer(SP * H, 0)
    b = acl_py.DeviceBuffer(DP * H, 1)
    pattern = (np.arange(SP * H) * 7 % 251).astype(np.uint8)
    a.copy_from_host(pattern)
    s0, s1 = acl_py.Stream(0), acl_py.Stream(1)
    d0, d1 = acl_py.default_stream(0), acl_py.default_stream(1)

    def rows(flat, pitch):
        return np.lib.stride_tricks.as_strided(flat, (H, W), (pitch, 1))

    def want_b(fill):
        w = np.full(DP * H, fill, np.uint8)
        rows(w, DP)[:] = rows(pattern, SP)
        return w

    def b_bytes():
        return np.frombuffer(b.copy_to_host(), np.uint8)

    # without peer access: refused naming the other buffer (src, or dst for copy_to_2d), on
    # a stream of either device or a default one, memory untouched
    b.memset(0xEE)
    live = emu.live_objects()
    copies = []
    for stream in (s1, s0, d1, d0):
        copies.append(("src", lambda stream=stream: b.copy_from_2d(
            a, W, H, src_pitch=SP, pitch=DP, stream=stream)))
        copies.append(("dst", lambda stream=stream: a.copy_to_2d(
            b, W, H, dst_pitch=DP, pitch=SP, stream=stream)))
    for name, copy in copies:
        try:
            copy()
            raise SystemExit("copied without peer access")
        except AclArgumentError as e:
            assert e.argument == name and e.code == 107000, e
            assert "acl_py.Device(1).enable_peer_access(0)" in str(e), e
            assert isinstance(e.__cause__, InvalidParameterError), e.__cause__
    now = emu.live_objects()
    assert all(now[k] == live[k] for k in ("device_allocations", "device_bytes")), (live, now)
    assert (b_bytes() == 0xEE).all()
    # no stream: refused before any call (aclrtMemcpy2d is host-to-device or device-to-host)
    try:
        b.copy_from_2d(a, W, H, src_pitch=SP, pitch=DP)
        raise SystemExit("a synchronous 2D copy between devices")
    except AclArgumentError as e:
        assert e.argument == "stream" and e.code is None, e

    acl_py.Device(1).enable_peer_access(0)
    for stream in (s1, s0, d1, d0):
        b.memset(0xEE)
        b.copy_from_2d(a, W, H, src_pitch=SP, pitch=DP, stream=stream)
        stream.synchronize()
        got = b_bytes()
        assert (got == want_b(0xEE)).all(), (stream, got)     # the gaps untouched
        b.memset(0x11)
        assert a.copy_to_2d(b, W, H, dst_pitch=DP, pitch=SP, stream=stream) is b
        stream.synchronize()
        assert (b_bytes() == want_b(0x11)).all(), stream
    # back from device 1 into device 0's buffer: rows land at a's pitch, the rest untouched
    a.memset(0)
    a.copy_from_2d(b, W, H, src_pitch=DP, pitch=SP, stream=s1)
    s1.synchronize()
    back = np.frombuffer(a.copy_to_host(), np.uint8)
    want = np.zeros(SP * H, np.uint8)
    rows(want, SP)[:] = rows(pattern, SP)
    assert (back == want).all(), back
    # stream-ordered: both buffers closed right after the copy is queued stay allocated
    # until the stream has passed it
    gate = __import__("threading").Event()
    s1.launch_host_func(lambda: gate.wait(10))
    c = acl_py.DeviceBuffer(DP * H, 1)
    e = acl_py.DeviceBuffer(SP * H, 0)
    e.copy_from_host(pattern)
    c.copy_from_2d(e, W, H, src_pitch=SP, pitch=DP, stream=s1)
    before = emu.live_objects()["device_allocations"]
    e.close()
    c.close()
    assert emu.live_objects()["device_allocations"] == before
    gate.set()
    s1.synchronize()
    assert emu.live_objects()["device_allocations"] == before - 2
    for x in (s0, s1, a, b):
        x.close()
    acl_py.finalize()
    assert unbalanced() == {}, unbalanced()
    print("OK")
'''


def test_2d_copy_between_devices_needs_peer_access(run_python):
    """DeviceBuffer.copy_from_2d / copy_to_2d with a DeviceBuffer of another device (the
    runtime's rules: tests/test_emulator_memcpy_2d.py): refused naming ``src`` without peer
    access, on a stream of either device or a default one; with it, the rows copied at each
    side's pitch and the gaps untouched, both buffers kept until the stream has passed."""
    ok_run(run_python, _COPY_2D_BETWEEN_DEVICES, env={**TWO, "ACL_EMU_SOC": "Ascend910B2"})


_NO_2D_BETWEEN_DEVICE_BUFFERS = '''
    import os
    import numpy as np
    import acl_py
    from acl_py import emulator as emu
    from acl_py.errors import AclArgumentError, InvalidParameterError
    part = os.environ["ACL_EMU_SOC"]
    acl_py.init()
    a, c = acl_py.DeviceBuffer(64, 0), acl_py.DeviceBuffer(64, 0)
    b = acl_py.DeviceBuffer(64, 1)
    for x in (a, b, c):
        x.memset(0x5A)
    s0, s1 = acl_py.Stream(0), acl_py.Stream(1)
    acl_py.Device(1).enable_peer_access(0)
    for name, copy in (("src", lambda: b.copy_from_2d(a, 8, 4, stream=s1)),
                       ("dst", lambda: a.copy_to_2d(b, 8, 4, stream=s0)),
                       ("src", lambda: c.copy_from_2d(a, 8, 4, stream=s0)),
                       ("dst", lambda: a.copy_to_2d(c, 8, 4, stream=acl_py.default_stream(0)))):
        try:
            copy()
            raise SystemExit("a device-to-device 2D copy on this part")
        except AclArgumentError as e:
            # not a peer-access hint: enabling it does not help
            assert e.argument == name and e.code == 100000, e
            assert e.call == "aclrtMemcpy2dAsync", e.call
            assert "device-to-device 2D" in str(e) and "peer" not in e.problem, e
            assert isinstance(e.__cause__, InvalidParameterError), e.__cause__
            # the runtime's own message (aclGetRecentErrMsg) kept, in the text too
            assert e.message == e.__cause__.message, (e.message, e.__cause__.message)
            assert "device-to-device" in e.message and part in e.message, e.message
            assert e.message in str(e), e
    for s in (s0, s1):
        s.synchronize()
    assert all(bytes(x.copy_to_host()) == bytes([0x5A]) * 64 for x in (a, b, c))
    for x in (s0, s1, a, b, c):
        x.close()
    acl_py.finalize()
    assert unbalanced() == {}, unbalanced()
    print("OK")
'''


@pytest.mark.parametrize("part", ["Ascend910A", "Ascend310P3"])
def test_no_2d_copy_between_device_buffers_on_atlas_training_and_inference(run_python, part):
    """Their runtime takes no device-to-device aclrtMemcpy2dAsync (100000,
    tests/test_emulator_memcpy_2d.py): refused naming the other buffer, between devices with
    peer access or on one device, not blamed on peer access; memory untouched."""
    ok_run(run_python, _NO_2D_BETWEEN_DEVICE_BUFFERS, env={**TWO, "ACL_EMU_SOC": part})
