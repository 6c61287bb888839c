"""aclnnLayerNorm and aclnnFastLayerNorm on Atlas A2/A3 where the call runs LayerNormV4's
single_read template (BF16 input and weight, N = 1024 or 4096: hicann/ops-nn norm/
layer_norm_v4/op_host/layer_norm_v4_single_read_tiling.cpp, ahead of merge_n and common; the
transpose template takes rows of at most 64), bit for bit against a NumPy model of its float32
chain (op_kernel/layer_norm_v4_single_read.h): mean = ReduceSum(x * (1.0f / N)), var =
ReduceSum(((x - mean)^2) * (1.0f / N)), rstd = 1 / sqrt(var + eps) in float, y = (x - mean) *
rstd, times weight, plus bias (the op_api's ones and zeros when absent), BF16 ties away from
zero (CAST_ROUND); x - mean is the kernel's Adds of the negated mean (the same value; a NaN
mean's sign reaches out flipped). ReduceSum's internal order is the emulator's documented choice
(tests/_device_reduce.py reduce_sum_count): assumed. A BF16 call of another N, or a FLOAT
weight, runs LayerNormV3 (or another V4 template) in the emulator's own order, which the
model does not give. The file's tests run on Atlas A2 and A3 (the other one in a child
process); the other parts have no single_read template.
"""
from __future__ import annotations

import numpy as np
import pytest

from test_emulator_op import BF16, F32, arena, no_leaks, stream  # noqa: F401
from _device_reduce import reduce_sum_count
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_batch_norm import round_bf16_ties_away
from test_emulator_group_norm import ARCH, SOC
from test_emulator_layer_norm import call, check, rand
from test_emulator_layer_norm_regbase import assert_bits
import test_emulator_fast_layer_norm as fast

on_a2_a3 = only_where(ARCH == 2201)   # single_read runs on Atlas A2/A3: defined there only


def single_read_model(x, w, b, eps=1e-5):
    """(out BF16, mean, rstd) of the single_read chain; w/b None: the op_api's ones/zeros."""
    with np.errstate(all="ignore"):  # the NaN/Inf rows
        return _single_read_model(x, w, b, eps)


def _single_read_model(x, w, b, eps):
    f = np.float32
    xf = x.astype(F32)
    n = xf.shape[1]
    coef = f(f(1) / f(n))
    mean = reduce_sum_count(xf * coef)
    d = xf + (-mean)[:, None]
    var = reduce_sum_count((d * d) * coef)
    rstd = f(1) / np.sqrt(var + f(eps))
    y = d * rstd[:, None]
    y = y * (np.ones(n, F32) if w is None else w.astype(F32))
    y = y + (np.zeros(n, F32) if b is None else b.astype(F32))
    return round_bf16_ties_away(y), mean.reshape(-1, 1), rstd.reshape(-1, 1)


@on_a2_a3
@pytest.mark.parametrize("n", [1024, 4096])
def test_single_read_bits(arena, n):
    """Both row lengths, weight and bias given or absent, bit for bit and near float64."""
    rng = np.random.default_rng(n)
    for given in ((True, True), (True, False), (False, True), (False, False)):
        x = rand(rng, (3, n), BF16)
        w = (rng.standard_normal(n) * 0.5 + 1).astype(BF16) if given[0] else None
        b = rand(rng, n, BF16, 0.5, 0) if given[1] else None
        got = call(arena, x, 1, w, b)
        assert_bits(got, single_read_model(x, w, b))
        check(got, x, 1, w, b)
        assert_bits(fast.call(arena, x, 1, w, b), single_read_model(x, w, b))


@on_a2_a3
@pytest.mark.parametrize("n", [1024, 4096])
def test_single_read_layouts_and_out_dtypes(arena, n):
    """Strided input and out (the gathered rows and float tiles), out FLOAT (the kernel's BF16,
    then the cast) and rows over several threads' chunks: the model's bits."""
    rng = np.random.default_rng(n + 1)
    x = rand(rng, (37 if n == 1024 else 9, n), BF16)
    w = (rng.standard_normal(n) * 0.5 + 1).astype(BF16)
    b = rand(rng, n, BF16, 0.5, 0)
    want = single_read_model(x, w, b)
    for kinds in (("stepped",) + ("contig",) * 5, ("contig",) * 3 + ("padded",) * 3,
                  ("transposed",) * 6):
        assert_bits(call(arena, x, 1, w, b, kinds=kinds), want)
    y, mean, rstd = call(arena, x, 1, w, b, out_dt=F32)
    assert np.array_equal(y.view(np.uint32), want[0].astype(F32).view(np.uint32))
    assert_bits((want[0], mean, rstd), want)


def same_bits_or_both_nan(got, want, name):
    """Equal bits, or NaN in both (the device's NaN payloads and signs are not modelled)."""
    g = np.asarray(got, F32).ravel()
    e = np.asarray(want, F32).ravel()
    nan = np.isnan(e)
    assert np.array_equal(np.isnan(g), nan), name
    assert np.array_equal(g[~nan].view(np.uint32), e[~nan].view(np.uint32)), name


@on_a2_a3
@pytest.mark.parametrize("n", [1024, 4096])
def test_single_read_nan_inf_rows(arena, n):
    """Rows holding a NaN, +inf, -inf, both infinities (a NaN mean from inf - inf), an
    overflowing value, and a weight with infinities: NaN where the model has NaN, the model's
    bits elsewhere."""
    rng = np.random.default_rng(n + 2)
    x = rand(rng, (6, n), BF16)
    x[0, 5] = np.nan
    x[1, 7] = np.inf
    x[2, 9] = -np.inf
    x[3, 1], x[3, n - 1] = np.inf, -np.inf
    x[4, 3] = 3e38  # (x * c) finite, its square overflows: var = inf, rstd = 0
    w = (rng.standard_normal(n) + 1).astype(BF16)
    w[11] = np.inf
    b = rand(rng, n, BF16, 0.5, 0)
    got = call(arena, x, 1, w, b)
    want = single_read_model(x, w, b)
    for g, e, name in zip(got, want, ("out", "mean", "rstd")):
        same_bits_or_both_nan(g, e, name)
    assert np.isnan(np.asarray(got[1], F32)[[0, 3]]).all()
    assert np.asarray(got[2], F32)[4, 0] == 0


@on_a2_a3
def test_other_shapes_keep_the_emulators_order(arena):
    """N = 1023 and a FLOAT weight are not the template's: the model's bits are not the
    emulator's there (so the test above could fail), while both stay near float64."""
    rng = np.random.default_rng(9)
    x = rand(rng, (4, 1024), BF16)
    w = (rng.standard_normal(1024) + 1).astype(F32)
    got = call(arena, x, 1, w, None)
    check(got, x, 1, w, None)
    assert not all(np.array_equal(np.asarray(g, F32).ravel(), np.asarray(e, F32).ravel())
                   for g, e in zip(got, single_read_model(x, w.astype(BF16), None)))
    x = rand(rng, (4, 1023), BF16)
    wb = (rng.standard_normal(1023) + 1).astype(BF16)
    got = call(arena, x, 1, wb, None)
    want = single_read_model(x, wb, None)
    assert not all(np.array_equal(np.asarray(g, F32).ravel(), np.asarray(e, F32).ravel())
                   for g, e in zip(got, want))


# the template's parts: elsewhere every test here skips (no single_read template there)
test_on_other_parts = run_on_parts(other_parts(("Ascend910B2", "Ascend910_9391")),
                                   "not on_other_parts")
