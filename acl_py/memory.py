"""Device and pinned host memory: ``DeviceBuffer``, ``HostBuffer``, ``MemoryPool``.

Ownership: a buffer frees its memory on ``close()``, when garbage collected, or at teardown,
whichever comes first. Stream-ordered release: a buffer that work on a stream may still use
(an async copy, a kernel: see ``Stream.mark_used``) is freed only after that stream has
synchronized past the work; until then the memory stays allocated and the wrapper is closed.

Synchronous copies (``copy_from_host``/``copy_to_host``) first synchronize the streams with
pending work on the buffer, and on the HostBuffer when one is the other side (an
asynchronous copy may still write or read it): ``aclrtMemcpy`` is not ordered after stream
work, and reading a result before its kernel ran is the commonest mistake in this kind of
code.

``copy_from`` also takes a buffer of another device once peer access is enabled between the
two (``Device.enable_peer_access``). Queued on a stream (of either device), the copy is
recorded as a use of both buffers on that stream: each is freed, or its pooled block reused
by another stream, only once that stream has passed the copy, whichever device the stream
belongs to.

``MemoryPool`` (per device, stream-ordered like PyTorch's caching allocator and CuPy's pool):
allocations are rounded up to 512 bytes (from 10 MiB up, to 2 MiB: ``block_size``) and
blocks of the same size are reused. A block
released while work on ONE stream may still use it goes back at once to that stream's list:
an allocation for work on the same stream (``stream=``; operators' outputs and workspaces)
takes it immediately, since the stream runs the new work after the old; allocations for other
streams (or for none) take it once that stream has passed the old work. Its new Allocation
carries the old pending use, so a synchronous copy into it still waits for the stream. A block
used by several streams waits for all of them. An operator launch's workspace stays with its
stream for the stream's next launch (``workspace``/``park``: no trip through the lists, no
lock; a larger request swaps it for a larger block); it counts as cached, and
``free_all_blocks()`` returns it too. ``free_all_blocks()`` returns cached blocks to
the runtime (synchronizing the streams that may still use one). A device allocation that
fails with an out-of-memory status first gives back what acl-py holds on the device only for
later (frees deferred to streams nobody synchronized since, every pool's cache: see
``_give_back_held``) and retries once, then raises :class:`DeviceMemoryError`; an unpooled
one retries only if something was given back. Tensor storage and operator workspaces come from the
device's default pool (``Device.memory_pool``); plain ``DeviceBuffer(n)`` is a direct
``aclrtMalloc`` unless ``pool=`` is given. The emulator's live counts include cached blocks.
"""
from __future__ import annotations

import enum
import threading
import weakref
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Sequence

from ._ffi import ffi
from . import _ordering
from . import device as _device
from . import dtypes as _dtypes
from . import runtime as _rt
from . import stream as _stream
from ._buffer_ranges import buffer_to_buffer, check_range, check_rows, extent, row_pitch
from .builtin_tasks import ReduceOp
from . import builtin_tasks as _tasks
from .errors import AclArgumentError, AclTypeError, DeviceMemoryError, make_error
from ._integers import as_size
from ._units import size_text

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import DTypeLike

    from .device import Device, DeviceLike
    from .stream import Stream

_H2D, _D2H, _D2D = 1, 2, 3          # aclrtMemcpyKind
_POLICY = 0                          # ACL_MEM_MALLOC_HUGE_FIRST, as the vendor sample
_OOM = (207001, 200000, 300000)      # out-of-memory statuses: the pool retries after emptying
ROUND = 512
# From LARGE bytes up a block is rounded to ROUND_LARGE instead, as PyTorch's caching allocator
# rounds its large allocations: operator workspaces (16 MiB and more on Atlas A2/A3 and
# Ascend 950) differ by a few KiB from shape to shape, and with exact sizes each new shape
# would cache one more block no later request fits; rounded, one block serves them all.
# At most ROUND_LARGE / LARGE (a fifth) is lost to it.
LARGE = 10 << 20
ROUND_LARGE = 2 << 20


def block_size(nbytes: int) -> int:
    """The size of the pool's block that serves a request of ``nbytes`` (> 0)."""
    size = (nbytes + ROUND - 1) // ROUND * ROUND
    if size >= LARGE:
        size = (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
    return size


class Allocation:
    """One piece of device memory and the stream work that uses it; never references its
    wrapper. For acl-py's modules (``DeviceBuffer.allocation``, ``DeviceTensor.allocation``):
    ``ptr`` (``char *``, ``ffi.NULL`` for 0 bytes, None once freed), ``nbytes``, ``device``,
    ``uses`` (an ``_ordering.Uses``: record launches there with ``uses[stream_state] =
    seq``), ``closed``, ``desc``: None or ``(layout, aclTensor *)``, the descriptor of the
    tensor owning this memory (see ``DeviceTensor.handle``): destroyed before the memory is
    freed; a pooled block keeps it, for the block's next owning tensor of the same layout
    (``aclCreateTensor`` + ``aclDestroyTensor`` per allocation cost about as much as the
    allocation)."""

    __slots__ = ("ptr", "nbytes", "device", "uses", "closed", "pool", "block", "gen", "desc",
                 "__weakref__")
    host = False
    exports = 0

    def __init__(self, ptr, nbytes, device, gen, pool=None, block=0, uses=None, desc=None):
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.uses = _ordering.Uses() if uses is None else uses
        self.closed = False     # wrapper closed (memory may still wait for a stream)
        self.pool = pool        # _PoolState or None
        self.block = block      # pooled block size
        self.gen = gen          # the session of the memory: see Releaser's made_in
        self.desc = desc

    def closed_error(self, what):
        return _rt.closed_error(self.gen, what)


class HostAllocation(Allocation):
    """Pinned host memory (aclrtMallocHost), which NumPy views may export."""

    __slots__ = ("exports",)
    host = True

    def __init__(self, ptr, nbytes, device, gen):
        super().__init__(ptr, nbytes, device, gen)
        self.exports = 0        # live NumPy views of a HostBuffer


def _free_now(st, tl=None, seq=0):
    """Returns the memory to its pool (``tl``/``seq``: its last use, on that stream, may not
    be done: see give_back) or to the runtime. Raises on failure (memory kept)."""
    ptr = st.ptr
    if ptr is None:
        return
    pool = st.pool
    if pool is not None:
        pool.give_back(ptr, st.block, tl, seq, st.desc)
        st.ptr = None
        st.desc = None
        return
    if st.nbytes == 0:
        st.ptr = None
        return
    # No device made current: CANN frees through the driver whatever the thread's device
    # (hicann/runtime api_impl.cc, DevFreeStatic and HostFree), and a release the garbage
    # collector runs inside another operation must not switch that operation's device.
    L = _rt.lib if _rt.ready else _rt.ensure()
    s = L.aclrtFreeHost(ptr) if st.host else L.aclrtFree(ptr)
    if s:
        raise make_error(s, "aclrtFreeHost" if st.host else "aclrtFree")
    st.ptr = None


def destroy_desc(desc):
    """Destroys a tensor descriptor ``(layout, aclTensor *)`` (see Allocation.desc)."""
    s = _rt.lib.aclDestroyTensor(desc[1])
    if s:
        raise make_error(s, "aclDestroyTensor")


def _free_unless_exported(st):
    """Deferred free (see release): host memory with live NumPy views waits for the last."""
    if st.ptr is None or st.exports:
        return
    _free_now(st)


def release(st):
    """Releases an Allocation: its memory goes back at once if no stream work is pending on
    it; a pooled block whose pending work is on one stream only goes back to that stream's
    reuse list at once (later work on that stream runs after it: stream order makes the reuse
    safe); otherwise it is freed once every stream using it has passed that work. Host
    memory with live NumPy views is freed with the last view. Also the releaser of buffers."""
    st.closed = True
    pool = st.pool
    if pool is not None and pool.dead:
        # Its pool is closed: released like unpooled memory (the descriptor first, the
        # memory in stream order); give_back then frees it.
        pool = None
    if pool is None and st.desc is not None:
        # The descriptor first (it needs no stream order: queued work uses the memory only).
        # A pooled block keeps it (give_back).
        try:
            destroy_desc(st.desc)
        except Exception:
            st.closed = _rt.tearing_down    # still owned: close() may be retried (see below)
            raise
        st.desc = None
    if st.ptr is None:
        return
    if st.exports and not _rt.tearing_down:
        _viewed.add(st)     # the last view's finalizer frees it, or the teardown
        return
    tl = None       # the one stream whose work may still use a pooled block, and that work
    seq = 0
    uses = st.uses
    if uses or uses.links:      # a plan's buffer: its runs are in the linked records only
        if pool is not None and len(uses) == 1 and uses.links is None:
            # The usual case (an operator's output or input, used on one stream).
            for tl, seq in uses.items():    # the one entry
                break
            if tl.done >= seq or tl.closed:
                tl = None                   # done: any stream may take the block
                seq = 0
        else:
            pending = uses.pending()
            if pending:
                if pool is None or len(pending) > 1 or uses.links:
                    _ordering.release_after(uses, _free_unless_exported, st,
                                            _rt.ORDER_MEMORY)
                    return
                tl, seq = pending[0]
    try:
        _free_now(st, tl, seq)
    except Exception:
        # Still owned: close() may be retried. Not after the teardown, which gives up after
        # its retry: every object of the session stays closed. (An interrupt is no failure:
        # the memory may be freed already, and stays closed: see Releaser.release.)
        st.closed = _rt.tearing_down
        raise


def _host_source(obj, argument):
    """(cdata pointer, nbytes, keep-alive object, Allocation or None) of a host object."""
    if isinstance(obj, HostBuffer):
        st = obj._live()
        return st.ptr, st.nbytes, obj, st
    try:
        buf = ffi.from_buffer(obj)
    except (TypeError, ValueError, BufferError) as e:
        raise AclTypeError(argument, f"expected a C-contiguous buffer (bytes, bytearray, "
                           f"NumPy array, HostBuffer), got {type(obj).__name__}: {e}") from None
    return buf, len(buf), (obj, buf), None


def _host_dest(obj, argument):
    if isinstance(obj, HostBuffer):
        st = obj._live()
        return st.ptr, st.nbytes, obj, st
    try:
        buf = ffi.from_buffer(obj, require_writable=True)
    except (TypeError, ValueError, BufferError) as e:
        raise AclTypeError(argument, f"expected a writable C-contiguous buffer (bytearray, "
                           f"NumPy array, HostBuffer), got {type(obj).__name__}: {e}") from None
    return buf, len(buf), (obj, buf), None


def _copy_back(job):
    """Deferred part of a staged device-to-host copy: staging -> the user's buffer, ``height``
    rows of ``width`` bytes ``pitch`` apart in both (a plain copy: one row)."""
    staging, dst, width, height, pitch, _keep = job
    try:
        _copy_rows(dst, staging.allocation.ptr, width, height, pitch)
    finally:
        staging.close()


def _copy_rows(dst, src, width, height, pitch):
    """Host memory to host memory: ``height`` rows of ``width`` bytes, ``pitch`` apart at both
    addresses; the bytes between the rows are left as they are."""
    if height == 1 or pitch == width:
        ffi.memmove(dst, src, extent(width, height, pitch))
        return
    import numpy as np
    n = extent(width, height, pitch)

    def rows(p):
        flat = np.frombuffer(ffi.buffer(p, n), dtype=np.uint8)
        return np.lib.stride_tricks.as_strided(flat, (height, width), (pitch, 1))
    rows(dst)[...] = rows(src)


def _wait_pending(st):
    """Synchronizes the streams that have pending work on this allocation."""
    for tl, _seq in st.uses.pending():
        tl.wait_if_open()


def _fill(st, offset, value, count, stream, sync_call, async_call):
    """Fills ``count`` units (bytes or words: the call's) of allocation ``st`` from ``offset``
    with ``value`` through the runtime's ``sync_call``, after the allocation's pending stream
    work, or ``async_call`` queued on ``stream`` (and recorded as a use of ``st``). Both take
    (dst, bytes left from dst, value, count)."""
    if stream is None:
        _wait_pending(st)
        _device.activate(st.device)
        r = getattr(_rt.lib, sync_call)(st.ptr + offset, st.nbytes - offset, value, count)
        if r:
            raise make_error(r, sync_call)
        return
    tl = _stream.state_for(stream, st.device)
    _device.activate(st.device)
    r = tl.enqueue(getattr(_rt.lib, async_call), st.ptr + offset, st.nbytes - offset, value,
                   count)
    if r:
        raise make_error(r, async_call)
    _ordering.record_uses(tl, st)


def _copy_now(st, hst, call, *args):
    """A synchronous copy between allocation ``st`` and host memory (``hst``: its HostBuffer's
    allocation, or None) by the runtime's ``call``, after the streams with pending work on
    either: an asynchronous copy may still be reading or writing them."""
    _wait_pending(st)
    if hst is not None:
        _wait_pending(hst)
    _device.activate(st.device)
    r = getattr(_rt.lib, call)(*args)
    if r:
        raise make_error(r, call)


def _upload(st, sst, p, n, hst, call, submit):
    """Queues on ``sst`` a copy from host memory into allocation ``st``: ``submit(src)``
    enqueues the runtime's ``call`` reading from ``src`` and returns its status. A HostBuffer
    (``hst``: its allocation) is read by the device directly; other memory, the ``n`` bytes
    at ``p``, is first copied into a pinned staging buffer, released in stream order, so it
    may be reused once this returns (from pageable memory the runtime would wait for the
    stream instead of queuing). Both sides are recorded as used by the copy."""
    staging = None
    if hst is None:
        staging = HostBuffer(n, st.device)
        hst = staging.allocation
        ffi.memmove(hst.ptr, p, n)
        p = hst.ptr
    try:
        _device.activate(st.device)
        r = submit(p)
        if r:
            raise make_error(r, call)
        _ordering.record_uses(sst, st, hst)
    except Exception:
        raise
    except BaseException:
        # Interrupted (KeyboardInterrupt), maybe as the enqueue returned: the copy may
        # be queued, so both sides wait for the stream as if it were.
        _ordering.record_uses(sst, st, hst)
        raise
    finally:
        if staging is not None:
            staging.close()          # freed once the stream is past the copy


def _download(st, sst, p, keep, hst, rows, call, submit):
    """Queues on ``sst`` a copy from allocation ``st`` into host memory at ``p``: ``rows``,
    (width, height, pitch), what it writes there (a plain copy: one row); ``submit(dst)``
    enqueues the runtime's ``call`` writing to ``dst`` and returns its status. A HostBuffer
    (``hst``) is written by the device directly; other memory through a pinned staging buffer
    whose rows are copied into it (``keep`` kept alive until then) when the stream is
    synchronized through acl-py: into pageable memory the runtime would wait for the stream
    instead of queuing."""
    staging = None
    if hst is None:
        staging = HostBuffer(extent(*rows), st.device)
        hst = staging.allocation
    try:
        _device.activate(st.device)
        r = submit(hst.ptr if staging is not None else p)
        if r:
            raise make_error(r, call)
    except BaseException as e:
        if not isinstance(e, Exception):
            # Interrupted (KeyboardInterrupt), maybe as the enqueue returned: the copy
            # may be queued, so both sides wait for the stream as if it were.
            _ordering.record_uses(sst, st, hst)
        if staging is not None:
            staging.close()
        raise
    seq = _ordering.record_uses(sst, st, hst)
    if staging is not None:
        sst.defer(seq, _copy_back, (staging, p, *rows, keep))


def _malloc(dev, nbytes, host, pooled=False):
    """``nbytes`` (> 0) from aclrtMalloc, or aclrtMallocHost if ``host``: a ``char *``. A
    device allocation out of memory gives back what acl-py holds there for later
    (``_give_back_held``) and retries once: a pool's always (its cache was emptied), an
    unpooled one if something was given back."""
    L = _rt.ensure()
    _device.activate(dev)
    p = ffi.new("void **")
    s = L.aclrtMallocHost(p, nbytes) if host else L.aclrtMalloc(p, nbytes, _POLICY)
    if s in _OOM and not host and (_give_back_held(dev) or pooled):
        s = L.aclrtMalloc(p, nbytes, _POLICY)
    if s:
        raise _allocation_error(s, "aclrtMallocHost" if host else "aclrtMalloc", nbytes)
    return ffi.cast("char *", p[0])


def _give_back_held(dev):
    """Out of memory on device ``dev``: gives back what acl-py holds there only for later,
    before the allocation is retried. A free deferred to a stream waits for that stream's
    next synchronize, however long ago its work finished; a pool's cached blocks wait for
    the next allocation of their size. So the streams of ``dev`` with deferred work are
    synchronized (their stream-ordered frees run), then every pool of ``dev`` empties its
    cache (synchronizing the streams its blocks wait for), as PyTorch's caching allocator
    does on out-of-memory. Streams of other devices with deferred work are synchronized
    too: a copy between devices queued there may hold a free of memory of ``dev``. Returns
    True if memory may have been freed. Failures are ignored: the allocation's error matters
    more, and each failed free is retried later. Leaves ``dev`` current."""
    freed = False
    for tl in _ordering.timelines():
        if (tl.deferred and not tl.closed and tl.gen == _rt.gen
                and isinstance(tl, _stream.StreamState)):
            try:
                freed = tl.wait_if_open() or freed
            except Exception:   # its deferred work stays queued, or is retried later
                pass
    for pst in list(_pools):
        if pst.device == dev and not pst.dead and pst.gen == _rt.gen:
            held = pst.held
            try:
                pst.free_all()
            except Exception:   # a block that failed to free stays cached
                pass
            freed = freed or pst.held < held
    _device.activate(dev)   # a synchronize above made the stream's device current
    return freed


def _allocation_error(status, call, nbytes):
    """The typed error of a failed allocation, its message ending with the size asked for
    (the runtime's own message may not say it; people read sizes in MiB)."""
    err = make_error(status, call)
    err.message = "; ".join(filter(None, (err.message, f"requested {size_text(nbytes)}")))
    return err


def _copy_error(status, call, dst, src, name="src"):
    """The error of a failed device-to-device copy into device ``dst`` from ``src``: the
    runtime's refusal of a copy between two devices without the peer access acl-py enabled
    (107000) is an :class:`AclArgumentError` naming ``name`` (the caller's argument: ``src``,
    or ``dst`` for ``copy_to_2d``) that says what to call (the runtime's error its cause, its
    status attached). Another refusal is the runtime's typed error."""
    err = make_error(status, call)
    hint = (_device.peer_access_hint(dst, src)
            if dst != src and status == _rt.lib.ACL_ERROR_RT_PARAM_INVALID else None)
    if hint is None:
        return err
    what = (f"a buffer of device {src}, copied to device {dst}" if name == "src" else
            f"a buffer of device {dst}, copied into from device {src}")
    arg = AclArgumentError(name, f"{what}: {hint}")
    arg.refused(err)
    arg.__cause__ = err
    return arg


class _Matrix(NamedTuple):
    """A 2D copy's checked arguments (see ``_matrix``)."""
    width: int
    height: int
    here: Any           # this buffer's address at its offset
    pitch: int
    other: Any          # the other side's address at its offset
    other_pitch: int
    other_alloc: Any    # the other side's Allocation (a DeviceBuffer's, a HostBuffer's) or None
    keep: Any           # what keeps other host memory alive


def _matrix(st, other, side, width, height, other_pitch, pitch, other_offset, offset, stream):
    """The arguments of a 2D copy between allocation ``st`` and ``other`` (``side``: "src" or
    "dst", the argument's name; host memory, writable for "dst", or a DeviceBuffer), checked
    in the order of the signature, each error naming its argument: the sizes, the other
    side, the pitches (``width`` by default, never less), the offsets, the rows inside
    each buffer (this one's named ``height``), a stream for two DeviceBuffers. None when there
    is nothing to copy."""
    width, height = as_size(width, "width"), as_size(height, "height")
    if isinstance(other, DeviceBuffer):
        alloc = other._live()
        p, n, keep = alloc.ptr, alloc.nbytes, None
    else:
        p, n, keep, alloc = (_host_dest if side == "dst" else _host_source)(other, side)
    other_pitch = row_pitch(other_pitch, width, f"{side}_pitch")
    pitch = row_pitch(pitch, width, "pitch")
    other_offset = as_size(other_offset, f"{side}_offset")
    offset = as_size(offset, "offset")
    check_rows(other_offset, width, height, other_pitch, n, side)
    check_rows(offset, width, height, pitch, st.nbytes, "height")
    if isinstance(other, DeviceBuffer) and stream is None:
        raise AclArgumentError("stream", "a 2D copy between device buffers is queued on a "
                               "stream: aclrtMemcpy2d copies only host-to-device or "
                               "device-to-host")
    if width == 0 or height == 0:
        return None
    return _Matrix(width, height, st.ptr + offset, pitch, p + other_offset, other_pitch, alloc,
                   keep)


def _stream_between(dst_device, src_device, stream):
    """The StreamState of ``stream`` for a copy between two devices' buffers: a stream of
    either device runs it (None: the destination device's default stream)."""
    dev = dst_device
    if (src_device != dev and isinstance(stream, _stream.Stream)
            and stream.state.device == src_device):
        dev = src_device    # a stream of the source's device runs it
    return _stream.state_for(stream, dev)


def _memcpy_2d_async(*args):
    """``aclrtMemcpy2dAsync`` with its stream (the last argument, as StreamState.enqueue
    passes it) made explicit: the runtime of the Atlas training and inference parts takes no
    NULL stream for it (stream.explicit_handle)."""
    return _rt.lib.aclrtMemcpy2dAsync(*args[:-1], _stream.explicit_handle(args[-1]))


def _queue_2d_between(dst, dst_ptr, dst_pitch, src, src_ptr, src_pitch, width, height, stream,
                      name):
    """A 2D copy between the allocations of two DeviceBuffers, queued on ``stream`` (of either
    device, ``_stream_between``); recorded as a use of both. ``name``: the caller's argument
    that is the other buffer (errors name it). The part's runtime may take no such copy at
    all (100000, the Atlas training and inference series): an AclArgumentError naming
    ``name`` that says so, not blamed on peer access (enabling it would not help), the
    runtime's error its cause, its status attached."""
    tl = _stream_between(dst.device, src.device, stream)
    r = tl.enqueue(_memcpy_2d_async, dst_ptr, dst_pitch, src_ptr, src_pitch, width,
                   height, _D2D)
    if r == _rt.lib.ACL_ERROR_INVALID_PARAM:
        # acl-py checked the pointers, pitches and kind: the part copies no device memory
        # to device memory in 2D (the runtime's message names it)
        err = make_error(r, "aclrtMemcpy2dAsync")
        arg = AclArgumentError(name, "a DeviceBuffer: this part's runtime takes no "
                               "device-to-device 2D copy (Atlas A2/A3 and Ascend 950 do); "
                               "copy the rows through host memory")
        arg.refused(err)
        raise arg from err
    if r:
        raise _copy_error(r, "aclrtMemcpy2dAsync", dst.device, src.device, name)
    _ordering.record_uses(tl, dst, src)


class MemoryLocation(NamedTuple):
    """Where memory lies (``aclrtPointerGetAttributes``): ``kind`` ``"device"`` (``device``:
    its device id), ``"host"`` (host memory the runtime knows: ``HostBuffer``, a
    ``HostRegistration``), ``"unregistered"`` (other host memory: NumPy arrays, ``malloc``),
    ``"managed"`` or ``"host_numa"``; ``page_size`` in bytes."""
    kind: Literal["host", "device", "unregistered", "managed", "host_numa"]
    device: int | None
    page_size: int


_LOCATION_KINDS = ("host", "device", "unregistered", "managed", "host_numa")


def memory_location(address: int | _Buffer) -> MemoryLocation:
    """Where the memory at ``address`` (an address, or a buffer: its start) lies, as the
    runtime sees it (``aclrtPointerGetAttributes``). An address the runtime refuses (0; on the
    emulator, freed device memory) raises :class:`AclArgumentError` naming ``address``, with
    the runtime's status."""
    if isinstance(address, _Buffer):
        address = address.address
    a = as_size(address, "address")
    if a == 0:
        raise AclArgumentError("address", "is 0 (NULL): no memory there")
    L = _rt.ensure()
    out = ffi.new("aclrtPtrAttributes *")
    st = L.aclrtPointerGetAttributes(ffi.cast("void *", a), out)
    if st:
        err = make_error(st, "aclrtPointerGetAttributes")
        arg = AclArgumentError("address", f"{a:#x}: the runtime knows no memory there")
        arg.refused(err)
        raise arg from err
    t = int(out.location.type)
    # a kind a newer runtime adds is named by its number
    kind: Any = _LOCATION_KINDS[t] if 0 <= t < len(_LOCATION_KINDS) else f"unknown ({t})"
    device = int(out.location.id) if kind == "device" else None
    return MemoryLocation(kind, device, int(out.pageSize))


class _Buffer(_rt.ClosedByReleaser):
    """What DeviceBuffer and HostBuffer share: an Allocation freed by a Releaser.
    ``allocation`` is for acl-py's modules (stream-ordered use records)."""

    __slots__ = ("allocation", "_rel", "__weakref__")

    def _own(self, st):
        self.allocation = st
        self._rel = _rt.Releaser(self, release, (st,), _rt.ORDER_MEMORY, st.gen)
        return self

    def _live(self):
        st = self.allocation
        if st.closed:
            raise st.closed_error(repr(self))
        return st

    @property
    def ptr(self) -> Any:
        return self._live().ptr

    handle = ptr

    @property
    def address(self) -> int:
        return int(ffi.cast("uintptr_t", self._live().ptr))

    @property
    def nbytes(self) -> int:
        return self.allocation.nbytes

    @property
    def location(self) -> MemoryLocation:
        """Where the buffer lies, as the runtime sees it (:func:`memory_location`)."""
        return memory_location(self.address)

    @property
    def closed(self) -> bool:
        return self.allocation.closed

    def __len__(self):
        return self.allocation.nbytes


class DeviceBuffer(_Buffer):
    """``nbytes`` of device memory on ``device`` (default: the current device).

    ``pool=None`` allocates with ``aclrtMalloc``; ``pool=True`` takes the device's default
    pool, or pass a :class:`MemoryPool`. With a pool, ``stream`` names the stream the memory
    is for: the pool may then hand out a block freed on that stream whose work there is not
    done yet (work queued later on the stream runs after it), as stream-ordered allocators do;
    use the buffer on another stream only after synchronizing that one. ``ptr``/``handle`` is
    the device address (a cffi ``char *``), ``address`` the same as an int."""

    __slots__ = ()

    def __init__(self, nbytes: int, device: DeviceLike = None, *,
                 pool: MemoryPool | bool | None = None, stream: Stream | None = None) -> None:
        nbytes = as_size(nbytes, "nbytes")
        dev = _device.resolve_device(device)   # once: it is not free (an int is range-checked)
        if pool is True:
            pst = _default_pool(dev)._pst
        elif pool is not None and pool is not False:
            if not isinstance(pool, MemoryPool):
                raise AclTypeError("pool", f"expected a MemoryPool, True or None, got "
                                   f"{type(pool).__name__}")
            pst = pool._live()
            if device is not None and dev != pst.device:
                raise AclArgumentError("pool", f"the pool serves device {pst.device}, "
                                       f"not device {dev}")
        else:
            if stream is not None:
                _stream.as_stream(stream, dev)   # checked all the same
            _rt.ensure()    # also for 0 bytes: raises after the final finalize()
            made_in = _rt.gen   # before the allocation: see Releaser
            self._own(Allocation(_malloc(dev, nbytes, False) if nbytes else ffi.NULL, nbytes,
                                 dev, made_in))
            return
        tl = None if stream is None else _stream.state_for(stream, pst.device)
        self._own(pst.allocate(nbytes, tl))

    @classmethod
    def adopt(cls, allocation: Allocation, releaser: _rt.Releaser | None = None) -> DeviceBuffer:
        """A DeviceBuffer owning ``allocation`` (from :func:`allocate`): for acl-py's
        modules. ``releaser``: the Releaser of :func:`release` that the allocation's owner so
        far registered (a DeviceTensor that had no buffer object yet); the ownership moves to
        the buffer with it, so the release still runs exactly once."""
        self = object.__new__(cls)
        if releaser is None:
            return self._own(allocation)
        self.allocation = allocation
        self._rel = releaser
        releaser.move_to(self)
        return self

    @property
    def device(self) -> Device:
        return _device.Device(self.allocation.device)

    def close(self) -> None:
        """Releases the memory (after the streams still using it synchronize). Safe to
        repeat."""
        self._rel.release()

    def __repr__(self):
        st = self.allocation
        state = "closed" if st.closed else f"{st.nbytes} bytes"
        return f"<acl_py.DeviceBuffer {state} on device {st.device}>"

    # ---- copies ----

    def copy_from_host(self, src: Any, offset: int = 0) -> None:
        """Copies the bytes of ``src`` (any C-contiguous buffer, or a HostBuffer) to
        ``offset`` bytes into this buffer, synchronously, after the streams using this buffer
        (or the HostBuffer) have finished."""
        st = self._live()
        p, n, _keep, hst = _host_source(src, "src")
        offset = check_range(offset, n, st.nbytes, "src")
        if n:
            _copy_now(st, hst, "aclrtMemcpy", st.ptr + offset, st.nbytes - offset, p, n, _H2D)

    def copy_to_host(self, out: Any = None, offset: int = 0) -> Any:
        """Copies ``len(out)`` bytes from ``offset`` into ``out`` (a writable C-contiguous
        buffer or HostBuffer; default: a new bytearray of the rest of the buffer),
        synchronously, after the streams using this buffer (or the HostBuffer) have finished.
        Returns ``out``."""
        st = self._live()
        if out is None:
            out = bytearray(st.nbytes - check_range(offset, 0, st.nbytes, "offset"))
        p, n, _keep, hst = _host_dest(out, "out")
        offset = check_range(offset, n, st.nbytes, "out")
        if n:
            _copy_now(st, hst, "aclrtMemcpy", p, n, st.ptr + offset, n, _D2H)
        return out

    def copy_from_host_async(self, src: Any, stream: Stream | None = None,
                             offset: int = 0) -> None:
        """Queues a copy of ``src`` into this buffer on ``stream`` (default: the device's
        default stream). Only a copy from pinned memory is queued: from pageable memory
        ``aclrtMemcpyAsync`` waits for the stream and returns once it has copied. So a
        HostBuffer is used as is (zero-copy; it is not freed before the stream has
        synchronized), any other buffer is first copied into a pinned staging buffer
        (released in stream order), so ``src`` may be reused as soon as this returns."""
        st = self._live()
        sst = _stream.state_for(stream, st.device)
        p, n, _keep, hst = _host_source(src, "src")
        offset = check_range(offset, n, st.nbytes, "src")
        if n:
            _upload(st, sst, p, n, hst, "aclrtMemcpyAsync",
                    lambda src: sst.enqueue(_rt.lib.aclrtMemcpyAsync, st.ptr + offset,
                                            st.nbytes - offset, src, n, _H2D))

    def copy_to_host_async(self, out: Any, stream: Stream | None = None,
                           offset: int = 0) -> Any:
        """Queues a copy into ``out`` on ``stream``; ``out`` holds the data once the stream
        has been synchronized through acl-py (``Stream.synchronize``, ``Event.synchronize``,
        ``Device.synchronize``, ``Stream.close``). A HostBuffer ``out`` is written by the
        device directly; any other buffer through a pinned staging buffer that is copied
        into ``out`` (kept alive until then) when that synchronize runs: into pageable
        memory ``aclrtMemcpyAsync`` would wait for the stream instead of queuing."""
        st = self._live()
        sst = _stream.state_for(stream, st.device)
        p, n, keep, hst = _host_dest(out, "out")
        offset = check_range(offset, n, st.nbytes, "out")
        if n:
            _download(st, sst, p, keep, hst, (n, 1, n), "aclrtMemcpyAsync",
                      lambda dst: sst.enqueue(_rt.lib.aclrtMemcpyAsync, dst, n,
                                              st.ptr + offset, n, _D2H))
        return out

    def copy_from(self, src: DeviceBuffer, nbytes: int | None = None, *,
                  stream: Stream | None = None, src_offset: int = 0, offset: int = 0) -> None:
        """Device-to-device copy of ``nbytes`` (default: all of ``src`` from ``src_offset``)
        from another DeviceBuffer; synchronous unless ``stream`` is given. ``src`` may be on
        another device once peer access is enabled between the two
        (``Device(self.device).enable_peer_access(src.device)``); ``stream`` may then be a
        stream of either device (default: this buffer's device's default stream)."""
        if not isinstance(src, DeviceBuffer):
            raise AclTypeError("src", f"expected a DeviceBuffer, got {type(src).__name__}")
        st = self._live()
        sst_src = src._live()
        offset, src_offset, n = buffer_to_buffer(st, sst_src, offset, src_offset, nbytes)
        if n == 0:
            return
        if stream is None:
            _wait_pending(st)
            _wait_pending(sst_src)
            _device.activate(st.device)
            r = _rt.lib.aclrtMemcpy(st.ptr + offset, st.nbytes - offset,
                                    sst_src.ptr + src_offset, n, _D2D)
            if r:
                raise _copy_error(r, "aclrtMemcpy", st.device, sst_src.device)
            return
        tl = _stream_between(st.device, sst_src.device, stream)
        r = tl.enqueue(_rt.lib.aclrtMemcpyAsync, st.ptr + offset, st.nbytes - offset,
                       sst_src.ptr + src_offset, n, _D2D)
        if r:
            raise _copy_error(r, "aclrtMemcpyAsync", st.device, sst_src.device)
        _ordering.record_uses(tl, st, sst_src)

    def copy_from_2d(self, src: Any, width: int, height: int, *,
                     src_pitch: int | None = None, pitch: int | None = None,
                     src_offset: int = 0, offset: int = 0,
                     stream: Stream | None = None) -> None:
        """Copies a matrix of ``height`` rows of ``width`` bytes from ``src``, its rows
        ``src_pitch`` bytes apart from byte ``src_offset``, into this buffer, its rows
        ``pitch`` bytes apart from byte ``offset`` (a pitch defaults to ``width``: rows back to
        back); the bytes between the rows are not touched (``aclrtMemcpy2d``). ``src`` is host
        memory (any C-contiguous buffer, or a HostBuffer) or a DeviceBuffer. Synchronous, after
        the streams using either side have finished, unless ``stream`` is given
        (``aclrtMemcpy2dAsync``): then, as ``copy_from_host_async``, a HostBuffer is read by
        the device directly and other host memory is staged through a pinned buffer, so
        ``src`` may be reused at once. A DeviceBuffer ``src`` needs ``stream`` (the runtime's
        synchronous 2D copy is host-to-device or device-to-host only), a part whose runtime
        copies device-to-device in 2D (Atlas A2/A3, Ascend 950; elsewhere AclArgumentError
        naming ``src``, status 100000) and, on another device, peer access, as ``copy_from``
        (``stream`` may be a stream of either device)."""
        st = self._live()
        c = _matrix(st, src, "src", width, height, src_pitch, pitch, src_offset, offset, stream)
        if c is None:
            return
        if isinstance(src, DeviceBuffer):
            _queue_2d_between(st, c.here, c.pitch, c.other_alloc, c.other, c.other_pitch,
                              c.width, c.height, stream, "src")
        elif stream is None:
            _copy_now(st, c.other_alloc, "aclrtMemcpy2d", c.here, c.pitch, c.other,
                      c.other_pitch, c.width, c.height, _H2D)
        else:
            sst = _stream.state_for(stream, st.device)
            _upload(st, sst, c.other, extent(c.width, c.height, c.other_pitch), c.other_alloc,
                    "aclrtMemcpy2dAsync",
                    lambda src: sst.enqueue(_memcpy_2d_async, c.here, c.pitch, src,
                                            c.other_pitch, c.width, c.height, _H2D))

    def copy_to_2d(self, dst: Any, width: int, height: int, *, dst_pitch: int | None = None,
                   pitch: int | None = None, dst_offset: int = 0, offset: int = 0,
                   stream: Stream | None = None) -> Any:
        """Copies a matrix of ``height`` rows of ``width`` bytes from this buffer, its rows
        ``pitch`` bytes apart from byte ``offset``, into ``dst``, its rows ``dst_pitch`` bytes
        apart from byte ``dst_offset`` (pitches default to ``width``); the bytes between the
        rows are not touched. ``dst`` is writable host memory (a C-contiguous buffer, or a
        HostBuffer) or a DeviceBuffer (as ``dst.copy_from_2d(self, ...)``, errors naming
        ``dst``). Synchronous,
        after the streams using either side have finished, unless ``stream`` is given: then,
        as ``copy_to_host_async``, ``dst`` holds the rows once the stream has been
        synchronized through acl-py (a HostBuffer is written by the device directly, other
        memory through a pinned staging buffer copied into it then). Returns ``dst``."""
        st = self._live()
        c = _matrix(st, dst, "dst", width, height, dst_pitch, pitch, dst_offset, offset, stream)
        if c is None:
            return dst
        if isinstance(dst, DeviceBuffer):
            _queue_2d_between(c.other_alloc, c.other, c.other_pitch, st, c.here, c.pitch,
                              c.width, c.height, stream, "dst")
        elif stream is None:
            _copy_now(st, c.other_alloc, "aclrtMemcpy2d", c.other, c.other_pitch, c.here,
                      c.pitch, c.width, c.height, _D2H)
        else:
            sst = _stream.state_for(stream, st.device)
            _download(st, sst, c.other, c.keep, c.other_alloc,
                      (c.width, c.height, c.other_pitch), "aclrtMemcpy2dAsync",
                      lambda target: sst.enqueue(_memcpy_2d_async, target,
                                                 c.other_pitch, c.here, c.pitch, c.width,
                                                 c.height, _D2H))
        return dst

    def memset(self, value: int = 0, nbytes: int | None = None, *,
               stream: Stream | None = None, offset: int = 0) -> None:
        """Sets ``nbytes`` bytes (default: the rest of the buffer) from ``offset`` to
        ``value`` (0..255); synchronous unless ``stream`` is given."""
        st = self._live()
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
            raise AclArgumentError("value", f"expected a byte value 0..255, got {value!r}")
        offset = check_range(offset, 0, st.nbytes, "offset")
        n = st.nbytes - offset if nbytes is None else as_size(nbytes, "nbytes")
        check_range(offset, n, st.nbytes, "nbytes")
        if n:
            _fill(st, offset, value, n, stream, "aclrtMemset", "aclrtMemsetAsync")

    def memset32(self, value: int, count: int | None = None, *,
                 stream: Stream | None = None, offset: int = 0) -> None:
        """Sets ``count`` 32-bit words (default: as many as fit in the rest of the buffer)
        from byte ``offset`` (a multiple of 4) to ``value`` (0..2**32-1, in the device's
        byte order) (``aclrtMemsetD32``); synchronous unless ``stream`` is given
        (``aclrtMemsetD32Async``)."""
        st = self._live()
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2 ** 32:
            raise AclArgumentError("value", f"expected a 32-bit word 0..2**32-1, got {value!r}")
        offset = check_range(offset, 0, st.nbytes, "offset")
        if offset % 4:
            raise AclArgumentError("offset", f"words start on a multiple of 4 bytes, got "
                                             f"{offset}")
        n = (st.nbytes - offset) // 4 if count is None else as_size(count, "count")
        check_range(offset, 4 * n, st.nbytes, "count")
        if n:
            _fill(st, offset, value, n, stream, "aclrtMemsetD32", "aclrtMemsetD32Async")

    def reduce_from(self, src: DeviceBuffer, op: ReduceOp | str = ReduceOp.SUM,
                    dtype: DTypeLike = "float32", nbytes: int | None = None, *,
                    stream: Stream | None = None, src_offset: int = 0,
                    offset: int = 0) -> None:
        """Reduces ``src`` into this buffer element by element, ``self[i] = op(self[i],
        src[i])`` over ``nbytes`` bytes (default: all of ``src`` from ``src_offset``) of
        ``dtype`` elements, on the device's copy engine (``aclrtReduceAsync``). ``op``: a
        :class:`ReduceOp` or its name (``"sum"``, ``"max"``, ``"min"``). Both buffers must be
        on the same device. Queued on ``stream``; without one, on the device's default stream,
        and waited for. The part decides the dtypes and ops (the Atlas training series:
        float32 sums only; see docs/emulator.md): a refusal raises the runtime's typed error
        (e.g. NotSupportedError, status 207000)."""
        if not isinstance(src, DeviceBuffer):
            raise AclTypeError("src", f"expected a DeviceBuffer, got {type(src).__name__}")
        _tasks.reduce(self._live(), src._live(), op, dtype, nbytes, stream, src_offset, offset)

    def fill_uniform(self, low: float, high: float, dtype: DTypeLike = "float32",
                     count: int | None = None, *, seed: int, counter: DeviceBuffer,
                     stream: Stream | None = None, offset: int = 0) -> None:
        """Fills ``count`` elements of ``dtype`` (default: as many as fit from ``offset``) with
        uniform random numbers between ``low`` and ``high`` on the device's random number
        engine (``aclrtRandomNumAsync``; Atlas A2/A3 parts only). ``dtype``: float32,
        float16, bfloat16, int32, int64, uint32 or uint64. ``seed`` (0..2**64-1) keys the
        generator and ``counter`` (a DeviceBuffer, its first 16 bytes) holds its 128-bit
        counter, read when the task runs. Queued on ``stream``; without one, on the device's
        default stream, and waited for. The emulator's numbers follow the distribution, not
        the device's bit stream (docs/emulator.md)."""
        self._fill_random(_tasks.UNIFORM, dtype, count, (("low", low), ("high", high)), seed,
                          counter, stream, offset)

    def fill_normal(self, mean: float = 0.0, std: float = 1.0, dtype: DTypeLike = "float32",
                    count: int | None = None, *, truncated: bool = False, seed: int,
                    counter: DeviceBuffer, stream: Stream | None = None,
                    offset: int = 0) -> None:
        """Fills ``count`` elements of ``dtype`` (float32, float16 or bfloat16) with normal
        random numbers of ``mean`` and standard deviation ``std``; ``truncated``: within two
        standard deviations of the mean (the emulator redraws beyond them). Otherwise as
        :meth:`fill_uniform`."""
        func = _tasks.TRUNCATED_NORMAL if truncated else _tasks.NORMAL
        self._fill_random(func, dtype, count, (("mean", mean), ("std", std)), seed, counter,
                          stream, offset)

    def fill_dropout_mask(self, ratio: float, bits: int | None = None, *, seed: int,
                          counter: DeviceBuffer, ratio_dtype: DTypeLike = "float32",
                          stream: Stream | None = None, offset: int = 0) -> None:
        """Fills ``bits`` bits (default: every bit from ``offset``) with a dropout bitmask: a
        bit is 0 (its element dropped) with probability ``ratio`` (0..1, given to the engine
        as ``ratio_dtype``: float32, float16 or bfloat16); ``(bits + 7) // 8`` bytes are
        written. Otherwise as :meth:`fill_uniform`."""
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise AclArgumentError("ratio", f"expected a probability 0..1, got {ratio!r}")
        self._fill_random(_tasks.DROPOUT_BITMASK, ratio_dtype, bits, (("ratio", ratio),), seed,
                          counter, stream, offset)

    def _fill_random(self, func, dtype, count, params, seed, counter, stream, offset):
        if not isinstance(counter, DeviceBuffer):
            raise AclTypeError("counter", f"expected a DeviceBuffer, got "
                               f"{type(counter).__name__}")
        _tasks.fill_random(self._live(), counter._live(), func, dtype, count, params, seed,
                           stream, offset)


# Host allocations released (closed or collected) while NumPy views of them exist: freed by
# the last view's finalizer, or by the teardown if the session ends first.
_viewed: set = set()


def _export_done(st):
    st.exports -= 1
    if st.exports or st not in _viewed:
        return      # still viewed; or never released, or freed by a teardown meanwhile
    _viewed.discard(st)
    try:
        release(st)
    except Exception:
        # Its owner closed it: it stays closed, and the retry owns the free.
        st.closed = True
        _rt.Releaser(None, _free_now, (st,), _rt.ORDER_MEMORY, st.gen)


def _free_viewed():
    """Teardown: the host memory NumPy views kept is freed (views are not to be used after
    ``finalize()``); a view dropped later frees nothing."""
    errs = []
    while _viewed:
        st = _viewed.pop()
        for attempt in range(2):    # one retry, as the teardown gives every release
            try:
                release(st)     # tearing down: views no longer keep it
                break
            except Exception as e:
                st.closed = True
                if attempt:
                    errs.append(e)
    return errs


class HostBuffer(_Buffer):
    """``nbytes`` of pinned host memory (``aclrtMallocHost``), the fast source and target of
    asynchronous copies. ``numpy(dtype, shape)`` views it as an array; the memory outlives
    ``close()`` while such views exist (it is freed with the last one), but not
    ``acl_py.finalize()``, after which the views must not be used."""

    __slots__ = ()

    def __init__(self, nbytes: int, device: DeviceLike = None) -> None:
        nbytes = as_size(nbytes, "nbytes")
        dev = _device.resolve_device(device)
        _rt.ensure()
        made_in = _rt.gen   # before the allocation: see Releaser
        self._own(HostAllocation(_malloc(dev, nbytes, True) if nbytes else ffi.NULL, nbytes,
                                 dev, made_in))

    def buffer(self) -> Any:
        """A writable ``ffi.buffer`` over the memory (keeps it allocated while alive)."""
        st = self._live()
        b = ffi.buffer(st.ptr, st.nbytes)
        st.exports += 1
        weakref.finalize(b, _export_done, st).atexit = False
        return b

    def numpy(self, dtype: DTypeLike = "uint8",
              shape: int | Sequence[int] | None = None) -> np.ndarray:
        """A NumPy array over the memory (no copy): ``shape`` defaults to all of it as 1-D."""
        import numpy as np
        from . import dtypes
        dt = dtypes.as_dtype(dtype)
        st = self._live()
        if st.nbytes == 0:
            return np.empty(shape if shape is not None else (0,), dt)
        if shape is None:
            if st.nbytes % dt.itemsize:
                raise AclArgumentError("dtype", f"{st.nbytes} bytes is not a whole number of "
                                       f"{dt} elements")
            shape = (st.nbytes // dt.itemsize,)
        arr = np.frombuffer(self.buffer(), dtype=dt, count=st.nbytes // dt.itemsize)
        try:
            return arr.reshape(shape) if shape != arr.shape else arr
        except ValueError:
            raise AclArgumentError("shape", f"{shape} does not hold {arr.size} elements of "
                                   f"{dt}") from None

    def close(self) -> None:
        """Frees the memory (after streams using it synchronize and NumPy views are gone)."""
        self._rel.release()

    def __repr__(self):
        st = self.allocation
        state = "closed" if st.closed else f"{st.nbytes} bytes"
        return f"<acl_py.HostBuffer {state}>"


# ---- host memory registration ---------------------------------------------------------------

PAGE = 4096     # registrations start on a page (the API reference: 4 KB aligned memory)
_ALREADY_REGISTERED = 507910    # ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED


class HostRegisterFlag(enum.IntFlag):
    """How :class:`HostRegistration` registers host memory (CANN's ``ACL_HOST_REG_*`` of
    ``aclrtHostRegisterV2``, docs/zh/api_ref/11-02_host_memory_management.md). ``MAPPED``: the
    device gets an address for the memory (:attr:`HostRegistration.device_ptr`), which its
    kernels read and write directly (zero copy). ``PINNED``: the pages are locked for fast
    copies (not for memory that is pinned already: a :class:`HostBuffer`'s). CANN's
    ``IOMEMORY`` and ``READONLY`` are reserved there and not offered."""

    MAPPED = 0x2
    PINNED = 0x10000000


class _RegistrationState:
    """A live registration, shared by its wrapper and releaser (never references the
    wrapper). ``uses``: stream work on the device address (``Stream.mark_used``), which the
    unregistration waits for."""

    __slots__ = ("host", "nbytes", "device", "flags", "device_ptr", "keep", "registered",
                 "closed", "gen", "uses")

    def __init__(self, host, nbytes, device, flags, keep, gen):
        self.host = host            # void *: the registration's base address
        self.nbytes = nbytes
        self.device = device        # the device that was current for the registration
        self.flags = flags
        self.device_ptr = None      # void *, MAPPED only
        self.keep = keep            # the memory's owner, alive while registered
        self.registered = True
        self.closed = False
        self.gen = gen
        self.uses = _ordering.Uses()


def _unregister(st):
    """``aclrtHostUnregister`` once; then the memory's owner is let go."""
    if not st.registered:
        return
    # CANN needs a current device for the call (hicann/runtime api_impl.cc HostUnregister:
    # the current context); a release the garbage collector runs inside another operation
    # gets its device back afterwards.
    with _device.restoring(st.device):
        s = _rt.lib.aclrtHostUnregister(st.host)
    if s:
        raise make_error(s, "aclrtHostUnregister")
    st.registered = False
    st.device_ptr = None
    st.keep = None      # a HostBuffer's export ends with its ffi buffer: see HostBuffer.buffer


def _release_registration(st):
    """Releaser of a registration: closed now, unregistered once the streams whose work used
    its device address (``Stream.mark_used``) have passed that work (at once when none)."""
    if not st.registered:
        return
    _ordering.close_then_release(st, _unregister, _rt.ORDER_HOST_REGISTRATION)


class HostRegistration(_device.DeviceObject):
    """Host memory registered with the runtime (``aclrtHostRegisterV2``): ``memory`` is a
    writable C-contiguous buffer (a NumPy array, ``bytearray``, ``mmap``, or a
    :class:`HostBuffer`) starting on a 4 KB page (``mmap.mmap(-1, n)`` and ``HostBuffer``
    memory do), registered for ``device`` (default: the current device), as ``flags`` say
    (:class:`HostRegisterFlag`, default ``MAPPED``). ``device_ptr`` / ``device_address`` is
    the address the device's kernels use for it (``aclrtHostGetDevicePointer``; MAPPED only).

    The registration keeps ``memory`` alive (a HostBuffer is not freed before it ends) and
    ends exactly once (``aclrtHostUnregister``): on ``close()``, at the end of a ``with``
    block, when garbage collected, or at ``acl_py.finalize()``/exit, before the memory is
    freed. Work queued on a stream that uses the device address: pass the registration to
    ``Stream.mark_used`` and the unregistration waits until the stream has passed that work.
    One range is registered once: overlapping a live registration raises
    :class:`AclArgumentError` naming ``memory`` (CANN's 507910)."""

    __slots__ = ("_st", "_rel", "__weakref__")

    def __init__(self, memory: Any, device: DeviceLike = None, *,
                 flags: HostRegisterFlag | int = HostRegisterFlag.MAPPED) -> None:
        flags = _check_register_flags(flags)
        if isinstance(memory, HostBuffer):
            memory._live()
            if flags & HostRegisterFlag.PINNED:
                raise AclArgumentError("flags", "HostRegisterFlag.PINNED: a HostBuffer's memory "
                                       "is pinned already (aclrtMallocHost)")
            owner = memory.buffer()     # an export: the HostBuffer's memory outlives us
        else:
            owner = memory
        try:
            buf = ffi.from_buffer(owner, require_writable=True)
        except (TypeError, ValueError, BufferError) as e:
            raise AclTypeError("memory", f"expected a writable C-contiguous buffer (NumPy "
                               f"array, bytearray, mmap, HostBuffer), got "
                               f"{type(memory).__name__}: {e}") from None
        nbytes = len(buf)
        address = int(ffi.cast("uintptr_t", buf))
        if nbytes == 0:
            raise AclArgumentError("memory", "is empty: a registration covers at least one byte")
        if address % PAGE:
            raise AclArgumentError("memory", f"starts at {address:#x}, not on a 4 KB page: "
                                   f"register page-aligned memory (mmap.mmap(-1, nbytes), a "
                                   f"HostBuffer)")
        dev = _device.resolve_device(device)
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        _device.activate(dev)
        host = ffi.cast("void *", buf)
        s = L.aclrtHostRegisterV2(host, nbytes, int(flags))
        if s == _ALREADY_REGISTERED:
            err = make_error(s, "aclrtHostRegisterV2")
            arg = AclArgumentError("memory", f"[{address:#x}, {address + nbytes:#x}) overlaps "
                                   f"host memory registered already (one range is registered "
                                   f"once)")
            arg.refused(err)
            raise arg from err
        if s:
            raise make_error(s, "aclrtHostRegisterV2")
        st = _RegistrationState(host, nbytes, dev, flags, (owner, buf), made_in)
        self._st = st
        self._rel = _rt.Releaser(self, _release_registration, (st,),
                                 _rt.ORDER_HOST_REGISTRATION, made_in)
        if flags & HostRegisterFlag.MAPPED:
            p = ffi.new("void **")
            s = L.aclrtHostGetDevicePointer(host, p, 0)
            if s:
                err = make_error(s, "aclrtHostGetDevicePointer")
                try:
                    self._rel.release()
                except Exception:   # the registration's own error matters more
                    pass
                raise err
            st.device_ptr = p[0]

    @property
    def allocation(self) -> _RegistrationState:
        """For ``Stream.mark_used``: the stream work on the device address is recorded
        there."""
        return self._live()

    @property
    def host_ptr(self) -> Any:
        """The registered memory's address (a cffi ``void *``)."""
        return self._live().host

    @property
    def device_ptr(self) -> Any:
        """The address the device uses for the memory (a cffi ``void *``): MAPPED only."""
        st = self._live()
        if st.device_ptr is None:
            raise AclArgumentError("flags", f"registered with {st.flags!r}, without "
                                   f"HostRegisterFlag.MAPPED: the device has no address "
                                   f"for it")
        return st.device_ptr

    @property
    def device_address(self) -> int:
        return int(ffi.cast("uintptr_t", self.device_ptr))

    @property
    def nbytes(self) -> int:
        return self._st.nbytes

    @property
    def flags(self) -> HostRegisterFlag:
        return self._st.flags

    def __repr__(self):
        st = self._st
        if st.closed:
            return f"<acl_py.HostRegistration closed {st.flags!r}>"
        address = int(ffi.cast("uintptr_t", st.host))
        return f"<acl_py.HostRegistration {st.nbytes} bytes at {address:#x} {st.flags!r}>"


def _check_register_flags(flags):
    if isinstance(flags, bool) or not isinstance(flags, int):
        raise AclTypeError("flags", f"expected HostRegisterFlag bits, got {type(flags).__name__}")
    every = HostRegisterFlag.MAPPED | HostRegisterFlag.PINNED
    if flags == 0 or flags & ~every:
        raise AclArgumentError("flags", f"{flags:#x} is not a non-empty OR of "
                               f"HostRegisterFlag.MAPPED and HostRegisterFlag.PINNED")
    return HostRegisterFlag(flags)


# ---- memory pool --------------------------------------------------------------------------

_pools = weakref.WeakSet()    # live _PoolState objects
_default_pools: dict = {}     # device id -> MemoryPool


class _PoolState:
    """A pool's blocks. ``free``: size -> [ptr], blocks any stream may take. ``on_stream``:
    stream state -> size -> [(ptr, seq)], blocks released while their last use, submission
    ``seq`` of that stream, may not be done: that stream's later work may take them at once
    (it runs after), other streams once the stream has passed ``seq``.

    Every change to a list is one ``pop()`` or ``append()`` (atomic under the GIL) and lists
    are never replaced; a free list is never removed. So taking a listed block and giving one
    back to a free list take no lock (the reuse path of every new output); the lock
    serializes the rest: ``on_stream``'s dicts, moving blocks between lists, freeing."""

    __slots__ = ("device", "free", "on_stream", "parked", "descs", "lock", "acquire", "release",
                 "held", "dead", "gen", "default", "__weakref__")

    def __init__(self, device):
        self.device = device
        self.free = {}
        self.on_stream = {}
        # stream state -> [(ptr, block size, seq)]: operator workspaces parked between the
        # launches of one stream (see workspace). Changed by single list operations only
        # (pop, append), atomic under the GIL, so the launch path takes no lock; reported as
        # cached (parked_bytes).
        self.parked = {}
        # ptr -> (layout, aclTensor *) of cached blocks: the descriptor of the tensor that
        # owned the block last, for the next one (Allocation.desc); destroyed when the block
        # is freed.
        self.descs = {}
        # Reentrant: a garbage collection inside a locked section may release a buffer.
        self.lock = threading.RLock()
        self.acquire = self.lock.acquire
        self.release = self.lock.release
        # Bytes of the blocks this pool holds from the runtime (handed out, parked or
        # cached), changed only when a block is allocated or freed: the reuse path (take,
        # give_back) keeps no counter, and the cached bytes are counted from the lists when
        # asked for (listed_bytes).
        self.held = 0
        self.dead = False
        self.gen = _rt.gen
        # A device's default pool: callers that looked it up may still take from it after
        # another thread closed it (see take).
        self.default = False
        _pools.add(self)

    def allocate(self, nbytes, tl=None):
        """An Allocation of ``nbytes`` for work on stream state ``tl`` (None: any stream):
        a block freed on ``tl`` (its record then carries the pending use, so a synchronous
        copy into it waits for that), a free block, or a new aclrtMalloc."""
        if nbytes == 0:
            if self.dead:
                self._check_serving()
            return Allocation(ffi.NULL, 0, self.device, self.gen)
        ptr, size, seq = self.take(nbytes, tl)
        uses = _ordering.Uses()
        if seq:
            uses[tl] = seq
        return Allocation(ptr, nbytes, self.device, self.gen, self, size, uses,
                          self.descs.pop(ptr, None) if self.descs else None)

    def take(self, nbytes, tl=None):
        """(ptr, block size, seq) of a block of at least ``nbytes`` (> 0) for work on ``tl``
        (see allocate); ``seq``: the pending use on ``tl`` it carries, or 0. Give it back with
        give_back."""
        size = (nbytes + ROUND - 1) // ROUND * ROUND
        if size >= LARGE:   # block_size's other case; no call on every new output's path
            size = block_size(nbytes)
        if self.dead:       # also after teardown: the hit path below needs no ensure()
            self._check_serving()
            return self._malloc(size, nbytes)
        # No lock to take a listed block: every change to the lists is one list.pop() or
        # append (atomic under the GIL), here and under the lock alike (see _reclaim), so
        # each entry goes to exactly one taker; losing a race only sends this one on to the
        # locked path below.
        if tl is not None:
            mine = self.on_stream.get(tl)
            if mine:
                lst = mine.get(size)
                if lst:
                    try:
                        ptr, seq = lst.pop()
                    except IndexError:
                        pass
                    else:
                        return ptr, size, (seq if tl.done < seq else 0)
        lst = self.free.get(size)
        if lst:
            try:
                return lst.pop(), size, 0
            except IndexError:
                pass
        with self.lock:
            if self._reclaim(size):
                try:
                    return self.free[size].pop(), size, 0
                except IndexError:      # taken meanwhile by another thread
                    pass
        return self._malloc(size, nbytes)

    def _check_serving(self):
        """Raises, for a closed pool, unless it is a default pool of this session: a launch
        that looked the default pool up before another thread closed it still gets memory
        (see take), as emptying the cache under concurrent use is safe in CuPy and PyTorch;
        the next lookup makes a new default pool."""
        if not self.default or self.gen != _rt.gen:
            raise _rt.closed_error(self.gen, "MemoryPool")

    def _malloc(self, size, nbytes):
        """(ptr, size, 0): a new block of ``size`` bytes from the runtime for a request of
        ``nbytes``. On a closed (default) pool it is plain runtime memory: give_back frees it
        in stream order."""
        # Out of memory, cached blocks of other sizes, blocks still waiting for a stream, or
        # frees deferred to an idle stream may be what stands in the way: _malloc gives them
        # back and tries once more.
        try:
            ptr = _malloc(self.device, size, False, pooled=True)
        except DeviceMemoryError:
            # A large block's rounding never costs an allocation that fits without it: the
            # request's own 512-byte size, cached under that size afterwards.
            exact = (nbytes + ROUND - 1) // ROUND * ROUND
            if exact == size:
                raise
            ptr = _malloc(self.device, exact, False, pooled=True)
            size = exact
        with self.lock:
            self.held += size
        return ptr, size, 0

    def workspace(self, nbytes, tl):
        """(ptr, block size) of a workspace of ``nbytes`` (> 0) for a launch on stream state
        ``tl``: the block parked by the stream's previous launch if large enough (the stream
        runs this launch after that one: the reuse is stream-ordered), else one from the
        pool. Give it back with :meth:`park` once the launch is enqueued."""
        slot = self.parked.get(tl)
        if slot:
            try:
                ptr, size, seq = slot.pop()
            except IndexError:      # another thread's launch on this stream took it
                pass
            else:
                if size >= nbytes:
                    return ptr, size
                self.give_back(ptr, size, tl, seq)     # too small: back, stream-ordered
        ptr, size, _seq = self.take(nbytes, tl)
        return ptr, size

    def park(self, ptr, size, tl, seq):
        """Parks a workspace whose last use is submission ``seq`` of ``tl`` for the stream's
        next launch (one block per stream; another goes back to the pool, stream-ordered)."""
        slot = self.parked.get(tl)
        if slot is None:
            slot = self.parked.setdefault(tl, [])
        if not slot and not self.dead and not tl.closed:
            slot.append((ptr, size, seq))
            if not (self.dead or tl.closed):
                return
            # Closed by another thread since the check: its drain of the slots may have run
            # before the append. Take one entry back unless a drain (or a launch) took it.
            try:
                ptr, size, seq = slot.pop()
            except IndexError:
                return
        self.give_back(ptr, size, tl, seq)

    def _unpark(self, closed_only=False):
        """Moves parked workspaces back to the pool's lists (of streams closed only, or all).
        Caller holds the lock."""
        for tl, slot in list(self.parked.items()):
            if closed_only and not tl.closed:
                continue
            while True:
                try:
                    ptr, size, seq = slot.pop()
                except IndexError:
                    break
                self.give_back(ptr, size, tl, seq)
            if tl.closed:
                self.parked.pop(tl, None)

    def parked_bytes(self):
        return sum(e[1] for slot in list(self.parked.values()) for e in list(slot))

    def listed_bytes(self):
        """Bytes of the blocks in the lists (free and on_stream; parked ones apart)."""
        with self.lock:     # list(): give_back adds free lists without the lock
            return sum(size * len(lst) for size, lst in list(self.free.items())) + sum(
                size * len(lst) for by_size in list(self.on_stream.values())
                for size, lst in list(by_size.items()))

    def usage(self):
        """(bytes handed out, bytes cached: listed or parked)."""
        with self.lock:
            listed = self.listed_bytes()
            parked = self.parked_bytes()
            return self.held - listed - parked, listed + parked

    def _reclaim(self, size):
        """Moves blocks whose stream has passed their last use to ``free``; True if one of
        ``size`` is free then. Caller holds the lock. Lists are changed in place, never
        replaced, and only by pop() and append: take() pops from them without the lock, and
        a garbage collection inside may run a release that gives a block back to one of
        them (the lock is reentrant); no block may be lost or handed out twice."""
        found = False
        if self.parked:
            self._unpark(closed_only=True)
        for tl, by_size in list(self.on_stream.items()):
            done = tl.done
            closed = tl.closed
            if closed:          # no release gives a block back to a closed stream
                del self.on_stream[tl]
            for sz, lst in list(by_size.items()):
                waiting = []
                try:
                    for _ in range(len(lst)):
                        try:
                            entry = lst.pop()
                        except IndexError:      # taken meanwhile
                            break
                        if closed or entry[1] <= done:
                            self.free.setdefault(sz, []).append(entry[0])
                            found = found or sz == size
                        else:
                            waiting.append(entry)
                finally:
                    while waiting:          # back, in their order
                        lst.append(waiting.pop())
        return found

    def _waiting_streams(self):
        """Stream states with blocks not yet known past. Caller holds the lock."""
        return [tl for tl, by_size in list(self.on_stream.items())
                if any(by_size.values())]

    def give_back(self, ptr, size, tl, seq, desc=None):
        """Caches a block; ``tl``/``seq``: its last use, on that stream, may not be done;
        ``desc``: the descriptor of its last owning tensor, kept with it."""
        if tl is None and not self.dead:
            # No lock (see take): a free list is never removed, and one append lists the
            # block (its descriptor first: a taker pops the block, then the descriptor).
            if desc is not None:
                self.descs[ptr] = desc
            self.free.setdefault(size, []).append(ptr)
            if self.dead:
                # The pool closed meanwhile: its last drain may have run before the append
                # (see _pool_release). The block is listed, so this call has succeeded;
                # what fails to free now is retried by release_unused / teardown.
                if self._free_listed() is not None:
                    _rt.Releaser(None, _pool_release, (self,), _rt.ORDER_POOL, self.gen)
            return
        # acquire/release, not `with`: half the cost on this hot path (CPython 3.11).
        self.acquire()
        try:
            if not self.dead:
                if desc is not None:
                    self.descs[ptr] = desc
                mine = self.on_stream.get(tl)
                if mine is None:
                    mine = self.on_stream[tl] = {}
                mine.setdefault(size, []).append((ptr, seq))
                return
        finally:
            self.release()
        # The pool is closed: the block is freed, now or once the stream whose work may
        # still use it has passed that work (a workspace parked after its launch, on a pool
        # closed meanwhile).
        uses = _ordering.Uses()
        if tl is not None:
            uses[tl] = seq
        _ordering.release_after(uses, self._free_block, (ptr, size, desc), _rt.ORDER_MEMORY)

    def _free_block(self, block):
        """Frees a block of a closed pool: ``(ptr, size, desc)``. The memory first: if that
        fails, nothing is released and the caller keeps both (a retry frees each once)."""
        ptr, size, desc = block
        L = _rt.lib if _rt.ready else _rt.ensure()     # no device needed: see _free_now
        s = L.aclrtFree(ptr)
        if s:
            raise make_error(s, "aclrtFree")
        with self.lock:
            self.held -= size
        if desc is None:    # a block taken as a workspace keeps its last descriptor here
            desc = self.descs.pop(ptr, None)
        if desc is not None:
            try:
                destroy_desc(desc)
            except Exception:   # the memory is gone: the descriptor is retried later
                _rt.Releaser(None, destroy_desc, (desc,), _rt.ORDER_HANDLE, self.gen)

    def free_all(self):
        """Frees every cached block, first synchronizing the streams whose work may still use
        one; raises the first failure (a block that failed to free stays cached)."""
        err = None
        with self.lock:
            self._unpark()
            self._reclaim(-1)
            waiting = self._waiting_streams()
        for tl in waiting:
            if not tl.closed and tl.gen == _rt.gen and _rt.ready:
                try:
                    tl.wait_if_open()
                except Exception as e:
                    err = err or e
        with self.lock:
            self._reclaim(-1)
        err = self._free_listed() or err
        if err is not None:
            raise err

    def _free_listed(self):
        """Frees the blocks of the free lists (no work uses them); returns the first failure
        (a block that failed to free stays listed, retried later)."""
        err = None
        with self.lock:
            blocks = []
            for size in list(self.free):    # popped, not replaced: see _reclaim
                lst = self.free[size]
                while True:
                    try:
                        blocks.append((size, lst.pop()))
                    except IndexError:
                        break
        if blocks and not _rt.ready:
            _rt.ensure()    # raises after the final finalize(); no device needed: see _free_now
        for size, p in blocks:
            desc = self.descs.pop(p, None)
            try:
                if desc is not None:
                    destroy_desc(desc)
                    desc = None
                s = _rt.lib.aclrtFree(p)
                if s:
                    raise make_error(s, "aclrtFree")
            except Exception as e:      # kept cached (with what is left of it): retried
                err = err or e
                with self.lock:
                    if desc is not None:
                        self.descs[p] = desc
                    self.free.setdefault(size, []).append(p)
            else:
                with self.lock:
                    self.held -= size
        return err


def _pool_release(pst):
    # Its streams' synchronizes make their device current: the thread's is restored after
    # (a garbage collection may run this inside another operation of the thread).
    with _device.restoring():
        pst.free_all()
        with pst.lock:
            pst.dead = True
        # Blocks given back while the first pass ran (to a free list without the lock, or to
        # a stream's list) are freed by a second: from now on give_back frees them itself.
        pst.free_all()


class MemoryPool:
    """A stream-ordered caching allocator for one device (default: the current one).
    ``malloc(n, stream=None)`` returns a :class:`DeviceBuffer` whose ``close()`` puts the
    block back in the cache: at once for reuse by later work on the stream that used it last,
    for other streams once that stream has passed that work."""

    __slots__ = ("_pst", "_rel", "__weakref__")

    def __init__(self, device: DeviceLike = None) -> None:
        dev = _device.resolve_device(device)
        _rt.ensure()
        pst = self._pst = _PoolState(dev)
        self._rel = _rt.Releaser(self, _pool_release, (pst,), _rt.ORDER_POOL, pst.gen)

    @property
    def device(self) -> Device:
        return _device.Device(self._pst.device)

    def malloc(self, nbytes: int, stream: Stream | None = None) -> DeviceBuffer:
        """A DeviceBuffer of ``nbytes`` from this pool, for work on ``stream`` (see
        :class:`DeviceBuffer`)."""
        nbytes = as_size(nbytes, "nbytes")
        pst = self._live()
        tl = None if stream is None else _stream.state_for(stream, pst.device)
        return DeviceBuffer.adopt(pst.allocate(nbytes, tl))

    def _live(self):
        """The pool's state; raises once the pool is closed (a closed default pool still
        serves the launches that looked it up before: see _PoolState.take, not the caller
        who holds it)."""
        pst = self._pst
        if pst.dead:
            raise _rt.closed_error(pst.gen, "MemoryPool")
        return pst

    def free_all_blocks(self) -> None:
        """Returns every cached (unused) block to the runtime (synchronizing the streams
        whose work may still use one)."""
        self._pst.free_all()

    def used_bytes(self) -> int:
        """Bytes in blocks handed out and not yet returned."""
        return self._pst.usage()[0]

    def free_bytes(self) -> int:
        """Bytes in cached blocks (operator workspaces kept for a stream's next launch
        included)."""
        return self._pst.usage()[1]

    def total_bytes(self) -> int:
        return self._pst.held

    def n_free_blocks(self) -> int:
        pst = self._pst
        with pst.lock:      # list(): give_back adds free lists without the lock
            return sum(len(v) for v in list(pst.free.values())) + sum(
                len(v) for d in list(pst.on_stream.values()) for v in list(d.values())) + sum(
                len(v) for v in list(pst.parked.values()))

    def close(self) -> None:
        """Frees the cache; blocks still handed out are freed when their buffers close."""
        self._rel.release()

    def __repr__(self):
        p = self._pst
        used, cached = p.usage()
        return f"<acl_py.MemoryPool device {p.device}: {used} bytes used, {cached} cached>"


def get_pool(device: DeviceLike = None) -> MemoryPool:
    """The default MemoryPool of a device (default: the current one)."""
    return _default_pool(_device.resolve_device(device))


_device.provide("memory_pool", get_pool)


def _default_pool(dev):
    """get_pool() of a resolved device id (internal callers resolve the device once)."""
    pool = _default_pools.get(dev)
    if pool is None or pool._pst.dead or pool._pst.gen != _rt.gen:
        with _rt.lock:
            pool = _default_pools.get(dev)
            if pool is None or pool._pst.dead or pool._pst.gen != _rt.gen:
                pool = _default_pools[dev] = MemoryPool(dev)
                pool._pst.default = True
    return pool


def default_pool_state(device):
    """The block cache of ``device``'s default pool (``take``/``give_back``): for acl-py's
    modules (operator workspaces)."""
    pool = _default_pools.get(device)
    if pool is None or pool._pst.dead:     # teardown marks every pool dead
        pool = _default_pool(device)
    return pool._pst


def allocate(nbytes, device, stream_state=None):
    """An Allocation of ``nbytes`` (> 0 or 0) from ``device``'s default pool for work on
    ``stream_state`` (None: any stream). For acl-py's modules: wrap it
    (``DeviceBuffer.adopt``) or give it back with :func:`release`."""
    return default_pool_state(device).allocate(nbytes, stream_state)


def _free_all_pools():
    errs = []
    for p in list(_pools):
        if p.dead:
            continue
        try:
            p.free_all()
        except Exception as e:
            errs.append(e)
    return errs


def _forget():
    for p in list(_pools):
        p.dead = True
    _pools.clear()
    _default_pools.clear()
    return []


def _drop_after_fork():
    """Forked child: every pool is the parent's; closed with its blocks unfreed."""
    for p in list(_pools):
        p.dead = True
        p.lock = threading.RLock()
        p.acquire = p.lock.acquire
        p.release = p.lock.release
    _pools.clear()
    _default_pools.clear()


_rt.register_step("free_cached", _free_all_pools)
_rt.register_step("before_streams", _free_viewed)
_rt.register_step("forget", _forget)
_rt.register_step("fork", _drop_after_fork)

__all__ = ["DeviceBuffer", "HostBuffer", "HostRegistration", "HostRegisterFlag", "MemoryPool",
           "get_pool", "MemoryLocation", "memory_location"]
