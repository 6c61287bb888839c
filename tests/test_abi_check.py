"""tools/abi_check.py: passes on headers that agree with acl-py's declarations, and fails, naming
the declaration, on copies altered the ways a real ABI drifts (an enum value or tag, parameter
order, a return type, a status code, a typedef, constness, a missing function), and when one of
acl-py's headers offers what CANN's header of the same name does not."""
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


def test_passes_on_our_headers(tmp_path, monkeypatch):
    monkeypatch.setattr(abi_check.tempfile, "tempdir", str(tmp_path))
    ok, report = abi_check.check(INCLUDE)
    assert ok, report
    assert "OK" in report and "C11" in report and "C++17" in report
    # a passing check leaves nothing behind (its generated sources were in a temporary folder)
    assert not list(tmp_path.iterdir())


def test_each_header_alone_c_only_where_cann_allows_it():
    decls = abi_check.load_declarations()
    units = {(u.include_as, u.language) for u in abi_check.plan(decls, INCLUDE)}
    # Every header of ours, laid out as a CANN install, gets a C++ pass ...
    for header in ["acl/acl.h", "acl/acl_base.h", "acl/acl_rt.h",
                   "acl/error_codes/rt_error_codes.h", "aclnn/acl_meta.h", "aclnn/aclnn_base.h",
                   "aclnn/opdev/op_errno.h", "aclnnop/aclnn_util.h",
                   "aclnnop/aclnn_layer_norm_backward.h"]:
        assert (header, "C++17") in units, header
    # ... and a C pass only where CANN's is C-compatible: acl_meta.h (<cstdint>, constexpr) and
    # everything including it are C++ only.
    assert ("acl/acl_rt.h", "C11") in units and ("aclnn/opdev/op_errno.h", "C11") in units
    for cxx_only in ["aclnn/acl_meta.h", "aclnn/aclnn_base.h",
                     "aclnnop/aclnn_layer_norm_backward.h"]:
        assert (cxx_only, "C11") not in units
    # The visible declarations follow the includes: op_errno.h is included by nothing.
    assert "macro ACLNN_SUCCESS" not in decls.visible("aclnnop/aclnn_layer_norm_backward.h")
    assert "function aclCreateTensor" in decls.visible("aclnnop/aclnn_layer_norm_backward.h")
    assert "function aclInit" in decls.visible("acl/acl.h")


def test_acl_meta_is_cxx_only_like_cann(tmp_path):
    # A C program including aclnn/acl_meta.h would not compile against CANN: nor here.
    src = tmp_path / "prog.c"
    src.write_text('#include "aclnn/acl_meta.h"\nint main(void) { return 0; }\n')
    proc = subprocess.run(["cc", "-std=c11", "-fsyntax-only", f"-I{INCLUDE}", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "C++ only" in proc.stderr, proc.stderr


def test_level2_copies_are_checked_where_installed():
    from acl_py._loader import emulator_prefix
    include = emulator_prefix() / "include"
    units = abi_check.plan(abi_check.load_declarations(), include)
    assert ("aclnnop/level2/aclnn_layer_norm_backward.h", "C++17") in {
        (u.include_as, u.language) for u in units}
    assert "#warning" in (include / "aclnnop/level2/aclnn_layer_norm_backward.h").read_text()


def test_passes_on_the_emulator_prefix_by_default():
    # What `make abi-check` runs: no argument = the emulator prefix's include/.
    proc = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from acl_py._loader import emulator_prefix
    assert f"match {emulator_prefix() / 'include'} (" in proc.stdout


def test_every_declaration_is_checked_and_emulator_ones_are_not():
    from acl_py._ffi import LIBRARY_OF, ffi as runtime_ffi
    decls = abi_check.load_declarations()
    source = "\n".join(abi_check.generate(decls, h)[0] for h in decls.headers())
    cann = sorted(n for n, role in LIBRARY_OF.items() if role != "emulator")
    emulator_only = sorted(n for n, role in LIBRARY_OF.items() if role == "emulator")
    ok, report = abi_check.check(INCLUDE)
    assert ok and f"({len(cann)} functions," in report, report
    for name in cann:
        assert f"ACL_PY_TYPEOF({name})" in source, name
    assert emulator_only and "aclemu" not in source
    # Every enumerator and status code the binding knows is asserted with its value.
    for name in ["ACL_BF16", "ACL_FORMAT_NCDHW", "ACL_MEMCPY_DEFAULT", "ACL_HBM_MEM_NORMAL",
                 "ACL_MEM_MALLOC_NORMAL_ONLY", "ACL_ERROR_RT_CONTEXT_NULL",
                 "ACLNN_ERR_INNER_NULLPTR", "ACL_FLOAT4_E1M2", "ACL_FORMAT_FRACTAL_NZ_C0_8",
                 "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE", "ACL_MEM_ACCESS_USER_SPACE_READONLY",
                 "ACL_MEM_P2P_HUGE1G", "ACL_ERROR_REPEAT_FINALIZE", "ACL_ERROR_NONE",
                 "ACL_ERROR_RT_INVALID_MEMORY_TYPE", "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR"]:
        # The value as the generated binding module (acl_py/_ffi.py) knows it.
        value = runtime_ffi.integer_const(name)
        assert f"({name}) == ({value})" in source, name


MUTATIONS = [
    pytest.param("acl/acl_base.h", r"ACL_BF16 = 27", "ACL_BF16 = 28", "ACL_BF16",
                 id="enum-value"),
    pytest.param("aclnn/acl_meta.h",
                 r"const int64_t \*stride,(\s+)int64_t offset, aclFormat format,",
                 r"const int64_t *stride,\1aclFormat format, int64_t offset,",
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
    pytest.param("acl/acl_base.h", r"ACL_ERROR_REPEAT_FINALIZE = 100037;",
                 "ACL_ERROR_REPEAT_FINALIZE = 100038;", "ACL_ERROR_REPEAT_FINALIZE",
                 id="static-const-status-code"),
    pytest.param("acl/error_codes/rt_error_codes.h", r"#define ACL_ERROR_RT_CONTEXT_NULL 107002",
                 "#define ACL_ERROR_RT_CONTEXT_NULL 107012", "ACL_ERROR_RT_CONTEXT_NULL",
                 id="rt-macro-status-code"),
    pytest.param("aclnn/opdev/op_errno.h", r"#define ACLNN_ERR_PARAM_INVALID 161002",
                 "#define ACLNN_ERR_PARAM_INVALID 161003", "ACLNN_ERR_PARAM_INVALID",
                 id="macro-status-code"),
    pytest.param("acl/acl_rt.h", r"typedef enum aclrtMemcpyKind \{",
                 "typedef enum aclrtMemcpyKindTag {", "aclrtMemcpyKind", id="enum-tag"),
    pytest.param("aclnn/acl_meta.h", r"typedef int32_t aclnnStatus;",
                 "typedef int64_t aclnnStatus;", "aclnnStatus", id="typedef"),
    pytest.param("acl/acl_rt.h", r"aclError aclrtSynchronizeEvent\(aclrtEvent event\);", "",
                 "aclrtSynchronizeEvent", id="missing-function"),
    pytest.param("acl/acl_rt.h", r"ACL_MEMCPY_HOST_TO_HOST = 0,",
                 "ACL_MEMCPY_NEG = -1, ACL_MEMCPY_HOST_TO_HOST = 0,", "aclrtMemcpyKind",
                 id="enum-signedness"),
    pytest.param("aclnn/acl_meta.h", r"typedef struct aclTensor aclTensor;",
                 "typedef struct aclTensorImpl aclTensor;", "aclTensor", id="struct-tag"),
    pytest.param("acl/acl_rt.h", r"int32_t vectorUtilization;\s+int32_t aicpuUtilization;",
                 "int32_t aicpuUtilization;\n    int32_t vectorUtilization;",
                 "aclrtUtilizationInfo", id="struct-fields-swapped"),
    pytest.param("acl/acl_rt.h", r"int32_t memoryUtilization;",
                 "int64_t memoryUtilization;", "aclrtUtilizationInfo", id="struct-field-width"),
    # Structs CANN declares without a tag (typedef struct { ... } NAME;), and the nameless
    # union inside one: layouts and member types all the same.
    pytest.param("acl/acl_rt.h", r"uint8_t valueOrAddr\[8\];\s+uint8_t size;",
                 "uint8_t size;\n    uint8_t valueOrAddr[8];", "aclrtRandomParaInfo",
                 id="tagless-struct-fields-swapped"),
    pytest.param("acl/acl_rt.h", r"aclrtNormalDisInfo normalDisInfo;",
                 "aclrtNormalDisInfo normalDisInfo;\n        uint8_t wider[40];",
                 "aclrtRandomNumFuncParaInfo", id="nameless-union-size"),
    pytest.param("acl/acl_rt.h", r"aclrtUniformDisInfo uniformDisInfo;",
                 "aclrtNormalDisInfo uniformDisInfo;", "aclrtRandomNumFuncParaInfo",
                 id="nameless-union-member-type"),
]


@pytest.mark.parametrize("header, old, new, culprit", MUTATIONS)
def test_fails_on_altered_vendor_headers(tmp_path, header, old, new, culprit):
    vendor = altered_copy(tmp_path, header, old, new)
    # keep: a failing check leaves its generated sources for the reader; here, in tmp_path
    ok, report = abi_check.check(vendor, headers=[header], keep=tmp_path / "generated")
    assert not ok, report
    assert "FAILED" in report and culprit in report, report
    assert f"generated sources: {tmp_path / 'generated'}" in report


@pytest.mark.parametrize("header, old, new, culprit", [MUTATIONS[1], MUTATIONS[2]])
def test_fails_when_our_declarations_drift(tmp_path, header, old, new, culprit):
    # The other direction: the vendor's headers are right, acl-py's copy is wrong. Run as the
    # command, to check the exit status and that the compiler's message is shown.
    ours = altered_copy(tmp_path, header, old, new)
    proc = subprocess.run([sys.executable, str(TOOL), str(INCLUDE), "--declarations", str(ours),
                           "--header", header], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert culprit in proc.stderr and "error" in proc.stderr
    kept = re.search(r"generated sources: (\S+)", proc.stderr)
    assert kept and any(Path(kept.group(1)).glob("*.c*"))
    shutil.rmtree(Path(kept.group(1)))


def test_fails_when_ours_offers_what_the_vendor_header_does_not(tmp_path):
    # CANN's acl_meta.h does not include op_errno.h: a program that used ACLNN_SUCCESS after
    # including only acl_meta.h would build on the emulator and not against CANN.
    ours = altered_copy(tmp_path, "aclnn/acl_meta.h", r'#include "acl/acl_base.h"\n',
                        '#include "acl/acl_base.h"\n#include "aclnn/opdev/op_errno.h"\n')
    ok, report = abi_check.check(INCLUDE, declarations=ours, headers=["aclnn/acl_meta.h"],
                                 keep=tmp_path / "generated")
    assert not ok and "aclnn/acl_meta.h (C++17) FAILED" in report, report
    assert "ACLNN_SUCCESS" in report and "not declared" in report


def test_missing_header_is_reported(tmp_path):
    proc = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert "acl/acl.h" in proc.stdout + proc.stderr
