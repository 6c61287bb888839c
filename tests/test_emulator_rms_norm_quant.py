"""The emulator's aclnnRmsNormQuant through raw calls: phase one's checks, codes and messages in
the op_api's order (hicann/ops-nn norm/rms_norm_quant/op_host/op_api/aclnn_rms_norm_quant.cpp;
the tiling, op_host/rms_norm_quant_common_tiling.cpp; the stricter choices in
docs/emulator.md) per part, and the device's numbers (op_kernel/rms_norm_quant.cpp): bit for
bit against a NumPy model of the kernel's float32 chain (both row paths, INT8 and INT4 packed
in INT32), within one quantization step of the float64 reference, saturation at the INT8
limits; the vendor's op_api UT cases replayed with their statuses.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, Arena,  # noqa: F401
                              DevView, arena, last_msg, no_leaks, stream)
from _emu_aclnn import SOC, refused_by, run_phase_two
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import other_parts, run_on_parts

P1 = lib.aclnnRmsNormQuantGetWorkspaceSize
P2 = lib.aclnnRmsNormQuant
CALL = "aclnnRmsNormQuantGetWorkspaceSize"
INNER_NULLPTR = 561103
I8, I32 = np.dtype(np.int8), np.dtype(np.int32)
A2 = SOC.startswith(("Ascend910B", "Ascend910_93"))
P310 = SOC.startswith("Ascend310P")
REGBASE = SOC.startswith("Ascend950")
TRAINING = SOC.startswith("Ascend910") and not A2   # the Atlas training series
X_DTYPES = [F16, BF16] if A2 else [F16]
SLICE = 8192


INT_DT = {I8: lib.ACL_INT8, I32: lib.ACL_INT32, np.dtype(np.int16): lib.ACL_INT16}


def view(arena, values=None, **kw):
    """A DevView; an integer one with its aclDataType (test_emulator_op's map holds floats)."""
    dt = np.dtype(kw.get("dtype") if values is None else np.asarray(values).dtype)
    if dt in INT_DT and kw.get("acl_dtype") is None:
        kw["acl_dtype"] = INT_DT[dt]
    return DevView(arena, values, **kw)


def phase_one(x, g, b, s, o, y, eps=1e-6, ws=True, ex=True):
    return aclnn_phase_one(P1, x, g, b, s, o, eps, y, ws=ws, ex=ex)


def read_int(view):
    """An integer output view's values; asserts nothing outside it was written."""
    out = np.empty_like(view.storage)
    view.arena.d2h(out, view.ptr)
    inside = np.zeros(view.n, bool)
    view.host_view(inside)[...] = True
    assert np.array_equal(out[~inside], view.initial[~inside]), "written outside the view"
    return view.host_view(out).copy()


def inputs(rng, m, n, dt, scale=0.05, offset=3, spread=2.0):
    x = (rng.standard_normal((m, n)) * spread + 0.25).astype(dt)
    g = (1.0 + 0.5 * rng.standard_normal(n)).astype(dt)
    b = (0.25 * rng.standard_normal(n)).astype(dt)
    return x, g, b, np.array([scale], dt), np.array([offset], I8)


def call(arena, x, g, b, s, o, eps=1e-6, y_dtype=I8, kinds=("contig",) * 6):
    views = [view(arena, a, kind=k) for a, k in zip((x, g, b, s, o), kinds)]
    yshape = x.shape[:-1] + (x.shape[-1] // (8 if y_dtype == I32 else 1),)
    vy = view(arena, shape=yshape, dtype=y_dtype, kind=kinds[5], sentinel=-77)
    run_phase_two(arena, P2, phase_one(*views, vy, eps))
    return read_int(vy)


# ---- the NumPy model of the kernel's float32 chain ------------------------------------------

def lane_sum(t):
    """Row sums of float32 t [M, n] in the emulator's fixed order (16 lanes, folded)."""
    m, n = t.shape
    acc = np.zeros((m, 16), F32)
    full = n // 16 * 16
    for i in range(0, full, 16):
        acc += t[:, i:i + 16]
    acc[:, :n - full] += t[:, full:]
    for s in (8, 4, 2, 1):
        acc[:, :s] += acc[:, s:2 * s]
    return acc[:, 0]


def device_chain(x, g, b, s, o, eps=1e-6, int4=False, quant_min=-128):
    """The kernel's numbers: float32 throughout, the factor per the row path, the scale's
    reciprocal multiplied, float16 rounding, the clamp, then rounding to even."""
    f = np.float32
    xf, gf, bf = x.astype(F32), g.astype(F32).reshape(-1), b.astype(F32).reshape(-1)
    n = xf.shape[-1]
    avg, e = f(1.0 / n), f(eps)
    if n <= SLICE:
        factor = f(1) / np.sqrt(lane_sum((xf * xf) * avg) + e)
    else:
        ss = np.zeros(xf.shape[0], F32)
        for c in range(0, n, SLICE):
            part = xf[:, c:c + SLICE]
            ss += lane_sum(part * part)
        rms = np.sqrt(ss * avg + e)
        factor = np.where(rms != 0, f(1) / rms, f(1)).astype(F32)
    scale_r = f(1) / f(s.reshape(-1)[0].astype(F32))
    v = (((xf * factor[:, None]) * gf + bf) * scale_r + f(o.reshape(-1)[0]))
    h = v.astype(np.float16).astype(F32)
    lo, hi = (-8, 7) if int4 else (quant_min, 127)
    return np.rint(np.clip(h, lo, hi)).astype(I8)


def pack_int4(q):
    """INT4 values [M, N] packed as the device does: two to a byte, lower nibble first, four
    bytes to a little-endian INT32."""
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8)
    byte = nib[:, 0::2] | (nib[:, 1::2] << 4)
    return byte.copy().view("<i4")


# ---- numbers -----------------------------------------------------------------------------------

needs_kernel = pytest.mark.skipif(REGBASE or TRAINING, reason=f"{SOC}: no modelled kernel")


@needs_kernel
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m,n", [(7, 181), (3, 1024), (1, 33), (2, SLICE + 40)],
                         ids=["181", "1024", "33", "slice"])
def test_chain_bits_and_reference(arena, dt, m, n):
    """Bit for bit the kernel's float32 chain (fast rows and sliced rows); within one
    quantization step of the float64 reference quantized to INT8."""
    if dt not in X_DTYPES:
        pytest.skip(f"{SOC}: x {dt} is not in the part's list")
    rng = np.random.default_rng(m * n)
    args = inputs(rng, m, n, dt)
    y = call(arena, *args)
    assert y.dtype == I8
    assert np.array_equal(y, device_chain(*args))
    exp = reference.rms_norm_quant(*args)[0]
    assert np.max(np.abs(y.astype(np.float64) - exp)) <= reference.QUANT_STEP
    assert ((y >= -128) & (y <= 127)).all() and len(np.unique(y)) > 20


@needs_kernel
def test_saturates_at_the_int8_limits_and_asdops_quant_min(arena, monkeypatch):
    """Values beyond [-128, 127] clamp (in float16, before the rounding); with
    ASDOPS_QUANT_MIN_NEG_127=1 (read by the tiling, in phase one) the low limit is -127."""
    rng = np.random.default_rng(1)
    x, g, b, s, o = inputs(rng, 4, 64, F16, scale=0.002, offset=0)
    y = call(arena, x, g, b, s, o)
    assert y.min() == -128 and y.max() == 127
    assert np.array_equal(y, device_chain(x, g, b, s, o))
    monkeypatch.setenv("ASDOPS_QUANT_MIN_NEG_127", "1")
    y127 = call(arena, x, g, b, s, o)
    assert y127.min() == -127 and y127.max() == 127
    assert np.array_equal(y127, device_chain(x, g, b, s, o, quant_min=-127))


@needs_kernel
def test_scale_multiplies_by_its_reciprocal_and_rounds_through_float16(arena):
    """A value the float32 chain puts at 100.53 rounds to 100.5 in float16 and then to even
    (100), where the float64 value quantizes to 101: one step, the documented difference."""
    x = np.full((1, 16), 1.0, F16)          # rstd 1/sqrt(1 + eps): y ~ gamma
    g = np.full(16, 100.53, F16)            # float16 100.5: exactly a half
    b = np.zeros(16, F16)
    y = call(arena, x, g, b, np.array([1.0], F16), np.array([0], I8))
    assert (y == 100).all()
    assert np.array_equal(y, device_chain(x, g, b, np.array([1.0], F16), np.array([0], I8)))


@needs_kernel
def test_only_the_first_scale_and_offset_are_read(arena):
    rng = np.random.default_rng(2)
    x, g, b, s, o = inputs(rng, 3, 48, F16)
    y1 = call(arena, x, g, b, s, o)
    y3 = call(arena, x, g, b, np.array([s[0], 9, 9], F16), np.array([o[0], 50, 50], I8))
    assert np.array_equal(y1, y3)


@needs_kernel
def test_nan_is_written_as_zero(arena):
    """The docs' constraint: a NaN scale, or a NaN RmsNorm result (a NaN in x's row), gives
    0; the other rows are untouched by it."""
    rng = np.random.default_rng(8)
    x, g, b, s, o = inputs(rng, 3, 32, F16)
    assert (call(arena, x, g, b, np.array([np.nan], F16), o) == 0).all()
    x[1, 5] = np.nan
    y = call(arena, x, g, b, s, o)
    assert (y[1] == 0).all()
    assert np.array_equal(y[[0, 2]], device_chain(x[[0, 2]], g, b, s, o))


@pytest.mark.skipif(not A2, reason="INT4 results (y INT32) are Atlas A2/A3's")
def test_int32_y_holds_eight_int4_values(arena):
    rng = np.random.default_rng(3)
    x, g, b, s, o = inputs(rng, 5, 64, F16, scale=0.4, offset=1)
    y = call(arena, x, g, b, s, o, y_dtype=I32)
    q = device_chain(x, g, b, s, o, int4=True)
    assert q.min() == -8 and q.max() == 7   # some saturate
    assert y.shape == (5, 8) and np.array_equal(y, pack_int4(q))


@needs_kernel
@pytest.mark.parametrize("kind", ["transposed", "padded", "stepped"])
def test_strided_views_give_the_contiguous_bits(arena, kind):
    rng = np.random.default_rng(4)
    args = inputs(rng, 6, 40, F16)
    base = call(arena, *args)
    got = call(arena, *args, kinds=(kind,) * 6)
    assert np.array_equal(base, got)


@needs_kernel
def test_bits_do_not_depend_on_the_thread_count(arena):
    rng = np.random.default_rng(5)
    args = inputs(rng, 61, 300, F16)
    runs = []
    for n in (1, 3, 8):
        lib.aclemuSetNumThreads(n)
        runs.append(call(arena, *args))
    assert all(np.array_equal(runs[0], r) for r in runs[1:])


@needs_kernel
def test_rank_2_gamma_and_beta_1xN_and_rank_3_x(arena):
    rng = np.random.default_rng(6)
    x, g, b, s, o = inputs(rng, 6, 32, F16)
    y = call(arena, x.reshape(2, 3, 32), g.reshape(1, 32), b.reshape(1, 32), s, o)
    assert np.array_equal(y.reshape(6, 32), device_chain(x, g, b, s, o))


# ---- phase one ---------------------------------------------------------------------------------

class Args:
    """Valid views for phase one (F16 x [4, 32], INT8 y), replaced one at a time."""

    def __init__(self, arena):
        self.arena = arena
        self.v = {"x": self.make((4, 32), F16), "gamma": self.make((32,), F16),
                  "beta": self.make((32,), F16), "scale": self.make((1,), F16),
                  "offset": self.make((1,), I8), "y": self.make((4, 32), I8)}
        self.eps = 1e-6

    def make(self, shape, dt, acl_dtype=None):
        return view(self.arena, shape=shape, dtype=dt, acl_dtype=acl_dtype)

    def args(self):
        v = self.v
        return (v["x"], v["gamma"], v["beta"], v["scale"], v["offset"], v["y"])

    def call(self, ws=True, ex=True):
        return phase_one(*self.args(), eps=self.eps, ws=ws, ex=ex)


def expect(args, code, *words, **kw):
    return refused_by(lambda: args.call(**kw), CALL, (), code, *words)


def passes(args):
    rc, ws, ex = args.call()
    assert rc == OK, (rc, last_msg())
    assert ws == 0
    assert lib.aclDestroyAclOpExecutor(ex) == OK


@needs_kernel
def test_valid_arguments_pass(arena):
    passes(Args(arena))


def test_null_out_pointers_come_first(arena):
    a = Args(arena)
    a.v["x"] = None
    for kw, name in (({"ws": False}, "workspaceSize"), ({"ex": False}, "executor")):
        rc, _, _ = a.call(**kw)
        msg = last_msg()
        assert rc == NULLPTR and msg.startswith(CALL + ": " + name), msg


@pytest.mark.parametrize("name", ["x", "gamma", "beta", "scale", "offset", "y"])
def test_each_tensor_is_required(arena, name):
    a = Args(arena)
    a.v[name] = None
    expect(a, NULLPTR, name, "NULL")


def test_a_rank_2_gamma_is_reshaped_before_the_null_checks(arena):
    """PreDealData runs before CheckParams: a rank-2 gamma that is not [1, N] fails its
    reshape (561103) even beside a NULL x."""
    a = Args(arena)
    a.v["x"] = None
    a.v["gamma"] = a.make((2, 16), F16)
    expect(a, INNER_NULLPTR, "gamma", "[2,16]", "reshaped")
    a.v["gamma"] = a.make((32,), F16)
    a.v["beta"] = a.make((1, 0), F16)
    expect(a, INNER_NULLPTR, "beta", "reshaped")


def test_the_atlas_training_series_has_no_dtype(arena):
    if not TRAINING:
        pytest.skip("the Atlas training series' rule")
    expect(Args(arena), INVALID, "x dtype", "not supported on", "not implemented")


@pytest.mark.skipif(TRAINING, reason="every x dtype is refused there")
@pytest.mark.parametrize("name,dt,words", [
    ("x", F32, ("x dtype FLOAT", "not supported")),
    ("gamma", F32, ("gamma dtype FLOAT", "x's dtype")),
    ("beta", F32, ("beta dtype FLOAT", "x's dtype")),
    ("y", np.dtype(np.int16), ("y dtype", "not supported")),
    ("scale", F32, ("scale",)),
    ("offset", np.dtype(np.int32), ("offset dtype",)),
])
def test_dtypes(arena, name, dt, words):
    a = Args(arena)
    shape = a.v[name].shape
    a.v[name] = a.make(shape, dt)
    if REGBASE and name in ("x", "scale", "offset"):
        pytest.skip("Ascend 950's lists differ (FLOAT x; FLOAT scale; INT32 offset pass)")
    expect(a, INVALID, *words)


@pytest.mark.skipif(TRAINING, reason="every x dtype is refused there")
@pytest.mark.parametrize("name,shape,words", [
    ("x", (1,) * 9, ("x rank 9",)),
    ("gamma", (1, 1, 32), ("gamma rank 3",)),
    ("y", (4, 16), ("y",)),
    ("beta", (16,), ("beta shape [16]", "gamma's shape")),
    ("gamma", (16,), ("gamma's last dim 16", "x's last dim 32")),
    ("offset", (2,), ("offset shape [2]", "scale's shape [1]")),
])
def test_shapes(arena, name, shape, words):
    a = Args(arena)
    a.v[name] = a.make(shape, a.v[name].dtype)
    expect(a, INVALID, *words)


@needs_kernel
def test_scale_of_any_rank_passes_and_an_empty_one_is_refused(arena):
    """The op_api only logs a scale of rank other than 1; the kernel reads its first element,
    so an empty scale is refused (stricter, docs/emulator.md)."""
    a = Args(arena)
    a.v["scale"], a.v["offset"] = a.make((1, 1), F16), a.make((1, 1), I8)
    passes(a)
    a.v["scale"], a.v["offset"] = a.make((0,), F16), a.make((0,), I8)
    expect(a, INVALID, "scale is empty")


@needs_kernel
@pytest.mark.parametrize("change,words", [
    ({"x": ((4, 0), F16), "y": ((4, 0), I8), "gamma": ((0,), F16), "beta": ((0,), F16)},
     ("x shape [4,0] is empty",)),
    ({"eps": 0.0}, ("epsilon 0",)),
    ({"eps": 1e-50}, ("not positive as a float",)),
    ({"y": ((2, 32), I8)}, ("y shape [2,32]", "ViewCopy")),
])
def test_tiling_and_view_copy_refusals(arena, change, words):
    """The tiling's refusals (the vendor dereferences the NULL result: refused, stricter) and
    the ViewCopy's (y's batch dims are not checked before it): 561103."""
    a = Args(arena)
    for k, v in change.items():
        if k == "eps":
            a.eps = v
        else:
            a.v[k] = a.make(*v)
    expect(a, INNER_NULLPTR, *words)


@pytest.mark.skipif(not A2, reason="Atlas A2/A3's INT4 list")
def test_int4_y_cannot_receive_the_int32_view_and_int32_y_is_eighth_wide(arena):
    a = Args(arena)
    a.v["y"] = a.make((4, 32), I8, acl_dtype=lib.ACL_INT4)
    expect(a, INNER_NULLPTR, "INT4", "ViewCopy")
    a.v["y"] = a.make((4, 4), I32)
    passes(a)
    a.v["y"] = a.make((4, 32), I32)
    expect(a, INVALID, "1/8")


def test_ascend_950_is_not_modelled(arena):
    if not REGBASE:
        pytest.skip("Ascend 950's branch")
    a = Args(arena)
    expect(a, INNER_NULLPTR, "not modelled")
    a.v["x"] = a.make((4, 32), F32)
    a.v["gamma"], a.v["beta"] = a.make((32,), F32), a.make((32,), F32)
    expect(a, INVALID, "scale dtype FLOAT16 and offset dtype INT8", "FLOAT x")


@pytest.mark.skipif(not P310, reason="Atlas inference parts' lists")
def test_atlas_inference_lists(arena):
    a = Args(arena)
    a.v["y"] = a.make((4, 4), I32)
    expect(a, INVALID, "y dtype", "INT8")


# ---- the vendor's op_api UT cases (tests/ut/op_host/op_api/test_aclnn_rms_norm_quant.cpp) ----

UT_CASES = [  # (name, x dtype, expected status on Atlas A2)
    ("case_fp16_001", F16, OK),
    ("case_bf16_002", BF16, OK),
]


@pytest.mark.parametrize("case", UT_CASES, ids=[c[0] for c in UT_CASES])
def test_vendor_op_api_unit_test_cases(arena, case):
    """x [8, 64], gamma and beta [1, 64] (reshaped), scale [1] of x's dtype, offset [1] INT8,
    y [8, 64] INT8, eps 1e-6: SUCCESS on the UT's part (Atlas A2); the part's own answer
    elsewhere."""
    _, dt, status = case
    a = Args(arena)
    a.v = {"x": a.make((8, 64), dt), "gamma": a.make((1, 64), dt),
           "beta": a.make((1, 64), dt), "scale": a.make((1,), dt),
           "offset": a.make((1,), I8), "y": a.make((8, 64), I8)}
    if A2:
        assert status == OK
        passes(a)
    elif TRAINING or (P310 and dt == BF16):
        expect(a, INVALID, "x dtype")
    elif REGBASE:
        expect(a, INNER_NULLPTR, "not modelled")
    else:
        passes(a)


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
