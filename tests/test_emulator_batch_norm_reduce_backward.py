"""The emulator's aclnnBatchNormReduceBackward through raw calls: phase one's checks, their
order, codes and messages (hicann/ops-nn norm/sync_batch_norm_backward_reduce/op_api/
aclnn_batch_norm_backward_reduce.cpp; the stricter choices in docs/emulator.md), what is written
(the flagged outputs only; for an empty input zeros on Ascend 950, nothing elsewhere), and the
device's numbers: against the float64 reference, and bit for bit against the op_api's float32
chain written in NumPy (Mul, ReduceSums, the SyncBatchNormBackwardReduce kernel's Mul, Sub,
Mul, the outputs' casts); the other parts in their own processes; the vendor's op_api unit test
cases replayed with their expected status.
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

P1 = lib.aclnnBatchNormReduceBackwardGetWorkspaceSize
P2 = lib.aclnnBatchNormReduceBackward
CALL = "aclnnBatchNormReduceBackwardGetWorkspaceSize"
FIND_KERNEL = 561003
SENTINEL = -77.0
ALL = (True, True, True)
INFERENCE = ARCH == 2002   # no kernel: non-empty calls refused (docs: not supported)
# the kernel's tests are defined where it has one (ops-nn norm/sync_batch_norm_backward_
# reduce/docs/aclnnBatchNormReduceBackward.md: not on the Atlas inference series)
where_it_runs = only_where(not INFERENCE)
f = np.float32


def phase_one(dy, x, mean, invstd, w, flags, sdy, sdyx, dw, db, ws=True, ex=True):
    return aclnn_phase_one(P1, dy, x, mean, invstd, w, *flags, sdy, sdyx, dw, db, ws=ws, ex=ex)


def call(arena, dy, x, mean, invstd, w=None, flags=ALL, odt=None, kind="contig"):
    """Runs the operator; returns (sumDy, sumDyXmu, gradWeight, gradBias) read back (every
    output given, sentinel-filled: an unflagged one must stay so). odt: the outputs' dtype
    (default mean's)."""
    c = x.shape[1]
    odt = odt or mean.dtype
    vs = [DevView(arena, a, kind=kind) for a in (dy, x, mean, invstd)]
    vw = None if w is None else DevView(arena, w, kind=kind)
    outs = [DevView(arena, shape=(c,), dtype=odt, kind=kind, sentinel=SENTINEL)
            for _ in range(4)]
    run_phase_two(arena, P2, phase_one(*vs, vw, flags, *outs))
    for v, a in zip(vs + [vw], (dy, x, mean, invstd, w)):
        if v is not None:   # the inputs untouched
            assert np.array_equal(v.read(), a)
    return [o.read() for o in outs]


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(shape, dt, seed=0, vdt=F32):
    """gradOut, input (dt), mean, invstd, weight (vdt)."""
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[1]
    dy, x = rand(rng, shape, dt, 1.0, 0.0), rand(rng, shape, dt)
    mean = (0.25 + 0.1 * rng.standard_normal(c)).astype(vdt)
    invstd = (0.5 + rng.random(c)).astype(vdt)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(vdt)
    return dy, x, mean, invstd, w


def rows_of(a):
    return np.moveaxis(a.astype(f), 1, 0).reshape(a.shape[1], -1)


def device_chain(dy, x, mean, invstd):
    """(sumDy, sumDyXmu, gradWeight, gradBias) as the op_api's chain computes them, float32."""
    D, X = rows_of(dy), rows_of(x)
    sdx = lane_sum((D * X).astype(f))
    sdy = lane_sum(D)
    xmu = (sdx - (mean.astype(f) * sdy).astype(f)).astype(f)
    gw = (xmu * invstd.astype(f)).astype(f)
    return sdy, xmu, gw, sdy


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def same_bits(got, want, dt):
    assert np.array_equal(bits(np.asarray(got)), bits(np.asarray(want).astype(dt))), \
        (got, want)


def check_chain(got, want, odt, flags=ALL):
    for k, (g, v) in enumerate(zip(got, want)):
        if flags[0 if k < 2 else k - 1]:
            same_bits(g, v, odt)
        else:
            assert (g == SENTINEL).all(), (k, g)


# ---- numbers ---------------------------------------------------------------------------------

SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 96, 7), (3, 4, 2, 1, 3, 2), (5, 2),
          (1, 70, 1), (2, 3, 2, 2, 3)]


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_chain_bit_for_bit(arena, dt, shape):
    """Every output is the op_api's float32 chain, cast to the output's dtype, bit for bit."""
    args = inputs(shape, dt, vdt=dt)
    got = call(arena, *args[:4], args[4])
    check_chain(got, device_chain(*args[:4]), dt)


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES[:4], ids=str)
def test_reference(arena, dt, shape):
    """Against the float64 reference within its tolerance (float32 outputs)."""
    dy, x, mean, invstd, w = inputs(shape, dt, seed=3)
    got = call(arena, dy, x, mean, invstd, w)
    ref = reference.batch_norm_reduce_backward(dy, x, mean, invstd, w)
    scale = reference.batch_norm_reduce_backward_error_scale(dy, x, mean, invstd, w)
    for k, (g, r_, s) in enumerate(zip(got, ref, scale)):
        assert reference.max_error_ratio(g, r_, s, F32) <= 1, k


@where_it_runs
def test_sum_dy_xmu_is_formed_from_sum_dy_x(arena):
    """The kernel's sum(dy * x) - mean * sum(dy): with a large mean the float32 cancellation
    shows (a sum of dy * (x - mean) would not lose these bits)."""
    rng = np.random.default_rng(5)
    x = (1000 + rng.standard_normal((64, 2, 9))).astype(F32)
    dy = rng.standard_normal((64, 2, 9)).astype(F32)
    mean, invstd = np.full(2, 1000, F32), np.ones(2, F32)
    got = call(arena, dy, x, mean, invstd)
    want = device_chain(dy, x, mean, invstd)
    same_bits(got[1], want[1], F32)
    direct = lane_sum((rows_of(dy) * (rows_of(x) - f(1000))).astype(f))
    assert not np.array_equal(got[1], direct)


@where_it_runs
@pytest.mark.parametrize("flags", [(True, False, False), (False, True, False),
                                   (False, False, True), (True, False, True),
                                   (False, False, False)], ids=str)
def test_only_the_flagged_outputs_are_written(arena, flags):
    args = inputs((3, 4, 5), F32)
    got = call(arena, *args, flags=flags)
    check_chain(got, device_chain(*args[:4]), F32, flags)


@where_it_runs
def test_unflagged_outputs_may_be_null(arena):
    dy, x, mean, invstd, w = inputs((3, 4, 5), F32)
    vs = [DevView(arena, a) for a in (dy, x, mean, invstd, w)]
    o = DevView(arena, shape=(4,), dtype=F32)
    for flags, outs in (((True, False, False), (o, o, None, None)),
                        ((False, True, False), (None, None, o, None)),
                        ((False, False, True), (None, None, None, o))):
        rc, _, ex = phase_one(*vs, flags, *outs)
        assert rc == OK, last_msg()
        assert lib.aclDestroyAclOpExecutor(ex) == OK


@where_it_runs
def test_weight_is_not_used(arena):
    """weight is cast and never read by the chain: NULL or any values give the same bits."""
    dy, x, mean, invstd, w = inputs((3, 4, 5), F16)
    a = call(arena, dy, x, mean, invstd, w)
    b = call(arena, dy, x, mean, invstd, None)
    c = call(arena, dy, x, mean, invstd, (w * 7).astype(F32))
    for u, v, z in zip(a, b, c):
        assert np.array_equal(bits(u), bits(v)) and np.array_equal(bits(u), bits(z))


@where_it_runs
@pytest.mark.parametrize("odt", [F16, *cases_where(BF16_PART, BF16)])
def test_outputs_in_16_bits(arena, odt):
    """float32 results cast to the output's dtype (ties to even)."""
    args = inputs((2, 5, 6), F32)
    got = call(arena, *args, odt=odt)
    check_chain(got, device_chain(*args[:4]), odt)


@where_it_runs
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    args = inputs((2, 6, 3, 4), F16)
    base = call(arena, *args)
    got = call(arena, *args, kind=kind)
    for g, v in zip(got, base):
        assert np.array_equal(bits(g), bits(v))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, *args)
    lib.aclemuSetNumThreads(4)
    four = call(arena, *args)
    for g, v in zip(one, four):
        assert np.array_equal(bits(g), bits(v))


@where_it_runs
def test_outputs_may_be_the_statistics(arena):
    """sumDy written into mean's memory: the vectors are read before any output is written."""
    dy, x, mean, invstd, w = inputs((3, 4, 5), F32)
    want = device_chain(dy, x, mean, invstd)
    vs = [DevView(arena, a) for a in (dy, x, mean, invstd)]
    outs = [vs[2], DevView(arena, shape=(4,), dtype=F32), vs[3],
            DevView(arena, shape=(4,), dtype=F32)]
    run_phase_two(arena, P2, phase_one(*vs, None, ALL, *outs))
    for o, v in zip(outs, want):
        same_bits(o.read(), v, F32)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0)], ids=str)
def test_empty_input(arena, shape):
    """An empty gradOut/input: success after CheckParams; Ascend 950 fills the flagged outputs
    with zeros, the other parts write nothing."""
    x = np.ones(shape, F32)
    vdy, vx = DevView(arena, x), DevView(arena, x)
    vec = [DevView(arena, np.ones(3, F32)) for _ in range(2)]
    outs = [DevView(arena, shape=(3,), dtype=F16, sentinel=SENTINEL) for _ in range(4)]
    flags = (True, False, True)
    run_phase_two(arena, P2, phase_one(vdy, vx, *vec, None, flags, *outs))
    got = [o.read() for o in outs]
    zeros = ARCH == 3510
    for k, g in enumerate(got):
        flagged = flags[0 if k < 2 else k - 1]
        assert (g == 0).all() if zeros and flagged else (g == SENTINEL).all(), (k, g)


def test_empty_input_is_still_checked(arena):
    """CheckParams comes before the empty case: C == 0, a bad flagged output refused."""
    x = np.ones((0, 3), F32)
    vdy, vx = DevView(arena, x), DevView(arena, x)
    vec = [DevView(arena, np.ones(3, F32)) for _ in range(2)]
    bad = DevView(arena, shape=(4,), dtype=F32)
    refused_by(phase_one, CALL, (vdy, vx, *vec, None, ALL, bad, bad, bad, bad), INVALID,
               "sumDy shape")


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("dy", "x", "mean", "invstd", "w", "sdy", "sdyx", "dw", "db")
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE}


def views(arena, shape=(2, 4, 3), dt=F32, shapes=None, dts=None):
    c = shape[1] if len(shape) > 1 else 1
    shapes = {k: (shape if k in ("dy", "x") else (c,)) for k in NAMES} | (shapes or {})
    dts = {k: (dt if k in ("dy", "x") else F32) for k in NAMES} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


def args(vs, flags=ALL):
    return (*vs[:5], flags, *vs[5:])


def refused(arena, vs, code, *words, flags=ALL, **kw):
    return refused_by(phase_one, CALL, args(vs, flags), code, *words, **kw)


def accepted(arena, vs, flags=ALL, launches=True):
    """CheckParams passes: success, or on the Atlas inference series, for a call that would
    launch, the refusal that follows it."""
    rc, _, ex = phase_one(*args(vs, flags))
    if INFERENCE and launches:
        assert rc == FIND_KERNEL and "not supported on" in last_msg(), (rc, last_msg())
        return
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "gradOut"), (1, "input"), (2, "mean"),
                                    (3, "invstd")])
def test_required_tensors(arena, k, name):
    vs = views(arena, dts={"dy": "int32"})
    vs[k] = None
    refused(arena, vs, NULLPTR, f"{name} is NULL")


def test_flagged_outputs_are_required(arena):
    """After the inputs' NULL checks, before any dtype."""
    for k, name, flag in ((5, "sumDy", "inputG"), (6, "sumDyXmu", "inputG"),
                          (7, "gradWeight", "weightG"), (8, "gradBias", "biasG")):
        vs = views(arena, dts={"dy": "int32"})
        vs[k] = None
        refused(arena, vs, NULLPTR, f"{name} is NULL but {flag} is true")


def test_weight_is_optional(arena):
    vs = views(arena)
    vs[4] = None
    accepted(arena, vs)


PARAM_CASES = [
    ("gradOut dtype", dict(dts={"dy": "int32"}), ("gradOut dtype",)),
    ("input dtype", dict(dts={"x": "int32"}), ("input dtype",)),
    ("mean dtype", dict(dts={"mean": "double"}), ("mean dtype",)),
    ("invstd dtype", dict(dts={"invstd": "int32"}), ("invstd dtype",)),
    ("gradOut not input's", dict(dts={"x": F16}), ("gradOut dtype", "input's")),
    ("sumDy dtype", dict(dts={"sdy": "int32"}), ("sumDy dtype",)),
    ("sumDyXmu dtype", dict(dts={"sdyx": "double"}), ("sumDyXmu dtype",)),
    ("gradWeight dtype", dict(dts={"dw": "int32"}), ("gradWeight dtype",)),
    ("gradBias dtype", dict(dts={"db": "int32"}), ("gradBias dtype",)),
    ("weight dtype", dict(dts={"w": "int32"}), ("weight dtype",)),
    ("gradOut rank", dict(shapes={"dy": (8,)}), ("gradOut rank 1",)),
    ("input rank 9", dict(shape=(2, 4) + (1,) * 7, shapes={"dy": (2, 4, 3)}),
     ("input rank 9",)),
    ("no channel", dict(shape=(2, 0, 3), shapes={k: (0,) for k in NAMES[2:]}),
     ("input shape", "dim 1 must not be 0")),
    ("sumDy shape", dict(shapes={"sdy": (5,)}), ("sumDy shape",)),
    ("gradBias shape", dict(shapes={"db": (4, 1)}), ("gradBias shape",)),
    ("gradOut shape", dict(shapes={"dy": (2, 4, 4)}), ("gradOut shape", "must equal input's")),
    ("mean shape", dict(shapes={"mean": (3,)}), ("mean shape",)),
    ("invstd shape", dict(shapes={"invstd": (4, 1)}), ("invstd shape",)),
    ("weight shape", dict(shapes={"w": (5,)}), ("weight shape",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(arena, views(arena, **kw), INVALID, *words)


def test_unflagged_outputs_are_not_checked(arena):
    vs = views(arena, dts={"sdy": "int32", "dw": "double"}, shapes={"sdyx": (9,), "dw": (7,)})
    accepted(arena, vs, flags=(False, False, True))


def test_checks_run_in_the_vendor_order(arena):
    """The inputs' dtypes, their equality, the flagged outputs' dtypes (then, stricter,
    weight's); formats; ranks, C, the flagged outputs' shapes (then, stricter, gradOut's,
    mean's, invstd's, weight's)."""
    refused(arena, views(arena, dts={"invstd": "int32", "x": F16}), INVALID, "invstd dtype")
    refused(arena, views(arena, dts={"x": F16, "sdy": "int32"}), INVALID, "gradOut dtype")
    refused(arena, views(arena, dts={"w": "int32", "db": "int32"}), INVALID, "gradBias dtype")
    refused(arena, views(arena, dts={"w": "int32"}, shapes={"sdy": (9,)}), INVALID,
            "weight dtype")
    refused(arena, views(arena, shapes={"mean": (9,), "sdy": (9,)}), INVALID, "sumDy shape")
    refused(arena, views(arena, shapes={"mean": (9,), "dy": (2, 4, 9)}), INVALID,
            "gradOut shape")


def fmt_tensor(arena, view, fmt):
    shape = list(view.shape)
    strides = [int(math.prod(shape[i + 1:])) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), len(shape), lib.ACL_FLOAT,
                            ffi.new("int64_t[]", strides), 0, fmt,
                            ffi.new("int64_t[]", [view.n]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def test_formats(arena):
    """gradOut's format input's; no private format among the inputs and flagged outputs;
    any other format taken (the channel stays dim 1)."""
    vs = views(arena, shape=(2, 4, 3, 2))
    for fmt in (lib.ACL_FORMAT_NCHW, lib.ACL_FORMAT_NHWC, lib.ACL_FORMAT_HWCN):
        accepted(arena, [fmt_tensor(arena, vs[0], fmt), fmt_tensor(arena, vs[1], fmt)] + vs[2:])
    refused(arena, [fmt_tensor(arena, vs[0], lib.ACL_FORMAT_NCHW)] + vs[1:], INVALID,
            "gradOut's format", "input's")
    nz = lib.ACL_FORMAT_NC1HWC0
    refused(arena, [fmt_tensor(arena, vs[0], nz), fmt_tensor(arena, vs[1], nz)] + vs[2:],
            INVALID, "gradOut's format", "private")
    for k, name in ((2, "mean"), (7, "gradWeight")):
        ws = list(vs)
        ws[k] = fmt_tensor(arena, vs[k], nz)
        refused(arena, ws, INVALID, f"{name}'s format", "private")
    ws = list(vs)
    ws[7] = fmt_tensor(arena, vs[7], nz)
    accepted(arena, ws, flags=(True, False, True))
    ws[4] = fmt_tensor(arena, vs[4], nz)   # weight's format is not checked
    accepted(arena, ws, flags=(True, False, True))


def test_refusals_leak_nothing(arena):
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_dead_tensor_is_refused(arena):
    vs = views(arena)
    arena.destroy_tensor(vs[4].handle)
    try:
        refused(arena, vs, INVALID, "weight", "not a live aclTensor")
    finally:
        v = vs[4]
        v.handle = arena.tensor(v.shape, v.dtype, v.strides, v.offset, v.n, v.ptr)


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*args(views(arena, dt=dt)))
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
    accepted(arena, views(arena, shape=(0, 4, 3)), launches=False)


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_api/test_aclnn_batchnorm_backward_reduce.cpp: (name, gradOut, input, mean, invstd,
# weight, flags, sumDy, sumDyXmu, gradWeight, gradBias, expected status); a tensor is (shape,
# dtype, format) or None; "bf16": success where the part has BF16 (its Ascend910B2 case).
D4 = (2, 3, 1, 4)


def t(shape, dt="f32", fmt="ND"):
    return (shape, dt, fmt)


def case(name, dt="f32", fmt="ND", code=OK, flags=ALL, **over):
    base = dict(dy=t(D4, dt, fmt), x=t(D4, dt, fmt), mean=t((3,), dt, fmt),
                invstd=t((3,), dt, fmt), w=t((3,), dt, fmt))
    base |= dict(sdy=base["mean"], sdyx=base["mean"], dw=base["invstd"], db=base["mean"])
    base |= over
    return (name, *(base[k] for k in NAMES[:5]), flags, *(base[k] for k in NAMES[5:]), code)


UT_CASES = [
    case("float_type"),
    case("float16_type", "f16"),
    case("bfloat16_type", "bf16", code="bf16"),
    case("Ascend910B2_bfloat16_type", "bf16", code="bf16"),
    case("invalid_type", "f16", code=INVALID, dy=t(D4, "i32"), x=t(D4, "i32")),
    case("invalid_type_with_false_mask", "f16", flags=(False, True, True),
         sdy=t((3,), "i32")),
    case("nchw_format", fmt="NCHW"),
    case("nhwc_format", fmt="NHWC"),
    case("hwcn_format", fmt="HWCN"),
    case("ndhwc_format", fmt="NDHWC"),
    case("ncdhw_format", fmt="NCDHW"),
    case("invalid_format", fmt="NC1HWC0", code=INVALID),
    case("invalid_format_with_false_mask", flags=(True, False, True),
         dw=t((3,), "f32", "NC1HWC0")),
    case("empty_input", dy=t((2, 3, 0, 4)), x=t((2, 3, 0, 4))),
    case("gradout_over_rank_range", code=INVALID, dy=t((2, 3, 1, 4, 9, 5, 2, 4, 7))),
    case("input_over_rank_range", code=INVALID, x=t((2, 3, 1, 4, 9, 5, 2, 4, 7))),
    case("with_diff_dtype", code=INVALID, x=t(D4, "f16")),
    case("with_diff_format", code=INVALID, x=t(D4, "f32", "NHWC")),
    case("out_shape_invalid", code=INVALID, sdy=t((5,))),
    case("null_input", "f16", code=NULLPTR, dy=None),
    case("null_output", code=NULLPTR, dy=t(D4, "f32", "NC1HWC0"), sdyx=None),
    case("precision_for_float_type"),
    case("contiguous", fmt="NCHW", dy=t((3, 5, 3, 8), "f32", "NCHW"),
         x=t((3, 5, 3, 8), "f32", "NCHW"), mean=t((5,), "f32", "NCHW"),
         invstd=t((5,), "f32", "NCHW"), w=t((5,), "f32", "NCHW"), sdy=t((5,), "f32", "NCHW"),
         sdyx=t((5,), "f32", "NCHW"), dw=t((5,), "f32", "NCHW"), db=t((5,), "f32", "NCHW")),
]
@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, dy, x, mean, invstd, w, flags, sdy, sdyx, dw, db, code = case
    if code == "bf16":
        code = OK if BF16_PART else INVALID
    nonempty = name != "empty_input"
    if code == OK and INFERENCE and nonempty:
        code = FIND_KERNEL
    ts = [ut_tensor(arena, s) for s in (dy, x, mean, invstd, w)]
    outs = [ut_tensor(arena, s) for s in (sdy, sdyx, dw, db)]
    rc, _, ex = phase_one(*ts, flags, *outs)
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or empty_input or atlas_inference or formats or "
                                   "vendor_op_api_unit_test or 16_bits")
