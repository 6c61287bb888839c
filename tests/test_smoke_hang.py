"""``acl-py smoke --timeout``: every wait a run can reach is bounded, not only its cases' own.
A task that never starts (the emulator's task fault ``name:n:hang``) met by a peer copy's wait,
or by the allocator's wait when another device runs out of memory, ends the command within a
few timeouts with exit status 3, the hung device named (HUNG line, JSON ``hung_devices``).
Each run is a subprocess (the command exits without the runtime's teardown) with one small
case per device and --timeout 0.5."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import emulator_active

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 0.5

pytestmark = pytest.mark.skipif(not emulator_active(),
                                reason="emulator-only: task faults are the emulator's")

# The command as a function with a given case list (CASES "name=2x8;...": a few small cases
# keep it fast); argv[1:]: the command's arguments. ARM, if set, arms the emulator's faults as
# the peer checks start (after every case ran).
SCRIPT = textwrap.dedent("""
    import os, sys
    from acl_py import emulator, smoke
    from acl_py.smoke import Case
    arm = os.environ.get("ARM")
    if arm:
        check_pairs = smoke.check_pairs
        def armed(*args, **kwargs):
            emulator.set_faults(arm)
            return check_pairs(*args, **kwargs)
        smoke.check_pairs = armed
    cases = []
    for item in os.environ["CASES"].split(";"):
        name, shape = item.split("=")
        cases.append(Case(name, tuple(int(n) for n in shape.split("x"))))
    sys.exit(smoke.main(sys.argv[1:], cases=cases))
""")


def run_smoke(tmp_path: Path, args: list[str], cases: str = "tiny=2x8", **env: str):
    full = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    full.update(ACL_PY_BACKEND="emulator", CASES=cases, **env)
    report = tmp_path / "report.json"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, "--json", str(report), "--timeout",
                           str(TIMEOUT), *args], cwd=ROOT,
                          env=full, capture_output=True, text=True, timeout=60)
    seconds = time.monotonic() - t0
    rep = json.loads(report.read_text()) if report.exists() else None
    return proc, rep, seconds


@pytest.mark.parametrize("fault, hung_device, mode", [
    ("aclrtMemcpyAsync:2:hang", 0, "src-stream"),   # the copy, on the source's stream
    ("aclrtMemcpyAsync:3:hang", 1, "src-stream"),   # the read-back, on the destination's
])
def test_a_peer_copy_that_hangs_is_reported_hung(tmp_path, fault, hung_device, mode):
    """Devices 0, 1, 2; the first pair's first copy (0 -> 1) hangs: that pair is hung, the
    pair with the same hung device is not checked, the other one is, and passes."""
    proc, rep, seconds = run_smoke(tmp_path, ["--devices", "0,1,2"],
                                   ACL_EMU_DEVICE_COUNT="3", ARM=fault)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert seconds < 30
    assert f"HUNG: device(s) {hung_device}: work did not complete within --timeout" \
        in proc.stdout
    assert "Traceback" not in proc.stderr
    assert rep["summary"]["hung_devices"] == [hung_device] and not rep["summary"]["ok"]
    assert rep["summary"]["failed"] == 0            # every case passed before
    pairs = {tuple(p["devices"]): p for p in rep["peer"]["pairs"]}
    hung = pairs[(0, 1)]
    assert hung["status"] == "hung" and hung["hung_devices"] == [hung_device]
    copy = hung["copies"][-1]
    assert (copy["src"], copy["dst"], copy["mode"]) == (0, 1, mode)
    assert copy["hung"] and copy["hung_device"] == hung_device and not copy["ok"]
    assert "AclTimeoutError" in copy["error"]
    skipped = pairs[tuple(sorted((hung_device, 2)))]
    assert skipped["status"] == "not-run" and skipped["copies"] == []
    assert f"device {hung_device} hung" in skipped["error"]
    # the pair of the two devices that did not hang is checked
    assert pairs[tuple(sorted({0, 1, 2} - {hung_device}))]["status"] == "pass"
    assert rep["peer"]["failed_pairs"] == [[0, 1]]
    assert "FAILED: peer copies between" in proc.stdout


def test_a_hang_met_by_the_allocators_wait_ends_in_time(tmp_path):
    """Two devices, 17 MiB of memory each (LayerNormBackward's workspace is 16 MiB of it on
    Atlas A2/A3); the process's first async copy hangs (on whichever
    device gets there first). The other device's second case needs more memory than there
    is: the allocator first synchronizes the streams holding deferred frees, the hung one
    among them, before it retries. That wait is bounded too: the case fails for memory, the
    hung device is reported hung, the command ends."""
    proc, rep, seconds = run_smoke(tmp_path, ["--devices", "0,1"],
                                   cases="tiny=2x8;big=512x1024",
                                   ACL_EMU_DEVICE_COUNT="2", ACL_EMU_DEVICE_MEMORY="17M",
                                   ACL_EMU_FAIL="aclrtMemcpyAsync:1:hang")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert seconds < 30
    hung = rep["summary"]["hung_devices"]
    assert len(hung) == 1, hung
    other = 1 - hung[0]
    assert f"HUNG: device(s) {hung[0]}: " in proc.stdout
    runs = {d["id"]: d for d in rep["devices"]}
    assert runs[hung[0]]["summary"]["hung"] and runs[hung[0]]["cases"][0]["hung"]
    cases = runs[other]["cases"]
    assert [c["status"] for c in cases] == ["pass", "fail"]
    assert "DeviceMemoryError" in cases[1]["error"] and not cases[1]["hung"]
    assert rep["peer"]["pairs"] == []     # not checked once a device hung
