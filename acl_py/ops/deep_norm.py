"""``aclnnDeepNorm``: LayerNorm of the DeepNet residual ``x * alpha + gx``, :func:`deep_norm`
and the plan :class:`DeepNorm`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x`` float32/float16/bfloat16; ``gx``, ``beta`` and ``gamma`` of x's dtype: the vendor's
op_host/deep_norm_def.cpp); ``gx`` of x's shape; ``gamma`` equal to the trailing dims of
``x``, leaving at least one batch dim; ``beta`` of gamma's shape; ``out=`` entries of mean's
shape, x's batch dims then ones (mean, rstd: float32) and of x's shape and dtype (y). The
operator's own rules (x of rank 2..8, gamma of rank 1..7, no zero dim in gamma's dims
beside rows, the part's dtypes: no bfloat16 on Atlas inference parts) are phase one's; on the
Atlas training parts, which have no kernel for it, it raises
:class:`~acl_py.errors.InternalError` (561003).
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

__all__ = ["deep_norm", "DeepNorm", "DEEP_NORM"]

# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b).
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950", "kirin9030",
                          "kirinx90", source=OP_DEF.format("deep_norm"))


# The code of its generated interface's tiling, which checks the shapes after the dtypes
# (161002; docs/emulator.md)
_TILING = (561002,)
# out= shapes: its generated interface's tiling checks them (561002), after the dtypes
_OUT = checked_later(_TILING, shape=True)


def deep_norm_check(a):
    """The shape relations (see the module doc), naming the argument."""
    shape, gs = a.x.shape, a.gamma.shape
    if a.gx.shape != shape:
        staged(_TILING, "gx", f"shape {a.gx.shape} must equal x's shape {shape}")
    if not gs or len(gs) >= len(shape) or shape[len(shape) - len(gs):] != gs:
        staged(_TILING, "gamma", f"shape {gs} must equal trailing dims of x's shape "
               f"{shape}, leaving at least one batch dim")
    if a.beta.shape != gs:
        staged(_TILING, "beta", f"shape {a.beta.shape} must equal gamma's shape {gs}")


def stat_shape(a):
    """mean and rstd as CANN writes them: x's batch dims, then a 1 per dim of gamma."""
    nd = len(a.gamma.shape)
    return a.x.shape[:len(a.x.shape) - nd] + (1,) * nd


_KERNEL = "hicann/ops-nn norm/deep_norm/op_kernel/deep_norm.cpp"


def stats_unwritten(a, part):
    """Why ``part`` does not write mean and rstd (None where it does): the Atlas inference
    parts' kernel copies y out only (the emulator's rule, docs/emulator.md)."""
    if part.inference:
        return (f"not written on Atlas inference parts ({_KERNEL}: CopyOut's branch for "
                f"__CCE_AICORE__ 200 copies y only)")
    return None


def y_unwritten(a, part):
    """Why ``part`` does not write y (None where it does): on Atlas inference parts a row
    shorter than one 32-byte block is not copied out."""
    row_bytes = int(np.prod(a.gamma.shape)) * a.x.dtype.itemsize
    if part.inference and row_bytes < 32 and a.x.size:
        return (f"not written on Atlas inference parts for rows under 32 bytes (here "
                f"{row_bytes}: {_KERNEL} CopyOut copies whole 32-byte blocks and stops when a "
                f"row has none)")
    return None


def _smoke(shape, nrank, dtype, alpha=0.3, epsilon=1e-6):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        rng = np.random.default_rng(len(shape) + shape[-1])
        gs = shape[len(shape) - nrank:]
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        gx = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        b = (0.1 * rng.standard_normal(gs, dtype=np.float32)).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(gs, dtype=np.float32)).astype(dt)
        return x, gx, b, g, alpha, epsilon
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)}", make


DEEP_NORM = Declared("aclnnDeepNorm", (
    tensor("x"),
    tensor("gx", like="x"),
    tensor("beta", like="x"),
    tensor("gamma", like="x"),
    double("alpha", default=0.3),
    double("epsilon", default=1e-6),
    output("meanOut", shape=stat_shape, dtype=np.float32, unwritten=stats_unwritten,
           later=_OUT),
    output("rstdOut", shape=stat_shape, dtype=np.float32, unwritten=stats_unwritten,
           later=_OUT),
    output("yOut", shape=shape_of("x"), dtype=dtype_of("x"), unwritten=y_unwritten,
           later=_OUT),
), check=deep_norm_check, reference=reference.deep_norm, staged_codes=_TILING,
    error_scale=reference.deep_norm_error_scale,
    parts=_KERNEL_PARTS,
    smoke_cases=(_smoke((8, 1024), 1, np.float32),
                 _smoke((4, 64, 768), 1, np.float16, alpha=0.81),
                 _smoke((2, 3, 4, 5), 2, np.float32, alpha=2.0, epsilon=1e-3)))


@overload
def deep_norm(x: np.ndarray, gx: np.ndarray, beta: np.ndarray, gamma: np.ndarray,
              alpha: float = ..., epsilon: float = ..., *, stream: Optional["Stream"] = ...,
              out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def deep_norm(x: "DeviceTensor", gx: "DeviceTensor", beta: "DeviceTensor",
              gamma: "DeviceTensor", alpha: float = ..., epsilon: float = ..., *,
              stream: Optional["Stream"] = ..., out: OutArg = ...
              ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def deep_norm(x: Operand, gx: Operand, beta: Operand, gamma: Operand, alpha: float = 0.3,
              epsilon: float = 1e-6, *, stream: Optional["Stream"] = None,
              out: OutArg = None) -> Any:
    """LayerNorm of the DeepNet residual ``h = x * alpha + gx`` over the trailing dims of
    ``x`` that ``gamma`` has (at least one batch dim left): ``(mean, rstd, y)`` with ``mean``
    and ``rstd = 1 / sqrt(var + epsilon)`` of ``h`` over those dims and
    ``y = (h - mean) * rstd * gamma + beta``. The argument order is the C prototype's
    (``beta`` before ``gamma``). The device computes in float32 (``alpha`` and ``epsilon``
    reach it as float32s; ``x * alpha`` is rounded before ``gx`` is added) and rounds ``y``
    once to x's dtype.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``mean`` and ``rstd`` are float32 shaped x's batch dims then ones; ``y`` has x's shape
    and dtype. On Atlas inference parts the device writes neither ``mean`` nor ``rstd`` (both
    are then None), nor ``y`` when a row is shorter than 32 bytes (fewer than 8 float32 or 16
    float16 elements: None too). An ``out=`` entry given for an output not written is left as
    it was. ``out=(mean, rstd, y)`` gives preallocated outputs of the same kind as the inputs;
    a ``None`` entry is allocated as by default.
    """
    return DEEP_NORM.call((x, gx, beta, gamma, alpha, epsilon), out=out, stream=stream)


class DeepNorm(Plan):
    """A :func:`deep_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``mean``, ``rstd``, ``y``; ``run(stream)`` enqueues phase two only."""

    declared = DEEP_NORM
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", gx: "DeviceTensor", beta: "DeviceTensor",
                 gamma: "DeviceTensor", alpha: float = 0.3, epsilon: float = 1e-6, *,
                 out: OutArg = None) -> None:
        self._prepare((x, gx, beta, gamma, alpha, epsilon), out)
