"""The emulator's aclnnAddLayerNorm through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/add_layer_norm: docs/aclnnAddLayerNorm.md's code table, the dtype
combinations of op_host/add_layer_norm_def.cpp, the rules of op_host/add_layer_norm_tiling.cpp;
the stricter choices in docs/emulator.md), and the device's numbers: against the float64
reference for every dtype combination and bias kind, and bit for bit against the kernels' chain
(op_kernel/add_layer_norm*.h: everything in float32, x1 + x2 (+ bias) added in float, the mean
and the variance as sums of terms scaled by 1/N, y rounded once) written in NumPy with the
emulator's fixed order of a row's sums; bits independent of layout and thread count; xOut
only with additionalOutput; the Atlas inference and training parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import ADD_LAYER_NORM
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _emu_aclnn import SOC, both_phases_without_a_device, rstd_shape, run_phase_two
from _part_runs import PARTS, only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnAddLayerNormGetWorkspaceSize
P2 = lib.aclnnAddLayerNorm
TILING = 561002        # ACLNN_ERR_INNER_TILING_ERROR
NO_KERNEL = 561003     # ACLNN_ERR_INNER_FIND_KERNEL_ERROR
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
STATS = ARCH != 2002   # meanOut/rstdOut are written outside the Atlas inference parts
# op_host/add_layer_norm_def.cpp configures no ascend910: there every call is refused
# (test_no_kernel_on_atlas_training_parts), and the tests of the kernel's work are not defined
# (the parts with the kernel run them)
where_it_runs = only_where(runs_here(ADD_LAYER_NORM))

# (x1, x2, gamma = beta, bias, y = x): op_host/add_layer_norm_def.cpp's rows for Atlas A2/A3
ROWS_A2 = [(F32, F16, F32, F32, F32), (F32, BF16, F32, F32, F32), (F16, F32, F32, F32, F32),
           (BF16, F32, F32, F32, F32), (F16, F16, F32, F16, F16), (BF16, BF16, F32, BF16, BF16),
           (F16, F16, F16, F16, F16), (BF16, BF16, BF16, BF16, BF16), (F32, F32, F32, F32, F32)]
ROWS_310P = [(F32, F32, F32, F32, F32), (F16, F16, F16, F16, F16)]
ROWS = ROWS_310P if ARCH == 2002 else ROWS_A2


def row_id(r):
    return "-".join(d.name.replace("float", "f").replace("bfloat16", "bf16") for d in r)


def phase_one(x1, x2, g, b, bias, y, mean, rstd, xo, eps=1e-5, extra=True, ws=True, ex=True):
    return aclnn_phase_one(P1, x1, x2, g, b, bias, eps, extra, y, mean, rstd, xo, ws=ws,
                           ex=ex)


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def call(arena, x1, x2, g, b, bias=None, ydt=None, eps=1e-5, extra=True, kinds=("contig",) * 9):
    """Runs the operator; (y, mean, rstd, x) read back (outputs start at a sentinel)."""
    ydt = ydt or x1.dtype
    ins = [DevView(arena, v, kind=k) if v is not None else None
           for v, k in zip((x1, x2, g, b, bias), kinds)]
    st = rstd_shape(x1.shape, g.ndim)
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=-77.0)
            for s, d, k in zip((x1.shape, st, st, x1.shape), (ydt, F32, F32, ydt), kinds[5:])]
    run_phase_two(arena, P2, phase_one(*ins, *outs, eps=eps, extra=extra))
    return tuple(v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def lane_sum(v):
    """Row sums of float32 rows (M, N) in the emulator's fixed order (ops/norm_rows.h): lane l
    adds v[l], v[l + 16], ... in order, then the 16 lanes fold by halving."""
    m, n = v.shape
    k = -(-n // 16)
    p = np.zeros((m, k * 16), np.float32)
    p[:, :n] = v
    p = p.reshape(m, k, 16)
    acc = np.zeros((m, 16), np.float32)
    for j in range(k):
        acc += p[:, j]
    s = 8
    while s:
        acc[:, :s] += acc[:, s:2 * s]
        s //= 2
    return acc[:, 0]


def stats_factors(n, arch=ARCH):
    """(scale, corr): a row's mean is sum(x * scale) * corr. Atlas A2/A3 and inference parts:
    the tiling's float(1.0 / N), corr 1; Ascend 950: 1 / P (P the smallest power of two >= N)
    and float(P) / float(N)."""
    f = np.float32
    if arch != 3510:
        return f(1.0 / n), f(1)
    p = 1 << (n - 1).bit_length()
    return f(1) / f(p), f(p) / f(n)


def device_chain(x1, x2, g, b, bias, ydt, eps=1e-5, arch=ARCH):
    """(y, mean, rstd, x) as the kernels make them (see the module doc), in float32."""
    f = np.float32
    n = g.size
    x = x1.astype(f).reshape(-1, n) + x2.astype(f).reshape(-1, n)
    if bias is not None:
        x = x + bias.astype(f).reshape(-1, n)
    scale, corr = stats_factors(n, arch)
    mean = lane_sum(x * scale) * corr
    d = x - mean[:, None]
    rstd = f(1) / np.sqrt(lane_sum((d * d) * scale) * corr + f(eps))
    y = (d * rstd[:, None]) * g.astype(f).reshape(n) + b.astype(f).reshape(n)
    st = rstd_shape(x1.shape, g.ndim)
    return (y.astype(ydt).reshape(x1.shape), mean.reshape(st), rstd.reshape(st),
            x.astype(ydt).reshape(x1.shape))


def inputs(rng, shape, gdims, row, bias_kind):
    x1dt, x2dt, gdt, bdt, _ = row
    x1, x2 = rand(rng, shape, x1dt), rand(rng, shape, x2dt, 1.0, -0.5)
    gs = shape[len(shape) - gdims:]
    g, b = rand(rng, gs, gdt, 0.5, 1.0), rand(rng, gs, gdt, 0.3, 0.1)
    bias = None if bias_kind == "none" else rand(rng, gs if bias_kind == "brc" else shape, bdt,
                                                  0.4, 0.2)
    return x1, x2, g, b, bias


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("row", ROWS, ids=row_id)
@pytest.mark.parametrize("bias_kind", ["none", "brc", "rows"])
def test_numbers_against_float64_reference(arena, row, bias_kind):
    rng = np.random.default_rng(len(row_id(row)) + len(bias_kind))
    x1, x2, g, b, bias = inputs(rng, (3, 5, 96), 1, row, bias_kind)
    got = call(arena, x1, x2, g, b, bias, ydt=row[4])
    exp = reference.add_layer_norm(x1, x2, g, b, bias)
    mag = reference.add_layer_norm_error_scale(x1, x2, g, b, bias)
    assert [a.dtype for a in got] == [row[4], F32, F32, row[4]]
    for a, e, m, name in zip(got, exp, mag, ("y", "mean", "rstd", "x")):
        if name in ("mean", "rstd") and not STATS:
            continue   # not written on Atlas inference parts (test_stats_not_written_...)
        reference.assert_close(a, e, m, row[0] if row[0] != F32 else row[1], name)


@where_it_runs
@pytest.mark.parametrize("row", ROWS, ids=row_id)
@pytest.mark.parametrize("shape,gdims,bias_kind", [((7, 181), 1, "brc"), ((2, 3, 6, 40), 2, "rows"),
                                                   ((33,), 1, "none"), ((5, 4096), 1, "brc")],
                         ids=["181", "6x40", "1-D", "4096"])
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, row, shape, gdims, bias_kind):
    rng = np.random.default_rng(sum(shape))
    x1, x2, g, b, bias = inputs(rng, shape, gdims, row, bias_kind)
    got = call(arena, x1, x2, g, b, bias, ydt=row[4])
    want = device_chain(x1, x2, g, b, bias, row[4])
    for a, w, name in zip(got, want, ("y", "mean", "rstd", "x")):
        if name in ("mean", "rstd") and not STATS:
            assert (a == -77.0).all()
            continue
        assert np.array_equal(bits(a), bits(w)), name


@only_where(STATS)   # mean and rstd are not written on Atlas inference parts
@where_it_runs
def test_mean_and_variance_scaling_follows_the_part(arena):
    """Ascend 950 scales a row's terms by 1/P and the sum by P/N (P = 256 for N = 181), the
    other parts by 1/N: the statistics follow the part's chain, and the data tell the two
    apart."""
    rng = np.random.default_rng(9)
    x1, x2, g, b, _ = inputs(rng, (64, 181), 1, (F32,) * 5, "none")
    y, mean, rstd, x = call(arena, x1, x2, g, b)
    want = device_chain(x1, x2, g, b, None, F32)
    other = device_chain(x1, x2, g, b, None, F32, arch=2201 if ARCH == 3510 else 3510)
    assert np.array_equal(bits(mean), bits(want[1])) and np.array_equal(bits(rstd), bits(want[2]))
    assert not (np.array_equal(bits(mean), bits(other[1])) and
                np.array_equal(bits(rstd), bits(other[2])))


@where_it_runs
def test_xout_written_only_with_additional_output(arena):
    rng = np.random.default_rng(4)
    x1, x2, g, b, _ = inputs(rng, (4, 64), 1, (F32,) * 5, "none")
    with_x = call(arena, x1, x2, g, b)
    without = call(arena, x1, x2, g, b, extra=False)
    assert (without[3] == -77.0).all()
    for a, c in zip(with_x[:3], without[:3]):
        assert np.array_equal(bits(a), bits(c))


@where_it_runs
def test_epsilon_reaches_the_kernel_as_float32(arena):
    """x1 + x2 constant per row: mean exact, var 0, rstd = 1 / sqrtf((float)eps), y = beta."""
    x1 = np.full((2, 16), 3.0, F32)
    g, b = np.full(16, 2.0, F32), np.linspace(-1, 1, 16).astype(F32)
    y, mean, rstd, x = call(arena, x1, -x1 + 1, g, b, eps=1e-5)
    assert np.array_equal(y, np.broadcast_to(b, y.shape)) and (x == 1).all()
    if STATS:
        assert (mean == 1).all() and (rstd == np.float32(1) / np.sqrt(np.float32(1e-5))).all()


@where_it_runs
@pytest.mark.parametrize("kinds", [(k,) * 9 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed", "stepped", "contig",
                           "padded", "stepped", "transposed")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x1, x2, g, b, bias = inputs(rng, (6, 4, 37), 2, (F16,) * 5, "rows")
    base = call(arena, x1, x2, g, b, bias)
    got = call(arena, x1, x2, g, b, bias, kinds=kinds)
    for a, c in zip(base, got):
        assert np.array_equal(bits(a), bits(c))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(7)
    x1, x2, g, b, bias = inputs(rng, (61, 1000), 1, (F32,) * 5, "brc")
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, x1, x2, g, b, bias))
    for r in runs[1:]:
        for a, c in zip(runs[0], r):
            assert np.array_equal(bits(a), bits(c))


@where_it_runs
def test_nan_and_inf_propagate_to_their_row(arena):
    """The kernels' arithmetic: a NaN makes its row NaN; an Inf makes the mean Inf and every
    deviation NaN or Inf, so the row's y is NaN (the docs' "Inf in, Inf out" is x's)."""
    x1 = np.ones((3, 8), F32)
    x1[1, 5], x1[2, 2] = np.nan, np.inf
    y, mean, rstd, x = call(arena, x1, np.ones((3, 8), F32), np.ones(8, F32), np.zeros(8, F32))
    assert np.isfinite(y[0]).all() and np.isnan(y[1]).all() and np.isnan(y[2]).all()
    assert np.isnan(x[1, 5]) and np.isinf(x[2, 2])
    if STATS:
        assert np.isnan(mean[1, 0]) and np.isinf(mean[2, 0]) and np.isnan(rstd[1:]).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), row=(F32,) * 5, bias=None, bshape=None,
          x2shape=None, yshape=None, xoshape=None, mshape=None, rshape=None, sdt=(F32, F32),
          xacl=None):
    x1dt, x2dt, gdt, bdt, ydt = row
    x1 = DevView(arena, np.ones(shape, x1dt), acl_dtype=xacl)
    x2 = DevView(arena, np.ones(x2shape or shape, x2dt))
    g = DevView(arena, np.ones(gshape, gdt))
    b = DevView(arena, np.ones(bshape or gshape, gdt))
    bi = DevView(arena, np.ones(bias, bdt)) if bias is not None else None
    y = DevView(arena, shape=yshape or shape, dtype=ydt)
    st = rstd_shape(shape, len(gshape))
    m = DevView(arena, shape=mshape if mshape is not None else st, dtype=sdt[0])
    r = DevView(arena, shape=rshape if rshape is not None else
                (mshape if mshape is not None else st), dtype=sdt[1])
    xo = DevView(arena, shape=xoshape or shape, dtype=ydt)
    return [x1, x2, g, b, bi, y, m, r, xo]


def refused(args, code, *words, eps=1e-5):
    rc, _, ex = phase_one(*args, eps=eps)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith("aclnnAddLayerNormGetWorkspaceSize: "), msg
    for w in words:
        assert w in msg, msg
    return msg


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


NAMES = ["x1", "x2", "gamma", "beta", "biasOptional", "yOut", "meanOut", "rstdOut", "xOut"]


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 6, 7, 8], ids=lambda k: NAMES[k])
def test_each_required_tensor(arena, k):
    """Every tensor but biasOptional is required (xOut too, with additionalOutput false)."""
    args = views(arena)
    args[k] = None
    rc, _, ex = phase_one(*args, extra=False)
    assert rc == NULLPTR and ex == ffi.NULL
    assert f"{NAMES[k]} is NULL" in last_msg()


@where_it_runs
def test_bias_is_optional(arena):
    accepted(views(arena))
    accepted(views(arena, bias=(16,)))
    accepted(views(arena, bias=(4, 16)))


def test_part_dtype_table(arena):
    """Phase one passes for exactly the part's rows (with and without a bias) and refuses
    others with 161002 naming the argument; a part with no kernel refuses first (561003)."""
    dts = (F32, F16, BF16)
    for x1dt in dts:
        for x2dt in dts:
            for gdt in dts:
                for ydt in dts:
                    bdt = ydt if x1dt == x2dt else F32
                    row = (x1dt, x2dt, gdt, bdt, ydt)
                    for bias in (None, (16,)):
                        rc, _, ex = phase_one(*views(arena, row=row, bias=bias))
                        if ARCH == 1001:
                            assert rc == NO_KERNEL and "not supported on" in last_msg()
                            continue
                        assert (rc == OK) == (row in ROWS), (row, rc, last_msg())
                        if rc == OK:
                            assert lib.aclDestroyAclOpExecutor(ex) == OK
                        else:
                            assert rc == INVALID and "dtype" in last_msg(), last_msg()


DTYPE_CASES = [
    (dict(xacl=lib.ACL_INT32), ("x1 dtype ACL_INT32", "FLOAT, FLOAT16")),
    (dict(row=(F32, F32, F32, F32, F32), sdt=(F16, F32)), ("meanOut dtype FLOAT16", "FLOAT")),
    (dict(row=(F32, F32, F32, F32, F32), sdt=(F32, F16)), ("rstdOut dtype FLOAT16",)),
    (dict(row=(F16, F32, F16, F32, F32)), ("gamma dtype FLOAT16 must be FLOAT",)),
    (dict(row=(F32, F32, F32, F32, F16)), ("yOut dtype FLOAT16 must be the output dtype FLOAT",)),
    (dict(row=(F16, F16, F16, F32, F16), bias=(16,)),
     ("biasOptional dtype FLOAT must be the bias dtype FLOAT16",)),
]


# the cases are the Atlas A2/A3 table's (test_part_dtype_table: any part): elsewhere no test
a2_table = only_where(ARCH in (2201, 3510))


@a2_table
@pytest.mark.parametrize("case,words", DTYPE_CASES,
                         ids=["x1-int32", "mean", "rstd", "gamma", "y", "bias"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@a2_table
def test_beta_and_xout_dtypes_follow_their_row(arena):
    args = views(arena, row=(F16,) * 5)
    args[3] = DevView(arena, np.ones(16, F32))
    refused(args, INVALID, "beta dtype FLOAT must be gamma's dtype FLOAT16")
    args = views(arena, row=(F16,) * 5)
    args[8] = DevView(arena, shape=(4, 16), dtype=F32)
    refused(args, INVALID, "xOut dtype FLOAT must be the output dtype FLOAT16")
    refused(views(arena, row=(F16, BF16, F32, F32, F32)), INVALID,
            "x2 dtype BF16 cannot go with x1 dtype FLOAT16")


SHAPE_CASES = [
    (dict(shape=(1,) * 9, gshape=(1,)), ("x1 rank 9 is not in [1, 8]",)),
    (dict(gshape=(1,) * 9 + (16,), mshape=(4, 1)), ("gamma rank 10 is not in [1, 8]",)),
    (dict(x2shape=(1, 4, 16)), ("x2 rank 3 != x1 rank 2",)),
    (dict(mshape=(4,), rshape=(4,)), ("meanOut rank 1 != x1 rank 2",)),
    (dict(rshape=(4, 1, 1)), ("rstdOut rank 3 != x1 rank 2",)),
    (dict(shape=(16,), gshape=(1, 16), mshape=(1,)), ("x1 rank 1 < gamma rank 2",)),
    (dict(x2shape=(4, 8)), ("x2 shape [4,8] != x1 shape [4,16]",)),
    (dict(yshape=(2, 32)), ("yOut shape [2,32] != x1 shape [4,16]",)),
    (dict(xoshape=(4, 17)), ("xOut shape [4,17] != x1 shape [4,16]",)),
    (dict(bshape=(1, 16)), ("beta shape [1,16] != gamma shape [16]",)),
    (dict(rshape=(2, 1)), ("rstdOut shape [2,1] != meanOut shape [4,1]",)),
    (dict(shape=(2, 3, 4), gshape=(2, 4), mshape=(2, 1, 1)),
     ("gamma shape [2,4] must equal the last 2 dims of x1 [2,3,4]",)),
    (dict(mshape=(2, 1)), ("meanOut shape [2,1] must be x1's batch dims then ones",)),
    (dict(mshape=(4, 16)), ("meanOut shape [4,16]",)),
    (dict(bias=(8,)), ("biasOptional shape [8] must be gamma's shape [16] or x1's shape [4,16]",)),
    (dict(bias=(1, 16)), ("biasOptional shape [1,16]",)),
]


@where_it_runs
@pytest.mark.parametrize("case,words", SHAPE_CASES,
                         ids=["x1-rank9", "gamma-rank10", "x2-rank", "mean-rank", "rstd-rank",
                              "gamma-rank", "x2-shape", "y-shape", "xout-shape", "beta-shape",
                              "rstd-shape", "gamma-dims", "mean-dims", "mean-ones",
                              "bias-shape", "bias-rank"])
def test_shape_refusals(arena, case, words):
    """The tiling's rules (CheckInputShape4AddLayerNorm, in its order) and the docs' bias
    shapes: 561002, naming the argument and the rule."""
    refused(views(arena, **case), TILING, *words)


@where_it_runs
def test_no_rows_succeeds_and_writes_nothing(arena):
    """Every output empty (a zero batch dim): the framework skips the tiling and the kernel."""
    args = views(arena, shape=(0, 16), bias=(16,))
    rc, ws, ex = phase_one(*args, eps=-1.0)
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0


@where_it_runs
@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_no_rows_needs_no_current_device(arena, null_stream):
    """Every output empty: the generated operator's phase two skips every runtime step
    (indv_executor.cpp NnopbaseExecutorRunWithWorkspace, NnopbaseSkipKernelLaunch), so both
    phases succeed on a thread that never set a device, with a NULL stream or a given one
    (nothing queued on it). A call with rows launches its kernel, which needs the thread's
    context: 361001 naming the call."""
    stream = ffi.NULL if null_stream else arena.stream

    def args(**shape):
        v = views(arena, **shape)
        return v[:5] + [1e-5, True] + v[5:]     # epsilon, additionalOutput
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, args(shape=(0, 16)), stream)
    assert (rc, ws, rc2) == (OK, 0, OK), msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    workspace = arena.malloc(32 * 1024 * 1024)  # beyond its size on any part
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, args(), stream, workspace)
    assert (rc, rc2) == (OK, 361001), msg
    assert msg.startswith("aclnnAddLayerNorm: ") and "no device" in msg, msg


@where_it_runs
def test_no_columns(arena):
    """x1 empty in gamma's dims only (gamma empty), rows left: meanOut is not empty, so the
    tiling runs. Atlas A2/A3 and inference parts refuse it (an empty x1 needs an empty
    meanOut); Ascend 950 accepts it and fills mean and rstd with NaN (its reduce-empty
    kernel)."""
    args = views(arena, shape=(4, 0), gshape=(0,))
    if ARCH != 3510:
        refused(args, TILING, "x1 [4,0] is empty while meanOut [4,1] is not")
        return
    args[6] = DevView(arena, shape=(4, 1), dtype=F32, sentinel=-77.0)
    args[7] = DevView(arena, shape=(4, 1), dtype=F32, sentinel=-77.0)
    run_phase_two(arena, P2, phase_one(*args))
    assert np.isnan(args[6].read()).all() and np.isnan(args[7].read()).all()


@where_it_runs
def test_no_rows_still_takes_the_shape_rules(arena):
    """Stricter (docs/emulator.md): the shape rules hold for an all-empty call too."""
    refused(views(arena, shape=(0, 16), gshape=(8,), mshape=(0, 1)), TILING,
            "gamma shape [8] must equal the last 1 dims of x1 [0,16]")


@where_it_runs
def test_negative_epsilon_is_the_kernels(arena):
    """No rule on epsilon (the tiling takes any float): -1 with a zero variance is NaN."""
    y, mean, rstd, x = call(arena, np.ones((2, 16), F32), np.ones((2, 16), F32),
                            np.ones(16, F32), np.zeros(16, F32), eps=-1.0)
    assert np.isnan(y).all()


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    xo = args[8]
    arena.destroy_tensor(xo.handle)
    try:
        refused(args, INVALID, "xOut", "not a live aclTensor")
    finally:
        xo.handle = arena.tensor(xo.shape, xo.dtype, xo.strides, xo.offset, xo.n, xo.ptr)


@where_it_runs
def test_executor_keeps_running_on_new_contents(arena):
    """A repeatable executor: each run reads x1/x2 as they are then."""
    args = views(arena)
    rc, ws, ex = phase_one(*args)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    x1, xo, y = args[0], args[8], args[5]
    wsp = arena.malloc(ws) if ws else ffi.NULL
    try:
        for k in (1, 3):
            arena.h2d(x1.ptr, np.full(x1.n, k, F32))
            assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            assert (xo.read() == k + 1).all()
            assert (y.read() == 1).all()   # beta 1 (views' ones), var 0
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- the part -----------------------------------------------------------------------------------

@only_where(ARCH == 1001)   # the Atlas training parts (their own run or their child)
def test_no_kernel_on_atlas_training_parts(arena):
    """op_host/add_layer_norm_def.cpp configures no ascend910: the framework's kernel lookup
    fails (561003) for every call, empty ones too, before it compares dtypes."""
    refused(views(arena), NO_KERNEL, "not supported on", SOC)
    refused(views(arena, shape=(0, 16)), NO_KERNEL)
    refused(views(arena, xacl=lib.ACL_INT32), NO_KERNEL)


@only_where(ARCH == 2002)   # the Atlas inference parts (their own run or their child)
def test_stats_not_written_on_atlas_inference_parts(arena):
    rng = np.random.default_rng(2)
    x1, x2, g, b, _ = inputs(rng, (4, 32), 1, (F16,) * 5, "none")
    y, mean, rstd, x = call(arena, x1, x2, g, b)
    assert (mean == -77.0).all() and (rstd == -77.0).all()


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}), lambda part: (
        "no_kernel or part_dtype_table or dead_tensor" if part == "Ascend910A" else
        "part_dtype_table or bit_for_bit and 181 or reference and none or "
        "atlas_inference or shape_refusals and bias or no_columns or scaling or "
        "no_current_device"))
