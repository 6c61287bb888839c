"""Fault-injection sweep over every C call one ``layer_norm_backward`` makes.

For each scenario (NumPy in/out; DeviceTensors on a stream; a reusable plan) the emulator's
call counts of one clean run are the trace. Then, for every (function, k) in it, the k-th
call of that function is made to fail (docs/emulator.md, "Fault injection") and:

* the outcome is the function's documented failure as acl-py's typed exception (class and
  code, with the emulator's message), or a documented safe outcome: success with the right
  result where acl-py recovers by design (a pool allocation that fails is retried once after
  emptying the cache; a release that fails during garbage collection or a deferred free is
  retried by ``release_unused``);
* after settling (``_reliability.settle``: synchronize, retry failed releases, empty pools,
  drop cached argument arrays) the emulator's live objects are exactly the baseline;
* the next, unfaulted, run gives the right result against ``acl_py.reference``.
"""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py import errors

from _reliability import (_drop_cached_arrays, F16, F32, call_args, check, close_case, live,  # noqa: F401
                          lnb, make_case,
                          plan_cls, settle, to_device)

pytestmark = pytest.mark.usefixtures("emulator")

# docs/emulator.md, "Fault injection": function -> (exception class, code); code None = the
# create function returned NULL. An injected phase-two failure is a failed run: it releases a
# single-use executor, as CANN does, and keeps a repeatable one.
_RT_ALLOC = (errors.DeviceMemoryError, 207001)
_RT_INTERNAL = (errors.InternalError, 507000)
_NN_INNER = (errors.InternalError, 561000)
DOCUMENTED = {
    "aclrtMalloc": _RT_ALLOC, "aclrtMallocHost": _RT_ALLOC, "aclrtCreateStream": _RT_ALLOC,
    "aclrtCreateEvent": _RT_ALLOC,
    "aclrtMemcpy": _RT_INTERNAL, "aclrtMemcpyAsync": _RT_INTERNAL, "aclrtMemset": _RT_INTERNAL,
    "aclrtMemsetAsync": _RT_INTERNAL, "aclrtRecordEvent": _RT_INTERNAL,
    "aclrtSetDevice": _RT_INTERNAL, "aclrtGetDeviceCount": _RT_INTERNAL, "aclrtSynchronizeStream": _RT_INTERNAL,
    "aclrtSynchronizeDevice": _RT_INTERNAL, "aclrtSynchronizeEvent": _RT_INTERNAL,
    "aclrtFree": _RT_INTERNAL, "aclrtFreeHost": _RT_INTERNAL, "aclrtDestroyStream": _RT_INTERNAL,
    "aclrtDestroyEvent": _RT_INTERNAL,
    "aclDestroyTensor": _NN_INNER, "aclDestroyIntArray": _NN_INNER,
    "aclDestroyBoolArray": _NN_INNER, "aclDestroyAclOpExecutor": _NN_INNER,
    "aclCreateTensor": (errors.CreateFailedError, None),
    "aclCreateIntArray": (errors.CreateFailedError, None),
    "aclCreateBoolArray": (errors.CreateFailedError, None),
    "aclSetAclOpExecutorRepeatable": _NN_INNER,
    "aclnnLayerNormBackwardGetWorkspaceSize": _NN_INNER,
    "aclnnLayerNormBackward": (errors.RuntimeFailure, 361001),
}
# Where acl-py documents recovery (see the module doc), success is also a correct outcome.
# aclSetAclOpExecutorRepeatable's 561000 makes a plan fall back to a launch per run.
RECOVERED = {"aclrtMalloc", "aclrtFree", "aclrtFreeHost", "aclDestroyTensor",
             "aclDestroyIntArray", "aclDestroyBoolArray", "aclDestroyAclOpExecutor",
             "aclrtDestroyStream", "aclrtDestroyEvent", "aclSetAclOpExecutorRepeatable"}


# ---- scenarios: each takes the NumPy case (and device copies) and returns host results ------

def run_numpy(case, dev, stream):
    return lnb()(*call_args(case), output_mask=(True, True, True))


def run_device(case, dev, stream):
    outs = lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                 dev["rstd"], dev["weight"], stream=stream)
    try:
        stream.synchronize()
        return tuple(t.to_numpy() for t in outs)
    finally:
        for t in outs:
            t.close()


def run_plan(case, dev, stream):
    with plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                    dev["rstd"], dev["weight"]) as plan:
        outs = plan.run(stream)
        try:
            stream.synchronize()
            # a second run of the same executor: repeatable, same result
            plan.run(stream)
            stream.synchronize()
            return tuple(t.to_numpy() for t in outs)
        finally:
            for t in outs:
                t.close()


SCENARIOS = {"numpy": run_numpy, "device": run_device, "plan": run_plan}


def _attempt(scenario, case, stream, spec):
    """Runs the scenario from a fixed state (fresh device inputs, empty pools, no cached
    arrays) with ``spec`` armed; returns (results or None, (exc type, code, message) or None,
    call counts)."""
    from acl_py import emulator
    settle()    # the pool empty before the inputs take their blocks, too
    dev = to_device(case) if scenario != "numpy" else None
    settle()
    emulator.set_faults(spec)
    res = err = None
    try:
        res = SCENARIOS[scenario](case, dev, stream)
    except Exception as e:  # noqa: BLE001 - classified by the caller
        # Keep no reference to the exception: its traceback holds frames holding objects,
        # which would look like a leak.
        err = (type(e), getattr(e, "code", "n/a"), getattr(e, "message", str(e)))
        del e
    counts = emulator.call_counts()
    emulator.set_faults(None)
    if dev is not None:
        close_case(dev)
    return res, err, counts


@pytest.fixture(scope="module")
def case():
    return make_case(np.random.default_rng(6), (3, 5, 16), 1, F16, weight_f32=True)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_fault_sweep(scenario, case):
    stream = acl_py.Stream()
    try:
        # Warm-up: one-time work (the device count acl-py caches, lazy bindings) stays out
        # of the trace, so every attempt below starts from the same state.
        _attempt(scenario, case, stream, None)
        res, err, trace = _attempt(scenario, case, stream, None)
        assert err is None, err
        check(res, case, what=f"{scenario} clean run")
        assert "aclnnLayerNormBackwardGetWorkspaceSize" in trace and \
            "aclnnLayerNormBackward" in trace and "aclrtSynchronizeStream" in trace, trace
        undocumented = set(trace) - set(DOCUMENTED)
        assert not undocumented, f"calls without a documented injected failure: {undocumented}"
        base = live()
        outcomes = {}
        for fn, n in trace.items():
            for k in range(1, n + 1):
                spec = f"{fn}:{k}"
                res, err, counts = _attempt(scenario, case, stream, spec)
                assert counts.get(fn, 0) >= k, f"{spec}: the faulted call was never reached"
                if err is None:
                    assert fn in RECOVERED, f"{spec}: injected failure silently ignored"
                    check(res, case, what=f"{scenario} {spec} (recovered)")
                    outcomes[spec] = "recovered"
                else:
                    cls, code = DOCUMENTED[fn]
                    etype, ecode, emsg = err
                    assert issubclass(etype, cls) and ecode == code, \
                        f"{spec}: got {etype.__name__} {ecode} ({emsg}), expected " \
                        f"{cls.__name__} {code}"
                    assert "injected" in emsg, f"{spec}: message lost: {emsg!r}"
                    if cls is errors.DeviceMemoryError:
                        assert issubclass(etype, MemoryError)
                    outcomes[spec] = etype.__name__
                if fn == "aclnnLayerNormBackward" and scenario != "plan":
                    # A failed phase two released the single-use executor (CANN's
                    # CommonOpExecutorRun): destroying it would be a double free on a device.
                    assert "aclDestroyAclOpExecutor" not in counts, \
                        f"{spec}: acl-py destroyed an executor the library had released"
                after = live()
                assert after == base, f"{spec}: live objects {after} != baseline {base}"
                # the next call works, with the right result
                res, err, _ = _attempt(scenario, case, stream, None)
                assert err is None, (spec, err)
                check(res, case, what=f"{scenario} after {spec}")
        assert len(outcomes) == sum(trace.values())
        # Most sites must surface as errors: recovery is the exception, not the rule.
        raised = [s for s, o in outcomes.items() if o != "recovered"]
        assert len(raised) >= len(outcomes) // 2, outcomes
        print(f"\n{scenario}: {len(outcomes)} fault sites, {len(raised)} raised, "
              f"{len(outcomes) - len(raised)} recovered")
    finally:
        stream.close()


def test_fault_in_sync_leaves_nothing_in_flight(emulator):
    """aclrtSynchronizeStream fails after the wait: the results are complete anyway, the
    buffers the launch used are freed once a later synchronize succeeds."""
    case = make_case(np.random.default_rng(1), (8, 32), 1, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    outs = lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                 dev["rstd"], dev["weight"], stream=s)
    with emulator.inject_faults("aclrtSynchronizeStream:1"):
        with pytest.raises(errors.InternalError) as ei:
            s.synchronize()
    assert ei.value.code == 507000 and ei.value.call == "aclrtSynchronizeStream"
    del ei
    s.synchronize()
    check(outs, case)
    for t in outs:
        t.close()
    close_case(dev)
    s.close()
    assert live() == base


def test_fault_in_plan_run_keeps_plan_usable(emulator):
    """Phase two of a repeatable executor fails (361001): the executor stays alive and the
    next run works."""
    case = make_case(np.random.default_rng(2), (4, 2, 24), 2, F32)
    base = live()
    dev = to_device(case)
    s = acl_py.Stream()
    with plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"],
                    dev["rstd"], dev["weight"]) as plan:
        with emulator.inject_faults("aclnnLayerNormBackward:1"):
            with pytest.raises(errors.RuntimeFailure) as ei:
                plan.run(s)
        assert ei.value.code == 361001
        del ei
        assert not plan.closed
        plan.run(s)
        s.synchronize()
        check(plan.outputs, case)
        for t in plan.outputs:
            t.close()
    close_case(dev)
    s.close()
    assert live() == base


def test_env_var_fault_spec_in_subprocess(run_python):
    """ACL_EMU_FAIL, read when the library loads, arms the same faults as set_faults."""
    proc = run_python("""
        import numpy as np, acl_py
        from acl_py import errors
        f = getattr(acl_py, "layer_norm_backward", None)
        if f is None:
            from acl_py.ops import layer_norm_backward as f
        x = np.ones((2, 4), np.float32)
        m = np.zeros((2, 1), np.float32)
        try:
            f(x, x, (4,), m, m + 1)
        except errors.OperatorParameterError as e:
            raise
        except errors.InternalError as e:
            print("RAISED", type(e).__name__, e.code, e.call)
        gi, gw, gb = f(x, x, (4,), m, m + 1)   # the fault was one-shot
        print("OK", float(gb.sum()))
    """, env={"ACL_EMU_FAIL": "aclnnLayerNormBackwardGetWorkspaceSize:1",
              "ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "RAISED InternalError 561000 aclnnLayerNormBackwardGetWorkspaceSize" in proc.stdout
    assert "OK 8.0" in proc.stdout, proc.stdout
