"""``aclnnGemmaRmsNorm``: Gemma's RmsNorm, whose scale is ``1 + gamma``,
:func:`gemma_rms_norm` and the plan :class:`GemmaRmsNorm`.

The operator is RmsNorm's kernel with 1 added to gamma (in float32, before the multiply):
the same arguments, shapes and Python-level checks as :mod:`.rms_norm` (see there), but
``gamma`` may be empty when every output is (the vendor's docs allow empty tensors
throughout, and an all-empty call runs nothing). The part's rules are phase one's: a kernel
on Atlas A2/A3 (x, gamma and y of one dtype) and Ascend 950 (also float32 gamma beside a
16-bit x), none on the Atlas training and inference parts (``ACLNN_ERR_INNER_FIND_KERNEL_ERROR``
there).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, configured, double, dtype_of,
                       output, shape_of, tensor)
from .rms_norm import (OUT_LATER, TILING, rms_norm_check, rstd_dtype, rstd_fits, rstd_shape,
                       smoke_case)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["gemma_rms_norm", "GemmaRmsNorm", "GEMMA_RMS_NORM"]



def gemma_rms_norm_check(a):
    """RmsNorm's checks (:func:`.rms_norm.rms_norm_check`), with an empty ``gamma`` allowed
    where every output is empty (no rows)."""
    rms_norm_check(a, empty_gamma_ok=math.prod(rstd_shape(a)) == 0)


# Atlas A2/A3, Ascend 950 and the kirin parts; none for the Atlas training and inference series
# nor Atlas 200I/500 A2, which the docs list as unsupported.
_KERNEL_PARTS = configured("ascend910_93", "ascend910b", "ascend950", "kirin9030", "kirinx90",
                           source=OP_DEF.format("gemma_rms_norm"))


GEMMA_RMS_NORM = Declared("aclnnGemmaRmsNorm", (
    tensor("x"),
    tensor("gamma", like="x", or_float32=True),
    double("epsilon", default=1e-6),
    output("yOut", shape=shape_of("x"), dtype=dtype_of("x"), later=OUT_LATER),
    output("rstdOut", shape=rstd_shape, dtype=rstd_dtype, fits=rstd_fits, later=OUT_LATER),
), check=gemma_rms_norm_check, staged_codes=TILING, reference=reference.gemma_rms_norm,
    error_scale=reference.gemma_rms_norm_error_scale,
    parts=_KERNEL_PARTS,
    # Gemma's gammas are learned offsets from 1: centered on 0 here
    smoke_cases=(smoke_case((8, 1024), 1, np.float32, None, gamma_center=0.0),
                 smoke_case((4, 128, 768), 1, np.float16, None, gamma_center=0.0),
                 smoke_case((2, 3, 4, 5), 2, np.float32, None, epsilon=1e-3,
                            gamma_center=0.0)))


@overload
def gemma_rms_norm(x: np.ndarray, gamma: np.ndarray, epsilon: float = ..., *,
                   stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple[np.ndarray, np.ndarray]: ...


@overload
def gemma_rms_norm(x: "DeviceTensor", gamma: "DeviceTensor", epsilon: float = ..., *,
                   stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple["DeviceTensor", "DeviceTensor"]: ...


def gemma_rms_norm(x: Operand, gamma: Operand, epsilon: float = 1e-6, *,
                   stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """Gemma's RmsNorm over the trailing dims of ``x`` that ``gamma`` has: ``(y, rstd)`` with
    ``y = x * rstd * (1 + gamma)``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)`` (the device adds
    1 to gamma in float32, computes in float32 and rounds ``y`` once to x's dtype;
    ``epsilon`` reaches it as a float32).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``y`` has x's shape and dtype; ``rstd`` is float32 shaped x's batch dims then ones.
    ``out=(y, rstd)`` gives preallocated outputs of the same kind as the inputs; a ``None``
    entry is allocated as by default.
    """
    return GEMMA_RMS_NORM.call((x, gamma, epsilon), out=out, stream=stream)


class GemmaRmsNorm(Plan):
    """A :func:`gemma_rms_norm` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y``, ``rstd``; ``run(stream)`` enqueues phase two
    only."""

    declared = GEMMA_RMS_NORM
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", gamma: "DeviceTensor", epsilon: float = 1e-6, *,
                 out: OutArg = None) -> None:
        self._prepare((x, gamma, epsilon), out)
