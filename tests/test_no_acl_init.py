"""No aclrt* call needs aclInit, as in CANN: its ACL layer keeps aclInit's reference count
apart from the runtime (hicann/runtime src/acl/aclrt_impl/acl_rt_impl_base.cpp
GetAclInitFlag, read only by the dump calls in toolchain/dump.cpp), the runtime comes up at
its first use, and the vendor's own operator samples (hicann/ops-math
math/accumulate_nv2/examples, hicann/ops-nn experimental/activation/softsign/examples) call
aclnnInit, then aclrtSetDevice, without aclInit. tests/c/no_acl_init.cpp does the same with
aclnnAdd; the raw calls here show what aclInit and aclFinalize change around a runtime brought
up without aclInit."""
from __future__ import annotations

import subprocess

from test_cpp_runtime import _env, build
from test_emulator_runtime import run_raw

EXPECTED = """\
device count: 1
out: 2 0 7 24 5 -6
live: 0 device allocations, 0 streams, 0 tensors, 0 scalars, 0 executors
done
"""


def test_a_cann_program_without_aclinit_runs_an_operator():
    exe = build("no_acl_init", defines=("ACL_PY_EMULATOR",))
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == EXPECTED


def test_aclinit_after_the_runtime_came_up_keeps_its_devices_and_memory():
    """CANN's aclInitImpl (src/acl/aclrt_impl/acl.cpp) does not touch the runtime: a device set
    and memory allocated before it stay, and the second aclInit is still 100002."""
    r = run_raw("""
        out["set"] = lib.aclrtSetDevice(0)
        p = ffi.new("void **"); out["malloc"] = lib.aclrtMalloc(p, 16, 0)
        src = ffi.new("char[16]", b"runtime before!")
        out["h2d"] = lib.aclrtMemcpy(p[0], 16, src, 16, 1)
        out["init"] = lib.aclInit(NULL)
        out["init_again"] = lib.aclInit(NULL)
        d = ffi.new("int32_t *"); out["get"] = lib.aclrtGetDevice(d), d[0]
        dst = ffi.new("char[16]")
        out["d2h"] = lib.aclrtMemcpy(dst, 16, p[0], 16, 2)
        out["read"] = ffi.string(dst).decode()
        out["live"] = live()["device_allocations"]
        out["end"] = lib.aclrtFree(p[0]), lib.aclrtResetDevice(0), lib.aclFinalize()
    """)
    assert [r["set"], r["malloc"], r["h2d"], r["init"]] == [0, 0, 0, 0]
    assert r["init_again"] == 100002
    assert r["get"] == [0, 0]
    assert r["d2h"] == 0 and r["read"] == "runtime before!"
    assert r["live"] == 1
    assert r["end"] == [0, 0, 0]


def test_the_first_runtime_call_reads_the_environment_and_names_itself():
    """Without aclInit the first runtime call brings the runtime up, so it is the call that
    reports a malformed emulator setting (100000), and a later one tries again."""
    r = run_raw("""
        n = ffi.new("uint32_t *")
        out["count"] = lib.aclrtGetDeviceCount(n), errmsg()
        out["again"] = lib.aclrtSetDevice(0), errmsg()
    """, env={"ACL_EMU_DEVICE_COUNT": "two"})
    assert r["count"][0] == 100000
    assert r["count"][1].startswith("aclrtGetDeviceCount:") and "ACL_EMU_DEVICE_COUNT" in r["count"][1]
    assert r["again"][0] == 100000 and r["again"][1].startswith("aclrtSetDevice:")
    r = run_raw("""
        n = ffi.new("uint32_t *")
        out["count"] = lib.aclrtGetDeviceCount(n), n[0]
    """, env={"ACL_EMU_DEVICE_COUNT": "3"})
    assert r["count"] == [0, 3]


def test_calls_that_needed_aclinit_before_answer_as_the_runtime_does():
    """Refusals that remain are the runtime's own, not 100001: no device set (107002), no
    subscription for aclrtProcessReport (107012, callback.cpp passes the runtime's code on)."""
    r = run_raw("""
        d = ffi.new("int32_t *")
        out["get"] = lib.aclrtGetDevice(d)
        s = ffi.new("aclrtStream *")
        out["stream"] = lib.aclrtCreateStream(s)
        out["report"] = lib.aclrtProcessReport(10)
        out["finalize"] = lib.aclFinalize()
        out["finalize_again"] = lib.aclFinalize()
        out["set_after"] = lib.aclrtSetDevice(0), lib.aclrtResetDevice(0)
    """)
    assert r["get"] == 107002 and r["stream"] == 107002
    assert r["report"] == 107012
    assert r["finalize"] == 0 and r["finalize_again"] == 100037
    assert r["set_after"] == [0, 0]


def test_acl_py_runs_after_raw_calls_made_without_aclinit():
    """acl_py.raw users may call the runtime before acl-py's session: acl-py's aclInit then
    finds the runtime up and keeps what the raw calls hold; its session works and its
    teardown leaves nothing alive."""
    r = run_raw("""
        import numpy as np
        import acl_py
        out["set"] = lib.aclrtSetDevice(0)
        p = ffi.new("void **"); out["malloc"] = lib.aclrtMalloc(p, 64, 0)
        lib.aclrtMemcpy(p[0], 16, ffi.new("char[16]", b"raw, before init"), 16, 1)
        acl_py.init()
        with acl_py.Device(0), acl_py.Stream() as stream:
            a = np.arange(6, dtype=np.float32)
            b = np.full(6, 0.25, dtype=np.float32)
            ta, tb = acl_py.DeviceTensor.from_numpy(a), acl_py.DeviceTensor.from_numpy(b)
            to = acl_py.DeviceTensor.from_numpy(np.zeros(6, dtype=np.float32))
            acl_py.aclnn.Add(ta, tb, acl_py.Scalar(2.0, np.float32), to, stream=stream)
            stream.synchronize()
            out["sum"] = to.to_numpy().tolist()
            for t in (ta, tb, to):
                t.close()
        back = ffi.new("char[17]")
        out["raw_buffer_kept"] = lib.aclrtMemcpy(back, 16, p[0], 16, 2), ffi.string(back).decode()
        out["raw_release"] = lib.aclrtFree(p[0]), lib.aclrtResetDevice(0)
        acl_py.finalize()
        out["live"] = live()
    """)
    assert [r["set"], r["malloc"]] == [0, 0]
    assert r["sum"] == [x + 0.5 for x in range(6)]
    assert r["raw_buffer_kept"] == [0, "raw, before init"]
    assert r["raw_release"] == [0, 0]
    assert all(v == 0 for v in r["live"].values()), r["live"]
