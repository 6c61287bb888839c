"""acl_py.batch_norm / acl_py.BatchNorm (aclnnBatchNorm through the declarative operator layer,
its running statistics declared ``output(..., into=...)``): against the float64 reference
for every dtype the vendor's docs allow, training and inference, with and without weight,
bias and running statistics; the running statistics updated in place (device tensors, and
written back into NumPy arrays) and untouched in inference; save_invstd as the part writes it;
argument errors (typed, naming the argument, no C call, nothing leaked: the autouse leak
check), phase one's refusals on DeviceTensor calls; the plan; the CANN path
(ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM, part_of
from acl_py.ops.batch_norm import saved_statistic

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = [F32, F16, BF16]


def make(shape, dt=F32, seed=0, affine=True, running=True):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    w = (rng.standard_normal(c) * 0.5 + 1).astype(dt) if affine else None
    b = (rng.standard_normal(c) * 0.5).astype(dt) if affine else None
    rm = (rng.standard_normal(c) * 0.1).astype(F32) if running else None
    rv = (rng.random(c) + 0.5).astype(F32) if running else None
    return x, w, b, rm, rv


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x, w, b, rm, rv, training=True, momentum=0.1, eps=1e-5):
    saved = saved_statistic(part_of())
    exp = reference.batch_norm(x, w, b, rm, rv, training, momentum, eps, saved=saved)
    mag = reference.batch_norm_error_scale(x, w, b, rm, rv, training, momentum, eps,
                                           saved=saved)
    names = ("output", "save_mean", "save_invstd", "running_mean", "running_var")
    for got, e, m, name in zip(results, exp, mag, names):
        if e is None:
            assert got is None, name
            continue
        got = host(got)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x.dtype, name)


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs(DTYPES), ids=lambda d: d.name)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_against_reference(path, dt, training):
    x, w, b, rm, rv = make((3, 8, 5, 7), dt)
    rm0, rv0 = rm.copy(), rv.copy()
    if path == "numpy":
        res = acl_py.batch_norm(x, w, b, rm, rv, training, 0.2, 1e-4)
        assert all(isinstance(r, np.ndarray) for r in res[:1])
        host_rm, host_rv = rm, rv
    else:
        X, W, B, RM, RV = (acl_py.DeviceTensor.from_numpy(a) for a in (x, w, b, rm, rv))
        res = acl_py.batch_norm(X, W, B, RM, RV, training, 0.2, 1e-4)
        host_rm, host_rv = RM.to_numpy(), RV.to_numpy()
    assert len(res) == 5
    check(res, x, w, b, rm0, rv0, training, 0.2, 1e-4)
    if training:   # the given objects, updated in place
        assert res[3] is (rm if path == "numpy" else RM)
        assert res[4] is (rv if path == "numpy" else RV)
        assert not np.array_equal(host_rm, rm0) and not np.array_equal(host_rv, rv0)
        assert host(res[1]).dtype == F32 and host(res[2]).dtype == F32
    else:          # inference writes the output only
        assert res[1:] == (None, None, None, None)
        assert np.array_equal(host_rm, rm0) and np.array_equal(host_rv, rv0)


@pytest.mark.parametrize("shape", [(16, 64), (2, 96, 7), (4, 3), (2, 5, 1, 3, 1, 2),
                                   (1, 70, 2)], ids=str)
def test_shapes(shape):
    """Ranks 2, 3 and 6 (rank 5 needs NCDHW, which ND tensors are not), channel counts on
    either side of Atlas A2/A3's BatchNormV3 threshold (64)."""
    x, w, b, rm, rv = make(shape)
    check(acl_py.batch_norm(x, w, b, rm.copy(), rv.copy()), x, w, b, rm, rv)


def test_without_weight_bias_and_running_statistics():
    x = make((2, 6, 9))[0]
    res = acl_py.batch_norm(x)
    assert res[3] is None and res[4] is None
    check(res, x, None, None, None, None)
    same = acl_py.batch_norm(x, np.ones(6, F32), np.zeros(6, F32))
    assert np.array_equal(res[0], same[0])
    ev = acl_py.batch_norm(x, training=False)
    check(ev, x, None, None, None, None, training=False)


def test_save_invstd_is_the_parts_statistic():
    """Ascend 950 writes 1 / sqrt(var + eps); the other parts the variance itself."""
    x = make((4, 3, 8))[0]
    _, mean, second, _, _ = acl_py.batch_norm(x, eps=0.5)
    var = np.moveaxis(x.astype(np.float64), 1, 0).reshape(3, -1).var(axis=1)
    want = 1 / np.sqrt(var + 0.5) if part_of().npu_arch == 3510 else var
    assert np.allclose(second, want, rtol=1e-5)


def test_running_statistics_in_16_bit_and_saved_ones_in_any_float():
    x, w, b, rm, rv = make((3, 4, 6))
    rm16, rv16 = rm.astype(F16), rv.astype(F16)
    out = (None, np.empty(4, F16), np.empty(4, F32), None, None)
    res = acl_py.batch_norm(x, w, b, rm16, rv16, out=out)
    assert res[1] is out[1] and res[3] is rm16 and res[4] is rv16
    exp = reference.batch_norm(x, w, b, rm, rv, saved=saved_statistic(part_of()))
    assert np.allclose(rm16, exp[3], rtol=2e-3, atol=1e-4)
    assert np.allclose(rv16, exp[4], rtol=2e-3)
    assert np.allclose(res[1], exp[1], rtol=2e-3, atol=1e-3)


def test_empty_input_fills_save_mean_0_and_save_invstd_nan():
    rm, rv = np.full(4, 2, F32), np.full(4, 3, F32)
    out, mean, inv, rm_, rv_ = acl_py.batch_norm(np.zeros((0, 4, 3), F32), None, None, rm, rv)
    assert out.shape == (0, 4, 3) and mean.shape == inv.shape == (4,)
    assert (mean == 0).all() and np.isnan(inv).all()
    assert (rm == 2).all() and (rv == 3).all()   # the running statistics untouched


def _readonly(a):
    a = a.copy()
    a.flags.writeable = False
    return a


ERRORS = [
    (dict(input=[[1.0, 2.0]]), AclTypeError, "input"),
    (dict(input=np.ones((2, 4), np.float64)), AclTypeError, "input"),
    (dict(input=np.ones(4, F32)), AclArgumentError, "input"),
    (dict(input=np.ones((2, 4, 1, 1, 1), F32)), AclArgumentError, "input"),
    (dict(weight=np.ones(5, F32)), AclArgumentError, "weight"),
    (dict(bias=np.ones((2, 2), F32)), AclArgumentError, "bias"),
    (dict(running_mean=np.ones(3, F32)), AclArgumentError, "running_mean"),
    (dict(running_var=np.ones(4, np.int32)), AclTypeError, "running_var"),
    (dict(running_var=_readonly(np.ones(4, F32))), AclArgumentError, "running_var"),
    (dict(training=1), AclTypeError, "training"),
    (dict(momentum="fast"), AclTypeError, "momentum"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 4), F16), None, None, None, None)), AclTypeError,
     "out[0] (output)"),
    (dict(out=(None, np.empty(3, F32), None, None, None)), AclArgumentError,
     "out[1] (save_mean)"),
    (dict(out=(None, None, None, np.empty(4, F32), None)), AclArgumentError,
     "out[3] (running_mean_out)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, w, b, rm, rv = make((2, 4))
    case = dict(dict(input=x, weight=w, bias=b, running_mean=rm, running_var=rv), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormGetWorkspaceSize" not in emulator.call_counts()


def test_shared_running_statistics_are_refused(emulator):
    buf = np.ones(8, F32)
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm(np.ones((2, 4), F32), None, None, buf[:4], buf[2:6])
    assert ei.value.argument == "running_var"
    assert "aclnnBatchNormGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    x, w, _, _, _ = make((2, 4, 5))
    X, W = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(w[:3].copy())
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm(X, W)
    assert ei.value.argument == "weight"
    assert ei.value.code == 161002 and ei.value.call == "aclnnBatchNormGetWorkspaceSize"
    assert "weight shape [3] must be [C]" in ei.value.message


def test_rank_5_is_phase_ones_format_rule_on_device_tensors():
    X = acl_py.DeviceTensor.from_numpy(np.ones((2, 3, 2, 2, 2), F32))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm(X)
    assert ei.value.argument == "input" and ei.value.code == 161002
    assert "rank 5" in ei.value.message and "NCDHW" in ei.value.message


def test_operator_rules_surface_as_its_typed_error():
    x = np.ones((1,) * 9 + (2,), F32)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm(x)
    assert ei.value.argument == "input"


def test_plan_updates_the_running_statistics_at_every_run():
    x, w, b, rm, rv = make((4, 16, 24), F16)
    X, W, B, RM, RV = (acl_py.DeviceTensor.from_numpy(a) for a in (x, w, b, rm, rv))
    with acl_py.Stream() as s, acl_py.BatchNorm(X, W, B, RM, RV, momentum=0.5) as plan:
        # the device's phase-one workspace (FLOAT16 weight and bias cast to FLOAT, the TBE
        # chain's sums, or a kernel's 16 MiB; tests/test_emulator_workspace_size_bn.py states
        # its numbers), taken once for every run
        assert plan.mode == "repeatable" and plan.workspace_size > 0
        cur_m, cur_v = rm, rv
        for _ in range(3):
            plan.run(s)
            s.synchronize()
            exp = reference.batch_norm(x, w, b, cur_m, cur_v, True, 0.5,
                                       saved=saved_statistic(part_of()))
            check(plan.outputs, x, w, b, cur_m, cur_v, True, 0.5)
            cur_m, cur_v = exp[3], exp[4]
        assert plan.running_mean_out is RM
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in BATCH_NORM.params] == [
        "input", "weight", "bias", "runningMean", "runningVar", "training", "momentum", "eps",
        "output", "saveMean", "saveInvstd"]
    assert [a.py for a in BATCH_NORM.inputs] == [
        "input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps"]
    assert [o.py for o in BATCH_NORM.outputs] == [
        "output", "save_mean", "save_invstd", "running_mean_out", "running_var_out"]
    assert BATCH_NORM.smoke_cases
    for case in BATCH_NORM.smoke_cases:
        values = case[1]()
        ratios = BATCH_NORM.run_smoke_case(case)
        training, running = values[5], values[3] is not None
        want = (True, training, training, training and running, training and running)
        assert [r is not None for r in ratios] == list(want), (case[0], ratios)
        assert all(r <= 1 for r in ratios if r is not None), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8)
rm = np.zeros(6, np.float32); rv = np.ones(6, np.float32)
out, mean, inv, rm2, rv2 = acl_py.batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
e = reference.batch_norm(x, None, None, np.zeros(6), np.ones(6), True, 0.1, 1e-5)
assert np.allclose(out, e[0], rtol=1e-4, atol=1e-4) and np.allclose(mean, e[1], atol=1e-6)
assert rm2 is rm and np.allclose(rm, e[3], atol=1e-6) and np.allclose(rv, e[4], rtol=1e-5)
""")
