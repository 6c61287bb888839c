"""acl_py.batch_norm_backward / acl_py.BatchNormBackward (aclnnBatchNormBackward through the
declarative operator layer) against the float64 reference for each dtype the part takes, in
training and inference, each output mask, chained after acl_py.batch_norm on the same part
(save_invstd as that part writes it), its argument errors (typed, naming the argument, nothing
leaked: the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). Every part runs it, so the file runs whole on each.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM_BACKWARD, part_of
from acl_py.ops.batch_norm import saved_statistic

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, other_parts, run_on_parts

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
ALL = (True, True, True)


def make(shape, dt=F32, affine=True, seed=0):
    """grad_out, input, weight (dt), running_mean, running_var, save_mean, save_invstd
    (float32; the saved ones input's own statistics as this part's batch_norm saves them)."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    dy = rng.standard_normal(shape).astype(dt)
    w = (rng.standard_normal(c) * 0.25 + 1).astype(dt) if affine else None
    rm = (rng.standard_normal(c) * 0.1 + 0.5).astype(F32)
    rv = (rng.random(c) + 0.5).astype(F32)
    _, sm, si, _, _ = reference.batch_norm(x, saved=saved_statistic(part_of()))
    return dy, x, w, rm, rv, sm.astype(F32), si.astype(F32)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, dy, x, w, rm, rv, sm, si, training=True, eps=1e-5, mask=ALL):
    args = (dy, x, w, rm, rv, sm, si, training, eps, mask)
    saved = saved_statistic(part_of())
    exp = reference.batch_norm_backward(*args, saved=saved)
    mag = reference.batch_norm_backward_error_scale(*args, saved=saved)
    pdt = F32 if w is None else w.dtype
    for got, e, m, odt, name in zip(results, exp, mag, (dy.dtype, pdt, pdt),
                                    ("grad_input", "grad_weight", "grad_bias")):
        assert (got is None) == (e is None), name
        if got is None:
            continue
        got = host(got)
        assert got.dtype == odt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, dy.dtype, name)


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, training, dt):
    vals = make((3, 6, 4, 5), dt)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.batch_norm_backward(*args, training=training)
    assert len(res) == 3
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, *vals, training=training)


# Ascend 950 takes rank 5 as NCDHW/NDHWC only (acl-py's tensors are ND; the refusal:
# test_emulator_batch_norm_backward): there a rank-5 case could never run, so it is no test
SHAPES = [s for s in [(16, 3), (2, 5, 7), (1, 70, 1), (2, 3, 2, 2, 2), (2, 3, 2, 1, 2, 3, 1)]
          if len(s) != 5 or not acl_py.soc_name().startswith("Ascend950")]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shapes(shape):
    vals = make(shape)
    for training in (True, False):
        check(acl_py.batch_norm_backward(*vals, training=training), *vals, training=training)


def test_chained_after_batch_norm_on_the_same_part():
    """The forward's save_mean/save_invstd as this part writes them feed the backward: the
    gradients are the true ones (the reference from the batch's exact statistics)."""
    dy, x, w = make((4, 5, 6))[:3]
    _, sm, si, _, _ = acl_py.batch_norm(x, w, None, eps=1e-3)
    res = acl_py.batch_norm_backward(dy, x, w, None, None, sm, si, eps=1e-3)
    mean = np.moveaxis(x.astype(np.float64), 1, 0).reshape(5, -1).mean(axis=1)
    var = np.moveaxis(x.astype(np.float64), 1, 0).reshape(5, -1).var(axis=1)
    exact = reference.batch_norm_backward(dy, x, w, None, None, mean, 1 / np.sqrt(var + 1e-3),
                                          True, 1e-3)
    for got, e in zip(res, exact):
        assert np.allclose(got, e, rtol=1e-4, atol=1e-4)


def test_missing_vectors_take_ones_and_zeros():
    dy, x = make((3, 4, 5))[:2]
    for training in (True, False):
        res = acl_py.batch_norm_backward(dy, x, training=training)
        check(res, dy, x, None, None, None, None, None, training=training)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, True),
                                  (False, False, False)], ids=str)
def test_output_mask(mask):
    vals = make((2, 8, 6), F16)
    res = acl_py.batch_norm_backward(*vals, output_mask=mask)
    assert [r is not None for r in res] == list(mask)
    check(res, *vals, mask=mask)


def test_out_given():
    vals = make((2, 8, 6))
    gi, gw, gb = np.full((2, 8, 6), 7, F32), np.full(8, 7, F32), np.full(8, 7, F32)
    res = acl_py.batch_norm_backward(*vals, out=(gi, gw, gb))
    assert res[0] is gi and res[1] is gw and res[2] is gb
    check(res, *vals)


def test_saved_statistics_may_be_empty_in_inference():
    dy, x, w, rm, rv = make((2, 4, 3))[:5]
    e = np.empty(0, F32)
    res = acl_py.batch_norm_backward(dy, x, w, rm, rv, e, e, training=False)
    check(res, dy, x, w, rm, rv, None, None, training=False)


@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_input_writes_nothing(path):
    """N 0: the op_api returns before any check or kernel: grad_weight and grad_bias are None
    in the result and given ones keep their contents."""
    x = np.zeros((0, 4, 3), F32)
    vals = (x, x)
    out = (None, np.full(4, 5, F32), np.full(4, 5, F32))
    if path == "device":
        vals = tuple(acl_py.DeviceTensor.from_numpy(v) for v in vals)
        out = tuple(None if o is None else acl_py.DeviceTensor.from_numpy(o) for o in out)
    res = acl_py.batch_norm_backward(*vals, out=out)
    assert host(res[0]).shape == (0, 4, 3) and res[1:] == (None, None)
    assert (host(out[1]) == 5).all() and (host(out[2]) == 5).all()


ERRORS = [
    (dict(input=np.ones((2, 4, 3), F16)), AclTypeError, "input"),
    (dict(weight=np.ones(4, np.int32)), AclTypeError, "weight"),
    (dict(save_mean=[0.0] * 4), AclTypeError, "save_mean"),
    (dict(input=np.ones(24, F32), grad_out=np.ones(24, F32)), AclArgumentError, "input"),
    (dict(grad_out=np.ones((2, 4, 4), F32)), AclArgumentError, "grad_out"),
    (dict(weight=np.ones(3, F32)), AclArgumentError, "weight"),
    (dict(running_var=np.ones((4, 1), F32)), AclArgumentError, "running_var"),
    (dict(save_invstd=np.ones(5, F32)), AclArgumentError, "save_invstd"),
    (dict(save_mean=np.ones(0, F32)), AclArgumentError, "save_mean"),
    (dict(output_mask=(True, True)), AclArgumentError, "output_mask"),
    (dict(output_mask=(1, 1, 1)), AclTypeError, "output_mask[0]"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 12), F32), None, None)), AclArgumentError, "out[0] (grad_input)"),
    (dict(out=(np.empty((2, 4, 3), F16), None, None)), AclTypeError, "out[0] (grad_input)"),
    (dict(out=(None, None, np.empty(5, F32))), AclArgumentError, "out[2] (grad_bias)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    dy, x, w, rm, rv, sm, si = make((2, 4, 3))
    case = dict(dict(grad_out=dy, input=x, weight=w, running_mean=rm, running_var=rv,
                     save_mean=sm, save_invstd=si), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_backward(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormBackwardGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    dy, x, w = make((2, 4, 5))[:3]
    D = acl_py.DeviceTensor.from_numpy
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_backward(D(dy), D(x), D(w[:3].copy()))
    assert ei.value.argument == "weight"
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormBackwardGetWorkspaceSize"
    assert "weight shape [3] must be [C]" in ei.value.message


def test_operator_rules_surface_as_its_typed_error():
    """A rule that is the part's own: no BF16 off Atlas A2/A3 and Ascend 950; on Ascend 950 a
    float16 weight beside float32 data (RegbaseCheckDtypeSame), which Atlas A2/A3 take (their
    op_api checks each dtype on its own)."""
    dy, x, w, rm, rv, sm, si = make((2, 4, 3))
    w16 = w.astype(F16)
    if part_of().npu_arch == 2201:
        res = acl_py.batch_norm_backward(dy, x, w16, rm, rv, sm, si)
        check(res, dy, x, w16, rm, rv, sm, si)
        return
    if part_of().npu_arch == 3510:
        args, words = (dy, x, w16), "weight dtype FLOAT16 must be FLOAT or gradOut's"
    else:
        args, words = make((2, 4, 3), BF16)[:2], "gradOut dtype BF16 is not supported on"
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_backward(*args)
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormBackwardGetWorkspaceSize"
    assert words in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((4, 16, 9), F16)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.BatchNormBackward(*devs) as plan:
        # the device's phase-one workspace (FLOAT16 vectors cast to FLOAT, or a kernel's 16 MiB;
        # tests/test_emulator_workspace_size_bn.py states its numbers), taken once for every run
        assert plan.mode == "repeatable" and plan.workspace_size > 0
        for k in range(3):
            dyk = (vals[0].astype(F32) * (k + 1)).astype(F16)
            devs[0].buffer.copy_from_host(dyk)
            assert plan.run(s) == (plan.grad_input, plan.grad_weight, plan.grad_bias)
            s.synchronize()
            check(plan.outputs, dyk, *vals[1:])
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in BATCH_NORM_BACKWARD.params] == [
        "gradOut", "input", "weight", "runningMean", "runningVar", "saveMean", "saveInvstd",
        "training", "eps", "outputMask", "gradInput", "gradWeight", "gradBias"]
    assert [a.py for a in BATCH_NORM_BACKWARD.inputs] == [
        "grad_out", "input", "weight", "running_mean", "running_var", "save_mean",
        "save_invstd", "training", "eps", "output_mask"]
    assert [o.py for o in BATCH_NORM_BACKWARD.outputs] == [
        "grad_input", "grad_weight", "grad_bias"]
    assert BATCH_NORM_BACKWARD.smoke_cases
    for case in BATCH_NORM_BACKWARD.smoke_cases:
        mask = case[1]()[-1]
        ratios = BATCH_NORM_BACKWARD.run_smoke_case(case)
        assert [r is not None for r in ratios] == list(mask), (case[0], ratios)
        assert all(r <= 1 for r in ratios if r is not None), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8); dy = np.sin(3 * x)
w = np.linspace(0.5, 1.5, 6, dtype=np.float32)
rm = np.full(6, 0.25, np.float32); rv = np.full(6, 2.0, np.float32)
gi, gw, gb = acl_py.batch_norm_backward(dy, x, w, rm, rv, None, None, False, 1e-5)
e = reference.batch_norm_backward(dy, x, w, rm, rv, None, None, False, 1e-5)
assert np.allclose(gi, e[0], rtol=1e-5, atol=1e-6) and np.allclose(gw, e[1], atol=1e-4)
assert np.allclose(gb, e[2], atol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
