"""acl_py.add_layer_norm_quant / acl_py.AddLayerNormQuant (aclnnAddLayerNormQuant through the
declarative operator layer): on Ascend 950, static and dynamic mode, within one quantization
step of the float64 reference (xOut its dtype's rounding of the sum; the dynamic out scales
within float32 rounding), y2, x and the out scales returned only where written, rows long
enough for the Welford kernels, out= entries, its argument errors (typed,
naming the argument and carrying phase one's code, nothing leaked: the autouse leak check),
its plan, its smoke cases and the CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann);
on every other part the op_api's refusal (161002) as an AclError.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_LAYER_NORM_QUANT

from _cann_path import run_on_cann_path
from _part_runs import only_where, other_parts, run_on_parts, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8 = np.dtype(np.int8)
CALL = "aclnnAddLayerNormQuantGetWorkspaceSize"
NAMES = ("x1", "x2", "gamma", "beta", "bias", "scales1", "scales2", "zero_points1",
         "zero_points2")
# the operator's cases exist only where it has a kernel (Ascend 950: the op_api refuses every
# other arch, aclnn_add_layer_norm_quant.cpp IsRegbase); elsewhere the refusal is the test
on_950 = only_where(runs_here(ADD_LAYER_NORM_QUANT))
COMBOS = [(F16, F16), (BF16, BF16), (F32, F32), (F16, F32), (BF16, F32)]


def make(shape, dt=F16, sdt=F32, dual=True, zero_points=True, bias=False, seed=0):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    b = (0.25 * rng.standard_normal(n)).astype(dt)
    c = (0.5 * rng.standard_normal(n)).astype(dt) if bias else None
    s1 = (1 / 40 * (1 + 0.25 * rng.random(n))).astype(sdt)
    z1 = rng.integers(-3, 4, n).astype(sdt) if zero_points else None
    s2 = (0.5 * s1.astype(F32)).astype(sdt) if dual else None
    z2 = (-rng.integers(-3, 4, n)).astype(sdt) if dual and zero_points else None
    return x1, x2, g, b, c, s1, s2, z1, z2


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(res, args, eps=1e-5, div_mode=True, additional=True):
    y1, y2, x, o1, o2 = (None if r is None else host(r) for r in res)
    exp = reference.add_layer_norm_quant(*args, epsilon=eps, div_mode=div_mode)
    assert y1.dtype == I8 and y1.shape == args[0].shape
    assert np.max(np.abs(y1 - exp[0])) <= reference.QUANT_STEP
    assert len(np.unique(y1)) > 10
    if args[6] is None:
        assert y2 is None
    else:
        assert y2.dtype == I8 and np.max(np.abs(y2 - exp[1])) <= reference.QUANT_STEP
    assert o1 is None and o2 is None          # static mode: never written
    if not additional:
        assert x is None
        return
    # xOut: the float32 sum rounded to x1's dtype: within two of its roundings of the terms
    assert x.dtype == args[0].dtype
    terms = sum(np.abs(a.astype(np.float64)) for a in (args[0], args[1]) + (
        () if args[4] is None else (args[4],)))
    eps = float(np.finfo(F32).eps) if x.dtype == F32 else float(ml_dtypes.finfo(x.dtype).eps)
    assert np.all(np.abs(x.astype(np.float64) - exp[2]) <= 2 * eps * terms)


@on_950
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("combo", COMBOS, ids=["f16", "bf16", "f32", "f16-f32", "bf16-f32"])
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_against_reference(path, combo, dual):
    args = make((3, 5, 67), *combo, dual=dual, zero_points=dual, bias=not dual)
    call_args = args if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.add_layer_norm_quant(*call_args, epsilon=1e-5)
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert isinstance(res[0], kind) and isinstance(res[2], kind)
    check(res, args)


@on_950
def test_div_mode_false_and_no_additional_output():
    args = make((4, 96), F32, F32, dual=False)
    args = args[:5] + ((40 * args[5]).astype(F32),) + args[6:]
    res = acl_py.add_layer_norm_quant(*args, div_mode=False, additional_output=False)
    check(res, args, div_mode=False, additional=False)


@on_950
def test_out_given_and_strided_views():
    args = make((4, 6, 32))
    out = (np.empty((4, 6, 32), I8), np.empty((4, 6, 32), I8), np.empty((4, 6, 32), F16),
           None, None)
    res = acl_py.add_layer_norm_quant(*args, out=out)
    assert all(r is o for r, o in zip(res[:3], out))
    check(res, args)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(args[0], 2, axis=2))
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args[1:]]
    check(acl_py.add_layer_norm_quant(big[:, :, ::2], *dev), args)


@on_950
def test_unwritten_outputs_leave_their_out_entries_alone():
    args = make((2, 64), dual=False, zero_points=False)
    y2 = np.full((2, 64), 55, I8)
    s1 = np.full(2, 7.0, F32)
    res = acl_py.add_layer_norm_quant(*args, out=(None, y2, None, s1, None))
    assert res[1] is None and res[3] is None and (y2 == 55).all() and (s1 == 7).all()
    check(res, args)


@on_950
def test_saturates():
    args = make((2, 64))
    args = args[:5] + ((args[5] / 10).astype(F32),) + args[6:]
    res = acl_py.add_layer_norm_quant(*args)
    assert res[0].min() == -128 and res[0].max() == 127
    check(res, args)


ERRORS = [
    (dict(x1=[[1.0, 2.0]]), AclTypeError, "x1"),
    (dict(x2=np.ones((2, 4), F32)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F16)), AclArgumentError, "x2"),
    (dict(gamma=np.ones(5, F16)), AclArgumentError, "gamma"),
    (dict(beta=np.ones(3, F16)), AclArgumentError, "beta"),
    (dict(beta=np.ones(4, F32)), AclTypeError, "beta"),
    (dict(bias=np.ones((1, 4), F16)), AclArgumentError, "bias"),
    (dict(scales1=None), AclArgumentError, "scales1"),
    (dict(scales1=np.ones(1, F32)), AclArgumentError, "scales1"),
    (dict(scales1=np.ones(4, I8)), AclTypeError, "scales1"),
    (dict(scales1=np.ones(4, BF16), scales2=None, zero_points1=None, zero_points2=None),
     AclTypeError, "scales1"),
    (dict(scales2=np.ones(4, F16)), AclTypeError, "scales2"),
    (dict(zero_points1=np.ones(3, F32)), AclArgumentError, "zero_points1"),
    (dict(zero_points1=None), AclArgumentError, "zero_points1"),
    (dict(scales2=None), AclArgumentError, "zero_points2"),
    (dict(quant_mode="dyn"), AclArgumentError, "quant_mode"),
    (dict(quant_mode="dynamic"), AclArgumentError, "zero_points1"),
    (dict(quant_mode=3), AclTypeError, "quant_mode"),
    (dict(epsilon=0.0), AclArgumentError, "epsilon"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(div_mode=1), AclTypeError, "div_mode"),
    (dict(out=(np.empty((2, 4), F16), None, None, None, None)), AclTypeError, "out[0] (y1)"),
    (dict(out=(None, None, np.empty((2, 5), F16), None, None)), AclArgumentError, "out[2] (x)"),
]


@on_950
@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    case = dict(dict(zip(NAMES, make((2, 4)))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_layer_norm_quant(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert CALL not in emulator.call_counts()


@on_950
@pytest.mark.parametrize("name,value,code", [
    ("x2", np.ones((2, 5), F16), 161002),
    ("zero_points1", np.ones(3, F32), 161002),
    ("scales1", np.ones(4, BF16), 561003),          # no kernel for BF16 scales beside FLOAT16
])
def test_device_refusal_names_the_argument_and_carries_the_code(name, value, code):
    dev = {k: None if v is None else acl_py.DeviceTensor.from_numpy(v)
           for k, v in zip(NAMES, make((2, 4)))}
    dev[name] = acl_py.DeviceTensor.from_numpy(value)
    if name == "scales1":
        for k in ("scales2", "zero_points1", "zero_points2"):
            dev[k] = acl_py.DeviceTensor.from_numpy(value)
    with pytest.raises((AclArgumentError, AclTypeError, AclError)) as ei:
        acl_py.add_layer_norm_quant(**dev)
    assert ei.value.code == code and ei.value.call == CALL
    assert ei.value.argument == name


def make_dynamic(shape, dt=F16, scales=2, seed=0):
    """The dynamic mode's inputs: smooth scales near 1 of x1's dtype (`scales` of them: 0, 1
    or 2), no zero points, no bias."""
    args = make(shape, dt, dt, dual=scales == 2, zero_points=False, seed=seed)
    s1 = (40 * args[5].astype(F32)).astype(dt) if scales else None
    s2 = None if args[6] is None else (40 * args[6].astype(F32)).astype(dt)
    return args[:5] + (s1, s2) + args[7:]


def check_dynamic(res, args):
    y1, y2, x, o1, o2 = (None if r is None else host(r) for r in res)
    exp = reference.add_layer_norm_quant(*args, quant_mode="dynamic")
    assert y1.dtype == I8 and np.max(np.abs(y1 - exp[0])) <= reference.QUANT_STEP
    assert np.abs(y1).max(axis=-1).min() == 127        # each row's largest |t| maps to 127
    assert o1.dtype == F32 and o1.shape == args[0].shape[:-1]
    assert np.allclose(o1, exp[3], rtol=1e-5, atol=0)
    if args[6] is None:
        assert y2 is None and o2 is None
    else:
        assert np.max(np.abs(y2 - exp[1])) <= reference.QUANT_STEP
        assert np.allclose(o2, exp[4], rtol=1e-5, atol=0)
    assert x.dtype == args[0].dtype


@on_950
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("scales", [0, 1, 2], ids=["no-scales", "scales1", "dual"])
def test_dynamic_mode_against_reference(path, dt, scales):
    args = make_dynamic((3, 5, 67), dt, scales)
    call_args = args if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.add_layer_norm_quant(*call_args, quant_mode="dynamic")
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert isinstance(res[0], kind) and isinstance(res[3], kind)
    check_dynamic(res, args)


@on_950
def test_dynamic_mode_out_and_plan():
    args = make_dynamic((4, 96))
    out = (np.empty((4, 96), I8), None, None, np.empty(4, F32), np.empty(4, F32))
    res = acl_py.add_layer_norm_quant(*args, quant_mode="dynamic", out=out)
    assert res[0] is out[0] and res[3] is out[3] and res[4] is out[4]
    check_dynamic(res, args)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    with acl_py.Stream() as st, acl_py.AddLayerNormQuant(*dev, quant_mode="dynamic") as plan:
        plan.run(st)
        st.synchronize()
        check_dynamic((plan.y1, plan.y2, plan.x, plan.out_scales1, plan.out_scales2), args)


@on_950
def test_dynamic_empty_y2_beside_x1_is_refused_naming_it():
    args = make_dynamic((2, 64), scales=1)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_layer_norm_quant(*args, quant_mode="dynamic",
                                    out=(None, np.empty((0, 64), I8), None, None, None))
    assert ei.value.argument == "out[1] (y2)", ei.value


@on_950
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_rows_for_the_welford_kernel_compute(mode):
    """Rows too long for the full-load kernels (12000 FLOAT16 elements: the Welford kernel's
    column slices) are computed, within one step of the reference."""
    if mode == "static":
        args = make((2, 12000), F16, F16, dual=True, zero_points=True, bias=True)
        check(acl_py.add_layer_norm_quant(*args), args)
    else:
        args = make_dynamic((2, 12000), scales=0)
        check_dynamic(acl_py.add_layer_norm_quant(*args, quant_mode="dynamic"), args)


@only_where(not runs_here(ADD_LAYER_NORM_QUANT))   # Ascend 950 runs the op_api
def test_other_parts_refuse_with_the_op_apis_code():
    with pytest.raises(AclError) as ei:
        acl_py.add_layer_norm_quant(*make((2, 64)))
    assert ei.value.code == 161002 and ei.value.call == CALL
    assert "Ascend 950 only" in ei.value.message


@on_950
def test_plan_runs_repeatedly_on_changing_contents():
    args = make((8, 96))
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    with acl_py.Stream() as st, acl_py.AddLayerNormQuant(*dev, epsilon=1e-5) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            xk = (args[0].astype(F32) * (k + 1) - k).astype(F16)
            dev[0].buffer.copy_from_host(xk)
            assert plan.run(st) == (plan.y1, plan.y2, plan.x, plan.out_scales1,
                                    plan.out_scales2)
            st.synchronize()
            check((plan.y1, plan.y2, plan.x, plan.out_scales1, plan.out_scales2),
                  (xk,) + args[1:])
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_LAYER_NORM_QUANT.params] == [
        "x1", "x2", "gamma", "beta", "biasOptional", "scales1Optional", "scales2Optional",
        "zeroPoints1Optional", "zeroPoints2Optional", "quantMode", "epsilon",
        "additionalOutput", "divMode", "y1Out", "y2Out", "xOut", "outScales1Out",
        "outScales2Out"]
    assert [o.py for o in ADD_LAYER_NORM_QUANT.outputs] == [
        "y1", "y2", "x", "out_scales1", "out_scales2"]


@on_950
def test_smoke_cases():
    for case in ADD_LAYER_NORM_QUANT.smoke_cases:
        assert all(r is None or r <= 1 for r in ADD_LAYER_NORM_QUANT.run_smoke_case(case)), \
            case[0]


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched; the child runs on the emulator's default part (it drops ACL_EMU_*), an
    Atlas A2 one, where the op_api refuses the call (its numbers on the CANN path:
    tests/test_example_ports.py runs samples/add_layer_norm_quant.py there on Ascend 950)."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float16).reshape(4, 16); x2 = np.ones((4, 16), np.float16)
g = np.full(16, 0.5, np.float16); b = np.zeros(16, np.float16); s = np.full(16, 0.01, np.float16)
try:
    acl_py.add_layer_norm_quant(x1, x2, g, b, None, s, s)
except acl_py.AclError as e:
    assert e.code == 161002 and "Ascend 950 only" in str(e), e
else:
    raise AssertionError("an Atlas A2 part ran the call")
""")


test_on_other_parts = run_on_parts(other_parts(("Ascend910_9391", "Ascend950PR_9599")),
                                   "not on_other_parts")
