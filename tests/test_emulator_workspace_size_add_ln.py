"""Phase one's workspace size as a device reports it, for aclnnAdd/Adds/InplaceAdd(s) and the
AddLayerNorm, DeepNorm and FastLayerNorm operators (emulator/src/ops/exec_workspace.h).

The expected sizes are stated here from the vendor's rules, independently of the emulator's
code (tests/_workspace_model.py: opbase's MaxAllocator over the op_api's kernel graph):

- aclnnAdd(s) (hicann/ops-math math/add/op_api/aclnn_add.cpp): Contiguous copies, Casts to the
  promoted dtype, then Add, Axpy, AxpyV2 or Mul and Add, then a Cast to out's dtype and
  ViewCopy. On Ascend 950 each of those elementwise kernels that runs on AI Core has an arch35
  tiling built on opbase's BroadcastBaseTiling, which asks for DEFAULT_TILING_WORKSPACE_SIZE,
  16 MiB (pkg_inc/op_common/atvoss/broadcast/broadcast_tiling.h); on the other parts they are
  TBE kernels whose workspaces are not public (counted as none).
- The operators whose aclnn interface opbuild generates (AddLayerNorm, AddLayerNormGrad,
  DeepNorm, DeepNormGrad) report the sum of their tiling's workspaces
  (opbase src/nnopbase/individual_op/executor/indv_executor.cpp
  NnopbaseExecutorGetWorkspaceSizes: no allocator, no alignment), none when every output is
  empty (NnopbaseSkipKernelLaunch).

Then phase two's checks of that size: a NULL workspace 161001, one byte short 161002, nothing
leaked, and a run with exactly that size.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.ops import ADD_LAYER_NORM, ADD_LAYER_NORM_GRAD, DEEP_NORM, DEEP_NORM_GRAD
from acl_py.raw import ffi, lib

from _part_runs import only_where, other_parts, run_on_parts, runs_here
from math import gcd

from _workspace_model import (ARCH, CORES, LIB_API_WORKSPACE, MiB16, cast_ws, ceil_to,
                              copy_in, handed_over, handed_over_all, helper_ws,
                              max_allocator)
from test_emulator_op import OK, last_msg, no_leaks, stream  # noqa: F401
from test_emulator_add import arena, get, out_tensor, put, scalar  # noqa: F401
from test_emulator_op import DevView
from _emu_aclnn import rstd_shape, workspace_attempt
import test_emulator_add_layer_norm as aln
import test_emulator_add_layer_norm_grad as alng
import test_emulator_add_layer_norm_quant as alq
import test_emulator_deep_norm as dn
import test_emulator_deep_norm_grad as dng
import test_emulator_fast_layer_norm as fln

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw calls against the emulator's rules")

F32, F16, I32, I16 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.int16))
ACL_FLOAT, ACL_INT32, ACL_BOOL = 0, 3, 12


# ---- aclnnAdd, aclnnAdds, aclnnInplaceAdd, aclnnInplaceAdds -------------------------------

def broadcast_ws(kernel):
    """An AI Core elementwise kernel's tiling workspace: 16 MiB on Ascend 950 (its arch35
    BroadcastBaseTiling), none elsewhere (TBE); as a graph entry list."""
    return [(MiB16, kernel, kernel)] if ARCH == 3510 else []


def add_phase_one(arena, a, b, alpha, out, api="Add"):
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    if api == "Add":
        rc = lib.aclnnAddGetWorkspaceSize(a.handle, b.handle, alpha, out.handle, ws, ex)
    elif api == "InplaceAdd":
        rc = lib.aclnnInplaceAddGetWorkspaceSize(a.handle, b.handle, alpha, ws, ex)
    elif api == "Adds":
        rc = lib.aclnnAddsGetWorkspaceSize(a.handle, b, alpha, out.handle, ws, ex)
    else:
        rc = lib.aclnnInplaceAddsGetWorkspaceSize(a.handle, b, alpha, ws, ex)
    assert rc == OK, last_msg()
    return ws[0], ex[0]


def to_out(nbytes, kernel, out):
    """The last kernel's result ViewCopy'd into the contiguous ``out`` (or self, in place):
    graph entries (_workspace_model.handed_over)."""
    return handed_over(nbytes, kernel, out)[0]


def size_of(arena, *args, **kw):
    ws, ex = add_phase_one(arena, *args, **kw)
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


N = 4 * 6  # out's elements in the cases below


def test_add_size_same_dtype_alpha_one(arena):
    """FLOAT + FLOAT into FLOAT: one Add, its result handed to out (ViewCopy)."""
    a, b = put(arena, np.ones((4, 6), F32)), put(arena, np.ones((6,), F32))
    out = out_tensor(arena, (4, 6), F32)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, out))
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), a, api="InplaceAdd") == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, a))


def test_add_size_axpy(arena):
    """alpha 2, FLOAT: Axpy on every part (both lists hold FLOAT), its result out's."""
    a, b = put(arena, np.ones((4, 6), F32)), put(arena, np.ones((4, 6), F32))
    out = out_tensor(arena, (4, 6), F32)
    assert size_of(arena, a, b, scalar(arena, 2.0, ACL_FLOAT), out) == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, out))


def test_add_size_result_cast_to_out(arena):
    """FLOAT + FLOAT into FLOAT16: the Add's FLOAT result stays in the workspace until the
    Cast reads it (the Cast's result is out's)."""
    a, b = put(arena, np.ones((4, 6), F32)), put(arena, np.ones((4, 6), F32))
    out = out_tensor(arena, (4, 6), F16)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == \
        max_allocator(broadcast_ws(0) + [(N * 4, 0, 1)] + cast_ws(1) + to_out(N * 2, 1, out))


def test_add_size_inputs_cast_to_the_promotion(arena):
    """INT32 + FLOAT16 (promoted FLOAT16): self cast first, alive until the Add reads it."""
    a, b = put(arena, np.ones((4, 6), I32)), put(arena, np.ones((4, 6), F16))
    out = out_tensor(arena, (4, 6), F16)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == \
        max_allocator(cast_ws(0, "INT32", "FLOAT16") + [(N * 2, 0, 1)] + broadcast_ws(1) +
                      to_out(N * 2, 1, out))


def test_add_size_cast_on_ai_cpu(arena):
    """INT16 + DOUBLE (promoted DOUBLE): Ascend 950 casts INT16 to DOUBLE on AI CPU (the pair
    is not on cast.cpp's regbase AI Core list) and adds DOUBLE there too: no tiling workspace
    on any part, only the cast's result, alive until the Add."""
    a, b = put(arena, np.ones((4, 6), I16)), put(arena, np.ones((4, 6), np.float64))
    out = out_tensor(arena, (4, 6), np.dtype(np.float64))
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == \
        max_allocator([(N * 8, 0, 1)] + to_out(N * 8, 1, out))


def test_add_size_mixed_dtypes(arena):
    """FLOAT16 + FLOAT with alpha 1: the mixed-dtype Add, no Cast of the inputs, a FLOAT
    result (out FLOAT: out's; out FLOAT16: cast)."""
    a, b = put(arena, np.ones((4, 6), F16)), put(arena, np.ones((4, 6), F32))
    out = out_tensor(arena, (4, 6), F32)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, out))
    out16 = out_tensor(arena, (4, 6), F16)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out16) == \
        max_allocator(broadcast_ws(0) + [(N * 4, 0, 1)] + cast_ws(1) + to_out(N * 2, 1, out16))


def test_add_size_strided_self(arena):
    """A strided self is copied first (l0op::Contiguous) except on Ascend 950, whose Add
    reads strided FLOAT inputs as they are (IsAddSupportNonContiguous)."""
    a, b = put(arena, np.ones((4, 6), F32), strided=True), put(arena, np.ones((4, 6), F32))
    out = out_tensor(arena, (4, 6), F32)
    graph = broadcast_ws(0) + to_out(N * 4, 0, out) if ARCH == 3510 else \
        [(N * 4, 0, 1)] + to_out(N * 4, 1, out)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == max_allocator(graph)


def test_add_size_mul_then_add(arena):
    """INT16, alpha 2: no Axpy takes INT16, so Mul(other, alpha) then Add; the product stays
    until the Add. On Ascend 950 the Mul runs on AI Core (16 MiB), the INT16 Add on AI CPU
    (none); elsewhere both are TBE or AI CPU (none)."""
    a, b = put(arena, np.ones((4, 6), I16)), put(arena, np.ones((4, 6), I16))
    out = out_tensor(arena, (4, 6), I16)
    assert size_of(arena, a, b, scalar(arena, 2, ACL_INT32), out) == \
        max_allocator(broadcast_ws(0) + [(N * 2, 0, 1)] + to_out(N * 2, 1, out))


def test_add_size_empty_takes_none(arena):
    a, b = put(arena, np.ones((0, 6), F32)), put(arena, np.ones((6,), F32))
    out = out_tensor(arena, (0, 6), F16)
    assert size_of(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out) == 0


def test_adds_size(arena):
    """aclnnAdds: the scalar and alpha become host tensors (no workspace). FLOAT self plus a
    FLOAT scalar: one Add (alpha 1) or Axpy (alpha 2) into out. INT32 with alpha 3: Axpy off
    Ascend 950, AxpyV2 on it. BOOL + True * True into INT32: Add, then Casts to INT32, to
    BOOL and back (the BOOL fix), each result alive until the next Cast reads it."""
    a = put(arena, np.ones((4, 6), F32))
    out = out_tensor(arena, (4, 6), F32)
    two = scalar(arena, 2.0, ACL_FLOAT)
    assert size_of(arena, a, two, scalar(arena, 1.0, ACL_FLOAT), out, api="Adds") == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, out))
    assert size_of(arena, a, two, two, a, api="InplaceAdds") == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, a))
    i = put(arena, np.ones((4, 6), I32))
    three = scalar(arena, 3, ACL_INT32)
    assert size_of(arena, i, three, three, i, api="InplaceAdds") == \
        max_allocator(broadcast_ws(0) + to_out(N * 4, 0, i))
    t = put(arena, np.ones((4, 6), np.bool_))
    true = scalar(arena, True, ACL_BOOL)
    outi = out_tensor(arena, (4, 6), I32)
    assert size_of(arena, t, true, true, outi, api="Adds") == \
        max_allocator(broadcast_ws(0) + [(N, 0, 1)] + cast_ws(1, "BOOL", "INT32") +
                      [(N * 4, 1, 2)] + cast_ws(2, "INT32", "BOOL") + [(N, 2, 3)] +
                      cast_ws(3, "BOOL", "INT32") + to_out(N * 4, 3, outi))


def test_adds_strided_and_empty_size(arena):
    """A strided FLOAT self is copied (l0op::Contiguous: a StridedSlice of every other
    element) before an Axpy on every part."""
    a = put(arena, np.ones((4, 6), F32), strided=True)
    out = out_tensor(arena, (4, 6), F32)
    two = scalar(arena, 2.0, ACL_FLOAT)
    copy, k = copy_in(0, a.shape, a.strides, a.offset, a.storage.size, 4)
    assert size_of(arena, a, two, two, out, api="Adds") == \
        max_allocator(copy + broadcast_ws(k) + to_out(N * 4, k, out))
    e = put(arena, np.ones((0, 6), F32))
    assert size_of(arena, e, two, two, out_tensor(arena, (0, 6), F16), api="Adds") == 0


def test_add_workspace_checked_then_runs(arena):
    """FLOAT + FLOAT into FLOAT16 needs workspace on every part: NULL refused (161001), one
    byte short refused (161002), each time the executor released and nothing leaked; the
    exact size runs and gives the sum."""
    x = np.linspace(-2, 2, N, dtype=np.float32).reshape(4, 6)
    y = np.linspace(3, -1, N, dtype=np.float32).reshape(4, 6)
    a, b = put(arena, x), put(arena, y)
    for attempt in ("null", "short", "exact"):
        out = out_tensor(arena, (4, 6), F16)
        ws, ex = add_phase_one(arena, a, b, scalar(arena, 1.0, ACL_FLOAT), out)
        assert ws == max_allocator(broadcast_ws(0) + [(N * 4, 0, 1)] + cast_ws(1) +
                                   to_out(N * 2, 1, out)) > 0
        if workspace_attempt(arena, lib.aclnnAdd, ex, ws, attempt):
            np.testing.assert_array_equal(get(arena, out), (x + y).astype(np.float16))


# ---- the generated norm operators: AddLayerNorm, AddLayerNormGrad, DeepNorm, DeepNormGrad --

# defined where the declarations have these kernels (not on the Atlas training series, where
# their tests check the refusal); the parts with them run these
where_they_run = only_where(all(runs_here(op) for op in (ADD_LAYER_NORM, ADD_LAYER_NORM_GRAD,
                                                         DEEP_NORM, DEEP_NORM_GRAD)))


def add_layer_norm_size():
    """The tiling's one workspace: Ascend 950's regbase tiling 16 MiB (add_layer_norm_tiling_
    arch35.cpp MIN_WORKSPACE_SIZE); elsewhere 1 byte plus the reserved system workspace, 2 MiB
    on Atlas inference (DAV_2002), 16 MiB on Atlas A2/A3 (add_layer_norm_tiling.cpp)."""
    return MiB16 if ARCH == 3510 else 1 + (2 * 1024 * 1024 if ARCH == 2002 else MiB16)


def generated_size(p1_result):
    rc, ws, ex = p1_result
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


@where_they_run
@pytest.mark.parametrize("shape,bias", [((4, 16), None), ((3, 5, 40), (40,)), ((2, 8), (2, 8))])
def test_add_layer_norm_size(arena, shape, bias):
    args = aln.views(arena, shape=shape, gshape=shape[-1:], bias=bias)
    assert generated_size(aln.phase_one(*args)) == add_layer_norm_size()
    empty = aln.views(arena, shape=(0, 16))
    assert generated_size(aln.phase_one(*empty)) == 0


@where_they_run
def test_deep_norm_size(arena):
    """The arch22 tiling asks for 1 byte (deep_norm_tiling.cpp), Ascend 950's for none
    (deep_norm_tiling_arch35.cpp WS_SYS_SIZE)."""
    assert generated_size(dn.phase_one(*dn.views(arena))) == (0 if ARCH == 3510 else 1)
    assert generated_size(dn.phase_one(*dn.views(arena, shape=(0, 16)))) == 0


@where_they_run
def test_add_layer_norm_grad_size(arena):
    """16 MiB of system workspace plus 20 MiB of the tiling's own, on every part
    (add_layer_norm_grad_tiling.cpp, _tiling_arch35.cpp; not deterministic)."""
    assert generated_size(alng.phase_one(*alng.views(arena))) == MiB16 + 20 * 1024 * 1024
    assert generated_size(alng.phase_one(*alng.views(arena, shape=(4, 0), gshape=(0,)))) == 0


def deep_norm_grad_size(M, N, itemsize):
    """arch22 (deep_norm_grad_tiling.cpp SetWorkspace): 16 MiB + 20 MiB. Ascend 950
    (deep_norm_grad_tiling_arch35.cpp SetTilingData): none, but for N < 500 and M >= 1024
    (gammaBetaRowSplit) the platform's system workspace plus, per block of rows, two float
    rows of N rounded up to 64; a block's rows: ceil(M / cores) rounded up so that a block
    starts on a 32-byte boundary."""
    if ARCH != 3510:
        return MiB16 + 20 * 1024 * 1024
    if not (N < 500 and M >= 1024):
        return 0
    rows = ceil_to(-(-M // CORES), 32 // gcd(N * itemsize, 32))
    return LIB_API_WORKSPACE + -(-M // rows) * 2 * ceil_to(N, 64) * 4


@where_they_run
@pytest.mark.parametrize("shape,dt", [((4, 16), F32), ((1024, 16), F32), ((1030, 9), F16),
                                      ((1024, 600), F16)],
                         ids=["small", "row-split", "row-split-odd", "wide"])
def test_deep_norm_grad_size(arena, shape, dt):
    args = dng.views(arena, shape=shape, gshape=shape[-1:], dt=dt)
    assert generated_size(dng.phase_one(*args[:6], dng.ALPHA, *args[6:])) == \
        deep_norm_grad_size(shape[0], shape[1], np.dtype(dt).itemsize)


@where_they_run
def test_deep_norm_workspace_checked_then_runs(arena):
    """DeepNorm's one byte (none on Ascend 950, where the call runs without one): a NULL
    workspace with that size is refused (161001), a zero-byte one too (161002), each time the
    executor released and nothing leaked; the exact size runs."""
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    h = x * 0.3 + 1.0
    mu = h.mean(1, keepdims=True)
    ref = (h - mu) / np.sqrt(((h - mu) ** 2).mean(1, keepdims=True) + 1e-6) + 1.0
    for attempt in ("null", "short", "exact"):
        args = dn.views(arena)
        args[0] = DevView(arena, x)
        rc, ws, ex = dn.phase_one(*args)
        assert rc == OK, last_msg()
        assert ws == (0 if ARCH == 3510 else 1)
        if ws:
            ran = workspace_attempt(arena, dn.P2, ex, ws, attempt)
        elif attempt == "exact":
            assert dn.P2(ffi.NULL, 0, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == OK
            ran = True
        else:       # no workspace: nothing to refuse
            assert lib.aclDestroyAclOpExecutor(ex) == OK
            ran = False
        if ran:
            np.testing.assert_allclose(args[6].read(), ref, rtol=1e-5, atol=1e-5)


# ---- aclnnFastLayerNorm ------------------------------------------------------------------

def fast_layer_norm_size(M, N, itemsize, views):
    """Contiguous tensors, statistics FLOAT: a Fill for each absent weight/bias (its tiling's
    16 MiB on Ascend 950; N values of input's dtype here, alive until the kernel), LayerNormV4's
    32-byte tiling workspace, y, rstd, mean ViewCopy'd in that order into the caller's
    out/rstd/mean (``views`` by name, None: not asked for: M FLOAT values left in the
    workspace; _workspace_model.handed_over) (aclnn_fast_layer_norm.cpp)."""
    k = (views["weight"] is None) + (views["bias"] is None)  # LayerNormV4, after the Fills
    graph = []
    for fill in range(k):
        graph += helper_ws(fill) + [(N * itemsize, fill, k)]
    graph.append((32, k, k))
    results = [(nbytes, views[name]) for name, nbytes in
               (("out", M * N * itemsize), ("rstd", M * 4), ("mean", M * 4))]
    graph += [(nbytes, k, k) for nbytes, v in results if v is None]
    return max_allocator(graph + handed_over_all(k, [r for r in results if r[1] is not None])[0])


FAST_PARAMS = [(True, True, True, True), (False, False, False, False),
               (True, False, True, False)]


@where_they_run
@pytest.mark.parametrize("params", FAST_PARAMS, ids=["".join("wbmr"[i] if p else "-"
                                                             for i, p in enumerate(ps))
                                                     for ps in FAST_PARAMS])
def test_fast_layer_norm_size(arena, params):
    dt, M, N = (F16, 6, 20) if ARCH == 2002 else (F32, 7, 40)  # 310P: FLOAT16, N <= 64 only
    v = lambda shape, d=dt: DevView(arena, shape=shape, dtype=np.dtype(d))  # noqa: E731
    views = {name: v(shape, d) if given else None for name, shape, d, given in (
        ("weight", (N,), dt, params[0]), ("bias", (N,), dt, params[1]), ("out", (M, N), dt, True),
        ("mean", (M, 1), F32, params[2]), ("rstd", (M, 1), F32, params[3]))}
    h = {name: None if t is None else t.handle for name, t in views.items()}
    rc, ws, ex = fln.phase_one(arena, v((M, N)).handle, [N], h["weight"], h["bias"], h["out"],
                               h["mean"], h["rstd"])
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert ws == fast_layer_norm_size(M, N, np.dtype(dt).itemsize, views)


@where_they_run
def test_fast_layer_norm_empty_size(arena):
    """N == 0: mean's Fill, then rstd's, each ViewCopy'd into its output (taken over, or
    alive until its copy task: _workspace_model.handed_over; the Fills' tilings on Ascend 950:
    16 MiB, one after the other); M == 0: none."""
    v = lambda shape: DevView(arena, shape=shape, dtype=np.dtype(np.float32))  # noqa: E731
    for x, ns in (((3, 0), [0]), ((0, 8), [8])):
        m = rstd_shape(x, 1)
        stats = [v(m), v(m)]
        rc, ws, ex = fln.phase_one(arena, v(x).handle, ns, None, None, v(x).handle,
                                   *(t.handle for t in stats))
        assert rc == OK, last_msg()
        assert lib.aclDestroyAclOpExecutor(ex) == OK
        graph, last = [], -1
        for stat in stats:
            graph += helper_ws(last + 1)
            entries, last = handed_over(int(np.prod(m)) * 4, last + 1, stat)
            graph += entries
        assert ws == (max_allocator(graph) if x[0] else 0)


# ---- aclnnAddLayerNormQuant (its op_api runs on Ascend 950 only) ----------------------------

def add_layer_norm_quant_size(m, n, dynamic, dual, welford=False):
    """Contiguous tensors: one AddLayerNormQuant kernel. Its regbase tiling
    (add_layer_norm_quant_tiling_arch35.cpp): rows per core ceil(m / cores), the cores that
    takes, rows per core again over those; 32 bytes; dynamic with Welford: the platform's
    system workspace + used cores x 2 buffers x quantized outputs x n floats; dynamic with one
    row a core: + 256 bytes a used core, + the system workspace off Welford. Its results:
    y1, x and (dual) y2 go to their outputs; the one-byte y2 stand-in (single), the out
    scales of the static mode (one FLOAT each) and the single dynamic mode's outScales2 stand
    in the workspace (aclnn_add_layer_norm_quant.cpp, op_api/add_layer_norm_quant.cpp)."""
    per_core = -(-m // CORES)
    used = -(-m // per_core)
    per_core = -(-m // used)
    ws = 32
    if dynamic and welford:
        ws = LIB_API_WORKSPACE + used * 2 * (2 if dual else 1) * n * 4
    if dynamic and per_core == 1:
        ws += used * 256 + (0 if welford else LIB_API_WORKSPACE)
    graph = [(ws, 0, 0)]
    if not dual:
        graph.append((1, 0, 0))
    if not dynamic:
        graph.append((4, 0, 0))
    if not dynamic or not dual:
        graph.append((4, 0, 0))
    return max_allocator(graph)


def alq_args(arena, m, n, dynamic, dual):
    args = alq.Args(arena, n)
    for k, shape, dt in (("x1", (m, n), F16), ("x2", (m, n), F16), ("y1", (m, n), np.int8),
                         ("y2", (m, n), np.int8), ("x", (m, n), F16), ("os1", (m,), F32),
                         ("os2", (m,), F32)):
        args.v[k] = args.make(shape, np.dtype(dt))
    if dynamic:
        args.mode = "dynamic"
        args.v["z1"] = args.v["z2"] = None
    if not dual:
        args.v["s2"] = args.v["z2"] = None
    return args


@alq.on_950
@pytest.mark.parametrize("m", [4, 300], ids=["row-a-core", "rows"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("dual", [False, True], ids=["single", "dual"])
def test_add_layer_norm_quant_size(arena, m, dynamic, dual):
    assert generated_size(alq_args(arena, m, 32, dynamic, dual).call()) == \
        add_layer_norm_quant_size(m, 32, dynamic, dual)


@alq.on_950
def test_add_layer_norm_quant_welford_size(arena):
    """Rows of 200000 FLOAT16 values do not fit the full-load kernel's UB: Welford, whose
    dynamic mode keeps float rows per core in the workspace."""
    assert generated_size(alq_args(arena, 2, 200000, True, True).call()) == \
        add_layer_norm_quant_size(2, 200000, True, True, welford=True)


@alq.on_950
def test_add_layer_norm_quant_empty_outscales_size(arena):
    """No rows (an empty outScales1Out): the op_api returns before building anything (none).
    Rows of no columns (dynamic): the empty-input kernel, whose tiling asks for 16 MiB, its
    empty y1/x and the one-element stand-ins of y2 and outScales2 (no scales2) in the
    workspace, each 512 bytes as the allocator counts them; the -inf out scales copied out."""
    assert generated_size(alq_args(arena, 0, 32, True, True).call()) == 0
    args = alq_args(arena, 4, 0, True, False)
    args.eps = 0.0
    assert generated_size(args.call()) == \
        max_allocator([(MiB16, 0, 0), (0, 0, 0), (1, 0, 0), (0, 0, 0), (4, 0, 0)])


test_on_other_parts = run_on_parts(other_parts(), "size or workspace")
