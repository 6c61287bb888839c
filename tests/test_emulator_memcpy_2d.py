"""aclrtMemcpy2d and aclrtMemcpy2dAsync through the raw cffi binding, against
docs/emulator.md ("Memory"): the checks, order and codes of hicann/runtime
src/acl/aclrt_impl/memory.cpp (CheckMemcpy2dParam), src/runtime/api/api_c.cc and
api/impl/api_error.cc (MemCopy2DCheckParam, MemCopy2DSync, MemCopy2DAsync); the copied bytes
against NumPy slicing."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_objects import allocated_bytes
from _emu_status import expect, ok
from _part_runs import copies_2d_device_to_device, has_stream_control, only_where
from test_emulator_runtime import run_raw

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw runtime calls with the emulator's "
                                       "messages")

H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4
SYNC, ASYNC = "aclrtMemcpy2d", "aclrtMemcpy2dAsync"
D2D_ASYNC = copies_2d_device_to_device()


@pytest.fixture
def dev0():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    yield
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


@pytest.fixture
def stream(dev0):
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    yield s[0]
    ok(lib.aclrtDestroyStream(s[0]))


class Device:
    """n bytes of device memory; read and written whole through aclrtMemcpy."""

    def __init__(self, n):
        p = ffi.new("void **")
        ok(lib.aclrtMalloc(p, n, 0), "aclrtMalloc")
        self.ptr, self.n = p[0], n

    def write(self, data):
        ok(lib.aclrtMemcpy(self.ptr, self.n, ffi.from_buffer(data), self.n, H2D))

    def read(self):
        out = np.empty(self.n, dtype=np.uint8)
        ok(lib.aclrtMemcpy(ffi.from_buffer(out), self.n, self.ptr, self.n, D2H))
        return out

    def at(self, offset):
        return ffi.cast("char *", self.ptr) + offset

    def free(self):
        ok(lib.aclrtFree(self.ptr))


class Pinned:
    """n bytes of aclrtMallocHost memory, viewed as a NumPy array."""

    def __init__(self, n):
        p = ffi.new("void **")
        ok(lib.aclrtMallocHost(p, n), "aclrtMallocHost")
        self.ptr = p[0]
        self.array = np.frombuffer(ffi.buffer(p[0], n), dtype=np.uint8)

    def free(self):
        ok(lib.aclrtFreeHost(self.ptr))


def pattern(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def pitched(flat, pitch, width, height):
    """The height x width matrix whose rows start pitch bytes apart in flat."""
    return np.lib.stride_tricks.as_strided(flat, (height, width), (pitch, 1))


def addr(a):
    return ffi.cast("void *", a.ctypes.data)


def on_a_new_thread(fn):
    """fn() on a thread with no current device; returns (its result, the thread's message)."""
    res = []

    def run():
        rc = fn()
        p = lib.aclGetRecentErrMsg()
        res.append((rc, None if p == ffi.NULL else ffi.string(p).decode()))
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return res[0]


# ---- what is copied --------------------------------------------------------------------

def test_pitched_rows_each_way_synchronously(dev0):
    width, height, spitch, dpitch = 5, 7, 9, 12
    src = pattern(spitch * height, 1)
    dev = Device(dpitch * height)
    back = np.zeros(16 * height, dtype=np.uint8)
    try:
        dev.write(np.full(dev.n, 0xEE, dtype=np.uint8))
        ok(lib.aclrtMemcpy2d(dev.ptr, dpitch, addr(src), spitch, width, height, H2D), SYNC)
        want = np.full(dev.n, 0xEE, dtype=np.uint8)
        pitched(want, dpitch, width, height)[:] = pitched(src, spitch, width, height)
        np.testing.assert_array_equal(dev.read(), want)    # the gaps between rows untouched
        # back, into a wider pitch of pageable memory, DEFAULT settling device-to-host
        ok(lib.aclrtMemcpy2d(addr(back), 16, dev.ptr, dpitch, width, height, DEFAULT), SYNC)
        expect_back = np.zeros_like(back)
        pitched(expect_back, 16, width, height)[:] = pitched(src, spitch, width, height)
        np.testing.assert_array_equal(back, expect_back)
    finally:
        dev.free()


def test_each_kind_asynchronously(stream):
    width, height, pitch = 6, 4, 8
    host = Pinned(pitch * height)
    out = Pinned(pitch * height)
    a, b = Device(pitch * height), Device(16 * height)
    try:
        host.array[:] = pattern(host.array.size, 2)
        out.array[:] = 0
        b.write(np.zeros(b.n, dtype=np.uint8))
        ok(lib.aclrtMemcpy2dAsync(a.ptr, pitch, host.ptr, pitch, width, height, H2D, stream),
           ASYNC)
        # device to device: to a wider pitch, from the second column on (where the part has
        # it; elsewhere refused, and the host's rows come back from a)
        d2d = lib.aclrtMemcpy2dAsync(b.at(1), 16, a.at(1), pitch, width - 1, height, D2D,
                                     stream)
        if D2D_ASYNC:
            ok(d2d, ASYNC)
            ok(lib.aclrtMemcpy2dAsync(out.ptr, pitch, b.ptr, 16, width, height, D2H, stream),
               ASYNC)
        else:
            expect(d2d, 100000, ASYNC, "device-to-device 2D copy", "do not support")
            ok(lib.aclrtMemcpy2dAsync(out.ptr, pitch, a.ptr, pitch, width, height, D2H,
                                      stream), ASYNC)
        ok(lib.aclrtSynchronizeStream(stream))
        want = np.zeros_like(out.array)
        if D2D_ASYNC:
            pitched(want, pitch, width, height)[:, 1:] = pitched(host.array, pitch, width,
                                                                 height)[:, 1:]
        else:
            pitched(want, pitch, width, height)[:] = pitched(host.array, pitch, width, height)
        np.testing.assert_array_equal(out.array, want)
    finally:
        for m in (a, b, host, out):
            m.free()


def test_pageable_memory_is_copied_before_the_call_returns(stream):
    src = pattern(64, 3)
    dst = np.zeros(64, dtype=np.uint8)
    dev = Device(64)
    try:
        ok(lib.aclrtMemcpy2dAsync(dev.ptr, 8, addr(src), 8, 8, 8, H2D, stream), ASYNC)
        ok(lib.aclrtMemcpy2dAsync(addr(dst), 8, dev.ptr, 8, 4, 8, D2H, stream), ASYNC)
        # no synchronize: the runtime makes a copy of pageable memory synchronous
        np.testing.assert_array_equal(dst.reshape(8, 8)[:, :4], src.reshape(8, 8)[:, :4])
        assert not dst.reshape(8, 8)[:, 4:].any()
    finally:
        dev.free()


# no default stream for a NULL one elsewhere (the refusal:
# test_atlas_training_and_inference_parts): no test there
@only_where(has_stream_control())
def test_a_null_stream_is_the_default_stream_on_atlas_a2(dev0):
    host = Pinned(32)
    dev = Device(32)
    try:
        host.array[:] = pattern(32, 4)
        ok(lib.aclrtMemcpy2dAsync(dev.ptr, 8, host.ptr, 8, 8, 4, H2D, ffi.NULL), ASYNC)
        ok(lib.aclrtSynchronizeStream(ffi.NULL))
        np.testing.assert_array_equal(dev.read(), host.array)
    finally:
        dev.free()
        host.free()


# ---- refusals, in the vendor's order ---------------------------------------------------

def test_width_or_height_zero_is_success_before_any_check():
    for fn, extra in ((lib.aclrtMemcpy2d, ()),
                      (lib.aclrtMemcpy2dAsync, (ffi.cast("void *", 0x10),))):
        ok(fn(ffi.NULL, 0, ffi.NULL, 0, 0, 1, 0x7FFFFFFF, *extra))
        ok(fn(ffi.NULL, 0, ffi.NULL, 0, 1, 0, H2H, *extra))


def test_the_acl_layers_checks(dev0):
    dev = Device(64)
    x = np.ones(64, dtype=np.uint8)
    try:
        dev.write(np.zeros(64, dtype=np.uint8))
        for name, fn, extra in ((SYNC, lib.aclrtMemcpy2d, ()),
                                (ASYNC, lib.aclrtMemcpy2dAsync, (ffi.NULL,))):
            expect(fn(ffi.NULL, 8, addr(x), 8, 8, 8, H2D, *extra), 100000, name, "dst is NULL")
            expect(fn(dev.ptr, 8, ffi.NULL, 8, 8, 8, H2D, *extra), 100000, name, "src is NULL")
            expect(fn(dev.ptr, 8, addr(x), 4, 8, 8, H2D, *extra), 100000, name,
                   "width (8 bytes) exceeds spitch (4)")
            expect(fn(dev.ptr, 4, addr(x), 8, 8, 8, H2D, *extra), 100000, name,
                   "width (8 bytes) exceeds dpitch (4)")
            for kind, word in ((H2H, "ACL_MEMCPY_HOST_TO_HOST"),
                               (5, "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE"),
                               (6, "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE"), (99, "kind 99")):
                expect(fn(dev.ptr, 8, addr(x), 8, 8, 8, kind, *extra), 100000, name, word)
        assert not dev.read().any()
    finally:
        dev.free()


def test_the_runtimes_limits_and_kinds(stream):
    big = ffi.cast("void *", 0x10000)        # not looked at: the limits come first
    for name, fn, extra in ((SYNC, lib.aclrtMemcpy2d, ()),
                            (ASYNC, lib.aclrtMemcpy2dAsync, (stream,))):
        expect(fn(big, 1, big, 1, 1, 5242881, H2D, *extra), 107000, name,
               "height (5242881 rows)", "5242880")
        expect(fn(big, 5000001, big, 5000001, 5000001, 1, H2D, *extra), 107000, name,
               "width (5000001 bytes)", "5000000")
    expect(lib.aclrtMemcpy2d(big, 8, big, 8, 8, 1, D2D), 207000, SYNC, "DEVICE_TO_DEVICE")
    expect(lib.aclrtMemcpy2dAsync(big, 8, big, 8, 8, 1, H2D, ffi.cast("void *", 0x1000)),
           107017, ASYNC, "stream")


def test_a_current_device_is_needed():
    x = np.zeros(16, dtype=np.uint8)
    rc, msg = on_a_new_thread(lambda: lib.aclrtMemcpy2d(addr(x), 4, addr(x), 4, 4, 4, D2H))
    assert rc == 107002 and msg.startswith(SYNC + ":"), msg
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtSetDevice(0))
    ok(lib.aclrtCreateStream(s))
    try:
        rc, msg = on_a_new_thread(
            lambda: lib.aclrtMemcpy2dAsync(addr(x), 4, addr(x), 4, 4, 4, D2H, s[0]))
        assert rc == 107002 and msg.startswith(ASYNC + ":"), msg
        # a NULL stream with no current device is the runtime's NULL-stream refusal
        rc, msg = on_a_new_thread(
            lambda: lib.aclrtMemcpy2dAsync(addr(x), 4, addr(x), 4, 4, 4, D2H, ffi.NULL))
        assert rc == 107000 and "stream is NULL" in msg, msg
    finally:
        ok(lib.aclrtDestroyStream(s[0]))
        ok(lib.aclrtResetDevice(0))


def test_the_direction_settled_from_the_places(stream):
    a, b = Device(64), Device(64)
    p, q = Pinned(64), Pinned(64)
    x = np.zeros(64, dtype=np.uint8)
    try:
        for kind in (H2D, D2H, DEFAULT):          # two device buffers: device-to-device
            expect(lib.aclrtMemcpy2d(a.ptr, 8, b.ptr, 8, 8, 8, kind), 107000, SYNC,
                   "device-to-device copy", "host-to-device or device-to-host")
        for name, fn, extra in ((SYNC, lib.aclrtMemcpy2d, ()),
                                (ASYNC, lib.aclrtMemcpy2dAsync, (stream,))):
            expect(fn(p.ptr, 8, q.ptr, 8, 8, 8, DEFAULT, *extra), 107000, name,
                   "host-to-host copy")
            # pageable to device memory: host-to-device or device-to-device only
            expect(fn(a.ptr, 8, addr(x), 8, 8, 8, D2H, *extra), 107000, name,
                   "kind ACL_MEMCPY_DEVICE_TO_HOST does not copy")
            # pinned to pageable as host-to-device: the kind calls dst device memory
            expect(fn(addr(x), 8, p.ptr, 8, 8, 8, H2D, *extra), 107000, name,
                   "dst", "calls it device memory")
        expect(lib.aclrtMemcpy2dAsync(a.ptr, 8, addr(x), 8, 8, 8, D2D, stream), 107000,
               ASYNC, "cannot read or write pageable host memory")
        # any kind between device memory and pinned memory: the places decide
        p.array[:] = pattern(64, 5)
        ok(lib.aclrtMemcpy2dAsync(a.ptr, 8, p.ptr, 8, 8, 8, D2H, stream), ASYNC)
        ok(lib.aclrtSynchronizeStream(stream))
        np.testing.assert_array_equal(a.read(), p.array)
    finally:
        for m in (a, b, p, q):
            m.free()


def test_rows_past_a_block_leave_memory_untouched(stream):
    dev = Device(60)
    rows = allocated_bytes(60) // 8 + 1       # rows 8 apart: 8 bytes past the runtime's block
    pin, short = Pinned(8 * rows), Pinned(60)
    src = pattern(8 * rows, 6)
    try:
        dev.write(np.zeros(60, dtype=np.uint8))
        pin.array[:] = short.array[:] = 0
        expect(lib.aclrtMemcpy2d(dev.ptr, 8, addr(src), 8, 8, rows, H2D), 107000, SYNC,
               "dst range", "past the end of its device block")
        expect(lib.aclrtMemcpy2dAsync(pin.ptr, 8, dev.ptr, 8, 8, rows, D2H, stream), 107000,
               ASYNC, "src range", "past the end of its device block")
        expect(lib.aclrtMemcpy2d(short.ptr, 9, dev.ptr, 4, 4, 8, D2H), 107000, SYNC,
               "dst range", "past the end of its aclrtMallocHost block")
        # a pitch whose extent overflows size_t
        expect(lib.aclrtMemcpy2d(dev.ptr, 2 ** 63, addr(src), 8, 8, 3, H2D), 107000, SYNC,
               "dst range")
        ok(lib.aclrtSynchronizeStream(stream))
        assert not dev.read().any() and not pin.array.any() and not short.array.any()
    finally:
        dev.free()
        pin.free()
        short.free()
    expect(lib.aclrtMemcpy2d(dev.ptr, 8, addr(src), 8, 8, 1, H2D), 107000, SYNC,
           "not allocated")


def test_a_stream_of_another_device_and_peer_access():
    r = run_raw("""
        lib.aclInit(NULL)
        p = ffi.new("void **"); s = ffi.new("aclrtStream *")
        lib.aclrtSetDevice(1); lib.aclrtCreateStream(s); lib.aclrtMalloc(p, 64, 0)
        d1 = p[0]
        lib.aclrtSetDevice(0); lib.aclrtMalloc(p, 64, 0); d0 = p[0]
        h = ffi.new("void **"); lib.aclrtMallocHost(h, 64)
        out["other_stream"] = (lib.aclrtMemcpy2dAsync(d0, 8, h[0], 8, 8, 8, 1, s[0]),
                               errmsg())
        # pageable memory: synchronous, the stream of another device is waited for
        x = ffi.new("char[64]")
        out["pageable_other_stream"] = lib.aclrtMemcpy2dAsync(d0, 8, x, 8, 8, 8, 1, s[0])
        out["no_peer"] = (lib.aclrtMemcpy2dAsync(d0, 8, d1, 8, 8, 8, 3, NULL), errmsg())
        lib.aclrtDeviceEnablePeerAccess(1, 0)
        out["peer"] = lib.aclrtMemcpy2dAsync(d0, 8, d1, 8, 8, 8, 3, NULL)
        out["sync"] = lib.aclrtSynchronizeStream(NULL)
    """, env={"ACL_EMU_DEVICE_COUNT": "2",
              "ACL_EMU_SOC": "Ascend910B2"})   # a NULL stream and device-to-device: A2's
    rc, msg = r["other_stream"]
    assert rc == 107003 and msg.startswith(ASYNC + ":"), msg
    assert r["pageable_other_stream"] == 0
    rc, msg = r["no_peer"]
    assert rc == 107000 and "peer access" in msg, msg
    assert r["peer"] == 0 and r["sync"] == 0


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3"])
def test_atlas_training_and_inference_parts(soc):
    r = run_raw("""
        lib.aclInit(NULL); lib.aclrtSetDevice(0)
        p = ffi.new("void **"); lib.aclrtMalloc(p, 64, 0); a = p[0]
        lib.aclrtMalloc(p, 64, 0); b = p[0]
        h = ffi.new("void **"); lib.aclrtMallocHost(h, 64)
        s = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s)
        out["null_stream"] = (lib.aclrtMemcpy2dAsync(a, 8, h[0], 8, 8, 8, 1, NULL), errmsg())
        out["d2d"] = (lib.aclrtMemcpy2dAsync(a, 8, b, 8, 8, 8, 3, s[0]), errmsg())
        out["h2d"] = lib.aclrtMemcpy2dAsync(a, 8, h[0], 8, 8, 8, 1, s[0])
        out["sync"] = lib.aclrtSynchronizeStream(s[0])
    """, env={"ACL_EMU_SOC": soc})
    rc, msg = r["null_stream"]
    assert rc == 107000 and "stream is NULL" in msg and soc in msg, msg
    rc, msg = r["d2d"]
    assert rc == 100000 and "device-to-device" in msg and soc in msg, msg
    assert r["h2d"] == 0 and r["sync"] == 0
