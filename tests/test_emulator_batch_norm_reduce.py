"""The emulator's aclnnBatchNormReduce through raw calls: phase one's checks, their order,
codes and messages (hicann/ops-nn norm/bn_training_reduce/op_api/aclnn_batch_norm_reduce.cpp),
what is written (sum and squareSum only; for an empty call zeros, by Fill kernels), the
numbers against a float64 reference and bit for bit against the emulator's stated order
(docs/emulator.md), phase one's workspace size as a device reports it (the op_api's graph and,
on Ascend 950, op_host/arch35's tiling with its deterministic group templates, stated here in
Python), and the vendor's op_api unit test cases replayed; the other parts in their own
processes.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import (ACL_DT, BF16, F16, F32, INVALID, NULLPTR, OK,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_batch_norm_backward import bits
from test_emulator_batch_norm_stats import lane_sum
from test_emulator_workspace_size_bn import Graph
from _emu_aclnn import (SOC, both_phases_without_a_device, refused_by, run_phase_two,
                        workspace_attempt)
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts
from _workspace_model import (ARCH, CORES, LIB_API_WORKSPACE, align, fills_ws,
                              is_contiguous, max_allocator)

P1 = lib.aclnnBatchNormReduceGetWorkspaceSize
P2 = lib.aclnnBatchNormReduce
CALL = "aclnnBatchNormReduceGetWorkspaceSize"
NO_CONTEXT = 361001  # ACL_ERROR_RT_CONTEXT_NULL: a kernel launched on a thread with no device
SENTINEL = -77.0
REGBASE = ARCH == 3510  # Ascend 950: the AscendC kernel and its tiling's workspace
NCHW, NHWC, ND = lib.ACL_FORMAT_NCHW, lib.ACL_FORMAT_NHWC, lib.ACL_FORMAT_ND
# BF16 where the part computes it (the op_api's list has it on every part; the Atlas training
# and inference series have no BF16 at all): test_part_dtype_list checks the refusal
DTYPES = [F32, F16] + ([BF16] if ARCH in (2201, 3510) else [])
f = np.float32


def phase_one(x, s, q, ws=True, ex=True):
    return aclnn_phase_one(P1, x, s, q, ws=ws, ex=ex)


def formatted(arena, view, fmt):
    """An aclTensor over DevView ``view``'s memory and layout in format ``fmt`` (DevView's own
    is ND, which x may not be)."""
    shape, strides = list(view.shape), list(view.strides)
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape or [0]), len(shape), ACL_DT[view.dtype],
                            ffi.new("int64_t[]", strides or [0]), view.offset, fmt,
                            ffi.new("int64_t[]", [view.n]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


def sample(shape, dt, seed=0, offset=0.5):
    rng = np.random.default_rng(seed + sum(shape))
    return (rng.standard_normal(shape) * 2 + offset).astype(dt)


def outputs(arena, c, kind="contig", slack=3):
    return [DevView(arena, shape=(c,), dtype=F32, sentinel=SENTINEL, kind=kind, slack=slack)
            for _ in range(2)]


def call(arena, x, fmt=NCHW, kind="contig", out_kind="contig"):
    vx = DevView(arena, x, kind=kind)
    vs, vq = outputs(arena, x.shape[3 if fmt == NHWC else 1], out_kind)
    run_phase_two(arena, P2, phase_one(formatted(arena, vx, fmt), vs, vq))
    assert np.array_equal(bits(vx.read()), bits(x))
    return vs.read(), vq.read()


def rows(x, fmt=NCHW):
    """x's channels as float32 rows of R values, in the emulator's order over the other dims
    (x's logical order)."""
    axis = 3 if fmt == NHWC else 1
    x = np.moveaxis(np.asarray(x, np.float32), axis, 0)
    return x.reshape(x.shape[0], -1)


# ---- the numbers ------------------------------------------------------------------------------

def reference(x, fmt=NCHW):
    """The docs' sum and squareSum in float64, and the magnitudes a float32 sum's error is
    bounded by: R - 1 roundings of partial sums no larger than the sum of magnitudes, one more
    for each square (any summation order)."""
    r64 = rows(x, fmt).astype(np.float64)
    n = r64.shape[1]
    eps = 2.0 ** -24
    return ((r64.sum(1), n * eps * np.abs(r64).sum(1)),
            ((r64 * r64).sum(1), (n + 1) * eps * (r64 * r64).sum(1)))


def emulator_order(x, fmt=NCHW, level=0):
    """The emulator's stated chain (docs/emulator.md): the float32 values and their rounded
    squares, each summed on Ascend 950 in its kernel's order (device_order; phase one refuses
    where no tiling fits), elsewhere (TBE kernels, not public) in norm_rows.h's lane order."""
    if REGBASE:
        t = tiling(x.shape, 3 if fmt == NHWC else 1, x.dtype.itemsize)
        assert t["kind"], x.shape
        return device_order(rows(x, fmt), t, level)
    return plain_order(x, fmt)


def plain_order(x, fmt=NCHW):
    r = rows(x, fmt)
    return lane_sum(r), lane_sum((r * r).astype(f))


SHAPES = [(4, 3, 5, 2), (2, 6, 3, 4), (1, 64, 1, 1), (1, 5, 2, 5), (3, 1, 7, 11),
          (2, 2, 1, 1), (1, 3, 33, 17)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("fmt", [NCHW, NHWC], ids=["NCHW", "NHWC"])
def test_against_the_float64_reference(arena, dt, shape, fmt):
    x = sample(shape, dt, offset=3.0)
    got = call(arena, x, fmt)
    for g, (want, bound) in zip(got, reference(x, fmt)):
        assert np.all(np.abs(g.astype(np.float64) - want) <= bound), (g, want, bound)
    for g, w in zip(got, emulator_order(x, fmt)):
        assert np.array_equal(bits(g), bits(w))


def test_nhwc_takes_the_last_dim_as_the_channel(arena):
    """The same memory as NCHW and as NHWC: other channels, other sums."""
    x = sample((2, 3, 4, 5), F32)
    s_nchw, _ = call(arena, x, NCHW)
    s_nhwc, q_nhwc = call(arena, x, NHWC)
    assert s_nchw.shape == (3,) and s_nhwc.shape == (5,)
    np.testing.assert_allclose(s_nhwc, x.astype(np.float64).sum((0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(q_nhwc, (x.astype(np.float64) ** 2).sum((0, 1, 2)), rtol=1e-5)


def test_large_values_and_infinities(arena):
    """Squares past float's range are inf; a NaN reaches only its own channel."""
    x = np.full((1, 3, 2, 2), 1e20, F32)
    x[0, 1] = 1.0
    x[0, 2, 0, 0] = np.nan
    s, q = call(arena, x)
    assert np.isinf(q[0]) and s[0] == f(4e20) and (s[1], q[1]) == (4.0, 4.0)
    assert np.isnan(s[2]) and np.isnan(q[2])


@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    x = sample((2, 6, 3, 4), F16)
    for a, b in zip(call(arena, x), call(arena, x, kind=kind, out_kind="stepped")):
        assert np.array_equal(bits(a), bits(b))


def test_bits_do_not_depend_on_the_thread_count(arena):
    x = sample((8, 40, 3, 11), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, x)
    lib.aclemuSetNumThreads(4)
    four = call(arena, x)
    for a, b in zip(one, four):
        assert np.array_equal(bits(a), bits(b))


EMPTY = [((0, 3, 2, 2), (3,)), ((2, 3, 0, 4), (3,)), ((2, 0, 2, 2), (0,)), ((0, 3), (3,)),
         ((2, 3, 2, 2), (0,))]


@pytest.mark.parametrize("shape,out", EMPTY, ids=str)
def test_empty_call_fills_zeros(arena, shape, out):
    """An empty x, sum or squareSum: both outputs filled with 0 before any check but the NULLs
    (x of rank 2 passes; an empty sum beside a full x too), the Fills each with their copy
    (a workspace only where the Fill's tiling asks one, Ascend 950, or a result stays in it);
    the Fills are kernels, so both phases on a thread with no device fail in phase two."""
    x = DevView(arena, np.ones(shape, F32))
    vs = DevView(arena, shape=out, dtype=F32, sentinel=SENTINEL)
    vq = DevView(arena, shape=(3,), dtype=F32, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(x, vs, vq))
    assert np.array_equal(vs.read(), np.zeros(out, F32))
    assert np.array_equal(vq.read(), np.zeros(3, F32))
    want = max_allocator(fills_ws([vs, vq]))
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (x, vs, vq), ffi.NULL,
                                                    workspace=arena.malloc(want) if want else None)
    assert (rc, ws, rc2) == (OK, want, NO_CONTEXT), msg


def test_both_outputs_empty_launch_nothing(arena):
    x = DevView(arena, np.ones((2, 0, 2, 2), F32))
    vs, vq = (DevView(arena, shape=(0,), dtype=F32) for _ in range(2))
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (x, vs, vq), ffi.NULL)
    assert (rc, ws, rc2) == (OK, 0, OK), msg


def test_a_kernel_needs_a_device(arena):
    vx = DevView(arena, sample((2, 3, 2, 2), F32))
    vs, vq = outputs(arena, 3, "stepped")
    x = formatted(arena, vx, NCHW)
    rc, want, ex = phase_one(x, vs, vq)
    assert rc == OK and lib.aclDestroyAclOpExecutor(ex) == OK, last_msg()
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (x, vs, vq), ffi.NULL,
                                                    workspace=arena.malloc(want) if want else None)
    assert (rc, ws, rc2) == (OK, want, NO_CONTEXT), msg


# ---- phase one -------------------------------------------------------------------------------

ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE}


def views(arena, shape=(2, 4, 3, 3), dt=F32, fmt=NCHW, shapes=None, dts=None, fmts=None):
    c = shape[3 if fmt == NHWC else 1] if len(shape) == 4 else 4
    shapes = {"x": shape, "sum": (c,), "sq": (c,)} | (shapes or {})
    dts = {"x": dt, "sum": F32, "sq": F32} | (dts or {})
    fmts = {"x": fmt, "sum": ND, "sq": ND} | (fmts or {})
    out = []
    for k in ("x", "sum", "sq"):
        d = dts[k]
        v = (DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[d])
             if d in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=d))
        out.append(v if fmts[k] == ND or d in ACL_OTHER else formatted(arena, v, fmts[k]))
    return out


def refused(vs, code, *words, **kw):
    return refused_by(phase_one, CALL, vs, code, *words, **kw)


def test_out_pointers_first(arena):
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*vs, **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "x"), (1, "sum"), (2, "squareSum")])
def test_required_tensors_are_161001(arena, k, name):
    vs = views(arena, dts={"x": "int32"})
    vs[k] = None
    refused(vs, NULLPTR, f"{name} is NULL")


PARAM_CASES = [
    ("x dtype", dict(dts={"x": "int32"}), ("x dtype", "INT32")),
    ("x dtype double", dict(dts={"x": "double"}), ("x dtype", "DOUBLE")),
    ("sum dtype", dict(dts={"sum": F16}), ("sum dtype FLOAT16", ": FLOAT")),
    ("squareSum dtype", dict(dts={"sq": "double"}), ("squareSum dtype", "DOUBLE")),
    ("x format ND", dict(fmt=ND), ("x's format", "NCHW, NHWC")),
    ("x format NCDHW", dict(fmts={"x": lib.ACL_FORMAT_NCDHW}), ("x's format",)),
    ("sum format", dict(fmts={"sum": NCHW}), ("sum's format", ": ND")),
    ("squareSum format", dict(fmts={"sq": NHWC}), ("squareSum's format", ": ND")),
    ("x rank 3", dict(shape=(2, 4, 3)), ("x rank 3 must be 4",)),
    ("x rank 5", dict(shape=(2, 4, 3, 1, 1)), ("x rank 5",)),
    ("sum rank", dict(shapes={"sum": (4, 1)}), ("sum shape", "rank 1")),
    ("squareSum rank", dict(shapes={"sq": (1, 4)}), ("squareSum shape", "rank 1")),
    ("sum shape", dict(shapes={"sum": (5,)}), ("sum shape", "must be [C]")),
    ("squareSum shape", dict(shapes={"sq": (3,)}), ("squareSum shape", "must be [C]")),
    ("NHWC's C is dim 3", dict(fmt=NHWC, shape=(2, 4, 3, 5), shapes={"sum": (4,)}),
     ("sum shape", "dim 3 of NHWC")),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(views(arena, **kw), INVALID, *words)


def test_checks_run_in_the_vendor_order(arena):
    """NULLs, the empty branch, then dtypes (x, sum, squareSum), formats, shapes."""
    vs = views(arena, dts={"x": "int32"})
    refused([vs[0], None, vs[2]], NULLPTR, "sum is NULL")
    refused(views(arena, dts={"sum": "int32", "sq": "int32"}, fmt=ND), INVALID, "sum dtype")
    refused(views(arena, fmt=ND, shapes={"sum": (9,)}), INVALID, "x's format")
    refused(views(arena, fmts={"sq": NCHW}, shapes={"sum": (9,)}), INVALID,
            "squareSum's format")
    refused(views(arena, shapes={"sum": (9,), "sq": (2, 2)}), INVALID, "squareSum shape",
            "rank 1")
    # the empty branch comes before every one of these
    vx = DevView(arena, shape=(0, 4), dtype=F32, acl_dtype=lib.ACL_INT32)
    rc, _, ex = phase_one(vx, *views(arena, shapes={"sum": (9,)})[1:])
    assert rc == OK and lib.aclDestroyAclOpExecutor(ex) == OK, last_msg()


@pytest.mark.parametrize("dts,shapes,words", [
    ({"sum": F16}, {}, ("sum dtype FLOAT16", "docs/aclnnBatchNormReduce.md")),
    ({"sq": "int32"}, {}, ("squareSum dtype", "INT32")),
    ({}, {"sq": (1,) * 9}, ("squareSum rank 9 is more than 8",))], ids=str)
def test_empty_call_stricter_on_the_outputs(arena, dts, shapes, words):
    """Stricter than the op_api (docs/emulator.md): the empty branch fills only FLOAT outputs
    (the docs' dtype) of rank 8 at most."""
    refused(views(arena, shape=(0, 4, 2, 2), dts=dts, shapes=shapes), INVALID, *words)


def test_refusals_leak_nothing(arena):
    """No executor from a refusal (no_leaks, autouse, checks the live objects after)."""
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*views(arena, **kw))
        assert rc == INVALID and ex == ffi.NULL


def test_part_dtype_list(arena):
    """BF16 x where the part computes BF16 (Atlas A2/A3, Ascend 950); the op_api's list has it
    on every part, the Atlas training and inference series have none."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        ok = dt != BF16 or ARCH in (2201, 3510)
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


# norm/bn_training_reduce/tests/ut/op_host/op_api/test_aclnn_batch_norm_reduce.cpp: (name, x,
# sum, squareSum, expected status); BF16 where the part has it (SOC: the test's default part)
UT_CASES = [
    ("l2_batch_norm_reduce_bfloat16", ((3, 5, 3, 8), "bf16", "NCHW"), ((5,), "f32", "ND"),
     ((5,), "f32", "ND"), OK if ARCH in (2201, 3510) else INVALID),
    ("l2_batch_norm_reduce_nhwc", ((3, 3, 8, 5), "f32", "NHWC"), ((5,), "f32", "ND"),
     ((5,), "f32", "ND"), OK),
]


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, *specs, code = case
    rc, _, ex = phase_one(*(ut_tensor(arena, s) for s in specs))
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- phase one's workspace size ----------------------------------------------------------------

# Ascend 950's vector cores and UB bytes (GetCoreNumAiv, GetCoreMemSize(UB)): hicann/runtime
# src/platform/platform_config Ascend950PR_9599.ini vector_core_cnt, ub_size
UB_950 = 253952
KCACHE = 16 * 1024  # bn_training_reduce_tiling_public.cpp kCacheBytes


def cdiv(a, b):
    return -(-a // b)


def pattern(shape, caxis):
    """NormalizePattern: (sizes, is-reduce flags) with dims of 1 dropped, neighbours of one
    kind fused, an A first, an R present."""
    axes = [(d, i != caxis) for i, d in enumerate(shape) if d != 1] or [(1, False)]
    fused = []
    for d, r in axes:
        if fused and fused[-1][1] == r:
            fused[-1] = (fused[-1][0] * d, r)
        else:
            fused.append((d, r))
    if fused[0][1]:
        fused.insert(0, (1, False))
    if not any(r for _, r in fused):
        fused = fused + [(1, True)] if fused == [(1, False)] else [(1, False), (1, True)] + fused
    return [d for d, _ in fused], [r for _, r in fused]


def tiling(shape, caxis, ds, cores=None, ub=UB_950):
    """op_host/arch35's tiling for x of ``shape`` (channel dim ``caxis``, ``ds`` bytes per
    value): TryBuildSmallRConfig, then ComputeBNTrainingReducePublicTiling. A dict: "kind"
    ("small_r", "normal", "group", or None where no UB split fits) and what the kernel's order
    reads: tail_r, lanes (aUbFactorAlign * innerAProdAlign), bundle (rUbFactorAlign *
    innerRProdAlign), r_fac, the split R axis's size S, the whole R inside it (inner, padded
    inner_al), r_loops, R, groups (rGroupCnt), p2 (Phase 2's aUbFactorP2)."""
    cores = CORES if cores is None else cores
    n, _, h, w = shape
    if caxis == 1 and n == 1 and h * w in (1, 3, 10, 17):
        return {"kind": "small_r"}
    ax, red = pattern(shape, caxis)
    k = len(ax)
    tail_r, blk = k % 2 == 0, 32 // ds
    a_idx = [i for i in range(k) if not red[i]]
    r_idx = [i for i in range(k) if red[i]]
    total_a = int(np.prod([ax[i] for i in a_idx]))

    def walk(idx, target, align_last, stop):
        """Inner axes taken whole, from the last of ``idx`` outwards, while ``stop`` allows;
        (split index, inner product aligned)."""
        inner, pos = 1, len(idx) - 1
        while not stop(ax[idx[pos]] * inner, target) and pos > 0:
            size = ax[idx[pos]]
            inner *= cdiv(size, blk) * blk if (pos == len(idx) - 1 and align_last) else size
            pos -= 1
        return idx[pos], inner

    a_target = 256 // ds
    while True:
        t = min(a_target, cdiv(total_a, cores)) if tail_r else a_target
        a_split, a_inner = walk(a_idx, max(t, 1), not tail_r, lambda s, tg: s >= tg)
        at_last_a = a_split == a_idx[-1] and not tail_r
        a_fac = max(min(cdiv(max(t, 1), a_inner), ax[a_split]), 1)
        a_al = cdiv(a_fac, blk) * blk if at_last_a else a_fac
        ok = False
        unit_a = a_al * a_inner
        avail = ub - KCACHE
        if ub > KCACHE and unit_a * 4 < avail:
            r_max = (avail - unit_a * 4) // (unit_a * (2 * ds + 8))
            if r_max >= 1:
                r_split, r_inner = walk(r_idx, r_max, tail_r, lambda s, tg: s > tg)
                at_last_r = tail_r and r_split == r_idx[-1]
                r_fac = min(r_max // r_inner, ax[r_split])
                if at_last_r and r_fac < ax[r_split]:
                    r_fac -= r_fac % blk
                if r_fac >= 1:
                    r_al = cdiv(r_fac, blk) * blk if at_last_r else r_fac
                    ok = True
                    if r_fac == ax[r_split] and r_split == r_idx[0]:  # R fully loaded
                        tgt = min(avail // (r_al * r_inner * (2 * ds + 8) + 4), total_a,
                                  KCACHE // 4)
                        if tgt > unit_a:
                            a_split, a_inner = walk(a_idx, tgt, not tail_r,
                                                    lambda s, tg: s >= tg)
                            tot = min(tgt // a_inner, ax[a_split])
                            if a_split == a_idx[-1] and not tail_r:
                                tot -= tot % blk
                                ok = tot > 0
                            a_fac = a_al = tot
                    if ok:
                        r_loops = int(np.prod([ax[i] for i in r_idx if i < r_split])) * \
                            cdiv(ax[r_split], r_fac)
                        unit_a = a_al * a_inner
                        unit = unit_a * r_al * r_inner
                        need = KCACHE + 2 * (cdiv(unit * ds, 32) * 32) + \
                            2 * (cdiv(unit * 4, 32) * 32) + cdiv(unit_a * 4, 32) * 32
                        caches = r_loops.bit_length()
                        ok = need <= ub and caches > 0 and caches * unit_a * 4 <= KCACHE
        if ok:
            break
        if a_target == 1:
            return {"kind": None}
        a_target = max(1, a_target // 2)
    t = {"kind": "normal", "tail_r": tail_r, "lanes": unit_a, "bundle": r_al * r_inner,
         "r_fac": r_fac, "S": ax[r_split], "inner_al": r_inner, "r_loops": r_loops,
         "inner": int(np.prod([ax[i] for i in r_idx if i > r_split])),
         "R": int(np.prod([ax[i] for i in r_idx]))}
    a_loops = int(np.prod([ax[i] for i in a_idx if i < a_split])) * cdiv(ax[a_split], a_fac)
    if not (a_loops <= cores // 2 and r_loops >= 2):
        return t
    outer = a_loops * r_loops
    blocks = cdiv(outer, cdiv(outer, cores))
    up = cdiv(blocks, a_loops) * a_loops
    blocks = up if up <= cores else blocks - blocks % a_loops
    g = blocks // a_loops
    # Phase2Process: the preIn buffer's floats over the groups (down to 8s), within the out
    # and tmp buffers and the channels
    p2 = cdiv(unit * ds, 32) * 8 // g
    p2 = min(p2 // 8 * 8 if p2 >= 8 else p2, cdiv(unit_a * 4, 32) * 8, cdiv(unit * 4, 32) * 8,
             total_a)
    return dict(t, kind="group", groups=g, p2=max(p2, 1))


def no_ub_split(shape, caxis, ds, cores=None, ub=UB_950):
    """Where op_host/arch35's ComputeUbSplit finds no split (TilingFunc's GRAPH_FAILED), from
    its arithmetic rather than its steps (tiling above): only tail-R patterns fail (x NCHW
    with H * W > 1, or C 1: the other dims one reduced axis; tail-A patterns pad no R axis),
    and only with every tried A target 1 (ceil(C / cores): C at most the cores), a tile one
    channel whose ComputeRiMax leaves rMax values; there the last reduced axis of L values
    fails where it fits rMax but not padded to the 32-byte block: with a reduced N before it
    the R split finds no factor, without one FitsUb fails. A target of 2 or more (C past the
    cores) is tried first and splits such an L at its own rMax, which fits."""
    cores = CORES if cores is None else cores
    n, c, h, w = shape
    if caxis == 1 and n == 1 and h * w in (1, 3, 10, 17):  # TryBuildSmallRConfig
        return False
    if shape[caxis] == 1:
        last_r = int(np.prod(shape))
    elif caxis == 1 and h * w > 1:
        last_r = h * w
    else:
        return False
    blk = 32 // ds
    r_max = (ub - KCACHE - 4) // (2 * ds + 8)  # aUnit 1: one FLOAT output per tile
    return shape[caxis] <= cores and last_r <= r_max < cdiv(last_r, blk) * blk


def group_rows(shape, caxis, ds, cores=None, ub=UB_950):
    """The row groups of op_host/arch35's group templates for x of ``shape``, 0 where the
    small-R or normal templates run."""
    t = tiling(shape, caxis, ds, cores, ub)
    return t["groups"] if t["kind"] == "group" else 0


# ---- Ascend 950's orders (op_kernel/arch35), stated over all channels at once -------------

def adjacent(v):
    """The adjacent-pair tree along the last axis (a power of two long): the cache tree's
    levels, a data block's and a register's Reduce (norm_rows.h's stated lane tree)."""
    while v.shape[-1] > 1:
        v = (v[..., 0::2] + v[..., 1::2]).astype(f)
    return v[..., 0]


def halved(v, width=1):
    """Rows of ``width`` along the last axis (a power of two of them) added by halves."""
    while v.shape[-1] > width:
        h = v.shape[-1] // 2
        v = (v[..., :h] + v[..., h:]).astype(f)
    return v


def sixteens(v, width=1):
    """Rounds of 16 rows (of ``width``) to one, by halves within each 16, while 16 remain."""
    while v.shape[-1] >= 16 * width:
        g = v.reshape(v.shape[:-1] + (v.shape[-1] // (16 * width), 16 * width))
        v = halved(g, width).reshape(v.shape[:-1] + (-1,))
    return v


def tail_folded(v):
    """ReduceSum's first step: the values past the largest power of two added onto the
    front."""
    n = v.shape[-1]
    m = 1 << (n.bit_length() - 1)
    head = v[..., :m].copy()
    head[..., :n - m] = (head[..., :n - m] + v[..., m:]).astype(f)
    return head


def ra_sum(v, lanes):
    """ReduceSum<float, RA> of each lane's column (the last axis) with dimA = lanes: 16-row
    rounds first only in the LessThanVL form (33 to 64 lanes)."""
    if v.shape[-1] == 1:
        return v[..., 0]
    v = tail_folded(v)
    if 32 < lanes <= 64:
        v = sixteens(v)
    return halved(v)[..., 0]


def ar_sum(v):
    """ReduceSum<float, AR> of each row (the last axis, 1 or a multiple of 8 long)."""
    n = v.shape[-1]
    if n == 1:
        return v[..., 0]
    if n < 32:  # the data blocks added in order onto the first, then its Reduce
        acc = v[..., :8]
        for b in range(8, n, 8):
            acc = (v[..., b:b + 8] + acc).astype(f)
        return adjacent(acc)
    if n <= 64:
        return adjacent(np.concatenate([v, np.zeros(v.shape[:-1] + (64 - n,), f)], -1))
    return adjacent(halved(sixteens(tail_folded(v), 64), 64))


def chunk(r, t, k, square, scale):
    """Chunk k of every channel's R values r as its UB lane holds it, through PreElewise;
    padding and a short chunk's missing rows +0."""
    per = cdiv(t["S"], t["r_fac"])
    first, outer = k % per * t["r_fac"], k // per
    n = min(t["r_fac"], t["S"] - first)
    lo = (outer * t["S"] + first) * t["inner"]
    block = r[:, lo:lo + n * t["inner"]].reshape(len(r), n, t["inner"])
    rows_ = np.zeros((len(r), n, t["inner_al"]), f)
    rows_[:, :, :t["inner"]] = (block * block if square else block * scale).astype(f)
    v = np.zeros((len(r), t["bundle"]), f)
    v[:, :n * t["inner_al"]] = rows_.reshape(len(r), -1)
    return v


def r_range(r, t, k0, count, square, scale):
    """ComputeRRange: chunk u plus chunk u + P (P the largest power of two below count, 1 for
    1 and 2), each unit's ReduceSum, the units' cache tree."""
    P = 1 if count <= 2 else 1 << ((count - 1).bit_length() - 1)
    units = []
    for u in range(P):
        v = chunk(r, t, k0 + u, square, scale)
        if u < count - P:
            v = (v + chunk(r, t, k0 + u + P, square, scale)).astype(f)
        units.append(ar_sum(v) if t["tail_r"] else ra_sum(v, t["lanes"]))
    return adjacent(np.stack(units, -1))


def device_order(r, t, level=0):
    """sum and squareSum of the channels' float32 rows r on Ascend 950's template t."""
    out = []
    for square in (False, True):
        if t["kind"] == "small_r":  # one running sum from +0
            acc = np.zeros(len(r), f)
            for i in range(r.shape[1]):
                acc = (acc + (r[:, i] * r[:, i] if square else r[:, i])).astype(f)
            out.append(acc)
            continue
        bits_ = 0 if square else (t["R"] - 1).bit_length()  # sumInputScale_ = 2^-bits_
        if t["kind"] == "group" and t["tail_r"]:
            bits_ = 0  # Phase 1 casts unscaled there, nothing restores
        sc_in, sc_out = f(2.0 ** -bits_), f(2.0 ** bits_)
        if t["kind"] == "normal":
            out.append((r_range(r, t, 0, t["r_loops"], square, sc_in) * sc_out).astype(f))
            continue
        per = cdiv(t["r_loops"], t["groups"])
        parts = np.zeros((len(r), t["groups"]), f)
        acc = np.zeros(len(r), f)  # level 0: the atomic adds, taken in group order
        for g in range(t["groups"]):
            n = min(per, t["r_loops"] - g * per)
            if n > 0:
                parts[:, g] = r_range(r, t, g * per, n, square, sc_in)
                acc = (acc + (parts[:, g] * sc_out).astype(f)).astype(f)
        if level != 1:
            out.append(acc)
            continue
        res = np.zeros(len(r), f)  # level 1: Phase 2's RA ReduceSum over the groups
        for a0 in range(0, len(r), t["p2"]):
            blk = parts[a0:a0 + t["p2"]]
            res[a0:a0 + len(blk)] = ra_sum(blk, cdiv(len(blk), 8) * 8)
        out.append((res * sc_out).astype(f))
    return tuple(out)


def test_group_template_dispatch_as_the_vendor_unit_test():
    """op_host's tiling test DispatchesGroupPathByDeterministicMode: [32, 8, 64, 64] NCHW FLOAT
    on 64 cores of 256 KiB takes a group template (so its deterministic key adds partials);
    small channels of one sample take the small-R template instead."""
    assert group_rows((32, 8, 64, 64), 1, 4, cores=64, ub=256 * 1024) > 0
    assert group_rows((1, 8, 1, 17), 1, 4, cores=64, ub=256 * 1024) == 0
    assert group_rows((4, 4096, 2, 2), 1, 4, cores=64, ub=256 * 1024) == 0  # A fills the cores


def expected(vx, vs, vq, deterministic=0, fmt=NCHW):
    """The op_api's graph: x's copy, BNTrainingReduce (Ascend 950: the library's workspace,
    plus the deterministic group templates' partials at level 1; a TBE kernel elsewhere: none)
    and its two [C] FLOAT results handed over to sum and squareSum."""
    caxis = 3 if fmt == NHWC else 1
    C = vx.shape[caxis]
    g, gone = Graph(), set()
    x = g.copy(vx)
    k = g.kernel()
    g.read(x, k)
    if REGBASE:
        ws = LIB_API_WORKSPACE
        if deterministic == 1:
            ws += group_rows(vx.shape, caxis, vx.dtype.itemsize) * C * 4
        g.out(k, ws)
    for t, v in ((g.out(k, C * 4), vs), (g.out(k, C * 4), vq)):
        if not is_contiguous(v.shape, v.strides):
            g.copy_out(t, v)
        else:
            g.hand_over(t, gone, (C,))
    return g.size(gone)


def size_of(arena, vx, vs, vq, fmt=NCHW):
    rc, ws, ex = phase_one(formatted(arena, vx, fmt), vs, vq)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


WS_SHAPES = [(4, 3, 5, 2), (1, 64, 1, 1), (32, 8, 64, 64), (2, 3, 300, 300), (1, 2, 1, 17)]


@pytest.mark.parametrize("shape", WS_SHAPES, ids=str)
@pytest.mark.parametrize("dt", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("fmt", [NCHW, NHWC], ids=["NCHW", "NHWC"])
def test_workspace_size(arena, shape, dt, fmt):
    vx = DevView(arena, shape=shape, dtype=dt, slack=0)
    vs, vq = outputs(arena, shape[3 if fmt == NHWC else 1])
    assert size_of(arena, vx, vs, vq, fmt) == expected(vx, vs, vq, fmt=fmt)


@pytest.mark.parametrize("x_kind,out_kind", [("transposed", "contig"), ("contig", "stepped"),
                                             ("padded", "stepped")])
def test_workspace_size_strided(arena, x_kind, out_kind):
    """A strided x is copied first (alive until the kernel); strided outputs keep their
    results in the workspace until their copies."""
    vx = DevView(arena, shape=(2, 6, 3, 4), dtype=F16, kind=x_kind)
    vs, vq = outputs(arena, 6, out_kind)
    assert size_of(arena, vx, vs, vq) == expected(vx, vs, vq)


@pytest.fixture
def level():
    """Sets the process's deterministic level (the option phase one reads) for a test."""
    def set_level(v):
        assert lib.aclrtSetSysParamOpt(lib.ACL_OPT_DETERMINISTIC, v) == OK
    yield set_level
    set_level(0)


DET_SHAPES = [(32, 8, 64, 64), (8, 2, 128, 128), (16, 3, 40, 40), (4, 3, 5, 2)]


@pytest.mark.parametrize("shape", DET_SHAPES, ids=str)
@pytest.mark.parametrize("fmt", [NCHW, NHWC], ids=["NCHW", "NHWC"])
def test_deterministic_group_templates_add_their_partials(arena, level, shape, fmt):
    """At deterministic level 1 (GetDeterministic() == 1 only) Ascend 950's group templates
    stage one FLOAT per channel and row group; levels 0 and 2 ask the library's workspace
    alone, and the other parts' TBE kernel reads no level. The partials show only past the
    allocator's 512-byte rounding of the 16 MiB: never for NCHW, whose A loops split the
    channels one by one (at most a core's worth of FLOATs), but for NHWC's wider A tiles."""
    vx = DevView(arena, shape=shape, dtype=F32, slack=0)
    vs, vq = outputs(arena, shape[3 if fmt == NHWC else 1])
    sizes = {}
    for v in (0, 1, 2):
        level(v)
        sizes[v] = size_of(arena, vx, vs, vq, fmt)
        assert sizes[v] == expected(vx, vs, vq, v, fmt), v
    assert sizes[0] == sizes[2]
    caxis = 3 if fmt == NHWC else 1
    partials = group_rows(shape, caxis, 4) * shape[caxis] * 4
    assert partials <= CORES * 4 or fmt == NHWC
    grown = align(LIB_API_WORKSPACE + partials) > align(LIB_API_WORKSPACE)
    assert (sizes[1] > sizes[0]) == (REGBASE and grown)


@only_where(REGBASE)   # the arch35 tiling runs on Ascend 950
def test_the_partials_show_in_the_size_here():
    """The deterministic test above reaches the group templates, and some NHWC shape's
    partials exceed the rounding, on this part's cores and UB."""
    assert any(group_rows(s, 1, 4) > 0 for s in DET_SHAPES)
    assert any(group_rows(s, 3, 4) * s[3] * 4 > 480 for s in DET_SHAPES)


# ---- Ascend 950's orders, bit for bit --------------------------------------------------------

def form(t):
    """Which side of each boundary tiling t sits: the template; tail-R (AR) or tail-A (RA);
    the RA form by lanes (Concat <= 32, LessThanVL <= 64, OverVL) or the AR form by bundle
    (a block 8, blocks < 32, one register <= 64, registers, 16-register rounds >= 1024); the
    chunk count (1, 2: one paired unit, 3 or more)."""
    if t["kind"] != "normal" and t["kind"] != "group":
        return (t["kind"],)
    if t["tail_r"]:
        b = t["bundle"]
        red = ("AR", "block" if b == 8 else "blocks" if b < 32 else "reg" if b <= 64
               else "regs" if b < 1024 else "rounds")
    else:
        red = ("RA", "concat" if t["lanes"] <= 32 else "less" if t["lanes"] <= 64 else "over")
    return (t["kind"],) + red + (min(t["r_loops"], 3),)


# (shape, format, dtype, the form its tiling takes on Ascend 950's 72 vector cores): each side
# of each boundary
ORDER_CASES = [
    ((1, 6, 1, 17), NCHW, F32, ("small_r",)),
    ((1, 6, 2, 9), NCHW, F32, ("normal", "AR", "blocks", 1)),   # H * W 18: not small R
    ((2, 6, 1, 17), NCHW, F32, ("normal", "AR", "reg", 1)),     # N 2: not small R
    ((1, 6, 1, 5), NCHW, F32, ("normal", "AR", "block", 1)),
    ((1, 6, 5, 5), NCHW, F32, ("normal", "AR", "reg", 1)),      # 25 padded to 32
    ((1, 6, 10, 10), NCHW, F32, ("normal", "AR", "regs", 1)),
    ((1, 6, 40, 40), NCHW, F32, ("normal", "AR", "rounds", 1)),
    ((4, 3, 5, 2), NCHW, F16, ("normal", "AR", "reg", 1)),      # FLOAT16's 16-value blocks
    ((40, 3, 1, 1), NCHW, F32, ("normal", "RA", "concat", 1)),  # H, W of 1: tail A
    ((2, 5, 30, 32), NHWC, F32, ("normal", "RA", "concat", 1)),
    ((2, 5, 6, 40), NHWC, F32, ("normal", "RA", "less", 1)),
    ((2, 5, 6, 72), NHWC, F32, ("normal", "RA", "over", 1)),
    ((4, 100, 30, 64), NCHW, F32, ("normal", "AR", "rounds", 2)),  # 100 A loops
    ((16, 100, 30, 33), NCHW, F32, ("normal", "AR", "rounds", 3)),
    ((2, 200, 5, 4), NHWC, F32, ("group", "RA", "concat", 2)),
    ((4, 200, 5, 4), NHWC, F32, ("group", "RA", "concat", 3)),
    ((1, 6, 64, 33), NHWC, F32, ("group", "RA", "less", 2)),
    ((16, 3, 40, 40), NHWC, F32, ("group", "RA", "less", 3)),
    ((16, 200, 5, 1), NHWC, F32, ("group", "AR", "rounds", 2)),  # one channel: [1, R]
    ((16, 3, 40, 40), NHWC, F16, ("group", "RA", "less", 3)),
    ((8, 2, 128, 128), NCHW, F16, ("group", "AR", "rounds", 3)),
    ((32, 8, 64, 64), NCHW, F32, ("group", "AR", "rounds", 3)),
    ((1, 2, 300, 300), NCHW, F32, ("group", "AR", "rounds", 3)),
]


@only_where(REGBASE)
@pytest.mark.parametrize("lvl", [0, 1])
@pytest.mark.parametrize("shape,fmt,dt,want", ORDER_CASES, ids=str)
def test_ascend950_orders_bit_for_bit(arena, level, lvl, shape, fmt, dt, want):
    """Each template's order as stated here in NumPy (device_order), bit for bit, on data
    whose plain order gives other bits; the group templates' deterministic Phase 2 at level
    1, their atomic adds (in group order) at level 0; the normal ones alike at both."""
    t = tiling(shape, 3 if fmt == NHWC else 1, np.dtype(dt).itemsize)
    assert form(t) == want
    x = sample(shape, dt, seed=lvl, offset=3.0)
    level(lvl)
    got = call(arena, x, fmt)
    for g, w in zip(got, device_order(rows(x, fmt), t, lvl)):
        assert np.array_equal(bits(g), bits(w))
    assert any(not np.array_equal(bits(g), bits(p)) for g, p in zip(got, plain_order(x, fmt)))


@only_where(REGBASE)
def test_the_group_levels_differ():
    """Phase 2's RA ReduceSum and the atomic adds in group order are other orders."""
    shape = (32, 8, 64, 64)
    r = rows(sample(shape, F32, offset=3.0))
    t = tiling(shape, 1, 4)
    assert any(not np.array_equal(bits(a), bits(b))
               for a, b in zip(device_order(r, t, 0), device_order(r, t, 1)))


@only_where(REGBASE)
def test_the_sum_input_scaling_at_the_range_limits(arena):
    """The sum's inputs times 2^-ceil(log2 R) (sumInputScale_), the result times its inverse:
    partial sums past FLOAT's range stay finite, and subnormal inputs lose their low bits
    (here all of them), where the same order unscaled gives NaN and keeps them; squareSum is
    not scaled."""
    x = np.zeros((1, 2, 4, 8), F32)  # [C, 32]: one 32-lane Reduce; R 32, scale 2^-5
    x[0, 0, 0, :2] = 3e38
    x[0, 0, 0, 2:4] = -3e38
    x[0, 1] = np.float32(1e-45)  # the smallest subnormal
    t = tiling(x.shape, 1, 4)
    assert form(t) == ("normal", "AR", "reg", 1)
    s, q = call(arena, x)
    assert s[0] == 0.0 and s[1] == 0.0 and q[1] == 0.0 and np.isinf(q[0])
    with np.errstate(over="ignore", invalid="ignore"):
        unscaled = r_range(rows(x), t, 0, 1, False, f(1))
        want = device_order(rows(x), t)
    assert np.isnan(unscaled[0]) and unscaled[1] == f(32) * f(1e-45)
    for g, w in zip((s, q), want):
        assert np.array_equal(bits(g), bits(w))


# ---- Ascend 950: shapes with no UB split --------------------------------------------------

INNER_NULLPTR = 561103  # the op_api's code for a NULL L0 result (ResizeTo1D dereferences it)


def test_no_ub_split_as_the_tiling_steps():
    """The boundary stated from the arithmetic (no_ub_split) is where the tiling's steps
    (tiling) find no split, around each dtype's edge, on Ascend 950's 72 cores: FLOAT's
    rMax 14847 (8-value blocks: L 14841..14847), FLOAT16's and BF16's 19797 (16: 19793..19797);
    C 72 and 73; with N reduced before the last axis or not; C 1 in either format."""
    failing = set()
    for ds, edge in ((4, 14847), (2, 19797)):
        for last in range(edge - 24, edge + 4):
            for n, c, caxis in itertools.product((1, 2), (1, 2, 72, 73), (1, 3)):
                shape = (n, c, 1, last) if caxis == 1 else (n, 1, last, c)
                split = tiling(shape, caxis, ds, cores=72)["kind"] is not None
                assert no_ub_split(shape, caxis, ds, cores=72) == (not split), (shape, ds)
                if not split:
                    failing.add((ds, last))
    assert failing == {(4, L) for L in range(14841, 14848)} | \
        {(2, L) for L in range(19793, 19798)}


NO_SPLIT = (
    # refused on Ascend 950: (shape, format, dtype)
    [((1, 72, 1, 14841), NCHW, F32),    # [C, HW]: the smallest L, the most channels
     ((2, 3, 101, 147), NCHW, F32),     # [1, N, C, HW]: the largest L, 14847
     ((3, 4947, 1, 1), NHWC, F32),      # C 1: N * H * W 14841
     ((1, 5, 1, 19793), NCHW, F16)]
    + ([((2, 72, 19797, 1), NCHW, BF16)] if BF16 in DTYPES else []),
    # accepted beside them
    [((1, 72, 1, 14840), NCHW, F32),    # L below the edge
     ((1, 72, 1, 14848), NCHW, F32),    # L above: split at rMax's blocks, two chunks
     ((1, 73, 1, 14841), NCHW, F32),    # C past the cores: an A target of 2
     ((2, 3, 1, 14848), NCHW, F32),
     ((3, 4947, 1, 2), NHWC, F32),      # C 2 in NHWC: tail A
     ((1, 5, 1, 19792), NCHW, F16),
     ((1, 5, 1, 19798), NCHW, F16)])


@pytest.mark.parametrize("shape,fmt,dt", NO_SPLIT[0], ids=str)
def test_no_ub_split_is_refused_on_ascend950(arena, shape, fmt, dt):
    """Ascend 950's tiling runs in phase one; with no UB split the L0 op returns NULL and the
    op_api's ResizeTo1D dereferences it (the device's host process crashes): stricter, the
    emulator refuses with 561103, no executor, nothing leaked. The other parts' TBE kernel
    (not public) takes the shape: it runs in norm_rows.h's order."""
    caxis = 3 if fmt == NHWC else 1
    ds = np.dtype(dt).itemsize
    assert no_ub_split(shape, caxis, ds, cores=72)
    x = sample(shape, dt, offset=3.0)
    if REGBASE:
        vx = DevView(arena, x)
        vs, vq = outputs(arena, shape[caxis])
        blk = 32 // ds
        last = int(np.prod(shape)) if shape[caxis] == 1 else shape[2] * shape[3]
        refused([formatted(arena, vx, fmt), vs, vq], INNER_NULLPTR,
                "x shape [" + ",".join(map(str, shape)) + "]", "has no UB split on " + SOC,
                f"axis of {last} values", f"padded to {cdiv(last, blk) * blk}",
                f"C {shape[caxis]} <= 72 vector cores", "ComputeUbSplit")
        assert np.all(vs.read() == SENTINEL) and np.all(vq.read() == SENTINEL)
        return
    for g, w in zip(call(arena, x, fmt), plain_order(x, fmt)):
        assert np.array_equal(bits(g), bits(w))


@pytest.mark.parametrize("shape,fmt,dt", NO_SPLIT[1], ids=str)
def test_beside_no_ub_split_runs(arena, shape, fmt, dt):
    """The shapes beside the refused ones run, in the stated order (on Ascend 950 the
    template the tiling picks), with the device's workspace size."""
    caxis = 3 if fmt == NHWC else 1
    assert not no_ub_split(shape, caxis, np.dtype(dt).itemsize, cores=72)
    x = sample(shape, dt, offset=3.0)
    vx = DevView(arena, x, slack=0)
    vs, vq = outputs(arena, shape[caxis])
    assert size_of(arena, vx, vs, vq, fmt) == expected(vx, vs, vq, fmt=fmt)
    for g, w in zip(call(arena, x, fmt), emulator_order(x, fmt)):
        assert np.array_equal(bits(g), bits(w))


# ---- Ascend 950: a row group past the chunks ------------------------------------------------

def test_a_group_past_the_chunks_is_reachable():
    """Phase 1 gives row group g the chunks from g * ceil(rLoops / groups) (Phase1Process), so
    where that passes rLoops for the last groups they write no workspace row, which the
    deterministic Phase 2 still reduces: [86, 5, 1, 7416] NCHW FLOAT on 72 cores takes one
    channel per A loop (5 loops), two samples' 7416 values per chunk (rMax 14847: 43 chunks)
    and 14 row groups of 4, the last three empty. The device's sums there are undefined
    (docs/emulator.md)."""
    t = tiling((86, 5, 1, 7416), 1, 4, cores=72)
    assert (t["kind"], t["r_loops"], t["groups"]) == ("group", 43, 14)
    per = cdiv(t["r_loops"], t["groups"])
    assert [g for g in range(t["groups"]) if g * per >= t["r_loops"]] == [11, 12, 13]


@only_where(REGBASE)
def test_empty_groups_as_stated(arena, level):
    """At deterministic level 0 an empty group's core adds nothing atomically, as stated
    (device_order skips it); at level 1 the emulator takes its stale row as +0 (the device's
    is undefined: not checked against it)."""
    shape = (86, 5, 1, 7416)
    x = sample(shape, F32, offset=3.0)
    for lvl in (0, 1):
        level(lvl)
        got = call(arena, x)
        for g, w in zip(got, device_order(rows(x), tiling(shape, 1, 4), lvl)):
            assert np.array_equal(bits(g), bits(w)), lvl


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_workspace_attempts(arena, attempt):
    x = sample((2, 6, 3, 4), F32)
    vx = DevView(arena, x, kind="transposed")
    vs, vq = outputs(arena, 6, "stepped")
    rc, ws, ex = phase_one(formatted(arena, vx, NCHW), vs, vq)
    assert rc == OK and ws == expected(vx, vs, vq) > 0, last_msg()
    if workspace_attempt(arena, P2, ex, ws, attempt):
        for g, w in zip((vs.read(), vq.read()), emulator_order(x)):
            assert np.array_equal(bits(g), bits(w))


def test_workspace_size_of_nothing_but_the_kernel(arena):
    """Contiguous everything: the results are taken over by sum and squareSum, so the kernel's
    own workspace is all (none off Ascend 950)."""
    vx = DevView(arena, shape=(4, 3, 5, 2), dtype=F32)
    vs, vq = outputs(arena, 3, slack=0)  # storages the views end: taken over on every part
    assert size_of(arena, vx, vs, vq) == (align(LIB_API_WORKSPACE) if REGBASE else 0)


test_on_other_parts = run_on_parts(other_parts(), "not other_parts")
