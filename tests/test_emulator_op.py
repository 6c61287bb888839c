"""The emulator's aclnnLayerNormBackward, through the raw cffi calls (acl_py.raw).

Numbers are checked against an independent NumPy float64 statement of the operator's formulas
(`reference` below), on the very values the device holds (inputs quantized to their dtype
first). Tolerances, per element:

    |out - ref| <= RTOL_COMPUTE * scale + ROUND[out dtype] * |ref| + TINY[out dtype]

- scale is the same formula evaluated on absolute values (sum |terms|), so the bound is what
  float32 accumulation can lose whatever the cancellation: RTOL_COMPUTE = 1e-5 (the kernel
  accumulates in float32 for every input dtype);
- ROUND is one unit in the last place of the output dtype: 0 for FLOAT, 2^-10 for FLOAT16,
  2^-7 for BF16; TINY covers FLOAT16's subnormal spacing. gradInput is rounded twice, as the
  device does (to input's dtype, then to its own): its bound adds ROUND/TINY of input's dtype.

Where the design promises exact equality (the same call with fp32 vs fp16/bf16 outputs, a
strided view vs its contiguous copy, different thread counts, repeated runs) the test
compares bits.
"""
from __future__ import annotations

import ctypes
import itertools
import zlib

import ml_dtypes
import numpy as np
import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import supports_bfloat16

from _part_runs import bf16_where_it_runs, only_where
from _views import LAYOUTS, view_extent  # noqa: F401 (LAYOUTS: the op tests take it here)
from _workspace_model import ARCH, helper_ws, max_allocator

if not lib.backend.is_emulator:  # aclemu* introspection exists only in the emulator
    pytest.skip("emulator-only tests (the active backend is real CANN)", allow_module_level=True)

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
ACL_DT = {F32: lib.ACL_FLOAT, F16: lib.ACL_FLOAT16, BF16: lib.ACL_BF16}
DTYPES = [F32, F16, BF16]
RTOL_COMPUTE = 1e-5
ROUND = {F32: 0.0, F16: 2.0 ** -10, BF16: 2.0 ** -7}
TINY = {F32: 1e-30, F16: 2.0 ** -24, BF16: 1e-30}

OK, NULLPTR, INVALID = 0, 161001, 161002
RUNTIME, INNER = 361001, 561000
P1 = lib.aclnnLayerNormBackwardGetWorkspaceSize
P2 = lib.aclnnLayerNormBackward
LIVE_FIELDS = ("device_allocations", "host_allocations", "tensors", "int_arrays", "bool_arrays",
               "executors", "streams", "events", "contexts", "device_bytes")


# ---- session and per-test bookkeeping ------------------------------------------------------

@pytest.fixture(scope="session")
def stream():
    rc = lib.aclInit(ffi.NULL)
    assert rc in (0, 100002), rc  # aclInit is once per process; another test may have done it
    assert lib.aclrtSetDevice(0) == 0
    p = ffi.new("aclrtStream *")
    assert lib.aclrtCreateStream(p) == 0
    yield p[0]
    assert lib.aclrtDestroyStream(p[0]) == 0
    assert lib.aclrtResetDevice(0) == 0


def live():
    out = ffi.new("aclemuLiveObjects *")
    assert lib.aclemuGetLiveObjects(out) == 0
    return {f: getattr(out, f) for f in LIVE_FIELDS}


@pytest.fixture(autouse=True)
def no_leaks(stream):
    lib.aclemuSetNumThreads(0)
    before = live()
    yield
    assert lib.aclrtSynchronizeStream(stream) == 0
    lib.aclemuSetFaults(ffi.NULL)
    lib.aclemuSetNumThreads(0)
    assert live() == before


def last_msg() -> str:
    p = lib.aclGetRecentErrMsg()
    return ffi.string(p).decode() if p != ffi.NULL else ""


class Arena:
    """Device buffers, tensors and arrays of one test, released in close()."""

    def __init__(self, stream):
        self.stream = stream
        self.bufs, self.tensors, self.arrays = [], [], []

    def malloc(self, nbytes):
        p = ffi.new("void **")
        assert lib.aclrtMalloc(p, max(int(nbytes), 1), 0) == 0
        self.bufs.append(p[0])
        return p[0]

    def h2d(self, dst, host):
        b = np.ascontiguousarray(host).view(np.uint8)
        if b.size:
            assert lib.aclrtMemcpy(dst, b.size, ffi.from_buffer(b), b.size,
                                   lib.ACL_MEMCPY_HOST_TO_DEVICE) == 0

    def d2h(self, host, src):
        b = host.view(np.uint8)
        if b.size:
            assert lib.aclrtMemcpy(ffi.from_buffer(b), b.size, src, b.size,
                                   lib.ACL_MEMCPY_DEVICE_TO_HOST) == 0

    def tensor(self, shape, dtype, strides, offset, storage_elems, data, acl_dtype=None):
        nd = len(shape)
        t = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), nd,
                                ACL_DT[dtype] if acl_dtype is None else acl_dtype,
                                ffi.new("int64_t[]", list(strides) or [0]), offset,
                                lib.ACL_FORMAT_ND, ffi.new("int64_t[]", [storage_elems]), 1, data)
        assert t != ffi.NULL, last_msg()
        self.tensors.append(t)
        return t

    def int_array(self, values):
        a = lib.aclCreateIntArray(ffi.new("int64_t[]", list(values) or [0]), len(values))
        assert a != ffi.NULL
        self.arrays.append((lib.aclDestroyIntArray, a))
        return a

    def bool_array(self, values):
        a = lib.aclCreateBoolArray(ffi.new("bool[]", list(values) or [False]), len(values))
        assert a != ffi.NULL
        self.arrays.append((lib.aclDestroyBoolArray, a))
        return a

    def destroy_tensor(self, t):
        self.tensors.remove(t)
        assert lib.aclDestroyTensor(t) == 0

    def close(self):
        assert lib.aclrtSynchronizeStream(self.stream) == 0
        for t in self.tensors:
            assert lib.aclDestroyTensor(t) == 0
        for destroy, a in self.arrays:
            assert destroy(a) == 0
        for b in self.bufs:
            assert lib.aclrtFree(b) == 0


# The dtypes of the vendor's op_api unit-test cases the replays name, with their element sizes
UT_DTYPES = {"f32": (lib.ACL_FLOAT, 4), "f16": (lib.ACL_FLOAT16, 2), "bf16": (lib.ACL_BF16, 2),
             "double": (lib.ACL_DOUBLE, 8), "u8": (lib.ACL_UINT8, 1), "i8": (lib.ACL_INT8, 1),
             "i16": (lib.ACL_INT16, 2), "i32": (lib.ACL_INT32, 4), "i64": (lib.ACL_INT64, 8),
             "bool": (lib.ACL_BOOL, 1), "string": (lib.ACL_STRING, 1),
             "c64": (lib.ACL_COMPLEX64, 8), "c128": (lib.ACL_COMPLEX128, 16),
             "f8e5m2": (lib.ACL_FLOAT8_E5M2, 1), "f8e4m3fn": (lib.ACL_FLOAT8_E4M3FN, 1),
             "hif8": (lib.ACL_HIFLOAT8, 1)}


def ut_tensor(arena, spec):
    """A tensor of a replayed vendor unit-test case: None for a NULL argument, else
    ``(shape, dtype name, format name[, strides])`` (contiguous strides when absent) over
    fresh device memory of the elements the view spans."""
    if spec is None:
        return None
    shape, dt, fmt = spec[:3]
    strides = spec[3] if len(spec) > 3 and spec[3] is not None else [
        int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    span = 1 + sum((d - 1) * s for d, s in zip(shape, strides)) if 0 not in shape else 1
    acl_dtype, size = UT_DTYPES[dt]
    t = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape)), len(shape), acl_dtype,
                            ffi.new("int64_t[]", list(strides)), 0,
                            getattr(lib, f"ACL_FORMAT_{fmt}"), ffi.new("int64_t[]", [span]),
                            1, arena.malloc(size * span))
    assert t != ffi.NULL, last_msg()
    arena.tensors.append(t)
    return t


@pytest.fixture
def arena(stream):
    a = Arena(stream)
    yield a
    a.close()


# ---- views -------------------------------------------------------------------------------


class DevView:
    """A device tensor viewing part of a larger storage, with its host mirror. Outputs start
    filled with a sentinel so writes outside the view are caught (``slack``: the storage's
    elements after the view, _views.view_extent)."""

    def __init__(self, arena, values=None, *, shape=None, dtype=None, kind="contig",
                 sentinel=None, acl_dtype=None, slack=3):
        self.arena = arena
        if values is not None:
            values = np.asarray(values)
            shape, dtype = values.shape, values.dtype
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.strides, self.offset, self.n = view_extent(self.shape, kind, slack)
        fill = 0.0 if sentinel is None else sentinel
        self.storage = np.full(self.n, fill, dtype=np.float32).astype(self.dtype)
        if sentinel is None:
            self.storage[:] = np.arange(self.n) % 7 - 3  # junk that must not be read as data
        if values is not None:
            self.host_view(self.storage)[...] = values
        self.initial = self.storage.copy()
        self.ptr = arena.malloc(self.n * self.dtype.itemsize)
        arena.h2d(self.ptr, self.storage)
        self.handle = arena.tensor(self.shape, self.dtype, self.strides, self.offset, self.n,
                                   self.ptr, acl_dtype)

    def host_view(self, storage):
        isz = storage.itemsize
        return np.lib.stride_tricks.as_strided(
            storage[self.offset:], self.shape, [s * isz for s in self.strides], writeable=True)

    def read(self):
        """The view's values after the run; asserts nothing outside it was written."""
        out = np.empty_like(self.storage)
        self.arena.d2h(out, self.ptr)
        inside = np.zeros(self.n, bool)
        self.host_view(inside)[...] = True
        assert np.array_equal(out[~inside].view(np.uint16 if self.dtype.itemsize == 2
                                                else np.uint32),
                              self.initial[~inside].view(np.uint16 if self.dtype.itemsize == 2
                                                         else np.uint32)), \
            "the kernel wrote outside the output view"
        return self.host_view(out).copy()


# ---- the NumPy float64 reference ------------------------------------------------------------

def reference(dy, x, nlen, mean, rstd, w):
    """The operator's formulas in float64 on [M, N]; returns (dx, dw, db) and, for each, the
    same expression on absolute values (the scale its float32 rounding error is bounded by)."""
    shape = x.shape
    N = int(np.prod(shape[len(shape) - nlen:], dtype=np.int64))
    M = int(np.prod(shape[:len(shape) - nlen], dtype=np.int64))
    dy = np.asarray(dy, np.float64).reshape(M, N)
    x = np.asarray(x, np.float64).reshape(M, N)
    mu = np.asarray(mean, np.float64).reshape(M, 1)
    rs = np.asarray(rstd, np.float64).reshape(M, 1)
    wv = np.ones(N) if w is None else np.asarray(w, np.float64).reshape(N)
    xh = (x - mu) * rs
    g = dy * wv
    n = max(N, 1)
    dx = rs * (g - g.sum(1, keepdims=True) / n - xh * (g * xh).sum(1, keepdims=True) / n)
    sdx = np.abs(rs) * (np.abs(g) + np.abs(g).sum(1, keepdims=True) / n
                        + np.abs(xh) * np.abs(g * xh).sum(1, keepdims=True) / n
                        + np.abs(x - mu) * np.abs(rs) + np.abs(mu) * np.abs(rs))
    dw, sdw = (dy * xh).sum(0), (np.abs(dy) * (np.abs(x) + np.abs(mu)) * np.abs(rs)).sum(0)
    db, sdb = dy.sum(0), np.abs(dy).sum(0)
    return (dx.reshape(shape), sdx.reshape(shape)), (dw, sdw), (db, sdb)


def assert_close(out, ref_scale, what, via=None):
    """via: the dtype the result is rounded to before out's (gradInput: input's dtype)."""
    ref, scale = ref_scale
    got = np.asarray(out, np.float64).reshape(ref.shape)
    dt = np.dtype(out.dtype)
    tol = RTOL_COMPUTE * scale + ROUND[dt] * np.abs(ref) + TINY[dt]
    if via is not None:
        tol = tol + ROUND[np.dtype(via)] * np.abs(ref) + TINY[np.dtype(via)]
    err = np.abs(got - ref)
    bad = ~(err <= tol)
    assert not bad.any(), (f"{what} ({dt}): {bad.sum()} of {bad.size} elements off; worst "
                           f"error/tol {np.max(err / tol):.3g} at {np.argmax(err / tol)}")


def rand_inputs(rng, shape, nlen, in_dt=F32, stat_dt=F32, w_dt=F32, stat_shape=None):
    """gradOut, input, mean, rstd (mean/rstd from the input, as a forward pass would give),
    weight (None when w_dt is None), each already quantized to its dtype."""
    x = (rng.standard_normal(shape) * 1.5 + 0.25).astype(in_dt)
    dy = rng.standard_normal(shape).astype(in_dt)
    axes = tuple(range(len(shape) - nlen, len(shape)))
    xf = x.astype(np.float64)
    if all(shape[a] > 0 for a in axes) and xf.size:
        mu = xf.mean(axis=axes, keepdims=True)
        rs = 1.0 / np.sqrt(xf.var(axis=axes, keepdims=True) + 1e-5)
    else:
        kshape = tuple(1 if i in axes else d for i, d in enumerate(shape))
        mu, rs = np.zeros(kshape), np.ones(kshape)
    if stat_shape is not None:
        mu, rs = mu.reshape(stat_shape), rs.reshape(stat_shape)
    w = None if w_dt is None else (rng.standard_normal(shape[len(shape) - nlen:]) + 1).astype(w_dt)
    return dy, x, mu.astype(stat_dt), rs.astype(stat_dt), w


def run_op(arena, dy, x, ns, mean, rstd, w=None, b=None, mask=(True, True, True),
           dx=None, dw=None, db=None, *, repeat=1, expect=OK):
    """Phase one, workspace (only when > 0), phase two(s), synchronize. Arguments are
    DevViews or None. Returns the workspace size."""
    h = lambda v: ffi.NULL if v is None else v.handle  # noqa: E731
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    rc = P1(h(dy), h(x), arena.int_array(ns), h(mean), h(rstd), h(w), h(b),
            arena.bool_array(mask), h(dx), h(dw), h(db), ws, ex)
    assert rc == expect, (rc, last_msg())
    if rc:
        return None
    if repeat > 1:
        assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    wsp = arena.malloc(ws[0]) if ws[0] > 0 else ffi.NULL
    for _ in range(repeat):
        assert P2(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    if repeat > 1:
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
    return ws[0]


def check_call(arena, dy, x, nlen, mean, rstd, w, *, out_dt=(F32, F32, F32),
               kinds=("contig",) * 9, mask=(True, True, True), bias=False):
    """Runs one call on views of the given kinds and checks it against the reference.
    kinds: gradOut, input, mean, rstd, weight, bias, gradInput, gradWeight, gradBias."""
    ns = list(x.shape[x.ndim - nlen:])
    V = lambda v, k: None if v is None else DevView(arena, v, kind=k)  # noqa: E731
    vdy, vx, vm, vr, vw = (V(dy, kinds[0]), V(x, kinds[1]), V(mean, kinds[2]),
                           V(rstd, kinds[3]), V(w, kinds[4]))
    vb = DevView(arena, np.full(ns, np.nan, F32), kind=kinds[5]) if bias else None
    outs = [DevView(arena, shape=shp, dtype=dt, kind=k, sentinel=-77.0) if m else None
            for shp, dt, k, m in zip((x.shape, ns, ns), out_dt, kinds[6:], mask)]
    run_op(arena, vdy, vx, ns, vm, vr, vw, vb, mask, *outs)
    refs = reference(dy, x, nlen, mean, rstd, w)
    got = []
    for o, r, name in zip(outs, refs, ("gradInput", "gradWeight", "gradBias")):
        if o is not None:
            g = o.read()
            assert_close(g, r, name, x.dtype if name == "gradInput" else None)
            got.append(g)
        else:
            got.append(None)
    return got


# ---- results -------------------------------------------------------------------------------

def test_vendor_sample(arena):
    x = np.array([[2, 3], [4, 5]], F32)
    dx, dw, db = check_call(arena, x.copy(), x, 1, np.array([[2], [3]], F32),
                            np.array([[4], [5]], F32), np.ones(2, F32), bias=True)
    assert dx.ravel().tolist() == [-2.0, -94.0, -877.5, -1747.5]
    assert dw.tolist() == [20.0, 62.0]
    assert db.tolist() == [6.0, 8.0]


COMBOS = bf16_where_it_runs([(i, s, w, o) for i in DTYPES for s in DTYPES
                             for w in [None, *DTYPES] for o in DTYPES
                             if s in (i, F32) and (w is None or w in (i, F32))])


@pytest.mark.parametrize("in_dt,stat_dt,w_dt,out_dt", COMBOS,
                         ids=[f"in={i}-stat={s}-w={w}-out={o}" for i, s, w, o in COMBOS])
def test_dtype_combinations(arena, in_dt, stat_dt, w_dt, out_dt):
    rng = np.random.default_rng(zlib.crc32(f"{in_dt}{stat_dt}{w_dt}{out_dt}".encode()))
    dy, x, mu, rs, w = rand_inputs(rng, (5, 3, 37), 1, in_dt, stat_dt, w_dt)
    check_call(arena, dy, x, 1, mu, rs, w, out_dt=(out_dt, out_dt, F32 if out_dt != F32 else F16))


@only_where(supports_bfloat16())   # the input is BF16 (the parts with it run this)
@pytest.mark.parametrize("out_dt", [F16, BF16])
def test_outputs_are_the_float32_result_rounded_once(arena, out_dt):
    """Narrow outputs are the float32 result rounded to nearest even, bit for bit (gradInput's
    float32 result being the device's: already rounded to input's dtype)."""
    rng = np.random.default_rng(7)
    dy, x, mu, rs, w = rand_inputs(rng, (33, 1031), 1, BF16, F32, F32)
    wide = check_call(arena, dy, x, 1, mu, rs, w)
    narrow = check_call(arena, dy, x, 1, mu, rs, w, out_dt=(out_dt,) * 3)
    for a, b in zip(wide, narrow):
        assert np.array_equal(a.astype(out_dt).view(np.uint16), b.view(np.uint16))


MIXED = bf16_where_it_runs([(i, o, k) for i in (F16, BF16) for o in DTYPES if o != i
                            for k in ("contig", "padded")])


@pytest.mark.parametrize("in_dt,out_dt,kind", MIXED,
                         ids=[f"{i}-to-{o}-{k}" for i, o, k in MIXED])
def test_grad_input_is_rounded_to_the_input_dtype_then_cast(arena, in_dt, out_dt, kind):
    """The device computes gradInput in input's dtype and casts it to gradInputOut's
    (hicann/ops-nn aclnn_layer_norm_backward.cpp GenOutWithMask; the L0 LayerNormGradV3
    allocates it in input's dtype): a wider gradInputOut carries input's rounding, a
    different 16-bit one is rounded twice. Bit for bit: the same call with gradInputOut of
    input's dtype, cast to nearest even."""
    rng = np.random.default_rng(11)
    dy, x, mu, rs, w = rand_inputs(rng, (9, 777), 1, in_dt, F32, F32)
    kinds = ("contig",) * 6 + (kind, "contig", "contig")
    same = check_call(arena, dy, x, 1, mu, rs, w, out_dt=(in_dt, F32, F32), kinds=kinds)
    mixed = check_call(arena, dy, x, 1, mu, rs, w, out_dt=(out_dt, F32, F32), kinds=kinds)
    want = same[0].astype(F32).astype(out_dt)
    isz = np.dtype(out_dt).itemsize
    bits = np.uint16 if isz == 2 else np.uint32
    assert np.array_equal(mixed[0].view(bits), want.view(bits))
    if out_dt == F32:  # every value is one of input's dtype
        assert np.array_equal(mixed[0].astype(in_dt).astype(F32), mixed[0])
    assert np.array_equal(mixed[1], same[1]) and np.array_equal(mixed[2], same[2])


def bf16_ties_away():
    """True when the emulated part's kernel rounds BF16 ties away from zero (Atlas A2/A3)."""
    name = ffi.string(lib.aclrtGetSocName()).decode()
    return not name.startswith("Ascend950")


@only_where(supports_bfloat16())   # the parts with BF16 run it
@pytest.mark.parametrize("kind", ["contig", "padded"])
def test_bf16_grad_input_ties_follow_the_part(arena, kind):
    """N = 1, rstd = 1, x - mean = 1: gradInput = -gradOut * weight exactly in float32. With
    weight = 1 + 2^-8 and gradOut a power of two, each product lies exactly halfway between
    two BF16 values: the Atlas A2/A3 kernel's CAST_ROUND takes the one away from zero, a
    nearest-even rounding the even one. The other values are no ties (a check that only the
    ties differ)."""
    dy = np.array([1, -1, 2, -0.5, 4, -8, 1.5, -3], BF16).reshape(8, 1)
    x = np.array([0, 1, -2, 3, 0.5, 6, -7, 8], BF16).reshape(8, 1)
    mean = x.astype(F32) - 1
    rstd = np.ones((8, 1), F32)
    w = np.array([1 + 2.0 ** -8], F32)
    got = check_call(arena, dy, x, 1, mean, rstd, w, out_dt=(BF16, F32, F32),
                     kinds=("contig",) * 6 + (kind, "contig", "contig"))[0]
    exact = -(dy.astype(np.float64) * float(w[0]))
    away = np.sign(exact) * (np.abs(dy.astype(np.float64)) * (1 + 2.0 ** -7))
    ties = np.log2(np.abs(dy.astype(np.float64))) % 1 == 0
    want = np.where(ties, away if bf16_ties_away() else -dy.astype(np.float64),
                    exact.astype(BF16).astype(np.float64))
    assert got.astype(np.float64).tolist() == want.tolist()


@pytest.mark.parametrize("mask", list(itertools.product([False, True], repeat=3)),
                         ids=lambda m: "".join("1" if v else "0" for v in m))
@pytest.mark.parametrize("weight", [True, False], ids=["weight", "noweight"])
def test_masks(arena, mask, weight):
    rng = np.random.default_rng(sum(mask) * 2 + weight)
    dy, x, mu, rs, w = rand_inputs(rng, (40, 70), 1, w_dt=F32 if weight else None)
    # unrequested outputs given too: they must stay untouched (DevView.read checks the
    # sentinel around the view; here the whole view must keep it as well)
    outs = [DevView(arena, shape=s, dtype=F32, sentinel=-77.0) for s in ((40, 70), (70,), (70,))]
    run_op(arena, *(DevView(arena, v) for v in (dy, x)), [70],
           *(DevView(arena, v) for v in (mu, rs)),
           DevView(arena, w) if weight else None, None, mask, *outs)
    refs = reference(dy, x, 1, mu, rs, w)
    for o, r, m, name in zip(outs, refs, mask, ("gradInput", "gradWeight", "gradBias")):
        got = o.read()
        if m:
            assert_close(got, r, name)
        else:
            assert (got == -77.0).all(), f"{name} written although its mask entry is false"


def test_absent_weight_is_ones_and_bias_is_never_read(arena):
    rng = np.random.default_rng(3)
    dy, x, mu, rs, _ = rand_inputs(rng, (17, 300), 1)
    a = check_call(arena, dy, x, 1, mu, rs, None, bias=True)   # bias full of NaN
    b = check_call(arena, dy, x, 1, mu, rs, np.ones(300, F32))
    for u, v in zip(a, b):
        assert np.array_equal(u, v)


SPLITS = [(r, k) for r in range(1, 9) for k in range(1, r + 1)]


@pytest.mark.parametrize("rank,nlen", SPLITS, ids=[f"rank{r}-norm{k}" for r, k in SPLITS])
def test_ranks_and_splits(arena, rank, nlen):
    rng = np.random.default_rng(rank * 10 + nlen)
    shape = tuple(int(d) for d in rng.integers(1, 4, size=rank))
    shape = (3,) * min(rank, 2) + shape[min(rank, 2):]  # keep M and N > 1 in most cases
    # mean/rstd: keepdim shape, flat [M] or the batch dims, in turn
    batch = shape[:rank - nlen]
    stat_shape = [None, (int(np.prod(batch, dtype=np.int64)),), batch][(rank + nlen) % 3]
    dy, x, mu, rs, w = rand_inputs(rng, shape, nlen, stat_shape=stat_shape)
    kinds = [LAYOUTS[(rank + nlen + i) % 4] for i in range(9)]
    check_call(arena, dy, x, nlen, mu, rs, w, kinds=kinds)


@pytest.mark.parametrize("kind", LAYOUTS[1:])
@pytest.mark.parametrize("dt", bf16_where_it_runs(DTYPES))
def test_strided_views_match_contiguous_bit_for_bit(arena, kind, dt):
    rng = np.random.default_rng(11)
    dy, x, mu, rs, w = rand_inputs(rng, (6, 5, 130), 2, dt, F32, dt, stat_shape=(6,))
    base = check_call(arena, dy, x, 2, mu, rs, w, out_dt=(dt,) * 3)
    for i in range(9):  # one tensor at a time in the strided layout, then all of them
        kinds = ["contig"] * 9
        kinds[i] = kind
        got = check_call(arena, dy, x, 2, mu, rs, w, kinds=kinds, out_dt=(dt,) * 3,
                         bias=(i == 5))
        for a, b in zip(base, got):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (kind, i)
    got = check_call(arena, dy, x, 2, mu, rs, w, kinds=[kind] * 9, out_dt=(dt,) * 3, bias=True)
    for a, b in zip(base, got):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("shape,nlen", [((1,), 1), ((1, 1), 1), ((2, 100003), 1),
                                        ((50000, 3), 1), ((1024, 1531), 1), ((3, 4, 2049), 2)])
def test_sizes(arena, shape, nlen):
    rng = np.random.default_rng(len(shape) + shape[-1])
    dy, x, mu, rs, w = rand_inputs(rng, shape, nlen)
    if shape[-1] == 1:  # var 0: pick any finite rstd rather than 1/sqrt(eps)
        rs = np.full_like(rs, 0.75)
    check_call(arena, dy, x, nlen, mu, rs, w)


@only_where(supports_bfloat16())   # a BF16 dw (the parts with BF16 run it)
def test_empty_batch_zero_fills_weight_and_bias_grads(arena):
    rng = np.random.default_rng(5)
    dy, x, mu, rs, w = rand_inputs(rng, (0, 3, 8), 2, stat_shape=(0,))
    dx = DevView(arena, shape=(0, 3, 8), dtype=F32)
    dw = DevView(arena, shape=(3, 8), dtype=BF16, sentinel=5.0, kind="padded")
    db = DevView(arena, shape=(24,), dtype=F16, sentinel=5.0)
    ws = run_op(arena, DevView(arena, dy), DevView(arena, x), [3, 8], DevView(arena, mu),
                DevView(arena, rs), DevView(arena, w), None, (True, True, True), dx, dw, db)
    # each a Fill (its 16 MiB of tiling on Ascend 950); the strided dw's alive until its copy
    assert ws == max_allocator(helper_ws(0) + [(24 * 2, 0, 1)] + helper_ws(2)) > 0
    assert (dw.read() == 0).all() and (db.read() == 0).all()


def test_empty_normalized_dims_and_all_false_mask_do_nothing(arena):
    rng = np.random.default_rng(6)
    dy, x, mu, rs, w = rand_inputs(rng, (4, 0), 1)
    outs = [DevView(arena, shape=s, dtype=F32, sentinel=5.0) for s in ((4, 0), (0,), (0,))]
    assert run_op(arena, DevView(arena, dy), DevView(arena, x), [0], DevView(arena, mu),
                  DevView(arena, rs), None, None, (True, True, True), *outs) == 0
    dy, x, mu, rs, w = rand_inputs(rng, (4, 6), 1)
    outs = [DevView(arena, shape=s, dtype=F32, sentinel=5.0) for s in ((4, 6), (6,), (6,))]
    assert run_op(arena, DevView(arena, dy), DevView(arena, x), [6], DevView(arena, mu),
                  DevView(arena, rs), None, None, (False, False, False), *outs) == 0
    assert all((o.read() == 5.0).all() for o in outs)


@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, BF16]))
def test_deterministic_across_thread_counts(arena, dt):
    rng = np.random.default_rng(9)
    dy, x, mu, rs, w = rand_inputs(rng, (2000, 515), 1, dt, F32, F32)
    results = []
    for n in (1, 2, 4, 3):
        lib.aclemuSetNumThreads(n)
        assert lib.aclemuGetNumThreads() == n
        results.append(check_call(arena, dy, x, 1, mu, rs, w, out_dt=(dt, F32, F32)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_repeatable_executor_runs_many_times(arena):
    rng = np.random.default_rng(12)
    dy, x, mu, rs, w = rand_inputs(rng, (300, 64), 1)
    vs = [DevView(arena, v) for v in (dy, x, mu, rs, w)]
    outs = [DevView(arena, shape=s, dtype=F32, sentinel=0.0) for s in ((300, 64), (64,), (64,))]
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert P1(vs[0].handle, vs[1].handle, arena.int_array([64]), vs[2].handle, vs[3].handle,
              vs[4].handle, ffi.NULL, arena.bool_array([True] * 3), outs[0].handle,
              outs[1].handle, outs[2].handle, ws, ex) == 0
    assert lib.aclSetAclOpExecutorRepeatable(ex[0]) == 0
    wsp = arena.malloc(ws[0])
    first = None
    for _ in range(3):
        assert P2(wsp, ws[0], ex[0], arena.stream) == 0, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        got = [o.read() for o in outs]
        if first is None:
            first = got
            for g, r in zip(got, reference(dy, x, 1, mu, rs, w)):
                assert_close(g, r, "repeat")
        for a, b in zip(first, got):
            assert np.array_equal(a, b)
    assert lib.aclDestroyAclOpExecutor(ex[0]) == 0
    assert lib.aclDestroyAclOpExecutor(ex[0]) == INNER  # CANN: no executor it knows
    for v in vs + outs:  # the executor is gone: nothing reads them any more
        arena.destroy_tensor(v.handle)


# ---- conversions -------------------------------------------------------------------------

def test_float16_to_float32_every_bit_pattern(arena):
    """gradBias of a single row is gradOut itself: every binary16 pattern, widened."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    dy = bits.view(F16).reshape(1, -1)
    x = np.zeros_like(dy)
    db = DevView(arena, shape=(65536,), dtype=F32, sentinel=0.0)
    run_op(arena, DevView(arena, dy), DevView(arena, x), [65536],
           DevView(arena, np.zeros((1, 1), F32)), DevView(arena, np.ones((1, 1), F32)),
           None, None, (False, False, True), None, None, db)
    got, want = db.read(), dy.ravel().astype(F32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], want[~nan])  # -0 sums to +0: compared by value
    assert np.array_equal(np.signbit(got[~nan & (want != 0)]), np.signbit(want[~nan & (want != 0)]))


def special_float32():
    """Float32 values around every rounding boundary of binary16 and bfloat16."""
    rng = np.random.default_rng(1)
    v = [rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(F32)]
    f16 = np.arange(0, 0x7c01, dtype=np.uint32).astype(np.uint16).view(F16).astype(np.float64)
    mids = (f16[:-1] + f16[1:]) / 2  # exact ties, and their float32 neighbours
    for m in (mids, f16):
        m32 = m.astype(F32)
        v += [m32, np.nextafter(m32, np.inf, dtype=F32), np.nextafter(m32, -np.inf, dtype=F32)]
    bf = (np.arange(0, 0x7f81, 7, dtype=np.uint32) << 16).view(F32)
    v += [bf + 0, (bf.view(np.uint32) | 0x8000).view(F32),
          (bf.view(np.uint32) | 0x8001).view(F32), (bf.view(np.uint32) | 0x7fff).view(F32)]
    v += [np.array([np.inf, np.nan, 65504, 65519.996, 65520, 2.0**-24, 2.0**-25,
                    2.0**-25 * 1.0000001, 1.5 * 2.0**-24, 3.4e38], F32)]
    allv = np.concatenate(v)
    allv = allv[~np.isnan(allv) | (np.arange(allv.size) % 97 == 0)]
    return np.concatenate([allv, -allv])


@pytest.mark.parametrize("out_dt", bf16_where_it_runs([F16, BF16]))
def test_float32_narrowing_rounds_to_nearest_even(arena, out_dt):
    vals = special_float32()
    n = vals.size
    db = DevView(arena, shape=(n,), dtype=out_dt, sentinel=0.0)
    run_op(arena, DevView(arena, vals.reshape(1, n)), DevView(arena, np.zeros((1, n), F32)),
           [n], DevView(arena, np.zeros((1,), F32)), DevView(arena, np.ones((1,), F32)),
           None, None, (False, False, True), None, None, db)
    got = db.read()
    # The single row's sum: on the Atlas parts added to +0 (so -0 + 0 gives +0); on Ascend 950
    # the arch35 kernel's RA ReduceSum copies a one-row block as it is (asc-devkit
    # impl/adv_api/detail/reduce/reduce_common_ra_reuse_align_3510_impl.h: mainR == 1,
    # ReduceCopyOutImpl), so -0 stays -0
    summed = vals if ARCH == 3510 else np.where(vals == 0, np.float32(0), vals)
    with np.errstate(over="ignore"):  # overflow to Inf is the expected rounding
        want = summed.astype(out_dt)
    nan = np.isnan(vals)
    assert np.isnan(got[nan].astype(F32)).all()
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


# ---- phase one: the check list, in order, with codes and messages ----------------------------

class Args:
    """A valid argument set for phase one; tests break one thing at a time."""

    def __init__(self, arena, shape=(4, 3, 5), nlen=2):
        self.arena = arena
        ns = list(shape[len(shape) - nlen:])
        M = int(np.prod(shape[:len(shape) - nlen]))
        self.ptr = arena.malloc(4096)
        self.T = lambda shp, dt=lib.ACL_FLOAT: self.tensor(shp, dt)  # noqa: E731
        self.a = dict(gradOut=self.T(shape), input=self.T(shape),
                      normalizedShape=arena.int_array(ns), mean=self.T((M, 1)),
                      rstd=self.T((M, 1)), weightOptional=self.T(ns),
                      biasOptional=self.T(ns), outputMask=arena.bool_array([True] * 3),
                      gradInputOut=self.T(shape), gradWeightOut=self.T(ns),
                      gradBiasOut=self.T(ns))
        self.ws = ffi.new("uint64_t *")
        self.ex = ffi.new("aclOpExecutor **")

    def tensor(self, shape, dt):
        # phase one never touches memory: one small buffer backs every (large) view
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        n = max(int(np.prod(shape)), 1)
        return self.arena.tensor(shape, F32, strides, 0, n, self.ptr, acl_dtype=dt)

    def call(self, ws=True, ex=True):
        before = live()["executors"]
        self.ex[0] = ffi.NULL
        rc = P1(*self.a.values(), self.ws if ws else ffi.NULL, self.ex if ex else ffi.NULL)
        msg = last_msg()
        if rc == OK:
            assert lib.aclDestroyAclOpExecutor(self.ex[0]) == 0
        else:
            assert self.ex[0] == ffi.NULL and live()["executors"] == before, \
                "a failed phase one must create no executor"
        return rc, msg


def refused_without_bf16(args, *dtypes):
    """On a part without BFLOAT16 (the Atlas training and inference series), a call with a
    BF16 tensor among ``dtypes`` (aclDataType codes) is refused naming the part (161002):
    checks that and returns True; False where the part has BF16 or none is BF16."""
    if lib.ACL_BF16 not in dtypes or supports_bfloat16():
        return False
    expect(args, INVALID, "BF16", "is not supported on " +
           ffi.string(lib.aclrtGetSocName()).decode())
    return True


def expect(args, code, *words, **kw):
    rc, msg = args.call(**kw)
    assert rc == code, (rc, msg)
    assert "aclnnLayerNormBackwardGetWorkspaceSize" in msg
    for w in words:
        assert w in msg, (w, msg)


def test_valid_arguments_pass(arena):
    args = Args(arena)
    rc, _ = args.call()
    assert rc == OK and args.ws[0] > 0


@pytest.mark.parametrize("name", ["gradOut", "input", "normalizedShape", "mean", "rstd",
                                  "outputMask"])
def test_rule1_required_argument_null(arena, name):
    args = Args(arena)
    if name != "outputMask":
        args.a["outputMask"] = arena.bool_array([True, True])  # rule 2 comes after
    args.a[name] = ffi.NULL
    expect(args, NULLPTR, name, "NULL")


def test_null_out_pointers(arena):
    expect(Args(arena), NULLPTR, "workspaceSize", ws=False)
    expect(Args(arena), NULLPTR, "executor", ex=False)


def test_null_out_pointers_come_before_everything(arena):
    """The vendor's L2_DFX_PHASE_1 checks them first (hicann/opbase src/nnopbase/composite_op/
    aclnn_engine/op_dfx.cpp CheckPhase1Params), before the NULL arguments and the rest."""
    args = Args(arena)
    args.a["gradOut"] = ffi.NULL
    args.a["outputMask"] = arena.bool_array([True])
    expect(args, NULLPTR, "workspaceSize", ws=False)
    expect(args, NULLPTR, "executor", ex=False)


@pytest.mark.parametrize("name", ["gradOut", "mean", "weightOptional", "gradBiasOut",
                                  "normalizedShape", "outputMask"])
def test_dead_or_garbage_handles_are_never_dereferenced(arena, name):
    args = Args(arena)
    t = args.a[name]
    if name in ("normalizedShape", "outputMask"):
        destroy = lib.aclDestroyIntArray if name == "normalizedShape" else lib.aclDestroyBoolArray
        arena.arrays.remove(next(e for e in arena.arrays if e[1] == t))
        assert destroy(t) == 0
    else:
        arena.destroy_tensor(t)
    expect(args, INVALID, name, "not a live")
    args.a[name] = ffi.cast(ffi.typeof(t), 0x10)  # unmapped: a dereference would crash
    expect(args, INVALID, name, "not a live")


@pytest.mark.parametrize("length", [0, 2, 4])
def test_rule2_mask_length(arena, length):
    args = Args(arena)
    args.a["outputMask"] = arena.bool_array([True] * length)
    args.a["gradInputOut"] = ffi.NULL  # rule 3 would fire for a valid mask: 2 comes first
    args.a["input"] = args.T((4, 3, 5), lib.ACL_INT32)  # and rule 4 after that
    expect(args, INVALID, "outputMask", str(length))


@pytest.mark.parametrize("k,name", list(enumerate(["gradInputOut", "gradWeightOut",
                                                        "gradBiasOut"])))
def test_rule3_requested_output_null(arena, k, name):
    args = Args(arena)
    args.a[name] = ffi.NULL
    args.a["input"] = args.T((4, 3, 5), lib.ACL_INT32)  # rule 4 comes after
    expect(args, NULLPTR, name, f"outputMask[{k}]")
    args = Args(arena)  # not requested: NULL is fine
    args.a[name] = ffi.NULL
    args.a["outputMask"] = arena.bool_array([i != k for i in range(3)])
    assert args.call()[0] == OK


RULE4 = [
    ("gradOut", lib.ACL_INT32, "gradOut"), ("input", lib.ACL_DOUBLE, "input"),
    ("mean", lib.ACL_INT8, "mean"), ("rstd", lib.ACL_BOOL, "rstd"),
    ("weightOptional", lib.ACL_INT64, "weightOptional"),
    ("biasOptional", lib.ACL_UINT8, "biasOptional"),
    ("gradInputOut", lib.ACL_INT32, "gradInputOut"),
    ("gradWeightOut", lib.ACL_DOUBLE, "gradWeightOut"),
    ("gradBiasOut", lib.ACL_INT16, "gradBiasOut"),
    ("gradOut", lib.ACL_FLOAT16, "gradOut dtype FLOAT16 != input dtype FLOAT"),
    ("weightOptional", lib.ACL_BF16, "weightOptional dtype BF16 must be FLOAT or input"),
    ("biasOptional", lib.ACL_FLOAT16, "biasOptional dtype FLOAT16 must be FLOAT or input"),
    ("mean", lib.ACL_FLOAT16, "mean dtype FLOAT16 is narrower than input dtype FLOAT"),
    ("rstd", lib.ACL_BF16, "rstd dtype BF16 is narrower than input dtype FLOAT"),
]


@pytest.mark.parametrize("name,dt,words", RULE4, ids=[f"{n}-{w}" for n, _, w in RULE4])
def test_rule4_dtypes(arena, name, dt, words):
    args = Args(arena)
    shape = {"gradOut": (4, 3, 5), "input": (4, 3, 5), "gradInputOut": (4, 3, 5),
             "mean": (4, 1), "rstd": (4, 1)}.get(name, (3, 5))
    args.a[name] = args.T(shape, dt)
    other = "gradWeightOut" if name == "gradBiasOut" else "gradBiasOut"
    args.a[other] = args.T((7,))  # a rule 5 failure, which must come after
    if not refused_without_bf16(args, dt):
        expect(args, INVALID, words)


def test_rule4_narrow_input_with_float_statistics_and_weight_passes(arena):
    args = Args(arena)
    for n in ("gradOut", "input"):
        args.a[n] = args.T((4, 3, 5), lib.ACL_BF16)
    args.a["gradInputOut"] = args.T((4, 3, 5), lib.ACL_FLOAT16)
    if not refused_without_bf16(args, lib.ACL_BF16):
        assert args.call()[0] == OK


def test_rank_0_statistics_and_weight_bias_of_different_dtypes_pass(arena):
    """Two things the docs forbid and the op_api source (aclnn_layer_norm_backward.cpp)
    accepts, so a device runs them: mean/rstd of rank 0 when M is 1 (CheckShape counts their
    elements only; the docs ask for rank 1-8), and weight and bias of different dtypes
    (CheckDtype checks each against input, not against each other; bias is never read)."""
    rng = np.random.default_rng(5)
    dy, x, mu, rs, w = rand_inputs(rng, (9,), 1, stat_shape=())
    check_call(arena, dy, x, 1, mu, rs, w)
    args = Args(arena)
    for n in ("gradOut", "input", "gradInputOut"):
        args.a[n] = args.T((4, 3, 5), lib.ACL_FLOAT16)
    args.a["weightOptional"] = args.T((3, 5), lib.ACL_FLOAT)
    args.a["biasOptional"] = args.T((3, 5), lib.ACL_FLOAT16)
    assert args.call()[0] == OK


@pytest.mark.parametrize("in_dt,stat_dts", [
    (lib.ACL_FLOAT16, (lib.ACL_BF16, lib.ACL_BF16)), (lib.ACL_BF16, (lib.ACL_FLOAT16,) * 2),
    (lib.ACL_FLOAT16, (lib.ACL_FLOAT16, lib.ACL_FLOAT)), (lib.ACL_BF16, (lib.ACL_FLOAT,) * 2)])
def test_rule4_statistics_as_wide_as_input_pass(arena, in_dt, stat_dts):
    """The docs ask mean/rstd to be "not narrower than input": for 16-bit input the other
    16-bit type is as wide (the device casts them to FLOAT before use)."""
    args = Args(arena)
    for n in ("gradOut", "input", "gradInputOut"):
        args.a[n] = args.T((4, 3, 5), in_dt)
    args.a["mean"], args.a["rstd"] = (args.T((4, 1), d) for d in stat_dts)
    if not refused_without_bf16(args, in_dt, *stat_dts):
        assert args.call() == (OK, "")


@pytest.mark.parametrize("k,name", list(enumerate(["gradInputOut", "gradWeightOut",
                                                        "gradBiasOut"])))
def test_unrequested_output_shape_is_not_checked_but_its_dtype_is(arena, k, name):
    """The vendor checks an output's rank and shape only where its mask entry is true, and
    the dtype of every output given."""
    for shape in [(1,) * 9, (2, 7), ()]:
        args = Args(arena)
        args.a["outputMask"] = arena.bool_array([i != k for i in range(3)])
        args.a[name] = args.T(shape)
        assert args.call() == (OK, ""), shape
    args.a[name] = args.T((1,) * 9, lib.ACL_INT32)
    other = "gradWeightOut" if name != "gradWeightOut" else "gradBiasOut"
    args.a[other] = args.T((7,))  # a shape failure of a requested output comes after dtypes
    expect(args, INVALID, f"{name} dtype ACL_INT32")


def test_unrequested_output_of_rank_9_runs_and_is_never_written(arena):
    rng = np.random.default_rng(3)
    dy, x, mu, rs, w = rand_inputs(rng, (6, 10), 1)
    junk = DevView(arena, shape=(1,) * 9, dtype=F32, sentinel=-5.0)
    dx = DevView(arena, shape=x.shape, dtype=F32, sentinel=-77.0)
    run_op(arena, DevView(arena, dy), DevView(arena, x), [10], DevView(arena, mu),
           DevView(arena, rs), DevView(arena, w), None, (True, False, False), dx, junk, junk)
    assert_close(dx.read(), reference(dy, x, 1, mu, rs, w)[0], "gradInput")
    assert junk.read().tolist() == np.full((1,) * 9, -5.0, F32).tolist()


def test_checks_follow_the_vendor_order(arena):
    """CheckDtype (all tensors) before CheckShape; within CheckShape the ranks of gradOut,
    input, mean, rstd and normalizedShape's length before the requested outputs' ranks."""
    args = Args(arena)
    args.a["gradBiasOut"] = args.T((3, 5), lib.ACL_DOUBLE)
    args.a["gradOut"] = args.T((4, 3, 6))
    expect(args, INVALID, "gradBiasOut dtype ACL_DOUBLE")
    args = Args(arena)
    args.a["gradWeightOut"] = args.T((1,) * 9)
    args.a["normalizedShape"] = arena.int_array([1] * 9)
    expect(args, INVALID, "normalizedShape length 9")
    args = Args(arena)
    args.a["gradInputOut"] = args.T((1,) * 9)
    args.a["weightOptional"] = args.T((16,))
    expect(args, INVALID, "gradInputOut rank 9")



def test_dtype_checks_follow_the_vendor_order(arena):
    """CheckDtype (op_api source lines 78-106): the lists of gradOut, input, mean and rstd
    before gradOut = input; weightOptional's list and its relation to input before
    biasOptional's list and the outputs'."""
    args = Args(arena)
    args.a["gradOut"] = args.T((4, 3, 5), lib.ACL_FLOAT16)
    args.a["mean"] = args.T((4, 1), lib.ACL_INT32)
    expect(args, INVALID, "mean dtype ACL_INT32")
    args = Args(arena)
    args.a["weightOptional"] = args.T((3, 5), lib.ACL_FLOAT16)
    args.a["biasOptional"] = args.T((3, 5), lib.ACL_INT32)
    expect(args, INVALID, "weightOptional dtype FLOAT16 must be FLOAT or input's dtype FLOAT")
    args = Args(arena)
    args.a["weightOptional"] = args.T((3, 5), lib.ACL_FLOAT16)
    args.a["gradInputOut"] = args.T((4, 3, 5), lib.ACL_INT8)
    expect(args, INVALID, "weightOptional dtype FLOAT16")



# ---- the vendor's unit tests (hicann/ops-nn norm/layer_norm_grad_v3/tests/ut/op_host/op_api/
# test_aclnn_layer_norm_backward.cpp), phase one as they call it: the same shapes, dtypes,
# formats, masks, NULLs and expected status. (id, gradOut = input, ns, mean, rstd, weight,
# bias, mask, gradInputOut, gradWeightOut, gradBiasOut, expected); a tensor is (shape, dtype
# [, format]), None is NULL.
_F, _H, _B = lib.ACL_FLOAT, lib.ACL_FLOAT16, lib.ACL_BF16
_D, _U64 = lib.ACL_DOUBLE, lib.ACL_UINT64


def _ut(shape, norm, stat, dt=_F, w_dt=None, stat_dt=None, out_dts=None,
        fmt=lib.ACL_FORMAT_ND, mask=(True, True, True), **over):
    """A UT case's arguments: input-shaped tensors in fmt, the others ND (as the UT has them);
    `over` replaces any of them by name."""
    w_dt = dt if w_dt is None else w_dt
    stat_dt = dt if stat_dt is None else stat_dt
    dx_dt, dw_dt, db_dt = (dt, w_dt, w_dt) if out_dts is None else out_dts
    a = dict(x=(shape, dt, fmt), ns=norm, mean=(stat, stat_dt), rstd=(stat, stat_dt),
             w=(tuple(norm), w_dt), b=(tuple(norm), w_dt), mask=mask, dx=(shape, dx_dt, fmt),
             dw=(tuple(norm), dw_dt), db=(tuple(norm), db_dt))
    a.update(over)
    return a


VENDOR_UT = [
    ("float32_nd", _ut((9, 2, 2, 2), [2, 2], (9, 2, 1, 1)), OK),
    ("double_nd", _ut((2, 6, 5, 6), [6, 5, 6], (2, 1, 1, 1), _D, fmt=lib.ACL_FORMAT_NHWC),
     INVALID),
    ("error_input_dtype", _ut((2, 6, 5, 6), [6, 5, 6], (2, 1, 1, 1), fmt=lib.ACL_FORMAT_NHWC,
                              x=((2, 6, 5, 6), _U64, lib.ACL_FORMAT_NHWC)), INVALID),
    ("error_out_dtype", _ut((2, 6, 5, 6), [6, 5, 6], (2, 1, 1, 1), fmt=lib.ACL_FORMAT_NHWC,
                            dx=((2, 6, 5, 6), _U64)), INVALID),
    ("float32_ndhwc", _ut((2, 3, 4, 5, 6), [3, 4, 5, 6], (2, 1, 1, 1, 1),
                          fmt=lib.ACL_FORMAT_NDHWC), OK),
    ("float32_ncdhw", _ut((2, 2, 2, 2, 2), [2, 2], (2, 2, 2, 1, 1), fmt=lib.ACL_FORMAT_NCDHW),
     OK),
    ("m_zero_dw_true", _ut((0, 2, 7, 18), [7, 18], (0, 2, 1, 1)), OK),
    ("m_zero_dw_false", _ut((0, 2, 7, 18), [7, 18], (0, 2, 1, 1), mask=(True, False, True),
                            dw=None), OK),
    ("5_0_3", _ut((5, 0, 3), [0, 3], (5, 1, 1)), OK),
    ("error_input_len", _ut((1, 2, 1, 2, 1, 2, 1, 2, 2, 2, 2), [2, 1, 2, 1, 2, 1, 2, 2, 2, 2],
                            (1,) * 11), INVALID),
    ("error_normalizedShape_len", _ut((2, 6, 5, 6), [], (2, 6, 5, 6)), INVALID),
    ("error_weight_len", _ut((2, 3, 4), [3, 4], (2, 1, 1), w=((1, 2) * 4 + (1,), _F)),
     INVALID),
    ("error_bias_len", _ut((2, 3, 4), [3, 4], (2, 1, 1), b=((1, 2) * 4 + (1,), _F)), INVALID),
    ("error_grad_input_out_len", _ut((2, 3, 4), [3, 4], (2, 1, 1),
                                     dx=((1, 2) * 4 + (1,), _F)), INVALID),
    ("diff_weight_and_normalizedShape",
     _ut((2, 6, 5, 6), [5, 6], (2, 1, 1, 1), w=((6, 5, 6), _F), b=((6, 5, 6), _F),
         dw=((6, 5, 6), _F), db=((6, 5, 6), _F)), INVALID),
    ("diff_input_and_normalizedShape", _ut((2, 6, 5, 6), [7, 8], (2, 6, 1, 1)), INVALID),
] + [
    (f"nullptr_{name}", _ut((7, 8, 9), [8, 9], (7, 1, 1), **{name: None}), NULLPTR)
    for name in ("x", "ns", "mean", "rstd", "mask", "dx", "dw", "db")
] + [
    ("output_mask_first_false", _ut((2, 6, 5, 6), [5, 6], (2, 6, 1, 1),
                                    mask=(False, True, True), dx=None), OK),
    ("output_mask_second_false", _ut((2, 6, 5, 6), [5, 6], (2, 6, 1, 1),
                                     mask=(True, False, True), dw=None), OK),
    ("output_mask_third_false", _ut((2, 6, 5, 6), [5, 6], (2, 6, 1, 1),
                                    mask=(True, True, False), db=None), OK),
    ("output_mask_all_false", _ut((2, 6, 5, 6), [5, 6], (2, 6, 1, 1),
                                  mask=(False, False, False), dx=None, dw=None, db=None), OK),
    ("error_outputmask_len", _ut((2, 6, 5, 6), [5, 6], (2, 6, 1, 1), mask=(True, False),
                                 dw=None), INVALID),
    ("x_backprop_v3_float16_mix_dtype",
     _ut((2, 3, 4), [3, 4], (2, 1, 1), _H, w_dt=_F, stat_dt=_F, out_dts=(_F, _F, _F)), OK),
    ("x_backprop_v3_bfloat16_mix_dtype",
     _ut((2, 3, 4), [3, 4], (2, 1, 1), _B, w_dt=_F, stat_dt=_F, out_dts=(_B, _F, _F)), OK),
    ("310P_half_float_mix_dtype",
     _ut((2, 3, 4), [3, 4], (2, 1, 1), _H, w_dt=_F, out_dts=(_H, _F, _F)), OK),
    ("310P_half_float_mix_dtype2",
     _ut((2, 3, 4), [3, 4], (2, 1, 1), _H, rstd=((2, 1, 1), _F), out_dts=(_F, _H, _H)), OK),
    ("950_float32_nd_float16_nd", _ut((9, 2, 2, 2), [2, 2], (9, 2, 1, 1),
                                      out_dts=(_F, _H, _H)), OK),
    ("950_float32_nd_float32_nd_mask", _ut((9, 2, 2, 2), [2, 2], (9, 2, 1, 1),
                                           mask=(True, False, False)), OK),
    ("950_float16_nd_all_mask", _ut((9, 2, 2, 2), [2, 2], (9, 2, 1, 1), _H, stat_dt=_F,
                                    mask=(True, True, False), out_dts=(_F, _H, _H)), OK),
]


@pytest.mark.parametrize("case", VENDOR_UT, ids=[c[0] for c in VENDOR_UT])
def test_vendor_unit_test_cases(arena, case):
    name, a, want = case
    buf = arena.malloc(4096)

    def tensor(desc):
        if desc is None:
            return ffi.NULL
        shape, dt, fmt = desc if len(desc) == 3 else (*desc, lib.ACL_FORMAT_ND)
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        t = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), len(shape), dt,
                                ffi.new("int64_t[]", strides or [0]), 0, fmt,
                                ffi.new("int64_t[]", [max(int(np.prod(shape)), 1)]), 1, buf)
        assert t != ffi.NULL, last_msg()
        arena.tensors.append(t)
        return t
    x = tensor(a["x"])
    if "bfloat16" in name and not supports_bfloat16(ffi.string(lib.aclrtGetSocName()).decode()):
        want = INVALID  # BF16 only where the part has it (docs/emulator.md)
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    rc = P1(x, x, ffi.NULL if a["ns"] is None else arena.int_array(a["ns"]),
            tensor(a["mean"]), tensor(a["rstd"]), tensor(a["w"]), tensor(a["b"]),
            ffi.NULL if a["mask"] is None else arena.bool_array(a["mask"]),
            tensor(a["dx"]), tensor(a["dw"]), tensor(a["db"]), ws, ex)
    msg = last_msg()
    assert rc == want, (rc, msg)
    if rc == OK:
        assert lib.aclDestroyAclOpExecutor(ex[0]) == 0


RULE5 = [
    ("gradWeightOut", (1,) * 9, "gradWeightOut rank 9 > 8"),
    ("normalizedShape", [], "normalizedShape length 0"),
    ("normalizedShape", [1] * 9, "normalizedShape length 9"),
    ("normalizedShape", [1, 4, 3, 5], "input rank 3 < normalizedShape length 4"),
    ("normalizedShape", [3, 6], "input shape [4,3,5] does not end with normalizedShape [3,6]"),
    ("weightOptional", (15,), "weightOptional shape [15] != normalizedShape [3,5]"),
    ("biasOptional", (3, 5, 1), "biasOptional shape [3,5,1] != normalizedShape [3,5]"),
    ("gradOut", (4, 5, 3), "gradOut shape [4,5,3] != input shape [4,3,5]"),
    ("rstd", (4,), "mean shape [4,1] != rstd shape [4]"),
    ("mean", (2, 3), "mean shape [2,3] != rstd shape [4,1]"),
    ("gradInputOut", (4, 15), "gradInputOut shape [4,15] != input shape [4,3,5]"),
    ("gradWeightOut", (16,), "gradWeightOut shape [16] has 16 elements != N = 15"),
    ("gradBiasOut", (5, 4), "gradBiasOut shape [5,4] has 20 elements != N = 15"),
]


@pytest.mark.parametrize("name,value,words", RULE5, ids=[w for _, _, w in RULE5])
def test_rule5_shapes(arena, name, value, words):
    args = Args(arena)
    if name == "normalizedShape":
        args.a[name] = arena.int_array(value)
    else:
        args.a[name] = args.T(value)
    expect(args, INVALID, words)


def test_rule5_mean_element_count(arena):
    args = Args(arena)
    args.a["mean"], args.a["rstd"] = args.T((2, 3)), args.T((2, 3))
    expect(args, INVALID, "mean shape [2,3] has 6 elements != M = 4")
    args = Args(arena)  # any shape with M elements is fine
    args.a["mean"], args.a["rstd"] = args.T((2, 1, 2)), args.T((2, 1, 2))
    assert args.call()[0] == OK


def test_gradients_of_another_shape_are_refused_as_their_copy_refuses_them(arena):
    """Stricter (docs/emulator.md, rule 8): gradWeightOut/gradBiasOut of N elements but not
    normalizedShape's shape, which the op_api's CheckShape passes and its ViewCopy of the
    result refuses (a status the op_api drops, leaving the output unwritten): 561103, after
    every op_api check (a dtype fault beside it is named first)."""
    VIEW_COPY = 561103
    for name, shape, words in (("gradWeightOut", (15,), "gradWeightOut shape [15] must be "
                                "normalizedShape [3,5]"),
                               ("gradBiasOut", (1, 3, 5), "gradBiasOut shape [1,3,5] must be "
                                "normalizedShape [3,5]")):
        args = Args(arena)
        args.a[name] = args.T(shape)
        expect(args, VIEW_COPY, words)
        args.a["gradOut"] = args.T((4, 3, 5), lib.ACL_INT32)   # the op_api's rule comes first
        expect(args, INVALID, "gradOut")
    # masked out, an empty call (no copy of a result), one element each: accepted
    args = Args(arena)
    args.a["gradWeightOut"] = args.T((15,))
    args.a["outputMask"] = arena.bool_array([True, False, True])
    assert args.call()[0] == OK
    args = Args(arena, shape=(0, 3, 5))
    args.a["gradWeightOut"] = args.T((15,))
    assert args.call()[0] == OK
    args = Args(arena, shape=(4, 1, 1))
    args.a["gradWeightOut"] = args.T((1,))
    assert args.call()[0] == OK


def test_workspace_size_independent_of_threads(arena):
    """Phase one's size (the device's: tests/test_emulator_workspace_size.py) depends on the
    call and the part only, never on the emulator's thread count."""
    sizes = {}
    for threads in (1, 4):
        lib.aclemuSetNumThreads(threads)
        for shape in ((4, 3, 5), (1000, 3, 5), (100000, 3, 5)):
            args = Args(arena, shape)
            assert args.call()[0] == OK
            sizes.setdefault(shape, set()).add(args.ws[0])
    assert all(len(s) == 1 and min(s) > 0 for s in sizes.values())


def test_injected_phase_one_fault(arena):
    args = Args(arena)
    assert lib.aclemuSetFaults(b"aclnnLayerNormBackwardGetWorkspaceSize:2") == 0
    assert args.call()[0] == OK
    rc, msg = args.call()
    assert rc == INNER and "injected" in msg
    assert args.call()[0] == OK


# ---- phase two misuse ---------------------------------------------------------------------

def prepared(arena, mask=(True, True, True), host_input=None):
    ex, ws, _, outs, refs = prepared_views(arena, mask, host_input)
    return ex, ws, outs, refs


def prepared_views(arena, mask=(True, True, True), host_input=None):
    """A single-use executor on fresh views: (executor, workspace size, {parameter name:
    view} of everything phase one was given, the three output views, their references)."""
    rng = np.random.default_rng(2)
    dy, x, mu, rs, w = rand_inputs(rng, (64, 33), 1)
    vs = [DevView(arena, v) for v in (dy, x, mu, rs, w)]
    if host_input is not None:
        vs[1].handle = arena.tensor(x.shape, F32, [33, 1], 0, x.size,
                                    ffi.cast("void *", host_input.ctypes.data))
    outs = [DevView(arena, shape=s, dtype=F32, sentinel=0.0) for s in ((64, 33), (33,), (33,))]
    ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    assert P1(vs[0].handle, vs[1].handle, arena.int_array([33]), vs[2].handle, vs[3].handle,
              vs[4].handle, ffi.NULL, arena.bool_array(mask), *(o.handle for o in outs),
              ws, ex) == 0, last_msg()
    names = ("gradOut", "input", "mean", "rstd", "weightOptional", "gradInputOut",
             "gradWeightOut", "gradBiasOut")
    return ex[0], ws[0], dict(zip(names, vs + outs)), outs, reference(dy, x, 1, mu, rs, w)


def test_single_use_executor_runs_once(arena):
    ex, ws, outs, refs = prepared(arena)
    wsp = arena.malloc(ws)
    assert P2(wsp, ws, ex, arena.stream) == 0
    assert P2(wsp, ws, ex, arena.stream) == INVALID  # released by the library after its run
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    for o, r in zip(outs, refs):
        assert_close(o.read(), r, "single use")


# CANN's executor keeps pointers to the caller's aclTensors, every one phase one was given
# (hicann/opbase src/nnopbase/common/utils/op_cache.cpp: AddParamToBuf of each DFX_IN/DFX_OUT
# tensor keeps its aclStorage) and reads them when it runs (composite_op/aclnn_engine/
# op_executor.cpp RepeatRunWithCache): a run after one was destroyed reads freed memory on a
# device. Refused, naming the tensor; an output the mask does not request is kept too.

@pytest.mark.parametrize("name, mask", [
    ("gradOut", (True, True, True)), ("input", (True, True, True)),
    ("gradInputOut", (True, True, True)), ("gradBiasOut", (True, True, False))])
def test_repeatable_executor_refuses_to_run_after_a_tensor_is_destroyed(arena, name, mask):
    ex, ws, views, outs, refs = prepared_views(arena, mask)
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    wsp = arena.malloc(ws)
    assert P2(wsp, ws, ex, arena.stream) == 0, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    arena.destroy_tensor(views[name].handle)
    for _ in range(2):  # kept after a refused run, as after any failed run
        assert P2(wsp, ws, ex, arena.stream) == INVALID
        msg = last_msg()
        assert msg.startswith(f"aclnnLayerNormBackward: {name} (aclTensor"), msg
        assert "destroyed after this executor's phase one" in msg, msg
    assert lib.aclDestroyAclOpExecutor(ex) == 0


def test_single_use_executor_refuses_a_tensor_destroyed_before_its_run(arena):
    ex, ws, views, _, _ = prepared_views(arena)
    arena.destroy_tensor(views["mean"].handle)
    assert P2(arena.malloc(ws), ws, ex, arena.stream) == INVALID
    assert last_msg().startswith("aclnnLayerNormBackward: mean (aclTensor"), last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == INNER  # released, as after any failed run


def test_single_use_executor_tensors_may_be_destroyed_as_soon_as_phase_two_returns(arena):
    """The run is queued, not done; what it computes is unchanged (a device's task holds
    device addresses, not the descriptors)."""
    ex, ws, views, outs, refs = prepared_views(arena)
    assert P2(arena.malloc(ws), ws, ex, arena.stream) == 0, last_msg()
    for v in views.values():
        arena.destroy_tensor(v.handle)
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    for o, r in zip(outs, refs):
        assert_close(o.read(), r, "tensors destroyed after phase two")


@pytest.mark.parametrize("repeatable", [False, True])
@pytest.mark.parametrize("case", ["small", "null", "host"])
def test_bad_workspace_is_refused_and_ownership_follows_cann(arena, case, repeatable):
    """CANN's CommonOpExecutorRun (hicann/opbase op_executor.cpp): a refused run releases a
    single-use executor; a repeatable one survives, except a NULL workspace with a size,
    which releases any executor."""
    ex, ws, outs, refs = prepared(arena)
    if repeatable:
        assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    host = np.zeros(ws // 4 + 16, F32)
    bad = {"small": (arena.malloc(ws - 4), ws - 4), "null": (ffi.NULL, ws),
           "host": (ffi.cast("void *", host.ctypes.data), ws)}[case]
    rc = P2(bad[0], bad[1], ex, arena.stream)
    assert rc == {"small": INVALID, "null": NULLPTR, "host": INVALID}[case], last_msg()
    assert "workspace" in last_msg()
    assert (host == 0).all()
    wsp = arena.malloc(ws)
    if repeatable and case != "null":
        assert P2(wsp, ws, ex, arena.stream) == 0, last_msg()  # still runs
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
        assert_close(outs[1].read(), refs[1], "after a refused run")
        assert lib.aclDestroyAclOpExecutor(ex) == 0
    else:  # released by the library: a run or a destroy is refused, never a double free
        assert P2(wsp, ws, ex, arena.stream) == INVALID and "not a live executor" in last_msg()
        assert lib.aclDestroyAclOpExecutor(ex) == INNER
        assert "released by the library" in last_msg()


def aligned(a, align=32):
    """A copy of `a` whose data is `align`-byte aligned (aclCreateTensor's rule)."""
    raw = np.zeros(a.nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def test_tensor_in_host_memory_is_refused(arena):
    host = aligned(np.ones((64, 33), F32))
    ex, ws, _, _ = prepared(arena, host_input=host)
    wsp = arena.malloc(ws)
    rc, msg = P2(wsp, ws, ex, arena.stream), last_msg()
    assert rc == INVALID
    assert "input" in msg and "device allocation" in msg, msg
    # the refused run released the single-use executor
    assert lib.aclDestroyAclOpExecutor(ex) == INNER


def test_destroyed_repeatable_executor_and_bad_stream(arena):
    ex, ws, _, _ = prepared(arena)
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    wsp = arena.malloc(ws)
    assert P2(wsp, ws, ex, ffi.cast("aclrtStream", 0x10)) == RUNTIME  # garbage stream
    assert P2(wsp, ws, ex, arena.stream) == 0  # still alive and runnable
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    assert P2(wsp, ws, ex, arena.stream) == INVALID
    assert P2(wsp, ws, ffi.NULL, arena.stream) in (NULLPTR, INVALID)


def test_injected_phase_two_fault_is_a_failed_run(arena):
    """An injected phase-two failure behaves as a failed run on a device: a repeatable
    executor is kept and runs again; a single-use one is released by the library."""
    ex, ws, outs, refs = prepared(arena)
    assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
    wsp = arena.malloc(ws)
    assert lib.aclemuSetFaults(b"aclnnLayerNormBackward:1") == 0
    assert P2(wsp, ws, ex, arena.stream) == RUNTIME
    assert "injected" in last_msg()
    assert P2(wsp, ws, ex, arena.stream) == 0, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == 0
    assert_close(outs[0].read(), refs[0], "after an injected fault")
    assert lib.aclDestroyAclOpExecutor(ex) == 0
    single, ws, _, _ = prepared(arena)
    assert lib.aclemuSetFaults(b"aclnnLayerNormBackward:1") == 0
    assert P2(arena.malloc(ws), ws, single, arena.stream) == RUNTIME
    assert lib.aclDestroyAclOpExecutor(single) == INNER and "released by the library" in last_msg()
