"""acl_py.group_norm_silu / group_norm_silu_v2 and their plans (aclnnGroupNormSilu and
aclnnGroupNormSiluV2 through the declarative operator layer) against the float64 reference for
every dtype, with float32 gamma/beta and without them, with and without the activation, their
argument errors (typed, naming the argument, nothing leaked: the autouse leak check), phase
one's refusals on DeviceTensor calls, the parts without a kernel, the plans, and the CANN path
(ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import GROUP_NORM_SILU, GROUP_NORM_SILU_V2

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, dt=F32, seed=0, affine=True, affine_dt=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    if not affine:
        return x, None, None
    adt = affine_dt or dt
    g = (rng.standard_normal(shape[1]) * 0.5 + 1).astype(adt)
    b = (rng.standard_normal(shape[1]) * 0.5).astype(adt)
    return x, g, b


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x, g, b, group, eps=1e-5, silu=True, declared=GROUP_NORM_SILU):
    exp = reference.group_norm_silu(x, g, b, group, eps, silu)
    mag = reference.group_norm_silu_error_scale(x, g, b, group, eps, silu)
    values = (x, g, b, group, eps) + ((silu,) if declared is GROUP_NORM_SILU_V2 else ())
    why = declared.unwritten_outputs(values)
    for got, e, m, w, name in zip(results, exp, mag, why, ("out", "mean", "rstd")):
        if w is not None:
            assert got is None, name
            continue
        got = host(got)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x.dtype, name)


@only_where(runs_here(GROUP_NORM_SILU))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_against_reference(path, dt):
    x, g, b = make((3, 8, 5, 7), dt)
    args = (x, g, b) if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                   for a in (x, g, b))
    res = acl_py.group_norm_silu(args[0], 4, args[1], args[2], 1e-4)
    assert all(r is None or isinstance(r, np.ndarray if path == "numpy" else
                                       acl_py.DeviceTensor) for r in res)
    assert host(res[0]).dtype == dt
    check(res, x, g, b, 4, 1e-4)


@only_where(runs_here(GROUP_NORM_SILU))
@pytest.mark.parametrize("dt", bf16_where_it_runs([F16, BF16]), ids=lambda d: d.name)
def test_float32_gamma_and_beta(dt):
    x, g, b = make((2, 16, 9), dt, affine_dt=F32)
    out, mean, rstd = acl_py.group_norm_silu(x, 4, g, b)
    check((out, mean, rstd), x, g, b, 4)
    if mean is not None:   # float32 statistics on Ascend 950, input's dtype elsewhere
        want = F32 if acl_py.ops.part_of().npu_arch == 3510 else dt
        assert mean.dtype == want and rstd.dtype == want


@only_where(runs_here(GROUP_NORM_SILU))
@pytest.mark.parametrize("silu", [True, False])
def test_v2_activation_flag(silu):
    x, g, b = make((2, 6, 9))
    res = acl_py.group_norm_silu_v2(x, 3, g, b, activate_silu=silu)
    check(res, x, g, b, 3, silu=silu, declared=GROUP_NORM_SILU_V2)
    if silu:
        assert np.array_equal(res[0], acl_py.group_norm_silu(x, 3, g, b)[0])
    else:
        assert np.array_equal(res[0], acl_py.group_norm(x, 3, g, b)[0])


@only_where(runs_here(GROUP_NORM_SILU))
def test_without_gamma_and_beta():
    x, _, _ = make((2, 6, 9), affine=False)
    res = acl_py.group_norm_silu(x, 3)
    check(res, x, None, None, 3)


ERRORS = [
    (dict(input=np.ones((2, 4), np.float64)), AclTypeError, "input"),
    (dict(input=np.ones(4, F32)), AclArgumentError, "input"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(input=np.ones((2, 4), F16), gamma=np.ones(4, F32), beta=np.ones(4, F16)),
     AclTypeError, "beta"),
    (dict(beta=np.ones(5, F32)), AclArgumentError, "beta"),
    (dict(group=0), AclArgumentError, "group"),
    (dict(group=3), AclArgumentError, "group"),
    (dict(eps=0.0), AclArgumentError, "eps"),
    (dict(out=(None, np.empty((2, 1), F32), None)), AclArgumentError, "out[1] (mean)"),
    (dict(out=(None, None, np.empty((2, 2), F16))), AclTypeError, "out[2] (rstd)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, g, b = make((2, 4))
    case = dict(dict(input=x, group=2, gamma=g, beta=b), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.group_norm_silu(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnGroupNormSiluGetWorkspaceSize" not in emulator.call_counts()


# Ascend 950 passes the absent beta on (test_emulator_group_norm_silu's
# test_no_beta_adds_nothing_on_ascend_950): there the case is no test
@only_where(runs_here(GROUP_NORM_SILU) and not acl_py.soc_name().startswith("Ascend950"))
def test_float32_gamma_without_beta_is_named_off_ascend_950():
    """Off Ascend 950 an absent beta is made of input's dtype and no kernel takes float32
    gamma with it: the NumPy call names beta before any C call; on device tensors phase one's
    561103 comes first, then the check names beta."""
    x, g, _ = make((2, 4, 3), F16, affine_dt=F32)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.group_norm_silu(x, 2, g)
    assert ei.value.argument == "beta"
    with pytest.raises(AclArgumentError) as ei:
        acl_py.group_norm_silu(acl_py.DeviceTensor.from_numpy(x), 2,
                               acl_py.DeviceTensor.from_numpy(g))
    assert ei.value.argument == "beta" and ei.value.code == 561103
    assert "one dtype size" in ei.value.message


def test_device_refusal_names_the_argument_and_carries_the_code():
    x, g, _ = make((2, 4, 5))
    X, G = acl_py.DeviceTensor.from_numpy(x), acl_py.DeviceTensor.from_numpy(g[:3].copy())
    with pytest.raises(AclArgumentError) as ei:
        acl_py.group_norm_silu_v2(X, 2, G, activate_silu=False)
    assert ei.value.argument == "gamma"
    assert ei.value.code == 161002 and ei.value.call == "aclnnGroupNormSiluV2GetWorkspaceSize"
    assert "gamma shape [3] must be a vector of C = 4" in ei.value.message


def test_operator_rules_surface_as_its_typed_error():
    with pytest.raises(AclError) as ei:
        acl_py.group_norm_silu(np.ones((1,) * 9 + (2,), F32), 1)
    assert ei.value.code == 161002 and ei.value.call == "aclnnGroupNormSiluGetWorkspaceSize"
    assert "self rank 10 is not in [2, 8]" in ei.value.message


@only_where(runs_here(GROUP_NORM_SILU))
@pytest.mark.parametrize("plan,args", [(acl_py.GroupNormSilu, ()),
                                       (acl_py.GroupNormSiluV2, (False,))], ids=["v1", "v2"])
def test_plan_runs_repeatedly_on_changing_contents(plan, args):
    x, g, b = make((4, 16, 24), F16)
    X, G, B = (acl_py.DeviceTensor.from_numpy(a) for a in (x, g, b))
    silu = not args
    with acl_py.Stream() as s, plan(X, 4, G, B, 1e-5, *args) as p:
        assert p.mode == "repeatable" and p.workspace_size > 0  # the kernel's 16 / 2 MiB
        for k in range(2):
            xk = (x.astype(F32) * (k + 1) - k).astype(F16)
            X.buffer.copy_from_host(xk)
            p.run(s)
            s.synchronize()
            check(p.outputs, xk, g, b, 4, 1e-5, silu=silu, declared=p.declared)


@only_where(runs_here(GROUP_NORM_SILU))
def test_declarations_describe_the_c_prototypes():
    assert [p.name for p in GROUP_NORM_SILU.params] == ["self", "gamma", "beta", "group", "eps",
                                                        "out", "meanOut", "rstdOut"]
    assert [p.name for p in GROUP_NORM_SILU_V2.params] == [
        "self", "gamma", "beta", "group", "eps", "activateSilu", "out", "meanOut", "rstdOut"]
    assert [a.py for a in GROUP_NORM_SILU_V2.inputs] == ["input", "gamma", "beta", "group",
                                                         "eps", "activate_silu"]
    assert [o.py for o in GROUP_NORM_SILU.outputs] == ["out", "mean", "rstd"]
    for d in (GROUP_NORM_SILU, GROUP_NORM_SILU_V2):
        assert not d.runs_on("Ascend910A") and not d.runs_on("Ascend910ProB")
        assert d.runs_on("Ascend310P3") and d.runs_on("Ascend950PR_9599")
        for case in d.smoke_cases:
            ratios = d.run_smoke_case(case)
            why = d.unwritten_outputs(case[1]())
            assert all(r <= 1 if w is None else r is None
                       for r, w in zip(ratios, why)), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8)
g = np.full(6, 0.5, np.float32); b = np.arange(6, dtype=np.float32)
out, mean, rstd = acl_py.group_norm_silu_v2(x, 3, g, b, activate_silu=True)
e = reference.group_norm_silu(x, g, b, 3)
assert np.allclose(out, e[0], rtol=1e-5, atol=1e-5)
assert np.allclose(mean, e[1], rtol=1e-5, atol=1e-6) and np.allclose(rstd, e[2], rtol=1e-5)
""")
