"""The emulator's aclScalar, aclFloatArray, aclTensorList and aclScalarList through the raw
binding, against the vendor's rules (hicann/opbase src/nnopbase/common/api/acl_op_api.cpp):
what is copied, what a list owns, NULL handling, status codes, and the emulator's refusals of
what would be a double free on a device."""
from __future__ import annotations

import ctypes
import threading

import pytest

from acl_py.raw import ffi, lib

from test_emulator_meta import errmsg, expect, expect_null, tensor

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")

F32, F16, INT8, INT32, INT64, F64, BOOL, STRING, C64, C128, BF16, C32 = (
    0, 1, 2, 3, 9, 11, 12, 13, 16, 17, 27, 33)
OK, NULLPTR, INVALID, INNER = 0, 161001, 161002, 561000
KEYS = ("tensors", "scalars", "float_arrays", "tensor_lists", "scalar_lists")


def live():
    out = ffi.new("aclemuLiveObjects *")
    assert lib.aclemuGetLiveObjects(out) == 0
    return {k: getattr(out, k) for k in KEYS}


def delta(before):
    now = live()
    return {k: now[k] - before[k] for k in KEYS if now[k] != before[k]}


class CScalar(ctypes.Structure):  # mirror of struct aclScalar in emulator/src/emu_internal.h
    _fields_ = [("dtype", ctypes.c_int), ("size", ctypes.c_uint32),
                ("bytes", ctypes.c_ubyte * 16), ("list", ctypes.c_void_p)]


class CFloatArray(ctypes.Structure):  # mirror of struct aclFloatArray
    _fields_ = [("size", ctypes.c_uint64), ("values", ctypes.POINTER(ctypes.c_float))]


def read_scalar(h):
    return CScalar.from_address(int(ffi.cast("uintptr_t", h)))


def scalar(value, dtype, ctype):
    return lib.aclCreateScalar(ffi.new(ctype + " *", value), dtype)


# ---- aclScalar -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,ctype,value,size", [
    (F32, "float", 1.5, 4), (F64, "double", -2.25, 8), (INT64, "int64_t", -(2 ** 40), 8),
    (INT32, "int32_t", 7, 4), (INT8, "int8_t", -3, 1), (BOOL, "bool", True, 1),
    (F16, "uint16_t", 0x3C00, 2), (BF16, "uint16_t", 0x3F80, 2), (C128, "double[2]", [1, 2], 16),
])
def test_scalar_copies_its_dtype_size(dtype, ctype, value, size):
    src = ffi.new(ctype + (" *" if "[" not in ctype else ""), value)
    before = live()
    h = lib.aclCreateScalar(src, dtype)
    assert h != ffi.NULL, errmsg()
    assert delta(before) == {"scalars": 1}
    expected = bytes(ffi.buffer(src, size))
    ffi.buffer(src)[:] = b"\xff" * len(ffi.buffer(src))  # the caller's memory may change
    s = read_scalar(h)
    assert (s.dtype, s.size) == (dtype, size)
    assert bytes(s.bytes[:size]) == expected
    assert lib.aclDestroyScalar(h) == OK
    assert delta(before) == {}


def test_scalar_null_value_and_refused_dtypes():
    expect_null(lib.aclCreateScalar(ffi.NULL, F32), "aclCreateScalar", "value is NULL")
    v = ffi.new("double *", 1.0)
    for dt in (STRING, C32, -1, 29, 30, 99):
        expect_null(lib.aclCreateScalar(v, dt), "aclCreateScalar", f"dataType {dt}")
    # the vendor's 8-bit float dtypes (34..41) are one-byte scalars
    h = lib.aclCreateScalar(ffi.new("uint8_t *", 0x38), 35)
    assert h != ffi.NULL and read_scalar(h).size == 1
    assert lib.aclDestroyScalar(h) == OK


def test_destroy_scalar_rules():
    assert lib.aclDestroyScalar(ffi.NULL) == OK  # the vendor's destroys accept NULL
    h = scalar(1.0, F32, "float")
    assert lib.aclDestroyScalar(h) == OK
    expect(lib.aclDestroyScalar(h), INVALID, "aclDestroyScalar", "not a live scalar")
    t = tensor([2])
    expect(lib.aclDestroyScalar(ffi.cast("aclScalar *", t)), INVALID, "aclDestroyScalar")
    assert lib.aclDestroyTensor(t) == OK


# ---- aclFloatArray ---------------------------------------------------------------------------

def test_float_array_copies_and_allows_empty():
    before = live()
    src = ffi.new("float[]", [1.0, 2.5, -3.0])
    a = lib.aclCreateFloatArray(src, 3)
    assert a != ffi.NULL
    src[0] = 99.0
    arr = CFloatArray.from_address(int(ffi.cast("uintptr_t", a)))
    assert arr.size == 3 and list(arr.values[0:3]) == [1.0, 2.5, -3.0]
    empty = lib.aclCreateFloatArray(ffi.NULL, 0)
    assert empty != ffi.NULL
    assert delta(before) == {"float_arrays": 2}
    # NULL value with a size: an empty array, as CANN's constructor makes (hicann/opbase
    # src/nnopbase/common/utils/common_types.cpp aclArray<T>::aclArray)
    null_valued = lib.aclCreateFloatArray(ffi.NULL, 2)
    assert null_valued != ffi.NULL
    assert CFloatArray.from_address(int(ffi.cast("uintptr_t", null_valued))).size == 0
    assert lib.aclDestroyFloatArray(null_valued) == OK
    assert lib.aclDestroyFloatArray(a) == OK
    assert lib.aclDestroyFloatArray(empty) == OK
    assert lib.aclDestroyFloatArray(ffi.NULL) == OK
    expect(lib.aclDestroyFloatArray(a), INVALID, "aclDestroyFloatArray", "not a live")
    assert delta(before) == {}


# ---- lists: ownership ------------------------------------------------------------------------

def test_tensor_list_owns_and_destroys_its_tensors():
    before = live()
    ts = [tensor([2, 3]), ffi.NULL, tensor([4])]
    arr = ffi.new("aclTensor *[]", ts)
    lst = lib.aclCreateTensorList(arr, 3)
    assert lst != ffi.NULL, errmsg()
    arr[0] = ffi.NULL  # the list copied the pointer array
    assert delta(before) == {"tensors": 2, "tensor_lists": 1}
    # an element belongs to the list: destroying it too would be a double free on a device
    expect(lib.aclDestroyTensor(ts[0]), INVALID, "aclDestroyTensor", "belongs to tensor list")
    assert delta(before) == {"tensors": 2, "tensor_lists": 1}
    assert lib.aclDestroyTensorList(lst) == OK  # destroys both tensors (NULL skipped)
    assert delta(before) == {}
    expect(lib.aclDestroyTensor(ts[2]), INVALID, "aclDestroyTensor", "not a live tensor")
    expect(lib.aclDestroyTensorList(lst), INVALID, "aclDestroyTensorList", "not a live")
    assert lib.aclDestroyTensorList(ffi.NULL) == OK


def test_tensor_list_refusals_change_nothing():
    before = live()
    a, b = tensor([1]), tensor([1])
    dead = tensor([1])
    assert lib.aclDestroyTensor(dead) == OK
    expect_null(lib.aclCreateTensorList(ffi.new("aclTensor *[]", [a, dead]), 2),
                "aclCreateTensorList", "value[1]", "not live")
    expect_null(lib.aclCreateTensorList(ffi.new("aclTensor *[]", [a, b, a]), 3),
                "aclCreateTensorList", "value[2]", "twice")
    # NULL value with a size: an empty list, taking nothing (common_types.cpp
    # aclTensorList::aclTensorList; aclScalarList likewise)
    for create, destroy in ((lib.aclCreateTensorList, lib.aclDestroyTensorList),
                            (lib.aclCreateScalarList, lib.aclDestroyScalarList)):
        null_valued = create(ffi.NULL, 1)
        assert null_valued != ffi.NULL
        assert ctypes.c_uint64.from_address(int(ffi.cast("uintptr_t", null_valued))).value == 0
        assert destroy(null_valued) == OK
    # a scalar handle is not a tensor
    s = scalar(1, INT64, "int64_t")
    expect_null(lib.aclCreateTensorList(ffi.new("aclTensor *[]", [ffi.cast("aclTensor *", s)]),
                                        1), "aclCreateTensorList", "value[0]")
    assert lib.aclDestroyScalar(s) == OK
    # nothing was taken by the failed calls: a and b can go into a list, then not another
    first = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [a, b]), 2)
    assert first != ffi.NULL
    expect_null(lib.aclCreateTensorList(ffi.new("aclTensor *[]", [b]), 1),
                "aclCreateTensorList", "another list")
    empty = lib.aclCreateTensorList(ffi.NULL, 0)
    assert empty != ffi.NULL
    assert lib.aclDestroyTensorList(empty) == OK
    assert lib.aclDestroyTensorList(first) == OK
    assert delta(before) == {}


def test_scalar_list_owns_its_scalars():
    before = live()
    ss = [scalar(1.0, F32, "float"), scalar(2, INT64, "int64_t")]
    lst = lib.aclCreateScalarList(ffi.new("aclScalar *[]", ss), 2)
    assert lst != ffi.NULL
    assert read_scalar(ss[0]).list == int(ffi.cast("uintptr_t", lst))
    assert delta(before) == {"scalars": 2, "scalar_lists": 1}
    expect(lib.aclDestroyScalar(ss[1]), INVALID, "aclDestroyScalar", "belongs to list")
    expect_null(lib.aclCreateScalarList(ffi.new("aclScalar *[]", [ss[0]]), 1),
                "aclCreateScalarList", "another list")
    assert lib.aclDestroyScalarList(lst) == OK
    assert delta(before) == {}
    expect(lib.aclDestroyScalarList(lst), INVALID, "aclDestroyScalarList", "not a live")
    assert lib.aclDestroyScalarList(ffi.NULL) == OK


# ---- fault injection -------------------------------------------------------------------------

@pytest.mark.parametrize("name,make", [
    ("aclCreateScalar", lambda: scalar(1.0, F32, "float")),
    ("aclCreateFloatArray", lambda: lib.aclCreateFloatArray(ffi.new("float[]", [1.0]), 1)),
    ("aclCreateTensorList", lambda: lib.aclCreateTensorList(ffi.NULL, 0)),
    ("aclCreateScalarList", lambda: lib.aclCreateScalarList(ffi.NULL, 0)),
])
def test_injected_create_failure(name, make):
    before = live()
    assert lib.aclemuSetFaults(f"{name}:1".encode()) == 0
    try:
        expect_null(make(), name, "injected fault")
    finally:
        lib.aclemuSetFaults(ffi.NULL)
    assert delta(before) == {}


def test_injected_destroy_failure_keeps_list_and_elements():
    before = live()
    lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [tensor([3])]), 1)
    assert lib.aclemuSetFaults(b"aclDestroyTensorList:1") == 0
    try:
        expect(lib.aclDestroyTensorList(lst), INNER, "aclDestroyTensorList", "injected fault")
    finally:
        lib.aclemuSetFaults(ffi.NULL)
    assert delta(before) == {"tensors": 1, "tensor_lists": 1}
    assert lib.aclDestroyTensorList(lst) == OK  # a retry releases it
    assert delta(before) == {}


def test_lists_from_many_threads_take_each_tensor_once():
    before = live()
    ts = [tensor([1]) for _ in range(64)]
    made, lock = [], threading.Lock()

    def grab():
        for t in ts:
            lst = lib.aclCreateTensorList(ffi.new("aclTensor *[]", [t]), 1)
            if lst != ffi.NULL:
                with lock:
                    made.append(lst)

    threads = [threading.Thread(target=grab) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    errmsg()
    assert len(made) == len(ts)  # every tensor went into exactly one list
    for lst in made:
        assert lib.aclDestroyTensorList(lst) == OK
    assert delta(before) == {}
