"""The emulator's aclnnAddLayerNormQuant over rows too long for the full-load kernels (Ascend
950): the tiling's kernel choice and column slices (hicann/ops-nn norm/add_layer_norm_quant/
op_host/add_layer_norm_quant_tiling_arch35.cpp: CheckStcQuantFullLoadTiling,
CheckDynQuantFullLoadTiling, CheckStcQuantWelfordTiling, CheckDynQuantWelfordTiling) and the
Welford kernels' numbers (op_kernel/arch35/add_layer_norm_{static,dynamic}_quant_regbase_
welford_kernel.h with add_layer_norm's VFWelfordParallelUpdateCommon and
VFWelfordParallelFinalizeNonAlign, the helper's VFWelfordParallelFinalizeAlign), bit for bit
against test_emulator_add_layer_norm_quant.py's NumPy model (welford_stats) and within one
quantization step of the float64 reference: each mode's longest full-load row and one element
more, rows of several slices with equal slices and with a shorter last one (each of the
non-aligned finalize's three situations), one row and a few, FLOAT16, BF16 and (static) FLOAT,
with and without scales2, zero points and bias. The file runs on every part (its numbers on
Ascend 950, in a child process from the others).
"""
from __future__ import annotations

import numpy as np
import pytest

from test_emulator_op import BF16, F16, F32, arena, no_leaks, stream  # noqa: F401
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_add_layer_norm_quant import (INVALID, REGBASE, Args, assert_dynamic_matches,
                                                assert_matches, call, call_dynamic,
                                                dynamic_inputs, expect, inputs, on_950)

UB = 253952            # Ascend 950's UB (platform_config ub_size)
UB_RESERVED = 256


def layout(args, mode):
    """The tiling's counts for args (x1, x2, gamma, beta, bias, s1, s2, z1, z2): (x1's bytes,
    the scales' bytes, the per-channel quant tensors, the weight tensors, the int8 outputs,
    whether the bias is of x1's shape)."""
    x1, _, g, _, c, s1, s2, z1, z2 = args
    given = [a is not None for a in (s1, s2, z1, z2)]
    quants = sum(given[:2]) if mode == "dynamic" else 1 + sum(given[1:])
    weights = 2 + (c is not None and c.ndim == 1)
    return (x1.itemsize, 4 if s1 is None else s1.itemsize, quants, weights, 2 if given[1] else 1,
            c is not None and c.ndim != g.ndim)


def fits_full_load(n, args, mode):
    """Check{Stc,Dyn}QuantFullLoadTiling for rows of n: one row in the UB beside gamma, beta,
    the scales, the binary add's partials."""
    xs, ss, quants, weights, outs, elewise = layout(args, mode)
    cols = -(-n // 32) * 32
    p = 64 if n <= 64 else 1 << (n - 1).bit_length() - 1
    avail = UB - (-(-(p // 64) // 8) * 8 * 4 + cols * quants * ss + cols * weights * xs
                  + UB_RESERVED)
    e = xs if elewise else 0
    if mode == "dynamic":
        per_row = (3 * xs + outs + e) * 2 * cols + 8 * outs + 4 * cols * outs + 8
    else:
        per_row = (3 * xs + 2 + e) * 2 * cols + 4 * cols + 8
    return avail // per_row >= 1


def welford_slices(n, args, mode):
    """Check{Stc,Dyn}QuantWelfordTiling: (colsPerLoop, colsLoopCount, colsTail)."""
    xs, ss, quants, weights, outs, elewise = layout(args, mode)
    dyn = mode == "dynamic"
    per_col = (2 * ss * quants + 2 * xs * weights
               + 2 * (3 * xs + (outs if dyn else 2) + (xs if elewise else 0))
               + 4 * (2 * outs + 1 if dyn else 3))
    ub = UB - UB_RESERVED - (2 * outs * 32 + 4 * 32 if dyn else 0)
    per = ub // per_col // 64 * 64
    loops = -(-n // per)
    if n % loops == 0:
        per = n // loops
    return per, loops, n % per or per


def slices_for(args, mode):
    """None for the full-load kernel, else the Welford kernel's slices."""
    n = args[0].shape[-1]
    return None if fits_full_load(n, args, mode) else welford_slices(n, args, mode)


def finalize_case(slices):
    """Which finalize the slices take: "align", or NonAlign's situation 1, 2 or 3."""
    per, _, tail = slices
    if tail == per:
        return "align"
    p = 1 << (per - 1).bit_length() - 1      # binaryAddNum
    if tail >= p:
        return "situation1"
    return "situation2" if tail <= -(-(per - p) // 64) * 64 else "situation3"


def longest_full_load(args_of, mode):
    """The longest row the full-load kernel holds for inputs like args_of(n) (dtypes and
    optional inputs; the counts do not depend on the row's length)."""
    like = args_of(64, rows=1)
    n = 4096
    while fits_full_load(n + 1, like, mode):
        n += 1
    return n


def static_args(shape, dt, sdt, dual=True, zero_points=True, bias=None, seed=0):
    return inputs(np.random.default_rng(seed + shape[-1]), shape, dt, sdt, dual=dual,
                  zero_points=zero_points, bias=bias)


def dynamic_args(shape, dt, scales, bias=None, seed=0):
    return dynamic_inputs(np.random.default_rng(seed + shape[-1]), shape, dt, scales,
                          bias=bias)


def run_static(arena, args, div_mode=True, additional=True):
    slices = slices_for(args, "static")
    got = call(arena, args, div_mode=div_mode, additional=additional)
    y1 = assert_matches(got, args, div_mode=div_mode, slices=slices)
    assert len(np.unique(y1)) > 20
    return slices


def run_dynamic(arena, args):
    slices = slices_for(args, "dynamic")
    y1 = assert_dynamic_matches(call_dynamic(arena, args), args, slices=slices)
    assert np.abs(y1).max(axis=-1).min() == 127          # each row's largest |t| maps to 127
    return slices


# The static cases: (rows, n, x dtype, scales dtype, scales2, zero points, bias), with the
# finalize each takes.
STATIC_CASES = [
    ((3, 12000), F16, F16, True, True, None, "align"),         # three equal slices
    ((1, 13000), F16, F16, True, True, None, "situation3"),
    ((2, 14000), F16, F16, True, True, None, "situation1"),
    ((3, 13000), F16, F16, False, False, None, "situation2"),
    ((2, 12345), F32, F32, False, True, None, "situation3"),   # four slices of FLOAT
    ((2, 14750), BF16, F32, False, False, "gamma", "situation1"),
    ((2, 13000), BF16, BF16, True, False, "x1", "situation3"),
]


@on_950
@pytest.mark.parametrize("case", STATIC_CASES, ids=lambda c: f"{c[0]}-{c[-1]}")
def test_static_welford_bits_and_reference(arena, case):
    shape, dt, sdt, dual, zp, bias, finalize = case
    args = static_args(shape, dt, sdt, dual=dual, zero_points=zp, bias=bias)
    slices = run_static(arena, args)
    assert slices is not None and slices[1] > 1 and finalize_case(slices) == finalize


@on_950
@pytest.mark.parametrize("combo,dual", [((F16, F16), False), ((F16, F16), True),
                                        ((BF16, F32), True), ((F32, F32), False)],
                         ids=["f16-single", "f16-dual", "bf16-f32-dual", "f32-single"])
def test_static_full_load_boundary(arena, combo, dual):
    """The longest row CheckStcQuantFullLoadTiling keeps runs the full-load chain; one element
    more, the Welford kernel's (two slices, the last shorter), both bit for bit."""
    def args_of(n, rows=2):
        return static_args((rows, n), *combo, dual=dual, zero_points=dual)
    n = longest_full_load(args_of, "static")
    assert 4096 < n < 12000
    assert run_static(arena, args_of(n)) is None
    slices = run_static(arena, args_of(n + 1, rows=1))
    assert slices[1] == 2 and slices[2] < slices[0]


@on_950
def test_static_div_mode_false_and_no_additional_output(arena):
    args = list(static_args((2, 13000), F16, F32, dual=False, zero_points=True))
    args[5] = (400 * args[5]).astype(F32)
    slices = run_static(arena, tuple(args), div_mode=False, additional=False)
    assert finalize_case(slices) == "situation3"


@on_950
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("scales", [0, 1, 2], ids=["no-scales", "scales1", "dual"])
def test_dynamic_full_load_boundary(arena, dt, scales):
    """The longest row CheckDynQuantFullLoadTiling keeps (FLOAT16: 11488 without scales, 7904
    with both) runs the full-load chain; one more, the Welford kernel's (the smoothed rows'
    max over the slices, then y from them), both bit for bit, out scales too."""
    def args_of(n, rows=2):
        return dynamic_args((rows, n), dt, scales)
    n = longest_full_load(args_of, "dynamic")
    assert n == {0: 11488, 1: 10528, 2: 7904}[scales]
    assert run_dynamic(arena, args_of(n)) is None
    slices = run_dynamic(arena, args_of(n + 1, rows=1))
    assert slices[1] == 2 and slices[2] < slices[0]


@on_950
@pytest.mark.parametrize("shape,dt,scales,bias,finalize", [
    ((3, 12000), F16, 0, None, "align"),
    ((2, 16000), BF16, 0, None, "situation2"),
    ((2, 14000), F16, 1, "gamma", "situation3"),
    ((2, 13000), BF16, 2, "x1", "situation3"),
    ((1, 14000), F16, 2, None, "situation1"),
], ids=lambda v: str(v) if isinstance(v, str) else None)
def test_dynamic_welford_bits_and_reference(arena, shape, dt, scales, bias, finalize):
    args = dynamic_args(shape, dt, scales, bias=bias)
    slices = run_dynamic(arena, args)
    assert slices is not None and slices[1] > 1 and finalize_case(slices) == finalize


@only_where(not REGBASE)   # Ascend 950 runs the op_api
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_other_parts_refuse_long_rows_by_the_platform(arena, mode):
    """Off Ascend 950 a row for the Welford kernel meets CheckPlatform first (161002)."""
    a = Args(arena, n=12000)
    a.mode = mode
    expect(a, INVALID, "not supported on", "Ascend 950 only")


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
