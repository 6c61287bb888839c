"""The emulator's aclnnBatchNormElemtBackward through raw calls: phase one's checks, their order,
codes and messages (hicann/ops-nn norm/sync_batch_norm_backward_elemt/op_api/
aclnn_batch_norm_elemt_backward.cpp; the stricter choices in docs/emulator.md), what is written
(gradInput only; nothing for an empty input), and the device's numbers: against the float64
reference, and bit for bit against the op_api's chain written in NumPy (the compute dtype, the
count's float32 ReduceSum, RealDiv and the cast of meanDy/meanDyXmu, the
SyncBatchNormBackwardElemt kernel's float32 DAG, the casts of its result); the other parts in
their own processes; the vendor's op_api unit test cases replayed with the status the op_api's
code gives (the unit test asserts none).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_group_norm import ARCH, BF16_PART, lane_sum
from _emu_aclnn import SOC, refused_by, run_phase_two
from _part_runs import cases_where, only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnBatchNormElemtBackwardGetWorkspaceSize
P2 = lib.aclnnBatchNormElemtBackward
CALL = "aclnnBatchNormElemtBackwardGetWorkspaceSize"
FIND_KERNEL = 561003
SENTINEL = -77.0
INFERENCE = ARCH == 2002   # no kernel: non-empty calls refused (docs: not supported)
# the kernel's tests are defined off the Atlas inference series (the parts with it run them)
where_it_runs = only_where(not INFERENCE)
I32 = np.dtype(np.int32)
f = np.float32


def phase_one(*a, ws=True, ex=True):
    return aclnn_phase_one(P1, *a, ws=ws, ex=ex)


def view(arena, a, kind="contig"):
    if a is None:
        return None
    a = np.asarray(a)
    return DevView(arena, a, kind=kind, acl_dtype=lib.ACL_INT32 if a.dtype == I32 else None)


def call(arena, dy, x, mean, invstd, w, sdy, sdyx, counter, gdt=None, kind="contig"):
    """Runs the operator; returns gradInput read back (gdt: its dtype, default input's)."""
    vs = [view(arena, a, kind) for a in (dy, x, mean, invstd, w, sdy, sdyx, counter)]
    vdx = DevView(arena, shape=x.shape, dtype=gdt or x.dtype, kind=kind, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(*vs, vdx))
    for v, a in zip(vs, (dy, x, mean, invstd, w, sdy, sdyx, counter)):
        if v is not None:   # the inputs untouched
            assert np.array_equal(v.read(), a)
    return vdx.read()


def inputs(shape, dt, seed=0, vdt=None, ranks=3, cdt=I32, affine=True):
    """gradOut, input (dt), mean, invstd, weight, sumDy, sumDyXmu (vdt, default dt), counter
    (ranks counts of this batch's size, cdt)."""
    vdt = vdt or dt
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[1]
    n = math.prod(shape) // c
    dy = rng.standard_normal(shape).astype(dt)
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(dt)
    mean = (0.25 + 0.1 * rng.standard_normal(c)).astype(vdt)
    invstd = (0.5 + rng.random(c)).astype(vdt)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(vdt) if affine else None
    sdy = (ranks * math.sqrt(n) * rng.standard_normal(c)).astype(vdt)
    sdyx = (ranks * math.sqrt(n) * rng.standard_normal(c)).astype(vdt)
    counter = np.full(ranks, n).astype(cdt)
    return dy, x, mean, invstd, w, sdy, sdyx, counter


def rows_of(a):
    return np.moveaxis(a.astype(f), 1, 0).reshape(a.shape[1], -1)


def shaped(rows, shape):
    return np.moveaxis(rows.reshape((shape[1], shape[0]) + tuple(shape[2:])), 0, 1)


def compute_dtype(dy, x, mean, invstd, w, sdy, sdyx):
    ts = (dy, x, mean, invstd, w, sdy, sdyx)
    return F16 if all(t is not None and t.dtype == F16 for t in ts) else F32


def device_chain(dy, x, mean, invstd, w, sdy, sdyx, counter, gdt=None):
    """gradInput as the op_api's chain computes it (rounded to the compute dtype, then cast to
    gradInput's dtype)."""
    cdt = compute_dtype(dy, x, mean, invstd, w, sdy, sdyx)
    c = x.shape[1]
    cnt = counter.reshape(-1).astype(f)
    count = lane_sum(cnt[None, :])[0] if cnt.size else f(0)
    wv = np.ones(c, f) if w is None else w.astype(f)
    with np.errstate(all="ignore"):
        mdy = (sdy.astype(f) / count).astype(cdt).astype(f)[:, None]
        mdyx = (sdyx.astype(f) / count).astype(cdt).astype(f)[:, None]
        D, X = rows_of(dy), rows_of(x)
        mu, rs = mean.astype(f)[:, None], invstd.astype(f)[:, None]
        a = (D - mdy).astype(f)
        b = (X - mu).astype(f)
        k = (mdyx * (rs * rs).astype(f)).astype(f)
        d = (a - (b * k).astype(f)).astype(f)
        gi = (d * (rs * wv[:, None]).astype(f)).astype(f)
    return shaped(gi.astype(cdt), x.shape).astype(gdt or x.dtype)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def same_bits(got, want):
    assert got.dtype == want.dtype
    assert np.array_equal(bits(got), bits(want)), (got, want)


# ---- numbers ---------------------------------------------------------------------------------

SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 96, 7), (3, 4, 2, 1, 3, 2), (5, 2),
          (1, 70, 1)]


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_chain_bit_for_bit(arena, dt, shape):
    args = inputs(shape, dt)
    same_bits(call(arena, *args), device_chain(*args))


@where_it_runs
@pytest.mark.parametrize("dt,vdt", [(F32, F32), (F16, F16), (F16, F32),
                                    *cases_where(BF16_PART, (BF16, BF16), (BF16, F32))],
                         ids=str)
@pytest.mark.parametrize("shape", SHAPES[:4], ids=str)
def test_reference(arena, dt, vdt, shape):
    """Against the float64 reference within the tolerance of the compute dtype (FLOAT16 only
    when every floating input is)."""
    args = inputs(shape, dt, seed=3, vdt=vdt)
    got = call(arena, *args)
    cdt = compute_dtype(*args[:7])
    ratio = reference.max_error_ratio(got, reference.batch_norm_elemt_backward(*args)[0],
                                      reference.batch_norm_elemt_backward_error_scale(*args)[0],
                                      cdt if cdt == F16 else dt)
    assert ratio <= 1, ratio


@where_it_runs
@pytest.mark.parametrize("mixed", ["weight", "sumDy", "none"])
def test_compute_dtype(arena, mixed):
    """FLOAT16 data compute in FLOAT16 only when every floating input is FLOAT16: a FLOAT
    weight or sum, or no weight (the op_api's FLOAT fill), makes it FLOAT."""
    args = list(inputs((4, 5, 6), F16, seed=1))
    if mixed == "weight":
        args[4] = args[4].astype(F32)
    elif mixed == "sumDy":
        args[5] = args[5].astype(F32)
    else:
        args[4] = None
    assert compute_dtype(*args[:7]) == F32
    same_bits(call(arena, *args), device_chain(*args))
    # a FLOAT gradInput beside FLOAT16 compute gets the FLOAT16 values widened
    allf16 = inputs((4, 5, 6), F16, seed=1)
    got = call(arena, *allf16, gdt=F32)
    same_bits(got, device_chain(*allf16, gdt=F32))
    assert np.array_equal(got, got.astype(F16).astype(F32))


@where_it_runs
@pytest.mark.parametrize("cdt", [I32, F16, F32], ids=str)
@pytest.mark.parametrize("cshape", [(), (1,), (4,), (2, 3), (0,)], ids=str)
def test_counter(arena, cdt, cshape):
    """counter: any rank up to 8, summed whole in float32 (INT32 cast to FLOAT); an empty one
    counts 0 (infinities and NaNs, as the device's division gives)."""
    args = list(inputs((3, 4, 5), F32, seed=2))
    rng = np.random.default_rng(7)
    args[7] = rng.integers(1, 40, size=cshape).astype(cdt)
    got = call(arena, *args)
    same_bits(got, device_chain(*args))


@where_it_runs
def test_int32_counter_rounds_to_float(arena):
    """Counts above 2**24 are rounded to float32 (to even) before they are summed."""
    args = list(inputs((2, 3, 4), F32))
    args[7] = np.array([2 ** 24 + 1, 2 ** 24 + 3, 5], I32)
    same_bits(call(arena, *args), device_chain(*args))


@where_it_runs
@pytest.mark.parametrize("gdt", [F32, F16, *cases_where(BF16_PART, BF16)], ids=str)
def test_grad_input_dtype(arena, gdt):
    """gradInput of another dtype than input's: the result cast to it (ties to even)."""
    args = inputs((3, 4, 5), F32, seed=4)
    same_bits(call(arena, *args, gdt=gdt), device_chain(*args, gdt=gdt))


@where_it_runs
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    args = inputs((2, 6, 3, 4), F16)
    same_bits(call(arena, *args, kind=kind), call(arena, *args))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, *args)
    lib.aclemuSetNumThreads(4)
    same_bits(call(arena, *args), one)


@where_it_runs
def test_grad_input_may_be_grad_out(arena):
    args = inputs((3, 4, 5), F32)
    want = device_chain(*args)
    vs = [view(arena, a) for a in args]
    run_phase_two(arena, P2, phase_one(*vs, vs[0]))
    same_bits(vs[0].read(), want)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0)], ids=str)
def test_empty_input_writes_nothing(arena, shape):
    x = np.ones(shape, F32)
    vs = [DevView(arena, x), DevView(arena, x)] + [DevView(arena, np.ones(3, F32))
                                                   for _ in range(5)]
    vc = DevView(arena, np.ones(2, I32), acl_dtype=lib.ACL_INT32)
    vdx = DevView(arena, shape=shape, dtype=F32, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(*vs, vc, vdx))
    assert vdx.read().size == 0   # read() asserts the whole storage kept its sentinel


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("dy", "x", "mean", "invstd", "w", "sdy", "sdyx", "counter", "dx")
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE, "int8": lib.ACL_INT8}


def views(arena, shape=(2, 4, 3), dt=F32, shapes=None, dts=None):
    c = shape[1] if len(shape) > 1 else 1
    shapes = ({k: (shape if k in ("dy", "x", "dx") else (c,)) for k in NAMES}
              | {"counter": (2,)} | (shapes or {}))
    dts = {k: dt for k in NAMES} | {"counter": "int32"} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


def refused(arena, vs, code, *words, **kw):
    return refused_by(phase_one, CALL, vs, code, *words, **kw)


def accepted(arena, vs):
    rc, _, ex = phase_one(*vs)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*vs, **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 6, 7, 8])
def test_required_tensors(arena, k):
    vs = views(arena, dts={"dy": "int32"})
    vs[k] = None
    name = ("gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter",
            "gradInput")[k]
    refused(arena, vs, NULLPTR, f"{name} is NULL")


def test_weight_is_optional(arena):
    vs = views(arena)
    vs[4] = None
    if INFERENCE:
        refused(arena, vs, FIND_KERNEL, "not supported on")
    else:
        accepted(arena, vs)


PARAM_CASES = [
    ("gradOut dtype", dict(dts={"dy": "int32"}), ("gradOut dtype",)),
    ("input dtype", dict(dts={"x": "double"}), ("input dtype",)),
    ("mean dtype", dict(dts={"mean": "int32"}), ("mean dtype",)),
    ("invstd dtype", dict(dts={"invstd": "int32"}), ("invstd dtype",)),
    ("weight dtype", dict(dts={"w": "int32"}), ("weight dtype",)),
    ("sumDy dtype", dict(dts={"sdy": "int32"}), ("sumDy dtype",)),
    ("sumDyXmu dtype", dict(dts={"sdyx": "int32"}), ("sumDyXmu dtype",)),
    ("counter dtype", dict(dts={"counter": "int8"}), ("counter dtype",)),
    ("gradInput dtype", dict(dts={"dx": "int32"}), ("gradInput dtype",)),
    ("input rank 1", dict(shapes={"x": (4,)}), ("input rank 1",)),
    ("input rank 9", dict(shapes={"x": (2, 4) + (1,) * 7}), ("input rank 9",)),
    ("gradOut rank 9", dict(shapes={"dy": (2, 4) + (1,) * 7}), ("gradOut rank 9",)),
    ("gradInput rank 9", dict(shapes={"dx": (2, 4) + (1,) * 7}), ("gradInput rank 9",)),
    ("counter rank 9", dict(shapes={"counter": (1,) * 9}), ("counter rank 9",)),
    ("no channel", dict(shapes={"x": (2, 0, 3)}), ("input shape", "dim 1 must not be 0")),
    ("gradOut shape", dict(shapes={"dy": (2, 4, 4)}), ("gradOut shape", "must equal input's")),
    ("gradInput shape", dict(shapes={"dx": (2, 4)}), ("gradInput shape",)),
    ("mean shape", dict(shapes={"mean": (3,)}), ("mean shape",)),
    ("invstd shape", dict(shapes={"invstd": (4, 1)}), ("invstd shape",)),
    ("weight shape", dict(shapes={"w": (5,)}), ("weight shape",)),
    ("sumDy shape", dict(shapes={"sdy": (2,)}), ("sumDy shape",)),
    ("sumDyXmu shape", dict(shapes={"sdyx": (1, 4)}), ("sumDyXmu shape",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(arena, views(arena, **kw), INVALID, *words)


def test_checks_run_in_the_vendor_order(arena):
    """Dtypes (in the parameters' order), formats, then shapes."""
    refused(arena, views(arena, dts={"counter": "int8", "dx": "int32"}), INVALID,
            "counter dtype")
    refused(arena, views(arena, dts={"dx": "int32"}, shapes={"x": (4,)}), INVALID,
            "gradInput dtype")
    refused(arena, views(arena, shapes={"counter": (1,) * 9, "x": (2, 0, 3)}), INVALID,
            "counter rank")
    refused(arena, views(arena, shapes={"mean": (9,), "dx": (9,)}), INVALID,
            "gradInput shape")


def test_any_counter_shape_and_mixed_dtypes(arena):
    """counter's shape is free up to rank 8; each tensor's dtype is checked on its own (no
    relation between them)."""
    vs = views(arena, shapes={"counter": (2, 1, 3)}, dts={"x": F16, "mean": F16, "dx": F16,
                                                          "counter": F32})
    if INFERENCE:
        refused(arena, vs, FIND_KERNEL, "not supported on")
    else:
        accepted(arena, vs)


def fmt_tensor(arena, v, fmt):
    shape = list(v.shape)
    strides = [int(math.prod(shape[i + 1:])) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), len(shape), lib.ACL_FLOAT,
                            ffi.new("int64_t[]", strides), 0, fmt,
                            ffi.new("int64_t[]", [v.n]), 1, v.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def test_formats(arena):
    """gradOut's, input's, gradInput's format not private; no relation between them; the
    vectors' and counter's formats not checked."""
    vs = views(arena, shape=(2, 4, 3, 2))
    nz = lib.ACL_FORMAT_NC1HWC0
    for k, name in ((0, "gradOut"), (1, "input"), (8, "gradInput")):
        ws = list(vs)
        ws[k] = fmt_tensor(arena, vs[k], nz)
        refused(arena, ws, INVALID, f"{name}'s format", "private")
    ws = list(vs)
    ws[0] = fmt_tensor(arena, vs[0], lib.ACL_FORMAT_NHWC)
    ws[2] = fmt_tensor(arena, vs[2], nz)
    ws[7] = fmt_tensor(arena, vs[7], nz)
    if INFERENCE:
        refused(arena, ws, FIND_KERNEL, "not supported on")
    else:
        accepted(arena, ws)


def test_refusals_leak_nothing(arena):
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*views(arena, **kw))
        assert rc == INVALID and ex == ffi.NULL


def test_dead_tensor_is_refused(arena):
    vs = views(arena)
    arena.destroy_tensor(vs[7].handle)
    try:
        refused(arena, vs, INVALID, "counter", "not a live aclTensor")
    finally:
        v = vs[7]
        v.handle = arena.tensor(v.shape, v.dtype, v.strides, v.offset, v.n, v.ptr,
                                lib.ACL_INT32)


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        ok = (dt != BF16 or BF16_PART) and not INFERENCE
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        elif dt == BF16 and not BF16_PART:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


def test_atlas_inference_series_is_refused(arena):
    """The docs list the series as unsupported: a call that would launch is refused there
    (561003) after CheckParams; the empty case (no kernel) passes."""
    if not INFERENCE:
        accepted(arena, views(arena))
        return
    refused(arena, views(arena), FIND_KERNEL, "not supported on")
    refused(arena, views(arena, dts={"x": "int32"}), INVALID, "input dtype")
    accepted(arena, views(arena, shape=(0, 4, 3)))


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_api/test_aclnn_batchnorm_elemt_backward.cpp asserts no status: each case is
# listed with the status the op_api's code gives it ("bf16": success where the part has BF16).
D4 = (2, 3, 1, 4)
V3 = ((3,), "f32", "ND")
C3 = ((3,), "i32", "ND")
X4 = (D4, "f32", "NCHW")
BIG = ((2, 3, 1, 4, 2, 3, 1, 4, 2), "f32", "NCHW")


def ut(name, code=OK, **over):
    base = dict(dy=X4, x=X4, mean=V3, invstd=V3, w=V3, sdy=V3, sdyx=V3, counter=C3, dx=X4)
    base |= over
    return (name, *(base[k] for k in NAMES), code)


UT_CASES = [
    ut("float32"),
    ut("bf16", "bf16", **{k: (D4, "bf16", "NCHW") for k in ("dy", "x", "dx")},
       **{k: ((3,), "bf16", "ND") for k in ("mean", "invstd", "w", "sdy", "sdyx")}),
    ut("2d", dy=((2, 3), "f32", "NCHW"), x=((2, 3), "f32", "NCHW"),
       dx=((2, 3), "f32", "NCHW")),
    ut("err_null_gradOut", NULLPTR, dy=None),
    ut("err_null_input", NULLPTR, x=None),
    ut("err_null_meanDesc", NULLPTR, mean=None),
    ut("err_null_invstd", NULLPTR, invstd=None),
    ut("err_null_weight", OK, w=None),
    ut("err_null_sumDy", NULLPTR, sdy=None),
    ut("err_null_sumDyXmn", NULLPTR, sdyx=None),
    ut("err_null_gradInput", NULLPTR, dx=None),
    ut("err_type_gradOut", INVALID, dy=(D4, "i32", "NCHW")),
    ut("err_type_input", INVALID, x=(D4, "i32", "NCHW")),
    ut("err_type_mean", INVALID, mean=C3),
    ut("err_type_invstd", INVALID, invstd=C3),
    ut("err_type_weight", INVALID, w=C3),
    ut("err_type_sumDy", INVALID, sdy=C3),
    ut("err_type_sumDyXmn", INVALID, sdyx=C3),
    ut("err_type_gradInput", INVALID, dx=(D4, "i32", "NCHW")),
    ut("err_format_gradOut", INVALID, dy=(D4, "f32", "NC1HWC0")),
    ut("err_format_input", INVALID, x=(D4, "f32", "NC1HWC0")),
    ut("err_format_gradInput", INVALID, dx=(D4, "f32", "NC1HWC0")),
    ut("input_empty", INVALID, x=((2, 0, 1, 4), "f32", "NCHW")),
    ut("empty", **{k: ((2, 1, 1, 4), "f32", "NCHW") for k in ("dy", "x", "dx")},
       **{k: ((1,), "f32", "ND") for k in ("mean", "invstd", "w", "sdy", "sdyx")},
       counter=((1,), "i32", "ND")),
    ut("err_shape_gradOut", INVALID, dy=BIG),
    ut("err_shape_input", INVALID, x=BIG),
    ut("err_shape_input2", INVALID, x=((2,), "f32", "NCHW")),
    ut("err_shape_gradInput", INVALID, dx=BIG),
    ut("err_broadcast", INVALID, mean=((2,), "f32", "ND")),
]
@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, *specs, code = case
    if code == "bf16":
        code = OK if BF16_PART else INVALID
    if code == OK and INFERENCE:
        code = FIND_KERNEL
    rc, _, ex = phase_one(*[ut_tensor(arena, s) for s in specs])
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or atlas_inference or formats or counter or "
                                   "vendor_op_api_unit_test or compute_dtype")
