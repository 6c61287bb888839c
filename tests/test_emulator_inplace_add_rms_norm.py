"""The emulator's aclnnInplaceAddRmsNorm through raw calls (hicann/ops-nn
norm/inplace_add_rms_norm: docs/aclnnInplaceAddRmsNorm.md, op_host/inplace_add_rms_norm_def.cpp,
op_kernel/inplace_add_rms_norm.cpp over norm/add_rms_norm's kernels and tiling): y lands in
x1Ref and x1 + x2 in x2Ref, bit for bit what aclnnAddRmsNorm writes into separate outputs and
the kernels' chain in NumPy (test_emulator_add_rms_norm.device_chain), against the float64
reference; phase one's order and codes (NULL 161001, no kernel on Atlas training 561003, the
definition's dtypes 161002, the tiling's rules 561002); the Ref parameters' addresses
(aclSetTensorAddr of an input re-points its output too); each other part in its own process.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.ops import INPLACE_ADD_RMS_NORM
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, LAYOUTS, NULLPTR, OK,  # noqa: F401
                              Arena, DevView, arena, last_msg, no_leaks, stream)
from test_emulator_add_rms_norm import ARCH, bits, check_kernel_chain, rand
from test_emulator_add_rms_norm import call as add_rms_norm_call
from _emu_aclnn import SOC, refused_by, rstd_shape, run_phase_two
from _part_runs import only_where, other_parts, run_on_parts, runs_here
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnInplaceAddRmsNormGetWorkspaceSize
P2 = lib.aclnnInplaceAddRmsNorm
TILING, FIND_KERNEL = 561002, 561003
DTYPES = [F32, F16] + ([BF16] if ARCH in (2201, 3510) else [])
# op_host/inplace_add_rms_norm_def.cpp configures no ascend910: the tests of the kernel's work
# are defined where it has one (those parts run them; elsewhere the refusal is checked)
where_it_runs = only_where(runs_here(INPLACE_ADD_RMS_NORM))


def phase_one(x1, x2, g, r, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x1, x2, g, eps, r, ws=ws, ex=ex)


def call(arena, x1, x2, g, kinds=("contig",) * 4, eps=1e-6):
    """Runs the operator; (x1Ref, rstd, x2Ref) read back: (y, rstd, x)."""
    v1, v2 = DevView(arena, x1, kind=kinds[0]), DevView(arena, x2, kind=kinds[1])
    vg = DevView(arena, g, kind=kinds[2])
    vr = DevView(arena, shape=rstd_shape(x1.shape, g.ndim), dtype=F32, kind=kinds[3],
                 sentinel=-77.0)
    run_phase_two(arena, P2, phase_one(v1, v2, vg, vr, eps))
    return v1.read(), vr.read(), v2.read()


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,gdims", [((7, 3, 181), 1), ((5, 6, 40), 2), ((3, 13000), 1)],
                         ids=["181", "6x40", "split-d"])
def test_results_land_in_the_inputs_as_add_rms_norm_writes_them(arena, dt, shape, gdims):
    """Every kernel variant (a 13000-element row is split-D: its second pass reads x back from
    x2Ref's memory) gives in place the bits AddRmsNorm gives in separate outputs, and the
    float64 reference's values."""
    rng = np.random.default_rng(sum(shape) + gdims)
    x1, x2 = rand(rng, shape, dt), rand(rng, shape, dt, 3.0)
    g = rand(rng, shape[len(shape) - gdims:], dt, 0.5, 1.0)
    got = call(arena, x1, x2, g)
    sep = add_rms_norm_call(arena, x1, x2, g)
    for a, b, name in zip(got, sep, ("y", "rstd", "x")):
        assert np.array_equal(bits(a), bits(b)), name
    exp, mag = reference.add_rms_norm(x1, x2, g), reference.add_rms_norm_error_scale(x1, x2, g)
    for a, e, m, name in zip(got, exp, mag, ("y", "rstd", "x")):
        if name == "rstd" and ARCH == 2002:
            assert (a == -77.0).all()   # not written on Atlas inference parts
            continue
        reference.assert_close(a, e, m, dt, name)


@where_it_runs
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_y_and_x_follow_the_kernel_chain_bit_for_bit(arena, dt):
    rng = np.random.default_rng(3)
    x1, x2 = rand(rng, (16, 300), dt), rand(rng, (16, 300), dt, 3.0)
    g = rand(rng, (300,), dt, 0.5, 1.0)
    check_kernel_chain(x1, x2, g, *call(arena, x1, x2, g))


@where_it_runs
@pytest.mark.parametrize("kinds", [(k,) * 4 for k in LAYOUTS[1:]], ids=lambda k: k[0])
def test_strided_refs_give_the_contiguous_bits(arena, kinds):
    rng = np.random.default_rng(5)
    x1, x2 = rand(rng, (6, 4, 37), F16), rand(rng, (6, 4, 37), F16)
    g = rand(rng, (4, 37), F16, 0.5, 1.0)
    base, got = call(arena, x1, x2, g), call(arena, x1, x2, g, kinds)
    for a, b in zip(base, got):
        assert np.array_equal(bits(a), bits(b))


@where_it_runs
def test_vendor_example_values(arena):
    """examples/test_aclnn_inplace_add_rms_norm.cpp: x1 = x2 = gamma = 0..7 twice, [2, 16]."""
    v = np.tile(np.arange(8, dtype=F32), 2)
    y, rstd, x = call(arena, np.stack([v, v]), np.stack([v, v]), v.copy())
    exp = reference.add_rms_norm(np.stack([v, v]), np.stack([v, v]), v)
    assert np.array_equal(x, 2 * np.stack([v, v]))
    assert np.allclose(y, exp[0], rtol=1e-6)


@where_it_runs
def test_repeatable_runs_start_from_the_last_results(arena):
    """Each run reads x1Ref and x2Ref as the previous one left them: x2 accumulates the sums
    (x2 := x1 + x2 with x1 := y)."""
    v1, v2 = DevView(arena, np.ones((2, 8), F32)), DevView(arena, np.ones((2, 8), F32))
    vg = DevView(arena, np.full(8, 2.0, F32))
    vr = DevView(arena, shape=(2, 1), dtype=F32)
    rc, ws, ex = phase_one(v1, v2, vg, vr)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    wsp = arena.malloc(ws)
    try:
        want_x = np.ones((2, 8))
        want_y = np.ones((2, 8))
        for _ in range(3):
            assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == 0
            want_y, _, want_x = reference.add_rms_norm(want_y, want_x, np.full(8, 2.0))
            assert np.allclose(v2.read(), want_x, rtol=1e-6)
            assert np.allclose(v1.read(), want_y, rtol=1e-6)
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


@where_it_runs
def test_set_tensor_addr_of_a_ref_input_moves_its_output_too(arena):
    """The vendor's Ref pair is one aclTensor, an input (index 0) and an output (index 3 in
    aclSetTensorAddr's count: inputs x1Ref, x2Ref, gamma, then outputs x1Ref, rstdOut,
    x2Ref); re-pointing the input re-points its output (NnopbaseSetRefTensorAddr): the next
    run reads and writes the new memory, the old is left alone."""
    v1, v2 = DevView(arena, np.ones((2, 8), F32)), DevView(arena, np.ones((2, 8), F32))
    vg, vr = DevView(arena, np.ones(8, F32)), DevView(arena, shape=(2, 1), dtype=F32)
    new = DevView(arena, np.full((2, 8), 3.0, F32))
    rc, ws, ex = phase_one(v1, v2, vg, vr)
    assert rc == OK and lib.aclSetAclOpExecutorRepeatable(ex) == OK
    wsp = arena.malloc(ws)
    try:
        assert lib.aclSetInputTensorAddr(ex, 0, v1.handle, ffi.cast("void *", new.ptr)) == OK
        assert lib.aclSetTensorAddr(ex, 4, vr.handle, ffi.cast("void *", vr.ptr)) == OK
        assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        assert (v2.read() == 4.0).all()                 # x = new x1 (3) + x2 (1)
        assert np.allclose(new.read(), 1.0, rtol=1e-6)  # y written over the new x1
        out = np.empty(v1.n, F32)
        arena.d2h(out, v1.ptr)
        assert (out[:16] == 1.0).all()                  # the old x1 untouched
    finally:
        assert lib.aclDestroyAclOpExecutor(ex) == OK


# ---- phase one -------------------------------------------------------------------------------

def views(arena, shape=(4, 16), gshape=(16,), dt=F32, x2dt=None, gdt=None, rdt=F32,
          x2shape=None, rshape=None, xacl=None):
    x1 = DevView(arena, np.ones(shape, dt), acl_dtype=xacl)
    x2 = DevView(arena, np.ones(x2shape or shape, x2dt or dt))
    g = DevView(arena, np.ones(gshape, gdt or dt))
    r = DevView(arena, shape=rshape if rshape is not None else
                rstd_shape(shape, len(gshape)), dtype=rdt)
    return x1, x2, g, r


def refused(args, code, *words, eps=1e-6):
    return refused_by(phase_one, "aclnnInplaceAddRmsNormGetWorkspaceSize", args, code, *words,
                      eps=eps)


def test_out_pointers_first(arena):
    x1, x2, g, r = views(arena)
    assert phase_one(None, x2, g, r, ex=False)[0] == NULLPTR
    assert "executor" in last_msg()


@pytest.mark.parametrize("k,name", list(enumerate(["x1Ref", "x2Ref", "gamma", "rstdOut"])))
def test_each_tensor_is_required(arena, k, name):
    args = list(views(arena))
    args[k] = None
    refused(args, NULLPTR, f"{name} is NULL")


@where_it_runs
@pytest.mark.parametrize("case,code,words", [
    (dict(xacl=lib.ACL_INT32), INVALID, ("x1Ref dtype ACL_INT32",)),
    (dict(x2dt=F16), INVALID, ("x2Ref dtype FLOAT16", "x1Ref's dtype FLOAT")),
    (dict(dt=F16, gdt=F32), INVALID, ("gamma dtype FLOAT", "x1Ref's dtype FLOAT16")),
    (dict(rdt=F16), INVALID, ("rstdOut dtype FLOAT16 must be FLOAT",)),
    (dict(shape=(2, 3, 4), gshape=(5,)), TILING, ("gamma shape [5]", "last 1 dims of x1Ref")),
    (dict(shape=(4,), gshape=(2, 4), rshape=(1,)), TILING, ("gamma rank 2 > x1Ref rank 1",)),
    (dict(x2shape=(4, 17)), TILING, ("x2Ref shape [4,17] must equal x1Ref's shape [4,16]",)),
    (dict(x2shape=(4, 16, 1)), TILING, ("x2Ref rank 3 != x1Ref rank 2",)),
    (dict(rshape=(4,)), TILING, ("rstdOut rank 1 != x1Ref rank 2",)),
    (dict(rshape=(4, 2)), TILING, ("rstdOut shape [4,2] must be x1Ref's batch dims then "
                                   "ones: [4,1]",)),
    (dict(shape=(0, 16), rshape=(2, 1)), TILING, ("x1Ref shape [0,16] is empty",)),
    (dict(rshape=(0, 1)), TILING, ("rstdOut is empty while x2Ref is not",)),
    (dict(shape=(1,) * 9, gshape=(1,), rshape=(1,) * 9), TILING, ("x1Ref rank 9",)),
], ids=["x1-int32", "x2-dtype", "gamma-dtype", "rstd-dtype", "gamma-shape", "gamma-rank",
        "x2-shape", "x2-rank", "rstd-rank", "rstd-dim", "x1-empty", "rstd-empty", "x1-rank9"])
def test_refusals_name_the_argument_and_rule(arena, case, code, words):
    refused(views(arena, **case), code, *words)


@where_it_runs
def test_negative_epsilon_is_refused(arena):
    refused(views(arena), TILING, "epsilon -1e-06 is negative", eps=-1e-6)


@where_it_runs
def test_all_empty_outputs_run_nothing(arena):
    """x1Ref, x2Ref and rstdOut all empty: the framework launches nothing, no tiling (the
    docs allow no empty tensor; the code accepts this one)."""
    run_phase_two(arena, P2, phase_one(*views(arena, shape=(0, 16), rshape=(0, 1))))


def test_part_dtype_list_or_no_kernel(arena):
    """FLOAT, FLOAT16 everywhere with a kernel, BF16 too outside the Atlas inference parts;
    the Atlas training parts have none: 561003 for every dtype, after the NULL checks."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*views(arena, dt=dt))
        msg = last_msg()
        if ARCH == 1001:
            assert rc == FIND_KERNEL and f"not supported on {SOC}" in msg, (rc, msg)
        elif dt == BF16 and ARCH == 2002:
            assert rc == INVALID and "x1Ref dtype BF16" in msg, msg
        else:
            assert rc == OK, (dt, msg)
            assert lib.aclDestroyAclOpExecutor(ex) == OK
    if ARCH == 1001:
        assert phase_one(None, *views(arena)[1:])[0] == NULLPTR


test_on_other_parts = run_on_parts(other_parts(),
                                   "dtype_list or land_in_the_inputs and 181 or all_empty")
