"""acl_py.add_rms_norm_dynamic_quant_v2 / acl_py.AddRmsNormDynamicQuantV2
(aclnnAddRmsNormDynamicQuantV2 through the declarative operator layer): beta and output_mask,
bit for bit what a raw V2 call writes (tests/_raw_call.py) and within one quantization step of
the float64 reference; an output the mask does not compute returned as None (a scratch tensor
handed to the device, the caller's out= entry left as it was); its argument errors (typed,
naming the argument and carrying phase one's code, nothing leaked: the autouse leak check);
its plan; the CANN path. The ``y_dtype`` of V1 and V2 (int8 everywhere, float8 on Ascend
950): bit for bit a raw call with y1Out/y2Out of that aclDataType, within one grid step of the
reference, refused by name where the part has no kernel for it.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_RMS_NORM_DYNAMIC_QUANT, ADD_RMS_NORM_DYNAMIC_QUANT_V2
from acl_py.raw import ffi, lib

from _cann_path import run_on_cann_path
from _part_runs import only_where, other_parts, run_on_parts, runs_here
from _raw_call import SENTINEL, raw_call
from test_add_rms_norm_dynamic_quant import SCALE_RTOL, host

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8 = np.dtype(np.int8)
E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
HIF8, INT4 = acl_py.dtypes.HIFLOAT8, acl_py.dtypes.INT4
ACL_Y = {I8: lib.ACL_INT8, E4M3: lib.ACL_FLOAT8_E4M3FN, E5M2: lib.ACL_FLOAT8_E5M2,
         HIF8: lib.ACL_HIFLOAT8, INT4: lib.ACL_INT4}
ACL_X = {F16: lib.ACL_FLOAT16, BF16: lib.ACL_BF16}
A950 = acl_py.soc_name().startswith("Ascend950")
# The tests of the kernel's work are defined where it has one (V1's parts: Atlas A2/A3, Ascend
# 950); those of the argument checks before its lookup, and of a y dtype the part lacks, run on
# every part (the refusal there: test_declared_parts)
where_it_runs = only_where(runs_here(ADD_RMS_NORM_DYNAMIC_QUANT_V2)
                           and runs_here(ADD_RMS_NORM_DYNAMIC_QUANT))
CALL = "aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize"
NAMES = ("x1", "x2", "gamma", "smooth_scale1", "smooth_scale2", "beta")

# (smooth scales given: 0, 1, 2 or "2" for smooth_scale2 alone; output_mask): every pair the
# op_api's CheckFlag takes
CASES = [(0, None), (1, None), (2, None), (0, (True, False)), (1, (True, False)),
         (0, (False, True)), ("2", (False, True)), (0, (True, True)), (1, (True, True)),
         (2, (True, True)), ("2", (True, True))]
CASE_IDS = [f"{s}-{'nomask' if m is None else ''.join('TF'[not b] for b in m)}"
            for s, m in CASES]


def make(shape, dt=F16, smooth=2, beta=True, seed=0):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    s1 = (0.5 + rng.random(n)).astype(dt) if smooth in (1, 2) else None
    s2 = (0.5 + rng.random(n)).astype(dt) if smooth in (2, "2") else None
    b = (0.5 * rng.standard_normal(n)).astype(dt) if beta else None
    return x1, x2, g, s1, s2, b


def computed(args, mask):
    if mask is not None:
        return mask
    return True, args[3] is not None and args[4] is not None


class Mask:
    """An aclBoolArray outputMask for a raw call (None: NULL), destroyed on exit."""

    def __init__(self, values):
        self.values = values

    def __enter__(self):
        self.handle = ffi.NULL if self.values is None else lib.aclCreateBoolArray(
            ffi.new("bool[]", list(self.values)), len(self.values))
        return self.handle

    def __exit__(self, *exc):
        if self.handle != ffi.NULL:
            assert lib.aclDestroyBoolArray(self.handle) == 0


def raw(args, mask=None, eps=1e-6, y_dtype=I8, v2=True):
    """A raw call's (y1, y2, x, scale1, scale2) bytes, on device copies of ``args``; an
    output not computed is given one element (the L0 op's [1]) and returned as None after
    checking it kept its sentinel."""
    x1 = args[0]
    out1, out2 = computed(args, mask)
    rows = x1.shape[:-1] or (1,)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    try:
        outs = [(x1.shape if out1 else (1,), ACL_Y[y_dtype]),
                (x1.shape if out2 else (1,), ACL_Y[y_dtype]),
                (x1.shape, ACL_X[x1.dtype], 2),
                (rows if out1 else (1,), lib.ACL_FLOAT, 4),
                (rows if out2 else (1,), lib.ACL_FLOAT, 4)]
        with Mask(mask) as m:
            ins = dev + [eps, m] if v2 else dev[:5] + [eps]
            got = raw_call("AddRmsNormDynamicQuantV2" if v2 else "AddRmsNormDynamicQuant",
                           ins, outs)
    finally:
        for t in dev:
            if t is not None:
                t.close()
    for k, out in ((0, out1), (1, out2)):
        if not out:
            assert (got[k] == SENTINEL).all() and (got[k + 3] == SENTINEL).all()
            got[k] = got[k + 3] = None
        elif y_dtype is INT4:   # its packed bytes, nothing past them: the values' bytes
            b = got[k].reshape(-1)
            used = (b.size + 1) // 2
            assert (b[used:] == SENTINEL).all(), "written past the INT4 y"
            got[k] = acl_py.dtypes.unpack_int4(b[:used], b.size).view(np.uint8).reshape(
                x1.shape)
    return got


def assert_bits(res, exp_bytes):
    """The results (NumPy or DeviceTensors) are the raw call's bytes, None where it wrote
    none."""
    for r, e in zip(res, exp_bytes):
        assert (r is None) == (e is None)
        if r is not None:
            assert np.array_equal(host(r).view(np.uint8).reshape(e.shape), e)


def check_reference(res, args, mask, eps=1e-6, y_dtype=I8):
    y1, y2, x, s1, s2 = (None if r is None else host(r) for r in res)
    x1 = args[0]
    exp = reference.add_rms_norm_dynamic_quant(*args[:5], epsilon=eps, y_dtype=y_dtype,
                                               beta=args[5], output_mask=mask)
    for y, s, ey, es in ((y1, s1, exp[0], exp[3]), (y2, s2, exp[1], exp[4])):
        assert (y is None) == (ey is None) and (s is None) == (es is None)
        if y is None:
            continue
        assert y.shape == x1.shape
        if y_dtype is HIF8:       # its uint8 codes, decoded
            assert y.dtype == np.uint8
            got = acl_py.dtypes.hifloat8_to_float32(y).astype(np.float64)
        elif y_dtype is INT4:     # its values, unpacked to int8
            assert y.dtype == I8
            got = y.astype(np.float64)
        else:
            assert y.dtype == y_dtype
            got = y.astype(np.float64)
        if y_dtype == I8 or y_dtype is INT4:
            assert np.max(np.abs(got - ey)) <= reference.QUANT_STEP
        else:
            assert np.all(np.abs(got - ey) <= reference.float8_step(ey, y_dtype))
        # each row's largest magnitude maps to the format's largest value
        big = (127.0 if y_dtype == I8 else 32768.0 if y_dtype is HIF8
               else reference.DYNAMIC_QUANT_MAX_INT4 if y_dtype is INT4
               else float(ml_dtypes.finfo(y_dtype).max))
        assert np.all(np.max(np.abs(got), axis=-1) == big)
        assert s.dtype == F32 and s.shape == (x1.shape[:-1] or (1,))
        assert np.allclose(s, es, rtol=SCALE_RTOL[x1.dtype], atol=0)
    assert x.dtype == x1.dtype
    assert np.array_equal(x.astype(np.float64), exp[2].astype(x1.dtype).astype(np.float64))


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("smooth,mask", CASES, ids=CASE_IDS)
def test_against_raw_call_and_reference(path, dt, smooth, mask):
    """beta and each output_mask CheckFlag takes: the raw call's bytes, the outputs it does
    not compute None, within one step of the float64 reference."""
    args = make((3, 5, 67), dt, smooth, beta=smooth != 1, seed=1)
    call_args = args if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
    res = acl_py.add_rms_norm_dynamic_quant_v2(*call_args, epsilon=1e-5, output_mask=mask)
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert all(isinstance(r, kind) for r in res if r is not None)
    assert_bits(res, raw(args, mask, 1e-5))
    check_reference(res, args, mask, 1e-5)


@where_it_runs
def test_without_mask_and_beta_it_is_v1():
    args = make((4, 96), beta=False)
    v1 = acl_py.add_rms_norm_dynamic_quant(*args[:5])
    v2 = acl_py.add_rms_norm_dynamic_quant_v2(*args)
    assert all(np.array_equal(a, b) for a, b in zip(v1, v2))


@where_it_runs
def test_uncomputed_outputs_are_none_and_their_out_entries_left_alone():
    """output_mask (False, True): y1 and scale1 None; one-element out= entries for them are
    checked and left as they were (the device would copy an undefined element into them),
    the others written."""
    args = make((2, 3, 64), smooth="2")
    y1, s1 = np.full((1,), 55, I8), np.full((1,), 5.0, F32)
    y2, s2 = np.empty((2, 3, 64), I8), np.empty((6,), F32)
    res = acl_py.add_rms_norm_dynamic_quant_v2(*args, output_mask=(False, True),
                                               out=(y1, y2, None, s1, s2))
    assert res[0] is None and res[3] is None and y1[0] == 55 and s1[0] == 5.0
    assert res[1] is y2 and res[4] is s2
    check_reference((None, y2, res[2], None, s2.reshape(2, 3)), args, (False, True))
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    ty1 = acl_py.DeviceTensor.from_numpy(y1)
    res = acl_py.add_rms_norm_dynamic_quant_v2(*dev, output_mask=(False, True),
                                               out=(ty1, None, None, None, None))
    assert res[0] is None and res[3] is None and ty1.to_numpy()[0] == 55
    # an entry of x1's shape for an output not computed: the device's copy takes [1] only
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_rms_norm_dynamic_quant_v2(*args, output_mask=(False, True),
                                             out=(np.empty((2, 3, 64), I8),) + (None,) * 4)
    assert ei.value.argument == "out[0] (y1)"


# (version, x1's shape, output_mask, the entry given empty: None, or its index) for the op_apis'
# returns before the L0 op: V1's with x1, gamma or y2Out empty, V2's with x1, x2, gamma or
# y2Out empty (on Ascend 950 not with gamma empty: its empty kernel writes the computed
# scales). V1's emulator refuses an empty y2 beside a non-empty x1 (the docs' relation,
# docs/emulator.md), so only x1 empties its call.
EARLY_RETURNS = [("v1", (4, 0), None, None), ("v2", (4, 0), (True, True), None),
                 ("v2", (2, 3, 64), (True, True), 1), ("v2", (2, 3, 64), None, 1)]


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device", "plan"])
@pytest.mark.parametrize("version,shape,mask,empty", EARLY_RETURNS,
                         ids=["v1-x1", "v2-x1", "v2-y2-mask", "v2-y2-nomask"])
def test_an_early_return_leaves_the_outputs_unwritten(path, version, shape, mask, empty):
    """The op_api returns success before the L0 op (nothing launched, nothing copied) for an
    empty x1 and, in V2, an empty y2 out= entry beside a non-empty x1: every non-empty output
    is returned as None, a given entry filled with a sentinel left as it was (a NumPy call
    copies nothing back into it); an empty one is returned as it is. On Ascend 950 V2's
    empty gamma runs the empty kernel instead: its scales -inf."""
    args = make(shape)
    v2 = version == "v2"
    if not v2:
        args = args[:5]
    rows = shape[:-1]
    shapes = [shape, shape, shape, rows, rows]
    dts = [I8, I8, F16, F32, F32]
    out = [np.full(s, 5, dt) for s, dt in zip(shapes, dts)]
    if empty is not None:
        out[empty] = np.zeros((0,) + shape[1:], dts[empty])
    kw = {"output_mask": mask} if v2 else {}
    declared = ADD_RMS_NORM_DYNAMIC_QUANT_V2 if v2 else ADD_RMS_NORM_DYNAMIC_QUANT
    values = args + (1e-6, mask, I8) if v2 else args + (1e-6, I8)
    why = declared.unwritten_outputs(values, out=out)
    empty_kernel = v2 and A950 and 0 in shape
    written = [o.size == 0 or (empty_kernel and k >= 3) for k, o in enumerate(out)]
    assert [w is None for w in why] == written, why
    assert all("returns before the L0 op" in w for w in why if w is not None)
    vals = args
    if path != "numpy":
        vals = tuple(None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args)
        out = [acl_py.DeviceTensor.from_numpy(o) for o in out]
    fn = acl_py.add_rms_norm_dynamic_quant_v2 if v2 else acl_py.add_rms_norm_dynamic_quant
    if path == "plan":
        cls = acl_py.AddRmsNormDynamicQuantV2 if v2 else acl_py.AddRmsNormDynamicQuant
        with acl_py.Stream() as s, cls(*vals, **kw, out=tuple(out)) as plan:
            plan.run(s)
            s.synchronize()
            res = plan.outputs
    else:
        res = fn(*vals, **kw, out=tuple(out))
    for k in range(5):
        if written[k]:
            assert res[k] is out[k]
            if out[k].size:
                assert (host(out[k]) == -np.inf).all()
        else:
            assert res[k] is None, (k, res[k])
            assert (host(out[k]) == 5).all()


ERRORS = [
    (dict(output_mask=(True,)), AclArgumentError, "output_mask"),
    (dict(output_mask=(True, 1)), AclTypeError, "output_mask[1]"),
    (dict(output_mask="TT"), AclTypeError, "output_mask"),
    (dict(output_mask=(False, False), smooth_scale1=None, smooth_scale2=None),
     AclArgumentError, "output_mask"),
    (dict(output_mask=(False, True)), AclArgumentError, "output_mask"),
    (dict(output_mask=(True, False)), AclArgumentError, "output_mask"),
    (dict(smooth_scale1=None), AclArgumentError, "smooth_scale2"),
    (dict(beta=np.ones(5, F16)), AclArgumentError, "beta"),
    (dict(beta=np.ones(4, BF16)), AclTypeError, "beta"),
    (dict(beta=[1.0] * 4), AclTypeError, "beta"),
    (dict(x2=np.ones((2, 5), F16)), AclArgumentError, "x2"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(y_dtype=np.int32), AclTypeError, "y_dtype"),
    (dict(y_dtype=np.int32), AclTypeError, "y_dtype"),
    (dict(out=(np.empty((2, 4), F16), None, None, None, None)), AclTypeError, "out[0] (y1)"),
    (dict(out=(None, None, None, None, np.empty((3,), F32))), AclArgumentError,
     "out[4] (scale2)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{i}" for i, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    case = dict(dict(zip(NAMES, make((2, 4)))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_rms_norm_dynamic_quant_v2(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert CALL not in emulator.call_counts()


@pytest.mark.parametrize("change,code,argument", [
    (dict(output_mask=(False, False), smooth_scale1=None, smooth_scale2=None), 161002,
     "output_mask"),                                  # CheckFlag
    (dict(output_mask=(True, False)), 161002, "output_mask"),
    (dict(smooth_scale1=None), 161002, "smooth_scale2"),
    (dict(beta=np.ones(3, F16)), 561002, "beta"),     # the tiling's shapes
    (dict(beta=np.ones(4, BF16)), 161002, "beta"),    # the docs' dtype relation (stricter)
    (dict(x2=np.ones((2, 5), F16)), 561002, "x2"),
])
def test_device_refusal_names_the_argument_and_carries_the_code(change, code, argument):
    case = dict(zip(NAMES, make((2, 4))), **change)
    dev = {k: v if not isinstance(v, np.ndarray) else acl_py.DeviceTensor.from_numpy(v)
           for k, v in case.items()}
    with pytest.raises((AclArgumentError, AclTypeError)) as ei:
        acl_py.add_rms_norm_dynamic_quant_v2(**dev)
    assert ei.value.code == code and ei.value.call == CALL
    assert ei.value.argument == argument


@where_it_runs
def test_operator_rules_surface_as_its_typed_error():
    """The tilings' rules (docs/emulator.md), as V1's: Atlas A2/A3's epsilon above 0, Ascend
    950's x1 rank of at least 2."""
    with pytest.raises(AclError) as ei:
        if A950:
            acl_py.add_rms_norm_dynamic_quant_v2(*make((4,)))
        else:
            acl_py.add_rms_norm_dynamic_quant_v2(*make((2, 4)), epsilon=0.0)
    assert ei.value.code == 561002 and ei.value.call == CALL
    assert ("x1 rank 1" if A950 else "epsilon") in ei.value.message


@where_it_runs
def test_plan_runs_repeatedly_on_changing_contents():
    args = make((8, 96), smooth=1)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    mask = (True, True)
    with acl_py.Stream() as st, acl_py.AddRmsNormDynamicQuantV2(
            *dev, epsilon=1e-5, output_mask=mask) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_arndq.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        outs = (plan.y1, plan.y2, plan.x, plan.scale1, plan.scale2)
        assert all(o is not None for o in outs)
        for k in range(3):
            xk = (args[0].astype(F32) * (k + 1) - k).astype(F16)
            dev[0].buffer.copy_from_host(xk)
            assert plan.run(st) == outs
            st.synchronize()
            check_reference(outs, (xk,) + args[1:], mask, 1e-5)
    assert plan.closed
    with acl_py.AddRmsNormDynamicQuantV2(*dev[:3], output_mask=(False, True)) as plan:
        assert plan.y1 is None and plan.scale1 is None and plan.y2 is not None


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_RMS_NORM_DYNAMIC_QUANT_V2.params] == [
        "x1", "x2", "gamma", "smoothScale1Optional", "smoothScale2Optional", "betaOptional",
        "epsilon", "outputMask", "y1Out", "y2Out", "xOut", "scale1Out", "scale2Out"]
    assert [a.py for a in ADD_RMS_NORM_DYNAMIC_QUANT_V2.inputs] == list(NAMES) + [
        "epsilon", "output_mask", "y_dtype"]
    assert [o.py for o in ADD_RMS_NORM_DYNAMIC_QUANT_V2.outputs] == [
        "y1", "y2", "x", "scale1", "scale2"]


@where_it_runs
def test_smoke_cases_run():
    for case in ADD_RMS_NORM_DYNAMIC_QUANT_V2.smoke_cases:
        assert all(r is None or r <= 1
                   for r in ADD_RMS_NORM_DYNAMIC_QUANT_V2.run_smoke_case(case)), case[0]


# ---- y_dtype (V1 and V2) -------------------------------------------------------------------

# The y dtypes the part has a kernel for (add_rms_norm_dynamic_quant_def.cpp: float8 and
# hifloat8 on Ascend 950 only)
Y_TAKEN = [I8, E4M3, E5M2, HIF8] if A950 else [I8]
VERSIONS = {"v1": (acl_py.add_rms_norm_dynamic_quant, acl_py.AddRmsNormDynamicQuant),
            "v2": (acl_py.add_rms_norm_dynamic_quant_v2, acl_py.AddRmsNormDynamicQuantV2)}


def _version_args(version, args):
    return args[:5] if version == "v1" else args


# (version, y dtype): each version's y dtypes on this part; int4 is V2's (an INT4 y on every
# part with a kernel; V1's op_api lists no INT4)
VERSION_Y = [(v, d) for v in ("v1", "v2") for d in Y_TAKEN] + [("v2", INT4)]


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("version,y_dtype", VERSION_Y,
                         ids=[f"{d.name}-{v}" for v, d in VERSION_Y])
def test_y_dtype_results_are_the_raw_calls_bits(path, version, y_dtype):
    """Each y dtype the part has a kernel for: y1, y2 (of y_dtype), x and the scales bit for
    bit what a raw call with y1Out/y2Out of that aclDataType writes, within one step of their
    grid of the float64 reference; out= entries of y_dtype give the same."""
    args = make((3, 4, 48), smooth=2, beta=version == "v2", seed=7)
    fn = VERSIONS[version][0]
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    call_args = _version_args(version, args if path == "numpy" else dev)
    res = fn(*call_args, y_dtype=y_dtype)
    expected = raw(args, None, y_dtype=y_dtype, v2=version == "v2")
    assert_bits(res, expected)
    check_reference(res, args, None, y_dtype=y_dtype)
    if y_dtype != I8 and y_dtype is not INT4:
        assert len(np.unique(host(res[0]).view(np.uint8))) > 40
    shape = args[0].shape
    if path == "numpy":     # HIFLOAT8's and INT4's host forms: uint8 codes, int8 values
        out_y = y_dtype.host if isinstance(y_dtype, acl_py.dtypes.AclDtype) else y_dtype
        out = (np.empty(shape, out_y), np.empty(shape, out_y), None, None, None)
    else:
        out = (acl_py.DeviceTensor.empty(shape, y_dtype),
               acl_py.DeviceTensor.empty(shape, y_dtype), None, None, None)
    res = fn(*call_args, y_dtype=y_dtype, out=out)
    assert res[0] is out[0] and res[1] is out[1]
    assert_bits(res, expected)


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
def test_int4_results_are_the_raw_int32_calls_words(path):
    """y_dtype int4 (V2's op_api takes the INT4-typed y as it is, on every part with a
    kernel): y1 and y2 bit for bit the words a raw call with INT32 y1Out/y2Out (last dim
    x1's / 8, the op_api's view of the INT4 result) writes, unpacked with unpack_int4; x and
    the scales the same."""
    args = make((3, 2, 64), smooth=2, beta=True, seed=11)
    shape = args[0].shape
    words = shape[:-1] + (shape[-1] // 8,)
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with Mask(None) as m:
        got = raw_call("AddRmsNormDynamicQuantV2", dev + [1e-6, m],
                       [(words, lib.ACL_INT32, 4), (words, lib.ACL_INT32, 4),
                        (shape, ACL_X[args[0].dtype], 2), (shape[:-1], lib.ACL_FLOAT, 4),
                        (shape[:-1], lib.ACL_FLOAT, 4)])
    call_args = args if path == "numpy" else dev
    res = acl_py.add_rms_norm_dynamic_quant_v2(*call_args, y_dtype=INT4)
    for k in (0, 1):
        want = acl_py.dtypes.unpack_int4(got[k]).reshape(shape)
        assert set(np.unique(want)) == set(range(-7, 8))     # Q = 7: symmetric
        if path == "device":
            assert res[k].element_type is INT4
        assert np.array_equal(host(res[k]), want)
    for k in (2, 3, 4):
        assert np.array_equal(host(res[k]).view(np.uint8).reshape(got[k].shape), got[k])
    check_reference(res, args, None, y_dtype=INT4)


@where_it_runs
def test_int4_out_from_an_odd_offset_lands_a_nibble_early():
    """An INT4 out= view contiguous from an odd element offset k: the device's copy puts the
    packed bytes at byte k // 2 (opbase's address of an INT4 offset rounds down;
    docs/emulator.md), so its values land one element early: the element before the view
    takes y1's first, the view's last keeps its value, nothing else outside is written."""
    args = make((2, 32), smooth=0, beta=False, seed=5)
    shape, n = args[0].shape, args[0].size
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    (want, *_) = acl_py.add_rms_norm_dynamic_quant_v2(*args, y_dtype=INT4)
    sentinel = np.full(n + 6, -5, I8)
    big = acl_py.DeviceTensor.from_numpy(sentinel, element_type=INT4)
    view = big[3:3 + n].reshape(shape)
    res = acl_py.add_rms_norm_dynamic_quant_v2(*dev, y_dtype=INT4,
                                               out=(view, None, None, None, None))
    assert res[0] is view
    got = big.to_numpy()
    assert np.array_equal(got[2:2 + n], want.reshape(-1))
    assert got[2 + n] == -5 and (got[:2] == -5).all() and (got[3 + n:] == -5).all()


@only_where(A950)   # float8 results are Ascend 950's
def test_v2_float8_with_a_mask_and_a_plan():
    args = make((6, 40), smooth="2", seed=3)
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in args]
    expected = raw(args, (False, True), y_dtype=E4M3)
    with acl_py.Stream() as st, acl_py.AddRmsNormDynamicQuantV2(
            *dev, output_mask=(False, True), y_dtype="float8_e4m3fn") as plan:
        for _ in range(2):
            plan.run(st)
            st.synchronize()
            assert plan.y2.dtype == E4M3 and plan.y1 is None
            assert_bits(plan.outputs, expected)


@only_where(not A950)   # Ascend 950 has float8 and hifloat8 kernels
@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("y_dtype", [E4M3, E5M2, HIF8], ids=lambda d: d.name)
def test_a_y_dtype_the_part_lacks_is_named(emulator, version, y_dtype):
    """A float8 y_dtype off Ascend 950, where phase one's list takes it but no kernel writes
    it: AclTypeError naming y_dtype and the part before any C call on NumPy arrays; on
    DeviceTensors after the emulator's phase one refused it (561003, docs/emulator.md),
    carrying the code; the plan too."""
    fn, plan = VERSIONS[version]
    call = ("aclnnAddRmsNormDynamicQuantGetWorkspaceSize" if version == "v1" else CALL)
    args = _version_args(version, make((2, 32)))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        fn(*args, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype" and acl_py.soc_name() in str(ei.value)
    assert call not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        fn(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"
    assert ei.value.code == 561003 and ei.value.call == call
    with pytest.raises(AclTypeError) as ei:
        plan(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"


@where_it_runs
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_default_y_dtype_is_int8(version):
    args = _version_args(version, make((3, 40)))
    fn = VERSIONS[version][0]
    res = fn(*args)
    res8 = fn(*args, y_dtype="int8")
    assert all(a is None and b is None or np.array_equal(a, b) for a, b in zip(res, res8))
    assert res[0].dtype == I8


@where_it_runs
def test_int4_y_dtype_is_v2s_and_needs_an_even_last_dim(emulator):
    """int4 results: V1's y dtypes lack it (refused naming y_dtype, no C call); V2 refuses an
    odd last dim naming x1, before any C call on NumPy arrays and after phase one's refusal
    on DeviceTensors, carrying its code (Ascend 950's tiling 561002; the docs' rule on Atlas
    A2/A3, 161002: docs/emulator.md); the plan too."""
    even = make((2, 32))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm_dynamic_quant(*even[:5], y_dtype="int4")
    assert ei.value.argument == "y_dtype" and "int4" in str(ei.value)
    odd = make((2, 33))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_rms_norm_dynamic_quant_v2(*odd, y_dtype=INT4)
    assert ei.value.argument == "x1" and "even" in str(ei.value)
    assert CALL not in emulator.call_counts()
    dev = [None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in odd]
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_rms_norm_dynamic_quant_v2(*dev, y_dtype=INT4)
    assert ei.value.argument == "x1"
    assert ei.value.code == (561002 if A950 else 161002) and ei.value.call == CALL
    with pytest.raises(AclArgumentError) as ei:
        acl_py.AddRmsNormDynamicQuantV2(*dev, y_dtype=INT4)
    assert ei.value.argument == "x1"


@where_it_runs
@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float16).reshape(4, 16); x2 = np.ones((4, 16), np.float16)
g = np.full(16, 0.5, np.float16); s = np.linspace(0.5, 1.5, 16, dtype=np.float16)
b = np.full(16, 0.25, np.float16)
y1, y2, x, s1, s2 = acl_py.add_rms_norm_dynamic_quant_v2(x1, x2, g, None, s, b,
                                                         output_mask=(False, True))
e = reference.add_rms_norm_dynamic_quant(x1, x2, g, None, s, beta=b, output_mask=(False, True))
assert y1 is None and s1 is None and y2.dtype == np.int8 and np.abs(y2 - e[1]).max() <= 1
assert np.allclose(s2, e[4], rtol=2e-3)
""")


# (the parts without a kernel: the argument checks before its lookup, a y dtype it lacks)
test_on_other_parts = run_on_parts(
    other_parts(("Ascend910A", "Ascend310P3", "Ascend910_9391", "Ascend950PR_9599")),
    "raw_call_and_reference or argument_errors or refusal or operator_rules or y_dtype "
    "or float8 or int4")
