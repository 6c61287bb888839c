"""DeviceBuffer, HostBuffer and MemoryPool: lifetimes, copies, argument errors, pooling."""
import gc

import numpy as np
import pytest

import acl_py
from acl_py import errors
from acl_py.memory import LARGE, ROUND, block_size


def live(emulator, key="device_allocations"):
    return emulator.live_objects()[key]


# ---- DeviceBuffer lifetimes ---------------------------------------------------------------

def test_close_early_close_late_double_close(emulator):
    n = live(emulator)
    a = acl_py.DeviceBuffer(100)
    b = acl_py.DeviceBuffer(200)
    assert live(emulator) == n + 2 and live(emulator, "device_bytes") >= 300
    a.close()
    assert live(emulator) == n + 1 and a.closed and not b.closed
    a.close()
    assert live(emulator) == n + 1
    b.close()
    assert live(emulator) == n


def test_use_after_close_is_a_clear_error():
    b = acl_py.DeviceBuffer(16)
    b.close()
    for use in (lambda: b.ptr, lambda: b.address, lambda: b.copy_to_host(),
                lambda: b.copy_from_host(bytes(4)), lambda: b.memset(0),
                lambda: acl_py.DeviceTensor(b, (4,), np.float32)):
        with pytest.raises(errors.ClosedError, match="closed"):
            use()
    assert b.nbytes == 16 and "closed" in repr(b)


def test_with_block_frees_on_exception(emulator):
    n = live(emulator)
    with pytest.raises(ZeroDivisionError):
        with acl_py.DeviceBuffer(64) as b:
            assert live(emulator) == n + 1
            1 / 0
    assert b.closed and live(emulator) == n


def test_garbage_collection_only(emulator):
    n = live(emulator)
    bufs = [acl_py.DeviceBuffer(128) for _ in range(10)]
    assert live(emulator) == n + 10
    del bufs
    gc.collect()
    assert live(emulator) == n
    # a reference cycle too
    class Holder:
        pass
    h = Holder()
    h.self = h
    h.buf = acl_py.DeviceBuffer(64)
    del h
    gc.collect()
    assert live(emulator) == n


def test_zero_bytes(emulator):
    n = live(emulator)
    b = acl_py.DeviceBuffer(0)
    assert b.nbytes == 0 and live(emulator) == n          # nothing allocated
    b.copy_from_host(b"")
    assert b.copy_to_host() == bytearray()
    b.close()


@pytest.mark.parametrize("bad, exc", [(-1, errors.AclArgumentError),
                                      (1.5, errors.AclTypeError), ("8", errors.AclTypeError),
                                      (True, errors.AclTypeError), (None, errors.AclTypeError)])
def test_bad_sizes_refused_before_any_call(bad, exc, emulator):
    emulator.reset_call_counts()
    with pytest.raises(exc) as info:
        acl_py.DeviceBuffer(bad)
    assert info.value.argument == "nbytes"
    with pytest.raises(exc):
        acl_py.HostBuffer(bad)
    assert "aclrtMalloc" not in emulator.call_counts()
    assert "aclrtMallocHost" not in emulator.call_counts()


def test_numpy_int_size_accepted():
    with acl_py.DeviceBuffer(np.int64(24)) as b:
        assert b.nbytes == 24


def test_close_failure_raises_and_keeps_buffer(emulator):
    n = live(emulator)
    b = acl_py.DeviceBuffer(64)
    with emulator.inject_faults("aclrtFree:1"):
        with pytest.raises(errors.InternalError) as info:
            b.close()
    assert info.value.call == "aclrtFree"
    assert not b.closed and live(emulator) == n + 1
    b.copy_from_host(bytes(64))                          # still usable
    b.close()
    assert live(emulator) == n


def test_allocation_failure(emulator):
    n = live(emulator)
    with emulator.inject_faults("aclrtMalloc:1"):
        with pytest.raises(errors.DeviceMemoryError) as info:
            acl_py.DeviceBuffer(64)
    assert info.value.code == 207001 and isinstance(info.value, MemoryError)
    assert live(emulator) == n


# ---- copies --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.complex128])
def test_sync_round_trip(dtype):
    x = (np.random.default_rng(1).random(1000) * 100).astype(dtype)
    with acl_py.DeviceBuffer(x.nbytes) as b:
        b.copy_from_host(x)
        out = np.empty_like(x)
        assert b.copy_to_host(out) is out
        assert out.tobytes() == x.tobytes()
        assert bytes(b.copy_to_host()) == x.tobytes()


def test_offsets_and_partial_copies():
    with acl_py.DeviceBuffer(16) as b:
        b.memset(0)
        b.copy_from_host(b"\x01\x02\x03\x04", offset=6)
        assert bytes(b.copy_to_host()) == bytes(6) + b"\x01\x02\x03\x04" + bytes(6)
        out = bytearray(3)
        b.copy_to_host(out, offset=7)
        assert bytes(out) == b"\x02\x03\x04"
        assert bytes(b.copy_to_host(offset=12)) == bytes(4)


def test_copy_range_errors_before_any_call(emulator):
    with acl_py.DeviceBuffer(16) as b:
        emulator.reset_call_counts()
        with pytest.raises(errors.AclArgumentError) as info:
            b.copy_from_host(bytes(17))
        assert info.value.argument == "src" and "17 bytes" in str(info.value)
        with pytest.raises(errors.AclArgumentError):
            b.copy_from_host(bytes(8), offset=9)
        with pytest.raises(errors.AclArgumentError):
            b.copy_to_host(bytearray(17))
        with pytest.raises(errors.AclArgumentError) as info:
            b.copy_from_host(bytes(4), offset=-1)
        assert info.value.argument == "offset"
        with pytest.raises(errors.AclTypeError) as info:
            b.copy_to_host(b"immutable bytes!")          # not writable
        assert info.value.argument == "out"
        with pytest.raises(errors.AclTypeError):
            b.copy_from_host(np.zeros((4, 4), np.int8)[:, ::2])   # not contiguous
        with pytest.raises(errors.AclTypeError):
            b.copy_from_host(12)
        with pytest.raises(errors.AclArgumentError):
            b.memset(256)
        assert not any(k.startswith("aclrtMem") for k in emulator.call_counts())


def test_sync_copy_waits_for_pending_stream_work():
    """aclrtMemcpy is not ordered after stream work; acl-py synchronizes the streams that
    have pending work on the buffer first."""
    s = acl_py.Stream()
    x = np.arange(1 << 18, dtype=np.float32)
    b = acl_py.DeviceBuffer(x.nbytes)
    b.copy_from_host_async(x, s)
    out = np.empty_like(x)
    b.copy_to_host(out)                                  # no explicit synchronize
    assert (out == x).all()
    b.close()
    s.close()


def test_sync_copy_waits_for_async_copies_using_its_host_buffer(emulator):
    """A synchronous copy whose host side is a HostBuffer an asynchronous copy still writes
    (device to host, queued) or reads (host to device, queued) waits for that stream first,
    as it does for its device side: aclrtMemcpy is not ordered after stream work."""
    s = acl_py.Stream()
    src, dst = acl_py.DeviceBuffer(4096), acl_py.DeviceBuffer(4096)
    src.memset(5)
    host = acl_py.HostBuffer(4096)
    src.copy_to_host_async(host, s)              # the device writes host: queued
    emulator.reset_call_counts()
    dst.copy_from_host(host)                     # reads host
    counts = emulator.call_counts()
    assert counts.get("aclrtSynchronizeStream") == 1, counts
    assert dst.copy_to_host() == bytes([5]) * 4096
    other = acl_py.HostBuffer(4096)
    other.numpy()[:] = 9
    dst.copy_from_host_async(other, s)           # the device reads other: queued
    emulator.reset_call_counts()
    src.copy_to_host(other)                      # writes other
    counts = emulator.call_counts()
    assert counts.get("aclrtSynchronizeStream") == 1, counts
    assert dst.copy_to_host() == bytes([9]) * 4096
    for o in (src, dst, host, other, s):
        o.close()


def test_async_round_trip_and_memset():
    s = acl_py.Stream()
    x = np.random.default_rng(2).standard_normal(4096)
    b = acl_py.DeviceBuffer(x.nbytes)
    b.copy_from_host_async(x, s)
    out = np.empty_like(x)
    b.copy_to_host_async(out, s)
    s.synchronize()
    assert (out == x).all()
    b.memset(0, nbytes=8 * 10, stream=s)
    b.copy_to_host_async(out, s)
    s.synchronize()
    assert (out[:10] == 0).all() and (out[10:] == x[10:]).all()
    b.close()
    s.close()


def test_device_to_device_copy():
    x = np.arange(64, dtype=np.uint8)
    a = acl_py.DeviceBuffer(64)
    b = acl_py.DeviceBuffer(64)
    a.copy_from_host(x)
    b.memset(0xFF)
    b.copy_from(a, 16, src_offset=8, offset=4)
    expect = np.full(64, 0xFF, np.uint8)
    expect[4:20] = x[8:24]
    assert bytes(b.copy_to_host()) == expect.tobytes()
    s = acl_py.Stream()
    b.copy_from(a, stream=s)
    s.synchronize()
    assert bytes(b.copy_to_host()) == x.tobytes()
    with pytest.raises(errors.AclArgumentError):
        b.copy_from(a, 65)
    with pytest.raises(errors.AclTypeError):
        b.copy_from(bytes(4))
    for o in (a, b, s):
        o.close()


# ---- HostBuffer ----------------------------------------------------------------------------

def test_host_buffer_lifecycle_and_views(emulator):
    n = live(emulator, "host_allocations")
    h = acl_py.HostBuffer(64)
    assert live(emulator, "host_allocations") == n + 1
    v = h.numpy(np.float32)
    assert v.shape == (16,)
    v[:] = np.arange(16)
    m = h.numpy(np.float32, (4, 4))
    assert m[3, 3] == 15.0                               # same memory
    h.close()
    # views still alive: the memory stays allocated until they are gone
    assert live(emulator, "host_allocations") == n + 1
    assert v[5] == 5.0
    with pytest.raises(errors.ClosedError):
        h.numpy()
    del v, m
    gc.collect()
    assert live(emulator, "host_allocations") == n



def test_host_buffer_freed_by_its_last_view_stays_closed_when_the_free_fails(emulator):
    """The last NumPy view of a closed HostBuffer frees its memory; when that free fails,
    the buffer stays closed (no view can be made of memory a retry will free) and
    release_unused() retries the free, once."""
    n = live(emulator, "host_allocations")
    h = acl_py.HostBuffer(64)
    v = h.numpy()
    h.close()
    with emulator.inject_faults("aclrtFreeHost:1"):
        del v
        gc.collect()
    assert h.closed and live(emulator, "host_allocations") == n + 1
    with pytest.raises(errors.ClosedError):
        h.numpy()
    acl_py.release_unused()
    assert h.closed and live(emulator, "host_allocations") == n
    with pytest.raises(errors.ClosedError):
        h.numpy()
    h.close()

def test_host_buffer_async_copies(emulator):
    s = acl_py.Stream()
    h = acl_py.HostBuffer(4096)
    src = h.numpy(np.int32)
    src[:] = np.arange(1024)
    d = acl_py.DeviceBuffer(4096)
    d.copy_from_host_async(h, s)
    back = acl_py.HostBuffer(4096)
    d.copy_to_host_async(back, s)
    n = live(emulator, "host_allocations")
    back.close()                       # a copy into it is pending: freed at synchronize
    del src
    gc.collect()
    assert live(emulator, "host_allocations") == n
    s.synchronize()
    assert live(emulator, "host_allocations") == n - 1
    out = np.empty(1024, np.int32)
    d.copy_to_host(out)
    assert (out == np.arange(1024)).all()
    for o in (h, d, s):
        o.close()


def test_host_buffer_errors():
    h = acl_py.HostBuffer(10)
    with pytest.raises(errors.AclArgumentError):
        h.numpy(np.float32)                              # 10 bytes: not whole floats
    with pytest.raises(errors.AclArgumentError) as info:
        h.numpy(np.uint8, (3, 3))
    assert info.value.argument == "shape"
    with pytest.raises(errors.AclTypeError):
        h.numpy(object)
    h.close()
    assert acl_py.HostBuffer(0).numpy().shape == (0,)


# ---- MemoryPool ---------------------------------------------------------------------------

def test_pool_reuses_blocks(emulator):
    pool = acl_py.MemoryPool()
    n = live(emulator)
    a = pool.malloc(1000)
    addr = a.address
    assert a.nbytes == 1000 and pool.used_bytes() == 1024 and live(emulator) == n + 1
    a.close()
    assert pool.used_bytes() == 0 and pool.free_bytes() == 1024
    assert live(emulator) == n + 1                      # cached, still allocated
    b = pool.malloc(600)                                 # same 1024-byte bin
    assert b.address == addr and live(emulator) == n + 1
    c = pool.malloc(1000)                                # bin empty: a new block
    assert c.address != addr and live(emulator) == n + 2
    b.close()
    c.close()
    assert pool.n_free_blocks() == 2 and pool.total_bytes() == 2048
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0 and live(emulator) == n
    pool.close()


def test_pool_rounding_and_zero():
    pool = acl_py.MemoryPool()
    for n, block in [(1, ROUND), (ROUND, ROUND), (ROUND + 1, 2 * ROUND)]:
        b = pool.malloc(n)
        assert b.nbytes == n and pool.used_bytes() == block
        b.close()
    MiB = 1 << 20
    # from 10 MiB up, whole 2 MiB: one block for requests a few KiB apart
    for n, block in [(10 * MiB - ROUND, 10 * MiB - ROUND), (10 * MiB - 1, 10 * MiB),
                     (16 * MiB + 1, 18 * MiB), (18 * MiB, 18 * MiB)]:
        b = pool.malloc(n)
        assert b.nbytes == n and pool.used_bytes() == block == block_size(n)
        b.close()
    z = pool.malloc(0)
    assert z.nbytes == 0 and pool.used_bytes() == 0
    z.close()
    pool.close()


def test_pool_block_returns_only_after_stream_synchronize():
    pool = acl_py.MemoryPool()
    s = acl_py.Stream()
    a = pool.malloc(4096)
    addr = a.address
    a.copy_from_host_async(bytes(4096), s)
    a.close()
    b = pool.malloc(4096)                                # must not get the pending block
    assert b.address != addr
    s.synchronize()
    c = pool.malloc(4096)
    assert c.address == addr
    for o in (b, c, s, pool):
        o.close()


def test_pool_retries_after_freeing_cache(emulator):
    pool = acl_py.MemoryPool()
    for b in [pool.malloc(512 * k) for k in (1, 2, 3)]:
        b.close()
    assert pool.n_free_blocks() == 3
    n = live(emulator)
    with emulator.inject_faults("aclrtMalloc:1"):       # the first attempt fails
        b = pool.malloc(512 * 7)
    assert pool.n_free_blocks() == 0                     # cache emptied for the retry
    assert live(emulator) == n - 3 + 1
    b.close()
    pool.close()


def test_pool_really_out_of_memory(emulator):
    pool = acl_py.MemoryPool()
    with pytest.raises(errors.DeviceMemoryError) as info:
        pool.malloc(1 << 62)
    assert info.value.code == 207001 and "aclrtMalloc" in str(info.value)
    pool.close()


def test_default_pool_and_pool_argument():
    p = acl_py.get_pool()
    assert p is acl_py.Device(0).memory_pool and p.device is acl_py.Device(0)
    b = acl_py.DeviceBuffer(100, pool=True)
    assert p.used_bytes() >= ROUND
    b.close()
    q = acl_py.MemoryPool()
    c = acl_py.DeviceBuffer(100, pool=q)
    assert q.used_bytes() == ROUND
    c.close()
    with pytest.raises(errors.AclTypeError) as info:
        acl_py.DeviceBuffer(100, pool="yes")
    assert info.value.argument == "pool"
    q.close()


def test_pool_gc_frees_cache(emulator):
    n = live(emulator)
    pool = acl_py.MemoryPool()
    pool.malloc(2048).close()
    assert live(emulator) == n + 1
    del pool
    gc.collect()
    assert live(emulator) == n


def test_buffer_outliving_its_pool(emulator):
    n = live(emulator)
    pool = acl_py.MemoryPool()
    b = pool.malloc(2048)
    pool.close()
    assert live(emulator) == n + 1
    b.copy_from_host(bytes(2048))
    b.close()                                            # pool gone: freed directly
    assert live(emulator) == n


def test_tensor_outliving_its_pool_free_failure_is_retried_once(emulator):
    """Storage whose pool closed is freed directly with its descriptor, after the streams
    still using it: when the free fails, nothing is lost and the retry frees each exactly
    once."""
    from acl_py.tensor import DeviceTensor
    n_a, n_t = live(emulator), live(emulator, "tensors")
    pool = acl_py.MemoryPool()
    t = DeviceTensor.empty((4, 4), np.float32, pool=pool)
    t.handle
    pool.close()
    with emulator.inject_faults("aclrtFree:1"):
        with pytest.raises(errors.AclError):
            t.close()
    assert not t.closed and live(emulator) == n_a + 1
    t.close()
    assert t.closed and live(emulator) == n_a and live(emulator, "tensors") == n_t
    # still used by a stream: freed once the stream has passed that work, not before
    pool = acl_py.MemoryPool()
    s = acl_py.Stream()
    t = DeviceTensor.empty((4, 4), np.float32, pool=pool, stream=s)
    t.handle
    t.buffer.memset(0, stream=s)
    pool.close()
    t.close()
    assert t.closed and live(emulator) == n_a + 1
    with emulator.inject_faults("aclrtFree:1"):
        with pytest.raises(errors.AclError):
            s.synchronize()                 # runs the deferred free, which fails
    assert live(emulator) == n_a + 1
    acl_py.release_unused()                 # retried
    assert live(emulator) == n_a and live(emulator, "tensors") == n_t
    s.close()


# ---- stream-ordered reuse (issue 13) ---------------------------------------------------------

def test_pool_block_reused_at_once_on_the_same_stream(emulator):
    pool = acl_py.MemoryPool()
    s, other = acl_py.Stream(), acl_py.Stream()
    n = live(emulator)
    a = pool.malloc(4096, stream=s)
    addr = a.address
    a.memset(7, stream=s)
    a.close()                                     # the memset may still be queued
    b = pool.malloc(4096, stream=s)               # later work on s runs after it: reused
    assert b.address == addr and live(emulator) == n + 1
    c = pool.malloc(4096, stream=other)           # another stream must wait for s
    d = pool.malloc(4096)                         # so must an allocation for no stream
    addrs = {addr, c.address, d.address}
    assert len(addrs) == 3
    b.memset(1, stream=s)
    s.synchronize()
    assert b.copy_to_host() == bytes([1]) * 4096
    for o in (b, c, d):
        o.close()
    e = pool.malloc(4096)                         # s has passed every use: any stream
    assert e.address in addrs and live(emulator) == n + 3
    e.close()
    for o in (s, other, pool):
        o.close()


def test_reused_block_carries_the_pending_use(emulator):
    """A synchronous copy into a block reused on its stream waits for that stream first:
    aclrtMemcpy is not ordered after stream work."""
    pool = acl_py.MemoryPool()
    s = acl_py.Stream()
    a = pool.malloc(4096, stream=s)
    a.memset(3, stream=s)
    a.close()
    b = pool.malloc(4096, stream=s)
    emulator.reset_call_counts()
    b.copy_from_host(bytes(4096))
    counts = emulator.call_counts()
    assert counts.get("aclrtSynchronizeStream") == 1 and counts.get("aclrtMemcpy") == 1, counts
    assert b.copy_to_host() == bytes(4096)
    for o in (b, s, pool):
        o.close()


def test_free_all_blocks_waits_for_streams_still_using_them(emulator):
    n = live(emulator)
    pool = acl_py.MemoryPool()
    s = acl_py.Stream()
    for _ in range(3):
        a = pool.malloc(8192, stream=s)
        a.memset(0, stream=s)
        a.close()
    assert pool.used_bytes() == 0 and pool.free_bytes() == 8192
    pool.free_all_blocks()
    assert pool.free_bytes() == 0 and live(emulator) == n
    s.close()
    pool.close()


def test_queued_calls_on_one_stream_reuse_their_memory(emulator):
    """Calls returning new outputs, dropped at once, queued without synchronizing: each reuses
    the blocks the previous call's outputs and workspace held, so device memory stays flat
    (issue 13: every queued call used to touch new memory)."""
    from test_layer_norm_backward import check, make_case, to_device
    case = make_case((16, 64), 1, np.dtype(np.float32), seed=4)
    d = to_device(case)
    s = acl_py.Stream()
    acl_py.get_pool().free_all_blocks()
    args = (d["grad_out"], d["input"], d["normalized_shape"], d["mean"], d["rstd"],
            d["weight"])
    acl_py.layer_norm_backward(*args, stream=s)
    after_one = live(emulator)
    for _ in range(20):
        acl_py.layer_norm_backward(*args, stream=s)
    assert live(emulator) == after_one
    res = acl_py.layer_norm_backward(*args, stream=s)
    s.synchronize()
    check(res, case)
    for t in res:
        t.close()
    s.close()


def test_operator_workspace_stays_with_its_stream(emulator):
    """A launch's workspace is kept for the next launch on its stream (which runs after it:
    stream order makes the reuse safe), without a trip through the pool's lists; it counts
    as cached memory, and free_all_blocks returns it, also once the stream is closed."""
    from test_layer_norm_backward import check, make_case, to_device
    case = make_case((16, 64), 1, np.dtype(np.float32), seed=5)
    d = to_device(case)
    args = (d["grad_out"], d["input"], d["normalized_shape"], d["mean"], d["rstd"],
            d["weight"])
    outs = acl_py.layer_norm_backward(*args)
    pool = acl_py.get_pool()
    for i, s in enumerate((acl_py.Stream(), acl_py.Stream())):
        pool.free_all_blocks()
        n = live(emulator)
        base_used, base_free = pool.used_bytes(), pool.free_bytes()
        acl_py.layer_norm_backward(*args, out=outs, stream=s)
        ws = pool.free_bytes() - base_free
        assert ws > 0 and pool.used_bytes() == base_used       # parked: cached, not used
        emulator.reset_call_counts()
        for _ in range(5):
            acl_py.layer_norm_backward(*args, out=outs, stream=s)
        assert "aclrtMalloc" not in emulator.call_counts()
        assert pool.free_bytes() - base_free == ws and pool.used_bytes() == base_used
        s.synchronize()
        check(outs, case)
        if i:       # the block of an open stream, then of a closed one
            pool.free_all_blocks()
            s.close()
        else:
            s.close()
            pool.free_all_blocks()
        assert pool.free_bytes() == 0 and live(emulator) == n
    for t in outs:
        t.close()


def test_workspaces_of_other_shapes_share_one_block(emulator):
    """Workspaces a few KiB apart (each shape its own, all from 10 MiB up) take one pool block
    between them: from 10 MiB up blocks are whole 2 MiB, so the block parked on the stream
    fits the next shape's workspace, where exact sizes would cache one more block per
    shape."""
    from test_layer_norm_backward import make_case, to_device
    from _workspace_model import ARCH
    # shapes whose workspaces differ by a few KiB: Ascend 950's BigN template takes M x 12
    # bytes per core, Atlas A2/A3's kernel a few KiB per N beside the 16 MiB system
    # workspace; the Atlas training and inference series' split TBE kernels have none of
    # their own, but their executor holds an M x N FLOAT intermediate (LayerNormXBackpropV3's
    # second output): 10 MiB and 4 KiB a row for rows of 1024
    shapes = ([(m, 8200) for m in range(16, 80, 8)] if ARCH == 3510 else
              [(16, n) for n in range(64, 128, 8)] if ARCH == 2201 else
              [(m, 1024) for m in range(2561, 2569)])
    cases = [to_device(make_case(shape, 1, np.dtype(np.float32), seed=i))
             for i, shape in enumerate(shapes)]
    args = [(d["grad_out"], d["input"], d["normalized_shape"], d["mean"], d["rstd"],
             d["weight"]) for d in cases]
    try:
        sizes = []
        for a in args:
            with acl_py.LayerNormBackward(*a, None, (True, True, True)) as plan:
                sizes.append(plan.workspace_size)
                for t in plan.outputs:
                    t.close()
        assert min(sizes) >= LARGE, sizes      # every one in whole 2 MiB blocks
        pool = acl_py.get_pool()
        pool.free_all_blocks()
        with acl_py.Stream() as s:
            # the outputs kept until the end: the cache then holds the workspaces only
            outs = [t for a in args for t in acl_py.layer_norm_backward(*a, stream=s)]
            s.synchronize()
            cached = pool.free_bytes()
        for t in outs:
            t.close()
    finally:
        for d in cases:
            for t in d.values():
                if isinstance(t, acl_py.DeviceTensor):
                    t.close()
    assert len(set(sizes)) > 1, sizes       # the shapes' workspaces differ
    assert cached == max(block_size(n) for n in sizes) >= LARGE    # one block, parked
    pool.free_all_blocks()


def _race_with_emptier(pool, workers, check=None):
    """Runs ``workers`` (functions) in threads while another thread empties ``pool``'s cache
    in a loop (then calls ``check()``), switching threads often so races show up. Returns
    the errors raised in any thread."""
    import sys
    import threading
    errs = []
    stop = threading.Event()

    def guarded(fn):
        try:
            fn()
        except BaseException as e:   # noqa: BLE001 - reported by the caller
            errs.append(e)

    def emptier():
        while not stop.is_set():
            pool.free_all_blocks()
            if check is not None:
                check()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        other = threading.Thread(target=guarded, args=(emptier,))
        threads = [threading.Thread(target=guarded, args=(w,)) for w in workers]
        other.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        stop.set()
        other.join(120)
    finally:
        sys.setswitchinterval(interval)
    return errs


def test_pool_under_threads_hands_each_block_to_one_owner(emulator):
    """Threads taking and giving back blocks of one pool (free and stream-ordered, the reuse
    path takes no lock) while another empties its cache and reads its counters: a block is
    never held by two owners, none is lost, the counters add up."""
    import threading
    n = live(emulator)
    pool = acl_py.MemoryPool()
    held, held_lock = set(), threading.Lock()
    # Closed at the end (closes racing free_all_blocks: the test after this one).
    streams = [acl_py.Stream() for _ in range(4)]

    def user(i):
        s = streams[i]
        for k in range(100):
            bufs = [pool.malloc(ROUND * (1 + (i + k + j) % 2), stream=s if j % 3 else None)
                    for j in range(4)]
            with held_lock:
                for b in bufs:
                    assert b.address not in held, "a block handed out twice"
                    held.add(b.address)
            for b in bufs[::2]:
                b.memset(i, stream=s)       # a pending use: back to the stream's list
            with held_lock:
                held.difference_update(b.address for b in bufs)
            for b in bufs:
                b.close()

    def counters():
        assert pool.used_bytes() >= 0 and pool.free_bytes() >= 0
        pool.n_free_blocks()

    errs = _race_with_emptier(pool, [lambda i=i: user(i) for i in range(4)], counters)
    for s in streams:
        s.close()
    assert not errs, errs[0]
    assert pool.used_bytes() == 0 and pool.free_bytes() == pool.total_bytes()
    pool.free_all_blocks()
    assert pool.total_bytes() == 0 and pool.n_free_blocks() == 0 and live(emulator) == n
    pool.close()


def test_emptying_the_pool_while_other_threads_close_their_streams(emulator):
    """free_all_blocks synchronizes the streams whose work may still use a cached block; a
    thread closing such a stream meanwhile must not have its handle used after (or while) it
    is destroyed: the sync waits for the close, or skips a stream already closed."""
    n = live(emulator)
    pool = acl_py.MemoryPool()

    def closer():
        for _ in range(150):
            s = acl_py.Stream()
            b = pool.malloc(ROUND, stream=s)
            b.memset(1, stream=s)
            b.close()       # pending on s: back to s's list, which free_all syncs
            s.close()

    errs = _race_with_emptier(pool, [closer, closer])
    assert not errs, errs[0]
    pool.free_all_blocks()
    assert pool.total_bytes() == 0 and live(emulator) == n
    pool.close()


def test_workspace_parked_on_a_closed_pool_waits_for_its_stream(emulator):
    """A launch parks its workspace with its stream's pool after phase two; if the pool was
    closed meanwhile (by another thread), the block is freed once the stream has passed the
    launch, not while it may still run. (The pool's own state, as the launch path uses it.)"""
    n = live(emulator)
    pool = acl_py.MemoryPool()
    s = acl_py.Stream()
    pst = pool._pst
    ptr, size = pst.workspace(1000, s.state)
    seq = s.state.submit()          # a launch using it, not known complete
    pool.close()
    pst.park(ptr, size, s.state, seq)
    assert live(emulator) == n + 1  # still allocated: the stream may be using it
    s.synchronize()
    assert live(emulator) == n
    s.close()


def test_free_handed_to_a_stream_and_run_at_once_fails_once(emulator, monkeypatch):
    """A buffer closed with work pending on a stream is freed once the stream has passed it.
    If another thread synchronizes the stream in the moment between that check and the wait
    (simulated here), the free runs at once; when it fails, the retry registered for it owns
    it alone: close() succeeded (the buffer is closed, not reopened over memory a retry will
    free), and release_unused() frees it, once."""
    from acl_py import _ordering
    s = acl_py.Stream()
    n = live(emulator)
    b = acl_py.DeviceBuffer(4096)
    b.memset(1, stream=s)
    wait = _ordering._Waiter.wait

    def racing_wait(self, pending):
        s.synchronize()
        wait(self, pending)

    monkeypatch.setattr(_ordering._Waiter, "wait", racing_wait)
    with emulator.inject_faults("aclrtFree:1"):
        b.close()
    monkeypatch.undo()
    assert b.closed and live(emulator) == n + 1
    acl_py.release_unused()                 # the retry
    assert live(emulator) == n
    with pytest.raises(errors.ClosedError):
        b.copy_to_host()
    b.close()
    s.close()


def test_workspace_parked_while_its_pool_or_stream_closes_is_not_lost(emulator):
    """A launch parks its workspace after checking that neither its pool nor its stream is
    closed; another thread may close either right after that check (simulated here, at the
    check itself), draining the parked slots before the block lands in one. The block must
    still be freed (a closed pool) or come back to the pool (a closed stream), not stay in
    a slot nobody drains."""
    from acl_py._ordering import Timeline
    from acl_py.stream import StreamState
    closed_slot = Timeline.__dict__["closed"]
    race = []

    class ClosedAtTheCheck(StreamState):
        __slots__ = ()

        @property
        def closed(self):
            value = closed_slot.__get__(self)
            if race:
                race.pop()()    # the other thread's close lands right after the read
            return value

        @closed.setter
        def closed(self, value):
            closed_slot.__set__(self, value)

    n = live(emulator)
    for closing in ("stream", "pool"):
        pool = acl_py.MemoryPool()
        s = acl_py.Stream()
        pst, st = pool._pst, s.state
        ptr, size = pst.workspace(1000, st)
        seq = st.submit()               # a launch using it, not known complete
        if closing == "pool":
            race.append(pool.close)
        else:
            race.append(lambda: (s.close(), pool.malloc(ROUND).close()))  # drains st's slot
        st.__class__ = ClosedAtTheCheck
        try:
            pst.park(ptr, size, st, seq)
        finally:
            st.__class__ = StreamState
        assert not race
        s.close()
        pool.close()
        assert live(emulator) == n, closing


def test_launch_racing_a_close_of_the_default_pool_succeeds(emulator, monkeypatch):
    """The default pool is acl-py's implicit allocator: another thread may close it (to give
    its cache back) while a launch is between looking it up and taking its blocks (simulated
    here: each lookup closes the pool it returns, as if the other thread did right after).
    The launch must not fail for it, as emptying the caching allocator concurrently is safe
    in CuPy and PyTorch: its memory comes from the runtime, is freed in stream order, and
    the next lookup gets a new default pool. A pool the caller closed itself stays closed."""
    from acl_py import memory
    from _reliability import call_args, check, lnb, make_case
    n = live(emulator)
    case = make_case(np.random.default_rng(3), (4, 64), 1, np.float32)
    lookup = memory.default_pool_state
    closed = []

    def lookup_then_closed_by_another_thread(dev):
        pst = lookup(dev)
        memory.get_pool(dev).close()
        closed.append(pst)
        return pst

    monkeypatch.setattr(memory, "default_pool_state", lookup_then_closed_by_another_thread)
    s = acl_py.Stream()
    dev = {k: acl_py.DeviceTensor.from_numpy(v) for k, v in case.items()
           if isinstance(v, np.ndarray)}
    outs = lnb()(dev["grad_out"], dev["input"], case["normalized_shape"], dev["mean"],
                 dev["rstd"], dev["weight"], stream=s)
    monkeypatch.undo()
    assert len(closed) >= 4 and all(p.dead for p in closed)   # outputs and workspace
    s.synchronize()
    check(outs, case)
    for t in (*outs, *dev.values()):
        t.close()
    s.close()
    assert live(emulator) == n     # freed, though their pools were closed under them
    p = acl_py.get_pool()
    p.close()
    with pytest.raises(errors.ClosedError):
        p.malloc(ROUND)
    with pytest.raises(errors.ClosedError):
        acl_py.DeviceBuffer(ROUND, pool=p)
