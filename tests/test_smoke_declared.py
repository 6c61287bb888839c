"""``acl-py smoke`` runs every declared operator from its declaration: a declaration entered
in :data:`acl_py.ops.DECLARED` (as every operator module's is, or one a test registers) is in
the matrix and runs through the generic runner; its quick cases stay small; a declared case
whose device result is wrong (a perturbed reference, a fault injected into the operator) or
whose values cannot be made is reported failed, naming the output or the error, not raised."""
from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest

from acl_py import reference, smoke
from acl_py.ops import DECLARED, RMS_NORM, Declared

from test_smoke import quick_cases, run_cli


def _twin(name="aclnnRmsNorm", reference_=reference.rms_norm, smoke_cases=None,
          smoke_full_cases=()):
    """A variant of the RmsNorm declaration (the same C function), not registered."""
    return Declared(name, RMS_NORM.args, check=RMS_NORM.check, reference=reference_,
                    error_scale=RMS_NORM.error_scale,
                    smoke_cases=RMS_NORM.smoke_cases if smoke_cases is None else smoke_cases,
                    smoke_full_cases=smoke_full_cases, register=False)


def _values(shape=(6, 32), dtype=np.float32, seed=0):
    def make():
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
        return x, (1 + 0.25 * rng.standard_normal(shape[-1:], dtype=np.float32)).astype(dtype), 1e-6
    return make


def _perturbed_rms_norm(x, gamma, epsilon=1e-6):
    """RmsNorm's reference with one element of y moved far beyond any tolerance."""
    y, rstd = reference.rms_norm(x, gamma, epsilon)
    y = np.array(y, copy=True)
    y.flat[y.size // 2] += 1.0 + abs(y.flat[y.size // 2])
    return y, rstd


def _named(smoke_cases, name):
    return next(c for c in smoke_cases if c[0] == name)


def _in_process(argv, cases=None):
    out, err = io.StringIO(), io.StringIO()
    status = smoke.main(argv, cases=cases, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_every_declared_operator_is_registered_once_by_its_short_name():
    assert DECLARED["LayerNorm"].name == "aclnnLayerNorm"
    assert DECLARED["LayerNormBackward"].name == "aclnnLayerNormBackward"
    assert DECLARED["RmsNorm"] is RMS_NORM
    assert all(d.short_name == name for name, d in DECLARED.items())
    with pytest.raises(ValueError, match="'RmsNorm' is declared already"):
        Declared("aclnnRmsNorm", RMS_NORM.args, reference=RMS_NORM.reference)
    assert DECLARED["RmsNorm"] is RMS_NORM
    with pytest.raises(ValueError, match="smoke case names must be unique"):
        _twin(smoke_cases=[("a", _values()), ("a", _values())])


def test_quick_cases_come_from_smoke_cases_and_the_full_run_adds_smoke_full_cases():
    quick, full = smoke.build_cases(quick=True), smoke.build_cases()
    for name, d in DECLARED.items():
        names = [c.name for c in quick if getattr(c, "declared", None) is d]
        assert names == [f"{name}/{''.join(n.split())}" for n, _ in d.smoke_cases]
        assert [c.name for c in full if getattr(c, "declared", None) is d] == names + [
            f"{name}/{''.join(n.split())}" for n, _ in d.smoke_full_cases]
        assert all(c.operator == name for c in full if getattr(c, "declared", None) is d)
    # LayerNorm's matrix is its declaration's: the full run adds the large shapes
    assert len(DECLARED["LayerNorm"].smoke_full_cases) >= 4
    assert "LayerNorm/fp16-large" in {c.name for c in full} - {c.name for c in quick}


def test_quick_cases_of_every_declaration_are_small():
    """--quick stays seconds-long: every tensor of a declared quick case is at most 2^20
    elements (the large shapes belong in smoke_full_cases)."""
    for name, d in DECLARED.items():
        for case_name, make in d.smoke_cases:
            for v in make():
                if isinstance(v, np.ndarray):
                    assert v.size <= 1 << 20, (name, case_name, v.shape)


def test_a_declared_case_takes_its_shape_and_dtypes_from_its_values():
    ln = DECLARED["LayerNorm"]
    case = smoke.declared_case(ln, _named(ln.smoke_cases, "bf16-fp32-weight"))
    assert case.name == "LayerNorm/bf16-fp32-weight" and case.operator == "LayerNorm"
    assert case.shape == (4, 128, 768) and case.dtype == "bfloat16"
    assert case.input_dtypes == (("input", "bfloat16"), ("weight", "float32"),
                                 ("bias", "float32"))
    assert smoke.case_dtypes(case) == {"bfloat16", "float32"}
    assert case.dtype_label() == "bf16 weight:fp32 bias:fp32"
    no_weight = smoke.declared_case(ln, _named(ln.smoke_full_cases, "no-weight"))
    assert no_weight.dtype_label() == "fp32 weight:none bias:none"
    assert no_weight.describe()["input_dtypes"] == {"input": "float32", "weight": None,
                                                   "bias": None}
    # --dtypes selects declared cases by their inputs' dtypes
    full = smoke.build_cases()
    fp32 = smoke.select_dtypes(full, "fp32")
    rms = [c.name for c in fp32 if c.operator == "RmsNorm"]
    assert rms == [c.name for c in full if c.operator == "RmsNorm" and c.dtype == "float32"]
    bf16 = {c.name for c in full if isinstance(c, smoke.DeclaredCase)
            and "bfloat16" in dict(c.input_dtypes).values()}
    assert "LayerNorm/bf16-fp32-weight" in bf16
    assert not bf16 & {c.name for c in smoke.select_dtypes(full, "fp32,fp16")}


def test_a_declaration_registered_in_a_test_is_in_the_matrix_and_runs(monkeypatch, tmp_path):
    twin = _twin(smoke_cases=[("fp32 6x32", _values()),
                              ("fp16", _values((3, 4, 16), np.float16, seed=1))],
                 smoke_full_cases=[("large", _values((64, 4096)))])
    monkeypatch.setitem(DECLARED, "RmsNormTwin", twin)
    quick = smoke.build_cases(quick=True)
    assert [c.name for c in quick if c.operator == "RmsNormTwin"] == [
        "RmsNormTwin/fp326x32", "RmsNormTwin/fp16"]
    assert quick[-2].name == "RmsNormTwin/fp326x32"     # after the operators declared before
    assert "RmsNormTwin/large" in {c.name for c in smoke.build_cases()}
    path = tmp_path / "r.json"
    status, out, err = _in_process(["--quick", "--json", str(path)])
    assert status == 0, out + err
    assert "RmsNormTwin (2 cases)" in out and "RmsNormTwin 2/2 passed" in out
    row = next(l for l in out.splitlines() if l.startswith("RmsNormTwin/fp16 "))
    assert " fp16 " in row and " 3x4x16 " in row and " pass " in row
    cases = json.loads(path.read_text())["devices"][0]["cases"]
    twin_cases = [c for c in cases if c["operator"] == "RmsNormTwin"]
    assert [c["passed"] for c in twin_cases] == [True, True]
    assert [o["dtype"] for o in twin_cases[1]["outputs"]] == ["float16", "float32"]


def test_a_declared_case_out_of_tolerance_fails_naming_the_output(tmp_path):
    twin = _twin(reference_=_perturbed_rms_norm,
                 smoke_cases=[("good-rstd", _values((8, 64)))])
    cases = smoke.declared_cases(twin)
    path = tmp_path / "r.json"
    status, out, err = _in_process(["--json", str(path)], cases)
    assert status == 1
    assert "FAILED: 1 of 1 cases on the CPU emulator: no NPU was tested" in out
    assert "RmsNorm/good-rstd [fp32, shape [8, 64], mask -, layout contiguous]" in out
    assert "y: max |err|" in out and "x the tolerance" in out
    assert re.search(r"\n    y +float32 +max\|err\| \S+ +err/tol \S+ +OUT OF TOLERANCE", out), out
    assert re.search(r"\n    rstd +float32 .* ok\n", out + "\n"), out
    assert "operators: RmsNorm 0/1 passed" in out
    assert "[1/1] RmsNorm/good-rstd FAIL" in err
    data = json.loads(path.read_text())
    case = data["devices"][0]["cases"][0]
    assert case["status"] == "fail" and case["error_ratio"] > 1
    assert [(o["name"], o["passed"]) for o in case["outputs"]] == [("y", False), ("rstd", True)]
    assert data["summary"]["operators"] == {"RmsNorm": {"total": 1, "passed": 0, "failed": 1,
                                                        "unsupported": 0}}
    # the declaration's own helper reports it as a test failure naming the output
    with pytest.raises(AssertionError, match=r"'good-rstd': y: max \|err\|"):
        twin.run_smoke_case(twin.smoke_cases[0])


def test_a_declared_case_that_cannot_be_made_fails_with_its_error():
    def broken():
        raise RuntimeError("no values today")
    twin = _twin(smoke_cases=[("broken", broken), ("fine", _values())])
    cases = smoke.declared_cases(twin)          # building the matrix does not raise
    assert [c.name for c in cases] == ["RmsNorm/broken", "RmsNorm/fine"]
    results = smoke.run_cases(cases)
    assert [r.status for r in results] == ["FAIL", "pass"]
    assert "RuntimeError: no values today" in results[0].error
    assert results[0].outputs == []
    with pytest.raises(AssertionError, match="no values today"):
        twin.run_smoke_case(twin.smoke_cases[0])


def test_check_outputs_names_missing_unexpected_and_misshapen_outputs():
    values = _values((4, 16))()
    y, rstd = (np.asarray(r, np.float32) for r in reference.rms_norm(*values))
    good = RMS_NORM.check_outputs(values, (y, rstd))
    assert [(o.name, o.problem) for o in good] == [("y", None), ("rstd", None)]
    assert all(o.error_ratio <= 1 and math.isfinite(o.max_abs_error) for o in good)
    assert RMS_NORM.check_result(values, (y, rstd)) == tuple(o.error_ratio for o in good)
    missing = RMS_NORM.check_outputs(values, (y, None))
    assert missing[1].name == "rstd" and missing[1].problem == "missing although requested"
    assert missing[1].error_ratio == math.inf
    short = RMS_NORM.check_outputs(values, (y[:2], rstd))
    assert short[0].problem == "has shape (2, 16), expected (4, 16)"
    nan = y.copy()
    nan[0, 0] = np.nan
    assert RMS_NORM.check_outputs(values, (nan, rstd))[0].max_abs_error == math.inf


def test_a_fault_in_a_declared_operator_fails_its_case_not_the_run(tmp_path):
    """The emulator's aclnnRmsNorm phase two fails on its second call (ACL_EMU_FAIL): that
    case fails with the operator's status code, every other case runs and passes."""
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--json", str(path)], ACL_EMU_FAIL="aclnnRmsNorm:2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    cases = quick_cases()   # the part the run is on: its operators' cases
    second = [c.name for c in cases if c.operator == "RmsNorm"][1]
    assert f"FAILED: 1 of {len(cases)} cases" in proc.stdout
    assert "361001" in proc.stdout.split("FAILED: ")[1]
    data = json.loads(path.read_text())
    assert data["devices"][0]["summary"]["failed_cases"] == [second]
    assert data["summary"]["operators"]["RmsNorm"]["failed"] == 1
