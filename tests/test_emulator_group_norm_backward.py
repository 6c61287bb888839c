"""The emulator's aclnnGroupNormBackward through raw calls: phase one's checks, codes and
messages in the order of hicann/ops-nn norm/group_norm_grad/op_host/op_api/
aclnn_group_norm_backward.cpp; the device's numbers against the float64 reference for every
dtype the part takes, and bit for bit against the part's chain written in NumPy: the L0
GroupNormGrad kernel's (op_kernel/group_norm_grad.h, its tiling's modes 0, 1 and 5, its
stage-two order over N) on Atlas A2/A3, the arch35 G and C full-load templates' (binary folds,
their stage two: tests/_device_reduce.py binary_fold_dot, rows_binary_sum) on Ascend 950, the
composite of L0 operators (each
rounding to the data's dtype) on the Atlas training and inference parts; the kernel's
ReduceSum as Atlas A2/A3's count form (tests/_device_reduce.py), the composite's in the
emulator's fixed order (tests/test_emulator_add_layer_norm.py lane_sum); masked
outputs untouched; empty inputs per part; bits independent of layout and thread count; the
other parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_layer_norm import lane_sum
from _device_reduce import binary_fold_dot, fma_f32, reduce_sum_count, rows_binary_sum
from _emu_aclnn import SOC, both_phases_without_a_device, refused_by, run_phase_two
from _part_runs import PARTS, only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnGroupNormBackwardGetWorkspaceSize
P2 = lib.aclnnGroupNormBackward
CALL = "aclnnGroupNormBackwardGetWorkspaceSize"
INNER_NULLPTR = 561103
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
KERNEL = ARCH in (2201, 3510)
DTYPES = [F32, F16, BF16] if KERNEL else [F32, F16]
NAMES = ["gradOut", "input", "mean", "rstd", "gamma", "gradInput", "gradGammaOut",
         "gradBetaOut"]
f = np.float32


def phase_one(*args, ws=True, ex=True):
    return aclnn_phase_one(P1, *args, ws=ws, ex=ex)


def inputs(rng, shape, group, dt, affine=True):
    """dy, x, mean, rstd (those of x, in dt), gamma (or None)."""
    n, c = shape[0], shape[1]
    hw = int(np.prod(shape[2:]))
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(dt)
    dy = rng.standard_normal(shape).astype(dt)
    _, mean, rstd = reference.group_norm(x, None, None, n, c, hw, group)
    g = (rng.standard_normal(c) * 0.5 + 1).astype(dt) if affine else None
    return dy, x, mean.astype(dt), rstd.astype(dt), g


def call(arena, dy, x, mean, rstd, g, group, mask=(True, True, True), kinds=("contig",) * 8,
         sentinel=-77.0):
    """Runs the operator; (gradInput, gradGammaOut, gradBetaOut) read back, None where masked
    (each output starts at the sentinel)."""
    n, c = x.shape[0], x.shape[1]
    hw = int(np.prod(x.shape[2:]))
    ins = [None if v is None else DevView(arena, v, kind=k)
           for v, k in zip((dy, x, mean, rstd, g), kinds)]
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=sentinel) if m else None
            for s, d, k, m in zip((x.shape, (c,), (c,)), (dy.dtype, mean.dtype, mean.dtype),
                                  kinds[5:], mask)]
    run_phase_two(arena, P2, phase_one(*ins, n, c, hw, group, arena.bool_array(mask), *outs))
    return tuple(None if v is None else v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def rsum(v):
    """The composite path's ReduceSum of a float32 vector, in the emulator's fixed order."""
    return lane_sum(np.asarray(v, f).reshape(1, -1))[0]


def csum(v):
    """The kernel's ReduceSum of a float32 vector (Atlas A2/A3's count form)."""
    return reduce_sum_count(np.asarray(v, f).reshape(1, -1))[0]


def rsum_folded(v):
    """The kernel's ReduceSum_template: above 64 values the upper 64-value blocks are added
    onto the lower ones, halving down to 64, then ReduceSum."""
    v = np.asarray(v, f)
    n = v.size
    if n <= 64:
        return csum(v)
    buf, first, start = None, True, 128
    while start >= 1:
        off = start * 64
        if n > off and first:
            buf = v[:off].copy()
            buf[:n - off] = v[off:n] + buf[:n - off]
            n, first = off, False
        elif n > off:
            buf[:off] = buf[off:2 * off] + buf[:off]
            n = off
        start //= 2
    return csum(buf[:64])


def round_ties_away(v, dt):
    """float32 values narrowed as CAST_ROUND does (to nearest, ties away from zero)."""
    if dt == F32:
        return v.astype(f)
    if dt == BF16:
        return reference._round_bfloat16(v.astype(f), True).astype(BF16)
    w = v.astype(F16).astype(np.float64)
    other = 2 * v.astype(np.float64) - w
    tie = (other.astype(F16).astype(np.float64) == other) & (np.abs(other) > np.abs(w)) \
        & (w != v)
    return np.where(tie, other, w).astype(F16)


def fold_rows(rows):
    """reduce_axis_n_WSP2UB's halving adds over rows (one batch)."""
    v = list(rows)
    end = mid = len(v)
    while mid >= 2:
        mid >>= 1
        end -= mid
        for i in range(mid):
            v[i] = v[end + i] + v[i]
        mid = end
    return v[0]


def stage_two(parts, dt, out_dt):
    """dgamma or dbeta from the per-sample partials (N, C) as the kernel combines them
    (shapes here keep the workspace rows in one batch)."""
    n = parts.shape[0]
    zero = np.zeros(parts.shape[1], f)
    if n <= 2:
        v = parts[0] if n == 1 and dt != F32 else zero + parts[0]
        if n == 2:
            v = v + parts[1]
    else:
        ws = [zero + parts[2 * w] + (parts[2 * w + 1] if 2 * w + 1 < n else zero)
              if 2 * w + 1 < n else zero + parts[2 * w] for w in range((n + 1) // 2)]
        if dt == F32:
            h1 = (len(ws) + 1) // 2
            v = (zero + (fold_rows(ws[:h1]) + zero)) + (fold_rows(ws[h1:]) + zero)
        else:
            v = fold_rows(ws) + zero
    return round_ties_away(v, out_dt) if ARCH == 2201 else v.astype(out_dt)


def kernel_chain(dy, x, mean, rstd, g, group, mode):
    """(dx, dgamma, dbeta) as the L0 GroupNormGrad kernel makes them (module doc)."""
    n, c = x.shape[0], x.shape[1]
    hw, d = int(np.prod(x.shape[2:])), x.shape[1] // group
    dt = dy.dtype
    per_block = 32 // dt.itemsize
    X = x.astype(f).reshape(n, group, d, hw)
    DY = dy.astype(f).reshape(n, group, d, hw)
    gam = (np.ones(c, f) if g is None else g.astype(f)).reshape(group, d)
    M, R = mean.astype(f).reshape(n, group), rstd.astype(f).reshape(n, group)
    dx = np.empty((n, group, d, hw), f)
    pg, pb = np.empty((n, group, d), f), np.empty((n, group, d), f)
    for i in range(n):
        for k in range(group):
            m, r = M[i, k], R[i, k]
            xh = X[i, k] * r + (f(-1) * m) * r
            if mode == 5:
                db, dg = DY[i, k, :, 0].copy(), xh[:, 0] * DY[i, k, :, 0]
            else:
                db = np.array([rsum_folded(DY[i, k, j]) for j in range(d)], f)
                dg = np.array([rsum_folded(xh[j] * DY[i, k, j]) for j in range(d)], f)
            pg[i, k], pb[i, k] = dg, db
            c1 = csum(db * gam[k]) / f(d * hw)
            c2 = csum(dg * gam[k]) / f(d * hw)
            for j in range(d):
                gm, dyc, xc = gam[k, j], DY[i, k, j], X[i, k, j]
                if mode == 0 and (j * hw) % per_block == 0:
                    dx[i, k, j] = dyc * (r * gm) - (xh[j] * (r * c2) + r * c1)
                elif mode == 0:
                    a, b = (r * r) * c2, r * c1 - ((m * r) * r) * c2
                    dx[i, k, j] = dyc * (r * gm) - (xc * a + b)
                elif mode == 1:
                    a, b = r * c2, f(-1) * ((m * r) * c2 - c1)
                    dx[i, k, j] = (dyc * gm - (xc * a + b)) * r
                else:
                    dx[i, k, j] = (dyc * gm) * r - (xh[j] * (r * c2) + r * c1)
    out_dt = mean.dtype
    dxr = round_ties_away(dx, dt) if ARCH == 2201 else dx.astype(dt)
    return (dxr.reshape(x.shape), stage_two(pg.reshape(n, c), dt, out_dt),
            stage_two(pb.reshape(n, c), dt, out_dt))


def composite_chain(dy, x, mean, rstd, g, group):
    """(dx, dgamma, dbeta) as the Atlas training and inference parts compose them (module
    doc), each L0 result rounded to the data's dtype."""
    dt = dy.dtype
    rnd = lambda v: np.asarray(v, f).astype(dt).astype(f)  # noqa: E731
    n, c = x.shape[0], x.shape[1]
    hw, d = int(np.prod(x.shape[2:])), c // group
    X = x.astype(f).reshape(n, group, d * hw)
    DY = dy.astype(f).reshape(n, group, d * hw)
    gam = np.repeat((np.ones(c, f) if g is None else g.astype(f)).reshape(group, d), hw, axis=1)
    M, R = mean.astype(f).reshape(n, group), rstd.astype(f).reshape(n, group)
    eps = rnd(f(1e-5))
    dx = np.empty_like(X)
    pg, pb = np.empty((n, c), f), np.empty((n, c), f)
    for i in range(n):
        for k in range(group):
            m, r = M[i, k], R[i, k]
            xh = rnd(rnd(X[i, k] - m) * r)
            prod = rnd(DY[i, k] * xh).reshape(d, hw)
            for j in range(d):
                pg[i, k * d + j] = rnd(rsum(prod[j]))
                pb[i, k * d + j] = rnd(rsum(DY[i, k].reshape(d, hw)[j]))
            gg = rnd(DY[i, k] * gam[k])
            var = rnd(rnd(f(1) / rnd(r * r)) - eps)
            inv = f(1) / np.sqrt(var + f(1e-5))
            ds, do = rsum(gg * ((X[i, k] - m) * inv)), rsum(gg)
            dx[i, k] = (gg - (do + ((X[i, k] - m) * inv) * ds) * (f(1) / f(d * hw))) * inv
    dgamma = rnd(np.array([rsum(pg[:, j]) for j in range(c)], f))
    dbeta = rnd(np.array([rsum(pb[:, j]) for j in range(c)], f))
    return dx.astype(dt).reshape(x.shape), dgamma.astype(dt), dbeta.astype(dt)


def a2_mode(shape, group, dt):
    """The Atlas A2/A3 tiling's stage-one mode (group_norm_grad_tiling.cpp
    CalStage1TilingInfo; UB 196608 bytes): 5 for HxW 1, 0 when a group fits, else 1."""
    hw, d = int(np.prod(shape[2:])), shape[1] // group
    size = np.dtype(dt).itemsize
    per = 32 // size
    up = lambda a: -(-a // per) * per  # noqa: E731
    reserve = 1024 + up(d) * size * 3
    extra = 0 if hw % 8 == 0 or d == 1 else 2 * up(hw) * 4
    fits = 196608 >= reserve + extra and (196608 - reserve - extra) // (up(d * hw) * size * 3)
    return 5 if hw == 1 else 0 if fits else 1


def arch35_mode(shape, group, dt, udt):
    """The Ascend 950 tiling's template (group_norm_grad_tiling_arch35.cpp BlockTiling,
    UbTiling; UB 253952 bytes): 0 when a group fits (G full load), else 1 when a channel's HxW
    does (C full load), 2 when it does not (recompute); 3 stands for the small N x G template,
    which also asks for two N x C tasks a core (the shapes here never reach it)."""
    n, c = shape[0], shape[1]
    hw, d = int(np.prod(shape[2:])), c // group
    tb = np.dtype(dt).itemsize
    up = lambda a, b: -(-a // b) * b  # noqa: E731
    small = n * group <= 16
    reserve = up(d, 8) * 4 * (6 if small else 4) + 64
    if np.dtype(udt).itemsize == 2:
        reserve += up(d, 16) * 2 * (1 if small else 2)
    usable = (253952 - reserve) // 2
    if usable // (up(d * hw, 32 // tb) * tb * 3 + 64) > 0:
        return 0
    ch = usable // (up(hw, 32 // tb) * tb * 3)
    if ch <= 0:
        return 2
    return 3 if small and n * (d // ch) >= 32 and n * c <= 240000 else 1


def arch35_chain(dy, x, mean, rstd, g, group):
    """(dx, dgamma, dbeta) as Ascend 950's G and C full-load templates make them (module doc;
    docs/emulator.md): per channel db = sum(dy), ds = sum(x * dy) on the raw x (binary folds),
    the task's dgamma fma(db, -m, ds) * r; sum1 = sum(ds * gamma), sum2 = sum(db * gamma); C2,
    C3 on the scalar unit; dx = fma(dy, gamma * r, x * C2) + C3; samples 2w and 2w + 1 into
    workspace row w, the rows by the stage-two binary sum; narrowed to even."""
    n, c = x.shape[0], x.shape[1]
    hw, d = int(np.prod(x.shape[2:])), c // group
    X, DY = x.astype(f).reshape(-1, hw), dy.astype(f).reshape(-1, hw)
    db = binary_fold_dot(DY).reshape(n, group, d)
    ds = binary_fold_dot(X, DY).reshape(n, group, d)
    M, R = mean.astype(f).reshape(n, group), rstd.astype(f).reshape(n, group)
    pg = fma_f32(db, -M[..., None], ds) * R[..., None]
    gam = np.broadcast_to((np.ones(c, f) if g is None else g.astype(f)).reshape(group, d),
                          (n, group, d))
    if d == 1:
        s1, s2 = ds[..., 0] * gam[..., 0], db[..., 0] * gam[..., 0]
    else:
        s1 = binary_fold_dot(ds.reshape(-1, d), gam.reshape(-1, d)).reshape(n, group)
        s2 = binary_fold_dot(db.reshape(-1, d), gam.reshape(-1, d)).reshape(n, group)
    s = f(1) / f(d * hw)
    c2 = (((s2 * M + (f(0) - s1)) * R) * R) * R * s
    c3 = (f(0) - c2) * M + (f(0) - s2 * R * s)
    gr = (gam * R[..., None])[..., None]
    dx = fma_f32(DY.reshape(n, group, d, hw), gr,
                 X.reshape(n, group, d, hw) * c2[..., None, None]) + c3[..., None, None]

    def over_n(parts):
        parts = parts.reshape(n, c)
        if n == 1:
            return f(0) + parts[0]
        ws = [f(0) + parts[w] if w + 1 >= n else (f(0) + parts[w]) + parts[w + 1]
              for w in range(0, n, 2)]
        return rows_binary_sum(np.stack(ws))
    out_dt = mean.dtype
    return (dx.astype(dy.dtype).reshape(x.shape), over_n(pg).astype(out_dt),
            over_n(db).astype(out_dt))


def device_chain(dy, x, mean, rstd, g, group):
    udt = mean.dtype
    if ARCH == 3510 and arch35_mode(x.shape, group, dy.dtype, udt) <= 1:
        return arch35_chain(dy, x, mean, rstd, g, group)
    if KERNEL:
        return kernel_chain(dy, x, mean, rstd, g, group, a2_mode(x.shape, group, dy.dtype))
    return composite_chain(dy, x, mean, rstd, g, group)


# ---- numbers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("affine", [True, False], ids=["gamma", "no_gamma"])
def test_numbers_against_float64_reference(arena, dt, affine):
    rng = np.random.default_rng(3 + affine)
    dy, x, mean, rstd, g = inputs(rng, (3, 12, 5, 7), 4, dt, affine)
    got = call(arena, dy, x, mean, rstd, g, 4)
    args = (dy, x, mean, rstd, g, 3, 12, 35, 4)
    exp = reference.group_norm_backward(*args)
    mag = reference.group_norm_backward_error_scale(*args)
    for a, e, m in zip(got, exp, mag):
        assert a.dtype == dt and a.size == e.size
        assert reference.max_error_ratio(a.reshape(e.shape), e, m, dt) <= 1


# (shape, group): mode 0 with block-aligned and unaligned channels, mode 5 (HxW 1), mode 1
# (a group beyond the UB: 4 channels of 4100), N 1, 2 and 5 (stage two's paths)
CHAIN_CASES = [((2, 6, 5), 2), ((5, 8, 3, 4), 4), ((1, 16, 1), 4), ((3, 12), 3),
               ((2, 4, 4100), 1), ((1, 3, 70), 1)]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,group", CHAIN_CASES, ids=str)
def test_outputs_follow_the_part_chain_bit_for_bit(arena, dt, shape, group):
    rng = np.random.default_rng(sum(shape) + group)
    args = inputs(rng, shape, group, dt, affine=shape[0] != 3)
    got = call(arena, *args, group)
    exp = device_chain(*args, group)
    for a, e, name in zip(got, exp, ("dx", "dgamma", "dbeta")):
        assert a.dtype == e.dtype and a.size == e.size, name
        assert (bits(a.reshape(e.shape)) == bits(e)).all(), name


# Ascend 950 (shape, group, data dtype, statistics dtype, template, the outputs the former
# chain gets wrong there): a channel's binary fold past 64 values (HxW 300: P 256), the group
# sums' fold (160 channels: P 128), HxW 1, the C full-load template (4 x 4100 FLOAT: P 4096,
# 64 partials), the stage-two binary sum over 6, 10 and 19 workspace rows (N 11, 20, 37), FLOAT
# statistics with 16-bit data and BF16 ones with BF16 data. (FLOAT16 and BF16 outputs on the
# other shapes: test_outputs_follow_the_part_chain_bit_for_bit.)
ALL = ("dx", "dgamma", "dbeta")
ARCH35_CASES = [((3, 4, 300), 2, F32, F32, 0, ALL),
                ((2, 160, 3), 1, F32, F32, 0, ("dx", "dgamma")),
                ((2, 160, 3), 1, F16, F32, 0, ("dgamma",)),
                ((4, 12, 1), 3, F32, F32, 0, ("dx", "dgamma")),
                ((2, 4, 4100), 1, F32, F32, 1, ALL), ((11, 6, 5), 3, F16, F32, 0, ("dgamma",)),
                ((20, 8, 70), 2, BF16, F32, 0, ("dx", "dgamma")),
                ((20, 8, 70), 2, BF16, BF16, 0, ("dx",)), ((37, 4, 9), 2, F32, F32, 0, ALL)]


@only_where(ARCH == 3510)
@pytest.mark.parametrize("shape,group,dt,udt,mode,former_wrong", ARCH35_CASES, ids=str)
def test_ascend950_full_load_sums_bit_for_bit(arena, shape, group, dt, udt, mode,
                                               former_wrong):
    """Ascend 950's G and C full-load templates bit for bit against their NumPy chain (channel
    and group binary folds, the stage-two binary sum); the former chain (the Atlas A2/A3
    arithmetic with ties to even) gives other bits in the outputs named."""
    assert arch35_mode(shape, group, dt, udt) == mode
    rng = np.random.default_rng(sum(shape) + group)
    dy, x, mean, rstd, g = inputs(rng, shape, group, dt, affine=shape[0] != 4)
    mean, rstd = mean.astype(f).astype(udt), rstd.astype(f).astype(udt)
    g = None if g is None else g.astype(f).astype(udt)
    got = call(arena, dy, x, mean, rstd, g, group)
    exp = arch35_chain(dy, x, mean, rstd, g, group)
    former = kernel_chain(dy, x, mean, rstd, g, group, a2_mode(shape, group, dt))
    for a, e, o, name in zip(got, exp, former, ALL):
        assert a.dtype == e.dtype and a.size == e.size, name
        assert (bits(a.reshape(e.shape)) == bits(e)).all(), name
        assert (bits(o.reshape(e.shape)) != bits(e)).any() == (name in former_wrong), name


def test_strided_views_give_the_contiguous_bits(arena):
    args = inputs(np.random.default_rng(5), (3, 8, 6), 2, F16)
    want = call(arena, *args, 2)
    for kinds in (("strided",) * 8, ("offset",) * 8):
        got = call(arena, *args, 2, kinds=kinds)
        for a, e in zip(got, want):
            assert (bits(a) == bits(e)).all()


def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs(np.random.default_rng(6), (40, 16, 9), 4, F32)
    before = lib.aclemuGetNumThreads()
    try:
        lib.aclemuSetNumThreads(1)
        one = call(arena, *args, 4)
        lib.aclemuSetNumThreads(4)
        four = call(arena, *args, 4)
    finally:
        lib.aclemuSetNumThreads(before)
    for a, e in zip(one, four):
        assert (bits(a) == bits(e)).all()


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False),
                                  (False, False, True), (False, True, True)], ids=str)
def test_masked_outputs_are_not_written(arena, mask):
    """A false outputMask entry: its output may be NULL, and what is requested is what the
    full call gives."""
    args = inputs(np.random.default_rng(7), (2, 6, 5), 3, F32)
    full = call(arena, *args, 3)
    got = call(arena, *args, 3, mask=mask)
    for a, e, m in zip(got, full, mask):
        assert (a is not None) == m
        if m:
            assert (bits(a) == bits(e)).all()


def test_an_empty_input_per_part(arena):
    """N 0: nothing runs off regbase (the outputs keep their contents); on Ascend 950 the
    empty-tensor kernel zeroes gradGammaOut and gradBetaOut."""
    x = np.zeros((0, 4, 3), F32)
    stats = np.zeros((0,), F32)
    _, dg, db = call(arena, x, x, stats, stats, np.ones(4, F32), 2, sentinel=5.0)
    want = 0.0 if ARCH == 3510 else 5.0
    assert (dg == want).all() and (db == want).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(2, 4, 3), group=2, dt=F32, sdt=None, over=None, acl=None,
          mask=(True, True, True), gamma=True, nch=None):
    """The arguments (tensors and values, outputMask last before the outputs); ``over``
    replaces shapes by name, ``acl`` dtypes by index; ``nch``: (N, C, HxW) as passed."""
    sdt = sdt or dt
    over = dict(over or {})
    n, c = shape[0], shape[1]
    hw = int(np.prod(shape[2:]))
    shapes = {"gradOut": shape, "input": shape, "mean": (n, group), "rstd": (n, group),
              "gamma": (c,), "gradInput": shape, "gradGammaOut": (c,), "gradBetaOut": (c,)}
    shapes.update(over)
    dts = [dt, dt, sdt, sdt, sdt, dt, sdt, sdt]
    acl = acl or {}
    t = []
    for i, name in enumerate(NAMES):
        if name == "gamma" and not gamma:
            t.append(None)
        elif i < 5:
            t.append(DevView(arena, np.ones(shapes[name], dts[i]), acl_dtype=acl.get(i)))
        else:
            t.append(DevView(arena, shape=shapes[name], dtype=dts[i], acl_dtype=acl.get(i)))
    nn, cc, hh = nch or (n, c, hw)
    m = mask if mask is None or not isinstance(mask, tuple) else arena.bool_array(mask)
    return t[:5] + [nn, cc, hh, group, m] + t[5:]


def refused(args, code, *words):
    return refused_by(phase_one, CALL, args, code, *words)


def accepted(args):
    rc, _, ex = phase_one(*args)  # its size: tests/test_emulator_workspace_size_gn.py
    assert rc == OK, (rc, last_msg())
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    args = views(arena)
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k", [0, 1, 2, 3], ids=lambda k: NAMES[k])
def test_each_required_input(arena, k):
    args = views(arena, mask=None)      # before the mask's own check
    args[k] = None
    refused(args, NULLPTR, f"{NAMES[k]} is NULL")


def test_gamma_is_optional(arena):
    accepted(views(arena, gamma=False))


def test_output_mask_rules(arena):
    """CheckMaskNotNull: outputMask NULL, not of 3 entries, or a requested output NULL:
    all 161002."""
    refused(views(arena, mask=None), INVALID, "outputMask is NULL")
    args = views(arena)
    args[9] = arena.bool_array((True, True))
    refused(args, INVALID, "outputMask length 2 != 3")
    for k in range(3):
        mask = tuple(i == k for i in range(3))
        args = views(arena, mask=mask)
        args[10 + k] = None
        refused(args, INVALID, f"outputMask[{k}] is true but {NAMES[5 + k]} is NULL")
        args = views(arena, mask=tuple(not m for m in mask))
        args[10 + k] = None
        accepted(args)


def test_part_dtype_table(arena):
    """gradOut FLOAT, FLOAT16, and BF16 on Atlas A2/A3 and Ascend 950 only."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        if dt in DTYPES:
            assert rc == OK, (dt, last_msg())
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "gradOut dtype BF16 is not supported on" in last_msg()


def test_mixed_precision_statistics(arena):
    """FLOAT mean, rstd, gamma, gradGammaOut and gradBetaOut with FLOAT16 data: Ascend 950's
    CheckMixPrecisionDtype takes them; the other parts want gradOut's dtype throughout."""
    args = views(arena, dt=F16, sdt=F32)
    if ARCH == 3510:
        accepted(args)
    else:
        refused(args, INVALID, "mean dtype FLOAT must be FLOAT16")


@pytest.mark.parametrize("case,words", [
    (dict(acl={1: lib.ACL_FLOAT16}), ("input dtype FLOAT16 must be FLOAT",)),
    (dict(acl={3: lib.ACL_FLOAT16}), ("rstd dtype FLOAT16 must be FLOAT",)),
    (dict(acl={4: lib.ACL_FLOAT16}), ("gamma dtype FLOAT16 must be FLOAT",)),
    (dict(acl={5: lib.ACL_FLOAT16}), ("gradInput dtype FLOAT16 must be FLOAT",)),
    (dict(acl={6: lib.ACL_FLOAT16}), ("gradGammaOut dtype FLOAT16 must be FLOAT",)),
    (dict(acl={0: lib.ACL_INT32}), ("gradOut dtype ACL_INT32 is not supported",)),
], ids=["input", "rstd", "gamma", "gradInput", "gradGammaOut", "int32"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@pytest.mark.parametrize("case,words", [
    (dict(group=0, over={"mean": (2, 0), "rstd": (2, 0)}), ("group 0 must be greater",)),
    (dict(group=3, over={"mean": (2, 3), "rstd": (2, 3)}), ("C 4 must be divisible by group 3",)),
    (dict(nch=(2, 4, 4)), ("gradOut [2,4,3] must hold N * C * HxW = 32",)),
    (dict(over={"input": (2, 4, 4)}), ("input [2,4,4] must hold N * C * HxW = 24",)),
    (dict(over={"mean": (2, 1)}), ("mean [2,1] must hold N * group = 4",)),
    (dict(over={"rstd": (4, 2)}), ("rstd [4,2] must hold N * group = 4",)),
    (dict(over={"gamma": (2, 2), "gradGammaOut": (2, 2), "gradBetaOut": (2, 2)}), ()),
    (dict(over={"gamma": (5,)}), ("gamma [5] must hold C = 4",)),
    (dict(over={"gradInput": (2, 12)}), ("gradInput", "must equal input's shape",)),
    (dict(over={"gradGammaOut": (2, 2)}), ("gradGammaOut", "must equal gamma's shape",)),
    (dict(over={"gradBetaOut": (5,)}), ("gradBetaOut", "must equal gamma's shape",)),
    (dict(shape=(1,) * 6 + (2, 4), group=1, nch=(1, 2, 4),
          over={"mean": (1, 1), "rstd": (1, 1), "gamma": (2,), "gradGammaOut": (2,),
                "gradBetaOut": (2,)}), ()),
], ids=["group0", "divisible", "count", "input", "mean", "rstd", "gamma2d", "gamma", "gradInput",
        "gradGammaOut", "gradBetaOut", "rank8"])
def test_shape_and_attribute_rules(arena, case, words):
    """CheckAttr then CheckShape, 161002; element counts, not shapes (a [2, 2] gamma of C
    values passes, gradGammaOut then takes its shape; N, C and HxW need not be input's
    dims). aclCreateTensor makes no tensor above rank 8, so CheckShape's rank rule is
    never reached."""
    args = views(arena, **case)
    if words:
        refused(args, INVALID, *words)
    else:
        accepted(args)


@only_where(ARCH == 2201)   # the limits hold on Atlas A2/A3 only (their run or child)
def test_atlas_a2_channel_limits(arena):
    """C / group <= 8000 and C <= 240000 on DAV_2201 (checked on the values passed, before
    the shapes)."""
    refused(views(arena, shape=(1, 8001, 1), group=1, over={"mean": (1, 1), "rstd": (1, 1)}),
            INVALID, "C / group = 8001 must be at most 8000")
    refused(views(arena, nch=(1, 240040, 1), group=40), INVALID,
            "C 240040 must be at most 240000")


@only_where(ARCH == 3510)   # Ascend 950's empty-tensor kernel (its own run or its child)
def test_ascend950_empty_input_copies_dgamma_and_dbeta_whatever_the_mask(arena):
    """The empty-tensor path copies dgamma and dbeta out unconditionally: a NULL gradGammaOut
    (masked off) fails the copy (561103)."""
    args = views(arena, shape=(0, 4, 3), over={"mean": (0, 2), "rstd": (0, 2)},
                 mask=(True, False, True))
    args[11] = None
    refused(args, INNER_NULLPTR, "gradGammaOut is NULL")


# ---- what the L0 ops refuse in phase one (561103) ----------------------------------------------

NO_MASK = (False, False, False)


def size_without_outputs(args):
    """Phase one passes; its workspace size (contiguous tensors, gamma given: a graph of the
    kernel alone, or nothing where its tiling failed and no launcher was added)."""
    rc, ws, ex = phase_one(*args)
    assert rc == OK, (rc, last_msg())
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


def refused_or_accepted(args, refuses, *words):
    if refuses:
        refused(args, INNER_NULLPTR, *words)
    else:
        accepted(args)


@pytest.mark.parametrize("case,words", [
    (dict(over={"mean": (4,)}), ()),
    (dict(over={"mean": (4,), "rstd": (2, 2, 1)}), ()),
    (dict(over={"rstd": (4,)}), ("rstd [4] has no axis 2",)),
    (dict(group=4, shape=(2, 4, 3), over={"mean": (4, 2), "rstd": (4, 2)}),
     ("mean [4,2] unsqueezed at axis 2 cannot be expanded to", "[2,4,1]")),
    (dict(over={"rstd": (1, 4)}), ("rstd [1,4] unsqueezed",)),
    (dict(over={"mean": (2, 2, 1), "rstd": (2, 2, 1)}), ("mean [2,2,1] unsqueezed",)),
    (dict(shape=(1, 2, 3), group=1, over={"mean": (), "rstd": ()}), ("mean [] has no axis 2",)),
], ids=["mean1d", "mean1d-rstd3d", "rstd1d", "transposed", "rstd-row", "rank3", "scalar"])
def test_l0_refusal_composite_gradgamma_stats(arena, case, words):
    """Atlas training and inference: gradGammaOut's graph unsqueezes a mean that is not 1-D
    (and its rstd) at axis 2 and expands both to [N, group, C / group]: only [N, group]
    broadcasts (ops-math UnsqueezeNd, Expand). Without gradGammaOut, and on the kernel's
    parts, any shape of N * group values passes."""
    refused_or_accepted(views(arena, **case), bool(words) and not KERNEL, *words)
    accepted(views(arena, mask=(True, False, True), **case))


def a2_batch_parts(n, c, group, f32, cores=48):
    """group_norm_grad_tiling.cpp CalStage2TilingInfo/ComputeAllocUBStage2 for N > 2, in its
    unsigned arithmetic: the UB (196608 bytes) less 1024, halved; 0 fails the tiling."""
    def div_ceil(a, b):
        return (a - 1) // b + 1
    tasks = n * group
    per = div_ceil(tasks, cores)
    used = (tasks - 1) // per + 1
    avail = (196608 - 1024) // 2
    if f32:
        cast = div_ceil(div_ceil(c, used // 2), 64) * 64
        avail, counts = max(avail - cast * 4, 0), div_ceil(div_ceil(n, 2), 2)
    else:
        cast = div_ceil(div_ceil(c, used), 64) * 64
        avail, counts = (avail - cast * 6) % (1 << 64), div_ceil(n, 2)
    return min(avail // (cast * 4), counts)


@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_l0_refusal_a2_stage_two_room(arena, dt):
    """Atlas A2/A3, N > 2: FLOAT's stage two sums C / (used cores / 2) channels a core; past
    about 12224 its UB holds no batch and the tiling fails (561103 for any requested output;
    none requested passes). N 3, group 33, C 239976 (7272 a group): 33 tasks on 33 cores."""
    n, group, c = 3, 33, 239976
    stats = {"mean": (n, group), "rstd": (n, group)}
    args = views(arena, shape=(n, c, 1), group=group, dt=dt, over=stats)
    fails = ARCH == 2201 and a2_batch_parts(n, c, group, dt == F32) == 0
    assert (ARCH != 2201 or dt != F32) or fails  # the case is the failing one
    refused_or_accepted(args, fails, "stage two has no UB")
    ws = size_without_outputs(views(arena, shape=(n, c, 1), group=group, dt=dt, over=stats,
                                    mask=NO_MASK))
    assert (ws == 0) == (fails or not KERNEL), ws


def test_l0_refusal_ascend950_channels_per_group(arena):
    """C / group above 8000: CheckAttr's 161002 on Atlas A2/A3; on Ascend 950 the arch35
    tiling's ParamsCheck fails (561103, none requested passes); the composite takes it."""
    stats = {"mean": (1, 1), "rstd": (1, 1)}
    args = views(arena, shape=(1, 8001, 1), group=1, over=stats)
    if ARCH == 2201:
        refused(args, INVALID, "C / group = 8001 must be at most 8000")
        return
    refused_or_accepted(args, ARCH == 3510, "C / group = 8001 must be at most 8000")
    assert size_without_outputs(views(arena, shape=(1, 8001, 1), group=1, over=stats,
                                      mask=NO_MASK)) == 0


def test_l0_refusal_ascend950_absent_gamma_with_float_stats(arena):
    """Ascend 950, FLOAT16 data with FLOAT mean and rstd and no gamma: the op_api fills gamma
    in FLOAT16, and the arch35 tiling wants mean, rstd and gamma of one dtype (561103; none
    requested passes). The other parts refuse FLOAT stats with FLOAT16 data (161002)."""
    args = views(arena, dt=F16, sdt=F32, gamma=False)
    if ARCH != 3510:
        refused(args, INVALID, "mean dtype FLOAT must be FLOAT16")
        return
    refused(args, INNER_NULLPTR, "mean dtype FLOAT must be gradOut's dtype FLOAT16")
    accepted(views(arena, dt=F16, sdt=F32, gamma=False, mask=NO_MASK))
    accepted(views(arena, dt=F16, sdt=F32))


C4 = {"gamma": (4,), "gradGammaOut": (4,), "gradBetaOut": (4,)}


@pytest.mark.parametrize("case,words", [
    (dict(shape=(0, 4, 3), over={"gradOut": (0,), "input": (0,), "gradInput": (0,)}),
     ("gradOut [0] has rank below 2",)),
    (dict(shape=(0, 4, 3), over={"input": (4, 0, 3), "gradInput": (4, 0, 3)}),
     ("input [4,0,3] must be of gradOut",)),
    (dict(shape=(0, 8, 3), nch=(0, 4, 6), over=C4),
     ("gamma's C 4 must equal gradOut [0,8,3]'s dim 1",)),
    (dict(shape=(0, 3, 4), nch=(0, 4, 3), over=C4), ("dim 1 (3) must split into group 2",)),
    (dict(shape=(2, 4, 0), nch=(0, 4, 3), over={"mean": (0, 2), "rstd": (0, 2)}),
     ("must be gradOut [2,4,0]'s dim 0 x group",)),
    (dict(shape=(0, 4, 3), dt=F16, sdt=F32, gamma=False),
     ("mean dtype FLOAT must be an absent gamma's fill",)),
    (dict(shape=(0, 4, 3)), ()),
    (dict(shape=(2, 4, 0)), ()),
], ids=["rank1", "input", "C", "divisible", "N", "dtype", "n0", "hw0"])
def test_l0_refusal_ascend950_empty_kernel(arena, case, words):
    """Ascend 950's empty input: the empty-tensor kernel's tiling reads gradOut as given
    (rank 2 or more, input of its shape, dim 1 as C split into group groups of at most 8000,
    dim 0 as N, mean of gamma's dtype) and the op_api checks its result whatever the mask
    (561103). Off Ascend 950 nothing runs for an empty input."""
    if case.get("dt") == F16 and ARCH != 3510:
        refused(views(arena, **case), INVALID, "mean dtype FLOAT must be FLOAT16")
        return
    refused_or_accepted(views(arena, **case), bool(words) and ARCH == 3510, *words)
    if words and ARCH == 3510:
        refused(views(arena, mask=NO_MASK, **case), INNER_NULLPTR, *words)


def test_l0_refusal_dims_past_checkshape(arena):
    """CheckShape compares int64 products: negative C and HxW (N x C x HxW still positive), or
    products that wrap, pass it. An empty call then runs nothing off Ascend 950, and on Ascend
    950 meets its empty-tensor kernel's rules (a 2**62 N whose products wrap to 0 passes them;
    a negative C is not gradOut's dim 1). A call that would compute is refused: Ascend 950's
    tiling refuses C <= 0, the other kernels' handling is not in the sources (561103)."""
    stats = {"mean": (1, 1), "rstd": (1, 1)}
    negative = views(arena, shape=(1, 4), nch=(1, -2, -2), group=1, gamma=False, over=stats,
                     mask=(True, False, False))
    refused(negative, INNER_NULLPTR, "negative C and HxW", "not modelled")
    wraps = views(arena, shape=(1, 4, 1), group=4, nch=(2**62 + 1, 4, 1))
    refused(wraps, INNER_NULLPTR, "int64 products that wrap", "not modelled")
    accepted(views(arena, shape=(0, 4, 1), group=4, nch=(2**62, 4, 1)))
    empty_negative = views(arena, shape=(0, 4, 3), nch=(0, -2, 3), group=1, gamma=False,
                           over={"mean": (0, 1), "rstd": (0, 1)}, mask=(True, False, False))
    refused_or_accepted(empty_negative, ARCH == 3510, "gamma's C -2 must equal")


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    gi = args[10]
    arena.destroy_tensor(gi.handle)
    try:
        refused(args, INVALID, "gradInput", "not a live aclTensor")
    finally:
        gi.handle = arena.tensor(gi.shape, gi.dtype, gi.strides, gi.offset, gi.n, gi.ptr)


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}),
    "part_dtype_table or mixed_precision or bit_for_bit or reference or empty or limits "
    "or l0_refusal")


@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_an_empty_input_without_a_kernel_needs_no_current_device(arena, null_stream):
    """Off Ascend 950 an empty gradOut or input returns before any L0 op (nothing written,
    gradGammaOut and gradBetaOut [C] included), and on Ascend 950 an empty gamma (C == 0):
    both phases succeed on a thread that never set a device, with a NULL stream or a given
    one. Ascend 950's empty input with C > 0 runs the empty-tensor kernel: 361001."""
    stream = ffi.NULL if null_stream else arena.stream
    cases = [((0, 4, 3), 2), ((2, 4, 0), 2), ((2, 0, 3), 1)]
    workspace = arena.malloc(32 << 20)  # above the empty-tensor kernel's 16 MiB
    for shape, group in cases:
        kernel = ARCH == 3510 and shape[1] > 0
        rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, views(arena, shape, group),
                                                        stream, workspace)
        assert (rc, rc2) == (OK, 361001 if kernel else OK), (shape, msg)
        if kernel:
            assert msg.startswith("aclnnGroupNormBackward: ") and "no device" in msg, msg
        else:
            assert ws == 0
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
