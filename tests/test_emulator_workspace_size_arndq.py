"""Phase one's workspace size, as a device reports it, for aclnnAddRmsNormDynamicQuant and
aclnnAddRmsNormDynamicQuantV2.

Expected sizes are stated here from the vendor's sources, independently of the emulator:
- the op_apis (hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/op_api/
  aclnn_add_rms_norm_dynamic_quant{,_v2}.cpp, add_rms_norm_dynamic_quant.cpp) build a graph:
  Contiguous copies of strided inputs, one AddRmsNormDynamicQuant kernel whose five results
  the executor allocates (y1, y2 of x1's shape, or [1] when not computed; x; scale1, scale2),
  each ViewCopy'd into its output: a contiguous output takes its result over, a strided one
  is written by a copy kernel reading it. Placed by MaxAllocator (_workspace_model.py). An
  empty x1, gamma or y2Out returns 0 before the graph (V2 on Ascend 950: not for an empty
  gamma, which runs the empty-tensor kernel);
- the kernel's one workspace: Atlas A2/A3 (op_host/arch22/add_rms_norm_dynamic_quant_tiling.cpp
  SetTilingDataAndTilingKeyAndWorkSpace) GetLibApiWorkSpaceSize + 1 byte, or with the slice-D
  kernel (rows too long for the single-row kernel's 16 bytes a column, aligned to 32, 64 for
  INT4 results, + 1024 in the 192 KiB UB) a row of N floats per used core and workspace row
  instead of the byte: two rows with an outputMask or a smooth scale, else one
  (GetworkspaceRowsNum); Ascend 950 (op_host/arch35/add_rms_norm_dynamic_quant_tiling_arch35.cpp
  PostTiling, GetWorkspaceSize; _tiling_empty.cpp) 16 MiB, the split kernel three rows of N
  floats per used core on top. The used cores (DoBlockTiling, DoOpTiling): the M rows in
  blocks of ceil(M / vector cores). No kernel on the Atlas training and inference series:
  phase one is refused there (the emulator's stricter choice; docs/emulator.md).
Then phase two's checks of that size: NULL 161001, one byte short 161002, nothing leaked,
and a run with exactly that size gives the right numbers.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py import reference

from test_emulator_op import F16, F32, OK, arena, last_msg, no_leaks, stream  # noqa: F401
from _emu_aclnn import workspace_attempt
from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_workspace_size_rms import ws_of
from _workspace_model import (ARCH, CORES, LIB_API_WORKSPACE, MiB16, ceil_to, copies_in,
                              copy_view_out_ws, max_allocator)
import test_emulator_add_rms_norm_dynamic_quant as v1
import test_emulator_add_rms_norm_dynamic_quant_v2 as v2

I32 = np.dtype(np.int32)
UB_A2 = 192 * 1024   # Atlas A2/A3's UB (their platform files' ub_size)
N_LONG = 16000       # slice-D rows on Atlas A2/A3, the split kernel's on Ascend 950
N_SLICE_D = 12304    # slice-D rows on Atlas A2/A3 (INT8 and INT4), single-row on Ascend 950
# row counts over the vector cores: one core, a few, just past one row a core, past two
ROWS = [1, 7, CORES + 1, 2 * CORES + 3]


def used_cores(M):
    per_core = -(-M // CORES)
    return -(-M // per_core)


def tiling_ws(M, N, *, smooth, beta=False, masked=False, out1=True, out2=False, int4=False):
    """The kernel's one workspace (the module docstring's rules)."""
    if ARCH == 3510:
        split = v1.regbase_kernel(N, smooth, out2, beta, out1) == "split"
        return MiB16 + (3 * used_cores(M) * N * 4 if split else 0)
    if 16 * ceil_to(N, 64 if int4 else 32) + 1024 <= UB_A2:
        return LIB_API_WORKSPACE + 1
    rows = 2 if masked or smooth else 1
    return LIB_API_WORKSPACE + used_cores(M) * N * 4 * rows


NAMES = ("x1", "x2", "gamma", "s1", "s2", "beta", "y1", "y2", "x", "sc1", "sc2")  # views' order


# the op_apis' ViewCopy order of the results
COPY_ORDER = {1: ("y1", "x", "y2", "sc1", "sc2"), 2: ("y1", "sc1", "y2", "sc2", "x")}


def expected(M, N, kernel_ws, *, int4=False, strided_in=(), strided_out=(), ts=None, version=1):
    """MaxAllocator over the graph: each strided input's copy (the views ``ts`` made; M x N
    or N FLOAT16 values), alive until the kernel; the kernel's workspace; each result a
    strided output needs copied, in the version's order (alive until its copy kernel, whose
    own workspace on Ascend 950 depends on the output's layout; the others are taken over)."""
    v = dict(zip(NAMES, ts or ()))
    graph, k = copies_in([v[name] for name in strided_in])
    graph.append((kernel_ws, k, k))
    nbytes = {"y1": M * N // 2 if int4 else M * N, "x": M * N * 2, "sc1": M * 4}
    nbytes.update(y2=nbytes["y1"], sc2=nbytes["sc1"])
    strided_out = [name for name in COPY_ORDER[version] if name in strided_out]
    for j, name in enumerate(strided_out):
        graph += [(nbytes[name], k, k + 1 + j)] + copy_view_out_ws(k + 1 + j, v[name])
    return max_allocator(graph)


# The Atlas A2/A3 and Ascend 950 kernels: a size is defined only where one runs (elsewhere
# phase one is refused, as test_no_kernel_no_size checks)
HAS_KERNEL = ARCH in (2201, 3510)
where_it_runs = only_where(HAS_KERNEL)


def views(arena, M, N, smooth, *, beta=False, out1=True, out2=None, kinds=None, y="int8",
          seed=0):
    """x1, x2, gamma, smooth scales, beta (None unless asked), y1, y2, x, scale1, scale2 for
    [M, N] FLOAT16 rows with `smooth` smooth scales; a computed output of its full shape (an
    INT32 y: the last dim / 8), an uncomputed y and scale of one element; `kinds` maps a
    name to its layout ("transposed" rows, "stepped" vectors)."""
    kinds = kinds or {}
    out2 = smooth == 2 if out2 is None else out2
    x1, x2, g, s1, s2 = v1.inputs(np.random.default_rng(seed), (M, N), F16, smooth)
    b = (0.1 * np.random.default_rng(seed + 1).standard_normal(N)).astype(F16)

    def mk(name, values=None, **kw):
        return v1.view(arena, values, kind=kinds.get(name, "contig"), **kw)

    def y_out(name, computed):
        dt = I32 if y == "int32" else v1.I8
        shape = (1,) if not computed else (M, N // 8) if y == "int32" else (M, N)
        return mk(name, shape=shape, dtype=dt, sentinel=-77)

    def sc_out(name, computed):
        return mk(name, shape=(M,) if computed else (1,), dtype=F32, sentinel=-5)
    ins = [mk(n, a) if a is not None else None
           for n, a in zip(("x1", "x2", "gamma", "s1", "s2", "beta"),
                           (x1, x2, g, s1, s2, b if beta else None))]
    return ins + [y_out("y1", out1), y_out("y2", out2),
                  mk("x", shape=(M, N), dtype=F16, sentinel=-7), sc_out("sc1", out1),
                  sc_out("sc2", out2)]


def phase_one(ts, mask=None, version=1):
    """V1 (no beta, no mask) or V2 of the views `views` made."""
    if version == 1:
        assert ts[5] is None and mask is None
        return v1.phase_one(ts[:5] + ts[6:])
    return v2.phase_one(ts, mask)


def size_of(ts, mask=None, version=1):
    return ws_of(phase_one(ts, mask, version))


# ---- the sizes ---------------------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("M", ROWS, ids=lambda m: f"{m}rows")
@pytest.mark.parametrize("N", [64, N_SLICE_D, N_LONG], ids=["64", "slice_d", "long"])
@pytest.mark.parametrize("smooth", [0, 1, 2], ids=["plain", "smooth1", "dual"])
def test_v1_size(arena, M, N, smooth):
    """No outputMask: the Atlas slice-D workspace one row without smooth scales, two with."""
    ws = size_of(views(arena, M, N, smooth))
    assert ws == expected(M, N, tiling_ws(M, N, smooth=smooth, out2=smooth == 2))


V2_CASES = v2.SMOOTH_MASKS


@where_it_runs
@pytest.mark.parametrize("M", [ROWS[1], ROWS[3]], ids=lambda m: f"{m}rows")
@pytest.mark.parametrize("N", [64, N_LONG], ids=["64", "long"])
@pytest.mark.parametrize("beta", [False, True], ids=["nobeta", "beta"])
@pytest.mark.parametrize("smooth,mask", V2_CASES,
                         ids=[f"{v2.SMOOTH_IDS[s]}-{v2.MASK_IDS[m]}" for s, m in V2_CASES])
def test_v2_size(arena, M, N, beta, smooth, mask):
    """An outputMask makes the Atlas slice-D workspace two rows whatever the smooth scales;
    the outputs computed and beta take part in Ascend 950's kernel choice."""
    out1, out2 = mask if mask is not None else (True, smooth == 2)
    ts = views(arena, M, N, smooth, beta=beta, out1=out1, out2=out2)
    kernel_ws = tiling_ws(M, N, smooth=smooth, beta=beta, masked=mask is not None, out1=out1,
                          out2=out2)
    assert size_of(ts, mask, 2) == expected(M, N, kernel_ws)


@where_it_runs
@pytest.mark.parametrize("M", ROWS, ids=lambda m: f"{m}rows")
@pytest.mark.parametrize("N", [N_SLICE_D, N_LONG], ids=["slice_d", "long"])
def test_v2_int32_y_size(arena, M, N):
    """An INT32 y (dstType INT4): the Atlas tiling aligns rows to 64 for INT4 results; the
    INT4 results are handed over through their INT32 views."""
    ts = views(arena, M, N, 1, out2=False, y="int32")
    kernel_ws = tiling_ws(M, N, smooth=1, masked=True, int4=True)
    assert size_of(ts, (True, False), 2) == expected(M, N, kernel_ws, int4=True)


STRIDED = [(("x1",), ()), (("x1", "x2", "gamma", "s1", "s2"), ()), ((), ("y1",)),
           ((), ("x", "sc1")), (("s2",), ("y1", "y2", "x", "sc1", "sc2"))]


@where_it_runs
@pytest.mark.parametrize("strided_in,strided_out", STRIDED,
                         ids=["x1", "inputs", "y1", "x-sc1", "s2-outputs"])
@pytest.mark.parametrize("version", [1, 2])
def test_strided_size(arena, strided_in, strided_out, version):
    """Each strided input's copy alive until the kernel, each strided output's result
    until its copy (both versions copy every result, in their own orders)."""
    M, N = 6, 64
    kinds = {n: "transposed" if n in ("x1", "x2", "y1", "y2", "x") else "stepped"
             for n in strided_in + strided_out}
    mask = (True, True) if version == 2 else None
    ts = views(arena, M, N, 2, kinds=kinds)
    kernel_ws = tiling_ws(M, N, smooth=2, out2=True, masked=mask is not None)
    assert size_of(ts, mask, version) == expected(M, N, kernel_ws, strided_in=strided_in,
                                                  strided_out=strided_out, ts=ts,
                                                  version=version)


def test_empty_takes_none(arena):
    """An empty x1 (both versions) or gamma (V1; V2 off Ascend 950): 0, nothing launched. The
    op_apis return before looking the kernel up, so on every part (the parts without one
    too)."""
    assert size_of(views(arena, 0, 64, 2)) == 0
    assert size_of(views(arena, 0, 64, 2, beta=True), (True, True), 2) == 0
    assert size_of(views(arena, 4, 0, 0)) == 0
    if ARCH != 3510:
        assert size_of(views(arena, 4, 0, 0, beta=True), None, 2) == 0


@only_where(ARCH == 3510)   # Ascend 950's empty-gamma kernel
@pytest.mark.parametrize("kinds", [{}, {"sc1": "stepped"}], ids=["contig", "strided_scale"])
def test_v2_empty_gamma_runs_the_empty_kernel_on_950(arena, kinds):
    """Ascend 950, V2, an empty gamma: the empty tiling's 16 MiB; a strided scale1 keeps its
    M FLOAT result for the copy."""
    M = 5
    ws = size_of(views(arena, M, 0, 0, kinds=kinds), None, 2)
    assert ws == max_allocator([(MiB16, 0, 0)] + ([(M * 4, 0, 1)] if kinds else []))


@only_where(not HAS_KERNEL)
def test_no_kernel_no_size(arena):
    """The Atlas training and inference series have no kernel: phase one refused (561003),
    no size (the device's phase one would pass and its launch fail; docs/emulator.md)."""
    for version, mask in ((1, None), (2, (True, True))):
        rc, _, _ = phase_one(views(arena, 4, 64, 2, beta=version == 2), mask, version)
        assert rc == v1.FIND_KERNEL, last_msg()


# ---- phase two with that size ------------------------------------------------------------------

@where_it_runs
@pytest.mark.parametrize("version,N", [(1, 64), (1, N_LONG), (2, N_LONG)],
                         ids=["v1-64", "v1-long", "v2-long"])
def test_short_refused_exact_runs(arena, version, N):
    """With fresh views each time: a NULL workspace of the reported size 161001, one byte
    short 161002, nothing leaked; the exact size runs: xOut the sum, y1/y2 and the scales
    within one step of the float64 reference."""
    M, mask = 3, (None if version == 1 else (True, True))
    want = expected(M, N, tiling_ws(M, N, smooth=2, out2=True, masked=mask is not None))
    p2 = v1.P2 if version == 1 else v2.P2
    for attempt in ("null", "short", "exact"):
        ts = views(arena, M, N, 2, seed=N)
        rc, ws, ex = phase_one(ts, mask, version)
        assert rc == OK, last_msg()
        assert ws == want > MiB16
        if not workspace_attempt(arena, p2, ex, ws, attempt):
            continue
        x1, x2, g, s1, s2 = (t.read() for t in ts[:5])
        y1, y2, x, sc1, sc2 = ts[6:]
        s = x1.astype(np.float32) + x2.astype(np.float32)
        assert np.array_equal(x.read().view(np.uint16), s.astype(F16).view(np.uint16))
        exp = reference.add_rms_norm_dynamic_quant(x1, x2, g, s1, s2, epsilon=1e-6)
        got = (v1.read_raw(y1), v1.read_raw(y2), None, v1.read_raw(sc1), v1.read_raw(sc2))
        v1.assert_near_dynamic_reference(got, exp, scale_rtol=2e-3)


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
