"""``aclnnRmsNormGrad``: the backward of RmsNorm, :func:`rms_norm_grad` and the plan
:class:`RmsNormGrad`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x`` float32/float16/bfloat16, ``dy`` x's, ``rstd`` float32, ``gamma`` x's or float32);
``dy`` of x's shape; ``gamma`` of rank 1..rank(x) equal to the trailing dims of ``x``;
``rstd`` holding one value per row, its leading dims x's batch dims (the vendor's tiling rule:
a shorter rstd leaves x's remaining batch dims 1); ``out=`` entries of x's shape (dx, x's
dtype) and gamma's shape (dgamma, float32). The operator's own rules (ranks up to 8, the
part's dtype table, no empty row set outside Ascend 950, gamma's size a multiple of 64 on the
Atlas training parts) are phase one's: its refusals surface as
:class:`~acl_py.errors.OperatorInvalidParameterError` (161002) or
:class:`~acl_py.errors.OperatorTilingError` (561002).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (Declared, Operand, OutArg, Plan, checked_later, dtype_of, output, shape_of,
                       staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["rms_norm_grad", "RmsNormGrad", "RMS_NORM_GRAD"]


# The code of its generated interface's tiling, which checks the shapes after the dtypes
# (161002; docs/emulator.md)
_TILING = (561002,)
# out= shapes: its generated interface's tiling checks them (561002), after the dtypes
_OUT = checked_later(_TILING, shape=True)


def rms_norm_grad_check(a):
    """The relations between the arguments (the vendor's CheckInputShape4RmsNormGrad): dy has
    x's shape; gamma equals x's trailing dims; rstd holds one value per row of x, its
    leading dims x's batch dims."""
    shape, gs, rs = a.x.shape, a.gamma.shape, a.rstd.shape
    if a.dy.shape != shape:
        staged(_TILING, "dy", f"shape {a.dy.shape} != x's shape {shape}")
    if not shape:
        staged(_TILING, "x", "must have at least one dim")
    if not gs or len(gs) > len(shape) or shape[len(shape) - len(gs):] != gs:
        staged(_TILING, "gamma", f"shape {gs} must equal the trailing dims of x's "
               f"shape {shape}")
    batch = shape[:len(shape) - len(gs)]
    lead = min(len(rs), len(batch))
    if (rs[:lead] != batch[:lead] or any(d != 1 for d in batch[lead:])
            or math.prod(rs) != math.prod(batch)):
        staged(_TILING, "rstd", f"shape {rs} must hold one value per row of x {shape} "
               f"over gamma {gs}: x's batch dims {batch} (then ones)")


def _smoke(shape, nrank, dtype, gamma_dtype=None):
    def make():
        from ..dtypes import bfloat16
        dt = {"bf16": bfloat16()}.get(dtype, dtype)
        gdt = {"bf16": bfloat16()}.get(gamma_dtype, gamma_dtype) or dt
        rng = np.random.default_rng(len(shape) + shape[-1])
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(shape[len(shape) - nrank:],
                                             dtype=np.float32)).astype(gdt)
        rstd = reference.rms_norm(x, g)[1].astype(np.float32)
        return dy, x, rstd, g
    return (f"{dtype if isinstance(dtype, str) else np.dtype(dtype).name}"
            f"{list(shape)}", make)


RMS_NORM_GRAD = Declared("aclnnRmsNormGrad", (
    tensor("dy", like="x"),
    tensor("x"),
    tensor("rstd", dtypes=("float32",)),
    tensor("gamma", like="x", or_float32=True),
    output("dxOut", shape=shape_of("x"), dtype=dtype_of("x"), later=_OUT),
    output("dgammaOut", shape=shape_of("gamma"), dtype=np.float32, later=_OUT),
), check=rms_norm_grad_check, reference=reference.rms_norm_grad, staged_codes=_TILING,
    error_scale=reference.rms_norm_grad_error_scale,
    # gamma's sizes are multiples of 64, so every part runs them (the Atlas training parts'
    # tiling refuses others)
    smoke_cases=(_smoke((8, 1024), 1, np.float32),
                 _smoke((4, 64, 768), 1, np.float16),
                 _smoke((2, 3, 8, 8), 2, np.float32)))


@overload
def rms_norm_grad(dy: np.ndarray, x: np.ndarray, rstd: np.ndarray, gamma: np.ndarray, *,
                  stream: Optional["Stream"] = ..., out: OutArg = ...
                  ) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def rms_norm_grad(dy: "DeviceTensor", x: "DeviceTensor", rstd: "DeviceTensor",
                  gamma: "DeviceTensor", *, stream: Optional["Stream"] = ...,
                  out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor"]: ...


def rms_norm_grad(dy: Operand, x: Operand, rstd: Operand, gamma: Operand, *,
                  stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Gradients of RmsNorm over the trailing dims of ``x`` that ``gamma`` has: ``(dx,
    dgamma)`` for the gradient ``dy`` of its output, with the forward's saved ``rstd`` (e.g.
    :func:`~acl_py.rms_norm`'s, shaped x's batch dims then ones)::

        xr = x * rstd
        dx = (dy * gamma - xr * mean(dy * gamma * xr)) * rstd     (mean over gamma's dims)
        dgamma = sum(dy * xr)                                      (sum over the batch dims)

    The device computes in float32 and rounds ``dx`` once to x's dtype; ``dgamma`` is float32.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out=(dx, dgamma)`` gives preallocated outputs of the same kind as the inputs (dx of x's
    shape and dtype, dgamma float32 of gamma's shape); a ``None`` entry is allocated as by
    default.
    """
    return RMS_NORM_GRAD.call((dy, x, rstd, gamma), out=out, stream=stream)


class RmsNormGrad(Plan):
    """A :func:`rms_norm_grad` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``dx``, ``dgamma``; ``run(stream)`` enqueues phase two only."""

    declared = RMS_NORM_GRAD
    __slots__ = ()

    def __init__(self, dy: "DeviceTensor", x: "DeviceTensor", rstd: "DeviceTensor",
                 gamma: "DeviceTensor", *, out: OutArg = None) -> None:
        self._prepare((dy, x, rstd, gamma), out)
