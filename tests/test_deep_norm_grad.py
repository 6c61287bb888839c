"""acl_py.deep_norm_grad / acl_py.DeepNormGrad (aclnnDeepNormGrad through the declarative
operator layer) against the float64 reference for every dtype, rank split and alpha, its
argument errors (typed, naming the argument and, from phase one, the status code; nothing
leaked: the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import DEEP_NORM_GRAD

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, gdims, dt=F32, alpha=0.3, seed=0):
    """dy, x, gx, gamma, mean, rstd; mean and rstd DeepNorm's of x and gx, float32."""
    rng = np.random.default_rng(seed)
    gs = shape[len(shape) - gdims:]
    dy = rng.standard_normal(shape).astype(dt)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    gx = rng.standard_normal(shape).astype(dt)
    g = (rng.standard_normal(gs) * 0.5 + 1).astype(dt)
    mean, rstd, _ = reference.deep_norm(x, gx, np.zeros(gs), g, alpha)
    return dy, x, gx, g, mean.astype(F32), rstd.astype(F32)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def inference_part():
    return acl_py.soc_name().startswith("Ascend310P")


def check(results, *vals, alpha=0.3):
    exp = reference.deep_norm_grad(*vals, alpha)
    mag = reference.deep_norm_grad_error_scale(*vals, alpha)
    dt, g = vals[0].dtype, vals[3]
    for got, e, m, odt, name in zip(results, exp, mag, (dt, dt, F32, F32),
                                    ("dx", "dgx", "dbeta", "dgamma")):
        if got is None:   # not written by the part: Atlas inference parts, rows under 32 bytes
            assert inference_part() and name in ("dx", "dgx") and g.size * dt.itemsize < 32
            continue
        got = host(got)
        assert got.dtype == odt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, dt, name)


@only_where(runs_here(DEEP_NORM_GRAD))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dt):
    vals = make((3, 5, 67), 1, dt, alpha=0.87)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.deep_norm_grad(*args, 0.87)
    assert len(res) == 4
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, *vals, alpha=0.87)


@only_where(runs_here(DEEP_NORM_GRAD))
@pytest.mark.parametrize("shape,gdims,alpha", [((2, 7), 1, 0.3), ((2, 3, 4, 5), 2, 1.5),
                                               ((2, 3, 4, 5), 3, -0.25),
                                               ((1, 2, 1, 2, 1, 2, 1, 8), 3, 3.0),
                                               ((1100, 3), 1, 0.5), ((16, 5000), 1, 0.5)])
def test_ranks_splits_and_alpha(shape, gdims, alpha):
    vals = make(shape, gdims, alpha=alpha)
    res = acl_py.deep_norm_grad(*vals, alpha)
    check(res, *vals, alpha=alpha)
    row_bytes = 4 * int(np.prod(shape[len(shape) - gdims:]))
    assert (res[0] is None) == (res[1] is None) == (inference_part() and row_bytes < 32)


@only_where(runs_here(DEEP_NORM_GRAD))
def test_default_alpha_is_the_definitions():
    """alpha 0.3: op_host/deep_norm_grad_def.cpp's attribute default."""
    vals = make((4, 32), 1, seed=3)
    a, b = acl_py.deep_norm_grad(*vals), acl_py.deep_norm_grad(*vals, 0.3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    check(a, *vals)


@only_where(runs_here(DEEP_NORM_GRAD))
def test_out_given_and_strided_views():
    vals = make((4, 6, 32), 1, F16)
    out = (np.empty((4, 6, 32), F16), np.empty((4, 6, 32), F16), np.empty(32, F32),
           np.full(32, 7, F32))
    res = acl_py.deep_norm_grad(*vals, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, *vals)
    dy, x, gx, g, mean, rstd = vals
    big = [acl_py.DeviceTensor.from_numpy(np.repeat(a, 2, axis=2)) for a in (dy, x, gx)]
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (g, mean, rstd)]
    res = acl_py.deep_norm_grad(big[0][:, :, ::2], big[1][:, :, 1::2], big[2][:, :, ::2],
                                *dev)
    check(res, *vals)


@only_where(runs_here(DEEP_NORM_GRAD))
def test_every_output_empty():
    """dy empty in gamma's dims: every output is empty, nothing runs."""
    z = np.zeros((3, 0), F32)
    res = acl_py.deep_norm_grad(z, z, z, np.zeros(0, F32), np.zeros((3, 1), F32),
                                np.ones((3, 1), F32))
    assert [r.shape for r in res] == [(3, 0), (3, 0), (0,), (0,)]


ERRORS = [
    (dict(dy=[[1.0, 2.0]]), AclTypeError, "dy"),
    (dict(dy=np.ones((2, 4), np.float64)), AclTypeError, "dy"),
    (dict(x=np.ones((2, 4), F16)), AclTypeError, "x"),
    (dict(x=np.ones((2, 5), F32)), AclArgumentError, "x"),
    (dict(gx=np.ones((3, 4), F32)), AclArgumentError, "gx"),
    (dict(gx=None), AclTypeError, "gx"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((2, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(mean=np.ones((2,), F32)), AclArgumentError, "mean"),
    (dict(mean=np.ones((2, 1), F16)), AclTypeError, "mean"),
    (dict(rstd=np.ones((1, 1), F32)), AclArgumentError, "rstd"),
    (dict(alpha="big"), AclTypeError, "alpha"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None, None)), AclArgumentError, "out[0] (dx)"),
    (dict(out=(None, np.empty((2, 4), F16), None, None)), AclTypeError, "out[1] (dgx)"),
    (dict(out=(None, None, np.empty(5, F32), None)), AclArgumentError, "out[2] (dbeta)"),
    (dict(out=(None, None, None, np.empty(4, F16))), AclTypeError, "out[3] (dgamma)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    dy, x, gx, g, mean, rstd = make((2, 4), 1)
    case = dict(dict(dy=dy, x=x, gx=gx, gamma=g, mean=mean, rstd=rstd), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.deep_norm_grad(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnDeepNormGradGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(DEEP_NORM_GRAD))
@pytest.mark.parametrize("what", ["gx", "gamma", "mean", "dgamma"])
def test_device_refusal_names_the_argument_and_carries_the_code(what):
    """Phase one's 561002 (the tiling's shape rules) on a DeviceTensor call: the Python checks
    then name the argument."""
    dy, x, gx, g, mean, rstd = make((2, 4), 1)
    D = acl_py.DeviceTensor.from_numpy
    GX = D(gx[:, :3].copy()) if what == "gx" else D(gx)
    G = D(g[:3].copy()) if what == "gamma" else D(g)
    M = D(np.zeros((1, 1), F32)) if what == "mean" else D(mean)
    out = (None, None, None, acl_py.DeviceTensor.empty((3,), F32)) if what == "dgamma" else None
    with pytest.raises(AclArgumentError) as ei:
        acl_py.deep_norm_grad(D(dy), D(x), GX, G, M, D(rstd), out=out)
    assert ei.value.argument == {"dgamma": "out[3] (dgamma)"}.get(what, what)
    assert ei.value.code == 561002 and ei.value.call == "aclnnDeepNormGradGetWorkspaceSize"


@only_where(runs_here(DEEP_NORM_GRAD))
@pytest.mark.parametrize("shape,gshape,words", [((1,) * 9 + (2,), (2,), "dy rank 10"),
                                                ((0, 4), (4,), "has a zero dim")])
def test_operator_rules_surface_as_its_typed_error(shape, gshape, words):
    t = np.ones(shape, F32)
    stat = shape[:len(shape) - len(gshape)] + (1,) * len(gshape)
    with pytest.raises(AclError) as ei:
        acl_py.deep_norm_grad(t, t, t, np.ones(gshape, F32), np.zeros(stat, F32),
                              np.ones(stat, F32))
    assert ei.value.code == 561002 and ei.value.call == "aclnnDeepNormGradGetWorkspaceSize"
    assert words in ei.value.message


@only_where(runs_here(DEEP_NORM_GRAD))
def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((8, 96), 1, F16, alpha=0.6)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.DeepNormGrad(*devs, 0.6) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            dyk = (vals[0].astype(F32) * (k + 1)).astype(F16)
            devs[0].buffer.copy_from_host(dyk)
            assert plan.run(s) == (plan.dx, plan.dgx, plan.dbeta, plan.dgamma)
            s.synchronize()
            check(plan.outputs, dyk, *vals[1:], alpha=0.6)
    assert plan.closed


@only_where(runs_here(DEEP_NORM_GRAD))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in DEEP_NORM_GRAD.params] == [
        "dy", "x", "gx", "gamma", "mean", "rstd", "alpha", "dxOut", "dgxOut", "dbetaOut",
        "dgammaOut"]
    assert [a.py for a in DEEP_NORM_GRAD.inputs] == [
        "dy", "x", "gx", "gamma", "mean", "rstd", "alpha"]
    assert [o.py for o in DEEP_NORM_GRAD.outputs] == ["dx", "dgx", "dbeta", "dgamma"]
    assert DEEP_NORM_GRAD.smoke_cases
    for case in DEEP_NORM_GRAD.smoke_cases:
        ratios = DEEP_NORM_GRAD.run_smoke_case(case)
        assert len(ratios) == 4 and all(r is None or r <= 1 for r in ratios), (case[0], ratios)


def test_parts_with_a_kernel():
    """The vendor's definition configures no kernel for the Atlas training series nor Atlas
    200I/500 A2: acl-py smoke leaves the operator out there."""
    assert not DEEP_NORM_GRAD.runs_on("Ascend910A") and not DEEP_NORM_GRAD.runs_on("Ascend910B")
    assert not DEEP_NORM_GRAD.runs_on("Ascend310B1")
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend310P3", "Ascend950PR_9599", None):
        assert DEEP_NORM_GRAD.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); gx = np.cos(x)
dy = np.sin(3 * x); g = np.linspace(0.5, 1.5, 16, dtype=np.float32)
mean, rstd, _ = reference.deep_norm(x, gx, np.zeros(16), g, 0.5)
mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
res = acl_py.deep_norm_grad(dy, x, gx, g, mean, rstd, 0.5)
e = reference.deep_norm_grad(dy, x, gx, g, mean, rstd, 0.5)
for r, v in zip(res, e):
    assert np.allclose(r, v, rtol=1e-5, atol=1e-5)
""")
