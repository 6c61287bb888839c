"""aclnnLayerNorm and aclnnFastLayerNorm where the call runs one of LayerNormV4's transpose
templates, bit for bit against a NumPy model of its float32 chain: Atlas A2/A3 (hicann/ops-nn
norm/layer_norm_v4/op_kernel/layer_norm_v4_transpose.h) and Atlas inference parts
(layer_norm_v4_transpose_310p.h), taken by op_host/layer_norm_v4_transpose_tiling.cpp
(priority 100, first) for rows of N <= 64 not a whole number of 32-byte blocks. aclnnLayerNorm
runs V4 there for N < 64 of that kind on Atlas A2/A3 (every dtype) and for FLOAT16 with N = 20
or 40 on Atlas inference parts (op_api IsV4SocCheck); aclnnFastLayerNorm always runs V4.

The chain, per row (rows sit in the vector's lanes after the transposes, so every step is
lane-wise and a row's bits are its own): 310P only, x + 0 (its DoReshape adds 0 in FLOAT16:
-0 becomes +0); mean = DoReduce(x * c), c = 1.0f / N; d = x - mean; var = DoReduce((d * d) *
c); rstd = 1 / sqrt(var + eps) (vector Sqrt, then Div); y = ((d * rstd) * weight) + bias (the
op_api's ones and zeros when absent), cast to input's dtype (BF16 ties away from zero,
CAST_ROUND; FLOAT16 to even). DoReduce: the rows past the largest power of two added onto the
first, then halved (tests/_device_reduce.py dichotomy_sum). Vector Sqrt and Div are taken as
IEEE-exact (assumed). The file's tests run on Atlas A2, A3 and Ascend310P3 (the others in
child processes); every other part has no transpose template.
"""
from __future__ import annotations

import numpy as np
import pytest

from test_emulator_op import BF16, F16, F32, arena, no_leaks, stream  # noqa: F401
from _device_reduce import dichotomy_sum
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_batch_norm import round_bf16_ties_away
from test_emulator_group_norm import ARCH, SOC
from test_emulator_layer_norm import call, check, rand
from test_emulator_layer_norm_regbase import assert_bits
import test_emulator_fast_layer_norm as fast

# a template's tests are defined on its parts only
on_a2_a3 = only_where(ARCH == 2201)   # the A2/A3 transpose template
on_310p = only_where(ARCH == 2002)    # the 310P transpose template


def round_to(y, dt, inference):
    """y (float32) in input's dtype as the kernel casts it."""
    if dt == F32:
        return y
    if dt == BF16 and not inference:
        return round_bf16_ties_away(y)
    return y.astype(dt)


def transpose_model(x, w, b, eps=1e-5, inference=None):
    """(out in input's dtype, mean, rstd) of the transpose chain; w/b None: ones/zeros."""
    inference = ARCH == 2002 if inference is None else inference
    f = np.float32
    with np.errstate(all="ignore"):
        xf = x.astype(F32)
        if inference:
            xf = xf + f(0)
        n = xf.shape[1]
        c = f(f(1) / f(n))
        mean = dichotomy_sum(xf * c)
        d = xf - mean[:, None]
        var = dichotomy_sum((d * d) * c)
        rstd = f(1) / np.sqrt(var + f(eps))
        y = d * rstd[:, None]
        y = y * (np.ones(n, F32) if w is None else w.astype(F32))
        y = y + (np.zeros(n, F32) if b is None else b.astype(F32))
    return round_to(y, x.dtype, inference), mean.reshape(-1, 1), rstd.reshape(-1, 1)


def generic_model(x, w, b, eps=1e-5):
    """The emulator's own order for rows of N <= 64 (LayerNormV3, the untaken V4 templates):
    16 lane accumulators from +0, the lanes folded by halves, divided by N; out
    ((x - mean) * rstd) * w + b, rounded as the kernel rounds."""
    f = np.float32

    def total(t):
        lanes = np.zeros((t.shape[0], 16), F32)
        acc = np.zeros((t.shape[0], 16), F32)
        full = t.shape[1] // 16 * 16
        for i in range(0, full, 16):
            acc = acc + t[:, i:i + 16]
        tail = np.zeros((t.shape[0], 16), F32)
        tail[:, :t.shape[1] - full] = t[:, full:]
        lanes = lanes + (acc + tail)
        s = 8
        while s:
            lanes[:, :s] = lanes[:, :s] + lanes[:, s:2 * s]
            s //= 2
        return lanes[:, 0]
    xf = x.astype(F32)
    n = xf.shape[1]
    mean = total(xf) / f(n)
    d = xf - mean[:, None]
    rstd = f(1) / np.sqrt(total(d * d) / f(n) + f(eps))
    y = d * rstd[:, None]
    y = y * (np.ones(n, F32) if w is None else w.astype(F32))
    y = y + (np.zeros(n, F32) if b is None else b.astype(F32))
    return round_to(y, x.dtype, ARCH == 2002), mean.reshape(-1, 1), rstd.reshape(-1, 1)


def params(rng, n, dt, given):
    w = (rng.standard_normal(n) * 0.5 + 1).astype(dt) if given[0] else None
    b = rand(rng, n, dt, 0.5, 0) if given[1] else None
    return w, b


GIVEN = ((True, True), (True, False), (False, True), (False, False))
# (input, weight/bias) on Atlas A2/A3: every tiling key of the template
A2_COMBOS = [(F32, F32), (F16, F16), (F16, F32), (BF16, F32), (BF16, BF16)]
# rows not a whole number of 32-byte blocks (FLOAT: N % 8, FLOAT16/BF16: N % 16)
A2_CASES = [(i, p, n) for i, p in A2_COMBOS for n in (1, 5, 7, 12, 20, 40, 63)
            if n % (8 if i == F32 else 16)]


def check_calls(arena, rng, in_dt, p_dt, n):
    """M = 1, 17 (one row past the 16 lines: a borrow factor of 2 with a short tail), 45, with
    weight and bias given or absent: aclnnLayerNorm, aclnnLayerNorm with a FLOAT out (the
    kernel's rounding, then the cast) and aclnnFastLayerNorm against the model."""
    for m, given in zip((1, 17, 45, 17), GIVEN):
        x = rand(rng, (m, n), in_dt)
        w, b = params(rng, n, p_dt, given)
        want = transpose_model(x, w, b)
        got = call(arena, x, 1, w, b)
        assert_bits(got, want)
        check(got, x, 1, w, b)
        assert_bits(fast.call(arena, x, 1, w, b), want)
        y = call(arena, x, 1, w, b, out_dt=F32)[0]
        assert np.array_equal(y.view(np.uint32), want[0].astype(F32).view(np.uint32))


@on_a2_a3
@pytest.mark.parametrize("in_dt,p_dt,n", A2_CASES, ids=[f"{i}-{p}-N{n}" for i, p, n in A2_CASES])
def test_a2_a3_bits(arena, in_dt, p_dt, n):
    """Every tiling key of the template (input, weight/bias dtype), N from 1 to 63."""
    check_calls(arena, np.random.default_rng(n * 7 + A2_COMBOS.index((in_dt, p_dt))), in_dt,
                p_dt, n)


@on_a2_a3
def test_a2_a3_rows_of_several_dims_layouts_and_out_dtypes(arena):
    """normalizedShape of two dims (N = 3 * 7), strided views, out FLOAT (the kernel's BF16,
    then the cast), rows over several threads' chunks: the model's bits."""
    rng = np.random.default_rng(3)
    x = rand(rng, (70, 3, 7), BF16)
    w = (rng.standard_normal((3, 7)) + 1).astype(BF16)
    b = rand(rng, (3, 7), BF16, 0.5, 0)
    want = transpose_model(x.reshape(70, 21), w.ravel(), b.ravel())
    want = (want[0].reshape(x.shape),) + want[1:]
    got = call(arena, x, 2, w, b)
    assert_bits((got[0], got[1].reshape(-1, 1), got[2].reshape(-1, 1)), want)
    for kinds in (("stepped", "padded", "transposed", "padded", "stepped", "stepped"),
                  ("transposed",) * 6):
        g = call(arena, x, 2, w, b, kinds=kinds)
        assert_bits((g[0], g[1].reshape(-1, 1), g[2].reshape(-1, 1)), want)
    y = call(arena, x, 2, w, b, out_dt=F32)[0]
    assert np.array_equal(y.view(np.uint32), want[0].astype(F32).view(np.uint32))


@on_310p
@pytest.mark.parametrize("n", [20, 40])
@pytest.mark.parametrize("p_dt", [F16, F32])
def test_310p_bits(arena, p_dt, n):
    """FLOAT16 input with FLOAT16 or FLOAT weight/bias: aclnnLayerNorm's V4 calls there."""
    check_calls(arena, np.random.default_rng(n + (p_dt == F32)), F16, p_dt, n)


@on_310p
@pytest.mark.parametrize("n", [1, 5, 7, 33, 63])
def test_310p_fast_layer_norm_rows(arena, n):
    """aclnnFastLayerNorm takes every N <= 64 not a multiple of 16 there (aclnnLayerNorm runs
    V3 for those but N = 20 and 40)."""
    rng = np.random.default_rng(n)
    x = rand(rng, (19, n), F16)
    w, b = params(rng, n, F16, (True, True))
    assert_bits(fast.call(arena, x, 1, w, b), transpose_model(x, w, b))


@only_where(ARCH in (2201, 2002))   # the parts with a transpose template
def test_negative_zero_rows(arena):
    """A row of -0: A2/A3's DoReduce adds -0 terms (mean -0); 310P's reshape adds 0 first
    (mean +0). The emulator's own order starts its lanes at +0 (mean +0)."""
    n = 20
    x = np.full((3, n), -0.0, F16)
    x[1] = rand(np.random.default_rng(1), n, F16)
    got = fast.call(arena, x, 1)
    assert_bits(got, transpose_model(x, None, None))
    mean = got[1].ravel()
    assert np.signbit(mean[[0, 2]]).all() == (ARCH == 2201)
    assert not np.signbit(generic_model(x, None, None)[1].ravel()[[0, 2]]).any()


@on_a2_a3
@pytest.mark.parametrize("n", [20, 63])
def test_nan_inf_rows(arena, n):
    """Rows holding a NaN, +inf, -inf, both infinities, and an overflowing square: NaN where
    the model has NaN, the model's bits elsewhere."""
    rng = np.random.default_rng(n)
    x = rand(rng, (5, n), F32)
    x[0, 3] = np.nan
    x[1, 4] = np.inf
    x[2, 2] = -np.inf
    x[3, 0], x[3, n - 1] = np.inf, -np.inf
    x[4, 1] = 3e38
    got = call(arena, x, 1)
    want = transpose_model(x, None, None)
    for g, e, name in zip(got, want, ("out", "mean", "rstd")):
        g, e = np.asarray(g, F32).ravel(), np.asarray(e, F32).ravel()
        assert np.array_equal(np.isnan(g), np.isnan(e)), name
        ok = ~np.isnan(e)
        assert np.array_equal(g[ok].view(np.uint32), e[ok].view(np.uint32)), name


@only_where(ARCH in (2201, 2002))   # the parts with a transpose template
def test_the_order_is_not_the_emulators_own(arena):
    """The models differ on these rows (so the bit tests above can fail), the emulator gives
    the transpose model's bits where the template runs, and its own order's where it does not
    (a whole number of blocks: FLOAT with N = 48, LayerNormV3)."""
    rng = np.random.default_rng(12)
    n = 20 if ARCH == 2002 else 21
    x = rand(rng, (64, n), F16)
    want, own = transpose_model(x, None, None), generic_model(x, None, None)
    assert not all(np.array_equal(a.view(np.uint8), c.view(np.uint8)) for a, c in zip(want, own))
    assert_bits(call(arena, x, 1), want)
    x = rand(rng, (64, 48), F32)
    got = call(arena, x, 1)
    assert_bits(got, generic_model(x, None, None))
    assert not all(np.array_equal(np.asarray(g).ravel().view(np.uint32), e.ravel().view(np.uint32))
                   for g, e in zip(got, transpose_model(x, None, None)))


# the template's parts: elsewhere every test here skips (no transpose template there)
test_on_other_parts = run_on_parts(other_parts(("Ascend910B2", "Ascend910_9391", "Ascend310P3")),
                                   "not on_other_parts")
