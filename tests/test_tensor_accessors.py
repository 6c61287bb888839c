"""acl-py's marshalling checked with the vendor's own accessors: the aclTensor acl-py makes for a
NumPy array (contiguous, Fortran-ordered, sliced, indexed, transposed, broadcast, empty,
rank 0; every dtype acl-py supports), read back through aclGetViewShape, aclGetViewStrides,
aclGetViewOffset, aclGetStorageShape, aclGetDataType, aclGetFormat and aclGetRawTensorAddr,
must describe exactly the array: the storage read from the device and viewed with the
description (numpy's as_strided) equals the array. The arrays the shape getters hand out are
released with acl_py.raw.delete_array (the docs' delete[]).

Public API only (no aclemu* symbol), so it runs on the CANN path too; the last test runs this
file again with the emulator's prefix as a CANN install (ACL_PY_BACKEND=cann)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import acl_py
from acl_py import dtypes, raw
from acl_py._loader import emulator_prefix
from acl_py.raw import ffi, lib


HERE = os.path.dirname(os.path.abspath(__file__))

# (name, base shape, order, index into the tensor and the array)
LAYOUTS = [
    ("contiguous", (2, 3, 4), "C", ()),
    ("fortran", (2, 3, 4), "F", ()),
    ("sliced", (4, 5, 6), "C", (slice(1, None), slice(None, None, 2), slice(1, 4))),
    ("indexed", (4, 5, 6), "C", (2, slice(None), 3)),
    ("transposed", (2, 3, 4), "C", "T"),
    ("fortran sliced", (4, 5, 6), "F", (slice(None, None, 3), 1)),
    ("broadcast axis", (3, 4), "C", (slice(None), None, slice(1, 3))),
    ("empty", (3, 4), "C", (slice(None), slice(2, 2))),
    ("rank 0", (3, 4), "C", (1, 2)),
    ("one element", (3, 4), "C", (slice(2, 3), slice(3, 4))),
]


def _base(shape, order, dtype):
    n = int(np.prod(shape))
    values = np.arange(1, n + 1)
    if dtype == np.bool_:
        values = values % 3 == 0
    elif dtype.kind == "c":
        values = values + 1j * values[::-1]
    return np.asarray(values.astype(dtype).reshape(shape), order=order)


def _index(x, key):
    return x.T if key == "T" else x[key]


def _shape_array(getter, handle):
    """One of the shape getters' arrays as a tuple; the array released as the docs say."""
    out = ffi.new("int64_t **")
    n = ffi.new("uint64_t *")
    assert getter(handle, out, n) == 0
    try:
        assert out[0] != ffi.NULL    # new int64_t[0] too: an array to release
        return tuple(out[0][i] for i in range(n[0]))
    finally:
        raw.delete_array(out[0])


def describe(handle):
    """Everything the accessors say about an aclTensor."""
    offset = ffi.new("int64_t *")
    dtype = ffi.new("aclDataType *")
    fmt = ffi.new("aclFormat *")
    addr = ffi.new("void **")
    assert lib.aclGetViewOffset(handle, offset) == 0
    assert lib.aclGetDataType(handle, dtype) == 0
    assert lib.aclGetFormat(handle, fmt) == 0
    assert lib.aclGetRawTensorAddr(handle, addr) == 0
    return {"shape": _shape_array(lib.aclGetViewShape, handle),
            "strides": _shape_array(lib.aclGetViewStrides, handle),
            "storage": _shape_array(lib.aclGetStorageShape, handle),
            "offset": offset[0], "dtype": dtype[0], "format": fmt[0],
            "addr": int(ffi.cast("uintptr_t", addr[0]))}


@pytest.mark.parametrize("dtype", dtypes.supported(), ids=str)
@pytest.mark.parametrize("name,shape,order,key", LAYOUTS, ids=[x[0] for x in LAYOUTS])
def test_acl_py_tensor_reads_back_as_the_numpy_array(name, shape, order, key, dtype):
    base = _base(shape, order, dtype)
    view = _index(base, key)
    with acl_py.DeviceTensor.from_numpy(base) as owner:
        tensor = _index(owner, key)
        d = describe(tensor.handle)
        assert d["shape"] == view.shape
        assert d["dtype"] == dtypes.to_acl(dtype) == tensor.acl_dtype
        assert d["format"] == lib.ACL_FORMAT_ND
        # One flat storage of the base's elements, at the device address acl-py allocated.
        assert d["storage"] == (base.size,)
        assert d["addr"] == owner.data_ptr
        assert d["addr"] + d["offset"] * dtype.itemsize == tensor.data_ptr
        if view.size == 0:
            assert d["offset"] == 0   # acl-py describes an empty view at offset 0
        else:
            assert d["strides"] == tuple(s // dtype.itemsize for s in view.strides)
        # The description, applied to the storage as the device holds it, IS the array.
        storage = np.frombuffer(owner.buffer.copy_to_host(), dtype)
        assert storage.size == d["storage"][0]
        # as_strided goes through the array interface, whose type string NumPy cannot read
        # back for some ml_dtypes types (float8_e5m2's '<f1'): it strides their bytes
        elements = storage.view(f"V{dtype.itemsize}")
        seen = np.lib.stride_tricks.as_strided(
            elements[d["offset"]:], d["shape"], tuple(s * dtype.itemsize for s in d["strides"]))
        np.testing.assert_array_equal(seen.view(dtype), view, strict=True)
        tensor.close()


def test_a_tensor_list_and_arrays_report_their_sizes():
    with acl_py.DeviceTensor.from_numpy(np.ones(3, np.float32)) as t, \
            acl_py.TensorList([t, t]) as tl, acl_py.IntArray([4, 5, 6]) as ia, \
            acl_py.BoolArray([True]) as ba:
        size = ffi.new("uint64_t *")
        assert lib.aclGetTensorListSize(tl.handle, size) == 0 and size[0] == 2
        assert lib.aclGetIntArraySize(ia.handle, size) == 0 and size[0] == 3
        assert lib.aclGetBoolArraySize(ba.handle, size) == 0 and size[0] == 1


def test_null_arguments_are_161001():
    """The vendor's status (its messages are its own: the emulator's are checked by
    tests/test_emulator_accessors.py)."""
    with acl_py.DeviceTensor.from_numpy(np.ones((2, 2), np.float32)) as t:
        out = ffi.new("int64_t **")
        n = ffi.new("uint64_t *")
        assert lib.aclGetViewShape(ffi.NULL, out, n) == lib.ACLNN_ERR_PARAM_NULLPTR == 161001
        assert lib.aclGetViewStrides(t.handle, out, ffi.NULL) == 161001
        assert lib.aclGetStorageShape(t.handle, ffi.NULL, n) == 161001
        assert lib.aclGetRawTensorAddr(t.handle, ffi.NULL) == 161001
        assert lib.aclGetViewOffset(t.handle, ffi.NULL) == 161001


def test_delete_array_of_null_does_nothing():
    raw.delete_array(ffi.NULL)


def test_the_cann_path_reads_the_same():
    """This file again, with the emulator's prefix found as a CANN install: the accessors and
    delete_array resolve from the libraries as the vendor's would be opened."""
    if os.environ.get("ACL_PY_BACKEND") == "cann":
        pytest.skip("already on the CANN path")
    env = dict(os.environ, ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(emulator_prefix()))
    env.pop("ACL_PY_EMULATOR_PREFIX", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-k", "not cann_path", os.path.join(HERE, "test_tensor_accessors.py")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout, r.stdout[-1000:]
