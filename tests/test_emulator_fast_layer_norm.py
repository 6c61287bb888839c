"""The emulator's aclnnFastLayerNorm, through the raw cffi calls.

Checks and codes are the vendor's op_api (hicann/ops-nn norm/layer_norm_v4/op_host/op_api/
aclnn_fast_layer_norm.cpp, in its order): its own dtype list (BF16 on every part), its own
order of checks, then always the LayerNormV4 kernel, whose results are copied without a cast
(out of input's dtype, mean/rstd of the kernel's shape: hicann/ops-math contiguous.cpp
CheckViewCopyParams, 561103). Its unit tests (tests/ut/op_host/op_api/
test_aclnn_fast_layer_norm.cpp, named for Atlas A2) call aclnnLayerNorm; their cases, the same
as aclnnLayerNorm's, are replayed here against aclnnFastLayerNorm with their statuses. The
kernel is aclnnLayerNorm's (ops/layer_norm.c): where aclnnLayerNorm runs LayerNormV4, or
writes FLOAT statistics, the two give the same bits; an absent bias is the op_api's filled
zeros, which the kernel adds.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, DTYPES, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_layer_norm import SOC, VENDOR_UT, D, check, make, rand, representable
from test_emulator_layer_norm import call as layer_norm_call

from _part_runs import PARTS, only_where, other_parts, run_on_parts

P1 = lib.aclnnFastLayerNormGetWorkspaceSize
P2 = lib.aclnnFastLayerNorm
COPY = lib.ACLNN_ERR_INNER_NULLPTR                # 561103: a failed ViewCopy, the docs' N limit
NO_KERNEL = lib.ACLNN_ERR_INNER_FIND_KERNEL_ERROR  # 561003
# the parts with a LayerNormV4 kernel for every dtype the op_api takes
FULL = ("Ascend910B2", "Ascend910_9391", "Ascend950PR_9599")
# a case needing every dtype exists only on those parts (their own run or child): elsewhere
# it could never run (no ascend910 config in layer_norm_v4_def.cpp, ascend310p's one template);
# test_parts checks the refusal there
full_part = only_where(SOC in FULL)


def phase_one(arena, x, ns, w, b, y, mean, rstd, eps=1e-5):
    """Phase one on handles (None = NULL); returns (status, workspace size, executor)."""
    h = lambda v: ffi.NULL if v is None else v  # noqa: E731
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    nsa = ffi.NULL if ns is None else arena.int_array(ns)
    rc = P1(h(x), nsa, h(w), h(b), eps, h(y), h(mean), h(rstd), ws, ex)
    return rc, ws[0], ex[0]


def run(arena, x, ns, w=None, b=None, y=None, mean=None, rstd=None, eps=1e-5, expect=OK):
    """Phase one and two on DevViews, synchronized. Returns phase one's status."""
    hv = lambda v: None if v is None else v.handle  # noqa: E731
    rc, ws, ex = phase_one(arena, hv(x), ns, hv(w), hv(b), hv(y), hv(mean), hv(rstd), eps)
    assert rc == expect, (rc, last_msg())
    if rc == OK:  # with the workspace phase one reported (test_emulator_workspace_size_add_ln)
        assert P2(arena.malloc(ws) if ws else ffi.NULL, ws, ex, arena.stream) == OK, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
    return rc


def call(arena, x, nlen, w=None, b=None, *, eps=1e-5, stat_dt=F32, stats=True,
         kinds=("contig",) * 6):
    """One call on fresh views (out of input's dtype); returns (out, mean, rstd) as read
    back (None for absent statistics)."""
    ns = list(x.shape[x.ndim - nlen:])
    V = lambda v, k: None if v is None else DevView(arena, v, kind=k)  # noqa: E731
    vx, vw, vb = V(x, kinds[0]), V(w, kinds[1]), V(b, kinds[2])
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kinds[3], sentinel=-77.0)
    sshape = tuple(x.shape[:x.ndim - nlen]) + (1,) * nlen
    vm, vr = ((DevView(arena, shape=sshape, dtype=stat_dt, kind=k, sentinel=-77.0)
               for k in kinds[4:]) if stats else (None, None))
    run(arena, vx, ns, vw, vb, vy, vm, vr, eps=eps)
    return vy.read(), None if vm is None else vm.read(), None if vr is None else vr.read()


# ---- the vendor's example and unit tests ------------------------------------------------------

@full_part
def test_vendor_example_values(arena):
    """examples/test_aclnn_fast_layer_norm.cpp: x = 2 everywhere, [1, 2, 32] over [32]."""
    y, mean, rstd = call(arena, np.full((1, 2, 32), 2.0, F32), 1, np.ones(32, F32),
                         np.zeros(32, F32))
    assert (y == 0).all() and (mean == 2).all()
    assert [f"{v:f}" for v in rstd.ravel()] == ["316.227783"] * 2


@only_where(SOC == "Ascend910B2")
@pytest.mark.parametrize("case", VENDOR_UT, ids=[c[0] for c in VENDOR_UT])
def test_vendor_unit_test_cases(arena, case):
    """The op_api unit test's cases (ascend910B2: this part only) with their statuses."""
    _, xd, ns, wd, bd, yd, md, rd, expect = case
    rng = np.random.default_rng(len(case[0]))
    views = [make(arena, d, rng) for d in (xd, wd, bd, yd, md, rd)]
    eps = 1e-12 if case[0] == "float32" else 1e-5
    run(arena, views[0], ns, *views[1:], eps=eps, expect=expect)
    if expect == OK and xd[1] in (F32, F16, BF16) and all(d > 0 for d in xd[0]):
        got = (views[3].read(), None if views[4] is None else views[4].read(),
               None if views[5] is None else views[5].read())
        check(got, views[0].read(), len(ns), views[1].read(), views[2].read(), eps)


# Two faults in one call: the message names the one the op_api checks first (where its
# order differs from aclnnLayerNorm's, the first entries).
ORDER = [
    # (what, builder kwargs, expected status, words expected in the message)
    ("weight/bias dtypes equal before bias's dtype", dict(b=D((9,), np.uint64)), INVALID,
     "weightOptional dtype FLOAT != biasOptional dtype"),
    ("rstd dtype before mean dtype", dict(m=D((4, 1), np.uint64), r=D((4, 1), np.uint64)),
     INVALID, "rstdOutOptional dtype"),
    ("empty normalizedShape before ranks", dict(ns=[], m=D((1,) * 9)), INVALID,
     "normalizedShape is empty"),
    ("out rank before input rank", dict(x=D((1,) * 9), y=D((1,) * 10)), INVALID,
     "out rank 10"),
    ("rstd rank before mean rank", dict(m=D((1,) * 9), r=D((1,) * 10)), INVALID,
     "rstdOutOptional rank"),
    ("mean rank before bias rank", dict(m=D((1,) * 9), b=D((1,) * 10)), INVALID,
     "meanOutOptional rank"),
    ("weight rank before input rank", dict(ns=[4, 9, 1], w=D((9,))), INVALID,
     "weightOptional rank"),
    ("input rank before bias rank", dict(ns=[4, 9, 1], w=D((4, 9, 1)), b=D((9,))), INVALID,
     "input rank"),
    ("input dtype before shapes", dict(x=D((4, 9), np.uint64), ns=[]), INVALID, "input dtype"),
    ("trailing dims before out shape", dict(ns=[8], w=D((8,)), b=D((8,)), y=D((5, 9))),
     INVALID, "does not end with"),
    ("out shape before the copies", dict(y=D((5, 9), F16), m=D((3, 1))), INVALID, "out shape"),
    ("out's copy before rstd's", dict(y=D((4, 9), F16), r=D((2, 2))), COPY,
     "out dtype FLOAT16 != input's dtype FLOAT"),
    ("rstd's copy before mean's", dict(m=D((4,)), r=D((2, 2))), COPY, "rstdOutOptional shape"),
]


@full_part
@pytest.mark.parametrize("what,kw,code,word", ORDER, ids=[o[0] for o in ORDER])
def test_check_order(arena, what, kw, code, word):
    rng = np.random.default_rng(1)
    descs = dict(x=D((4, 9)), w=D((9,)), b=D((9,)), y=D((4, 9)), m=D((4, 1)), r=D((4, 1)))
    descs.update({k: v for k, v in kw.items() if k != "ns"})
    views = [make(arena, descs[k], rng) for k in "xwbymr"]
    run(arena, views[0], kw.get("ns", [9]), *views[1:], expect=code)
    msg = last_msg()
    assert word in msg and "aclnnFastLayerNormGetWorkspaceSize" in msg, msg


def test_null_out_pointers(arena):
    rng = np.random.default_rng(2)
    x, y = DevView(arena, rand(rng, (3, 4), F32)), DevView(arena, shape=(3, 4), dtype=F32)
    ns = arena.int_array([4])
    ex = ffi.new("aclOpExecutor **")
    ws = ffi.new("uint64_t *")
    args = (x.handle, ns, ffi.NULL, ffi.NULL, 1e-5, y.handle, ffi.NULL, ffi.NULL)
    assert P1(*args, ffi.NULL, ex) == NULLPTR and "workspaceSize" in last_msg()
    assert P1(*args, ws, ffi.NULL) == NULLPTR and "executor" in last_msg()
    nothing = (ffi.NULL, ns, ffi.NULL, ffi.NULL, 1e-5, ffi.NULL, ffi.NULL, ffi.NULL)
    assert P1(*nothing, ffi.NULL, ex) == NULLPTR and "workspaceSize" in last_msg()


@full_part
def test_statistics_are_copied_in_the_kernels_shape(arena):
    """mean/rstd are copied from the kernel's [A1..Ai, 1..1] without a reshape: that shape,
    or one element each (561103 otherwise, where aclnnLayerNorm takes any shape of M
    elements); in an empty call nothing compares them, and the emulator asks for M elements
    (stricter, as for aclnnLayerNorm)."""
    rng = np.random.default_rng(3)
    x = rand(rng, (4, 3, 8), F32)
    for shape, expect in (((4, 3, 1), OK), ((12,), COPY), ((12, 1), COPY), ((4, 1, 1), COPY)):
        m = DevView(arena, shape=shape, dtype=F32, sentinel=0.0)
        run(arena, DevView(arena, x), [8], y=DevView(arena, shape=x.shape, dtype=F32), mean=m,
            expect=expect)
        if expect == OK:
            np.testing.assert_allclose(m.read().ravel(), x.mean(axis=2).ravel(), rtol=1e-6,
                                       atol=1e-6)
        else:
            assert "meanOutOptional shape" in last_msg(), last_msg()
    x1 = rand(rng, (1, 9), F32)
    for shape in ((1,), (1, 1, 1), ()):
        m = DevView(arena, shape=shape, dtype=F32, sentinel=0.0)
        run(arena, DevView(arena, x1), [9], y=DevView(arena, shape=x1.shape, dtype=F32), mean=m)
        np.testing.assert_allclose(m.read().ravel(), x1.mean(), rtol=1e-6)
    x0 = np.zeros((4, 0), F32)
    for shape, expect in (((4,), OK), ((2, 2), OK), ((5,), INVALID)):
        r = DevView(arena, shape=shape, dtype=F32, sentinel=0.0)
        run(arena, DevView(arena, x0), [0], y=DevView(arena, shape=x0.shape, dtype=F32),
            rstd=r, expect=expect)
        if expect == OK:
            assert np.isnan(r.read()).all()
        else:
            assert "M = 4" in last_msg(), last_msg()


@full_part
def test_out_must_be_of_input_dtype(arena):
    """The op_api copies the kernel's out without a cast: another dtype is 561103 (any
    supported one passes its dtype check first)."""
    rng = np.random.default_rng(4)
    for dt in (F16, F32):
        other = F32 if dt == F16 else F16
        x = rand(rng, (3, 16), dt)
        run(arena, DevView(arena, x), [16], y=DevView(arena, shape=x.shape, dtype=other),
            expect=COPY)
        assert "out dtype" in last_msg()


# ---- the part ----------------------------------------------------------------------------------

def test_parts(arena):
    """Atlas A2/A3 and Ascend 950 run every dtype (BF16 too); the Atlas training series has no
    LayerNormV4 kernel, Atlas inference parts FLOAT16 rows of <= 64 elements that are not a
    multiple of 16 only (its one tiling template): the emulator refuses the rest in phase one
    (561003; the device's op_api discards the L0 op's status), empty calls still succeed."""
    rng = np.random.default_rng(5)
    bf = rand(rng, (3, 40), BF16)
    out = lambda x: DevView(arena, shape=x.shape, dtype=x.dtype)  # noqa: E731
    empty = np.zeros((0, 40), F16)
    run(arena, DevView(arena, empty), [40], y=out(empty))
    if SOC in FULL:
        got = call(arena, bf, 1)
        check(got, bf, 1, None, None)
        return
    for x, n, ok in ((rand(rng, (3, 40), F16), 40, SOC.startswith("Ascend310P")),
                     (rand(rng, (3, 48), F16), 48, False),
                     (rand(rng, (3, 100), F16), 100, False),
                     (rand(rng, (3, 40), F32), 40, False), (bf, 40, False)):
        run(arena, DevView(arena, x), [n], y=out(x), expect=OK if ok else NO_KERNEL)
        if not ok:
            msg = last_msg()
            assert "not supported on" in msg and SOC in msg, msg


# every test on each other part (those needing a full part are not generated there)
test_on_other_parts = run_on_parts(other_parts(PARTS), "not test_vendor_unit_test_cases")


@full_part
def test_documented_size_limit(arena):
    """N above 583705600 (the docs' limit; their code, 561103), checked in phase one on
    tensors without memory (phase one reads no data)."""
    n = 583705601
    x = arena.tensor((1, n), F32, (n, 1), 0, n, ffi.NULL)
    y = arena.tensor((1, n), F32, (n, 1), 0, n, ffi.NULL)
    rc, _, _ = phase_one(arena, x, [n], None, None, y, None, None)
    assert rc == COPY and "583705600" in last_msg(), last_msg()


# ---- numbers -----------------------------------------------------------------------------------

COMBOS = [(i, p, bias) for i in DTYPES for p in (None, "same", F32) for bias in (False, True)]


@full_part
@pytest.mark.parametrize("in_dt,param,bias", COMBOS,
                         ids=[f"in={i}-w={p}-bias={b}" for i, p, b in COMBOS])
def test_numbers_against_float64_reference(arena, in_dt, param, bias):
    rng = np.random.default_rng(hash((str(in_dt), str(param), bias)) % 2**32)
    x = rand(rng, (7, 3, 181), in_dt)
    pdt = in_dt if param == "same" else param
    w = None if pdt is None else (rng.standard_normal((3, 181)) + 1).astype(pdt)
    b = None if not bias else rand(rng, (3, 181), pdt or in_dt, 0.5, 0)
    got = call(arena, x, 2, w, b)
    check(got, x, 2, w, b)


@full_part
@pytest.mark.parametrize("dt", DTYPES)
def test_statistics_are_float_then_cast(arena, dt):
    """LayerNormV4 writes FLOAT mean/rstd on every part, cast to the outputs' dtypes: where
    aclnnLayerNorm's LayerNormV3 writes them in weight's FLOAT16 (N = 256 on Atlas A2),
    FastLayerNorm's FLOAT outputs hold values no FLOAT16 holds."""
    rng = np.random.default_rng(6)
    x = rand(rng, (64, 256), dt)
    w = (rng.standard_normal(256) + 1).astype(dt)
    got = call(arena, x, 1, w, w)
    check(got, x, 1, w, w)
    for s in got[1:]:
        assert not representable(s, BF16 if dt == BF16 else F16)
    for sdt in (F16, BF16):
        narrow = call(arena, x, 1, w, w, stat_dt=sdt)
        for wide, n in zip(got[1:], narrow[1:]):
            assert np.array_equal(n.view(np.uint16), wide.astype(sdt).view(np.uint16))


@full_part
@pytest.mark.parametrize("dt", DTYPES)
def test_same_kernel_as_layer_norm(arena, dt):
    """The same L0 kernel: with a bias given, FLOAT statistics and out of input's dtype,
    aclnnLayerNorm's results bit for bit (LayerNormV3 and V4 are one model in the emulator:
    only the statistics' dtype differs)."""
    rng = np.random.default_rng(7)
    for shape, nlen in (((33, 300), 1), ((5, 4, 40), 1), ((2, 3, 1031), 2)):
        x = rand(rng, shape, dt)
        w = (rng.standard_normal(shape[-nlen:]) + 1).astype(F32)
        b = rand(rng, shape[-nlen:], F32, 0.5, 0)
        fast = call(arena, x, nlen, w, b)
        ln = layer_norm_call(arena, x, nlen, w, b)
        for a, c in zip(fast, ln):
            assert np.array_equal(a.view(np.uint8), c.view(np.uint8))


@full_part
def test_absent_bias_is_zeros_added(arena):
    """The op_api fills an absent bias with zeros and the kernel adds them: a -0 result is
    +0 on every part (aclnnLayerNorm's op_api does so off Ascend950 only, where its kernel
    adds nothing for an absent bias: -0 stays). An absent weight is ones: multiplying by them
    changes nothing."""
    x = np.full((2, 16), -0.0, F32)
    y = call(arena, x, 1)[0]
    assert (y == 0).all() and not np.signbit(y).any()
    assert (np.signbit(layer_norm_call(arena, x, 1)[0]) == SOC.startswith("Ascend950")).all()
    assert not np.signbit(call(arena, x, 1, np.ones(16, F32))[0]).any()
    assert np.signbit(call(arena, x, 1, None, np.full(16, -0.0, F32))[0]).all()


def test_empty_tensors(arena):
    rng = np.random.default_rng(8)
    x = rand(rng, (0, 3, 8), F32)
    got = call(arena, x, 2, rand(rng, (3, 8), F32))
    assert all(g.size == 0 for g in got)
    x = np.zeros((4, 0), F32)
    for dt, kind in ((F32, "contig"), (F16, "stepped"), (BF16, "padded")):
        y, mean, rstd = call(arena, x, 1, stat_dt=dt, kinds=("contig",) * 4 + (kind,) * 2)
        assert y.size == 0 and (mean == 0).all() and np.isnan(rstd.astype(F32)).all()


@full_part
@pytest.mark.parametrize("kind", ("transposed", "padded", "stepped"))
def test_strided_views_match_contiguous_bit_for_bit(arena, kind):
    rng = np.random.default_rng(9)
    x = rand(rng, (6, 5, 70), BF16)
    w, b = rand(rng, (5, 70), BF16), rand(rng, (5, 70), BF16)
    base = call(arena, x, 2, w, b)
    check(base, x, 2, w, b)
    for i in range(6):
        kinds = ["contig"] * 6
        kinds[i] = kind
        got = call(arena, x, 2, w, b, kinds=kinds)
        for a, c in zip(base, got):
            assert np.array_equal(a.view(np.uint8), c.view(np.uint8)), (kind, i)


@full_part
def test_repeatable_executor(arena):
    rng = np.random.default_rng(10)
    x = rand(rng, (50, 64), F32)
    vx, vy = DevView(arena, x), DevView(arena, shape=x.shape, dtype=F32)
    rc, ws, ex = phase_one(arena, vx.handle, [64], None, None, vy.handle, None, None)
    assert rc == OK
    assert lib.aclSetAclOpExecutorRepeatable(ex) == OK
    wsp = arena.malloc(ws)
    for _ in range(2):
        assert P2(wsp, ws, ex, arena.stream) == OK
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        check((vy.read(), None, None), x, 1, None, None)
    assert lib.aclDestroyAclOpExecutor(ex) == OK
