"""The emulator's aclnnAddRmsNormDynamicQuantV2 through raw calls: phase one's checks, codes
and messages in the V2 op_api's order (hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/
op_api/aclnn_add_rms_norm_dynamic_quant_v2.cpp: CheckFlag, CheckNotNull, the empty tensors,
the y dtypes, INT4, CheckShapeValid; then the L0 op, op_api/add_rms_norm_dynamic_quant.cpp,
with V1's stricter checks) and the numbers with beta (added to the normed row before the
smooth scales: op_kernel/add_rms_norm_dynamic_quant_normal_kernel.h, arch35
add_rms_norm_dynamic_quant_regbase_common.h ComputeYAndAbsMaxVF), outputMask (the
outputs computed) and INT4 results (an INT32 y holding eight, or an INT4 y: Q = 7, the
values two to a byte), bit for bit against test_emulator_add_rms_norm_dynamic_quant's NumPy
model of the kernels and within one quantization step of the float64 reference; Ascend
950's empty-gamma kernel (op_kernel/arch35/add_rms_norm_dynamic_quant_empty.h: scales -inf).
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import dtypes, reference
from acl_py.raw import ffi, lib

from test_emulator_op import (BF16, F16, F32, INVALID, NULLPTR, OK, arena,  # noqa: F401
                              last_msg, no_leaks, stream)
from _device_reduce import half_interval_sum
from _emu_aclnn import passes, refusal_check, run_phase_two, SOC
from _emu_aclnn import phase_one as aclnn_phase_one
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_add_rms_norm_dynamic_quant import (A2, FIND_KERNEL, I8, INNER_NULLPTR,
                                                      REGBASE, SLICE, SLICE_D_N, SLICE_INT4,
                                                      TILING, device_chain,
                                                      inputs, needs_a2, where_it_runs,
                                                      needs_regbase, read_raw, regbase_chain,
                                                      regbase_kernel, split_params, view)
from test_emulator_rms_norm_quant import int4_view, order_rows, pack_int4

I32 = np.dtype(np.int32)
# y kinds: INT8; INT32 (INT4 packed eight to an element, little-endian, the lower nibble
# first); INT4 (x1's shape, two to a byte)
Y_KINDS = ("int8", "int32", "int4")

P1 = lib.aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize
P2 = lib.aclnnAddRmsNormDynamicQuantV2
CALL = "aclnnAddRmsNormDynamicQuantV2GetWorkspaceSize"


class Mask:
    """An aclBoolArray outputMask (None: NULL), destroyed by close()."""

    def __init__(self, values):
        self.handle = ffi.NULL if values is None else \
            lib.aclCreateBoolArray(ffi.new("bool[]", list(values)), len(values))

    def close(self):
        if self.handle != ffi.NULL:
            assert lib.aclDestroyBoolArray(self.handle) == OK


def phase_one(ts, mask, eps=1e-6, ws=True, ex=True):
    x1, x2, g, s1, s2, beta, y1, y2, xo, sc1, sc2 = ts
    m = Mask(mask)
    try:
        return aclnn_phase_one(P1, x1, x2, g, s1, s2, beta, eps, m.handle, y1, y2, xo, sc1,
                               sc2, ws=ws, ex=ex)
    finally:
        m.close()


class Int4Y:
    """An INT4 y of ``shape`` over sentinel bytes (-77; test_emulator_rms_norm_quant's
    int4_view): read() returns its values, asserting nothing past their bytes was written."""

    def __init__(self, arena, shape):
        self.arena, self.shape = arena, tuple(shape)
        self.storage, self.ptr, self.handle = int4_view(arena, shape)

    def read(self):
        out = np.empty_like(self.storage)
        self.arena.d2h(out, self.ptr)
        nbytes = int(np.prod(self.shape)) // 2
        assert (out[nbytes:] == -77).all(), "written past the INT4 y"
        return out[:nbytes]


def y_view(arena, shape, kind, computed):
    """A y of the kind: x1's shape when computed, else the L0 op's [1]; INT32's last dim / 8."""
    if not computed:
        shape = (1,)
    elif kind == "int32":
        shape = shape[:-1] + (shape[-1] // 8,)
    if kind == "int4":
        return Int4Y(arena, shape)
    return view(arena, shape=shape, dtype=I32 if kind == "int32" else I8, sentinel=-77)


def read_y(v, kind):
    """A y's values (INT4 ones unpacked to int8) and its raw contents."""
    raw = v.read() if kind == "int4" else read_raw(v)
    if kind == "int8":
        return raw, raw
    packed = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)   # INT32: little-endian
    return dtypes.unpack_int4(packed).reshape(v.shape[:-1] + (-1,)), raw


def call(arena, args, beta, mask, eps=1e-6, y_kind="int8"):
    """Runs V2 on [M, N] rows with y of y_kind; an uncomputed output is given as one element
    (the L0 op's [1]) and must keep its sentinel. Returns (y1, y2, x, scale1, scale2), None
    for an uncomputed one, INT4 results as their values."""
    x1 = args[0]
    out1, out2 = (True, args[3] is not None and args[4] is not None) if mask is None \
        else mask
    views = [None if a is None else view(arena, a) for a in args]
    vb = None if beta is None else view(arena, beta)
    sc_shape = x1.shape[:-1]
    vy1, vy2 = y_view(arena, x1.shape, y_kind, out1), y_view(arena, x1.shape, y_kind, out2)
    vx = view(arena, shape=x1.shape, dtype=x1.dtype, sentinel=-7)
    vs1 = view(arena, shape=sc_shape if out1 else (1,), dtype=F32, sentinel=-5)
    vs2 = view(arena, shape=sc_shape if out2 else (1,), dtype=F32, sentinel=-5)
    run_phase_two(arena, P2, phase_one(views + [vb, vy1, vy2, vx, vs1, vs2], mask, eps=eps))
    (y1, raw1), (y2, raw2) = read_y(vy1, y_kind), read_y(vy2, y_kind)
    got = [y1, y2] + [read_raw(v) for v in (vx, vs1, vs2)]
    for k, out, raw in ((0, out1, raw1), (1, out2, raw2)):
        if not out:
            assert (raw == -77).all() and (got[k + 3] == -5).all(), "uncomputed written"
            got[k] = got[k + 3] = None
    return got


def assert_matches(got, args, beta, mask, eps=1e-6, int4=False):
    exp = device_chain(*args, eps=eps, beta=beta, mask=mask, int4=int4)
    assert np.array_equal(got[2].view(np.uint16), exp[2].view(np.uint16))
    ref = reference.add_rms_norm_dynamic_quant(*args, epsilon=eps, beta=beta,
                                               output_mask=mask,
                                               y_dtype="int4" if int4 else "int8")
    for k in (0, 1):
        assert (got[k] is None) == (exp[k] is None) == (ref[k] is None)
        if exp[k] is None:
            continue
        assert np.array_equal(got[k], exp[k])
        assert np.array_equal(got[k + 3].view(np.uint32), exp[k + 3].view(np.uint32))
        assert np.max(np.abs(got[k].astype(np.float64) - ref[k])) <= reference.QUANT_STEP
        assert np.allclose(got[k + 3], ref[k + 3], rtol=2e-3, atol=0)
    return exp


# ---- numbers -----------------------------------------------------------------------------------

MASKS = [None, (True, False), (False, True), (True, True)]
MASK_IDS = {None: "nomask", (True, False): "y1", (False, True): "y2", (True, True): "both"}
SMOOTH_IDS = ("plain", "smooth1", "dual")
# (smooth scales given, outputMask): every pair CheckFlag takes; it refuses a smooth scale
# whose output is masked off (test_check_flag covers those)
SMOOTH_MASKS = [(smooth, mask) for mask in MASKS for smooth in (0, 1, 2)
                if mask is None or not ((smooth >= 1 and not mask[0]) or
                                        (smooth >= 2 and not mask[1]))]


@where_it_runs
@pytest.mark.parametrize("dt", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m,n", [(7, 33), (3, 1024), (2, SLICE_D_N)],
                         ids=["33", "1024", "sliced"])
@pytest.mark.parametrize("smooth,mask", SMOOTH_MASKS,
                         ids=[f"{SMOOTH_IDS[s]}-{MASK_IDS[m]}" for s, m in SMOOTH_MASKS])
def test_beta_and_mask_bits_and_reference(arena, dt, m, n, smooth, mask):
    """beta added to (s * rstd) * gamma in float before the smooth scales; each computed
    output quantized from it (y2 without smoothScale2: the row itself), the others left
    unwritten; bit for bit the kernels' chain, within one step of the float64 reference."""
    rng = np.random.default_rng(m * n + smooth)
    args = inputs(rng, (m, n), dt, smooth)
    beta = (rng.standard_normal(n) * 0.5).astype(dt)
    got = call(arena, args, beta, mask)
    assert_matches(got, args, beta, mask)


@where_it_runs
def test_beta_changes_the_numbers_and_none_is_v1(arena):
    """Without beta and outputMask, V2 computes V1's bits; a beta moves them."""
    rng = np.random.default_rng(11)
    args = inputs(rng, (4, 64), F16, 2)
    plain = call(arena, args, None, None)
    assert_matches(plain, args, None, None)
    with_beta = call(arena, args, np.full(64, 0.75, F16), None)
    assert not np.array_equal(plain[3], with_beta[3])


@where_it_runs
def test_smooth_scale2_alone_with_a_mask(arena):
    """With outputMask, smoothScale2 without smoothScale1 is taken (the tiling's rule holds
    only without one): y1 from the row, y2 from the row times smoothScale2."""
    rng = np.random.default_rng(12)
    x1, x2, g, _, s2 = inputs(rng, (5, 48), BF16, 2)
    args = (x1, x2, g, None, s2)
    got = call(arena, args, None, (True, True))
    assert_matches(got, args, None, (True, True))


@needs_regbase
@pytest.mark.parametrize("n,beta,out1,kernel", [
    (12608, True, True, "perf"), (12609, True, True, "normal"), (12609, False, True, "perf"),
    (14016, False, False, "perf"), (14017, False, False, "normal")])
def test_regbase_beta_and_mask_move_the_boundaries(arena, n, beta, out1, kernel):
    """beta's UB share (hasBeta) and an uncomputed y1 (outQuant1Flag) enter the arch35
    tiling's sizes: with beta the perf kernel ends at 12608 columns (14016 without), y2
    alone moves nothing from V1's boundaries."""
    mask = (out1, not out1)
    assert regbase_kernel(n, 0, not out1, beta, out1) == kernel
    rng = np.random.default_rng(n)
    args = inputs(rng, (3, n), F16, smooth=0)
    b = (rng.standard_normal(n) * 0.1).astype(F16) if beta else None
    got = call(arena, args, b, mask)
    assert_matches(got, args, b, mask)


# Rows where the arch35 tiling would take another kernel (or powerSplit) had it counted the
# UB buffers of the graph op AddRmsNormDynamicQuantV2's y3 and y4 (op_host/arch35/
# add_rms_norm_dynamic_quant_tiling_arch35.cpp CalFullLoadBaseM, CalUsedSize, CalUBTotalSize:
# hasY3/hasY4). aclnnAddRmsNormDynamicQuantV2 launches the L0 op AddRmsNormDynamicQuant (op_api/
# add_rms_norm_dynamic_quant.cpp OP_TYPE_REGISTER), whose five outputs have no y3 or y4, so
# ParseOutputFlags (tiling_base_arch35.cpp) leaves both false: isV2_ is true only for that
# node type. Counted, the perf kernel would end at 8400 columns (beta: 7888), normal at
# 11008 (beta: 10072); with two smooth scales and beta powerSplit would be 4096, not 8192.
# (n, smooth scales, beta, outputMask, the kernel, the counted one; "split4096": split
# with powerSplit 4096)
V2_Y3_Y4_CASES = [(8408, 0, False, None, "perf", "normal"),
                  (12000, 0, True, (True, False), "perf", "single_row"),
                  (13000, 0, True, None, "normal", "single_row"),
                  (20000, 2, True, (True, True), "split", "split4096")]


@needs_regbase
@pytest.mark.parametrize("n,smooth,beta,mask,kernel,counted", V2_Y3_Y4_CASES,
                         ids=[f"{c[4]}-{c[0]}" for c in V2_Y3_Y4_CASES])
def test_regbase_v2_counts_no_y3_y4_buffers(arena, n, smooth, beta, mask, kernel, counted):
    """V2's kernel is V1's choice with beta and the mask: each row bit for bit its kernel's
    NumPy statement (tests/_device_reduce.py's sums), and scale1 not what the kernel a
    y3/y4-counting tiling would take gives (V2_Y3_Y4_CASES)."""
    dual = mask[1] if mask else smooth == 2
    assert regbase_kernel(n, smooth, dual, beta, True) == kernel
    rng = np.random.default_rng(n + smooth)
    x1 = order_rows(rng, 8, n, F16)
    g = rng.uniform(0.5, 1.5, n).astype(F16)
    s1, s2 = ((0.5 + rng.random(n)).astype(F16) if smooth >= k else None for k in (1, 2))
    args = (x1, np.zeros_like(x1), g, s1, s2)
    b = (rng.standard_normal(n) * 0.1).astype(F16) if beta else None
    got = call(arena, args, b, mask)
    assert_matches(got, args, b, mask)
    if counted == "split4096":
        p, loop = split_params(n, smooth, dual, beta)
        assert p == 8192
        other = regbase_chain(*args, 1e-6, "split", beta=b, mask=mask, split=(4096, 2 * loop))
    else:
        other = regbase_chain(*args, 1e-6, counted, beta=b, mask=mask)
    assert not np.array_equal(got[3].view(np.uint32), other[3].view(np.uint32))


SLICE_D_N_INT4 = 12304   # beyond 12224 columns, a multiple of 8: slice-D's INT4 slices


@where_it_runs
@pytest.mark.parametrize("y_kind", ["int32", "int4"])
@pytest.mark.parametrize("dt,m,n", [(F16, 7, 64), (BF16, 3, 1024), (F16, 2, SLICE_D_N_INT4)],
                         ids=["64", "1024", "sliced"])
@pytest.mark.parametrize("smooth,mask", [(2, None), (1, (True, True)), (0, (False, True))],
                         ids=["dual-nomask", "smooth1-both", "plain-y2"])
def test_int4_bits_and_reference(arena, y_kind, dt, m, n, smooth, mask):
    """INT4 results (an INT32 y holding eight, an INT4 y two to a byte, the lower nibble
    first): Q = 7 (Atlas A2/A3: 7 / max and its reciprocal the scale; Ascend 950: max * (1 /
    7)), the values rounded to nearest even, at most 7 in magnitude; Atlas A2/A3's slice-D
    kernel sums 8832-column slices; bit for bit the kernels' chain, within one step of the
    float64 reference."""
    rng = np.random.default_rng(m * n + smooth)
    args = inputs(rng, (m, n), dt, smooth)
    beta = (rng.standard_normal(n) * 0.5).astype(dt)
    got = call(arena, args, beta, mask, y_kind=y_kind)
    exp = assert_matches(got, args, beta, mask, int4=True)
    for y in (exp[0], exp[1]):
        assert y is None or (np.abs(y).max() == 7 and len(np.unique(y)) >= 12)


@where_it_runs
def test_int32_y_holds_the_device_words(arena):
    """The INT32 words themselves: eight INT4 values each, two to a byte (the lower nibble
    first), little-endian (RmsNormQuant's packing, test_emulator_rms_norm_quant.pack_int4)."""
    rng = np.random.default_rng(21)
    args = inputs(rng, (5, 64), F16, 0)
    q = device_chain(*args, int4=True)[0]
    vy = y_view(arena, (5, 64), "int32", True)
    views = [view(arena, a) if a is not None else None for a in args]
    outs = [vy, y_view(arena, (5, 64), "int32", False), view(arena, shape=(5, 64), dtype=F16),
            view(arena, shape=(5,), dtype=F32), view(arena, shape=(1,), dtype=F32)]
    run_phase_two(arena, P2, phase_one(views + [None] + outs, None))
    assert np.array_equal(read_raw(vy), pack_int4(q))


@needs_a2
def test_atlas_int4_rows_tell_the_slices_apart(arena):
    """The slice-D kernel's INT4 slice (8832 columns) is not INT8's (8864): these rows' sums
    of squares differ by the slice, and the emulator's bits are the INT4 slices' chain."""
    rng = np.random.default_rng(22)
    args = inputs(rng, (8, SLICE_D_N_INT4), F16, 0)
    got = call(arena, args, None, None, y_kind="int32")
    s = args[0].astype(F32) + args[1].astype(F32)
    sums = {}
    for width in (SLICE_INT4, SLICE):
        ss = np.zeros(8, F32)
        for c in range(0, SLICE_D_N_INT4, width):
            ss = ss + half_interval_sum((s * s)[:, c:c + width])
        sums[width] = ss
    assert not np.array_equal(sums[SLICE_INT4], sums[SLICE])
    assert_matches(got, args, None, None, int4=True)


@needs_regbase
@pytest.mark.parametrize("n,kernel", [(14016, "perf"), (14024, "normal"),
                                      (14856, "single_row"), (15816, "split")])
def test_regbase_int4_on_every_kernel(arena, n, kernel):
    """INT4 takes the same tiling (its sizes count y as INT8): each of the four kernels'
    scales (perf, normal and split max * (1 / 7), single row max / (1 / (1 / 7))) and
    values, INT32 y, y1 alone."""
    assert regbase_kernel(n, 0, False, False, True) == kernel
    rng = np.random.default_rng(n)
    args = inputs(rng, (2, n), BF16, smooth=0)
    got = call(arena, args, None, (True, False), y_kind="int32")
    assert_matches(got, args, None, (True, False), int4=True)


@needs_regbase
@pytest.mark.parametrize("m,mask", [((3, 5), None), ((4,), (False, True)),
                                    ((2, 3), (True, True)), ((0, 2), None)],
                         ids=["3x5-y1", "4-y2", "2x3-both", "0-rows"])
def test_regbase_empty_gamma_kernel_writes_minus_inf_scales(arena, m, mask):
    """Ascend 950, gamma empty (x1's last dim 0): no early return; the tiling's empty kernel
    (add_rms_norm_dynamic_quant_tiling_empty.cpp) writes -inf into each computed scale's
    rows (add_rms_norm_dynamic_quant_empty.h) and nothing else."""
    shape = m + (0,)
    x1 = np.zeros(shape, F16)
    args = (x1, x1.copy(), np.zeros(0, F16), None, None)
    views = [view(arena, a) if a is not None else None for a in args]
    out1, out2 = (True, False) if mask is None else mask
    outs = [view(arena, shape=shape if out1 else (1,), dtype=I8, sentinel=-77),
            view(arena, shape=shape if out2 else (1,), dtype=I8, sentinel=-77),
            view(arena, shape=shape, dtype=F16, sentinel=-7),
            view(arena, shape=m if out1 else (1,), dtype=F32, sentinel=-5),
            view(arena, shape=m if out2 else (1,), dtype=F32, sentinel=-5)]
    run_phase_two(arena, P2, phase_one(views + [None] + outs, mask))
    for k, out in ((0, out1), (1, out2)):
        sc = read_raw(outs[k + 3])
        assert (sc == (-np.inf if out else -5)).all() and sc.size == (np.prod(m) if out else 1)
        assert (read_raw(outs[k]) == -77).all()


# ---- phase one ---------------------------------------------------------------------------------

class Args:
    """Valid views for phase one (FLOAT16 x [4, n], both smooth scales, beta, INT8 y, FLOAT
    scales [4], outputMask [True, True]), replaced one at a time."""

    NAMES = ("x1", "x2", "gamma", "s1", "s2", "beta", "y1", "y2", "x", "sc1", "sc2")

    def __init__(self, arena, n=32, m=4):
        self.arena = arena
        mk = self.make
        self.v = {"x1": mk((m, n), F16), "x2": mk((m, n), F16), "gamma": mk((n,), F16),
                  "s1": mk((n,), F16), "s2": mk((n,), F16), "beta": mk((n,), F16),
                  "y1": mk((m, n), I8), "y2": mk((m, n), I8), "x": mk((m, n), F16),
                  "sc1": mk((m,), F32), "sc2": mk((m,), F32)}
        self.mask = (True, True)
        self.eps = 1e-6

    def make(self, shape, dt, acl_dtype=None):
        return view(self.arena, shape=shape, dtype=dt, acl_dtype=acl_dtype)

    def call(self, ws=True, ex=True):
        return phase_one([self.v[k] for k in self.NAMES], self.mask, eps=self.eps, ws=ws,
                         ex=ex)


expect = refusal_check(CALL)


@where_it_runs
def test_valid_arguments_pass(arena):
    passes(Args(arena))
    a = Args(arena)
    a.mask = None
    passes(a)
    a = Args(arena)
    a.v["s2"] = None
    a.mask = (True, False)
    a.v["y2"], a.v["sc2"] = a.make((1,), I8), a.make((1,), F32)
    passes(a)


def test_null_out_pointers_come_first(arena):
    a = Args(arena)
    a.mask = (False, False)
    for kw, name in (({"ws": False}, "workspaceSize"), ({"ex": False}, "executor")):
        rc, _, _ = a.call(**kw)
        msg = last_msg()
        assert rc == NULLPTR and msg.startswith(CALL + ": " + name), msg


@pytest.mark.parametrize("mask,s1,s2,words", [
    ((True, True, False), True, True, ("outputMask length 3", "must be 2")),
    ((False, True), True, True, ("smoothScale1Optional is given", "outputMask[0]")),
    ((True, False), True, True, ("smoothScale2Optional is given", "outputMask[1]")),
    ((False, False), False, False, ("both false",)),
    (None, False, True, ("smoothScale2Optional is given without smoothScale1Optional",)),
])
def test_check_flag(arena, mask, s1, s2, words):
    """CheckFlag, first after the out-pointers (161002), before any NULL check."""
    a = Args(arena)
    a.mask = mask
    a.v["s1"] = a.v["s1"] if s1 else None
    a.v["s2"] = a.v["s2"] if s2 else None
    a.v["x1"] = None
    expect(a, INVALID, *words)


@pytest.mark.parametrize("name,c_name", [("x1", "x1"), ("x2", "x2"), ("gamma", "gamma"),
                                         ("x", "xOut"), ("y1", "y1Out"), ("sc1", "scale1Out"),
                                         ("y2", "y2Out"), ("sc2", "scale2Out")])
def test_each_required_tensor(arena, name, c_name):
    a = Args(arena)
    a.v[name] = None
    expect(a, NULLPTR, c_name, "is NULL")


def test_an_uncomputed_outputs_null_is_refused_too(arena):
    """Stricter: the op_api reads y2Out (its emptiness, its shape) and the L0 op scale2Out
    even when outputMask[1] is false; NULL would crash the host (161001)."""
    a = Args(arena)
    a.v["s2"] = None
    a.mask = (True, False)
    a.v["y2"] = None
    expect(a, NULLPTR, "y2Out is NULL", "not computed")


def test_empty_tensors_succeed_with_nothing_launched(arena):
    """Atlas A2/A3 (and the parts without a kernel): any empty x1, x2, gamma or y2Out returns
    before the L0 op; Ascend 950 too, but not for an empty gamma, which runs the empty
    kernel (its numbers: test_regbase_empty_gamma_kernel_writes_minus_inf_scales)."""
    passes(Args(arena, n=0))
    passes(Args(arena, m=0))


@needs_regbase
@pytest.mark.parametrize("change,code,words", [
    ({"x1": ((0,), F16), "x2": ((0,), F16), "x": ((0,), F16), "y1": ((0,), I8),
      "y2": ((0,), I8), "sc1": ((1,), F32), "sc2": ((1,), F32)},
     TILING, ("x1 rank 1", "at least 2")),
    ({"x2": ((4, 1), F16)}, TILING, ("x2 shape [4,1]", "x1's shape")),
    ({"sc1": ((3,), F32)}, INVALID, ("scale1Out shape [3]",)),
    ({"y2": ((4, 0), I8, lib.ACL_FLOAT8_E4M3FN)}, INVALID, ("y2Out dtype FLOAT8_E4M3FN",)),
])
def test_regbase_empty_gamma_takes_the_other_kernels_checks(arena, change, code, words):
    """The empty tiling runs the regbase tiling's checks (GetShapeAttrsInfo) and the op_api's
    before it: the emulator's stricter rules as for a non-empty gamma."""
    a = Args(arena, n=0)
    for k, spec in change.items():
        a.v[k] = a.make(*spec)
    expect(a, code, *words)


def test_y_dtypes_must_match_when_both_are_computed(arena):
    a = Args(arena)
    a.v["y2"] = a.make((4, 32), I8, acl_dtype=lib.ACL_HIFLOAT8)
    expect(a, INVALID, "y1Out dtype INT8", "y2Out dtype HIFLOAT8", "same")


def test_int32_y_last_dims_are_the_op_apis_rule(arena):
    """INT32 y (INT4 packed eight to an element): each computed y's last dim x1's / 8
    (CheckInt4Compatibility, 161002), which replaces CheckShapeValid."""
    a = Args(arena)
    for k in ("y1", "y2"):
        a.v[k] = a.make((4, 32), I32)
    expect(a, INVALID, "y1Out last dim 32", "1/8")
    a.v["y1"] = a.make((4, 4), I32)
    expect(a, INVALID, "y2Out last dim 32", "1/8")


@where_it_runs
def test_int4_results_pass(arena):
    """INT32 (packed) and INT4 y on Atlas A2/A3 and Ascend 950 (both kernels' INT4), with
    an uncomputed output's [1] of the same dtype."""
    for ydt, shape, acl in ((I32, (4, 4), None), (I8, (4, 32), lib.ACL_INT4)):
        a = Args(arena)
        for k in ("y1", "y2"):
            a.v[k] = a.make(shape, ydt, acl)
        passes(a)
        a.v["s2"] = None
        a.mask = (True, False)
        a.v["y2"], a.v["sc2"] = a.make((1,), ydt, acl), a.make((1,), F32)
        passes(a)


@where_it_runs
@pytest.mark.parametrize("name,shape,ydt,acl,code,words", [
    ("y1", (2, 4), I32, None, INNER_NULLPTR, ("y1Out shape [2,4]", "result's shape")),
    ("y2", (1,), I8, None, INNER_NULLPTR, ("y2Out dtype INT8", "INT32")),
])
def test_int32_y_copies_the_int32_view(arena, name, shape, ydt, acl, code, words):
    """The L0 op's INT4 result viewed as INT32 (the last dim / 8) is ViewCopy'd: a computed
    y of another leading shape, an uncomputed one of another dtype: 561103."""
    a = Args(arena)
    for k in ("y1", "y2"):
        a.v[k] = a.make((4, 4), I32)
    if name == "y2":
        a.v["s2"] = None
        a.mask = (True, False)
        a.v["sc2"] = a.make((1,), F32)
    a.v[name] = a.make(shape, ydt, acl)
    expect(a, code, *words)


@where_it_runs
def test_int4_y_needs_an_even_last_dim(arena):
    """An INT4 y with an odd N: Ascend 950's tiling refuses it (561002, stricter: the L0 op
    discards the status); Atlas A2/A3's docs do (161002, stricter: no code checks it)."""
    a = Args(arena, n=33)
    for k in ("y1", "y2"):
        a.v[k] = a.make((4, 33), I8, lib.ACL_INT4)
    expect(a, TILING if REGBASE else INVALID, "x1's last dim 33", "even", "INT4")


@where_it_runs
def test_int4_views_the_copy_refuses(arena):
    """As RmsNormQuant's (int4_pack.h int4_view_copy_rule): an INT4 y not contiguous, with
    gaps or a stride of 0, is refused as the device's ViewCopy refuses it (no INT4 kernel,
    561103); a transposed one "not modelled"; a contiguous one passes from any element
    offset (from an odd one the bytes start at offset / 2 rounded down)."""
    a = Args(arena)
    for offset in (0, 1):
        for k in ("y1", "y2"):
            a.v[k] = int4_view(arena, (4, 32), None, offset)[2]
        passes(a)
    for strides, offset in (([64, 1], 0), ([0, 1], 0)):
        a.v["y2"] = int4_view(arena, (4, 32), strides, offset)[2]
        expect(a, INNER_NULLPTR, "INT4 y2Out", "not contiguous", "no INT4 kernel")
    a.v["y2"] = int4_view(arena, (4, 32), [1, 4], 0)[2]
    expect(a, INNER_NULLPTR, "INT4 y2Out", "transposed", "not modelled")


@pytest.mark.parametrize("name", ["y1", "y2"])
def test_computed_y_shapes_are_the_tiling_error(arena, name):
    a = Args(arena)
    a.v[name] = a.make((2, 64), I8)
    expect(a, TILING, f"{name}Out shape [2,64]", "x1's shape")


@pytest.mark.parametrize("name,shape,dt,code,words", [
    ("beta", (16,), F16, TILING, ("betaOptional shape [16]", "gamma's shape")),
    ("beta", (32,), F32, TILING, ("betaOptional dtype FLOAT", "not supported")),
    ("beta", (32,), BF16, INVALID, ("betaOptional dtype BF16", "x1's dtype")),
    ("x1", (4, 32), F32, TILING, ("x1 dtype FLOAT", "not supported")),
])
def test_stricter_tiling_and_docs_rules_take_beta(arena, name, shape, dt, code, words):
    a = Args(arena)
    a.v[name] = a.make(shape, dt)
    if name == "x1":
        a.v["x2"] = a.make(shape, dt)
    expect(a, code, *words)


@where_it_runs
@pytest.mark.parametrize("name,shape,words", [
    ("y1", (4, 32), ("y1Out shape [4,32]", "one element")),
    ("sc1", (4,), ("scale1Out shape [4]", "one element")),
])
def test_an_uncomputed_output_is_copied_from_one_element(arena, name, shape, words):
    """outputMask[0] false: the L0 op's y1 and scale1 are [1], still copied: 561103."""
    a = Args(arena)
    a.v["s1"] = None
    a.mask = (False, True)
    a.v["y1"], a.v["sc1"] = a.make((1,), I8), a.make((1,), F32)
    a.v[name] = a.make(shape, a.v[name].dtype)
    expect(a, INNER_NULLPTR, *words)


@only_where(A2)   # Atlas A2/A3's INT8 and INT4 kernels
def test_no_kernel_for_a_float8_result(arena):
    a = Args(arena)
    for k in ("y1", "y2"):
        a.v[k] = a.make((4, 32), I8, acl_dtype=lib.ACL_FLOAT8_E4M3FN)
    expect(a, FIND_KERNEL, "not supported on", "INT8 or INT4 only")


@only_where(not (A2 or REGBASE))   # the others run AddRmsNormDynamicQuant's kernel (its L0 op)
@pytest.mark.parametrize("y_kind", Y_KINDS)
def test_parts_without_a_kernel(arena, y_kind):
    """The Atlas inference and training series have no kernel, for INT4 results too (561003,
    stricter: the L0 op discards the launcher's status)."""
    a = Args(arena)
    for k in ("y1", "y2"):
        a.v[k] = {"int8": lambda: a.make((4, 32), I8), "int32": lambda: a.make((4, 4), I32),
                  "int4": lambda: a.make((4, 32), I8, lib.ACL_INT4)}[y_kind]()
    expect(a, FIND_KERNEL, "not supported on", "no kernel")


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
