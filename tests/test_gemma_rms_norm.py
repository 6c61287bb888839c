"""acl_py.gemma_rms_norm / acl_py.GemmaRmsNorm (aclnnGemmaRmsNorm through the declarative
operator layer) against the float64 reference (``y = x * rstd * (1 + gamma)``) for every
dtype of the part's table, its argument errors (typed, naming the argument, nothing leaked:
the autouse leak check), its plan and smoke cases, the parts without a kernel, and the CANN
path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import GEMMA_RMS_NORM

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, gdims, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    g = (rng.standard_normal(shape[len(shape) - gdims:]) * 0.5).astype(dt)
    return x, g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x, g, eps=1e-6):
    exp = reference.gemma_rms_norm(x, g, eps)
    mag = reference.gemma_rms_norm_error_scale(x, g, eps)
    for got, e, m, dt, name in zip(results, exp, mag, (x.dtype, F32), ("y", "rstd")):
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        reference.assert_close(got.reshape(e.shape), e, m, x.dtype, name)


@only_where(runs_here(GEMMA_RMS_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dt):
    x, g = make((3, 5, 67), 1, dt)
    args = (x, g) if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                 for a in (x, g))
    res = acl_py.gemma_rms_norm(*args, 1e-4)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, x, g, 1e-4)
    assert host(res[1]).shape == (3, 5, 1)


@only_where(runs_here(GEMMA_RMS_NORM))
def test_is_rms_norm_of_one_plus_gamma():
    """float32: the same bits as RmsNorm with gamma + 1 (the kernel adds 1.0f in float32, then
    runs RmsNorm's chain); gamma = 0 is a plain normalization."""
    x, g = make((6, 2, 40), 2, seed=2)
    y, rstd = acl_py.gemma_rms_norm(x, g)
    ry, rr = acl_py.rms_norm(x, g + np.float32(1))
    assert np.array_equal(y, ry) and np.array_equal(rstd, rr)
    y0, r0 = acl_py.gemma_rms_norm(x, np.zeros_like(g))
    assert np.array_equal(y0, x * r0)


@only_where(runs_here(GEMMA_RMS_NORM))
def test_empty_rows_and_an_empty_gamma_with_them():
    y, rstd = acl_py.gemma_rms_norm(np.zeros((0, 4), F32), np.ones(4, F32))
    assert y.shape == (0, 4) and rstd.shape == (0, 1)
    y, rstd = acl_py.gemma_rms_norm(np.zeros((0, 0), F32), np.ones(0, F32))
    assert y.shape == (0, 0) and rstd.shape == (0, 1)


ERRORS = [
    (dict(x=np.ones((2, 4), np.float64)), AclTypeError, "x"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(0, F32), x=np.ones((2, 0), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(epsilon=-1e-6), AclArgumentError, "epsilon"),
    (dict(out=(np.empty((2, 5), F32), None)), AclArgumentError, "out[0] (y)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, g = make((2, 4), 1)
    case = dict(dict(x=x, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.gemma_rms_norm(**case)
    assert ei.value.argument == argument and type(ei.value) is exc, ei.value
    assert "aclnnGemmaRmsNormGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(GEMMA_RMS_NORM))
def test_device_refusal_names_the_argument_and_carries_the_code():
    """Phase one's 561002 (gamma not x's trailing dims) on a DeviceTensor call: the Python
    checks then name the argument."""
    x, g = make((2, 4), 1)
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g[:3].copy())
    with pytest.raises(AclArgumentError) as ei:
        acl_py.gemma_rms_norm(X, G)
    assert ei.value.argument == "gamma" and ei.value.code == 561002
    assert ei.value.call == "aclnnGemmaRmsNormGetWorkspaceSize"


@only_where(runs_here(GEMMA_RMS_NORM))
def test_part_dtype_rule_is_phase_ones():
    """float32 gamma beside float16 x: Ascend 950's table only; on Atlas A2/A3 phase one
    refuses it (161002) naming gamma."""
    x, g = make((2, 16), 1, F16)
    if acl_py.soc_name().startswith("Ascend950"):
        check(acl_py.gemma_rms_norm(x, g.astype(F32)), x, g)
        return
    with pytest.raises(AclError) as ei:
        acl_py.gemma_rms_norm(x, g.astype(F32))
    assert ei.value.code == 161002 and "gamma dtype FLOAT" in ei.value.message


@only_where(runs_here(GEMMA_RMS_NORM))
def test_plan_runs_repeatedly_on_changing_contents():
    x, g = make((8, 96), 1, F16)
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g)
    with acl_py.Stream() as s, acl_py.GemmaRmsNorm(X, G, 1e-5) as plan:
        for k in range(2):
            xk = (x.astype(F32) * (k + 1)).astype(F16)
            X.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.y, plan.rstd)
            s.synchronize()
            check(plan.outputs, xk, g, 1e-5)


@only_where(runs_here(GEMMA_RMS_NORM))
def test_declaration_smoke_and_parts():
    assert [p.name for p in GEMMA_RMS_NORM.params] == ["x", "gamma", "epsilon", "yOut",
                                                       "rstdOut"]
    for case in GEMMA_RMS_NORM.smoke_cases:
        assert all(r <= 1 for r in GEMMA_RMS_NORM.run_smoke_case(case)), case[0]
    for soc in ("Ascend910A", "Ascend910B", "Ascend310P3", "Ascend310B1"):
        assert not GEMMA_RMS_NORM.runs_on(soc)
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend950PR_9599", None):
        assert GEMMA_RMS_NORM.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16)
g = np.linspace(-0.5, 0.5, 16, dtype=np.float32)
y, rstd = acl_py.gemma_rms_norm(x, g)
e = reference.gemma_rms_norm(x, g)
assert np.allclose(y, e[0], rtol=1e-5) and np.allclose(rstd, e[1], rtol=1e-5)
""")
