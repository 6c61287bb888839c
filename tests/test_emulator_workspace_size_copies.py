"""Phase one's workspace size for strided inputs and outputs: the copy kernels every operator's
l0op::Contiguous and l0op::ViewCopy launch (hicann/ops-math conversion/contiguous/op_host/
op_api/contiguous.cpp; emulator/src/ops/exec_workspace.h ew_contiguous_copy, ew_copy_out).

The expected sizes are stated here from the vendor's rules (tests/_workspace_model.py:
contiguous_chain restates CanOptimizeContiguous's choice among Slice, StridedSlice, Transpose,
BroadcastTo and AsStrided, copy_in the chain's graph, copy_out_ws ViewCopy's Transpose or
ViewCopy kernel; the arch35 tilings' workspaces on Ascend 950, none elsewhere), through
aclnnAdds (a FLOAT self with alpha 2: an Axpy on every part, after l0op::Contiguous of a
strided self, aclnn_add.cpp) and aclnnAdd (a BOOL self cast to FLOAT first). Then phase two
with the workspace NULL (161001), one byte short (161002), and exact (runs, right numbers).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_aclnn import workspace_attempt
from _part_runs import other_parts, run_on_parts
from _workspace_model import (ARCH, SOC, MiB16, align, cast_ws, contiguous_chain, copy_in,
                              copy_out_ws, handed_over, helper_ws, max_allocator)
from test_emulator_op import OK, last_msg, no_leaks, stream  # noqa: F401
from test_emulator_add import arena, get, out_tensor, put, put_view, scalar  # noqa: F401

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw calls against the emulator's rules")

ACL_FLOAT = 0

# (shape, strides, offset, storage elements) of a strided self, by the chain it takes
VIEWS = {
    "slice": ((4, 6), (8, 1), 2, 40),                 # rows of a [5, 8] block
    "slice_1d": ((10,), (3,), 0, 30),                 # seen as [10, 1] of a [10, 3] block
    "strided_slice": ((4, 6), (12, 2), 1, 49),        # every other column, gaps of 12
    "transpose": ((4, 6), (1, 4), 0, 24),
    "slice_transpose": ((4, 6), (1, 8), 0, 48),
    "broadcast": ((4, 6), (0, 1), 0, 6),
    "transpose_broadcast": ((3, 4, 6), (0, 1, 4), 0, 24),
    "unit_broadcast": ((1, 4, 6), (0, 1, 4), 0, 24),  # a 0 stride on a dim of 1 counts
    "overlapping": ((4, 6), (2, 1), 0, 12),           # AsStrided
    "slice_transpose_64": ((2, 3, 64), (64, 256, 1), 0, 768),  # AsStrided for speed
    "padded_short_storage": ((4, 6), (7, 1), 5, 35),  # Slice would leave the storage
}
CHAINS = {
    "slice": ["Slice"], "slice_1d": ["Slice"], "strided_slice": ["StridedSlice"],
    "transpose": ["Transpose"], "slice_transpose": ["Slice", "Transpose"],
    "broadcast": ["BroadcastTo"], "transpose_broadcast": ["Transpose", "BroadcastTo"],
    "unit_broadcast": ["Transpose", "BroadcastTo"], "overlapping": ["AsStrided"],
    "slice_transpose_64": ["AsStrided"], "padded_short_storage": ["AsStrided"],
}


def view(arena, values, shape, strides, offset, storage):
    """A device view of ``shape``/``strides`` from ``offset`` in ``storage`` elements holding
    ``values`` and the values it reads (the last written where elements share storage)."""
    t = put_view(arena, np.broadcast_to(values, shape), strides, offset, storage)
    return t, get(arena, t)


def adds_phase_one(arena, a, out):
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    two = scalar(arena, 2.0, ACL_FLOAT)
    assert lib.aclnnAddsGetWorkspaceSize(a.handle, two, two, out.handle, ws, ex) == OK, \
        last_msg()
    return ws[0], ex[0]


def adds_expected(name, out):
    """The chain's graph, then the Axpy (16 MiB on Ascend 950) reading its result, the Axpy's
    result ViewCopy'd into the contiguous ``out`` (_workspace_model.handed_over)."""
    shape, strides, offset, storage = VIEWS[name]
    graph, k = copy_in(0, shape, strides, offset, storage, 4, "FLOAT")
    return max_allocator(graph + helper_ws(k) + handed_over(math.prod(shape) * 4, k, out)[0])


def exact_out(arena, shape, dtype, offset=0):
    """A contiguous out whose storage ends where its view does (``offset`` elements before
    it): ViewCopy hands a workspace result over to it on every part."""
    n = math.prod(shape)
    return put_view(arena, np.zeros(shape, dtype), [math.prod(shape[i + 1:]) for i in
                                                    range(len(shape))], offset, offset + n)


@pytest.mark.parametrize("name", list(VIEWS))
def test_chain_rule(name):
    """The restated rule picks each view's chain (the cases' own check)."""
    assert contiguous_chain(*VIEWS[name]) == CHAINS[name]


def adds_size(arena, name, out=None):
    """Phase one's size for Adds of VIEWS[name] into ``out`` (default: one that takes the
    result over on every part, so only the copies in differ)."""
    shape, strides, offset, storage = VIEWS[name]
    a, _ = view(arena, np.ones(shape, np.float32), shape, strides, offset, storage)
    ws, ex = adds_phase_one(arena, a, exact_out(arena, shape, np.float32) if out is None
                            else out)
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    return ws


@pytest.mark.parametrize("name", list(VIEWS))
def test_copy_in_size(arena, name):
    """Each step's result alive until the next step reads it; on Ascend 950 each kernel's
    arch35 tiling workspace during its own launch."""
    shape = VIEWS[name][0]
    for out in (exact_out(arena, shape, np.float32), out_tensor(arena, shape, np.float32)):
        assert adds_size(arena, name, out) == adds_expected(name, out)


def test_two_step_chain_size_holds_two_copies(arena):
    """Slice then Transpose holds two copies of the view at once (the Slice's result until the
    Transpose has read it), where one AsStrided holds one: a second bucket, on every part;
    on Ascend 950 the third kernel's 16 MiB lands beside the Slice's result, a second 16 MiB
    bucket (MaxAllocator's last fitting bucket), in place of the Slice's 512 bytes."""
    one, two = adds_size(arena, "overlapping"), adds_size(arena, "slice_transpose")
    assert two - one == (align(MiB16) if ARCH == 3510 else align(4 * 6 * 4))


def test_ai_cpu_broadcast_size_takes_no_tiling(arena):
    """An INT16 broadcast view: Ascend 950's BroadcastTo lacks INT16 (its regbase AI Core list),
    so the AI CPU kernel runs (no tiling workspace); the INT16 Add is AI CPU too. Only the
    broadcast result, alive until the Add, on every part."""
    shape, strides, offset, storage = VIEWS["broadcast"]
    a, _ = view(arena, np.ones(shape, np.int16), shape, strides, offset, storage)
    out = out_tensor(arena, shape, np.int16)
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    one = scalar(arena, 1, 3)
    assert lib.aclnnAddsGetWorkspaceSize(a.handle, one, one, out.handle, ws, ex) == OK, \
        last_msg()
    assert lib.aclDestroyAclOpExecutor(ex[0]) == OK
    graph, _ = copy_in(0, shape, strides, offset, storage, 2, "INT16")
    assert graph == [(24 * 2, 0, 1)]
    assert ws[0] == max_allocator(graph + handed_over(24 * 2, 1, out)[0])


def add_bool_expected(shape, strides, offset, storage, out):
    """aclnnAdd(BOOL broadcast self, FLOAT other, alpha 1): the BOOL chain (Cast to INT32,
    BroadcastTo, Cast back), the Cast of its result to FLOAT, then the Add (16 MiB on
    Ascend 950) whose result is ViewCopy'd into ``out``."""
    graph, k = copy_in(0, shape, strides, offset, storage, 1, "BOOL")
    n = math.prod(shape)
    return max_allocator(graph + cast_ws(k, "BOOL", "FLOAT") + [(n * 4, k, k + 1)] +
                         helper_ws(k + 1) + handed_over(n * 4, k + 1, out)[0])


def add_bool_phase_one(arena, a, b, out):
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    alpha = scalar(arena, 1.0, ACL_FLOAT)
    assert lib.aclnnAddGetWorkspaceSize(a.handle, b.handle, alpha, out.handle, ws, ex) == OK, \
        last_msg()
    return ws[0], ex[0]


def test_bool_broadcast_size(arena):
    """A BOOL broadcast runs as three kernels, each result alive until the next reads it."""
    shape, strides, offset, storage = VIEWS["transpose_broadcast"]
    a, _ = view(arena, np.ones(shape, np.bool_), shape, strides, offset, storage)
    b = put(arena, np.ones(shape, np.float32))
    out = out_tensor(arena, shape, np.float32)
    ws, ex = add_bool_phase_one(arena, a, b, out)
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert ws == add_bool_expected(shape, strides, offset, storage, out)


@pytest.mark.parametrize("out_strides,kernel", [((1, 4), "Transpose"), ((12, 2), "ViewCopy")],
                         ids=["transposed", "stepped"])
def test_copy_out_size(arena, out_strides, kernel):
    """A strided out: the Axpy's result stays until the kernel writing out reads it; that
    kernel is Transpose for a permuted contiguous out (16 MiB on Ascend 950), else ViewCopy
    (32 bytes on Ascend 950, 512 to the allocator)."""
    shape = (4, 6)
    a = put(arena, np.ones(shape, np.float32))
    out, _ = view(arena, np.zeros(shape, np.float32), shape, out_strides, 1, 60)
    ws, ex = adds_phase_one(arena, a, out)
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    want = copy_out_ws(1, shape, out_strides)
    assert [w[0] for w in want] == ([] if ARCH != 3510 else
                                     [MiB16 if kernel == "Transpose" else 32])
    assert ws == max_allocator(helper_ws(0) + [(24 * 4, 0, 1)] + want)


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
@pytest.mark.parametrize("name", ["slice_transpose", "strided_slice", "transpose_broadcast",
                                  "overlapping"])
def test_workspace_checked_then_runs(arena, name, attempt):
    """The size phase one reports is the size phase two checks: NULL refused (161001), one
    byte short refused (161002), the executor released and nothing leaked; the exact size
    runs and gives self + 2 x 2 from the view's own elements."""
    shape, strides, offset, storage = VIEWS[name]
    vals = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) / 4 - 2
    if 0 in strides:
        vals = np.broadcast_to(vals[:1], shape)
    a, seen = view(arena, vals, shape, strides, offset, storage)
    out = out_tensor(arena, shape, np.float32)
    ws, ex = adds_phase_one(arena, a, out)
    assert ws == adds_expected(name, out) > 0
    if workspace_attempt(arena, lib.aclnnAdds, ex, ws, attempt):
        np.testing.assert_array_equal(get(arena, out), seen + np.float32(4))


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_bool_broadcast_checked_then_runs(arena, attempt):
    shape, strides, offset, storage = VIEWS["transpose_broadcast"]
    bools = np.broadcast_to((np.arange(24).reshape(4, 6) % 3 == 0), shape)
    a, seen = view(arena, bools, shape, strides, offset, storage)
    other = np.linspace(-1, 1, math.prod(shape), dtype=np.float32).reshape(shape)
    b = put(arena, other)
    out = out_tensor(arena, shape, np.float32)
    ws, ex = add_bool_phase_one(arena, a, b, out)
    assert ws == add_bool_expected(shape, strides, offset, storage, out) > 0
    if workspace_attempt(arena, lib.aclnnAdd, ex, ws, attempt):
        np.testing.assert_array_equal(get(arena, out), seen.astype(np.float32) + other)


@pytest.mark.parametrize("attempt", ["null", "short", "exact"])
def test_copy_out_checked_then_runs(arena, attempt):
    shape, out_strides = (4, 6), (1, 4)
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(shape)
    a = put(arena, x)
    out, _ = view(arena, np.zeros(shape, np.float32), shape, out_strides, 1, 60)
    ws, ex = adds_phase_one(arena, a, out)
    assert ws == max_allocator(helper_ws(0) + [(24 * 4, 0, 1)] +
                               copy_out_ws(1, shape, out_strides)) > 0
    if workspace_attempt(arena, lib.aclnnAdds, ex, ws, attempt):
        np.testing.assert_array_equal(get(arena, out), x + np.float32(4))


# (offset, elements of storage after the view) of a contiguous out
OUT_FITS = {"exact": (0, 0), "exact-offset": (3, 0), "slack": (0, 1), "offset-slack": (3, 2)}


@pytest.mark.parametrize("attempt", ["null", "exact"])
@pytest.mark.parametrize("fit", list(OUT_FITS))
def test_contiguous_out_takes_the_result_only_where_its_storage_ends(arena, fit, attempt):
    """Adds of FLOAT into a FLOAT16 out: the Axpy's result, cast (its Cast kernel 1), then
    ViewCopy'd into out. The Atlas training and inference parts (Ascend910A, Ascend310P3)
    lack move align, so out takes the Cast's result over only when its storage holds just its
    offset and view; with elements after the view a copy task (kernel 2) reads the result,
    which stays in the workspace beside the Axpy's: a second 512-byte bucket there. The other
    parts always take it over. The exact size runs: out's view gets the sum, the rest of its
    storage is untouched."""
    shape, (offset, slack) = (4, 6), OUT_FITS[fit]
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(shape)
    a = put(arena, x)
    out = put_view(arena, np.zeros(shape, np.float16), [6, 1], offset, offset + 24 + slack)
    ws, ex = adds_phase_one(arena, a, out)
    copied = slack > 0 and SOC in ("Ascend910A", "Ascend310P3")
    assert ws == max_allocator(helper_ws(0) + [(24 * 4, 0, 1)] + cast_ws(1) +
                               ([(24 * 2, 1, 2)] if copied else [])) > 0
    if ARCH != 3510:  # no tiling workspaces: the copy's bucket is the whole difference
        assert ws == align(24 * 4) * (2 if copied else 1)
    if workspace_attempt(arena, lib.aclnnAdds, ex, ws, attempt):
        np.testing.assert_array_equal(get(arena, out), (x + np.float32(4)).astype(np.float16))
        storage = np.empty_like(out.storage)
        arena.d2h(storage, out.ptr)
        outside = np.ones(storage.size, bool)
        outside[offset:offset + 24] = False
        assert not storage[outside].any(), "written outside out's view"


test_on_other_parts = run_on_parts(other_parts(), "size or runs")
