"""The emulator's operator-object library (libnnopbase.so) against docs/emulator.md: tensors,
int/bool arrays and the executor object model, through the raw cffi binding (and ctypes for
the internal executor API and for reading back what the create calls stored)."""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_objects import allocated_bytes
from _emu_status import errmsg, expect  # noqa: F401

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")

F32, F16, BF16, ND = 0, 1, 27, 2


def expect_null(h, call, *words):
    msg = errmsg()
    assert h == ffi.NULL, f"{call} should have failed"
    assert msg is not None and msg.startswith(call + ":"), msg
    for w in words:
        assert w in msg, (w, msg)


def live():
    out = ffi.new("aclemuLiveObjects *")
    assert lib.aclemuGetLiveObjects(out) == 0
    return {k: getattr(out, k) for k in ("tensors", "int_arrays", "bool_arrays", "executors")}


def i64(values):
    return ffi.new("int64_t[]", list(values)) if len(values) else ffi.NULL


FAKE_DATA = ffi.cast("void *", 0x10000)  # tensors are host descriptions: data is not touched
MAX_DIMS = 25  # CANN's op::MAX_DIM_NUM (hicann/opbase include/nnopbase/opdev/common_types.h)


def tensor(dims, strides=None, offset=0, storage=None, dtype=F32, fmt=ND, data=FAKE_DATA):
    if strides is None:
        strides, acc = [], 1
        for d in reversed(dims):
            strides.insert(0, acc)
            acc *= d
    storage = list(dims) if storage is None else storage
    return lib.aclCreateTensor(i64(dims), len(dims), dtype, i64(strides), offset, fmt,
                               i64(storage), len(storage), data)


class CTensor(ctypes.Structure):  # mirror of struct aclTensor in emulator/src/emu_internal.h
    _fields_ = [("dtype", ctypes.c_int), ("format", ctypes.c_int), ("ndim", ctypes.c_uint64),
                ("dims", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("offset", ctypes.c_int64), ("storage_ndim", ctypes.c_uint64),
                ("storage_dims", ctypes.c_int64 * MAX_DIMS), ("data", ctypes.c_void_p)]


def read_tensor(h):
    return CTensor.from_address(int(ffi.cast("uintptr_t", h)))


# ---- tensors -----------------------------------------------------------------------------------

def test_create_tensor_copies_its_arguments():
    before = live()
    dims, strides, storage = [2, 3], [1, 2], [7]
    d, s, st = i64(dims), i64(strides), i64(storage)
    t = lib.aclCreateTensor(d, 2, F16, s, 1, ND, st, 1, FAKE_DATA)
    assert t != ffi.NULL, errmsg()
    d[0] = s[0] = st[0] = 99  # the caller's arrays may change afterwards
    c = read_tensor(t)
    assert (c.dtype, c.format, c.ndim, c.offset, c.storage_ndim) == (F16, ND, 2, 1, 1)
    assert list(c.dims[:2]) == dims and list(c.strides[:2]) == strides
    assert list(c.storage_dims[:1]) == storage and c.data == 0x10000
    assert live()["tensors"] == before["tensors"] + 1
    assert lib.aclDestroyTensor(t) == 0
    assert live() == before


@pytest.mark.parametrize("case", [
    dict(dims=[2, 3], strides=[3, 1]),                    # contiguous
    dict(dims=[3, 2], strides=[1, 3], storage=[6]),       # transposed view
    dict(dims=[2, 2], strides=[3, 1], offset=4, storage=[3, 3]),  # slice with an offset
    dict(dims=[4], strides=[0], storage=[1]),             # broadcast (stride 0)
    dict(dims=[], strides=[], storage=[]),                # a scalar: one element
    dict(dims=[0, 5], strides=[5, 1], storage=[0], data=ffi.NULL),  # empty: no data needed
    dict(dims=[3, 0], strides=[0, 0], storage=[5], offset=5),       # empty view, offset at end
    dict(dims=[2] * MAX_DIMS, strides=[0] * MAX_DIMS, storage=[1]),  # the maximum rank
    dict(dims=[2], data=ffi.NULL),  # no address yet (CANN's own aclCreateTensor example)
    # every aclDataType and aclFormat value is accepted at creation: the operator decides
    *[dict(dims=[2], dtype=dt) for dt in
      (-1, 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 27, 29, 30, 33,
       34, 35, 36, 37, 38, 39, 40, 41)],
    *[dict(dims=[2], fmt=f) for f in
      (-1, 0, 1, 2, 3, 4, 12, 16, 27, 29, 30, 32, 33, 35, 47, 50, 51, 52, 53, 54)],
])
def test_valid_tensors(case):
    t = tensor(**case)
    assert t != ffi.NULL, errmsg()
    assert lib.aclDestroyTensor(t) == 0


@pytest.mark.parametrize("args,words", [
    (dict(dims=[2] * 26, strides=[0] * 26, storage=[1]), ["viewDimsNum (26)", "25"]),
    (dict(dims=[2], storage=[1] * 26), ["storageDimsNum (26)"]),
    (dict(dims=[2, -1], strides=[1, 1], storage=[4]), ["viewDims[1] is -1"]),
    (dict(dims=[2, 2], strides=[2, -1], storage=[4]), ["stride[1] is -1"]),
    (dict(dims=[2], offset=-1, storage=[4]), ["offset is -1"]),
    (dict(dims=[2], storage=[-4]), ["storageDims[0] is -4"]),
    (dict(dims=[2], dtype=-2), ["dataType -2"]),
    (dict(dims=[2], dtype=5), ["dataType 5"]),
    (dict(dims=[2], dtype=42), ["dataType 42"]),
    (dict(dims=[2], fmt=-2), ["format -2"]),
    (dict(dims=[2], fmt=5), ["format 5"]),
    (dict(dims=[2], fmt=55), ["format 55"]),
    (dict(dims=[2], data=ffi.cast("void *", 0x10010)), ["tensorData", "32-byte aligned"]),
    (dict(dims=[2], data=ffi.cast("void *", 0x10001)), ["32-byte aligned"]),
    (dict(dims=[2, 3], strides=[3, 1], storage=[5]), ["does not fit", "storage of 5"]),
    (dict(dims=[2, 3], strides=[3, 1], offset=1, storage=[6]), ["does not fit"]),
    (dict(dims=[3, 2], strides=[1, 4], storage=[6]), ["does not fit"]),
    (dict(dims=[0], strides=[1], offset=3, storage=[2]), ["does not fit"]),
    (dict(dims=[1 << 40, 1 << 40], strides=[1, 1], storage=[1 << 40, 1 << 40]),
     ["more than 2^63"]),
])
def test_invalid_tensors(args, words):
    before = live()
    expect_null(tensor(**args), "aclCreateTensor", *words)
    assert live() == before


def test_null_arrays_with_counts():
    one = i64([1])
    expect_null(lib.aclCreateTensor(ffi.NULL, 1, F32, one, 0, ND, one, 1, FAKE_DATA),
                "aclCreateTensor", "viewDims is NULL")
    expect_null(lib.aclCreateTensor(one, 1, F32, one, 0, ND, ffi.NULL, 1, FAKE_DATA),
                "aclCreateTensor", "storageDims is NULL")


def test_null_stride_means_contiguous():
    # hicann/opbase common_types.cpp: the aclTensor constructor computes contiguous strides
    dims = [2, 3, 1, 4]
    t = lib.aclCreateTensor(i64(dims), 4, F32, ffi.NULL, 0, ND, i64([24]), 1, FAKE_DATA)
    assert t != ffi.NULL, errmsg()
    assert list(read_tensor(t).strides[:4]) == [12, 4, 4, 1]
    assert lib.aclDestroyTensor(t) == 0
    # the view must still fit its storage
    expect_null(lib.aclCreateTensor(i64(dims), 4, F32, ffi.NULL, 0, ND, i64([23]), 1, FAKE_DATA),
                "aclCreateTensor", "does not fit")


def test_destroy_tensor_rules():
    t = tensor([4])
    assert lib.aclDestroyTensor(ffi.NULL) == 0  # CANN: nothing to destroy, OK
    garbage = ffi.cast("aclTensor *", 0xABCDE0)
    expect(lib.aclDestroyTensor(garbage), 161002, "aclDestroyTensor", "not a live tensor")
    a = lib.aclCreateIntArray(i64([1, 2]), 2)
    expect(lib.aclDestroyTensor(ffi.cast("aclTensor *", a)), 161002, "aclDestroyTensor")
    expect(lib.aclDestroyIntArray(ffi.cast("aclIntArray *", t)), 161002, "aclDestroyIntArray")
    assert lib.aclDestroyTensor(t) == 0  # neither wrong-kind call touched it
    assert lib.aclDestroyIntArray(a) == 0
    expect(lib.aclDestroyTensor(t), 161002, "aclDestroyTensor", "already destroyed")


# ---- arrays ------------------------------------------------------------------------------------

class CIntArray(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("values", ctypes.POINTER(ctypes.c_int64))]


class CBoolArray(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("values", ctypes.POINTER(ctypes.c_uint8))]


def test_int_array():
    before = live()
    vals = ffi.new("int64_t[]", [5, -3, 1 << 40])
    a = lib.aclCreateIntArray(vals, 3)
    assert a != ffi.NULL
    vals[0] = 0
    c = CIntArray.from_address(int(ffi.cast("uintptr_t", a)))
    assert c.size == 3 and [c.values[i] for i in range(3)] == [5, -3, 1 << 40]
    assert live()["int_arrays"] == before["int_arrays"] + 1
    empty = lib.aclCreateIntArray(ffi.NULL, 0)
    assert empty != ffi.NULL
    # NULL value with a size: an empty array, as CANN's constructor makes (hicann/opbase
    # src/nnopbase/common/utils/common_types.cpp aclArray<T>::aclArray)
    null_valued = lib.aclCreateIntArray(ffi.NULL, 2)
    assert null_valued != ffi.NULL, errmsg()
    assert CIntArray.from_address(int(ffi.cast("uintptr_t", null_valued))).size == 0
    assert lib.aclDestroyIntArray(ffi.NULL) == 0
    for x in (a, empty, null_valued):
        assert lib.aclDestroyIntArray(x) == 0
    expect(lib.aclDestroyIntArray(a), 161002, "aclDestroyIntArray", "not a live")
    assert live() == before


def test_bool_array():
    before = live()
    raw = ffi.new("uint8_t[]", [1, 0, 7])  # any non-zero byte reads as true
    b = lib.aclCreateBoolArray(ffi.cast("bool *", raw), 3)
    assert b != ffi.NULL
    c = CBoolArray.from_address(int(ffi.cast("uintptr_t", b)))
    assert c.size == 3 and [c.values[i] for i in range(3)] == [1, 0, 1]
    null_valued = lib.aclCreateBoolArray(ffi.NULL, 1)  # an empty array, as CANN's
    assert null_valued != ffi.NULL, errmsg()
    assert CBoolArray.from_address(int(ffi.cast("uintptr_t", null_valued))).size == 0
    assert lib.aclDestroyBoolArray(null_valued) == 0
    assert lib.aclDestroyBoolArray(ffi.NULL) == 0
    expect(lib.aclDestroyBoolArray(ffi.cast("aclBoolArray *", 0x5550)), 161002,
           "aclDestroyBoolArray")
    assert lib.aclDestroyBoolArray(b) == 0
    expect(lib.aclDestroyBoolArray(b), 161002, "aclDestroyBoolArray")
    assert live() == before


@pytest.mark.parametrize("name", ["aclCreateTensor", "aclCreateIntArray", "aclCreateBoolArray"])
def test_injected_create_failure_returns_null(name):
    before = live()
    make = {"aclCreateTensor": lambda: tensor([2]),
            "aclCreateIntArray": lambda: lib.aclCreateIntArray(i64([1]), 1),
            "aclCreateBoolArray": lambda: lib.aclCreateBoolArray(ffi.new("bool[]", [True]), 1)}
    destroy = {"aclCreateTensor": lib.aclDestroyTensor,
               "aclCreateIntArray": lib.aclDestroyIntArray,
               "aclCreateBoolArray": lib.aclDestroyBoolArray}[name]
    assert lib.aclemuSetFaults(f"{name}:2".encode()) == 0
    first = make[name]()
    expect_null(make[name](), name, "injected fault (call 2)")
    third = make[name]()
    assert first != ffi.NULL and third != ffi.NULL
    lib.aclemuSetFaults(ffi.NULL)
    assert destroy(first) == 0 and destroy(third) == 0
    assert live() == before


@pytest.mark.parametrize("name", ["aclDestroyTensor", "aclDestroyIntArray", "aclDestroyBoolArray"])
def test_injected_destroy_failure_keeps_object(name):
    before = live()
    obj = {"aclDestroyTensor": lambda: tensor([2]),
           "aclDestroyIntArray": lambda: lib.aclCreateIntArray(i64([1]), 1),
           "aclDestroyBoolArray": lambda: lib.aclCreateBoolArray(ffi.new("bool[]", [1]), 1)}[name]()
    created = live()
    assert lib.aclemuSetFaults(f"{name}:1".encode()) == 0
    expect(getattr(lib, name)(obj), 561000, name, "injected fault")
    assert live() == created
    assert getattr(lib, name)(obj) == 0  # a retry releases it
    assert live() == before


def test_dtype_helpers():
    so = ctypes.CDLL(str(lib.backend.libraries["nnopbase"]))
    so.aclemu_dtype_size.restype = ctypes.c_uint64
    so.aclemu_dtype_name.restype = ctypes.c_char_p
    sizes = {0: 4, 1: 2, 2: 1, 3: 4, 4: 1, 6: 2, 7: 2, 8: 4, 9: 8, 10: 8, 11: 8, 12: 1,
             13: 0, 16: 8, 17: 16, 27: 2, 29: 0, 30: 0, 33: 4, 34: 1, 35: 1, 36: 1, 37: 1,
             38: 0, 39: 0, 40: 0, 41: 0, -1: 0, 5: 0, 99: 0}
    for dt, size in sizes.items():
        assert so.aclemu_dtype_size(dt) == size, dt
    assert so.aclemu_dtype_name(27) == b"ACL_BF16" and so.aclemu_dtype_name(5) == b"unknown"


# ---- executors (the internal executor API, driven through ctypes) -------------------------------

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_uint64, ctypes.c_void_p)
DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Ops(ctypes.Structure):
    _fields_ = [("op_name", ctypes.c_char_p), ("launch", LAUNCH), ("destroy", DESTROY)]


# aclemu_fault keys its counters by the name's address and keeps it: the name buffers of
# these fake operators live as long as the process.
_NAMES = {}


def _static_name(name):
    if name not in _NAMES:
        _NAMES[name] = ctypes.create_string_buffer(name.encode())
    return _NAMES[name]


class FakeOp:
    """A fake operator: records launches and payload destroys; launch returns self.status."""

    def __init__(self, name="aclnnFakeOp", workspace=0):
        self.name = _static_name(name)
        self.launches, self.destroyed, self.status = [], [], 0
        self._launch = LAUNCH(self.on_launch)
        self._destroy = DESTROY(self.on_destroy)
        self.ops = Ops(ctypes.cast(self.name, ctypes.c_char_p), self._launch, self._destroy)
        self.workspace = workspace
        self.so = ctypes.CDLL(str(lib.backend.libraries["nnopbase"]))
        self.so.aclemu_executor_new.restype = ctypes.c_void_p
        self.so.aclemu_executor_new.argtypes = [ctypes.POINTER(Ops), ctypes.c_void_p,
                                                ctypes.c_uint64, ctypes.c_void_p,
                                                ctypes.c_void_p, ctypes.c_uint64,
                                                ctypes.c_uint64]
        self.so.aclemu_executor_run.restype = ctypes.c_int32
        self.so.aclemu_executor_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_void_p, ctypes.c_uint64,
                                                ctypes.c_void_p]

    def on_launch(self, payload, addrs, ws, size, stream):
        self.launches.append((payload, ws, size))
        return self.status

    def on_destroy(self, payload):
        self.destroyed.append(payload)

    def phase_one(self, payload=1234, tensors=()):
        """As an operator's phase one ends: ``tensors`` are (aclTensor, parameter name) pairs,
        every tensor it was given (None for an optional one not given)."""
        n = len(tensors)
        handles = (ctypes.c_void_p * max(n, 1))(
            *[None if t is None else int(ffi.cast("uintptr_t", t)) for t, _ in tensors])
        names = (ctypes.c_void_p * max(n, 1))(
            *[ctypes.addressof(_static_name(name)) for _, name in tensors])
        h = self.so.aclemu_executor_new(ctypes.byref(self.ops), payload, self.workspace,
                                        handles, names, n, n)
        assert h
        return ffi.cast("aclOpExecutor *", h)

    def phase_two(self, executor, ws=None, size=0):
        """As an operator's phase two does: the shared body, under the operator's name (it
        counts the call and injects its fault)."""
        ws_ptr = int(ffi.cast("uintptr_t", ws)) if ws is not None else None
        return self.so.aclemu_executor_run(ctypes.addressof(self.name),
                                           int(ffi.cast("uintptr_t", executor)), ws_ptr, size,
                                           None)


@pytest.fixture
def device_memory():
    assert lib.aclrtSetDevice(0) == 0
    allocs = []

    def alloc(n):
        p = ffi.new("void **")
        assert lib.aclrtMalloc(p, n, 0) == 0
        allocs.append(p[0])
        return p[0]
    yield alloc
    for p in allocs:
        assert lib.aclrtFree(p) == 0
    assert lib.aclrtResetDevice(0) == 0


def test_single_use_executor_is_released_by_its_run():
    op = FakeOp()
    before = live()
    ex = op.phase_one()
    assert live()["executors"] == before["executors"] + 1
    assert op.phase_two(ex) == 0
    assert len(op.launches) == 1 and op.destroyed == [1234]
    assert live() == before
    expect(op.phase_two(ex), 161002, "aclnnFakeOp", "not a live executor", "already ran",
           "aclSetAclOpExecutorRepeatable")
    assert len(op.launches) == 1
    # CANN answers a pointer that is no executor with ACLNN_ERR_INNER (acl_op_api.cpp)
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor", "not a live",
           "already ran")
    expect(lib.aclSetAclOpExecutorRepeatable(ex), 561000, "aclSetAclOpExecutorRepeatable")


def test_repeatable_executor_runs_until_destroyed():
    op = FakeOp()
    before = live()
    ex = op.phase_one()
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    for _ in range(5):
        assert op.phase_two(ex) == 0
    assert len(op.launches) == 5 and op.destroyed == []
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    assert op.destroyed == [1234] and live() == before
    expect(op.phase_two(ex), 161002, "aclnnFakeOp", "destroyed with aclDestroyAclOpExecutor")
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor")


# Ownership after a failed phase two follows CANN's CommonOpExecutorRun (hicann/opbase
# src/nnopbase/composite_op/aclnn_engine/op_executor.cpp): a single-use executor is deleted
# after running whatever the result; any executor given a NULL workspace with a size > 0 is
# deleted. A later destroy (a double free on a device) is refused, naming what happened.

def test_failed_launch_releases_a_single_use_executor():
    op = FakeOp()
    before = live()
    ex = op.phase_one()
    op.status = 361001
    assert op.phase_two(ex) == 361001
    assert len(op.launches) == 1 and op.destroyed == [1234] and live() == before
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor",
           "released by the library when its phase two failed", "must not destroy it")
    expect(op.phase_two(ex), 161002, "aclnnFakeOp", "phase two failed")


def test_failed_launch_keeps_a_repeatable_executor():
    op = FakeOp()
    before = live()
    ex = op.phase_one()
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    op.status = 361001
    assert op.phase_two(ex) == 361001
    assert op.destroyed == []
    op.status = 0
    assert op.phase_two(ex) == 0 and op.phase_two(ex) == 0  # still runnable
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    assert op.destroyed == [1234] and live() == before


def test_workspace_checks(device_memory):
    op = FakeOp(workspace=256)
    ws = device_memory(256)
    host = np.zeros(256, np.uint8)
    # Checked on a repeatable executor, which a failed run does not release.
    ex = op.phase_one()
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    expect(op.phase_two(ex, ws, 255), 161002, "aclnnFakeOp", "workspaceSize (255)", "256 bytes")
    expect(op.phase_two(ex, ffi.from_buffer(host), 256), 161002, "aclnnFakeOp",
           "not inside one live device allocation")
    # past the end of what the runtime allocated for 256 bytes
    expect(op.phase_two(ex, ws, allocated_bytes(256) + 1), 161002, "aclnnFakeOp", "not inside")
    assert op.launches == [] and op.destroyed == []
    assert op.phase_two(ex, ws, 256) == 0
    assert op.launches[0][2] == 256 and op.destroyed == []
    assert lib.aclDestroyAclOpExecutor(ex) == 0 and op.destroyed == [1234]
    # A single-use executor is released by a failed check as by a failed launch.
    single = op.phase_one(payload=1)
    expect(op.phase_two(single, ws, 255), 161002, "aclnnFakeOp", "workspaceSize (255)")
    assert op.destroyed == [1234, 1]
    expect(lib.aclDestroyAclOpExecutor(single), 561000, "aclDestroyAclOpExecutor",
           "phase two failed")
    # a zero workspace needs no pointer
    op0 = FakeOp()
    assert op0.phase_two(op0.phase_one(), None, 0) == 0


@pytest.mark.parametrize("repeatable", [False, True])
def test_null_workspace_with_a_size_releases_any_executor(repeatable):
    op = FakeOp(workspace=64)
    before = live()
    ex = op.phase_one()
    if repeatable:
        assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    expect(op.phase_two(ex, None, 64), 161001, "aclnnFakeOp", "workspace is NULL",
           "do not destroy it")
    assert op.launches == [] and op.destroyed == [1234] and live() == before
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor",
           "NULL workspace with a non-zero size")
    expect(lib.aclSetAclOpExecutorRepeatable(ex), 561000, "aclSetAclOpExecutorRepeatable")


# The tensors an executor keeps. CANN's executor keeps pointers to the caller's aclTensors (their
# aclStorage: hicann/opbase src/nnopbase/common/utils/op_cache.cpp AddParamToBuf) and reads them
# at every run (composite_op/aclnn_engine/op_executor.cpp RepeatRunWithCache, UpdateStorageAddr),
# so running an executor after one was destroyed reads freed memory on a device: refused.

def kept_tensors():
    """What a fake phase one is given: self and out (other, optional, not given)."""
    return {"self": tensor([4, 8]), "other": None, "out": tensor([4, 8])}


def destroy_tensors(ts):
    for t in ts.values():
        if t is not None:
            assert lib.aclDestroyTensor(t) == 0


@pytest.mark.parametrize("victim", ["self", "out"])
def test_repeatable_executor_refuses_to_run_after_one_of_its_tensors_is_destroyed(victim):
    op = FakeOp()
    before = live()
    ts = kept_tensors()
    ex = op.phase_one(tensors=list((t, name) for name, t in ts.items()))
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    assert op.phase_two(ex) == 0
    assert lib.aclDestroyTensor(ts.pop(victim)) == 0
    for _ in range(2):  # every run is refused; the executor is kept, as after any failed run
        expect(op.phase_two(ex), 161002, "aclnnFakeOp", f"{victim} (aclTensor",
               "destroyed after this executor's phase one", "use after free")
    assert len(op.launches) == 1 and op.destroyed == []
    assert lib.aclDestroyAclOpExecutor(ex) == 0 and op.destroyed == [1234]
    destroy_tensors(ts)
    assert live() == before


def test_a_tensor_recreated_at_the_same_address_is_not_the_one_phase_one_was_given():
    """The registry's generation tells them apart: the address alone would pass."""
    if os.environ.get("ACL_PY_SANITIZER"):
        pytest.skip("AddressSanitizer holds freed memory back, so no address comes back")
    op = FakeOp()
    before = live()
    ts = kept_tensors()
    ex = op.phase_one(tensors=list((t, name) for name, t in ts.items()))
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    address = int(ffi.cast("uintptr_t", ts["self"]))
    assert lib.aclDestroyTensor(ts.pop("self")) == 0
    # Churn tensors until the allocator hands the address out again (the quarantine of
    # destroyed objects holds it for the next 256 destroys first).
    for _ in range(5000):
        t = tensor([4, 8])
        if int(ffi.cast("uintptr_t", t)) == address:
            ts["self"] = t
            break
        assert lib.aclDestroyTensor(t) == 0
    assert "self" in ts, "the allocator never gave the address back"
    expect(op.phase_two(ex), 161002, "aclnnFakeOp", "self (aclTensor",
           "destroyed after this executor's phase one",
           "the aclTensor now at that address is another one")
    assert op.launches == []
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    destroy_tensors(ts)
    assert live() == before


def test_single_use_executor_refuses_a_tensor_destroyed_before_its_run():
    """CANN's single-use executor reads them at its one run too; the refused run releases it,
    as any failed single-use run."""
    op = FakeOp()
    before = live()
    ts = kept_tensors()
    ex = op.phase_one(tensors=list((t, name) for name, t in ts.items()))
    assert lib.aclDestroyTensor(ts.pop("out")) == 0
    expect(op.phase_two(ex), 161002, "aclnnFakeOp", "out (aclTensor")
    assert op.launches == [] and op.destroyed == [1234]
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor", "phase two failed")
    assert lib.aclDestroyTensor(ts["self"]) == 0
    assert live() == before


@pytest.mark.parametrize("repeatable", [False, True])
def test_tensors_may_be_destroyed_once_the_executor_is_done_with_them(repeatable):
    """After a single-use executor's run (the library released it) or a repeatable one's
    destroy, nothing reads them any more."""
    op = FakeOp()
    before = live()
    ts = kept_tensors()
    ex = op.phase_one(tensors=list((t, name) for name, t in ts.items()))
    if repeatable:
        assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    assert op.phase_two(ex) == 0
    if repeatable:
        assert op.phase_two(ex) == 0 and lib.aclDestroyAclOpExecutor(ex) == 0
    destroy_tensors(ts)
    assert op.destroyed == [1234] and live() == before


def test_injected_phase_two_fault_is_a_failed_run():
    op = FakeOp(name="aclnnFakeFaultOp")
    single, rep = op.phase_one(1), op.phase_one(2)
    assert lib.aclSetAclOpExecutorRepeatable(rep) == 0
    for ex in (single, rep):
        assert lib.aclemuSetFaults(b"aclnnFakeFaultOp:1") == 0
        expect(op.phase_two(ex), 361001, "aclnnFakeFaultOp", "injected fault (call 1)")
    lib.aclemuSetFaults(ffi.NULL)
    assert op.launches == [] and op.destroyed == [1]  # the single-use one is released
    expect(lib.aclDestroyAclOpExecutor(single), 561000, "aclDestroyAclOpExecutor")
    assert op.phase_two(rep) == 0 and lib.aclDestroyAclOpExecutor(rep) == 0
    assert op.destroyed == [1, 2]


def test_executor_null_and_garbage():
    op = FakeOp()
    expect(op.phase_two(ffi.NULL), 161001, "aclnnFakeOp", "executor is NULL")
    expect(op.phase_two(ffi.cast("aclOpExecutor *", 0x4440)), 161002, "aclnnFakeOp",
           "never created")
    # CANN: ACLNN_ERR_INNER_NULLPTR for NULL, ACLNN_ERR_INNER for what is no executor
    expect(lib.aclDestroyAclOpExecutor(ffi.NULL), 561103, "aclDestroyAclOpExecutor", "NULL")
    expect(lib.aclSetAclOpExecutorRepeatable(ffi.NULL), 561103, "aclSetAclOpExecutorRepeatable")
    expect(lib.aclDestroyAclOpExecutor(ffi.cast("aclOpExecutor *", 0x4440)), 561000,
           "aclDestroyAclOpExecutor")


def test_executor_injected_faults_keep_it():
    op = FakeOp()
    before = live()
    ex = op.phase_one()
    assert lib.aclemuSetFaults(b"aclSetAclOpExecutorRepeatable:1,aclDestroyAclOpExecutor:1") == 0
    expect(lib.aclSetAclOpExecutorRepeatable(ex), 561000, "aclSetAclOpExecutorRepeatable",
           "injected")
    expect(lib.aclDestroyAclOpExecutor(ex), 561000, "aclDestroyAclOpExecutor", "injected")
    assert op.destroyed == [] and live()["executors"] == before["executors"] + 1
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    assert op.destroyed == [1234] and live() == before


def test_released_addresses_are_quarantined():
    op = FakeOp()
    released = set()
    for _ in range(20):
        ex = op.phase_one()
        released.add(int(ffi.cast("uintptr_t", ex)))
        assert lib.aclDestroyAclOpExecutor(ex) == 0
    fresh = [op.phase_one() for _ in range(20)]
    assert not released & {int(ffi.cast("uintptr_t", e)) for e in fresh}
    for e in fresh:
        assert lib.aclDestroyAclOpExecutor(e) == 0
    # tensors too: a double destroy keeps reading as "not live", not as a newer tensor
    t = tensor([3])
    assert lib.aclDestroyTensor(t) == 0
    newer = [tensor([3]) for _ in range(20)]
    expect(lib.aclDestroyTensor(t), 161002, "aclDestroyTensor")
    for n in newer:
        assert lib.aclDestroyTensor(n) == 0


def test_single_use_executor_runs_once_across_threads():
    op = FakeOp()
    for _ in range(10):
        ex = op.phase_one()
        results = []
        barrier = threading.Barrier(4)

        def run():
            barrier.wait()
            results.append(op.phase_two(ex))
        ts = [threading.Thread(target=run) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(results) == [0, 161002, 161002, 161002]
    assert len(op.launches) == 10 and len(op.destroyed) == 10


def test_layer_norm_backward_phase_two_names_itself():
    """The operator library's phase two goes through the shared executor checks."""
    rc = lib.aclnnLayerNormBackward(ffi.NULL, 0, ffi.cast("aclOpExecutor *", 0x4440), ffi.NULL)
    expect(rc, 161002, "aclnnLayerNormBackward", "not a live executor")
