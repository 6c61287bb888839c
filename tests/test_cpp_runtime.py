"""C++ programs written for CANN (public headers only) build against the emulator's prefix
with the documented command line and run: tests/c/runtime_smoke.cpp (allocations, copies
there and back, asynchronous copies on two streams with events and of pageable memory, error
codes), tests/c/forced_teardown.cpp (the forced teardown CANN programs end with: threads
that set the device, aclrtDestroyStreamForce with work queued, one aclrtResetDeviceForce) and
tests/c/event_flags.cpp (the event flag calls)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from acl_py import _loader

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, ".build")

EXPECTED = """\
device count: 1
device bytes in use: 32768
sync round trip: ok
stream 0: ok, elapsed non-negative
stream 1: ok, elapsed non-negative
pageable async round trip: ok
count > destMax: 107000 (aclrtMemcpy: count (32) exceeds destMax (16))
pageable source, kind device to host: 107000
free interior pointer: 107000
double free: 107000
device bytes in use at the end: 0
done
"""


def _env():
    env = dict(os.environ)
    for k in ("ACL_EMU_FAIL", "ACL_EMU_DEVICE_COUNT", "ACL_EMU_DEVICE_MEMORY"):
        env.pop(k, None)
    return env


def build(name, runtime="ascendcl", defines=()):
    """Builds tests/c/<name>.cpp against the emulator's prefix, linking the runtime library
    by the name given (``defines``: extra ``-D`` macros); returns the executable."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed: cannot build the C++ program")
    prefix = str(_loader.emulator_prefix().resolve())
    if not os.path.exists(os.path.join(prefix, "lib64", "libascendcl.so")):
        pytest.fail(f"the emulator is not built under {prefix}")
    os.makedirs(BUILD, exist_ok=True)
    exe = os.path.join(BUILD, name)
    # The documented command line, plus warnings as errors: the headers must be clean C++.
    cmd = [gxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", *(f"-D{d}" for d in defines),
           os.path.join(HERE, "c", name + ".cpp"), f"-I{prefix}/include",
           f"-L{prefix}/lib64", f"-Wl,-rpath,{prefix}/lib64", f"-l{runtime}", "-lnnopbase",
           "-lopapi", "-pthread", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    return exe


@pytest.fixture(scope="module")
def program():
    return build("runtime_smoke")


def test_cpp_program_runs_against_the_emulator(program):
    r = subprocess.run([program], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == EXPECTED


def test_cpp_program_sees_the_environment(program):
    env = _env()
    env["ACL_EMU_DEVICE_COUNT"] = "3"
    r = subprocess.run([program], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == "device count: 3"
    env = _env()
    env["ACL_EMU_FAIL"] = "aclrtCreateStream:2"  # the second stream cannot be created
    r = subprocess.run([program], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 1
    assert "FAILED aclrtCreateStream(&streams[s]) -> 207001: aclrtCreateStream: injected fault " \
           "(call 2)" in r.stdout


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif(bool(os.environ.get("ACL_PY_SANITIZER")),
                    reason="valgrind cannot run an AddressSanitizer build; ASan checks it instead")
def test_cpp_program_is_clean_under_valgrind(program):
    """No invalid access and no leak in the runtime along the whole program (threads,
    streams, events, arena, registries), as memcheck sees it."""
    cmd = ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
           "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
           program]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stdout == EXPECTED


FORCED_TEARDOWN_EXPECTED = """\
workers queued their copies
destroy a destroyed stream: 107017
plain reset after the forced one: 507007
malloc with the device released: 107002
device set again: byte 7
done
"""


def test_cpp_forced_teardown():
    """The vendor's examples end with aclrtDestroyStreamForce and aclrtResetDeviceForce: a
    forced reset releases the sets of every thread at once (a plain reset after it finds no
    primary context, 507007, and the device is no thread's current one), and the device can
    be set again. Linked as the examples link (their CMakeLists.txt): libacl_rt.so,
    libnnopbase.so, libopapi.so; the program loads one runtime, the one acl-py loads."""
    exe = build("forced_teardown", runtime="acl_rt")
    needed = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True).stdout
    assert "[libascendcl.so]" in needed and "libacl_rt" not in needed, needed
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == FORCED_TEARDOWN_EXPECTED


HOST_FUNCTIONS = """\
host function saw 7, later copy 9, runs 1
host function thread is the caller: no
aclrtMalloc inside a host function: 107000
two streams, one host-function thread: yes
default stream: 1
NULL fn: 107000
not a stream: 107017
callback on a host-function stream: 107011
subscribe a host-function stream: 107011
callback, no thread subscribed: 107015
bad block type: 100000
process, not subscribed: 107012
process, timeout 0: 100000
process, timeout -2: 100000
subscribe twice: 107011
host function on a subscribed stream: 107011
callback saw 3 on the subscribed thread: yes; callbacks run 6
aclrtMalloc inside a callback: 107000
unsubscribe, wrong thread: 107012
timeouts while idle: yes
unsubscribe twice: 107011
blocked stream complete: no
unsubscribe with a callback pending: 107011
after processing: callbacks run 1
process after the stream's destroy: 107012
failure mode stop -> continue: 207000
failure mode, not a stream: 107017
pending at finalize ran: 1
done
"""


def test_host_functions_and_callbacks():
    """Host functions run in stream order on the runtime's thread, callbacks on the subscribed
    thread inside aclrtProcessReport; misuse gets CANN's statuses (see the program)."""
    exe = build("host_functions")
    # the A2 part the program describes: it sets the NULL (default) stream's failure mode,
    # which the runtime of the Atlas training and inference series refuses (107000:
    # test_emulator_timeouts' test_failure_mode_rules on each part)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60,
                       env=dict(_env(), ACL_EMU_SOC="Ascend910B2"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == HOST_FUNCTIONS


EVENT_FLAGS_EXPECTED = """\
end recorded before b passed its wait: yes
elapsed >= 15 ms: yes
ex event before a record: complete
wait for a TIME_LINE-only event: 207000
reset an Ex event: 207000
record EXTERNAL after DEFAULT records: 107000
record EXTERNAL outside a capture: 107029
create with EXTERNAL | SYNC: 107000
wait flag 2: 100000
sync event after its reset: not ready
done
"""


def test_cpp_event_flags_program():
    """tests/c/event_flags.cpp: aclrtCreateEventWithFlag / ExWithFlag, aclrtRecordEventWithFlag
    and aclrtStreamWaitEventWithFlag from C++, with the codes of docs/emulator.md "Event
    flags"."""
    exe = build("event_flags")
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == EVENT_FLAGS_EXPECTED
