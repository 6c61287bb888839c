"""The emulator's aclnnBatchNormBackward through raw calls: phase one's checks, their order,
codes and messages (hicann/ops-nn norm/batch_norm_grad_v3/op_host/op_api/
aclnn_batch_norm_backward.cpp; the stricter choices in docs/emulator.md), what is written (the
requested outputs only; nothing for an empty input), and the device's numbers: against the
float64 reference, and bit for bit against each part's chain written in NumPy (Ascend 950's
BatchNormGradV3 kernels and inference composite, the TBE BNTrainingUpdateGrad /
BNTrainingReduceGrad / BNInferGrad chain elsewhere); the other parts in their own processes;
the vendor's op_api unit test cases replayed with their expected status.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_group_norm import ARCH, BF16_PART, lane_sum
from _emu_aclnn import SOC, both_phases_without_a_device, refused_by, run_phase_two
from _part_runs import cases_where, only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one
from test_emulator_batch_norm import NR_MISSES_WIDE, rstd_950

P1 = lib.aclnnBatchNormBackwardGetWorkspaceSize
P2 = lib.aclnnBatchNormBackward
CALL = "aclnnBatchNormBackwardGetWorkspaceSize"
INNER_NULLPTR = 561103
SENTINEL = -77.0
ALL = (True, True, True)
f = np.float32


def phase_one(dy, x, w, rm, rv, sm, si, training, eps, mask, dx, dw, db, ws=True, ex=True):
    return aclnn_phase_one(P1, dy, x, w, rm, rv, sm, si, training, eps, mask, dx, dw, db,
                           ws=ws, ex=ex)


def call(arena, dy, x, w=None, rm=None, rv=None, sm=None, si=None, training=True, eps=1e-5,
         mask=ALL, gdt=None, kind="contig"):
    """Runs the operator on ND tensors; returns (gradInput, gradWeight, gradBias) read back
    (every output view given, sentinel-filled: an unrequested one must stay so). gdt:
    gradWeight/gradBias dtype (default weight's, float32 without weight)."""
    c = x.shape[1]
    gdt = gdt or (F32 if w is None else w.dtype)
    vdy, vx = DevView(arena, dy, kind=kind), DevView(arena, x, kind=kind)
    vec = [None if a is None else DevView(arena, a, kind=kind) for a in (w, rm, rv, sm, si)]
    vdx = DevView(arena, shape=x.shape, dtype=dy.dtype, kind=kind, sentinel=SENTINEL)
    vdw = DevView(arena, shape=(c,), dtype=gdt, kind=kind, sentinel=SENTINEL)
    vdb = DevView(arena, shape=(c,), dtype=gdt, kind=kind, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(vdy, vx, *vec, training, eps, arena.bool_array(mask),
                                       vdx, vdw, vdb))
    # nothing written outside the outputs: the inputs untouched
    assert np.array_equal(vdy.read(), dy) and np.array_equal(vx.read(), x)
    for v, a in zip(vec, (w, rm, rv, sm, si)):
        if v is not None:
            assert np.array_equal(v.read(), a)
    return vdx.read(), vdw.read(), vdb.read()


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(shape, dt, seed=0, affine=True, vdt=F32):
    """gradOut, input, weight (dt), runningMean, runningVar, saveMean, saveInvstd (vdt): the
    saved statistics positive, valid as a variance or as an rstd."""
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[1]
    dy, x = rand(rng, shape, dt, 1.0, 0.0), rand(rng, shape, dt)
    w = (1 + 0.25 * rng.standard_normal(c)).astype(dt) if affine else None
    rm = (0.25 + 0.1 * rng.standard_normal(c)).astype(vdt)
    rv = (1 + 0.5 * rng.random(c)).astype(vdt)
    sm = (0.25 + 0.1 * rng.standard_normal(c)).astype(vdt)
    si = (0.5 + rng.random(c)).astype(vdt)
    return dy, x, w, rm, rv, sm, si


# ---- the chains, in NumPy -------------------------------------------------------------------

def rows_of(a):
    return np.moveaxis(a.astype(f), 1, 0).reshape(a.shape[1], -1)


def shaped(rows, shape, dt):
    return np.moveaxis(rows.reshape((shape[1], shape[0]) + tuple(shape[2:])), 0, 1).astype(dt)


def device_chain(dy, x, w, rm, rv, sm, si, training, eps):
    """(gradInput, gradWeight, gradBias) as this part's kernels compute them, float32
    (gradInput rounded to gradOut's dtype; gradWeight and gradBias, on Ascend 950 in training,
    rounded to the 16-bit weight's dtype the kernel keeps)."""
    shape, c = x.shape, x.shape[1]
    D, X = rows_of(dy), rows_of(x)
    r = X.shape[1]
    fill = lambda v, k: np.full(c, k, f) if v is None else v.astype(f)  # noqa: E731
    wv, rmv, rvv, smv, siv = (fill(w, 1), fill(rm, 0), fill(rv, 1), fill(sm, 0), fill(si, 1))
    e = f(eps)
    with np.errstate(all="ignore"):
        db = lane_sum(D)
        if ARCH == 3510 and training:
            xh = (X - smv[:, None]).astype(f)
            rs = siv[:, None]
            dg = lane_sum(((D * xh).astype(f) * rs).astype(f))
            h = f(1) / f(r)
            u = ((xh * rs).astype(f) * dg[:, None]).astype(f)
            u = ((u + db[:, None]).astype(f) * h).astype(f)
            dx = (rs * (wv[:, None] * (D - u).astype(f)).astype(f)).astype(f)
            if w is not None and dy.dtype != F32 and w.dtype != F32:
                dg, db = dg.astype(w.dtype).astype(f), db.astype(w.dtype).astype(f)
        else:
            mean, var = (smv, siv) if training else (rmv, rvv)
            q = np.sqrt((var + e).astype(f)).astype(f)
            rs = (f(1) / q).astype(f)
            dg = lane_sum((D * ((X - mean[:, None]).astype(f) * rs[:, None]).astype(f)).astype(f))
            if training:
                n = f(1.0 / float(f(r)))
                mult = ((dg * -n).astype(f) / q).astype(f)
                add = (((mean / q).astype(f) * (dg * n).astype(f)).astype(f)
                       + (db * -n).astype(f)).astype(f)
                k = (wv / q).astype(f)
                u = ((D + (mult[:, None] * X).astype(f)).astype(f) + add[:, None]).astype(f)
                dx = (u * k[:, None]).astype(f)
            elif ARCH == 3510:
                rn = rstd_950(var, e)   # both inference kernels' Newton-Raphson, clamped
                dx = ((D * wv[:, None]).astype(f) * rn[:, None]).astype(f)
            else:
                dx = ((wv * rs).astype(f)[:, None] * D).astype(f)
    return shaped(dx, shape, dy.dtype), dg, db


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def same_bits(got, want, dt):
    assert np.array_equal(bits(np.asarray(got)), bits(np.asarray(want).astype(dt))), \
        (got, want)


def check_chain(got, want, dt, gdt, mask=ALL):
    for k, (g, v) in enumerate(zip(got, want)):
        d = dt if k == 0 else gdt
        if mask[k]:
            same_bits(g, v, d)
        else:
            assert (g == SENTINEL).all(), (k, g)


# ---- numbers ---------------------------------------------------------------------------------

SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 96, 7), (3, 4, 2, 1, 3, 2), (5, 2),
          (1, 70, 1), (2, 3, 2, 2, 3)]


@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
# a rank-5 ND input is refused on Ascend 950 (NCDHW/NDHWC only): no such case there
@pytest.mark.parametrize("shape", [s for s in SHAPES if ARCH != 3510 or len(s) != 5], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_chain_bit_for_bit(arena, dt, shape, training):
    """Every output is this part's chain, bit for bit."""
    args = inputs(shape, dt)
    got = call(arena, *args, training=training, eps=1e-3)
    check_chain(got, device_chain(*args, training, 1e-3), dt, dt)


@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)])
@pytest.mark.parametrize("shape", SHAPES[:4], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_reference(arena, dt, shape, training):
    """Against the float64 reference within its tolerance (saveInvstd as this part's
    aclnnBatchNorm writes it: the variance, or 1 / sqrt(var + eps) on Ascend 950)."""
    args = inputs(shape, dt, seed=3)
    got = call(arena, *args, training=training)
    saved = "invstd" if ARCH == 3510 else "var"
    ref = reference.batch_norm_backward(*args, training, 1e-5, saved=saved)
    scale = reference.batch_norm_backward_error_scale(*args, training, 1e-5, saved=saved)
    for k, (g, r_, s) in enumerate(zip(got, ref, scale)):
        ratio = reference.max_error_ratio(g, r_, s, dt)
        assert ratio <= 1, (k, ratio)


def test_inference_rstd_where_newton_raphson_is_not_correctly_rounded(arena):
    """runningVar (eps 0) where Ascend 950's BatchNormGradV3 inference kernels' rstd
    (ComputeRstdNewtonRaphsonReg, one Newton-Raphson step) is not the correctly rounded
    1 / sqrt: every output is this part's chain bit for bit on every part, and on Ascend 950
    gradInput is not the one a correctly rounded rstd gives."""
    rv = NR_MISSES_WIDE
    c = rv.size
    exact = (1 / np.sqrt(rv.astype(np.float64))).astype(f)
    assert (rstd_950(rv, 0.0) != exact).all()
    dy, x, w, rm, _, sm, si = inputs((2, c, 16), F32, seed=21)
    got = call(arena, dy, x, w, rm, rv, sm, si, training=False, eps=0.0)
    check_chain(got, device_chain(dy, x, w, rm, rv, sm, si, False, 0.0), F32, F32)
    if ARCH == 3510:
        dx = (rows_of(dy) * w[:, None]) * exact[:, None]
        assert not np.array_equal(bits(got[0]), bits(shaped(dx, x.shape, F32)))


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False),
                                  (False, False, True), (True, False, True),
                                  (False, False, False)], ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_only_the_requested_outputs_are_written(arena, mask, training):
    args = inputs((3, 4, 5), F32)
    got = call(arena, *args, training=training, mask=mask)
    check_chain(got, device_chain(*args, training, 1e-5), F32, F32, mask)


def test_unrequested_outputs_may_be_null(arena):
    dy, x, w, rm, rv, sm, si = inputs((3, 4, 5), F32)
    vs = [DevView(arena, a) for a in (dy, x, w, rm, rv, sm, si)]
    vdx = DevView(arena, shape=x.shape, dtype=F32)
    rc, _, ex = phase_one(*vs, True, 1e-5, arena.bool_array((True, False, False)), vdx,
                          None, None)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_missing_vectors_take_the_op_api_fills(arena):
    """NULL weight, running and saved statistics: ones, zeros, ones, zeros, ones."""
    dy, x = inputs((3, 4, 5), F32)[:2]
    for training in (True, False):
        got = call(arena, dy, x, training=training)
        check_chain(got, device_chain(dy, x, None, None, None, None, None, training, 1e-5),
                    F32, F32)


@pytest.mark.parametrize("vdt", [F16, *cases_where(BF16_PART, BF16)])
def test_vectors_in_16_bits(arena, vdt):
    """16-bit statistics are read widened; gradWeight/gradBias cast to their dtype."""
    dy, x, w, rm, rv, sm, si = inputs((2, 5, 6), vdt, vdt=vdt)
    for training in (True, False):
        got = call(arena, dy, x, w, rm, rv, sm, si, training=training)
        want = device_chain(dy, x, w, rm, rv, sm, si, training, 1e-5)
        check_chain(got, want, vdt, vdt)
        # float32 gradWeight/gradBias beside a 16-bit weight: on Ascend 950 in training the
        # kernel's 16-bit values widened, elsewhere the float32 sums
        got = call(arena, dy, x, w, rm, rv, sm, si, training=training, gdt=F32)
        check_chain(got, want, vdt, F32)


@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    args = inputs((2, 6, 3, 4), F16)
    base = call(arena, *args)
    got = call(arena, *args, kind=kind)
    for g, v in zip(got, base):
        assert np.array_equal(bits(g), bits(v))


def test_bits_do_not_depend_on_the_thread_count(arena):
    args = inputs((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, *args)
    lib.aclemuSetNumThreads(4)
    four = call(arena, *args)
    for g, v in zip(one, four):
        assert np.array_equal(bits(g), bits(v))


def test_grad_input_may_be_grad_out(arena):
    """In place: each channel's gradOut is read before its gradInput is written."""
    dy, x, w, rm, rv, sm, si = inputs((3, 4, 5), F32)
    want = device_chain(dy, x, w, rm, rv, sm, si, True, 1e-5)
    vdy = DevView(arena, dy)
    vs = [DevView(arena, a) for a in (x, w, rm, rv, sm, si)]
    vdw, vdb = DevView(arena, shape=(4,), dtype=F32), DevView(arena, shape=(4,), dtype=F32)
    run_phase_two(arena, P2, phase_one(vdy, *vs, True, 1e-5, arena.bool_array(ALL), vdy, vdw,
                                       vdb))
    same_bits(vdy.read(), want[0], F32)
    same_bits(vdw.read(), want[1], F32)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0)], ids=str)
def test_empty_input_writes_nothing_and_checks_nothing(arena, shape):
    """An empty input or gradOut returns before CheckParams: even a NULL outputMask and
    mismatched outputs pass, and nothing is written."""
    x = np.ones(shape, F32)
    vdy, vx = DevView(arena, x), DevView(arena, x)
    vdw = DevView(arena, shape=(5,), dtype=F32, sentinel=SENTINEL)
    for mask in (None, arena.bool_array(ALL)):
        run_phase_two(arena, P2, phase_one(vdy, vx, None, None, None, None, None, True, 1e-5,
                                           mask, None, vdw, None))
        assert (vdw.read() == SENTINEL).all()


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("dy", "x", "w", "rm", "rv", "sm", "si", "dx", "dw", "db")


def views(arena, shape=(2, 4, 3), dt=F32, shapes=None, dts=None):
    """gradOut, input, weight, runningMean, runningVar, saveMean, saveInvstd, gradInput,
    gradWeight, gradBias views (``shapes``/``dts``: overrides by NAMES)."""
    c = shape[1] if len(shape) > 1 else 1
    shapes = {k: (shape if k in ("dy", "x", "dx") else (c,)) for k in NAMES} | (shapes or {})
    dts = {k: (dt if k in ("dy", "x", "dx", "w") else F32) for k in NAMES} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


# dtypes outside the operator's, as aclCreateTensor's dtype over float32 storage
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE}


def args(arena, vs, training=True, mask=ALL):
    m = mask if mask is None or not isinstance(mask, tuple) else arena.bool_array(mask)
    return (*vs[:7], training, 1e-5, m, *vs[7:])


def refused(arena, vs, code, *words, training=True, mask=ALL, **kw):
    return refused_by(phase_one, CALL, args(arena, vs, training, mask), code, *words, **kw)


def accepted(arena, vs, training=True, mask=ALL):
    rc, _, ex = phase_one(*args(arena, vs, training, mask))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_a_call_without_a_kernel_needs_no_current_device(arena, null_stream):
    """An empty input returns before any L0 op on every part, and on Ascend 950 so does a
    call asking for no output (aclnn_batch_norm_backward.cpp): both phases succeed on a thread
    that never set a device, with a NULL stream or a given one, nothing queued. Elsewhere an
    all-false mask still runs the L0 ops (their results unused): 361001, as a launch with a
    kernel."""
    stream = ffi.NULL if null_stream else arena.stream
    none = (False, False, False)
    workspace = arena.malloc(1 << 16)  # the unused results' room (where the kernels run)
    for shape, mask, kernel in (((0, 4, 3), ALL, False), ((2, 4, 0), ALL, False),
                                ((2, 4, 3), none, ARCH != 3510)):
        rc, ws, rc2, msg = both_phases_without_a_device(
            P1, P2, args(arena, views(arena, shape), mask=mask), stream, workspace)
        assert (rc, rc2) == (OK, 361001 if kernel else OK), (shape, mask, msg)
        assert (ws > 0) == kernel, ws
        if kernel:
            assert msg.startswith("aclnnBatchNormBackward: ") and "no device" in msg, msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0


def test_out_pointers_first(arena):
    """L2_DFX_PHASE_1's out-pointers come before gradOut's NULL check."""
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(arena, vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "gradOut"), (1, "input")])
def test_required_tensors(arena, k, name):
    vs = views(arena)
    vs[k] = None
    refused(arena, vs, NULLPTR, f"{name} is NULL")


def test_output_mask(arena):
    """NULL, empty or not of length 3: 161001 (the mask check's status); a requested output
    NULL: 161001; the mask comes before the dtypes."""
    vs = views(arena, dts={"dy": "int32"})
    refused(arena, vs, NULLPTR, "outputMask is NULL", mask=None)
    for m in ((), (True,), (True, True), (True, True, True, True)):
        refused(arena, vs, NULLPTR, "outputMask length", mask=m)
    vs = views(arena)
    for k, name in ((7, "gradInput"), (8, "gradWeight"), (9, "gradBias")):
        ws = list(vs)
        ws[k] = None
        refused(arena, ws, NULLPTR, f"outputMask[{k - 7}] is true but {name} is NULL")


def test_vectors_are_optional(arena):
    vs = views(arena)
    for training in (True, False):
        accepted(arena, vs[:2] + [None] * 5 + vs[7:], training)


PARAM_CASES = [
    ("gradOut dtype", dict(dts={"dy": "int32"}), ("gradOut dtype",)),
    ("input dtype", dict(dts={"x": "int32"}), ("input dtype",)),
    ("input not gradOut's", dict(dts={"x": F16}), ("input dtype", "gradOut's")),
    ("gradInput dtype", dict(dts={"dx": "int32"}), ("gradInput dtype",)),
    ("gradWeight dtype", dict(dts={"dw": "double"}), ("gradWeight dtype",)),
    ("gradBias dtype", dict(dts={"db": "int32"}), ("gradBias dtype",)),
    ("weight dtype", dict(dts={"w": "int32"}), ("weight dtype",)),
    ("running dtype", dict(dts={"rv": "double"}), ("runningVar dtype",)),
    ("save dtype", dict(dts={"si": "int32"}), ("saveInvstd dtype",)),
    ("gradOut shape", dict(shapes={"dy": (2, 4, 4)}), ("gradOut shape", "must equal input's")),
    ("gradInput shape", dict(shapes={"dx": (2, 4, 4)}), ("gradInput shape",)),
    ("weight shape", dict(shapes={"w": (3,)}), ("weight shape",)),
    ("running mean", dict(shapes={"rm": (5,)}), ("runningMean shape",)),
    ("running var", dict(shapes={"rv": (4, 1)}), ("runningVar shape",)),
    ("save mean", dict(shapes={"sm": (4, 1)}), ("saveMean shape",)),
    ("save invstd", dict(shapes={"si": (2,)}), ("saveInvstd shape",)),
    ("rank 1", dict(shape=(4,), shapes={k: (1,) for k in NAMES[2:7] + ("dw", "db")}),
     ("input rank 1",)),
    ("rank 9", dict(shape=(2, 3) + (1,) * 7), ("input rank 9",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(arena, views(arena, **kw), INVALID, *words)


def test_unrequested_outputs_are_not_checked(arena):
    """Beside but one rule: Ascend 950's CheckParams asks a given gradWeight and gradBias to
    share a dtype whatever the mask (RegbaseCheckDtypeSame's last check); their shapes and
    gradInput it checks only when requested."""
    vs = views(arena, dts={"dx": "int32", "dw": "double"}, shapes={"dx": (9,), "dw": (7,)})
    if ARCH == 3510:
        refused(arena, vs, INVALID, "gradBias dtype", mask=(False, False, True))
        vs = views(arena, dts={"dx": "int32"}, shapes={"dx": (9,), "dw": (7,)})
    accepted(arena, vs, mask=(False, False, True))


def test_saved_statistics_may_be_empty_in_inference(arena):
    """[0] saved statistics: the docs' inference case (checked on every part: the vendor's
    code checks them on Ascend 950 only)."""
    vs = views(arena, shapes={"sm": (0,), "si": (0,)})
    accepted(arena, vs, training=False)
    refused(arena, vs, INVALID, "saveMean shape")


def test_result_copies(arena):
    """Off Ascend 950 no dtype rule ties gradInput to gradOut, nor a shape gradWeight or
    gradBias to [C], in CheckParams: the results' ViewCopy does (561103; one element each
    passes beside C == 1). Ascend 950's CheckParams refuses them (161002)."""
    regbase = ARCH == 3510
    code = INVALID if regbase else INNER_NULLPTR
    refused(arena, views(arena, dts={"dx": F16}), code, "gradInput dtype")
    for k in ("dw", "db"):
        name = "gradWeight" if k == "dw" else "gradBias"
        refused(arena, views(arena, shapes={k: (2, 2)}), code, f"{name} shape")
    vs = views(arena, shape=(6, 1), shapes={"dw": (1, 1), "db": (1, 1, 1)})
    if regbase:
        refused(arena, vs, INVALID, "gradWeight shape")
    else:
        accepted(arena, vs)


def test_checks_run_in_the_vendor_order(arena):
    """The mask, then dtypes (gradOut, input, the requested outputs, the vectors), then
    formats, then shapes, then (off Ascend 950) the copies."""
    vs = views(arena, dts={"w": "int32", "dx": "int32"}, shapes={"dy": (9, 9)})
    refused(arena, vs, INVALID, "gradInput dtype")
    vs = views(arena, dts={"w": "int32"}, shapes={"dy": (9, 9)})
    refused(arena, vs, INVALID, "weight dtype")
    vs = views(arena, shapes={"dy": (9, 9), "w": (5,)})
    refused(arena, vs, INVALID, "gradOut shape")


def test_ascend_950_dtype_relations(arena):
    """RegbaseCheckDtypeSame on Ascend 950 (161002); the other parts take any listed dtypes
    (the docs' 'same as gradOut' for them is not in the code)."""
    cases = [
        (dict(dt=F16, dts={"w": "bf16"}), "weight dtype"),
        (dict(dt=F16, dts={"rm": F16}), "runningVar dtype"),
        (dict(dt=F16, dts={"si": F16}), "saveInvstd dtype"),
        (dict(dt=F32, dts={"w": F16}), "weight dtype"),
        (dict(dt=F16, dts={"dx": F16, "dw": F16}), "gradBias dtype"),
        (dict(dt=F16, dts={"w": F32, "dw": F16, "db": F16}), "gradWeight dtype"),
    ]
    for kw, word in cases:
        if "bf16" in kw["dts"].values():
            kw["dts"] = {k: (BF16 if v == "bf16" else v) for k, v in kw["dts"].items()}
            if not BF16_PART:
                continue
        vs = views(arena, **kw)
        if ARCH == 3510:
            refused(arena, vs, INVALID, word)
        else:
            accepted(arena, vs)


def fmt_tensor(arena, view, fmt, shape=None):
    shape = list(view.shape if shape is None else shape)
    strides = [int(math.prod(shape[i + 1:])) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), len(shape), lib.ACL_FLOAT,
                            ffi.new("int64_t[]", strides), 0, fmt,
                            ffi.new("int64_t[]", [view.n]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def test_formats(arena):
    """CheckFormat: gradOut's format input's, gradInput's gradOut's; on Ascend 950 rank 5
    NCDHW or NDHWC; no private format; NHWC/NDHWC only on Ascend 950 (docs)."""
    vs = views(arena, shape=(2, 4, 3, 2, 2))
    nd = [fmt_tensor(arena, vs[k], lib.ACL_FORMAT_ND) for k in (0, 1, 7)]
    nc = [fmt_tensor(arena, vs[k], lib.ACL_FORMAT_NCDHW) for k in (0, 1, 7)]
    if ARCH == 3510:
        refused(arena, [nd[0], nd[1]] + vs[2:7] + [nd[2]] + vs[8:], INVALID, "rank 5", "NCDHW")
    else:
        accepted(arena, [nd[0], nd[1]] + vs[2:7] + [nd[2]] + vs[8:])
    refused(arena, [nc[0], nd[1]] + vs[2:7] + [nc[2]] + vs[8:], INVALID, "gradOut's format")
    refused(arena, [nc[0], nc[1]] + vs[2:7] + [nd[2]] + vs[8:], INVALID, "gradInput's format")
    accepted(arena, [nc[0], nc[1]] + vs[2:7] + [nd[2]] + vs[8:], mask=(False, True, True))
    accepted(arena, [nc[0], nc[1]] + vs[2:7] + [nc[2]] + vs[8:])
    v4 = views(arena, shape=(2, 4, 3, 2))
    pz = [fmt_tensor(arena, v4[k], lib.ACL_FORMAT_FRACTAL_NZ) for k in (0, 1, 7)]
    refused(arena, pz[:2] + v4[2:7] + pz[2:] + v4[8:], INVALID, "private")
    hw = [fmt_tensor(arena, v4[k], lib.ACL_FORMAT_NHWC) for k in (0, 1, 7)]
    if ARCH == 3510:   # channels last: C = 2, the last dim
        refused(arena, hw[:2] + v4[2:7] + hw[2:] + v4[8:], INVALID, "weight shape")
    else:
        refused(arena, hw[:2] + v4[2:7] + hw[2:] + v4[8:], INVALID, "NHWC", "Ascend 950")


@only_where(ARCH == 3510)   # NHWC is Ascend 950's (its own run or its child)
def test_ascend_950_channels_last_matches_channels_first(arena):
    dy, x, w, rm, rv, sm, si = inputs((2, 3, 4, 5), F32)
    last = [np.ascontiguousarray(np.moveaxis(a, 1, 3)) for a in (dy, x)]
    vdy, vx = DevView(arena, last[0]), DevView(arena, last[1])
    vdx = DevView(arena, shape=last[0].shape, dtype=F32, sentinel=SENTINEL)
    vec = [DevView(arena, a) for a in (w, rm, rv, sm, si)]
    vdw, vdb = DevView(arena, shape=(3,), dtype=F32), DevView(arena, shape=(3,), dtype=F32)
    h = [fmt_tensor(arena, v, lib.ACL_FORMAT_NHWC) for v in (vdy, vx, vdx)]
    for training in (True, False):
        run_phase_two(arena, P2, phase_one(h[0], h[1], *vec, training, 1e-5,
                                           arena.bool_array(ALL), h[2], vdw, vdb))
        want = device_chain(dy, x, w, rm, rv, sm, si, training, 1e-5)
        same_bits(vdx.read(), np.moveaxis(want[0], 1, 3), F32)
        same_bits(vdw.read(), want[1], F32)
        same_bits(vdb.read(), want[2], F32)


def test_refusals_leak_nothing(arena):
    """Every refusal above returns before an executor exists (the autouse leak check)."""
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(arena, views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_dead_tensor_is_refused(arena):
    vs = views(arena)
    arena.destroy_tensor(vs[3].handle)
    try:
        refused(arena, vs, INVALID, "runningMean", "not a live aclTensor")
    finally:
        v = vs[3]
        v.handle = arena.tensor(v.shape, v.dtype, v.strides, v.offset, v.n, v.ptr)


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*args(arena, views(arena, dt=dt,
                                                 dts={"dw": dt, "db": dt})))
        ok = dt != BF16 or BF16_PART
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_host/op_api/test_aclnn_batchnorm_backward.cpp: (name, gradOut, input, weight,
# runningMean, runningVar, saveMean, saveInvstd, training, mask, gradInput, gradWeight,
# gradBias, expected status); a tensor is (shape, dtype, format) or None. Its calls without an
# EXPECT (infer_5d; the two ascend950PR cases) are listed with the status the op_api's code
# gives on that case's part ("950": Ascend 950's, others: the rest).
V5 = ((5,), "f32", "ND")
V4 = ((4,), "f32", "ND")
NCHW, NCDHW = ((3, 5, 3, 8), "f32", "NCHW"), ((3, 5, 3, 8, 9), "f32", "NCDHW")
NCHW16 = ((3, 5, 3, 8), "f16", "NCHW")
X6 = ((3, 5, 3, 8, 2, 4), "f32", "NCHW")
X7 = ((3, 5, 4, 6, 7, 2, 2), "f32", "NCHW")
X4 = ((3, 5, 4, 6), "f32", "NCHW")
VEC = (V5, V5, V5, V5, V5)
NOVEC = (None,) * 5
T3 = (True, True, True)
UT_CASES = [
    ("false_bias", NCHW, NCHW, *VEC, True, (True, True, False), NCHW, V5, V5, OK),
    ("false_weight", NCHW, NCHW, *VEC, True, (True, False, True), NCHW, V5, V5, OK),
    ("false_input", NCHW, NCHW, *VEC, True, (False, True, True), NCHW, V5, V5, OK),
    ("train_5d", NCDHW, NCDHW, *VEC, True, T3, NCDHW, V5, V5, OK),
    ("infer_5d", NCDHW, NCDHW, *VEC, False, T3, NCDHW, V5, V5, OK),
    ("float32_4d", NCHW, NCHW, *VEC, True, T3, NCHW, V5, V5, OK),
    ("float16_4d", NCHW16, NCHW16, *VEC, True, T3, NCHW16, V5, V5, OK),
    ("float32_3d", ((3, 5, 20), "f32", "ND"), ((3, 5, 20), "f32", "ND"), *VEC, True, T3,
     ((3, 5, 20), "f32", "ND"), V5, V5, OK),
    ("float16_3d", ((3, 5, 20), "f16", "ND"), ((3, 5, 20), "f16", "ND"), *VEC, True, T3,
     ((3, 5, 20), "f16", "ND"), V5, V5, OK),
    ("float32_2d", ((90, 5), "f32", "ND"), ((90, 5), "f32", "ND"), *VEC, True, T3,
     ((90, 5), "f32", "ND"), V5, V5, OK),
    ("float16_2d", ((90, 5), "f16", "ND"), ((90, 5), "f16", "ND"), *VEC, True, T3,
     ((90, 5), "f16", "ND"), V5, V5, OK),
    ("err_null", None, None, *NOVEC, True, T3, NCHW, V5, V5, NULLPTR),
    ("err_int32", ((3, 5, 3, 8), "i32", "NCHW"), ((3, 5, 3, 8), "i32", "NCHW"), *NOVEC, True,
     T3, ((3, 5, 3, 8), "i32", "NCHW"), V5, V5, INVALID),
    ("weight_int32", ((90, 5), "f16", "ND"), ((90, 5), "f16", "ND"), ((5,), "i32", "ND"),
     V5, V5, V5, V5, True, T3, ((90, 5), "f16", "ND"), V5, V5, INVALID),
    ("mean_int32", ((90, 5), "f16", "ND"), ((90, 5), "f16", "ND"), V5, ((5,), "i32", "ND"),
     V5, V5, V5, True, T3, ((90, 5), "f16", "ND"), V5, V5, INVALID),
    ("var_int32", ((90, 5), "f16", "ND"), ((90, 5), "f16", "ND"), V5, V5,
     ((5,), "i32", "ND"), V5, V5, True, T3, ((90, 5), "f16", "ND"), V5, V5, INVALID),
    ("err_shape", ((3, 4, 5, 6, 7, 8, 9, 10, 11), "f32", "NCHW"),
     ((3, 4, 5, 6, 7, 8, 9, 10, 11), "f32", "NCHW"), *NOVEC, True, T3,
     ((3, 4, 5, 6, 7, 8, 9, 10, 11), "f32", "NCHW"), V5, V5, INVALID),
    ("mask1_error", X6, X6, *NOVEC, True, T3, None, V5, V5, NULLPTR),
    ("mask1_int32", X6, X6, *NOVEC, True, T3, ((3, 5, 3, 8, 2, 4), "i32", "NCHW"), V5, V5,
     INVALID),
    ("mask2_error", X6, X6, *NOVEC, True, T3, X6, None, V5, NULLPTR),
    ("mask2_int32", X6, X6, *NOVEC, True, T3, X6, ((5,), "i32", "ND"), V5, INVALID),
    ("mask3_error", X6, X6, *NOVEC, True, T3, X6, V5, None, NULLPTR),
    ("mask3_int32", X6, X6, *NOVEC, True, T3, X6, V5, ((5,), "i32", "ND"), INVALID),
    ("float32_7d", X7, X7, *VEC, True, T3, X7, V5, V5, OK),
    ("err_dim_var", X4, X4, V5, V5, V4, V5, V5, True, T3, X4, V5, V5, INVALID),
    ("err_dim_mean", X4, X4, V5, V4, V5, V5, V5, True, T3, X4, V5, V5, INVALID),
    ("err_dim_weight", X4, X4, V4, V5, V5, V5, V5, True, T3, X4, V5, V5, INVALID),
    ("910B2_train_5d", NCDHW, NCDHW, *VEC, True, T3, NCDHW, V5, V5, OK),
    ("950_infer", X4, X4, *VEC, False, T3, X4, V5, V5, OK),
    ("950_infer_var", X4, X4, V5, V5, V4, V5, V5, False, T3, X4, V5, V5, INVALID),
    ("empty_mask", NCHW, NCHW, *VEC, True, (), NCHW, V5, V5, NULLPTR),
    ("950_shape_error_mean", X4, X4, V5, V5, V5, V4, V5, False, T3, X4, V5, V5, INVALID),
    ("950_shape_error_invstd", X4, X4, V5, V5, V5, V5, V4, False, T3, X4, V5, V5, INVALID),
    ("950_shape_error_weight_out", X4, X4, *VEC, False, T3, X4, V4, V5, "copy"),
    ("950_shape_error_bias_out", X4, X4, *VEC, False, T3, X4, V5, V4, "copy"),
]
@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, dy, x, w, rm, rv, sm, si, training, mask, dx, dw, db, code = case
    if code == "copy":   # gradWeight/gradBias [4] for C = 5: CheckParams on Ascend 950,
        code = INVALID if ARCH == 3510 else INNER_NULLPTR   # the result's copy elsewhere
    ts = [ut_tensor(arena, s) for s in (dy, x, w, rm, rv, sm, si)]
    outs = [ut_tensor(arena, s) for s in (dx, dw, db)]
    rc, _, ex = phase_one(*ts, training, 1e-5, arena.bool_array(mask), *outs)
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or formats or channels_last or result_copies or "
                                   "dtype_relations or vendor_op_api_unit_test or 16_bits")
