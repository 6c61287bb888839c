"""The emulator's aclnnAddRmsNormDynamicQuant through raw calls: phase one's checks, codes and
messages in the op_api's order (hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/op_api/
aclnn_add_rms_norm_dynamic_quant.cpp; the part's kernels, op_host/
add_rms_norm_dynamic_quant_def.cpp; the tiling's refusals, op_host/arch22/
add_rms_norm_dynamic_quant_tiling.cpp; the stricter choices in docs/emulator.md) per part, and
the device's numbers (op_kernel/add_rms_norm_dynamic_quant_*_kernel.h, reduce_common.h; on
Ascend 950 op_kernel/arch35 and the kernel its tiling, op_host/arch35, chooses): bit for bit
against a NumPy model of the kernels' float32 chain (whole-row and slice-D sums; FLOAT16 and
BF16; no, one and two smooth scales; Ascend 950's four kernels and its INT8, FLOAT8 and
HIFLOAT8 results), within one quantization step of the float64 reference, xOut's value, the
scales, y2 and scale2 left unwritten without both smooth scales.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _device_reduce import binary_sum, half_interval_sum, regbase_row_sum, split_sums
from _emu_aclnn import passes, refusal_check, run_phase_two, SOC
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts
from acl_py import dtypes
from test_emulator_add_rms_norm_quant import FP8, lane_sum, regbase_quant
from test_emulator_rms_norm_quant import order_rows, v2_rstd

P1 = lib.aclnnAddRmsNormDynamicQuantGetWorkspaceSize
P2 = lib.aclnnAddRmsNormDynamicQuant
CALL = "aclnnAddRmsNormDynamicQuantGetWorkspaceSize"
TILING = 561002
INNER_NULLPTR = 561103
FIND_KERNEL = 561003
I8 = np.dtype(np.int8)
A2 = SOC != "Ascend910B" and SOC.startswith(("Ascend910B", "Ascend910_93"))
REGBASE = SOC.startswith("Ascend950")
SLICE = 8864        # SLICE_COL_LEN: the slice-D kernel's slice
SLICE_INT4 = 8832   # SLICE_COL_LEN_INT4: its slice for INT4 results (V2)
SLICE_D_N = 12300   # beyond the single-row kernel's 12224 columns: slice-D rows
# the tests of the kernel's work are defined where it has one (ops-nn norm/
# add_rms_norm_dynamic_quant/op_host/add_rms_norm_dynamic_quant_def.cpp: ascend910b,
# ascend910_93, ascend950; the refusal elsewhere: test_parts_without_a_kernel)
where_it_runs = only_where(A2 or REGBASE)
# a kernel family's tests are defined on its parts only
needs_a2 = only_where(A2)   # Atlas A2/A3's kernels (op_host/arch22)
needs_regbase = only_where(REGBASE)   # Ascend 950's arch35 kernels


INT_DT = {I8: lib.ACL_INT8, np.dtype(np.int32): lib.ACL_INT32}


def view(arena, values=None, **kw):
    dt = np.dtype(kw.get("dtype") if values is None else np.asarray(values).dtype)
    if dt in INT_DT and kw.get("acl_dtype") is None:
        kw["acl_dtype"] = INT_DT[dt]
    return DevView(arena, values, **kw)


def phase_one(ts, eps=1e-6, ws=True, ex=True):
    x1, x2, g, s1, s2, y1, y2, xo, sc1, sc2 = ts
    return aclnn_phase_one(P1, x1, x2, g, s1, s2, eps, y1, y2, xo, sc1, sc2, ws=ws, ex=ex)


def read_raw(v):
    """The view's values after the run (any dtype, compared as bytes outside it)."""
    out = np.empty_like(v.storage)
    v.arena.d2h(out, v.ptr)
    inside = np.zeros(v.n, bool)
    v.host_view(inside)[...] = True
    assert np.array_equal(out[~inside].view(np.uint8), v.initial[~inside].view(np.uint8)), \
        "written outside the view"
    return v.host_view(out).copy()


def inputs(rng, shape, dt, smooth=2):
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    s1 = (0.5 + rng.random(n)).astype(dt) if smooth >= 1 else None
    s2 = (0.5 + rng.random(n)).astype(dt) if smooth >= 2 else None
    return x1, x2, g, s1, s2


def call(arena, args, kinds=("contig",) * 10, eps=1e-6, y_acl=lib.ACL_INT8):
    """Runs the operator on [M, N] x1 (y1 and y2 of y_acl, as bytes); returns (y1, y2 or
    None, x, scale1, scale2 or None) and the raw y2 and scale2 (their sentinels where not
    written)."""
    x1 = args[0]
    m = x1.shape[0] if x1.ndim > 1 else 1
    dual = args[3] is not None and args[4] is not None
    views = [None if a is None else view(arena, a, kind=k) for a, k in zip(args, kinds)]
    y_shape = x1.shape if dual else (1,)
    sc_shape = x1.shape[:-1] or (1,)
    vy1 = view(arena, shape=x1.shape, dtype=I8, kind=kinds[5], sentinel=-77, acl_dtype=y_acl)
    vy2 = view(arena, shape=y_shape, dtype=I8, kind=kinds[6], sentinel=-77, acl_dtype=y_acl)
    vx = view(arena, shape=x1.shape, dtype=x1.dtype, kind=kinds[7], sentinel=-7)
    vs1 = view(arena, shape=sc_shape, dtype=F32, kind=kinds[8], sentinel=-5)
    vs2 = view(arena, shape=sc_shape if dual else (1,), dtype=F32, kind=kinds[9], sentinel=-5)
    run_phase_two(arena, P2, phase_one(views + [vy1, vy2, vx, vs1, vs2], eps=eps))
    y2, s2 = read_raw(vy2), read_raw(vs2)
    got = (read_raw(vy1), y2 if dual else None, vx.read(), read_raw(vs1).reshape(m),
           s2.reshape(m) if dual else None)
    return got, y2, s2


# ---- the NumPy model of the kernels' float32 chain ------------------------------------------

def to_int8(t, lo=-128, hi=127):
    """RoundFloat2IntQuant: the nearest integer, ties to even, clamped to [lo, hi] (INT4:
    [-8, 7]); NaN 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(t), 0, np.clip(np.rint(np.nan_to_num(t)), lo, hi)).astype(I8)


def outputs(s1, s2, mask):
    """(out1, out2): the outputs computed, by V2's outputMask or, without one, V1's rule."""
    return tuple(mask) if mask is not None else (True, s1 is not None and s2 is not None)


def device_chain(x1, x2, g, s1, s2, eps=1e-6, beta=None, mask=None, int4=False):
    """The part's kernels' numbers on [M, N] rows: (y1 or None, y2 or None, x, scale1 or
    None, scale2 or None), INT8 results (V2's int4: INT4 values, Q = 7, the slice-D kernel's
    INT4 slice); V2's beta added to the normed row, its outputMask choosing the outputs."""
    out1, out2 = outputs(s1, s2, mask)
    if REGBASE:
        kernel = regbase_kernel(x1.shape[-1], (s1 is not None) + (s2 is not None), out2,
                                beta is not None, out1)
        return regbase_chain(x1, x2, g, s1, s2, eps, kernel, fdt="int4" if int4 else None,
                             beta=beta, mask=mask)
    f = np.float32
    s = x1.astype(F32) + x2.astype(F32)
    x = s.astype(x1.dtype)              # xOut: to nearest even
    n = s.shape[-1]
    avg, e = f(1.0 / float(n)), f(eps)
    sq = s * s
    if n > 12224:                       # slice-D: each slice's sum, added in order to 0
        ss = np.zeros(s.shape[0], F32)
        width = SLICE_INT4 if int4 else SLICE
        for c in range(0, n, width):
            ss = ss + half_interval_sum(sq[:, c:c + width])
    else:
        ss = half_interval_sum(sq)
    rstd = f(1) / np.sqrt(ss * avg + e)
    v = (s * rstd[:, None]) * g.astype(F32)
    if beta is not None:
        v = v + beta.astype(F32)

    def quant(smooth):
        t = v if smooth is None else v * smooth.astype(F32)
        with np.errstate(divide="ignore"):
            mul = f(7 if int4 else 127) / np.max(np.abs(t), axis=1)
            scale = f(1) / mul
        with np.errstate(invalid="ignore"):
            return to_int8(t * mul[:, None], *((-8, 7) if int4 else ())), scale

    y1, sc1 = quant(s1) if out1 else (None, None)
    y2, sc2 = quant(s2) if out2 else (None, None)
    return y1, y2, x, sc1, sc2


# Ascend 950 (op_host/arch35/add_rms_norm_dynamic_quant_tiling_arch35.cpp; op_kernel/arch35)

UB_950 = 253952
QUANT_MAX_950 = {None: 127, "e4m3fn": 448, "e5m2": 57344, "hifloat8": 32768, "int4": 7}


def _align(v, a):
    return -(-v // a) * a


def regbase_kernel(n, smooth, dual, beta=False, out1=True):
    """The arch35 tiling's kernel for rows of n 16-bit elements with `smooth` smooth scales
    (SetTilingParams: perf (CalFullLoadBaseM), normal (CalUBTotalSize), single row, split,
    the first that fits the 253952-byte UB); dual: y2 computed (outQuant2Flag), out1: y1
    (outQuant1Flag), beta: V2's beta given (hasBeta)."""
    o1, o2, b = int(out1), int(dual), 2 * _align(n, 16) * int(beta)
    a, b8, b32 = _align(n, 16), _align(n, 32), _align(n, 8)
    if n <= 16384:
        power = 1 << ((a - 1).bit_length() - 1)
        vcadd = _align(-(-power // 64), 32)
        last = UB_950 - 2 * a - smooth * 2 * a - 1024 - b
        per_row = 6 * a + 4 * a + 8 + 4 * vcadd + 4 * b32 + o1 * (2 * b8 + 8) + o2 * (2 * b8 + 8)
        rows = int(last / per_row)          # C++'s division, toward zero

        def used(m):
            r = _align(m, 8)
            return (2 * a + smooth * 2 * a + 1024 + m * (10 * a) + m * vcadd * 4 +
                    o1 * m * (2 * b8 + 4 * b32) + 8 * r + o1 * 8 * r +
                    o2 * (2 * m * b8 + 8 * r) + b)
        while rows > 0 and used(rows) > UB_950:
            rows -= 1
        if rows >= 1:
            return "perf"
    if ub_total_950(n, smooth, dual, beta, out1, False) <= UB_950:
        return "normal"
    return "single_row" if 16 * b8 + 1024 <= UB_950 else "split"


def ub_total_950(n, smooth, dual, beta, out1, split):
    """The arch35 tiling's CalUBTotalSize for one row of n 16-bit elements: the normal
    kernel's, or the split kernel's (three level buffers of 4 * 64 floats, a 64-float temp)."""
    o1, o2, a, r = int(out1), int(dual), _align(n, 16), _align(n, 256)
    return (6 * r + 4 * r + 4 * _align(r // 128, 8) + 2 * a + smooth * 2 * a +
            2 * a * int(beta) + (o1 + o2) * (_align(n, 32) + 4 * _align(n, 8)) +
            32 * (1 + o1 + o2) + (3 * 4 * 64 * 4 + 64 * 4 if split else 0))


def split_params(n, smooth, dual, beta=False, out1=True):
    """The split kernel's (powerSplit, powerLoop) (TrySplitTiling): powerSplit doubled from
    256 while twice it fits (whatever n), powerLoop the largest power of two with powerLoop *
    powerSplit <= n."""
    p, loop = 256, 1
    while ub_total_950(2 * p, smooth, dual, beta, out1, True) <= UB_950:
        p *= 2
    while loop * 2 * p <= n:
        loop *= 2
    return p, loop


def regbase_chain(x1, x2, g, s1, s2, eps, kernel, fdt=None, beta=None, mask=None,
                  old_order=False, split=None):
    """Ascend 950's numbers on [M, N] rows by `kernel`: s = x1 + x2 in float32 (xOut s
    rounded), every kernel norms s; rstd: perf the Newton-Raphson of sum * avg (the binary
    add), single row 1 / sqrt over the half-interval sum, normal and split 1 / sqrt (the
    sums ReduceSumRstd's over the row, the split levels; old_order: perf, normal and split
    in the emulator's former 16-lane order; split: the split kernel's (powerSplit,
    powerLoop) in place of the tiling's, a test's counterfactual); v = (s * rstd) * gamma;
    per output t = v (* smooth), scale = max |t| * (1 / Q) (single row: max |t| / (1 / (1 /
    Q))), y = t / scale to INT8, the FLOAT8 dtype fdt, "hifloat8" (bytes) or "int4" (INT4
    values: to INT16, FLOAT16, INT4, each to nearest even)."""
    f = np.float32
    s = x1.astype(F32) + x2.astype(F32)
    x = s.astype(x1.dtype)
    avg = f(1) / f(s.shape[-1])
    out1, out2 = outputs(s1, s2, mask)
    sq = s * s
    if old_order:
        total = lane_sum(sq)
    elif kernel == "perf":
        total = binary_sum(sq)
    elif kernel == "normal":
        total = regbase_row_sum(sq, 2)
    elif kernel == "split":
        smooth = (s1 is not None) + (s2 is not None)
        total = split_sums(sq, 2, *(split or split_params(s.shape[-1], smooth, out2,
                                                          beta is not None, out1)))
    with np.errstate(all="ignore"):
        if kernel == "single_row":
            rstd = f(1) / np.sqrt(half_interval_sum(sq) * avg + f(eps))
        elif kernel == "perf":
            rstd = np.array([v2_rstd(v, eps, True) for v in total * avg], F32)
        else:
            rstd = f(1) / np.sqrt(total * avg + f(eps))
        v = (s * rstd[:, None]) * g.astype(F32)
        if beta is not None:
            v = v + beta.astype(F32)
    name = fdt if isinstance(fdt, str) or fdt is None else \
        {v[1]: k for k, v in FP8.items()}[np.dtype(fdt)]
    div = f(1) / f(QUANT_MAX_950[name])

    def quant(smooth):
        t = v if smooth is None else v * smooth.astype(F32)
        a = np.abs(t)
        m = np.max(np.where(np.isnan(a), 0, a), axis=1)
        scale = m / (f(1) / div) if kernel == "single_row" else m * div
        if name == "int4":
            return np.clip(regbase_quant(t, scale[:, None], None), -8, 7), scale
        return regbase_quant(t, scale[:, None], None, fdt=fdt), scale

    y1, sc1 = quant(s1) if out1 else (None, None)
    y2, sc2 = quant(s2) if out2 else (None, None)
    return y1, y2, x, sc1, sc2


def assert_matches(got, args, raw_y2=None, raw_s2=None, eps=1e-6):
    y1, y2, x, sc1, sc2 = device_chain(*args, eps=eps)
    assert np.array_equal(got[0], y1)
    assert np.array_equal(got[2].view(np.uint16), x.view(np.uint16))
    assert np.array_equal(got[3].view(np.uint32), sc1.view(np.uint32))
    if y2 is None:
        assert got[1] is None and (raw_y2 == -77).all() and (raw_s2 == -5).all(), \
            "y2 or scale2 written without both smooth scales"
    else:
        assert np.array_equal(got[1], y2)
        assert np.array_equal(got[4].view(np.uint32), sc2.view(np.uint32))
    assert_near_dynamic_reference(got, reference.add_rms_norm_dynamic_quant(*args, epsilon=eps),
                                  scale_rtol=2e-3)
    return y1


def assert_near_dynamic_reference(got, exp, scale_rtol):
    """A dynamic quantization's (y1, y2, _, scale1, scale2) against the float64 reference's:
    the y's within one step, the scales within scale_rtol (None where not computed)."""
    for k in (0, 1):
        if exp[k] is not None:
            assert np.max(np.abs(got[k].astype(np.float64) - exp[k])) <= reference.QUANT_STEP
    for k in (3, 4):
        if exp[k] is not None:
            assert np.allclose(got[k], exp[k], rtol=scale_rtol, atol=0)


# ---- numbers -----------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m,n", [(7, 33), (3, 181), (200, 64), (5, 1024), (2, SLICE_D_N)],
                         ids=["33", "181", "64", "1024", "sliced"])
@pytest.mark.parametrize("smooth", [0, 1, 2], ids=["plain", "smooth1", "dual"])
def test_chain_bits_and_reference(arena, dt, m, n, smooth):
    """Bit for bit the kernels' chain (the half-interval sums, slice-D's slices; 127 / max
    once per row, its reciprocal the scale); xOut the sum in x1's dtype; y2 and scale2 only
    with both smooth scales; within one quantization step of the float64 reference."""
    rng = np.random.default_rng(m * n + smooth)
    args = inputs(rng, (m, n), dt, smooth)
    got, y2, s2 = call(arena, args)
    y1 = assert_matches(got, args, y2, s2)
    assert len(np.unique(y1)) > 20 and np.abs(y1).max() == 127


@where_it_runs
def test_a_zero_row_gives_a_zero_scale_and_zeros(arena):
    """max |t| = 0: 127 / 0 is Inf, the scale its reciprocal 0, and 0 * Inf (NaN) written as
    0 (the conversions' NaN taken as 0: docs/emulator.md)."""
    x1 = np.zeros((2, 40), F16)
    x1[1] = 1.0
    args = (x1, np.zeros_like(x1), np.ones(40, F16), None, None)
    got, y2, s2 = call(arena, args)
    assert (got[0][0] == 0).all() and got[3][0] == 0.0
    assert (got[0][1] == 127).all()
    assert_matches(got, args, y2, s2)


@where_it_runs
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    rng = np.random.default_rng(5)
    args = inputs(rng, (6, 40), F16)
    base, _, _ = call(arena, args)
    got, _, _ = call(arena, args, kinds=(kind,) * 10)
    for a, b in zip(base, got):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(6)
    args = inputs(rng, (61, 300), BF16)
    runs = []
    for n in (1, 3, 8):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, args)[0])
    assert all(np.array_equal(runs[0][k], r[k]) for r in runs[1:] for k in (0, 1, 3, 4))


@where_it_runs
def test_rank_3_x_takes_leading_dims_or_their_product_as_scales(arena):
    rng = np.random.default_rng(7)
    x1, x2, g, s1, s2 = inputs(rng, (12, 48), F16)
    exp = device_chain(x1, x2, g, s1, s2)
    for sc_shape in ((3, 4), (12,)):
        views = [view(arena, a.reshape(3, 4, 48) if a.ndim == 2 else a)
                 for a in (x1, x2, g, s1, s2)]
        vy1, vy2 = (view(arena, shape=(3, 4, 48), dtype=I8) for _ in range(2))
        vx = view(arena, shape=(3, 4, 48), dtype=F16)
        vs1, vs2 = (view(arena, shape=sc_shape, dtype=F32) for _ in range(2))
        run_phase_two(arena, P2, phase_one(views + [vy1, vy2, vx, vs1, vs2]))
        assert np.array_equal(read_raw(vy1).reshape(12, 48), exp[0])
        assert np.array_equal(read_raw(vy2).reshape(12, 48), exp[1])
        assert np.array_equal(read_raw(vs2).reshape(12), exp[4])


# ---- phase one ---------------------------------------------------------------------------------

class Args:
    """Valid views for phase one (FLOAT16 x [4, n], both smooth scales, INT8 y, FLOAT scales
    [4]), replaced one at a time."""

    NAMES = ("x1", "x2", "gamma", "s1", "s2", "y1", "y2", "x", "sc1", "sc2")

    def __init__(self, arena, n=32, m=4):
        self.arena = arena
        self.v = {"x1": self.make((m, n), F16), "x2": self.make((m, n), F16),
                  "gamma": self.make((n,), F16), "s1": self.make((n,), F16),
                  "s2": self.make((n,), F16), "y1": self.make((m, n), I8),
                  "y2": self.make((m, n), I8), "x": self.make((m, n), F16),
                  "sc1": self.make((m,), F32), "sc2": self.make((m,), F32)}
        self.eps = 1e-6

    def make(self, shape, dt, acl_dtype=None):
        return view(self.arena, shape=shape, dtype=dt, acl_dtype=acl_dtype)

    def single(self):
        """Without smooth scales: y2 and scale2 of one element."""
        self.v["s1"] = self.v["s2"] = None
        self.v["y2"], self.v["sc2"] = self.make((1,), I8), self.make((1,), F32)
        return self

    def call(self, ws=True, ex=True):
        return phase_one([self.v[k] for k in self.NAMES], eps=self.eps, ws=ws, ex=ex)


expect = refusal_check(CALL)


@where_it_runs
def test_valid_arguments_pass(arena):
    passes(Args(arena))
    passes(Args(arena).single())
    a = Args(arena).single()
    a.v["s1"] = a.make((32,), F16)
    passes(a)


def test_null_out_pointers_come_first(arena):
    a = Args(arena)
    a.v["x1"] = None
    for kw, name in (({"ws": False}, "workspaceSize"), ({"ex": False}, "executor")):
        rc, _, _ = a.call(**kw)
        msg = last_msg()
        assert rc == NULLPTR and msg.startswith(CALL + ": " + name), msg


@pytest.mark.parametrize("name,c_name", [("x1", "x1"), ("x2", "x2"), ("gamma", "gamma"),
                                         ("y1", "y1Out"), ("y2", "y2Out"), ("x", "xOut"),
                                         ("sc1", "scale1Out"), ("sc2", "scale2Out")])
def test_each_required_tensor(arena, name, c_name):
    a = Args(arena)
    a.v[name] = None
    expect(a, NULLPTR, c_name, "NULL")


def test_nulls_come_before_dtypes(arena):
    a = Args(arena)
    a.v["x1"] = a.make((4, 32), I8)
    a.v["sc2"] = None
    expect(a, NULLPTR, "scale2Out is NULL")


@pytest.mark.parametrize("name,dt,words", [
    ("x1", F32, ("x1 dtype FLOAT", "not supported")),
    ("x2", I8, ("x2 dtype INT8", "not supported")),
    ("gamma", F32, ("gamma dtype FLOAT", "not supported")),
    ("s1", F32, ("smoothScale1Optional dtype FLOAT", "not supported")),
    ("s2", I8, ("smoothScale2Optional dtype INT8", "not supported")),
    ("y1", np.dtype(np.int32), ("y1Out dtype INT32", "not supported")),
    ("y2", F16, ("y2Out dtype FLOAT16", "not supported")),
    ("x", F32, ("xOut dtype FLOAT", "not supported")),
    ("sc1", F16, ("scale1Out dtype FLOAT16", "must be FLOAT")),
    ("sc2", BF16, ("scale2Out dtype BF16", "must be FLOAT")),
])
def test_dtype_lists_every_part(arena, name, dt, words):
    """One list on every part (CheckDtypeValid), in the op_api's order."""
    a = Args(arena)
    a.v[name] = a.make(a.v[name].shape, dt)
    expect(a, INVALID, *words)


def test_y2_dtype_must_be_y1s(arena):
    a = Args(arena)
    a.v["y2"] = a.make((4, 32), I8, acl_dtype=lib.ACL_HIFLOAT8)
    expect(a, INVALID, "y2Out dtype HIFLOAT8", "y1Out's dtype INT8")


def test_dtypes_come_before_shapes(arena):
    a = Args(arena)
    a.v["x2"] = a.make((2, 32), F16)
    a.v["sc2"] = a.make((4,), F16)
    expect(a, INVALID, "scale2Out dtype FLOAT16")


@pytest.mark.parametrize("name,shape,words", [
    ("x2", (2, 32), ("x2 shape [2,32]", "x1's shape")),
    ("gamma", (4, 32), ("gamma rank 2", "must be 1")),
    ("gamma", (16,), ("gamma shape [16]", "x1's last dim")),
    ("s1", (16,), ("smoothScale1Optional shape [16]", "gamma's shape")),
    ("s2", (1, 32), ("smoothScale2Optional shape [1,32]", "gamma's shape")),
    ("x1", (), ("x1 rank 0",)),
])
def test_shapes_are_the_tiling_error(arena, name, shape, words):
    """CheckShapeValid's rules: 561002 (ACLNN_ERR_INNER_TILING_ERROR), as the op_api returns
    them; a rank-0 x1 (whose last dim the op_api reads past its shape) with them."""
    a = Args(arena)
    if name == "x1":
        a.v["x2"] = a.make(shape, F16)
    a.v[name] = a.make(shape, a.v[name].dtype)
    expect(a, TILING, *words)


@pytest.mark.parametrize("name,shape,dt,words", [
    ("x2", (4, 32), BF16, ("x2 dtype BF16", "x1's dtype")),
    ("gamma", (32,), BF16, ("gamma dtype BF16", "x1's dtype")),
    ("s2", (32,), BF16, ("smoothScale2Optional dtype BF16", "x1's dtype")),
    ("x", (4, 32), BF16, ("xOut dtype BF16", "x1's dtype")),
    ("x", (2, 64), F16, ("xOut shape [2,64]", "x1's shape")),
    ("sc1", (2, 2), F32, ("scale1Out shape [2,2]", "without its last dim")),
    ("sc1", (4, 1), F32, ("scale1Out shape [4,1]", "without its last dim")),
    ("sc2", (2, 2), F32, ("scale2Out shape [2,2]", "scale1Out's shape")),
    ("y2", (4, 0), I8, ("y2Out shape [4,0]", "non-empty x1")),
    ("y1", (1,) * 9, I8, ("y1Out rank 9",)),
])
def test_stricter_docs_relations(arena, name, shape, dt, words):
    """The docs' relations nothing in the code checks (the kernel reads every input as x1's
    dtype, writes xOut as x1's and one scale per row): refused, 161002 (docs/emulator.md)."""
    a = Args(arena)
    a.v[name] = a.make(shape, dt)
    expect(a, INVALID, *words)


def test_empty_tensors_succeed_with_nothing_launched(arena):
    """An empty x1 (so gamma, with x1's last dim): success on every part, the op_api returns
    before the L0 op, whatever its kernels."""
    a = Args(arena, n=0)
    passes(a)
    a = Args(arena, m=0)
    passes(a)


@only_where(A2)   # Atlas A2/A3's INT8 and INT4 kernels
@pytest.mark.parametrize("acl", ["ACL_HIFLOAT8", "ACL_FLOAT8_E4M3FN", "ACL_FLOAT8_E5M2"])
def test_no_kernel_for_a_float8_result(arena, acl):
    """The op_api's list takes it, Atlas A2/A3's definition has INT8 and INT4 only: the
    device's phase one passes (the L0 op discards the launcher's status), the emulator
    refuses (561003)."""
    a = Args(arena)
    for k in ("y1", "y2"):
        a.v[k] = a.make((4, 32), I8, acl_dtype=getattr(lib, acl))
    expect(a, FIND_KERNEL, "not supported on", "INT8 or INT4 only")


@needs_a2
@pytest.mark.parametrize("eps", [0.0, -1e-6, 1e-60, float("nan")])
def test_the_tilings_epsilon_rule(arena, eps):
    """(float)epsilon <= 0 fails the tiling (NaN too: the emulator refuses what is not > 0;
    stricter, the device's phase one passes it on): 561002."""
    a = Args(arena)
    a.eps = eps
    expect(a, TILING, "epsilon", "greater than 0")


@where_it_runs
def test_smooth_scale2_without_smooth_scale1(arena):
    a = Args(arena).single()
    a.v["s2"] = a.make((32,), F16)
    expect(a, TILING, "smoothScale2Optional is given without smoothScale1Optional")


@where_it_runs
@pytest.mark.parametrize("single,name,shape,words", [
    (False, "y1", (2, 64), ("y1Out shape [2,64]", "ViewCopy")),
    (False, "y2", (4, 16), ("y2Out shape [4,16]", "ViewCopy")),
    (True, "y2", (4, 32), ("y2Out shape [4,32]", "one element")),
    (True, "sc2", (4,), ("scale2Out shape [4]", "one element")),
])
def test_view_copies_of_the_results(arena, single, name, shape, words):
    """The copies the op_api makes: y1 (x1's shape), y2 (x1's shape with both smooth
    scales, else the L0 op's [1]), scale2 (one element without both): 561103."""
    a = Args(arena)
    if single:
        a.single()
    a.v[name] = a.make(shape, a.v[name].dtype)
    expect(a, INNER_NULLPTR, *words)


@only_where(not (A2 or REGBASE))   # the parts without an AddRmsNormDynamicQuant kernel
def test_parts_without_a_kernel(arena):
    expect(Args(arena), FIND_KERNEL, "not supported on", "no kernel")


def test_no_executor_is_left_behind_by_a_refusal(arena):
    """Each step's refusal (the autouse no_leaks fixture counts the live objects)."""
    a = Args(arena)
    a.v["x2"] = a.make((2, 32), F16)
    expect(a, TILING, "x2 shape")
    a = Args(arena).single()
    a.v["s2"] = a.make((32,), F16)
    expect(a, TILING if A2 or REGBASE else FIND_KERNEL)


# ---- Ascend 950 ----------------------------------------------------------------------------

@needs_regbase
@pytest.mark.parametrize("n,kernel,other", [
    (14016, "perf", "normal"), (14017, "normal", "perf"),
    (15808, "single_row", "split"), (15809, "split", "single_row")])
def test_regbase_kernel_choice(arena, n, kernel, other):
    """The tiling's kernel at its boundaries without smooth scales (perf up to 14016
    columns, normal to 14848, single row to 15808, split beyond), each bit for bit its
    model. The rows tell it from its neighbour's: the perf kernel's Newton-Raphson rstd and
    the others' 1 / sqrt differ in the last bit for some rows, and so the scales; the single
    row kernel's max / 127 and the others' max * (1 / 127) differ in the last bit of many
    scales."""
    assert regbase_kernel(n, 0, False) == kernel
    rng = np.random.default_rng(n)
    args = inputs(rng, (12, n), F16, smooth=0)
    got, y2, s2 = call(arena, args)
    assert_matches(got, args, y2, s2)
    mine = regbase_chain(*args, 1e-6, kernel)
    theirs = regbase_chain(*args, 1e-6, other)
    assert np.array_equal(got[3].view(np.uint32), mine[3].view(np.uint32))
    assert not np.array_equal(got[3].view(np.uint32), theirs[3].view(np.uint32))


# rows each side of the kernels' boundaries without smooth scales (perf: the binary add's
# branches at 64, 128 and 8192 columns, up to 14016; normal 14017..14848; split beyond 15808,
# powerSplit 8192: a tail past half of it, one below, two main chunks)
REGBASE_ORDER_CASES = [(65, 64, "perf"), (129, 64, "perf"), (8193, 8, "perf"),
                       (14016, 8, "perf"), (14017, 8, "normal"), (14848, 8, "normal"),
                       (15809, 4, "split"), (20000, 4, "split"), (33000, 2, "split")]


@needs_regbase
@pytest.mark.parametrize("n,m,kernel", REGBASE_ORDER_CASES,
                         ids=[f"{k}-{n}" for n, _, k in REGBASE_ORDER_CASES])
def test_regbase_sum_order_bits(arena, n, m, kernel):
    """Each kernel's sum of the squares (perf: CalculateSquareReduceSum's binary add; normal:
    ReduceSumRstd over the row padded to 512 bytes; split: ReduceSumRstd per powerSplit
    chunk, the 256-entry levels): y1 and scale1 bit for bit, and scale1 not what the former
    16-lane order gives (its rstd moves max |t|)."""
    assert regbase_kernel(n, 0, False) == kernel
    rng = np.random.default_rng(n * 7 + m)
    x1 = order_rows(rng, m, n, F16)
    g = rng.uniform(0.5, 1.5, n).astype(F16)
    args = (x1, np.zeros_like(x1), g, None, None)
    got, y2, s2 = call(arena, args)
    assert_matches(got, args, y2, s2)
    old = regbase_chain(*args, 1e-6, kernel, old_order=True)
    assert not np.array_equal(got[3].view(np.uint32), old[3].view(np.uint32))


@needs_regbase
@pytest.mark.parametrize("smooth,n,kernel", [(1, 12609, "normal"), (1, 13313, "single_row"),
                                             (2, 10496, "perf"), (2, 10497, "single_row")])
def test_regbase_smooth_scales_move_the_boundaries(arena, smooth, n, kernel):
    """The smooth scales' and y2's UB shares move the kernels' boundaries (the tiling's
    quantBufCnt and outQuant2Flag): one smooth scale, normal from 12609 columns, single row
    from 13313; both, single row from 10497 (no normal kernel)."""
    assert regbase_kernel(n, smooth, smooth == 2) == kernel
    rng = np.random.default_rng(n)
    args = inputs(rng, (2, n), BF16, smooth=smooth)
    got, y2, s2 = call(arena, args)
    assert_matches(got, args, y2, s2)


@needs_regbase
@pytest.mark.parametrize("fdt", ["e4m3fn", "e5m2", "hifloat8"])
@pytest.mark.parametrize("n", [96, 15000], ids=["perf", "single_row"])
def test_regbase_float8_and_hifloat8_results(arena, fdt, n):
    """FLOAT8_E4M3FN, FLOAT8_E5M2 and HIFLOAT8 y1 and y2 (the def's Ascend 950 results):
    scale = max |t| / Q (448, 57344, 32768) by the kernel's rule, t / scale converted
    directly (castTraitFp322Fp8: nearest even, saturating; castTraitFp322Hifp8: ties away,
    saturating at 2^15), bit for bit the model's codes; each row's largest |t| the largest
    code; within one grid step (one HIFLOAT8 value) of the float64 reference."""
    from test_emulator_rms_norm_quant import hif8_rank
    acl, np_dt = (lib.ACL_HIFLOAT8, "hifloat8") if fdt == "hifloat8" else FP8[fdt]
    kernel = regbase_kernel(n, 2, True)
    assert kernel == ("perf" if n == 96 else "single_row")
    rng = np.random.default_rng(n + len(fdt))
    args = inputs(rng, (5, n), F16)
    got, _, _ = call(arena, args, y_acl=acl)
    exp_bits = regbase_chain(*args, 1e-6, kernel, fdt=np_dt)
    for k in (0, 1):
        assert np.array_equal(got[k], exp_bits[k])
    for k in (3, 4):
        assert np.array_equal(got[k].view(np.uint32), exp_bits[k].view(np.uint32))
    assert np.array_equal(got[2].view(np.uint16), exp_bits[2].view(np.uint16))
    ref = reference.add_rms_norm_dynamic_quant(*args, y_dtype=np_dt)
    for k in (0, 1):
        if fdt == "hifloat8":
            vals = dtypes.hifloat8_to_float32(got[k].view(np.uint8)).astype(np.float64)
            assert np.abs(hif8_rank(vals) - hif8_rank(ref[k])).max() <= 1
            assert (np.abs(vals).max(axis=1) == 32768).all()
        else:
            vals = got[k].view(np_dt).astype(np.float64)
            assert np.all(np.abs(vals - ref[k]) <= reference.float8_step(ref[k], np_dt))
            assert (np.abs(vals).max(axis=1) == float(ml_dtypes.finfo(np_dt).max)).all()
        assert np.allclose(got[k + 3], ref[k + 3], rtol=2e-3, atol=0)


@needs_regbase
@pytest.mark.parametrize("eps", [0.0, -1e-7])
def test_regbase_has_no_epsilon_rule(arena, eps):
    """Ascend 950's tiling checks no epsilon (op_host/arch35): 0 and a negative one run,
    the model's bits (the perf kernel's clamp of var + eps at -99.99 included)."""
    rng = np.random.default_rng(3)
    args = inputs(rng, (4, 40), F16)
    got, y2, s2 = call(arena, args, eps=eps)
    assert_matches(got, args, y2, s2, eps=eps)


@needs_regbase
def test_regbase_x1_of_rank_1_is_the_tilings_refusal(arena):
    """CheckInputShapeDim: x1 of rank 2 to 8 (the Atlas kernels take rank 1); the L0 op
    discards the tiling's status, so the device's phase one passes it: stricter, 561002."""
    a = Args(arena, m=1).single()
    for k in ("x1", "x2", "x", "y1"):
        a.v[k] = a.make((32,), a.v[k].dtype)
    a.v["sc1"] = a.make((1,), F32)
    expect(a, TILING, "x1 rank 1", "at least 2")


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
