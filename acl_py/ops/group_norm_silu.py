"""``aclnnGroupNormSilu`` and ``aclnnGroupNormSiluV2``: GroupNorm followed by Silu,
:func:`group_norm_silu` / :func:`group_norm_silu_v2` and the plans :class:`GroupNormSilu` /
:class:`GroupNormSiluV2` (V2 takes whether to apply Silu: ``activate_silu``).

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(``input`` float32/float16/bfloat16; ``gamma``, ``beta`` input's or float32, one dtype when
both are given); ``input`` of rank >= 2 ``[N, C, ...]``; ``group > 0`` dividing ``C``;
``eps > 0``; ``gamma``/``beta`` vectors of ``C`` elements; ``out=`` entries of input's shape
(out) and ``[N, group]`` (mean, rstd), out of input's dtype, mean and rstd of input's dtype
(on Ascend 950: gamma's, else beta's, else input's). The operator's own rules (rank at most 8,
the part's dtype list: no bfloat16 on Atlas inference parts; N and C not 0 except on Ascend
950; no kernel on the Atlas training parts) are phase one's (docs/emulator.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError, AclTypeError
from ._declare import (OP_DEF, Declared, Operand, OutArg, Plan, configured, double, dtype_of, flag,
                       integer, output, part_of, shape_of, staged, tensor)
from .group_norm import stats_unwritten

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["group_norm_silu", "GroupNormSilu", "GROUP_NORM_SILU", "group_norm_silu_v2",
           "GroupNormSiluV2", "GROUP_NORM_SILU_V2"]

# None for the Atlas training series (ascend910) nor Atlas 200I/500 A2 (ascend310b), which the
# docs list as unsupported.
_KERNEL_PARTS = configured("ascend310p", "ascend910_93", "ascend910b", "ascend950", "kirin9030",
                          "kirinx90", source=OP_DEF.format("group_norm_silu"))


def group_norm_silu_check(a):
    """The vendor's shape, attribute and dtype-pair rules that name a Python argument
    (aclnn_group_norm_silu.cpp CheckShape, CheckAttr, CheckDtypeValid): input [N, C, ...];
    group > 0 divides C; eps > 0; gamma and beta hold C values, of one dtype when both are
    given; off Ascend 950 a float32 gamma (beta) with a 16-bit input needs beta (gamma) too."""
    shape = a.input.shape
    if len(shape) < 2:
        raise AclArgumentError("input", f"shape {shape} must have at least 2 dims (N, C, ...)")
    c = shape[1]
    for name in ("gamma", "beta"):
        t = a[name]
        if t is not None and t.shape != (c,):
            raise AclArgumentError(name, f"shape {t.shape} must be ({c},): one value per "
                                   f"channel of input {shape}")
    if a.group <= 0:
        raise AclArgumentError("group", f"{a.group} must be greater than 0")
    if not a.eps > 0:
        raise AclArgumentError("eps", f"{a.eps!r} must be greater than 0")
    if c % a.group:
        raise AclArgumentError("group", f"{a.group} must divide the channel count C = {c}")
    if a.gamma is not None and a.beta is not None and a.gamma.dtype != a.beta.dtype:
        raise AclTypeError("beta", f"dtype {a.beta.dtype.name} must be gamma's dtype "
                           f"{a.gamma.dtype.name}")
    # Off Ascend 950 the op_api makes an absent gamma/beta of input's dtype, and the kernels
    # (their tiling, group_norm_silu_tiling.cpp) take float32 for both or for neither.
    for given, absent in (("gamma", "beta"), ("beta", "gamma")):
        t = a[given]
        if t is not None and a[absent] is None and t.dtype != a.input.dtype and \
                part_of().npu_arch != 3510:
            # the L0 op's (row 7), after every check of the op_api
            staged(_RULE_CODES, absent, f"must be given (float32) with a float32 {given} on "
                   f"this part: an absent {absent} is made of input's dtype "
                   f"{a.input.dtype.name}, and the kernels take float32 for both or neither")


def _stats_shape(a):
    return (a.input.shape[0], a.group)


def stats_dtype(a):
    """mean's and rstd's dtype: input's; on Ascend 950 (whose kernels write them in float32
    next to float32 gamma/beta) gamma's, else beta's, else input's (the L0 op,
    op_api/group_norm_silu.cpp)."""
    if part_of().npu_arch == 3510:
        for t in (a.gamma, a.beta):
            if t is not None:
                return t.dtype
    return a.input.dtype


def _smoke(shape, group, dtype, affine=True, float_affine=False, eps=1e-5, v2=None):
    def make():
        from ..dtypes import bfloat16
        dt = bfloat16() if dtype == "bf16" else dtype
        adt = np.float32 if float_affine else dt
        rng = np.random.default_rng(sum(shape) + group + 3)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
        c = shape[1]
        g = (1 + 0.25 * rng.standard_normal(c, dtype=np.float32)).astype(adt) if affine else None
        b = (0.5 * rng.standard_normal(c, dtype=np.float32)).astype(adt) if affine else None
        return (x, g, b, group, eps) + (() if v2 is None else (v2,))
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    kind = "" if affine else "-no-affine"
    kind += "-float32-affine" if float_affine else ""
    kind += "" if v2 is None else ("-silu" if v2 else "-no-silu")
    return f"{name}{list(shape)}/{group}{kind}", make


# The op_api returns the L0 op's and the outputs' copy's refusals as 561103: the kernels'
# gamma/beta dtype rules and, on Ascend 950, meanOut/rstdOut of another dtype than gamma's.
_RULE_CODES = (561103,)


def _args(*extra):
    return (
        tensor("self", name="input"),
        tensor("gamma", optional=True, like="input", or_float32=True),
        tensor("beta", optional=True, like="input", or_float32=True),
        integer("group"),
        double("eps", default=1e-5),
    ) + extra + (
        output("out", shape=shape_of("input"), dtype=dtype_of("input")),
        output("meanOut", shape=_stats_shape, dtype=stats_dtype, unwritten=stats_unwritten),
        output("rstdOut", shape=_stats_shape, dtype=stats_dtype, unwritten=stats_unwritten),
    )


GROUP_NORM_SILU = Declared(
    "aclnnGroupNormSilu", _args(), check=group_norm_silu_check,
    reference=reference.group_norm_silu, error_scale=reference.group_norm_silu_error_scale,
    parts=_KERNEL_PARTS, rule_codes=_RULE_CODES, staged_codes=_RULE_CODES,
    # as GroupNorm's: HxW below a 32-byte block, or 1, then the inference parts' small kernel
    smoke_cases=(_smoke((2, 64, 7), 32, np.float32),
                 _smoke((4, 32, 3, 5), 8, np.float16),
                 _smoke((4, 32, 3, 5), 8, np.float16, float_affine=True),
                 _smoke((3, 6, 5), 3, np.float32, affine=False),
                 _smoke((2, 8, 8, 8), 4, np.float32)))

GROUP_NORM_SILU_V2 = Declared(
    "aclnnGroupNormSiluV2", _args(flag("activateSilu", default=True)),
    check=group_norm_silu_check, reference=reference.group_norm_silu,
    error_scale=reference.group_norm_silu_error_scale, parts=_KERNEL_PARTS,
    rule_codes=_RULE_CODES, staged_codes=_RULE_CODES,
    smoke_cases=(_smoke((2, 16, 5), 4, np.float32, v2=True),
                 _smoke((2, 16, 5), 4, np.float16, v2=False),
                 _smoke((4, 8, 1), 8, np.float32, v2=True)))


@overload
def group_norm_silu(input: np.ndarray, group: int, gamma: Optional[np.ndarray] = ...,
                    beta: Optional[np.ndarray] = ..., eps: float = ..., *,
                    stream: Optional["Stream"] = ..., out: OutArg = ...
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def group_norm_silu(input: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = ...,
                    beta: Optional["DeviceTensor"] = ..., eps: float = ..., *,
                    stream: Optional["Stream"] = ..., out: OutArg = ...
                    ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def group_norm_silu(input: Operand, group: int, gamma: Optional[Operand] = None,
                    beta: Optional[Operand] = None, eps: float = 1e-5, *,
                    stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """GroupNorm of ``input`` ``[N, C, ...]`` over ``group`` groups, then Silu:
    ``(out, mean, rstd)`` with ``y = (input - mean) * rstd * gamma + beta`` as in
    :func:`~acl_py.group_norm` and ``out = y / (1 + exp(-y))``; ``gamma``/``beta`` (one value
    per channel, input's dtype or float32, one dtype when both are given; None: ones/zeros).
    The device computes in float32, applies Silu to the unrounded ``y`` and rounds ``out``
    once to input's dtype; ``mean`` and ``rstd`` are ``[N, group]`` of input's dtype (on
    Ascend 950 of gamma's, else beta's). Atlas training parts have no kernel; on Atlas
    inference parts mean and rstd are written for some shapes only (as GroupNorm's:
    :func:`~acl_py.ops.group_norm.stats_unwritten`; the result holds None for both there).

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(out, mean, rstd)`` gives preallocated outputs; a ``None`` entry is allocated.
    """
    return GROUP_NORM_SILU.call((input, gamma, beta, group, eps), out=out, stream=stream)


@overload
def group_norm_silu_v2(input: np.ndarray, group: int, gamma: Optional[np.ndarray] = ...,
                       beta: Optional[np.ndarray] = ..., eps: float = ...,
                       activate_silu: bool = ..., *, stream: Optional["Stream"] = ...,
                       out: OutArg = ...) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@overload
def group_norm_silu_v2(input: "DeviceTensor", group: int,
                       gamma: Optional["DeviceTensor"] = ...,
                       beta: Optional["DeviceTensor"] = ..., eps: float = ...,
                       activate_silu: bool = ..., *, stream: Optional["Stream"] = ...,
                       out: OutArg = ...
                       ) -> Tuple["DeviceTensor", "DeviceTensor", "DeviceTensor"]: ...


def group_norm_silu_v2(input: Operand, group: int, gamma: Optional[Operand] = None,
                       beta: Optional[Operand] = None, eps: float = 1e-5,
                       activate_silu: bool = True, *, stream: Optional["Stream"] = None,
                       out: OutArg = None) -> Any:
    """:func:`group_norm_silu` through ``aclnnGroupNormSiluV2``: Silu applied only with
    ``activate_silu`` (False: GroupNorm's numbers of the same kernels, gamma/beta float32
    allowed)."""
    return GROUP_NORM_SILU_V2.call((input, gamma, beta, group, eps, activate_silu), out=out,
                                   stream=stream)


class GroupNormSilu(Plan):
    """A :func:`group_norm_silu` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): outputs ``out``, ``mean``, ``rstd`` (None where the part does
    not write them); ``run(stream)`` enqueues phase two only."""

    declared = GROUP_NORM_SILU
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = None,
                 beta: Optional["DeviceTensor"] = None, eps: float = 1e-5, *,
                 out: OutArg = None) -> None:
        self._prepare((input, gamma, beta, group, eps), out)


class GroupNormSiluV2(Plan):
    """A :func:`group_norm_silu_v2` plan (see :class:`GroupNormSilu`)."""

    declared = GROUP_NORM_SILU_V2
    __slots__ = ()

    def __init__(self, input: "DeviceTensor", group: int, gamma: Optional["DeviceTensor"] = None,
                 beta: Optional["DeviceTensor"] = None, eps: float = 1e-5,
                 activate_silu: bool = True, *, out: OutArg = None) -> None:
        self._prepare((input, gamma, beta, group, eps, activate_silu), out)
