"""The emulator's aclnnInstanceNorm through raw calls: phase one's checks, their order, codes
and messages (hicann/ops-nn norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.cpp; the
stricter choices in docs/emulator.md), the part (the Atlas inference series only), what is
written (nothing for an empty tensor, nothing outside the outputs), and the numbers: against
the float64 reference and bit for bit against the emulator's chain written in NumPy (the
kernel is not public: docs/emulator.md); the Atlas inference part in its own process; the
vendor's op_api unit test cases replayed with their expected status.
"""
from __future__ import annotations


import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import INSTANCE_NORM
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_group_norm import ARCH, lane_sum
from _emu_aclnn import SOC, both_phases_without_a_device, refused_by, run_phase_two
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts, runs_here

P1 = lib.aclnnInstanceNormGetWorkspaceSize
P2 = lib.aclnnInstanceNorm
CALL = "aclnnInstanceNormGetWorkspaceSize"
INNER_NULLPTR = 561103
SENTINEL = -77.0
f = np.float32
INFERENCE = ARCH == 2002
# A test of the kernel is defined only where the declaration has one (the Atlas inference
# series: aclnn_instance_norm.cpp CheckPlatform); elsewhere test_other_parts_are_refused checks
# the refusal, and the Ascend310P3 child below runs these.
where_it_runs = only_where(runs_here(INSTANCE_NORM))


def fmt(s):
    return ffi.NULL if s is None else ffi.new("char[]", s.encode())


def phase_one(x, g, b, data_format, eps, y, m, v, ws=True, ex=True):
    return aclnn_phase_one(P1, x, g, b, fmt(data_format), eps, y, m, v, ws=ws, ex=ex)


def stats_shape(shape, nhwc):
    return (shape[0], 1, 1, shape[3]) if nhwc else (shape[0], shape[1], 1, 1)


def inputs(shape, dt, nhwc=False, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    c = shape[3] if nhwc else shape[1]
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(dt)
    g = (1 + 0.25 * rng.standard_normal(c)).astype(dt)
    b = (0.5 * rng.standard_normal(c)).astype(dt)
    return x, g, b


def call(arena, x, g, b, nhwc=False, eps=1e-5, kind="contig"):
    """Runs the operator on views of `kind`; returns (y, mean, variance) read back (the
    outputs sentinel-filled: DevView.read asserts nothing outside them was written)."""
    vx, vg, vb = (DevView(arena, a, kind=kind) for a in (x, g, b))
    st = stats_shape(x.shape, nhwc)
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kind, sentinel=SENTINEL)
    vm, vv = (DevView(arena, shape=st, dtype=x.dtype, kind=kind, sentinel=SENTINEL)
              for _ in range(2))
    run_phase_two(arena, P2, phase_one(vx, vg, vb, "NHWC" if nhwc else "NCHW", eps, vy, vm,
                                       vv))
    for v, a in ((vx, x), (vg, g), (vb, b)):   # the inputs untouched
        assert np.array_equal(v.read(), a, equal_nan=True)
    return vy.read(), vm.read(), vv.read()


# ---- the chain, in NumPy ---------------------------------------------------------------------

def chain(x, g, b, nhwc=False, eps=1e-5):
    """(y, mean, variance) as the emulator's chain makes them (docs/emulator.md: the kernel's
    own is not public): per (n, c) row of E values in float32, mean = sum(x * (1 / E)),
    var = sum((x - mean)^2 * (1 / E)) (each term rounded, in norm_rows' lane order),
    rstd = 1 / sqrt(var + eps), y = ((x - mean) * rstd) * gamma + beta; all rounded to x's
    dtype."""
    a = np.moveaxis(x, 3, 1) if nhwc else x
    n, c = a.shape[:2]
    rows = a.astype(f).reshape(n * c, -1)
    e = rows.shape[1]
    inv = f(1) / f(e)
    mean = lane_sum((rows * inv).astype(f))
    d = (rows - mean[:, None]).astype(f)
    var = lane_sum((((d * d).astype(f)) * inv).astype(f))
    rstd = (f(1) / np.sqrt((var + f(eps)).astype(f))).astype(f)
    gr, br = np.tile(g.astype(f), n), np.tile(b.astype(f), n)
    y = ((((d * rstd[:, None]).astype(f)) * gr[:, None]).astype(f) + br[:, None]).astype(f)
    y = y.reshape(a.shape).astype(x.dtype)
    st = stats_shape(x.shape, nhwc)
    return (np.moveaxis(y, 1, 3) if nhwc else y, mean.astype(x.dtype).reshape(st),
            var.astype(x.dtype).reshape(st))


def same_bits(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    u = np.uint16 if got.dtype.itemsize == 2 else np.uint32
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(u), want.view(u)), np.argwhere(got.view(u) != want.view(u))


SHAPES = [((2, 16, 4, 5), False), ((1, 16, 3, 7), False), ((2, 3, 6, 16), True),
          ((3, 5, 7, 24), True), ((1, 32, 33, 2), False)]


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
@pytest.mark.parametrize("shape,nhwc", SHAPES, ids=[f"{s}-{'NHWC' if h else 'NCHW'}"
                                                    for s, h in SHAPES])
def test_chain_bit_for_bit(arena, dt, shape, nhwc):
    x, g, b = inputs(shape, dt, nhwc)
    for got, want in zip(call(arena, x, g, b, nhwc), chain(x, g, b, nhwc)):
        same_bits(got, want)


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
@pytest.mark.parametrize("shape,nhwc", SHAPES[:4], ids=[f"{s}-{'NHWC' if h else 'NCHW'}"
                                                        for s, h in SHAPES[:4]])
def test_reference(arena, dt, shape, nhwc):
    x, g, b = inputs(shape, dt, nhwc, seed=3)
    fmt_name = "NHWC" if nhwc else "NCHW"
    exp = reference.instance_norm(x, g, b, fmt_name, 1e-5)
    mag = reference.instance_norm_error_scale(x, g, b, fmt_name, 1e-5)
    for got, e, m, name in zip(call(arena, x, g, b, nhwc), exp, mag, ("y", "mean", "var")):
        reference.assert_close(got, e, m, dt, name)


@where_it_runs
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    x, g, b = inputs((2, 8, 4, 6), F32)
    for got, want in zip(call(arena, x, g, b, kind=kind), call(arena, x, g, b)):
        same_bits(got, want)


@where_it_runs
def test_bits_do_not_depend_on_the_thread_count(arena):
    x, g, b = inputs((4, 5, 9, 16), F16, True)
    want = chain(x, g, b, True)
    old = lib.aclemuGetNumThreads()
    try:
        for n in (1, 3):
            lib.aclemuSetNumThreads(n)
            for got, w in zip(call(arena, x, g, b, True), want):
                same_bits(got, w)
    finally:
        lib.aclemuSetNumThreads(old)


@where_it_runs
def test_eps_is_a_float_and_zero_is_taken(arena):
    """eps reaches the kernel as static_cast<float> (1e-46 is 0): a constant row has variance
    0, so y = beta + 0 * gamma with eps 0 is NaN (0 * inf), and finite with eps > 0."""
    x = np.full((1, 8, 2, 4), 0.75, F32)
    g, b = np.full(8, 2.0, F32), np.full(8, 0.5, F32)
    y, m, v = call(arena, x, g, b, eps=1e-46)
    assert (m == 0.75).all() and (v == 0).all() and np.isnan(y).all()
    y, m, v = call(arena, x, g, b, eps=1e-5)
    assert (y == 0.5).all()


@where_it_runs
def test_nan_and_inf_propagate(arena):
    """The docs' boundary cases: an Inf or NaN input gives NaN statistics and y of its row."""
    x, g, b = inputs((1, 8, 2, 4), F32)
    x[0, 1, 0, 0], x[0, 2, 1, 3] = np.inf, np.nan
    y, m, v = call(arena, x, g, b)
    assert np.isinf(m[0, 1, 0, 0]) and np.isnan(v[0, 1, 0, 0]) and np.isnan(y[0, 1]).all()
    assert np.isnan(m[0, 2, 0, 0]) and np.isnan(y[0, 2]).all()
    assert np.isfinite(y[0, [0] + list(range(3, 8))]).all()


@where_it_runs
def test_y_may_be_x(arena):
    """Every row is read before it is written: y over x's own memory gives the same bits."""
    x, g, b = inputs((2, 8, 3, 4), F32)
    vx, vg, vb = (DevView(arena, a) for a in (x, g, b))
    vm, vv = (DevView(arena, shape=(2, 8, 1, 1), dtype=F32) for _ in range(2))
    run_phase_two(arena, P2, phase_one(vx, vg, vb, "NCHW", 1e-5, vx, vm, vv))
    same_bits(vx.read(), chain(x, g, b)[0])


@where_it_runs
@pytest.mark.parametrize("which", ["x", "y", "mean", "gamma"])
def test_an_empty_tensor_returns_before_the_kernel(arena, which):
    """Any of the six empty (after the shape checks): success, workspace 0, nothing written,
    mean/variance of any shape then; both phases need no device (docs/emulator.md: a call
    the vendor launches no kernel for)."""
    shape = (2, 8, 0, 16) if which == "x" else (2, 0, 4, 16) if which == "gamma" else \
        (2, 8, 4, 16)
    x = np.zeros(shape, F32)
    c = shape[1]
    vx = DevView(arena, x)
    vg, vb = (DevView(arena, np.ones(c, F32)) for _ in range(2))
    vy = DevView(arena, shape=(2, 8, 0, 16) if which == "y" else shape, dtype=F32,
                 sentinel=SENTINEL)
    mshape = (0, 8, 1, 1) if which == "mean" else (7, 3) if which == "x" else (2, c, 1, 1)
    vm = DevView(arena, shape=mshape, dtype=F32, sentinel=SENTINEL)
    vv = DevView(arena, shape=(2, c, 1, 1), dtype=F32, sentinel=SENTINEL)
    args = (vx, vg, vb, fmt("NCHW"), 1e-5, vy, vm, vv)
    run_phase_two(arena, P2, aclnn_phase_one(P1, *args))
    for v in (vy, vm, vv):
        assert (v.read() == SENTINEL).all()
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, args, ffi.NULL)
    assert (rc, ws, rc2) == (OK, 0, OK), msg


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("x", "g", "b", "y", "m", "v")
TNAMES = dict(zip(NAMES, ("x", "gamma", "beta", "y", "mean", "variance")))
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE, "bf16": lib.ACL_BF16}


def views(arena, shape=(2, 8, 4, 4), dt=F32, nhwc=False, shapes=None, dts=None):
    """x, gamma, beta, y, mean, variance views (``shapes``/``dts``: overrides by NAMES; a
    dtype outside the operator's is aclCreateTensor's over float32 storage)."""
    c = shape[3] if nhwc else shape[1]
    base = {"x": shape, "g": (c,), "b": (c,), "y": shape, "m": stats_shape(shape, nhwc),
            "v": stats_shape(shape, nhwc)}
    shapes = base | (shapes or {})
    dts = {k: dt for k in NAMES} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


def args(vs, data_format="NCHW"):
    return (*vs[:3], data_format, 1e-5, *vs[3:])


def refused(vs, code, *words, data_format="NCHW", **kw):
    return refused_by(phase_one, CALL, args(vs, data_format), code, *words, **kw)


def accepted(vs, data_format="NCHW"):
    rc, _, ex = phase_one(*args(vs, data_format))  # its size: test_emulator_workspace_size_gn
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    """L2_DFX_PHASE_1's out-pointers come before x's NULL check."""
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k", range(6), ids=lambda k: TNAMES[NAMES[k]])
def test_required_tensors(arena, k):
    vs = views(arena)
    vs[k] = None
    refused(vs, NULLPTR, f"{TNAMES[NAMES[k]]} is NULL", data_format=None)


def test_data_format(arena):
    """NULL after the tensors (161001); then its first four characters NHWC or NCHW
    (strncmp over four: a longer string beginning with either passes), before the dtypes."""
    vs = views(arena, dts={"x": "int32"})
    refused(vs, NULLPTR, "dataFormat is NULL", data_format=None)
    for bad in ("INVALID", "", "nchw", "NCH", "NHW"):
        refused(vs, INVALID, "dataFormat", "NCHW or NHWC", data_format=bad)
    refused(vs, INVALID, "x dtype ACL_INT32", data_format="NCHW_and_more")


PARAM_CASES = [
    ("x int32", dict(dts={"x": "int32"}), ("x dtype ACL_INT32 is not supported",)),
    ("x double", dict(dts={"x": "double"}), ("x dtype",)),
    ("x bf16", dict(dts={k: "bf16" for k in NAMES}), ("x dtype BF16 is not supported",)),
    ("gamma", dict(dts={"g": F16}), ("gamma dtype FLOAT16 must be x's dtype FLOAT",)),
    ("beta", dict(dts={"b": F16}), ("beta dtype",)),
    ("y", dict(dts={"y": F16}), ("y dtype",)),
    ("mean", dict(dts={"m": F16}), ("mean dtype",)),
    ("variance", dict(dts={"v": "int32"}), ("variance dtype",)),
    ("x fp16, gamma fp32", dict(dt=F16, dts={"g": F32}), ("gamma dtype FLOAT must",)),
    ("rank 9", dict(shape=(2, 8, 4, 4, 1, 1, 1, 1, 1)), ("x rank 9 is above 8",)),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_checks_before_the_part(arena, case, kw, words):
    """NULLs, dataFormat, dtypes, x's rank: the same on every part (before CheckPlatform)."""
    refused(views(arena, **kw), INVALID, *words)


def test_other_parts_are_refused(arena):
    """CheckPlatform: anything but an Atlas inference part (SocVersion ASCEND310P) is refused
    with 161002 after the dtype and rank checks, before the shapes."""
    vs = views(arena, shapes={"g": (3,)})
    if INFERENCE:
        refused(vs, INVALID, "gamma shape")
        accepted(views(arena))
    else:
        refused(vs, INVALID, f"not supported on {SOC}", "Atlas inference series")


SHAPE_CASES = [
    ("x rank 3", dict(shape=(2, 8, 16), shapes={"m": (2, 8, 1), "v": (2, 8, 1)}),
     ("x rank 3", "x must have rank 4")),
    ("x rank 5", dict(shape=(2, 8, 4, 4, 1)), ("x rank 5",)),
    ("gamma rank 2", dict(shapes={"g": (8, 1)}), ("gamma rank 2",)),
    ("beta rank 2", dict(shapes={"b": (8, 1)}), ("beta rank 2",)),
    ("gamma not C", dict(shapes={"g": (4,)}), ("gamma shape [4]", "C x's dim 1 (NCHW)")),
    ("beta not C (the docs' rule)", dict(shapes={"b": (4,)}),
     ("beta shape [4]", "docs/aclnnInstanceNorm.md")),
]


@where_it_runs
@pytest.mark.parametrize("case,kw,words", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_refusals(arena, case, kw, words):
    refused(views(arena, **kw), INVALID, *words)


@where_it_runs
def test_nhwc_takes_the_channel_from_dim_3(arena):
    accepted(views(arena, shape=(2, 4, 4, 8), nhwc=True), "NHWC")
    refused(views(arena, shape=(2, 8, 4, 4), shapes={"g": (8,), "b": (8,)}), INVALID,
            "gamma shape [8]", "C x's dim 3 (NHWC)", data_format="NHWC")


@where_it_runs
def test_kernel_sizes(arena):
    """The docs' minimum: C and H * W each at least 32 bytes (561103; the code's phase one
    does not check it: docs/emulator.md)."""
    refused(views(arena, shape=(2, 7, 4, 4)), INNER_NULLPTR, "C axis of 7 FLOAT values",
            "32 bytes")
    refused(views(arena, shape=(2, 8, 7, 1)), INNER_NULLPTR, "H x W of 7 FLOAT values")
    accepted(views(arena, shape=(2, 8, 8, 1)))
    refused(views(arena, shape=(2, 8, 4, 4), dt=F16), INNER_NULLPTR, "C axis of 8 FLOAT16")
    accepted(views(arena, shape=(2, 16, 4, 4), dt=F16))
    refused(views(arena, shape=(1, 3, 5, 16), dt=F16, nhwc=True), INNER_NULLPTR,
            "H x W of 15 FLOAT16", data_format="NHWC")


@where_it_runs
def test_result_copies(arena):
    """The op_api's ViewCopy of each result (561103), y, then mean, then variance: y x's
    shape, the statistics [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC)."""
    refused(views(arena, shapes={"y": (2, 8, 16), "m": (2, 8)}), INNER_NULLPTR, "y shape")
    refused(views(arena, shapes={"m": (2, 8), "v": (2,)}), INNER_NULLPTR, "mean shape",
            "[N, C, 1, 1] (NCHW)")
    refused(views(arena, shapes={"v": (2, 1, 1, 8)}), INNER_NULLPTR, "variance shape")
    refused(views(arena, shape=(2, 4, 4, 8), nhwc=True, shapes={"m": (2, 8, 1, 1)}),
            INNER_NULLPTR, "mean shape", "[N, 1, 1, C] (NHWC)", data_format="NHWC")


@where_it_runs
def test_checks_run_in_the_vendor_order(arena):
    """dataFormat, dtypes, rank <= 8, (the part), ranks and gamma, then the empty return,
    then the kernel's sizes, then the copies."""
    refused(views(arena, dts={"y": F16}, shapes={"g": (3,)}), INVALID, "dataFormat",
            data_format="CHWN")
    refused(views(arena, dts={"y": F16}, shapes={"g": (3,)}), INVALID, "y dtype")
    refused(views(arena, shape=(2, 7, 4, 4), shapes={"g": (3,), "y": (1,)}), INVALID,
            "gamma shape")
    accepted(views(arena, shape=(2, 7, 0, 4), shapes={"y": (1,), "m": (9,)}))
    refused(views(arena, shape=(2, 7, 4, 4), shapes={"y": (1,)}), INNER_NULLPTR, "C axis")
    refused(views(arena, shapes={"y": (1,), "m": (1,)}), INNER_NULLPTR, "y shape")


def test_refusals_leak_nothing(arena):
    """Every refusal above returns before an executor exists (the autouse leak check)."""
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_dead_tensor_is_refused(arena):
    vs = views(arena)
    arena.destroy_tensor(vs[4].handle)
    try:
        refused(vs, INVALID, "mean", "not a live aclTensor")
    finally:
        v = vs[4]
        v.handle = arena.tensor(v.shape, v.dtype, v.strides, v.offset, v.n, v.ptr)


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# tests/ut/op_host/op_api/test_aclnn_instance_norm.cpp: (name, the part its SocVersionManager
# sets (None: the UT's default, its cases failing before CheckPlatform), x, gamma, beta, y,
# mean, variance, dataFormat, expected status); a tensor is (shape, dtype) or None, (shape,
# dtype, strides) for the non-contiguous cases. "docs": the UT expects success (its kernel
# tiling is stubbed) where the emulator refuses C or H * W under 32 bytes with the docs'
# 561103 (docs/emulator.md).
def _t(shape, dt="f32", strides=None):
    return (shape, dt, "ND", strides)


X, G, Y, M = _t((2, 8, 8, 16)), _t((8,)), _t((2, 8, 8, 16)), _t((2, 8, 1, 1))
XH, YH, MH = _t((2, 8, 16, 8)), _t((2, 8, 16, 8)), _t((2, 1, 1, 8))
INVALID_DTYPES = ("double", "u8", "i8", "i16", "i32", "i64", "bool", "string", "c64", "c128")
UT_CASES = [
    *[(f"invalid_dtype_{d}", None, _t((2, 8, 8, 16), d), _t((8,), d), _t((8,), d),
       _t((2, 8, 8, 16), d), _t((2, 8, 1, 1), d), _t((2, 8, 1, 1), d), "NCHW", INVALID)
      for d in INVALID_DTYPES],
    ("x_nullptr", None, None, G, G, Y, M, M, "NCHW", NULLPTR),
    ("gamma_nullptr", None, X, None, G, Y, M, M, "NCHW", NULLPTR),
    ("beta_nullptr", None, X, G, None, Y, M, M, "NCHW", NULLPTR),
    ("y_nullptr", None, X, G, G, None, M, M, "NCHW", NULLPTR),
    ("mean_nullptr", None, X, G, G, Y, None, M, "NCHW", NULLPTR),
    ("var_nullptr", None, X, G, G, Y, M, None, "NCHW", NULLPTR),
    ("dataformat_nullptr", None, X, G, G, Y, M, M, None, NULLPTR),
    ("diff_dtype_x_gamma", None, X, _t((8,), "f16"), G, Y, M, M, "NCHW", INVALID),
    ("diff_dtype_x_beta", None, X, G, _t((8,), "f16"), Y, M, M, "NCHW", INVALID),
    ("diff_dtype_x_y", None, X, G, G, _t((2, 8, 8, 16), "f16"), M, M, "NCHW", INVALID),
    ("diff_dtype_x_mean", None, X, G, G, Y, _t((2, 8, 1, 1), "f16"), M, "NCHW", INVALID),
    ("diff_dtype_x_var", None, X, G, G, Y, M, _t((2, 8, 1, 1), "f16"), "NCHW", INVALID),
    ("x_not_4d", None, _t((2, 8, 8)), G, G, _t((2, 8, 8)), _t((2, 8, 1)), _t((2, 8, 1)),
     "NCHW", INVALID),
    ("x_5d", None, _t((2, 8, 8, 16, 1)), G, G, _t((2, 8, 8, 16, 1)), _t((2, 8, 1, 1, 1)),
     _t((2, 8, 1, 1, 1)), "NCHW", INVALID),
    ("gamma_not_1d", None, X, _t((8, 1)), G, Y, M, M, "NCHW", INVALID),
    ("beta_not_1d", None, X, G, _t((8, 1)), Y, M, M, "NCHW", INVALID),
    ("gamma_shape_ne_c_nchw", None, X, _t((4,)), G, Y, M, M, "NCHW", INVALID),
    ("gamma_shape_ne_c_nhwc", None, XH, _t((4,)), G, YH, MH, MH, "NHWC", INVALID),
    ("beta_shape_ne_c_nchw", None, X, G, _t((4,)), Y, M, M, "NCHW", INVALID),
    ("beta_shape_ne_c_nhwc", None, XH, G, _t((4,)), YH, MH, MH, "NHWC", INVALID),
    ("dataformat_invalid", None, X, G, G, Y, M, M, "INVALID", INVALID),
    ("dataformat_empty", None, X, G, G, Y, M, M, "", INVALID),
    ("nchw_float", "310P", X, G, G, Y, M, M, "NCHW", OK),
    ("nchw_float16", "310P", _t((2, 8, 8, 16), "f16"), _t((8,), "f16"), _t((8,), "f16"),
     _t((2, 8, 8, 16), "f16"), _t((2, 8, 1, 1), "f16"), _t((2, 8, 1, 1), "f16"), "NCHW",
     "docs"),
    ("nhwc_float", "310P", XH, G, G, YH, MH, MH, "NHWC", OK),
    ("nhwc_float16", "310P", _t((2, 8, 16, 8), "f16"), _t((8,), "f16"), _t((8,), "f16"),
     _t((2, 8, 16, 8), "f16"), _t((2, 1, 1, 8), "f16"), _t((2, 1, 1, 8), "f16"), "NHWC",
     "docs"),
    ("nchw_float_small_shape", "310P", _t((1, 1, 1, 1)), _t((1,)), _t((1,)), _t((1, 1, 1, 1)),
     _t((1, 1, 1, 1)), _t((1, 1, 1, 1)), "NCHW", "docs"),
    ("nchw_float_eps_zero", "310P", X, G, G, Y, M, M, "NCHW", OK),
    ("nchw_float_large_shape", "310P", _t((4, 32, 16, 32)), _t((32,)), _t((32,)),
     _t((4, 32, 16, 32)), _t((4, 32, 1, 1)), _t((4, 32, 1, 1)), "NCHW", OK),
    ("empty_x_nchw", "310P", _t((2, 8, 0, 16)), G, G, _t((2, 8, 0, 16)), M, M, "NCHW", OK),
    ("empty_y_nchw", "310P", _t((2, 8, 4, 16)), G, G, _t((2, 8, 0, 16)), M, M, "NCHW", OK),
    ("empty_gamma_nchw", "310P", _t((2, 0, 4, 16)), _t((0,)), _t((0,)), _t((2, 0, 4, 16)),
     _t((2, 0, 1, 1)), _t((2, 0, 1, 1)), "NCHW", OK),
    ("empty_mean_nchw", "310P", _t((2, 8, 4, 16)), G, G, _t((2, 8, 4, 16)), _t((0, 8, 1, 1)),
     M, "NCHW", OK),
    ("empty_variance_nchw", "310P", _t((2, 8, 4, 16)), G, G, _t((2, 8, 4, 16)), M,
     _t((0, 8, 1, 1)), "NCHW", OK),
    ("empty_x_nhwc", "310P", _t((2, 0, 16, 8)), G, G, _t((2, 0, 16, 8)), MH, MH, "NHWC", OK),
    ("non_contiguous_x_nchw", "310P", _t((2, 8, 4, 16), "f32", (512, 64, 16, 1)), G, G,
     _t((2, 8, 4, 16)), M, M, "NCHW", OK),
    ("non_contiguous_x_nhwc", "310P", _t((2, 4, 16, 8), "f32", (512, 128, 8, 1)), G, G,
     _t((2, 4, 16, 8)), MH, MH, "NHWC", OK),
    ("platform_not_310p", "910B", X, G, G, Y, M, M, "NCHW", INVALID),
    ("nchw_float16_small_shape", "310P", _t((1, 2, 2, 2), "f16"), _t((2,), "f16"),
     _t((2,), "f16"), _t((1, 2, 2, 2), "f16"), _t((1, 2, 1, 1), "f16"),
     _t((1, 2, 1, 1), "f16"), "NCHW", "docs"),
    ("nhwc_float16_small_shape", "310P", _t((1, 2, 2, 2), "f16"), _t((2,), "f16"),
     _t((2,), "f16"), _t((1, 2, 2, 2), "f16"), _t((1, 1, 1, 2), "f16"),
     _t((1, 1, 1, 2), "f16"), "NHWC", "docs"),
    ("empty_beta_nchw", "310P", _t((2, 8, 4, 16)), G, G, _t((2, 8, 4, 16)), M, M, "NCHW",
     OK),
    ("nhwc_float_eps_zero", "310P", _t((2, 8, 16, 8)), G, G, _t((2, 8, 16, 8)), MH, MH,
     "NHWC", OK),
    ("empty_x_float16_nchw", "310P", _t((2, 8, 0, 16), "f16"), _t((8,), "f16"),
     _t((8,), "f16"), _t((2, 8, 0, 16), "f16"), _t((2, 8, 1, 1), "f16"),
     _t((2, 8, 1, 1), "f16"), "NCHW", OK),
    ("empty_x_float16_nhwc", "310P", _t((2, 0, 16, 8), "f16"), _t((8,), "f16"),
     _t((8,), "f16"), _t((2, 0, 16, 8), "f16"), _t((2, 1, 1, 8), "f16"),
     _t((2, 1, 1, 8), "f16"), "NHWC", OK),
]
def ut_expected(case):
    """The case's status on this process's part: the UT's where the case's part is this
    one (or the case fails before CheckPlatform); else CheckPlatform's answer."""
    part, code = case[1], case[-1]
    if code == "docs":
        code = INNER_NULLPTR
    if part is None or (part == "310P") == INFERENCE:
        return code
    return INVALID if part == "310P" else OK


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, _part, x, g, b, y, m, v, data_format, _code = case
    code = ut_expected(case)
    ts = [ut_tensor(arena, s) for s in (x, g, b)]
    outs = [ut_tensor(arena, s) for s in (y, m, v)]
    rc, _, ex = phase_one(*ts, data_format, 1e-5, *outs)
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        msg = last_msg()
        assert ex == ffi.NULL and msg.startswith(CALL + ": "), msg
        if case[-1] == "docs" and INFERENCE:
            assert "32 bytes" in msg, msg


# the Atlas inference part runs every test (the operator's only part); the others the ones
# every part answers (their refusal, the checks before it, the UT replay)
test_on_other_parts = run_on_parts(other_parts(), lambda part: (
    "not test_on_other_parts" if part.startswith("Ascend310P") else
    "other_parts_are_refused or checks_before_the_part or vendor_op_api_unit_test or "
    "required_tensors or data_format or out_pointers"), skips=False)
