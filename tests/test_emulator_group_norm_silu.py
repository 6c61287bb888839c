"""The emulator's aclnnGroupNormSilu and aclnnGroupNormSiluV2 through raw calls: phase one's
checks, their order, codes and messages (hicann/ops-nn norm/group_norm_silu/op_host/op_api/
aclnn_group_norm_silu.cpp, the L0 op and the outputs' ViewCopy: docs/emulator.md), the
vendor's own op_api unit test cases replayed with their expected status, the empty input per
part, and the device's numbers: against the float64 reference, and bit for bit against each
part's chain written in NumPy (GroupNorm's chain of tests/test_emulator_group_norm.py, Silu
on the float32 out before its rounding; float32 gamma/beta; Ascend 950's float32 statistics
and its kernel without beta); V2 without the activation gives GroupNorm's bits; the other
parts in their own processes.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from test_emulator_group_norm import (ARCH, BF16_PART, SENTINEL, bits, device_chain, rand,
                                      writes_stats)
from test_emulator_group_norm import call as group_norm_call
from _emu_aclnn import both_phases_without_a_device, run_phase_two
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import cases_where, only_where, run_on_parts

P1 = lib.aclnnGroupNormSiluGetWorkspaceSize
P2 = lib.aclnnGroupNormSilu
V2P1 = lib.aclnnGroupNormSiluV2GetWorkspaceSize
V2P2 = lib.aclnnGroupNormSiluV2
INNER_NULLPTR = 561103
REGBASE = ARCH == 3510
HAS_KERNEL = ARCH != 1001
# the kernel's tests are defined where it has one (the parts with it run them)
where_it_runs = only_where(HAS_KERNEL)


def phase_one(x, g, b, group, eps, y, m, r, silu=None, ws=True, ex=True):
    """V1 (silu None) or V2 with activateSilu ``silu``."""
    if silu is None:
        return aclnn_phase_one(P1, x, g, b, group, eps, y, m, r, ws=ws, ex=ex)
    return aclnn_phase_one(V2P1, x, g, b, group, eps, silu, y, m, r, ws=ws, ex=ex)


def stats_dtype(x, g, b):
    """meanOut's and rstdOut's dtype: x's; on Ascend 950 gamma's, else beta's."""
    if REGBASE:
        for t in (g, b):
            if t is not None:
                return t.dtype
    return x.dtype


def call(arena, x, group, g=None, b=None, eps=1e-5, silu=None):
    """Runs the operator on x [N, C, ...]; (out, mean, rstd) read back."""
    vx = DevView(arena, x)
    vg = None if g is None else DevView(arena, g)
    vb = None if b is None else DevView(arena, b)
    sdt = stats_dtype(x, g, b)
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, sentinel=SENTINEL)
    vm = DevView(arena, shape=(x.shape[0], group), dtype=sdt, sentinel=SENTINEL)
    vr = DevView(arena, shape=(x.shape[0], group), dtype=sdt, sentinel=SENTINEL)
    run_phase_two(arena, V2P2 if silu is not None else P2,
                  phase_one(vx, vg, vb, group, eps, vy, vm, vr, silu))
    return vy.read(), vm.read(), vr.read()


# ---- numbers ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16, *cases_where(BF16_PART, BF16)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("shape,group,affine_dt",
                         [((2, 16, 6, 5), 4, None), ((3, 8, 7), 8, "f32"), ((4, 12), 3, None)],
                         ids=["6x5", "float32-affine", "2-D"])
def test_numbers_against_float64_reference(arena, dt, shape, group, affine_dt):
    rng = np.random.default_rng(sum(shape) + group)
    x = rand(rng, shape, dt)
    adt = F32 if affine_dt else dt
    g, b = rand(rng, shape[1], adt, 0.5, 1.0), rand(rng, shape[1], adt, 0.5, 0.0)
    got = call(arena, x, group, g, b)
    exp = reference.group_norm_silu(x, g, b, group)
    mag = reference.group_norm_silu_error_scale(x, g, b, group)
    for a, e, m, name in zip(got, exp, mag, ("out", "mean", "rstd")):
        if name != "out" and not writes_stats(x, group):
            assert (a == SENTINEL).all()
            continue
        reference.assert_close(a, e, m, dt, name)


# a float32 gamma/beta ("f32") beside a 16-bit input only: beside a float32 one it is "same"
@where_it_runs
@pytest.mark.parametrize("affine,dt", [(a, d) for a in ("same", "f32", "none")
                                       for d in (F32, F16, *cases_where(BF16_PART, BF16))
                                       if a != "f32" or d != F32],
                         ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("silu", [None, True, False], ids=["v1", "v2-silu", "v2-no-silu"])
@pytest.mark.parametrize("shape,group", [((3, 16, 7, 9), 4), ((4, 24, 1), 6), ((3, 10, 1), 10)],
                         ids=["7x9", "hw1", "hw1-one-channel"])
def test_outputs_follow_the_kernel_chain_bit_for_bit(arena, dt, affine, silu, shape, group):
    rng = np.random.default_rng(11)
    x = rand(rng, shape, dt, 2.0, 0.75)
    c = shape[1]
    adt = F32 if affine == "f32" else dt
    g = rand(rng, c, adt, 0.5, 1.0) if affine != "none" else None
    b = rand(rng, c, adt, 0.5, 0.0) if affine != "none" else None
    got = call(arena, x, group, g, b, silu=silu)
    want = device_chain(x, group, g, b, 1e-5, activate=silu is not False,
                        add_beta=b is not None or not REGBASE,
                        stats_dtype=stats_dtype(x, g, b))
    assert np.array_equal(bits(got[0]), bits(want[0]))
    if writes_stats(x, group):
        assert got[1].dtype == want[1].dtype
        assert np.array_equal(bits(got[1]), bits(want[1]))
        assert np.array_equal(bits(got[2]), bits(want[2]))


@where_it_runs
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
def test_v2_without_silu_gives_group_norms_bits(arena, dt):
    """The same kernels with the activation off (GroupNorm runs them on these parts)."""
    rng = np.random.default_rng(3)
    x = rand(rng, (2, 12, 5, 3), dt)
    g, b = rand(rng, 12, dt, 0.5, 1.0), rand(rng, 12, dt)
    got = call(arena, x, 4, g, b, silu=False)
    gn = group_norm_call(arena, x, 4, g, b)
    for a, e in zip(got, gn):
        assert np.array_equal(bits(a), bits(e))
    with_silu = call(arena, x, 4, g, b, silu=True)
    assert not np.array_equal(bits(with_silu[0]), bits(got[0]))
    assert np.array_equal(bits(with_silu[1]), bits(got[1]))


@where_it_runs
def test_silu_saturates_as_float32_does(arena):
    """Large |y|: exp(-y) overflows to inf for y << 0 (out -0.0), and y / (1 + tiny) is y."""
    x = np.array([[-1e4, 1e4] * 4], F32).reshape(1, 8, 1)
    g = np.full(8, 200.0, F32)
    out, _, _ = call(arena, x, 1, g, np.zeros(8, F32))
    want = device_chain(x, 1, g, np.zeros(8, F32), 1e-5, activate=True)[0]
    assert np.array_equal(bits(out), bits(want))
    assert (out.ravel()[1::2] > 190).all() and (out.ravel()[0::2] == 0).all()


@only_where(REGBASE)   # Ascend 950's kernel without beta (its own run or its child)
def test_no_beta_adds_nothing_on_ascend_950(arena):
    """A constant group times a negative gamma is -0.0; the kernel without beta keeps it
    (silu(-0) = -0), where an added zero beta gives +0."""
    x = np.full((1, 4, 3), 2.0, F32)
    g = np.full(4, -1.0, F32)
    out, _, _ = call(arena, x, 2, g, None)
    assert (bits(out) == 0x80000000).all()
    out, _, _ = call(arena, x, 2, g, np.zeros(4, F32))
    assert (bits(out) == 0).all()


@only_where(ARCH == 2002)   # the Atlas inference parts' SD kernel (their run or child)
def test_sd_kernel_reads_float32_gamma_and_beta_as_float16(arena):
    """FLOAT16 x, N 1, group 32, HxW > 1: tiling key 109, GroupNormSiluSD<half, half>, which
    reads float32 gamma/beta memory as FLOAT16 values (the first C of them)."""
    rng = np.random.default_rng(9)
    x = rand(rng, (1, 64, 4), F16)
    g, b = rand(rng, 64, F32, 0.5, 1.0), rand(rng, 64, F32)
    out, mean, rstd = call(arena, x, 32, g, b)
    as_half = (g.view(F16)[:64].astype(F32), b.view(F16)[:64].astype(F32))
    want = device_chain(x, 32, *as_half, 1e-5, activate=True)[0]
    assert np.array_equal(bits(out), bits(want))
    honest = device_chain(x, 32, g, b, 1e-5, activate=True)[0]
    assert not np.array_equal(bits(out), bits(honest))
    assert (mean == SENTINEL).all() and (rstd == SENTINEL).all()   # SD writes neither


@where_it_runs
def test_executor_keeps_running_on_new_contents(arena):
    x = DevView(arena, np.zeros((2, 4, 4), F32))    # HxW 4: every part writes mean
    y = DevView(arena, shape=(2, 4, 4), dtype=F32)
    m, r = DevView(arena, shape=(2, 2), dtype=F32), DevView(arena, shape=(2, 2), dtype=F32)
    rc, ws, ex = phase_one(x, None, None, 2, 1e-5, y, m, r, True)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    workspace = arena.malloc(ws)
    try:
        for k in (1, 3):
            arena.h2d(x.ptr, np.full(x.n, k, F32))
            assert V2P2(workspace, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            assert (m.read() == k).all() and (y.read() == 0).all()
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- empty inputs, per part --------------------------------------------------------------------

@pytest.mark.parametrize("shape,group", [((2, 4, 0), 2), ((0, 4, 3), 2), ((2, 0, 5), 1)],
                         ids=["hw0", "n0", "c0"])
def test_empty_input(arena, shape, group):
    """Off regbase: N or C 0 refused (161002), HxW 0 fills meanOut 0 and rstdOut NaN (the
    op_api, before the L0 op: on the Atlas training parts too); on Ascend 950 N 0 writes
    nothing, C or HxW 0 runs the empty-tensor kernel: both NaN."""
    x = DevView(arena, np.ones(shape, F16))
    y = DevView(arena, shape=shape, dtype=F16)
    m = DevView(arena, shape=(shape[0], group), dtype=F16, sentinel=SENTINEL)
    r = DevView(arena, shape=(shape[0], group), dtype=F16, sentinel=SENTINEL)
    rc, _, ex = phase_one(x, None, None, group, 1e-5, y, m, r)
    if not REGBASE and 0 in shape[:2]:
        assert rc == INVALID and "must be greater than 0 on this part" in last_msg()
        return
    run_phase_two(arena, P2, (rc, _, ex))
    mean, rstd = m.read(), r.read()
    assert np.isnan(rstd).all()
    assert (np.isnan(mean) if REGBASE else mean == 0).all()


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(2, 4, 3), group=2, xdt=F32, gdt=None, bdt=None, ydt=None, mdt=None,
          rdt=None, gshape=None, bshape=None, yshape=None, mshape=None, rshape=None, xacl=None,
          no_gamma=False, no_beta=False):
    n = shape[0] if shape else 1
    c = shape[1] if len(shape) > 1 else 1
    x = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    g = None if no_gamma else DevView(arena, np.ones(gshape or (c,), gdt or xdt))
    b = None if no_beta else DevView(arena, np.zeros(bshape or (c,), bdt or xdt))
    y = DevView(arena, shape=yshape or shape, dtype=ydt or xdt)
    m = DevView(arena, shape=mshape or (n, group), dtype=mdt or xdt)
    r = DevView(arena, shape=rshape or (n, group), dtype=rdt or xdt)
    return x, g, b, y, m, r


def refused(args, code, *words, group=2, eps=1e-5, silu=None):
    x, g, b, y, m, r = args
    rc, _, ex = phase_one(x, g, b, group, eps, y, m, r, silu)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    fn = "aclnnGroupNormSilu" + ("V2" if silu is not None else "") + "GetWorkspaceSize: "
    assert msg.startswith(fn), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_out_pointers_first(arena):
    x, g, b, y, m, r = views(arena)
    assert phase_one(None, g, b, 2, 1e-5, y, m, r, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(None, g, b, 2, 1e-5, y, m, r, True, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("silu", [None, True])
@pytest.mark.parametrize("k,name", [(0, "self"), (3, "out"), (4, "meanOut"), (5, "rstdOut")])
def test_each_required_tensor(arena, k, name, silu):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL", silu=silu)


PARAM_CASES = [
    (dict(xacl=lib.ACL_INT32), {}, ("self dtype ACL_INT32", "FLOAT16")),
    (dict(gdt=F16, bdt=F32), {}, ("gamma dtype FLOAT16 must be FLOAT (beta's dtype)",)),
    (dict(xdt=F16, gdt=F32, bdt=F16), {}, ("gamma dtype FLOAT must be FLOAT16 (beta's",)),
    (dict(gdt=F16, bdt=F16), {}, ("gamma dtype FLOAT16 must be self's dtype FLOAT or FLOAT",)),
    (dict(gdt=F16, no_beta=True), {}, ("gamma dtype FLOAT16 must be FLOAT",)),
    (dict(ydt=F16), {}, ("out dtype FLOAT16 must be FLOAT (self's dtype)",)),
    (dict(shape=(8,), mshape=(8, 1), rshape=(8, 1), gshape=(1,), bshape=(1,)), dict(group=1),
     ("self rank 1 is not in [2, 8]",)),
    (dict(shape=(1,) * 9, gshape=(1,), bshape=(1,), mshape=(1, 1), rshape=(1, 1)),
     dict(group=1), ("self rank 9 is not in [2, 8]",)),
    (dict(yshape=(2, 4, 4)), {}, ("out shape [2,4,4] must equal self's shape [2,4,3]",)),
    (dict(mshape=(2, 1)), {}, ("meanOut shape [2,1] must be [N, group] = [2,2]",)),
    (dict(rshape=(4,)), {}, ("rstdOut shape [4] must be [N, group] = [2,2]",)),
    (dict(gshape=(2, 2)), {}, ("gamma shape [2,2] must be a vector of C = 4",)),
    (dict(bshape=(5,)), {}, ("beta shape [5] must be a vector of C = 4",)),
    (dict(mshape=(2, 0), rshape=(2, 0)), dict(group=0), ("group 0 must be greater than 0",)),
    (dict(), dict(eps=0.0), ("eps 0 must be greater than 0",)),
    (dict(), dict(eps=float("nan")), ("eps nan must be greater than 0",)),
    (dict(mshape=(2, 3), rshape=(2, 3)), dict(group=3),
     ("C 4 must be divisible by group 3", "self [2,4,3]")),
]
PARAM_IDS = ["self-int32", "gamma-beta-dtypes", "gamma-beta-dtypes-f16", "gamma-not-self-or-f32",
             "gamma-f16-for-f32-self", "out-dtype", "rank1", "rank9", "out-shape", "mean-shape",
             "rstd-shape", "gamma-shape", "beta-shape", "group-0", "eps-0", "eps-nan",
             "group-divides"]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=PARAM_IDS)
def test_parameter_refusals(arena, case, kw, words):
    """The op_api's CheckParams: 161002, naming the argument and the rule (every part)."""
    refused(views(arena, **case), INVALID, *words, **kw)


def test_checks_run_in_the_vendor_order(arena):
    """dtypes, then shapes, then the attributes (GroupNorm's op_api has them the other way)."""
    refused(views(arena, ydt=F16, yshape=(9,)), INVALID, "out dtype", group=0)
    refused(views(arena, yshape=(9,), mshape=(2, 0), rshape=(2, 0)), INVALID, "out shape",
            group=0)
    refused(views(arena, mshape=(2, 0), rshape=(2, 0)), INVALID, "group 0", group=0,
            eps=0.0)


@where_it_runs
def test_statistics_dtypes_by_part(arena):
    """Off regbase meanOut and rstdOut take self's dtype (161002); on Ascend 950 the op_api
    checks them only next to float32 gamma/beta, and the copy of the kernel's statistics
    refuses any other dtype (561103)."""
    rc, _, ex = phase_one(*views(arena, xdt=F16, mdt=F32)[:3], 2, 1e-5,
                          *views(arena, xdt=F16, mdt=F32)[3:])
    msg = last_msg()
    if REGBASE:
        assert rc == INNER_NULLPTR and "meanOut dtype FLOAT must be FLOAT16, the kernel's" in msg
    else:
        assert rc == INVALID and "meanOut dtype FLOAT must be FLOAT16 (self's dtype)" in msg
    args = views(arena, xdt=F16, gdt=F32, bdt=F32)
    rc, _, ex = phase_one(*args[:3], 2, 1e-5, *args[3:])
    msg = last_msg()
    if REGBASE:
        assert rc == INVALID and "meanOut dtype FLOAT16 must be FLOAT (FLOAT gamma/beta)" in msg
    else:
        assert rc == OK, msg
        assert lib.aclDestroyAclOpExecutor(ex) == OK


@where_it_runs
@pytest.mark.parametrize("missing", ["gamma", "beta"])
def test_float32_gamma_or_beta_alone_with_a_16_bit_self(arena, missing):
    """Off regbase the op_api makes the absent one of self's dtype: no kernel takes that pair
    (the tiling's equal-size rule, 561103); Ascend 950 passes it absent and runs."""
    args = views(arena, xdt=F16, gdt=F32, bdt=F32, mdt=F32 if REGBASE else F16,
                 rdt=F32 if REGBASE else F16, **{f"no_{missing}": True})
    rc, _, ex = phase_one(*args[:3], 2, 1e-5, *args[3:])
    if REGBASE:
        assert rc == OK, last_msg()
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert rc == INNER_NULLPTR and "one dtype size" in last_msg(), last_msg()


@where_it_runs
def test_formats(arena):
    """No format rule (FRACTAL_NZ is only warned about); the copy of out needs out's format
    to be self's unless self is ND (561103)."""
    x, g, b, y, m, r = views(arena, shape=(2, 4, 3, 1))
    shape, strides = [2, 4, 3, 1], [12, 3, 1, 1]

    def tensor(view, f):
        t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), 4, lib.ACL_FLOAT,
                                ffi.new("int64_t[]", strides), 0, f,
                                ffi.new("int64_t[]", [view.n]), 1, view.ptr)
        assert t != ffi.NULL, last_msg()
        arena.tensors.append(t)
        return t

    for fx, fy, ok in [(lib.ACL_FORMAT_NHWC, lib.ACL_FORMAT_NHWC, True),
                       (lib.ACL_FORMAT_ND, lib.ACL_FORMAT_NCHW, True),
                       (lib.ACL_FORMAT_NCHW, lib.ACL_FORMAT_ND, False)]:
        rc, _, ex = phase_one(tensor(x, fx), g, b, 2, 1e-5, tensor(y, fy), m, r)
        assert (rc == OK) == ok, (fx, fy, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INNER_NULLPTR and "out's format" in last_msg()


def test_part_dtype_list_and_kernel(arena):
    """BF16 on Atlas A2/A3 and Ascend 950 only (161002); the Atlas training parts pass the
    checks and find no kernel (561103)."""
    for dt in (F32, F16, BF16):
        args = views(arena, xdt=dt)
        rc, _, ex = phase_one(*args[:3], 2, 1e-5, *args[3:])
        if dt == BF16 and not BF16_PART:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()
        elif not HAS_KERNEL:
            assert rc == INNER_NULLPTR and "no GroupNormSilu kernel" in last_msg()
        else:
            assert rc == OK, last_msg()
            assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_refusals_leak_nothing(arena):
    """Every refusal above returns before an executor exists (the autouse leak check)."""
    for case, kw, _ in PARAM_CASES:
        x, g, b, y, m, r = views(arena, **case)
        rc, _, ex = phase_one(x, g, b, kw.get("group", 2), kw.get("eps", 1e-5), y, m, r)
        assert rc == INVALID and ex == ffi.NULL


test_on_other_parts = run_on_parts(
    ["Ascend910A", "Ascend310P3", "Ascend950PR_9599"],
    "dtypes_by_part or alone or formats or dtype_list or empty or sd_kernel or no_beta or "
    "v2_without or bit_for_bit and 7x9 and v1 or bit_for_bit and hw1 and v2-silu or "
    "reference and float32-affine or vendor")


# ---- the vendor's op_api unit test, replayed ------------------------------------------------

# hicann/ops-nn norm/group_norm_silu/tests/ut/op_host/test_aclnn_group_norm_silu.cpp: its cases
# as (name, changes to the base call, expected status). The base: self [2, 3, 4], gamma and
# beta [3], group 1, eps 1e-5, out [2, 3, 4], meanOut and rstdOut [2, 1], every tensor FLOAT in
# format ND, V1 ("v2": aclnnGroupNormSiluV2 with activateSilu true). "null": the tensor passed
# as NULL. The two dtype_normal cases leave their status unchecked (commented out); they are
# replayed with the status this reading of the op_api gives (success on Atlas A2). The cases
# are named ascend910B2_*: replayed on Atlas A2/A3 (the other parts' codes differ by design).
VENDOR_UT_BASE = dict(self=(2, 3, 4), gamma=(3,), beta=(3,), group=1, out=(2, 3, 4),
                      mean=(2, 1), rstd=(2, 1))
VENDOR_UT = [
    ("case_float16_normal", dict(dtype=lib.ACL_FLOAT16, v2=True), OK),
    ("case_bfloat16_normal", dict(dtype=lib.ACL_BF16), OK),
    ("case_invalid_dtype_abnormal", dict(dtype=lib.ACL_DOUBLE), INVALID),
    ("case_gamma_not_1d_abnormal", dict(gamma=(3, 1)), INVALID),
    ("case_beta_not_1d_abnormal", dict(beta=(3, 1)), INVALID),
    ("case_1d_abnormal", dict(self=(2,), gamma=(1,), beta=(1,), out=(2,)), INVALID),
    ("case_2d_normal", dict(self=(2, 3), out=(2, 3)), OK),
    ("case_4d_normal", dict(self=(2, 3, 4, 1), out=(2, 3, 4, 1)), OK),
    ("case_5d_normal", dict(self=(2, 3, 4, 1, 1), out=(2, 3, 4, 1, 1)), OK),
    ("case_4d_normal_no_gamma", dict(self=(2, 4, 4, 4), gamma=(4,), beta=(4,),
                                     out=(2, 4, 4, 4)), OK),
    ("case_self_nullptr_abnormal", dict(null="self"), NULLPTR),
    ("case_gamma_nullptr_normal", dict(), OK),
    ("case_beta_nullptr_normal", dict(null="beta"), OK),
    ("case_empty_tensor_normal", dict(self=(2, 3, 0), out=(2, 3, 0)), OK),
    ("case_out_nullptr_abnormal", dict(null="out"), NULLPTR),
    ("case_dtype_normal0", dict(dtype=lib.ACL_BF16, gamma_dtype=lib.ACL_FLOAT,
                                beta_dtype=lib.ACL_FLOAT), OK),
    ("case_dtype_normal1", dict(dtype=lib.ACL_FLOAT16, gamma_dtype=lib.ACL_FLOAT,
                                beta_dtype=lib.ACL_FLOAT), OK),
    ("case_dtype_abnormal0", dict(gamma_dtype=lib.ACL_FLOAT16, beta_dtype=lib.ACL_FLOAT16),
     INVALID),
    ("case_dtype_abnormal1", dict(dtype=lib.ACL_FLOAT16, gamma_dtype=lib.ACL_BF16,
                                  beta_dtype=lib.ACL_BF16), INVALID),
    ("case_dtype_abnormal2", dict(gamma_dtype=lib.ACL_BF16, beta_dtype=lib.ACL_BF16), INVALID),
    ("case_dtype_abnormal3", dict(dtype=lib.ACL_BF16, gamma_dtype=lib.ACL_FLOAT16,
                                  beta_dtype=lib.ACL_FLOAT16), INVALID),
    ("case_float16_empty", dict(dtype=lib.ACL_FLOAT16, self=(2, 3, 0), out=(2, 3, 0), v2=True),
     OK),
]


def vendor_ut_tensor(arena, shape, acl_dtype):
    """A FLOAT-sized device tensor of the case's shape and dtype, format ND."""
    n = max(math.prod(shape), 1)
    ptr = arena.malloc(n * 16)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), len(shape), acl_dtype,
                            ffi.new("int64_t[]", strides or [0]), 0, lib.ACL_FORMAT_ND,
                            ffi.new("int64_t[]", [n]), 1, ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


@only_where(ARCH == 2201)   # the unit test's cases are Atlas A2's (ascend910B2)
@pytest.mark.parametrize("name,change,code", VENDOR_UT, ids=[c[0] for c in VENDOR_UT])
def test_vendor_op_api_unit_test_cases(arena, name, change, code):
    case = dict(VENDOR_UT_BASE, **change)
    dt = case.get("dtype", lib.ACL_FLOAT)
    ts = {k: vendor_ut_tensor(arena, case[k], case.get(f"{k}_dtype", dt))
          for k in ("self", "gamma", "beta", "out", "mean", "rstd")}
    if "null" in case:
        ts[case["null"]] = None
    rc, _, ex = phase_one(ts["self"], ts["gamma"], ts["beta"], case["group"], 1e-5, ts["out"],
                          ts["mean"], ts["rstd"], True if case.get("v2") else None)
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex) == OK
    else:
        assert ex == ffi.NULL and last_msg().startswith("aclnnGroupNormSilu")


@pytest.mark.parametrize("silu", [None, True], ids=["v1", "v2"])
@pytest.mark.parametrize("null_stream", [True, False], ids=["null-stream", "given-stream"])
def test_an_empty_batch_needs_no_current_device(arena, null_stream, silu):
    """N == 0, which only Ascend 950 takes (CheckAttr refuses it elsewhere: 161002): the
    op_api returns before the L0 op, so both phases succeed on a thread that never set a
    device, with a NULL stream or a given one. HxW == 0 with N > 0 fills meanOut and rstdOut
    (off Ascend 950 the op_api's FillScalar, a Fill kernel; on it the empty-tensor kernel):
    361001, as on the device."""
    stream = ffi.NULL if null_stream else arena.stream
    p1, p2 = (P1, P2) if silu is None else (V2P1, V2P2)

    def args(shape):
        x, g, b, y, m, r = views(arena, shape, 2)
        return (x, g, b, 2, 1e-5, y, m, r) if silu is None else (x, g, b, 2, 1e-5, silu, y,
                                                                 m, r)
    rc, ws, rc2, msg = both_phases_without_a_device(p1, p2, args((0, 4, 3)), stream)
    assert ((rc, ws, rc2) if REGBASE else (rc, rc2)) == ((OK, 0, OK) if REGBASE
                                                         else (INVALID, None)), msg
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    workspace = arena.malloc(32 << 20)  # above Ascend 950's empty kernel's 16 MiB
    rc, _, rc2, msg = both_phases_without_a_device(p1, p2, args((2, 4, 0)), stream, workspace)
    name = "aclnnGroupNormSilu" if silu is None else "aclnnGroupNormSiluV2"
    assert (rc, rc2) == (OK, 361001), msg
    assert msg.startswith(name + ": ") and "no device" in msg, msg
