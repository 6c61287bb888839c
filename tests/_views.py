"""The emulator tests' device views: where a view of a shape sits in its storage.

One home for the layouts test_emulator_op.DevView allocates and for the workspace models
(tests/_workspace_model.py) that state the copies such views cost.
"""
from __future__ import annotations

LAYOUTS = ("contig", "transposed", "padded", "stepped")


def layout(shape, kind):
    """(strides, offset) in elements for a view of `shape`: contiguous, dims reversed in
    memory, every dim padded by one plus an offset, or every stride doubled plus an offset."""
    nd = len(shape)
    if kind == "transposed":
        strides, s = [0] * nd, 1
        for i in range(nd):
            strides[i] = s
            s *= max(shape[i], 1)
        return strides, 0
    pad = 1 if kind == "padded" else 0
    strides, s = [0] * nd, 1
    for i in reversed(range(nd)):
        strides[i] = s
        s *= max(shape[i], 1) + pad
    if kind == "stepped":
        return [2 * x for x in strides], 1
    return strides, (5 if kind == "padded" else 0)


def view_extent(shape, kind, slack=3):
    """A DevView's (strides, offset, storage elements) for `shape` laid out as `kind`: the
    view's span and `slack` elements after it (3 by default, to catch overruns; 0 for a
    storage ending where the view does, which Ascend910A's and Ascend310P3's ViewCopy
    needs to hand a result over: _workspace_model.takes_over)."""
    strides, offset = layout(shape, kind)
    empty = any(d == 0 for d in shape)
    span = 0 if empty else sum((d - 1) * s for d, s in zip(shape, strides)) + 1
    return strides, offset, offset + span + slack
