"""aclnnLayerNorm and aclnnFastLayerNorm on Ascend 950 where the tiling picks LayerNormV4's
two_pass_perf template (hicann/ops-nn norm/layer_norm_v4/op_host/
layer_norm_v4_regbase_two_pass_perf_tiling.cpp IsCapable, tried before regbase_two_pass and
welford), bit for bit against a NumPy model of its float32 chain (op_kernel/arch35/
layer_norm_v4_two_pass_perf.h): rows of one register, two, the binary add with one register
of partials and with two (N = 64, 65, 128, 129, 8192, 8193 ...), FLOAT, FLOAT16 and BF16
input with weight/bias of its dtype, FLOAT or absent; and within the float64 reference's
tolerance. The template's UB boundary is checked both ways: one element past it the call
takes another template, whose bits the model does not give. The vector unit's Reduce is the
emulator's documented choice (tests/_device_reduce.py fold64), MulDstAdd a fused
multiply-add: both assumed. The file runs on every part (its numbers on Ascend 950, in a
child process from the others).
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import BF16, F16, F32, arena, no_leaks, stream  # noqa: F401
from _device_reduce import binary_sum, fma_f32, fold64
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_layer_norm import call, check, rand
from test_emulator_rms_norm_quant import v2_rstd
import test_emulator_fast_layer_norm as fast

SOC = ffi.string(lib.aclrtGetSocName()).decode()
REGBASE = SOC.startswith("Ascend950")
# Ascend 950's templates, defined there only (the other parts run LayerNormV3 or V4's A2/A3 ones)
on_950 = only_where(REGBASE)

UB = 253952  # Ascend 950's UB (platform_config ub_size)


def takes_perf(m, n, x_dt, p_dt):
    """The two_pass_perf tiling's IsCapable for M = m rows of n, paramDtype p_dt."""
    xs = np.dtype(x_dt).itemsize
    ps = 4 if p_dt in (None, F32) else 2
    r_align = -(-n // (32 // xs)) * (32 // xs)
    if r_align > 16384 or (m >= 4096 and r_align >= 8192):
        return False
    return r_align * (2 * ps + 4 * xs + 4) <= UB - 1024 - 32


def perf_sum(t):
    """The template's row sums of float32 terms t [M, N]: rows of 65 to 128 one register (the
    second's terms added onto the first's lanes), the others the binary add."""
    n = t.shape[1]
    if 64 < n <= 128:
        return fold64(t[:, :64] + np.pad(t[:, 64:], ((0, 0), (0, 128 - n))))
    return binary_sum(t)


def perf_model(x, w, b, eps=1e-5, sums=None, least_pow2=1, stats=None):
    """(out in x's dtype, mean, rstd) of the two_pass_perf chain on float32-widened rows;
    sums(base, inv), the row sums of the terms base * inv, and the least power of two of the
    terms' scale 1 / P, or stats(rows) -> (mean, var), another template's (regbase_two_pass,
    Welford: tests/test_emulator_layer_norm_two_pass.py)."""
    xf = x.astype(F32)
    n = xf.shape[1]
    p = max(1 << (n - 1).bit_length(), least_pow2)
    f = np.float32
    inv, corr = f(1.0 / p), f(f(p) / f(n))
    sums = sums or (lambda base, k: perf_sum(base * k))
    if stats is not None:
        mean, var = stats(xf)
        d = xf - mean[:, None]
    else:
        mean = sums(xf, inv) * corr
        d = xf - mean[:, None]
        var = sums(d * d, inv) * corr
    rstd = np.array([v2_rstd(v, eps, False) for v in var], F32)
    y = d * rstd[:, None]
    wf = None if w is None else w.astype(F32)
    bf = None if b is None else b.astype(F32)
    if wf is not None and bf is not None:
        y = fma_f32(y, np.broadcast_to(wf, y.shape), np.broadcast_to(bf, y.shape))
    else:
        if wf is not None:
            y = y * wf
        if bf is not None:
            y = y + bf
    return y.astype(x.dtype), mean, rstd


def params(rng, n, p_dt, x_dt, bias):
    if p_dt == "none":
        return None, (rand(rng, n, F32, 0.5, 0) if bias else None)
    dt = x_dt if p_dt == "same" else p_dt
    w = (rng.standard_normal(n) * 0.5 + 1).astype(dt)
    return w, (rand(rng, n, dt, 0.5, 0) if bias else None)


def assert_bits(got, want):
    for g, e, name in zip(got, want, ("out", "mean", "rstd")):
        g = np.ascontiguousarray(g).reshape(e.shape)
        assert np.array_equal(g.view(np.uint8), np.ascontiguousarray(e).view(np.uint8)), name


ROWS = [(5, 1), (4, 7), (3, 64), (3, 65), (3, 100), (2, 128), (2, 129), (2, 200), (2, 1000),
        (1, 4097), (1, 8192), (1, 8193)]


@on_950
@pytest.mark.parametrize("m,n", ROWS, ids=[f"{m}x{n}" for m, n in ROWS])
@pytest.mark.parametrize("x_dt", [F32, F16, BF16], ids=["fp32", "fp16", "bf16"])
def test_perf_template_bits(arena, m, n, x_dt):
    """Each of the template's sums (one register, two, the binary add with one or two
    registers of partials) and each weight/bias combination, bit for bit, and near the float64
    reference."""
    rng = np.random.default_rng(n * 7 + m)
    for p_dt, bias in (("same", True), (F32, False), ("none", True), ("none", False)):
        x = rand(rng, (m, n), x_dt)
        w, b = params(rng, n, p_dt, x_dt, bias)
        assert takes_perf(m, n, x_dt, None if w is None and b is None else (w if w is not None
                                                                            else b).dtype)
        got = call(arena, x, 1, w, b)
        out, mean, rstd = perf_model(x, w, b)
        assert_bits(got, (out, mean.reshape(m, 1), rstd.reshape(m, 1)))
        check(got, x, 1, w, b)


@on_950
def test_out_cast_after_input_dtype_and_eps(arena):
    """A FLOAT out of FLOAT16 input holds the kernel's FLOAT16 values; eps reaches rstd."""
    rng = np.random.default_rng(3)
    x = rand(rng, (6, 300), F16)
    w, b = params(rng, 300, F16, F16, True)
    got = call(arena, x, 1, w, b, out_dt=F32, eps=0.25)
    out, mean, rstd = perf_model(x, w, b, eps=0.25)
    assert_bits(got, (out.astype(F32), mean.reshape(6, 1), rstd.reshape(6, 1)))


@on_950
def test_fast_layer_norm_takes_the_same_chain(arena):
    """aclnnFastLayerNorm's filled weight (ones) and bias (zeros) reach the fused path:
    the same bits as the model with both absent."""
    rng = np.random.default_rng(11)
    for n, dt in ((100, F16), (1000, F32), (129, BF16)):
        x = rand(rng, (3, n), dt)
        w, b = params(rng, n, "same", dt, True)
        assert_bits(fast.call(arena, x, 1, w, b), perf_model(x, w, b)[:1] + tuple(
            s.reshape(3, 1) for s in perf_model(x, w, b)[1:]))
        out, mean, rstd = perf_model(x, None, None)
        assert_bits(fast.call(arena, x, 1), (out + np.zeros((), dt), mean.reshape(3, 1),
                                            rstd.reshape(3, 1)))


@on_950
@pytest.mark.parametrize("x_dt,p_dt,n", [(F32, F32, 9032), (F16, F16, 15792), (BF16, F32, 12640)])
def test_ub_boundary(arena, x_dt, p_dt, n):
    """The longest row the template's UB holds runs its chain; one block more takes
    regbase_two_pass, whose sums differ (tests/test_emulator_layer_norm_two_pass.py holds it)."""
    rng = np.random.default_rng(n)
    step = 32 // np.dtype(x_dt).itemsize
    assert takes_perf(2, n, x_dt, p_dt) and not takes_perf(2, n + step, x_dt, p_dt)
    x = rand(rng, (2, n), x_dt)
    w, b = params(rng, n, p_dt, x_dt, True)
    got = call(arena, x, 1, w, b)
    check(got, x, 1, w, b)
    out, mean, rstd = perf_model(x, w, b)
    assert_bits(got, (out, mean.reshape(2, 1), rstd.reshape(2, 1)))


def test_model_is_not_the_float64_result():
    """The chain's mean and rstd are not the float64 ones rounded on every row (sum(x / P) * (P
    / N) and the Newton-Raphson rstd each round): a test of the model can fail."""
    rng = np.random.default_rng(5)
    x = rand(rng, (64, 300), F32)
    _, mean, rstd = perf_model(x, None, None)
    x64 = x.astype(np.float64)
    m64 = x64.mean(axis=1)
    r64 = 1 / np.sqrt(((x64 - m64[:, None]) ** 2).mean(axis=1) + np.float32(1e-5))
    assert (mean != m64.astype(F32)).any() and (rstd != r64.astype(F32)).any()
    assert np.allclose(mean, m64, rtol=1e-5, atol=1e-6) and np.allclose(rstd, r64, rtol=1e-5)


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
