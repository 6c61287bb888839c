"""``aclnnAddRmsNorm``: the residual add fused with RmsNorm, :func:`add_rms_norm` and the plan
:class:`AddRmsNorm`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x1`` float32/float16/bfloat16; ``x2`` and ``gamma`` x1's); ``x2`` of x1's shape;
``gamma`` equal to the trailing dims of ``x1``; ``epsilon >= 0``; ``out=`` entries of x1's
shape and dtype (y, x) and of rstd's shape, x1's batch dims then ones (float32; any shape of
one element for one row, any shape for an empty x1: :func:`rstd_fits`). The
operator's own rules (ranks 1..8, the part's dtype list) are phase one's. acl-py always asks
for all three outputs (the vendor's full mode; its pre/post-RmsNorm modes, without rstdOut,
are reachable through the raw calls).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, check_same_shape,
                       VIEW_COPY, check_trailing_dims, checked_later, configured, double, dtype_of,
                       output, shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_rms_norm", "AddRmsNorm", "ADD_RMS_NORM"]



# The code of the tiling's rules (docs/emulator.md row 6: the op_api returns the L0 op's
# failure as 561103), which the device reaches after the op_api's shape checks (161002).
_TILING = (561103,)


def add_rms_norm_check(a, tiling=_TILING, x2_codes=None):
    """Checks that ``a.x2`` has x1's shape, that ``a.gamma`` has rank 1..rank(x1) and equals
    the trailing dims of ``a.x1`` (the dims normalized over), and that ``a.epsilon`` is not
    negative. ``tiling``: the codes of the tiling's rules (gamma's, epsilon's), ``x2_codes``
    x2's where the tiling checks it too (:func:`~acl_py.ops.staged`; None: the op_api's)."""
    if a.epsilon < 0:
        staged(tiling, "epsilon", f"{a.epsilon!r} is negative (must be >= 0)")
    shape, gs = a.x1.shape, a.gamma.shape
    check_same_shape("x2", a.x2.shape, "x1", shape, x2_codes)
    check_trailing_dims("gamma", gs, "x1", shape, tiling)


def rstd_shape(a):
    """rstd as CANN writes it: x1's batch dims, then a 1 per dim of gamma."""
    nd = len(a.gamma.shape)
    return a.x1.shape[:len(a.x1.shape) - nd] + (1,) * nd


def rstd_fits(a, shape, part=None, shapes=None):
    """Phase one's rule for an rstd ``out=`` entry of another shape than :func:`rstd_shape`
    (None where ``shape`` passes, else the rule): the op_api copies the L0 op's rstd into it
    with ViewCopy, which takes equal shapes or one element each (hicann/ops-math
    conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams), so any shape of
    one element for one row; and with x1 or gamma empty it returns before the L0 op, checking
    no shape."""
    if 0 in a.x1.shape or 0 in a.gamma.shape:
        return None
    if math.prod(shape) == 1 and math.prod(rstd_shape(a)) == 1:
        return None
    return (f"!= {rstd_shape(a)} (x1's batch dims then ones; another shape only of one "
            f"element for one row)")


# None for the Atlas training series (ascend910: the first generation) nor Atlas 200I/500 A2
# (ascend310b), which the docs list as unsupported.
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950", "kirin9030",
                          "kirinx90", source=OP_DEF.format("add_rms_norm"))


def rstd_unwritten(a, part):
    """Why ``part`` does not write rstd (None where it does): on Atlas inference parts no
    kernel does (the emulator's rule, docs/emulator.md). InplaceAddRmsNorm's kernels are
    these too."""
    if part.inference:
        return ("not written on Atlas inference parts (hicann/ops-nn "
                "norm/add_rms_norm/op_kernel/add_rms_norm*.h: CopyOutRstd is compiled for "
                "__CCE_AICORE__ 220 only)")
    return None


def smoke_case(shape, nrank, dtype, epsilon=1e-6):
    """A smoke case ``(name, make)`` of an AddRmsNorm-like operator: ``make()`` gives
    ``(x1, x2, gamma, epsilon)`` of ``shape``, gamma over its last ``nrank`` dims; "bf16"
    names bfloat16."""
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else dtype
        rng = np.random.default_rng(len(shape) + shape[-1])
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1 + 0.25 * rng.standard_normal(shape[len(shape) - nrank:],
                                             dtype=np.float32)).astype(dt)
        return x1, x2, g, epsilon
    return (f"{dtype if isinstance(dtype, str) else np.dtype(dtype).name}"
            f"{list(shape)}", make)


ADD_RMS_NORM = Declared("aclnnAddRmsNorm", (
    tensor("x1"),
    tensor("x2", like="x1"),
    tensor("gamma", like="x1"),
    double("epsilon", default=1e-6),
    output("yOut", shape=shape_of("x1"), dtype=dtype_of("x1")),
    # another shape: the ViewCopy of the L0 op's rstd into rstdOut refuses it (561103)
    output("rstdOut", shape=rstd_shape, dtype=np.float32, fits=rstd_fits,
           unwritten=rstd_unwritten, later=checked_later(VIEW_COPY, shape=True)),
    output("xOut", shape=shape_of("x1"), dtype=dtype_of("x1")),
), check=add_rms_norm_check, reference=reference.add_rms_norm,
    error_scale=reference.add_rms_norm_error_scale,
    # ACLNN_ERR_INNER_NULLPTR: the vendor's op_api returns it when the tiling (gamma's shape,
    # epsilon) or the copy into rstdOut (its shape) refuses
    rule_codes=(561103,), staged_codes=_TILING + VIEW_COPY,
    parts=_KERNEL_PARTS,
    smoke_cases=(smoke_case((8, 1024), 1, np.float32),
                 smoke_case((4, 64, 768), 1, np.float16),
                 smoke_case((2, 3, 4, 5), 2, np.float32, epsilon=1e-3)))


@overload
def add_rms_norm(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray, epsilon: float = ..., *,
                 stream: Optional["Stream"] = ..., out: OutArg = ...
                 ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def add_rms_norm(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 epsilon: float = ..., *, stream: Optional["Stream"] = ..., out: OutArg = ...
                 ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def add_rms_norm(x1: Operand, x2: Operand, gamma: Operand, epsilon: float = 1e-6, *,
                 stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """The residual add fused with RmsNorm over the trailing dims of ``x1`` that ``gamma``
    has: ``(y, rstd, x)`` with ``x = x1 + x2``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)`` and
    ``y = x * rstd * gamma`` (``epsilon`` reaches the device as a float32; the device
    computes in float32, with the intermediate roundings to x1's dtype of
    docs/emulator.md, and rounds ``y`` and ``x`` to x1's dtype).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``y`` and ``x`` have x1's shape and dtype; ``rstd`` is float32 shaped x1's batch dims then
    ones. On Atlas inference parts the device does not write rstd: the result's ``rstd`` is
    then None (a NumPy ``out=`` array or a DeviceTensor given for it is left as it was; the
    call hands the device a scratch tensor of its own). ``out=(y, rstd, x)`` gives
    preallocated outputs of the same kind as the inputs; a ``None`` entry is allocated as by
    default.
    """
    return ADD_RMS_NORM.call((x1, x2, gamma, epsilon), out=out, stream=stream)


class AddRmsNorm(Plan):
    """An :func:`add_rms_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``y``, ``rstd`` (None on Atlas inference parts, which do not write it), ``x``;
    ``run(stream)`` enqueues phase two only."""

    declared = ADD_RMS_NORM
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 epsilon: float = 1e-6, *, out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, epsilon), out)
