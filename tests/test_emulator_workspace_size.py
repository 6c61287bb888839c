"""Phase one's workspace size as a device reports it (emulator/src/ops/exec_workspace.h).

The expected sizes are stated here from the vendor's rules, independently of the emulator's
code: opbase's MaxAllocator (hicann/opbase src/nnopbase/composite_op/mem_mgr/
memory_allocator.cpp: each workspace tensor takes its size + 32 bytes rounded up to 512, the
tensors of one kernel never share memory) over the kernel graph the op_api builds, and each
LayerNormGradV3 tiling's GetWorkspaceSize (hicann/ops-nn norm/layer_norm_grad_v3/op_host/).
Then phase two's checks of that size: a NULL workspace 161001, one byte short 161002, nothing
leaked, and a run with exactly that size.
"""
from __future__ import annotations

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _part_runs import only_where, other_parts, run_on_parts
from test_emulator_op import (INVALID, NULLPTR, OK, P1, P2, Args, arena, assert_close,  # noqa: F401
                              last_msg, live, no_leaks, stream)
from test_emulator_op import prepared as prepared_with_data
from test_emulator_layer_norm import P2 as LN_P2, DevView, phase_one as ln_phase_one
from _workspace_model import (ARCH, CORES, MiB16, align, ceil_to, fills_ws,
                              handed_over, handed_over_all, helper_ws, max_allocator)


def grad_v3_workspace(M, N, dy_is_float):
    """The LayerNormGradV3 tiling's one workspace (layer_norm_grad_v3_*_tiling.cpp)."""
    if ARCH == 3510:  # arch35: which template (IsCapable), and its GetWorkspaceSize
        if M > 4096 and N < 512:
            return CORES * N * 2 * 4 + MiB16
        if M < 512 and N > 8192:
            return CORES * M * 3 * 4 + MiB16
        return MiB16
    block = -(-M // CORES)
    blocks = -(-M // block)
    if 768 <= N <= 12176:                                   # SingleRead
        return blocks * ceil_to(N, 8) * 4 * 2 + MiB16
    if N <= 64 and N % (8 if dy_is_float else 16):          # Transpose
        return ceil_to(ceil_to(N, 8) * 4, 512) * blocks * 2 + MiB16
    if N <= 768:                                            # Common
        return blocks * ceil_to(N, 8) * 4 * 2 + MiB16
    return blocks * ceil_to(N, 16) * 4 * 4 + MiB16          # Workspace


def expected(M, N, mask, weight=True, outs=None):
    """Contiguous FLOAT tensors throughout: the kernels' FLOAT results go straight to the
    caller's tensors (ViewCopy re-points them) where they take them over (``outs``: the
    output DevViews; None: storages that fit, as Args's), else stay until their copies; so
    what remains is each kernel's workspace, the results nobody asked for, a Fill of ones for
    a missing weight, and on the split TBE path (Atlas training and inference, workspaces not
    public: none) the M x N FLOAT tensor its first kernel hands the second."""
    graph, k = [], 0
    if not weight:
        graph += helper_ws(0) + [(N * 4, 0, 1)]  # Fill, read by the next kernel
        k = 1
    if ARCH in (2201, 3510):
        graph.append((grad_v3_workspace(M, N, True), k, k))
        graph += [(M * N * 4 if i == 0 else N * 4, k, k) for i in range(3) if not mask[i]]
        made = (k, k, k)
    else:
        if not mask[0]:
            graph.append((M * N * 4, k, k))
        graph.append((M * N * 4, k, k + 1))
        graph += [(N * 4, k + 1, k + 1) for i in (1, 2) if not mask[i]]
        made = (k, k + 1, k + 1)
    last = made[2]  # the copies follow the last kernel, in output order
    for i in range(3):
        if outs is not None and mask[i]:
            entries, last = handed_over(M * N * 4 if i == 0 else N * 4, made[i], outs[i], last)
            graph += entries
    return max_allocator(graph)


SHAPES = [((4, 3, 5), 2), ((64, 33), 1), ((100, 800), 1), ((3, 20000), 1), ((5000, 100), 1),
          ((8, 9000), 1)]
MASKS = [(True, True, True), (True, False, False), (False, True, True), (False, False, True)]


@pytest.mark.parametrize("shape,nlen", SHAPES, ids=[str(s) for s, _ in SHAPES])
@pytest.mark.parametrize("mask", MASKS, ids=["".join("TF"[not m] for m in k) for k in MASKS])
def test_layer_norm_backward_size(arena, shape, nlen, mask):
    args = Args(arena, shape, nlen)
    args.a["outputMask"] = arena.bool_array(mask)
    rc, msg = args.call()
    assert rc == OK, msg
    M = int(np.prod(shape[:len(shape) - nlen]))
    N = int(np.prod(shape[len(shape) - nlen:]))
    assert args.ws[0] == expected(M, N, mask)


def test_layer_norm_backward_size_without_weight(arena):
    args = Args(arena, (64, 33), 1)
    args.a["weightOptional"] = ffi.NULL
    assert args.call()[0] == OK
    assert args.ws[0] == expected(64, 33, (True, True, True), weight=False)


def test_layer_norm_backward_size_strided_input(arena):
    """A non-contiguous input is copied first (l0op::Contiguous): its M x N copy counts, in a
    bucket of its own (it lives until the kernel reads it)."""
    args = Args(arena, (64, 33), 1)
    args.a["input"] = arena.tensor((64, 33), np.dtype(np.float32), [1, 64], 0, 64 * 33, args.ptr)
    assert args.call()[0] == OK
    contiguous = Args(arena, (64, 33), 1)
    assert contiguous.call()[0] == OK
    assert args.ws[0] == contiguous.ws[0] + align(64 * 33 * 4)


def test_layer_norm_backward_nothing_requested_or_empty(arena):
    args = Args(arena)
    args.a["outputMask"] = arena.bool_array([False] * 3)
    assert args.call()[0] == OK and args.ws[0] == 0
    empty = Args(arena, (3, 0), 1)  # N == 0: nothing written
    assert empty.call()[0] == OK and empty.ws[0] == 0


def test_layer_norm_backward_empty_rows_fill_the_parameter_gradients(arena):
    """M == 0: the op_api zeroes each requested gradWeight/gradBias (ProcessEmptyTensorWithValue:
    a Fill, 16 MiB of tiling on Ascend 950, ViewCopy'd into the output: a contiguous one takes
    the Fill's result, a strided one is copied into, the result alive until then)."""
    for mask in ((True, True, True), (True, False, True), (True, False, False)):
        args = Args(arena, (0, 3, 5))
        args.a["outputMask"] = arena.bool_array(mask)
        assert args.call()[0] == OK
        fills = mask[1] + mask[2]
        assert args.ws[0] == max_allocator([t for k in range(fills) for t in helper_ws(k)])
    args = Args(arena, (0, 3, 5))
    args.a["gradWeightOut"] = arena.tensor((3, 5), np.dtype(np.float32), [1, 3], 0, 15, args.ptr)
    assert args.call()[0] == OK
    assert args.ws[0] == max_allocator(helper_ws(0) + [(15 * 4, 0, 1)] + helper_ws(2)) > 0


def prepared(arena):
    args = Args(arena, (64, 33), 1)
    assert P1(*args.a.values(), args.ws, args.ex) == OK, last_msg()
    return args.ex[0], args.ws[0]


def test_null_workspace_refused(arena):
    ex, ws = prepared(arena)
    assert ws > 0
    before = live()
    assert P2(ffi.NULL, ws, ex, arena.stream) == NULLPTR
    assert "workspace is NULL" in last_msg()
    after = live()
    assert after["executors"] == before["executors"] - 1  # released by the library
    assert after["device_bytes"] == before["device_bytes"]


def test_one_byte_short_refused(arena):
    ex, ws = prepared(arena)
    wsp = arena.malloc(ws)
    before = live()
    assert P2(wsp, ws - 1, ex, arena.stream) == INVALID
    assert "less than" in last_msg()
    after = live()
    assert after["executors"] == before["executors"] - 1  # single-use: released on failure
    assert after["device_bytes"] == before["device_bytes"]


def test_runs_with_the_reported_size(arena):
    ex, ws, outs, refs = prepared_with_data(arena)
    assert ws == expected(64, 33, (True, True, True), outs=outs)
    wsp = arena.malloc(ws)
    assert P2(wsp, ws, ex, arena.stream) == OK, last_msg()
    assert lib.aclrtSynchronizeStream(arena.stream) == OK
    for o, r in zip(outs, refs):
        assert_close(o.read(), r, "with the device's workspace")




# ---- aclnnLayerNorm ----------------------------------------------------------------------

def layer_norm_expected(M, N, weight, bias, out, mean, rstd):
    """FLOAT input and out, contiguous: off Ascend 950 a Fill for each absent weight/bias (alive
    until the kernel); one kernel: LayerNormV4 (32-byte workspace) on Ascend 950 and, on Atlas
    A2/A3, for N < 64 not a multiple of 8 (IsV4SocCheck's transpose case), else the TBE
    LayerNormV3 (none public); mean/rstd (M FLOAT values) stay in the workspace when not
    asked for; out, mean and rstd (the caller's DevViews where given, else False) take y
    and the statistics over where _workspace_model.view_takes_over says so, else those stay
    until their copies."""
    v4 = ARCH == 3510 or (ARCH == 2201 and N % 8 and N < 64)
    graph, k = [], 0
    if ARCH != 3510:
        for present in (weight, bias):
            if not present:
                graph.append([N * 4, k, None])
                k += 1
    for t in graph:
        t[2] = k
    if v4:
        graph.append((32, k, k))
    graph += [(M * 4, k, k) for given in (mean, rstd) if not given]
    graph += handed_over_all(k, [(M * N * 4 if i == 0 else M * 4, v)
                                 for i, v in enumerate((out, mean, rstd)) if v])[0]
    return max_allocator([tuple(t) for t in graph])


LN_CASES = [(7, 5), (50, 64), (3, 1000), (1, 33)]
LN_PARAMS = [(True, True, True, True), (False, False, True, True), (True, False, False, False),
             (False, True, False, True)]


@pytest.mark.parametrize("M,N", LN_CASES, ids=[f"{m}x{n}" for m, n in LN_CASES])
@pytest.mark.parametrize("params", LN_PARAMS, ids=["".join("wbmr"[i] if p else "-"
                                                           for i, p in enumerate(ps))
                                                   for ps in LN_PARAMS])
def test_layer_norm_size(arena, M, N, params):
    weight, bias, mean, rstd = params
    v = lambda shape: DevView(arena, shape=shape, dtype=np.dtype(np.float32))  # noqa: E731
    outs = (v((M, N)), v((M, 1)) if mean else False, v((M, 1)) if rstd else False)
    rc, ws, ex = ln_phase_one(arena, v((M, N)).handle, [N], v((N,)).handle if weight else None,
                              v((N,)).handle if bias else None,
                              *(o.handle if o else None for o in outs))
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert ws == layer_norm_expected(M, N, weight, bias, *outs)


def test_layer_norm_empty_rows_take_none(arena):
    v = lambda shape: DevView(arena, shape=shape, dtype=np.dtype(np.float32))  # noqa: E731
    rc, ws, ex = ln_phase_one(arena, v((0, 8)).handle, [8], None, None, v((0, 8)).handle,
                              None, None)
    assert rc == OK and ws == 0
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_layer_norm_empty_rows_fill_the_given_statistics(arena):
    """N == 0 with rows: the op_api fills each given mean (0) and rstd (NaN) with
    ProcessEmptyTensorWithValue, a Fill (16 MiB of tiling on Ascend 950) ViewCopy'd into it:
    a contiguous statistic takes the result (on Ascend910A/Ascend310P3 only one whose storage
    ends with its view, else a copy task reads it), a strided one is copied into."""
    def v(shape, kind="contig", slack=3):
        return DevView(arena, shape=shape, dtype=np.dtype(np.float32), kind=kind, slack=slack)
    for mean, rstd, slack in ((True, True, 3), (True, False, 3), (False, False, 3),
                              (True, True, 0)):
        stats = (v((3, 1), slack=slack) if mean else None,
                 v((3, 1), slack=slack) if rstd else None)
        rc, ws, ex = ln_phase_one(arena, v((3, 0)).handle, [0], None, None, v((3, 0)).handle,
                                  *(s and s.handle for s in stats))
        assert rc == OK, last_msg()
        assert lib.aclDestroyAclOpExecutor(ex) == OK
        assert ws == max_allocator(fills_ws(stats))
    v = lambda shape, kind="contig": DevView(arena, shape=shape,  # noqa: E731
                                             dtype=np.dtype(np.float32), kind=kind).handle
    rc, ws, ex = ln_phase_one(arena, v((3, 0)), [0], None, None, v((3, 0)),
                              v((3, 1), "stepped"), None)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert ws == max_allocator(helper_ws(0) + [(3 * 4, 0, 1)]) > 0


def test_layer_norm_short_workspace_refused_and_exact_runs(arena):
    """Off Ascend 950 an absent weight and bias are filled (two N-float tensors): a workspace
    one byte short is refused (161002), NULL with the size 161001, the exact size runs."""
    x = np.linspace(-1, 1, 6 * 40, dtype=np.float32).reshape(6, 40)
    for attempt in ("null", "short", "exact"):
        y = DevView(arena, shape=x.shape, dtype=np.dtype(np.float32))
        rc, ws, ex = ln_phase_one(arena, DevView(arena, x).handle, [40], None, None, y.handle,
                                  None, None)
        assert rc == OK and ws == layer_norm_expected(6, 40, False, False, y, False, False) > 0
        before = live()
        if attempt == "null":
            assert LN_P2(ffi.NULL, ws, ex, arena.stream) == NULLPTR
        elif attempt == "short":
            assert LN_P2(arena.malloc(ws), ws - 1, ex, arena.stream) == INVALID
        else:
            assert LN_P2(arena.malloc(ws), ws, ex, arena.stream) == OK, last_msg()
            assert lib.aclrtSynchronizeStream(arena.stream) == OK
            mu = x.mean(1, keepdims=True)
            ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5)
            np.testing.assert_allclose(y.read(), ref, rtol=1e-5, atol=1e-5)
            continue
        after = live()
        assert after["executors"] == before["executors"] - 1



@only_where(ARCH == 3510)  # Ascend 950's LayerNormV4 templates; its child runs it
@pytest.mark.parametrize("N,kernel_ws", [(10528, 32), (10536, MiB16)],
                         ids=["regbase_two_pass", "welford"])
def test_layer_norm_size_follows_the_950_template(arena, N, kernel_ws):
    """FLOAT input, weight and bias: a row of 10528 still fits regbase_two_pass's UB (32-byte
    tiling workspace), one of 10536 goes to Welford, whose tiling asks for 16 MiB
    (layer_norm_v4_welford_tiling.cpp WELFORD_DEFAULT_WORKSPACE)."""
    v = lambda shape: DevView(arena, shape=shape, dtype=np.dtype(np.float32))  # noqa: E731
    rc, ws, ex = ln_phase_one(arena, v((2, N)).handle, [N], v((N,)).handle, v((N,)).handle,
                              v((2, N)).handle, v((2, 1)).handle, v((2, 1)).handle)
    assert rc == OK, last_msg()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert ws == max_allocator([(kernel_ws, 0, 0)])


test_on_other_parts = run_on_parts(other_parts(), "size or workspace or refused")

