"""tools/abi_check.py: passes on headers that agree with acl-py's declarations, and fails, naming
the declaration, on copies altered the ways a real ABI drifts (an enum value, parameter order,
a return type, a status code, a typedef, constness, a missing function)."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "bindings" / "include"
TOOL = ROOT / "tools" / "abi_check.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location("acl_py_abi_check", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


abi_check = _load_tool()


def altered_copy(tmp_path: Path, header: str, old: str, new: str) -> Path:
    """A copy of bindings/include with one textual change in `header` (which must apply)."""
    dst = tmp_path / "include"
    shutil.copytree(INCLUDE, dst)
    path = dst / header
    text = path.read_text()
    changed, n = re.subn(old, new, text)
    assert n == 1, f"the alteration {old!r} did not apply exactly once to {header}"
    path.write_text(changed)
    return dst


def test_passes_on_our_headers():
    ok, report = abi_check.check(INCLUDE)
    assert ok, report
    assert "OK" in report and "C11" in report


def test_passes_on_the_emulator_prefix_by_default():
    # What `make abi-check` runs: no argument = the emulator prefix's include/.
    proc = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from acl_py._loader import emulator_prefix
    assert f"match {emulator_prefix() / 'include'} (" in proc.stdout


def test_every_declaration_is_checked_and_emulator_ones_are_not():
    from acl_py._ffi import LIBRARY_OF, ffi as runtime_ffi
    source, counts = abi_check.generate(abi_check.load_declarations())
    cann = sorted(n for n, role in LIBRARY_OF.items() if role != "emulator")
    emulator_only = sorted(n for n, role in LIBRARY_OF.items() if role == "emulator")
    assert counts["functions"] == len(cann)
    for name in cann:
        assert f"ACL_PY_TYPEOF({name})" in source, name
    assert emulator_only and "aclemu" not in source
    # Every enumerator and status code the binding knows is asserted with its value.
    for name in ["ACL_BF16", "ACL_FORMAT_NCDHW", "ACL_MEMCPY_DEFAULT", "ACL_HBM_MEM_NORMAL",
                 "ACL_MEM_MALLOC_NORMAL_ONLY", "ACL_ERROR_RT_CONTEXT_NULL",
                 "ACLNN_ERR_INNER_NULLPTR"]:
        # The value as the generated binding module (acl_py/_ffi.py) knows it.
        value = runtime_ffi.integer_const(name)
        assert f"({name}) == ({value})" in source, name


MUTATIONS = [
    pytest.param("acl/acl_base.h", r"ACL_BF16 = 27", "ACL_BF16 = 28", "ACL_BF16",
                 id="enum-value"),
    pytest.param("aclnn/acl_meta.h",
                 r"const int64_t \*stride, int64_t offset, aclFormat format,",
                 "const int64_t *stride, aclFormat format, int64_t offset,",
                 "aclCreateTensor", id="createtensor-offset-format-swapped"),
    pytest.param("acl/acl_rt.h", r"aclError aclrtFree\(void \*devPtr\);",
                 "size_t aclrtFree(void *devPtr);", "aclrtFree", id="return-type"),
    pytest.param("acl/acl_rt.h", r"aclError aclrtMemcpy\(void \*dst, size_t destMax",
                 "aclError aclrtMemcpy(void *dst, uint32_t destMax", "aclrtMemcpy",
                 id="parameter-width"),
    pytest.param("aclnn/acl_meta.h", r"aclnnStatus aclDestroyTensor\(const aclTensor",
                 "aclnnStatus aclDestroyTensor(aclTensor", "aclDestroyTensor",
                 id="const-dropped"),
    pytest.param("aclnnop/aclnn_layer_norm_backward.h",
                 r"uint64_t \*workspaceSize, aclOpExecutor \*\*executor\);",
                 "uint64_t *workspaceSize, aclOpExecutor *executor);",
                 "aclnnLayerNormBackwardGetWorkspaceSize", id="pointer-depth"),
    pytest.param("acl/acl_base.h", r"ACL_ERROR_RT_CONTEXT_NULL = 107002;",
                 "ACL_ERROR_RT_CONTEXT_NULL = 107012;", "ACL_ERROR_RT_CONTEXT_NULL",
                 id="static-const-status-code"),
    pytest.param("aclnn/acl_meta.h", r"#define ACLNN_ERR_PARAM_INVALID 161002",
                 "#define ACLNN_ERR_PARAM_INVALID 161003", "ACLNN_ERR_PARAM_INVALID",
                 id="macro-status-code"),
    pytest.param("aclnn/acl_meta.h", r"typedef int32_t aclnnStatus;",
                 "typedef int64_t aclnnStatus;", "aclnnStatus", id="typedef"),
    pytest.param("acl/acl_rt.h", r"aclError aclrtSynchronizeEvent\(aclrtEvent event\);", "",
                 "aclrtSynchronizeEvent", id="missing-function"),
    pytest.param("acl/acl_rt.h", r"ACL_MEMCPY_HOST_TO_HOST = 0,",
                 "ACL_MEMCPY_NEG = -1, ACL_MEMCPY_HOST_TO_HOST = 0,", "aclrtMemcpyKind",
                 id="enum-signedness"),
    pytest.param("aclnn/acl_meta.h", r"typedef struct aclTensor aclTensor;",
                 "typedef struct aclTensorImpl aclTensor;", "aclTensor", id="struct-tag"),
]


@pytest.mark.parametrize("header, old, new, culprit", MUTATIONS)
def test_fails_on_altered_vendor_headers(tmp_path, header, old, new, culprit):
    vendor = altered_copy(tmp_path, header, old, new)
    ok, report = abi_check.check(vendor)
    assert not ok, report
    assert "FAILED" in report and culprit in report, report


@pytest.mark.parametrize("header, old, new, culprit", [MUTATIONS[1], MUTATIONS[2]])
def test_fails_when_our_declarations_drift(tmp_path, header, old, new, culprit):
    # The other direction: the vendor's headers are right, acl-py's copy is wrong. Run as the
    # command, to check the exit status and that the compiler's message is shown.
    ours = altered_copy(tmp_path, header, old, new)
    proc = subprocess.run([sys.executable, str(TOOL), str(INCLUDE), "--declarations", str(ours)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert culprit in proc.stderr and "error" in proc.stderr
    kept = re.search(r"generated source: (\S+)", proc.stderr)
    assert kept and Path(kept.group(1)).is_file()
    shutil.rmtree(Path(kept.group(1)).parent)


def test_missing_header_is_reported(tmp_path):
    proc = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert "acl/acl.h" in proc.stdout + proc.stderr
