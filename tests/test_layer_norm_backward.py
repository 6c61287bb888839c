"""acl_py.layer_norm_backward against the NumPy float64 reference (acl_py.reference).

Tolerances (acl_py.reference.RTOL, error_bound): each output element may differ from the
float64 reference by

    RTOL[input dtype] * magnitude + the rounding of the device's chain at the value,
    RTOL = 1e-5 for every input dtype (the device computes in float32),

where `magnitude` is the reference formula with every term replaced by its absolute value
(the scale float32 accumulation errors are proportional to; grad_input cancels), and the
rounding is half an ulp of the dtype the device rounds the output to first (grad_input:
input's; grad_weight/grad_bias: float32) plus half an ulp of the output dtype where that can
lose bits (reference.error_bound(..., output=name)). Inputs in fp16/bf16 are exact in the
reference (it widens the very values the operator reads), so the fp16/bf16 outputs are judged
mostly by their own rounding (the half ulp). EMULATOR_RTOL keeps the first term at 1e-5 on the
emulator even if RTOL is loosened for hardware.

Covered: every allowed dtype combination (input fp32/fp16/bf16; mean/rstd fp32 or input's;
weight/bias input's or fp32; each output fp32/fp16/bf16), all 8 masks with weight and bias
present/absent, ranks 1..8 with every split, non-contiguous inputs and outputs, empty tensors,
1 element to 2M elements, NumPy and DeviceTensor paths, out=, determinism across runs and
thread counts, and every row of the phase-one check list (docs/emulator.md) through the Python call
and, where Python rejects first, through the two-phase wrapper with raw arguments.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import (AclArgumentError, AclTypeError, ClosedError,
                           OperatorInvalidParameterError, OperatorNullPointerError)
from acl_py.ops import LAYER_NORM_BACKWARD

from _part_runs import bf16_where_it_runs

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = (F32, F16, BF16)
# the half dtype of the tests that mix one in: BF16, FLOAT16 on parts without BF16
HALF = BF16 if acl_py.supports_bfloat16() else F16
MASKS = tuple(itertools.product((True, False), repeat=3))
ALL = (True, True, True)


# ---- helpers -------------------------------------------------------------------------------

def make_case(shape, nrank, in_dt=F32, stat_dt=None, w_dt=None, weight=True, bias=True,
              seed=0):
    """NumPy inputs of one call: statistics computed (float64) from the rounded input, as a
    forward pass would have saved them."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    ns = shape[len(shape) - nrank:]
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(in_dt)
    dy = rng.standard_normal(shape).astype(in_dt)
    mean, rstd = reference.layer_norm_stats(x, ns)
    stat_dt = stat_dt or in_dt
    w_dt = w_dt or in_dt
    return dict(
        grad_out=dy, input=x, normalized_shape=ns, mean=mean.astype(stat_dt),
        rstd=rstd.astype(stat_dt),
        weight=(rng.standard_normal(ns) * 0.5 + 1.0).astype(w_dt) if weight else None,
        bias=rng.standard_normal(ns).astype(w_dt) if bias else None)


def to_device(case):
    return {k: (acl_py.DeviceTensor.from_numpy(v) if isinstance(v, np.ndarray) else v)
            for k, v in case.items()}


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


EMULATOR_RTOL = 1e-5


def _rtol():
    from acl_py._loader import library
    return EMULATOR_RTOL if library().backend.is_emulator else None


def check(results, case, mask=ALL, dtypes=None):
    """Asserts shapes, dtypes and values of `results` against the reference."""
    assert len(results) == 3
    in_dt = case["input"].dtype
    w = case["weight"]
    default = (in_dt, w.dtype if w is not None else in_dt, w.dtype if w is not None else in_dt)
    dtypes = dtypes or default
    args = dict(case)
    args.pop("bias")
    expected = reference.layer_norm_backward(**case, output_mask=mask)
    magnitude = reference.error_scale(**args, output_mask=mask)
    shapes = (case["input"].shape, case["normalized_shape"], case["normalized_shape"])
    for k, name in enumerate(("grad_input", "grad_weight", "grad_bias")):
        if not mask[k]:
            assert results[k] is None, name
            continue
        got = host(results[k])
        assert got.dtype == dtypes[k], (name, got.dtype)
        if got.shape != shapes[k]:   # out= may shape grad_weight/grad_bias otherwise (N = 1)
            assert got.size == int(np.prod(shapes[k])), (name, got.shape)
            got = got.reshape(shapes[k])
        reference.assert_close(got, expected[k], magnitude[k], in_dt, name, rtol=_rtol(),
                               output=name)


def sync():
    acl_py.default_stream().synchronize()


# ---- the vendor sample ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["numpy", "device"])
def test_vendor_sample_values(path):
    f = np.float32
    x = np.array([[2, 3], [4, 5]], f)
    args = (x, x.copy(), [2], np.array([[2], [3]], f), np.array([[4], [5]], f),
            np.ones(2, f), np.zeros(2, f))
    if path == "device":
        args = tuple(acl_py.DeviceTensor.from_numpy(a) if isinstance(a, np.ndarray) else a
                     for a in args)
    gi, gw, gb = acl_py.layer_norm_backward(*args)
    sync()
    assert host(gi).tolist() == [[-2.0, -94.0], [-877.5, -1747.5]]
    assert host(gw).tolist() == [20.0, 62.0]
    assert host(gb).tolist() == [6.0, 8.0]


# ---- dtypes --------------------------------------------------------------------------------

# (input, mean/rstd, weight/bias): every combination the operator allows (statistics not
# narrower than input: fp16 input takes bf16 statistics too); those with BF16 only where the
# part has it.
INPUT_COMBOS = bf16_where_it_runs(sorted({(i, s, w) for i in DTYPES for s in DTYPES
                                          if s.itemsize >= i.itemsize for w in (i, F32)},
                                         key=str))
OUT_COMBOS = bf16_where_it_runs(itertools.product(DTYPES, repeat=3))


@pytest.mark.parametrize("combo", INPUT_COMBOS, ids=lambda c: "-".join(d.name for d in c))
@pytest.mark.parametrize("outs", OUT_COMBOS, ids=lambda c: "-".join(d.name for d in c))
def test_dtype_combinations(combo, outs):
    in_dt, stat_dt, w_dt = combo
    case = make_case((3, 2, 5), 1, in_dt, stat_dt, w_dt)
    d = to_device(case)
    out = (acl_py.DeviceTensor.empty((3, 2, 5), outs[0]), acl_py.DeviceTensor.empty(5, outs[1]),
           acl_py.DeviceTensor.empty(5, outs[2]))
    res = acl_py.layer_norm_backward(**d, out=out)
    assert res[0] is out[0] and res[1] is out[1] and res[2] is out[2]
    sync()
    check(res, case, dtypes=outs)


@pytest.mark.parametrize("combo", INPUT_COMBOS, ids=lambda c: "-".join(d.name for d in c))
def test_default_output_dtypes(combo):
    """grad_input: input's dtype; grad_weight/grad_bias: weight's, else input's."""
    in_dt, stat_dt, w_dt = combo
    for weight in (True, False):
        case = make_case((4, 6), 1, in_dt, stat_dt, w_dt, weight=weight)
        res = acl_py.layer_norm_backward(**case)
        exp_w = w_dt if weight else in_dt
        assert [r.dtype for r in res] == [in_dt, exp_w, exp_w]
        check(res, case)


def test_byte_swapped_numpy_arrays():
    """Byte-swapped (">f4") NumPy inputs and out= arrays give the native call's numbers: the
    inputs are copied to the device in its order, the results written back in the array's
    own (a dtype check on the raw dtype said "float32 is not supported")."""
    case = make_case((4, 6), 1, F32, seed=5)
    want = acl_py.layer_norm_backward(**case)
    swap = {k: (v.astype(v.dtype.newbyteorder("S")) if isinstance(v, np.ndarray) else v)
            for k, v in case.items()}
    got = acl_py.layer_norm_backward(**swap)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
    out = tuple(np.zeros(w.shape, w.dtype.newbyteorder("S")) for w in want)
    res = acl_py.layer_norm_backward(**case, out=out)
    for r, o, w in zip(res, out, want):
        assert r is o
        np.testing.assert_array_equal(o, w)


# ---- masks, weight and bias ----------------------------------------------------------------

@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
@pytest.mark.parametrize("weight,bias", [(True, True), (True, False), (False, True),
                                         (False, False)], ids=["wb", "w", "b", "none"])
def test_masks_numpy(mask, weight, bias):
    case = make_case((5, 7), 1, F32, weight=weight, bias=bias, seed=3)
    res = acl_py.layer_norm_backward(**case, output_mask=mask)
    assert all(r is None or isinstance(r, np.ndarray) for r in res)
    check(res, case, mask)


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
def test_masks_device(mask):
    case = make_case((4, 3, 8), 2, F16, F32, F32, seed=4)
    res = acl_py.layer_norm_backward(**to_device(case), output_mask=list(mask))
    assert all(r is None or isinstance(r, acl_py.DeviceTensor) for r in res)
    sync()
    check(res, case, mask)


def test_bias_is_not_read():
    case = make_case((3, 4), 1, F32)
    a = acl_py.layer_norm_backward(**case)
    b = acl_py.layer_norm_backward(**dict(case, bias=case["bias"] * 100 + 7))
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


# ---- ranks and splits ----------------------------------------------------------------------

DIMS = (3, 2, 1, 4, 2, 1, 3, 2)
RANK_SPLITS = [(r, k) for r in range(1, 9) for k in range(1, r + 1)]


@pytest.mark.parametrize("rank,nrank", RANK_SPLITS, ids=lambda v: str(v))
def test_ranks_and_splits(rank, nrank):
    shape = DIMS[:rank]
    case = make_case(shape, nrank, F32, seed=rank * 10 + nrank)
    res = acl_py.layer_norm_backward(**to_device(case))
    sync()
    check(res, case)


def test_mean_shapes_with_m_elements():
    """mean/rstd only need M elements: [A..., 1...], [A...] and flat [M] all work."""
    case = make_case((2, 3, 4), 1, F32)
    for shape in ((2, 3, 1), (2, 3), (6,)):
        c = dict(case, mean=case["mean"].reshape(shape), rstd=case["rstd"].reshape(shape))
        check(acl_py.layer_norm_backward(**c), c)


# ---- non-contiguous views ------------------------------------------------------------------

def test_non_contiguous_inputs_and_outputs():
    """Transposed, strided and offset views in, strided/offset views out; memory around the
    output views is left untouched."""
    case = make_case((6, 5), 1, F32, seed=7)
    x, dy = case["input"], case["grad_out"]
    # input: the transpose of a (5, 6) tensor; grad_out: every other row of a (12, 5) one,
    # starting at row 1 (an offset); weight: a strided slice.
    xt = acl_py.DeviceTensor.from_numpy(np.ascontiguousarray(x.T)).T
    big = np.zeros((12, 5), F32)
    big[1::2] = dy
    dyv = acl_py.DeviceTensor.from_numpy(big)[1::2]
    wbig = np.zeros(15, F32)
    wbig[2::3] = case["weight"]
    wv = acl_py.DeviceTensor.from_numpy(wbig)[2::3]
    assert not xt.is_contiguous and not dyv.is_contiguous and dyv.offset == 5
    mean = acl_py.DeviceTensor.from_numpy(case["mean"])
    rstd = acl_py.DeviceTensor.from_numpy(case["rstd"])
    sentinel = np.float32(-12345.0)
    gi_store = acl_py.DeviceTensor.from_numpy(np.full((5, 8), sentinel, F32))
    gi = gi_store[:, 1:7].T            # (6, 5), strides (1, 8), offset 1
    gwb_store = acl_py.DeviceTensor.from_numpy(np.full(12, sentinel, F32))
    gw, gb = gwb_store[1::2][:5], gwb_store[2::2][:5]
    res = acl_py.layer_norm_backward(dyv, xt, [5], mean, rstd, wv, None, out=(gi, gw, gb))
    sync()
    check(res, case)
    store = gi_store.to_numpy()
    assert (store[:, 0] == sentinel).all() and (store[:, 7] == sentinel).all()
    assert gwb_store.to_numpy()[0] == sentinel and gwb_store.to_numpy()[11] == sentinel


def test_non_contiguous_numpy_inputs_and_outputs():
    case = make_case((4, 6), 1, F16, F32, F32, seed=8)
    fortran = {k: (np.asfortranarray(v) if isinstance(v, np.ndarray) else v)
               for k, v in case.items()}
    fortran["grad_out"] = np.repeat(case["grad_out"], 2, axis=1)[:, ::2]   # strided view
    gi = np.full((6, 4), np.nan, F16).T                                      # transposed out
    gw = np.full(12, np.nan, F32)[::2]                                       # strided out
    res = acl_py.layer_norm_backward(**fortran, out=(gi, gw, None))
    assert res[0] is gi and res[1] is gw and res[2].dtype == F32
    check(res, case)


# ---- empty tensors and sizes ---------------------------------------------------------------

@pytest.mark.parametrize("shape,nrank", [((0, 4), 1), ((2, 0, 3), 1), ((0,), 1)],
                         ids=["M0", "M0-batch", "N0-rank1"])
def test_empty_batch_zero_fills_weight_and_bias_grads(shape, nrank):
    case = make_case(shape, nrank, F32)
    d = to_device(case)
    n = int(np.prod(case["normalized_shape"]))
    nan = np.full(case["normalized_shape"], np.nan, F32)
    out = (None, acl_py.DeviceTensor.from_numpy(nan), acl_py.DeviceTensor.from_numpy(nan))
    res = acl_py.layer_norm_backward(**d, out=out)
    sync()
    assert res[0].shape == shape
    for r in res[1:]:
        assert r.to_numpy().tolist() == np.zeros(case["normalized_shape"]).tolist()
        assert r.size == n
    check(res, case)


def test_empty_rows():
    case = make_case((3, 0), 1, F32)
    res = acl_py.layer_norm_backward(**case)
    assert [r.shape for r in res] == [(3, 0), (0,), (0,)]


def test_single_element():
    case = make_case((1,), 1, F32)
    check(acl_py.layer_norm_backward(**case), case)


@pytest.mark.parametrize("shape,dt", bf16_where_it_runs([
    pytest.param((1024, 2048), F32, id="2M-fp32"),
    pytest.param((3, 700_001), BF16, id="long-rows-bf16")]))
def test_large(shape, dt):
    case = make_case(shape, 1, dt, F32, dt, seed=11)
    check(acl_py.layer_norm_backward(**case), case)


# ---- the NumPy path's out= ---------------------------------------------------------------------

def test_numpy_out_written_in_place():
    case = make_case((3, 4), 1, F32)
    out = (np.empty((3, 4), HALF), np.empty(4, F16), np.empty(4, F32))
    res = acl_py.layer_norm_backward(**case, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, case, dtypes=(HALF, F16, F32))


def test_out_none_entries_are_allocated_and_masked_entries_ignored():
    case = to_device(make_case((3, 4), 1, F32))
    gw = acl_py.DeviceTensor.empty(4)
    gi_unused = acl_py.DeviceTensor.empty((3, 4))
    res = acl_py.layer_norm_backward(**case, output_mask=(False, True, True),
                                     out=(gi_unused, gw, None))
    assert res[0] is None and res[1] is gw and isinstance(res[2], acl_py.DeviceTensor)


# ---- asynchrony and streams ----------------------------------------------------------------

def test_device_call_on_a_stream_keeps_its_buffers_alive():
    case = make_case((64, 33), 1, F32, seed=5)
    with acl_py.Stream() as s:
        d = to_device(case)
        res = acl_py.layer_norm_backward(**d, stream=s)
        # Drop every input before the stream ran: their memory must wait for it.
        for t in d.values():
            if isinstance(t, acl_py.DeviceTensor):
                t.close()
        del d
        s.synchronize()
        check(res, case)


def test_numpy_call_on_a_stream():
    case = make_case((4, 9), 1, F32)
    with acl_py.Stream() as s:
        check(acl_py.layer_norm_backward(**case, stream=s), case)


# ---- determinism ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4096, 48), (40, 3000)], ids=["many-rows", "long-rows"])
def test_bit_identical_across_runs_and_thread_counts(emulator, shape):
    case = make_case(shape, 1, HALF, F32, F32, seed=13)
    d = to_device(case)
    outs = []
    try:
        for n in (1, 2, 4, 2):
            emulator.set_num_threads(n)
            res = acl_py.layer_norm_backward(**d)
            sync()
            outs.append(b"".join(r.to_numpy().tobytes() for r in res))
    finally:
        emulator.set_num_threads(0)   # back to the default
    assert all(o == outs[0] for o in outs[1:])
    check(res, case)


# ---- the phase-one check list (docs/emulator.md), through Python and through the raw wrapper ----

def _raw(**over):
    """Valid raw arguments of the two-phase wrapper (declaration order), with overrides."""
    case = to_device(make_case((2, 3, 4), 1, F32))
    args = dict(gradOut=case["grad_out"], input=case["input"],
                normalizedShape=acl_py.IntArray([4]), mean=case["mean"], rstd=case["rstd"],
                weightOptional=case["weight"], biasOptional=case["bias"],
                outputMask=acl_py.BoolArray([True, True, True]),
                gradInputOut=acl_py.DeviceTensor.empty((2, 3, 4)),
                gradWeightOut=acl_py.DeviceTensor.empty(4),
                gradBiasOut=acl_py.DeviceTensor.empty(4))
    args.update(over)
    return tuple(args[p.name] for p in LAYER_NORM_BACKWARD.params)


def raw_call(**over):
    LAYER_NORM_BACKWARD.launch(_raw(**over), device=0)
    sync()


def assert_op_error(excinfo, cls, code, *words):
    e = excinfo.value
    assert type(e) is cls, e
    assert e.code == code and e.call == "aclnnLayerNormBackwardGetWorkspaceSize", e
    for w in words:
        assert w in e.message, (w, e.message)
    assert e.message in str(e)


@pytest.mark.parametrize("cname,pyname", [
    ("gradOut", "grad_out"), ("input", "input"), ("normalizedShape", "normalized_shape"),
    ("mean", "mean"), ("rstd", "rstd"), ("outputMask", "output_mask")])
def test_row1_required_argument_null(cname, pyname):
    kwargs = make_case((2, 4), 1, F32)
    kwargs[pyname] = None
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**kwargs)
    assert ei.value.argument == pyname
    with pytest.raises(OperatorNullPointerError) as ei:
        raw_call(**{cname: None})
    assert_op_error(ei, OperatorNullPointerError, 161001, cname, "NULL")


@pytest.mark.parametrize("mask", [(True, True), (True,) * 4, ()])
def test_row2_mask_length(mask):
    with pytest.raises(AclArgumentError) as ei:
        acl_py.layer_norm_backward(**make_case((2, 4), 1, F32), output_mask=mask)
    assert ei.value.argument == "output_mask" and "3" in str(ei.value)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        raw_call(outputMask=acl_py.BoolArray(mask))
    assert_op_error(ei, OperatorInvalidParameterError, 161002, "outputMask", "3")


@pytest.mark.parametrize("k,cname", list(enumerate(["gradInputOut", "gradWeightOut",
                                                     "gradBiasOut"])))
def test_row3_requested_output_null(k, cname):
    # Python allocates a None out= entry, so the call succeeds...
    case = make_case((2, 4), 1, F32)
    out = [np.empty((2, 4), F32), np.empty(4, F32), np.empty(4, F32)]
    out[k] = None
    check(acl_py.layer_norm_backward(**case, out=tuple(out)), case)
    # ... and the operator's rule is reached with a raw NULL.
    with pytest.raises(OperatorNullPointerError) as ei:
        raw_call(**{cname: None})
    assert_op_error(ei, OperatorNullPointerError, 161001, cname)
    # A NULL output whose mask entry is false is fine.
    mask = [True, True, True]
    mask[k] = False
    raw_call(**{cname: None, "outputMask": acl_py.BoolArray(mask)})


ROW4 = [
    # (python argument, its dtype, C name)
    ("input", np.float64, "input"),
    ("grad_out", np.float16, "gradOut"),
    ("grad_out", np.int32, "gradOut"),
    ("weight", np.float16, "weightOptional"),
    ("bias", BF16, "biasOptional"),
    ("mean", np.float16, "mean"),
    ("rstd", np.float64, "rstd"),
]


@pytest.mark.parametrize("pyname,dt,cname", ROW4,
                         ids=[f"{p}-{np.dtype(d).name}" for p, d, _c in ROW4])
def test_row4_dtypes(pyname, dt, cname):
    kwargs = make_case((2, 4), 1, F32)
    if pyname == "input":   # keep grad_out's dtype equal so that input is the culprit
        kwargs["grad_out"] = kwargs["grad_out"].astype(dt)
    kwargs[pyname] = kwargs[pyname].astype(dt)
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**kwargs)
    assert ei.value.argument == pyname and np.dtype(dt).name in str(ei.value)
    d = to_device(kwargs)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        raw_call(**{cname: d[pyname]})   # only this argument changed (gradOut stays FLOAT)
    assert_op_error(ei, OperatorInvalidParameterError, 161002, cname, "dtype")


def test_row4_output_dtype():
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**make_case((2, 4), 1, F32),
                                   out=(np.empty((2, 4), np.float64), None, None))
    assert ei.value.argument.startswith("out[0]")
    with pytest.raises(OperatorInvalidParameterError) as ei:
        raw_call(gradWeightOut=acl_py.DeviceTensor.empty(4, np.int32))
    assert_op_error(ei, OperatorInvalidParameterError, 161002, "gradWeightOut", "dtype")


def test_row5_limits_reach_the_operator():
    """Rank > 8 and normalized_shape length outside 1..8 are the operator's rules: the
    Python call surfaces its typed error."""
    big = make_case((1,) * 9 + (2,), 1, F32)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.layer_norm_backward(**big)
    assert_op_error(ei, OperatorInvalidParameterError, 161002, "rank")
    nine = make_case((2,) * 9, 9, F32)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.layer_norm_backward(**to_device(nine))
    assert_op_error(ei, OperatorInvalidParameterError, 161002, "rank")
    case = make_case((2, 4), 1, F32)
    zero = dict(case, normalized_shape=(), weight=None, bias=None,
                mean=case["mean"].reshape(-1)[:1].repeat(8), rstd=case["rstd"][:1].repeat(8))
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.layer_norm_backward(**zero)
    assert_op_error(ei, OperatorInvalidParameterError, 161002, "normalizedShape", "length")


def _shape_case(name):
    """(python kwargs changes, python argument named, raw overrides, C name) per rule."""
    c = make_case((2, 3, 4), 1, F32)
    e = acl_py.DeviceTensor.empty
    return {
        "trailing": (dict(normalized_shape=(5,)), "normalized_shape",
                     dict(normalizedShape=acl_py.IntArray([5])), "normalizedShape"),
        "input-rank": (dict(normalized_shape=(2, 2, 3, 4)), "normalized_shape",
                       dict(normalizedShape=acl_py.IntArray([2, 2, 3, 4])), "input rank"),
        "weight": (dict(weight=np.ones(5, F32)), "weight",
                   dict(weightOptional=e(5)), "weightOptional"),
        "bias": (dict(bias=np.ones((4, 1), F32)), "bias",
                 dict(biasOptional=e((4, 1))), "biasOptional"),
        "grad_out": (dict(grad_out=np.ones((3, 2, 4), F32)), "grad_out",
                     dict(gradOut=e((3, 2, 4))), "gradOut"),
        "rstd": (dict(rstd=c["rstd"].reshape(6)), "rstd",
                 dict(rstd=e(6)), "rstd"),
        "mean": (dict(mean=np.ones((2, 1, 1), F32), rstd=np.ones((2, 1, 1), F32)), "mean",
                 dict(mean=e((2, 1)), rstd=e((2, 1))), "mean"),
        "grad_input": (dict(out=(np.empty((2, 12), F32), None, None)), "out[0]",
                       dict(gradInputOut=e((2, 12))), "gradInputOut"),
        "grad_weight": (dict(out=(None, np.empty(5, F32), None)), "out[1]",
                        dict(gradWeightOut=e(5)), "gradWeightOut"),
        "grad_bias": (dict(out=(None, None, np.empty((2, 3), F32))), "out[2]",
                      dict(gradBiasOut=e((2, 3))), "gradBiasOut"),
    }[name], c


@pytest.mark.parametrize("rule", ["trailing", "input-rank", "weight", "bias", "grad_out", "rstd",
                                  "mean", "grad_input", "grad_weight", "grad_bias"])
def test_row5_shapes(rule):
    (change, pyname, raw, cname), case = _shape_case(rule)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.layer_norm_backward(**dict(case, **change))
    assert ei.value.argument.startswith(pyname), ei.value
    assert not isinstance(ei.value, AclTypeError)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        raw_call(**raw)
    assert_op_error(ei, OperatorInvalidParameterError, 161002, cname)


def test_row6_all_false_mask_does_nothing(emulator):
    case = make_case((2, 4), 1, F32)
    assert acl_py.layer_norm_backward(**case, output_mask=(False,) * 3) == (None,) * 3
    d = to_device(case)
    emulator.reset_call_counts()
    assert acl_py.layer_norm_backward(**d, output_mask=(False,) * 3) == (None,) * 3
    sync()
    counts = emulator.call_counts()
    assert counts.get("aclnnLayerNormBackwardGetWorkspaceSize") == 1   # still validated
    assert "aclrtMalloc" not in counts                                 # nothing allocated
    # The operator still checks the rest: an all-false mask does not skip row 5.
    with pytest.raises(OperatorInvalidParameterError):
        raw_call(outputMask=acl_py.BoolArray([False] * 3), gradOut=acl_py.DeviceTensor.empty(3))


# ---- other Python-level argument errors ------------------------------------------------------

def test_argument_kinds():
    case = make_case((2, 4), 1, F32)
    d = to_device(case)
    with pytest.raises(AclTypeError) as ei:          # a host array among device tensors
        acl_py.layer_norm_backward(**dict(d, mean=case["mean"]))
    assert ei.value.argument == "mean"
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**dict(case, weight=d["weight"]))
    assert ei.value.argument == "weight"
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**dict(case, input=[[1.0] * 4] * 2))
    assert ei.value.argument == "input"
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**dict(case, normalized_shape=(4.0,)))
    assert ei.value.argument == "normalized_shape[0]"
    with pytest.raises(AclArgumentError) as ei:
        acl_py.layer_norm_backward(**dict(case, normalized_shape=(-4,)))
    assert ei.value.argument == "normalized_shape[0]"
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**case, output_mask=(1, 1, 1))
    assert ei.value.argument == "output_mask[0]"
    with pytest.raises(AclArgumentError) as ei:
        acl_py.layer_norm_backward(**case, out=(None, None))
    assert ei.value.argument == "out"
    with pytest.raises(AclArgumentError) as ei:
        ro = np.empty((2, 4), F32)
        ro.flags.writeable = False
        acl_py.layer_norm_backward(**case, out=(ro, None, None))
    assert ei.value.argument.startswith("out[0]")
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**d, stream="default")
    assert ei.value.argument == "stream"


@pytest.mark.parametrize("cname,bad", [
    ("normalizedShape", (4,)), ("outputMask", [True, True, True]), ("gradOut", "x"),
    ("mean", np.zeros((2, 1), F32))])
def test_raw_launch_argument_kinds(cname, bad, emulator):
    """The operator's raw launch (C argument order, acl_py objects or cffi pointers) names
    the parameter given a Python value of the wrong kind, before calling the operator."""
    args = _raw(**{cname: bad})
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        LAYER_NORM_BACKWARD.launch(args, device=0)
    error = ei.value
    del ei      # its traceback holds this frame, and the frame the arguments
    assert error.argument == cname
    assert type(bad).__name__ in error.problem
    assert [k for k in emulator.call_counts() if k.startswith("aclnn")] == []


def test_closed_tensor_is_refused_before_any_call(emulator):
    d = to_device(make_case((2, 4), 1, F32))
    d["rstd"].close()
    emulator.reset_call_counts()
    with pytest.raises(ClosedError):
        acl_py.layer_norm_backward(**d)
    assert "aclnnLayerNormBackwardGetWorkspaceSize" not in emulator.call_counts()


def test_python_checks_make_no_c_call(emulator):
    case = make_case((2, 4), 1, F32)
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError):
        acl_py.layer_norm_backward(**dict(case, normalized_shape=(3,)))
    assert [k for k in emulator.call_counts() if not k.startswith("aclemu")] == []


# ---- DeviceTensor calls: the library checks, Python names -----------------------------------

def _refused_case(rule):
    """Device arguments breaking one rule of the operator (phase one's to check)."""
    case = make_case((2, 3, 4), 1, F32)
    e = acl_py.DeviceTensor.empty
    change, name, cls = {
        "dtype": (dict(mean=case["mean"].astype(F16)), "mean", AclTypeError),
        "like": (dict(grad_out=case["grad_out"].astype(F16)), "grad_out", AclTypeError),
        "trailing": (dict(normalized_shape=(5,)), "normalized_shape", AclArgumentError),
        "weight": (dict(weight=np.ones(5, F32)), "weight", AclArgumentError),
        "out-shape": (dict(out=(e((2, 13)), None, None)), "out[0]", AclArgumentError),
        "out-dtype": (dict(out=(None, e(4, np.int32), None)), "out[1]", AclTypeError),
    }[rule]
    out = change.pop("out", None)
    return to_device(dict(case, **change)), out, name, cls


@pytest.mark.parametrize("rule", ["dtype", "like", "trailing", "weight", "out-shape",
                                  "out-dtype"])
def test_device_call_names_the_argument_phase_one_refused(emulator, rule):
    """On DeviceTensors the operator's rules are checked once, by phase one; when it refuses,
    the Python checks name the argument, and the error carries the refusal's status code and
    message (its cause)."""
    d, out, name, cls = _refused_case(rule)
    mem = acl_py.get_pool().used_bytes()
    emulator.reset_call_counts()
    with pytest.raises(cls) as ei:
        acl_py.layer_norm_backward(**d, out=out)
    e = ei.value
    assert e.argument.startswith(name), e
    assert e.code == 161002 and e.call == "aclnnLayerNormBackwardGetWorkspaceSize", e
    assert e.message and e.message in str(e) and "161002" in str(e)
    assert isinstance(e.__cause__, OperatorInvalidParameterError)
    assert e.__cause__.message == e.message
    counts = emulator.call_counts()
    assert counts.get("aclnnLayerNormBackwardGetWorkspaceSize") == 1
    assert "aclnnLayerNormBackward" not in counts                 # nothing launched
    assert acl_py.get_pool().used_bytes() == mem                  # new outputs given back
    # The same arguments as NumPy arrays: refused in Python before any C call, no status.
    if out is None:
        with pytest.raises(cls) as ei:
            acl_py.layer_norm_backward(**{k: host(v) for k, v in d.items()})
        assert ei.value.argument.startswith(name) and ei.value.code is None
    for t in [*d.values(), *(out or ())]:
        if isinstance(t, acl_py.DeviceTensor):
            t.close()


def test_device_call_error_pickles_with_its_status():
    import pickle
    d, out, name, cls = _refused_case("dtype")
    with pytest.raises(cls) as ei:
        acl_py.layer_norm_backward(**d)
    e = pickle.loads(pickle.dumps(ei.value))
    assert type(e) is cls and e.argument == name and e.code == 161002
    assert str(e) == str(ei.value)


def test_device_call_checks_what_only_python_can(emulator):
    """Kinds, conversions, closed tensors: refused before any C call on the device path."""
    case = make_case((2, 4), 1, F32)
    d = to_device(case)
    emulator.reset_call_counts()
    for change, name in [(dict(mean=case["mean"]), "mean"),
                         (dict(normalized_shape=(4.0,)), "normalized_shape[0]"),
                         (dict(output_mask=(1, 1, 1)), "output_mask[0]"),
                         (dict(output_mask=(True, True)), "output_mask")]:
        with pytest.raises(AclArgumentError) as ei:
            acl_py.layer_norm_backward(**dict(d, **change))
        assert ei.value.argument == name and ei.value.code is None
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm_backward(**d, out=(np.empty((2, 4), F32), None, None))
    assert ei.value.argument.startswith("out[0]")
    assert [k for k in emulator.call_counts() if not k.startswith("acl")] == []
    assert "aclnnLayerNormBackwardGetWorkspaceSize" not in emulator.call_counts()


def test_python_layer_allocates_the_workspace_and_frees_it():
    """acl_py's two-phase path takes phase one's (non-zero) workspace from the stream-ordered
    pool and gives it back: after the run and a synchronize no pool bytes stay in use beyond
    the results, and a second call reuses the cached block rather than growing the pool."""
    f = np.float32
    x = np.arange(6 * 40, dtype=f).reshape(6, 40) / 100
    mean = x.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    args = [acl_py.DeviceTensor.from_numpy(a) for a in (x, x, mean, rstd, np.ones(40, f))]
    pool = acl_py.get_pool()
    used0 = pool.used_bytes()
    outs = acl_py.layer_norm_backward(args[0], args[1], [40], args[2], args[3], args[4])
    acl_py.synchronize()
    results = pool.used_bytes() - used0
    assert results < 4096  # the three results only: the >= 16 MiB workspace went back
    total = pool.total_bytes()
    if acl_py.soc_name() != "Ascend310P3" and acl_py.soc_name() != "Ascend910A":
        assert total >= 16 * 1024 * 1024  # the LayerNormGradV3 tiling's system workspace
    again = acl_py.layer_norm_backward(args[0], args[1], [40], args[2], args[3], args[4])
    acl_py.synchronize()
    # the cached workspace block served the second call: the pool grew by its results only
    assert pool.total_bytes() - total < 1 << 20
    ref = np.asarray(outs[0].to_numpy())
    assert np.array_equal(np.asarray(again[0].to_numpy()), ref)


# ---- where gradInput sits (the row kernel's store order) ---------------------------------------

def _placed(shape, dt, at):
    """An empty contiguous DeviceTensor of `shape` starting `at` bytes past a 4 KiB boundary
    (a view into a larger block), and the block."""
    es = np.dtype(dt).itemsize
    block = acl_py.DeviceTensor.empty((int(np.prod(shape)) + 8192 // es,), dt)
    start = ((at - block.data_ptr) % 4096) // es
    return block[start:start + int(np.prod(shape))].reshape(shape), block


# (input, gradOut, gradInput) bytes past a 4 KiB boundary: the row kernel stores gradInput
# upwards, downwards (gradInput 128 bytes past input: upwards would alias its loads), or
# upwards with ordinary stores (input 128 bytes below, gradOut 128 above: both ways alias);
# row_store_order in emulator/src/ops/row_vectors.h
PLACEMENTS = {"upwards": (0, 2048, 1024), "downwards": (0, 2048, 128),
              "aliased": (0, 256, 128)}


@pytest.mark.parametrize("shape,dt", [((256, 16384), F16), ((33, 1000), F32), ((5, 777), HALF)],
                         ids=["f16-streamed", "f32", "half-tail"])
def test_grad_input_placement_changes_no_bit(shape, dt):
    # every store order gives the bits of a gradInput stored through a strided view (tile
    # buffers, always upwards); (256, 16384) FLOAT16 is large enough for non-temporal stores
    case = make_case(shape, 1, in_dt=dt, stat_dt=F32, w_dt=F32, bias=False, seed=11)
    m, n = shape
    ref_dx = acl_py.DeviceTensor.zeros((n, m), dt).T
    outs = (ref_dx, acl_py.DeviceTensor.zeros((n,), F32), acl_py.DeviceTensor.zeros((n,), F32))
    small = [acl_py.DeviceTensor.from_numpy(case[k]) for k in ("mean", "rstd", "weight")]
    keep = []

    def run(dy, x, gi):
        o = (gi, acl_py.DeviceTensor.zeros((n,), F32), acl_py.DeviceTensor.zeros((n,), F32))
        acl_py.layer_norm_backward(dy, x, (n,), small[0], small[1], small[2], None, ALL, out=o)
        return [np.ascontiguousarray(t.to_numpy()).view(np.uint8) for t in o]

    dy0 = acl_py.DeviceTensor.from_numpy(case["grad_out"])
    x0 = acl_py.DeviceTensor.from_numpy(case["input"])
    want = run(dy0, x0, ref_dx)
    assert np.any(want[0])
    for name, (at_x, at_dy, at_dx) in PLACEMENTS.items():
        x, bx = _placed(shape, dt, at_x)
        dy, bdy = _placed(shape, dt, at_dy)
        gi, bgi = _placed(shape, dt, at_dx)
        keep += [bx, bdy, bgi]
        x.copy_from_numpy(case["input"])
        dy.copy_from_numpy(case["grad_out"])
        assert [t.data_ptr % 4096 for t in (x, dy, gi)] == [at_x, at_dy, at_dx]
        got = run(dy, x, gi)
        for label, g, w in zip(("gradInput", "gradWeight", "gradBias"), got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: {label}")
