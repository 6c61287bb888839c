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
from _device_reduce import half_interval_sum, lane_blocks_sum
from _emu_aclnn import (SOC, check_part_dtype_table, refused_by, rstd_shape,
                        run_phase_two)
from _part_runs import other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

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


def needs_bf16(*dts):
    if BF16 in dts and not BF16_PART:
        pytest.skip(f"{SOC} has no BF16 (the part's table)")
    if dts[:2] == (F16, F32) and not BF16_PART:
        pytest.skip(f"{SOC}: the table pairs FLOAT16 x with FLOAT16 gamma only")


# ---- numbers ---------------------------------------------------------------------------------

# The parts whose kernels' sum orders are modelled: Atlas A2/A3 (DAV_2201; the tilings see the
# A2 parts as SocVersion ASCEND910B, the A3 ones as ASCEND910_93) and the inference parts.
A2 = SOC.startswith("Ascend910B") and BF16_PART
DAV_2201 = A2 or SOC.startswith("Ascend910_9")
INFERENCE = SOC.startswith("Ascend310P")
A2_UB = 196608 - 1024  # the A2/A3 UB less the tiling's UB_USED


def split_d_slice(n, ub):
    """Tiling4RmsNorm's split-D ub_factor: n in ceil(n / ub) tiles rounded up to 16, stepped
    down by 16 while n leaves a tail of 1..15."""
    tiles = -(-n // ub)
    s = -(-n // (tiles * 16)) * 16
    while n % s and n % s < 16:
        s -= 16
    return s


def kernel_order(xdt, gdt, n, m, gemma=False):
    """The kernel op_host/rms_norm_tiling.cpp picks on this part, as its row sum's order:
    ("lane-blocks",), ("half-interval",) or ("slices", columns per slice)."""
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


def row_sums(order, sq):
    if order[0] == "lane-blocks":
        return lane_blocks_sum(sq)
    if order[0] == "half-interval":
        return half_interval_sum(sq)
    acc = np.zeros(sq.shape[0], F32)
    for c in range(0, sq.shape[1], order[1]):
        acc = acc + half_interval_sum(sq[:, c:c + order[1]])
    return acc


def device_chain(x, g, eps, order, gamma_offset=0.0):
    """(y, rstd) as the kernel computes them, every step one float32 rounding: the squares
    summed in the kernel's order, rstd = 1 / sqrt(sum * avg + eps), y = (x * rstd) * gamma
    rounded once to x's dtype."""
    n = g.size
    x2 = x.astype(F32).reshape(-1, n)
    s = row_sums(order, x2 * x2)
    f = np.float32
    rstd = f(1) / np.sqrt(s * (f(1) / f(n)) + f(eps))
    gf = g.astype(F32).reshape(n) + f(gamma_offset)
    return ((x2 * rstd[:, None]) * gf).astype(x.dtype).reshape(x.shape), rstd


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
    if n == 128:
        return
    others = {("lane-blocks",), ("half-interval",)} - {order}
    if order[0] != "slices":
        others.add(("slices", max(16, n // 48 * 16)))
    for other in others:
        got = device_chain(x, g, 1e-6, other, gamma_offset)[1]
        assert not np.array_equal(rstd, got), (order, other)


def needs_modelled_order():
    if not (DAV_2201 or INFERENCE):
        pytest.skip(f"{SOC}: its kernels' sum orders are not modelled (docs/emulator.md)")


# (x, gamma, N, rows): each side of every boundary of Tiling4RmsNorm's choice
ORDER_CASES = [(F32, F32, 2000, 64), (F32, F32, 2001, 64), (F16, F16, 2000, 64),
               (F16, F16, 2001, 64), (F32, F32, 10240, 64), (F32, F32, 10241, 64),
               (F16, F16, 12288, 64), (F16, F16, 12289, 64), (BF16, BF16, 30011, 64),
               (BF16, F32, 2000, 64), (BF16, F32, 12176, 64), (F16, F32, 13920, 64),
               (F16, F32, 13921, 64), (F16, F16, 128, 16), (F16, F16, 128, 15),
               (F32, F32, 128, 16)]


@pytest.mark.parametrize("xdt,gdt,n,m", ORDER_CASES,
                         ids=[f"{x}-{g}-{n}x{m}" for x, g, n, m in ORDER_CASES])
def test_kernel_order_bits(arena, xdt, gdt, n, m):
    """rstd and y bit for bit against the chain of the kernel the tiling picks, and not that
    of another kernel (so the pick is seen)."""
    needs_modelled_order()
    needs_bf16(xdt, gdt)
    rng = np.random.default_rng(n * 31 + m)
    x, g = order_data(rng, m, n, xdt), rand(rng, (n,), gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    rstd = rstd.reshape(m)
    order = kernel_order(xdt, gdt, n, m)
    want_y, want_r = device_chain(x, g, 1e-6, order)
    assert np.array_equal(rstd.view(np.uint32), want_r.view(np.uint32)), order
    assert np.array_equal(y.view(np.uint8), want_y.view(np.uint8)), order
    assert_order_seen(rstd, x, g, order)


@pytest.mark.parametrize("xdt,gdt", PAIRS, ids=[f"{x}-{g}" for x, g in PAIRS])
@pytest.mark.parametrize("shape,gdims", [((7, 3, 181), 1), ((5, 6, 40), 2), ((3, 4096), 1),
                                         ((33,), 1)], ids=["181", "6x40", "4096", "1-D"])
def test_numbers_against_float64_reference(arena, xdt, gdt, shape, gdims):
    needs_bf16(xdt, gdt)
    rng = np.random.default_rng(sum(shape) + gdims)
    x = rand(rng, shape, xdt)
    g = rand(rng, shape[len(shape) - gdims:], gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    exp, mag = reference.rms_norm(x, g), reference.rms_norm_error_scale(x, g)
    assert y.dtype == xdt and rstd.dtype == F32
    reference.assert_close(y, exp[0], mag[0], xdt, "y", rtol=1e-5)
    reference.assert_close(rstd, exp[1], mag[1], F32, "rstd", rtol=1e-5)


@pytest.mark.parametrize("xdt,gdt", PAIRS, ids=[f"{x}-{g}" for x, g in PAIRS])
def test_y_is_float32_chain_rounded_once(arena, xdt, gdt):
    """The kernel's chain (op_kernel/rms_norm.h): (x * rstd) * gamma in float32, then one
    rounding to x's dtype, to nearest with ties to even; checked bit for bit with the rstd
    the call wrote."""
    needs_bf16(xdt, gdt)
    rng = np.random.default_rng(3)
    x, g = rand(rng, (16, 300), xdt), rand(rng, (300,), gdt, 0.5, 1.0)
    y, rstd = call(arena, x, g)
    want = ((x.astype(F32) * rstd.reshape(16, 1)) * g.astype(F32)).astype(xdt)
    assert np.array_equal(y.view(np.uint8), want.view(np.uint8))


def test_epsilon_reaches_the_kernel_as_float32(arena):
    """x = 0: rstd = 1 / sqrtf((float)epsilon) exactly, y = 0 (the vendor's example's eps)."""
    y, rstd = call(arena, np.zeros((2, 16), F32), np.ones(16, F32), eps=1e-6)
    assert (y == 0).all()
    assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-6))).all()


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
                                   "kernel_order")
