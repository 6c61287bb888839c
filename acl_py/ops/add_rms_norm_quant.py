"""``aclnnAddRmsNormQuant``: the residual add fused with RmsNorm and one or two per-channel
int8 quantizations, :func:`add_rms_norm_quant` and the plan :class:`AddRmsNormQuant`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x1`` float32/float16/bfloat16, ``x2`` and ``gamma`` x1's; the scales float32/float16/
bfloat16, ``scales2`` scales1's; the zero points int32/float32/float16/bfloat16,
``zero_points2`` zero_points1's; the part's relations of x1, scales1 and the zero points:
see :func:`scales_zero_points_dtype_rule`); ``x2`` of x1's shape; ``gamma`` equal to x1's
trailing dims; every scale and zero-point tensor of gamma's shape; the ``out=`` entries of
x1's shape (y1, y2 of ``y_dtype``; x x1's dtype); ``y_dtype`` (int8; float8_e4m3fn,
float8_e5m2 and hifloat8 on Ascend 950 only; int4 nowhere: :data:`Y_DTYPES`). The operator's
own rules (ranks; ``div_mode`` true on Atlas A2/A3 and Atlas inference parts) are phase
one's. ``y2`` is written only with
``scales2`` given: without it the result's ``y2`` is None (the device still receives a tensor
for it, a scratch one).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..dtypes import INT4, dtype_name
from ..errors import AclArgumentError, AclTypeError
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, check_same_shape,
                       VIEW_COPY, check_trailing_dims, checked_later, configured, double, dtype_of,
                       dtype_option, flag, integer, output, part_of, shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_rms_norm_quant", "AddRmsNormQuant", "ADD_RMS_NORM_QUANT"]

_INT8 = np.dtype(np.int8)
_INT32 = np.dtype(np.int32)
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_ZERO_POINTS = ("int32", "float32", "float16", "bfloat16")

# None for the Atlas training series; Ascend 950 runs add_rms_norm_quant_apt (op_kernel/arch35).
_KERNEL_PARTS = configured("ascend910b", "ascend910_93", "ascend310p", "kirinx90", "kirin9030",
                           "ascend950", source=OP_DEF.format("add_rms_norm_quant"))

# y1's and y2's dtypes acl-py takes (y_dtype). Phase one's list takes the first four on every
# part (aclnn_add_rms_norm_quant.cpp: FLOAT8_E4M3FN, FLOAT8_E5M2, HIFLOAT8, INT8), but only
# Ascend 950's kernel writes the 8-bit floats (add_rms_norm_quant_def.cpp): the emulator
# refuses them elsewhere with 561003 (docs/emulator.md). INT4 is in no part's list (161002).
Y_DTYPES = ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8", "int4")

# The code of a part or dtype combination without a kernel: refused after every check of the
# op_api (docs/emulator.md row 7), the shape relations' 161002 included.
NO_KERNEL = (561003,)

_name = dtype_name


def scales_zero_points_dtype_rule(x, scales, zero_points, part):
    """None where the part has a kernel for x1's dtype ``x`` with scales of dtype ``scales``
    and zero points of dtype ``zero_points`` (None: none given), else ``(argument, rule)``
    (add_rms_norm_quant_def.cpp): on Ascend 950 a float32 x with float32 scales and zero
    points, a 16-bit x with float32 scales beside float32 or int32 zero points or with scales
    and zero points of x's dtype (its tiling's CheckInputDtype says the same); on Atlas A2/A3
    float16 with float32 scales and int32 zero points, bfloat16 with float32 and int32 or with
    bfloat16 and bfloat16; on Atlas inference parts float16, float32, int32."""
    if part.arch3510:
        if x == _F32:
            for arg, dt in (("scales1", scales), ("zero_points1", zero_points)):
                if dt is not None and dt != _F32:
                    return arg, f"dtype {_name(dt)} must be float32 with a float32 x1 (Ascend 950)"
            return None
        if scales == _F32:
            if zero_points not in (None, _F32, _INT32):
                return "zero_points1", (f"dtype {_name(zero_points)} must be float32 or int32 "
                                        f"with float32 scales (Ascend 950)")
            return None
        if scales != x:
            return "scales1", (f"dtype {_name(scales)} must be x1's dtype {_name(x)} or "
                               f"float32 (Ascend 950)")
        if zero_points is not None and zero_points != x:
            return "zero_points1", (f"dtype {_name(zero_points)} must be x1's dtype "
                                    f"{_name(x)} with scales of it (Ascend 950)")
        return None
    inference = part.npu_arch == 2002
    if x == _F32 or (inference and x != _F16):
        return "x1", f"dtype {_name(x)} has no kernel on {part.name}"
    if scales == _F32 or (x == _F16 and not inference):
        if scales != _F32:
            return "scales1", f"dtype {_name(scales)} must be float32 with x1 {_name(x)}"
        if zero_points is not None and zero_points != _INT32:
            return "zero_points1", (f"dtype {_name(zero_points)} must be int32 with float32 "
                                    f"scales on {part.name}")
        return None
    if inference or scales != x:
        return "scales1", f"dtype {_name(scales)} must be float32 or x1's dtype {_name(x)}"
    if zero_points is not None and zero_points != x:
        return "zero_points1", (f"dtype {_name(zero_points)} must be x1's dtype {_name(x)} "
                                f"with scales of it on {part.name}")
    return None


def y_dtype_rule(y_dtype, part):
    """None where ``part`` (a :class:`~acl_py.ops.Part`) has a kernel writing y1 and y2 of
    ``y_dtype``, else the rule: int8 everywhere, the float8 dtypes and hifloat8 on Ascend 950
    only (add_rms_norm_quant_def.cpp), int4 nowhere (phase one's y list)."""
    if y_dtype is INT4:
        return (f"int4 is not in aclnnAddRmsNormQuant's y dtype list (int8, float8_e4m3fn, "
                f"float8_e5m2, hifloat8) on any part")
    if y_dtype == _INT8 or part.arch3510:
        return None
    return (f"{_name(y_dtype)} results are Ascend 950's (its kernel's y dtypes); {part.name} "
            f"has a kernel for int8 only")


def _y_dtype(a):
    return a.y_dtype


def add_rms_norm_quant_check(a):
    """Checks ``a.y_dtype`` for the part (:func:`y_dtype_rule`); the docs' relations the code
    leaves unchecked: ``a.x2`` of x1's shape, ``a.gamma`` equal to x1's trailing dims, every scale and zero-point tensor of gamma's
    shape (the kernel reads gamma's element count of each), ``zero_points2`` of
    zero_points1's dtype; and the part's dtype combinations
    (:func:`scales_zero_points_dtype_rule`, zero_points1's or else zero_points2's dtype)."""
    rule = y_dtype_rule(a.y_dtype, part_of())
    if rule is not None:
        if a.y_dtype is INT4:   # phase one's y list (row 2)
            raise AclTypeError("y_dtype", rule)
        staged(NO_KERNEL, "y_dtype", rule, AclTypeError)
    z1, z2 = a.zero_points1, a.zero_points2
    if z1 is not None and z2 is not None and z1.dtype != z2.dtype:
        raise AclArgumentError("zero_points2", f"dtype {z2.dtype} must be zero_points1's "
                               f"dtype {z1.dtype}")
    z = z1 if z1 is not None else z2
    broken = scales_zero_points_dtype_rule(a.x1.dtype, a.scales1.dtype,
                                           None if z is None else z.dtype, part_of())
    if broken is not None:
        arg, rule = broken
        staged(NO_KERNEL, "zero_points2" if arg == "zero_points1" and z1 is None else arg,
               rule, AclTypeError)
    shape, gs = a.x1.shape, a.gamma.shape
    check_same_shape("x2", a.x2.shape, "x1", shape)
    check_trailing_dims("gamma", gs, "x1", shape)
    for name in ("scales1", "scales2", "zero_points1", "zero_points2"):
        t = a[name]
        if t is not None and t.shape != gs:
            raise AclArgumentError(name, f"shape {t.shape} must equal gamma's shape {gs}")


def _one_element_each(a, given):
    return math.prod(given) == 1 and math.prod(a.x1.shape) == 1


def _rank_rule(given):
    """The op_api's rank rule for every output (1..8), before any copy compares shapes."""
    return None if 1 <= len(given) <= 8 else "has a rank outside 1..8"


def copy_fits(a, given, part=None, shapes=None):
    """Phase one's rule for a y1 or x ``out=`` entry of another shape than x1's (None where
    ``given`` passes, else the rule): the op_api copies the L0 op's result into it with
    ViewCopy, which takes equal shapes or one element each (hicann/ops-math
    conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams); with x1 empty it
    returns before the L0 op, checking no shape but the rank."""
    if _rank_rule(given):
        return _rank_rule(given)
    if 0 in a.x1.shape or _one_element_each(a, given):
        return None
    return f"!= {a.x1.shape} (x1's shape; another only of one element for one element)"


def y2_fits(a, given, part=None, shapes=None):
    """The rule for a y2 ``out=`` entry of another shape than x1's: the ViewCopy's with
    scales2 (:func:`copy_fits`), and the docs' (x1's shape) where the code compares it with
    nothing (the emulator's stricter rule, docs/emulator.md)."""
    if _rank_rule(given):
        return _rank_rule(given)
    if _one_element_each(a, given):
        return None
    return f"!= {a.x1.shape} (x1's shape; another only of one element for one element)"


def y2_unwritten(a, part):
    """Why y2 is not written (None where it is): only with scales2 given (the op_api copies
    the kernel's y2 into y2Out only then: aclnn_add_rms_norm_quant.cpp, isDual)."""
    if a.scales2 is None:
        return ("written only with scales2 given (hicann/ops-nn norm/add_rms_norm_quant/"
                "op_host/op_api/aclnn_add_rms_norm_quant.cpp: isDual)")
    return None


def smoke_case(shape, dtype, scale_dtype, zero_dtype, dual=True, scale=40.0, zero=3):
    """A smoke case ``(name, make)``: ``make()`` gives the inputs in declaration order for
    ``shape`` ("bf16" names bfloat16), gamma over the last dim, divisor scales near ``scale``
    (most results inside int8, some saturating), ``scales2`` and ``zero_points2`` only when
    ``dual``; int8 results."""
    def make():
        from ..dtypes import bfloat16
        named = {"bf16": bfloat16()}
        dt, sdt, zdt = (named.get(d, d) for d in (dtype, scale_dtype, zero_dtype))
        rng = np.random.default_rng(shape[-1] + len(shape))
        n = shape[-1]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.25).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1.0 + 0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        s1 = (1.0 / scale * (1 + 0.25 * rng.random(n, dtype=np.float32))).astype(sdt)
        z1 = rng.integers(-zero, zero + 1, n).astype(zdt)
        s2 = (0.5 * s1.astype(np.float32)).astype(sdt) if dual else None
        z2 = (-z1.astype(np.float32)).astype(zdt) if dual else None
        return x1, x2, g, s1, s2, z1, z2, -1, 1e-6, True, _INT8
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return f"{name}{list(shape)}{' dual' if dual else ''}", make


_COPIED = checked_later(VIEW_COPY, shape=True, ranks=(1, 8))

ADD_RMS_NORM_QUANT = Declared("aclnnAddRmsNormQuant", (
    tensor("x1"),
    tensor("x2", like="x1"),
    tensor("gamma", like="x1"),
    tensor("scales1"),
    tensor("scales2Optional", optional=True, like="scales1"),
    tensor("zeroPoints1Optional", optional=True, dtypes=_ZERO_POINTS),
    tensor("zeroPoints2Optional", optional=True, dtypes=_ZERO_POINTS),
    integer("axis", default=-1),
    double("epsilon", default=1e-6),
    flag("divMode", default=True),
    dtype_option("y_dtype", Y_DTYPES, default=_INT8),
    # the ViewCopys of the results refuse another shape of rank 1..8 (the op_api's bounds):
    # 561103
    output("y1Out", shape=shape_of("x1"), dtype=_y_dtype, fits=copy_fits, later=_COPIED),
    output("y2Out", shape=shape_of("x1"), dtype=_y_dtype, fits=y2_fits,
           unwritten=y2_unwritten, later=_COPIED),
    output("xOut", shape=shape_of("x1"), dtype=dtype_of("x1"), fits=copy_fits,
           later=_COPIED),
), check=add_rms_norm_quant_check, reference=reference.add_rms_norm_quant,
    error_scale=reference.add_rms_norm_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16, np.float32, np.int32),
                 smoke_case((4, 3, 200), np.float16, np.float32, np.int32, dual=False)),
    # 561103: the copies of the results into y1Out, y2Out and xOut (the ViewCopy's rules);
    # 561003: a dtype combination the part has no kernel for (docs/emulator.md)
    rule_codes=(561103, 561003), staged_codes=NO_KERNEL + VIEW_COPY,
    parts=_KERNEL_PARTS)


@overload
def add_rms_norm_quant(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray,
                       scales1: np.ndarray, scales2: Optional[np.ndarray] = ...,
                       zero_points1: Optional[np.ndarray] = ...,
                       zero_points2: Optional[np.ndarray] = ..., axis: int = ...,
                       epsilon: float = ..., div_mode: bool = ..., *, y_dtype: Any = ...,
                       stream: Optional["Stream"] = ..., out: OutArg = ...
                       ) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray]: ...


@overload
def add_rms_norm_quant(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                       scales1: "DeviceTensor", scales2: Optional["DeviceTensor"] = ...,
                       zero_points1: Optional["DeviceTensor"] = ...,
                       zero_points2: Optional["DeviceTensor"] = ..., axis: int = ...,
                       epsilon: float = ..., div_mode: bool = ..., *, y_dtype: Any = ...,
                       stream: Optional["Stream"] = ..., out: OutArg = ...
                       ) -> Tuple["DeviceTensor", Optional["DeviceTensor"], "DeviceTensor"]: ...


def add_rms_norm_quant(x1: Operand, x2: Operand, gamma: Operand, scales1: Operand,
                       scales2: Optional[Operand] = None,
                       zero_points1: Optional[Operand] = None,
                       zero_points2: Optional[Operand] = None, axis: int = -1,
                       epsilon: float = 1e-6, div_mode: bool = True, *,
                       y_dtype: Any = np.int8, stream: Optional["Stream"] = None,
                       out: OutArg = None) -> Any:
    """The residual add fused with RmsNorm over the trailing dims of ``x1`` that ``gamma``
    has, then quantized per channel: ``(y1, y2, x)`` with ``x = x1 + x2``,
    ``y = x * rstd * gamma`` (``rstd = 1 / sqrt(mean(x^2) + epsilon)``) and
    ``yk = int8(clip(round(y / scales_k + zero_points_k), -128, 127))`` (``y * scales_k``
    when ``div_mode`` is false), ties to even. The device computes in float32 with the
    intermediate roundings of docs/emulator.md (off Ascend 950, float16: ``x1 + x2`` and
    ``y`` before and after the multiply by gamma rounded to float16; Ascend 950 norms the
    float32 sum).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    The scales and zero points have gamma's shape; ``y2`` is None unless ``scales2`` is
    given; ``axis`` is passed on (the vendor supports -1 only; others have no effect).
    ``y1`` and ``y2`` have ``y_dtype``: ``np.int8`` (the default), or on Ascend 950
    ``ml_dtypes.float8_e4m3fn`` / ``ml_dtypes.float8_e5m2`` (or their names), arrays of that
    ml_dtypes type: the float32 ``y / scales_k + zero_points_k`` converted to it directly, to
    nearest even, saturating at its largest finite value (docs/emulator.md);
    :data:`acl_py.dtypes.HIFLOAT8` (or ``"hifloat8"``): that value to the nearest HiF8 value,
    ties away from zero, saturating at 2^15, as uint8 codes (NumPy) or HIFLOAT8 DeviceTensors
    (decode with :func:`acl_py.dtypes.hifloat8_to_float32`). Another part refuses these
    ``y_dtype`` s (AclTypeError naming it; on DeviceTensors with the code the emulator refuses
    the call with, 561003: the device has no kernel for it); ``"int4"`` is refused on every
    part (phase one's y list: 161002 on DeviceTensors).
    ``out=(y1, y2, x)`` gives preallocated outputs of the same kind as the inputs (NumPy:
    uint8 for hifloat8).
    """
    return ADD_RMS_NORM_QUANT.call((x1, x2, gamma, scales1, scales2, zero_points1,
                                    zero_points2, axis, epsilon, div_mode, y_dtype),
                                   out=out, stream=stream)


class AddRmsNormQuant(Plan):
    """An :func:`add_rms_norm_quant` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y1``, ``y2`` (None without ``scales2``; both of
    ``y_dtype``), ``x``; ``run(stream)`` enqueues phase two only."""

    declared = ADD_RMS_NORM_QUANT
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 scales1: "DeviceTensor", scales2: Optional["DeviceTensor"] = None,
                 zero_points1: Optional["DeviceTensor"] = None,
                 zero_points2: Optional["DeviceTensor"] = None, axis: int = -1,
                 epsilon: float = 1e-6, div_mode: bool = True, *,
                 y_dtype: Any = np.int8, out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, scales1, scales2, zero_points1, zero_points2, axis,
                       epsilon, div_mode, y_dtype), out)
