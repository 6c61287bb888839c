"""``acl-py smoke``: the hardware smoke test an operator team runs on a freshly installed
machine (or, without CANN, on the emulator).

It runs a matrix of LayerNormBackward cases on the current backend with device tensors (every
supported dtype and the allowed mixes, output masks, weight absent, shapes from one element to
tens of millions, non-contiguous input and output views, empty tensors), checks each output
against the NumPy float64 reference (:mod:`acl_py.reference`) with the reference's per-dtype
error bound, and prints a table. Exit status 1 when any case fails.

The pieces are reusable: :func:`build_cases` gives the matrix, :func:`run_cases` runs any list
of :class:`Case` and returns :class:`CaseResult`\\ s, :func:`report` builds the JSON-ready
report, and :func:`main` is the command (``cases=`` lets tests inject a deliberately broken
case, e.g. one with a ``reference_hook`` that perturbs the expected values).

Tolerance (see :mod:`acl_py.reference`): each element may differ from the float64 reference by
``RTOL[input dtype] * magnitude + the device's rounding``, where ``magnitude`` is the size of
the terms the float32-accumulated result is computed from, RTOL is ``acl_py.reference.RTOL``
(printed in the header), and the rounding is half an ulp of the dtype the device rounds the
output to first (grad_input: input's; grad_weight/grad_bias: float32) plus half an ulp of the
output dtype where that cast can lose bits. ``err/tol`` in the table is the worst element's error divided
by its bound: a case passes when it is <= 1 for every output.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from . import reference

OUTPUT_NAMES = ("grad_input", "grad_weight", "grad_bias")
TOLERANCE_RULE = ("|out - ref| <= RTOL[input dtype] * magnitude + half ulp(grad_input: input "
                  "dtype, else float32) + half ulp(out dtype) where the cast loses bits")
SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class Case:
    """One LayerNormBackward call to check.

    ``dtype`` is gradOut's and input's; ``stats_dtype`` mean's and rstd's and ``weight_dtype``
    weight's and bias's (``None``: the input's); ``weight=False`` passes no weight (and no bias);
    ``out_dtypes`` are the three outputs' dtypes (``None``: the operator layer's defaults).
    ``layout`` places the tensors in device memory: ``contiguous``; ``transposed`` (input and
    gradOut are transposed views of [N, M] storage); ``strided`` (inputs take every other row of
    a larger buffer); ``offset`` (inputs start one row into their buffer); ``inner-strided``
    (every other element of the last dim); ``strided-out`` (outputs are strided views of larger
    buffers). ``data="sample"`` uses the vendor sample's values instead of random ones.
    ``reference_hook`` (for tests of the smoke test itself) maps the reference's three outputs
    to what the case will expect instead.
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

    def describe(self) -> dict:
        return {
            "name": self.name, "shape": list(self.shape),
            "normalized_shape": list(self.normalized_shape), "dtype": self.dtype,
            "stats_dtype": self.stats_dtype or self.dtype,
            "weight_dtype": (self.weight_dtype or self.dtype) if self.weight else None,
            "out_dtypes": list(self.out_dtypes) if self.out_dtypes else None,
            "output_mask": list(self.mask), "layout": self.layout, "data": self.data,
            "seed": self.seed,
        }


@dataclass
class OutputCheck:
    name: str
    dtype: str
    max_abs_error: float
    error_ratio: float          # worst |err| / bound over the elements; <= 1 passes
    passed: bool


@dataclass
class CaseResult:
    case: Case
    passed: bool
    seconds: float              # the operator call on device tensors, through synchronize
    outputs: list[OutputCheck] = field(default_factory=list)
    error: str | None = None    # an exception, or a missing/unexpected output

    @property
    def worst(self) -> OutputCheck | None:
        return max(self.outputs, key=lambda o: o.error_ratio, default=None)

    def to_json(self) -> dict:
        d = self.case.describe()
        d.update(passed=self.passed, seconds=self.seconds, error=self.error,
                 outputs=[asdict(o) for o in self.outputs])
        w = self.worst
        d["max_abs_error"] = w.max_abs_error if w else None
        d["error_ratio"] = w.error_ratio if w else None
        return d


# --------------------------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------------------------

def build_cases(quick: bool = False) -> list[Case]:
    """The smoke matrix. ``quick``: a subset covering every feature at small sizes (seconds)."""
    F32, F16, BF16 = "float32", "float16", "bfloat16"
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
        Case("empty-M0", (0, 64)),
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
        Case("empty-N0", (16, 0)),
        Case("empty-bf16", (0, 4, 32), dtype=BF16, normalized_ndim=1),
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


def _place(arr: np.ndarray, layout: str, stream, made: list):
    """A DeviceTensor whose logical value is ``arr``, laid out in device memory as asked. The
    owning tensors go to ``made`` (the caller closes them; views die with them)."""
    from .tensor import DeviceTensor

    def upload(host):
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


def _preallocated_outputs(case: Case, stream, made: list, strided: bool):
    """Outputs given through ``out=``: contiguous, or (``strided``) every other element of the
    last dim of a larger buffer. NaN-filled, so an element the kernel never writes fails."""
    from .tensor import DeviceTensor
    shapes = (case.shape, case.normalized_shape, case.normalized_shape)
    outs = []
    for on, shape, dt in zip(case.mask, shapes, output_dtypes(case)):
        if not on:
            outs.append(None)
            continue
        full = shape[:-1] + (shape[-1] * 2,) if strided else shape
        t = DeviceTensor.from_numpy(np.full(full, np.nan, dtype=_np_dtype(dt)), stream=stream)
        made.append(t)
        outs.append(t[..., ::2] if strided else t)
    return tuple(outs)


def run_case(case: Case, stream=None) -> CaseResult:
    """Runs one case on the current backend and checks it; never raises for a failing case
    (the exception becomes the result's ``error``). ``seconds`` is the operator call on device
    tensors (phase one, workspace, phase two) through the stream's synchronization."""
    from .ops import layer_norm_backward
    seconds = 0.0
    made: list = []   # every device tensor made here, closed before returning
    try:
        host = make_inputs(case)
        ns = case.normalized_shape
        layout_in = case.layout if case.layout in ("transposed", "strided", "offset",
                                                   "inner-strided") else "contiguous"
        dev = {k: (_place(v, layout_in if k in ("grad_out", "input") else "contiguous",
                          stream, made) if v is not None else None)
               for k, v in host.items()}
        kwargs = {}
        if case.layout == "strided-out" or case.out_dtypes is not None:
            kwargs["out"] = _preallocated_outputs(case, stream, made,
                                                  strided=case.layout == "strided-out")
        if stream is not None:
            stream.synchronize()  # uploads done before the clock starts
        t0 = time.perf_counter()
        results = layer_norm_backward(dev["grad_out"], dev["input"], ns, dev["mean"],
                                      dev["rstd"], dev["weight"], dev["bias"],
                                      output_mask=case.mask, stream=stream, **kwargs)
        made.extend(r for r in results if r is not None)
        if stream is not None:
            stream.synchronize()
        seconds = time.perf_counter() - t0
        got = [r.to_numpy() if r is not None else None for r in results]
        expected = reference.layer_norm_backward(host["grad_out"], host["input"], ns,
                                                 host["mean"], host["rstd"], host["weight"],
                                                 output_mask=case.mask)
        magnitude = reference.error_scale(host["grad_out"], host["input"], ns, host["mean"],
                                          host["rstd"], host["weight"], output_mask=case.mask)
        if case.reference_hook is not None:
            expected = tuple(case.reference_hook(tuple(expected)))
        result = _compare(case, got, expected, magnitude, seconds)
    except Exception as e:  # noqa: BLE001 - a smoke test reports every failure, of any kind
        result = CaseResult(case, False, seconds,
                            error=f"{type(e).__name__}: {e}".strip() + _where(e))
    # Releasing is part of the check: a failure here would leak device memory in a real job.
    for t in made:
        try:
            t.close()
        except Exception as e:  # noqa: BLE001
            result.passed = False
            note = f"releasing a tensor failed: {type(e).__name__}: {e}"
            result.error = f"{result.error}; {note}" if result.error else note
    return result


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno})"


def _compare(case: Case, got, expected, magnitude, seconds: float) -> CaseResult:
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
        diff = np.abs(g.astype(np.float64) - e) if g.size else np.zeros(1)
        max_abs = math.inf if np.isnan(diff).any() else float(diff.max())  # NaN: worst
        ok = ratio <= 1.0
        result.outputs.append(OutputCheck(name, _dtype_name(g.dtype), max_abs, ratio, ok))
        if not ok:
            problems.append(f"{name}: max |err| {max_abs:.3g} is {ratio:.3g}x the tolerance")
    if problems:
        result.passed = False
        result.error = "; ".join(problems)
    return result


def _dtype_name(dt) -> str:
    dt = np.dtype(dt)
    return "bfloat16" if dt == _np_dtype("bfloat16") else dt.name


def run_cases(cases: Sequence[Case], progress: Callable[[int, int, Case, CaseResult | None],
                                                         None] | None = None,
              stream=None) -> list[CaseResult]:
    """Runs ``cases`` in order; ``progress(i, total, case, result)`` is called before each case
    (result None) and after it."""
    results = []
    for i, case in enumerate(cases):
        if progress:
            progress(i, len(cases), case, None)
        r = run_case(case, stream=stream)
        results.append(r)
        if progress:
            progress(i + 1, len(cases), case, r)
    return results


# --------------------------------------------------------------------------------------------
# Environment, report, output
# --------------------------------------------------------------------------------------------

def environment(device_id: int = 0) -> dict:
    """Backend, library paths and device facts for the header and the JSON report."""
    from . import device, runtime
    b = runtime.backend()
    env = {"backend": b.name, "reason": b.reason, "root": str(b.root),
           "libraries": {role: str(p) for role, p in b.libraries.items()},
           "device": {"id": device_id},
           "host": {"machine": platform.machine(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__}}
    try:
        env["device"]["count"] = device.device_count()
        info = device.mem_info(device_id)
        env["device"]["memory_total"] = info.total
        env["device"]["memory_free"] = info.free
    except Exception as e:  # noqa: BLE001 - the header is informative; the cases decide
        env["device"]["error"] = f"{type(e).__name__}: {e}"
    if b.is_emulator:
        threads = os.environ.get("ACL_EMU_NUM_THREADS", "")
        env["emulator_threads"] = int(threads) if threads.isdigit() else os.cpu_count()
    return env


def report(env: dict, results: Sequence[CaseResult], mode: str, seconds: float) -> dict:
    failed = [r for r in results if not r.passed]
    return {
        "tool": "acl-py smoke", "version": _version(), "mode": mode,
        "environment": env, "backend": env.get("backend"),
        "tolerance": {"rule": TOLERANCE_RULE, "rtol": dict(reference.RTOL)},
        "cases": [r.to_json() for r in results],
        "summary": {"total": len(results), "passed": len(results) - len(failed),
                    "failed": len(failed), "failed_cases": [r.case.name for r in failed],
                    "seconds": seconds, "ok": not failed and bool(results)},
    }


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("acl-py")
    except Exception:  # noqa: BLE001
        return "unknown"


def _gib(n) -> str:
    return f"{n / 2**30:.1f} GiB"


def format_header(env: dict, mode: str, ncases: int) -> str:
    d = env["device"]
    lines = [f"acl-py smoke ({mode}, {ncases} cases)",
             f"  backend   {env['backend']}  ({env['reason']})"]
    for role, path in env["libraries"].items():
        lines.append(f"  {role:<9} {path}")
    dev = f"  device    {d['id']}"
    if "count" in d:
        dev += f" of {d['count']}"
    if "memory_total" in d:
        dev += f", memory {_gib(d['memory_free'])} free of {_gib(d['memory_total'])}"
    if "error" in d:
        dev += f" ({d['error']})"
    lines.append(dev)
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
                     str(c.normalized_ndim), c.mask_label(), c.layout,
                     "pass" if r.passed else "FAIL",
                     f"{w.max_abs_error:.2e}" if w else "-",
                     _fmt_ratio(w.error_ratio) if w else "-",
                     _fmt_time(r.seconds) if r.seconds else "-"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    right = {7, 8, 9}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(head), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)


def format_summary(results: Sequence[CaseResult], seconds: float) -> str:
    failed = [r for r in results if not r.passed]
    if not results:
        return "FAILED: no cases ran"
    if not failed:
        return f"PASSED: all {len(results)} cases in {seconds:.1f} s"
    lines = ["", "!" * 72, f"FAILED: {len(failed)} of {len(results)} cases", "!" * 72]
    for r in failed:
        lines.append(f"  {r.case.name} [{r.case.dtype_label()}, shape {list(r.case.shape)}, "
                     f"mask {r.case.mask_label()}, layout {r.case.layout}]")
        lines.append(f"    {r.error}")
        for o in r.outputs:
            lines.append(f"    {o.name:<12} {o.dtype:<9} max|err| {o.max_abs_error:.3e}  "
                         f"err/tol {o.error_ratio:.3g}  {'ok' if o.passed else 'OUT OF TOLERANCE'}")
    return "\n".join(lines)


class Progress:
    """A plain-text progress bar on ``stream`` when it is a terminal, else one line per case."""

    def __init__(self, stream=None, width: int = 28):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width

    def __call__(self, done: int, total: int, case: Case, result: CaseResult | None) -> None:
        if self.tty:
            fill = self.width * done // max(total, 1)
            bar = "#" * fill + "-" * (self.width - fill)
            label = case.name if result is None else f"{case.name}: {'ok' if result.passed else 'FAIL'}"
            self.stream.write(f"\r[{bar}] {done}/{total} {label:<40.40}")
            if done == total and result is not None:
                self.stream.write("\r" + " " * (self.width + 55) + "\r")
            self.stream.flush()
        elif result is not None:
            status = "ok" if result.passed else "FAIL"
            self.stream.write(f"[{done:>{len(str(total))}}/{total}] {case.name} {status} "
                              f"({_fmt_time(result.seconds)})\n")
            self.stream.flush()


def smoke_results(quick: bool = False, cases: Iterable[Case] | None = None,
                  device_id: int = 0, progress=None) -> tuple[dict, list[CaseResult]]:
    """Opens the device, runs the cases on a stream of their own, and returns (environment,
    results). Everything it creates is released before it returns."""
    from .device import Device
    from .stream import Stream
    cases = list(cases) if cases is not None else build_cases(quick)
    with Device(device_id):
        env = environment(device_id)
        with Stream() as stream:
            results = run_cases(cases, progress=progress, stream=stream)
    return env, results


def main(argv: Sequence[str] | None = None, cases: Iterable[Case] | None = None,
         out=None, err=None) -> int:
    """``acl-py smoke [--quick] [--json FILE] [--device N]`` as a function; returns the exit
    status. ``cases`` replaces the matrix (tests inject broken cases this way)."""
    p = argparse.ArgumentParser(prog="acl-py smoke", description=__doc__.split("\n\n")[0])
    add_smoke_arguments(p)
    return run_smoke(p.parse_args(argv), cases=cases, out=out, err=err)


def add_smoke_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="a seconds-long subset covering every feature at small sizes")
    p.add_argument("--json", metavar="FILE",
                   help="write the report as JSON to FILE ('-': JSON alone on stdout, the "
                        "human-readable report then goes to stderr)")
    p.add_argument("--device", type=int, default=0, metavar="N", help="device id (default 0)")
    p.add_argument("--dtypes", default="fp32,fp16,bf16", metavar="LIST",
                   help="dtypes to test, comma-separated (default fp32,fp16,bf16); a case is "
                        "kept when every tensor's dtype is listed. Atlas parts without "
                        "BFLOAT16 support: --dtypes fp32,fp16")


def select_dtypes(cases: Iterable[Case], spec: str) -> list[Case]:
    """The cases whose every tensor dtype is in ``spec`` ("fp32,fp16", names or short names)."""
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
    return [c for c in cases if case_dtypes(c) <= wanted]


def case_dtypes(case: Case) -> set[str]:
    """Every dtype a case's tensors use."""
    used = {case.dtype, case.stats_dtype or case.dtype}
    if case.weight:
        used.add(case.weight_dtype or case.dtype)
    if case.out_dtypes:
        used |= {d for d in case.out_dtypes if d}
    return used


def run_smoke(args, cases: Iterable[Case] | None = None, out=None, err=None) -> int:
    """The ``smoke`` command for parsed ``args`` (``quick``, ``json``, ``device``): header, table,
    summary on ``out``, progress on ``err``; returns 0 when every case passed, else 1."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    mode = "quick" if args.quick else "full"
    json_out = out
    if args.json == "-":
        out = err   # stdout carries the JSON alone
    case_list = list(cases) if cases is not None else build_cases(args.quick)
    try:
        case_list = select_dtypes(case_list, getattr(args, "dtypes", "fp32,fp16,bf16"))
    except ValueError as e:
        print(f"acl-py smoke: {e}", file=err)
        return 2
    t0 = time.perf_counter()
    try:
        env, results = smoke_results(cases=case_list, device_id=args.device,
                                     progress=Progress(err))
    except Exception as e:  # noqa: BLE001 - cannot even open the device: that is the finding
        seconds = time.perf_counter() - t0
        msg = f"FAILED: could not run the smoke test: {type(e).__name__}: {e}"
        print(msg, file=out)
        if args.json:
            _write_json(args.json, {"tool": "acl-py smoke", "mode": mode, "backend": None,
                                    "error": msg, "cases": [],
                                    "summary": {"total": 0, "passed": 0, "failed": 0,
                                                "failed_cases": [], "ok": False,
                                                "seconds": seconds}}, json_out)
        return 1
    seconds = time.perf_counter() - t0
    print(format_header(env, mode, len(results)), file=out)
    print(file=out)
    print(format_table(results), file=out)
    print(format_summary(results, seconds), file=out)
    rep = report(env, results, mode, seconds)
    if args.json:
        _write_json(args.json, rep, json_out)
    return 0 if rep["summary"]["ok"] else 1


# The names acl_py.cli's command table refers to.
add_arguments = add_smoke_arguments
run = run_smoke


# --------------------------------------------------------------------------------------------
# acl-py sample
# --------------------------------------------------------------------------------------------

SAMPLE_FILES = {"objects": "layer_norm_backward.py", "raw": "layer_norm_backward_raw.py"}


def sample_path(kind: str = "objects"):
    """The sample's file: ``samples/`` of the source tree acl_py was imported from, else the
    copy an installed wheel carries in ``acl_py/_samples``."""
    from pathlib import Path
    here = Path(__file__).resolve().parent
    source = here.parent / "samples" / SAMPLE_FILES[kind]
    return source if source.is_file() else here / "_samples" / SAMPLE_FILES[kind]


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--raw", action="store_true",
                   help="run the raw cffi port (samples/layer_norm_backward_raw.py) instead")
    p.add_argument("--show", action="store_true", help="print the sample's path and exit")


def run_sample(args) -> int:
    """The ``sample`` command: runs the port of the vendor's C++ sample in a fresh interpreter
    (it owns the runtime from aclInit to aclFinalize) and returns its exit status."""
    import subprocess
    path = sample_path("raw" if args.raw else "objects")
    if not path.is_file():
        print(f"acl-py sample: {path} not found; the samples ship with the source tree "
              f"(git clone, then `make sample`)", file=sys.stderr)
        return 2
    if args.show:
        print(path)
        return 0
    sys.stdout.flush()
    return subprocess.call([sys.executable, str(path)])


def _finite(o):
    """JSON has no inf/NaN: a non-finite error (a NaN output) is written as the string."""
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _write_json(path: str, data: dict, out) -> None:
    text = json.dumps(_finite(data), indent=2, allow_nan=False, default=_json_default) + "\n"
    if path == "-":
        out.write(text)
        out.flush()
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


__all__ = ["Case", "CaseResult", "OutputCheck", "build_cases", "run_case", "run_cases",
           "smoke_results", "environment", "report", "format_table", "main", "run_smoke",
           "add_smoke_arguments", "run_sample", "add_sample_arguments"]
