"""The emulator's aclnnDeepNormGrad through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/deep_norm_grad: docs/aclnnDeepNormGrad.md's code table, the dtypes of
op_host/deep_norm_grad_def.cpp, the rules of op_host/arch22/deep_norm_grad_tiling.cpp and
arch35/deep_norm_grad_tiling_arch35.cpp; the stricter choices in docs/emulator.md), and the
device's numbers: against the float64 reference for every dtype, and bit for bit against the
kernels' chain (op_kernel/deep_norm_grad_merge_n.h and _large_n_small_d.h MainCompute, and
arch35/deep_norm_grad.h for Ascend 950: everything in float32, h = x * alpha + gx, dvar and
dmean as row sums times -1/N, dgx and dx = dgx * alpha rounded once) written in NumPy with the
emulator's fixed order of a row's sums and the part's order of dgamma/dbeta (per core block in
core order; Ascend 950's single pass or its compensated small-D split); bits independent of
layout and thread count; the other parts in their own processes.
"""
from __future__ import annotations

from math import gcd

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import DEEP_NORM_GRAD
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_layer_norm import lane_sum
from test_emulator_rms_norm_grad import vector_cores
from _emu_aclnn import SOC, rstd_shape, run_phase_two
from _part_runs import PARTS, only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnDeepNormGradGetWorkspaceSize
P2 = lib.aclnnDeepNormGrad
CALL = "aclnnDeepNormGradGetWorkspaceSize"
TILING = 561002        # ACLNN_ERR_INNER_TILING_ERROR
NO_KERNEL = 561003     # ACLNN_ERR_INNER_FIND_KERNEL_ERROR
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
BF16_PART = ARCH in (2201, 3510)
DTYPES = [F32, F16, BF16] if BF16_PART else [F32, F16]
NAMES = ["dy", "x", "gx", "gamma", "mean", "rstd", "dxOut", "dgxOut", "dbetaOut",
         "dgammaOut"]
ALPHA = 0.3
# op_host/deep_norm_grad_def.cpp configures no ascend910: there every call is refused, and the
# tests of the kernel's work are not defined (the parts with the kernel run them)
where_it_runs = only_where(runs_here(DEEP_NORM_GRAD))


def phase_one(*args, ws=True, ex=True):
    return aclnn_phase_one(P1, *args, ws=ws, ex=ex)


def rand(rng, shape, dt, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(rng, shape, gdims, dt, alpha=ALPHA):
    """dy, x, gx, gamma, mean, rstd: mean and rstd DeepNorm's of x and gx (float32)."""
    gs = shape[len(shape) - gdims:]
    dy, x, gx = rand(rng, shape, dt), rand(rng, shape, dt, 1.5, 0.25), rand(rng, shape, dt)
    g = rand(rng, gs, dt, 0.5, 1.0)
    mean, rstd, _ = reference.deep_norm(x, gx, np.zeros(gs), g, alpha)
    return dy, x, gx, g, mean.astype(F32), rstd.astype(F32)


def call(arena, dy, x, gx, g, mean, rstd, alpha=ALPHA, kinds=("contig",) * 10):
    """Runs the operator; (dx, dgx, dbeta, dgamma) read back (outputs start at a sentinel)."""
    ins = [DevView(arena, v, kind=k) for v, k in zip((dy, x, gx, g, mean, rstd), kinds)]
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=-77.0)
            for s, d, k in zip((dy.shape, dy.shape, g.shape, g.shape),
                               (dy.dtype, dy.dtype, F32, F32), kinds[6:])]
    run_phase_two(arena, P2, phase_one(*ins[:6], alpha, *outs))
    return tuple(v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def gamma_beta_plan(m, n, itemsize, arch=ARCH):
    """(rows per block, compensated): the split of dgamma/dbeta's sums over the rows. Atlas
    A2/A3 and inference parts: the tiling's rows per core (SetBaseConfig nDealPerCore);
    Ascend 950: one block, or for N < 500 and M >= 1024 its small-D rows per core (a multiple
    of the rows filling whole 32-byte blocks), with Kahan sums."""
    cores = vector_cores()
    if arch != 3510:
        used = -(-m // -(-m // cores))
        return -(-m // used), False
    if n < 500 and m >= 1024:
        align = 32 // gcd(n * itemsize, 32)
        return -(-(-(-m // cores)) // align) * align, True
    return m, False


def kahan_add(s, c, v):
    adjusted = v - c
    t = s + adjusted
    return t, (t - s) - adjusted


def block_sums(v, rows, kahan):
    """Column sums of float32 rows (M, N): each block of ``rows`` rows from zero in row order,
    then the blocks in order onto zero (compensated both times when ``kahan``)."""
    zero = np.zeros(v.shape[1], np.float32)
    total, tcomp = zero.copy(), zero.copy()
    for b0 in range(0, v.shape[0], rows):
        s, c = zero.copy(), zero.copy()
        for row in v[b0:b0 + rows]:
            if kahan:
                s, c = kahan_add(s, c, row)
            else:
                s = s + row
        if kahan:
            total, tcomp = kahan_add(total, tcomp, s)
        else:
            total = total + s
    return total


def device_chain(dy, x, gx, g, mean, rstd, alpha=ALPHA, arch=ARCH):
    """(dx, dgx, dbeta, dgamma) as the part's kernel makes them (see the module doc)."""
    f = np.float32
    n = g.size
    rows = lambda a: a.astype(f).reshape(-1, n)  # noqa: E731
    a = f(alpha)
    dyf = rows(dy)
    xc = (rows(x) * a + rows(gx)) - mean.astype(f).reshape(-1, 1)
    r = rstd.astype(f).reshape(-1, 1)
    gg = dyf * g.astype(f).reshape(n)
    k = -f(1.0 / n) if arch == 3510 else f(-1) / f(n)
    dvar = lane_sum((xc * (r * r * r)) * gg) * k
    gr = gg * r
    dmean = lane_sum(gr) * k
    t = xc * dvar[:, None]
    dgx = (gr + t) + dmean[:, None] if arch == 3510 else (t + dmean[:, None]) + gr
    dx = dgx * a
    block, kahan = gamma_beta_plan(dyf.shape[0], n, dy.dtype.itemsize, arch)
    dgamma = block_sums((dyf * xc) * r if kahan else (xc * r) * dyf, block, kahan)
    dbeta = block_sums(dyf, block, kahan)
    return (dx.astype(dy.dtype).reshape(dy.shape), dgx.astype(dy.dtype).reshape(dy.shape),
            dbeta.reshape(g.shape), dgamma.reshape(g.shape))


def rows_written(dt, n):
    """dx and dgx are written unless the part is an Atlas inference one and a row is shorter
    than one 32-byte block (DataCopyCustom's non-220 branch)."""
    return ARCH != 2002 or n * np.dtype(dt).itemsize >= 32


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("alpha", [0.3, 1.7], ids=["a0.3", "a1.7"])
def test_numbers_against_float64_reference(arena, dt, alpha):
    rng = np.random.default_rng(3)
    args = inputs(rng, (3, 5, 96), 1, dt, alpha)
    got = call(arena, *args, alpha=alpha)
    exp = reference.deep_norm_grad(*args, alpha=alpha)
    mag = reference.deep_norm_grad_error_scale(*args, alpha=alpha)
    assert [a.dtype for a in got] == [dt, dt, F32, F32]
    for a, e, m, odt in zip(got, exp, mag, (dt, dt, F32, F32)):
        bound = 1e-5 * m + reference.half_ulp(e, odt.name) + 1e-30
        assert (np.abs(a.astype(np.float64) - e) <= bound).all()


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,gdims", [((7, 33), 1), ((2, 3, 181), 1), ((40, 4, 5), 2),
                                         ((3, 600), 1), ((1100, 3), 1), ((70, 2), 1)], ids=str)
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, shape, gdims):
    """(1100, 3): Ascend 950's compensated small-D sums; (70, 2): more rows than a part's
    cores, so several core blocks; (3, 600): the merge-N kernel's range (D >= 500)."""
    rng = np.random.default_rng(sum(shape))
    alpha = 0.3 if shape[0] % 2 else 0.7
    args = inputs(rng, shape, gdims, dt, alpha)
    got = call(arena, *args, alpha=alpha)
    exp = device_chain(*args, alpha=alpha)
    n = int(np.prod(shape[len(shape) - gdims:]))
    for i, (a, e) in enumerate(zip(got, exp)):
        assert a.dtype == e.dtype and a.shape == e.shape
        if i < 2 and not rows_written(dt, n):
            continue
        assert (bits(a) == bits(e)).all(), (i, np.flatnonzero(bits(a) != bits(e))[:5])


@where_it_runs
def test_short_rows_on_atlas_inference_parts(arena):
    """Rows under 32 bytes: dx and dgx keep their contents on Atlas inference parts (the
    kernel's copy-out writes whole blocks only), are written elsewhere; dgamma/dbeta always."""
    args = inputs(np.random.default_rng(8), (5, 6), 1, F32)
    dx, dgx, dbeta, dgamma = call(arena, *args)
    exp = device_chain(*args)
    if ARCH == 2002:
        assert (dx == -77.0).all() and (dgx == -77.0).all()
    else:
        assert (bits(dx) == bits(exp[0])).all() and (bits(dgx) == bits(exp[1])).all()
    assert (bits(dbeta) == bits(exp[2])).all() and (bits(dgamma) == bits(exp[3])).all()


@where_it_runs
@pytest.mark.parametrize("kinds", [("strided",) * 10, ("offset",) * 10,
                                   ("contig", "strided", "offset", "contig", "strided",
                                    "offset", "strided", "offset", "contig", "strided")],
                         ids=["strided", "offset", "mixed"])
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    args = inputs(np.random.default_rng(5), (6, 40), 1, F16)
    want = call(arena, *args)
    got = call(arena, *args, kinds=kinds)
    for a, e in zip(got, want):
        assert (bits(a) == bits(e)).all()


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs(np.random.default_rng(6), (100, 64), 1, F32)
    before = lib.aclemuGetNumThreads()
    try:
        lib.aclemuSetNumThreads(1)
        one = call(arena, *args)
        lib.aclemuSetNumThreads(4)
        four = call(arena, *args)
    finally:
        lib.aclemuSetNumThreads(before)
    for a, e in zip(one, four):
        assert (bits(a) == bits(e)).all()


@where_it_runs
def test_alpha_is_taken_as_a_float(arena):
    """The def's alpha attribute is a float: 0.1 as a double and as its float give the same
    bits."""
    args = inputs(np.random.default_rng(9), (4, 48), 1, F32, 0.1)
    a = call(arena, *args, alpha=0.1)
    b = call(arena, *args, alpha=float(np.float32(0.1)))
    for u, v in zip(a, b):
        assert (bits(u) == bits(v)).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), dt=F32, over=None, sdt=F32, odt=F32, acl=None):
    """The ten tensors; ``over`` replaces shapes by name, ``acl`` dtypes by index."""
    over = dict(over or {})
    st = rstd_shape(shape, len(gshape))
    shapes = {"dy": shape, "x": shape, "gx": shape, "gamma": gshape, "mean": st, "rstd": st,
              "dxOut": shape, "dgxOut": shape, "dbetaOut": gshape, "dgammaOut": gshape}
    shapes.update(over)
    dts = [dt, dt, dt, dt, sdt, sdt, dt, dt, odt, odt]
    acl = acl or {}
    out = []
    for i, name in enumerate(NAMES):
        if i < 6:
            out.append(DevView(arena, np.ones(shapes[name], dts[i]), acl_dtype=acl.get(i)))
        else:
            out.append(DevView(arena, shape=shapes[name], dtype=dts[i], acl_dtype=acl.get(i)))
    return out


def with_alpha(args, alpha=ALPHA):
    return [*args[:6], alpha, *args[6:]]


def refused(args, code, *words):
    rc, _, ex = phase_one(*with_alpha(args))
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith(CALL + ": "), msg
    for w in words:
        assert w in msg, msg
    return msg


def accepted(args):
    rc, _, ex = phase_one(*with_alpha(args))
    assert rc == OK, (rc, last_msg())  # its size: test_emulator_workspace_size_add_ln.py
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    args = with_alpha(views(arena))
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k", range(10), ids=lambda k: NAMES[k])
def test_each_tensor_is_required(arena, k):
    args = views(arena)
    args[k] = None
    rc, _, ex = phase_one(*with_alpha(args))
    assert rc == NULLPTR and ex == ffi.NULL
    assert f"{NAMES[k]} is NULL" in last_msg()


@where_it_runs
def test_part_dtype_table(arena):
    """One dtype for dy, x, gx, gamma, dx and dgx (FLOAT, FLOAT16, and BF16 outside the Atlas
    inference parts); mean, rstd, dbeta, dgamma FLOAT."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*with_alpha(views(arena, dt=dt)))
        if dt in DTYPES:
            assert rc == OK, (dt, last_msg())
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


@where_it_runs
@pytest.mark.parametrize("case,words", [
    (dict(sdt=F16), ("mean dtype FLOAT16", "FLOAT")),
    (dict(odt=F16), ("dbetaOut dtype FLOAT16", "FLOAT")),
    (dict(acl={1: lib.ACL_FLOAT16}), ("x dtype FLOAT16 must be dy's dtype FLOAT",)),
    (dict(acl={2: lib.ACL_FLOAT16}), ("gx dtype FLOAT16 must be dy's",)),
    (dict(acl={3: lib.ACL_FLOAT16}), ("gamma dtype FLOAT16 must be dy's",)),
    (dict(acl={7: lib.ACL_FLOAT16}), ("dgxOut dtype FLOAT16 must be dy's",)),
    (dict(acl={0: lib.ACL_INT32}), ("dy dtype ACL_INT32 is not supported",)),
], ids=["mean", "dbeta", "x", "gx", "gamma", "dgx", "int32"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@where_it_runs
@pytest.mark.parametrize("case,words", [
    (dict(shape=(16,), over={"mean": (1,), "rstd": (1,)}), ("dy rank 1 is not in [2, 8]",)),
    (dict(shape=(2, 1, 1, 1, 1, 1, 1, 1, 16)), ("dy rank 9",)),
    (dict(shape=(2, 1, 1, 1, 1, 1, 1, 16), gshape=(1, 1, 1, 1, 1, 1, 1, 16)),
     ("gamma rank 8 is not in [1, 7]",)),
    (dict(over={"x": (1, 4, 16)}), ("x rank 3 must equal dy's rank",)),
    (dict(over={"dgxOut": (64,)}), ("dgxOut rank 1 must equal dy's rank",)),
    (dict(over={"rstd": (4,)}), ("rstd rank 1 must equal dy's rank",)),
    (dict(over={"dgammaOut": (1, 16)}), ("dgammaOut rank 2 must equal gamma's rank",)),
    (dict(over={"dbetaOut": (1, 16)}), ("dbetaOut rank 2 must equal gamma's rank",)),
    (dict(gshape=(4, 16), over={"mean": (1, 1), "rstd": (1, 1)}),
     ("dy rank 2 must be greater than gamma rank 2",)),
    (dict(over={"x": (4, 8)}), ("x shape [4,8] must equal dy's shape [4,16]",)),
    (dict(over={"gx": (2, 16)}), ("gx shape",)),
    (dict(over={"dxOut": (4, 8)}), ("dxOut shape",)),
    (dict(over={"rstd": (2, 1)}), ("rstd shape [2,1] must begin with dy's batch dims",)),
    (dict(over={"mean": (2, 1)}), ("mean shape [2,1] must begin",)),
    (dict(over={"gamma": (8,)}), ("gamma shape [8] must equal the last 1 dims of dy",)),
    (dict(over={"dgammaOut": (8,)}), ("dgammaOut shape [8] must equal the last 1 dims",)),
    (dict(over={"dbetaOut": (8,)}), ("dbetaOut shape",)),
    (dict(over={"mean": (4, 16), "rstd": (4, 16)}), ("must be dy's batch dims then ones",)),
    (dict(shape=(0, 16)), ("dy [0,16] has a zero dim",)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_shape_refusals(arena, case, words):
    refused(views(arena, **case), TILING, *words)


@where_it_runs
def test_every_output_empty_runs_nothing(arena):
    """dy empty in gamma's dims (so dx, dgx, dgamma and dbeta are all empty): the framework
    skips the tiling and the kernel; the shape rules still hold (stricter, docs/emulator.md)."""
    args = views(arena, shape=(4, 0), gshape=(0,))
    rc, ws, ex = phase_one(*with_alpha(args))
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    refused(views(arena, shape=(4, 0), gshape=(0,), over={"gx": (4, 1)}), TILING, "gx shape")


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    dx = args[6]
    arena.destroy_tensor(dx.handle)
    try:
        refused(args, INVALID, "dxOut", "not a live aclTensor")
    finally:
        dx.handle = arena.tensor(dx.shape, dx.dtype, dx.strides, dx.offset, dx.n, dx.ptr)


# ---- the part -----------------------------------------------------------------------------------

@only_where(ARCH == 1001)   # the Atlas training parts (their own run or their child)
def test_no_kernel_on_atlas_training_parts(arena):
    """op_host/deep_norm_grad_def.cpp configures no ascend910: the framework's kernel lookup
    fails (561003) for every call, before it compares dtypes."""
    refused(views(arena), NO_KERNEL, "not supported on", SOC)
    refused(views(arena, acl={0: lib.ACL_INT32}), NO_KERNEL)


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}), lambda part: (
        "no_kernel or part_dtype_table" if part == "Ascend910A" else
        "part_dtype_table or bit_for_bit or short_rows or reference"))
