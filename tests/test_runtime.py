"""Runtime state, devices, the release registry, and finalize semantics."""
import gc
import os
import textwrap
import threading

import numpy as np
import pytest

import acl_py
from acl_py import errors, runtime

# Snippet for subprocesses: acl-py's own calls must balance (the emulator's aclFinalize would
# otherwise hide a leak by releasing everything itself).
BALANCE = '''
def unbalanced():
    from acl_py import emulator as emu
    c = emu.call_counts()
    pairs = [("aclrtMalloc", "aclrtFree"), ("aclrtMallocHost", "aclrtFreeHost"),
             ("aclrtCreateStream", "aclrtDestroyStream"),
             ("aclrtCreateEvent", "aclrtDestroyEvent"), ("aclCreateTensor", "aclDestroyTensor"),
             ("aclCreateIntArray", "aclDestroyIntArray"),
             ("aclCreateBoolArray", "aclDestroyBoolArray"),
             ("aclrtSetDevice", "aclrtResetDevice"), ("aclInit", "aclFinalize")]
    return {a + "/" + b: (c.get(a, 0), c.get(b, 0)) for a, b in pairs
            if c.get(a, 0) != c.get(b, 0)}
'''


def script(body):
    """Subprocess source: the balance helper, then ``body``."""
    return BALANCE + textwrap.dedent(body)


def test_init_and_finalize_are_counted():
    assert runtime.is_initialized()   # the session fixture's init
    acl_py.init()
    acl_py.init()
    acl_py.finalize()
    acl_py.finalize()
    assert runtime.is_initialized() and runtime.state() == "initialized"
    b = acl_py.DeviceBuffer(16)       # still usable
    b.close()


def test_backend_is_visible():
    b = acl_py.backend()
    assert b.name in ("cann", "emulator")
    assert b.reason
    for role, path in b.libraries.items():
        assert os.path.isabs(path) and os.path.isfile(path), (role, path)


def test_device_objects():
    n = acl_py.device_count()
    assert n >= 1
    assert acl_py.Device(0) is acl_py.Device(0)
    assert acl_py.current_device() is acl_py.Device(0)
    assert acl_py.Device(acl_py.Device(0)) is acl_py.Device(0)
    assert acl_py.Device(np.int64(0)) is acl_py.Device(0)
    assert int(acl_py.Device(0)) == 0
    assert acl_py.Device(0).default_stream is acl_py.default_stream(0)
    assert acl_py.Device(0).memory_pool is acl_py.get_pool(0)


@pytest.mark.parametrize("bad, exc", [(-1, errors.AclArgumentError), (1000, errors.AclArgumentError),
                                      ("0", errors.AclTypeError), (1.0, errors.AclTypeError),
                                      (True, errors.AclTypeError), ([0], errors.AclTypeError)])
def test_bad_device_ids_are_refused_in_python(bad, exc, emulator):
    emulator.reset_call_counts()
    with pytest.raises(exc) as info:
        acl_py.DeviceBuffer(16, device=bad)
    assert info.value.argument == "device"
    calls = emulator.call_counts()
    assert "aclrtMalloc" not in calls and "aclrtSetDevice" not in calls
    with pytest.raises(exc):
        acl_py.Device(bad)


def test_mem_info_tracks_allocations(emulator):
    acl_py.release_unused()
    free0, total = acl_py.mem_info()
    assert 0 < free0 <= total
    b = acl_py.DeviceBuffer(1 << 20)
    free1, total1 = acl_py.Device(0).mem_info()
    assert total1 == total and free0 - free1 == 1 << 20
    b.close()
    assert acl_py.mem_info().free == free0


def test_device_synchronize_runs_deferred_frees(emulator):
    s = acl_py.Stream()
    b = acl_py.DeviceBuffer(1 << 16)
    n0 = emulator.live_objects()["device_allocations"]
    b.copy_from_host_async(np.zeros(1 << 14, np.float32), s)
    b.close()
    assert emulator.live_objects()["device_allocations"] == n0   # waits for the stream
    acl_py.Device(0).synchronize()
    assert emulator.live_objects()["device_allocations"] == n0 - 1
    s.close()


def test_releaser_runs_exactly_once():
    calls = []

    class Owner:
        pass

    o = Owner()
    r = runtime.Releaser(o, calls.append, ("x",), runtime.ORDER_HANDLE, runtime.gen)
    assert r.alive
    assert r.release() is True
    assert r.release() is False
    del o
    gc.collect()
    assert calls == ["x"] and not r.alive

    o2 = Owner()
    r2 = runtime.Releaser(o2, calls.append, ("gc",), runtime.ORDER_HANDLE, runtime.gen)
    del o2
    gc.collect()
    assert calls == ["x", "gc"] and not r2.alive and r2.release() is False


def test_releaser_failure_keeps_it_armed():
    attempts = []

    def flaky(tag):
        attempts.append(tag)
        if len(attempts) == 1:
            raise RuntimeError("transient")

    class Owner:
        pass

    o = Owner()
    r = runtime.Releaser(o, flaky, ("t",), runtime.ORDER_HANDLE, runtime.gen)
    with pytest.raises(RuntimeError):
        r.release()
    assert r.alive                       # still owned, not lost
    assert r.release() is True and attempts == ["t", "t"] and not r.alive


def test_gc_release_failure_is_retried(emulator):
    b = acl_py.DeviceBuffer(4096)
    n = emulator.live_objects()["device_allocations"]
    with emulator.inject_faults("aclrtFree:1"):
        del b
        gc.collect()                     # the release fails inside the GC callback
    assert emulator.live_objects()["device_allocations"] == n   # kept, not lost
    acl_py.release_unused()              # retried
    assert emulator.live_objects()["device_allocations"] == n - 1


def test_threads_have_their_own_current_device():
    seen = {}

    def worker(i):
        seen[i] = acl_py.current_device().id
        with acl_py.Stream() as s:          # needs a device on this thread: set lazily
            b = acl_py.DeviceBuffer(256)
            x = np.full(64, i, np.float32)
            b.copy_from_host_async(x, s)
            out = np.empty_like(x)
            b.copy_to_host_async(out, s)
            s.synchronize()
            assert (out == x).all()
            b.close()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == {0: 0, 1: 0, 2: 0, 3: 0}


def test_two_devices(run_python, emulator):
    r = run_python('''
        import threading
        import numpy as np
        import acl_py
        from acl_py.errors import AclArgumentError
        assert acl_py.device_count() == 2
        assert acl_py.current_device().id == 0
        b0 = acl_py.DeviceBuffer(64)
        with acl_py.Device(1) as d:
            assert acl_py.current_device() is d
            b1 = acl_py.DeviceBuffer(64)
            s1 = acl_py.Stream()
            assert (b1.device.id, s1.device.id) == (1, 1)
            with acl_py.Device(0):
                assert acl_py.current_device().id == 0
                assert acl_py.Stream().device.id == 0
            assert acl_py.current_device().id == 1
            seen = []
            t = threading.Thread(target=lambda: seen.append(acl_py.current_device().id))
            t.start(); t.join()
            assert seen == [0], seen
        assert acl_py.current_device().id == 0
        # device-1 objects work from a thread whose device is 0: acl-py switches for the call
        x = np.arange(16, dtype=np.float32)
        b1.copy_from_host_async(x, s1)
        out = np.empty_like(x)
        b1.copy_to_host_async(out, s1)
        s1.synchronize()
        assert (out == x).all()
        try:
            b0.copy_from_host_async(x, s1)
            raise SystemExit("a stream of another device was accepted")
        except AclArgumentError as e:
            assert e.argument == "stream" and "device 1" in str(e), e
        t1 = acl_py.DeviceTensor.from_numpy(np.ones(3, np.float32), device=1)
        assert t1.device.id == 1
        try:
            t1.check_device(0, "grad_out")
            raise SystemExit("check_device passed")
        except AclArgumentError as e:
            assert e.argument == "grad_out"
        e1 = acl_py.Event(device=1)
        try:
            e1.record(acl_py.default_stream(0))
            raise SystemExit("event recorded on another device's stream")
        except AclArgumentError:
            pass
        acl_py.Device(1).synchronize()
        acl_py.set_device(1)
        assert acl_py.DeviceBuffer(8).device.id == 1
        print("OK")
    ''', env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK" and r.stderr == ""


def test_finalize_closes_everything_and_init_starts_again(run_python, emulator):
    r = run_python(script('''
        import numpy as np
        import acl_py
        from acl_py import emulator as emu, runtime
        from acl_py.errors import NotInitializedError, ClosedError
        acl_py.init()
        buf = acl_py.DeviceBuffer(64)
        host = acl_py.HostBuffer(64)
        s = acl_py.Stream()
        ev = acl_py.Event().record(s)
        t = acl_py.DeviceTensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
        v = t[:, 1:]
        v.handle; t.handle
        ia, ba = acl_py.IntArray([3]), acl_py.BoolArray([True])
        pending = acl_py.DeviceBuffer(1 << 20)
        pending.copy_from_host_async(np.ones(1 << 18, np.float32), s)
        pending.close()              # deferred to the stream
        pooled = acl_py.MemoryPool().malloc(100)
        acl_py.finalize()
        assert runtime.state() == "finalized"
        assert unbalanced() == {}, unbalanced()
        live = emu.live_objects()
        assert all(v == 0 for v in live.values()), live
        uses = [lambda: buf.ptr, lambda: buf.copy_to_host(), lambda: host.numpy(),
                lambda: s.synchronize(), lambda: s.handle, lambda: ev.synchronize(),
                lambda: t.handle, lambda: v.to_numpy(), lambda: t.to_numpy(),
                lambda: ia.handle, lambda: ba.handle, lambda: pooled.ptr]
        for use in uses:
            try:
                use()
                raise SystemExit("usable after finalize")
            except NotInitializedError as e:
                assert isinstance(e, ClosedError) and "finalize" in str(e), e
        for make in (lambda: acl_py.DeviceBuffer(8), lambda: acl_py.Stream(),
                     lambda: acl_py.IntArray([1]), lambda: acl_py.current_device().synchronize()):
            try:
                make()
                raise SystemExit("created after finalize")
            except NotInitializedError as e:
                assert "init()" in str(e), e
        for obj in (buf, host, s, ev, t, v, ia, ba, pooled):
            obj.close()                  # closing again is harmless
        acl_py.finalize()                # and so is finalizing again
        acl_py.init()                    # a new session
        x = np.arange(8, dtype=np.float32)
        t2 = acl_py.DeviceTensor.from_numpy(x)
        assert (t2.to_numpy() == x).all()
        try:
            buf.ptr
            raise SystemExit("old object revived")
        except ClosedError:
            pass
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("OK")
    '''))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK" and r.stderr == ""



def test_finalize_frees_host_memory_kept_for_numpy_views(run_python, emulator):
    """A HostBuffer closed, or collected, while NumPy views of it exist waits for the last
    view; finalize() does not wait: it frees that memory (the views must not be used after),
    and a view dropped in the next session frees nothing (a stale pointer) again."""
    r = run_python(script('''
        import gc
        import acl_py
        acl_py.init()
        closed = acl_py.HostBuffer(64)
        v1 = closed.numpy()
        closed.close()
        v2 = acl_py.HostBuffer(64).numpy()     # its buffer object is collected at once
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        acl_py.init()
        del v1, v2
        gc.collect()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("OK")
    '''))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK" and r.stderr == ""


def test_memory_whose_release_fails_at_finalize_is_closed_all_the_same(run_python, emulator):
    """finalize() retries a failed release once, then reports it; the object stays closed
    whatever happened (before, a tensor whose descriptor and memory each failed once was
    usable again: its stale pointer and destroyed aclTensor handed out)."""
    r = run_python(script('''
        import acl_py
        from acl_py import emulator as emu
        from acl_py.errors import AclError
        from acl_py.runtime import FinalizedError
        acl_py.init()
        t = acl_py.DeviceTensor.empty((4, 4), pool=None)
        buf = t.buffer
        t.handle
        emu.set_faults("aclDestroyTensor:1,aclrtFree:1")    # the first try, then the retry
        try:
            acl_py.finalize()
            raise SystemExit("the failures were not reported")
        except AclError:
            pass
        assert t.closed and buf.closed
        for use in (lambda: buf.ptr, lambda: t.handle, lambda: t.to_numpy()):
            try:
                use()
                raise SystemExit("usable after finalize")
            except FinalizedError:
                pass
        print("OK")
    '''))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK" and r.stderr == ""

def test_lazy_init_then_finalize(run_python, emulator):
    r = run_python(script('''
        import acl_py
        from acl_py import runtime
        assert runtime.state() == "uninitialized"
        b = acl_py.DeviceBuffer(32)          # lazy init on device 0
        assert runtime.state() == "initialized" and acl_py.current_device().id == 0
        acl_py.finalize()                    # ends the implicit session
        assert runtime.state() == "finalized" and b.closed
        assert unbalanced() == {}, unbalanced()
        print("OK")
    '''))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK"


def test_failed_init_leaves_state_unchanged(run_python, emulator):
    r = run_python('''
        import acl_py
        from acl_py import runtime
        from acl_py.errors import InternalError
        try:
            acl_py.init()
            raise SystemExit("injected aclInit failure not raised")
        except InternalError as e:
            assert e.code == 500000 and e.call == "aclInit", e
        assert runtime.state() == "uninitialized"
        from acl_py import emulator as emu
        emu.set_faults(None)
        acl_py.init()
        acl_py.DeviceBuffer(8).close()
        acl_py.finalize()
        print("OK")
    ''', env={"ACL_EMU_FAIL": "aclInit:1"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK"


def test_emulator_helpers(emulator):
    assert (emulator.prefix() / "lib64" / "libascendcl.so").is_file()
    assert emulator.version()
    assert emulator.is_active()
    live = emulator.live_objects()
    assert tuple(live) == emulator.LIVE_KEYS and all(isinstance(v, int) for v in live.values())
    default = emulator.num_threads()
    emulator.set_num_threads(3)
    assert emulator.num_threads() == 3
    emulator.set_num_threads(0)
    assert emulator.num_threads() == default
    with pytest.raises(errors.AclTypeError):
        emulator.set_num_threads(2.0)
    emulator.reset_call_counts()
    acl_py.DeviceBuffer(64).close()
    counts = emulator.call_counts()
    assert counts["aclrtMalloc"] == 1 and counts["aclrtFree"] == 1
    with emulator.inject_faults({"aclrtMalloc": 2}):
        acl_py.DeviceBuffer(8).close()                    # call 1 succeeds
        with pytest.raises(errors.DeviceMemoryError):
            acl_py.DeviceBuffer(8)                        # call 2 fails
    acl_py.DeviceBuffer(8).close()                        # cleared on exit
    with pytest.raises(errors.AclArgumentError):
        emulator.set_faults("aclrtMalloc:notanumber")


def test_emulator_helpers_refuse_real_cann(emulator, monkeypatch):
    from acl_py._loader import library
    monkeypatch.setattr(library().backend, "name", "cann")
    for call in (emulator.live_objects, emulator.prefix, emulator.call_counts,
                 emulator.num_threads, lambda: emulator.set_faults(None),
                 lambda: emulator.set_num_threads(1)):
        with pytest.raises(errors.EmulatorOnlyError, match="emulator backend"):
            call()
    monkeypatch.undo()


def test_package_tour_runs(run_python, emulator):
    """The tour in acl_py's docstring (the README's) runs as written and leaks nothing."""
    tour = acl_py.__doc__.split("interpreter exit)::")[1].split("Errors:")[0]
    r = run_python(textwrap.dedent(tour) + textwrap.dedent('''
        from acl_py import emulator
        assert not any(emulator.live_objects().values()), emulator.live_objects()
    '''))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "(2, 2) (2, 4) 4\n"


def test_hardware_marker_reason_names_what_is_missing(emulator):
    from conftest import hardware_skip_reason
    reason = hardware_skip_reason()
    assert reason and "no CANN libraries found" in reason


def test_teardown_retries_every_failed_release_once(run_python, emulator):
    """finalize() with each release call of its trace failing in turn (every (function, k)):
    the failed release is retried once, in the same teardown, whatever registered its retry
    (the release itself, a deferred free run by the teardown's synchronize, a plan's end, a
    block of a pool closed before); nothing is left registered for the next session (where
    its stale handle would be released again), and every create is matched by exactly one
    successful release. A retry registered after the teardown had passed its order would be
    left over here."""
    r = run_python(script('''
        import sys
        import numpy as np
        import acl_py
        from acl_py import emulator as emu, runtime
        from acl_py.errors import AclError
        sys.path.insert(0, TESTS)
        from _reliability import lnb, make_case, plan_cls, to_device

        RELEASES = ("aclrtFree", "aclrtFreeHost", "aclDestroyTensor", "aclDestroyIntArray",
                    "aclDestroyBoolArray", "aclDestroyAclOpExecutor", "aclrtDestroyStream",
                    "aclrtDestroyEvent", "aclrtSynchronizeStream")
        PAIRS = (("aclrtMalloc", "aclrtFree"), ("aclrtMallocHost", "aclrtFreeHost"),
                 ("aclrtCreateStream", "aclrtDestroyStream"),
                 ("aclrtCreateEvent", "aclrtDestroyEvent"),
                 ("aclCreateTensor", "aclDestroyTensor"),
                 ("aclCreateIntArray", "aclDestroyIntArray"),
                 ("aclCreateBoolArray", "aclDestroyBoolArray"))

        def session():
            """A session with something pending in every release path, left to finalize."""
            keep = []
            s1, s2 = acl_py.Stream(), acl_py.Stream()
            case = make_case(np.random.default_rng(0), (4, 64), 1, np.float32)
            dev = to_device(case)
            plan = plan_cls()(dev["grad_out"], dev["input"], dev["normalized_shape"],
                              dev["mean"], dev["rstd"], dev["weight"])
            plan.run(s1)
            dev["input"].close()                # its free waits for the plan's end
            keep += [plan, lnb()(dev["grad_out"], acl_py.DeviceTensor.from_numpy(case["input"]),
                                 dev["normalized_shape"],
                                 dev["mean"], dev["rstd"], dev["weight"], stream=s2)]
            b = acl_py.DeviceBuffer(4096)
            b.copy_from_host_async(bytes(4096), s1)
            b.copy_to_host_async(bytearray(4096), s2)
            b.close()                           # waits for both streams
            pool = acl_py.MemoryPool()
            t = acl_py.DeviceTensor.empty((8, 8), pool=pool)
            t.handle
            pool.close()                        # t outlives its pool
            h = acl_py.HostBuffer(64)
            keep.append(h.numpy())
            h.close()                           # kept for its view
            u = acl_py.DeviceTensor.empty((4, 4), pool=None)
            u.handle
            keep += [s1, s2, dev, t, u, acl_py.Event().record(s1)]
            return keep

        def finalize_with(fault):
            acl_py.init()
            keep = session()
            before = emu.call_counts()
            emu.set_faults(fault)               # also resets the counts
            try:
                acl_py.finalize()
            except AclError:
                pass
            after = emu.call_counts()
            emu.set_faults(None)
            total = {k: before.get(k, 0) + after.get(k, 0) for k in set(before) | set(after)}
            failed = fault.split(":")[0] if fault else None
            off = {a: (total.get(a, 0), total.get(b, 0)) for a, b in PAIRS
                   if total.get(a, 0) != total.get(b, 0) - (b == failed)}
            assert not off, (fault, off)
            left = [r.fn.__name__ for r in list(runtime._live.values())]
            assert not left, (fault, left)
            del keep
            return after

        trace = finalize_with("")
        n = 0
        for fn in RELEASES:
            for k in range(1, trace.get(fn, 0) + 1):
                finalize_with(f"{fn}:{k}")
                n += 1
        assert n > 30, n
        print("OK", n)
    ''').replace("TESTS", repr(os.path.dirname(os.path.abspath(__file__)))), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("OK") and r.stderr == "", r.stdout + r.stderr


def test_release_of_another_devices_object_inside_a_launch_keeps_its_device(run_python,
                                                                            emulator):
    """A garbage collection may run any release at any allocation, also in the middle of an
    operator launch or an asynchronous copy, between the device made current for it and its
    enqueue (simulated here: the releases run where the launch's workspace is returned, and
    where the copy's host source is read). A release of another device's object (memory,
    a pool's cache, an event, a stream) must leave the thread's current device as it found
    it: the runtime refuses an enqueue on a stream of another device than the current one
    (CANN: hicann/runtime api_impl.cc, KernelLaunch and MemcpyAsync check the stream's
    context). Memory and events are released without a current device (CANN frees through
    the driver, api_impl.cc DevFreeStatic/HostFree, and destroys an event in its own
    context); a stream's destroy makes its device current and then the previous one again."""
    r = run_python(script('''
        import sys
        import numpy as np
        import acl_py
        from acl_py import memory
        sys.path.insert(0, TESTS)
        from _reliability import check, lnb, make_case, to_device

        def device1_objects(kind):
            with acl_py.Device(1):
                if kind == "buffer":
                    return acl_py.DeviceBuffer(4096)
                if kind == "host":
                    return acl_py.HostBuffer(4096)
                if kind == "event":
                    return acl_py.Event()
                if kind == "stream":
                    return acl_py.Stream()
                if kind == "pool":
                    p = acl_py.MemoryPool()
                    p.malloc(4096).close()          # a cached block: freed by the close
                    return p
                if kind == "closed pool":
                    p = acl_py.MemoryPool()
                    b = p.malloc(4096)
                    p.close()
                    return b                        # freed as plain memory

        case = make_case(np.random.default_rng(0), (8, 64), 1, np.float32)
        dev = to_device(case)
        s = acl_py.Stream()
        workspace, host_source = memory._PoolState.workspace, memory._host_source
        for kind in ("buffer", "host", "event", "stream", "pool", "closed pool"):
            for where in ("launch", "copy"):
                pending = [device1_objects(kind)]

                def release_pending():
                    while pending:
                        pending.pop().close()   # as a garbage collection would, here

                def workspace_then_gc(self, *args):
                    block = workspace(self, *args)
                    release_pending()
                    return block

                def host_source_then_gc(*args):
                    source = host_source(*args)
                    release_pending()
                    return source

                memory._PoolState.workspace = workspace_then_gc
                memory._host_source = host_source_then_gc
                try:
                    if where == "launch":
                        outs = lnb()(dev["grad_out"], dev["input"], dev["normalized_shape"],
                                     dev["mean"], dev["rstd"], dev["weight"], stream=s)
                    else:
                        buf = acl_py.DeviceBuffer(64)
                        buf.copy_from_host_async(bytes(64), s)
                        buf.close()
                except Exception as e:
                    raise SystemExit(f"{kind} released inside a {where}: {e!r}")
                finally:
                    memory._PoolState.workspace = workspace
                    memory._host_source = host_source
                assert not pending, (kind, where)
                s.synchronize()
                if where == "launch":
                    check(outs, case, what=kind)
        s.close()
        acl_py.release_unused()
        print("OK")
    ''').replace("TESTS", repr(os.path.dirname(os.path.abspath(__file__)))),
        env={"ACL_EMU_DEVICE_COUNT": "2"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK" and r.stderr == ""


def test_objects_made_while_another_thread_finalizes_are_not_kept_for_the_next_session(
        run_python, emulator):
    """finalize() racing another thread's creations. (1) The object's C resource made before
    the teardown, its registration after: before, it stayed registered into the next session,
    whose teardown freed the stale address (107000 on the emulator; on a device an address
    that session may have handed out again); now the constructor raises FinalizedError, the
    operator library's host objects are destroyed, nothing stays registered. (2) Registered
    during the teardown, after the pass over its order: before, likewise kept; now released
    by the teardown's second pass (creates and releases balance)."""
    r = run_python(script('''
        import threading
        import acl_py
        from acl_py import emulator as emu, runtime as rt

        class FinalizeAfter:        # the bound library, with finalize() run by another
            def __init__(self, real, call):   # thread right after one call returned
                self.real, self.call = real, call
            def __getattr__(self, name):
                fn = getattr(self.real, name)
                if name != self.call:
                    return fn
                def wrapped(*args):
                    status = fn(*args)
                    t = threading.Thread(target=acl_py.finalize)
                    t.start()
                    t.join()
                    return status
                return wrapped

        makers = {"aclrtMalloc": lambda: acl_py.DeviceBuffer(64),
                  "aclrtCreateStream": acl_py.Stream, "aclrtCreateEvent": acl_py.Event,
                  "aclCreateIntArray": lambda: acl_py.IntArray([1, 2]),
                  "aclCreateBoolArray": lambda: acl_py.BoolArray([True])}
        for call, make in makers.items():
            acl_py.init()
            acl_py.Device(0).use()
            real = rt.lib
            rt.lib = FinalizeAfter(real, call)
            try:
                make()
                print(call, "made", flush=True)
            except acl_py.FinalizedError:
                print(call, "FinalizedError", flush=True)
            finally:
                if isinstance(rt.lib, FinalizeAfter):
                    rt.lib = real
            print(call, "registered after", rt.live_count(), flush=True)
            emu.reset_call_counts()
            acl_py.init()
            acl_py.finalize()       # the next session: nothing stale released
            print(call, "next session", rt.last_teardown_errors, emu.call_counts().get(
                "aclrtFree", 0), flush=True)

        # (2) made by another thread while the teardown runs, after its order's pass
        acl_py.init()
        made, ready, go, done = [], threading.Event(), threading.Event(), threading.Event()
        def maker():
            acl_py.Device(0).use()            # the device set before: no session lock needed
            ready.set()
            go.wait()
            made.append(acl_py.DeviceBuffer(64))
            made.append(acl_py.IntArray([3]))
            done.set()
        th = threading.Thread(target=maker)
        th.start()
        assert ready.wait(30)
        class Hook: pass
        hook = Hook()
        def during_teardown():
            go.set()
            assert done.wait(30)
        rt.Releaser(hook, during_teardown, (), rt.ORDER_CONTEXT, rt.gen)  # the last order
        emu.reset_call_counts()
        acl_py.finalize()
        th.join()
        print("during registered after", rt.live_count(), flush=True)
        c = emu.call_counts()
        print("during made/released", [c.get(k, 0) for k in ("aclrtMalloc", "aclrtFree",
              "aclCreateIntArray", "aclDestroyIntArray")], flush=True)
        try:
            made[0].copy_to_host(bytearray(64))
            print("during buffer usable", flush=True)
        except acl_py.FinalizedError:
            print("during buffer FinalizedError", flush=True)
        acl_py.init()
        acl_py.finalize()
        print("during next session", rt.last_teardown_errors, flush=True)
    '''), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    for call in ("aclrtMalloc", "aclrtCreateStream", "aclrtCreateEvent", "aclCreateIntArray",
                 "aclCreateBoolArray"):
        assert f"{call} FinalizedError" in out, out
        assert f"{call} registered after 0" in out, out
        assert f"{call} next session [] 0" in out, out
    assert "during registered after 0" in out, out
    assert "during made/released [1, 1, 1, 1]" in out, out
    assert "during buffer FinalizedError" in out, out
    assert "during next session []" in out, out


def test_objects_made_across_a_finalize_and_a_new_init_are_not_kept_for_the_new_session(
        run_python, emulator):
    """Another thread runs ``finalize()`` and then ``init()`` (a new session) between an
    object's C call and its registration. Before, the registration's check (``ready``) found
    the runtime up again and the object was kept into the new session, whose teardown then
    released the stale handle (``aclrtFree`` of an address of the old session: 107000 on the
    emulator; on a device an address the new session may have handed out again). A pooled
    block taken from a pool of the old session (no C call) likewise. Now a resource carries
    the session it was made in (read before its C call, or its pool's) and the registration
    compares it: the constructor raises FinalizedError and nothing stale is registered.
    Also a release that fails after such a teardown (its resource went with the session) is
    no longer re-armed into the new session (it was, and the new session's teardown retried
    ``aclrtFree`` of the stale address)."""
    r = run_python(script('''
        import gc
        import threading
        import numpy as np
        import acl_py
        from acl_py import emulator as emu, memory, runtime as rt

        def new_session():          # another thread's finalize() and init()
            def run():
                acl_py.finalize()
                acl_py.init()
            t = threading.Thread(target=run)
            t.start()
            t.join()

        class NewSessionAfter:      # the bound library, a new session started by another
            def __init__(self, real, call):   # thread right after one call returned
                self.real, self.call = real, call
            def __getattr__(self, name):
                fn = getattr(self.real, name)
                if name != self.call:
                    return fn
                def wrapped(*args):
                    status = fn(*args)
                    new_session()
                    return status
                return wrapped

        def end_session(case):
            try:
                acl_py.finalize()
            except acl_py.errors.AclError:
                pass                # listed in last_teardown_errors
            print(case, "new session", rt.last_teardown_errors, flush=True)

        acl_py.init()
        x = np.arange(16, dtype=np.float32).reshape(4, 4)
        makers = {"aclrtMalloc": lambda: acl_py.DeviceBuffer(64, pool=None),
                  "aclrtMallocHost": lambda: acl_py.HostBuffer(64),
                  "aclrtCreateStream": acl_py.Stream, "aclrtCreateEvent": acl_py.Event,
                  "aclCreateIntArray": lambda: acl_py.IntArray([1, 2]),
                  "aclCreateBoolArray": lambda: acl_py.BoolArray([True]),
                  "aclCreateTensor": lambda: t[1:].handle}
        for call, make in makers.items():
            acl_py.Device(0).use()
            t = acl_py.DeviceTensor.from_numpy(x)
            real = rt.lib
            rt.lib = NewSessionAfter(real, call)
            try:
                make()
                print(call, "made", flush=True)
            except acl_py.FinalizedError:
                print(call, "FinalizedError", flush=True)
            finally:
                if isinstance(rt.lib, NewSessionAfter):
                    rt.lib = real
            del t
            gc.collect()
            print(call, "registered after", rt.live_count(), flush=True)
            end_session(call)       # the new session's teardown: nothing stale released
            acl_py.init()

        # A pooled block taken (no C call) from a pool of the old session.
        acl_py.DeviceBuffer(64, pool=True).close()       # cached in the default pool
        take = memory._PoolState.take
        def take_then_new_session(self, *args):
            block = take(self, *args)
            memory._PoolState.take = take
            new_session()
            return block
        memory._PoolState.take = take_then_new_session
        try:
            acl_py.DeviceBuffer(64, pool=True)
            print("pooled made", flush=True)
        except acl_py.FinalizedError:
            print("pooled FinalizedError", flush=True)
        memory._PoolState.take = take
        print("pooled registered after", rt.live_count(), flush=True)
        end_session("pooled")

        # A garbage-collected buffer whose free fails after another thread's teardown (which
        # never saw its popped releaser) and init.
        acl_py.init()
        b = acl_py.DeviceBuffer(64, pool=None)
        real = rt.lib
        class FreeAfterNewSession:
            def __getattr__(self, name):
                fn = getattr(real, name)
                if name != "aclrtFree":
                    return fn
                def wrapped(ptr):
                    new_session()
                    return fn(ptr)      # the old session's address: refused
                return wrapped
        rt.lib = FreeAfterNewSession()
        del b
        gc.collect()
        if isinstance(rt.lib, FreeAfterNewSession):
            rt.lib = real
        print("gc registered after", rt.live_count(), flush=True)
        end_session("gc")
    '''), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    for call in ("aclrtMalloc", "aclrtMallocHost", "aclrtCreateStream", "aclrtCreateEvent",
                 "aclCreateIntArray", "aclCreateBoolArray", "aclCreateTensor", "pooled"):
        assert f"{call} FinalizedError" in out, out
        assert f"{call} registered after 0" in out, out
        assert f"{call} new session []" in out, out
    assert "gc registered after 0" in out, out
    assert "gc new session []" in out, out


def test_interrupt_as_a_release_returns_never_releases_twice(run_python, emulator):
    """A KeyboardInterrupt (Ctrl-C) that arrives during a release's C call is raised as the
    call returns, after the resource was freed. Before, the releaser took it for a failed
    release and armed itself again, so the next ``release_unused()``, close or teardown
    released it a second time (``aclrtFree``/``aclrtFreeHost`` 107000, a destroyed stream
    synchronized and destroyed again 107017, an event, array and tensor descriptor destroyed
    twice; on a device a double free may free another allocation at the same address), and a
    stream, array or tensor view stayed open over its destroyed handle. Now an interrupt is
    not a failure: the object is closed and its release never runs again. Likewise an
    asynchronous copy's pinned staging buffer is no longer freed under its queued copy when
    the interrupt comes as the enqueue returns."""
    r = run_python(script('''
        import gc
        import numpy as np
        import acl_py
        from acl_py import runtime as rt

        class InterruptAfter:       # the bound library: one call runs, then KeyboardInterrupt
            def __init__(self, real, call):   # is raised where Python raises it for a signal
                self.real, self.call = real, call   # that arrived during the call
            def __getattr__(self, name):
                fn = getattr(self.real, name)
                if name != self.call:
                    return fn
                def wrapped(*args):
                    fn(*args)
                    rt.lib = self.real
                    raise KeyboardInterrupt
                return wrapped

        acl_py.init()
        t = acl_py.DeviceTensor.from_numpy(np.arange(16, dtype=np.float32))
        cases = {
            "aclrtFree": (lambda: acl_py.DeviceBuffer(64, pool=None), lambda o: o.ptr),
            "aclrtFreeHost": (lambda: acl_py.HostBuffer(64), lambda o: o.ptr),
            "aclrtDestroyStream": (acl_py.Stream, lambda o: o.synchronize()),
            "aclrtDestroyEvent": (acl_py.Event, lambda o: o.synchronize()),
            "aclDestroyIntArray": (lambda: acl_py.IntArray([1, 2]), lambda o: o.handle),
            "aclDestroyTensor": (lambda: t[1:], lambda o: o.handle),
        }
        for call, (make, use) in cases.items():
            obj = make()
            if call == "aclDestroyTensor":
                obj.handle
            real = rt.lib
            rt.lib = InterruptAfter(real, call)
            try:
                obj.close()
                print(call, "not interrupted", flush=True)
            except KeyboardInterrupt:
                pass
            finally:
                rt.lib = real
            try:
                use(obj)
                print(call, "still usable", flush=True)
            except acl_py.ClosedError:
                print(call, "closed", flush=True)
            except acl_py.errors.AclError as e:
                print(call, "used its destroyed handle", e, flush=True)
            try:
                obj.close()         # again: nothing to do
            except acl_py.errors.AclError as e:
                print(call, "released twice", e, flush=True)
            del obj
            gc.collect()
            try:
                acl_py.release_unused()
                print(call, "released once", flush=True)
            except acl_py.errors.AclError as e:
                print(call, "released twice", e, flush=True)
        t.close()

        # An asynchronous copy through a pinned staging buffer, interrupted as its enqueue
        # returned: the staging buffer is freed once the stream is past the copy (before, at
        # once, under the queued copy: refused with 107000 on the emulator).
        s = acl_py.Stream()
        big, dbig = acl_py.HostBuffer(1 << 24), acl_py.DeviceBuffer(1 << 24, pool=None)
        b = acl_py.DeviceBuffer(64, pool=None)
        out = np.zeros(16, np.float32)
        copies = {"copy_to_host_async": lambda: b.copy_to_host_async(out, s),
                  "copy_from_host_async": lambda: b.copy_from_host_async(out + 1, s)}
        for name, copy in copies.items():
            dbig.copy_from_host_async(big, s)   # the stream is busy: the copy stays queued
            real = rt.lib
            rt.lib = InterruptAfter(real, "aclrtMemcpyAsync")
            try:
                copy()
                print(name, "not interrupted", flush=True)
            except KeyboardInterrupt:
                print(name, "interrupted", flush=True)
            except acl_py.errors.AclError as e:
                print(name, "freed under the queued copy", e, flush=True)
            finally:
                rt.lib = real
            s.synchronize()
            gc.collect()
            try:
                acl_py.release_unused()
                print(name, "released once", flush=True)
            except acl_py.errors.AclError as e:
                print(name, "released twice", e, flush=True)
        for o in (b, dbig, big, s):
            o.close()
        try:
            acl_py.finalize()
        except acl_py.errors.AclError:
            pass
        print("teardown", rt.last_teardown_errors, unbalanced(), flush=True)
    '''), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    for call in ("aclrtFree", "aclrtFreeHost", "aclrtDestroyStream", "aclrtDestroyEvent",
                 "aclDestroyIntArray", "aclDestroyTensor"):
        assert f"{call} closed" in out, out
        assert f"{call} released once" in out, out
    for name in ("copy_to_host_async", "copy_from_host_async"):
        assert f"{name} interrupted" in out, out
        assert f"{name} released once" in out, out
    assert "teardown [] {}" in out, out


def test_teardown_never_synchronizes_a_stream_another_thread_is_destroying(run_python,
                                                                          emulator):
    """finalize() while another thread closes (or its garbage collection releases) a stream.
    The teardown's first step synchronizes every open stream; it did so without the stream's
    destroy lock, so a stream whose destroy had returned but which was not yet marked closed
    was synchronized through its destroyed handle (107017 on the emulator, raised by
    finalize(); on a device a dangling pointer). Found by a script dropping streams in two
    threads while the main thread finalized (12 of 15 rounds failed). Now the teardown
    synchronizes under the lock, as acl-py's other synchronizations of streams it does not
    own do (StreamState.wait_if_open), and skips a stream closed meanwhile."""
    r = run_python(script('''
        import threading
        import acl_py
        from acl_py import runtime as rt

        destroyed, resume = threading.Event(), threading.Event()

        class PauseAfterDestroy:    # the bound library: the closing thread is held right
            def __init__(self, real):     # after aclrtDestroyStream returned
                self.real = real
            def __getattr__(self, name):
                fn = getattr(self.real, name)
                if name != "aclrtDestroyStream":
                    return fn
                def wrapped(handle):
                    status = fn(handle)
                    destroyed.set()
                    resume.wait(2)          # bounded: with the fix, finalize() waits for it
                    return status
                return wrapped

        acl_py.init()
        s = acl_py.Stream()
        real = rt.lib
        rt.lib = PauseAfterDestroy(real)
        closer = threading.Thread(target=s.close)
        closer.start()
        assert destroyed.wait(30)
        rt.lib = real
        threading.Timer(0.5, resume.set).start()
        try:
            acl_py.finalize()
            print("finalize ok", rt.last_teardown_errors, flush=True)
        except acl_py.errors.AclError as e:
            print("finalize raised", e, flush=True)
        closer.join(30)
        acl_py.init()
        acl_py.finalize()
        print("balance", unbalanced(), flush=True)
    '''), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "finalize ok []" in out, out
    assert "balance {}" in out, out
