"""aclrtReduceAsync and aclrtRandomNumAsync through the raw cffi binding, against
docs/emulator.md ("Built-in tasks"): the checks, order and codes of hicann/runtime
src/acl/aclrt_impl (memory.cpp, kernel.cpp) and its runtime per part, the reduce's arithmetic
against a float64 reference rounded once to the dtype, and what is known of the random
numbers (ranges, the distributions' shape within fixed tolerances, determinism, the counter
and the parameters read when the task runs). The whole file runs on every kind of part."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from acl_py.raw import ffi, lib
from acl_py.soc import short_soc_version, soc_name

from _emu_objects import allocated_bytes
from _emu_status import expect, ok
from _part_runs import only_where, other_parts, run_on_parts

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: raw runtime calls with the emulator's "
                                       "messages")

SUM, MAX, MIN, EQUAL = 10, 11, 12, 13
INVALID_PARAM, RT_PARAM, CONTEXT_NULL, INVALID_HANDLE = 100000, 107000, 107002, 107017
UNALIGNED, NOT_SUPPORTED = 107008, 207000
DROPOUT, UNIFORM, NORMAL, TRUNCATED = 0, 1, 2, 3
BF16 = np.dtype(ml_dtypes.bfloat16)
# aclDataType of the NumPy dtypes the tests use
ACL = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 2,
       np.dtype(np.int32): 3, np.dtype(np.uint8): 4, np.dtype(np.int16): 6,
       np.dtype(np.uint16): 7, np.dtype(np.uint32): 8, np.dtype(np.int64): 9,
       np.dtype(np.uint64): 10, BF16: 27}


def series(part=None):
    """The kind of part: "training", "inference", "A2", "A3" or "950"."""
    family = short_soc_version(part or soc_name())
    return {"Ascend910": "training", "Ascend310P": "inference", "Ascend910B": "A2",
            "Ascend910_93": "A3", "Ascend950": "950"}[family]


# The dtypes each series' copy engine reduces (aclrtReduceAsync's API reference).
REDUCE_DTYPES = {
    "training": {np.float32},
    "inference": {np.float32, np.float16, np.int16},
    "A2": {np.int8, np.int16, np.int32, np.float16, np.float32, BF16},
    "A3": {np.int8, np.int16, np.int32, np.float16, np.float32, BF16},
    "950": {np.int8, np.int16, np.int32, np.uint32, np.float16, np.float32, BF16},
}
REDUCE_DTYPES = {k: {np.dtype(d) for d in v} for k, v in REDUCE_DTYPES.items()}


def overflow_path():
    """The parts whose runtime takes the overflow-recording reduce (sums only)."""
    return series() in ("training", "inference")


@pytest.fixture
def dev0():
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    yield
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


@pytest.fixture
def device():
    """malloc(nbytes) -> device memory, freed at the end."""
    blocks = []

    def malloc(nbytes):
        p = ffi.new("void **")
        ok(lib.aclrtMalloc(p, nbytes, 0), "aclrtMalloc")
        blocks.append(p[0])
        return p[0]
    yield malloc
    ok(lib.aclrtSynchronizeDevice())
    for p in blocks:
        ok(lib.aclrtFree(p), "aclrtFree")


def upload(p, arr):
    arr = np.ascontiguousarray(arr)
    ok(lib.aclrtMemcpy(p, arr.nbytes, ffi.cast("void *", arr.ctypes.data), arr.nbytes, 1))


def download(p, n, dtype):
    out = np.zeros(n, dtype=dtype)
    ok(lib.aclrtMemcpy(ffi.cast("void *", out.ctypes.data), out.nbytes, p, out.nbytes, 2))
    return out


# ---- aclrtReduceAsync ---------------------------------------------------------------------

def test_reduce_sum_of_the_vendor_example(dev0, device):
    """The vendor's sample (example/2_advanced_features/built_in_task/0_reduce_task): a float32
    sum of 1..4 into 1..4 gives 2..8, on every part."""
    x = np.array([1, 2, 3, 4], np.float32)
    src, dst = device(16), device(16)
    upload(src, x)
    upload(dst, x)
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    ok(lib.aclrtReduceAsync(dst, src, 16, SUM, 0, s[0], ffi.NULL), "aclrtReduceAsync")
    ok(lib.aclrtSynchronizeStream(s[0]))
    ok(lib.aclrtDestroyStream(s[0]))
    assert list(download(dst, 4, np.float32)) == [2, 4, 6, 8]


def reference(kind, a, b, dt):
    """op(a, b) in float64 (integers: exactly, wrapped to the dtype), rounded once to dt."""
    if dt.kind in "iu":
        wide = a.astype(np.int64), b.astype(np.int64)
        r = {SUM: wide[0] + wide[1], MAX: np.maximum(*wide), MIN: np.minimum(*wide)}[kind]
        return r.astype(dt)     # two's complement wrap
    wide = a.astype(np.float64), b.astype(np.float64)
    r = {SUM: wide[0] + wide[1], MAX: np.maximum(*wide), MIN: np.minimum(*wide)}[kind]
    return r.astype(dt)


def operands(dt, n, rng):
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -(2 ** 20)), min(info.max, 2 ** 20)
        a, b = rng.integers(lo, hi, n, endpoint=True), rng.integers(lo, hi, n, endpoint=True)
        a[:4] = [info.max, info.min, info.max, 0]     # sums that wrap
        b[:4] = [1, -1 if info.min else 0, info.max, info.max]
        return a.astype(dt), b.astype(dt)
    # values of many magnitudes, so the sums round (float16: below its 11 bits)
    a = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))).astype(dt)
    b = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))).astype(dt)
    return a, b


@pytest.mark.parametrize("kind", [SUM, MAX, MIN])
@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16, np.int8, np.int16, np.int32,
                                np.uint32, np.uint8, np.uint16], ids=lambda d: np.dtype(d).name)
def test_reduce_dtypes_kinds_and_arithmetic(dev0, device, dt, kind):
    """What the part reduces is done exactly and rounded once to the dtype (to nearest, ties
    to even; integers wrap); another dtype is refused with 207000 (uint8/uint16: no part),
    another kind than SUM on the overflow-recording parts with 107000."""
    dt = np.dtype(dt)
    n = 1000
    a, b = operands(dt, n, np.random.default_rng(7))
    dst, src = device(a.nbytes), device(b.nbytes)
    upload(dst, a)
    upload(src, b)
    rc = lib.aclrtReduceAsync(dst, src, a.nbytes, kind, ACL[dt], ffi.NULL, ffi.NULL)
    if overflow_path() and kind != SUM:
        expect(rc, RT_PARAM, "aclrtReduceAsync", "kind", "SUM")
    elif dt not in REDUCE_DTYPES[series()]:
        expect(rc, NOT_SUPPORTED, "aclrtReduceAsync", "type", "does not reduce")
    else:
        ok(rc, "aclrtReduceAsync")
        ok(lib.aclrtSynchronizeStream(ffi.NULL))
        got = download(dst, n, dt)
        want = reference(kind, a, b, dt)
        assert got.tobytes() == want.tobytes(), (got[got != want][:5], want[got != want][:5])
        return
    assert download(dst, n, dt).tobytes() == a.tobytes()     # refused: untouched


# where the part reduces no float16 (the refusal: test_reduce_dtypes_kinds_and_arithmetic)
@only_where(np.dtype(np.float16) in REDUCE_DTYPES[series()])
def test_reduce_float16_sum_rounds_each_element_once(dev0, device):
    """A float16 sum is the exact sum rounded once: 2048 + 1 is a tie (to even: 2048), 2048 +
    1.0009765625 rounds up (2050), 65504 + 16 overflows to inf; NaN stays NaN."""
    a = np.array([2048, 2048, 65504, 1, np.nan, 3], np.float16)
    b = np.array([1, 1.0009765625, 16, -1, 1, np.inf], np.float16)
    dst, src = device(a.nbytes), device(b.nbytes)
    upload(dst, a)
    upload(src, b)
    ok(lib.aclrtReduceAsync(dst, src, a.nbytes, SUM, 1, ffi.NULL, ffi.NULL))
    ok(lib.aclrtSynchronizeStream(ffi.NULL))
    got = download(dst, 6, np.float16)
    assert list(got[:4]) == [2048, 2050, np.inf, 0] and np.isnan(got[4]) and got[5] == np.inf


def test_reduce_is_stream_ordered(dev0, device):
    """Queued after a copy and before another reduce on the same stream, the reduce reads what
    the copy wrote and the second one what the first left: dst = x + 2 * src."""
    x, y = np.arange(256, dtype=np.float32), np.full(256, 0.5, np.float32)
    dst, src, staged = device(1024), device(1024), device(1024)
    upload(staged, x)
    upload(src, y)
    upload(dst, np.zeros(256, np.float32))
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    ok(lib.aclrtMemcpyAsync(dst, 1024, staged, 1024, 3, s[0]))
    ok(lib.aclrtReduceAsync(dst, src, 1024, SUM, 0, s[0], ffi.NULL))
    ok(lib.aclrtReduceAsync(dst, src, 1024, SUM, 0, s[0], ffi.NULL))
    ok(lib.aclrtSynchronizeStream(s[0]))
    ok(lib.aclrtDestroyStream(s[0]))
    assert np.array_equal(download(dst, 256, np.float32), x + 1)


def test_reduce_checks_in_the_vendors_order(dev0, device):
    """The ACL layer's 100000 (dst, src, reserve, a type outside its table), then the
    runtime's: count 0 and the kind (107000), the engine's kind and type (207000), the
    alignment (107008); the emulator's stricter ones: a whole number of elements, device
    memory of the stream's device (107000)."""
    dst, src = device(64), device(64)
    fn = "aclrtReduceAsync"
    expect(lib.aclrtReduceAsync(ffi.NULL, src, 16, SUM, 0, ffi.NULL, ffi.NULL), INVALID_PARAM,
           fn, "dst")
    expect(lib.aclrtReduceAsync(dst, ffi.NULL, 16, SUM, 0, ffi.NULL, ffi.NULL), INVALID_PARAM,
           fn, "src")
    expect(lib.aclrtReduceAsync(dst, src, 16, SUM, 0, ffi.NULL, dst), INVALID_PARAM, fn,
           "reserve")
    expect(lib.aclrtReduceAsync(dst, src, 16, SUM, 11, ffi.NULL, ffi.NULL), INVALID_PARAM, fn,
           "type 11")          # ACL_DOUBLE
    # the ACL layer before the runtime: a NULL dst with count 0 is the ACL layer's
    expect(lib.aclrtReduceAsync(ffi.NULL, src, 0, 99, 11, ffi.NULL, ffi.NULL), INVALID_PARAM,
           fn, "dst")
    expect(lib.aclrtReduceAsync(dst, src, 0, SUM, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
           "count is 0")
    expect(lib.aclrtReduceAsync(dst, src, 16, 9, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
           "kind 9")
    expect(lib.aclrtReduceAsync(dst, src, 5 * 2 ** 30, SUM, 0, ffi.NULL, ffi.NULL), RT_PARAM,
           fn, "4 GiB")
    if overflow_path():
        expect(lib.aclrtReduceAsync(dst, src, 16, MAX, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
               "SUM")
        expect(lib.aclrtReduceAsync(dst, src, 16, EQUAL, 0, ffi.NULL, ffi.NULL), RT_PARAM,
               fn, "SUM")
    else:
        # MAX over more than 4 GiB is no request error (the limit is the sum's): the
        # emulator's memory check refuses it
        expect(lib.aclrtReduceAsync(dst, src, 5 * 2 ** 30, MAX, 0, ffi.NULL, ffi.NULL),
               RT_PARAM, fn, "not inside one live device allocation")
        expect(lib.aclrtReduceAsync(dst, src, 16, EQUAL, 0, ffi.NULL, ffi.NULL),
               NOT_SUPPORTED, fn, "EQUAL", "docs/emulator.md")
    expect(lib.aclrtReduceAsync(dst, src, 16, SUM, 4, ffi.NULL, ffi.NULL), NOT_SUPPORTED, fn,
           "does not reduce")      # ACL_UINT8: in the ACL layer's table, on no part
    c = ffi.cast("char *", dst)
    expect(lib.aclrtReduceAsync(dst, ffi.cast("char *", src) + 2, 16, SUM, 0, ffi.NULL,
                                ffi.NULL), UNALIGNED, fn, "src")
    expect(lib.aclrtReduceAsync(c + 2, ffi.cast("char *", src) + 2, 16, SUM, 0, ffi.NULL,
                                ffi.NULL), UNALIGNED, fn, "src")    # src first
    expect(lib.aclrtReduceAsync(c + 2, src, 16, SUM, 0, ffi.NULL, ffi.NULL), UNALIGNED, fn,
           "dst")
    expect(lib.aclrtReduceAsync(dst, src, 18, SUM, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
           "whole number")
    # past the end of what the runtime allocated for 64 bytes (64 rounded up)
    past = allocated_bytes(64) + 4
    expect(lib.aclrtReduceAsync(dst, src, past, SUM, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
           "dst", "not inside one live device allocation")
    host = np.zeros(16, np.float32)
    expect(lib.aclrtReduceAsync(dst, ffi.cast("void *", host.ctypes.data), 16, SUM, 0,
                                ffi.NULL, ffi.NULL), RT_PARAM, fn, "src")


def on_a_new_thread(fn):
    """fn() on a thread of its own: one without a current device, whatever this thread's
    earlier tests set."""
    import threading
    errors = []

    def run():
        try:
            fn()
        except BaseException as e:      # reported on the test's thread
            errors.append(e)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]


def test_reduce_device_and_stream_checks_per_path():
    """Without a current device: the overflow-recording parts ask for the context before the
    stream's handle (107002 whatever the stream), the others check the handle first
    (107017) and the device after the request (107002)."""
    on_a_new_thread(reduce_without_a_device)


def reduce_without_a_device():
    fn = "aclrtReduceAsync"
    bogus = ffi.cast("aclrtStream", 0x1234)
    fake = ffi.cast("void *", 0x1000)
    if overflow_path():
        expect(lib.aclrtReduceAsync(fake, fake, 16, SUM, 0, bogus, ffi.NULL), CONTEXT_NULL, fn)
        expect(lib.aclrtReduceAsync(fake, fake, 0, SUM, 0, ffi.NULL, ffi.NULL), CONTEXT_NULL,
               fn)
    else:
        expect(lib.aclrtReduceAsync(fake, fake, 16, SUM, 0, bogus, ffi.NULL), INVALID_HANDLE,
               fn)
        expect(lib.aclrtReduceAsync(fake, fake, 0, SUM, 0, ffi.NULL, ffi.NULL), RT_PARAM, fn,
               "count is 0")
        expect(lib.aclrtReduceAsync(fake, fake, 16, SUM, 0, ffi.NULL, ffi.NULL), CONTEXT_NULL,
               fn)


# ---- aclrtRandomNumAsync ------------------------------------------------------------------

def random_supported():
    return series() in ("A2", "A3")


def set_param(slot, data=None, *, addr=None):
    """An aclrtRandomParaInfo holding the bytes `data`, or the device address `addr`."""
    if addr is not None:
        data = int(ffi.cast("uintptr_t", addr)).to_bytes(8, "little")
    slot.isAddr = 1 if addr is not None else 0
    slot.size = len(data)
    ffi.memmove(slot.valueOrAddr, data, len(data))


def task(func, dt, params, n, result, counter, seed=0, para=ffi.NULL):
    """An aclrtRandomNumTaskInfo: func's parameters (values of dtype dt, or ("addr", p)),
    n numbers (or bits) into result, the counter at `counter`."""
    ti = ffi.new("aclrtRandomNumTaskInfo *")
    ti.dataType = ACL[np.dtype(dt)]
    ti.randomNumFuncParaInfo.funcType = func
    u = ti.randomNumFuncParaInfo.paramInfo
    slots = ((u.dropoutBitmaskInfo.dropoutRation,) if func == DROPOUT
             else (u.uniformDisInfo.min, u.uniformDisInfo.max) if func == UNIFORM
             else (u.normalDisInfo.mean, u.normalDisInfo.stddev))
    for slot, value in zip(slots, params):
        if isinstance(value, tuple):
            set_param(slot, addr=value[1])
        else:
            set_param(slot, np.array([value], dtype=dt).tobytes())
    for slot, value in ((ti.randomSeed, seed), (ti.randomNum, n)):
        if isinstance(value, tuple):
            set_param(slot, addr=value[1])
        else:
            set_param(slot, int(value).to_bytes(8, "little"))
    ti.randomResultAddr = result
    ti.randomCounterAddr = counter
    ti.randomParaAddr = para
    return ti


def generate(device, func, dt, params, n, *, seed=0, counter_value=0):
    counter = device(16)
    upload(counter, np.array([counter_value, 0], np.uint64))
    nbytes = (n + 7) // 8 if func == DROPOUT else n * np.dtype(dt).itemsize
    out = device(max(nbytes, 1))
    ok(lib.aclrtRandomNumAsync(task(func, dt, params, n, out, counter, seed), ffi.NULL,
                               ffi.NULL), "aclrtRandomNumAsync")
    ok(lib.aclrtSynchronizeStream(ffi.NULL))
    if func == DROPOUT:
        return np.unpackbits(download(out, nbytes, np.uint8), bitorder="little")[:n]
    return download(out, n, dt)


# random number tasks: Atlas A2/A3 only; elsewhere such a test could never run, so it is no
# test (the refusal: test_random_refused_off_atlas_a2_a3)
needs_random = only_where(random_supported())


@only_where(not random_supported())   # the Atlas A2/A3 parts run the random number tests
def test_random_refused_off_atlas_a2_a3(dev0, device):
    """RT_FEATURE_TASK_RAND_GENERATOR is Atlas A2/A3's only: elsewhere 207000, after the ACL
    layer's checks (which have written the runtime's dtype code into the struct)."""
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, device(32), device(16))
    expect(lib.aclrtRandomNumAsync(ti, ffi.NULL, ffi.NULL), NOT_SUPPORTED,
           "aclrtRandomNumAsync", "Atlas A2/A3")
    assert ti.dataType == 6
    expect(lib.aclrtRandomNumAsync(ffi.NULL, ffi.NULL, ffi.NULL), INVALID_PARAM,
           "aclrtRandomNumAsync", "taskInfo")


@needs_random
def test_random_uniform_floats(dev0, device):
    """Uniform float32, float16 and bfloat16 numbers lie in [min, max] (max reachable by the
    rounding to a narrow dtype), spread evenly: mean and variance of the uniform within fixed
    tolerances (100000 numbers: over 8 standard errors)."""
    for dt in (np.float32, np.float16, BF16):
        v = generate(device, UNIFORM, dt, (1.0, 3.0), 100000, seed=5).astype(np.float64)
        assert v.min() >= 1.0 and v.max() <= 3.0, dt
        assert abs(v.mean() - 2.0) < 0.03 and abs(v.var() - 4 / 12) < 0.02, (dt, v.mean())
        assert abs(np.mean(v < 1.5) - 0.25) < 0.02


@needs_random
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_random_uniform_integers(dev0, device, dt):
    """Integers lie in [min, max], both ends drawn, each value about equally often."""
    lo = -50 if np.dtype(dt).kind == "i" else 1_000_000
    v = generate(device, UNIFORM, dt, (lo, lo + 99), 100000, seed=9)
    assert v.min() == lo and v.max() == lo + 99
    counts = np.bincount((v - lo).astype(np.int64), minlength=100)
    assert counts.min() > 800 and counts.max() < 1200, counts


@needs_random
@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16], ids=lambda d: np.dtype(d).name)
def test_random_normal_and_truncated(dev0, device, dt):
    """Normal numbers: mean and standard deviation as asked; about 4.55 % beyond two
    standard deviations. Truncated ones: none beyond (the standard deviation of a normal
    truncated at two: 0.8796 of the normal's)."""
    v = generate(device, NORMAL, dt, (3.0, 2.0), 100000, seed=3).astype(np.float64)
    assert abs(v.mean() - 3.0) < 0.05 and abs(v.std() - 2.0) < 0.05
    assert abs(np.mean(abs(v - 3.0) > 4.0) - 0.0455) < 0.005
    t = generate(device, TRUNCATED, dt, (1.0, 2.0), 100000, seed=3).astype(np.float64)
    assert abs(t - 1.0).max() <= 4.0 and abs(t.mean() - 1.0) < 0.05
    assert abs(t.std() - 2.0 * 0.8796) < 0.05


@needs_random
def test_random_dropout_bitmask(dev0, device):
    """A bitmask of n bits (n / 8 bytes rounded up): about dropoutRation of the bits are 0;
    the last byte's unused bits are 0 in the emulator."""
    for ratio, dt in ((0.4, np.float32), (0.1, np.float16), (0.75, BF16)):
        bits = generate(device, DROPOUT, dt, (ratio,), 400003, seed=1)
        assert abs(1 - bits.mean() - ratio) < 0.01, (ratio, bits.mean())


@needs_random
def test_random_is_deterministic_per_seed_and_counter(dev0, device):
    """The same seed and counter give the same numbers; another seed or counter others."""
    a = generate(device, UNIFORM, np.uint32, (0, 2 ** 32 - 1), 64, seed=1)
    assert np.array_equal(a, generate(device, UNIFORM, np.uint32, (0, 2 ** 32 - 1), 64, seed=1))
    assert not np.array_equal(a, generate(device, UNIFORM, np.uint32, (0, 2 ** 32 - 1), 64,
                                          seed=2))
    assert not np.array_equal(a, generate(device, UNIFORM, np.uint32, (0, 2 ** 32 - 1), 64,
                                          seed=1, counter_value=1))


@needs_random
def test_random_reads_counter_and_parameters_when_it_runs(dev0, device):
    """Stream order: the counter, a parameter and the count given by address are read when
    the task runs (a copy queued before it on the stream changes them); randomParaAddr gets
    the two 8-byte parameters at the call."""
    want = generate(device, UNIFORM, np.float32, (10.0, 20.0), 32, seed=4, counter_value=77)
    counter, low, num, out, para = device(16), device(4), device(8), device(128), device(16)
    new_counter, new_low, new_num = device(16), device(4), device(8)
    upload(counter, np.zeros(2, np.uint64))
    upload(low, np.array([-5.0], np.float32))
    upload(num, np.array([4], np.uint64))
    upload(out, np.zeros(32, np.float32))
    upload(new_counter, np.array([77, 0], np.uint64))
    upload(new_low, np.array([10.0], np.float32))
    upload(new_num, np.array([32], np.uint64))
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s))
    ok(lib.aclrtMemcpyAsync(counter, 16, new_counter, 16, 3, s[0]))
    ok(lib.aclrtMemcpyAsync(low, 4, new_low, 4, 3, s[0]))
    ok(lib.aclrtMemcpyAsync(num, 8, new_num, 8, 3, s[0]))
    ti = task(UNIFORM, np.float32, (("addr", low), 20.0), ("addr", num), out, counter, seed=4,
              para=para)
    ok(lib.aclrtRandomNumAsync(ti, s[0], ffi.NULL), "aclrtRandomNumAsync")
    params = download(para, 2, np.uint64)     # written at the call, before the task runs
    assert params[0] == int(ffi.cast("uintptr_t", low))
    assert params[1] == int(np.array([20.0], np.float32).view(np.uint32)[0])
    ok(lib.aclrtSynchronizeStream(s[0]))
    ok(lib.aclrtDestroyStream(s[0]))
    assert np.array_equal(download(out, 32, np.float32), want)
    assert list(download(counter, 2, np.uint64)) == [77, 0]   # the emulator leaves it


@needs_random
def test_random_count_read_at_run_time_must_fit(dev0, device):
    """A count read from device memory that overruns the result fails the task (507053),
    writing nothing."""
    num, out, counter = device(8), device(16), device(16)
    upload(num, np.array([1000], np.uint64))
    upload(out, np.zeros(4, np.float32))
    ti = task(UNIFORM, np.float32, (0.0, 1.0), ("addr", num), out, counter)
    ok(lib.aclrtRandomNumAsync(ti, ffi.NULL, ffi.NULL))
    assert lib.aclrtSynchronizeStream(ffi.NULL) == 507053
    assert not download(out, 4, np.float32).any()


@needs_random
def test_random_checks_in_the_vendors_order(dev0, device):
    """The ACL layer (100000: taskInfo, a dataType outside its table; then the dataType is
    overwritten with the runtime's code), the runtime (reserve, funcType, dataType for
    funcType, counter, result, seed, count, the distribution's parameters: 107000) and the
    emulator's stricter address checks (107000)."""
    fn = "aclrtRandomNumAsync"
    out, counter = device(64), device(16)

    def call(ti, reserve=ffi.NULL):
        return lib.aclrtRandomNumAsync(ti, ffi.NULL, reserve)
    expect(call(ffi.NULL), INVALID_PARAM, fn, "taskInfo is NULL")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    ti.dataType = 2      # ACL_INT8
    expect(call(ti), INVALID_PARAM, fn, "taskInfo->dataType 2")
    # the vendor's ACL layer writes its own code: ACL_INT32 (3) becomes 0, read as ACL_FLOAT
    ti = task(UNIFORM, np.int32, (0, 9), 8, out, counter)
    ok(call(ti))
    assert ti.dataType == 0
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    ok(call(ti))
    assert ti.dataType == 6                          # ACL_FLOAT becomes 6: ACL_INT16
    expect(call(ti), INVALID_PARAM, fn, "taskInfo->dataType 6")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    expect(call(ti, reserve=out), RT_PARAM, fn, "reserve")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    ti.randomNumFuncParaInfo.funcType = 4
    expect(call(ti), RT_PARAM, fn, "funcType 4")
    ti = task(NORMAL, np.int32, (0, 1), 8, out, counter)
    expect(call(ti), RT_PARAM, fn, "dataType", "NORMAL_DIS")
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, out, ffi.NULL)), RT_PARAM, fn,
           "randomCounterAddr is NULL")
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, ffi.NULL, ffi.NULL)), RT_PARAM, fn,
           "randomCounterAddr is NULL")                # the counter first
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, ffi.NULL, counter)), RT_PARAM, fn,
           "randomResultAddr is NULL")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    ti.randomSeed.isAddr = 2
    ti.randomNum.size = 0
    expect(call(ti), RT_PARAM, fn, "randomSeed.isAddr 2")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter)
    ti.randomNum.size = 9
    expect(call(ti), RT_PARAM, fn, "randomNum.size 9")
    ti = task(UNIFORM, np.float16, (0.0, 1.0), 8, out, counter)
    ti.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max.size = 4   # float16: 2 bytes
    expect(call(ti), RT_PARAM, fn, "uniformDisInfo.max.size 4")
    ti = task(NORMAL, np.float32, (0.0, 1.0), 8, out, counter)
    ti.randomNumFuncParaInfo.paramInfo.normalDisInfo.mean.isAddr = 3
    expect(call(ti), RT_PARAM, fn, "normalDisInfo.mean.isAddr 3")
    ti = task(DROPOUT, np.float32, (0.5,), 8, out, counter)
    ti.randomNumFuncParaInfo.paramInfo.dropoutBitmaskInfo.dropoutRation.size = 0
    expect(call(ti), RT_PARAM, fn, "dropoutRation.size 0")
    # an address parameter: 8 bytes of address allowed
    ok(call(task(NORMAL, np.float16, (("addr", out), 1.0), 8, out, counter)))
    # the emulator's address checks: each range inside the bytes the runtime allocated for
    # the request (64 and 16 rounded up), not one byte more
    out_end, counter_end = allocated_bytes(64), allocated_bytes(16)
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), out_end // 4 + 1, out,
                     counter)), RT_PARAM, fn, "randomResultAddr")
    ok(call(task(DROPOUT, np.float32, (0.5,), 8 * out_end, out, counter)))   # bits
    expect(call(task(DROPOUT, np.float32, (0.5,), 8 * out_end + 1, out, counter)), RT_PARAM,
           fn, "randomResultAddr")
    ok(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, out,
                 ffi.cast("char *", counter) + counter_end - 16)))        # its 16 bytes
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, out,
                     ffi.cast("char *", counter) + counter_end - 8)),
           RT_PARAM, fn, "randomCounterAddr")
    host = np.zeros(4, np.float32)
    expect(call(task(UNIFORM, np.float32, (("addr", ffi.cast("void *", host.ctypes.data)),
                                           1.0), 8, out, counter)), RT_PARAM, fn,
           "min's address")
    expect(call(task(UNIFORM, np.float32, (0.0, 1.0), 8, out, counter,
                     para=ffi.cast("char *", out) + out_end - 8)), RT_PARAM, fn,
           "randomParaAddr")
    ok(lib.aclrtSynchronizeStream(ffi.NULL))


def test_random_device_and_stream_checks():
    """After the part's feature: the stream's handle (107017), reserve (107000), then the
    current device (107002)."""
    on_a_new_thread(random_without_a_device)


def random_without_a_device():
    fn = "aclrtRandomNumAsync"
    fake = ffi.cast("void *", 0x1000)
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, fake, fake)
    if not random_supported():
        expect(lib.aclrtRandomNumAsync(ti, ffi.NULL, ffi.NULL), NOT_SUPPORTED, fn)
        return
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, fake, fake)
    expect(lib.aclrtRandomNumAsync(ti, ffi.cast("aclrtStream", 0x1234), fake), INVALID_HANDLE,
           fn)
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, fake, fake)
    expect(lib.aclrtRandomNumAsync(ti, ffi.NULL, fake), RT_PARAM, fn, "reserve")
    ti = task(UNIFORM, np.float32, (0.0, 1.0), 8, fake, fake)
    expect(lib.aclrtRandomNumAsync(ti, ffi.NULL, ffi.NULL), CONTEXT_NULL, fn)


def test_task_info_layout_is_the_vendors():
    """The struct's layout as the vendor's header lays it out (LP64): 104 bytes."""
    assert ffi.sizeof("aclrtRandomParaInfo") == 16
    assert ffi.sizeof("aclrtRandomNumFuncParaInfo") == 36
    assert ffi.sizeof("aclrtRandomNumTaskInfo") == 104
    assert ffi.offsetof("aclrtRandomNumTaskInfo", "randomParaAddr") == 40
    assert ffi.offsetof("aclrtRandomNumTaskInfo", "randomSeed") == 64
    assert ffi.offsetof("aclrtRandomNumTaskInfo", "rsv") == 96


test_on_other_parts = run_on_parts(other_parts(), "reduce or random")
