"""Where the host time of one call goes: the evidence behind section 1 of run.py.

For the tiny problem of benchmarks/overhead.cpp (2 x 8 fp32, every output, synchronize each
call) it measures, interleaved, per call (median over rounds of per-call medians):

  raw-plan     lib.aclnnLayerNormBackward + lib.aclrtSynchronizeStream through cffi, on a
               repeatable executor (the Python floor: interpreter + cffi, no acl-py code)
  plan         acl_py.LayerNormBackward.run(stream) + stream.synchronize()
  raw-call     phase one + phase two + synchronize through cffi, handles made once
  call         acl_py.layer_norm_backward(..., out=, stream=) + stream.synchronize()
  call-new     acl_py.layer_norm_backward(..., stream=) + stream.synchronize(), the three
               outputs returned new and dropped

then the calling thread's CPU time per call (steadier than wall time on a loaded machine),
then profiles the three acl-py loops with cProfile on thread CPU time (top functions by own
time). For instruction
counts that do not depend on the machine's load, run the same loops under callgrind:

  valgrind --tool=callgrind --callgrind-out-file=benchmarks/out/cg.%p \\
      .venv/bin/python benchmarks/profile_overhead.py --loop plan --iters 2000
  callgrind_annotate benchmarks/out/cg.<pid> | head -40

``--api-mode`` adds two loops: the raw floors again, the three C functions called through
trampolines compiled with cffi's API mode (a CPython extension built into a temporary
directory; needs a C compiler and Python's headers) instead of ABI mode's libffi. It measures
what compiling the call layer alone would take off the floors (benchmarks/README.md, "Issue
13, sixth round"); acl-py does not ship such a module.

Usage: python benchmarks/profile_overhead.py [--iters N] [--rounds R] [--loop NAME] [--api-mode]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as _bench  # noqa: E402  (the same stack adapters as run.py)


_TRAMPOLINES = r"""
#include <stdint.h>
typedef void *P;
typedef int (*one_t)(P, P, P, P, P, P, P, P, P, P, P, uint64_t *, P *);
typedef int (*two_t)(P, uint64_t, P, P);
typedef int (*sync_t)(P);
static one_t one; static two_t two; static sync_t sync_;
void tr_init(P a, P b, P c) { one = (one_t)a; two = (two_t)b; sync_ = (sync_t)c; }
int tr_one(P a0, P a1, P a2, P a3, P a4, P a5, P a6, P a7, P a8, P a9, P a10, uint64_t *w,
           P *e) { return one(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, w, e); }
int tr_two(P w, uint64_t n, P e, P s) { return two(w, n, e, s); }
int tr_sync(P s) { return sync_(s); }
"""


def api_mode_floors(lib, ffi, cargs, ws_ptr, executor, stream_handle):
    """(raw_call, raw_plan) as cffi_floors makes them, through API-mode trampolines to the
    same C functions (their addresses taken from the ABI-mode binding)."""
    import tempfile
    import cffi
    api = cffi.FFI()
    api.cdef("void tr_init(void *, void *, void *);"
             "int tr_one(void *, void *, void *, void *, void *, void *, void *, void *, void *,"
             "           void *, void *, uint64_t *, void **);"
             "int tr_two(void *, uint64_t, void *, void *); int tr_sync(void *);")
    api.set_source("_acl_py_trampolines", _TRAMPOLINES)
    tmp = tempfile.mkdtemp(prefix="acl-py-api-mode-")
    sys.path.insert(0, tmp)
    api.compile(tmpdir=tmp)
    import _acl_py_trampolines as mod
    L, F = mod.lib, mod.ffi
    L.tr_init(ffi.cast("void *", lib.aclnnLayerNormBackwardGetWorkspaceSize),
              ffi.cast("void *", lib.aclnnLayerNormBackward),
              ffi.cast("void *", lib.aclrtSynchronizeStream))

    def ptr(c):
        return F.cast("void *", int(ffi.cast("uintptr_t", c)))
    return _bench.floor_loops((L.tr_one, L.tr_two, L.tr_sync), [ptr(c) for c in cargs],
                              (F.new("uint64_t *"), F.new("void **")), ptr(ws_ptr),
                              ptr(executor), ptr(stream_handle))


def setup(api_mode=False):
    stack = _bench.Stack()
    why = stack.missing("DeviceTensor", "Stream", "layer_norm_backward", "LayerNormBackward")
    if why:
        sys.exit(f"not available: {why}")
    acl = stack.acl
    m, n = 2, 8
    i = np.arange(m * n)
    host = [(((i * 7) % 11) / 11.0 - 0.5).astype(np.float32).reshape(m, n),
            (((i * 5) % 13) / 13.0 - 0.5).astype(np.float32).reshape(m, n),
            (0.01 * np.arange(m)).astype(np.float32).reshape(m, 1),
            (1.0 + 0.1 * np.arange(m)).astype(np.float32).reshape(m, 1),
            (1.0 + 0.05 * np.arange(n)).astype(np.float32), np.zeros(n, np.float32)]
    stream = acl.Stream()
    dev = [acl.DeviceTensor.from_numpy(a) for a in host]
    outs = (acl.DeviceTensor.empty((m, n), np.float32), acl.DeviceTensor.empty((n,), np.float32),
            acl.DeviceTensor.empty((n,), np.float32))
    dy, x, mean, rstd, w, b = dev
    ns, mask = (n,), (True, True, True)
    plan = acl.LayerNormBackward(dy, x, ns, mean, rstd, w, b, mask, out=outs)

    # The cffi floors, as section 1 of run.py measures them.
    raw_call, raw_plan, close_floors = _bench.cffi_floors(stack, dev, outs, stream)
    pc = time.perf_counter_ns

    run, sync = plan.run, stream.synchronize
    lnb = acl.layer_norm_backward

    def plan_loop(k):
        s = [0] * k
        for j in range(k):
            t0 = pc()
            run(stream)
            sync()
            s[j] = pc() - t0
        return statistics.median(s)

    def call_loop(k):
        s = [0] * k
        for j in range(k):
            t0 = pc()
            lnb(dy, x, ns, mean, rstd, w, b, mask, out=outs, stream=stream)
            sync()
            s[j] = pc() - t0
        return statistics.median(s)

    def call_new_loop(k):
        s = [0] * k
        for j in range(k):
            t0 = pc()
            r = lnb(dy, x, ns, mean, rstd, w, b, mask, stream=stream)
            sync()
            del r       # the outputs are released here, as the C loop frees its own
            s[j] = pc() - t0
        return statistics.median(s)

    def cleanup():
        close_floors()
        for o in (plan, *outs, *dev, stream):
            o.close()

    loops = {"raw-plan": raw_plan, "plan": plan_loop, "raw-call": raw_call,
             "call": call_loop, "call-new": call_new_loop}
    if api_mode:
        from acl_py.raw import ffi
        loops["api-call"], loops["api-plan"] = api_mode_floors(stack.lib, ffi, *raw_call.args)
    return loops, cleanup


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--loop", help="only run this loop (for callgrind)")
    ap.add_argument("--api-mode", action="store_true",
                    help="also the floors through API-mode trampolines (compiles them)")
    opts = ap.parse_args()
    loops, cleanup = setup(opts.api_mode)
    if opts.loop:
        loops[opts.loop](opts.iters)
        cleanup()
        return
    res = {k: [] for k in loops}
    for r in range(opts.rounds):
        for k, f in (loops.items() if r % 2 == 0 else reversed(list(loops.items()))):
            f(200)
            res[k].append(f(opts.iters))
    print("per call, median of round medians (us):")
    for k, v in res.items():
        print(f"  {k:9s} {statistics.median(v) / 1e3:7.2f}   rounds: "
              + " ".join(f"{t / 1e3:.2f}" for t in v))
    print(f"  wrapper cost: plan {(statistics.median(res['plan']) - statistics.median(res['raw-plan'])) / 1e3:.2f} us, "
          f"call {(statistics.median(res['call']) - statistics.median(res['raw-call'])) / 1e3:.2f} us")
    # CPU time of the calling thread per call: under load the wall-clock figures above swing
    # with the other processes, this one far less (it still counts the C calls made).
    cpu = {}
    for k, f in loops.items():
        best = None
        for _ in range(opts.rounds):
            t0 = time.thread_time_ns()
            f(opts.iters // 4)
            t = (time.thread_time_ns() - t0) / (opts.iters // 4)
            best = t if best is None else min(best, t)
        cpu[k] = best
    print("CPU time of the calling thread per call, best round (us):")
    for k, v in cpu.items():
        print(f"  {k:9s} {v / 1e3:7.2f}")
    for k in ("plan", "call", "call-new"):
        pr = cProfile.Profile(time.thread_time_ns, 1e-9)
        pr.enable()
        loops[k](opts.iters)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(14)
        print(f"\ncProfile of the {k} loop ({opts.iters} calls), by own time:")
        print("\n".join(line for line in buf.getvalue().splitlines()[4:] if line.strip()))
    cleanup()


if __name__ == "__main__":
    main()
