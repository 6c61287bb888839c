"""Concurrency: 8 threads, each with its own stream, 200 calls each mixing the NumPy-level
call, the DeviceTensor call and reusable plans: every result right, no deadlock (joins have
timeouts), no leak.

One stream shared by threads is SAFE by design, and tested here: the emulator's stream queue
is locked (docs/emulator.md: tasks queued from several threads run in the order the calls
returned), acl-py's per-stream bookkeeping (submission counter, deferred frees) is under a
lock (acl_py/stream.py), and every launch keeps its own buffers alive until the stream has
synchronized past it. A thread synchronizing the shared stream may run frees deferred by
another thread's launches; that is correct because they are complete by then.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import acl_py

from _reliability import (_drop_cached_arrays, DTYPES, MASKS, call_args, check,  # noqa: F401
                          close_case, live, lnb, make_case, plan_cls, to_device)

pytestmark = pytest.mark.usefixtures("emulator")

THREADS = 8
CALLS = 200
JOIN_TIMEOUT = 150.0


def _run_threads(target, n):
    errors, done = [], []

    def wrap(i):
        try:
            target(i)
            done.append(i)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            import traceback
            errors.append((i, "".join(traceback.format_exception(e))))

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True, name=f"lnb-{i}")
               for i in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    deadline = t0 + JOIN_TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.perf_counter()))
    elapsed = time.perf_counter() - t0
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"deadlock or livelock: {hung} still running after {JOIN_TIMEOUT} s"
    assert not errors, errors[0][1]
    assert sorted(done) == list(range(n))
    return elapsed


def test_threads_each_with_own_stream():
    base = live()
    counts = [0] * THREADS

    def worker(i):
        rng = np.random.default_rng(100 + i)
        s = acl_py.Stream()
        try:
            # one plan per thread, rerun on fresh inputs written into the same tensors
            pcase = make_case(rng, (6, 40), 1, DTYPES[i % len(DTYPES)])
            pdev = to_device(pcase)
            plan = plan_cls()(pdev["grad_out"], pdev["input"], pdev["normalized_shape"],
                              pdev["mean"], pdev["rstd"], pdev["weight"])
            for k in range(CALLS):
                kind = k % 3
                if kind == 0:        # NumPy in/out on this thread's stream
                    mask = MASKS[k % 8]
                    case = make_case(rng, (int(rng.integers(1, 9)), int(rng.integers(1, 65))),
                                     1, DTYPES[(i + k) % len(DTYPES)], weight=bool(k % 2))
                    outs = lnb()(*call_args(case), output_mask=mask, stream=s)
                    check(outs, case, mask, what=f"thread {i} call {k}")
                elif kind == 1:      # DeviceTensors, asynchronous
                    case = make_case(rng, (3, 4, 16), 2, DTYPES[k % len(DTYPES)])
                    dev = to_device(case)
                    outs = lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"],
                                 dev["mean"], dev["rstd"], dev["weight"], stream=s)
                    close_case(dev)        # stream-ordered: freed after the kernel
                    s.synchronize()
                    check(outs, case, what=f"thread {i} device call {k}")
                    for t in outs:
                        t.close()
                else:                # the plan, with new contents in its input tensors
                    new = make_case(rng, (6, 40), 1, DTYPES[i % len(DTYPES)])
                    pdev["grad_out"].copy_from_numpy(new["grad_out"])
                    plan.run(s)
                    s.synchronize()
                    check(plan.outputs, dict(pcase, grad_out=new["grad_out"]),
                          what=f"thread {i} plan run {k}")
                counts[i] += 1
            plan.close()
            for t in plan.outputs:
                t.close()
            close_case(pdev)
        finally:
            s.close()

    elapsed = _run_threads(worker, THREADS)
    assert counts == [CALLS] * THREADS
    print(f"\n{THREADS} threads x {CALLS} calls, own streams: {elapsed:.2f} s")
    assert live() == base


def test_threads_sharing_one_stream():
    base = live()
    shared = acl_py.Stream()
    n_calls = 60

    def worker(i):
        rng = np.random.default_rng(200 + i)
        for k in range(n_calls):
            case = make_case(rng, (4, 8 * (1 + (i + k) % 4)), 1, DTYPES[(i + k) % len(DTYPES)])
            if k % 2:
                outs = lnb()(*call_args(case), stream=shared)
                check(outs, case, what=f"shared stream, thread {i} numpy call {k}")
            else:
                dev = to_device(case)
                outs = lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"],
                             dev["mean"], dev["rstd"], dev["weight"], stream=shared)
                close_case(dev)
                shared.synchronize()
                check(outs, case, what=f"shared stream, thread {i} device call {k}")
                for t in outs:
                    t.close()

    elapsed = _run_threads(worker, THREADS)
    print(f"\n{THREADS} threads x {n_calls} calls on one shared stream: {elapsed:.2f} s")
    shared.close()
    assert live() == base


def test_one_plan_run_from_many_threads_on_one_stream():
    """A repeatable executor launched concurrently from several threads on one stream: every
    run is queued (the emulator counts running launches under a lock) and the result is the
    same as one run's."""
    case = make_case(np.random.default_rng(7), (16, 128), 1, DTYPES[0])
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    plan = plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                      dev["rstd"], dev["weight"])

    def worker(i):
        for _ in range(50):
            plan.run(s)

    _run_threads(worker, THREADS)
    s.synchronize()
    check(plan.outputs, case, what="plan run 400 times from 8 threads")
    plan.close()
    for t in plan.outputs:
        t.close()
    close_case(dev)
    s.close()
    assert live() == base


def test_argument_array_cache_evicts_under_threads():
    """More distinct normalized shapes than the argument-array cache keeps (64), from several
    threads at once: an array evicted by one thread may be the one another thread is passing
    to phase one at that moment, so eviction must drop it, not destroy it (the first version
    closed it: "normalizedShape is not a live aclIntArray", seen once in a CI-like run)."""
    from acl_py import arguments
    base = live()
    widths = list(range(1, 3 * arguments.SHARED_MAX))

    def worker(i):
        s = acl_py.Stream()
        try:
            rng = np.random.default_rng(300 + i)
            for k, n in enumerate(widths[i::2] + widths[::-1]):
                case = make_case(rng, (2, n), 1, DTYPES[(i + k) % len(DTYPES)])
                outs = lnb()(*call_args(case), stream=s)
                check(outs, case, what=f"thread {i} width {n}")
        finally:
            s.close()

    _run_threads(worker, THREADS)
    assert len(arguments._shared) <= arguments.SHARED_MAX
    assert live() == base
