"""aclnnLayerNorm on Ascend 950 where the tiling picks LayerNormV4's regbase_two_pass template
(hicann/ops-nn norm/layer_norm_v4/op_host/layer_norm_v4_regbase_two_pass_tiling.cpp, priority
200: the rows the two_pass_perf template, 150, leaves, while one row fits its UB) or its Welford
template (layer_norm_v4_welford_tiling.cpp, 4000: the rest; op_kernel/arch35/
layer_norm_v4_welford.h with the library's WelfordUpdate and WelfordFinalize, asc-devkit
welford_3510_impl.h, welfordfinalize_3510_impl.h: modelled below). regbase_two_pass's kernel (op_kernel/arch35/layer_norm_v4_two_pass.h) calls the AscendC
library's LayerNorm (asc-devkit impl/adv_api/detail/normalization/layernorm/
layernorm_3510_impl.h, layernorm_3510_utils.h, normalize/normalize_3510_impl.h), whose sums
this file models in NumPy and holds the emulator to bit for bit: FLOAT, FLOAT16 and BF16 input,
weight/bias of its dtype, FLOAT, or absent, at the template's fit limits and at M >= 4096 with
rAlign >= 8192 (a FLOAT16 call, its model checked on a few rows); Welford's likewise just past
those limits, with and without a partial last tile. The template choice is the
emulator's test hook (aclemu_layer_norm_template_arch35) against this file's reading of the
tilings. The vector unit's Reduce (fold64), masked lanes as zeros and Axpy as one fused
multiply-add are assumed (docs/emulator.md). The file runs on every part (its numbers on
Ascend 950, in a child process from the others).
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import BF16, F16, F32, arena, no_leaks, stream  # noqa: F401
from _device_reduce import fma_f32, fold64, fold_partials
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_layer_norm import call, check, rand
from test_emulator_layer_norm_regbase import (UB, assert_bits, params, perf_model, perf_sum,
                                              takes_perf)
import test_emulator_fast_layer_norm as fast

SOC = ffi.string(lib.aclrtGetSocName()).decode()
# Ascend 950's templates, defined there only (the other parts run LayerNormV3 or V4's A2/A3 ones)
on_950 = only_where(SOC.startswith("Ascend950"))

PERF, TWO_PASS, WELFORD = 0, 1, 2
ACL_DT = {F32: 0, F16: 1, BF16: 27}


def takes_two_pass(n, x_dt, p_dt, gamma, beta):
    """regbase_two_pass's IsCapable: one row (CanFitInBuffer(1)) fits the UB with the
    library's temporary buffer (GetLayerNormMaxMinTmpSize on DAV_3510)."""
    xs = np.dtype(x_dt).itemsize
    ps = 4 if p_dt in (None, F32) else 2
    r_align = -(-n // (32 // xs)) * (32 // xs)
    tmp = 4 * (-(-(-(-n // 64)) // 128) * 128 + 1)
    use = r_align * xs * 4 + 32 * 4 + (gamma + beta) * r_align * ps + tmp
    return use <= UB


def template(m, n, x_dt, w_dt, b_dt):
    """The Ascend 950 template for m rows of n (w_dt/b_dt None: absent), as the tilings say."""
    p_dt = w_dt if w_dt is not None else b_dt
    if takes_perf(m, n, x_dt, p_dt):
        return PERF
    return TWO_PASS if takes_two_pass(n, x_dt, p_dt, w_dt is not None, b_dt is not None) \
        else WELFORD


def hook(m, n, x_dt, w_dt, b_dt):
    so = ctypes.CDLL(str(lib.backend.libraries["opapi"]))
    code = lambda dt: -1 if dt is None else ACL_DT[dt]  # noqa: E731
    return so.aclemu_layer_norm_template_arch35(ctypes.c_int64(m), ctypes.c_int64(n),
                                                code(x_dt), code(w_dt), code(b_dt))


def fit_limit(x_dt, p_dt, gamma, beta):
    """The longest row regbase_two_pass takes."""
    n = 8192
    while takes_two_pass(n + 1, x_dt, p_dt, gamma, beta):
        n += 1
    return n


def lib_sum(base, inv):
    """The AscendC LayerNorm's row sums of the terms base * inv [M, N] (float32): rows of up to
    128 as two_pass_perf's; else head the largest power of two <= N, tail the rest, each of the
    head's 64-lane registers g holding fma(base, inv, the tail's term at head + its lane, +0
    past the row) while g * 64 < tail (Axpy), else the term alone; registers 2i and 2i + 1
    added lane by lane, reduced (one partial per 128 terms), the partials folded."""
    base = np.asarray(base, F32)
    m, n = base.shape
    if n <= 128:
        return perf_sum(base * inv)
    head = 1 << (n.bit_length() - 1)
    tail = n - head
    regs = -(-tail // 64)
    a = base[:, :head] * inv
    tk = np.zeros((m, regs * 64), F32)
    tk[:, :tail] = base[:, head:] * inv
    a[:, :regs * 64] = fma_f32(base[:, :regs * 64], inv, tk)
    a = a.reshape(m, head // 128, 2, 64)
    return fold_partials(fold64(a[:, :, 0] + a[:, :, 1]))


def two_pass_model(x, w, b, eps=1e-5):
    """(out, mean [M, 1], rstd [M, 1]) of regbase_two_pass: the library's sums, its k2Rec (1 /
    the least power of two >= N, at least 64), then the chain two_pass_perf shares
    (NormalizeImpl: the Newton-Raphson rstd, FusedMulDstAdd, CAST_RINT)."""
    out, mean, rstd = perf_model(x, w, b, eps, sums=lib_sum, least_pow2=64)
    return out, mean.reshape(-1, 1), rstd.reshape(-1, 1)


# ---- the template choice -------------------------------------------------------------------

@on_950  # the hook reads the emulated part's UB
def test_template_choice_is_the_tilings():
    """The hook's template against the tilings on both sides of each limit: two_pass_perf's UB
    and its M >= 4096 with rAlign >= 8192 rule, regbase_two_pass's fit (which counts gamma and
    beta only when given)."""
    cases = []
    for x_dt, w_dt, b_dt in ((F32, F32, F32), (F16, F16, F16), (BF16, F32, F32),
                             (F16, None, None), (BF16, None, BF16), (F32, F32, None)):
        p_dt = w_dt if w_dt is not None else b_dt
        lim = fit_limit(x_dt, p_dt, w_dt is not None, b_dt is not None)
        for n in (8176, 8177, 8192, 9032, 9033, 9040, 12640, 12656, 15792, 15808, 16384,
                  lim, lim + 1, 30000):
            for m in (1, 4095, 4096):
                cases.append((m, n, x_dt, w_dt, b_dt))
    seen = set()
    for c in cases:
        want = template(*c)
        assert hook(*c) == want, c
        seen.add(want)
    assert seen == {PERF, TWO_PASS, WELFORD}


def test_fit_limits():
    """The fit limits the tiling's formula gives (UB 253952 bytes), as docs/emulator.md states
    them."""
    assert fit_limit(F32, F32, True, True) == 10528
    assert fit_limit(F16, F16, True, True) == 21008
    assert fit_limit(BF16, F32, True, True) == 15792
    assert fit_limit(F32, None, False, False) == 15792
    assert fit_limit(F16, None, False, False) == 31456


# ---- the numbers ---------------------------------------------------------------------------

# (x dtype, param dtype, N): past two_pass_perf's UB; tails ending inside a register's second
# half (Loop1), in a pair's first half (Loop2), none (N a power of two); the fit limits
ROWS = [(F32, F32, 9040), (F32, F32, 9100), (F32, F32, 10528), (F16, F16, 15808),
        (F16, F16, 16384), (F16, F16, 16400), (F16, F16, 21008), (BF16, F32, 12656),
        (BF16, BF16, 15800), (BF16, F32, 15792)]


@on_950
@pytest.mark.parametrize("x_dt,p_dt,n", ROWS,
                         ids=[f"{np.dtype(x).name}-{np.dtype(p).name}-{n}" for x, p, n in ROWS])
def test_two_pass_bits(arena, x_dt, p_dt, n):
    """Each weight/bias combination the rows allow, bit for bit, and near the float64
    reference."""
    each_param_mix_bits(arena, np.random.default_rng(n), x_dt, p_dt, n, TWO_PASS,
                        two_pass_model)


def each_param_mix_bits(arena, rng, x_dt, p_dt, n, kind, model):
    """Rows of n under each weight/bias mix whose template is `kind` (at least one), bit for
    bit against `model` and near the float64 reference."""
    ran = 0
    for pd, bias in (("same", True), (p_dt, False), ("none", True), ("none", False)):
        w, b = params(rng, n, pd if pd != "same" else p_dt, x_dt, bias)
        if template(2, n, x_dt, None if w is None else w.dtype.type,
                    None if b is None else b.dtype.type) != kind:
            continue
        x = rand(rng, (2, n), x_dt)
        got = call(arena, x, 1, w, b)
        assert_bits(got, model(x, w, b))
        check(got, x, 1, w, b)
        ran += 1
    assert ran > 0


@on_950
def test_many_rows_of_8192_aligned(arena):
    """M >= 4096 with rAlign >= 8192: two_pass_perf declines a row it would hold; 4095 rows
    stay with it. The model on a few rows (rows are independent)."""
    n = 8177  # rAlign 8192 for FLOAT16
    assert template(4096, n, F16, None, None) == TWO_PASS
    assert template(4095, n, F16, None, None) == PERF
    rng = np.random.default_rng(7)
    x = rand(rng, (4096, n), F16)
    got = call(arena, x, 1)
    rows = [0, 1, 2047, 4095]
    want = two_pass_model(x[rows], None, None)
    assert_bits(tuple(g[rows] for g in got), want)


@on_950
def test_fast_layer_norm_takes_it_too(arena):
    """aclnnFastLayerNorm's filled weight and bias count in the fit: the same template, the
    same bits as the model with them."""
    rng = np.random.default_rng(9)
    x = rand(rng, (2, 9100), F32)
    w, b = params(rng, 9100, F32, F32, True)
    assert template(2, 9100, F32, F32, F32) == TWO_PASS
    out, mean, rstd = two_pass_model(x, w, b)
    assert_bits(fast.call(arena, x, 1, w, b), (out, mean, rstd))


def test_model_differs_from_the_perf_order():
    """The library's sums are not two_pass_perf's binary add (nor the float64 result rounded),
    on rows the template takes: a test of the model can fail."""
    rng = np.random.default_rng(5)
    x = rand(rng, (16, 9100), F32)
    _, mean, rstd = two_pass_model(x, None, None)
    _, pmean, prstd = perf_model(x, None, None)
    assert (mean.ravel() != pmean).any() and (rstd.ravel() != prstd).any()
    x64 = x.astype(np.float64)
    m64 = x64.mean(axis=1)
    assert (mean.ravel() != m64.astype(F32)).any()
    assert np.allclose(mean.ravel(), m64, rtol=1e-5, atol=1e-6)


# ---- Welford -------------------------------------------------------------------------------

def welford_tile(x_dt, p_dt, gamma, beta):
    """The Welford tiling's tileLength (layer_norm_v4_welford_tiling.cpp DoLibApiTiling): grown
    by 64 while 128 more still fit (IsValidTileLength; the AscendC APIs' temporary buffers on
    DAV_3510: WelfordUpdate's and Normalize's none, WelfordFinalize's (tile + its largest power
    of two's registers rounded up to 128) floats)."""
    xs = np.dtype(x_dt).itemsize
    ps = 4 if p_dt in (None, F32) else 2

    def fits(t):
        head = 1 << (t.bit_length() - 1)
        api = (t + -(-(head // 64) // 128) * 128) * 4
        use = 4 * t * xs + 2 * 2 * 256 * 4 + 2 * t * 4 + 256 * 4 + (gamma + beta) * 2 * t * ps
        return use + api <= UB

    t = 0
    while fits(t + 128):
        t += 64
    return t


def welford_sum(t, k):
    """WelfordFinalize's BinaryReduceSum of each row of t [M, n] (n a multiple of 64) scaled by
    k: head the largest power of two <= n, the tail's terms added onto the head's first
    registers (+0 past n; none when n is a power of two), a partial per register, folded."""
    t = np.asarray(t, F32) * k
    m, n = t.shape
    head = 1 << (n.bit_length() - 1)
    lanes = t[:, :head].copy()
    if head < n:
        regs = -(-(n - head) // 64) * 64
        tail = np.zeros((m, regs), F32)
        tail[:, :n - head] = t[:, head:]
        lanes[:, :regs] = lanes[:, :regs] + tail
    return fold_partials(fold64(lanes.reshape(m, head // 64, 64)))


def welford_stats(xf, tile):
    """(mean, var) of float32 rows xf [M, N] by the Welford template: per position of the
    tile, WelfordUpdate over the row's tiles in order (d = x - mean; mean += d * (1 / c);
    m2 += d * (x - mean)), then WelfordFinalize over the positions."""
    m, n = xf.shape
    f = np.float32
    full, tail = divmod(n, tile)
    updates = full + (tail > 0)
    mean = np.zeros((m, tile), F32)
    m2 = np.zeros((m, tile), F32)
    for c in range(1, updates + 1):
        cols = tile if c <= full else tail
        xc = xf[:, (c - 1) * tile:(c - 1) * tile + cols]
        d = xc - mean[:, :cols]
        nm = d * (f(1) / f(c)) + mean[:, :cols]
        m2[:, :cols] = d * (xc - nm) + m2[:, :cols]
        mean[:, :cols] = nm
    count, scale = f(full), f(f(updates) / f(full))
    head = 1 << (tile.bit_length() - 1)
    over = 2 * head if head < tile else head
    k2rec, k2rrec = f(1) / f(over), f(f(1) / f(n)) * f(over)
    t = mean * count
    t[:, :tail] = t[:, :tail] * scale
    mu = welford_sum(t, k2rec) * k2rrec
    d = mean - mu[:, None]
    t = (d * d) * count
    t[:, :tail] = t[:, :tail] * scale
    var = welford_sum(m2 + t, k2rec) * k2rrec
    return mu, var


def welford_model(x, w, b, eps=1e-5):
    """(out, mean [M, 1], rstd [M, 1]) of the Welford template: its statistics, then the chain
    two_pass_perf shares (Normalize: the Newton-Raphson rstd, FusedMulDstAdd, CAST_RINT)."""
    p_dt = (w if w is not None else b).dtype.type if w is not None or b is not None else None
    tile = welford_tile(x.dtype.type, p_dt, w is not None, b is not None)
    out, mean, rstd = perf_model(x, w, b, eps, stats=lambda xf: welford_stats(xf, tile))
    return out, mean.reshape(-1, 1), rstd.reshape(-1, 1)


def test_welford_tiles():
    """The Welford tiling's tileLength (UB 253952 bytes), below every row the template gets
    (its rows do not fit regbase_two_pass, which holds fewer bytes per element)."""
    assert welford_tile(F32, F32, True, True) == 5568
    assert welford_tile(F16, F16, True, True) == 8768
    assert welford_tile(BF16, F32, True, True) == 6784
    assert welford_tile(F16, None, False, False) == 12352
    for x_dt, p_dt, g, b in ((F32, F32, 1, 1), (F16, F16, 1, 1), (BF16, F32, 1, 1),
                             (F32, F32, 0, 0), (F16, F16, 0, 0), (BF16, BF16, 0, 1)):
        assert welford_tile(x_dt, p_dt, g, b) < fit_limit(x_dt, p_dt, g, b)


# (x dtype, param dtype, N): just past regbase_two_pass's limits (a partial last tile), whole
# tiles only (F32: 2 x 5568; F16 without weight/bias: 3 x 12352), three tiles and a part
WELFORD_ROWS = [(F32, F32, 10536), (F32, F32, 11136), (F32, F32, 20000), (F16, F16, 21024),
                (F16, F16, 37056), (BF16, F32, 15808), (BF16, BF16, 25184)]


@on_950
@pytest.mark.parametrize("x_dt,p_dt,n", WELFORD_ROWS, ids=[
    f"{np.dtype(x).name}-{np.dtype(p).name}-{n}" for x, p, n in WELFORD_ROWS])
def test_welford_bits(arena, x_dt, p_dt, n):
    """Each weight/bias combination the rows allow, bit for bit, and near the float64
    reference."""
    each_param_mix_bits(arena, np.random.default_rng(n + 1), x_dt, p_dt, n, WELFORD,
                        welford_model)


def test_welford_model_differs_from_the_two_pass_orders():
    """The Welford statistics are neither the library's two-pass sums nor two_pass_perf's on
    the rows the template takes: a test of the model can fail."""
    rng = np.random.default_rng(6)
    x = rand(rng, (16, 10536), F32)
    _, mean, rstd = welford_model(x, None, None)
    for other in (two_pass_model(x, None, None), perf_model(x, None, None)):
        assert (mean.ravel() != other[1].ravel()).any()
        assert (rstd.ravel() != other[2].ravel()).any()


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
