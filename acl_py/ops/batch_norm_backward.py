"""``aclnnBatchNormBackward``: the backward of BatchNorm, :func:`batch_norm_backward` and the
plan :class:`BatchNormBackward`.

In training the device takes the forward's saved statistics: ``save_mean`` and
``save_invstd``, which holds what :func:`~acl_py.batch_norm` writes there on the same part
(:func:`~acl_py.ops.batch_norm.saved_statistic`): ``1 / sqrt(var + eps)`` on Ascend 950, the
batch's variance itself on the other parts, whose kernels add ``eps`` and take the root. In
inference it takes ``running_mean`` and ``running_var``.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(every tensor float32/float16/bfloat16; ``input`` grad_out's); ``input`` of rank 2 to 8
(channels in dim 1) and ``grad_out`` of its shape; ``weight``, ``running_mean``,
``running_var`` vectors of ``C`` elements, ``save_mean`` and ``save_invstd`` too (or, in
inference, empty); ``output_mask`` three bools. The operator's own rules (the part's dtype
list: no bfloat16 on Atlas training and inference parts; on Ascend 950 the vectors float32 or
grad_out's dtype, grad_weight and grad_bias of one dtype, a rank-5 input NCDHW) are phase
one's. ``out=`` entries: grad_weight and grad_bias of any float dtype (the device casts), on
Ascend 950 float32 or weight's dtype (a NumPy call refuses another before any C call).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (VIEW_COPY, Declared, FLOATS, Operand, OutArg, Plan, bool_array,
                       checked_later, double, dtype_of, flag, output, part_of, shape_of, tensor)
from .batch_norm import saved_statistic

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_backward", "BatchNormBackward", "BATCH_NORM_BACKWARD",
           "empty_unwritten"]

_ALL = (True, True, True)
_VECTORS = ("weight", "running_mean", "running_var")
_SAVED = ("save_mean", "save_invstd")


def _check(a):
    """The vendor's shape rules (aclnn_batch_norm_backward.cpp CheckShape, CheckOtherShape,
    CheckSaveMeanSaveInvstdShape) that name a Python argument."""
    shape = a.input.shape
    if not 2 <= len(shape) <= 8:
        raise AclArgumentError("input", f"shape {shape} must have 2 to 8 dims (N, C, ...)")
    if a.grad_out.shape != shape:
        raise AclArgumentError("grad_out", f"shape {a.grad_out.shape} must be input's {shape}")
    c = shape[1]
    for name in _VECTORS + _SAVED:
        t = a[name]
        if t is None or t.shape == (c,) or (name in _SAVED and not a.training
                                            and t.shape == (0,)):
            continue
        also = " (or, in inference, (0,))" if name in _SAVED else ""
        raise AclArgumentError(name, f"shape {t.shape} must be ({c},){also}: one value per "
                               f"channel of input {shape}")


def _channels(a):
    return (a.input.shape[1],)


def _copies(part):
    """Whether ``part``'s op_api leaves grad_weight's and grad_bias's shapes to the copies of
    the results into them (561103): every part but Ascend 950, whose op_api checks them
    (161002)."""
    return not part.arch3510


def _input_fits(a, given, part=None, shapes=None):
    """grad_input's ``fits``: another shape than input's only beside an empty input or
    grad_out, where phase one returns before any check."""
    if 0 in a.input.shape:
        return None
    return f"!= {a.input.shape} (input's shape; another shape only beside an empty input)"


def _vector_fits(a, given, part=None, shapes=None):
    """grad_weight's and grad_bias's ``fits``: ``(C,)``, or any shape beside an empty input
    (nothing checked); off Ascend 950 also one element beside C == 1 (the op_api's copy of the
    result takes two one-element tensors: the CheckParams of Ascend 950 asks ``[C]``)."""
    if 0 in a.input.shape:
        return None
    c = a.input.shape[1]
    if c == 1 and math.prod(given) == 1 and (part is None or part.npu_arch != 3510):
        return None
    return f"!= ({c},) (one value per channel of input {a.input.shape})"


def _param_dtype(a):
    """weight's dtype (float32 without one), the default: Ascend 950's kernel computes
    grad_weight and grad_bias in it."""
    return a.weight.dtype if a.weight is not None else np.dtype(np.float32)


def _param_dtypes(a, part):
    """The dtypes a given grad_weight or grad_bias entry may have: any float dtype (the part
    casts the results to the output's), but on Ascend 950 beside a weight float32 or
    weight's dtype (RegbaseCheckDtypeSame, hicann/ops-nn norm/batch_norm_grad_v3/op_host/
    op_api/aclnn_batch_norm_backward.cpp). That the two share a dtype there is phase one's
    rule."""
    if part.arch3510 and a.weight is not None:
        return tuple(dict.fromkeys(("float32", a.weight.dtype.name)))
    return FLOATS


def empty_unwritten(a, part):
    """Why grad_weight and grad_bias are not written for checked arguments ``a`` (None where
    they are): an empty input or grad_out returns before any check or L0 operator, on every
    part (hicann/ops-nn norm/batch_norm_grad_v3/op_host/op_api/aclnn_batch_norm_backward.cpp)."""
    if 0 not in a.input.shape:
        return None
    return ("not written for an empty input (hicann/ops-nn norm/batch_norm_grad_v3/op_host/"
            "op_api/aclnn_batch_norm_backward.cpp returns before any L0 operator)")


def _reference(**a):
    return reference.batch_norm_backward(**a, saved=saved_statistic(part_of()))


def _error_scale(**a):
    return reference.batch_norm_backward_error_scale(**a, saved=saved_statistic(part_of()))


def _smoke(shape, dtype, training=True, affine=True, saved=True, mask=_ALL, eps=1e-5):
    def make():
        rng = np.random.default_rng(sum(shape) + 7 * training)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        c = shape[1]
        w = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dtype) \
            if affine else None
        rm = (0.5 + 0.1 * rng.standard_normal(c)).astype(np.float32)
        rv = (1 + 0.5 * rng.random(c)).astype(np.float32)
        # a mean near the data's and a positive second statistic: a variance (the parts
        # other than Ascend 950) or an rstd (Ascend 950), valid either way
        sm = (0.5 + 0.1 * rng.standard_normal(c)).astype(np.float32) if saved else None
        si = (0.5 + rng.random(c)).astype(np.float32) if saved else None
        return dy, x, w, rm, rv, sm, si, training, eps, mask
    name = np.dtype(dtype).name
    mode = "train" if training else "eval"
    return (f"{name}{list(shape)}-{mode}{'' if affine else '-no-weight'}"
            f"{'' if saved else '-no-saved'}{'' if mask == _ALL else '-mask'}"), make


_COPIED_SHAPE = checked_later(VIEW_COPY, shape=True, where=_copies)

BATCH_NORM_BACKWARD = Declared("aclnnBatchNormBackward", (
    tensor("gradOut", name="grad_out"),
    tensor("input", like="grad_out"),
    tensor("weight", optional=True),
    tensor("runningMean", name="running_mean", optional=True),
    tensor("runningVar", name="running_var", optional=True),
    tensor("saveMean", name="save_mean", optional=True),
    tensor("saveInvstd", name="save_invstd", optional=True),
    flag("training", default=True),
    double("eps", default=1e-5),
    bool_array("outputMask", default=_ALL, length=3,
               items=("grad_input", "grad_weight", "grad_bias")),
    output("gradInput", name="grad_input", shape=shape_of("input"),
           dtype=dtype_of("grad_out"), when=lambda a: a.output_mask[0],
           fits=_input_fits),
    output("gradWeight", name="grad_weight", shape=_channels, dtype=_param_dtype,
           dtypes=_param_dtypes, fits=_vector_fits, when=lambda a: a.output_mask[1],
           unwritten=empty_unwritten, later=_COPIED_SHAPE),
    output("gradBias", name="grad_bias", shape=_channels, dtype=_param_dtype,
           dtypes=_param_dtypes, fits=_vector_fits, when=lambda a: a.output_mask[2],
           unwritten=empty_unwritten, later=_COPIED_SHAPE),
), check=_check, reference=_reference, error_scale=_error_scale,
    # off Ascend 950, a grad_input of another dtype than grad_out's, or a grad_weight or
    # grad_bias of another shape than (C,), fails the op_api's copy of the result
    rule_codes=(561103,), staged_codes=VIEW_COPY,
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((8, 16, 7), np.float16),
                 _smoke((3, 5, 4), np.float32, affine=False, saved=False),
                 _smoke((32, 8), np.float32, training=False),
                 _smoke((2, 4, 3, 5), np.float16, training=False),
                 _smoke((6, 3, 10), np.float32, mask=(False, True, True))))


@overload
def batch_norm_backward(grad_out: np.ndarray, input: np.ndarray,
                        weight: Optional[np.ndarray] = ...,
                        running_mean: Optional[np.ndarray] = ...,
                        running_var: Optional[np.ndarray] = ...,
                        save_mean: Optional[np.ndarray] = ...,
                        save_invstd: Optional[np.ndarray] = ..., training: bool = ...,
                        eps: float = ..., output_mask: Sequence[bool] = ..., *,
                        stream: Optional["Stream"] = ..., out: OutArg = ...
                        ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                   Optional[np.ndarray]]: ...


@overload
def batch_norm_backward(grad_out: "DeviceTensor", input: "DeviceTensor",
                        weight: Optional["DeviceTensor"] = ...,
                        running_mean: Optional["DeviceTensor"] = ...,
                        running_var: Optional["DeviceTensor"] = ...,
                        save_mean: Optional["DeviceTensor"] = ...,
                        save_invstd: Optional["DeviceTensor"] = ..., training: bool = ...,
                        eps: float = ..., output_mask: Sequence[bool] = ..., *,
                        stream: Optional["Stream"] = ..., out: OutArg = ...
                        ) -> Tuple[Optional["DeviceTensor"], Optional["DeviceTensor"],
                                   Optional["DeviceTensor"]]: ...


def batch_norm_backward(grad_out: Operand, input: Operand, weight: Optional[Operand] = None,
                        running_mean: Optional[Operand] = None,
                        running_var: Optional[Operand] = None,
                        save_mean: Optional[Operand] = None,
                        save_invstd: Optional[Operand] = None, training: bool = True,
                        eps: float = 1e-5, output_mask: Sequence[bool] = _ALL, *,
                        stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Gradients of BatchNorm (:func:`~acl_py.batch_norm`) of ``input`` ``[N, C, ...]``:
    ``(grad_input, grad_weight, grad_bias)`` for the gradient ``grad_out`` of its output,
    ``None`` where ``output_mask`` is false. Per channel of ``R`` values, with
    ``x_hat = (input - mean) * rstd``::

        training:   grad_input = weight * rstd * (grad_out - sum(grad_out) / R
                                                  - x_hat * sum(grad_out * x_hat) / R)
        inference:  grad_input = grad_out * rstd * weight
        both:       grad_weight = sum(grad_out * x_hat),  grad_bias = sum(grad_out)

    Training takes the forward's ``save_mean`` and ``save_invstd`` (None: zeros and ones),
    which hold what :func:`~acl_py.batch_norm` wrote on the same part: rstd on Ascend 950,
    the variance elsewhere (``rstd = 1 / sqrt(save_invstd + eps)`` there). Inference takes
    ``running_mean`` (None: zeros) and ``running_var`` (None: ones), ``rstd = 1 / sqrt(
    running_var + eps)``. ``weight`` None: ones. grad_input has input's shape and grad_out's
    dtype; grad_weight and grad_bias ``(C,)`` and weight's dtype (float32 without one). The
    device computes in float32 (its kernels by part: docs/emulator.md). An empty input
    writes nothing (:func:`empty_unwritten`).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(grad_input, grad_weight, grad_bias)`` gives preallocated outputs of the same kind
    as the inputs (grad_weight/grad_bias of any float dtype: the device casts to it; Ascend
    950 takes float32 or weight's); a ``None`` entry is allocated as by default, entries for
    masked outputs are ignored.
    """
    return BATCH_NORM_BACKWARD.call((grad_out, input, weight, running_mean, running_var,
                                     save_mean, save_invstd, training, eps, output_mask),
                                    out=out, stream=stream)


class BatchNormBackward(Plan):
    """A :func:`batch_norm_backward` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``grad_input``, ``grad_weight``, ``grad_bias`` (None
    where masked); ``run(stream)`` enqueues phase two only."""

    declared = BATCH_NORM_BACKWARD
    __slots__ = ()

    def __init__(self, grad_out: "DeviceTensor", input: "DeviceTensor",
                 weight: Optional["DeviceTensor"] = None,
                 running_mean: Optional["DeviceTensor"] = None,
                 running_var: Optional["DeviceTensor"] = None,
                 save_mean: Optional["DeviceTensor"] = None,
                 save_invstd: Optional["DeviceTensor"] = None, training: bool = True,
                 eps: float = 1e-5, output_mask: Sequence[bool] = _ALL, *,
                 out: OutArg = None) -> None:
        self._prepare((grad_out, input, weight, running_mean, running_var, save_mean,
                       save_invstd, training, eps, output_mask), out)
