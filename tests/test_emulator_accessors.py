"""The acl_meta.h accessors, aclInitTensor, aclGet/SetRawTensorAddr and aclnnInit/aclnnFinalize
as a C++ program calls them (tests/c/meta_accessors.cpp, built against the emulator's prefix
with the documented command line): each call's success, each NULL or invalid argument's status
and message, ownership as the vendor's docs say (the shape and stride arrays released with
delete[]: under `make test-sanitize` AddressSanitizer checks the release matches the
allocation, under valgrind memcheck does; every object destroyed, the emulator's live counts
zero at the end). Rules: hicann/opbase src/nnopbase/common/api/acl_op_api.cpp, aclnn_init.cpp,
common/utils/common_types.cpp (aclTensor::InitTensor)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import acl_py
from acl_py import raw
from acl_py.raw import ffi, lib

from _emu_status import expect, ok
from test_cpp_runtime import build

pytestmark = pytest.mark.usefixtures("emulator")

EXPECTED = """\
aclnnInit(NULL): 0
aclInit(NULL): 0
aclrtSetDevice(0): 0
strided view:
  view shape: [2, 3]
  strides: [4, 1]
  storage shape: [16]
  offset 5, dtype 1, format 47, addr set, arrays non-NULL: yes
rank 0, no address:
  view shape: []
  strides: []
  storage shape: []
  offset 0, dtype 9, format 2, addr NULL, arrays non-NULL: yes
aclGetViewShape(NULL tensor): 161001 (aclGetViewShape: tensor is NULL)
aclGetViewShape(NULL viewDims): 161001 (aclGetViewShape: viewDims is NULL)
aclGetViewShape(NULL viewDimsNum): 161001 (aclGetViewShape: viewDimsNum is NULL)
aclGetStorageShape(NULL storageDims): 161001 (aclGetStorageShape: storageDims is NULL)
aclGetStorageShape(NULL storageDimsNum): 161001 (aclGetStorageShape: storageDimsNum is NULL)
aclGetViewStrides(NULL stridesValue): 161001 (aclGetViewStrides: stridesValue is NULL)
aclGetViewStrides(NULL stridesNum): 161001 (aclGetViewStrides: stridesNum is NULL)
aclGetViewOffset(NULL offset): 161001 (aclGetViewOffset: offset is NULL)
aclGetFormat(NULL format): 161001 (aclGetFormat: format is NULL)
aclGetDataType(NULL tensor): 161001 (aclGetDataType: tensor is NULL)
aclGetDataType(NULL dataType): 161001 (aclGetDataType: dataType is NULL)
aclGetRawTensorAddr(NULL addr): 161001 (aclGetRawTensorAddr: addr is NULL)
aclSetRawTensorAddr(NULL tensor): 161001 (aclSetRawTensorAddr: tensor is NULL)
aclInitTensor(NULL tensor): 161001 (aclInitTensor: tensor is NULL)
raw address is the storage base: yes
aclSetRawTensorAddr(base + 64): 0
raw address moved by 64: yes
aclSetRawTensorAddr(base + 8): 161002 (aclSetRawTensorAddr: addr 0x? is not 32-byte aligned \
(the device address of a tensor must be))
unchanged after the refusal: yes
aclSetRawTensorAddr(NULL): 0
raw address now NULL: yes
aclInitTensor(all): 0
re-initialized:
  view shape: [3, 2]
  strides: [2, 1]
  storage shape: [3, 2]
  offset 0, dtype 0, format 2, addr set, arrays non-NULL: yes
aclInitTensor(NULL dims, storage, address): 0
kept shape, storage and address:
  view shape: [2, 2]
  strides: [2, 1]
  storage shape: [3, 2]
  offset 2, dtype 3, format 0, addr set, arrays non-NULL: yes
aclInitTensor(kept rank-2 shape, 1 stride): 161002 (aclInitTensor: viewDims is NULL, so the \
tensor keeps its rank-2 shape, but stride has viewDimsNum (1) values: CANN would leave the \
tensor with strides of another rank than its shape)
aclInitTensor(negative dim): 161002 (aclInitTensor: viewDims[1] is -1 (dims must be >= 0))
aclInitTensor(view outside the storage): 161002 (aclInitTensor: the view (offset 0, largest \
element index 6) does not fit in the storage of 6 elements)
aclInitTensor(unaligned address): 161002 (aclInitTensor: tensorData 0x? is not 32-byte aligned \
(the device address of a tensor must be))
unchanged after the refusals:
  view shape: [2, 2]
  strides: [2, 1]
  storage shape: [3, 2]
  offset 2, dtype 3, format 0, addr set, arrays non-NULL: yes
sizes: int 3, float 2, bool 4, empty int 0, scalar list 3, tensor list 1
aclGetIntArraySize(NULL array): 161001 (aclGetIntArraySize: array is NULL)
aclGetFloatArraySize(NULL size): 161001 (aclGetFloatArraySize: size is NULL)
aclGetBoolArraySize(NULL array): 161001 (aclGetBoolArraySize: array is NULL)
aclGetTensorListSize(NULL tensorList): 161001 (aclGetTensorListSize: tensorList is NULL)
aclGetScalarListSize(NULL size): 161001 (aclGetScalarListSize: size is NULL)
aclGetIntArraySize(a bool array): 161002 (aclGetIntArraySize: array 0x? is not a live \
aclIntArray (never created or already destroyed))
aclGetViewShape(destroyed tensor): 161002 (aclGetViewShape: tensor 0x? is not a live aclTensor \
(never created or already destroyed))
aclGetViewOffset(destroyed tensor): 161002 (aclGetViewOffset: tensor 0x? is not a live \
aclTensor (never created or already destroyed))
aclGetFormat(destroyed tensor): 161002 (aclGetFormat: tensor 0x? is not a live aclTensor \
(never created or already destroyed))
aclSetRawTensorAddr(destroyed tensor): 161002 (aclSetRawTensorAddr: tensor 0x? is not a live \
aclTensor (never created or already destroyed))
aclInitTensor(destroyed tensor): 161002 (aclInitTensor: tensor 0x? is not a live aclTensor \
(never created or already destroyed))
live at the end: tensors 0, int arrays 0, float arrays 0, bool arrays 0, scalars 0, tensor \
lists 0, scalar lists 0, device allocations 0
aclrtResetDevice(0): 0
aclFinalize: 0
aclnnFinalize: 0
"""

INIT_TWICE = """\
aclnnInit(missing file): 0
aclnnInit again: 161002 (aclnnInit: aclnnInit was already called in this process (it may be \
called once per process; aclInit may be called besides it))
aclnnFinalize: 0
aclnnInit after aclnnFinalize: 161002 (aclnnInit: aclnnInit was already called in this \
process (it may be called once per process; aclInit may be called besides it))
aclnnFinalize again: 161002 (aclnnFinalize: aclnnFinalize was already called in this process \
(it may be called once per process, after aclnnInit))
"""

FINALIZE_FIRST = """\
aclnnFinalize before aclnnInit: 0
aclnnInit: 0
aclnnFinalize: 0
"""


def _env():
    env = dict(os.environ)
    for k in ("ACL_EMU_FAIL", "ACL_EMU_DEVICE_COUNT", "ACL_EMU_DEVICE_MEMORY"):
        env.pop(k, None)
    return env


def _run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env())
    return r, re.sub(r"0x[0-9a-f]+", "0x?", r.stdout)


@pytest.fixture(scope="module")
def program():
    return build("meta_accessors")


@pytest.mark.parametrize("mode,expected", [(None, EXPECTED), ("init-twice", INIT_TWICE),
                                           ("finalize-first", FINALIZE_FIRST)])
def test_cpp_program_output(program, mode, expected):
    r, out = _run([program] + ([mode] if mode else []))
    assert r.returncode == 0, r.stdout + r.stderr
    assert out == expected.replace("\\\n", "")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif(bool(os.environ.get("ACL_PY_SANITIZER")),
                    reason="valgrind cannot run an AddressSanitizer build; ASan checks it instead")
def test_cpp_program_releases_the_arrays_as_allocated(program):
    """memcheck: every delete[] of an accessor's array matches its allocation (a malloc'd
    array would be a "Mismatched free() / delete / delete []"), and nothing leaks."""
    cmd = ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
           "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
           program]
    r, out = _run(cmd)
    assert r.returncode == 0, r.stderr[-4000:]
    assert out == EXPECTED.replace("\\\n", "")


# ---- from Python, in process ------------------------------------------------------------------

def _tensor(dims=(2, 3)):
    d = ffi.new("int64_t[]", list(dims))
    t = lib.aclCreateTensor(d, len(dims), lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, d,
                            len(dims), ffi.NULL)
    assert t != ffi.NULL
    return t


@pytest.mark.parametrize("getter", ["aclGetViewShape", "aclGetStorageShape",
                                    "aclGetViewStrides"])
def test_an_injected_fault_of_a_shape_getter_is_its_allocation_failure(emulator, getter):
    t = _tensor()
    try:
        out = ffi.new("int64_t **")
        n = ffi.new("uint64_t *")
        emulator.set_faults(f"{getter}:1")
        expect(getattr(lib, getter)(t, out, n), 561103, getter, "injected fault")
        assert out[0] == ffi.NULL
        ok(getattr(lib, getter)(t, out, n), getter)
        raw.delete_array(out[0])
    finally:
        ok(lib.aclDestroyTensor(t))


@pytest.mark.parametrize("call,args", [
    ("aclGetViewOffset", ("int64_t *",)), ("aclGetFormat", ("aclFormat *",)),
    ("aclGetDataType", ("aclDataType *",)), ("aclGetRawTensorAddr", ("void **",)),
    ("aclSetRawTensorAddr", (None,)),
    ("aclInitTensor", (None, 0, 0, None, 0, 2, None, 0, None))])
def test_an_injected_fault_of_the_other_tensor_calls_is_561000(emulator, call, args):
    t = _tensor()
    try:
        emulator.set_faults(f"{call}:1")
        values = [ffi.new(a) if isinstance(a, str) else (ffi.NULL if a is None else a)
                  for a in args]
        expect(getattr(lib, call)(t, *values), 561000, call, "injected fault")
    finally:
        ok(lib.aclDestroyTensor(t))


def test_a_tensor_a_list_owns_can_be_read_and_reinitialized():
    """aclInitTensor and the accessors take a tensor a list owns (only its destroy is the
    list's); the list then destroys the re-initialized tensor."""
    t = _tensor()
    items = ffi.new("aclTensor *[]", [t])
    tl = lib.aclCreateTensorList(items, 1)
    try:
        d = ffi.new("int64_t[]", [6])
        ok(lib.aclInitTensor(t, d, 1, lib.ACL_INT8, ffi.NULL, 0, lib.ACL_FORMAT_ND, d, 1,
                             ffi.NULL), "aclInitTensor")
        dt = ffi.new("aclDataType *")
        ok(lib.aclGetDataType(t, dt), "aclGetDataType")
        assert dt[0] == lib.ACL_INT8
    finally:
        ok(lib.aclDestroyTensorList(tl))


@pytest.mark.parametrize("dims,strides", [((2, 3, 4), (12, 4, 1)), ((2, 0, 3), (0, 3, 1)),
                                          ((0, 5), (5, 1)), ((4, 1, 2), (2, 2, 1)), ((7,), (1,))])
def test_a_null_stride_reads_back_as_cann_computes_it(dims, strides):
    """ToContiguousStrides (hicann/opbase src/nnopbase/common/utils/shape_utils.cpp): each
    stride the product of the dims after it, 0 before an empty dim."""
    t = _tensor(dims)
    try:
        out = ffi.new("int64_t **")
        n = ffi.new("uint64_t *")
        ok(lib.aclGetViewStrides(t, out, n), "aclGetViewStrides")
        assert tuple(out[0][i] for i in range(n[0])) == strides
        raw.delete_array(out[0])
    finally:
        ok(lib.aclDestroyTensor(t))


class _Workspaces:
    """Device workspaces of the sizes phase ones asked (Ascend 950's AI Core Add asks for
    16 MiB and more, the other parts' TBE Add none: tests/test_emulator_workspace_size_add_ln.py),
    freed by :meth:`close`."""

    def __init__(self):
        self.held = []

    def run(self, p2, ws, ex):
        """``p2`` (aclnnAdd) of executor ``ex`` whose phase one reported ``ws`` bytes, on the
        default stream; returns its status."""
        p = ffi.new("void **")
        if ws:
            ok(lib.aclrtMalloc(p, ws, 0), "aclrtMalloc of the workspace")
            self.held.append(p[0])
        return p2(p[0], ws, ex, ffi.NULL)

    def close(self):
        for p in self.held:
            ok(lib.aclrtFree(p), "aclrtFree of a workspace")
        self.held = []


def test_a_repeatable_executor_runs_on_the_raw_address_set_after_its_last_run():
    """aclSetRawTensorAddr between two runs of a repeatable executor (the docs allow it after
    phase two): the next run reads and writes the new memory, the old stays as the first run
    left it, and aclGetRawTensorAddr reads the address back."""
    n = 8
    x1, x2 = np.arange(n, dtype=np.float32), np.full(n, 100, np.float32)
    y = np.ones(n, np.float32)
    with acl_py.DeviceTensor.from_numpy(x1) as dx1, acl_py.DeviceTensor.from_numpy(x2) as dx2, \
            acl_py.DeviceTensor.from_numpy(y) as dy, \
            acl_py.DeviceTensor.zeros(n) as out1, acl_py.DeviceTensor.zeros(n) as out2:
        dims = ffi.new("int64_t[]", [n])

        def tensor(t):
            h = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, dims,
                                    1, ffi.cast("void *", t.data_ptr))
            assert h != ffi.NULL
            return h

        tx, ty, tout = tensor(dx1), tensor(dy), tensor(out1)
        one = ffi.new("float *", 1.0)
        alpha = lib.aclCreateScalar(one, lib.ACL_FLOAT)
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        workspaces = _Workspaces()
        try:
            ok(lib.aclnnAddGetWorkspaceSize(tx, ty, alpha, tout, ws, ex), "phase one")
            ok(lib.aclSetAclOpExecutorRepeatable(ex[0]), "aclSetAclOpExecutorRepeatable")
            ok(workspaces.run(lib.aclnnAdd, ws[0], ex[0]), "aclnnAdd")
            ok(lib.aclSetRawTensorAddr(tx, ffi.cast("void *", dx2.data_ptr)), "set x")
            ok(lib.aclSetRawTensorAddr(tout, ffi.cast("void *", out2.data_ptr)), "set out")
            addr = ffi.new("void **")
            ok(lib.aclGetRawTensorAddr(tout, addr), "aclGetRawTensorAddr")
            assert int(ffi.cast("uintptr_t", addr[0])) == out2.data_ptr
            ok(workspaces.run(lib.aclnnAdd, ws[0], ex[0]), "aclnnAdd again")
            ok(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
            np.testing.assert_array_equal(out1.to_numpy(), x1 + y)
            np.testing.assert_array_equal(out2.to_numpy(), x2 + y)
        finally:
            ok(lib.aclDestroyAclOpExecutor(ex[0]))
            workspaces.close()
            for h in (tx, ty, tout):
                ok(lib.aclDestroyTensor(h))
            ok(lib.aclDestroyScalar(alpha))


class _AddCall:
    """aclnnAdd's phase one over raw handles (x + y -> out, alpha 1), the executors it makes,
    and the release of everything at the end, for the between-the-phases tests."""

    def __init__(self, n=8):
        self.n = n
        self.x = np.arange(n, dtype=np.float32)
        self.y = np.ones(n, np.float32)
        self.dx = acl_py.DeviceTensor.from_numpy(self.x)
        self.dy = acl_py.DeviceTensor.from_numpy(self.y)
        self.dout = acl_py.DeviceTensor.zeros(n)
        self.other = acl_py.DeviceTensor.zeros(n)
        dims = ffi.new("int64_t[]", [n])
        self.tx, self.ty, self.tout = (
            lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, dims, 1,
                                ffi.cast("void *", t.data_ptr))
            for t in (self.dx, self.dy, self.dout))
        self.alpha = lib.aclCreateScalar(ffi.new("float *", 1.0), lib.ACL_FLOAT)
        self.executors = []
        self.ws = {}    # each executor's phase-one workspace size
        self.workspaces = _Workspaces()

    def phase_one(self, repeatable=False):
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        ok(lib.aclnnAddGetWorkspaceSize(self.tx, self.ty, self.alpha, self.tout, ws, ex),
           "aclnnAddGetWorkspaceSize")
        if repeatable:
            ok(lib.aclSetAclOpExecutorRepeatable(ex[0]), "aclSetAclOpExecutorRepeatable")
            self.executors.append(ex[0])
        self.ws[ex[0]] = ws[0]
        return ex[0]

    def run(self, ex):
        """aclnnAdd of ``ex`` on the workspace its phase one asked; returns the status."""
        return self.workspaces.run(lib.aclnnAdd, self.ws[ex], ex)

    def set_addr(self, t, dev):
        return lib.aclSetRawTensorAddr(t, ffi.cast("void *", dev.data_ptr))

    def get_addr(self, t):
        addr = ffi.new("void **")
        st = lib.aclGetRawTensorAddr(t, addr)
        return st, int(ffi.cast("uintptr_t", addr[0]))

    def close(self):
        for e in self.executors:
            ok(lib.aclDestroyAclOpExecutor(e))
        self.workspaces.close()
        for h in (self.tx, self.ty, self.tout):
            ok(lib.aclDestroyTensor(h))
        ok(lib.aclDestroyScalar(self.alpha))
        for t in (self.dx, self.dy, self.dout, self.other):
            t.close()


@pytest.fixture
def add_call():
    c = _AddCall()
    yield c
    c.close()


def test_the_raw_address_calls_are_refused_between_phase_one_and_phase_two(add_call):
    """hicann/opbase docs/en/api/nnopbase/aclnn/aclSetRawTensorAddr.md and
    aclGetRawTensorAddr.md: "before the first-phase API ... or after the second-phase API",
    never between. Refused with 161002 naming the call and the rule, the address unchanged;
    the run then reads and writes phase one's memory, and after it both calls work again."""
    c = add_call
    ex = c.phase_one()
    for t in (c.tx, c.tout):
        expect(c.set_addr(t, c.other), 161002, "aclSetRawTensorAddr",
               "phase two has not been called yet")
        st, _ = c.get_addr(t)
        expect(st, 161002, "aclGetRawTensorAddr", "only before phase one or after phase two")
    ok(c.run(ex), "aclnnAdd")
    ok(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
    np.testing.assert_array_equal(c.dout.to_numpy(), c.x + c.y)
    np.testing.assert_array_equal(c.other.to_numpy(), np.zeros(c.n, np.float32))
    st, addr = c.get_addr(c.tout)
    ok(st, "aclGetRawTensorAddr after phase two")
    assert addr == c.dout.data_ptr
    ok(c.set_addr(c.tout, c.other), "aclSetRawTensorAddr after phase two")


def test_a_failed_phase_two_ends_the_window_too(emulator, add_call):
    """"After the second-phase API is called": a phase two that fails (an injected fault)
    was called all the same; the library releases the single-use executor and the tensors
    are free to re-point."""
    c = add_call
    ex = c.phase_one()
    emulator.set_faults("aclnnAdd:1")
    expect(c.run(ex), 361001, "aclnnAdd", "injected fault")
    emulator.set_faults(None)
    ok(c.set_addr(c.tx, c.other), "aclSetRawTensorAddr after a failed phase two")


def test_a_repeatable_executor_holds_its_tensors_until_its_first_run_only(add_call):
    """A repeatable executor's window closes at its first phase two (the existing test above
    re-points between runs); aclSetTensorAddr re-points it before that, as the docs allow."""
    c = add_call
    ex = c.phase_one(repeatable=True)
    expect(c.set_addr(c.tout, c.other), 161002, "aclSetRawTensorAddr", "aclSetTensorAddr")
    ok(lib.aclSetTensorAddr(ex, 2, c.tout, ffi.cast("void *", c.other.data_ptr)),
       "aclSetTensorAddr before the first run")
    ok(c.run(ex), "aclnnAdd")
    ok(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
    np.testing.assert_array_equal(c.other.to_numpy(), c.x + c.y)
    ok(c.set_addr(c.tout, c.dout), "aclSetRawTensorAddr after the first run")


def test_every_pending_executor_counts_and_a_destroyed_one_releases_its_tensors(add_call):
    """Two phase ones over the same tensors: the calls stay refused until both executors'
    phase twos were called, or the executor destroyed without running."""
    c = add_call
    first = c.phase_one(repeatable=True)
    second = c.phase_one()
    expect(c.set_addr(c.tx, c.other), 161002, "aclSetRawTensorAddr", "2 executors")
    ok(c.run(second), "aclnnAdd (the single-use one)")
    ok(lib.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice")
    expect(c.set_addr(c.tx, c.other), 161002, "aclSetRawTensorAddr", "1 executor ")
    c.executors.remove(first)
    ok(lib.aclDestroyAclOpExecutor(first), "aclDestroyAclOpExecutor, never run")
    ok(c.set_addr(c.tx, c.dx), "aclSetRawTensorAddr once no executor awaits phase two")


def test_a_tensor_destroyed_before_phase_two_leaves_no_count_behind():
    """The executor counts the tensor's generation: one destroyed after phase one (and
    another created, perhaps at its address) is not held by the pending executor."""
    c = _AddCall()
    try:
        ex = c.phase_one()
        ok(lib.aclDestroyTensor(c.tx))
        dims = ffi.new("int64_t[]", [c.n])
        c.tx = lib.aclCreateTensor(dims, 1, lib.ACL_FLOAT, ffi.NULL, 0, lib.ACL_FORMAT_ND, dims,
                                   1, ffi.cast("void *", c.dx.data_ptr))
        ok(c.set_addr(c.tx, c.other), "aclSetRawTensorAddr on a new tensor")
        # the executor refuses to run on a destroyed tensor (and is released: single-use)
        expect(c.run(ex), 161002, "aclnnAdd", "destroyed")
        ok(c.set_addr(c.tout, c.other), "aclSetRawTensorAddr after phase two was called")
    finally:
        c.close()
