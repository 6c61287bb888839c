"""acl_py.LayerNormBackward (the reusable plan) and the two-phase wrapper's lifetimes:
repeatable executor reuse, per-run work (one phase-two call, nothing allocated), close and
double close, stream-ordered release, and the error paths of phase one/two (executors never
leak; the autouse leak check verifies live objects after each test)."""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import (AclArgumentError, AclTypeError, ClosedError, InternalError,
                           OperatorInvalidParameterError, RuntimeFailure)
from acl_py.ops import LAYER_NORM_BACKWARD
from acl_py.soc import supports_bfloat16

from test_layer_norm_backward import BF16, F16, F32, check, make_case, to_device

PHASE_ONE = "aclnnLayerNormBackwardGetWorkspaceSize"
PHASE_TWO = "aclnnLayerNormBackward"


def test_plan_matches_reference_and_reuses_everything(emulator):
    # a half dtype the part computes (no BF16 on the Atlas training and inference series)
    case = make_case((16, 3, 8), 2, BF16 if supports_bfloat16() else F16, F32, F32, seed=1)
    d = to_device(case)
    s = acl_py.Stream()
    with acl_py.LayerNormBackward(**d) as plan:
        assert plan.workspace_size > 0
        assert emulator.live_objects()["executors"] >= 1
        emulator.reset_call_counts()
        for _ in range(25):
            res = plan.run(s)
        s.synchronize()
        counts = emulator.call_counts()
        # The per-run path is one phase-two call: no phase one, no allocation, no handles.
        assert counts[PHASE_TWO] == 25
        for name in (PHASE_ONE, "aclrtMalloc", "aclCreateTensor", "aclCreateIntArray",
                     "aclCreateBoolArray", "aclrtFree"):
            assert name not in counts, (name, counts)
        assert res == (plan.grad_input, plan.grad_weight, plan.grad_bias) == plan.outputs
        check(res, case)
    s.close()


def test_plan_sees_new_input_contents_between_runs():
    case = make_case((6, 10), 1, F32, seed=2)
    d = to_device(case)
    plan = acl_py.LayerNormBackward(**d)
    for i in range(5):
        new = make_case((6, 10), 1, F32, seed=100 + i)
        for k in ("grad_out", "input", "mean", "rstd", "weight"):
            d[k].copy_from_numpy(new[k])
        plan()
        acl_py.default_stream().synchronize()
        check(plan.outputs, dict(new, bias=case["bias"]))
    plan.close()


def test_plan_masks_out_and_noncontiguous():
    case = make_case((5, 4), 1, F32, seed=3)
    d = to_device(case)
    store = acl_py.DeviceTensor.zeros(8)
    gb = store[1::2]
    plan = acl_py.LayerNormBackward(**d, output_mask=(False, False, True), out=(None, None, gb))
    assert plan.grad_input is None and plan.grad_weight is None and plan.grad_bias is gb
    plan.run()
    acl_py.default_stream().synchronize()
    check(plan.outputs, case, (False, False, True))
    assert store.to_numpy()[::2].tolist() == [0.0] * 4
    plan.close()


def test_close_is_stream_ordered_and_idempotent(emulator):
    case = make_case((256, 64), 1, F32, seed=4)
    d = to_device(case)
    base = emulator.live_objects()["executors"]
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    assert emulator.live_objects()["executors"] == base + 1
    out = plan.run(s)
    plan.close()             # before the stream ran: the executor waits for it
    plan.close()             # safe to repeat
    assert plan.closed
    with pytest.raises(ClosedError):
        plan.run(s)
    with pytest.raises(ClosedError):
        with plan:
            pass
    s.synchronize()
    assert emulator.live_objects()["executors"] == base
    check(out, case)         # outputs outlive the plan
    s.close()


def test_plan_released_by_garbage_collection(emulator):
    import gc
    d = to_device(make_case((3, 4), 1, F32))
    base = emulator.live_objects()["executors"]
    plan = acl_py.LayerNormBackward(**d)
    plan.run()
    del plan
    gc.collect()
    acl_py.default_stream().synchronize()
    assert emulator.live_objects()["executors"] == base


def test_plan_needs_device_tensors():
    case = make_case((3, 4), 1, F32)
    with pytest.raises(AclTypeError) as ei:
        acl_py.LayerNormBackward(**case)
    assert ei.value.argument == "input"


def test_plan_phase_one_error_is_typed_and_leaks_nothing():
    d = to_device(make_case((1,) * 9 + (2,), 1, F32))
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.LayerNormBackward(**d)
    assert ei.value.code == 161002 and "rank" in ei.value.message


# ---- the wrapper's error paths (emulator fault injection) --------------------------------------

@pytest.mark.parametrize("fault,cls,code", [
    (PHASE_ONE, InternalError, 561000),
    (PHASE_TWO, RuntimeFailure, 361001),
])
def test_one_shot_faults_release_the_executor(emulator, fault, cls, code):
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    base = emulator.live_objects()["executors"]
    with emulator.inject_faults(f"{fault}:1"):
        with pytest.raises(cls) as ei:
            acl_py.layer_norm_backward(**d)
        calls = emulator.call_counts()
    assert ei.value.code == code and "injected" in ei.value.message
    # Either way no executor is left: phase one's fault created none, and a failed phase two
    # released it in the library (CANN's CommonOpExecutorRun), which acl-py then left alone.
    assert emulator.live_objects()["executors"] == base
    assert fault in calls and "aclDestroyAclOpExecutor" not in calls
    res = acl_py.layer_norm_backward(**d)     # and the next call works
    acl_py.default_stream().synchronize()
    check(res, case)


def test_plan_construction_fault_leaks_nothing(emulator):
    d = to_device(make_case((4, 8), 1, F32))
    base = emulator.live_objects()["executors"]
    with emulator.inject_faults(f"{PHASE_ONE}:1"):
        with pytest.raises(InternalError):
            acl_py.LayerNormBackward(**d)
    assert emulator.live_objects()["executors"] == base


# ---- the plan when the library refuses a repeatable executor (issue 11 item 5) ----------------
#
# The vendor's aclSetAclOpExecutorRepeatable returns ACLNN_ERR_INNER (561000) for executors
# it cannot repeat (hicann/opbase src/nnopbase/composite_op/aclnn_engine/op_executor.cpp,
# OpExecutorImpl::SetRepeatable), leaving the executor single-use. The plan then launches
# phase one and two at every run, and says so in `mode`.

def test_plan_mode_is_repeatable_normally():
    d = to_device(make_case((4, 8), 1, F32))
    with acl_py.LayerNormBackward(**d) as plan:
        assert plan.mode == "repeatable" and plan.executor.mode == "repeatable"


def test_plan_falls_back_to_per_run_launches(emulator):
    case = make_case((4, 8), 1, F32, seed=3)
    d = to_device(case)
    s = acl_py.Stream()
    base = emulator.live_objects()["executors"]
    with emulator.inject_faults("aclSetAclOpExecutorRepeatable:1"):
        plan = acl_py.LayerNormBackward(**d)
    assert plan.mode == "per-run" and not plan.closed
    # The refused executor never ran: it was destroyed at once.
    assert emulator.live_objects()["executors"] == base
    assert plan.workspace_size > 0
    emulator.reset_call_counts()
    for i in range(3):
        new = make_case((4, 8), 1, F32, seed=20 + i)
        for k in ("grad_out", "input", "mean", "rstd", "weight"):
            d[k].copy_from_numpy(new[k])
        assert plan.run(s) == plan.outputs
        s.synchronize()
        check(plan.outputs, dict(new, bias=case["bias"]))
    counts = emulator.call_counts()
    assert counts[PHASE_ONE] == 3 and counts[PHASE_TWO] == 3, counts
    assert "aclSetAclOpExecutorRepeatable" not in counts
    # Its launches release their own executors; nothing is left when it closes.
    plan.close()
    assert plan.closed
    with pytest.raises(ClosedError):
        plan.run(s)
    assert emulator.live_objects()["executors"] == base
    for t in plan.outputs:
        t.close()
    s.close()


def test_plan_fallback_whose_destroy_fails_retries_it_at_close(emulator):
    d = to_device(make_case((4, 8), 1, F32))
    base = emulator.live_objects()["executors"]
    with emulator.inject_faults("aclSetAclOpExecutorRepeatable:1,aclDestroyAclOpExecutor:1"):
        plan = acl_py.LayerNormBackward(**d)
    assert plan.mode == "per-run"
    assert emulator.live_objects()["executors"] == base + 1   # the destroy failed
    plan.close()
    assert emulator.live_objects()["executors"] == base


def test_plan_fallback_from_the_environment(run_python):
    """ACL_EMU_FAIL arms the same refusal when the library loads: a script's plan falls back
    and reports it."""
    proc = run_python("""
        import numpy as np, acl_py
        from acl_py import reference
        x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
        m = x.mean(axis=1, keepdims=True)
        r = 1 / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
        t = [acl_py.DeviceTensor.from_numpy(a) for a in (x, x, m, r)]
        with acl_py.LayerNormBackward(t[0], t[1], [4], t[2], t[3]) as plan:
            plan.run()
            plan.run()
            acl_py.synchronize()
            want = reference.layer_norm_backward(x, x, (4,), m, r)
            got = [o.to_numpy() for o in plan.outputs]
            assert all(np.allclose(g, w, atol=1e-5) for g, w in zip(got, want))
            print(plan.mode)
    """, env={"ACL_EMU_FAIL": "aclSetAclOpExecutorRepeatable:1", "ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "per-run", proc.stdout


def test_plan_run_fault_keeps_the_plan_usable(emulator):
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    with acl_py.LayerNormBackward(**d) as plan:
        with emulator.inject_faults(f"{PHASE_TWO}:1"):
            with pytest.raises(RuntimeFailure):
                plan.run()
        plan.run()
        acl_py.default_stream().synchronize()
        check(plan.outputs, case)


def test_launch_records_never_go_back_on_a_shared_stream(emulator):
    """An operator launch numbers its submission, then records each buffer's last use. A
    thread switched out in between (here inside submit) lets another thread submit a later
    launch using the same tensor and record it; the first launch's records must not replace
    that later number with its earlier one, or a synchronize that reached only the first
    launch would free the tensor under the later one (as for copies: test_stream.py)."""
    from _reliability import switched_out_in_submit
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    s = acl_py.Stream()
    st = s.state
    x = d["input"]

    def other_thread():
        s.synchronize()                     # target: the first launch's number
        x.buffer.memset(0, stream=s)        # a later launch using x, recorded as such
        assert x.allocation.uses[st] == st.seq

    with switched_out_in_submit(s, other_thread):
        outs = acl_py.layer_norm_backward(**d, stream=s)
    assert st.done < st.seq
    assert x.allocation.uses[st] == st.seq      # the memset's number, not the launch's
    # (A plan records its runs on its own record, which its buffers link to: another
    # launch's record on a buffer is never overwritten by a run.)
    s.synchronize()
    for t in outs:
        t.close()
    s.close()


@pytest.mark.parametrize("launch", ["call", "call-new", "plan", "aclnn"])
def test_launch_racing_another_threads_close_of_its_stream(emulator, monkeypatch, launch):
    """An operator launch checks its stream open at the start (state_for); another thread's
    close landing right after must make the launch raise ClosedError without giving the
    runtime the stream's handle (destroyed: a dangling pointer on a device), and lose
    nothing: the executor phase one made is destroyed, the workspace and new outputs go
    back. Before, phase two got the handle (None after the close: cffi's TypeError)."""
    from acl_py import aclnn, stream as stream_mod
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    outs = (acl_py.DeviceTensor.empty((4, 8)), acl_py.DeviceTensor.empty(8),
            acl_py.DeviceTensor.empty(8))
    plan = acl_py.LayerNormBackward(**d) if launch == "plan" else None
    for t in (*d.values(), *outs):
        if isinstance(t, acl_py.DeviceTensor):
            t.handle                # made now: cached, not the launch's to release
    acl_py.release_unused()
    before = emulator.live_objects()
    s = acl_py.Stream()
    st = s.state
    real = stream_mod.state_for

    def checked_then_closed(*args, **kwargs):
        sst = real(*args, **kwargs)
        if sst is st:
            s.close()               # the other thread's close lands right after the check
        return sst
    monkeypatch.setattr(stream_mod, "state_for", checked_then_closed)
    with pytest.raises(ClosedError):
        if launch == "plan":
            plan.run(s)
        elif launch == "aclnn":
            aclnn.LayerNormBackward(d["grad_out"], d["input"], (8,), d["mean"], d["rstd"],
                                    d["weight"], d["bias"], (True, True, True), *outs,
                                    stream=s)
        else:
            acl_py.layer_norm_backward(**d, out=outs if launch == "call" else None, stream=s)
    monkeypatch.undo()
    assert s.closed
    acl_py.release_unused()
    after = emulator.live_objects()
    # the closed stream is gone; nothing else changed (no executor, buffer or tensor left)
    assert {k: after[k] - before[k] for k in before if after[k] != before[k]} == {}
    if plan is not None:            # the plan still runs on an open stream
        plan.run()
        acl_py.default_stream().synchronize()
        check(plan.outputs, case)
        plan.close()


def test_plan_released_inside_another_devices_launch_keeps_its_device(run_python):
    """A garbage collection may release a plan of device 1 in the middle of a device-0
    launch (simulated: where the launch takes its workspace). The executor's destroy makes
    its device current; it must then make the thread's device current again, or the launch
    enqueues on its device-0 stream with device 1 current, which the runtime refuses (CANN
    checks the stream's context at launch; the emulator returns 361001)."""
    proc = run_python("""
        import numpy as np, acl_py
        from acl_py import memory
        x = np.arange(16, dtype=np.float32).reshape(2, 8) / 16
        m = x.mean(axis=1, keepdims=True)
        r = 1 / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
        def tensors(dev):
            return [acl_py.DeviceTensor.from_numpy(a, device=dev) for a in (x, x, m, r)]
        with acl_py.Device(1):
            t1 = tensors(1)
            plan = acl_py.LayerNormBackward(t1[0], t1[1], [8], t1[2], t1[3])
        t0 = tensors(0)
        s = acl_py.Stream(device=0)
        workspace = memory._PoolState.workspace
        pending = [plan]

        def workspace_then_gc(self, *args):
            block = workspace(self, *args)
            while pending:
                pending.pop().close()       # as a garbage collection would, here
            return block
        memory._PoolState.workspace = workspace_then_gc
        try:
            outs = acl_py.layer_norm_backward(t0[0], t0[1], [8], t0[2], t0[3], stream=s)
        finally:
            memory._PoolState.workspace = workspace
        s.synchronize()
        assert not pending and plan.closed
        print("ok")
    """, env={"ACL_EMU_DEVICE_COUNT": "2", "ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok"), proc.stdout


def test_one_shot_reuses_arrays_and_workspace(emulator):
    """After the first call, a one-shot call on device tensors creates no array handle and
    allocates no workspace: phase one, phase two, nothing else."""
    case = make_case((8, 16), 1, F32)
    d = to_device(case)
    out = (acl_py.DeviceTensor.empty((8, 16)), acl_py.DeviceTensor.empty(16),
           acl_py.DeviceTensor.empty(16))
    s = acl_py.Stream()
    acl_py.layer_norm_backward(**d, out=out, stream=s)
    emulator.reset_call_counts()
    for _ in range(10):
        acl_py.layer_norm_backward(**d, out=out, stream=s)
    s.synchronize()
    counts = {k: v for k, v in emulator.call_counts().items() if not k.startswith("aclemu")}
    assert counts == {PHASE_ONE: 10, PHASE_TWO: 10, "aclrtSynchronizeStream": 1}, counts
    check(out, case)
    s.close()


def test_custom_allocator_and_second_operator_declaration():
    """The wrapper is operator-agnostic: a repeatable executor through Operator.prepare with
    a caller's allocator, and the workspace released after the stream."""
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    pool = acl_py.MemoryPool()
    taken = []

    def allocator(nbytes, device):
        taken.append(nbytes)
        return pool.malloc(nbytes)
    args = (d["grad_out"], d["input"], acl_py.IntArray([8]), d["mean"], d["rstd"], d["weight"],
            None, acl_py.BoolArray([True, True, True]), acl_py.DeviceTensor.empty((4, 8)),
            acl_py.DeviceTensor.empty(8), acl_py.DeviceTensor.empty(8))
    with LAYER_NORM_BACKWARD.prepare(args, device=0, allocator=allocator) as ex:
        assert taken == [ex.workspace_size] and pool.used_bytes() > 0
        ex.run()
        ex.run()
    acl_py.default_stream().synchronize()
    assert pool.used_bytes() == 0
    check(args[8:], case)
    LAYER_NORM_BACKWARD.launch(args, device=0, allocator=allocator)
    acl_py.default_stream().synchronize()
    assert len(taken) == 2 and pool.used_bytes() == 0
    pool.close()
    assert "GetWorkspaceSize(aclTensor gradOut" in LAYER_NORM_BACKWARD.signature()


def test_declared_call_with_a_wrong_number_of_inputs_names_the_count():
    """Declared.call and bind (the operator modules' machinery, public in acl_py.ops) refuse
    a values tuple of the wrong length before anything else: NumPy or device, fewer or more."""
    case = make_case((4, 8), 1, F32)
    d = to_device(case)
    host = (case["grad_out"], case["input"], (8,), case["mean"], case["rstd"])
    dev = (d["grad_out"], d["input"], (8,), d["mean"], d["rstd"])
    for values in (host, host + (None,) * 4, dev, dev + (None,) * 4):
        with pytest.raises(AclArgumentError, match=r"takes 8 inputs .*got (5|9)") as e:
            LAYER_NORM_BACKWARD.call(values)
        assert e.value.argument == "values"
    with pytest.raises(AclArgumentError, match="takes 8 inputs"):
        LAYER_NORM_BACKWARD.bind(dev, acl_py.DeviceTensor)
    for t in d.values():
        if isinstance(t, acl_py.DeviceTensor):
            t.close()


def test_plan_alive_at_interpreter_exit(run_python):
    proc = run_python("""
        import numpy as np, acl_py
        x = np.ones((2, 4), np.float32)
        m = np.zeros((2, 1), np.float32)
        t = [acl_py.DeviceTensor.from_numpy(a) for a in (x, x, m, m + 1)]
        plan = acl_py.LayerNormBackward(t[0], t[1], [4], t[2], t[3])
        plan.run()
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_caches_survive_finalize_and_init(run_python):
    """The cached arrays and pooled workspaces of one-shot calls are recreated in a new
    session (they were released by finalize)."""
    proc = run_python("""
        import numpy as np, acl_py
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        m = np.zeros((2, 1), np.float32)
        def call():
            t = [acl_py.DeviceTensor.from_numpy(a) for a in (x, x, m, m + 1)]
            r = acl_py.layer_norm_backward(t[0], t[1], [4], t[2], t[3])
            acl_py.synchronize()
            return [a.to_numpy().tolist() for a in r]
        first = call()
        acl_py.finalize()
        acl_py.init()
        assert call() == first
        acl_py.finalize()
        from acl_py import emulator
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ---- a plan keeps what it runs on, whatever the caller closes --------------------------------
# A repeatable executor reads its tensors' descriptors and memory at every run (the vendor's
# aclSetTensorAddr docs: between runs only the address recorded in the aclTensor changes), so
# closing a tensor a live plan was built from must not free either while the plan can run.

def _address(t):
    from acl_py._ffi import ffi
    return int(ffi.cast("uintptr_t", t.allocation.ptr))


def test_plan_keeps_the_memory_of_a_closed_argument_until_it_closes(emulator):
    case = make_case((4, 8), 1, F32, seed=41)
    d = to_device(case)
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    where = _address(d["input"])
    d["input"].close()
    d["grad_out"].close()
    plan.grad_input.close()      # an output the plan writes
    # Tensors of the same sizes made now must not get that memory while the plan may use it.
    other = [acl_py.DeviceTensor.from_numpy(np.full(case["input"].shape, 7.0, np.float32))
             for _ in range(3)]
    assert where not in {_address(t) for t in other}
    plan.run(s)
    s.synchronize()
    for t in other:              # nothing the plan wrote landed in them
        assert (t.to_numpy() == 7.0).all()
    check((None, plan.grad_weight, plan.grad_bias), case, mask=(False, True, True))
    plan.close()
    s.synchronize()
    for t in other + [plan.grad_weight, plan.grad_bias] + [v for v in d.values()
                                                           if isinstance(v, acl_py.DeviceTensor)]:
        t.close()
    s.close()
    # (The autouse leak check then finds the deferred memory and the plan's own descriptors
    # gone with everything else.)


def test_two_plans_on_one_tensor_each_keep_it(emulator):
    """The second plan built over a tensor does not make it forget the first one's runs (a
    record with nothing pending yet was dropped when another was linked)."""
    case = make_case((4, 8), 1, F32, seed=42)
    d = to_device(case)
    s = acl_py.Stream()
    first = acl_py.LayerNormBackward(**d)
    second = acl_py.LayerNormBackward(**d)
    first.run(s)                 # queued, not synchronized
    where = _address(d["input"])
    d["input"].close()
    t = acl_py.DeviceTensor.empty(case["input"].shape, np.float32)
    assert _address(t) != where
    second.close()
    s.synchronize()
    check(first.outputs, case)
    first.close()
    for x in [t, *first.outputs, *second.outputs] + [v for v in d.values()
                                                    if isinstance(v, acl_py.DeviceTensor)]:
        x.close()
    s.close()


def test_plan_runs_after_a_view_argument_is_closed(emulator):
    """The plan has its own descriptors: closing the caller's view destroys the caller's
    descriptor only."""
    case = make_case((4, 8), 1, F32, seed=43)
    d = to_device(case)
    s = acl_py.Stream()
    views = dict(d, input=d["input"][...], grad_out=d["grad_out"][...])
    plan = acl_py.LayerNormBackward(**views)
    views["input"].handle, views["grad_out"].handle   # the caller's own descriptors, made
    before = emulator.live_objects()["tensors"]
    views["input"].close()
    views["grad_out"].close()
    assert emulator.live_objects()["tensors"] == before - 2
    plan.run(s)
    s.synchronize()
    check(plan.outputs, case)
    plan.close()
    for x in [*plan.outputs] + [v for v in d.values() if isinstance(v, acl_py.DeviceTensor)]:
        x.close()
    s.close()
