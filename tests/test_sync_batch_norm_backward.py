"""acl_py.batch_norm_reduce_backward / BatchNormReduceBackward and
acl_py.batch_norm_elemt_backward / BatchNormElemtBackward (aclnnBatchNormReduceBackward and
aclnnBatchNormElemtBackward, SyncBatchNorm's backward, through the declarative operator layer)
against their float64 references for each dtype the part takes; the two chained over "ranks"
(the reduce's sums all-reduced in NumPy) against plain BatchNorm's backward over the whole batch
(acl_py.reference.batch_norm_backward and acl_py.batch_norm_backward); their argument errors
(typed, naming the argument, nothing leaked: the autouse leak check), their plans, and the CANN
path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann). Every part runs it (the Atlas inference
series, where the operators are refused, checks the refusal), so the file runs whole on each.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM_ELEMT_BACKWARD, BATCH_NORM_REDUCE_BACKWARD, part_of

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, other_parts, run_on_parts, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
I32 = np.dtype(np.int32)
ALL = (True, True, True)
INFERENCE = part_of().npu_arch == 2002


# The operators' calls that launch: refused on the Atlas inference series (test_inference_series
# checks it), so a test of their results is defined only where both have a kernel (the other
# parts run it, their own run or their child)
where_they_run = only_where(runs_here(BATCH_NORM_REDUCE_BACKWARD)
                            and runs_here(BATCH_NORM_ELEMT_BACKWARD))


def statistics(x):
    """The batch's mean and invstd (eps 1e-5) over every dim but the channel's, float32."""
    rows = np.moveaxis(x.astype(np.float64), 1, 0).reshape(x.shape[1], -1)
    return (rows.mean(axis=1).astype(F32),
            (1 / np.sqrt(rows.var(axis=1) + 1e-5)).astype(F32))


def make(shape, dt=F32, seed=0, affine=True):
    """grad_out, input (dt), mean, invstd (the batch's, float32), weight (dt or None)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    dy = rng.standard_normal(shape).astype(dt)
    mean, invstd = statistics(x)
    w = (rng.standard_normal(shape[1]) * 0.25 + 1).astype(dt) if affine else None
    return dy, x, mean, invstd, w


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check_reduce(results, dy, x, mean, invstd, w, flags=ALL):
    """The default dtypes: the sums mean's, grad_weight and grad_bias weight's (mean's
    without one); each output the float32 result cast to it."""
    exp = reference.batch_norm_reduce_backward(dy, x, mean, invstd, w, *flags)
    mag = reference.batch_norm_reduce_backward_error_scale(dy, x, mean, invstd, w, *flags)
    names = ("sum_dy", "sum_dy_xmu", "grad_weight", "grad_bias")
    pdt = mean.dtype if w is None else w.dtype
    for got, e, m, odt, name in zip(results, exp, mag, (mean.dtype,) * 2 + (pdt,) * 2, names):
        assert (got is None) == (e is None), name
        if got is not None:
            got = host(got)
            assert got.dtype == odt and got.shape == e.shape, (name, got.dtype, got.shape)
            reference.assert_close(got, e, m, F32, name)


def check_elemt(results, *args):
    (got,) = results
    got = host(got)
    (e,) = reference.batch_norm_elemt_backward(*args)
    (m,) = reference.batch_norm_elemt_backward_error_scale(*args)
    assert got.dtype == args[1].dtype and got.shape == e.shape
    reference.assert_close(got, e, m, args[1].dtype, "grad_input")


# ---- numbers -----------------------------------------------------------------------------------

@where_they_run
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_reduce_against_reference(path, dt):
    vals = make((3, 6, 4, 5), dt)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.batch_norm_reduce_backward(*args)
    assert len(res) == 4
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check_reduce(res, *vals)


@where_they_run
@pytest.mark.parametrize("flags", [(True, False, False), (False, True, True),
                                   (False, False, False)], ids=str)
def test_reduce_flags(flags):
    vals = make((2, 8, 6), F16)
    res = acl_py.batch_norm_reduce_backward(*vals, *flags)
    assert [r is not None for r in res] == [flags[0], flags[0], flags[1], flags[2]]
    check_reduce(res, *vals, flags=flags)


@where_they_run
def test_reduce_output_dtypes():
    """The sums default to mean's dtype, grad_weight/grad_bias to weight's (mean's without
    one); given outputs of another float dtype take the cast result."""
    dy, x, mean, invstd, w = make((2, 5, 7), F16)
    res = acl_py.batch_norm_reduce_backward(dy, x, mean.astype(F16), invstd, w)
    assert [r.dtype for r in res] == [F16, F16, F16, F16]
    res = acl_py.batch_norm_reduce_backward(dy, x, mean, invstd)
    assert [r.dtype for r in res] == [F32] * 4
    out = (np.zeros(5, F16), None, None, np.zeros(5, F16))
    res = acl_py.batch_norm_reduce_backward(dy, x, mean, invstd, w, out=out)
    assert res[0] is out[0] and res[3] is out[3] and res[1].dtype == F32


@where_they_run
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]), ids=lambda d: d.name)
def test_elemt_against_reference(path, dt):
    dy, x, mean, invstd, w = make((3, 6, 4, 5), dt)
    rng = np.random.default_rng(1)
    sdy, sdyx = (rng.standard_normal(6) * 20).astype(F32), (rng.standard_normal(6) * 20
                                                            ).astype(F32)
    counter = np.array([60, 60, 60, 60], I32)
    vals = (dy, x, mean, invstd, w, sdy, sdyx, counter)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.batch_norm_elemt_backward(*args)
    assert len(res) == 1
    assert isinstance(res[0], np.ndarray if path == "numpy" else acl_py.DeviceTensor)
    check_elemt(res, *vals)


@where_they_run
def test_elemt_float16_throughout():
    """Every floating input float16: the device computes in float16 (the means rounded to
    it), within the reference's float16 tolerance."""
    dy, x, mean, invstd, w = make((4, 5, 6), F16)
    sdy, sdyx = np.float16([3, -2, 1, 0.5, 7]), np.float16([-4, 2, 9, 1, -1])
    vals = (dy, x, mean.astype(F16), invstd.astype(F16), w, sdy, sdyx, np.float16([24, 24]))
    check_elemt(acl_py.batch_norm_elemt_backward(*vals), *vals)


@where_they_run
@pytest.mark.parametrize("ranks", [1, 3])
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
def test_sync_chain_is_batch_norm_backward(ranks, dt):
    """SyncBatchNorm's backward over ranks: each rank's reduce, the sums and counts summed in
    NumPy (the all-reduce), each rank's elemt; the ranks' grad_input together, and the summed
    grad_weight/grad_bias, are plain BatchNorm's backward over the whole batch: against its
    float64 reference, and close to acl_py.batch_norm_backward's."""
    dy, x, mean, invstd, w = make((4 * ranks, 5, 6), dt, seed=ranks)
    parts = [(dy[k::ranks], x[k::ranks]) for k in range(ranks)]
    # float32 sums and gradients (grad_weight/grad_bias default to weight's dtype)
    sums = [acl_py.batch_norm_reduce_backward(d, xx, mean, invstd, w,
                                              out=(None, None, np.empty(5, F32),
                                                   np.empty(5, F32))) for d, xx in parts]
    sum_dy = np.sum([s[0] for s in sums], axis=0, dtype=F32)
    sum_dy_xmu = np.sum([s[1] for s in sums], axis=0, dtype=F32)
    grad_weight = np.sum([s[2] for s in sums], axis=0, dtype=F32)
    grad_bias = np.sum([s[3] for s in sums], axis=0, dtype=F32)
    counter = np.array([d.size // 5 for d, _ in parts], I32)
    grad_input = np.empty_like(dy)
    for k, (d, xx) in enumerate(parts):
        (grad_input[k::ranks],) = acl_py.batch_norm_elemt_backward(d, xx, mean, invstd, w,
                                                                   sum_dy, sum_dy_xmu, counter)
    args = (dy, x, w, None, None, mean, invstd, True, 1e-5)
    exp = reference.batch_norm_backward(*args)
    mag = reference.batch_norm_backward_error_scale(*args)
    for got, e, m, name in zip((grad_input, grad_weight, grad_bias), exp, mag,
                               ("grad_input", "grad_weight", "grad_bias")):
        reference.assert_close(got, e, m, dt, name, rtol=1e-5 * (1 + ranks))
    if part_of().npu_arch == 3510:   # save_invstd there is the rstd itself, as here
        plain = acl_py.batch_norm_backward(dy, x, w, None, None, mean, invstd)
        tol = 1e-4 if dt == F32 else 4e-3
        for got, p in zip((grad_input, grad_weight, grad_bias), plain):
            assert np.allclose(got.astype(F32), p.astype(F32), rtol=tol, atol=tol)


@where_they_run
def test_empty_input():
    """N 0: the reduce fills zeros on Ascend 950 and writes nothing elsewhere (None there);
    the elemt writes nothing."""
    x = np.zeros((0, 4, 3), F32)
    v = np.ones(4, F32)
    out = tuple(np.full(4, 5, F32) for _ in range(4))
    res = acl_py.batch_norm_reduce_backward(x, x, v, v, out=out)
    if part_of().npu_arch == 3510:
        assert all(r is o and (o == 0).all() for r, o in zip(res, out))
    else:
        assert res == (None,) * 4 and all((o == 5).all() for o in out)
    (gi,) = acl_py.batch_norm_elemt_backward(x, x, v, v, None, v, v, np.ones(2, I32))
    assert gi.shape == (0, 4, 3)


# ---- errors --------------------------------------------------------------------------------------

REDUCE_ERRORS = [
    (dict(input=np.ones((2, 4, 3), F16)), AclTypeError, "input"),
    (dict(mean=np.ones(4, np.int32)), AclTypeError, "mean"),
    (dict(weight=[1.0] * 4), AclTypeError, "weight"),
    (dict(input=np.ones(24, F32), grad_out=np.ones(24, F32)), AclArgumentError, "input"),
    (dict(input=np.ones((2, 0, 3), F32), grad_out=np.ones((2, 0, 3), F32)), AclArgumentError,
     "input"),
    (dict(grad_out=np.ones((2, 4, 4), F32)), AclArgumentError, "grad_out"),
    (dict(invstd=np.ones(3, F32)), AclArgumentError, "invstd"),
    (dict(weight=np.ones((4, 1), F32)), AclArgumentError, "weight"),
    (dict(input_g=1), AclTypeError, "input_g"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty(5, F32), None, None, None)), AclArgumentError, "out[0] (sum_dy)"),
    (dict(out=(None, None, np.empty(4, np.int32), None)), AclTypeError, "out[2] (grad_weight)"),
]


@pytest.mark.parametrize("change,exc,argument", REDUCE_ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a)
                              in enumerate(REDUCE_ERRORS)])
def test_reduce_argument_errors(emulator, change, exc, argument):
    dy, x, mean, invstd, w = make((2, 4, 3))
    case = dict(dict(grad_out=dy, input=x, mean=mean, invstd=invstd, weight=w), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_reduce_backward(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormReduceBackwardGetWorkspaceSize" not in emulator.call_counts()


def elemt_case(**change):
    dy, x, mean, invstd, w = make((2, 4, 3))
    base = dict(grad_out=dy, input=x, mean=mean, invstd=invstd, weight=w, sum_dy=mean,
                sum_dy_xmu=invstd, counter=np.array([6, 6], I32))
    return dict(base, **change)


ELEMT_ERRORS = [
    (dict(grad_out=np.ones((2, 4, 3), np.int32)), AclTypeError, "grad_out"),
    (dict(counter=np.ones(2, np.int64)), AclTypeError, "counter"),
    (dict(sum_dy=np.ones(4, np.float64)), AclTypeError, "sum_dy"),
    (dict(input=np.ones((4,), F32)), AclArgumentError, "input"),
    (dict(grad_out=np.ones((2, 4, 2), F32)), AclArgumentError, "grad_out"),
    (dict(sum_dy_xmu=np.ones(5, F32)), AclArgumentError, "sum_dy_xmu"),
    (dict(weight=np.ones(3, F32)), AclArgumentError, "weight"),
    (dict(counter=np.ones((1,) * 9, I32)), AclArgumentError, "counter"),
    (dict(out=(np.empty((2, 4, 4), F32),)), AclArgumentError, "out[0] (grad_input)"),
]


@pytest.mark.parametrize("change,exc,argument", ELEMT_ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a)
                              in enumerate(ELEMT_ERRORS)])
def test_elemt_argument_errors(emulator, change, exc, argument):
    out = change.pop("out", None)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_elemt_backward(**elemt_case(**change), out=out)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormElemtBackwardGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    """A DeviceTensor call: phase one refuses (the stricter [C] rule for mean), then the
    Python check names the argument."""
    D = acl_py.DeviceTensor.from_numpy
    dy, x, mean, invstd, w = make((2, 4, 5))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_reduce_backward(D(dy), D(x), D(mean[:3].copy()), D(invstd))
    assert ei.value.argument == "mean" and ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormReduceBackwardGetWorkspaceSize"
    assert "mean shape [3] must be [C]" in ei.value.message
    case = elemt_case(sum_dy=np.ones(2, F32))
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_elemt_backward(*(D(v) for v in case.values()))
    assert ei.value.argument == "sum_dy" and ei.value.code == 161002
    assert "sumDy shape [2] must be [C]" in ei.value.message


def test_part_rules_surface_as_the_typed_error():
    """bfloat16 off Atlas A2/A3 and Ascend 950 (161002); the Atlas inference series (561003)."""
    dy, x, mean, invstd, w = make((2, 4, 3), BF16)
    if part_of().npu_arch in (2201, 3510):
        check_reduce(acl_py.batch_norm_reduce_backward(dy, x, mean, invstd, w), dy, x, mean,
                     invstd, w)
        return
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_reduce_backward(dy, x, mean, invstd, w)
    assert ei.value.code == 161002
    assert "gradOut dtype BF16 is not supported on" in ei.value.message


def test_inference_series():
    """The docs list the Atlas inference series as unsupported: a launching call is refused
    there with 561003 (the declarations' parts leave it out); elsewhere both run."""
    for op in (BATCH_NORM_REDUCE_BACKWARD, BATCH_NORM_ELEMT_BACKWARD):
        assert op.runs_on(acl_py.soc_name()) is not INFERENCE
    if not INFERENCE:
        return
    dy, x, mean, invstd, w = make((2, 4, 3))
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_reduce_backward(dy, x, mean, invstd, w)
    assert ei.value.code == 561003
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_elemt_backward(**elemt_case())
    assert ei.value.code == 561003


# ---- plans, declarations, the CANN path ----------------------------------------------------------

@where_they_run
def test_plans_run_repeatedly_on_changing_contents():
    dy, x, mean, invstd, w = make((4, 16, 9), F16)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in (dy, x, mean, invstd, w)]
    counter = np.array([36, 36], I32)
    with acl_py.Stream() as s, acl_py.BatchNormReduceBackward(*devs) as red:
        assert red.mode == "repeatable" and red.workspace_size > 0  # the device's
        ins = devs[:4] + [devs[4], red.sum_dy, red.sum_dy_xmu,
                          acl_py.DeviceTensor.from_numpy(counter)]
        with acl_py.BatchNormElemtBackward(*ins) as el:
            for k in range(3):
                dyk = (dy.astype(F32) * (k + 1)).astype(F16)
                devs[0].buffer.copy_from_host(dyk)
                assert red.run(s) == (red.sum_dy, red.sum_dy_xmu, red.grad_weight,
                                      red.grad_bias)
                assert el.run(s) == (el.grad_input,)
                s.synchronize()
                check_reduce(red.outputs, dyk, x, mean, invstd, w)
                check_elemt(el.outputs, dyk, x, mean, invstd, w, red.sum_dy.to_numpy(),
                            red.sum_dy_xmu.to_numpy(), counter)
        ins[-1].close()
    assert red.closed and el.closed


def test_declarations_describe_the_c_prototypes():
    assert [p.name for p in BATCH_NORM_REDUCE_BACKWARD.params] == [
        "gradOut", "input", "mean", "invstd", "weight", "inputG", "weightG", "biasG", "sumDy",
        "sumDyXmu", "gradWeight", "gradBias"]
    assert [o.py for o in BATCH_NORM_REDUCE_BACKWARD.outputs] == [
        "sum_dy", "sum_dy_xmu", "grad_weight", "grad_bias"]
    assert [p.name for p in BATCH_NORM_ELEMT_BACKWARD.params] == [
        "gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter",
        "gradInput"]
    assert [a.py for a in BATCH_NORM_ELEMT_BACKWARD.inputs] == [
        "grad_out", "input", "mean", "invstd", "weight", "sum_dy", "sum_dy_xmu", "counter"]
    if INFERENCE:
        return
    for op in (BATCH_NORM_REDUCE_BACKWARD, BATCH_NORM_ELEMT_BACKWARD):
        assert op.smoke_cases
        for case in op.smoke_cases:
            ratios = op.run_smoke_case(case)
            assert all(r <= 1 for r in ratios if r is not None), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8); dy = np.sin(3 * x)
m = np.full(6, 0.25, np.float32); r = np.full(6, 2.0, np.float32)
s = acl_py.batch_norm_reduce_backward(dy, x, m, r)
e = reference.batch_norm_reduce_backward(dy, x, m, r)
assert all(np.allclose(a, b, rtol=1e-5, atol=1e-4) for a, b in zip(s, e))
c = np.array([16], np.int32)
(g,) = acl_py.batch_norm_elemt_backward(dy, x, m, r, None, s[0], s[1], c)
(h,) = reference.batch_norm_elemt_backward(dy, x, m, r, None, s[0], s[1], c)
assert np.allclose(g, h, rtol=1e-5, atol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
