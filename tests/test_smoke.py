"""``acl-py smoke``: the quick run passes on the emulator with a readable report that says what
is tested before any case runs and that no NPU was tested, and well-formed JSON; several
devices are tested concurrently; ``--require-npu`` refuses the emulator; a documented
unsupported case is reported as such on an NPU; and a broken case (a perturbed reference, an
exception, a fault injected into the operator) makes it fail loudly with exit status 1."""
from __future__ import annotations

import io
import json
import math
import re
import os
import subprocess
import sys
import threading
import time
import textwrap
from pathlib import Path

import numpy as np
import pytest

import acl_py
from acl_py import smoke

ROOT = Path(__file__).resolve().parent.parent


def emulator_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ACL_PY_BACKEND"] = "emulator"
    for k in list(env):
        if k.startswith("ACL_EMU_"):
            del env[k]
    env.update(extra)
    return env


def run_cli(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acl_py", "smoke", *args], cwd=ROOT,
                          env=emulator_env(**env), capture_output=True, text=True, timeout=300)


# The part the CLI runs on here (emulator_env drops ACL_EMU_*: the emulator's default part).
DEFAULT_PART = "Ascend910B2"


def quick_cases(part=DEFAULT_PART):
    """The quick run's cases on ``part``: every declared operator's but those the part has no
    kernel for (InstanceNorm runs on the Atlas inference series only, AddLayerNormQuant on
    Ascend 950 only)."""
    return smoke.select_parts(smoke.build_cases(quick=True), part)[0]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("smoke") / "report.json"
    proc = run_cli(["--quick", "--json", str(path)])
    return proc, path


def test_quick_run_passes_and_says_no_npu_was_tested(quick_run):
    proc, _ = quick_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(quick_cases())
    verdict = proc.stdout.rstrip().splitlines()[-1]
    assert verdict.startswith(f"PASSED: all {n} cases in ")
    assert verdict.endswith("on the CPU emulator: no NPU was tested")
    assert "FAIL" not in proc.stdout


def test_quick_run_report_is_readable(quick_run):
    proc, _ = quick_run
    out = proc.stdout
    # header: backend and where its libraries came from, the part, the devices
    assert "backend   emulator" in out
    assert "no NPU will be tested" in out
    assert "libascendcl.so" in out and "libnnopbase.so" in out
    assert re.search(r"\n  soc       \S+", out), out
    assert re.search(r"devices   0 of \d+ \(1 tested\)", out), out
    assert re.search(r"device 0  memory [\d.]+ GiB free of [\d.]+ GiB", out), out
    # the table: a header row, then one row per case with its verdict
    lines = out.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("case "))
    assert lines[header - 1] .startswith("device 0")
    for col in ("dtypes", "shape", "mask", "layout", "result", "max|err|", "err/tol", "time"):
        assert col in lines[header]
    rows = lines[header + 2:header + 2 + len(quick_cases())]
    for case, row in zip(quick_cases(), rows):
        assert row.startswith(case.name + " "), row
        assert " pass " in row, row


def test_quick_run_runs_every_declared_operator(quick_run):
    """Every declaration with smoke cases is in the quick run (RmsNorm's among them), its
    cases named after it and passing; the header says which operators run, the summary how
    each did."""
    from acl_py.ops import DECLARED
    proc, path = quick_run
    declared = [name for name, d in DECLARED.items()
                if d.smoke_cases and d.runs_on(DEFAULT_PART)]
    assert "RmsNorm" in declared and "LayerNorm" in declared
    counts = smoke.count_operators(quick_cases())
    # LayerNormBackward's matrix first; its declaration's smoke cases count under its name
    assert "LayerNormBackward" in declared
    assert list(counts) == ["LayerNormBackward"] + [n for n in declared
                                                    if n != "LayerNormBackward"]
    assert counts["LayerNormBackward"] == (
        len(smoke.layer_norm_backward_cases(True)) +
        len(DECLARED["LayerNormBackward"].smoke_cases))
    header = next(l for l in proc.stdout.splitlines() if l.startswith("  operators "))
    assert header == "  operators " + ", ".join(f"{op} ({n} case{'s' if n != 1 else ''})"
                                                for op, n in counts.items())
    summary = next(l for l in proc.stdout.splitlines() if l.startswith("operators: "))
    assert summary == "operators: " + ", ".join(f"{op} {n}/{n} passed"
                                                 for op, n in counts.items())
    cases = json.loads(path.read_text())["devices"][0]["cases"]
    rms = [c for c in cases if c["operator"] == "RmsNorm"]
    assert [c["name"] for c in rms] == [f"RmsNorm/{''.join(name.split())}"
                                        for name, _ in DECLARED["RmsNorm"].smoke_cases]
    for c in rms:
        assert c["status"] == "pass" and [o["name"] for o in c["outputs"]] == ["y", "rstd"]
        assert c["dtype"] == c["input_dtypes"]["x"]
        assert all(0 <= o["error_ratio"] <= 1 for o in c["outputs"])
    assert {c["dtype"] for c in rms} == {"float32", "float16"}


def test_quick_run_progress_is_one_line_per_case_without_a_tty(quick_run):
    proc, _ = quick_run
    cases = quick_cases()
    lines = [l for l in proc.stderr.splitlines() if l.startswith("[")]
    assert len(lines) == len(cases), proc.stderr
    for i, (case, line) in enumerate(zip(cases, lines), 1):
        assert line.lstrip("[ ").startswith(f"{i}/{len(cases)}] {case.name} ok"), line


def test_header_is_printed_before_any_case_runs():
    # One stream for the report and the progress: the order is the order a person sees.
    class Recorder(io.StringIO):
        pass
    both = Recorder()
    seen_at_first_case = []

    def spy(expected):
        seen_at_first_case.append(both.getvalue())
        return expected
    status = smoke.main([], cases=[smoke.Case("spy", (4, 8), reference_hook=spy)],
                        out=both, err=both)
    assert status == 0
    before = seen_at_first_case[0]
    for fact in ("backend   emulator", "soc       ", "devices   0 of", "device 0  memory",
                 "dtypes    ", "no NPU will be tested"):
        assert fact in before, (fact, before)
    assert "spy" not in before


def test_quick_run_json_is_well_formed(quick_run):
    _, path = quick_run
    data = json.loads(path.read_text())
    cases = quick_cases()
    assert data["backend"] == "emulator" and data["npu_tested"] is False
    assert data["mode"] == "quick"
    assert "soc" in data and data["soc"] == data["environment"]["soc"]
    assert data["dtypes"] == ["float32", "float16", "bfloat16"] or "bfloat16" not in data["dtypes"]
    env = data["environment"]
    assert env["npu"] is False
    assert set(env["libraries"]) == {"ascendcl", "nnopbase", "opapi"}
    assert all(os.path.isabs(p) and os.path.isfile(p) for p in env["libraries"].values())
    assert [d["id"] for d in env["devices"]] == [0]
    assert env["devices"][0]["memory_total"] >= env["devices"][0]["memory_free"] > 0
    assert [d["id"] for d in data["devices"]] == [0]
    dev = data["devices"][0]
    assert [c["name"] for c in dev["cases"]] == [c.name for c in cases]
    for c, case in zip(dev["cases"], cases):
        assert c["passed"] is True and c["status"] == "pass" and c["error"] is None
        assert c["shape"] == list(case.shape)
        assert c["documented_unsupported"] == case.unsupported
        assert c["seconds"] >= 0
        if isinstance(case, smoke.DeclaredCase):   # every output the call requests (when=)
            assert c["output_mask"] is None
            assert c["input_dtypes"] == dict(case.input_dtypes)
            a = case.declared.bind(case.make_values(), np.ndarray)
            requested = [o.py for o in case.declared.outputs if o.when is None or o.when(a)]
        else:
            assert c["output_mask"] == list(case.mask)
            names = next(op.outputs for op in smoke.OPERATORS if op.name == case.operator)
            requested = [n for n, m in zip(names, case.mask) if m]
        empty = 0 in case.shape
        # an output the part does not write for the case is reported as such, not checked
        # (AddRmsNormQuant's y2 without scales2)
        requested = [n for n in requested if n not in c["not_written"]]
        assert [o["name"] for o in c["outputs"]] == requested
        for o in c["outputs"]:
            assert o["passed"] is True
            assert 0 <= o["error_ratio"] <= 1
            assert o["max_abs_error"] >= 0
            if not empty and getattr(case, "data", None) != "sample":
                # random data: float rounding leaves some error on low-precision outputs
                assert math.isfinite(o["max_abs_error"])
    n = len(cases)
    assert dev["summary"] == {**dev["summary"], "total": n, "passed": n, "failed": 0,
                              "unsupported": 0, "failed_cases": [], "error": None, "ok": True}
    s = data["summary"]
    assert s == {**s, "devices": 1, "total": n, "passed": n, "failed": 0,
                 "failed_devices": [], "ok": True}
    ops = smoke.count_operators(cases)
    assert s["operators"] == {op: {"total": k, "passed": k, "failed": 0, "unsupported": 0}
                              for op, k in ops.items()}
    assert s["seconds"] < 60        # the quick run stays seconds-long
    assert set(data["tolerance"]["rtol"]) == {"float32", "float16", "bfloat16"}


# ---- several devices ---------------------------------------------------------------------------

def test_all_devices_are_tested_each_with_a_table(tmp_path):
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--devices", "all", "--dtypes", "fp32", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "devices   0, 1, 2 of 3 (3 tested, concurrently)" in out
    n = len(smoke.select_dtypes(quick_cases(), "fp32"))
    for d in range(3):
        assert re.search(rf"^device {d}\b", out, re.M), out
        progress = [l for l in proc.stderr.splitlines() if l.startswith(f"device {d} [")]
        assert len(progress) == n
    assert out.count("\ncase ") == 3
    assert out.rstrip().splitlines()[-1].startswith(f"PASSED: all {n} cases on each of 3 devices")
    data = json.loads(path.read_text())
    assert [d["id"] for d in data["devices"]] == [0, 1, 2]
    for d in data["devices"]:
        assert d["summary"]["ok"] is True and d["summary"]["total"] == n
        assert len(d["cases"]) == n
        # declared operators' cases run on every device too
        assert {"LayerNorm", "RmsNorm"} <= {c["operator"] for c in d["cases"]}
    assert data["summary"]["total"] == 3 * n and data["summary"]["ok"] is True


def test_listed_devices_and_bad_lists(tmp_path):
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--devices", "3,1", "--dtypes", "fp32", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [d["id"] for d in json.loads(path.read_text())["devices"]] == [1, 3]
    proc = run_cli(["--devices", "0,5"], ACL_EMU_DEVICE_COUNT="4")
    assert proc.returncode == 2 and "no device 5 (the backend has devices 0-3)" in proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(ValueError, match="not a device id"):
        smoke.parse_devices("0,x", 4)
    assert smoke.parse_devices(" all ", 2) == [0, 1]
    assert smoke.parse_devices("2,0,2", 3) == [0, 2]


# A stand-in operator whose cases meet at a barrier: they can only all finish if every device
# runs at the same time; each records the device and stream it ran on.
BARRIER_OPERATOR = '''
import threading
import acl_py
import acl_py
from acl_py import smoke
from acl_py.raw import ffi

barrier = None
seen = []

def cases(quick=False):
    return [smoke.Case("meet", (2, 2), operator="Barrier")]

def run(case, stream):
    seen.append((acl_py.current_device().id, int(ffi.cast("uintptr_t", stream.handle)),
                 threading.current_thread().name))
    barrier.wait(timeout=30)
    return smoke.CaseResult(case, True, 0.0)
'''


def test_devices_run_concurrently_each_on_its_own_stream(tmp_path):
    # A fresh interpreter with three emulated devices (the session's has one). A barrier of 3 only opens if
    # the three devices' cases run at the same time (sequential runs would time out and fail).
    (tmp_path / "acl_py_smoke_barrier.py").write_text(BARRIER_OPERATOR)
    code = textwrap.dedent("""
        import json, sys, threading
        sys.path.insert(0, sys.argv[1])
        import acl_py_smoke_barrier as op
        from acl_py import smoke
        smoke.OPERATORS = (smoke.SmokeOperator("Barrier", "acl_py_smoke_barrier:cases",
                                               "acl_py_smoke_barrier:run"),)
        op.barrier = threading.Barrier(3)
        runs = smoke.run_devices(op.cases(), [0, 1, 2])
        print(json.dumps({"errors": [r.error for r in runs],
                          "passed": [[c.passed for c in r.results] for r in runs],
                          "seen": op.seen}))
    """)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=emulator_env(ACL_EMU_DEVICE_COUNT="3"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["errors"] == [None, None, None] and res["passed"] == [[True]] * 3
    assert sorted(d for d, _, _ in res["seen"]) == [0, 1, 2]
    assert len({s for _, s, _ in res["seen"]}) == 3      # a stream per device
    assert len({t for _, _, t in res["seen"]}) == 3      # a thread per device


def test_a_device_that_cannot_be_tested_fails_the_run(tmp_path):
    # The second device's stream cannot be created (an injected aclrtCreateStream failure):
    # that device is reported as untested, the other still runs, the verdict is FAILED.
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--dtypes", "fp32", "--devices", "all", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="2", ACL_EMU_FAIL="aclrtCreateStream:2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "could not be tested" in proc.stdout and "207001" in proc.stdout
    assert "PASSED" not in proc.stdout
    data = json.loads(path.read_text())
    bad = [d for d in data["devices"] if not d["summary"]["ok"]]
    assert len(bad) == 1 and "aclrtCreateStream" in bad[0]["summary"]["error"]
    assert data["summary"]["failed_devices"] == [bad[0]["id"]]


# ---- --require-npu -----------------------------------------------------------------------------

def test_require_npu_refuses_the_emulator(tmp_path):
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--require-npu", "--json", str(path)])
    assert proc.returncode == 1
    assert "PASSED" not in proc.stdout + proc.stderr
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith("FAILED: --require-npu: the backend is the CPU emulator")
    assert "backend   emulator" in proc.stdout        # the header still says what was found
    assert not [l for l in proc.stderr.splitlines() if l.startswith("[")]   # no case ran
    data = json.loads(path.read_text())
    assert data["summary"]["ok"] is False and data["npu_tested"] is False
    assert "--require-npu" in data["summary"]["error"] and data["devices"] == []


def test_require_npu_sees_through_the_emulator_posing_as_cann():
    from acl_py import _loader
    prefix = str(_loader.emulator_prefix())
    proc = run_cli(["--quick", "--require-npu"], ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=prefix)
    assert proc.returncode == 1 and "PASSED" not in proc.stdout
    assert "are the acl-py CPU emulator's" in proc.stdout
    # Without --require-npu it runs, and its verdict does not claim an NPU either.
    proc = run_cli(["--quick", "--dtypes", "fp32"], ACL_PY_BACKEND="cann",
                   ASCEND_HOME_PATH=prefix)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("on the CPU emulator: no NPU was tested")


# ---- documented unsupported cases --------------------------------------------------------------

def test_empty_cases_carry_the_vendor_reason():
    for case in smoke.build_cases():
        if 0 in case.shape:
            assert case.unsupported and "aclnnLayerNormBackward.md" in case.unsupported
        else:
            assert case.unsupported is None


def test_documented_unsupported_failure_on_an_npu_is_reported_as_such():
    # A case that fails (its expected values perturbed), documented unsupported: on an NPU it
    # is "unsupported", not a failure; on the emulator it is a failure like any other.
    case = smoke.Case("empty-ish", (8, 32), reference_hook=lambda e: _perturb(e),
                      unsupported="documented unsupported (vendor doc)")
    on_npu = smoke.run_case(case, npu=True)
    assert not on_npu.passed and on_npu.unsupported == "documented unsupported (vendor doc)"
    assert on_npu.status == "unsupported" and not on_npu.failed
    on_emu = smoke.run_case(case, npu=False)
    assert on_emu.status == "FAIL" and on_emu.failed
    good = smoke.run_case(smoke.Case("good", (8, 32)), npu=True)
    run = smoke.DeviceRun(0, [good, on_npu])
    assert run.ok and run.summary()["unsupported_cases"] == ["empty-ish"]
    env = {"npu": True, "soc": "Ascend910B2", "backend": "cann"}
    text = smoke.format_summary(env, [run], 1.0)
    assert "unsupported: empty-ish: documented unsupported (vendor doc)" in text
    assert text.splitlines()[-1] == ("PASSED: 1 of 2 cases (1 documented unsupported, listed "
                                     "above) in 1.0 s on Ascend910B2 NPU 0")
    assert " unsupported " in smoke.format_table([good, on_npu]).splitlines()[-1] + " "
    rep = smoke.report({**env, "reason": "", "devices": []}, [run], "quick", 1.0)
    assert rep["summary"]["ok"] is True and rep["summary"]["unsupported"] == 1
    assert rep["devices"][0]["cases"][1]["status"] == "unsupported"


def test_npu_verdicts_name_the_part_and_devices():
    good = smoke.CaseResult(smoke.Case("c", (2, 2)), True, 0.001)
    env = {"npu": True, "soc": "Ascend910B2", "backend": "cann"}
    runs = [smoke.DeviceRun(d, [good]) for d in (0, 3, 5)]
    assert smoke.format_summary(env, runs, 2.0).splitlines()[-1] == (
        "PASSED: all 1 cases on each of 3 devices in 2.0 s on 3 Ascend910B2 NPUs (0, 3, 5)")
    bad = smoke.CaseResult(smoke.Case("c", (2, 2)), False, 0.001, error="boom")
    runs[1] = smoke.DeviceRun(3, [bad])
    text = smoke.format_summary(env, runs, 2.0)
    assert "FAILED: 1 of 3 case runs on 3 Ascend910B2 NPUs (0, 3, 5)" in text
    assert "device 3: c [fp32" in text and "PASSED" not in text


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
    assert "FAILED: 1 of 2 cases on the CPU emulator: no NPU was tested" in out
    assert "deliberately-broken" in out.split("FAILED: 1 of 2 cases")[1]
    assert "grad_input" in out and "OUT OF TOLERANCE" in out
    assert "PASSED" not in out
    row = next(l for l in out.splitlines() if l.startswith("deliberately-broken "))
    assert " FAIL " in row
    assert "[1/2] good ok" in err and "[2/2] deliberately-broken FAIL" in err
    data = json.loads(path.read_text())
    assert data["summary"]["ok"] is False
    assert data["devices"][0]["summary"]["failed_cases"] == ["deliberately-broken"]
    bad = data["devices"][0]["cases"][1]
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
    cases = quick_cases()
    third = cases[2].name
    assert f"FAILED: 1 of {len(cases)} cases" in proc.stdout
    assert "361001" in proc.stdout
    data = json.loads(path.read_text())
    assert data["devices"][0]["summary"]["failed_cases"] == [third]
    assert sum(c["passed"] for c in data["devices"][0]["cases"]) == len(cases) - 1


def test_json_to_stdout_alone_and_non_finite_errors_are_valid_json():
    """``--json -``: stdout is one JSON document (the table goes to stderr); a NaN expected
    value gives a non-finite error, written as a string since JSON has no inf/NaN."""
    nan_case = smoke.Case("nan-expected", (4, 8),
                          reference_hook=lambda e: (np.full_like(e[0], np.nan), e[1], e[2]))
    out, err = io.StringIO(), io.StringIO()
    status = smoke.main(["--json", "-"], cases=[nan_case], out=out, err=err)
    assert status == 1
    data = json.loads(out.getvalue())
    case = data["devices"][0]["cases"][0]
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
    for every in (quick, full):
        cases = [c for c in every if isinstance(c, smoke.Case)]   # LayerNormBackward's matrix
        assert {c.dtype for c in cases} == {"float32", "float16", "bfloat16"}
        assert any(c.stats_dtype == "float32" and c.dtype != "float32" for c in cases)
        assert any(not c.weight for c in cases)
        assert any(c.mask != (True, True, True) for c in cases)
        assert any(0 in c.shape for c in cases)
        assert any(c.layout == "transposed" for c in cases)
        assert any(c.layout == "strided-out" for c in cases)
        assert any(c.layout == "other-stream" for c in cases)
    assert {c.mask for c in full if isinstance(c, smoke.Case)} == {
        (a, b, c) for a in (True, False) for b in (True, False) for c in (True, False)}
    assert max(math.prod(c.shape) for c in full) >= 4096 * 4096
    assert min(math.prod(c.shape) for c in full if 0 not in c.shape) == 1


@pytest.mark.parametrize("on_default_stream", [False, True])
def test_other_stream_case_orders_the_launch_by_an_event_wait(monkeypatch, on_default_stream):
    """The ``other-stream`` layout copies the inputs on a second stream and orders the launch
    after them on the device (Stream.wait), with no host synchronization in between; the
    second stream is closed with the case."""
    calls = []
    real = acl_py.Stream.wait

    def spy(self, other):
        calls.append((self, other))
        return real(self, other)
    monkeypatch.setattr(acl_py.Stream, "wait", spy)
    monkeypatch.setattr(acl_py.Stream, "synchronize", _no_sync_of(acl_py.Stream.synchronize,
                                                                   calls))
    case = next(c for c in smoke.build_cases(quick=True) if c.layout == "other-stream")
    s = None if on_default_stream else acl_py.Stream()
    try:
        result = smoke.run_case(case, s)
    finally:
        if s is not None:
            s.close()
    assert result.passed, result.error
    waits = [c for c in calls if c[0] != "sync" and isinstance(c[1], acl_py.Stream)]
    assert len(waits) == 1
    launch, upload = waits[0]
    assert launch == (acl_py.default_stream() if s is None else s)
    assert upload != launch and upload.closed
    # nothing synchronized the upload stream before the wait was queued
    assert ("sync", upload) not in calls[:calls.index(waits[0])]


def _no_sync_of(real, calls):
    def sync(self, timeout=None):
        calls.append(("sync", self))
        return real(self, timeout)
    return sync


def test_progress_on_a_terminal_with_several_devices():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty = Tty()
    p = smoke.Progress(tty, width=8, devices=[0, 3])
    case = smoke.Case("c", (2, 2))
    p.device(0, 0, 2, case, None)                      # each device starts its first case
    p.device(3, 0, 2, case, None)
    p.device(0, 1, 2, case, smoke.CaseResult(case, True, 0.001))
    p.device(3, 2, 2, case, smoke.CaseResult(case, True, 0.001))
    text = tty.getvalue()
    assert "\r[##------] 1/4 d0:1 d3:0" in text
    assert "\r[######--] 3/4 d0:1 d3:2" in text
    assert "\n" not in text
    # Eight devices, each past its 30th case: every count is shown, none cut off.
    tty = Tty()
    p = smoke.Progress(tty, width=8, devices=list(range(8)))
    for d in range(8):
        p.device(d, 31 + d, 39, case, smoke.CaseResult(case, True, 0.001))
    last = tty.getvalue().split("\r")[-1]
    assert last.rstrip().endswith(" ".join(f"d{d}:{31 + d}" for d in range(8)))



# ---- dtypes follow the part --------------------------------------------------------------------

def test_default_dtypes_follow_the_part(tmp_path):
    # An Atlas training part of the first generation has no BFLOAT16: no bf16 case runs, the
    # header says why, and the report names the part.
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--json", str(path)], ACL_EMU_SOC="Ascend910A")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "soc       Ascend910A (BFLOAT16: no)" in proc.stdout
    assert "bf16 cases left out: Ascend910A has no BFLOAT16" in proc.stdout
    data = json.loads(path.read_text())
    assert data["soc"] == "Ascend910A" and data["dtypes"] == ["float32", "float16"]
    names = [c["name"] for c in data["devices"][0]["cases"]]
    expected = [c.name for c in smoke.build_cases(quick=True)
                if "bfloat16" not in smoke.case_dtypes(c)
                and c.runs_on("Ascend910A")]
    assert names == expected and len(names) < len(smoke.build_cases(quick=True))
    # ... and no case of an operator the part has no kernel for (the definitions of
    # AddRmsNorm, GemmaRmsNorm, InplaceAddRmsNorm, AddLayerNorm, DeepNorm, GroupNormSilu,
    # GroupNormSiluV2, AddLayerNormGrad and DeepNormGrad register none for the Atlas training
    # series, nor LayerNormV4's, which FastLayerNorm runs, nor InstanceNorm's, nor
    # RmsNormQuant's, nor AddRmsNormQuant's, nor AddRmsNormDynamicQuant's (V1 and V2);
    # AddLayerNormQuant's op_api runs on Ascend 950 only), named in the header
    gone = ("AddRmsNorm", "GemmaRmsNorm", "InplaceAddRmsNorm", "AddLayerNorm", "DeepNorm",
            "GroupNormSilu", "GroupNormSiluV2", "AddLayerNormGrad", "DeepNormGrad",
            "FastLayerNorm", "InstanceNorm", "RmsNormQuant", "AddRmsNormQuant",
            "AddRmsNormDynamicQuant", "AddRmsNormDynamicQuantV2", "AddLayerNormQuant")
    assert not any(n.startswith(tuple(g + "/" for g in gone)) for n in names)
    assert f"left out: {', '.join(gone)} (no kernel on Ascend910A" in proc.stdout
    # An Atlas A2 part computes bf16: every case runs but InstanceNorm's (the Atlas inference
    # series' only) and AddLayerNormQuant's (Ascend 950's only), named in the header.
    proc = run_cli(["--quick", "--json", str(path)], ACL_EMU_SOC="Ascend910B2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(path.read_text())
    assert data["soc"] == "Ascend910B2" and "bfloat16" in data["dtypes"]
    assert len(data["devices"][0]["cases"]) == len(quick_cases("Ascend910B2"))
    assert "left out: InstanceNorm, AddLayerNormQuant (no kernel on Ascend910B2" in proc.stdout


# ---- the runtime offers no device -------------------------------------------------------------

def test_a_failed_device_count_is_a_failure_with_its_reason_not_a_usage_error(tmp_path):
    # aclrtGetDeviceCount fails when the runtime refuses ASCEND_RT_VISIBLE_DEVICES (ids out
    # of ascending order: hicann/runtime api_impl.cc GetDeviceCount, 207004; the emulator
    # reads it the same way) or the driver cannot count its NPUs: exit status 1 with the
    # runtime's error and the variable's rule, before any case; the JSON report says the same.
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--devices", "all", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="8", ASCEND_RT_VISIBLE_DEVICES="3,1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "FAILED: could not run the smoke test: counting the devices failed" in out
    assert "aclrtGetDeviceCount failed: ACL_ERROR_RT_NO_DEVICE (207004)" in out
    assert "ids must be in ascending order" in out
    assert "ASCEND_RT_VISIBLE_DEVICES='3,1': the runtime takes a comma-separated list" in out
    assert "PASSED" not in out and "usage" not in proc.stderr
    data = json.loads(path.read_text())
    assert data["summary"]["ok"] is False and "counting the devices failed" in \
        data["summary"]["error"]
    # A driver that cannot count its devices (an injected failure): the same, without the
    # variable's note.
    proc = run_cli(["--quick"], ACL_EMU_FAIL="aclrtGetDeviceCount:1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "counting the devices failed: InternalError: aclrtGetDeviceCount failed" in \
        proc.stdout and "ASCEND_RT_VISIBLE_DEVICES" not in proc.stdout


def test_visible_devices_are_shown_as_the_machines_ids(tmp_path):
    # Of the emulator's 8 devices the process sees 2, as the machine's 2 and 5.
    proc = run_cli(["--quick", "--dtypes", "fp32", "--devices", "all"],
                   ACL_EMU_DEVICE_COUNT="8", ASCEND_RT_VISIBLE_DEVICES="2,5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  devices   0, 1 of 2 (2 tested, concurrently)" in proc.stdout
    assert ("  visible   ASCEND_RT_VISIBLE_DEVICES='2,5': device ids here are the machine's "
            "0 -> 2, 1 -> 5") in proc.stdout


@pytest.mark.parametrize("value,ids", [
    ("2,5", [2, 5]), ("0,1,2,3,4,5,6,7", list(range(8))), ("3, 4", [3]), ("1,,2", [1]),
    ("12;3", [12]), ("1,2,", [1, 2]), (",1", []), ("abc", []), ("", [])])
def test_visible_devices_read_as_the_vendor_runtime_does(value, ids):
    from acl_py.info import visible_devices
    assert visible_devices(value) == ids


# ---- copies between devices (P2P) ------------------------------------------------------------

def test_peer_copies_are_checked_per_pair(tmp_path):
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--devices", "all", "--dtypes", "fp32", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="3", ACL_EMU_NO_PEER="2:0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    table = out.split("peer copies between devices (P2P)\n", 1)[1].split("\n\n", 1)[0]
    rows = {line.split()[0]: line.split() for line in table.splitlines()[2:]}
    for pair in ("0-1", "1-2"):
        assert rows[pair][1:8] == ["yes", "yes", "2/2", "ok", "2/2", "ok", "pass"], table
    assert rows["0-2"][1:] == ["no", "no", "-", "-", "no-link", "-"], table
    assert "note: devices 0 and 2 are not linked" in out
    verdict = out.rstrip().splitlines()[-1]
    assert verdict.startswith("PASSED: all ") and \
        "peer copies both ways between 2 of 3 device pairs" in verdict, verdict
    data = json.loads(path.read_text())
    pairs = {tuple(p["devices"]): p for p in data["peer"]["pairs"]}
    assert list(pairs) == [(0, 1), (0, 2), (1, 2)]
    assert pairs[(0, 2)]["status"] == "no-link" and pairs[(0, 2)]["copies"] == []
    assert pairs[(0, 2)]["can_access"] == [False, False]
    for key in ((0, 1), (1, 2)):
        p = pairs[key]
        assert p["status"] == "pass" and p["can_access"] == [True, True] and p["error"] is None
        ways = sorted((c["src"], c["dst"], c["mode"]) for c in p["copies"])
        a, b = key
        assert ways == sorted([(a, b, "dst-stream"), (a, b, "src-stream"),
                               (b, a, "dst-stream"), (b, a, "src-stream")])
        assert all(c["ok"] and c["bytes"] == 1 << 20 for c in p["copies"])
    assert data["peer"]["unlinked_pairs"] == [[0, 2]] and data["peer"]["failed_pairs"] == []
    assert data["summary"]["ok"] is True and data["summary"]["failed_pairs"] == []


def test_a_failed_peer_copy_fails_the_run(tmp_path):
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--devices", "0,1", "--dtypes", "fp32", "--json", str(path)],
                   ACL_EMU_DEVICE_COUNT="2", ACL_EMU_FAIL="aclrtDeviceEnablePeerAccess:2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.rstrip().splitlines()
    assert any(l.startswith("FAILED: peer copies between 1 of 1 device pairs") for l in lines)
    assert lines[-1].startswith("  devices 0-1: ") and "aclrtDeviceEnablePeerAccess" in lines[-1]
    data = json.loads(path.read_text())
    assert data["peer"]["failed_pairs"] == [[0, 1]]
    assert data["peer"]["pairs"][0]["status"] == "fail"
    assert data["summary"]["ok"] is False and data["summary"]["failed_pairs"] == [[0, 1]]
    # the cases themselves passed
    assert data["summary"]["failed"] == 0


def test_one_device_has_no_peer_section(quick_run):
    proc, path = quick_run
    assert "peer copies" not in proc.stdout
    assert json.loads(path.read_text())["peer"] is None


def test_a_hung_device_is_reported_as_hung_not_waited_for(tmp_path):
    """A stream task that never completes (the emulator's task fault): the run ends after
    --timeout, the device is reported hung (verdict, JSON), exit status 3."""
    path = tmp_path / "report.json"
    t0 = time.monotonic()
    proc = run_cli(["--quick", "--timeout", "1", "--json", str(path)],
                   ACL_EMU_FAIL="aclrtMemcpyAsync:3:hang")
    assert time.monotonic() - t0 < 120
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "HUNG: device(s) 0" in proc.stdout
    rep = json.loads(path.read_text())
    assert rep["summary"]["hung_devices"] == [0] and not rep["summary"]["ok"]
    dev = rep["devices"][0]
    assert dev["summary"]["hung"] and dev["cases"][-1]["hung"]
    assert "AclTimeoutError" in dev["cases"][-1]["error"]


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf"])
def test_timeout_option_is_checked(bad):
    proc = run_cli(["--quick", "--timeout", bad])
    assert proc.returncode == 2 and "--timeout" in proc.stderr


def test_an_atlas_inference_part_runs_instance_norm(tmp_path):
    """aclnnInstanceNorm exists on the Atlas inference series only: there its smoke cases
    run and pass, beside every other operator the part has a kernel for."""
    path = tmp_path / "r.json"
    proc = run_cli(["--quick", "--dtypes", "fp32,fp16", "--json", str(path)],
                   ACL_EMU_SOC="Ascend310P3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(path.read_text())
    names = [c["name"] for c in data["devices"][0]["cases"]]
    want = [c.name for c in quick_cases("Ascend310P3")
            if smoke.case_dtypes(c) <= {"float32", "float16"}]
    assert names == want
    ours = [c for c in data["devices"][0]["cases"] if c["operator"] == "InstanceNorm"]
    assert len(ours) == 4 and all(c["passed"] for c in ours)
    assert [o["name"] for o in ours[0]["outputs"]] == ["y", "mean", "variance"]
