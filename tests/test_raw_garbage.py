"""Raw C calls (``acl_py.raw``) with NULLs, garbage handles and destroyed handles: every one
returns its documented status code (docs/emulator.md), never crashes.

The garbage-pointer batteries run in a fresh interpreter: if the emulator dereferenced a
garbage handle the child would die with a signal, and that is a failed test here, not a dead
test session. Garbage goes only where the ABI says a *handle* or a *device address* goes
(both are checked against registries, never dereferenced); a garbage *host* pointer is the
caller's undefined behaviour on the device too, so it is not tested.
"""
from __future__ import annotations

import json

import pytest

from acl_py.raw import ffi, lib

if not lib.backend.is_emulator:
    pytest.skip("garbage-handle behaviour is the emulator's documented contract; on a device "
                "a garbage handle is undefined behaviour", allow_module_level=True)

# Codes (bindings/include/acl/error_codes/rt_error_codes.h, acl/acl_base.h).
INVALID_PARAM, RT_PARAM_INVALID, RT_INVALID_HANDLE = 100000, 107000, 107017
RT_CONTEXT_NULL = 107002
NULLPTR, PARAM_INVALID = 161001, 161002
INNER, INNER_NULLPTR = 561000, 561103


def _msg():
    p = lib.aclGetRecentErrMsg()
    return ffi.string(p).decode() if p != ffi.NULL else ""


@pytest.fixture
def device():
    """Device 0 current on this thread (a counted aclrtSetDevice, undone after)."""
    assert lib.aclrtSetDevice(0) == 0
    yield
    assert lib.aclrtResetDevice(0) == 0


# ---- NULLs, in process (a NULL is checked before anything is dereferenced) -------------------

def test_null_out_pointers_are_invalid_param(device):
    N = ffi.NULL
    cases = {
        "aclrtCreateStream": lambda: lib.aclrtCreateStream(N),
        "aclrtCreateEvent": lambda: lib.aclrtCreateEvent(N),
        "aclrtMalloc": lambda: lib.aclrtMalloc(N, 64, 0),
        "aclrtMallocHost": lambda: lib.aclrtMallocHost(N, 64),
        "aclrtGetDevice": lambda: lib.aclrtGetDevice(N),
        "aclrtGetDeviceCount": lambda: lib.aclrtGetDeviceCount(N),
        "aclrtGetMemInfo": lambda: lib.aclrtGetMemInfo(1, N, N),
        "aclrtFree": lambda: lib.aclrtFree(N),
        "aclrtMemcpy": lambda: lib.aclrtMemcpy(N, 8, N, 8, 1),
        "aclrtMemset": lambda: lib.aclrtMemset(N, 8, 0, 8),
        "aclrtEventElapsedTime": lambda: lib.aclrtEventElapsedTime(N, N, N),
    }
    for name, call in cases.items():
        rc = call()
        assert rc == INVALID_PARAM, (name, rc, _msg())
        msg = _msg()
        assert name in msg, (name, msg)   # the message names the call


def test_null_meta_objects(device):
    N = ffi.NULL
    # CANN (hicann/opbase acl_op_api.cpp): destroying a NULL tensor or array is OK; a NULL
    # executor is ACLNN_ERR_INNER_NULLPTR
    for name in ("aclDestroyTensor", "aclDestroyIntArray", "aclDestroyBoolArray"):
        assert getattr(lib, name)(N) == 0, (name, _msg())
    for name in ("aclDestroyAclOpExecutor", "aclSetAclOpExecutorRepeatable"):
        assert getattr(lib, name)(N) == INNER_NULLPTR, (name, _msg())
        assert name in _msg()
    # create functions: NULL value with a non-zero size -> an empty array, as CANN's
    # constructor makes (hicann/opbase common_types.cpp aclArray<T>::aclArray)
    for create, destroy in ((lib.aclCreateIntArray, lib.aclDestroyIntArray),
                            (lib.aclCreateBoolArray, lib.aclDestroyBoolArray)):
        empty = create(N, 3)
        assert empty != N and destroy(empty) == 0
    one = ffi.new("int64_t[]", [4])
    assert lib.aclCreateTensor(N, 1, lib.ACL_FLOAT, one, 0, lib.ACL_FORMAT_ND, one, 1,
                               ffi.cast("void *", 64)) == N
    assert "aclCreateTensor" in _msg()
    # every required phase-one argument NULL: 161001 (check 1), nothing created
    ws = ffi.new("uint64_t *")
    ex = ffi.new("aclOpExecutor **")
    rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(N, N, N, N, N, N, N, N, N, N, N, ws, ex)
    assert rc == NULLPTR and ex[0] == N, _msg()
    # phase two with a NULL executor
    assert lib.aclnnLayerNormBackward(N, 0, N, N) == NULLPTR


# ---- garbage and destroyed handles, in a child interpreter ----------------------------------

_BATTERY = r"""
import json, random, sys
from acl_py.raw import ffi, lib

results = []                       # [name, rc or "NULL"/"ptr"] in call order
def rec(name, rc):
    results.append([name, rc])
    sys.stdout.flush()

assert lib.aclInit(ffi.NULL) == 0
assert lib.aclrtSetDevice(0) == 0

rng = random.Random(SEED)
garbage = [1, 8, 0xdeadbeef, 0x7fffffffffff, 2**64 - 8, 2**63 + 12345]
garbage += [rng.getrandbits(64) & ~7 for _ in range(40)]
garbage += [rng.getrandbits(47) for _ in range(40)]          # user-space-looking addresses

# Live objects of each kind, to pass where another kind is expected and as real ones.
p = ffi.new("void **"); assert lib.aclrtMalloc(p, 4096, 0) == 0; dev = p[0]
s = ffi.new("aclrtStream *"); assert lib.aclrtCreateStream(s) == 0; stream = s[0]
e = ffi.new("aclrtEvent *"); assert lib.aclrtCreateEvent(e) == 0; event = e[0]
dims = ffi.new("int64_t[]", [2, 4]); strides = ffi.new("int64_t[]", [4, 1])
st = ffi.new("int64_t[]", [8]); ns = ffi.new("int64_t[]", [4])
mk = lambda: lib.aclCreateTensor(dims, 2, lib.ACL_FLOAT, strides, 0, lib.ACL_FORMAT_ND, st, 1, dev)
tensor = mk(); assert tensor != ffi.NULL
ia = lib.aclCreateIntArray(ns, 1); assert ia != ffi.NULL
ba = lib.aclCreateBoolArray(ffi.new("bool[]", [True, True, True]), 3); assert ba != ffi.NULL
host = bytearray(64); hp = ffi.from_buffer(host)
live_addrs = [int(ffi.cast("uintptr_t", x)) for x in (dev, stream, event, tensor, ia, ba)]
interior = int(ffi.cast("uintptr_t", dev)) + 64

def handles(ctype):
    for g in garbage + live_addrs + [interior, int(ffi.cast("uintptr_t", hp))]:
        yield g, ffi.cast(ctype, g)

kind_of = {int(ffi.cast("uintptr_t", stream)): "stream", int(ffi.cast("uintptr_t", event)): "event",
           int(ffi.cast("uintptr_t", tensor)): "tensor", int(ffi.cast("uintptr_t", ia)): "ia",
           int(ffi.cast("uintptr_t", ba)): "ba", int(ffi.cast("uintptr_t", dev)): "dev",
           interior: "interior",   # inside a live allocation: a valid copy target, not freeable
           int(ffi.cast("uintptr_t", hp)): "host"}

ws = ffi.new("uint64_t *"); exo = ffi.new("aclOpExecutor **")
for g, h in handles("void *"):
    k = kind_of.get(g)
    if k != "stream":
        rec("aclrtSynchronizeStream", lib.aclrtSynchronizeStream(h))
        rec("aclrtDestroyStream", lib.aclrtDestroyStream(h))
        rec("aclrtRecordEvent.stream", lib.aclrtRecordEvent(event, h))
        rec("aclrtMemsetAsync.stream", lib.aclrtMemsetAsync(dev, 64, 0, 64, h))
    if k != "event":
        rec("aclrtSynchronizeEvent", lib.aclrtSynchronizeEvent(h))
        rec("aclrtDestroyEvent", lib.aclrtDestroyEvent(h))
        rec("aclrtRecordEvent.event", lib.aclrtRecordEvent(h, stream))
        ms = ffi.new("float *")
        rec("aclrtEventElapsedTime", lib.aclrtEventElapsedTime(ms, h, event))
    rec("aclrtDestroyContext", lib.aclrtDestroyContext(h))
    rec("aclrtSetCurrentContext", lib.aclrtSetCurrentContext(h))
    if k != "dev":
        rec("aclrtFree", lib.aclrtFree(h))
    if k not in ("dev", "interior"):
        rec("aclrtMemset", lib.aclrtMemset(h, 64, 0, 64))
        if k != "host":  # a synchronous copy of hp onto itself succeeds, as CANN's
            rec("aclrtMemcpy.H2D", lib.aclrtMemcpy(h, 64, hp, 64, lib.ACL_MEMCPY_HOST_TO_DEVICE))
            rec("aclrtMemcpy.D2H", lib.aclrtMemcpy(hp, 64, h, 64, lib.ACL_MEMCPY_DEVICE_TO_HOST))
        rec("aclrtMemcpy.D2D", lib.aclrtMemcpy(dev, 64, h, 64, lib.ACL_MEMCPY_DEVICE_TO_DEVICE))
    rec("aclrtFreeHost", lib.aclrtFreeHost(h))
    if k != "tensor":
        rec("aclDestroyTensor", lib.aclDestroyTensor(ffi.cast("aclTensor *", g)))
        # a garbage gradOut: refused by the registry check before anything is read
        rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(
            ffi.cast("aclTensor *", g), tensor, ia, tensor, tensor, ffi.NULL, ffi.NULL, ba,
            tensor, ffi.NULL, ffi.NULL, ws, exo)
        rec("aclnnLayerNormBackwardGetWorkspaceSize.gradOut", rc)
    if k != "tensor":
        # the nnopbase accessors: a registry check before anything is read or written
        i64p = ffi.new("int64_t **"); u64 = ffi.new("uint64_t *"); i64 = ffi.new("int64_t *")
        th = ffi.cast("aclTensor *", g)
        rec("accessor.aclGetViewShape", lib.aclGetViewShape(th, i64p, u64))
        rec("accessor.aclGetViewStrides", lib.aclGetViewStrides(th, i64p, u64))
        rec("accessor.aclGetViewOffset", lib.aclGetViewOffset(th, i64))
        rec("accessor.aclSetRawTensorAddr", lib.aclSetRawTensorAddr(th, dev))
        rec("accessor.aclInitTensor", lib.aclInitTensor(th, dims, 2, lib.ACL_FLOAT, strides, 0,
                                                        lib.ACL_FORMAT_ND, st, 1, dev))
    u64 = ffi.new("uint64_t *")
    if k != "ia":
        rec("accessor.aclGetIntArraySize",
            lib.aclGetIntArraySize(ffi.cast("aclIntArray *", g), u64))
    rec("accessor.aclGetTensorListSize",
        lib.aclGetTensorListSize(ffi.cast("aclTensorList *", g), u64))
    rec("accessor.aclGetScalarListSize",
        lib.aclGetScalarListSize(ffi.cast("aclScalarList *", g), u64))
    if k != "ia":
        rec("aclDestroyIntArray", lib.aclDestroyIntArray(ffi.cast("aclIntArray *", g)))
    if k != "ba":
        rec("aclDestroyBoolArray", lib.aclDestroyBoolArray(ffi.cast("aclBoolArray *", g)))
    xh = ffi.cast("aclOpExecutor *", g)
    rec("aclDestroyAclOpExecutor", lib.aclDestroyAclOpExecutor(xh))
    rec("aclSetAclOpExecutorRepeatable", lib.aclSetAclOpExecutorRepeatable(xh))
    rec("aclnnLayerNormBackward", lib.aclnnLayerNormBackward(ffi.NULL, 0, xh, stream))

# A real executor on a garbage stream and with garbage workspaces.
mean_t = lib.aclCreateTensor(ffi.new("int64_t[]", [2, 1]), 2, lib.ACL_FLOAT,
                             ffi.new("int64_t[]", [1, 1]), 0, lib.ACL_FORMAT_ND, st, 1, dev)
rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(tensor, tensor, ia, mean_t, mean_t, ffi.NULL,
                                                 ffi.NULL, ba, tensor, ffi.NULL, ffi.NULL, ws, exo)
# mask (1,1,1) with NULL gradWeight: check 3 -> 161001
rec("phase1.mask_true_output_null", rc)
ba1 = lib.aclCreateBoolArray(ffi.new("bool[]", [True, False, False]), 3)
rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(tensor, tensor, ia, mean_t, mean_t, ffi.NULL,
                                                 ffi.NULL, ba1, tensor, ffi.NULL, ffi.NULL, ws, exo)
assert rc == 0, rc
ex = exo[0]
# the device's workspace (its 16 MiB system workspace on Atlas A2/A3): a real one, so that
# only the garbage argument is wrong
wsp = ffi.new("void **")
assert lib.aclrtMalloc(wsp, max(ws[0], 1), 0) == 0
wsbuf = wsp[0]
assert lib.aclSetAclOpExecutorRepeatable(ex) == 0
for g, h in handles("aclrtStream"):
    if g == int(ffi.cast("uintptr_t", stream)):
        continue
    rec("phase2.garbage_stream", lib.aclnnLayerNormBackward(wsbuf, ws[0], ex, h))
for g in garbage[:10]:
    rec("phase2.garbage_workspace",
        lib.aclnnLayerNormBackward(ffi.cast("void *", g), ws[0] + 64, ex, stream))
assert lib.aclDestroyAclOpExecutor(ex) == 0

# A tensor whose data is a garbage (32-byte aligned) device address: created (only the
# alignment is checked at create), refused by phase two (its view is not inside device
# memory), never read.
for g in garbage[:10] + [int(ffi.cast("uintptr_t", hp))]:
    bad = lib.aclCreateTensor(dims, 2, lib.ACL_FLOAT, strides, 0, lib.ACL_FORMAT_ND, st, 1,
                              ffi.cast("void *", g & ~31))
    assert bad != ffi.NULL
    rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(bad, tensor, ia, mean_t, mean_t, ffi.NULL,
                                                     ffi.NULL, ba1, tensor, ffi.NULL, ffi.NULL,
                                                     ws, exo)
    assert rc == 0, rc
    rc = lib.aclnnLayerNormBackward(wsbuf if ws[0] else ffi.NULL, ws[0], exo[0], stream)
    rec("phase2.tensor_outside_device_memory", rc)
    if rc:  # the library released the single-use executor: a destroy is refused
        rec("phase2.failed_then_destroyed", lib.aclDestroyAclOpExecutor(exo[0]))
    assert lib.aclDestroyTensor(bad) == 0

# Destroyed handles: a second destroy, and any use, is a code.
assert lib.aclDestroyTensor(mean_t) == 0
rec("destroyed.aclDestroyTensor", lib.aclDestroyTensor(mean_t))
t2 = mk(); assert lib.aclDestroyTensor(t2) == 0
rec("destroyed.phase1_tensor", lib.aclnnLayerNormBackwardGetWorkspaceSize(
    t2, tensor, ia, tensor, tensor, ffi.NULL, ffi.NULL, ba1, tensor, ffi.NULL, ffi.NULL, ws, exo))
assert lib.aclDestroyBoolArray(ba1) == 0
rec("destroyed.aclDestroyBoolArray", lib.aclDestroyBoolArray(ba1))
s2 = ffi.new("aclrtStream *"); assert lib.aclrtCreateStream(s2) == 0
assert lib.aclrtDestroyStream(s2[0]) == 0
rec("destroyed.aclrtDestroyStream", lib.aclrtDestroyStream(s2[0]))
rec("destroyed.aclrtSynchronizeStream", lib.aclrtSynchronizeStream(s2[0]))
rec("destroyed.aclrtMemsetAsync", lib.aclrtMemsetAsync(dev, 64, 0, 64, s2[0]))
e2 = ffi.new("aclrtEvent *"); assert lib.aclrtCreateEvent(e2) == 0
assert lib.aclrtDestroyEvent(e2[0]) == 0
rec("destroyed.aclrtDestroyEvent", lib.aclrtDestroyEvent(e2[0]))
rec("destroyed.aclrtSynchronizeEvent", lib.aclrtSynchronizeEvent(e2[0]))
p2 = ffi.new("void **"); assert lib.aclrtMalloc(p2, 256, 0) == 0
assert lib.aclrtFree(p2[0]) == 0
rec("destroyed.aclrtFree", lib.aclrtFree(p2[0]))
rec("destroyed.aclrtMemcpy", lib.aclrtMemcpy(p2[0], 64, hp, 64, lib.ACL_MEMCPY_HOST_TO_DEVICE))
# single-use executor after it ran (released by the library): 161002
rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(
    tensor, tensor, ia, tensor, tensor, ffi.NULL, ffi.NULL, ba, tensor, ffi.NULL, ffi.NULL, ws, exo)
rec("phase1.mask_true_output_null_again", rc)

# Everything this script created is still live exactly once: release it, count zero.
assert lib.aclrtSynchronizeStream(stream) == 0
for call, h in ((lib.aclDestroyTensor, tensor), (lib.aclDestroyIntArray, ia),
                (lib.aclDestroyBoolArray, ba), (lib.aclrtDestroyEvent, event),
                (lib.aclrtDestroyStream, stream), (lib.aclrtFree, dev),
                (lib.aclrtFree, wsbuf)):
    assert call(h) == 0
live = ffi.new("aclemuLiveObjects *"); assert lib.aclemuGetLiveObjects(live) == 0
counts = {f: getattr(live, f) for f in ("device_allocations", "host_allocations", "tensors",
          "int_arrays", "bool_arrays", "executors", "streams", "events", "contexts",
          "device_bytes")}
assert lib.aclrtResetDevice(0) == 0
assert lib.aclFinalize() == 0
print("RESULTS " + json.dumps({"results": results, "live": counts}))
"""

# What each call must return for a garbage (never a live handle of the right kind) handle.
EXPECTED = {
    "aclrtSynchronizeStream": {RT_INVALID_HANDLE},
    "aclrtDestroyStream": {RT_INVALID_HANDLE},
    "aclrtRecordEvent.stream": {RT_INVALID_HANDLE},
    "aclrtMemsetAsync.stream": {RT_INVALID_HANDLE},
    "aclrtSynchronizeEvent": {RT_INVALID_HANDLE},
    "aclrtDestroyEvent": {RT_INVALID_HANDLE},
    "aclrtRecordEvent.event": {RT_INVALID_HANDLE},
    "aclrtEventElapsedTime": {RT_INVALID_HANDLE},
    # CANN's runtime: no live context is RT_ERROR_CONTEXT_NULL to destroy
    # (api_impl.cc ContextDestroy), RT_ERROR_INVALID_VALUE to set (api_error.cc)
    "aclrtDestroyContext": {RT_CONTEXT_NULL},
    "aclrtSetCurrentContext": {RT_PARAM_INVALID},
    "aclrtFree": {RT_PARAM_INVALID},
    "aclrtFreeHost": {RT_PARAM_INVALID},
    "aclrtMemset": {RT_PARAM_INVALID},
    "aclrtMemcpy.H2D": {RT_PARAM_INVALID},
    "aclrtMemcpy.D2H": {RT_PARAM_INVALID},
    "aclrtMemcpy.D2D": {RT_PARAM_INVALID},
    "aclDestroyTensor": {PARAM_INVALID},
    "accessor.aclGetViewShape": {PARAM_INVALID},
    "accessor.aclGetViewStrides": {PARAM_INVALID},
    "accessor.aclGetViewOffset": {PARAM_INVALID},
    "accessor.aclSetRawTensorAddr": {PARAM_INVALID},
    "accessor.aclInitTensor": {PARAM_INVALID},
    "accessor.aclGetIntArraySize": {PARAM_INVALID},
    "accessor.aclGetTensorListSize": {PARAM_INVALID},
    "accessor.aclGetScalarListSize": {PARAM_INVALID},
    "aclDestroyIntArray": {PARAM_INVALID},
    "aclDestroyBoolArray": {PARAM_INVALID},
    "aclDestroyAclOpExecutor": {INNER},
    "aclSetAclOpExecutorRepeatable": {INNER},
    "aclnnLayerNormBackward": {PARAM_INVALID},
    "aclnnLayerNormBackwardGetWorkspaceSize.gradOut": {PARAM_INVALID},
    "phase1.mask_true_output_null": {NULLPTR},
    "phase1.mask_true_output_null_again": {NULLPTR},
    "phase2.garbage_stream": {361001},                # stream problems: ACLNN_ERR_RUNTIME_ERROR
    "phase2.garbage_workspace": {PARAM_INVALID},
    "phase2.tensor_outside_device_memory": {PARAM_INVALID},
    "phase2.failed_then_destroyed": {INNER},
    "destroyed.aclDestroyTensor": {PARAM_INVALID},
    "destroyed.phase1_tensor": {PARAM_INVALID},
    "destroyed.aclDestroyBoolArray": {PARAM_INVALID},
    "destroyed.aclrtDestroyStream": {RT_INVALID_HANDLE},
    "destroyed.aclrtSynchronizeStream": {RT_INVALID_HANDLE},
    "destroyed.aclrtMemsetAsync": {RT_INVALID_HANDLE},
    "destroyed.aclrtDestroyEvent": {RT_INVALID_HANDLE},
    "destroyed.aclrtSynchronizeEvent": {RT_INVALID_HANDLE},
    "destroyed.aclrtFree": {RT_PARAM_INVALID},
    "destroyed.aclrtMemcpy": {RT_PARAM_INVALID},
}


@pytest.mark.parametrize("seed", [1, 2])
def test_garbage_and_destroyed_handles_return_codes(run_python, seed):
    proc = run_python(_BATTERY.replace("SEED", str(seed)), timeout=120)
    # A crash (signal) shows as a negative return code; anything on stderr is suspicious too.
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert proc.stderr.strip() == "", proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
    assert line, proc.stdout[-2000:]
    data = json.loads(line[-1][len("RESULTS "):])
    results = data["results"]
    assert len(results) > 1000   # the battery really ran
    wrong = [(name, rc) for name, rc in results if rc not in EXPECTED[name]]
    assert not wrong, f"{len(wrong)} calls returned an undocumented code: {wrong[:20]}"
    seen = {name for name, _ in results}
    assert seen == set(EXPECTED), set(EXPECTED) ^ seen
    assert all(v == 0 for v in data["live"].values()), data["live"]
