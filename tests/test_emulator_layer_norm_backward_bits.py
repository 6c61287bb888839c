"""aclnnLayerNormBackward bit for bit against a NumPy model of the Atlas A2/A3 kernel.

On Atlas A2 and A3 (NpuArch 2201) the op_api runs the fused LayerNormGradV3 kernel
(hicann/ops-nn norm/layer_norm_grad_v3/op_host/op_api/aclnn_layer_norm_backward.cpp). Its
tiling takes the first capable of four templates (op_host/layer_norm_grad_v3_*_tiling.cpp):
SingleRead (768 <= N <= 12176), Transpose (N <= 64, not a multiple of 8 for FLOAT dy, of 16
otherwise), Common (N <= 768), Workspace (the rest). The model below is each template's chain
in float32 (op_kernel/layer_norm_grad_v3_{single_read,common,workspace,transpose}.h),
vectorized across rows:

* x_hat = (x - mean) * rstd, g = dy * gamma, the row sums S1 = sum(g), S2 = sum(g * x_hat);
  SingleRead and Workspace by the counter-mode ReduceSum (the tree of each repeat of 64
  floats, fold64, the repeats added in order from +0; Workspace per column chunk of the
  tiling's ubFormer, the chunks' sums added from +0), Common by 64 lane accumulators (the first
  64-column block, then each later block added lane by lane) and one fold64;
* gradInput ((g - x_hat * m3) - m2) * rstd with m = S * (1.0f / N) (Workspace: S / N), rounded
  to FLOAT16 to nearest even, to BF16 with ties away from zero (CAST_ROUND);
* gradWeight/gradBias: dy * x_hat and dy summed per core block of ceil(M / 48) rows in row
  order from +0, then the blocks in order.

The Transpose template (N <= 64 unaligned; transpose_model) differs: mean and rstd plus +0;
the row sums by DoReduce's dichotomy over the N columns; gradWeight/gradBias per UB loop of
ubFormer rows (the tiling's search, transpose_ub_rows) as the counter-mode ReduceSum over the
loop's 16 * bF slots (slot 16 * b + i: row b of line i, the loop's rows laid out in 16 lines of
bF or bF - 1 rows; slots past the loop's rows hold x = dy = 0 and the mean/rstd left in UB),
the loops' sums added to the block's from +0, then the blocks in order.

On Ascend 950 (NpuArch 3510) the same op_api runs the arch35 kernels (op_kernel/arch35), whose
tiling takes GroupedReduceBigM (M > 4096, N < 512), GroupedReduceBigN (M < 512, N > 8192) or
Recompute. ``model_arch35`` is Recompute's chain (recompute_{backward,gamma_beta}_impl.h,
layer_norm_grad_v3_base.h, and asc-devkit's ReduceSum RA for the gradWeight/gradBias rows):

* gradInput (((g * N) - S1) - x_hat * S2) * (1.0f / N) * rstd, rounded with CAST_RINT (to
  nearest even); the row sums over column blocks of min(6144, N rounded up to 64), block b + Q
  folded into block b (Q the largest power of two below the block count), each block by
  LastReduceSum (64-lane registers paired, one fold64 per register, the partials folded
  again), the blocks' results merged by a binary counter (a balanced tree);
* gradWeight/gradBias per column: blocks of min(128, M) rows, folded the same way, each
  reduced down its rows by the RA ReduceSum (the rows past the largest power of two added onto
  the first ones, then rounds of 16 rows: strided when the tiling's nFactor exceeds 64,
  consecutive when it is 64, then halving), the blocks merged by the binary counter.

fold64, the one-register Reduce's lane order, is an assumption (docs/emulator.md).
Other parts run other kernels, not modelled bit for bit.
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py.raw import lib
from acl_py.soc import soc_name

from _device_reduce import LANES, dichotomy_sum, fold64, reduce_sum_count
from _part_runs import only_where, run_on_parts

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
ACL_DTYPE = {F32: 0, F16: 1, BF16: 27}
SINGLE_READ, WORKSPACE, TRANSPOSE, COMMON = 1, 2, 3, 4
A2_A3 = ("Ascend910B2", "Ascend910_9391")
UB_BYTES, CORES = 196608, 48  # both parts' (runtime/src/platform/platform_config/cann/*.ini)
ASCEND_950 = "Ascend950PR_9599"
RECOMPUTE, BIG_M, BIG_N = 5, 6, 7

# Tests of one part's LayerNormGradV3 kernel, defined on that part only (its child runs them)
a2_a3_only = only_where(soc_name() in A2_A3)
arch35_only = only_where(soc_name() == ASCEND_950)


def tiling(M, N, dt):
    """The emulator's port of the tiling (its test hook): template, rows per core block,
    blocks, Workspace's column chunk."""
    so = ctypes.CDLL(str(lib.backend.libraries["opapi"]))
    out = (ctypes.c_int64 * 4)()
    so.aclemu_layer_norm_backward_tiling(ctypes.c_int64(M), ctypes.c_int64(N),
                                         ctypes.c_int32(ACL_DTYPE[dt]), out)
    return tuple(out)


def reduce_count(v, chunk):
    """The counter-mode ReduceSum over each chunk of ``chunk`` columns, the chunks' sums added
    in order from +0 (rows vectorized)."""
    total = np.zeros(v.shape[0], F32)
    for c0 in range(0, v.shape[1], chunk):
        total = total + reduce_sum_count(v[:, c0:c0 + chunk])
    return total


def reduce_lanes(v):
    """Common's LastReduceSum: the row padded with +0 to colAlignV (N rounded up to 8); one
    fold64 of it when that is at most 64 columns, else 64 lane accumulators (the first block,
    then each later block added to the lanes it covers) and one fold64."""
    M, N = v.shape
    align = -(-N // 8) * 8
    padded = np.zeros((M, max(align, 64)), F32)
    padded[:, :N] = v
    acc = padded[:, :64].copy()
    for b in range(64, align, 64):
        blk = padded[:, b:min(b + 64, align)]
        acc[:, :blk.shape[1]] = acc[:, :blk.shape[1]] + blk
    return fold64(acc)


def transpose_ub_rows(block_rows, N, dt):
    """Transpose's ubFormer, layer_norm_grad_v3_transpose_tiling.cpp DoOpTiling's search as
    written: down from min(maxUbFormer, blockFormer) to the first row count that fits."""
    align = 8 if dt == F32 else 16
    cur_ub = UB_BYTES - 64 * 4 * 3 - -(-N // align) * align * 32
    rows = 0
    for cur in range(min(cur_ub // (N * 16 + 12), block_rows), 0, -1):
        rows = cur
        bf = -(-cur // 16)
        if -(-bf // 16) * 16 * 16 * 4 * 3 + -(-(bf * N) // 16) * 16 * 16 * 4 * 4 <= cur_ub:
            break
    return rows


def loop_slots(m0, n):
    """One UB loop of rows [m0, m0 + n) as the Transpose kernel lays it out: for each of its
    16 * bF slots, the row it holds (slot 16 * b + i: row b of line i; lines < former hold
    bF rows, the rest bF - 1), whether it holds one (slot < n), and the row whose mean/rstd
    CopyInPad left at that place of UB (line s // align8(bF), position s % align8(bF); -1:
    the line's zero padding)."""
    bf = -(-n // 16)
    former = n - 16 * (bf - 1)
    line = np.arange(16)
    start = np.where(line < former, line * bf, former * bf + (line - former) * (bf - 1))
    count = np.where(line < former, bf, bf - 1)
    s = np.arange(16 * bf)
    rows = m0 + start[s % 16] + s // 16
    stat_line = -(-bf // 8) * 8
    gl, gq = s // stat_line, s % stat_line
    left = np.where(gq < count[gl], m0 + start[gl] + gq, -1)
    return rows, s < n, left


def transpose_model(dy, x, mean, rstd, gamma, tile):
    _, block_rows, nblocks, ub_rows = tile
    M, N = dy.shape
    dyf, xf, gf = dy.astype(F32), x.astype(F32), gamma.astype(F32)
    mean, rstd = mean.astype(F32), rstd.astype(F32)
    mean0, rstd0 = (mean + F32.type(0))[:, None], (rstd + F32.type(0))[:, None]
    xh = (xf - mean0) * rstd0
    g = dyf * gf
    coff = F32.type(1) / F32.type(N)
    m3, m2 = dichotomy_sum(g * xh) * coff, dichotomy_sum(g) * coff
    dx = ((g - xh * m3[:, None]) - m2[:, None]) * rstd0
    dx = (dx if dy.dtype == F32 else dx.astype(F16) if dy.dtype == F16
          else round_bf16_ties_away(dx))
    term_w = xh * dyf
    grads = [np.zeros(N, F32), np.zeros(N, F32)]
    for b in range(nblocks):
        end = min(M, (b + 1) * block_rows)
        acc = [np.zeros(N, F32), np.zeros(N, F32)]
        for m0 in range(b * block_rows, end, ub_rows):
            rows, valid, left = loop_slots(m0, min(ub_rows, end - m0))
            rows = np.where(valid, rows, 0)
            gm = np.where(left >= 0, mean[np.maximum(left, 0)], F32.type(0))
            gr = np.where(left >= 0, rstd[np.maximum(left, 0)], F32.type(0))
            junk = ((F32.type(0) - gm) * gr) * F32.type(0)  # x = dy = 0 past the rows
            slots_w = np.where(valid[:, None], term_w[rows], junk[:, None])
            slots_b = np.where(valid[:, None], dyf[rows], F32.type(0))
            acc[0] = acc[0] + reduce_sum_count(slots_w.T)
            acc[1] = acc[1] + reduce_sum_count(slots_b.T)
        grads = [grads[k] + acc[k] for k in range(2)]
    return dx, grads[0], grads[1]


def round_bf16_ties_away(v):
    bits = v.astype(F32).view(np.uint32)
    return ((bits + np.uint32(0x8000)) >> np.uint32(16)).astype(np.uint16).view(BF16)


def model(dy, x, mean, rstd, gamma, tile):
    tmpl, block_rows, nblocks, chunk = tile
    if tmpl == TRANSPOSE:
        return transpose_model(dy, x, mean, rstd, gamma, tile)
    M, N = dy.shape
    dyf, xf, gf = dy.astype(F32), x.astype(F32), gamma.astype(F32)
    mean, rstd = mean.astype(F32)[:, None], rstd.astype(F32)[:, None]
    xh = (xf - mean) * rstd
    g = dyf * gf
    gx = g * xh
    if tmpl == COMMON:
        s1, s2 = reduce_lanes(g), reduce_lanes(gx)
    else:  # SingleRead: one chunk of N columns
        s1, s2 = reduce_count(g, chunk), reduce_count(gx, chunk)
    if tmpl == WORKSPACE:
        m2, m3 = s1 / F32.type(N), s2 / F32.type(N)
    else:
        coff = F32.type(1) / F32.type(N)
        m2, m3 = s1 * coff, s2 * coff
    dx = ((g - xh * m3[:, None]) - m2[:, None]) * rstd
    dx = (dx if dy.dtype == F32 else dx.astype(F16) if dy.dtype == F16
          else round_bf16_ties_away(dx))
    grads = []
    for term in (dyf * xh, dyf):
        parts = np.zeros((nblocks, N), F32)
        for r in range(block_rows):  # each block's rows in order, the blocks side by side
            rows = np.arange(nblocks) * block_rows + r
            live = rows < M
            parts[live] = parts[live] + term[rows[live]]
        out = np.zeros(N, F32)
        for b in range(nblocks):
            out = out + parts[b]
        grads.append(out)
    return dx, grads[0], grads[1]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


def case(M, N, dt, gamma_dt, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((M, N)) * 1.5 + 0.25).astype(dt)
    dy = rng.standard_normal((M, N)).astype(dt)
    xf = x.astype(np.float64)
    mean = xf.mean(axis=1)
    rstd = 1.0 / np.sqrt(xf.var(axis=1) + 1e-5)
    gamma = (rng.standard_normal(N) * 0.5 + 1.0).astype(gamma_dt)
    return dy, x, mean.astype(F32), rstd.astype(F32), gamma


# (N, dtype of dy, the template it takes): the boundaries of plan 1.2
SHAPES = [
    (767, F32, COMMON), (768, F16, SINGLE_READ), (768, F32, SINGLE_READ),
    (12176, BF16, SINGLE_READ), (12177, F32, WORKSPACE), (16352, F16, WORKSPACE),
    (16353, F32, WORKSPACE), (16353, BF16, WORKSPACE),
    (63, F32, TRANSPOSE), (64, F32, COMMON), (65, F32, COMMON), (64, BF16, COMMON),
    (56, F32, COMMON), (56, F16, TRANSPOSE), (56, BF16, TRANSPOSE), (72, F16, COMMON),
    (128, F32, COMMON), (136, BF16, COMMON), (72, F32, COMMON), (24, F32, COMMON),
    (1000, F32, SINGLE_READ), (200, F16, COMMON),
]
ROWS = (1, 47, 48, 49, 97)


@a2_a3_only
@pytest.mark.parametrize("N,dt,tmpl", SHAPES, ids=lambda v: getattr(v, "name", str(v)))
def test_the_tiling_chooses_the_vendor_template(N, dt, tmpl):
    for M in ROWS:
        t = tiling(M, N, dt)
        assert t[0] == tmpl
        block_rows = -(-M // 48)
        assert t[1:3] == (block_rows, -(-M // block_rows))
        assert t[3] == (min(8176, -(-N // 16) * 16) if tmpl == WORKSPACE
                        else transpose_ub_rows(block_rows, N, dt) if tmpl == TRANSPOSE else N)


BIT_SHAPES = SHAPES


@a2_a3_only
@pytest.mark.parametrize("k", range(len(BIT_SHAPES)),
                         ids=[f"{n}-{d.name}" for n, d, _ in BIT_SHAPES])
def test_bit_for_bit_against_the_template_model(k):
    N, dt, tmpl = BIT_SHAPES[k]
    M = ROWS[k % len(ROWS)] if N < 12000 else ROWS[k % 3]  # the big rows stay small in M
    gamma_dt = F32 if dt == F32 or k % 2 else dt  # 16-bit dy: FLOAT and 16-bit gamma
    dy, x, mean, rstd, gamma = case(M, N, dt, gamma_dt, seed=k)
    tile = tiling(M, N, dt)
    assert tile[0] == tmpl
    out = (np.empty((M, N), dt), np.empty(N, F32), np.empty(N, F32))
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None, out=out)
    want = model(dy, x, mean, rstd, gamma, tile)
    for name, g, w in zip(("gradInput", "gradWeight", "gradBias"), got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(bits(g), bits(w), err_msg=f"{name} M={M} N={N}")


@a2_a3_only
@pytest.mark.parametrize("N", [40, 100])
def test_zero_rows_keep_the_sign_of_the_kernels_sums(N):
    """dy all -0: each lane's first value is the row's own (-0), so the sums are -0, and
    gradInput's ((g - x_hat*m3) - m2) * rstd takes those signs (Common's lanes). N = 100: the
    padding to colAlignV (104) adds +0 to lanes 36-39, which makes the sums +0."""
    M = 3
    dy = np.full((M, N), -0.0, F32)
    x = np.linspace(-2, 2, M * N, dtype=F32).reshape(M, N)
    mean, rstd = np.zeros(M, F32), np.ones(M, F32)
    gamma = np.ones(N, F32)
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None)
    want = model(dy, x, mean, rstd, gamma, tiling(M, N, F32))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(bits(g), bits(w))


# Transpose shapes (M, N, dy dtype, gamma dtype): N unaligned from 1 to 63, M from one row to
# several core blocks of several UB loops each (the loops' last one shorter, down to one line)
TRANSPOSE_CASES = [
    (1, 1, F32, F32), (5, 3, F16, F32), (17, 7, BF16, BF16), (47, 15, F32, F32),
    (49, 17, F16, F16), (200, 31, BF16, F32), (967, 33, F32, F32), (1000, 56, F16, F16),
    (700, 8, BF16, F32), (333, 40, F16, F32), (130, 2, F32, F32), (2000, 63, BF16, BF16),
    (48 * 355, 33, F32, F32),  # ubFormer 352 by the search (355 does not fit): loops 352 + 3
    (9000, 63, F16, F32),      # blockFormer 188: loops of 176 + 12
    (48 * 7000 + 5, 1, F32, F32),
]


def transpose_case(k):
    M, N, dt, gamma_dt = TRANSPOSE_CASES[k]
    return (M, N, dt) + case(M, N, dt, gamma_dt, seed=100 + k)


@a2_a3_only
@pytest.mark.parametrize("k", range(len(TRANSPOSE_CASES)),
                         ids=[f"{m}x{n}-{d.name}-{g.name}" for m, n, d, g in TRANSPOSE_CASES])
def test_transpose_template_bit_for_bit(k):
    M, N, dt, dy, x, mean, rstd, gamma = transpose_case(k)
    tile = tiling(M, N, dt)
    assert tile[0] == TRANSPOSE
    assert tile[3] == transpose_ub_rows(tile[1], N, dt)
    out = (np.empty((M, N), dt), np.empty(N, F32), np.empty(N, F32))
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None, out=out)
    want = transpose_model(dy, x, mean, rstd, gamma, tile)
    for name, g, w in zip(("gradInput", "gradWeight", "gradBias"), got, want):
        np.testing.assert_array_equal(bits(g), bits(w), err_msg=f"{name} M={M} N={N}")


@a2_a3_only
def test_transpose_tiling_runs_the_search_loop():
    """The hook's ubFormer is the literal search's on shapes where it steps down past counts
    that do not fit, and loops of several sizes follow."""
    seen = set()
    for N in (1, 3, 9, 17, 33, 47, 63):
        for block_rows in (1, 15, 16, 17, 100, 190, 355, 1000, 7000):
            M = block_rows * 48
            t = tiling(M, N, F32)
            assert t[0] == TRANSPOSE and t[1] == block_rows
            assert t[3] == transpose_ub_rows(block_rows, N, F32), (N, block_rows)
            seen.add(t[3] < block_rows)
    assert seen == {True, False}
    assert tiling(48 * 355, 33, F32)[3] == 352 and tiling(48 * 188, 63, F32)[3] == 176


@a2_a3_only
def test_transpose_order_is_not_commons():
    """The Transpose model is not Common's order under another name: on these shapes its
    gradInput (the dichotomy over the columns vs the 64-lane tree) and gradWeight/gradBias
    (the slots' ReduceSums vs the rows in order) differ in some bits from Common's model, and
    the emulator gives the Transpose model's."""
    for k in (6, 12):  # FLOAT dy: a sum of a few 16-bit values is often exact in any order
        M, N, dt, dy, x, mean, rstd, gamma = transpose_case(k)
        tile = tiling(M, N, dt)
        got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None,
                                         out=(np.empty((M, N), dt), np.empty(N, F32),
                                              np.empty(N, F32)))
        want = transpose_model(dy, x, mean, rstd, gamma, tile)
        common = model(dy, x, mean, rstd, gamma, (COMMON,) + tile[1:3] + (N,))
        for g, w, c in zip(got, want, common):
            assert (bits(w) != bits(c)).any(), (M, N)
            np.testing.assert_array_equal(bits(g), bits(w))


@a2_a3_only
def test_transpose_gradinput_in_another_dtype_rounds_twice():
    """FLOAT16 input, FLOAT gradInputOut: the kernel's FLOAT16 result, widened."""
    M, N, dt, dy, x, mean, rstd, gamma = transpose_case(1)
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None,
                                     out=(np.empty((M, N), F32), None, None))
    want = transpose_model(dy, x, mean, rstd, gamma, tiling(M, N, dt))
    np.testing.assert_array_equal(bits(got[0]), bits(want[0].astype(F32)))


@a2_a3_only
def test_transpose_slots_past_the_rows_take_the_stats_left_in_ub():
    """Core blocks of 20 rows of 7, one UB loop each: bF = 2, lines 0..3 hold 2 rows, 4..15
    one; slots 20..31 hold no row, and the kernel's UB holds there the mean/rstd lines as
    CopyInPad wrote them (rows 6 and 7 at slots 24 and 25). An infinite rstd of row 6 makes
    that slot's gradWeight term (0 - mean) * inf * 0 = NaN in every column, where row 6's own
    terms are infinite."""
    M, N = 48 * 20, 7
    assert tiling(M, N, F32)[1:] == (20, 48, 20)
    rows, valid, left = loop_slots(0, 20)
    assert list(left[20:]) == [-1] * 4 + [6, 7] + [-1] * 6
    dy, x, mean, rstd, gamma = case(M, N, F32, F32, seed=7)
    rstd[6] = np.inf
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None)
    with np.errstate(invalid="ignore"):
        want = transpose_model(dy, x, mean, rstd, gamma, tiling(M, N, F32))
    assert np.isnan(want[1]).all() and np.isnan(got[1]).all()
    np.testing.assert_array_equal(bits(got[2]), bits(want[2]))
    ok = np.arange(M) != 6
    np.testing.assert_array_equal(bits(got[0][ok]), bits(want[0][ok]))


# ---- Ascend 950: the arch35 Recompute template ----------------------------------------------

UB_950 = 253952  # cann-dev/Ascend950PR_9599.ini ub_size


def tiling_arch35(M, N):
    """The emulator's arch35 tiling (its test hook): template, gradWeight's rows per block,
    its block pairs (basicBlockLoop), its nFactor, gradInput's column block and its pairs
    (BigN: core 0's), the cores (BigM: gradWeight's, BigN: gradInput's), BigN's cross-core
    RA columns."""
    so = ctypes.CDLL(str(lib.backend.libraries["opapi"]))
    out = (ctypes.c_int64 * 8)()
    so.aclemu_layer_norm_backward_tiling_arch35(ctypes.c_int64(M), ctypes.c_int64(N), out)
    return tuple(out)


def power2_below(v):
    """FindNearestPower2: the largest power of two strictly below v (0 for v <= 1)."""
    return 0 if v <= 1 else 1 << ((v - 1).bit_length() - 1)


def trailing_ones(b):
    return (b ^ (b + 1)).bit_length() - 1


def binary_counter(results):
    """UpdateCache over the blocks' results in order: block b's result plus cache levels
    0 .. t-1 (t its trailing ones), stored at level t; the answer at the last block's level."""
    cache = {}
    for b, r in enumerate(results):
        t = trailing_ones(b)
        for j in range(t):
            r = r + cache[j]
        cache[t] = r
    return cache[trailing_ones(len(results) - 1)]


def reduce_register(v):
    """One Reduce over [M, n <= 64] lanes, the rest +0."""
    return fold64(np.pad(v, ((0, 0), (0, LANES - v.shape[1]))))


def reduce_small(v):
    """LastReduceSumSmallR over [M, r <= 128]."""
    r = v.shape[1]
    if r <= LANES:
        return reduce_register(v)
    a = v[:, :LANES].copy()
    a[:, :r - LANES] = a[:, :r - LANES] + v[:, LANES:r]
    return fold64(a)


def last_reduce_sum(v):
    """LastReduceSum over [M, r]: registers j and j + P paired, the partial register merged
    into register F - P, the rest alone; one Reduce each; the P results by reduce_small."""
    r = v.shape[1]
    if r <= 2 * LANES:
        return reduce_small(v)
    K, F = -(-r // LANES), r // LANES
    P = power2_below(K)
    reg = lambda j: v[:, j * LANES:(j + 1) * LANES]
    parts = [fold64(reg(j) + reg(j + P)) for j in range(F - P)]
    if K > F:
        a = reg(F - P).copy()
        a[:, :r - F * LANES] = a[:, :r - F * LANES] + v[:, F * LANES:]
        parts.append(fold64(a))
    parts += [fold64(reg(j)) for j in range(K - P, P)]
    return reduce_small(np.stack(parts, axis=1))


def row_sum_arch35(v, nf=None):
    """The row sums of [M, N]: column blocks of nf (Recompute: min(6144, N up to 64); BigM:
    64), folded, LastReduceSum each, merged by the binary counter."""
    N = v.shape[1]
    nf = nf or min(6144, -(-N // LANES) * LANES)
    whole, blocks = N // nf, -(-N // nf)
    Q = power2_below(blocks)
    if Q == 0:
        return last_reduce_sum(v)
    results = []
    for b in range(Q):
        blk = v[:, b * nf:(b + 1) * nf].copy()
        fold = nf if b + Q < whole else (N - whole * nf if b + Q == whole else 0)
        blk[:, :fold] = blk[:, :fold] + v[:, (b + Q) * nf:(b + Q) * nf + fold]
        results.append(last_reduce_sum(blk))
    return binary_counter(results)


def ra_reduce(t, grouped):
    """asc-devkit ReduceSum RA (reuse source) down the rows of [R, n]."""
    R = t.shape[0]
    if R == 1:
        return t[0]
    main = 1 << (R.bit_length() - 1)
    t = t.copy()
    t[:R - main] = t[:R - main] + t[main:R]
    t = t[:main]
    while t.shape[0] >= 16:
        L = t.shape[0] // 16
        if grouped:  # rows 16 j + k, k = 0..15, to row j
            g = t.reshape(L, 16, -1)
            for h in (8, 4, 2, 1):
                g = g[:, :h] + g[:, h:2 * h]
            t = g[:, 0]
        else:  # rows j + k L to row j
            for h in (8 * L, 4 * L, 2 * L, L):
                t = t[:h] + t[h:2 * h]
    while t.shape[0] > 1:
        h = t.shape[0] // 2
        t = t[:h] + t[h:2 * h]
    return t[0]


def gamma_beta_tiling(M, big_n=False):
    """GammaBetaKernelTiling of recompute_tiling.cpp (rows per block min(128, M), nFactor
    floored to 64) or big_n_tiling.cpp (min(64, M), floored to 16): rows per block, whole
    blocks, the tail's rows, basicBlockLoop, nFactor."""
    mf = min(64 if big_n else 128, M)
    whole, blocks = M // mf, -(-M // mf)
    Q = power2_below(blocks)
    levels = Q.bit_length() if Q else 1
    base = 16 if big_n else 64
    nfactor = (UB_950 // 4 - 2 * mf) // (6 * mf + 3 + 2 * levels) // base * base
    return mf, whole, M - whole * mf, Q, nfactor


def ra_grouped(columns):
    """asc-devkit ReduceRAImpl's form: LessThanVL (16 consecutive rows a round) for 32 <
    columns <= 64; the Concat (<= 32) and OverVL (> 64) forms both halve the rows."""
    return 32 < columns <= LANES


def slice_sum(term, mf, grouped):
    """One core's rows of the per-row terms [rows, N]: row blocks of mf, block b + Q folded
    into block b, the RA reduction of each, the binary counter."""
    M = term.shape[0]
    whole, blocks = M // mf, -(-M // mf)
    Q, tail = power2_below(blocks), M - whole * mf
    rows = mf if Q else M
    results = []
    for b in range(max(Q, 1)):
        blk = term[b * mf:b * mf + rows].copy()
        fold = (mf if b + Q < whole else tail if b + Q == whole else 0) if Q else 0
        blk[:fold] = blk[:fold] + term[(b + Q) * mf:(b + Q) * mf + fold]
        results.append(ra_reduce(blk, grouped))
    return binary_counter(results)


def column_sum_arch35(term, big_n=False):
    """Recompute's (or BigN's) gradWeight/gradBias of the per-row terms [M, N]."""
    mf, _, _, _, nfactor = gamma_beta_tiling(term.shape[0], big_n)
    return slice_sum(term, mf, grouped=ra_grouped(nfactor))


VECTOR_CORES_950 = 72  # cann-dev/Ascend950PR_9599.ini vector_core_cnt


def big_m_cores(M):
    return min(-(-M // 64), 64, VECTOR_CORES_950)


def column_sum_big_m(term):
    """GroupedReduceBigM's gradWeight/gradBias: stage 1, each core's rows (the first
    M % cores take one more) in 64-row blocks, 64-column RA reductions (consecutive rounds);
    stage 2, the cores' results as rows, one more RA reduction."""
    M = term.shape[0]
    cores = big_m_cores(M)
    per, rem = divmod(M, cores)
    parts, start = [], 0
    for c in range(cores):
        rows = per + (c < rem)
        parts.append(slice_sum(term[start:start + rows], 64, grouped=True))
        start += rows
    return ra_reduce(np.stack(parts), grouped=True)


def big_n_split(M, N):
    """GroupedReduceBigN's gradInput (big_n_tiling.cpp BackwardKernelTiling): its column block,
    the cores' column counts (the first N % cores one more), the cross-core RA columns."""
    nf = 64 if M > 16 else 128
    cores = min(VECTOR_CORES_950, nf)
    block = max(-(-N // cores), nf)
    used = -(-N // block)
    per, rem = divmod(N, used)
    counts = [per + (k < rem) for k in range(used)]
    Q = power2_below(-(-(per + 1) // nf))
    levels = Q.bit_length() if Q else 1
    m_max = (UB_950 // 4 - 2 * nf) // (9 * nf + 9 + 2 * levels) // 8 * 8
    dim_a = -(-min(M, m_max) // 8) * 8
    return nf, counts, dim_a


def row_sum_big_n(v):
    """Each core's columns summed as a Recompute row (its own column blocks), then the cores'
    results, as rows, by one RA reduction over dim_a columns."""
    nf, counts, dim_a = big_n_split(*v.shape)
    bounds = np.cumsum([0] + counts)
    parts = [row_sum_arch35(v[:, a:b], nf) for a, b in zip(bounds[:-1], bounds[1:])]
    return ra_reduce(np.stack(parts), grouped=ra_grouped(dim_a))


def template_of(M, N):
    """The arch35 tiling's choice: the first capable of BigM, BigN, Recompute."""
    return BIG_M if M > 4096 and N < 512 else BIG_N if M < 512 and N > 8192 else RECOMPUTE


def model_arch35(dy, x, mean, rstd, gamma, tmpl=None):
    """The template the tiling takes (template_of), or tmpl."""
    M, N = dy.shape
    tmpl = tmpl or template_of(M, N)
    big_m, big_n = tmpl == BIG_M, tmpl == BIG_N
    dyf, xf, gf = dy.astype(F32), x.astype(F32), gamma.astype(F32)
    mean, rstd = mean.astype(F32)[:, None], rstd.astype(F32)[:, None]
    xh = (xf - mean) * rstd
    g = dyf * gf
    if big_n:
        s1, s2 = row_sum_big_n(g), row_sum_big_n(xh * g)
    else:
        nf = 64 if big_m else None
        s1, s2 = row_sum_arch35(g, nf), row_sum_arch35(xh * g, nf)
    fN = F32.type(N)
    dx = ((((g * fN) - s1[:, None]) - xh * s2[:, None]) * (F32.type(1) / fN)) * rstd
    dx = dx.astype(dy.dtype)  # CAST_RINT: to nearest even
    if big_m:
        return dx, column_sum_big_m(xh * dyf), column_sum_big_m(dyf)
    return dx, column_sum_arch35(xh * dyf, big_n), column_sum_arch35(dyf, big_n)


# (M, N, template): each side of the BigM and BigN boundaries
ARCH35_TEMPLATES = [
    (4097, 511, BIG_M), (4096, 511, RECOMPUTE), (4097, 512, RECOMPUTE),
    (511, 8193, BIG_N), (512, 8193, RECOMPUTE), (511, 8192, RECOMPUTE), (1, 1, RECOMPUTE),
    # BigN's row counts: 128-column blocks up to 16 rows, 64 beyond; the cross-core RA
    # columns in each of its three forms (<= 32, <= 64, more) and past its row chunk
    (1, 8193, BIG_N), (16, 9000, BIG_N), (17, 9000, BIG_N), (40, 10000, BIG_N),
    (300, 20000, BIG_N),
]


@arch35_only
@pytest.mark.parametrize("M,N,tmpl", ARCH35_TEMPLATES)
def test_arch35_tiling_chooses_the_vendor_template(M, N, tmpl):
    t = tiling_arch35(M, N)
    assert t[0] == tmpl
    if tmpl == BIG_M:
        cores = big_m_cores(M)
        rows0 = M // cores + (M % cores > 0)
        assert t[1:] == (64, power2_below(-(-rows0 // 64)), 64, 64,
                         power2_below(-(-N // 64)), cores, 0)
    elif tmpl == BIG_N:
        mf, _, _, Q, nfactor = gamma_beta_tiling(M, big_n=True)
        nf, counts, dim_a = big_n_split(M, N)
        assert t[1:] == (mf, Q, nfactor, nf, power2_below(-(-counts[0] // nf)), len(counts),
                         dim_a)
    else:
        mf, _, _, Q, nfactor = gamma_beta_tiling(M)
        nf = min(6144, -(-N // 64) * 64)
        assert t[1:] == (mf, Q, nfactor, nf, power2_below(-(-N // nf)), 0, 0)


# Recompute (M, N, dtype of dy): gradInput's register paths (N <= 64, <= 128, 129 with a
# partial register, 256, 1000), its column blocks (6144 one, 6145 a 1-column fold, 12289 three
# blocks and the counter, M = 512 to stay out of BigN); gradWeight's row blocks (M 1, 32 and 64
# strided rounds, 100 and 128 with 64-column consecutive rounds, 129 a 1-row fold, 300 and 385
# tails, 600 five blocks)
ARCH35_SHAPES = [
    (1, 24, F32), (32, 64, F16), (64, 100, BF16), (100, 129, F32), (128, 256, F16),
    (129, 1000, BF16), (300, 40, F32), (385, 72, F16), (600, 64, BF16), (3, 6144, F32),
    (2, 6145, F16), (512, 12289, BF16), (7, 200, F32),
]


# GroupedReduceBigM (M > 4096, N < 512): gradInput's 64-column blocks (N 3 one, 64, 100 a
# fold, 200 a fold with a tail and the counter, 511 eight blocks); gradWeight's cores (4097:
# core 0 a row more, one 64-row block each; 12837: 200 or 201 rows, four blocks a core)
BIG_M_SHAPES = [
    (4097, 3, F32), (4097, 64, F16), (4097, 100, BF16), (4099, 200, F32), (12837, 3, F16),
    (4100, 511, BF16),
]

# GroupedReduceBigN (M < 512, N > 8192): gradInput's cores, 128-column blocks for M <= 16 (1
# and 16: each core's columns one block), 64 beyond (a 1-column fold at 17, folds with tails
# at 40 and 200, five blocks at 511); the cores' RA reduction over 8, 16, 24 columns (the
# Concat form), 40 and 64 (LessThanVL: 16 cores a round), 72 and 104 (OverVL; 200 rows make
# two row chunks of 104); gradWeight's 64-row blocks (65 a 1-row fold, 200 and 511 folds)
BIG_N_SHAPES = [
    (1, 8193, F32), (16, 9000, F16), (17, 8200, BF16), (40, 10000, F32), (64, 8193, F16),
    (65, 9000, BF16), (200, 8200, F32), (511, 16389, BF16),
]
ARCH35_CASES = [(RECOMPUTE, shape, 100 + k) for k, shape in enumerate(ARCH35_SHAPES)] + [
    (BIG_M, shape, 200 + k) for k, shape in enumerate(BIG_M_SHAPES)] + [
    (BIG_N, shape, 300 + k) for k, shape in enumerate(BIG_N_SHAPES)]
TEMPLATE_NAMES = {RECOMPUTE: "recompute", BIG_M: "big_m", BIG_N: "big_n"}


@arch35_only
@pytest.mark.parametrize("k", range(len(ARCH35_CASES)),
                         ids=[f"{TEMPLATE_NAMES[t]}-{m}x{n}-{d.name}"
                              for t, (m, n, d), _ in ARCH35_CASES])
def test_arch35_bit_for_bit_against_the_template_model(k):
    tmpl, (M, N, dt), seed = ARCH35_CASES[k]
    gamma_dt = F32 if dt == F32 or seed % 2 else dt
    dy, x, mean, rstd, gamma = case(M, N, dt, gamma_dt, seed=seed)
    assert tiling_arch35(M, N)[0] == tmpl
    # gradWeight/gradBias in weight's dtype when it is 16-bit (the kernel's own output)
    out = (np.empty((M, N), dt), np.empty(N, gamma_dt), np.empty(N, gamma_dt))
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None, out=out)
    dx, dw, db = model_arch35(dy, x, mean, rstd, gamma)
    want = (dx, dw.astype(gamma_dt), db.astype(gamma_dt))
    for name, g, w in zip(("gradInput", "gradWeight", "gradBias"), got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(bits(g), bits(w), err_msg=f"{name} M={M} N={N}")


@arch35_only
def test_arch35_float_grad_input_of_16_bit_input_carries_its_rounding():
    """FLOAT16 input, FLOAT gradInputOut: the kernel's FLOAT16 result, widened."""
    M, N = 5, 300
    dy, x, mean, rstd, gamma = case(M, N, F16, F32, seed=7)
    out = (np.empty((M, N), F32), np.empty(N, F32), np.empty(N, F32))
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None, out=out)
    want = model_arch35(dy, x, mean, rstd, gamma)
    np.testing.assert_array_equal(bits(got[0]), bits(want[0].astype(F32)))
    np.testing.assert_array_equal(bits(got[1]), bits(want[1]))


def test_the_arch35_model_is_not_the_a2_a3_one():
    """The two kernels' orders give different bits on ordinary data (so the 950 tests above
    could not pass on the A2/A3 arithmetic): gradInput, gradWeight and gradBias each."""
    M, N = 200, 1000
    dy, x, mean, rstd, gamma = case(M, N, F32, F32, seed=3)
    block_rows = -(-M // 48)
    a2 = model(dy, x, mean, rstd, gamma, (SINGLE_READ, block_rows, -(-M // block_rows), N))
    a35 = model_arch35(dy, x, mean, rstd, gamma)
    for name, a, b in zip(("gradInput", "gradWeight", "gradBias"), a2, a35):
        assert not np.array_equal(bits(a), bits(b)), name


@arch35_only
def test_big_n_is_not_recompute():
    """On a BigN shape, each of the three outputs' bits differ between the BigN and the
    Recompute orders (so the BigN cases above could not pass on Recompute's arithmetic), and
    the emulator's are BigN's."""
    M, N = 200, 8200  # gradWeight's row blocks: BigN's 64 rows, Recompute's 128
    dy, x, mean, rstd, gamma = case(M, N, F32, F32, seed=11)
    got = acl_py.layer_norm_backward(dy, x, (N,), mean, rstd, gamma, None)
    big_n = model_arch35(dy, x, mean, rstd, gamma, BIG_N)
    recompute = model_arch35(dy, x, mean, rstd, gamma, RECOMPUTE)
    for name, g, a, b in zip(("gradInput", "gradWeight", "gradBias"), got, big_n, recompute):
        assert not np.array_equal(bits(a), bits(b)), name
        np.testing.assert_array_equal(bits(g), bits(a), err_msg=name)


def _part_selection(part):
    return "arch35" if part == ASCEND_950 else "not other_parts and not arch35"


test_on_other_parts = run_on_parts(
    [p for p in (*A2_A3, ASCEND_950) if p != soc_name()], _part_selection)
