"""Lifetime abuse: use after close, double close, closing a stream or freeing inputs while a
kernel is pending, dropping every reference mid-stream, calls after ``finalize()``, and
interpreter exit with live objects and pending work. Each gives a typed error or a safe
deferral; never a crash, never a leak (the emulator's live objects back to the baseline)."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import acl_py
from acl_py import errors
from acl_py.raw import ffi, lib

from _reliability import (_drop_cached_arrays, F32, F16, check, close_case,  # noqa: F401
                          live, lnb, make_case, plan_cls, to_device)

pytestmark = pytest.mark.usefixtures("emulator")

# Large enough that the kernel is still queued or running when the next Python line runs.
BIG = (256, 4096)


def _launch(dev, stream, **kw):
    return lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                 dev["rstd"], dev["weight"], stream=stream, **kw)


def test_use_after_close_is_closed_error():
    case = make_case(np.random.default_rng(0), (4, 16), 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    dev["input"].close()
    with pytest.raises(errors.ClosedError):
        dev["input"].to_numpy()
    with pytest.raises(errors.ClosedError):
        _launch(dev, s)
    dev["input"] = acl_py.DeviceTensor.from_numpy(case["input"])
    plan = plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                      dev["rstd"], dev["weight"])
    outs = plan.outputs
    plan.close()
    with pytest.raises(errors.ClosedError):
        plan.run(s)
    s.close()
    with pytest.raises(errors.ClosedError):
        _launch(dev, s)
    with pytest.raises(errors.ClosedError):
        s.synchronize()
    arr = acl_py.IntArray([1, 2])
    arr.close()
    with pytest.raises(errors.ClosedError):
        arr.handle
    buf = acl_py.DeviceBuffer(64)
    buf.close()
    with pytest.raises(errors.ClosedError):
        buf.copy_from_host(b"x" * 8)
    ev = acl_py.Event()
    ev.close()
    with pytest.raises(errors.ClosedError):
        ev.record()
    for t in outs:
        t.close()
    close_case(dev)
    assert live() == base


def test_double_close_everything():
    case = make_case(np.random.default_rng(1), (4, 16), 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    plan = plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                      dev["rstd"], dev["weight"])
    plan.run(s)
    objs = [plan, s, acl_py.Event(), acl_py.DeviceBuffer(128), acl_py.HostBuffer(128),
            acl_py.IntArray([3]), acl_py.BoolArray([True]), *plan.outputs,
            dev["input"].T, *dev.values()]
    for o in objs:
        if hasattr(o, "close"):
            o.close()
            o.close()
    assert live() == base


def test_close_stream_with_work_in_flight():
    """Stream.close drains the stream first: the results are complete and right."""
    case = make_case(np.random.default_rng(2), BIG, 1, F16, weight_f32=True)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    outs = _launch(dev, s)
    s.close()          # must wait for the kernel, then destroy the stream
    assert s.closed
    check(outs, case, what="after closing the stream")
    for t in outs:
        t.close()
    close_case(dev)
    assert live() == base


def test_close_inputs_while_kernel_pending():
    """Closing the tensors a queued kernel reads defers their free until the stream has
    passed the kernel; the result is still right."""
    case = make_case(np.random.default_rng(3), BIG, 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    outs = _launch(dev, s)
    close_case(dev)               # user closes every input right after the launch
    for k in ("grad_out", "input", "mean", "rstd"):
        assert dev[k].closed
    s.synchronize()
    check(outs, case, what="inputs closed while pending")
    for t in outs:
        t.close()
    s.close()
    assert live() == base


def test_raw_free_of_memory_a_pending_kernel_reads_is_refused():
    """At the C level the emulator refuses (107000) to free memory a queued kernel uses,
    where a device would corrupt silently; after synchronizing the free works. A host
    function holds the stream until the free has been tried, so the kernel is still queued
    then on any machine (a fast one used to finish it first, and the test skipped)."""
    case = make_case(np.random.default_rng(4), BIG, 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    release = threading.Event()
    s.launch_host_func(lambda: release.wait(60))
    # A raw buffer (not acl-py owned) holding a copy of input, viewed as a tensor.
    p = ffi.new("void **")
    nbytes = case["input"].nbytes
    assert lib.aclrtMalloc(p, nbytes, 0) == 0
    raw_buf = p[0]
    assert lib.aclrtMemcpy(raw_buf, nbytes, ffi.from_buffer(case["input"]), nbytes, 1) == 0
    dims = ffi.new("int64_t[]", list(BIG))
    t = lib.aclCreateTensor(dims, 2, lib.ACL_FLOAT, ffi.new("int64_t[]", [BIG[1], 1]), 0,
                            lib.ACL_FORMAT_ND, ffi.new("int64_t[]", [BIG[0] * BIG[1]]), 1,
                            raw_buf)
    assert t != ffi.NULL
    # layer_norm_backward takes DeviceTensors; the raw tensor goes through the two-phase
    # wrapper, which accepts raw pointers.
    from acl_py.ops import LAYER_NORM_BACKWARD
    gi = acl_py.DeviceTensor.empty(BIG, np.float32)
    LAYER_NORM_BACKWARD.launch((dev["grad_out"].handle, t, acl_py.IntArray([BIG[1]]),
                                dev["mean"], dev["rstd"], None, None,
                                acl_py.BoolArray([True, False, False]), gi, None, None),
                               device=0, stream=s)
    try:
        rc = lib.aclrtFree(raw_buf)
        msg = ffi.string(lib.aclGetRecentErrMsg()).decode()
    finally:
        release.set()
    assert rc == 107000
    assert "pending" in msg, msg
    s.synchronize()
    assert lib.aclrtFree(raw_buf) == 0
    assert lib.aclDestroyTensor(t) == 0
    c2 = dict(case, weight=None)
    check((gi, None, None), c2, mask=(True, False, False))
    gi.close()
    close_case(dev)
    s.close()
    assert live() == base




@pytest.mark.parametrize("pooled", [True, False], ids=["pooled", "unpooled"])
@pytest.mark.parametrize("plans", [1, 2])
def test_input_closed_while_a_plans_run_is_queued_waits_for_it(plans, pooled):
    """A plan's input closed right after a run of the plan is queued is freed once the
    stream is past that run (a plan records its runs once, on itself; its inputs count
    that record as theirs), also when a second plan prepared later shares the input (the
    first one was idle then, but runs again). Before, it was freed at once, under the queued
    kernel: its block handed to the next allocation, or aclrtFree refused (107000)."""
    case = make_case(np.random.default_rng(7), (8, 64), 1, F32)
    base = live()
    dev = dict(case)
    for k in ("grad_out", "input", "mean", "rstd", "weight"):
        dev[k] = acl_py.DeviceTensor.from_numpy(case[k], pool=None if not pooled else True)
    args = (dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"], dev["rstd"],
            dev["weight"])
    s = acl_py.Stream()
    made = [plan_cls()(*args) for _ in range(plans)]
    made[0].run(s)
    address = dev["input"].data_ptr
    n = acl_py.emulator.live_objects()["device_allocations"]
    dev["input"].close()
    assert acl_py.emulator.live_objects()["device_allocations"] == n, \
        "freed while the run may still read it"
    other = acl_py.DeviceTensor.empty(case["input"].shape, F32)
    assert other.data_ptr != address, "the input's memory reused under the queued run"
    s.synchronize()
    check(made[0].outputs, case)
    other.close()
    dev["input"] = None
    for plan in made:
        for t in plan.outputs:
            t.close()
        plan.close()
    close_case(dev)
    s.close()
    assert live() == base

def test_drop_every_reference_mid_stream():
    """Inputs, plan and stream wrappers dropped (del + gc) while the kernel is queued: nothing
    is freed under it, the outputs kept are right, and nothing leaks."""
    case = make_case(np.random.default_rng(5), BIG, 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    outs = _launch(dev, s)
    plan = plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                      dev["rstd"], dev["weight"])
    plan.run(s)
    pouts = plan.outputs
    del dev, plan
    gc.collect()
    s.synchronize()
    check(outs, case, what="one-shot, references dropped")
    check(pouts, case, what="plan, references dropped")
    # now drop everything, outputs and stream included, with work queued
    outs2 = _launch(to_device(case), s)
    del outs, pouts, outs2, s
    gc.collect()
    assert live() == base


def test_calls_after_finalize_in_subprocess(run_python):
    proc = run_python("""
        import numpy as np, acl_py
        from acl_py import errors
        f = getattr(acl_py, "layer_norm_backward", None)
        if f is None:
            from acl_py.ops import layer_norm_backward as f
        acl_py.init()
        x = np.ones((2, 4), np.float32); m = np.zeros((2, 1), np.float32)
        t = acl_py.DeviceTensor.from_numpy(x)
        mt = acl_py.DeviceTensor.from_numpy(m)
        s = acl_py.Stream()
        outs = f(t, t, (4,), mt, mt, stream=s)   # queued, not synchronized
        acl_py.finalize()
        for what, call in [("to_numpy", lambda: t.to_numpy()),
                           ("sync", lambda: s.synchronize()),
                           ("out", lambda: outs[0].to_numpy()),
                           ("call", lambda: f(t, t, (4,), mt, mt)),
                           ("numpy", lambda: f(x, x, (4,), m, m + 1)),
                           ("new", lambda: acl_py.DeviceTensor.from_numpy(x))]:
            try:
                call()
            except errors.NotInitializedError as e:
                print("OK", what, type(e).__name__)
            else:
                print("NO ERROR", what)
        t.close(); s.close(); outs[0].close()          # closing after finalize: harmless
        acl_py.finalize()                               # again: a no-op
        acl_py.init()                                   # a new session works
        gi, gw, gb = f(x, x, (4,), m, m + 1)
        print("NEW SESSION", float(gb.sum()))
        from acl_py import emulator
        acl_py.release_unused()
        print("LIVE", emulator.live_objects())
    """, env={"ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.strip() == "", proc.stderr[-3000:]
    for what in ("to_numpy", "sync", "out", "call", "numpy", "new"):
        assert f"OK {what} " in proc.stdout, proc.stdout
    assert "NO ERROR" not in proc.stdout
    assert "NEW SESSION 8.0" in proc.stdout


@pytest.mark.parametrize("ending", ["normal", "exception", "sys_exit", "thread"])
def test_interpreter_exit_with_live_objects_and_pending_work(run_python, ending):
    """Work queued, every kind of object alive, then the interpreter exits (normally, by an
    uncaught exception, by sys.exit, or with a non-daemon thread still launching): exit
    status as Python sets it, no crash, nothing but the expected traceback on stderr."""
    proc = run_python(f"""
        import sys, threading, numpy as np, acl_py
        f = getattr(acl_py, "layer_norm_backward", None)
        if f is None:
            from acl_py.ops import layer_norm_backward as f
        P = getattr(acl_py, "LayerNormBackward", None)
        if P is None:
            from acl_py.ops import LayerNormBackward as P
        x = np.random.default_rng(0).standard_normal({BIG}).astype(np.float32)
        m = np.zeros(({BIG[0]}, 1), np.float32)
        s = acl_py.Stream()
        t = acl_py.DeviceTensor.from_numpy(x); mt = acl_py.DeviceTensor.from_numpy(m)
        plan = P(t, t, ({BIG[1]},), mt, mt)
        for _ in range(3):
            plan.run(s)
            outs = f(t, t, ({BIG[1]},), mt, mt, stream=s)
        ev = acl_py.Event(); ev.record(s)
        hb = acl_py.HostBuffer(1024); view = hb.numpy("float32")
        cycle = [t, plan]; cycle.append(cycle)   # reachable only through a cycle
        ending = {ending!r}
        if ending == "thread":
            def work():
                s2 = acl_py.Stream()
                for _ in range(5):
                    f(t, t, ({BIG[1]},), mt, mt, stream=s2)
            threading.Thread(target=work).start()
        print("QUEUED", flush=True)
        if ending == "exception":
            raise RuntimeError("boom")
        if ending == "sys_exit":
            sys.exit(3)
    """, env={"ACL_PY_BACKEND": "emulator"}, timeout=120)
    expected_rc = {"normal": 0, "thread": 0, "exception": 1, "sys_exit": 3}[ending]
    assert proc.returncode == expected_rc, (proc.returncode, proc.stderr[-3000:])
    assert "QUEUED" in proc.stdout
    err = proc.stderr.strip()
    if ending == "exception":
        assert err.endswith("RuntimeError: boom"), err[-3000:]
        assert err.count("Traceback") == 1, err
    else:
        assert err == "", err[-3000:]
