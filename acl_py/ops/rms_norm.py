"""``aclnnRmsNorm``: RmsNorm, :func:`rms_norm` and the plan :class:`RmsNorm`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes (``x``
float32/float16/bfloat16; ``gamma`` x's or float32); ``gamma`` non-empty and equal to the
trailing dims of ``x``; ``epsilon >= 0``; ``out=`` entries of x's shape and dtype (y) and
rstd's as phase one takes it (:func:`rstd_fits`: the documented x's batch dims then ones, or
another of rank <= x's with each dim 1 or x's, one value per row; float32). The operator's
own rules (ranks 1..8, the part's dtype table: no bfloat16 and no float32 gamma beside a
float16 x on Atlas inference and training parts) are phase one's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (Declared, Operand, OutArg, Plan, checked_later, double, dtype_of, output,
                       shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["rms_norm", "RmsNorm", "RMS_NORM"]



# The code of its generated interface's tiling, which checks the shapes and epsilon after
# the dtypes (161002; docs/emulator.md rows 3-5); GemmaRmsNorm's the same
TILING = (561002,)
# out= shapes: the tiling checks them too (561002), after the dtypes; GemmaRmsNorm's the same
OUT_LATER = checked_later(TILING, shape=True)


def rms_norm_check(a, empty_gamma_ok=False):
    """Checks that ``a.gamma`` is non-empty (unless ``empty_gamma_ok``), of rank 1..rank(x),
    and equal to the trailing dims of ``a.x`` (the dims normalized over), and that
    ``a.epsilon`` is not negative: the tiling's rules (:data:`TILING`)."""
    if a.epsilon < 0:
        staged(TILING, "epsilon", f"{a.epsilon!r} is negative (must be >= 0)")
    shape, gs = a.x.shape, a.gamma.shape
    if not gs or (0 in gs and not empty_gamma_ok):
        staged(TILING, "gamma", f"shape {gs} must have at least one dim and no zero dim")
    elif len(gs) > len(shape) or shape[len(shape) - len(gs):] != gs:
        staged(TILING, "gamma", f"shape {gs} must equal the trailing dims of x's shape "
               f"{shape}")


def rstd_shape(a):
    """rstd as CANN writes it: x's batch dims, then a 1 per dim of gamma."""
    nd = len(a.gamma.shape)
    return a.x.shape[:len(a.x.shape) - nd] + (1,) * nd


def rstd_fits(a, shape, part=None, shapes=None):
    """Phase one's rule for an rstd ``out=`` entry (None where ``shape`` passes, else the
    rule): each dim 1 or x's dim of that index (hicann/ops-nn norm/rms_norm/op_host/
    rms_norm_tiling.cpp CheckInputShape4RmsNorm), a rank no greater than x's and one value per
    row of x (the emulator's stricter rule, docs/emulator.md). So ``[2]`` passes for x
    ``[2, 16]``, as ``[2, 1]`` does."""
    xs = a.x.shape
    rows = math.prod(xs[:len(xs) - len(a.gamma.shape)])
    if len(shape) <= len(xs) and all(d == 1 or d == x for d, x in zip(shape, xs)) and \
            math.prod(shape) == rows:
        return None
    return (f"must be x's batch dims then ones {rstd_shape(a)}, or another of rank <= x's "
            f"with each dim 1 or x's dim of that index, holding one value per row ({rows})")


_F32 = np.dtype(np.float32)


def rstd_dtype(a):
    """rstd's dtype: float32 whatever the arguments."""
    return _F32


def smoke_case(shape, nrank, dtype, gamma_dtype, epsilon=1e-6, gamma_center=1.0):
    """A smoke case ``(name, make)`` of an RmsNorm-like operator: ``make()`` gives
    ``(x, gamma, epsilon)`` of ``shape``, gamma over its last ``nrank`` dims, around
    ``gamma_center``; "bf16" names bfloat16, a None ``gamma_dtype`` is x's."""
    def make():
        from ..dtypes import bfloat16
        dt = {"bf16": bfloat16()}.get(dtype, dtype)
        gdt = {"bf16": bfloat16()}.get(gamma_dtype, gamma_dtype) or dt
        rng = np.random.default_rng(len(shape) + shape[-1])
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        g = (gamma_center + 0.25 * rng.standard_normal(shape[len(shape) - nrank:],
                                                        dtype=np.float32)).astype(gdt)
        return x, g, epsilon
    return (f"{dtype if isinstance(dtype, str) else np.dtype(dtype).name}"
            f"{list(shape)}", make)


RMS_NORM = Declared("aclnnRmsNorm", (
    tensor("x"),
    tensor("gamma", like="x", or_float32=True),
    double("epsilon", default=1e-6),
    output("yOut", shape=shape_of("x"), dtype=dtype_of("x"), later=OUT_LATER),
    output("rstdOut", shape=rstd_shape, dtype=rstd_dtype, fits=rstd_fits, later=OUT_LATER),
), check=rms_norm_check, staged_codes=TILING, reference=reference.rms_norm,
    error_scale=reference.rms_norm_error_scale,
    smoke_cases=(smoke_case((8, 1024), 1, np.float32, None),
                 smoke_case((4, 128, 768), 1, np.float16, np.float16),
                 smoke_case((2, 3, 4, 5), 2, np.float32, None, epsilon=1e-3)))


@overload
def rms_norm(x: np.ndarray, gamma: np.ndarray, epsilon: float = ..., *,
             stream: Optional["Stream"] = ..., out: OutArg = ...
             ) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def rms_norm(x: "DeviceTensor", gamma: "DeviceTensor", epsilon: float = ..., *,
             stream: Optional["Stream"] = ..., out: OutArg = ...
             ) -> Tuple["DeviceTensor", "DeviceTensor"]: ...


def rms_norm(x: Operand, gamma: Operand, epsilon: float = 1e-6, *,
             stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """RmsNorm over the trailing dims of ``x`` that ``gamma`` has: ``(y, rstd)`` with
    ``y = x * rstd * gamma``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)`` (``epsilon`` reaches the
    device as a float32; the device computes in float32 and rounds ``y`` to x's dtype).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``y`` has x's shape and dtype; ``rstd`` is float32 shaped x's batch dims then ones.
    ``out=(y, rstd)`` gives preallocated outputs of the same kind as the inputs (of those
    shapes; y's dtype is x's); a ``None`` entry is allocated as by default.
    """
    return RMS_NORM.call((x, gamma, epsilon), out=out, stream=stream)


class RmsNorm(Plan):
    """A :func:`rms_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``y``, ``rstd``; ``run(stream)`` enqueues phase two only."""

    declared = RMS_NORM
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", gamma: "DeviceTensor", epsilon: float = 1e-6, *,
                 out: OutArg = None) -> None:
        self._prepare((x, gamma, epsilon), out)
