"""The emulator's aclnnBatchNormElemt through raw calls: phase one's checks, their order, codes
and messages (hicann/ops-nn norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp;
the stricter choice in docs/emulator.md), what is written (output only; nothing, and no
kernel, for an empty input), and the device's numbers: against the float64 reference, and bit
for bit against each part's chain written in NumPy (the op_api's variance made in invstd's
dtype, then BatchNorm's inference: BNInfer, or Ascend 950's BatchNormV3); the other parts in
their own processes; the vendor's op_api unit test cases replayed with their expected status.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_group_norm import ARCH, BF16_PART
from test_emulator_batch_norm import NR_MISSES, rstd_950
from test_emulator_batch_norm_backward import bits, rows_of, same_bits, shaped
from _emu_aclnn import (SOC, both_phases_without_a_device, refused_by, run_phase_two)
from _part_runs import cases_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnBatchNormElemtGetWorkspaceSize
P2 = lib.aclnnBatchNormElemt
CALL = "aclnnBatchNormElemtGetWorkspaceSize"
INNER_NULLPTR = 561103
SENTINEL = -77.0
f = np.float32


def phase_one(x, w, b, mean, inv, eps, out, ws=True, ex=True):
    return aclnn_phase_one(P1, x, w, b, mean, inv, eps, out, ws=ws, ex=ex)


def inputs(shape, dt, seed=0, vdt=None, affine=True):
    """input (dt), weight, bias (dt), mean, invstd (vdt, default dt)."""
    rng = np.random.default_rng(seed + sum(shape))
    c, vdt = shape[1], vdt or dt
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(dt) if affine else None
    b = (0.5 * rng.standard_normal(c)).astype(dt) if affine else None
    mean = (0.5 + 0.3 * rng.standard_normal(c)).astype(vdt)
    inv = (0.3 + rng.random(c) * 2).astype(vdt)
    return x, w, b, mean, inv


def call(arena, x, w, b, mean, inv, eps=1e-5, kind="contig"):
    vx = DevView(arena, x, kind=kind)
    vs = [None if a is None else DevView(arena, a, kind=kind) for a in (w, b, mean, inv)]
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kind, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(vx, *vs, eps, vy))
    assert np.array_equal(bits(vx.read()), bits(x))
    return vy.read()


# ---- the chain, in NumPy -------------------------------------------------------------------

def device_variance(inv, eps):
    """The op_api's variance, (1 / (invstd * invstd)) - eps, each step in invstd's dtype."""
    rnd = lambda v: np.asarray(v, f).astype(inv.dtype).astype(f)  # noqa: E731
    i, e = inv.astype(f), f(eps)
    with np.errstate(all="ignore"):
        return rnd(rnd(f(1) / rnd(i * i)) - rnd(e))


def device_chain(x, w, b, mean, inv, eps):
    """output as this part's kernels compute it: the variance in invstd's dtype, then
    BatchNorm's inference in float32, y rounded to input's dtype."""
    c = x.shape[1]
    wv = np.ones(c, f) if w is None else w.astype(f)
    bv = np.zeros(c, f) if b is None else b.astype(f)
    m, e = mean.astype(f), f(eps)
    var = device_variance(inv, eps)
    with np.errstate(all="ignore"):
        X = rows_of(x)
        if ARCH == 3510:
            rstd = rstd_950(var, e)
            t = ((X - m[:, None]).astype(f) * wv[:, None]).astype(f)
            y = ((t * rstd[:, None]).astype(f) + bv[:, None]).astype(f)
        else:
            k = (wv / np.sqrt((var + e).astype(f)).astype(f)).astype(f)
            shift = (bv - (k * m).astype(f)).astype(f)
            y = ((X * k[:, None]).astype(f) + shift[:, None]).astype(f)
    return shaped(y, x.shape, x.dtype)


SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 3, 2, 2, 3), (3, 4, 2, 1, 3, 2), (5, 1),
          (2, 2, 1, 1, 1, 1, 2, 3)]


@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_chain_bit_for_bit(arena, dt, shape):
    args = inputs(shape, dt)
    same_bits(call(arena, *args, eps=1e-3), device_chain(*args, 1e-3), dt)


@pytest.mark.parametrize("dt,vdt", [(F32, F32), (F16, F16), (F16, F32), (F32, F16),
                                    *cases_where(BF16_PART, (BF16, BF16), (BF16, F32))],
                         ids=str)
def test_reference(arena, dt, vdt):
    """Against the float64 reference (the variance's rounding in invstd's dtype in the
    scale)."""
    x, w, b, mean, inv = inputs((4, 5, 6), dt, seed=2, vdt=vdt)
    got = call(arena, x, w, b, mean, inv, eps=1e-4)
    ref = reference.batch_norm_elemt(x, w, b, mean, inv, 1e-4)
    scale = reference.batch_norm_elemt_error_scale(x, w, b, mean, inv, 1e-4)
    assert reference.max_error_ratio(got, ref, scale, dt) <= 1


@pytest.mark.parametrize("vdt", [F16, *cases_where(BF16_PART, BF16)])
def test_the_variance_is_made_in_invstd_dtype(arena, vdt):
    """Mixed dtypes are taken (no dtype rule ties them); a 16-bit invstd's variance is
    rounded at each step of the op_api's Mul, Div and Sub."""
    x, w, b, mean, inv = inputs((3, 7, 4), F32, seed=4, vdt=vdt)
    got = call(arena, x, w, b, mean, inv)
    same_bits(got, device_chain(x, w, b, mean, inv, 1e-5), F32)
    wide = device_chain(x, w, b, mean.astype(F32), inv.astype(F32), 1e-5)
    assert not np.array_equal(bits(got), bits(wide))


def newton_raphson_miss(target):
    """(invstd [1] FLOAT16, eps) whose variance plus eps, as the op_api makes it (in FLOAT16)
    and the kernel adds eps back (in float32), is float32 `target`, or None: FLOAT16
    neighbours of 1 / sqrt(target), eps the float32 gap from a FLOAT16 value g below target
    that the op_api's variance minus eps lands on."""
    i0 = np.array([1 / np.sqrt(np.float64(target))], F16).view(np.uint16)
    cand = (i0.astype(np.int32) + np.arange(-8, 9)).astype(np.uint16).view(F16)
    g0 = np.array([target], F16).view(np.uint16).astype(np.int32)
    below = (g0 - np.arange(1, 17)).astype(np.uint16).view(F16).astype(f)
    for inv in cand:
        inv = np.array([inv], F16)
        for g in below[below < target]:
            eps = float(f(target)) - float(g)
            if f(device_variance(inv, eps)[0] + f(eps)) == f(target):
                return inv, eps
    return None


@pytest.mark.parametrize("k", range(3))
def test_rstd_where_newton_raphson_is_not_correctly_rounded(arena, k):
    """A channel whose variance (+ eps) Ascend 950's rstd (one Newton-Raphson step, ops-nn
    norm_common reduce_common_regbase.h) rounds off the correctly rounded 1 / sqrt: on every
    part the output is this part's chain bit for bit, and on Ascend 950 it is not the chain
    with a correctly rounded rstd (BNInfer's k = w / sqrtf(var + eps) elsewhere)."""
    found = [m for m in (newton_raphson_miss(t) for t in NR_MISSES) if m is not None]
    assert len(found) >= 3, found
    inv, eps = found[k]
    rng = np.random.default_rng(5 + k)
    x = (rng.standard_normal((4, 1, 32)) * 3).astype(F32)
    mean = np.array([0.25], F32)
    w, b = np.ones(1, F32), np.zeros(1, F32)
    got = call(arena, x, w, b, mean, inv, eps=eps)
    same_bits(got, device_chain(x, w, b, mean, inv, eps), F32)
    if ARCH == 3510:
        v = (device_variance(inv, eps) + f(eps)).astype(f)
        exact = (1 / np.sqrt(v.astype(np.float64))).astype(f)
        assert (exact != rstd_950(device_variance(inv, eps), eps)).all()
        t = ((rows_of(x) - mean[:, None]).astype(f) * w[:, None]).astype(f)
        y = ((t * exact[:, None]).astype(f) + b[:, None]).astype(f)
        assert not np.array_equal(bits(got), bits(shaped(y, x.shape, F32)))


def test_absent_weight_and_bias_are_ones_and_zeros(arena):
    x, w, b, mean, inv = inputs((3, 4, 5), F16)
    got = call(arena, x, None, None, mean, inv)
    same_bits(got, device_chain(x, None, None, mean, inv, 1e-5), F16)
    ones = call(arena, x, np.ones(4, F16), np.zeros(4, F16), mean, inv)
    assert np.array_equal(bits(got), bits(ones))


@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    args = inputs((2, 6, 3, 4), F16)
    assert np.array_equal(bits(call(arena, *args)), bits(call(arena, *args, kind=kind)))


def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, *args)
    lib.aclemuSetNumThreads(4)
    four = call(arena, *args)
    assert np.array_equal(bits(one), bits(four))


def test_output_may_be_input(arena):
    x, w, b, mean, inv = inputs((3, 4, 5), F32)
    vx = DevView(arena, x)
    vs = [DevView(arena, a) for a in (w, b, mean, inv)]
    run_phase_two(arena, P2, phase_one(vx, *vs, 1e-5, vx))
    same_bits(vx.read(), device_chain(x, w, b, mean, inv, 1e-5), F32)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0)], ids=str)
def test_empty_input_launches_nothing(arena, shape):
    """An empty input (C > 0): success, nothing written, and no kernel: both phases pass on a
    thread that set no device, with a NULL stream."""
    x = np.ones(shape, F32)
    vs = [DevView(arena, np.ones(3, F32)) for _ in range(4)]
    vy = DevView(arena, shape=shape, dtype=F32, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(DevView(arena, x), *vs, 1e-5, vy))
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (DevView(arena, x), *vs, 1e-5, vy),
                                                    ffi.NULL)
    assert (rc, ws, rc2) == (OK, 0, OK), msg


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("x", "w", "b", "mean", "inv", "y")
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE}


def views(arena, shape=(2, 4, 3), dt=F32, shapes=None, dts=None):
    c = shape[1] if len(shape) > 1 else 1
    shapes = {k: (shape if k in ("x", "y") else (c,)) for k in NAMES} | (shapes or {})
    dts = {k: dt for k in NAMES} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


def args(vs, eps=1e-5):
    return (*vs[:5], eps, vs[5])


def refused(vs, code, *words, **kw):
    return refused_by(phase_one, CALL, args(vs), code, *words, **kw)


def accepted(vs):
    rc, _, ex = phase_one(*args(vs))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "input"), (3, "mean"), (4, "invstd"), (5, "output")])
def test_required_tensors_are_161002(arena, k, name):
    """CheckNotNull's failure is returned as ACLNN_ERR_PARAM_INVALID (the docs say 161001)."""
    vs = views(arena, dts={"w": "int32"})
    vs[k] = None
    refused(vs, INVALID, f"{name} is NULL")


def test_weight_and_bias_are_optional(arena):
    vs = views(arena)
    accepted([vs[0], None, None] + vs[3:])


PARAM_CASES = [
    ("input dtype", dict(dts={"x": "int32"}), ("input dtype",)),
    ("weight dtype", dict(dts={"w": "double"}), ("weight dtype",)),
    ("bias dtype", dict(dts={"b": "int32"}), ("bias dtype",)),
    ("mean dtype", dict(dts={"mean": "int32"}), ("mean dtype",)),
    ("invstd dtype", dict(dts={"inv": "int32"}), ("invstd dtype",)),
    ("output dtype", dict(dts={"y": "double"}), ("output dtype",)),
    ("input rank 1", dict(shape=(4,), shapes={"y": (4,)}), ("input rank 1",)),
    ("output rank 9", dict(shapes={"y": (2, 4) + (1,) * 7}), ("output rank 9",)),
    ("output shape", dict(shapes={"y": (2, 4, 4)}), ("output shape", "must equal input's")),
    ("no channel", dict(shape=(2, 0, 3), shapes={k: (0,) for k in NAMES[1:5]}),
     ("dim 1 (C) must not be 0",)),
    ("weight rank", dict(shapes={"w": (4, 1)}), ("weight shape", "rank 1")),
    ("invstd rank", dict(shapes={"inv": (2, 2)}), ("invstd shape", "rank 1")),
    ("bias shape", dict(shapes={"b": (3,)}), ("bias shape", "must be [C]")),
    ("mean shape", dict(shapes={"mean": (5,)}), ("mean shape", "must be [C]")),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(views(arena, **kw), INVALID, *words)


def test_checks_run_in_the_vendor_order(arena):
    """dtypes, formats, ranks and shapes (the ranks of the vectors before their lengths),
    then the result's copy."""
    refused(views(arena, dts={"y": "int32"}, shapes={"y": (9,)}), INVALID, "output dtype")
    refused(views(arena, shapes={"w": (5,), "b": (2, 2)}), INVALID, "bias shape", "rank 1")
    refused(views(arena, dts={"y": F16}, shapes={"w": (5,)}), INVALID, "weight shape")


def test_output_of_another_dtype_fails_the_copy(arena):
    """No dtype rule ties output to input in CheckDtypeValid: the result's ViewCopy does
    (561103, the docs say 161002)."""
    refused(views(arena, dts={"y": F16}), INNER_NULLPTR, "output dtype FLOAT16",
            "input's dtype FLOAT")
    accepted(views(arena, dts={"w": F16, "b": F16, "mean": F16, "inv": F16}))


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
    """output's format input's; input's not private; stricter: NHWC/NDHWC (the docs list NC,
    NCL, NCHW, NCDHW, ND: the channel is dim 1)."""
    vs = views(arena, shape=(2, 4, 3, 2))
    nchw = [fmt_tensor(arena, vs[k], lib.ACL_FORMAT_NCHW) for k in (0, 5)]
    accepted([nchw[0]] + vs[1:5] + [nchw[1]])
    refused([nchw[0]] + vs[1:5] + [vs[5]], INVALID, "output's format")
    nz = [fmt_tensor(arena, vs[k], lib.ACL_FORMAT_FRACTAL_NZ) for k in (0, 5)]
    refused([nz[0]] + vs[1:5] + [nz[1]], INVALID, "private")
    hw = [fmt_tensor(arena, vs[k], lib.ACL_FORMAT_NHWC) for k in (0, 5)]
    refused([hw[0]] + vs[1:5] + [hw[1]], INVALID, "NHWC", "dim 1")


def test_refusals_leak_nothing(arena):
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*args(views(arena, dt=dt)))
        ok = dt != BF16 or BF16_PART
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_host/op_api/test_aclnn_batchnormelemt.cpp (its enabled cases; the commented-out
# ones are not run): (name, input, weight, bias, mean, invstd, output, expected status); a
# tensor is (shape, dtype, format) or None; "strided" is the case's non-contiguous input.
def _t(shape, dt="f32", fmt="ND"):
    return (shape, dt, fmt)


V4 = _t((4,))
UT_CASES = [
    ("float16_4d", _t((1, 4, 2, 4), "f16", "NCHW"), V4, V4, V4, V4,
     _t((1, 4, 2, 4), "f16", "NCHW"), OK),
    ("float16_3d", _t((2, 4, 2), "f16"), V4, V4, V4, V4, _t((2, 4, 2), "f16"), OK),
    ("float16_2d", _t((2, 4), "f16"), V4, V4, V4, V4, _t((2, 4), "f16"), OK),
    ("float32_4d", _t((2, 2, 2, 4), "f32", "NCHW"), _t((2,)), _t((2,)), _t((2,)), _t((2,)),
     _t((2, 2, 2, 4), "f32", "NCHW"), OK),
    ("float32_3d", _t((3, 4, 2)), V4, V4, V4, V4, _t((3, 4, 2)), OK),
    ("float32_2d", _t((3, 4)), V4, V4, V4, V4, _t((3, 4)), OK),
    ("float32_2d_param_nullptr", _t((3, 4)), None, None, V4, V4, _t((3, 4)), OK),
    ("float32_6d", _t((2, 3, 4, 5, 6, 7)), None, None, _t((3,)), _t((3,)),
     _t((2, 3, 4, 5, 6, 7)), OK),
    ("float32_invstd_dtype_invalid", _t((3, 4)), V4, V4, _t((4,), "i32"), V4, _t((3, 4)),
     INVALID),
    ("float32_invstd_dim_invalid", _t((3, 4)), V4, V4, _t((2, 2)), V4, _t((3, 4)), INVALID),
    ("float32_invstd_channel_size_zero", _t((3, 0)), V4, V4, V4, V4, _t((3, 4)), INVALID),
    ("invstd_shape_invalid", _t((3, 4)), V4, V4, V4, _t((5,)), _t((3, 4)), INVALID),
]


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, x, w, b, mean, inv, y, code = case
    ts = [ut_tensor(arena, s) for s in (x, w, b, mean, inv, y)]
    rc, _, ex = phase_one(*ts[:5], 1e-5, ts[5])
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


def test_vendor_discontiguous_case(arena):
    """float32_2d_discontinous: input [3, 4] with strides (1, 3) over 12 values."""
    vals = np.array([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], F32)
    ptr = arena.malloc(vals.nbytes)
    arena.h2d(ptr, vals)
    x = arena.tensor((3, 4), F32, (1, 3), 0, 12, ptr)
    vs = [DevView(arena, np.array(v, F32)) for v in ([1, 2, 3, 4], [10, 11, 12, 13],
                                                     [2, 3, 4, 5], [2, 3, 4, 5])]
    vy = DevView(arena, shape=(3, 4), dtype=F32)
    run_phase_two(arena, P2, phase_one(x, *vs, 1e-5, vy))
    host = np.lib.stride_tricks.as_strided(vals, (3, 4), (4, 12)).copy()
    same_bits(vy.read(), device_chain(host, *(np.array(v, F32) for v in (
        [1, 2, 3, 4], [10, 11, 12, 13], [2, 3, 4, 5], [2, 3, 4, 5])), 1e-5), F32)


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or variance_is_made or vendor_op_api_unit_test or formats "
                                   "or vendor_discontiguous or newton_raphson")
