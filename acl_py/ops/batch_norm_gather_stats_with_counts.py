"""``aclnnBatchNormGatherStatsWithCounts``: SyncBatchNorm's gathering step,
:func:`batch_norm_gather_stats_with_counts` and the plan :class:`BatchNormGatherStatsWithCounts`.

After every rank has computed its local per-channel mean and invstd (``1 / sqrt(var + eps)``)
and its element count, and they are gathered into ``mean``, ``invstd`` (``[N, C]``, one row a
rank) and ``counts`` (``[N]``), this combines them into the whole batch's ``mean_all`` and
``invstd_all`` (``(C,)``) and updates ``running_mean`` and ``running_var`` in place (the vendor's
``aclTensor *runningMean``, ``*runningVar``): the call returns them as its last two results, *the*
objects given. :func:`~acl_py.batch_norm_elemt` then normalizes each rank's input with them.

Python-level checks (see :mod:`._declare`): argument kinds; dtypes (every tensor
float32/float16/bfloat16, each on its own); ``input`` of rank 2 to 8 (it only gives ``C``, its
dim 1); ``mean`` and ``invstd`` ``(N, C)``, ``counts`` ``(N,)``, ``running_mean``,
``running_var`` ``(C,)``; ``running_var`` given with ``running_mean`` (the op_api writes both;
the emulator refuses the other case, docs/emulator.md), NumPy running statistics not sharing
memory. The part's rules (no bfloat16 on Atlas training and inference parts; on Ascend 950
invstd and the running statistics in mean's dtype, an absent one counted as input's, momentum
in [0, 1], eps > 0) are phase one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import Declared, FLOATS, Operand, OutArg, Plan, double, dtype_of, output, tensor

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_gather_stats_with_counts", "BatchNormGatherStatsWithCounts",
           "BATCH_NORM_GATHER_STATS_WITH_COUNTS"]


def _check(a):
    """The vendor's shape rules (aclnn_batch_norm_gather_stats_with_counts.cpp CheckShape),
    runningVar beside runningMean, and NumPy running statistics not sharing memory."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    c = shape[1]
    n = None
    for name in ("mean", "invstd"):
        s = a[name].shape
        if len(s) != 2 or s[1] != c or (n is not None and s[0] != n):
            want = f"({n}, {c})" if n is not None else f"(N, {c})"
            raise AclArgumentError(name, f"shape {s} must be {want}: one row per rank, one "
                                   f"value per channel of input {shape}")
        n = s[0]
    if a.counts.shape != (n,):
        raise AclArgumentError("counts", f"shape {a.counts.shape} must be ({n},): one count "
                               f"per rank (row of mean)")
    for name in ("running_mean", "running_var"):
        t = a[name]
        if t is not None and t.shape != (c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({c},): one value per "
                                   f"channel of input {shape}")
    rm, rv = a.running_mean, a.running_var
    if rm is not None and rv is None:
        raise AclArgumentError("running_var", "is None while running_mean is given: the "
                               "operator updates both (docs/emulator.md)")
    if isinstance(rm, np.ndarray) and isinstance(rv, np.ndarray) and np.may_share_memory(rm, rv):
        raise AclArgumentError("running_var", "shares memory with running_mean: each receives "
                               "its own result")


def _channels(a):
    return (a.input.shape[1],)


def _updates(a):
    """The running statistics are written with running_mean given (the op_api returns before
    its copies without it: a running_var given alone is left as it was)."""
    return a.running_mean is not None


def _reference(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    mall, iall, rm, rv = reference.batch_norm_gather_stats_with_counts(
        mean, invstd, counts, running_mean, running_var, momentum, eps)
    return mall, iall, rm, rv if running_mean is not None else None


def _error_scale(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    return reference.batch_norm_gather_stats_with_counts_error_scale(
        mean, invstd, counts, running_mean, running_var, momentum, eps)


def _smoke(ranks, shape, dtype, running=True, momentum=0.1, eps=1e-5):
    """``ranks`` ranks' inputs of ``shape`` each (batch sizes 1 .. ranks times shape[0]):
    their local mean and invstd computed in float64, rank 0's input as ``input``."""
    def make():
        rng = np.random.default_rng(sum(shape) + ranks)
        c = shape[1]
        xs = [rng.standard_normal((shape[0] * (k + 1),) + tuple(shape[1:])) * 2 + 0.5
              for k in range(ranks)]
        rows = [np.moveaxis(x, 1, 0).reshape(c, -1) for x in xs]
        mean = np.stack([r.mean(axis=1) for r in rows]).astype(dtype)
        invstd = np.stack([1 / np.sqrt(r.var(axis=1) + eps) for r in rows]).astype(dtype)
        counts = np.array([r.shape[1] for r in rows], np.float32)
        rm = (0.1 * rng.standard_normal(c)).astype(dtype) if running else None
        rv = (1 + 0.5 * rng.random(c)).astype(dtype) if running else None
        return xs[0].astype(dtype), mean, invstd, rm, rv, momentum, eps, counts
    name = np.dtype(dtype).name
    return f"{name}{list(shape)}x{ranks}{'' if running else '-no-running'}", make


BATCH_NORM_GATHER_STATS_WITH_COUNTS = Declared("aclnnBatchNormGatherStatsWithCounts", (
    tensor("input"),
    tensor("mean"),
    tensor("invstd"),
    tensor("runningMean", name="running_mean", optional=True, written=True),
    tensor("runningVar", name="running_var", optional=True, written=True),
    double("momentum"),
    double("eps"),
    tensor("counts"),
    output("meanAll", name="mean_all", shape=_channels, dtype=dtype_of("mean"), dtypes=FLOATS),
    output("invstdAll", name="invstd_all", shape=_channels, dtype=dtype_of("mean"),
           dtypes=FLOATS),
    output("runningMeanOut", name="running_mean_out", into="running_mean", when=_updates),
    output("runningVarOut", name="running_var_out", into="running_var", when=_updates),
), check=_check, reference=_reference, error_scale=_error_scale,
    # Ascend 950: running statistics of another dtype than mean's fail the op_api's copy of
    # the fused kernel's results
    rule_codes=(561103,),
    smoke_cases=(_smoke(4, (2, 6, 5), np.float32),
                 _smoke(2, (3, 16, 4, 2), np.float16),
                 _smoke(3, (8, 70), np.float32, running=False),
                 _smoke(1, (4, 3, 3), np.float32, momentum=0.5, eps=1e-3)))


@overload
def batch_norm_gather_stats_with_counts(
        input: np.ndarray, mean: np.ndarray, invstd: np.ndarray,
        running_mean: Optional[np.ndarray], running_var: Optional[np.ndarray],
        momentum: float, eps: float, counts: np.ndarray, *,
        stream: Optional["Stream"] = ..., out: OutArg = ...) -> Tuple[Any, ...]: ...


@overload
def batch_norm_gather_stats_with_counts(
        input: "DeviceTensor", mean: "DeviceTensor", invstd: "DeviceTensor",
        running_mean: Optional["DeviceTensor"], running_var: Optional["DeviceTensor"],
        momentum: float, eps: float, counts: "DeviceTensor", *,
        stream: Optional["Stream"] = ..., out: OutArg = ...) -> Tuple[Any, ...]: ...


def batch_norm_gather_stats_with_counts(input: Operand, mean: Operand, invstd: Operand,
                                        running_mean: Optional[Operand],
                                        running_var: Optional[Operand], momentum: float,
                                        eps: float, counts: Operand, *,
                                        stream: Optional["Stream"] = None,
                                        out: OutArg = None) -> Any:
    """SyncBatchNorm's gathering of ``N`` ranks' statistics (torch's
    ``batch_norm_gather_stats_with_counts``, the same arguments):
    ``(mean_all, invstd_all, running_mean, running_var)``.

    ``mean`` and ``invstd`` ``(N, C)`` hold each rank's per-channel mean and
    ``1 / sqrt(var + eps)`` of its biased variance, ``counts`` ``(N,)`` its number of values
    per channel (``input`` ``[batch, C, ...]``, any rank's, gives ``C`` only). With
    ``S = sum(counts)``: ``mean_all = sum(mean * counts) / S``, the whole batch's biased
    variance ``var = sum((1 / invstd^2 - eps + (mean - mean_all)^2) * counts) / S``,
    ``invstd_all = 1 / sqrt(var + eps)`` (``(C,)``, mean's dtype by default); where
    ``running_mean`` is given, it and ``running_var`` are updated in place to ``(1 - momentum)
    * old + momentum * new`` (the variance unbiased, ``var * S / (S - 1)``) and returned (the
    same objects; None where ``running_mean`` is None, and a ``running_var`` given alone is
    left as it was). The device computes in float32 (its chain by part: docs/emulator.md).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized; the
      running statistics written back into the caller's arrays);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(mean_all, invstd_all, None, None)`` gives preallocated outputs (any float dtype:
    the device casts to it).
    """
    return BATCH_NORM_GATHER_STATS_WITH_COUNTS.call(
        (input, mean, invstd, running_mean, running_var, momentum, eps, counts), out=out,
        stream=stream)


class BatchNormGatherStatsWithCounts(Plan):
    """A :func:`batch_norm_gather_stats_with_counts` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): each ``run(stream)`` updates ``running_mean``/``running_var``
    again (from the last run's values); outputs ``mean_all``, ``invstd_all``,
    ``running_mean_out``, ``running_var_out``."""

    declared = BATCH_NORM_GATHER_STATS_WITH_COUNTS
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", mean: "DeviceTensor", invstd: "DeviceTensor",
                 running_mean: Optional["DeviceTensor"],
                 running_var: Optional["DeviceTensor"], momentum: float, eps: float,
                 counts: "DeviceTensor", *, out: OutArg = None) -> None:
        self._prepare((input, mean, invstd, running_mean, running_var, momentum, eps, counts),
                      out)
