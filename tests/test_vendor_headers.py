"""Opt-in: acl-py's declarations and the emulator against the vendor's own headers and example.

Set ACL_PY_VENDOR_SOURCES to a directory holding checkouts of hicann/runtime, hicann/opbase,
hicann/ops-nn and hicann/ops-math (as `runtime/`, `opbase/`, `ops-nn/`, `ops-math/`). The test lays their public headers out the
way a CANN install does (include/acl/, include/aclnn/, include/aclnn/opdev/, include/aclnnop/
and its deprecated level2/ copy), then
- runs tools/abi_check.py against that include directory (every header of ours, alone, C++ and,
  where CANN allows it, C; an operator header the vendor's build generates, which no checkout
  has, is compared with the prototype of the operator's docs instead), and
- builds the vendor's LayerNormBackward example (ops-nn norm/layer_norm_grad_v3/examples)
  unchanged against those headers, links it against the emulator prefix's libraries and checks
  the eight lines it prints against a float64 reference.
Nothing from the checkouts is copied into the repository. Without the variable the tests are
skipped, saying so.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from acl_py._loader import emulator_prefix

ROOT = Path(__file__).resolve().parent.parent
VENDOR = os.environ.get("ACL_PY_VENDOR_SOURCES")
EXAMPLE = "ops-nn/norm/layer_norm_grad_v3/examples/test_aclnn_layer_norm_grad_v3.cpp"

pytestmark = pytest.mark.skipif(
    not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with hicann/runtime, "
                       "hicann/opbase, hicann/ops-nn and hicann/ops-math checkouts to run it")


def _load_abi_check():
    spec = importlib.util.spec_from_file_location("acl_py_abi_check",
                                                  ROOT / "tools" / "abi_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lay_out_install(vendor: Path, include: Path) -> Path:
    """The vendor's public headers where a CANN install puts them (hicann/runtime and
    hicann/opbase cmake/package.cmake, hicann/ops-nn cmake/opbuild.cmake)."""
    shutil.copytree(vendor / "runtime/include/external/acl", include / "acl")
    shutil.copytree(vendor / "opbase/include/nnopbase/aclnn", include / "aclnn")
    shutil.copytree(vendor / "opbase/include/nnopbase/opdev", include / "aclnn/opdev")
    aclnnop = include / "aclnnop"
    aclnnop.mkdir()
    # The operators' own headers: op_api/aclnn_*.h of each operator directory.
    for repo in ("ops-nn", "ops-math"):
        for pattern in ("*/*/op_host/op_api/aclnn_*.h", "*/*/op_api/aclnn_*.h"):
            for header in (vendor / repo).glob(pattern):
                shutil.copy(header, aclnnop)
    shutil.copytree(vendor / "opbase/include/aclnnop", aclnnop, dirs_exist_ok=True)
    level2 = aclnnop / "level2"
    level2.mkdir()
    for header in aclnnop.glob("*.h"):
        shutil.copy(header, level2)
    return include


@pytest.fixture(scope="module")
def vendor_include(tmp_path_factory) -> Path:
    vendor = Path(VENDOR)
    for part in ("runtime", "opbase", "ops-nn", "ops-math"):
        assert (vendor / part).is_dir(), f"ACL_PY_VENDOR_SOURCES={vendor} has no {part}/"
    return lay_out_install(vendor, tmp_path_factory.mktemp("cann") / "include")


# Operator headers the vendor's build generates (ops-nn cmake/opbuild.cmake: an operator whose
# op_host/CMakeLists.txt says ACLNNTYPE aclnn and that has no op_api/ of its own gets its
# aclnn_*.h and phase one from the opbuild tool, from its op_host/*_def.cpp): not in the
# checkouts, so checked against the prototype of the operator's docs instead
# (test_generated_operator_headers_match_their_docs). header -> (operator dir, docs page)
GENERATED = {
    "aclnnop/aclnn_rms_norm.h": ("ops-nn/norm/rms_norm", "aclnnRmsNorm.md"),
    "aclnnop/aclnn_rms_norm_grad.h": ("ops-nn/norm/rms_norm_grad", "aclnnRmsNormGrad.md"),
    "aclnnop/aclnn_gemma_rms_norm.h": ("ops-nn/norm/gemma_rms_norm", "aclnnGemmaRmsNorm.md"),
    "aclnnop/aclnn_inplace_add_rms_norm.h": ("ops-nn/norm/inplace_add_rms_norm",
                                             "aclnnInplaceAddRmsNorm.md"),
    "aclnnop/aclnn_add_layer_norm.h": ("ops-nn/norm/add_layer_norm", "aclnnAddLayerNorm.md"),
    "aclnnop/aclnn_deep_norm.h": ("ops-nn/norm/deep_norm", "aclnnDeepNorm.md"),
    "aclnnop/aclnn_add_layer_norm_grad.h": (
        "ops-nn/norm/add_layer_norm_grad",
        "aclnnAddLayerNormGrad.md",
    ),
    "aclnnop/aclnn_deep_norm_grad.h": ("ops-nn/norm/deep_norm_grad", "aclnnDeepNormGrad.md"),
}


def test_abi_check_passes_against_the_vendor_headers(vendor_include):
    abi_check = _load_abi_check()
    headers = [h for h in abi_check.load_declarations(None).headers() if h not in GENERATED]
    ok, report = abi_check.check(vendor_include, headers=headers)
    assert ok, report
    assert "C11" in report and "C++17" in report


def _prototypes(text: str) -> dict[str, str]:
    """name -> prototype with whitespace normalized, of every ``aclnnStatus aclnn...(...);``
    (the export macro dropped)."""
    text = re.sub(r"\bACLNN_API\b", "", text)
    found = {}
    for m in re.finditer(r"aclnnStatus\s+(aclnn\w+)\s*\(([^)]*)\)", text):
        params = re.sub(r"\s*\*\s*", " *", re.sub(r"\s+", " ", m.group(2))).strip()
        params = re.sub(r"\s*,\s*", ", ", params)
        found[m.group(1)] = params
    return found


@pytest.mark.parametrize("header", sorted(GENERATED))
def test_generated_operator_headers_match_their_docs(header):
    op_dir, page = GENERATED[header]
    op = Path(VENDOR) / op_dir
    assert not list(op.glob("**/op_api/aclnn_*.h")), \
        f"{op_dir} now has its own op_api header: drop it from GENERATED"
    assert "ACLNNTYPE aclnn" in (op / "op_host" / "CMakeLists.txt").read_text()
    docs = _prototypes((op / "docs" / page).read_text())
    ours = _prototypes((ROOT / "bindings" / "include" / header).read_text())
    assert ours and ours == {k: v for k, v in docs.items() if k in ours}, (ours, docs)
    assert set(ours) == set(docs)


def reference_lines() -> str:
    """The example's eight lines, from its inputs, in float64 (LayerNorm backward over the last
    axis with the given mean and rstd)."""
    x = np.array([[2, 3], [4, 5]], np.float64)
    dy = np.array([[2, 3], [4, 5]], np.float64)
    mean = np.array([[2], [3]], np.float64)
    rstd = np.array([[4], [5]], np.float64)
    w = np.ones(2)
    xhat = (x - mean) * rstd
    g = dy * w
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    dw = (dy * xhat).sum(0)
    db = dy.sum(0)
    lines = [f"out result[{i}] is: {v:f}" for i, v in enumerate(dx.ravel())]
    lines += [f"dw result[{i}] is: {v:f}" for i, v in enumerate(dw)]
    lines += [f"db result[{i}] is: {v:f}" for i, v in enumerate(db)]
    return "\n".join(lines) + "\n"


def test_vendor_example_builds_unchanged_and_runs_on_the_emulator(vendor_include, tmp_path):
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    assert cxx, "a C++ compiler is needed (g++)"
    lib64 = emulator_prefix() / "lib64"
    exe = tmp_path / "layer_norm_backward_example"
    build = subprocess.run([cxx, str(Path(VENDOR) / EXAMPLE), f"-I{vendor_include}",
                            f"-L{lib64}", f"-Wl,-rpath,{lib64}", "-lascendcl", "-lnnopbase",
                            "-lopapi", "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == reference_lines()
    assert re.fullmatch(r"(?:(?:out|dw|db) result\[\d\] is: -?\d+\.\d{6}\n){8}", run.stdout)
