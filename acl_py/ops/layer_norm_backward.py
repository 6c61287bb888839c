"""``aclnnLayerNormBackward``: the one-shot call :func:`layer_norm_backward` and the reusable
plan :class:`LayerNormBackward`.

Argument checks (see :mod:`._declare`) raise :class:`~acl_py.AclTypeError` (wrong type,
unsupported or mismatched dtype) or :class:`~acl_py.AclArgumentError` (shape, length, device)
naming the Python argument: argument kinds, ``output_mask`` (3 bools), ``normalized_shape``
(ints), dtypes (each FLOAT/FLOAT16/BF16; ``grad_out`` = ``input``'s; ``weight``, ``bias`` =
``input``'s or float32; ``mean``, ``rstd`` not narrower than ``input``), shapes (``input``
ends with ``normalized_shape``, ``grad_out`` = ``input``'s, ``weight``/``bias`` =
``normalized_shape``, ``mean`` holds M elements with ``rstd``'s shape, outputs: ``input``'s
shape / N elements, each of any of the three dtypes: the device casts to it), one device. NumPy calls make them all before any C call; DeviceTensor
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
from ._declare import (Declared, FLOATS, Operand, OutArg, Plan, as_many_elements, bool_array,
                       dtype_of, int_array, output, shape_of, tensor)
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
           fits=as_many_elements(_normalized_shape), when=lambda a: a.output_mask[1]),
    output("gradBiasOut", shape=_normalized_shape, dtype=_param_dtype, dtypes=FLOATS,
           fits=as_many_elements(_normalized_shape), when=lambda a: a.output_mask[2]),
), check=_check, reference=reference.layer_norm_backward, error_scale=_error_scale)


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
