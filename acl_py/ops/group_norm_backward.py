"""``aclnnGroupNormBackward``: the backward of GroupNorm, :func:`group_norm_backward` and the
plan :class:`GroupNormBackward`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``grad_out`` float32/float16/bfloat16, ``input`` grad_out's; ``mean`` grad_out's or float32,
``rstd`` and ``gamma`` mean's: Ascend 950 takes float32 statistics with 16-bit data, the other
parts one dtype throughout, which phase one enforces); ``input`` of rank >= 2 (N, C, then the
HxW positions), ``grad_out`` of as many elements; ``group > 0`` dividing C; ``mean`` and
``rstd`` of N * group elements, ``gamma`` of C; ``output_mask`` three bools; ``out=`` entries
of input's shape (grad_input, grad_out's dtype) and gamma's (``(C,)`` without gamma; mean's
dtype). The operator's own rules (rank at most 8, the part's dtype list: no bfloat16 on Atlas
training and inference parts; on Atlas A2/A3 C / group at most 8000 and C at most 240000)
are phase one's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, Operand, OutArg, Plan, bool_array, dtype_of, integer, output,
                       shape_of, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["group_norm_backward", "GroupNormBackward", "GROUP_NORM_BACKWARD", "empty_unwritten"]

_ALL = (True, True, True)


def _check(a):
    """The vendor's attribute and shape rules (aclnn_group_norm_backward.cpp CheckAttr,
    CheckShape) that name a Python argument."""
    shape = a.input.shape
    if len(shape) < 2:
        raise AclArgumentError("input", f"shape {shape} must have at least 2 dims (N, C, ...)")
    if a.group <= 0:
        raise AclArgumentError("group", f"{a.group} must be greater than 0")
    if a.c % a.group:
        raise AclArgumentError("group", f"{a.group} must divide the channel count C = {a.c}")
    count = a.n * a.c * a.hxw
    if math.prod(a.grad_out.shape) != count:
        raise AclArgumentError("grad_out", f"shape {a.grad_out.shape} must hold N * C * HxW = "
                               f"{count} elements (input {shape})")
    for name in ("mean", "rstd"):
        t = a[name]
        if math.prod(t.shape) != a.n * a.group:
            raise AclArgumentError(name, f"shape {t.shape} must hold N * group = "
                                   f"{a.n * a.group} elements")
    if a.gamma is not None and math.prod(a.gamma.shape) != a.c:
        raise AclArgumentError("gamma", f"shape {a.gamma.shape} must hold C = {a.c} elements")


def _param_shape(a):
    return a.gamma.shape if a.gamma is not None else (a.c,)


def empty_unwritten(a, part):
    """Why ``part`` leaves grad_gamma and grad_beta unwritten for checked arguments ``a``
    (None where it writes them): an empty input runs nothing off the regbase parts
    (aclnn_group_norm_backward.cpp returns before any L0 operator), while Ascend 950's
    empty-tensor kernel zeroes both (the emulator's rule, docs/emulator.md)."""
    if a.n * a.c * a.hxw or part.npu_arch == 3510:
        return None
    return ("not written for an empty input off Ascend 950 (hicann/ops-nn norm/"
            "group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp: nothing runs)")


def _smoke(shape, group, dtype, affine=True):
    def make():
        rng = np.random.default_rng(sum(shape) + group)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        n, c, hxw = shape[0], shape[1], math.prod(shape[2:])
        g = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dtype) \
            if affine else None
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        _, mean, rstd = reference.group_norm(x, None, None, n, c, hxw, group)
        return (dy, x, mean.astype(dtype), rstd.astype(dtype), g, n, c, hxw, group, _ALL)
    name = np.dtype(dtype).name
    return f"{name}{list(shape)}/{group}{'' if affine else '-no-gamma'}", make


GROUP_NORM_BACKWARD = Declared("aclnnGroupNormBackward", (
    tensor("gradOut", name="grad_out"),
    tensor("input", like="grad_out"),
    tensor("mean", like="grad_out", or_float32=True),
    tensor("rstd", like="mean"),
    tensor("gamma", optional=True, like="mean"),
    integer("N", name="n"),
    integer("C", name="c"),
    integer("HxW", name="hxw"),
    integer("group"),
    bool_array("outputMask", default=_ALL, length=3,
               items=("grad_input", "grad_gamma", "grad_beta")),
    output("gradInput", name="grad_input", shape=shape_of("input"),
           dtype=dtype_of("grad_out"), when=lambda a: a.output_mask[0]),
    output("gradGammaOut", name="grad_gamma", shape=_param_shape,
           dtype=dtype_of("mean"), when=lambda a: a.output_mask[1],
           unwritten=empty_unwritten),
    output("gradBetaOut", name="grad_beta", shape=_param_shape,
           dtype=dtype_of("mean"), when=lambda a: a.output_mask[2],
           unwritten=empty_unwritten),
), check=_check, reference=reference.group_norm_backward,
    error_scale=reference.group_norm_backward_error_scale,
    # every part runs it: the L0 kernel on Atlas A2/A3 and Ascend 950, a composite of L0
    # operators on the others (op_api/aclnn_group_norm_backward.cpp)
    smoke_cases=(_smoke((2, 64, 7), 32, np.float32),
                 _smoke((4, 32, 3, 5), 8, np.float16),
                 _smoke((3, 6, 1), 3, np.float32, affine=False),
                 _smoke((2, 8, 8, 8), 4, np.float32)))


def _values(grad_out, input, mean, rstd, group, gamma, output_mask):
    """The declaration's inputs, N, C and HxW read from input's shape (an input without one
    is passed on for the declaration's checks to name)."""
    shape = tuple(getattr(input, "shape", ()))
    n, c = (shape + (0, 0))[:2]
    return (grad_out, input, mean, rstd, gamma, n, c, math.prod(shape[2:]), group,
            output_mask)


@overload
def group_norm_backward(grad_out: np.ndarray, input: np.ndarray, mean: np.ndarray,
                        rstd: np.ndarray, group: int, gamma: Optional[np.ndarray] = ...,
                        output_mask: Sequence[bool] = ..., *, stream: Optional["Stream"] = ...,
                        out: OutArg = ...
                        ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                   Optional[np.ndarray]]: ...


@overload
def group_norm_backward(grad_out: "DeviceTensor", input: "DeviceTensor", mean: "DeviceTensor",
                        rstd: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = ...,
                        output_mask: Sequence[bool] = ..., *, stream: Optional["Stream"] = ...,
                        out: OutArg = ...
                        ) -> Tuple[Optional["DeviceTensor"], Optional["DeviceTensor"],
                                   Optional["DeviceTensor"]]: ...


def group_norm_backward(grad_out: Operand, input: Operand, mean: Operand, rstd: Operand,
                        group: int, gamma: Optional[Operand] = None,
                        output_mask: Sequence[bool] = _ALL, *,
                        stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Gradients of GroupNorm (:func:`~acl_py.group_norm`) over ``group`` groups of the
    channels of ``input`` ``[N, C, ...]``: ``(grad_input, grad_gamma, grad_beta)`` for the
    gradient ``grad_out`` of its output, with the forward's saved ``mean`` and ``rstd``
    (``N * group`` values each) and ``gamma`` (C values; None: ones), ``None`` where
    ``output_mask`` is false. Per sample and group of ``E = C / group * HxW`` values, with
    ``x_hat = (input - mean) * rstd`` and ``g = grad_out * gamma``::

        grad_input = rstd * (g - mean_E(g) - x_hat * mean_E(g * x_hat))
        grad_gamma = sum(grad_out * x_hat),  grad_beta = sum(grad_out)   (per channel)

    grad_input has input's shape and grad_out's dtype; grad_gamma and grad_beta gamma's shape
    (``(C,)`` without gamma) and mean's dtype. The device computes in float32: on Atlas A2/A3
    and Ascend 950 one kernel rounds each result once; on the Atlas training and inference
    parts L0 operators each round to the data's dtype (docs/emulator.md). An empty input
    writes nothing (the result holds None for grad_gamma and grad_beta, a given ``out=``
    entry is left as it was: :func:`empty_unwritten`), except on Ascend 950, which zeroes
    grad_gamma and grad_beta.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out=(grad_input, grad_gamma, grad_beta)`` gives preallocated outputs of the same kind
    as the inputs; a ``None`` entry is allocated as by default, entries for masked outputs
    are ignored.
    """
    return GROUP_NORM_BACKWARD.call(_values(grad_out, input, mean, rstd, group, gamma,
                                            output_mask), out=out, stream=stream)


class GroupNormBackward(Plan):
    """A :func:`group_norm_backward` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``grad_input``, ``grad_gamma``, ``grad_beta`` (None
    where masked); ``run(stream)`` enqueues phase two only."""

    declared = GROUP_NORM_BACKWARD
    __slots__ = ()

    def __init__(self, grad_out: "DeviceTensor", input: "DeviceTensor", mean: "DeviceTensor",
                 rstd: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = None,
                 output_mask: Sequence[bool] = _ALL, *, out: OutArg = None) -> None:
        self._prepare(_values(grad_out, input, mean, rstd, group, gamma, output_mask), out)
