"""A NULL stream, per part, as CANN's runtime takes it (docs/emulator.md, "A NULL stream").

Three calls take their stream through the runtime's GetCurStream (hicann/runtime
src/runtime/core/src/runtime.cc; api/impl/api_error.cc MemCopy2DAsync, StreamSetMode,
StreamAbort): NULL is the current device's default stream only on Atlas A2/A3 and Ascend 950
(RT_FEATURE_DEVICE_CTRL_SQ) with a current device, else 107000. aclrtStreamStop (107000) and
aclrtDestroyStream* (100000) refuse NULL on every part; every other call taking a stream takes
NULL as the default stream on every part (api_impl.cc), the operators' launches included
(ApiImpl::LaunchKernelV2, below). Each part runs in its own process (ACL_EMU_SOC is read
once)."""
from __future__ import annotations

import pytest

from _part_runs import other_parts, run_on_parts, runs_here
from test_emulator_runtime import run_raw

# One child per part: each call with a NULL stream, (status, message) per call.
_CALLS = """
    lib.aclInit(NULL); lib.aclrtSetDevice(0)
    p = ffi.new("void **"); lib.aclrtMalloc(p, 64, 0); d = p[0]
    lib.aclrtMallocHost(p, 64); h = p[0]
    e = ffi.new("aclrtEvent *"); lib.aclrtCreateEvent(e); ev = e[0]
    n = ffi.new("aclrtNotify *"); lib.aclrtCreateNotify(n, 0); nt = n[0]
    ran = []
    @ffi.callback("void(void *)")
    def host_fn(arg):
        ran.append(1)
    status = ffi.new("aclrtStreamStatus *"); i32 = ffi.new("int32_t *")
    u32 = ffi.new("uint32_t *")
    calls = {
        "aclrtMemcpyAsync": lambda: lib.aclrtMemcpyAsync(d, 64, h, 64, 1, NULL),
        "aclrtMemsetAsync": lambda: lib.aclrtMemsetAsync(d, 64, 0, 64, NULL),
        "aclrtMemsetD32Async": lambda: lib.aclrtMemsetD32Async(d, 64, 7, 16, NULL),
        "aclrtRecordEvent": lambda: lib.aclrtRecordEvent(ev, NULL),
        "aclrtStreamWaitEvent": lambda: lib.aclrtStreamWaitEvent(NULL, ev),
        "aclrtResetEvent": lambda: lib.aclrtResetEvent(ev, NULL),
        "aclrtRecordNotify": lambda: lib.aclrtRecordNotify(nt, NULL),
        "aclrtWaitAndResetNotify": lambda: lib.aclrtWaitAndResetNotify(nt, NULL, 0),
        "aclrtLaunchHostFunc": lambda: lib.aclrtLaunchHostFunc(NULL, host_fn, NULL),
        "aclrtSynchronizeStream": lambda: lib.aclrtSynchronizeStream(NULL),
        "aclrtStreamQuery": lambda: lib.aclrtStreamQuery(NULL, status),
        "aclrtStreamGetId": lambda: lib.aclrtStreamGetId(NULL, i32),
        "aclrtStreamGetPriority": lambda: lib.aclrtStreamGetPriority(NULL, u32),
        "aclrtStreamGetFlags": lambda: lib.aclrtStreamGetFlags(NULL, u32),
        "aclrtMemcpy2dAsync": lambda: lib.aclrtMemcpy2dAsync(d, 8, h, 8, 8, 8, 1, NULL),
        "aclrtSetStreamFailureMode": lambda: lib.aclrtSetStreamFailureMode(NULL, 1),
        "aclrtStreamStop": lambda: lib.aclrtStreamStop(NULL),
        "aclrtDestroyStream": lambda: lib.aclrtDestroyStream(NULL),
        "aclrtStreamAbort": lambda: lib.aclrtStreamAbort(NULL),
    }
    for name, call in calls.items():
        rc = call()
        out[name] = (rc, errmsg() if rc else None)
    out["sync_after"] = lib.aclrtSynchronizeStream(NULL)
    out["host_fn_ran"] = len(ran)
    def without_device():
        for name in ("aclrtSetStreamFailureMode", "aclrtStreamAbort"):
            rc = calls[name]()
            out[name + " (no device)"] = (rc, errmsg() if rc else None)
    t = threading.Thread(target=without_device); t.start(); t.join()
"""

# The calls that take NULL as the default stream on every part.
_EVERY_PART = ("aclrtMemcpyAsync", "aclrtMemsetAsync", "aclrtMemsetD32Async",
               "aclrtRecordEvent", "aclrtStreamWaitEvent", "aclrtResetEvent",
               "aclrtRecordNotify", "aclrtWaitAndResetNotify", "aclrtLaunchHostFunc",
               "aclrtSynchronizeStream", "aclrtStreamQuery", "aclrtStreamGetId",
               "aclrtStreamGetPriority", "aclrtStreamGetFlags")
# The calls going through GetCurStream.
_CTRL_SQ_ONLY = ("aclrtMemcpy2dAsync", "aclrtSetStreamFailureMode", "aclrtStreamAbort")


def _refused(result, key, code, *words):
    rc, msg = result[key]
    call = key.split(" ")[0]
    assert rc == code, (key, result[key])
    assert msg is not None and call in msg and all(w in msg for w in words), (key, msg)


@pytest.mark.parametrize("part, ctrl_sq", [("Ascend910A", False), ("Ascend310P3", False),
                                           ("Ascend910B3", True), ("Ascend950PR_9599", True)])
def test_each_call_takes_a_null_stream_as_the_runtime_of_the_part(part, ctrl_sq):
    r = run_raw(_CALLS, env={"ACL_EMU_SOC": part})
    for name in _EVERY_PART:
        assert r[name] == [0, None], (name, r[name])
    assert r["host_fn_ran"] == 1 and r["sync_after"] == 0
    for name in _CTRL_SQ_ONLY:
        if ctrl_sq:
            assert r[name] == [0, None], (name, r[name])
        else:
            _refused(r, name, 107000, "stream is NULL", part, "Atlas A2/A3 and Ascend 950")
        # without a current device GetCurStream finds no context on any part: 107000
        if name != "aclrtMemcpy2dAsync":
            _refused(r, name + " (no device)", 107000, "stream is NULL")
    _refused(r, "aclrtStreamStop", 107000, "stream is NULL")
    _refused(r, "aclrtDestroyStream", 100000, "stream is NULL")


# acl-py's default stream (a NULL handle) on the calls that take no NULL stream on some parts:
# it passes the handle aclrtCtxGetCurrentDefaultStream gives, so they work on every part.
_PY_DEFAULT_STREAM = """
    import numpy as np
    import acl_py
    from acl_py import errors
    d = acl_py.default_stream(0)
    with acl_py.HostBuffer(64) as h, acl_py.DeviceBuffer(8 * 12) as buf:
        h.numpy()[:] = np.arange(64, dtype=np.uint8)
        buf.memset(0)
        buf.copy_from_2d(h, 8, 8, pitch=12, stream=d)
        back = np.zeros(64, dtype=np.uint8)
        buf.copy_to_2d(back, 8, 8, pitch=12, stream=d)
        d.synchronize()
        out["rows"] = back.tolist()
    d.stop_on_failure()
    out["stop_on_failure"] = "ok"
    try:
        d.abort()
        out["abort"] = "ok"
    except errors.AclError as e:
        out["abort"] = [type(e).__name__, e.code]
    acl_py.default_stream(0).synchronize()
"""


@pytest.mark.parametrize("part, abort", [
    ("Ascend910A", ["NotSupportedError", 207000]), ("Ascend310P3", ["NotSupportedError", 207000]),
    ("Ascend910B3", "ok")])
def test_acl_pys_default_stream_on_every_part(part, abort):
    r = run_raw(_PY_DEFAULT_STREAM, env={"ACL_EMU_SOC": part})
    assert r["rows"] == list(range(64)), r["rows"]
    assert r["stop_on_failure"] == "ok"
    assert r["abort"] == abort, r["abort"]


# ---- the operators' launches (aclnnXxx(workspace, size, executor, stream)) ----------------
#
# Both of the vendor's op-library paths hand the stream, NULL included, to
# aclrtLaunchKernelWithHostArgs (hicann/opbase src/nnopbase/composite_op/aclnn_engine/
# rts_arg.cpp; individual_op/executor/indv_executor.cpp NnopbaseExecutorLaunchKernel), whose
# runtime takes NULL as the current context's default stream on every part (hicann/runtime
# src/runtime/api/impl/api_impl.cc ApiImpl::LaunchKernelV2; v200/api_impl_v200.cc for Ascend
# 950), not through GetCurStream. Without a current context the launch fails and the op
# library answers 361001 (ACLNN_ERR_RUNTIME_ERROR).

def _plan(declared, values):
    """A plan of ``declared`` over device tensors ``values`` in declaration order (a public
    plan's signature may differ: GroupNorm's takes no n, c, hxw)."""
    from acl_py.ops import Plan
    cls = type(f"{declared.short_name}Launch", (Plan,), {
        "declared": declared, "__slots__": (),
        "__init__": lambda self, v: self._prepare(v, None)})
    return cls(values)


def _launches(names=None):
    """``names`` (every declared operator by default) that have a kernel on this part: the
    others' calls are refused here, and their parts run them (the children below)."""
    from acl_py.ops import DECLARED
    return [pytest.param(name, id=name) for name in (names or DECLARED)
            if runs_here(DECLARED[name])]


@pytest.mark.parametrize("name", _launches())
def test_operator_launches_take_a_null_stream_as_the_default_stream(emulator, name):
    """acl-py's default stream is the NULL handle, which a plan's run passes to phase two
    as it is: the launch is queued on the default stream (behind a host function holding
    it) and gives the operator's results, on every part; on a thread with no current
    device the same launch fails with 361001 naming the call, and the executor runs after."""
    import threading

    import numpy as np

    import acl_py
    from acl_py.ops import DECLARED
    from acl_py.raw import ffi, lib
    from test_declared_out import _values

    declared = DECLARED[name]
    values = _values(declared)
    default = acl_py.default_stream()
    assert default.handle == ffi.NULL
    made = [acl_py.DeviceTensor.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v
            for v in values]
    try:
        with _plan(declared, tuple(made)) as plan:
            gate = threading.Event()
            default.launch_host_func(lambda: gate.wait(10))
            outputs = plan.run(None)
            assert not default.query()      # queued behind the host function
            gate.set()
            default.synchronize()
            got = tuple(None if t is None else t.to_numpy() for t in outputs)
            for check in declared.check_outputs(values, got):
                assert getattr(check, "problem", None) is None, check
                assert getattr(check, "error_ratio", 0) <= 1, check

            # The launch itself, on a thread that set no device: 361001.
            ws = acl_py.DeviceBuffer(plan.workspace_size) if plan.workspace_size else None
            status = {}

            def launch():
                ptr = ws.ptr if ws is not None else ffi.NULL
                rc = getattr(lib, declared.name)(ptr, plan.workspace_size, plan.handle,
                                                 ffi.NULL)
                msg = lib.aclGetRecentErrMsg()
                status["rc"] = rc
                status["msg"] = None if msg == ffi.NULL else ffi.string(msg).decode()
            t = threading.Thread(target=launch)
            t.start()
            t.join()
            if ws is not None:
                ws.close()
            assert status["rc"] == 361001, status
            assert declared.name in status["msg"] and "device" in status["msg"], status
            plan.run(None)      # the executor is still the caller's, and runs
            default.synchronize()
    finally:
        for t in made:
            if isinstance(t, (acl_py.DeviceTensor, acl_py.DeviceBuffer)):
                t.close()


test_operator_launches_on_other_parts = run_on_parts(other_parts(), "operator_launches_take")


# ---- a launch with no kernel, on a thread that set no device -------------------------------
#
# A call the vendor launches no kernel for touches no stream and no context in phase two:
# the generated operators' NnopbaseExecutorRunWithWorkspace skips every runtime step when
# every output is empty (hicann/opbase src/nnopbase/individual_op/executor/indv_executor.cpp
# NnopbaseSkipKernelLaunch), the hand-written op_apis' CommonOpExecutorRun runs an empty
# launcher list (composite_op/aclnn_engine/op_executor.cpp aclOpExecutor::Run; its
# aclrtGetStreamAttribute read ignores a failure, op_dfx.cpp GetCacheOpInfoSwitch). So it
# succeeds with a NULL stream or a given one, where a launch with a kernel fails (361001).

def _emptied(values):
    """``values`` with the batch (first) dim of every array of rank >= 2 made 0."""
    import numpy as np
    return tuple(np.zeros((0,) + v.shape[1:], v.dtype)
                 if isinstance(v, np.ndarray) and v.ndim >= 2 else v for v in values)


# The operators whose zero-batch call has no kernel: every output of a generated operator
# empty; LayerNorm's and FastLayerNorm's op_apis return at M == 0 (aclnn_layer_norm.cpp,
# aclnn_fast_layer_norm.cpp), AddRmsNorm's at an empty x1 (aclnn_add_rms_norm.cpp),
# BatchNormBackward's at an empty input (aclnn_batch_norm_backward.cpp), BatchNormElemt's at an
# empty input (aclnn_batch_norm_elemt.cpp), AddRmsNormQuant's and AddRmsNormDynamicQuant's at
# an empty x1 (aclnn_add_rms_norm_quant.cpp, aclnn_add_rms_norm_dynamic_quant.cpp). LayerNormBackward and BatchNorm fill their parameter
# statistics there (ProcessEmptyTensorWithValue: a Fill kernel; BatchNorm's only for a non-empty
# saveMean/saveInvstd, here [C]: its emulator test has the cases without), so they still need a
# device (as
# BatchNormGatherStatsWithCounts' fills of an empty mean do: its emulator test); so does
# BatchNormStats, whose [C] mean and invstd are filled (aclnn_batch_norm_stats.cpp).
_NO_KERNEL = ("LayerNorm", "FastLayerNorm", "RmsNorm", "AddRmsNorm", "GemmaRmsNorm", "InplaceAddRmsNorm",
              "AddLayerNorm", "DeepNorm", "BatchNormBackward", "BatchNormElemt",
              "AddRmsNormQuant", "AddRmsNormDynamicQuant")
_FILLS = ("LayerNormBackward", "BatchNorm", "BatchNormStats")


@pytest.mark.parametrize("name", _launches(_NO_KERNEL + _FILLS))
def test_a_launch_without_a_kernel_needs_no_current_device(emulator, name):
    """A zero-batch plan's phase two on a thread that never set a device: with a NULL stream
    and with a given one, success when the call has no kernel (nothing queued, the executor
    still the caller's and running after), 361001 naming the call when it has one."""
    import threading

    import numpy as np

    import acl_py
    from acl_py.ops import DECLARED
    from acl_py.raw import ffi, lib
    from test_declared_out import _values

    declared = DECLARED[name]
    values = _emptied(_values(declared))
    made = [acl_py.DeviceTensor.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v
            for v in values]
    stream = acl_py.Stream()
    try:
        with _plan(declared, tuple(made)) as plan:
            # a fill's own tiling asks for 16 MiB on Ascend 950 alone (docs/emulator.md,
            # "Phase one's workspace size"); its exact sizes: the workspace-size tests
            ws = plan.workspace_size
            assert (ws > 0) == (name in _FILLS and acl_py.soc_name() == "Ascend950PR_9599")
            work = acl_py.DeviceBuffer(ws) if ws else None
            made.append(work)
            status = {}

            def launch(key, handle):
                rc = getattr(lib, declared.name)(work.ptr if work else ffi.NULL, ws,
                                                 plan.handle, handle)
                msg = lib.aclGetRecentErrMsg()
                status[key] = (rc, None if rc == 0 or msg == ffi.NULL
                               else ffi.string(msg).decode())
            for key, handle in (("null", ffi.NULL), ("given", stream.handle)):
                t = threading.Thread(target=launch, args=(key, handle))
                t.start()
                t.join()
            for key in ("null", "given"):
                rc, msg = status[key]
                if name in _NO_KERNEL:
                    assert rc == 0, (key, status[key])
                else:
                    assert rc == 361001 and declared.name in msg and "device" in msg, \
                        (key, status[key])
            assert stream.query()       # nothing was queued on it
            plan.run(stream)            # the executor is still the caller's, and runs
            stream.synchronize()
    finally:
        stream.close()
        for t in made:
            if isinstance(t, (acl_py.DeviceTensor, acl_py.DeviceBuffer)):
                t.close()


test_launches_without_a_kernel_on_other_parts = run_on_parts(
    other_parts(), "launch_without_a_kernel")
