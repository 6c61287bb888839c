"""docs/coverage.md (which of CANN's public C functions acl-py provides) stays true.

Without the vendor's sources: no function it lists as missing is declared by
bindings/include, so declaring one without regenerating the file fails here. With them
(ACL_PY_VENDOR_SOURCES, as for the other opt-in vendor tests): the file is exactly what
tools/vendor_coverage.py generates from the vendor's headers."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "coverage.md"
VENDOR = os.environ.get("ACL_PY_VENDOR_SOURCES")


def _tool():
    spec = importlib.util.spec_from_file_location("acl_py_vendor_coverage",
                                                  ROOT / "tools" / "vendor_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_function_listed_as_missing_is_declared():
    tool = _tool()
    missing = tool.listed_missing(DOC.read_text())
    assert len(missing) > 100        # the sections were found and read
    declared = tool.declared_by_acl_py()
    assert "aclrtMalloc" in declared and "aclCreateTensor" in declared
    stale = sorted(missing & declared)
    assert stale == [], (f"docs/coverage.md lists {stale} as missing, but bindings/include "
                         "declares them: regenerate it with tools/vendor_coverage.py")


def test_exported_functions_reads_cann_declarations(tmp_path):
    header = tmp_path / "x.h"
    header.write_text(
        "#define ACL_FUNC_VISIBILITY\n"
        "/* ACL_FUNC_VISIBILITY aclError aclCommentedOut(void); */\n"
        "ACL_FUNC_VISIBILITY aclError aclOne(int a);\n"
        "ACL_FUNC_VISIBILITY const char *aclTwo(\n    int a,\n    int b);\n"
        "#if X\nACL_FUNC_VISIBILITY aclError aclOne(int a);\n#endif\n"
        "static inline int aclNotExported(void) { return 0; }\n"
        "ACLNN_API aclnnStatus aclnnThree(void);\n")
    assert _tool().exported_functions(header) == ["aclOne", "aclTwo", "aclnnThree"]


@pytest.mark.skipif(not VENDOR, reason="set ACL_PY_VENDOR_SOURCES to a directory with "
                                       "hicann/runtime and hicann/opbase checkouts to run it")
def test_coverage_doc_is_current():
    assert _tool().main([VENDOR, "--check", str(DOC)]) == 0, (
        "docs/coverage.md differs from what tools/vendor_coverage.py generates")
