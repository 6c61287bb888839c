"""The emulator's aclnnDeepNorm through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/deep_norm: docs/aclnnDeepNorm.md's code table, the dtypes of
op_host/deep_norm_def.cpp, the rules of op_host/arch22/deep_norm_tiling.cpp and
op_host/deep_norm_shape_check.h; the stricter choices in docs/emulator.md), and the device's
numbers: against the float64 reference for every dtype, and bit for bit against the kernels'
chain (op_kernel/deep_norm.cpp, op_kernel/arch35/deep_norm.h: everything in float32,
h = x * alpha + gx with the product rounded, mean and variance as plain sums times the
tiling's 1/N, y rounded once, +0 added in one variant) written in NumPy with the emulator's
fixed order of a row's sums; bits independent of layout and thread count; what the Atlas
inference parts leave unwritten; the other parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import DEEP_NORM
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_layer_norm import lane_sum
from _emu_aclnn import SOC, refused_by, rstd_shape, run_phase_two
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import PARTS, only_where, other_parts, run_on_parts, runs_here

P1 = lib.aclnnDeepNormGetWorkspaceSize
P2 = lib.aclnnDeepNorm
TILING = 561002        # ACLNN_ERR_INNER_TILING_ERROR
NO_KERNEL = 561003     # ACLNN_ERR_INNER_FIND_KERNEL_ERROR
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
DTYPES = [F32, F16, BF16] if ARCH in (2201, 3510) else [F32, F16]
INFERENCE = ARCH == 2002   # mean/rstd never written, y not for rows under 32 bytes
# op_host/deep_norm_def.cpp configures no ascend910: there every call is refused
# (test_no_kernel_on_atlas_training_parts), and the tests of the kernel's work are not defined
# (the parts with the kernel run them)
where_it_runs = only_where(runs_here(DEEP_NORM))
SENTINEL = -77.0


def phase_one(x, gx, beta, gamma, mean, rstd, y, alpha=0.3, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x, gx, beta, gamma, alpha, eps, mean, rstd, y, ws=ws, ex=ex)


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(rng, shape, gdims, dt):
    gs = shape[len(shape) - gdims:]
    return (rand(rng, shape, dt), rand(rng, shape, dt, 1.0, -0.5), rand(rng, gs, dt, 0.3, 0.1),
            rand(rng, gs, dt, 0.5, 1.0))


def call(arena, x, gx, beta, gamma, alpha=0.3, eps=1e-6, kinds=("contig",) * 7):
    """Runs the operator; (mean, rstd, y) read back (outputs start at a sentinel)."""
    ins = [DevView(arena, v, kind=k) for v, k in zip((x, gx, beta, gamma), kinds)]
    st = rstd_shape(x.shape, gamma.ndim)
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=SENTINEL)
            for s, d, k in zip((st, st, x.shape), (F32, F32, x.dtype), kinds[4:])]
    run_phase_two(arena, P2, phase_one(*ins, *outs, alpha=alpha, eps=eps))
    return tuple(v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def device_chain(x, gx, beta, gamma, alpha=0.3, eps=1e-6, arch=ARCH):
    """(mean, rstd, y) as the kernels make them (see the module doc), in float32."""
    f = np.float32
    n = gamma.size
    h = x.astype(f).reshape(-1, n) * f(alpha) + gx.astype(f).reshape(-1, n)
    avg = f(1) / f(n) if arch == 3510 else f(1.0 / n)
    mean = lane_sum(h) * avg
    d = h - mean[:, None]
    rstd = f(1) / np.sqrt(lane_sum(d * d) * avg + f(eps))
    y = (d * rstd[:, None]) * gamma.astype(f).reshape(n) + beta.astype(f).reshape(n)
    if arch != 3510 and x.dtype == F32 and 4096 < n <= 8192:
        y = y + f(0)   # ExtraProcessFp32's Adds(y, 0): -0 becomes +0
    st = rstd_shape(x.shape, gamma.ndim)
    return mean.reshape(st), rstd.reshape(st), y.astype(x.dtype).reshape(x.shape)


def written(x, gamma):
    """(mean, rstd, y): which outputs the part writes."""
    return (not INFERENCE, not INFERENCE, not INFERENCE or gamma.size * x.itemsize >= 32)


def dt_id(dt):
    return {F32: "f32", F16: "f16", BF16: "bf16"}[dt]


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=dt_id)
def test_numbers_against_float64_reference(arena, dt):
    rng = np.random.default_rng(len(dt_id(dt)))
    x, gx, b, g = inputs(rng, (3, 5, 96), 1, dt)
    got = call(arena, x, gx, b, g, alpha=0.7, eps=1e-5)
    exp = reference.deep_norm(x, gx, b, g, 0.7, 1e-5)
    mag = reference.deep_norm_error_scale(x, gx, b, g, 0.7, 1e-5)
    assert [a.dtype for a in got] == [F32, F32, dt]
    for a, e, m, w, name in zip(got, exp, mag, written(x, g), ("mean", "rstd", "y")):
        if w:
            reference.assert_close(a, e, m, dt, name)


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=dt_id)
@pytest.mark.parametrize("shape,gdims,alpha", [((7, 181), 1, 0.3), ((2, 3, 6, 40), 2, 1.7),
                                               ((5, 4096), 1, 0.81), ((3, 5000), 1, -2.5)],
                         ids=["181", "6x40", "4096", "5000"])
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, shape, gdims, alpha):
    rng = np.random.default_rng(sum(shape))
    x, gx, b, g = inputs(rng, shape, gdims, dt)
    got = call(arena, x, gx, b, g, alpha=alpha)
    want = device_chain(x, gx, b, g, alpha)
    for a, w, wr, name in zip(got, want, written(x, g), ("mean", "rstd", "y")):
        if not wr:
            assert (a == SENTINEL).all(), name
            continue
        assert np.array_equal(bits(a), bits(w)), name


@where_it_runs
def test_product_rounded_before_gx_is_added(arena):
    """float(1/3) * 3 rounds to 1 in float32 (a fused multiply-add would keep its 2^-25
    excess): h = 1 - 1 is exactly 0, so mean is 0 and y is beta."""
    x = np.full((2, 16), 3.0, F32)
    b = np.linspace(-1, 1, 16).astype(F32)
    mean, rstd, y = call(arena, x, -np.ones_like(x), b, np.ones(16, F32), alpha=1 / 3)
    assert np.array_equal(y, np.broadcast_to(b, y.shape))
    if not INFERENCE:   # mean and rstd are not written on Atlas inference parts
        assert (mean == 0).all()
        assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-6))).all()


@where_it_runs
@pytest.mark.parametrize("n", [4096, 4097, 8192, 8193])
def test_minus_zero_y_where_the_kernel_adds_zero(arena, n):
    """gamma -0 and beta -0: y = (d * rstd) * -0 + -0 is -0 where d > 0, but the Atlas A2/A3
    and inference kernel for FLOAT rows of 4097..8192 (ExtraProcessFp32) copies y out with
    Adds(y, 0), which makes it +0; Ascend 950 and the other variants keep -0."""
    x = np.tile(np.arange(n, dtype=F32), (2, 1))
    g = b = np.full(n, -0.0, F32)
    y = call(arena, x, np.zeros_like(x), b, g)[2]
    assert (y == 0).all()
    pos = np.signbit(y[:, n // 2 + 1:])        # d > 0 there
    plus_zero = ARCH != 3510 and 4096 < n <= 8192
    assert (~pos).all() if plus_zero else pos.all()


@where_it_runs
def test_alpha_and_epsilon_reach_the_kernel_as_float32(arena):
    """alpha 0.1 (a double) multiplies as float32(0.1); eps likewise (constant rows: var 0,
    rstd = 1 / sqrtf((float)eps))."""
    x = np.arange(32, dtype=F32).reshape(2, 16)
    mean, rstd, y = call(arena, x, np.zeros_like(x), np.zeros(16, F32), np.ones(16, F32),
                         alpha=0.1, eps=1e-5)
    want = device_chain(x, np.zeros_like(x), np.zeros(16, F32), np.ones(16, F32), 0.1, 1e-5)
    assert np.array_equal(bits(y), bits(want[2]))
    xc = np.ones((2, 16), F32)
    mean, rstd, y = call(arena, xc, xc, np.full(16, 0.5, F32), np.ones(16, F32), eps=1e-5)
    assert (y == 0.5).all()
    if not INFERENCE:
        assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-5))).all()


@where_it_runs
@pytest.mark.parametrize("kinds", [(k,) * 7 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed", "stepped", "padded",
                           "transposed")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x, gx, b, g = inputs(rng, (6, 4, 37), 2, F16)
    base = call(arena, x, gx, b, g)
    got = call(arena, x, gx, b, g, kinds=kinds)
    for a, c in zip(base, got):
        assert np.array_equal(bits(a), bits(c))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(7)
    x, gx, b, g = inputs(rng, (61, 1000), 1, F32)
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, x, gx, b, g))
    for r in runs[1:]:
        for a, c in zip(runs[0], r):
            assert np.array_equal(bits(a), bits(c))


@where_it_runs
def test_nan_and_inf_propagate_to_their_row(arena):
    """A NaN makes its row NaN; an Inf makes the mean Inf and every deviation NaN or Inf, so
    the row's y is NaN (the docs' "Inf in, Inf out" does not hold for y)."""
    x = np.ones((3, 8), F32)
    x[1, 5], x[2, 2] = np.nan, np.inf
    mean, rstd, y = call(arena, x, np.ones((3, 8), F32), np.zeros(8, F32), np.ones(8, F32))
    assert np.isfinite(y[0]).all() and np.isnan(y[1]).all() and np.isnan(y[2]).all()
    if not INFERENCE:
        assert np.isnan(mean[1, 0]) and np.isinf(mean[2, 0]) and np.isnan(rstd[1:]).all()


@only_where(INFERENCE)   # the Atlas inference parts (their own run or their child)
@pytest.mark.parametrize("dt,n", [(F32, 7), (F32, 8), (F16, 15), (F16, 16), (F16, 2)])
def test_atlas_inference_parts_leave_outputs_unwritten(arena, dt, n):
    """op_kernel/deep_norm.cpp CopyOut for __CCE_AICORE__ 200: mean and rstd are never
    copied out; y is copied in whole 32-byte blocks, none when a row is shorter."""
    rng = np.random.default_rng(n)
    x, gx, b, g = inputs(rng, (3, n), 1, dt)
    mean, rstd, y = call(arena, x, gx, b, g)
    assert (mean == SENTINEL).all() and (rstd == SENTINEL).all()
    if n * dt.itemsize < 32:
        assert (y == SENTINEL).all()
    else:
        assert np.array_equal(bits(y), bits(device_chain(x, gx, b, g)[2]))


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), dts=(F32,) * 5, gxshape=None, bshape=None,
          yshape=None, mshape=None, rshape=None, sdt=(F32, F32), xacl=None):
    """[x, gx, beta, gamma, meanOut, rstdOut, yOut]; dts: x, gx, beta, gamma, y."""
    xdt, gxdt, bdt, gdt, ydt = dts
    x = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    gx = DevView(arena, np.ones(gxshape or shape, gxdt))
    b = DevView(arena, np.ones(bshape or gshape, bdt))
    g = DevView(arena, np.ones(gshape, gdt))
    st = rstd_shape(shape, len(gshape))
    m = DevView(arena, shape=mshape if mshape is not None else st, dtype=sdt[0])
    r = DevView(arena, shape=rshape if rshape is not None else st, dtype=sdt[1])
    y = DevView(arena, shape=yshape or shape, dtype=ydt)
    return [x, gx, b, g, m, r, y]


def refused(args, code, *words, **kw):
    return refused_by(phase_one, "aclnnDeepNormGetWorkspaceSize", args, code, *words, **kw)


def accepted(args, **kw):
    rc, _, ex = phase_one(*args, **kw)
    assert rc == OK, (rc, last_msg())  # its size: test_emulator_workspace_size_add_ln.py
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    args = views(arena)
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


NAMES = ["x", "gx", "beta", "gamma", "meanOut", "rstdOut", "yOut"]


@pytest.mark.parametrize("k", range(7), ids=lambda k: NAMES[k])
def test_each_tensor_is_required(arena, k):
    args = views(arena)
    args[k] = None
    rc, _, ex = phase_one(*args)
    assert rc == NULLPTR and ex == ffi.NULL
    assert f"{NAMES[k]} is NULL" in last_msg()


def test_part_dtype_table(arena):
    """Phase one passes for one dtype of the part's list throughout (mean and rstd FLOAT) and
    refuses any other mix with 161002 naming the argument; a part with no kernel refuses
    first (561003)."""
    for xdt in (F32, F16, BF16):
        for k in range(5):
            for odt in (F32, F16, BF16):
                dts = [xdt] * 5
                dts[k] = odt
                rc, _, ex = phase_one(*views(arena, dts=tuple(dts)))
                if ARCH == 1001:
                    assert rc == NO_KERNEL and "not supported on" in last_msg()
                    continue
                ok = odt == xdt and xdt in DTYPES
                assert (rc == OK) == ok, (xdt, k, odt, rc, last_msg())
                if rc == OK:
                    assert lib.aclDestroyAclOpExecutor(ex) == OK
                else:
                    assert rc == INVALID and "dtype" in last_msg(), last_msg()


DTYPE_CASES = [
    (dict(xacl=lib.ACL_INT32), ("x dtype ACL_INT32 is not supported on",)),
    (dict(sdt=(F16, F32)), ("meanOut dtype FLOAT16 is not supported on", ": FLOAT")),
    (dict(sdt=(F32, F16)), ("rstdOut dtype FLOAT16",)),
    (dict(dts=(F32, F16, F32, F32, F32)), ("gx dtype FLOAT16 must be x's dtype FLOAT",)),
    (dict(dts=(F16, F16, F32, F16, F16)), ("beta dtype FLOAT must be x's dtype FLOAT16",)),
    (dict(dts=(F16, F16, F16, F32, F16)), ("gamma dtype FLOAT must be x's dtype FLOAT16",)),
    (dict(dts=(F32, F32, F32, F32, F16)), ("yOut dtype FLOAT16 must be x's dtype FLOAT",)),
]


@where_it_runs
@pytest.mark.parametrize("case,words", DTYPE_CASES,
                         ids=["x-int32", "mean", "rstd", "gx", "beta", "gamma", "y"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@where_it_runs
def test_bf16_only_where_the_part_has_it(arena):
    args = views(arena, dts=(BF16,) * 5)
    if BF16 in DTYPES:
        accepted(args)
    else:
        refused(args, INVALID, "x dtype BF16 is not supported on", SOC, "FLOAT, FLOAT16")


SHAPE_CASES = [
    (dict(shape=(16,), gshape=(16,), mshape=(1,)), ("x rank 1 is not in [2, 8]",)),
    (dict(shape=(1,) * 9, gshape=(1,)), ("x rank 9 is not in [2, 8]",)),
    (dict(shape=(1,) * 8, gshape=(1,) * 8), ("gamma rank 8 is not in [1, 7]",)),
    (dict(gxshape=(1, 4, 16)), ("gx rank 3 must equal x's rank",)),
    (dict(yshape=(64,)), ("yOut rank 1 must equal x's rank",)),
    (dict(mshape=(4,)), ("meanOut rank 1 must equal x's rank",)),
    (dict(rshape=(4, 1, 1)), ("rstdOut rank 3 must equal x's rank",)),
    (dict(bshape=(1, 16)), ("beta rank 2 must equal gamma's rank",)),
    (dict(shape=(4, 16), gshape=(4, 16), mshape=(1, 1)),
     ("x rank 2 must be greater than gamma rank 2",)),
    (dict(gxshape=(4, 8)), ("gx shape [4,8] must equal x's shape [4,16]",)),
    (dict(yshape=(2, 32)), ("yOut shape [2,32] must equal x's shape [4,16]",)),
    (dict(rshape=(2, 1)), ("rstdOut shape [2,1] must begin with x's batch dims",)),
    (dict(mshape=(3, 1)), ("meanOut shape [3,1] must begin with x's batch dims",)),
    (dict(shape=(2, 3, 4), gshape=(2, 4), mshape=(2, 1, 1)),
     ("gamma shape [2,4] must equal the last 2 dims of x [2,3,4]",)),
    (dict(bshape=(8,)), ("beta shape [8] must equal the last 1 dims of x [4,16]",)),
    (dict(mshape=(4, 16)), ("meanOut shape [4,16] must be x's batch dims then ones",)),
    (dict(rshape=(4, 2)), ("rstdOut shape [4,2] must be x's batch dims then ones",)),
]


@where_it_runs
@pytest.mark.parametrize("case,words", SHAPE_CASES,
                         ids=["x-rank1", "x-rank9", "gamma-rank8", "gx-rank", "y-rank",
                              "mean-rank", "rstd-rank", "beta-rank", "x-not-above-gamma",
                              "gx-shape", "y-shape", "rstd-batch", "mean-batch", "gamma-dims",
                              "beta-dims", "mean-ones", "rstd-ones"])
def test_shape_refusals(arena, case, words):
    """The tiling's rules (CheckInputOutputShapeDim, CheckInputOutputShapeValue, in their
    order) and the reduced dims of mean and rstd (Ascend 950's CheckReduceOutputTail; the
    docs' shape elsewhere): 561002, naming the argument and the rule."""
    refused(views(arena, **case), TILING, *words)


@where_it_runs
def test_no_rows_succeeds_and_writes_nothing(arena):
    """Every output empty (a zero batch dim): the framework skips the tiling and the kernel."""
    args = views(arena, shape=(0, 16))
    rc, ws, ex = phase_one(*args, eps=-1.0)
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0


@where_it_runs
def test_no_columns_is_refused_on_every_part(arena):
    """x empty in gamma's dims only, rows left: meanOut is not empty, so the tiling runs and
    refuses the zero dim ("x shape can not be 0"; Ascend 950's shared check too)."""
    refused(views(arena, shape=(4, 0), gshape=(0,)), TILING,
            "x [4,0] has a zero dim while meanOut and rstdOut are not empty")


@where_it_runs
def test_no_rows_still_takes_the_shape_rules(arena):
    """Stricter (docs/emulator.md): the shape rules hold for an all-empty call too."""
    refused(views(arena, shape=(0, 16), gshape=(8,), mshape=(0, 1)), TILING,
            "gamma shape [8] must equal the last 1 dims of x [0,16]")


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    y = args[6]
    arena.destroy_tensor(y.handle)
    try:
        refused(args, INVALID, "yOut", "not a live aclTensor")
    finally:
        y.handle = arena.tensor(y.shape, y.dtype, y.strides, y.offset, y.n, y.ptr)


@where_it_runs
def test_executor_keeps_running_on_new_contents(arena):
    """A repeatable executor: each run reads x and gx as they are then (constant rows: y is
    beta, mean is x * alpha + gx)."""
    args = views(arena)
    rc, ws, ex = phase_one(*args, alpha=2.0)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    x, mean, y = args[0], args[4], args[6]
    wsp = arena.malloc(ws) if ws else ffi.NULL
    try:
        for k in (1, 3):
            arena.h2d(x.ptr, np.full(x.n, k, F32))
            assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            assert (y.read() == 1).all()   # beta 1 (views' ones), var 0
            if not INFERENCE:
                assert (mean.read() == 2 * k + 1).all()
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- the part -----------------------------------------------------------------------------------

@only_where(ARCH == 1001)   # the Atlas training parts (their own run or their child)
def test_no_kernel_on_atlas_training_parts(arena):
    """op_host/deep_norm_def.cpp configures no ascend910: the framework's kernel lookup fails
    (561003) for every call, empty ones too, before it compares dtypes."""
    refused(views(arena), NO_KERNEL, "not supported on", SOC)
    refused(views(arena, shape=(0, 16)), NO_KERNEL)
    refused(views(arena, xacl=lib.ACL_INT32), NO_KERNEL)


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}), lambda part: (
        "no_kernel or part_dtype_table or dead_tensor" if part == "Ascend910A" else
        "part_dtype_table or bit_for_bit and 181 or reference or bf16_only or "
        "atlas_inference or no_columns or mean-ones or product_rounded or minus_zero"))
