"""The emulator's aclnnAddRmsNorm through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/add_rms_norm: op_host/op_api/aclnn_add_rms_norm.cpp, the tiling
op_host/add_rms_norm_tiling.cpp it runs, docs/aclnnAddRmsNorm.md; the stricter choices in
docs/emulator.md), the vendor's three output modes, and the device's numbers: against the
float64 reference for every dtype, and bit for bit against the kernels' chain (op_kernel/
add_rms_norm*.h: x1 + x2 added in FLOAT16 for FLOAT16, in float and rounded to BF16 for BF16;
x * rstd rounded to x's dtype before gamma; which sum the BF16 norm takes by kernel variant)
given the rstd the call wrote; bits independent of layout and thread count; the Ascend 950
and Atlas inference parts in their own processes.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import ADD_RMS_NORM
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _emu_aclnn import SOC, refused_by, rstd_shape, run_phase_two
from _part_runs import cases_where, only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnAddRmsNormGetWorkspaceSize
P2 = lib.aclnnAddRmsNorm
INNER_NULLPTR = 561103   # the op_api's code when its tiling or the copy into rstdOut refuses
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
BF16_PART = ARCH in (2201, 3510)
# op_host/add_rms_norm_def.cpp configures no ascend910: there the L0 op refuses every call
# that reaches it (test_part_dtype_list), and the tests of the kernel and its tiling are not
# defined (the parts with the kernel run them)
HAS_KERNEL = runs_here(ADD_RMS_NORM)
where_it_runs = only_where(HAS_KERNEL)
DTYPES = [F32, F16, *cases_where(BF16_PART, BF16)]   # a part without BF16: no such case
VECTOR_CORES = {"Ascend910B2": 48, "Ascend910_9391": 48, "Ascend910B3": 40}.get(SOC, 48)


def phase_one(x1, x2, g, y, r, xo, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x1, x2, g, eps, y, r, xo, ws=ws, ex=ex)


def run(arena, *views, eps=1e-6):
    run_phase_two(arena, P2, phase_one(*views, eps=eps))


def call(arena, x1, x2, g, kinds=("contig",) * 6, eps=1e-6, mode="full"):
    """Runs the operator; (y, rstd, x) read back (None for an output not given). mode: "full"
    (rstdOut and xOut), "pre" (xOut only) or "post" (yOut only); pre/post take gamma [1, N]."""
    v1, v2 = DevView(arena, x1, kind=kinds[0]), DevView(arena, x2, kind=kinds[1])
    vg = DevView(arena, g, kind=kinds[2])
    vy = DevView(arena, shape=x1.shape, dtype=x1.dtype, kind=kinds[3], sentinel=-77.0)
    vr = DevView(arena, shape=rstd_shape(x1.shape, g.ndim), dtype=F32, kind=kinds[4],
                 sentinel=-77.0) if mode == "full" else None
    vx = DevView(arena, shape=x1.shape, dtype=x1.dtype, kind=kinds[5],
                 sentinel=-77.0) if mode != "post" else None
    run(arena, v1, v2, vg, vy, vr, vx, eps=eps)
    return tuple(None if v is None else v.read() for v in (vy, vr, vx))


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def device_chain(x1, x2, g, rstd, norm_on_rounded_sum=False):
    """(y, x) as the kernels make them from the rstd the call wrote (see the module doc)."""
    f = np.float32
    s = x1.astype(f) + x2.astype(f)
    rows = rstd.reshape(-1, 1)
    n = g.size
    if x1.dtype == F32 or ARCH == 3510:
        xn = s.reshape(-1, n)
        y = ((xn * rows) * g.astype(f).reshape(n)).astype(x1.dtype)
        return y.reshape(x1.shape), s.astype(x1.dtype)
    xo = s.astype(x1.dtype)
    xn = (xo if x1.dtype == F16 or norm_on_rounded_sum else s).astype(f).reshape(-1, n)
    t = (xn * rows).astype(x1.dtype).astype(f)
    y = (t * g.astype(f).reshape(n)).astype(x1.dtype)
    return y.reshape(x1.shape), xo


def check_kernel_chain(x1, x2, g, y, rstd, x, norm_on_rounded_sum=True):
    """y and x bit for bit against the kernels' chain. x (the float sum rounded once) on every
    part; y's chain needs the rstd the call wrote, which the Atlas inference parts do not
    write (test_rstd_not_written_...), so y is checked on the others only."""
    inference = ARCH == 2002
    want_y, want_x = device_chain(x1, x2, g, np.zeros_like(rstd) if inference else rstd,
                                  norm_on_rounded_sum)
    assert np.array_equal(bits(x), bits(want_x))
    if not inference:
        assert np.array_equal(bits(y), bits(want_y))


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,gdims", [((7, 3, 181), 1), ((5, 6, 40), 2), ((3, 4096), 1),
                                         ((33,), 1), ((2, 1, 3, 1, 2, 1, 2, 9), 3)],
                         ids=["181", "6x40", "4096", "1-D", "rank8"])
def test_numbers_against_float64_reference(arena, dt, shape, gdims):
    rng = np.random.default_rng(sum(shape) + gdims)
    x1, x2 = rand(rng, shape, dt), rand(rng, shape, dt, 1.0, -0.5)
    g = rand(rng, shape[len(shape) - gdims:], dt, 0.5, 1.0)
    got = call(arena, x1, x2, g)
    exp, mag = reference.add_rms_norm(x1, x2, g), reference.add_rms_norm_error_scale(x1, x2, g)
    assert got[0].dtype == dt and got[1].dtype == F32 and got[2].dtype == dt
    for a, e, m, name in zip(got, exp, mag, ("y", "rstd", "x")):
        if name == "rstd" and ARCH == 2002:
            continue   # not written on Atlas inference parts (test_rstd_not_written_...)
        reference.assert_close(a, e, m, dt, name)


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_y_and_x_follow_the_kernel_chain_bit_for_bit(arena, dt):
    """The kernels' chain (module doc), checked bit for bit with the rstd the call wrote; for
    BF16 on Atlas A2/A3 the single-N variant (few rows): the norm over the rounded sum."""
    rng = np.random.default_rng(3)
    x1, x2 = rand(rng, (16, 300), dt), rand(rng, (16, 300), dt, 3.0)
    g = rand(rng, (300,), dt, 0.5, 1.0)
    check_kernel_chain(x1, x2, g, *call(arena, x1, x2, g))


@only_where(ARCH == 2201)   # the BF16 kernel variants are Atlas A2/A3's
@pytest.mark.parametrize("rows,n,rounded", [
    (VECTOR_CORES + 12, 2048, False),   # normal kernel: more rows than cores, 2000 < N <= 12288
    (VECTOR_CORES, 2048, True),         # single-N: no more rows than vector cores
    (VECTOR_CORES + 12, 1000, True),    # merge-N: aligned N <= 2000
    (3, 12289, True),                   # split-D: N > 12288 (and few rows)
], ids=["normal", "single-n", "merge-n", "split-d"])
def test_bf16_norm_sum_follows_the_kernel_variant(arena, rows, n, rounded):
    """add_rms_norm.h (normal) takes the BF16 norm over the float sum x1 + x2; the other
    variants over the sum rounded to BF16 (the xOut they write)."""
    rng = np.random.default_rng(rows + n)
    x1, x2 = rand(rng, (rows, n), BF16), rand(rng, (rows, n), BF16, 1.0, 0.1)
    g = rand(rng, (n,), BF16, 0.5, 1.0)
    y, rstd, x = call(arena, x1, x2, g)
    want = device_chain(x1, x2, g, rstd, norm_on_rounded_sum=rounded)
    other = device_chain(x1, x2, g, rstd, norm_on_rounded_sum=not rounded)
    assert np.array_equal(bits(x), bits(want[1]))
    assert np.array_equal(bits(y), bits(want[0]))
    assert not np.array_equal(bits(y), bits(other[0]))   # the case tells the variants apart
    # rstd from the sum the variant norms (float32 sums in another order: a few ulps)
    xs = (x1.astype(F32) + x2.astype(F32))
    xn = xs.astype(BF16).astype(np.float64) if rounded else xs.astype(np.float64)
    exp = 1 / np.sqrt((xn * xn).mean(axis=1, keepdims=True) + np.float32(1e-6))
    assert np.allclose(rstd, exp, rtol=4e-6, atol=0)
    xm = xs.astype(np.float64) if rounded else xs.astype(BF16).astype(np.float64)
    assert not np.allclose(rstd, 1 / np.sqrt((xm * xm).mean(axis=1, keepdims=True) + 1e-6),
                           rtol=4e-6, atol=0)


@where_it_runs
def test_epsilon_reaches_the_kernel_as_float32(arena):
    """x1 + x2 = 0: rstd = 1 / sqrtf((float)epsilon) exactly, y = 0, x = 0."""
    z = np.zeros((2, 16), F32)
    y, rstd, x = call(arena, z, z.copy(), np.ones(16, F32), eps=1e-6)
    assert (y == 0).all() and (x == 0).all()
    if ARCH != 2002:
        assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-6))).all()


@where_it_runs
@pytest.mark.parametrize("kinds", [(k,) * 6 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed", "contig", "stepped")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x1, x2 = rand(rng, (6, 4, 37), F16), rand(rng, (6, 4, 37), F16)
    g = rand(rng, (4, 37), F16, 0.5, 1.0)
    base = call(arena, x1, x2, g)
    got = call(arena, x1, x2, g, kinds)
    for a, b in zip(base, got):
        assert np.array_equal(bits(a), bits(b))


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(7)
    x1, x2 = rand(rng, (61, 1000), F32), rand(rng, (61, 1000), F32)
    g = rand(rng, (1000,), F32, 0.5, 1.0)
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, x1, x2, g))
    for r in runs[1:]:
        for a, b in zip(runs[0], r):
            assert np.array_equal(bits(a), bits(b))


@where_it_runs
def test_nan_propagates_to_its_row(arena):
    x1 = np.ones((2, 8), F32)
    x1[1, 5] = np.nan
    y, rstd, x = call(arena, x1, np.ones((2, 8), F32), np.ones(8, F32))
    assert np.isfinite(y[0]).all() and np.isnan(y[1]).all() and np.isnan(x[1, 5])
    if ARCH != 2002:
        assert np.isfinite(rstd[0, 0]) and np.isnan(rstd[1, 0])


# ---- the vendor's output modes ------------------------------------------------------------

HALF_DTYPES = [F16] + ([BF16] if BF16_PART else [])


@where_it_runs
@pytest.mark.parametrize("mode", ["pre", "post"])
@pytest.mark.parametrize("dt", HALF_DTYPES, ids=lambda d: d.name)
def test_pre_and_post_modes_write_what_they_are_given(arena, mode, dt):
    """xOut without rstdOut (pre-RmsNorm) and neither (post-RmsNorm): gamma [1, N], the norm
    over x1's last dim, the same numbers as the full mode."""
    rng = np.random.default_rng(11)
    x1, x2 = rand(rng, (3, 5, 64), dt), rand(rng, (3, 5, 64), dt)
    g = rand(rng, (1, 64), dt, 0.5, 1.0)
    y, rstd, x = call(arena, x1, x2, g, mode=mode)
    full = call(arena, x1, x2, g.reshape(64))
    assert rstd is None and (x is None) == (mode == "post")
    assert np.array_equal(bits(y), bits(full[0]))
    if x is not None:
        assert np.array_equal(bits(x), bits(full[2]))


def test_rstd_without_xout_is_refused(arena):
    x1, x2, g, y, r, _ = views(arena)
    refused((x1, x2, g, y, r, None), NULLPTR, "xOut is NULL while rstdOut is given")


def test_pre_and_post_modes_take_half_dtypes_only(arena):
    x1, x2, g, y, _, xo = views(arena, gshape=(1, 16))
    refused((x1, x2, g, y, None, xo), INVALID, "x1 dtype FLOAT", "pre-RmsNorm", "FLOAT16")
    refused((x1, x2, g, y, None, None), INVALID, "x1 dtype FLOAT", "post-RmsNorm")


@pytest.mark.parametrize("gshape,code,words", [
    *cases_where(HAS_KERNEL,     # the tiling's rules
                 ((16,), INNER_NULLPTR, ("gamma shape [16] must be [1, 16]",)),
                 ((2, 16), INNER_NULLPTR, ("gamma shape [2,16] must be [1, 16]",)),
                 ((1, 8), INNER_NULLPTR, ("gamma shape [1,8] must be [1, 16]",))),
    ((1, 1, 16), INVALID, ("gamma rank 3 is not in [1, 2]",)),
])
def test_pre_mode_gamma_rules(arena, gshape, code, words):
    x1, x2, g, y, _, xo = views(arena, xdt=F16, gshape=gshape)
    refused((x1, x2, g, y, None, xo), code, *words)


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), xdt=F32, x2dt=None, gdt=None, ydt=None,
          rdt=F32, xodt=None, x2shape=None, yshape=None, rshape=None, xoshape=None, xacl=None):
    x1 = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    x2 = DevView(arena, np.ones(x2shape or shape, x2dt or xdt))
    g = DevView(arena, np.ones(gshape, gdt or xdt))
    y = DevView(arena, shape=yshape or shape, dtype=ydt or xdt)
    r = DevView(arena, shape=rshape if rshape is not None else
                rstd_shape(shape, len(gshape)), dtype=rdt)
    xo = DevView(arena, shape=xoshape or shape, dtype=xodt or xdt)
    return x1, x2, g, y, r, xo


def refused(args, code, *words, eps=1e-6):
    return refused_by(phase_one, "aclnnAddRmsNormGetWorkspaceSize", args, code, *words,
                      eps=eps)


def test_out_pointers_first(arena):
    x1, x2, g, y, r, xo = views(arena)
    assert phase_one(None, x2, g, y, r, xo, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(None, x2, g, y, r, xo, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k,name", list(enumerate(["x1", "x2", "gamma", "yOut"])))
def test_each_required_tensor(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


TILING_CASES = [
    (dict(shape=(2, 3, 4), gshape=(5,)), ("gamma shape [5]", "last 1 dims of x1 [2,3,4]")),
    (dict(shape=(2, 3, 4), gshape=(2, 4)), ("gamma shape [2,4]", "last 2 dims")),
    (dict(shape=(4,), gshape=(2, 4), rshape=(1, 1)), ("gamma rank 2 > x1 rank 1",)),
    (dict(rshape=(4,)), ("rstdOut shape [4]", "x1's batch dims then ones", "[4,1]")),
    (dict(rshape=(1, 1)), ("rstdOut shape [1,1]",)),
    (dict(rshape=(4, 2)), ("rstdOut shape [4,2]",)),
]
PARAM_CASES = [
    (dict(xacl=lib.ACL_INT32), ("x1 dtype ACL_INT32", "FLOAT, FLOAT16")),
    (dict(xdt=F16, x2dt=F32), ("x2 dtype FLOAT must be x1's dtype FLOAT16",)),
    (dict(gdt=F16), ("gamma dtype FLOAT16 must be x1's dtype FLOAT",)),
    (dict(ydt=F16), ("yOut dtype FLOAT16 must be x1's dtype FLOAT",)),
    (dict(xodt=F16), ("xOut dtype FLOAT16 must be yOut's dtype FLOAT",)),
    (dict(rdt=F16), ("rstdOut dtype FLOAT16 must be FLOAT",)),
    (dict(x2shape=(4, 8)), ("x2 shape [4,8] must equal x1's shape [4,16]",)),
    (dict(yshape=(4, 17)), ("yOut shape [4,17] must equal x1's shape [4,16]",)),
    (dict(xoshape=(1, 4, 16)), ("xOut shape [1,4,16] must equal x1's shape",)),
    (dict(shape=(1,) * 9, gshape=(1,), rshape=(1,)), ("x1 rank 9 is not in [1, 8]",)),
    (dict(gshape=(1,) * 9 + (16,)), ("gamma rank 10 is not in [1, 8]",)),
    (dict(rshape=(1,) * 9), ("rstdOut rank 9 is not in [0, 8]",)),
]


@pytest.mark.parametrize("case,words", PARAM_CASES,
                         ids=["x1-int32", "x2-dtype", "gamma-dtype", "y-dtype", "xout-dtype",
                              "rstd-dtype", "x2-shape", "y-shape", "xout-shape", "x1-rank9",
                              "gamma-rank10", "rstd-rank9"])
def test_parameter_refusals(arena, case, words):
    """The op_api's CheckParams: 161002, naming the argument and the rule."""
    refused(views(arena, **case), INVALID, *words)


@where_it_runs
@pytest.mark.parametrize("case,words", TILING_CASES,
                         ids=["gamma-shape", "gamma-shape2", "gamma-rank", "rstd-rank1",
                              "rstd-numel", "rstd-dim"])
def test_tiling_and_copy_refusals(arena, case, words):
    """The L0 op's tiling and the copy into rstdOut: the op_api returns 561103."""
    refused(views(arena, **case), INNER_NULLPTR, *words)


@where_it_runs
def test_rstd_of_one_element_takes_any_shape_of_one(arena):
    """The copy into rstdOut accepts differently shaped tensors of one element each."""
    x1, x2, g, y, _, xo = views(arena, shape=(1, 16))
    r = DevView(arena, shape=(1, 1, 1), dtype=F32, sentinel=-77.0)
    run(arena, x1, x2, g, y, r, xo)
    if ARCH != 2002:
        assert np.allclose(r.read(), 1 / np.sqrt(4 + 1e-6))


@where_it_runs
def test_negative_epsilon_is_refused(arena):
    refused(views(arena), INNER_NULLPTR, "epsilon -1e-06 is negative", eps=-1e-6)
    run(arena, *views(arena), eps=0.0)


@pytest.mark.parametrize("shape,gshape", [((0, 16), (16,)), ((4, 0), (0,)), ((0, 16), (8,))],
                         ids=["rows", "cols", "gamma-mismatch"])
def test_empty_input_succeeds_and_writes_nothing(arena, shape, gshape):
    """The op_api returns success before its L0 op for an empty x1 or gamma (so before the
    tiling's rules too), with an executor that computes nothing."""
    x1, x2, g, y, r, xo = views(arena, shape=shape, gshape=gshape,
                                rshape=rstd_shape(shape, 1))
    rc, ws, ex = phase_one(x1, x2, g, y, r, xo, eps=-1.0)
    assert rc == OK and ws == 0, last_msg()
    assert P2(ffi.NULL, 0, ex, arena.stream) == OK, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0


def test_empty_gamma_beside_a_non_empty_x1_computes_nothing(arena):
    x1, x2, _, y, r, xo = views(arena, shape=(4, 16))
    g = DevView(arena, np.ones((0,), F32))
    run(arena, x1, x2, g, y, r, xo)
    for v in (y, r, xo):
        got = np.empty_like(v.storage)
        arena.d2h(got, v.ptr)
        assert np.array_equal(bits(got), bits(v.initial))


def test_dead_tensor_is_refused(arena):
    x1, x2, g, y, r, xo = views(arena)
    arena.destroy_tensor(xo.handle)
    try:
        refused((x1, x2, g, y, r, xo), INVALID, "xOut", "not a live aclTensor")
    finally:
        xo.handle = arena.tensor(xo.shape, xo.dtype, xo.strides, xo.offset, xo.n, xo.ptr)


@where_it_runs
def test_executor_keeps_running_on_new_contents(arena):
    """A repeatable executor: each run reads x1/x2 as they are then."""
    x1, x2, g, y, r, xo = views(arena)
    rc, ws, ex = phase_one(x1, x2, g, y, r, xo)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    wsp = arena.malloc(ws)
    try:
        for k in (1, 3):
            arena.h2d(x1.ptr, np.full(x1.n, k, F32))
            assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            assert (xo.read() == k + 1).all()
            assert np.allclose(y.read(), 1.0, rtol=1e-6)
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- the part -----------------------------------------------------------------------------------

def test_part_dtype_list(arena):
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, xdt=dt))
        ok = ARCH != 1001 and (dt != BF16 or BF16_PART)
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if rc == OK:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:   # no kernel (Atlas training): the L0 op's failure; no BF16: the dtype list
            assert rc == (INNER_NULLPTR if ARCH == 1001 else INVALID), last_msg()
            assert "not supported on" in last_msg()


@only_where(ARCH == 2002)   # the Atlas inference parts (their own run or their child)
def test_rstd_not_written_on_atlas_inference_parts(arena):
    """The kernels copy rstd out on __CCE_AICORE__ 220 only; the docs call rstdOut invalid
    on Atlas inference parts."""
    rng = np.random.default_rng(2)
    x1, x2 = rand(rng, (4, 32), F16), rand(rng, (4, 32), F16)
    y, rstd, x = call(arena, x1, x2, rand(rng, (32,), F16, 0.5, 1.0))
    assert (rstd == -77.0).all()


# Atlas training parts have no kernel: every non-empty call is refused (the dtype-list test),
# an empty one succeeds
test_on_other_parts = run_on_parts(other_parts(), lambda part: (
    "part_dtype_list or empty_input" if part == "Ascend910A" else
    "part_dtype_list or chain_bit or reference and 181 or atlas_inference or variant or "
    "pre_and_post"))
