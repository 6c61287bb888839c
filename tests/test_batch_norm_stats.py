"""acl_py.batch_norm_stats / acl_py.BatchNormStats (aclnnBatchNormStats through the declarative
operator layer) against the float64 reference for each input dtype the part takes (bfloat16 on
Ascend 950 only), the empty input's 0 and NaN, its argument errors (typed, naming the argument,
nothing leaked: the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). Every part runs it, so the file runs whole on each.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM_STATS

from _cann_path import run_on_cann_path
from _part_runs import cases_where, only_where, other_parts, run_on_parts
from _workspace_model import ARCH

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, dt=F32, seed=0, offset=0.5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2 + offset).astype(dt)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(got, x, eps=1e-5):
    mean, invstd = (host(t) for t in got)
    c = x.shape[1]
    for t in (mean, invstd):
        assert t.dtype == F32 and t.shape == (c,)
    ref = reference.batch_norm_stats(x, eps)
    scale = reference.batch_norm_stats_error_scale(x, eps)
    reference.assert_close(mean, ref[0], scale[0], F32, "mean")
    reference.assert_close(invstd, ref[1], scale[1], F32, "invstd")


# BF16 input on Ascend 950 only (ops-math math/reduce_std_with_mean/op_api/
# aclnn_batch_norm_stats.cpp's dtype lists): elsewhere a BF16 case could never run, so it is
# no test (test_operator_rules_surface_as_its_typed_error checks the refusal there)
TAKES_BF16 = ARCH == 3510


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", [F32, F16, *cases_where(TAKES_BF16, BF16)], ids=str)
def test_against_reference(path, dt):
    x = make((3, 6, 4, 5), dt)
    arg = x if path == "numpy" else acl_py.DeviceTensor.from_numpy(x)
    res = acl_py.batch_norm_stats(arg)
    assert len(res) == 2
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, x)


@pytest.mark.parametrize("shape", [(16, 3), (2, 5, 7), (1, 70, 1), (2, 3, 2, 2, 2),
                                   (2, 3, 2, 1, 2, 3, 1), (2, 2, 1, 1, 2, 1, 1, 3)], ids=str)
def test_shapes(shape):
    x = make(shape)
    check(acl_py.batch_norm_stats(x, eps=1e-3), x, eps=1e-3)


def test_a_large_offset_keeps_the_variance():
    """The device's variance is two-pass: an offset 100 times the spread costs nothing."""
    x = make((4, 5, 64), offset=200.0)
    check(acl_py.batch_norm_stats(x), x)


def test_out_given():
    x = make((2, 8, 6))
    mean, inv = np.full(8, 7, F32), np.full(8, 7, F32)
    got = acl_py.batch_norm_stats(x, out=(mean, inv))
    assert got[0] is mean and got[1] is inv
    check(got, x)


@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_input_gives_zero_and_nan(path):
    x = np.zeros((0, 4, 3), F32)
    arg = x if path == "numpy" else acl_py.DeviceTensor.from_numpy(x)
    mean, inv = (host(t) for t in acl_py.batch_norm_stats(arg))
    assert np.array_equal(mean, np.zeros(4, F32)) and np.isnan(inv).all()


ERRORS = [
    (dict(input=np.ones((2, 4, 3), np.int32)), AclTypeError, "input"),
    (dict(input=[[1.0, 2.0]]), AclTypeError, "input"),
    (dict(input=np.ones(24, F32)), AclArgumentError, "input"),
    (dict(input=np.ones((2, 4) + (1,) * 7, F32)), AclArgumentError, "input"),
    (dict(input=np.ones((2, 0, 3), F32)), AclArgumentError, "input"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(out=()), AclArgumentError, "out"),
    (dict(out=(np.empty(3, F32), np.empty(4, F32))), AclArgumentError, "out[0] (mean)"),
    (dict(out=(np.empty(4, F32), np.empty(4, F16))), AclTypeError, "out[1] (invstd)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    case = dict(dict(input=make((2, 4, 3))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_stats(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormStatsGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    x = acl_py.DeviceTensor.from_numpy(make((2, 4, 5)))
    mean = acl_py.DeviceTensor.from_numpy(np.zeros(3, F32))
    inv = acl_py.DeviceTensor.from_numpy(np.zeros(4, F32))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_stats(x, out=(mean, inv))
    assert ei.value.argument == "out[0] (mean)"
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormStatsGetWorkspaceSize"
    assert "mean shape [3] must be [C]" in ei.value.message


@only_where(not TAKES_BF16)   # Ascend 950 runs the BF16 cases
def test_operator_rules_surface_as_its_typed_error():
    """The part's dtype list: bfloat16 input on Ascend 950 only (Atlas A2/A3 included)."""
    x = acl_py.DeviceTensor.from_numpy(make((2, 4, 3), BF16))
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_stats(x)
    assert ei.value.code == 161002
    assert "input dtype BF16 is not supported on" in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    x = make((4, 16, 9), F16)
    dev = acl_py.DeviceTensor.from_numpy(x)
    with acl_py.Stream() as s, acl_py.BatchNormStats(dev) as plan:
        # the device's workspace: tests/test_emulator_workspace_size_bn_stats.py states it
        assert plan.mode == "repeatable" and plan.workspace_size > 0
        for k in range(3):
            xk = (x.astype(F32) * (k + 1) - k).astype(F16)
            dev.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.mean, plan.invstd)
            s.synchronize()
            check((plan.mean, plan.invstd), xk)
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in BATCH_NORM_STATS.params] == [
        "input", "eps", "mean", "invstd"]
    assert [o.py for o in BATCH_NORM_STATS.outputs] == ["mean", "invstd"]
    assert BATCH_NORM_STATS.smoke_cases
    for case in BATCH_NORM_STATS.smoke_cases:
        ratios = BATCH_NORM_STATS.run_smoke_case(case)
        assert all(r is not None and r <= 1 for r in ratios), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8)
m, v = acl_py.batch_norm_stats(x, 1e-5)
rm, rv = reference.batch_norm_stats(x, 1e-5)
assert np.allclose(m, rm, rtol=1e-5, atol=1e-6) and np.allclose(v, rv, rtol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
