"""Argument objects may be destroyed right after phase one: every emulator operator taking an
aclIntArray, aclBoolArray or aclScalar, through the raw binding, the way a C program would.

The vendor's phase one consumes their values: the checks and shapes read them, the tiling is
computed and cached for the launch (hicann/opbase src/nnopbase/composite_op/aclnn_engine/
op_executor.cpp CreatAiCoreKernelLauncher: GetWorkspace, SaveLaunchCtx; op_kernel.h Launch:
GetTilingResCache), and what a kernel needs as data is copied into tensors the executor owns
(op_executor.cpp ConvertToTensor -> common/utils/common_types.cpp aclTensor(const aclScalar *,
...) and aclTensor(const aclIntArray *, ...)); aclnnAdd passes alpha to Axpy by value
(hicann/ops-math math/add/op_api/aclnn_add.cpp, alpha->ToFloat()). So a caller may destroy
them between the phases (docs/emulator.md, "Operator objects", says what the vendor still
keeps). Each test destroys them after phase one, runs phase two (twice for a repeatable
executor) and checks the numbers against a float64 reference: nothing is refused and
nothing reads the destroyed objects (a destroyed array's values are freed, a destroyed
scalar's bytes are overwritten with 0xFF, so a late read crashes or gives wrong numbers).
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

import test_emulator_layer_norm as ln
import test_emulator_op as lnb
from test_emulator_add import (arena, get, out_tensor, put, rand,  # noqa: F401  (fixture)
                               typed_reference)
from test_emulator_op import DevView, last_msg, no_leaks, stream  # noqa: F401  (fixtures)


pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw calls against the emulator's rules")


def int_array(values):
    a = lib.aclCreateIntArray(ffi.new("int64_t[]", list(values)), len(values))
    assert a != ffi.NULL
    return a


def bool_array(values):
    a = lib.aclCreateBoolArray(ffi.new("bool[]", list(values)), len(values))
    assert a != ffi.NULL
    return a


def new_scalar(value, code, ctype):
    s = lib.aclCreateScalar(ffi.new(ctype + " *", value), code)
    assert s != ffi.NULL
    return s


def run_phase_two(arena, p2, ex, ws, runs, reset=()):
    """Phase two `runs` times on one executor (repeatable when runs > 1), synchronized; the
    views in `reset` get their initial contents back before each run after the first, so
    every run's results are checked on their own."""
    if runs > 1:
        assert lib.aclSetAclOpExecutorRepeatable(ex) == 0, last_msg()
    wsp = arena.malloc(ws) if ws else ffi.NULL
    results = []
    for k in range(runs):
        for v in reset if k else ():
            arena.h2d(v.ptr, v.initial)
        assert p2(wsp, ws, ex, arena.stream) == 0, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        results.append([None if v is None else v.read() for v in reset])
    if runs > 1:
        assert lib.aclDestroyAclOpExecutor(ex) == 0
    return results


# ---- aclnnLayerNormBackward: normalizedShape and outputMask ---------------------------------

@pytest.mark.parametrize("runs", [1, 2], ids=["single-use", "repeatable"])
@pytest.mark.parametrize("mask,weight", [((True, True, True), True), ((True, False, True), True),
                                         ((False, True, False), False)])
def test_layer_norm_backward(arena, mask, weight, runs):
    rng = np.random.default_rng(7)
    dy, x, mu, rs, w = lnb.rand_inputs(rng, (6, 5, 24), 2, w_dt=np.float32 if weight else None)
    views = [None if v is None else DevView(arena, v) for v in (dy, x, mu, rs, w)]
    outs = [DevView(arena, shape=s, dtype=np.float32, sentinel=-77.0)
            for s in ((6, 5, 24), (5, 24), (5, 24))]
    ns, om = int_array([5, 24]), bool_array(mask)
    h = lambda v: ffi.NULL if v is None else v.handle  # noqa: E731
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert lnb.P1(*map(h, views[:2]), ns, *map(h, views[2:4]), h(views[4]), ffi.NULL, om,
                  *(o.handle if m else ffi.NULL for o, m in zip(outs, mask)), ws, ex) == 0, \
        last_msg()
    assert lib.aclDestroyIntArray(ns) == 0 and lib.aclDestroyBoolArray(om) == 0
    refs = lnb.reference(dy, x, 2, mu, rs, w)
    for got in run_phase_two(arena, lnb.P2, ex[0], ws[0], runs, outs):
        for g, o, r, m, name in zip(got, outs, refs, mask, ("dx", "dw", "db")):
            if m:
                lnb.assert_close(g, r, name)
            else:  # the mask phase one was given said: not this one
                assert (g == -77.0).all(), name


# ---- aclnnLayerNorm(WithImplMode): normalizedShape ------------------------------------------

@pytest.mark.parametrize("runs", [1, 2], ids=["single-use", "repeatable"])
@pytest.mark.parametrize("affine", [True, False], ids=["weight-bias", "no-weight-bias"])
@pytest.mark.parametrize("mode", [None, 0], ids=["LayerNorm", "WithImplMode"])
def test_layer_norm(arena, affine, mode, runs):
    rng = np.random.default_rng(8)
    x = ln.rand(rng, (7, 3, 40), np.float32)
    w = (rng.standard_normal((3, 40)) + 1).astype(np.float32) if affine else None
    b = rng.standard_normal((3, 40)).astype(np.float32) if affine else None
    vx, vw, vb = (None if v is None else DevView(arena, v) for v in (x, w, b))
    outs = [DevView(arena, shape=s, dtype=np.float32, sentinel=-77.0)
            for s in ((7, 3, 40), (7, 1, 1), (7, 1, 1))]
    ns = int_array([3, 40])
    h = lambda v: ffi.NULL if v is None else v.handle  # noqa: E731
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    args = (vx.handle, ns, h(vw), h(vb), 1e-5, *(o.handle for o in outs))
    rc = ln.P1(*args, ws, ex) if mode is None else ln.P1_MODE(*args, mode, ws, ex)
    assert rc == 0, last_msg()
    assert lib.aclDestroyIntArray(ns) == 0
    p2 = ln.P2 if mode is None else ln.P2_MODE
    for got in run_phase_two(arena, p2, ex[0], ws[0], runs, outs):
        ln.check(got, x, 2, w, b)


# ---- aclnnAdd, aclnnAdds, aclnnInplaceAdd, aclnnInplaceAdds: alpha (and Adds' other) -------

ALPHAS = [  # (alpha value, its acl dtype and C type, operand dtype): each path of aclnn_add.cpp
    (1.0, 0, "float", np.float32),     # alpha == 1: a plain Add
    (1.5, 0, "float", np.float32),     # Axpy, alpha passed by value
    (3, 9, "int64_t", np.int64),       # Mul by alpha made a tensor (ConvertToTensor), then Add
    (0.25, 11, "double", np.float64),  # the same in DOUBLE
]


def step(a, b, alpha, dt):
    """One Add's result as the device rounds it (typed_reference) in dtype dt."""
    return typed_reference(a, b, alpha, np.dtype(dt), np.dtype(dt))


@pytest.mark.parametrize("runs", [1, 2], ids=["single-use", "repeatable"])
@pytest.mark.parametrize("alpha,code,ctype,dt", ALPHAS, ids=[f"{a[3].__name__}-alpha{a[0]}"
                                                             for a in ALPHAS])
def test_add(arena, alpha, code, ctype, dt, runs):
    a, b = rand((4, 6), dt), rand((6,), dt)
    A, B, Y = put(arena, a), put(arena, b), out_tensor(arena, (4, 6), dt)
    s = new_scalar(alpha, code, ctype)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert lib.aclnnAddGetWorkspaceSize(A.handle, B.handle, s, Y.handle, ws, ex) == 0, \
        last_msg()
    assert lib.aclDestroyScalar(s) == 0
    if runs > 1:
        assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    expected = step(a, b, alpha, dt)
    wsp = arena.malloc(ws[0]) if ws[0] else ffi.NULL  # the device's size (workspace_size_add_ln)
    for _ in range(runs):
        arena.h2d(Y.ptr, np.zeros_like(Y.storage))
        assert lib.aclnnAdd(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        got = get(arena, Y)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_allclose(got, a.astype(np.float64) + alpha * b.astype(np.float64),
                                   rtol=2e-6, atol=2e-6)
    if runs > 1:
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


@pytest.mark.parametrize("runs", [1, 2], ids=["single-use", "repeatable"])
@pytest.mark.parametrize("alpha,code,ctype,dt", ALPHAS, ids=[f"{a[3].__name__}-alpha{a[0]}"
                                                             for a in ALPHAS])
def test_adds(arena, alpha, code, ctype, dt, runs):
    a = rand((3, 5), dt)
    A, Y = put(arena, a), out_tensor(arena, (3, 5), dt)
    other = new_scalar(-0.75 if code != 9 else -2, code, ctype)
    s = new_scalar(alpha, code, ctype)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert lib.aclnnAddsGetWorkspaceSize(A.handle, other, s, Y.handle, ws, ex) == 0, last_msg()
    assert lib.aclDestroyScalar(other) == 0 and lib.aclDestroyScalar(s) == 0
    if runs > 1:
        assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    b = np.array(-0.75 if code != 9 else -2, dt)
    wsp = arena.malloc(ws[0]) if ws[0] else ffi.NULL
    for _ in range(runs):
        arena.h2d(Y.ptr, np.zeros_like(Y.storage))
        assert lib.aclnnAdds(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        np.testing.assert_array_equal(get(arena, Y), step(a, b, alpha, dt))
    if runs > 1:
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


@pytest.mark.parametrize("scalar_other", [False, True], ids=["InplaceAdd", "InplaceAdds"])
@pytest.mark.parametrize("alpha,code,ctype,dt", ALPHAS, ids=[f"{a[3].__name__}-alpha{a[0]}"
                                                             for a in ALPHAS])
def test_inplace_repeatable_accumulates(arena, alpha, code, ctype, dt, scalar_other):
    """selfRef += alpha * other, run three times by one repeatable executor whose alpha (and
    scalar other) were destroyed after phase one: each run adds once more."""
    a = rand((2, 7), dt)
    A = put(arena, a)
    s = new_scalar(alpha, code, ctype)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    if scalar_other:
        value = 0.5 if code != 9 else 5
        other, b = new_scalar(value, code, ctype), np.array(value, dt)
        rc = lib.aclnnInplaceAddsGetWorkspaceSize(A.handle, other, s, ws, ex)
        p2 = lib.aclnnInplaceAdds
    else:
        b = rand((7,), dt)
        B = put(arena, b)
        other = None
        rc = lib.aclnnInplaceAddGetWorkspaceSize(A.handle, B.handle, s, ws, ex)
        p2 = lib.aclnnInplaceAdd
    assert rc == 0, last_msg()
    assert lib.aclDestroyScalar(s) == 0
    assert other is None or lib.aclDestroyScalar(other) == 0
    assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    expected = a
    wsp = arena.malloc(ws[0]) if ws[0] else ffi.NULL
    for _ in range(3):
        assert p2(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        expected = step(expected, b, alpha, dt)
        np.testing.assert_array_equal(get(arena, A), expected)
    assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
    np.testing.assert_allclose(expected, a.astype(np.float64) + 3 * alpha * b.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


def test_a_destroyed_scalar_keeps_no_value(arena):
    """What makes the tests above able to fail: a destroyed scalar's bytes are overwritten
    (the vendor frees it), so an operator reading alpha in phase two would not see 1.5."""
    s = new_scalar(1.5, 0, "float")
    raw = ffi.buffer(ffi.cast("char *", s), 32)[:]
    assert lib.aclDestroyScalar(s) == 0
    after = ffi.buffer(ffi.cast("char *", s), 32)[:]  # quarantined memory: still mapped
    value_at = raw.find(np.float32(1.5).tobytes())
    assert value_at >= 0 and after[value_at:value_at + 4] == b"\xff" * 4
    # and a destroyed scalar is refused if given to a phase one
    A = put(arena, np.ones(3, np.float32))
    Y = out_tensor(arena, (3,), np.float32)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert lib.aclnnAddGetWorkspaceSize(A.handle, A.handle, s, Y.handle, ws, ex) == 161002
    msg = last_msg()
    assert "alpha" in msg and "not a live aclScalar" in msg, msg
