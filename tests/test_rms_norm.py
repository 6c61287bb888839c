"""acl_py.rms_norm / acl_py.RmsNorm (aclnnRmsNorm through the declarative operator layer)
against the float64 reference for every dtype pair of the vendor's table, its argument
errors (typed, naming the argument, nothing leaked: the autouse leak check), its plan, and the
CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import RMS_NORM

from _cann_path import run_on_cann_path

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
PAIRS = [(F32, F32), (F16, F16), (F16, F32), (BF16, BF16), (BF16, F32)]


def make(shape, gdims, dt=F32, gdt=None, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    g = (rng.standard_normal(shape[len(shape) - gdims:]) * 0.5 + 1).astype(gdt or dt)
    return x, g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x, g, eps=1e-6):
    exp = reference.rms_norm(x, g, eps)
    mag = reference.rms_norm_error_scale(x, g, eps)
    for got, e, m, dt, name in zip(results, exp, mag, (x.dtype, F32), ("y", "rstd")):
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        reference.assert_close(got.reshape(e.shape), e, m, x.dtype, name)


# the pairs in this part's dtype table: without BF16, neither BF16 nor FLOAT16 x beside FLOAT
# gamma (a pair outside it could never run here: no test; the emulator's rms_norm tests
# check the refusal)
PART_PAIRS = [p for p in PAIRS
              if acl_py.supports_bfloat16() or (BF16 not in p and p != (F16, F32))]


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt,gdt", PART_PAIRS, ids=[f"{d}-{g}" for d, g in PART_PAIRS])
def test_against_reference(path, dt, gdt):
    x, g = make((3, 5, 67), 1, dt, gdt)
    args = (x, g) if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                 for a in (x, g))
    res = acl_py.rms_norm(*args, 1e-4)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, x, g, 1e-4)
    assert host(res[1]).shape == (3, 5, 1)   # rstd as CANN writes it: batch dims, then ones


@pytest.mark.parametrize("shape,gdims", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((1, 2, 1, 2, 1, 2, 1, 2), 3), ((512, 4096), 1)])
def test_ranks_and_splits(shape, gdims):
    x, g = make(shape, gdims)
    check(acl_py.rms_norm(x, g), x, g)


def test_out_given_and_strided_views():
    x, g = make((4, 6, 32), 1, F16)
    out = (np.empty((4, 6, 32), F16), np.empty((4, 6, 1), F32))
    res = acl_py.rms_norm(x, g, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, x, g)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(x, 2, axis=2))
    res = acl_py.rms_norm(big[:, :, ::2], acl_py.DeviceTensor.from_numpy(g))
    check(res, x, g)


def test_empty_x():
    y, rstd = acl_py.rms_norm(np.zeros((0, 4), F32), np.ones(4, F32))
    assert y.shape == (0, 4) and rstd.shape == (0, 1)


ERRORS = [
    (dict(x=[[1.0, 2.0]]), AclTypeError, "x"),
    (dict(x=np.ones((2, 4), np.float64)), AclTypeError, "x"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((3, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(gamma=None), AclTypeError, "gamma"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(epsilon=-1e-6), AclArgumentError, "epsilon"),
    (dict(out=(None,)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None)), AclArgumentError, "out[0] (y)"),
    (dict(out=(None, np.empty(3, F32))), AclArgumentError, "out[1] (rstd)"),
    (dict(out=(None, np.empty((1, 2), F32))), AclArgumentError, "out[1] (rstd)"),  # 2 != 4
    (dict(out=(None, np.empty(2, F16))), AclTypeError, "out[1] (rstd)"),
    (dict(out=(np.empty((2, 4), F16), None)), AclTypeError, "out[0] (y)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}" for _c, e, a in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    x, g = make((2, 4), 1)
    case = dict(dict(x=x, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.rms_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnRmsNormGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    x, g = make((2, 4), 1)
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g[:3].copy())
    with pytest.raises(AclArgumentError) as ei:
        acl_py.rms_norm(X, G)
    assert ei.value.argument == "gamma"
    assert ei.value.code == 561002 and ei.value.call == "aclnnRmsNormGetWorkspaceSize"


def test_operator_rules_surface_as_its_typed_error():
    x, g = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.rms_norm(x, g)
    assert ei.value.code == 561002 and ei.value.call == "aclnnRmsNormGetWorkspaceSize"
    assert "x rank 10" in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    x, g = make((8, 96), 1, F16, F32 if acl_py.supports_bfloat16() else F16)
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g)
    with acl_py.Stream() as s, acl_py.RmsNorm(X, G, 1e-5) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_rms.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        for k in range(3):
            xk = (x.astype(F32) * (k + 1)).astype(F16)
            X.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.y, plan.rstd)
            s.synchronize()
            check(plan.outputs, xk, g, 1e-5)
    assert plan.closed
    assert plan.y.to_numpy().shape == (8, 96)


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in RMS_NORM.params] == ["x", "gamma", "epsilon", "yOut", "rstdOut"]
    assert [a.py for a in RMS_NORM.inputs] == ["x", "gamma", "epsilon"]
    assert [o.py for o in RMS_NORM.outputs] == ["y", "rstd"]
    for case in RMS_NORM.smoke_cases:
        assert all(r <= 1 for r in RMS_NORM.run_smoke_case(case)), case[0]


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); g = np.full(16, 0.5, np.float32)
y, rstd = acl_py.rms_norm(x, g)
e = reference.rms_norm(x, g)
assert np.allclose(y, e[0], rtol=1e-5) and np.allclose(rstd, e[1], rtol=1e-5)
""")
