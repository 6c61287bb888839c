"""`acl-py sample`: the ports of the vendor's C++ examples found from their own declarations
(``VENDOR_EXAMPLE`` in each samples/ file), listed, run by name, and run all at once with a
summary naming a failing port's call and code; an unknown name is a usage error naming it.

The real ports run in subprocesses on the emulator (they own the runtime); the summary's and
the registry's mechanics are also checked on stand-in ports in a temporary directory, which
need no runtime and cost milliseconds.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from acl_py import sample

from test_samples import EXAMPLE_PART, EXPECTED, ROOT, SAMPLES, TIMEOUT, emulator_env
from test_vendor_examples import rms_norm_example_output


def acl_py_sample(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acl_py", "sample", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env(**env))


def ports_by_docstring() -> set[str]:
    """The samples whose docstring says they port one of the vendor's examples."""
    return {p.stem for p in SAMPLES.glob("*.py")
            if (ast.get_docstring(ast.parse(p.read_text())) or "").startswith("The vendor's")}


# Operators whose op_api runs on one part only, whatever the example's directory
ONE_PART_OPERATORS = {"aclnnAddLayerNormQuant"}


def test_every_port_declares_its_example_and_nothing_else_does():
    """A new port is listed (and run by --all) only through its declaration: one missing
    would leave it out silently, so the docstring convention of the ports is checked against
    the registry."""
    found = sample.ports()
    assert set(found) == ports_by_docstring()
    assert {"layer_norm_backward", "layer_norm_backward_raw", "layer_norm", "rms_norm",
            "rms_norm_grad", "add_rms_norm", "add"} <= set(found)
    for port in found.values():
        assert port.path == SAMPLES / f"{port.name}.py"
        assert re.fullmatch(r"aclnn\w+", port.operator), port
        # examples/<arch>/ holds an example for one architecture (arch20: Atlas inference)
        assert re.fullmatch(r"hicann/ops-\w+ \S+/examples/(arch\d+/)?test_aclnn_\w+\.cpp",
                            port.example), port
        # a part only for an example of one architecture, or of an operator whose op_api
        # runs on one part (aclnnAddLayerNormQuant: Ascend 950, CheckPlatform)
        assert (port.soc is None or "/arch" in port.example
                or port.operator in ONE_PART_OPERATORS), port
    assert found[sample.DEFAULT].operator == "aclnnLayerNormBackward"


@pytest.mark.skipif(not os.environ.get("ACL_PY_VENDOR_SOURCES"),
                    reason="set ACL_PY_VENDOR_SOURCES to the vendor checkouts' directory")
def test_every_declared_example_exists_in_the_vendor_sources():
    vendor = Path(os.environ["ACL_PY_VENDOR_SOURCES"])
    for port in sample.ports().values():
        repo, path = port.example.removeprefix("hicann/").split(" ", 1)
        assert (vendor / repo / path).is_file(), port


def test_list_shows_every_port_with_its_operator_and_example():
    proc = acl_py_sample("--list")
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    found = sample.ports()
    assert [line.split()[0] for line in lines] == list(found)
    for line, port in zip(lines, found.values()):
        assert line.split(None, 2)[1] == port.operator and port.example in line
    default = next(line for line in lines if line.startswith(sample.DEFAULT + " "))
    assert default.endswith("(the default)")
    raw = next(line for line in lines if line.startswith(sample.DEFAULT + "_raw "))
    assert "raw cffi" in raw


def test_one_port_by_name():
    # on the part the expected text states (Atlas A2's chain: Ascend 950's arch35 template
    # takes rstd by Newton-Raphson, which moves a printed last digit)
    proc = acl_py_sample("rms_norm", **EXAMPLE_PART)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == rms_norm_example_output() and proc.stderr == ""
    proc = acl_py_sample("rms_norm", "--show")
    assert proc.returncode == 0 and Path(proc.stdout.strip()) == SAMPLES / "rms_norm.py"
    proc = acl_py_sample("layer_norm_backward_raw")   # what --raw runs
    assert proc.returncode == 0 and proc.stdout == EXPECTED


def test_an_unknown_name_is_a_usage_error_naming_it():
    proc = acl_py_sample("rms_nrom")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no port named 'rms_nrom'" in proc.stderr
    assert "rms_norm, rms_norm_grad" in proc.stderr and "--list" in proc.stderr
    proc = acl_py_sample("--all", "rms_norm")
    assert proc.returncode == 2 and "not allowed" in proc.stderr


def test_all_runs_every_port_and_names_the_failing_call_and_code():
    """A phase-one fault injected in aclnnRmsNorm (each port is its own process: only the
    rms_norm port calls it): that port fails with the call and its code in the summary, every
    other port runs and passes, and the exit status is 1."""
    proc = acl_py_sample("--all", ACL_EMU_FAIL="aclnnRmsNormGetWorkspaceSize:1", **EXAMPLE_PART)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = sample.ports()
    out = proc.stdout
    for name, port in found.items():
        assert f"== {name} ({port.describe()})\n" in out
    assert EXPECTED in out                      # the default port's eight lines
    summary = out.split("\n\n")[-1].splitlines()
    assert summary[0] == f"{len(found)} ports: {len(found) - 1} passed, 1 failed"
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in summary[1:]}
    assert list(rows) == list(found)
    assert rows.pop("rms_norm") == [
        "FAIL", "aclnnRmsNormGetWorkspaceSize failed: ACLNN_ERR_INNER (561000): "
                "aclnnRmsNormGetWorkspaceSize: injected fault (call 1)"]
    assert all(row == ["pass"] for row in rows.values()), rows
    assert "acl-py sample: aclnnRmsNormGetWorkspaceSize failed" in proc.stderr


# ---- the registry and the summary on stand-in ports ------------------------------------------

def write_port(directory: Path, name: str, body: str, declaration: str | None = None) -> None:
    declaration = declaration if declaration is not None else (
        f'VENDOR_EXAMPLE = {{"operator": "aclnn{name.title()}",\n'
        f'                  "example": "hicann/ops-nn x/{name}/examples/test_aclnn_{name}.cpp"}}')
    (directory / f"{name}.py").write_text(f'"""A stand-in port."""\n{declaration}\n'
                                          + textwrap.dedent(body))


def run(directory: Path, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    sample.add_sample_arguments(parser)
    return sample.run_sample(parser.parse_args(argv), directory=directory)


@pytest.fixture
def stand_ins(tmp_path: Path) -> Path:
    write_port(tmp_path, sample.DEFAULT, "print('the default ran')\n")
    write_port(tmp_path, "good", "print('good ran')\n")
    (tmp_path / "helpers.py").write_text('"""Not a port: it declares no example."""\n')
    return tmp_path


def test_a_new_port_is_listed_and_run_with_no_other_change(stand_ins, capfd):
    assert run(stand_ins, "--list") == 0
    listed = capfd.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == ["good", sample.DEFAULT]
    write_port(stand_ins, "newer", "print('newer ran')\n")
    assert run(stand_ins, "newer") == 0
    assert capfd.readouterr().out == "newer ran\n"
    assert run(stand_ins) == 0
    assert capfd.readouterr().out == "the default ran\n"
    assert run(stand_ins, "--all") == 0
    out = capfd.readouterr().out
    assert "== newer (aclnnNewer: hicann/ops-nn x/newer/examples/test_aclnn_newer.cpp)\n" \
           "newer ran\n" in out
    summary = out.split("\n\n")[-1].splitlines()
    assert summary[0] == "3 ports: 3 passed, 0 failed"
    assert [line.split() for line in summary[1:]] == [
        ["good", "pass"], [sample.DEFAULT, "pass"], ["newer", "pass"]]


def test_all_reports_each_failure_kind_in_one_line(stand_ins, capfd):
    write_port(stand_ins, "refused", """
        from acl_py.errors import AclError
        raise AclError(161002, "aclnnRefusedGetWorkspaceSize", "x has the wrong dtype")
    """)
    write_port(stand_ins, "buggy", "1 / 0\n")
    write_port(stand_ins, "quiet", "import sys\nsys.exit(3)\n")
    assert run(stand_ins, "--all") == 1
    captured = capfd.readouterr()
    rows = dict(line.strip().split(None, 1) for line in
                captured.out.split("\n\n")[-1].splitlines()[1:])
    assert rows == {
        "buggy": "FAIL  ZeroDivisionError: division by zero",
        sample.DEFAULT: "pass", "good": "pass",
        "quiet": "FAIL  exit status 3",
        "refused": "FAIL  aclnnRefusedGetWorkspaceSize failed: ACLNN_ERR_PARAM_INVALID "
                   "(161002): x has the wrong dtype"}
    assert "5 ports: 2 passed, 3 failed" in captured.out
    assert "Traceback" in captured.err        # a bug keeps its traceback
    assert "acl-py sample: aclnnRefusedGetWorkspaceSize failed" in captured.err
    # one port run alone: its own exit status
    assert run(stand_ins, "quiet") == 3 and run(stand_ins, "refused") == 1


def test_a_hung_port_times_out_and_the_run_goes_on(stand_ins, capfd):
    """A port still running after --timeout is killed and fails naming the time, with what it
    wrote before; the ports after it still run, and the exit status is 1."""
    write_port(stand_ins, "hung", """
        import sys, time
        print("hung started", flush=True)
        print("hung on stderr", file=sys.stderr, flush=True)
        time.sleep(600)
    """)
    start = time.monotonic()
    assert run(stand_ins, "--all", "--timeout", "4") == 1
    assert time.monotonic() - start < 60
    captured = capfd.readouterr()
    assert "== hung (" in captured.out and "hung started\n" in captured.out
    rows = dict(line.strip().split(None, 1) for line in
                captured.out.split("\n\n")[-1].splitlines()[1:])
    assert rows == {"good": "pass", "hung": "FAIL  timed out after 4 s", sample.DEFAULT: "pass"}
    assert "3 ports: 2 passed, 1 failed" in captured.out
    assert "hung on stderr" in captured.err
    assert "acl-py sample: hung timed out after 4 s (killed)" in captured.err
    # one port alone: killed after its --timeout, exit status 1; without one, no limit
    assert run(stand_ins, "hung", "--timeout", "0.5") == 1
    assert "acl-py sample: hung timed out after 0.5 s" in capfd.readouterr().err
    assert sample.DEFAULT_TIMEOUT > 0


@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan", "inf"])
def test_a_timeout_that_is_not_a_positive_number_is_a_usage_error(stand_ins, capfd, value):
    with pytest.raises(SystemExit) as ei:
        run(stand_ins, "--all", "--timeout", value)
    assert ei.value.code == 2
    assert "expected a positive number of seconds" in capfd.readouterr().err


def test_a_malformed_declaration_or_no_port_is_a_usage_error(tmp_path, capfd):
    assert run(tmp_path, "--list") == 2
    assert "no ports in" in capfd.readouterr().err
    write_port(tmp_path, "bad", "", declaration='VENDOR_EXAMPLE = {"operator": 1}')
    assert run(tmp_path, "--list") == 2
    err = capfd.readouterr().err
    assert "bad.py: VENDOR_EXAMPLE must be a literal dict" in err


def test_a_declared_part_is_the_ports_acl_emu_soc(tmp_path, capfd, monkeypatch):
    """``"soc"`` in the declaration: the port's process runs with ACL_EMU_SOC set to it
    (whatever this environment says), alone or in --all, and --list says so; a port without
    one inherits the environment; a "soc" that is no string is a malformed declaration."""
    monkeypatch.setenv("ACL_EMU_SOC", "Ascend910B2")
    body = "import os\nprint(os.environ.get('ACL_EMU_SOC'))\n"
    write_port(tmp_path, sample.DEFAULT, body)
    write_port(tmp_path, "parted", body, declaration=(
        'VENDOR_EXAMPLE = {"operator": "aclnnParted", "example": "hicann/ops-nn x/parted/'
        'examples/arch20/test_aclnn_parted.cpp", "soc": "Ascend310P3"}'))
    assert run(tmp_path, "parted") == 0
    assert capfd.readouterr().out == "Ascend310P3\n"
    assert run(tmp_path, "--all") == 0
    out = capfd.readouterr().out
    assert "== parted (aclnnParted" in out and "Ascend310P3\n" in out
    assert "Ascend910B2\n" in out   # the default port: this environment's
    assert run(tmp_path, "--list") == 0
    assert "(the emulator runs it as Ascend310P3)" in capfd.readouterr().out
    write_port(tmp_path, "parted", "", declaration=(
        'VENDOR_EXAMPLE = {"operator": "aclnnParted", "example": "e", "soc": 310}'))
    assert run(tmp_path, "--list") == 2
    assert "optionally 'via', 'soc'" in capfd.readouterr().err


@pytest.mark.parametrize("stderr,status,expected", [
    ("acl-py sample: aclrtMalloc failed: ACL_ERROR_RT_MEMORY_ALLOCATION (207001)\n", 1,
     "aclrtMalloc failed: ACL_ERROR_RT_MEMORY_ALLOCATION (207001)"),
    ("layer_norm_backward_raw: aclrtSynchronizeStream failed: status 507000 (x)\n", 1,
     "aclrtSynchronizeStream failed: status 507000 (x)"),
    ("", -9, "killed by signal 9"),
])
def test_why_names_the_call_and_code(stderr, status, expected):
    assert sample.why(status, stderr) == expected
