"""``aclnnFastLayerNorm``: LayerNorm through the LayerNormV4 kernel on every call,
:func:`fast_layer_norm` and the plan :class:`FastLayerNorm`.

The same arguments and arithmetic as :func:`~acl_py.layer_norm` (the same kernel,
:func:`acl_py.reference.layer_norm` is its reference), checked by its own op_api
(hicann/ops-nn norm/layer_norm_v4/op_host/op_api/aclnn_fast_layer_norm.cpp), which copies the
kernel's results where aclnnLayerNorm casts them: ``out`` is of input's dtype, and a mean or
rstd ``out=`` entry of another shape than ``[A1..Ai, 1..1]`` passes only with one element
where that shape has one (:func:`stats_fits`); mean and rstd may be of any of the three
dtypes (cast from the kernel's float32).

Python-level checks (see :mod:`._declare`): argument kinds; dtypes (each float32/float16/
bfloat16; ``weight``/``bias`` input's or float32); ``normalized_shape`` the trailing dims of
``input``; ``weight``/``bias`` shaped ``normalized_shape``; ``out=`` entries as above. The
operator's own rules (ranks <= 8, ``normalized_shape`` length 1..8, weight and bias of one
dtype, N at most 583705600, the parts with a kernel) are phase one's. The docs support Atlas
A2/A3 only; the vendor's code also runs on Ascend 950 (its LayerNormV4 kernels); Atlas
inference parts have a kernel for float16 rows of at most 64 elements that are not a
multiple of 16 only, the Atlas training series none (docs/emulator.md).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple, overload

import numpy as np

from .. import reference
from ._declare import (OP_DEF, Declared, FLOATS, Operand, OutArg, Plan, configured, double,
                       dtype_of, int_array, output, shape_of, tensor)
from .layer_norm import normalized_split, smoke_case, stats_shape

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["fast_layer_norm", "FastLayerNorm", "FAST_LAYER_NORM"]


def stats_fits(a, shape, part=None, shapes=None):
    """Phase one's rule for a mean or rstd ``out=` entry of another shape than
    :func:`~acl_py.ops.layer_norm.stats_shape` (None where ``shape`` passes, else the rule):
    the op_api copies the kernel's result into it (hicann/ops-math conversion/contiguous/
    op_host/op_api/contiguous.cpp CheckViewCopyParams: one shape, or one element each). An
    empty call copies nothing: there the emulator's stricter rule asks for M elements
    (docs/emulator.md)."""
    want = stats_shape(a)
    rows = math.prod(want)
    n = math.prod(a.normalized_shape)
    if rows == 0 or n == 0:
        if math.prod(shape) == rows:
            return None
        return f"must hold {rows} elements (as {want})"
    if rows == 1 and math.prod(shape) == 1:
        return None
    return f"!= {want} (input's batch dims then ones: the kernel's result is copied as it is)"


# Atlas A2/A3 (the docs' parts) and Ascend 950 have a LayerNormV4 kernel for every dtype the
# op_api takes; Atlas inference parts for short float16 rows only, which no smoke case is.
_KERNEL_PARTS = configured("ascend910_93", "ascend910b", "ascend950",
                           source=OP_DEF.format("layer_norm_v4"))

FAST_LAYER_NORM = Declared("aclnnFastLayerNorm", (
    tensor("input"),
    int_array("normalizedShape"),
    tensor("weightOptional", optional=True, like="input", or_float32=True),
    tensor("biasOptional", optional=True, like="input", or_float32=True),
    double("eps", default=1e-5),
    output("out", shape=shape_of("input"), dtype=dtype_of("input")),
    output("meanOutOptional", shape=stats_shape, dtype=np.float32, dtypes=FLOATS,
           fits=stats_fits),
    output("rstdOutOptional", shape=stats_shape, dtype=np.float32, dtypes=FLOATS,
           fits=stats_fits),
), check=normalized_split, reference=reference.layer_norm,
    error_scale=reference.layer_norm_error_scale, parts=_KERNEL_PARTS,
    # the copies of the kernel's results (out's dtype, mean/rstd's shape) and the docs' limit
    # on N: phase one refuses them as 561103
    rule_codes=(561103,),
    smoke_cases=(smoke_case("fp32", (8, 1024), 1, np.float32),
                 smoke_case("bf16-fp32-weight", (4, 128, 768), 1, "bf16", np.float32),
                 smoke_case("fp16-no-weight", (64, 40), 1, np.float16, weight=False),
                 smoke_case("rank4-norm3", (2, 3, 4, 5), 3, np.float16, np.float32,
                            eps=1e-3)),
    smoke_full_cases=(smoke_case("bf16", (64, 512), 1, "bf16"),
                      smoke_case("fp16-large", (8192, 1024), 1, np.float16, np.float32)))


@overload
def fast_layer_norm(input: np.ndarray, normalized_shape: Sequence[int],
                    weight: Optional[np.ndarray] = ..., bias: Optional[np.ndarray] = ...,
                    eps: float = ..., *, stream: Optional["Stream"] = ...,
                    out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def fast_layer_norm(input: "DeviceTensor", normalized_shape: Sequence[int],
                    weight: Optional["DeviceTensor"] = ..., bias: Optional["DeviceTensor"] = ...,
                    eps: float = ..., *, stream: Optional["Stream"] = ...,
                    out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor",
                                                "DeviceTensor"]: ...


def fast_layer_norm(input: Operand, normalized_shape: Sequence[int],
                    weight: Optional[Operand] = None, bias: Optional[Operand] = None,
                    eps: float = 1e-5, *, stream: Optional["Stream"] = None,
                    out: OutArg = None) -> Any:
    """LayerNorm over the trailing ``normalized_shape`` dims of ``input`` by
    ``aclnnFastLayerNorm``: ``(out, mean, rstd)`` as :func:`~acl_py.layer_norm` gives them
    (``out = (input - mean) * rstd * weight + bias``, ``rstd = 1 / sqrt(var + eps)``, ``eps``
    a float32 on the device), always from the LayerNormV4 kernel (float32 statistics).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out`` has input's shape and dtype; ``mean``/``rstd`` are float32 shaped
    ``[A1..Ai, 1..1]``. ``out=(out, mean, rstd)`` gives preallocated outputs of the same kind
    as the inputs: out of input's dtype, mean/rstd of any of the three dtypes and of that
    shape (:func:`stats_fits`); a ``None`` entry is allocated as by default.
    """
    return FAST_LAYER_NORM.call((input, normalized_shape, weight, bias, eps), out=out,
                                stream=stream)


class FastLayerNorm(Plan):
    """A :func:`fast_layer_norm` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``out``, ``mean``, ``rstd``; ``run(stream)`` enqueues
    phase two only."""

    declared = FAST_LAYER_NORM
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", normalized_shape: Sequence[int],
                 weight: Optional["DeviceTensor"] = None, bias: Optional["DeviceTensor"] = None,
                 eps: float = 1e-5, *, out: OutArg = None) -> None:
        self._prepare((input, normalized_shape, weight, bias, eps), out)
