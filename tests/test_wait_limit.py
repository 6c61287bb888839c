"""The process's wait limit (``acl_py._timeout.wait_limit``, what ``acl-py smoke --timeout``
sets): by default a wait made without a timeout waits without a limit, as before; inside
``wait_limit(s)`` every such wait acl-py makes (an explicit ``synchronize()``, a synchronous
copy's wait for the streams using its buffer, a pool's wait before freeing its cache, a
stream's close) raises AclTimeoutError on a hung stream instead of blocking, leaves the stream
and its work as they were (the stream open, nothing released early), and the limit before is
restored on the way out. The hang is the emulator's task fault ``name:n:hang``."""
from __future__ import annotations

import time

import numpy as np
import pytest

import acl_py
from acl_py import _timeout
from acl_py.errors import AclArgumentError, AclTimeoutError

LIMIT = 0.2


def test_no_limit_by_default():
    assert _timeout.limit_ms == -1
    assert _timeout.to_milliseconds(None) == -1


def test_the_limit_is_restored_and_checked():
    with _timeout.wait_limit(1.5):
        assert _timeout.to_milliseconds(None) == 1500
        with _timeout.wait_limit(None):
            assert _timeout.to_milliseconds(None) == -1
        assert _timeout.limit_ms == 1500
        assert _timeout.to_milliseconds(0.25) == 250   # an explicit timeout is kept
    assert _timeout.limit_ms == -1
    with pytest.raises(AclArgumentError, match="seconds"):
        with _timeout.wait_limit(-1):
            pass
    assert _timeout.limit_ms == -1


def _timed_out(fn) -> float:
    t0 = time.monotonic()
    with pytest.raises(AclTimeoutError):
        fn()
    return time.monotonic() - t0


def test_every_wait_without_a_timeout_is_bounded_under_the_limit(emulator):
    """A memset task that never starts: each wait gives up after the limit (not before), the
    stream stays open with its work queued; once the task is released, everything closes."""
    pool = acl_py.MemoryPool()
    stream = acl_py.Stream()
    buf = acl_py.DeviceBuffer(4096)
    block = pool.malloc(4096, stream)
    emulator.set_faults("aclrtMemsetAsync:1:hang")
    buf.memset(7, stream=stream)            # hangs on the device
    block.memset(1, stream=stream)          # queued behind it
    block.close()                           # cached for the stream, not free yet
    try:
        with _timeout.wait_limit(LIMIT):
            assert _timed_out(stream.synchronize) >= LIMIT
            assert _timed_out(buf.copy_to_host) >= LIMIT    # waits for the stream first
            assert _timed_out(pool.free_all_blocks) >= LIMIT
            assert pool.n_free_blocks() == 1                # kept: the stream may use it
            assert _timed_out(stream.close) >= LIMIT
            assert not stream.closed                        # not destroyed: still busy
            assert _timed_out(acl_py.Device(0).synchronize) >= LIMIT
    finally:
        emulator.set_faults(None)           # the task starts
    assert _timeout.limit_ms == -1
    stream.close()
    assert stream.closed
    assert bytes(buf.copy_to_host()) == b"\x07" * 4096
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0
    buf.close()
    pool.close()
