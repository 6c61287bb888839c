"""acl_py.add_rms_norm / acl_py.AddRmsNorm (aclnnAddRmsNorm through the declarative operator
layer) against the float64 reference for every dtype the vendor's docs allow, its argument
errors (typed, naming the argument, nothing leaked: the autouse leak check), its plan, and the
CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_RMS_NORM, part_of

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = [F32, F16, BF16]


def make(shape, gdims, dt=F32, seed=0):
    rng = np.random.default_rng(seed)
    x1 = (rng.standard_normal(shape) * 2 + 0.5).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (rng.standard_normal(shape[len(shape) - gdims:]) * 0.5 + 1).astype(dt)
    return x1, x2, g


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, x1, x2, g, eps=1e-6):
    exp = reference.add_rms_norm(x1, x2, g, eps)
    mag = reference.add_rms_norm_error_scale(x1, x2, g, eps)
    why = ADD_RMS_NORM.unwritten_outputs((x1, x2, g, eps))
    for got, e, m, dt, name, w in zip(results, exp, mag, (x1.dtype, F32, x1.dtype),
                                      ("y", "rstd", "x"), why):
        if w is not None:
            assert got is None, (name, w)   # the part does not write it (the declaration)
            continue
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x1.dtype, name)


@only_where(runs_here(ADD_RMS_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt", bf16_where_it_runs(DTYPES), ids=lambda d: d.name)
def test_against_reference(path, dt):
    x1, x2, g = make((3, 5, 67), 1, dt)
    args = (x1, x2, g) if path == "numpy" else tuple(acl_py.DeviceTensor.from_numpy(a)
                                                     for a in (x1, x2, g))
    res = acl_py.add_rms_norm(*args, 1e-4)
    assert len(res) == 3
    why = ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-4))
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               if w is None else r is None for r, w in zip(res, why))
    check(res, x1, x2, g, 1e-4)
    if why[1] is None:
        assert host(res[1]).shape == (3, 5, 1)   # rstd as CANN writes it: batch dims, then ones


@only_where(runs_here(ADD_RMS_NORM))
@pytest.mark.parametrize("shape,gdims", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((1, 2, 1, 2, 1, 2, 1, 2), 3), ((256, 4096), 1)])
def test_ranks_and_splits(shape, gdims):
    x1, x2, g = make(shape, gdims)
    check(acl_py.add_rms_norm(x1, x2, g), x1, x2, g)


@only_where(runs_here(ADD_RMS_NORM))
def test_x_is_the_rounded_sum_and_feeds_the_norm():
    """x = x1 + x2 rounded once to x1's dtype; y is RmsNorm of it (float16: the device adds
    in float16 and norms that sum; Ascend 950 norms the float sum), within the reference's
    bounds."""
    x1, x2, g = make((8, 256), 1, F16, seed=4)
    y, rstd, x = acl_py.add_rms_norm(x1, x2, g)
    assert np.array_equal(x.view(np.uint16), (x1 + x2).view(np.uint16))
    ry, rr = acl_py.rms_norm(x, g)   # RmsNorm of that x, same chain save the rounding order
    if part_of().npu_arch == 3510:
        # Ascend 950's kernel norms the float sum (exact: FLOAT16 + FLOAT16 fits in float)
        s = x1.astype(np.float64) + x2.astype(np.float64)
        assert np.allclose(rstd, 1 / np.sqrt((s * s).mean(axis=-1, keepdims=True) + 1e-6),
                           rtol=1e-5)
    elif ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-6))[1] is None:
        assert np.allclose(rstd, rr, rtol=1e-6)
    else:   # rstd not written on this part: y shows the same norm
        assert rstd is None
        assert np.allclose(y.astype(F32), ry.astype(F32), rtol=2e-3, atol=2e-3)


@only_where(runs_here(ADD_RMS_NORM))
def test_out_given_and_strided_views():
    x1, x2, g = make((4, 6, 32), 1, F16)
    out = (np.empty((4, 6, 32), F16), np.empty((4, 6, 1), F32), np.empty((4, 6, 32), F16))
    res = acl_py.add_rms_norm(x1, x2, g, out=out)
    why = ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-6))
    assert all(r is o if w is None else r is None for r, o, w in zip(res, out, why))
    check(res, x1, x2, g)
    big1 = acl_py.DeviceTensor.from_numpy(np.repeat(x1, 2, axis=2))
    big2 = acl_py.DeviceTensor.from_numpy(np.repeat(x2, 2, axis=2))
    res = acl_py.add_rms_norm(big1[:, :, ::2], big2[:, :, 1::2],
                              acl_py.DeviceTensor.from_numpy(g))
    check(res, x1, x2, g)


def test_empty_rows():
    y, rstd, x = acl_py.add_rms_norm(np.zeros((0, 4), F32), np.zeros((0, 4), F32),
                                     np.ones(4, F32))
    assert y.shape == x.shape == (0, 4)
    if ADD_RMS_NORM.unwritten_outputs((y, y, np.ones(4, F32), 1e-6))[1] is None:
        assert rstd.shape == (0, 1)
    else:
        assert rstd is None


ERRORS = [
    (dict(x1=[[1.0, 2.0]]), AclTypeError, "x1"),
    (dict(x1=np.ones((2, 4), np.float64)), AclTypeError, "x1"),
    (dict(x2=np.ones((2, 4), F16)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F32)), AclArgumentError, "x2"),
    (dict(x2=None), AclTypeError, "x2"),
    (dict(gamma=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((3, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(epsilon=-1e-6), AclArgumentError, "epsilon"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None)), AclArgumentError, "out[0] (y)"),
    (dict(out=(None, np.empty(2, F32), None)), AclArgumentError, "out[1] (rstd)"),
    (dict(out=(None, np.empty((2, 1), F16), None)), AclTypeError, "out[1] (rstd)"),
    (dict(out=(np.empty((2, 4), F16), None, None)), AclTypeError, "out[0] (y)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}" for _c, e, a in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    x1, x2, g = make((2, 4), 1)
    case = dict(dict(x1=x1, x2=x2, gamma=g), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_rms_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnAddRmsNormGetWorkspaceSize" not in emulator.call_counts()


def test_out_of_another_dtype_is_refused_naming_it(emulator):
    """An out= entry of an allowed dtype other than x1's (the operator's dtype rule): the
    NumPy call refuses it before any C call, naming the entry; on device tensors phase one
    refuses it (161002) and the error names the entry too."""
    x1, x2, g = make((2, 4), 1)
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_rms_norm(x1, x2, g, out=(None, None, np.empty((2, 4), F16)))
    assert ei.value.argument == "out[2] (x)" and ei.value.code is None
    assert "aclnnAddRmsNormGetWorkspaceSize" not in emulator.call_counts()
    X1, X2, G = (acl_py.DeviceTensor.from_numpy(v) for v in (x1, x2, g))
    with acl_py.DeviceTensor.empty((2, 4), F16) as X:
        with pytest.raises(AclTypeError) as ei:
            acl_py.add_rms_norm(X1, X2, G, out=(None, None, X))
    assert ei.value.argument == "out[2] (x)"
    assert ei.value.code == 161002 and ei.value.call == "aclnnAddRmsNormGetWorkspaceSize"
    assert "xOut dtype FLOAT16 must be yOut's dtype FLOAT" in ei.value.message


@pytest.mark.parametrize("what", ["gamma", "rstd"])
def test_device_refusal_names_the_argument_and_carries_the_code(what):
    """Phase one's 561103 (the tiling's gamma rule, the copy into rstdOut) on a DeviceTensor
    call: the Python checks then name the argument."""
    x1, x2, g = make((2, 4), 1)
    X1, X2 = acl_py.DeviceTensor.from_numpy(x1), acl_py.DeviceTensor.from_numpy(x2)
    G = acl_py.DeviceTensor.from_numpy(g[:3].copy() if what == "gamma" else g)
    out = (None, acl_py.DeviceTensor.empty((2,), F32), None) if what == "rstd" else None
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_rms_norm(X1, X2, G, out=out)
    assert ei.value.argument == ("gamma" if what == "gamma" else "out[1] (rstd)")
    if what == "rstd" and ADD_RMS_NORM.unwritten_outputs((x1, x2, g, 1e-6))[1] is not None:
        # the part does not write rstd: the device never sees that tensor, the Python check
        # of the out= entry refuses it
        assert ei.value.code is None
        return
    assert ei.value.code == 561103 and ei.value.call == "aclnnAddRmsNormGetWorkspaceSize"


def test_operator_rules_surface_as_its_typed_error():
    x1, x2, g = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.add_rms_norm(x1, x2, g)
    assert ei.value.code == 161002 and ei.value.call == "aclnnAddRmsNormGetWorkspaceSize"
    assert "x1 rank 10" in ei.value.message


@only_where(runs_here(ADD_RMS_NORM))
def test_plan_runs_repeatedly_on_changing_contents():
    x1, x2, g = make((8, 96), 1, F16)
    X1, X2, G = (acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g))
    with acl_py.Stream() as s, acl_py.AddRmsNorm(X1, X2, G, 1e-5) as plan:
        # a device-sized workspace (its size: test_emulator_workspace_size_rms.py)
        assert plan.mode == "repeatable" and plan.workspace_size > 1 << 20
        for k in range(3):
            xk = (x1.astype(F32) * (k + 1)).astype(F16)
            X1.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.y, plan.rstd, plan.x)
            s.synchronize()
            check(plan.outputs, xk, x2, g, 1e-5)
    assert plan.closed
    assert plan.x.to_numpy().shape == (8, 96)


@only_where(runs_here(ADD_RMS_NORM))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_RMS_NORM.params] == ["x1", "x2", "gamma", "epsilon", "yOut",
                                                     "rstdOut", "xOut"]
    assert [a.py for a in ADD_RMS_NORM.inputs] == ["x1", "x2", "gamma", "epsilon"]
    assert [o.py for o in ADD_RMS_NORM.outputs] == ["y", "rstd", "x"]
    assert ADD_RMS_NORM.smoke_cases
    for case in ADD_RMS_NORM.smoke_cases:
        ratios = ADD_RMS_NORM.run_smoke_case(case)
        why = ADD_RMS_NORM.unwritten_outputs(case[1]())
        assert len(ratios) == 3 and all(r <= 1 if w is None else r is None
                                        for r, w in zip(ratios, why)), (case[0], ratios)


def test_parts_with_a_kernel():
    """The vendor's definition registers no kernel for the Atlas training series nor Atlas
    200I/500 A2: acl-py smoke leaves the operator out there."""
    assert not ADD_RMS_NORM.runs_on("Ascend910A") and not ADD_RMS_NORM.runs_on("Ascend910B")
    assert not ADD_RMS_NORM.runs_on("Ascend310B1")
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend310P3", "Ascend950PR_9599", None):
        assert ADD_RMS_NORM.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); x2 = np.cos(x1)
g = np.full(16, 0.5, np.float32)
y, rstd, x = acl_py.add_rms_norm(x1, x2, g)
e = reference.add_rms_norm(x1, x2, g)
assert np.allclose(y, e[0], rtol=1e-5) and np.allclose(rstd, e[1], rtol=1e-5)
assert np.array_equal(x, x1 + x2)
""")
