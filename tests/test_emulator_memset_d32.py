"""aclrtMemsetD32 and aclrtMemsetD32Async through the raw cffi binding, against
docs/emulator.md ("Memory"): the checks, order and codes of hicann/runtime
src/acl/aclrt_impl/memory.cpp and src/runtime/api/impl/api_impl_standard_soc.cc."""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_objects import allocated_bytes
from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw runtime calls with the emulator's "
                                       "messages")


@pytest.fixture
def dev0():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    yield
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


def device_words(n):
    p = ffi.new("void **")
    ok(lib.aclrtMalloc(p, 4 * n, 0), "aclrtMalloc")
    return p[0]


def read(p, n):
    out = np.zeros(n, dtype=np.uint32)
    ok(lib.aclrtMemcpy(ffi.cast("void *", out.ctypes.data), 4 * n, p, 4 * n, 2))
    return out


def test_device_memory_sync_and_async(dev0):
    p = device_words(16)
    try:
        ok(lib.aclrtMemset(p, 64, 0, 64))
        ok(lib.aclrtMemsetD32(p, 64, 0xDEADBEEF, 10), "aclrtMemsetD32")
        assert list(read(p, 16)) == [0xDEADBEEF] * 10 + [0] * 6
        s = ffi.new("aclrtStream *")
        ok(lib.aclrtCreateStream(s))
        ok(lib.aclrtMemsetD32Async(ffi.cast("char *", p) + 8, 56, 7, 14, s[0]),
           "aclrtMemsetD32Async")
        ok(lib.aclrtSynchronizeStream(s[0]))
        ok(lib.aclrtDestroyStream(s[0]))
        assert list(read(p, 16)) == [0xDEADBEEF] * 2 + [7] * 14
        ok(lib.aclrtMemsetD32Async(p, 64, 1, 1, ffi.NULL))     # the default stream
        ok(lib.aclrtSynchronizeStream(ffi.NULL))
        assert read(p, 1)[0] == 1
    finally:
        ok(lib.aclrtFree(p))


def test_host_memory_is_set_at_once(dev0):
    h = ffi.new("void **")
    ok(lib.aclrtMallocHost(h, 32))
    try:
        ok(lib.aclrtMemsetD32Async(h[0], 32, 0x01020304, 8, ffi.NULL))
        # no synchronize: the runtime sets host memory on the calling thread
        assert list(np.frombuffer(ffi.buffer(h[0], 32), dtype=np.uint32)) == [0x01020304] * 8
    finally:
        ok(lib.aclrtFreeHost(h[0]))


def test_refusals(dev0):
    p = device_words(4)
    x = np.zeros(4, dtype=np.uint32)
    try:
        for name, fn, extra in (("aclrtMemsetD32", lib.aclrtMemsetD32, ()),
                                ("aclrtMemsetD32Async", lib.aclrtMemsetD32Async,
                                 (ffi.NULL,))):
            ok(fn(ffi.NULL, 0, 1, 0, *extra))              # N 0: nothing, before any check
            expect(fn(ffi.NULL, 16, 1, 1, *extra), 100000, name, "ptr is NULL")
            expect(fn(ffi.cast("char *", p) + 2, 16, 1, 1, *extra), 100000, name,
                   "not 4-byte aligned")
            expect(fn(p, 15, 1, 4, *extra), 100000, name, "N (4)", "memSize (15")
            expect(fn(ffi.cast("void *", x.ctypes.data), 16, 1, 4, *extra), 100000, name,
                   "not memory of the runtime")
            # the 16 bytes asked for are rounded up by the runtime: its words may be set,
            # not one more
            words = allocated_bytes(16) // 4
            ok(fn(p, 4 * words, 1, words, *extra))
            expect(fn(p, 4 * words + 4, 1, words + 1, *extra), 107000, name, "past the end")
        ok(lib.aclrtSynchronizeDevice())
        expect(lib.aclrtMemsetD32Async(p, 16, 1, 4, ffi.cast("void *", 0x1000)), 107017,
               "aclrtMemsetD32Async", "stream")
    finally:
        ok(lib.aclrtFree(p))
    expect(lib.aclrtMemsetD32(p, 16, 1, 4), 107000, "aclrtMemsetD32", "no live")
