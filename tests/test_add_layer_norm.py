"""acl_py.add_layer_norm / acl_py.AddLayerNorm (aclnnAddLayerNorm through the declarative
operator layer) against the float64 reference for the vendor's dtype combinations, with and
without a bias of either shape, its argument errors (typed, naming the argument, nothing
leaked: the autouse leak check), the additional-output flag, its plan, and the CANN path
(ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclError, AclTypeError
from acl_py.ops import ADD_LAYER_NORM, part_of

from _cann_path import run_on_cann_path
from _part_runs import bf16_where_it_runs, only_where, other_parts, run_on_parts, runs_here

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
# (x1, x2, gamma = beta): the Atlas A2/A3 combinations of the vendor's docs; bias and y are
# x1's dtype when x2 has it, else float32
COMBOS = [(F32, F32, F32), (F16, F16, F16), (BF16, BF16, BF16), (F16, F16, F32),
          (BF16, BF16, F32), (F32, F16, F32), (F32, BF16, F32), (F16, F32, F32),
          (BF16, F32, F32)]


def make(shape, gdims, combo=(F32, F32, F32), bias=None, seed=0):
    rng = np.random.default_rng(seed)
    x1dt, x2dt, gdt = combo
    out = x1dt if x1dt == x2dt else F32
    x1 = (rng.standard_normal(shape) * 2 + 0.5).astype(x1dt)
    x2 = rng.standard_normal(shape).astype(x2dt)
    gs = shape[len(shape) - gdims:]
    g = (rng.standard_normal(gs) * 0.5 + 1).astype(gdt)
    b = (rng.standard_normal(gs) * 0.2).astype(gdt)
    bi = None if bias is None else rng.standard_normal(gs if bias == "gamma" else shape
                                                       ).astype(out)
    return x1, x2, g, b, bi


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def unwritten(x1, x2, g, b, bias=None, eps=1e-5):
    """Per output, why the part does not write it (the declaration), None where it does."""
    return ADD_LAYER_NORM.unwritten_outputs((x1, x2, g, b, bias, eps, True))


def check(results, x1, x2, g, b, bias=None, eps=1e-5):
    exp = reference.add_layer_norm(x1, x2, g, b, bias, eps)
    mag = reference.add_layer_norm_error_scale(x1, x2, g, b, bias, eps)
    out = x1.dtype if x1.dtype == x2.dtype else F32
    for got, e, m, dt, name, why in zip(results, exp, mag, (out, F32, F32, out),
                                        ("y", "mean", "rstd", "x"), unwritten(x1, x2, g, b)):
        if why is not None:
            assert got is None, (name, why)   # the part does not write it: None, said so
            continue
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        assert got.shape == e.shape, (name, got.shape, e.shape)
        reference.assert_close(got, e, m, x1.dtype, name)


def part_has(combo):
    """Whether this process's part takes the dtype combination (Atlas inference parts: one
    dtype for every tensor, and no BF16)."""
    return not (part_of().inference and len(set(combo)) > 1)


# the combinations this process's part takes (one dtype for every tensor on the Atlas inference
# parts: ops-nn norm/add_layer_norm/op_host/add_layer_norm_def.cpp, config_310p; no BF16 where
# the part has none): another is no test here (the refusal: test_emulator_add_layer_norm's
# test_part_dtype_table), and the parts taking it run it
COMBOS_HERE = [c for c in bf16_where_it_runs(COMBOS) if part_has(c)]


def on_this_part(combo):
    """``combo``, or x1's dtype for every tensor where the part takes only that."""
    return combo if part_has(combo) else (combo[0],) * 3


@only_where(runs_here(ADD_LAYER_NORM))
@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("bias", [None, "gamma", "x1"])
@pytest.mark.parametrize("combo", COMBOS_HERE, ids=lambda c: "-".join(d.name for d in c))
def test_against_reference(path, bias, combo):
    vals = make((3, 5, 67), 1, combo, bias)
    args = vals if path == "numpy" else tuple(
        None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in vals)
    res = acl_py.add_layer_norm(*args, 1e-4)
    assert len(res) == 4
    why = unwritten(*vals, 1e-4)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               if w is None else r is None for r, w in zip(res, why))
    check(res, *vals, 1e-4)
    if why[1] is None:
        assert host(res[1]).shape == (3, 5, 1)   # mean as CANN writes it: batch dims, ones


@only_where(runs_here(ADD_LAYER_NORM))
@pytest.mark.parametrize("shape,gdims", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((1, 2, 1, 2, 1, 2, 1, 2), 3), ((256, 4096), 1)])
def test_ranks_and_splits(shape, gdims):
    vals = make(shape, gdims, bias="gamma")
    check(acl_py.add_layer_norm(*vals), *vals)


@only_where(runs_here(ADD_LAYER_NORM))
def test_x_is_the_rounded_sum_and_only_with_additional_output():
    x1, x2, g, b, bias = make((8, 256), 1, (F16, F16, F16), "x1", seed=4)
    y, mean, rstd, x = acl_py.add_layer_norm(x1, x2, g, b, bias)
    want = (x1.astype(F32) + x2.astype(F32) + bias.astype(F32)).astype(F16)
    assert np.array_equal(x.view(np.uint16), want.view(np.uint16))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g, b, bias)]
    X = acl_py.DeviceTensor.from_numpy(np.full((8, 256), 7.0, F16))
    y2, mean2, rstd2, x2out = acl_py.add_layer_norm(*dev, 1e-5, False,
                                                    out=(None, None, None, X))
    assert x2out is None and (X.to_numpy() == 7.0).all()   # not written, and said so
    assert np.array_equal(host(y2).view(np.uint16), y.view(np.uint16))


@only_where(runs_here(ADD_LAYER_NORM))
def test_out_given_and_strided_views():
    x1, x2, g, b, bias = make((4, 6, 32), 1, on_this_part((F16, F16, F32)), "gamma")
    out = (np.empty((4, 6, 32), F16), np.empty((4, 6, 1), F32), np.empty((4, 6, 1), F32),
           np.empty((4, 6, 32), F16))
    res = acl_py.add_layer_norm(x1, x2, g, b, bias, out=out)
    assert all(r is o if w is None else r is None
               for r, o, w in zip(res, out, unwritten(x1, x2, g, b, bias)))
    check(res, x1, x2, g, b, bias)
    big1 = acl_py.DeviceTensor.from_numpy(np.repeat(x1, 2, axis=2))
    big2 = acl_py.DeviceTensor.from_numpy(np.repeat(x2, 2, axis=2))
    dev = [acl_py.DeviceTensor.from_numpy(a) for a in (g, b, bias)]
    res = acl_py.add_layer_norm(big1[:, :, ::2], big2[:, :, 1::2], *dev)
    check(res, x1, x2, g, b, bias)


@only_where(runs_here(ADD_LAYER_NORM))
def test_empty_rows():
    vals = (np.zeros((0, 4), F32), np.zeros((0, 4), F32), np.ones(4, F32), np.zeros(4, F32))
    y, mean, rstd, x = acl_py.add_layer_norm(*vals)
    assert y.shape == x.shape == (0, 4)
    if unwritten(*vals)[1] is None:
        assert mean.shape == rstd.shape == (0, 1)
    else:
        assert mean is None and rstd is None


def test_no_columns_the_reference_is_the_devices():
    """Rows of no columns (x1 [4, 0], gamma []): Ascend 950 runs them (its reduce-empty
    kernel: mean and rstd NaN) and the float64 reference agrees; every other part with a
    kernel refuses them (561002), the reference still giving the statistics 950 writes."""
    z, g = np.zeros((4, 0), F32), np.zeros(0, F32)
    want = reference.add_layer_norm(z, z, g, g)
    assert [w.shape for w in want] == [(4, 0), (4, 1), (4, 1), (4, 0)]
    assert np.isnan(want[1]).all() and np.isnan(want[2]).all()
    soc = acl_py.soc_name()
    if not ADD_LAYER_NORM.runs_on(soc):
        return
    if not soc.startswith("Ascend950"):
        with pytest.raises(AclError) as ei:
            acl_py.add_layer_norm(z, z, g, g)
        assert ei.value.code == 561002
        return
    got = acl_py.add_layer_norm(z, z, g, g)
    for r, w in zip(got, want):
        assert r.shape == w.shape and np.array_equal(r, w, equal_nan=True)
    Z, G = acl_py.DeviceTensor.from_numpy(z), acl_py.DeviceTensor.from_numpy(g)
    try:
        got = acl_py.add_layer_norm(Z, Z, G, G)
        for r, w in zip(got, want):
            assert np.array_equal(r.to_numpy(), w, equal_nan=True)
            r.close()
    finally:
        Z.close()
        G.close()


test_no_columns_on_ascend950 = run_on_parts(other_parts(("Ascend950PR_9599",)),
                                            "the_reference_is_the_devices")


ERRORS = [
    (dict(x1=[[1.0, 2.0]]), AclTypeError, "x1"),
    (dict(x1=np.ones((2, 4), np.float64)), AclTypeError, "x1"),
    (dict(x1=np.ones((2, 4), F16), gamma=np.ones(4, F16), beta=np.ones(4, F16)),
     AclTypeError, "gamma"),   # x1 and x2 of different dtypes: gamma must be float32
    (dict(x1=np.ones((2, 4), F16), x2=np.ones((2, 4), BF16)), AclTypeError, "x2"),
    (dict(x2=np.ones((2, 5), F32)), AclArgumentError, "x2"),
    (dict(x2=None), AclTypeError, "x2"),
    (dict(gamma=np.ones(5, F32), beta=np.ones(5, F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones((3, 4), F32), beta=np.ones((3, 4), F32)), AclArgumentError, "gamma"),
    (dict(gamma=np.ones(4, F16)), AclTypeError, "gamma"),
    (dict(beta=np.ones(4, F16)), AclTypeError, "beta"),
    (dict(beta=np.ones((1, 4), F32)), AclArgumentError, "beta"),
    (dict(bias=np.ones(3, F32)), AclArgumentError, "bias"),
    (dict(bias=np.ones((1, 4), F32)), AclArgumentError, "bias"),
    (dict(bias=np.ones(4, F16)), AclTypeError, "bias"),
    (dict(bias=[1.0, 2.0, 3.0, 4.0]), AclTypeError, "bias"),
    (dict(epsilon="small"), AclTypeError, "epsilon"),
    (dict(additional_output=1), AclTypeError, "additional_output"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None, None)), AclArgumentError, "out[0] (y)"),
    (dict(out=(None, np.empty(2, F32), None, None)), AclArgumentError, "out[1] (mean)"),
    (dict(out=(None, None, np.empty((2, 1), F16), None)), AclTypeError, "out[2] (rstd)"),
    (dict(out=(np.empty((2, 4), F16), None, None, None)), AclTypeError, "out[0] (y)"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}-{k}" for k, (_c, e, a) in enumerate(ERRORS)])
def test_argument_errors(emulator, change, exc, argument):
    x1, x2, g, b, _ = make((2, 4), 1)
    case = dict(dict(x1=x1, x2=x2, gamma=g, beta=b), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.add_layer_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnAddLayerNormGetWorkspaceSize" not in emulator.call_counts()


@only_where(runs_here(ADD_LAYER_NORM))
def test_out_of_another_dtype_is_refused_naming_it(emulator):
    """An out= entry of an allowed dtype outside the combination (the operator's dtype rule):
    the NumPy call refuses it before any C call, naming the entry; on device tensors phase
    one refuses it (161002) and the error names the entry too."""
    x1, x2, g, b, _ = make((2, 4), 1)
    emulator.reset_call_counts()
    with pytest.raises(AclTypeError) as ei:
        acl_py.add_layer_norm(x1, x2, g, b, out=(None, None, None, np.empty((2, 4), F16)))
    assert ei.value.argument == "out[3] (x)" and ei.value.code is None
    assert "aclnnAddLayerNormGetWorkspaceSize" not in emulator.call_counts()
    dev = [acl_py.DeviceTensor.from_numpy(v) for v in (x1, x2, g, b)]
    with acl_py.DeviceTensor.empty((2, 4), F16) as X:
        with pytest.raises(AclTypeError) as ei:
            acl_py.add_layer_norm(*dev, out=(None, None, None, X))
    assert ei.value.argument == "out[3] (x)"
    assert ei.value.code == 161002 and ei.value.call == "aclnnAddLayerNormGetWorkspaceSize"
    assert "xOut dtype FLOAT16 must be the output dtype FLOAT" in ei.value.message


@only_where(runs_here(ADD_LAYER_NORM))
@pytest.mark.parametrize("what", ["gamma", "bias", "mean"])
def test_device_refusal_names_the_argument_and_carries_the_code(what):
    """Phase one's 561002 (the tiling's shape rules, the docs' bias shapes) on a DeviceTensor
    call: the Python checks then name the argument."""
    x1, x2, g, b, _ = make((2, 4), 1)
    D = acl_py.DeviceTensor.from_numpy
    G, B = (D(g[:3].copy()), D(b[:3].copy())) if what == "gamma" else (D(g), D(b))
    bias = D(np.ones(3, F32)) if what == "bias" else None
    out = (None, acl_py.DeviceTensor.empty((2,), F32), None, None) if what == "mean" else None
    with pytest.raises(AclArgumentError) as ei:
        acl_py.add_layer_norm(D(x1), D(x2), G, B, bias, out=out)
    assert ei.value.argument == {"mean": "out[1] (mean)"}.get(what, what)
    if what == "mean" and unwritten(x1, x2, g, b)[1] is not None:
        # the part does not write mean: the device never sees that tensor, the Python check
        # of the out= entry refuses it
        assert ei.value.code is None
        return
    assert ei.value.code == 561002 and ei.value.call == "aclnnAddLayerNormGetWorkspaceSize"


@only_where(runs_here(ADD_LAYER_NORM))
def test_operator_rules_surface_as_its_typed_error():
    vals = make((1,) * 9 + (2,), 1)
    with pytest.raises(AclError) as ei:
        acl_py.add_layer_norm(*vals)
    assert ei.value.code == 561002 and ei.value.call == "aclnnAddLayerNormGetWorkspaceSize"
    assert "x1 rank 10" in ei.value.message


@only_where(runs_here(ADD_LAYER_NORM))
def test_plan_runs_repeatedly_on_changing_contents():
    x1, x2, g, b, bias = make((8, 96), 1, on_this_part((F16, F16, F32)), "gamma")
    X1, X2, G, B, BI = (acl_py.DeviceTensor.from_numpy(a) for a in (x1, x2, g, b, bias))
    with acl_py.Stream() as s, acl_py.AddLayerNorm(X1, X2, G, B, BI, 1e-5) as plan:
        assert plan.mode == "repeatable"  # its workspace: test_emulator_workspace_size_add_ln
        for k in range(3):
            xk = (x1.astype(F32) * (k + 1)).astype(F16)
            X1.buffer.copy_from_host(xk)
            assert plan.run(s) == (plan.y, plan.mean, plan.rstd, plan.x)
            s.synchronize()
            check(plan.outputs, xk, x2, g, b, bias, 1e-5)
    assert plan.closed
    assert plan.x.to_numpy().shape == (8, 96)


@only_where(runs_here(ADD_LAYER_NORM))
def test_declaration_describes_the_c_prototype():
    assert [p.name for p in ADD_LAYER_NORM.params] == [
        "x1", "x2", "gamma", "beta", "biasOptional", "epsilon", "additionalOutput", "yOut",
        "meanOut", "rstdOut", "xOut"]
    assert [a.py for a in ADD_LAYER_NORM.inputs] == [
        "x1", "x2", "gamma", "beta", "bias", "epsilon", "additional_output"]
    assert [o.py for o in ADD_LAYER_NORM.outputs] == ["y", "mean", "rstd", "x"]
    assert ADD_LAYER_NORM.smoke_cases
    for case in ADD_LAYER_NORM.smoke_cases:
        ratios = ADD_LAYER_NORM.run_smoke_case(case)
        why = ADD_LAYER_NORM.unwritten_outputs(case[1]())
        assert len(ratios) == 4 and all(r <= 1 if w is None else r is None
                                        for r, w in zip(ratios, why)), (case[0], ratios)


def test_parts_with_a_kernel():
    """The vendor's definition configures no kernel for the Atlas training series nor Atlas
    200I/500 A2: acl-py smoke leaves the operator out there."""
    assert not ADD_LAYER_NORM.runs_on("Ascend910A") and not ADD_LAYER_NORM.runs_on("Ascend910B")
    assert not ADD_LAYER_NORM.runs_on("Ascend310B1")
    for soc in ("Ascend910B2", "Ascend910_9391", "Ascend310P3", "Ascend950PR_9599", None):
        assert ADD_LAYER_NORM.runs_on(soc)


@pytest.mark.no_leak_check  # runs in a child process
def test_cann_path_on_the_emulator_prefix(emulator):
    """ASCEND_HOME_PATH=<prefix> ACL_PY_BACKEND=cann: bound like any CANN install, no aclemu
    symbol touched."""
    run_on_cann_path(emulator, """
x1 = np.linspace(-3, 3, 64, dtype=np.float32).reshape(4, 16); x2 = np.cos(x1)
g = np.full(16, 0.5, np.float32); b = np.full(16, 0.25, np.float32)
bias = np.linspace(0, 1, 16, dtype=np.float32)
y, mean, rstd, x = acl_py.add_layer_norm(x1, x2, g, b, bias)
e = reference.add_layer_norm(x1, x2, g, b, bias)
assert np.allclose(y, e[0], rtol=1e-5, atol=1e-6) and np.allclose(mean, e[1], atol=1e-6)
assert np.allclose(rstd, e[2], rtol=1e-5) and np.array_equal(x, x1 + x2 + bias)
""")
