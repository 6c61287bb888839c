"""The emulator's aclnnRmsNorm through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/rms_norm: docs/aclnnRmsNorm.md, op_host/rms_norm_def.cpp,
op_host/rms_norm_tiling.cpp; the stricter choices in docs/emulator.md), the per-part dtype
tables, the device's numbers (float32 compute, y rounded once to x's dtype, ties to even)
against the float64 reference for every dtype pair and layout, and bits independent of the
thread count.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _device_reduce import fold64, half_interval_sum, lane_blocks_sum, split_sums
from _emu_aclnn import (SOC, check_part_dtype_table, refused_by, rstd_shape,
                        run_phase_two)
from _part_runs import other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one
from test_emulator_rms_norm_quant import v2_rstd  # norm_common's Newton-Raphson rstd

P1 = lib.aclnnRmsNormGetWorkspaceSize
P2 = lib.aclnnRmsNorm
TILING = 561002
BF16_PART = not SOC.startswith(("Ascend310P", "Ascend910A", "Ascend910Pro", "Ascend910Prem")) \
    and SOC != "Ascend910B"
# (x, gamma) dtype pairs of the vendor's table on parts with BF16 (Atlas A2/A3, Ascend 950)
PAIRS = [(F32, F32), (F16, F16), (F16, F32), (BF16, BF16), (BF16, F32)]


def phase_one(x, gamma, y, rstd, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x, gamma, eps, y, rstd, ws=ws, ex=ex)


def run(arena, x, gamma, y, rstd, eps=1e-6):
    run_phase_two(arena, P2, phase_one(x, gamma, y, rstd, eps))


def call(arena, x, g, kinds=("contig",) * 4, eps=1e-6):
    vx, vg = DevView(arena, x, kind=kinds[0]), DevView(arena, g, kind=kinds[1])
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kinds[2], sentinel=-77.0)
    vr = DevView(arena, shape=rstd_shape(x.shape, g.ndim), dtype=F32, kind=kinds[3],
                 sentinel=-77.0)
    run(arena, vx, vg, vy, vr, eps)
    return vy.read(), vr.read()


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def in_the_table(cases):
    """The cases (x dtype, gamma dtype, ...) whose pair is in the part's table: a part without
    BF16 has no BF16 pair, nor FLOAT16 x with float32 gamma. Another pair could never run
    there, so it is no test (test_part_dtype_table checks its refusal); the parts with it
    run it."""
    return [c for c in cases if BF16_PART or (BF16 not in c[:2] and tuple(c[:2]) != (F16, F32))]


TABLE_PAIRS = in_the_table(PAIRS)


# ---- numbers ---------------------------------------------------------------------------------

# The parts' kernels: Atlas A2/A3 (DAV_2201; the tilings see the A2 parts as SocVersion
# ASCEND910B, the A3 ones as ASCEND910_93), the inference parts, the training parts (DAV_1001,
# SocVersion ASCEND910: Tiling4RmsNorm's own branch) and Ascend 950.
A2 = SOC.startswith("Ascend910B") and BF16_PART
INFERENCE = SOC.startswith("Ascend310P")
TRAINING = SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem")) or SOC == "Ascend910B"
TRAINING_UB_FLOATS = (262144 - 1024) // 4  # their UB (platform_config ub_size) less UB_USED
A2_UB = 196608 - 1024  # the A2/A3 UB less the tiling's UB_USED
ARCH35 = SOC.startswith("Ascend950")
UB_950 = 253952 - 1024  # Ascend 950's UB (platform_config ub_size) less UB_USED


def split_d_slice(n, ub):
    """Tiling4RmsNorm's split-D ub_factor: n in ceil(n / ub) tiles rounded up to 16, stepped
    down by 16 while n leaves a tail of 1..15."""
    tiles = -(-n // ub)
    s = -(-n // (tiles * 16)) * 16
    while n % s and n % s < 16:
        s -= 16
    return s


def regbase_order(xdt, gdt, n):
    """Ascend 950's template (op_host/rms_norm_tiling_arch35.cpp), as its row sum's order:
    ("perf", aligned N) while the row aligned to 32 bytes is at most 16384 elements and
    (UB - 2K - aligned N * gamma's size) // (aligned N * x's size * 2 * 2 + 4 * 3 + the first
    reduce's floats) is at least 1; else ("split", x's size, ubFactor, ubLoop): ubFactor
    doubles from 1 while ComputeTotalBufSize (rms_norm_tiling.h) of twice it stays below
    the UB, ubLoop doubles from 1 while twice it times ubFactor is at most N."""
    bx, bg = np.dtype(xdt).itemsize, np.dtype(gdt).itemsize
    na = -(-n * bx // 32) * 32 // bx
    fold_point = 1 << ((na - 1).bit_length() - 1)
    first = -(-(-(-fold_point // 64)) // 32) * 32
    if na <= 16384 and (UB_950 - 2048 - na * bg) // (na * bx * 4 + 12 + first) >= 1:
        return ("perf", na)
    return regbase_split_order(xdt, gdt, n)


def regbase_split_order(xdt, gdt, n):
    bx, bg = np.dtype(xdt).itemsize, np.dtype(gdt).itemsize

    def total_buf(length):  # two buffers of x (twice), of gamma, of 64 floats; tmp; retained
        return 2 * length * bx * 2 + 2 * length * bg + 64 * 2 * 4 + length * 4 + 256 * 5 * 4
    factor = 1
    while total_buf(2 * factor) < UB_950:
        factor *= 2
    loop = 1
    while loop * 2 * factor <= n:
        loop *= 2
    return ("split", bx, factor, loop)


def training_order(xdt, n):
    """Tiling4RmsNorm's SocVersion ASCEND910 branch (D: the UB less UB_USED, in floats):
    ("whole-reduce",) (rms_norm_whole_reduce_sum.h) while rowFactor = (D - aligned N) //
    (64 + 2 * aligned N) is at least 1; else ("training-slices", ubFactor) (rms_norm_split_d.h,
    key 1): onceReduceMaxCols = b * (D - 64 * 8 - 64) // (3 + 2b) down to a block (b = 2 for
    FLOAT16, 1 for FLOAT), ubFactor = aligned N over ceil(aligned N / that) tiles, rounded up
    to a block."""
    blk = 8 if xdt == F32 else 16
    na, d = -(-n // blk) * blk, TRAINING_UB_FLOATS
    if d > na and (d - na) // (64 + 2 * na) >= 1:
        return ("whole-reduce",)
    b = blk // 8
    once = b * (d - 64 * 8 - 64) // (3 + 2 * b) // blk * blk
    tiles = -(-na // once)
    return ("training-slices", -(-(-(-na // tiles)) // blk) * blk)


def kernel_order(xdt, gdt, n, m, gemma=False):
    """The kernel op_host/rms_norm_tiling.cpp picks on this part, as its row sum's order:
    ("lane-blocks",), ("half-interval",) or ("slices", columns per slice); Ascend 950's
    regbase_order (GemmaRmsNorm's tiling calls the same function there); the training
    parts' training_order."""
    if ARCH35:
        return regbase_order(xdt, gdt, n)
    if TRAINING:
        return training_order(xdt, n)
    b16 = xdt != F32
    aligned = -(-n // (16 if b16 else 8)) * (16 if b16 else 8)
    ub = (10240 if b16 else 8192) if gemma else (12288 if b16 else 10240)
    if not gemma and gdt == F32 and b16:  # CalMixDtypeTiling
        if aligned <= 2000 and A2:
            return ("lane-blocks",)
        if 14 * aligned + 512 < A2_UB:
            return ("half-interval",)
        return ("slices", (A2_UB - 2560) // 16 // 16 * 16)
    if not gemma and ((aligned <= 2000 and A2) or
                      (xdt == F16 and n == 128 and INFERENCE and m % 16 == 0)):
        return ("lane-blocks",)
    return ("half-interval",) if aligned <= ub else ("slices", split_d_slice(n, ub))


def perf_sums(sq, na):
    """NormCommonRegbase::CalculateSquareReduceSum (norm_common/op_kernel/
    reduce_common_regbase.h) over rows of squares [M, N], by aligned N: one register's Reduce
    (<= 64); the second register added onto the first (<= 128); else the fold point F, the
    largest power of two below aligned N: each register of the first F columns, with the
    columns F on added where there are any, one Reduce into a partial; the F / 64 partials
    one Reduce (aligned N <= 8192), or the second 64 added onto the first 64, then Reduced."""
    m, n = sq.shape
    padded = np.zeros((m, max(128, n + 64)), F32)
    padded[:, :n] = sq
    if na <= 128:
        return fold64(padded[:, :64] + padded[:, 64:128]) if na > 64 else fold64(padded[:, :64])
    f = 1 << ((na - 1).bit_length() - 1)
    folded = -(-(n - f) // 64)  # registers with a fold
    parts = [fold64(padded[:, j * 64:j * 64 + 64] + padded[:, f + j * 64:f + j * 64 + 64])
             if j < folded else fold64(padded[:, j * 64:j * 64 + 64]) for j in range(f // 64)]
    parts = np.stack(parts, axis=1)
    if na <= 8192:
        return fold64(np.pad(parts, ((0, 0), (0, 64 - parts.shape[1]))))
    second = np.zeros((m, 64), F32)
    second[:, :f // 64 - 64] = parts[:, 64:]
    return fold64(parts[:, :64] + second)


def to_repeat_sums(t):
    """The training parts' split-D slice sum over float32 t [M, n >= 16] (avg already
    multiplied in): ReduceSumHalfIntervalToRepeat (rms_norm_base.h: the part past the largest
    power of two added onto the front, halved down to 16, the last halving into 8 lanes), then
    WholeReduceSum of those 8 (mask 8: one repeat's fold, the other lanes off)."""
    t = np.array(t, F32)
    n = t.shape[1]
    body = 1 << (n.bit_length() - 1)
    t[:, :n - body] += t[:, body:n]
    while body > 16:
        body //= 2
        t[:, :body] += t[:, body:2 * body]
    return fold64(np.pad(t[:, :8] + t[:, 8:16], ((0, 0), (0, 56))))


def row_sums(order, sq):
    if order[0] == "training-slices":  # sq holds the squares times avg here
        acc = np.zeros(sq.shape[0], F32)
        for c in range(0, sq.shape[1], order[1]):
            acc = acc + to_repeat_sums(sq[:, c:c + order[1]])
        return acc
    if order[0] == "perf":
        return perf_sums(sq, order[1])
    if order[0] == "split":
        return split_sums(sq, *order[1:])
    if order[0] == "lane-blocks":
        return lane_blocks_sum(sq)
    if order[0] in ("half-interval", "whole-reduce"):
        return half_interval_sum(sq)
    acc = np.zeros(sq.shape[0], F32)
    for c in range(0, sq.shape[1], order[1]):
        acc = acc + half_interval_sum(sq[:, c:c + order[1]])
    return acc


def device_chain(x, g, eps, order, gamma_offset=0.0):
    """(y, rstd) as the kernel computes them, every step one float32 rounding: the squares
    summed in the kernel's order, rstd = 1 / sqrt(sum * avg + eps) (Ascend 950's perf
    template: norm_common's Newton-Raphson rstd of sum * avg; the training parts' split-D:
    each square times avg before the sum, 1 / sqrt(sum + eps)), y = (x * rstd) * gamma
    rounded once to x's dtype (the training parts' whole-reduce-sum kernel with FLOAT16 x:
    x * rstd rounded to FLOAT16, then times gamma in FLOAT16)."""
    n = g.size
    x2 = x.astype(F32).reshape(-1, n)
    f = np.float32
    avg = f(1) / f(n)
    if order[0] == "training-slices":
        var = row_sums(order, (x2 * x2) * avg)
    else:
        var = row_sums(order, x2 * x2) * avg
    if order[0] == "perf":
        rstd = np.array([v2_rstd(v, eps, False) for v in var], F32)
    else:
        rstd = f(1) / np.sqrt(var + f(eps))
    gf = g.astype(F32).reshape(n) + f(gamma_offset)
    t = x2 * rstd[:, None]
    if order[0] == "whole-reduce" and x.dtype == F16:
        t = t.astype(F16).astype(F32)  # the FLOAT16 Cast, then a FLOAT16 Mul (exact in float)
    return (t * gf).astype(x.dtype).reshape(x.shape), rstd


def order_data(rng, m, n, xdt):
    """[m, n] values near 1 among a few near 4096: a square of 2^24 or more absorbs a square
    near 1 that is added to it alone, so each order keeps a different share of the small
    ones."""
    x = rng.uniform(0.5, 1.5, (m, n)) * np.where(rng.random((m, n)) < 0.02, 4096.0, 1.0)
    return (x * rng.choice([-1.0, 1.0], (m, n))).astype(xdt)


def assert_order_seen(rstd, x, g, order, gamma_offset=0.0):
    """rstd is not what another kernel's order gives (so the pick is seen); for N = 128
    ReduceSumMultiN and ReduceSumHalfInterval add the same pairs, which shows nothing."""
    n = g.size
    if ARCH35:
        assert_regbase_seen(rstd, x, g, order, gamma_offset)
        return
    if TRAINING:
        assert_training_seen(rstd, x, g, order)
        return
    if n == 128:
        return
    others = {("lane-blocks",), ("half-interval",)} - {order}
    if order[0] != "slices":
        others.add(("slices", max(16, n // 48 * 16)))
    for other in others:
        got = device_chain(x, g, 1e-6, other, gamma_offset)[1]
        assert not np.array_equal(rstd, got), (order, other)


def assert_regbase_seen(rstd, x, g, order, gamma_offset):
    """Ascend 950: rstd is not the other template's (where that can take the row: split-D
    from one ubFactor on, perf up to 16384 aligned columns) nor ReduceSumHalfInterval's with
    1 / sqrt (up to 128 columns the same sum as perf's: there its Newton-Raphson rstd shows)."""
    n = g.size
    others = [("half-interval",)]
    if order[0] == "perf" and n >= regbase_split_order(x.dtype, g.dtype, n)[2]:
        others.append(regbase_split_order(x.dtype, g.dtype, n))
    if order[0] == "split" and n <= 16384:
        others.append(("perf", -(-n * order[1] // 32) * 32 // order[1]))
    for other in others:
        got = device_chain(x, g, 1e-6, other, gamma_offset)[1]
        assert not np.array_equal(rstd, got), (order, other)


def assert_training_seen(rstd, x, g, order):
    """The training parts: split-D's rstd is neither the whole-reduce-sum kernel's nor the
    other parts' split-D's over the same slices (a 64-lane fold, avg after the sum); the
    whole-reduce-sum's not a split-D's past 64 columns, nor ReduceSumMultiN's past 128 (up
    to there the orders add the same pairs); its FLOAT16 y not the once-rounded one."""
    n = g.size
    if order[0] == "training-slices":
        others = [("half-interval",), ("slices", order[1])]
    else:
        others = ([("lane-blocks",)] if n > 128 else []) + \
            ([("training-slices", -(-n // 2))] if n > 64 else [])
    for other in others:
        got = device_chain(x, g, 1e-6, other)[1]
        assert not np.array_equal(rstd, got), (order, other)
    if order[0] == "whole-reduce" and x.dtype == F16:
        once = device_chain(x, g, 1e-6, ("half-interval",))[0]
        assert not np.array_equal(device_chain(x, g, 1e-6, order)[0], once)


# (x, gamma, N, rows): each side of every boundary of Tiling4RmsNorm's choice; on Ascend 950
# of TilingArch354RmsNorm's (perf up to 12536 FLOAT or 16384 16-bit columns) and of each of
# the perf sum's branches (64, 128, 8192 aligned columns) and split-D's tails (none, up to
# half an ubFactor, more; single chunks after them); on the training parts of the
# whole-reduce-sum kernel (up to 21736 FLOAT or 21728 FLOAT16 columns, a row under 8 or 64
# columns, aligned or not) and of split-D's second and third slice
TRAINING_CASES = [(F32, F32, 7, 16), (F16, F16, 64, 16), (F16, F16, 65, 16),
                  (F32, F32, 300, 16), (F32, F32, 21736, 8), (F32, F32, 21737, 8),
                  (F16, F16, 21728, 8), (F16, F16, 21729, 8), (F32, F32, 25872, 16),
                  (F32, F32, 25873, 16), (F16, F16, 36960, 16), (F16, F16, 36961, 16)]
# split-D's ubFactor by hand: 21744 / 2 (FLOAT; FLOAT16 rounded up to 16), 25872 / 2 and
# 36960 / 2 (the once-reduce columns: 12936 FLOAT, 18480 FLOAT16), 25880 / 3 and 36976 / 3
# rounded up to a block
TRAINING_SLICES = {21737: 10872, 21729: 10880, 25872: 12936, 25873: 8632, 36960: 18480,
                   36961: 12336}
ARCH35_CASES = [(F32, F32, 64, 16), (F16, F16, 65, 16), (BF16, BF16, 128, 16),
                (F32, F32, 129, 64), (F32, F32, 2000, 64), (F16, F16, 8192, 64),
                (F16, F16, 8193, 64), (F32, F32, 12536, 64), (F32, F32, 12537, 64),
                (F16, F16, 16384, 64), (F16, F16, 16385, 64), (BF16, F32, 16384, 16),
                (BF16, F32, 16385, 16), (F16, F32, 20000, 16), (F32, F32, 24576, 16),
                (BF16, BF16, 30011, 16), (F32, F32, 40000, 8)]
ORDER_CASES = in_the_table(ARCH35_CASES if ARCH35 else TRAINING_CASES if TRAINING else [
    (F32, F32, 2000, 64), (F32, F32, 2001, 64), (F16, F16, 2000, 64),
    (F16, F16, 2001, 64), (F32, F32, 10240, 64), (F32, F32, 10241, 64),
    (F16, F16, 12288, 64), (F16, F16, 12289, 64), (BF16, BF16, 30011, 64),
    (BF16, F32, 2000, 64), (BF16, F32, 12176, 64), (F16, F32, 13920, 64),
    (F16, F32, 13921, 64), (F16, F16, 128, 16), (F16, F16, 128, 15),
    (F32, F32, 128, 16)])


@pytest.mark.parametrize("xdt,gdt,n,m", ORDER_CASES,
                         ids=[f"{x}-{g}-{n}x{m}" for x, g, n, m in ORDER_CASES])
def test_kernel_order_bits(arena, xdt, gdt, n, m):
    """rstd and y bit for bit against the chain of the kernel the tiling picks, and not that
    of another kernel (so the pick is seen)."""
    rng = np.random.default_rng(n * 31 + m)
    x, g = order_data(rng, m, n, xdt), rand(rng, (n,), gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    rstd = rstd.reshape(m)
    order = kernel_order(xdt, gdt, n, m)
    if ARCH35:  # each case stands on the side of its boundary it was chosen for
        assert order[0] == ("perf" if n <= (12536 if xdt == F32 else 16384) else "split")
    if TRAINING:
        assert order[0] == ("whole-reduce" if n <= (21736 if xdt == F32 else 21728)
                            else "training-slices")
        assert order[1:] == ((TRAINING_SLICES[n],) if n in TRAINING_SLICES else ())
    want_y, want_r = device_chain(x, g, 1e-6, order)
    assert np.array_equal(rstd.view(np.uint32), want_r.view(np.uint32)), order
    assert np.array_equal(y.view(np.uint8), want_y.view(np.uint8)), order
    assert_order_seen(rstd, x, g, order)


@pytest.mark.parametrize("xdt,gdt", TABLE_PAIRS, ids=[f"{x}-{g}" for x, g in TABLE_PAIRS])
@pytest.mark.parametrize("shape,gdims", [((7, 3, 181), 1), ((5, 6, 40), 2), ((3, 4096), 1),
                                         ((33,), 1)], ids=["181", "6x40", "4096", "1-D"])
def test_numbers_against_float64_reference(arena, xdt, gdt, shape, gdims):
    rng = np.random.default_rng(sum(shape) + gdims)
    x = rand(rng, shape, xdt)
    g = rand(rng, shape[len(shape) - gdims:], gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    exp, mag = reference.rms_norm(x, g), reference.rms_norm_error_scale(x, g)
    assert y.dtype == xdt and rstd.dtype == F32
    reference.assert_close(y, exp[0], mag[0], xdt, "y", rtol=1e-5)
    reference.assert_close(rstd, exp[1], mag[1], F32, "rstd", rtol=1e-5)


@pytest.mark.parametrize("xdt,gdt", TABLE_PAIRS, ids=[f"{x}-{g}" for x, g in TABLE_PAIRS])
def test_y_is_float32_chain_rounded_once(arena, xdt, gdt):
    """The kernel's chain (op_kernel/rms_norm.h): (x * rstd) * gamma in float32, then one
    rounding to x's dtype, to nearest with ties to even; checked bit for bit with the rstd
    the call wrote. The training parts' whole-reduce-sum kernel (rms_norm_whole_reduce_sum.h
    Compute for half) rounds x * rstd to FLOAT16 first and multiplies by gamma in FLOAT16."""
    rng = np.random.default_rng(3)
    x, g = rand(rng, (16, 300), xdt), rand(rng, (300,), gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    t = x.astype(F32) * rstd.reshape(16, 1)
    if TRAINING and xdt == F16:
        t = t.astype(F16).astype(F32)
    want = (t * g.astype(F32)).astype(xdt)
    assert np.array_equal(y.view(np.uint8), want.view(np.uint8))


def test_epsilon_reaches_the_kernel_as_float32(arena):
    """x = 0: rstd = 1 / sqrtf((float)epsilon) exactly (Ascend 950's perf template: the
    Newton-Raphson rstd of it, which differs in the last bit), y = 0 (the vendor's example's
    eps)."""
    y, rstd = call(arena, np.zeros((2, 16), F32), np.ones(16, F32), eps=1e-6)
    assert (y == 0).all()
    plain = np.float32(1) / np.sqrt(np.float32(1e-6))
    want = v2_rstd(np.float32(0), 1e-6, False) if ARCH35 else plain
    assert (rstd == want).all() and (not ARCH35 or want != plain)


def test_vendor_example_values(arena):
    """examples/test_aclnn_rms_norm.cpp: x = gamma = 0..7 twice, rows [2, 16]."""
    v = np.tile(np.arange(8, dtype=F32), 2)
    y, rstd = call(arena, np.stack([v, v]), v.copy())
    exp = reference.rms_norm(np.stack([v, v]), v)
    assert np.allclose(y, exp[0], rtol=1e-6) and np.allclose(rstd, exp[1], rtol=1e-6)


@pytest.mark.parametrize("kinds", [(k,) * 4 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x, g = rand(rng, (6, 4, 37), F16), rand(rng, (4, 37), F16, 0.5, 1.0)
    base = call(arena, x, g)
    got = call(arena, x, g, kinds)
    for a, b in zip(base, got):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(7)
    x, g = rand(rng, (61, 1000), F32), rand(rng, (1000,), F32, 0.5, 1.0)
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, x, g))
    for r in runs[1:]:
        for a, b in zip(runs[0], r):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_empty_x_succeeds_and_writes_nothing(arena):
    """docs/aclnnRmsNorm.md: x, yOut and rstdOut may be empty (gamma may not)."""
    y, rstd = call(arena, np.zeros((0, 8), F32), np.ones(8, F32))
    assert y.shape == (0, 8) and rstd.shape == (0, 1)


def test_nan_propagates_to_its_row(arena):
    """Atlas A2/A3, Ascend 950 (docs/aclnnRmsNorm.md): a NaN input gives NaN outputs (its
    row's sum, so its row's rstd and y); other rows are untouched by it."""
    x = np.ones((2, 8), F32)
    x[1, 5] = np.nan
    y, rstd = call(arena, x, np.ones(8, F32))
    assert np.isfinite(y[0]).all() and np.isnan(rstd[1, 0]) and np.isnan(y[1]).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), xdt=F32, gdt=F32, ydt=None, rdt=F32,
          yshape=None, rshape=None, xacl=None):
    x = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    g = DevView(arena, np.ones(gshape, gdt))
    y = DevView(arena, shape=yshape or shape, dtype=ydt or xdt)
    r = DevView(arena, shape=rshape if rshape is not None else
                rstd_shape(shape, len(gshape)), dtype=rdt)
    return x, g, y, r


def refused(args, code, *words, eps=1e-6):
    return refused_by(phase_one, "aclnnRmsNormGetWorkspaceSize", args, code, *words,
                      eps=eps)


def test_out_pointers_first(arena):
    x, g, y, r = views(arena)
    assert phase_one(None, g, y, r, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(None, g, y, r, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k,name", list(enumerate(["x", "gamma", "yOut", "rstdOut"])))
def test_each_tensor_is_required(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


@pytest.mark.parametrize("case,code,words", [
    (dict(xacl=lib.ACL_INT32), INVALID, ("x dtype ACL_INT32",)),
    (dict(gdt=F16), INVALID, ("gamma dtype FLOAT16", "x's dtype FLOAT")),
    (dict(xdt=F16, gdt=F16, ydt=F32), INVALID, ("yOut dtype FLOAT", "x's dtype FLOAT16")),
    (dict(rdt=F16), INVALID, ("rstdOut dtype FLOAT16", "FLOAT")),
    (dict(shape=(2, 3, 4), gshape=(5,)), TILING, ("gamma shape [5]", "last 1 dims of x")),
    (dict(shape=(4,), gshape=(2, 4)), TILING, ("gamma rank 2 > x rank 1",)),
    (dict(shape=(4, 16), gshape=(0,), rshape=(4, 1)), TILING, ("gamma", "empty")),
    (dict(yshape=(4, 17)), TILING, ("yOut shape [4,17] != x shape [4,16]",)),
    (dict(yshape=(4, 16, 1)), TILING, ("yOut rank 3 != x rank 2",)),
    (dict(rshape=(4, 2)), TILING, ("rstdOut shape [4,2]", "1 or x's 16")),
    (dict(rshape=(1, 1)), TILING, ("rstdOut", "1 elements != 4 rows")),
    (dict(rshape=(4, 1, 1)), TILING, ("rstdOut rank 3 > x rank 2",)),
    (dict(shape=(1,) * 9, gshape=(1,), rshape=(1,)), TILING, ("x rank 9",)),
], ids=["x-int32", "gamma-dtype", "y-dtype", "rstd-dtype", "gamma-shape", "gamma-rank",
        "gamma-empty", "y-shape", "y-rank", "rstd-dim", "rstd-numel", "rstd-rank", "x-rank9"])
def test_refusals_name_the_argument_and_rule(arena, case, code, words):
    refused(views(arena, **case), code, *words)


def test_rstd_of_other_accepted_shapes(arena):
    """The vendor checks each rstdOut dim against x's (1 or equal): a rank-1 rstd of M values
    is accepted, and filled row by row."""
    x, g, y, _ = views(arena)
    r = DevView(arena, shape=(4,), dtype=F32, sentinel=-77.0)
    run(arena, x, g, y, r)
    assert np.allclose(r.read(), 1 / np.sqrt(1 + 1e-6))


def test_negative_epsilon_is_refused(arena):
    refused(views(arena), TILING, "epsilon -1e-06 is negative", eps=-1e-6)
    run(arena, *views(arena), eps=0.0)


def test_dead_tensor_is_refused(arena):
    x, g, y, r = views(arena)
    arena.destroy_tensor(g.handle)
    try:
        refused((x, g, y, r), INVALID, "gamma", "not a live aclTensor")
    finally:
        g.handle = arena.tensor(g.shape, g.dtype, g.strides, g.offset, g.n, g.ptr)


# ---- the part's dtype table -------------------------------------------------------------------

def test_part_dtype_table(arena):
    check_part_dtype_table(PAIRS, BF16_PART,
                           lambda xdt, gdt: phase_one(*views(arena, xdt=xdt, gdt=gdt)))


test_on_other_parts = run_on_parts(other_parts(),
                                   "part_dtype_table or float32_chain or strided or "
                                   "kernel_order or epsilon_reaches")
