"""DeviceBuffer.reduce_from (aclrtReduceAsync) and fill_uniform / fill_normal /
fill_dropout_mask (aclrtRandomNumAsync): results against float64 references or the known
shape of the distributions, typed errors naming the argument, the part's refusals with the
runtime's status. The whole file runs on every kind of part."""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py.errors import (AclArgumentError, AclTypeError, InvalidParameterError,
                           NotSupportedError)

from _part_runs import only_where, other_parts, run_on_parts


def series():
    family = acl_py.soc.short_soc_version(acl_py.soc_name())
    return {"Ascend910": "training", "Ascend310P": "inference", "Ascend910B": "A2/A3",
            "Ascend910_93": "A2/A3", "Ascend950": "950"}[family]


def buffer(values):
    values = np.ascontiguousarray(values)
    b = acl_py.DeviceBuffer(values.nbytes)
    b.copy_from_host(values)
    return b


def read(b, n, dtype):
    return b.copy_to_host(np.zeros(n, dtype))


def test_reduce_from_sums_into_the_buffer():
    """The vendor sample's sum, on every part, synchronous without a stream and queued on
    one; float32, its one rounding per element."""
    x = np.array([1, 2, 3, 4], np.float32)
    dst, src = buffer(x), buffer(x)
    dst.reduce_from(src)
    assert list(read(dst, 4, np.float32)) == [2, 4, 6, 8]
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(
        np.float32) * 1e-3
    dst, src = buffer(a), buffer(b)
    with acl_py.Stream() as s:
        dst.reduce_from(src, "sum", stream=s, nbytes=2000, offset=2000, src_offset=0)
        s.synchronize()
    want = a.copy()
    want[500:] = (a[500:].astype(np.float64) + b[:500]).astype(np.float32)
    assert read(dst, 1000, np.float32).tobytes() == want.tobytes()


@pytest.mark.parametrize("op", ["max", acl_py.ReduceOp.MIN])
def test_reduce_from_max_min_where_the_part_has_them(op):
    a, b = np.array([1, -5, 3, 7], np.int32), np.array([2, -6, 3, 0], np.int32)
    dst, src = buffer(a), buffer(b)
    if series() in ("training", "inference"):
        # the overflow-recording reduce of these parts sums only (api_error.cc)
        with pytest.raises(InvalidParameterError) as e:
            dst.reduce_from(src, op, "int32")
        assert e.value.code == 107000 and e.value.call == "aclrtReduceAsync"
        return
    dst.reduce_from(src, op, "int32")
    want = np.maximum(a, b) if op == "max" else np.minimum(a, b)
    assert np.array_equal(read(dst, 4, np.int32), want)


def test_reduce_from_float16_and_the_parts_refusals():
    """float16: the exact sum rounded once (2048 + 1.0009765625: 2050); the Atlas training
    series reduces float32 only (NotSupportedError, 207000); EQUAL is refused everywhere."""
    a = np.array([2048, 2048], np.float16)
    b = np.array([1, 1.0009765625], np.float16)
    dst, src = buffer(a), buffer(b)
    if series() == "training":
        with pytest.raises(NotSupportedError) as e:
            dst.reduce_from(src, dtype="float16")
        assert e.value.code == 207000
    else:
        dst.reduce_from(src, dtype="float16")
        assert list(read(dst, 2, np.float16)) == [2048, 2050]
    with pytest.raises((NotSupportedError, InvalidParameterError)) as e:
        dst.reduce_from(src, acl_py.ReduceOp.EQUAL, "float16")
    assert e.value.code in (207000, 107000)


def test_reduce_from_argument_errors():
    dst, src = acl_py.DeviceBuffer(64), acl_py.DeviceBuffer(64)
    cases = [
        (dict(src=np.zeros(4)), AclTypeError, "src"),
        (dict(src=src, op="prod"), AclArgumentError, "op"),
        (dict(src=src, dtype="float64"), AclTypeError, "dtype"),
        (dict(src=src, dtype="uint64"), AclTypeError, "dtype"),
        (dict(src=src, nbytes=6), AclArgumentError, "nbytes"),
        (dict(src=src, nbytes=128), AclArgumentError, "nbytes"),
        (dict(src=src, nbytes=8, offset=2), AclArgumentError, "offset"),
        (dict(src=src, nbytes=8, src_offset=3, dtype="float16"), AclArgumentError,
         "src_offset"),
        (dict(src=src, stream="s"), AclTypeError, "stream"),
    ]
    for kwargs, cls, argument in cases:
        with pytest.raises(cls) as e:
            dst.reduce_from(**kwargs)
        assert e.value.argument == argument, (kwargs, e.value)
    src.close()
    with pytest.raises(ValueError, match="closed"):
        dst.reduce_from(src)


# ---- random numbers ---------------------------------------------------------------------

def random_supported():
    return series() == "A2/A3"


@pytest.fixture
def counter():
    c = acl_py.DeviceBuffer(16)
    c.memset(0)
    yield c
    c.close()


@only_where(not random_supported())   # the Atlas A2/A3 parts run the random number tests
def test_random_fills_refused_off_atlas_a2_a3(counter):
    out = acl_py.DeviceBuffer(64)
    with pytest.raises(NotSupportedError) as e:
        out.fill_uniform(0.0, 1.0, seed=1, counter=counter)
    assert e.value.code == 207000 and e.value.call == "aclrtRandomNumAsync"


# random number tasks: Atlas A2/A3 only; elsewhere such a test could never run, so it is no
# test (the refusal: test_random_fills_refused_off_atlas_a2_a3)
needs_random = only_where(random_supported())


@needs_random
def test_fill_uniform_normal_and_mask(counter):
    """Ranges and the distributions' shape within fixed tolerances (100000 numbers); the
    same seed and counter, the same numbers; a stream queues the task."""
    out = acl_py.DeviceBuffer(4 * 100000)
    out.fill_uniform(-1.0, 1.0, seed=11, counter=counter)
    u = read(out, 100000, np.float32).astype(np.float64)
    assert u.min() >= -1 and u.max() <= 1 and abs(u.mean()) < 0.02
    assert abs(u.var() - 1 / 3) < 0.02
    again = acl_py.DeviceBuffer(4 * 100000)
    with acl_py.Stream() as s:
        again.fill_uniform(-1.0, 1.0, "float32", seed=11, counter=counter, stream=s)
        s.synchronize()
    assert np.array_equal(read(again, 100000, np.float32), u.astype(np.float32))
    out.fill_uniform(0, 9, "int64", seed=2, counter=counter)
    i = read(out, 50000, np.int64)
    assert i.min() == 0 and i.max() == 9 and np.bincount(i).min() > 4000
    out.fill_normal(5.0, 0.5, "bfloat16", seed=3, counter=counter)
    n = read(out, 200000, acl_py.dtypes.bfloat16()).astype(np.float64)
    assert abs(n.mean() - 5.0) < 0.02 and abs(n.std() - 0.5) < 0.02
    out.fill_normal(0.0, 1.0, "float16", 1000, truncated=True, seed=3, counter=counter)
    t = read(out, 1000, np.float16).astype(np.float64)
    assert abs(t).max() <= 2.0 and t.std() > 0.7
    out.fill_dropout_mask(0.25, 80000, seed=4, counter=counter)
    bits = np.unpackbits(read(out, 10000, np.uint8))
    assert abs(1 - bits.mean() - 0.25) < 0.01


@needs_random
def test_random_argument_errors(counter):
    out = acl_py.DeviceBuffer(64)
    small = acl_py.DeviceBuffer(8)
    cases = [
        (out.fill_uniform, (0.0, 1.0), dict(seed=-1, counter=counter), AclArgumentError, "seed"),
        (out.fill_uniform, (0.0, 1.0), dict(seed=2 ** 64, counter=counter), AclArgumentError,
         "seed"),
        (out.fill_uniform, (0.0, 1.0), dict(seed=1, counter=np.zeros(2)), AclTypeError,
         "counter"),
        (out.fill_uniform, (0.0, 1.0), dict(seed=1, counter=small), AclArgumentError,
         "counter"),
        (out.fill_uniform, (0, 2 ** 40, "int32"), dict(seed=1, counter=counter),
         AclArgumentError, "high"),
        (out.fill_uniform, (0.5, 1, "int32"), dict(seed=1, counter=counter), AclArgumentError,
         "low"),
        (out.fill_uniform, ("0", 1.0), dict(seed=1, counter=counter), AclTypeError, "low"),
        (out.fill_uniform, (0.0, 1e6, "float16"), dict(seed=1, counter=counter),
         AclArgumentError, "high"),
        (out.fill_uniform, (0, 1, "int8"), dict(seed=1, counter=counter), AclTypeError,
         "dtype"),
        (out.fill_uniform, (0.0, 1.0, "float32", 17), dict(seed=1, counter=counter),
         AclArgumentError, "count"),
        (out.fill_normal, (0.0, 1.0, "int32"), dict(seed=1, counter=counter), AclTypeError,
         "dtype"),
        (out.fill_normal, (0.0, float("nan")), dict(seed=1, counter=counter),
         AclArgumentError, "std"),
        (out.fill_dropout_mask, (1.5,), dict(seed=1, counter=counter), AclArgumentError,
         "ratio"),
        (out.fill_dropout_mask, (0.5, 513), dict(seed=1, counter=counter), AclArgumentError,
         "bits"),
        (out.fill_dropout_mask, (0.5,), dict(seed=1, counter=counter, ratio_dtype="int32"),
         AclTypeError, "ratio_dtype"),
    ]
    for method, args, kwargs, cls, argument in cases:
        with pytest.raises(cls) as e:
            method(*args, **kwargs)
        assert e.value.argument == argument, (method.__name__, args, e.value)


test_on_other_parts = run_on_parts(other_parts(), "reduce or random or fill")
