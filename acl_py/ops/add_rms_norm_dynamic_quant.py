"""``aclnnAddRmsNormDynamicQuant``: the residual add fused with RmsNorm and one or two per-row
dynamic int8 quantizations (W8A8 inference's activation quantization),
:func:`add_rms_norm_dynamic_quant` and the plan :class:`AddRmsNormDynamicQuant`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x1`` float16/bfloat16, ``x2``, ``gamma`` and the smooth scales x1's); ``x2`` of x1's
shape; ``gamma`` one-dimensional, x1's last dim; each smooth scale of gamma's shape;
``smooth_scale2`` only with ``smooth_scale1``; the ``out=`` entries (y1, y2 int8 of x1's
shape; x x1's dtype and shape; scale1, scale2 float32 of x1's leading dims). The operator's
own rules (the part's kernels: Atlas A2/A3 and Ascend 950; epsilon > 0 off Ascend 950; x1
of rank 2 or more on Ascend 950) are phase one's. acl-py asks
for int8 results. ``y2`` and ``scale2`` are written only with both smooth scales given:
otherwise the result holds None for them (the device still receives a one-element tensor
for each, a scratch one).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, Operand, OutArg, Plan, check_same_shape, configured, double,
                       dtype_of, output, shape_of, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_rms_norm_dynamic_quant", "AddRmsNormDynamicQuant",
           "ADD_RMS_NORM_DYNAMIC_QUANT"]

_HALVES = ("float16", "bfloat16")
_OP_API = ("hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/op_api/"
           "add_rms_norm_dynamic_quant.cpp: out2Flag")

# hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/add_rms_norm_dynamic_quant_def.cpp: no
# kernel for the Atlas inference and training series; Ascend 950 runs its arch35 kernels.
_KERNEL_PARTS = configured("ascend910b", "ascend910_93", "kirinx90", "kirin9030", "ascend950")


def add_rms_norm_dynamic_quant_check(a):
    """Checks the docs' relations: ``a.x2`` of x1's shape, ``a.gamma`` one-dimensional and
    x1's last dim, each smooth scale of gamma's shape, ``smooth_scale2`` only with
    ``smooth_scale1`` (the tiling refuses it alone)."""
    shape, gs = a.x1.shape, a.gamma.shape
    check_same_shape("x2", a.x2.shape, "x1", shape)
    if len(gs) != 1 or not shape or shape[-1] != gs[0]:
        raise AclArgumentError("gamma", f"shape {gs} must be one dim equal to x1's last dim "
                               f"(x1's shape {shape})")
    for name in ("smooth_scale1", "smooth_scale2"):
        t = a[name]
        if t is not None and t.shape != gs:
            raise AclArgumentError(name, f"shape {t.shape} must equal gamma's shape {gs}")
    if a.smooth_scale2 is not None and a.smooth_scale1 is None:
        raise AclArgumentError("smooth_scale2", "is given without smooth_scale1")


def _dual(a):
    return a.smooth_scale1 is not None and a.smooth_scale2 is not None


def _scale_shape(a):
    """x1's leading dims (one element for a one-dimensional x1)."""
    return a.x1.shape[:-1] or (1,)


def _y2_shape(a):
    """x1's shape with both smooth scales; one element without (the L0 op's ``[1]`` y2, which
    the op_api copies into y2Out: its ViewCopy takes one element only)."""
    return a.x1.shape if _dual(a) else (1,)


def _scale2_shape(a):
    """:func:`_scale_shape` with both smooth scales; one element without (as y2)."""
    return _scale_shape(a) if _dual(a) else (1,)


def _rank_rule(given):
    """The docs' rank rule for every output (at most 8), the emulator's (stricter, 161002)."""
    return None if len(given) <= 8 else "has a rank above 8"


def _copied(a, given, want):
    """Phase one's rule for an entry the op_api copies a result of shape ``want`` into (None
    where ``given`` passes): ViewCopy takes equal shapes or one element each (hicann/ops-math
    conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams); with x1 empty
    the op_api returns before the copies, checking no shape but the rank."""
    if _rank_rule(given) or 0 in a.x1.shape:
        return _rank_rule(given)
    if math.prod(given) == 1 and math.prod(want) == 1:
        return None
    return f"!= {tuple(want)} (another only of one element for one element)"


def y1_fits(a, given, part=None, shapes=None):
    """The rule for a y1 ``out=`` entry of another shape than x1's: the copy of the kernel's
    y1 (x1's shape)."""
    return _copied(a, given, a.x1.shape)


def y2_fits(a, given, part=None, shapes=None):
    """The rule for a y2 ``out=`` entry: the copy of the kernel's y2, x1's shape with both
    smooth scales, else the L0 op's one element."""
    return _copied(a, given, _y2_shape(a))


def scale_fits(a, given, part=None, shapes=None):
    """The rule for a scale1 ``out=`` entry of another shape than x1's leading dims: the
    docs' alternative, one dim of their product."""
    rows = math.prod(a.x1.shape[:-1])
    if tuple(given) == (rows,):
        return None
    return f"!= {_scale_shape(a)} (x1's leading dims, or ({rows},))"


def scale2_fits(a, given, part=None, shapes=None):
    """The rule for a scale2 ``out=`` entry: scale1's shape (the docs)."""
    want = tuple((shapes or {}).get("scale1", _scale_shape(a)))
    return None if tuple(given) == want else f"!= {want} (scale1's shape)"


def y2_unwritten(a, part):
    """Why y2 and scale2 are not written (None where they are): only with both smooth scales
    given (the L0 op gives the kernel a y2 and scale2 of their own only then)."""
    if not _dual(a):
        return f"written only with both smooth scales given ({_OP_API})"
    return None


def smoke_case(shape, dtype, smooth=2, seed=0):
    """A smoke case ``(name, make)``: ``make()`` gives the inputs in declaration order for
    ``shape`` ("bf16" names bfloat16), gamma over the last dim, ``smooth`` smooth scales
    (0, 1 or 2) near 1."""
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        rng = np.random.default_rng(shape[-1] + len(shape) + seed)
        n = shape[-1]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.25).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1.0 + 0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        s1 = (0.5 + rng.random(n, dtype=np.float32)).astype(dt) if smooth >= 1 else None
        s2 = (0.5 + rng.random(n, dtype=np.float32)).astype(dt) if smooth >= 2 else None
        return x1, x2, g, s1, s2, 1e-6
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)} smooth{smooth}", make


ADD_RMS_NORM_DYNAMIC_QUANT = Declared("aclnnAddRmsNormDynamicQuant", (
    tensor("x1", dtypes=_HALVES),
    tensor("x2", like="x1", dtypes=_HALVES),
    tensor("gamma", like="x1", dtypes=_HALVES),
    tensor("smoothScale1Optional", optional=True, like="x1", dtypes=_HALVES),
    tensor("smoothScale2Optional", optional=True, like="x1", dtypes=_HALVES),
    double("epsilon", default=1e-6),
    output("y1Out", shape=shape_of("x1"), dtype=np.int8, fits=y1_fits),
    output("y2Out", shape=_y2_shape, dtype=np.int8, fits=y2_fits, unwritten=y2_unwritten),
    output("xOut", shape=shape_of("x1"), dtype=dtype_of("x1")),
    output("scale1Out", shape=_scale_shape, dtype=np.float32, fits=scale_fits),
    output("scale2Out", shape=_scale2_shape, dtype=np.float32, fits=scale2_fits,
           unwritten=y2_unwritten),
), check=add_rms_norm_dynamic_quant_check, reference=reference.add_rms_norm_dynamic_quant,
    error_scale=reference.add_rms_norm_dynamic_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16),
                 smoke_case((4, 3, 200), "bf16", smooth=1),
                 smoke_case((5, 96), np.float16, smooth=0)),
    # 561103: the copies of the results into y1Out, y2Out and scale2Out (the ViewCopy's
    # rules); 561003: a part or y dtype without a kernel (docs/emulator.md)
    rule_codes=(561103, 561003), parts=_KERNEL_PARTS)


@overload
def add_rms_norm_dynamic_quant(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray,
                               smooth_scale1: Optional[np.ndarray] = ...,
                               smooth_scale2: Optional[np.ndarray] = ...,
                               epsilon: float = ..., *, stream: Optional["Stream"] = ...,
                               out: OutArg = ...
                               ) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray,
                                          np.ndarray, Optional[np.ndarray]]: ...


@overload
def add_rms_norm_dynamic_quant(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                               smooth_scale1: Optional["DeviceTensor"] = ...,
                               smooth_scale2: Optional["DeviceTensor"] = ...,
                               epsilon: float = ..., *, stream: Optional["Stream"] = ...,
                               out: OutArg = ...
                               ) -> Tuple["DeviceTensor", Optional["DeviceTensor"],
                                          "DeviceTensor", "DeviceTensor",
                                          Optional["DeviceTensor"]]: ...


def add_rms_norm_dynamic_quant(x1: Operand, x2: Operand, gamma: Operand,
                               smooth_scale1: Optional[Operand] = None,
                               smooth_scale2: Optional[Operand] = None,
                               epsilon: float = 1e-6, *, stream: Optional["Stream"] = None,
                               out: OutArg = None) -> Any:
    """The residual add fused with RmsNorm over the last dim of ``x1``, then quantized per
    row: ``(y1, y2, x, scale1, scale2)`` with ``x = x1 + x2``, ``y = x * rstd * gamma``
    (``rstd = 1 / sqrt(mean(x^2) + epsilon)``), per output k ``t = y * smooth_scale_k`` (``y``
    without smooth_scale1), ``scale_k = max|t| / 127`` over each row and ``yk =
    int8(round(t / scale_k))``, ties to even. The device computes in float32 (docs/
    emulator.md: on Atlas A2/A3 ``127 / max`` once per row, its reciprocal as the scale; on
    Ascend 950 the scale ``max * (1 / 127)`` or ``max / 127``, by the tiling's kernel, and
    ``t / scale``).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``y2`` and ``scale2`` are None unless both smooth scales are given; ``scale1`` has x1's
    leading dims. ``out=(y1, y2, x, scale1, scale2)`` gives preallocated outputs of the same
    kind as the inputs.
    """
    return ADD_RMS_NORM_DYNAMIC_QUANT.call((x1, x2, gamma, smooth_scale1, smooth_scale2,
                                            epsilon), out=out, stream=stream)


class AddRmsNormDynamicQuant(Plan):
    """An :func:`add_rms_norm_dynamic_quant` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y1``, ``y2`` (None without both smooth scales),
    ``x``, ``scale1``, ``scale2`` (as y2); ``run(stream)`` enqueues phase two only."""

    declared = ADD_RMS_NORM_DYNAMIC_QUANT
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 smooth_scale1: Optional["DeviceTensor"] = None,
                 smooth_scale2: Optional["DeviceTensor"] = None, epsilon: float = 1e-6, *,
                 out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, smooth_scale1, smooth_scale2, epsilon), out)
