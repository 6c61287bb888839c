"""acl_py.batch_norm_reduce / acl_py.BatchNormReduce (aclnnBatchNormReduce through the
declarative operator layer) against the float64 reference for each x dtype the part takes
(bfloat16 where the part has BF16: Atlas A2/A3, Ascend 950), in both layouts (x handed to
phase one as an NCHW or NHWC aclTensor: tensor(format=) and format_option in ops._declare),
the empty input's zeros, its argument errors (typed, naming the argument, nothing leaked: the
autouse leak check), its plan. Every part runs it, so the file runs whole on each.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclTypeError
from acl_py.ops import BATCH_NORM_REDUCE

from _part_runs import only_where, other_parts, run_on_parts
from _workspace_model import ARCH

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
# BF16 x where the part has BF16 (Atlas A2/A3, Ascend 950; the op_api's list has it on every
# part): a BF16 case elsewhere is no test, the children of those parts run it, and
# test_bf16_refused_where_the_part_has_none checks the refusal
HAS_BF16 = ARCH in (2201, 3510)
DTYPES = [F32, F16] + ([BF16] if HAS_BF16 else [])
CALL = "aclnnBatchNormReduceGetWorkspaceSize"


def make(shape, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2 + 0.5).astype(dt)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(got, x, data_format="NCHW"):
    """Both outputs float32 (C,) within the reference's float32-accumulation bound."""
    c = x.shape[3 if data_format == "NHWC" else 1]
    ref = reference.batch_norm_reduce(x, data_format)
    scale = reference.batch_norm_reduce_error_scale(x, data_format)
    for name, t, r, s in zip(("sum", "square_sum"), (host(t) for t in got), ref, scale):
        assert t.dtype == F32 and t.shape == (c,), (name, t.dtype, t.shape)
        reference.assert_close(t, r, s, F32, name)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_against_reference(path, dt, data_format):
    x = make((3, 6, 4, 5), dt)
    arg = x if path == "numpy" else acl_py.DeviceTensor.from_numpy(x)
    res = acl_py.batch_norm_reduce(arg, data_format)
    assert len(res) == 2
    kind = np.ndarray if path == "numpy" else acl_py.DeviceTensor
    assert all(type(r) is kind for r in res)
    check(res, x, data_format)
    if path == "device":
        arg.close()
        for r in res:
            r.close()


def test_nhwc_sums_per_channel_over_dim_3():
    """The same array as NCHW and as NHWC: other channels, other sums (the format reached
    phase one: its dim 3 is the channel)."""
    x = np.arange(2 * 3 * 4 * 5, dtype=F32).reshape(2, 3, 4, 5) / 16
    s1, q1 = acl_py.batch_norm_reduce(x, "NHWC")
    assert s1.shape == (5,)
    np.testing.assert_allclose(s1, x.astype(np.float64).sum((0, 1, 2)), rtol=1e-6)
    np.testing.assert_allclose(q1, (x.astype(np.float64) ** 2).sum((0, 1, 2)), rtol=1e-6)
    s0, _ = acl_py.batch_norm_reduce(x)
    assert s0.shape == (3,)
    np.testing.assert_allclose(s0, x.astype(np.float64).sum((0, 2, 3)), rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 70, 1, 3), (1, 3, 64, 33),
                                   (16, 4, 1, 1)], ids=str)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_shapes(shape, data_format):
    x = make(shape, seed=len(shape))
    check(acl_py.batch_norm_reduce(x, data_format=data_format), x, data_format)


def test_strided_device_input():
    """A transposed view (its descriptor in NHWC, strides kept): phase one copies it."""
    x = make((2, 5, 3, 4))
    dev = acl_py.DeviceTensor.from_numpy(x)
    view = dev.transpose(0, 2, 3, 1)     # NHWC view of NCHW memory: the same channels
    s, q = acl_py.batch_norm_reduce(view, "NHWC")
    check((s, q), x)
    for t in (s, q, view, dev):
        t.close()


def test_out_given():
    x = make((2, 8, 3, 2))
    s, q = np.full(8, 7, F32), np.full(8, 7, F32)
    got = acl_py.batch_norm_reduce(x, out=(s, q))
    assert got[0] is s and got[1] is q
    check(got, x)


def test_device_out_given():
    x = acl_py.DeviceTensor.from_numpy(make((2, 3, 4, 6)))
    s, q = acl_py.DeviceTensor.zeros((6,), F32), acl_py.DeviceTensor.zeros((6,), F32)
    got = acl_py.batch_norm_reduce(x, "NHWC", out=(s, q))
    assert got[0] is s and got[1] is q
    check(got, x.to_numpy(), "NHWC")
    for t in (x, s, q):
        t.close()


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("shape,data_format,c", [((0, 4, 3, 2), "NCHW", 4),
                                                 ((2, 3, 0, 5), "NHWC", 5),
                                                 ((3, 0, 2), "NCHW", 1)], ids=str)
def test_empty_input_gives_zeros(path, shape, data_format, c):
    """An empty x, whatever its rank: the op_api's empty branch precedes its rank check, so
    neither path refuses one (a rank-3 x gets the default (1,) outputs)."""
    x = np.zeros(shape, F32)
    arg = x if path == "numpy" else acl_py.DeviceTensor.from_numpy(x)
    res = acl_py.batch_norm_reduce(arg, data_format)
    for t in res:
        assert np.array_equal(host(t), np.zeros(c, F32))
    if path == "device":
        for t in (arg, *res):
            t.close()


ERRORS = [
    (dict(x=np.ones((2, 4, 3, 1), np.int32)), AclTypeError, "x"),
    (dict(x=[[1.0, 2.0]]), AclTypeError, "x"),
    (dict(x=np.ones((2, 4, 3), F32)), AclArgumentError, "x"),
    (dict(x=np.ones((2, 4, 3, 1, 1), F32)), AclArgumentError, "x"),
    (dict(data_format="NCDHW"), AclArgumentError, "data_format"),
    (dict(data_format="ND"), AclArgumentError, "data_format"),
    (dict(data_format=1), AclTypeError, "data_format"),
    (dict(out=()), AclArgumentError, "out"),
    (dict(out=(np.empty(3, F32), np.empty(4, F32))), AclArgumentError, "out[0] (sum)"),
    (dict(out=(np.empty(4, F32), np.empty(4, F16))), AclTypeError, "out[1] (square_sum)"),
    (dict(data_format="NHWC", out=(np.empty(4, F32), np.empty(4, F32))), AclArgumentError,
     "out[0] (sum)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    """NumPy calls: refused before any C call, naming the argument."""
    case = dict(dict(x=make((2, 4, 3, 1))), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_reduce(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert CALL not in emulator.call_counts()


def test_device_format_error_is_named_before_phase_one(emulator):
    x = acl_py.DeviceTensor.from_numpy(make((2, 4, 3, 1)))
    emulator.reset_call_counts()
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_reduce(x, data_format="nchw")
    assert ei.value.argument == "data_format" and "NCHW, NHWC" in str(ei.value)
    assert CALL not in emulator.call_counts()
    x.close()


@pytest.mark.parametrize("case", ["rank", "out", "nhwc-out"])
def test_device_refusal_names_the_argument_and_carries_the_code(case):
    """DeviceTensor calls: phase one refuses (161002), the Python checks name the argument."""
    shape = (2, 4, 5) if case == "rank" else (2, 4, 5, 3)
    x = acl_py.DeviceTensor.from_numpy(make(shape))
    outs = []
    if case != "rank":      # [4] fits NCHW's channels, not NHWC's (dim 3: 3)
        outs = [acl_py.DeviceTensor.zeros((c,), F32) for c in
                ((3, 4) if case == "out" else (4, 3))]
    fmt = "NHWC" if case == "nhwc-out" else "NCHW"
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_reduce(x, fmt, out=tuple(outs) or None)
    e = ei.value
    assert e.argument == {"rank": "x", "out": "out[0] (sum)",
                          "nhwc-out": "out[0] (sum)"}[case], e
    assert e.code == 161002 and e.call == CALL, e
    for t in (x, *outs):
        t.close()


@only_where(not HAS_BF16)
def test_bf16_refused_where_the_part_has_none():
    """The part's dtype list: BF16 x on the parts with BF16 only (phase one's code)."""
    x = acl_py.DeviceTensor.from_numpy(make((2, 4, 3, 1), BF16))
    with pytest.raises(acl_py.AclError) as ei:
        acl_py.batch_norm_reduce(x)
    assert ei.value.code == 161002 and ei.value.call == CALL
    x.close()


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_plan_runs_repeatedly_on_changing_contents(data_format):
    x = make((4, 6, 5, 8), F16)
    dev = acl_py.DeviceTensor.from_numpy(x)
    with acl_py.Stream() as s, acl_py.BatchNormReduce(dev, data_format) as plan:
        assert plan.mode == "repeatable"
        for k in range(3):
            xk = (x.astype(F32) * (k + 1) - k).astype(F16)
            dev.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.sum, plan.square_sum)
            s.synchronize()
            check((plan.sum, plan.square_sum), xk, data_format)
        # another x of the same layout: the plan's NCHW/NHWC descriptor follows it
        x2 = make((4, 6, 5, 8), F16, seed=5)
        dev2 = acl_py.DeviceTensor.from_numpy(x2)
        plan.rebind(x=dev2)
        plan.run(s)
        s.synchronize()
        check((plan.sum, plan.square_sum), x2, data_format)
    assert plan.closed
    for t in (dev, dev2, plan.sum, plan.square_sum):
        t.close()


def test_with_format_views():
    """DeviceTensor.with_format: a view of the same memory whose descriptor (and its views')
    has that aclFormat; a name outside FORMATS names the argument."""
    t = acl_py.DeviceTensor.from_numpy(make((2, 3, 4, 5)))
    v = t.with_format("NHWC")
    assert "format=NHWC" in repr(v) and "format" not in repr(t)
    assert "format=NHWC" in repr(v[...]) and "format" not in repr(t.with_format("ND"))
    assert np.array_equal(v.to_numpy(), t.to_numpy())
    with pytest.raises(AclArgumentError) as ei:
        t.with_format("NCDHW")
    assert ei.value.argument == "format"
    for x in (v, t):
        x.close()


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in BATCH_NORM_REDUCE.params] == ["x", "sum", "squareSum"]
    assert [o.py for o in BATCH_NORM_REDUCE.outputs] == ["sum", "square_sum"]
    assert BATCH_NORM_REDUCE.parts is None     # the op_api has no part check (module doc)
    assert BATCH_NORM_REDUCE.smoke_cases
    for case in BATCH_NORM_REDUCE.smoke_cases:
        ratios = BATCH_NORM_REDUCE.run_smoke_case(case)
        assert all(r is not None and r <= 1 for r in ratios), (case[0], ratios)


test_on_other_parts = run_on_parts(other_parts(), "not on_other_parts")
