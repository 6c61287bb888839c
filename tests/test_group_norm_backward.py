"""acl_py.group_norm_backward / acl_py.GroupNormBackward (aclnnGroupNormBackward through the
declarative operator layer) against the float64 reference for each dtype the part takes, with
and without gamma, each output mask, its argument errors (typed, naming the argument, nothing
leaked: the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). Every part runs it (a kernel on Atlas A2/A3 and Ascend 950, a composite
of L0 operators elsewhere), so the file runs whole on each.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import (AclArgumentError, AclError, AclTypeError,
                           OperatorInvalidParameterError)
from acl_py.ops import GROUP_NORM_BACKWARD

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, other_parts, run_on_parts

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, group, dt=F32, affine=True, seed=0):
    """grad_out, input, mean, rstd (those of input, in dt), gamma or None."""
    rng = np.random.default_rng(seed)
    n, c, hw = shape[0], shape[1], math.prod(shape[2:])
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    dy = rng.standard_normal(shape).astype(dt)
    _, mean, rstd = reference.group_norm(x, None, None, n, c, hw, group)
    g = (rng.standard_normal(c) * 0.5 + 1).astype(dt) if affine else None
    return dy, x, mean.astype(dt), rstd.astype(dt), g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, dy, x, mean, rstd, g, group, mask=(True, True, True)):
    n, c, hw = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    args = (dy, x, mean, rstd, g, n, c, hw, group, mask)
    exp = reference.group_norm_backward(*args)
    mag = reference.group_norm_backward_error_scale(*args)
    for got, e, m, odt, name in zip(results, exp, mag, (dy.dtype, mean.dtype, mean.dtype),
                                    ("grad_input", "grad_gamma", "grad_beta")):
        assert (got is None) == (e is None), name
        if got is None:
            continue
        got = host(got)
        assert got.dtype == odt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, dy.dtype, name)


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("affine", [True, False], ids=["gamma", "no_gamma"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, affine, dt):
    vals = make((3, 12, 4, 5), 4, dt, affine)
    args = vals if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.group_norm_backward(*args[:4], 4, args[4])
    assert len(res) == 3
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, *vals, 4)


@pytest.mark.parametrize("shape,group", [((2, 6), 3), ((1, 32, 7, 7), 8), ((4, 8, 1, 1), 8),
                                         ((5, 16, 130), 2), ((2, 3, 2, 2, 2), 1)], ids=str)
def test_shapes_and_groups(shape, group):
    vals = make(shape, group, F32)
    check(acl_py.group_norm_backward(*vals[:4], group, vals[4]), *vals, group)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, True),
                                  (False, False, False)], ids=str)
def test_output_mask(mask):
    vals = make((2, 8, 6), 4, F16)
    res = acl_py.group_norm_backward(*vals[:4], 4, vals[4], mask)
    assert [r is not None for r in res] == list(mask)
    check(res, *vals, 4, mask=mask)


def test_out_given():
    vals = make((2, 8, 6), 2, F32)
    gi, gg, gb = np.full((2, 8, 6), 7, F32), np.full(8, 7, F32), np.full(8, 7, F32)
    res = acl_py.group_norm_backward(*vals[:4], 2, vals[4], out=(gi, gg, gb))
    assert res[0] is gi and res[1] is gg and res[2] is gb
    check(res, *vals, 2)


def test_float32_statistics_with_16_bit_data():
    """Ascend 950 takes float32 mean, rstd and gamma with float16 data (its op_api's mixed
    precision), grad_gamma and grad_beta then float32; the other parts refuse in phase one
    (161002), its message naming mean (the Python checks take what some part takes)."""
    dy, x, mean, rstd, g = make((2, 8, 6), 2, F16)
    mean, rstd, g = mean.astype(F32), rstd.astype(F32), g.astype(F32)
    if acl_py.soc_name().startswith("Ascend950"):
        res = acl_py.group_norm_backward(dy, x, mean, rstd, 2, g)
        check(res, dy, x, mean, rstd, g, 2)
        return
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.group_norm_backward(dy, x, mean, rstd, 2, g)
    assert ei.value.code == 161002 and "mean dtype FLOAT must be FLOAT16" in ei.value.message


@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_input_leaves_or_zeroes_the_parameter_gradients(path):
    """N 0: nothing runs off Ascend 950 (the result holds None for grad_gamma and grad_beta,
    given outputs keep their contents); Ascend 950's empty-tensor kernel zeroes them."""
    x = np.zeros((0, 4, 3), F32)
    stats = np.zeros((0, 2), F32)
    vals = (x, x, stats, stats, np.ones(4, F32))
    out = (None, np.full(4, 5, F32), np.full(4, 5, F32))
    if path == "device":
        vals = tuple(acl_py.DeviceTensor.from_numpy(v) for v in vals)
        out = tuple(None if o is None else acl_py.DeviceTensor.from_numpy(o) for o in out)
    res = acl_py.group_norm_backward(*vals[:4], 2, vals[4], out=out)
    assert host(res[0]).shape == (0, 4, 3)
    on_950 = acl_py.soc_name().startswith("Ascend950")
    assert (res[1] is out[1] and res[2] is out[2]) if on_950 else res[1:] == (None, None)
    want = 0 if on_950 else 5
    assert (host(out[1]) == want).all() and (host(out[2]) == want).all()


ERRORS = [
    (dict(input=np.ones((2, 4, 3), F16)), AclTypeError, "input"),
    (dict(rstd=np.ones((2, 2), F16)), AclTypeError, "rstd"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(mean=[[0.0, 0.0]]), AclTypeError, "mean"),
    (dict(input=np.ones(24, F32), grad_out=np.ones(24, F32)), AclArgumentError, "input"),
    (dict(grad_out=np.ones((2, 4, 4), F32)), AclArgumentError, "grad_out"),
    (dict(mean=np.ones((2, 1), F32)), AclArgumentError, "mean"),
    (dict(rstd=np.ones((3, 2), F32)), AclArgumentError, "rstd"),
    (dict(gamma=np.ones(3, F32)), AclArgumentError, "gamma"),
    (dict(group=0), AclArgumentError, "group"),
    (dict(group=3), AclArgumentError, "group"),
    (dict(output_mask=(True, True)), AclArgumentError, "output_mask"),
    (dict(output_mask=(1, 1, 1)), AclTypeError, "output_mask[0]"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 12), F32), None, None)), AclArgumentError, "out[0] (grad_input)"),
    (dict(out=(None, np.empty(4, F16), None)), AclTypeError, "out[1] (grad_gamma)"),
    (dict(out=(None, None, np.empty(5, F32))), AclArgumentError, "out[2] (grad_beta)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    dy, x, mean, rstd, g = make((2, 4, 3), 2)
    case = dict(dict(grad_out=dy, input=x, mean=mean, rstd=rstd, group=2, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.group_norm_backward(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnGroupNormBackwardGetWorkspaceSize" not in emulator.call_counts()


@pytest.mark.parametrize("what", ["mean", "gamma", "group"])
def test_device_refusal_names_the_argument_and_carries_the_code(what):
    """Phase one's 161002 on a DeviceTensor call: the Python checks then name the
    argument."""
    dy, x, mean, rstd, g = make((2, 4, 3), 2)
    D = acl_py.DeviceTensor.from_numpy
    M = D(np.zeros((2, 1), F32)) if what == "mean" else D(mean)
    G = D(g[:3].copy()) if what == "gamma" else D(g)
    group = 3 if what == "group" else 2
    with pytest.raises(AclArgumentError) as ei:
        acl_py.group_norm_backward(D(dy), D(x), M, D(rstd), group, G)
    assert ei.value.argument == what
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnGroupNormBackwardGetWorkspaceSize"


def test_operator_rules_surface_as_its_typed_error():
    """A rule that is the part's own (no BF16 off Atlas A2/A3 and Ascend 950; on those, C /
    group at most 8000: CheckAttr's 161002 on Atlas A2/A3, the GroupNormGrad tiling's 561103
    on Ascend 950): phase one's typed error with its code and message."""
    code = 161002
    if acl_py.supports_bfloat16():
        vals = make((1, 8001, 1), 1, F32)
        words = "C / group = 8001 must be at most 8000"
        if acl_py.soc_name().startswith("Ascend950"):
            code = 561103
    else:
        vals = make((2, 4, 3), 2, BF16)
        words = "gradOut dtype BF16 is not supported on"
    with pytest.raises(AclError) as ei:
        acl_py.group_norm_backward(*vals[:4], 1 if vals[1].shape[1] == 8001 else 2, vals[4])
    assert ei.value.code == code
    assert ei.value.call == "aclnnGroupNormBackwardGetWorkspaceSize"
    assert words in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((4, 16, 9), 4, F16)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.GroupNormBackward(*devs[:4], 4, devs[4]) as plan:
        assert plan.mode == "repeatable"
        if not acl_py.soc_name().startswith(("Ascend910A", "Ascend310P")):
            assert plan.workspace_size > 0  # GroupNormGrad's tiling (A2/A3, Ascend 950)
        for k in range(3):
            dyk = (vals[0].astype(F32) * (k + 1)).astype(F16)
            devs[0].buffer.copy_from_host(dyk)
            assert plan.run(s) == (plan.grad_input, plan.grad_gamma, plan.grad_beta)
            s.synchronize()
            check(plan.outputs, dyk, *vals[1:], 4)
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in GROUP_NORM_BACKWARD.params] == [
        "gradOut", "input", "mean", "rstd", "gamma", "N", "C", "HxW", "group", "outputMask",
        "gradInput", "gradGammaOut", "gradBetaOut"]
    assert [o.py for o in GROUP_NORM_BACKWARD.outputs] == [
        "grad_input", "grad_gamma", "grad_beta"]
    for soc in ("Ascend910A", "Ascend310P3", "Ascend910B2", "Ascend910_9391",
                "Ascend950PR_9599"):
        assert GROUP_NORM_BACKWARD.runs_on(soc)
    assert GROUP_NORM_BACKWARD.smoke_cases
    for case in GROUP_NORM_BACKWARD.smoke_cases:
        ratios = GROUP_NORM_BACKWARD.run_smoke_case(case)
        assert len(ratios) == 3 and all(r <= 1 for r in ratios), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 8, 6); dy = np.sin(3 * x)
_, mean, rstd = reference.group_norm(x, None, None, 2, 8, 6, 4)
mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
g = np.linspace(0.5, 1.5, 8, dtype=np.float32)
gi, gg, gb = acl_py.group_norm_backward(dy, x, mean, rstd, 4, g)
e = reference.group_norm_backward(dy, x, mean, rstd, g, 2, 8, 6, 4)
assert np.allclose(gi, e[0], rtol=1e-4, atol=1e-5) and np.allclose(gg, e[1], atol=1e-4)
assert np.allclose(gb, e[2], atol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
