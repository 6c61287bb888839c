"""``DeviceTensor`` (a typed, strided view of a DeviceBuffer) and the operator argument arrays
``IntArray`` and ``BoolArray``.

A DeviceTensor is ``shape``, ``dtype`` (a NumPy dtype), ``strides`` and ``offset`` (both in
ELEMENTS, as ``aclCreateTensor`` takes them) over a buffer. A tensor of a device dtype NumPy
has no dtype for (:data:`acl_py.dtypes.HIFLOAT8`, :data:`acl_py.dtypes.INT4`) keeps that
``element_type`` beside ``dtype``, the NumPy dtype of its bytes (uint8); shape, strides and
offset stay in elements (INT4: two to a byte, so its storage holds twice its bytes' count of
elements), and ``to_numpy`` gives the element type's host form (HIFLOAT8's uint8 codes, INT4's
values unpacked to int8). Tensors made by ``empty``,
``zeros`` and ``from_numpy``, and operators' new outputs, own their storage (from the device's
memory pool; a new output makes its DeviceBuffer only when ``buffer`` is asked for); slicing,
``transpose``/``T``/``permute`` and ``reshape`` give views sharing it. Closing an owning
tensor frees the storage and closes its views; closing a view releases only its handle. The
storage otherwise lives as long as any tensor using it.

``handle`` creates the ``aclTensor`` on first use (view dims, element strides, element
offset, ``ACL_FORMAT_ND``, storage dims ``[storage element count]``, data = storage base) and
caches it; it is destroyed with the tensor (close, garbage collection, teardown). The handle
of the tensor owning the storage belongs to the storage (one release for both: a call
returning new outputs makes several per call), so it may outlive the tensor object while
someone still holds its ``buffer``; pooled storage gives it back to the pool with its block,
and the block's next owning tensor of the same layout (shape, strides, dtype, size) reuses it
instead of an ``aclCreateTensor`` + ``aclDestroyTensor`` pair (the pool destroys it when it
frees the block: ``free_all_blocks``, ``acl_py.release_unused()``, teardown).
"""
from __future__ import annotations

import math
import operator
import threading
from typing import TYPE_CHECKING, Any, Iterator, Literal, NoReturn, Sequence, Union

import numpy as np

from ._ffi import ffi
from . import dtypes as _dt
from . import device as _device
from . import memory as _mem
from . import runtime as _rt
from . import stream as _stream
from ._integers import as_int
from ._units import size_text
from .errors import AclArgumentError, AclTypeError, ClosedError, check_create

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from .device import Device, DeviceLike
    from .memory import DeviceBuffer, MemoryPool
    from .stream import Stream

ShapeLike = Union[int, Sequence[int]]

_ND = 2            # ACL_FORMAT_ND
# The aclFormat values (acl/acl_base.h) a tensor may be described in besides ND: the layouts
# op_apis check x's storage format against (aclnnBatchNormReduce: NCHW or NHWC).
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": _ND}
_FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
_MAX_RANK = 25     # what aclCreateTensor accepts: CANN's MAX_DIM_NUM (operators check theirs)
_INT64_MAX = 2 ** 63 - 1


def as_dim(v, argument):
    """A dimension, stride or offset: an int in 0..INT64_MAX."""
    d = as_int(v, argument)
    if d < 0:
        raise AclArgumentError(argument, f"must be >= 0, got {d}")
    if d > _INT64_MAX:
        raise AclArgumentError(argument, f"{d} does not fit in int64")
    return d


def as_dims(values, argument, max_rank=None):
    """A tuple of dims (ints in 0..INT64_MAX) from an int or a sequence of them, else the
    typed error naming ``argument`` (or ``argument[i]``); ``max_rank`` bounds the length."""
    if isinstance(values, (int, np.integer)) and not isinstance(values, (bool, np.bool_)):
        values = (values,)
    try:
        items = tuple(values)
    except TypeError:
        raise AclTypeError(argument, f"expected an int or a sequence of ints, got "
                           f"{type(values).__name__}") from None
    if max_rank is not None and len(items) > max_rank:
        raise AclArgumentError(argument, f"rank {len(items)} exceeds {max_rank}")
    return tuple(as_dim(v, f"{argument}[{i}]") for i, v in enumerate(items))


def _as_shape(shape, argument="shape"):
    return as_dims(shape, argument, _MAX_RANK)


_strides_of: dict = {}   # shape -> C-contiguous strides (few shapes recur in a loop)


def _contiguous_strides(shape):
    strides = _strides_of.get(shape)
    if strides is not None:
        return strides
    strides = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    strides = tuple(strides)
    if len(_strides_of) < 256:
        _strides_of[tuple(shape)] = strides
    return strides


_size = math.prod    # elements of a shape
_INT4 = _dt.INT4     # the element type whose elements are not whole bytes


def _extent(shape, strides, offset):
    """One past the last element the view touches (0 for an empty view)."""
    if _size(shape) == 0:
        return 0
    return offset + sum((d - 1) * s for d, s in zip(shape, strides)) + 1


def _check_host_form(arr, element_type):
    """That NumPy array ``arr`` holds values of ``element_type`` in their host form, else the
    typed error naming ``arr``: INT4 integer values in [-8, 7], HIFLOAT8 uint8 codes, any
    other element type its own dtype (no cast)."""
    if element_type is _INT4:
        if arr.dtype.kind not in "iu":
            raise AclTypeError("arr", f"dtype {arr.dtype} must be an integer dtype (INT4 "
                               f"values in [-8, 7])")
        if arr.size and (arr.min() < -8 or arr.max() > 7):
            raise AclArgumentError("arr", f"INT4 values lie in [-8, 7], got [{arr.min()}, "
                                   f"{arr.max()}]")
        return
    want = element_type.host if type(element_type) is _dt.AclDtype else element_type
    if arr.dtype != want:
        what = (f" ({element_type.name} held as {want} codes)"
                if type(element_type) is _dt.AclDtype else "")
        raise AclTypeError("arr", f"dtype {arr.dtype} != tensor dtype {want}{what}")


# (shape, strides, storage elements, element type) -> the aclCreateTensor arguments describing it:
# a few layouts recur in a loop, and aclCreateTensor copies the arrays it is given.
_layouts: dict = {}


def _layout(key):
    shape, strides, storage, dt = key
    nd = len(shape)
    # dims, strides and storage dims in one array.
    dims = ffi.new("int64_t[]", shape + strides + (storage,))
    layout = (dims, nd, _dt.to_acl(dt), dims + nd, dims + 2 * nd)
    if len(_layouts) >= 256:
        _layouts.clear()
    _layouts[key] = layout
    return layout


# Serializes making what a tensor makes on first use: an owning tensor's DeviceBuffer
# (DeviceTensor.buffer), a tensor's aclTensor (DeviceTensor.handle; aclCreateTensor releases
# the GIL). Reentrant: a garbage collection inside may run a finalizer that asks for another
# tensor's.
_lazy_lock = threading.RLock()


def _destroy_tensor(h):
    s = _rt.lib.aclDestroyTensor(h)
    if s:
        from .errors import make_error
        raise make_error(s, "aclDestroyTensor")


class DeviceTensor:
    """A typed strided view of device memory. See the module doc.

    ``DeviceTensor(buffer, shape, dtype, strides=None, offset=0)`` views an existing
    :class:`DeviceBuffer` (the tensor keeps it alive but does not own it); use
    :meth:`empty`, :meth:`zeros` or :meth:`from_numpy` to make owning tensors."""

    __slots__ = ("_buf", "allocation", "_shape", "_strides", "_offset", "_dtype", "_acl",
                 "cached_handle", "_rel", "_owner", "_closed", "__weakref__")

    def __init__(self, buffer: DeviceBuffer, shape: Sequence[int], dtype: DTypeLike,
                 strides: Sequence[int] | None = None, offset: int = 0) -> None:
        if not isinstance(buffer, _mem.DeviceBuffer):
            raise AclTypeError("buffer", f"expected a DeviceBuffer, got "
                               f"{type(buffer).__name__}")
        bst = buffer.allocation
        if bst.closed:
            raise bst.closed_error(repr(buffer))
        shape = _as_shape(shape)
        acl = _dt.element_type(dtype)
        dt, acl = (acl.storage, acl) if type(acl) is _dt.AclDtype else (acl, None)
        if strides is None:
            strides = _contiguous_strides(shape)
        else:
            strides = _as_shape(strides, "strides")
            if len(strides) != len(shape):
                raise AclArgumentError("strides", f"{len(strides)} strides for a rank-"
                                       f"{len(shape)} shape")
        offset = as_dim(offset, "offset")
        storage = bst.nbytes // dt.itemsize if acl is None else bst.nbytes * acl.per_byte
        end = _extent(shape, strides, offset)
        if end > storage:
            raise AclArgumentError(
                "shape", f"a view of shape {shape}, strides {strides} (elements), offset "
                f"{offset} needs {end} elements of {acl.name if acl else dt}, the buffer "
                f"holds {storage} ({size_text(bst.nbytes)})")
        self._init(buffer, bst, shape, dt, strides, offset, False, None)
        self._acl = acl

    def _init(self, buf, st, shape, dt, strides, offset, owner, rel):
        # The DeviceBuffer of the storage: None for an owning tensor made without one
        # (new_output), until someone asks for it (see buffer).
        self._buf = buf
        self.allocation = st
        self._shape = shape
        self._strides = strides
        self._offset = offset
        self._dtype = dt
        # The AclDtype of a HIFLOAT8 / INT4 tensor (its dtype then the storage's uint8): set
        # by the few paths making one (_acl_tensor); None for every other tensor.
        self._acl = None
        # The aclTensor once made (see handle); None before, and once this tensor is closed.
        # acl-py's launch path reads it directly after checking ``allocation.closed``.
        self.cached_handle = None
        # The Releaser of what this tensor releases itself: a view's aclTensor (once made);
        # the storage of an owning tensor made without a DeviceBuffer (shared with the
        # buffer once one is made: see buffer). None otherwise.
        self._rel = rel
        self._owner = owner
        self._closed = False
        return self

    @classmethod
    def _new(cls, buf, shape, dt, strides, offset, owner):
        return object.__new__(cls)._init(buf, buf.allocation, shape, dt, strides, offset,
                                         owner, None)

    @classmethod
    def _new_acl(cls, buf, shape, acl, strides, offset, owner):
        """``_new`` for a tensor of the :class:`~acl_py.dtypes.AclDtype` ``acl``."""
        t = object.__new__(cls)._init(buf, buf.allocation, shape, acl.storage, strides,
                                      offset, owner, None)
        t._acl = acl
        return t

    # ---- construction ----

    @classmethod
    def empty(cls, shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None,
              *, pool: MemoryPool | bool | None = True,
              stream: Stream | None = None) -> DeviceTensor:
        """An uninitialized contiguous tensor (storage from the device's memory pool unless
        ``pool`` is a MemoryPool or None for a direct aclrtMalloc). ``stream``: the stream
        the tensor is for; the pool may then reuse memory freed on it whose work there is
        not done yet (see :class:`~acl_py.DeviceBuffer`)."""
        dims = _as_shape(shape)
        dt = _dt.element_type(dtype)
        if type(dt) is _dt.AclDtype:
            buf = _mem.DeviceBuffer(dt.storage_bytes(_size(dims)), device, pool=pool,
                                    stream=stream)
            return cls._new_acl(buf, dims, dt, _contiguous_strides(dims), 0, True)
        buf = _mem.DeviceBuffer(_size(dims) * dt.itemsize, device, pool=pool, stream=stream)
        return cls._new(buf, dims, dt, _contiguous_strides(dims), 0, True)

    @classmethod
    def new_output(cls, shape: tuple[int, ...], dt: Any, dev: int,
                   stream_state: Any) -> DeviceTensor:
        """A contiguous tensor from ``dev``'s default pool for work on ``stream_state``, for
        checked arguments (``shape`` a tuple of dims, ``dt`` a NumPy dtype acl-py supports,
        ``dev`` a device id): the operators' outputs. Its ``cached_handle`` is made (or
        taken from the block: see the module doc); ``dt`` may be an AclDtype. It owns the
        storage without a
        DeviceBuffer object until one is asked for (``buffer``): a call returning new outputs
        makes several per call, and most are never asked."""
        acl = None
        try:
            nbytes = _size(shape) * dt.itemsize
        except AttributeError:      # an AclDtype (no try cost on the common path)
            acl, dt = dt, dt.storage
            nbytes = acl.storage_bytes(_size(shape))
        st = _mem.default_pool_state(dev).allocate(nbytes, stream_state)
        t = object.__new__(cls)
        t._init(None, st, shape, dt, _contiguous_strides(shape), 0, True,
                _rt.Releaser(t, _mem.release, (st,), _rt.ORDER_MEMORY, st.gen))
        if acl is not None:
            t._acl = acl
        t._describe()       # no lock: no other thread knows the tensor yet
        return t

    @classmethod
    def zeros(cls, shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None,
              *, stream: Stream | None = None,
              pool: MemoryPool | bool | None = True) -> DeviceTensor:
        """A contiguous tensor of zeros (set on ``stream`` if given, else synchronously)."""
        t = cls.empty(shape, dtype, device, pool=pool, stream=stream)
        t.buffer.memset(0, stream=stream)
        return t

    @classmethod
    def from_numpy(cls, arr: ArrayLike, stream: Stream | None = None, *,
                   device: DeviceLike = None, pool: MemoryPool | bool | None = True,
                   element_type: Any = None) -> DeviceTensor:
        """Copies a NumPy array (or anything ``np.asarray`` takes) to the device.

        C- or Fortran-contiguous arrays are copied straight from their buffer (a Fortran
        array becomes a tensor with Fortran strides); other layouts are made C-contiguous
        once first, and so are byte-swapped ones (``">f4"``): device memory holds the native
        order. With ``stream`` the copy is queued there (the array is kept alive until the
        stream synchronizes); otherwise it is synchronous.

        ``element_type``: the tensor's element type, when it is one NumPy has no dtype for
        (never guessed from ``arr``'s dtype): :data:`acl_py.dtypes.HIFLOAT8` (or
        ``"hifloat8"``) takes ``arr`` as uint8 codes, :data:`acl_py.dtypes.INT4` (or
        ``"int4"``) as integer values in [-8, 7], packed two to a byte (the host forms
        ``to_numpy`` gives back); the tensor is C-contiguous. A NumPy dtype given there must
        be ``arr``'s (no cast). None (the default): ``arr``'s dtype."""
        if not isinstance(arr, np.ndarray):
            arr = np.asarray(arr)
        arr = _dt.native(arr)   # a byte-swapped array (">f4") is copied in the device's order
        acl = None
        if element_type is not None:
            acl = _dt.element_type(element_type, "element_type")
            _check_host_form(arr, acl)
        dt = _dt.as_dtype(arr.dtype, "arr") if type(acl) is not _dt.AclDtype else acl.storage
        if device is None and stream is not None and isinstance(stream, _stream.Stream):
            dev = stream.state.device
        else:
            dev = _device.resolve_device(device)
        shape = arr.shape
        if type(acl) is _dt.AclDtype:
            # C order, INT4's values packed (its bytes: what the device holds)
            src = _dt.pack_int4(arr) if acl is _INT4 else np.ascontiguousarray(arr)
            strides = _contiguous_strides(shape)
        elif arr.flags.c_contiguous:
            src, strides = arr, _contiguous_strides(shape)
        elif arr.flags.f_contiguous:
            # Same bytes as its transpose, which is C-contiguous: copy those, keep F strides.
            src = arr.T
            strides = tuple(reversed(_contiguous_strides(tuple(reversed(shape)))))
        else:
            src, strides = np.ascontiguousarray(arr), _contiguous_strides(shape)
        buf = _mem.DeviceBuffer(src.nbytes, dev, pool=pool, stream=stream)
        try:
            if stream is None:
                buf.copy_from_host(src)
            else:
                buf.copy_from_host_async(src, stream)
        except BaseException:
            buf.close()
            raise
        if type(acl) is _dt.AclDtype:
            return cls._new_acl(buf, shape, acl, strides, 0, True)
        return cls._new(buf, shape, dt, strides, 0, True)

    def to_numpy(self, stream: Stream | None = None, *, packed: bool = False) -> np.ndarray:
        """Copies the tensor to a new NumPy array (equal to NumPy's same view of the same
        data). With ``stream`` the copy is queued there and the stream synchronized;
        otherwise it is synchronous, after the streams using the storage have finished.
        A dense view (contiguous or a permutation of it) keeps its layout; a strided view
        is gathered on the host into a C-contiguous array. A HIFLOAT8 tensor gives its uint8
        codes (:func:`acl_py.dtypes.hifloat8_to_float32` decodes them); an INT4 tensor its
        values as int8, C-contiguous, or with ``packed`` its bytes as the device holds them
        (uint8, the last dim halved: a contiguous view from an even element offset with an
        even last dim only)."""
        bst = self._live()
        if self._acl is _INT4:
            return self._int4_to_numpy(bst, stream, packed)
        shape, strides, dt = self._shape, self._strides, self._dtype
        n = _size(shape)
        if n == 0:
            return np.empty(shape, dt)
        item = dt.itemsize
        lo = self._offset
        span = _extent(shape, strides, lo) - lo
        host = np.empty(span, dt)
        if stream is None:
            self.buffer.copy_to_host(host, lo * item)
        else:
            s = _stream.as_stream(stream, bst.device)
            self.buffer.copy_to_host_async(host, s, lo * item)
            s.synchronize()
        if span == n and strides == _contiguous_strides(shape):
            return host.reshape(shape)
        view = np.lib.stride_tricks.as_strided(
            host, shape=shape, strides=tuple(s * item for s in strides))
        # Dense (a permutation of a contiguous layout): the copy is the result. Otherwise
        # gather the view's elements out of the span.
        return view if span == n else np.ascontiguousarray(view)

    def _int4_bytes(self):
        """``(first byte, byte count, element offset in the first byte)`` of the bytes an
        INT4 view touches (its elements' span)."""
        lo = self._offset
        first = lo // 2
        return first, -(-_extent(self._shape, self._strides, lo) // 2) - first, lo - 2 * first

    def int4_words_rule(self) -> str | None:
        """None where this INT4 view's bytes are whole little-endian int32 words, eight
        elements to a word (:meth:`int4_words`), else why not: its last dim a multiple of 8
        and contiguous, its offset and every other stride multiples of 8."""
        if self._acl is not _INT4:
            return f"is not an INT4 tensor ({self!r})"
        shape, strides = self._shape, self._strides
        if not shape or shape[-1] % 8:
            return f"has a last dim {shape[-1] if shape else None} that is no multiple of 8"
        if shape[-1] > 1 and strides[-1] != 1:
            return f"is strided along its last dim (stride {strides[-1]})"
        if self._offset % 8 or any(s % 8 for d, s in zip(shape[:-1], strides) if d > 1):
            return (f"does not start each row at a word (offset {self._offset}, strides "
                    f"{strides}: multiples of 8 elements needed)")
        return None

    def int4_words(self) -> DeviceTensor:
        """An int32 view of this INT4 view's bytes, eight elements to a word (element 8k + j
        in word k's nibble j, lowest first: little-endian words of INT4's bytes): the last
        dim / 8, the other strides and the offset / 8. The INT32 form of an INT4 tensor some
        op_apis take (aclnnRmsNormQuant on Atlas A2/A3). AclArgumentError naming ``tensor``
        where :meth:`int4_words_rule` says the bytes are no whole words."""
        rule = self.int4_words_rule()
        if rule is not None:
            raise AclArgumentError("tensor", rule)
        shape = self._shape[:-1] + (self._shape[-1] // 8,)
        strides = tuple(s // 8 for s in self._strides[:-1]) + (1,)
        return DeviceTensor._new(self.buffer, shape, np.dtype(np.int32), strides,
                                 self._offset // 8 if _size(shape) else 0, False)

    def _int4_to_numpy(self, bst, stream, packed):
        shape, strides = self._shape, self._strides
        if packed:
            if not (self.is_contiguous and self._offset % 2 == 0 and shape
                    and shape[-1] % 2 == 0):
                raise AclArgumentError("packed", f"an INT4 view's bytes are its own only when "
                                       f"it is contiguous from an even element offset with "
                                       f"an even last dim: {self!r}")
            shape = shape[:-1] + (shape[-1] // 2,)
        n = _size(shape)
        if n == 0:
            return np.empty(shape, np.uint8 if packed else np.int8)
        first, count, skip = self._int4_bytes()
        host = np.empty(count, np.uint8)
        if stream is None:
            self.buffer.copy_to_host(host, first)
        else:
            s = _stream.as_stream(stream, bst.device)
            self.buffer.copy_to_host_async(host, s, first)
            s.synchronize()
        if packed:
            return host.reshape(shape)
        values = _dt.unpack_int4(host)[skip:]
        return np.ascontiguousarray(np.lib.stride_tricks.as_strided(
            values, shape=shape, strides=tuple(s * values.itemsize for s in strides)))

    def _int4_from_numpy(self, bst, arr, stream):
        """copy_from_numpy of an INT4 view: its bytes read, its elements replaced, the
        bytes written back (the other nibbles unchanged)."""
        _check_host_form(arr, _INT4)
        if arr.shape != self._shape:
            raise AclArgumentError("arr", f"shape {arr.shape} != tensor shape {self._shape}")
        if arr.size == 0:
            return
        first, count, skip = self._int4_bytes()
        host = np.empty(count, np.uint8)
        self.buffer.copy_to_host(host, first)
        values = _dt.unpack_int4(host)
        view = np.lib.stride_tricks.as_strided(
            values[skip:], shape=self._shape,
            strides=tuple(s * values.itemsize for s in self._strides))
        view[...] = arr
        host = _dt.pack_int4(values)
        if stream is None:
            self.buffer.copy_from_host(host, first)
        else:
            self.buffer.copy_from_host_async(host, _stream.as_stream(stream, bst.device),
                                             first)

    def copy_from_numpy(self, arr: ArrayLike, stream: Stream | None = None) -> None:
        """Writes ``arr`` (same shape; cast-free: same dtype, in either byte order) into
        this tensor. Contiguous tensors take the bytes directly; other views are written
        through a gather of the span (read-modify-write of the bytes between the view's
        elements). A HIFLOAT8 tensor takes uint8 codes; an INT4 tensor integer values in
        [-8, 7] (packed into its bytes; a view's neighbouring nibbles are kept)."""
        bst = self._live()
        arr = _dt.native(np.asarray(arr))
        if self._acl is _INT4:
            return self._int4_from_numpy(bst, arr, stream)
        _check_host_form(arr, self.element_type)
        if arr.shape != self._shape:
            raise AclArgumentError("arr", f"shape {arr.shape} != tensor shape {self._shape}")
        item = self._dtype.itemsize
        if self.is_contiguous:
            src = np.ascontiguousarray(arr)
            if stream is None:
                self.buffer.copy_from_host(src, self._offset * item)
            else:
                self.buffer.copy_from_host_async(src, _stream.as_stream(stream, bst.device),
                                                 self._offset * item)
            return
        if arr.size == 0:
            return
        lo = self._offset
        span = _extent(self._shape, self._strides, lo) - lo
        host = np.empty(span, self._dtype)
        self.buffer.copy_to_host(host, lo * item)
        view = np.lib.stride_tricks.as_strided(
            host, shape=self._shape, strides=tuple(s * item for s in self._strides))
        view[...] = arr
        if stream is None:
            self.buffer.copy_from_host(host, lo * item)
        else:
            self.buffer.copy_from_host_async(host, _stream.as_stream(stream, bst.device),
                                             lo * item)

    def copy_to(self, device: DeviceLike, stream: Stream | None = None, *,
                pool: MemoryPool | bool | None = True) -> DeviceTensor:
        """A new tensor on ``device`` (another device, or this tensor's own) holding a copy of
        this one: the same shape, dtype and strides, over a copy of the storage the view
        spans. Between two devices, peer access must be enabled between them
        (``Device(device).enable_peer_access(self.device)``; else an AclArgumentError naming
        ``src`` says so). Synchronous unless ``stream``, a stream of either device, is given:
        the copy is then queued there, and both storages are kept until that stream has
        passed it. ``pool`` as for :meth:`empty`."""
        self._live()
        dev = _device.resolve_device(device)
        shape, strides, dt = self._shape, self._strides, self._dtype
        lo = self._offset
        if self._acl is _INT4:      # whole bytes: the view keeps its place in the first
            first, nbytes, lo = self._int4_bytes() if _size(shape) else (0, 0, 0)
        else:
            span = _extent(shape, strides, lo) - lo if _size(shape) else 0
            first, nbytes, lo = lo * dt.itemsize, span * dt.itemsize, 0
        # The new storage is for work on `stream` only if the stream is of its device.
        for_stream = (stream if isinstance(stream, _stream.Stream)
                      and stream.state.device == dev else None)
        buf = _mem.DeviceBuffer(nbytes, dev, pool=pool, stream=for_stream)
        try:
            if nbytes:
                buf.copy_from(self.buffer, nbytes, stream=stream, src_offset=first)
        except BaseException:
            buf.close()
            raise
        if self._acl is not None:
            return type(self)._new_acl(buf, shape, self._acl, strides, lo, True)
        return type(self)._new(buf, shape, dt, strides, 0, True)

    # ---- properties ----

    def _live(self):
        bst = self.allocation
        if self._closed or bst.closed:
            raise self._closed_error()
        return bst

    def _closed_error(self):
        if self.allocation.gen != _rt.gen:
            return _rt.FinalizedError("DeviceTensor")
        if self._closed:
            return ClosedError("DeviceTensor is closed")
        return ClosedError("DeviceTensor's storage is closed (the tensor that owned it was "
                           "closed)")

    @property
    def handle(self) -> Any:
        """The cached ``aclTensor *`` of this view (created on first use)."""
        h = self.cached_handle
        if h is None or self.allocation.closed:
            h = self._make_handle()
        return h

    def _make_handle(self):
        """The aclTensor, made once: under a lock, so that threads asking for it at once get
        one (each making its own would leak all but the last)."""
        with _lazy_lock:
            return self._describe()

    def _describe(self):
        """Makes (or takes from the storage's block) and caches the aclTensor; the caller
        holds ``_lazy_lock`` or is the only one to know the tensor."""
        bst = self._live()
        if self.cached_handle is not None:
            return self.cached_handle
        if self._owner:
            # The storage's own tensor: its aclTensor is released with the storage (one
            # release for both), and a pooled block keeps it for its next owning tensor of
            # the same layout (a call returning new outputs makes several per call).
            key = self._layout_key(bst)
            desc = bst.desc
            if desc is not None and desc[0] == key:
                h = desc[1]
            else:
                h = self._create_handle(bst, key)
                bst.desc = (key, h)
                if desc is not None:    # the block's previous owner had another layout
                    try:
                        _mem.destroy_desc(desc)
                    except Exception:
                        # Not this tensor's failure: retried by release_unused / teardown.
                        _rt.Releaser(None, _destroy_tensor, (desc[1],), _rt.ORDER_HANDLE,
                                     bst.gen)
        else:
            h = self._create_handle(bst, self._layout_key(bst))
            # Its session is its storage's, checked live above (see Releaser's made_in).
            self._rel = _rt.Releaser(self, _destroy_tensor, (h,), _rt.ORDER_HANDLE, bst.gen)
        self.cached_handle = h
        return h

    def _layout_key(self, bst):
        """What aclCreateTensor is told besides the data pointer and the offset: the
        element type last (an AclDtype for HIFLOAT8 / INT4 tensors, else the dtype)."""
        acl = self._acl
        if acl is None:
            return (self._shape, self._strides, bst.nbytes // self._dtype.itemsize,
                    self._dtype)
        return (self._shape, self._strides, bst.nbytes * acl.per_byte, acl)

    def _create_handle(self, bst, key):
        L = _rt.lib if _rt.ready else _rt.ensure()
        layout = _layouts.get(key)
        if layout is None:
            layout = _layout(key)
        dims, nd, code, strides, storage_dims = layout
        h = L.aclCreateTensor(dims, nd, code, strides, self._offset, self._format,
                              storage_dims, 1, bst.ptr)
        if not h:
            check_create(h, "aclCreateTensor")
        return h

    def repoint(self, target: DeviceTensor) -> None:
        """For an executor whose library was just told to read this view's aclTensor at
        ``target``'s storage (``aclSetTensorAddr``): the view now describes ``target``'s memory
        and holds its buffer instead of the old one; its aclTensor stays the same. ``target``
        must have this view's dtype (and element type), shape, strides and offset (the
        aclTensor's description); an owning tensor (its handle is its storage's) cannot be
        re-pointed."""
        if self._owner:
            raise AclArgumentError("tensor", "owns its storage: only a view can be re-pointed")
        if (target._dtype, target._acl, target._shape, target._strides, target._offset) != \
                (self._dtype, self._acl, self._shape, self._strides, self._offset):
            raise AclArgumentError("target", f"{target!r} is not described as {self!r}")
        buf = target.buffer
        self._buf = buf
        self.allocation = buf.allocation

    # Every tensor is described as ND, but a view made by with_format (a class attribute: no
    # per-tensor cost where it never changes).
    _format = _ND

    def with_format(self, format: str) -> DeviceTensor:
        """A view of this tensor (same memory, shape, strides, offset) whose aclTensor has
        the aclFormat ``format`` (a name of :data:`FORMATS`: ``"NCHW"``, ``"NHWC"``, ``"ND"``)
        instead of ND: for an op_api that reads an input's layout from its storage format
        (aclnnBatchNormReduce's x). Its views keep that format."""
        code = FORMATS.get(format) if isinstance(format, str) else None
        if code is None:
            raise AclArgumentError("format", f"{format!r} is not one of "
                                   f"{', '.join(FORMATS)}")
        self._live()
        v = self._view(self._shape, self._strides, self._offset)
        return v if code == _ND else _formatted(v, code)

    def new_handle(self) -> Any:
        """A NEW ``aclTensor *`` describing this view, owned by the caller (not cached, not
        destroyed by this tensor): for APIs that take ownership of tensors, such as
        ``aclCreateTensorList`` (see :class:`acl_py.TensorList`)."""
        bst = self._live()
        return self._create_handle(bst, self._layout_key(bst))

    # Read on every operator call: C-level getters (operator.attrgetter), not Python ones.
    shape = property(operator.attrgetter("_shape"), doc="The shape, a tuple of ints.")
    dtype = property(operator.attrgetter("_dtype"), doc="The NumPy dtype.")

    @property
    def acl_dtype(self) -> int:
        """The aclDataType value."""
        acl = self._acl
        return _dt.to_acl(self._dtype) if acl is None else acl.code

    @property
    def element_type(self) -> Any:
        """What an element is: :data:`acl_py.dtypes.HIFLOAT8` or :data:`acl_py.dtypes.INT4`
        for a tensor of theirs (``dtype`` is then its bytes' uint8), else ``dtype``."""
        acl = self._acl
        return self._dtype if acl is None else acl

    strides = property(operator.attrgetter("_strides"), doc="Strides in elements.")
    offset = property(operator.attrgetter("_offset"),
                      doc="Offset of the first element from the storage base, in elements.")

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return _size(self._shape)

    @property
    def itemsize(self) -> int:
        """Bytes of ``dtype`` (an INT4 tensor's: 1, a byte holding two elements)."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (INT4: half their count, rounded up)."""
        if self._acl is _INT4:
            return _INT4.storage_bytes(_size(self._shape))
        return _size(self._shape) * self._dtype.itemsize

    @property
    def device(self) -> Device:
        return _device.Device(self.allocation.device)

    @property
    def buffer(self) -> DeviceBuffer:
        """The DeviceBuffer holding the storage."""
        buf = self._buf
        if buf is None:
            buf = self._make_buffer()
        return buf

    def _make_buffer(self):
        """The DeviceBuffer of an owning tensor made without one (new_output): it takes over
        the storage's Releaser, so the storage lives as long as either of them (the buffer
        may outlive the tensor) and is released once. Under a lock: two threads asking at
        once get the same buffer (the Releaser follows one owner)."""
        with _lazy_lock:
            buf = self._buf
            if buf is None:
                buf = self._buf = _mem.DeviceBuffer.adopt(self.allocation, self._rel)
        return buf

    @property
    def storage_size(self) -> int:
        """Elements in the storage (what ``aclCreateTensor`` gets as storage dims)."""
        if self._acl is _INT4:
            return self.allocation.nbytes * 2
        return self.allocation.nbytes // self._dtype.itemsize

    @property
    def data_ptr(self) -> int:
        """Device address of the first element of the view (an int; INT4: of the byte holding
        it)."""
        off = self._offset // 2 if self._acl is _INT4 else self._offset * self.itemsize
        return int(ffi.cast("uintptr_t", self._live().ptr)) + off

    @property
    def is_contiguous(self) -> bool:
        """C-contiguous (dims of size 1 may have any stride)."""
        expected = 1
        for d, s in zip(reversed(self._shape), reversed(self._strides)):
            if d == 0:
                return True
            if d != 1 and s != expected:
                return False
            expected *= d
        return True

    @property
    def closed(self) -> bool:
        return self._closed or self.allocation.closed

    @property
    def is_view(self) -> bool:
        return not self._owner

    def check_device(self, device: Device | int, argument: str = "tensor") -> DeviceTensor:
        """Returns the tensor; raises AclArgumentError naming ``argument`` unless it is on
        ``device``."""
        dev = device.id if isinstance(device, _device.Device) else device
        if self.allocation.device != dev:
            raise AclArgumentError(argument, f"tensor is on device {self.allocation.device}, "
                                   f"expected device {dev}")
        return self

    # ---- views ----

    def _view(self, shape, strides, offset):
        if _size(shape) == 0:
            offset = 0   # an empty view touches nothing; keep aclCreateTensor's check trivial
        if self._acl is not None:
            return DeviceTensor._new_acl(self.buffer, shape, self._acl, strides, offset, False)
        return DeviceTensor._new(self.buffer, shape, self._dtype, strides, offset, False)

    def __getitem__(self, key: Any) -> DeviceTensor:
        self._live()
        if not isinstance(key, tuple):
            key = (key,)
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if n_real > len(self._shape):
            raise IndexError(f"too many indices for a tensor of rank {len(self._shape)}: "
                             f"{n_real} given")
        expanded = []
        for k in key:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (len(self._shape) - n_real))
            else:
                expanded.append(k)
        expanded.extend([slice(None)] * (len(self._shape) - sum(
            1 for k in expanded if k is not None)))
        shape, strides = [], []
        offset = self._offset
        axis = 0
        for k in expanded:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            d, s = self._shape[axis], self._strides[axis]
            if isinstance(k, slice):
                start, stop, step = k.indices(d)
                if step <= 0:
                    raise AclArgumentError(
                        "key", f"slice step {step} on axis {axis}: aclCreateTensor takes "
                        f"non-negative strides only")
                length = len(range(start, stop, step))
                if length:
                    offset += start * s
                shape.append(length)
                strides.append(s * step)
            elif isinstance(k, (bool, np.bool_)):
                raise AclTypeError("key", "boolean indices are not supported")
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise AclTypeError("key", f"indices must be ints, slices, None or "
                                       f"Ellipsis, got {type(k).__name__}") from None
                if not -d <= i < d:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with "
                                     f"size {d}")
                offset += (i % d) * s
            axis += 1
        return self._view(tuple(shape), tuple(strides), offset)

    def transpose(self, *axes: Any) -> DeviceTensor:
        """A view with permuted axes (default: reversed), like ``np.transpose``."""
        nd = len(self._shape)
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        if not axes:
            axes = tuple(range(nd - 1, -1, -1))
        try:
            axes = tuple(operator.index(a) for a in axes)
        except TypeError:
            raise AclTypeError("axes", f"expected ints, got {axes!r}") from None
        axes = tuple(a + nd if a < 0 else a for a in axes)
        if sorted(axes) != list(range(nd)):
            raise AclArgumentError("axes", f"{axes} is not a permutation of the "
                                   f"{nd} axes")
        self._live()
        return self._view(tuple(self._shape[a] for a in axes),
                          tuple(self._strides[a] for a in axes), self._offset)

    permute = transpose

    @property
    def T(self) -> DeviceTensor:
        return self.transpose()

    def reshape(self, *shape: Any) -> DeviceTensor:
        """A view with a new shape (one dim may be -1); contiguous tensors only."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        self._live()
        n = self.size
        dims = list(shape)
        unknown = [i for i, d in enumerate(dims) if not isinstance(d, bool)
                   and isinstance(d, (int, np.integer)) and d == -1]
        if len(unknown) > 1:
            raise AclArgumentError("shape", "only one dimension may be -1")
        if unknown:
            rest = _size([as_dim(d, f"shape[{i}]") for i, d in enumerate(dims)
                          if i != unknown[0]])
            if rest == 0 or n % rest:
                raise AclArgumentError("shape", f"cannot reshape {self._shape} into {dims}")
            dims[unknown[0]] = n // rest
        shape = _as_shape(dims)
        if _size(shape) != n:
            raise AclArgumentError("shape", f"cannot reshape {self._shape} ({n} elements) "
                                   f"into {shape}")
        if not self.is_contiguous:
            raise AclArgumentError("self", "reshape needs a contiguous tensor; this view has "
                                   f"strides {self._strides}")
        return self._view(shape, _contiguous_strides(shape), self._offset)

    # ---- lifetime ----

    def close(self) -> None:
        """Destroys the aclTensor handle; an owning tensor also frees its storage (after the
        streams still using it synchronize), which closes its views. Safe to repeat."""
        rel = self._rel
        if rel is not None:
            # A view's handle; or the storage of an owning tensor made without a buffer
            # (the Releaser it shares with its buffer if one was made since).
            try:
                rel.release()
            except Exception:
                raise           # still owned: close() may be retried
            except BaseException:
                # Interrupted: maybe destroyed, never retried (Releaser.release): closed.
                self.cached_handle = None
                self._closed = True
                raise
        if self._owner and self._buf is not None:
            self._buf.close()   # the storage, and with it this tensor's handle
        self.cached_handle = None
        self._closed = True

    def __enter__(self) -> DeviceTensor:
        self._live()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    # ---- Python and NumPy protocols ----
    # Like CuPy's arrays: a tensor is never converted to NumPy implicitly. Without __array__,
    # NumPy would fall back to the sequence protocol (len + indexing) and build an object
    # array of 0-d device views, silently. There is no __array_interface__ or buffer protocol
    # either: the data is in device memory, which the host cannot address.

    def __array__(self, dtype: Any = None, copy: Any = None) -> NoReturn:
        raise TypeError("a DeviceTensor lives in device memory and is not converted to a "
                        "NumPy array implicitly: use .to_numpy() to copy it to the host")

    def __len__(self) -> int:
        """The size of the first dimension (TypeError for a 0-d tensor, as in NumPy)."""
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self) -> Iterator[DeviceTensor]:
        """Views of the sub-tensors along the first dimension (``t[0]``, ``t[1]``, ...), as
        NumPy iterates; TypeError for a 0-d tensor."""
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        self._live()
        return (self[i] for i in range(self._shape[0]))

    def __bool__(self) -> NoReturn:
        # With __len__ alone, `if tensor:` would be len(tensor) != 0, true or false by shape:
        # a silent bug. NumPy refuses ambiguous truth values; the values are on the device.
        raise TypeError("the truth value of a DeviceTensor is ambiguous (its values are in "
                        "device memory): test `tensor is not None`, `tensor.size`, or "
                        "`tensor.to_numpy()`")

    def __repr__(self):
        state = " closed" if self.closed else ""
        dtype = self._dtype if self._acl is None else self._acl.name
        fmt = "" if self._format == _ND else f" format={_FORMAT_NAMES[self._format]}"
        return (f"<acl_py.DeviceTensor{state} shape={self._shape} dtype={dtype} "
                f"strides={self._strides} offset={self._offset}{fmt} "
                f"device={self.allocation.device}>")


def _drop_after_fork():
    """Forked child: a parent's thread may have held the lock."""
    global _lazy_lock
    _lazy_lock = threading.RLock()


_rt.register_step("fork", _drop_after_fork)


class _FormatView(DeviceTensor):
    """A view described in another aclFormat than ND (:meth:`DeviceTensor.with_format`)."""

    __slots__ = ("_format",)

    def _view(self, shape, strides, offset):
        # a view of it (an executor's own copy: ops._two_phase.own_copy) keeps the format
        return _formatted(super()._view(shape, strides, offset), self._format)


def _formatted(v, code):
    """New view ``v`` (no aclTensor yet) as a :class:`_FormatView` in aclFormat ``code``."""
    f = object.__new__(_FormatView)
    for name in DeviceTensor.__slots__[:-1]:     # all but __weakref__
        setattr(f, name, getattr(v, name))
    f._format = code
    return f


__all__ = ["DeviceTensor", "FORMATS"]
