"""The emulator's aclnnBatchNorm through raw calls: phase one's checks, their order, codes and
messages (hicann/ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp; the stricter
choices in docs/emulator.md), the empty input's fill, what is written (the output, in training
saveMean, saveInvstd and the caller's running statistics in place; nothing else), and the
device's numbers: against the float64 reference, and bit for bit against each part's chain
written in NumPy (Atlas A2/A3's BatchNormV3 kernel in training with C >= 64, Ascend 950's
regbase kernel, the TBE BNTrainingReduce/BNTrainingUpdate/BNInfer chain elsewhere); the other
parts in their own processes.
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
from _emu_aclnn import SOC, both_phases_without_a_device, refused_by, run_phase_two
from _part_runs import cases_where, only_where, other_parts, run_on_parts
from _workspace_model import fills_ws, max_allocator
from _emu_aclnn import phase_one as aclnn_phase_one
from test_emulator_rms_norm_quant import v2_rstd  # norm_common's Newton-Raphson rstd

P1 = lib.aclnnBatchNormGetWorkspaceSize
P2 = lib.aclnnBatchNorm
CALL = "aclnnBatchNormGetWorkspaceSize"
INNER_NULLPTR = 561103
SENTINEL = -77.0
f = np.float32


def phase_one(x, w, b, rm, rv, training, momentum, eps, y, sm, si, ws=True, ex=True):
    return aclnn_phase_one(P1, x, w, b, rm, rv, training, momentum, eps, y, sm, si, ws=ws,
                           ex=ex)


def call(arena, x, w=None, b=None, rm=None, rv=None, training=True, momentum=0.1, eps=1e-5,
         stat_dt=F32, kind="contig"):
    """Runs the operator on x [N, C, ...] (ND tensors); returns (y, saveMean, saveInvstd,
    runningMean, runningVar) read back (the running ones None where not given; the saved
    ones their sentinel-filled views in inference)."""
    c = x.shape[1]
    vx = DevView(arena, x, kind=kind)
    vw = None if w is None else DevView(arena, w, kind=kind)
    vb = None if b is None else DevView(arena, b, kind=kind)
    vrm = None if rm is None else DevView(arena, rm, kind=kind)
    vrv = None if rv is None else DevView(arena, rv, kind=kind)
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kind, sentinel=SENTINEL)
    vsm = DevView(arena, shape=(c,), dtype=stat_dt, kind=kind, sentinel=SENTINEL)
    vsi = DevView(arena, shape=(c,), dtype=stat_dt, kind=kind, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(vx, vw, vb, vrm, vrv, training, momentum, eps, vy, vsm,
                                       vsi))
    # every view read back: nothing written outside the views, the inputs untouched
    assert np.array_equal(vx.read(), x.astype(x.dtype)) or np.isnan(x).any()
    for v, given in ((vw, w), (vb, b)):
        if v is not None:
            assert np.array_equal(v.read(), given)
    return (vy.read(), vsm.read(), vsi.read(), None if vrm is None else vrm.read(),
            None if vrv is None else vrv.read())


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(shape, dt, seed=0, affine=True, running=True, rdt=F32):
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[1]
    x = rand(rng, shape, dt)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(dt) if affine else None
    b = (0.5 * rng.standard_normal(c)).astype(dt) if affine else None
    rm = (0.1 * rng.standard_normal(c)).astype(rdt) if running else None
    rv = (1 + 0.5 * rng.random(c)).astype(rdt) if running else None
    return x, w, b, rm, rv


# ---- the chains, in NumPy -------------------------------------------------------------------

def chain_of(shape, training):
    """The kernel the op_api picks on this part for an ND input of ``shape``."""
    if ARCH == 3510:
        return "950"
    ndim, c = len(shape), shape[1]
    if training and ARCH == 2201 and c >= 64 and ndim != 4:   # rank 4 ND: not NCHW
        return "v3-apar" if math.prod(shape[2:]) == 1 else "v3"
    return "tbe"


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def round_bf16_ties_away(v):
    u = v.astype(f).view(np.uint32).astype(np.uint64)
    keep = np.isnan(v)
    r = ((u + 0x8000) & 0xFFFF0000).astype(np.uint32).view(f)
    return np.where(keep, v, r).astype(BF16)


def rstd_950(var, eps, clamp=True):
    """Ascend 950's rstd per channel: norm_common's ComputeRstdNewtonRaphsonReg, one
    Newton-Raphson step (not always the correctly rounded value); with its clamp as each of
    BatchNormV3's arch35 inference kernels (bn_channels.h bn_infer_channel) and BatchNormGradV3's
    take it, without (clamp False) as every BatchNormV3 training template."""
    return np.array([v2_rstd(v, eps, clamp) for v in np.asarray(var, f)], f)


def device_chain(x, w, b, rm, rv, training, momentum, eps):
    """(y, saveMean, saveInvstd, runningMean, runningVar) as this part's kernel computes them,
    float32 (y rounded to x's dtype as the kernel does; the others float32 before their
    cast)."""
    shape = x.shape
    c = shape[1]
    rows = np.moveaxis(x.astype(f), 1, 0).reshape(c, -1)
    r = rows.shape[1]
    wv = np.ones(c, f) if w is None else w.astype(f)
    bv = np.zeros(c, f) if b is None else b.astype(f)
    rmv = np.zeros(c, f) if rm is None else rm.astype(f)
    rvv = np.ones(c, f) if rv is None else rv.astype(f)
    m, e = f(momentum), f(eps)
    mr = f(1) - m
    kind = chain_of(shape, training)
    out = {}
    with np.errstate(all="ignore"):
        if not training:
            if kind == "950":
                rstd = rstd_950(rvv, e)
                y = ((rows - rmv[:, None]) * wv[:, None]) * rstd[:, None] + bv[:, None]
            else:
                k = wv / np.sqrt(rvv + e)
                shift = bv - k * rmv
                y = rows * k[:, None] + shift[:, None]
            return _shape_y(y.astype(f), shape, x.dtype, "even"), None, None, None, None
        if kind == "tbe":
            c0 = f(1.0 / f(r))
            s = lane_sum(rows)
            sq = lane_sum((rows * rows).astype(f))
            mean = (s * c0).astype(f)
            var = ((sq * c0).astype(f) - (mean * mean).astype(f)).astype(f)
            k = (wv / np.sqrt((var + e).astype(f))).astype(f)
            shift = (bv - (k * mean).astype(f)).astype(f)
            y = ((rows * k[:, None]).astype(f) + shift[:, None]).astype(f)
            saved = var
            factor = f(r) / f(r - 1)    # the dynamic tiling's float division (inf for 1)
            var_term = ((var * factor).astype(f) * m).astype(f)
        else:
            p = pow2(r)
            if kind == "950":
                c0, c1 = f(1) / f(p), f(p) / f(r)
            else:
                c0, c1 = f(1.0 / p), f(p / r)
            mean = (lane_sum((rows * c0).astype(f)) * c1).astype(f)
            d = (rows - mean[:, None]).astype(f)
            var = (lane_sum(((d * d).astype(f) * c0).astype(f)) * c1).astype(f)
            if kind == "950":
                rstd = rstd_950(var, e, clamp=False)
                y = (((d * rstd[:, None]).astype(f) * wv[:, None]).astype(f) + bv[:, None])
                saved = rstd
                bessel = f(r) / f(r - 1)
                var_term = ((var * bessel).astype(f) * m).astype(f)
            else:
                if kind == "v3":
                    k = (wv / np.sqrt((var + e).astype(f))).astype(f)
                    y = ((d * k[:, None]).astype(f) + bv[:, None]).astype(f)
                else:
                    sd = np.sqrt((var + e).astype(f)).astype(f)
                    y = (((d / sd[:, None]).astype(f) * wv[:, None]).astype(f) + bv[:, None])
                saved = var
                scale = f(np.nan) if r == 1 else f(r / (r - 1))
                var_term = (var * f(scale * m)).astype(f)
        ties = "away" if kind.startswith("v3") else "even"
        new_rm = ((rmv * mr).astype(f) + (mean * m).astype(f)).astype(f)
        new_rv = ((rvv * mr).astype(f) + var_term).astype(f)
    return (_shape_y(y.astype(f), shape, x.dtype, ties), mean, saved,
            None if rm is None else new_rm, None if rv is None else new_rv)


def _shape_y(rows, shape, dt, ties):
    y = np.moveaxis(rows.reshape((shape[1], shape[0]) + tuple(shape[2:])), 0, 1)
    if dt == BF16 and ties == "away":
        return round_bf16_ties_away(y)
    return y.astype(dt)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def same_bits(got, want, dt):
    assert np.array_equal(bits(np.asarray(got)), bits(np.asarray(want).astype(dt))), \
        (got, want)


# ---- numbers ---------------------------------------------------------------------------------

SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 96, 7), (3, 64, 2, 1, 3, 2), (5, 2),
          (1, 70, 1)]


@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_chain_bit_for_bit(arena, dt, shape, training):
    """Every output is this part's chain, bit for bit; inference writes the output only."""
    x, w, b, rm, rv = inputs(shape, dt)
    got = call(arena, x, w, b, rm, rv, training=training, momentum=0.3, eps=1e-3)
    want = device_chain(x, w, b, rm, rv, training, 0.3, 1e-3)
    same_bits(got[0], want[0], dt)
    if training:
        for g, v in zip(got[1:], want[1:]):
            same_bits(g, v, F32)
    else:
        assert (got[1] == SENTINEL).all() and (got[2] == SENTINEL).all()
        same_bits(got[3], rm, F32)
        same_bits(got[4], rv, F32)


@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES[:4], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_reference(arena, dt, shape, training):
    """Against the float64 reference within its tolerance (saveInvstd as this part writes
    it: the variance, or 1 / sqrt(var + eps) on Ascend 950)."""
    x, w, b, rm, rv = inputs(shape, dt, seed=3)
    got = call(arena, x, w, b, rm, rv, training=training)
    saved = "invstd" if ARCH == 3510 else "var"
    ref = reference.batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5, saved=saved)
    scale = reference.batch_norm_error_scale(x, w, b, rm, rv, training, 0.1, 1e-5, saved=saved)
    for k, (g, r_, s) in enumerate(zip(got, ref, scale)):
        if r_ is None:
            continue
        ratio = reference.max_error_ratio(g, r_, s, dt)
        assert ratio <= 1, (k, ratio)


# Variances whose Newton-Raphson rstd (norm_common ComputeRstdNewtonRaphsonReg) is one bit
# off the correctly rounded 1 / sqrt: in the normal range only two mantissas per pair of
# binades (an exhaustive float32 search; the step scales exactly by 4), far more above 2^100.
NR_MISSES = np.array([float.fromhex(m) * 2.0 ** e for e in (-3, -1, 1, 3)
                     for m in ("0x1.13e07p0", "0x1.fffffcp0")], f)


def test_inference_rstd_where_newton_raphson_is_not_correctly_rounded(arena):
    """runningVar + eps (eps 0) on the variances where Ascend 950's inference kernels' rstd
    (one Newton-Raphson step, ops-nn norm_common reduce_common_regbase.h) is not the correctly
    rounded 1 / sqrt: y is this part's chain bit for bit on every part, and on Ascend 950 not
    the chain with a correctly rounded rstd."""
    rv = NR_MISSES
    c = rv.size
    exact = (1 / np.sqrt(rv.astype(np.float64))).astype(f)
    assert (rstd_950(rv, 0.0) != exact).all()
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((4, c, 32)) * 3).astype(F32)
    rm = (0.1 * rng.standard_normal(c)).astype(F32)
    w, b = np.ones(c, F32), np.zeros(c, F32)
    y = call(arena, x, w, b, rm, rv, training=False, eps=0.0)[0]
    same_bits(y, device_chain(x, w, b, rm, rv, False, 0.1, 0.0)[0], F32)
    if ARCH == 3510:
        rows = np.moveaxis(x, 1, 0).reshape(c, -1)
        t = ((rows - rm[:, None]) * w[:, None]) * exact[:, None] + b[:, None]
        assert not np.array_equal(bits(y), bits(_shape_y(t, x.shape, F32, "even")))


def four_squares(n):
    """Four non-negative integers, as near each other as the search finds, whose squares sum
    to n (Lagrange: there always are four)."""
    for a in range(math.isqrt(n // 4), math.isqrt(n) + 1):
        for b in range(math.isqrt((n - a * a) // 3), a + 1):
            for c in range(math.isqrt((n - a * a - b * b) // 2), b + 1):
                rest = n - a * a - b * b - c * c
                d = math.isqrt(rest) if rest >= 0 else -1
                if d >= 0 and d * d == rest and d <= c:
                    return a, b, c, d
    raise AssertionError(n)


def channel_of_variance(var):
    """A channel of 8 values, four +- pairs k * 2^-s, whose variance (the mean 0) is exactly
    ``var``, summed in every part's order: each x * x and x * x / 8 exact, a pair's two terms
    folded together first (lanes l and l + 4), every partial sum a multiple of the sum's
    unit (sum(k^2) below 2^24). var = sum(k^2) * 2^(-2s - 2): sum(k^2) is var's odd
    mantissa (times 2 for an odd exponent), s carries var's power of 4."""
    m, e = math.frexp(float(var))
    mant, e = int(m * 2 ** 24), e - 24          # var = mant * 2^e
    while mant % 2 == 0:
        mant, e = mant // 2, e + 1
    s = -((e + 2) // 2)                          # the least s with e + 2s + 2 >= 0
    n = mant << (e + 2 * s + 2)                  # sum(k^2)
    assert n * 2.0 ** (-2 * s - 2) == float(var) and n < 2 ** 24, (var, n, s)
    ks = np.array(four_squares(n), np.float64) * 2.0 ** -s
    return np.concatenate([ks, -ks]).astype(f)


# Variances where Ascend 950's rstd (one Newton-Raphson step) is not the correctly rounded
# float, over the range: the two normal-range mantissas, above 2^100, and 0x1.08ec18p+126
# (1 / var subnormal, where misses are common: 0x1.13e07p+127 is not one; found by a search;
# channel_of_variance's squares for it stay below 2^128).
NR_MISSES_WIDE = np.array([float.fromhex(m) * 4.0 ** e
                           for m, es in (("0x1.13e07p1", (-2, 0, 2, 50)),
                                         ("0x1.fffffcp1", (-2, 0, 2, 50)),
                                         ("0x1.08ec18p126", (0,))) for e in es], f)


def test_training_rstd_where_newton_raphson_is_not_correctly_rounded(arena):
    """Channels whose variance (eps 0) is one where every BatchNormV3 arch35 training template's
    rstd (CalculateRunningMeanVarWithRstdVF, ComputeRstdNewtonRaphson(Reg)<false>) is not the
    correctly rounded 1 / sqrt: y, saveMean, saveInvstd and the running statistics are this
    part's chain bit for bit on every part, each channel's variance exactly the one meant, and
    on Ascend 950 saveInvstd and y are not the correctly rounded rstd's."""
    var = NR_MISSES_WIDE
    c = var.size
    exact = (1 / np.sqrt(var.astype(np.float64))).astype(f)
    nr = rstd_950(var, 0.0, clamp=False)
    assert (nr != exact).all()
    rows = np.stack([channel_of_variance(v) for v in var])             # [C, 8]
    x = np.ascontiguousarray(np.moveaxis(rows.reshape(c, 2, 4), 1, 0))  # [2, C, 4]
    rng = np.random.default_rng(17)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(F32)
    b = (0.5 * rng.standard_normal(c)).astype(F32)
    rm, rv = np.zeros(c, F32), np.ones(c, F32)
    got = call(arena, x, w, b, rm, rv, training=True, momentum=0.1, eps=0.0)
    want = device_chain(x, w, b, rm, rv, True, 0.1, 0.0)
    for g, v in zip(got, want):
        same_bits(g, v, F32)
    same_bits(got[1], np.zeros(c, F32), F32)                           # the mean 0
    if ARCH == 3510:
        same_bits(got[2], nr, F32)           # saveInvstd: the rstd of exactly these variances
        y = ((rows * exact[:, None]) * w[:, None]) + b[:, None]
        assert not np.array_equal(bits(got[0]), bits(_shape_y(y, x.shape, F32, "even")))
    elif chain_of(x.shape, True) == "tbe":
        # saveInvstd is the variance there; the one-pass sum of squares overflows above 2^125
        fits = var < f(2.0 ** 124)
        same_bits(got[2][fits], var[fits], F32)


def test_without_weight_bias_and_running_statistics(arena):
    """NULL weight, bias: ones, zeros; NULL running statistics: nothing written for them
    (the op_api's filled stand-ins are not copied out), inference uses 0 and 1."""
    x = inputs((3, 4, 5), F32)[0]
    got = call(arena, x)
    want = device_chain(x, None, None, None, None, True, 0.1, 1e-5)
    for g, v in zip(got[:3], want[:3]):
        same_bits(g, v, F32)
    y = call(arena, x, training=False)[0]
    same_bits(y, device_chain(x, None, None, None, None, False, 0.1, 1e-5)[0], F32)


@pytest.mark.parametrize("rdt", [F16, *cases_where(BF16_PART, BF16)])
def test_running_statistics_in_their_own_dtype(arena, rdt):
    """runningMean/runningVar of another dtype than input: read widened, written rounded to
    their dtype (the op_api's Cast), saveMean/saveInvstd in theirs."""
    x, w, b, rm, rv = inputs((2, 5, 6), F32, rdt=rdt)
    got = call(arena, x, w, b, rm, rv, stat_dt=rdt)
    want = device_chain(x, w, b, rm, rv, True, 0.1, 1e-5)
    same_bits(got[0], want[0], F32)
    for g, v in zip(got[1:], want[1:]):
        same_bits(g, v.astype(rdt), rdt)


def test_one_value_per_channel_gives_a_nan_running_var(arena):
    """R == 1: the unbiased variance divides by 0 (NaN), runningVar becomes NaN."""
    x, w, b, rm, rv = inputs((1, 3), F32)
    got = call(arena, x, w, b, rm, rv)
    assert np.isnan(got[4]).all() and np.isfinite(got[3]).all()


@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    x, w, b, rm, rv = inputs((2, 6, 3, 4), F16)
    base = call(arena, x, w, b, rm, rv)
    got = call(arena, x, w, b, rm, rv, kind=kind)
    for g, v in zip(got, base):
        assert np.array_equal(bits(g), bits(v))


def test_bits_do_not_depend_on_the_thread_count(arena):
    x, w, b, rm, rv = inputs((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, x, w, b, rm, rv)
    lib.aclemuSetNumThreads(4)
    four = call(arena, x, w, b, rm, rv)
    for g, v in zip(one, four):
        assert np.array_equal(bits(g), bits(v))


def test_running_statistics_may_alias_nothing_else_written(arena):
    """The caller's running statistics are updated in place; a repeatable executor's second
    run starts from the first one's values (the running average moves on)."""
    x, w, b, rm, rv = inputs((4, 3, 5), F32)
    vx, vrm, vrv = DevView(arena, x), DevView(arena, rm), DevView(arena, rv)
    vy = DevView(arena, shape=x.shape, dtype=F32)
    vsm, vsi = DevView(arena, shape=(3,), dtype=F32), DevView(arena, shape=(3,), dtype=F32)
    rc, ws, ex = phase_one(vx, None, None, vrm, vrv, True, 0.5, 1e-5, vy, vsm, vsi)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    wsp = arena.malloc(ws) if ws else ffi.NULL  # the absent weight's and bias's fills, ...
    try:
        cur_m, cur_v = rm, rv
        for _ in range(2):
            assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            want = device_chain(x, None, None, cur_m, cur_v, True, 0.5, 1e-5)
            same_bits(vrm.read(), want[3], F32)
            same_bits(vrv.read(), want[4], F32)
            cur_m, cur_v = want[3], want[4]
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 0), (2, 4, 0)], ids=["n0", "c0", "hw0"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_empty_input_fills_save_mean_with_0_and_save_invstd_with_nan(arena, shape, training):
    """The op_api's ProcessEmptyTensorWithValue (in either mode, where given), nothing
    else: output and the running statistics untouched, no other check made."""
    x = np.ones(shape, F16)
    rm, rv = np.full(4, 2, F32), np.full(4, 3, F32)
    vx, vrm, vrv = DevView(arena, x), DevView(arena, rm), DevView(arena, rv)
    vy = DevView(arena, shape=shape, dtype=F32, sentinel=SENTINEL)   # dtype not checked
    vsm = DevView(arena, shape=(4,), dtype=F16, sentinel=SENTINEL)
    vsi = DevView(arena, shape=(4, 2), dtype=F32, sentinel=SENTINEL)  # nor shape
    run_phase_two(arena, P2, phase_one(vx, None, None, vrm, vrv, training, 0.1, 1e-5, vy, vsm,
                                       vsi))
    assert (vsm.read() == 0).all() and np.isnan(vsi.read()).all()
    assert (vrm.read() == 2).all() and (vrv.read() == 3).all()


# (input shape, training, saveMean shape or None, saveInvstd shape or None, a kernel launched)
EMPTY_CALLS = [
    ((0, 4, 3), False, None, None, False),     # inference, nothing to fill
    ((2, 0), True, (0,), (0,), False),         # C == 0: both fills of empty tensors
    ((0, 4, 3), False, (0,), (0,), False),     # given but empty
    ((2, 4, 0), True, (4,), (0,), True),       # saveMean's Fill
    ((0, 4, 3), False, None, (4,), True),      # saveInvstd's Fill
    ((0, 4, 3), True, (4,), (4,), True),
]


@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
@pytest.mark.parametrize("call", EMPTY_CALLS, ids=[
    f"{c[0]}-{'train' if c[1] else 'eval'}-sm{c[2]}-si{c[3]}" for c in EMPTY_CALLS])
def test_empty_input_launches_a_kernel_only_to_fill(arena, call, null_stream):
    """An empty input: the op_api fills a given saveMean and saveInvstd
    (aclnn_batch_norm.cpp:288-301, ProcessEmptyTensorWithValue) and returns, on every part;
    l0op::Fill of an empty tensor adds no kernel (ops-math fill.cpp:98-100). So a call with
    nothing non-empty to fill has no kernel: both phases succeed on a thread that never set a
    device, with a NULL stream or a given one, nothing queued or written; a fill is a kernel
    (361001 there), whose tiling asks 16 MiB of workspace on Ascend 950; its result stays in
    the workspace on Ascend910A/Ascend310P3, whose ViewCopy copies it into a view with slack
    after it (_workspace_model.fills_ws)."""
    shape, training, sm_shape, si_shape, kernel = call
    stream = ffi.NULL if null_stream else arena.stream
    vx = DevView(arena, np.ones(shape, F32))
    vy = DevView(arena, shape=shape, dtype=F32)
    vsm, vsi = (None if s is None else DevView(arena, shape=s, dtype=F32, sentinel=SENTINEL)
                for s in (sm_shape, si_shape))
    want = max_allocator(fills_ws([vsm, vsi]))
    rc, ws, rc2, msg = both_phases_without_a_device(
        P1, P2, (vx, None, None, None, None, training, 0.1, 1e-5, vy, vsm, vsi), stream,
        workspace=arena.malloc(want) if want else None)
    assert (rc, ws, rc2) == (OK, want, 361001 if kernel else OK), (call, msg)
    if kernel:
        assert msg.startswith("aclnnBatchNorm: ") and "no device" in msg, msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    for v in (vsm, vsi):
        if v is not None and v.n:
            assert (v.read() == SENTINEL).all()   # neither run wrote it


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(2, 4, 3), xdt=F32, ydt=None, sdt=F32, shapes=None, dts=None):
    """input, weight, bias, runningMean, runningVar, output, saveMean, saveInvstd views
    (``shapes``/``dts``: overrides by name)."""
    c = shape[1] if len(shape) > 1 else 1
    shapes = {"weight": (c,), "bias": (c,), "rm": (c,), "rv": (c,), "y": shape,
              "sm": (c,), "si": (c,)} | (shapes or {})
    dts = {"weight": xdt, "bias": xdt, "rm": F32, "rv": F32, "y": ydt or xdt, "sm": sdt,
           "si": sdt} | (dts or {})
    x = DevView(arena, np.ones(shape, xdt))
    rest = [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in ("weight", "bias", "rm", "rv", "y", "sm", "si")]
    return [x] + rest


# dtypes outside the operator's, as aclCreateTensor's dtype over float32 storage
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE}


def args(vs, training=True):
    x, w, b, rm, rv, y, sm, si = vs
    return (x, w, b, rm, rv, training, 0.1, 1e-5, y, sm, si)


def refused(vs, code, *words, training=True, **kw):
    return refused_by(phase_one, CALL, args(vs, training), code, *words, **kw)


def test_out_pointers_first(arena):
    """L2_DFX_PHASE_1's out-pointers come before input's NULL check."""
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "input"), (5, "output"), (6, "saveMean"),
                                    (7, "saveInvstd")])
def test_required_tensors(arena, k, name):
    vs = views(arena)
    vs[k] = None
    refused(vs, NULLPTR, f"{name} is NULL")


def test_saved_statistics_are_optional_in_inference(arena):
    vs = views(arena)
    vs[6] = vs[7] = None
    for k in (1, 2, 3, 4):
        vs[k] = None
    rc, _, ex = phase_one(*args(vs, training=False))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


PARAM_CASES = [
    ("output shape", dict(shapes={"y": (2, 4, 4)}), ("output shape", "must equal input's")),
    ("weight shape", dict(shapes={"weight": (3,)}), ("weight shape",)),
    ("bias rank", dict(shapes={"bias": (4, 1)}), ("bias shape",)),
    ("running mean", dict(shapes={"rm": (5,)}), ("runningMean shape",)),
    ("running var", dict(shapes={"rv": (1,)}), ("runningVar shape",)),
    ("save mean", dict(shapes={"sm": (4, 1)}), ("saveMean shape",)),
    ("save invstd", dict(shapes={"si": (2,)}), ("saveInvstd shape",)),
    ("rank 1", dict(shape=(4,), shapes={"weight": (1,), "bias": (1,), "rm": (1,), "rv": (1,),
                                         "sm": (1,), "si": (1,)}), ("input rank 1",)),
    ("rank 9", dict(shape=(2, 3) + (1,) * 7), ("input rank 9",)),
    ("weight dtype", dict(dts={"weight": "int32"}), ("weight dtype",)),
    ("running dtype", dict(dts={"rv": "double"}), ("runningVar dtype",)),
    ("save dtype", dict(dts={"si": "int32"}), ("saveInvstd dtype",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(views(arena, **kw), INVALID, *words)


def test_saved_statistics_are_not_checked_in_inference(arena):
    vs = views(arena, shapes={"sm": (7,)}, dts={"si": "int32"})
    rc, _, ex = phase_one(*args(vs, training=False))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_output_dtype_other_than_input_fails_the_result_copy(arena):
    """No dtype rule ties output to input in CheckParams; the result's ViewCopy does
    (561103)."""
    refused(views(arena, ydt=F16), INNER_NULLPTR, "output dtype", "ViewCopy")


def test_checks_run_in_the_vendor_order(arena):
    """Dtypes (input, output, saved, then the others), then formats, then shapes."""
    vs = views(arena, dts={"weight": "int32", "sm": "int32"}, shapes={"y": (9, 9)})
    refused(vs, INVALID, "saveMean dtype")
    vs = views(arena, dts={"weight": "int32"}, shapes={"y": (9, 9)})
    refused(vs, INVALID, "weight dtype")


def fmt_tensor(arena, view, fmt, shape=None):
    shape = list(view.shape if shape is None else shape)
    strides = [int(math.prod(shape[i + 1:])) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), len(shape), lib.ACL_FLOAT,
                            ffi.new("int64_t[]", strides), 0, fmt,
                            ffi.new("int64_t[]", [view.n]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def test_formats(arena):
    """CheckFormat: output's format input's; rank 5 NCDHW (or NDHWC on Ascend 950); no
    private format; NHWC/NDHWC only on Ascend 950 (docs)."""
    vs = views(arena, shape=(2, 4, 3, 2, 2))
    x, y = vs[0], vs[5]
    nd_x, nd_y = fmt_tensor(arena, x, lib.ACL_FORMAT_ND), fmt_tensor(arena, y, lib.ACL_FORMAT_ND)
    refused([nd_x] + vs[1:5] + [nd_y] + vs[6:], INVALID, "rank 5", "NCDHW")
    cx = fmt_tensor(arena, x, lib.ACL_FORMAT_NCDHW)
    cy = fmt_tensor(arena, y, lib.ACL_FORMAT_NCDHW)
    refused([cx] + vs[1:5] + [nd_y] + vs[6:], INVALID, "output's format")
    rc, _, ex = phase_one(*args([cx] + vs[1:5] + [cy] + vs[6:]))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    shape4 = (2, 4, 3, 2)
    v4 = views(arena, shape=shape4)
    pz = fmt_tensor(arena, v4[0], lib.ACL_FORMAT_FRACTAL_NZ)
    pzy = fmt_tensor(arena, v4[5], lib.ACL_FORMAT_FRACTAL_NZ)
    refused([pz] + v4[1:5] + [pzy] + v4[6:], INVALID, "private")
    hx = fmt_tensor(arena, v4[0], lib.ACL_FORMAT_NHWC)
    hy = fmt_tensor(arena, v4[5], lib.ACL_FORMAT_NHWC)
    if ARCH == 3510:   # channels last: C = 2, the last dim
        refused([hx] + v4[1:5] + [hy] + v4[6:], INVALID, "weight shape")
    else:
        refused([hx] + v4[1:5] + [hy] + v4[6:], INVALID, "NHWC", "Ascend 950")


@only_where(ARCH == 3510)   # NHWC is Ascend 950's (its own run or its child)
def test_ascend_950_channels_last_matches_channels_first(arena):
    """On Ascend 950 an NHWC input's channel is its last dim: the same numbers as the NCHW
    input it transposes (each channel's values come in the same order)."""
    x, w, b, rm, rv = inputs((2, 3, 4, 5), F32)
    nhwc = np.ascontiguousarray(np.moveaxis(x, 1, 3))
    vx = DevView(arena, nhwc)
    vy = DevView(arena, shape=nhwc.shape, dtype=F32, sentinel=SENTINEL)
    vw, vb, vrm, vrv = (DevView(arena, a) for a in (w, b, rm, rv))
    vsm, vsi = DevView(arena, shape=(3,), dtype=F32), DevView(arena, shape=(3,), dtype=F32)
    hx = fmt_tensor(arena, vx, lib.ACL_FORMAT_NHWC)
    hy = fmt_tensor(arena, vy, lib.ACL_FORMAT_NHWC)
    run_phase_two(arena, P2, phase_one(hx, vw, vb, vrm, vrv, True, 0.1, 1e-5, hy, vsm, vsi))
    want = device_chain(x, w, b, rm, rv, True, 0.1, 1e-5)
    same_bits(vy.read(), np.moveaxis(want[0], 1, 3), F32)
    for v, wv in zip((vsm, vsi, vrm, vrv), want[1:]):
        same_bits(v.read(), wv, F32)


def test_refusals_leak_nothing(arena):
    """Every refusal above returns before an executor exists (the autouse leak check)."""
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_dead_tensor_is_refused(arena):
    vs = views(arena)
    arena.destroy_tensor(vs[3].handle)
    try:
        refused(vs, INVALID, "runningMean", "not a live aclTensor")
    finally:
        v = vs[3]
        v.handle = arena.tensor(v.shape, v.dtype, v.strides, v.offset, v.n, v.ptr)


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*args(views(arena, xdt=dt)))
        ok = dt != BF16 or BF16_PART
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()



# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_host/op_api/test_aclnn_batchnorm.cpp: (name, input, weight, bias, runningMean,
# runningVar, training, output, saveMean, saveInvstd, expected status); a tensor is (shape,
# dtype, format[, strides]) or None; the BF16 cases (named for Atlas A2 or Ascend 950 there)
# are refused on parts without BF16. Its NHWC case has no expectation (commented out).
V5 = ((5,), "f32", "ND")
NCDHW = ((3, 5, 3, 8, 9), "f32", "NCDHW")
NCHW32, NCHW16 = ((3, 5, 3, 8), "f32", "NCHW"), ((3, 5, 3, 8), "f16", "NCHW")
V4, V6 = ((4,), "f32", "ND"), ((6,), "f32", "ND")
X34 = ((3, 4), "f32", "ND")
UT_CASES = [
    ("5d_train", NCDHW, V5, V5, V5, V5, True, NCDHW, V5, V5, OK),
    ("5d_infer", NCDHW, V5, V5, V5, V5, False, NCDHW, V5, V5, OK),
    ("float32_infer", NCHW32, V5, V5, V5, V5, False, NCHW32, V5, V5, OK),
    ("float16_infer", NCHW16, V5, V5, V5, V5, False, NCHW16, V5, V5, OK),
    ("float16_4d", NCHW16, V5, V5, V5, V5, True, NCHW16, V5, V5, OK),
    ("float32_4d", NCHW32, V5, V5, V5, V5, True, NCHW32, V5, V5, OK),
    ("float16_3d", ((3, 5, 7), "f16", "ND"), V5, V5, V5, V5, True, ((3, 5, 7), "f16", "ND"),
     V5, V5, OK),
    ("float32_3d", ((3, 5, 7), "f32", "ND"), V5, V5, V5, V5, True, ((3, 5, 7), "f32", "ND"),
     V5, V5, OK),
    ("float16_2d", ((18, 6), "f16", "ND"), V6, V6, V6, V6, True, ((18, 6), "f16", "ND"), V6,
     V6, OK),
    ("float32_2d", ((18, 6), "f32", "ND"), V6, V6, V6, V6, True, ((18, 6), "f32", "ND"), V6,
     V6, OK),
    ("err_null_input", None, None, None, None, None, True, X34, V4, V4, NULLPTR),
    ("err_null_out", X34, None, None, None, None, True, None, V4, V4, NULLPTR),
    ("err_null_mean", X34, None, None, None, None, True, X34, None, V4, NULLPTR),
    ("err_null_var", X34, None, None, None, None, True, X34, V4, None, NULLPTR),
    ("err_int32", ((3, 4), "i32", "ND"), None, None, None, None, True, ((3, 4), "i32", "ND"),
     V4, V4, INVALID),
    ("err_int32_var", X34, None, None, V4, ((4,), "i32", "ND"), True, X34, V4,
     ((4,), "i32", "ND"), INVALID),
    ("err_int32_self", ((3, 4), "i32", "ND"), None, None, V4, V4, True, X34, V4, V4, INVALID),
    ("err_int32_out", X34, None, None, V4, V4, True, ((3, 4), "i32", "ND"), V4, V4, INVALID),
    ("err_int32_mean", X34, None, None, ((4,), "i32", "ND"), V4, True, X34,
     ((4,), "i32", "ND"), V4, INVALID),
    ("err_int32_weight", X34, ((4,), "i32", "ND"), None, None, None, True, X34, V4, V4,
     INVALID),
    ("err_int32_bias", X34, None, ((4,), "i32", "ND"), None, None, True, X34, V4, V4, INVALID),
    ("err_shape", ((3, 4, 5, 6, 7, 8, 9, 10, 11), "f32", "ND"), None, None, None, None, True,
     ((3, 4, 5, 6, 7, 8, 9, 10, 11), "f32", "ND"), V4, V4, INVALID),
    ("float32_strided", ((3, 5, 3, 8), "f32", "NCHW", (120, 8, 24, 1)), V5, V5, V5, V5, True,
     NCHW32, V5, V5, OK),
    ("float32_7d", ((3, 5, 4, 6, 7, 2, 2), "f32", "NCHW"), V5, V5, V5, V5, True,
     ((3, 5, 4, 6, 7, 2, 2), "f32", "NCHW"), V5, V5, OK),
    ("err_dim", ((3, 5, 4, 6), "f32", "NCHW"), V5, V5, V5, V4, True,
     ((3, 5, 4, 6), "f32", "NCHW"), V5, V5, INVALID),
    ("err_format1", ((3, 5, 4, 6, 5), "f32", "NCDHW"), V5, V5, V5, V4, True,
     ((3, 5, 4, 6, 5), "f32", "NCHW"), V5, V5, INVALID),
    ("err_format2", ((3, 5, 4, 6, 5), "f32", "NCHW"), V5, V5, V5, V4, True,
     ((3, 5, 4, 6, 5), "f32", "NCHW"), V5, V5, INVALID),
    ("err_format3", ((3, 5, 4, 6), "f32", "NCHW"), V5, V5, V5, V4, True,
     ((3, 5, 4, 6, 5), "f32", "NCHW"), V5, V5, INVALID),
    ("error_mean_shape", ((3, 5, 3, 8), "bf16", "NCHW"), V5, V5, V5, V5, True,
     ((3, 5, 3, 8), "bf16", "NCHW"), V6, V5, INVALID),
    ("empty_tensor", ((3, 5, 4, 0), "f32", "NCHW"), V5, V5, V5, V5, True,
     ((3, 5, 4, 0), "f32", "NCHW"), V5, V5, OK),
    ("bfloat16_infer", ((3, 5, 3, 8), "bf16", "NCHW"), V5, V5, V5, V5, False,
     ((3, 5, 3, 8), "bf16", "NCHW"), V5, V5, OK),
    ("bfloat16_infer1", NCDHW, V5, V5, V5, V5, False, NCDHW, V5, V5, OK),
    ("bnv3", ((1, 64, 1, 1, 8192), "f32", "NCDHW"), ((64,), "f32", "ND"), ((64,), "f32", "ND"),
     ((64,), "f32", "ND"), ((64,), "f32", "ND"), True, ((1, 64, 1, 1, 8192), "f32", "NCDHW"),
     ((64,), "f32", "ND"), ((64,), "f32", "ND"), OK),
    ("mixDTypeInput_4d", NCHW16, V5, ((5,), "f16", "ND"), V5, V5, True, NCHW16, V5, V5, OK),
    ("nullptr", NCHW16, None, None, None, None, True, NCHW16, V5, V5, OK),
    ("fp32_input_fp16_weight_bias", NCHW32, ((5,), "f16", "ND"), ((5,), "f16", "ND"), V5, V5,
     True, NCHW32, V5, V5, OK),
    ("bf16_input_fp16_weight_bias", ((3, 5, 3, 8), "bf16", "NCHW"), ((5,), "f16", "ND"),
     ((5,), "f16", "ND"), V5, V5, True, ((3, 5, 3, 8), "bf16", "NCHW"), V5, V5, OK),
    ("infer_empty_input_null_save_mean_var", ((0, 2, 4), "f32", "ND"), ((2,), "f32", "ND"),
     ((2,), "f32", "ND"), ((2,), "f32", "ND"), ((2,), "f32", "ND"), False,
     ((0, 2, 4), "f32", "ND"), None, None, OK),
    ("infer_empty_input_with_save_mean_var", ((0, 2, 4), "f32", "ND"), ((2,), "f32", "ND"),
     ((2,), "f32", "ND"), ((2,), "f32", "ND"), ((2,), "f32", "ND"), False,
     ((0, 2, 4), "f32", "ND"), ((2,), "f32", "ND"), ((2,), "f32", "ND"), OK),
]
@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, *specs, code = case
    training = specs.pop(5)
    bf16 = any(s is not None and s[1] == "bf16" for s in specs)
    want = INVALID if bf16 and not BF16_PART else code
    ts = [ut_tensor(arena, s) for s in specs]
    rc, _, ex = phase_one(*ts[:5], training, 0.1, 1e-5, *ts[5:])
    assert rc == want, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or formats or channels_last or empty_input or "
                                   "vendor_op_api_unit_test or newton_raphson")
