"""acl_py.layer_norm / acl_py.LayerNorm (aclnnLayerNorm through the declarative operator
layer, acl_py.ops._declare) against the float64 reference, its argument errors, its plan, and
the forward -> backward chain on the device.

Tolerances: acl_py.reference (RTOL[input dtype] * magnitude + half an ulp of the output
dtype); on the emulator, whose contract is float32 compute, the first term is tightened to
1e-5 for every dtype for ``out`` as in test_layer_norm_backward.py (mean/rstd keep input's
RTOL: with a half weight the device writes them in that half dtype before the cast).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import reference
from acl_py.errors import AclArgumentError, AclTypeError, OperatorInvalidParameterError
from acl_py.ops import LAYER_NORM, LAYER_NORM_BACKWARD, part_of
from acl_py.ops._declare import python_name

from _part_runs import bf16_where_it_runs
from _workspace_model import ARCH, align

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
# the half dtype of the tests that mix one in: BF16, FLOAT16 on parts without BF16
HALF = BF16 if acl_py.supports_bfloat16() else F16


def _rtol():
    from acl_py._loader import library
    return 1e-5 if library().backend.is_emulator else None


def make(shape, nrank, dt=F32, pdt=None, weight=True, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    ns = tuple(shape[len(shape) - nrank:])
    pdt = pdt or dt
    return dict(input=(rng.standard_normal(shape) * 2 + 0.5).astype(dt), normalized_shape=ns,
                weight=(rng.standard_normal(ns) * 0.5 + 1).astype(pdt) if weight else None,
                bias=rng.standard_normal(ns).astype(pdt) if bias else None)


def host(t):
    return t.to_numpy() if isinstance(t, acl_py.DeviceTensor) else t


def check(results, case, eps=1e-5, dtypes=None):
    x = case["input"]
    exp = reference.layer_norm(**case, eps=eps)
    mag = reference.layer_norm_error_scale(**case, eps=eps)
    dtypes = dtypes or (x.dtype, F32, F32)
    for got, e, m, dt, name in zip(results, exp, mag, dtypes, ("out", "mean", "rstd")):
        got = host(got)
        assert got.dtype == dt, (name, got.dtype)
        # mean/rstd: the device may produce them in a half dtype before the cast (a half
        # weight on Atlas A2, docs/emulator.md): input's RTOL covers that rounding
        rtol = _rtol() if name == "out" else None
        reference.assert_close(got.reshape(e.shape), e, m, x.dtype, name, rtol=rtol)


def dev(case):
    return {k: acl_py.DeviceTensor.from_numpy(v) if isinstance(v, np.ndarray) else v
            for k, v in case.items()}


# BF16's only where the part has it (another part's run takes them)
COMBOS = bf16_where_it_runs([(dt, p, w, b) for dt in (F32, F16, BF16) for p in (None, F32)
                             for w, b in ((True, True), (True, False), (False, True),
                                          (False, False))
                             if not (p is F32 and not (w or b))])


@pytest.mark.parametrize("path", ["numpy", "device"])
@pytest.mark.parametrize("dt,pdt,weight,bias", COMBOS,
                         ids=[f"{d}-p{p}-w{int(w)}-b{int(b)}" for d, p, w, b in COMBOS])
def test_against_reference(path, dt, pdt, weight, bias):
    case = make((3, 5, 67), 1, dt, pdt, weight, bias)
    args = case if path == "numpy" else dev(case)
    res = acl_py.layer_norm(**args, eps=1e-4)
    assert all(isinstance(r, np.ndarray if path == "numpy" else acl_py.DeviceTensor)
               for r in res)
    check(res, case, eps=1e-4)
    # mean/rstd are shaped as CANN writes them: batch dims, then ones
    assert host(res[1]).shape == (3, 5, 1)


@pytest.mark.parametrize("shape,nrank", [((7,), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), 4),
                                         ((1, 2, 1, 2, 1, 2, 1, 2), 3), ((4096, 33), 1)])
def test_ranks_and_splits(shape, nrank):
    case = make(shape, nrank)
    check(acl_py.layer_norm(**case), case)


def test_out_given_numpy_and_device():
    case = make((4, 6, 32), 1)
    # statistics of another shape holding as many elements; Ascend 950 takes input's rank only
    regbase = part_of().npu_arch == 3510
    flat, column = ((4, 6, 1), (4, 6, 1)) if regbase else ((24,), (24, 1))
    out = (np.empty((4, 6, 32), F16), np.empty(flat, F32), np.empty(column, F32))
    res = acl_py.layer_norm(**case, out=out)
    assert all(r is o for r, o in zip(res, out))   # written in place
    check((res[0], res[1].reshape(4, 6, 1), res[2].reshape(4, 6, 1)), case,
          dtypes=(F16, F32, F32))
    d = dev(case)
    o = (acl_py.DeviceTensor.empty((4, 6, 32), HALF), None, acl_py.DeviceTensor.empty(flat))
    res = acl_py.layer_norm(**d, out=o)
    assert res[0] is o[0] and res[2] is o[2] and res[1].shape == (4, 6, 1)
    check((res[0], res[1], res[2].to_numpy().reshape(4, 6, 1)), case, dtypes=(HALF, F32, F32))


def test_strided_device_views():
    case = make((6, 40), 1)
    big = acl_py.DeviceTensor.from_numpy(np.repeat(case["input"], 2, axis=1))
    view = big[:, ::2]
    res = acl_py.layer_norm(view, (40,), dev(case)["weight"], dev(case)["bias"])
    check(res, case)


def test_eps_is_passed_as_a_double_and_reaches_the_kernel_as_float():
    x = np.full((2, 8), 3.0, F32)
    _, _, rstd = acl_py.layer_norm(x, 8, eps=1e-46)   # 0 as a float32
    assert np.isposinf(rstd).all()
    _, _, rstd = acl_py.layer_norm(x, 8, eps=np.float64(0.25))
    assert (rstd == 2).all()


def test_empty():
    res = acl_py.layer_norm(np.zeros((0, 4), F32), 4)
    assert [r.shape for r in res] == [(0, 4), (0, 1), (0, 1)]
    out, mean, rstd = acl_py.layer_norm(np.zeros((3, 0), F32), (0,))
    assert out.shape == (3, 0) and (mean == 0).all() and np.isnan(rstd).all()


# ---- argument errors name the argument -------------------------------------------------------

ERRORS = [
    # (change, exception, argument named)
    (dict(input=[[1.0, 2.0]]), AclTypeError, "input"),
    (dict(input=np.ones((2, 4), np.float64)), AclTypeError, "input"),
    (dict(normalized_shape=(5,)), AclArgumentError, "normalized_shape"),
    (dict(normalized_shape=(2.0,)), AclTypeError, "normalized_shape[0]"),
    (dict(normalized_shape="4"), AclTypeError, "normalized_shape"),
    (dict(weight=np.ones(4, F16)), AclTypeError, "weight"),
    (dict(bias=np.ones(5, F32)), AclArgumentError, "bias"),
    (dict(weight=np.ones((4, 1), F32)), AclArgumentError, "weight"),
    (dict(eps="small"), AclTypeError, "eps"),
    (dict(eps=True), AclTypeError, "eps"),
    (dict(out=(None, None)), AclArgumentError, "out"),
    (dict(out=(np.empty((2, 5), F32), None, None)), AclArgumentError, "out[0] (out)"),
    (dict(out=(None, np.empty(3, F32), None)), AclArgumentError, "out[1] (mean)"),
    (dict(out=(None, None, np.empty(2, np.int32))), AclTypeError, "out[2] (rstd)"),
    (dict(stream="default"), AclTypeError, "stream"),
]


@pytest.mark.parametrize("change,exc,argument", ERRORS,
                         ids=[f"{a}-{e.__name__}" for _c, e, a in ERRORS])
def test_argument_errors(emulator, change, exc, argument):
    case = dict(make((2, 4), 1), **change)
    emulator.reset_call_counts()
    with pytest.raises(exc) as ei:
        acl_py.layer_norm(**case)
    assert ei.value.argument == argument, ei.value
    assert type(ei.value) is exc
    assert "aclnnLayerNormGetWorkspaceSize" not in emulator.call_counts()


def test_mixed_kinds_and_devices():
    case = make((2, 4), 1)
    d = dev(case)
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm(**dict(d, weight=case["weight"]))
    assert ei.value.argument == "weight" and "like input" in str(ei.value)
    with pytest.raises(AclTypeError) as ei:
        acl_py.layer_norm(**case, out=(d["input"], None, None))
    assert ei.value.argument == "out[0] (out)"


def test_operator_limits_surface_as_its_typed_error():
    case = make((1,) * 9 + (2,), 1)
    with pytest.raises(OperatorInvalidParameterError) as ei:
        acl_py.layer_norm(**case)
    assert ei.value.code == 161002 and ei.value.call == "aclnnLayerNormGetWorkspaceSize"
    assert "rank" in ei.value.message


# ---- the plan ----------------------------------------------------------------------------------

def test_plan_runs_repeatedly_on_changing_contents():
    case = make((8, 96), 1, HALF, F32)
    d = dev(case)
    # the workspace: Ascend 950's LayerNormV4 tiling asks 32 bytes (the allocator's 512), the
    # TBE LayerNormV3 the others take for this shape none public (docs/emulator.md's table)
    workspace = align(32) if ARCH == 3510 else 0
    with acl_py.Stream() as s, acl_py.LayerNorm(**d, eps=1e-3) as plan:
        assert plan.mode == "repeatable" and plan.workspace_size == workspace
        for k in range(3):
            x = (case["input"].astype(F32) * (k + 1)).astype(HALF)
            d["input"].copy_from_numpy(x) if hasattr(d["input"], "copy_from_numpy") else \
                d["input"].buffer.copy_from_host(x)
            assert plan.run(s) == (plan.out, plan.mean, plan.rstd)
            s.synchronize()
            check(plan.outputs, dict(case, input=x), eps=1e-3)
    assert plan.closed and "closed" in repr(plan)
    assert plan.out.to_numpy().shape == (8, 96)   # outputs outlive the plan


def test_plan_needs_device_tensors():
    with pytest.raises(AclTypeError) as ei:
        acl_py.LayerNorm(**make((2, 4), 1))
    assert ei.value.argument == "input"


# ---- forward -> backward on the device ---------------------------------------------------------

@pytest.mark.parametrize("dt", bf16_where_it_runs([F32, F16, BF16]))
def test_forward_statistics_feed_the_backward_unchanged(dt):
    """mean/rstd as the forward writes them go straight into layer_norm_backward, on one
    stream, never leaving the device; the chain is judged against the reference chain
    (reference forward, its float64 statistics into the reference backward)."""
    case = make((4, 16, 256), 1, dt, F32)
    x, ns, w, b = case["input"], case["normalized_shape"], case["weight"], case["bias"]
    dy = np.random.default_rng(1).standard_normal(x.shape).astype(dt)
    with acl_py.Stream() as s:
        X, W, B, DY = (acl_py.DeviceTensor.from_numpy(a) for a in (x, w, b, dy))
        out, mean, rstd = acl_py.layer_norm(X, ns, W, B, stream=s)
        gi, gw, gb = acl_py.layer_norm_backward(DY, X, ns, mean, rstd, W, B, stream=s)
        s.synchronize()
        got = [t.to_numpy() for t in (gi, gw, gb)]
    _, m64, r64 = reference.layer_norm(x, ns, w, b)
    exp = reference.layer_norm_backward(dy, x, ns, m64, r64, w)
    mag = reference.error_scale(dy, x, ns, m64, r64, w)
    for g, e, m, name in zip(got, exp, mag, ("grad_input", "grad_weight", "grad_bias")):
        reference.assert_close(g, e, m, dt, name)


# ---- the declaration -------------------------------------------------------------------------

def test_declaration_describes_the_c_prototype():
    assert [p.name for p in LAYER_NORM.params] == [
        "input", "normalizedShape", "weightOptional", "biasOptional", "eps", "out",
        "meanOutOptional", "rstdOutOptional"]
    assert [a.py for a in LAYER_NORM.inputs] == ["input", "normalized_shape", "weight", "bias",
                                                 "eps"]
    assert [o.py for o in LAYER_NORM.outputs] == ["out", "mean", "rstd"]
    assert [o.py for o in LAYER_NORM_BACKWARD.outputs] == ["grad_input", "grad_weight",
                                                           "grad_bias"]
    assert python_name("gradOut") == "grad_out"
    assert python_name("gradInputOut", True) == "grad_input"
    assert "aclnnLayerNormGetWorkspaceSize(aclTensor input" in LAYER_NORM.signature()


def test_reference_and_check_result():
    case = make((5, 64), 1, HALF, F32)
    values = (case["input"], (64,), case["weight"], case["bias"], 1e-5)
    got = acl_py.layer_norm(*values)
    assert all(r <= 1 for r in LAYER_NORM.check_result(values, got))
    bad = (got[0], got[1] + 1, got[2])
    assert LAYER_NORM.check_result(values, bad)[1] > 1


def test_smoke_cases_pass():
    assert len(LAYER_NORM.smoke_cases) >= 4
    for case in LAYER_NORM.smoke_cases:
        if not acl_py.supports_bfloat16() and any(
                getattr(v, "dtype", None) == BF16 for v in case[1]()):
            continue    # refused on this part (as acl-py smoke leaves such cases out)
        ratios = LAYER_NORM.run_smoke_case(case)
        assert len(ratios) == 3 and all(r <= 1 for r in ratios), (case[0], ratios)
