"""acl_py.add_rms_norm_quant / acl_py.AddRmsNormQuant (aclnnAddRmsNormQuant through the
declarative operator layer) within one quantization step of the float64 reference (xOut
within its dtype's rounding), y2 returned only with scales2, its argument errors (typed,
naming the argument and carrying phase one's code, nothing leaked: the autouse leak check),
its plan, and the CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann); per part the
dtype combinations it has kernels for (Ascend 950's float32 x1, float16 scales, float32 zero
points, divMode false) and the ones refused before any C call.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_RMS_NORM_QUANT
from acl_py.ops._declare import part_of
from acl_py.ops.add_rms_norm_quant import scales_zero_points_dtype_rule

from _cann_path import run_on_cann_path
from _part_runs import only_where, other_parts, run_on_parts, runs_here
from _raw_call import raw_call
from acl_py.raw import lib

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8, I32 = np.dtype(np.int8), np.dtype(np.int32)
E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
HIF8, INT4 = acl_py.dtypes.HIFLOAT8, acl_py.dtypes.INT4
ACL_Y = {I8: lib.ACL_INT8, E4M3: lib.ACL_FLOAT8_E4M3FN, E5M2: lib.ACL_FLOAT8_E5M2}
ACL_X = {F16: lib.ACL_FLOAT16, F32: lib.ACL_FLOAT}
A2 = acl_py.soc.short_soc_version(acl_py.soc_name()) in ("Ascend910B", "Ascend910_93")
A950 = acl_py.soc_name().startswith("Ascend950")
COMBOS = {"f16": (F16, F32, I32), "bf16": (BF16, BF16, BF16), "bf16-f32": (BF16, F32, I32),
          "f32": (F32, F32, F32), "f16-f16": (F16, F16, F16), "f16-f32-f32": (F16, F32, F32),
          "bf16-f32-f32": (BF16, F32, F32)}


# The tests of the kernel's work are defined where it has one (no kernel on the Atlas training
# series: ops-nn norm/add_rms_norm_quant/op_host/add_rms_norm_quant_def.cpp); those of the
# argument checks before its lookup run on every part (the refusal there: test_declared_parts)
HAS_KERNEL = runs_here(ADD_RMS_NORM_QUANT)
where_it_runs = only_where(HAS_KERNEL)


def has_kernel(combo):
    return HAS_KERNEL and scales_zero_points_dtype_rule(*combo, part_of()) is None


def kernel_combos(combos):
    """The (x1, scales, zero points) dtype combinations of ``combos`` (id -> combination) this
    part has a kernel for (scales_zero_points_dtype_rule), as parameters: a combination the
    part lacks is no case here (test_dtype_combinations_per_part checks its refusal; the
    other parts run it, test_on_other_parts)."""
    return [pytest.param(c, id=k) for k, c in combos.items() if has_kernel(c)]


def make(shape, dt=F16, sdt=F32, zdt=I32, dual=True, seed=0):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    s1 = (1 / 40 * (1 + 0.25 * rng.random(n))).astype(sdt)
    z1 = rng.integers(-3, 4, n).astype(zdt)
    s2 = (0.5 * s1.astype(F32)).astype(sdt) if dual else None
    z2 = (-z1.astype(F32)).astype(zdt) if dual else None
    return x1, x2, g, s1, s2, z1, z2


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(res, args, eps=1e-6):
    y1, y2, x = (None if r is None else host(r) for r in res)
    exp = reference.add_rms_norm_quant(*args, epsilon=eps)
    assert y1.dtype == I8 and y1.shape == args[0].shape
    assert np.max(np.abs(y1 - exp[0])) <= reference.QUANT_STEP
    if args[4] is None:
        assert y2 is None
    else:
        assert y2.dtype == I8 and np.max(np.abs(y2 - exp[1])) <= reference.QUANT_STEP
        assert len(np.unique(y2)) > 10
    # xOut: the sum rounded once to x1's dtype
    assert x.dtype == args[0].dtype
    assert np.array_equal(x.astype(np.float64), exp[2].astype(args[0].dtype).astype(np.float64))


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("combo", kernel_combos(COMBOS))
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_against_reference(path, combo, dual):
    args = make((3, 5, 67), *combo, dual=dual)
    call_args = args if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.add_rms_norm_quant(*call_args, epsilon=1e-5)
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert isinstance(res[0], kind) and isinstance(res[2], kind)
    check(res, args, 1e-5)


@where_it_runs
def test_out_given_and_strided_views():
    args = make((4, 6, 32))
    out = (np.empty((4, 6, 32), I8), np.empty((4, 6, 32), I8), np.empty((4, 6, 32), F16))
    res = acl_py.add_rms_norm_quant(*args, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, args)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(args[0], 2, axis=2))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args[1:]]
    res = acl_py.add_rms_norm_quant(big[:, :, ::2], *dev)
    check(res, args)


@where_it_runs
def test_without_scales2_y2_is_none_and_an_out_entry_is_left_alone():
    args = make((2, 64), dual=False)
    y2 = np.full((2, 64), 55, I8)
    res = acl_py.add_rms_norm_quant(*args, out=(None, y2, None))
    assert res[1] is None and (y2 == 55).all()
    check(res, args)


@where_it_runs
def test_saturates():
    x1, x2, g, s1, s2, z1, z2 = make((2, 64))
    s1 = (s1 / 10).astype(F32)
    res = acl_py.add_rms_norm_quant(x1, x2, g, s1, s2, z1, z2)
    assert res[0].min() == -128 and res[0].max() == 127
    check(res, (x1, x2, g, s1, s2, z1, z2))


ERRORS = [
    (dict(x1=[[1.0, 2.0]]), AclTypeError, "x1"),
    (dict(x2=np.ones((2, 4), F32)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F16)), AclArgumentError, "x2"),
    (dict(gamma=np.ones(5, F16)), AclArgumentError, "gamma"),
    (dict(scales1=np.ones(1, F32)), AclArgumentError, "scales1"),
    (dict(scales1=np.ones(4, I8)), AclTypeError, "scales1"),
    (dict(scales2=np.ones(4, F16)), AclTypeError, "scales2"),
    (dict(zero_points1=np.ones(3, I32)), AclArgumentError, "zero_points1"),
    (dict(zero_points1=np.ones(4, I8)), AclTypeError, "zero_points1"),
    (dict(zero_points2=np.ones(4, F32)), AclArgumentError, "zero_points2"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(div_mode=1), AclTypeError, "div_mode"),
    (dict(out=(np.empty((2, 4), F16), None, None)), AclTypeError, "out[0] (y1)"),
    (dict(out=(None, None, np.empty((2, 5), F16))), AclArgumentError, "out[2] (x)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}" for _c, e, a in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    names = ("x1", "x2", "gamma", "scales1", "scales2", "zero_points1", "zero_points2")
    case = dict(dict(zip(names, make((2, 4)))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_rms_norm_quant(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnAddRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()


@pytest.mark.parametrize("name,value,code", [
    ("x2", np.ones((2, 5), F16), 161002),           # the docs' relation (stricter)
    ("zero_points1", np.ones(3, I32), 161002),
    ("scales1", np.ones(4, BF16), 561003),          # no kernel for BF16 scales beside x FLOAT16
])
def test_device_refusal_names_the_argument_and_carries_the_code(name, value, code):
    names = ("x1", "x2", "gamma", "scales1", "scales2", "zero_points1", "zero_points2")
    dev = {k: acl_py.DeviceTensor.from_numpy(v) for k, v in zip(names, make((2, 4)))}
    dev[name] = acl_py.DeviceTensor.from_numpy(value)
    if name == "scales1":
        dev["scales2"] = acl_py.DeviceTensor.from_numpy(value)
    with pytest.raises((AclArgumentError, AclTypeError, AclError)) as ei:
        acl_py.add_rms_norm_quant(**dev)
    assert ei.value.code == code and ei.value.call == "aclnnAddRmsNormQuantGetWorkspaceSize"
    assert ei.value.argument == name


@where_it_runs
def test_operator_rules_surface_as_its_typed_error():
    args = make((1,) * 8 + (4,))
    with pytest.raises(AclError) as ei:
        acl_py.add_rms_norm_quant(*args)
    assert ei.value.code == 161002 and ei.value.call == "aclnnAddRmsNormQuantGetWorkspaceSize"
    assert "x1 rank 9" in ei.value.message
    if A950:  # the docs: true and false there (a multiply by the scales)
        args = make((2, 64))
        res = acl_py.add_rms_norm_quant(*args, div_mode=False)
        exp = reference.add_rms_norm_quant(*args, div_mode=False)
        assert np.max(np.abs(res[0] - exp[0])) <= reference.QUANT_STEP
        return
    with pytest.raises(AclError) as ei:
        acl_py.add_rms_norm_quant(*make((2, 4)), div_mode=False)
    assert ei.value.code == 161002 and "divMode false" in ei.value.message


# (x1, scales, zero points): on a part without a kernel only those the rule refuses, named
# before the kernel's lookup (one it takes is refused there for the part: test_declared_parts)
PER_PART = [c for c in [(F32, F16, None), (F32, F32, I32), (F16, BF16, None), (F16, F16, I32),
                        (BF16, F32, BF16), (F16, F32, F32), (F16, F32, I32)]
            if HAS_KERNEL or scales_zero_points_dtype_rule(*c, part_of()) is not None]


@pytest.mark.parametrize("combo", PER_PART, ids=str)
def test_dtype_combinations_per_part(emulator, combo):
    """The part's combinations (scales_zero_points_dtype_rule): refused before any C call for
    NumPy arrays naming the argument, by phase one (561003, named) for DeviceTensors; the
    others run."""
    x, sdt, zdt = combo
    args = list(make((2, 32), x, sdt, zdt or I32, dual=False))
    if zdt is None:
        args[5] = None
    broken = scales_zero_points_dtype_rule(x, sdt, zdt, part_of())
    if broken is None:
        check(acl_py.add_rms_norm_quant(*args), tuple(args))
        return
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*args)
    assert ei.value.argument == broken[0]
    assert "aclnnAddRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*dev)
    assert ei.value.argument == broken[0] and ei.value.code == 561003


@where_it_runs
def test_plan_runs_repeatedly_on_changing_contents():
    args = make((8, 96))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with acl_py.Stream() as st, acl_py.AddRmsNormQuant(*dev, epsilon=1e-5) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_rms.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        for k in range(3):
            xk = (args[0].astype(F32) * (k + 1) - k).astype(F16)
            dev[0].buffer.copy_from_host(xk)
            assert plan.run(st) == (plan.y1, plan.y2, plan.x)
            st.synchronize()
            check((plan.y1, plan.y2, plan.x), (xk,) + args[1:], 1e-5)
    assert plan.closed


# ---- y_dtype ---------------------------------------------------------------------------------

# The y dtypes the part has a kernel for (add_rms_norm_quant_def.cpp: float8 on Ascend 950 only)
Y_TAKEN = [I8, E4M3, E5M2] if A950 else [I8]


def _y_inputs(combo):
    """Inputs whose results spread over the float8 grids: some columns' scales tiny (beyond
    e4m3fn's largest finite value), some big (subnormal values)."""
    x1, x2, g, s1, s2, z1, z2 = make((3, 4, 48), *combo, seed=7)
    s1 = s1.astype(F32)
    s1[:8], s1[8:16] = 1e-4, 300.0
    s1 = s1.astype(combo[1])
    return x1, x2, g, s1, s2, z1, z2


def _within_one_step(y, exp, y_dtype):
    got = y.astype(np.float64)
    if y_dtype == I8:
        assert np.max(np.abs(got - exp)) <= reference.QUANT_STEP
    else:
        assert np.all(np.abs(got - exp) <= reference.float8_step(exp, y_dtype))


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("combo", kernel_combos({k: COMBOS[k] for k in ("f16", "f32")}))
@pytest.mark.parametrize("y_dtype", Y_TAKEN, ids=lambda d: d.name)
def test_y_dtype_results_are_the_raw_calls_bits(path, combo, y_dtype):
    """Each y dtype the part has a kernel for: y1 and y2 (of y_dtype) are bit for bit what a
    raw aclnnAddRmsNormQuant call with y1Out/y2Out of that aclDataType writes, x too, and
    within one step of their grid of the float64 reference; out= gives the same."""
    args = _y_inputs(combo)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    shape = args[0].shape
    y1r, y2r, xr = raw_call("AddRmsNormQuant", dev + [-1, 1e-6, True],
                            [(shape, ACL_Y[y_dtype]), (shape, ACL_Y[y_dtype]),
                             (shape, ACL_X[combo[0]], combo[0].itemsize)])
    call_args = args if path == "numpy" else dev
    res = acl_py.add_rms_norm_quant(*call_args, y_dtype=y_dtype)
    y1, y2, x = (host(r) for r in res)
    assert y1.dtype == y2.dtype == y_dtype and y1.shape == shape
    assert np.array_equal(y1.view(np.uint8), y1r) and np.array_equal(y2.view(np.uint8), y2r)
    assert np.array_equal(x.view(np.uint8).reshape(xr.shape), xr)
    exp = reference.add_rms_norm_quant(*args, y_dtype=y_dtype)
    _within_one_step(y1, exp[0], y_dtype)
    _within_one_step(y2, exp[1], y_dtype)
    if y_dtype != I8:
        assert len(np.unique(y1.view(np.uint8))) > 40
        big = float(ml_dtypes.finfo(y_dtype).max)
        assert y_dtype == E5M2 or np.any(np.abs(y1.astype(np.float64)) == big)
    empty = np.empty if path == "numpy" else acl_py.DeviceTensor.empty
    out = (empty(shape, y_dtype), empty(shape, y_dtype), None)
    res = acl_py.add_rms_norm_quant(*call_args, y_dtype=y_dtype, out=out)
    assert res[0] is out[0] and res[1] is out[1]
    assert np.array_equal(host(res[0]).view(np.uint8), y1r)
    assert np.array_equal(host(res[1]).view(np.uint8), y2r)


@only_where(A950)   # hifloat8 results are Ascend 950's
@pytest.mark.parametrize("path", ["numpy", "device"])
def test_hifloat8_results_are_the_raw_calls_bits(path):
    """Ascend 950's HIFLOAT8 y1 and y2: bit for bit what a raw call with y1Out/y2Out HIFLOAT8
    writes, x too; uint8 codes for NumPy callers, HIFLOAT8 DeviceTensors otherwise; within
    one step of the HiF8 grid of the float64 reference (decoded); out= and the plan the
    same."""
    combo = (F16, F32, I32)
    args = _y_inputs(combo)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    shape = args[0].shape
    raws = raw_call("AddRmsNormQuant", dev + [-1, 1e-6, True],
                    [(shape, lib.ACL_HIFLOAT8), (shape, lib.ACL_HIFLOAT8),
                     (shape, ACL_X[combo[0]], combo[0].itemsize)])
    call_args = args if path == "numpy" else dev

    def codes(y):
        if isinstance(y, acl_py.DeviceTensor):
            assert y.element_type is HIF8 and y.dtype == np.uint8
            y = y.to_numpy()
        assert y.dtype == np.uint8 and y.shape == shape
        return y

    res = acl_py.add_rms_norm_quant(*call_args, y_dtype="hifloat8")
    y1, y2 = codes(res[0]), codes(res[1])
    assert np.array_equal(y1, raws[0]) and np.array_equal(y2, raws[1])
    assert np.array_equal(host(res[2]).view(np.uint8).reshape(raws[2].shape), raws[2])
    exp = reference.add_rms_norm_quant(*args, y_dtype=HIF8)
    for y, e in ((y1, exp[0]), (y2, exp[1])):
        got = acl_py.dtypes.hifloat8_to_float32(y).astype(np.float64)
        assert np.all(np.abs(got - e) <= reference.float8_step(e, HIF8))
    assert len(np.unique(y1)) > 40 and np.any(y1 == 0x6E)      # 2^15: saturated
    out = ((np.empty(shape, np.uint8), np.empty(shape, np.uint8), None) if path == "numpy"
           else (acl_py.DeviceTensor.empty(shape, HIF8), acl_py.DeviceTensor.empty(shape, HIF8),
                 None))
    res = acl_py.add_rms_norm_quant(*call_args, y_dtype=HIF8, out=out)
    assert res[0] is out[0] and res[1] is out[1]
    assert np.array_equal(codes(res[0]), raws[0]) and np.array_equal(codes(res[1]), raws[1])
    if path == "device":
        with acl_py.Stream() as st, acl_py.AddRmsNormQuant(*dev, y_dtype=HIF8) as plan:
            for _ in range(2):
                plan.run(st)
                st.synchronize()
                assert np.array_equal(codes(plan.y1), raws[0])
                assert np.array_equal(codes(plan.y2), raws[1])


def test_int4_is_in_no_parts_y_list(emulator):
    """y_dtype int4: AclTypeError naming y_dtype before any C call on NumPy arrays; on
    DeviceTensors after phase one refused the INT4 y1Out (its y list: 161002, on every
    part), carrying the code."""
    args = make((2, 32))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*args, y_dtype="int4")
    assert ei.value.argument == "y_dtype" and "int4" in str(ei.value)
    assert "aclnnAddRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*dev, y_dtype=INT4)
    assert ei.value.argument == "y_dtype" and ei.value.code == 161002


@only_where(not A950)   # Ascend 950 has float8 and hifloat8 kernels
@pytest.mark.parametrize("y_dtype", [E4M3, E5M2, HIF8], ids=lambda d: d.name)
def test_a_y_dtype_the_part_lacks_is_named(emulator, y_dtype):
    """A float8 or hifloat8 y_dtype off Ascend 950, where phase one's list takes it but no
    kernel writes it: AclTypeError naming y_dtype and the part before any C call on NumPy
    arrays; on DeviceTensors after the emulator's phase one refused it (561003,
    docs/emulator.md), carrying the code."""
    args = make((2, 32))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*args, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype" and acl_py.soc_name() in str(ei.value)
    assert "aclnnAddRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"
    assert ei.value.code == 561003 and ei.value.call == "aclnnAddRmsNormQuantGetWorkspaceSize"
    with pytest.raises(AclTypeError) as ei:
        acl_py.AddRmsNormQuant(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"


@pytest.mark.parametrize("value,words", [
    (np.int32, "int32 must be one of int8, float8_e4m3fn, float8_e5m2, hifloat8, int4"),
    (ml_dtypes.int4, "int4 has no aclDataType"),     # ml_dtypes' int4: one value a byte
    ("float32", "float32 must be one of"),
])
def test_y_dtype_values_outside_the_list_are_named(emulator, value, words):
    args = make((2, 32))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_quant(*args, y_dtype=value)
    assert ei.value.argument == "y_dtype" and words in str(ei.value), ei.value
    assert "aclnnAddRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()


@where_it_runs
def test_default_y_dtype_is_int8():
    args = make((3, 40))
    res = acl_py.add_rms_norm_quant(*args)
    res8 = acl_py.add_rms_norm_quant(*args, y_dtype=np.int8)
    assert all(np.array_equal(a, b) for a, b in zip(res, res8))
    check(res, args)


@only_where(A950)   # float8 results are Ascend 950's
def test_plan_with_a_float8_y_dtype():
    args = _y_inputs((F16, F32, I32))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    shape = args[0].shape
    y1r, y2r, _ = raw_call("AddRmsNormQuant", dev + [-1, 1e-6, True],
                           [(shape, lib.ACL_FLOAT8_E5M2), (shape, lib.ACL_FLOAT8_E5M2),
                            (shape, lib.ACL_FLOAT16, 2)])
    with acl_py.Stream() as st, acl_py.AddRmsNormQuant(*dev, y_dtype=E5M2) as plan:
        for _ in range(2):
            plan.run(st)
            st.synchronize()
            assert plan.y1.dtype == plan.y2.dtype == E5M2
            assert np.array_equal(plan.y1.to_numpy().view(np.uint8), y1r)
            assert np.array_equal(plan.y2.to_numpy().view(np.uint8), y2r)


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_RMS_NORM_QUANT.params] == [
        "x1", "x2", "gamma", "scales1", "scales2Optional", "zeroPoints1Optional",
        "zeroPoints2Optional", "axis", "epsilon", "divMode", "y1Out", "y2Out", "xOut"]
    assert [o.py for o in ADD_RMS_NORM_QUANT.outputs] == ["y1", "y2", "x"]


@where_it_runs
def test_smoke_cases_run():
    for case in ADD_RMS_NORM_QUANT.smoke_cases:
        assert all(r is None or r <= 1 for r in ADD_RMS_NORM_QUANT.run_smoke_case(case)), \
            case[0]


@where_it_runs
@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float16).reshape(4, 16); x2 = np.ones((4, 16), np.float16)
g = np.full(16, 0.5, np.float16); s = np.full(16, 0.01, np.float32)
z = np.ones(16, np.int32)
y1, y2, x = acl_py.add_rms_norm_quant(x1, x2, g, s, s, z)
e = reference.add_rms_norm_quant(x1, x2, g, s, s, z)
assert y1.dtype == np.int8 and np.abs(y1 - e[0]).max() <= 1 and np.abs(y2 - e[1]).max() <= 1
""")


# (the Atlas training series: the argument checks before the kernel's lookup)
test_on_other_parts = run_on_parts(
    other_parts(("Ascend910A", "Ascend310P3", "Ascend910_9391", "Ascend950PR_9599")),
    "reference or saturates or argument_errors or refusal or combinations or operator_rules or "
    "y_dtype or hifloat8 or int4")
