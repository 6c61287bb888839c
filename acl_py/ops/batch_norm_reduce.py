"""``aclnnBatchNormReduce``: a training BatchNorm's first half, :func:`batch_norm_reduce` and
the plan :class:`BatchNormReduce`.

Per channel of a 4-D ``x`` the sum of its values and of their squares over the other three
dims, both float32 ``(C,)`` (the op_api requires FLOAT outputs), from which the caller forms
the batch's mean and variance. ``x``'s layout is its ``data_format``: NCHW (the channel at
dim 1) or NHWC (dim 3); phase one reads it from x's storage format, so x goes to it as a view
in that aclFormat (``format_option``; every other tensor is ND). An empty x gives zeros.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(x float32/float16/bfloat16, the outputs float32); ``data_format`` NCHW or NHWC; a non-empty x
of rank 4 (the op_api's empty branch comes first and takes an empty x of any rank: such a call
gets zeros, of shape (1,) by default, on either path); a given output ``(C,)``, or of any
shape where x or an output is empty (that branch again). The part's
dtype list (bfloat16 on Atlas A2/A3 and Ascend 950) is phase one's. The op_api has no part
check, and every part runs its BNTrainingReduce (an AscendC kernel on Ascend 950, a TBE one
elsewhere: docs/emulator.md), although the vendor's docs list the Atlas training and
inference series as unsupported: the declaration names no ``parts``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, Operand, OutArg, Plan, format_option, output, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_reduce", "BatchNormReduce", "BATCH_NORM_REDUCE"]


def _check(a):
    """The op_api's shape rule that names x (aclnn_batch_norm_reduce.cpp CheckShape), which
    its empty branch precedes: an empty x of any rank is taken (zeros)."""
    if len(a.x.shape) != 4 and 0 not in a.x.shape:
        raise AclArgumentError("x", f"shape {a.x.shape} must have 4 dims ({a.data_format})")


def _channels(a):
    """``(C,)``: x's dim 1 (NCHW) or dim 3 (NHWC). For an x of another rank ``(1,)``: not
    empty, so that phase one reaches its rank check (an empty output would take the op_api's
    empty branch, which checks nothing) and the Python check names x."""
    shape = a.x.shape
    return (shape[3 if a.data_format == "NHWC" else 1] if len(shape) == 4 else 1,)


def _fits(a, given, part=None, shapes=None):
    """A given output's shape other than ``(C,)``: phase one takes any when x or an output is
    empty, for the op_api's empty branch comes before its checks (aclnn_batch_norm_reduce.cpp;
    the emulator's stricter rank limit there is phase one's to apply, with its code);
    otherwise none."""
    if 0 in a.x.shape or any(0 in s for s in (shapes or {}).values()):
        return None
    return f"!= {_channels(a)} (one value per channel of x {a.x.shape}, {a.data_format})"


def _smoke(shape, dtype, data_format="NCHW"):
    def make():
        rng = np.random.default_rng(sum(shape) + 29)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        return x, data_format
    return f"{np.dtype(dtype).name}{list(shape)}-{data_format}", make


BATCH_NORM_REDUCE = Declared("aclnnBatchNormReduce", (
    tensor("x", format="data_format"),
    format_option("data_format", ("NCHW", "NHWC"), default="NCHW"),
    output("sum", shape=_channels, dtype=np.float32, fits=_fits),
    output("squareSum", name="square_sum", shape=_channels, dtype=np.float32, fits=_fits),
), check=_check, reference=reference.batch_norm_reduce,
    error_scale=reference.batch_norm_reduce_error_scale,
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((2, 5, 7, 16), np.float16, "NHWC"),
                 _smoke((3, 8, 1, 40), np.float32),
                 _smoke((2, 3, 4, 9), np.float32, "NHWC")))


@overload
def batch_norm_reduce(x: np.ndarray, data_format: str = ..., *,
                      stream: Optional["Stream"] = ...,
                      out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def batch_norm_reduce(x: "DeviceTensor", data_format: str = ..., *,
                      stream: Optional["Stream"] = ...,
                      out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor"]: ...


def batch_norm_reduce(x: Operand, data_format: str = "NCHW", *,
                      stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Per channel of the 4-D ``x`` the sum and the sum of squares over the other three dims:
    ``(sum, square_sum)``, both float32 ``(C,)``, computed in float32. ``data_format``:
    ``"NCHW"`` (the channel at dim 1) or ``"NHWC"`` (dim 3). An empty x gives zeros.

    * a NumPy array in, NumPy arrays out (staged through the device, synchronized);
    * a :class:`~acl_py.DeviceTensor` in, DeviceTensors out, queued on ``stream``.

    ``out=(sum, square_sum)`` gives preallocated outputs (float32, ``(C,)``).
    """
    return BATCH_NORM_REDUCE.call((x, data_format), out=out, stream=stream)


class BatchNormReduce(Plan):
    """A :func:`batch_norm_reduce` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``sum``, ``square_sum``; ``run(stream)`` enqueues
    phase two only."""

    declared = BATCH_NORM_REDUCE
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", data_format: str = "NCHW", *,
                 out: OutArg = None) -> None:
        self._prepare((x, data_format), out)
