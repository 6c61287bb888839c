"""acl_py.batch_norm_elemt / acl_py.BatchNormElemt (aclnnBatchNormElemt through the declarative
operator layer) against the float64 reference for each dtype the part takes (statistics in
the input's dtype or float32), its argument errors (typed, naming the argument, nothing leaked:
the autouse leak check), its plan, and the CANN path (ASCEND_HOME_PATH=<prefix>
ACL_PY_BACKEND=cann). Every part runs it, so the file runs whole on each.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import BATCH_NORM_ELEMT

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, other_parts, run_on_parts

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)


def make(shape, dt=F32, sdt=None, affine=True, seed=0):
    """input, weight, bias (dt), mean, invstd (sdt, default dt)."""
    rng = np.random.default_rng(seed)
    c, sdt = shape[1], sdt or dt
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    w = (rng.standard_normal(c) * 0.25 + 1).astype(dt) if affine else None
    b = (rng.standard_normal(c) * 0.5).astype(dt) if affine else None
    mean = (rng.standard_normal(c) * 0.3 + 0.5).astype(sdt)
    inv = (rng.random(c) + 0.4).astype(sdt)
    return x, w, b, mean, inv


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(got, x, w, b, mean, inv, eps=1e-5):
    got = host(got)
    assert got.dtype == x.dtype and got.shape == x.shape
    e = reference.batch_norm_elemt(x, w, b, mean, inv, eps)
    m = reference.batch_norm_elemt_error_scale(x, w, b, mean, inv, eps)
    reference.assert_close(got, e, m, x.dtype, "output")


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt,sdt", bf16_where_it_runs([(F32, F32), (F16, F16), (BF16, BF16),
                                                        (F16, F32), (BF16, F32), (F32, F16)]),
                         ids=str)
def test_against_reference(path, dt, sdt):
    vals = make((3, 6, 4, 5), dt, sdt)
    args = vals if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.batch_norm_elemt(*args)
    assert isinstance(res, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
    check(res, *vals)


@pytest.mark.parametrize("shape", [(16, 3), (2, 5, 7), (1, 70, 1), (2, 3, 2, 2, 2),
                                   (2, 3, 2, 1, 2, 3, 1), (2, 2, 1, 1, 2, 1, 1, 3)], ids=str)
def test_shapes(shape):
    vals = make(shape)
    check(acl_py.batch_norm_elemt(*vals, eps=1e-3), *vals, eps=1e-3)


def test_missing_weight_and_bias_are_ones_and_zeros():
    x, _, _, mean, inv = make((3, 4, 5), F16)
    check(acl_py.batch_norm_elemt(x, None, None, mean, inv), x, None, None, mean, inv)


def test_out_given():
    vals = make((2, 8, 6))
    y = np.full((2, 8, 6), 7, F32)
    assert acl_py.batch_norm_elemt(*vals, out=(y,)) is y
    check(y, *vals)


@pytest.mark.parametrize("path", ["numpy", "device"])
def test_empty_input_writes_nothing(path):
    x = np.zeros((0, 4, 3), F32)
    vals = (x, None, None, np.zeros(4, F32), np.ones(4, F32))
    if path == "device":
        vals = tuple(None if v is None else acl_py.DeviceTensor.from_numpy(v) for v in vals)
    assert host(acl_py.batch_norm_elemt(*vals)).shape == (0, 4, 3)


ERRORS = [
    (dict(input=np.ones((2, 4, 3), np.int32)), AclTypeError, "input"),
    (dict(weight=np.ones(4, np.float64)), AclTypeError, "weight"),
    (dict(mean=[0.0] * 4), AclTypeError, "mean"),
    (dict(input=np.ones(24, F32)), AclArgumentError, "input"),
    (dict(input=np.ones((2, 0, 3), F32)), AclArgumentError, "input"),
    (dict(weight=np.ones(3, F32)), AclArgumentError, "weight"),
    (dict(bias=np.ones((4, 1), F32)), AclArgumentError, "bias"),
    (dict(invstd=np.ones(5, F32)), AclArgumentError, "invstd"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(out=()), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 12), F32),)), AclArgumentError, "out[0] (output)"),
    (dict(out=(np.empty((2, 4, 3), F16),)), AclTypeError, "out[0] (output)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x, w, b, mean, inv = make((2, 4, 3))
    case = dict(dict(input=x, weight=w, bias=b, mean=mean, invstd=inv), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.batch_norm_elemt(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnBatchNormElemtGetWorkspaceSize" not in emulator.call_counts()


def test_device_refusal_names_the_argument_and_carries_the_code():
    x, w, b, mean, inv = make((2, 4, 5))
    D = acl_py.DeviceTensor.from_numpy
    with pytest.raises(AclArgumentError) as ei:
        acl_py.batch_norm_elemt(D(x), D(w), D(b), D(mean[:3].copy()), D(inv))
    assert ei.value.argument == "mean"
    assert ei.value.code == 161002
    assert ei.value.call == "aclnnBatchNormElemtGetWorkspaceSize"
    assert "mean shape [3] must be [C]" in ei.value.message


def test_device_output_of_another_dtype_fails_the_copy():
    """An output of another dtype than input's: phase one refuses it for the op_api's copy of
    the result (561103), and the Python check names it."""
    x, w, b, mean, inv = (acl_py.DeviceTensor.from_numpy(a) for a in make((2, 4, 5)))
    y = acl_py.DeviceTensor.from_numpy(np.zeros((2, 4, 5), F16))
    with pytest.raises(AclTypeError) as ei:
        acl_py.batch_norm_elemt(x, w, b, mean, inv, out=(y,))
    assert ei.value.argument == "out[0] (output)"
    assert ei.value.code == 561103
    assert "output dtype FLOAT16 must be input's dtype FLOAT" in ei.value.message


@only_where(not acl_py.supports_bfloat16())   # the parts taking BF16 run the BF16 cases
def test_operator_rules_surface_as_its_typed_error():
    """The part's dtype list: no BF16 off Atlas A2/A3 and Ascend 950."""
    vals = make((2, 4, 3), BF16)
    with pytest.raises(AclError) as ei:
        acl_py.batch_norm_elemt(*(acl_py.DeviceTensor.from_numpy(v) for v in vals))
    assert ei.value.code == 161002
    assert "input dtype BF16 is not supported on" in ei.value.message


def test_plan_runs_repeatedly_on_changing_contents():
    vals = make((4, 16, 9), F16)
    devs = [acl_py.DeviceTensor.from_numpy(a) for a in vals]
    with acl_py.Stream() as s, acl_py.BatchNormElemt(*devs) as plan:
        assert plan.mode == "repeatable" and plan.workspace_size > 0  # the device's
        for k in range(3):
            xk = (vals[0].astype(F32) * (k + 1)).astype(F16)
            devs[0].buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.output,)
            s.synchronize()
            check(plan.output, xk, *vals[1:])
    assert plan.closed


def test_declaration_describes_the_c_prototype():
    assert [p.name for p in BATCH_NORM_ELEMT.params] == [
        "input", "weight", "bias", "mean", "invstd", "eps", "output"]
    assert [o.py for o in BATCH_NORM_ELEMT.outputs] == ["output"]
    assert BATCH_NORM_ELEMT.smoke_cases
    for case in BATCH_NORM_ELEMT.smoke_cases:
        ratios = BATCH_NORM_ELEMT.run_smoke_case(case)
        assert all(r is not None and r <= 1 for r in ratios), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 96, dtype=np.float32).reshape(2, 6, 8)
w = np.linspace(0.5, 1.5, 6, dtype=np.float32); b = np.full(6, 0.25, np.float32)
m = np.linspace(-1, 1, 6, dtype=np.float32); v = np.linspace(0.5, 2, 6, dtype=np.float32)
y = acl_py.batch_norm_elemt(x, w, b, m, v, 1e-5)
assert np.allclose(y, reference.batch_norm_elemt(x, w, b, m, v), rtol=1e-5, atol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
