"""The part (SoC): aclrtGetSocName through the raw ABI and acl_py.soc_name(), the emulator's
ACL_EMU_SOC, the operator's BFLOAT16 refusal on parts without it, and ``acl-py info``.

The part is fixed for a process (read once, as the vendor's runtime caches it), so every other
part than the session's is tried in a fresh interpreter.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import acl_py
from acl_py.raw import ffi, lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(soc):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env["ACL_PY_BACKEND"] = "emulator"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if soc is not None:
        env["ACL_EMU_SOC"] = soc
    return env


def test_soc_name_through_the_raw_abi_is_a_stable_string():
    p = lib.aclrtGetSocName()
    assert p != ffi.NULL
    assert lib.aclrtGetSocName() == p  # the vendor returns its cached string: same pointer
    assert ffi.string(p).decode() == acl_py.soc_name()


def test_python_accessor_knows_which_parts_lack_bfloat16():
    assert acl_py.supports_bfloat16(acl_py.soc_name()) == acl_py.supports_bfloat16()
    # Every part name of the vendor's platform configurations (hicann/runtime
    # src/platform/platform_config/cann*/), split by their support_bf16=1 line.
    for name in ("Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB",
                 "Ascend910PremiumA", "Ascend310P1", "Ascend310P3", "Ascend310P5",
                 "Ascend310P7", "Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4",
                 "Ascend031", "Ascend035", "Ascend035A", "Ascend035B"):
        assert not acl_py.supports_bfloat16(name), name
    for name in ("Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4",
                 "Ascend910B4-1", "Ascend910_9362", "Ascend910_9391", "Ascend910_9392",
                 "Ascend950PR_9599", "Ascend950DT_95A2", "Ascend350_354f"):
        assert acl_py.supports_bfloat16(name), name


# The family of each part name the vendor's platform configurations hold (their
# Short_SoC_version), which the operators' definitions configure kernels by.
FAMILIES = {"Ascend910A": "Ascend910", "Ascend910B": "Ascend910", "Ascend910PremiumA": "Ascend910",
            "Ascend910B1": "Ascend910B", "Ascend910B2C": "Ascend910B",
            "Ascend910B4-1": "Ascend910B", "Ascend910_9391": "Ascend910_93",
            "Ascend310P3": "Ascend310P", "Ascend310B4": "Ascend310B",
            "Ascend950PR_9599": "Ascend950", "Ascend950DT_95A2": "Ascend950",
            "Ascend350_354f": "Ascend350", "Ascend035A": "Ascend035", "Ascend031": "Ascend031"}


def test_short_soc_version_names_the_family_of_a_part():
    for name, family in FAMILIES.items():
        assert acl_py.soc.short_soc_version(name) == family, name
    assert acl_py.soc.short_soc_version("Kirin9030") is None     # not in the table


def test_configured_parts_follow_the_definitions_families():
    has_kernel = acl_py.ops.configured("ascend910b", "ascend910_93", "ascend950",
                                       source="the test's list")
    assert [n for n in FAMILIES if has_kernel(n)] == [
        "Ascend910B1", "Ascend910B2C", "Ascend910B4-1", "Ascend910_9391", "Ascend950PR_9599",
        "Ascend950DT_95A2"]
    assert has_kernel("Kirin9030")      # an unknown family is taken to have a kernel
    assert has_kernel.source == "the test's list"


@pytest.mark.skipif(not os.environ.get("ACL_PY_VENDOR_SOURCES"),
                    reason="set ACL_PY_VENDOR_SOURCES to a directory with a hicann/runtime "
                           "checkout (runtime/) to compare with its platform configurations")
def test_short_soc_version_matches_every_platform_configuration():
    import glob
    root = os.path.join(os.environ["ACL_PY_VENDOR_SOURCES"], "runtime", "src", "platform",
                        "platform_config")
    seen = 0
    for ini in glob.glob(os.path.join(root, "cann*", "*.ini")):
        with open(ini, encoding="utf-8") as f:
            short = [line.split("=", 1)[1].strip() for line in f
                     if line.startswith("Short_SoC_version=")]
        if short:
            name = os.path.splitext(os.path.basename(ini))[0]
            assert acl_py.soc.short_soc_version(name) == short[0], ini
            seen += 1
    assert seen > 30, root


# One fresh process per part: what aclrtGetSocName says before aclInit, what aclInit returns,
# and phase one with BF16 and FLOAT16 tensors (raw), then the Python call with BF16 arrays.
PROBE = r"""
import json, numpy as np, ml_dtypes
from acl_py.raw import ffi, lib
import acl_py

def msg():
    p = lib.aclGetRecentErrMsg()
    return ffi.string(p).decode() if p != ffi.NULL else ""

out = {}
p = lib.aclrtGetSocName()              # before aclInit, no device: the vendor answers too
out["soc"] = ffi.string(p).decode() if p != ffi.NULL else None
out["soc_msg"] = msg() if p == ffi.NULL else ""
try:
    out["py_soc"] = acl_py.soc_name()
except acl_py.errors.AclError as e:
    out["py_soc"] = [type(e).__name__, e.code, str(e)]
out["init"] = lib.aclInit(ffi.NULL)
out["init_msg"] = msg() if out["init"] else ""
if out["init"] == 0:
    assert lib.aclrtSetDevice(0) == 0
    buf = ffi.new("void **")
    assert lib.aclrtMalloc(buf, 4096, 0) == 0

    def tensor(shape, dt):
        n = len(shape)
        strides = [int(np.prod(shape[i + 1:])) for i in range(n)]
        return lib.aclCreateTensor(ffi.new("int64_t[]", shape), n, dt,
                                   ffi.new("int64_t[]", strides), 0, lib.ACL_FORMAT_ND,
                                   ffi.new("int64_t[]", [int(np.prod(shape))]), 1, buf[0])

    def phase_one(x_dt, out_dt):
        x, dy = tensor([2, 4], x_dt), tensor([2, 4], x_dt)
        mean, rstd = tensor([2, 1], lib.ACL_FLOAT), tensor([2, 1], lib.ACL_FLOAT)
        gi = tensor([2, 4], out_dt)
        ns = lib.aclCreateIntArray(ffi.new("int64_t[]", [4]), 1)
        mask = lib.aclCreateBoolArray(ffi.new("bool[]", [True, False, False]), 3)
        ws, ex = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
        rc = lib.aclnnLayerNormBackwardGetWorkspaceSize(dy, x, ns, mean, rstd, ffi.NULL,
                                                        ffi.NULL, mask, gi, ffi.NULL,
                                                        ffi.NULL, ws, ex)
        text = msg() if rc else ""
        if rc == 0:
            lib.aclDestroyAclOpExecutor(ex[0])
        for t in (x, dy, mean, rstd, gi):
            lib.aclDestroyTensor(t)
        lib.aclDestroyIntArray(ns)
        lib.aclDestroyBoolArray(mask)
        return [rc, text]

    out["bf16_input"] = phase_one(lib.ACL_BF16, lib.ACL_BF16)
    out["bf16_output"] = phase_one(lib.ACL_FLOAT16, lib.ACL_BF16)
    out["fp16"] = phase_one(lib.ACL_FLOAT16, lib.ACL_FLOAT)
    lib.aclrtFree(buf[0])
    lib.aclrtResetDevice(0)
    lib.aclFinalize()
    x = np.ones((2, 4), ml_dtypes.bfloat16)
    st = np.ones((2, 1), np.float32)
    try:
        acl_py.layer_norm_backward(x, x, [4], st, st)
        out["python"] = None
    except acl_py.OperatorParameterError as e:
        out["python"] = [e.code, str(e)]
    acl_py.finalize()
print(json.dumps(out))
"""


def _probe(soc):
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120, env=_env(soc), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("soc,series", [("Ascend910A", "Atlas training series"),
                                        ("Ascend310P3", "Atlas inference series")])
def test_parts_without_bfloat16_refuse_it_with_161002_naming_the_part(emulator, soc, series):
    r = _probe(soc)
    assert r["soc"] == soc == r["py_soc"] and r["init"] == 0
    for case in ("bf16_input", "bf16_output"):
        rc, text = r[case]
        assert rc == 161002, r
        assert "BF16 is not supported on " + soc in text and series in text, text
    assert "gradOut dtype BF16" in r["bf16_input"][1]  # the vendor checks gradOut first
    assert "gradInputOut dtype BF16" in r["bf16_output"][1]
    assert r["fp16"] == [0, ""]
    code, text = r["python"]
    assert code == 161002 and soc in text


@pytest.mark.parametrize("soc", [None, "Ascend910_9391"])
def test_atlas_a2_default_and_a3_accept_bfloat16(emulator, soc):
    r = _probe(soc)
    assert r["soc"] == (soc or "Ascend910B2") and r["init"] == 0
    assert r["bf16_input"] == [0, ""] and r["bf16_output"] == [0, ""] and r["fp16"] == [0, ""]
    assert r["python"] is None


def test_unknown_part_name_fails_get_soc_name_and_init(emulator):
    r = _probe("Ascend910X")
    assert r["soc"] is None and "ACL_EMU_SOC" in r["soc_msg"] and "Ascend910X" in r["soc_msg"]
    kind, code, text = r["py_soc"]  # acl_py.soc_name(): a typed error with the message
    assert kind == "InternalError" and code == 500000 and "Ascend910X" in text
    assert r["init"] == 100000 and "aclInit: ACL_EMU_SOC" in r["init_msg"]


def test_info_shows_the_part(emulator):
    env = _env("Ascend310P3")
    proc = subprocess.run([sys.executable, "-m", "acl_py", "info", "--json"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["soc"] == "Ascend310P3" and data["bfloat16"] is False
    proc = subprocess.run([sys.executable, "-m", "acl_py", "info"], capture_output=True,
                          text=True, timeout=120, env=_env(None), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "\nsoc        Ascend910B2 (BFLOAT16 supported)\n" in proc.stdout
