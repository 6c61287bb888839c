"""``aclnnLayerNormBackward``: the one-shot call :func:`layer_norm_backward` and the reusable
plan :class:`LayerNormBackward`.

Argument checks (see :mod:`._declare`) raise :class:`~acl_py.AclTypeError` (wrong type,
unsupported or mismatched dtype) or :class:`~acl_py.AclArgumentError` (shape, length, device)
naming the Python argument: argument kinds, ``output_mask`` (3 bools), ``normalized_shape``
(ints), dtypes (each FLOAT/FLOAT16/BF16; ``grad_out`` = ``input``'s; ``weight``, ``bias`` =
``input``'s or float32; ``mean``, ``rstd`` not narrower than ``input``), shapes (``input``
ends with ``normalized_shape``, ``grad_out`` = ``input``'s, ``weight``/``bias`` =
``normalized_shape``, ``mean`` holds M elements with ``rstd``'s shape, outputs: ``input``'s
shape / ``normalized_shape`` (N elements of another shape only where no result is copied in:
an empty call, N = 1; see :func:`_gradient_fits`), each of any of the three dtypes: the
device casts to it), one device, in the op_api's order (every dtype, the outputs' too,
before any shape). NumPy calls make them all before any C call; DeviceTensor
calls leave the dtype and shape rules to phase one and name the argument when it refuses
(the error then carries its status code and message). Limits that are the operator's own
(rank <= 8, ``normalized_shape`` length 1..8) are phase one's, whose failures surface as its
typed error (:class:`~acl_py.errors.OperatorInvalidParameterError`, code 161002, with its
message).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (VIEW_COPY, Declared, FLOATS, Operand, OutArg, Plan, bool_array, dtype_of,
                       int_array, output, shape_of, tensor)
from .layer_norm import normalized_split

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["layer_norm_backward", "LayerNormBackward", "LAYER_NORM_BACKWARD"]

_ALL = (True, True, True)


def _check(a):
    batch = normalized_split(a)
    shape = a.input.shape
    if a.grad_out.shape != shape:
        raise AclArgumentError("grad_out", f"shape {a.grad_out.shape} != input's shape {shape}")
    mshape = a.mean.shape
    if mshape != batch and math.prod(mshape) != math.prod(batch):
        raise AclArgumentError("mean", f"shape {mshape} must hold one element per normalized "
                               f"row: M = {math.prod(batch)} for input {shape} over "
                               f"normalized_shape {a.normalized_shape}")
    if a.rstd.shape != mshape:
        raise AclArgumentError("rstd", f"shape {a.rstd.shape} != mean's shape {mshape}")


def _normalized_shape(a):
    return a.normalized_shape


def _gradient_fits(a, given, part=None, shapes=None):
    """gradWeight's and gradBias's ``fits``: N elements (the op_api's CheckShape counts them,
    161002), and normalized_shape's shape itself where the call reaches the kernel (any
    mask entry true, M and N above 0; N = 1 aside): the result, of weight's shape, is copied
    into the entry by l0op::ViewCopy, which takes no other shape (hicann/ops-math conversion/
    contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams). The op_api drops that
    copy's failure (aclnn_layer_norm_backward.cpp: GenOutWithMask's status unread), leaving
    the entry unwritten; the emulator refuses it with the copy's 561103 (:func:`_later`)."""
    want = tuple(a.normalized_shape)
    n = math.prod(want)
    if math.prod(given) != n:
        return f"must hold {n} elements (as {want})"
    if n <= 1 or math.prod(normalized_split(a)) == 0:
        return None     # one element each, or an empty call: no copy of a kernel's result
    return (f"!= {want}: the result's copy into it takes that shape only (another shape of "
            f"{n} elements is never written on a device)")


def _later(a, part, rule, value):
    """gradWeight's and gradBias's ``later``: a shape of N elements is the result's copy's
    to refuse (:func:`_gradient_fits`), any other the op_api's."""
    if rule == "shape" and math.prod(value) == math.prod(a.normalized_shape):
        return VIEW_COPY
    return None


def _smoke(shape, normalized_ndim, dtype, weight=True):
    def make():
        rng = np.random.default_rng(sum(shape) + normalized_ndim)
        norm = shape[len(shape) - normalized_ndim:]
        batch = shape[:len(shape) - normalized_ndim]
        x = rng.standard_normal(shape, dtype=np.float32)
        dy = rng.standard_normal(shape, dtype=np.float32)
        axes = tuple(range(len(batch), len(shape)))
        mean = x.mean(axis=axes, keepdims=True)
        rstd = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
        stats = batch + (1,) * normalized_ndim
        w = (1 + 0.25 * rng.standard_normal(norm, dtype=np.float32)).astype(dtype)
        return (dy.astype(dtype), x.astype(dtype), list(norm),
                mean.reshape(stats).astype(np.float32), rstd.reshape(stats).astype(np.float32),
                w if weight else None, np.zeros(norm, dtype) if weight else None, _ALL)
    name = f"{np.dtype(dtype).name}{list(shape)}-norm{normalized_ndim}" + ("" if weight else
                                                                          "-no-weight")
    return name, make


def _param_dtype(a):
    return a.weight.dtype if a.weight is not None else a.input.dtype


def _error_scale(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    return reference.error_scale(grad_out, input, normalized_shape, mean, rstd, weight,
                                 output_mask)


LAYER_NORM_BACKWARD = Declared("aclnnLayerNormBackward", (
    tensor("gradOut", like="input"),
    tensor("input"),
    int_array("normalizedShape"),
    # "not narrower than input" (the vendor's docs; its op_api casts them to FLOAT)
    tensor("mean", like="input", or_wider=True),
    tensor("rstd", like="input", or_wider=True),
    tensor("weightOptional", optional=True, like="input", or_float32=True),
    tensor("biasOptional", optional=True, like="input", or_float32=True),
    bool_array("outputMask", default=_ALL, length=3,
               items=("grad_input", "grad_weight", "grad_bias")),
    # Phase one takes any supported dtype for each output (out_dtypes): results are cast to it.
    output("gradInputOut", shape=shape_of("input"), dtype=dtype_of("input"),
           dtypes=FLOATS, when=lambda a: a.output_mask[0]),
    output("gradWeightOut", shape=_normalized_shape, dtype=_param_dtype, dtypes=FLOATS,
           fits=_gradient_fits, when=lambda a: a.output_mask[1], later=_later),
    output("gradBiasOut", shape=_normalized_shape, dtype=_param_dtype, dtypes=FLOATS,
           fits=_gradient_fits, when=lambda a: a.output_mask[2], later=_later),
), check=_check, reference=reference.layer_norm_backward, error_scale=_error_scale,
    # CheckDtype, every tensor's (the outputs' too), comes before CheckShape
    out_dtypes_first=True,
    # the results' copies into gradWeight and gradBias (another shape of N elements)
    rule_codes=VIEW_COPY, staged_codes=VIEW_COPY,
    smoke_cases=(_smoke((8, 64), 1, np.float32),
                 _smoke((2, 3, 4, 16), 2, np.float16),
                 _smoke((6, 32), 1, np.float32, weight=False)))


@overload
def layer_norm_backward(grad_out: np.ndarray, input: np.ndarray,
                        normalized_shape: Sequence[int], mean: np.ndarray, rstd: np.ndarray,
                        weight: Optional[np.ndarray] = ..., bias: Optional[np.ndarray] = ...,
                        output_mask: Sequence[bool] = ..., *, out: OutArg = ...,
                        stream: Optional["Stream"] = ...
                        ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                   Optional[np.ndarray]]: ...


@overload
def layer_norm_backward(grad_out: "DeviceTensor", input: "DeviceTensor",
                        normalized_shape: Sequence[int], mean: "DeviceTensor",
                        rstd: "DeviceTensor", weight: Optional["DeviceTensor"] = ...,
                        bias: Optional["DeviceTensor"] = ...,
                        output_mask: Sequence[bool] = ..., *, out: OutArg = ...,
                        stream: Optional["Stream"] = ...
                        ) -> Tuple[Optional["DeviceTensor"], Optional["DeviceTensor"],
                                   Optional["DeviceTensor"]]: ...


def layer_norm_backward(grad_out: Operand, input: Operand, normalized_shape: Sequence[int],
                        mean: Operand, rstd: Operand, weight: Optional[Operand] = None,
                        bias: Optional[Operand] = None, output_mask: Sequence[bool] = _ALL, *,
                        out: OutArg = None, stream: Optional["Stream"] = None) -> Any:
    """Gradients of LayerNorm: ``(grad_input, grad_weight, grad_bias)``, ``None`` where
    ``output_mask`` is false.

    * NumPy arrays in, NumPy arrays out: the inputs are copied to the device, the operator
      runs on ``stream`` (default: the device's default stream), the stream is synchronized
      and the results copied back.
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out: queued on ``stream`` and returned
      at once; the results are valid once the stream has synchronized (every buffer the launch
      uses is kept alive until then).

    ``input`` has shape ``[A1..Ai, R1..Rj]`` with ``normalized_shape = [R1..Rj]``; ``mean``
    and ``rstd`` (the forward's saved statistics, e.g. :func:`~acl_py.layer_norm`'s) hold one
    value per row (M = A1*..*Ai); ``weight``/``bias`` have ``normalized_shape`` (absent
    weight = ones; bias is never read). Outputs: grad_input has input's shape and dtype,
    grad_weight/grad_bias have ``normalized_shape`` and weight's dtype (input's without
    weight). ``out=(gi, gw, gb)`` gives preallocated outputs of the same kind as the inputs
    (their dtypes choose the output dtypes); a ``None`` entry is allocated as by default,
    entries for masked outputs are ignored.
    """
    return LAYER_NORM_BACKWARD.call((grad_out, input, normalized_shape, mean, rstd, weight,
                                     bias, output_mask), out=out, stream=stream)


class LayerNormBackward(Plan):
    """A LayerNormBackward plan over fixed device tensors, for loops (see
    :class:`~acl_py.ops.Plan`): arguments as :func:`layer_norm_backward`, DeviceTensors only;
    outputs ``grad_input``, ``grad_weight``, ``grad_bias`` (``None`` where masked)."""

    declared = LAYER_NORM_BACKWARD
    __slots__ = ()

    def __init__(self, grad_out: "DeviceTensor", input: "DeviceTensor",
                 normalized_shape: Sequence[int], mean: "DeviceTensor", rstd: "DeviceTensor",
                 weight: Optional["DeviceTensor"] = None, bias: Optional["DeviceTensor"] = None,
                 output_mask: Sequence[bool] = _ALL, *, out: OutArg = None) -> None:
        self._prepare((grad_out, input, normalized_shape, mean, rstd, weight, bias,
                       output_mask), out)
