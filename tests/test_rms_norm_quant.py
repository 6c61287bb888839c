"""acl_py.rms_norm_quant / acl_py.RmsNormQuant (aclnnRmsNormQuant through the declarative
operator layer) within one quantization step of the float64 reference, its argument errors
(typed, naming the argument and carrying phase one's code, nothing leaked: the autouse leak
check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import RMS_NORM_QUANT

from _cann_path import run_on_cann_path
from _part_runs import (bf16_where_it_runs, cases_where, only_where, other_parts,
                        run_on_parts, runs_here)
from _raw_call import raw_call
from acl_py.raw import lib

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I8 = np.dtype(np.int8)
E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
HIF8, INT4 = acl_py.dtypes.HIFLOAT8, acl_py.dtypes.INT4
ACL_Y = {I8: lib.ACL_INT8, E4M3: lib.ACL_FLOAT8_E4M3FN, E5M2: lib.ACL_FLOAT8_E5M2}
# The Atlas A2/A3, inference and Ascend 950 kernels; the Atlas training series has none: the
# tests of the kernel's work are defined where it has one, those of the argument checks before
# its lookup run on every part (the refusal there: test_declared_parts)
HAS_KERNEL = runs_here(RMS_NORM_QUANT)
where_it_runs = only_where(HAS_KERNEL)
PART = acl_py.soc.short_soc_version(acl_py.soc_name())
V2 = PART == "Ascend950"    # RmsNormQuantV2: per-column scale, no epsilon rule
# Atlas A2/A3: int4 results only through an INT32 y, eight to a word (the op_api's view)
INT4_AS_WORDS = PART in ("Ascend910B", "Ascend910_93")


def make(shape, dt=F16, scale=0.05, offset=3, seed=0):
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    b = (0.25 * rng.standard_normal(n)).astype(dt)
    return x, g, b, np.array([scale], dt), np.array([offset], I8)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(y, args, eps=1e-6):
    y = host(y)
    assert y.dtype == I8 and y.shape == args[0].shape
    exp = reference.rms_norm_quant(*args, eps)[0]
    assert np.max(np.abs(y - exp)) <= reference.QUANT_STEP
    reference.assert_close(y, exp, np.ones(exp.shape), args[0].dtype, "y")


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([pytest.param(F16, id="f16"),
                                                   pytest.param(BF16, id="bf16")]))
def test_against_reference(path, dt):
    args = make((3, 5, 67), dt)
    call_args = args if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                   for a in args)
    (y,) = acl_py.rms_norm_quant(*call_args, 1e-5)
    assert isinstance(y, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
    check(y, args, 1e-5)


@where_it_runs
def test_gamma_beta_of_1xN_out_given_and_strided_views():
    x, g, b, s, o = make((4, 6, 32))
    out = (np.empty((4, 6, 32), I8),)
    res = acl_py.rms_norm_quant(x, g.reshape(1, 32), b.reshape(1, 32), s, o, out=out)
    assert res[0] is out[0]
    check(res[0], (x, g, b, s, o))
    big = acl_py.DeviceTensor.from_numpy(np.repeat(x, 2, axis=2))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (g, b, s, o)]
    (y,) = acl_py.rms_norm_quant(big[:, :, ::2], *dev)
    check(y, (x, g, b, s, o))


@where_it_runs
def test_saturates():
    args = make((2, 64), scale=0.001, offset=0)
    (y,) = acl_py.rms_norm_quant(*args)
    assert y.min() == -128 and y.max() == 127
    check(y, args)


ERRORS = [
    (dict(x=[[1.0, 2.0]]), AclTypeError, "x"),
    (dict(x=np.ones((2, 4), np.float64)), AclTypeError, "x"),
    (dict(gamma=np.ones(5, F16)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((2, 4), F16)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F32)), AclTypeError, "gamma"),
    (dict(beta=np.ones(3, F16)), AclArgumentError, "beta"),
    # a float32 scale beside x float16: Ascend 950 takes it with a float32 or int32 offset
    (dict(scale=np.ones(1, F32)), AclTypeError, "offset" if V2 else "scale"),
    (dict(scale=np.ones(1, BF16)), AclTypeError, "scale"),
    *cases_where(not V2,    # Ascend 950 takes an offset of the scale's dtype
                 pytest.param(dict(offset=np.ones(1, F16)), AclTypeError, "offset",
                              id="offset-float16-AclTypeError")),
    (dict(scale=np.ones(0, F16), offset=np.ones(0, I8)), AclArgumentError, "scale"),
    (dict(offset=np.ones(1, np.int32)), AclTypeError, "offset"),
    (dict(offset=np.ones(2, I8)), AclArgumentError, "offset"),
    *cases_where(not V2, (dict(epsilon=0.0), AclArgumentError, "epsilon")),  # 950: any
    *cases_where(V2,    # Ascend 950's tiling
                 pytest.param(dict(scale=np.ones(3, F16), offset=np.ones(3, I8)),
                              AclArgumentError, "scale",
                              id="scale-not-trailing-AclArgumentError")),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(out=(np.empty((2, 4), F16),)), AclTypeError, "out[0] (y)"),
    (dict(out=(np.empty((2, 5), I8),)), AclArgumentError, "out[0] (y)"),
]


def _error_id(case):
    change, exc, argument = case.values if hasattr(case, "values") else case
    return getattr(case, "id", None) or f"{argument}-{exc.__name__}"


@pytest.mark.parametrize("change,exc,argument", ERRORS, ids=[_error_id(c) for c in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    x, g, b, s, o = make((2, 4))
    case = dict(dict(x=x, gamma=g, beta=b, scale=s, offset=o), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.rms_norm_quant(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()


@pytest.mark.parametrize("name,value,code", [
    ("gamma", np.ones((2, 4), F16), 561103),     # the rank-2 reshape
    ("beta", np.ones(3, F16), 161002),
    ("offset", np.ones(1, np.int32), 161002),
    # the tiling's rule (not RmsNormQuantV2's: Ascend 950 takes any epsilon), after the op_api
    # refused the Atlas training series' x (its dtype list there: none)
    *cases_where(HAS_KERNEL and not V2, ("epsilon", 0.0, 561103)),
    *cases_where(V2, ("scale", np.ones(2, F16), 561103)),   # RmsNormQuantV2's tiling
])
def test_device_refusal_names_the_argument_and_carries_the_code(name, value, code):
    args = dict(zip(("x", "gamma", "beta", "scale", "offset"), make((2, 4))))
    dev = {k: acl_py.DeviceTensor.from_numpy(v) for k, v in args.items()}
    eps = 1e-6
    if name == "epsilon":
        eps = value
    else:
        dev[name] = acl_py.DeviceTensor.from_numpy(value)
    if name == "scale":
        dev["offset"] = acl_py.DeviceTensor.from_numpy(np.ones(value.shape, I8))
    with pytest.raises((AclArgumentError, AclTypeError)) as ei:
        acl_py.rms_norm_quant(**dev, epsilon=eps)
    assert ei.value.argument == name
    assert ei.value.code == code and ei.value.call == "aclnnRmsNormQuantGetWorkspaceSize"


@only_where(V2)   # Ascend 950's per-column scale and epsilon (its own run or its child)
def test_per_column_scale_and_any_epsilon_on_ascend_950():
    """RmsNormQuantV2 reads scale and offset per column when scale has x's trailing dims; it
    takes epsilon 0."""
    x, g, b, _, _ = make((3, 5, 40))
    rng = np.random.default_rng(9)
    s = (0.02 + 0.05 * rng.random(40)).astype(F16)
    o = rng.integers(-5, 6, 40).astype(I8)
    (y,) = acl_py.rms_norm_quant(x, g, b, s, o)
    exp = reference.rms_norm_quant(x, g, b, s, o, per_column=True)[0]
    assert np.max(np.abs(y - exp)) <= reference.QUANT_STEP
    assert np.max(np.abs(y - reference.rms_norm_quant(x, g, b, s, o)[0])) > 1
    (y0,) = acl_py.rms_norm_quant(x, g, b, s[:1], o[:1], 0.0)
    check(y0, (x, g, b, s[:1], o[:1]), 0.0)


# Ascend 950's scale/offset dtype relations (hicann/ops-nn norm/rms_norm_quant/op_host/op_api/
# aclnn_rms_norm_quant.cpp, its register-based branch): (x, scale, offset)
V2_DTYPES_TAKEN = [(F32, F32, F32), (F16, F32, np.int32), (BF16, F32, F32), (F16, F16, F16),
                   (BF16, BF16, I8)]
V2_DTYPES_REFUSED = [((F32, F16, F32), "scale"), ((F32, F32, I8), "offset"),
                     ((F16, F32, I8), "offset"), ((F16, BF16, I8), "scale"),
                     ((BF16, BF16, np.int32), "offset")]


def _with_dtypes(x_dt, scale_dt, offset_dt, shape=(3, 5, 40)):
    x, g, b, _, _ = make(shape, x_dt)
    return x, g, b, np.array([0.03], scale_dt), np.array([2], offset_dt)


@only_where(V2)   # Ascend 950's scale/offset dtypes (its own run or its child)
@pytest.mark.parametrize("dts", V2_DTYPES_TAKEN,
                         ids=lambda d: "-".join(np.dtype(t).name for t in d))
def test_ascend_950_takes_its_scale_and_offset_dtypes(dts):
    """Ascend 950 takes a float32 x (float32 scale and offset) and float or int32 offsets;
    the result is y as the float64 reference quantizes it (the offset added as its value)."""
    args = _with_dtypes(*dts)
    (y,) = acl_py.rms_norm_quant(*args)
    check(y, args)
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    (yd,) = acl_py.rms_norm_quant(*dev)
    assert np.array_equal(yd.to_numpy(), y)


@pytest.mark.parametrize("dts,argument", V2_DTYPES_REFUSED,
                         ids=lambda d: "-".join(np.dtype(t).name for t in d)
                         if isinstance(d, tuple) else d)
def test_scale_and_offset_dtype_relations_are_checked_before_any_call(emulator, dts,
                                                                       argument):
    """A relation the part's op_api refuses is named in Python before phase one (off Ascend
    950 scale of x's dtype and an int8 offset; a float32 x is phase one's to refuse there),
    and phase one refuses it too (161002) when given DeviceTensors, naming the same
    argument."""
    args = _with_dtypes(*dts)
    if not V2 and dts[0] == F32:
        with pytest.raises(AclError) as ei:
            acl_py.rms_norm_quant(*args)
        assert ei.value.code == 161002 and "x dtype" in ei.value.message
        return
    if not V2 and dts[1] != dts[0]:
        argument = "scale"
    elif not V2:
        argument = "offset"
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*args)
    assert ei.value.argument == argument, ei.value
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*dev)
    assert ei.value.argument == argument
    assert ei.value.code == 161002 and ei.value.call == "aclnnRmsNormQuantGetWorkspaceSize"


# ---- y_dtype ---------------------------------------------------------------------------------

# The y dtypes the part computes (phase one's y list: aclnn_rms_norm_quant.cpp; float8 on
# Ascend 950 only)
Y_TAKEN = [I8, E4M3, E5M2] if V2 else [I8]


def _y_inputs(x_dt=F16):
    """Inputs whose results spread over the float8 grids: big and tiny (subnormal) values,
    some beyond e4m3fn's largest finite value (448), a per-tensor scale."""
    x, g, b, _, _ = make((3, 4, 48), x_dt, seed=5)
    g = g.copy()
    g[:8], g[8:16] = 40, 0.002
    return x, g.astype(x_dt), b, np.array([0.01], x_dt), np.array([1], I8)


def _within_one_step(y, exp, y_dtype):
    if y_dtype == I8:
        assert np.max(np.abs(y.astype(np.float64) - exp)) <= reference.QUANT_STEP
        return
    got = y.astype(np.float64)
    assert np.all(np.abs(got - exp) <= reference.float8_step(exp, y_dtype))


@where_it_runs
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("y_dtype", Y_TAKEN, ids=lambda d: d.name)
def test_y_dtype_results_are_the_raw_calls_bits(path, y_dtype):
    """Each y dtype the part computes: the function's y (of y_dtype, x's shape) is bit for
    bit what a raw aclnnRmsNormQuant call with y of that aclDataType writes, and within one
    step of its grid of the float64 reference; the DeviceTensor path and out= give the same;
    the dtype may be named by its name too."""
    args = _y_inputs()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    (raw,) = raw_call("RmsNormQuant", dev + [1e-6], [(args[0].shape, ACL_Y[y_dtype])])
    call_args = args if path == "numpy" else dev
    (y,) = acl_py.rms_norm_quant(*call_args, y_dtype=y_dtype.name)
    y = host(y)
    assert y.dtype == y_dtype and y.shape == args[0].shape
    assert np.array_equal(y.view(np.uint8), raw)
    exp = reference.rms_norm_quant(*args, y_dtype=y_dtype)[0]
    _within_one_step(y, exp, y_dtype)
    if y_dtype != I8:
        big = float(ml_dtypes.finfo(y_dtype).max)
        assert np.any(np.abs(y.astype(np.float64)) == big) or y_dtype == E5M2
        assert len(np.unique(y.view(np.uint8))) > 40
    out = ((np.empty(args[0].shape, y_dtype),) if path == "numpy" else
           (acl_py.DeviceTensor.empty(args[0].shape, y_dtype),))
    (yo,) = acl_py.rms_norm_quant(*call_args, y_dtype=y_dtype, out=out)
    assert yo is out[0]
    assert np.array_equal(host(yo).view(np.uint8), raw)


def _int4_inputs():
    """Inputs whose int4 results spread over [-8, 7] and saturate at both ends."""
    x, g, b, _, _ = make((3, 4, 48), seed=9)
    return x, g, b, np.array([0.25], F16), np.array([1], I8)


@only_where(V2)   # hifloat8 and int4 results are Ascend 950's (its run or its child)
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("y_dtype", [HIF8, INT4], ids=lambda d: d.name)
def test_hifloat8_and_int4_results_are_the_raw_calls_bits(path, y_dtype):
    """Ascend 950's HIFLOAT8 and INT4 y: bit for bit what a raw call with y of that
    aclDataType writes (INT4: its packed bytes, the raw y's first half), read as uint8 codes /
    int8 values by NumPy callers and as HIFLOAT8 / INT4 DeviceTensors; within one step of
    their grid of the float64 reference; out= (a NumPy array of the host form, a DeviceTensor
    of the element type) gives the same; the plan too, run twice."""
    args = _y_inputs() if y_dtype is HIF8 else _int4_inputs()
    shape = args[0].shape
    n = args[0].size
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    (raw,) = raw_call("RmsNormQuant", dev + [1e-6], [(shape, y_dtype.code)])
    raw = raw.reshape(-1)[:n // y_dtype.per_byte]     # the elements' bytes
    call_args = args if path == "numpy" else dev

    def as_bytes(y):
        if isinstance(y, acl_py.DeviceTensor):
            assert y.element_type is y_dtype and y.dtype == np.uint8 and y.shape == shape
            packed = y.to_numpy(packed=True) if y_dtype is INT4 else y.to_numpy()
            y = y.to_numpy()
            assert np.array_equal(packed.reshape(-1), acl_py.dtypes.pack_int4(y)
                                  if y_dtype is INT4 else y.reshape(-1))
        assert y.dtype == y_dtype.host and y.shape == shape
        return acl_py.dtypes.pack_int4(y) if y_dtype is INT4 else y.reshape(-1)

    (y,) = acl_py.rms_norm_quant(*call_args, y_dtype=y_dtype.name)
    assert np.array_equal(as_bytes(y), raw)
    values = host(y)
    exp = reference.rms_norm_quant(*args, y_dtype=y_dtype)[0]
    if y_dtype is HIF8:
        got = acl_py.dtypes.hifloat8_to_float32(values).astype(np.float64)
        assert np.all(np.abs(got - exp) <= reference.float8_step(exp, HIF8))
        assert len(np.unique(values)) > 40
    else:
        assert np.max(np.abs(values - exp)) <= reference.QUANT_STEP
        assert set(np.unique(values)) == set(range(-8, 8))
    out = ((np.empty(shape, y_dtype.host),) if path == "numpy" else
           (acl_py.DeviceTensor.empty(shape, y_dtype),))
    (yo,) = acl_py.rms_norm_quant(*call_args, y_dtype=y_dtype, out=out)
    assert yo is out[0] and np.array_equal(as_bytes(yo), raw)
    if path == "numpy":     # an array of the other host form (DeviceTensors: phase one's)
        with pytest.raises(AclTypeError) as ei:
            acl_py.rms_norm_quant(*args, y_dtype=INT4 if y_dtype is HIF8 else HIF8, out=out)
        assert ei.value.argument == "out[0] (y)" and "held as" in str(ei.value)
    else:
        with acl_py.Stream() as st, acl_py.RmsNormQuant(*dev, y_dtype=y_dtype) as plan:
            for _ in range(2):
                plan.run(st)
                st.synchronize()
                assert np.array_equal(as_bytes(plan.y), raw)


@only_where(V2)   # int4 results are Ascend 950's (its own run or its child)
def test_int4_needs_an_even_last_dim(emulator):
    """INT4 y on Ascend 950: x's last dim even (aclnn_rms_norm_quant.cpp CheckParams: two
    values to a byte), AclArgumentError naming x before any C call on NumPy arrays, with
    phase one's 161002 on DeviceTensors."""
    args = make((2, 15))
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError) as ei:
        acl_py.rms_norm_quant(*args, y_dtype="int4")
    assert ei.value.argument == "x" and "even" in str(ei.value)
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclArgumentError) as ei:
        acl_py.rms_norm_quant(*dev, y_dtype="int4")
    assert ei.value.argument == "x" and ei.value.code == 161002


@only_where(not V2)   # Ascend 950 computes these results
# int4 where the part has no int4 results (Atlas A2/A3 compute them as INT32 words)
@pytest.mark.parametrize("y_dtype", [E4M3, E5M2, HIF8, *cases_where(not INT4_AS_WORDS, INT4)],
                         ids=lambda d: d.name)
def test_a_y_dtype_the_part_lacks_is_named(emulator, y_dtype):
    """A float8, hifloat8 or int4 y_dtype where the part does not compute it (int4: the Atlas
    inference parts): AclTypeError naming y_dtype and the part before any C call on NumPy
    arrays; on DeviceTensors after phase one refused it, carrying its code (161002: its y
    list)."""
    args = make((2, 16))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*args, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype" and acl_py.soc_name() in str(ei.value)
    assert ei.value.code is None
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"
    assert ei.value.code == 161002 and ei.value.call == "aclnnRmsNormQuantGetWorkspaceSize"
    with pytest.raises(AclTypeError) as ei:     # a plan checks in Python first
        acl_py.RmsNormQuant(*dev, y_dtype=y_dtype)
    assert ei.value.argument == "y_dtype"


def _int4_words_inputs():
    """Inputs whose int4 results spread over [-8, 7] and saturate at both ends, with a last
    dim a multiple of 8 (Atlas A2/A3's INT32 y)."""
    x, g, b, _, _ = make((3, 2, 64), seed=4)
    return x, g, b, np.array([0.25], F16), np.array([-1], I8)


@only_where(V2 or INT4_AS_WORDS)   # elsewhere no int4 results (the y list: INT8)
@pytest.mark.parametrize("path", ["numpy", "device"])
def test_int4_results_are_the_raw_int32_calls_words(path):
    """y_dtype int4 on every part computing int4 results (Atlas A2/A3, where acl-py hands
    phase one the INT32 words over the INT4 tensor's bytes, and Ascend 950): bit for bit
    the words a raw call with an INT32 y (last dim N / 8) writes, unpacked with
    unpack_int4, read as int8 values (NumPy) or an INT4 DeviceTensor; within one step of the
    float64 reference; out= (an int8 array; an INT4 view into a larger sentinel-filled
    tensor, starting at a word, nothing written outside it); the plan, run, rebound to
    another INT4 tensor, run again."""
    args = _int4_words_inputs()
    shape, n = args[0].shape, args[0].size
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    (raw,) = raw_call("RmsNormQuant", dev + [1e-6],
                      [(shape[:-1] + (shape[-1] // 8,), lib.ACL_INT32, 4)])
    want = acl_py.dtypes.unpack_int4(raw).reshape(shape)
    exp = reference.rms_norm_quant(*args, y_dtype=INT4)[0]
    assert np.max(np.abs(want - exp)) <= reference.QUANT_STEP
    assert set(np.unique(want)) == set(range(-8, 8))
    call_args = args if path == "numpy" else dev

    def values(y):
        if isinstance(y, acl_py.DeviceTensor):
            assert y.element_type is INT4 and y.shape == shape
            if y.is_contiguous and y.offset == 0:
                assert np.array_equal(y.to_numpy(packed=True).reshape(-1),
                                      raw.reshape(-1)[:n // 2])
            y = y.to_numpy()
        assert y.dtype == I8 and y.shape == shape
        return y

    (y,) = acl_py.rms_norm_quant(*call_args, y_dtype="int4")
    assert np.array_equal(values(y), want)
    if path == "numpy":
        out = (np.full(shape, 99, I8),)
        (yo,) = acl_py.rms_norm_quant(*args, y_dtype=INT4, out=out)
        assert yo is out[0] and np.array_equal(yo, want)
        return
    # (a view contiguous from a word: strided INT4 views are not modelled on Ascend 950)
    sentinel = np.full(n + 40, -3, I8)
    big = acl_py.DeviceTensor.from_numpy(sentinel, element_type=INT4)
    view = big[16:16 + n].reshape(shape)
    (yo,) = acl_py.rms_norm_quant(*dev, y_dtype=INT4, out=(view,))
    assert yo is view and np.array_equal(values(yo), want)
    after = big.to_numpy()
    after[16:16 + n] = -3
    assert np.array_equal(after, sentinel)      # nothing written outside the view
    with acl_py.Stream() as st, acl_py.RmsNormQuant(*dev, y_dtype=INT4) as plan:
        plan.run(st)
        st.synchronize()
        assert np.array_equal(values(plan.y), want)
        other = acl_py.DeviceTensor.empty(shape, INT4)
        plan.rebind(y=other)
        assert plan.y is other
        plan.run(st)
        st.synchronize()
        assert np.array_equal(values(other), want)


# Ascend 950 takes the INT4-typed y from acl-py, the others no int4 results
@only_where(INT4_AS_WORDS)
def test_int4_words_rules_are_named(emulator):
    """Atlas A2/A3's INT32 form of int4 results: x's last dim a multiple of 8 (the tiling's
    rule, 561103: AclArgumentError naming x before any C call on NumPy arrays, with the code
    on DeviceTensors; an even one is not enough), and an out= INT4 tensor whose bytes are
    not whole words (a half-word start, a strided last dim) named as out[0] (y) with the
    ViewCopy's 561103; a plan rebound to such a tensor or to another dtype is refused
    naming y, the plan left as it was."""
    args = make((2, 12))
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError) as ei:
        acl_py.rms_norm_quant(*args, y_dtype="int4")
    assert ei.value.argument == "x" and "multiple of 8" in str(ei.value)
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclArgumentError) as ei:
        acl_py.rms_norm_quant(*dev, y_dtype="int4")
    assert ei.value.argument == "x" and ei.value.code == 561103
    args = _int4_words_inputs()
    shape = args[0].shape
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    big = acl_py.DeviceTensor.zeros(shape[:-1] + (2 * shape[-1],), INT4)
    for view, words in ((big[:, :, 4:4 + shape[-1]], "word"),
                        (big[:, :, ::2], "strided along its last dim")):
        with pytest.raises(AclArgumentError) as ei:
            acl_py.rms_norm_quant(*dev, y_dtype=INT4, out=(view,))
        assert ei.value.argument == "out[0] (y)" and words in str(ei.value)
        assert ei.value.code == 561103
    assert not big.to_numpy().any()
    with acl_py.RmsNormQuant(*dev, y_dtype=INT4) as plan:
        y = plan.y
        with pytest.raises(AclArgumentError) as ei:
            plan.rebind(y=big[:, :, 4:4 + shape[-1]])
        assert ei.value.argument == "y" and "word" in str(ei.value)
        with pytest.raises(AclTypeError) as ei:
            plan.rebind(y=acl_py.DeviceTensor.empty(shape[:-1] + (shape[-1] // 8,), np.int32))
        assert ei.value.argument == "y" and "int4" in str(ei.value)
        assert plan.y is y


@pytest.mark.parametrize("value,words", [
    (np.int32, "int32 must be one of int8, float8_e4m3fn, float8_e5m2, hifloat8, int4"),
    (np.float16, "float16 must be one of"),
    (ml_dtypes.int4, "int4 has no aclDataType"),     # ml_dtypes' int4: one value a byte
    (2, "is an int"),
    ([np.int8], "not a dtype"),
])
def test_y_dtype_values_outside_the_list_are_named(emulator, value, words):
    args = make((2, 16))
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*args, y_dtype=value)
    assert ei.value.argument == "y_dtype" and words in str(ei.value), ei.value
    assert "aclnnRmsNormQuantGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*dev, y_dtype=value)
    assert ei.value.argument == "y_dtype"


def test_out_of_another_dtype_than_y_dtype_is_named():
    args = make((2, 16))
    want = Y_TAKEN[-1]
    other = I8 if want != I8 else E4M3
    with pytest.raises(AclTypeError) as ei:
        acl_py.rms_norm_quant(*args, y_dtype=want, out=(np.empty((2, 16), other),))
    assert ei.value.argument == "out[0] (y)" and want.name in str(ei.value)


@where_it_runs
def test_default_y_dtype_is_int8():
    """No y_dtype: int8, as an explicit np.int8 gives, bit for bit."""
    args = make((3, 40))
    (y,) = acl_py.rms_norm_quant(*args)
    (y8,) = acl_py.rms_norm_quant(*args, y_dtype=np.int8)
    assert y.dtype == I8 and np.array_equal(y, y8)
    check(y, args)


@only_where(V2)   # float8 results are Ascend 950's (its own run or its child)
@pytest.mark.parametrize("y_dtype", [E4M3, E5M2], ids=lambda d: d.name)
def test_plan_with_a_float8_y_dtype(y_dtype):
    args = _y_inputs()
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    (raw,) = raw_call("RmsNormQuant", dev + [1e-6], [(args[0].shape, ACL_Y[y_dtype])])
    with acl_py.Stream() as st, acl_py.RmsNormQuant(*dev, y_dtype=y_dtype) as plan:
        for _ in range(2):
            plan.run(st)
            st.synchronize()
            assert plan.y.dtype == y_dtype
            assert np.array_equal(plan.y.to_numpy().view(np.uint8), raw)


@where_it_runs
def test_operator_rules_surface_as_its_typed_error():
    x, g, b, s, o = make((1,) * 8 + (4,))
    with pytest.raises(AclError) as ei:
        acl_py.rms_norm_quant(x, g, b, s, o)
    assert ei.value.code == 161002 and ei.value.call == "aclnnRmsNormQuantGetWorkspaceSize"
    assert "x rank 9" in ei.value.message


@where_it_runs
def test_plan_runs_repeatedly_on_changing_contents():
    args = make((8, 96))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in args]
    with acl_py.Stream() as st, acl_py.RmsNormQuant(*dev, 1e-5) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_rms.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        for k in range(3):
            xk = (args[0].astype(F32) * (k + 1) - k).astype(F16)
            dev[0].buffer.copy_from_host(xk)
            assert plan.run(st) == (plan.y,)
            st.synchronize()
            check(plan.y, (xk,) + args[1:], 1e-5)
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in RMS_NORM_QUANT.params] == ["x", "gamma", "beta", "scale",
                                                        "offset", "epsilon", "y"]
    assert [a.py for a in RMS_NORM_QUANT.inputs][-1] == "y_dtype"   # Python's only
    assert [o.py for o in RMS_NORM_QUANT.outputs] == ["y"]


@where_it_runs
def test_smoke_cases_run():
    for case in RMS_NORM_QUANT.smoke_cases:
        assert all(r <= 1 for r in RMS_NORM_QUANT.run_smoke_case(case)), case[0]


@where_it_runs
@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float16).reshape(4, 16); g = np.full(16, 0.5, np.float16)
b = np.zeros(16, np.float16); s = np.array([0.01], np.float16); o = np.array([1], np.int8)
(y,) = acl_py.rms_norm_quant(x, g, b, s, o)
e = reference.rms_norm_quant(x, g, b, s, o)[0]
assert y.dtype == np.int8 and np.abs(y - e).max() <= 1
""")


# (the Atlas training series: the argument checks before the kernel's lookup)
test_on_other_parts = run_on_parts(other_parts(("Ascend910A", "Ascend310P3", "Ascend910_9391",
                                                "Ascend950PR_9599")),
                                   "reference or saturates or argument_errors or refusal or "
                                   "ascend_950 or plan or y_dtype or int4")
