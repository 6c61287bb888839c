"""acl_py.add_rms_norm_dynamic_quant / acl_py.AddRmsNormDynamicQuant (aclnnAddRmsNormDynamicQuant
through the declarative operator layer) within one quantization step of the float64 reference
(the scales within the input dtype's tolerance, xOut within its dtype's rounding), y2 and
scale2 returned only with both smooth scales, its argument errors (typed, naming the argument
and carrying phase one's code, nothing leaked: the autouse leak check), its plan, and the CANN
path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).

Why one step: the reference quantizes the float64 value t / scale; the device multiplies the
float32 t by 127 / max (rounded; on Ascend 950 it divides t by its float32 scale) after a
float32 norm over a sum of squares in its own order, so a value within a float32 rounding of
a half may land on the other integer.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_RMS_NORM_DYNAMIC_QUANT

from _cann_path import run_on_cann_path
from _part_runs import only_where, other_parts, run_on_parts, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8 = np.dtype(np.int8)
A950 = acl_py.soc_name().startswith("Ascend950")
# The tests of the kernel's work are defined where it has one (Atlas A2/A3, Ascend 950: no kernel
# on the Atlas training and inference series, ops-nn norm/add_rms_norm_dynamic_quant/op_host/
# add_rms_norm_dynamic_quant_def.cpp); those of the argument checks before its lookup run on
# every part (the refusal there: test_declared_parts)
where_it_runs = only_where(runs_here(ADD_RMS_NORM_DYNAMIC_QUANT))
CALL = "aclnnAddRmsNormDynamicQuantGetWorkspaceSize"
# the scales: a float32 chain over 16-bit inputs and the float32 sum of squares; well within
# the input dtype's rounding of the values they are the maximum of
SCALE_RTOL = {F16: 2e-3, BF16: 1e-2}


def make(shape, dt=F16, smooth=2, seed=0):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    s1 = (0.5 + rng.random(n)).astype(dt) if smooth >= 1 else None
    s2 = (0.5 + rng.random(n)).astype(dt) if smooth >= 2 else None
    return x1, x2, g, s1, s2


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(res, args, eps=1e-6):
    y1, y2, x, s1, s2 = (None if r is None else host(r) for r in res)
    x1 = args[0]
    exp = reference.add_rms_norm_dynamic_quant(*args, epsilon=eps)
    assert y1.dtype == I8 and y1.shape == x1.shape
    assert np.max(np.abs(y1 - exp[0])) <= reference.QUANT_STEP
    assert np.abs(y1).max() == 127          # each row's largest value maps to 127
    assert s1.dtype == F32 and s1.shape == (x1.shape[:-1] or (1,))
    assert np.allclose(s1, exp[3], rtol=SCALE_RTOL[x1.dtype], atol=0)
    if args[3] is None or args[4] is None:
        assert y2 is None and s2 is None
    else:
        assert y2.dtype == I8 and np.max(np.abs(y2 - exp[1])) <= reference.QUANT_STEP
        assert np.allclose(s2, exp[4], rtol=SCALE_RTOL[x1.dtype], atol=0)
        assert len(np.unique(y2)) > 10
    # xOut: the sum rounded once to x1's dtype
    assert x.dtype == x1.dtype
    assert np.array_equal(x.astype(np.float64), exp[2].astype(x1.dtype).astype(np.float64))
    # dequantized, y1 is the norm (times smooth_scale1) within half a step per row
    t = exp[0] * exp[3][..., None]
    assert np.all(np.abs(y1 * s1[..., None] - t) <= 1.01 * s1[..., None])


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("smooth", [0, 1, 2], ids=["plain", "smooth1", "dual"])
def test_against_reference(path, dt, smooth):
    args = make((3, 5, 67), dt, smooth)
    call_args = args if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.add_rms_norm_dynamic_quant(*call_args, epsilon=1e-5)
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert all(isinstance(r, kind) for r in res if r is not None)
    check(res, args, 1e-5)


@where_it_runs
def test_long_rows_take_the_slice_d_kernel():
    args = make((2, 12300), BF16)
    check(acl_py.add_rms_norm_dynamic_quant(*args), args)


@where_it_runs
def test_out_given_and_strided_views():
    args = make((4, 6, 32))
    out = (np.empty((4, 6, 32), I8), np.empty((4, 6, 32), I8), np.empty((4, 6, 32), F16),
           np.empty((24,), F32), np.empty((24,), F32))
    res = acl_py.add_rms_norm_dynamic_quant(*args, out=out)
    assert all(r is o for r, o in zip(res, out))
    check((res[0], res[1], res[2], res[3].reshape(4, 6), res[4].reshape(4, 6)), args)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(args[0], 2, axis=2))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args[1:]]
    res = acl_py.add_rms_norm_dynamic_quant(big[:, :, ::2], *dev)
    check(res, args)


@where_it_runs
def test_without_both_smooth_scales_y2_and_scale2_are_none_and_out_entries_left_alone():
    args = make((2, 64), smooth=1)
    y2, s2 = np.full((1,), 55, I8), np.full((1,), 5.0, F32)
    res = acl_py.add_rms_norm_dynamic_quant(*args, out=(None, y2, None, None, s2))
    assert res[1] is None and res[4] is None and y2[0] == 55 and s2[0] == 5.0
    check(res, args)


ERRORS = [
    (dict(x1=[[1.0, 2.0]]), AclTypeError, "x1"),
    (dict(x1=np.ones((2, 4), F32), x2=np.ones((2, 4), F32), gamma=np.ones(4, F32),
          smooth_scale1=None, smooth_scale2=None), AclTypeError, "x1"),
    (dict(x2=np.ones((2, 4), BF16)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F16)), AclArgumentError, "x2"),
    (dict(gamma=np.ones(5, F16)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((1, 4), F16)), AclArgumentError, "gamma"),
    (dict(smooth_scale1=np.ones(3, F16)), AclArgumentError, "smooth_scale1"),
    (dict(smooth_scale2=np.ones(4, BF16)), AclTypeError, "smooth_scale2"),
    (dict(smooth_scale1=None), AclArgumentError, "smooth_scale2"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(out=(np.empty((2, 4), F16), None, None, None, None)), AclTypeError, "out[0] (y1)"),
    (dict(out=(None, None, np.empty((2, 5), F16), None, None)), AclArgumentError, "out[2] (x)"),
    (dict(out=(None, None, None, np.empty((2, 1), F32), None)), AclArgumentError,
     "out[3] (scale1)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    names = ("x1", "x2", "gamma", "smooth_scale1", "smooth_scale2")
    case = dict(dict(zip(names, make((2, 4)))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_rms_norm_dynamic_quant(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert CALL not in emulator.call_counts()


@pytest.mark.parametrize("name,value,code", [
    ("x2", np.ones((2, 5), F16), 561002),          # CheckShapeValid: the op_api's code
    ("gamma", np.ones(3, F16), 561002),
    ("smooth_scale1", np.ones(3, F16), 561002),
    ("x2", np.ones((2, 4), BF16), 161002),         # the docs' relation (stricter)
])
def test_device_refusal_names_the_argument_and_carries_the_code(name, value, code):
    names = ("x1", "x2", "gamma", "smooth_scale1", "smooth_scale2")
    dev = {k: acl_py.DeviceTensor.from_numpy(v) for k, v in zip(names, make((2, 4)))}
    dev[name] = acl_py.DeviceTensor.from_numpy(value)
    with pytest.raises((AclArgumentError, AclTypeError)) as ei:
        acl_py.add_rms_norm_dynamic_quant(**dev)
    assert ei.value.code == code and ei.value.call == CALL
    assert ei.value.argument == name


@where_it_runs
def test_operator_rules_surface_as_its_typed_error():
    """The tilings' rules (docs/emulator.md): Atlas A2/A3's epsilon above 0 (Ascend 950's
    tiling has none: 0 passes there), Ascend 950's x1 rank of at least 2."""
    with pytest.raises(AclError) as ei:
        if A950:
            acl_py.add_rms_norm_dynamic_quant(*make((4,)))
        else:
            acl_py.add_rms_norm_dynamic_quant(*make((2, 4)), epsilon=0.0)
    assert ei.value.code == 561002 and ei.value.call == CALL
    assert ("x1 rank 1" if A950 else "epsilon") in ei.value.message
    if A950:
        args = make((2, 64))
        check(acl_py.add_rms_norm_dynamic_quant(*args, epsilon=0.0), args, 0.0)
    with pytest.raises(AclError) as ei:
        acl_py.add_rms_norm_dynamic_quant(*make((1,) * 8 + (4,)))
    assert ei.value.code == 161002 and "rank 9" in ei.value.message


@where_it_runs
def test_plan_runs_repeatedly_on_changing_contents():
    args = make((8, 96))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with acl_py.Stream() as st, acl_py.AddRmsNormDynamicQuant(*dev, epsilon=1e-5) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_arndq.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        outs = (plan.y1, plan.y2, plan.x, plan.scale1, plan.scale2)
        for k in range(3):
            xk = (args[0].astype(F32) * (k + 1) - k).astype(F16)
            dev[0].buffer.copy_from_host(xk)
            assert plan.run(st) == outs
            st.synchronize()
            check(outs, (xk,) + args[1:], 1e-5)
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_RMS_NORM_DYNAMIC_QUANT.params] == [
        "x1", "x2", "gamma", "smoothScale1Optional", "smoothScale2Optional", "epsilon",
        "y1Out", "y2Out", "xOut", "scale1Out", "scale2Out"]
    assert [o.py for o in ADD_RMS_NORM_DYNAMIC_QUANT.outputs] == [
        "y1", "y2", "x", "scale1", "scale2"]


@where_it_runs
def test_smoke_cases_run():
    for case in ADD_RMS_NORM_DYNAMIC_QUANT.smoke_cases:
        assert all(r is None or r <= 1
                   for r in ADD_RMS_NORM_DYNAMIC_QUANT.run_smoke_case(case)), case[0]


@where_it_runs
@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float16).reshape(4, 16); x2 = np.ones((4, 16), np.float16)
g = np.full(16, 0.5, np.float16); s = np.linspace(0.5, 1.5, 16, dtype=np.float16)
y1, y2, x, s1, s2 = acl_py.add_rms_norm_dynamic_quant(x1, x2, g, s, s)
e = reference.add_rms_norm_dynamic_quant(x1, x2, g, s, s)
assert y1.dtype == np.int8 and np.abs(y1 - e[0]).max() <= 1 and np.abs(y2 - e[1]).max() <= 1
assert np.allclose(s1, e[3], rtol=2e-3)
""")


# (the parts without a kernel: the argument checks before its lookup)
test_on_other_parts = run_on_parts(other_parts(("Ascend910A", "Ascend310P3", "Ascend910_9391",
                                                "Ascend950PR_9599")),
                                   "reference or slice_d or argument_errors or refusal or "
                                   "operator_rules")
