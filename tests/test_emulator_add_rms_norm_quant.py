"""The emulator's aclnnAddRmsNormQuant through raw calls: phase one's checks, codes and messages
in the op_api's order (hicann/ops-nn norm/add_rms_norm_quant/op_host/op_api/
aclnn_add_rms_norm_quant.cpp; the part's kernels, op_host/add_rms_norm_quant_def.cpp; the
stricter choices in docs/emulator.md) per part, and the device's numbers (op_kernel/
add_rms_norm_quant*.h): bit for bit against a NumPy model of the kernels' float32 chain
(normal, single-N and split-D rows; FLOAT16 and BF16; one and two outputs, with and without
zero points), within one quantization step of the float64 reference, xOut's value,
saturation at the INT8 limits, y2 left unwritten without scales2; the vendor's op_api UT
cases replayed (all Ascend 950's: their arguments pass every check on every part). Ascend
950 (op_kernel/arch35): the float sum normed unrounded, the full-load kernel's Newton-Raphson
rstd beside the others' 1 / sqrt, every dtype combination of its definition, divMode false,
INT8, FLOAT8 and HIFLOAT8 results bit for bit and within a step of the float64 reference.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from _emu_aclnn import passes, refusal_check, refused_by, run_phase_two, SOC
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_rms_norm_quant import (cancelling_eps, hif8_rank, order_rows, order_scale,
                                         v2_rstd)
from _device_reduce import (binary_sum, half_interval_sum, lane_blocks_sum, regbase_row_sum,
                            split_sums)
from acl_py import dtypes

P1 = lib.aclnnAddRmsNormQuantGetWorkspaceSize
P2 = lib.aclnnAddRmsNormQuant
CALL = "aclnnAddRmsNormQuantGetWorkspaceSize"
INNER_NULLPTR = 561103
FIND_KERNEL = 561003
I8, I32 = np.dtype(np.int8), np.dtype(np.int32)
A2 = SOC != "Ascend910B" and SOC.startswith(("Ascend910B", "Ascend910_93"))
P310 = SOC.startswith("Ascend310P")
REGBASE = SOC.startswith("Ascend950")
TRAINING = not (A2 or P310 or REGBASE)   # the Atlas training series
# (x dtype, scales dtype, zero points dtype) with a kernel on the part
REGBASE_COMBOS = [(F16, F32, I32), (BF16, BF16, BF16), (BF16, F32, I32), (F32, F32, F32),
                  (F16, F16, F16), (F16, F32, F32), (BF16, F32, F32)]
COMBOS = ([(F16, F32, I32), (BF16, BF16, BF16), (BF16, F32, I32)] if A2 else
          [(F16, F32, I32)] if P310 else REGBASE_COMBOS if REGBASE else [])
FP8 = {"e4m3fn": (lib.ACL_FLOAT8_E4M3FN, np.dtype(ml_dtypes.float8_e4m3fn)),
       "e5m2": (lib.ACL_FLOAT8_E5M2, np.dtype(ml_dtypes.float8_e5m2))}
INT_DT = {I8: lib.ACL_INT8, I32: lib.ACL_INT32, np.dtype(np.int16): lib.ACL_INT16}
SPLIT_N = 12300   # beyond the single-N UB factor (12224): split-D rows


def view(arena, values=None, **kw):
    dt = np.dtype(kw.get("dtype") if values is None else np.asarray(values).dtype)
    if dt in INT_DT and kw.get("acl_dtype") is None:
        kw["acl_dtype"] = INT_DT[dt]
    return DevView(arena, values, **kw)


def phase_one(ts, axis=-1, eps=1e-6, div_mode=True, ws=True, ex=True):
    x1, x2, g, s1, s2, z1, z2, y1, y2, xo = ts
    return aclnn_phase_one(P1, x1, x2, g, s1, s2, z1, z2, axis, eps, div_mode, y1, y2, xo,
                           ws=ws, ex=ex)


def read_int(v):
    out = np.empty_like(v.storage)
    v.arena.d2h(out, v.ptr)
    inside = np.zeros(v.n, bool)
    v.host_view(inside)[...] = True
    assert np.array_equal(out[~inside], v.initial[~inside]), "written outside the view"
    return v.host_view(out).copy()


def inputs(rng, shape, dt, sdt, zdt, dual=True, zero_points=True, scale=40.0):
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    s1 = (1.0 / scale * (1 + 0.25 * rng.random(n))).astype(sdt)
    z1 = rng.integers(-3, 4, n).astype(zdt) if zero_points else None
    s2 = (0.5 * s1.astype(F32)).astype(sdt) if dual else None
    z2 = (-rng.integers(-3, 4, n)).astype(zdt) if dual and zero_points else None
    return x1, x2, g, s1, s2, z1, z2


def call(arena, args, kinds=("contig",) * 10, eps=1e-6, div_mode=True, y_acl=None):
    """Runs the operator (y of the ACL dtype y_acl, INT8 by default; its bytes read as int8);
    returns (y1, y2 or None where not written, x, y2 as read)."""
    x1 = args[0]
    views = [None if a is None else view(arena, a, kind=k) for a, k in zip(args, kinds)]
    vy1 = view(arena, shape=x1.shape, dtype=I8, kind=kinds[7], sentinel=-77, acl_dtype=y_acl)
    vy2 = view(arena, shape=x1.shape, dtype=I8, kind=kinds[8], sentinel=-77, acl_dtype=y_acl)
    vx = view(arena, shape=x1.shape, dtype=x1.dtype, kind=kinds[9], sentinel=-7)
    run_phase_two(arena, P2, phase_one(views + [vy1, vy2, vx], eps=eps, div_mode=div_mode))
    y2 = read_int(vy2)
    return read_int(vy1), (None if args[4] is None else y2), vx.read(), y2


# ---- the NumPy model of the kernels' float32 chain ------------------------------------------

def lane_sum(t):
    """Row sums of float32 t [M, n] in the emulator's former fixed order (16 lanes, folded),
    which the order tests assert gives other bits than each kernel's order."""
    m, n = t.shape
    acc = np.zeros((m, 16), F32)
    full = n // 16 * 16
    for i in range(0, full, 16):
        acc += t[:, i:i + 16]
    acc[:, :n - full] += t[:, full:]
    for s in (8, 4, 2, 1):
        acc[:, :s] += acc[:, s:2 * s]
    return acc[:, 0]


def to_int8(t):
    """RoundFloat2Int8: the nearest integer, ties to even, clamped to [-128, 127]; NaN 0."""
    return np.where(np.isnan(t), 0, np.clip(np.rint(np.nan_to_num(t)), -128, 127)).astype(I8)


def full_load_950(n, xdt, sdt, zdt, s2, z1, z2):
    """Ascend 950's tiling (add_rms_norm_quant_tiling_arch35.cpp CalFullLoadBaseM): whether
    the full-load kernel takes rows of n elements (the UB of 253952 bytes, 32-byte blocks)."""
    if n > 16384:
        return False
    xs, qs = np.dtype(xdt).itemsize, np.dtype(sdt).itemsize
    zs = np.dtype(zdt).itemsize if zdt is not None else 0
    al, b8 = -(-n // (32 // xs)) * (32 // xs), -(-n // 32) * 32
    power = 1 << ((al - 1).bit_length() - 1)
    vcadd = -(-(-(-power // 64)) // 32) * 32
    nz = (z1 is not None) + (z2 is not None)
    last = 253952 - al * xs - (2 if s2 is not None else 1) * al * qs - nz * al * zs - 256
    ys = 2 if s2 is not None or z2 is not None else 1
    per_row = 6 * al * xs + al * 4 + 2 * ys * b8 + 4 + vcadd * 4
    return last // per_row >= 1


def ub_total_950(n, xdt, sdt, s2, z1, z2, split):
    """Ascend 950's CalUBTotalSize (add_rms_norm_quant_tiling_arch35.cpp) for one row of n:
    x1, x2, xOut padded to 512 bytes, the reduce buffer, gamma, scales and zero points at
    the scales' size, y1 (and y2), the rstd block; the split kernel's level and temp buffers."""
    xs, qs = np.dtype(xdt).itemsize, np.dtype(sdt).itemsize
    ra, b8 = -(-n // (512 // xs)) * (512 // xs), -(-n // 32) * 32
    nq = sum(t is not None for t in (s2, z1, z2))
    total = (3 * ra * xs + -(-(ra // 128) // 8) * 8 * 4 + -(-n // (32 // xs)) * (32 // xs) * xs
             + (1 + nq) * -(-n // (32 // qs)) * 32 + b8 * (2 if s2 is not None or z2 is not None
                                                           else 1) + 32)
    return total + (3 * 4 * 64 * 4 + 64 * 4 if split else 0)


def kernel_950(n, xdt, sdt, zdt, s2, z1, z2):
    """Ascend 950's kernel for rows of n (SetTilingParams): ("perf",) (full_load_950),
    ("normal",) while one row fits the UB, else ("split", powerSplit, powerLoop): powerSplit
    doubled from 512 bytes of x while twice it is at most n and fits, powerLoop the largest
    power of two with powerLoop * powerSplit <= n."""
    if full_load_950(n, xdt, sdt, zdt, s2, z1, z2):
        return ("perf",)
    if ub_total_950(n, xdt, sdt, s2, z1, z2, False) <= 253952:
        return ("normal",)
    p, loop = 512 // np.dtype(xdt).itemsize, 1
    while p * 2 <= n and ub_total_950(p * 2, xdt, sdt, s2, z1, z2, True) <= 253952:
        p *= 2
    while loop * 2 * p <= n:
        loop *= 2
    return ("split", p, loop)


def regbase_sum(sq, bx, kernel):
    """The row sums of the squares sq [M, N] in the order of Ascend 950's kernel (kernel_950;
    bx: x's element size): the binary add, ReduceSumRstd over the row, or the split levels."""
    if kernel[0] == "perf":
        return binary_sum(sq)
    if kernel[0] == "normal":
        return regbase_row_sum(sq, bx)
    return split_sums(sq, bx, kernel[1], kernel[2])


def regbase_values(x1, x2, g, eps=1e-6, kernel=("perf",), old_order=False):
    """Ascend 950's float32 v on [M, N] rows: s = x1 + x2 in float32 (not rounded), var =
    sum(s * s) * avg in the order of the kernel (regbase_sum), rstd by the full-load kernel's
    Newton-Raphson or 1 / sqrt(var + eps), v = (s * rstd) * gamma."""
    f = np.float32
    s = x1.astype(F32) + x2.astype(F32)
    avg = f(1) / f(s.shape[-1])
    full_load = kernel[0] == "perf"
    with np.errstate(all="ignore"):   # a zero row: 1 / sqrt(0), 0 * inf
        sq = s * s
        var = (lane_sum(sq) if old_order else regbase_sum(sq, x1.itemsize, kernel)) * avg
        if full_load:
            rstd = np.array([v2_rstd(v, eps, True) for v in var], F32)
        else:
            rstd = f(1) / np.sqrt(var + f(eps))
        return (s * rstd[:, None]) * g.astype(F32)


def regbase_quant(v, scales, zp, div_mode=True, fdt=None):
    """Ascend 950's quantization of v: v / scales (v * scales) + zero points in float32; to
    INT8 (nearest, ties to even, saturated; NaN 0), to the FLOAT8 dtype fdt (nearest even,
    saturated at its largest finite value) or, fdt "hifloat8", to HIFLOAT8
    (dtypes.float32_to_hifloat8) as bytes."""
    with np.errstate(all="ignore"):
        t = v / scales.astype(F32) if div_mode else v * scales.astype(F32)
        if zp is not None:
            t = t + zp.astype(F32)
        if fdt is None:
            return to_int8(t)
        if isinstance(fdt, str):
            return dtypes.float32_to_hifloat8(t).view(I8)
        big = float(ml_dtypes.finfo(fdt).max)
        return np.clip(t, -big, big).astype(fdt).view(I8)


def device_chain(x1, x2, g, s1, s2, z1, z2, eps=1e-6, single_n=False, slice_len=0,
                 div_mode=True, fdt=None, old_order=False):
    """The kernels' numbers on [M, N] rows: (y1, y2 or None, x). The squares times avg summed
    by ReduceSumFP32 (64 lane accumulators: the normal kernel, BF16 single-N, each split-D
    slice, whose BlockReduceSum steps are taken as one repeat's tree) or ReduceSumHalfInterval
    (FLOAT16 single-N); old_order: every sum in lane_sum's order."""
    f = np.float32
    dt = x1.dtype
    s = x1.astype(F32) + x2.astype(F32)
    x = s.astype(dt)                      # xOut: FLOAT16 add, or BF16 CAST_RINT
    if REGBASE:
        z = z1 if z1 is not None else z2
        kernel = kernel_950(x1.shape[-1], dt, s1.dtype, None if z is None else z.dtype,
                            s2, z1, z2)
        v = regbase_values(x1, x2, g, eps, kernel, old_order)
        y2 = None if s2 is None else regbase_quant(v, s2, z2, div_mode, fdt)
        return regbase_quant(v, s1, z1, div_mode, fdt), y2, x
    xn = x.astype(F32) if dt == F16 or single_n else s
    n = xn.shape[-1]
    avg, e = f(1) / f(n), f(eps)
    sq = (xn * xn) * avg
    total = lane_sum if old_order else half_interval_sum if single_n and dt == F16 \
        else lane_blocks_sum
    if slice_len:
        ss = np.zeros(xn.shape[0], F32)
        for c in range(0, n, slice_len):
            ss += total(sq[:, c:c + slice_len])
    else:
        ss = total(sq)
    rstd = f(1) / np.sqrt(ss + e)
    v = xn * rstd[:, None]
    if dt == F16:
        v = (v.astype(F16) * g).astype(F32)
    else:
        v = v * g.astype(F32)

    def quant(scales, zp):
        t = v / scales.astype(F32)
        if zp is not None:
            t = t + zp.astype(F32)
        return to_int8(t)

    y2 = quant(s2, z2) if s2 is not None else None
    return quant(s1, z1), y2, x


def assert_matches(got, args, **variant):
    y1, y2, x = device_chain(*args, **variant)
    assert np.array_equal(got[0], y1)
    assert np.array_equal(got[2].view(np.uint8), x.view(np.uint8))
    if y2 is None:
        assert got[1] is None and (got[3] == -77).all(), "y2 written without scales2"
    else:
        assert np.array_equal(got[1], y2)
    exp = reference.add_rms_norm_quant(*args)
    for k in (0, 1):
        if exp[k] is not None:
            assert np.max(np.abs(got[k].astype(np.float64) - exp[k])) <= reference.QUANT_STEP
    return y1


# ---- numbers -----------------------------------------------------------------------------------

# ops-nn norm/add_rms_norm_quant/op_host/add_rms_norm_quant_def.cpp has no ascend910: the tests
# of the kernel's work are defined where it has a combination (the refusal elsewhere:
# test_parts_without_a_kernel; the parts with the kernel run these)
where_it_runs = only_where(bool(COMBOS))


def combo_ids(c):
    return "-".join({F16: "f16", BF16: "bf16", F32: "f32", I32: "i32"}[d] for d in c)


# the part's combinations only: one it lacks is no case (test_no_kernel_for_the_combination
# checks Atlas A2/A3's refusal; the other parts run theirs, test_on_other_parts)
@where_it_runs
@pytest.mark.parametrize("combo", COMBOS, ids=combo_ids)
@pytest.mark.parametrize("m,n,variant", [
    (7, 181, {"single_n": True}), (3, 1024, {"single_n": True}),
    (200, 64, {}), (2, SPLIT_N, {"slice_len": 6160})], ids=["181", "1024", "normal", "splitd"])
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_chain_bits_and_reference(arena, combo, m, n, variant, dual):
    """Bit for bit the kernels' chain (single-N, normal and split-D rows: BF16's norm over the
    rounded sum in single-N only); xOut the sum in x1's dtype; y2 only with scales2; within
    one quantization step of the float64 reference."""
    rng = np.random.default_rng(m * n)
    args = inputs(rng, (m, n), *combo, dual=dual)
    variant = dict(variant)
    if dual and variant.get("slice_len"):
        # with scales2 (and both zero points) the tiling's split-D ubFactor is the UB less
        # 2560 bytes over 22 + 18 bytes a column, in 32-element steps (CalcModeAndUbFactor)
        variant["slice_len"] = (196608 - 1024 - 2560) // (22 + 18) // 32 * 32
    if variant.get("single_n"):
        variant["single_n"] = not P310  # the single-N kernel is not built for Atlas inference
    y1 = assert_matches(call(arena, args), args, **variant)
    assert len(np.unique(y1)) > 20


def split_slice(n):
    """Split-D's slice without scales2 (add_rms_norm_quant_tiling.cpp): n in ceil(n / 7680)
    tiles, rounded up to 16."""
    tiles = -(-n // 7680)
    return -(-n // (tiles * 16)) * 16


# (combo, rows, N, variant) each side of the tiling's kernel boundaries without scales2: the
# single-N kernel (one row per core: FLOAT16's ReduceSumHalfInterval, BF16's ReduceSumFP32 over
# the rounded sum) up to 12224 columns, then split-D; with several rows per core the normal
# kernel up to 8192 columns, then split-D (slices of ReduceSumFP32 added in order)
ORDER_CASES = [c for c in [
    (0, 8, 1000, {"single_n": True}), (0, 8, 12224, {"single_n": True}),
    (0, 8, 12225, {"slice_len": split_slice(12225)}), (0, 200, 1000, {}), (0, 200, 8192, {}),
    (0, 64, 8193, {"slice_len": split_slice(8193)}), (1, 8, 1000, {"single_n": True}),
    (1, 200, 8192, {}), (1, 64, 8193, {"slice_len": split_slice(8193)})]
    if not REGBASE and c[0] < len(COMBOS) and not (P310 and c[3].get("single_n"))]


@only_where(bool(ORDER_CASES))   # Atlas A2/A3 and inference parts (Ascend 950's: below)
@pytest.mark.parametrize("k,m,n,variant", ORDER_CASES,
                         ids=[f"{combo_ids(COMBOS[k])}-{n}x{m}" for k, m, n, _ in ORDER_CASES])
def test_kernel_order_bits(arena, k, m, n, variant):
    """Each row's sum of squares in the order of the kernel the tiling picks: y1 bit for bit,
    and not what the emulator's former 16-lane order gives (so the order is seen)."""
    xdt, sdt, _ = COMBOS[k]
    rng = np.random.default_rng(n * 13 + m)
    x1 = order_rows(rng, m, n, xdt, big=6144.0)
    eps = cancelling_eps(x1) if n <= 1024 else 1e-6   # the tiling checks no epsilon
    g = rng.uniform(0.5, 1.5, n).astype(xdt)
    s1 = np.full(n, order_scale(x1, sdt, eps)[0], sdt)
    args = (x1, np.zeros_like(x1), g, s1, None, None, None)
    got = call(arena, args, eps=eps)
    y1 = device_chain(*args, eps=eps, **variant)[0]
    assert np.array_equal(got[0], y1)
    assert not np.array_equal(got[0], device_chain(*args, eps=eps, **variant, old_order=True)[0])


# Ascend 950's full-load kernel (binary add) each side of its sum's branches (64, 128, 8192
# columns) up to its UB limit (10544 FLOAT16 beside FLOAT scales, 6664 FLOAT)
REGBASE_ORDER_CASES = [(0, 1000, 65), (0, 64, 129), (0, 8, 8192), (0, 8, 8193), (0, 8, 10544),
                       (3, 8, 6664)]


@only_where(REGBASE)
@pytest.mark.parametrize("k,m,n", REGBASE_ORDER_CASES,
                         ids=[f"{combo_ids(REGBASE_COMBOS[k])}-{n}" for k, _, n in
                              REGBASE_ORDER_CASES])
def test_regbase_full_load_order_bits(arena, k, m, n):
    """The full-load kernel's sum (CalculateSquareReduceSum's binary add): y1 bit for bit, and
    not what the former 16-lane order gives."""
    xdt, sdt, zdt = REGBASE_COMBOS[k]
    assert full_load_950(n, xdt, sdt, zdt, None, None, None)
    rng = np.random.default_rng(n * 17 + m)
    x1 = order_rows(rng, m, n, xdt)
    g = rng.uniform(0.5, 1.5, n).astype(xdt)
    eps = cancelling_eps(x1) if n <= 1024 else 1e-6
    s1 = np.full(n, order_scale(x1, sdt, eps)[0], sdt)
    args = (x1, np.zeros_like(x1), g, s1, None, None, None)
    got = call(arena, args, eps=eps)
    assert np.array_equal(got[0], device_chain(*args, eps=eps)[0])
    assert not np.array_equal(got[0], device_chain(*args, eps=eps, old_order=True)[0])


# Ascend 950's normal kernel (ReduceSumRstd over the row) and split kernel (powerSplit chunks,
# levels) each side of their boundaries: FLOAT16 x beside FLOAT scales full-load up to 10544,
# normal up to 19456, split beyond (powerSplit 16384: a tail up to half of it, one past half,
# two main chunks); FLOAT x full-load to 6664, normal to 12032, then split (powerSplit 8192)
REGBASE_SPLIT_CASES = [(0, 8, 10545, ("normal",)), (0, 4, 19456, ("normal",)),
                       (0, 4, 19457, ("split", 16384, 1)), (0, 2, 25000, ("split", 16384, 1)),
                       (0, 2, 40000, ("split", 16384, 2)), (3, 8, 6665, ("normal",)),
                       (3, 4, 12032, ("normal",)), (3, 4, 12033, ("split", 8192, 1))]


@only_where(REGBASE)
@pytest.mark.parametrize("k,m,n,kernel", REGBASE_SPLIT_CASES,
                         ids=[f"{combo_ids(REGBASE_COMBOS[k])}-{n}" for k, _, n, _ in
                              REGBASE_SPLIT_CASES])
def test_regbase_normal_and_split_order_bits(arena, k, m, n, kernel):
    """The normal kernel's sum (norm_common's ReduceSumRstd over the row padded to 512 bytes)
    and the split kernel's (ReduceSumRstd per powerSplit chunk, the 256-entry levels): the
    tiling's kernel as the model derives it, y1 and xOut bit for bit, and y1 not what the
    former 16-lane order gives."""
    xdt, sdt, zdt = REGBASE_COMBOS[k]
    assert kernel_950(n, xdt, sdt, zdt, None, None, None) == kernel
    rng = np.random.default_rng(n * 19 + m)
    x1 = order_rows(rng, m, n, xdt)
    g = rng.uniform(0.5, 1.5, n).astype(xdt)
    s1 = np.full(n, order_scale(x1, sdt)[0], sdt)
    args = (x1, np.zeros_like(x1), g, s1, None, None, None)
    got = call(arena, args)
    assert_matches(got, args)
    assert not np.array_equal(got[0], device_chain(*args, old_order=True)[0])


@where_it_runs
def test_zero_points_are_optional_and_zero_points2_needs_scales2(arena):
    rng = np.random.default_rng(3)
    dt, sdt, zdt = COMBOS[0]
    x1, x2, g, s1, s2, z1, z2 = inputs(rng, (4, 96), dt, sdt, zdt)
    for args in ((x1, x2, g, s1, s2, None, None), (x1, x2, g, s1, s2, z1, None),
                 (x1, x2, g, s1, s2, None, z2)):
        assert_matches(call(arena, args), args)
    # without scales2, zeroPoints2 has no effect and y2 is not written
    got = call(arena, (x1, x2, g, s1, None, z1, z2))
    assert_matches(got, (x1, x2, g, s1, None, z1, None))


@where_it_runs
def test_saturates_and_nan_is_zero(arena):
    rng = np.random.default_rng(4)
    args = list(inputs(rng, (3, 64), *COMBOS[0], scale=400.0))
    got = call(arena, tuple(args))
    assert got[0].min() == -128 and got[0].max() == 127
    assert_matches(got, tuple(args))
    args[0] = args[0].copy()
    args[0][1, 7] = np.nan
    got = call(arena, tuple(args))
    assert (got[0][1] == 0).all() and (got[1][1] == 0).all()
    y1, y2, _ = device_chain(*args)
    assert np.array_equal(got[0], y1) and np.array_equal(got[1], y2)


# FLOAT16 x off Ascend 950 (no FLOAT16 rounding there): elsewhere no test
@only_where(F16 in [c[0] for c in COMBOS] and not REGBASE)
def test_float16_rounds_before_and_after_gamma(arena):
    """x1 + x2 = 1 in every column: rstd ~ 1, y = half(half(1 * rstd) * gamma); gamma 100.53
    is 100.5 in float16, which the scale 1 and ties to even take to 100, where the float64
    value (100.4997...) also rounds to 100 but 100.5 + zero point 1 goes to 102 (even)."""
    x1 = np.full((1, 32), 0.5, F16)
    g = np.full(32, 100.53, F16)
    s = np.ones(32, F32)
    args = (x1, x1.copy(), g, s, s.copy(), None, np.ones(32, I32))
    got = call(arena, args)
    assert (got[0] == 100).all() and (got[1] == 102).all()
    assert_matches(got, args)


@where_it_runs
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    rng = np.random.default_rng(5)
    args = inputs(rng, (6, 40), *COMBOS[0])
    base = call(arena, args)
    got = call(arena, args, kinds=(kind,) * 10)
    for a, b in zip(base[:3], got[:3]):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(6)
    args = inputs(rng, (61, 300), *COMBOS[0])
    runs = []
    for n in (1, 3, 8):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, args)[0])
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


@where_it_runs
def test_rank_2_gamma_over_a_rank_3_x(arena):
    rng = np.random.default_rng(7)
    dt, sdt, zdt = COMBOS[0]
    x1, x2, g, s1, s2, z1, z2 = inputs(rng, (4, 48), dt, sdt, zdt)
    shaped = (x1.reshape(4, 6, 8), x2.reshape(4, 6, 8), g.reshape(6, 8), s1.reshape(6, 8),
              s2.reshape(6, 8), z1.reshape(6, 8), z2.reshape(6, 8))
    got = call(arena, shaped)
    y1, y2, x = device_chain(x1, x2, g, s1, s2, z1, z2, single_n=not P310)
    assert np.array_equal(got[0].reshape(4, 48), y1)
    assert np.array_equal(got[2].reshape(4, 48).view(np.uint8), x.view(np.uint8))
    assert np.array_equal(got[1].reshape(4, 48), y2)


# ---- phase one ---------------------------------------------------------------------------------

class Args:
    """Valid views for phase one (FLOAT16 x [4, 32], FLOAT scales, INT32 zero points, INT8 y),
    replaced one at a time."""

    NAMES = ("x1", "x2", "gamma", "scales1", "scales2", "z1", "z2", "y1", "y2", "x")

    def __init__(self, arena, n=32):
        self.arena = arena
        self.v = {"x1": self.make((4, n), F16), "x2": self.make((4, n), F16),
                  "gamma": self.make((n,), F16), "scales1": self.make((n,), F32),
                  "scales2": self.make((n,), F32), "z1": self.make((n,), I32),
                  "z2": self.make((n,), I32), "y1": self.make((4, n), I8),
                  "y2": self.make((4, n), I8), "x": self.make((4, n), F16)}
        self.div_mode = True

    def make(self, shape, dt, acl_dtype=None):
        return view(self.arena, shape=shape, dtype=dt, acl_dtype=acl_dtype)

    def call(self, ws=True, ex=True):
        return phase_one([self.v[k] for k in self.NAMES], div_mode=self.div_mode, ws=ws,
                         ex=ex)


expect = refusal_check(CALL)


@where_it_runs
def test_valid_arguments_pass(arena):
    passes(Args(arena))
    a = Args(arena)
    for k in ("scales2", "z1", "z2"):
        a.v[k] = None
    passes(a)


def test_null_out_pointers_come_first(arena):
    a = Args(arena)
    a.v["x1"] = None
    for kw, name in (({"ws": False}, "workspaceSize"), ({"ex": False}, "executor")):
        rc, _, _ = a.call(**kw)
        msg = last_msg()
        assert rc == NULLPTR and msg.startswith(CALL + ": " + name), msg


@pytest.mark.parametrize("name,c_name", [("x1", "x1"), ("x2", "x2"), ("gamma", "gamma"),
                                         ("scales1", "scales1"), ("y1", "y1Out"),
                                         ("y2", "y2Out"), ("x", "xOut")])
def test_each_required_tensor(arena, name, c_name):
    a = Args(arena)
    a.v[name] = None
    expect(a, NULLPTR, c_name, "NULL")


def test_nulls_come_before_dtypes(arena):
    a = Args(arena)
    a.v["x1"] = a.make((4, 32), I8)
    a.v["x"] = None
    expect(a, NULLPTR, "xOut is NULL")


@pytest.mark.parametrize("name,dt,words", [
    ("x1", I8, ("x1 dtype INT8",)),
    ("gamma", I32, ("gamma dtype INT32",)),
    ("scales1", I8, ("scales1 dtype",)),
    ("scales2", I32, ("scales2Optional dtype",)),
    ("z1", I8, ("zeroPoints1Optional dtype INT8",)),
    ("z2", I8, ("zeroPoints2Optional dtype INT8",)),
    ("y1", I32, ("y1Out dtype INT32",)),
    ("y2", np.dtype(np.int16), ("y2Out dtype",)),
    ("x", I8, ("xOut dtype INT8",)),
])
def test_dtype_lists_every_part(arena, name, dt, words):
    """One list on every part (CheckDtypeValid), in the op_api's order."""
    a = Args(arena)
    a.v[name] = a.make(a.v[name].shape, dt)
    expect(a, INVALID, *words, "not supported")


def test_y2_dtype_must_be_y1s(arena):
    a = Args(arena)
    a.v["y2"] = a.make((4, 32), I8, acl_dtype=lib.ACL_HIFLOAT8)
    expect(a, INVALID, "y2Out dtype", "y1Out's dtype INT8")


@pytest.mark.parametrize("name,shape,words", [
    ("x1", (1,) * 9, ("x1 rank 9",)),
    ("scales1", (), ("scales1 rank 0",)),
    ("z2", (1,) * 9, ("zeroPoints2Optional rank 9",)),
    ("y2", (), ("y2Out rank 0",)),
])
def test_ranks(arena, name, shape, words):
    a = Args(arena)
    a.v[name] = a.make(shape, a.v[name].dtype)
    expect(a, INVALID, *words)


def test_ranks_come_before_the_docs_relations(arena):
    a = Args(arena)
    a.v["x2"] = a.make((4, 16), F16)     # a docs relation
    a.v["x"] = a.make((1,) * 9, F16)     # the code's rank check
    expect(a, INVALID, "xOut rank 9")


@pytest.mark.parametrize("name,shape,dt,words", [
    ("x2", (4, 32), BF16, ("x2 dtype BF16", "x1's dtype")),
    ("x2", (2, 32), F16, ("x2 shape [2,32]", "x1's shape")),
    ("gamma", (32,), BF16, ("gamma dtype BF16",)),
    ("gamma", (4, 4, 32), F16, ("gamma shape", "trailing dims")),
    ("gamma", (16,), F16, ("gamma shape [16]", "trailing dims")),
    ("scales1", (1,), F32, ("scales1 shape [1]", "gamma's shape")),
    ("scales2", (32,), BF16, ("scales2Optional dtype BF16", "scales1's dtype")),
    ("z1", (16,), I32, ("zeroPoints1Optional shape [16]", "scales1's shape")),
    ("z2", (32,), F32, ("zeroPoints2Optional dtype FLOAT", "zeroPoints1Optional's")),
])
def test_stricter_docs_relations(arena, name, shape, dt, words):
    """The docs' relations nothing in the code checks (the kernel reads numCol values of
    every per-channel tensor): refused, 161002 (docs/emulator.md)."""
    a = Args(arena)
    a.v[name] = a.make(shape, dt)
    expect(a, INVALID, *words)


def test_div_mode_false_is_refused_where_the_docs_say_true_only(arena):
    a = Args(arena)
    a.div_mode = False
    if A2 or P310:
        expect(a, INVALID, "divMode false")
    elif REGBASE:
        passes(a)  # the docs: true and false there
    else:
        expect(a, FIND_KERNEL, "not supported on")


def test_empty_tensors_succeed_with_nothing_launched(arena):
    """An empty x1 (and so x2, gamma's trailing view of it): success, the op_api returns
    before the L0 op on every part, whatever its kernels; y1Out and xOut of any shape (no
    copy compares them). An empty y2Out beside a non-empty x1, where the vendor returns as
    well and computes nothing, is refused (stricter: the docs' y2Out of x1's shape)."""
    a = Args(arena, n=0)
    passes(a)
    a.v["y1"], a.v["x"] = a.make((3,), I8), a.make((2, 2), F16)
    passes(a)
    a = Args(arena)
    a.v["y2"] = a.make((4, 0), I8)
    expect(a, INVALID, "y2Out shape [4,0]", "x1's shape")


@only_where(A2)   # Atlas A2/A3's combinations
@pytest.mark.parametrize("change,words", [
    ({"x1": F32, "x2": F32, "gamma": F32, "x": F32}, ("x1 FLOAT",)),
    ({"scales1": F16, "scales2": F16}, ("scales1 FLOAT16",)),
    ({"z1": BF16, "z2": BF16}, ("zero points BF16",)),
    ({"y1": "hif8", "y2": "hif8"}, ("y HIFLOAT8",)),
])
def test_no_kernel_for_the_combination(arena, change, words):
    """The op_api's lists take these, the part's definition has no kernel: the device's
    phase one passes (the L0 op discards the launcher's status), the emulator refuses
    (561003, stricter)."""
    a = Args(arena)
    for k, dt in change.items():
        if dt == "hif8":
            a.v[k] = a.make(a.v[k].shape, I8, acl_dtype=lib.ACL_HIFLOAT8)
        else:
            a.v[k] = a.make(a.v[k].shape, dt)
    expect(a, FIND_KERNEL, "not supported on", "no kernel", *words)


@where_it_runs
@pytest.mark.parametrize("name,shape,dt,words", [
    ("y1", (2, 32), I8, ("y1Out shape [2,32]", "ViewCopy")),
    ("y2", (4, 16), I8, ("y2Out shape [4,16]", "ViewCopy")),
    ("x", (4, 32), F32, ("xOut dtype FLOAT", "ViewCopy")),
    ("x", (32, 4), F16, ("xOut shape [32,4]", "ViewCopy")),
])
def test_view_copies_of_the_results(arena, name, shape, dt, words):
    a = Args(arena)
    a.v[name] = a.make(shape, dt)
    expect(a, INNER_NULLPTR, *words)


def test_y2_shape_without_scales2_is_the_docs_rule(arena):
    """Without scales2 the op_api copies nothing into y2Out and compares its shape with
    nothing: the docs' rule (x1's shape) refuses another one, 161002 (stricter)."""
    a = Args(arena)
    a.v["scales2"] = None
    a.v["y2"] = a.make((1,), I8)
    expect(a, INVALID, "y2Out shape [1]", "x1's shape")


@only_where(TRAINING)   # no ascend910 in add_rms_norm_quant_def.cpp; the others have one
def test_parts_without_a_kernel(arena):
    expect(Args(arena), FIND_KERNEL, "not supported on", "no kernel")


@only_where(P310)   # the Atlas inference parts' 32-byte rows
def test_atlas_inference_rows_of_32_bytes(arena):
    expect(Args(arena, n=16), INVALID, "under 32 bytes")
    a = Args(arena)
    a.v["x1"], a.v["x2"], a.v["gamma"], a.v["x"] = (a.make(a.v[k].shape, BF16)
                                                    for k in ("x1", "x2", "gamma", "x"))
    a.v["scales1"], a.v["scales2"] = a.make((32,), BF16), a.make((32,), BF16)
    expect(a, FIND_KERNEL, "x1 BF16")


# ---- the vendor's op_api UT cases (tests/ut/op_host/op_api/test_aclnn_add_rms_norm_quant.cpp) -

def _ut(n, y, s2=True, z1=True, z2=True):
    """A UT case's tensors (every one FLOAT16 but y): x1, x2 [8, n]; gamma, scales, zero
    points [n] (scales2, zeroPoints1, zeroPoints2 NULL where false); y1, y2 [8, n] of dtype
    y; x [8, n]."""
    row, ch = ([8, n], "f16", "ND"), ([n], "f16", "ND")
    return (row, row, ch, ch, ch if s2 else None, ch if z1 else None, ch if z2 else None,
            ([8, n], y, "ND"), ([8, n], y, "ND"), row)


UT_CASES = [  # (name, tensors); every case expects ACL_SUCCESS on the UT's part (Ascend 950)
    ("ascend950PR_9589_case_dyn_001", _ut(64, "i8", z1=False, z2=False)),
    ("ascend950PR_9589_case_stc_001", _ut(64, "i8")),
    ("ascend950PR_9589_case_dyn_002", _ut(16, "f8e5m2")),
    ("ascend950PR_9589_case_stc_002", _ut(64, "f8e5m2")),
    ("ascend950PR_9589_case_dyn_003", _ut(16, "f8e4m3fn")),
    ("ascend950PR_9589_case_stc_003", _ut(64, "f8e4m3fn")),
    ("ascend950PR_9589_case_dyn_004", _ut(16, "hif8")),
    ("ascend950PR_9589_case_stc_004", _ut(64, "hif8")),
    ("ascend950PR_zeroPoints2_only_no_scales2", _ut(64, "i8", s2=False, z1=False)),
]


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    """Every case passes the op_api's checks (and the docs' relations) on every part; then
    the kernel step answers: on Ascend 950 (the UT's part) ACL_SUCCESS; every other part has
    no kernel for FLOAT16 scales and zero points (561003)."""
    _, specs = case
    ts = [ut_tensor(arena, s) for s in specs]
    run = lambda: aclnn_phase_one(P1, *ts[:7], -1, 1e-5, True, *ts[7:])  # noqa: E731
    if REGBASE:
        rc, ws, ex = run()
        assert rc == OK, (rc, last_msg())
        assert ws > 0 and lib.aclDestroyAclOpExecutor(ex) == OK  # the size: its own test file
    else:
        refused_by(run, CALL, (), FIND_KERNEL, "not supported on", "no kernel")


# ---- Ascend 950 (op_kernel/arch35) ---------------------------------------------------------------

# Ascend 950's arch35 kernel: defined on that part only (its own run or its child's)
needs_regbase = only_where(REGBASE)


@needs_regbase
# with scales2 and both zero points: full load to 6656 columns, normal to 9728, then split
@pytest.mark.parametrize("n,kind", [(300, "perf"), (8000, "normal"), (12300, "split")],
                         ids=["full-load", "normal", "split"])
def test_regbase_kernel_choice_and_its_rstd(arena, n, kind):
    """The tiling's kernel (full load: Newton-Raphson rstd; normal and split: 1 / sqrt) as
    the model derives it; the bits of each. A zero row with epsilon 0 gives var 0 and rstd
    +inf in each (the full-load kernel's select, 1 / sqrt(0) in the others), v = 0 * inf = NaN
    (a NaN FLOAT8 result)."""
    rng = np.random.default_rng(n)
    args = inputs(rng, (3, n), F16, F32, I32)
    assert kernel_950(n, F16, F32, I32, *args[4:7])[0] == kind
    assert_matches(call(arena, args), args)
    x1, x2 = args[0].copy(), args[1].copy()
    x1[0], x2[0] = 0, 0
    acl, fdt = FP8["e4m3fn"]
    plain = (x1, x2) + args[2:5] + (None, None)   # no zero points: v / scales itself
    got = call(arena, plain, eps=0.0, y_acl=acl)
    zero_row = got[0][0].view(fdt).astype(F32)
    assert np.isnan(zero_row).all()
    y1, _, _ = device_chain(*plain, eps=0.0, fdt=fdt)
    assert np.array_equal(got[0][1:], y1[1:])


@needs_regbase
def test_regbase_norms_the_unrounded_sum(arena):
    """x1 + x2 is rounded for xOut only: v = (s * rstd) * gamma over the float32 sum, with no
    FLOAT16 rounding before or after gamma (Atlas A2/A3 round both)."""
    x1 = np.full((1, 32), 0.5, F16)
    x2 = np.full((1, 32), np.float16(2.0 ** -12), F16)  # lost in a FLOAT16 sum
    g = np.full(32, 100.53, F16)
    s = np.ones(32, F32)
    args = (x1, x2, g, s, None, None, None)
    got = call(arena, args)
    assert_matches(got, args)
    assert (got[2] == np.float16(0.5)).all()


@needs_regbase
@pytest.mark.parametrize("combo", REGBASE_COMBOS, ids=combo_ids)
def test_regbase_div_mode_false_multiplies(arena, combo):
    rng = np.random.default_rng(9)
    args = list(inputs(rng, (5, 128), *combo))
    args[3] = (1.0 / args[3].astype(F32)).astype(combo[1])
    args[4] = (1.0 / args[4].astype(F32)).astype(combo[1])
    got = call(arena, tuple(args), div_mode=False)
    y1, y2, _ = device_chain(*args, div_mode=False)
    assert np.array_equal(got[0], y1) and np.array_equal(got[1], y2)
    exp = reference.add_rms_norm_quant(*args, div_mode=False)
    assert np.max(np.abs(got[0] - exp[0])) <= reference.QUANT_STEP


@needs_regbase
@pytest.mark.parametrize("fp8", ["e4m3fn", "e5m2"])
@pytest.mark.parametrize("combo", [(F16, F32, I32), (BF16, BF16, BF16), (F32, F32, F32)],
                         ids=combo_ids)
def test_regbase_float8_results(arena, fp8, combo):
    """FLOAT8 y1, y2: t converted directly from float32 to nearest even, saturated at the
    largest finite value (beyond it and Inf), subnormals kept; within one FLOAT8 grid step
    (the spacing at the reference's magnitude) of the float64 reference."""
    acl, fdt = FP8[fp8]
    rng = np.random.default_rng(11)
    args = list(inputs(rng, (6, 96), *combo, scale=1.0))
    s1 = args[3].astype(F32)
    s1[:16] = 1e-6                                     # saturates
    s1[16:32] = 300 if fp8 == "e4m3fn" else 6e4        # subnormal results
    args[3] = s1.astype(combo[1])
    got = call(arena, tuple(args), y_acl=acl)
    y1, y2, _ = device_chain(*args, fdt=fdt)
    assert np.array_equal(got[0], y1) and np.array_equal(got[1], y2)
    codes = got[0].view(np.uint8)
    big = np.array(ml_dtypes.finfo(fdt).max, fdt).view(np.uint8)
    assert ((codes[:, :16] & 0x7F) == big).any()
    sub = codes[:, 16:32] & 0x7F
    assert ((sub > 0) & (sub < (8 if fp8 == "e4m3fn" else 4))).any()
    exp = reference.add_rms_norm_quant(*args, y_dtype=fdt)
    for k in (0, 1):
        value = got[k].view(fdt).astype(np.float64)
        assert np.all(np.abs(value - exp[k]) <= reference.float8_step(exp[k], fdt))


@needs_regbase
@pytest.mark.parametrize("combo", [(F16, F32, I32), (BF16, BF16, BF16), (F32, F32, F32)],
                         ids=combo_ids)
def test_regbase_hifloat8_results(arena, combo):
    """HIFLOAT8 y1, y2: t converted directly (castTraitFp322Hifp8: ties away from zero,
    saturating at 2^15), bit for bit the model's codes; tiny scales saturate, huge ones give
    denormal codes; a NaN row gives NaN codes; within one HiF8 step of the float64
    reference."""
    rng = np.random.default_rng(13)
    args = list(inputs(rng, (6, 96), *combo, scale=1.0))
    s1 = args[3].astype(F32)
    s1[:16] = 1e-7                   # |t| far beyond 2^15: saturates
    s1[16:32] = 1e6                  # |t| ~ 1e-6: HiF8 denormals (below 2^-15)
    args[3] = s1.astype(combo[1])
    args[5] = None                   # no zero points: the tiny values stay tiny
    x1 = args[0].copy()
    x1[5, 7] = np.nan
    args[0] = x1
    got = call(arena, tuple(args), y_acl=lib.ACL_HIFLOAT8)
    y1, y2, _ = device_chain(*args, fdt="hifloat8")
    assert np.array_equal(got[0], y1) and np.array_equal(got[1], y2)
    codes = got[0].view(np.uint8)
    assert (codes[5] == 0x80).all()
    assert ((codes[:5, :16] & 0x7F) == 0x6E).sum() > 40
    den = codes[:5, 16:32] & 0x7F
    assert ((den >= 1) & (den <= 7)).any()
    exp = reference.add_rms_norm_quant(*args, y_dtype="hifloat8")
    for k in (0, 1):
        vals = dtypes.hifloat8_to_float32(got[k].view(np.uint8)[:5]).astype(np.float64)
        assert np.abs(hif8_rank(vals) - hif8_rank(exp[k][:5])).max() <= 1


@needs_regbase
@pytest.mark.parametrize("change,words", [
    ({"scales1": F16, "scales2": F16, "z1": None, "z2": None, "x1": F32, "x2": F32,
      "gamma": F32, "x": F32}, ("x1 FLOAT", "scales1 FLOAT16")),
    ({"z1": F16, "z2": F16}, ("zero points FLOAT16",)),
    ({"scales1": BF16, "scales2": BF16}, ("scales1 BF16",)),
    ({"scales1": F16, "scales2": F16}, ("scales1 FLOAT16", "zero points INT32")),
])
def test_regbase_no_kernel_for_the_combination(arena, change, words):
    """Outside Ascend 950's definition (and its tiling's dtype relations): 561003, as the
    other parts' (stricter: the L0 op discards the status)."""
    a = Args(arena)
    for k, dt in change.items():
        a.v[k] = None if dt is None else a.make(a.v[k].shape, dt)
    expect(a, FIND_KERNEL, "not supported on", "no kernel", *words)


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
