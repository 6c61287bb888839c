"""acl_py.Scalar, FloatArray, TensorList, ScalarList: values, dtypes, ownership (a list's C
handles are its own), errors that lose nothing, release exactly once."""
from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import errors
from acl_py.raw import ffi, lib


def scalar_bytes_of(s):
    """The bytes the C scalar holds, read back on the emulator (struct aclScalar)."""
    from test_emulator_arguments import CScalar
    c = CScalar.from_address(int(ffi.cast("uintptr_t", s.handle)))
    return c.dtype, bytes(c.bytes[:c.size])


@pytest.mark.parametrize("value,dtype,expect_dtype", [
    (True, None, np.bool_), (3, None, np.int64), (2.5, None, np.float64),
    (1 + 2j, None, np.complex128), (np.float32(1.5), None, np.float32),
    (np.int8(-3), None, np.int8), (1.5, "float16", np.float16), (7, np.int32, np.int32),
    (3, "float32", np.float32), (1.25, ml_dtypes.bfloat16, ml_dtypes.bfloat16),
])
def test_scalar_dtype_and_value(value, dtype, expect_dtype):
    with acl_py.Scalar(value, dtype) as s:
        assert s.dtype == np.dtype(expect_dtype)
        assert s.value == value
        if lib.backend.is_emulator:
            code, raw = scalar_bytes_of(s)
            assert code == acl_py.dtypes.to_acl(np.dtype(expect_dtype))
            assert raw == np.array(value, dtype=expect_dtype).tobytes()
    assert s.closed
    with pytest.raises(errors.ClosedError):
        s.handle
    s.close()  # repeat is harmless


@pytest.mark.parametrize("value,dtype,exc", [
    (1.5, np.int32, errors.AclTypeError),      # would truncate
    (300, np.int8, errors.AclArgumentError),   # out of range
    (1, np.bool_, errors.AclTypeError),        # a bool dtype takes bools
    (1j, np.float32, errors.AclTypeError),     # would drop the imaginary part
    ("1", None, errors.AclTypeError),
    (1, "int4", errors.AclTypeError),
])
def test_scalar_refuses_lossy_values(value, dtype, exc, emulator):
    before = emulator.live_objects()["scalars"]
    with pytest.raises(exc):
        acl_py.Scalar(value, dtype)
    assert emulator.live_objects()["scalars"] == before


def test_scalar_create_failure_is_typed(emulator):
    with emulator.inject_faults("aclCreateScalar:1"):
        with pytest.raises(errors.CreateFailedError, match="aclCreateScalar.*injected"):
            acl_py.Scalar(1.0)


def test_float_array():
    with acl_py.FloatArray([1, 2.5, 1e-50]) as a:
        assert a.values == (1.0, 2.5, 0.0)  # stored as float32
        assert len(a) == 3 and list(a) == [1.0, 2.5, 0.0] and a[1] == 2.5
        assert a.handle
    with acl_py.FloatArray([]) as empty:
        assert len(empty) == 0 and empty.handle
    for bad in (["x"], [True], 3, "abc"):
        with pytest.raises(errors.AclTypeError):
            acl_py.FloatArray(bad)


def test_tensor_list_owns_its_own_handles(emulator):
    x = acl_py.DeviceTensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = acl_py.DeviceTensor.from_numpy(np.ones(4, np.float16))
    x_handle = x.handle
    before = emulator.live_objects()
    lst = acl_py.TensorList([x, None, y[1:]])
    now = emulator.live_objects()
    assert now["tensor_lists"] == before["tensor_lists"] + 1
    assert now["tensors"] == before["tensors"] + 2  # fresh handles, not x.handle
    assert len(lst) == 3 and lst[0] is x and lst[1] is None
    assert lst.handle
    lst.close()
    assert emulator.live_objects() == before
    assert x.handle == x_handle  # the DeviceTensors are untouched
    np.testing.assert_array_equal(x.to_numpy(), np.arange(6).reshape(2, 3))
    x.close()
    y.close()


def test_tensor_list_with_a_closed_tensor():
    x = acl_py.DeviceTensor.from_numpy(np.zeros(3, np.float32))
    lst = acl_py.TensorList([x])
    x.close()
    with pytest.raises(errors.ClosedError, match="element 0"):
        lst.handle
    lst.close()
    with pytest.raises(errors.ClosedError):
        acl_py.TensorList([x])


def test_tensor_list_failures_leak_nothing(emulator):
    x = acl_py.DeviceTensor.from_numpy(np.zeros(3, np.float32))
    before = emulator.live_objects()
    with pytest.raises(errors.AclTypeError, match=r"tensors\[1\]"):
        acl_py.TensorList([x, np.zeros(3)])
    # the second element's handle fails: the first one's is destroyed
    with emulator.inject_faults("aclCreateTensor:2"):
        with pytest.raises(errors.CreateFailedError):
            acl_py.TensorList([x, x])
    # the list itself fails: both element handles are destroyed
    with emulator.inject_faults("aclCreateTensorList:1"):
        with pytest.raises(errors.CreateFailedError, match="aclCreateTensorList"):
            acl_py.TensorList([x, x])
    assert emulator.live_objects() == before
    x.close()


def test_scalar_list(emulator):
    before = emulator.live_objects()
    s = acl_py.Scalar(2.0, np.float16)
    with acl_py.ScalarList([1, 2.5, s, True]) as lst:
        assert lst.values == (1, 2.5, 2.0, True)
        assert lst.dtypes == tuple(np.dtype(t) for t in
                                   (np.int64, np.float64, np.float16, np.bool_))
        assert emulator.live_objects()["scalars"] == before["scalars"] + 5
        assert lst.handle
    assert not s.closed  # the list made its own copy
    s.close()
    with acl_py.ScalarList([1, 2], dtype=np.float32) as typed:
        assert typed.dtypes == (np.dtype(np.float32),) * 2
    with pytest.raises(errors.AclTypeError, match=r"values\[1\]"):
        acl_py.ScalarList([1, "a"])
    with emulator.inject_faults("aclCreateScalarList:1"):
        with pytest.raises(errors.CreateFailedError):
            acl_py.ScalarList([1, 2])
    assert emulator.live_objects() == before


def test_garbage_collection_and_finalize_release_once(emulator):
    before = emulator.live_objects()
    x = acl_py.DeviceTensor.from_numpy(np.zeros(2, np.float32))
    objs = [acl_py.Scalar(1), acl_py.FloatArray([1.0]), acl_py.TensorList([x]),
            acl_py.ScalarList([1])]
    del objs
    gc.collect()
    x.close()
    acl_py.release_unused()  # the pool keeps x's block cached otherwise
    assert emulator.live_objects() == before


def test_teardown_releases_lists_before_memory(run_python):
    res = run_python("""
        import numpy as np, acl_py
        from acl_py import emulator
        acl_py.init()
        x = acl_py.DeviceTensor.from_numpy(np.zeros(2, np.float32))
        keep = [acl_py.TensorList([x]), acl_py.ScalarList([1, 2.0]), acl_py.Scalar(3),
                acl_py.FloatArray([1.0])]
        acl_py.finalize()
        try:
            keep[0].handle
        except acl_py.FinalizedError:
            print("FINALIZED")
        acl_py.init()
        live = emulator.live_objects()
        print("LIVE", live["tensors"], live["scalars"], live["tensor_lists"],
              live["scalar_lists"], live["float_arrays"])
        acl_py.finalize()
    """)
    assert res.returncode == 0, res.stderr
    assert "FINALIZED" in res.stdout
    assert "LIVE 0 0 0 0 0" in res.stdout
