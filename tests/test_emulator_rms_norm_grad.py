"""The emulator's aclnnRmsNormGrad through raw calls: phase one's checks, codes and messages
(hicann/ops-nn norm/rms_norm_grad: docs/aclnnRmsNormGrad.md, op_host/rms_norm_grad_def.cpp,
op_host/rms_norm_grad_tiling.cpp; the stricter choices in docs/emulator.md), the per-part
dtype tables, the device's numbers against the float64 reference for every dtype pair, and bit
for bit against the kernel's float32 chain (op_kernel/rms_norm_grad_split_n_high_precision.h,
rms_norm_grad_split_d_high_precision.h, reduce_common.h), with dgamma summed per core block in
core order; bits independent of the thread count and of the views' strides.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _device_reduce import half_interval_sum, lane_blocks_sum
from _emu_aclnn import SOC, check_part_dtype_table, rstd_shape, run_phase_two
from _part_runs import only_where, other_parts, run_on_parts
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnRmsNormGradGetWorkspaceSize
P2 = lib.aclnnRmsNormGrad
TILING = 561002
A2A3 = SOC.startswith(("Ascend910B", "Ascend910_93")) and SOC != "Ascend910B"
IS_950 = SOC.startswith("Ascend950")
TRAINING = SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem")) or SOC == "Ascend910B"
BF16_PART = A2A3 or IS_950
# (x, gamma) dtype pairs of the vendor's table on parts with BF16 (Atlas A2/A3, Ascend 950)
PAIRS = [(F32, F32), (F16, F16), (F16, F32), (BF16, BF16), (BF16, F32)]
NAMES = ["dy", "x", "rstd", "gamma", "dxOut", "dgammaOut"]


def vector_cores():
    """The cores the kernel's rows are split over (GetCoreNumAiv: the part's vector cores,
    its AI cores where its platform configuration lists none)."""
    v = ffi.new("int64_t *")
    for attr in (lib.ACL_DEV_ATTR_VECTOR_CORE_NUM, lib.ACL_DEV_ATTR_AICORE_CORE_NUM):
        assert lib.aclrtGetDeviceInfo(0, attr, v) == OK
        if v[0] > 0:
            return int(v[0])
    raise AssertionError("the part has no cores")


def phase_one(dy, x, rstd, gamma, dx, dgamma, ws=True, ex=True):
    return aclnn_phase_one(P1, dy, x, rstd, gamma, dx, dgamma, ws=ws, ex=ex)


def run(arena, *views):
    run_phase_two(arena, P2, phase_one(*views))


def call(arena, dy, x, rstd, g, kinds=("contig",) * 6):
    ins = [DevView(arena, v, kind=k) for v, k in zip((dy, x, rstd, g), kinds)]
    vdx = DevView(arena, shape=x.shape, dtype=x.dtype, kind=kinds[4], sentinel=-77.0)
    vdg = DevView(arena, shape=g.shape, dtype=F32, kind=kinds[5], sentinel=-77.0)
    run(arena, *ins, vdx, vdg)
    return vdx.read(), vdg.read()


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


def inputs(rng, shape, gdims, xdt, gdt):
    """dy, x, the forward's rstd (float32, shaped x's batch dims then ones) and gamma."""
    x = rand(rng, shape, xdt)
    g = rand(rng, shape[len(shape) - gdims:], gdt, 0.5, 1.0)
    dy = rand(rng, shape, xdt, 1.0, 0.0)
    rstd = reference.rms_norm(x, g)[1].astype(F32)
    return dy, x, rstd, g


def part_takes(*dts, n=64):
    """Whether this part takes x/gamma of ``dts`` and gamma of ``n`` elements: Atlas training
    parts a multiple of 64 only (rms_norm_grad_tiling.cpp COL_VAL_MULTIPLE_910), parts
    without BF16 neither BF16 nor FLOAT16 x beside FLOAT gamma (their table). A case it does
    not take could never run here, so it is no test here (the refusals:
    test_training_parts_need_gamma_a_multiple_of_64, test_part_dtype_table)."""
    if TRAINING and n % 64:
        return False
    return BF16_PART or (BF16 not in dts and dts[:2] != (F16, F32))


# the pairs this part takes
PART_PAIRS = [p for p in PAIRS if part_takes(*p)]


def gammas_taken(cases, size):
    """Those of ``cases`` (pytest.param) whose gamma, ``size(*values)`` elements, this part
    takes."""
    return [c for c in cases if part_takes(n=size(*c.values))]


# ---- the kernel's float32 chain, in NumPy ------------------------------------------------------

def float32_chain(dy, x, rstd, g):
    """(dx, dgamma) as the device's kernel computes them, every step one float32 rounding."""
    n = g.size
    x2, dy2 = x.astype(F32).reshape(-1, n), dy.astype(F32).reshape(-1, n)
    r, g1 = rstd.astype(F32).reshape(-1, 1), g.astype(F32).reshape(n)
    xr = x2 * r
    p = dy2 * xr
    dyg = dy2 * g1
    split_d = n > 6080 and not IS_950
    if split_d:
        t = p * g1
        s = np.zeros(len(x2), F32)
        for c in range(0, n, 4096):
            s = s + half_interval_sum(t[:, c:c + 4096])
    else:
        t = dyg * xr
        align = 8 if x.dtype == F32 else 16
        small = A2A3 and -(-n // align) * align <= 640
        s = lane_blocks_sum(t) if small else half_interval_sum(t)
    mean = s * (np.float32(1) / np.float32(n))
    dx = ((dyg - xr * mean[:, None]) * r).astype(x.dtype).reshape(x.shape)
    m = len(x2)
    rows = -(-m // vector_cores())
    group = 32 if split_d else rows
    dgamma = None
    for b0 in range(0, m, rows):        # core blocks, added in core order
        acc = np.zeros(n, F32)
        for g0 in range(b0, min(b0 + rows, m), group):
            gacc = np.zeros(n, F32)
            for k in range(g0, min(g0 + group, b0 + rows, m)):
                gacc = gacc + p[k]
            acc = acc + gacc
        dgamma = acc if dgamma is None else dgamma + acc
    return dx, dgamma.reshape(g.shape)


# ---- numbers ---------------------------------------------------------------------------------

NUMBER_SHAPES = gammas_taken(
    [pytest.param((7, 3, 181), 1, id="181"), pytest.param((5, 6, 40), 2, id="6x40"),
     pytest.param((300, 64), 1, id="300rows"), pytest.param((33,), 1, id="1-D")],
    lambda shape, gdims: int(np.prod(shape[len(shape) - gdims:])))


@pytest.mark.parametrize("xdt,gdt", PART_PAIRS, ids=[f"{x}-{g}" for x, g in PART_PAIRS])
@pytest.mark.parametrize("shape,gdims", NUMBER_SHAPES)
def test_numbers_against_float64_reference(arena, xdt, gdt, shape, gdims):
    dy, x, rstd, g = inputs(np.random.default_rng(sum(shape) + gdims), shape, gdims, xdt, gdt)
    dx, dg = call(arena, dy, x, rstd, g)
    exp = reference.rms_norm_grad(dy, x, rstd, g)
    mag = reference.rms_norm_grad_error_scale(dy, x, rstd, g)
    assert dx.dtype == xdt and dg.dtype == F32
    reference.assert_close(dx, exp[0], mag[0], xdt, "dx")
    reference.assert_close(dg, exp[1], mag[1], F32, "dgamma")


@pytest.mark.parametrize("xdt,gdt", PART_PAIRS, ids=[f"{x}-{g}" for x, g in PART_PAIRS])
@pytest.mark.parametrize("shape", gammas_taken(
    [pytest.param(s, id=i) for s, i in (((16, 300), "300"), ((100, 24), "24"),
                                        ((3, 1000), "1000"), ((130, 7), "130x7"),
                                        ((50, 640), "640"))], lambda shape: shape[1]))
def test_bits_are_the_kernels_float32_chain(arena, xdt, gdt, shape):
    """dx: x * rstd, dy * gamma, their product's row sum in the kernel's order, the mean,
    (dy * gamma - xr * mean) * rstd in float32, one rounding to x's dtype (ties to even);
    dgamma: dy * xr summed in order within each core block of ceil(M / cores) rows, the blocks
    added in core order (the deterministic mode's order)."""
    dy, x, rstd, g = inputs(np.random.default_rng(3), shape, 1, xdt, gdt)
    dx, dg = call(arena, dy, x, rstd, g)
    want_dx, want_dg = float32_chain(dy, x, rstd, g)
    assert np.array_equal(dx.view(np.uint8), want_dx.view(np.uint8))
    assert np.array_equal(dg.view(np.uint32), want_dg.view(np.uint32))


def test_long_rows_take_the_split_d_chain(arena):
    """Rows longer than 6080 (the split-D kernel outside Ascend 950): the row's sum of
    (dy * xr) * gamma over 4096-column chunks added in order, dgamma in 32-row groups."""
    dy, x, rstd, g = inputs(np.random.default_rng(4), (40, 9024), 1, F32, F32)
    dx, dg = call(arena, dy, x, rstd, g)
    want_dx, want_dg = float32_chain(dy, x, rstd, g)
    assert np.array_equal(dx.view(np.uint32), want_dx.view(np.uint32))
    assert np.array_equal(dg.view(np.uint32), want_dg.view(np.uint32))


@only_where(part_takes(F32, F32, n=16))
def test_vendor_example_values(arena):
    """examples/test_aclnn_rms_norm_grad.cpp: dy = x = 1..32 as [2, 1, 16], rstd [2] = 1, 2,
    gamma = 1..16: the float32 chain's values."""
    v = np.arange(1, 33, dtype=F32).reshape(2, 1, 16)
    g = np.arange(1, 17, dtype=F32)
    rstd = np.array([1, 2], F32)
    ins = [DevView(arena, a) for a in (v, v.copy(), rstd, g)]
    vdx = DevView(arena, shape=v.shape, dtype=F32, sentinel=-77.0)
    vdg = DevView(arena, shape=g.shape, dtype=F32, sentinel=-77.0)
    run(arena, *ins, vdx, vdg)
    want_dx, want_dg = float32_chain(v, v, rstd, g)
    assert np.array_equal(vdx.read(), want_dx) and np.array_equal(vdg.read(), want_dg)
    exp = reference.rms_norm_grad(v, v, rstd, g)
    assert np.allclose(vdx.read(), exp[0], rtol=1e-6) and np.allclose(vdg.read(), exp[1])


@only_where(part_takes(F16, F16, n=4 * 37))
@pytest.mark.parametrize("kinds", [(k,) * 6 for k in LAYOUTS[1:]] +
                         [("stepped", "contig", "padded", "transposed", "padded", "stepped")],
                         ids=lambda k: "-".join(k))
def test_strided_views_give_the_contiguous_bits(arena, kinds):
    dy, x, rstd, g = inputs(np.random.default_rng(5), (6, 4, 37), 2, F16, F16)
    base = call(arena, dy, x, rstd, g)
    got = call(arena, dy, x, rstd, g, kinds)
    for a, b in zip(base, got):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@only_where(part_takes(F32, F32, n=100))
def test_bits_do_not_depend_on_the_thread_count(arena):
    dy, x, rstd, g = inputs(np.random.default_rng(7), (613, 100), 1, F32, F32)
    runs = []
    for n in (1, 2, 5):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, dy, x, rstd, g))
    for r in runs[1:]:
        for a, b in zip(runs[0], r):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@only_where(part_takes(F32, F32, n=8))
def test_nan_stays_in_its_row_and_column(arena):
    """A NaN in x makes its row's dx NaN (the row's sum) and its column's dgamma NaN; the
    other rows' dx and the other columns' dgamma stay finite."""
    dy, x, rstd, g = inputs(np.random.default_rng(8), (4, 8), 1, F32, F32)
    x[1, 5] = np.nan
    dx, dg = call(arena, dy, x, rstd, g)
    assert np.isnan(dx[1]).all() and np.isfinite(np.delete(dx, 1, axis=0)).all()
    assert np.isnan(dg[5]) and np.isfinite(np.delete(dg, 5)).all()


# ---- empty tensors -----------------------------------------------------------------------------

def test_every_output_empty_runs_nothing(arena):
    """gamma with a zero dim: dx and dgamma are empty, so the vendor's framework skips the
    tiling and the kernel (NnopbaseSkipKernelLaunch): success, nothing written."""
    x = np.ones((3, 0), F32)
    ins = [DevView(arena, a) for a in (x, x.copy(), np.ones(3, F32), np.ones(0, F32))]
    run(arena, *ins, DevView(arena, shape=(3, 0), dtype=F32),
        DevView(arena, shape=(0,), dtype=F32))


def test_rows_empty_beside_a_dgamma(arena):
    """No rows but a non-empty dgamma: the tiling runs. Ascend 950's empty tiling writes
    dgamma zeros; the other parts' tiling refuses an empty dy (561002)."""
    x = np.ones((0, 64), F32)
    ins = [DevView(arena, a) for a in (x, x.copy(), np.ones(0, F32), np.ones(64, F32))]
    vdx = DevView(arena, shape=(0, 64), dtype=F32)
    vdg = DevView(arena, shape=(64,), dtype=F32, sentinel=-77.0)
    if IS_950:
        run(arena, *ins, vdx, vdg)
        assert (vdg.read() == 0).all()
    else:
        refused((*ins, vdx, vdg), TILING, "dy has no rows", "only Ascend 950")


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), xdt=F32, gdt=F32, dydt=None, rdt=F32,
          dxdt=None, dgdt=F32, dyshape=None, dxshape=None, rshape=None, dgshape=None,
          xacl=None):
    x = DevView(arena, np.ones(shape, xdt), acl_dtype=xacl)
    dy = DevView(arena, np.ones(dyshape or shape, dydt or xdt))
    g = DevView(arena, np.ones(gshape, gdt))
    r = DevView(arena, np.ones(rshape if rshape is not None else
                               rstd_shape(shape, len(gshape)), rdt))
    dx = DevView(arena, shape=dxshape or shape, dtype=dxdt or xdt)
    dg = DevView(arena, shape=dgshape if dgshape is not None else gshape, dtype=dgdt)
    return dy, x, r, g, dx, dg


def refused(args, code, *words):
    rc, _, _ = phase_one(*args)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert msg.startswith("aclnnRmsNormGradGetWorkspaceSize: "), msg
    for w in words:
        assert w in msg, msg
    return msg


def test_out_pointers_first(arena):
    args = list(views(arena))
    args[0] = None
    assert phase_one(*args, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()
    assert phase_one(*args, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k,name", list(enumerate(NAMES)))
def test_each_tensor_is_required(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


REFUSALS = [
    (dict(xacl=lib.ACL_INT32), INVALID, ("x dtype ACL_INT32",)),
    (dict(dydt=F16), INVALID, ("dy dtype FLOAT16", "x's dtype FLOAT")),
    (dict(gdt=F16), INVALID, ("gamma dtype FLOAT16", "x's dtype FLOAT")),
    (dict(xdt=F16, gdt=F16, dxdt=F32), INVALID, ("dxOut dtype FLOAT", "x's dtype FLOAT16")),
    (dict(rdt=F16), INVALID, ("rstd dtype FLOAT16", "FLOAT")),
    (dict(dgdt=F16), INVALID, ("dgammaOut dtype FLOAT16", "FLOAT")),
    (dict(shape=(1,) * 9, gshape=(1,), rshape=(1,)), TILING, ("x rank 9",)),
    (dict(shape=(4,), gshape=(2, 4), rshape=(1,), dgshape=(2, 4)), TILING,
     ("gamma rank 2 > x rank 1",)),
    (dict(dyshape=(4, 16, 1)), TILING, ("dy rank 3 != x rank 2",)),
    (dict(dxshape=(4, 16, 1)), TILING, ("dxOut rank 3 != dy rank 2",)),
    (dict(dgshape=(1, 16)), TILING, ("dgammaOut rank 2 != gamma rank 1",)),
    (dict(dyshape=(4, 17)), TILING, ("dy shape [4,17] != x shape [4,16]",)),
    (dict(dxshape=(5, 16)), TILING, ("dxOut shape [5,16]",)),
    (dict(shape=(4, 0), gshape=(0,), rshape=(4,), dxshape=(4, 0), dgshape=(0,),
          dyshape=(4, 0)), None, ()),   # every output empty: accepted (below)
    (dict(rshape=(5, 1)), TILING, ("rstd shape [5,1] must begin with x's first 1 dims",)),
    (dict(shape=(4, 2, 16), rshape=(4,)), TILING, ("dim 1 must be 1 for rstd shape [4]",)),
    (dict(rshape=(4, 2)), TILING, ("rstd shape [4,2] has 8 elements != 4 rows",)),
    (dict(gshape=(15,), dgshape=(15,)), TILING, ("gamma shape [15]", "last 1 dims of dy")),
    (dict(dgshape=(15,)), TILING, ("dgammaOut shape [15]", "last 1 dims of dy")),
]


@pytest.mark.parametrize("case,code,words", [r for r in REFUSALS if r[1] is not None],
                         ids=["x-int32", "dy-dtype", "gamma-dtype", "dx-dtype", "rstd-dtype",
                              "dgamma-dtype", "x-rank9", "gamma-rank", "dy-rank", "dx-rank",
                              "dgamma-rank", "dy-shape", "dx-shape", "rstd-lead",
                              "rstd-short", "rstd-numel", "gamma-shape", "dgamma-shape"])
def test_refusals_name_the_argument_and_rule(arena, case, code, words):
    refused(views(arena, **case), code, *words)


def test_stricter_shape_rules_hold_when_every_output_is_empty(arena):
    """The vendor skips its tiling when dx and dgamma are both empty; the emulator still
    applies the shape rules there (docs/emulator.md), but for the non-zero last dim."""
    run(arena, *views(arena, shape=(4, 0), gshape=(0,), rshape=(4,)))
    refused(views(arena, shape=(4, 0), gshape=(0,), rshape=(4,), dxshape=(5, 0)), TILING,
            "dxOut shape [5,0]")


@only_where(part_takes(F32, F32, n=16))
def test_rstd_of_other_accepted_shapes(arena):
    """The tiling compares rstd's leading dims with x's batch dims and its element count with
    the rows: [M] for x [M, 1, N] (the vendor's example), [A, B] or [A, B, 1, 1] for
    x [A, B, N]."""
    for shape, rshape in [((3, 1, 16), (3,)), ((2, 3, 16), (2, 3)), ((2, 3, 16), (2, 3, 1, 1))]:
        dy, x, rstd, g = inputs(np.random.default_rng(9), shape, 1, F32, F32)
        rstd = rstd.reshape(rshape)
        ins = [DevView(arena, a) for a in (dy, x, rstd, g)]
        vdx = DevView(arena, shape=shape, dtype=F32)
        vdg = DevView(arena, shape=g.shape, dtype=F32)
        run(arena, *ins, vdx, vdg)
        exp = reference.rms_norm_grad(dy, x, rstd, g)
        assert np.allclose(vdx.read(), exp[0], rtol=1e-5, atol=1e-6)


def test_dead_tensor_is_refused(arena):
    args = views(arena)
    g = args[3]
    arena.destroy_tensor(g.handle)
    try:
        refused(args, INVALID, "gamma", "not a live aclTensor")
    finally:
        g.handle = arena.tensor(g.shape, g.dtype, g.strides, g.offset, g.n, g.ptr)


def test_training_parts_need_gamma_a_multiple_of_64(arena):
    """op_host tiling: on ascend910 (Atlas training) gamma's element count is a multiple of
    64; elsewhere any count."""
    rc, _, ex = phase_one(*views(arena))
    if TRAINING:
        assert rc == TILING and "multiple of 64" in last_msg(), (rc, last_msg())
        rc, _, ex = phase_one(*views(arena, shape=(2, 64), gshape=(64,)))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- the part's dtype table -------------------------------------------------------------------

def test_part_dtype_table(arena):
    check_part_dtype_table(PAIRS, BF16_PART, lambda xdt, gdt: phase_one(
        *views(arena, shape=(2, 64), gshape=(64,), xdt=xdt, gdt=gdt)))


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_table or float32_chain or split_d "
                                   "or rows_empty or multiple_of_64")
