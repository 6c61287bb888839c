"""``aclnnRmsNormQuant``: RmsNorm with a bias, quantized to int8, :func:`rms_norm_quant` and the
plan :class:`RmsNormQuant`.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x`` float32/float16/bfloat16; ``gamma``, ``beta`` x's; ``scale`` x's and ``offset`` int8,
on Ascend 950 the relations its op_api lists instead: see :func:`scale_offset_dtype_rule`);
``gamma`` of ``[N]`` or ``[1, N]`` with N x's last dim, ``beta`` of gamma's shape; ``offset``
of scale's shape; ``scale`` non-empty and ``epsilon > 0`` (on Ascend 950 instead: ``scale``
of all-one dims or x's trailing dims, any epsilon: RmsNormQuantV2's tiling); ``y_dtype``
(int8; float8_e4m3fn, float8_e5m2 and hifloat8 on Ascend 950 only; int4 on Ascend 950 with
an even last dim and on Atlas A2/A3 with a last dim a multiple of 8: :data:`Y_DTYPES`); the
``out=`` entry of x's shape and ``y_dtype`` (on Atlas A2/A3 an int4 one whose bytes are whole
int32 words: see below). The operator's own rules (ranks, the part's dtype lists:
float16/bfloat16 on Atlas A2/A3 and Ascend 950, float16 on Atlas inference parts, none on the
Atlas training series; float32 x on Ascend 950 only) are phase one's.

Atlas A2/A3's op_api takes int4 results only as an INT32 y, eight values to a word (it views
its INT4 result so, and its copy into an INT4-typed y fails): an int4 y is handed to phase one
as the INT32 words over its bytes (``output(int4_as_int32=...)``), and the caller gets the
INT4 tensor (NumPy: its int8 values).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..dtypes import INT4, dtype_name
from ..errors import AclArgumentError, AclTypeError
from ._declare import (OP_DEF, VIEW_COPY, Declared, Operand, OutArg, Plan, configured, double,
                       dtype_option, output, part_of, shape_of, staged, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["rms_norm_quant", "RmsNormQuant", "RMS_NORM_QUANT"]

_INT8 = np.dtype(np.int8)
_INT32 = np.dtype(np.int32)
_F32 = np.dtype(np.float32)
# Ascend 950's offset dtypes (hicann/ops-nn norm/rms_norm_quant/op_host/op_api/
# aclnn_rms_norm_quant.cpp ZP_REG_BASE_DTYPE_SUPPORT_LIST); int8 elsewhere
_OFFSETS = ("int8", "int32", "float32", "float16", "bfloat16")

# None for the Atlas training series (whose op_api lists no dtype); Ascend 950's op_api branch
# runs RmsNormQuantV2 (norm/rms_norm_quant_v2/op_host/rms_norm_quant_v2_def.cpp, "ascend950").
_KERNEL_PARTS = configured("ascend910b", "ascend910_93", "ascend310p", "ascend310b",
                           "kirinx90", "kirin9030", "ascend950",
                           source=OP_DEF.format("rms_norm_quant"))

# y's dtypes acl-py takes (y_dtype), and those the part computes: phase one's y list
# (aclnn_rms_norm_quant.cpp: INT8 everywhere, FLOAT8_E4M3FN/E5M2, HIFLOAT8 and INT4 on Ascend
# 950, INT8, INT4 and INT32 on Atlas A2/A3; another is refused 161002). Atlas A2/A3's op_api
# views its INT4 result as INT32 (Int42Int32PackedTensor) and its ViewCopy into an INT4 y
# fails (561103): there an int4 y goes to phase one as INT32 words (_int4_as_int32).
Y_DTYPES = ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8", "int4")


def _int4_as_int32(part):
    """Whether ``part``'s op_api takes int4 results only as an INT32 y (Atlas A2/A3: the
    non-register-based branch of aclnn_rms_norm_quant.cpp packs every INT4 result)."""
    return part.npu_arch == 2201


def _per_column(scale_shape):
    """Whether Ascend 950's kernel reads scale and offset per column: a scale whose dims are
    not all 1 (RmsNormQuantV2's tiling then requires x's trailing dims)."""
    return any(d != 1 for d in scale_shape)


_name = dtype_name

# The code of the rules the device checks after the op_api's (docs/emulator.md rows 5-6): the
# tiling's (off Ascend 950) and RmsNormQuantV2's (on it), a NULL L0 result returned as 561103.
_TILING = (561103,)
# The emulator's stricter rule of an empty scale off Ascend 950 (row 8), checked after the
# tiling and the ViewCopy: the vendor's tiling has none (rms_norm_quant_common_tiling.cpp) and
# its kernel reads scale's first element (GetScaleAndOffset)
_EMPTY_SCALE = (161002,)


def _y_later(a, part, rule, shape):
    """The stage of an ``out=`` y of another ``shape`` than x's (``output(later=)``): on
    Ascend 950 the op_api checks y's whole shape against x's (CheckShapeDim, 161002: None);
    elsewhere only y's rank (1..8) and last dim, and y's other dims are the last step's, the
    ViewCopy of the result into y (docs/emulator.md row 7: VIEW_COPY). The last dim is the INT4
    entry's own: its INT32 words have x's last dim / 8 when it is x's. y's dtype is the
    op_api's list (161002: None)."""
    if rule != "shape" or part.arch3510 or not 1 <= len(shape) <= 8 or not a.x.shape or \
            shape[-1] != a.x.shape[-1]:
        return None
    return VIEW_COPY


def scale_offset_dtype_rule(x, scale, offset, ascend950):
    """None where the dtypes ``scale`` and ``offset`` go with the dtype ``x``, else
    ``(argument, rule)``: off Ascend 950 scale of x's dtype and an int8 offset (a float32 x is
    phase one's to refuse there, naming x); on Ascend 950 (the op_api's register-based branch,
    aclnn_rms_norm_quant.cpp) with a float32 x both float32, with a 16-bit x a float32 scale
    beside a float32 or int32 offset, or a scale of x's dtype beside an offset of the scale's
    dtype or int8."""
    if not ascend950:
        if x == _F32:
            return None
        if scale != x:
            return "scale", f"dtype {_name(scale)} must be x's dtype {_name(x)}"
        if offset != _INT8:
            return "offset", f"dtype {_name(offset)} must be int8"
        return None
    if x == _F32:
        for arg, dt in (("scale", scale), ("offset", offset)):
            if dt != _F32:
                return arg, f"dtype {_name(dt)} must be float32 with a float32 x (Ascend 950)"
        return None
    if scale == _F32:
        if offset not in (_F32, _INT32):
            return "offset", (f"dtype {_name(offset)} must be float32 or int32 with a float32 "
                              f"scale (Ascend 950)")
        return None
    if scale != x:
        return "scale", (f"dtype {_name(scale)} must be x's dtype {_name(x)} or float32 "
                         f"(Ascend 950)")
    if offset != scale and offset != _INT8:
        return "offset", (f"dtype {_name(offset)} must be scale's dtype {_name(scale)} or int8 "
                          f"(Ascend 950)")
    return None


def y_dtype_rule(y_dtype, part):
    """None where ``part`` (a :class:`~acl_py.ops.Part`) computes y of ``y_dtype``, else the
    rule: int8 everywhere, int4 also on Atlas A2/A3 (as INT32 words: :func:`_int4_as_int32`),
    the others on Ascend 950 only (phase one's y dtype list, 161002)."""
    if y_dtype == _INT8 or part.arch3510 or (y_dtype is INT4 and _int4_as_int32(part)):
        return None
    computed = "int8 and int4" if _int4_as_int32(part) else "int8"
    return (f"{_name(y_dtype)} results are Ascend 950's (phase one's y list); {part.name} "
            f"computes {computed}")


def rms_norm_quant_check(a):
    """Checks ``a.y_dtype`` for the part (:func:`y_dtype_rule`, first: phase one checks y's
    dtype before the scale's), the dtypes of scale and offset
    (:func:`scale_offset_dtype_rule`), gamma
    (``[N]`` or ``[1, N]``, N x's last dim: the op_api reshapes a rank-2 gamma
    to its last dim), beta (gamma's shape), offset (scale's shape), and per part:
    ``a.epsilon`` positive (the tiling refuses epsilon <= 0 as a float32), then, last, scale
    non-empty (the kernel reads its first element: the emulator's stricter rule, checked
    after the tiling and y's ViewCopy); on Ascend 950 scale of all-one dims or x's trailing
    dims, any epsilon (RmsNormQuantV2's tiling)."""
    rule = y_dtype_rule(a.y_dtype, part_of())
    if rule is not None:
        raise AclTypeError("y_dtype", rule)
    if a.y_dtype is INT4 and a.x.shape:
        n = a.x.shape[-1]
        if part_of().arch3510 and n % 2:
            raise AclArgumentError("x", f"last dim {n} must be even for int4 results (two to "
                                   f"a byte; phase one's rule on Ascend 950)")
        if _int4_as_int32(part_of()) and n % 8:
            staged(_TILING, "x", f"last dim {n} must be a multiple of 8 for int4 results on "
                   f"{part_of().name} (eight to an int32 word: the op_api's INT32 y, the "
                   f"tiling's rule)")
    broken = scale_offset_dtype_rule(a.x.dtype, a.scale.dtype, a.offset.dtype,
                                     part_of().arch3510)
    if broken is not None:
        raise AclTypeError(*broken)
    n = a.x.shape[-1] if a.x.shape else None
    gs = a.gamma.shape
    if not (gs == (n,) or gs == (1, n)) or n == 0:
        raise AclArgumentError("gamma", f"shape {gs} must be [N] or [1, N] with N x's last "
                               f"dim (x {a.x.shape}, non-empty)")
    if a.beta.shape != gs:
        raise AclArgumentError("beta", f"shape {a.beta.shape} must equal gamma's shape {gs}")
    ss = a.scale.shape
    if part_of().arch3510:
        if _per_column(ss) and (len(ss) > len(a.x.shape) or a.x.shape[len(a.x.shape) - len(ss):]
                                != ss):
            staged(_TILING, "scale", f"shape {ss} must be all ones or x's trailing dims (x "
                   f"{a.x.shape}; the kernel reads one per column)")
    if a.offset.shape != ss:
        raise AclArgumentError("offset", f"shape {a.offset.shape} must equal scale's shape "
                               f"{ss}")
    if not part_of().arch3510 and not np.float32(a.epsilon) > 0:
        staged(_TILING, "epsilon", f"{a.epsilon!r} must be positive as a float32")
    # last, as the emulator checks it (after the tiling and y's ViewCopy)
    if not part_of().arch3510 and a.scale.size == 0:
        staged(_EMPTY_SCALE, "scale", f"shape {ss} is empty (the device reads its first "
               f"element)")


def _reference(x, gamma, beta, scale, offset, epsilon, y_dtype=_INT8):
    """The float64 reference as the part reads scale and offset: per column on Ascend 950 for
    a scale of x's trailing dims, else their first element."""
    per_column = part_of().arch3510 and _per_column(np.shape(scale))
    return reference.rms_norm_quant(x, gamma, beta, scale, offset, epsilon,
                                    per_column=per_column, y_dtype=y_dtype)


def smoke_case(shape, dtype, scale=0.05, offset=3):
    """A smoke case ``(name, make)``: ``make()`` gives ``(x, gamma, beta, scale, offset,
    epsilon, y_dtype)`` (int8 results) of ``shape`` ("bf16" names bfloat16), scaled so that most results fall inside
    int8 and some saturate."""
    def make():
        from ..dtypes import bfloat16
        dt = {"bf16": bfloat16()}.get(dtype, dtype)
        rng = np.random.default_rng(shape[-1] + len(shape))
        n = shape[-1]
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.25).astype(dt)
        g = (1.0 + 0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        b = (0.25 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        return (x, g, b, np.array([scale], dt), np.array([offset], np.int8), 1e-6, _INT8)
    return f"{dtype if isinstance(dtype, str) else np.dtype(dtype).name}{list(shape)}", make


RMS_NORM_QUANT = Declared("aclnnRmsNormQuant", (
    tensor("x"),
    tensor("gamma", like="x"),
    tensor("beta", like="x"),
    tensor("scale"),
    tensor("offset", dtypes=_OFFSETS),
    double("epsilon", default=1e-6),
    dtype_option("y_dtype", Y_DTYPES, default=_INT8),
    output("y", shape=shape_of("x"), dtype=lambda a: a.y_dtype, int4_as_int32=_int4_as_int32,
           later=_y_later),
), check=rms_norm_quant_check, reference=_reference,
    error_scale=reference.rms_norm_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16),
                 smoke_case((4, 3, 200), np.float16, scale=0.02, offset=-5)),
    # 561103: the op_api's code for its rank-2 gamma/beta reshape, the tiling's rules
    # (epsilon, empty x, INT4's N % 8 off Ascend 950; on Ascend 950 scale's shape) and the
    # result's ViewCopy into y (docs/emulator.md)
    rule_codes=(561103,), staged_codes=_TILING + VIEW_COPY + _EMPTY_SCALE,
    parts=_KERNEL_PARTS)


@overload
def rms_norm_quant(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, scale: np.ndarray,
                   offset: np.ndarray, epsilon: float = ..., *, y_dtype: Any = ...,
                   stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple[np.ndarray]: ...


@overload
def rms_norm_quant(x: "DeviceTensor", gamma: "DeviceTensor", beta: "DeviceTensor",
                   scale: "DeviceTensor", offset: "DeviceTensor", epsilon: float = ..., *,
                   y_dtype: Any = ..., stream: Optional["Stream"] = ..., out: OutArg = ...
                   ) -> Tuple["DeviceTensor"]: ...


def rms_norm_quant(x: Operand, gamma: Operand, beta: Operand, scale: Operand, offset: Operand,
                   epsilon: float = 1e-6, *, y_dtype: Any = np.int8,
                   stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """RmsNorm over the last dim of ``x`` with a bias, then quantized: ``(y,)`` with
    ``y = int8(clip(round(((x * rstd) * gamma + beta) * (1 / scale[0]) + offset[0])))``,
    ``rstd = 1 / sqrt(mean(x^2) + epsilon)``. The device computes in float32, multiplies by
    the reciprocal of the first element of ``scale`` (a per-tensor scale: only ``scale[0]`` and
    ``offset[0]`` are read), rounds the result to float16, clamps it to [-128, 127] and rounds
    to the nearest integer, ties to even. On Ascend 950 (RmsNormQuantV2) it divides by the
    scale instead, per column (``scale[j]``, ``offset[j]``) when scale has x's trailing dims
    (per tensor when its dims are all 1), rounds to float16 to odd, then to the nearest
    integer, ties to even, saturating.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``gamma`` and ``beta`` are ``[N]`` or ``[1, N]``, N x's last dim; ``scale`` has x's dtype
    (on Ascend 950 all-one dims or x's trailing dims), ``offset`` is int8 of scale's shape.
    ``y`` has x's shape and ``y_dtype``: ``np.int8`` (the default), or on Ascend 950
    ``ml_dtypes.float8_e4m3fn`` / ``ml_dtypes.float8_e5m2`` (or their names), arrays of that
    ml_dtypes type: the float32 quotient plus offset converted to it directly (no float16
    step), to nearest even, saturating at its largest finite value, NaN kept
    (docs/emulator.md); :data:`acl_py.dtypes.HIFLOAT8` (or ``"hifloat8"``): the quotient
    plus offset to the nearest HiF8 value, ties away from zero, saturating at 2^15, given as
    uint8 codes (NumPy) or a HIFLOAT8 DeviceTensor (decode with
    :func:`acl_py.dtypes.hifloat8_to_float32`); :data:`acl_py.dtypes.INT4` (or ``"int4"``) on
    Ascend 950 (x's last dim even) and Atlas A2/A3 (x's last dim a multiple of 8; the device
    writes the int32 words of an INT32 y, which acl-py gives as the INT4 tensor over them):
    the int8 path's float16 value to [-8, 7], given as int8 values (NumPy) or an INT4
    DeviceTensor (packed two to a byte). Another part refuses these ``y_dtype`` s
    (AclTypeError naming it; phase one's code on DeviceTensors: 161002). ``out=(y,)`` gives a
    preallocated output of the same kind as the inputs, of ``y_dtype`` (NumPy: uint8 for
    hifloat8, int8 for int4; on Atlas A2/A3 an INT4 DeviceTensor whose bytes are whole words:
    contiguous rows starting at multiples of 8 elements).
    """
    return RMS_NORM_QUANT.call((x, gamma, beta, scale, offset, epsilon, y_dtype), out=out,
                               stream=stream)


class RmsNormQuant(Plan):
    """A :func:`rms_norm_quant` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    output ``y`` (of ``y_dtype``); ``run(stream)`` enqueues phase two only."""

    declared = RMS_NORM_QUANT
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", gamma: "DeviceTensor", beta: "DeviceTensor",
                 scale: "DeviceTensor", offset: "DeviceTensor", epsilon: float = 1e-6, *,
                 y_dtype: Any = np.int8, out: OutArg = None) -> None:
        self._prepare((x, gamma, beta, scale, offset, epsilon, y_dtype), out)
