"""``aclnnAddRmsNormDynamicQuant`` and ``aclnnAddRmsNormDynamicQuantV2``: the residual add
fused with RmsNorm and one or two per-row dynamic quantizations (W8A8 inference's activation
quantization), :func:`add_rms_norm_dynamic_quant` / :func:`add_rms_norm_dynamic_quant_v2` and
the plans :class:`AddRmsNormDynamicQuant` / :class:`AddRmsNormDynamicQuantV2` (V2 takes a
``beta`` added to the normed row and an ``output_mask`` choosing the outputs computed).

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x1`` float16/bfloat16, ``x2``, ``gamma``, the smooth scales and ``beta`` x1's); V2's
``output_mask`` (None or two bools: a given smooth scale needs its output, one output at
least; the op_api's CheckFlag); ``x2`` of x1's shape; ``gamma`` one-dimensional, x1's last
dim; each smooth scale and ``beta`` of gamma's shape; ``smooth_scale2`` only with
``smooth_scale1`` (V2: only without ``output_mask``); ``y_dtype`` (int8, the float8 dtypes
and hifloat8 on Ascend 950 only: the part's kernels,
:func:`~acl_py.ops.add_rms_norm_quant.y_dtype_rule`; V2 also int4, x1's last dim even); the
``out=`` entries (y1, y2 of ``y_dtype`` and x1's shape; x x1's dtype and shape; scale1,
scale2 float32 of x1's leading dims; an output not computed one element, see below). The
operator's own rules (the part's kernels: Atlas A2/A3 and Ascend 950; epsilon > 0 off Ascend
950; x1 of rank 2 or more on Ascend 950) are phase one's.

The outputs computed: y1 and scale1 always (V2: with ``output_mask[0]``), y2 and scale2 with
both smooth scales given (V2: with ``output_mask[1]`` when a mask is given). The op_api still
copies the L0 op's one-element placeholder of an output not computed into its out tensor, so
the device writes one undefined element there: acl-py hands phase one a one-element scratch
tensor for it and the result holds None in its place (a caller's ``out=`` entry for it is
checked, as one element, and left as it was). The op_api returns before the L0 op for an
empty x1 (V2: but on Ascend 950 with gamma empty, its empty kernel) and, in V2, an empty
``out=`` entry of a computed y2: no output is written, and each non-empty one is None so
(:func:`_returns_early`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ..dtypes import INT4
from ..errors import AclArgumentError, AclTypeError
from ._declare import (OP_DEF, VIEW_COPY, Declared, Operand, OutArg, Plan, bool_array,
                       check_same_shape, checked_later, configured, double, dtype_of,
                       dtype_option, output, part_of, shape_of, staged, tensor)
from .add_rms_norm_quant import NO_KERNEL, y_dtype_rule

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_rms_norm_dynamic_quant", "AddRmsNormDynamicQuant",
           "ADD_RMS_NORM_DYNAMIC_QUANT", "add_rms_norm_dynamic_quant_v2",
           "AddRmsNormDynamicQuantV2", "ADD_RMS_NORM_DYNAMIC_QUANT_V2"]

_HALVES = ("float16", "bfloat16")
_INT8 = np.dtype(np.int8)
_OP_API = "hicann/ops-nn norm/add_rms_norm_dynamic_quant/op_host/op_api/"
_V1_RULE = _OP_API + "add_rms_norm_dynamic_quant.cpp: out2Flag"
_V2_RULE = _OP_API + "aclnn_add_rms_norm_dynamic_quant_v2.cpp: processOut1, processOut2"

# No kernel for the Atlas inference and training series; Ascend 950 runs its arch35 kernels.
_KERNEL_PARTS = configured("ascend910b", "ascend910_93", "kirinx90", "kirin9030", "ascend950",
                           source=OP_DEF.format("add_rms_norm_dynamic_quant"))

# y1's and y2's dtypes acl-py takes (y_dtype): int8 everywhere, the float8 dtypes and hifloat8
# on Ascend 950 (the kernels' rule, AddRmsNormQuant's: y_dtype_rule); V2 also int4, an INT4 y on
# every part with a kernel (aclnn_add_rms_norm_dynamic_quant_v2.cpp takes an INT4-typed y as
# is; V1's op_api lists no INT4). V2's INT32 y packing eight INT4s is the raw calls'.
Y_DTYPES = ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8")
Y_DTYPES_V2 = Y_DTYPES + ("int4",)


def computed(a):
    """``(y1 and scale1 computed, y2 and scale2 computed)`` for bound arguments ``a``: V2's
    ``output_mask`` when given; else y1 always, y2 with both smooth scales (V1, and V2 without
    a mask: the op_api's processOut1/processOut2)."""
    mask = getattr(a, "output_mask", None)
    if mask is not None:
        return mask
    return True, a.smooth_scale1 is not None and a.smooth_scale2 is not None


# The code of the tiling's rules (561002: the L0 op discards its status; docs/emulator.md)
_TILING = (561002,)


def _check_smooth_scales(a, masked):
    """Without an output_mask (V1's tiling, 561002, after the op_api's checks; V2's CheckFlag,
    161002, its first): smooth_scale2 needs smooth_scale1."""
    if a.smooth_scale2 is not None and a.smooth_scale1 is None:
        if masked:
            raise AclArgumentError("smooth_scale2", "is given without smooth_scale1 and "
                                   "without output_mask")
        staged(_TILING, "smooth_scale2", "is given without smooth_scale1")


def _check_output_mask(a):
    """V2's CheckFlag (161002), naming the argument: with a mask, a given smooth scale needs
    its output and one output at least is computed; without one, smooth_scale2 needs
    smooth_scale1."""
    mask = a.output_mask
    if mask is None:
        _check_smooth_scales(a, True)
        return
    for k, name in enumerate(("smooth_scale1", "smooth_scale2")):
        if a[name] is not None and not mask[k]:
            raise AclArgumentError("output_mask", f"output_mask[{k}] is False, but {name} is "
                                   f"given (its output would not be computed)")
    if not any(mask):
        raise AclArgumentError("output_mask", "(False, False) computes no output: one of y1, "
                               "y2 at least")


def add_rms_norm_dynamic_quant_check(a):
    """Checks, in phase one's order: V2's ``output_mask`` (:func:`_check_output_mask`, the
    op_api's first check); the docs' relations: ``a.x2`` of x1's shape, ``a.gamma``
    one-dimensional and x1's last dim, each smooth scale (and beta) of gamma's shape; V1's
    smooth_scale2 only with smooth_scale1 (its tiling's rule); then ``a.y_dtype`` for the
    part (:func:`y_dtype_rule`: the kernel lookup follows the shape checks)."""
    v2 = "output_mask" in a._fields
    if v2:
        _check_output_mask(a)
    shape, gs = a.x1.shape, a.gamma.shape
    check_same_shape("x2", a.x2.shape, "x1", shape)
    if len(gs) != 1 or not shape or shape[-1] != gs[0]:
        raise AclArgumentError("gamma", f"shape {gs} must be one dim equal to x1's last dim "
                               f"(x1's shape {shape})")
    for name in ("smooth_scale1", "smooth_scale2", "beta"):
        t = getattr(a, name, None)
        if t is not None and t.shape != gs:
            raise AclArgumentError(name, f"shape {t.shape} must equal gamma's shape {gs}")
    if not v2:
        _check_smooth_scales(a, False)
    if a.y_dtype is INT4:       # V2's only: every kernel takes it, two to a byte
        if shape[-1] % 2:
            # Ascend 950's tiling (561002); elsewhere a stricter rule of the docs (161002)
            staged(_TILING if part_of().arch3510 else (161002,), "x1", f"last dim "
                   f"{shape[-1]} must be even for int4 results (Ascend 950's tiling; the docs "
                   f"on Atlas A2/A3)")
        return
    rule = y_dtype_rule(a.y_dtype, part_of())
    if rule is not None:
        staged(NO_KERNEL, "y_dtype", rule, AclTypeError)


def _scale_shape(a):
    """x1's leading dims (one element for a one-dimensional x1)."""
    return a.x1.shape[:-1] or (1,)


def _y_shape(k):
    """Output k's y (0: y1, 1: y2): x1's shape when computed, else the L0 op's ``[1]``, which
    the op_api copies into the out tensor all the same (its ViewCopy takes one element
    only)."""
    return lambda a: a.x1.shape if computed(a)[k] else (1,)


def _scale_out_shape(k):
    """Output k's scale: :func:`_scale_shape` when computed, else one element (as its y)."""
    return lambda a: _scale_shape(a) if computed(a)[k] else (1,)


def _y_dtype(a):
    return a.y_dtype


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


def _y_fits(k):
    """The rule for a y ``out=`` entry: the copy of the kernel's y (:func:`_y_shape`)."""
    def fits(a, given, part=None, shapes=None):
        return _copied(a, given, _y_shape(k)(a))
    return fits


def scale_fits(a, given, part=None, shapes=None):
    """The rule for a computed scale's ``out=`` entry of another shape than x1's leading dims:
    the docs' alternative, one dim of their product."""
    rows = math.prod(a.x1.shape[:-1])
    if tuple(given) == (rows,):
        return None
    return f"!= {_scale_shape(a)} (x1's leading dims, or ({rows},))"


def scale1_fits(a, given, part=None, shapes=None):
    """The rule for a scale1 ``out=`` entry: :func:`scale_fits` when computed, else one
    element (the ViewCopy of the L0 op's ``[1]``)."""
    if not computed(a)[0]:
        return _copied(a, given, (1,))
    return scale_fits(a, given)


def scale2_fits(a, given, part=None, shapes=None):
    """The rule for a scale2 ``out=`` entry: scale1's shape with both computed (the docs),
    :func:`scale_fits` with scale2 alone, else one element (as scale1's)."""
    out1, out2 = computed(a)
    if not out2:
        return _copied(a, given, (1,))
    if not out1:
        return scale_fits(a, given)
    want = tuple((shapes or {}).get("scale1", _scale_shape(a)))
    return None if tuple(given) == want else f"!= {want} (scale1's shape)"


def x_fits(a, given, part=None, shapes=None):
    """The rule for an x ``out=`` entry of another shape than x1's: none (the docs' relation,
    the emulator's stricter rule)."""
    return f"!= {a.x1.shape} (x1's shape)"


def _empty_y2(a, shapes):
    """Whether a computed y2's ``out=`` entry is empty (``shapes``: the shapes phase one
    receives; an uncomputed y2 reaches it as a one-element scratch tensor)."""
    return computed(a)[1] and 0 in (shapes or {}).get("y2", (1,))


def _returns_early(a, part, shapes, v2):
    """Why the op_api returns success before the L0 op, writing no output, for checked
    arguments ``a`` on ``part`` with outputs of ``shapes`` (None where it does not): V1 with
    x1, gamma or y2Out empty (aclnn_add_rms_norm_dynamic_quant.cpp's ``hasEmptyTensor``
    return, on every part: its Ascend 950 empty-gamma branch comes after it); V2 with x1, x2,
    gamma or y2Out empty (aclnn_add_rms_norm_dynamic_quant_v2.cpp), except on Ascend 950
    with gamma empty, where the empty kernel runs. x2 is x1's shape, gamma x1's last dim."""
    if v2 and part.arch3510 and 0 in a.gamma.shape:
        return None
    where = _OP_API + ("aclnn_add_rms_norm_dynamic_quant_v2.cpp" if v2 else
                       "aclnn_add_rms_norm_dynamic_quant.cpp") + " returns before the L0 op"
    if 0 in a.x1.shape:
        return f"not written for an empty x1 ({where})"
    if _empty_y2(a, shapes):
        return f"not written for an empty y2 ({where})"
    return None


def _any_when_empty(fits):
    """V2's rule for an ``out=`` entry: ``fits``'s, none where the op_api returns before the
    L0 op (:func:`_returns_early`: V2's op_api looks at no output but y2Out's emptiness
    first; V1's emulator checks the docs' relations first, and refuses an empty y2 beside a
    non-empty x1)."""
    def any_when_empty(a, given, part=None, shapes=None):
        if _returns_early(a, part or part_of(), shapes, True):
            return None
        return fits(a, given, part, shapes)
    return any_when_empty


def _unwritten(name, k, rule, v2):
    """Output ``name``'s ``unwritten`` (k: 0 y1 and scale1, 1 y2 and scale2, None x): why it
    is not written (None where it is): its output not computed (naming the op_api's rule
    ``rule``), or the op_api's return before the L0 op (:func:`_returns_early`), which
    leaves every output unwritten but an empty one, which has nothing to be written."""
    def unwritten(a, part, shapes):
        if k is not None and not computed(a)[k]:
            if getattr(a, "output_mask", None) is not None:
                return f"not computed: output_mask[{k}] is False ({rule})"
            return f"written only with both smooth scales given ({rule})"
        if 0 in shapes[name]:
            return None
        return _returns_early(a, part, shapes, v2)
    return unwritten


def smoke_case(shape, dtype, smooth=2, seed=0, beta=None, mask=None):
    """A smoke case ``(name, make)``: ``make()`` gives the inputs in declaration order for
    ``shape`` ("bf16" names bfloat16), gamma over the last dim, ``smooth`` smooth scales
    near 1 (0, 1, 2, or "2": smooth_scale2 alone), int8 results; V2's (``beta``: whether to
    give one, ``mask``: the output_mask) when ``beta`` is not None."""
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else np.dtype(dtype)
        rng = np.random.default_rng(shape[-1] + len(shape) + seed)
        n = shape[-1]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.25).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1.0 + 0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        s1 = (0.5 + rng.random(n, dtype=np.float32)).astype(dt)
        s2 = (0.5 + rng.random(n, dtype=np.float32)).astype(dt)
        s1 = s1 if smooth in (1, 2) else None
        s2 = s2 if smooth in (2, "2") else None
        if beta is None:
            return x1, x2, g, s1, s2, 1e-6, _INT8
        b = (0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt) if beta else None
        return x1, x2, g, s1, s2, b, 1e-6, mask, _INT8
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    extra = "" if beta is None else ("-beta" if beta else "") + (
        f"-mask{''.join('TF'[not b] for b in mask)}" if mask else "")
    smooth_name = "smooth2-only" if smooth == "2" else f"smooth{smooth}"
    return f"{name}{list(shape)} {smooth_name}{extra}", make


def _outputs(rule, v2):
    shaped = _any_when_empty if v2 else (lambda fits: fits)
    # the stage refusing y1's and y2's shapes after the op_api's checks: V1's ViewCopys
    # (561103), V2's tiling (561002)
    y = checked_later(_TILING if v2 else VIEW_COPY, shape=True)
    return (
        output("y1Out", shape=_y_shape(0), dtype=_y_dtype, fits=shaped(_y_fits(0)),
               unwritten=_unwritten("y1", 0, rule, v2), later=y),
        output("y2Out", shape=_y_shape(1), dtype=_y_dtype, fits=shaped(_y_fits(1)),
               unwritten=_unwritten("y2", 1, rule, v2), later=y),
        output("xOut", shape=shape_of("x1"), dtype=dtype_of("x1"), fits=shaped(x_fits),
               unwritten=_unwritten("x", None, rule, v2)),
        output("scale1Out", shape=_scale_out_shape(0), dtype=np.float32,
               fits=shaped(scale1_fits), unwritten=_unwritten("scale1", 0, rule, v2)),
        output("scale2Out", shape=_scale_out_shape(1), dtype=np.float32,
               fits=shaped(scale2_fits), unwritten=_unwritten("scale2", 1, rule, v2)),
    )


def _inputs():
    return (
        tensor("x1", dtypes=_HALVES),
        tensor("x2", like="x1", dtypes=_HALVES),
        tensor("gamma", like="x1", dtypes=_HALVES),
        tensor("smoothScale1Optional", optional=True, like="x1", dtypes=_HALVES),
        tensor("smoothScale2Optional", optional=True, like="x1", dtypes=_HALVES),
    )


_Y_DTYPE = dtype_option("y_dtype", Y_DTYPES, default=_INT8)
_Y_DTYPE_V2 = dtype_option("y_dtype", Y_DTYPES_V2, default=_INT8)
# 561103: the copies of the results into y1Out, y2Out and scale2Out (the ViewCopy's rules);
# 561003: a part or y dtype without a kernel (docs/emulator.md)
_RULE_CODES = (561103, 561003)
# the codes of its check's rules the device reaches after the op_api's: the tiling's and the
# kernel's lookup (docs/emulator.md rows 7-8 of V1, row 7 of V2)
_STAGED_CODES = _TILING + NO_KERNEL + (161002,)

ADD_RMS_NORM_DYNAMIC_QUANT = Declared(
    "aclnnAddRmsNormDynamicQuant",
    _inputs() + (double("epsilon", default=1e-6), _Y_DTYPE) + _outputs(_V1_RULE, False),
    check=add_rms_norm_dynamic_quant_check, reference=reference.add_rms_norm_dynamic_quant,
    error_scale=reference.add_rms_norm_dynamic_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16),
                 smoke_case((4, 3, 200), "bf16", smooth=1),
                 smoke_case((5, 96), np.float16, smooth=0)),
    rule_codes=_RULE_CODES, staged_codes=_STAGED_CODES + VIEW_COPY, parts=_KERNEL_PARTS)

ADD_RMS_NORM_DYNAMIC_QUANT_V2 = Declared(
    "aclnnAddRmsNormDynamicQuantV2",
    _inputs() + (tensor("betaOptional", optional=True, like="x1", dtypes=_HALVES),
                 double("epsilon", default=1e-6),
                 bool_array("outputMask", name="output_mask", optional=True, length=2,
                            items=("y1 and scale1", "y2 and scale2")),
                 _Y_DTYPE_V2) + _outputs(_V2_RULE, True),
    check=add_rms_norm_dynamic_quant_check, reference=reference.add_rms_norm_dynamic_quant,
    error_scale=reference.add_rms_norm_dynamic_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16, beta=True),
                 smoke_case((4, 3, 200), "bf16", smooth="2", beta=True, mask=(False, True)),
                 smoke_case((5, 96), np.float16, smooth=1, beta=False, mask=(True, True))),
    rule_codes=_RULE_CODES, staged_codes=_STAGED_CODES, parts=_KERNEL_PARTS)


@overload
def add_rms_norm_dynamic_quant(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray,
                               smooth_scale1: Optional[np.ndarray] = ...,
                               smooth_scale2: Optional[np.ndarray] = ...,
                               epsilon: float = ..., *, y_dtype: Any = ...,
                               stream: Optional["Stream"] = ..., out: OutArg = ...
                               ) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray,
                                          np.ndarray, Optional[np.ndarray]]: ...


@overload
def add_rms_norm_dynamic_quant(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                               smooth_scale1: Optional["DeviceTensor"] = ...,
                               smooth_scale2: Optional["DeviceTensor"] = ...,
                               epsilon: float = ..., *, y_dtype: Any = ...,
                               stream: Optional["Stream"] = ..., out: OutArg = ...
                               ) -> Tuple["DeviceTensor", Optional["DeviceTensor"],
                                          "DeviceTensor", "DeviceTensor",
                                          Optional["DeviceTensor"]]: ...


def add_rms_norm_dynamic_quant(x1: Operand, x2: Operand, gamma: Operand,
                               smooth_scale1: Optional[Operand] = None,
                               smooth_scale2: Optional[Operand] = None,
                               epsilon: float = 1e-6, *, y_dtype: Any = np.int8,
                               stream: Optional["Stream"] = None,
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

    ``y2`` and ``scale2`` are None unless both smooth scales are given (the device computes
    them only then); ``scale1`` has x1's leading dims. ``y1`` and ``y2`` have ``y_dtype``:
    ``np.int8`` (the default), or on Ascend 950 ``ml_dtypes.float8_e4m3fn`` /
    ``ml_dtypes.float8_e5m2`` (or their names), arrays of that ml_dtypes type, 127 above
    replaced by the format's largest value (448, 57344) and ``t / scale_k`` converted to it
    directly, to nearest even (docs/emulator.md); or :data:`acl_py.dtypes.HIFLOAT8` (or
    ``"hifloat8"``), 127 replaced by 32768 and ``t / scale_k`` rounded to the nearest HiF8
    value, ties away from zero, as uint8 codes (NumPy) or HIFLOAT8 DeviceTensors (decode with
    :func:`acl_py.dtypes.hifloat8_to_float32`). Another part refuses these ``y_dtype`` s
    (AclTypeError naming it; on DeviceTensors with the code the emulator refuses the call
    with, 561003: the device has no kernel for it). ``out=(y1, y2, x, scale1, scale2)``
    gives preallocated outputs of the same kind as the inputs.
    """
    return ADD_RMS_NORM_DYNAMIC_QUANT.call((x1, x2, gamma, smooth_scale1, smooth_scale2,
                                            epsilon, y_dtype), out=out, stream=stream)


@overload
def add_rms_norm_dynamic_quant_v2(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray,
                                  smooth_scale1: Optional[np.ndarray] = ...,
                                  smooth_scale2: Optional[np.ndarray] = ...,
                                  beta: Optional[np.ndarray] = ..., epsilon: float = ...,
                                  output_mask: Optional[Sequence[bool]] = ..., *,
                                  y_dtype: Any = ..., stream: Optional["Stream"] = ...,
                                  out: OutArg = ...
                                  ) -> Tuple[Optional[np.ndarray], Optional[np.ndarray],
                                             np.ndarray, Optional[np.ndarray],
                                             Optional[np.ndarray]]: ...


@overload
def add_rms_norm_dynamic_quant_v2(x1: "DeviceTensor", x2: "DeviceTensor",
                                  gamma: "DeviceTensor",
                                  smooth_scale1: Optional["DeviceTensor"] = ...,
                                  smooth_scale2: Optional["DeviceTensor"] = ...,
                                  beta: Optional["DeviceTensor"] = ..., epsilon: float = ...,
                                  output_mask: Optional[Sequence[bool]] = ..., *,
                                  y_dtype: Any = ..., stream: Optional["Stream"] = ...,
                                  out: OutArg = ...
                                  ) -> Tuple[Optional["DeviceTensor"],
                                             Optional["DeviceTensor"], "DeviceTensor",
                                             Optional["DeviceTensor"],
                                             Optional["DeviceTensor"]]: ...


def add_rms_norm_dynamic_quant_v2(x1: Operand, x2: Operand, gamma: Operand,
                                  smooth_scale1: Optional[Operand] = None,
                                  smooth_scale2: Optional[Operand] = None,
                                  beta: Optional[Operand] = None, epsilon: float = 1e-6,
                                  output_mask: Optional[Sequence[bool]] = None, *,
                                  y_dtype: Any = np.int8, stream: Optional["Stream"] = None,
                                  out: OutArg = None) -> Any:
    """:func:`add_rms_norm_dynamic_quant` through ``aclnnAddRmsNormDynamicQuantV2``: ``beta``
    (gamma's shape and x1's dtype; None: none) is added to the normed row before the smooth
    scales, ``y = x * rstd * gamma + beta``, in float32 on every kernel; ``output_mask``
    ``(y1, y2)``, two bools, says which outputs are computed: y1 and scale1 with
    ``output_mask[0]``, y2 and scale2 with ``output_mask[1]`` (y2 from ``y * smooth_scale2``,
    or ``y`` itself without it). None (the default) computes y1 always and y2 with both smooth
    scales, as :func:`add_rms_norm_dynamic_quant`. A mask must compute one output at least
    and each given smooth scale's output; ``smooth_scale2`` without ``smooth_scale1`` needs
    a mask.

    An output not computed is None in the result, its y and scale both (the device would
    copy one undefined element into its out tensor: acl-py gives it a scratch one, and an
    ``out=`` entry for it, which must hold one element, is left as it was). ``y_dtype`` and
    ``out=`` as :func:`add_rms_norm_dynamic_quant`'s, and also :data:`acl_py.dtypes.INT4` (or
    ``"int4"``) on every part with a kernel, x1's last dim even: Q = 7 in place of 127, each
    ``t / scale_k`` rounded to nearest even, as int8 values (NumPy) or INT4 DeviceTensors (two
    to a byte).
    """
    return ADD_RMS_NORM_DYNAMIC_QUANT_V2.call((x1, x2, gamma, smooth_scale1, smooth_scale2,
                                               beta, epsilon, output_mask, y_dtype),
                                              out=out, stream=stream)


class AddRmsNormDynamicQuant(Plan):
    """An :func:`add_rms_norm_dynamic_quant` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y1``, ``y2`` (None without both smooth scales; both
    of ``y_dtype``), ``x``, ``scale1``, ``scale2`` (as y2); ``run(stream)`` enqueues phase two
    only."""

    declared = ADD_RMS_NORM_DYNAMIC_QUANT
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 smooth_scale1: Optional["DeviceTensor"] = None,
                 smooth_scale2: Optional["DeviceTensor"] = None, epsilon: float = 1e-6, *,
                 y_dtype: Any = np.int8, out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, smooth_scale1, smooth_scale2, epsilon, y_dtype), out)


class AddRmsNormDynamicQuantV2(Plan):
    """An :func:`add_rms_norm_dynamic_quant_v2` plan (see :class:`AddRmsNormDynamicQuant`):
    an output ``output_mask`` does not compute is None."""

    declared = ADD_RMS_NORM_DYNAMIC_QUANT_V2
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 smooth_scale1: Optional["DeviceTensor"] = None,
                 smooth_scale2: Optional["DeviceTensor"] = None,
                 beta: Optional["DeviceTensor"] = None, epsilon: float = 1e-6,
                 output_mask: Optional[Sequence[bool]] = None, *, y_dtype: Any = np.int8,
                 out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, smooth_scale1, smooth_scale2, beta, epsilon,
                       output_mask, y_dtype), out)
