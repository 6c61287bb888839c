"""acl-py benchmarks: `make bench` runs this file and prints one table.

Sections (each row: the figure, its peer, the ratio, the target, PASS/MISS):
  1. overhead  host overhead per call on a tiny problem against a C floor (benchmarks/overhead.cpp)
  2. kernel    emulator kernel throughput against PyTorch's CPU native_layer_norm_backward,
               and its effective bandwidth against a memory-copy roofline (benchmarks/roofline.c)
  3. transfer  DeviceTensor.from_numpy/.to_numpy against a NumPy copy; peak RSS of the
               NumPy-level call (benchmarks/peak_rss.py, in a subprocess)
  4. scaling   kernel time for M x N from 2^10 to 2^26 elements (+ benchmarks/out/scaling.png
               when matplotlib is importable)
  5. forward   the LayerNorm forward kernel (aclnnLayerNorm) against PyTorch's CPU
               native_layer_norm, and its bandwidth against the same roofline

Every figure is a median over repeated runs; figures compared with a peer are measured
interleaved with it (A, B, A, B, ...) because the machine is shared and noisy. A section that
cannot run (the stack is not built yet, torch missing) reports "not available: <why>" and the
rest still runs. Exit status: 0 (figures are reports, not tests), 1 only for a crash of this
script itself.

Usage: python benchmarks/run.py [--quick] [--only overhead,kernel,transfer,scaling,forward]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Benchmark the source tree this file lives in (make bench runs from it), whatever an
# installed copy of acl_py in the environment may be.
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
SECTIONS = ("overhead", "kernel", "transfer", "scaling", "forward")

# Targets (issues 7 and 13). Ratios are acl-py / peer unless said otherwise.
T_OVERHEAD_CALL = 1.5       # out=: the C loop reusing its outputs
T_OVERHEAD_NEW = 2.0        # outputs returned new: the C loop allocating its outputs per call
T_OVERHEAD_PLAN = 1.1       # plan.run: the C repeatable-executor loop
T_QUEUED = 1.5              # 50 calls queued then one synchronize: per-call synchronized
T_ACLNN = 1.2            # acl_py.aclnn (declared at run time) vs the hand-written wrapper
T_ACLNN_FIRST_MS = 50.0  # first use of an operator: header read, prototypes, binding
T_KERNEL = 1.0
T_BANDWIDTH = 0.60
T_KERNEL_BANDWIDTH = 0.85   # the backward kernel, fp32 (section 2; issue 14)
T_TRANSFER = 1.25
T_RSS_SLACK = 4 << 20   # page and 2 MiB arena-commit rounding on top of the sum
T_LINEAR = 1.25         # max/min ns/element over the three largest sizes (linear growth)

MiB = 1 << 20


# ---------------------------------------------------------------------------------------------
# reporting

@dataclass
class Row:
    section: str
    figure: str
    value: str = ""
    peer: str = ""
    ratio: float | None = None
    target: str = ""
    status: str = "INFO"    # PASS, MISS, INFO, N/A, FAIL (the result was wrong)


def _fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _judge(ratio: float, limit: float, higher_is_better: bool = False) -> str:
    ok = ratio >= limit if higher_is_better else ratio <= limit
    return "PASS" if ok else "MISS"


def _na(section: str, why: str) -> Row:
    return Row(section, "not available: " + why, status="N/A")


def print_table(rows: list[Row]) -> None:
    head = ("section", "figure", "acl-py", "peer", "ratio", "target", "result")
    cells = [head] + [(r.section, r.figure, r.value, r.peer,
                       "" if r.ratio is None else f"{r.ratio:.3f}", r.target, r.status)
                      for r in rows]
    sized = [head] + [c for c, r in zip(cells[1:], rows) if r.status != "N/A"]
    widths = [max(len(c[i]) for c in sized) for i in range(len(head))]
    widths[0] = max(len(c[0]) for c in cells)
    line = "  ".join("-" * w for w in widths)
    for k, c in enumerate(cells):
        if k > 0 and rows[k - 1].status == "N/A":   # the reason is shown whole, unpadded
            print(f"{c[0].ljust(widths[0])}  {c[1]}  N/A")
            continue
        print("  ".join(t.ljust(widths[i]) for i, t in enumerate(c)).rstrip())
        if k == 0:
            print(line)


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# machine and stack

def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def _short_error(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


class Stack:
    """The parts of acl-py the benchmarks use, found once; `missing(...)` says what is not
    there yet, so a section can report "not available" instead of crashing."""

    def __init__(self) -> None:
        self.error = None
        try:
            import acl_py
            from acl_py.raw import lib
            self.acl = acl_py
            self.lib = lib
            self.backend = lib.backend
        except Exception as e:  # the stack is not built, or not importable yet
            self.acl = self.lib = self.backend = None
            self.error = _short_error(e)

    def missing(self, *names: str) -> str | None:
        if self.acl is None:
            return f"acl_py does not load ({self.error})"
        absent = [n for n in names if not hasattr(self.acl, n)]
        return f"acl_py has no {', '.join(absent)} yet" if absent else None

    def set_threads(self, n: int) -> int | None:
        """Kernel threads of the emulator (None on real CANN, where it is the device's)."""
        if self.backend is None or not self.backend.is_emulator:
            return None
        self.lib.aclemuSetNumThreads(n)
        return int(self.lib.aclemuGetNumThreads())


# ---------------------------------------------------------------------------------------------
# helpers over acl-py's public API

def device_tensor(acl, arr: np.ndarray, stream=None):
    return acl.DeviceTensor.from_numpy(np.ascontiguousarray(arr))


def empty_device(acl, shape, dtype):
    dt = acl.DeviceTensor
    if hasattr(dt, "empty"):
        return dt.empty(shape, dtype)
    return dt.from_numpy(np.zeros(shape, dtype))


def close(*objs) -> None:
    for o in objs:
        if o is not None and hasattr(o, "close"):
            o.close()


def make_plan(acl, dy, x, ns, mean, rstd, w, b, outs, stream):
    """The reusable plan over device tensors; returns (plan, run) where run() launches once."""
    plan = acl.LayerNormBackward(dy, x, ns, mean, rstd, w, b, (True, True, True), out=outs)
    run = plan.run
    return plan, lambda: run(stream)


def _shown_path(path) -> str:
    """A path as the table prints it: relative to the checkout when inside it (the output is
    pasted into benchmarks/README.md, where a machine's own paths mean nothing)."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def median(xs) -> float:
    return float(statistics.median(xs))


def compile_c(name: str, stack: Stack | None, extra: list[str]) -> Path:
    """Compiles benchmarks/<name>.c (C11) or <name>.cpp (C++17: the vendor's aclnn headers
    are C++ only) into benchmarks/out/<name> (-O2); rebuilt when older."""
    OUT.mkdir(exist_ok=True)
    exe = OUT / name
    src = HERE / f"{name}.cpp"
    if src.exists():
        cmd = [os.environ.get("CXX", "c++"), "-O2", "-std=c++17"]
    else:
        src = HERE / f"{name}.c"
        cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11"]
    cmd += ["-Wall", "-Wextra", "-Werror", "-pthread", str(src), "-o", str(exe)] + extra
    stamp = OUT / f"{name}.cmd"
    if (exe.exists() and exe.stat().st_mtime >= src.stat().st_mtime and stamp.exists()
            and stamp.read_text() == shlex.join(cmd)):
        return exe
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"compiling {src.name} failed: {r.stderr.strip()[:400]}")
    stamp.write_text(shlex.join(cmd))
    return exe


def library_flags(stack: Stack) -> list[str]:
    """Links against exactly the libraries acl-py opened (same files, same backend)."""
    b = stack.backend
    dirs = sorted({str(p.parent) for p in b.libraries.values()})
    opapi = Path(b.libraries["opapi"]).name[3:-3]   # opapi or opapi_nn
    inc = [b.root / "include", ROOT / "bindings" / "include"]
    flags = [f"-I{inc[0]}" if inc[0].is_dir() else f"-I{inc[1]}"]
    for d in dirs:
        flags += [f"-L{d}", f"-Wl,-rpath,{d}"]
    return flags + ["-lascendcl", "-lnnopbase", f"-l{opapi}"]


def run_c(exe: Path, *args) -> dict[str, str]:
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{exe.name} {' '.join(map(str, args))}: exit {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()[:300]}")
    return dict(kv.split("=", 1) for kv in r.stdout.split())


# ---------------------------------------------------------------------------------------------
# 1. host overhead

def bench_overhead(stack: Stack, quick: bool) -> list[Row]:
    sec = "1 overhead"
    why = stack.missing("DeviceTensor", "Stream", "layer_norm_backward")
    if why:
        return [_na(sec, why)]
    acl = stack.acl
    exe = compile_c("overhead", stack, library_flags(stack))
    rounds, iters, warm = (3, 500, 100) if quick else (9, 3000, 300)

    # The same data as overhead.cpp (it checks its own result; we check ours below).
    m, n = 2, 8
    i = np.arange(m * n)
    dy_h = (((i * 7) % 11) / 11.0 - 0.5).astype(np.float32).reshape(m, n)
    x_h = (((i * 5) % 13) / 13.0 - 0.5).astype(np.float32).reshape(m, n)
    mean_h = (0.01 * np.arange(m)).astype(np.float32).reshape(m, 1)
    rstd_h = (1.0 + 0.1 * np.arange(m)).astype(np.float32).reshape(m, 1)
    w_h = (1.0 + 0.05 * np.arange(n)).astype(np.float32)
    b_h = np.zeros(n, np.float32)
    stream = acl.Stream()
    ins = [device_tensor(acl, a) for a in (dy_h, x_h, mean_h, rstd_h, w_h, b_h)]
    dy, x, mean, rstd, w, b = ins
    outs = (empty_device(acl, (m, n), np.float32), empty_device(acl, (n,), np.float32),
            empty_device(acl, (n,), np.float32))
    ns, mask = (n,), (True, True, True)
    lnb = acl.layer_norm_backward
    sync = stream.synchronize
    pc = time.perf_counter_ns

    def py_call(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            lnb(dy, x, ns, mean, rstd, w, b, mask, out=outs, stream=stream)
            sync()
            s[j] = pc() - t0
        return median(s)

    # The same operator through acl_py.aclnn: prototypes read from the header at run time.
    aclnn_lnb = acl.aclnn.LayerNormBackward

    def py_aclnn(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            aclnn_lnb(dy, x, ns, mean, rstd, w, b, mask, *outs, stream=stream)
            sync()
            s[j] = pc() - t0
        return median(s)

    def py_call_alloc(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            r = lnb(dy, x, ns, mean, rstd, w, b, mask, stream=stream)
            sync()
            del r       # the outputs are released here, as the C loop frees its own
            s[j] = pc() - t0
        return median(s)

    raw_call, raw_plan, close_floors = cffi_floors(stack, ins, outs, stream)

    plan = run = None
    rows: list[Row] = []
    try:
        plan, run = make_plan(acl, dy, x, ns, mean, rstd, w, b, outs, stream)
    except Exception as e:
        plan_error = _short_error(e)
    else:
        plan_error = None

    def py_plan(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            run()
            sync()
            s[j] = pc() - t0
        return median(s)

    res: dict[str, list[float]] = {k: [] for k in
                                   ("c_call", "py_call", "c_plan", "py_plan", "c_malloc",
                                    "c_alloc", "py_alloc", "py_aclnn", "raw_call",
                                    "raw_plan")}
    ws = None
    for r in range(rounds):
        # Alternate C and Python within each round, and flip the order every other round.
        pairs = [("c_call", lambda: float(run_c(exe, "oneshot", iters, warm)["median_ns"])),
                 ("py_call", lambda: (py_call(warm), py_call(iters))[1])]
        if plan is not None:
            pairs += [("c_plan", lambda: float(run_c(exe, "plan", iters, warm)["median_ns"])),
                      ("py_plan", lambda: (py_plan(warm), py_plan(iters))[1])]
        pairs += [("c_alloc", lambda: float(run_c(exe, "oneshot-outputs", iters, warm)
                                            ["median_ns"])),
                  ("py_alloc", lambda: (py_call_alloc(warm), py_call_alloc(iters))[1]),
                  ("c_malloc", lambda: float(run_c(exe, "oneshot-malloc", iters, warm)
                                             ["median_ns"])),
                  ("py_aclnn", lambda: (py_aclnn(warm), py_aclnn(iters))[1]),
                  ("raw_call", lambda: (raw_call(warm), raw_call(iters))[1]),
                  ("raw_plan", lambda: (raw_plan(warm), raw_plan(iters))[1])]
        if r % 2:
            pairs = pairs[::-1]
        for key, fn in pairs:
            res[key].append(fn())
    ws = run_c(exe, "oneshot", 10, 0)["workspace"]

    # The result must be right: compare with the float64 reference.
    got = [o.to_numpy() for o in outs]
    from acl_py import reference as ref
    exp = ref.layer_norm_backward(dy_h, x_h, ns, mean_h, rstd_h, w_h)
    mag = ref.error_scale(dy_h, x_h, ns, mean_h, rstd_h, w_h)
    err = max(ref.max_error_ratio(g, e, s, np.float32) for g, e, s in zip(got, exp, mag))
    wrong = not err <= 1.0

    def row(fig, py_key, c_key, limit, target):
        py, c = median(res[py_key]), median(res[c_key])
        ratio = py / c
        status = "FAIL" if wrong else (_judge(ratio, limit) if limit else "INFO")
        return Row(sec, fig, _fmt_time(py * 1e-9), "C " + _fmt_time(c * 1e-9), ratio, target,
                   status)

    rows.append(row("layer_norm_backward(out=) + sync, 2x8 fp32", "py_call", "c_call",
                    T_OVERHEAD_CALL, f"<= {T_OVERHEAD_CALL}"))
    rows.append(row("layer_norm_backward, 3 outputs returned new + sync", "py_alloc",
                    "c_alloc", T_OVERHEAD_NEW, f"<= {T_OVERHEAD_NEW}"))
    if plan is not None:
        rows.append(row("plan.run() + sync (repeatable executor)", "py_plan", "c_plan",
                        T_OVERHEAD_PLAN, f"<= {T_OVERHEAD_PLAN}"))
    else:
        rows.append(_na(sec, f"plan: {plan_error}"))
    rows.append(row("cffi floor: phase one + two + sync from Python, no acl-py code",
                    "raw_call", "c_call", None, "info"))
    if plan is not None:
        rows.append(row("cffi floor: phase two + sync from Python (repeatable executor)",
                        "raw_plan", "c_plan", None, "info"))
    rows.append(row("C: outputs malloc+create+destroy+free per call vs reused", "c_alloc",
                    "c_call", None, "info"))
    rows.append(row("C: workspace aclrtMalloc/Free per call vs reused", "c_malloc", "c_call",
                    None, f"info (ws {ws} B)"))
    hand, anyop = median(res["py_call"]), median(res["py_aclnn"])
    rows.append(Row(sec, "aclnn.LayerNormBackward + sync vs layer_norm_backward(out=) + sync",
                    _fmt_time(anyop * 1e-9), "hand " + _fmt_time(hand * 1e-9), anyop / hand,
                    f"<= {T_ACLNN}", "FAIL" if wrong else _judge(anyop / hand, T_ACLNN)))
    rows.append(aclnn_first_use(sec))
    for k, v in res.items():
        if v:
            log(f"overhead {k}: rounds(us)=" + " ".join(f"{t / 1e3:.1f}" for t in v))
    if wrong:
        rows.append(Row(sec, f"result check: error {err:.3g}x tolerance", status="FAIL"))
    close_floors()
    close(plan, *outs, *ins, stream)
    rows += bench_queued(stack, quick)
    return rows


def floor_loops(fns, cargs, outp, ws_ptr, executor, stream_handle):
    """(raw_call(k), raw_plan(k)): median ns per call over k calls of phase one + two +
    synchronize, and of phase two + synchronize on the repeatable ``executor``, through
    ``fns`` = (phase one, phase two, aclrtSynchronizeStream) as some binding exposes them,
    with phase one's arguments ``cargs`` and out-parameters ``outp`` made once."""
    p1, p2, sync = fns
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10 = cargs
    wsz, exe_p = outp
    sh = stream_handle
    pc = time.perf_counter_ns

    def raw_call(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            p1(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, wsz, exe_p)
            p2(ws_ptr, wsz[0], exe_p[0], sh)
            sync(sh)
            s[j] = pc() - t0
        return median(s)

    def raw_plan(k: int) -> float:
        s = [0] * k
        for j in range(k):
            t0 = pc()
            p2(ws_ptr, wsz[0], executor, sh)
            sync(sh)
            s[j] = pc() - t0
        return median(s)
    return raw_call, raw_plan


def cffi_floors(stack: Stack, ins, outs, stream):
    """The cffi floors of section 1: overhead.cpp's `oneshot` and `plan` loops made from Python
    through acl-py's cffi binding (ABI mode), handles, workspace and executor made once, no
    acl-py code in the loop: what the interpreter and cffi cost by themselves. ``ins``: the
    LayerNormBackward inputs (gradOut, input, mean, rstd, weight, bias) and ``outs`` its three
    outputs, as DeviceTensors; normalizedShape is the last dim, every output requested.
    Returns (raw_call(k), raw_plan(k): median ns per call over k calls, close())."""
    lib, acl = stack.lib, stack.acl
    from acl_py.raw import ffi
    n = ins[1].shape[-1]
    ia = lib.aclCreateIntArray(ffi.new("int64_t[]", [n]), 1)
    ba = lib.aclCreateBoolArray(ffi.new("bool[]", [True] * 3), 3)
    th = [t.handle for t in ins] + [o.handle for o in outs]
    wsz, exe_p = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    p1, p2 = lib.aclnnLayerNormBackwardGetWorkspaceSize, lib.aclnnLayerNormBackward
    raw_sync, sh = lib.aclrtSynchronizeStream, stream.handle
    st = p1(th[0], th[1], ia, th[2], th[3], th[4], th[5], ba, th[6], th[7], th[8], wsz, exe_p)
    st = st or lib.aclSetAclOpExecutorRepeatable(exe_p[0])
    if st:
        raise RuntimeError(f"cffi floor: phase one / repeatable returned {st}")
    raw_exec = exe_p[0]
    ws_buf = acl.DeviceBuffer(max(int(wsz[0]), 1))
    ws_ptr = ws_buf.ptr
    cargs = (th[0], th[1], ia, th[2], th[3], th[4], th[5], ba, th[6], th[7], th[8])
    raw_call, raw_plan = floor_loops((p1, p2, raw_sync), cargs, (wsz, exe_p), ws_ptr, raw_exec,
                                     sh)
    # What the loops pass, for profile_overhead.py --api-mode's same calls.
    raw_call.args = (cargs, ws_ptr, raw_exec, sh)  # type: ignore[attr-defined]

    def close_all() -> None:
        lib.aclDestroyAclOpExecutor(raw_exec)
        lib.aclDestroyIntArray(ia)
        lib.aclDestroyBoolArray(ba)
        ws_buf.close()

    return raw_call, raw_plan, close_all


def aclnn_first_use(sec: str) -> Row:
    """Milliseconds from `import acl_py.aclnn` to a callable operator, in a fresh process
    (the runtime initialized first): header found and parsed, library bound."""
    code = ("import time, acl_py; acl_py.init(); t = time.perf_counter(); "
            "import acl_py.aclnn as a; a.operator('Add'); "
            "print((time.perf_counter() - t) * 1e3)")
    times = []
    for _ in range(5):
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, env=env)
        if r.returncode:
            return _na(sec, f"aclnn first use: {r.stderr.strip().splitlines()[-1:]}")
        times.append(float(r.stdout.split()[-1]))
    ms = median(times)
    return Row(sec, "aclnn: first use of an operator (import, header, binding)", f"{ms:.1f} ms",
               "", None, f"< {T_ACLNN_FIRST_MS:.0f} ms",
               "PASS" if ms < T_ACLNN_FIRST_MS else "MISS")


QUEUED_SHAPE = (4, 128, 768)
QUEUED_CALLS = 50


def bench_queued(stack: Stack, quick: bool) -> list[Row]:
    """50 calls returning new outputs (dropped at once) queued on a stream, then one
    synchronize, against the same 50 calls each synchronized; both start from an emptied
    pool (fresh device memory). A stream-ordered pool lets each queued call reuse the blocks
    the previous call's dropped outputs held, as the synchronized loop does."""
    sec = "1 overhead"
    acl = stack.acl
    rng = np.random.default_rng(0)
    shape, n = QUEUED_SHAPE, QUEUED_SHAPE[-1]
    x_h = rng.standard_normal(shape, dtype=np.float32)
    dy_h = rng.standard_normal(shape, dtype=np.float32)
    mean_h = x_h.mean(axis=-1, keepdims=True)
    rstd_h = (1.0 / np.sqrt(x_h.var(axis=-1, keepdims=True) + 1e-5)).astype(np.float32)
    w_h = (rng.random(n, dtype=np.float32) + 0.5)
    stream = acl.Stream()
    ins = [device_tensor(acl, a) for a in (dy_h, x_h, mean_h, rstd_h, w_h)]
    dy, x, mean, rstd, w = ins
    lnb = acl.layer_norm_backward
    pool = acl.get_pool()
    ns = (n,)

    def fresh():
        stream.synchronize()
        pool.free_all_blocks()

    def queued():
        for _ in range(QUEUED_CALLS):
            lnb(dy, x, ns, mean, rstd, w, stream=stream)
        stream.synchronize()

    def synced():
        for _ in range(QUEUED_CALLS):
            lnb(dy, x, ns, mean, rstd, w, stream=stream)
            stream.synchronize()

    rounds = 3 if quick else 9
    tq, ts = [], []
    for r in range(rounds):
        for f, t in ((queued, tq), (synced, ts)) if r % 2 == 0 else ((synced, ts), (queued, tq)):
            fresh()
            t0 = time.perf_counter()
            f()
            t.append((time.perf_counter() - t0) / QUEUED_CALLS)
    log("queued per call (ms): " + " ".join(f"{t * 1e3:.2f}" for t in tq) +
        "; synchronized: " + " ".join(f"{t * 1e3:.2f}" for t in ts))
    # The result must be right: the last queued call against the reference.
    res = lnb(dy, x, ns, mean, rstd, w, stream=stream)
    stream.synchronize()
    from acl_py import reference as ref
    exp = ref.layer_norm_backward(dy_h, x_h, ns, mean_h, rstd_h, w_h)
    mag = ref.error_scale(dy_h, x_h, ns, mean_h, rstd_h, w_h)
    err = max(ref.max_error_ratio(g.to_numpy(), e, m, np.float32)
              for g, e, m in zip(res, exp, mag))
    close(*res, *ins, stream)
    q, sy = median(tq), median(ts)
    status = "FAIL" if not err <= 1.0 else _judge(q / sy, T_QUEUED)
    dims = "x".join(map(str, shape))
    return [Row(sec, f"{QUEUED_CALLS} calls queued on fresh memory + 1 sync, {dims} fp32, per "
                f"call", _fmt_time(q), "synced each " + _fmt_time(sy), q / sy,
                f"<= {T_QUEUED}", status)]


# ---------------------------------------------------------------------------------------------
# 2. kernel throughput

KERNEL_SHAPES = ((8192, 1024), (2048, 4096), (512, 16384))


def _lnb_bytes(m: int, n: int, itemsize: int) -> int:
    """Bytes the operator must move at least once: reads grad_out, input, mean, rstd, weight;
    writes grad_input, grad_weight, grad_bias (bias is never read)."""
    return itemsize * (3 * m * n + 2 * m + 3 * n)


def _inputs(m: int, n: int, dtype, seed: int = 0, param_dtype=None):
    """grad_out, input, mean, rstd, weight, bias as NumPy arrays: grad_out and input of
    `dtype`, the rest of `param_dtype` (default `dtype`). mean/rstd are the forward's
    statistics of input, shaped [M, 1] as CANN and torch save them."""
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((m, n), dtype=np.float32)
    dy32 = rng.standard_normal((m, n), dtype=np.float32)
    mean = x32.mean(axis=1, keepdims=True, dtype=np.float64)
    var = np.square(x32 - mean.astype(np.float32)).mean(axis=1, keepdims=True, dtype=np.float64)
    rstd = 1.0 / np.sqrt(var + 1e-5)
    w32 = (rng.random(n, dtype=np.float32) + 0.5)
    b32 = np.zeros(n, np.float32)
    param_dtype = dtype if param_dtype is None else param_dtype
    return ([a.astype(dtype) for a in (dy32, x32)]
            + [a.astype(param_dtype) for a in (mean, rstd, w32, b32)])


def _torch_tensor(torch, a: np.ndarray):
    from ml_dtypes import bfloat16
    if a.dtype == np.dtype(bfloat16):
        return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _interleaved(fa, fb, min_reps: int, max_reps: int, budget_s: float):
    """Alternates fa and fb (each timed alone); returns the two lists of seconds."""
    fa(), fb()  # warm-up: page faults, thread pools, caches
    ta, tb = [], []
    start = time.perf_counter()
    while len(ta) < min_reps or (len(ta) < max_reps and time.perf_counter() - start < budget_s):
        for f, t in ((fa, ta), (fb, tb)) if len(ta) % 2 == 0 else ((fb, tb), (fa, ta)):
            t0 = time.perf_counter()
            f()
            t.append(time.perf_counter() - t0)
    return ta, tb


# Pause before each block of _blocks: longer than torch's OpenMP spin (measure_spin).
SETTLE_S = 0.03


def _blocks(fa, fb, rounds: int, per_block: int):
    """Times fa and fb in alternating blocks (order flipped every round); returns the two lists
    of seconds. Each block starts with a settle pause and one untimed call, so a call never
    pays for the other side's aftermath: call-by-call alternation charged torch's OpenMP
    worker, which keeps spinning on one of the two cores for ~5 ms after each torch call
    (libgomp's default wait policy), to the next acl-py call, which then ran on one core."""
    ta, tb = [], []
    for r in range(rounds):
        for f, t in ((fa, ta), (fb, tb)) if r % 2 == 0 else ((fb, tb), (fa, ta)):
            time.sleep(SETTLE_S)
            f()
            for _ in range(per_block):
                t0 = time.perf_counter()
                f()
                t.append(time.perf_counter() - t0)
    return ta, tb


def measure_spin(fn, window_s: float = 0.1) -> float:
    """CPU seconds this process burns in the window_s after fn() returns while its caller
    sleeps: the time a library's idle worker threads keep spinning."""
    fn()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(window_s)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def _bandwidth(sec, roof_exe, acl_once, nbytes, label, threads, quick, err,
               target: float = T_BANDWIDTH) -> list[Row]:
    """Effective bandwidth of the kernel against the memory-copy roofline, measured in
    alternating rounds (roofline process, kernel runs, ...) so both see the same machine."""
    rounds = 3 if quick else 7
    roofs, kern = [], []
    for r in range(rounds):
        roofs.append(float(run_c(roof_exe, 256, threads, 3)["median_gbps"]))
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            acl_once()
            ts.append(time.perf_counter() - t0)
        kern.append(nbytes / median(ts) / 1e9)
    roof, bw = median(roofs), median(kern)
    log("bandwidth rounds: roofline " + " ".join(f"{x:.1f}" for x in roofs) + " GB/s; kernel "
        + " ".join(f"{x:.1f}" for x in kern) + " GB/s")
    status = "FAIL" if not err <= 1.0 else _judge(bw / roof, target, True)
    return [Row(sec, f"memcpy roofline, {threads} threads, 2 x 256 MiB", f"{roof:.2f} GB/s",
                "", None, "reference", "INFO"),
            Row(sec, f"effective bandwidth {label} (bytes once)", f"{bw:.2f} GB/s",
                f"copy {roof:.2f} GB/s", bw / roof, f">= {target:.2f}", status)]


def _roofline_exe(stack: Stack, sec: str, rows: list[Row]) -> Path | None:
    """roofline.c built, or None with a "not available" row saying why."""
    try:
        return compile_c("roofline", stack, [])
    except Exception as e:
        rows.append(_na(sec, f"roofline: {_short_error(e)}"))
        return None


def bench_kernel(stack: Stack, quick: bool, threads: int) -> tuple[list[Row], list[str]]:
    sec = "2 kernel"
    notes: list[str] = []
    why = stack.missing("DeviceTensor", "Stream", "layer_norm_backward")
    if why:
        return [_na(sec, why)], notes
    try:
        import torch
    except ImportError:
        notes.append("torch is not installed: the kernel-vs-torch rows are skipped. Get the "
                     "optional peer with `.venv/bin/python -m pip install -e '.[bench]'` "
                     "(torch==2.13.0, a CPU build).")
        torch = None
    acl = stack.acl
    from ml_dtypes import bfloat16
    from acl_py import reference as ref
    rows: list[Row] = []
    if torch is not None:
        torch.set_num_threads(threads)
    stream = acl.Stream()
    roof_exe = _roofline_exe(stack, sec, rows)

    shapes = KERNEL_SHAPES[-1:] if quick else KERNEL_SHAPES
    # The half types with FLOAT statistics and weight: what a CANN LayerNorm forward saves for
    # them (hicann/ops-nn norm/layer_norm_v4 docs) and what torch's mixed-type CPU kernel takes.
    for dtype, dname in ((np.float32, "fp32"), (np.float16, "fp16"), (bfloat16, "bf16")):
        for (m, n) in shapes:
            log(f"kernel {dname} [{m},{n}]")
            host = _inputs(m, n, dtype, param_dtype=np.float32)
            dev = [device_tensor(acl, a) for a in host]
            outs = (empty_device(acl, (m, n), dtype), empty_device(acl, (n,), np.float32),
                    empty_device(acl, (n,), np.float32))
            args = (dev[0], dev[1], (n,), dev[2], dev[3], dev[4], dev[5], (True, True, True))

            def acl_once():
                acl.layer_norm_backward(*args, out=outs, stream=stream)
                stream.synchronize()

            acl_once()
            # Correctness first: a fast wrong kernel is not a result.
            got = [o.to_numpy() for o in outs]
            exp = ref.layer_norm_backward(host[0], host[1], (n,), host[2], host[3], host[4])
            mag = ref.error_scale(host[0], host[1], (n,), host[2], host[3], host[4])
            err = max(ref.max_error_ratio(g, e, s, dtype, output=o)
                      for g, e, s, o in zip(got, exp, mag, ref.OUTPUTS))
            del got, exp, mag
            label = f"[{m},{n}] {dname}, all outputs" + (
                "" if dtype is np.float32 else ", fp32 mean/rstd/weight")
            # read once: grad_out, input, mean, rstd, weight; written: the three outputs
            nbytes = sum(a.nbytes for a in host[:5]) + host[1].nbytes + 2 * host[4].nbytes
            if torch is not None:
                tt = [_torch_tensor(torch, a) for a in host]
                mask = [True, True, True]
                op = torch.ops.aten.native_layer_norm_backward

                def torch_once():
                    op(tt[0], tt[1], [n], tt[2], tt[3], tt[4], tt[5], mask)

                with torch.inference_mode():
                    ta, tb = _blocks(acl_once, torch_once, 2 if quick else 8, 2 if quick else 4)
                    if (m, n) == shapes[0]:
                        spin = (measure_spin(acl_once), measure_spin(torch_once))
                        notes.append(
                            f"idle spin after one call ({dname} [{m},{n}]): acl-py "
                            f"{spin[0] * 1e3:.1f} ms CPU, torch {spin[1] * 1e3:.1f} ms CPU in "
                            f"the next 100 ms; kernel rows are timed in blocks after a "
                            f"{SETTLE_S * 1e3:.0f} ms settle pause and an untimed call")
                a, t = median(ta), median(tb)
                status = "FAIL" if not err <= 1.0 else _judge(a / t, T_KERNEL)
                rows.append(Row(sec, label, _fmt_time(a), "torch " + _fmt_time(t), a / t,
                                f"<= {T_KERNEL}", status))
                notes.append(f"kernel {label}: acl-py {nbytes / a / 1e9:.2f} GB/s, torch "
                             f"{nbytes / t / 1e9:.2f} GB/s; error {err:.3g}x tolerance")
                del tt
            else:
                ta = []
                for _ in range(3 if quick else 7):
                    t0 = time.perf_counter()
                    acl_once()
                    ta.append(time.perf_counter() - t0)
                a = median(ta)
                rows.append(Row(sec, label, _fmt_time(a), "torch missing", None, f"<= {T_KERNEL}",
                                "N/A" if err <= 1.0 else "FAIL"))
            if dtype is np.float32 and (m, n) == KERNEL_SHAPES[-1] and roof_exe is not None:
                rows += _bandwidth(sec, roof_exe, acl_once, nbytes, f"[{m},{n}] fp32", threads,
                                   quick, err, T_KERNEL_BANDWIDTH)
            if not err <= 1.0:
                rows.append(Row(sec, f"{label}: result error {err:.3g}x tolerance",
                                status="FAIL"))
            close(*outs, *dev)
            del host, dev, outs
    close(stream)
    return rows, notes


def _ln_bytes(m: int, n: int, itemsize: int, stat_itemsize: int) -> int:
    """Bytes the forward must move at least once: reads input, weight, bias; writes out, mean,
    rstd."""
    return itemsize * (2 * m * n + 2 * n) + stat_itemsize * 2 * m


def bench_forward(stack: Stack, quick: bool, threads: int) -> tuple[list[Row], list[str]]:
    """aclnnLayerNorm through a plan (repeatable executor: the kernel, not the call, is
    measured) against torch.ops.aten.native_layer_norm, in alternating blocks like section 2.
    Weight and bias in input's dtype, mean/rstd float32 (what torch returns for fp32; for
    fp16/bf16 torch returns them in input's dtype, which it computes in float)."""
    sec = "5 forward"
    notes: list[str] = []
    why = stack.missing("DeviceTensor", "Stream", "IntArray")
    if why or not hasattr(stack.acl.ops, "LAYER_NORM"):
        return [_na(sec, why or "acl_py.ops has no LAYER_NORM yet")], notes
    try:
        import torch
    except ImportError:
        return [_na(sec, "torch is not installed (see section 2's note)")], notes
    acl = stack.acl
    from ml_dtypes import bfloat16
    from acl_py import reference as ref
    torch.set_num_threads(threads)
    rows: list[Row] = []
    stream = acl.Stream()
    roof_exe = _roofline_exe(stack, sec, rows)
    shapes = KERNEL_SHAPES[-1:] if quick else KERNEL_SHAPES
    for dtype, dname in ((np.float32, "fp32"), (np.float16, "fp16"), (bfloat16, "bf16")):
        for (m, n) in shapes:
            log(f"forward {dname} [{m},{n}]")
            rng = np.random.default_rng(0)
            x = (rng.standard_normal((m, n), dtype=np.float32) * 2 + 0.5).astype(dtype)
            w = (rng.random(n, dtype=np.float32) + 0.5).astype(dtype)
            b = rng.standard_normal(n, dtype=np.float32).astype(dtype)
            dev = [device_tensor(acl, a) for a in (x, w, b)]
            outs = (empty_device(acl, (m, n), dtype), empty_device(acl, (m, 1), np.float32),
                    empty_device(acl, (m, 1), np.float32))
            plan = acl.ops.LAYER_NORM.prepare(
                (dev[0], acl.IntArray([n]), dev[1], dev[2], 1e-5, *outs), device=0)

            def acl_once():
                plan.run(stream)
                stream.synchronize()

            acl_once()
            got = [o.to_numpy() for o in outs]
            exp = ref.layer_norm(x, (n,), w, b)
            mag = ref.layer_norm_error_scale(x, (n,), w, b)
            err = max(ref.max_error_ratio(g, e, s, dtype) for g, e, s in zip(got, exp, mag))
            del got, exp, mag
            tt = [_torch_tensor(torch, a) for a in (x, w, b)]
            op = torch.ops.aten.native_layer_norm

            def torch_once():
                op(tt[0], [n], tt[1], tt[2], 1e-5)

            with torch.inference_mode():
                ta, tb = _blocks(acl_once, torch_once, 2 if quick else 8, 2 if quick else 4)
            a, t = median(ta), median(tb)
            label = f"[{m},{n}] {dname}, out + mean + rstd"
            status = "FAIL" if not err <= 1.0 else _judge(a / t, T_KERNEL)
            rows.append(Row(sec, label, _fmt_time(a), "torch " + _fmt_time(t), a / t,
                            f"<= {T_KERNEL}", status))
            nbytes = _ln_bytes(m, n, np.dtype(dtype).itemsize, 4)
            notes.append(f"forward {label}: acl-py {nbytes / a / 1e9:.2f} GB/s, torch "
                         f"{nbytes / t / 1e9:.2f} GB/s; error {err:.3g}x tolerance")
            if dtype is np.float32 and (m, n) == KERNEL_SHAPES[-1] and roof_exe is not None:
                rows += _bandwidth(sec, roof_exe, acl_once, nbytes, f"[{m},{n}] fp32", threads,
                                   quick, err)
            if not err <= 1.0:
                rows.append(Row(sec, f"{label}: result error {err:.3g}x tolerance",
                                status="FAIL"))
            plan.close()
            close(*outs, *dev)
            del x, w, b, dev, outs, tt
    close(stream)
    return rows, notes


# ---------------------------------------------------------------------------------------------
# 3. transfers

def bench_transfer(stack: Stack, quick: bool) -> tuple[list[Row], list[str]]:
    sec = "3 transfer"
    notes: list[str] = []
    rows: list[Row] = []
    why = stack.missing("DeviceTensor")
    if why:
        rows.append(_na(sec, why))
    else:
        acl = stack.acl
        nbytes = (64 if quick else 256) * MiB
        src = np.random.default_rng(1).random(nbytes // 4, dtype=np.float32)
        reps = 3 if quick else 7

        # Peers: a plain NumPy copy of the same bytes into a destination in the same state as
        # acl-py's. from_numpy in a loop gets its device memory back from acl-py's pool (pages
        # already touched): peer np.copyto into a preallocated array. With the pool emptied
        # first, it commits fresh pages, like np.copy allocating its result. to_numpy returns
        # a new array each time: peer np.copy.
        warm_dst = np.empty_like(src)
        warm_dst[...] = 0

        def np_copyto():
            np.copyto(warm_dst, src)

        def np_copy():
            c = src.copy()
            del c

        def h2d():
            close(acl.DeviceTensor.from_numpy(src))

        def h2d_cold():
            acl.get_pool().free_all_blocks()
            close(acl.DeviceTensor.from_numpy(src))

        label = f"{nbytes // MiB} MiB fp32"
        for fig, fn, peer, pname in (
                (f"DeviceTensor.from_numpy, {label} (pooled memory)", h2d, np_copyto,
                 "np.copyto"),
                (f"DeviceTensor.from_numpy, {label} (pool emptied)", h2d_cold, np_copy,
                 "np.copy")):
            ta, tb = _interleaved(fn, peer, reps, reps, 0)
            a, p = median(ta), median(tb)
            rows.append(Row(sec, fig, _fmt_time(a), f"{pname} {_fmt_time(p)}", a / p,
                            f"<= {T_TRANSFER}", _judge(a / p, T_TRANSFER)))
        del warm_dst
        dev = acl.DeviceTensor.from_numpy(src)
        back = dev.to_numpy()
        ok = np.array_equal(back, src)
        del back

        def d2h():
            h = dev.to_numpy()
            del h

        ta, tb = _interleaved(d2h, np_copy, reps, reps, 0)
        a, p = median(ta), median(tb)
        rows.append(Row(sec, f"DeviceTensor.to_numpy, {label}", _fmt_time(a),
                        "np.copy " + _fmt_time(p), a / p, f"<= {T_TRANSFER}",
                        _judge(a / p, T_TRANSFER) if ok else "FAIL"))
        close(dev)
        del src

    why = stack.missing("layer_norm_backward")
    if why:
        rows.append(_na(sec, f"peak RSS: {why}"))
        return rows, notes
    m = n = 2048 if quick else 4096     # 4096 x 4096 fp32 = 64 MiB per input
    r = subprocess.run([sys.executable, str(HERE / "peak_rss.py"), str(m), str(n)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        rows.append(_na(sec, "peak RSS child failed: " + (r.stderr.strip().splitlines()
                                                          or ["?"])[-1][:200]))
        return rows, notes
    d = json.loads(r.stdout.strip().splitlines()[-1])
    # On the emulator device memory is host memory: the device copies count too.
    device_copies = d["input_bytes"] + d["output_bytes"] if stack.backend.is_emulator else 0
    ws = d["workspace_bytes"] if stack.backend.is_emulator else 0
    budget = d["input_bytes"] + d["output_bytes"] + device_copies + ws
    growth = d["peak"] - d["rss_baseline"]
    rows.append(Row(sec, f"layer_norm_backward(NumPy) [{m},{n}] fp32: peak RSS growth",
                    f"{growth / MiB:.1f} MiB",
                    f"in+out+dev+ws {budget / MiB:.1f} MiB", growth / budget,
                    f"<= sum + {T_RSS_SLACK // MiB} MiB",
                    "PASS" if growth <= budget + T_RSS_SLACK else "MISS"))
    notes.append(f"peak RSS: baseline {d['rss_baseline'] / MiB:.1f} MiB after import and a "
                 f"warm-up call; inputs {d['input_bytes'] / MiB:.1f} MiB, outputs "
                 f"{d['output_bytes'] / MiB:.1f} MiB, device copies {device_copies / MiB:.1f} "
                 f"MiB, workspace {ws / MiB:.1f} MiB; peak {d['peak'] / MiB:.1f} MiB (VmHWM of the child; "
                 f"its ru_maxrss {d['ru_maxrss'] / MiB:.1f} MiB includes this parent's peak, which "
                 "Linux carries across fork + exec)")
    return rows, notes


# ---------------------------------------------------------------------------------------------
# 4. scaling

def bench_scaling(stack: Stack, quick: bool) -> tuple[list[Row], list[str]]:
    sec = "4 scaling"
    why = stack.missing("DeviceTensor", "Stream", "layer_norm_backward")
    if why:
        return [_na(sec, why)], []
    acl = stack.acl
    n = 1024
    top = 22 if quick else 26
    stream = acl.Stream()
    series = []
    for e in range(10, top + 1):
        m = (1 << e) // n
        host = _inputs(m, n, np.float32, seed=e)
        dev = [device_tensor(acl, a) for a in host]
        del host
        outs = (empty_device(acl, (m, n), np.float32), empty_device(acl, (n,), np.float32),
                empty_device(acl, (n,), np.float32))
        args = (dev[0], dev[1], (n,), dev[2], dev[3], dev[4], dev[5], (True, True, True))

        def once():
            acl.layer_norm_backward(*args, out=outs, stream=stream)
            stream.synchronize()

        once()
        ts = []
        start = time.perf_counter()
        while len(ts) < 3 or (len(ts) < 200 and time.perf_counter() - start < 0.3):
            t0 = time.perf_counter()
            once()
            ts.append(time.perf_counter() - t0)
        t = median(ts)
        series.append((e, m, t, t / (1 << e) * 1e9, _lnb_bytes(m, n, 4) / t / 1e9))
        close(*outs, *dev)
        del dev, outs
    close(stream)
    lines = [f"scaling series (fp32, N={n}, M doubling; median of >= 3 runs, each "
             "a layer_norm_backward on device tensors + synchronize):",
             f"  {'elements':>10} {'M':>7} {'time':>10} {'ns/elem':>8} {'GB/s':>7}"]
    for e, m, t, per, gbps in series:
        lines.append(f"  {'2^' + str(e):>10} {m:>7} {_fmt_time(t):>10} {per:8.3f} {gbps:7.2f}")
    by_e = {e: per for e, _, _, per, _ in series}
    # Linear growth past the caches: the cost per element is flat over the largest sizes
    # (2^24..2^26 fp32 elements move 192..768 MiB a call, beyond L2 and most of a shared L3).
    span = [e for e in by_e if e >= top - 2]
    ratio = max(by_e[e] for e in span) / min(by_e[e] for e in span)
    rows = [Row(sec, f"ns/element max/min over 2^{span[0]}..2^{span[-1]} (linear)",
                f"{max(by_e[e] for e in span):.3f} ns", f"{min(by_e[e] for e in span):.3f} ns",
                ratio, f"<= {T_LINEAR}", _judge(ratio, T_LINEAR))]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        lines.append("  (matplotlib is not importable: no plot written)")
    else:
        OUT.mkdir(exist_ok=True)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        els = [1 << e for e, *_ in series]
        ax.loglog(els, [t for _, _, t, _, _ in series], "o-", label="acl-py emulator kernel")
        ax.loglog(els, [series[-1][2] * x / els[-1] for x in els], "--", alpha=0.5,
                  label="linear through the largest")
        ax.set_xlabel("elements (M x 1024)")
        ax.set_ylabel("seconds per call")
        ax.set_title("LayerNormBackward fp32 scaling")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(OUT / "scaling.png", dpi=110)
        lines.append(f"  plot written to {OUT.relative_to(ROOT) / 'scaling.png'}")
    return rows, lines


# ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repetitions and smaller sizes (a smoke run of the harness)")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help="comma-separated sections: " + ",".join(SECTIONS))
    opts = ap.parse_args(argv)
    only = [s.strip() for s in opts.only.split(",") if s.strip()]
    for s in only:
        if s not in SECTIONS:
            ap.error(f"unknown section {s!r}")
    t_start = time.perf_counter()
    stack = Stack()
    ncores = cores()
    threads = ncores
    emu_threads = None
    if stack.acl is not None:
        try:
            emu_threads = stack.set_threads(threads)
        except Exception as e:
            log(f"cannot set the emulator's thread count: {_short_error(e)}")
    try:
        import torch
        torch_v = torch.__version__
    except ImportError:
        torch_v = "not installed"

    rows: list[Row] = []
    notes: list[str] = []
    for name in only:
        log(f"section {name}")
        try:
            if name == "overhead":
                rows += bench_overhead(stack, opts.quick)
            elif name == "kernel":
                r, n = bench_kernel(stack, opts.quick, threads)
                rows += r
                notes += n
            elif name == "transfer":
                r, n = bench_transfer(stack, opts.quick)
                rows += r
                notes += n
            elif name == "scaling":
                r, n = bench_scaling(stack, opts.quick)
                rows += r
                notes += n
            elif name == "forward":
                r, n = bench_forward(stack, opts.quick, threads)
                rows += r
                notes += n
        except Exception as e:
            log(traceback.format_exc())
            rows.append(_na(f"{SECTIONS.index(name) + 1} {name}", _short_error(e)))

    now = _dt.datetime.now().astimezone()
    backend = ("not loaded" if stack.backend is None
               else f"{stack.backend.name} ({_shown_path(stack.backend.root)})")
    print(f"acl-py benchmarks  {now:%Y-%m-%d %H:%M %Z}{'  (--quick)' if opts.quick else ''}")
    print(f"machine: {cpu_model()}, {ncores} cores ({os.cpu_count()} online), "
          f"{platform.system()} {platform.release()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}, torch {torch_v}; "
          f"backend {backend}; kernel threads: emulator {emu_threads}, torch {threads}")
    print("figures are medians over repeated runs; ratios are acl-py / peer unless the target "
          "says >=")
    print()
    print_table(rows)
    if notes:
        print()
        for line in notes:
            print(line)
    print()
    print(f"total bench time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
