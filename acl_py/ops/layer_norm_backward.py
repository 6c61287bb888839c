"""``aclnnLayerNormBackward``: the one-shot call :func:`layer_norm_backward` and the reusable
plan :class:`LayerNormBackward`.

Checks made in Python, before any C call, raise :class:`~acl_py.AclTypeError` (wrong type,
unsupported or mismatched dtype) or :class:`~acl_py.AclArgumentError` (shape, length, device)
naming the Python argument: argument kinds, ``output_mask`` (3 bools), ``normalized_shape``
(ints), dtypes (each FLOAT/FLOAT16/BF16; ``grad_out`` = ``input``'s; ``weight``, ``bias``,
``mean``, ``rstd`` = ``input``'s or float32), shapes (``input`` ends with
``normalized_shape``, ``grad_out`` = ``input``'s, ``weight``/``bias`` = ``normalized_shape``,
``mean`` holds M elements with ``rstd``'s shape, outputs: ``input``'s shape / N elements),
one device. Limits that are the operator's own (rank <= 8, ``normalized_shape`` length 1..8)
are left to phase one, whose failures surface as its typed error
(:class:`~acl_py.errors.OperatorInvalidParameterError`, code 161002, with its message).
"""
from __future__ import annotations

import threading

import numpy as np

from .. import device as _device
from .. import dtypes as _dt
from .. import runtime as _rt
from .. import stream as _stream
from ..errors import AclArgumentError, AclTypeError
from ..tensor import BoolArray, DeviceTensor, IntArray, _as_dim, _size
from ._two_phase import Executor, Operator, bool_array, int_array, tensor

__all__ = ["layer_norm_backward", "LayerNormBackward", "LAYER_NORM_BACKWARD"]

LAYER_NORM_BACKWARD = Operator("aclnnLayerNormBackward", (
    tensor("gradOut"), tensor("input"), int_array("normalizedShape"), tensor("mean"),
    tensor("rstd"), tensor("weightOptional"), tensor("biasOptional"), bool_array("outputMask"),
    tensor("gradInputOut"), tensor("gradWeightOut"), tensor("gradBiasOut")))

_ALL = (True, True, True)
_OUT_NAMES = ("out[0] (grad_input)", "out[1] (grad_weight)", "out[2] (grad_bias)")
_F32 = _F16 = _BF16 = None   # the operator's dtypes, set on first use (ml_dtypes is lazy)


def _init_dtypes():
    global _F32, _F16, _BF16
    _F16 = np.dtype(np.float16)
    _BF16 = _dt.bfloat16()
    _F32 = np.dtype(np.float32)


def _supported(dt):
    # Identity first: dtypes are canonical objects; == only for exotic equal ones.
    if dt is _F32 or dt is _F16 or dt is _BF16:
        return True
    if _F32 is None:
        _init_dtypes()
    return dt in (_F32, _F16, _BF16)


# ---- argument arrays, cached: a handful of shapes and at most 8 masks recur in a loop ------

_int_arrays: dict = {}
_bool_arrays: dict = {}
_CACHE_MAX = 64
# Guards changes to _int_arrays and _bool_arrays (lookups need no lock): evicting with
# next(iter(d)) while another thread inserts would raise, or pop what the other just put.
_cache_lock = threading.Lock()


def _cached(cache, cls, key):
    with _cache_lock:
        a = cache.get(key)
        if a is None or a.closed:   # closed: acl_py.finalize() released it
            while len(cache) >= _CACHE_MAX:
                # Dropped, never closed: another thread may be passing this very array to
                # phase one right now. Its releaser destroys it when the last holder lets go.
                del cache[next(iter(cache))]
            a = cache[key] = cls(key)
        return a


def clear_caches():
    """Drops the cached ``aclIntArray``/``aclBoolArray`` handles (recreated on demand); each
    is destroyed as soon as no call in flight holds it. ``acl_py.release_unused()`` calls
    it."""
    with _cache_lock:
        dropped = list(_int_arrays.values()) + list(_bool_arrays.values())
        _int_arrays.clear()
        _bool_arrays.clear()
    del dropped   # the releasers run here, outside the lock


_rt.register_cache(clear_caches)


# ---- argument checks -----------------------------------------------------------------------

def _dims(normalized_shape):
    t = type(normalized_shape)
    if t is tuple or t is list:
        for d in normalized_shape:   # the common case: plain non-negative ints
            if type(d) is not int or d < 0:
                break
        else:
            return tuple(normalized_shape)
    elif t is int and normalized_shape >= 0:
        return (normalized_shape,)
    elif isinstance(normalized_shape, IntArray):
        return normalized_shape.values
    if isinstance(normalized_shape, (str, bytes)):
        raise AclTypeError("normalized_shape", "expected a sequence of ints")
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(
            normalized_shape, (bool, np.bool_)):
        normalized_shape = (normalized_shape,)
    try:
        items = tuple(normalized_shape)
    except TypeError:
        raise AclTypeError("normalized_shape", f"expected an int or a sequence of ints, got "
                           f"{type(normalized_shape).__name__}") from None
    return tuple(_as_dim(d, f"normalized_shape[{i}]") for i, d in enumerate(items))


def _mask(output_mask):
    if output_mask is _ALL:
        return _ALL
    t = type(output_mask)
    if (t is tuple or t is list) and len(output_mask) == 3:
        a, b, c = output_mask
        if type(a) is bool and type(b) is bool and type(c) is bool:
            return _ALL if a and b and c else (a, b, c)
    if isinstance(output_mask, (str, bytes)):
        raise AclTypeError("output_mask", "expected a sequence of 3 bools")
    try:
        items = tuple(output_mask)
    except TypeError:
        raise AclTypeError("output_mask", f"expected a sequence of 3 bools, got "
                           f"{type(output_mask).__name__}") from None
    if len(items) != 3:
        raise AclArgumentError("output_mask", f"needs 3 entries (grad_input, grad_weight, "
                               f"grad_bias), got {len(items)}")
    for i, v in enumerate(items):
        if not isinstance(v, (bool, np.bool_)):
            raise AclTypeError(f"output_mask[{i}]", f"expected a bool, got "
                               f"{type(v).__name__} {v!r}")
    return tuple(bool(v) for v in items)


def _bad_dtype(name, dt, input_dt=None):
    """The AclTypeError for a dtype that failed the check (``input_dt``: it had to be that
    or float32)."""
    if not _supported(dt):
        return AclTypeError(name, f"dtype {dt} is not supported by aclnnLayerNormBackward "
                            f"(float32, float16, bfloat16)")
    if name == "grad_out":
        return AclTypeError(name, f"dtype {dt} must be input's dtype {input_dt}")
    allowed = "float32" if input_dt == np.float32 else f"input's dtype {input_dt} or float32"
    return AclTypeError(name, f"dtype {dt} must be {allowed}")


def _kind_error(name, t, kind, required):
    kname = "acl_py.DeviceTensor" if kind is DeviceTensor else "numpy.ndarray"
    return AclTypeError(name, f"expected {'' if required else 'None or '}{kname} (like "
                        f"input), got {type(t).__name__}")


def _check(kind, grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask,
           out):
    """Validates the arguments (see the module doc). ``kind`` is DeviceTensor or np.ndarray,
    what every tensor argument must be. Written for speed on the valid path: it runs on
    every one-shot call. Returns (normalized dims, mask, out tuple or None)."""
    if type(grad_out) is not kind and not isinstance(grad_out, kind):
        raise _kind_error("grad_out", grad_out, kind, True)
    if type(mean) is not kind and not isinstance(mean, kind):
        raise _kind_error("mean", mean, kind, True)
    if type(rstd) is not kind and not isinstance(rstd, kind):
        raise _kind_error("rstd", rstd, kind, True)
    if weight is not None and type(weight) is not kind and not isinstance(weight, kind):
        raise _kind_error("weight", weight, kind, False)
    if bias is not None and type(bias) is not kind and not isinstance(bias, kind):
        raise _kind_error("bias", bias, kind, False)
    ns = _dims(normalized_shape)
    mask = _mask(output_mask)
    # dtypes (phase one's row 4): all supported; grad_out = input's; weight, bias, mean and
    # rstd = input's or float32.
    in_dt = input.dtype
    if not _supported(in_dt):
        raise _bad_dtype("input", in_dt)
    dt = grad_out.dtype
    if dt is not in_dt and dt != in_dt:
        raise _bad_dtype("grad_out", dt, in_dt)
    # Identity first (dtypes are canonical objects), == only for exotic equal ones.
    dt = mean.dtype
    if dt is not in_dt and dt is not _F32 and dt != in_dt and dt != _F32:
        raise _bad_dtype("mean", dt, in_dt)
    dt = rstd.dtype
    if dt is not in_dt and dt is not _F32 and dt != in_dt and dt != _F32:
        raise _bad_dtype("rstd", dt, in_dt)
    if weight is not None:
        dt = weight.dtype
        if dt is not in_dt and dt is not _F32 and dt != in_dt and dt != _F32:
            raise _bad_dtype("weight", dt, in_dt)
    if bias is not None:
        dt = bias.dtype
        if dt is not in_dt and dt is not _F32 and dt != in_dt and dt != _F32:
            raise _bad_dtype("bias", dt, in_dt)
    # shapes (row 5, except the operator's own limits: ranks <= 8, 1 <= len(ns) <= 8)
    shape = input.shape
    r = len(ns)
    split = len(shape) - r
    if split < 0 or shape[split:] != ns:
        raise AclArgumentError("normalized_shape", f"{ns} must equal the trailing dims of "
                               f"input's shape {shape}")
    if grad_out.shape != shape:
        raise AclArgumentError("grad_out", f"shape {grad_out.shape} != input's shape {shape}")
    if weight is not None and weight.shape != ns:
        raise AclArgumentError("weight", f"shape {weight.shape} != normalized_shape {ns}")
    if bias is not None and bias.shape != ns:
        raise AclArgumentError("bias", f"shape {bias.shape} != normalized_shape {ns}")
    mshape = mean.shape
    if mshape != shape[:split] and _size(mshape) != _size(shape[:split]):  # [M, 1] is usual
        raise AclArgumentError("mean", f"shape {mshape} must hold one element per normalized "
                               f"row: M = {_size(shape[:split])} for input {shape} over "
                               f"normalized_shape {ns}")
    if rstd.shape != mshape:
        raise AclArgumentError("rstd", f"shape {rstd.shape} != mean's shape {mshape}")
    if out is not None:
        out = _check_out(kind, out, mask, shape, ns)
    return ns, mask, out


def _check_out(kind, out, mask, shape, ns):
    t = type(out)
    if (t is tuple or t is list) and len(out) == 3 and mask is _ALL:
        # The usual case, checked with the fewest steps: three outputs of the exact kind,
        # supported dtypes, grad_input shaped like input, the others like normalized_shape.
        a, b, c = out
        if type(a) is kind and type(b) is kind and type(c) is kind and \
                a.shape == shape and b.shape == ns and c.shape == ns and \
                ((da := a.dtype) is _F32 or _supported(da)) and \
                ((db := b.dtype) is _F32 or _supported(db)) and \
                ((dc := c.dtype) is _F32 or _supported(dc)) and \
                kind is DeviceTensor:
            return out if t is tuple else (a, b, c)
    if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or len(out) != 3:
        raise AclArgumentError("out", "expected a tuple of 3 entries (grad_input, "
                               "grad_weight, grad_bias), each None or a preallocated "
                               "output")
    out = tuple(out)
    n = -1
    for k in range(3):
        o = out[k]
        if o is None or not mask[k]:
            continue
        name = _OUT_NAMES[k]
        if type(o) is not kind and not isinstance(o, kind):
            kname = "acl_py.DeviceTensor" if kind is DeviceTensor else "numpy.ndarray"
            raise AclTypeError(name, f"expected None or {kname} (like input), got "
                               f"{type(o).__name__}")
        if not _supported(o.dtype):
            raise _bad_dtype(name, o.dtype)
        if k == 0:
            if o.shape != shape:
                raise AclArgumentError(name, f"shape {o.shape} != input's shape {shape}")
        elif o.shape != ns:
            if n < 0:
                n = _size(ns)
            if _size(o.shape) != n:
                raise AclArgumentError(name, f"shape {o.shape} must hold N = {n} elements "
                                       f"(normalized_shape {ns})")
        if kind is np.ndarray and not o.flags.writeable:
            raise AclArgumentError(name, "array is read-only")
    return out


def _check_device(dev, grad_out, mean, rstd, weight, bias, out):
    for name, t in (("grad_out", grad_out), ("mean", mean), ("rstd", rstd),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.allocation.device != dev:
            raise AclArgumentError(name, f"tensor is on device {t.allocation.device}, input on "
                                   f"device {dev}")
    if out is not None:
        for name, t in zip(_OUT_NAMES, out):
            if t is not None and t.allocation.device != dev:
                raise AclArgumentError(name, f"tensor is on device {t.allocation.device}, input "
                                       f"on device {dev}")


def _output_specs(input, ns, weight, mask):
    """(shape, dtype) of each requested output, None where masked."""
    wdt = weight.dtype if weight is not None else input.dtype
    return ((input.shape, input.dtype) if mask[0] else None,
            (ns, wdt) if mask[1] else None, (ns, wdt) if mask[2] else None)


def _device_outputs(input, ns, weight, mask, out, dev, sst=None):
    if out is not None:
        a, b, c = out
        if (a is not None or not mask[0]) and (b is not None or not mask[1]) and \
                (c is not None or not mask[2]):
            return (a if mask[0] else None, b if mask[1] else None, c if mask[2] else None)
    specs = _output_specs(input, ns, weight, mask)
    res = []
    for k, spec in enumerate(specs):
        if spec is None:
            res.append(None)
        elif out is not None and out[k] is not None:
            res.append(out[k])
        else:
            res.append(DeviceTensor.new_output(spec[0], spec[1], dev, sst))
    return tuple(res)


def _args(grad_out, input, ns, mean, rstd, weight, bias, mask, outs):
    ia = _int_arrays.get(ns)
    if ia is None or ia.closed:
        ia = _cached(_int_arrays, IntArray, ns)
    ba = _bool_arrays.get(mask)
    if ba is None or ba.closed:
        ba = _cached(_bool_arrays, BoolArray, mask)
    return (grad_out, input, ia, mean, rstd, weight, bias, ba, outs[0], outs[1], outs[2])


# ---- the one-shot call ---------------------------------------------------------------------

def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None,
                        output_mask=_ALL, *, out=None, stream=None):
    """Gradients of LayerNorm: ``(grad_input, grad_weight, grad_bias)``, ``None`` where
    ``output_mask`` is false.

    * NumPy arrays in, NumPy arrays out: the inputs are copied to the device, the operator
      runs on ``stream`` (default: the device's default stream), the stream is synchronized
      and the results copied back.
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out: queued on ``stream`` and returned
      at once; the results are valid once the stream has synchronized (every buffer the launch
      uses is kept alive until then).

    ``input`` has shape ``[A1..Ai, R1..Rj]`` with ``normalized_shape = [R1..Rj]``; ``mean``
    and ``rstd`` (the forward's saved statistics) hold one value per row (M = A1*..*Ai);
    ``weight``/``bias`` have ``normalized_shape`` (absent weight = ones; bias is never read).
    Outputs: grad_input has input's shape and dtype, grad_weight/grad_bias have
    ``normalized_shape`` and weight's dtype (input's without weight). ``out=(gi, gw, gb)``
    gives preallocated outputs of the same kind as the inputs (their dtypes choose the output
    dtypes); a ``None`` entry is allocated as by default, entries for masked outputs are
    ignored.
    """
    if isinstance(input, DeviceTensor):
        ns, mask, out = _check(DeviceTensor, grad_out, input, normalized_shape, mean, rstd,
                               weight, bias, output_mask, out)
        dev = input.allocation.device
        sst = _stream.state_for(stream, dev)
        outs = _device_outputs(input, ns, weight, mask, out, dev, sst)
        args = _args(grad_out, input, ns, mean, rstd, weight, bias, mask, outs)
        try:
            LAYER_NORM_BACKWARD.launch(args, device=dev, stream=stream)
        except AclArgumentError:
            # The wrapper checks every tensor's device (naming the C parameter); name the
            # Python argument instead.
            _check_device(dev, grad_out, mean, rstd, weight, bias, out)
            raise
        return outs
    if isinstance(input, np.ndarray):
        return _host_call(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                          output_mask, out, stream)
    raise AclTypeError("input", f"expected a numpy.ndarray or an acl_py.DeviceTensor, got "
                       f"{type(input).__name__}")


def _host_call(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask, out,
               stream):
    ns, mask, out = _check(np.ndarray, grad_out, input, normalized_shape, mean, rstd, weight,
                           bias, output_mask, out)
    if stream is None:
        dev = _device.current_device_id()
    elif isinstance(stream, _stream.Stream):
        dev = stream.state.device
    else:
        raise AclTypeError("stream", f"expected an acl_py.Stream or None, got "
                           f"{type(stream).__name__}")
    s = _stream.as_stream(stream, dev)
    specs = _output_specs(input, ns, weight, mask)
    made = []   # every device tensor made here, closed on the way out (stream-ordered)
    try:
        def up(a):
            if a is None:
                return None
            # Synchronous copies: asynchronous ones need pinned memory (aclrtMallocHost), and
            # a staging copy through it would add a host copy of every input.
            t = DeviceTensor.from_numpy(a, device=dev)
            made.append(t)
            return t
        d_args = [up(a) for a in (grad_out, input, mean, rstd, weight, bias)]
        outs = []
        for k, spec in enumerate(specs):
            if spec is None:
                outs.append(None)
                continue
            o = out[k] if out is not None else None
            shape, dt = (o.shape, o.dtype) if o is not None else spec
            t = DeviceTensor.empty(shape, dt, dev)
            made.append(t)
            outs.append(t)
        g, x, mu, rs, w, b = d_args
        LAYER_NORM_BACKWARD.launch(_args(g, x, ns, mu, rs, w, b, mask, outs), device=dev,
                                   stream=s)
        s.synchronize()
        results = []
        for k, t in enumerate(outs):
            if t is None:
                results.append(None)
                continue
            o = out[k] if out is not None else None
            if o is None:
                results.append(t.to_numpy())
            elif o.flags.c_contiguous:
                t.buffer.copy_to_host(o)   # straight into the caller's array
                results.append(o)
            else:
                o[...] = t.to_numpy()
                results.append(o)
        return tuple(results)
    finally:
        for t in made:
            t.close()


# ---- the reusable plan ---------------------------------------------------------------------

class LayerNormBackward(Executor):
    """A LayerNormBackward plan over fixed device tensors, for loops: phase one once with a
    repeatable executor and its workspace, then ``plan.run(stream)`` (or ``plan(stream)``)
    enqueues phase two only. Change the inputs' contents between runs freely (same tensors);
    results are valid once the stream has synchronized. It is the
    :class:`~acl_py.ops.Executor` of the call (``mode``, ``workspace_size``, ``handle``).

    Arguments as :func:`layer_norm_backward`, DeviceTensors only. Outputs (allocated here
    unless given in ``out=``) are the attributes ``grad_input``, ``grad_weight``, ``grad_bias``
    (``None`` where masked), also ``outputs`` and what ``run`` returns. ``close()`` (or
    ``with``) destroys the executor and gives the workspace back once the streams it ran on
    have synchronized; the outputs stay usable.

    ``mode`` is ``"repeatable"``, or ``"per-run"`` where the library refuses to make the
    executor repeatable (``aclSetAclOpExecutorRepeatable`` returns 561000): each run is then
    a whole one-shot call (phase one, workspace, phase two) on the same tensors.
    """

    __slots__ = ("grad_input", "grad_weight", "grad_bias")

    def __init__(self, grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None,
                 output_mask=_ALL, *, out=None):
        if not isinstance(input, DeviceTensor):
            raise AclTypeError("input", f"LayerNormBackward runs on acl_py.DeviceTensor "
                               f"arguments, got {type(input).__name__} (use "
                               f"acl_py.layer_norm_backward for NumPy arrays)")
        ns, mask, out = _check(DeviceTensor, grad_out, input, normalized_shape, mean, rstd,
                               weight, bias, output_mask, out)
        dev = input.allocation.device
        _check_device(dev, grad_out, mean, rstd, weight, bias, out)
        outs = _device_outputs(input, ns, weight, mask, out, dev)
        # Own arrays, not the shared cache: the executor keeps them for its whole life.
        args = (grad_out, input, IntArray(ns), mean, rstd, weight, bias, BoolArray(mask),
                outs[0], outs[1], outs[2])
        super().__init__(LAYER_NORM_BACKWARD, args, dev)
        self.grad_input, self.grad_weight, self.grad_bias = outs
        self.outputs = tuple(outs)

    @property
    def executor(self):
        """The plan's :class:`~acl_py.ops.Executor` (the plan itself)."""
        return self

    def __repr__(self):
        state = "closed" if self.closed else f"workspace {self.workspace_size} bytes"
        return f"<acl_py.LayerNormBackward {state}>"
