"""``acl-py smoke``: the quick run passes on the emulator well under a minute with a readable
report and well-formed JSON, and a broken case (a perturbed reference, an exception, a fault
injected into the operator) makes it fail loudly with exit status 1."""
from __future__ import annotations

import io
import json
import math
import re
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from acl_py import smoke

ROOT = Path(__file__).resolve().parent.parent


def emulator_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ACL_PY_BACKEND"] = "emulator"
    env.pop("ACL_EMU_FAIL", None)
    env.update(extra)
    return env


def run_cli(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acl_py", "smoke", *args], cwd=ROOT,
                          env=emulator_env(**env), capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("smoke") / "report.json"
    t0 = time.perf_counter()
    proc = run_cli(["--quick", "--json", str(path)])
    elapsed = time.perf_counter() - t0
    return proc, elapsed, path


def test_quick_run_passes_fast(quick_run):
    proc, elapsed, _ = quick_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert elapsed < 60, f"smoke --quick took {elapsed:.1f} s"
    n = len(smoke.build_cases(quick=True))
    assert f"PASSED: all {n} cases" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_quick_run_report_is_readable(quick_run):
    proc, _, _ = quick_run
    out = proc.stdout
    # header: backend and where its libraries came from, the device
    assert "backend   emulator" in out
    assert "libascendcl.so" in out and "libnnopbase.so" in out
    assert re.search(r"device    0 of \d+, memory [\d.]+ GiB free of [\d.]+ GiB", out), out
    # the table: a header row, then one row per case with its verdict
    lines = out.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("case "))
    for col in ("dtypes", "shape", "mask", "layout", "result", "max|err|", "err/tol", "time"):
        assert col in lines[header]
    rows = lines[header + 2:header + 2 + len(smoke.build_cases(quick=True))]
    for case, row in zip(smoke.build_cases(quick=True), rows):
        assert row.startswith(case.name + " "), row
        assert " pass " in row, row


def test_quick_run_progress_is_one_line_per_case_without_a_tty(quick_run):
    proc, _, _ = quick_run
    cases = smoke.build_cases(quick=True)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("[")]
    assert len(lines) == len(cases), proc.stderr
    for i, (case, line) in enumerate(zip(cases, lines), 1):
        assert line.lstrip("[ ").startswith(f"{i}/{len(cases)}] {case.name} ok"), line


def test_quick_run_json_is_well_formed(quick_run):
    _, _, path = quick_run
    data = json.loads(path.read_text())
    cases = smoke.build_cases(quick=True)
    assert data["backend"] == "emulator"
    assert data["mode"] == "quick"
    env = data["environment"]
    assert set(env["libraries"]) == {"ascendcl", "nnopbase", "opapi"}
    assert all(os.path.isabs(p) and os.path.isfile(p) for p in env["libraries"].values())
    assert env["device"]["memory_total"] >= env["device"]["memory_free"] > 0
    assert [c["name"] for c in data["cases"]] == [c.name for c in cases]
    for c, case in zip(data["cases"], cases):
        assert c["passed"] is True and c["error"] is None
        assert c["shape"] == list(case.shape)
        assert c["output_mask"] == list(case.mask)
        assert c["seconds"] >= 0
        requested = [n for n, m in zip(smoke.OUTPUT_NAMES, case.mask) if m]
        empty = 0 in case.shape
        assert [o["name"] for o in c["outputs"]] == requested
        for o in c["outputs"]:
            assert o["passed"] is True
            assert 0 <= o["error_ratio"] <= 1
            assert o["max_abs_error"] >= 0
            if not empty and case.data != "sample":
                # random data: float rounding leaves some error on low-precision outputs
                assert math.isfinite(o["max_abs_error"])
    s = data["summary"]
    assert s == {**s, "total": len(cases), "passed": len(cases), "failed": 0,
                 "failed_cases": [], "ok": True}
    assert set(data["tolerance"]["rtol"]) == {"float32", "float16", "bfloat16"}


def _perturb(expected):
    """Moves one element of grad_input by far more than any tolerance."""
    gi, gw, gb = expected
    gi = np.array(gi, copy=True)
    gi.flat[gi.size // 2] += 1.0 + abs(gi.flat[gi.size // 2])
    return gi, gw, gb


def _in_process(argv, cases):
    out, err = io.StringIO(), io.StringIO()
    status = smoke.main(argv, cases=cases, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_broken_case_fails_loudly(tmp_path):
    good = smoke.Case("good", (8, 32))
    broken = smoke.Case("deliberately-broken", (8, 32), seed=3, reference_hook=_perturb)
    path = tmp_path / "r.json"
    status, out, err = _in_process(["--json", str(path)], [good, broken])
    assert status == 1
    assert "FAILED: 1 of 2 cases" in out
    assert "deliberately-broken" in out.split("FAILED: 1 of 2 cases")[1]
    assert "grad_input" in out and "OUT OF TOLERANCE" in out
    assert "PASSED" not in out
    row = next(l for l in out.splitlines() if l.startswith("deliberately-broken "))
    assert " FAIL " in row
    assert "[1/2] good ok" in err and "[2/2] deliberately-broken FAIL" in err
    data = json.loads(path.read_text())
    assert data["summary"]["ok"] is False
    assert data["summary"]["failed_cases"] == ["deliberately-broken"]
    bad = data["cases"][1]
    assert bad["passed"] is False and bad["error_ratio"] > 1
    assert [o["passed"] for o in bad["outputs"]] == [False, True, True]


def test_a_case_that_raises_is_a_failure_with_its_error():
    def explode(expected):
        raise RuntimeError("reference exploded")
    status, out, _ = _in_process([], [smoke.Case("raises", (4, 8), reference_hook=explode)])
    assert status == 1
    assert "FAILED: 1 of 1 cases" in out
    assert "RuntimeError: reference exploded" in out


def test_operator_failure_on_the_backend_fails_the_command(tmp_path):
    """A real failure, not an injected reference: the emulator's phase two fails on its third
    call (ACL_EMU_FAIL), so the third case raises the operator's error; the command exits 1,
    names the case and the status code, and still runs and reports every other case."""
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--json", str(path)],
                   ACL_EMU_FAIL="aclnnLayerNormBackward:3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    cases = smoke.build_cases(quick=True)
    third = cases[2].name
    assert f"FAILED: 1 of {len(cases)} cases" in proc.stdout
    assert "361001" in proc.stdout
    data = json.loads(path.read_text())
    assert data["summary"]["failed_cases"] == [third]
    assert sum(c["passed"] for c in data["cases"]) == len(cases) - 1


def test_json_to_stdout_alone_and_non_finite_errors_are_valid_json():
    """``--json -``: stdout is one JSON document (the table goes to stderr); a NaN expected
    value gives a non-finite error, written as a string since JSON has no inf/NaN."""
    nan_case = smoke.Case("nan-expected", (4, 8),
                          reference_hook=lambda e: (np.full_like(e[0], np.nan), e[1], e[2]))
    out, err = io.StringIO(), io.StringIO()
    status = smoke.main(["--json", "-"], cases=[nan_case], out=out, err=err)
    assert status == 1
    data = json.loads(out.getvalue())
    case = data["cases"][0]
    assert case["passed"] is False
    assert case["outputs"][0]["max_abs_error"] in ("inf", "nan")
    assert "FAILED: 1 of 1 cases" in err.getvalue()


def test_dtypes_option_selects_cases():
    """--dtypes fp32,fp16 (Atlas parts without bf16) drops every case touching bf16."""
    full = smoke.build_cases()
    kept = smoke.select_dtypes(full, "fp32,fp16")
    assert kept and all("bfloat16" not in smoke.case_dtypes(c) for c in kept)
    assert {c.name for c in full} - {c.name for c in kept} == {
        c.name for c in full if "bfloat16" in smoke.case_dtypes(c)}
    assert smoke.select_dtypes(full, "float32,fp16,bf16") == full
    with pytest.raises(ValueError, match="fp64"):
        smoke.select_dtypes(full, "fp32,fp64")
    status, out, err = _in_process(["--dtypes", "fp64"], [])
    assert status == 2 and "unknown dtype 'fp64'" in err


def test_progress_bar_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty = Tty()
    p = smoke.Progress(tty, width=10)
    case = smoke.Case("c", (2, 2))
    p(0, 2, case, None)
    p(1, 2, case, smoke.CaseResult(case, True, 0.001))
    text = tty.getvalue()
    assert "\r[----------] 0/2 c" in text
    assert "\r[#####-----] 1/2 c: ok" in text
    assert "\n" not in text  # a bar redraws in place


def test_case_matrix_covers_the_feature_list():
    full = smoke.build_cases()
    quick = smoke.build_cases(quick=True)
    assert {c.name for c in quick} <= {c.name for c in full}
    assert len({c.name for c in full}) == len(full), "case names must be unique"
    for cases in (quick, full):
        assert {c.dtype for c in cases} == {"float32", "float16", "bfloat16"}
        assert any(c.stats_dtype == "float32" and c.dtype != "float32" for c in cases)
        assert any(not c.weight for c in cases)
        assert any(c.mask != (True, True, True) for c in cases)
        assert any(0 in c.shape for c in cases)
        assert any(c.layout == "transposed" for c in cases)
        assert any(c.layout == "strided-out" for c in cases)
    assert {c.mask for c in full} == {(a, b, c) for a in (True, False) for b in (True, False)
                                      for c in (True, False)}
    assert max(math.prod(c.shape) for c in full) >= 4096 * 4096
    assert min(math.prod(c.shape) for c in full if 0 not in c.shape) == 1
