"""``aclnnGroupNorm``: GroupNorm, :func:`group_norm` and the plan :class:`GroupNorm`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``input`` float32/float16/bfloat16; ``gamma``, ``beta`` input's); ``input`` of rank >= 2 whose
dim 0 is ``n``, dim 1 ``c`` and other dims hold ``hxw`` elements; ``group > 0`` dividing ``c``;
``eps > 0``; ``gamma``/``beta`` vectors of ``c`` elements; ``out=`` entries of input's shape
(out) and ``[n, group]`` (mean, rstd), all of input's dtype. The operator's own rules (rank at
most 8, the part's dtype list: no bfloat16 on Atlas training and inference parts, formats)
are phase one's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, Operand, OutArg, Plan, double, dtype_of, integer, output,
                       shape_of, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["group_norm", "GroupNorm", "GROUP_NORM"]


def group_norm_check(a):
    """The vendor's attribute and shape rules (aclnn_group_norm.cpp CheckAttr, CheckShape)
    that name a Python argument: n, c, hxw describe input; group > 0 divides c; eps > 0;
    gamma and beta hold c values."""
    shape = a.input.shape
    if len(shape) < 2:
        raise AclArgumentError("input", f"shape {shape} must have at least 2 dims (N, C, ...)")
    if a.n != shape[0]:
        raise AclArgumentError("n", f"{a.n} must equal input's dim 0 ({shape[0]})")
    if a.c != shape[1]:
        raise AclArgumentError("c", f"{a.c} must equal input's dim 1 ({shape[1]})")
    hw = math.prod(shape[2:])
    if a.hxw != hw:
        raise AclArgumentError("hxw", f"{a.hxw} must equal the product of input's dims after "
                               f"N and C ({hw})")
    if a.group <= 0:
        raise AclArgumentError("group", f"{a.group} must be greater than 0")
    if a.c % a.group:
        raise AclArgumentError("group", f"{a.group} must divide the channel count c = {a.c}")
    if not a.eps > 0:
        raise AclArgumentError("eps", f"{a.eps!r} must be greater than 0")
    for name in ("gamma", "beta"):
        t = a[name]
        if t is not None and t.shape != (a.c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({a.c},): one value per "
                                   f"channel of input {shape}")


def _stats_shape(a):
    return (a.n, a.group)


def stats_unwritten(a, part):
    """Why ``part`` does not write mean and rstd for checked arguments ``a`` (None where it
    does): the emulator's rule (emulator/src/ops/group_norm.c ``inference_writes_stats``,
    docs/emulator.md). On Atlas inference parts the tiling (group_norm_silu_tiling.cpp
    SetTiling, then SetTilingSD) picks a kernel, and only the hw1 and basic-template (g16/g32)
    kernels have a CopyOutMeanAndRstd path without DataCopyPad (compiled for
    ``__CCE_AICORE__`` 220 only): the small, b16/b32 and SD kernels write neither. An empty
    input's statistics are filled by the op_api (0 and NaN) on every part. N, C and HxW are
    read from input's shape, so GroupNormSilu's declarations (no such arguments: the same
    kernels) take this rule too."""
    shape = a.input.shape
    n, c, hxw = shape[0], shape[1], math.prod(shape[2:])
    if not part.inference or n * c * hxw == 0:
        return None
    size = a.input.dtype.itemsize
    if size == 2 and n == 1 and a.group == 32 and hxw > 1:
        kernel = "SD"   # SetTilingSD's kernel, whatever SetTiling chose
    else:
        if hxw < 32 // size:
            return None     # hw1 (HxW 1) or the basic template
        per_core = -(-(n * a.group) // part.cores)
        if c + per_core > (4000 if size == 4 else 2700):
            return None     # the basic template (g16/g32)
        kernel = "small or b16/b32"
    return (f"not written on Atlas inference parts for these arguments (hicann/ops-nn "
            f"norm/group_norm_silu: the tiling picks the {kernel} kernel, whose "
            f"CopyOutMeanAndRstd is compiled for __CCE_AICORE__ 220 only)")


def _smoke(shape, group, dtype, affine=True, eps=1e-5):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else dtype
        rng = np.random.default_rng(sum(shape) + group)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        c = shape[1]
        g = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dt) if affine else None
        b = (0.5 * rng.standard_normal(c, dtype=np.float32)).astype(dt) if affine else None
        return x, g, b, shape[0], c, math.prod(shape[2:]), group, eps
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)}/{group}{'' if affine else '-no-affine'}", make


GROUP_NORM = Declared("aclnnGroupNorm", (
    tensor("self", name="input"),
    tensor("gamma", optional=True, like="input"),
    tensor("beta", optional=True, like="input"),
    integer("N", name="n"),
    integer("C", name="c"),
    integer("HxW", name="hxw"),
    integer("group"),
    double("eps", default=1e-5),
    output("out", shape=shape_of("input"), dtype=dtype_of("input")),
    output("meanOut", shape=_stats_shape, dtype=dtype_of("input"), unwritten=stats_unwritten),
    output("rstdOut", shape=_stats_shape, dtype=dtype_of("input"), unwritten=stats_unwritten),
), check=group_norm_check, reference=reference.group_norm,
    error_scale=reference.group_norm_error_scale,
    # HxW below a 32-byte block, or 1: shapes whose kernels write mean and rstd on every part;
    # the last, HxW 64: the Atlas inference parts' small kernel, which writes out only
    smoke_cases=(_smoke((2, 64, 7), 32, np.float32),
                 _smoke((4, 32, 3, 5), 8, np.float16),
                 _smoke((8, 48), 12, np.float16),
                 _smoke((3, 6, 5), 3, np.float32, affine=False),
                 _smoke((2, 8, 8, 8), 4, np.float32)))


@overload
def group_norm(input: np.ndarray, group: int, gamma: Optional[np.ndarray] = ...,
               beta: Optional[np.ndarray] = ..., eps: float = ..., *,
               stream: Optional["Stream"] = ..., out: OutArg = ...
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def group_norm(input: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = ...,
               beta: Optional["DeviceTensor"] = ..., eps: float = ..., *,
               stream: Optional["Stream"] = ..., out: OutArg = ...
               ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def group_norm(input: Operand, group: int, gamma: Optional[Operand] = None,
               beta: Optional[Operand] = None, eps: float = 1e-5, *,
               stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """GroupNorm of ``input`` ``[N, C, ...]`` over ``group`` groups of ``C / group`` channels:
    ``(out, mean, rstd)`` with, per sample and group, ``mean`` and the biased variance ``var``
    of its ``C / group * HxW`` values, ``rstd = 1 / sqrt(var + eps)`` and
    ``out = (input - mean) * rstd * gamma + beta`` (``gamma``/``beta``: one value per channel;
    None: ones/zeros). N, C and HxW (the product of input's dims after the first two) are
    taken from input's shape. The device computes in float32 (its chain by part:
    docs/emulator.md) and writes all three outputs in input's dtype; ``mean`` and ``rstd``
    are ``[N, group]``. On Atlas inference parts the device writes mean and rstd for some
    shapes only (HxW below a 32-byte block, or C large: :func:`stats_unwritten`); for the
    others the result holds None for both (a NumPy ``out=`` array or a DeviceTensor given for
    them is left as it was).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out=(out, mean, rstd)`` gives preallocated outputs of the same kind as the inputs; a
    ``None`` entry is allocated as by default.
    """
    return GROUP_NORM.call(_values(input, gamma, beta, group, eps), out=out, stream=stream)


def _values(input, gamma, beta, group, eps):
    """The declaration's inputs, N, C and HxW read from input's shape (an input without one
    is passed on for the declaration's checks to name)."""
    shape = tuple(getattr(input, "shape", ()))
    n, c = (shape + (0, 0))[:2]
    return (input, gamma, beta, n, c, math.prod(shape[2:]), group, eps)


class GroupNorm(Plan):
    """A :func:`group_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``out``, ``mean``, ``rstd`` (None where the part does not write them:
    :func:`stats_unwritten`); ``run(stream)`` enqueues phase two only."""

    declared = GROUP_NORM
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = None,
                 beta: Optional["DeviceTensor"] = None, eps: float = 1e-5, *,
                 out: OutArg = None) -> None:
        self._prepare(_values(input, gamma, beta, group, eps), out)
