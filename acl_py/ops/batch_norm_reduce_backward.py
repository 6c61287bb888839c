"""``aclnnBatchNormReduceBackward``: the first half of SyncBatchNorm's backward,
:func:`batch_norm_reduce_backward` and the plan :class:`BatchNormReduceBackward`.

Each rank computes its per-channel sums ``sum_dy`` and ``sum_dy_xmu`` here; the caller
all-reduces them (and the ranks' counts) and hands them to
:func:`~acl_py.batch_norm_elemt_backward`, which forms grad_input. ``mean`` and ``invstd`` are
the whole batch's statistics (the all-reduced forward's), not this rank's.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(every tensor float32/float16/bfloat16; ``input`` grad_out's); ``input`` of rank 2 to 8 with
channels (dim 1) and ``grad_out`` of its shape; ``mean``, ``invstd``, ``weight`` vectors of
``C`` elements. The part's dtype list (no bfloat16 on the Atlas training series) is phase
one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (FLOATS, Declared, Operand, OutArg, Plan, configured, flag, output,
                       tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_reduce_backward", "BatchNormReduceBackward",
           "BATCH_NORM_REDUCE_BACKWARD", "check_channel_vectors"]

# The families whose kernels the docs list (Atlas training, A2, A3, Ascend 950); the Atlas
# inference series, which they call unsupported, is refused by the emulator's phase one.
KERNEL_PARTS = configured("ascend910", "ascend910b", "ascend910_93", "ascend950",
                          source="hicann/ops-nn norm/sync_batch_norm_backward_{reduce,elemt}/docs/"
                          "aclnnBatchNorm{Reduce,Elemt}Backward.md (the product lists)")


def check_channel_vectors(a, names):
    """``input`` of rank 2 to 8 with channels (its dim 1, not 0), ``grad_out`` of its shape,
    and each of ``names`` (None or) a vector of one value per channel: the docs' shape rules of
    the SyncBatchNorm backward operators
    (docs/aclnnBatchNormReduceBackward.md, docs/aclnnBatchNormElemtBackward.md)."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    if shape[1] == 0:
        raise AclArgumentError("input", f"shape {shape} has no channel (dim 1 is 0)")
    if a.grad_out.shape != shape:
        raise AclArgumentError("grad_out", f"shape {a.grad_out.shape} must be input's {shape}")
    c = shape[1]
    for name in names:
        t = a[name]
        if t is not None and t.shape != (c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({c},): one value per "
                                   f"channel of input {shape}")


def _check(a):
    check_channel_vectors(a, ("mean", "invstd", "weight"))


def _channels(a):
    return (a.input.shape[1],)


def _sum_dtype(a):
    """The sums default to mean's dtype (any float dtype the part has may be given: the
    op_api casts its float32 results to the output's)."""
    return a.mean.dtype


def _param_dtype(a):
    """grad_weight and grad_bias default to weight's dtype (mean's without one)."""
    return a.weight.dtype if a.weight is not None else a.mean.dtype


def _empty_unwritten(a, part):
    """An empty input is filled with zeros on Ascend 950 only; the other parts return before
    any L0 operator (hicann/ops-nn norm/sync_batch_norm_backward_reduce/op_api/
    aclnn_batch_norm_backward_reduce.cpp OutputParamFillZeroForEmptyTensor)."""
    if 0 not in a.input.shape or part.npu_arch == 3510:
        return None
    return ("not written for an empty input off Ascend 950 (hicann/ops-nn norm/"
            "sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.cpp "
            "fills zeros only where IsRegbase())")


def _smoke(shape, dtype, affine=True, flags=(True, True, True)):
    def make():
        rng = np.random.default_rng(sum(shape) + 3)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        c = shape[1]
        mean = (0.5 + 0.1 * rng.standard_normal(c)).astype(np.float32)
        invstd = (0.5 + rng.random(c)).astype(np.float32)
        w = (1 + 0.25 * rng.standard_normal(c)).astype(np.float32) if affine else None
        return (dy, x, mean, invstd, w, *flags)
    name = np.dtype(dtype).name
    return (f"{name}{list(shape)}{'' if affine else '-no-weight'}"
            f"{'' if all(flags) else '-flags'}"), make


BATCH_NORM_REDUCE_BACKWARD = Declared("aclnnBatchNormReduceBackward", (
    tensor("gradOut", name="grad_out"),
    tensor("input", like="grad_out"),
    tensor("mean"),
    tensor("invstd"),
    tensor("weight", optional=True),
    flag("inputG", name="input_g", default=True),
    flag("weightG", name="weight_g", default=True),
    flag("biasG", name="bias_g", default=True),
    output("sumDy", shape=_channels, dtype=_sum_dtype, dtypes=FLOATS,
           when=lambda a: a.input_g, unwritten=_empty_unwritten),
    output("sumDyXmu", shape=_channels, dtype=_sum_dtype, dtypes=FLOATS,
           when=lambda a: a.input_g, unwritten=_empty_unwritten),
    output("gradWeight", shape=_channels, dtype=_param_dtype, dtypes=FLOATS,
           when=lambda a: a.weight_g, unwritten=_empty_unwritten),
    output("gradBias", shape=_channels, dtype=_param_dtype, dtypes=FLOATS,
           when=lambda a: a.bias_g, unwritten=_empty_unwritten),
), check=_check, reference=reference.batch_norm_reduce_backward,
    error_scale=reference.batch_norm_reduce_backward_error_scale, parts=KERNEL_PARTS,
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((8, 16, 7), np.float16),
                 _smoke((3, 5, 4), np.float32, affine=False),
                 _smoke((6, 3, 10), np.float32, flags=(False, True, True))))


@overload
def batch_norm_reduce_backward(grad_out: np.ndarray, input: np.ndarray, mean: np.ndarray,
                               invstd: np.ndarray, weight: Optional[np.ndarray] = ...,
                               input_g: bool = ..., weight_g: bool = ..., bias_g: bool = ...,
                               *, stream: Optional["Stream"] = ..., out: OutArg = ...
                               ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                          Optional[np.ndarray], Optional[np.ndarray]]: ...


@overload
def batch_norm_reduce_backward(grad_out: "DeviceTensor", input: "DeviceTensor",
                               mean: "DeviceTensor", invstd: "DeviceTensor",
                               weight: Optional["DeviceTensor"] = ..., input_g: bool = ...,
                               weight_g: bool = ..., bias_g: bool = ..., *,
                               stream: Optional["Stream"] = ..., out: OutArg = ...
                               ) -> Tuple[Optional["DeviceTensor"], Optional["DeviceTensor"],
                                          Optional["DeviceTensor"],
                                          Optional["DeviceTensor"]]: ...


def batch_norm_reduce_backward(grad_out: Operand, input: Operand, mean: Operand,
                               invstd: Operand, weight: Optional[Operand] = None,
                               input_g: bool = True, weight_g: bool = True,
                               bias_g: bool = True, *, stream: Optional["Stream"] = None,
                               out: OutArg = None) -> Any:
    """The per-channel sums of SyncBatchNorm's backward over ``input`` ``[N, C, ...]`` and the
    gradient ``grad_out`` of its output: ``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)``::

        sum_dy      = sum(grad_out)                   over every dim but the channel's
        sum_dy_xmu  = sum(grad_out * (input - mean))
        grad_weight = sum_dy_xmu * invstd,   grad_bias = sum_dy

    ``input_g`` asks for sum_dy and sum_dy_xmu, ``weight_g`` for grad_weight, ``bias_g`` for
    grad_bias (``None`` where not asked). ``mean``/``invstd``: the batch's statistics (the
    forward's, ``1 / sqrt(var + eps)``); ``weight`` is not used by the computation (accepted
    as the vendor's signature has it). The device computes in float32, sum_dy_xmu as
    ``sum(grad_out * input) - mean * sum_dy`` (docs/emulator.md); the sums default to mean's
    dtype, grad_weight/grad_bias to weight's (mean's without one). An empty input gives zeros
    on Ascend 950 and writes nothing elsewhere (None there). The Atlas inference series is
    not supported.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` gives preallocated outputs of the
    same kind as the inputs, of any float dtype (the device casts to it); a ``None`` entry is
    allocated as by default, entries of outputs not asked for are ignored.
    """
    return BATCH_NORM_REDUCE_BACKWARD.call((grad_out, input, mean, invstd, weight, input_g,
                                            weight_g, bias_g), out=out, stream=stream)


class BatchNormReduceBackward(Plan):
    """A :func:`batch_norm_reduce_backward` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``sum_dy``, ``sum_dy_xmu``, ``grad_weight``,
    ``grad_bias`` (None where not asked for); ``run(stream)`` enqueues phase two only."""

    declared = BATCH_NORM_REDUCE_BACKWARD
    __slots__ = ()

    def __init__(self, grad_out: "DeviceTensor", input: "DeviceTensor", mean: "DeviceTensor",
                 invstd: "DeviceTensor", weight: Optional["DeviceTensor"] = None,
                 input_g: bool = True, weight_g: bool = True, bias_g: bool = True, *,
                 out: OutArg = None) -> None:
        self._prepare((grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g), out)
