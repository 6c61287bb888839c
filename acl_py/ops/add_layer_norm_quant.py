"""``aclnnAddLayerNormQuant``: the residual add (with an optional bias) fused with LayerNorm
and one or two static (per-channel scales and zero points) or dynamic (per-row) int8
quantizations, :func:`add_layer_norm_quant` and the plan :class:`AddLayerNormQuant`.

The aclnn interface runs on Ascend 950 only (the op_api's CheckPlatform refuses every other
part with 161002: hicann/ops-nn norm/add_layer_norm_quant/op_host/op_api/
aclnn_add_layer_norm_quant.cpp), so ``acl-py smoke`` leaves its cases out elsewhere.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``x1`` float32/float16/bfloat16, float16/bfloat16 in dynamic mode; ``x2``, ``gamma``,
``beta``, ``bias`` x1's; the scales and zero points scales1's, which is x1's in dynamic mode;
the (x1, scales1) pairs the part has a kernel for); ``quant_mode`` "static" or "dynamic";
the optional inputs' combination (static: scales1 always, with scales2 both zero points or
neither, without it at most zero_points1; dynamic: no zero points, scales2 only beside
scales1); ``x2`` of x1's shape; ``gamma`` x1's trailing dims (dynamic: one dim, x1 of rank 2
at least); beta, the scales and zero points of gamma's shape; ``bias`` of gamma's or x1's;
``epsilon`` above 0 as a float; the ``out=`` entries' shapes as phase one takes them.
Unwritten outputs come back as None: ``y2`` without ``scales2``, ``x`` without
``additional_output``, the out scales in static mode (and ``out_scales2`` without
``scales2``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError, AclTypeError
from ._declare import (Declared, Operand, OutArg, Plan, check_same_shape, check_trailing_dims,
                       configured, double, dtype_of, flag, output, shape_of, staged, string,
                       tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["add_layer_norm_quant", "AddLayerNormQuant", "ADD_LAYER_NORM_QUANT"]

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_OP_API = ("hicann/ops-nn norm/add_layer_norm_quant/op_host/op_api/"
           "aclnn_add_layer_norm_quant.cpp")

# The op_api runs on Ascend 950 only; its definition's config_950 is the kernel there
# (op_host/add_layer_norm_quant_def.cpp).
_KERNEL_PARTS = configured("ascend950", source="hicann/ops-nn norm/add_layer_norm_quant/op_host/"
                           "op_api/aclnn_add_layer_norm_quant.cpp CheckPlatform (regbase only)")


def _name(dt):
    return "bfloat16" if np.dtype(dt).name not in ("float32", "float16") else np.dtype(dt).name


def _dynamic(a):
    return a.quant_mode == "dynamic"


def _combination_rule(a):
    """None where the optional inputs given are a valid combination for the mode, else
    ``(argument, rule)`` (CheckOptCombValid)."""
    s1, s2 = a.scales1 is not None, a.scales2 is not None
    z1, z2 = a.zero_points1 is not None, a.zero_points2 is not None
    if _dynamic(a):
        if z1 or z2:
            return ("zero_points1" if z1 else "zero_points2"), "must be None in dynamic mode"
        if s2 and not s1:
            return "scales2", "needs scales1 (dynamic mode)"
        return None
    if not s1:
        return "scales1", "is required in static mode"
    if s2 and z1 != z2:
        return ("zero_points2" if z1 else "zero_points1"), ("must be given with the other zero "
                                                            "point beside scales2, or neither")
    if not s2 and z2:
        return "zero_points2", "needs scales2"
    return None


# The codes of the rules the device reaches after the op_api's (docs/emulator.md rows 10-11):
# the tiling's (561002) and the kernel's lookup (561003).
_TILING, _NO_KERNEL = (561002,), (561003,)


def add_layer_norm_quant_check(a):
    """Checks the op_api's rules with the argument named (quantMode, the dynamic mode's
    dtypes, the optional inputs' combination, the shape relations), the tiling's epsilon
    rule, and config_950's (x1, scales1) dtype pairs: FLOAT16 or BF16 x1 with scales of its
    dtype or FLOAT, FLOAT x1 with FLOAT scales."""
    if a.quant_mode not in ("static", "dynamic"):
        raise AclArgumentError("quant_mode", f"{a.quant_mode!r} must be 'static' or 'dynamic'")
    dyn = _dynamic(a)
    x = a.x1.dtype
    if dyn and x == _F32:
        raise AclTypeError("x1", "dtype float32 is not supported in dynamic mode (float16, "
                           "bfloat16)")
    broken = _combination_rule(a)
    if broken is not None:
        raise AclArgumentError(*broken)
    s = a.scales1.dtype if a.scales1 is not None else None
    for name in ("scales2", "zero_points1", "zero_points2"):
        t = a[name]
        if s is not None and t is not None and t.dtype != s:
            raise AclTypeError(name, f"dtype {_name(t.dtype)} must be scales1's dtype "
                               f"{_name(s)}")
    if s is not None:
        if dyn and s != x:
            raise AclTypeError("scales1", f"dtype {_name(s)} must be x1's dtype {_name(x)} in "
                               f"dynamic mode")
        if not (s == x or (s == _F32 and x != _F32)):
            # the kernel's lookup, after the op_api's checks (docs/emulator.md row 11)
            staged(_NO_KERNEL, "scales1", f"dtype {_name(s)} has no kernel with x1 {_name(x)} "
                   f"(x1's dtype or float32 with a 16-bit x1; float32 with float32)",
                   AclTypeError)
    shape, gs = a.x1.shape, a.gamma.shape
    check_same_shape("x2", a.x2.shape, "x1", shape)
    check_trailing_dims("gamma", gs, "x1", shape)
    if dyn and (len(shape) < 2 or len(gs) != 1):
        raise AclArgumentError("gamma" if len(gs) != 1 else "x1",
                               f"dynamic mode takes x1 of rank 2 at least and gamma of rank 1 "
                               f"(x1 {shape}, gamma {gs})")
    for name in ("beta", "scales1", "scales2", "zero_points1", "zero_points2"):
        t = a[name]
        if t is not None and t.shape != gs:
            raise AclArgumentError(name, f"shape {t.shape} must equal gamma's shape {gs}")
    if a.bias is not None and a.bias.shape not in (gs, shape):
        raise AclArgumentError("bias", f"shape {a.bias.shape} must be gamma's shape {gs} or "
                               f"x1's shape {shape}")
    if not np.float32(a.epsilon) > 0:
        staged(_TILING, "epsilon", f"{a.epsilon!r} must be greater than 0 as a float32")


def _out_scales_shape(a):
    """x1's shape without its last dim (the docs'; ``[1]`` for a rank-1 x1)."""
    return a.x1.shape[:-1] or (1,)


def _same(a, given, want):
    return None if tuple(given) == tuple(want) else f"!= {tuple(want)}"


def _computes(a):
    """Whether the op_api goes on to the L0 op for these arguments (its empty-tensor return:
    an empty x1 in static mode writes nothing the phase one compares)."""
    return 0 not in a.x1.shape or _dynamic(a)


def x_shape_fits(a, given, part=None, shapes=None):
    """y1's and x's rule (CheckShapeEqs): x1's shape."""
    return _same(a, given, a.x1.shape)


def _empty_beside_x1(a, given):
    """The emulator's stricter rule (docs/emulator.md): an empty output beside a non-empty x1
    sends the op_api to its empty-input kernel, which writes no y1."""
    if 0 not in a.x1.shape and 0 in tuple(given):
        return "is empty beside a non-empty x1 (the op_api would then write no result)"
    return None


def y2_fits(a, given, part=None, shapes=None):
    """y2's rule: x1's shape with scales2 (CheckShapeEqs); without, any shape but an empty
    one beside a non-empty x1."""
    if a.scales2 is not None:
        return _same(a, given, a.x1.shape)
    return _empty_beside_x1(a, given)


def out_scales1_fits(a, given, part=None, shapes=None):
    """Dynamic mode: x1's shape without its last dim (CheckShapeRel); static: any shape but
    an empty one beside a non-empty x1 (as y2's)."""
    if _dynamic(a):
        return _same(a, given, a.x1.shape[:-1])
    return _empty_beside_x1(a, given)


def out_scales2_fits(a, given, part=None, shapes=None):
    """Dynamic mode with scales2: out_scales1's shape (CheckShapeEqs), without it any shape
    but an empty one beside a non-empty x1; static: as out_scales1's."""
    if _dynamic(a):
        if a.scales2 is None:
            return _empty_beside_x1(a, given)
        want = (shapes or {}).get("out_scales1", a.x1.shape[:-1])
        return _same(a, given, want)
    return out_scales1_fits(a, given, part, shapes)


def y2_unwritten(a, part):
    if a.scales2 is None:
        return f"written only with scales2 given ({_OP_API}: isDual)"
    return None


def x_unwritten(a, part):
    if not a.additional_output:
        return ("written only with additional_output (op_kernel/arch35: the tiling's "
                "outputX)")
    return None


def out_scales1_unwritten(a, part):
    if not _dynamic(a):
        return f"written only in dynamic mode ({_OP_API}: isDyn)"
    return None


def out_scales2_unwritten(a, part):
    return out_scales1_unwritten(a, part) or y2_unwritten(a, part)


def smoke_case(shape, dtype, scale_dtype, dual=True, bias=False, scale=40.0, zero=3,
               dynamic=False):
    """A smoke case ``(name, make)``: ``make()`` gives the inputs in declaration order for
    ``shape`` ("bf16" names bfloat16), gamma over the last dim, ``scales2`` only when
    ``dual``, a bias of gamma's shape with ``bias``. Static mode: divisor scales near
    ``scale`` (most results inside int8, some saturating), both zero points with ``dual``;
    ``dynamic``: smooth scales near 1 (``scale_dtype`` must be x1's), no zero points."""
    def make():
        from ..dtypes import bfloat16
        named = {"bf16": bfloat16()}
        dt, sdt = (named.get(d, d) for d in (dtype, scale_dtype))
        rng = np.random.default_rng(shape[-1] + len(shape))
        n = shape[-1]
        x1 = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.25).astype(dt)
        x2 = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        g = (1.0 + 0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        b = (0.25 * rng.standard_normal(n, dtype=np.float32)).astype(dt)
        c = (0.5 * rng.standard_normal(n, dtype=np.float32)).astype(dt) if bias else None
        s1 = (1.0 / scale * (1 + 0.25 * rng.random(n, dtype=np.float32))).astype(sdt)
        s2 = (0.5 * s1.astype(np.float32)).astype(sdt) if dual else None
        z1 = rng.integers(-zero, zero + 1, n).astype(sdt) if dual else None
        z2 = (-z1.astype(np.float32)).astype(sdt) if dual else None
        if dynamic:
            s1 = (scale * s1.astype(np.float32)).astype(sdt)
            s2 = None if s2 is None else (scale * s2.astype(np.float32)).astype(sdt)
            return x1, x2, g, b, c, s1, s2, None, None, "dynamic", 1e-5, True, True
        return x1, x2, g, b, c, s1, s2, z1, z2, "static", 1e-5, True, True
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return (f"{name}{list(shape)}{' dynamic' if dynamic else ''}{' dual' if dual else ''}"
            f"{' bias' if bias else ''}"), make


ADD_LAYER_NORM_QUANT = Declared("aclnnAddLayerNormQuant", (
    tensor("x1"),
    tensor("x2", like="x1"),
    tensor("gamma", like="x1"),
    tensor("beta", like="x1"),
    tensor("biasOptional", optional=True, like="x1"),
    tensor("scales1Optional", optional=True),
    tensor("scales2Optional", optional=True),
    tensor("zeroPoints1Optional", optional=True),
    tensor("zeroPoints2Optional", optional=True),
    string("quantMode", default="static"),
    double("epsilon", default=1e-5),
    flag("additionalOutput", default=True),
    flag("divMode", default=True),
    output("y1Out", shape=shape_of("x1"), dtype=np.int8, fits=x_shape_fits),
    output("y2Out", shape=shape_of("x1"), dtype=np.int8, fits=y2_fits, unwritten=y2_unwritten),
    output("xOut", shape=shape_of("x1"), dtype=dtype_of("x1"), fits=x_shape_fits,
           unwritten=x_unwritten),
    output("outScales1Out", shape=_out_scales_shape, dtype=np.float32, fits=out_scales1_fits,
           unwritten=out_scales1_unwritten),
    output("outScales2Out", shape=_out_scales_shape, dtype=np.float32, fits=out_scales2_fits,
           unwritten=out_scales2_unwritten),
), check=add_layer_norm_quant_check, reference=reference.add_layer_norm_quant,
    error_scale=reference.add_layer_norm_quant_error_scale,
    smoke_cases=(smoke_case((8, 1024), np.float16, np.float32),
                 smoke_case((4, 3, 200), "bf16", "bf16", dual=False, bias=True),
                 smoke_case((6, 40), np.float32, np.float32),
                 smoke_case((8, 512), np.float16, np.float16, dynamic=True),
                 smoke_case((2, 3, 96), "bf16", "bf16", dual=False, bias=True, dynamic=True),
                 # rows too long for the full-load kernel: the Welford kernel, three column
                 # slices, the last shorter
                 smoke_case((2, 13000), np.float16, np.float16)),
    # 561003: an (x1, scales) pair without a kernel (docs/emulator.md)
    rule_codes=(561003,), staged_codes=_TILING + _NO_KERNEL, parts=_KERNEL_PARTS)


@overload
def add_layer_norm_quant(x1: np.ndarray, x2: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                         bias: Optional[np.ndarray] = ..., scales1: Optional[np.ndarray] = ...,
                         scales2: Optional[np.ndarray] = ...,
                         zero_points1: Optional[np.ndarray] = ...,
                         zero_points2: Optional[np.ndarray] = ..., quant_mode: str = ...,
                         epsilon: float = ..., additional_output: bool = ...,
                         div_mode: bool = ..., *, stream: Optional["Stream"] = ...,
                         out: OutArg = ...
                         ) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[np.ndarray],
                                    Optional[np.ndarray], Optional[np.ndarray]]: ...


@overload
def add_layer_norm_quant(x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                         beta: "DeviceTensor", bias: Optional["DeviceTensor"] = ...,
                         scales1: Optional["DeviceTensor"] = ...,
                         scales2: Optional["DeviceTensor"] = ...,
                         zero_points1: Optional["DeviceTensor"] = ...,
                         zero_points2: Optional["DeviceTensor"] = ..., quant_mode: str = ...,
                         epsilon: float = ..., additional_output: bool = ...,
                         div_mode: bool = ..., *, stream: Optional["Stream"] = ...,
                         out: OutArg = ...
                         ) -> Tuple["DeviceTensor", Optional["DeviceTensor"],
                                    Optional["DeviceTensor"], Optional["DeviceTensor"],
                                    Optional["DeviceTensor"]]: ...


def add_layer_norm_quant(x1: Operand, x2: Operand, gamma: Operand, beta: Operand,
                         bias: Optional[Operand] = None, scales1: Optional[Operand] = None,
                         scales2: Optional[Operand] = None,
                         zero_points1: Optional[Operand] = None,
                         zero_points2: Optional[Operand] = None, quant_mode: str = "static",
                         epsilon: float = 1e-5, additional_output: bool = True,
                         div_mode: bool = True, *, stream: Optional["Stream"] = None,
                         out: OutArg = None) -> Any:
    """The residual add fused with LayerNorm over the trailing dims of ``x1`` that ``gamma``
    has, then quantized: ``(y1, y2, x, out_scales1, out_scales2)`` with ``x = x1 + x2 (+
    bias)``, ``y = (x - mean) * rstd * gamma + beta`` (``rstd = 1 / sqrt(var + epsilon)``);
    static mode ``yk = int8(clip(round(y / scales_k + zero_points_k), -128, 127))`` (``y *
    scales_k`` when ``div_mode`` is false), ties to even; dynamic mode ``tk = y * scales_k``
    (``y`` without scales1), ``out_scales_k = max|tk| / 127`` per row, ``yk =
    round(tk / out_scales_k)``. Ascend 950 only (the op_api's rule); the device computes in
    float32 (docs/emulator.md: the emulator computes both modes' full-load kernels and, for
    rows too long for them, their Welford kernels).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``y2`` is None without ``scales2``, ``x`` without ``additional_output``, the out scales in
    static mode. ``out=(y1, y2, x, out_scales1, out_scales2)`` gives preallocated outputs of
    the same kind as the inputs.
    """
    return ADD_LAYER_NORM_QUANT.call((x1, x2, gamma, beta, bias, scales1, scales2, zero_points1,
                                      zero_points2, quant_mode, epsilon, additional_output,
                                      div_mode), out=out, stream=stream)


class AddLayerNormQuant(Plan):
    """An :func:`add_layer_norm_quant` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y1``, ``y2``, ``x``, ``out_scales1``,
    ``out_scales2`` (None where not written); ``run(stream)`` enqueues phase two only."""

    declared = ADD_LAYER_NORM_QUANT
    __slots__ = ()

    def __init__(self, x1: "DeviceTensor", x2: "DeviceTensor", gamma: "DeviceTensor",
                 beta: "DeviceTensor", bias: Optional["DeviceTensor"] = None,
                 scales1: Optional["DeviceTensor"] = None,
                 scales2: Optional["DeviceTensor"] = None,
                 zero_points1: Optional["DeviceTensor"] = None,
                 zero_points2: Optional["DeviceTensor"] = None, quant_mode: str = "static",
                 epsilon: float = 1e-5, additional_output: bool = True,
                 div_mode: bool = True, *, out: OutArg = None) -> None:
        self._prepare((x1, x2, gamma, beta, bias, scales1, scales2, zero_points1, zero_points2,
                       quant_mode, epsilon, additional_output, div_mode), out)
