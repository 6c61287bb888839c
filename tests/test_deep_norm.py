"""acl_py.deep_norm / acl_py.DeepNorm (aclnnDeepNorm through the declarative operator layer)
against the float64 reference for every dtype, rank split and alpha, its argument errors
(typed, naming the argument, nothing leaked: the autouse leak check), its plan, and the CANN
path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import DEEP_NORM

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, gdims, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    gx = rng.standard_normal(shape).astype(dt)
    gs = shape[len(shape) - gdims:]
    b = (rng.standard_normal(gs) * 0.2).astype(dt)
    g = (rng.standard_normal(gs) * 0.5 + 1).astype(dt)
    return x, gx, b, g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def inference_part():
    return acl_py.soc_name().startswith("Ascend310P")


def check(results, x, gx, b, g, alpha=0.3, eps=1e-6):
    exp = reference.deep_norm(x, gx, b, g, alpha, eps)
    mag = reference.deep_norm_error_scale(x, gx, b, g, alpha, eps)
    for got, e, m, dt, name in zip(results, exp, mag, (F32, F32, x.dtype),
                                   ("mean", "rstd", "y")):
        if got is None:   # not written by the part: Atlas inference parts (mean, rstd; y of
            # rows under 32 bytes)
            assert inference_part() and (name != "y" or g.size * x.itemsize < 32), name
            continue
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x.dtype, name)


@only_where(runs_here(DEEP_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dt):
    vals = make((3, 5, 67), 1, dt)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.deep_norm(*args, 0.87, 1e-5)
    assert len(res) == 3
    assert all(r is None or isinstance(r, np.ndarray if path == "numpy" else
                                       acl_py.DeviceTensor) for r in res)
    check(res, *vals, 0.87, 1e-5)
    if not inference_part():
        assert host(res[0]).shape == (3, 5, 1)   # mean as CANN writes it: batch dims, ones


@only_where(runs_here(DEEP_NORM))
@pytest.mark.parametrize("shape,gdims,alpha", [((2, 7), 1, 0.3), ((2, 3, 4, 5), 2, 1.5),
                                               ((2, 3, 4, 5), 3, -0.25),
                                               ((1, 2, 1, 2, 1, 2, 1, 8), 3, 3.0),
                                               ((64, 5000), 1, 0.5)])
def test_ranks_splits_and_alpha(shape, gdims, alpha):
    vals = make(shape, gdims)
    res = acl_py.deep_norm(*vals, alpha)
    check(res, *vals, alpha)
    row_bytes = 4 * int(np.prod(shape[len(shape) - gdims:]))
    assert (res[2] is None) == (inference_part() and row_bytes < 32)


@only_where(runs_here(DEEP_NORM))
def test_defaults_are_the_definitions():
    """alpha 0.3 and epsilon 1e-6: op_host/deep_norm_def.cpp's attribute defaults."""
    vals = make((4, 32), 1, seed=3)
    a, b = acl_py.deep_norm(*vals), acl_py.deep_norm(*vals, 0.3, 1e-6)
    assert all(u is None and v is None or np.array_equal(u, v) for u, v in zip(a, b))
    check(a, *vals)


@only_where(runs_here(DEEP_NORM))
def test_out_given_and_strided_views():
    x, gx, b, g = make((4, 6, 32), 1, F16)
    out = (np.empty((4, 6, 1), F32), np.empty((4, 6, 1), F32), np.empty((4, 6, 32), F16))
    res = acl_py.deep_norm(x, gx, b, g, out=out)
    assert res[2] is out[2]
    assert all(r is o for r, o in zip(res[:2], out[:2])) or inference_part()
    check(res, x, gx, b, g)
    big1 = acl_py.DeviceTensor.from_numpy(np.repeat(x, 2, axis=2))
    big2 = acl_py.DeviceTensor.from_numpy(np.repeat(gx, 2, axis=2))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (b, g)]
    res = acl_py.deep_norm(big1[:, :, ::2], big2[:, :, 1::2], *dev)
    check(res, x, gx, b, g)


@only_where(runs_here(DEEP_NORM))
def test_empty_rows():
    mean, rstd, y = acl_py.deep_norm(np.zeros((0, 4), F32), np.zeros((0, 4), F32),
                                     np.zeros(4, F32), np.ones(4, F32))
    assert y.shape == (0, 4)
    assert inference_part() or mean.shape == rstd.shape == (0, 1)


ERRORS = [
    (dict(x=[[1.0, 2.0]]), AclTypeError, "x"),
    (dict(x=np.ones((2, 4), np.float64)), AclTypeError, "x"),
    (dict(gx=np.ones((2, 4), F16)), AclTypeError, "gx"),
    (dict(gx=np.ones((2, 5), F32)), AclArgumentError, "gx"),
    (dict(gx=None), AclTypeError, "gx"),
    (dict(gamma=np.ones(5, F32), beta=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((2, 4), F32), beta=np.ones((2, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(beta=np.ones(4, F16)), AclTypeError, "beta"),
    (dict(beta=np.ones((1, 4), F32)), AclArgumentError, "beta"),
    (dict(alpha="big"), AclTypeError, "alpha"),
    (dict(epsilon=None), AclTypeError, "epsilon"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 4), F32), None, None)), AclArgumentError, "out[0] (mean)"),
    (dict(out=(None, np.empty((2, 1), F16), None)), AclTypeError, "out[1] (rstd)"),
    (dict(out=(None, None, np.empty((2, 4), F16))), AclTypeError, "out[2] (y)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, gx, b, g = make((2, 4), 1)
    case = dict(dict(x=x, gx=gx, beta=b, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.deep_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnDeepNormGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(DEEP_NORM))
@pytest.mark.parametrize("what", ["gx", "gamma", "mean"])
def test_device_refusal_names_the_argument_and_carries_the_code(emulator, what):
    """Phase one's 561002 (the tiling's shape rules) on a DeviceTensor call: the Python checks
    then name the argument. On the Atlas inference series mean is not written and its out=
    entry is not handed to phase one: acl-py's own shape check refuses it, before phase one."""
    emulator.reset_call_counts()
    x, gx, b, g = make((2, 4), 1)
    D = acl_py.DeviceTensor.from_numpy
    GX = D(gx[:, :3].copy()) if what == "gx" else D(gx)
    B, G = (D(b[:3].copy()), D(g[:3].copy())) if what == "gamma" else (D(b), D(g))
    out = (acl_py.DeviceTensor.empty((2,), F32), None, None) if what == "mean" else None
    with pytest.raises(AclArgumentError) as ei:
        acl_py.deep_norm(D(x), GX, B, G, out=out)
    assert ei.value.argument == {"mean": "out[0] (mean)"}.get(what, what)
    if what == "mean" and inference_part():
        assert ei.value.code is None
        assert "aclnnDeepNormGetWorkspaceSize" not in emulator.call_counts()
        return
    assert ei.value.code == 561002 and ei.value.call == "aclnnDeepNormGetWorkspaceSize"


@only_where(runs_here(DEEP_NORM))
@pytest.mark.parametrize("shape,gshape,words", [((1,) * 9 + (2,), (2,), "x rank 10"),
                                                ((3, 0), (0,), "has a zero dim")])
def test_operator_rules_surface_as_its_typed_error(shape, gshape, words):
    x = np.ones(shape, F32)
    with pytest.raises(AclError) as ei:
        acl_py.deep_norm(x, x, np.ones(gshape, F32), np.ones(gshape, F32))
    assert ei.value.code == 561002 and ei.value.call == "aclnnDeepNormGetWorkspaceSize"
    assert words in ei.value.message


@only_where(runs_here(DEEP_NORM))
def test_plan_runs_repeatedly_on_changing_contents():
    x, gx, b, g = make((8, 96), 1, F16)
    X, GX, B, G = (acl_py.DeviceTensor.from_numpy(a) for a in (x, gx, b, g))
    with acl_py.Stream() as s, acl_py.DeepNorm(X, GX, B, G, 0.6, 1e-5) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            xk = (x.astype(F32) * (k + 1)).astype(F16)
            X.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.mean, plan.rstd, plan.y)
            s.synchronize()
            check(plan.outputs, xk, gx, b, g, 0.6, 1e-5)
    assert plan.closed


@only_where(runs_here(DEEP_NORM))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in DEEP_NORM.params] == [
        "x", "gx", "beta", "gamma", "alpha", "epsilon", "meanOut", "rstdOut", "yOut"]
    assert [a.py for a in DEEP_NORM.inputs] == ["x", "gx", "beta", "gamma", "alpha", "epsilon"]
    assert [o.py for o in DEEP_NORM.outputs] == ["mean", "rstd", "y"]
    assert DEEP_NORM.smoke_cases
    for case in DEEP_NORM.smoke_cases:
        ratios = DEEP_NORM.run_smoke_case(case)
        assert len(ratios) == 3 and all(r is None or r <= 1 for r in ratios), (case[0], ratios)


def test_parts_with_a_kernel():
    """The vendor's definition configures no kernel for the Atlas training series nor Atlas
    200I/500 A2: acl-py smoke leaves the operator out there."""
    assert not DEEP_NORM.runs_on("Ascend910A") and not DEEP_NORM.runs_on("Ascend910B")
    assert not DEEP_NORM.runs_on("Ascend310B1")
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend310P3", "Ascend950PR_9599", None):
        assert DEEP_NORM.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); gx = np.cos(x)
g = np.full(16, 0.5, np.float32); b = np.full(16, 0.25, np.float32)
mean, rstd, y = acl_py.deep_norm(x, gx, b, g, 0.5)
e = reference.deep_norm(x, gx, b, g, 0.5)
assert np.allclose(y, e[2], rtol=1e-5, atol=1e-6) and np.allclose(mean, e[0], atol=1e-6)
assert np.allclose(rstd, e[1], rtol=1e-5)
""")
