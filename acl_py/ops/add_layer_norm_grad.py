"""``aclnnAddLayerNormGrad``: the backward of AddLayerNorm, :func:`add_layer_norm_grad` and the
plan :class:`AddLayerNormGrad`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes (the
vendor's def, op_host/add_layer_norm_grad_def.cpp: ``dy``, ``x1``, ``x2``, ``gamma`` and
``dsum`` of one dtype, float32/float16/bfloat16; ``rstd`` and ``mean`` float32); ``x1``,
``x2`` and ``dsum`` of dy's shape; ``gamma`` equal to the trailing dims of ``dy``; ``mean``
shaped dy's batch dims then ones, ``rstd`` of mean's shape; ``out=`` entries of dy's shape
(dx, dy's dtype) and gamma's (dgamma, dbeta: float32). The operator's own rules (ranks up to
8, no empty tensor, the part's dtype table: no bfloat16 on Atlas inference parts) are phase
one's; on the Atlas training parts, which have no kernel for it, it raises
:class:`~acl_py.errors.InternalError` (561003).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, check_same_shape,
                       check_trailing_dims, checked_later, configured, dtype_of, output, shape_of,
                       staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_layer_norm_grad", "AddLayerNormGrad", "ADD_LAYER_NORM_GRAD"]

# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b).
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950",
                           source=OP_DEF.format("add_layer_norm_grad"))



# The code of its generated interface's tiling, which checks the shapes after the dtypes
# (161002; docs/emulator.md)
_TILING = (561002,)
# out= shapes: its generated interface's tiling checks them (561002), after the dtypes
_OUT = checked_later(_TILING, shape=True)


def add_layer_norm_grad_check(a):
    """The shape relations (the vendor's CheckInputOutputShape; dsum's from its docs), naming
    the argument."""
    shape, gs = a.dy.shape, a.gamma.shape
    for name in ("x1", "x2", "dsum"):
        t = getattr(a, name)
        if t is not None:
            check_same_shape(name, t.shape, "dy", shape, _TILING)
    check_trailing_dims("gamma", gs, "dy", shape, _TILING)
    stat = shape[:len(shape) - len(gs)] + (1,) * len(gs)
    if a.mean.shape != stat:
        staged(_TILING, "mean", f"shape {a.mean.shape} must be dy's batch dims then "
               f"ones: {stat}")
    if a.rstd.shape != stat:
        staged(_TILING, "rstd", f"shape {a.rstd.shape} must be mean's shape {stat}")


def _smoke(shape, nrank, dtype, dsum=False):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        rng = np.random.default_rng(len(shape) + shape[-1])
        gs = shape[len(shape) - nrank:]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(gs, dtype=np.float32)).astype(dt)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        _, mean, rstd, _ = reference.add_layer_norm(x1, x2, g, np.zeros(gs))
        ds = rng.standard_normal(shape, dtype=np.float32).astype(dt) if dsum else None
        return dy, x1, x2, rstd.astype(np.float32), mean.astype(np.float32), g, ds
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)}{'+dsum' if dsum else ''}", make


ADD_LAYER_NORM_GRAD = Declared("aclnnAddLayerNormGrad", (
    tensor("dy"),
    tensor("x1", like="dy"),
    tensor("x2", like="dy"),
    tensor("rstd", dtypes=("float32",)),
    tensor("mean", dtypes=("float32",)),
    tensor("gamma", like="dy"),
    tensor("dsumOptional", optional=True, like="dy"),
    output("dxOut", shape=shape_of("dy"), dtype=dtype_of("dy"), later=_OUT),
    output("dgammaOut", shape=shape_of("gamma"), dtype=np.float32, later=_OUT),
    output("dbetaOut", shape=shape_of("gamma"), dtype=np.float32, later=_OUT),
), check=add_layer_norm_grad_check, reference=reference.add_layer_norm_grad, staged_codes=_TILING,
    error_scale=reference.add_layer_norm_grad_error_scale,
    # the vendor's def configures the same parts as AddLayerNorm's (none of the Atlas training
    # series nor Atlas 200I/500 A2)
    parts=_KERNEL_PARTS,
    smoke_cases=(_smoke((8, 1024), 1, np.float32),
                 _smoke((4, 64, 768), 1, np.float16, dsum=True),
                 _smoke((2, 3, 4, 5), 2, np.float32, dsum=True)))


@overload
def add_layer_norm_grad(dy: np.ndarray, x1: np.ndarray, x2: np.ndarray, rstd: np.ndarray,
                        mean: np.ndarray, gamma: np.ndarray, dsum: Optional[np.ndarray] = ...,
                        *, stream: Optional["Stream"] = ..., out: OutArg = ...
                        ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def add_layer_norm_grad(dy: "DeviceTensor", x1: "DeviceTensor", x2: "DeviceTensor",
                        rstd: "DeviceTensor", mean: "DeviceTensor", gamma: "DeviceTensor",
                        dsum: Optional["DeviceTensor"] = ..., *,
                        stream: Optional["Stream"] = ..., out: OutArg = ...
                        ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def add_layer_norm_grad(dy: Operand, x1: Operand, x2: Operand, rstd: Operand, mean: Operand,
                        gamma: Operand, dsum: Optional[Operand] = None, *,
                        stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Gradients of AddLayerNorm over the trailing dims of ``dy`` that ``gamma`` has:
    ``(dx, dgamma, dbeta)`` for the gradient ``dy`` of its output ``y``, with the forward's
    inputs ``x1``, ``x2`` and its saved ``mean`` and ``rstd`` (e.g.
    :func:`~acl_py.add_layer_norm`'s, float32 shaped dy's batch dims then ones). With
    ``x = x1 + x2`` and ``x_hat = (x - mean) * rstd``, ``g = dy * gamma``::

        dx     = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) (+ dsum)   (means over gamma's dims)
        dgamma = sum(dy * x_hat),  dbeta = sum(dy)                          (sums over the batch dims)

    ``dsum`` (optional, dy's shape and dtype) is a gradient added to ``dx``. The device
    computes in float32 and rounds ``dx`` once to dy's dtype; ``dgamma`` and ``dbeta`` are
    float32.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out=(dx, dgamma, dbeta)`` gives preallocated outputs of the same kind as the inputs; a
    ``None`` entry is allocated as by default.
    """
    return ADD_LAYER_NORM_GRAD.call((dy, x1, x2, rstd, mean, gamma, dsum), out=out,
                                    stream=stream)


class AddLayerNormGrad(Plan):
    """An :func:`add_layer_norm_grad` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``dx``, ``dgamma``, ``dbeta``; ``run(stream)``
    enqueues phase two only."""

    declared = ADD_LAYER_NORM_GRAD
    __slots__ = ()

    def __init__(self, dy: "DeviceTensor", x1: "DeviceTensor", x2: "DeviceTensor",
                 rstd: "DeviceTensor", mean: "DeviceTensor", gamma: "DeviceTensor",
                 dsum: Optional["DeviceTensor"] = None, *, out: OutArg = None) -> None:
        self._prepare((dy, x1, x2, rstd, mean, gamma, dsum), out)
