"""aclnnAdd / aclnnAdds / aclnnInplaceAdd(s) of the emulator through the raw binding, against
NumPy: broadcasting, strided views, alpha, the vendor's dtype promotion
(hicann/opbase include/nnopbase/opdev/data_type_utils.h) and its checks, in order, with their
status codes (hicann/ops-math math/add/op_api/aclnn_add.cpp)."""
from __future__ import annotations

from collections import namedtuple

import ml_dtypes
import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import Arena, last_msg, stream  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw calls against the emulator's rules")

OK, NULLPTR, INVALID = 0, 161001, 161002
BF16 = np.dtype(ml_dtypes.bfloat16)
ACL = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 2,
       np.dtype(np.int32): 3, np.dtype(np.uint8): 4, np.dtype(np.int16): 6,
       np.dtype(np.uint16): 7, np.dtype(np.int64): 9, np.dtype(np.float64): 11,
       np.dtype(np.bool_): 12, np.dtype(np.complex64): 16, np.dtype(np.complex128): 17,
       BF16: 27}
CTYPE = {0: "float", 3: "int32_t", 9: "int64_t", 11: "double", 12: "bool", 2: "int8_t"}


@pytest.fixture
def arena(stream):  # noqa: F811
    a = Arena(stream)
    a.scalars = []
    yield a
    for s in a.scalars:
        assert lib.aclDestroyScalar(s) == 0
    a.close()


Dev = namedtuple("Dev", "handle ptr storage strides offset shape")


def put(arena, values, strided=False):
    """A device tensor holding `values` (optionally as a view with doubled strides and an
    offset)."""
    values = np.asarray(values)
    shape = values.shape
    if strided:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, 2 * acc)
            acc *= max(d, 1) * 2
        offset = 1
    else:
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= max(d, 1)
        offset = 0
    n = offset + (sum((d - 1) * s for d, s in zip(shape, strides)) + 1 if values.size else 0) + 1
    storage = np.zeros(n, values.dtype)
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape,
                                           [s * values.itemsize for s in strides])
    view[...] = values
    ptr = arena.malloc(storage.nbytes)
    arena.h2d(ptr, storage)
    h = arena.tensor(shape, values.dtype, strides, offset, n, ptr, ACL[values.dtype])
    return Dev(h, ptr, storage, strides, offset, shape)


def get(arena, t):
    out = np.empty_like(t.storage)
    arena.d2h(out, t.ptr)
    return np.lib.stride_tricks.as_strided(out[t.offset:], t.shape,
                                           [s * out.itemsize for s in t.strides]).copy()


def out_tensor(arena, shape, dtype, strided=False):
    return put(arena, np.zeros(shape, dtype), strided)


def scalar(arena, value, code):
    h = lib.aclCreateScalar(ffi.new(CTYPE[code] + " *", value), code)
    assert h != ffi.NULL
    arena.scalars.append(h)
    return h


def run_add(arena, a, b, alpha, out):
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    rc = lib.aclnnAddGetWorkspaceSize(a[0], b[0], alpha, out[0], ws, ex)
    if rc:
        return rc, last_msg()
    wsp = arena.malloc(ws[0]) if ws[0] else ffi.NULL
    assert lib.aclnnAdd(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    return 0, None


def typed_reference(a, b, alpha, calc, out_dtype):
    """self + alpha * other as the device computes it (see emulator/src/ops_math/add.c): in
    NumPy's own arithmetic of the promoted dtype."""
    a = a.astype(calc)
    b = b.astype(calc)
    if alpha == 1:
        r = a + b
    elif calc in (np.float32, np.float16, np.int32):     # Axpy, in float32
        r = (a.astype(np.float32) + b.astype(np.float32) * np.float32(alpha))
        r = np.rint(r).astype(calc) if calc == np.int32 else r.astype(calc)
    else:                                                 # Mul then Add in the promoted dtype
        r = a + b * np.array(alpha).astype(calc)
    return r.astype(out_dtype)


RNG = np.random.default_rng(17)


def rand(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -20), min(info.max, 20), shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("sa,sb", [((4, 2), (4, 2)), ((3, 1, 5), (4, 1)), ((), (2, 3)),
                                   ((2, 0, 3), (1, 3)), ((1,), (7,))])
@pytest.mark.parametrize("strided", [False, True])
def test_broadcast_float32(arena, sa, sb, strided):
    a, b = rand(sa, np.float32), rand(sb, np.float32)
    expect = np.broadcast_shapes(sa, sb)
    for alpha in (1.0, 1.2):
        A, B = put(arena, a, strided), put(arena, b, strided)
        out = out_tensor(arena, expect, np.float32, strided)
        rc, msg = run_add(arena, A, B, scalar(arena, alpha, 0), out)
        assert rc == 0, msg
        got = get(arena, out)
        np.testing.assert_array_equal(got, typed_reference(a, b, alpha, np.float32, np.float32))
        np.testing.assert_allclose(got, a.astype(np.float64) + alpha * b.astype(np.float64),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("da,db,calc", [
    (np.float16, np.float16, np.float16), (BF16, BF16, BF16), (np.float16, np.float32, np.float32),
    (BF16, np.float32, np.float32), (np.int8, np.uint8, np.int16), (np.int32, np.int64, np.int64),
    (np.int32, np.float16, np.float16), (np.float64, np.int8, np.float64),
    (np.bool_, np.int8, np.int8), (np.complex64, np.float32, np.complex64),
    (np.int16, BF16, BF16), (np.float16, BF16, np.float32),
])
@pytest.mark.parametrize("alpha", [1, 3])
def test_promotion_and_alpha(arena, da, db, calc, alpha):
    a, b = rand((5, 6), da), rand((6,), db)
    A, B = put(arena, a), put(arena, b)
    out = out_tensor(arena, (5, 6), calc)
    code = 9 if np.dtype(calc).kind in "iub" else 0
    rc, msg = run_add(arena, A, B, scalar(arena, alpha, code), out)
    assert rc == 0, msg
    got = get(arena, out)
    np.testing.assert_array_equal(got, typed_reference(a, b, alpha, np.dtype(calc), calc))
    ref = a.astype(np.complex128) + alpha * b.astype(np.complex128)
    tol = {2: 1e-3, 4: 1e-6, 8: 1e-6, 16: 1e-14}.get(np.dtype(calc).itemsize, 0)
    tol = 8e-3 if np.dtype(calc) == BF16 else tol
    np.testing.assert_allclose(got.astype(np.complex128), ref, rtol=tol, atol=tol)


def test_bool_add_is_logical_or(arena):
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    A, B = put(arena, a), put(arena, b)
    out = out_tensor(arena, (4,), np.bool_)
    assert run_add(arena, A, B, scalar(arena, True, 12), out)[0] == 0
    np.testing.assert_array_equal(get(arena, out), a | b)
    # an int8 out of the same BOOL sum holds 0/1
    out8 = out_tensor(arena, (4,), np.int8)
    assert run_add(arena, A, B, scalar(arena, 1, 9), out8)[0] == 0
    np.testing.assert_array_equal(get(arena, out8), (a | b).astype(np.int8))


def test_integer_wraps(arena):
    a = np.array([120, -128], np.int8)
    A, B = put(arena, a), put(arena, a)
    out = out_tensor(arena, (2,), np.int8)
    assert run_add(arena, A, B, scalar(arena, 1, 9), out)[0] == 0
    np.testing.assert_array_equal(get(arena, out), (a + a))


def test_vendor_example_numbers(arena):
    """hicann/ops-math math/add/examples/test_aclnn_add.cpp: float32 4x2, alpha 1.2f."""
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    b = np.array([1, 1, 1, 2, 2, 2, 3, 3], np.float32).reshape(4, 2)
    A, B = put(arena, a), put(arena, b)
    out = out_tensor(arena, (4, 2), np.float32)
    assert run_add(arena, A, B, scalar(arena, 1.2, 0), out)[0] == 0
    assert ["%f" % v for v in get(arena, out).ravel()] == [
        "1.200000", "2.200000", "3.200000", "5.400000", "6.400000", "7.400000", "9.600000",
        "10.600000"]


# ---- checks, in the vendor's order, with its codes -----------------------------------------

def test_checks(arena):
    f32 = put(arena, np.zeros((2, 3), np.float32))
    out = out_tensor(arena, (2, 3), np.float32)
    one = scalar(arena, 1.0, 0)
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    P1 = lib.aclnnAddGetWorkspaceSize

    def fails(code, words, *args):
        rc = P1(*args)
        msg = last_msg()
        assert rc == code, (rc, msg)
        assert msg.startswith("aclnnAddGetWorkspaceSize:"), msg
        for w in words:
            assert w in msg, (w, msg)

    fails(NULLPTR, ["self is NULL"], ffi.NULL, f32[0], one, out[0], ws, ex)
    fails(NULLPTR, ["other is NULL"], f32[0], ffi.NULL, one, out[0], ws, ex)
    fails(NULLPTR, ["alpha is NULL"], f32[0], f32[0], ffi.NULL, out[0], ws, ex)
    fails(NULLPTR, ["out is NULL"], f32[0], f32[0], one, ffi.NULL, ws, ex)
    u16 = put(arena, np.zeros((2, 3), np.uint16))
    fails(INVALID, ["self dtype UINT16"], u16[0], f32[0], one, out[0], ws, ex)
    fails(INVALID, ["other dtype UINT16"], f32[0], u16[0], one, out[0], ws, ex)
    # alpha: a float alpha cannot be cast to an integer promotion; BOOL takes only int/bool
    i32 = put(arena, np.zeros((2, 3), np.int32))
    out_i = out_tensor(arena, (2, 3), np.int32)
    fails(INVALID, ["alpha dtype FLOAT", "INT32"], i32[0], i32[0], one, out_i[0], ws, ex)
    b = put(arena, np.zeros((2, 3), np.bool_))
    fails(INVALID, ["alpha dtype FLOAT", "BOOL"], b[0], b[0], one, out_i[0], ws, ex)
    # promoted FLOAT cannot go to an INT32 out; complex cannot go to a real out
    fails(INVALID, ["promoted dtype FLOAT", "INT32"], f32[0], f32[0], one, out_i[0], ws, ex)
    c = put(arena, np.zeros((2, 3), np.complex64))
    fails(INVALID, ["COMPLEX64", "FLOAT"], c[0], f32[0], one, out[0], ws, ex)
    # ranks, broadcasting, out's shape
    big = put(arena, np.zeros((1,) * 9, np.float32))
    fails(INVALID, ["rank 9 > 8"], big[0], f32[0], one, out[0], ws, ex)
    f4 = put(arena, np.zeros((4,), np.float32))
    fails(INVALID, ["cannot broadcast"], f32[0], f4[0], one, out[0], ws, ex)
    out23 = out_tensor(arena, (3, 2), np.float32)
    fails(INVALID, ["out shape should be [2,3]", "[3,2]"], f32[0], f32[0], one, out23[0], ws,
          ex)
    # a destroyed scalar is not a scalar
    dead = lib.aclCreateScalar(ffi.new("float *", 1.0), 0)
    assert lib.aclDestroyScalar(dead) == 0
    fails(INVALID, ["alpha", "not a live aclScalar"], f32[0], f32[0], dead, out[0], ws, ex)


def test_inplace_and_scalar_forms(arena):
    a, b = rand((3, 4), np.float32), rand((4,), np.float32)
    A, B = put(arena, a), put(arena, b)
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    alpha = scalar(arena, 2.0, 0)
    assert lib.aclnnInplaceAddGetWorkspaceSize(A[0], B[0], alpha, ws, ex) == 0, last_msg()
    assert lib.aclnnInplaceAdd(ffi.NULL, 0, ex[0], arena.stream) == 0
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    np.testing.assert_array_equal(get(arena, A), typed_reference(a, b, 2.0, np.float32,
                                                                 np.float32))
    # other must broadcast to selfRef's own shape
    assert lib.aclnnInplaceAddGetWorkspaceSize(B[0], A[0], alpha, ws, ex) == INVALID
    assert "selfRef" in last_msg()
    # Adds: a scalar other
    out = out_tensor(arena, (4,), np.float32)
    other = scalar(arena, 0.5, 11)
    assert lib.aclnnAddsGetWorkspaceSize(B[0], other, alpha, out[0], ws, ex) == 0, last_msg()
    assert lib.aclnnAdds(ffi.NULL, 0, ex[0], arena.stream) == 0
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    np.testing.assert_array_equal(get(arena, out), b + np.float32(0.5) * np.float32(2.0))
    # InplaceAdds
    assert lib.aclnnInplaceAddsGetWorkspaceSize(B[0], other, alpha, ws, ex) == 0, last_msg()
    assert lib.aclnnInplaceAdds(ffi.NULL, 0, ex[0], arena.stream) == 0
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    np.testing.assert_array_equal(get(arena, B), b + np.float32(1.0))


def test_repeatable_executor_refuses_a_destroyed_tensor_but_not_a_destroyed_scalar(arena):
    """CANN's executor keeps the caller's aclTensors and reads them at every run (hicann/opbase
    src/nnopbase/common/utils/op_cache.cpp keeps each one's aclStorage); a scalar's value is
    read at phase one (aclnn_add.cpp: alpha->ToFloat(), ConvertToTensor), so destroying
    alpha after phase one is fine, and destroying other is not."""
    a, b = rand((3, 4), np.float32), rand((4,), np.float32)
    A, B = put(arena, a), put(arena, b)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    alpha = scalar(arena, 2.0, 0)
    assert lib.aclnnInplaceAddGetWorkspaceSize(A[0], B[0], alpha, ws, ex) == 0, last_msg()
    assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    arena.scalars.remove(alpha)
    assert lib.aclDestroyScalar(alpha) == 0
    assert lib.aclnnInplaceAdd(ffi.NULL, 0, ex[0], arena.stream) == 0, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    np.testing.assert_array_equal(get(arena, A), typed_reference(a, b, 2.0, np.float32,
                                                                 np.float32))
    arena.destroy_tensor(B[0])
    assert lib.aclnnInplaceAdd(ffi.NULL, 0, ex[0], arena.stream) == INVALID
    assert last_msg().startswith("aclnnInplaceAdd: other (aclTensor"), last_msg()
    assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


# ---- what depends on the part (ACL_EMU_SOC is read once per process) -------------------------

SOC_SCRIPT = """
    import json
    import numpy as np
    import acl_py
    from acl_py.raw import ffi, lib

    def phase_one(fn, *args):
        ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
        rc = fn(*[a.handle for a in args], ws, ex)
        if rc:
            return [rc, ffi.string(lib.aclGetRecentErrMsg()).decode()]
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
        return ["ok"]

    T = acl_py.DeviceTensor.from_numpy
    f32 = np.array([1.0, 2.0], np.float32)
    one = acl_py.Scalar(1.0)
    res = {
        "bf16": phase_one(lib.aclnnAddGetWorkspaceSize, T(f32.astype(acl_py.dtypes.bfloat16())),
                          T(f32), one, T(np.zeros(2, np.float32))),
        # int32 + 2.5 promotes to FLOAT on 950, to DOUBLE elsewhere: an INT32 out takes neither
        "adds_f32_out": phase_one(lib.aclnnAddsGetWorkspaceSize, T(np.array([1, 2], np.int32)),
                                  acl_py.Scalar(2.5), acl_py.Scalar(1),
                                  T(np.zeros(2, np.float32))),
    }
    print(json.dumps(res))
"""


@pytest.mark.parametrize("soc,bf16_ok", [("Ascend910B2", True), ("Ascend910A", False),
                                         ("Ascend950PR_9599", True)])
def test_dtype_list_follows_the_part(run_python, soc, bf16_ok):
    import json
    r = run_python(SOC_SCRIPT, env={"ACL_EMU_SOC": soc})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if bf16_ok:
        assert res["bf16"] == ["ok"]
    else:
        assert res["bf16"][0] == INVALID and "BF16" in res["bf16"][1] and soc in res["bf16"][1]
    assert res["adds_f32_out"] == ["ok"]


def test_inference_series_is_refused(run_python):
    import json
    r = run_python(SOC_SCRIPT, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["bf16"][0] == INVALID and "not supported on Ascend310P3" in res["bf16"][1]
