"""``aclnnBatchNormElemtBackward``: the second half of SyncBatchNorm's backward,
:func:`batch_norm_elemt_backward` and the plan :class:`BatchNormElemtBackward`.

It takes :func:`~acl_py.batch_norm_reduce_backward`'s ``sum_dy`` and ``sum_dy_xmu`` summed over
the ranks and ``counter``, the ranks' element counts per channel (any shape: the device sums
all of it), and forms this rank's grad_input.

Python-level checks (see :mod:`._declare`: NumPy calls make them before any C call,
DeviceTensor calls when phase one refuses, to name the argument): argument kinds; dtypes
(float32/float16/bfloat16, ``counter`` float32/float16/int32); ``input`` of rank 2 to 8 with
channels (dim 1) and ``grad_out`` of its shape; ``mean``, ``invstd``, ``weight``, ``sum_dy``,
``sum_dy_xmu`` vectors of ``C`` elements; ``counter`` of rank at most 8. The part's dtype list
(no bfloat16 on the Atlas training series) is phase one's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple, overload

import numpy as np

from .. import reference
from ..errors import AclArgumentError
from ._declare import Declared, FLOATS, Operand, OutArg, Plan, dtype_of, output, shape_of, tensor
from .batch_norm_reduce_backward import KERNEL_PARTS, check_channel_vectors

if TYPE_CHECKING:
    from ..stream import Stream
    from ..tensor import DeviceTensor

__all__ = ["batch_norm_elemt_backward", "BatchNormElemtBackward",
           "BATCH_NORM_ELEMT_BACKWARD"]


def _check(a):
    check_channel_vectors(a, ("mean", "invstd", "weight", "sum_dy", "sum_dy_xmu"))
    if a.counter.ndim > 8:
        raise AclArgumentError("counter", f"shape {a.counter.shape} must have at most 8 dims")


def _smoke(shape, dtype, ranks=3, affine=True, vdt=np.float32, cdt=np.int32):
    def make():
        rng = np.random.default_rng(sum(shape) + 11)
        x = (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dtype)
        dy = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        c = shape[1]
        n = x.size // c
        mean = (0.5 + 0.1 * rng.standard_normal(c)).astype(vdt)
        invstd = (0.5 + rng.random(c)).astype(vdt)
        w = (1 + 0.25 * rng.standard_normal(c)).astype(vdt) if affine else None
        # the sums of every rank's gradOut and gradOut * (x - mean): this rank's, scaled
        sum_dy = (ranks * np.sqrt(n) * rng.standard_normal(c)).astype(vdt)
        sum_dy_xmu = (ranks * np.sqrt(n) * rng.standard_normal(c)).astype(vdt)
        counter = np.full(ranks, n, cdt)
        return dy, x, mean, invstd, w, sum_dy, sum_dy_xmu, counter
    name = np.dtype(dtype).name
    return (f"{name}{list(shape)}-{ranks}ranks{'' if affine else '-no-weight'}"
            f"-counter-{np.dtype(cdt).name}"), make


BATCH_NORM_ELEMT_BACKWARD = Declared("aclnnBatchNormElemtBackward", (
    tensor("gradOut", name="grad_out"),
    tensor("input"),
    tensor("mean"),
    tensor("invstd"),
    tensor("weight", optional=True),
    tensor("sumDy", name="sum_dy"),
    tensor("sumDyXmu", name="sum_dy_xmu"),
    tensor("counter", dtypes=("float32", "float16", "int32")),
    output("gradInput", name="grad_input", shape=shape_of("input"),
           dtype=dtype_of("input"), dtypes=FLOATS),
), check=_check, reference=reference.batch_norm_elemt_backward,
    error_scale=reference.batch_norm_elemt_backward_error_scale, parts=KERNEL_PARTS,
    smoke_cases=(_smoke((4, 6, 5, 3), np.float32),
                 _smoke((8, 16, 7), np.float16, vdt=np.float16, cdt=np.float16),
                 _smoke((3, 5, 4), np.float32, ranks=1, affine=False, cdt=np.float32),
                 _smoke((6, 3, 10), np.float16, ranks=8)))


@overload
def batch_norm_elemt_backward(grad_out: np.ndarray, input: np.ndarray, mean: np.ndarray,
                              invstd: np.ndarray, weight: Optional[np.ndarray],
                              sum_dy: np.ndarray, sum_dy_xmu: np.ndarray, counter: np.ndarray,
                              *, stream: Optional["Stream"] = ..., out: OutArg = ...
                              ) -> Tuple[np.ndarray]: ...


@overload
def batch_norm_elemt_backward(grad_out: "DeviceTensor", input: "DeviceTensor",
                              mean: "DeviceTensor", invstd: "DeviceTensor",
                              weight: Optional["DeviceTensor"], sum_dy: "DeviceTensor",
                              sum_dy_xmu: "DeviceTensor", counter: "DeviceTensor", *,
                              stream: Optional["Stream"] = ..., out: OutArg = ...
                              ) -> Tuple["DeviceTensor"]: ...


def batch_norm_elemt_backward(grad_out: Operand, input: Operand, mean: Operand,
                              invstd: Operand, weight: Optional[Operand], sum_dy: Operand,
                              sum_dy_xmu: Operand, counter: Operand, *,
                              stream: Optional["Stream"] = None, out: OutArg = None) -> Any:
    """``(grad_input,)``: SyncBatchNorm's gradient of ``input`` ``[N, C, ...]`` from the
    gradient ``grad_out`` of its output, the batch's ``mean`` and ``invstd`` (``1 / sqrt(var +
    eps)``), ``weight`` (None: ones) and the ranks' all-reduced sums
    (:func:`~acl_py.batch_norm_reduce_backward`), with ``n = sum(counter)``, the whole batch's
    values per channel::

        grad_input = (grad_out - sum_dy / n
                      - (input - mean) * invstd**2 * sum_dy_xmu / n) * invstd * weight

    The device computes in float16 when every floating input is float16 (a given weight
    too), else in float32 (docs/emulator.md); grad_input defaults to input's shape and dtype
    (another float dtype may be given: the device casts to it). An empty input writes nothing.
    The Atlas inference series is not supported.

    * NumPy arrays in, NumPy arrays out (staged through the device, synchronized);
    * :class:`~acl_py.DeviceTensor` s in, DeviceTensors out, queued on ``stream``.

    ``out=(grad_input,)`` gives a preallocated output of the same kind as the inputs.
    """
    return BATCH_NORM_ELEMT_BACKWARD.call((grad_out, input, mean, invstd, weight, sum_dy,
                                           sum_dy_xmu, counter), out=out, stream=stream)


class BatchNormElemtBackward(Plan):
    """A :func:`batch_norm_elemt_backward` plan over fixed device tensors (see
    :class:`~acl_py.ops.Plan`): output ``grad_input``; ``run(stream)`` enqueues phase two
    only."""

    declared = BATCH_NORM_ELEMT_BACKWARD
    __slots__ = ()

    def __init__(self, grad_out: "DeviceTensor", input: "DeviceTensor", mean: "DeviceTensor",
                 invstd: "DeviceTensor", weight: Optional["DeviceTensor"],
                 sum_dy: "DeviceTensor", sum_dy_xmu: "DeviceTensor", counter: "DeviceTensor",
                 *, out: OutArg = None) -> None:
        self._prepare((grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, counter),
                      out)
