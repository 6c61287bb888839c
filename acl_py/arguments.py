"""Operator argument objects beyond tensors: ``IntArray`` (``aclIntArray``), ``BoolArray``
(``aclBoolArray``), ``FloatArray`` (``aclFloatArray``), ``Scalar`` (``aclScalar``),
``TensorList`` (``aclTensorList``) and ``ScalarList`` (``aclScalarList``).

Ownership follows libnnopbase (hicann/opbase src/nnopbase/common/api/acl_op_api.cpp): a
scalar and an int, bool or float array copy their values; a list copies its pointer array and TAKES
OWNERSHIP of its elements (``aclDestroyTensorList`` destroys every tensor in it). So a
``TensorList`` gives the C list fresh ``aclTensor`` handles of its own (the DeviceTensors keep
theirs), and a ``ScalarList`` makes its own ``aclScalar`` handles; destroying the list
destroys exactly those, once. The Python objects keep the tensors they describe (and so their
device memory) alive.

Every object is a context manager with ``close()``; a finalizer and ``acl_py.finalize()``
release what is left.
"""
from __future__ import annotations

import numbers
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Sequence, TypeVar

import numpy as np

from ._ffi import ffi
from . import dtypes as _dt
from . import runtime as _rt
from .errors import AclArgumentError, AclTypeError, ClosedError, check_create, make_error
from ._integers import as_int
from .tensor import DeviceTensor

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

# A cffi ``CData`` (cffi ships no type stubs): an ``acl*`` handle or pointer.
Handle = Any
Number = Any   # a Python or NumPy number (bool, int, float, complex, np.generic)
_Self = TypeVar("_Self", bound="ArgumentObject")


def _destroyer(call: str) -> Callable[[Handle], None]:
    def destroy(h: Handle) -> None:
        s = getattr(_rt.lib, call)(h)
        if s:
            raise make_error(s, call)
    destroy.__name__ = f"_destroy_{call}"
    return destroy


_destroy_scalar = _destroyer("aclDestroyScalar")
_destroy_int_array = _destroyer("aclDestroyIntArray")
_destroy_bool_array = _destroyer("aclDestroyBoolArray")
_destroy_float_array = _destroyer("aclDestroyFloatArray")
_destroy_tensor = _destroyer("aclDestroyTensor")
_destroy_tensor_list = _destroyer("aclDestroyTensorList")
_destroy_scalar_list = _destroyer("aclDestroyScalarList")


class ArgumentObject:
    """Base of the argument objects here: one C handle (``handle``) released exactly once
    (close, garbage collection or teardown)."""

    __slots__ = ("_handle", "_rel", "_gen", "__weakref__")
    _handle: Handle | None
    _rel: _rt.Releaser | None
    _gen: int

    def _adopt(self, h: Handle, destroy: Callable[[Handle], None], made_in: int) -> None:
        """Owns ``h``, made in session ``made_in`` (read before the C call: see Releaser)."""
        self._rel = _rt.Releaser(self, destroy, (h,), _rt.ORDER_HANDLE, made_in)
        self._gen = made_in
        self._handle = h

    @property
    def handle(self) -> Handle:
        """The C handle (``aclIntArray *`` ...), for interop; ClosedError once closed."""
        h = self._handle
        # close() clears the handle; only a teardown (a new session number) releases it
        # behind the object's back. Read on every operator call: two compares.
        if h is None or self._gen != _rt.gen:
            raise self._closed_error()
        return h

    def _closed_error(self) -> Exception:
        if self._handle is None:
            return ClosedError(f"{type(self).__name__} is closed")
        return _rt.FinalizedError(type(self).__name__)  # only teardown releases behind us

    @property
    def closed(self) -> bool:
        return self._handle is None or self._gen != _rt.gen

    def close(self) -> None:
        """Destroys the handle. Safe to repeat."""
        if self._rel is not None:
            try:
                self._rel.release()
            except Exception:
                raise           # still owned: close() may be retried
            except BaseException:
                self._handle = None     # interrupted: maybe destroyed (Releaser.release)
                raise
        self._handle = None

    def __enter__(self: _Self) -> _Self:
        self.handle
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False


class _OwnedSequence(ArgumentObject):
    """An owned handle describing a fixed sequence of items (``_items``)."""

    __slots__ = ("_items",)
    _items: tuple[Any, ...]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __getitem__(self, i: int) -> Any:
        return self._items[i]

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<acl_py.{type(self).__name__}{state} {list(self._items)}>"


# ---- IntArray, BoolArray ---------------------------------------------------------------------

_INT64 = (-2 ** 63, 2 ** 63 - 1)


class IntArray(_OwnedSequence):
    """An ``aclIntArray`` of int64 values (e.g. a normalized shape)."""

    __slots__ = ()

    def __init__(self, values: Iterable[int]) -> None:
        self._handle = None
        self._rel = None
        vals = as_sequence(values, "values")
        items = []
        for i, v in enumerate(vals):
            d = as_int(v, f"values[{i}]")
            if not _INT64[0] <= d <= _INT64[1]:
                raise AclArgumentError(f"values[{i}]", f"{d} does not fit in int64")
            items.append(d)
        self._items = tuple(items)
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        # Never NULL, even for 0 values: some releases reject NULL whatever the size.
        arr = ffi.new("int64_t[]", self._items or (0,))
        self._adopt(check_create(L.aclCreateIntArray(arr, len(items)), "aclCreateIntArray"),
                    _destroy_int_array, made_in)

    @property
    def values(self) -> tuple[int, ...]:
        return self._items


class BoolArray(_OwnedSequence):
    """An ``aclBoolArray`` (e.g. an output mask). Values must be bools."""

    __slots__ = ()

    def __init__(self, values: Iterable[bool]) -> None:
        self._handle = None
        self._rel = None
        vals = as_sequence(values, "values")
        for i, v in enumerate(vals):
            if not isinstance(v, (bool, np.bool_)):
                raise AclTypeError(f"values[{i}]", f"expected a bool, got "
                                   f"{type(v).__name__} {v!r}")
        self._items = tuple(bool(v) for v in vals)
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        arr = ffi.new("bool[]", self._items or (False,))
        self._adopt(check_create(L.aclCreateBoolArray(arr, len(vals)), "aclCreateBoolArray"),
                    _destroy_bool_array, made_in)

    @property
    def values(self) -> tuple[bool, ...]:
        return self._items


# ---- shared arrays: a handful of shapes and masks recur in a loop ----------------------------

SHARED_MAX = 64
_shared: dict = {}   # (cls, values) -> (array, handle, session number)
# Guards changes to _shared (lookups need no lock): evicting with next(iter(d)) while another
# thread inserts would raise, or pop what the other just put.
_shared_lock = threading.Lock()


def shared_array(cls: type, values: tuple[Any, ...]) -> tuple[Any, Handle, int]:
    """``(array, handle, session)`` of a ``cls(values)`` shared by every operator call passing
    the same values (IntArray, BoolArray, FloatArray), so a loop does not create and destroy
    one per call. ``values`` must already be what ``cls`` stores (ints, bools, floats): the key
    is the values, and ``1``, ``1.0`` and ``True`` are equal in Python."""
    key = (cls, values)
    e = _shared.get(key)
    if e is not None and e[2] == _rt.gen:
        return e
    with _shared_lock:
        e = _shared.get(key)
        if e is None or e[2] != _rt.gen:   # another session: acl_py.finalize() released it
            while len(_shared) >= SHARED_MAX:
                # Dropped, never closed: another thread may be passing this very array to
                # phase one right now. Its releaser destroys it when the last holder lets go.
                del _shared[next(iter(_shared))]
            a = cls(values)
            e = _shared[key] = (a, a.handle, _rt.gen)
        return e


def clear_shared_arrays() -> None:
    """Drops the shared arrays (recreated on demand); each is destroyed as soon as no call in
    flight holds it. ``acl_py.release_unused()`` calls it."""
    with _shared_lock:
        dropped = list(_shared.values())
        _shared.clear()
    del dropped   # the releasers run here, outside the lock


def _drop_after_fork() -> None:
    """Forked child: the shared arrays are the parent's (dropped: their releasers are no
    longer registered, so nothing is destroyed)."""
    global _shared_lock
    _shared_lock = threading.Lock()
    _shared.clear()


_rt.register_cache(clear_shared_arrays)
_rt.register_step("fork", _drop_after_fork)


# ---- Scalar ----------------------------------------------------------------------------------

def natural_dtype(value: Number, argument: str = "value") -> np.dtype:
    """The dtype a Python value becomes as a scalar when none is given: a NumPy scalar keeps
    its own; bool -> bool, int -> int64, float -> float64, complex -> complex128 (the types
    Python itself computes in, as torch's Scalar does)."""
    if isinstance(value, np.generic):
        return _dt.as_dtype(value.dtype, argument)
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, numbers.Integral):
        return np.dtype(np.int64)
    if isinstance(value, numbers.Real):
        return np.dtype(np.float64)
    if isinstance(value, numbers.Complex):
        return np.dtype(np.complex128)
    raise AclTypeError(argument, f"expected a number, got {type(value).__name__} {value!r}")


def scalar_bytes(value: Number, dtype: DTypeLike, argument: str = "value") -> bytes:
    """``value`` in ``dtype``'s representation, refusing lossy conversions: a bool dtype
    takes bools, an integer dtype integers in its range, a real dtype real numbers (rounded
    to it), a complex dtype any number."""
    dt = _dt.as_dtype(dtype, "dtype")
    kind = dt.kind
    if isinstance(value, np.generic):
        value = value.item()
    ok = {"b": lambda v: isinstance(v, bool),
          "i": lambda v: isinstance(v, numbers.Integral),
          "u": lambda v: isinstance(v, numbers.Integral),
          "f": lambda v: isinstance(v, numbers.Real),
          "V": lambda v: isinstance(v, numbers.Real),      # bfloat16 (ml_dtypes)
          "c": lambda v: isinstance(v, numbers.Complex)}.get(kind)
    if ok is None or not ok(value):
        raise AclTypeError(argument, f"{type(value).__name__} {value!r} cannot be a scalar "
                           f"of dtype {dt} without loss")
    if kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise AclArgumentError(argument, f"{value} is out of range for {dt} "
                                   f"[{info.min}, {info.max}]")
        value = int(value)
    with np.errstate(over="ignore"):  # a float too large for float16 becomes inf, as on a device
        return np.array(value, dtype=dt).tobytes()


class Scalar(ArgumentObject):
    """An ``aclScalar``: ``Scalar(value, dtype=None)``. ``dtype`` is a NumPy dtype (or
    anything ``np.dtype`` takes, e.g. ``"float16"``); by default the value's natural one
    (see :func:`natural_dtype`)."""

    __slots__ = ("_value", "_dtype")

    def __init__(self, value: Number, dtype: DTypeLike | None = None) -> None:
        self._handle = None
        self._rel = None
        dt = natural_dtype(value) if dtype is None else _dt.as_dtype(dtype, "dtype")
        raw = scalar_bytes(value, dt)
        self._value = value.item() if isinstance(value, np.generic) else value
        self._dtype = dt
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        buf = ffi.new("char[]", raw)
        self._adopt(check_create(L.aclCreateScalar(buf, _dt.to_acl(dt)), "aclCreateScalar"),
                    _destroy_scalar, made_in)

    @property
    def value(self) -> Number:
        return self._value

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<acl_py.Scalar{state} {self._value!r} dtype={self._dtype}>"


# ---- FloatArray ------------------------------------------------------------------------------

class FloatArray(_OwnedSequence):
    """An ``aclFloatArray`` of float32 values (e.g. an operator's per-axis scales)."""

    __slots__ = ()

    def __init__(self, values: Iterable[float]) -> None:
        self._handle = None
        self._rel = None
        vals = as_sequence(values, "values")
        for i, v in enumerate(vals):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise AclTypeError(f"values[{i}]", f"expected a real number, got "
                                   f"{type(v).__name__} {v!r}")
        with np.errstate(over="ignore"):
            arr32 = np.asarray(vals, dtype=np.float32).reshape(-1)
        self._items = tuple(float(v) for v in arr32)
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        arr = ffi.new("float[]", self._items or (0.0,))  # never NULL, even for 0 values
        self._adopt(check_create(L.aclCreateFloatArray(arr, len(vals)), "aclCreateFloatArray"),
                    _destroy_float_array, made_in)

    @property
    def values(self) -> tuple[float, ...]:
        """The values as stored (rounded to float32)."""
        return self._items


def as_sequence(values: Any, argument: str) -> tuple[Any, ...]:
    """``values`` as a tuple (a NumPy array flattened); AclTypeError naming ``argument`` for
    a str, bytes or anything not iterable."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise AclTypeError(argument, f"expected a sequence, got {type(values).__name__}")
    if isinstance(values, np.ndarray):
        return tuple(values.reshape(-1).tolist())
    return tuple(values)


# ---- lists -----------------------------------------------------------------------------------

def _make_list(items: Sequence[Handle], create_call: str, item_type: str,
               destroy_item: Callable[[Handle], None]) -> Handle:
    """Creates the C list from freshly made element handles (``items``: handles or NULL).
    Until the list exists the handles are ours, destroyed on failure; after, the list owns
    them."""
    arr = ffi.new(f"{item_type} *[]", items or [ffi.NULL])
    h = getattr(_rt.lib, create_call)(arr, len(items))
    if not h:
        try:
            check_create(h, create_call)  # raises, with the library's message
        finally:
            for it in items:
                if it:
                    destroy_item(it)
    return h


class TensorList(_OwnedSequence):
    """An ``aclTensorList`` of DeviceTensors (``None`` for an absent element). The C list gets
    its own aclTensor handles (aclCreateTensorList takes ownership of them), so closing it
    leaves the DeviceTensors usable; it keeps them, and their storage, alive."""

    __slots__ = ()

    def __init__(self, tensors: Iterable[DeviceTensor | None]) -> None:
        self._handle = None
        self._rel = None
        tensors = as_sequence(tensors, "tensors")
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, DeviceTensor):
                raise AclTypeError(f"tensors[{i}]", f"expected a DeviceTensor or None, got "
                                   f"{type(t).__name__}")
        _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        handles: list[Handle] = []
        try:
            for t in tensors:
                handles.append(ffi.NULL if t is None else t.new_handle())
        except BaseException:
            for h in handles:
                if h:
                    _destroy_tensor(h)
            raise
        self._items = tensors
        self._adopt(_make_list(handles, "aclCreateTensorList", "aclTensor", _destroy_tensor),
                    _destroy_tensor_list, made_in)

    @property
    def handle(self) -> Handle:
        h = super().handle
        for i, t in enumerate(self._items):
            if t is not None and t.closed:
                raise ClosedError(f"TensorList element {i} is closed (its device memory may "
                                  f"be gone)")
        return h

    @property
    def tensors(self) -> tuple[DeviceTensor | None, ...]:
        return self._items

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<acl_py.TensorList{state} of {len(self._items)}>"


class ScalarList(_OwnedSequence):
    """An ``aclScalarList``. Elements: numbers (natural dtype) or :class:`Scalar` (its value
    and dtype are copied: the list owns scalars of its own, so the Scalar stays usable)."""

    __slots__ = ("_dtypes",)

    def __init__(self, values: Iterable[Number | Scalar], dtype: DTypeLike | None = None) -> None:
        self._handle = None
        self._rel = None
        vals = as_sequence(values, "values")
        specs: list[tuple[Number, np.dtype]] = []
        for i, v in enumerate(vals):
            if isinstance(v, Scalar):
                specs.append((v.value, v.dtype))
            else:
                dt = natural_dtype(v, f"values[{i}]") if dtype is None else \
                    _dt.as_dtype(dtype, "dtype")
                specs.append((v, dt))
        raws = [scalar_bytes(v, dt, f"values[{i}]") for i, (v, dt) in enumerate(specs)]
        L = _rt.ensure()
        made_in = _rt.gen   # before the C call: see Releaser
        handles: list[Handle] = []
        try:
            for raw, (_v, dt) in zip(raws, specs):
                buf = ffi.new("char[]", raw)
                handles.append(check_create(L.aclCreateScalar(buf, _dt.to_acl(dt)),
                                            "aclCreateScalar"))
        except BaseException:
            for h in handles:
                _destroy_scalar(h)
            raise
        self._items = tuple(v for v, _dt_ in specs)
        self._dtypes = tuple(dt for _v, dt in specs)
        self._adopt(_make_list(handles, "aclCreateScalarList", "aclScalar", _destroy_scalar),
                    _destroy_scalar_list, made_in)

    @property
    def values(self) -> tuple[Number, ...]:
        return self._items

    @property
    def dtypes(self) -> tuple[np.dtype, ...]:
        return self._dtypes


def c_string(value: str | bytes, name: str) -> bytes:
    """The bytes a ``const char *`` argument passes for ``value`` (a str, UTF-8 encoded, or
    bytes; cffi adds the terminating NUL): AclTypeError naming ``name`` for anything else or
    a NUL inside, which would end the C string there."""
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, bytes) or b"\0" in value:
        raise AclTypeError(name, f"expected a str without NUL characters, got "
                           f"{type(value).__name__}")
    return value


__all__ = ["ArgumentObject", "as_sequence", "IntArray", "BoolArray", "Scalar", "FloatArray",
           "TensorList", "ScalarList", "shared_array", "clear_shared_arrays", "SHARED_MAX",
           "natural_dtype", "scalar_bytes", "c_string"]
