"""acl_py.fast_layer_norm / acl_py.FastLayerNorm (aclnnFastLayerNorm through the declarative
operator layer) against the float64 reference (acl_py.reference.layer_norm: the same
arithmetic as aclnnLayerNorm), its argument errors (naming the argument, nothing leaked: the
autouse leak check), its out= rules (out of input's dtype; mean/rstd in the kernel's shape),
its plan, and the CANN path (ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann). A whole-file run
on a part without a kernel for every dtype (the Atlas training and inference series) checks
the refusal and the declaration only.
"""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import FAST_LAYER_NORM, LAYER_NORM

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, other_parts, run_on_parts, runs_here
from test_layer_norm import BF16, F16, F32, HALF, check, dev, host, make


@only_where(runs_here(FAST_LAYER_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt,pdt,weight,bias",
                         bf16_where_it_runs([(dt, p, w, b) for dt in (F32, F16, BF16)
                                             for p in (None, F32)
                                             for w, b in ((True, True), (True, False),
                                                          (False, True), (False, False))
                                             if not (p is F32 and not (w or b))]))
def test_against_reference(path, dt, pdt, weight, bias):
    case = make((3, 5, 67), 1, dt, pdt, weight, bias)
    args = case if path == "numpy" else dev(case)
    res = acl_py.fast_layer_norm(**args, eps=1e-4)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, case, eps=1e-4)
    assert host(res[1]).shape == (3, 5, 1)


@only_where(runs_here(FAST_LAYER_NORM))
@pytest.mark.parametrize("shape,nrank", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((4096, 33), 1)])
def test_ranks_and_splits(shape, nrank):
    case = make(shape, nrank)
    check(acl_py.fast_layer_norm(**case), case)


@only_where(runs_here(FAST_LAYER_NORM))
def test_same_results_as_layer_norm_with_float32_parameters():
    """The same kernel: with float32 weight and bias (float32 statistics in both), the bits
    of acl_py.layer_norm."""
    for dt in (F32, HALF):
        case = make((6, 40, 96), 1, dt, F32)
        for a, b in zip(acl_py.fast_layer_norm(**case), acl_py.layer_norm(**case)):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@only_where(runs_here(FAST_LAYER_NORM))
def test_out_given_numpy_and_device():
    case = make((4, 6, 32), 1)
    out = (np.empty((4, 6, 32), F32), np.empty((4, 6, 1), F16), np.empty((4, 6, 1), F32))
    res = acl_py.fast_layer_norm(**case, out=out)
    assert all(r is o for r, o in zip(res, out))
    check(res, case, dtypes=(F32, F16, F32))
    d = dev(case)
    o = (acl_py.DeviceTensor.empty((4, 6, 32)), None, acl_py.DeviceTensor.empty((4, 6, 1), HALF))
    res = acl_py.fast_layer_norm(**d, out=o)
    assert res[0] is o[0] and res[2] is o[2] and res[1].shape == (4, 6, 1)
    check(res, case, dtypes=(F32, F32, HALF))
    # one row: any one-element shape (the copy takes one element each)
    one = make((1, 16), 1)
    res = acl_py.fast_layer_norm(**one, out=(None, np.empty((1,), F32), np.empty((), F32)))
    check((res[0], res[1].reshape(1, 1), res[2].reshape(1, 1)), one)


def test_empty():
    res = acl_py.fast_layer_norm(np.zeros((0, 4), F32), 4)
    assert [r.shape for r in res] == [(0, 4), (0, 1), (0, 1)]
    out, mean, rstd = acl_py.fast_layer_norm(np.zeros((3, 0), F32), (0,),
                                             out=(None, np.empty(3, F32), None))
    assert out.shape == (3, 0) and (mean == 0).all() and np.isnan(rstd).all()


# ---- argument errors name the argument -------------------------------------------------------

ERRORS = [
    # (change, exception, argument named)
    (dict(input=np.ones((2, 4), np.float64)), AclTypeError, "input"),
    (dict(normalized_shape=(5,)), AclArgumentError, "normalized_shape"),
    (dict(weight=np.ones(4, F16)), AclTypeError, "weight"),
    (dict(bias=np.ones(5, F32)), AclArgumentError, "bias"),
    (dict(out=(np.empty((2, 4), F16), None, None)), AclTypeError, "out[0] (out)"),
    (dict(out=(None, np.empty(2, F32), None)), AclArgumentError, "out[1] (mean)"),
    (dict(out=(None, None, np.empty((1, 2), F32))), AclArgumentError, "out[2] (rstd)"),
    (dict(out=(None, None, np.empty((2, 1), np.int32))), AclTypeError, "out[2] (rstd)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}" for _c, e, a in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    case = dict(make((2, 4), 1), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.fast_layer_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnFastLayerNormGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(FAST_LAYER_NORM))
@pytest.mark.parametrize("out,argument", [
    ((acl_py.DeviceTensor.empty, (2, 4), F16), "out[0] (out)"),
    ((acl_py.DeviceTensor.empty, (2,), F32), "out[1] (mean)"),
])
def test_device_refusals_name_the_argument(out, argument):
    """A DeviceTensor call is checked by phase one: its 561103 (the copy of a result) runs
    the Python checks, which name the argument; the error carries phase one's code."""
    d = dev(make((2, 4), 1))
    make_tensor, shape, dt = out
    given = [None, None, None]
    given[0 if argument.startswith("out[0]") else 1] = make_tensor(shape, dt)
    with pytest.raises((AclArgumentError, AclTypeError)) as ei:
        acl_py.fast_layer_norm(**d, out=tuple(given))
    assert ei.value.argument == argument
    assert ei.value.code == 561103 and ei.value.call == "aclnnFastLayerNormGetWorkspaceSize"


def test_operator_limits_surface_as_its_typed_error():
    case = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.fast_layer_norm(**case)
    assert ei.value.code == 161002 and ei.value.call == "aclnnFastLayerNormGetWorkspaceSize"
    assert "rank" in ei.value.message


@only_where(not runs_here(FAST_LAYER_NORM))   # the parts with a kernel run the cases
def test_parts_without_a_kernel_refuse():
    """On a part where FAST_LAYER_NORM.runs_on is false the call is refused (561003, the
    emulator's stricter rule: the docs support Atlas A2/A3 only)."""
    with pytest.raises(AclError) as ei:
        acl_py.fast_layer_norm(**make((3, 100), 1))
    assert ei.value.code == 561003 and "not supported on" in ei.value.message


def test_parts_with_a_kernel():
    """Atlas A2/A3 (the docs' parts) and Ascend 950 (the code's); not the Atlas training
    series (no kernel) nor Atlas inference parts (short float16 rows only)."""
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend950PR_9599", None):
        assert FAST_LAYER_NORM.runs_on(soc)
    for soc in ("Ascend910A", "Ascend910B", "Ascend310P3"):
        assert not FAST_LAYER_NORM.runs_on(soc)


# ---- the plan ----------------------------------------------------------------------------------

@only_where(runs_here(FAST_LAYER_NORM))
def test_plan_runs_repeatedly_on_changing_contents():
    case = make((8, 96), 1, HALF, F32)
    d = dev(case)
    with acl_py.Stream() as s, acl_py.FastLayerNorm(**d, eps=1e-3) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            x = (case["input"].astype(F32) * (k + 1)).astype(HALF)
            d["input"].buffer.copy_from_host(x)
            assert plan.run(s) == (plan.out, plan.mean, plan.rstd)
            s.synchronize()
            check(plan.outputs, dict(case, input=x), eps=1e-3)
    assert plan.closed


# ---- the declaration -------------------------------------------------------------------------

def test_declaration_describes_the_c_prototype():
    assert [p.name for p in FAST_LAYER_NORM.params] == [p.name for p in LAYER_NORM.params]
    assert [o.py for o in FAST_LAYER_NORM.outputs] == ["out", "mean", "rstd"]
    assert "aclnnFastLayerNormGetWorkspaceSize(aclTensor input" in FAST_LAYER_NORM.signature()


@only_where(runs_here(FAST_LAYER_NORM))
def test_smoke_cases_pass():
    assert len(FAST_LAYER_NORM.smoke_cases) >= 4
    for case in FAST_LAYER_NORM.smoke_cases:
        ratios = FAST_LAYER_NORM.run_smoke_case(case)
        assert len(ratios) == 3 and all(r <= 1 for r in ratios), (case[0], ratios)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16)
out, mean, rstd = acl_py.fast_layer_norm(x, [16])
e = reference.layer_norm(x, [16])
assert np.allclose(out, e[0], rtol=1e-5, atol=1e-5) and np.allclose(mean, e[1], atol=1e-6)
assert np.allclose(rstd, e[2], rtol=1e-5)
""")


test_on_other_parts = run_on_parts(other_parts(), "not cann_path")
