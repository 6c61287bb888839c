"""DeviceTensor (dtypes, views, strides, handles, lifetimes) and IntArray/BoolArray."""
import gc

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import dtypes, errors
from acl_py._ffi import ffi
from acl_py.tensor import DeviceTensor

ALL_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16,
              np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_,
              np.complex64, np.complex128, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
ACL_NAMES = {np.float32: "ACL_FLOAT", np.float16: "ACL_FLOAT16", ml_dtypes.bfloat16: "ACL_BF16",
             np.float64: "ACL_DOUBLE", np.int8: "ACL_INT8", np.int16: "ACL_INT16",
             np.int32: "ACL_INT32", np.int64: "ACL_INT64", np.uint8: "ACL_UINT8",
             np.uint16: "ACL_UINT16", np.uint32: "ACL_UINT32", np.uint64: "ACL_UINT64",
             np.bool_: "ACL_BOOL", np.complex64: "ACL_COMPLEX64",
             np.complex128: "ACL_COMPLEX128", ml_dtypes.float8_e4m3fn: "ACL_FLOAT8_E4M3FN",
             ml_dtypes.float8_e5m2: "ACL_FLOAT8_E5M2"}


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


# ---- dtypes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_dtype_table_matches_declarations(dtype):
    dt = np.dtype(dtype)
    code = ffi.integer_const(ACL_NAMES[dtype])
    assert dtypes.to_acl(dt) == code
    assert dtypes.from_acl(code) == dt
    assert dtypes.name(code) == ACL_NAMES[dtype]
    assert dtypes.itemsize(code) == dt.itemsize == dtypes.itemsize(dt)


def test_dtype_errors():
    for bad in (object, np.str_, "U4", np.float128 if hasattr(np, "float128") else "V3"):
        with pytest.raises(errors.AclTypeError):
            dtypes.as_dtype(bad)
    with pytest.raises(errors.AclTypeError, match="int"):
        dtypes.as_dtype(0)                               # ambiguous: refused
    with pytest.raises(errors.AclTypeError):
        dtypes.from_acl(13)                              # ACL_STRING
    assert dtypes.as_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert len(dtypes.supported()) == len(ALL_DTYPES)


def test_bfloat16_is_loaded_only_when_met(run_python):
    """ml_dtypes takes over a second to import (0.7.0): `import acl_py`, a float32 round trip
    and the reference of a float32 problem do without it; a bfloat16 met by name, by
    aclDataType or as an array's dtype loads it, and the tables then hold it in their order."""
    proc = run_python("""
        import sys
        import numpy as np
        import acl_py
        from acl_py import dtypes, reference
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        with acl_py.DeviceTensor.from_numpy(x) as t:
            assert (t.to_numpy() == x).all()
        reference.assert_close(x, x.astype(np.float64), np.ones_like(x), np.float32)
        print("before", "ml_dtypes" in sys.modules)
        print("by name", dtypes.as_dtype("bfloat16"), "ml_dtypes" in sys.modules)
        print("code", dtypes.to_acl(dtypes.from_acl(27)))
        print("order", [d.name for d in dtypes.supported()][:4])
    """, env={"ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:4] == [
        "before False", "by name bfloat16 True", "code 27",
        "order ['float32', 'float16', 'bfloat16', 'float64']"], proc.stdout


# ---- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype(dtype):
    x = random_array((3, 5, 7), dtype)
    t = DeviceTensor.from_numpy(x)
    assert t.shape == x.shape and t.dtype == x.dtype and t.strides == (35, 7, 1)
    assert t.offset == 0 and t.is_contiguous and t.acl_dtype == dtypes.to_acl(x.dtype)
    y = t.to_numpy()
    assert y.dtype == x.dtype and y.shape == x.shape
    assert y.tobytes() == x.tobytes()                    # bit exact (NaN payloads too)
    t.close()


@pytest.mark.parametrize("shape", [(), (0,), (4, 0, 3), (1,), (2, 1, 1, 3)])
def test_round_trip_odd_shapes(shape):
    x = random_array(shape, np.float32)
    with DeviceTensor.from_numpy(x) as t:
        assert t.shape == shape and t.size == x.size and t.nbytes == x.nbytes
        np.testing.assert_array_equal(t.to_numpy(), x)


def test_bfloat16_values_survive():
    x = np.array([1.0, -2.5, 3.140625, 65280.0, np.inf, -0.0], dtype=ml_dtypes.bfloat16)
    with DeviceTensor.from_numpy(x) as t:
        y = t.to_numpy()
    assert y.dtype == ml_dtypes.bfloat16
    assert y.view(np.uint16).tolist() == x.view(np.uint16).tolist()


def test_from_numpy_copies_contiguous_arrays_straight(monkeypatch):
    seen = []
    real = acl_py.DeviceBuffer.copy_from_host

    def spy(self, src, offset=0):
        seen.append(src)
        return real(self, src, offset)

    monkeypatch.setattr(acl_py.DeviceBuffer, "copy_from_host", spy)
    x = random_array((64, 32), np.float32)
    DeviceTensor.from_numpy(x).close()
    assert seen[-1] is x                                 # no intermediate copy
    f = np.asfortranarray(x)
    tf = DeviceTensor.from_numpy(f)
    assert np.shares_memory(seen[-1], f)                 # same bytes, no copy
    assert tf.strides == (1, 64) and not tf.is_contiguous
    np.testing.assert_array_equal(tf.to_numpy(), x)
    tf.close()
    strided = x[::2, 1::3]
    ts = DeviceTensor.from_numpy(strided)
    assert not np.shares_memory(seen[-1], x) and seen[-1].flags.c_contiguous
    np.testing.assert_array_equal(ts.to_numpy(), strided)
    ts.close()


def test_byte_swapped_arrays_are_copied_in_the_devices_order():
    """A ">f4" array (from a file format) holds float32 values the other way round: copied
    to the device in its native order, never as raw bytes; a device tensor of a byte-swapped
    dtype is refused, naming the dtype and the conversion."""
    x = random_array((3, 4), np.float32)
    swapped = x.astype(x.dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative and swapped.tobytes() != x.tobytes()
    with DeviceTensor.from_numpy(swapped) as t:
        assert t.dtype == np.float32
        assert t.to_numpy().tobytes() == x.tobytes()
        t.copy_from_numpy((2 * x).astype(swapped.dtype))
        assert t.to_numpy().tobytes() == (2 * x).tobytes()
    with pytest.raises(errors.AclTypeError, match=r"dtype (>|<)f4 is float32 in non-native "
                                                  r"byte order.*astype\('float32'\)"):
        DeviceTensor.empty((2,), swapped.dtype)
    with pytest.raises(errors.AclTypeError, match="non-native byte order"):
        dtypes.to_acl(np.dtype(np.int16).newbyteorder("S"))


def test_from_numpy_accepts_array_likes_and_async(emulator):
    with DeviceTensor.from_numpy([[1, 2], [3, 4]]) as t:
        assert t.dtype == np.int64 and t.to_numpy().tolist() == [[1, 2], [3, 4]]
    s = acl_py.Stream()
    x = random_array((100,), np.float16)
    t = DeviceTensor.from_numpy(x, s)
    assert t.to_numpy(stream=s).tobytes() == x.tobytes()
    t.close()
    s.close()


def test_empty_zeros_and_copy_from_numpy():
    z = DeviceTensor.zeros((3, 4), np.int32)
    assert (z.to_numpy() == 0).all() and z.dtype == np.int32
    x = random_array((3, 4), np.int32)
    z.copy_from_numpy(x)
    np.testing.assert_array_equal(z.to_numpy(), x)
    e = DeviceTensor.empty([2, 2], "float16")
    assert e.shape == (2, 2) and e.dtype == np.float16
    with pytest.raises(errors.AclTypeError):
        z.copy_from_numpy(x.astype(np.int64))
    with pytest.raises(errors.AclArgumentError):
        z.copy_from_numpy(x[:2])
    z.close()
    e.close()


# ---- views ----------------------------------------------------------------------------------

KEYS = [
    (1,), (-1,), (slice(1, None),), (slice(None, None, 2),), (Ellipsis, 1),
    (slice(1, None), slice(None, None, 2)), (1, slice(None), 2), (slice(0, 0),),
    (None, 1), (slice(None), None, slice(2, 5)), (Ellipsis, slice(1, None, 3)),
    (slice(1, 3), 0, slice(None, None, 4)), (np.int64(2),), (slice(5, 1),),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_slicing_matches_numpy(key):
    x = random_array((4, 5, 6), np.float32)
    with DeviceTensor.from_numpy(x) as t:
        v = t[key]
        expect = x[key]
        assert v.shape == expect.shape
        assert v.is_view and v.buffer is t.buffer
        np.testing.assert_array_equal(v.to_numpy(), expect)
        if expect.size:
            # element strides and offset say exactly where NumPy's view is
            # element strides (where they matter: dims > 1) and offset say exactly where
            # NumPy's view of the same data is
            assert [s // 4 for s, d in zip(expect.strides, expect.shape) if d > 1] == \
                [s for s, d in zip(v.strides, v.shape) if d > 1]
            assert v.offset == (expect.__array_interface__["data"][0] -
                                x.__array_interface__["data"][0]) // 4
        v.handle                                          # aclCreateTensor accepts it
        v.close()


def test_views_of_views_and_transpose():
    x = random_array((6, 8, 10), np.float64)
    with DeviceTensor.from_numpy(x) as t:
        cases = [
            (t.T, x.T), (t.transpose(1, 0, 2), x.transpose(1, 0, 2)),
            (t.permute(2, 0, 1), x.transpose(2, 0, 1)), (t.transpose((0, 2, 1)), x.transpose(0, 2, 1)),
            (t[1:, ::2].T[2], x[1:, ::2].T[2]), (t[:, 3].T[::3], x[:, 3].T[::3]),
            (t.transpose(-1, 0, 1)[2:, 1], x.transpose(-1, 0, 1)[2:, 1]),
            (t.reshape(48, 10)[5:9], x.reshape(48, 10)[5:9]), (t.reshape(-1), x.reshape(-1)),
            (t[2].reshape(2, -1)[:, 7:], x[2].reshape(2, -1)[:, 7:]),
        ]
        for v, e in cases:
            np.testing.assert_array_equal(v.to_numpy(), e)
            assert v.handle is v.handle                  # cached per view


def test_view_handles_created_on_demand_and_cached(emulator):
    x = random_array((4, 4), np.float32)
    t = DeviceTensor.from_numpy(x)
    n = emulator.live_objects()["tensors"]
    emulator.reset_call_counts()
    assert emulator.live_objects()["tensors"] == n       # no handle yet
    h = t.handle
    assert h != ffi.NULL and t.handle == h
    v = t[1:, ::2]
    v.handle
    v.handle
    assert emulator.call_counts().get("aclCreateTensor") == 2
    assert emulator.live_objects()["tensors"] == n + 2
    v.close()                                            # a view: only its handle
    assert emulator.live_objects()["tensors"] == n + 1 and not t.closed
    with pytest.raises(errors.ClosedError):
        v.handle
    del t
    gc.collect()
    # The owner's handle goes with the storage, which the view object still holds.
    assert emulator.live_objects()["tensors"] == n + 1
    del v
    gc.collect()
    # The storage's block went back to the pool with the owner's handle, for its next
    # owner of the same layout; emptying the pool's cache destroys it.
    assert emulator.live_objects()["tensors"] == n + 1
    acl_py.get_pool().free_all_blocks()
    assert emulator.live_objects()["tensors"] == n


def test_views_share_storage():
    x = np.zeros((4, 6), np.float32)
    t = DeviceTensor.from_numpy(x)
    col = t[:, 2]
    col.copy_from_numpy(np.array([1, 2, 3, 4], np.float32))   # strided write-through
    x[:, 2] = [1, 2, 3, 4]
    np.testing.assert_array_equal(t.to_numpy(), x)
    blk = t[1:3, 1:4]
    blk.copy_from_numpy(np.full((2, 3), 9, np.float32))
    x[1:3, 1:4] = 9
    np.testing.assert_array_equal(t.to_numpy(), x)
    np.testing.assert_array_equal(t.T[2].to_numpy(), x.T[2])
    t.close()


def test_closing_owner_closes_views_and_view_keeps_storage(emulator):
    n = emulator.live_objects()["device_allocations"]
    t = DeviceTensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4), pool=None)
    v = t[1]
    t.close()
    assert v.closed and emulator.live_objects()["device_allocations"] == n
    with pytest.raises(errors.ClosedError, match="storage"):
        v.to_numpy()
    with pytest.raises(errors.ClosedError):
        v.handle
    # without close, a view alone keeps the storage alive
    t2 = DeviceTensor.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4), pool=None)
    v2 = t2[1:, 2]
    del t2
    gc.collect()
    assert emulator.live_objects()["device_allocations"] == n + 1
    np.testing.assert_array_equal(v2.to_numpy(), [6, 10])
    del v2
    gc.collect()
    assert emulator.live_objects()["device_allocations"] == n


def test_new_output_owns_its_storage_and_hands_it_to_its_buffer():
    """An operator's new output owns its pooled storage without a DeviceBuffer object; one is
    made when asked for, and the ownership moves to it: the storage then lives as long as
    either object, and is released exactly once, by close() of either or by the last one
    dropped."""
    from acl_py import runtime
    pool = acl_py.get_pool()
    used, owned = pool.used_bytes(), runtime.live_count(runtime.ORDER_MEMORY)
    f32 = np.dtype(np.float32)

    def new():
        t = DeviceTensor.new_output((2, 8), f32, 0, None)
        assert pool.used_bytes() == used + 512
        assert runtime.live_count(runtime.ORDER_MEMORY) == owned + 1
        return t

    # dropped without a buffer: the storage goes back
    t = new()
    del t
    gc.collect()
    assert pool.used_bytes() == used and runtime.live_count(runtime.ORDER_MEMORY) == owned
    # the buffer outlives the tensor, then goes
    t = new()
    t.copy_from_numpy(np.arange(16, dtype=np.float32).reshape(2, 8))
    b = t.buffer
    assert t.buffer is b and b.allocation is t.allocation and not b.closed
    assert runtime.live_count(runtime.ORDER_MEMORY) == owned + 1      # one owner at a time
    del t
    gc.collect()
    assert pool.used_bytes() == used + 512 and not b.closed
    np.testing.assert_array_equal(np.frombuffer(b.copy_to_host(), np.float32), np.arange(16))
    del b
    gc.collect()
    assert pool.used_bytes() == used and runtime.live_count(runtime.ORDER_MEMORY) == owned
    # the tensor outlives its buffer object, which was its storage's owner meanwhile
    t = new()
    t.buffer
    gc.collect()
    assert not t.closed and t.buffer.address == t.data_ptr
    # closing the tensor closes its buffer (and the reverse), once
    b = t.buffer
    t.close()
    assert b.closed and t.closed and pool.used_bytes() == used
    t.close()
    b.close()
    t = new()
    t.buffer.close()
    assert t.closed and pool.used_bytes() == used
    with pytest.raises(errors.ClosedError):
        t.handle
    t.close()
    # a view keeps the storage of a tensor that had no buffer
    t = new()
    t.copy_from_numpy(np.arange(16, dtype=np.float32).reshape(2, 8))
    v = t[1]
    del t
    gc.collect()
    np.testing.assert_array_equal(v.to_numpy(), np.arange(8, 16))
    del v
    gc.collect()
    assert pool.used_bytes() == used and runtime.live_count(runtime.ORDER_MEMORY) == owned


def test_new_outputs_buffer_asked_by_threads_at_once():
    """Threads asking a new output for its buffer at once all get the same object, which
    owns the storage; the storage is released once."""
    import threading
    from acl_py import runtime
    pool = acl_py.get_pool()
    used, owned = pool.used_bytes(), runtime.live_count(runtime.ORDER_MEMORY)
    for _ in range(20):
        t = DeviceTensor.new_output((4,), np.dtype(np.float32), 0, None)
        start = threading.Barrier(4)
        got = []

        def ask():
            start.wait()
            got.append(t.buffer)

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert len(got) == 4 and all(b is got[0] for b in got)
        del t, th, threads
        gc.collect()
        assert not got[0].closed and pool.used_bytes() == used + 512
        del got
        gc.collect()
        assert pool.used_bytes() == used
        assert runtime.live_count(runtime.ORDER_MEMORY) == owned



def test_handle_asked_by_threads_at_once_is_made_once(emulator, monkeypatch):
    """Threads asking a tensor for its aclTensor at once (its first use, by two launches)
    get one, made once. aclCreateTensor releases the GIL: a handle made by each thread would
    leak all but the one cached (an owning tensor's forever, a view's until the view is
    collected). The threads are made to meet inside aclCreateTensor if they can get there
    together; made once, they cannot (the first waits for the others in vain, briefly)."""
    import threading
    create = DeviceTensor._create_handle
    inside = threading.Barrier(4, timeout=0.5)

    def meeting_create(self, bst, key):
        try:
            inside.wait()
        except threading.BrokenBarrierError:
            pass
        return create(self, bst, key)

    monkeypatch.setattr(DeviceTensor, "_create_handle", meeting_create)
    n = emulator.live_objects()["tensors"]
    base = DeviceTensor.empty((4, 4), np.float32)
    view = base[1:]
    got = {id(base): set(), id(view): set()}

    def ask(t):
        got[id(t)].add(int(ffi.cast("uintptr_t", t.handle)))

    threads = [threading.Thread(target=ask, args=(t,)) for t in (base, base, view, view)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    monkeypatch.undo()
    assert [len(v) for v in got.values()] == [1, 1]
    assert emulator.live_objects()["tensors"] == n + 2
    view.close()
    assert emulator.live_objects()["tensors"] == n + 1
    base.close()
    acl_py.release_unused()             # the pool destroys the block's descriptor
    assert emulator.live_objects()["tensors"] == n

def test_tensor_over_a_user_buffer():
    buf = acl_py.DeviceBuffer(64)
    buf.copy_from_host(np.arange(16, dtype=np.float32))
    t = DeviceTensor(buf, (3, 2), np.float32, strides=(4, 1), offset=2)
    np.testing.assert_array_equal(t.to_numpy(), [[2, 3], [6, 7], [10, 11]])
    assert t.storage_size == 16 and t.is_view
    t.close()
    assert not buf.closed                                 # not the tensor's to free
    u = DeviceTensor(buf, (16,), np.float32)
    assert u.to_numpy()[-1] == 15
    u.close()
    buf.close()


def test_tensor_argument_errors(emulator):
    buf = acl_py.DeviceBuffer(64)
    emulator.reset_call_counts()
    cases = [
        (lambda: DeviceTensor(buf, (17,), np.float32), errors.AclArgumentError, "shape"),
        (lambda: DeviceTensor(buf, (4, 4), np.float32, offset=1), errors.AclArgumentError, "shape"),
        (lambda: DeviceTensor(buf, (2, 2), np.float32, strides=(8, 1), offset=8),
         errors.AclArgumentError, "shape"),
        (lambda: DeviceTensor(buf, (-1,), np.float32), errors.AclArgumentError, "shape[0]"),
        (lambda: DeviceTensor(buf, (2.0,), np.float32), errors.AclTypeError, "shape[0]"),
        (lambda: DeviceTensor(buf, (True,), np.float32), errors.AclTypeError, "shape[0]"),
        (lambda: DeviceTensor(buf, "ab", np.float32), errors.AclTypeError, "shape[0]"),
        (lambda: DeviceTensor(buf, (2,), object), errors.AclTypeError, "dtype"),
        (lambda: DeviceTensor(buf, (2, 2), np.float32, strides=(1,)), errors.AclArgumentError,
         "strides"),
        (lambda: DeviceTensor(buf, (2,), np.float32, strides=(-1,)), errors.AclArgumentError,
         "strides[0]"),
        (lambda: DeviceTensor(b"x" * 64, (2,), np.float32), errors.AclTypeError, "buffer"),
        (lambda: DeviceTensor.empty((2, -3)), errors.AclArgumentError, "shape[1]"),
        (lambda: DeviceTensor.empty((2, 3), np.str_), errors.AclTypeError, "dtype"),
        (lambda: DeviceTensor.from_numpy(np.array(["a"])), errors.AclTypeError, "arr"),
        (lambda: DeviceTensor.from_numpy(np.zeros(2, object)), errors.AclTypeError, "arr"),
        (lambda: DeviceTensor.from_numpy(np.zeros(2), device=-1), errors.AclArgumentError,
         "device"),
    ]
    for make, exc, arg in cases:
        with pytest.raises(exc) as info:
            make()
        assert info.value.argument == arg, (arg, info.value)
    calls = emulator.call_counts()
    assert "aclCreateTensor" not in calls and "aclrtMalloc" not in calls, calls
    buf.close()


def test_indexing_errors():
    with DeviceTensor.from_numpy(np.zeros((3, 4), np.float32)) as t:
        with pytest.raises(IndexError):
            t[3]
        with pytest.raises(IndexError):
            t[0, 0, 0]
        with pytest.raises(errors.AclArgumentError, match="step"):
            t[::-1]
        with pytest.raises(errors.AclTypeError):
            t[[0, 1]]
        with pytest.raises(errors.AclTypeError):
            t[True]
        with pytest.raises(errors.AclArgumentError):
            t.transpose(0, 0)
        with pytest.raises(errors.AclArgumentError):
            t.reshape(5, 3)
        with pytest.raises(errors.AclArgumentError):
            t.T.reshape(12)                              # not contiguous
        with pytest.raises(errors.AclArgumentError):
            t.check_device(1, "input")


def test_tensor_lifetimes(emulator):
    live = emulator.live_objects
    n_t, n_a = live()["tensors"], live()["device_allocations"]
    with pytest.raises(RuntimeError):
        with DeviceTensor.from_numpy(np.ones(4, np.float32), pool=None) as t:
            t.handle
            raise RuntimeError("inside with")
    assert t.closed and live()["tensors"] == n_t and live()["device_allocations"] == n_a
    t.close()                                            # double close
    with pytest.raises(errors.ClosedError):
        t.to_numpy()
    ts = [DeviceTensor.from_numpy(np.ones(4, np.float32), pool=None) for _ in range(5)]
    for x in ts:
        x.handle
    assert live()["tensors"] == n_t + 5
    del ts, x
    gc.collect()
    assert live()["tensors"] == n_t and live()["device_allocations"] == n_a


def test_tensor_handle_creation_failure(emulator):
    t = DeviceTensor.from_numpy(np.ones(4, np.float32))
    with emulator.inject_faults("aclCreateTensor:1"):
        with pytest.raises(errors.CreateFailedError) as info:
            t.handle
    assert info.value.call == "aclCreateTensor"
    assert t.handle != ffi.NULL                          # works once the fault is gone
    t.close()


def test_tensor_destroy_failure_is_retried(emulator):
    n = emulator.live_objects()["tensors"]
    t = DeviceTensor.from_numpy(np.ones(4, np.float32), pool=None)
    t.handle
    with emulator.inject_faults("aclDestroyTensor:1"):
        with pytest.raises(errors.InternalError):
            t.close()
    assert emulator.live_objects()["tensors"] == n + 1 and not t.closed
    t.close()                     # still armed: close() may be retried
    assert emulator.live_objects()["tensors"] == n and t.closed
    # a failure while garbage collecting is retried by release_unused()
    u = DeviceTensor.from_numpy(np.ones(4, np.float32), pool=None)
    u.handle
    with emulator.inject_faults("aclDestroyTensor:1"):
        del u
        gc.collect()
    assert emulator.live_objects()["tensors"] == n + 1
    acl_py.release_unused()
    assert emulator.live_objects()["tensors"] == n
    # pooled storage: the handle goes back with the block; the pool destroys it when it
    # frees the block, and keeps both (retried) if that fails
    pool = acl_py.MemoryPool()
    blocks = emulator.live_objects()["device_allocations"]
    v = DeviceTensor.from_numpy(np.ones(4, np.float32), pool=pool)
    v.handle
    v.close()
    assert emulator.live_objects()["tensors"] == n + 1
    with emulator.inject_faults("aclDestroyTensor:1"):
        with pytest.raises(errors.InternalError):
            pool.free_all_blocks()
    assert emulator.live_objects()["tensors"] == n + 1 and pool.n_free_blocks() == 1
    pool.free_all_blocks()
    assert emulator.live_objects()["tensors"] == n and pool.n_free_blocks() == 0
    assert emulator.live_objects()["device_allocations"] == blocks
    pool.close()


def test_pooled_block_keeps_its_owners_handle_for_the_next_owner(emulator):
    """An owning tensor's aclTensor goes back to the pool with its block; the block's next
    owning tensor of the same layout reuses it (no aclCreateTensor / aclDestroyTensor pair
    per allocation), one of another layout replaces it."""
    pool = acl_py.MemoryPool()
    n = emulator.live_objects()["tensors"]
    t = DeviceTensor.empty((2, 8), np.float32, pool=pool)
    h, addr = t.handle, t.buffer.address
    t.close()
    emulator.reset_call_counts()
    u = DeviceTensor.from_numpy(np.arange(16, dtype=np.float32).reshape(2, 8), pool=pool)
    assert u.buffer.address == addr and u.handle == h
    assert "aclCreateTensor" not in emulator.call_counts()
    np.testing.assert_array_equal(u.to_numpy(), np.arange(16).reshape(2, 8))
    u.close()
    w = DeviceTensor.empty((16,), np.float32, pool=pool)     # same block, another layout
    w.handle
    counts = emulator.call_counts()
    assert counts.get("aclCreateTensor") == 1 and counts.get("aclDestroyTensor") == 1
    assert emulator.live_objects()["tensors"] == n + 1
    w.close()
    # The previous owner's handle failing to go is not the new tensor's failure: retried.
    x = DeviceTensor.empty((4, 4), np.float32, pool=pool)
    with emulator.inject_faults("aclDestroyTensor:1"):
        assert x.handle != ffi.NULL
    assert emulator.live_objects()["tensors"] == n + 2
    acl_py.release_unused()
    assert emulator.live_objects()["tensors"] == n + 1
    x.close()
    pool.free_all_blocks()
    assert emulator.live_objects()["tensors"] == n
    pool.close()


# ---- IntArray / BoolArray ---------------------------------------------------------------------

def test_int_and_bool_arrays(emulator):
    live = emulator.live_objects
    n_i, n_b = live()["int_arrays"], live()["bool_arrays"]
    ia = acl_py.IntArray([2, np.int64(3), -1])
    ba = acl_py.BoolArray((True, False, np.True_))
    assert list(ia) == [2, 3, -1] and len(ia) == 3 and ia[1] == 3
    assert ba.values == (True, False, True)
    assert ia.handle != ffi.NULL and ba.handle != ffi.NULL
    assert (live()["int_arrays"], live()["bool_arrays"]) == (n_i + 1, n_b + 1)
    ia.close()
    ia.close()
    with pytest.raises(errors.ClosedError):
        ia.handle
    with ba:
        pass
    assert (live()["int_arrays"], live()["bool_arrays"]) == (n_i, n_b)
    e = acl_py.IntArray([])
    assert len(e) == 0 and e.handle != ffi.NULL
    del e
    gc.collect()
    assert live()["int_arrays"] == n_i


def test_array_argument_errors(emulator):
    emulator.reset_call_counts()
    cases = [
        (lambda: acl_py.IntArray([1, 2.5]), errors.AclTypeError, "values[1]"),
        (lambda: acl_py.IntArray([True]), errors.AclTypeError, "values[0]"),
        (lambda: acl_py.IntArray(5), errors.AclTypeError, "values"),
        (lambda: acl_py.IntArray("12"), errors.AclTypeError, "values"),
        (lambda: acl_py.IntArray([1 << 63]), errors.AclArgumentError, "values[0]"),
        (lambda: acl_py.BoolArray([True, 1]), errors.AclTypeError, "values[1]"),
        (lambda: acl_py.BoolArray(None), errors.AclTypeError, "values"),
    ]
    for make, exc, arg in cases:
        with pytest.raises(exc) as info:
            make()
        assert info.value.argument == arg
    calls = emulator.call_counts()
    assert "aclCreateIntArray" not in calls and "aclCreateBoolArray" not in calls
