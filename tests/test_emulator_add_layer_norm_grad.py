"""The emulator's aclnnAddLayerNormGrad through raw calls: phase one's checks, codes and
messages (hicann/ops-nn norm/add_layer_norm_grad: docs/aclnnAddLayerNormGrad.md's code table,
the dtypes of op_host/add_layer_norm_grad_def.cpp, the rules of
op_host/add_layer_norm_grad_tiling.cpp; the stricter choices in docs/emulator.md), and the
device's numbers: against the float64 reference for every dtype, with and without dsum, and
bit for bit against the kernel's chain (op_kernel/add_layer_norm_grad_cut_n.h MainCompute:
everything in float32, x = x1 + x2, pdVar and pdMean as row sums, dx rounded once) written in
NumPy with the emulator's fixed order of a row's sums and of the chunks' dgamma/dbeta sums;
bits independent of layout and thread count; the other parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_layer_norm import lane_sum
from _emu_aclnn import SOC, rstd_shape, run_phase_two
from _part_runs import PARTS, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnAddLayerNormGradGetWorkspaceSize
P2 = lib.aclnnAddLayerNormGrad
CALL = "aclnnAddLayerNormGradGetWorkspaceSize"
TILING = 561002        # ACLNN_ERR_INNER_TILING_ERROR
NO_KERNEL = 561003     # ACLNN_ERR_INNER_FIND_KERNEL_ERROR
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
BF16_PART = ARCH in (2201, 3510)
DTYPES = [F32, F16, BF16] if BF16_PART else [F32, F16]
# op_host/add_layer_norm_grad_def.cpp configures no ascend910: there every call is refused
# (test_no_kernel_on_atlas_training_parts), and the tests of the kernel's work skip
needs_kernel = pytest.mark.skipif(ARCH == 1001, reason=f"{SOC}: no AddLayerNormGrad kernel")
NAMES = ["dy", "x1", "x2", "rstd", "mean", "gamma", "dsumOptional", "dxOut", "dgammaOut",
         "dbetaOut"]
MAX_CHUNKS = 16  # ops/norm_rows.h NR_MAX_CHUNKS: dgamma/dbeta are summed per chunk of rows


def phase_one(*args, ws=True, ex=True):
    return aclnn_phase_one(P1, *args, ws=ws, ex=ex)


def rand(rng, shape, dt, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(rng, shape, gdims, dt, dsum=False):
    """dy, x1, x2, rstd, mean, gamma, dsum: mean and rstd those of x1 + x2 (float32)."""
    gs = shape[len(shape) - gdims:]
    dy, x1, x2 = rand(rng, shape, dt), rand(rng, shape, dt, 1.5, 0.25), rand(rng, shape, dt)
    g = rand(rng, gs, dt, 0.5, 1.0)
    _, mean, rstd, _ = reference.add_layer_norm(x1, x2, g, np.zeros(gs))
    ds = rand(rng, shape, dt, 0.5) if dsum else None
    return dy, x1, x2, rstd.astype(F32), mean.astype(F32), g, ds


def call(arena, dy, x1, x2, rstd, mean, g, ds=None, kinds=("contig",) * 10):
    """Runs the operator; (dx, dgamma, dbeta) read back (outputs start at a sentinel)."""
    ins = [DevView(arena, v, kind=k) if v is not None else None
           for v, k in zip((dy, x1, x2, rstd, mean, g, ds), kinds)]
    outs = [DevView(arena, shape=s, dtype=d, kind=k, sentinel=-77.0)
            for s, d, k in zip((dy.shape, g.shape, g.shape), (dy.dtype, F32, F32), kinds[7:])]
    run_phase_two(arena, P2, phase_one(*ins, *outs))
    return tuple(v.read() for v in outs)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def chunk_sums(v):
    """Column sums of float32 rows (M, N) as the emulator makes dgamma/dbeta: rows in order
    within each of min(M, 16) chunks (chunk c: rows [c*M/k, (c+1)*M/k)), then the chunks'
    sums in order onto zeros."""
    m = v.shape[0]
    k = min(m, MAX_CHUNKS)
    total = np.zeros(v.shape[1], np.float32)
    for c in range(k):
        part = np.zeros(v.shape[1], np.float32)
        for row in v[c * m // k:(c + 1) * m // k]:
            part += row
        total += part
    return total


def device_chain(dy, x1, x2, rstd, mean, g, ds=None):
    """(dx, dgamma, dbeta) as the kernel makes them (see the module doc), in float32."""
    f = np.float32
    n = g.size
    rows = lambda a: a.astype(f).reshape(-1, n)  # noqa: E731
    dyf, x = rows(dy), rows(x1) + rows(x2)
    r = rstd.astype(f).reshape(-1, 1)
    gam = g.astype(f).reshape(n)
    ras = f(1) / f(n)
    gg = dyf * gam
    xc = x + mean.astype(f).reshape(-1, 1) * f(-1)
    r3 = r * r * r
    pd_var = lane_sum(gg * (xc * r3)) * -ras
    pd_mean = lane_sum((gg * r) * f(-1)) * ras
    dx = (xc * pd_var[:, None] + gg * r) + pd_mean[:, None]
    if ds is not None:
        dx = dx + rows(ds)
    dgamma = chunk_sums(dyf * (xc * r))
    dbeta = chunk_sums(dyf)
    return dx.astype(dy.dtype).reshape(dy.shape), dgamma.reshape(g.shape), dbeta.reshape(g.shape)


# ---- numbers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dsum", [False, True], ids=["no_dsum", "dsum"])
@needs_kernel
def test_numbers_against_float64_reference(arena, dt, dsum):
    rng = np.random.default_rng(3 + dsum)
    args = inputs(rng, (3, 5, 96), 1, dt, dsum)
    got = call(arena, *args)
    exp = reference.add_layer_norm_grad(*args)
    mag = reference.add_layer_norm_grad_error_scale(*args)
    assert [a.dtype for a in got] == [dt, F32, F32]
    for a, e, m, odt in zip(got, exp, mag, (dt, F32, F32)):
        bound = 1e-5 * m + reference.half_ulp(e, odt.name) + 1e-30
        assert (np.abs(a.astype(np.float64) - e) <= bound).all()


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,gdims", [((7, 33), 1), ((2, 3, 181), 1), ((40, 4, 5), 2),
                                         ((181,), 1)], ids=str)
@needs_kernel
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, shape, gdims):
    rng = np.random.default_rng(sum(shape))
    args = inputs(rng, shape, gdims, dt, dsum=shape[0] % 2 == 0)
    got = call(arena, *args)
    exp = device_chain(*args)
    for a, e in zip(got, exp):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert (bits(a) == bits(e)).all()


@pytest.mark.parametrize("kinds", [("strided",) * 10, ("offset",) * 10,
                                   ("contig", "strided", "offset", "contig", "strided",
                                    "offset", "strided", "offset", "contig", "strided")],
                         ids=["strided", "offset", "mixed"])
@needs_kernel
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    args = inputs(np.random.default_rng(5), (6, 40), 1, F16, dsum=True)
    want = call(arena, *args)
    got = call(arena, *args, kinds=kinds)
    for a, e in zip(got, want):
        assert (bits(a) == bits(e)).all()


@needs_kernel
def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs(np.random.default_rng(6), (100, 64), 1, F32, dsum=True)
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


@needs_kernel
def test_dgamma_and_dbeta_are_overwritten(arena):
    """The kernel zeroes dgamma and dbeta before its cores add into them (InitGmData): the
    outputs' old contents (here the sentinel) never reach the result."""
    args = inputs(np.random.default_rng(7), (3, 8), 1, F32)
    _, dgamma, dbeta = call(arena, *args)
    assert (bits(dbeta) == bits(chunk_sums(args[0]))).all()
    assert (bits(dgamma) == bits(device_chain(*args)[1])).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), dt=F32, dsum=True, over=None, sdt=F32,
          odt=F32, acl=None):
    """The ten arguments; ``over`` replaces shapes by name, ``acl`` dtypes by index."""
    over = dict(over or {})
    st = rstd_shape(shape, len(gshape))
    shapes = {"dy": shape, "x1": shape, "x2": shape, "rstd": st, "mean": st, "gamma": gshape,
              "dsumOptional": shape, "dxOut": shape, "dgammaOut": gshape, "dbetaOut": gshape}
    shapes.update(over)
    dts = [dt, dt, dt, sdt, sdt, dt, dt, dt, odt, odt]
    acl = acl or {}
    out = []
    for i, name in enumerate(NAMES):
        if name == "dsumOptional" and not dsum:
            out.append(None)
        elif i < 7:
            out.append(DevView(arena, np.ones(shapes[name], dts[i]), acl_dtype=acl.get(i)))
        else:
            out.append(DevView(arena, shape=shapes[name], dtype=dts[i], acl_dtype=acl.get(i)))
    return out


def refused(args, code, *words):
    rc, _, ex = phase_one(*args)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith(CALL + ": "), msg
    for w in words:
        assert w in msg, msg
    return msg


def accepted(args):
    rc, _, ex = phase_one(*args)
    assert rc == OK, (rc, last_msg())  # its size: test_emulator_workspace_size_add_ln.py
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    args = views(arena)
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 7, 8, 9], ids=lambda k: NAMES[k])
def test_each_required_tensor(arena, k):
    args = views(arena)
    args[k] = None
    rc, _, ex = phase_one(*args)
    assert rc == NULLPTR and ex == ffi.NULL
    assert f"{NAMES[k]} is NULL" in last_msg()


@needs_kernel
def test_dsum_is_optional(arena):
    accepted(views(arena, dsum=False))
    accepted(views(arena))


@needs_kernel
def test_part_dtype_table(arena):
    """One dtype for dy, x1, x2, gamma, dsum and dx (FLOAT, FLOAT16, and BF16 outside the
    Atlas inference parts); rstd, mean, dgamma, dbeta FLOAT."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        if dt in DTYPES:
            assert rc == OK, (dt, last_msg())
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


@needs_kernel
@pytest.mark.parametrize("case,words", [
    (dict(sdt=F16), ("rstd dtype FLOAT16", "FLOAT")),
    (dict(odt=F16), ("dgammaOut dtype FLOAT16", "FLOAT")),
    (dict(acl={1: lib.ACL_FLOAT16}), ("x1 dtype FLOAT16 must be dy's dtype FLOAT",)),
    (dict(acl={5: lib.ACL_FLOAT16}), ("gamma dtype FLOAT16 must be dy's",)),
    (dict(acl={6: lib.ACL_FLOAT16}), ("dsumOptional dtype FLOAT16 must be dy's",)),
    (dict(acl={7: lib.ACL_FLOAT16}), ("dxOut dtype FLOAT16 must be dy's",)),
    (dict(acl={0: lib.ACL_INT32}), ("dy dtype ACL_INT32 is not supported",)),
], ids=["rstd", "dgamma", "x1", "gamma", "dsum", "dx", "int32"])
def test_dtype_refusals(arena, case, words):
    refused(views(arena, **case), INVALID, *words)


@needs_kernel
@pytest.mark.parametrize("case,words", [
    (dict(shape=(2, 1, 1, 1, 1, 1, 1, 1, 16)), ("x1 rank 9",)),
    (dict(over={"rstd": (4,)}), ("rstd rank 1 != dy rank 2",)),
    (dict(over={"mean": (4,)}), ("mean rank 1 != dy rank 2",)),
    (dict(over={"dgammaOut": (1, 16)}), ("dgammaOut rank 2 != gamma rank 1",)),
    (dict(over={"dbetaOut": (1, 16)}), ("dbetaOut rank 2 != gamma rank 1",)),
    (dict(gshape=(4, 16), over={"dgammaOut": (4, 16), "dbetaOut": (4, 16), "rstd": (1, 1, 1),
                               "mean": (1, 1, 1)}), ("rstd rank 3 != dy rank 2",)),
    (dict(gshape=(2, 4, 16), over={"dgammaOut": (2, 4, 16), "dbetaOut": (2, 4, 16),
                                  "rstd": (1, 1), "mean": (1, 1)}), ("dy rank 2 < gamma rank 3",)),
    (dict(over={"x1": (4, 8)}), ("x1 shape [4,8] != dy shape [4,16]",)),
    (dict(over={"x2": (2, 16)}), ("x2 shape",)),
    (dict(over={"dxOut": (4, 8)}), ("dxOut shape",)),
    (dict(over={"rstd": (2, 1)}), ("rstd shape [2,1] != mean shape [4,1]",)),
    (dict(over={"gamma": (8,)}), ("gamma shape [8] must equal the last 1 dims of dy",)),
    (dict(over={"mean": (2, 1), "rstd": (2, 1)}), ("mean shape [2,1] must be dy's batch",)),
    (dict(over={"dgammaOut": (8,)}), ("dgammaOut shape [8] != gamma shape [16]",)),
    (dict(over={"dbetaOut": (8,)}), ("dbetaOut shape",)),
    (dict(over={"dsumOptional": (1, 16)}), ("dsumOptional shape [1,16] != dy shape",)),
    (dict(shape=(0, 16)), ("has a zero dim",)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_shape_refusals(arena, case, words):
    refused(views(arena, **case), TILING, *words)


@needs_kernel
def test_every_output_empty_runs_nothing(arena):
    """gamma (hence dgamma, dbeta) and dx empty: the framework skips the tiling and the
    kernel; the shape rules still hold (stricter, docs/emulator.md)."""
    args = views(arena, shape=(4, 0), gshape=(0,))
    rc, ws, ex = phase_one(*args)
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    refused(views(arena, shape=(4, 0), gshape=(0,), over={"x2": (4, 1)}), TILING, "x2 shape")


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    dx = args[7]
    arena.destroy_tensor(dx.handle)
    try:
        refused(args, INVALID, "dxOut", "not a live aclTensor")
    finally:
        dx.handle = arena.tensor(dx.shape, dx.dtype, dx.strides, dx.offset, dx.n, dx.ptr)


# ---- the part -----------------------------------------------------------------------------------

@pytest.mark.skipif(ARCH != 1001, reason="Atlas training parts only")
def test_no_kernel_on_atlas_training_parts(arena):
    """op_host/add_layer_norm_grad_def.cpp configures no ascend910: the framework's kernel
    lookup fails (561003) for every call, before it compares dtypes."""
    refused(views(arena), NO_KERNEL, "not supported on", SOC)
    refused(views(arena, acl={0: lib.ACL_INT32}), NO_KERNEL)


test_on_other_parts = run_on_parts(
    other_parts(set(PARTS) - {"Ascend910_9391"}), lambda part: (
        "no_kernel or part_dtype_table" if part == "Ascend910A" else
        "part_dtype_table or bit_for_bit and 181 or reference"))
