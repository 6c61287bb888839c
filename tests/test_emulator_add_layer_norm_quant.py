"""The emulator's aclnnAddLayerNormQuant through raw calls: phase one's checks, codes and
messages in the op_api's order (hicann/ops-nn norm/add_layer_norm_quant/op_host/op_api/
aclnn_add_layer_norm_quant.cpp: CheckPlatform refuses every part but Ascend 950 with 161002
before anything else; the kernels of op_host/add_layer_norm_quant_def.cpp's config_950; the
tiling's refusals and kernel choice, op_host/add_layer_norm_quant_tiling_arch35.cpp; the
stricter choices in docs/emulator.md), and Ascend 950's numbers of the full-load kernels
(op_kernel/arch35/add_layer_norm_static_quant_regbase_full_load_kernel.h,
add_layer_norm_dynamic_quant_regbase_full_load_kernel.h): bit for bit against a NumPy model
of their float32 chain (the binary-add sums, the Newton-Raphson rstd; static: one and two
outputs, with and without zero points and bias, divMode true and false; dynamic: without
scales, with scales1, with both, the per-row scale max|t| * (float)(1/127) and t / scale) and
within one quantization step of the float64 reference (the dynamic out scales within float32
rounding of it); the dynamic mode's empty-input kernel (-inf out scales). The Welford
kernels' NumPy model (welford_stats) is here as well; their tests are in
test_emulator_add_layer_norm_quant_welford.py. The file runs on every part (its numbers on
Ascend 950, in a child process from the others).
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _device_reduce import binary_sum
from _emu_aclnn import passes, refusal_check, run_phase_two, SOC
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_add_rms_norm_dynamic_quant import assert_near_dynamic_reference
from test_emulator_add_rms_norm_quant import read_int, to_int8, view
from test_emulator_rms_norm_quant import v2_rstd

P1 = lib.aclnnAddLayerNormQuantGetWorkspaceSize
P2 = lib.aclnnAddLayerNormQuant
CALL = "aclnnAddLayerNormQuantGetWorkspaceSize"
TILING = 561002
FIND_KERNEL = 561003
I8 = np.dtype(np.int8)
REGBASE = SOC.startswith("Ascend950")
# (x dtype, scales dtype) of config_950
COMBOS = [(F16, F16), (BF16, BF16), (F32, F32), (F16, F32), (BF16, F32)]
NAMES = ("x1", "x2", "gamma", "beta", "bias", "s1", "s2", "z1", "z2", "y1", "y2", "x", "os1",
         "os2")

# The op_api runs on Ascend 950 only (aclnn_add_layer_norm_quant.cpp CheckPlatform): a test of
# what it computes is defined there only; elsewhere test_every_other_part_is_refused_before_the_
# arguments checks the refusal.
on_950 = only_where(REGBASE)


def phase_one(views, mode="static", eps=1e-5, additional=True, div_mode=True, ws=True,
              ex=True):
    mode_arg = ffi.NULL if mode is None else ffi.new("char[]", mode.encode())
    v = list(views)
    return aclnn_phase_one(P1, *v[:9], mode_arg, eps, additional, div_mode, *v[9:],
                           ws=ws, ex=ex)


def inputs(rng, shape, dt, sdt, dual=True, zero_points=True, bias=None, scale=40.0):
    """(x1, x2, gamma, beta, bias, s1, s2, z1, z2) over gamma = x's last dim; bias None,
    "gamma" or "x1" (its shape)."""
    n = shape[-1]
    x1 = (rng.standard_normal(shape) * 2 + 0.25).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    b = (0.25 * rng.standard_normal(n)).astype(dt)
    c = None if bias is None else (0.5 * rng.standard_normal(shape if bias == "x1" else n)
                                   ).astype(dt)
    s1 = (1.0 / scale * (1 + 0.25 * rng.random(n))).astype(sdt)
    z1 = rng.integers(-3, 4, n).astype(sdt) if zero_points else None
    s2 = (0.5 * s1.astype(F32)).astype(sdt) if dual else None
    z2 = (-rng.integers(-3, 4, n)).astype(sdt) if dual and zero_points else None
    return x1, x2, g, b, c, s1, s2, z1, z2


def run_views(arena, args, kinds=None, **kw):
    """Runs both phases over views of args (y1, y2 of sentinel -77, x -7, the out scales of
    x1's leading dims -5); returns the output views (y1, y2, x, outScales1, outScales2)."""
    x1 = args[0]
    kinds = kinds or ("contig",) * 12
    views = [None if a is None else view(arena, a, kind=k) for a, k in zip(args, kinds)]
    outs = [view(arena, shape=x1.shape, dtype=I8, kind=kinds[9], sentinel=-77),
            view(arena, shape=x1.shape, dtype=I8, kind=kinds[10], sentinel=-77),
            DevView(arena, shape=x1.shape, dtype=x1.dtype, kind=kinds[11], sentinel=-7)]
    outs += [DevView(arena, shape=x1.shape[:-1] or (1,), dtype=F32, sentinel=-5)
             for _ in range(2)]
    run_phase_two(arena, P2, phase_one(views + outs, **kw))
    return outs


def call(arena, args, kinds=None, eps=1e-5, div_mode=True, additional=True):
    """Runs the operator's static mode; returns (y1, y2 or None where not written, x or
    None where not written, y2 as read)."""
    vy1, vy2, vx, vo1, vo2 = run_views(arena, args, kinds, eps=eps, div_mode=div_mode,
                                       additional=additional)
    assert (vo1.read() == -5).all() and (vo2.read() == -5).all(), "outScales written"
    y2 = read_int(vy2)
    x = vx.read()
    if not additional:
        assert (x.astype(F32) == -7).all(), "xOut written without additionalOutput"
    return read_int(vy1), (None if args[6] is None else y2), (x if additional else None), y2


# ---- the NumPy model of the full-load kernel's float32 chain ----------------------------------

def full_load_stats(x):
    """VFCalcMeanVar(Fast) on [M, N] rows: (mean, var), the binary sums of x / N and of
    (x - mean)^2 / N."""
    nf = np.float32(x.shape[1])
    mean = binary_sum(x / nf)
    d = x - mean[:, None]
    return mean, binary_sum((d * d) / nf)


def welford_stats(x, slices):
    """The Welford kernels' (mean, var) of [M, N] rows cut into slices = (colsPerLoop,
    colsLoopCount, colsTail): VFWelfordParallelUpdateCommon per slice (scale 1 / count), then
    VFWelfordParallelFinalizeAlign (equal slices) or NonAlign: columns below the tail weigh
    count, the others count - 1, those of the register holding the tail's end the latter's
    product times coeff = count / (count - 1)."""
    f = np.float32
    per, loops, tail = slices
    m, n = x.shape
    wmean, wm2 = np.zeros((m, per), F32), np.zeros((m, per), F32)
    for j in range(loops):
        ln = tail if j == loops - 1 else per
        xs = x[:, j * per:j * per + ln]
        d1 = xs - wmean[:, :ln]
        wmean[:, :ln] = wmean[:, :ln] + d1 * (f(1) / f(j + 1))
        wm2[:, :ln] = wm2[:, :ln] + d1 * (xs - wmean[:, :ln])
    col = np.arange(per)
    align = tail == per
    rs = f(1) / f(n)
    cnt = f(loops if align else loops - 1)
    tcnt = cnt + f(1)
    below, edge = col < tail, (col // 64 == tail // 64) & (tail % 64 != 0)
    with np.errstate(all="ignore"):
        coeff = tcnt / cnt

    def weigh(v, low, high):       # v times its column's count, as the finalize forms it
        if align:                  # every column: count (cnt)
            return v * low
        return np.where(~below, v * low, np.where(edge, (v * low) * coeff, v * high))

    mean = binary_sum(wmean * (f(1) / f(per)) if align else weigh(wmean, cnt * rs, tcnt * rs))
    d = wmean - mean[:, None]
    return mean, binary_sum((wm2 + weigh(d * d, cnt, tcnt)) * rs)


def normed_rows(x1, x2, g, b, c, eps=1e-5, slices=None):
    """Both modes' float32 LayerNorm on [M, N] rows: (v, x): x = the sum, v = ((x - mean) *
    rstd) * gamma + beta, mean and var by the full-load kernel or (slices given) the Welford
    kernel."""
    n = x1.shape[-1]
    a, bb = x1.astype(F32).reshape(-1, n), x2.astype(F32).reshape(-1, n)
    if c is None:
        x = a + bb
    else:
        x = (bb + np.broadcast_to(c.astype(F32).reshape(-1, n), bb.shape)) + a
    mean, var = full_load_stats(x) if slices is None else welford_stats(x, slices)
    rstd = np.array([v2_rstd(v, eps, False) for v in var], F32)
    v = (((x - mean[:, None]) * rstd[:, None]) * g.astype(F32)) + b.astype(F32)
    return v, x


def device_chain(x1, x2, g, b, c, s1, s2, z1, z2, eps=1e-5, div_mode=True, slices=None):
    """The static kernels' numbers on [M, N] rows: (y1, y2 or None, x)."""
    v, x = normed_rows(x1, x2, g, b, c, eps, slices)

    def quant(scales, zp):
        with np.errstate(all="ignore"):
            t = v / scales.astype(F32) if div_mode else v * scales.astype(F32)
            if zp is not None:
                t = t + zp.astype(F32)
        return to_int8(t).reshape(x1.shape)

    y2 = None if s2 is None else quant(s2, z2)
    return quant(s1, z1), y2, x.astype(x1.dtype).reshape(x1.shape)


def assert_matches(got, args, div_mode=True, slices=None):
    y1, y2, x = device_chain(*args, div_mode=div_mode, slices=slices)
    assert np.array_equal(got[0], y1)
    if got[2] is not None:
        assert np.array_equal(got[2].view(np.uint8), x.view(np.uint8))
    if y2 is None:
        assert got[1] is None and (got[3] == -77).all(), "y2 written without scales2"
    else:
        assert np.array_equal(got[1], y2)
    exp = reference.add_layer_norm_quant(*args, div_mode=div_mode)
    for k in (0, 1):
        if exp[k] is not None:
            finite = np.isfinite(exp[k])
            assert np.max(np.abs(got[k].astype(np.float64) - exp[k])[finite],
                          initial=0.0) <= reference.QUANT_STEP
    return y1


# ---- numbers (Ascend 950) -----------------------------------------------------------------------

def combo_ids(c):
    return "-".join({F16: "f16", BF16: "bf16", F32: "f32"}[d] for d in c)


@on_950
@pytest.mark.parametrize("combo", COMBOS, ids=combo_ids)
@pytest.mark.parametrize("m,n", [(5, 48), (3, 64), (4, 200), (2, 1000), (2, 4500)])
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_chain_bits_and_reference(arena, combo, m, n, dual):
    """Bit for bit the full-load kernel's chain (one register; the binary add with one and
    several folds); xOut the sum in x1's dtype; y2 only with scales2; within one step of the
    float64 reference."""
    rng = np.random.default_rng(m * n)
    args = inputs(rng, (m, n), *combo, dual=dual)
    y1 = assert_matches(call(arena, args), args)
    assert len(np.unique(y1)) > 20


@on_950
@pytest.mark.parametrize("bias", ["gamma", "x1"])
def test_bias_of_gammas_or_x1s_shape(arena, bias):
    """(x2 + bias) + x1, the bias broadcast over the rows or one row per row."""
    rng = np.random.default_rng(11)
    args = inputs(rng, (6, 96), BF16, F32, bias=bias)
    assert_matches(call(arena, args), args)


@on_950
def test_zero_point_combinations_and_div_mode_false(arena):
    rng = np.random.default_rng(3)
    x1, x2, g, b, c, s1, s2, z1, z2 = inputs(rng, (4, 96), F16, F16, scale=0.03)
    for args in ((x1, x2, g, b, c, s1, s2, None, None), (x1, x2, g, b, c, s1, None, z1, None),
                 (x1, x2, g, b, c, s1, None, None, None)):
        assert_matches(call(arena, args, div_mode=False), args, div_mode=False)


@on_950
def test_additional_output_false_leaves_x_unwritten(arena):
    rng = np.random.default_rng(5)
    args = inputs(rng, (3, 80), F32, F32)
    got = call(arena, args, additional=False)
    assert got[2] is None
    assert_matches(got, args)


@on_950
def test_saturates_and_nan_is_zero(arena):
    rng = np.random.default_rng(9)
    args = list(inputs(rng, (3, 64), F32, F32, dual=False, zero_points=False, scale=1e3))
    args[0][2, 5] = np.nan
    got = call(arena, tuple(args))
    y1 = assert_matches(got, tuple(args))
    assert y1[0].min() == -128 and y1[0].max() == 127
    assert (y1[2] == 0).all()


@on_950
@pytest.mark.parametrize("kind", ["padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    rng = np.random.default_rng(21)
    args = inputs(rng, (5, 72), F16, F32, bias="x1")
    want = call(arena, args)
    got = call(arena, args, kinds=(kind,) * 12)
    for k in range(3):
        assert np.array_equal(got[k].view(np.uint8), want[k].view(np.uint8))


@on_950
def test_rank_2_gamma_over_a_rank_3_x(arena):
    rng = np.random.default_rng(4)
    x1, x2, g, b, c, s1, s2, z1, z2 = inputs(rng, (3, 4 * 24), F32, F32)
    shape, gs = (3, 4, 24), (4, 24)
    args = (x1.reshape(shape), x2.reshape(shape), g.reshape(gs), b.reshape(gs), None,
            s1.reshape(gs), s2.reshape(gs), z1.reshape(gs), z2.reshape(gs))
    got = call(arena, args)
    y1, y2, x = device_chain(x1, x2, g, b, c, s1, s2, z1, z2)
    assert np.array_equal(got[0], y1.reshape(shape)) and np.array_equal(got[1], y2.reshape(shape))


# ---- the dynamic mode (Ascend 950) -----------------------------------------------------------

def dynamic_chain(x1, x2, g, b, c, s1, s2, eps=1e-5, slices=None):
    """The dynamic kernels' numbers on [M, N] rows: (y1, y2 or None, x, os1, os2 or None): per
    output t = v * scales (v without scales1), the row's scale max|t| (from 0, a NaN skipped)
    times float32(1/127), y = Round2Int8(t / scale)."""
    v, x = normed_rows(x1, x2, g, b, c, eps, slices)

    def quant(scales):
        t = v if scales is None else v * scales.astype(F32)
        a = np.abs(t)
        scale = np.where(np.isnan(a), np.float32(0), a).max(axis=1) * np.float32(1.0 / 127.0)
        with np.errstate(all="ignore"):
            q = t / scale[:, None]
        return to_int8(q).reshape(x1.shape), scale.reshape(x1.shape[:-1])

    y1, o1 = quant(s1)
    y2, o2 = (None, None) if s2 is None else quant(s2)
    return y1, y2, x.astype(x1.dtype).reshape(x1.shape), o1, o2


def dynamic_inputs(rng, shape, dt, scales=2, bias=None):
    """(x1, x2, gamma, beta, bias, s1, s2, None, None) of the dynamic mode: smooth scales of
    x1's dtype, `scales` of them (0, 1: scales1, 2: both)."""
    args = list(inputs(rng, shape, dt, dt, dual=scales == 2, zero_points=False, bias=bias))
    args[5] = (4 * args[5].astype(F32)).astype(dt) if scales else None
    return tuple(args)


def call_dynamic(arena, args, kinds=None, additional=True, eps=1e-5):
    """Runs the dynamic mode; returns (y1, y2 as read, x, out scales 1, out scales 2 as
    read)."""
    vy1, vy2, vx, vo1, vo2 = run_views(arena, args, kinds, mode="dynamic", eps=eps,
                                       additional=additional)
    return read_int(vy1), read_int(vy2), vx.read(), vo1.read(), vo2.read()


def assert_dynamic_matches(got, args, slices=None):
    y1, y2, x, o1, o2 = dynamic_chain(*args[:7], slices=slices)
    assert np.array_equal(got[0], y1)
    assert np.array_equal(got[2].view(np.uint8), x.view(np.uint8))
    assert np.array_equal(got[3].view(np.uint32), o1.view(np.uint32))
    if y2 is None:
        assert (got[1] == -77).all() and (got[4] == -5).all(), "y2 or outScales2 written"
    else:
        assert np.array_equal(got[1], y2)
        assert np.array_equal(got[4].view(np.uint32), o2.view(np.uint32))
    assert_near_dynamic_reference(got, reference.add_layer_norm_quant(*args, quant_mode="dynamic"),
                                  scale_rtol=1e-5)
    return y1


@on_950
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m,n", [(5, 48), (3, 64), (4, 200), (2, 1000)])
@pytest.mark.parametrize("scales", [0, 1, 2], ids=["no-scales", "scales1", "dual"])
def test_dynamic_bits_and_reference(arena, dt, m, n, scales):
    """Bit for bit the dynamic full-load kernel's chain (its out scales too); y2 and
    outScales2 only with scales2; within one step (the out scales float32 rounding) of the
    float64 reference."""
    rng = np.random.default_rng(m * n + scales)
    args = dynamic_inputs(rng, (m, n), dt, scales)
    y1 = assert_dynamic_matches(call_dynamic(arena, args), args)
    assert y1.min() == -127 or y1.max() == 127       # each row's largest |t| maps to 127
    assert len(np.unique(y1)) > 20


@on_950
@pytest.mark.parametrize("bias", ["gamma", "x1"])
def test_dynamic_bias_rank_3_and_strided_views(arena, bias):
    rng = np.random.default_rng(12)
    args = dynamic_inputs(rng, (2, 3, 72), BF16, 2, bias=bias)
    got = call_dynamic(arena, args)
    assert_dynamic_matches(got, args)
    strided = call_dynamic(arena, args, kinds=("stepped",) * 12)
    for k in range(5):
        assert np.array_equal(strided[k].view(np.uint8), got[k].view(np.uint8))


@on_950
def test_dynamic_zero_row_and_no_additional_output(arena):
    """A row of zeros: scale 0, its y 0 (0 / 0 written as 0); xOut left alone without
    additionalOutput."""
    rng = np.random.default_rng(8)
    args = list(dynamic_inputs(rng, (3, 40), F16, 1))
    args[0][1], args[1][1], args[3][:] = 0, 0, 0
    got = call_dynamic(arena, tuple(args), additional=False)
    assert (got[2].astype(F32) == -7).all(), "xOut written without additionalOutput"
    assert got[3][1] == 0 and (got[0][1] == 0).all()
    y1, _, _, o1, _ = dynamic_chain(*args[:7])
    assert np.array_equal(got[0], y1) and np.array_equal(got[3], o1)


@on_950
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_dynamic_rows_of_no_elements_get_minus_infinity(arena, dual):
    """x1 [4, 0] (gamma [0]): the empty-input kernel writes -inf out scales (outScales2 with
    scales2), nothing else; no epsilon rule there (its tiling checks none)."""
    args = Args(arena, n=0)
    args.mode, args.eps = "dynamic", 0.0
    args.v["z1"] = args.v["z2"] = None
    if not dual:
        args.v["s2"] = None
    for k in ("os1", "os2"):
        args.v[k] = DevView(arena, shape=(4,), dtype=F32, sentinel=-5)
    run_phase_two(arena, P2, args.call())
    assert (args.v["os1"].read() == -np.inf).all()
    assert (args.v["os2"].read() == (-np.inf if dual else -5)).all()


# ---- phase one ---------------------------------------------------------------------------------

class Args:
    """Valid views for phase one (FLOAT16 x [4, 32], FLOAT16 scales and zero points, INT8 y,
    FLOAT outScales [4]), replaced one at a time."""

    def __init__(self, arena, n=32):
        self.arena = arena
        mk = self.make
        self.v = {"x1": mk((4, n), F16), "x2": mk((4, n), F16), "gamma": mk((n,), F16),
                  "beta": mk((n,), F16), "bias": None, "s1": mk((n,), F16),
                  "s2": mk((n,), F16), "z1": mk((n,), F16), "z2": mk((n,), F16),
                  "y1": mk((4, n), I8), "y2": mk((4, n), I8), "x": mk((4, n), F16),
                  "os1": mk((4,), F32), "os2": mk((4,), F32)}
        self.mode, self.eps, self.div_mode = "static", 1e-5, True

    def make(self, shape, dt):
        return view(self.arena, shape=shape, dtype=dt)

    def call(self, ws=True, ex=True):
        return phase_one([self.v[k] for k in NAMES], mode=self.mode, eps=self.eps,
                         div_mode=self.div_mode, ws=ws, ex=ex)


expect = refusal_check(CALL)


def test_null_out_pointers_come_first(arena):
    a = Args(arena)
    a.v["x1"] = None
    for kw, name in (({"ws": False}, "workspaceSize"), ({"ex": False}, "executor")):
        rc, _, _ = a.call(**kw)
        msg = last_msg()
        assert rc == NULLPTR and msg.startswith(CALL + ": " + name), msg


@only_where(not REGBASE)   # Ascend 950 runs the op_api
def test_every_other_part_is_refused_before_the_arguments(arena):
    """CheckPlatform comes first: 161002 even for a NULL x1."""
    expect(Args(arena), INVALID, "not supported on", SOC, "Ascend 950 only")
    a = Args(arena)
    a.v["x1"] = None
    expect(a, INVALID, "not supported on", "Ascend 950 only")


@on_950
def test_valid_arguments_pass(arena):
    passes(Args(arena))
    a = Args(arena)
    for k in ("s2", "z1", "z2"):
        a.v[k] = None
    passes(a)


@on_950
@pytest.mark.parametrize("name,c_name", [
    ("x1", "x1"), ("x2", "x2"), ("gamma", "gamma"), ("beta", "beta"), ("y1", "y1Out"),
    ("y2", "y2Out"), ("x", "xOut"), ("os1", "outScales1Out"), ("os2", "outScales2Out")])
def test_each_required_tensor(arena, name, c_name):
    a = Args(arena)
    a.v[name] = None
    expect(a, NULLPTR, c_name + " is NULL")


@on_950
def test_quant_mode(arena):
    a = Args(arena)
    a.mode = None
    expect(a, NULLPTR, "quantMode is NULL")
    a.v["x1"] = None
    expect(a, NULLPTR, "x1 is NULL")          # the tensors' NULLs first
    a = Args(arena)
    a.mode = "dyn"
    expect(a, INVALID, 'quantMode "dyn"', "neither")
    a.mode = "static_v2"                    # the op_api compares a prefix; the tiling does not
    expect(a, TILING, 'quantMode "static_v2"', "exactly")


@on_950
@pytest.mark.parametrize("name,dt,words", [
    ("x1", I8, ("x1 dtype INT8", "not supported")),
    ("x2", F32, ("x2 dtype FLOAT", "x1's dtype")),
    ("gamma", BF16, ("gamma dtype BF16",)),
    ("beta", F32, ("beta dtype FLOAT",)),
    ("bias", F32, ("biasOptional dtype FLOAT",)),
    ("y1", F16, ("y1Out dtype FLOAT16",)),
    ("y2", F16, ("y2Out dtype FLOAT16",)),
    ("x", F32, ("xOut dtype FLOAT",)),
    ("os1", F16, ("outScales1Out dtype FLOAT16",)),
    ("os2", BF16, ("outScales2Out dtype BF16",)),
    ("s1", I8, ("scales1Optional dtype INT8", "not supported")),
    ("s2", F32, ("scales2Optional dtype FLOAT", "scales1Optional's dtype")),
    ("z1", BF16, ("zeroPoints1Optional dtype BF16",)),
    ("z2", F32, ("zeroPoints2Optional dtype FLOAT",)),
])
def test_dtypes_in_the_op_apis_order(arena, name, dt, words):
    a = Args(arena)
    shape = a.v[name].shape if a.v[name] is not None else a.v["gamma"].shape
    a.v[name] = a.make(shape, dt)
    expect(a, INVALID, *words)


@on_950
def test_dynamic_mode_dtypes(arena):
    a = Args(arena)
    a.mode = "dynamic"
    for k in ("z1", "z2"):
        a.v[k] = None
    for k in ("x1", "x2", "gamma", "beta", "x"):
        a.v[k] = a.make(a.v[k].shape, F32)
    expect(a, INVALID, "x1 dtype FLOAT", "FLOAT16, BF16")
    a = Args(arena)
    a.mode = "dynamic"
    a.v["s1"] = a.make((32,), BF16)
    expect(a, INVALID, "scales1Optional dtype BF16", "x1's dtype")


@on_950
@pytest.mark.parametrize("name,shape,words", [
    ("gamma", (16,), ("gamma shape [16]", "trailing dims")),
    ("x2", (2, 64), ("x2 shape [2,64]", "x1's shape")),
    ("x", (4, 1, 32), ("xOut shape",)),
    ("y1", (32, 4), ("y1Out shape",)),
    ("y2", (2, 32), ("y2Out shape",)),          # with scales2 (dual)
    ("beta", (1, 32), ("beta shape [1,32]", "gamma's shape")),
    ("s1", (31,), ("scales1Optional shape",)),
    ("z2", (1, 32), ("zeroPoints2Optional shape",)),
    ("bias", (4, 1), ("biasOptional shape [4,1]", "gamma's shape or x1's shape")),
])
def test_shapes(arena, name, shape, words):
    a = Args(arena)
    a.v[name] = a.make(shape, a.v[name].dtype if a.v[name] is not None else F16)
    expect(a, INVALID, *words)


@on_950
def test_ranks_above_8(arena):
    a = Args(arena)
    shape = (1,) * 8 + (4, 32)
    for k in ("x1", "x2", "y1", "y2", "x"):
        a.v[k] = a.make(shape, a.v[k].dtype)
    expect(a, INVALID, "x1 rank 10 is above 8")


@on_950
def test_dynamic_shape_rules(arena):
    a = Args(arena)
    a.mode = "dynamic"
    for k in ("z1", "z2"):
        a.v[k] = None
    a.v["os1"] = a.make((4, 1), F32)
    expect(a, INVALID, "outScales1Out shape [4,1]", "without its last dim")
    a.v["os1"] = a.make((4,), F32)
    a.v["os2"] = a.make((2,), F32)
    expect(a, INVALID, "outScales2Out shape [2]", "outScales1Out's shape")


@on_950
@pytest.mark.parametrize("mode,given", [
    ("static", ("s2", "z1")), ("static", ("s2", "z2")), ("static", ("z2",)),
    ("static", ("z1", "z2")), ("dynamic", ("z1",)), ("dynamic", ("s2",))])
def test_optional_input_combinations(arena, mode, given):
    """CheckOptCombValid's table (static: scales1 always; dynamic: no zero points, scales2
    only beside scales1)."""
    a = Args(arena)
    a.mode = mode
    for k in ("s1", "s2", "z1", "z2"):
        if k not in given and not (k == "s1" and mode == "static"):
            a.v[k] = None
    expect(a, INVALID, "not a valid combination", mode + " mode")


@on_950
def test_static_mode_needs_scales1(arena):
    a = Args(arena)
    for k in ("s1", "s2", "z1", "z2"):
        a.v[k] = None
    expect(a, INVALID, "not a valid combination", "scales1Optional always")


@on_950
def test_empty_tensors(arena):
    """An empty outScales1Out: the op_api's own success with nothing launched; an empty x1 in
    static mode: nothing visible is written; an empty y2Out or outScales beside a non-empty x1
    (the op_api would compute nothing): refused, stricter."""
    a = Args(arena)
    for k in ("x1", "x2", "y1", "y2", "x"):
        a.v[k] = a.make((0, 32), a.v[k].dtype)
    passes(a)
    a = Args(arena)
    a.mode = "dynamic"
    for k in ("z1", "z2"):
        a.v[k] = None
    for k in ("os1", "os2"):
        a.v[k] = a.make((0,), F32)
    for k in ("x1", "x2", "y1", "y2", "x"):
        a.v[k] = a.make((0, 32), a.v[k].dtype)
    passes(a)
    for name, c_name in (("y2", "y2Out"), ("os1", "outScales1Out"), ("os2", "outScales2Out")):
        a = Args(arena)
        if name == "y2":
            a.v["s2"] = a.v["z1"] = a.v["z2"] = None
        a.v[name] = a.make((0,) + a.v[name].shape[1:], a.v[name].dtype)
        expect(a, INVALID, c_name + " is empty while x1 is not")


@on_950
def test_the_tilings_refusals(arena):
    a = Args(arena)
    a.eps = 0.0
    expect(a, TILING, "epsilon 0", "greater than 0")
    a.eps = 1e-50                        # 0 as a float
    expect(a, TILING, "greater than 0")


@on_950
@pytest.mark.parametrize("x_dt,s_dt", [(F16, BF16), (BF16, F16), (F32, F16), (F32, BF16)])
def test_no_kernel_for_the_combination(arena, x_dt, s_dt):
    a = Args(arena)
    for k in ("x1", "x2", "gamma", "beta", "x"):
        a.v[k] = a.make(a.v[k].shape, x_dt)
    for k in ("s1", "s2", "z1", "z2"):
        a.v[k] = a.make(a.v[k].shape, s_dt)
    expect(a, FIND_KERNEL, "not supported on", "no kernel")


@on_950
def test_dynamic_mode_passes(arena):
    a = Args(arena)
    a.mode = "dynamic"
    for k in ("z1", "z2"):
        a.v[k] = None
    passes(a)


@on_950
@pytest.mark.parametrize("name,c_name", [("y2", "y2Out"), ("os2", "outScales2Out")])
def test_dynamic_empty_second_output_is_refused(arena, name, c_name):
    """Without scales2 an empty y2Out or outScales2Out beside a non-empty x1 sends the op_api
    to the empty-input kernel (-inf out scales, no y1): refused as in static mode."""
    a = Args(arena)
    a.mode = "dynamic"
    for k in ("s2", "z1", "z2"):
        a.v[k] = None
    a.v[name] = a.make((0,) + a.v[name].shape[1:], a.v[name].dtype)
    expect(a, INVALID, c_name + " is empty while x1 is not")


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
