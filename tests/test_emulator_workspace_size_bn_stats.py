"""Phase one's workspace size as a device reports it, for aclnnBatchNormStats and
aclnnBatchNormGatherStatsWithCounts (emulator/src/ops/exec_workspace.h).

The expected sizes are stated here from the vendor's rules, independently of the emulator's
code: opbase's MaxAllocator over the kernel graph each op_api builds (tests/_workspace_model.py)
and the kernels' tilings. aclnnBatchNormStats: hicann/ops-math math/reduce_std_with_mean/
op_api/aclnn_batch_norm_stats.cpp (input's copy and FLOAT cast; on Ascend 950 ReduceVar, Add,
Pow, each 16 MiB: reduce_var_tiling.cpp, opbase's broadcast tiling, pow_tiling_arch35.cpp;
elsewhere the TBE ReduceMean, BroadcastTo, ReduceStdWithMean, workspaces not public: none, and
the broadcast mean of input's size). aclnnBatchNormGatherStatsWithCounts: hicann/ops-nn
norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
aclnn_batch_norm_gather_stats_with_counts.cpp (on Ascend 950 SyncBatchNormGatherStatsFused,
its templates' GetWorkspaceSize in norm/sync_batch_norm_gather_stats_fused/op_host; elsewhere
the TBE chain's [N, C] broadcasts and [C] results). Then phase two's checks of that size: NULL
161001, one byte short 161002, nothing leaked, and a run with exactly that size.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py.raw import lib

from _part_runs import only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one, workspace_attempt
from _workspace_model import ARCH, CORES, MiB16, align, ceil_to
from test_emulator_op import F16, F32, OK, DevView, arena, last_msg, stream  # noqa: F401
from test_emulator_workspace_size_bn import Graph

BS_P1, BS_P2 = lib.aclnnBatchNormStatsGetWorkspaceSize, lib.aclnnBatchNormStats
GS_P1 = lib.aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize
GS_P2 = lib.aclnnBatchNormGatherStatsWithCounts
REGBASE = ARCH == 3510


def step(g, reads, *outs):
    """A kernel reading the tensors of ``reads`` (None: the caller's) with outputs (or tiling
    workspaces) of these sizes; their handles."""
    k = g.kernel()
    for t in reads:
        g.read(t, k)
    return [g.out(k, b) for b in outs]


def cast(g, t, nbytes):
    """A Cast of t (or a Fill: t None) with its tiling workspace where it has one (Ascend 950's
    16 MiB); its output's handle."""
    k = g.helper_kernel()
    g.read(t, k)
    return g.out(k, nbytes)


def hand_over(g, gone, t, C, strided, view=None):
    """l0op::ViewCopy of intermediate t into a caller's [C] tensor: a contiguous one takes it
    over or has it copied (Graph.hand_over), a strided one is written by a copy kernel
    reading it (with its tiling workspace when the caller's ``view`` is given)."""
    if strided and view is not None:
        g.copy_out(t, view)
    elif strided:
        step(g, [t])
    else:
        g.hand_over(t, gone, (C,))


def fills_expected(outputs, C, strided):
    """ProcessEmptyTensorWithValue on each of ``outputs`` [C] FLOAT outputs in turn: a Fill
    handed over to it."""
    g, gone = Graph(), set()
    for _ in range(outputs):
        hand_over(g, gone, cast(g, None, C * 4), C, strided)
    return g.size(gone)


# ---- aclnnBatchNormStats --------------------------------------------------------------------

def stats_expected(shape, xdt=F32, x_strided=False, out_strided=False, vs=(None,) * 3):
    """vs: the views of input, mean, invstd (their copies' kernels: _workspace_model)."""
    C, X = shape[1], math.prod(shape)
    g, gone = Graph(), set()
    x = (g.copy(vs[0]) if vs[0] is not None else g.out(g.kernel(), X * np.dtype(xdt).itemsize)
         ) if x_strided else None
    if xdt != F32:
        x = cast(g, x, X * 4)
    if REGBASE:
        _, var, mean = step(g, [x], MiB16, C * 4, C * 4)  # ReduceVar
        _, add = step(g, [var], MiB16, C * 4)               # Add eps
        _, inv = step(g, [add], MiB16, C * 4)               # Pow -0.5
        hand_over(g, gone, inv, C, out_strided, vs[2])
        hand_over(g, gone, mean, C, out_strided, vs[1])
    else:
        mean, = step(g, [x], C * 4)           # ReduceMean
        hand_over(g, gone, mean, C, out_strided, vs[1])
        wide, = step(g, [mean], X * 4)        # BroadcastTo input's shape
        inv, = step(g, [x, wide], C * 4)      # ReduceStdWithMean
        hand_over(g, gone, inv, C, out_strided, vs[2])
    return g.size(gone)


def stats_views(arena, shape, xdt=F32, x_kind="contig", out_kind="contig", data=False):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(xdt) if data else np.ones(shape, xdt)
    C = shape[1]
    return [DevView(arena, x, kind=x_kind),
            DevView(arena, shape=(C,), dtype=F32, kind=out_kind),
            DevView(arena, shape=(C,), dtype=F32, kind=out_kind)]


def stats_size(arena, vs):
    rc, ws, ex = phase_one(BS_P1, vs[0], 1e-5, vs[1], vs[2])
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


STATS_SHAPES = [(4, 3, 5), (2, 64, 3, 3), (16, 8), (2, 5, 2, 1, 3)]


@pytest.mark.parametrize("shape", STATS_SHAPES, ids=[str(s) for s in STATS_SHAPES])
@pytest.mark.parametrize("xdt", [F32, F16], ids=["f32", "f16"])
def test_stats_size(arena, shape, xdt):
    assert stats_size(arena, stats_views(arena, shape, xdt)) == stats_expected(shape, xdt)


@pytest.mark.parametrize("xdt", [F32, F16], ids=["f32", "f16"])
def test_stats_size_strided(arena, xdt):
    """A strided input is copied first (alive until the FLOAT cast or the kernels reading it);
    strided outputs keep their results in the workspace until their copies."""
    shape = (2, 6, 3, 4)
    for x_kind, out_kind in (("transposed", "contig"), ("contig", "stepped"),
                             ("padded", "stepped")):
        vs = stats_views(arena, shape, xdt, x_kind, out_kind)
        assert stats_size(arena, vs) == stats_expected(
            shape, xdt, x_kind != "contig", out_kind != "contig", vs), (x_kind, out_kind)


def test_stats_size_empty_input(arena):
    """An empty input: a Fill of C FLOATs per output, taken over by a contiguous one; strided
    ones keep theirs until their copies, one after the other (one bucket)."""
    assert stats_size(arena, stats_views(arena, (0, 4, 3))) == fills_expected(2, 4, False)
    vs = stats_views(arena, (0, 4, 3), out_kind="stepped")
    assert stats_size(arena, vs) == fills_expected(2, 4, True) >= align(4 * 4)


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_stats_workspace(arena, attempt):
    shape = (4, 3, 5)
    want = stats_expected(shape)
    assert want > 0
    vs = stats_views(arena, shape, data=True)
    rc, ws, ex = phase_one(BS_P1, vs[0], 1e-5, vs[1], vs[2])
    assert rc == OK and ws == want, last_msg()
    if workspace_attempt(arena, BS_P2, ex, ws, attempt):
        x = vs[0].read().astype(np.float64)
        np.testing.assert_allclose(vs[1].read(), x.mean((0, 2)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(vs[2].read(), 1 / np.sqrt(x.var((0, 2)) + 1e-5), rtol=1e-4)


# ---- aclnnBatchNormGatherStatsWithCounts ----------------------------------------------------

def fused_workspace(N, C, dt):
    """SyncBatchNormGatherStatsFused's workspace: the first capable template in priority
    order (Common, Workspace, FirstAxisCommon, FirstAxisWorkspace)."""
    if not (C < N and N > 255):
        return CORES * 4 + MiB16
    blocks = -(-N // -(-N // CORES))
    common = C <= 5000
    row = ceil_to(C, 8 if common and dt == F32 else 16) * 4
    return (blocks + 2) * row + (CORES * 4 if common else 0) + MiB16


def gather_expected(N, C, dt=F32, given=(True, True), rdt=None, out_dt=None, strided=()):
    """mean, invstd and input of dt, counts FLOAT, running statistics of rdt (given: runningMean,
    runningVar present), meanAll/invstdAll of out_dt; strided: names of strided tensors among
    mean, counts, rm, out."""
    rdt, out_dt = rdt or dt, out_dt or dt
    kdt = dt if REGBASE else F32
    es, NC = np.dtype(dt).itemsize, N * C
    g, gone = Graph(), set()
    run = []
    rs = np.dtype(rdt).itemsize
    for present in given:
        if not present:  # a Fill of [1, C]: FLOAT, input's dtype on Ascend 950
            run.append(cast(g, None, C * (es if REGBASE else 4)))
            continue
        h = g.out(g.kernel(), C * rs) if "rm" in strided else None
        if not REGBASE and rdt != F32:
            h = cast(g, h, C * 4)
        run.append(h)
    stat = []
    for name, n in (("mean", NC), ("mean", NC), ("counts", N)):  # invstd strided as mean
        h = g.out(g.kernel(), n * (4 if name == "counts" else es)) if name in strided else None
        if name != "counts" and kdt != dt:
            h = cast(g, h, n * 4)
        stat.append(h)
    m, s, cnt = stat
    if REGBASE:
        _, ma, iv, rmo, rvo = step(g, [m, s, cnt, *run], fused_workspace(N, C, dt),
                                   *(C * es,) * 4)
    else:
        cb, = step(g, [cnt], NC * 4)          # BroadcastTo the counts
        tot, = step(g, [cb], C * 4)           # ReduceSum
        tots, = step(g, [tot], NC * 4)        # BroadcastTo the sums
        ma, = step(g, [m, cb, tots], C * 4)   # ReduceMeanWithCount
        mab, = step(g, [ma], NC * 4)          # BroadcastTo meanAll
        iv, rvo = step(g, [m, s, cb, mab, tot, run[1]], C * 4, C * 4)
        if given[0]:
            rmo, = step(g, [ma, run[0]], C * 4)  # SyncBNTrainingUpdate
            if rdt != F32:
                rmo = cast(g, rmo, C * rs)
                rvo = cast(g, rvo, C * rs)
            hand_over(g, gone, rvo, C, "rm" in strided)
            hand_over(g, gone, rmo, C, "rm" in strided)
    if out_dt != kdt:
        ma = cast(g, ma, C * np.dtype(out_dt).itemsize)
        iv = cast(g, iv, C * np.dtype(out_dt).itemsize)
    hand_over(g, gone, ma, C, "out" in strided)
    hand_over(g, gone, iv, C, "out" in strided)
    if REGBASE and given[0]:
        hand_over(g, gone, rmo, C, "rm" in strided)
        hand_over(g, gone, rvo, C, "rm" in strided)
    return g.size(gone)


def gather_views(arena, N, C, dt=F32, given=(True, True), rdt=None, out_dt=None, strided=(),
                 data=False):
    rdt, out_dt = rdt or dt, out_dt or dt
    rng = np.random.default_rng(4)
    kind = {n: ("stepped" if n in strided else "contig") for n in ("mean", "counts", "rm", "out")}
    mean = (rng.standard_normal((N, C)) if data else np.zeros((N, C))).astype(dt)
    inv = (1 + rng.random((N, C)) if data else np.ones((N, C))).astype(dt)
    counts = rng.integers(1, 9, N).astype(F32)
    vec = [DevView(arena, np.zeros(C, rdt), kind=kind["rm"]) if given[0] else None,
           DevView(arena, np.ones(C, rdt), kind=kind["rm"]) if given[1] else None]
    return [DevView(arena, np.zeros((2, C, 3), dt)), DevView(arena, mean, kind=kind["mean"]),
            DevView(arena, inv, kind=kind["mean"]), *vec, 0.1, 1e-5,
            DevView(arena, counts, kind=kind["counts"]),
            DevView(arena, shape=(C,), dtype=out_dt, kind=kind["out"]),
            DevView(arena, shape=(C,), dtype=out_dt, kind=kind["out"])]


def gather_size(arena, N, C, **kw):
    rc, ws, ex = phase_one(GS_P1, *gather_views(arena, N, C, **kw))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


GATHER_SHAPES = [(4, 3), (2, 64), (300, 5), (1, 1)]
GIVEN = [(True, True), (False, False), (False, True)]


@pytest.mark.parametrize("n,c", GATHER_SHAPES, ids=[f"{n}x{c}" for n, c in GATHER_SHAPES])
@pytest.mark.parametrize("given", GIVEN, ids=["mv", "--", "-v"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_gather_size(arena, n, c, given, dt):
    assert gather_size(arena, n, c, dt=dt, given=given) == \
        gather_expected(n, c, dt, given)


def test_gather_size_other_dtypes(arena):
    """Off Ascend 950 FLOAT16 running statistics beside FLOAT ones (their FLOAT Casts and the
    results' Casts back); on every part meanAll/invstdAll of another dtype than the kernel's
    results (a Cast each, the kernel's result alive until it)."""
    if not REGBASE:
        for given in GIVEN:
            assert gather_size(arena, 4, 3, given=given, rdt=F16) == \
                gather_expected(4, 3, given=given, rdt=F16), given
    for dt, out_dt in ((F32, F16), (F16, F32)):
        assert gather_size(arena, 4, 3, dt=dt, out_dt=out_dt) == \
            gather_expected(4, 3, dt, out_dt=out_dt), (dt, out_dt)


@pytest.mark.parametrize("strided", [("mean",), ("counts",), ("rm",), ("out",),
                                     ("mean", "counts", "rm", "out")],
                         ids=["mean", "counts", "running", "out", "all"])
def test_gather_size_strided(arena, strided):
    for dt in (F32, F16):
        assert gather_size(arena, 4, 3, dt=dt, strided=strided) == \
            gather_expected(4, 3, dt, strided=strided), dt


def test_gather_size_empty_mean(arena):
    """No ranks: a Fill per meanAll/invstdAll, taken over by a contiguous one; no channels:
    nothing launches."""
    assert gather_size(arena, 0, 4) == fills_expected(2, 4, False)
    assert gather_size(arena, 0, 4, strided=("out",)) == fills_expected(2, 4, True) >= \
        align(4 * 4)
    assert gather_size(arena, 3, 0, strided=("out",)) == 0


@only_where(REGBASE)   # SyncBatchNormGatherStatsFused runs on Ascend 950
def test_gather_fused_templates():
    """Common for C >= N or N <= 255; FirstAxisCommon for N > 255 ranks over fewer channels:
    its per-block rows of C FLOATs (C up to 8, up to 16 for 16-bit statistics)."""
    assert fused_workspace(4, 3, F32) == CORES * 4 + MiB16
    blocks = -(-300 // -(-300 // CORES))
    assert fused_workspace(300, 5, F32) == (blocks + 2) * 8 * 4 + CORES * 4 + MiB16
    assert fused_workspace(300, 5, F16) == (blocks + 2) * 16 * 4 + CORES * 4 + MiB16


@only_where(REGBASE)   # SyncBatchNormGatherStatsFused runs on Ascend 950
def test_gather_fused_first_axis_workspace_template(arena):
    """More than 5000 channels over even more ranks: FirstAxisCommon declines and
    FirstAxisWorkspace runs (its rows aligned to 16 FLOATs, no word per core: at this C the
    word per core would cross a 512-byte allocator step). FLOAT16 statistics keep the two
    [N, C] inputs at 50 MB each."""
    n, c = 5018, 5017
    assert gather_size(arena, n, c, dt=F16) == gather_expected(n, c, F16)


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_gather_workspace(arena, attempt):
    N, C = 4, 3
    want = gather_expected(N, C)
    assert want > 0
    vs = gather_views(arena, N, C, data=True)
    rc, ws, ex = phase_one(GS_P1, *vs)
    assert rc == OK and ws == want, last_msg()
    if workspace_attempt(arena, GS_P2, ex, ws, attempt):
        mean, counts = vs[1].read().astype(np.float64), vs[7].read().astype(np.float64)
        want_mean = (mean * counts[:, None]).sum(0) / counts.sum()
        np.testing.assert_allclose(vs[8].read(), want_mean, rtol=1e-5, atol=1e-6)


test_on_other_parts = run_on_parts(other_parts(), "size or workspace or templates")
