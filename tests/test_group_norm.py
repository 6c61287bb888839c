"""acl_py.group_norm / acl_py.GroupNorm (aclnnGroupNorm through the declarative operator layer)
against the float64 reference for every dtype the vendor's docs allow, with and without gamma
and beta, its argument errors (typed, naming the argument, nothing leaked: the autouse leak
check), phase one's refusals on DeviceTensor calls, its plan, and the CANN path
(ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import GROUP_NORM

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = [F32, F16, BF16]


def make(shape, dt=F32, seed=0, affine=True):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    if not affine:
        return x, None, None
    g = (rng.standard_normal(shape[1]) * 0.5 + 1).astype(dt)
    b = (rng.standard_normal(shape[1]) * 0.5).astype(dt)
    return x, g, b


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def stats_written(x, group):
    """Whether the part writes mean/rstd for input ``x`` (Atlas inference parts' kernels do
    for some shapes only: the declaration's rule, checked against the emulator in
    tests/test_unwritten_outputs.py)."""
    n, c = x.shape[:2]
    why = GROUP_NORM.unwritten_outputs((x, None, None, n, c, math.prod(x.shape[2:]), group,
                                        1e-5))
    return why[1] is None


def check(results, x, g, b, group, eps=1e-5, stats=True):
    n, c, hw = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    exp = reference.group_norm(x, g, b, n, c, hw, group, eps)
    mag = reference.group_norm_error_scale(x, g, b, n, c, hw, group, eps)
    for got, e, m, name in zip(results, exp, mag, ("out", "mean", "rstd")):
        if name != "out" and not stats_written(x, group):
            assert got is None, name    # not written: the result says so
            continue
        got = host(got)
        assert got.dtype == x.dtype, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        if name != "out" and not stats:
            continue
        reference.assert_close(got, e, m, x.dtype, name)


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs(DTYPES), ids=lambda d: d.name)
def test_against_reference(path, dt):
    x, g, b = make((3, 8, 5, 7), dt)
    args = (x, g, b) if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                   for a in (x, g, b))
    res = acl_py.group_norm(args[0], 4, args[1], args[2], 1e-4)
    assert len(res) == 3
    why = GROUP_NORM.unwritten_outputs((x, g, b, 3, 8, 35, 4, 1e-4))
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               if w is None else r is None for r, w in zip(res, why))
    check(res, x, g, b, 4, 1e-4)
    if why[1] is None:
        assert host(res[1]).shape == (3, 4)   # mean/rstd as CANN writes them: [N, group]


@pytest.mark.parametrize("shape,group", [((4, 6), 3), ((2, 32, 16, 16), 32),
                                         ((1, 4, 1, 2, 1, 3, 1, 2), 2), ((2, 12, 1000), 1)])
def test_shapes_and_groups(shape, group):
    x, g, b = make(shape)
    check(acl_py.group_norm(x, group, g, b), x, g, b, group)


def test_without_gamma_and_beta():
    x, _, _ = make((2, 6, 9), affine=False)
    out, mean, rstd = acl_py.group_norm(x, 3)
    check((out, mean, rstd), x, None, None, 3)
    # ones and zeros given explicitly make the same bits
    same = acl_py.group_norm(x, 3, np.ones(6, F32), np.zeros(6, F32))
    assert np.array_equal(out, same[0])


def test_out_given_and_strided_views():
    x, g, b = make((4, 6, 32), F16)
    out = (np.empty((4, 6, 32), F16), np.empty((4, 3), F16), np.empty((4, 3), F16))
    res = acl_py.group_norm(x, 3, g, b, out=out)
    why = GROUP_NORM.unwritten_outputs((x, g, b, 4, 6, 32, 3, 1e-5))
    assert all(r is o if w is None else r is None for r, o, w in zip(res, out, why))
    check(res, x, g, b, 3)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(x, 2, axis=2))
    res = acl_py.group_norm(big[:, :, ::2], 3, acl_py.DeviceTensor.from_numpy(g),
                            acl_py.DeviceTensor.from_numpy(b))
    check(res, x, g, b, 3)


def test_empty_input_fills_mean_0_and_rstd_nan():
    out, mean, rstd = acl_py.group_norm(np.zeros((2, 4, 0), F32), 2)
    assert out.shape == (2, 4, 0) and mean.shape == rstd.shape == (2, 2)
    assert (mean == 0).all() and np.isnan(rstd).all()


ERRORS = [
    (dict(input=[[1.0, 2.0]]), AclTypeError, "input"),
    (dict(input=np.ones((2, 4), np.float64)), AclTypeError, "input"),
    (dict(input=np.ones(4, F32)), AclArgumentError, "input"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(beta=np.ones(5, F32)), AclArgumentError, "beta"),
    (dict(gamma=np.ones((2, 2), F32)), AclArgumentError, "gamma"),
    (dict(group=0), AclArgumentError, "group"),
    (dict(group=3), AclArgumentError, "group"),
    (dict(group=2.0), AclTypeError, "group"),
    (dict(group=True), AclTypeError, "group"),
    (dict(eps=0.0), AclArgumentError, "eps"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None)), AclArgumentError, "out[0] (out)"),
    (dict(out=(None, np.empty((2, 1), F32), None)), AclArgumentError, "out[1] (mean)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, g, b = make((2, 4))
    case = dict(dict(input=x, group=2, gamma=g, beta=b), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.group_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnGroupNormGetWorkspaceSize" not in emulator.call_counts()


@pytest.mark.parametrize("values,argument", [
    (lambda x: (x, None, None, 3, 4, 5, 2, 1e-5), "n"),
    (lambda x: (x, None, None, 2, 8, 5, 2, 1e-5), "c"),
    (lambda x: (x, None, None, 2, 4, 6, 2, 1e-5), "hxw"),
], ids=["n", "c", "hxw"])
def test_declared_sizes_must_describe_the_input(values, argument):
    """The declaration takes N, C, HxW as the C function does: each must be input's."""
    x, _, _ = make((2, 4, 5))
    with pytest.raises(AclArgumentError) as ei:
        GROUP_NORM.call(values(x))
    assert ei.value.argument == argument


def test_device_refusal_names_the_argument_and_carries_the_code():
    """A DeviceTensor call's argument rules are phase one's: its 161002 refusal, then the
    Python checks name the argument."""
    x, g, _ = make((2, 4, 5))
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g[:3].copy())
    with pytest.raises(AclArgumentError) as ei:
        acl_py.group_norm(X, 2, G)
    assert ei.value.argument == "gamma"
    assert ei.value.code == 161002 and ei.value.call == "aclnnGroupNormGetWorkspaceSize"
    assert "gamma shape [3] must be a vector of C = 4" in ei.value.message


def test_operator_rules_surface_as_its_typed_error():
    x = np.ones((1,) * 9 + (2,), F32)
    with pytest.raises(AclError) as ei:
        acl_py.group_norm(x, 1)
    assert ei.value.code == 161002 and ei.value.call == "aclnnGroupNormGetWorkspaceSize"
    assert "self rank 10 is not in [2, 8]" in ei.value.message


def test_out_of_another_dtype_is_refused_naming_the_entry():
    """An out= entry of another dtype than input's: refused before any C call on NumPy
    calls; on device tensors by phase one (161002), the entry then named."""
    x, g, b = make((2, 4))
    with pytest.raises(AclTypeError) as ei:
        acl_py.group_norm(x, 2, g, b, out=(None, np.empty((2, 2), F16), None))
    assert ei.value.argument == "out[1] (mean)"
    X = acl_py.DeviceTensor.from_numpy(x)
    with pytest.raises(AclTypeError) as ei:
        acl_py.group_norm(X, 2, out=(None, acl_py.DeviceTensor.empty((2, 2), F16), None))
    assert ei.value.argument == "out[1] (mean)" and ei.value.code == 161002
    assert "meanOut dtype FLOAT16 must be self's dtype FLOAT" in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    x, g, b = make((4, 16, 24), F16)
    X, G, B = (acl_py.DeviceTensor.from_numpy(a) for a in (x, g, b))
    with acl_py.Stream() as s, acl_py.GroupNorm(X, 4, G, B, 1e-5) as plan:
        # the device's workspace (GroupNormSilu's 16 MiB / 2 MiB, or the training parts'
        # intermediates), taken from the plan's pool
        assert plan.mode == "repeatable" and plan.workspace_size > 0
        for k in range(3):
            xk = (x.astype(F32) * (k + 1) - k).astype(F16)
            X.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.out, plan.mean, plan.rstd)
            s.synchronize()
            check(plan.outputs, xk, g, b, 4, 1e-5)
    assert plan.closed
    if stats_written(x, 4):
        assert plan.mean.to_numpy().shape == (4, 4)


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in GROUP_NORM.params] == ["self", "gamma", "beta", "N", "C", "HxW",
                                                   "group", "eps", "out", "meanOut", "rstdOut"]
    assert [a.py for a in GROUP_NORM.inputs] == ["input", "gamma", "beta", "n", "c", "hxw",
                                                 "group", "eps"]
    assert [o.py for o in GROUP_NORM.outputs] == ["out", "mean", "rstd"]
    assert GROUP_NORM.runs_on("Ascend910A") and GROUP_NORM.runs_on("Ascend310P3")
    assert GROUP_NORM.smoke_cases
    for case in GROUP_NORM.smoke_cases:
        ratios = GROUP_NORM.run_smoke_case(case)
        why = GROUP_NORM.unwritten_outputs(case[1]())
        assert len(ratios) == 3 and all(r <= 1 if w is None else r is None
                                        for r, w in zip(ratios, why)), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8)
g = np.full(6, 0.5, np.float32); b = np.arange(6, dtype=np.float32)
out, mean, rstd = acl_py.group_norm(x, 3, g, b)
e = reference.group_norm(x, g, b, 2, 6, 8, 3)
assert np.allclose(out, e[0], rtol=1e-5, atol=1e-5)
assert np.allclose(mean, e[1], rtol=1e-5, atol=1e-6) and np.allclose(rstd, e[2], rtol=1e-5)
""")
