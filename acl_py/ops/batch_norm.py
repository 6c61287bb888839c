"""``aclnnBatchNorm``: BatchNorm, :func:`batch_norm` and the plan :class:`BatchNorm`.

In training the device normalizes each channel with the batch's statistics, writes them to
``save_mean`` / ``save_invstd`` and updates ``running_mean`` / ``running_var`` in place (the
vendor's ``aclTensor *runningMean``, ``*runningVar``): the call returns them as its last two
results, *the* objects given (a NumPy call writes the results back into the caller's arrays,
which must be writable and must not share memory). In inference it normalizes with the
running statistics and writes nothing else: the four are None.

What ``save_invstd`` holds depends on the part (docs/aclnnBatchNorm.md, and the op_api's L0
ops): on Ascend 950 ``1 / sqrt(var + eps)``, on the other parts the batch's (biased) variance
itself (:func:`saved_statistic`).

Python-level checks (see :mod:`._declare`): argument kinds; dtypes (every tensor
float32/float16/bfloat16; ``output`` input's); ``input`` of rank 2 to 8 (channels in dim 1;
rank 5 needs the NCDHW format, which acl-py's ND tensors do not carry); ``weight``, ``bias``,
``running_mean``, ``running_var`` vectors of ``C`` elements. The part's dtype list (no
bfloat16 on Atlas training and inference parts) is phase one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, FLOATS, Operand, OutArg, Plan, double, dtype_of, flag, output,
                       part_of, shape_of, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm", "BatchNorm", "BATCH_NORM", "saved_statistic"]

_VECTORS = ("weight", "bias", "running_mean", "running_var")


def saved_statistic(part) -> str:
    """What ``part`` writes to ``save_invstd``: ``"invstd"`` (``1 / sqrt(var + eps)``, Ascend
    950: its BatchNormV3 kernel's batch rstd) or ``"var"`` (the batch's biased variance: the
    other parts' BatchNormV3 and BNTrainingUpdate kernels, docs/aclnnBatchNorm.md)."""
    return "invstd" if part.npu_arch == 3510 else "var"


def batch_norm_check(a):
    """The vendor's shape rules (aclnn_batch_norm.cpp CheckShape, CheckOtherShape, CheckFormat)
    that name a Python argument, and NumPy running statistics not sharing memory."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    if len(shape) == 5:
        raise AclArgumentError("input", f"shape {shape}: a rank-5 input must be in the NCDHW "
                               f"format (aclnn_batch_norm.cpp CheckFormat), and acl-py's "
                               f"tensors are ND; reshape it to rank 4 or 6")
    c = shape[1]
    for name in _VECTORS:
        t = a[name]
        if t is not None and t.shape != (c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({c},): one value per "
                                   f"channel of input {shape}")
    rm, rv = a.running_mean, a.running_var
    if isinstance(rm, np.ndarray) and isinstance(rv, np.ndarray) and np.may_share_memory(rm, rv):
        raise AclArgumentError("running_var", "shares memory with running_mean: each receives "
                               "its own result")


def _channels(a):
    return (a.input.shape[1],)


def _fits_when_empty(shape):
    """An output's ``fits``: another shape than ``shape(a)`` only for an empty input, where
    phase one returns before any check (aclnn_batch_norm.cpp: the empty input's fill)."""
    def fits(a, given, part=None, shapes=None):
        if 0 in a.input.shape:
            return None
        return (f"!= {shape(a)} (the shape it has for these arguments; another shape only "
                f"beside an empty input)")
    return fits


def _training(a):
    return a.training


def _updates(name):
    return lambda a: a.training and a[name] is not None


def _reference(**a):
    return reference.batch_norm(**a, saved=saved_statistic(part_of()))


def _error_scale(**a):
    return reference.batch_norm_error_scale(**a, saved=saved_statistic(part_of()))


def _smoke(shape, dtype, training=True, affine=True, running=True, momentum=0.1, eps=1e-5):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else dtype
        rng = np.random.default_rng(sum(shape) + 7 * training)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        c = shape[1]
        w = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dt) if affine else None
        b = (0.5 * rng.standard_normal(c, dtype=np.float32)).astype(dt) if affine else None
        rm = (0.1 * rng.standard_normal(c)).astype(np.float32) if running else None
        rv = (1 + 0.5 * rng.random(c)).astype(np.float32) if running else None
        return x, w, b, rm, rv, training, momentum, eps
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    mode = "train" if training else "eval"
    return (f"{name}{list(shape)}-{mode}{'' if affine else '-no-affine'}"
            f"{'' if running else '-no-running'}"), make


BATCH_NORM = Declared("aclnnBatchNorm", (
    tensor("input"),
    tensor("weight", optional=True),
    tensor("bias", optional=True),
    tensor("runningMean", name="running_mean", optional=True, written=True),
    tensor("runningVar", name="running_var", optional=True, written=True),
    flag("training", default=True),
    double("momentum", default=0.1),
    double("eps", default=1e-5),
    output("output", shape=shape_of("input"), dtype=dtype_of("input"),
           fits=_fits_when_empty(shape_of("input"))),
    output("saveMean", shape=_channels, dtype=np.float32, dtypes=FLOATS, when=_training,
           fits=_fits_when_empty(_channels)),
    output("saveInvstd", shape=_channels, dtype=np.float32, dtypes=FLOATS, when=_training,
           fits=_fits_when_empty(_channels)),
    output("runningMeanOut", name="running_mean_out", into="running_mean",
           when=_updates("running_mean")),
    output("runningVarOut", name="running_var_out", into="running_var",
           when=_updates("running_var")),
), check=batch_norm_check, reference=_reference, error_scale=_error_scale,
    # an output of another dtype than input's fails the op_api's copy of the result
    rule_codes=(561103,),
    # C >= 64 on rank 2/3 takes Atlas A2/A3's BatchNormV3 kernel, the others the TBE chain
    smoke_cases=(_smoke((16, 64), np.float32),
                 _smoke((4, 8, 6, 5), np.float16),
                 _smoke((2, 96, 7), np.float16),
                 _smoke((3, 5, 4), np.float32, affine=False, running=False),
                 _smoke((2, 6, 3, 4), np.float32, training=False)))


@overload
def batch_norm(input: np.ndarray, weight: Optional[np.ndarray] = ...,
               bias: Optional[np.ndarray] = ..., running_mean: Optional[np.ndarray] = ...,
               running_var: Optional[np.ndarray] = ..., training: bool = ...,
               momentum: float = ..., eps: float = ..., *, stream: Optional["Stream"] = ...,
               out: OutArg = ...) -> Tuple[Any, ...]: ...


@overload
def batch_norm(input: "DeviceTensor", weight: Optional["DeviceTensor"] = ...,
               bias: Optional["DeviceTensor"] = ..., running_mean: Optional["DeviceTensor"] = ...,
               running_var: Optional["DeviceTensor"] = ..., training: bool = ...,
               momentum: float = ..., eps: float = ..., *, stream: Optional["Stream"] = ...,
               out: OutArg = ...) -> Tuple[Any, ...]: ...


def batch_norm(input: Operand, weight: Optional[Operand] = None, bias: Optional[Operand] = None,
               running_mean: Optional[Operand] = None, running_var: Optional[Operand] = None,
               training: bool = True, momentum: float = 0.1, eps: float = 1e-5, *,
               stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """BatchNorm of ``input`` ``[N, C, ...]``, per channel over every other dim:
    ``(output, save_mean, save_invstd, running_mean, running_var)``.

    Training (default): ``mean`` and the biased variance ``var`` of each channel's values,
    ``output = (input - mean) / sqrt(var + eps) * weight + bias`` (``weight``/``bias``: one
    value per channel; None: ones/zeros); ``save_mean = mean``; ``save_invstd`` is
    ``1 / sqrt(var + eps)`` on Ascend 950 and ``var`` on the other parts
    (:func:`saved_statistic`), both float32 by default; ``running_mean`` and
    ``running_var``, where given, are updated in place to ``(1 - momentum) * old +
    momentum * new`` (the variance unbiased, ``var * R / (R - 1)``) and returned (the same
    objects; None where not given). Inference (``training=False``): ``output`` from
    ``running_mean`` (None: zeros) and ``running_var`` (None: ones); the other four None.
    The device computes in float32 (its chain by part: docs/emulator.md).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized; the
      running statistics written back into the caller's arrays);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(output, save_mean, save_invstd, None, None)`` gives preallocated outputs
    (``save_mean``/``save_invstd`` of any float dtype: the device casts to it).
    """
    return BATCH_NORM.call((input, weight, bias, running_mean, running_var, training, momentum,
                            eps), out=out, stream=stream)


class BatchNorm(Plan):
    """A :func:`batch_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    each ``run(stream)`` in training updates ``running_mean``/``running_var`` again (from
    the last run's values); outputs ``output``, ``save_mean``, ``save_invstd``,
    ``running_mean_out``, ``running_var_out``."""

    declared = BATCH_NORM
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", weight: Optional["DeviceTensor"] = None,
                 bias: Optional["DeviceTensor"] = None,
                 running_mean: Optional["DeviceTensor"] = None,
                 running_var: Optional["DeviceTensor"] = None, training: bool = True,
                 momentum: float = 0.1, eps: float = 1e-5, *, out: OutArg = None) -> None:
        self._prepare((input, weight, bias, running_mean, running_var, training, momentum, eps),
                      out)
