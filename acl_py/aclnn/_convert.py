"""Python values -> the C arguments of an aclnn operator, by the parameter's C type.

Each parameter gets one converter, chosen once from its type (``_header.CParam.base``):

================================  ==============================================================
C type                            accepted Python values
================================  ==============================================================
``aclTensor *``                   DeviceTensor; NumPy array (staged to the device on the call's
                                  stream; an output-like parameter is copied back after the
                                  stream synchronizes); None
``aclTensorList *``               TensorList; a sequence of DeviceTensors / NumPy arrays / None
``aclScalar *``                   Scalar; a number (its natural dtype, see ``acl_py.Scalar``)
``aclScalarList *``               ScalarList; a sequence of numbers / Scalars
``aclIntArray *`` ...Float/Bool   IntArray / FloatArray / BoolArray; a sequence
``double``, ``float``             a real number
``int8_t`` ... ``uint64_t``       an integer in the type's range
``bool``                          a bool
``char *``                        a str (or bytes)
``aclDataType``                   a NumPy dtype (or anything ``np.dtype`` takes), or the enum int
``aclFormat`` and other enums     the enum int
any other pointer                 a cffi pointer, or None
================================  ==============================================================

A cffi pointer (``ffi.CData``) is accepted for every pointer parameter and passed as is.
A conversion returns the C value phase one takes (a handle, NULL, a number), in one pass: the
:class:`Call` collects the memory the launch uses and what the handles live in (the objects
it created; for an executor, its own copies of the arguments: ``Call(own=True)``).
IntArray/BoolArray/FloatArray made from sequences are shared by value with every operator call
(``acl_py.arguments.shared_array``, the cache the declared operators use too), so a loop does not
create and destroy them every call.
"""
from __future__ import annotations

import numbers
import operator
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .._ffi import ffi
from .. import dtypes as _dt
from ..arguments import (BoolArray, FloatArray, IntArray, Scalar, ScalarList, TensorList,
                         as_sequence, c_string, shared_array)
from ..errors import AclArgumentError, AclTypeError
from ..ops._two_phase import own_copy
from ..tensor import DeviceTensor

if TYPE_CHECKING:
    from ..arguments import ArgumentObject
    from ..stream import Stream
    from ._header import CParam

Converter = Callable[[Any, "Call"], Any]
"""One parameter's conversion: (the caller's value, the call) -> phase one's C value."""

_CData = ffi.CData
_NULL = ffi.NULL

INT_RANGES = {
    "int8_t": (-2 ** 7, 2 ** 7 - 1), "int16_t": (-2 ** 15, 2 ** 15 - 1),
    "int32_t": (-2 ** 31, 2 ** 31 - 1), "int64_t": (-2 ** 63, 2 ** 63 - 1),
    "uint8_t": (0, 2 ** 8 - 1), "uint16_t": (0, 2 ** 16 - 1), "uint32_t": (0, 2 ** 32 - 1),
    "uint64_t": (0, 2 ** 64 - 1), "int": (-2 ** 31, 2 ** 31 - 1), "size_t": (0, 2 ** 64 - 1),
    "long": (-2 ** 63, 2 ** 63 - 1),
}
FLOATS = ("double", "float")
ENUMS = ("aclFormat",)  # plain ints; aclDataType has its own converter


class Call:
    """What one call (operator ``name`` on ``device``) collects while converting: ``allocs``
    the memory the launch uses; ``keep`` what the C values live in that nothing else holds
    (shared arrays; with ``own``, the executor's own copies of every argument, which it
    keeps: see :meth:`acl_py.ops.Operator.own_arguments`); the device tensors staged from
    NumPy arrays (closed after the launch, stream-ordered), those to copy back into the
    caller's arrays (tensor, array), and the argument objects it created (closed at once if
    the call fails, else released once the stream is past the launch)."""

    __slots__ = ("name", "device", "stream", "own", "allocs", "keep", "copy_back", "staged",
                 "created")

    def __init__(self, name: str, device: int, stream: Stream | None, own: bool = False) -> None:
        self.name = name
        self.device = device
        self.stream = stream
        self.own = own
        self.allocs: list[Any] = []
        self.keep: list[Any] = []
        self.copy_back: list[tuple[DeviceTensor, np.ndarray]] = []
        self.staged: list[DeviceTensor] = []
        self.created: list[ArgumentObject] = []

    def tensor(self, t: DeviceTensor, pname: str) -> Any:
        """The aclTensor of ``t`` (parameter ``pname``), its memory counted as used."""
        if self.own:
            t = own_copy(t)
            self.keep.append(t)
        al = t.allocation
        if al.device != self.device:
            raise AclArgumentError(pname, f"{self.name}: tensor is on device {al.device}, "
                                   f"the launch on device {self.device}")
        h = t.cached_handle
        if h is None or al.closed:
            h = t.handle    # made now, or the error for a closed tensor
        self.allocs.append(al)
        return h

    def argument(self, obj: ArgumentObject, pname: str) -> Any:
        """The handle of an acl_py argument object (parameter ``pname``); a TensorList's
        tensors' memory counts as used, and each must be on the call's device."""
        if self.own:
            self.keep.append(obj)
        h = obj.handle
        if type(obj) is TensorList:
            for i, t in enumerate(obj.tensors):
                if t is not None:
                    al = t.allocation
                    if al.device != self.device:
                        raise AclArgumentError(f"{pname}[{i}]", f"{self.name}: tensor is on "
                                               f"device {al.device}, the launch on device "
                                               f"{self.device}")
                    self.allocs.append(al)
        return h


# ---- converters ------------------------------------------------------------------------------

def _output_like(param: CParam) -> bool:
    # The vendor declares outputs `aclTensor *out` and in-place tensors `const aclTensor
    # *selfRef`: either way the caller's array receives the result.
    n = param.name
    return not param.is_const or n.endswith("Ref") or "out" in n or "Out" in n


def tensor_converter(param: CParam) -> Converter:
    pname = param.name
    copy_back = _output_like(param)

    def convert(value: Any, call: Call) -> Any:
        if type(value) is DeviceTensor or isinstance(value, DeviceTensor):
            return call.tensor(value, pname)
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        return call.tensor(_staged(value, call, copy_back, pname), pname)
    return convert


def _staged(value: Any, call: Call, copy_back: bool, pname: str) -> DeviceTensor:
    """A device copy of NumPy array ``value`` for the call (copied back into it after the
    launch when the parameter receives a result), or AclTypeError."""
    if not isinstance(value, np.ndarray):
        raise AclTypeError(pname, f"expected a DeviceTensor, a NumPy array or None, got "
                           f"{type(value).__name__}")
    if copy_back and not value.flags.writeable:
        raise AclArgumentError(pname, "the array receives the result but is read-only")
    # A synchronous copy: from pageable memory aclrtMemcpyAsync waits for the stream too,
    # and staging through pinned memory to queue it would copy every input once more on the
    # host.
    t = DeviceTensor.from_numpy(value, device=call.device)
    call.staged.append(t)
    if copy_back:
        call.copy_back.append((t, value))
    return t


def tensor_list_converter(param: CParam) -> Converter:
    pname = param.name
    copy_back = _output_like(param)

    def convert(value: Any, call: Call) -> Any:
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        if isinstance(value, TensorList):
            if call.own:    # the executor's own list (its own descriptors)
                value = own_copy(value)
                call.created.append(value)
            return call.argument(value, pname)
        items = as_sequence(value, pname)
        tensors: list[Any] = []
        for i, v in enumerate(items):
            if v is None or type(v) is DeviceTensor or isinstance(v, DeviceTensor):
                tensors.append(v)
            elif isinstance(v, np.ndarray):
                tensors.append(_staged(v, call, copy_back, pname))
            else:
                raise AclTypeError(f"{pname}[{i}]", f"expected a DeviceTensor, a NumPy array "
                                   f"or None, got {type(v).__name__}")
        lst = TensorList(tensors)
        call.created.append(lst)
        return call.argument(lst, pname)
    return convert


def scalar_converter(param: CParam) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        if isinstance(value, Scalar):
            return call.argument(value, pname)
        if isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, str):
            try:
                s = Scalar(value)
            except AclArgumentError as e:
                raise type(e)(pname, e.problem) from None
            call.created.append(s)
            return call.argument(s, pname)
        raise AclTypeError(pname, f"expected a number or acl_py.Scalar, got "
                           f"{type(value).__name__}")
    return convert


def scalar_list_converter(param: CParam) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        if not isinstance(value, ScalarList):
            value = ScalarList(as_sequence(value, pname))
            call.created.append(value)
        return call.argument(value, pname)
    return convert


def array_converter(param: CParam, cls: type[ArgumentObject], check: Callable[[Any], bool],
                    item: type) -> Converter:
    """An IntArray/FloatArray/BoolArray parameter: the array object as given, or a sequence
    whose items pass ``check``, stored as ``item(v)`` in the array shared by every call with
    the same values (``acl_py.arguments.shared_array``)."""
    pname = param.name

    def stored(value: Any) -> tuple[Any, ...]:
        values = as_sequence(value, pname)
        for i, v in enumerate(values):
            if not check(v):
                raise AclTypeError(f"{pname}[{i}]", f"expected {cls.__name__} values, got "
                                   f"{type(v).__name__} {v!r}")
        return tuple(map(item, values))

    def convert(value: Any, call: Call) -> Any:
        if type(value) is tuple:
            for v in value:     # the common case: a tuple already of the stored type
                if type(v) is not item:
                    value = stored(value)
                    break
        elif value is None:
            return _NULL
        elif isinstance(value, _CData):
            return value
        elif isinstance(value, cls):
            return call.argument(value, pname)
        else:
            value = stored(value)
        shared = shared_array(cls, value)
        # Held until phase one has read it: the cache may drop it meanwhile.
        call.keep.append(shared[0])
        return shared[1]
    return convert


def _is_int(v: object) -> bool:
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v: object) -> bool:
    return isinstance(v, (numbers.Real, np.floating, np.integer)) and \
        not isinstance(v, (bool, np.bool_))


def _is_bool(v: object) -> bool:
    return isinstance(v, (bool, np.bool_))


def int_converter(param: CParam, lo: int, hi: int) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if not _is_int(value):
            raise AclTypeError(pname, f"expected an int ({param.ctype}), got "
                               f"{type(value).__name__} {value!r}")
        v = operator.index(value)
        if not lo <= v <= hi:
            raise AclArgumentError(pname, f"{v} is out of range for {param.ctype} [{lo}, {hi}]")
        return v
    return convert


def value_converter(param: CParam, accepts: Callable[[Any], bool],
                    cast: Callable[[Any], Any], expected: str) -> Converter:
    """A plain C value: ``cast(value)`` when ``accepts(value)``, else AclTypeError."""
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if not accepts(value):
            raise AclTypeError(pname, f"expected {expected} ({param.ctype}), got "
                               f"{type(value).__name__} {value!r}")
        return cast(value)
    return convert


def string_converter(param: CParam) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        text = ffi.new("char[]", c_string(value, pname))
        call.keep.append(text)
        return text
    return convert


def dtype_converter(param: CParam) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if _is_int(value):
            return int(value)
        return _dt.to_acl(value, pname)
    return convert


def pointer_converter(param: CParam) -> Converter:
    pname = param.name

    def convert(value: Any, call: Call) -> Any:
        if value is None:
            return _NULL
        if isinstance(value, _CData):
            return value
        raise AclTypeError(pname, f"{param.ctype} takes a cffi pointer or None, got "
                           f"{type(value).__name__}")
    return convert


def converter_for(param: CParam) -> Converter:
    """The converter of one parameter, or TypeError when acl-py cannot pass its type."""
    b = param.base
    if b == "aclTensor*":
        return tensor_converter(param)
    if b == "aclTensorList*":
        return tensor_list_converter(param)
    if b == "aclScalar*":
        return scalar_converter(param)
    if b == "aclScalarList*":
        return scalar_list_converter(param)
    if b == "aclIntArray*":
        return array_converter(param, IntArray, _is_int, int)
    if b == "aclFloatArray*":
        return array_converter(param, FloatArray, _is_real, float)
    if b == "aclBoolArray*":
        return array_converter(param, BoolArray, _is_bool, bool)
    if b in FLOATS:
        return value_converter(param, _is_real, float, "a real number")
    if b in INT_RANGES:
        return int_converter(param, *INT_RANGES[b])
    if b == "bool":
        return value_converter(param, _is_bool, bool, "a bool")
    if b == "char*":
        return string_converter(param)
    if b == "aclDataType":
        return dtype_converter(param)
    if b in ENUMS:
        return value_converter(param, _is_int, int, "an int")
    if b.endswith("*"):
        return pointer_converter(param)
    raise TypeError(f"parameter {param.name} has C type {param.ctype}, which acl-py cannot "
                    f"pass by value")


def kind_of(param: CParam) -> str:
    """The operator layer's kind of a parameter: a tensor, an argument object, or a value."""
    b = param.base
    if b == "aclTensor*":
        return "tensor"
    if b.endswith("*") and b != "char*":
        return "object"
    return "value"
