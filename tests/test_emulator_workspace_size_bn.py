"""Phase one's workspace size as a device reports it, for aclnnBatchNorm and
aclnnBatchNormBackward (emulator/src/ops/exec_workspace.h).

The expected sizes are stated here from the vendor's rules, independently of the emulator's
code: opbase's MaxAllocator over the kernel graph each op_api builds (tests/_workspace_model.py)
and the kernels' tilings: hicann/ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp
(BatchNormV3 on Atlas A2/A3 in training with C >= 64, on Ascend 950 always; the TBE
BNTrainingReduce/BNTrainingUpdate/BNInfer elsewhere: their workspaces not public, none);
BatchNormV3's tilings hard-code 16 MiB (batch_norm_v3_tiling_base.cpp, the arch35 ones);
norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp (BatchNormGradV3 on
Ascend 950, its templates' GetWorkspaceSize in batch_norm_grad_v3_tiling*.cpp; the TBE
BNTrainingUpdateGrad/BNTrainingReduceGrad/BNInferGrad elsewhere). Then phase two's checks of
that size: NULL 161001, one byte short 161002, nothing leaked, and a run with exactly that size.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _part_runs import only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one, workspace_attempt
from _workspace_model import (ARCH, CORES, MiB16, align, ceil_to, copy_view_in,
                              copy_view_out_ws, handed_over, helper_ws, is_contiguous,
                              kind_takes_over, max_allocator)
from test_emulator_op import (F16, F32, OK, DevView, arena,  # noqa: F401
                              last_msg, stream)

BN_P1, BN_P2 = lib.aclnnBatchNormGetWorkspaceSize, lib.aclnnBatchNorm
BNB_P1, BNB_P2 = lib.aclnnBatchNormBackwardGetWorkspaceSize, lib.aclnnBatchNormBackward
_ub_bytes = ctypes.CDLL(str(lib.backend.libraries["ascendcl"])).aclemu_soc_ub_bytes
_ub_bytes.restype = ctypes.c_int64
UB = _ub_bytes()  # the part's UB per core (GetCoreMemSize(UB)), as the tilings read it
NCDHW_PARTS = (2201, 2002)  # isBatchNormSupportNcdhw: the others take 6HD (TransDataSpecial)


def ncdhw(arena, view):
    """A rank-5 contiguous view as the NCDHW tensor rank 5 asks for (DevView's are ND)."""
    shape = list(view.shape)
    strides = [math.prod(shape[i + 1:]) for i in range(5)]
    acl = {np.dtype(F32): lib.ACL_FLOAT, np.dtype(F16): lib.ACL_FLOAT16}[np.dtype(view.dtype)]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), 5, acl, ffi.new("int64_t[]", strides),
                            0, lib.ACL_FORMAT_NCDHW, ffi.new("int64_t[]", [view.n]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def as_ncdhw(arena, views):
    """Rank-5 views among ``views`` replaced by their NCDHW tensors."""
    return [ncdhw(arena, v) if isinstance(v, DevView) and len(v.shape) == 5 else v
            for v in views]


class Graph:
    """The kernel graph in launch order: (bytes, first kernel, last kernel) per workspace
    tensor, as MaxAllocator sees it."""

    def __init__(self):
        self.kernels, self.tensors = 0, []

    def kernel(self):
        self.kernels += 1
        return self.kernels - 1

    def helper_kernel(self):
        """A new Cast or Fill kernel, with its tiling workspace where it has one."""
        k = self.kernel()
        self.tensors += [list(t) for t in helper_ws(k)]
        return k

    def out(self, k, nbytes):
        self.tensors.append([nbytes, k, k])
        return len(self.tensors) - 1

    def read(self, t, k):
        if t is not None:
            self.tensors[t][2] = max(self.tensors[t][2], k)

    def copy(self, v):
        """l0op::Contiguous of the caller's view v (a DevView; None: none): nothing when
        contiguous, else its chain (_workspace_model.copy_view_in); the result's handle."""
        if v is None or is_contiguous(v.shape, v.strides):
            return None
        entries, self.kernels = copy_view_in(self.kernels, v, reader=False)
        self.tensors += [list(t) for t in entries]
        return len(self.tensors) - 1 if entries else None

    def copy_out(self, t, v):
        """l0op::ViewCopy of t into the caller's strided view v: a kernel reading t, with its
        tiling workspace where it has one."""
        k = self.kernel()
        self.read(t, k)
        self.tensors += [list(e) for e in copy_view_out_ws(k, v)]

    def hand_over(self, t, gone, shape):
        """l0op::ViewCopy of result t (None: none) into the caller's contiguous DevView of
        ``shape``: taken over (into ``gone``) where _workspace_model.kind_takes_over says so,
        else a copy task reads it."""
        if t is not None and kind_takes_over(shape):
            gone.add(t)
        elif t is not None:
            self.read(t, self.kernel())

    def size(self, gone=()):
        """gone: tensors a ViewCopy re-pointed to the caller's memory."""
        return max_allocator([tuple(t) for i, t in enumerate(self.tensors) if i not in gone])


# ---- aclnnBatchNorm -------------------------------------------------------------------------

def bn_chain(shape, training):
    if ARCH == 3510:
        return "v3"
    if training and ARCH == 2201 and shape[1] >= 64 and len(shape) != 4:  # rank 4 ND: not NCHW
        return "v3"
    return "tbe"


def bn_expected(shape, training, given=(True,) * 4, xdt=F32, save_dt=F32, rdt=F32):
    """Contiguous ND tensors, weight/bias of input's dtype, running statistics of rdt;
    given: weight, bias, runningMean, runningVar present."""
    C, X = shape[1], math.prod(shape)
    w_given, b_given, rm_given, rv_given = given
    xs = np.dtype(xdt).itemsize
    g, gone = Graph(), set()
    regbase = ARCH == 3510
    # fills in the op_api's order: runningMean, runningVar, weight, bias (input's dtype on 950)
    fill = {}
    for name, present in (("rm", rm_given), ("rv", rv_given), ("w", w_given), ("b", b_given)):
        if not present:
            fill[name] = g.out(g.helper_kernel(), C * (xs if regbase else 4))
    rank5 = min(len(shape), 5) == 5
    # isEvalAndNotSupportNcdhw: never on Ascend 950 (regbase)
    transposed = not training and rank5 and ARCH not in NCDHW_PARTS and not regbase
    x = g.out(g.kernel(), X * xs) if transposed else None
    if bn_chain(shape, training) == "v3":
        # weight/bias: FLOAT fills promoted with an input-dtype partner are cast to FLOAT
        wdt = {n: (F32 if (n in fill and not regbase) else xdt) for n in ("w", "b")}
        wb = wdt["w"] if wdt["w"] == wdt["b"] else F32
        wb = wb if wb == xdt else F32
        vec = {}

        def cast_to(n, have, want):
            """vec[n]: the fill (or the caller's tensor, None), through a Cast when the dtype
            the kernel wants is not the one it has."""
            vec[n] = fill.get(n)
            if have != want:
                k = g.helper_kernel()
                g.read(vec[n], k)
                vec[n] = g.out(k, C * 4)
        for n in ("w", "b"):
            cast_to(n, wdt[n], wb)
        vdt = {n: (xdt if regbase else F32) if n in fill else rdt for n in ("rm", "rv")}
        run = vdt["rm"] if vdt["rm"] == vdt["rv"] else F32  # Ascend 950: their promotion,
        run = run if (regbase and run == wb and run == xdt) else F32  # kept if all agree
        for n in ("rm", "rv"):
            cast_to(n, vdt[n], run)
        k = g.kernel()
        for t in (x, *vec.values()):
            g.read(t, k)
        g.out(k, MiB16)
        y = g.out(k, X * xs)
        mean, var = g.out(k, C * 4), g.out(k, C * 4)
        if training:
            for n, given_ in (("rm", rm_given), ("rv", rv_given)):
                if given_ and run != rdt:  # back to the caller's tensor's dtype
                    kc = g.helper_kernel()
                    g.read(vec[n], kc)
                    g.hand_over(g.out(kc, C * 4), gone, (C,))
            for t in (mean, var):
                if save_dt == F32:
                    g.hand_over(t, gone, (C,))
                else:
                    kc = g.helper_kernel()
                    g.read(t, kc)
                    g.hand_over(g.out(kc, C * np.dtype(save_dt).itemsize), gone, (C,))
    else:
        six = training and rank5 and ARCH not in NCDHW_PARTS
        stat = ceil_to(C, 16) * 4 if six else C * 4
        vec = {}
        for n in ("w", "b", "rm", "rv"):  # ResizeFrom1D: a FLOAT cast, 6HD on DAV_1001 rank 5
            vec[n] = fill.get(n)
            if n not in fill and (xdt if n in ("w", "b") else rdt) != F32:
                k = g.helper_kernel()
                vec[n] = g.out(k, C * 4)
            if six:
                k = g.kernel()
                g.read(vec[n], k)
                vec[n] = g.out(k, stat)
        if not training:
            k = g.kernel()  # BNInfer
            for t in (x, *vec.values()):
                g.read(t, k)
            y = g.out(k, X * xs)
        else:
            if six:  # the input to 6HD
                n, c, d, h, w_ = shape[0], shape[1], shape[2], shape[3], math.prod(shape[4:])
                k = g.kernel()
                x = g.out(k, n * d * ceil_to(c, 16) * h * w_ * xs)
            kr = g.kernel()
            g.read(x, kr)
            s1, s2 = g.out(kr, stat), g.out(kr, stat)
            ku = g.kernel()
            for t in (x, s1, s2, *vec.values()):
                g.read(t, ku)
            y = g.out(ku, X * xs if not six else g.tensors[x][0])
            mean, var = g.out(ku, stat), g.out(ku, stat)
            if six:
                k = g.kernel()
                g.read(y, k)
                y = g.out(k, X * xs)
            for t in (mean, var):
                if six:
                    k = g.kernel()
                    g.read(t, k)
                    t = g.out(k, C * 4)
                if save_dt != F32:  # the Cast to saveMean's/saveInvstd's dtype
                    k = g.helper_kernel()
                    g.read(t, k)
                    t = g.out(k, C * np.dtype(save_dt).itemsize)
                g.hand_over(t, gone, (C,))  # into the caller's saveMean/saveInvstd
            for n, given_ in (("rm", rm_given), ("rv", rv_given)):  # ResizeTo1D back
                if not given_:
                    continue
                t = vec[n]
                if six:
                    k = g.kernel()
                    g.read(t, k)
                    t = g.out(k, C * 4)
                if rdt != F32:
                    k = g.helper_kernel()
                    g.read(t, k)
                    t = g.out(k, C * np.dtype(rdt).itemsize)
                g.hand_over(t, gone, (C,))
    if transposed:
        k = g.kernel()
        g.read(y, k)
        y = g.out(k, X * xs)
    g.hand_over(y, gone, shape)
    return g.size(gone)


def bn_views(arena, shape, training=True, given=(True,) * 4, xdt=F32, save_dt=F32, kind="contig",
             data=False, rdt=F32):
    C = shape[1]
    rng = np.random.default_rng(1)
    x = DevView(arena, rng.standard_normal(shape).astype(xdt) if data else np.ones(shape, xdt),
                kind=kind)
    vec = [DevView(arena, np.linspace(0.5, 1.5, C).astype(xdt)) if given[0] else None,
           DevView(arena, np.linspace(-0.2, 0.2, C).astype(xdt)) if given[1] else None,
           DevView(arena, np.zeros(C, rdt)) if given[2] else None,
           DevView(arena, np.ones(C, rdt)) if given[3] else None]
    y = DevView(arena, shape=shape, dtype=xdt)
    sm = DevView(arena, shape=(C,), dtype=save_dt)
    si = DevView(arena, shape=(C,), dtype=save_dt)
    return [x, *vec, training, 0.1, 1e-5, y, sm, si]


def bn_phase_one(arena, args):
    return phase_one(BN_P1, *as_ncdhw(arena, args))


def bn_size(arena, shape, **kw):
    rc, ws, ex = bn_phase_one(arena, bn_views(arena, shape, **kw))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


BN_SHAPES = [(4, 3, 5), (2, 64, 3), (16, 64), (2, 6, 3, 4), (2, 64, 2, 2, 3), (2, 5, 2, 1, 3, 2)]
GIVEN = [(True,) * 4, (False,) * 4, (True, False, True, False), (False, True, False, True)]


@pytest.mark.parametrize("shape", BN_SHAPES, ids=[str(s) for s in BN_SHAPES])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("given", GIVEN, ids=["".join("wbmv"[i] if p else "-"
                                                     for i, p in enumerate(g)) for g in GIVEN])
def test_batch_norm_size(arena, shape, training, given):
    assert bn_size(arena, shape, training=training, given=given) == \
        bn_expected(shape, training, given)


@pytest.mark.parametrize("save_dt", [F32, F16], ids=["save-f32", "save-f16"])
def test_batch_norm_size_float16(arena, save_dt):
    """FLOAT16 input, weight and bias, FLOAT running statistics: on Ascend 950 they are cast to
    FLOAT around the kernel (runningDtype FLOAT: no cast), saved statistics of FLOAT16 take
    a cast of the kernel's FLOAT ones (alive until it) where BatchNormV3 runs."""
    for shape in ((2, 64, 3), (4, 3, 5)):
        assert bn_size(arena, shape, xdt=F16, save_dt=save_dt) == \
            bn_expected(shape, True, xdt=F16, save_dt=save_dt)


@pytest.mark.parametrize("xdt", [F32, F16], ids=["x-f32", "x-f16"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
def test_batch_norm_size_float16_running_statistics(arena, xdt, training):
    """FLOAT16 running statistics: cast to FLOAT for the kernels (on Ascend 950 kept FLOAT16
    with a FLOAT16 input, weight and bias: runningDtype) and, in training, back to the
    caller's dtype (a cast whose result the caller's tensor takes over)."""
    for shape in ((2, 64, 3), (4, 3, 5), (2, 5, 2, 1, 3)):
        for given in GIVEN[:1] + GIVEN[2:]:
            assert bn_size(arena, shape, training=training, given=given, xdt=xdt, rdt=F16) \
                == bn_expected(shape, training, given, xdt=xdt, rdt=F16), (shape, given)


def test_batch_norm_size_strided_input(arena):
    """A non-contiguous input is copied first (l0op::Contiguous): its copy lives until the
    first kernel reading it, in a bucket of its own where the kernel has a workspace."""
    shape = (2, 64, 3)
    strided = bn_size(arena, shape, kind="transposed")
    plain = bn_size(arena, shape)
    assert plain == bn_expected(shape, True)
    assert strided - plain == align(math.prod(shape) * 4)


def test_batch_norm_empty_input(arena):
    """An empty input: a Fill per given non-empty saveMean/saveInvstd (saveMean's first),
    ViewCopy'd into the caller's contiguous tensor (taken over, or alive until a copy task:
    _workspace_model.handed_over); a strided one keeps its Fill until the copy kernel. On
    Ascend 950 each Fill's tiling asks 16 MiB during its kernel."""
    args = bn_views(arena, (0, 4, 3))
    rc, ws, ex = phase_one(BN_P1, *args)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    mean, last = handed_over(4 * 4, 0, args[-2])
    invstd, _ = handed_over(4 * 4, last + 1, args[-1])
    assert ws == max_allocator(helper_ws(0) + mean + helper_ws(last + 1) + invstd)
    args[-2] = DevView(arena, shape=(4,), dtype=F32, kind="stepped")
    rc, ws, ex = phase_one(BN_P1, *args)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    invstd, _ = handed_over(4 * 4, 2, args[-1])
    assert ws == max_allocator(helper_ws(0) + [(4 * 4, 0, 1)] + helper_ws(2) + invstd) >= \
        align(4 * 4)


def bn_reference(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    x64 = x.astype(np.float64)
    mean = x64.mean(axes, keepdims=True)
    var = x64.var(axes, keepdims=True)
    return (x64 - mean) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape)


def test_batch_norm_short_workspace_refused_and_exact_runs(arena):
    shape = (2, 64, 3)
    want = bn_expected(shape, True)
    assert want > 0
    for attempt in ("null", "short", "exact"):
        args = bn_views(arena, shape, data=True)
        rc, ws, ex = phase_one(BN_P1, *args)
        assert rc == OK and ws == want, last_msg()
        if workspace_attempt(arena, BN_P2, ex, ws, attempt):
            x, w, b = args[0].read(), args[1].read(), args[2].read()
            np.testing.assert_allclose(args[8].read(), bn_reference(x, w, b), rtol=1e-4,
                                       atol=1e-4)


# ---- aclnnBatchNormBackward -----------------------------------------------------------------

def grad_v3_workspace(shape, dy_dt=F32):
    """BatchNormGradV3's one workspace on Ascend 950 in training, r1 x a x r0 of an NCHW-like
    input: RARSplitCoreR1 (priority 2000), RASplitR, else a 16 MiB template."""
    C = shape[1]
    r1, r0 = shape[0], math.prod(shape[2:])
    if r0 != 1:
        if C <= CORES // 4 and r1 >= CORES and r1 * r0 * 5 >= UB:
            inner = -(-r1 // CORES)
            used = -(-r1 // inner)
            return 2 * MiB16 + used * ceil_to(C, 8) * 4 * 2
        return MiB16
    if r1 < 64 or r1 < C:
        return MiB16
    es = 4 if dy_dt == F32 else 2
    a_factor = max(-(-C // CORES), 32 // es)
    rival = -(-C // a_factor)
    own = -(-r1 // max(64, -(-r1 // CORES)))
    if (2 <= rival < CORES and own > rival) or r1 > 16 * CORES:
        return MiB16 + own * C * 4 * 2
    return MiB16


def bnb_expected(shape, training, mask, weight=True, dt=F32):
    """Contiguous tensors: gradOut, input, weight and the outputs of dt, the statistics FLOAT
    and given (weight optional)."""
    C, X = shape[1], math.prod(shape)
    es = np.dtype(dt).itemsize
    g, gone = Graph(), set()
    w = None if weight else g.out(g.helper_kernel(), C * 4)  # FillScalar FLOAT
    gw_dt = F32
    if ARCH == 3510:
        wdt = dt if weight else F32
        if dt == F32 and wdt != F32:  # weight to FLOAT with a FLOAT gradOut
            w = g.out(g.helper_kernel(), C * 4)
            wdt = F32
        k = g.kernel()
        g.read(w, k)
        g.out(k, grad_v3_workspace(shape, dt) if training else MiB16)
        wes = np.dtype(wdt).itemsize
        gi, gw, gb = g.out(k, X * es), g.out(k, C * wes), g.out(k, C * wes)
        gw_dt = wdt
        if not training and (mask[1] or mask[2]):
            gw_dt = F32
            dyc = xc = None
            if dt != F32:  # gradOut's and input's FLOAT casts
                dyc = g.out(g.helper_kernel(), X * 4)
                xc = g.out(g.helper_kernel(), X * 4)
            if mask[1]:
                add = g.out(g.kernel(), C * 4)
                g.read(add, g.kernels)
                pw = g.out(g.kernel(), C * 4)
                g.read(xc, g.kernels)
                sub = g.out(g.kernel(), X * 4)
                g.read(sub, g.kernels)
                g.read(pw, g.kernels)
                mul = g.out(g.kernel(), X * 4)
                g.read(mul, g.kernels)
                g.read(dyc, g.kernels)
                mul2 = g.out(g.kernel(), X * 4)
                g.read(mul2, g.kernels)
                gw = g.out(g.kernel(), C * 4)
            if mask[2]:
                g.read(dyc, g.kernels)
                gb = g.out(g.kernel(), C * 4)
    else:
        rank5 = min(len(shape), 5) == 5
        transposed = not training and rank5  # ResizeFrom5D: gradOut's, input's Transposes
        dy = g.out(g.kernel(), X * es) if transposed else None
        x = g.out(g.kernel(), X * es) if transposed else None
        six = training and rank5 and ARCH not in NCDHW_PARTS
        stat = ceil_to(C, 16) * 4 if six else C * 4
        vecs = [w, None, None]  # weight, the two statistics (FLOAT: no casts)
        if weight and dt != F32:  # ResizeFrom1D's FLOAT cast of weight
            vecs[0] = g.out(g.helper_kernel(), C * 4)
            if six:
                k = g.kernel()
                g.read(vecs[0], k)
                vecs[0] = g.out(k, stat)
        if six:  # each to 6HD, then gradOut and input
            for i in range(0 if not weight or dt == F32 else 1, 3):
                k = g.kernel()
                g.read(vecs[i], k)
                vecs[i] = g.out(k, stat)
            n, c, d, h, w_ = shape[0], shape[1], shape[2], shape[3], math.prod(shape[4:])
            six_bytes = n * d * ceil_to(c, 16) * h * w_ * es
            dy = g.out(g.kernel(), six_bytes)
            x = g.out(g.kernel(), six_bytes)
        ku = g.kernel()  # BNTrainingUpdateGrad
        for t in (dy, x, vecs[1], vecs[2]):
            g.read(t, ku)
        gw, gb = g.out(ku, stat), g.out(ku, stat)
        kr = g.kernel()  # BNTrainingReduceGrad, or BNInferGrad
        for t in ((dy, x, gw, gb, *vecs) if training else (dy, vecs[0], vecs[2])):
            g.read(t, kr)
        gi = g.out(kr, six_bytes if six else X * es)
        if six or transposed:
            k = g.kernel()
            g.read(gi, k)
            gi = g.out(k, X * es)
    six = ARCH != 3510 and training and min(len(shape), 5) == 5 and ARCH not in NCDHW_PARTS
    for i, t in ((1, gw), (2, gb), (0, gi)):  # the op_api's order
        if mask[i]:
            if i and six:  # ResizeTo1D: back to NCDHW before the copy
                k = g.kernel()
                g.read(t, k)
                t = g.out(k, C * 4)
            if i and gw_dt != dt:  # the Cast to gradWeight's/gradBias's dtype
                k = g.helper_kernel()
                g.read(t, k)
                t = g.out(k, C * es)
            g.hand_over(t, gone, (C,) if i else shape)
    return g.size(gone)


def bnb_args(arena, shape, training, mask, weight=True, data=False, dt=F32):
    C = shape[1]
    rng = np.random.default_rng(2)
    val = (lambda: rng.standard_normal(shape).astype(dt)) if data else \
        (lambda: np.ones(shape, dt))
    dy, x = DevView(arena, val()), DevView(arena, val())
    w = DevView(arena, np.linspace(0.5, 1.5, C).astype(dt)) if weight else None
    rm, rv = DevView(arena, np.zeros(C, F32)), DevView(arena, np.ones(C, F32))
    sm = DevView(arena, np.full(C, 0.1, F32))
    si = DevView(arena, np.full(C, 0.9 if ARCH != 3510 else 1.1, F32))
    outs = [DevView(arena, shape=shape, dtype=dt), DevView(arena, shape=(C,), dtype=dt),
            DevView(arena, shape=(C,), dtype=dt)]
    return [dy, x, w, rm, rv, sm, si, training, 1e-5, arena.bool_array(mask), *outs]


def bnb_size(arena, shape, training, mask, weight=True, dt=F32):
    rc, ws, ex = phase_one(BNB_P1, *as_ncdhw(arena, bnb_args(arena, shape, training, mask,
                                                             weight, dt=dt)))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


BNB_SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 5, 2, 1, 3), (3, 4, 2, 1, 2, 2)]
MASKS = [(True, True, True), (True, False, False), (False, True, True), (False, False, True)]


@pytest.mark.parametrize("shape", BNB_SHAPES, ids=[str(s) for s in BNB_SHAPES])
@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("mask", MASKS, ids=["".join("TF"[not m] for m in k) for k in MASKS])
def test_batch_norm_backward_size(arena, shape, training, mask):
    assert bnb_size(arena, shape, training, mask) == bnb_expected(shape, training, mask)


@pytest.mark.parametrize("training", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("mask", MASKS, ids=["".join("TF"[not m] for m in k) for k in MASKS])
def test_batch_norm_backward_size_float16(arena, training, mask):
    """FLOAT16 gradOut, input, weight and outputs, FLOAT statistics: off Ascend 950 weight's
    FLOAT cast and the FLOAT gradWeight/gradBias cast back; on Ascend 950 weight stays
    FLOAT16 (so do the kernel's gradWeight/gradBias), the inference's composed sums cast
    gradOut and input to FLOAT."""
    for shape in BNB_SHAPES:
        assert bnb_size(arena, shape, training, mask, dt=F16) == \
            bnb_expected(shape, training, mask, dt=F16), shape


def test_batch_norm_backward_size_without_weight(arena):
    for training in (True, False):
        assert bnb_size(arena, (4, 3, 5), training, MASKS[0], weight=False) == \
            bnb_expected((4, 3, 5), training, MASKS[0], weight=False)


@only_where(ARCH == 3510)   # BatchNormGradV3's templates are Ascend 950's
@pytest.mark.parametrize("shape,template", [
    ((16 * CORES + 1, 4), "RASplitR: r1 > 16 x cores"),
    ((CORES, 2, 1000), "RARSplitCoreR1"),
    ((2, 2, 1000), "RARFullLoad"),
], ids=["ra-split-r", "rar-split-core-r1", "rar-full-load"])
def test_batch_norm_backward_size_follows_the_950_template(arena, shape, template):
    want = grad_v3_workspace(shape)
    assert (want > MiB16) == ("Split" in template)
    assert bnb_size(arena, shape, True, MASKS[0]) == bnb_expected(shape, True, MASKS[0])


def test_batch_norm_backward_nothing_requested_or_empty(arena):
    rc, ws, ex = phase_one(BNB_P1, *bnb_args(arena, (0, 3, 5), True, MASKS[0]))
    assert rc == OK and ws == 0
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    rc, ws, ex = phase_one(BNB_P1, *bnb_args(arena, (4, 3, 5), True, (False,) * 3))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    # Ascend 950 returns before its kernels; elsewhere they run, their results left in place
    assert ws == (0 if ARCH == 3510 else bnb_expected((4, 3, 5), True, (False,) * 3))
    assert ARCH == 3510 or ws > 0


def test_batch_norm_backward_short_workspace_refused_and_exact_runs(arena):
    """gradBias alone requested: the other results stay in the workspace on every part."""
    shape, mask = (4, 3, 5), (False, False, True)
    want = bnb_expected(shape, True, mask)
    assert want > 0
    for attempt in ("null", "short", "exact"):
        args = bnb_args(arena, shape, True, mask, data=True)
        rc, ws, ex = phase_one(BNB_P1, *args)
        assert rc == OK and ws == want, last_msg()
        if workspace_attempt(arena, BNB_P2, ex, ws, attempt):
            dy = args[0].read().astype(np.float64)
            np.testing.assert_allclose(args[12].read(), dy.sum((0, 2)), rtol=1e-5, atol=1e-5)


test_on_other_parts = run_on_parts(other_parts(), "size or workspace or empty")
