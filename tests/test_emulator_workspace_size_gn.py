"""Phase one's workspace size as a device reports it, for aclnnGroupNorm, aclnnGroupNormSilu,
aclnnGroupNormSiluV2, aclnnGroupNormBackward and aclnnInstanceNorm (emulator/src/ops/
exec_workspace.h; docs/emulator.md "Phase one's workspace size").

The expected sizes are stated here from the vendor's sources, independently of the emulator's
code: opbase's MaxAllocator (tests/_workspace_model.py) over the kernel graph each op_api builds
(hicann/ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp, norm/group_norm_silu/
op_host/op_api/aclnn_group_norm_silu.cpp, norm/group_norm_grad/op_host/op_api/
aclnn_group_norm_backward.cpp, norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.cpp)
and each AscendC tiling's workspace: GroupNormSilu's hard-coded 16 MiB (2 MiB on the Atlas
inference parts), GroupNormGrad's platform system workspace plus its float stage-two buffers.
TBE kernels (GroupNorm on the Atlas training parts, InstanceNormV3) take their workspace from
compile info that is not public: none. Then phase two's checks of that size: NULL 161001, one
byte short 161002, nothing leaked, and a run with exactly that size.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops.instance_norm import INSTANCE_NORM
from acl_py.raw import ffi, lib

from _emu_aclnn import phase_one, workspace_attempt
from _part_runs import cases_where, only_where, other_parts, run_on_parts, runs_here
from _workspace_model import (ARCH, CORES, LIB_API_WORKSPACE, MiB16, copy_kind_in,
                              copy_kind_out_ws, kind_takes_over, max_allocator)
from test_emulator_op import (BF16, F16, F32, OK, DevView, arena,  # noqa: F401
                              last_msg, no_leaks, stream)

GN = (lib.aclnnGroupNormGetWorkspaceSize, lib.aclnnGroupNorm)
SILU = (lib.aclnnGroupNormSiluGetWorkspaceSize, lib.aclnnGroupNormSilu)
SILU_V2 = (lib.aclnnGroupNormSiluV2GetWorkspaceSize, lib.aclnnGroupNormSiluV2)
GNB = (lib.aclnnGroupNormBackwardGetWorkspaceSize, lib.aclnnGroupNormBackward)
IN = (lib.aclnnInstanceNormGetWorkspaceSize, lib.aclnnInstanceNorm)
UB_BYTES = ctypes.CDLL(str(lib.backend.libraries["ascendcl"])).aclemu_soc_ub_bytes
UB_BYTES.restype = ctypes.c_int64
BF16_PART = ARCH in (2201, 3510)
SIZE = {F32: 4, F16: 2, BF16: 2}


class Graph:
    """The op_api's kernel graph in launch order: kernels, their tiling workspaces, the
    outputs the executor allocates with their last reader; a result ViewCopy hands to a
    contiguous caller's tensor leaves the workspace or stays until its copy (``to_user``)."""

    def __init__(self):
        self.kernels, self.tensors = 0, []

    def kernel(self):
        self.kernels += 1
        return self.kernels - 1

    def workspace(self, k, nbytes):
        self.tensors.append([nbytes, k, k])

    def output(self, k, nbytes):
        self.tensors.append([nbytes, k, k])
        return self.tensors[-1]

    @staticmethod
    def read(t, k):
        if t is not None:
            t[2] = max(t[2], k)

    def copy(self, shape, dt, kind="stepped"):
        """l0op::Contiguous of a caller's DevView of ``kind``: its chain of copy kernels
        (_workspace_model.copy_kind_in); the result."""
        entries, self.kernels = copy_kind_in(self.kernels, shape, kind, dt, reader=False)
        self.tensors += [list(t) for t in entries]
        return self.tensors[-1] if entries else None

    def to_user(self, t, n):
        """l0op::ViewCopy of t into the caller's contiguous DevView of n elements: taken over
        where _workspace_model.kind_takes_over says so, else a copy task reads it."""
        if kind_takes_over((n,)):
            self.tensors.remove(t)
        else:
            self.read(t, self.kernel())

    def size(self):
        return max_allocator([tuple(t) for t in self.tensors])


def destroyed(rc, ws, ex):
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


# ---- aclnnGroupNorm, aclnnGroupNormSilu(V2) ---------------------------------------------------

def silu_workspace():
    """group_norm_silu_tiling.cpp RESERVED_WORKSPACE_SIZE_910B / _310P, arch35's
    RESERVED_WORKSPACE_SIZE."""
    return 2 * 1024 * 1024 if ARCH == 2002 else MiB16


def gn_expected(shape, group, dt, gamma, beta, *, silu_op=False, strided_x=False,
                mean_kind="contig"):
    """Outputs contiguous but meanOut (a DevView of ``mean_kind``): every result of the kernel
    ViewCopy'd into the caller's tensor (copied_out)."""
    n, c = shape[0], shape[1]
    count, ng, g = int(np.prod(shape)), n * group, Graph()
    x = g.output(g.kernel(), count * SIZE[dt]) if strided_x else None
    fill = not (silu_op and ARCH == 3510)   # GetGamma/GetBeta: OnesLike/ZerosLike
    affine = [g.output(g.kernel(), c * SIZE[dt]) if not given and fill else None
              for given in (gamma, beta)]
    if ARCH != 1001:                        # GroupNormSilu
        k = g.kernel()
        for t in [x] + affine:
            g.read(t, k)
        g.workspace(k, silu_workspace())
        for nelem, kind in ((count, "contig"), (ng, mean_kind), (ng, "contig")):  # y, mean, rstd
            copied_out(g, g.output(k, nelem * SIZE[dt]), kind != "contig",
                       shape if nelem == count else (n, group), dt, kind)
        return g.size()
    kd = F32                                # the TBE GroupNorm, FLOAT16 cast to FLOAT around it
    ins = [x] + affine
    if dt == F16:
        for i, nelem in enumerate((count, c, c)):
            kc = g.kernel()
            g.read(ins[i], kc)
            ins[i] = g.output(kc, nelem * 4)
    k = g.kernel()
    for t in ins:
        g.read(t, k)
    res = [g.output(k, nelem * SIZE[kd]) for nelem in (count, ng, ng)]
    if dt == F16:
        for i, nelem in enumerate((count, ng, ng)):
            kc = g.kernel()
            g.read(res[i], kc)
            res[i] = g.output(kc, nelem * 2)
    g.to_user(res[0], count)                # ViewCopy(y, out)
    add = g.kernel()
    g.read(res[2], add)
    total = g.output(add, ng * SIZE[dt])
    rsqrt = g.kernel()
    g.read(total, rsqrt)
    copied_out(g, res[1], mean_kind != "contig", (n, group), dt, mean_kind)  # meanOut
    g.to_user(g.output(rsqrt, ng * SIZE[dt]), ng)
    return g.size()


def gn_views(arena, shape, group, dt, gamma=True, beta=True, x_kind="contig", values=None):
    n, c = shape[0], shape[1]
    x = DevView(arena, np.ones(shape, dt) if values is None else values, kind=x_kind)
    gv = DevView(arena, np.full(c, 1.25, dt)) if gamma else None
    bv = DevView(arena, np.full(c, -0.5, dt)) if beta else None
    return (x, gv, bv, DevView(arena, shape=shape, dtype=dt),
            DevView(arena, shape=(n, group), dtype=dt), DevView(arena, shape=(n, group), dtype=dt))


def gn_phase_one(op, views, shape, group, activate=True):
    x, g, b, y, m, r = views
    n, c, hw = shape[0], shape[1], int(np.prod(shape[2:]))
    if op is GN:
        return phase_one(op[0], x, g, b, n, c, hw, group, 1e-5, y, m, r)
    if op is SILU:
        return phase_one(op[0], x, g, b, group, 1e-5, y, m, r)
    return phase_one(op[0], x, g, b, group, 1e-5, activate, y, m, r)


# GroupNormSilu has no kernel on the Atlas training series, nor has a part without BF16 a BF16
# call: such a case could never run there, so it is no test; the other parts run it
SILU_RUNS = ARCH != 1001


GN_SHAPES = [((2, 8, 3, 5), 4), ((3, 6, 7), 3), ((1, 32, 16), 32)]
AFFINE = [(True, True), (False, True), (False, False)]
GN_AND_SILU = [pytest.param(GN, id="group_norm"),
               *cases_where(SILU_RUNS, pytest.param(SILU, id="silu"))]


@pytest.mark.parametrize("shape,group", GN_SHAPES, ids=[str(s) for s, _ in GN_SHAPES])
@pytest.mark.parametrize("dt", [pytest.param(F32, id="f32"), pytest.param(F16, id="f16"),
                                *cases_where(BF16_PART, pytest.param(BF16, id="bf16"))])
@pytest.mark.parametrize("affine", AFFINE, ids=["gb", "-b", "--"])
def test_group_norm_size(arena, shape, group, dt, affine):
    ws = destroyed(*gn_phase_one(GN, gn_views(arena, shape, group, dt, *affine), shape, group))
    assert ws == gn_expected(shape, group, dt, *affine) > 0


@only_where(SILU_RUNS)
@pytest.mark.parametrize("op", [SILU, SILU_V2], ids=["silu", "silu_v2"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("affine", AFFINE, ids=["gb", "-b", "--"])
def test_group_norm_silu_size(arena, op, dt, affine):
    shape, group = (2, 8, 3, 5), 4
    ws = destroyed(*gn_phase_one(op, gn_views(arena, shape, group, dt, *affine), shape, group,
                                 activate=False))
    assert ws == gn_expected(shape, group, dt, *affine, silu_op=True) > 0


@pytest.mark.parametrize("op", GN_AND_SILU)
def test_group_norm_size_strided_input(arena, op):
    """A strided self is copied first (l0op::Contiguous): its copy lives until the kernel."""
    shape, group = (2, 8, 3, 5), 4
    ws = destroyed(*gn_phase_one(op, gn_views(arena, shape, group, F32, x_kind="transposed"),
                                 shape, group))
    assert ws == gn_expected(shape, group, F32, True, True, silu_op=op is SILU,
                             strided_x=True)


def test_group_norm_size_strided_mean_adds_its_copy(arena):
    """A strided meanOut: ViewCopy copies the kernel's mean into it (a kernel reading it),
    so the mean stays in the workspace: one more N x group tensor than with a contiguous one
    that takes it over. Where a contiguous one has it copied too (no move align: Ascend910A,
    Ascend310P3, storage longer than the view), both keep it until a reader, and the copy
    kernel (TBE there) adds no workspace: the same size."""
    shape, group = (2, 8, 3, 5), 4
    views = list(gn_views(arena, shape, group, F32))
    contiguous = destroyed(*gn_phase_one(GN, views, shape, group))
    views[4] = DevView(arena, shape=(2, group), dtype=F32, kind="transposed")
    strided = destroyed(*gn_phase_one(GN, views, shape, group))
    assert contiguous == gn_expected(shape, group, F32, True, True)
    assert strided == gn_expected(shape, group, F32, True, True, mean_kind="transposed")
    assert (strided > contiguous) == kind_takes_over((2, group))


@pytest.mark.parametrize("op", [GN, SILU, SILU_V2], ids=["group_norm", "silu", "silu_v2"])
def test_group_norm_empty_takes_none(arena, op):
    """An empty self returns before any L0 op (the fills of meanOut/rstdOut launch no
    workspace), except GroupNormSilu's on Ascend 950 with N > 0: its empty kernel runs.
    (GroupNormSilu off Ascend 950 refuses N 0.)"""
    for shape in ((0, 4, 3), (2, 4, 0))[op is not GN and ARCH != 3510:]:
        ws = destroyed(*gn_phase_one(op, gn_views(arena, shape, 2, F32), shape, 2))
        if op is not GN and ARCH == 3510 and shape[0] > 0:
            assert ws == max_allocator([(MiB16, 0, 0)])
        else:
            assert ws == 0


@pytest.mark.parametrize("op", GN_AND_SILU)
@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_group_norm_workspace_checked_and_exact_runs(arena, op, attempt):
    """With the device's size: NULL refused (161001), one byte short refused (161002), the
    executor released and nothing leaked either way; exactly that size runs right."""
    shape, group = (2, 8, 3, 5), 4
    x = np.linspace(-2, 3, int(np.prod(shape)), dtype=F32).reshape(shape)
    views = gn_views(arena, shape, group, F32, gamma=False, beta=False, values=x)
    rc, ws, ex = gn_phase_one(op, views, shape, group)
    assert rc == OK and ws == gn_expected(shape, group, F32, False, False, silu_op=op is SILU)
    if workspace_attempt(arena, op[1], ex, ws, attempt):
        y, mean, rstd = (reference.group_norm_silu(x, None, None, group) if op is SILU
                         else reference.group_norm(x, None, None, 2, 8, 15, group))
        np.testing.assert_allclose(views[3].read(), y, rtol=1e-4, atol=1e-4)
        if ARCH != 2002:   # the inference parts' kernel for this shape writes no mean/rstd
            np.testing.assert_allclose(views[4].read(), mean.reshape(2, group), rtol=1e-5,
                                       atol=1e-5)
            np.testing.assert_allclose(views[5].read(), rstd.reshape(2, group), rtol=1e-4)


# ---- aclnnGroupNormBackward --------------------------------------------------------------------

def grad_mode3(n, c, hw, group, t_bytes, u16):
    """group_norm_grad_tiling_arch35.cpp BlockTiling and UbTiling: MODE_3 or not."""
    d, ng, nc, block = c // group, n * group, n * c, 32
    ceil_to = lambda a, b: -(-a // b) * b  # noqa: E731
    small = ng <= 16
    reserve = (ceil_to(d, 8) * 4 * (6 if small else 4)
               + (ceil_to(d, 16) * 2 * (1 if small else 2) if u16 else 0) + 2 * block)
    usable = (UB_BYTES() - reserve) // 2
    mode0 = usable // (ceil_to(d * hw, block // t_bytes) * t_bytes * 3 + 2 * block)
    mode1 = usable // (ceil_to(hw, block // t_bytes) * t_bytes * 3)
    stage0 = -(-nc // CORES) if small else 0
    return (mode0 == 0 and mode1 > 0 and small and stage0 >= 2 and n * (d // mode1) >= 32
            and nc <= 240000)


def grad_kernel_workspace(n, c, hw, group, dt, gamma_dt):
    """GroupNormGrad's tiling workspace: GetLibApiWorkSpaceSize plus two float copies of its
    stage-two buffer (group_norm_grad_tiling.cpp CalStage2TilingInfo; arch35 GetWorkspaceSize)."""
    half_n = -(-n // 2)
    if ARCH == 3510:
        rows = n if grad_mode3(n, c, hw, group, SIZE[dt], gamma_dt != F32) else half_n
        return LIB_API_WORKSPACE + 2 * rows * c * 4
    usr = 2 * half_n * c * 4 if n > 2 else 0 if dt == F32 else 2 * c * 4
    return LIB_API_WORKSPACE + usr


def kernel_out(g, ins, nbytes):
    """A kernel reading the intermediates ``ins`` (None: a caller's tensor) whose one output
    the executor allocates."""
    k = g.kernel()
    for t in ins:
        g.read(t, k)
    return g.output(k, nbytes)


def copied_out(g, t, strided, shape=None, dt=None, kind="stepped"):
    """l0op::ViewCopy of result ``t`` into the caller's tensor: a strided one (a DevView of
    ``shape``, ``dt`` laid out as ``kind``) is written by a copy kernel reading it, with its
    tiling workspace; a contiguous one takes the result over or has it copied
    (Graph.to_user)."""
    if strided:
        k = g.kernel()
        g.read(t, k)
        if shape is not None:
            g.tensors += [list(e) for e in copy_kind_out_ws(k, shape, kind, dt)]
    else:
        g.to_user(t, math.prod(shape))


def gnb_expected(shape, group, dt, mask, gamma=True, strided=()):
    """aclnn_group_norm_backward.cpp's graph. ``strided``: the names (dy, x, mean, rstd,
    gamma, dx, dgamma, dbeta) of the caller's tensors that are not contiguous."""
    n, c = shape[0], shape[1]
    hw, g, es = int(np.prod(shape[2:])), Graph(), SIZE[dt]
    x_n, ng, nc = n * c * hw, n * group, n * c
    # l0op::Contiguous of gradOut, input, mean, rstd, gamma (a copy each, if strided); an
    # absent gamma: FillValue's ones (C values)
    shapes = {"dy": shape, "x": shape, "mean": (n, group), "rstd": (n, group), "gamma": (c,),
              "dx": shape, "dgamma": (c,), "dbeta": (c,)}
    ins = {name: g.copy(shapes[name], dt) if name in strided else None
           for name in ("dy", "x", "mean", "rstd")}
    ins["gamma"] = (g.copy((c,), dt) if "gamma" in strided else
                    kernel_out(g, [], c * es) if not gamma else None)
    if ARCH in (2201, 3510):   # the L0 GroupNormGrad
        k = g.kernel()
        for t in ins.values():
            g.read(t, k)
        g.workspace(k, grad_kernel_workspace(n, c, hw, group, dt, dt))
        for i, nelem in enumerate((x_n, c, c)):
            res = g.output(k, nelem * es)
            if mask[i]:
                name = ("dx", "dgamma", "dbeta")[i]
                copied_out(g, res, name in strided, shapes[name], dt)
        return g.size()
    # the Atlas training and inference parts: a composite of TBE L0 ops (no public
    # workspaces), each output the executor's; reshapes and unsqueezes are views
    dy, x, mean, rstd = ins["dy"], ins["x"], ins["mean"], ins["rstd"]
    if mask[0]:                # GradInputProcess: the rows (n, group) as BatchNorm channels
        dyg = kernel_out(g, [dy, ins["gamma"]], x_n * es)       # Mul(gradOut, gamma)
        sq = kernel_out(g, [rstd], ng * es)                     # Mul(rstd, rstd)
        ones = kernel_out(g, [sq], ng * es)                     # OnesLike
        var = kernel_out(g, [kernel_out(g, [ones, sq], ng * es)], ng * es)  # Div; Sub eps
        weight = kernel_out(g, [], ng * es)                     # FillValue(1)
        kernel_out(g, [], ng * 4)                               # FillScalar running mean,
        kernel_out(g, [], ng * 4)                               # variance: never read
        # ResizeFrom1D: Cast to FLOAT (none from FLOAT)
        weight, smean, svar = (t if dt == F32 else kernel_out(g, [t], ng * 4)
                               for t in (weight, mean, var))
        ku = g.kernel()                                         # BNTrainingUpdateGrad
        for t in (dyg, x, smean, svar):
            g.read(t, ku)
        diff = [g.output(ku, ng * 4) for _ in range(2)]
        dx = kernel_out(g, [dyg, x, *diff, weight, smean, svar], x_n * es)  # ReduceGrad
        copied_out(g, dx, "dx" in strided, shape, dt)
    sums = []
    if mask[1]:                # GetDgamma: Expand mean and rstd to N x C, x_hat, dy * x_hat
        mb, rb = kernel_out(g, [mean], nc * es), kernel_out(g, [rstd], nc * es)
        xhat = kernel_out(g, [kernel_out(g, [x, mb], x_n * es), rb], x_n * es)
        sums.append((kernel_out(g, [dy, xhat], x_n * es), "dgamma"))
    if mask[2]:                # GetDbeta
        sums.append((dy, "dbeta"))
    for src, name in sums:     # ReduceSum over HxW, then over N
        total = kernel_out(g, [kernel_out(g, [src], nc * es)], c * es)
        copied_out(g, total, name in strided, (c,), dt)
    return g.size()


GNB_NAMES = ("dy", "x", "mean", "rstd", "gamma", "dx", "dgamma", "dbeta")


def gnb_views(arena, shape, group, dt, mask, gamma=True, values=None, strided=()):
    """``strided``: the names (GNB_NAMES) of the tensors laid out with doubled strides."""
    n, c = shape[0], shape[1]
    rng = np.random.default_rng(5)
    x = values if values is not None else rng.standard_normal(shape).astype(dt)
    dy = (rng.standard_normal(shape) * 0.5).astype(dt)
    _, mean, rstd = reference.group_norm(x, None, None, n, c, int(np.prod(shape[2:])), group)
    g = (1 + 0.25 * rng.standard_normal(c)).astype(dt)
    kind = {name: "stepped" if name in strided else "contig" for name in GNB_NAMES}
    ins = [DevView(arena, v, kind=kind[name]) for v, name in zip(
        (dy, x, mean.astype(dt).reshape(n, group), rstd.astype(dt).reshape(n, group), g),
        GNB_NAMES)]
    if not gamma:
        ins[4] = None
    outs = [DevView(arena, shape=s, dtype=dt, kind=kind[name]) if m else None
            for s, m, name in zip((shape, (c,), (c,)), mask, GNB_NAMES[5:])]
    return ins, outs, (dy, x, mean, rstd, g if gamma else None)


def gnb_phase_one(arena, ins, outs, shape, group, mask):
    n, c, hw = shape[0], shape[1], int(np.prod(shape[2:]))
    return phase_one(GNB[0], *ins, n, c, hw, group, arena.bool_array(mask), *outs)


GNB_SHAPES = [((1, 8, 15), 4), ((2, 6, 5), 3), ((3, 8, 4), 2), ((5, 16, 9), 4)]
MASKS = [(True, True, True), (True, False, False), (False, True, True), (False, False, True)]


@pytest.mark.parametrize("shape,group", GNB_SHAPES, ids=[str(s) for s, _ in GNB_SHAPES])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("mask", MASKS, ids=["".join("TF"[not m] for m in k) for k in MASKS])
def test_group_norm_backward_size(arena, shape, group, dt, mask):
    ins, outs, _ = gnb_views(arena, shape, group, dt, mask)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, group, mask))
    assert ws == gnb_expected(shape, group, dt, mask)


def test_group_norm_backward_size_without_gamma(arena):
    shape, mask = (3, 8, 4), (True, True, True)
    ins, outs, _ = gnb_views(arena, shape, 2, F32, mask, gamma=False)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, 2, mask))
    assert ws == gnb_expected(shape, 2, F32, mask, gamma=False)


@pytest.mark.parametrize("gamma", [True, False], ids=["gamma", "no_gamma"])
def test_group_norm_backward_size_with_no_output_asked(arena, gamma):
    """An all-false outputMask: GroupNormGrad still runs; the composite launches no L0 op of
    its own, so its workspace is the absent gamma's fill of ones alone (C values), or none."""
    shape, mask = (2, 6, 5), (False, False, False)
    ins, outs, _ = gnb_views(arena, shape, 3, F16, mask, gamma=gamma)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, 3, mask))
    assert ws == gnb_expected(shape, 3, F16, mask, gamma=gamma)
    if ARCH not in (2201, 3510):
        assert ws == (0 if gamma else max_allocator([(6 * 2, 0, 0)]))


STRIDED = [("dy", "mean"), ("x", "rstd", "gamma"), ("dx", "dgamma"), ("dbeta",),
           GNB_NAMES]


@pytest.mark.parametrize("strided", STRIDED, ids=["-".join(s) for s in STRIDED])
@pytest.mark.parametrize("mask", MASKS, ids=["".join("TF"[not m] for m in k) for k in MASKS])
def test_group_norm_backward_size_strided(arena, strided, mask):
    """A strided input is copied first (l0op::Contiguous), alive until its last reader; a
    strided output takes the result by a copy kernel, so the result stays in the workspace."""
    shape, group = (2, 6, 5), 3
    ins, outs, _ = gnb_views(arena, shape, group, F32, mask, strided=strided)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, group, mask))
    assert ws == gnb_expected(shape, group, F32, mask, strided=strided)


@only_where(ARCH != 3510)   # Ascend 950: an empty input runs the empty-tensor kernel
@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 4, 0)], ids=["n0", "hw0"])
def test_group_norm_backward_empty_takes_none(arena, shape):
    """Off Ascend 950 an empty gradOut or input returns before any L0 op: 0."""
    mask = (True, True, True)
    ins, outs, _ = gnb_views(arena, shape, 2, F32, mask)
    assert destroyed(*gnb_phase_one(arena, ins, outs, shape, 2, mask)) == 0


@only_where(ARCH in (1001, 2002))   # the L0 GroupNormGrad kernel's parts
def test_group_norm_backward_composite_size_by_hand(arena):
    """One case worked by hand: N 2, C 6, HxW 5, group 3, FLOAT16, every output, contiguous.
    Every tensor takes 512 bytes (the largest, 60 FLOAT16 values, is 120 + 32 bytes), and
    MaxAllocator opens six buckets: at BNTrainingUpdateGrad, Mul(dy, gamma), the three FLOAT
    casts (weight, mean, variance) and its two outputs are alive together; ReduceGrad reads
    those six. Where gradInput takes ReduceGrad's dx over, nothing later needs more; where
    a copy task reads dx (these parts lack move align, and gradInput's storage is longer than
    its view), dx is born beside the six: a seventh bucket."""
    shape, group, mask = (2, 6, 5), 3, (True, True, True)
    ins, outs, _ = gnb_views(arena, shape, group, F16, mask)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, group, mask))
    assert ws == gnb_expected(shape, group, F16, mask) == \
        (6 if kind_takes_over(shape) else 7) * 512


@only_where(ARCH == 3510)   # Ascend 950's MODE_3
@pytest.mark.parametrize("c,mode3", [(160, True), (16, False)], ids=["mode3", "mode1"])
def test_group_norm_backward_size_follows_the_950_mode(arena, c, mode3):
    """N 2, one group of HxW 1024 floats per channel: C 160 takes MODE_3 (stage-two buffer
    N x C), C 16 MODE_1 (ceil(N / 2) x C)."""
    shape, mask = (2, c, 1024), (True, True, True)
    assert grad_mode3(2, c, 1024, 1, 4, False) == mode3
    ins, outs, _ = gnb_views(arena, shape, 1, F32, mask)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, 1, mask))
    assert ws == max_allocator([(MiB16 + 2 * (2 if mode3 else 1) * c * 4, 0, 0)])


@only_where(ARCH == 3510)   # off Ascend 950 an empty input returns before any kernel
def test_group_norm_backward_empty_on_950(arena):
    """ComputeGroupNormBackwardEmptyInput: a fresh executor with the empty-tensor kernel only
    (MIN_WORKSPACE_SIZE 16 MiB) and its empty dx left in the workspace."""
    shape, mask = (0, 4, 3), (True, True, True)
    ins, outs, _ = gnb_views(arena, shape, 2, F32, mask)
    ws = destroyed(*gnb_phase_one(arena, ins, outs, shape, 2, mask))
    assert ws == max_allocator([(MiB16, 0, 0), (0, 0, 0)])


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_group_norm_backward_workspace_checked_and_exact_runs(arena, attempt):
    shape, group, mask = (3, 8, 4), 2, (True, True, True)
    ins, outs, (dy, x, mean, rstd, g) = gnb_views(arena, shape, group, F32, mask)
    rc, ws, ex = gnb_phase_one(arena, ins, outs, shape, group, mask)
    assert rc == OK and ws == gnb_expected(shape, group, F32, mask)
    if workspace_attempt(arena, GNB[1], ex, ws, attempt):
        refs = reference.group_norm_backward(dy, x, mean, rstd, g, 3, 8, 4, group)
        for out, ref in zip(outs, refs):
            np.testing.assert_allclose(out.read(), ref, rtol=1e-4, atol=1e-4)


# ---- aclnnInstanceNorm ---------------------------------------------------------------------------

# Defined only on the parts with an InstanceNorm kernel (its declaration's parts); the
# others' calls are refused (tests/test_declared_parts.py), and the part child runs these.
instance_norm_part = only_where(runs_here(INSTANCE_NORM))


def in_expected(shape, dt, nhwc, strided_x=False):
    """Contiguous outputs; a strided x copied; NHWC: Transpose x -> NCHW, the TBE kernel
    (no public workspace), Transpose y back (copied out)."""
    count, g = int(np.prod(shape)), Graph()
    x = g.output(g.kernel(), count * SIZE[dt]) if strided_x else None
    if nhwc:
        t = g.kernel()
        g.read(x, t)
        x = g.output(t, count * SIZE[dt])
    k = g.kernel()
    g.read(x, k)
    nc = shape[0] * shape[-1 if nhwc else 1]
    res = [g.output(k, nelem * SIZE[dt]) for nelem in (count, nc, nc)]  # y, mean, variance
    if nhwc:
        back = g.kernel()
        g.read(res[0], back)
        res[0] = g.output(back, count * SIZE[dt])
    for t, nelem in zip(res, (count, nc, nc)):
        g.to_user(t, nelem)
    return g.size()


def in_call(arena, shape, dt, nhwc, x_kind="contig", values=None):
    n, c = shape[0], shape[3 if nhwc else 1]
    stats = (n, 1, 1, c) if nhwc else (n, c, 1, 1)
    x = DevView(arena, np.ones(shape, dt) if values is None else values, kind=x_kind)
    views = [x, DevView(arena, np.full(c, 1.5, dt)), DevView(arena, np.full(c, 0.25, dt)),
             DevView(arena, shape=shape, dtype=dt), DevView(arena, shape=stats, dtype=dt),
             DevView(arena, shape=stats, dtype=dt)]
    fmt = ffi.new("char[]", b"NHWC" if nhwc else b"NCHW")
    return views, phase_one(IN[0], *views[:3], fmt, 1e-5, *views[3:])


@instance_norm_part
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("x_kind", ["contig", "transposed"])
def test_instance_norm_size(arena, nhwc, dt, x_kind):
    shape = (2, 16, 4, 16)   # C and H x W 16 either way
    _, result = in_call(arena, shape, dt, nhwc, x_kind)
    assert destroyed(*result) == in_expected(shape, dt, nhwc, strided_x=x_kind != "contig")


@instance_norm_part
@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_instance_norm_workspace_checked_and_exact_runs(arena, attempt):
    shape = (2, 4, 4, 16)   # NHWC: C 16, H x W 16
    x = np.linspace(-1, 2, int(np.prod(shape)), dtype=F32).reshape(shape)
    views, (rc, ws, ex) = in_call(arena, shape, F32, True, values=x)
    assert rc == OK and ws == in_expected(shape, F32, True) > 0
    if workspace_attempt(arena, IN[1], ex, ws, attempt):
        refs = reference.instance_norm(x, np.full(16, 1.5), np.full(16, 0.25), "NHWC")
        for view, ref in zip(views[3:], refs):
            np.testing.assert_allclose(view.read(), ref, rtol=1e-4, atol=1e-5)


test_on_other_parts = run_on_parts(other_parts(), "size or workspace")
