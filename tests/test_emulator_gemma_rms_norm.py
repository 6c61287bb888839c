"""The emulator's aclnnGemmaRmsNorm through raw calls (hicann/ops-nn norm/gemma_rms_norm:
docs/aclnnGemmaRmsNorm.md, op_host/gemma_rms_norm_def.cpp; the tiling and kernels of
norm/rms_norm with is_gemma): the numbers (gamma + 1 in float32, then RmsNorm's chain, y
rounded once) against the float64 reference and bit for bit against that chain in NumPy;
phase one's refusals (RmsNorm's, by code and message), its per-part dtype table and the
parts without a kernel (561003), the all-empty call, each in its own process per part.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import GEMMA_RMS_NORM
from acl_py.raw import lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _emu_aclnn import SOC, refused_by, rstd_shape, run_phase_two
from _part_runs import only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one
from test_emulator_rms_norm import views   # the same four tensors as RmsNorm's
from test_emulator_rms_norm import assert_order_seen, device_chain, kernel_order, order_data

P1 = lib.aclnnGemmaRmsNormGetWorkspaceSize
P2 = lib.aclnnGemmaRmsNorm
TILING, FIND_KERNEL = 561002, 561003
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
HAS_KERNEL = ARCH in (2201, 3510)
# (x, gamma) pairs of the part's table: one dtype on Atlas A2/A3, RmsNorm's table on 950
PAIRS = [(F32, F32), (F16, F16), (BF16, BF16)] + ([(F16, F32), (BF16, F32)]
                                                  if ARCH == 3510 else [])
# the tests of the kernel's work are defined where the declaration has one (the parts with the
# kernel run them; elsewhere the refusal is checked)
where_it_runs = only_where(runs_here(GEMMA_RMS_NORM))


def phase_one(x, gamma, y, rstd, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x, gamma, eps, y, rstd, ws=ws, ex=ex)


def call(arena, x, g, eps=1e-6):
    vx, vg = DevView(arena, x), DevView(arena, g)
    vy = DevView(arena, shape=x.shape, dtype=x.dtype, sentinel=-77.0)
    vr = DevView(arena, shape=rstd_shape(x.shape, g.ndim), dtype=F32, sentinel=-77.0)
    run_phase_two(arena, P2, phase_one(vx, vg, vy, vr, eps))
    return vy.read(), vr.read()


def rand(rng, shape, dt, scale=1.5, shift=0.25):
    return (rng.standard_normal(shape) * scale + shift).astype(dt)


@where_it_runs
@pytest.mark.parametrize("xdt,gdt", PAIRS, ids=[f"{x}-{g}" for x, g in PAIRS])
@pytest.mark.parametrize("shape,gdims", [((7, 3, 181), 1), ((5, 6, 40), 2), ((33,), 1)],
                         ids=["181", "6x40", "1-D"])
def test_numbers_against_float64_reference(arena, xdt, gdt, shape, gdims):
    rng = np.random.default_rng(sum(shape) + gdims)
    x = rand(rng, shape, xdt)
    g = rand(rng, shape[len(shape) - gdims:], gdt, 0.5, 0.0)
    y, rstd = call(arena, x, g)
    exp, mag = reference.gemma_rms_norm(x, g), reference.gemma_rms_norm_error_scale(x, g)
    assert y.dtype == xdt and rstd.dtype == F32
    reference.assert_close(y, exp[0], mag[0], xdt, "y", rtol=1e-5)
    reference.assert_close(rstd, exp[1], mag[1], F32, "rstd", rtol=1e-5)


@where_it_runs
@pytest.mark.parametrize("xdt,gdt", PAIRS, ids=[f"{x}-{g}" for x, g in PAIRS])
def test_y_is_the_gemma_chain_rounded_once(arena, xdt, gdt):
    """The kernel's chain (rms_norm.h ComputeMulGammaCast with is_gemma): gamma cast to
    float32 and 1.0f added there, y = (x * rstd) * (gamma + 1) in float32, rounded once to x's
    dtype (ties to even); bit for bit with the rstd the call wrote. Not RmsNorm's y with gamma
    + 1 rounded to gamma's dtype first (the case tells them apart)."""
    rng = np.random.default_rng(3)
    x, g = rand(rng, (16, 300), xdt), rand(rng, (300,), gdt, 0.5, 0.0)
    y, rstd = call(arena, x, g)
    xr = x.astype(F32) * rstd.reshape(16, 1)
    want = (xr * (g.astype(F32) + np.float32(1))).astype(xdt)
    assert np.array_equal(y.view(np.uint8), want.view(np.uint8))
    if gdt != F32:
        other = (xr * (g.astype(F32) + 1).astype(gdt).astype(F32)).astype(xdt)
        assert not np.array_equal(y.view(np.uint8), other.view(np.uint8))


# each side of getUbFactor's split-D limits (10240 16-bit, 8192 FLOAT columns); on Ascend 950
# of TilingArch354RmsNorm's (the same function as RmsNorm's there: the kernels' IS_GEMMA only
# adds 1 to gamma)
GEMMA_ORDER_CASES = ([(F32, 2000), (F32, 12536), (F32, 12537), (F16, 16384), (BF16, 16385),
                      (BF16, 24001)] if ARCH == 3510 else
                     [(F32, 2000), (F32, 8192), (F32, 8193), (F16, 10240), (F16, 10241),
                      (BF16, 24001)])


@where_it_runs
@pytest.mark.parametrize("xdt,n", GEMMA_ORDER_CASES,
                         ids=[f"{x}-{n}" for x, n in GEMMA_ORDER_CASES])
def test_kernel_order_bits(arena, xdt, n):
    """rstd and y bit for bit against the chain of the kernel getUbFactor picks (normal or
    split-D, at GemmaRmsNorm's own factors; never RmsNorm's merge-N; on Ascend 950 RmsNorm's
    perf or split-D template), and not another's."""
    rng = np.random.default_rng(n)
    x, g = order_data(rng, 64, n, xdt), rand(rng, (n,), xdt, 0.5, 0.0)
    y, rstd = call(arena, x, g)
    rstd = rstd.reshape(64)
    order = kernel_order(xdt, xdt, n, 64, gemma=True)
    want_y, want_r = device_chain(x, g, 1e-6, order, gamma_offset=1.0)
    assert np.array_equal(rstd.view(np.uint32), want_r.view(np.uint32)), order
    assert np.array_equal(y.view(np.uint8), want_y.view(np.uint8)), order
    assert_order_seen(rstd, x, g, order, gamma_offset=1.0)


@where_it_runs
def test_gamma_zero_is_plain_normalization(arena):
    """gamma = 0 scales by 1: y = x * rstd (what makes Gemma's weights offsets from 1)."""
    x = np.tile(np.arange(8, dtype=F32), (2, 2))
    y, rstd = call(arena, x, np.zeros(16, F32))
    assert np.array_equal(y, (x * rstd).astype(F32))


@where_it_runs
def test_vendor_example_values(arena):
    """examples/test_aclnn_gemma_rms_norm.cpp's data: x = gamma = 0..7 twice, [2, 16]."""
    v = np.tile(np.arange(8, dtype=F32), 2)
    y, rstd = call(arena, np.stack([v, v]), v.copy())
    exp = reference.gemma_rms_norm(np.stack([v, v]), v)
    assert np.allclose(y, exp[0], rtol=1e-6) and np.allclose(rstd, exp[1], rtol=1e-6)


# ---- phase one -------------------------------------------------------------------------------

def refused(args, code, *words, eps=1e-6):
    return refused_by(phase_one, "aclnnGemmaRmsNormGetWorkspaceSize", args, code, *words,
                      eps=eps)


def test_out_pointers_first(arena):
    x, g, y, r = views(arena)
    assert phase_one(None, g, y, r, ws=False)[0] == NULLPTR
    assert "workspaceSize" in last_msg()


@pytest.mark.parametrize("k,name", list(enumerate(["x", "gamma", "yOut", "rstdOut"])))
def test_each_tensor_is_required(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


@where_it_runs
@pytest.mark.parametrize("case,code,words", [
    (dict(xacl=lib.ACL_INT32), INVALID, ("x dtype ACL_INT32",)),
    (dict(xdt=F32, gdt=F16), INVALID, ("gamma dtype FLOAT16", "x's dtype FLOAT")),
    (dict(xdt=F16, gdt=F16, ydt=F32), INVALID, ("yOut dtype FLOAT", "x's dtype FLOAT16")),
    (dict(rdt=F16), INVALID, ("rstdOut dtype FLOAT16",)),
    (dict(shape=(2, 3, 4), gshape=(5,)), TILING, ("gamma shape [5]", "last 1 dims of x")),
    (dict(shape=(4, 16), gshape=(0,), rshape=(4, 1)), TILING, ("gamma", "empty")),
    (dict(yshape=(4, 17)), TILING, ("yOut shape [4,17] != x shape [4,16]",)),
    (dict(rshape=(1, 1)), TILING, ("rstdOut", "1 elements != 4 rows")),
    (dict(shape=(1,) * 9, gshape=(1,), rshape=(1,)), TILING, ("x rank 9",)),
], ids=["x-int32", "gamma-dtype", "y-dtype", "rstd-dtype", "gamma-shape", "gamma-empty",
        "y-shape", "rstd-numel", "x-rank9"])
def test_refusals_name_the_argument_and_rule(arena, case, code, words):
    refused(views(arena, **case), code, *words)


@where_it_runs
def test_negative_epsilon_is_refused(arena):
    refused(views(arena), TILING, "epsilon -1e-06 is negative", eps=-1e-6)


@where_it_runs
def test_all_empty_outputs_run_nothing_even_with_an_empty_gamma(arena):
    """The docs allow empty tensors (gamma too); with every output empty the framework runs
    no tiling, so gamma [0] beside x [0, 0] is accepted (RmsNorm's docs forbid an empty
    gamma, and RmsNorm refuses it)."""
    args = views(arena, shape=(0, 0), gshape=(0,), rshape=(0, 1))
    run_phase_two(arena, P2, phase_one(*args))
    rc, _, _ = aclnn_phase_one(lib.aclnnRmsNormGetWorkspaceSize, args[0], args[1], 1e-6,
                               args[2], args[3])
    assert rc == TILING and "empty" in last_msg()


def test_part_dtype_table_or_no_kernel(arena):
    """The part's table (Atlas A2/A3: one dtype; Ascend 950: also FLOAT gamma beside a 16-bit
    x); without a kernel (Atlas training and inference parts) 561003 for every dtype, after
    the NULL checks."""
    for xdt, gdt in [(F32, F32), (F16, F16), (BF16, BF16), (F16, F32), (BF16, F32),
                     (F32, F16)]:
        rc, _, ex = phase_one(*views(arena, xdt=xdt, gdt=gdt))
        msg = last_msg()
        if not HAS_KERNEL:
            assert rc == FIND_KERNEL and f"not supported on {SOC}" in msg, (rc, msg)
        elif (xdt, gdt) in PAIRS:
            assert rc == OK, (xdt, gdt, msg)
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "gamma dtype" in msg, (xdt, gdt, rc, msg)
    if not HAS_KERNEL:
        assert phase_one(None, *views(arena)[1:])[0] == NULLPTR   # NULL comes first


test_on_other_parts = run_on_parts(other_parts(),
                                   "dtype_table or gemma_chain or all_empty or kernel_order")
