"""``acl-py smoke``: the hardware smoke test an operator team runs on a freshly installed
machine (or, without CANN, on the emulator, which it then says in its verdict).

It first prints what it is about to test (backend and libraries, the part from
``aclrtGetSocName``, the devices and their memory, the dtypes, the operators), then runs a
matrix of operator cases on each selected device with device tensors, checks each output
against the NumPy float64 reference (:mod:`acl_py.reference`) with the reference's per-dtype
error bound, and prints a table per device and an overall verdict. The cases: the
LayerNormBackward matrix (every supported dtype and the allowed mixes, output masks, weight
absent, shapes from one element to tens of millions, non-contiguous input and output views,
inputs copied on another stream, empty tensors), then the smoke cases of every declared
operator (:data:`acl_py.ops.DECLARED`: LayerNorm, RmsNorm, ...).

* ``--devices all`` or ``--devices 0,3,5``: the listed devices are tested concurrently, a
  thread per device, each with its own stream (``--device N`` is ``--devices N``). With two
  devices or more, the copies between them are checked too, pair by pair
  (:mod:`acl_py.smoke_peer`: peer access, a pattern copied both ways and compared); a pair
  the server does not link is reported, not failed.
* Default dtypes follow the part: no bf16 cases on a part without BFLOAT16; no cases of a
  declared operator the part has no kernel for (``Declared.runs_on``: AddRmsNorm on the
  Atlas training series), named in the header.
* A case the vendor documents as unsupported (``SmokeCase.unsupported``: empty tensors for
  LayerNormBackward) that fails on an NPU is reported as ``unsupported``, not as a failure.
  On the emulator every case must pass.
* ``--require-npu``: exit status 1 with the reason, and no case run, unless the backend is
  real CANN with a device; for acceptance scripts.
* ``--timeout SECONDS`` (default 60): every wait for a device's work is bounded
  (``aclrtSynchronizeStreamWithTimeout``; :mod:`acl_py.smoke_wait`): the cases' and the peer
  copies' own, and those acl-py makes on its own during the run (a stream's close, the
  allocator giving memory back, a pool's cache). No copy is synchronous (``aclrtMemcpy`` has
  no timeout): outputs are read back and peer copies made on streams. A device whose work
  does not complete in time is reported as hung (table, verdict, JSON ``hung``), its
  remaining cases (or peer copies) are not run, and the process exits with status 3 without
  the runtime's teardown, which would wait for the hung work forever.

Exit status: 0 when every case passed on every device; 1 when a case failed, a device could
not be tested or ``--require-npu`` was not met; 2 for a usage error; 3 when a device hung.

Operators come from their declarations: a :class:`~acl_py.ops.Declared` operator's
``smoke_cases`` (every run) and ``smoke_full_cases`` (full runs) are run by one generic runner,
:func:`run_declared_case` (inputs uploaded on the device's stream, the declaration called on
device tensors, outputs read back and judged by the declaration's own
:meth:`~acl_py.ops.Declared.check_outputs`); declaring an operator with smoke cases is all it
takes to smoke-test it. Such a case (a :class:`DeclaredCase`) is named
``<operator>/<its name>`` (``RmsNorm/float32[8,1024]``); its dtypes are its values'. Matrices
a declaration cannot express (LayerNormBackward's layouts, masks and streams) are rows of
:data:`OPERATORS` (a name, the function giving the matrix of :class:`Case` s, the function
running one case, as ``"module:function"`` strings). The pieces are reusable:
:func:`build_cases` gives the matrix, :func:`run_cases` runs any list of cases
(:class:`SmokeCase`: either kind) and returns :class:`CaseResult`\\ s, :func:`run_devices`
does so on several devices at once, :func:`report` builds the JSON-ready report, and
:func:`main` is the command (``cases=`` lets tests inject a deliberately broken case, e.g. one
with a ``reference_hook`` that perturbs the expected values, or :func:`declared_cases` of a
declaration whose reference is perturbed).

Tolerance (see :mod:`acl_py.reference`): each element may differ from the float64 reference by
``RTOL[input dtype] * magnitude + the device's rounding``, where ``magnitude`` is the size of
the terms the float32-accumulated result is computed from, RTOL is ``acl_py.reference.RTOL``
(printed in the header), and the rounding is half an ulp of the dtype the device rounds the
output to first (grad_input: input's; grad_weight/grad_bias: float32) plus half an ulp of the
output dtype where that cast can lose bits. ``err/tol`` in the table is the worst element's
error divided by its bound: a case passes when it is <= 1 for every output.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from . import reference, smoke_wait
from .smoke_peer import PairResult, check_pairs, format_pairs
from .smoke_wait import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from ._loader import Backend
    from .ops import Declared
    from .stream import Stream
    from .tensor import DeviceTensor

OUTPUT_NAMES = ("grad_input", "grad_weight", "grad_bias")
TOLERANCE_RULE = ("|out - ref| <= RTOL[input dtype] * magnitude + half ulp(grad_input: input "
                  "dtype, else float32) + half ulp(out dtype) where the cast loses bits")
SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


class SmokeCase:
    """One operator call to check, as the runner, the tables and the JSON report see it. Two
    kinds: :class:`Case` (a case of a hand-written matrix, a row of :data:`OPERATORS`:
    LayerNormBackward's) and :class:`DeclaredCase` (a declared operator's smoke case,
    :func:`declared_case`). Each has ``name``, ``shape`` and ``dtype`` (its first tensor's),
    ``layout`` (how its tensors lie in device memory), ``operator`` (the name the report
    counts it under) and ``unsupported`` (the vendor documents this input as unsupported: why,
    and where it says so; a failure on an NPU is then reported as such, not as a failure);
    what differs between the kinds is in their methods."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: str
    operator: str
    unsupported: str | None

    def dtype_label(self) -> str:
        """The table's dtype column."""
        raise NotImplementedError

    def mask_label(self) -> str:
        """The table's output-mask column (``-``: the kind has none)."""
        return "-"

    def norm_label(self) -> str:
        """The table's normalized-dims column (``-``: the kind has none)."""
        return "-"

    def describe(self) -> dict:
        """The JSON report's fields of the case: the same keys for every kind, None where one
        does not apply (a kind fills its own)."""
        return {
            "name": self.name, "shape": list(self.shape), "normalized_shape": None,
            "dtype": self.dtype, "stats_dtype": None, "weight_dtype": None,
            "out_dtypes": None, "output_mask": None, "layout": self.layout, "data": None,
            "seed": None, "operator": self.operator,
            "documented_unsupported": self.unsupported, "input_dtypes": None,
        }

    def tensor_dtypes(self) -> set[str]:
        """Every dtype the case's tensors use (what ``--dtypes`` selects by)."""
        raise NotImplementedError

    def runs_on(self, soc: str | None) -> bool:
        """Whether the part named ``soc`` has a kernel for the case's operator."""
        return True

    def run(self, stream: Stream | None = None) -> CaseResult:
        """Runs and checks the case on the calling thread's device; never raises for a
        failing case."""
        raise NotImplementedError


@dataclass(frozen=True)
class Case(SmokeCase):
    """A case of a hand-written matrix (:data:`OPERATORS`; the fields are the
    LayerNormBackward matrix's).

    ``dtype`` is gradOut's and input's; ``stats_dtype`` mean's and rstd's and ``weight_dtype``
    weight's and bias's (``None``: the input's); ``weight=False`` passes no weight (and no bias);
    ``out_dtypes`` are the three outputs' dtypes (``None``: the operator layer's defaults).
    ``layout`` places the tensors in device memory: ``contiguous``; ``transposed`` (input and
    gradOut are transposed views of [N, M] storage); ``strided`` (inputs take every other row of
    a larger buffer); ``offset`` (inputs start one row into their buffer); ``inner-strided``
    (every other element of the last dim); ``strided-out`` (outputs are strided views of larger
    buffers); ``other-stream`` (inputs copied asynchronously on a second stream, the launch's
    stream ordered after them by ``Stream.wait``, an event wait on the device, with no host
    synchronization in between: a device that does not honour the wait computes on partly
    copied inputs). ``data="sample"`` uses the vendor sample's values instead of random ones.
    ``operator`` names the row of :data:`OPERATORS` that runs the case. ``unsupported``: see
    :class:`SmokeCase`. ``reference_hook`` (for tests of the smoke test itself) maps the
    reference's three outputs to what the case will expect instead.
    """
    name: str
    shape: tuple[int, ...]
    normalized_ndim: int = 1
    dtype: str = "float32"
    stats_dtype: str | None = None
    weight_dtype: str | None = None
    weight: bool = True
    out_dtypes: tuple[str | None, str | None, str | None] | None = None
    mask: tuple[bool, bool, bool] = (True, True, True)
    layout: str = "contiguous"
    data: str = "random"
    seed: int = 0
    operator: str = "LayerNormBackward"
    unsupported: str | None = None
    reference_hook: Callable | None = field(default=None, compare=False, repr=False)

    @property
    def normalized_shape(self) -> tuple[int, ...]:
        return self.shape[len(self.shape) - self.normalized_ndim:]

    def dtype_label(self) -> str:
        """``bf16``, or ``bf16 s:fp32 w:fp32 o:fp32`` for mixes (stats, weight, outputs)."""
        label = SHORT[self.dtype]
        if self.stats_dtype and self.stats_dtype != self.dtype:
            label += f" s:{SHORT[self.stats_dtype]}"
        if not self.weight:
            label += " w:none"
        elif self.weight_dtype and self.weight_dtype != self.dtype:
            label += f" w:{SHORT[self.weight_dtype]}"
        if self.out_dtypes and any(d and d != self.dtype for d in self.out_dtypes):
            outs = {SHORT[d] if d else "-" for d in self.out_dtypes}
            label += " o:" + (outs.pop() if len(outs) == 1 else
                              ",".join(SHORT[d] if d else "-" for d in self.out_dtypes))
        return label

    def mask_label(self) -> str:
        return "".join("1" if m else "0" for m in self.mask)

    def norm_label(self) -> str:
        return str(self.normalized_ndim)

    def describe(self) -> dict:
        d = super().describe()
        d.update({
            "normalized_shape": list(self.normalized_shape),
            "stats_dtype": self.stats_dtype or self.dtype,
            "weight_dtype": (self.weight_dtype or self.dtype) if self.weight else None,
            "out_dtypes": list(self.out_dtypes) if self.out_dtypes else None,
            "output_mask": list(self.mask), "data": self.data, "seed": self.seed,
        })
        return d

    def tensor_dtypes(self) -> set[str]:
        used = {self.dtype, self.stats_dtype or self.dtype}
        if self.weight:
            used.add(self.weight_dtype or self.dtype)
        if self.out_dtypes:
            used |= {d for d in self.out_dtypes if d}
        return used

    def run(self, stream: Stream | None = None) -> CaseResult:
        """Runs the case with its operator's runner (the :data:`OPERATORS` row's)."""
        return _resolve(_operator(self.operator).run)(self, stream)


@dataclass(frozen=True)
class DeclaredCase(SmokeCase):
    """A declared operator's smoke case (:func:`declared_case`): ``declared`` is the
    :class:`~acl_py.ops.Declared` it calls and ``make_values`` its smoke case's maker (NumPy
    inputs in declaration order); ``operator`` its :data:`acl_py.ops.DECLARED` name;
    ``shape`` and ``dtype`` are its first tensor's, and ``input_dtypes`` every input tensor's
    (Python name, dtype; None: an optional input left out), read from the values."""
    name: str
    operator: str
    declared: Declared = field(compare=False, repr=False)
    make_values: Callable[[], Sequence[Any]] = field(compare=False, repr=False)
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    input_dtypes: tuple[tuple[str, str | None], ...] = ()
    layout: str = "contiguous"
    unsupported: str | None = None

    def dtype_label(self) -> str:
        """The first tensor's dtype, then the inputs of another dtype by name:
        ``fp16 gamma:fp32 bias:none``."""
        return SHORT.get(self.dtype, self.dtype) + "".join(
            f" {name}:{'none' if dt is None else SHORT.get(dt, dt)}"
            for name, dt in self.input_dtypes if dt != self.dtype)

    def describe(self) -> dict:
        d = super().describe()
        d["input_dtypes"] = dict(self.input_dtypes)
        return d

    def tensor_dtypes(self) -> set[str]:
        """Its inputs' dtypes of the floating dtypes ``--dtypes`` chooses among (an integer
        index tensor selects nothing); its outputs' follow from them, as LayerNormBackward's
        default outputs do, and are not counted."""
        found = {dt for _, dt in self.input_dtypes if dt in SHORT}
        return found or {self.dtype}

    def runs_on(self, soc: str | None) -> bool:
        """``Declared.runs_on``: AddRmsNorm has no kernel on the Atlas training series."""
        return self.declared.runs_on(soc)

    def run(self, stream: Stream | None = None) -> CaseResult:
        return run_declared_case(self, stream)


@dataclass
class OutputCheck:
    name: str
    dtype: str
    max_abs_error: float
    error_ratio: float          # worst |err| / bound over the elements; <= 1 passes
    passed: bool


@dataclass
class CaseResult:
    case: SmokeCase
    passed: bool
    seconds: float              # the operator call on device tensors, through synchronize
    outputs: list[OutputCheck] = field(default_factory=list)
    error: str | None = None    # an exception, or a missing/unexpected output
    # The case failed on an NPU and the vendor documents its input as unsupported: why.
    unsupported: str | None = None
    hung: bool = False          # a wait for the device's work ran out of time (--timeout)
    # Outputs the part does not write for the case's arguments (not checked): name -> why.
    not_written: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Failed, and not an input the vendor documents as unsupported."""
        return not self.passed and self.unsupported is None

    @property
    def status(self) -> str:
        """``pass``, ``FAIL`` or ``unsupported`` (the table's result column)."""
        if self.passed:
            return "pass"
        return "unsupported" if self.unsupported is not None else "FAIL"

    @property
    def worst(self) -> OutputCheck | None:
        return max(self.outputs, key=lambda o: o.error_ratio, default=None)

    def to_json(self) -> dict:
        d = self.case.describe()
        d.update(passed=self.passed, status=self.status.lower(), seconds=self.seconds,
                 error=self.error, unsupported=self.unsupported, hung=self.hung,
                 outputs=[asdict(o) for o in self.outputs], not_written=dict(self.not_written))
        w = self.worst
        d["max_abs_error"] = w.max_abs_error if w else None
        d["error_ratio"] = w.error_ratio if w else None
        return d


# --------------------------------------------------------------------------------------------
# The operators under test, and their matrices
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmokeOperator:
    """An operator with a hand-written matrix (declared operators need none: their smoke
    cases are their declaration's): its name, ``"module:function"`` of
    ``cases(quick: bool) -> list[Case]`` (its matrix; ``quick``: a seconds-long subset), and
    of ``run(case: Case, stream) -> CaseResult`` (runs and checks one case on the calling
    thread's device; never raises for a failing case), and the names of the outputs it checks
    (in a case's ``mask`` order). Modules are imported on first use."""
    name: str
    cases: str
    run: str
    outputs: tuple[str, ...] = OUTPUT_NAMES


OPERATORS: tuple[SmokeOperator, ...] = (
    SmokeOperator("LayerNormBackward", "acl_py.smoke:layer_norm_backward_cases",
                  "acl_py.smoke:run_layer_norm_backward_case"),
)


def _resolve(ref: str) -> Callable:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _operator(name: str) -> SmokeOperator:
    for op in OPERATORS:
        if op.name == name:
            return op
    raise ValueError(f"no smoke operator {name!r} (known: {', '.join(o.name for o in OPERATORS)})")


def build_cases(quick: bool = False) -> list[SmokeCase]:
    """Every operator's matrix: the :data:`OPERATORS` rows', then each declared operator's
    smoke cases in :data:`acl_py.ops.DECLARED` order (``quick``: without
    ``smoke_full_cases``). Raises ValueError when two cases share a name."""
    from .ops import DECLARED
    cases: list[SmokeCase] = [case for op in OPERATORS for case in _resolve(op.cases)(quick)]
    for name, declared in DECLARED.items():
        cases += declared_cases(declared, quick, operator=name)
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise ValueError(f"two smoke cases are named {case.name!r}")
        seen.add(case.name)
    return cases


def declared_cases(declared: Declared, quick: bool = False,
                   operator: str | None = None) -> list[DeclaredCase]:
    """A declared operator's smoke cases as :class:`DeclaredCase` s (:func:`declared_case`): its
    ``smoke_cases``, and unless ``quick`` its ``smoke_full_cases``."""
    found = declared.smoke_cases + (() if quick else declared.smoke_full_cases)
    return [declared_case(declared, c, operator) for c in found]


def declared_case(declared: Declared, smoke_case: tuple[str, Callable[[], Sequence[Any]]],
                  operator: str | None = None) -> DeclaredCase:
    """The :class:`DeclaredCase` of one of ``declared``'s smoke cases (``(name, make)``), named
    ``<operator>/<name>`` (``operator``: default the declaration's short name; whitespace
    dropped from the name). Its shape and dtypes are read from ``make()``'s values; values
    that cannot be made leave them unknown (the case then fails when it runs, with the
    reason)."""
    name, make = smoke_case
    operator = operator or declared.short_name
    described: dict[str, Any] = {"shape": ()}
    try:
        values = make()
        inputs = [(arg.py, v) for arg, v in zip(declared.inputs, values)
                  if isinstance(v, np.ndarray) or (v is None and arg.optional)]
        first = next(v for _, v in inputs if v is not None)
        described = {
            "shape": tuple(first.shape), "dtype": _dtype_name(first.dtype),
            "input_dtypes": tuple((n, None if v is None else _dtype_name(v.dtype))
                                  for n, v in inputs)}
    except Exception:  # noqa: BLE001 - reported by the case's run, which makes them again
        pass
    return DeclaredCase(f"{operator}/{''.join(name.split())}", operator=operator,
                        declared=declared, make_values=make, **described)


# The vendor's docs list, for every tensor of aclnnLayerNormBackward, "empty tensors are not
# supported" (hicann/ops-nn norm/layer_norm_grad_v3/docs/aclnnLayerNormBackward.md, parameter
# table), although its op_api code fills gradWeight/gradBias with zeros for them.
LNB_EMPTY_UNSUPPORTED = ("empty tensors: documented as unsupported for aclnnLayerNormBackward "
                         "(hicann/ops-nn norm/layer_norm_grad_v3/docs/aclnnLayerNormBackward.md)")


def layer_norm_backward_cases(quick: bool = False) -> list[Case]:
    """The LayerNormBackward matrix. ``quick``: a subset covering every feature at small
    sizes (seconds)."""
    F32, F16, BF16 = "float32", "float16", "bfloat16"
    EMPTY = LNB_EMPTY_UNSUPPORTED
    q = [
        Case("vendor-sample", (2, 2), data="sample"),
        Case("tiny", (2, 8)),
        Case("rows-1024", (64, 1024)),
        Case("fp16", (32, 512), dtype=F16),
        Case("bf16", (32, 512), dtype=BF16),
        Case("bf16-mixed", (16, 256), dtype=BF16, stats_dtype=F32, weight_dtype=F32),
        Case("fp16-mixed-fp32-out", (16, 256), dtype=F16, stats_dtype=F32, weight_dtype=F32,
             out_dtypes=(F32, F32, F32)),
        Case("mask-100", (24, 96), mask=(True, False, False)),
        Case("mask-011-no-weight", (24, 96), mask=(False, True, True), weight=False),
        Case("rank4-norm2", (2, 3, 8, 16), normalized_ndim=2),
        Case("transposed-input", (48, 96), layout="transposed"),
        Case("strided-output", (40, 64), layout="strided-out"),
        Case("inputs-from-another-stream", (256, 1024), layout="other-stream"),
        Case("empty-M0", (0, 64), unsupported=EMPTY),
    ]
    if quick:
        return q
    full = q + [
        Case("one-element", (1,)),
        Case("rank1-norm1", (1000,)),
        Case("N1", (1024, 1)),
        Case("odd-sizes", (7, 13, 33), normalized_ndim=1),
        Case("rank8-norm3", (2, 1, 3, 2, 2, 3, 4, 5), normalized_ndim=3),
        Case("all-dims-normalized", (6, 10, 12), normalized_ndim=3),
        Case("no-weight", (64, 512), weight=False),
        Case("bf16-no-weight", (64, 512), dtype=BF16, weight=False),
        Case("fp16-fp32-stats", (64, 512), dtype=F16, stats_dtype=F32),
        Case("fp16-fp32-weight", (64, 512), dtype=F16, weight_dtype=F32),
        Case("bf16-fp32-out", (64, 512), dtype=BF16, stats_dtype=F32, weight_dtype=F32,
             out_dtypes=(F32, F32, F32)),
        Case("fp32-bf16-out", (64, 512), out_dtypes=(BF16, F16, BF16)),
        Case("mask-010", (32, 128), mask=(False, True, False)),
        Case("mask-001", (32, 128), mask=(False, False, True)),
        Case("mask-110", (32, 128), mask=(True, True, False)),
        Case("mask-101", (32, 128), mask=(True, False, True)),
        Case("mask-000", (32, 128), mask=(False, False, False)),
        Case("strided-rows", (96, 160), layout="strided"),
        Case("offset-view", (96, 160), dtype=F16, layout="offset"),
        Case("inner-strided", (64, 128), dtype=BF16, layout="inner-strided"),
        Case("empty-N0", (16, 0), unsupported=EMPTY),
        Case("empty-bf16", (0, 4, 32), dtype=BF16, normalized_ndim=1, unsupported=EMPTY),
        Case("fp32-large", (4096, 4096)),
        Case("fp16-large", (8192, 1024), dtype=F16),
        Case("bf16-transformer", (8, 512, 1024), dtype=BF16, stats_dtype=F32,
             weight_dtype=F32),
        Case("fp32-wide", (64, 65536)),
    ]
    return full


# --------------------------------------------------------------------------------------------
# Running one case
# --------------------------------------------------------------------------------------------

def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        from .dtypes import bfloat16
        return bfloat16()
    return np.dtype(name)


def make_inputs(case: Case) -> dict:
    """Host arrays for the case, already rounded to their dtypes: mean/rstd are the forward
    statistics of the rounded input, so the gradients are those of a real LayerNorm."""
    dt = _np_dtype(case.dtype)
    sdt = _np_dtype(case.stats_dtype or case.dtype)
    wdt = _np_dtype(case.weight_dtype or case.dtype)
    ns = case.normalized_shape
    if case.data == "sample":
        x = np.array([[2, 3], [4, 5]], dtype=dt)
        return {"grad_out": x.copy(), "input": x,
                "mean": np.array([[2], [3]], dtype=sdt), "rstd": np.array([[4], [5]], dtype=sdt),
                "weight": np.ones(2, dtype=wdt), "bias": np.zeros(2, dtype=wdt)}
    rng = np.random.default_rng(case.seed + 1000 * len(case.name))
    x = (rng.standard_normal(case.shape, dtype=np.float32) * 2 + 0.5).astype(dt)
    dy = rng.standard_normal(case.shape, dtype=np.float32).astype(dt)
    mean, rstd = reference.layer_norm_stats(x, ns)
    out = {"grad_out": dy, "input": x, "mean": mean.astype(sdt), "rstd": rstd.astype(sdt),
           "weight": None, "bias": None}
    if case.weight:
        out["weight"] = (1 + 0.25 * rng.standard_normal(ns, dtype=np.float32)).astype(wdt)
        out["bias"] = (0.1 * rng.standard_normal(ns, dtype=np.float32)).astype(wdt)
    return out


def _place(arr: np.ndarray, layout: str, stream: Stream | None,
           made: list[DeviceTensor]) -> DeviceTensor:
    """A DeviceTensor whose logical value is ``arr``, laid out in device memory as asked. The
    owning tensors go to ``made`` (the caller closes them; views die with them)."""
    from .tensor import DeviceTensor

    def upload(host: np.ndarray) -> DeviceTensor:
        t = DeviceTensor.from_numpy(host, stream=stream)
        made.append(t)
        return t
    if layout == "transposed" and arr.ndim == 2:
        return upload(np.ascontiguousarray(arr.T)).T
    if layout == "strided" and arr.ndim >= 1 and arr.shape[0] > 0:
        big = np.zeros((arr.shape[0] * 2,) + arr.shape[1:], dtype=arr.dtype)
        big[::2] = arr
        return upload(big)[::2]
    if layout == "offset" and arr.ndim >= 1:
        big = np.zeros((arr.shape[0] + 1,) + arr.shape[1:], dtype=arr.dtype)
        big[1:] = arr
        return upload(big)[1:]
    if layout == "inner-strided" and arr.ndim >= 1:
        big = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype)
        big[..., ::2] = arr
        return upload(big)[..., ::2]
    return upload(arr)


def output_dtypes(case: Case) -> tuple[str, str, str]:
    """The three outputs' dtypes: ``out_dtypes`` where given, else the operator layer's
    defaults (grad_input: input's; grad_weight/grad_bias: weight's, input's without one)."""
    wdt = (case.weight_dtype or case.dtype) if case.weight else case.dtype
    given = case.out_dtypes or (None, None, None)
    return (given[0] or case.dtype, given[1] or wdt, given[2] or wdt)


def _preallocated_outputs(case: Case, stream: Stream | None, made: list[DeviceTensor],
                          strided: bool) -> tuple[DeviceTensor | None, ...]:
    """Outputs given through ``out=``: contiguous, or (``strided``) every other element of the
    last dim of a larger buffer. NaN-filled, so an element the kernel never writes fails."""
    from .tensor import DeviceTensor
    shapes = (case.shape, case.normalized_shape, case.normalized_shape)
    outs: list[DeviceTensor | None] = []
    for on, shape, dt in zip(case.mask, shapes, output_dtypes(case)):
        if not on:
            outs.append(None)
            continue
        full = shape[:-1] + (shape[-1] * 2,) if strided else shape
        t = DeviceTensor.from_numpy(np.full(full, np.nan, dtype=_np_dtype(dt)), stream=stream)
        made.append(t)
        outs.append(t[..., ::2] if strided else t)
    return tuple(outs)


def _failure(case: SmokeCase, seconds: float, e: Exception) -> CaseResult:
    """A case that raised: failed, and hung if a wait ran out of time."""
    return CaseResult(case, False, seconds, error=f"{type(e).__name__}: {e}".strip() + _where(e),
                      hung=isinstance(e, TimeoutError))


def run_case(case: SmokeCase, stream: Stream | None = None, npu: bool | None = None) -> CaseResult:
    """Runs one case on the calling thread's device with its operator's runner and checks it;
    never raises for a failing case (the exception becomes the result's ``error``). On an NPU
    (``npu``; default: the backend is real CANN), a failing case whose input the vendor
    documents as unsupported is marked so (``result.unsupported``) instead of failed."""
    result = case.run(stream)
    if npu is None:
        npu = on_npu()
    if not result.passed and npu and case.unsupported:
        result.unsupported = case.unsupported
    return result


def run_layer_norm_backward_case(case: Case, stream: Stream | None = None) -> CaseResult:
    """Runs one LayerNormBackward case and checks it; never raises for a failing case (the
    exception becomes the result's ``error``). ``seconds`` is the operator call on device
    tensors (phase one, workspace, phase two) through the stream's synchronization."""
    from .ops import layer_norm_backward
    seconds = 0.0
    made: list = []   # every device tensor made here, closed before returning
    try:
        host = make_inputs(case)
        ns = case.normalized_shape
        layout_in = case.layout if case.layout in ("transposed", "strided", "offset",
                                                   "inner-strided") else "contiguous"
        upload = stream
        if case.layout == "other-stream":
            from .stream import Stream
            upload = Stream(stream.state.device if stream is not None else None)
            made.append(upload)
        dev = {k: (_place(v, layout_in if k in ("grad_out", "input") else "contiguous",
                          upload, made) if v is not None else None)
               for k, v in host.items()}
        kwargs = {}
        if case.layout == "strided-out" or case.out_dtypes is not None:
            kwargs["out"] = _preallocated_outputs(case, stream, made,
                                                  strided=case.layout == "strided-out")
        if upload is not None and upload is not stream:
            # The device orders the launch after the copies; the host does not wait (the
            # time below includes the copies).
            from .stream import as_stream
            as_stream(stream, upload.state.device).wait(upload)
        elif stream is not None:
            smoke_wait.synchronize(stream)  # uploads done before the clock starts
        grad_out, input_, mean, rstd = (dev[k] for k in ("grad_out", "input", "mean", "rstd"))
        assert grad_out is not None and input_ is not None and mean is not None \
            and rstd is not None  # make_inputs always makes them
        t0 = time.perf_counter()
        results = layer_norm_backward(grad_out, input_, ns, mean, rstd, dev["weight"],
                                      dev["bias"], output_mask=case.mask, stream=stream,
                                      **kwargs)
        made.extend(r for r in results if r is not None)
        if stream is not None:
            smoke_wait.synchronize(stream)
        seconds = time.perf_counter() - t0
        # Queued on the stream and waited for within --timeout (a synchronous copy has no
        # timeout in CANN).
        got = [r.to_numpy(stream) if r is not None else None for r in results]
        expected = reference.layer_norm_backward(host["grad_out"], host["input"], ns,
                                                 host["mean"], host["rstd"], host["weight"],
                                                 output_mask=case.mask)
        magnitude = reference.error_scale(host["grad_out"], host["input"], ns, host["mean"],
                                          host["rstd"], host["weight"], output_mask=case.mask)
        if case.reference_hook is not None:
            expected = tuple(case.reference_hook(tuple(expected)))
        result = _compare(case, got, expected, magnitude, seconds)
    except Exception as e:  # noqa: BLE001 - a smoke test reports every failure, of any kind
        result = _failure(case, seconds, e)
    return _release(made, result)


def run_declared_case(case: DeclaredCase, stream: Stream | None = None) -> CaseResult:
    """Runs a declared operator's case (:func:`declared_case`) on the calling thread's
    device: its values uploaded to device tensors on ``stream``, the declaration called on
    them, outputs read back and judged by the declaration's
    :meth:`~acl_py.ops.Declared.check_outputs` (its float64 reference and tolerance). Never
    raises for a failing case: an exception becomes the result's ``error``, an output out of
    tolerance, missing or unexpected a failure naming it. ``seconds`` is the operator call
    (phase one, workspace, phase two) through the stream's synchronization."""
    from .ops import OutputNotWritten
    from .tensor import DeviceTensor
    seconds = 0.0
    made: list = []   # every device tensor made here, closed before returning
    try:
        if not isinstance(case, DeclaredCase):
            raise ValueError(f"case {case.name!r} is not a declared operator's "
                             f"(declared_case makes those)")
        declared, make = case.declared, case.make_values
        values = tuple(make())
        args = []
        for v in values:
            if isinstance(v, np.ndarray):
                v = DeviceTensor.from_numpy(v, stream=stream)
                made.append(v)
            args.append(v)
        if stream is not None:
            smoke_wait.synchronize(stream)  # uploads done before the clock starts
        t0 = time.perf_counter()
        outs = declared.call(tuple(args), stream=stream)
        made.extend(o for o in outs if o is not None)
        if stream is not None:
            smoke_wait.synchronize(stream)
        seconds = time.perf_counter() - t0
        # Queued on the stream and waited for within --timeout (a synchronous copy has no
        # timeout in CANN).
        got = tuple(None if o is None else o.to_numpy(stream) for o in outs)
        dtypes = {spec.py: g.dtype for spec, g in zip(declared.outputs, got) if g is not None}
        result = CaseResult(case, True, seconds)
        problems = []
        for o in declared.check_outputs(values, got):
            if isinstance(o, OutputNotWritten):
                result.not_written[o.name] = o.reason
                continue
            if o.problem is not None:
                problems.append(f"{o.name} {o.problem}")
                continue
            ok = o.error_ratio <= 1.0
            result.outputs.append(OutputCheck(o.name, _dtype_name(dtypes[o.name]),
                                              o.max_abs_error, o.error_ratio, ok))
            if not ok:
                problems.append(f"{o.name}: max |err| {o.max_abs_error:.3g} is "
                                f"{o.error_ratio:.3g}x the tolerance")
        if problems:
            result.passed = False
            result.error = "; ".join(problems)
    except Exception as e:  # noqa: BLE001 - a smoke test reports every failure, of any kind
        result = _failure(case, seconds, e)
    return _release(made, result)


def _release(made: list, result: CaseResult) -> CaseResult:
    """Closes every device tensor and stream a case made (:func:`smoke_wait.release`): a
    close that fails fails the case; one that runs out of time (its work hung) makes it hung."""
    notes, timed_out = smoke_wait.release(made, result.hung)
    if notes:
        result.passed = False
        result.hung = result.hung or bool(timed_out)
        result.error = "; ".join(([result.error] if result.error else []) + notes)
    return result


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno})"


def _compare(case: Case, got: Sequence[np.ndarray | None], expected: Sequence[np.ndarray],
             magnitude: Sequence[np.ndarray], seconds: float) -> CaseResult:
    result = CaseResult(case, True, seconds)
    problems = []
    for name, g, e, m, on in zip(OUTPUT_NAMES, got, expected, magnitude, case.mask):
        if not on:
            if g is not None:
                problems.append(f"{name} returned although its mask entry is false")
            continue
        if g is None:
            problems.append(f"{name} missing although its mask entry is true")
            continue
        if g.shape != e.shape:
            problems.append(f"{name} has shape {g.shape}, expected {e.shape}")
            continue
        ratio = reference.max_error_ratio(g, e, m, _np_dtype(case.dtype), output=name)
        max_abs = reference.max_abs_error(g, e)
        ok = ratio <= 1.0
        result.outputs.append(OutputCheck(name, _dtype_name(g.dtype), max_abs, ratio, ok))
        if not ok:
            problems.append(f"{name}: max |err| {max_abs:.3g} is {ratio:.3g}x the tolerance")
    if problems:
        result.passed = False
        result.error = "; ".join(problems)
    return result


def _dtype_name(dt: Any) -> str:
    dt = np.dtype(dt)
    return "bfloat16" if dt == _np_dtype("bfloat16") else dt.name


ProgressFn = Callable[[int, int, SmokeCase, "CaseResult | None"], None]
DeviceProgressFn = Callable[[int, int, int, SmokeCase, "CaseResult | None"], None]


def run_cases(cases: Sequence[SmokeCase], progress: ProgressFn | None = None,
              stream: Stream | None = None,
              npu: bool | None = None, cancel: threading.Event | None = None
              ) -> list[CaseResult]:
    """Runs ``cases`` in order on the calling thread's device; ``progress(i, total, case,
    result)`` is called before each case (result None) and after it. Stops early (returning
    what ran) once ``cancel`` is set."""
    if npu is None:
        npu = on_npu()
    results = []
    for i, case in enumerate(cases):
        if cancel is not None and cancel.is_set():
            break
        if progress:
            progress(i, len(cases), case, None)
        r = run_case(case, stream=stream, npu=npu)
        results.append(r)
        if progress:
            progress(i + 1, len(cases), case, r)
        if r.hung:
            break       # the device's work is stuck: later cases would queue behind it
    return results


@dataclass
class DeviceRun:
    """One device's part of a smoke run: its results, or why it could not be tested."""
    device: int
    results: list[CaseResult] = field(default_factory=list)
    error: str | None = None    # the device (or its stream) could not be opened, ...
    seconds: float = 0.0

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.failed]

    @property
    def unsupported(self) -> list[CaseResult]:
        return [r for r in self.results if r.unsupported is not None]

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.results) and not self.failed

    @property
    def hung(self) -> bool:
        return any(r.hung for r in self.results)

    def summary(self) -> dict:
        return {"total": len(self.results),
                "passed": sum(r.passed for r in self.results),
                "failed": len(self.failed), "unsupported": len(self.unsupported),
                "failed_cases": [r.case.name for r in self.failed],
                "unsupported_cases": [r.case.name for r in self.unsupported],
                "error": self.error, "seconds": self.seconds, "ok": self.ok,
                "hung": self.hung}


def run_devices(cases: Sequence[SmokeCase], devices: Sequence[int],
                progress: DeviceProgressFn | None = None,
                npu: bool | None = None) -> list[DeviceRun]:
    """Runs ``cases`` on every device of ``devices`` at once: a thread per device, each with
    the device current and a stream of its own (one device runs on the calling thread).
    ``progress(device, i, total, case, result)`` is called from the device's thread.
    Everything each thread creates is released before it returns."""
    from .device import Device
    from .stream import Stream
    if npu is None:
        npu = on_npu()
    runs = [DeviceRun(d) for d in devices]
    cancel = threading.Event()

    def work(run: DeviceRun) -> None:
        t0 = time.perf_counter()
        report_case = None
        if progress is not None:
            def report_case(i: int, total: int, case: SmokeCase, result: CaseResult | None,
                            _d: int = run.device) -> None:
                progress(_d, i, total, case, result)
        try:
            with Device(run.device):
                stream = Stream()
                run.results = run_cases(cases, progress=report_case, stream=stream, npu=npu,
                                        cancel=cancel)
                if run.hung:    # closing waits for its work: kept until the process ends
                    smoke_wait.abandon(stream)
                elif run.results:
                    # A failure to close it, or a close that ran out of time, is the last
                    # case's: its work ran last on the stream.
                    _release([stream], run.results[-1])
                else:
                    stream.close()
        except Exception as e:  # noqa: BLE001 - a device that cannot be tested is a finding
            run.error = f"{type(e).__name__}: {e}"
        run.seconds = time.perf_counter() - t0

    if len(runs) == 1:
        work(runs[0])
        return runs
    threads = [threading.Thread(target=work, args=(run,), name=f"acl-py-smoke-device-{run.device}")
               for run in runs]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)   # a timed join keeps Ctrl-C responsive
    except BaseException:
        cancel.set()          # each thread stops after its current case
        for t in threads:
            t.join()
        raise
    return runs


# --------------------------------------------------------------------------------------------
# Environment, report, output
# --------------------------------------------------------------------------------------------

EMULATOR_VERDICT = "on the CPU emulator: no NPU was tested"


def _soc() -> tuple[str | None, bool | None, str | None]:
    """(SoC name, whether it computes BFLOAT16, error) from ``aclrtGetSocName``."""
    try:
        from .soc import soc_name, supports_bfloat16
        name = soc_name()
        return name, supports_bfloat16(name), None
    except Exception as e:  # noqa: BLE001 - the header is informative; the cases decide
        return None, None, f"{type(e).__name__}: {e}"


def on_npu() -> bool:
    """Whether the active backend is real CANN (not the emulator, however loaded)."""
    from . import runtime
    return not runs_on_emulator(runtime.backend())


def runs_on_emulator(backend: Backend) -> bool:
    """The emulator, also when loaded as "real CANN" (``ASCEND_HOME_PATH=<emulator prefix>
    ACL_PY_BACKEND=cann``, the drop-in mode): its prefix carries the emulator-only header
    ``include/aclemu/aclemu.h``, which no CANN install has. A file check, no symbol used."""
    marker = Path(backend.root) / "include" / "aclemu" / "aclemu.h"
    return backend.is_emulator or marker.is_file()


def environment(devices: Sequence[int] | None = None) -> dict:
    """Backend, library paths, the part (SoC), device count and the memory of ``devices``
    (default: device 0), for the header and the JSON report; collected before any case runs.
    Raises :class:`acl_py._loader.LibraryNotFoundError` when no backend can be loaded."""
    from . import device, runtime
    b = runtime.backend()
    soc, bf16, soc_error = _soc()
    env: dict[str, Any] = {
        "backend": b.name, "reason": b.reason, "root": str(b.root),
        "libraries": {role: str(p) for role, p in b.libraries.items()},
        "npu": not runs_on_emulator(b), "soc": soc, "bfloat16": bf16,
        "device_count": None, "devices": [],
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(),
                 "python": platform.python_version(), "numpy": np.__version__}}
    if soc_error:
        env["soc_error"] = soc_error
    try:
        env["device_count"] = device.device_count()
    except Exception as e:  # noqa: BLE001
        env["error"] = f"{type(e).__name__}: {e}"
    from .info import visible_note
    env["visible_devices"] = visible_note(env["device_count"])
    env["set_variables"] = dict(b.environment)
    for d in (devices if devices is not None else [0]):
        entry: dict[str, Any] = {"id": d}
        try:
            with device.Device(d):
                info = device.mem_info(d)
            entry["memory_total"], entry["memory_free"] = info.total, info.free
        except Exception as e:  # noqa: BLE001 - that device's run will report it too
            entry["error"] = f"{type(e).__name__}: {e}"
        env["devices"].append(entry)
    if b.is_emulator:
        threads = os.environ.get("ACL_EMU_NUM_THREADS", "")
        env["emulator_threads"] = int(threads) if threads.isdigit() else os.cpu_count()
    return env


def no_device(env: dict) -> str:
    """Why the runtime offers no device to test (its count failed or is zero), with what to
    check: ``ASCEND_RT_VISIBLE_DEVICES`` when set, the driver's view on an NPU machine."""
    why = (f"counting the devices failed: {env.get('error')}" if env["device_count"] is None
           else "the runtime sees no device")
    from ._loader import driver_stub_note
    hints = [env["visible_devices"]] if env.get("visible_devices") else []
    stub = driver_stub_note()
    if stub is not None:
        hints.append(stub)
    if env["npu"]:
        hints.append("`npu-smi info` lists the NPUs the driver sees; in a container the "
                     "/dev/davinci* devices must be passed in")
    return why + "".join(f"\n  {h}" for h in hints)


def npu_missing(env: dict) -> str | None:
    """Why no NPU can be tested with this environment (None when one can)."""
    if not env["npu"]:
        if env["backend"] == "emulator":
            return f"the backend is the CPU emulator ({env['reason']})"
        return (f"the CANN libraries under {env['root']} are the acl-py CPU emulator's "
                f"(its prefix as ASCEND_HOME_PATH)")
    if env.get("error"):
        return f"CANN is installed under {env['root']} but the runtime failed: {env['error']}"
    if not env["device_count"]:
        return f"CANN is installed under {env['root']} but no Ascend device is visible"
    return None


def report(env: dict, runs: Sequence[DeviceRun], mode: str, seconds: float,
           dtypes: Sequence[str] = (), error: str | None = None,
           pairs: Sequence[PairResult] | None = None) -> dict:
    """The JSON report: the environment, then per device its own ``summary`` and cases, the
    device pairs' peer copies (``peer``: None with fewer than two devices), and an overall
    ``summary`` (``ok`` only when every device passed every case and no pair failed)."""
    results = [r for run in runs for r in run.results]
    failed = [r for r in results if r.failed]
    unsupported = [r for r in results if r.unsupported is not None]
    pairs = list(pairs or ())
    failed_pairs = [[p.a, p.b] for p in pairs if p.failed]
    ok = (error is None and bool(runs) and all(run.ok for run in runs)
          and not failed_pairs)
    return {
        "tool": "acl-py smoke", "version": _version(), "mode": mode,
        "backend": env.get("backend"), "npu_tested": bool(env.get("npu")) and ok,
        "soc": env.get("soc"), "dtypes": list(dtypes), "environment": env,
        "tolerance": {"rule": TOLERANCE_RULE, "rtol": dict(reference.RTOL)},
        "devices": [{"id": run.device, "summary": run.summary(),
                     "cases": [r.to_json() for r in run.results]} for run in runs],
        "peer": None if len(runs) < 2 and not pairs else {
            "pairs": [p.to_json() for p in pairs], "failed_pairs": failed_pairs,
            "unlinked_pairs": [[p.a, p.b] for p in pairs if p.status == "no-link"]},
        "summary": {"devices": len(runs), "total": len(results),
                    "passed": sum(r.passed for r in results), "failed": len(failed),
                    "unsupported": len(unsupported),
                    "failed_devices": [run.device for run in runs if not run.ok],
                    "hung_devices": sorted({run.device for run in runs if run.hung}
                                           | {d for p in pairs for d in p.hung_devices}),
                    "failed_pairs": failed_pairs,
                    "operators": operator_summary(results),
                    "seconds": seconds, "error": error, "ok": ok},
    }


def count_operators(cases: Iterable[SmokeCase]) -> dict[str, int]:
    """Each operator's number of cases, in the order they first appear."""
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.operator] = counts.get(case.operator, 0) + 1
    return counts


def operator_summary(results: Iterable[CaseResult]) -> dict[str, dict[str, int]]:
    """Per operator, in the order they first appear: its case runs ``total``, ``passed``,
    ``failed`` and ``unsupported`` (the JSON summary's ``operators``)."""
    found: dict[str, dict[str, int]] = {}
    for r in results:
        c = found.setdefault(r.case.operator,
                             {"total": 0, "passed": 0, "failed": 0, "unsupported": 0})
        c["total"] += 1
        c["passed"] += r.passed
        c["failed"] += r.failed
        c["unsupported"] += r.unsupported is not None
    return found


def _version() -> str:
    from . import __version__
    return __version__


def format_header(env: dict, mode: str, ncases: int, dtypes_note: str = "",
                  operators: dict[str, int] | None = None,
                  no_kernel: Sequence[str] = ()) -> str:
    """What is about to be tested: printed before any case runs. ``operators``: each
    operator's number of cases (:func:`count_operators`), in run order; ``no_kernel``: the
    operators left out because the part has no kernel for them (:func:`select_parts`)."""
    from ._units import human_size
    ndev = len(env["devices"])
    per = " per device" if ndev > 1 else ""
    lines = [f"acl-py smoke ({mode}, {ncases} cases{per})"]
    lines.append(f"  backend   {env['backend']}  ({env['reason']})")
    if not env["npu"]:
        lines.append("  note      the CPU emulator, not an NPU: no NPU will be tested")
    for role, path in env["libraries"].items():
        lines.append(f"  {role:<9} {path}")
    if env["soc"] is not None:
        lines.append(f"  soc       {env['soc']} (BFLOAT16: {'yes' if env['bfloat16'] else 'no'})")
    else:
        lines.append(f"  soc       unknown ({env.get('soc_error')})")
    count = env["device_count"]
    ids = ", ".join(str(d["id"]) for d in env["devices"])
    if count is None:
        lines.append(f"  devices   {ids} (counting devices failed: {env.get('error')})")
    else:
        lines.append(f"  devices   {ids} of {count} ({ndev} tested"
                     f"{', concurrently' if ndev > 1 else ''})")
    for d in env["devices"]:
        if "error" in d:
            lines.append(f"  device {d['id']:<3}{d['error']}")
        else:
            lines.append(f"  device {d['id']:<3}memory {human_size(d['memory_free'])} free of "
                         f"{human_size(d['memory_total'])}")
    if env.get("visible_devices"):
        lines.append(f"  visible   {env['visible_devices']}")
    for var, value in env.get("set_variables", {}).items():
        lines.append(f"  note      set {var}={value} (unset; set_env.sh's value)")
    lines.append(f"  dtypes    {dtypes_note}")
    if operators:
        lines.append("  operators " + ", ".join(
            f"{op} ({n} case{'s' if n != 1 else ''})" for op, n in operators.items()))
    if no_kernel:
        lines.append(f"  note      left out: {', '.join(no_kernel)} (no kernel on {env['soc']}: "
                     f"the operator's vendor definition or op_api)")
    h = env["host"]
    host = f"  host      {h['machine']}, {h['cpus']} cpus, Python {h['python']}, NumPy {h['numpy']}"
    if "emulator_threads" in env:
        host += f", emulator threads {env['emulator_threads']}"
    lines.append(host)
    rtol = ", ".join(f"{SHORT[k]} {v:g}" for k, v in reference.RTOL.items())
    lines.append(f"  tolerance {TOLERANCE_RULE}; RTOL {rtol}")
    return "\n".join(lines)


def _fmt_time(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def _fmt_ratio(r: float) -> str:
    # Tiny ratios in exponent form: "0.000" would read as a suspicious exact zero.
    return f"{r:.3f}" if r >= 1e-3 or r == 0 else f"{r:.1e}"


def format_table(results: Sequence[CaseResult]) -> str:
    head = ("case", "dtypes", "shape", "norm", "mask", "layout", "result", "max|err|",
            "err/tol", "time")
    rows = []
    for r in results:
        c = r.case
        w = r.worst
        rows.append((c.name, c.dtype_label(), "x".join(map(str, c.shape)),
                     c.norm_label(), c.mask_label(), c.layout, r.status,
                     f"{w.max_abs_error:.2e}" if w else "-",
                     _fmt_ratio(w.error_ratio) if w else "-",
                     _fmt_time(r.seconds) if r.seconds else "-"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    right = {7, 8, 9}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


def _tested_on(env: dict, runs: Sequence[DeviceRun]) -> str:
    """Where the cases ran, for the verdict line."""
    if not env["npu"]:
        return EMULATOR_VERDICT
    soc = f"{env['soc']} " if env.get("soc") else ""
    if len(runs) == 1:
        return f"on {soc}NPU {runs[0].device}"
    return f"on {len(runs)} {soc}NPUs ({', '.join(str(r.device) for r in runs)})"


def format_summary(env: dict, runs: Sequence[DeviceRun], seconds: float,
                   pairs: Sequence[PairResult] = ()) -> str:
    """The failures spelled out, then the verdict, last (the line a person reads)."""
    where = _tested_on(env, runs)
    results = [r for run in runs for r in run.results]
    failed = [(run, r) for run in runs for r in run.failed]
    broken = [run for run in runs if run.error is not None]
    unsupported = [r for r in results if r.unsupported is not None]
    per_device = len(runs[0].results) if runs else 0
    bad_pairs = [p for p in pairs if p.failed]
    lines = []
    if results:
        lines.append("operators: " + ", ".join(
            f"{op} {c['passed']}/{c['total']} passed" + (
                f" ({c['unsupported']} unsupported)" if c["unsupported"] else "")
            for op, c in operator_summary(results).items()))
    for r in unsupported:
        lines.append(f"unsupported: {r.case.name}: {r.unsupported}; the device answered: "
                     f"{r.error}")
    lines += format_not_written(results)
    for p in pairs:
        if p.status == "no-link":
            lines.append(f"note: devices {p.a} and {p.b} are not linked (peer access "
                         f"{p.a}->{p.b}: {_yes_no(p.can_access[0])}, {p.b}->{p.a}: "
                         f"{_yes_no(p.can_access[1])}): copies between them must go through "
                         f"the host")
    if not results and not broken:
        return "\n".join(lines + [f"FAILED: no cases ran {where}"])
    if bad_pairs and not failed and not broken:
        lines += ["", "!" * 72,
                  f"FAILED: peer copies between {len(bad_pairs)} of {len(pairs)} device pairs "
                  f"{where} (every case passed)", "!" * 72]
        for p in bad_pairs:
            lines.append(f"  devices {p.a}-{p.b}: {_pair_error(p)}")
        return "\n".join(lines)
    if not failed and not broken:
        note = (f" ({len(unsupported)} documented unsupported, listed above)"
                if unsupported else "")
        if pairs:
            linked = sum(p.status == "pass" for p in pairs)
            note += f"; peer copies both ways between {linked} of {len(pairs)} device pairs"
        passed = len(results) - len(unsupported)
        if len(runs) == 1:
            what = (f"all {passed} cases" if not unsupported
                    else f"{passed} of {len(results)} cases")
        else:
            what = (f"all {per_device} cases on each of {len(runs)} devices"
                    if not unsupported else f"{passed} of {len(results)} case runs")
        return "\n".join(lines + [f"PASSED: {what}{note} in {seconds:.1f} s {where}"])
    lines += ["", "!" * 72]
    if len(runs) == 1 and not broken:
        lines.append(f"FAILED: {len(failed)} of {len(results)} cases {where}")
    else:
        lines.append(f"FAILED: {len(failed)} failed case runs and {len(broken)} untested "
                     f"devices of {len(runs)} {where}" if broken else
                     f"FAILED: {len(failed)} of {len(results)} case runs {where}")
    lines.append("!" * 72)
    for run in broken:
        lines.append(f"  device {run.device}: could not be tested: {run.error}")
    for p in bad_pairs:
        lines.append(f"  devices {p.a}-{p.b}: peer copies failed: {_pair_error(p)}")
    for run, r in failed:
        at = f"device {run.device}: " if len(runs) > 1 else ""
        lines.append(f"  {at}{r.case.name} [{r.case.dtype_label()}, shape {list(r.case.shape)}, "
                     f"mask {r.case.mask_label()}, layout {r.case.layout}]")
        lines.append(f"    {r.error}")
        for o in r.outputs:
            lines.append(f"    {o.name:<12} {o.dtype:<9} max|err| {o.max_abs_error:.3e}  "
                         f"err/tol {o.error_ratio:.3g}  {'ok' if o.passed else 'OUT OF TOLERANCE'}")
    return "\n".join(lines)


def format_not_written(results: Sequence[CaseResult]) -> list[str]:
    """One line per output a part left unwritten (not checked), with the cases and why:
    ``not written: AddRmsNorm rstd (3 cases: ...): not written on Atlas inference parts
    (...)``."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for r in results:
        for name, why in r.not_written.items():
            cases = seen.setdefault((r.case.operator, name, why), [])
            if r.case.name not in cases:
                cases.append(r.case.name)
    return [f"not written: {op} {name} ({len(cases)} case{'s' if len(cases) > 1 else ''}: "
            f"{', '.join(cases)}; not checked): {why}"
            for (op, name, why), cases in seen.items()]


def _yes_no(v: bool | None) -> str:
    return "unknown" if v is None else ("yes" if v else "no")


def _pair_error(p: PairResult) -> str:
    """The first thing that went wrong for a failed pair."""
    if p.error:
        return p.error
    for c in p.copies:
        if c.error:
            return f"{c.src}->{c.dst} ({c.mode}, {c.nbytes} bytes): {c.error}"
    return "no copy was made"


class Progress:
    """Progress on ``stream``: on a terminal one line redrawn in place (a bar; with several
    devices also each device's count), else one line per finished case (prefixed with the
    device when there are several). Called from the devices' threads."""

    def __init__(self, stream: IO[str] | None = None, width: int = 28,
                 devices: Sequence[int] = (0,)) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.devices = list(devices)
        self.done = {d: 0 for d in self.devices}
        self.total = {d: 0 for d in self.devices}
        self.lock = threading.Lock()

    def __call__(self, done: int, total: int, case: SmokeCase, result: CaseResult | None) -> None:
        """Single-device form (device ``devices[0]``)."""
        self.device(self.devices[0], done, total, case, result)

    def device(self, device: int, done: int, total: int, case: SmokeCase,
               result: CaseResult | None) -> None:
        with self.lock:
            self.done[device], self.total[device] = done, total
            if self.tty:
                self._draw(case, result)
            elif result is not None:
                at = f"device {device} " if len(self.devices) > 1 else ""
                self.stream.write(f"{at}[{done:>{len(str(total))}}/{total}] {case.name} "
                                  f"{result.status.replace('pass', 'ok')} "
                                  f"({_fmt_time(result.seconds)})\n")
                self.stream.flush()

    def _draw(self, case: SmokeCase, result: CaseResult | None) -> None:
        done, total = sum(self.done.values()), sum(self.total.values())
        fill = self.width * done // max(total, 1)
        bar = "#" * fill + "-" * (self.width - fill)
        if len(self.devices) > 1:
            # every device's count, however many (8 of them need more than 40 columns)
            label = " ".join(f"d{d}:{self.done[d]}" for d in self.devices)
            label = f"{label:<40}"
        else:
            label = (case.name if result is None
                     else f"{case.name}: {result.status.replace('pass', 'ok')}")
            label = f"{label:<40.40}"
        line = f"[{bar}] {done}/{total} {label}"
        self.stream.write("\r" + line)
        if done == total and result is not None:
            self.stream.write("\r" + " " * len(line) + "\r")
        self.stream.flush()


def main(argv: Sequence[str] | None = None, cases: Iterable[SmokeCase] | None = None,
         out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """``acl-py smoke [--quick] [--json FILE] [--devices LIST] [--require-npu] ...`` as a
    function; returns the exit status. ``cases`` replaces the matrix (tests inject broken
    cases this way)."""
    p = argparse.ArgumentParser(prog="acl-py smoke", description=__doc__.split("\n\n")[0])
    add_smoke_arguments(p)
    return run_smoke(p.parse_args(argv), cases=cases, out=out, err=err)


def add_smoke_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="a seconds-long subset covering every feature at small sizes")
    p.add_argument("--json", metavar="FILE",
                   help="write the report as JSON to FILE ('-': JSON alone on stdout, the "
                        "human-readable report then goes to stderr)")
    p.add_argument("--devices", metavar="LIST",
                   help="devices to test concurrently (a thread and a stream each): 'all', or "
                        "ids such as 0,3,5 (default 0)")
    p.add_argument("--device", type=int, metavar="N", help="one device id (--devices N)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", default=DEFAULT_TIMEOUT,
                   help=f"longest wait for a device's work (default {DEFAULT_TIMEOUT:g}); a "
                        f"device that takes longer is reported as hung (exit status 3)")
    p.add_argument("--require-npu", action="store_true",
                   help="fail (exit status 1, no case run) unless the backend is real CANN "
                        "with a device: for acceptance scripts, so that an emulator run can "
                        "never pass")
    p.add_argument("--dtypes", metavar="LIST",
                   help="dtypes to test, comma-separated (fp32, fp16, bf16); a case is kept "
                        "when every tensor's dtype is listed. Default: what the part computes "
                        "(aclrtGetSocName): fp32,fp16,bf16, without bf16 on parts that have no "
                        "BFLOAT16 (Atlas training and inference series)")


def select_dtypes(cases: Iterable[SmokeCase], spec: str) -> list[SmokeCase]:
    """The cases whose every tensor dtype is in ``spec`` ("fp32,fp16", names or short names)."""
    wanted = parse_dtypes(spec)
    return [c for c in cases if case_dtypes(c) <= wanted]


def select_parts(cases: Iterable[SmokeCase], soc: str | None
                 ) -> tuple[list[SmokeCase], list[str]]:
    """The cases whose operator has a kernel on the part ``soc`` (a declared case's
    ``Declared.runs_on``; every other case's), and the operators left out, in order."""
    kept, left = [], []
    for c in cases:
        if c.runs_on(soc):
            kept.append(c)
        elif c.operator not in left:
            left.append(c.operator)
    return kept, left


def parse_dtypes(spec: str) -> set[str]:
    names = {v: k for k, v in SHORT.items()}
    wanted = set()
    for item in spec.split(","):
        item = item.strip().lower()
        if not item:
            continue
        full = names.get(item, item)
        if full not in SHORT:
            raise ValueError(f"--dtypes: unknown dtype {item!r}; use fp32, fp16, bf16")
        wanted.add(full)
    return wanted


def default_dtypes(env: dict) -> tuple[str, str]:
    """The dtype spec for the part, and the header's note on it."""
    if env.get("soc") is None:
        return "fp32,fp16,bf16", ("fp32, fp16, bf16 (the part is unknown: BFLOAT16 assumed; "
                                  "--dtypes fp32,fp16 to leave it out)")
    if env["bfloat16"]:
        return "fp32,fp16,bf16", f"fp32, fp16, bf16 (what {env['soc']} computes)"
    return "fp32,fp16", (f"fp32, fp16 (bf16 cases left out: {env['soc']} has no BFLOAT16; "
                         f"hicann/ops-nn norm/layer_norm_grad_v3/docs/aclnnLayerNormBackward.md)")


def case_dtypes(case: SmokeCase) -> set[str]:
    """Every dtype a case's tensors use (:meth:`SmokeCase.tensor_dtypes`)."""
    return case.tensor_dtypes()


def parse_devices(spec: str, count: int | None) -> list[int]:
    """``all`` or ``0,3,5`` -> sorted unique ids, each checked against ``count``."""
    spec = spec.strip().lower()
    if spec == "all":
        if not count:
            raise ValueError("--devices all: the backend reports no device")
        return list(range(count))
    ids = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            d = int(item)
        except ValueError:
            raise ValueError(f"--devices: {item!r} is not a device id; use 'all' or ids "
                             f"such as 0,3,5") from None
        if d < 0 or (count is not None and d >= count):
            have = (f"devices 0-{count - 1}" if count and count > 1
                    else "device 0 only" if count == 1 else "no device")
            raise ValueError(f"--devices: there is no device {d} (the backend has {have})")
        ids.append(d)
    if not ids:
        raise ValueError("--devices: no device id given")
    return sorted(set(ids))


def run_smoke(args: argparse.Namespace, cases: Iterable[SmokeCase] | None = None,
              out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """The ``smoke`` command for parsed ``args``: header (before any case), tables, verdict on
    ``out``, progress on ``err``; returns the exit status (see the module doc)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    mode = "quick" if args.quick else "full"
    json_out = out
    if args.json == "-":
        out = err   # stdout carries the JSON alone
    t0 = time.perf_counter()

    def fail(msg: str, env: dict | None = None, status: int = 1) -> int:
        print(msg, file=out)
        if args.json:
            rep = report(env or {}, [], mode, time.perf_counter() - t0, error=msg)
            _write_json(args.json, rep, json_out)
        return status

    from ._loader import LibraryNotFoundError
    try:
        env = environment([])
    except LibraryNotFoundError as e:
        return fail(f"FAILED: could not run the smoke test: {e}")
    if not env["device_count"]:  # the machine's state, not a usage error: before --devices
        return fail(f"FAILED: could not run the smoke test: {no_device(env)}", env)
    spec = args.devices if getattr(args, "devices", None) is not None else (
        str(args.device) if getattr(args, "device", None) is not None else "0")
    try:
        devices = parse_devices(spec, env["device_count"])
        if getattr(args, "dtypes", None):
            dtype_spec, note = args.dtypes, ", ".join(
                SHORT[d] for d in SHORT if d in parse_dtypes(args.dtypes)) + " (--dtypes)"
        else:
            dtype_spec, note = default_dtypes(env)
        case_list, no_kernel = select_parts(
            select_dtypes(list(cases) if cases is not None else build_cases(args.quick),
                          dtype_spec), env["soc"])
        timeout = getattr(args, "timeout", DEFAULT_TIMEOUT)
        if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"--timeout {timeout}: a number of seconds > 0")
    except ValueError as e:
        print(f"acl-py smoke: {e}", file=err)
        return 2
    env = environment(devices)
    print(format_header(env, mode, len(case_list), note, count_operators(case_list),
                        no_kernel), file=out)
    print(file=out, flush=True)
    dtypes = sorted(parse_dtypes(dtype_spec), key=list(SHORT).index)
    if getattr(args, "require_npu", False):
        missing = npu_missing(env)
        if missing:
            return fail(f"FAILED: --require-npu: {missing}; no NPU was tested", env)
    progress = Progress(err, devices=devices)
    with smoke_wait.bounded(timeout):   # every wait of the run, not only the cases' own
        runs = run_devices(case_list, devices, progress=progress.device, npu=env["npu"])
        pairs = (check_pairs(devices, quick=args.quick)
                 if len(devices) > 1 and not any(run.hung for run in runs) else [])
    seconds = time.perf_counter() - t0
    for run in runs:
        title = f"device {run.device}" + (f" ({env['soc']})" if env.get("soc") else "")
        if run.error is not None:
            print(f"{title}: could not be tested: {run.error}", file=out)
            continue
        print(title, file=out)
        print(format_table(run.results), file=out)
        print(file=out)
    if pairs:
        print("peer copies between devices (P2P)", file=out)
        print(format_pairs(pairs), file=out)
        print(file=out)
    print(format_summary(env, runs, seconds, pairs), file=out)
    rep = report(env, runs, mode, seconds, dtypes, pairs=pairs)
    hung = rep["summary"]["hung_devices"]
    if hung:
        print(f"HUNG: device(s) {', '.join(map(str, hung))}: work did not complete within "
              f"--timeout {timeout:g} s; the device needs attention (npu-smi info)", file=out)
    if args.json:
        _write_json(args.json, rep, json_out)
    if hung:
        # The runtime's teardown (aclFinalize) would wait for the hung work forever.
        for stream_ in (out, err, json_out, sys.stdout, sys.stderr):
            stream_.flush()
        os._exit(HUNG_STATUS)
    return 0 if rep["summary"]["ok"] else 1


HUNG_STATUS = 3


# The names acl_py.cli's command table refers to.
add_arguments = add_smoke_arguments
run = run_smoke


def _finite(o: Any) -> Any:
    """JSON has no inf/NaN: a non-finite error (a NaN output) is written as the string."""
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _write_json(path: str, data: dict, out: IO[str]) -> None:
    text = json.dumps(_finite(data), indent=2, allow_nan=False, default=_json_default) + "\n"
    if path == "-":
        out.write(text)
        out.flush()
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


__all__ = ["SmokeCase", "Case", "DeclaredCase", "CaseResult", "OutputCheck", "DeviceRun",
           "SmokeOperator", "OPERATORS", "build_cases", "declared_cases", "declared_case",
           "layer_norm_backward_cases", "run_case", "run_declared_case", "run_cases",
           "run_devices", "environment", "report", "count_operators", "operator_summary",
           "format_table", "main", "run_smoke", "add_smoke_arguments"]
