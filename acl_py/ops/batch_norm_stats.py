"""``aclnnBatchNormStats``: SyncBatchNorm's first step, :func:`batch_norm_stats` and the plan
:class:`BatchNormStats`.

Each rank computes its local per-channel ``mean`` and ``invstd`` (``1 / sqrt(var + eps)`` of
the biased variance) of its ``input`` ``[N, C, ...]``; the ranks' rows, stacked with their
element counts, then go to :func:`~acl_py.batch_norm_gather_stats_with_counts`, and
:func:`~acl_py.batch_norm_elemt` normalizes each rank's input with the gathered statistics.
Both results are float32 whatever input's dtype (the op_api requires FLOAT outputs). An empty
input (a zero batch or spatial dim) gives means of 0 and NaN invstds.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(input float32/float16/bfloat16, the outputs float32); ``input`` of rank 2 to 8 with channels
(dim 1) not 0. The part's dtype list (bfloat16 input on Ascend 950 only) is phase one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import Declared, Operand, OutArg, Plan, double, output, tensor

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_stats", "BatchNormStats", "BATCH_NORM_STATS"]


def _check(a):
    """The vendor's shape rules (aclnn_batch_norm_stats.cpp CheckShape) that name input."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    if shape[1] == 0:
        raise AclArgumentError("input", f"shape {shape} has no channel: dim 1 (C) must not "
                               f"be 0")


def _channels(a):
    return (a.input.shape[1],)


def _reference(input, eps):
    return reference.batch_norm_stats(input, eps)


def _error_scale(input, eps):
    return reference.batch_norm_stats_error_scale(input, eps)


def _smoke(shape, dtype, eps=1e-5, offset=0.5):
    def make():
        rng = np.random.default_rng(sum(shape) + 17)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + offset).astype(dtype)
        return x, eps
    name = np.dtype(dtype).name
    return f"{name}{list(shape)}{'' if offset == 0.5 else f'-offset-{offset:g}'}", make


BATCH_NORM_STATS = Declared("aclnnBatchNormStats", (
    tensor("input"),
    double("eps", default=1e-5),
    output("mean", shape=_channels, dtype=np.float32),
    output("invstd", shape=_channels, dtype=np.float32),
), check=_check, reference=_reference, error_scale=_error_scale,
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((8, 16, 7), np.float16),
                 _smoke((32, 8), np.float32, offset=30.0),
                 _smoke((2, 3, 2, 2, 3, 2), np.float32, eps=1e-3)))


@overload
def batch_norm_stats(input: np.ndarray, eps: float = ..., *, stream: Optional["Stream"] = ...,
                     out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def batch_norm_stats(input: "DeviceTensor", eps: float = ..., *,
                     stream: Optional["Stream"] = ...,
                     out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor"]: ...


def batch_norm_stats(input: Operand, eps: float = 1e-5, *, stream: Optional["Stream"] = None,
                     out: OutArg = None) -> Any:
    """One rank's statistics of ``input`` ``[N, C, ...]`` (torch's ``batch_norm_stats``):
    ``(mean, invstd)``, both float32 ``(C,)``, per channel (dim 1) over every other dim, with
    ``invstd = 1 / sqrt(var + eps)`` of the biased variance. An empty input gives means of 0
    and NaN invstds.

    * a NumPy array in, NumPy arrays out (staged through the device, synchronized);
    * a :class:`~acl_py.DeviceTensor` in, DeviceTensors out, queued on ``stream``.

    ``out=(mean, invstd)`` gives preallocated outputs (float32, ``(C,)``).
    """
    return BATCH_NORM_STATS.call((input, eps), out=out, stream=stream)


class BatchNormStats(Plan):
    """A :func:`batch_norm_stats` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``mean``, ``invstd``; ``run(stream)`` enqueues phase
    two only."""

    declared = BATCH_NORM_STATS
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", eps: float = 1e-5, *,
                 out: OutArg = None) -> None:
        self._prepare((input, eps), out)
