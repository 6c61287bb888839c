"""``aclnnAddLayerNorm``: the residual add fused with LayerNorm, :func:`add_layer_norm` and the
plan :class:`AddLayerNorm`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes (the
vendor's combinations for Atlas A2/A3, op_host/add_layer_norm_def.cpp: ``x1`` and ``x2`` of
one dtype, or float32 beside a float16/bfloat16 one; ``gamma`` x1's dtype or float32, float32
when x1 and x2 differ; ``beta`` gamma's; ``bias`` x1's dtype when x1 and x2 share it, else
float32); ``x2`` of x1's shape; ``gamma`` equal to the trailing dims of ``x1``; ``beta`` of
gamma's shape; ``bias`` of gamma's or x1's shape; ``out=`` entries of x1's shape (y, x) and of
mean's, x1's batch dims then ones (float32). The operator's own rules (ranks up to 8, the
part's dtype table: no bfloat16 and no mixed dtypes on Atlas inference parts) are phase one's;
on the Atlas training parts, which have no kernel for it, it raises
:class:`~acl_py.errors.InternalError` (561003).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclTypeError
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, check_same_shape,
                       check_trailing_dims, checked_later, configured, double, flag, output,
                       shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_layer_norm", "AddLayerNorm", "ADD_LAYER_NORM"]


_F32 = np.dtype(np.float32)


# The code of its generated interface's tiling, which checks the shapes after the dtypes
# (161002; docs/emulator.md)
_TILING = (561002,)
# out= shapes: its generated interface's tiling checks them (561002), after the dtypes
_OUT = checked_later(_TILING, shape=True)


def add_layer_norm_check(a):
    """The dtype combinations and shape relations (see the module doc), naming the
    argument."""
    x1, x2, gamma, beta, bias = a.x1, a.x2, a.gamma, a.beta, a.bias
    shape, gs = x1.shape, gamma.shape
    mixed = x1.dtype != x2.dtype
    if mixed and _F32 not in (x1.dtype, x2.dtype):
        raise AclTypeError("x2", f"dtype {x2.dtype.name} must be x1's dtype {x1.dtype.name} "
                           f"or float32")
    if mixed and gamma.dtype != _F32:
        raise AclTypeError("gamma", f"dtype {gamma.dtype.name} must be float32 (x1 and x2 of "
                           f"different dtypes)")
    if bias is not None:
        want = _F32 if mixed else x1.dtype
        why = "x1 and x2 of different dtypes" if mixed else "x1's dtype"
        if bias.dtype != want:
            raise AclTypeError("bias", f"dtype {bias.dtype.name} must be {want.name} ({why})")
    # the shapes: the tiling's, after the op_api's dtypes (docs/emulator.md rows 4-5)
    check_same_shape("x2", x2.shape, "x1", shape, _TILING)
    check_trailing_dims("gamma", gs, "x1", shape, _TILING)
    if beta.shape != gs:
        staged(_TILING, "beta", f"shape {beta.shape} must equal gamma's shape {gs}")
    if bias is not None and bias.shape not in (gs, shape):
        staged(_TILING, "bias", f"shape {bias.shape} must be gamma's shape {gs} or x1's "
               f"shape {shape}")


def stat_shape(a):
    """mean and rstd as CANN writes them: x1's batch dims, then a 1 per dim of gamma."""
    nd = len(a.gamma.shape)
    return a.x1.shape[:len(a.x1.shape) - nd] + (1,) * nd


def _out_dtype(a):
    """y's and x's: x1's dtype when x2 has it, else float32 (the vendor's infershape)."""
    return a.x1.dtype if a.x1.dtype == a.x2.dtype else _F32


# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b), which the
# docs list as unsupported.
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950", "kirin9030",
                          "kirinx90", source=OP_DEF.format("add_layer_norm"))


def _smoke(shape, nrank, dtype, gamma_dtype=None, bias=None, epsilon=1e-5):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        gdt = np.dtype(gamma_dtype) if gamma_dtype else dt
        rng = np.random.default_rng(len(shape) + shape[-1])
        gs = shape[len(shape) - nrank:]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(gs, dtype=np.float32)).astype(gdt)
        b = (0.1 * rng.standard_normal(gs, dtype=np.float32)).astype(gdt)
        bi = None if bias is None else (0.5 * rng.standard_normal(
            gs if bias == "gamma" else shape, dtype=np.float32)).astype(dt)
        return x1, x2, g, b, bi, epsilon, True
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    extra = (f"+gamma{np.dtype(gamma_dtype).name}" if gamma_dtype else "") + \
        (f"+bias[{bias}]" if bias else "")
    return f"{name}{list(shape)}{extra}", make


def stats_unwritten(a, part):
    """Why ``part`` does not write mean and rstd (None where it does): on Atlas inference
    parts no kernel does (the emulator's rule, docs/emulator.md)."""
    if part.inference:
        return ("not written on Atlas inference parts (hicann/ops-nn "
                "norm/add_layer_norm/op_kernel: OUTPUT_MEAN_RSTD is __CCE_AICORE__ 220's)")
    return None


def x_unwritten(a, part):
    """Why x is not written (None where it is): only with ``additional_output`` (the
    tiling key's additional-output flag), on every part."""
    if not a.additional_output:
        return "not written: additional_output is False (the kernels' additional output)"
    return None


ADD_LAYER_NORM = Declared("aclnnAddLayerNorm", (
    tensor("x1"),
    tensor("x2"),
    tensor("gamma", like="x1", or_float32=True),
    tensor("beta", like="gamma"),
    tensor("biasOptional", optional=True),
    double("epsilon", default=1e-5),
    flag("additionalOutput", default=True),
    output("yOut", shape=shape_of("x1"), dtype=_out_dtype, later=_OUT),
    output("meanOut", shape=stat_shape, dtype=np.float32, unwritten=stats_unwritten,
           later=_OUT),
    output("rstdOut", shape=stat_shape, dtype=np.float32, unwritten=stats_unwritten,
           later=_OUT),
    output("xOut", shape=shape_of("x1"), dtype=_out_dtype, unwritten=x_unwritten,
           later=_OUT),
), check=add_layer_norm_check, reference=reference.add_layer_norm, staged_codes=_TILING,
    error_scale=reference.add_layer_norm_error_scale,
    parts=_KERNEL_PARTS,
    # combinations every part with a kernel has (Atlas inference parts: no mixed dtypes)
    smoke_cases=(_smoke((8, 1024), 1, np.float32),
                 _smoke((4, 64, 768), 1, np.float16, bias="gamma"),
                 _smoke((2, 3, 4, 5), 2, np.float32, bias="x1", epsilon=1e-3)))


@overload
def add_layer_norm(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                   bias: Optional[np.ndarray] = ..., epsilon: float = ...,
                   additional_output: bool = ..., *, stream: Optional["Stream"] = ...,
                   out: OutArg = ...
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def add_layer_norm(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                   beta: "DeviceTensor", bias: Optional["DeviceTensor"] = ...,
                   epsilon: float = ..., additional_output: bool = ..., *,
                   stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor",
                              "DeviceTensor"]: ...


def add_layer_norm(x1: Operand, x2: Operand, gamma: Operand, beta: Operand,
                   bias: Optional[Operand] = None, epsilon: float = 1e-5,
                   additional_output: bool = True, *, stream: Optional["Stream"] = None,
                   out: OutArg = None) -> Any:
    """The residual add fused with LayerNorm over the trailing dims of ``x1`` that ``gamma``
    has: ``(y, mean, rstd, x)`` with ``x = x1 + x2 (+ bias)``, ``mean`` and
    ``rstd = 1 / sqrt(var + epsilon)`` of ``x`` over those dims, and
    ``y = (x - mean) * rstd * gamma + beta``. ``bias`` (optional) has gamma's shape (added to
    every row) or x1's. The device computes in float32 (``epsilon`` reaches it as a float32)
    and rounds ``y`` and ``x`` once to their dtype: x1's when x2 has it, else float32.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``mean`` and ``rstd`` are float32 shaped x1's batch dims then ones (on Atlas inference
    parts the device does not write them: both are then None). ``x`` is written only when
    ``additional_output`` is true (the operator still takes a tensor: a scratch one of the
    call's own; ``x`` is then None). An ``out=`` entry given for an output not written is
    left as it was. ``out=(y, mean, rstd, x)`` gives
    preallocated outputs of the same kind as the inputs; a ``None`` entry is allocated as by
    default.
    """
    return ADD_LAYER_NORM.call((x1, x2, gamma, beta, bias, epsilon, additional_output),
                               out=out, stream=stream)


class AddLayerNorm(Plan):
    """An :func:`add_layer_norm` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y``, ``mean``, ``rstd``, ``x``; ``run(stream)``
    enqueues phase two only."""

    declared = ADD_LAYER_NORM
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 beta: "DeviceTensor", bias: Optional["DeviceTensor"] = None,
                 epsilon: float = 1e-5, additional_output: bool = True, *,
                 out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, beta, bias, epsilon, additional_output), out)
