"""acl_py.add_layer_norm_grad / acl_py.AddLayerNormGrad (aclnnAddLayerNormGrad through the
declarative operator layer) against the float64 reference for each dtype, with and without
dsum, its argument errors (typed, naming the argument, nothing leaked: the autouse leak
check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_LAYER_NORM_GRAD

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, gdims, dt=F32, dsum=False, seed=0):
    """dy, x1, x2, rstd, mean, gamma, dsum; mean and rstd those of x1 + x2, float32."""
    rng = np.random.default_rng(seed)
    gs = shape[len(shape) - gdims:]
    dy = rng.standard_normal(shape).astype(dt)
    x1 = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (rng.standard_normal(gs) * 0.5 + 1).astype(dt)
    _, mean, rstd, _ = reference.add_layer_norm(x1, x2, g, np.zeros(gs))
    ds = rng.standard_normal(shape).astype(dt) if dsum else None
    return dy, x1, x2, rstd.astype(F32), mean.astype(F32), g, ds


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, *vals):
    exp = reference.add_layer_norm_grad(*vals)
    mag = reference.add_layer_norm_grad_error_scale(*vals)
    dt = vals[0].dtype
    for got, e, m, odt, name in zip(results, exp, mag, (dt, F32, F32),
                                    ("dx", "dgamma", "dbeta")):
        got = host(got)
        assert got.dtype == odt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, dt, name)


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dsum", [False, True], ids=["no_dsum", "dsum"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dsum, dt):
    vals = make((3, 5, 67), 1, dt, dsum)
    args = vals if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.add_layer_norm_grad(*args)
    assert len(res) == 3
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, *vals)


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
@pytest.mark.parametrize("shape,gdims", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((1, 2, 1, 2, 1, 2, 1, 2), 3), ((64, 2048), 1)])
def test_ranks_and_splits(shape, gdims):
    vals = make(shape, gdims, F32, dsum=True)
    check(acl_py.add_layer_norm_grad(*vals), *vals)


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
def test_out_given():
    vals = make((4, 32), 1, F16)
    dx, dg, db = np.full((4, 32), 7, F16), np.full(32, 7, F32), np.full(32, 7, F32)
    res = acl_py.add_layer_norm_grad(*vals, out=(dx, dg, db))
    assert res[0] is dx and res[1] is dg and res[2] is db
    check(res, *vals)


ERRORS = [
    (dict(x1=np.ones((2, 5), F32)), AclArgumentError, "x1"),
    (dict(x2=np.ones((3, 4), F32)), AclArgumentError, "x2"),
    (dict(dsum=np.ones((1, 4), F32)), AclArgumentError, "dsum"),
    (dict(gamma=np.ones(3, F32)), AclArgumentError, "gamma"),
    (dict(mean=np.ones((2,), F32)), AclArgumentError, "mean"),
    (dict(rstd=np.ones((1, 1), F32)), AclArgumentError, "rstd"),
    (dict(x1=np.ones((2, 4), F16)), AclTypeError, "x1"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(dsum=np.ones((2, 4), F16)), AclTypeError, "dsum"),
    (dict(rstd=np.ones((2, 1), F16)), AclTypeError, "rstd"),
    (dict(mean=[[0.0], [0.0]]), AclTypeError, "mean"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None)), AclArgumentError, "out[0] (dx)"),
    (dict(out=(None, np.empty(4, F16), None)), AclTypeError, "out[1] (dgamma)"),
    (dict(out=(None, None, np.empty(5, F32))), AclArgumentError, "out[2] (dbeta)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    dy, x1, x2, rstd, mean, g, _ = make((2, 4), 1)
    case = dict(dict(dy=dy, x1=x1, x2=x2, rstd=rstd, mean=mean, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_layer_norm_grad(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnAddLayerNormGradGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
@pytest.mark.parametrize("what", ["gamma", "dsum", "mean"])
def test_device_refusal_names_the_argument_and_carries_the_code(what):
    """Phase one's 561002 (the tiling's shape rules, the docs' dsum shape) on a DeviceTensor
    call: the Python checks then name the argument."""
    dy, x1, x2, rstd, mean, g, _ = make((2, 4), 1)
    D = acl_py.DeviceTensor.from_numpy
    G = D(g[:3].copy()) if what == "gamma" else D(g)
    ds = D(np.ones((1, 4), F32)) if what == "dsum" else None
    M = D(np.zeros((1, 1), F32)) if what == "mean" else D(mean)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_layer_norm_grad(D(dy), D(x1), D(x2), D(rstd), M, G, ds)
    assert ei.value.argument == what
    assert ei.value.code == 561002 and ei.value.call == "aclnnAddLayerNormGradGetWorkspaceSize"


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
def test_operator_rules_surface_as_its_typed_error():
    vals = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.add_layer_norm_grad(*vals)
    assert ei.value.code == 561002
    assert ei.value.call == "aclnnAddLayerNormGradGetWorkspaceSize"
    assert "x1 rank 10" in ei.value.message


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((8, 96), 1, F16, dsum=True)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.AddLayerNormGrad(*devs) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            dyk = (vals[0].astype(F32) * (k + 1)).astype(F16)
            devs[0].buffer.copy_from_host(dyk)
            assert plan.run(s) == (plan.dx, plan.dgamma, plan.dbeta)
            s.synchronize()
            check(plan.outputs, dyk, *vals[1:])
    assert plan.closed


@only_where(runs_here(ADD_LAYER_NORM_GRAD))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_LAYER_NORM_GRAD.params] == [
        "dy", "x1", "x2", "rstd", "mean", "gamma", "dsumOptional", "dxOut", "dgammaOut",
        "dbetaOut"]
    assert [a.py for a in ADD_LAYER_NORM_GRAD.inputs] == [
        "dy", "x1", "x2", "rstd", "mean", "gamma", "dsum"]
    assert [o.py for o in ADD_LAYER_NORM_GRAD.outputs] == ["dx", "dgamma", "dbeta"]
    assert ADD_LAYER_NORM_GRAD.smoke_cases
    for case in ADD_LAYER_NORM_GRAD.smoke_cases:
        ratios = ADD_LAYER_NORM_GRAD.run_smoke_case(case)
        assert len(ratios) == 3 and all(r <= 1 for r in ratios), (case[0], ratios)


def test_parts_with_a_kernel():
    """The vendor's definition configures no kernel for the Atlas training series: acl-py
    smoke leaves the operator out there."""
    assert not ADD_LAYER_NORM_GRAD.runs_on("Ascend910A")
    assert not ADD_LAYER_NORM_GRAD.runs_on("Ascend910B")
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend310P3", "Ascend950PR_9599", None):
        assert ADD_LAYER_NORM_GRAD.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); x2 = np.cos(x1)
dy = np.sin(3 * x1); ds = np.full((4, 16), 0.5, np.float32)
g = np.linspace(0.5, 1.5, 16, dtype=np.float32)
_, mean, rstd, _ = reference.add_layer_norm(x1, x2, g, np.zeros(16))
mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
dx, dg, db = acl_py.add_layer_norm_grad(dy, x1, x2, rstd, mean, g, ds)
e = reference.add_layer_norm_grad(dy, x1, x2, rstd, mean, g, ds)
assert np.allclose(dx, e[0], rtol=1e-5, atol=1e-5) and np.allclose(dg, e[1], atol=1e-5)
assert np.allclose(db, e[2], atol=1e-5)
""")
