"""``aclnnLayerNorm``: the LayerNorm forward, :func:`layer_norm` and the plan
:class:`LayerNorm`; mean and rstd come out as :func:`~acl_py.layer_norm_backward` takes them.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes (each
float32/float16/bfloat16; ``weight``/``bias`` input's or float32); ``normalized_shape`` the
trailing dims of ``input``; ``weight``/``bias`` shaped ``normalized_shape``; ``out=`` entries
of input's shape (out) and, for mean and rstd, phase one's rule on the part
(:func:`stats_fits`), each of any of the three dtypes (the device casts to it). The operator's own rules (ranks <= 8,
``normalized_shape`` length 1..8, weight and bias of one dtype, the part's dtype list) are
phase one's.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (Declared, FLOATS, Operand, OutArg, Plan, double, dtype_of, int_array,
                       output, shape_of, tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["layer_norm", "LayerNorm", "LAYER_NORM"]



def normalized_split(a):
    """Checks that ``a.normalized_shape`` is the trailing dims of ``a.input`` and that
    ``a.weight``/``a.bias`` (when given) have that shape; returns the batch dims."""
    shape, ns = a.input.shape, a.normalized_shape
    split = len(shape) - len(ns)
    if split < 0 or shape[split:] != ns:
        raise AclArgumentError("normalized_shape", f"{ns} must equal the trailing dims of "
                               f"input's shape {shape}")
    for name in ("weight", "bias"):
        t = a[name]
        if t is not None and t.shape != ns:
            raise AclArgumentError(name, f"shape {t.shape} != normalized_shape {ns}")
    return shape[:split]


def stats_shape(a):
    """mean/rstd as CANN writes them: input's batch dims, then a 1 per normalized dim."""
    return a.input.shape[:len(a.input.shape) - len(a.normalized_shape)] + \
        (1,) * len(a.normalized_shape)


def stats_fits(a, shape, part, shapes):
    """Phase one's rule for a mean or rstd ``out=`` entry of another shape than
    :func:`stats_shape` (None where ``shape`` passes, else the rule). On Ascend 950 the
    op_api checks a non-empty one to be input's batch dims then ones, and mean's shape to
    equal rstd's (hicann/ops-nn norm/layer_norm_v4/op_host/op_api/aclnn_layer_norm.cpp
    CheckMeanRstdOutputShape, under IsArch3510); elsewhere it copies the M values into any
    shape. Every part: M elements (the emulator's stricter rule, docs/emulator.md)."""
    want = stats_shape(a)
    rows = math.prod(want)
    if math.prod(shape) != rows:
        return f"must hold {rows} elements (as {want})"
    if part.arch3510:
        if rows:
            return (f"!= {want} (input's batch dims then ones: on {part.name} the shape "
                    f"itself, not only its element count)")
        if shapes["mean"] != shapes["rstd"]:     # one of them is ``shape``
            return (f"with mean {shapes['mean']} and rstd {shapes['rstd']}: on {part.name} "
                    f"the two must have one shape")
    return None



def smoke_case(name, shape, nrank, dtype, param_dtype=None, eps=1e-5, weight=True):
    """A smoke case: random input of ``dtype`` (``"bf16"`` for bfloat16) normalized over its
    last ``nrank`` dims; weight and bias of ``param_dtype`` (None: input's), or neither."""
    def make():
        from ..dtypes import bfloat16
        dt = {"bf16": bfloat16()}.get(dtype, dtype)
        pdt = {"bf16": bfloat16()}.get(param_dtype, param_dtype) or dt
        rng = np.random.default_rng(len(shape) + shape[-1])
        ns = tuple(shape[len(shape) - nrank:])
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        w = (1 + 0.25 * rng.standard_normal(ns, dtype=np.float32)).astype(pdt)
        b = (0.1 * rng.standard_normal(ns, dtype=np.float32)).astype(pdt)
        return (x, ns, w, b, eps) if weight else (x, ns, None, None, eps)
    return name, make


LAYER_NORM = Declared("aclnnLayerNorm", (
    tensor("input"),
    int_array("normalizedShape"),
    tensor("weightOptional", optional=True, like="input", or_float32=True),
    tensor("biasOptional", optional=True, like="input", or_float32=True),
    double("eps", default=1e-5),
    # Phase one takes any supported dtype for each output: results are cast to it.
    output("out", shape=shape_of("input"), dtype=dtype_of("input"), dtypes=FLOATS),
    output("meanOutOptional", shape=stats_shape, dtype=np.float32, dtypes=FLOATS,
           fits=stats_fits),
    output("rstdOutOptional", shape=stats_shape, dtype=np.float32, dtypes=FLOATS,
           fits=stats_fits),
), check=normalized_split, reference=reference.layer_norm,
    error_scale=reference.layer_norm_error_scale,
    smoke_cases=(smoke_case("fp32", (8, 1024), 1, np.float32),
                 smoke_case("bf16-fp32-weight", (4, 128, 768), 1, "bf16", np.float32),
                 smoke_case("fp16", (64, 40), 1, np.float16),   # LayerNormV4 on Atlas A2
                 smoke_case("rank4-norm3", (2, 3, 4, 5), 3, np.float16, np.float32, eps=1e-3)),
    smoke_full_cases=(smoke_case("no-weight", (32, 256), 1, np.float32, weight=False),
                      smoke_case("bf16", (64, 512), 1, "bf16"),
                      smoke_case("fp16-large", (8192, 1024), 1, np.float16, np.float32),
                      smoke_case("fp32-wide", (64, 65536), 1, np.float32)))


@overload
def layer_norm(input: np.ndarray, normalized_shape: Sequence[int],
               weight: Optional[np.ndarray] = ..., bias: Optional[np.ndarray] = ...,
               eps: float = ..., *, stream: Optional["Stream"] = ...,
               out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def layer_norm(input: "DeviceTensor", normalized_shape: Sequence[int],
               weight: Optional["DeviceTensor"] = ..., bias: Optional["DeviceTensor"] = ...,
               eps: float = ..., *, stream: Optional["Stream"] = ...,
               out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def layer_norm(input: Operand, normalized_shape: Sequence[int],
               weight: Optional[Operand] = None, bias: Optional[Operand] = None,
               eps: float = 1e-5, *, stream: Optional["Stream"] = None,
               out: OutArg = None) -> Any:
    """LayerNorm over the trailing ``normalized_shape`` dims of ``input``:
    ``(out, mean, rstd)`` with ``out = (input - mean) * rstd * weight + bias``,
    ``rstd = 1 / sqrt(var + eps)`` (``eps`` reaches the device as a float32).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream`` (results
      valid once it has synchronized).

    ``out`` has input's shape and dtype; ``mean``/``rstd`` are float32 shaped
    ``[A1..Ai, 1..1]`` (input's batch dims, then ones), ready for
    :func:`~acl_py.layer_norm_backward`. ``out=(out, mean, rstd)`` gives preallocated outputs
    of the same kind as the inputs (their dtypes choose the output dtypes; mean/rstd may have
    any shape of M elements, on Ascend 950 only the default one: :func:`stats_fits`); a
    ``None`` entry is allocated as by default.
    """
    return LAYER_NORM.call((input, normalized_shape, weight, bias, eps), out=out,
                           stream=stream)


class LayerNorm(Plan):
    """A :func:`layer_norm` plan over fixed device tensors (see :class:`~acl_py.ops.Plan`):
    outputs ``out``, ``mean``, ``rstd``; ``run(stream)`` enqueues phase two only."""

    declared = LAYER_NORM
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", normalized_shape: Sequence[int],
                 weight: Optional["DeviceTensor"] = None, bias: Optional["DeviceTensor"] = None,
                 eps: float = 1e-5, *, out: OutArg = None) -> None:
        self._prepare((input, normalized_shape, weight, bias, eps), out)
