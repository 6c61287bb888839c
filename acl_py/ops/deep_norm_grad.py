"""``aclnnDeepNormGrad``: the backward of DeepNorm, :func:`deep_norm_grad` and the plan
:class:`DeepNormGrad`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes (the
vendor's def, op_host/deep_norm_grad_def.cpp: ``dy``, ``x``, ``gx`` and ``gamma`` of one
dtype, float32/float16/bfloat16; ``mean`` and ``rstd`` float32); ``x`` and ``gx`` of dy's
shape; ``gamma`` equal to the trailing dims of ``dy``, leaving at least one batch dim;
``mean`` shaped dy's batch dims then ones, ``rstd`` of mean's shape; ``out=`` entries of dy's
shape and dtype (dx, dgx) and gamma's shape (dbeta, dgamma: float32). The operator's own rules
(dy of rank 2..8, gamma of rank 1..7, no zero dim in dy unless every output is empty, the
part's dtype table: no bfloat16 on Atlas inference parts) are phase one's; on the Atlas
training parts, which have no kernel for it, it raises :class:`~acl_py.errors.InternalError`
(561003).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, checked_later, configured, double,
                       dtype_of, output, shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["deep_norm_grad", "DeepNormGrad", "DEEP_NORM_GRAD"]

# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b).
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950",
                           source=OP_DEF.format("deep_norm_grad"))

_KERNEL = "hicann/ops-nn norm/deep_norm_grad/op_kernel/deep_norm_grad_common.h"


# The code of its generated interface's tiling, which checks the shapes after the dtypes
# (161002; docs/emulator.md)
_TILING = (561002,)
# out= shapes: its generated interface's tiling checks them (561002), after the dtypes
_OUT = checked_later(_TILING, shape=True)


def deep_norm_grad_check(a):
    """The shape relations (the vendor's tiling, CheckInputOutputShapeValue), naming the
    argument."""
    shape, gs = a.dy.shape, a.gamma.shape
    for name in ("x", "gx"):
        t = getattr(a, name)
        if t.shape != shape:
            staged(_TILING, name, f"shape {t.shape} must equal dy's shape {shape}")
    if not gs or len(gs) >= len(shape) or shape[len(shape) - len(gs):] != gs:
        staged(_TILING, "gamma", f"shape {gs} must equal trailing dims of dy's shape "
               f"{shape}, leaving at least one batch dim")
    stat = shape[:len(shape) - len(gs)] + (1,) * len(gs)
    if a.mean.shape != stat:
        staged(_TILING, "mean", f"shape {a.mean.shape} must be dy's batch dims then "
               f"ones: {stat}")
    if a.rstd.shape != stat:
        staged(_TILING, "rstd", f"shape {a.rstd.shape} must be mean's shape {stat}")


def rows_unwritten(a, part):
    """Why ``part`` does not write dx and dgx (None where it does): on Atlas inference parts
    a row shorter than one 32-byte block is not copied out."""
    row_bytes = int(np.prod(a.gamma.shape)) * a.dy.dtype.itemsize
    if part.inference and row_bytes < 32 and a.dy.size:
        return (f"not written on Atlas inference parts for rows under 32 bytes (here "
                f"{row_bytes}: {_KERNEL} DataCopyCustom copies whole 32-byte blocks and stops "
                f"when a row has none)")
    return None


def _smoke(shape, nrank, dtype, alpha=0.3):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        rng = np.random.default_rng(len(shape) + shape[-1])
        gs = shape[len(shape) - nrank:]
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        gx = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(gs, dtype=np.float32)).astype(dt)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        mean, rstd, _ = reference.deep_norm(x, gx, np.zeros(gs), g, alpha)
        return dy, x, gx, g, mean.astype(np.float32), rstd.astype(np.float32), alpha
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)}", make


DEEP_NORM_GRAD = Declared("aclnnDeepNormGrad", (
    tensor("dy"),
    tensor("x", like="dy"),
    tensor("gx", like="dy"),
    tensor("gamma", like="dy"),
    tensor("mean", dtypes=("float32",)),
    tensor("rstd", dtypes=("float32",)),
    double("alpha", default=0.3),
    output("dxOut", shape=shape_of("dy"), dtype=dtype_of("dy"), unwritten=rows_unwritten,
           later=_OUT),
    output("dgxOut", shape=shape_of("dy"), dtype=dtype_of("dy"), unwritten=rows_unwritten,
           later=_OUT),
    output("dbetaOut", shape=shape_of("gamma"), dtype=np.float32, later=_OUT),
    output("dgammaOut", shape=shape_of("gamma"), dtype=np.float32, later=_OUT),
), check=deep_norm_grad_check, reference=reference.deep_norm_grad, staged_codes=_TILING,
    error_scale=reference.deep_norm_grad_error_scale,
    parts=_KERNEL_PARTS,
    smoke_cases=(_smoke((8, 1024), 1, np.float32),
                 _smoke((4, 64, 768), 1, np.float16, alpha=0.81),
                 _smoke((2, 3, 4, 5), 2, np.float32, alpha=2.0)))


@overload
def deep_norm_grad(dy: np.ndarray, x: np.ndarray, gx: np.ndarray, gamma: np.ndarray,
                   mean: np.ndarray, rstd: np.ndarray, alpha: float = ..., *,
                   stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def deep_norm_grad(dy: "DeviceTensor", x: "DeviceTensor", gx: "DeviceTensor",
                   gamma: "DeviceTensor", mean: "DeviceTensor", rstd: "DeviceTensor",
                   alpha: float = ..., *, stream: Optional["Stream"] = ...,
                   out: OutArg = ...
                   ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor",
                              "DeviceTensor"]: ...


def deep_norm_grad(dy: Operand, x: Operand, gx: Operand, gamma: Operand, mean: Operand,
                   rstd: Operand, alpha: float = 0.3, *, stream: Optional["Stream"] = None,
                   out: OutArg = None) -> Any:
    """Gradients of DeepNorm over the trailing dims of ``dy`` that ``gamma`` has:
    ``(dx, dgx, dbeta, dgamma)`` for the gradient ``dy`` of its output ``y``, with the
    forward's inputs ``x``, ``gx``, ``gamma``, ``alpha`` and its saved ``mean`` and ``rstd``
    (e.g. :func:`~acl_py.deep_norm`'s, float32 shaped dy's batch dims then ones). With
    ``h = x * alpha + gx``, ``x_hat = (h - mean) * rstd`` and ``g = dy * gamma``::

        dgx    = rstd * (g - mean(g) - x_hat * mean(g * x_hat))   (means over gamma's dims)
        dx     = alpha * dgx
        dbeta  = sum(dy),  dgamma = sum(dy * x_hat)               (sums over the batch dims)

    The order of the outputs is the C prototype's (dbeta before dgamma). The device computes
    in float32 (``alpha`` reaches it as a float32) and rounds ``dx`` and ``dgx`` once to dy's
    dtype; ``dbeta`` and ``dgamma`` are float32. On Atlas inference parts ``dx`` and ``dgx``
    are not written when a row is shorter than 32 bytes (both are then None).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out=(dx, dgx, dbeta, dgamma)`` gives preallocated outputs of the same kind as the
    inputs; a ``None`` entry is allocated as by default.
    """
    return DEEP_NORM_GRAD.call((dy, x, gx, gamma, mean, rstd, alpha), out=out, stream=stream)


class DeepNormGrad(Plan):
    """A :func:`deep_norm_grad` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``dx``, ``dgx``, ``dbeta``, ``dgamma``;
    ``run(stream)`` enqueues phase two only."""

    declared = DEEP_NORM_GRAD
    __slots__ = ()

    def __init__(self, dy: "DeviceTensor", x: "DeviceTensor", gx: "DeviceTensor",
                 gamma: "DeviceTensor", mean: "DeviceTensor", rstd: "DeviceTensor",
                 alpha: float = 0.3, *, out: OutArg = None) -> None:
        self._prepare((dy, x, gx, gamma, mean, rstd, alpha), out)
