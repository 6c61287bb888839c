"""Out of device memory: with ``ACL_EMU_DEVICE_MEMORY=24M`` (a fresh interpreter, since the cap
is read when the library loads; 16 MiB and more of it is the device's LayerNormGradV3
workspace on Atlas A2/A3), calls too large for the device raise ``DeviceMemoryError`` (also a
``MemoryError``, code 207001), give back everything they had taken, and later smaller calls
work and are right."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("emulator")

_SCRIPT = r"""
import gc, json, sys
import numpy as np
import acl_py
from acl_py import errors, emulator
sys.path.insert(0, TESTS)
from _reliability import F32, F16, call_args, check, lnb, make_case, plan_cls, settle, live, \
    to_device, close_case

out = {}
acl_py.init()
base = live()
total = acl_py.mem_info().total
base_free = acl_py.mem_info().free
assert base_free == total
out["total"] = total
rng = np.random.default_rng(0)
f = lnb()

def expect_oom(label, fn):
    try:
        fn()
    except errors.DeviceMemoryError as e:
        assert isinstance(e, MemoryError) and e.code == 207001, (label, e.code)
        assert e.call == "aclrtMalloc", (label, e.call)
        msg = str(e)
        del e
    else:
        raise AssertionError(label + ": no DeviceMemoryError")
    after = live()
    assert after == base, (label, after, base)
    assert acl_py.mem_info().free == base_free, label
    out[label] = msg

# 1. a NumPy call whose first input alone is past the cap (32 MiB of float32)
big = make_case(rng, (2048, 4096), 1, F32)
expect_oom("numpy_first_alloc", lambda: f(*call_args(big)))

# 2. a NumPy call where each input fits but not all of them: fails part way, after some
#    allocations succeeded (6 MiB each: grad_out, input, then the outputs, then the workspace:
#    16 MiB on Atlas A2/A3, an M x N FLOAT tensor on the split Atlas inference kernels)
mid = make_case(rng, (1536, 1024), 1, F32)
expect_oom("numpy_part_way", lambda: f(*call_args(mid)))

# 3. device tensors that fit, outputs that do not: nothing of the call's is left behind
small_in = make_case(rng, (512, 1024), 1, F16)   # 1 MiB per fp16 tensor
dev = to_device(small_in)
hog = acl_py.DeviceTensor.empty((int(total * 0.85) // 4,), np.float32)
base = live()
base_free = acl_py.mem_info().free
def device_call():
    outs = f(dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"], dev["rstd"],
             dev["weight"], output_mask=(True, True, True), out=(
                 acl_py.DeviceTensor.empty((512, 1024), np.float32), None, None))
expect_oom("device_outputs", device_call)
expect_oom("plan_outputs", lambda: plan_cls()(
    dev["grad_out"], dev["input"], dev["normalized_shape"], dev["mean"], dev["rstd"],
    dev["weight"], out=(acl_py.DeviceTensor.empty((512, 1024), np.float32), None, None)))
expect_oom("tensor_empty", lambda: acl_py.DeviceTensor.empty((total // 4 + 1,), np.float32))
expect_oom("buffer", lambda: acl_py.DeviceBuffer(total + 1))
hog.close()
close_case(dev)
base = live()
assert acl_py.mem_info().free == total

# 4. later, smaller calls work and are right; a call the size of half the device too
for shape in [(4, 64), (256, 1024), (2, 3, 5)]:
    c = make_case(rng, shape, 1, F32)
    check(f(*call_args(c)), c, what=str(shape))
c = make_case(rng, (512, 1024), 1, F16)   # 1 MiB inputs, fp16 outputs: ~4 MiB in all
check(f(*call_args(c)), c, what="half the device")
# 5. repeated failures do not accumulate anything
for _ in range(20):
    try:
        f(*call_args(mid))
    except MemoryError:
        pass
assert live() == base
assert acl_py.mem_info().free == total
c = make_case(rng, (64, 256), 2, F32)
check(f(*call_args(c)), c, what="after 20 failures")
acl_py.finalize()
print("RESULT " + json.dumps(out))
"""


def test_out_of_memory_in_subprocess(run_python):
    import os
    tests = os.path.dirname(os.path.abspath(__file__))
    proc = run_python(_SCRIPT.replace("TESTS", repr(tests)),
                      env={"ACL_EMU_DEVICE_MEMORY": "24M", "ACL_PY_BACKEND": "emulator"},
                      timeout=180)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:])
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, proc.stdout
    res = json.loads(line[-1][7:])
    assert res["total"] == 24 * 2 ** 20
    for label in ("numpy_first_alloc", "numpy_part_way", "device_outputs", "plan_outputs",
                  "tensor_empty", "buffer"):
        assert "ACL_ERROR_RT_MEMORY_ALLOCATION" in res[label], res[label]


_DEFERRED_SCRIPT = r"""
import acl_py, numpy as np
from acl_py import emulator
acl_py.init()
MiB = 1 << 20
total = acl_py.mem_info().total
s, t = acl_py.Stream(), acl_py.Stream()
for kind in ("buffer", "pool", "tensor", "other pool"):
    # 5 MiB used by a copy on s, then closed: its free waits for s, which nobody synchronizes
    # again (the copy is long done; s is idle).
    if kind == "other pool":
        p = acl_py.MemoryPool()
        a = p.malloc(5 * MiB, stream=t)
        a.memset(0, stream=t)           # pending on t: cached in p for t's work
    else:
        a = acl_py.DeviceBuffer(5 * MiB)
        a.copy_from_host_async(np.ones(1024, np.uint8), s)
    a.close()
    assert acl_py.mem_info().free < total - 4 * MiB, kind     # still held
    # 5 MiB more fit only once that memory is back: the allocation gets it back (synchronizes
    # the streams whose deferred frees and cached blocks hold it), then succeeds.
    if kind == "buffer":
        b = acl_py.DeviceBuffer(5 * MiB)
    elif kind == "tensor":
        b = acl_py.DeviceTensor.empty((5 * MiB // 4,), np.float32)
    else:
        b = acl_py.DeviceBuffer(5 * MiB, pool=True)
    b.close()
    acl_py.release_unused()
    if kind == "other pool":
        p.close()
    assert acl_py.mem_info().free == total, kind
s.close(); t.close()
acl_py.finalize()
print("OK")
"""


def test_memory_whose_free_waits_for_an_idle_stream_is_reclaimed_on_oom(run_python):
    """A free deferred to a stream (the buffer closed while a copy on it was pending) waits for
    that stream's next synchronize; so does a pool's block cached for a stream. If nobody
    synchronizes that stream again, the memory is held though its work is long done. An
    allocation that fails for want of it must get it back, as PyTorch's caching allocator
    does on out-of-memory (it synchronizes and frees its cached blocks), not raise: every
    kind of allocation, unpooled and pooled, whatever pool holds the blocks."""
    proc = run_python(_DEFERRED_SCRIPT,
                      env={"ACL_EMU_DEVICE_MEMORY": "24M", "ACL_PY_BACKEND": "emulator"},
                      timeout=120)
    assert proc.returncode == 0 and "OK" in proc.stdout, (proc.stdout[-2000:],
                                                          proc.stderr[-4000:])


_ROUNDING_SCRIPT = r"""
import acl_py
from acl_py.memory import block_size
MiB = 1 << 20
pool = acl_py.MemoryPool()
hog = pool.malloc(4 * MiB + MiB // 2)
n = 19 * MiB + 1            # its whole-2-MiB block (20 MiB) is past the 24 MiB cap
assert block_size(n) == 20 * MiB
for _ in range(2):          # the second time its exact block is cached, the rounded size not
    b = pool.malloc(n)
    assert pool.used_bytes() == 4 * MiB + MiB // 2 + 19 * MiB + 512, pool.used_bytes()
    b.close()
try:
    pool.malloc(20 * MiB)   # does not fit either way
except acl_py.errors.DeviceMemoryError as e:
    assert e.code == 207001 and "20.0 MiB" in str(e), str(e)
else:
    raise AssertionError("no DeviceMemoryError")
hog.close()
pool.close()
acl_py.finalize()
print("OK")
"""


def test_large_block_rounding_never_costs_an_allocation_that_fits(run_python):
    """The pool rounds blocks from 10 MiB up to whole 2 MiB; near the device's limit, where the
    rounded block does not fit and the request's own size does, it allocates the latter."""
    proc = run_python(_ROUNDING_SCRIPT, env={"ACL_EMU_DEVICE_MEMORY": "24M",
                                             "ACL_PY_BACKEND": "emulator"})
    assert proc.returncode == 0 and "OK" in proc.stdout, (proc.stdout, proc.stderr[-3000:])
