"""The emulator's aclnnBatchNormStats through raw calls: phase one's checks, their order, codes
and messages (hicann/ops-math math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp),
what is written (mean and invstd only; for an empty input 0 and NaN, by kernels), and the
device's numbers: against the float64 reference, and bit for bit against each part's chain
written in NumPy (TBE ReduceMean + ReduceStdWithMean, or Ascend 950's ReduceVar + Add + Pow);
the other parts in their own processes; the vendor's op_api unit test cases replayed with
their expected status.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream, ut_tensor)
from test_emulator_group_norm import ARCH
from test_emulator_batch_norm_backward import bits, rows_of, same_bits
from _emu_aclnn import (SOC, both_phases_without_a_device, refused_by, run_phase_two,
                        workspace_attempt)
from _part_runs import other_parts, run_on_parts
from _workspace_model import fills_ws, max_allocator
from _emu_aclnn import phase_one as aclnn_phase_one

P1 = lib.aclnnBatchNormStatsGetWorkspaceSize
P2 = lib.aclnnBatchNormStats
CALL = "aclnnBatchNormStatsGetWorkspaceSize"
NO_CONTEXT = 361001  # ACL_ERROR_RT_CONTEXT_NULL: a kernel launched on a thread with no device
SENTINEL = -77.0
REGBASE = ARCH == 3510  # Ascend 950: BF16 input, and the ReduceVar chain
f = np.float32


def phase_one(x, eps, mean, inv, ws=True, ex=True):
    return aclnn_phase_one(P1, x, eps, mean, inv, ws=ws, ex=ex)


# The input dtypes the part takes: BF16 on Ascend 950 only (ops-math math/reduce_std_with_mean/
# op_api/aclnn_batch_norm_stats.cpp's dtype lists; test_part_dtype_list checks the refusal), so
# a BF16 case elsewhere is no test rather than a skip; the Ascend 950 child runs them.
DTYPES = [F32, F16, BF16] if REGBASE else [F32, F16]


def sample(shape, dt, seed=0, offset=0.5):
    rng = np.random.default_rng(seed + sum(shape))
    return (rng.standard_normal(shape) * 2 + offset).astype(dt)


def call(arena, x, eps=1e-5, kind="contig"):
    vx = DevView(arena, x, kind=kind)
    c = x.shape[1]
    vm = DevView(arena, shape=(c,), dtype=F32, sentinel=SENTINEL)
    vi = DevView(arena, shape=(c,), dtype=F32, sentinel=SENTINEL)
    run_phase_two(arena, P2, phase_one(vx, eps, vm, vi))
    assert np.array_equal(bits(vx.read()), bits(x))
    return vm.read(), vi.read()


# ---- the chains, in NumPy ------------------------------------------------------------------

LANES = 16


def lane_sum(terms):
    """Each row's float32 terms summed in the emulator's fixed order (norm_rows.h): lane l
    takes terms l, l + 16, ..., the lanes folded pairwise by halves."""
    c, r = terms.shape
    acc = np.zeros((c, LANES), f)
    for i in range(0, r, LANES):
        block = terms[:, i:i + LANES]
        acc[:, :block.shape[1]] = (acc[:, :block.shape[1]] + block).astype(f)
    s = LANES // 2
    while s:
        acc[:, :s] = (acc[:, :s] + acc[:, s:2 * s]).astype(f)
        s //= 2
    return acc[:, 0]


def device_chain(x, eps, regbase=REGBASE):
    """(mean, invstd) as this part's kernels compute them (regbase: Ascend 950's), float32."""
    X = rows_of(x)
    r = X.shape[1]
    e = f(eps)
    with np.errstate(all="ignore"):
        if regbase:
            p = 1 << max(r - 1, 0).bit_length()
            mean = (lane_sum((X * (f(1) / f(p))).astype(f)) * (f(p) / f(r))).astype(f)
            d = (X - mean[:, None]).astype(f)
            s = f(1.0 / r)
            var = lane_sum((((d * s).astype(f)) * d).astype(f))
            inv = (f(1) / np.sqrt((var + e).astype(f))).astype(f)
        else:
            cof = f(1) / f(r)
            mean = (lane_sum(X) * cof).astype(f)
            d = (X - mean[:, None]).astype(f)
            var = lane_sum((((d * d).astype(f)) * cof).astype(f))
            inv = np.sqrt((f(1) / (var + e).astype(f)).astype(f)).astype(f)
    return mean, inv


SHAPES = [(4, 3, 5), (2, 6, 3, 4), (16, 64), (2, 3, 2, 2, 3), (3, 4, 2, 1, 3, 2), (5, 1),
          (2, 2, 1, 1, 1, 1, 2, 3), (1, 2, 33), (3, 5, 100)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_chain_bit_for_bit(arena, dt, shape):
    x = sample(shape, dt)
    got = call(arena, x, eps=1e-3)
    want = device_chain(x, 1e-3)
    for g, w in zip(got, want):
        same_bits(g, w, F32)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,offset", [((4, 5, 6), 0.5), ((8, 3, 300), 40.0),
                                          ((2, 4, 1), 0.0)], ids=str)
def test_reference(arena, dt, shape, offset):
    """Against the float64 reference (a large offset: the two-pass variance has no
    cancellation to carry; one value per channel: a variance of 0, invstd 1 / sqrt(eps))."""
    x = sample(shape, dt, seed=2, offset=offset)
    got = call(arena, x, eps=1e-4)
    ref = reference.batch_norm_stats(x, 1e-4)
    scale = reference.batch_norm_stats_error_scale(x, 1e-4)
    for g, r, s in zip(got, ref, scale):
        assert reference.max_error_ratio(g, r, s, F32) <= 1


def test_the_chains_differ_where_the_parts_do(arena):
    """The other part's formula gives other bits somewhere (the test can tell them apart)."""
    x = sample((3, 7, 50), F32, seed=9)
    got = call(arena, x)
    other = device_chain(x, 1e-5, regbase=not REGBASE)
    assert any(not np.array_equal(bits(g), bits(o)) for g, o in zip(got, other))


@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    x = sample((2, 6, 3, 4), F16)
    for a, b in zip(call(arena, x), call(arena, x, kind=kind)):
        assert np.array_equal(bits(a), bits(b))


def test_bits_do_not_depend_on_the_thread_count(arena):
    x = sample((8, 40, 33), F32)
    lib.aclemuSetNumThreads(1)
    one = call(arena, x)
    lib.aclemuSetNumThreads(4)
    four = call(arena, x)
    for a, b in zip(one, four):
        assert np.array_equal(bits(a), bits(b))


def test_eps_is_taken_as_float(arena):
    """eps reaches the kernels as the op_api's float (static_cast<float>)."""
    x = sample((4, 3, 8), F32)
    eps = 1e-5 + 1e-13  # the same float32 as 1e-5
    for a, b in zip(call(arena, x, 1e-5), call(arena, x, eps)):
        assert np.array_equal(bits(a), bits(b))


@pytest.mark.parametrize("slack", [3, 0], ids=["slack", "exact"])
@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0), (0, 3)], ids=str)
def test_empty_input_fills_zero_and_nan(arena, shape, slack):
    """An empty input (C > 0): mean 0, invstd NaN (the op_api's Fill kernels, each with its
    tiling's 16 MiB on Ascend 950; on Ascend910A/Ascend310P3 each Fill's result stays in the
    workspace until its copy into an output with ``slack`` after its view, so a NULL one is
    refused then); the fills are kernels, so both phases on a thread that set no device fail
    in phase two."""
    x = DevView(arena, np.ones(shape, F32))
    vm = DevView(arena, shape=(3,), dtype=F32, sentinel=SENTINEL, slack=slack)
    vi = DevView(arena, shape=(3,), dtype=F32, sentinel=SENTINEL, slack=slack)
    run_phase_two(arena, P2, phase_one(x, 1e-5, vm, vi))
    assert np.array_equal(vm.read(), np.zeros(3, F32))
    assert np.isnan(vi.read()).all()
    ref_mean, ref_inv = reference.batch_norm_stats(np.ones(shape, F32))
    assert np.array_equal(ref_mean, np.zeros(3)) and np.isnan(ref_inv).all()
    want = max_allocator(fills_ws([vm, vi]))
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (x, 1e-5, vm, vi), ffi.NULL,
                                                    workspace=arena.malloc(want) if want else None)
    assert (rc, ws, rc2) == (OK, want, NO_CONTEXT), msg
    if want:
        rc, ws, ex = phase_one(x, 1e-5, vm, vi)
        assert (rc, ws) == (OK, want)
        workspace_attempt(arena, P2, ex, ws, "null")


def test_a_kernel_needs_a_device(arena):
    """Given the workspace phase one reports (a device's: tests/
    test_emulator_workspace_size_bn_stats.py), phase two on a thread that set no device fails
    at the launch."""
    x = DevView(arena, sample((2, 3, 4), F32))
    vm, vi = (DevView(arena, shape=(3,), dtype=F32) for _ in range(2))
    rc, want, ex = phase_one(x, 1e-5, vm, vi)
    assert rc == OK and want > 0 and lib.aclDestroyAclOpExecutor(ex) == OK, last_msg()
    rc, ws, rc2, msg = both_phases_without_a_device(P1, P2, (x, 1e-5, vm, vi), ffi.NULL,
                                                    workspace=arena.malloc(want))
    assert (rc, ws, rc2) == (OK, want, NO_CONTEXT), msg


# ---- phase one -------------------------------------------------------------------------------

NAMES = ("x", "mean", "inv")
ACL_OTHER = {"int32": lib.ACL_INT32, "double": lib.ACL_DOUBLE, "int8": lib.ACL_INT8}


def views(arena, shape=(2, 4, 3), dt=F32, shapes=None, dts=None):
    c = shape[1] if len(shape) > 1 else 1
    shapes = {"x": shape, "mean": (c,), "inv": (c,)} | (shapes or {})
    dts = {"x": dt, "mean": F32, "inv": F32} | (dts or {})
    return [DevView(arena, shape=shapes[k], dtype=F32, acl_dtype=ACL_OTHER[dts[k]])
            if dts[k] in ACL_OTHER else DevView(arena, shape=shapes[k], dtype=dts[k])
            for k in NAMES]


def args(vs, eps=1e-5):
    return (vs[0], eps, vs[1], vs[2])


def refused(vs, code, *words, **kw):
    return refused_by(phase_one, CALL, args(vs), code, *words, **kw)


def accepted(vs):
    rc, _, ex = phase_one(*args(vs))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_out_pointers_first(arena):
    vs = views(arena)
    vs[0] = None
    for kw, word in ((dict(ws=False), "workspaceSize"), (dict(ex=False), "executor")):
        rc, _, _ = phase_one(*args(vs), **kw)
        assert rc == NULLPTR and word in last_msg(), (rc, last_msg())


@pytest.mark.parametrize("k,name", [(0, "input"), (1, "mean"), (2, "invstd")])
def test_required_tensors_are_161001(arena, k, name):
    vs = views(arena, dts={"x": "int32"})
    vs[k] = None
    refused(vs, NULLPTR, f"{name} is NULL")


PARAM_CASES = [
    ("input dtype", dict(dts={"x": "int32"}), ("input dtype", "INT32")),
    ("input dtype double", dict(dts={"x": "double"}), ("input dtype", "DOUBLE")),
    ("mean dtype", dict(dts={"mean": F16}), ("mean dtype FLOAT16", ": FLOAT")),
    ("invstd dtype", dict(dts={"inv": "double"}), ("invstd dtype", "DOUBLE")),
    ("input rank 1", dict(shape=(4,), shapes={"mean": (4,), "inv": (4,)}),
     ("input rank 1",)),
    ("input rank 9", dict(shape=(2, 4) + (1,) * 7), ("input rank 9",)),
    ("mean rank", dict(shapes={"mean": (4, 1)}), ("mean shape", "rank 1")),
    ("invstd rank", dict(shapes={"inv": ()}), ("invstd shape", "rank 1")),
    ("no channel", dict(shape=(2, 0, 3)), ("dim 1 (C) must not be 0",)),
    ("mean shape", dict(shapes={"mean": (5,)}), ("mean shape", "must be [C]")),
    ("invstd shape", dict(shapes={"inv": (3,)}), ("invstd shape", "must be [C]")),
]


@pytest.mark.parametrize("case,kw,words", PARAM_CASES, ids=[c[0] for c in PARAM_CASES])
def test_parameter_refusals(arena, case, kw, words):
    refused(views(arena, **kw), INVALID, *words)


def test_checks_run_in_the_vendor_order(arena):
    """NULLs, dtypes (input, mean, invstd), formats, then shapes (ranks, C, lengths)."""
    vs = views(arena, dts={"x": "int32"})
    refused([vs[0], None, vs[2]], NULLPTR, "mean is NULL")
    refused(views(arena, dts={"mean": "int32", "inv": "int32"}, shapes={"mean": (9,)}),
            INVALID, "mean dtype")
    refused(views(arena, dts={"inv": "int32"}, shapes={"mean": (9,)}), INVALID,
            "invstd dtype")
    refused(views(arena, shapes={"mean": (9,), "inv": (2, 2)}), INVALID, "invstd shape",
            "rank 1")
    refused(views(arena, shape=(2, 0, 3), shapes={"mean": (9,)}), INVALID, "dim 1 (C)")


def fmt_tensor(arena, view, fmt):
    shape = list(view.shape)
    strides = [int(math.prod(shape[i + 1:])) for i in range(len(shape))]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", shape), len(shape), lib.ACL_FLOAT,
                            ffi.new("int64_t[]", strides), 0, fmt,
                            ffi.new("int64_t[]", [max(view.n, 1)]), 1, view.ptr)
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


@pytest.mark.parametrize("k,name", [(0, "input"), (1, "mean"), (2, "invstd")])
def test_private_formats_are_refused(arena, k, name):
    vs = views(arena)
    vs[k] = fmt_tensor(arena, vs[k], lib.ACL_FORMAT_NC1HWC0)
    refused(vs, INVALID, f"{name}'s format", "private")


def test_any_public_format_takes_dim_1_as_c(arena):
    """No format rule beyond the private ones (the unit test's all_format: NHWC, HWCN, NDHWC
    succeed): dim 1 is the channel whatever the format says."""
    x = sample((2, 3, 4), F32)
    want = call(arena, x)
    vx = DevView(arena, x)
    for fmt in (lib.ACL_FORMAT_NHWC, lib.ACL_FORMAT_HWCN, lib.ACL_FORMAT_NCHW):
        t = fmt_tensor(arena, vx, fmt)
        vm, vi = (DevView(arena, shape=(3,), dtype=F32) for _ in range(2))
        run_phase_two(arena, P2, phase_one(t, 1e-5, vm, vi))
        for a, b in zip((vm.read(), vi.read()), want):
            assert np.array_equal(bits(a), bits(b))


def test_refusals_leak_nothing(arena):
    for case, kw, _ in PARAM_CASES:
        rc, _, ex = phase_one(*args(views(arena, **kw)))
        assert rc == INVALID and ex == ffi.NULL


def test_part_dtype_list(arena):
    """BF16 input on Ascend 950 only: the op_api's list for the other parts (Atlas A2/A3
    included, which take BF16 elsewhere) is FLOAT and FLOAT16."""
    for dt in (F32, F16, BF16):
        rc, _, ex = phase_one(*args(views(arena, dt=dt)))
        ok = dt != BF16 or REGBASE
        assert (rc == OK) == ok, (SOC, dt, rc, last_msg())
        if ok:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            assert rc == INVALID and "not supported on" in last_msg(), last_msg()


# ---- the vendor's op_api unit test, replayed --------------------------------------------------

# math/reduce_std_with_mean/tests/ut/op_api/test_aclnn_batch_norm_stats.cpp: (name, input,
# mean, invstd, expected status); a tensor is (shape, dtype, format[, strides]) or None.
def _t(shape, dt="f32", fmt="ND", strides=None):
    return (shape, dt, fmt, strides)


V3 = _t((3,))
UT_CASES = [
    ("dtype_float", _t((2, 3)), V3, V3, OK),
    ("dtype_float16", _t((2, 3), "f16"), V3, V3, OK),
    ("dtype_int8", _t((2, 3), "i8"), V3, V3, INVALID),
    ("dtype_int32", _t((2, 3), "i32"), V3, V3, INVALID),
    ("dtype_uint8", _t((2, 3), "u8"), V3, V3, INVALID),
    ("dtype_int16", _t((2, 3), "i16"), V3, V3, INVALID),
    *[(f"all_format_{fmt}", _t((2, 3), "f32", fmt), _t((3,), "f32", fmt),
       _t((3,), "f32", fmt), INVALID if fmt == "NC1HWC0" else OK)
      for fmt in ("NC1HWC0", "NCHW", "NHWC", "ND", "HWCN", "NDHWC", "NCDHW")],
    ("nullptr_input", None, V3, V3, NULLPTR),
    ("nullptr_mean", _t((2, 3)), None, V3, NULLPTR),
    ("nullptr_invstd", _t((2, 3)), V3, None, NULLPTR),
    ("empty_tensor", _t((0, 3)), V3, V3, OK),
    ("empty_tensor_no_channel", _t((3, 0)), V3, V3, INVALID),
    ("non_contiguous", _t((2, 3), "f32", "ND", (1, 2)), V3, V3, OK),
    ("invalid_dim_9", _t((2, 3, 3, 2, 2, 3, 2, 2, 3)), V3, V3, INVALID),
    ("invalid_dim_1", _t((3,)), V3, V3, INVALID),
    ("ascend950_dtype_float16", _t((2, 3), "f16"), V3, V3, OK),
    ("mean_private_format", _t((2, 3)), _t((3,), "f32", "NC1HWC0"), V3, INVALID),
    ("invstd_private_format", _t((2, 3)), V3, _t((3,), "f32", "NC1HWC0"), INVALID),
    ("input_private_format", _t((2, 3), "f32", "NC1HWC0"), V3, V3, INVALID),
]


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    name, x, mean, inv, code = case
    ts = [ut_tensor(arena, s) for s in (x, mean, inv)]
    rc, ws, ex = phase_one(ts[0], 1e-5, ts[1], ts[2])
    assert rc == code, (name, rc, last_msg())
    if rc == OK:
        run_phase_two(arena, P2, (rc, ws, ex))
    else:
        assert ex == ffi.NULL and last_msg().startswith(CALL + ": ")


def test_vendor_example_values(arena):
    """The example's input [2, 3] = 1..6, eps 1e-5: means 2.5, 3.5, 4.5 and invstd
    1 / sqrt(2.25 + 1e-5) each."""
    x = np.arange(1, 7, dtype=F32).reshape(2, 3)
    mean, inv = call(arena, x)
    assert np.array_equal(mean, np.array([2.5, 3.5, 4.5], F32))
    assert np.allclose(inv, 1 / math.sqrt(2.25 + 1e-5), rtol=1e-6, atol=0)


test_on_other_parts = run_on_parts(other_parts(), "part_dtype_list or chain_bit or reference "
                                   "or vendor_op_api_unit_test or empty_input or differ "
                                   "or example_values")
