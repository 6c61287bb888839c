"""acl_py.instance_norm / acl_py.InstanceNorm (aclnnInstanceNorm through the declarative
operator layer) against the float64 reference for each dtype and data format, its outputs
given or made, an empty x, its argument errors (typed, naming the argument, the status code
where phase one refused, nothing leaked: the autouse leak check), its plan, the refusal on
the parts without the operator, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). The operator runs on the Atlas inference series only: this file's
Ascend310P3 run checks it, every other part its refusal.
"""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclTypeError, OperatorParameterError
from acl_py.ops import INSTANCE_NORM

from _cann_path import run_on_cann_path
from _part_runs import only_where, other_parts, run_on_parts
from _part_runs import runs_here as has_kernel

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
# the operator's cases exist only on the Atlas inference parts, its only kernel (CheckPlatform):
# elsewhere they could never run, so they are no tests there (the refusal is the test)
runs_here = only_where(has_kernel(INSTANCE_NORM))


def make(shape, dt=F32, data_format="NCHW", seed=0):
    rng = np.random.default_rng(seed)
    c = shape[3] if data_format.startswith("NHWC") else shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    g = (rng.standard_normal(c) * 0.25 + 1).astype(dt)
    b = (rng.standard_normal(c) * 0.5).astype(dt)
    return x, g, b


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x, g, b, data_format="NCHW", eps=1e-5):
    exp = reference.instance_norm(x, g, b, data_format, eps)
    mag = reference.instance_norm_error_scale(x, g, b, data_format, eps)
    for got, e, m, name in zip(results, exp, mag, ("y", "mean", "variance")):
        got = host(got)
        assert got.dtype == x.dtype, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x.dtype, name)


@runs_here
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
def test_against_reference(path, data_format, dt):
    shape = (2, 16, 3, 7) if data_format == "NCHW" else (2, 3, 7, 16)
    vals = make(shape, dt, data_format)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.instance_norm(*args, data_format)
    assert len(res) == 3
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    stats = (2, 16, 1, 1) if data_format == "NCHW" else (2, 1, 1, 16)
    assert host(res[1]).shape == stats and host(res[2]).shape == stats
    check(res, *vals, data_format)


@runs_here
def test_defaults_and_the_vendor_prefix_rule():
    """data_format defaults to NCHW, eps to 1e-5; a longer string beginning with NHWC is
    NHWC (the op_api compares four characters)."""
    vals = make((1, 8, 4, 4))
    check(acl_py.instance_norm(*vals), *vals)
    vals = make((1, 4, 4, 8), data_format="NHWC")
    check(acl_py.instance_norm(*vals, "NHWC_channels_last", eps=1e-3), *vals, "NHWC", 1e-3)


@runs_here
def test_out_given():
    vals = make((2, 8, 3, 4))
    y, m, v = np.full((2, 8, 3, 4), 7, F32), np.full((2, 8, 1, 1), 7, F32), \
        np.full((2, 8, 1, 1), 7, F32)
    res = acl_py.instance_norm(*vals, out=(y, m, v))
    assert res[0] is y and res[1] is m and res[2] is v
    check(res, *vals)


@runs_here
@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_x_writes_nothing(path):
    """H 0: the op_api returns before the kernel: mean and variance are None in the result
    and given ones keep their contents."""
    x = np.zeros((2, 8, 0, 4), F32)
    g = np.ones(8, F32)
    vals, out = (x, g, g), (None, np.full((2, 8, 1, 1), 5, F32), np.full((2, 8, 1, 1), 5, F32))
    if path == "device":
        vals = tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
        out = tuple(None if o is None else acl_py.DeviceTensor.from_numpy(o) for o in out)
    res = acl_py.instance_norm(*vals, out=out)
    assert host(res[0]).shape == (2, 8, 0, 4) and res[1:] == (None, None)
    assert (host(out[1]) == 5).all() and (host(out[2]) == 5).all()


EMPTY_ENTRIES = ((2, 8, 0, 4), (0, 8, 1, 1), (2, 8, 1, 0))   # y, mean, variance


@runs_here
@pytest.mark.parametrize("path", ["numpy", "device", "plan"])
@pytest.mark.parametrize("k", range(3), ids=("y", "mean", "variance"))
def test_an_empty_out_entry_leaves_the_other_outputs_unwritten(path, k):
    """Any of the six tensors empty returns before the kernel (aclnn_instance_norm.cpp's
    hasEmptyTensor return; the vendor's op_api unit test's empty_y/mean/variance cases), x
    holding values or not: out[k] given empty, the other two outputs are not written,
    returned as None, their given entries left as they were (a NumPy call copies nothing
    back into them); the empty entry is returned as it is."""
    x, g, b = make((2, 8, 4, 4))
    shapes = [(2, 8, 4, 4), (2, 8, 1, 1), (2, 8, 1, 1)]
    out = [np.full(s, 5, F32) for s in shapes]
    out[k] = np.zeros(EMPTY_ENTRIES[k], F32)
    vals = (x, g, b)
    if path != "numpy":
        vals = tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
        out = [acl_py.DeviceTensor.from_numpy(o) for o in out]
    why = INSTANCE_NORM.unwritten_outputs((x, g, b, "NCHW", 1e-5),
                                          out=[np.empty(o.shape, F32) for o in out])
    assert [w is None for w in why] == [j == k for j in range(3)], why
    assert all(f"empty {('y', 'mean', 'variance')[k]}" in w for w in why if w is not None)
    if path == "plan":
        with acl_py.Stream() as s, acl_py.InstanceNorm(*vals, out=tuple(out)) as plan:
            plan.run(s)
            s.synchronize()
            res = plan.outputs
    else:
        res = acl_py.instance_norm(*vals, out=tuple(out))
    for j in range(3):
        if j == k:
            assert res[j] is out[j]
        else:
            assert res[j] is None, (j, res[j])
            assert (host(out[j]) == 5).all()


ERRORS = [
    (dict(x=np.ones((2, 8, 4, 4), np.float64)), AclTypeError, "x"),
    (dict(gamma=np.ones(8, F16)), AclTypeError, "gamma"),
    (dict(beta=[0.0] * 8), AclTypeError, "beta"),
    (dict(data_format=b"NCHW"), AclTypeError, "data_format"),
    (dict(data_format="NCWH"), AclArgumentError, "data_format"),
    (dict(data_format="NC\0HW"), AclTypeError, "data_format"),
    (dict(x=np.ones((2, 8, 16), F32)), AclArgumentError, "x"),
    (dict(gamma=np.ones(4, F32)), AclArgumentError, "gamma"),
    (dict(beta=np.ones((8, 1), F32)), AclArgumentError, "beta"),
    (dict(x=np.ones((2, 7, 4, 4), F32), gamma=np.ones(7, F32), beta=np.ones(7, F32)),
     AclArgumentError, "x"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 8, 16), F32), None, None)), AclArgumentError, "out[0] (y)"),
    (dict(out=(None, np.empty((2, 8), F32), None)), AclArgumentError, "out[1] (mean)"),
    (dict(out=(None, None, np.empty((2, 8, 1, 1), F16))), AclTypeError,
     "out[2] (variance)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    """NumPy calls: every Python check before any C call, on every part."""
    x, g, b = make((2, 8, 4, 4))
    case = dict(dict(x=x, gamma=g, beta=b), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.instance_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnInstanceNormGetWorkspaceSize" not in emulator.call_counts()


DEVICE_REFUSALS = [
    (dict(gamma=np.ones(4, F32)), "gamma", 161002, "gamma shape [4] must be [C]"),
    (dict(x=np.ones((2, 8, 16), F32)), "x", 161002, "x rank 3"),
    (dict(x=np.ones((2, 7, 4, 4), F32), gamma=np.ones(7, F32), beta=np.ones(7, F32)), "x",
     561103, "C axis of 7 FLOAT values"),
    (dict(out=(np.empty((2, 8, 16), F32), None, None)), "out[0] (y)", 561103, "y shape"),
]


@runs_here
@pytest.mark.parametrize("change,argument,code,words", DEVICE_REFUSALS,
                         ids=[c[1] + str(c[2]) for c in DEVICE_REFUSALS])
def test_device_refusal_names_the_argument_and_carries_the_code(change, argument, code, words):
    x, g, b = make((2, 8, 4, 4))
    out = change.pop("out", None)
    case = dict(dict(x=x, gamma=g, beta=b), **change)
    D = acl_py.DeviceTensor.from_numpy
    case = {k: D(v) for k, v in case.items()}
    out = None if out is None else tuple(None if o is None else D(o) for o in out)
    with pytest.raises(AclArgumentError) as ei:
        acl_py.instance_norm(**case, out=out)
    assert ei.value.argument == argument
    assert ei.value.code == code
    assert ei.value.call == "aclnnInstanceNormGetWorkspaceSize"
    assert words in ei.value.message, ei.value.message


@only_where(not has_kernel(INSTANCE_NORM))   # the part with the kernel runs the operator
def test_other_parts_refuse_the_operator():
    """CheckPlatform: anything but an Atlas inference part refuses phase one (161002), which
    the Python checks cannot explain: the operator's typed error."""
    vals = tuple(acl_py.DeviceTensor.from_numpy(a) for a in make((2, 8, 4, 4)))
    with pytest.raises(OperatorParameterError) as ei:
        acl_py.instance_norm(*vals)
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnInstanceNormGetWorkspaceSize"
    assert "Atlas inference series" in ei.value.message


def test_the_two_phase_layer_passes_the_format_as_a_c_string():
    """``Operator.launch`` (the samples' path) takes dataFormat as a str or bytes, which phase
    one reads (its dataFormat check comes before the part's, so every part answers); any other
    kind, or a NUL inside, is a typed error naming the C parameter, before any call."""
    D = acl_py.DeviceTensor.from_numpy
    x, g, b = (D(a) for a in make((2, 8, 4, 4)))
    outs = (D(np.zeros((2, 8, 4, 4), F32)), D(np.zeros((2, 8, 1, 1), F32)),
            D(np.zeros((2, 8, 1, 1), F32)))
    for fmt in ("NCWH", b"NCWH"):
        with pytest.raises(OperatorParameterError) as ei:
            INSTANCE_NORM.launch((x, g, b, fmt, 1e-5, *outs), device=0)
        assert ei.value.code == 161002 and 'dataFormat "NCWH"' in ei.value.message
    for fmt in (5, "NC\0HW"):
        with pytest.raises(AclTypeError) as ei:
            INSTANCE_NORM.launch((x, g, b, fmt, 1e-5, *outs), device=0)
        assert ei.value.argument == "dataFormat"


@runs_here
def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((4, 16, 5, 6), F16)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.InstanceNorm(*devs, "NCHW", 1e-4) as plan:
        assert plan.mode == "repeatable" and plan.workspace_size == 0
        for k in range(3):
            xk = (vals[0].astype(F32) * (k + 1) - k).astype(F16)
            devs[0].buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.y, plan.mean, plan.variance)
            s.synchronize()
            check(plan.outputs, xk, *vals[1:], eps=1e-4)
    assert plan.closed


@runs_here
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in INSTANCE_NORM.params] == [
        "x", "gamma", "beta", "dataFormat", "eps", "y", "mean", "variance"]
    assert [a.py for a in INSTANCE_NORM.inputs] == ["x", "gamma", "beta", "data_format", "eps"]
    assert [o.py for o in INSTANCE_NORM.outputs] == ["y", "mean", "variance"]
    assert INSTANCE_NORM.smoke_cases
    for case in INSTANCE_NORM.smoke_cases:
        ratios = INSTANCE_NORM.run_smoke_case(case)
        assert all(r is not None and r <= 1 for r in ratios), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann (the install's default part, Atlas A2,
    no ACL_EMU_* variable): bound like any CANN install, no aclemu symbol touched; dataFormat
    reaches phase one as a C string (its own refusal comes before the part's)."""
    run_on_cann_path(emulator, """
from acl_py.errors import OperatorParameterError
D = acl_py.DeviceTensor.from_numpy
x = D(np.ones((2, 4, 4, 8), np.float32)); g = D(np.ones(8, np.float32))
for fmt, words in (("NCWH", "dataFormat \\"NCWH\\" must begin"),
                   ("NHWC", "Atlas inference series")):
    try:
        acl_py.instance_norm(x, g, g, fmt)
    except (OperatorParameterError, acl_py.AclArgumentError) as e:
        assert e.code == 161002 and words in e.message, e.message
    else:
        raise AssertionError("accepted")
""")


# the Atlas inference part runs every test but the CANN path's (whose child takes the
# install's default part); the others their refusal
test_on_other_parts = run_on_parts(other_parts(), lambda part: (
    "not test_on_other_parts and not cann_path and not other_parts_refuse"
    if part.startswith("Ascend310P") else
    "other_parts_refuse"))
