"""DeviceBuffer.copy_from_2d / copy_to_2d (aclrtMemcpy2d, aclrtMemcpy2dAsync): matrices with
pitched rows, against NumPy slicing as the reference; each direction, synchronous and on a
stream; refusals leave memory untouched."""
import numpy as np
import pytest

import acl_py
from acl_py import errors
from acl_py.errors import AclArgumentError

from _part_runs import copies_2d_device_to_device


def rows(flat, pitch, width, height, offset=0):
    """The height x width byte matrix whose rows start pitch bytes apart from offset."""
    return np.lib.stride_tricks.as_strided(flat[offset:], (height, width), (pitch, 1))


def device_bytes(buf):
    return np.frombuffer(buf.copy_to_host(), dtype=np.uint8)


def filled(n, value=0xAB):
    return np.full(n, value, dtype=np.uint8)


@pytest.fixture
def rng():
    return np.random.default_rng(20261205)


def test_columns_of_an_array_to_the_device_and_back(rng):
    a = rng.standard_normal((6, 10)).astype(np.float32)
    cols = a[:, 3:7]                                   # 6 rows of 16 bytes, 40 bytes apart
    with acl_py.DeviceBuffer(6 * 16) as buf:
        buf.copy_from_2d(a, 16, 6, src_pitch=40, src_offset=12)
        np.testing.assert_array_equal(buf.copy_to_host(np.empty((6, 4), np.float32)), cols)
        # back into the last four columns of another array: the rest of it untouched
        out = np.full((6, 10), -1.0, dtype=np.float32)
        assert buf.copy_to_2d(out, 16, 6, dst_pitch=40, dst_offset=24) is out
        want = np.full((6, 10), -1.0, dtype=np.float32)
        want[:, 6:] = cols
        np.testing.assert_array_equal(out, want)


def test_pitched_rows_on_both_sides_leave_the_gaps(rng):
    src = rng.integers(0, 256, 7 * 11, dtype=np.uint8)
    with acl_py.DeviceBuffer(4 + 6 * 13 + 5) as buf:
        buf.memset(0xAB)
        buf.copy_from_2d(src, 5, 7, src_pitch=11, pitch=13, offset=4)
        want = filled(buf.nbytes)
        rows(want, 13, 5, 7, 4)[:] = rows(src, 11, 5, 7)
        np.testing.assert_array_equal(device_bytes(buf), want)


def test_host_buffers_synchronously_and_on_a_stream(rng):
    with acl_py.HostBuffer(64) as h, acl_py.HostBuffer(64) as back, \
            acl_py.DeviceBuffer(8 * 12) as buf, acl_py.Stream() as s:
        h.numpy()[:] = rng.integers(0, 256, 64, dtype=np.uint8)
        back.numpy()[:] = 0
        buf.memset(0)
        buf.copy_from_2d(h, 8, 8, pitch=12)
        buf.copy_to_2d(back, 4, 8, pitch=12, dst_pitch=8, offset=4, stream=s)
        s.synchronize()
        want = np.zeros(64, dtype=np.uint8)
        rows(want, 8, 4, 8)[:] = rows(h.numpy(), 8, 4, 8, 4)
        np.testing.assert_array_equal(back.numpy(), want)
        h.numpy()[:] = 7
        buf.copy_from_2d(h, 8, 8, pitch=12, stream=s)
        s.synchronize()
        assert (rows(device_bytes(buf), 12, 8, 8) == 7).all()


def test_pageable_memory_on_a_stream_is_staged(rng):
    src = rng.integers(0, 256, 48, dtype=np.uint8)
    original = src.copy()
    with acl_py.DeviceBuffer(48) as buf, acl_py.Stream() as s:
        buf.memset(0)
        buf.copy_from_2d(src, 4, 6, src_pitch=8, pitch=8, stream=s)
        src[:] = 0                                     # reusable once the call returned
        dst = np.full(48, 0xEE, dtype=np.uint8)
        buf.copy_to_2d(dst, 4, 6, dst_pitch=8, pitch=8, stream=s)
        dst[4::8] = 0x55                               # a gap, written before the synchronize
        s.synchronize()
        want = np.full(48, 0xEE, dtype=np.uint8)
        want[4::8] = 0x55
        rows(want, 8, 4, 6)[:] = rows(original, 8, 4, 6)
        np.testing.assert_array_equal(dst, want)       # only the rows were copied back


def test_device_to_device_on_a_stream(rng):
    data = rng.integers(0, 256, 80, dtype=np.uint8)
    with acl_py.DeviceBuffer(80) as a, acl_py.DeviceBuffer(100) as b, \
            acl_py.DeviceBuffer(100) as c, acl_py.Stream() as s:
        a.copy_from_host(data)
        b.memset(0)
        c.memset(0)
        if not copies_2d_device_to_device():
            with pytest.raises(AclArgumentError, match="takes no device-to-device 2D copy"):
                b.copy_from_2d(a, 6, 8, src_pitch=10, pitch=12, src_offset=2, stream=s)
            return
        b.copy_from_2d(a, 6, 8, src_pitch=10, pitch=12, src_offset=2, stream=s)
        b.copy_to_2d(c, 6, 8, pitch=12, dst_pitch=12, stream=s)
        s.synchronize()
        want = np.zeros(100, dtype=np.uint8)
        rows(want, 12, 6, 8)[:] = rows(data, 10, 6, 8, 2)
        np.testing.assert_array_equal(device_bytes(b), want)
        np.testing.assert_array_equal(device_bytes(c), want)


def test_argument_errors_leave_memory_untouched():
    host = np.arange(64, dtype=np.uint8)
    with acl_py.DeviceBuffer(64) as buf, acl_py.DeviceBuffer(64) as other:
        buf.memset(0)
        cases = [
            (lambda: buf.copy_from_2d(host, 8, 8, src_pitch=4), "src_pitch", "less than"),
            (lambda: buf.copy_from_2d(host, 8, 8, pitch=7), "pitch", "less than"),
            (lambda: buf.copy_from_2d(host, 8, 8, src_offset=1), "src", "more than"),
            (lambda: buf.copy_from_2d(host, 8, 4, pitch=20), "height", "more than"),
            (lambda: buf.copy_from_2d(host, -1, 8), "width", ">= 0"),
            (lambda: buf.copy_from_2d(other, 8, 8), "stream", "queued on a stream"),
            (lambda: buf.copy_to_2d(host.copy(), 8, 8, dst_pitch=2), "dst_pitch", "less than"),
            (lambda: buf.copy_to_2d(bytearray(63), 8, 8), "dst", "more than"),
            (lambda: buf.copy_to_2d(other, 8, 8, dst_offset=-1), "dst_offset", ">= 0"),
            (lambda: buf.copy_to_2d(other, 8, 8), "stream", "queued on a stream"),
            (lambda: buf.copy_to_2d(b"read-only" * 8, 8, 8), "dst", "writable"),
        ]
        for call, argument, words in cases:
            with pytest.raises(AclArgumentError, match=f"^{argument}: .*{words}"):
                call()
        assert not device_bytes(buf).any()
        buf.copy_from_2d(host, 0, 8)                   # nothing to copy
        buf.copy_from_2d(host, 8, 0, src_pitch=1000)
        assert not device_bytes(buf).any()


def test_the_runtimes_refusals_are_typed():
    height = 5 * 1024 * 1024 + 1
    with acl_py.DeviceBuffer(height) as buf, acl_py.Stream() as s:
        buf.memset(0)
        with pytest.raises(errors.InvalidParameterError) as e:
            buf.copy_from_2d(np.ones(height, dtype=np.uint8), 1, height)
        assert e.value.code == 107000 and "height" in str(e.value)
        with pytest.raises(errors.InvalidParameterError) as e:
            buf.copy_from_2d(np.ones(height, dtype=np.uint8), 1, height, stream=s)
        assert e.value.code == 107000 and e.value.call == "aclrtMemcpy2dAsync"
        assert not device_bytes(buf).any()
