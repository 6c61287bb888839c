"""Stream.launch_host_func: Python functions run in stream order on the runtime's thread
(aclrtLaunchHostFunc), their exceptions surfaced at the next synchronize, their lifetimes."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest

import acl_py
from acl_py import _host_func, errors

from _part_runs import has_stream_control, only_where


def test_runs_in_stream_order_against_device_work():
    """copy 7s back -> fn reads the pinned buffer -> copy 9s over it: fn sees the 7s (it ran
    after the first copy) and not the 9s (the second waited for it), though it sleeps."""
    n = 1 << 16
    seen = []
    with acl_py.Stream() as s:
        dev = acl_py.DeviceBuffer(n)
        pinned = acl_py.HostBuffer(n)
        view = pinned.numpy("uint8", (n,))
        view[:] = 0
        dev.copy_from_host_async(np.full(n, 7, np.uint8), stream=s)
        dev.copy_to_host_async(pinned, stream=s)

        def look():
            time.sleep(0.05)
            seen.append((int(view.min()), int(view.max())))

        s.launch_host_func(look)
        dev.copy_from_host_async(np.full(n, 9, np.uint8), stream=s)
        dev.copy_to_host_async(pinned, stream=s)
        s.synchronize()
        assert seen == [(7, 7)]
        assert view.min() == view.max() == 9
        dev.close()
        pinned.close()


def test_order_of_many_functions_and_default_stream():
    order = []
    with acl_py.Stream() as s:
        for i in range(50):
            s.launch_host_func(lambda i=i: order.append(i))
        s.synchronize()
    assert order == list(range(50))
    d = acl_py.default_stream()
    d.launch_host_func(lambda: order.append("default"))
    d.synchronize()
    assert order[-1] == "default"


def test_runs_on_one_runtime_thread_not_the_caller():
    threads = []
    with acl_py.Stream() as a, acl_py.Stream() as b:
        a.launch_host_func(lambda: threads.append(threading.get_ident()))
        b.launch_host_func(lambda: threads.append(threading.get_ident()))
        a.synchronize()
        b.synchronize()
    assert len(threads) == 2
    assert threads[0] == threads[1] != threading.get_ident()


def test_main_thread_synchronizing_does_not_hold_the_gil():
    """The function needs the GIL on the runtime's thread while this thread waits in
    aclrtSynchronizeStream: cffi releases the GIL around the call, so both proceed. A
    helper thread makes a deadlock a failure instead of a hang."""
    done = threading.Event()
    ticks = []

    def busy():  # pure Python for a while: holds and re-takes the GIL
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.2:
            ticks.append(sum(range(100)))

    def run():
        with acl_py.Stream() as s:
            for _ in range(3):
                s.launch_host_func(busy)
            s.synchronize()
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert done.wait(30), "synchronize never returned: the host function could not run"
    t.join()
    assert len(ticks) > 3


def test_exception_surfaces_at_the_next_synchronize_once():
    ran = []

    def bad():
        raise KeyError("boom")

    with acl_py.Stream() as s:
        s.launch_host_func(bad)
        s.launch_host_func(lambda: ran.append(1))   # later functions still run
        with pytest.raises(errors.HostFunctionError) as info:
            s.synchronize()
        assert isinstance(info.value.__cause__, KeyError)
        assert info.value.error is info.value.__cause__
        assert "bad" in str(info.value) and "boom" in str(info.value)
        assert ran == [1]
        s.synchronize()                              # reported once
    # through the device's synchronize too
    with acl_py.Stream() as s:
        s.launch_host_func(bad)
        with pytest.raises(errors.HostFunctionError):
            acl_py.synchronize()


def test_exception_surfaces_at_close():
    s = acl_py.Stream()
    s.launch_host_func(lambda: 1 / 0)
    with pytest.raises(errors.HostFunctionError) as info:
        s.close()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert s.closed


def test_forbidden_calls_inside_are_refused_not_deadlocked():
    results = []
    with acl_py.Stream() as s:
        def sync_inside():
            s.synchronize()

        def launch_inside():
            s.launch_host_func(lambda: None)

        def alloc_inside():
            acl_py.DeviceBuffer(64)

        for fn in (sync_inside, launch_inside, alloc_inside):
            s.launch_host_func(fn)
            with pytest.raises(errors.HostFunctionError) as info:
                s.synchronize()
            results.append(info.value.__cause__)
    assert isinstance(results[0], RuntimeError) and "inside a host function" in str(results[0])
    assert isinstance(results[1], RuntimeError) and "inside a host function" in str(results[1])
    # the emulator refuses aclrtMalloc (CANN forbids it; on a device it may deadlock)
    assert isinstance(results[2], errors.AclError) and results[2].code == 107000


def test_not_callable_is_refused():
    with acl_py.Stream() as s:
        with pytest.raises(errors.AclTypeError) as info:
            s.launch_host_func(42)
        assert info.value.argument == "fn"
    s2 = acl_py.Stream()
    s2.close()
    with pytest.raises(errors.ClosedError):
        s2.launch_host_func(lambda: None)


def test_function_is_released_after_it_ran_and_nothing_leaks(emulator):
    before = emulator.live_objects()

    class Fn:
        def __call__(self):
            pass

    with acl_py.Stream() as s:
        fn = Fn()
        ref = weakref.ref(fn)
        s.launch_host_func(fn)
        del fn
        s.synchronize()
        gc.collect()
        assert ref() is None
        assert not _host_func._pending
        for _ in range(200):
            s.launch_host_func(lambda: None)
        s.synchronize()
    assert not _host_func._pending
    assert emulator.live_objects() == before


# no stream abort elsewhere (refused: test_emulator_streams): no test there
@only_where(has_stream_control())
def test_a_function_an_abort_drops_is_released_at_the_abort(emulator):
    """aclrtStreamAbort drops the work queued behind the running task, a host function
    included: it never runs, and acl-py releases its record and the function when the abort
    returns (the runtime frees the tasks it drops), not at the session's end."""
    ran = []

    class Fn:
        def __call__(self):
            ran.append(1)

    with acl_py.Stream() as s:
        dev = acl_py.DeviceBuffer(64)
        s.synchronize()
        fn = Fn()
        ref = weakref.ref(fn)
        with emulator.inject_faults("aclrtMemcpyAsync:1:hang"):
            dev.copy_from_host_async(np.zeros(64, np.uint8), stream=s)  # runs and hangs
            s.launch_host_func(fn)                                     # queued behind it
            del fn
            time.sleep(0.05)
            s.abort()
        with pytest.raises(errors.AclError) as info:   # the ended copy's failure
            s.synchronize()
        assert info.value.code == 507035
        gc.collect()
        assert ran == [] and ref() is None and not _host_func._pending
        dev.close()


def test_function_outlives_a_stream_closed_first():
    """close() drains the stream, so the function has run and is released after it."""
    ran = []

    class Fn:
        def __call__(self):
            time.sleep(0.05)
            ran.append(1)

    s = acl_py.Stream()
    fn = Fn()
    ref = weakref.ref(fn)
    s.launch_host_func(fn)
    del fn
    s.close()
    gc.collect()
    assert ran == [1] and ref() is None and not _host_func._pending


@pytest.mark.parametrize("exit_how", ["finalize", "exit"])
def test_pending_host_function_at_finalize_runs_and_does_not_crash(tmp_path, exit_how):
    """A function still queued when the session ends (finalize(), or interpreter exit
    without it) runs during the teardown, nothing crashes, and an exception it raises then
    goes to sys.unraisablehook."""
    code = textwrap.dedent(f"""
        import time, acl_py
        s = acl_py.Stream()
        def slow():
            time.sleep(0.1)
            print("ran", flush=True)
        s.launch_host_func(slow)
        if {exit_how == "finalize"!r}:
            acl_py.finalize()
            print("finalized", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=os.environ.copy())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == "ran"


def test_many_threads_launch_on_their_own_streams():
    counts = [0] * 4
    errs = []

    def worker(k):
        try:
            with acl_py.Stream() as s:
                for _ in range(100):
                    s.launch_host_func(lambda: counts.__setitem__(k, counts[k] + 1))
                s.synchronize()
        except BaseException as e:  # pragma: no cover - reported below
            errs.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errs and counts == [100] * 4
