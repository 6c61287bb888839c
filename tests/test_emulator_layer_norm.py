"""The emulator's aclnnLayerNorm / aclnnLayerNormWithImplMode, through the raw cffi calls.

Checks and codes are the vendor's (hicann/ops-nn norm/layer_norm_v4/op_host/op_api/
aclnn_layer_norm.cpp, in its order; the cases of its unit tests tests/ut/op_host/op_api/
test_aclnn_layer_norm.cpp are replayed in VENDOR_UT). Numbers are checked against the
float64 reference of acl_py.reference (layer_norm, layer_norm_error_scale) on the very values
the device holds; where the design promises bits (the dtype a result is rounded through, a
strided view against a contiguous one, thread counts) the test compares bits.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib
from acl_py.soc import supports_bfloat16

# The raw-call helpers (session stream, leak check after every test, device views) are the
# backward's; importing the fixtures makes them this module's too.
from test_emulator_op import (BF16, DTYPES, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_kernel_clones import variant_prefixes  # noqa: F401  (the clone-free builds)

from _emu_aclnn import both_phases_without_a_device
from _part_runs import PARTS, bf16_where_it_runs, on_this_part, other_parts, run_on_parts
from _workspace_model import ARCH, fills_ws, handed_over_all, max_allocator

P1 = lib.aclnnLayerNormGetWorkspaceSize
P2 = lib.aclnnLayerNorm
P1_MODE = lib.aclnnLayerNormWithImplModeGetWorkspaceSize
P2_MODE = lib.aclnnLayerNormWithImplMode
NAMES = ("input", "weightOptional", "biasOptional", "out", "meanOutOptional",
         "rstdOutOptional")


# The part is fixed for a process (read once, as the vendor's runtime caches it): a test about
# another part than this process's is collected only in a child process emulating it
# (on_this_part, test_on_other_parts).
SOC = ffi.string(lib.aclrtGetSocName()).decode()
# The dtypes this part computes: no BFLOAT16 on the Atlas training and inference series (phase
# one refuses it in any tensor: 161002)
HERE = tuple(d for d in DTYPES if d != BF16 or supports_bfloat16())


def phase_one(arena, x, ns, w, b, y, mean, rstd, eps=1e-5, mode=None):
    """Phase one on handles (None = NULL); returns (status, workspace size, executor)."""
    h = lambda v: ffi.NULL if v is None else v  # noqa: E731
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    nsa = ffi.NULL if ns is None else arena.int_array(ns)
    args = (h(x), nsa, h(w), h(b), eps, h(y), h(mean), h(rstd))
    rc = P1(*args, ws, ex) if mode is None else P1_MODE(*args, mode, ws, ex)
    return rc, ws[0], ex[0]


def run(arena, x, ns, w=None, b=None, y=None, mean=None, rstd=None, eps=1e-5, mode=None,
        expect=OK):
    """Phase one and two on DevViews, synchronized. Returns phase one's status."""
    hv = lambda v: None if v is None else v.handle  # noqa: E731
    rc, ws, ex = phase_one(arena, hv(x), ns, hv(w), hv(b), hv(y), hv(mean), hv(rstd), eps,
                           mode)
    assert rc == expect, (rc, last_msg())
    if rc == OK:
        p2 = P2 if mode is None else P2_MODE
        assert p2(*workspace(arena, ws), ex, arena.stream) == OK, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
    return rc


def workspace(arena, size):
    """(workspace, size) for phase two: device memory of phase one's size, NULL for 0."""
    return (arena.malloc(size) if size else ffi.NULL), size


def stat_shape(shape, nlen):
    return tuple(shape[:len(shape) - nlen]) + (1,) * nlen


def call(arena, x, nlen, w=None, b=None, *, eps=1e-5, out_dt=None, stat_dt=F32,
         kinds=("contig",) * 6, stats=True, mode=None):
    """One call on fresh views (kinds: input, weight, bias, out, mean, rstd); returns
    (out, mean, rstd) as read back (None for absent statistics)."""
    ns = list(x.shape[x.ndim - nlen:])
    V = lambda v, k: None if v is None else DevView(arena, v, kind=k)  # noqa: E731
    vx, vw, vb = V(x, kinds[0]), V(w, kinds[1]), V(b, kinds[2])
    vy = DevView(arena, shape=x.shape, dtype=out_dt or x.dtype, kind=kinds[3], sentinel=-77.0)
    sshape = stat_shape(x.shape, nlen)
    vm, vr = ((DevView(arena, shape=sshape, dtype=stat_dt, kind=k, sentinel=-77.0)
               for k in kinds[4:]) if stats else (None, None))
    run(arena, vx, ns, vw, vb, vy, vm, vr, eps=eps, mode=mode)
    return vy.read(), None if vm is None else vm.read(), None if vr is None else vr.read()


def check(got, x, nlen, w, b, eps=1e-5):
    """got = (out, mean, rstd) against the float64 reference, tolerance by input's dtype."""
    ns = x.shape[x.ndim - nlen:]
    exp = reference.layer_norm(x, ns, w, b, eps)
    mag = reference.layer_norm_error_scale(x, ns, w, b, eps)
    for g, e, m, name in zip(got, exp, mag, ("out", "mean", "rstd")):
        if g is not None:
            reference.assert_close(g, e, m, x.dtype, name)


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def representable(values, dt):
    """Every value survives a round trip through dt (it was rounded to dt)."""
    v = np.asarray(values, np.float32)
    return np.array_equal(v.astype(dt).astype(np.float32), v)


# ---- the vendor's example and unit tests ------------------------------------------------------

def test_vendor_example_values(arena):
    """examples/test_aclnn_layer_norm_v4.cpp: x = 2 everywhere, [1, 2, 32] over [32]."""
    y, mean, rstd = call(arena, np.full((1, 2, 32), 2.0, F32), 1, np.ones(32, F32),
                         np.zeros(32, F32))
    assert (y == 0).all() and (mean == 2).all()
    # eps reaches the kernel as float: 1 / sqrtf(1e-5f), printed by the example as 316.227783
    assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-5))).all()
    assert [f"{v:f}" for v in rstd.ravel()] == ["316.227783"] * 2


def D(shape, dt=F32, kind="contig"):
    return (tuple(shape), np.dtype(dt) if dt is not None else None, kind)


# (id, input, ns, weight, bias, out, mean, rstd, expected status): the vendor's unit tests
# (ascend910B2 cases, weight/bias/out/mean/rstd descriptors as they give them)
VENDOR_UT = [
    ("float32", D((2, 6, 5, 6)), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6)), D((2, 6, 5, 6)),
     D((2, 1, 1, 1)), D((2, 1, 1, 1)), OK),
    ("double", D((2, 6, 5, 6), np.float64), [6, 5, 6], D((6, 5, 6), np.float64),
     D((6, 5, 6), np.float64), D((2, 6, 5, 6), np.float64), D((2, 1, 1, 1), np.float64),
     D((2, 1, 1, 1), np.float64), INVALID),
    ("input_uint64", D((2, 6, 5, 6), np.uint64), [6, 5, 6], D((6, 5, 6), np.uint64),
     D((6, 5, 6), np.uint64), D((2, 6, 5, 6), np.uint64), D((2, 1, 1, 1), np.uint64),
     D((2, 1, 1, 1), np.uint64), INVALID),
    ("weight_uint64", D((2, 6, 5, 6)), [6, 5, 6], D((6, 5, 6), np.uint64),
     D((6, 5, 6), np.uint64), D((2, 6, 5, 6)), D((2, 1, 1, 1)), D((2, 1, 1, 1)), INVALID),
    ("bias_uint64", D((2, 6, 5, 6)), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6), np.uint64),
     D((2, 6, 5, 6)), D((2, 1, 1, 1)), D((2, 1, 1, 1)), INVALID),
    ("weight_bias_diff", D((2, 6, 5, 6)), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6), F16),
     D((2, 6, 5, 6)), D((2, 1, 1, 1)), D((2, 1, 1, 1)), INVALID),
    ("out_uint64", D((2, 6, 5, 6)), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6)),
     D((2, 6, 5, 6), np.uint64), D((2, 1, 1, 1), np.uint64), D((2, 1, 1, 1), np.uint64),
     INVALID),
    ("all_reduce", D((3, 2, 1, 16)), [3, 2, 1, 16], D((3, 2, 1, 16)), D((3, 2, 1, 16)),
     D((3, 2, 1, 16)), D((1, 1, 1, 1)), D((1, 1, 1, 1)), OK),
    ("rank5", D((2, 3, 4, 5, 6)), [3, 4, 5, 6], D((3, 4, 5, 6)), D((3, 4, 5, 6)),
     D((2, 3, 4, 5, 6)), D((2, 1, 1, 1, 1)), D((2, 1, 1, 1, 1)), OK),
    ("rank5_norm2", D((2, 2, 2, 2, 2)), [2, 2], D((2, 2)), D((2, 2)), D((2, 2, 2, 2, 2)),
     D((2, 2, 2, 1, 1)), D((2, 2, 2, 1, 1)), OK),
    ("empty_batch", D((0, 2, 7, 18)), [7, 18], D((7, 18)), D((7, 18)), D((0, 2, 7, 18)),
     D((0, 2, 1, 1)), D((0, 2, 1, 1)), OK),
    ("empty_norm", D((2, 0, 4)), [0, 4], D((0, 4)), D((0, 4)), D((2, 0, 4)), D((2, 1, 1)),
     D((2, 1, 1)), OK),
    ("rank11", D((1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2)), [2, 1, 2, 1, 2, 1, 2, 1, 2, 2],
     D((2, 1, 2, 1, 2, 1, 2, 1, 2, 2)), D((2, 1, 2, 1, 2, 1, 2, 1, 2, 2)),
     D((1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2)), D((1,) * 11), D((1,) * 11), INVALID),
    ("norm_empty", D((2, 6, 5, 6)), [], D(()), D(()), D((2, 6, 5, 6)), D((2, 6, 5, 6)),
     D((2, 6, 5, 6)), INVALID),
    ("weight_vs_norm", D((2, 6, 5, 6)), [5, 6], D((6, 5, 6)), D((6, 5, 6)), D((2, 6, 5, 6)),
     D((2, 1, 1, 1)), D((2, 1, 1, 1)), INVALID),
    ("input_vs_norm", D((2, 6, 5, 6)), [7, 8], D((7, 8)), D((7, 8)), D((2, 6, 5, 6)),
     D((2, 6, 1, 1)), D((2, 6, 1, 1)), INVALID),
    ("weight_vs_bias", D((2, 2)), [2], D((2,)), D((3,)), D((2, 2)), D((2, 1)), D((2, 1)),
     INVALID),
    ("input_null", None, [8, 9], D((8, 9)), D((8, 9)), D((7, 8, 9)), D((7, 1, 1)),
     D((7, 1, 1)), NULLPTR),
    ("norm_null", D((7, 8, 9)), None, D((8, 9)), D((8, 9)), D((7, 8, 9)), D((7, 1, 1)),
     D((7, 1, 1)), NULLPTR),
    ("out_null", D((7, 8, 9)), [8, 9], D((8, 9)), D((8, 9)), None, D((7, 1, 1)),
     D((7, 1, 1)), NULLPTR),
    ("mean_null", D((7, 8, 9)), [8, 9], D((8, 9)), D((8, 9)), D((7, 8, 9)), None,
     D((7, 1, 1)), OK),
    ("rstd_null", D((7, 8, 9)), [8, 9], D((8, 9)), D((8, 9)), D((7, 8, 9)), D((7, 1, 1)),
     None, OK),
    ("fp16_mixed", D((2, 6, 5, 6), F16), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6)),
     D((2, 6, 5, 6), F16), D((2, 1, 1, 1)), D((2, 1, 1, 1)), OK),
    ("bf16_mixed", D((2, 6, 5, 6), BF16), [6, 5, 6], D((6, 5, 6)), D((6, 5, 6)),
     D((2, 6, 5, 6), BF16), D((2, 1, 1, 1)), D((2, 1, 1, 1)), OK),
]

ACL_OF = {np.dtype(np.float64): 11, np.dtype(np.uint64): 10}


def make(arena, desc, rng):
    """A tensor for a (shape, dtype, kind) descriptor: float dtypes with random values, others
    with the right acl dtype over float storage of the same element count."""
    if desc is None:
        return None
    shape, dt, kind = desc
    if dt in (F32, F16, BF16):
        return DevView(arena, rand(rng, shape, dt), kind=kind)
    return DevView(arena, shape=shape, dtype=F32, kind=kind, acl_dtype=ACL_OF[dt])


@pytest.mark.parametrize("case", VENDOR_UT, ids=[c[0] for c in VENDOR_UT])
def test_vendor_unit_test_cases(arena, case):
    _, xd, ns, wd, bd, yd, md, rd, expect = case
    if any(d is not None and d[1] == BF16 for d in (xd, wd, bd, yd, md, rd)) and \
            not supports_bfloat16():
        expect = INVALID
    rng = np.random.default_rng(len(case[0]))
    views = [make(arena, d, rng) for d in (xd, wd, bd, yd, md, rd)]
    run(arena, views[0], ns, *views[1:], eps=1e-12 if case[0] == "float32" else 1e-5,
        expect=expect)
    if expect == OK and xd[1] in (F32, F16, BF16) and all(d > 0 for d in xd[0]):
        x = views[0].read()
        got = (views[3].read(), None if views[4] is None else views[4].read(),
               None if views[5] is None else views[5].read())
        check(got, x, len(ns), views[1].read(), views[2].read(),
              1e-12 if case[0] == "float32" else 1e-5)


# Two faults in one call: the message names the one the vendor checks first.
ORDER = [
    # (what, builder kwargs, word expected in the message)
    ("input dtype before shapes", dict(x=D((4, 9), np.uint64), ns=[]), "input dtype"),
    ("weight dtype before out dtype", dict(w=D((9,), np.uint64), y=D((4, 9), np.uint64)),
     "weightOptional dtype"),
    ("out dtype before ranks", dict(y=D((4, 9), np.uint64), m=D((1,) * 9)), "out dtype"),
    ("ranks before normalizedShape length", dict(m=D((1,) * 9), ns=[]), "meanOutOptional rank"),
    ("normalizedShape too long before empty weight", dict(ns=[1] * 9, w=D((3,))),
     "normalizedShape length 9"),
    ("input rank before weight rank", dict(ns=[4, 9, 1], w=D((9,))), "input rank"),
    ("weight rank before shapes", dict(w=D((1, 9)), y=D((4, 8))), "weightOptional rank"),
    ("trailing dims before out shape", dict(ns=[8], w=D((8,)), b=D((8,)), y=D((5, 9))),
     "does not end with"),
    ("out shape before statistics count", dict(y=D((5, 9)), m=D((3, 1))), "out shape"),
]


@pytest.mark.parametrize("what,kw,word", ORDER, ids=[o[0] for o in ORDER])
def test_check_order(arena, what, kw, word):
    rng = np.random.default_rng(1)
    descs = dict(x=D((4, 9)), w=D((9,)), b=D((9,)), y=D((4, 9)), m=D((4, 1)), r=D((4, 1)))
    descs.update({k: v for k, v in kw.items() if k != "ns"})
    views = [make(arena, descs[k], rng) for k in "xwbymr"]
    run(arena, views[0], kw.get("ns", [9]), *views[1:], expect=INVALID)
    assert word in last_msg(), last_msg()


def test_null_out_pointers_and_dead_handles(arena):
    rng = np.random.default_rng(2)
    x, y = DevView(arena, rand(rng, (3, 4), F32)), DevView(arena, shape=(3, 4), dtype=F32)
    ns = arena.int_array([4])
    ex = ffi.new("aclOpExecutor **")
    ws = ffi.new("uint64_t *")
    args = (x.handle, ns, ffi.NULL, ffi.NULL, 1e-5, y.handle, ffi.NULL, ffi.NULL)
    assert P1(*args, ffi.NULL, ex) == NULLPTR and "workspaceSize" in last_msg()
    assert P1(*args, ws, ffi.NULL) == NULLPTR and "executor" in last_msg()
    # before anything else (the vendor's L2_DFX_PHASE_1: hicann/opbase op_dfx.cpp
    # CheckPhase1Params), a NULL input or out included
    nothing = (ffi.NULL, ns, ffi.NULL, ffi.NULL, 1e-5, ffi.NULL, ffi.NULL, ffi.NULL)
    assert P1(*nothing, ffi.NULL, ex) == NULLPTR and "workspaceSize" in last_msg()
    assert P1_MODE(*nothing, 7, ws, ffi.NULL) == NULLPTR and "executor" in last_msg()
    dead = DevView(arena, rand(rng, (4,), F32))
    arena.destroy_tensor(dead.handle)
    assert P1(x.handle, ns, dead.handle, ffi.NULL, 1e-5, y.handle, ffi.NULL, ffi.NULL, ws,
              ex) == INVALID
    msg = last_msg()
    assert "weightOptional" in msg and "not a live aclTensor" in msg


def test_statistics_must_hold_one_value_per_row(arena):
    """Stricter than the vendor off regbase parts (docs/emulator.md): meanOut/rstdOut with
    another element count than M are refused; any shape with M elements is accepted. On
    Ascend950 (DAV_3510) the op_api itself asks input's batch dims then ones, so only
    ``[4, 3, 1]`` of these passes (test_regbase_part_checks_statistics_shapes: its rules)."""
    regbase = SOC.startswith("Ascend950")
    rng = np.random.default_rng(3)
    x = rand(rng, (4, 3, 8), F32)
    for shape, expect in (((4, 3, 1), OK), ((12,), INVALID if regbase else OK),
                          ((12, 1), INVALID if regbase else OK), ((4, 1, 1), INVALID),
                          ((13,), INVALID)):
        m = DevView(arena, shape=shape, dtype=F32, sentinel=0.0)
        run(arena, DevView(arena, x), [8], y=DevView(arena, shape=x.shape, dtype=F32), mean=m,
            expect=expect)
        if expect == INVALID:
            msg = last_msg()
            assert "meanOutOptional" in msg and (regbase or "M = 12" in msg), msg
        else:
            np.testing.assert_allclose(m.read().ravel(), x.mean(axis=2).ravel(), rtol=1e-6,
                                       atol=1e-6)


# ---- the part ----------------------------------------------------------------------------------

@on_this_part("part", ["Ascend910A", "Ascend910ProB", "Ascend310P3"])
def test_bf16_refused_on_parts_without_it(arena, part):
    rng = np.random.default_rng(4)
    x = rand(rng, (3, 16), BF16)
    run(arena, DevView(arena, x), [16], y=DevView(arena, shape=x.shape, dtype=BF16),
        expect=INVALID)
    msg = last_msg()
    assert "input dtype BF16" in msg and part in msg, msg
    # a BF16 output is refused as well; FLOAT16/FLOAT run
    run(arena, DevView(arena, x.astype(F16)), [16], y=DevView(arena, shape=x.shape, dtype=F16),
        mean=DevView(arena, shape=(3, 1), dtype=BF16), expect=INVALID)
    assert "meanOutOptional dtype BF16" in last_msg()
    call(arena, x.astype(F16), 1, stat_dt=F16)


@on_this_part("part", ["Ascend950PR_9599", "Ascend910B2", "Ascend910A", "Ascend310P3"])
def test_absent_bias_is_added_as_zeros_off_regbase_parts(arena, part):
    """Off a regbase part the op_api fills an absent bias with zeros (l0op::Fill) and the
    kernel adds them, so a -0 result comes out +0; on Ascend950 the kernel is told there is
    no bias and adds nothing: -0 stays. x constant at -0: (x - mean) * rstd is -0 in every
    dtype. A present -0 bias keeps -0 everywhere; an absent weight is ones (no change)."""
    regbase = part.startswith("Ascend950")
    for dt in (F32, F16):
        x = np.full((3, 16), -0.0, dt)
        for w in (None, np.ones(16, dt)):
            y = call(arena, x, 1, w)[0]
            assert (y == 0).all()
            assert (np.signbit(y) == regbase).all(), (dt, w is None)
        y = call(arena, x, 1, None, np.full(16, -0.0, dt))[0]
        assert np.signbit(y).all()


@on_this_part("part", ["Ascend950PR_9599", "Ascend910B2"])
def test_regbase_part_checks_statistics_shapes(arena, part):
    """Ascend950 (DAV_3510): meanOut/rstdOut must be input's batch dims then ones, and equal
    (the vendor's unit tests error_mean_shape / error_rstd_shape); elsewhere any shape holding
    M elements."""
    rng = np.random.default_rng(5)
    x = rand(rng, (2, 6, 5, 6), F32)
    args = lambda m, r: dict(y=DevView(arena, shape=x.shape, dtype=F32),  # noqa: E731
                             mean=DevView(arena, shape=m, dtype=F32),
                             rstd=DevView(arena, shape=r, dtype=F32))
    run(arena, DevView(arena, x), [6, 5, 6], **args((2, 1, 1, 1), (2, 1, 1, 1)))
    run(arena, DevView(arena, x), [6, 5, 6], **args((3, 1, 1, 1), (2, 1, 1, 1)),
        expect=INVALID)
    run(arena, DevView(arena, x), [6, 5, 6], **args((2, 1, 1, 1), (2, 1, 5, 1)),
        expect=INVALID)
    assert "rstdOutOptional" in last_msg()
    if part.startswith("Ascend950"):
        run(arena, DevView(arena, x), [6, 5, 6], **args((2,), (2,)), expect=INVALID)
        assert "rank 1 != input rank 4" in last_msg()
        run(arena, DevView(arena, x), [6, 5, 6], **args((2, 1, 1, 1), (2, 1, 1)),
            expect=INVALID)
    else:
        run(arena, DevView(arena, x), [6, 5, 6], **args((2,), (2,)))
        run(arena, DevView(arena, x), [6, 5, 6], **args((2, 1, 1, 1), (2, 1, 1)))


def test_impl_mode_checks(arena):
    rng = np.random.default_rng(6)
    x16 = rand(rng, (3, 8), F16)
    y = lambda dt: DevView(arena, shape=(3, 8), dtype=dt)  # noqa: E731
    for mode in (0, 1, 2):
        run(arena, DevView(arena, x16), [8], DevView(arena, rand(rng, (8,), F16)), y=y(F16),
            mode=mode)
    for mode in (-1, 3):
        run(arena, DevView(arena, x16), [8], y=y(F16), mode=mode, expect=INVALID)
        assert f"implMode {mode}" in last_msg()
    # keep FLOAT16 needs every input FLOAT16
    run(arena, DevView(arena, x16), [8], DevView(arena, rand(rng, (8,), F32)), y=y(F16),
        mode=2, expect=INVALID)
    run(arena, DevView(arena, x16.astype(F32)), [8], y=y(F32), mode=2, expect=INVALID)
    assert "implMode 2" in last_msg()
    # the implMode check comes after the shape checks
    run(arena, DevView(arena, x16), [9], y=y(F16), mode=7, expect=INVALID)
    assert "normalizedShape" in last_msg()


# each part's tests (those parametrized with its name: on_this_part), none skipped
test_on_other_parts = run_on_parts(other_parts(PARTS + ("Ascend910ProB",)), lambda part: part,
                                   skips=False)


# ---- numbers -----------------------------------------------------------------------------------

COMBOS = bf16_where_it_runs([(i, p, bias, o) for i in DTYPES for p in (None, "same", F32)
                             for bias in (False, True) for o in ("same", F32)])


@pytest.mark.parametrize("in_dt,param,bias,out", COMBOS,
                         ids=[f"in={i}-w={p}-bias={b}-out={o}" for i, p, b, o in COMBOS])
def test_numbers_against_float64_reference(arena, in_dt, param, bias, out):
    rng = np.random.default_rng(hash((str(in_dt), str(param), bias, out)) % 2**32)
    x = rand(rng, (7, 3, 181), in_dt)
    pdt = in_dt if param == "same" else param
    w = None if pdt is None else (rng.standard_normal((3, 181)) + 1).astype(pdt)
    b = None if not bias else rand(rng, (3, 181), pdt or in_dt, 0.5, 0)
    got = call(arena, x, 2, w, b, out_dt=in_dt if out == "same" else out)
    check(got, x, 2, w, b)


def test_out_is_computed_in_input_dtype_then_cast(arena):
    """fp16/bf16 input, FLOAT out: the values carry input's rounding, bit for bit the
    same-dtype result widened; FLOAT input, narrow out: rounded once from float."""
    rng = np.random.default_rng(7)
    for dt in (d for d in HERE if d != F32):
        x = rand(rng, (33, 300), dt)
        w = (rng.standard_normal(300) + 1).astype(F32)
        wide = call(arena, x, 1, w, out_dt=F32)[0]
        narrow = call(arena, x, 1, w, out_dt=dt)[0]
        assert representable(wide, dt)
        assert np.array_equal(wide, narrow.astype(F32))
    x = rand(rng, (33, 300), F32)
    wide = call(arena, x, 1)[0]
    for dt in (d for d in HERE if d != F32):
        assert np.array_equal(call(arena, x, 1, out_dt=dt)[0].view(np.uint16),
                              wide.astype(dt).view(np.uint16))


# (part, input dtype, weight/bias dtype, N, statistics dtype the kernel writes)
STAT_DTYPES = [
    ("Ascend910B2", F16, F16, 256, F16),      # LayerNormV3: mean in weight's dtype
    ("Ascend910B2", F16, None, 256, F16),     # absent weight: made in input's dtype
    ("Ascend910B2", F16, F32, 256, F32),
    ("Ascend910B2", BF16, BF16, 300, BF16),
    ("Ascend910B2", BF16, BF16, 1024, F32),   # LayerNormV4 single-read template
    ("Ascend910B2", F16, F16, 40, F32),       # LayerNormV4 transpose: N % 16 != 0, N < 64
    ("Ascend910B2", F32, F32, 20, F32),
    ("Ascend910_9391", F16, F16, 48, F16),    # N % 16 == 0: V3
    ("Ascend950PR_9599", F16, F16, 256, F32),  # regbase: always V4
    ("Ascend950PR_9599", BF16, None, 256, F32),
    ("Ascend910A", F16, F16, 256, F16),
    ("Ascend310P3", F16, F16, 40, F32),       # LayerNormV4 310P transpose template
    ("Ascend310P3", F16, F16, 48, F16),
]


@on_this_part("part,in_dt,p_dt,n,stat_dt", STAT_DTYPES, part=lambda case: case[0],
              ids=[f"{s[0]}-{s[1]}-{s[2]}-N{s[3]}" for s in STAT_DTYPES])
def test_statistics_dtype_per_part(arena, part, in_dt, p_dt, n, stat_dt):
    """mean/rstd are produced in the kernel's statistics dtype and then cast: FLOAT outputs
    hold values of that dtype exactly (and not of a narrower one when it is FLOAT)."""
    rng = np.random.default_rng(n)
    x = rand(rng, (64, n), in_dt)
    w = None if p_dt is None else (rng.standard_normal(n) + 1).astype(p_dt)
    got = call(arena, x, 1, w, w, stat_dt=F32)
    check(got, x, 1, w, w)
    for s in got[1:]:
        assert representable(s, stat_dt)
        if stat_dt == F32:
            assert not representable(s, BF16 if in_dt == BF16 else F16)


def test_eps_reaches_the_kernel_as_float(arena):
    """1e-46 is a positive double but 0 as a float: constant rows get rstd = inf."""
    x = np.full((2, 8), 3.0, F32)
    _, mean, rstd = call(arena, x, 1, eps=1e-46)
    assert (mean == 3).all() and np.isposinf(rstd).all()
    _, _, rstd = call(arena, x, 1, eps=1e-30)
    assert (rstd == np.float32(1) / np.sqrt(np.float32(1e-30))).all()


def test_empty_tensors(arena):
    rng = np.random.default_rng(8)
    # M == 0: nothing is written
    x = rand(rng, (0, 3, 8), F32)
    got = call(arena, x, 2, rand(rng, (3, 8), F32))
    assert all(g.size == 0 for g in got)
    # N == 0: mean filled with 0 and rstd with NaN, in their dtypes and layouts
    x = np.zeros((4, 0), F32)
    for dt, kind in ((F32, "contig"), (F16, "stepped"), (BF16, "padded")):
        if dt not in HERE:
            continue
        y, mean, rstd = call(arena, x, 1, stat_dt=dt, kinds=("contig",) * 4 + (kind,) * 2)
        assert y.size == 0 and (mean == 0).all() and np.isnan(rstd.astype(F32)).all()


@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_no_rows_needs_no_current_device(arena, null_stream):
    """M == 0: the op_api returns an executor with no kernel (aclnn_layer_norm.cpp), whose
    run (CommonOpExecutorRun, an empty launcher list) touches no stream or context: both
    phases succeed on a thread that never set a device, with a NULL stream or a given one
    (nothing queued on it). N == 0 fills the statistics (a kernel) and a call with rows
    launches one: both need the thread's context, 361001 naming the call, given the workspace
    phase one asks (on Ascend 950 the Fills' 16 MiB, LayerNormV4's 32 bytes; none from the
    TBE LayerNormV3 elsewhere; on Ascend910A/Ascend310P3 the results until their copies into
    outputs with slack after their views: _workspace_model.handed_over)."""
    stream = ffi.NULL if null_stream else arena.stream

    def args(shape):
        n = shape[-1:]
        return (DevView(arena, np.zeros(shape, F32)), arena.int_array(list(n)),
                DevView(arena, np.ones(n, F32)), DevView(arena, np.zeros(n, F32)), 1e-5,
                DevView(arena, shape=shape, dtype=F32),
                DevView(arena, shape=stat_shape(shape, 1), dtype=F32),
                DevView(arena, shape=stat_shape(shape, 1), dtype=F32))
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, args((0, 3, 8)), stream)
    assert (rc, ws, rc2) == (OK, 0, OK), msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    for shape in ((4, 0), (2, 8)):
        a = args(shape)
        if shape[1]:  # y, mean, rstd of the one kernel, handed over in turn
            want = max_allocator(([(32, 0, 0)] if ARCH == 3510 else []) + handed_over_all(
                0, [(math.prod(v.shape) * 4, v) for v in a[5:]])[0])
        else:
            want = max_allocator(fills_ws(a[6:]))
        rc, ws, rc2, msg = both_phases_without_a_device(
            P1, P2, a, stream, workspace=arena.malloc(want) if want else None)
        assert (rc, ws, rc2) == (OK, want, 361001), (shape, msg)
        assert msg.startswith("aclnnLayerNorm: ") and "no device" in msg, msg


LAYOUTS = ("transposed", "padded", "stepped")


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dt", bf16_where_it_runs(DTYPES))
def test_strided_views_match_contiguous_bit_for_bit(arena, kind, dt):
    rng = np.random.default_rng(9)
    x = rand(rng, (6, 5, 70), dt)
    w, b = rand(rng, (5, 70), dt), rand(rng, (5, 70), dt)
    base = call(arena, x, 2, w, b)
    check(base, x, 2, w, b)
    for i in range(6):
        kinds = ["contig"] * 6
        kinds[i] = kind
        got = call(arena, x, 2, w, b, kinds=kinds)
        for a, c in zip(base, got):
            assert np.array_equal(a.view(np.uint8), c.view(np.uint8)), (kind, NAMES[i])


def test_in_place_out_is_input(arena):
    rng = np.random.default_rng(10)
    x = rand(rng, (9, 130), F32)
    w = rand(rng, (130,), F32)
    expect = call(arena, x, 1, w)[0]
    vx = DevView(arena, x)
    run(arena, vx, [130], DevView(arena, w), y=vx)
    assert np.array_equal(vx.read(), expect)


@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, BF16]))
def test_deterministic_across_thread_counts(arena, dt):
    rng = np.random.default_rng(11)
    x = rand(rng, (300, 1531), dt)
    results = []
    for n in (1, 2, 3):
        lib.aclemuSetNumThreads(n)
        results.append(call(arena, x, 1, rand(rng, (1531,), F32)))
        rng = np.random.default_rng(11)
        x = rand(rng, (300, 1531), dt)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("shape,nlen", [((1,), 1), ((2, 1), 1), ((1, 70001), 1),
                                        ((20000, 3), 1), ((3, 4, 1031), 2)])
def test_sizes(arena, shape, nlen):
    rng = np.random.default_rng(shape[-1])
    x = rand(rng, shape, F32)
    check(call(arena, x, nlen), x, nlen, None, None)


# ---- executors and launches ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["input", "out", "meanOutOptional"])
def test_repeatable_executor_refuses_to_run_after_a_tensor_is_destroyed(arena, name):
    """CANN's executor reads the caller's aclTensors at every run (hicann/opbase
    src/nnopbase/common/utils/op_cache.cpp keeps each one's aclStorage): a run after one was
    destroyed is refused, naming it; the executor is kept, and runs up to then were right."""
    rng = np.random.default_rng(12)
    x = rand(rng, (50, 64), F32)
    views = {"input": DevView(arena, x), "out": DevView(arena, shape=x.shape, dtype=F32),
             "meanOutOptional": DevView(arena, shape=(50, 1), dtype=F32)}
    rc, ws, ex = phase_one(arena, views["input"].handle, [64], None, None, views["out"].handle,
                           views["meanOutOptional"].handle, None)
    assert rc == OK
    wsp = workspace(arena, ws)
    assert lib.aclSetAclOpExecutorRepeatable(ex) == OK
    assert P2(*wsp, ex, arena.stream) == OK
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    check((views["out"].read(), views["meanOutOptional"].read(), None), x, 1, None, None)
    arena.destroy_tensor(views[name].handle)
    for _ in range(2):
        assert P2(*wsp, ex, arena.stream) == INVALID
        assert last_msg().startswith(f"aclnnLayerNorm: {name} (aclTensor"), last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_single_use_executor_runs_once(arena):
    rng = np.random.default_rng(13)
    x = rand(rng, (5, 8), F32)
    rc, ws, ex = phase_one(arena, DevView(arena, x).handle, [8], None, None,
                           DevView(arena, shape=x.shape, dtype=F32).handle, None, None)
    assert rc == OK
    wsp = workspace(arena, ws)
    assert P2(*wsp, ex, arena.stream) == OK
    assert P2(*wsp, ex, arena.stream) != OK
    assert lib.aclrtSynchronizeStream(arena.stream) == 0


def test_freed_memory_is_refused_at_launch(arena):
    """The input's memory freed between the phases: phase two refuses, naming it."""
    rng = np.random.default_rng(14)
    x = rand(rng, (5, 8), F32)
    ptr = ffi.new("void **")
    assert lib.aclrtMalloc(ptr, x.nbytes, 0) == 0
    t = arena.tensor(x.shape, F32, [8, 1], 0, x.size, ptr[0])
    rc, ws, ex = phase_one(arena, t, [8], None, None,
                           DevView(arena, shape=x.shape, dtype=F32).handle, None, None)
    assert rc == OK
    assert lib.aclrtFree(ptr[0]) == 0
    assert P2(*workspace(arena, ws), ex, arena.stream) == INVALID
    assert "aclnnLayerNorm: input view" in last_msg()
    # Who releases a single-use executor after a failed phase two is the executor model's
    # rule (docs/emulator.md), not this operator's: destroy it if it is still live.
    lib.aclDestroyAclOpExecutor(ex)


# ---- the same bits on every CPU (the kernel's x86 clones, as tests/test_kernel_clones.py) ------

FORWARD_DIGEST = """
import hashlib, json
import numpy as np
from ml_dtypes import bfloat16
import acl_py as acl
from acl_py.ops import LAYER_NORM
rng = np.random.default_rng(2026)
out = {}
for dname, dt in (("fp32", np.float32), ("fp16", np.float16), ("bf16", bfloat16)):
    for m, n in ((70, 1543), (37, 1000), (5, 17)):
        for wdt, bias, odt in ((dt, True, dt), (np.float32, False, np.float32), (None, True, dt)):
            x = (rng.standard_normal((m, n)) * 3 + 1).astype(dt)
            w = None if wdt is None else acl.DeviceTensor.from_numpy(
                (rng.random(n) + 0.5).astype(wdt))
            b = None if not bias else acl.DeviceTensor.from_numpy(
                rng.standard_normal(n).astype(wdt or dt))
            outs = (acl.DeviceTensor.zeros((m, n), odt), acl.DeviceTensor.zeros((m, 1), dt),
                    acl.DeviceTensor.zeros((m, 1), np.float32))
            LAYER_NORM.launch((acl.DeviceTensor.from_numpy(x), acl.IntArray([n]), w, b, 1e-5,
                               *outs), device=0)
            acl.synchronize()
            h = hashlib.sha256()
            for o in outs:
                h.update(np.ascontiguousarray(o.to_numpy()).view(np.uint8).tobytes())
            out[f"{dname}-{m}x{n}-{wdt is not None}-{bias}-{np.dtype(odt).name}"] = h.hexdigest()
print(json.dumps(out))
"""


@pytest.mark.no_leak_check
def test_kernel_clones_give_identical_bits(variant_prefixes):
    import json
    import subprocess
    import sys

    def digests(prefix):
        env = dict(os.environ, ACL_PY_BACKEND="emulator", ACL_PY_EMULATOR_PREFIX=str(prefix),
                   ACL_EMU_NUM_THREADS="2", ACL_EMU_SOC="Ascend910B2")  # a part with BF16
        r = subprocess.run([sys.executable, "-c", FORWARD_DIGEST], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    default = digests(lib.backend.root)
    assert len(default) == 27
    for name, prefix in variant_prefixes.items():
        other = digests(prefix)
        assert other == default, f"{name} build differs: " + ", ".join(
            k for k in default if other.get(k) != default[k])
