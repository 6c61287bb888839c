"""``aclnnBatchNormElemt``: SyncBatchNorm's element-wise step, :func:`batch_norm_elemt` and the
plan :class:`BatchNormElemt`.

Each channel of ``input`` is normalized with given statistics, the whole batch's mean and
invstd (``1 / sqrt(var + eps)``) that :func:`~acl_py.batch_norm_gather_stats_with_counts`
gathers from every rank's, then scaled by ``weight`` and shifted by ``bias``. The device makes
the variance ``1 / invstd^2 - eps`` in invstd's dtype and runs BatchNorm's inference on it
(docs/emulator.md), so a 16-bit invstd costs a few of its ulps.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(every tensor float32/float16/bfloat16, each on its own; ``output`` input's: the device
copies its result without a cast); ``input`` of rank 2 to 8 with channels (dim 1) not 0;
``weight``, ``bias``, ``mean``, ``invstd`` vectors of ``C`` elements. The part's dtype list
(no bfloat16 on Atlas training and inference parts) is phase one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import Declared, Operand, OutArg, Plan, double, dtype_of, output, shape_of, tensor

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_elemt", "BatchNormElemt", "BATCH_NORM_ELEMT"]

_VECTORS = ("weight", "bias", "mean", "invstd")


def _check(a):
    """The vendor's shape rules (aclnn_batch_norm_elemt.cpp CheckShape) that name a Python
    argument."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    c = shape[1]
    if c == 0:
        raise AclArgumentError("input", f"shape {shape} has no channel: dim 1 (C) must not "
                               f"be 0")
    for name in _VECTORS:
        t = a[name]
        if t is not None and t.shape != (c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({c},): one value per "
                                   f"channel of input {shape}")


def _reference(**a):
    return (reference.batch_norm_elemt(**a),)


def _error_scale(**a):
    return (reference.batch_norm_elemt_error_scale(**a),)


def _smoke(shape, dtype, stat_dtype=None, affine=True, eps=1e-5):
    def make():
        rng = np.random.default_rng(sum(shape) + 11)
        c = shape[1]
        sdt = stat_dtype or dtype
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        w = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dtype) \
            if affine else None
        b = (0.5 * rng.standard_normal(c, dtype=np.float32)).astype(dtype) if affine else None
        mean = (0.5 + 0.2 * rng.standard_normal(c)).astype(sdt)
        invstd = (0.5 + rng.random(c)).astype(sdt)
        return x, w, b, mean, invstd, eps
    name = np.dtype(dtype).name
    stats = "" if stat_dtype is None else f"-stats-{np.dtype(stat_dtype).name}"
    return f"{name}{list(shape)}{stats}{'' if affine else '-no-affine'}", make


BATCH_NORM_ELEMT = Declared("aclnnBatchNormElemt", (
    tensor("input"),
    tensor("weight", optional=True),
    tensor("bias", optional=True),
    tensor("mean"),
    tensor("invstd"),
    double("eps", default=1e-5),
    output("output", shape=shape_of("input"), dtype=dtype_of("input")),
), check=_check, reference=_reference, error_scale=_error_scale,
    # an output of another dtype than input's fails the op_api's copy of the result
    rule_codes=(561103,),
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((8, 16, 7), np.float16),
                 _smoke((6, 5, 4), np.float16, stat_dtype=np.float32),
                 _smoke((32, 8), np.float32, affine=False),
                 _smoke((2, 3, 2, 2, 3, 2), np.float32)))


@overload
def batch_norm_elemt(input: np.ndarray, weight: Optional[np.ndarray],
                     bias: Optional[np.ndarray], mean: np.ndarray, invstd: np.ndarray,
                     eps: float = ..., *, stream: Optional["Stream"] = ...,
                     out: OutArg = ...) -> np.ndarray: ...


@overload
def batch_norm_elemt(input: "DeviceTensor", weight: Optional["DeviceTensor"],
                     bias: Optional["DeviceTensor"], mean: "DeviceTensor",
                     invstd: "DeviceTensor", eps: float = ..., *,
                     stream: Optional["Stream"] = ..., out: OutArg = ...) -> "DeviceTensor": ...


def batch_norm_elemt(input: Operand, weight: Optional[Operand], bias: Optional[Operand],
                     mean: Operand, invstd: Operand, eps: float = 1e-5, *,
                     stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """SyncBatchNorm's normalization of ``input`` ``[N, C, ...]`` (torch's
    ``batch_norm_elemt``): ``output = (input - mean) * invstd * weight + bias`` per channel
    (dim 1), with ``mean`` and ``invstd`` ``(C,)`` given (the gathered statistics of the whole
    batch: :func:`~acl_py.batch_norm_gather_stats_with_counts`), ``weight``/``bias`` None: ones
    and zeros. ``output`` has input's shape and dtype. The device takes ``eps`` to make the
    variance ``1 / invstd^2 - eps`` in invstd's dtype and adds it back (docs/emulator.md). An
    empty input writes nothing.

    * NumPy arrays in, a NumPy array out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, a DeviceTensor out, queued on ``stream``.

    ``out=(output,)`` gives a preallocated output (input's dtype and shape).
    """
    return BATCH_NORM_ELEMT.call((input, weight, bias, mean, invstd, eps), out=out,
                                 stream=stream)[0]


class BatchNormElemt(Plan):
    """A :func:`batch_norm_elemt` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): output ``output``; ``run(stream)`` enqueues phase two only."""

    declared = BATCH_NORM_ELEMT
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", weight: Optional["DeviceTensor"],
                 bias: Optional["DeviceTensor"], mean: "DeviceTensor", invstd: "DeviceTensor",
                 eps: float = 1e-5, *, out: OutArg = None) -> None:
        self._prepare((input, weight, bias, mean, invstd, eps), out)
