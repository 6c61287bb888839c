"""The command line: `python -m acl_py` / `acl-py` with `info` (text and --json, figures checked
against the emulator's configuration, nothing left initialized), `emulator-prefix` (usable to
build a CANN C++ program), the errors a person sees, and the command table's hooks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acl_py import _loader, cli

ROOT = Path(__file__).resolve().parent.parent
ROOT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CUSTOM_PATH")


def env_for(**updates: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ROOT_VARIABLES and not k.startswith("ACL_EMU_") and k != "ACL_PY_BACKEND"}
    env["ACL_PY_BACKEND"] = "emulator"
    env.update(updates)
    return env


def acl_py_cmd(*args: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acl_py", *args], capture_output=True,
                          text=True, timeout=120, env=env or env_for(), cwd=cwd or ROOT)


@pytest.fixture(scope="module")
def emu_prefix() -> Path:
    prefix = _loader.emulator_prefix()
    assert (prefix / "lib64" / "libascendcl.so").is_file(), \
        f"the emulator is not built under {prefix}: run `make build`"
    return prefix


# ---- info ----------------------------------------------------------------------------------

def test_info_json_reports_the_emulator_configuration(emu_prefix):
    gib3 = 3 << 30
    proc = acl_py_cmd("info", "--json",
                      env=env_for(ACL_EMU_DEVICE_COUNT="3", ACL_EMU_DEVICE_MEMORY="3G",
                                  ACL_EMU_NUM_THREADS="2"))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["backend"] == "emulator" and data["reason"] == "ACL_PY_BACKEND=emulator"
    assert data["root"] == str(emu_prefix)
    assert data["libraries"] == {
        "ascendcl": str(emu_prefix / "lib64" / "libascendcl.so"),
        "nnopbase": str(emu_prefix / "lib64" / "libnnopbase.so"),
        "opapi": str(emu_prefix / "lib64" / "libopapi_nn.so")}
    assert data["missing_symbols"] == [] and data["error"] is None
    assert data["device_count"] == 3
    assert [d["id"] for d in data["devices"]] == [0, 1, 2]
    for d in data["devices"]:
        assert d["memory"] == {"kind": "HBM", "free": gib3, "total": gib3}
    emu = data["emulator"]
    assert emu["version"] and emu["threads"] == 2
    assert emu["environment"]["ACL_EMU_DEVICE_COUNT"] == "3"


def test_info_text_is_readable(emu_prefix):
    proc = acl_py_cmd("info", env=env_for(ACL_EMU_DEVICE_MEMORY="512M",
                                          ASCEND_HOME_PATH="relative/cann"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "backend    emulator" in out
    assert "note       $ASCEND_HOME_PATH='relative/cann': ignored, not an absolute path" in out
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi_nn.so"):
        assert str(emu_prefix / "lib64" / name) in out
    assert "devices    1" in out
    assert "device 0  512.0 MiB HBM total, 512.0 MiB free" in out
    assert "symbols    all" in out and "resolved" in out


PROBE_WHILE_IN_USE = """
import json
from acl_py import info, _loader
from acl_py._ffi import ffi
lib = _loader.library()
res = {"init": lib.aclInit(ffi.NULL), "set": lib.aclrtSetDevice(0)}
p = ffi.new("void **")
res["malloc"] = lib.aclrtMalloc(p, 1 << 20, lib.ACL_MEM_MALLOC_HUGE_FIRST)
data = info.collect()
res["free"], res["total"] = data["devices"][0]["memory"]["free"], data["devices"][0]["memory"]["total"]
res["error"] = data["error"]
d = ffi.new("int32_t *")
res["get_device"] = (lib.aclrtGetDevice(d), d[0])          # this thread's device untouched
res["free_ptr"] = lib.aclrtFree(p[0])                       # the allocation is still valid
res["reinit"] = lib.aclInit(ffi.NULL)                       # still initialized
res["reset"] = lib.aclrtResetDevice(0)
res["finalize"] = lib.aclFinalize()
print(json.dumps(res))
"""

PROBE_ALONE = """
import json
from acl_py import info, _loader, emulator
from acl_py._ffi import ffi
data = info.collect()
lib = _loader.library()
res = {"device_count": data["device_count"], "error": data["error"],
       "init_after": lib.aclInit(ffi.NULL)}                # 0: info finalized what it began
res["live"] = emulator.live_objects()
res["finalize"] = lib.aclFinalize()
import acl_py                                              # the object layer still starts
buf = acl_py.DeviceBuffer(4096)
res["buffer"] = buf.nbytes
buf.close()
print(json.dumps(res))
"""


def _run(code: str, **env) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env_for(**env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_info_uses_a_running_runtime_and_leaves_it_running(emu_prefix):
    res = _run(PROBE_WHILE_IN_USE, ACL_EMU_DEVICE_MEMORY="64M")
    assert (res["init"], res["set"], res["malloc"]) == (0, 0, 0)
    assert res["error"] is None
    assert res["total"] == 64 << 20 and res["free"] == (64 << 20) - (1 << 20)
    assert res["get_device"] == [0, 0]
    assert res["free_ptr"] == 0
    assert res["reinit"] == 100002  # ACL_ERROR_REPEAT_INITIALIZE: info did not finalize
    assert (res["reset"], res["finalize"]) == (0, 0)


def test_info_alone_finalizes_what_it_initialized(emu_prefix):
    res = _run(PROBE_ALONE, ACL_EMU_DEVICE_COUNT="2")
    assert res["device_count"] == 2 and res["error"] is None
    assert res["init_after"] == 0
    assert all(v == 0 for v in res["live"].values()), res["live"]
    assert res["finalize"] == 0
    assert res["buffer"] == 4096


def test_info_reports_a_runtime_failure_after_the_libraries(emu_prefix):
    # The runtime fails to count its devices (an injected fault): the library part is still
    # shown, the error names the call and code, and the exit status says something is wrong.
    env = env_for(ACL_EMU_FAIL="aclrtGetDeviceCount:1")
    proc = acl_py_cmd("info", env=env)
    assert proc.returncode == 1
    assert str(emu_prefix / "lib64" / "libascendcl.so") in proc.stdout
    assert ("error      aclrtGetDeviceCount failed: ACL_ERROR_RT_INTERNAL_ERROR (507000)"
            in proc.stdout)
    data = json.loads(acl_py_cmd("info", "--json", env=env).stdout)
    assert data["backend"] == "emulator" and "aclrtGetDeviceCount" in data["error"]


def test_info_reports_every_device_when_one_cannot_be_probed(emu_prefix):
    # On an 8-NPU server one device may be held by another process or broken: aclrtSetDevice
    # fails for it (the second device's here, an injected fault). That device's line carries
    # the error, every other device is still reported, and the exit status is 1.
    env = env_for(ACL_EMU_DEVICE_COUNT="3", ACL_EMU_FAIL="aclrtSetDevice:2")
    proc = acl_py_cmd("info", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("  device 1  ERROR aclrtSetDevice failed: ACL_ERROR_RT_INTERNAL_ERROR (507000)"
            in proc.stdout)
    for d in (0, 2):
        assert f"  device {d}  16.0 GiB HBM total" in proc.stdout
    data = json.loads(acl_py_cmd("info", "--json", env=env).stdout)
    assert data["error"] is None and data["device_count"] == 3
    assert [bool(d.get("error")) for d in data["devices"]] == [False, True, False]
    assert data["devices"][2]["memory"]["total"] == 16 << 30


def test_info_shows_the_visible_device_mapping(emu_prefix):
    # ids past the machine's last device are dropped, as the runtime does: 2 of 8 remain
    env = env_for(ACL_EMU_DEVICE_COUNT="8", ASCEND_RT_VISIBLE_DEVICES="4,6,9")
    proc = acl_py_cmd("info", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "devices    2" in proc.stdout
    assert ("visible    ASCEND_RT_VISIBLE_DEVICES='4,6,9': device ids here are the machine's "
            "0 -> 4, 1 -> 6") in proc.stdout


def test_info_without_cann_lists_the_search_and_exits_1(tmp_path):
    if any(Path(r).exists() for r in _loader.DEFAULT_ROOTS):
        pytest.skip("a CANN install root exists on this machine")
    env = env_for(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(tmp_path / "nowhere"))
    proc = acl_py_cmd("info", env=env)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "ACL_PY_BACKEND=cann" in proc.stderr
    assert str(tmp_path / "nowhere" / "lib64" / "libascendcl.so") in proc.stderr
    assert "/usr/local/Ascend/cann/lib64/libascendcl.so" in proc.stderr
    proc = acl_py_cmd("info", "--json", env=env)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["backend"] is None and "Searched:" in data["error"]


def test_info_bad_backend_value():
    proc = acl_py_cmd("info", env=env_for(ACL_PY_BACKEND="tpu"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "ACL_PY_BACKEND='tpu'" in proc.stderr


# ---- emulator-prefix ---------------------------------------------------------------------------

def test_emulator_prefix_builds_and_runs_a_cann_program(emu_prefix, tmp_path):
    proc = acl_py_cmd("emulator-prefix")
    assert proc.returncode == 0, proc.stderr
    prefix = Path(proc.stdout.strip())
    assert prefix.is_absolute() and prefix == emu_prefix.resolve()
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    assert cxx, "a C++ compiler is needed (g++)"
    src = tmp_path / "prog.cpp"
    src.write_text(textwrap.dedent("""
        #include <acl/acl.h>
        #include <aclnn/acl_meta.h>
        #include <aclnn/opdev/op_errno.h>  /* ACLNN_SUCCESS: CANN declares it only there */
        #include <aclnnop/aclnn_layer_norm_backward.h>
        #include <cstdio>
        int main() {
            if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
            void *dev = nullptr;
            float host[4] = {1, 2, 3, 4}, back[4] = {0};
            if (aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 2;
            aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
            aclrtMemcpy(back, sizeof back, dev, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST);
            int64_t dims[1] = {4}, strides[1] = {1};
            aclTensor *t = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND,
                                           dims, 1, dev);
            int ok = t != nullptr && aclDestroyTensor(t) == ACLNN_SUCCESS &&
                     aclrtFree(dev) == ACL_SUCCESS && aclrtResetDevice(0) == ACL_SUCCESS &&
                     aclFinalize() == ACL_SUCCESS;
            std::printf("%g %g %g %g %s\\n", back[0], back[1], back[2], back[3], ok ? "ok" : "FAIL");
            return ok ? 0 : 3;
        }
    """))
    exe = tmp_path / "prog"
    # The command line of the foundation issue, verbatim.
    build = subprocess.run([cxx, str(src), f"-I{prefix}/include", f"-L{prefix}/lib64",
                            f"-Wl,-rpath,{prefix}/lib64", "-lascendcl", "-lnnopbase", "-lopapi",
                            "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env=env_for())
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "1 2 3 4 ok"


def test_emulator_prefix_not_built(tmp_path):
    proc = acl_py_cmd("emulator-prefix", env=env_for(ACL_PY_EMULATOR_PREFIX=str(tmp_path)))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"not built under {tmp_path}" in proc.stderr and "make build" in proc.stderr
    proc = acl_py_cmd("emulator-prefix", env=env_for(ACL_PY_EMULATOR_PREFIX="rel/prefix"))
    assert proc.returncode == 1 and "not an absolute path" in proc.stderr


# ---- the command table ------------------------------------------------------------------------

def test_help_lists_every_command_and_the_console_script_works():
    proc = acl_py_cmd("--help")
    assert proc.returncode == 0
    for c in cli.COMMANDS:
        assert c.name in proc.stdout
    assert {"info", "emulator-prefix", "sample", "smoke"} <= {c.name for c in cli.COMMANDS}
    script = Path(sys.executable).parent / "acl-py"
    assert script.is_file(), f"the acl-py console script is not installed next to {sys.executable}"
    proc = subprocess.run([str(script), "emulator-prefix"], capture_output=True, text=True,
                          timeout=60, env=env_for())
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == _loader.emulator_prefix().resolve()


def test_no_command_is_a_usage_error():
    proc = acl_py_cmd()
    assert proc.returncode == 2 and "usage: acl-py" in proc.stderr


def test_table_hooks(monkeypatch, tmp_path, capsys):
    # A command is one table row naming two functions: this one lives in a module of the test.
    (tmp_path / "acl_py_test_cmd.py").write_text(textwrap.dedent("""
        def add_arguments(p):
            p.add_argument("--times", type=int, default=1)
        def run(args):
            print("ran" * args.times)
            return 7
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    table = cli.COMMANDS + (
        cli.Command("hello", "test", "acl_py_test_cmd:add_arguments", "acl_py_test_cmd:run"),
        cli.Command("ghost", "test", "acl_py_no_such_module:add", "acl_py_no_such_module:run"),
        cli.Command("half", "test", "acl_py_test_cmd:add_arguments", "acl_py_test_cmd:nope"),
    )
    monkeypatch.setattr(cli, "COMMANDS", table)
    assert cli.main(["hello", "--times", "2"]) == 7
    assert capsys.readouterr().out == "ranran\n"
    assert cli.main(["ghost", "--anything"]) == 2
    assert "acl_py_no_such_module is missing" in capsys.readouterr().err
    assert cli.main(["half"]) == 2
    assert "acl_py_test_cmd has no nope()" in capsys.readouterr().err


# ---- version and expected failures ----------------------------------------------------------

def test_version():
    import acl_py
    proc = acl_py_cmd("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"acl-py {acl_py.__version__} (Python ")
    assert str(Path(acl_py.__file__).resolve().parent) in proc.stdout
    from importlib.metadata import version
    assert version("acl-py") == acl_py.__version__  # one version: pyproject reads __init__


@pytest.mark.parametrize("command", [["sample"], ["sample", "--raw"], ["smoke", "--quick"],
                                     ["info"]])
def test_no_cann_where_required_is_one_message_no_traceback(command, tmp_path):
    if any(Path(r).exists() for r in _loader.DEFAULT_ROOTS):
        pytest.skip("a CANN install root exists on this machine")
    env = env_for(ACL_PY_BACKEND="cann", ASCEND_HOME_PATH=str(tmp_path / "nowhere"))
    proc = acl_py_cmd(*command, env=env)
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    assert "ACL_PY_BACKEND=cann" in out and "ASCEND_HOME_PATH" in out


def test_sample_failing_call_is_one_message(tmp_path):
    # A CANN call failing inside the sample (an injected aclrtMalloc failure): the typed
    # error's text, not a traceback, and a failing exit status.
    proc = acl_py_cmd("sample", env=env_for(ACL_EMU_FAIL="aclrtMalloc:1"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "acl-py sample: aclrtMalloc failed: ACL_ERROR_RT_MEMORY_ALLOCATION (207001)" \
        in proc.stderr


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    # Only expected failures are turned into one line; anything else is a bug to report.
    (tmp_path / "acl_py_buggy_cmd.py").write_text(
        "def add(p):\n    pass\ndef run(args):\n    raise ZeroDivisionError('bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + (
        cli.Command("buggy", "test", "acl_py_buggy_cmd:add", "acl_py_buggy_cmd:run"),))
    with pytest.raises(ZeroDivisionError):
        cli.main(["buggy"])


def test_info_prints_the_peer_access_matrix(emu_prefix):
    env = env_for(ACL_EMU_DEVICE_COUNT="3", ACL_EMU_NO_PEER="1:2")
    proc = acl_py_cmd("info", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    peer = json.loads(proc.stdout)["peer_access"]
    assert peer == {"matrix": [[None, True, True], [True, None, False], [True, False, None]],
                    "error": None}
    proc = acl_py_cmd("info", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith("peer "))
    assert [l.split() for l in lines[i + 1:i + 5]] == [
        ["0", "1", "2"], ["device", "0", "-", "y", "y"], ["device", "1", "y", "-", "n"],
        ["device", "2", "y", "n", "-"]]
    one = json.loads(acl_py_cmd("info", "--json").stdout)
    assert one["peer_access"] is None
    assert "peer " not in acl_py_cmd("info").stdout
