"""Outputs a part does not write (``output(unwritten=...)``): the declaration's predicate is
the emulator's rule, found by running the operator with its outputs filled with a sentinel
and seeing which the emulator changed, per operator, shape and part (the other parts in
child processes); the result holds None for such an output and a caller's ``out=`` entry is
left as it was (NumPy, DeviceTensor, plan); ``acl-py smoke`` passes on Atlas inference parts
and names what it did not check; a declaration made in a test with an unwritten output runs
through the smoke unchanged."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import acl_py
from acl_py import smoke
from acl_py.ops import (ADD_LAYER_NORM, ADD_RMS_NORM, ADD_RMS_NORM_DYNAMIC_QUANT,
                        ADD_RMS_NORM_QUANT, DECLARED, DEEP_NORM, DEEP_NORM_GRAD,
                        GROUP_NORM, GROUP_NORM_SILU, GROUP_NORM_SILU_V2, INPLACE_ADD_RMS_NORM, RMS_NORM,
                        Declared, OutputNotWritten, Part, part_of)

from _emu_aclnn import SOC
from _part_runs import only_where, other_parts, run_on_parts

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
SENTINEL = -4321.0      # no output of these inputs has it (rstd > 0, means within the data)
INFERENCE = SOC.startswith("Ascend310P")


def _add_rms_norm_values(shape, dt):
    rng = np.random.default_rng(1)
    x1 = rng.standard_normal(shape).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1 + 0.25 * rng.standard_normal(shape[-1:])).astype(dt)
    return (x1, x2, g, 1e-6)


def _add_layer_norm_values(shape, dt, additional_output=True):
    rng = np.random.default_rng(3)
    x1 = rng.standard_normal(shape).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    g = (1 + 0.25 * rng.standard_normal(shape[-1:])).astype(dt)
    b = (0.5 * rng.standard_normal(shape[-1:])).astype(dt)
    return (x1, x2, g, b, None, 1e-5, additional_output)


def _deep_norm_values(shape, dt):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(dt)
    gx = rng.standard_normal(shape).astype(dt)
    b = (0.5 * rng.standard_normal(shape[-1:])).astype(dt)
    g = (1 + 0.25 * rng.standard_normal(shape[-1:])).astype(dt)
    return (x, gx, b, g, 0.5, 1e-6)


def _deep_norm_grad_values(shape, dt):
    rng = np.random.default_rng(5)
    dy, x, gx = (rng.standard_normal(shape).astype(dt) for _ in range(3))
    g = (1 + 0.25 * rng.standard_normal(shape[-1:])).astype(dt)
    mean, rstd, _ = acl_py.reference.deep_norm(x, gx, np.zeros(shape[-1:]), g, 0.5)
    return (dy, x, gx, g, mean.astype(F32), rstd.astype(F32), 0.5)


def _group_norm_values(shape, group, dt):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) + 0.5).astype(dt)
    c = shape[1]
    hw = int(np.prod(shape[2:]))
    return (x, np.ones(c, dt), np.zeros(c, dt), shape[0], c, hw, group, 1e-5)


def _group_norm_silu_values(shape, group, dt, affine_dt=None, *v2):
    x, g, b = _group_norm_values(shape, group, dt)[:3]
    adt = affine_dt or dt
    return (x, g.astype(adt), b.astype(adt), group, 1e-5) + v2


# (operator, values): shapes reaching each branch of the rule on Atlas inference parts
# (15 cores on Ascend310P3: its 8 AI cores and 7 vector cores)
CASES = [
    (ADD_RMS_NORM, _add_rms_norm_values((4, 64), F32)),
    (ADD_RMS_NORM, _add_rms_norm_values((2, 3, 16), F16)),
    (INPLACE_ADD_RMS_NORM, _add_rms_norm_values((4, 64), F32)),
    (GROUP_NORM, _group_norm_values((2, 64, 7), 32, F32)),        # HxW below a block
    (GROUP_NORM, _group_norm_values((2, 8, 1), 4, F16)),          # hw1
    (GROUP_NORM, _group_norm_values((2, 8, 8, 8), 4, F32)),       # small: unwritten
    (GROUP_NORM, _group_norm_values((3, 16, 40), 8, F16)),        # b16: unwritten
    (GROUP_NORM, _group_norm_values((1, 64, 4, 4), 32, F16)),     # SD: unwritten
    (GROUP_NORM, _group_norm_values((1, 64, 1), 32, F16)),        # N 1, 32 groups, HxW 1
    (GROUP_NORM, _group_norm_values((1, 4000, 8), 1, F32)),       # C + 1 > 4000: written
    (GROUP_NORM, _group_norm_values((1, 3999, 8), 1, F32)),       # C + 1 = 4000: unwritten
    (GROUP_NORM, _group_norm_values((15, 3960, 8), 40, F32)),     # 40 groups a core: 4000
    (GROUP_NORM, _group_norm_values((16, 3960, 8), 40, F32)),     # 43 a core: written
    (GROUP_NORM, _group_norm_values((2, 8, 0), 4, F32)),          # empty: the op_api's fill
    # GroupNormSilu: GroupNorm's kernels and rule (float32 gamma/beta: the MIXTYPE keys)
    (GROUP_NORM_SILU, _group_norm_silu_values((2, 8, 1), 4, F16, F32)),        # hw1
    (GROUP_NORM_SILU, _group_norm_silu_values((3, 16, 40), 8, F16, F32)),      # b16
    (GROUP_NORM_SILU, _group_norm_silu_values((1, 64, 4, 4), 32, F16, F32)),   # SD
    (GROUP_NORM_SILU_V2, _group_norm_silu_values((2, 8, 8, 8), 4, F32, None, False)),  # small
    (ADD_LAYER_NORM, _add_layer_norm_values((4, 64), F32)),
    (DEEP_NORM, _deep_norm_values((3, 7), F32)),                  # y: a row under 32 bytes
    (DEEP_NORM, _deep_norm_values((2, 3, 16), F16)),              # y: one 32-byte block
    (DEEP_NORM_GRAD, _deep_norm_grad_values((3, 7), F32)),        # dx, dgx: under 32 bytes
    (DEEP_NORM_GRAD, _deep_norm_grad_values((2, 3, 16), F16)),    # dx, dgx: one block
    # AddRmsNormQuant: y2 written only with scales2 (every part)
    (ADD_RMS_NORM_QUANT, ADD_RMS_NORM_QUANT.smoke_cases[0][1]()),
    (ADD_RMS_NORM_QUANT, ADD_RMS_NORM_QUANT.smoke_cases[1][1]()),
    # AddRmsNormDynamicQuant: y2 and scale2 written only with both smooth scales (every part
    # with a kernel)
    (ADD_RMS_NORM_DYNAMIC_QUANT, ADD_RMS_NORM_DYNAMIC_QUANT.smoke_cases[0][1]()),
    (ADD_RMS_NORM_DYNAMIC_QUANT, ADD_RMS_NORM_DYNAMIC_QUANT.smoke_cases[1][1]()),
    (ADD_LAYER_NORM, _add_layer_norm_values((2, 3, 16), F16, additional_output=False)),
]


def _ids(cases):
    return [f"{d.short_name}-{v[0].dtype.name}{list(v[0].shape)}" for d, v in cases]


# the cases of operators with a kernel on this part: another's could never run here, so it is
# no test (its refusal: test_declared_parts); the parts with the kernel run it
CASES_HERE = [(d, v) for d, v in CASES if d.runs_on(SOC)]


def _without_predicates(declared):
    """The declaration with every output written (no ``unwritten``), not registered: its calls
    hand the caller's tensors to the device, which shows what the emulator writes."""
    args = []
    for a in declared.args:
        if getattr(a, "unwritten", None) is not None:
            a = acl_py.ops.output(a.name, name=a.py, shape=a.shape, dtype=a.dtype,
                                  dtypes=a.dtypes, fits=a.fits, when=a.when)
        args.append(a)
    return Declared(declared.name, args, check=declared.check, reference=declared.reference,
                    error_scale=declared.error_scale, register=False)


def _written_by_emulator(declared, values):
    """Per output, whether the emulator changed a sentinel-filled output."""
    raw = _without_predicates(declared)
    a = declared.bind(values, np.ndarray)
    ins = [acl_py.DeviceTensor.from_numpy(v) if isinstance(v, np.ndarray) else v
           for v in values]
    outs = [None if o.into is not None else   # written into an input: not a sentinel's
            acl_py.DeviceTensor.from_numpy(np.full(o.shape(a), SENTINEL, o.dtype(a)))
            for o in declared.outputs]
    try:
        raw.call(tuple(ins), out=tuple(outs))
        acl_py.synchronize()
        return tuple(t is None or not np.array_equal(t.to_numpy(), np.full(
            o.shape(a), SENTINEL, o.dtype(a))) for o, t in zip(declared.outputs, outs))
    finally:
        for t in ins + outs:
            if isinstance(t, acl_py.DeviceTensor):
                t.close()


@pytest.mark.parametrize("declared, values", CASES_HERE, ids=_ids(CASES_HERE))
def test_predicate_is_the_emulators_rule(declared, values):
    why = declared.unwritten_outputs(values)
    written = _written_by_emulator(declared, values)
    for o, w, reason in zip(declared.outputs, written, why):
        if values[0].size == 0 and o.py != "out":
            assert reason is None   # filled by the op_api on every part
            continue
        if values[0].size == 0:
            continue
        assert w == (reason is None), (o.py, w, reason)
        if reason is not None and o.py != "x":
            assert "hicann/ops-nn" in reason
            # AddRmsNormQuant's y2 without scales2, AddRmsNormDynamicQuant's y2 and scale2
            # without both smooth scales: on every part
            if declared not in (ADD_RMS_NORM_QUANT, ADD_RMS_NORM_DYNAMIC_QUANT):
                assert INFERENCE and "Atlas inference parts" in reason


def test_the_unwritten_cases_are_unwritten_on_inference_parts():
    """The shapes above reach both answers of the rule on Ascend310P3 (a rule that always or
    never answers 'written' would pass the comparison only on one side)."""
    p310 = Part("Ascend310P3", 2002, 15)
    answers = [d.unwritten_outputs(v, p310)[1] is None for d, v in CASES]
    assert answers == [False, False, False, True, True, False, False, False, True, True,
                       False, False, True, True, True, False, False, False, False, False,
                       False, False, True, True, False, True, False, False]
    # DeepNorm's y: a row under 32 bytes is not written, one of 32 bytes is
    assert [DEEP_NORM.unwritten_outputs(v, p310)[2] is None
            for d, v in CASES if d is DEEP_NORM] == [False, True]
    # DeepNormGrad's dx and dgx: the same rule
    assert [DEEP_NORM_GRAD.unwritten_outputs(v, p310)[:2] == (None, None)
            for d, v in CASES if d is DEEP_NORM_GRAD] == [False, True]
    p8 = Part("Ascend310P3", 2002, 8)   # the core count matters: 75 groups a core
    assert GROUP_NORM.unwritten_outputs(CASES[11][1], p8)[1] is None
    for p in (Part("Ascend910B2", 2201, 48), Part("Ascend910A", 1001, 32),
              Part("Ascend950PR_9599", 3510, 64)):
        assert all(w is None for d, v in CASES[:-1]
                   if d not in (ADD_RMS_NORM_QUANT, ADD_RMS_NORM_DYNAMIC_QUANT)
                   for w in d.unwritten_outputs(v, p))
        # AddRmsNormQuant's y2: written only with scales2, on every part
        assert [d.unwritten_outputs(v, p)[1] is None for d, v in CASES
                if d is ADD_RMS_NORM_QUANT] == [True, False]
        # AddRmsNormDynamicQuant's y2 and scale2: written only with both smooth scales
        assert [tuple(w is None for w in d.unwritten_outputs(v, p)) for d, v in CASES
                if d is ADD_RMS_NORM_DYNAMIC_QUANT] == [(True,) * 5,
                                                        (True, False, True, True, False)]
        assert ADD_LAYER_NORM.unwritten_outputs(CASES[-1][1], p)[:3] == (None,) * 3
        assert "additional_output is False" in ADD_LAYER_NORM.unwritten_outputs(
            CASES[-1][1], p)[3]


def test_part_of_the_device():
    p = part_of()
    assert p.name == SOC == acl_py.soc_name() and p.inference == INFERENCE
    at = acl_py.Device(0).attributes
    assert p.npu_arch == at.npu_arch and p.cores == at.ai_cores + (at.vector_cores or
                                                                   at.ai_cores)


@only_where(INFERENCE)   # the results of a part that leaves outputs unwritten
def test_results_hold_none_and_out_entries_are_left_as_they_were():
    x1, x2, g, eps = _add_rms_norm_values((4, 64), F32)
    y, rstd, x = acl_py.add_rms_norm(x1, x2, g, eps)
    assert rstd is None and y.shape == x.shape == (4, 64)
    keep = np.full((4, 1), SENTINEL, F32)
    res = acl_py.add_rms_norm(x1, x2, g, eps, out=(None, keep, None))
    assert res[1] is None and (keep == SENTINEL).all()
    with pytest.raises(acl_py.AclTypeError) as ei:   # still checked, as on every part
        acl_py.add_rms_norm(x1, x2, g, eps, out=(None, np.empty((4, 1), F16), None))
    assert ei.value.argument == "out[1] (rstd)"
    X1, X2, G = (acl_py.DeviceTensor.from_numpy(v) for v in (x1, x2, g))
    R = acl_py.DeviceTensor.from_numpy(keep)
    with pytest.raises(acl_py.AclArgumentError) as ei:
        acl_py.add_rms_norm(X1, X2, G, eps, out=(None, acl_py.DeviceTensor.empty((2,), F32),
                                                 None))
    assert ei.value.argument == "out[1] (rstd)"
    Y, Rg, X = acl_py.add_rms_norm(X1, X2, G, eps, out=(None, R, None))
    acl_py.synchronize()
    assert Rg is None and (R.to_numpy() == SENTINEL).all()
    assert np.array_equal(Y.to_numpy(), y)
    with acl_py.AddRmsNorm(X1, X2, G, eps) as plan, acl_py.Stream() as s:
        assert plan.rstd is None and plan.outputs[1] is None
        plan.run(s)
        s.synchronize()
        assert np.array_equal(plan.y.to_numpy(), y)
    a1, a2 = x1.copy(), x2.copy()
    r1, r_none, r2 = acl_py.inplace_add_rms_norm(a1, a2, g, eps)
    assert r_none is None and r1 is a1 and np.array_equal(a1, y)
    gv = _group_norm_values((2, 8, 8, 8), 4, F32)
    out, mean, rstd = acl_py.group_norm(gv[0], 4, gv[1], gv[2])
    assert mean is None and rstd is None and out.shape == (2, 8, 8, 8)
    for t in (X1, X2, G, R, Y, X):
        t.close()


def _check_rebinding_an_unwritten_output(plan, name, k, like, emulator):
    """``plan`` (prepared, its output ``name`` = outputs[k] not written by the part, the
    written outputs ``like`` it has on device tensors of the same shapes): rebinding that
    output takes a tensor as out= does. Checked as an out= entry (errors name it, raised
    before anything changes); an accepted one is left as it was, re-points nothing (no
    aclSetTensorAddr for it) and the output stays None; the written outputs rebind as ever.
    Returns what the run wrote into them (NumPy, by name)."""
    keep = acl_py.DeviceTensor.from_numpy(np.full(like[k], SENTINEL, F32))
    written = [j for j, o in enumerate(plan.outputs) if o is not None]
    fresh = {plan.declared.outputs[j].py: acl_py.DeviceTensor.empty(plan.outputs[j].shape,
                                                                    plan.outputs[j].dtype)
             for j in written}
    before = plan.outputs
    bad = [(acl_py.DeviceTensor.empty(like[k], F16), acl_py.AclTypeError),
           (acl_py.DeviceTensor.empty(like[k][:-1] + (like[k][-1] + 1,), F32),
            acl_py.AclArgumentError),
           (np.full(like[k], SENTINEL, F32), acl_py.AclTypeError)]
    try:
        for t, error in bad:
            with pytest.raises(error) as ei:
                plan.rebind(**fresh, **{name: t})
            assert ei.value.argument == name, ei.value
            assert plan.outputs == before     # nothing rebound, the written ones neither
        closed = acl_py.DeviceTensor.empty(like[k], F32)
        closed.close()
        with pytest.raises(acl_py.ClosedError):
            plan.rebind(**{name: closed})
        emulator.reset_call_counts()
        plan.rebind(**fresh, **{name: keep})
        assert emulator.call_counts().get("aclSetTensorAddr", 0) == len(fresh)
        assert plan.outputs[k] is None and getattr(plan, name) is None
        assert all(plan.outputs[j] is fresh[plan.declared.outputs[j].py] for j in written)
        with acl_py.Stream() as s:
            plan.run(s)
            s.synchronize()
        assert (keep.to_numpy() == SENTINEL).all()
        return {n: t.to_numpy() for n, t in fresh.items()}
    finally:
        for t in [keep] + list(fresh.values()) + [t for t, _ in bad]:
            if isinstance(t, acl_py.DeviceTensor):
                t.close()


def test_rebinding_an_output_the_part_does_not_write_leaves_the_tensor(emulator):
    """A plan of a test's declaration whose rstd no part writes (in process, every part):
    rebind(rstd=t) takes t as out= would and leaves it as it was."""
    args = [acl_py.ops.output("rstdOut", shape=a.shape, dtype=a.dtype, fits=a.fits,
                              unwritten=lambda a, part: f"a test's rule on {part.name}")
            if a.py == "rstd" else a for a in RMS_NORM.args]
    twin = Declared("aclnnRmsNorm", args, check=RMS_NORM.check, register=False)

    class TwinPlan(acl_py.ops.Plan):
        declared = twin
        __slots__ = ()

        def __init__(self, x, gamma, epsilon=1e-6, *, out=None):
            self._prepare((x, gamma, epsilon), out)

    x = acl_py.DeviceTensor.from_numpy(np.linspace(-2, 2, 64, dtype=F32).reshape(4, 16))
    g = acl_py.DeviceTensor.from_numpy(np.ones(16, F32))
    given = acl_py.DeviceTensor.from_numpy(np.full((4,), SENTINEL, F32))  # a fitting shape
    try:
        with TwinPlan(x, g, out=(None, given)) as plan:
            assert plan.rstd is None
            got = _check_rebinding_an_unwritten_output(plan, "rstd", 1, ((4, 16), (4, 1)),
                                                       emulator)
            assert np.array_equal(got["y"], acl_py.rms_norm(x.to_numpy(), g.to_numpy())[0])
            plan.rebind(rstd=acl_py.DeviceTensor.empty((4,), F32))   # fits: taken, left
        assert (given.to_numpy() == SENTINEL).all()
    finally:
        for t in (x, g, given):
            t.close()


@only_where(INFERENCE)   # a plan of a part that leaves outputs unwritten
def test_rebinding_add_rms_norm_rstd_on_an_inference_part(emulator):
    x1, x2, g, eps = _add_rms_norm_values((4, 64), F32)
    X1, X2, G = (acl_py.DeviceTensor.from_numpy(v) for v in (x1, x2, g))
    try:
        with acl_py.AddRmsNorm(X1, X2, G, eps) as plan:
            got = _check_rebinding_an_unwritten_output(plan, "rstd", 1,
                                                       ((4, 64), (4, 1), (4, 64)), emulator)
            y, _, x = acl_py.add_rms_norm(x1, x2, g, eps)
            assert np.array_equal(got["y"], y) and np.array_equal(got["x"], x)
    finally:
        for t in (X1, X2, G):
            t.close()


test_on_other_parts = run_on_parts(other_parts(("Ascend310P3", "Ascend910A", "Ascend950PR_9599")),
                                   "predicate or unwritten_cases or part_of or results_hold or "
                                   "rebinding")


@pytest.mark.no_leak_check  # runs in a child process
def test_smoke_passes_on_an_inference_part_naming_what_it_did_not_check(tmp_path):
    path = tmp_path / "r.json"
    env = dict(os.environ, ACL_EMU_SOC="Ascend310P3")
    r = subprocess.run([sys.executable, "-m", "acl_py", "smoke", "--quick", "--json",
                        str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "AddRmsNorm 3/3 passed" in r.stdout and "PASSED: all" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("not written: AddRmsNorm rstd"))
    assert "3 cases" in line and "not written on Atlas inference parts" in line
    assert "not written: GroupNorm mean (1 case: GroupNorm/float32[2,8,8,8]/4" in r.stdout
    cases = json.loads(path.read_text())["devices"][0]["cases"]
    add = [c for c in cases if c["operator"] == "AddRmsNorm"]
    assert len(add) == 3 and all(c["passed"] and list(c["not_written"]) == ["rstd"] and
                                 [o["name"] for o in c["outputs"]] == ["y", "x"] for c in add)
    gn = {c["name"]: c for c in cases if c["operator"] == "GroupNorm"}
    assert all(c["passed"] for c in gn.values())
    assert sorted(gn["GroupNorm/float32[2,8,8,8]/4"]["not_written"]) == ["mean", "rstd"]
    assert sum(bool(c["not_written"]) for c in gn.values()) == 1


def test_a_test_declaration_with_an_unwritten_output_runs_through_the_smoke(monkeypatch,
                                                                              tmp_path):
    """RmsNorm declared again with rstd 'not written' on every part: its result holds None,
    its smoke case passes on y alone and the report says why, with no smoke change."""
    args = [acl_py.ops.output("rstdOut", shape=a.shape, dtype=a.dtype,
                              unwritten=lambda a, part: f"a test's rule on {part.name}")
            if a.py == "rstd" else a for a in RMS_NORM.args]
    twin = Declared("aclnnRmsNorm", args, check=RMS_NORM.check, reference=RMS_NORM.reference,
                    error_scale=RMS_NORM.error_scale, smoke_cases=RMS_NORM.smoke_cases[:1],
                    register=False)
    x = np.linspace(-2, 2, 64, dtype=np.float32).reshape(4, 16)
    g = np.ones(16, np.float32)
    y, rstd = twin.call((x, g, 1e-6))
    assert rstd is None
    assert twin.check_outputs((x, g, 1e-6), (y, None)) == (
        twin.check_outputs((x, g, 1e-6), (y, None))[0],
        OutputNotWritten("rstd", f"a test's rule on {SOC}"))
    assert twin.run_smoke_case(twin.smoke_cases[0])[1] is None
    monkeypatch.setitem(DECLARED, "RmsNormUnwritten", twin)
    path = tmp_path / "r.json"
    out, err = io.StringIO(), io.StringIO()
    status = smoke.main(["--quick", "--json", str(path)], out=out, err=err)
    assert status == 0, out.getvalue() + err.getvalue()
    assert "RmsNormUnwritten 1/1 passed" in out.getvalue()
    assert (f"not written: RmsNormUnwritten rstd (1 case: "
            f"RmsNormUnwritten/{RMS_NORM.smoke_cases[0][0].replace(' ', '')}; not checked): a test's rule on "
            f"{SOC}") in out.getvalue()
    case = next(c for c in json.loads(path.read_text())["devices"][0]["cases"]
                if c["operator"] == "RmsNormUnwritten")
    assert case["not_written"] == {"rstd": f"a test's rule on {SOC}"}
    assert [o["name"] for o in case["outputs"]] == ["y"]
