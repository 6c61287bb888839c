"""The samples: the Python port, the raw cffi port and a C++ program following the vendor's call
sequence print the vendor sample's eight lines byte for byte; the bf16 sample passes its check.

Each program runs in a subprocess (they own the whole runtime: aclInit ... aclFinalize) on the
emulator backend, so the comparison is the same on every machine; tests/test_hardware.py runs
the same programs on a device.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from acl_py import reference
from acl_py._loader import emulator_prefix
from acl_py.soc import supports_bfloat16

from _part_runs import only_where

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
CPP_SOURCE = ROOT / "tests" / "c" / "layer_norm_backward_sample.cpp"
BUILD_DIR = ROOT / "tests" / ".build"

# What the vendor's C++ sample prints (hicann/ops-nn norm/layer_norm_grad_v3/examples), verbatim.
EXPECTED = (
    "out result[0] is: -2.000000\n"
    "out result[1] is: -94.000000\n"
    "out result[2] is: -877.500000\n"
    "out result[3] is: -1747.500000\n"
    "dw result[0] is: 20.000000\n"
    "dw result[1] is: 62.000000\n"
    "db result[0] is: 6.000000\n"
    "db result[1] is: 8.000000\n"
)

TIMEOUT = 120
# The part the vendor examples' printed text is of: the expected texts follow the Atlas A2
# kernels' float32 chains (tests/test_vendor_examples.py), so the ports run on an A2 part
# whatever part the test process emulates (elsewhere an operator may have no kernel, another
# dtype list, chain or unwritten output).
EXAMPLE_PART = {"ACL_EMU_SOC": "Ascend910B2"}


def emulator_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ACL_PY_BACKEND"] = "emulator"
    env.pop("ACL_EMU_FAIL", None)  # a fault spec meant for another test must not leak in here
    env.update(extra)
    return env


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=ROOT, env=env or emulator_env(), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited with {proc.returncode}\n"
        f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc


def build_cpp_sample(include_dir: Path, lib_dir: Path, out: Path, opapi: str = "opapi") -> Path:
    """Compiles tests/c/layer_norm_backward_sample.cpp against a CANN-like prefix, the way the
    README tells a C++ user to (headers, -L, rpath, the three libraries)."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx}) to build the C++ sample")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", str(CPP_SOURCE),
           f"-I{include_dir}", f"-L{lib_dir}", f"-Wl,-rpath,{lib_dir}",
           "-lascendcl", "-lnnopbase", f"-l{opapi}", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
    return out


@pytest.fixture(scope="module")
def cpp_sample() -> Path:
    prefix = emulator_prefix()
    assert (prefix / "lib64" / "libascendcl.so").is_file(), f"emulator not built under {prefix}"
    return build_cpp_sample(prefix / "include", prefix / "lib64",
                            BUILD_DIR / "layer_norm_backward_sample")


def test_expected_lines_match_float64_reference():
    """The eight lines are the vendor's documented output; check them independently against
    the NumPy float64 reference so a typo here cannot make every port agree on a wrong text."""
    f = np.float64
    dy = x = np.array([[2, 3], [4, 5]], f)
    gi, gw, gb = reference.layer_norm_backward(
        dy, x, [2], np.array([[2], [3]], f), np.array([[4], [5]], f), np.ones(2), np.zeros(2))
    lines = ([f"out result[{i}] is: {v:f}" for i, v in enumerate(gi.ravel())]
             + [f"dw result[{i}] is: {v:f}" for i, v in enumerate(gw)]
             + [f"db result[{i}] is: {v:f}" for i, v in enumerate(gb)])
    assert "\n".join(lines) + "\n" == EXPECTED


def test_python_sample_prints_the_eight_lines():
    proc = run([sys.executable, str(SAMPLES / "layer_norm_backward.py")])
    assert proc.stdout == EXPECTED
    assert proc.stderr == ""


def test_raw_sample_prints_the_eight_lines():
    proc = run([sys.executable, str(SAMPLES / "layer_norm_backward_raw.py")])
    assert proc.stdout == EXPECTED
    assert proc.stderr == ""


def test_cpp_sample_prints_the_eight_lines(cpp_sample):
    proc = run([str(cpp_sample)])
    assert proc.stdout == EXPECTED
    assert proc.stderr == ""


def test_all_three_ports_agree_byte_for_byte(cpp_sample):
    outputs = {
        "python": run([sys.executable, str(SAMPLES / "layer_norm_backward.py")]).stdout,
        "raw": run([sys.executable, str(SAMPLES / "layer_norm_backward_raw.py")]).stdout,
        "c++": run([str(cpp_sample)]).stdout,
    }
    assert len(set(outputs.values())) == 1, outputs


def test_cpp_sample_reports_a_failing_call(cpp_sample):
    """The C++ program checks its statuses: an injected phase-one failure is named, with its
    code and the runtime's message, and the exit status is 1 (not a crash, not silence)."""
    proc = subprocess.run([str(cpp_sample)], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT,
                          env=emulator_env(ACL_EMU_FAIL="aclnnLayerNormBackwardGetWorkspaceSize:1"))
    assert proc.returncode == 1, proc
    assert "aclnnLayerNormBackwardGetWorkspaceSize" in proc.stderr
    assert "561000" in proc.stderr
    # ...and everything it had created was still released cleanly: no second failure.
    assert proc.stderr.count(" failed: ") == 1, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("program", ["cpp", "raw"])
def test_sample_leaves_the_executor_to_the_library_when_phase_two_fails(cpp_sample, program):
    """A failed phase two has released the single-use executor (CANN's CommonOpExecutorRun,
    docs/emulator.md): the program does not destroy it (on a device, a double free) and
    releases the rest without a second error."""
    cmd = [str(cpp_sample)] if program == "cpp" else \
        [sys.executable, str(SAMPLES / "layer_norm_backward_raw.py")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env(ACL_EMU_FAIL="aclnnLayerNormBackward:1"))
    assert proc.returncode == 1, proc
    assert "aclnnLayerNormBackward" in proc.stderr and "361001" in proc.stderr
    assert proc.stderr.count(" failed: ") == 1, proc.stderr
    assert "aclDestroyAclOpExecutor" not in proc.stderr


def test_raw_sample_reports_a_failing_call():
    proc = subprocess.run([sys.executable, str(SAMPLES / "layer_norm_backward_raw.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env(ACL_EMU_FAIL="aclrtSynchronizeStream:1"))
    assert proc.returncode == 1, proc
    assert "aclrtSynchronizeStream failed: status 507000" in proc.stderr
    assert proc.stderr.count(" failed: ") == 1, proc.stderr   # the release step went cleanly
    assert proc.stdout == ""


def test_cli_sample_command_prints_the_eight_lines():
    proc = run([sys.executable, "-m", "acl_py", "sample"])
    assert proc.stdout == EXPECTED
    proc = run([sys.executable, "-m", "acl_py", "sample", "--raw"])
    assert proc.stdout == EXPECTED
    shown = run([sys.executable, "-m", "acl_py", "sample", "--show"]).stdout.strip()
    assert Path(shown) == SAMPLES / "layer_norm_backward.py"


def test_cli_sample_command_propagates_a_failure():
    proc = subprocess.run([sys.executable, "-m", "acl_py", "sample", "--raw"], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env(ACL_EMU_FAIL="aclrtCreateStream:1"))
    assert proc.returncode == 1
    assert "aclrtCreateStream failed: status 207001" in proc.stderr


# the BF16 sample runs where the part has BF16 (elsewhere its calls are refused)
@only_where(supports_bfloat16())
def test_bf16_transformer_sample_passes_its_check():
    """A reduced size keeps the test fast; the check (reference comparison) is the same."""
    proc = run([sys.executable, str(SAMPLES / "transformer_backward_bf16.py"),
                "--batch", "2", "--seq", "64", "--hidden", "256", "--repeats", "3"])
    out = proc.stdout
    assert "check: PASS" in out, out
    assert "[2, 64, 256]" in out and "bfloat16" in out
    assert "median" in out


@only_where(supports_bfloat16())
def test_bf16_transformer_sample_fails_loudly_on_wrong_results():
    """The sample's check is real: with the reference perturbed it exits 1 and says FAIL."""
    proc = subprocess.run([sys.executable, str(SAMPLES / "transformer_backward_bf16.py"),
                           "--batch", "1", "--seq", "8", "--hidden", "64", "--repeats", "1",
                           "--perturb-reference", "0.5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env())
    assert proc.returncode == 1, proc
    assert "check: FAIL" in proc.stdout


def test_training_step_sample_passes_its_check_in_bf16_and_fp16():
    """Forward + backward on device tensors, the statistics passed on the device, checked
    against the float64 reference chain (reduced size; the check is the same). BF16 where the
    part computes it (not on the Atlas training and inference series)."""
    dtypes = ((("bf16", "bfloat16"),) if supports_bfloat16() else ()) + (("fp16", "float16"),)
    proc = run([sys.executable, str(SAMPLES / "layer_norm_training_step.py"), "--batch", "2",
                "--seq", "32", "--hidden", "256", "--steps", "2",
                "--dtype", "both" if len(dtypes) == 2 else "fp16"])
    out = proc.stdout
    assert out.rstrip().endswith("PASS"), out
    for label, dt in dtypes:
        assert f"{label}: LayerNorm forward + backward, [2, 32, 256]" in out
        assert f"grad_input  {dt}" in out and f"out         {dt}" in out
    assert out.count(" ok") == 6 * len(dtypes) and "FAIL" not in out


def test_training_step_sample_fails_loudly_on_wrong_results():
    proc = subprocess.run([sys.executable, str(SAMPLES / "layer_norm_training_step.py"),
                           "--dtype", "fp16", "--batch", "1", "--seq", "4", "--hidden", "64",
                           "--steps", "1", "--perturb-reference", "0.5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
                          env=emulator_env())
    assert proc.returncode == 1, proc
    assert proc.stdout.rstrip().endswith("FAIL: results outside the reference's bound")
