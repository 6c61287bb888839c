"""Calls repeated in a loop, on the one call path (issue 13): the same objects again and again,
then something changed between two calls (a type, a mutated list, a closed or collected
tensor, another stream, another thread), which every call must notice: the result or the
error is checked. Also the plan's runs, recorded once per stream on its executor rather than
on every buffer, and what stays cached between calls (tensor handles, argument arrays)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import acl_py
from acl_py.errors import AclArgumentError, AclTypeError, ClosedError

from test_layer_norm_backward import F32, check, make_case, to_device

PHASE_ONE = "aclnnLayerNormBackwardGetWorkspaceSize"


def _outs(case):
    n = case["normalized_shape"]
    return (acl_py.DeviceTensor.empty(case["input"].shape, F32),
            acl_py.DeviceTensor.empty(n, F32), acl_py.DeviceTensor.empty(n, F32))


def _call(d, ns, out, stream=None, mask=(True, True, True)):
    return acl_py.layer_norm_backward(d["grad_out"], d["input"], ns, d["mean"], d["rstd"],
                                      d["weight"], d["bias"], mask, out=out, stream=stream)


def _close(*objs):
    for o in objs:
        if isinstance(o, dict):
            _close(*[v for v in o.values() if isinstance(v, acl_py.DeviceTensor)])
        elif o is not None:
            o.close()


def test_repeated_call_reuses_handles_and_sees_new_contents(emulator):
    case = make_case((4, 8), 1, F32, seed=1)
    d = to_device(case)
    out = _outs(case)
    s = acl_py.Stream()
    ns = (8,)
    res = _call(d, ns, out, s)
    emulator.reset_call_counts()
    for i in range(4):
        new = make_case((4, 8), 1, F32, seed=50 + i)
        for k in ("grad_out", "input", "mean", "rstd", "weight"):
            d[k].copy_from_numpy(new[k])
        res2 = _call(d, ns, out, s)
        assert res2 == res == out
        s.synchronize()
        check(res2, dict(new, bias=case["bias"]))
    counts = emulator.call_counts()
    # Nothing is converted again (tensor handles and argument arrays are cached): phase one
    # and two only.
    assert counts[PHASE_ONE] == 4
    for name in ("aclCreateTensor", "aclCreateIntArray", "aclCreateBoolArray"):
        assert name not in counts, (name, counts)
    _close(d, *out, s)


@pytest.mark.parametrize("good,bad", [((8,), (8.0,)), ([8], [8.0]), (8, 8.0), ((8,), (True,)),
                                      ([8], [True])])
def test_normalized_shape_types_never_share_an_entry(good, bad):
    case = make_case((4, 8), 1, F32, seed=2)
    d = to_device(case)
    out = _outs(case)
    _call(d, good, out)
    _call(d, good, out)
    with pytest.raises(AclTypeError) as ei:
        _call(d, bad, out)
    assert "normalized_shape" in str(ei.value)
    acl_py.default_stream().synchronize()
    _close(d, *out)


@pytest.mark.parametrize("bad", [(1, 1, 1), [1, 1, 1], [True, True, 1]])
def test_output_mask_types_never_share_an_entry(bad):
    case = make_case((4, 8), 1, F32, seed=3)
    d = to_device(case)
    out = _outs(case)
    _call(d, (8,), out, mask=[True, True, True])
    _call(d, (8,), out, mask=(True, True, True))
    with pytest.raises(AclTypeError) as ei:
        _call(d, (8,), out, mask=bad)
    assert "output_mask" in str(ei.value)
    acl_py.default_stream().synchronize()
    _close(d, *out)


def test_mutated_list_is_validated_again():
    case = make_case((4, 8), 1, F32, seed=4)
    d = to_device(case)
    out = _outs(case)
    ns = [8]
    _call(d, ns, out)
    _call(d, ns, out)
    ns[0] = 4
    with pytest.raises(AclArgumentError) as ei:
        _call(d, ns, out)
    assert "normalized_shape" in str(ei.value)
    mask = [True, True, True]
    ns[0] = 8
    _call(d, ns, out, mask=mask)
    mask[1] = False
    res = _call(d, ns, out, mask=mask)
    assert res[1] is None and res[0] is out[0]
    acl_py.default_stream().synchronize()
    _close(d, *out)


def test_closed_tensor_after_a_call_raises():
    case = make_case((4, 8), 1, F32, seed=5)
    d = to_device(case)
    out = _outs(case)
    _call(d, (8,), out)
    _call(d, (8,), out)
    out[1].close()
    with pytest.raises(ClosedError):
        _call(d, (8,), out)
    d["mean"].buffer.close()      # storage closed under a live tensor object
    with pytest.raises(ClosedError):
        _call(d, (8,), (out[0], None, None), mask=(True, False, False))
    acl_py.default_stream().synchronize()
    _close(d, *out)


def test_collected_tensor_replaced_by_another_shape_is_checked():
    case = make_case((4, 8), 1, F32, seed=6)
    d = to_device(case)
    out = list(_outs(case))
    _call(d, (8,), tuple(out))
    acl_py.default_stream().synchronize()
    out[2] = None               # the only reference
    gc.collect()
    # A new tensor of another shape (possibly at the same address) is checked again.
    out[2] = acl_py.DeviceTensor.empty((3,), F32)
    with pytest.raises(AclArgumentError):
        _call(d, (8,), tuple(out))
    _close(d, *out)


def test_stream_changes_and_closed_stream_between_calls():
    case = make_case((4, 8), 1, F32, seed=7)
    d = to_device(case)
    out = _outs(case)
    a, b = acl_py.Stream(), acl_py.Stream()
    _call(d, (8,), out, a)
    a.synchronize()
    res = _call(d, (8,), out, b)
    b.synchronize()
    check(res, case)
    b.close()
    with pytest.raises(ClosedError):
        _call(d, (8,), out, b)
    with pytest.raises(AclTypeError):
        _call(d, (8,), out, "stream")
    _close(d, *out, a)


def test_inputs_closed_while_a_launch_is_pending_are_freed_after_it(emulator):
    case = make_case((64, 256), 1, F32, seed=8)
    d = to_device(case)
    out = _outs(case)
    s = acl_py.Stream()
    _call(d, (256,), out, s)
    s.synchronize()
    _call(d, (256,), out, s)
    _close(d)                     # while the second launch is queued
    s.synchronize()
    check(out, case)
    # The result is readable without synchronizing first: the copy waits for the stream.
    d = to_device(case)
    _call(d, (256,), out, s)
    _call(d, (256,), out, s)
    check(out, case)
    _close(d, *out, s)


def test_plan_buffers_are_released_after_pending_runs():
    case = make_case((64, 256), 1, F32, seed=9)
    d = to_device(case)
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    plan.run(s)
    plan.run(s)
    _close(d)                  # inputs closed while two runs are queued
    check(plan.outputs, case)  # to_numpy waits for the stream (linked to the executor)
    plan.run(s)                # the executor keeps working: nothing was freed under it
    s.synchronize()
    plan.close()
    _close(*plan.outputs, s)


def test_plan_run_switches_streams_and_refuses_closed_ones():
    case = make_case((4, 8), 1, F32, seed=10)
    d = to_device(case)
    a = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    plan.run(a)
    # Runs on two streams share the workspace and the outputs: the caller orders them, as
    # any work on the same memory (unordered, they raced and summed grad_weight twice).
    a.synchronize()
    plan.run()                  # default stream: a different stream state
    acl_py.default_stream().synchronize()
    a.synchronize()
    check(plan.outputs, case)
    a.close()
    with pytest.raises(ClosedError):
        plan.run(a)
    plan.close()
    with pytest.raises(ClosedError):
        plan.run()
    _close(d, *plan.outputs)


def test_release_unused_drops_the_cached_arrays(emulator):
    case = make_case((4, 8), 1, F32, seed=11)
    d = to_device(case)
    out = _outs(case)
    _call(d, (8,), out)
    before = emulator.live_objects()
    acl_py.release_unused()
    after = emulator.live_objects()
    assert after["int_arrays"] < before["int_arrays"]
    assert after["bool_arrays"] < before["bool_arrays"]
    res = _call(d, (8,), out)
    acl_py.default_stream().synchronize()
    check(res, case)
    _close(d, *out)


def test_other_thread_device_activation_between_calls():
    import threading
    case = make_case((4, 8), 1, F32, seed=12)
    d = to_device(case)
    out = _outs(case)
    s = acl_py.Stream()
    plan = acl_py.LayerNormBackward(**d)
    _call(d, (8,), out, s)
    plan.run(s)
    s.synchronize()
    errs = []

    def worker():     # a fresh thread: no current device until acl-py sets it
        try:
            _call(d, (8,), out, s)
            plan.run(s)
            s.synchronize()
        except Exception as e:  # pragma: no cover - reported below
            errs.append(e)
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert not errs, errs
    check(out, case)
    check(plan.outputs, case)
    plan.close()
    _close(d, *out, *plan.outputs, s)
