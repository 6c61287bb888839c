"""The vendor's rules for phase one's workspace size, stated independently of the emulator's
code, for the workspace-size tests of every operator.

opbase's MaxAllocator (hicann/opbase src/nnopbase/composite_op/mem_mgr/memory_allocator.cpp)
places every tensor of the op_api's kernel graph that lives in the workspace: each kernel's
tiling workspaces (alive during that kernel) and each executor-allocated L0 output (alive
from its kernel to its last reader). Each takes its size + 32 bytes rounded up to 512; the
tensors of one kernel never share memory; the size is the sum of the buckets.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from acl_py.raw import ffi, lib

from _views import view_extent

MiB16 = 16 * 1024 * 1024
SOC = ffi.string(lib.aclrtGetSocName()).decode()
CORES = ctypes.CDLL(str(lib.backend.libraries["ascendcl"])).aclemu_soc_vector_cores()
# the part's NPU architecture, by its name (the emulator's runtime/soc.c table)
ARCH = (3510 if SOC.startswith("Ascend950") else 2002 if SOC.startswith("Ascend310P")
        else 1001 if SOC.startswith(("Ascend910A", "Ascend910Pro", "Ascend910Prem"))
        or SOC == "Ascend910B" else 2201)
# platform_ascendc's GetLibApiWorkSpaceSize (asc-devkit impl/utils/tiling/platform/
# platform_ascendc.cpp): 16 MiB on DAV_2201 and DAV_3510, 2 MiB on the other architectures.
LIB_API_WORKSPACE = MiB16 if ARCH in (2201, 3510) else 2 * 1024 * 1024


def align(nbytes):
    return (nbytes + 32 + 511) // 512 * 512


def ceil_to(n, k):
    return -(-n // k) * k


def max_allocator(tensors):
    """opbase's MaxAllocator over (bytes, first kernel, last kernel) in graph order: a tensor
    joins the last bucket whose latest tenant's lifetime is apart from its own (never one of
    the same kernel), else opens one; buckets are as large as their largest tenant."""
    buckets = []  # [size, (start, end) of the latest tenant]
    for nbytes, start, end in tensors:
        fits = [b for b in buckets if b[1][0] != start and
                (b[1][1] < start if start > b[1][0] else end < b[1][0])]
        if fits:
            fits[-1][0] = max(fits[-1][0], align(nbytes))
            fits[-1][1] = (start, end)
        else:
            buckets.append([align(nbytes), (start, end)])
    return sum(b[0] for b in buckets)


# The helper kernels' own tilings are public only for Ascend 950 (ops-math's op_host/arch35
# directories): its Cast (on AI Core; math/cast/op_host/arch35/cast_tiling.cpp), Fill
# (conversion/fill/op_host/arch35/fill_tiling_arch35.cpp) and OnesLike (math/ones_like/op_host/
# arch35/ones_like_tiling_arch35.cpp) ask 16 MiB each, its ZerosLike 0 bytes (math/zero_op/
# op_host/arch35/zeros_like_tiling_arch35.cpp), still a {0}-shaped tensor for the allocator.
# On the other parts they are TBE kernels: none public, none counted.
def helper_ws(kernel, nbytes=MiB16):
    """Helper kernel ``kernel``'s tiling workspace as graph entries (Ascend 950 only)."""
    return [(nbytes, kernel, kernel)] if ARCH == 3510 else []


# The one cast pair these tests reach that Ascend 950 runs on AI CPU (absent from cast.cpp's
# regbase AI Core list), whose memory is not the executor's workspace: none. Every other pair
# they cast is on AI Core.
CAST_ON_AICPU_950 = {("INT16", "DOUBLE")}


def cast_ws(kernel, src="FLOAT", dst="FLOAT16"):
    """A Cast kernel's tiling workspace as graph entries."""
    return [] if (src, dst) in CAST_ON_AICPU_950 else helper_ws(kernel)


# ---- The copy kernels (ops-math conversion/contiguous/op_host/op_api/contiguous.cpp) ----------
# l0op::Contiguous copies a strided view by Slice or StridedSlice, then Transpose, then
# BroadcastTo (each where the view needs it: CanOptimizeContiguous), else by one AsStrided;
# l0op::ViewCopy writes a contiguous result into a strided output by Transpose (a permuted
# contiguous layout: CanOptimizeView) or ViewCopy. Every step's result is executor-allocated.
# Their arch35 tilings (Ascend 950): Slice/StridedSlice 16 MiB (strided_slice_tiling_arch35.h
# WORK_SPACE_SIZE), Transpose 16 MiB (transpose_tiling_arch35.h), BroadcastTo 16 MiB
# (broadcast_to_tiling_base.h kSyncWorkSpaceSize), AsStrided usrSize 0 + 16 MiB
# (as_strided_tiling_arch35.cpp), ViewCopy 32 bytes (view_copy_tiling_arch35.cpp). A dtype off
# the kernel's regbase AI Core list (its op_api/*.cpp) runs on AI CPU: none.
_COMMON = {"FLOAT", "FLOAT16", "BF16", "INT8", "INT32", "INT64", "UINT8", "UINT32", "BOOL"}
_WIDE = _COMMON | {"INT16", "UINT16", "UINT64"}
COPY_KERNEL_950 = {  # kernel: (AI Core dtypes among those the tests use, workspace bytes)
    "Slice": (_WIDE, MiB16), "StridedSlice": (_WIDE | {"COMPLEX64"}, MiB16),
    "Transpose": (_WIDE, MiB16), "BroadcastTo": (_COMMON, MiB16),
    "AsStrided": (_WIDE | {"COMPLEX64"}, MiB16), "ViewCopy": (_WIDE, 32),
}
# CanOptimizeAsStridedContiguous's white list: (shape, strides) sent to AsStrided for speed
_AS_STRIDED_LIST = [((4, 288, 2, 2, 240, 240), (67046400, 230400, 480, 1, 960, 2)),
                    ((4, 512, 2, 2, 120, 120), (33177600, 57600, 240, 1, 480, 2)),
                    ((4, 10, 32, 128), (122880, 128, 3840, 1))]


def copy_kernel_ws(kernel, name, dtype="FLOAT"):
    """Copy kernel ``name``'s tiling workspace as graph entries (Ascend 950, AI Core only)."""
    dtypes, nbytes = COPY_KERNEL_950[name]
    return helper_ws(kernel, nbytes) if dtype in dtypes else []


def _row_major(axes):
    """Whether (stride, size) pairs, outermost first, are row-major: contiguous.cpp's
    IsContiguous over its stride-index pairs."""
    want = 1
    for s, d in reversed(axes):
        if s != want:
            return False
        want *= d
    return True


def contiguous_chain(shape, strides, offset, storage):
    """CanOptimizeContiguous's kernels for a non-contiguous view, in launch order."""
    axes = [(s, d) for s, d in zip(strides, shape) if s != 0 and d != 1]
    broadcast = 0 in strides
    rising = any(a[0] < b[0] for a, b in zip(axes, axes[1:]))
    if (tuple(d for _, d in axes), tuple(s for s, _ in axes)) in _AS_STRIDED_LIST:
        return ["AsStrided"]
    tail = ["BroadcastTo"] if broadcast else []
    if broadcast and _row_major(axes):
        return tail
    if rising:
        # descending by (stride, rank), as std::sort over reverse iterators of the pairs
        axes = [a for _, a in sorted(enumerate(axes), key=lambda e: (e[1][0], e[0]),
                                     reverse=True)]
        tail = ["Transpose"] + tail
        if _row_major(axes):
            return tail
    if len(axes) == 1:
        axes.append((1, 1))
    st, sh = [s for s, _ in axes], [d for _, d in axes]
    if any(st[i - 1] < st[i] * (sh[i] - 1) for i in range(1, len(st))):
        return ["AsStrided"]  # overlapping elements
    if st[-1] == 1 and all(st[i - 1] % st[i] == 0 for i in range(1, len(st))):
        # Slice: the source's dims from the stride ratios, the first from the storage
        src = [st[i - 1] // st[i] for i in range(1, len(st))]
        src.insert(0, storage // math.prod(src))
        off, fits = offset, True
        for s, d, n in zip(st, sh, src):
            fits &= n >= off // s + d
            off %= s
        if not fits or (rising and strides[-1] == 1 and shape[-1] % 64 == 0):
            return ["AsStrided"]
        return ["Slice"] + tail
    g = math.gcd(*st[:-1])
    if g <= 1 or g < st[-1] * sh[-1]:
        return ["AsStrided"]
    # StridedSlice: source strides 1, g, g x src, ...; a target stride a multiple of each
    sst, src = [1], [g]
    for s in reversed(st[:-2]):
        sst.insert(0, sst[0] * src[0])
        src.insert(0, s // sst[0])
    sst.insert(0, sst[0] * src[0])
    src.insert(0, storage // sst[0])
    off = offset
    for s, d, n, ss in zip(st, sh, src, sst):
        begin, step = off // ss, s // ss
        off %= ss
        if s % ss or n < begin or (d - 1) * step + begin >= n or n < d:
            return ["AsStrided"]
    return ["StridedSlice"] + tail


def copy_in(k, shape, strides, offset, storage, itemsize, dtype="FLOAT", reader=None):
    """l0op::Contiguous of a caller's non-contiguous view as kernels k, k + 1, ...: each
    result alive until the next step, the last until ``reader`` (None: the kernel after the
    chain; False: none yet, a graph builder's reads extend it). A BOOL broadcast runs as Cast
    to INT32, BroadcastTo, Cast back. Returns (graph entries, the next free kernel)."""
    n = math.prod(shape)
    m = math.prod(d for d, s in zip(shape, strides) if s)  # the elements before a broadcast
    steps = []  # (kernel name or a cast pair, output bytes)
    for name in contiguous_chain(shape, strides, offset, storage):
        size = (n if name in ("AsStrided", "BroadcastTo") else m) * itemsize
        if name == "BroadcastTo" and dtype == "BOOL":
            steps += [(("BOOL", "INT32"), m * 4), ("BroadcastTo", n * 4),
                      (("INT32", "BOOL"), n)]
        else:
            steps.append((name, size))
    end = reader if reader is not None and reader is not False else \
        k + len(steps) - (reader is False)
    graph = []
    for i, (name, size) in enumerate(steps):
        if isinstance(name, tuple):
            graph += cast_ws(k + i, *name)
        else:
            graph += copy_kernel_ws(k + i, name, "INT32" if name == "BroadcastTo" and
                                    dtype == "BOOL" else dtype)
        graph.append((size, k + i, k + i + 1 if i + 1 < len(steps) else end))
    return graph, k + len(steps)


def copy_out_ws(kernel, shape, strides, dtype="FLOAT"):
    """l0op::ViewCopy into a caller's non-contiguous output: kernel ``kernel`` is Transpose
    when the output is a permuted contiguous layout (no 0 stride), else ViewCopy; its tiling
    workspace as graph entries."""
    axes = sorted(((s, d) for s, d in zip(strides, shape) if s and d != 1), reverse=True)
    permuted = 0 not in strides and _row_major(axes)
    return copy_kernel_ws(kernel, "Transpose" if permuted else "ViewCopy", dtype)


_DTYPE_NAMES = {"float32": "FLOAT", "float16": "FLOAT16", "bfloat16": "BF16", "float64": "DOUBLE",
                "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
                "uint8": "UINT8", "bool": "BOOL"}


def copy_view_in(k, v, reader=None):
    """:func:`copy_in` of a test's device view ``v`` (shape, strides, offset, n storage
    elements, dtype: test_emulator_op.DevView)."""
    return copy_in(k, v.shape, v.strides, v.offset, v.n, v.dtype.itemsize,
                   _DTYPE_NAMES[v.dtype.name], reader)


def copy_kind_in(k, shape, kind, dtype, reader=None):
    """:func:`copy_in` of a DevView of ``shape`` laid out as ``kind`` (_views
    view_extent) with NumPy ``dtype``; none for a contiguous one: ([], k)."""
    strides, offset, n = view_extent(shape, kind)
    if is_contiguous(shape, strides):
        return [], k
    dtype = np.dtype(dtype)
    return copy_in(k, shape, strides, offset, n, dtype.itemsize, _DTYPE_NAMES[dtype.name],
                   reader)


def copy_kind_out_ws(k, shape, kind, dtype):
    """:func:`copy_out_ws` of a DevView of ``shape`` laid out as ``kind``."""
    return copy_out_ws(k, shape, view_extent(shape, kind)[0], _DTYPE_NAMES[np.dtype(dtype).name])


def copies_in(views, k=0):
    """The copies of ``views`` in turn from kernel ``k``, every result read by the kernel
    after the last copy: (graph entries, that kernel)."""
    reader = k
    for v in views:
        reader = copy_view_in(reader, v)[1]
    graph = []
    for v in views:
        entries, k = copy_view_in(k, v, reader)
        graph += entries
    return graph, reader


def copy_view_out_ws(k, v):
    """:func:`copy_out_ws` of a test's device view ``v``."""
    return copy_out_ws(k, v.shape, v.strides, _DTYPE_NAMES[v.dtype.name])


def is_contiguous(shape, strides):
    """opbase tensor_view_utils.cpp IsContiguous: at most one element, else row-major strides
    over the dims other than 1 (l0op::Contiguous and ViewCopy launch nothing then)."""
    return math.prod(shape) <= 1 or \
        _row_major([(s, d) for s, d in zip(strides, shape) if d != 1])


def takes_over(shape, offset, storage):
    """Whether l0op::ViewCopy hands a workspace result over to a contiguous caller's tensor
    of view ``shape`` after ``offset`` elements of a ``storage``-element storage (ops-math
    conversion/contiguous/op_host/op_api/contiguous.cpp): always where SupportMoveAlign holds,
    i.e. off SocVersions ASCEND910 (Ascend910A) and ASCEND310P (Ascend310P3); on those only
    when the storage ends where the view does (storage == view elements + offset), else
    op::CopyNpuToNpu, a copy task of no workspace, reads the result, which stays until then."""
    return ARCH not in (1001, 2002) or storage == math.prod(shape) + offset


def view_takes_over(v):
    """:func:`takes_over` of a test's contiguous device view ``v`` (a test_emulator_op DevView,
    3 elements of slack after its view, or a test_emulator_add Dev, 1: on Ascend910A and
    Ascend310P3 neither takes over unless a test sizes its storage to the view)."""
    return takes_over(v.shape, v.offset, v.storage.size)


def handed_over(nbytes, kernel, v, last=None):
    """l0op::ViewCopy of kernel ``kernel``'s ``nbytes`` result into the caller's contiguous
    device view ``v``, after task ``last`` (default ``kernel``): (graph entries, the last
    task). Taken over (:func:`view_takes_over`): none, ``last``; else a copy task after
    ``last`` reads it, the result alive until then."""
    last = kernel if last is None else last
    if view_takes_over(v):
        return [], last
    return [(nbytes, kernel, last + 1)], last + 1


# l0op::TensorMove (ops-math conversion/tensor_move/op_api/tensor_move.cpp): ViewCopy's copy of
# a contiguous tensor that is not the workspace's (a result an earlier ViewCopy handed to a
# caller's tensor) into another contiguous caller's tensor. IsCopyNpuToNpu: a copy task (no
# workspace) up to 400000 bytes on Atlas A2/A3 and Ascend 950, 800000 on Ascend910A, under 32
# on Ascend310P3; else the TensorMove kernel, whose arch35 tiling asks 32 bytes on Ascend 950
# (op_host/arch35/tensor_move_tiling_arch35.cpp) for its regbase AI Core dtypes (the rest run
# on AI CPU: none); a TBE kernel elsewhere: none.
TENSOR_MOVE_TASK_LIMIT = {1001: 800000, 2002: 31}.get(ARCH, 400000)
TENSOR_MOVE_950 = _WIDE | {"DOUBLE", "COMPLEX64"}


def tensor_move_ws(kernel, nbytes, dtype="FLOAT"):
    """Task ``kernel``'s workspace when l0op::TensorMove copies ``nbytes`` of ``dtype``
    between two callers' tensors, as graph entries (it reads no workspace tensor)."""
    if nbytes <= TENSOR_MOVE_TASK_LIMIT or dtype not in TENSOR_MOVE_950:
        return []
    return helper_ws(kernel, 32)


def kind_takes_over(shape, kind="contig", slack=3):
    """:func:`takes_over` of a DevView of ``shape`` laid out as ``kind`` with ``slack``."""
    _, offset, n = view_extent(shape, kind, slack)
    return takes_over(shape, offset, n)


def handed_over_all(kernel, results, last=None):
    """:func:`handed_over` of kernel ``kernel``'s results, (bytes, caller's view) in the
    op_api's ViewCopy order, each copy task after the one before: (graph entries, the last
    task)."""
    graph = []
    for nbytes, v in results:
        entries, last = handed_over(nbytes, kernel, v, last)
        graph += entries
    return graph, kernel if last is None else last


def fills_ws(views, k=0):
    """op::ProcessEmptyTensorWithValue into each of ``views`` (DevViews, None: not given) in
    turn from kernel ``k``: a Fill of a non-empty one (its :func:`helper_ws`), handed over
    (:func:`handed_over`); an empty one launches nothing. Returns the graph entries."""
    graph = []
    for v in views:
        if v is not None and math.prod(v.shape):
            graph += helper_ws(k)
            entries, k = handed_over(math.prod(v.shape) * v.dtype.itemsize, k, v)
            graph += entries
            k += 1
    return graph
