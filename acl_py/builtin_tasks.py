"""The device's built-in tasks on device memory: the copy engine's element-wise reduce
(``aclrtReduceAsync``, :meth:`DeviceBuffer.reduce_from <acl_py.DeviceBuffer.reduce_from>`)
and the random number engine (``aclrtRandomNumAsync``, ``DeviceBuffer.fill_uniform``,
``fill_normal``, ``fill_dropout_mask``).

The DeviceBuffer methods check their buffer arguments and hand the live allocations here;
each task's own checks, in their order, and its queueing are this module's. The part decides
which dtypes and ops its runtime takes (docs/emulator.md): a refusal raises the runtime's
typed error."""
from __future__ import annotations

import enum

from ._ffi import ffi
from . import _ordering
from . import dtypes as _dtypes
from . import runtime as _rt
from . import stream as _stream
from ._buffer_ranges import buffer_to_buffer, check_range
from ._integers import as_size
from .errors import AclArgumentError, AclTypeError, make_error


class ReduceOp(enum.IntEnum):
    """The element operation of :meth:`DeviceBuffer.reduce_from` (``aclrtReduceKind``).
    ``EQUAL`` exists in the vendor's header but no public source says what it computes: the
    emulator refuses it (NotSupportedError, 207000)."""
    SUM = 10
    MAX = 11
    MIN = 12
    EQUAL = 13


def _reduce_op(op):
    if isinstance(op, ReduceOp):
        return int(op)
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return int(ReduceOp[op.upper()])
    raise AclArgumentError("op", f"expected a ReduceOp or one of 'sum', 'max', 'min', "
                                 f"'equal', got {op!r}")


# The dtypes some part's copy engine reduces (aclrtReduceAsync's API reference); each part
# takes a subset, which its runtime checks.
_REDUCE_DTYPES = (_dtypes.ACL_INT8, _dtypes.ACL_INT16, _dtypes.ACL_INT32, _dtypes.ACL_UINT32,
                  _dtypes.ACL_FLOAT16, _dtypes.ACL_FLOAT, _dtypes.ACL_BF16)
# aclrtRandomNumFuncType, and the dtypes the runtime takes per distribution
# (hicann/runtime random_num_task.cc): floats for all, integers for the uniform one.
DROPOUT_BITMASK, UNIFORM, NORMAL, TRUNCATED_NORMAL = 0, 1, 2, 3
_RANDOM_FLOATS = (_dtypes.ACL_FLOAT, _dtypes.ACL_FLOAT16, _dtypes.ACL_BF16)
_RANDOM_INTEGERS = (_dtypes.ACL_INT32, _dtypes.ACL_INT64, _dtypes.ACL_UINT32,
                    _dtypes.ACL_UINT64)


def _reduce_async(dst, src, count, kind, dtype, stream):
    """``aclrtReduceAsync`` with the stream last (StreamState.enqueue passes it so)."""
    return _rt.lib.aclrtReduceAsync(dst, src, count, kind, dtype, stream, ffi.NULL)


def _random_num_async(info, stream):
    return _rt.lib.aclrtRandomNumAsync(info, stream, ffi.NULL)


def _element_bytes(value, dt, name):
    """``value`` as one element of NumPy dtype ``dt``, its bytes; AclArgumentError naming
    ``name`` when it is no number or out of the dtype's range."""
    import numpy as np
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise AclTypeError(name, f"expected a number, got {type(value).__name__}")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not isinstance(value, (int, np.integer)) or not info.min <= value <= info.max:
            raise AclArgumentError(name, f"expected an integer {info.min}..{info.max} for "
                                         f"{dt}, got {value!r}")
    elif not np.isfinite(value) or abs(float(value)) > float(np.finfo(dt).max):
        raise AclArgumentError(name, f"expected a finite {dt} value, got {value!r}")
    return np.array([value], dtype=dt).tobytes()


def _set_random_param(slot, data):
    """An aclrtRandomParaInfo holding the value ``data`` (its bytes, at most 8)."""
    slot.isAddr = 0
    slot.size = len(data)
    ffi.memmove(slot.valueOrAddr, data, len(data))


def _queue_or_wait(stream, st, allocs, call, fn, *args):
    """Queues ``fn(*args, handle)`` (the runtime's ``call``) on ``stream``, of allocation
    ``st``'s device, recording it as a use of ``allocs``; without a stream, on the device's
    default stream, then waits for that stream."""
    tl = _stream.state_for(stream, st.device)
    r = tl.enqueue(fn, *args)
    if r:
        raise make_error(r, call)
    _ordering.record_uses(tl, *allocs)
    if stream is None:
        tl.synchronize()


def reduce(st, sst, op, dtype, nbytes, stream, src_offset, offset):
    """``aclrtReduceAsync`` of allocation ``sst`` into allocation ``st`` (both live): the
    arguments of :meth:`DeviceBuffer.reduce_from`."""
    kind = _reduce_op(op)
    code = _dtypes.to_acl(_dtypes.as_dtype(dtype))
    if code not in _REDUCE_DTYPES:
        raise AclTypeError("dtype", f"{_dtypes.name(code)} is not reduced by any part "
                           f"(int8, int16, int32, uint32, float16, float32, bfloat16)")
    size = _dtypes.itemsize(code)
    if sst.device != st.device:
        raise AclArgumentError("src", f"the buffer is on device {sst.device}, this one on "
                                      f"device {st.device}: the reduce runs on one device")
    offset, src_offset, n = buffer_to_buffer(st, sst, offset, src_offset, nbytes)
    if n == 0:
        return
    if n % size:
        raise AclArgumentError("nbytes", f"{n} bytes are not a whole number of "
                                         f"{size}-byte {_dtypes.name(code)} elements")
    for name, where in (("offset", st.ptr + offset), ("src_offset", sst.ptr + src_offset)):
        if int(ffi.cast("uintptr_t", where)) % size:
            raise AclArgumentError(name, f"the elements must be {size}-byte aligned")
    _queue_or_wait(stream, st, (st, sst), "aclrtReduceAsync", _reduce_async,
                   st.ptr + offset, sst.ptr + src_offset, n, kind, code)


def fill_random(st, cst, func, dtype, count, params, seed, stream, offset):
    """``aclrtRandomNumAsync`` of distribution ``func`` into allocation ``st``, its counter in
    allocation ``cst`` (both live): the arguments of :meth:`DeviceBuffer.fill_uniform` and
    its siblings, ``params`` their (name, value) pairs in the engine's order."""
    bitmask = func == DROPOUT_BITMASK
    dt = _dtypes.as_dtype(dtype, "ratio_dtype" if bitmask else "dtype")
    code = _dtypes.to_acl(dt)
    allowed = _RANDOM_INTEGERS + _RANDOM_FLOATS if func == UNIFORM else _RANDOM_FLOATS
    if code not in allowed:
        raise AclTypeError("ratio_dtype" if bitmask else "dtype",
                           f"{dt} is not one the distribution takes ("
                           + ", ".join(str(_dtypes.from_acl(c)) for c in allowed) + ")")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
        raise AclArgumentError("seed", f"expected an int 0..2**64-1, got {seed!r}")
    if cst.device != st.device:
        raise AclArgumentError("counter", f"the counter is on device {cst.device}, the "
                                          f"buffer on device {st.device}")
    if cst.nbytes < 16:
        raise AclArgumentError("counter", f"the generator's counter takes 16 bytes, the "
                                          f"buffer has {cst.nbytes}")
    offset = check_range(offset, 0, st.nbytes, "offset")
    room = st.nbytes - offset
    n = (8 * room if bitmask else room // dt.itemsize) if count is None \
        else as_size(count, "bits" if bitmask else "count")
    check_range(offset, (n + 7) // 8 if bitmask else n * dt.itemsize, st.nbytes,
                "bits" if bitmask else "count")
    info = ffi.new("aclrtRandomNumTaskInfo *")
    info.dataType = code
    info.randomNumFuncParaInfo.funcType = func
    union = info.randomNumFuncParaInfo.paramInfo
    slots = ((union.dropoutBitmaskInfo.dropoutRation,) if bitmask
             else (union.uniformDisInfo.min, union.uniformDisInfo.max) if func == UNIFORM
             else (union.normalDisInfo.mean, union.normalDisInfo.stddev))
    for slot, (name, value) in zip(slots, params):
        _set_random_param(slot, _element_bytes(value, dt, name))
    _set_random_param(info.randomSeed, seed.to_bytes(8, "little"))
    _set_random_param(info.randomNum, n.to_bytes(8, "little"))
    info.randomResultAddr = st.ptr + offset
    info.randomCounterAddr = cst.ptr
    _queue_or_wait(stream, st, (st, cst), "aclrtRandomNumAsync", _random_num_async, info)
