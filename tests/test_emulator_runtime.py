"""The emulator's runtime (libascendcl.so) against docs/emulator.md, through the raw cffi
binding: every rule gives its documented status code and a message naming the call, and the
live-object counts come back to zero (the conftest's ``no_leaks`` fixture checks that after
every test; tests that create objects also check it themselves).

aclInit is once per process, so rules about init/finalize order, environment variables read
at aclInit or at load, and device teardown run in a fresh interpreter (``run_raw``)."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from acl_py.raw import ffi, lib

from _emu_objects import allocated_bytes
from _emu_status import errmsg, expect, ok  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: rules and introspection of the emulator")

H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4


# ---- helpers ----------------------------------------------------------------------------

def live():
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return {k: getattr(out, k) for k in ("device_allocations", "host_allocations", "streams",
                                         "events", "contexts", "device_bytes")}


def malloc(n):
    p = ffi.new("void **")
    ok(lib.aclrtMalloc(p, n, 0), "aclrtMalloc")
    return p[0]


def malloc_host(n):
    p = ffi.new("void **")
    ok(lib.aclrtMallocHost(p, n), "aclrtMallocHost")
    return p[0]


def new_stream():
    s = ffi.new("aclrtStream *")
    ok(lib.aclrtCreateStream(s), "aclrtCreateStream")
    return s[0]


def new_event():
    e = ffi.new("aclrtEvent *")
    ok(lib.aclrtCreateEvent(e), "aclrtCreateEvent")
    return e[0]


def host_view(ptr, n):
    return np.frombuffer(ffi.buffer(ptr, n), dtype=np.uint8)


def run_raw(body, env=None, timeout=60):
    """Runs `body` in a fresh interpreter with `ffi`, `lib`, `errmsg`, `out` (a dict printed
    as JSON at the end) and NULL in scope; returns `out`."""
    src = textwrap.dedent("""\
        import json, sys, threading
        from acl_py.raw import ffi, lib
        NULL = ffi.NULL
        out = {}
        def errmsg():
            p = lib.aclGetRecentErrMsg()
            return None if p == ffi.NULL else ffi.string(p).decode()
        def live():
            o = ffi.new("aclemuLiveObjects *"); lib.aclemuGetLiveObjects(o)
            return {k: getattr(o, k) for k in ("device_allocations", "host_allocations",
                    "streams", "events", "contexts", "device_bytes")}
        """) + textwrap.dedent(body) + "\nprint('@@' + json.dumps(out))\n"
    full_env = dict(os.environ, ACL_PY_BACKEND="emulator")
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    for k in ("ACL_EMU_FAIL", "ACL_EMU_DEVICE_COUNT", "ACL_EMU_DEVICE_MEMORY",
              "ACL_EMU_MAX_STREAMS"):
        full_env.pop(k, None)
    full_env.update(env or {})
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                       timeout=timeout, env=full_env)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("@@")][-1]
    res = json.loads(line[2:])
    res["_stderr"] = r.stderr
    return res


@pytest.fixture
def dev():
    """Device 0 set on the calling thread (reference counted: balanced at the end)."""
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    before = live()
    yield 0
    lib.aclemuSetFaults(ffi.NULL)
    assert live() == before, "runtime objects leaked by the test"
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


def in_thread(fn):
    """Runs fn() on a new thread (which has no current device) and returns its result."""
    res = {}

    def target():
        try:
            res["value"] = fn()
        except BaseException as e:  # re-raised on the calling thread
            res["error"] = e
    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in res:
        raise res["error"]
    return res["value"]


# ---- process life -------------------------------------------------------------------------

def test_init_finalize_order_and_reinit():
    r = run_raw("""
        # no aclrt* call needs aclInit (CANN's check only the dump calls): the runtime comes up
        # at its first use, and aclFinalize before any aclInit tears it down (the emulator's)
        out["set_before"] = lib.aclrtSetDevice(0), errmsg()
        p = ffi.new("void **"); lib.aclrtMalloc(p, 64, 0)
        out["live_before_init"] = live()
        out["finalize_before"] = lib.aclFinalize(), errmsg()
        out["live_after_first_finalize"] = live()
        out["init"] = lib.aclInit(NULL)
        out["init_again"] = lib.aclInit(NULL), errmsg()
        out["set"] = lib.aclrtSetDevice(0)
        # leave one of everything alive: aclFinalize must release all of it
        p = ffi.new("void **"); lib.aclrtMalloc(p, 1000, 0)
        h = ffi.new("void **"); lib.aclrtMallocHost(h, 100)
        s = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s)
        lib.aclrtMemsetAsync(p[0], 1000, 7, 1000, s[0])
        e = ffi.new("aclrtEvent *"); lib.aclrtCreateEvent(e)
        c = ffi.new("aclrtContext *"); lib.aclrtCreateContext(c, 0)
        out["live_before"] = live()
        out["finalize"] = lib.aclFinalize()
        out["live_after"] = live()
        out["after"] = lib.aclrtGetDevice(ffi.new("int32_t *")), errmsg()
        out["finalize_twice"] = lib.aclFinalize(), errmsg()
        out["reinit"] = lib.aclInit(NULL)
        out["no_device_after_reinit"] = lib.aclrtMalloc(p, 8, 0), errmsg()
        out["stale_stream"] = (lib.aclrtSetDevice(0), lib.aclrtDestroyStream(s[0]), errmsg())
        out["end"] = lib.aclrtResetDevice(0), lib.aclFinalize()
    """)
    assert r["set_before"] == [0, None]
    assert r["live_before_init"]["device_allocations"] == 1
    # CANN's aclFinalize before any aclInit succeeds (acl.cpp); the emulator's releases what
    # the runtime brought up lazily holds
    assert r["finalize_before"] == [0, None]
    assert all(v == 0 for v in r["live_after_first_finalize"].values())
    assert r["init"] == 0 and r["set"] == 0
    assert r["init_again"][0] == 100002 and r["init_again"][1].startswith("aclInit:")
    lb = r["live_before"]
    assert (lb["device_allocations"], lb["host_allocations"], lb["streams"], lb["events"],
            lb["contexts"], lb["device_bytes"]) == (1, 1, 1, 1, 1, 1000)
    assert r["finalize"] == 0
    assert all(v == 0 for v in r["live_after"].values()), r["live_after"]
    # after aclFinalize the runtime comes up again at its next use, with no device set
    assert r["after"][0] == 107002 and r["after"][1].startswith("aclrtGetDevice:")
    assert r["finalize_twice"][0] == 100037  # ACL_ERROR_REPEAT_FINALIZE
    assert r["finalize_twice"][1].startswith("aclFinalize:") and "already finalized" in r["finalize_twice"][1]
    assert r["reinit"] == 0
    assert r["no_device_after_reinit"][0] == 107002  # no thread keeps a device across cycles
    assert r["stale_stream"][:2] == [0, 107017]
    assert r["end"] == [0, 0]


def test_init_config_file_checked_as_cann_does(tmp_path):
    """hicann/runtime acl_rt_impl_base.cpp and json_parser.cpp: a file that cannot be read is
    100003, text that is not JSON (or nests deeper than 10) is 100006, an empty file is fine;
    a failed aclInit leaves the runtime uninitialized."""
    files = {
        "ok": '{"dump": {"dump_list": []}, "err_msg_mode": "1", "x": [1, -2.5e3, true, null]}',
        "empty": "",
        "scalar": "  42 ",
        "truncated": '{"dump": [1, 2',
        "trailing": '{} {}',
        "comma": '{"a": 1,}',
        "quote": "{'a': 1}",
        "deep_ok": "[" * 10 + "]" * 10,
        "deep": "[" * 11 + "]" * 11,
        "deep_obj": '{"a":' * 11 + "1" + "}" * 11,
        "nul": '{"a": 1}\0garbage',
    }
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_bytes(text.encode())  # "nul": CANN parses up to the first NUL
    body = "".join(
        f'out[{name!r}] = lib.aclInit({str(path).encode()!r}), errmsg(), lib.aclFinalize()\n'
        'errmsg()\n' for name, path in paths.items())
    r = run_raw(body + f"""
out["missing"] = lib.aclInit(b"/nonexistent/acl.json"), errmsg()
out["directory"] = lib.aclInit({str(tmp_path).encode()!r}), errmsg()
out["after_failure"] = lib.aclrtSetDevice(0)
out["empty_path"] = lib.aclInit(b""), lib.aclFinalize()
""")
    for name in ("ok", "empty", "scalar", "deep_ok", "nul"):
        assert r[name] == [0, None, 0], (name, r[name])
    for name in ("truncated", "trailing", "comma", "quote", "deep", "deep_obj"):
        rc, msg, fin = r[name]
        assert rc == 100006, (name, r[name])  # ACL_ERROR_PARSE_FILE
        assert msg.startswith("aclInit:") and "not valid JSON" in msg, msg
        # nothing was initialized, and the last aclFinalize still counts (CANN's flag is only
        # cleared by a successful aclInit)
        assert fin == 100037
    assert "10 deep" in r["deep"][1] and "10 deep" in r["deep_obj"][1]
    assert r["missing"][0] == 100003 and "configPath" in r["missing"][1]  # ACL_ERROR_INVALID_FILE
    assert r["directory"][0] == 100003 and "not a regular file" in r["directory"][1]
    assert r["after_failure"] == 0  # the runtime needs no aclInit
    assert r["empty_path"] == [0, 0]


@pytest.mark.parametrize("var,value", [("ACL_EMU_DEVICE_COUNT", "0"),
                                       ("ACL_EMU_DEVICE_COUNT", "two"),
                                       ("ACL_EMU_DEVICE_MEMORY", "12Q"),
                                       ("ACL_EMU_DEVICE_MEMORY", "-5")])
def test_bad_environment_fails_init(var, value):
    r = run_raw('out["init"] = lib.aclInit(NULL), errmsg()', env={var: value})
    assert r["init"][0] == 100000
    assert r["init"][1].startswith("aclInit:") and var in r["init"][1]


def test_recent_error_message_is_per_thread_and_cleared(dev):
    assert lib.aclrtMalloc(ffi.NULL, 8, 0) == 100000
    other = in_thread(lambda: (lib.aclrtMalloc(ffi.new("void **"), 8, 0), errmsg(), errmsg()))
    assert other[0] == 107002 and other[1].startswith("aclrtMalloc:") and other[2] is None
    msg = errmsg()
    assert msg.startswith("aclrtMalloc:") and "devPtr" in msg
    assert errmsg() is None  # read and cleared


def test_version_and_live_objects_null():
    assert "aclemu" in ffi.string(lib.aclemuVersion()).decode()
    assert lib.aclemuGetLiveObjects(ffi.NULL) == 100000
    assert errmsg().startswith("aclemuGetLiveObjects:")


# ---- devices and contexts -------------------------------------------------------------------

def test_device_ids_and_count(dev):
    n = ffi.new("uint32_t *")
    ok(lib.aclrtGetDeviceCount(n))
    assert n[0] == 1
    for bad in (-1, 1, 1000):
        expect(lib.aclrtSetDevice(bad), 107001, "aclrtSetDevice", str(bad))
        expect(lib.aclrtResetDevice(bad), 107001, "aclrtResetDevice")
        expect(lib.aclrtCreateContext(ffi.new("aclrtContext *"), bad), 107001,
               "aclrtCreateContext")
    expect(lib.aclrtGetDeviceCount(ffi.NULL), 100000, "aclrtGetDeviceCount", "count")
    d = ffi.new("int32_t *")
    ok(lib.aclrtGetDevice(d))
    assert d[0] == 0
    expect(lib.aclrtGetDevice(ffi.NULL), 100000, "aclrtGetDevice")


def test_calls_without_a_device_on_the_thread(dev):
    p, q, s = malloc(64), malloc(64), new_stream()

    def probe():
        out = {}
        d = ffi.new("int32_t *")
        out["getdev"] = lib.aclrtGetDevice(d), errmsg()
        out["malloc"] = lib.aclrtMalloc(ffi.new("void **"), 8, 0), errmsg()
        out["memcpy"] = lib.aclrtMemcpy(q, 8, p, 8, D2D), errmsg()
        out["stream"] = lib.aclrtCreateStream(ffi.new("aclrtStream *")), errmsg()
        out["sync"] = lib.aclrtSynchronizeStream(s), errmsg()
        out["event"] = lib.aclrtCreateEvent(ffi.new("aclrtEvent *")), errmsg()
        out["meminfo"] = lib.aclrtGetMemInfo(1, ffi.new("size_t *"), ffi.new("size_t *")), errmsg()
        return out
    out = in_thread(probe)
    for call, (rc, msg) in out.items():
        assert rc == 107002, (call, rc, msg)
        assert "no device" in msg
    assert out["malloc"][1].startswith("aclrtMalloc:")
    # the current device is per thread: a thread that sets it can allocate
    def with_device():
        ok(lib.aclrtSetDevice(0))
        q = malloc(8)
        ok(lib.aclrtFree(q))
        ok(lib.aclrtResetDevice(0))
        return True
    assert in_thread(with_device)
    ok(lib.aclrtDestroyStream(s))
    # Freeing needs no current device: CANN frees through the driver then
    # (hicann/runtime api_impl.cc DevFreeStatic, HostFree).
    h = malloc_host(16)
    assert in_thread(lambda: (lib.aclrtFree(p), lib.aclrtFreeHost(h))) == (0, 0)
    assert in_thread(lambda: (lib.aclrtFree(p), errmsg()))[0] == 107000  # already freed
    ok(lib.aclrtFree(q))


def test_argument_checks_come_before_the_device_check(dev):
    """CANN's ACL layer checks NULL pointers and sizes before the runtime looks for the
    thread's device (hicann/runtime src/acl/aclrt_impl: stream.cpp, event.cpp, memory.cpp),
    and the runtime API validates handles before it needs a context (src/runtime/api/
    api_c.cc). A thread with no device gets the argument's code, not 107002."""
    size_max = int(ffi.cast("size_t", -1))
    garbage = ffi.cast("void *", 0x777000)

    def probe():
        return {
            "aclrtCreateStream": lib.aclrtCreateStream(ffi.NULL),
            "aclrtDestroyStream": lib.aclrtDestroyStream(ffi.NULL),
            "aclrtCreateEvent": lib.aclrtCreateEvent(ffi.NULL),
            "aclrtMallocHost": lib.aclrtMallocHost(ffi.NULL, 8),
            "aclrtMallocHost size": lib.aclrtMallocHost(ffi.new("void **"), 0),
            "aclrtMalloc size": lib.aclrtMalloc(ffi.new("void **"), size_max, 0),
            "aclrtRecordEvent": lib.aclrtRecordEvent(ffi.NULL, ffi.NULL),
            "aclrtRecordEvent handle": lib.aclrtRecordEvent(garbage, ffi.NULL),
            "aclrtEventElapsedTime": lib.aclrtEventElapsedTime(ffi.NULL, garbage, garbage),
            "aclrtSynchronizeEvent": lib.aclrtSynchronizeEvent(ffi.NULL),
            "aclrtDestroyEvent handle": lib.aclrtDestroyEvent(garbage),
        }
    got = in_thread(probe)
    want = {k: 100000 for k in got}
    want["aclrtRecordEvent handle"] = want["aclrtDestroyEvent handle"] = 107017
    assert got == want


def test_event_calls_need_no_current_device(dev):
    """aclrtSynchronizeEvent, aclrtEventElapsedTime, aclrtQueryEventStatus and
    aclrtDestroyEvent use the event's own context, not the calling thread's (hicann/runtime
    src/runtime/api/impl/api_impl.cc EventSynchronize, EventQueryStatus, EventDestroy;
    api_impl_event_common.cc EventElapsedTime): a thread with no device may wait on, query,
    time and destroy events another thread recorded."""
    s = new_stream()
    a, b = new_event(), new_event()
    ok(lib.aclrtRecordEvent(a, s))
    ok(lib.aclrtRecordEvent(b, s))

    def probe():
        ms = ffi.new("float *")
        es = ffi.new("aclrtEventRecordedStatus *")
        st = ffi.new("aclrtStreamStatus *")
        return (lib.aclrtSynchronizeEvent(b), lib.aclrtEventElapsedTime(ms, a, b),
                ms[0] >= 0.0, lib.aclrtQueryEventStatus(b, es), es[0],
                lib.aclrtStreamQuery(s, st),    # a stream query does need the context
                lib.aclrtDestroyEvent(a), lib.aclrtDestroyEvent(b))
    assert in_thread(probe) == (0, 0, True, 0, lib.ACL_EVENT_RECORDED_STATUS_COMPLETE, 107002,
                                0, 0)
    ok(lib.aclrtDestroyStream(s))


def test_malloc_size_overflowing_the_runtime_rounding():
    """CANN adds 32 bytes plus the part's padding (32; none for the 1 GiB huge-page policies,
    none on Ascend 950) before rounding a request to 32 bytes; a size that overflows that is
    100000 (hicann/runtime src/acl/aclrt_impl/memory.cpp GetAlignedAndPaddingSize and its unit
    test); anything smaller is an allocation the device cannot make (207001)."""
    body = """
        M = int(ffi.cast("size_t", -1))
        out["init"] = lib.aclInit(NULL), lib.aclrtSetDevice(0)
        p = ffi.new("void **")
        for name, size, policy in [("pad", M - 63, 0), ("pad_ok", M - 64, 0),
                                   ("huge1g", M - 31, 6), ("huge1g_ok", M - 32, 6),
                                   ("flagged", M - 63, 6 | 0x1000)]:
            out[name] = lib.aclrtMalloc(p, size, policy), errmsg()
        out["end"] = lib.aclrtResetDevice(0), lib.aclFinalize()
    """
    for soc, pad in (("Ascend910B2", True), ("Ascend950PR_9599", False)):
        r = run_raw(body, env={"ACL_EMU_SOC": soc})
        assert r["init"] == [0, 0] and r["end"] == [0, 0]
        assert r["huge1g"][0] == 100000 and r["huge1g_ok"][0] == 207001
        # a placement OR-ed with a flag is not one of the 1 GiB policies: padded
        assert r["pad"][0] == r["flagged"][0] == (100000 if pad else 207001), (soc, r)
        assert r["pad_ok"][0] == 207001
        assert r["huge1g"][1].startswith("aclrtMalloc: size") and "too large" in r["huge1g"][1]


def test_reset_device_teardown_and_refcount():
    r = run_raw("""
        lib.aclInit(NULL)
        out["reset_unset"] = lib.aclrtResetDevice(1), errmsg()
        lib.aclrtSetDevice(1); lib.aclrtSetDevice(1)
        s = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s)
        e = ffi.new("aclrtEvent *"); lib.aclrtCreateEvent(e)
        seen = {}
        def other():  # another thread whose current device is 1
            lib.aclrtSetDevice(1); lib.aclrtResetDevice(1)  # its own pair: count back to 2
            seen["go"] = threading.Event(); seen["done"] = threading.Event()
            seen["go"].wait()
            seen["rc"] = lib.aclrtMalloc(ffi.new("void **"), 8, 0), errmsg()
            seen["done"].set()
        t = threading.Thread(target=other); t.start()
        while "go" not in seen: pass
        out["first_reset"] = lib.aclrtResetDevice(1)          # count 2 -> 1: nothing torn down
        out["stream_alive"] = lib.aclrtSynchronizeStream(s[0])
        out["live_mid"] = live()
        out["second_reset"] = lib.aclrtResetDevice(1)         # 1 -> 0: teardown
        out["live_end"] = live()
        seen["go"].set(); t.join()
        out["other_thread"] = seen["rc"]
        lib.aclrtSetDevice(1)
        out["stale_stream"] = lib.aclrtSynchronizeStream(s[0]), errmsg()
        out["stale_event"] = lib.aclrtSynchronizeEvent(e[0]), errmsg()
        lib.aclrtResetDevice(1)
        out["reset_again"] = lib.aclrtResetDevice(1), errmsg()
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    # CANN finds no primary context to release: ACL_ERROR_RT_CONTEXT_RELEASE_ERROR
    assert r["reset_unset"][0] == 507007 and r["reset_unset"][1].startswith("aclrtResetDevice:")
    assert r["first_reset"] == 0 and r["stream_alive"] == 0
    assert (r["live_mid"]["streams"], r["live_mid"]["events"]) == (1, 1)
    assert r["second_reset"] == 0
    assert (r["live_end"]["streams"], r["live_end"]["events"]) == (0, 0)
    assert r["other_thread"][0] == 107002
    assert r["stale_stream"][0] == 107017 and r["stale_event"][0] == 107017
    assert r["reset_again"][0] == 507007


def test_reset_device_force_releases_every_set_of_the_device():
    """aclrtResetDeviceForce (hicann/runtime docs/zh/api_ref/04_device_management.md): one
    call releases the device however many aclrtSetDevice calls preceded it; it also pairs
    with single ones. Like aclrtResetDevice, a device with no set left has no primary context
    to release (507007), and a context of its own keeps the device alive."""
    r = run_raw("""
        lib.aclInit(NULL)
        out["unset"] = lib.aclrtResetDeviceForce(1), errmsg()
        out["bad_id"] = lib.aclrtResetDeviceForce(7), errmsg()
        # the documented unpaired pattern: set, set, one forced reset
        lib.aclrtSetDevice(1); lib.aclrtSetDevice(1); lib.aclrtSetDevice(1)
        s = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s)
        p = ffi.new("void **"); lib.aclrtMalloc(p, 64, 0)
        lib.aclrtMemsetAsync(p[0], 64, 7, 64, s[0])
        out["forced"] = lib.aclrtResetDeviceForce(1)
        out["live_after"] = live()
        out["plain_after"] = lib.aclrtResetDevice(1), errmsg()
        out["stale_stream"] = lib.aclrtSetDevice(1), lib.aclrtSynchronizeStream(s[0])
        # paired: set -> forced reset -> set -> forced reset
        out["paired"] = lib.aclrtResetDeviceForce(1), lib.aclrtSetDevice(1), \
            lib.aclrtResetDeviceForce(1), lib.aclrtResetDeviceForce(1)
        # a context of the device's own holds it past the forced reset
        lib.aclrtSetDevice(1)
        c = ffi.new("aclrtContext *"); lib.aclrtCreateContext(c, 1)
        s2 = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s2)
        out["forced_with_context"] = lib.aclrtResetDeviceForce(1)
        out["stream_kept"] = lib.aclrtSynchronizeStream(s2[0])
        out["context_end"] = lib.aclrtDestroyStream(s2[0]), lib.aclrtDestroyContext(c[0])
        out["live_end"] = live()
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r["unset"][0] == 507007 and r["unset"][1].startswith("aclrtResetDeviceForce:"), r
    assert r["bad_id"][0] == 107001 and r["bad_id"][1].startswith("aclrtResetDeviceForce:")
    assert r["forced"] == 0
    # everything of the device is gone: its stream, and its memory with the device's teardown
    assert (r["live_after"]["streams"], r["live_after"]["events"]) == (0, 0)
    assert r["plain_after"][0] == 507007, r["plain_after"]
    assert r["stale_stream"] == [0, 107017]
    assert r["paired"] == [0, 0, 0, 507007]
    assert r["forced_with_context"] == 0 and r["stream_kept"] == 0
    assert r["context_end"] == [0, 0]
    assert (r["live_end"]["streams"], r["live_end"]["contexts"]) == (0, 0)


def test_destroy_stream_force(dev):
    """aclrtDestroyStreamForce: the checks of aclrtDestroyStream under its own name (NULL is
    not the default stream to destroy, a stale handle, another device's stream), and a
    stream destroyed with work queued leaves nothing holding the memory that work used."""
    before = live()
    p, q = malloc(1 << 20), malloc(1 << 20)
    s = new_stream()
    ok(lib.aclrtMemsetAsync(p, 1 << 20, 1, 1 << 20, s), "aclrtMemsetAsync")
    ok(lib.aclrtMemcpyAsync(q, 1 << 20, p, 1 << 20, D2D, s), "aclrtMemcpyAsync")
    ok(lib.aclrtDestroyStreamForce(s), "aclrtDestroyStreamForce")
    expect(lib.aclrtDestroyStreamForce(s), 107017, "aclrtDestroyStreamForce", "not a live stream")
    expect(lib.aclrtSynchronizeStream(s), 107017, "aclrtSynchronizeStream")
    expect(lib.aclrtDestroyStreamForce(ffi.NULL), 100000, "aclrtDestroyStreamForce",
           "default stream")
    ok(lib.aclrtFree(p), "aclrtFree")
    ok(lib.aclrtFree(q), "aclrtFree")
    assert live() == before


def test_two_devices_streams_and_memory():
    r = run_raw("""
        lib.aclInit(NULL)
        lib.aclrtSetDevice(1)
        s1 = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s1)
        e1 = ffi.new("aclrtEvent *"); lib.aclrtCreateEvent(e1)
        p1 = ffi.new("void **"); lib.aclrtMalloc(p1, 256, 0)
        lib.aclrtSetDevice(0)
        d = ffi.new("int32_t *"); lib.aclrtGetDevice(d); out["current"] = d[0]
        p0 = ffi.new("void **"); lib.aclrtMalloc(p0, 256, 0)
        out["other_stream_sync"] = lib.aclrtSynchronizeStream(s1[0]), errmsg()
        lib.aclrtGetDevice(d); out["current_after_sync"] = d[0]
        out["wrong_destroy"] = lib.aclrtDestroyStream(s1[0]), errmsg()
        out["wrong_event"] = lib.aclrtRecordEvent(e1[0], NULL), errmsg()
        out["wrong_wait"] = lib.aclrtStreamWaitEvent(NULL, e1[0]), errmsg()
        out["other_event_sync"] = lib.aclrtSynchronizeEvent(e1[0]), errmsg()
        out["peer_copy"] = lib.aclrtMemcpy(p0[0], 256, p1[0], 256, 3), errmsg()
        f = ffi.new("size_t *"); t = ffi.new("size_t *")
        lib.aclrtGetMemInfo(1, f, t); out["info0"] = t[0] - f[0]
        lib.aclrtFree(p0[0])
        lib.aclrtSetDevice(1)
        lib.aclrtGetMemInfo(1, f, t); out["info1"] = t[0] - f[0]
        out["right_stream"] = lib.aclrtSynchronizeStream(s1[0])
        out["cleanup"] = (lib.aclrtDestroyStream(s1[0]), lib.aclrtDestroyEvent(e1[0]),
                          lib.aclrtFree(p1[0]))
        lib.aclrtResetDevice(1); lib.aclrtResetDevice(1); lib.aclrtResetDevice(0)
        out["live"] = live()
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r["current"] == 0
    # waiting for an event of another device fails too (the same guide)
    for key in ("wrong_destroy", "wrong_event", "wrong_wait"):
        assert r[key][0] == 107003, (key, r[key])
        assert "device 1" in r[key][1]
    # the vendor's multi-device guide: recording an event on another device's stream fails,
    # synchronizing on an event of another device than the current one succeeds
    # (hicann/runtime docs/zh/dev_guide/05_multi_device_programming.md)
    assert r["other_event_sync"] == [0, None]
    # synchronizing another device's stream is fine: CANN switches to the stream's context
    # for the wait and back (hicann/runtime src/runtime/api/impl/api_impl.cc StreamSynchronize)
    assert r["other_stream_sync"] == [0, None] and r["current_after_sync"] == 0
    assert r["peer_copy"][0] == 107000 and "peer" in r["peer_copy"][1]
    assert r["info0"] == 256 and r["info1"] == 256  # per-device accounting
    assert r["right_stream"] == 0 and r["cleanup"] == [0, 0, 0]
    assert all(v == 0 for v in r["live"].values())


def test_contexts(dev):
    c = ffi.new("aclrtContext *")
    expect(lib.aclrtCreateContext(ffi.NULL, 0), 100000, "aclrtCreateContext")
    default = ffi.new("aclrtContext *")
    ok(lib.aclrtGetCurrentContext(default))
    base = live()["contexts"]
    ok(lib.aclrtCreateContext(c, 0))
    assert live()["contexts"] == base + 1
    cur = ffi.new("aclrtContext *")
    ok(lib.aclrtGetCurrentContext(cur))
    assert cur[0] == c[0] != default[0]  # the new context is current
    ok(lib.aclrtSetCurrentContext(default[0]))
    ok(lib.aclrtGetCurrentContext(cur))
    assert cur[0] == default[0]
    expect(lib.aclrtSetCurrentContext(ffi.NULL), 100000, "aclrtSetCurrentContext")
    # CANN's codes: a context that is not live is 107000 to set current, 107002 to destroy,
    # as is the default (primary) context (api_error.cc ContextSetCurrent, api_impl.cc
    # ContextDestroy)
    expect(lib.aclrtSetCurrentContext(ffi.cast("void *", 0x1234)), 107000,
           "aclrtSetCurrentContext")
    expect(lib.aclrtDestroyContext(default[0]), 107002, "aclrtDestroyContext", "default")
    ok(lib.aclrtSetCurrentContext(c[0]))
    ok(lib.aclrtDestroyContext(c[0]))
    expect(lib.aclrtDestroyContext(c[0]), 107002, "aclrtDestroyContext", "not a live context")
    expect(lib.aclrtSetCurrentContext(c[0]), 107000, "aclrtSetCurrentContext")
    ok(lib.aclrtGetCurrentContext(cur))  # falls back to the device's default context
    assert cur[0] == default[0]
    expect(lib.aclrtGetCurrentContext(ffi.NULL), 100000, "aclrtGetCurrentContext")
    assert live()["contexts"] == base


def test_set_current_context_switches_thread_device():
    r = run_raw("""
        lib.aclInit(NULL)
        c = ffi.new("aclrtContext *")
        out["create"] = lib.aclrtCreateContext(c, 1)
        d = ffi.new("int32_t *"); lib.aclrtGetDevice(d); out["after_create"] = d[0]
        lib.aclrtSetDevice(0); lib.aclrtGetDevice(d); out["after_set"] = d[0]
        out["switch"] = lib.aclrtSetCurrentContext(c[0])
        lib.aclrtGetDevice(d); out["after_switch"] = d[0]
        out["destroy"] = lib.aclrtDestroyContext(c[0])  # device 1 loses its last reference
        out["getdev"] = lib.aclrtGetDevice(d)
        lib.aclrtResetDevice(0); lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert (r["create"], r["after_create"], r["after_set"]) == (0, 1, 0)
    assert (r["switch"], r["after_switch"], r["destroy"]) == (0, 1, 0)
    assert r["getdev"] == 107002


# ---- device memory ---------------------------------------------------------------------------

def test_malloc_arguments(dev):
    p = ffi.new("void **")
    expect(lib.aclrtMalloc(ffi.NULL, 8, 0), 100000, "aclrtMalloc", "devPtr")
    expect(lib.aclrtMalloc(p, 0, 0), 100000, "aclrtMalloc", "size")
    # every policy value: a placement 0..7, optionally with the type/access flags, and any
    # other value, which CANN maps to its default (hicann/runtime src/acl/aclrt_impl/memory.cpp
    # aclMallocMemInner; the API reference: outside aclrtMemMallocPolicy, huge pages from
    # 2 MiB, normal pages below)
    flags = (0, 0x100, 0x1000, 0x100000, 0x1000 | 0x100000)
    others = (8, 1000, 0x200, 0x7FFFFFFF, -1)
    for policy in [pl | f for pl in range(8) for f in flags] + list(others):
        for size in (8, 2 << 20):
            ok(lib.aclrtMalloc(p, size, ffi.cast("aclrtMemMallocPolicy", policy)),
               f"aclrtMalloc policy {policy:#x}")
            ok(lib.aclrtFree(p[0]))
    # argument errors come before the device check, as in CANN's ACL layer
    assert in_thread(lambda: lib.aclrtMalloc(ffi.NULL, 8, 0)) == 100000
    before = live()
    ptrs = [malloc(n) for n in (1, 63, 64, 65, 1000)]
    assert all(int(ffi.cast("uintptr_t", q)) % 64 == 0 for q in ptrs)
    assert live()["device_bytes"] - before["device_bytes"] == 1 + 63 + 64 + 65 + 1000
    assert live()["device_allocations"] - before["device_allocations"] == 5
    for q in ptrs:
        ok(lib.aclrtFree(q))


def test_free_rules(dev):
    p = malloc(128)
    h = malloc_host(64)
    host = np.zeros(16, np.uint8)
    expect(lib.aclrtFree(ffi.NULL), 100000, "aclrtFree")
    expect(lib.aclrtFree(ffi.cast("char *", p) + 64), 107000, "aclrtFree", "inside")
    expect(lib.aclrtFree(ffi.from_buffer(host)), 107000, "aclrtFree", "not a live")
    expect(lib.aclrtFree(h), 107000, "aclrtFree", "aclrtFreeHost")
    expect(lib.aclrtFreeHost(p), 107000, "aclrtFreeHost", "aclrtFree")
    expect(lib.aclrtFreeHost(ffi.NULL), 100000, "aclrtFreeHost")
    expect(lib.aclrtFreeHost(ffi.from_buffer(host)), 107000, "aclrtFreeHost")
    before = live()
    ok(lib.aclrtFree(p))
    assert live()["device_allocations"] == before["device_allocations"] - 1  # freed just now
    expect(lib.aclrtFree(p), 107000, "aclrtFree", "already freed")
    ok(lib.aclrtFreeHost(h))
    expect(lib.aclrtFreeHost(h), 107000, "aclrtFreeHost")
    expect(lib.aclrtMallocHost(ffi.NULL, 8), 100000, "aclrtMallocHost")
    expect(lib.aclrtMallocHost(ffi.new("void **"), 0), 100000, "aclrtMallocHost", "size")


def test_memory_cap_and_meminfo():
    r = run_raw("""
        lib.aclInit(NULL); lib.aclrtSetDevice(0)
        f = ffi.new("size_t *"); t = ffi.new("size_t *")
        out["info0"] = lib.aclrtGetMemInfo(1, f, t), f[0], t[0]
        a = ffi.new("void **"); b = ffi.new("void **")
        out["a"] = lib.aclrtMalloc(a, 600 * 1024, 0)
        lib.aclrtGetMemInfo(1, f, t); out["info1"] = f[0], t[0]
        out["b_over"] = lib.aclrtMalloc(b, 500 * 1024, 0), errmsg()
        out["live_after_fail"] = live()
        out["b_fit"] = lib.aclrtMalloc(b, 1024 * 1024 - 600 * 1024, 0)  # exactly the cap
        out["one_more"] = lib.aclrtMalloc(ffi.new("void **"), 1, 0)
        out["huge"] = lib.aclrtMalloc(ffi.new("void **"), 2**63, 0)
        lib.aclrtFree(a[0])
        out["reuse"] = lib.aclrtMalloc(a, 600 * 1024, 0)  # freed memory is usable again
        lib.aclrtFree(a[0]); lib.aclrtFree(b[0])
        out["ddr"] = lib.aclrtGetMemInfo(0, f, t), f[0], t[0]
        out["attrs"] = [[lib.aclrtGetMemInfo(a, f, t), f[0], t[0]] for a in range(18)]
        out["bad_attr"] = lib.aclrtGetMemInfo(18, f, t), errmsg()
        out["negative_attr"] = lib.aclrtGetMemInfo(ffi.cast("aclrtMemAttr", -1), f, t), errmsg()
        out["null"] = lib.aclrtGetMemInfo(1, NULL, t), errmsg()
        out["live"] = live()
        lib.aclrtResetDevice(0); lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_MEMORY": "1M"})
    assert r["info0"] == [0, 2**20, 2**20]
    assert r["a"] == 0 and r["info1"] == [2**20 - 600 * 1024, 2**20]
    assert r["b_over"][0] == 207001 and r["b_over"][1].startswith("aclrtMalloc:")
    assert "ACL_EMU_DEVICE_MEMORY" in r["b_over"][1]
    assert r["live_after_fail"]["device_allocations"] == 1
    assert r["b_fit"] == 0 and r["one_more"] == 207001 and r["huge"] == 207001
    assert r["reuse"] == 0
    assert r["ddr"] == [0, 0, 0]  # the emulated device has HBM only
    # every aclrtMemAttr is valid: DDR ones read 0, HBM and memory-kind-neutral ones the device
    ddr = {0, 2, 3, 6, 7}
    for a, (rc, free, total) in enumerate(r["attrs"]):
        assert rc == 0, (a, rc)
        assert (free, total) == ((0, 0) if a in ddr else (2**20, 2**20)), a
    # out of range: the runtime's ACL_ERROR_RT_INVALID_MEMORY_TYPE (api_error.cc MemGetInfoEx)
    assert r["bad_attr"][0] == 107016 and "attr 18" in r["bad_attr"][1]
    assert r["negative_attr"][0] == 107016
    assert r["null"][0] == 100000
    assert all(v == 0 for v in r["live"].values())


def test_memory_suffixes():
    for spec, n in (("4096", 4096), ("2K", 2048), ("3m", 3 << 20), ("1GiB", 1 << 30),
                    ("1G", 1 << 30)):
        r = run_raw("""
            lib.aclInit(NULL); lib.aclrtSetDevice(0)
            f = ffi.new("size_t *"); t = ffi.new("size_t *")
            lib.aclrtGetMemInfo(1, f, t); out["total"] = t[0]
            lib.aclrtResetDevice(0); lib.aclFinalize()
        """, env={"ACL_EMU_DEVICE_MEMORY": spec})
        assert r["total"] == n, spec


# ---- copies ---------------------------------------------------------------------------------

def test_memcpy_round_trip_and_kinds(dev):
    n = 1000
    src = np.arange(n, dtype=np.uint8)
    back = np.zeros(n, np.uint8)
    p, q = malloc(n), malloc(n)
    ok(lib.aclrtMemcpy(p, n, ffi.from_buffer(src), n, H2D))
    ok(lib.aclrtMemcpy(q, n, p, n, D2D))
    ok(lib.aclrtMemcpy(ffi.from_buffer(back), n, q, n, D2H))
    assert (back == src).all()
    # ACL_MEMCPY_DEFAULT infers each direction from where the pointers live
    back2 = np.zeros(n, np.uint8)
    ok(lib.aclrtMemcpy(p, n, ffi.from_buffer(src[::-1].copy()), n, DEFAULT))
    ok(lib.aclrtMemcpy(ffi.from_buffer(back2), n, p, n, DEFAULT))
    assert (back2 == src[::-1]).all()
    h = np.zeros(n, np.uint8)
    ok(lib.aclrtMemcpy(ffi.from_buffer(h), n, ffi.from_buffer(src), n, H2H))
    assert (h == src).all()
    # ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE (5) is a host-to-device copy
    ok(lib.aclrtMemcpy(q, n, ffi.from_buffer(src[::-1].copy()), n, 5))
    ok(lib.aclrtMemcpy(ffi.from_buffer(back), n, q, n, D2H))
    assert (back == src[::-1]).all()
    # count 0 succeeds and does nothing, before any check (CANN: aclrtMemcpyImpl), even with
    # NULL pointers, a bad kind, or no device on the thread
    ok(lib.aclrtMemcpy(p, n, ffi.from_buffer(src), 0, H2D))
    ok(lib.aclrtMemcpy(ffi.NULL, 0, ffi.NULL, 0, 1000))
    assert in_thread(lambda: (lib.aclrtMemcpy(ffi.NULL, 0, ffi.NULL, 0, H2D),
                              lib.aclrtMemcpyAsync(ffi.NULL, 0, ffi.NULL, 0, H2D, ffi.NULL),
                              lib.aclrtMemset(ffi.NULL, 0, 0, 0),
                              lib.aclrtMemsetAsync(ffi.NULL, 0, 0, 0, ffi.NULL))) == (0, 0, 0, 0)
    ok(lib.aclrtMemcpy(ffi.from_buffer(back), 2 * n, p, 10, D2H))
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFree(q))


@pytest.mark.parametrize("n", [1000, (9 << 20) + 37])
def test_copies_land_exactly_at_every_relative_offset(dev, n):
    """A large copy is made with a loop of its own (emulator/src/runtime/copy.c: non-temporal
    stores, the destination aligned first): every byte lands, none around it moves, whatever
    the offsets of source and destination, and an overlapping copy is still a memmove."""
    rng = np.random.default_rng(n)
    pad = 128
    src = rng.integers(0, 256, n + pad, dtype=np.uint8)
    p, q = malloc(n + pad), malloc(n + pad)
    try:
        for so, do in ((0, 0), (0, 16), (16, 0), (1, 63), (63, 1), (8, 40)):
            host = np.full(n + pad, 0xA5, np.uint8)
            ok(lib.aclrtMemset(p, n + pad, 0x5A, n + pad))
            ok(lib.aclrtMemset(q, n + pad, 0x3C, n + pad))
            ok(lib.aclrtMemcpy(ffi.cast("char *", p) + do, n, ffi.from_buffer(src[so:]), n, H2D))
            ok(lib.aclrtMemcpy(ffi.cast("char *", q) + so, n, ffi.cast("char *", p) + do, n, D2D))
            ok(lib.aclrtMemcpy(ffi.from_buffer(host[do:]), n, ffi.cast("char *", q) + so, n,
                               D2H))
            assert (host[do:do + n] == src[so:so + n]).all(), (so, do)
            assert (host[:do] == 0xA5).all() and (host[do + n:] == 0xA5).all(), (so, do)
            whole = np.empty(n + pad, np.uint8)
            ok(lib.aclrtMemcpy(ffi.from_buffer(whole), n + pad, q, n + pad, D2H))
            assert (whole[:so] == 0x3C).all() and (whole[so + n:] == 0x3C).all(), (so, do)
        # overlapping, forwards and backwards by 16 bytes: memmove's result
        for shift in (16, -16):
            ok(lib.aclrtMemcpy(p, n + pad, ffi.from_buffer(src), n + pad, H2D))
            a, b = (16, 16 + shift)
            ok(lib.aclrtMemcpy(ffi.cast("char *", p) + b, n, ffi.cast("char *", p) + a, n, D2D))
            want = src.copy()
            want[b:b + n] = src[a:a + n]
            got = np.empty(n + pad, np.uint8)
            ok(lib.aclrtMemcpy(ffi.from_buffer(got), n + pad, p, n + pad, D2H))
            assert (got == want).all(), shift
    finally:
        ok(lib.aclrtFree(p))
        ok(lib.aclrtFree(q))


def test_memcpy_rules_copy_nothing(dev):
    n = 256
    usable = allocated_bytes(n)
    p, q = malloc(n), malloc(n)
    ok(lib.aclrtMemset(p, n, 0x5A, n))
    ok(lib.aclrtMemset(q, n, 0x5A, n))
    host = np.full(2 * n, 7, np.uint8)
    host2 = np.full(2 * n, 7, np.uint8)
    hp, hp2 = ffi.from_buffer(host), ffi.from_buffer(host2)
    dptr = ffi.cast("char *", p)
    cases = [
        # (args, code, words)
        ((ffi.NULL, n, hp, n, H2D), 100000, ["dst is NULL"]),
        ((p, n, ffi.NULL, n, H2D), 100000, ["src is NULL"]),
        ((p, n, hp, n, 6), 100000, ["kind 6", "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE"]),
        ((p, n, hp, n, 7), 100000, ["kind 7", "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE"]),
        ((p, n, hp, n, 1000), 100000, ["kind 1000"]),
        ((p, n, hp, n, ffi.cast("aclrtMemcpyKind", -1)), 100000, ["kind -1"]),
        ((p, n - 1, hp, n, H2D), 107000, ["count (256) exceeds destMax (255)"]),
        ((p, 0, hp, n, H2D), 107000, ["exceeds destMax (0)"]),
        # a side the kind calls device memory that is host memory not from aclrtMallocHost
        ((hp2, n, hp, n, 5), 107000, ["dst", "not device memory", "HOST_TO_BUF_TO_DEVICE"]),
        ((hp2, n, hp, n, H2D), 107000, ["dst", "not device memory", "ACL_MEMCPY_HOST_TO_DEVICE"]),
        ((hp2, n, hp, n, D2H), 107000, ["src", "not device memory"]),
        ((hp2, n, p, n, D2D), 107000, ["dst", "not device memory"]),
        ((p, n, hp, n, D2D), 107000, ["src", "not device memory"]),
        ((hp, n, p, n, H2D), 107000, ["dst", "not device memory"]),
        # past the end of what the runtime allocated for n bytes (n rounded up)
        ((p, 2 * n, hp, usable + 1, H2D), 107000,
         ["runs past the end", f"{usable} bytes", f"{n} requested"]),
        ((dptr + 200, n, hp, usable - 199, H2D), 107000, ["runs past the end"]),
        ((hp, 2 * n, dptr + usable - n + 1, n, D2H), 107000, ["src range"]),
        ((ffi.cast("void *", 8), n, p, n, D2H), 107000, ["not a valid host address"]),
    ]
    for args, code, words in cases:
        expect(lib.aclrtMemcpy(*args), code, "aclrtMemcpy", *words)
    assert (host == 7).all() and (host2 == 7).all()  # nothing was copied
    ok(lib.aclrtFree(q))
    check = np.zeros(n, np.uint8)
    ok(lib.aclrtMemcpy(ffi.from_buffer(check), n, p, n, D2H))
    assert (check == 0x5A).all()
    ok(lib.aclrtMemcpy(dptr + 200, 56, hp, 56, H2D))  # the exact end is fine
    ok(lib.aclrtFree(p))
    # a freed device address is never taken for host memory
    expect(lib.aclrtMemcpy(ffi.from_buffer(check), n, p, n, D2H), 107000, "aclrtMemcpy",
           "not allocated")
    for kind in (H2D, H2H, DEFAULT):  # whatever the kind says
        expect(lib.aclrtMemcpy(p, n, hp, n, kind), 107000, "aclrtMemcpy", "dst",
               "device memory that is not allocated")


def test_memcpy_direction_comes_from_the_addresses(dev):
    """aclrtMemcpy's kind is a reserved parameter: the direction is judged by the addresses
    (hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md aclrtMemcpy; the runtime's
    synchronous copy hands the driver the addresses without the kind,
    src/runtime/driver/npu_driver_mem.cc MemCopySync). Between device memory and
    aclrtMallocHost memory every kind 0..5 copies each way; pageable host memory is taken as
    host memory by every kind that does not call it device memory (one that does: refused,
    test_memcpy_rules_copy_nothing)."""
    n = 128
    p, q = malloc(n), malloc(n)
    h, h2 = malloc_host(n), malloc_host(n)
    for kind in (H2H, H2D, D2H, D2D, DEFAULT, 5):
        want = (np.arange(n) * (kind + 3) % 251).astype(np.uint8)
        host_view(h, n)[:] = want
        host_view(h2, n)[:] = 0
        ok(lib.aclrtMemcpy(p, n, h, n, kind), f"H2D as kind {kind}")
        ok(lib.aclrtMemcpy(q, n, p, n, kind), f"D2D as kind {kind}")
        ok(lib.aclrtMemcpy(h2, n, q, n, kind), f"D2H as kind {kind}")
        assert (host_view(h2, n) == want).all(), kind
        host_view(h, n)[:] = 0
        ok(lib.aclrtMemcpy(h, n, h2, n, kind), f"H2H as kind {kind}")
        assert (host_view(h, n) == want).all(), kind
    page, back = np.arange(n, dtype=np.uint8), np.zeros(n, np.uint8)
    for kind in (H2H, H2D, DEFAULT, 5):  # a pageable source the kind does not call device
        ok(lib.aclrtMemset(p, n, 0, n))
        ok(lib.aclrtMemcpy(p, n, ffi.from_buffer(page), n, kind), f"H2D as kind {kind}")
        ok(lib.aclrtMemcpy(h2, n, p, n, D2H))
        assert (host_view(h2, n) == page).all(), kind
    for kind in (H2H, D2H, DEFAULT):  # a pageable destination likewise
        back[:] = 0
        ok(lib.aclrtMemcpy(ffi.from_buffer(back), n, p, n, kind), f"D2H as kind {kind}")
        assert (back == page).all(), kind
        back[:] = 0
        ok(lib.aclrtMemcpy(ffi.from_buffer(back), n, h2, n, kind), f"H2H as kind {kind}")
        assert (back == page).all(), kind
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFree(q))
    ok(lib.aclrtFreeHost(h))
    ok(lib.aclrtFreeHost(h2))


def test_memcpy_onto_itself_is_done_before_any_other_check(dev):
    """A synchronous copy whose dst is its src: after the NULL, kind and count checks the
    runtime returns success without a device or a look at the pointers (hicann/runtime
    src/runtime/api/impl/api_error.cc MemCopySync). The asynchronous copy's shortcut comes
    after the pointers' places and its kind (api_error.cc MemcpyAsync)."""
    n = 64
    host = np.arange(n, dtype=np.uint8)
    hp = ffi.from_buffer(host)
    p = malloc(n)
    s = new_stream()
    for kind in (H2H, H2D, D2H, D2D, DEFAULT, 5):
        ok(lib.aclrtMemcpy(hp, n, hp, n, kind), f"aclrtMemcpy kind {kind}")
        ok(lib.aclrtMemcpy(p, n, p, n, kind), f"aclrtMemcpy kind {kind}")
    assert in_thread(lambda: lib.aclrtMemcpy(hp, n, hp, n, H2D)) == 0  # no device needed
    assert (host == np.arange(n, dtype=np.uint8)).all()
    expect(lib.aclrtMemcpy(hp, n - 1, hp, n, H2H), 107000, "aclrtMemcpy", "exceeds destMax")
    expect(lib.aclrtMemcpy(hp, n, hp, n, 6), 100000, "aclrtMemcpy", "kind 6")
    ok(lib.aclrtMemcpyAsync(p, n, p, n, H2D, s))  # device memory both sides: D2D, done
    ok(lib.aclrtMemcpyAsync(hp, n, hp, n, H2D, s))  # pageable both sides: H2D allowed, done
    expect(lib.aclrtMemcpyAsync(hp, n, hp, n, DEFAULT, s), 207000, "aclrtMemcpyAsync",
           "host-to-host")  # the pair's default kind is host-to-host, refused first
    expect(lib.aclrtMemcpyAsync(p, n, p, n, H2D, ffi.cast("void *", 0xdead0)), 107017,
           "aclrtMemcpyAsync", "stream")
    ok(lib.aclrtFree(p))
    ok(lib.aclrtDestroyStream(s))


def test_copy_checks_follow_the_runtime_layers(dev):
    """The ACL layer's NULL/kind checks (100000), then the runtime API's stream handle
    (107017, hicann/runtime src/runtime/api/api_c.cc), then count against destMax/maxCount
    (107000, api_error.cc), then the context (107002, api_impl.cc). The synchronous memset's
    count check is the driver's (api_error.cc MemSetSync has none): after the device."""
    p = malloc(16)
    host = malloc_host(16)
    bad = ffi.cast("void *", 0x777000)
    expect(lib.aclrtMemsetAsync(p, 10, 0, 11, bad), 107017, "aclrtMemsetAsync", "stream")
    expect(lib.aclrtMemcpyAsync(p, 8, host, 16, H2D, bad), 107017, "aclrtMemcpyAsync",
           "stream")
    expect(lib.aclrtMemcpyAsync(ffi.NULL, 8, host, 16, H2D, bad), 100000, "aclrtMemcpyAsync",
           "dst is NULL")

    def probe():
        return (lib.aclrtMemcpyAsync(p, 16, host, 16, H2D, bad),
                lib.aclrtMemsetAsync(p, 16, 0, 16, bad),
                lib.aclrtMemsetAsync(p, 10, 0, 11, ffi.NULL),
                lib.aclrtMemcpy(p, 8, host, 16, H2D),
                lib.aclrtMemset(p, 10, 0, 11))
    assert in_thread(probe) == (107017, 107017, 107000, 107000, 107002)
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(host))


def test_memset_rules(dev):
    p = malloc(100)
    expect(lib.aclrtMemset(ffi.NULL, 10, 0, 10), 100000, "aclrtMemset", "devPtr")
    expect(lib.aclrtMemset(p, 10, 0, 11), 107000, "aclrtMemset", "count (11) exceeds maxCount")
    expect(lib.aclrtMemsetAsync(p, 10, 0, 11, ffi.NULL), 107000, "aclrtMemsetAsync",
           "count (11) exceeds maxCount")
    usable = allocated_bytes(100)           # what the runtime allocates for 100 bytes
    ok(lib.aclrtMemset(p, usable, 0, usable))
    expect(lib.aclrtMemset(p, usable + 1, 0, usable + 1), 107000, "aclrtMemset",
           "runs past the end")
    host = np.zeros(8, np.uint8)
    expect(lib.aclrtMemset(ffi.from_buffer(host), 8, 1, 8), 107000, "aclrtMemset",
           "not device memory", "aclrtMallocHost")
    # host memory from aclrtMallocHost: set, synchronously or on a stream (the API reference
    # takes either side, judged by the address)
    pinned = malloc_host(64)
    ok(lib.aclrtMemset(pinned, 64, 0x21, 64))
    assert (host_view(pinned, 64) == 0x21).all()
    ok(lib.aclrtMemsetAsync(ffi.cast("char *", pinned) + 8, 56, 0x42, 16, ffi.NULL))
    ok(lib.aclrtSynchronizeStream(ffi.NULL))
    v = host_view(pinned, 64)
    assert (v[8:24] == 0x42).all() and (v[:8] == 0x21).all() and (v[24:] == 0x21).all()
    expect(lib.aclrtMemset(ffi.cast("char *", pinned) + 60, 8, 0, 8), 107000, "aclrtMemset",
           "runs past the end of its aclrtMallocHost block")
    ok(lib.aclrtFreeHost(pinned))
    ok(lib.aclrtMemset(p, 100, 0x1FF, 100))  # value is taken as a byte
    ok(lib.aclrtMemset(p, 100, 3, 0))
    back = np.zeros(100, np.uint8)
    ok(lib.aclrtMemcpy(ffi.from_buffer(back), 100, p, 100, D2H))
    assert (back == 0xFF).all()
    ok(lib.aclrtFree(p))


def test_async_copy_rules(dev):
    s = new_stream()
    n = 4096
    p = malloc(n)
    h1, h2 = malloc_host(n), malloc_host(n)
    # host to host: 207000 (hicann/runtime src/runtime/api/impl/api_error.cc MemcpyAsync), the
    # places deciding the direction whatever the kind
    for kind in (H2H, H2D, D2H, D2D, DEFAULT):
        expect(lib.aclrtMemcpyAsync(h2, n, h1, n, kind, s), 207000, "aclrtMemcpyAsync",
               "host-to-host", "aclrtMemcpy")
    expect(lib.aclrtMemcpyAsync(p, n, h1, n + 1, H2D, s), 107000, "aclrtMemcpyAsync",
           "destMax")
    expect(lib.aclrtMemcpyAsync(p, n, h1, n, 6, s), 100000, "aclrtMemcpyAsync", "kind 6")
    expect(lib.aclrtMemcpyAsync(p, 2 * n, ffi.cast("char *", h1) + 1, n, H2D, s), 107000,
           "aclrtMemcpyAsync", "aclrtMallocHost block")
    expect(lib.aclrtMemcpyAsync(p, n, h1, n, H2D, ffi.cast("void *", 0xdead0)), 107017,
           "aclrtMemcpyAsync", "not a live stream")
    # pinned round trip: H2D, D2D, D2H in stream order
    host_view(h1, n)[:] = np.arange(n) % 251
    q = malloc(n)
    ok(lib.aclrtMemcpyAsync(p, n, h1, n, H2D, s))
    ok(lib.aclrtMemsetAsync(q, n, 0, n, s))
    ok(lib.aclrtMemcpyAsync(q, n, p, n, D2D, s))
    ok(lib.aclrtMemcpyAsync(h2, n, q, n, DEFAULT, s))
    ok(lib.aclrtSynchronizeStream(s))
    assert (host_view(h2, n) == np.arange(n) % 251).all()
    ok(lib.aclrtMemcpyAsync(h2, n, q, 0, D2H, s))  # count 0: nothing queued, success
    for x in (p, q):
        ok(lib.aclrtFree(x))
    for x in (h1, h2):
        ok(lib.aclrtFreeHost(x))
    ok(lib.aclrtDestroyStream(s))


def test_async_copy_kind_is_settled_by_where_the_pointers_lie(dev):
    """CANN's MemcpyKindAutoCorrect (hicann/runtime src/runtime/api/impl/api_error.cc): between
    device memory and aclrtMallocHost memory the places decide, whatever the kind; with
    pageable memory on a side the kind must be one the runtime allows for the pair (107000
    otherwise) and ACL_MEMCPY_DEFAULT takes the pair's default."""
    s = new_stream()
    n = 256
    p, q = malloc(n), malloc(n)
    h, h2 = malloc_host(n), malloc_host(n)
    want = (np.arange(n) % 199).astype(np.uint8)
    host_view(h, n)[:] = want
    for kind in (H2H, H2D, D2H, D2D, DEFAULT):
        ok(lib.aclrtMemsetAsync(q, n, 0, n, s))
        host_view(h2, n)[:] = 0
        ok(lib.aclrtMemcpyAsync(p, n, h, n, kind, s), f"H2D as kind {kind}")
        ok(lib.aclrtMemcpyAsync(q, n, p, n, kind, s), f"D2D as kind {kind}")
        ok(lib.aclrtMemcpyAsync(h2, n, q, n, kind, s), f"D2H as kind {kind}")
        ok(lib.aclrtSynchronizeStream(s))
        assert (host_view(h2, n) == want).all(), kind
    page = np.zeros(n, np.uint8)
    pp = ffi.from_buffer(page)
    refused = [  # (dst, src, kind): kinds the runtime's map does not allow for the pair
        (p, pp, D2H), (p, pp, H2H), (pp, p, H2D), (pp, p, H2H), (pp, h, D2H), (h, pp, H2D),
    ]
    for dst, src, kind in refused:
        expect(lib.aclrtMemcpyAsync(dst, n, src, n, kind, s), 107000, "aclrtMemcpyAsync",
               "does not copy", "pageable host memory")
    # allowed by the map, but a device-to-device task on pageable memory: refused
    for dst, src in ((p, pp), (pp, p)):
        expect(lib.aclrtMemcpyAsync(dst, n, src, n, D2D, s), 107000, "aclrtMemcpyAsync",
               "ACL_MEMCPY_DEVICE_TO_DEVICE", "pageable")
    # pinned to pageable: the default is host-to-host (207000); H2D is allowed, a host copy
    expect(lib.aclrtMemcpyAsync(pp, n, h, n, DEFAULT, s), 207000, "aclrtMemcpyAsync",
           "host-to-host")
    ok(lib.aclrtMemcpyAsync(pp, n, h, n, H2D, s))
    assert (page == want).all()  # done when the call returned
    page2 = np.zeros(n, np.uint8)
    ok(lib.aclrtMemcpyAsync(ffi.from_buffer(page2), n, pp, n, D2H, s))  # pageable both sides
    assert (page2 == want).all()
    assert (page == want).all() and (host_view(h, n) == want).all()  # nothing else written
    ok(lib.aclrtSynchronizeStream(s))
    for x in (p, q):
        ok(lib.aclrtFree(x))
    for x in (h, h2):
        ok(lib.aclrtFreeHost(x))
    ok(lib.aclrtDestroyStream(s))


def test_async_copy_of_pageable_memory_is_ordered_and_done_on_return(dev):
    """With pageable host memory (NumPy here) aclrtMemcpyAsync waits for the work queued before
    it on the stream, copies, and returns once the copy is done (hicann/runtime
    docs/zh/api_ref/11-03_memory_copy_and_set.md aclrtMemcpyAsync, docs/zh/dev_guide/
    02-01_data_copy.md; src/runtime/api/impl/api_error.cc MemcpyAsync: StreamSynchronize,
    then MemCopySync): no synchronize is needed, and the buffer may be reused at once."""
    s = new_stream()
    big = 32 << 20
    p = malloc(big)
    out = np.zeros(big, np.uint8)
    # D2H: slow queued work writes the source, read with no synchronize
    _slow_then_mark(p, big, s, 0x5C)
    ok(lib.aclrtMemcpyAsync(ffi.from_buffer(out), big, p, big, D2H, s))
    assert (out[::4096] == 0x5C).all() and out[-1] == 0x5C
    # an earlier asynchronous copy (pinned, queued behind slow work) writes the source
    h = malloc_host(big)
    host_view(h, big)[:] = 0x33
    _slow_then_mark(p, big, s, 0x11)
    ok(lib.aclrtMemcpyAsync(p, big, h, big, H2D, s))
    ok(lib.aclrtMemcpyAsync(ffi.from_buffer(out), big, p, big, DEFAULT, s))
    assert (out[::4096] == 0x33).all() and out[-1] == 0x33
    # H2D: after the slow work queued before it (which writes the destination), and done on
    # return, so the source is overwritten at once
    src = np.full(big, 0x77, np.uint8)
    _slow_then_mark(p, big, s, 0x22)
    ok(lib.aclrtMemcpyAsync(p, big, ffi.from_buffer(src), big, H2D, s))
    src[:] = 0
    ok(lib.aclrtMemcpyAsync(h, big, p, big, D2H, s))
    ok(lib.aclrtSynchronizeStream(s))
    assert (host_view(h, big)[::4096] == 0x77).all() and host_view(h, big)[-1] == 0x77
    # the default stream likewise
    _slow_then_mark(p, big, ffi.NULL, 0x66)
    ok(lib.aclrtMemcpyAsync(ffi.from_buffer(out), big, p, big, D2H, ffi.NULL))
    assert (out[::4096] == 0x66).all()
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))
    ok(lib.aclrtDestroyStream(s))


def test_pageable_async_copy_waits_for_a_stream_of_another_device():
    """The runtime's pageable path synchronizes the stream (switching to its context, as
    aclrtSynchronizeStream does) and copies as aclrtMemcpy does, before it compares the
    stream's context with the current one (hicann/runtime src/runtime/api/impl/api_error.cc
    MemcpyAsync, api_impl.cc StreamSynchronize and MemcpyAsync): a stream of another device
    is waited for; a copy that is queued still needs the current device's stream (107003)."""
    r = run_raw("""
        import numpy as np
        lib.aclInit(NULL); lib.aclrtSetDevice(1)
        s = ffi.new("aclrtStream *"); lib.aclrtCreateStream(s)
        p = ffi.new("void **"); n = 16 << 20; lib.aclrtMalloc(p, n, 0)
        for k in range(12): lib.aclrtMemsetAsync(p[0], n, 7 if k == 11 else 0, n, s[0])
        lib.aclrtSetDevice(0)
        out_buf = np.zeros(n, np.uint8)
        out["pageable"] = lib.aclrtMemcpyAsync(ffi.from_buffer(out_buf), n, p[0], n, 2, s[0])
        out["bytes"] = int(out_buf[::4096].min()), int(out_buf.max())
        h = ffi.new("void **"); lib.aclrtMallocHost(h, n)
        out["pinned"] = lib.aclrtMemcpyAsync(h[0], n, p[0], n, 2, s[0]), errmsg()
        lib.aclrtFreeHost(h[0])
        lib.aclrtSetDevice(1); lib.aclrtFree(p[0]); lib.aclrtDestroyStream(s[0])
        lib.aclrtResetDevice(1); lib.aclrtResetDevice(0); lib.aclrtResetDevice(0)
        lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r["pageable"] == 0
    assert r["bytes"] == [7, 7]
    assert r["pinned"][0] == 107003 and "aclrtMemcpyAsync" in r["pinned"][1]


def test_pageable_async_copy_inside_a_host_function_is_refused(dev):
    """A copy of pageable memory waits for the stream, which a host function must not do
    (hicann/runtime docs/zh/api_ref/12_execution_control.md, aclrtLaunchHostFunc: no
    synchronize inside): 107000, not a deadlock on the stream that runs the function."""
    s = new_stream()
    n = 64
    p = malloc(n)
    page = np.zeros(n, np.uint8)
    got = []
    ctx = ffi.new("aclrtContext *")
    ok(lib.aclrtGetCurrentContext(ctx))

    @ffi.callback("void(void *)")
    def inside(_args):
        got.append(lib.aclrtSetCurrentContext(ctx[0]))  # the device, on the runtime's thread
        got.append(lib.aclrtMemcpyAsync(ffi.from_buffer(page), n, p, n, D2H, s))
        got.append(errmsg())

    ok(lib.aclrtLaunchHostFunc(s, inside, ffi.NULL))
    ok(lib.aclrtSynchronizeStream(s))
    assert got[0] == 0 and got[1] == 107000 and "inside a host function" in got[2], got
    ok(lib.aclrtFree(p))
    ok(lib.aclrtDestroyStream(s))


def test_host_to_buf_to_device_stages_the_source(dev):
    """ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the runtime copies the source into a buffer of its own
    when the call is made, and the caller may reuse it at once (hicann/runtime
    docs/zh/api_ref/25-02_Enumerations.md aclrtMemcpyKind; src/runtime/core/src/task/
    task_info/memory/memory_memcpy_async_task.cc AllocCpyTmpMem); the source is host memory,
    pinned or pageable, the destination device memory (api_error.cc
    MemcpyAsyncCheckExLocation)."""
    s = new_stream()
    n = 16 << 20
    p, q = malloc(n), malloc(n)
    h = malloc_host(n)
    host_view(h, n)[:] = 0x41
    _slow_then_mark(p, n, s, 0)
    ok(lib.aclrtMemcpyAsync(p, n, h, n, 5, s))
    host_view(h, n)[:] = 0x42  # the queued copy reads the staged bytes
    page = np.full(n, 0x43, np.uint8)
    ok(lib.aclrtMemcpyAsync(q, n, ffi.from_buffer(page), n, 5, s))
    page[:] = 0
    ok(lib.aclrtSynchronizeStream(s))
    out = np.zeros(n, np.uint8)
    ok(lib.aclrtMemcpy(ffi.from_buffer(out), n, p, n, D2H))
    assert (out[::4096] == 0x41).all() and out[-1] == 0x41
    ok(lib.aclrtMemcpy(ffi.from_buffer(out), n, q, n, D2H))
    assert (out[::4096] == 0x43).all() and out[-1] == 0x43
    for dst, src in ((h, p), (p, q), (ffi.from_buffer(page), h)):
        expect(lib.aclrtMemcpyAsync(dst, n, src, n, 5, s), 107000, "aclrtMemcpyAsync",
               "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE")
    for x in (p, q):
        ok(lib.aclrtFree(x))
    ok(lib.aclrtFreeHost(h))
    ok(lib.aclrtDestroyStream(s))


def test_memory_in_use_by_pending_work_is_not_freed(dev):
    s = new_stream()
    big = 64 << 20
    p = malloc(big)
    h = malloc_host(big)
    for _ in range(12):  # a few hundred milliseconds of queued work
        ok(lib.aclrtMemsetAsync(p, big, 1, big, s))
    ok(lib.aclrtMemcpyAsync(h, big, p, big, D2H, s))
    before = live()
    expect(lib.aclrtFree(p), 107000, "aclrtFree", "pending work", "synchronize")
    expect(lib.aclrtFreeHost(h), 107000, "aclrtFreeHost", "pending")
    assert live() == before  # nothing was freed
    ok(lib.aclrtSynchronizeStream(s))
    assert host_view(h, big)[::4096].min() == 1  # the work ran, in order
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))
    ok(lib.aclrtDestroyStream(s))


# ---- streams and events --------------------------------------------------------------------

def test_stream_handles(dev):
    expect(lib.aclrtCreateStream(ffi.NULL), 100000, "aclrtCreateStream")
    base = live()["streams"]  # default streams are not counted
    s = new_stream()
    assert live()["streams"] == base + 1
    expect(lib.aclrtDestroyStream(ffi.NULL), 100000, "aclrtDestroyStream", "default stream")
    garbage = ffi.cast("void *", 0x12345678)
    expect(lib.aclrtDestroyStream(garbage), 107017, "aclrtDestroyStream")
    expect(lib.aclrtSynchronizeStream(garbage), 107017, "aclrtSynchronizeStream")
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtSynchronizeStream(ffi.NULL))  # the default stream
    ok(lib.aclrtDestroyStream(s))
    expect(lib.aclrtDestroyStream(s), 107017, "aclrtDestroyStream", "not a live stream")
    p = malloc(8)
    expect(lib.aclrtMemsetAsync(p, 8, 0, 8, s), 107017, "aclrtMemsetAsync", "not a live stream")
    ok(lib.aclrtFree(p))
    assert live()["streams"] == base


def test_stream_limit_per_device():
    """A device runs ACL_EMU_MAX_STREAMS streams (default 512, the lowest maximum CANN documents
    for aclrtCreateStream), its default stream and one the runtime keeps included; past it
    207005 ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, as CANN's "Too many streams are created"."""
    r = run_raw("""
        lib.aclInit(NULL); lib.aclrtSetDevice(0)
        made = []
        while True:
            s = ffi.new("aclrtStream *")
            rc = lib.aclrtCreateStream(s)
            if rc:
                out["full"] = rc, errmsg(); break
            made.append(s[0])
        out["made"] = len(made)
        out["live_full"] = live()["streams"]
        lib.aclrtDestroyStream(made.pop())
        s = ffi.new("aclrtStream *")
        out["after_destroy"] = lib.aclrtCreateStream(s); made.append(s[0])
        out["again_full"] = lib.aclrtCreateStream(ffi.new("aclrtStream *"))
        for x in made: lib.aclrtDestroyStream(x)
        lib.aclrtSetDevice(1)   # the limit is per device
        out["other_device"] = lib.aclrtCreateStream(s); lib.aclrtDestroyStream(s[0])
        lib.aclrtResetDevice(1); lib.aclrtResetDevice(0)
        lib.aclrtSetDevice(0)   # a device torn down starts again from zero
        n = 0
        while lib.aclrtCreateStream(ffi.new("aclrtStream *")) == 0: n += 1
        out["after_reset"] = n
        lib.aclrtResetDevice(0); lib.aclFinalize()
    """, env={"ACL_EMU_MAX_STREAMS": "8", "ACL_EMU_DEVICE_COUNT": "2"})
    assert r["made"] == 6 and r["live_full"] == 6  # 8 - the default stream - the runtime's
    rc, msg = r["full"]
    assert rc == 207005 and msg.startswith("aclrtCreateStream:")
    assert "too many streams" in msg and "ACL_EMU_MAX_STREAMS" in msg and "512" in msg
    assert r["after_destroy"] == 0 and r["again_full"] == 207005
    assert r["other_device"] == 0 and r["after_reset"] == 6
    bad = run_raw('out["init"] = lib.aclInit(NULL), errmsg()', env={"ACL_EMU_MAX_STREAMS": "2"})
    assert bad["init"][0] == 100000 and "ACL_EMU_MAX_STREAMS" in bad["init"][1]


def test_destroy_stream_drains_it(dev):
    s = new_stream()
    big = 32 << 20
    p, h = malloc(big), malloc_host(big)
    host_view(h, big)[:] = 0
    for v in range(1, 9):
        ok(lib.aclrtMemsetAsync(p, big, v, big, s))
    ok(lib.aclrtMemcpyAsync(h, big, p, big, D2H, s))
    ok(lib.aclrtDestroyStream(s))  # returns only after all of it ran
    view = host_view(h, big)
    assert view[0] == 8 and view[-1] == 8
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))


def test_synchronize_device_waits_for_every_stream(dev):
    streams = [new_stream() for _ in range(3)]
    n = 8 << 20
    bufs = [(malloc(n), malloc_host(n)) for _ in streams]
    for k, (s, (p, h)) in enumerate(zip(streams, bufs)):
        for v in range(5):
            ok(lib.aclrtMemsetAsync(p, n, k * 10 + v, n, s))
        ok(lib.aclrtMemcpyAsync(h, n, p, n, D2H, s))
    ok(lib.aclrtSynchronizeDevice())
    for k, (p, h) in enumerate(bufs):
        assert host_view(h, n)[-1] == k * 10 + 4
        ok(lib.aclrtFree(p))
        ok(lib.aclrtFreeHost(h))
    for s in streams:
        ok(lib.aclrtDestroyStream(s))


def test_events(dev):
    expect(lib.aclrtCreateEvent(ffi.NULL), 100000, "aclrtCreateEvent")
    s = new_stream()
    base = live()["events"]
    a, b, never = new_event(), new_event(), new_event()
    assert live()["events"] == base + 3
    ms = ffi.new("float *")
    # never recorded: CANN's RT_ERROR_EVENT_RECORDER_NULL, ACL_ERROR_RT_INTERNAL_ERROR
    # (hicann/runtime src/runtime/core/src/event/event.cc ElapsedTime, errcode_manage.cc)
    expect(lib.aclrtEventElapsedTime(ms, a, b), 507000, "aclrtEventElapsedTime",
           "startEvent", "never been recorded")
    ok(lib.aclrtSynchronizeEvent(never))  # never recorded: done at once
    n = 32 << 20
    p = malloc(n)
    ok(lib.aclrtRecordEvent(a, s))
    for _ in range(4):
        ok(lib.aclrtMemsetAsync(p, n, 0, n, s))
    ok(lib.aclrtRecordEvent(b, s))
    ok(lib.aclrtSynchronizeEvent(b))
    ok(lib.aclrtEventElapsedTime(ms, a, b))
    assert 0.0 < ms[0] < 10000.0  # 128 MiB of memset takes measurable time
    ok(lib.aclrtEventElapsedTime(ms, b, a))
    assert ms[0] < 0.0
    expect(lib.aclrtEventElapsedTime(ffi.NULL, a, b), 100000, "aclrtEventElapsedTime", "ms")
    expect(lib.aclrtEventElapsedTime(ms, ffi.NULL, b), 100000, "aclrtEventElapsedTime")
    expect(lib.aclrtEventElapsedTime(ms, a, never), 507000, "aclrtEventElapsedTime", "endEvent")
    ok(lib.aclrtRecordEvent(never, ffi.NULL))  # the default stream
    ok(lib.aclrtSynchronizeEvent(never))
    garbage = ffi.cast("void *", 0x777000)
    expect(lib.aclrtRecordEvent(garbage, s), 107017, "aclrtRecordEvent")
    expect(lib.aclrtRecordEvent(ffi.NULL, s), 100000, "aclrtRecordEvent")
    expect(lib.aclrtSynchronizeEvent(garbage), 107017, "aclrtSynchronizeEvent")
    # destroying an event with a record still queued is safe
    for _ in range(3):
        ok(lib.aclrtMemsetAsync(p, n, 0, n, s))
    ok(lib.aclrtRecordEvent(a, s))
    for e in (a, b, never):
        ok(lib.aclrtDestroyEvent(e))
    expect(lib.aclrtDestroyEvent(a), 107017, "aclrtDestroyEvent")
    ok(lib.aclrtSynchronizeStream(s))
    assert live()["events"] == base
    ok(lib.aclrtFree(p))
    ok(lib.aclrtDestroyStream(s))


def _slow_then_mark(p, n, s, value, rounds=12):
    """Queues `rounds` memsets of n bytes on s, the last one writing `value`: long enough
    (tens of ms) that another stream's unordered work would run first."""
    for k in range(rounds):
        ok(lib.aclrtMemsetAsync(p, n, value if k == rounds - 1 else 0, n, s))


def test_stream_wait_event_orders_another_streams_work(dev):
    """aclrtStreamWaitEvent: the waiting stream's later work starts after the work the event's
    last record captured, on another stream; the host does not block."""
    a, b = new_stream(), new_stream()
    e = new_event()
    n = 32 << 20
    p, h = malloc(n), malloc_host(n)
    _slow_then_mark(p, n, a, 7)
    ok(lib.aclrtRecordEvent(e, a))
    ok(lib.aclrtStreamWaitEvent(b, e))
    ok(lib.aclrtMemcpyAsync(h, n, p, n, D2H, b))
    ok(lib.aclrtSynchronizeStream(b))       # b only: the wait ordered the copy after a's work
    assert host_view(h, n)[0] == 7 and host_view(h, n)[-1] == 7
    # the wait is for the last record when it was made: recording the event again on an idle
    # stream, which finishes first, does not end it
    c = new_stream()
    _slow_then_mark(p, n, a, 9)
    ok(lib.aclrtRecordEvent(e, a))
    ok(lib.aclrtStreamWaitEvent(b, e))
    ok(lib.aclrtRecordEvent(e, c))
    ok(lib.aclrtSynchronizeStream(c))
    ok(lib.aclrtMemcpyAsync(h, n, p, n, D2H, b))
    ok(lib.aclrtSynchronizeStream(b))
    assert host_view(h, n)[0] == 9
    # so is aclrtSynchronizeEvent's: the later record (on c) is the one it waits for
    ok(lib.aclrtStreamWaitEvent(ffi.NULL, e))  # the default stream; its record already ran
    ok(lib.aclrtSynchronizeStream(ffi.NULL))
    ok(lib.aclrtSynchronizeStream(a))
    for x in (a, b, c):
        ok(lib.aclrtDestroyStream(x))
    ok(lib.aclrtDestroyEvent(e))
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))


def test_synchronize_event_waits_for_its_own_record(dev):
    """aclrtSynchronizeEvent waits for the event's last record when called: a record made
    meanwhile by another thread, on an idle stream, finishes first and does not end the wait
    (it used to: the wait looked at the highest record done)."""
    a, c = new_stream(), new_stream()
    e = new_event()
    n = 32 << 20
    p, h = malloc(n), malloc_host(n)
    _slow_then_mark(p, n, a, 5)
    ok(lib.aclrtRecordEvent(e, a))
    errors = []

    def record_again():
        try:
            time.sleep(0.005)       # while the main thread waits
            ok(lib.aclrtSetDevice(0))
            ok(lib.aclrtRecordEvent(e, c))
            ok(lib.aclrtSynchronizeStream(c))
            ok(lib.aclrtResetDevice(0))
        except BaseException as ex:
            errors.append(ex)
    t = threading.Thread(target=record_again)
    t.start()
    ok(lib.aclrtSynchronizeEvent(e))
    ok(lib.aclrtMemcpy(h, n, p, n, D2H))     # not ordered after a: the wait must have been
    t.join(60)
    assert not errors, errors
    assert host_view(h, n)[0] == 5
    for x in (a, c):
        ok(lib.aclrtDestroyStream(x))
    ok(lib.aclrtDestroyEvent(e))
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))


def test_stream_and_event_queries(dev):
    """aclrtStreamQuery / aclrtQueryEventStatus: not ready while queued work runs, complete
    after; they never block. CANN's order and codes for bad arguments."""
    s = new_stream()
    e = new_event()
    st = ffi.new("aclrtStreamStatus *")
    es = ffi.new("aclrtEventRecordedStatus *")
    ok(lib.aclrtStreamQuery(s, st))
    assert st[0] == lib.ACL_STREAM_STATUS_COMPLETE          # nothing queued
    ok(lib.aclrtStreamQuery(ffi.NULL, st))                  # the default stream
    assert st[0] == lib.ACL_STREAM_STATUS_COMPLETE
    ok(lib.aclrtQueryEventStatus(e, es))
    assert es[0] == lib.ACL_EVENT_RECORDED_STATUS_NOT_READY  # never recorded (RT_EVENT_INIT)
    n = 32 << 20
    p = malloc(n)
    _slow_then_mark(p, n, s, 1)
    ok(lib.aclrtRecordEvent(e, s))
    ok(lib.aclrtStreamQuery(s, st))
    ok(lib.aclrtQueryEventStatus(e, es))
    assert st[0] == lib.ACL_STREAM_STATUS_NOT_READY
    assert es[0] == lib.ACL_EVENT_RECORDED_STATUS_NOT_READY
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtStreamQuery(s, st))
    ok(lib.aclrtQueryEventStatus(e, es))
    assert st[0] == lib.ACL_STREAM_STATUS_COMPLETE
    assert es[0] == lib.ACL_EVENT_RECORDED_STATUS_COMPLETE
    garbage = ffi.cast("void *", 0x777000)
    expect(lib.aclrtStreamQuery(s, ffi.NULL), 100000, "aclrtStreamQuery", "status")
    expect(lib.aclrtStreamQuery(garbage, st), 107017, "aclrtStreamQuery", "stream")
    expect(lib.aclrtQueryEventStatus(ffi.NULL, es), 100000, "aclrtQueryEventStatus", "event")
    expect(lib.aclrtQueryEventStatus(e, ffi.NULL), 100000, "aclrtQueryEventStatus", "status")
    expect(lib.aclrtQueryEventStatus(garbage, es), 107017, "aclrtQueryEventStatus", "event")
    ok(lib.aclrtDestroyEvent(e))
    ok(lib.aclrtDestroyStream(s))
    ok(lib.aclrtFree(p))


def test_stream_wait_event_errors(dev):
    s = new_stream()
    e = new_event()
    # CANN's order and codes: NULL event (ACL layer) 100000, handles 107017, an event never
    # recorded 107000 (event.cc Event::Wait, RT_ERROR_INVALID_VALUE)
    expect(lib.aclrtStreamWaitEvent(s, ffi.NULL), 100000, "aclrtStreamWaitEvent", "event")
    garbage = ffi.cast("void *", 0x777000)
    expect(lib.aclrtStreamWaitEvent(s, garbage), 107017, "aclrtStreamWaitEvent", "event")
    expect(lib.aclrtStreamWaitEvent(garbage, e), 107017, "aclrtStreamWaitEvent", "stream")
    # the stream's handle is checked before the event's (api_c_stream.cc rtStreamWaitEvent)
    expect(lib.aclrtStreamWaitEvent(garbage, garbage), 107017, "aclrtStreamWaitEvent",
           "stream")
    expect(lib.aclrtStreamWaitEvent(s, e), 107000, "aclrtStreamWaitEvent", "never been recorded")
    # an event a queued wait still refers to is not destroyed (the header asks that those
    # tasks have run first): refused, nothing destroyed, until the stream has passed the wait
    a = new_stream()
    n = 32 << 20
    p = malloc(n)
    _slow_then_mark(p, n, a, 1)
    ok(lib.aclrtRecordEvent(e, a))
    ok(lib.aclrtStreamWaitEvent(s, e))
    expect(lib.aclrtDestroyEvent(e), 107000, "aclrtDestroyEvent", "aclrtStreamWaitEvent",
           "synchronize")
    ok(lib.aclrtSynchronizeStream(s))
    ok(lib.aclrtDestroyEvent(e))
    expect(lib.aclrtStreamWaitEvent(s, e), 107017, "aclrtStreamWaitEvent")  # destroyed
    ok(lib.aclrtSynchronizeStream(a))
    for x in (a, s):
        ok(lib.aclrtDestroyStream(x))
    ok(lib.aclrtFree(p))


def test_elapsed_time_needs_completed_record(dev):
    s = new_stream()
    a, b = new_event(), new_event()
    n = 64 << 20
    p = malloc(n)
    ok(lib.aclrtRecordEvent(a, s))
    for _ in range(10):
        ok(lib.aclrtMemsetAsync(p, n, 0, n, s))
    ok(lib.aclrtRecordEvent(b, s))
    # a record not yet complete has no timestamp: ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID
    expect(lib.aclrtEventElapsedTime(ffi.new("float *"), a, b), 107006,
           "aclrtEventElapsedTime", "not completed")
    ok(lib.aclrtSynchronizeStream(s))
    for x in (a, b):
        ok(lib.aclrtDestroyEvent(x))
    ok(lib.aclrtFree(p))
    ok(lib.aclrtDestroyStream(s))


# ---- threads -------------------------------------------------------------------------------

def test_eight_threads_with_their_own_streams(dev):
    errors = []
    n = 1 << 16

    def worker(k):
        try:
            ok(lib.aclrtSetDevice(0))
            s = new_stream()
            e0, e1 = new_event(), new_event()
            h_in, h_out = malloc_host(n), malloc_host(n)
            p = malloc(n)
            for it in range(40):
                host_view(h_in, n)[:] = (k * 31 + it) % 256
                ok(lib.aclrtRecordEvent(e0, s))
                ok(lib.aclrtMemcpyAsync(p, n, h_in, n, H2D, s))
                ok(lib.aclrtMemcpyAsync(h_out, n, p, n, D2H, s))
                ok(lib.aclrtRecordEvent(e1, s))
                ok(lib.aclrtSynchronizeEvent(e1))
                got = host_view(h_out, n)
                if not (got == (k * 31 + it) % 256).all():
                    errors.append((k, it))
                q = malloc(64 * (it + 1))  # registry churn alongside the streams
                ok(lib.aclrtFree(q))
            ok(lib.aclrtSynchronizeStream(s))
            ok(lib.aclrtDestroyStream(s))
            for x in (e0, e1):
                ok(lib.aclrtDestroyEvent(x))
            ok(lib.aclrtFree(p))
            for x in (h_in, h_out):
                ok(lib.aclrtFreeHost(x))
            ok(lib.aclrtResetDevice(0))
        except BaseException as ex:
            errors.append(ex)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors, errors[:3]


def test_one_stream_shared_by_threads(dev):
    """Tasks may be queued from several threads at once; each thread's own tasks keep their
    order, and a synchronize covers everything queued before it."""
    s = new_stream()
    n = 4096
    nthreads, rounds = 6, 30
    bufs = [(malloc(n), malloc_host(n)) for _ in range(nthreads)]
    errors = []

    def worker(k):
        try:
            ok(lib.aclrtSetDevice(0))
            p, h = bufs[k]
            for it in range(rounds):
                ok(lib.aclrtMemsetAsync(p, n, (k + it) % 256, n, s))
                ok(lib.aclrtMemcpyAsync(h, n, p, n, D2H, s))
                ok(lib.aclrtSynchronizeStream(s))
                if host_view(h, n)[n - 1] != (k + it) % 256:
                    errors.append((k, it))
            ok(lib.aclrtResetDevice(0))
        except BaseException as ex:
            errors.append(ex)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    ok(lib.aclrtDestroyStream(s))
    for p, h in bufs:
        ok(lib.aclrtFree(p))
        ok(lib.aclrtFreeHost(h))


def test_concurrent_destroy_of_one_stream(dev):
    """Several threads destroying the same stream: exactly one succeeds, the others get
    107017; nobody crashes."""
    for _ in range(20):
        s = new_stream()
        results = []

        def destroy():
            ok(lib.aclrtSetDevice(0))
            results.append(lib.aclrtDestroyStream(s))
            ok(lib.aclrtResetDevice(0))
        ts = [threading.Thread(target=destroy) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(results) == [0, 107017, 107017, 107017]
        while errmsg() is not None:
            pass


# ---- fault injection and call counts -------------------------------------------------------

def call_counts():
    n = lib.aclemuGetCallCounts(ffi.NULL, 0)
    buf = ffi.new("char[]", n + 1)
    assert lib.aclemuGetCallCounts(buf, n + 1) == n
    text = ffi.string(buf).decode()
    return [(k, int(v)) for k, v in (item.rsplit(":", 1) for item in text.split(","))] \
        if text else []


def test_fault_spec_syntax():
    for bad in ("aclrtMalloc", "aclrtMalloc:0", "aclrtMalloc:x", ":3", "aclrtMalloc:1:2",
                "aclrtMalloc:1,aclrtMalloc:2", "a b:1"):
        expect(lib.aclemuSetFaults(bad.encode()), 100000, "aclemuSetFaults", "malformed")
    ok(lib.aclemuSetFaults(b" aclrtMalloc : 2 , aclrtFree:1 ,"))
    ok(lib.aclemuSetFaults(b""))
    ok(lib.aclemuSetFaults(ffi.NULL))


def test_call_counts_in_first_call_order(dev):
    ok(lib.aclemuSetFaults(ffi.NULL))  # also resets the counters
    d = ffi.new("int32_t *")
    lib.aclrtGetDevice(d)
    p = malloc(8)
    lib.aclrtGetDevice(d)
    ok(lib.aclrtFree(p))
    assert call_counts() == [("aclrtGetDevice", 2), ("aclrtMalloc", 1), ("aclrtFree", 1)]
    small = ffi.new("char[5]")
    need = lib.aclemuGetCallCounts(small, 5)
    assert need == len("aclrtGetDevice:2,aclrtMalloc:1,aclrtFree:1")
    assert ffi.string(small) == b"aclr"  # truncated like snprintf, always terminated
    lib.aclemuResetCallCounts()
    assert call_counts() == []


INJECTED = [  # (function, documented injected failure)
    ("aclrtMalloc", 207001), ("aclrtMallocHost", 207001), ("aclrtCreateStream", 207001),
    ("aclrtCreateEvent", 207001), ("aclrtCreateContext", 207001),
    ("aclrtMemcpy", 507000), ("aclrtMemcpyAsync", 507000), ("aclrtMemset", 507000),
    ("aclrtMemsetAsync", 507000), ("aclrtRecordEvent", 507000), ("aclrtSetDevice", 507000),
    ("aclrtSynchronizeStream", 507000), ("aclrtSynchronizeDevice", 507000),
    ("aclrtSynchronizeEvent", 507000),
]


@pytest.mark.parametrize("name,code", INJECTED)
def test_injected_failures(dev, name, code):
    n = 64
    p, h, s, e = malloc(n), malloc_host(n), new_stream(), new_event()
    made = []  # releases for what the successful creating calls made

    def create(fn, out_type, release, *args):
        def call():
            out = ffi.new(out_type)
            rc = fn(out, *args)
            if rc == 0:
                made.append(lambda: release(out[0]))
            return rc
        return call

    def set_device():
        rc = lib.aclrtSetDevice(0)
        if rc == 0:
            made.append(lambda: lib.aclrtResetDevice(0))
        return rc
    calls = {
        "aclrtMalloc": create(lib.aclrtMalloc, "void **", lib.aclrtFree, 8, 0),
        "aclrtMallocHost": create(lib.aclrtMallocHost, "void **", lib.aclrtFreeHost, 8),
        "aclrtCreateStream": create(lib.aclrtCreateStream, "aclrtStream *",
                                    lib.aclrtDestroyStream),
        "aclrtCreateEvent": create(lib.aclrtCreateEvent, "aclrtEvent *", lib.aclrtDestroyEvent),
        "aclrtCreateContext": create(lib.aclrtCreateContext, "aclrtContext *",
                                     lib.aclrtDestroyContext, 0),
        "aclrtMemcpy": lambda: lib.aclrtMemcpy(h, n, p, n, D2H),
        "aclrtMemcpyAsync": lambda: lib.aclrtMemcpyAsync(h, n, p, n, D2H, s),
        "aclrtMemset": lambda: lib.aclrtMemset(p, n, 0, n),
        "aclrtMemsetAsync": lambda: lib.aclrtMemsetAsync(p, n, 0, n, s),
        "aclrtRecordEvent": lambda: lib.aclrtRecordEvent(e, s),
        "aclrtSetDevice": set_device,
        "aclrtSynchronizeStream": lambda: lib.aclrtSynchronizeStream(s),
        "aclrtSynchronizeDevice": lambda: lib.aclrtSynchronizeDevice(),
        "aclrtSynchronizeEvent": lambda: lib.aclrtSynchronizeEvent(e),
    }
    ok(lib.aclemuSetFaults(f"{name}:2".encode()))
    ok(calls[name](), name)
    after_first = live()
    expect(calls[name](), code, name, "injected fault", "call 2")
    assert live() == after_first  # the failed call created nothing
    assert len(made) <= 1
    ok(calls[name](), name)  # only the 2nd call fails
    assert dict(call_counts())[name] == 3
    ok(lib.aclemuSetFaults(ffi.NULL))
    ok(lib.aclrtSynchronizeDevice())
    for release in made:
        ok(release())
    ok(lib.aclrtFree(p))
    ok(lib.aclrtFreeHost(h))
    ok(lib.aclrtDestroyStream(s))
    ok(lib.aclrtDestroyEvent(e))


@pytest.mark.parametrize("name", ["aclrtSynchronizeStream", "aclrtSynchronizeDevice",
                                  "aclrtSynchronizeEvent"])
def test_injected_synchronize_failure_comes_after_the_wait(dev, name):
    s, e = new_stream(), new_event()
    big = 64 << 20
    p = malloc(big)
    for _ in range(8):
        ok(lib.aclrtMemsetAsync(p, big, 0, big, s))
    ok(lib.aclrtRecordEvent(e, s))
    ok(lib.aclemuSetFaults(f"{name}:1".encode()))
    call = {"aclrtSynchronizeStream": lambda: lib.aclrtSynchronizeStream(s),
            "aclrtSynchronizeDevice": lib.aclrtSynchronizeDevice,
            "aclrtSynchronizeEvent": lambda: lib.aclrtSynchronizeEvent(e)}[name]
    expect(call(), 507000, name, "injected fault")
    ok(lib.aclrtFree(p))  # nothing is left in flight: the memory is no longer in use
    ok(lib.aclrtDestroyEvent(e))
    ok(lib.aclrtDestroyStream(s))


def test_release_calls_keep_the_object_on_injected_fault(dev):
    p, h, s, e = malloc(8), malloc_host(8), new_stream(), new_event()
    c = ffi.new("aclrtContext *")
    ok(lib.aclrtCreateContext(c, 0))
    releases = [("aclrtFree", lambda: lib.aclrtFree(p)),
                ("aclrtFreeHost", lambda: lib.aclrtFreeHost(h)),
                ("aclrtDestroyStream", lambda: lib.aclrtDestroyStream(s)),
                ("aclrtDestroyEvent", lambda: lib.aclrtDestroyEvent(e)),
                ("aclrtDestroyContext", lambda: lib.aclrtDestroyContext(c[0]))]
    for name, call in releases:
        before = live()
        ok(lib.aclemuSetFaults(f"{name}:1".encode()))
        expect(call(), 507000, name, "injected fault")
        assert live() == before, name  # still alive
        ok(call())  # a retry releases it
        assert live() != before, name
    ok(lib.aclemuSetFaults(b"aclrtResetDevice:1"))
    expect(lib.aclrtResetDevice(0), 507000, "aclrtResetDevice")
    ok(lib.aclemuSetFaults(ffi.NULL))


def test_fault_environment_is_read_at_load():
    r = run_raw("""
        out["init"] = lib.aclInit(NULL), errmsg()
        out["init2"] = lib.aclInit(NULL)
        lib.aclrtSetDevice(0)
        p = ffi.new("void **")
        out["m1"] = lib.aclrtMalloc(p, 8, 0); lib.aclrtFree(p[0])
        out["m2"] = lib.aclrtMalloc(p, 8, 0), errmsg()
        out["m3"] = lib.aclrtMalloc(p, 8, 0); lib.aclrtFree(p[0])
        lib.aclrtResetDevice(0); lib.aclFinalize()
    """, env={"ACL_EMU_FAIL": "aclInit:1,aclrtMalloc:2"})
    assert r["init"] == [500000, "aclInit: injected fault (call 1)"]
    assert r["init2"] == 0 and r["m1"] == 0 and r["m3"] == 0
    assert r["m2"][0] == 207001 and r["m2"][1].startswith("aclrtMalloc: injected fault")
    r = run_raw('out["init"] = lib.aclInit(NULL); lib.aclFinalize()',
                env={"ACL_EMU_FAIL": "aclrtMalloc"})
    assert r["init"] == 0 and "ignoring ACL_EMU_FAIL" in r["_stderr"]


# ---- the kernel thread pool (internal API, reached through ctypes) --------------------------

RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_int64)


def _ascendcl():
    return ctypes.CDLL(str(lib.backend.libraries["ascendcl"]))


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("n,chunks", [(1000, 7), (5, 9), (0, 3), (10**12, 4)])
def test_parallel_for_chunks_depend_only_on_n_and_chunks(threads, n, chunks):
    so = _ascendcl()
    so.aclemu_parallel_for.argtypes = [ctypes.c_int64, ctypes.c_int64, RANGE_FN,
                                       ctypes.c_void_p]
    seen = []
    lock = threading.Lock()

    @RANGE_FN
    def body(ctx, c, b, e):
        with lock:
            seen.append((c, b, e, threading.get_ident()))
    lib.aclemuSetNumThreads(threads)
    try:
        assert lib.aclemuGetNumThreads() == threads
        so.aclemu_parallel_for(n, chunks, body, None)
    finally:
        lib.aclemuSetNumThreads(0)
    got = sorted((c, b, e) for c, b, e, _ in seen)
    assert got == [(c, c * n // chunks, (c + 1) * n // chunks) for c in range(chunks)]
    if threads == 1:
        assert len({t for *_, t in seen}) == 1


def test_parallel_for_from_several_callers_at_once():
    so = _ascendcl()
    so.aclemu_parallel_for.argtypes = [ctypes.c_int64, ctypes.c_int64, RANGE_FN,
                                       ctypes.c_void_p]
    results = {}

    def caller(k):
        seen = []

        @RANGE_FN
        def body(ctx, c, b, e):
            time.sleep(0.001)
            seen.append((c, b, e))
        so.aclemu_parallel_for(100 + k, 6, body, None)
        results[k] = sorted(seen)
    lib.aclemuSetNumThreads(3)
    try:
        ts = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    finally:
        lib.aclemuSetNumThreads(0)
    for k in range(4):
        n = 100 + k
        assert results[k] == [(c, c * n // 6, (c + 1) * n // 6) for c in range(6)]


def test_num_threads_default_restored():
    default = lib.aclemuGetNumThreads()
    assert default >= 1
    lib.aclemuSetNumThreads(5)
    assert lib.aclemuGetNumThreads() == 5
    lib.aclemuSetNumThreads(-3)
    assert lib.aclemuGetNumThreads() == default
    r = run_raw('out["n"] = lib.aclemuGetNumThreads()', env={"ACL_EMU_NUM_THREADS": "3"})
    assert r["n"] == 3


@pytest.mark.parametrize("value,count,why", [
    ("2,5", 2, None), ("0,1,2,3,4,5,6,7", 8, None), ("6,7,9", 2, None),   # 9: dropped
    ("1,,2", 1, None), ("3, 4", 1, None), ("1,2,", 2, None),
    ("3,1", None, "ascending order"), ("2,2", None, "must not repeat"),
    ("9", None, "no device id in range [0, 8)"), ("", None, "no device id"),
    ("a1", None, "no device id")])
def test_visible_devices_as_cann_reads_them(value, count, why):
    # ASCEND_RT_VISIBLE_DEVICES leaves the process the listed devices of the machine (here the
    # emulator's 8), renumbered from 0 (hicann/runtime runtime.cc GetVisibleDevices): the count
    # and the valid ids follow; a refused value leaves no device, aclrtGetDeviceCount fails
    # with 207004 (api_impl.cc GetDeviceCount) and every id is 107001. aclInit succeeds.
    r = run_raw("""
        out["init"] = lib.aclInit(NULL)
        n = ffi.new("uint32_t *")
        out["count"] = [lib.aclrtGetDeviceCount(n), n[0], errmsg()]
        last = out["count"][1] - 1 if out["count"][0] == 0 else 0
        out["last"] = lib.aclrtSetDevice(last), errmsg()
        if out["last"][0] == 0:
            lib.aclrtResetDevice(last)
        out["past"] = lib.aclrtSetDevice(last + 1), errmsg()
        out["fin"] = lib.aclFinalize()
    """, env={"ACL_EMU_DEVICE_COUNT": "8", "ASCEND_RT_VISIBLE_DEVICES": value})
    assert r["init"] == 0 and r["fin"] == 0
    if count is not None:
        assert r["count"][:2] == [0, count]
        assert r["last"][0] == 0
        assert r["past"][0] == 107001 and "ASCEND_RT_VISIBLE_DEVICES" in r["past"][1]
    else:
        rc, _n, msg = r["count"]
        assert rc == 207004 and msg.startswith("aclrtGetDeviceCount:")
        assert "ASCEND_RT_VISIBLE_DEVICES" in msg and why in msg
        assert r["last"][0] == 107001 and why in r["last"][1]
