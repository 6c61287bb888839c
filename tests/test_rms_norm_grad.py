"""acl_py.rms_norm_grad / acl_py.RmsNormGrad (aclnnRmsNormGrad through the declarative
operator layer) against the float64 reference for every dtype pair of the vendor's table and
several ranks, the forward-then-backward chain with acl_py.rms_norm's rstd (checked against a
finite difference of the forward reference), its argument errors (typed, naming the argument,
carrying the status code, nothing leaked: the autouse leak check), its plan, and the CANN path
(ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import (AclArgumentError, AclTypeError, OperatorInvalidParameterError,
                           OperatorTilingError)
from acl_py.ops import RMS_NORM_GRAD, part_of

from _cann_path import run_on_cann_path

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
PAIRS = [(F32, F32), (F16, F16), (F16, F32), (BF16, BF16), (BF16, F32)]


def make(shape, gdims, dt=F32, gdt=None, seed=0):
    """dy, x, the forward's rstd (float64 reference, as float32) and gamma."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    g = (rng.standard_normal(shape[len(shape) - gdims:]) * 0.5 + 1).astype(gdt or dt)
    dy = rng.standard_normal(shape).astype(dt)
    return dy, x, reference.rms_norm(x, g)[1].astype(F32), g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, dy, x, rstd, g):
    exp = reference.rms_norm_grad(dy, x, rstd, g)
    mag = reference.rms_norm_grad_error_scale(dy, x, rstd, g)
    for got, e, m, dt, name in zip(results, exp, mag, (x.dtype, F32), ("dx", "dgamma")):
        got = host(got)
        assert got.dtype == dt and got.shape == e.shape, (name, got.dtype, got.shape)
        reference.assert_close(got, e, m, dt, name)


def gamma_size(n):
    """``n``, or on Atlas training parts the next multiple of 64: their tiling takes gamma of
    a multiple of 64 elements only (tests/test_emulator_rms_norm_grad.py checks the
    refusal)."""
    return -(-n // 64) * 64 if part_of().npu_arch == 1001 else n


# the pairs in this part's dtype table: without BF16, neither BF16 nor FLOAT16 x beside FLOAT
# gamma (a pair outside it could never run here: no test; test_emulator_rms_norm_grad's
# test_part_dtype_table checks the refusal)
PART_PAIRS = [p for p in PAIRS
              if acl_py.supports_bfloat16() or (BF16 not in p and p != (F16, F32))]


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt,gdt", PART_PAIRS, ids=[f"{d}-{g}" for d, g in PART_PAIRS])
def test_against_reference(path, dt, gdt):
    args = make((3, 5, gamma_size(67)), 1, dt, gdt)
    call = args if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.rms_norm_grad(*call)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, *args)


def _gamma_taken(shape, gdims):
    n = int(np.prod(shape[len(shape) - gdims:]))
    return gamma_size(n) == n


# the ranks whose gamma this part takes (on Atlas training parts one of a multiple of 64
# only: another could never run there, so it is no test)
@pytest.mark.parametrize("shape,gdims", [c for c in [
    ((7, 64), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4), ((1, 2, 1, 2, 1, 2, 1, 2), 3),
    ((512, 4096), 1), ((3, 7000), 1)] if _gamma_taken(*c)])
def test_ranks_and_splits(shape, gdims):
    args = make(shape, gdims)
    check(acl_py.rms_norm_grad(*args), *args)


@pytest.mark.parametrize("dt,gdt", PART_PAIRS, ids=[f"{d}-{g}" for d, g in PART_PAIRS])
def test_forward_then_backward(dt, gdt):
    """acl_py.rms_norm's rstd goes straight into rms_norm_grad (its shape, x's batch dims then
    ones, is one the backward takes); the gradients match a central difference of the forward
    reference (float64) through a random projection."""
    rng = np.random.default_rng(1)
    n = gamma_size(32)
    x = (rng.standard_normal((4, 3, n)) + 0.5).astype(dt)
    g = (rng.standard_normal(n) * 0.5 + 1).astype(gdt)
    dy = rng.standard_normal(x.shape).astype(dt)
    X, G, DY = (acl_py.DeviceTensor.from_numpy(a) for a in (x, g, dy))
    with acl_py.Stream() as s:
        _y, rstd = acl_py.rms_norm(X, G, 1e-6, stream=s)
        dx, dgamma = acl_py.rms_norm_grad(DY, X, rstd, G, stream=s)
        s.synchronize()
        rstd_h, dx_h, dg_h = rstd.to_numpy(), dx.to_numpy(), dgamma.to_numpy()
    assert rstd_h.shape == (4, 3, 1)
    check((dx_h, dg_h), dy, x, rstd_h, g)
    # the backward of the forward: d/dt of sum(dy * y(x + t v)) at t = 0, in float64
    x64, g64, dy64 = (a.astype(np.float64) for a in (x, g, dy))
    loss = lambda xx, gg: float((dy64 * reference.rms_norm(xx, gg, 1e-6)[0]).sum())  # noqa
    v, w = rng.standard_normal(x.shape), rng.standard_normal(g.shape)
    h = 1e-6
    dloss_x = (loss(x64 + h * v, g64) - loss(x64 - h * v, g64)) / (2 * h)
    dloss_g = (loss(x64, g64 + h * w) - loss(x64, g64 - h * w)) / (2 * h)
    tol = {F32: 1e-4, F16: 1e-2, BF16: 5e-2}[dt]
    assert abs((dx_h.astype(np.float64) * v).sum() - dloss_x) <= tol * np.abs(dloss_x) + 1e-3
    assert abs((dg_h.astype(np.float64) * w).sum() - dloss_g) <= tol * np.abs(dloss_g) + 1e-3


def test_out_given_and_strided_views():
    n = gamma_size(32)
    dy, x, rstd, g = make((4, 6, n), 1, F16)
    out = (np.empty((4, 6, n), F16), np.empty(n, F32))
    res = acl_py.rms_norm_grad(dy, x, rstd, g, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, dy, x, rstd, g)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(x, 2, axis=2))
    res = acl_py.rms_norm_grad(acl_py.DeviceTensor.from_numpy(dy), big[:, :, ::2],
                               acl_py.DeviceTensor.from_numpy(rstd),
                               acl_py.DeviceTensor.from_numpy(g))
    check(res, dy, x, rstd, g)


def test_rstd_as_one_value_per_row():
    """The vendor's example hands rstd over as [M] for x [M, 1, N]: accepted, same numbers."""
    dy, x, rstd, g = make((3, 1, 64), 1)
    check(acl_py.rms_norm_grad(dy, x, rstd.reshape(3), g), dy, x, rstd, g)


def test_every_output_empty():
    dx, dgamma = acl_py.rms_norm_grad(np.zeros((3, 0), F32), np.zeros((3, 0), F32),
                                      np.ones((3, 1), F32), np.ones(0, F32))
    assert dx.shape == (3, 0) and dgamma.shape == (0,)


def test_empty_rows_beside_a_dgamma():
    """Atlas A2/A3 and inference parts refuse an empty dy in their tiling (561002); Ascend 950
    writes dgamma zeros."""
    args = (np.zeros((0, 64), F32), np.zeros((0, 64), F32), np.ones((0, 1), F32),
            np.ones(64, F32))
    if acl_py.soc_name().startswith("Ascend950"):
        _dx, dgamma = acl_py.rms_norm_grad(*args)
        assert (dgamma == 0).all()
        return
    with pytest.raises(OperatorTilingError) as ei:
        acl_py.rms_norm_grad(*args)
    assert ei.value.code == 561002 and "dy has no rows" in ei.value.message


ERRORS = [
    (dict(x=[[1.0, 2.0]]), AclTypeError, "x"),
    (dict(x=np.ones((2, 4), np.float64)), AclTypeError, "x"),
    (dict(dy=np.ones((2, 4), F16)), AclTypeError, "dy"),
    (dict(dy=np.ones((2, 5), F32)), AclArgumentError, "dy"),
    (dict(rstd=np.ones((2, 1), F16)), AclTypeError, "rstd"),
    (dict(rstd=np.ones((3, 1), F32)), AclArgumentError, "rstd"),
    (dict(rstd=np.ones((1, 2), F32)), AclArgumentError, "rstd"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((3, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(gamma=None), AclTypeError, "gamma"),
    (dict(out=(None,)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None)), AclArgumentError, "out[0] (dx)"),
    (dict(out=(None, np.empty(3, F32))), AclArgumentError, "out[1] (dgamma)"),
    (dict(out=(None, np.empty(4, F16))), AclTypeError, "out[1] (dgamma)"),
    (dict(out=(np.empty((2, 4), F16), None)), AclTypeError, "out[0] (dx)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    dy, x, rstd, g = make((2, 4), 1)
    case = dict(dict(dy=dy, x=x, rstd=rstd, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.rms_norm_grad(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnRmsNormGradGetWorkspaceSize" not in emulator.call_counts()


@pytest.mark.parametrize("which,exc,code", [
    ("gamma", AclArgumentError, 561002),   # gamma [3] for x [2, 4]: the tiling's shape rule
    ("rstd", AclArgumentError, 561002),    # rstd [3, 1] for 2 rows
    ("dy", AclTypeError, 161002),          # dy float16 beside a float32 x: the dtype table
])
def test_device_refusal_names_the_argument_and_carries_the_code(which, exc, code):
    dy, x, rstd, g = make((2, 4), 1)
    bad = {"gamma": g[:3].copy(), "rstd": np.ones((3, 1), F32), "dy": dy.astype(F16)}
    args = dict(dy=dy, x=x, rstd=rstd, gamma=g)
    args[which] = bad[which]
    dev = {k: acl_py.DeviceTensor.from_numpy(v) for k, v in args.items()}
    with pytest.raises(exc) as ei:
        acl_py.rms_norm_grad(**dev)
    assert ei.value.argument == which
    assert ei.value.code == code and ei.value.call == "aclnnRmsNormGradGetWorkspaceSize"


def test_operator_rules_surface_as_their_typed_errors():
    """Rules only phase one knows: x rank 9 (561002, the tiling's) and a bfloat16 pair on a
    part without BF16 (161002). dx of another dtype than x's, on device tensors, is phase
    one's refusal too (161002), named as the out= entry."""
    dy, x, rstd, g = make((1,) * 8 + (2,), 1)
    with pytest.raises(OperatorTilingError) as ei:
        acl_py.rms_norm_grad(dy, x, rstd, g)
    assert ei.value.code == 561002 and ei.value.call == "aclnnRmsNormGradGetWorkspaceSize"
    assert "x rank 9" in ei.value.message
    dev = [acl_py.DeviceTensor.from_numpy(v) for v in make((2, 64), 1)]
    with acl_py.DeviceTensor.empty((2, 64), F16) as dx:   # dx must be x's dtype
        with pytest.raises(AclTypeError) as ei:
            acl_py.rms_norm_grad(*dev, out=(dx, None))
    assert ei.value.argument == "out[0] (dx)"
    assert ei.value.code == 161002 and "dxOut dtype FLOAT16 must be x's dtype FLOAT" in \
        ei.value.message
    if not acl_py.supports_bfloat16():
        with pytest.raises(OperatorInvalidParameterError):
            acl_py.rms_norm_grad(*make((2, 64), 1, BF16))


def test_plan_runs_repeatedly_on_changing_contents():
    gdt = F32 if acl_py.supports_bfloat16() else F16
    n = gamma_size(96)
    dy, x, rstd, g = make((8, n), 1, F16, gdt)
    DY, X, R, G = (acl_py.DeviceTensor.from_numpy(a) for a in (dy, x, rstd, g))
    with acl_py.Stream() as s, acl_py.RmsNormGrad(DY, X, R, G) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_rms.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        for k in range(3):
            dyk = (dy.astype(F32) * (k + 1)).astype(F16)
            DY.buffer.copy_from_host(dyk)
            assert plan.run(s) == (plan.dx, plan.dgamma)
            s.synchronize()
            check(plan.outputs, dyk, x, rstd, g)
    assert plan.closed
    assert plan.dx.to_numpy().shape == (8, n) and plan.dgamma.to_numpy().shape == (n,)


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in RMS_NORM_GRAD.params] == ["dy", "x", "rstd", "gamma", "dxOut",
                                                      "dgammaOut"]
    assert [a.py for a in RMS_NORM_GRAD.inputs] == ["dy", "x", "rstd", "gamma"]
    assert [o.py for o in RMS_NORM_GRAD.outputs] == ["dx", "dgamma"]
    assert RMS_NORM_GRAD.smoke_cases
    for case in RMS_NORM_GRAD.smoke_cases:
        assert all(r <= 1 for r in RMS_NORM_GRAD.run_smoke_case(case)), case[0]


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); g = np.full(16, 0.5, np.float32)
dy = np.cos(x)
y, rstd = acl_py.rms_norm(x, g)
dx, dg = acl_py.rms_norm_grad(dy, x, rstd, g)
e = reference.rms_norm_grad(dy, x, rstd, g)
assert np.allclose(dx, e[0], rtol=1e-5, atol=1e-6) and np.allclose(dg, e[1], rtol=1e-5)
""")
