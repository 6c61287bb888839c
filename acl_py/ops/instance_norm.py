"""``aclnnInstanceNorm``: InstanceNorm of a 4-D input, :func:`instance_norm` and the plan
:class:`InstanceNorm`.

Each (sample, channel) pair of ``x`` is normalized over its ``H * W`` values; ``data_format``
says where the channel is (``"NCHW"``: dim 1, ``"NHWC"``: dim 3; the vendor compares the
first four characters only, so a longer string beginning with either is that format). The
operator runs on the Atlas inference series only (Ascend 310P): its op_api refuses every
other part in phase one (hicann/ops-nn norm/instance_norm_v3/op_host/op_api/
aclnn_instance_norm.cpp CheckPlatform, 161002).

Python-level checks (see :mod:`._declare`), in the op_api's order: argument kinds;
``data_format`` beginning with NCHW or NHWC; dtypes (``x`` float32 or float16, ``gamma``,
``beta`` and the ``out=`` entries x's); ``x`` of rank 4; ``gamma`` and ``beta`` vectors of
``C`` elements; for a non-empty ``x``, ``C`` and ``H * W`` each at least 32 bytes of x's
dtype (the docs' kernel limit, refused with 561103); ``out=`` shapes as below. The part is
phase one's (checked after x's rank above 8: a diagnosis on another part names nothing
after it).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import (VIEW_COPY, Declared, Operand, OutArg, Plan, checked_later, configured,
                       diagnosing, double, dtype_of, output, part_of, shape_of, staged, string,
                       tensor)

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["instance_norm", "InstanceNorm", "INSTANCE_NORM", "stats_shape"]

_DTYPES = ("float32", "float16")
_KERNEL_BYTES = 32   # docs/aclnnInstanceNorm.md: C and H * W each at least 32 bytes


def _channels_last(a):
    return a.data_format.startswith("NHWC")


def _precheck(a):
    """The op_api's first rule, before any dtype (aclnn_instance_norm.cpp CheckParams: its
    CheckParamValid precedes CheckDtypeValid)."""
    if not a.data_format.startswith(("NCHW", "NHWC")):
        raise AclArgumentError("data_format", f"{a.data_format!r} must begin with 'NCHW' or "
                               f"'NHWC'")


def _check(a):
    """The vendor's rules after the dtypes (every tensor's, the outputs' too) that name a
    Python argument (aclnn_instance_norm.cpp CheckShape, CheckInputAndWeightShape; beta's
    length and the 32-byte minimum are the docs')."""
    shape = a.x.shape
    if len(shape) > 8:
        raise AclArgumentError("x", f"shape {shape} has more than 8 dims (must have 4)")
    if diagnosing() is not None and not INSTANCE_NORM.runs_on(part_of().name):
        return  # the op_api's part check (CheckPlatform) refused the call before the rest
    if len(shape) != 4:
        raise AclArgumentError("x", f"shape {shape} must have 4 dims ({a.data_format[:4]})")
    # the ranks of all three (one rule: CheckInputAndWeightShape), then gamma's length, then
    # beta's (stricter: the docs')
    for name in ("gamma", "beta"):
        if len(a[name].shape) != 1:
            raise AclArgumentError(name, f"shape {a[name].shape} must have 1 dim")
    last = _channels_last(a)
    c = shape[3] if last else shape[1]
    for name in ("gamma", "beta"):
        if a[name].shape != (c,):
            raise AclArgumentError(name, f"shape {a[name].shape} must be ({c},): one value per "
                                   f"channel of x {shape} ({a.data_format[:4]})")
    if 0 in shape:
        return
    hw = shape[1] * shape[2] if last else shape[2] * shape[3]
    size = a.x.dtype.itemsize
    for what, n in (("C", c), ("H * W", hw)):
        if n * size < _KERNEL_BYTES:
            # checked after the op_api's rules (docs/emulator.md row 8)
            staged((561103,), "x", f"{what} = {n} is {n * size} bytes of {a.x.dtype}: the "
                   f"kernel takes at least {_KERNEL_BYTES} (docs/aclnnInstanceNorm.md)")


def stats_shape(a):
    """The shape of mean and variance: ``(N, C, 1, 1)`` for NCHW, ``(N, 1, 1, C)`` for
    NHWC (the L0 op's statistics, reshaped by the op_api for NHWC)."""
    n = a.x.shape[0]
    if _channels_last(a):
        return (n, 1, 1, a.x.shape[3])
    return (n, a.x.shape[1], 1, 1)


def _empty_call(a, shapes):
    return 0 in a.x.shape or any(0 in s for s in (shapes or {}).values())


def _fits(want):
    """An output's ``fits``: phase one copies the kernel's result into it (hicann/ops-math
    conversion/contiguous/op_host/op_api/contiguous.cpp CheckViewCopyParams: the same shape,
    or one element each); a call with an empty tensor copies nothing and checks no output
    shape."""
    def fits(a, given, part=None, shapes=None):
        if _empty_call(a, shapes):
            return None
        shape = want(a)
        if math.prod(shape) == 1 and math.prod(given) == 1:
            return None
        return f"!= {shape} (the kernel's result is copied as it is)"
    return fits


def empty_unwritten(name):
    """Output ``name``'s ``unwritten``: why it is not written for checked arguments ``a`` and
    the shapes phase one receives for the outputs (None where it is). Any of the six tensors
    empty returns before the kernel (aclnn_instance_norm.cpp's ``hasEmptyTensor`` return):
    an empty x, or an ``out=`` entry given empty while x has values, leaves every other
    output unwritten; an empty entry itself has nothing to be written (and reaches phase one
    as it is, its emptiness being the return's cause)."""
    def unwritten(a, part, shapes):
        if 0 in shapes[name]:
            return None
        where = ("hicann/ops-nn norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.cpp "
                 "returns before the kernel")
        if 0 in a.x.shape:
            return f"not written for an empty x ({where})"
        empty = next((k for k, s in shapes.items() if 0 in s), None)
        if empty is not None:
            return f"not written for an empty {empty} ({where})"
        return None
    return unwritten


def _smoke(shape, dtype, data_format="NCHW", eps=1e-5):
    def make():
        rng = np.random.default_rng(sum(shape) + len(data_format))
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        c = shape[3] if data_format.startswith("NHWC") else shape[1]
        gamma = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(dtype)
        beta = (0.1 * rng.standard_normal(c, dtype=np.float32)).astype(dtype)
        return x, gamma, beta, data_format, eps
    return f"{np.dtype(dtype).name}{list(shape)}-{data_format}", make


INSTANCE_NORM = Declared("aclnnInstanceNorm", (
    tensor("x", dtypes=_DTYPES),
    tensor("gamma", like="x", dtypes=_DTYPES),
    tensor("beta", like="x", dtypes=_DTYPES),
    string("dataFormat", default="NCHW"),
    double("eps", default=1e-5),
    # another shape: the op_api's copies of the results refuse it (561103)
    output("y", shape=shape_of("x"), dtype=dtype_of("x"), fits=_fits(shape_of("x")),
           unwritten=empty_unwritten("y"), later=checked_later(VIEW_COPY, shape=True)),
    output("mean", shape=stats_shape, dtype=dtype_of("x"), fits=_fits(stats_shape),
           unwritten=empty_unwritten("mean"), later=checked_later(VIEW_COPY, shape=True)),
    output("variance", shape=stats_shape, dtype=dtype_of("x"), fits=_fits(stats_shape),
           unwritten=empty_unwritten("variance"), later=checked_later(VIEW_COPY, shape=True)),
), precheck=_precheck, check=_check, reference=reference.instance_norm,
    error_scale=reference.instance_norm_error_scale,
    # the op_api's order: dataFormat, then every tensor's dtype (y's, mean's, variance's too),
    # then the shapes (aclnn_instance_norm.cpp CheckParams, CheckInputAndWeightShape)
    out_dtypes_first=True,
    # the op_api refuses every part but the Atlas inference series
    parts=configured("ascend310p", source="hicann/ops-nn norm/instance_norm_v3/op_host/op_api/"
                     "aclnn_instance_norm.cpp CheckPlatform (Ascend310P only)"),
    # the docs' 32-byte minimum of C and H * W, and the copies of the results into y, mean,
    # variance (their shapes): phase one refuses them as 561103
    rule_codes=(561103,), staged_codes=(561103,),
    smoke_cases=(_smoke((2, 8, 4, 5), np.float32),
                 _smoke((2, 3, 8, 16), np.float16, "NHWC"),
                 _smoke((1, 16, 6, 6), np.float16, eps=1e-3),
                 _smoke((3, 4, 2, 8), np.float32, "NHWC", eps=0.0)))


@overload
def instance_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                  data_format: str = ..., eps: float = ..., *,
                  stream: Optional["Stream"] = ...,
                  out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def instance_norm(x: "DeviceTensor", gamma: "DeviceTensor", beta: "DeviceTensor",
                  data_format: str = ..., eps: float = ..., *,
                  stream: Optional["Stream"] = ...,
                  out: OutArg = ...) -> Tuple["DeviceTensor", "DeviceTensor",
                                              "DeviceTensor"]: ...


def instance_norm(x: Operand, gamma: Operand, beta: Operand, data_format: str = "NCHW",
                  eps: float = 1e-5, *, stream: Optional["Stream"] = None,
                  out: OutArg = None) -> Any:
    """InstanceNorm of a 4-D ``x`` by ``aclnnInstanceNorm``: ``(y, mean, variance)``, per
    sample and channel of its ``H * W`` values::

        y = (x - mean) / sqrt(variance + eps) * gamma + beta

    with ``variance`` the biased one (divided by ``H * W``) and ``eps`` a float32 on the
    device. ``data_format`` ``"NCHW"`` or ``"NHWC"`` places the channel; ``gamma`` and
    ``beta`` hold one value per channel. y has x's shape; mean and variance are
    ``(N, C, 1, 1)`` (NCHW) or ``(N, 1, 1, C)`` (NHWC); all of x's dtype (float32 or
    float16). The device computes in float32 (docs/emulator.md). Atlas inference parts
    (Ascend 310P) only; C and H * W must each hold at least 32 bytes. An empty x, or an
    ``out=`` entry given empty, writes nothing: every other output is returned as None, a
    given entry left as it was (:func:`empty_unwritten`).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(y, mean, variance)`` gives preallocated outputs of the same kind as the inputs,
    of those shapes (one element each also passes where the shape has one) and x's dtype; a
    ``None`` entry is allocated as by default.
    """
    return INSTANCE_NORM.call((x, gamma, beta, data_format, eps), out=out, stream=stream)


class InstanceNorm(Plan):
    """An :func:`instance_norm` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``y``, ``mean``, ``variance``; ``run(stream)``
    enqueues phase two only."""

    declared = INSTANCE_NORM
    __slots__ = ()

    def __init__(self, x: "DeviceTensor", gamma: "DeviceTensor", beta: "DeviceTensor",
                 data_format: str = "NCHW", eps: float = 1e-5, *,
                 out: OutArg = None) -> None:
        self._prepare((x, gamma, beta, data_format, eps), out)
