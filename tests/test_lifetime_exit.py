"""Interpreter exit with live objects, in subprocesses: a clean exit status, nothing on
stderr, and every resource acl-py created released by acl-py itself (its create and release
calls balance, counted by the emulator) in a valid order, with no teardown error."""
import textwrap

import pytest

from test_runtime import script

# Registered before acl_py is imported, so it runs after acl-py's own atexit teardown.
LATE_CHECK = '''
import atexit, os, sys

def _late_check():
    from acl_py import runtime
    problems = []
    if runtime.state() != "finalized":
        problems.append("runtime still " + runtime.state())
    if runtime.last_teardown_errors:
        problems.append("teardown errors: %r" % runtime.last_teardown_errors)
    expected = eval(os.environ.get("EXPECT_UNBALANCED", "{}"))
    if unbalanced() != expected:
        problems.append("unbalanced calls: %r" % unbalanced())
    print("EXIT-CHECK", "OK" if not problems else problems, flush=True)

atexit.register(_late_check)
'''


def run_exit(run_python, body, env=None, code=0):
    r = run_python(script(LATE_CHECK + textwrap.dedent(body)), env=env)
    assert r.returncode == code, r.stdout + r.stderr
    assert "EXIT-CHECK OK" in r.stdout, r.stdout + r.stderr
    return r


@pytest.fixture(autouse=True)
def _needs_emulator(emulator):
    """Counting calls needs the emulator."""


def test_exit_with_everything_alive(run_python):
    r = run_exit(run_python, '''
        import gc
        import numpy as np
        import acl_py

        x = np.arange(4096, dtype=np.float32)
        buf = acl_py.DeviceBuffer(x.nbytes)          # lazy init, no init()/finalize()
        host = acl_py.HostBuffer(256)
        view = host.numpy(np.float32)                 # a live NumPy view of pinned memory
        s = acl_py.Stream()
        buf.copy_from_host_async(x, s)                # pending work
        out = np.empty_like(x)
        buf.copy_to_host_async(out, s)                # staged, pending
        gone = acl_py.DeviceBuffer(1 << 20)
        gone.copy_from_host_async(np.ones(1 << 18, np.float32), s)
        gone.close()                                  # deferred to the stream
        ev = acl_py.Event().record(s)
        t = acl_py.DeviceTensor.from_numpy(np.ones((8, 8), np.float32), s)
        v = t[2:, ::2]
        t.handle, v.handle
        arrays = [acl_py.IntArray([8]), acl_py.BoolArray([True, False, True])]
        pool = acl_py.MemoryPool()
        pool.malloc(1000).close()                     # a cached block
        kept = pool.malloc(3000)

        class Cycle:
            pass
        c = Cycle()
        c.me = c
        c.t = acl_py.DeviceTensor.empty((4,))
        c.t.handle
        del c                                         # only the cycle holds it now
        print("done")
    ''')
    assert r.stderr == ""
    assert r.stdout.startswith("done")


def test_exit_with_counted_init_and_no_finalize(run_python):
    r = run_exit(run_python, '''
        import acl_py
        acl_py.init()
        acl_py.init()
        s = acl_py.Stream()
        b = acl_py.DeviceBuffer(128)
        acl_py.finalize()                             # count 2 -> 1: nothing released
        assert not s.closed and not b.closed
    ''')
    assert r.stderr == ""


def test_exit_through_exception_and_sys_exit(run_python):
    r = run_exit(run_python, '''
        import sys
        import numpy as np
        import acl_py
        with acl_py.Stream() as s:
            b = acl_py.DeviceBuffer(64)
            b.copy_from_host_async(bytes(64), s)
            sys.exit(3)
    ''', code=3)
    assert r.stderr == ""
    r = run_exit(run_python, '''
        import acl_py
        t = acl_py.DeviceTensor.zeros((3, 3))
        t.handle
        raise KeyError("uncaught")
    ''', code=1)
    assert "KeyError: 'uncaught'" in r.stderr
    assert "Exception ignored" not in r.stderr and "Error in atexit" not in r.stderr


def test_exit_after_finalize_with_closed_objects(run_python):
    r = run_exit(run_python, '''
        import acl_py
        acl_py.init()
        objs = [acl_py.DeviceBuffer(8), acl_py.Stream(), acl_py.Event(),
                acl_py.IntArray([1]), acl_py.DeviceTensor.zeros((2,))]
        objs[-1].handle
        acl_py.finalize()
        # the objects die at interpreter shutdown, after the runtime is gone
    ''')
    assert r.stderr == ""


def test_exit_with_objects_from_threads(run_python):
    r = run_exit(run_python, '''
        import threading
        import numpy as np
        import acl_py
        made = []

        def worker(i):
            s = acl_py.Stream()
            b = acl_py.DeviceBuffer(4096)
            b.copy_from_host_async(np.full(1024, i, np.float32), s)
            t = acl_py.DeviceTensor.from_numpy(np.full((4, 4), i, np.float32))
            t.handle
            made.append((s, b, t))                     # outlive their thread

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(made) == 4
    ''')
    assert r.stderr == ""


def test_exit_retries_a_release_that_failed_during_gc(run_python):
    # One aclrtFree fails (injected) while garbage collecting: teardown retries it, so the
    # frees outnumber the mallocs by exactly that failed call.
    r = run_exit(run_python, '''
        import gc
        import acl_py
        from acl_py import emulator as emu
        b = acl_py.DeviceBuffer(4096)
        del b                                         # ACL_EMU_FAIL: this free fails
        gc.collect()
        assert emu.live_objects()["device_allocations"] == 1
    ''', env={"ACL_EMU_FAIL": "aclrtFree:1",
              "EXPECT_UNBALANCED": "{'aclrtMalloc/aclrtFree': (1, 2)}"})
    assert r.stderr == ""


def test_exit_with_two_devices(run_python):
    r = run_exit(run_python, '''
        import numpy as np
        import acl_py
        a = acl_py.DeviceTensor.from_numpy(np.ones(16, np.float32))
        with acl_py.Device(1):
            s = acl_py.Stream()
            b = acl_py.DeviceTensor.from_numpy(np.ones(16, np.float32), s)
            b.handle
    ''', env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r.stderr == ""
