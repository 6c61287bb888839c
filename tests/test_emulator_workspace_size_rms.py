"""Phase one's workspace size, as a device reports it, for the RmsNorm family.

Expected sizes are stated here from the vendor's sources, independently of the emulator:
- aclnnRmsNorm, aclnnGemmaRmsNorm, aclnnInplaceAddRmsNorm have no op_api source: opbuild
  generates them, and they run their one kernel on opbase's individual-op executor, whose
  size is the sum of the tiling's workspaces, no allocator (hicann/opbase src/nnopbase/
  individual_op/executor/indv_executor.cpp NnopbaseExecutorGetWorkspaceSizes), 0 when every
  output is empty (NnopbaseSkipKernelLaunch);
- the tilings (hicann/ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp Tiling4RmsNorm and
  setWorkSize; norm/add_rms_norm/op_host/add_rms_norm_tiling.cpp SetWorkspaceSize,
  add_rms_norm_tiling_arch35.cpp): 256 bytes + 16 MiB; GemmaRmsNorm's arch35 branch
  (Ascend 950) returns before setting any;
- aclnnAddRmsNorm (op_api/aclnn_add_rms_norm.cpp, add_rms_norm.cpp) builds a graph: Contiguous
  copies, the kernel, three executor-allocated results (rstd and x shaped {0} in the modes
  that do not return them), ViewCopy of the returned ones; placed by MaxAllocator
  (_workspace_model.py).
Then phase two's checks of that size: NULL 161001, one byte short 161002, nothing leaked,
and a run with exactly that size gives the right numbers.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import (F16, F32, INVALID, NULLPTR, OK, DevView, arena,  # noqa: F401
                              last_msg, live, no_leaks, stream)
from _emu_aclnn import phase_one, workspace_attempt
from _part_runs import only_where, other_parts, run_on_parts
from _workspace_model import (ARCH, CORES, LIB_API_WORKSPACE, SOC, MiB16, copies_in,
                              copy_view_out_ws, handed_over, handed_over_all, kind_takes_over,
                              max_allocator)
from test_emulator_add import put_view

RMS = (lib.aclnnRmsNormGetWorkspaceSize, lib.aclnnRmsNorm)
GEMMA = (lib.aclnnGemmaRmsNormGetWorkspaceSize, lib.aclnnGemmaRmsNorm)
ADD = (lib.aclnnAddRmsNormGetWorkspaceSize, lib.aclnnAddRmsNorm)
INPLACE = (lib.aclnnInplaceAddRmsNormGetWorkspaceSize, lib.aclnnInplaceAddRmsNorm)
EPS = 1e-6
# RmsNorm's and AddRmsNorm's tilings: 256 bytes of their own and the 16 MiB system workspace.
TILING_WS = 256 + MiB16


def rms_expected(M, gemma=False):
    if M == 0 or (gemma and ARCH == 3510):
        return 0
    return TILING_WS


# AddRmsNorm, InplaceAddRmsNorm, RmsNormQuant and AddRmsNormQuant have no kernel on the Atlas
# training series, GemmaRmsNorm none there nor on the inference series (phase one refuses them:
# test_declared_parts): their cases could never run there, so they are no tests
needs_add_kernel = only_where(ARCH != 1001)
needs_gemma_kernel = only_where(ARCH not in (1001, 2002))


def add_expected(M, N, es, mode, strided=(), out_strided=(), views=None):
    """MaxAllocator over aclnnAddRmsNorm's graph: the Contiguous copy (M x N, or N for gamma)
    of each strided input (its chain of copy kernels by the caller's view, ``views`` by name:
    _workspace_model.copies_in), then the kernel's workspace and its results that no
    contiguous user tensor takes over (_workspace_model.kind_takes_over): a {0}-shaped rstd
    outside the full mode, a {0}-shaped x in the post mode, and every result a strided output
    needs copied (alive until that copy kernel, with its own workspace)."""
    graph, k = copies_in([views[name] for name in strided])
    graph.append((TILING_WS, k, k))
    outs = {"y": M * N * es, "rstd": M * 4 if mode == "full" else 0,
            "x": 0 if mode == "post" else M * N * es}
    returned = {"full": ("y", "rstd", "x"), "pre": ("y", "x"), "post": ("y",)}[mode]
    reader = k
    for name, nbytes in outs.items():
        if name not in returned:
            graph.append((nbytes, k, k))
        elif name in out_strided:
            reader += 1
            graph += [(nbytes, k, reader)] + copy_view_out_ws(reader, views[name])
        elif not kind_takes_over((M if name == "rstd" else M * N,)):
            reader += 1  # copied into the caller's contiguous tensor by a copy task
            graph.append((nbytes, k, reader))
    return max_allocator(graph)


def rand(shape, dt, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 1.5 + 0.25).astype(dt)


def rms_ref(x, g):
    x64 = x.astype(np.float64)
    rstd = 1 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + EPS)
    return x64 * rstd * g.astype(np.float64), rstd


# ---- the sizes ---------------------------------------------------------------------------------

def rms_views(arena, shape, dt=F32, gemma=False):
    return [DevView(arena, rand(shape, dt)), DevView(arena, np.ones(shape[-1:], dt)), EPS,
            DevView(arena, shape=shape, dtype=dt),
            DevView(arena, shape=shape[:-1] + (1,), dtype=F32)]


def ws_of(result):
    """The workspace size of a passed phase one (status, size, executor); the executor
    destroyed."""
    rc, ws, ex = result
    assert rc == OK, (rc, last_msg())
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


def size_of(arena, p1, args):
    return ws_of(phase_one(p1, *args))


@pytest.mark.parametrize("shape", [(3, 8), (2, 5, 33), (1, 20000), (0, 16)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_rms_norm_size(arena, shape, dt):
    M = int(np.prod(shape[:-1]))
    assert size_of(arena, RMS[0], rms_views(arena, shape, dt)) == rms_expected(M)


@needs_gemma_kernel
@pytest.mark.parametrize("shape", [(3, 8), (1, 20000), (0, 16)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemma_rms_norm_size(arena, shape):
    M = int(np.prod(shape[:-1]))
    assert size_of(arena, GEMMA[0], rms_views(arena, shape)) == rms_expected(M, gemma=True)


def add_views(arena, shape, dt, mode, kinds=None):
    kinds = kinds or {}
    v = lambda name, **kw: DevView(arena, kind=kinds.get(name, "contig"), **kw)  # noqa: E731
    N = shape[-1]
    gshape = (N,) if mode == "full" else (1, N)
    return [v("x1", values=rand(shape, dt, 1)), v("x2", values=rand(shape, dt, 2)),
            v("gamma", values=rand(gshape, dt, 3)), EPS, v("y", shape=shape, dtype=dt),
            v("rstd", shape=shape[:-1] + (1,), dtype=F32) if mode == "full" else None,
            v("x", shape=shape, dtype=dt) if mode != "post" else None]


ADD_MODES = [("full", F32), ("full", F16), ("pre", F16), ("post", F16)]


@needs_add_kernel
@pytest.mark.parametrize("mode,dt", ADD_MODES, ids=[f"{m}-{d.name}" for m, d in ADD_MODES])
@pytest.mark.parametrize("shape", [(4, 16), (2, 3, 300)], ids=lambda s: "x".join(map(str, s)))
def test_add_rms_norm_size(arena, mode, dt, shape):
    M, N = int(np.prod(shape[:-1])), shape[-1]
    ws = size_of(arena, ADD[0], add_views(arena, shape, dt, mode))
    assert ws == add_expected(M, N, dt.itemsize, mode)
    assert ws >= TILING_WS


@needs_add_kernel
@pytest.mark.parametrize("strided,out_strided",
                         [(("x1",), ()), (("x1", "x2", "gamma"), ()), ((), ("y",)),
                          ((), ("rstd", "x")), (("x2",), ("y", "x"))],
                         ids=["x1", "inputs", "y", "rstd-x", "x2-y-x"])
def test_add_rms_norm_size_strided(arena, strided, out_strided):
    kinds = {n: "transposed" for n in strided + out_strided}
    kinds.update({n: "stepped" for n in ("gamma", "rstd") if n in kinds})
    vs = add_views(arena, (6, 40), F32, "full", kinds)
    ws = size_of(arena, ADD[0], vs)
    views = dict(zip(("x1", "x2", "gamma", "eps", "y", "rstd", "x"), vs))
    assert ws == add_expected(6, 40, 4, "full", strided, out_strided, views)


@needs_add_kernel
def test_add_rms_norm_empty_takes_none(arena):
    assert size_of(arena, ADD[0], add_views(arena, (0, 16), F32, "full")) == 0


def inplace_views(arena, shape, dt=F32):
    M = int(np.prod(shape[:-1]))
    return [DevView(arena, rand(shape, dt, 1)), DevView(arena, rand(shape, dt, 2)),
            DevView(arena, rand(shape[-1:], dt, 3)), EPS,
            DevView(arena, shape=(M, 1), dtype=F32)]


@needs_add_kernel
@pytest.mark.parametrize("shape", [(4, 16), (0, 16)], ids=lambda s: "x".join(map(str, s)))
def test_inplace_add_rms_norm_size(arena, shape):
    M = int(np.prod(shape[:-1]))
    assert size_of(arena, INPLACE[0], inplace_views(arena, shape)) == (TILING_WS if M else 0)


# ---- phase two with that size ------------------------------------------------------------------

def refused_and_exact(arena, p1, p2, make_args, expected_ws, check):
    """With fresh views each time: a NULL workspace of the reported size is refused (161001),
    one byte short 161002, each releasing the executor and leaking nothing; the exact size
    runs and ``check(args)`` judges its numbers."""
    for attempt in ("null", "short", "exact"):
        args = make_args()
        rc, ws, ex = phase_one(p1, *args)
        assert rc == OK, last_msg()
        assert ws == expected_ws > 0
        if workspace_attempt(arena, p2, ex, ws, attempt):
            check(args)


def test_rms_norm_short_refused_exact_runs(arena):
    def check(args):
        y, rstd = rms_ref(args[0].read(), args[1].read())
        np.testing.assert_allclose(args[3].read(), y, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(args[4].read(), rstd, rtol=2e-6)
    refused_and_exact(arena, *RMS, lambda: rms_views(arena, (5, 24)), rms_expected(5), check)


@only_where(ARCH not in (1001, 2002, 3510))   # no kernel, or no workspace (950)
def test_gemma_rms_norm_short_refused_exact_runs(arena):

    def check(args):
        y, _ = rms_ref(args[0].read(), args[1].read() + 1)  # Gemma: gamma + 1
        np.testing.assert_allclose(args[3].read(), y, rtol=2e-6, atol=2e-6)
    refused_and_exact(arena, *GEMMA, lambda: rms_views(arena, (5, 24)), TILING_WS, check)


@needs_add_kernel
def test_add_rms_norm_short_refused_exact_runs(arena):

    def check(args):
        x = args[0].read().astype(np.float64) + args[1].read()
        y, rstd = rms_ref(x, args[2].read())
        np.testing.assert_allclose(args[4].read(), y, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(args[6].read(), x, rtol=1e-6, atol=1e-6)
        if ARCH != 2002:  # Atlas inference parts do not write rstd
            np.testing.assert_allclose(args[5].read(), rstd, rtol=2e-6)
    kinds = {"y": "transposed"}
    y = add_views(arena, (6, 40), F32, "full", kinds)[4]  # its layout, for the copy's kernel
    refused_and_exact(arena, *ADD, lambda: add_views(arena, (6, 40), F32, "full", kinds),
                      add_expected(6, 40, 4, "full", out_strided=("y",), views={"y": y}), check)


@needs_add_kernel
def test_inplace_add_rms_norm_short_refused_exact_runs(arena):
    x1, x2 = rand((4, 16), F32, 1), rand((4, 16), F32, 2)

    def check(args):
        x = x1.astype(np.float64) + x2
        y, _ = rms_ref(x, args[2].read())
        np.testing.assert_allclose(args[0].read(), y, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(args[1].read(), x, rtol=1e-6, atol=1e-6)
    refused_and_exact(arena, *INPLACE, lambda: inplace_views(arena, (4, 16)), TILING_WS, check)


# ---- aclnnRmsNormQuant, aclnnAddRmsNormQuant ----------------------------------------------------
# Their op_apis build graphs like AddRmsNorm's: Contiguous copies, one kernel, results handed to
# the caller's tensors by ViewCopy. RmsNormQuant's tiling hard-codes 16 MiB
# (rms_norm_quant_common_tiling.cpp WORKAPCE_RESERVE); AddRmsNormQuant's 256 bytes + 16 MiB
# (add_rms_norm_quant_tiling.cpp); on Ascend 950 both kernels' arch35 tilings (RmsNormQuantV2,
# AddRmsNormQuant regbase) ask GetLibApiWorkSpaceSize only.

def rnq_args(arena, x_kind="contig"):
    import test_emulator_rms_norm_quant as rnq
    a = rnq.Args(arena)
    if x_kind != "contig":
        a.v["x"] = DevView(arena, rand((4, 32), F16), kind=x_kind)
    return a


@needs_add_kernel
def test_rms_norm_quant_size(arena):
    """The kernel's workspace, its INT8 y ViewCopy'd into the caller's (handed_over)."""
    kernel_ws = LIB_API_WORKSPACE if ARCH == 3510 else MiB16
    a = rnq_args(arena)
    assert ws_of(a.call()) == \
        max_allocator([(kernel_ws, 0, 0)] + handed_over(4 * 32, 0, a.v["y"])[0])
    a = rnq_args(arena, "transposed")
    assert ws_of(a.call()) == \
        max_allocator([(4 * 32 * 2, 0, 1), (kernel_ws, 1, 1)] +
                      handed_over(4 * 32, 1, a.v["y"])[0])


@needs_add_kernel
@pytest.mark.parametrize("fit", ["exact", "slack"])
def test_rms_norm_quant_int4_size(arena, fit):
    """An INT32 y: the kernel's INT4 result (two to a byte) viewed as INT32 (CreateView, one
    aclStorage with the result: opbase common_types.cpp) and ViewCopy'd into y. Re-pointing
    the view re-points that storage, so the result leaves the workspace as an INT8 one does,
    by the same rule on y's INT32 storage (_workspace_model.takes_over). The parts without
    move align never get there: Ascend910A has no kernel, Ascend310P3's y list is INT8 only
    (aclnn_rms_norm_quant.cpp OUT_ASCEND310_DTYPE_SUPPORT_LIST), so an INT32 y is refused."""
    a = rnq_args(arena)
    if fit == "exact":
        a.v["y"] = put_view(arena, np.zeros((4, 4), np.int32), [4, 1], 0, 16)
    else:
        a.v["y"] = a.make((4, 4), np.dtype(np.int32))
    rc, ws, ex = a.call()
    if ARCH == 2002:
        assert rc == INVALID and "y dtype INT32" in last_msg(), (rc, last_msg())
        return
    kernel_ws = LIB_API_WORKSPACE if ARCH == 3510 else MiB16
    assert ws_of((rc, ws, ex)) == \
        max_allocator([(kernel_ws, 0, 0)] + handed_over(4 * 32 // 2, 0, a.v["y"])[0]) == \
        max_allocator([(kernel_ws, 0, 0)])


def arq_args(arena, dual=True):
    import test_emulator_add_rms_norm_quant as arq
    a = arq.Args(arena)
    if not dual:
        a.v["scales2"] = a.v["z2"] = None
    return a


def arq_outs(a, k, dual):
    """y1, y2 (dual), x ViewCopy'd in that order into the caller's (handed_over_all)."""
    v = a.v
    return handed_over_all(k, [(4 * 32, v["y1"])] + ([(4 * 32, v["y2"])] if dual else []) +
                           [(4 * 32 * 2, v["x"])])[0]


@needs_add_kernel
@pytest.mark.parametrize("dual", [True, False], ids=["dual", "single"])
def test_add_rms_norm_quant_size(arena, dual):
    kernel_ws = LIB_API_WORKSPACE if ARCH == 3510 else 256 + MiB16
    # single: y2 is a {1}-shaped INT8 result nobody copies out
    graph = [(kernel_ws, 0, 0)] + ([] if dual else [(1, 0, 0)])
    a = arq_args(arena, dual)
    assert ws_of(a.call()) == max_allocator(graph + arq_outs(a, 0, dual))


@needs_add_kernel
def test_add_rms_norm_quant_size_strided_x1(arena):
    kernel_ws = LIB_API_WORKSPACE if ARCH == 3510 else 256 + MiB16
    a = arq_args(arena)
    a.v["x1"] = DevView(arena, rand((4, 32), F16), kind="transposed")
    assert ws_of(a.call()) == \
        max_allocator([(4 * 32 * 2, 0, 1), (kernel_ws, 1, 1)] + arq_outs(a, 1, True))


def short_and_null_refused(arena, p2, args):
    """A NULL workspace of the reported size 161001, one byte short 161002, nothing leaked;
    the exact size runs."""
    for attempt in ("null", "short", "exact"):
        rc, ws, ex = args.call()
        assert rc == OK, last_msg()
        assert ws > MiB16 // 8
        wsp = arena.malloc(ws)
        before = live()
        if attempt == "exact":
            assert p2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == OK
            return
        code = p2(ffi.NULL, ws, ex, arena.stream) if attempt == "null" else \
            p2(wsp, ws - 1, ex, arena.stream)
        assert code == (NULLPTR if attempt == "null" else INVALID), last_msg()
        after = live()
        assert after["executors"] == before["executors"] - 1
        assert after["device_bytes"] == before["device_bytes"]


@needs_add_kernel
def test_rms_norm_quant_short_refused_exact_runs(arena):
    short_and_null_refused(arena, lib.aclnnRmsNormQuant, rnq_args(arena))


@needs_add_kernel
def test_add_rms_norm_quant_short_refused_exact_runs(arena):
    short_and_null_refused(arena, lib.aclnnAddRmsNormQuant, arq_args(arena))


# ---- aclnnRmsNormGrad ---------------------------------------------------------------------------
# Generated aclnn like RmsNorm's (the sum of the tiling's workspaces). rms_norm_grad_tiling.cpp
# SetTilingDataAndWorkspace outside deterministic mode: 8 floats (ALIGN_32) per used core +
# 16 MiB (test_deterministic.py: the deterministic mode's), the
# used cores the rows in blocks of ceil(M / cores); Ascend 950: 16 MiB, BigM's
# (rms_norm_grad_regbase_big_m_tiling.cpp) one N-float row per dgamma core on top.

GRAD = (lib.aclnnRmsNormGradGetWorkspaceSize, lib.aclnnRmsNormGrad)


def grad_expected(M, N):
    if ARCH == 3510:
        half = 64 * CORES // 2  # 64 floats to a 256-byte vector register
        if M > 0 and N <= half and M >= 2 * N and M >= half:
            return min(-(-M // 64), CORES) * N * 4 + MiB16
        return MiB16
    used = -(-M // -(-M // CORES))
    return 8 * 4 * used + MiB16


def grad_views(arena, M, N):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((M, N)).astype(F32)
    rstd = (1 / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + EPS)).astype(F32)
    return [DevView(arena, rng.standard_normal((M, N)).astype(F32)), DevView(arena, x),
            DevView(arena, rstd), DevView(arena, rng.standard_normal(N).astype(F32)),
            DevView(arena, shape=(M, N), dtype=F32), DevView(arena, shape=(N,), dtype=F32)]


GRAD_SHAPES = [(3, 64), (100, 64), (5, 640), (2 * 64 * 64, 64)]


@pytest.mark.parametrize("M,N", GRAD_SHAPES, ids=[f"{m}x{n}" for m, n in GRAD_SHAPES])
def test_rms_norm_grad_size(arena, M, N):
    assert size_of(arena, GRAD[0], grad_views(arena, M, N)) == grad_expected(M, N)


@only_where(ARCH == 3510)   # Ascend 950's BigM template
def test_rms_norm_grad_size_950_big_m(arena):
    """Both sides of BigM's row-count rule (M >= 64 * cores / 2)."""
    half = 64 * CORES // 2
    assert size_of(arena, GRAD[0], grad_views(arena, half, 64)) == \
        min(-(-half // 64), CORES) * 64 * 4 + MiB16
    assert size_of(arena, GRAD[0], grad_views(arena, half - 1, 64)) == MiB16


def test_rms_norm_grad_short_refused_exact_runs(arena):
    def check(args):
        dy, x, rstd, g = (a.read().astype(np.float64) for a in args[:4])
        xr, dyg = x * rstd, dy * g
        dx = (dyg - xr * (dyg * xr).mean(1, keepdims=True)) * rstd
        np.testing.assert_allclose(args[4].read(), dx, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(args[5].read(), (dy * xr).sum(0), rtol=1e-5, atol=1e-5)
    refused_and_exact(arena, *GRAD, lambda: grad_views(arena, 6, 64), grad_expected(6, 64),
                      check)


test_on_other_parts = run_on_parts(other_parts(), "size or refused")
