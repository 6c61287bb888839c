"""Tests that need real CANN and an Ascend device: ``make test-hardware`` (pytest -m hardware).

Everywhere else they are skipped by the ``hardware`` marker hook in tests/conftest.py, with a
reason naming what is missing (also when the "CANN" found is the emulator's prefix). On a
device they check what the emulator cannot prove: the vendor's libraries and headers agree
with our declarations, the samples print the vendor's eight lines on the device (and the
ports of the vendor's operator examples what those examples print), a bf16 transformer-sized
call matches the NumPy reference, memory info is sane, the quick smoke run passes on one
device and on every device, copies between devices (P2P) match, `acl-py info` opens every
device, the operator libraries are of one kind (split or all-in-one), operators find their
kernels without the variables set_env.sh exports, and without LD_LIBRARY_PATH the error says
what to source.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from acl_py import reference, smoke

from test_example_ports import PORTS
from test_samples import CPP_SOURCE, EXPECTED, SAMPLES, build_cpp_sample

pytestmark = pytest.mark.hardware

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def cann_env() -> dict[str, str]:
    env = dict(os.environ)
    env["ACL_PY_BACKEND"] = "cann"  # never fall back to the emulator here
    env.pop("ACL_EMU_FAIL", None)
    return env


def run(cmd, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=cann_env(), capture_output=True,
                          text=True, timeout=TIMEOUT, **kw)
    assert proc.returncode == 0, (f"{cmd} exited with {proc.returncode}\n"
                                  f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def cann():
    """The CANN backend as the loader resolved it (root, library paths)."""
    from acl_py._loader import library
    lib = library()
    assert lib.backend.name == "cann", (
        f"hardware tests need the CANN backend, got {lib.backend.name}: {lib.backend.reason}")
    return lib.backend


def test_backend_is_cann_and_exports_every_declared_function(cann):
    from acl_py._loader import library
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in cann.libraries.values())
    assert library().check_symbols() == []


def include_dir(root: Path) -> Path:
    """The install's headers: <root>/include, or <root>/<arch>-linux/include where only the
    architecture directory has them (where the vendor's packages install: hicann/ops-nn
    cmake/variables.cmake)."""
    import platform
    plain = root / "include"
    return plain if plain.is_dir() else root / f"{platform.machine()}-linux" / "include"


def test_abi_check_against_vendor_headers(cann):
    """Our declarations compiled against the vendor's headers, warnings as errors."""
    include = include_dir(cann.root)
    assert (include / "acl" / "acl.h").is_file(), f"no vendor headers under {include}"
    run([sys.executable, ROOT / "tools" / "abi_check.py", include])


@pytest.mark.parametrize("script", ["layer_norm_backward.py", "layer_norm_backward_raw.py"])
def test_python_samples_print_the_vendor_lines_on_the_device(script):
    assert run([sys.executable, SAMPLES / script]).stdout == EXPECTED


@pytest.fixture(scope="module")
def device_soc() -> str:
    """The device's part name (aclrtGetSocName), asked of the CANN backend."""
    return run([sys.executable, "-c", "import acl_py; print(acl_py.soc_name())"]).stdout.strip()


@pytest.mark.parametrize("port", PORTS, ids=repr)
def test_example_ports_print_the_examples_lines_on_the_device(port, device_soc):
    """The ports of the vendor's operator examples print the text their C++ examples print
    (derived from the kernels' float32 chains; tests/test_example_ports.py), on every part
    the operator has a kernel for (its declaration's ``runs_on``)."""
    from acl_py.ops import DECLARED
    op = DECLARED.get(port.phase_one[len("aclnn"):-len("GetWorkspaceSize")])
    if op is not None and not op.runs_on(device_soc):
        pytest.skip(f"{op.name} has no kernel on {device_soc}")
    assert run([sys.executable, SAMPLES / port.script]).stdout == port.expected()


def test_cpp_sample_against_vendor_install_prints_the_same(cann, tmp_path):
    # Linked as the vendor's docs say: the operator library acl-py opened (libopapi_nn.so,
    # or libopapi.so before the split), never the two kinds together.
    lib64 = Path(cann.libraries["opapi"]).parent
    opapi = Path(cann.libraries["opapi"]).name[len("lib"):-len(".so")]
    exe = build_cpp_sample(include_dir(cann.root), lib64, tmp_path / "lnb_sample", opapi=opapi)
    assert run([exe]).stdout == EXPECTED


def test_memory_info_is_sane_and_tracks_an_allocation(cann):
    from acl_py.raw import ffi, lib
    from acl_py.device import Device
    from acl_py.memory import DeviceBuffer

    def mem():
        free, total = ffi.new("size_t *"), ffi.new("size_t *")
        assert lib.aclrtGetMemInfo(lib.ACL_HBM_MEM, free, total) == 0
        return int(free[0]), int(total[0])

    with Device(0):
        free0, total = mem()
        assert total >= 8 * 2**30, f"device reports only {total} bytes of HBM"
        assert 0 < free0 <= total
        nbytes = 512 * 2**20
        with DeviceBuffer(nbytes):
            free1, total1 = mem()
        assert total1 == total
        # Other processes may allocate meanwhile; ours alone must show (allocator rounding ok).
        assert free0 - free1 >= nbytes * 0.9, (free0, free1)


def test_bf16_transformer_case_matches_reference(cann):
    from acl_py.device import Device
    from acl_py.stream import Stream
    case = smoke.Case("hw-bf16-transformer", (8, 512, 1024), dtype="bfloat16",
                      stats_dtype="float32", weight_dtype="float32")
    with Device(0), Stream() as stream:
        result = smoke.run_case(case, stream=stream)
    assert result.passed, result.error
    assert [o.name for o in result.outputs] == list(smoke.OUTPUT_NAMES)
    assert all(o.error_ratio <= 1 for o in result.outputs)


def test_bf16_sample_passes_on_the_device():
    out = run([sys.executable, SAMPLES / "transformer_backward_bf16.py"]).stdout
    assert "check: PASS" in out and "backend cann" in out


def test_smoke_quick_passes_on_the_device(tmp_path):
    path = tmp_path / "smoke.json"
    proc = run([sys.executable, "-m", "acl_py", "smoke", "--quick", "--json", path])
    data = json.loads(path.read_text())
    assert data["backend"] == "cann", proc.stdout
    assert data["summary"]["ok"] is True and data["summary"]["failed"] == 0


def test_reference_agrees_with_device_on_vendor_sample(cann):
    """The vendor's own sample data through the NumPy-level call, against the reference."""
    import acl_py
    f = np.float32
    x = np.array([[2, 3], [4, 5]], f)
    args = (x, x, [2], np.array([[2], [3]], f), np.array([[4], [5]], f), np.ones(2, f),
            np.zeros(2, f))
    got = acl_py.layer_norm_backward(*args)
    want = reference.layer_norm_backward(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert CPP_SOURCE.is_file()


# ---- a freshly installed server: every device, the install's environment ---------------------

def test_info_probes_every_device_of_the_part(cann):
    """`acl-py info` on the server: exit 0, every device opened and its memory reported, a
    part name the vendor's platform configurations know."""
    data = json.loads(run([sys.executable, "-m", "acl_py", "info", "--json"]).stdout)
    assert data["backend"] == "cann" and data["missing_symbols"] == [] and data["error"] is None
    assert data["device_count"] >= 1 and len(data["devices"]) == data["device_count"]
    for dev in data["devices"]:
        assert not dev.get("error"), dev
        assert dev["memory"]["total"] > 0 and 0 < dev["memory"]["free"] <= dev["memory"]["total"]
        assert dev["identity_error"] is None and dev["physical_id"] is not None, dev
    assert data["soc"].startswith("Ascend"), data["soc"]
    if data["device_count"] > 1:
        assert data["topology"]["error"] is None
        assert all(None not in row for row in data["topology"]["matrix"])


def test_smoke_quick_passes_on_every_device(tmp_path):
    path = tmp_path / "smoke.json"
    run([sys.executable, "-m", "acl_py", "smoke", "--quick", "--devices", "all",
         "--require-npu", "--json", path])
    data = json.loads(path.read_text())
    assert data["npu_tested"] is True and data["summary"]["ok"] is True
    assert data["summary"]["devices"] == data["environment"]["device_count"]


MAPPED_OPERATOR_LIBRARIES = """
import json
import numpy as np
import acl_py
from acl_py import aclnn
x = np.ones((2, 4), np.float32)
st = np.ones((2, 1), np.float32)
acl_py.layer_norm_backward(x, x, [4], st, st)
out = np.zeros(2, np.float32)
aclnn.Add(np.ones(2, np.float32), np.ones(2, np.float32), 1.0, out)
with open("/proc/self/maps") as f:
    maps = sorted({l.split()[-1] for l in f if "libopapi" in l})
print(json.dumps({"maps": maps, "sum": out.tolist()}))
"""


def test_operator_libraries_of_one_kind_only():
    """libopapi.so and the split libopapi_<domain>.so are never mapped together (the vendor
    does not support it: hicann/ops-nn docs/zh/op_api_list.md)."""
    res = json.loads(run([sys.executable, "-c", MAPPED_OPERATOR_LIBRARIES]).stdout)
    assert res["sum"] == [2.0, 2.0]
    names = {Path(p).name for p in res["maps"]}
    assert names, "no operator library mapped"
    assert not ("libopapi.so" in names and len(names) > 1), res["maps"]


def test_operators_run_without_the_variables_set_env_sh_exports(cann):
    """With LD_LIBRARY_PATH kept but ASCEND_HOME_PATH/ASCEND_OPP_PATH/ASCEND_AICPU_PATH
    unset (a container that only sets LD_LIBRARY_PATH), the loader's defaults let the
    operators find their kernels: the sample prints the vendor's eight lines. (The root is
    given as ASCEND_TOOLKIT_HOME, which only acl-py reads, in case it is not a default one.)"""
    env = cann_env()
    for var in ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH"):
        env.pop(var, None)
    env["ASCEND_TOOLKIT_HOME"] = str(cann.root)
    proc = subprocess.run([sys.executable, str(SAMPLES / "layer_norm_backward.py")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == EXPECTED


def test_without_ld_library_path_the_error_says_what_to_source(cann):
    """set_env.sh not sourced at all: opening the libraries either works (the install is on
    the linker's cache) or fails naming the library not found and the script to source."""
    env = cann_env()
    env.pop("LD_LIBRARY_PATH", None)
    env["ASCEND_HOME_PATH"] = str(cann.root)
    proc = subprocess.run([sys.executable, "-m", "acl_py", "info"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        assert "cannot open" in text and "source" in text and "LD_LIBRARY_PATH" in text, text


def test_peer_copies_between_devices():
    """Two devices or more: every pair's links, and each linked pair's pattern copied both
    ways (synchronously and on a stream) and compared (the smoke's check); then a tensor
    copied from device 0 to device 1 with DeviceTensor.copy_to."""
    import acl_py
    from acl_py import smoke_peer
    n = acl_py.device_count()
    if n < 2:
        pytest.skip(f"needs two devices; the server shows {n}")
    pairs = smoke_peer.check_pairs(list(range(n)), quick=True)
    assert not [p for p in pairs if p.failed], smoke_peer.format_pairs(pairs)
    d0, d1 = acl_py.Device(0), acl_py.Device(1)
    if not d1.can_access_peer(0):
        pytest.skip("devices 0 and 1 are not linked (aclrtDeviceCanAccessPeer reports 0)")
    d1.enable_peer_access(0)
    d0.enable_peer_access(1)
    try:
        x = np.random.default_rng(0).standard_normal((64, 257)).astype(np.float32)
        with acl_py.DeviceTensor.from_numpy(x, device=0) as t:
            with t.copy_to(1) as u:
                assert u.device.id == 1
                np.testing.assert_array_equal(u.to_numpy(), x)
            with t[:, ::2].copy_to(1, acl_py.default_stream(1)) as v:
                np.testing.assert_array_equal(v.to_numpy(acl_py.default_stream(1)), x[:, ::2])
    finally:
        d1.disable_peer_access(0)
        d0.disable_peer_access(1)
