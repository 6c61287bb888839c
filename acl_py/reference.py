"""NumPy float64 references of LayerNorm (forward), LayerNormBackward, RmsNorm, its
backward (RmsNormGrad), AddRmsNorm, GroupNorm, GroupNormSilu, AddLayerNorm, DeepNorm and
BatchNorm, and the tolerances results are judged by.

Forward (:func:`layer_norm`), with the same ``M``/``N`` split as below::

    mean = mean_R(input),  rstd = 1 / sqrt(mean_R((input - mean)^2) + eps)
    out  = (input - mean) * rstd * weight + bias

RmsNorm (:func:`rms_norm`, over gamma's dims): ``rstd = 1 / sqrt(mean_R(x^2) + epsilon)``,
``y = x * rstd * gamma``; its error scale (:func:`rms_norm_error_scale`) is ``|y|``'s own
magnitude (the sum of squares has no cancellation; for float16 x also the Atlas training
parts' float16 rounding of ``x * rstd``) and ``rstd``. Its backward
(:func:`rms_norm_grad`, with the saved ``rstd``): ``xr = x * rstd``,
``dx = (dy * gamma - xr * mean_R(dy * gamma * xr)) * rstd``, ``dgamma = sum_A(dy * xr)``; its
error scale (:func:`rms_norm_grad_error_scale`) is the same with every term made non-negative.
AddRmsNorm (:func:`add_rms_norm`): RmsNorm of ``x = x1 + x2``, returned with ``x``.
GroupNorm (:func:`group_norm`): LayerNorm's formulas over each sample's groups of channels,
``mean``/``rstd`` shaped ``(N, group)``; its error scale (:func:`group_norm_error_scale`)
carries the cancellation of the device's one-pass variance. GroupNormSilu
(:func:`group_norm_silu`): GroupNorm's ``out`` through ``silu(y) = y / (1 + exp(-y))``.
AddLayerNorm (:func:`add_layer_norm`): the forward LayerNorm over gamma's dims of
``x = x1 + x2 (+ bias)``, returned with ``x``. Its backward (:func:`add_layer_norm_grad`):
LayerNorm's backward below of ``x = x1 + x2`` with weight ``gamma``, ``dsum`` (optional) added
to ``dx``. DeepNorm (:func:`deep_norm`): the forward LayerNorm over gamma's dims of
``x * alpha + gx``. BatchNorm (:func:`batch_norm`): per channel (dim 1) over every other
dim, with the batch's statistics (training, the running ones updated) or the running ones
(inference). InstanceNorm (:func:`instance_norm`): LayerNorm's formulas over each (sample,
channel) pair's ``H * W`` values of a 4-D input (NCHW or NHWC), returning the biased variance
rather than rstd.

LayerNorm's error scale (:func:`layer_norm_error_scale`): ``(|input| + |mean| +
mean_R(|input|)) * rstd * |weight| + |bias|`` for ``out`` (the mean's and rstd's own errors, carried through),
``mean_R(|input|)`` for ``mean`` and ``rstd`` for ``rstd``.

Backward:

Written from the operator's documented formulas (hicann/ops-nn norm/layer_norm_grad_v3 docs;
docs/emulator.md, "aclnnLayerNormBackward"), independently of
the emulator's C kernel: tests, samples and ``acl-py smoke`` compare the operator's outputs
with it. With ``input`` of shape ``[A1..Ai, R1..Rj]`` and ``normalized_shape = [R1..Rj]``,
``M = A1*..*Ai``, ``N = R1*..*Rj``, ``x_hat = (input - mean) * rstd``, ``g = grad_out * weight``::

    grad_input  = rstd * (g - mean_R(g) - x_hat * mean_R(g * x_hat))
    grad_weight = sum_A(grad_out * x_hat)
    grad_bias   = sum_A(grad_out)

Everything is computed in float64 from the values exactly as given (fp16/bf16 inputs are
widened exactly), so the reference carries no rounding of its own worth mentioning.

The device's numbers (hicann/ops-nn norm/layer_norm_grad_v3, judged in docs/emulator.md):
every input is widened to float32 and every step computed in float32, whatever the input
dtypes. ``grad_input`` is then rounded to the input's dtype (the kernel's output; bfloat16
rounds to nearest with ties away from zero on Atlas A2/A3, ties to even on Ascend 950) and
cast to ``grad_input``'s dtype; ``grad_weight``/``grad_bias`` stay float32 until their cast
to the output's dtype. :func:`device_rounding` applies that chain to float64 values, and
:func:`rounding_dtype` names the intermediate dtype of each output.

Tolerances (:func:`error_bound`). The operator accumulates in float32, so its error is
proportional to the magnitude of the terms it sums, not to the result (``g - mean_R(g)``
cancels). Each output element may differ from the reference by::

    RTOL[input dtype] * magnitude  +  the rounding of the device's chain at the value

where ``magnitude`` (:func:`error_scale`) is the same formula with every term replaced by its
absolute value and ``x_hat`` by ``(|input| + |mean|) * rstd`` (the subtraction's own scale),
and the rounding is half an ulp of the intermediate dtype plus, when the output dtype cannot
hold every intermediate value exactly, half an ulp of the output dtype.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import dtypes


__all__ = [
    "RTOL", "OUTPUTS", "layer_norm", "layer_norm_error_scale", "layer_norm_backward",
    "layer_norm_stats", "error_scale", "error_bound", "max_error_ratio", "max_abs_error",
    "assert_close",
    "rounding_dtype", "device_rounding", "half_ulp", "rms_norm", "rms_norm_error_scale",
    "add_rms_norm", "add_rms_norm_error_scale", "gemma_rms_norm", "gemma_rms_norm_error_scale",
    "add_layer_norm", "add_layer_norm_error_scale", "deep_norm", "deep_norm_error_scale",
    "add_layer_norm_grad", "add_layer_norm_grad_error_scale", "deep_norm_grad",
    "deep_norm_grad_error_scale",
    "rms_norm_grad", "rms_norm_grad_error_scale", "group_norm", "group_norm_error_scale",
    "group_norm_silu", "group_norm_silu_error_scale", "group_norm_backward",
    "group_norm_backward_error_scale", "instance_norm", "instance_norm_error_scale",
    "group_norm_backward_error_scale", "rms_norm_quant", "rms_norm_quant_error_scale",
    "round_half_even", "QUANT_STEP", "add_rms_norm_quant", "float8_step", "quantize",
    "add_rms_norm_quant_error_scale", "DYNAMIC_QUANT_MAX", "add_rms_norm_dynamic_quant",
    "add_rms_norm_dynamic_quant_error_scale", "add_layer_norm_quant",
    "add_layer_norm_quant_error_scale",
]

OUTPUTS = ("grad_input", "grad_weight", "grad_bias")

# Relative tolerance of the float32 computation, applied to the term magnitude, by the dtype of
# `input`: the same for all three, since the device widens fp16/bf16 inputs to float32 before
# any arithmetic (the kernel's CastToFloat) -- a few hundred float32 ulps of the magnitude
# (sums over up to millions of elements). The rounding of 16-bit results is the separate,
# explicit term of error_bound.
RTOL = {"float32": 1e-5, "float16": 1e-5, "bfloat16": 1e-5}

# (mantissa bits, smallest normal exponent) of the output dtypes, for half-ulp bounds.
_FLOAT_FORMAT = {"float64": (52, -1022), "float32": (23, -126), "float16": (10, -14),
                 "bfloat16": (7, -126), "float8_e4m3fn": (3, -6), "float8_e5m2": (2, -14)}


def _f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64, copy=False)


def _dims(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)):
        normalized_shape = (normalized_shape,)
    return tuple(int(d) for d in normalized_shape)


def _split(x: np.ndarray, normalized_shape) -> tuple[tuple[int, ...], int, int]:
    ns = _dims(normalized_shape)
    if not 1 <= len(ns) <= x.ndim or x.shape[x.ndim - len(ns):] != ns:
        raise ValueError(f"normalized_shape {ns} is not the trailing dims of input {x.shape}")
    return ns, math.prod(x.shape[:x.ndim - len(ns)]), math.prod(ns)


def _prepare(grad_out, input, normalized_shape, mean, rstd, weight):
    x = _f64(input)
    ns, m, n = _split(x, normalized_shape)
    dy = _f64(grad_out)
    if dy.shape != x.shape:
        raise ValueError(f"grad_out shape {dy.shape} != input shape {x.shape}")
    mu, rs = _f64(mean), _f64(rstd)
    if mu.size != m or rs.size != m:
        raise ValueError(f"mean/rstd must hold M={m} elements, got {mu.size}/{rs.size}")
    w = np.ones(n) if weight is None else _f64(weight).reshape(n)
    return ns, m, n, x.reshape(m, n), dy.reshape(m, n), mu.reshape(m, 1), rs.reshape(m, 1), w


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight=None, bias=None,
                        output_mask: Sequence[bool] = (True, True, True)):
    """The three gradients in float64, ``None`` where ``output_mask`` is false. Shapes:
    grad_input = input's, grad_weight = grad_bias = normalized_shape. ``bias`` is accepted for
    symmetry with the operator and never read (the gradients do not depend on it)."""
    del bias
    ns, m, n, x, dy, mu, rs, w = _prepare(grad_out, input, normalized_shape, mean, rstd, weight)
    shape = np.shape(input)
    xhat = (x - mu) * rs
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        g = dy * w
        if n:
            grad_input = rs * (g - g.mean(axis=1, keepdims=True)
                               - xhat * (g * xhat).mean(axis=1, keepdims=True))
        else:
            grad_input = g
        grad_input = grad_input.reshape(shape)
    # M == 0: the sums over A are empty, hence zeros (as the vendor's op_api fills them).
    if output_mask[1]:
        grad_weight = (dy * xhat).sum(axis=0).reshape(ns)
    if output_mask[2]:
        grad_bias = dy.sum(axis=0).reshape(ns)
    return grad_input, grad_weight, grad_bias


def error_scale(grad_out, input, normalized_shape, mean, rstd, weight=None,
                output_mask: Sequence[bool] = (True, True, True)):
    """Per element, the magnitude of the terms each output is computed from (the reference's
    formulas with every term made non-negative): the scale a float32-accumulated result's
    rounding error is proportional to. ``None`` where the mask is false."""
    ns, m, n, x, dy, mu, rs, w = _prepare(grad_out, input, normalized_shape, mean, rstd, weight)
    rs = np.abs(rs)
    xabs = (np.abs(x) + np.abs(mu)) * rs
    ady = np.abs(dy)
    out = [None, None, None]
    if output_mask[0]:
        g = ady * np.abs(w)
        if n:
            gi = rs * (g + g.mean(axis=1, keepdims=True)
                       + xabs * (g * xabs).mean(axis=1, keepdims=True))
        else:
            gi = g
        out[0] = gi.reshape(np.shape(input))
    if output_mask[1]:
        out[1] = (ady * xabs).sum(axis=0).reshape(ns)
    if output_mask[2]:
        out[2] = ady.sum(axis=0).reshape(ns)
    return tuple(out)


def _forward(input, normalized_shape, weight, bias, eps):
    x = _f64(input)
    ns, m, n = _split(x, normalized_shape)
    stat_shape = x.shape[:x.ndim - len(ns)] + (1,) * len(ns)
    x2 = x.reshape(m, n)
    w = np.ones(n) if weight is None else _f64(weight).reshape(n)
    b = np.zeros(n) if bias is None else _f64(bias).reshape(n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x2.mean(axis=1, keepdims=True) if n else np.zeros((m, 1))
        var = ((x2 - mean) ** 2).mean(axis=1, keepdims=True) if n else np.full((m, 1), np.nan)
        rstd = 1.0 / np.sqrt(var + eps)
    return x, x2, w, b, mean, rstd, stat_shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """``(out, mean, rstd)`` of the forward LayerNorm in float64: ``out`` has input's shape,
    ``mean``/``rstd`` the batch dims followed by ones (``[A1..Ai, 1..1]``, what CANN writes).
    Absent ``weight``/``bias`` are ones/zeros. Rows of zero length (N == 0) have mean 0 and
    rstd NaN, as CANN fills them."""
    x, x2, w, b, mean, rstd, stat_shape = _forward(input, normalized_shape, weight, bias, eps)
    out = (x2 - mean) * rstd * w + b
    return out.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def layer_norm_stats(input, normalized_shape, eps: float = 1e-5):
    """``(mean, rstd)`` of the forward LayerNorm in float64 (:func:`layer_norm`'s), shaped
    like CANN's saved statistics: the batch dims followed by ones (``[A1..Ai, 1..1]``)."""
    x, _, _, _, mean, rstd, stat_shape = _forward(input, normalized_shape, None, None, eps)
    return mean.reshape(stat_shape), rstd.reshape(stat_shape)


def layer_norm_error_scale(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Per element of ``(out, mean, rstd)``, the magnitude a float32-accumulated result's
    rounding error is proportional to (see the module docstring)."""
    x, x2, w, b, mean, rstd, stat_shape = _forward(input, normalized_shape, weight, bias, eps)
    ax = np.abs(x2)
    amean = ax.mean(axis=1, keepdims=True) if x2.shape[1] else np.zeros_like(mean)
    rs = np.abs(rstd)
    out = (ax + np.abs(mean) + amean) * rs * np.abs(w) + np.abs(b)
    return out.reshape(x.shape), amean.reshape(stat_shape), rs.reshape(stat_shape)


def _rms_split(x, gamma):
    """x as float64 ``(M, N)`` rows over gamma's dims (its trailing dims), gamma as ``N``
    values, and rstd's shape (x's batch dims, then ones)."""
    xf = _f64(x)
    g = _f64(gamma)
    ns, m, n = _split(xf, g.shape)
    return xf, xf.reshape(m, n), g.reshape(n), xf.shape[:xf.ndim - len(ns)] + (1,) * len(ns)


def _rstd(x2, epsilon):
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt((x2 * x2).mean(axis=1, keepdims=True) + epsilon)


def rms_norm(x, gamma, epsilon: float = 1e-6):
    """``(y, rstd)`` of RmsNorm in float64 over gamma's dims (the trailing dims of ``x``):
    ``rstd = 1 / sqrt(mean_R(x^2) + epsilon)``, ``y = x * rstd * gamma``; ``rstd`` shaped x's
    batch dims followed by ones, as CANN writes it."""
    xf, x2, g, rstd_shape = _rms_split(x, gamma)
    rstd = _rstd(x2, epsilon)
    return (x2 * rstd * g).reshape(xf.shape), rstd.reshape(rstd_shape)


def _rms_scale(x, gamma, epsilon):
    xf, x2, g, rstd_shape = _rms_split(x, gamma)
    rstd = _rstd(x2, epsilon)
    return (np.abs(x2) * rstd * np.abs(g)).reshape(xf.shape), rstd.reshape(rstd_shape)


def rms_norm_error_scale(x, gamma, epsilon: float = 1e-6):
    """Per element of ``(y, rstd)``, the magnitude a float32-accumulated result's rounding
    error is proportional to: every term of the sum of squares is non-negative, so the error
    is relative: ``y``'s own magnitude ``|x| * rstd * |gamma|``, and ``rstd``. For float16 x
    the Atlas training parts' whole-reduce-sum kernel rounds ``x * rstd`` to float16 before
    multiplying by gamma (in float16): up to ``|gamma|`` times that rounding's error
    (``2^-11 * |x * rstd|``, at least float16's smallest half spacing) more in ``y``, carried
    as magnitude."""
    y, rstd = _rms_scale(x, gamma, epsilon)
    if np.asarray(x).dtype == np.float16:
        xf, x2, g, _ = _rms_split(x, gamma)
        t = np.abs(x2) * _rstd(x2, epsilon)
        cast = 2.0 ** -(_FLOAT_FORMAT["float16"][0] + 1) * t + half_ulp(0.0, "float16")
        y = y + (cast * np.abs(g)).reshape(xf.shape) / RTOL["float16"]
    return y, rstd


# A quantized (integer) output is held to one quantization step: the reference quantizes the
# float64 value, the device its float32 chain (rounded to float16 on the way), and where that
# chain lands near a half the two may round to neighbouring integers.
QUANT_STEP = 1.0


def round_half_even(v) -> np.ndarray:
    """``v`` rounded to the nearest integer, ties to even (NumPy's ``rint``), as float64."""
    return np.rint(_f64(v))


def quantize(v, y_dtype="int8", quant_min: int = -128) -> np.ndarray:
    """The float64 values ``v`` as the quantizing operators' results of ``y_dtype`` hold them,
    in float64: int8 ``clip(rint(v), quant_min, 127)``, ties to even; a float8 dtype
    (``ml_dtypes.float8_e4m3fn`` / ``float8_e5m2``): ``v`` itself clipped to the dtype's
    largest finite value, unrounded (the device's rounding to the float8 grid is within
    :func:`float8_step` of it); ``"hifloat8"`` (:data:`~acl_py.dtypes.HIFLOAT8`): the HIFLOAT8
    values nearest ``v`` (:func:`~acl_py.dtypes.float32_to_hifloat8`: ties away from zero,
    saturating at 2^15); ``"int4"`` (:data:`~acl_py.dtypes.INT4`): ``clip(rint(v), -8, 7)``,
    ties to even."""
    ydt = dtypes.element_type(y_dtype, "y_dtype")
    if ydt is dtypes.HIFLOAT8:
        with np.errstate(over="ignore"):     # beyond float32: saturates all the same
            return dtypes.hifloat8_table()[dtypes.float32_to_hifloat8(v)]
    if ydt is dtypes.INT4:
        return np.clip(round_half_even(v), -8, 7)
    if ydt == np.int8:
        return np.clip(round_half_even(v), quant_min, 127)
    if ydt.name in ("float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes  # lazily: importing it takes a second (acl_py.dtypes)
        big = float(ml_dtypes.finfo(ydt).max)
        return np.clip(v, -big, big)
    raise ValueError(f"y_dtype {y_dtype!r} must be int8, a float8 dtype, 'hifloat8' or "
                     f"'int4'")


def rms_norm_quant(x, gamma, beta, scale, offset, epsilon: float = 1e-6,
                   quant_min: int = -128, per_column: bool = False, y_dtype="int8"):
    """``(y,)`` of RmsNormQuant in float64, y as ``y_dtype`` values held in float64
    (:func:`quantize`): ``n = x * rstd * gamma + beta`` (:func:`rms_norm`'s rstd over x's last
    dim, gamma and beta flattened to it), ``v = n / scale[0] + offset[0]``, int8 ``y =
    clip(rint(v), quant_min, 127)``, ties to even: the device reads the first element of
    ``scale`` and ``offset`` only, except with ``per_column`` (Ascend 950's kernel, for a
    scale of x's trailing dims), where column j takes ``scale[j]`` and ``offset[j]`` of their
    first N elements. The float8 and ``"hifloat8"`` results are Ascend 950's."""
    xf = _f64(x)
    g = _f64(gamma).reshape(-1)
    b = _f64(beta).reshape(-1)
    y, _ = rms_norm(xf, g, epsilon)
    count = g.size if per_column else 1
    v = (y + b) / _f64(scale).reshape(-1)[:count] + _f64(offset).reshape(-1)[:count]
    return (quantize(v, y_dtype, quant_min),)


def rms_norm_quant_error_scale(x, gamma, beta, scale, offset, epsilon: float = 1e-6,
                              y_dtype="int8"):
    """The magnitude of y's error: unused for a quantized output, which
    :func:`error_bound` holds to :data:`QUANT_STEP`."""
    return (np.ones(np.shape(x)),)


def add_rms_norm_quant(x1, x2, gamma, scales1, scales2=None, zero_points1=None,
                       zero_points2=None, axis: int = -1, epsilon: float = 1e-6,
                       div_mode: bool = True, y_dtype="int8"):
    """``(y1, y2, x)`` of AddRmsNormQuant in float64, y1 and y2 as ``y_dtype`` values held in
    float64 (y2 None without ``scales2``): ``x = x1 + x2``, ``y`` :func:`rms_norm` of ``x``
    over gamma's dims, ``vk = y / scales_k + zero_points_k`` (``y * scales_k`` when
    ``div_mode`` is false; a missing zero point is 0), quantized by :func:`quantize` (int8:
    ``clip(rint(vk), -128, 127)``, ties to even; the float8 and ``"hifloat8"`` results are
    Ascend 950's). ``axis`` has no effect (the vendor supports -1 only)."""
    x = _f64(x1) + _f64(x2)
    y, _ = rms_norm(x, gamma, epsilon)

    def quantized(scales, zero_points):
        s = _f64(scales)
        v = y / s if div_mode else y * s
        if zero_points is not None:
            v = v + _f64(zero_points)
        return quantize(v, y_dtype)

    y2 = None if scales2 is None else quantized(scales2, zero_points2)
    return quantized(scales1, zero_points1), y2, x


def float8_step(v, dtype) -> np.ndarray:
    """The spacing of the float8 ``dtype``'s grid at the magnitudes of ``v`` (float64): the
    distance between the neighbours a rounding to it chooses from, so a result rounded from a
    value within a few float32 ulps of ``v`` is within one step of it. ``"hifloat8"``
    (:data:`~acl_py.dtypes.HIFLOAT8`): the wider of the two gaps of its value grid beside
    ``|v|`` (the tapered format's spacing changes within a binade's neighbourhood)."""
    if isinstance(dtype, (str, dtypes.AclDtype)) and \
            dtypes.element_type(dtype) is dtypes.HIFLOAT8:
        return _hifloat8_step(v)
    import ml_dtypes  # lazily: importing it takes a second (acl_py.dtypes)
    info = ml_dtypes.finfo(np.dtype(dtype))
    a = np.abs(_f64(v))
    with np.errstate(divide="ignore"):
        binade = np.exp2(np.floor(np.log2(np.where(a > 0, a, 1.0))))
    return np.maximum(binade * float(info.eps), float(info.smallest_subnormal))


def _hifloat8_step(v):
    table = dtypes.hifloat8_table()
    grid = np.unique(np.abs(table[np.isfinite(table)]))      # 0 .. 2^15, ascending
    gaps = np.diff(grid)
    i = np.clip(np.searchsorted(grid, np.abs(_f64(v))), 1, len(grid) - 1)
    return np.maximum(gaps[i - 1], gaps[np.minimum(i, len(gaps) - 1)])


def add_rms_norm_quant_error_scale(x1, x2, gamma, scales1, scales2=None, zero_points1=None,
                                   zero_points2=None, axis: int = -1, epsilon: float = 1e-6,
                                   div_mode: bool = True, y_dtype="int8"):
    """Per element of ``(y1, y2, x)``, the magnitude the device's error is proportional to:
    unused for the quantized outputs (:func:`error_bound` holds them to :data:`QUANT_STEP`),
    ``|x1| + |x2|`` for ``x``."""
    ones = np.ones(np.shape(x1))
    return ones, None if scales2 is None else ones, np.abs(_f64(x1)) + np.abs(_f64(x2))



def add_layer_norm_quant(x1, x2, gamma, beta, bias=None, scales1=None, scales2=None,
                         zero_points1=None, zero_points2=None, quant_mode: str = "static",
                         epsilon: float = 1e-5, additional_output: bool = True,
                         div_mode: bool = True):
    """``(y1, y2, x, out_scales1, out_scales2)`` of AddLayerNormQuant in float64, y1 and y2 as
    int8 values held in float64: ``x = x1 + x2 (+ bias)`` (bias of gamma's shape or of x1's),
    ``y`` :func:`layer_norm` of ``x`` over gamma's dims with gamma and beta. Static mode
    (the out scales None): ``vk = y / scales_k + zero_points_k`` (``y * scales_k`` when
    ``div_mode`` is false; a missing zero point is 0), ``clip(rint(vk), -128, 127)``, ties to
    even (:func:`quantize`); y2 None without ``scales2``. Dynamic mode: ``tk = y *
    scales_k`` (``y`` without scales1), per row ``out_scales_k = max|tk| / 127`` and ``yk = rint(tk / out_scales_k)``;
    y2 and out_scales2 None without ``scales2``. ``additional_output`` has no effect (x is
    always given)."""
    del additional_output
    g = _f64(gamma)
    x = _f64(x1) + _f64(x2)
    if bias is not None:
        x = x + _f64(bias)
    y, _, _ = layer_norm(x, g.shape, g, _f64(beta), epsilon)
    if quant_mode == "dynamic":
        def dynamic(scales):
            t = y if scales is None else y * _f64(scales)
            scale = np.max(np.abs(t), axis=-1) / DYNAMIC_QUANT_MAX
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(scale[..., None] > 0, t / scale[..., None], 0.0)
            return quantize(q), scale

        y1, o1 = dynamic(scales1)
        y2, o2 = (None, None) if scales2 is None else dynamic(scales2)
        return y1, y2, x, o1, o2

    def static(scales, zero_points):
        s = _f64(scales)
        v = y / s if div_mode else y * s
        if zero_points is not None:
            v = v + _f64(zero_points)
        return quantize(v)

    y2 = None if scales2 is None else static(scales2, zero_points2)
    return static(scales1, zero_points1), y2, x, None, None


def add_layer_norm_quant_error_scale(x1, x2, gamma, beta, bias=None, scales1=None,
                                     scales2=None, zero_points1=None, zero_points2=None,
                                     quant_mode: str = "static", epsilon: float = 1e-5,
                                     additional_output: bool = True, div_mode: bool = True):
    """Per element of ``(y1, y2, x, out_scales1, out_scales2)``, the magnitude the device's
    error is proportional to: unused for the quantized outputs (:func:`error_bound` holds them
    to :data:`QUANT_STEP`), ``|x1| + |x2| (+ |bias|)`` for ``x``, each out scale's own value
    (dynamic mode)."""
    ref = add_layer_norm_quant(x1, x2, gamma, beta, bias, scales1, scales2, zero_points1,
                               zero_points2, quant_mode, epsilon, additional_output, div_mode)
    ones = np.ones(np.shape(x1))
    mag = np.abs(_f64(x1)) + np.abs(_f64(x2))
    if bias is not None:
        mag = mag + np.abs(_f64(bias))
    return (ones, None if ref[1] is None else ones, mag,
            None if ref[3] is None else np.abs(ref[3]),
            None if ref[4] is None else np.abs(ref[4]))

# The largest magnitude a per-row dynamic int8 (int4) quantization maps its row's largest
# value to.
DYNAMIC_QUANT_MAX = 127.0
DYNAMIC_QUANT_MAX_INT4 = 7.0


def add_rms_norm_dynamic_quant(x1, x2, gamma, smooth_scale1=None, smooth_scale2=None,
                               epsilon: float = 1e-6, y_dtype="int8", beta=None,
                               output_mask=None):
    """``(y1, y2, x, scale1, scale2)`` of AddRmsNormDynamicQuant in float64, y1 and y2 as
    ``y_dtype`` values held in float64 (y2 and scale2 None unless both smooth scales are
    given): ``x = x1 + x2``, ``y`` :func:`rms_norm` of ``x`` over its last dim, per output k
    ``t = y * smooth_scale_k`` (``y`` without smooth_scale1), per row ``scale_k = max|t| / Q``
    with Q the largest magnitude of ``y_dtype`` (:data:`DYNAMIC_QUANT_MAX` for int8; 448, 57344
    and 32768 for Ascend 950's float8_e4m3fn, float8_e5m2 and ``"hifloat8"`` results, 7 for
    V2's ``"int4"``) and ``q = t / scale_k``; int8 and int4: ``rint(q)``, ties to even (within
    [-Q, Q] by construction); a float8 dtype: ``q`` itself, unrounded (the device's rounding
    to the grid is within :func:`float8_step` of it); ``"hifloat8"``: the HIFLOAT8 values
    nearest ``q``.
    AddRmsNormDynamicQuantV2: ``beta`` (per channel) is added to ``y`` before the smooth
    scales; ``output_mask`` ``(out1, out2)`` says which of y1/scale1 and y2/scale2 are
    computed (the other None), y2 then ``y * smooth_scale2`` (``y`` without it)."""
    ydt = dtypes.element_type(y_dtype, "y_dtype")
    if ydt is dtypes.HIFLOAT8:
        quant_max = 32768.0
    elif ydt is dtypes.INT4:
        quant_max = DYNAMIC_QUANT_MAX_INT4
    elif ydt == np.int8:
        quant_max = DYNAMIC_QUANT_MAX
    else:
        import ml_dtypes  # lazily: importing it takes a second (acl_py.dtypes)
        quant_max = float(ml_dtypes.finfo(ydt).max)
    x = _f64(x1) + _f64(x2)
    y, _ = rms_norm(x, gamma, epsilon)
    if beta is not None:
        y = y + _f64(beta)

    def per_row(smooth):      # one output: its values as y_dtype holds them, its scales
        t = y if smooth is None else y * _f64(smooth)
        scale = np.max(np.abs(t), axis=-1) / quant_max
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(scale[..., None] > 0, t / scale[..., None], 0.0)
        return quantize(q, y_dtype), scale

    if output_mask is None:
        output_mask = (True, smooth_scale1 is not None and smooth_scale2 is not None)
    y1, s1 = per_row(smooth_scale1) if output_mask[0] else (None, None)
    y2, s2 = per_row(smooth_scale2) if output_mask[1] else (None, None)
    return y1, y2, x, s1, s2


def add_rms_norm_dynamic_quant_error_scale(x1, x2, gamma, smooth_scale1=None,
                                           smooth_scale2=None, epsilon: float = 1e-6,
                                           y_dtype="int8", beta=None, output_mask=None):
    """Per element of ``(y1, y2, x, scale1, scale2)``, the magnitude the device's error is
    proportional to: unused for the quantized outputs (:func:`error_bound` holds them to
    :data:`QUANT_STEP`), ``|x1| + |x2|`` for ``x``, each scale's own value for the scales (a
    float32 chain over 16-bit inputs: the input dtype's ``RTOL`` of it); None for an output
    not computed (:func:`add_rms_norm_dynamic_quant`'s)."""
    y1, y2, _, s1, s2 = add_rms_norm_dynamic_quant(x1, x2, gamma, smooth_scale1, smooth_scale2,
                                                   epsilon, y_dtype, beta, output_mask)
    ones = np.ones(np.shape(x1))
    return (None if y1 is None else ones, None if y2 is None else ones,
            np.abs(_f64(x1)) + np.abs(_f64(x2)), None if s1 is None else np.abs(s1),
            None if s2 is None else np.abs(s2))


def gemma_rms_norm(x, gamma, epsilon: float = 1e-6):
    """``(y, rstd)`` of Gemma's RmsNorm in float64: :func:`rms_norm` with ``1 + gamma`` as the
    scale, ``y = x * rstd * (1 + gamma)``."""
    return rms_norm(x, _f64(gamma) + 1, epsilon)


def gemma_rms_norm_error_scale(x, gamma, epsilon: float = 1e-6):
    """:func:`rms_norm_error_scale` with ``1 + gamma`` as the scale (the device rounds
    ``1 + gamma`` to float32: one more float32 rounding, within ``RTOL``), without its
    float16 widening (no kernel on the Atlas training parts)."""
    return _rms_scale(x, _f64(gamma) + 1, epsilon)


def add_rms_norm(x1, x2, gamma, epsilon: float = 1e-6):
    """``(y, rstd, x)`` of AddRmsNorm in float64: ``x = x1 + x2``, then :func:`rms_norm` of
    ``x`` over gamma's dims (``rstd`` shaped x's batch dims followed by ones)."""
    x = _f64(x1) + _f64(x2)
    y, rstd = rms_norm(x, gamma, epsilon)
    return y, rstd, x


def add_rms_norm_error_scale(x1, x2, gamma, epsilon: float = 1e-6):
    """Per element of ``(y, rstd, x)``, the magnitude the device's error is proportional to:
    :func:`rms_norm_error_scale` of ``x1 + x2``, and ``|x1| + |x2|`` for ``x``. For 16-bit
    inputs the device rounds ``x1 + x2`` (the x its norm is taken over, on Atlas A2/A3) and
    ``x * rstd`` to that dtype before the final rounding: up to ``2^-p`` more relative error
    in ``y`` (p the dtype's mantissa bits) and ``2^-(p+1)`` in ``rstd``, carried here as
    magnitude (``RTOL`` times it is that error)."""
    f1, f2 = _f64(x1), _f64(x2)
    ys, rs = rms_norm_error_scale(f1 + f2, gamma, epsilon)
    name = _dtype_name(np.asarray(x1).dtype)
    if name != "float32":
        unit = 2.0 ** -_FLOAT_FORMAT[name][0] / RTOL[name]
        ys, rs = ys * (1 + 2 * unit), rs * (1 + unit)
    return ys, rs, np.abs(f1) + np.abs(f2)
def _add_ln_sum(x1, x2, bias):
    """``x1 + x2 (+ bias)`` in float64; a bias of gamma's shape applies to every row."""
    x = _f64(x1) + _f64(x2)
    return x if bias is None else x + _f64(bias)


def add_layer_norm(x1, x2, gamma, beta, bias=None, epsilon: float = 1e-5,
                   additional_output: bool = True):
    """``(y, mean, rstd, x)`` of AddLayerNorm in float64: ``x = x1 + x2 (+ bias)`` (``bias``
    of gamma's or x1's shape), then :func:`layer_norm` of ``x`` over gamma's dims with weight
    ``gamma`` and bias ``beta`` (``mean``/``rstd`` shaped x1's batch dims followed by ones).
    ``additional_output`` (whether the device writes ``x``) changes no value. Rows of no
    columns (gamma empty, which only Ascend 950 accepts) have mean and rstd NaN, as its
    reduce-empty kernel fills them (LayerNorm's fill, mean 0, is not AddLayerNorm's)."""
    del additional_output
    x = _add_ln_sum(x1, x2, bias)
    y, mean, rstd = layer_norm(x, np.shape(gamma), gamma, beta, epsilon)
    if np.size(gamma) == 0:
        mean = np.full_like(mean, np.nan)
    return y, mean, rstd, x


def add_layer_norm_error_scale(x1, x2, gamma, beta, bias=None, epsilon: float = 1e-5,
                               additional_output: bool = True):
    """Per element of ``(y, mean, rstd, x)``, the magnitude the device's error is proportional
    to: :func:`layer_norm_error_scale` of ``x1 + x2 (+ bias)`` (the device adds in float32 and
    rounds once at the end), and ``|x1| + |x2| (+ |bias|)`` for ``x``."""
    del additional_output
    x = _add_ln_sum(x1, x2, bias)
    ys, ms, rs = layer_norm_error_scale(x, np.shape(gamma), gamma, beta, epsilon)
    xs = np.abs(_f64(x1)) + np.abs(_f64(x2))
    return ys, ms, rs, xs if bias is None else xs + np.abs(_f64(bias))


def deep_norm(x, gx, beta, gamma, alpha: float = 0.3, epsilon: float = 1e-6):
    """``(mean, rstd, y)`` of DeepNorm in float64: :func:`layer_norm` over gamma's dims (the
    trailing dims of ``x``) of ``h = x * alpha + gx`` (the DeepNet residual) with weight
    ``gamma`` and bias ``beta``; ``mean``/``rstd`` shaped x's batch dims followed by ones."""
    h = _f64(x) * alpha + _f64(gx)
    y, mean, rstd = layer_norm(h, np.shape(gamma), gamma, beta, epsilon)
    return mean, rstd, y


def deep_norm_error_scale(x, gx, beta, gamma, alpha: float = 0.3, epsilon: float = 1e-6):
    """Per element of ``(mean, rstd, y)``, the magnitude the device's error is proportional
    to: :func:`layer_norm_error_scale`'s formulas with ``|x * alpha| + |gx|`` in place of the
    normalized input's magnitude (the device rounds the product and the sum in float32, so
    ``h`` carries an error of that scale however much the two cancel)."""
    h, h2, w, b, mean, rstd, stat_shape = _forward(_f64(x) * alpha + _f64(gx), np.shape(gamma),
                                                   gamma, beta, epsilon)
    a = (np.abs(_f64(x) * alpha) + np.abs(_f64(gx))).reshape(h2.shape)
    amean = a.mean(axis=1, keepdims=True) if h2.shape[1] else np.zeros_like(mean)
    rs = np.abs(rstd)
    y = (a + np.abs(mean) + amean) * rs * np.abs(w) + np.abs(b)
    return amean.reshape(stat_shape), rs.reshape(stat_shape), y.reshape(h.shape)


def add_layer_norm_grad(dy, x1, x2, rstd, mean, gamma, dsum=None):
    """``(dx, dgamma, dbeta)`` of AddLayerNormGrad in float64 (the vendor's docs,
    docs/aclnnAddLayerNormGrad.md): :func:`layer_norm_backward` of ``x = x1 + x2`` over
    gamma's dims with weight ``gamma`` and the saved ``mean``/``rstd`` as given, ``dsum``
    (x1's shape) added to ``dx``; dx shaped x1, dgamma and dbeta shaped gamma."""
    x = _f64(x1) + _f64(x2)
    dx, dgamma, dbeta = layer_norm_backward(dy, x, np.shape(gamma), mean, rstd, gamma)
    return (dx if dsum is None else dx + _f64(dsum)), dgamma, dbeta


def add_layer_norm_grad_error_scale(dy, x1, x2, rstd, mean, gamma, dsum=None):
    """Per element of ``(dx, dgamma, dbeta)``, the magnitude the device's error is
    proportional to: :func:`error_scale` of ``x = x1 + x2`` (``|x1| + |x2|``: the device adds
    in float32), plus ``|dsum|`` for dx."""
    x = np.abs(_f64(x1)) + np.abs(_f64(x2))
    dx, dgamma, dbeta = error_scale(dy, x, np.shape(gamma), mean, rstd, gamma)
    return (dx if dsum is None else dx + np.abs(_f64(dsum))), dgamma, dbeta


def deep_norm_grad(dy, x, gx, gamma, mean, rstd, alpha: float = 0.3):
    """``(dx, dgx, dbeta, dgamma)`` of DeepNormGrad in float64 (the vendor's docs,
    docs/aclnnDeepNormGrad.md): :func:`layer_norm_backward` of ``h = x * alpha + gx`` over
    gamma's dims with weight ``gamma`` and the saved ``mean``/``rstd`` as given gives dgx,
    dgamma and dbeta; ``dx = alpha * dgx``. dx and dgx shaped x, dbeta and dgamma gamma."""
    h = _f64(x) * alpha + _f64(gx)
    dgx, dgamma, dbeta = layer_norm_backward(dy, h, np.shape(gamma), mean, rstd, gamma)
    return dgx * alpha, dgx, dbeta, dgamma


def deep_norm_grad_error_scale(dy, x, gx, gamma, mean, rstd, alpha: float = 0.3):
    """Per element of ``(dx, dgx, dbeta, dgamma)``, the magnitude the device's error is
    proportional to: :func:`error_scale` with ``|x * alpha| + |gx|`` for the input (the device
    rounds ``h`` in float32 however much the two cancel); dx's is ``|alpha|`` times dgx's."""
    h = np.abs(_f64(x) * alpha) + np.abs(_f64(gx))
    dgx, dgamma, dbeta = error_scale(dy, h, np.shape(gamma), mean, rstd, gamma)
    return dgx * abs(alpha), dgx, dbeta, dgamma


def _rms_grad_split(dy, x, rstd, gamma):
    """dy, x as float64 ``(M, N)`` rows over gamma's dims, rstd as ``(M, 1)``, gamma as ``N``
    values, and the shapes of dx (x's) and dgamma (gamma's)."""
    xf, x2, g, _ = _rms_split(x, gamma)
    dy2 = _f64(dy).reshape(x2.shape)
    return dy2, x2, _f64(rstd).reshape(x2.shape[0], 1), g, xf.shape, np.shape(gamma)


def rms_norm_grad(dy, x, rstd, gamma):
    """``(dx, dgamma)`` of RmsNorm's backward in float64 over gamma's dims (the trailing dims
    of ``x``), with the forward's saved ``rstd`` (one value per row) as given, the formulas
    of the vendor's docs (docs/aclnnRmsNormGrad.md): ``xr = x * rstd``,
    ``dx = (dy * gamma - xr * mean_R(dy * gamma * xr)) * rstd``, ``dgamma = sum_A(dy * xr)``;
    dx shaped x, dgamma shaped gamma."""
    dy2, x2, rs, g, xshape, gshape = _rms_grad_split(dy, x, rstd, gamma)
    xr = x2 * rs
    dyg = dy2 * g
    mean = (dyg * xr).mean(axis=1, keepdims=True) if x2.shape[1] else np.zeros_like(rs)
    dx = (dyg - xr * mean) * rs
    return dx.reshape(xshape), (dy2 * xr).sum(axis=0).reshape(gshape)


def rms_norm_grad_error_scale(dy, x, rstd, gamma):
    """Per element of ``(dx, dgamma)``, the magnitude a float32-accumulated result's rounding
    error is proportional to: :func:`rms_norm_grad`'s formulas with every term made
    non-negative (``dy * gamma - xr * mean`` cancels; the row sum and dgamma's sum over the
    rows are sums of terms of either sign)."""
    dy2, x2, rs, g, xshape, gshape = _rms_grad_split(dy, x, rstd, gamma)
    ars = np.abs(rs)
    axr = np.abs(x2) * ars
    adyg = np.abs(dy2 * g)
    amean = (adyg * axr).mean(axis=1, keepdims=True) if x2.shape[1] else np.zeros_like(rs)
    dx = (adyg + axr * amean) * ars
    return dx.reshape(xshape), (np.abs(dy2) * axr).sum(axis=0).reshape(gshape)


def _group_rows(input, n, c, hxw, group):
    """input as float64 ``(n, group, c / group * hxw)`` rows (one per sample and group)."""
    return _f64(input).reshape(n, group, (c // group) * hxw)


def _group_stats(rows, eps):
    with np.errstate(invalid="ignore", divide="ignore"):
        if rows.shape[2]:
            mean = rows.mean(axis=2, keepdims=True)
            var = ((rows - mean) ** 2).mean(axis=2, keepdims=True)
        else:   # no values: mean 0, rstd NaN, as CANN fills them
            mean = np.zeros(rows.shape[:2] + (1,))
            var = np.full(rows.shape[:2] + (1,), np.nan)
        return mean, var, 1.0 / np.sqrt(var + eps)


def _per_channel(v, n, c, hxw, default):
    """gamma/beta (or ``default`` when None) broadcast over ``(n, c, hxw)``."""
    return np.broadcast_to((np.full(c, default) if v is None else _f64(v)).reshape(1, c, 1),
                           (n, c, hxw))


def group_norm(input, gamma, beta, n, c, hxw, group, eps: float = 1e-5):
    """``(out, mean, rstd)`` of GroupNorm in float64 (the vendor's docs/aclnnGroupNorm.md):
    per sample and group of ``c / group`` channels, ``mean`` and the biased variance ``var``
    of its values, ``rstd = 1 / sqrt(var + eps)``, ``out = (input - mean) * rstd * gamma +
    beta`` (absent gamma/beta: ones/zeros); out shaped input, mean/rstd ``(n, group)``. A group
    without values has mean 0 and rstd NaN, as CANN fills them."""
    rows = _group_rows(input, n, c, hxw, group)
    mean, _, rstd = _group_stats(rows, eps)
    xhat = ((rows - mean) * rstd).reshape(n, c, hxw)
    out = xhat * _per_channel(gamma, n, c, hxw, 1.0) + _per_channel(beta, n, c, hxw, 0.0)
    return out.reshape(np.shape(input)), mean.reshape(n, group), rstd.reshape(n, group)


def group_norm_error_scale(input, gamma, beta, n, c, hxw, group, eps: float = 1e-5):
    """Per element of ``(out, mean, rstd)``, the magnitude the device's float32 error is
    proportional to. Atlas A2/A3 and inference parts take the variance as
    ``mean(x^2) - mean^2``, which cancels: its error scales with ``mean(x^2) + mean^2``, so
    rstd's relative error with ``k = (mean(x^2) + mean^2) / (var + eps)``. ``out`` is made as
    ``x * scale + bias`` with ``bias = -scale * mean + beta`` (``scale = rstd * gamma``):
    ``(|x| + |mean| + |x - mean| * k) * rstd * |gamma| + |beta|``; ``mean``: ``mean(|x|)``;
    ``rstd``: ``rstd * (1 + k)``. For 16-bit inputs the Atlas training parts round the
    variance, eps and their sum to input's dtype before the square root: up to ``2^-p`` more
    relative error in rstd (p the dtype's mantissa bits), carried as magnitude."""
    rows = _group_rows(input, n, c, hxw, group)
    mean, var, rstd = _group_stats(rows, eps)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = ((rows * rows).mean(axis=2, keepdims=True) + mean * mean) / (var + eps) \
            if rows.shape[2] else np.zeros_like(mean)
    rs = np.abs(rstd)
    name = _dtype_name(np.asarray(input).dtype)
    if name != "float32":
        rs_stat = rs * (1 + k + 2.0 ** -_FLOAT_FORMAT[name][0] / RTOL[name])
    else:
        rs_stat = rs * (1 + k)
    term = (np.abs(rows) + np.abs(mean) + np.abs(rows - mean) * k) * rs
    g = np.abs(_per_channel(gamma, n, c, hxw, 1.0))
    out = term.reshape(n, c, hxw) * g + np.abs(_per_channel(beta, n, c, hxw, 0.0))
    amean = np.abs(rows).mean(axis=2) if rows.shape[2] else np.zeros((n, group))
    return (out.reshape(np.shape(input)), amean.reshape(n, group),
            rs_stat.reshape(n, group))


def group_norm_silu(input, gamma, beta, group, eps: float = 1e-5, activate_silu=True):
    """``(out, mean, rstd)`` of GroupNormSilu in float64 (the vendor's
    docs/aclnnGroupNormSilu.md, aclnnGroupNormSiluV2.md): :func:`group_norm` over input
    ``[N, C, ...]``, then, with ``activate_silu``, ``out = y / (1 + exp(-y))`` of its ``y``,
    unrounded, as the device's kernels apply it before their one rounding."""
    n, c, hxw = _nchw(input)
    out, mean, rstd = group_norm(input, gamma, beta, n, c, hxw, group, eps)
    if activate_silu:
        with np.errstate(over="ignore"):
            out = out / (1 + np.exp(-out))
    return out, mean, rstd


def group_norm_silu_error_scale(input, gamma, beta, group, eps: float = 1e-5,
                                activate_silu=True):
    """:func:`group_norm_error_scale`'s magnitudes, out's carried through Silu: its slope is
    at most 1.1 in magnitude, and its own float32 steps (Exp, Add, Div) err relative to
    ``|silu(y)|``, which ``|y|`` bounds."""
    n, c, hxw = _nchw(input)
    out, mean, rstd = group_norm_error_scale(input, gamma, beta, n, c, hxw, group, eps)
    if activate_silu:
        y = group_norm(input, gamma, beta, n, c, hxw, group, eps)[0]
        out = 1.1 * out + np.abs(y)
    return out, mean, rstd


def _channel_rows(input):
    """input ``[N, C, ...]`` as float64 ``(C, R)`` rows: each channel's values over the batch
    and spatial dims."""
    x = _f64(input)
    return np.moveaxis(x, 1, 0).reshape(x.shape[1], -1)


def _from_rows(rows, shape):
    return np.moveaxis(rows.reshape((shape[1], shape[0]) + tuple(shape[2:])), 0, 1)


def _channel_vector(v, c, default):
    return np.full(c, default) if v is None else _f64(v).reshape(c)


def batch_norm(input, weight=None, bias=None, running_mean=None, running_var=None,
               training=True, momentum: float = 0.1, eps: float = 1e-5, saved="invstd"):
    """``(output, save_mean, save_invstd, running_mean, running_var)`` of BatchNorm in float64
    (the vendor's docs/aclnnBatchNorm.md) over input ``[N, C, ...]``, per channel over its
    ``R`` values (every dim but the channel's). Training: the batch's ``mean`` and biased
    variance ``var``, ``output = (input - mean) / sqrt(var + eps) * weight + bias``,
    ``save_mean = mean``, ``save_invstd = 1 / sqrt(var + eps)`` (``saved="var"``: ``var``
    itself, what the Atlas A2/A3, training and inference parts write there), the running
    statistics updated as ``(1 - momentum) * old + momentum * new`` with the unbiased variance
    ``var * R / (R - 1)`` (None where not given). Inference: output from ``running_mean``
    (zeros when None) and ``running_var`` (ones); the other four None."""
    rows = _channel_rows(input)
    c, r = rows.shape
    w = _channel_vector(weight, c, 1.0)[:, None]
    b = _channel_vector(bias, c, 0.0)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        if not training:
            mean = _channel_vector(running_mean, c, 0.0)[:, None]
            var = _channel_vector(running_var, c, 1.0)[:, None]
            out = (rows - mean) / np.sqrt(var + eps) * w + b
            return _from_rows(out, np.shape(input)), None, None, None, None
        mean = rows.mean(axis=1, keepdims=True)
        var = ((rows - mean) ** 2).mean(axis=1, keepdims=True)
        rstd = 1.0 / np.sqrt(var + eps)
        out = (rows - mean) * rstd * w + b
        unbiased = var * r / (r - 1) if r > 1 else np.full_like(var, np.nan)
    rm = rv = None
    if running_mean is not None:
        rm = (1 - momentum) * _f64(running_mean) + momentum * mean[:, 0]
    if running_var is not None:
        rv = (1 - momentum) * _f64(running_var) + momentum * unbiased[:, 0]
    second = var if saved == "var" else rstd
    return _from_rows(out, np.shape(input)), mean[:, 0], second[:, 0], rm, rv


def batch_norm_error_scale(input, weight=None, bias=None, running_mean=None,
                           running_var=None, training=True, momentum: float = 0.1,
                           eps: float = 1e-5, saved="invstd"):
    """Per element of :func:`batch_norm`'s outputs, the magnitude the device's float32 error
    is proportional to. The Atlas training and inference parts (and Atlas A2/A3 outside
    BatchNormV3's cases) take the variance as ``mean(x^2) - mean^2``, which cancels:
    :func:`group_norm_error_scale`'s ``k = (mean(x^2) + mean^2) / (var + eps)`` carries it
    for every part. ``output``: ``(|x| + |mean| + |x - mean| * k) * rstd * |weight| + |bias|``;
    ``save_mean``: ``mean(|x|)``; ``save_invstd``: ``rstd * (1 + k)``, or as the variance
    ``mean(x^2) + mean^2 + var``; the running statistics: the same blend of their old values'
    and the batch statistics' magnitudes. Inference: ``(|x| + |running_mean|) * rstd *
    |weight| + |bias|``."""
    rows = _channel_rows(input)
    c, r = rows.shape
    w = np.abs(_channel_vector(weight, c, 1.0))[:, None]
    b = np.abs(_channel_vector(bias, c, 0.0))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        if not training:
            mean = _channel_vector(running_mean, c, 0.0)[:, None]
            var = _channel_vector(running_var, c, 1.0)[:, None]
            rstd = 1.0 / np.sqrt(np.abs(var + eps))
            out = (np.abs(rows) + np.abs(mean)) * rstd * w + b
            return _from_rows(out, np.shape(input)), None, None, None, None
        mean = rows.mean(axis=1, keepdims=True)
        var = ((rows - mean) ** 2).mean(axis=1, keepdims=True)
        sq = (rows * rows).mean(axis=1, keepdims=True) + mean * mean
        k = sq / (var + eps)
        rstd = np.abs(1.0 / np.sqrt(var + eps))
        out = (np.abs(rows) + np.abs(mean) + np.abs(rows - mean) * k) * rstd * w + b
        amean = np.abs(rows).mean(axis=1)
        var_scale = (sq + var)[:, 0]
        second = var_scale if saved == "var" else (rstd * (1 + k))[:, 0]
        unbiased = var_scale * r / (r - 1) if r > 1 else np.zeros_like(var_scale)
    rm = rv = None
    if running_mean is not None:
        rm = abs(1 - momentum) * np.abs(_f64(running_mean)) + abs(momentum) * amean
    if running_var is not None:
        rv = abs(1 - momentum) * np.abs(_f64(running_var)) + abs(momentum) * unbiased
    return _from_rows(out, np.shape(input)), amean, second, rm, rv


def _batch_norm_backward_terms(grad_out, input, weight, running_mean, running_var, save_mean,
                               save_invstd, training, eps, saved):
    """dy, x as float64 ``(C, R)`` rows; the mean, rstd and weight each as ``(C, 1)``: the
    saved statistics in training (``saved="var"``: save_invstd holds the variance), the
    running ones in inference, the op_api's fills where None (means 0, variances and rstd 1,
    weight 1)."""
    dy, x = _channel_rows(grad_out), _channel_rows(input)
    c = x.shape[0]
    w = _channel_vector(weight, c, 1.0)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        if training:
            mean = _channel_vector(save_mean, c, 0.0)[:, None]
            second = _channel_vector(save_invstd, c, 1.0)[:, None]
            rstd = 1.0 / np.sqrt(second + eps) if saved == "var" else second
        else:
            mean = _channel_vector(running_mean, c, 0.0)[:, None]
            rstd = 1.0 / np.sqrt(_channel_vector(running_var, c, 1.0)[:, None] + eps)
    return dy, x, mean, rstd, w


def batch_norm_backward(grad_out, input, weight=None, running_mean=None, running_var=None,
                        save_mean=None, save_invstd=None, training=True, eps: float = 1e-5,
                        output_mask: Sequence[bool] = (True, True, True), saved="invstd"):
    """``(grad_input, grad_weight, grad_bias)`` of BatchNorm's backward in float64 (the
    vendor's docs/aclnnBatchNormBackward.md) over input ``[N, C, ...]``, per channel over its
    ``R`` values: ``x_hat = (x - mean) * rstd``; training (the forward's saved statistics,
    ``rstd = save_invstd``, or ``1 / sqrt(save_invstd + eps)`` with ``saved="var"``):
    ``grad_input = weight * rstd * (dy - sum(dy) / R - x_hat * sum(dy * x_hat) / R)``;
    inference (``rstd = 1 / sqrt(running_var + eps)``, mean ``running_mean``):
    ``grad_input = dy * rstd * weight``; both ``grad_weight = sum(dy * x_hat)``,
    ``grad_bias = sum(dy)``. None where ``output_mask`` is false."""
    dy, x, mean, rstd, w = _batch_norm_backward_terms(
        grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, training,
        eps, saved)
    r = x.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        xhat = (x - mean) * rstd
        gw = (dy * xhat).sum(axis=1, keepdims=True)
        gb = dy.sum(axis=1, keepdims=True)
        if training:
            dx = w * rstd * (dy - gb / r - xhat * gw / r)
        else:
            dx = dy * rstd * w
    out = (_from_rows(dx, np.shape(input)), gw[:, 0], gb[:, 0])
    return tuple(o if m else None for o, m in zip(out, output_mask))


def batch_norm_backward_error_scale(grad_out, input, weight=None, running_mean=None,
                                    running_var=None, save_mean=None, save_invstd=None,
                                    training=True, eps: float = 1e-5,
                                    output_mask: Sequence[bool] = (True, True, True),
                                    saved="invstd"):
    """Per element of :func:`batch_norm_backward`'s outputs, the magnitude the device's
    float32 error is proportional to: its formulas with every term made non-negative and
    ``x_hat`` taken as ``(|x| + |mean|) * rstd`` (the TBE kernels of the parts other than
    Ascend 950 form ``grad_input`` as ``dy + m * x + a``, from x itself, not x - mean)."""
    dy, x, mean, rstd, w = _batch_norm_backward_terms(
        grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, training,
        eps, saved)
    r = x.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        rstd, w, ady = np.abs(rstd), np.abs(w), np.abs(dy)
        xabs = (np.abs(x) + np.abs(mean)) * rstd
        gw = (ady * xabs).sum(axis=1, keepdims=True)
        gb = ady.sum(axis=1, keepdims=True)
        if training:
            dx = w * rstd * (ady + gb / r + xabs * gw / r)
        else:
            dx = ady * rstd * w
    out = (_from_rows(dx, np.shape(input)), gw[:, 0], gb[:, 0])
    return tuple(o if m else None for o, m in zip(out, output_mask))


def _sync_batch_norm_terms(grad_out, input, mean, invstd, weight):
    """dy, x as float64 ``(C, R)`` rows; mean, invstd and weight (None: ones) as ``(C, 1)``."""
    dy, x = _channel_rows(grad_out), _channel_rows(input)
    c = x.shape[0]
    return (dy, x, _channel_vector(mean, c, 0.0)[:, None],
            _channel_vector(invstd, c, 1.0)[:, None], _channel_vector(weight, c, 1.0)[:, None])


def batch_norm_reduce_backward(grad_out, input, mean, invstd, weight=None, input_g=True,
                               weight_g=True, bias_g=True):
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` of SyncBatchNorm's backward reduce in
    float64 (the vendor's docs/aclnnBatchNormReduceBackward.md) over input ``[N, C, ...]``, per
    channel: ``sum_dy = sum(dy)``, ``sum_dy_xmu = sum(dy * (x - mean))``, ``grad_weight =
    sum_dy_xmu * invstd``, ``grad_bias = sum_dy``; weight is not used. None where the flag
    (input_g for the two sums) is false."""
    dy, x, mu, rs, _ = _sync_batch_norm_terms(grad_out, input, mean, invstd, weight)
    sum_dy = dy.sum(axis=1)
    sum_dy_xmu = (dy * (x - mu)).sum(axis=1)
    out = (sum_dy, sum_dy_xmu, sum_dy_xmu * rs[:, 0], sum_dy)
    return tuple(o if f else None for o, f in zip(out, (input_g, input_g, weight_g, bias_g)))


def batch_norm_reduce_backward_error_scale(grad_out, input, mean, invstd, weight=None,
                                           input_g=True, weight_g=True, bias_g=True):
    """Per element of :func:`batch_norm_reduce_backward`'s outputs, the magnitude the device's
    float32 error is proportional to: the device forms sum_dy_xmu as ``sum(dy * x) - mean *
    sum(dy)``, so its error scales with ``sum(|dy * x|) + |mean| * sum(|dy|)``."""
    dy, x, mu, rs, _ = _sync_batch_norm_terms(grad_out, input, mean, invstd, weight)
    ady = np.abs(dy)
    sum_dy = ady.sum(axis=1)
    sum_dy_xmu = (ady * np.abs(x)).sum(axis=1) + np.abs(mu[:, 0]) * sum_dy
    out = (sum_dy, sum_dy_xmu, sum_dy_xmu * np.abs(rs[:, 0]), sum_dy)
    return tuple(o if f else None for o, f in zip(out, (input_g, input_g, weight_g, bias_g)))


def _elemt_backward_terms(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, counter):
    dy, x, mu, rs, w = _sync_batch_norm_terms(grad_out, input, mean, invstd, weight)
    c = x.shape[0]
    n = _f64(counter).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_dy = _channel_vector(sum_dy, c, 0.0)[:, None] / n
        mean_dy_xmu = _channel_vector(sum_dy_xmu, c, 0.0)[:, None] / n
    return dy, x, mu, rs, w, mean_dy, mean_dy_xmu


def batch_norm_elemt_backward(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              counter):
    """``(grad_input,)`` of SyncBatchNorm's backward elemt in float64 (the vendor's
    docs/aclnnBatchNormElemtBackward.md) over input ``[N, C, ...]``, with ``n = sum(counter)``:
    ``((dy - sum_dy / n) - (x - mean) * invstd**2 * sum_dy_xmu / n) * invstd * weight``
    (weight None: ones)."""
    dy, x, mu, rs, w, mdy, mdyx = _elemt_backward_terms(grad_out, input, mean, invstd, weight,
                                                        sum_dy, sum_dy_xmu, counter)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = ((dy - mdy) - (x - mu) * (mdyx * (rs * rs))) * (rs * w)
    return (_from_rows(dx, np.shape(input)),)


def batch_norm_elemt_backward_error_scale(grad_out, input, mean, invstd, weight, sum_dy,
                                          sum_dy_xmu, counter):
    """Per element of :func:`batch_norm_elemt_backward`'s output, the magnitude the device's
    error is proportional to: its formula with every term made non-negative. Where every
    floating input is float16 the device computes in float16 and rounds ``sum_dy / n`` and
    ``sum_dy_xmu / n`` to it (half a float16 ulp: ``2**-11 / RTOL`` times the float32 error's
    unit), so their terms weigh that much more."""
    dy, x, mu, rs, w, mdy, mdyx = _elemt_backward_terms(grad_out, input, mean, invstd, weight,
                                                        sum_dy, sum_dy_xmu, counter)
    floats = (grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu)
    half = all(t is not None and np.asarray(t).dtype == np.float16 for t in floats)
    k = 1 + (2.0 ** -11 / RTOL["float16"] if half else 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = ((np.abs(dy) + k * np.abs(mdy))
              + (np.abs(x) + np.abs(mu)) * k * np.abs(mdyx * rs * rs)) * np.abs(rs * w)
    return (_from_rows(dx, np.shape(input)),)


def batch_norm_stats(input, eps: float = 1e-5):
    """``(mean, invstd)`` of SyncBatchNorm's first step in float64 (the vendor's
    docs/aclnnBatchNormStats.md) over input ``[N, C, ...]``: per channel over its ``R`` values
    (every dim but dim 1), the mean and ``1 / sqrt(var + eps)`` of the biased variance ``var``
    (what :func:`batch_norm` saves in training). An empty input (``R`` 0) gives means of 0
    and NaN invstds, as the operator writes them."""
    rows = _channel_rows(input)
    c, r = rows.shape
    if r == 0:
        return np.zeros(c), np.full(c, np.nan)
    mean = rows.mean(axis=1, keepdims=True)
    var = ((rows - mean) ** 2).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return mean[:, 0], 1.0 / np.sqrt(var + eps)


def batch_norm_stats_error_scale(input, eps: float = 1e-5):
    """Per element of :func:`batch_norm_stats`'s outputs, the magnitude the device's float32
    error is proportional to: ``mean``: ``mean(|x|)``; ``invstd``: ``invstd * (1 + k)`` with
    ``k = (var + mean(|x - mean| * (|x| + |mean|))) / (var + eps)`` (every part's variance is
    two-pass: each difference is rounded at the scale of ``|x| + |mean|``, not of itself)."""
    rows = _channel_rows(input)
    c, r = rows.shape
    if r == 0:
        return np.zeros(c), np.zeros(c)
    mean = rows.mean(axis=1, keepdims=True)
    d = np.abs(rows - mean)
    var = (d * d).mean(axis=1)
    spread = (d * (np.abs(rows) + np.abs(mean))).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rstd = 1.0 / np.sqrt(np.abs(var + eps))
        k = (var + spread) / np.abs(var + eps)
    return np.abs(rows).mean(axis=1), rstd * (1 + k)


def _format_rows(x, data_format):
    """4-D ``x`` as float64 ``(C, R)`` rows, the channel at dim 1 (NCHW) or dim 3 (NHWC)."""
    x = _f64(x)
    axis = 3 if data_format == "NHWC" else 1
    return np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)


def batch_norm_reduce(x, data_format: str = "NCHW"):
    """``(sum, square_sum)`` of a training BatchNorm's first half in float64 (the vendor's
    docs/aclnnBatchNormReduce.md) over 4-D ``x``: per channel (dim 1 for NCHW, dim 3 for
    NHWC) the sum of its values and of their squares over the other three dims (zeros for an
    empty x)."""
    rows = _format_rows(x, data_format)
    return rows.sum(axis=1), (rows * rows).sum(axis=1)


def batch_norm_reduce_error_scale(x, data_format: str = "NCHW"):
    """Per element of :func:`batch_norm_reduce`'s outputs, the magnitude the device's float32
    error is proportional to: ``k * sum(|x|)`` and ``k * sum(x * x)``. A float32 sum of ``R``
    values, in any order, is off by at most ``R`` roundings of partial sums no larger than the
    sum of magnitudes (one more for each rounded square): ``RTOL`` (1e-5) covers that up to
    about 160 values, so ``k`` grows with a longer channel (``R * 2**-24 / 1e-5``)."""
    rows = _format_rows(x, data_format)
    k = max(1.0, (rows.shape[1] + 1) * 2.0 ** -24 / RTOL["float32"])
    return k * np.abs(rows).sum(axis=1), k * (rows * rows).sum(axis=1)


def _gather_terms(mean, invstd, counts, eps):
    """The ranks' statistics as float64 ``(N, C)`` rows, their counts as ``(N, 1)``, the total
    count ``S``, the global mean ``(1, C)`` and each rank's variance ``1 / invstd^2 - eps``."""
    m, inv = _f64(mean), _f64(invstd)
    k = _f64(counts).reshape(-1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = k.sum()
        mean_all = (m * k).sum(axis=0, keepdims=True) / total
        var = 1.0 / (inv * inv) - eps
    return m, inv, k, total, mean_all, var


def batch_norm_gather_stats_with_counts(mean, invstd, counts, running_mean=None,
                                        running_var=None, momentum: float = 0.1,
                                        eps: float = 1e-5):
    """``(mean_all, invstd_all, running_mean, running_var)`` of SyncBatchNorm's gathering step
    in float64 (the vendor's docs/aclnnBatchNormGatherStatsWithCounts.md): the ``N`` ranks'
    per-channel ``mean`` and ``invstd`` (``[N, C]``, ``invstd = 1 / sqrt(var + eps)`` of each
    rank's biased variance) and element ``counts`` (``[N]``) combined into the statistics of
    the whole batch of ``S = sum(counts)`` values per channel: ``mean_all = sum(mean * counts)
    / S``, the biased variance ``var_all = sum((var + (mean - mean_all)^2) * counts) / S``,
    ``invstd_all = 1 / sqrt(var_all + eps)``; the running statistics updated as
    ``(1 - momentum) * old + momentum * new`` with the unbiased ``var_all * S / (S - 1)`` (None
    where not given)."""
    m, _, k, total, mean_all, var = _gather_terms(mean, invstd, counts, eps)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_sum = ((var + (m - mean_all) ** 2) * k).sum(axis=0)
        invstd_all = 1.0 / np.sqrt(var_sum / total + eps)
        unbiased = var_sum / (total - 1)
    rm = rv = None
    if running_mean is not None:
        rm = (1 - momentum) * _f64(running_mean) + momentum * mean_all[0]
    if running_var is not None:
        rv = (1 - momentum) * _f64(running_var) + momentum * unbiased
    return mean_all[0], invstd_all, rm, rv


def batch_norm_gather_stats_with_counts_error_scale(mean, invstd, counts, running_mean=None,
                                                    running_var=None, momentum: float = 0.1,
                                                    eps: float = 1e-5):
    """Per element of :func:`batch_norm_gather_stats_with_counts`'s outputs, the magnitude the
    device's float32 error is proportional to: ``mean_all``: ``sum(|mean| * counts) / S``;
    the variance's terms made non-negative, ``(1 / invstd^2 + |eps| + d^2 + 2 |d| |mean|_all)
    * counts`` with ``d = mean - mean_all`` (the subtraction of eps and of the global mean
    cancel), ``invstd_all``: ``invstd_all * (1 + that / (var_all + eps))``; the running
    statistics: the same blend of their old values' and the new statistics' magnitudes."""
    m, inv, k, total, mean_all, _ = _gather_terms(mean, invstd, counts, eps)
    with np.errstate(invalid="ignore", divide="ignore"):
        amean = (np.abs(m) * k).sum(axis=0) / total
        d = np.abs(m - mean_all)
        mag = ((1.0 / (inv * inv) + abs(eps) + d * d + 2 * d * amean) * k).sum(axis=0) / total
        var_all = ((1.0 / (inv * inv) - eps + d * d) * k).sum(axis=0) / total
        invstd_all = 1.0 / np.sqrt(np.abs(var_all + eps))
        invstd_scale = invstd_all * (1 + mag / np.abs(var_all + eps))
        unbiased = mag * total / np.abs(total - 1)
    rm = rv = None
    if running_mean is not None:
        rm = abs(1 - momentum) * np.abs(_f64(running_mean)) + abs(momentum) * amean
    if running_var is not None:
        rv = abs(1 - momentum) * np.abs(_f64(running_var)) + abs(momentum) * unbiased
    return amean, invstd_scale, rm, rv


def batch_norm_elemt(input, weight, bias, mean, invstd, eps: float = 1e-5):
    """``output`` of SyncBatchNorm's element-wise step in float64 (the vendor's
    docs/aclnnBatchNormElemt.md) over input ``[N, C, ...]``: each channel normalized with the
    given statistics, ``(input - mean) * invstd * weight + bias`` (``weight``/``bias`` None:
    ones/zeros). ``eps`` is the device's detour only (it makes the variance
    ``1 / invstd^2 - eps`` and adds eps back), so the exact result does not depend on it."""
    rows = _channel_rows(input)
    c = rows.shape[0]
    w = _channel_vector(weight, c, 1.0)[:, None]
    b = _channel_vector(bias, c, 0.0)[:, None]
    mean_v = _channel_vector(mean, c, 0.0)[:, None]
    inv = _channel_vector(invstd, c, 1.0)[:, None]
    return _from_rows((rows - mean_v) * inv * w + b, np.shape(input))


def batch_norm_elemt_error_scale(input, weight, bias, mean, invstd, eps: float = 1e-5):
    """Per element of :func:`batch_norm_elemt`'s output, the magnitude the device's error is
    proportional to: ``(|x| + |mean|) * invstd * |weight| + |bias|``, plus the rounding of the
    variance the op_api makes in invstd's dtype (``1 / invstd^2 - eps``, three roundings there:
    a relative error of the rstd of about ``u * (2 + eps * invstd^2)``, u that dtype's unit
    roundoff) expressed in :data:`RTOL` units of ``|x - mean| * invstd * |weight|``."""
    rows = _channel_rows(input)
    c = rows.shape[0]
    w = np.abs(_channel_vector(weight, c, 1.0))[:, None]
    b = np.abs(_channel_vector(bias, c, 0.0))[:, None]
    mean_v = _channel_vector(mean, c, 0.0)[:, None]
    inv = np.abs(_channel_vector(invstd, c, 1.0))[:, None]
    bits, _ = _FLOAT_FORMAT[_dtype_name(np.asarray(invstd).dtype)]
    unit = 2.0 ** -(bits + 1)
    drift = unit * (2 + abs(eps) * inv * inv) / RTOL["float32"]
    out = ((np.abs(rows) + np.abs(mean_v)) * inv * w + b
           + np.abs(rows - mean_v) * inv * w * drift)
    return _from_rows(out, np.shape(input))


def _group_backward_terms(grad_out, input, mean, rstd, gamma, n, c, hxw, group):
    """dy, x_hat, g = dy * gamma as float64 ``(n, group, c / group, hxw)`` and rstd as
    ``(n, group, 1, 1)``."""
    d = c // group if group else 0
    shape = (n, group, d, hxw)
    dy = _f64(grad_out).reshape(shape)
    x = _f64(input).reshape(shape)
    mu = _f64(mean).reshape(n, group, 1, 1)
    rs = _f64(rstd).reshape(n, group, 1, 1)
    gm = (np.ones(c) if gamma is None else _f64(gamma)).reshape(1, group, d, 1)
    return dy, x, mu, rs, gm


def group_norm_backward(grad_out, input, mean, rstd, gamma, n, c, hxw, group,
                        output_mask: Sequence[bool] = (True, True, True)):
    """``(grad_input, grad_gamma, grad_beta)`` of GroupNorm's backward in float64 (the vendor's
    docs/aclnnGroupNormBackward.md, with gamma inside the group sums as the kernels take it),
    the forward's saved ``mean``/``rstd`` (``n * group`` values) as given: per sample and group
    of ``E = c / group * hxw`` values, ``x_hat = (x - mean) * rstd``, ``g = dy * gamma``,
    ``grad_input = rstd * (g - mean_E(g) - x_hat * mean_E(g * x_hat))``; per channel
    ``grad_gamma = sum(dy * x_hat)``, ``grad_beta = sum(dy)`` over samples and positions.
    grad_input shaped input, the others ``(c,)`` (gamma's shape when given); None where
    ``output_mask`` is false."""
    dy, x, mu, rs, gm = _group_backward_terms(grad_out, input, mean, rstd, gamma, n, c, hxw,
                                              group)
    xhat = (x - mu) * rs
    gshape = (c,) if gamma is None else np.shape(gamma)
    out = [None, None, None]
    if output_mask[0]:
        g = dy * gm
        e = x.shape[2] * x.shape[3]
        if e:
            mg = g.sum(axis=(2, 3), keepdims=True) / e
            mgx = (g * xhat).sum(axis=(2, 3), keepdims=True) / e
        else:
            mg = mgx = np.zeros_like(rs)
        out[0] = (rs * (g - mg - xhat * mgx)).reshape(np.shape(input))
    if output_mask[1]:
        out[1] = (dy * xhat).sum(axis=(0, 3)).reshape(gshape)
    if output_mask[2]:
        out[2] = dy.sum(axis=(0, 3)).reshape(gshape)
    return tuple(out)


def group_norm_backward_error_scale(grad_out, input, mean, rstd, gamma, n, c, hxw, group,
                                    output_mask: Sequence[bool] = (True, True, True)):
    """Per element of :func:`group_norm_backward`'s outputs, the magnitude the device's error
    is proportional to: its formulas with every term made non-negative and ``x_hat`` taken
    as ``(|x| + |mean|) * rstd``. For 16-bit data the Atlas training and inference parts
    compose the result of L0 operators each rounding to the data's dtype (the variance
    ``1 / (rstd * rstd) - eps``, ``dy * gamma``, ``x - mean``, ``* rstd``, ``* dy``, each
    partial sum): up to ``4 * 2^-p`` relative error of these magnitudes (p the dtype's
    mantissa bits), carried as magnitude."""
    dy, x, mu, rs, gm = _group_backward_terms(grad_out, input, mean, rstd, gamma, n, c, hxw,
                                              group)
    rs = np.abs(rs)
    xabs = (np.abs(x) + np.abs(mu)) * rs
    ady = np.abs(dy)
    name = _dtype_name(np.asarray(grad_out).dtype)
    widen = 1.0 if name == "float32" else 1 + 4 * 2.0 ** -_FLOAT_FORMAT[name][0] / RTOL[name]
    gshape = (c,) if gamma is None else np.shape(gamma)
    out = [None, None, None]
    if output_mask[0]:
        g = ady * np.abs(gm)
        e = x.shape[2] * x.shape[3]
        if e:
            mg = g.sum(axis=(2, 3), keepdims=True) / e
            mgx = (g * xabs).sum(axis=(2, 3), keepdims=True) / e
        else:
            mg = mgx = np.zeros_like(rs)
        out[0] = (widen * rs * (g + mg + xabs * mgx)).reshape(np.shape(input))
    if output_mask[1]:
        out[1] = widen * (ady * xabs).sum(axis=(0, 3)).reshape(gshape)
    if output_mask[2]:
        out[2] = widen * ady.sum(axis=(0, 3)).reshape(gshape)
    return tuple(out)


def _instance_rows(x, data_format):
    """x as float64 ``(N, C, H * W)`` rows, its channel axis by ``data_format`` (the vendor's
    rule: its first four characters, NHWC or else NCHW)."""
    a = _f64(x)
    if str(data_format).startswith("NHWC"):
        a = np.moveaxis(a, 3, 1)
    return a.reshape(a.shape[0], a.shape[1], -1), a.shape


def _instance_back(v, nchw_shape, data_format):
    """``(N, C, ...)`` values reshaped to ``nchw_shape`` and laid out as ``data_format``."""
    v = v.reshape(nchw_shape)
    return np.moveaxis(v, 1, 3) if str(data_format).startswith("NHWC") else v


def _instance_forward(x, gamma, beta, data_format, eps):
    rows, shape = _instance_rows(x, data_format)
    n, c = shape[:2]
    g, b = _f64(gamma).reshape(1, c, 1), _f64(beta).reshape(1, c, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if rows.shape[2]:
            mean = rows.mean(axis=2, keepdims=True)
            var = ((rows - mean) ** 2).mean(axis=2, keepdims=True)
        else:
            mean = var = np.full((n, c, 1), np.nan)
        rstd = 1.0 / np.sqrt(var + eps)
    return rows, shape, g, b, mean, var, rstd


def instance_norm(x, gamma, beta, data_format: str = "NCHW", eps: float = 1e-5):
    """``(y, mean, variance)`` of InstanceNorm in float64 (the vendor's
    docs/aclnnInstanceNorm.md): per sample and channel of a 4-D ``x`` (``data_format`` NCHW or
    NHWC), ``mean`` and the biased variance ``var`` of its ``H * W`` values,
    ``y = (x - mean) / sqrt(var + eps) * gamma + beta``; y shaped x, mean/variance
    ``(N, C, 1, 1)`` (NCHW) or ``(N, 1, 1, C)`` (NHWC). No values: NaN statistics (the device
    writes nothing then)."""
    rows, shape, g, b, mean, var, rstd = _instance_forward(x, gamma, beta, data_format, eps)
    y = (rows - mean) * rstd * g + b
    stats = (shape[0], shape[1], 1, 1)
    return (_instance_back(y, shape, data_format), _instance_back(mean, stats, data_format),
            _instance_back(var, stats, data_format))


def instance_norm_error_scale(x, gamma, beta, data_format: str = "NCHW", eps: float = 1e-5):
    """Per element of ``(y, mean, variance)``, the magnitude a float32-accumulated result's
    rounding error is proportional to: y's as LayerNorm's (the mean's and rstd's errors
    carried through), ``mean(|x|)`` for the mean, and for the two-pass variance, whose
    centred terms carry the rounding of ``x - mean``: ``var + 2 * mean(|x - mean| * (|x| +
    |mean|))``."""
    rows, shape, g, b, mean, var, rstd = _instance_forward(x, gamma, beta, data_format, eps)
    ax = np.abs(rows)
    with np.errstate(invalid="ignore"):
        amean = ax.mean(axis=2, keepdims=True) if rows.shape[2] else np.zeros_like(mean)
        y = (ax + np.abs(mean) + amean) * np.abs(rstd) * np.abs(g) + np.abs(b)
        d = np.abs(rows - mean)
        vs = var + 2 * (d * (ax + np.abs(mean))).mean(axis=2, keepdims=True) \
            if rows.shape[2] else np.zeros_like(mean)
    stats = (shape[0], shape[1], 1, 1)
    return (_instance_back(y, shape, data_format), _instance_back(amean, stats, data_format),
            _instance_back(vs, stats, data_format))


def _nchw(input):
    shape = np.shape(input)
    return shape[0], shape[1], math.prod(shape[2:])


def _dtype_name(dtype) -> str:
    # By name: bfloat16 is ml_dtypes' ("bfloat16" too), which this module does not import
    # (it takes over a second; an array of bfloat16 exists only once its importer did).
    name = np.dtype(dtype).name
    if name not in _FLOAT_FORMAT:
        raise ValueError(f"no tolerance for dtype {name}")
    return name


def rounding_dtype(output: str | None, input_dtype) -> str:
    """The dtype the device rounds an output to before casting it to the output's dtype:
    the input's for ``grad_input``, float32 for ``grad_weight``/``grad_bias``. ``None`` (the
    output unknown): the input's, which bounds all three."""
    if output is None or output == "grad_input":
        return _dtype_name(input_dtype)
    if output in ("grad_weight", "grad_bias"):
        return "float32"
    raise ValueError(f"output must be one of {OUTPUTS} or None, got {output!r}")


def _holds(wide: str, narrow: str) -> bool:
    """Every value of ``narrow`` is exact in ``wide``."""
    return wide == narrow or wide in ("float32", "float64") and narrow != "float64"


def _round_bfloat16(f32: np.ndarray, ties_away: bool) -> np.ndarray:
    """float32 -> bfloat16 (as float32 values), to nearest; ties away from zero or to even."""
    u = f32.view(np.uint32).astype(np.uint64)
    bias = 0x8000 if ties_away else 0x7FFF + ((u >> 16) & 1)
    r = (((u + bias) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f32), f32, r)


def device_rounding(values, input_dtype, output_dtype, output: str = "grad_input",
                    bf16_ties_away: bool = True) -> np.ndarray:
    """``values`` (float64, e.g. the reference's) rounded as the device rounds ``output``:
    to float32, then to :func:`rounding_dtype` (bfloat16 ties away from zero when
    ``bf16_ties_away``, the Atlas A2/A3 kernel's rounding; to even on Ascend 950), then cast to
    ``output_dtype`` (to nearest even). Returned as an array of ``output_dtype``."""
    with np.errstate(over="ignore"):
        v = np.asarray(_f64(values)).astype(np.float32)
        via = rounding_dtype(output, input_dtype)
        if via == "float16":
            v = v.astype(np.float16).astype(np.float32)
        elif via == "bfloat16":
            v = _round_bfloat16(v, bf16_ties_away)
        out = np.dtype(output_dtype)
        return v.astype(out)


def half_ulp(values, dtype) -> np.ndarray:
    """Half the spacing of ``dtype`` at ``|values|`` (the error of rounding to it)."""
    bits, emin = _FLOAT_FORMAT[_dtype_name(dtype)]
    a = np.abs(_f64(values))
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(np.where(a > 0, e, emin), emin)
    return np.ldexp(0.5, (e - bits).astype(np.int64))


def error_bound(expected, magnitude, input_dtype, output_dtype, actual=None,
                rtol=None, output: str | None = None) -> np.ndarray:
    """Allowed ``|actual - expected|`` per element (see the module docstring). ``rtol``
    overrides ``RTOL[input_dtype]``; ``output`` (one of :data:`OUTPUTS`) selects the device's
    rounding chain for it (None: the input's dtype as intermediate, which bounds every
    output)."""
    if np.dtype(output_dtype).kind in "iu":  # a quantized output: one step either way
        return np.full(np.shape(expected), QUANT_STEP)
    ref = np.abs(_f64(expected))
    if actual is not None:  # rounding happens at the computed value, which may sit one binade up
        ref = np.maximum(ref, np.abs(_f64(actual)))
    if rtol is None:
        rtol = RTOL[_dtype_name(input_dtype)]
    via = rounding_dtype(output, input_dtype)
    out = _dtype_name(output_dtype)
    bound = rtol * _f64(magnitude) + half_ulp(ref, via)
    if not _holds(out, via):
        bound = bound + half_ulp(ref, out)
    return bound


def max_error_ratio(actual, expected, magnitude, input_dtype, rtol=None,
                    output: str | None = None) -> float:
    """max |actual - expected| / allowed over the elements: <= 1 passes. NaN anywhere -> inf.
    An empty output gives 0."""
    act = np.asarray(actual)
    a = _f64(act)
    e = _f64(expected)
    if a.shape != e.shape:
        raise ValueError(f"shape {a.shape} != expected shape {e.shape}")
    if a.size == 0:
        return 0.0
    if not np.all(np.isfinite(a)):
        return math.inf
    bound = error_bound(e, magnitude, input_dtype, act.dtype, a, rtol, output)
    return float(np.max(np.abs(a - e) / bound))


def max_abs_error(actual, expected) -> float:
    """max |actual - expected| over the elements (float64): inf when any is NaN, 0 when there
    are none. The number a report prints beside :func:`max_error_ratio`."""
    a, e = _f64(np.asarray(actual)), _f64(expected)
    if a.size == 0:
        return 0.0
    diff = np.abs(a - e)
    return math.inf if np.isnan(diff).any() else float(diff.max())


def assert_close(actual, expected, magnitude, input_dtype, name: str = "output",
                 rtol=None, output: str | None = None) -> float:
    """Raises AssertionError naming the worst element when ``actual`` is out of tolerance;
    returns the error ratio (<= 1). ``output``: see :func:`error_bound`."""
    ratio = max_error_ratio(actual, expected, magnitude, input_dtype, rtol, output)
    if not ratio <= 1.0:
        a, e = _f64(np.asarray(actual)), _f64(expected)
        bound = error_bound(e, magnitude, input_dtype, np.asarray(actual).dtype, a, rtol,
                            output)
        with np.errstate(invalid="ignore"):
            worst = np.unravel_index(np.nanargmax(np.where(np.isfinite(a),
                                                           np.abs(a - e) / bound, np.inf)),
                                     a.shape)
        raise AssertionError(
            f"{name} ({np.asarray(actual).dtype}, input {_dtype_name(input_dtype)}): error "
            f"{ratio:.3g}x the tolerance; worst at {tuple(int(i) for i in worst)}: got "
            f"{a[worst]!r}, expected {e[worst]!r}, allowed +-{bound[worst]:.3g}")
    return ratio
