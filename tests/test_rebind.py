"""Executor.rebind / Plan.rebind: a repeatable executor run on other tensors of the same
dtypes, shapes and layouts without a new phase one (aclSetTensorAddr re-points its own
descriptors), on one path: run() is unchanged. Results against the float64 reference; the
refusals name the argument and change nothing; memory: the replaced tensor's is kept only
until the stream has passed the runs queued on it, the new one's for the executor's life;
per-run mode (the library refused repeatability) and the aclnn module's executors too. The
autouse leak check verifies live objects after each test."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import acl_py
from acl_py import aclnn
from acl_py.errors import AclArgumentError, AclTypeError, ClosedError, InternalError

from test_layer_norm import check as check_forward, make as make_forward
from test_layer_norm_backward import F32, check, make_case

KEYS = ("grad_out", "input", "mean", "rstd", "weight")


def device_case(case, pool=True):
    return {k: (acl_py.DeviceTensor.from_numpy(v, pool=pool) if isinstance(v, np.ndarray)
                else v) for k, v in case.items()}


def close_all(*groups):
    for g in groups:
        for t in (g.values() if isinstance(g, dict) else g):
            if isinstance(t, acl_py.DeviceTensor):
                t.close()


def test_backward_plan_rebound_to_new_inputs_and_outputs_matches_the_reference():
    first = make_case((6, 3, 16), 1, F32, seed=1)
    second = make_case((6, 3, 16), 1, F32, seed=2)
    d1, d2 = device_case(first), device_case(second)
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d1)
    old_outputs = plan.run(s)
    new_outputs = tuple(acl_py.DeviceTensor.empty(t.shape, t.dtype) for t in old_outputs)
    plan.rebind(**{k: d2[k] for k in KEYS}, grad_input=new_outputs[0],
                grad_weight=new_outputs[1], grad_bias=new_outputs[2])
    assert plan.outputs == new_outputs and plan.grad_input is new_outputs[0]
    assert plan.run(s) == new_outputs
    s.synchronize()
    check(new_outputs, dict(second, bias=first["bias"]))
    check(old_outputs, first)          # the first run's results are where they were
    plan.close()
    close_all(d1, d2, old_outputs, new_outputs)
    s.close()


def test_forward_plan_cycles_through_buffers():
    """The use it is for: one phase one, then each batch's own buffers."""
    cases = [make_forward((8, 32), 1, seed=10 + i) for i in range(3)]
    inputs = [acl_py.DeviceTensor.from_numpy(c["input"]) for c in cases]
    outs = [acl_py.DeviceTensor.empty((8, 32)) for _ in cases]
    w = acl_py.DeviceTensor.from_numpy(cases[0]["weight"])
    b = acl_py.DeviceTensor.from_numpy(cases[0]["bias"])
    with acl_py.Stream() as s, acl_py.LayerNorm(inputs[0], [32], w, b) as plan:
        for x, y in zip(inputs, outs):
            plan.rebind(input=x, out=y)
            plan.run(s)
        s.synchronize()
        for c, y, k in zip(cases, outs, range(3)):
            ref = dict(c, weight=cases[0]["weight"], bias=cases[0]["bias"])
            got = y.to_numpy()
            exp = acl_py.reference.layer_norm(**ref)[0]
            scale = acl_py.reference.layer_norm_error_scale(**ref)[0]
            acl_py.reference.assert_close(got, exp, scale, np.float32, f"out[{k}]")
        # mean/rstd stayed the plan's own: they hold the last batch's statistics
        check_forward((outs[-1], plan.mean, plan.rstd),
                      dict(cases[-1], weight=cases[0]["weight"], bias=cases[0]["bias"]))
    close_all(inputs, outs, [w, b, plan.mean, plan.rstd])


def test_rebind_is_two_calls_and_the_run_stays_one(emulator):
    d = device_case(make_case((4, 8), 1, F32, seed=3))
    x2 = acl_py.DeviceTensor.from_numpy(make_case((4, 8), 1, F32, seed=4)["input"])
    plan = acl_py.LayerNormBackward(**d)
    emulator.reset_call_counts()
    plan.rebind(input=x2, grad_out=x2)
    plan.run()
    acl_py.default_stream().synchronize()
    counts = emulator.call_counts()
    assert counts["aclSetTensorAddr"] == 2 and counts["aclnnLayerNormBackward"] == 1, counts
    for name in ("aclnnLayerNormBackwardGetWorkspaceSize", "aclCreateTensor", "aclrtMalloc"):
        assert name not in counts, counts
    plan.close()
    close_all(d, [x2], plan.outputs)


@pytest.mark.parametrize("kwargs,cls,argument,says", [
    (dict(inputt="x"), AclTypeError, "inputt", "no parameter of that name"),
    (dict(normalized_shape=(8,)), AclArgumentError, "normalized_shape", "only tensor "),
    (dict(input="shape"), AclArgumentError, "input", "shape (4, 4)"),
    (dict(input="dtype"), AclTypeError, "input", "dtype float16"),
    (dict(input="layout"), AclArgumentError, "input", "layout"),
    (dict(input=None), AclTypeError, "input", "expected an acl_py.DeviceTensor"),
    (dict(input=np.zeros((4, 8), np.float32)), AclTypeError, "input", "ndarray"),
    (dict(bias="fine"), AclArgumentError, "bias", "was None"),
    (dict(grad_out="fine", input="shape"), AclArgumentError, "input", "shape"),
])
def test_refusals_name_the_argument_and_change_nothing(kwargs, cls, argument, says):
    case = make_case((4, 8), 1, F32, bias=False, seed=5)
    d = device_case(case)
    plan = acl_py.LayerNormBackward(**d)
    made = {"shape": acl_py.DeviceTensor.empty((4, 4)),
            "dtype": acl_py.DeviceTensor.empty((4, 8), np.float16),
            "layout": acl_py.DeviceTensor.empty((8, 4)).T,
            "fine": acl_py.DeviceTensor.from_numpy(np.full((4, 8), 9.0, np.float32))}
    given = {k: made.get(v, v) if isinstance(v, str) and k != "inputt" else v
             for k, v in kwargs.items()}
    with pytest.raises(cls) as e:
        plan.rebind(**given)
    assert e.value.argument == argument and says in str(e.value), str(e.value)
    plan.run()
    acl_py.default_stream().synchronize()
    check(plan.outputs, case)       # grad_out was not rebound either
    plan.close()
    close_all(d, made.values(), plan.outputs)


def test_closed_tensor_or_plan(emulator):
    d = device_case(make_case((4, 8), 1, F32, seed=6))
    plan = acl_py.LayerNormBackward(**d)
    x2 = acl_py.DeviceTensor.from_numpy(make_case((4, 8), 1, F32, seed=7)["input"])
    x2.close()
    with pytest.raises(ClosedError, match="input"):
        plan.rebind(input=x2)
    plan.close()
    with pytest.raises(ClosedError):
        plan.rebind(input=d["input"])
    close_all(d, plan.outputs)


def test_tensor_on_another_device_is_refused(run_python):
    r = run_python('''
        import numpy as np, acl_py
        from acl_py.errors import AclArgumentError
        x = acl_py.DeviceTensor.zeros((4, 8), device=0)
        plan = acl_py.LayerNorm(x, [8])
        try:
            plan.rebind(input=acl_py.DeviceTensor.zeros((4, 8), device=1))
        except AclArgumentError as e:
            print(e.argument, "|", e.problem)
        plan.close()
    ''', env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("input | tensor is on device 1, the executor on device 0\n")


def _allocations(emulator):
    return emulator.live_objects()["device_allocations"]


def test_replaced_memory_waits_for_the_queued_runs_only(emulator):
    """The tensor a rebind replaces is freed once the stream has passed the runs queued on
    it (not at once, under a queued run; not only at the plan's close); the new one is kept
    while the plan may run on it."""
    case = make_case((8, 64), 1, F32, seed=8)
    d = device_case(case, pool=None)
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    plan.run(s)                              # queued on the first input
    second = make_case((8, 64), 1, F32, seed=9)
    x2 = acl_py.DeviceTensor.from_numpy(second["input"], pool=None)
    plan.rebind(input=x2)
    n = _allocations(emulator)
    d["input"].close()
    assert _allocations(emulator) == n, "freed while a queued run may read it"
    s.synchronize()
    assert _allocations(emulator) == n - 1, "kept after the runs that used it"
    x2.close()                               # the plan's new input: kept for its runs
    s.synchronize()
    assert _allocations(emulator) == n - 1
    plan.run(s)
    s.synchronize()
    check(plan.outputs, dict(case, input=second["input"]))
    plan.close()
    s.synchronize()
    assert _allocations(emulator) == n - 2   # freed with the plan's last run
    close_all(d, plan.outputs)
    s.close()


def test_replaced_tensor_dropped_is_not_held_by_the_plan(emulator):
    """After a rebind the plan no longer refers to the old memory at all: dropping the last
    reference frees it while the plan lives (a loop over fresh buffers would grow)."""
    d = device_case(make_case((8, 64), 1, F32, seed=10), pool=None)
    plan = acl_py.LayerNormBackward(**d)
    plan.run()
    acl_py.default_stream().synchronize()
    n = _allocations(emulator)
    x2 = acl_py.DeviceTensor.from_numpy(make_case((8, 64), 1, F32, seed=11)["input"],
                                        pool=None)
    plan.rebind(input=x2)
    del d["input"]
    gc.collect()
    assert _allocations(emulator) == n
    plan.close()
    close_all(d, [x2], plan.outputs)


def test_per_run_plan_rebinds_its_next_phase_one(emulator):
    case = make_case((4, 8), 1, F32, seed=12)
    d = device_case(case)
    with emulator.inject_faults("aclSetAclOpExecutorRepeatable:1"):
        plan = acl_py.LayerNormBackward(**d)
    assert plan.mode == "per-run"
    second = make_case((4, 8), 1, F32, seed=13)
    x2 = acl_py.DeviceTensor.from_numpy(second["input"])
    dx = acl_py.DeviceTensor.empty((4, 8))
    emulator.reset_call_counts()
    plan.rebind(input=x2, grad_input=dx)
    assert plan.grad_input is dx
    plan.run()
    acl_py.default_stream().synchronize()
    assert "aclSetTensorAddr" not in emulator.call_counts()
    check(plan.outputs, dict(case, input=second["input"]))
    plan.close()
    close_all(d, [x2, dx], plan.outputs)


def test_aclnn_executor_rebinds_by_c_name():
    a = np.arange(8, dtype=np.float32)
    tensors = [acl_py.DeviceTensor.from_numpy(v) for v in (a, np.ones(8, np.float32),
                                                          np.zeros(8, np.float32), a * 10,
                                                          np.zeros(8, np.float32))]
    x, y, out, x2, out2 = tensors
    with aclnn.Add.prepare(x, y, 2.0, out) as ex:
        ex.run()
        ex.rebind(self=x2, out=out2)
        ex.run()
        acl_py.default_stream().synchronize()
    np.testing.assert_array_equal(out.to_numpy(), a + 2)
    np.testing.assert_array_equal(out2.to_numpy(), a * 10 + 2)
    close_all(tensors)


def test_library_refusal_is_typed_and_keeps_the_plan(emulator):
    case = make_case((4, 8), 1, F32, seed=14)
    d = device_case(case)
    plan = acl_py.LayerNormBackward(**d)
    x2 = acl_py.DeviceTensor.from_numpy(make_case((4, 8), 1, F32, seed=15)["input"])
    with emulator.inject_faults("aclSetTensorAddr:1"), pytest.raises(InternalError) as e:
        plan.rebind(input=x2)
    assert e.value.call == "aclSetTensorAddr"
    plan.run()
    acl_py.default_stream().synchronize()
    check(plan.outputs, case)
    plan.close()
    close_all(d, [x2], plan.outputs)
