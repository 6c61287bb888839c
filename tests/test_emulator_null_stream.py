"""A NULL stream, per part, as CANN's runtime takes it (docs/emulator.md, "A NULL stream").

Three calls take their stream through the runtime's GetCurStream (hicann/runtime
src/runtime/core/src/runtime.cc; api/impl/api_error.cc MemCopy2DAsync, StreamSetMode,
StreamAbort): NULL is the current device's default stream only on Atlas A2/A3 and Ascend 950
(RT_FEATURE_DEVICE_CTRL_SQ) with a current device, else 107000. aclrtStreamStop (107000) and
aclrtDestroyStream* (100000) refuse NULL on every part; every other call taking a stream takes
NULL as the default stream on every part (api_impl.cc). Each part runs in its own process
(ACL_EMU_SOC is read once)."""
from __future__ import annotations

import pytest

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
