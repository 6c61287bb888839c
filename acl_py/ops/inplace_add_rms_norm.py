"""``aclnnInplaceAddRmsNorm``: AddRmsNorm writing its results into its inputs,
:func:`inplace_add_rms_norm` and the plan :class:`InplaceAddRmsNorm`.

The device writes ``y`` into ``x1`` and ``x = x1 + x2`` into ``x2`` (the vendor's ``x1Ref``
and ``x2Ref``) and ``rstd`` into a new (or given) float32 tensor; the numbers are
AddRmsNorm's (the same kernels). In Python the in-place results are plain to see: the call
returns ``(y, rstd, x)`` with ``y`` *the* ``x1`` object and ``x`` *the* ``x2`` object:

* DeviceTensors: the device overwrites ``x1`` and ``x2`` (queued on the stream);
* NumPy arrays: the call stages them through the device and writes the results back into the
  caller's arrays, so ``x1`` and ``x2`` must be writable (a read-only array is refused before
  anything is copied) and must not share memory (each receives its own result).

``out=`` takes ``(None, rstd, None)``: only rstd is an output of its own. Python-level checks
otherwise as :mod:`.add_rms_norm` (shapes, dtypes, epsilon). The operator's own rules are
phase one's: rstd of x1's rank (x1's batch dims then ones), no empty tensors, a kernel on
every part AddRmsNorm has one on (none on the Atlas training parts:
``ACLNN_ERR_INNER_FIND_KERNEL_ERROR`` there).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, checked_later, configured, double,
                       output, tensor)
from .add_rms_norm import add_rms_norm_check, rstd_shape, rstd_unwritten, smoke_case
from .rms_norm import rstd_dtype

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["inplace_add_rms_norm", "InplaceAddRmsNorm", "INPLACE_ADD_RMS_NORM"]

# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b).
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950", "kirin9030",
                          "kirinx90", source=OP_DEF.format("inplace_add_rms_norm"))




# The code of its generated interface's tiling, which checks every shape and epsilon, after
# the dtypes (161002; docs/emulator.md row 6)
_TILING = (561002,)


def inplace_add_rms_norm_check(a):
    """AddRmsNorm's checks (:func:`.add_rms_norm.add_rms_norm_check`), and NumPy ``x1`` and
    ``x2`` not sharing memory (each is written a result back)."""
    add_rms_norm_check(a, _TILING, _TILING)
    if isinstance(a.x1, np.ndarray) and np.may_share_memory(a.x1, a.x2):
        raise AclArgumentError("x2", "shares memory with x1: each receives its own result "
                               "(y into x1, x1 + x2 into x2)")


def rstd_fits(a, shape, part=None, shapes=None):
    """Phase one's rule for an rstd ``out=`` entry of another shape than
    :func:`.add_rms_norm.rstd_shape` (None where ``shape`` passes, else the rule): with x1 and
    x2 empty, any empty rstd (every output empty: the framework launches nothing and runs no
    tiling, hicann/opbase indv_executor.cpp NnopbaseExecutorMatchCache)."""
    if 0 in a.x1.shape and math.prod(shape) == 0:
        return None
    return (f"!= {rstd_shape(a)} (x1's batch dims then ones; another shape only an empty one "
            f"for an empty x1)")


INPLACE_ADD_RMS_NORM = Declared("aclnnInplaceAddRmsNorm", (
    tensor("x1Ref", name="x1", written=True),
    tensor("x2Ref", name="x2", like="x1", written=True),
    tensor("gamma", like="x1"),
    double("epsilon", default=1e-6),
    output("y", into="x1"),
    output("rstdOut", shape=rstd_shape, dtype=rstd_dtype, fits=rstd_fits,
           unwritten=rstd_unwritten, later=checked_later(_TILING, shape=True)),
    output("x", into="x2"),
), check=inplace_add_rms_norm_check, reference=reference.add_rms_norm, staged_codes=_TILING,
    error_scale=reference.add_rms_norm_error_scale,
    parts=_KERNEL_PARTS,
    smoke_cases=(smoke_case((8, 1024), 1, np.float32),
                 smoke_case((4, 64, 768), 1, np.float16),
                 smoke_case((2, 3, 4, 5), 2, np.float32, epsilon=1e-3)))


@overload
def inplace_add_rms_norm(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray,
                         epsilon: float = ..., *, stream: Optional["Stream"] = ...,
                         out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def inplace_add_rms_norm(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                         epsilon: float = ..., *, stream: Optional["Stream"] = ...,
                         out: OutArg = ...
                         ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def inplace_add_rms_norm(x1: Operand, x2: Operand, gamma: Operand, epsilon: float = 1e-6, *,
                         stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """:func:`~acl_py.add_rms_norm` in place: ``x = x1 + x2``,
    ``rstd = 1 / sqrt(mean(x^2) + epsilon)``, ``y = x * rstd * gamma`` (the device's roundings
    of docs/emulator.md), with ``y`` written into ``x1`` and ``x`` into ``x2``. Returns
    ``(x1, rstd, x2)``: the given ``x1`` and ``x2`` objects, now holding ``y`` and ``x``, and
    a new float32 ``rstd`` shaped x1's batch dims then ones (on Atlas inference parts the
    device does not write it: ``rstd`` is then None, and an ``out=`` entry for it is left as
    it was).

    * DeviceTensors: overwritten on the device, queued on ``stream`` (valid once it has
      synchronized);
    * NumPy arrays: staged through the device and written back into the caller's arrays
      (synchronized), which must be writable and must not share memory.

    ``out=(None, rstd, None)`` gives a preallocated rstd of the same kind as the inputs.
    """
    return INPLACE_ADD_RMS_NORM.call((x1, x2, gamma, epsilon), out=out, stream=stream)


class InplaceAddRmsNorm(Plan):
    """An :func:`inplace_add_rms_norm` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): each ``run(stream)`` overwrites ``x1`` with ``y`` and ``x2``
    with ``x1 + x2`` (so a second run starts from the first one's results unless the inputs
    are refilled); outputs ``y`` (``x1``), ``rstd``, ``x`` (``x2``)."""

    declared = INPLACE_ADD_RMS_NORM
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 epsilon: float = 1e-6, *, out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, epsilon), out)
