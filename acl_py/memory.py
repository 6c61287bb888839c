"""Device and pinned host memory: ``DeviceBuffer``, ``HostBuffer``, ``MemoryPool``.

Ownership: a buffer frees its memory on ``close()``, when garbage collected, or at teardown,
whichever comes first. Stream-ordered release: a buffer that work on a stream may still use
(an async copy, a kernel: see ``Stream.mark_used``) is freed only after that stream has
synchronized past the work; until then the memory stays allocated and the wrapper is closed.

Synchronous copies (``copy_from_host``/``copy_to_host``) first synchronize the streams with
pending work on the buffer: ``aclrtMemcpy`` is not ordered after stream work, and reading a
result before its kernel ran is the commonest mistake in this kind of code.

``MemoryPool`` (per device, CuPy-like): allocations are rounded up to 512 bytes and blocks of
the same size are reused; ``free_all_blocks()`` returns cached blocks to the runtime; an
allocation that fails with an out-of-memory status empties the cache and retries once, then
raises :class:`DeviceMemoryError`. Tensor storage and operator workspaces come from the
device's default pool (``Device.memory_pool``); plain ``DeviceBuffer(n)`` is a direct
``aclrtMalloc`` unless ``pool=`` is given. The emulator's live counts include cached blocks.
"""
from __future__ import annotations

import operator
import threading
import weakref

from ._ffi import ffi
from . import runtime as _rt
from . import stream as _stream
from .errors import AclArgumentError, AclTypeError, make_error

_H2D, _D2H, _D2D = 1, 2, 3          # aclrtMemcpyKind
_POLICY = 0                          # ACL_MEM_MALLOC_HUGE_FIRST, as the vendor sample
_OOM = (207001, 200000, 300000)      # out-of-memory statuses: the pool retries after emptying
ROUND = 512


def as_size(value, argument):
    """A non-negative int from ``value`` (ints and NumPy ints; not bool or float)."""
    if isinstance(value, bool):
        raise AclTypeError(argument, f"expected an int, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise AclTypeError(argument, f"expected an int, got {type(value).__name__} "
                           f"{value!r}") from None
    if v < 0:
        raise AclArgumentError(argument, f"must be >= 0, got {v}")
    return v


class _BufState:
    """C-side state of a buffer (device or host); never references its wrapper."""

    __slots__ = ("ptr", "nbytes", "device", "uses", "links", "closed", "pool", "block",
                 "host", "exports", "gen", "__weakref__")

    def __init__(self, ptr, nbytes, device, host=False, pool=None, block=0):
        self.ptr = ptr          # char * (ffi.NULL for 0 bytes); None once freed
        self.nbytes = nbytes
        self.device = device
        self.uses = {}          # _StreamState -> seq of the last submission using it
        # Launch records (repeatable executors, cached one-shot calls) reusing this buffer:
        # each has a ``uses`` dict like ours and a ``closed`` flag. A launch that reuses a
        # fixed set of buffers updates one record instead of marking every buffer.
        self.links = None
        self.closed = False     # wrapper closed (memory may still wait for a stream)
        self.pool = pool        # _PoolState or None
        self.block = block      # pooled block size
        self.host = host
        self.exports = 0        # live NumPy views of a HostBuffer
        self.gen = _rt.gen

    def pending(self):
        out = [(s, seq) for s, seq in list(self.uses.items())
               if s.done < seq and not s.closed]
        links = self.links
        if links:
            for rec in list(links):
                out += [(s, seq) for s, seq in list(rec.uses.items())
                        if s.done < seq and not s.closed]
        return out

    def link(self, rec):
        """Counts ``rec.uses`` as this buffer's own from now on (see ``links``). Records
        that are closed and have nothing pending are dropped here."""
        links = self.links
        if links:
            links = [r for r in links if not r.closed or _rec_pending(r)]
        else:
            links = []
        links.append(rec)
        self.links = links


def _rec_pending(rec):
    for s, seq in list(rec.uses.items()):
        if s.done < seq and not s.closed:
            return True
    return False


# Bumped by every explicit close of a buffer, tensor or argument array: caches that reuse
# validated handles by object identity (ops' one-shot fast path) compare it to know that
# none of their objects can have been closed since.
close_epoch = 0


_closed_error = _rt.closed_error


def _free_now(st):
    """Returns the memory to its pool or the runtime. Raises on failure (memory kept)."""
    ptr = st.ptr
    if ptr is None:
        return
    if st.nbytes == 0 and st.block == 0:
        st.ptr = None
        return
    if st.pool is not None:
        st.pool.give_back(ptr, st.block)
        st.ptr = None
        return
    L = _rt.lib
    _rt.activate(st.device)
    s = L.aclrtFreeHost(ptr) if st.host else L.aclrtFree(ptr)
    if s:
        raise make_error(s, "aclrtFreeHost" if st.host else "aclrtFree")
    st.ptr = None


def _free_deferred(st):
    """Run by a stream's deferred list: frees once no stream has pending work. A failure
    leaves an orphan releaser so the memory is retried (release_unused, teardown)."""
    if st.ptr is None or st.pending() or st.exports:
        return
    try:
        _free_now(st)
    except Exception:
        _rt.Releaser(None, _free_now, (st,), _rt.ORDER_MEMORY)
        raise


def _release(st):
    """Releaser of a buffer: free now, or after every stream that may use it synchronized,
    or (host buffers) once the last NumPy view is gone."""
    st.closed = True
    if st.ptr is None:
        return
    if st.exports and not _rt._tearing_down:
        return  # the last view's finalizer frees it
    pending = st.pending()
    if pending:
        for s, seq in pending:
            s.defer(seq, _free_deferred, st)
        return
    try:
        _free_now(st)
    except BaseException:
        st.closed = False   # still owned: close() may be retried
        raise


def _host_source(obj, argument):
    """(cdata pointer, nbytes, keep-alive object, _BufState or None) of a host object."""
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
    """Deferred part of a staged device-to-host copy: staging -> the user's buffer."""
    staging, dst, n, _keep = job
    try:
        ffi.memmove(dst, staging._bst.ptr, n)
    finally:
        staging.close()


def _check_range(offset, count, nbytes, what):
    offset = as_size(offset, "offset")
    if offset + count > nbytes:
        raise AclArgumentError(what, f"{count} bytes at offset {offset} do not fit in the "
                               f"buffer's {nbytes} bytes")
    return offset


def _wait_pending(st):
    """Synchronizes the streams that have pending work on this buffer."""
    for s, _seq in st.pending():
        s.sync()


def _malloc(dev, nbytes, host):
    """``nbytes`` (> 0) from aclrtMalloc, or aclrtMallocHost if ``host``: a ``char *``."""
    L = _rt.ensure()
    _rt.activate(dev)
    p = ffi.new("void **")
    s = L.aclrtMallocHost(p, nbytes) if host else L.aclrtMalloc(p, nbytes, _POLICY)
    if s:
        raise make_error(s, "aclrtMallocHost" if host else "aclrtMalloc")
    return ffi.cast("char *", p[0])


class _Buffer:
    """What DeviceBuffer and HostBuffer share: a _BufState freed by a Releaser."""

    __slots__ = ("_bst", "_rel", "__weakref__")

    def _own(self, st):
        self._bst = st
        self._rel = _rt.Releaser(self, _release, (st,), _rt.ORDER_MEMORY)
        return self

    def _live(self):
        st = self._bst
        if st.closed:
            raise _closed_error(st, repr(self))
        return st

    @property
    def ptr(self):
        return self._live().ptr

    handle = ptr

    @property
    def address(self):
        return int(ffi.cast("uintptr_t", self._live().ptr))

    @property
    def nbytes(self):
        return self._bst.nbytes

    @property
    def closed(self):
        return self._bst.closed

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return self._bst.nbytes


class DeviceBuffer(_Buffer):
    """``nbytes`` of device memory on ``device`` (default: the current device).

    ``pool=None`` allocates with ``aclrtMalloc``; ``pool=True`` takes the device's default
    pool, or pass a :class:`MemoryPool`. ``ptr``/``handle`` is the device address (a cffi
    ``char *``), ``address`` the same as an int."""

    __slots__ = ()

    def __init__(self, nbytes, device=None, *, pool=None):
        nbytes = as_size(nbytes, "nbytes")
        dev = _rt.resolve_device(device)     # once: it is not free (an int is range-checked)
        if pool is True:
            st = _default_pool(dev)._pst.allocate(nbytes)
        elif pool is not None and pool is not False:
            if not isinstance(pool, MemoryPool):
                raise AclTypeError("pool", f"expected a MemoryPool, True or None, got "
                                   f"{type(pool).__name__}")
            if device is not None and dev != pool._pst.device:
                raise AclArgumentError("pool", f"the pool serves device {pool._pst.device}, "
                                       f"not device {dev}")
            st = pool._pst.allocate(nbytes)
        else:
            _rt.ensure()    # also for 0 bytes: raises after the final finalize()
            st = _BufState(_malloc(dev, nbytes, False) if nbytes else ffi.NULL, nbytes, dev)
        self._own(st)

    @classmethod
    def _from_state(cls, st):
        return object.__new__(cls)._own(st)

    @property
    def device(self):
        return _rt.Device(self._bst.device)

    def close(self):
        """Releases the memory (after the streams still using it synchronize). Safe to
        repeat."""
        global close_epoch
        close_epoch += 1    # invalidates the ops' one-shot fast path (device memory only)
        self._rel.release()

    def __repr__(self):
        st = self._bst
        state = "closed" if st.closed else f"{st.nbytes} bytes"
        return f"<acl_py.DeviceBuffer {state} on device {st.device}>"

    # ---- copies ----

    def copy_from_host(self, src, offset=0):
        """Copies the bytes of ``src`` (any C-contiguous buffer, or a HostBuffer) to
        ``offset`` bytes into this buffer, synchronously."""
        st = self._live()
        p, n, _keep, _hst = _host_source(src, "src")
        offset = _check_range(offset, n, st.nbytes, "src")
        if n == 0:
            return
        _wait_pending(st)
        _rt.activate(st.device)
        s = _rt.lib.aclrtMemcpy(st.ptr + offset, st.nbytes - offset, p, n, _H2D)
        if s:
            raise make_error(s, "aclrtMemcpy")

    def copy_to_host(self, out=None, offset=0):
        """Copies ``len(out)`` bytes from ``offset`` into ``out`` (a writable C-contiguous
        buffer or HostBuffer; default: a new bytearray of the rest of the buffer),
        synchronously, after the streams using this buffer have finished. Returns ``out``."""
        st = self._live()
        if out is None:
            out = bytearray(st.nbytes - _check_range(offset, 0, st.nbytes, "offset"))
        p, n, _keep, _hst = _host_dest(out, "out")
        offset = _check_range(offset, n, st.nbytes, "out")
        if n == 0:
            return out
        _wait_pending(st)
        _rt.activate(st.device)
        s = _rt.lib.aclrtMemcpy(p, n, st.ptr + offset, n, _D2H)
        if s:
            raise make_error(s, "aclrtMemcpy")
        return out

    def copy_from_host_async(self, src, stream=None, offset=0):
        """Queues a copy of ``src`` into this buffer on ``stream`` (default: the device's
        default stream). The device copies asynchronously only from pinned memory: a
        HostBuffer is used as is (zero-copy; it is not freed before the stream has
        synchronized), any other buffer is first copied into a pinned staging buffer
        (released in stream order), so ``src`` may be reused as soon as this returns."""
        st = self._live()
        s = _stream.as_stream(stream, st.device)
        p, n, _keep, hst = _host_source(src, "src")
        offset = _check_range(offset, n, st.nbytes, "src")
        if n == 0:
            return
        staging = None
        if hst is None:
            staging = HostBuffer(n, st.device)
            hst = staging._bst
            ffi.memmove(hst.ptr, p, n)
            p = hst.ptr
        sst = s._st
        try:
            _rt.activate(st.device)
            r = _rt.lib.aclrtMemcpyAsync(st.ptr + offset, st.nbytes - offset, p, n, _H2D,
                                         sst.handle)
            if r:
                raise make_error(r, "aclrtMemcpyAsync")
            sst.submit((st, hst))
        finally:
            if staging is not None:
                staging.close()          # freed once the stream is past the copy

    def copy_to_host_async(self, out, stream=None, offset=0):
        """Queues a copy into ``out`` on ``stream``; ``out`` holds the data once the stream
        has been synchronized through acl-py (``Stream.synchronize``, ``Event.synchronize``,
        ``Device.synchronize``, ``Stream.close``). A HostBuffer ``out`` is written by the
        device directly; any other buffer through a pinned staging buffer that is copied
        into ``out`` (kept alive until then) when that synchronize runs."""
        st = self._live()
        s = _stream.as_stream(stream, st.device)
        p, n, keep, hst = _host_dest(out, "out")
        offset = _check_range(offset, n, st.nbytes, "out")
        if n == 0:
            return out
        staging = None
        if hst is None:
            staging = HostBuffer(n, st.device)
            hst = staging._bst
        sst = s._st
        try:
            _rt.activate(st.device)
            r = _rt.lib.aclrtMemcpyAsync(hst.ptr if staging is not None else p, n,
                                         st.ptr + offset, n, _D2H, sst.handle)
            if r:
                raise make_error(r, "aclrtMemcpyAsync")
        except BaseException:
            if staging is not None:
                staging.close()
            raise
        seq = sst.submit((st, hst))
        if staging is not None:
            sst.defer(seq, _copy_back, (staging, p, n, keep))
        return out

    def copy_from(self, src, nbytes=None, *, stream=None, src_offset=0, offset=0):
        """Device-to-device copy of ``nbytes`` (default: all of ``src`` from ``src_offset``)
        from another DeviceBuffer of the same device; synchronous unless ``stream`` is given."""
        if not isinstance(src, DeviceBuffer):
            raise AclTypeError("src", f"expected a DeviceBuffer, got {type(src).__name__}")
        st = self._live()
        sst_src = src._live()
        if sst_src.device != st.device:
            raise AclArgumentError("src", f"buffer of device {sst_src.device}, this one is on "
                                   f"device {st.device}")
        src_offset = _check_range(src_offset, 0, sst_src.nbytes, "src_offset")
        n = sst_src.nbytes - src_offset if nbytes is None else as_size(nbytes, "nbytes")
        _check_range(src_offset, n, sst_src.nbytes, "nbytes")
        offset = _check_range(offset, n, st.nbytes, "nbytes")
        if n == 0:
            return
        if stream is None:
            _wait_pending(st)
            _wait_pending(sst_src)
            _rt.activate(st.device)
            r = _rt.lib.aclrtMemcpy(st.ptr + offset, st.nbytes - offset,
                                    sst_src.ptr + src_offset, n, _D2D)
            if r:
                raise make_error(r, "aclrtMemcpy")
            return
        s = _stream.as_stream(stream, st.device)
        _rt.activate(st.device)
        r = _rt.lib.aclrtMemcpyAsync(st.ptr + offset, st.nbytes - offset,
                                     sst_src.ptr + src_offset, n, _D2D, s._st.handle)
        if r:
            raise make_error(r, "aclrtMemcpyAsync")
        s._st.submit((st, sst_src))

    def memset(self, value=0, nbytes=None, *, stream=None, offset=0):
        """Sets ``nbytes`` bytes (default: the rest of the buffer) from ``offset`` to
        ``value`` (0..255); synchronous unless ``stream`` is given."""
        st = self._live()
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
            raise AclArgumentError("value", f"expected a byte value 0..255, got {value!r}")
        offset = _check_range(offset, 0, st.nbytes, "offset")
        n = st.nbytes - offset if nbytes is None else as_size(nbytes, "nbytes")
        _check_range(offset, n, st.nbytes, "nbytes")
        if n == 0:
            return
        if stream is None:
            _wait_pending(st)
            _rt.activate(st.device)
            r = _rt.lib.aclrtMemset(st.ptr + offset, st.nbytes - offset, value, n)
            if r:
                raise make_error(r, "aclrtMemset")
            return
        s = _stream.as_stream(stream, st.device)
        _rt.activate(st.device)
        r = _rt.lib.aclrtMemsetAsync(st.ptr + offset, st.nbytes - offset, value, n,
                                     s._st.handle)
        if r:
            raise make_error(r, "aclrtMemsetAsync")
        s._st.submit((st,))


def _export_done(st):
    st.exports -= 1
    if st.exports == 0 and st.closed and st.ptr is not None:
        try:
            _release(st)
        except Exception:
            _rt.Releaser(None, _free_now, (st,), _rt.ORDER_MEMORY)


class HostBuffer(_Buffer):
    """``nbytes`` of pinned host memory (``aclrtMallocHost``), the fast source and target of
    asynchronous copies. ``numpy(dtype, shape)`` views it as an array; the memory outlives
    ``close()`` while such views exist (it is freed with the last one), but not
    ``acl_py.finalize()``, after which the views must not be used."""

    __slots__ = ()

    def __init__(self, nbytes, device=None):
        nbytes = as_size(nbytes, "nbytes")
        dev = _rt.resolve_device(device)
        _rt.ensure()
        self._own(_BufState(_malloc(dev, nbytes, True) if nbytes else ffi.NULL, nbytes, dev,
                            host=True))

    def buffer(self):
        """A writable ``ffi.buffer`` over the memory (keeps it allocated while alive)."""
        st = self._live()
        b = ffi.buffer(st.ptr, st.nbytes)
        st.exports += 1
        weakref.finalize(b, _export_done, st).atexit = False
        return b

    def numpy(self, dtype="uint8", shape=None):
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

    def close(self):
        """Frees the memory (after streams using it synchronize and NumPy views are gone)."""
        self._rel.release()

    def __repr__(self):
        st = self._bst
        state = "closed" if st.closed else f"{st.nbytes} bytes"
        return f"<acl_py.HostBuffer {state}>"


# ---- memory pool --------------------------------------------------------------------------

_pools = weakref.WeakSet()    # live _PoolState objects
_default_pools: dict = {}     # device id -> MemoryPool


class _PoolState:
    __slots__ = ("device", "free", "lock", "used", "cached", "dead", "gen", "__weakref__")

    def __init__(self, device):
        self.device = device
        self.free = {}          # block size -> [char *]
        self.lock = threading.RLock()
        self.used = 0           # bytes in blocks handed out
        self.cached = 0         # bytes in cached free blocks
        self.dead = False
        self.gen = _rt.gen
        _pools.add(self)

    def allocate(self, nbytes):
        """A _BufState of ``nbytes`` from a cached block or a new aclrtMalloc."""
        if self.dead:       # also after teardown: the hit path below needs no ensure()
            raise _closed_error(self, "MemoryPool")
        if nbytes == 0:
            return _BufState(ffi.NULL, 0, self.device)
        size = (nbytes + ROUND - 1) // ROUND * ROUND
        with self.lock:
            lst = self.free.get(size)
            if lst:         # a hit: no C call
                ptr = lst.pop()
                self.cached -= size
                self.used += size
                return _BufState(ptr, nbytes, self.device, pool=self, block=size)
        L = _rt.ensure()
        _rt.activate(self.device)
        p = ffi.new("void **")
        s = L.aclrtMalloc(p, size, _POLICY)
        if s in _OOM:
            # Cached blocks of other sizes may be what stands in the way: give them back,
            # and let the streams' pending frees run, then try once more.
            self.free_all()
            s = L.aclrtMalloc(p, size, _POLICY)
        if s:
            raise make_error(s, "aclrtMalloc")
        with self.lock:
            self.used += size
        return _BufState(ffi.cast("char *", p[0]), nbytes, self.device, pool=self, block=size)

    def give_back(self, ptr, size):
        with self.lock:
            if not self.dead:
                self.free.setdefault(size, []).append(ptr)
                self.used -= size
                self.cached += size
                return
        _rt.activate(self.device)
        s = _rt.lib.aclrtFree(ptr)
        if s:
            raise make_error(s, "aclrtFree")

    def free_all(self):
        """Frees every cached block; raises the first failure (the failed block stays
        cached)."""
        with self.lock:
            blocks = [(size, p) for size, lst in self.free.items() for p in lst]
            self.free = {}
            self.cached = 0
        err = None
        if blocks:
            _rt.activate(self.device)
        for size, p in blocks:
            s = _rt.lib.aclrtFree(p)
            if s:
                if err is None:
                    err = make_error(s, "aclrtFree")
                with self.lock:
                    self.free.setdefault(size, []).append(p)
                    self.cached += size
        if err is not None:
            raise err


def _pool_release(pst):
    pst.free_all()
    pst.dead = True


class MemoryPool:
    """A caching allocator for one device (default: the current one). ``malloc(n)`` returns
    a :class:`DeviceBuffer` whose ``close()`` puts the block back in the cache."""

    __slots__ = ("_pst", "_rel", "__weakref__")

    def __init__(self, device=None):
        dev = _rt.resolve_device(device)
        _rt.ensure()
        pst = self._pst = _PoolState(dev)
        self._rel = _rt.Releaser(self, _pool_release, (pst,), _rt.ORDER_POOL)

    @property
    def device(self):
        return _rt.Device(self._pst.device)

    def malloc(self, nbytes):
        """A DeviceBuffer of ``nbytes`` from this pool."""
        nbytes = as_size(nbytes, "nbytes")
        return DeviceBuffer._from_state(self._pst.allocate(nbytes))

    def free_all_blocks(self):
        """Returns every cached (unused) block to the runtime."""
        self._pst.free_all()

    def used_bytes(self):
        """Bytes in blocks handed out and not yet returned."""
        return self._pst.used

    def free_bytes(self):
        """Bytes in cached blocks."""
        return self._pst.cached

    def total_bytes(self):
        return self._pst.used + self._pst.cached

    def n_free_blocks(self):
        return sum(len(v) for v in self._pst.free.values())

    def close(self):
        """Frees the cache; blocks still handed out are freed when their buffers close."""
        self._rel.release()

    def __repr__(self):
        p = self._pst
        return (f"<acl_py.MemoryPool device {p.device}: {p.used} bytes used, "
                f"{p.cached} cached>")


def get_pool(device=None):
    """The default MemoryPool of a device (default: the current one)."""
    return _default_pool(_rt.resolve_device(device))


def _default_pool(dev):
    """get_pool() of a resolved device id (internal callers resolve the device once)."""
    pool = _default_pools.get(dev)
    if pool is None or pool._pst.dead or pool._pst.gen != _rt.gen:
        with _rt._lock:
            pool = _default_pools.get(dev)
            if pool is None or pool._pst.dead or pool._pst.gen != _rt.gen:
                pool = _default_pools[dev] = MemoryPool(dev)
    return pool


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


def _teardown():
    for p in list(_pools):
        p.dead = True
    _pools.clear()
    _default_pools.clear()


__all__ = ["DeviceBuffer", "HostBuffer", "MemoryPool", "get_pool"]
