"""The emulator's aclnnGroupNorm through raw calls: phase one's checks, their order, codes and
messages (hicann/ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp; the stricter
choices in docs/emulator.md), the vendor's own op_api unit test cases replayed with their
expected status, the empty input's fill, and the device's numbers: against the
float64 reference for every dtype, and bit for bit against each part's chain written in NumPy
(group_norm_silu's kernels on Atlas A2/A3 and inference parts: the one-pass variance,
y = x * scale + bias, CAST_ROUND on A2/A3; Ascend 950's two-pass regbase kernel; the Atlas
training parts' L0 GroupNorm with the op_api's Rsqrt(Add(variance, eps)) in input's dtype);
bits independent of layout and thread count; the other parts in their own processes.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _emu_aclnn import SOC, both_phases_without_a_device, run_phase_two
from _part_runs import cases_where, only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one
from _workspace_model import ARCH

P1 = lib.aclnnGroupNormGetWorkspaceSize
P2 = lib.aclnnGroupNorm
BF16_PART = ARCH in (2201, 3510)
DTYPES = [F32, F16, *cases_where(BF16_PART, BF16)]   # a part without BF16: no such case
SENTINEL = -77.0


def phase_one(x, g, b, n, c, hw, group, eps, y, m, r, ws=True, ex=True):
    return aclnn_phase_one(P1, x, g, b, n, c, hw, group, eps, y, m, r, ws=ws, ex=ex)


def dims(shape):
    return shape[0], shape[1], math.prod(shape[2:])


def call(arena, x, group, g=None, b=None, eps=1e-5, kinds=("contig",) * 6):
    """Runs the operator on x [N, C, ...]; (out, mean, rstd) read back."""
    vx = DevView(arena, x, kind=kinds[0])
    vg = None if g is None else DevView(arena, g, kind=kinds[1])
    vb = None if b is None else DevView(arena, b, kind=kinds[2])
    n, c, hw = dims(x.shape)
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kinds[3], sentinel=SENTINEL)
    vm = DevView(arena, shape=(n, group), dtype=x.dtype, kind=kinds[4], sentinel=SENTINEL)
    vr = DevView(arena, shape=(n, group), dtype=x.dtype, kind=kinds[5], sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(vx, vg, vb, n, c, hw, group, eps, vy, vm, vr))
    return vy.read(), vm.read(), vr.read()


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def round_f16_ties_away(v):
    """float32 -> float16 to nearest, ties away from zero (CAST_ROUND), as float16."""
    even = v.astype(np.float16)
    w = even.astype(np.float64)
    other = 2 * v.astype(np.float64) - w
    tie = (other.astype(np.float16).astype(np.float64) == other) & (np.abs(other) > np.abs(w))
    return np.where(tie, other.astype(np.float16), even)


def to_dtype(v, dt):
    """The kernel's rounding of float32 values to dt on this part."""
    v = v.astype(np.float32)
    if dt == F32:
        return v
    if dt == F16:
        return round_f16_ties_away(v) if ARCH == 2201 else v.astype(F16)
    if ARCH == 2201:   # CAST_ROUND: ties away from zero
        u = v.view(np.uint32).astype(np.uint64)
        r = ((u + 0x8000) & 0xFFFF0000).astype(np.uint32).view(np.float32)
        return r.astype(BF16)
    return v.astype(BF16)


def lane_sum(t):
    """Rows' sums in the emulator's fixed order (16 lanes over the row, then a pairwise fold
    of the lanes), in float32."""
    f = np.float32
    m, e = t.shape
    pad = (-e) % 16
    t = np.concatenate([t, np.zeros((m, pad), f)], axis=1).reshape(m, -1, 16)
    acc = np.zeros((m, 16), f)
    for k in range(t.shape[1]):
        acc = (acc + t[:, k]).astype(f)
    s = 8
    while s:
        acc[:, :s] = (acc[:, :s] + acc[:, s:2 * s]).astype(f)
        s //= 2
    return acc[:, 0]


def silu(y):
    """GroupNormSilu's activation on float32 y as its kernels compute it: y / (1 + exp(-y))
    (Muls -1, Exp, Adds 1, Div), exp correctly rounded to float32."""
    f = np.float32
    with np.errstate(over="ignore"):
        t = np.exp(-y.astype(np.float64)).astype(f)
    return (y / (t + f(1)).astype(f)).astype(f)


def device_chain(x, group, g, b, eps, *, activate=False, add_beta=True, stats_dtype=None):
    """(out, mean, rstd) as this part's kernel makes them (the module doc), out in x's dtype,
    mean and rstd in ``stats_dtype`` (default x's). GroupNormSilu's: ``activate`` applies
    :func:`silu` to the float32 out before its rounding; ``add_beta`` False: Ascend 950's
    kernel without beta, which adds nothing (not even +0)."""
    f = np.float32
    n, c, hw = dims(x.shape)
    d = c // group
    e = d * hw
    rows = x.astype(f).reshape(n * group, e)
    gm = (np.ones(c, f) if g is None else g.astype(f)).reshape(1, group, d, 1)
    bt = (np.zeros(c, f) if b is None else b.astype(f)).reshape(1, group, d, 1)
    eps32 = f(eps)
    with np.errstate(all="ignore"):
        if ARCH in (2201, 2002) and hw == 1 and d == 1:   # hw1, one channel per group
            mean = rows[:, 0].copy()
            rstd = np.full(n * group, f(1) / np.sqrt(eps32), f)
            y = np.broadcast_to(bt.reshape(1, c), (n, c)).astype(f)
        elif ARCH in (2201, 2002):
            num_rec = f(1) / f(e)
            mean = (lane_sum(rows) * num_rec).astype(f)
            sq = lane_sum((rows * rows).astype(f))
            rstd = (f(1) / np.sqrt((sq * num_rec - mean * mean + eps32).astype(f))).astype(f)
            scale = (rstd.reshape(n, group, 1, 1) * gm).astype(f)
            bias = (-scale * mean.reshape(n, group, 1, 1) + bt).astype(f)
            y = ((rows.reshape(n, group, d, hw) * scale).astype(f) + bias).astype(f)
            if hw == 1:   # the hw1 kernels: ((x - mean) * rstd) * gamma + beta
                t = ((rows - mean[:, None]).astype(f) * rstd[:, None]).astype(f)
                y = ((t.reshape(n, group, d, 1) * gm).astype(f) + bt).astype(f)
        else:
            if ARCH == 3510:
                p = 1 << e.bit_length()
                scale_n, corr = f(1) / f(p), f(p) / f(e)
            else:
                scale_n, corr = f(1) / f(e), f(1)
            mean = (lane_sum((rows * scale_n).astype(f)) * corr).astype(f)
            dev = (rows - mean[:, None]).astype(f)
            var = (lane_sum(((dev * dev).astype(f) * scale_n).astype(f)) * corr).astype(f)
            ve = (var + eps32).astype(f)
            rstd = (1 / np.sqrt(ve.astype(np.float64))).astype(f) if ARCH == 3510 \
                else (f(1) / np.sqrt(ve)).astype(f)
            t = (dev.reshape(n, group, d, hw) * rstd.reshape(n, group, 1, 1)).astype(f)
            y = ((t * gm).astype(f) + bt).astype(f) if add_beta else (t * gm).astype(f)
            if ARCH == 1001:   # Rsqrt(Add(variance, eps)) in x's dtype
                vh = var.astype(x.dtype).astype(f)
                s = (vh + f(eps32).astype(x.dtype).astype(f)).astype(x.dtype).astype(f)
                rstd = (f(1) / np.sqrt(s)).astype(f)
    if activate:
        y = silu(y.astype(f))
    sdt = x.dtype if stats_dtype is None else stats_dtype
    return (to_dtype(y.reshape(x.shape), x.dtype), to_dtype(mean.reshape(n, group), sdt),
            to_dtype(rstd.reshape(n, group), sdt))


def writes_stats(x, group):
    """Whether this part's kernel writes mean and rstd (all but some Atlas inference
    kernels)."""
    if ARCH != 2002:
        return True
    n, c, hw = dims(x.shape)
    size = x.dtype.itemsize
    if size == 2 and n == 1 and group == 32 and hw > 1:
        return False
    if hw < 32 // size:
        return True
    cores = 15   # Ascend310P3 (one of test_on_other_parts's parts): 8 AI cores + 7 vector cores
    per_core = -(-n * group // cores)
    return c + per_core > (4000 if size == 4 else 2700)


# ---- numbers ---------------------------------------------------------------------------------

SHAPES = [((2, 64, 8, 8), 32), ((3, 6, 5), 3), ((4, 32, 17), 1), ((2, 12), 4),
          ((1, 4, 1, 3, 1, 2, 1, 5), 2), ((2, 8, 1), 8)]


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,group", SHAPES,
                         ids=["64x8x8", "6x5", "32x17-one-group", "2-D", "rank8", "hw1"])
def test_numbers_against_float64_reference(arena, dt, shape, group):
    rng = np.random.default_rng(sum(shape) + group)
    x = rand(rng, shape, dt)
    g, b = rand(rng, shape[1], dt, 0.5, 1.0), rand(rng, shape[1], dt, 0.5, 0.0)
    got = call(arena, x, group, g, b)
    n, c, hw = dims(shape)
    exp = reference.group_norm(x, g, b, n, c, hw, group)
    mag = reference.group_norm_error_scale(x, g, b, n, c, hw, group)
    assert all(a.dtype == dt for a in got)
    for a, e, m, name in zip(got, exp, mag, ("out", "mean", "rstd")):
        if name != "out" and not writes_stats(x, group):
            assert (a == SENTINEL).all()
            continue
        reference.assert_close(a, e, m, dt, name)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no-affine"])
@pytest.mark.parametrize("shape,group", [((3, 16, 7, 9), 4), ((4, 24, 1), 6), ((3, 10, 1), 10)],
                         ids=["7x9", "hw1", "hw1-one-channel"])
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, affine, shape, group):
    rng = np.random.default_rng(11)
    x = rand(rng, shape, dt, 2.0, 0.75)
    c = shape[1]
    g = rand(rng, c, dt, 0.5, 1.0) if affine else None
    b = rand(rng, c, dt, 0.5, 0.0) if affine else None
    got = call(arena, x, group, g, b, eps=1e-5)
    want = device_chain(x, group, g, b, 1e-5)
    assert np.array_equal(bits(got[0]), bits(want[0]))
    if writes_stats(x, group):
        assert np.array_equal(bits(got[1]), bits(want[1]))
        assert np.array_equal(bits(got[2]), bits(want[2]))


@only_where(ARCH == 2201)   # the one-pass variance of Atlas A2/A3's kernels
def test_the_one_pass_variance_cancels_as_the_device_does(arena):
    """A large mean over a small spread: E[x^2] - mean^2 loses most bits in float32; the
    two-pass variance would not, so the case tells the chains apart."""
    rng = np.random.default_rng(4)
    x = (1000 + rng.standard_normal((2, 4, 64))).astype(F32)
    out, mean, rstd = call(arena, x, 2)
    want = device_chain(x, 2, None, None, 1e-5)
    assert np.array_equal(bits(rstd), bits(want[2]))
    exact = reference.group_norm(x, None, None, 2, 4, 64, 2)[2].astype(F32)
    assert not np.array_equal(bits(rstd), bits(exact))


@only_where(ARCH in (2201, 2002))   # the hw1 kernels of Atlas A2/A3 and the inference parts
def test_one_channel_groups_of_one_value_write_beta_as_out(arena):
    """HxW 1 and group == C: the kernel copies beta to out and x to mean, whatever x is (a
    NaN or a large value too): nothing of x's enters out."""
    x = np.array([[1e30, np.nan, -2.0, 7.0]], F32).reshape(1, 4, 1)
    b = np.array([0.1, 0.2, 0.3, 0.4], F32)
    out, mean, rstd = call(arena, x, 4, np.full(4, 3.0, F32), b)
    assert np.array_equal(out.ravel(), b)
    assert np.array_equal(mean.ravel(), x.ravel(), equal_nan=True)
    assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-5))).all()


def test_eps_reaches_the_kernel_as_float32(arena):
    """A constant group: variance 0, so rstd is 1 / sqrt((float)eps), out is beta. (HxW 4:
    every part's kernel writes mean and rstd there, the Atlas inference ones too:
    writes_stats.)"""
    x = np.full((2, 4, 4), 3.0, F32)
    assert writes_stats(x, 2)
    b = np.arange(4, dtype=F32)
    out, mean, rstd = call(arena, x, 2, np.ones(4, F32), b, eps=1e-6)
    assert (mean == 3).all()
    assert np.allclose(rstd, 1 / np.sqrt(np.float32(1e-6)), rtol=1e-6)
    assert np.array_equal(out, np.broadcast_to(b.reshape(1, 4, 1), x.shape))


@pytest.mark.parametrize("kinds", [(k,) * 6 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed", "contig", "stepped")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x = rand(rng, (4, 6, 5, 3), F16)
    g, b = rand(rng, 6, F16, 0.5, 1.0), rand(rng, 6, F16)
    base = call(arena, x, 3, g, b)
    got = call(arena, x, 3, g, b, kinds=kinds)
    for a, e in zip(base, got):
        assert np.array_equal(bits(a), bits(e))


def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(7)
    x = rand(rng, (5, 32, 300), F32)
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, x, 8))
    for r in runs[1:]:
        for a, e in zip(runs[0], r):
            assert np.array_equal(bits(a), bits(e))


def test_nan_propagates_to_its_group(arena):
    x = np.ones((1, 4, 8), F32)
    x[0, 3, 5] = np.nan
    out, mean, rstd = call(arena, x, 2)
    assert np.isfinite(out[0, :2]).all() and np.isnan(out[0, 2:]).all()
    if writes_stats(x, 2):
        assert np.isfinite(mean[0, 0]) and np.isnan(mean[0, 1])


@pytest.mark.parametrize("shape,group", [((0, 4, 3), 2), ((2, 4, 0), 2), ((2, 0, 5), 1)],
                         ids=["n0", "hw0", "c0"])
def test_empty_input_fills_mean_with_0_and_rstd_with_nan(arena, shape, group):
    """The op_api's FillScalar for an empty self: meanOut 0, rstdOut NaN, out untouched."""
    x = np.ones(shape, F16)
    out, mean, rstd = call(arena, x, group)
    assert (mean == 0).all() and np.isnan(rstd).all()
    assert mean.shape == (shape[0], group)


@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_an_empty_batch_needs_no_current_device(arena, null_stream):
    """N == 0: meanOut and rstdOut are [0, group] too, so the op_api's FillScalar launches
    nothing (l0op::Fill returns an empty output unlaunched; its ViewCopy copies no byte): both
    phases succeed on a thread that never set a device, with a NULL stream or a given one
    (nothing queued on it). HxW == 0 or C == 0 with N > 0 fills them (a Fill kernel) and a
    call with values launches the kernel: both need the thread's context, 361001."""
    stream = ffi.NULL if null_stream else arena.stream

    def args(shape, group):
        x, g, b, y, m, r = views(arena, shape, group)
        return (x, g, b, *dims(shape), group, 1e-5, y, m, r)
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, args((0, 4, 3), 2), stream)
    assert (rc, ws, rc2) == (OK, 0, OK), msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    workspace = arena.malloc(32 << 20)  # above the device's size for these calls
    for shape, group in (((2, 4, 0), 2), ((2, 0, 5), 1), ((2, 4, 3), 2)):
        rc, _, rc2, msg = both_phases_without_a_device(P1, P2, args(shape, group), stream,
                                                       workspace)
        assert (rc, rc2) == (OK, 361001), (shape, msg)
        assert msg.startswith("aclnnGroupNorm: ") and "no device" in msg, msg


def test_executor_keeps_running_on_new_contents(arena):
    # HxW 4: a shape whose mean every part's kernel writes (writes_stats)
    assert writes_stats(np.zeros((2, 4, 4), F32), 2)
    x = DevView(arena, np.zeros((2, 4, 4), F32))
    y = DevView(arena, shape=(2, 4, 4), dtype=F32)
    m, r = DevView(arena, shape=(2, 2), dtype=F32), DevView(arena, shape=(2, 2), dtype=F32)
    rc, ws, ex = phase_one(x, None, None, 2, 4, 4, 2, 1e-5, y, m, r)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    workspace = arena.malloc(ws)
    try:
        for k in (1, 3):
            arena.h2d(x.ptr, np.full(x.n, k, F32))
            assert P2(workspace, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            assert (m.read() == k).all() and (y.read() == 0).all()
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(2, 4, 3), group=2, xdt=F32, gdt=None, bdt=None, ydt=None, mdt=None,
          rdt=None, gshape=None, bshape=None, yshape=None, mshape=None, rshape=None, xacl=None):
    n = shape[0] if shape else 1
    x = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    c = shape[1] if len(shape) > 1 else 1
    g = DevView(arena, np.ones(gshape or (c,), gdt or xdt))
    b = DevView(arena, np.zeros(bshape or (c,), bdt or xdt))
    y = DevView(arena, shape=yshape or shape, dtype=ydt or xdt)
    m = DevView(arena, shape=mshape or (n, group), dtype=mdt or xdt)
    r = DevView(arena, shape=rshape or (n, group), dtype=rdt or xdt)
    return x, g, b, y, m, r


def refused(args, code, *words, n=2, c=4, hw=3, group=2, eps=1e-5):
    x, g, b, y, m, r = args
    rc, _, ex = phase_one(x, g, b, n, c, hw, group, eps, y, m, r)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith("aclnnGroupNormGetWorkspaceSize: "), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_out_pointers_first(arena):
    x, g, b, y, m, r = views(arena)
    assert phase_one(None, g, b, 2, 4, 3, 2, 1e-5, y, m, r, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(None, g, b, 2, 4, 3, 2, 1e-5, y, m, r, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k,name", [(0, "self"), (3, "out"), (4, "meanOut"), (5, "rstdOut")])
def test_each_required_tensor(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


def test_gamma_and_beta_are_optional(arena):
    x, _, _, y, m, r = views(arena)
    run_phase_two(arena, P2, phase_one(x, None, None, 2, 4, 3, 2, 1e-5, y, m, r))
    assert (y.read() == 0).all() and (m.read() == 1).all()


PARAM_CASES = [
    (dict(xacl=lib.ACL_INT32), {}, ("self dtype ACL_INT32", "FLOAT, FLOAT16")),
    (dict(gdt=F16), {}, ("gamma dtype FLOAT16 must be self's dtype FLOAT",)),
    (dict(bdt=F16), {}, ("beta dtype FLOAT16 must be self's dtype FLOAT",)),
    (dict(ydt=F16), {}, ("out dtype FLOAT16 must be self's dtype FLOAT",)),
    (dict(mdt=F16), {}, ("meanOut dtype FLOAT16",)),
    (dict(rdt=F16), {}, ("rstdOut dtype FLOAT16",)),
    (dict(), dict(group=0), ("group 0 must be greater than 0",)),
    (dict(), dict(group=3), ("C 4 must be divisible by group 3", "self [2,4,3]")),
    (dict(), dict(eps=0.0), ("eps 0 must be greater than 0",)),
    (dict(), dict(eps=float("nan")), ("eps nan must be greater than 0",)),
    (dict(shape=(8,), mshape=(8, 1), rshape=(8, 1)), dict(n=8, c=1, hw=1, group=1),
     ("self rank 1 is not in [2, 8]",)),
    (dict(shape=(1,) * 9, gshape=(1,), bshape=(1,), mshape=(1, 1), rshape=(1, 1)),
     dict(n=1, c=1, hw=1, group=1), ("self rank 9 is not in [2, 8]",)),
    (dict(yshape=(2, 4, 4)), {}, ("out shape [2,4,4] must equal self's shape [2,4,3]",)),
    (dict(mshape=(2, 1)), {}, ("meanOut shape [2,1] must be [N, group] = [2,2]",)),
    (dict(rshape=(4,)), {}, ("rstdOut shape [4] must be [N, group] = [2,2]",)),
    (dict(mshape=(3, 2), rshape=(3, 2)), dict(n=3), ("self's dim 0 (2) must equal N (3)",)),
    (dict(), dict(c=8), ("self's dim 1 (4) must equal C (8)",)),
    (dict(), dict(hw=4), ("dims after N and C (3) must equal HxW (4)",)),
    (dict(gshape=(2, 2)), {}, ("gamma shape [2,2] must be a vector of C = 4",)),
    (dict(bshape=(5,)), {}, ("beta shape [5] must be a vector of C = 4",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES,
                         ids=["self-int32", "gamma-dtype", "beta-dtype", "out-dtype",
                              "mean-dtype", "rstd-dtype", "group-0", "group-divides", "eps-0",
                              "eps-nan", "rank1", "rank9", "out-shape", "mean-shape",
                              "rstd-shape", "n", "c", "hxw", "gamma-shape", "beta-shape"])
def test_parameter_refusals(arena, case, kw, words):
    """The op_api's CheckParams: 161002, naming the argument and the rule."""
    refused(views(arena, **case), INVALID, *words, **kw)


def test_checks_run_in_the_vendor_order(arena):
    """dtypes before the attributes, the attributes before the shapes."""
    refused(views(arena, gdt=F16, yshape=(9,)), INVALID, "gamma dtype", group=0)
    refused(views(arena, yshape=(9,)), INVALID, "group 0", group=0)
    refused(views(arena, mshape=(1, 1)), INVALID, "meanOut shape", n=7)


@pytest.mark.parametrize("fmt,ok", [("ACL_FORMAT_NCHW", True), ("ACL_FORMAT_NCL", True),
                                    ("ACL_FORMAT_NHWC", False), ("ACL_FORMAT_NC1HWC0", False),
                                    ("ACL_FORMAT_HWCN", False)])
def test_formats(arena, fmt, ok):
    """CheckFormat: out's format self's; self neither private nor NHWC, HWCN, NDHWC."""
    x, g, b, y, m, r = views(arena, shape=(2, 4, 3, 1))
    shape, strides = [2, 4, 3, 1], [12, 3, 1, 1]

    def tensor(view, f):
        t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), 4, lib.ACL_FLOAT,
                                ffi.new("int64_t[]", strides), 0, f,
                                ffi.new("int64_t[]", [view.n]), 1, view.ptr)
        assert t != ffi.NULL, last_msg()
        arena.tensors.append(t)
        return t

    fx, fy = tensor(x, getattr(lib, fmt)), tensor(y, getattr(lib, fmt))
    rc, _, ex = phase_one(fx, g, b, 2, 4, 3, 2, 1e-5, fy, m, r)
    assert (rc == OK) == ok, (rc, last_msg())
    if ok:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
        nd = tensor(y, lib.ACL_FORMAT_ND)
        rc, _, ex = phase_one(fx, g, b, 2, 4, 3, 2, 1e-5, nd, m, r)
        assert rc == INVALID and "out's format" in last_msg(), last_msg()
    else:
        assert rc == INVALID and "self's format" in last_msg(), last_msg()


def test_dead_tensor_is_refused(arena):
    x, g, b, y, m, r = views(arena)
    arena.destroy_tensor(b.handle)
    try:
        refused((x, g, b, y, m, r), INVALID, "beta", "not a live aclTensor")
    finally:
        b.handle = arena.tensor(b.shape, b.dtype, b.strides, b.offset, b.n, b.ptr)


def test_refusals_leak_nothing(arena):
    """Every refusal above returns before an executor exists (the autouse leak check)."""
    for case, kw, _ in PARAM_CASES:
        x, g, b, y, m, r = views(arena, **case)
        args = dict(n=2, c=4, hw=3, group=2, eps=1e-5) | kw
        rc, _, ex = phase_one(x, g, b, args["n"], args["c"], args["hw"], args["group"],
                              args["eps"], y, m, r)
        assert rc == INVALID and ex == ffi.NULL


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, xdt=dt)[:3], 2, 4, 3, 2, 1e-5,
                              *views(arena, xdt=dt)[3:])
        ok = dt != BF16 or BF16_PART
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if rc == OK:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


@only_where(ARCH == 2002)   # the Atlas inference parts (their own run or their child)
@pytest.mark.parametrize("shape,group,dt,written", [
    ((2, 8, 32), 2, F32, False),      # small-shape B32 kernel: DataCopyPad only
    ((2, 8, 4), 2, F32, True),        # HxW < 8: the basic template writes them
    ((2, 8, 1), 4, F16, True),        # HxW 1: the hw1 kernel
    ((1, 64, 16), 32, F16, False),    # SetTilingSD's special kernel
    ((2, 4000, 8), 4000, F32, True),  # C + groups per core > 4000: the basic template
], ids=["small", "basic-hw", "hw1", "sd", "basic-wide"])
def test_mean_and_rstd_written_by_kernel_on_atlas_inference_parts(arena, shape, group, dt,
                                                                  written):
    """Only the inference kernels that copy out without DataCopyPad write mean and rstd."""
    rng = np.random.default_rng(6)
    x = rand(rng, shape, dt)
    out, mean, rstd = call(arena, x, group)
    assert writes_stats(x, group) == written
    assert ((mean == SENTINEL).all() and (rstd == SENTINEL).all()) == (not written)
    want = device_chain(x, group, None, None, 1e-5)
    assert np.array_equal(bits(out), bits(want[0]))


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference and "
                                   "6x5 or atlas_inference or one_pass or empty_input")


# ---- the vendor's op_api unit test, replayed ------------------------------------------------

# hicann/ops-nn norm/group_norm/tests/ut/op_host/op_api/test_aclnn_group_norm.cpp: its 24
# active cases as (name, changes to the base call, expected status). The base: self [2, 3, 4],
# gamma and beta [3], N 2, C 3, HxW 4, group 1, eps 1e-5, out [2, 3, 4], meanOut and rstdOut
# [2, 1], every tensor FLOAT in format ND. "null": the tensor passed as NULL.
VENDOR_UT_BASE = dict(self=(2, 3, 4), gamma=(3,), beta=(3,), N=2, C=3, HxW=4, group=1,
                      out=(2, 3, 4), mean=(2, 1), rstd=(2, 1))
VENDOR_UT = [
    ("case_gamma_not_1d_abnormal", dict(gamma=(3, 1)), INVALID),
    ("case_beta_not_1d_abnormal", dict(beta=(3, 1)), INVALID),
    ("case_1d_abnormal", dict(self=(2,), gamma=(1,), beta=(1,), C=1, HxW=1, out=(2,)),
     INVALID),
    ("case_9d_abnormal", dict(self=(2, 3, 4, 1, 1, 1, 1, 1, 1), out=(2, 3, 4, 1, 1, 1, 1, 1, 1)),
     INVALID),
    ("case_self_nullptr_abnormal", dict(null="self"), NULLPTR),
    ("case_out_nullptr_abnormal", dict(null="out"), NULLPTR),
    ("case_mean_out_nullptr_abnormal", dict(null="mean"), NULLPTR),
    ("case_rstd_out_nullptr_abnormal", dict(null="rstd"), NULLPTR),
    ("case_diff_dtype_abnormal", dict(beta_dtype=lib.ACL_FLOAT16), INVALID),
    ("case_group_not_gt0_abnormal", dict(group=0), INVALID),
    ("case_self_numel_ne_abnormal", dict(HxW=5), INVALID),
    ("case_gamma_ne_C_abnormal", dict(gamma=(2,)), INVALID),
    ("case_beta_ne_C_abnormal", dict(beta=(2,)), INVALID),
    ("case_self_shpe_ne_gn_out_abnormal", dict(beta=(2,), out=(2, 3, 5)), INVALID),
    ("case_mean_shpe_ne_abnormal", dict(beta=(2,), mean=(2, 2)), INVALID),
    ("case_rstd_shpe_ne_abnormal", dict(beta=(2,), rstd=(2, 2)), INVALID),
    ("case_empty_normal", dict(self=(2, 3, 0), HxW=0, out=(2, 3, 0)), OK),
    ("case_C_not_div_group_abnormal", dict(group=2, mean=(2, 2), rstd=(2, 2)), INVALID),
    ("case_self_ne_N_abnormal", dict(self=(3, 3, 4), out=(3, 3, 4)), INVALID),
    ("case_self_ne_C_abnormal", dict(C=4), INVALID),
    ("case_self_ne_HxW_abnormal", dict(HxW=2), INVALID),
    ("case_self_format_ne_out_abnormal", dict(self_format=lib.ACL_FORMAT_NCL), INVALID),
    ("case_self_private_format_abnormal", dict(self_format=lib.ACL_FORMAT_NC1HWC0), INVALID),
] + [(f"case_invalid_dtype_abnormal[{name}]", dict(dtype=getattr(lib, name)), INVALID)
     for name in ("ACL_DOUBLE", "ACL_UINT8", "ACL_INT8", "ACL_INT16", "ACL_INT32", "ACL_INT64",
                  "ACL_BOOL", "ACL_STRING", "ACL_COMPLEX64", "ACL_COMPLEX128")]


def vendor_ut_tensor(arena, shape, acl_dtype, fmt=None):
    """A FLOAT-sized device tensor of the case's shape, dtype and format (ND by default)."""
    n = max(math.prod(shape), 1)
    ptr = arena.malloc(n * 16)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), len(shape), acl_dtype,
                            ffi.new("int64_t[]", strides or [0]), 0,
                            lib.ACL_FORMAT_ND if fmt is None else fmt,
                            ffi.new("int64_t[]", [n]), 1, ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


@pytest.mark.parametrize("name,change,code", VENDOR_UT, ids=[c[0] for c in VENDOR_UT])
def test_vendor_op_api_unit_test_cases(arena, name, change, code):
    case = dict(VENDOR_UT_BASE, **change)
    dt = case.get("dtype", lib.ACL_FLOAT)
    ts = {k: vendor_ut_tensor(arena, case[k], case.get(f"{k}_dtype", dt),
                              case.get(f"{k}_format"))
          for k in ("self", "gamma", "beta", "out", "mean", "rstd")}
    if "null" in case:
        ts[case["null"]] = None
    rc, _, ex = phase_one(ts["self"], ts["gamma"], ts["beta"], case["N"], case["C"],
                          case["HxW"], case["group"], 1e-5, ts["out"], ts["mean"], ts["rstd"])
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith("aclnnGroupNormGetWorkspaceSize: ")
