"""The emulator's CANN attributes through the raw cffi binding, against docs/emulator.md
("CANN attributes"): aclGetCannAttributeList and aclGetCannAttribute, as hicann/runtime
src/acl/utils/cann_info_utils.cpp answers them for the emulated part and the prefix's runtime
version."""
from __future__ import annotations

import os
import shutil

import pytest

from acl_py import _loader
from acl_py.raw import ffi, lib
from acl_py.soc import supports_bfloat16

from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: the SoC is chosen with ACL_EMU_SOC")

INF_NAN, BF16, JIT_COMPILE = 0, 1, 2


def attribute(attr):
    v = ffi.new("int32_t *", -7)
    ok(lib.aclGetCannAttribute(attr, v), "aclGetCannAttribute")
    return v[0]


def test_the_enum_is_the_vendors():
    assert (lib.ACL_CANN_ATTR_UNDEFINED, lib.ACL_CANN_ATTR_INF_NAN, lib.ACL_CANN_ATTR_BF16,
            lib.ACL_CANN_ATTR_JIT_COMPILE) == (-1, INF_NAN, BF16, JIT_COMPILE)


# This process's part: INF_NAN and BF16 where its platform configuration sets support_inf_nan
# and support_bf16 (Atlas A2/A3, Ascend 950: the parts with BFLOAT16; the default part
# Ascend910B2 is one), JIT_COMPILE everywhere: the prefix's runtime (9.1) is past every
# requirement.
PART_ATTRIBUTES = ((INF_NAN, BF16, JIT_COMPILE) if supports_bfloat16() else (JIT_COMPILE,))
NAMES = {INF_NAN: "INF_NAN", BF16: "BF16", JIT_COMPILE: "JIT_COMPILE"}


def test_the_part_has_what_its_platform_configuration_says():
    lst, n = ffi.new("aclCannAttr **"), ffi.new("size_t *")
    ok(lib.aclGetCannAttributeList(lst, n))
    assert [lst[0][i] for i in range(n[0])] == list(PART_ATTRIBUTES)
    assert [attribute(a) for a in (INF_NAN, BF16, JIT_COMPILE)] == [
        int(a in PART_ATTRIBUTES) for a in (INF_NAN, BF16, JIT_COMPILE)]


def test_argument_checks():
    v, lst, n = ffi.new("int32_t *"), ffi.new("aclCannAttr **"), ffi.new("size_t *")
    expect(lib.aclGetCannAttribute(BF16, ffi.NULL), 100000, "aclGetCannAttribute", "value")
    for bad in (-1, 3, 1000):
        expect(lib.aclGetCannAttribute(bad, v), 100000, "aclGetCannAttribute",
               f"cannAttr {bad}")
    expect(lib.aclGetCannAttributeList(ffi.NULL, n), 100000, "aclGetCannAttributeList",
           "cannAttrList")
    expect(lib.aclGetCannAttributeList(lst, ffi.NULL), 100000, "aclGetCannAttributeList",
           "num")


def test_other_parts_and_installs(run_python, tmp_path):
    probe = """
        from acl_py.raw import ffi, lib
        lst, n, v = ffi.new("aclCannAttr **"), ffi.new("size_t *"), ffi.new("int32_t *")
        rc = lib.aclGetCannAttributeList(lst, n)
        print(rc, [lst[0][i] for i in range(n[0])] if rc == 0 else "-")
        print(lib.aclGetCannAttribute(1, v), v[0] if rc == 0 else "-")
    """
    r = run_python(probe, env={"ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == [f"0 [{JIT_COMPILE}]", "0 0"]
    # a copy of the prefix with an older runtime: 6.4 has JIT_COMPILE only; none, 500000
    prefix = _loader.emulator_prefix().resolve()
    copy = tmp_path / "prefix"
    shutil.copytree(prefix, copy)
    version = copy / "share" / "info" / "runtime" / "version.info"
    env = {"ACL_PY_EMULATOR_PREFIX": str(copy)}
    version.write_text("Version=6.4.0\n")
    r = run_python(probe, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[:2] == [f"0 [{JIT_COMPILE}]", "0 0"], (lines, r.stderr)
    os.remove(version)
    r = run_python(probe, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["500000 -", "500000 -"]


def test_acl_py_names_them_and_info_prints_them(run_python):
    import acl_py
    from acl_py import info
    names = tuple(NAMES[a] for a in PART_ATTRIBUTES)
    assert acl_py.cann_attributes() == names
    collected = info.collect()
    assert collected["cann_attributes"] == {"available": list(names), "error": None}
    assert f"attributes {', '.join(names)}" in info.format_text(collected).splitlines()
    r = run_python("""
        import acl_py
        print(acl_py.cann_attributes())
    """, env={"ACL_EMU_SOC": "Ascend310P3"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "('JIT_COMPILE',)"
