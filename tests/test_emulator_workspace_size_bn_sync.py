"""Phase one's workspace size as a device reports it, for SyncBatchNorm's aclnnBatchNormElemt,
aclnnBatchNormReduceBackward and aclnnBatchNormElemtBackward (emulator/src/ops/
exec_workspace.h; docs/emulator.md "Phase one's workspace size").

The expected sizes are stated here from the vendor's sources, independently of the emulator's
code: opbase's MaxAllocator (tests/_workspace_model.py) over the kernel graph each op_api builds
(hicann/ops-nn norm/batch_norm_elemt/op_host/op_api/aclnn_batch_norm_elemt.cpp with
norm/batch_norm_v3's `BatchNorm` in inference; norm/sync_batch_norm_backward_reduce/op_api/
aclnn_batch_norm_backward_reduce.cpp; norm/sync_batch_norm_backward_elemt/op_api/
aclnn_batch_norm_elemt_backward.cpp) and the tilings' workspaces, all on Ascend 950 only:
16 MiB for Mul, OnesLike, Div, Sub, RealDiv, BroadcastTo, ReduceSum and BatchNormV3, the
platform's system workspace for SyncBatchNormBackwardReduce/Elemt. Elsewhere the kernels are
TBE ones whose workspaces come from compile info that is not public: none. Then phase two's
checks of that size: NULL 161001, one byte short 161002, nothing leaked, and a run with exactly
that size.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py.ops import BATCH_NORM_ELEMT_BACKWARD, BATCH_NORM_REDUCE_BACKWARD
from acl_py.raw import lib

from _emu_aclnn import phase_one, workspace_attempt
from _part_runs import bf16_where_it_runs, only_where, other_parts, run_on_parts, runs_here
from _workspace_model import (ARCH, LIB_API_WORKSPACE, SOC, TENSOR_MOVE_TASK_LIMIT, MiB16,
                              align, copy_kind_in, kind_takes_over, max_allocator,
                              tensor_move_ws)
from test_emulator_op import (BF16, F16, F32, OK, DevView, arena,  # noqa: F401
                              last_msg, stream)

BE = (lib.aclnnBatchNormElemtGetWorkspaceSize, lib.aclnnBatchNormElemt)
RB = (lib.aclnnBatchNormReduceBackwardGetWorkspaceSize, lib.aclnnBatchNormReduceBackward)
EB = (lib.aclnnBatchNormElemtBackwardGetWorkspaceSize, lib.aclnnBatchNormElemtBackward)
A950 = ARCH == 3510
I32 = np.dtype(np.int32)
DT_NAME = {F32: "FLOAT", F16: "FLOAT16", BF16: "BF16"}


class Graph:
    """The op_api's kernel graph in launch order: each kernel's tiling workspaces and the
    outputs the executor allocates, with their last reader; ``gone`` holds the results a
    ViewCopy hands to a contiguous caller's tensor (no workspace)."""

    def __init__(self, slack=3):
        self.kernels, self.tensors, self.gone = 0, [], set()
        self.slack = slack  # the outputs' storage elements after their views

    def kernel(self, *reads, ws=0, out=None):
        """A kernel reading ``reads`` (tensor ids or None) with a tiling workspace of ``ws``
        bytes (0: none); its output of ``out`` bytes, an id (None without one)."""
        k = self.kernels
        self.kernels += 1
        for t in reads:
            if t is not None:
                self.tensors[t][2] = max(self.tensors[t][2], k)
        if ws:
            self.tensors.append([ws, k, k])
        if out is None:
            return None
        self.tensors.append([out, k, k])
        return len(self.tensors) - 1

    def cast(self, t, have, want, n):
        """l0op::Cast: no kernel for the same dtype; on Ascend 950 its tiling's 16 MiB."""
        return t if have == want else self.kernel(t, ws=WS, out=n * want.itemsize)

    def fill(self, nbytes):
        """l0op::Fill (FillScalar): on Ascend 950 its tiling's 16 MiB."""
        return self.kernel(ws=WS, out=nbytes)

    def copy(self, strided, shape, dt, kind):
        """l0op::Contiguous of a caller's tensor (when strided: a DevView of ``kind``): its
        chain of copy kernels (_workspace_model.copy_kind_in); the result's id."""
        if not strided:
            return None
        entries, self.kernels = copy_kind_in(self.kernels, shape, kind, dt, reader=False)
        self.tensors += [list(t) for t in entries]
        return len(self.tensors) - 1 if entries else None

    def copy_out(self, t, have, want, n):
        """Cast to the caller's (contiguous) tensor's dtype, then ViewCopy (hand_over)."""
        self.hand_over(self.cast(t, have, want, n), n, want)

    def hand_over(self, t, n, dt=F32):
        """l0op::ViewCopy of t (None: none) into the caller's contiguous DevView of n elements
        of dtype dt: taken over where _workspace_model.kind_takes_over says so, else a copy
        task reads it. A t already taken over lives in a caller's tensor: l0op::TensorMove
        copies it (a task or kernel reading no workspace; _workspace_model.tensor_move_ws)."""
        if t in self.gone:
            k = self.kernels
            self.kernel(ws=sum(e[0] for e in tensor_move_ws(k, n * dt.itemsize, DT_NAME[dt])))
        elif t is not None and kind_takes_over((n,), slack=self.slack):
            self.gone.add(t)
        elif t is not None:
            self.kernel(t)

    def size(self):
        return max_allocator([tuple(t) for i, t in enumerate(self.tensors)
                              if i not in self.gone])


WS = MiB16 if A950 else 0  # an AscendC elementwise/reduce/broadcast/Cast/Fill tiling's 16 MiB
SYNC_WS = LIB_API_WORKSPACE if A950 else 0


def destroyed(rc, ws, ex):
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


def dtype_cases(dts, ids):
    """The dtypes cases with their ids, less those carrying BF16 on a part without it: such a
    call is refused there (the operators' tests check it), no test; the parts with BF16 run
    it."""
    return bf16_where_it_runs([pytest.param(d, id=i) for d, i in zip(dts, ids)])


# ---- aclnnBatchNormElemt ----------------------------------------------------------------------

def elemt_expected(shape, xdt=F32, mdt=F32, vdt=F32, wdt=F32, bdt=F32, strided=()):
    """wdt/bdt None: absent (FillScalar's FLOAT); strided: names of strided inputs."""
    C, X = shape[1], math.prod(shape)
    g = Graph()
    x = g.copy("input" in strided, shape, xdt, "transposed")
    w = g.fill(C * 4) if wdt is None else None
    b = g.fill(C * 4) if bdt is None else None
    wdt, bdt = wdt or F32, bdt or F32
    inv = g.copy("invstd" in strided, (C,), vdt, "stepped")
    vb = C * vdt.itemsize
    sq = g.kernel(inv, ws=WS, out=vb)              # Mul
    one = g.kernel(sq, ws=WS, out=vb)              # OnesLike
    var = g.kernel(g.kernel(one, sq, ws=WS, out=vb), ws=WS, out=vb)  # Div, Sub
    if w is None:
        w = g.copy("weight" in strided, (C,), wdt, "stepped")
    if b is None:
        b = g.copy("bias" in strided, (C,), bdt, "stepped")
    mean = g.copy("mean" in strided, (C,), mdt, "stepped")
    # BatchNorm(training false): ResizeFrom5D's Transpose where NCDHW has no kernel
    transposed = not A950 and len(shape) >= 5 and ARCH not in (2201, 2002)
    if transposed:
        x = g.kernel(x, out=X * xdt.itemsize)
    if A950:                                       # BatchNormProcRegbase
        wb = wdt if wdt == bdt else F32
        wb = wb if wb == xdt else F32
        run = mdt if mdt == vdt else F32
        run = run if run == wb and run == xdt else F32
        vec = [g.cast(w, wdt, wb, C), g.cast(b, bdt, wb, C), g.cast(mean, mdt, run, C),
               g.cast(var, vdt, run, C)]
        k = g.kernels
        y = g.kernel(x, *vec, ws=MiB16, out=X * xdt.itemsize)
        g.tensors.append([C * 4, k, k])            # the unused batch mean and variance
        g.tensors.append([C * 4, k, k])
    else:                                          # BatchNormProc: ResizeFrom1D's FLOAT casts
        vec = [g.cast(t, dt, F32, C) for t, dt in ((w, wdt), (b, bdt), (mean, mdt), (var, vdt))]
        y = g.kernel(x, *vec, out=X * xdt.itemsize)  # BNInfer
    if transposed:
        y = g.kernel(y, out=X * xdt.itemsize)
    g.hand_over(y, X, xdt)
    return g.size()


def elemt_args(arena, shape, xdt=F32, mdt=F32, vdt=F32, wdt=F32, bdt=F32, strided=(),
               data=False):
    C = shape[1]
    rng = np.random.default_rng(3)

    def vec(name, values, dt):
        if dt is None:
            return None
        return DevView(arena, values.astype(dt), kind="stepped" if name in strided else "contig")
    x = DevView(arena, (rng.standard_normal(shape) if data else np.ones(shape)).astype(xdt),
                kind="transposed" if "input" in strided else "contig")
    return [x, vec("weight", np.linspace(0.5, 1.5, C), wdt),
            vec("bias", np.linspace(-0.2, 0.2, C), bdt), vec("mean", np.linspace(-1, 1, C), mdt),
            vec("invstd", np.linspace(0.5, 2, C), vdt), 1e-5,
            DevView(arena, shape=shape, dtype=xdt)]


def elemt_size(arena, shape, **kw):
    return destroyed(*phase_one(BE[0], *elemt_args(arena, shape, **kw)))


ELEMT_SHAPES = [(6, 3), (4, 3, 5), (2, 6, 3, 4), (2, 5, 2, 1, 3), (2, 5, 2, 1, 3, 2)]


@pytest.mark.parametrize("shape", ELEMT_SHAPES, ids=[str(s) for s in ELEMT_SHAPES])
@pytest.mark.parametrize("given", [(True, True), (False, False), (True, False)],
                         ids=["wb", "--", "w-"])
def test_elemt_size(arena, shape, given):
    wdt, bdt = (F32 if given[0] else None), (F32 if given[1] else None)
    assert elemt_size(arena, shape, wdt=wdt, bdt=bdt) == \
        elemt_expected(shape, wdt=wdt, bdt=bdt)


@pytest.mark.parametrize("dts", dtype_cases(
    [(F16, F16, F16, F16, F16), (F16, F32, F16, F16, F32), (F32, F16, F16, None, None),
     (BF16, BF16, BF16, BF16, BF16), (BF16, F32, F32, BF16, None)],
    ["f16", "f16-mixed", "f32-f16-stats", "bf16", "bf16-mixed"]))
def test_elemt_size_dtypes(arena, dts):
    """invstd's dtype carries Mul..Sub; the vectors' casts: to FLOAT for BNInfer, on Ascend
    950 to input's dtype where weight/bias (and mean/variance) agree with it."""
    xdt, mdt, vdt, wdt, bdt = dts
    for shape in ((4, 3, 5), (2, 5, 2, 1, 3)):
        kw = dict(xdt=xdt, mdt=mdt, vdt=vdt, wdt=wdt, bdt=bdt)
        assert elemt_size(arena, shape, **kw) == elemt_expected(shape, **kw), shape


@pytest.mark.parametrize("strided", [("input",), ("invstd",), ("weight", "bias", "mean"),
                                     ("input", "invstd", "weight", "bias", "mean")],
                         ids=["input", "invstd", "vectors", "all"])
def test_elemt_size_strided(arena, strided):
    shape = (4, 3, 5)
    assert elemt_size(arena, shape, strided=strided) == \
        elemt_expected(shape, strided=strided)


def test_elemt_empty_input(arena):
    assert elemt_size(arena, (0, 3, 5)) == 0


def test_elemt_workspace_short_refused_and_exact_runs(arena):
    shape = (4, 3, 5)
    want = elemt_expected(shape)
    assert want > 0  # Mul .. Sub's results at least
    for attempt in ("null", "short", "exact"):
        args = elemt_args(arena, shape, data=True)
        rc, ws, ex = phase_one(BE[0], *args)
        assert rc == OK and ws == want, last_msg()
        if workspace_attempt(arena, BE[1], ex, ws, attempt):
            x, w, b, m, inv = (a.read() for a in args[:5])
            cs = (1, -1, 1)
            ref = (x - m.reshape(cs)) * inv.reshape(cs) * w.reshape(cs) + b.reshape(cs)
            np.testing.assert_allclose(args[6].read(), ref, rtol=1e-3, atol=1e-3)


# ---- aclnnBatchNormReduceBackward --------------------------------------------------------------

# SyncBatchNormBackwardReduce/Elemt's kernels: none on the Atlas inference series, where the
# calls are refused (test_sync_batch_norm_backward's test_inference_series), so a size is
# defined only where both run
where_they_run = only_where(runs_here(BATCH_NORM_REDUCE_BACKWARD)
                            and runs_here(BATCH_NORM_ELEMT_BACKWARD))


def rb_copy_outs(g, res, flags, odt, C):
    """OutputParamCastAndViewCopy: sumDy, sumDyXmu (inputG), gradWeight (weightG), gradBias
    (biasG, sumDy's result again)."""
    for k, t in enumerate(res):
        if flags[0 if k < 2 else k - 1]:
            g.copy_out(t, F32, odt, C)


def rb_expected(shape, flags=(True,) * 3, dt=F32, wdt=F32, odt=F32, strided=(), slack=3):
    C, X = shape[1], math.prod(shape)
    g = Graph(slack)
    w = g.fill(C * 4) if wdt is None else None
    wdt = wdt or F32
    dts = (dt, dt, dt, dt, wdt)
    ns = (X, X, C, C, C)
    names = ("gradOut", "input", "mean", "invstd", "weight")
    h = [g.copy(n in strided, shape if i < 2 else (C,), dts[i], "transposed" if i < 2 else
                "stepped") for i, n in enumerate(names)]
    if w is not None:
        h[4] = w
    h = [g.cast(t, dts[i], F32, ns[i]) for i, t in enumerate(h)]
    prod = g.kernel(h[0], h[1], ws=WS, out=X * 4)        # Mul
    sdx = g.kernel(prod, ws=WS, out=C * 4)               # ReduceSum(gradOut * input)
    sdy = g.kernel(h[0], ws=WS, out=C * 4)               # ReduceSum(gradOut)
    k = g.kernels
    xmu = g.kernel(sdy, sdx, h[2], h[3], ws=SYNC_WS, out=C * 4)
    g.tensors.append([C * 4, k, k])                      # gradWeight
    rb_copy_outs(g, [sdy, xmu, len(g.tensors) - 1, sdy], flags, odt, C)
    return g.size()


def rb_args(arena, shape, flags=(True,) * 3, dt=F32, wdt=F32, odt=F32, strided=(), data=False,
            slack=3):
    C = shape[1]
    rng = np.random.default_rng(5)
    kind = {n: "transposed" if n in strided else "contig" for n in ("gradOut", "input")}
    vkind = {n: "stepped" if n in strided else "contig" for n in ("mean", "invstd", "weight")}
    dy = DevView(arena, (rng.standard_normal(shape) if data else np.ones(shape)).astype(dt),
                 kind=kind["gradOut"])
    x = DevView(arena, (rng.standard_normal(shape) if data else np.ones(shape)).astype(dt),
                kind=kind["input"])
    mean = DevView(arena, np.linspace(-1, 1, C).astype(dt), kind=vkind["mean"])
    inv = DevView(arena, np.linspace(0.5, 2, C).astype(dt), kind=vkind["invstd"])
    w = None if wdt is None else DevView(arena, np.ones(C, wdt), kind=vkind["weight"])
    outs = [DevView(arena, shape=(C,), dtype=odt, slack=slack) for _ in range(4)]
    return [dy, x, mean, inv, w, *flags, *outs]


def rb_size(arena, shape, **kw):
    return destroyed(*phase_one(RB[0], *rb_args(arena, shape, **kw)))


RB_SHAPES = [(6, 3), (4, 3, 5), (2, 6, 3, 4), (2, 5, 2, 1, 3, 2)]
FLAGS = [(True,) * 3, (False,) * 3, (True, False, False), (False, True, True)]


@where_they_run
@pytest.mark.parametrize("shape", RB_SHAPES, ids=[str(s) for s in RB_SHAPES])
@pytest.mark.parametrize("flags", FLAGS, ids=["".join("iwb"[i] if f else "-"
                                                     for i, f in enumerate(fl)) for fl in FLAGS])
def test_reduce_backward_size(arena, shape, flags):
    assert rb_size(arena, shape, flags=flags) == rb_expected(shape, flags)


@where_they_run
@pytest.mark.parametrize("dts", dtype_cases(
    [(F16, F16, F16), (F16, F32, F32), (F32, None, F16), (BF16, BF16, F32), (F16, None, BF16)],
    ["f16", "f16-f32-out", "no-weight-f16-out", "bf16", "f16-bf16"]))
@pytest.mark.parametrize("flags", FLAGS[:1] + FLAGS[2:], ids=["iwb", "i--", "-wb"])
def test_reduce_backward_size_dtypes(arena, dts, flags):
    """Every input cast to FLOAT (weight's cast read by nobody), each flagged result cast back
    to its output's dtype; gradBias takes sumDy's result a second time."""
    dt, wdt, odt = dts
    shape = (4, 3, 5)
    kw = dict(flags=flags, dt=dt, wdt=wdt, odt=odt)
    assert rb_size(arena, shape, **kw) == rb_expected(shape, **kw)


@where_they_run
@pytest.mark.parametrize("strided", [("gradOut",), ("input", "mean"), ("invstd", "weight")],
                         ids=["gradOut", "input-mean", "invstd-weight"])
def test_reduce_backward_size_strided(arena, strided):
    shape = (4, 3, 5)
    assert rb_size(arena, shape, strided=strided) == rb_expected(shape, strided=strided)


@pytest.mark.parametrize("odt", [F32, F16], ids=["f32-out", "f16-out"])
def test_reduce_backward_empty_input(arena, odt):
    """Ascend 950 fills the flagged outputs with FillScalar's FLOAT zeros (cast per output);
    elsewhere nothing runs."""
    g = Graph()
    if A950:
        zeros = g.fill(3 * 4)
        rb_copy_outs(g, [zeros] * 4, (True,) * 3, odt, 3)
    assert rb_size(arena, (0, 3, 5), odt=odt) == g.size()


@where_they_run
def test_reduce_backward_workspace_short_refused_and_exact_runs(arena):
    shape = (4, 3, 5)
    want = rb_expected(shape, odt=F16)
    assert want > 0
    for attempt in ("null", "short", "exact"):
        args = rb_args(arena, shape, odt=F16, data=True)
        rc, ws, ex = phase_one(RB[0], *args)
        assert rc == OK and ws == want, last_msg()
        if workspace_attempt(arena, RB[1], ex, ws, attempt):
            dy = args[0].read().astype(np.float64)
            np.testing.assert_allclose(args[8].read(), dy.sum((0, 2)), rtol=1e-2, atol=1e-2)


# gradBias after sumDy (FLOAT outputs, no Cast): once sumDy's output has taken sumDy's result
# over, that result is a caller's tensor, and gradBias's ViewCopy copies it by l0op::TensorMove.
TM_C = TENSOR_MOVE_TASK_LIMIT // 4 + 1  # FLOAT channels just past the part's copy-task limit


@where_they_run
@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
@pytest.mark.parametrize("C", [3, TM_C], ids=["task", "kernel"])
@pytest.mark.parametrize("slack", [0, 3], ids=["exact-out", "slack-out"])
def test_reduce_backward_size_bias_moved(arena, slack, C, attempt):
    """sumDy's output takes the result over (on Ascend910A only a storage ending where its
    view does; with slack there copy tasks read the result from the workspace, no move), so
    gradBias gets a TensorMove: a copy task up to the part's limit (400000 bytes, Ascend910A
    800000), else the kernel, 32 bytes on Ascend 950. Last in the graph, it finds a bucket
    free. The size runs: gradBias holds sumDy's sums."""
    shape, flags = (2, C), (True, False, True)
    want = rb_expected(shape, flags, slack=slack)
    args = rb_args(arena, shape, flags, data=True, slack=slack)
    rc, ws, ex = phase_one(RB[0], *args)
    assert rc == OK and ws == want > 0, last_msg()
    if workspace_attempt(arena, RB[1], ex, ws, attempt):
        dy = args[0].read().astype(np.float64)
        np.testing.assert_allclose(args[11].read(), dy.sum(0), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(args[11].read(), args[8].read())


def test_reduce_backward_size_tensor_move_rule():
    """The restated IsCopyNpuToNpu limit and Ascend 950's kernel workspace (the cases' own
    check: TM_C's gradBias runs the kernel, 3 channels a copy task)."""
    assert tensor_move_ws(5, 3 * 4) == []
    assert tensor_move_ws(5, TM_C * 4) == ([(32, 5, 5)] if A950 else [])
    assert TENSOR_MOVE_TASK_LIMIT == {"Ascend910A": 800000, "Ascend310P3": 31}.get(SOC, 400000)


# ---- aclnnBatchNormElemtBackward ---------------------------------------------------------------

def eb_expected(shape, dt=F32, wdt=F32, cdt=F32, n=2, gdt=None, strided=()):
    """dt: gradOut, input, mean, invstd, sumDy, sumDyXmu; wdt None: absent; counter n of cdt;
    gradInput of gdt (dt when None)."""
    C, X = shape[1], math.prod(shape)
    g = Graph()
    w = g.fill(C * 4) if wdt is None else None
    wdt = wdt or F32
    names = ("gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter")
    dts = (dt,) * 4 + (wdt, dt, dt, cdt)
    ns = (X, X, C, C, C, C, C, n)
    h = [g.copy(nm in strided, shape if i < 2 else (ns[i],), dts[i], "transposed" if i < 2
                else "stepped") for i, nm in enumerate(names)]
    if w is not None:
        h[4] = w
    p = F16 if all(d == F16 for d in dts[:7]) else F32
    h[:7] = [g.cast(t, dts[i], p, ns[i]) for i, t in enumerate(h[:7])]
    total = g.kernel(g.cast(h[7], cdt, F32, n), ws=WS, out=4)    # ReduceSum of counter
    f = [g.cast(h[i], p, F32, C) for i in (5, 6)]
    mean_dy = [g.kernel(t, total, ws=WS, out=C * 4) for t in f]  # RealDiv
    brc = [g.kernel(t, ws=WS, out=X * p.itemsize) for t in (h[2], h[3], h[4])]
    brc += [g.kernel(t, ws=WS, out=X * 4) for t in mean_dy]      # BroadcastTo
    brc[3:] = [g.cast(t, F32, p, X) for t in brc[3:]]
    gi = g.kernel(h[0], h[1], *brc, ws=SYNC_WS, out=X * p.itemsize)
    g.copy_out(gi, p, gdt or dt, X)
    return g.size()


def eb_args(arena, shape, dt=F32, wdt=F32, cdt=F32, n=2, gdt=None, strided=(), data=False):
    C = shape[1]
    rng = np.random.default_rng(7)

    def big(name):
        values = rng.standard_normal(shape) if data else np.ones(shape)
        return DevView(arena, values.astype(dt),
                       kind="transposed" if name in strided else "contig")

    def vec(name, values, vdt):
        return DevView(arena, np.asarray(values).astype(vdt),
                       kind="stepped" if name in strided else "contig",
                       acl_dtype=lib.ACL_INT32 if vdt == I32 else None)
    w = None if wdt is None else vec("weight", np.linspace(0.5, 1.5, C), wdt)
    return [big("gradOut"), big("input"), vec("mean", np.linspace(-1, 1, C), dt),
            vec("invstd", np.linspace(0.5, 2, C), dt), w,
            vec("sumDy", np.linspace(-3, 3, C), dt), vec("sumDyXmu", np.linspace(1, 2, C), dt),
            vec("counter", np.full(n, 10), cdt), DevView(arena, shape=shape, dtype=gdt or dt)]


def eb_size(arena, shape, **kw):
    return destroyed(*phase_one(EB[0], *eb_args(arena, shape, **kw)))


@where_they_run
@pytest.mark.parametrize("shape", RB_SHAPES, ids=[str(s) for s in RB_SHAPES])
@pytest.mark.parametrize("weight", [True, False], ids=["w", "no-w"])
def test_elemt_backward_size(arena, shape, weight):
    wdt = F32 if weight else None
    assert eb_size(arena, shape, wdt=wdt) == eb_expected(shape, wdt=wdt)


@where_they_run
@pytest.mark.parametrize("dts", dtype_cases(
    [(F16, F16, F16, None), (F16, F16, I32, F32), (F16, None, F32, None),
     (F32, F16, I32, F16), (BF16, BF16, F32, None), (BF16, F32, I32, F32)],
    ["f16", "f16-i32-f32-out", "f16-no-w", "f32-f16-w", "bf16", "bf16-f32-w"]))
def test_elemt_backward_size_dtypes(arena, dts):
    """FLOAT16 compute only when every floating input is FLOAT16 (an absent weight is a FLOAT
    fill): then the FLOAT means' broadcasts are cast down to it."""
    dt, wdt, cdt, gdt = dts
    for shape, n in (((4, 3, 5), 2), ((6, 3), 5)):
        kw = dict(dt=dt, wdt=wdt, cdt=cdt, n=n, gdt=gdt)
        assert eb_size(arena, shape, **kw) == eb_expected(shape, **kw), shape


EB_ALL = ("gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter")


@where_they_run
@pytest.mark.parametrize("strided", [("gradOut", "input"), ("mean", "invstd", "weight"),
                                     ("sumDy", "sumDyXmu", "counter"), EB_ALL],
                         ids=["tensors", "stats", "sums", "all"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
def test_elemt_backward_size_strided(arena, strided, dt):
    """All strided with a FLOAT16 compute dtype: the largest graph (40 tensors on Ascend 950)."""
    shape = (4, 3, 5)
    assert eb_size(arena, shape, dt=dt, wdt=dt, strided=strided) == \
        eb_expected(shape, dt=dt, wdt=dt, strided=strided)


def test_elemt_backward_empty_input(arena):
    assert eb_size(arena, (0, 3, 5)) == 0


@where_they_run
def test_elemt_backward_workspace_short_refused_and_exact_runs(arena):
    shape = (4, 3, 5)
    want = eb_expected(shape)
    assert want > 0
    for attempt in ("null", "short", "exact"):
        args = eb_args(arena, shape, data=True)
        rc, ws, ex = phase_one(EB[0], *args)
        assert rc == OK and ws == want, last_msg()
        if workspace_attempt(arena, EB[1], ex, ws, attempt):
            dy, x, m, inv, w, sdy, sdx = (a.read().astype(np.float64) for a in args[:7])
            cnt, cs = args[7].read().sum(), (1, -1, 1)
            ref = ((dy - (sdy / cnt).reshape(cs)) - (x - m.reshape(cs)) *
                   ((sdx / cnt) * inv * inv).reshape(cs)) * (inv * w).reshape(cs)
            np.testing.assert_allclose(args[8].read(), ref, rtol=1e-3, atol=1e-3)


test_on_other_parts = run_on_parts(other_parts(), "size or workspace or empty")
