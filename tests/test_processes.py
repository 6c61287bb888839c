"""Processes: a child forked from a process that initialized acl-py (multiprocessing's default
start method on Linux) never touches the parent's runtime objects, refuses to use the runtime
with a typed error naming the cure, and leaves the parent intact; children started with the
'spawn' method, or forked before the parent initialized, run their own sessions.

The vendor's runtime installs no fork handler (hicann/runtime src: no pthread_atfork) and
keeps its initialization count in process memory, so a forked child's ``aclInit`` answers
"already initialized" (hicann/runtime src/acl/aclrt_impl/acl.cpp, aclInitImpl) over a copy
of the parent's runtime whose threads (stream workers) do not exist in the child."""
import textwrap

import pytest

from acl_py.soc import supports_bfloat16

from test_runtime import script


@pytest.fixture(autouse=True)
def _needs_emulator(emulator):
    """Counting the child's C calls needs the emulator."""


# Registered before acl_py is imported, so it runs after acl-py's own atexit handler. In the
# child: every runtime call made since the fork (the emulator counts them; aclemu* are its
# test hooks), reported at the very end of the child's life.
CHILD_CALLS = '''
import atexit, os, sys

PARENT = os.getpid()
def _child_calls():
    if os.getpid() == PARENT:
        return
    from acl_py import emulator as emu
    calls = {k: v for k, v in emu.call_counts().items() if not k.startswith("aclemu")}
    print("CHILD-CALLS", calls, flush=True)
atexit.register(_child_calls)
'''

PARENT_OBJECTS = '''
import faulthandler, gc
import numpy as np
import acl_py
from acl_py import emulator as emu, runtime

acl_py.init()
s = acl_py.Stream()
x = np.arange(64, dtype=np.float32).reshape(8, 8)
t = acl_py.DeviceTensor.from_numpy(x, s)                 # pooled storage
buf = acl_py.DeviceBuffer(4096)                          # unpooled
buf.copy_from_host_async(np.ones(1024, np.float32), s)   # pending work on s
host = acl_py.HostBuffer(256)
view = host.numpy(np.float32)
ev = acl_py.Event().record(s)
arr = acl_py.IntArray([1, 2, 3])
lnb = acl_py.layer_norm_backward
'''


def test_forked_child_refuses_the_runtime_and_releases_nothing_of_the_parents(run_python):
    """Before: the child's calls ran on the parent's copied runtime; its exit tore down the
    parent's streams, memory and session (aclrtDestroyStream, aclrtFree, aclFinalize from the
    child) and hung in aclrtDestroyStream once the child had enqueued work (the stream's
    worker thread does not exist in a forked child)."""
    r = run_python(script(CHILD_CALLS + PARENT_OBJECTS + textwrap.dedent('''
        pid = os.fork()
        if pid == 0:
            faulthandler.dump_traceback_later(30, exit=True)   # a hang fails, with a trace
            emu.reset_call_counts()
            attempts = {
                "to_numpy": lambda: t.to_numpy(),
                "synchronize": lambda: s.synchronize(),
                "copy": lambda: buf.copy_to_host(np.empty(1024, np.float32)),
                "new buffer": lambda: acl_py.DeviceBuffer(16),
                "new stream": lambda: acl_py.Stream(),
                "from_numpy": lambda: acl_py.DeviceTensor.from_numpy(x),
                "launch": lambda: lnb(x, x, [8], x[:, :1], x[:, :1], x[0], None, stream=s),
                "numpy launch": lambda: lnb(x, x, [8], x[:, :1], x[:, :1], x[0], None),
                "device_count": lambda: acl_py.device_count(),
                "init": lambda: acl_py.init(),
                "event": lambda: ev.synchronize(),
            }
            for name, fn in attempts.items():
                try:
                    fn()
                    print("CHILD", name, "succeeded", flush=True)
                except Exception as e:
                    named = "spawn" in str(e) and str(os.getppid()) in str(e)
                    print("CHILD", name, "raised", type(e).__name__,
                          isinstance(e, acl_py.NotInitializedError) and named, flush=True)
            for obj in (t, s, buf, host, ev, arr):
                obj.close()             # the parent's: closed here, nothing released
            assert runtime.state() == "forked", runtime.state()
            acl_py.finalize()           # nothing to finalize here: does nothing
            acl_py.release_unused()     # likewise
            del t, s, buf, host, view, ev, arr
            gc.collect()                # the parent's objects dropped: no release runs
            sys.exit(0)                 # atexit: no teardown of the parent's session
        _, status = os.waitpid(pid, 0)
        print("CHILD-STATUS", status, flush=True)
        # The parent carries on with everything it had.
        s.synchronize()
        assert (t.to_numpy() == x).all()
        out = np.empty(1024, np.float32)
        buf.copy_to_host(out)
        assert (out == 1).all()
        view[:] = 2
        ev.synchronize()
        dx = lnb(x, x, [8], x[:, :1], x[:, :1], x[0], None, stream=s)[0]
        assert dx is not None
        del t, buf, host, view, ev, arr, dx
        s.close()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("PARENT-OK", flush=True)
    ''')), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "CHILD-STATUS 0" in out, out + r.stderr
    assert "PARENT-OK" in out, out + r.stderr
    for line in out.splitlines():
        if line.startswith("CHILD "):
            assert line.endswith(" raised ForkedError True"), out + r.stderr
    assert out.count(" raised ForkedError True") == 11, out
    assert "CHILD-CALLS {}" in out, out + r.stderr


def test_forked_child_that_ignores_acl_py_exits_without_touching_the_parents_session(
        run_python):
    """A child that never uses acl-py and exits normally. Before: its exit ran the parent's
    teardown in the child (synchronize, aclrtFree, aclrtDestroyStream, aclrtResetDevice,
    aclFinalize on the parent's handles), as did dropping the parent's objects."""
    r = run_python(script(CHILD_CALLS + PARENT_OBJECTS + textwrap.dedent('''
        pid = os.fork()
        if pid == 0:
            faulthandler.dump_traceback_later(30, exit=True)
            emu.reset_call_counts()
            del t, buf
            gc.collect()
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        assert (t.to_numpy() == x).all()
        del t, buf, host, view, ev, arr
        s.close()
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("PARENT-OK", flush=True)
    ''')), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PARENT-OK" in r.stdout, r.stdout + r.stderr
    assert "CHILD-CALLS {}" in r.stdout, r.stdout + r.stderr


def test_multiprocessing_fork_worker_gets_the_error_and_spawn_workers_run(run_python):
    """One process per device: with 'spawn' each worker runs its own session (here both on
    device 0 of the emulator); with the default 'fork' after the parent initialized, the
    worker's first call raises ForkedError naming the cure."""
    r = run_python(script('''
        import multiprocessing as mp
        import numpy as np
        import acl_py

        def work(device):
            x = np.arange(16, dtype=np.float32).reshape(4, 4)
            try:
                acl_py.init()           # one session per task (a pool worker runs several)
                with acl_py.Device(device):
                    t = acl_py.DeviceTensor.from_numpy(x)
                    ok = bool((t.to_numpy() == x).all())
                    t.close()
                acl_py.finalize()
                return ("ok", ok)
            except acl_py.errors.AclError as e:
                return (type(e).__name__, str(e))

        if __name__ == "__main__":
            # Forked before the parent initialized: the children's own sessions work.
            with mp.get_context("fork").Pool(1) as pool:
                print("FORK-BEFORE-INIT", pool.map(work, [0]), flush=True)
            acl_py.init()
            keep = acl_py.DeviceTensor.from_numpy(np.ones(8, np.float32))
            with mp.get_context("fork").Pool(1) as pool:
                print("FORK-AFTER-INIT", pool.map(work, [0]), flush=True)
            with mp.get_context("spawn").Pool(2) as pool:
                print("SPAWN", pool.map(work, [0, 0]), flush=True)
            assert (keep.to_numpy() == 1).all()
            keep.close()
            acl_py.finalize()
            assert unbalanced() == {}, unbalanced()
            print("PARENT-OK", flush=True)
    '''), timeout=180)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "FORK-BEFORE-INIT [('ok', True)]" in out, out + r.stderr
    assert "SPAWN [('ok', True), ('ok', True)]" in out, out + r.stderr
    line = next(x for x in out.splitlines() if x.startswith("FORK-AFTER-INIT"))
    assert "ForkedError" in line and "spawn" in line, line
    assert "PARENT-OK" in out, out + r.stderr


def test_child_forked_after_finalize_runs_its_own_session(run_python):
    """A parent that finalized before forking leaves nothing of its session: the child's
    init() starts its own (aclInit again, as in the parent after a finalize)."""
    r = run_python(script(CHILD_CALLS + textwrap.dedent('''
        import numpy as np
        import acl_py
        x = np.arange(16, dtype=np.float32)
        acl_py.init()
        acl_py.DeviceTensor.from_numpy(x).close()
        acl_py.finalize()
        pid = os.fork()
        if pid == 0:
            from acl_py import emulator as emu
            emu.reset_call_counts()
            acl_py.init()
            t = acl_py.DeviceTensor.from_numpy(x)
            assert (t.to_numpy() == x).all()
            t.close()
            acl_py.finalize()
            assert unbalanced() == {}, unbalanced()
            print("CHILD-OK", flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        print("PARENT-OK", flush=True)
    ''')), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CHILD-OK" in r.stdout and "PARENT-OK" in r.stdout, r.stdout + r.stderr


def test_child_forked_while_another_thread_holds_a_module_lock_does_not_hang(run_python):
    """The locks of the library loader and of acl_py.aclnn's catalog are new in a forked
    child: a parent's thread holding one at the fork (opening the libraries, reading the
    headers) left it held for ever in the child, whose first use then hung."""
    r = run_python(script(textwrap.dedent('''
        import os
        import threading
        import numpy as np
        import acl_py
        from acl_py import _loader, aclnn
        held, release = threading.Event(), threading.Event()

        def hold():
            with _loader._lock, aclnn._lock:
                held.set()
                release.wait()
        t = threading.Thread(target=hold, daemon=True)
        t.start()
        held.wait()
        pid = os.fork()     # before the parent's first init: the child runs its own session
        if pid == 0:
            a = np.arange(4, dtype=np.float32)
            out = np.zeros(4, np.float32)
            aclnn.Add(a, a, 1.0, out)
            assert (out == 2 * a).all(), out
            print("CHILD-OK", flush=True)
            os._exit(0)
        release.set()
        t.join()
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        print("PARENT-OK", flush=True)
    ''')), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CHILD-OK" in r.stdout and "PARENT-OK" in r.stdout, r.stdout + r.stderr


def test_forked_child_answers_what_needs_no_runtime_and_refuses_the_rest(run_python):
    """What reaches the library without a session, in a forked child. ``soc_name()`` (and
    ``supports_bfloat16()`` without a part) called ``aclrtGetSocName`` on the parent's copied
    runtime before, and ``acl-py info``'s probe called ``aclInit``, ``aclrtGetDeviceCount``
    and each device's set, memory query and reset on that copy; now they raise ForkedError, info reports it as its error. What only
    reports stays: ``backend()`` (which files are loaded), a part's BFLOAT16 support by name,
    and ``acl_py.raw.lib``, the unchecked escape hatch."""
    r = run_python(script(CHILD_CALLS + textwrap.dedent('''
        import json
        import acl_py
        from acl_py import _loader, emulator as emu, info, raw, runtime

        acl_py.init()
        parent_backend = acl_py.backend()
        parent_soc = acl_py.soc_name()
        pid = os.fork()
        if pid == 0:
            emu.reset_call_counts()
            for name, fn in (("soc_name", acl_py.soc_name),
                             ("supports_bfloat16", acl_py.supports_bfloat16)):
                try:
                    print("CHILD", name, "answered", fn(), flush=True)
                except acl_py.ForkedError as e:
                    print("CHILD", name, "ForkedError", "spawn" in str(e), flush=True)
            b = acl_py.backend()
            print("CHILD backend", b is parent_backend, b.name, flush=True)
            print("CHILD bf16 by name", acl_py.supports_bfloat16(parent_soc), flush=True)
            print("CHILD raw.lib", raw.lib is _loader.library(), flush=True)
            report = info.collect()
            print("CHILD info", report["backend"], report["device_count"],
                  "was forked from process" in str(report["error"]) or report["error"],
                  flush=True)
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("CHILD-STATUS", status, flush=True)
        assert acl_py.soc_name() == parent_soc
        acl_py.finalize()
        assert unbalanced() == {}, unbalanced()
        print("PARENT-OK", flush=True)
    ''')), timeout=120)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "CHILD-STATUS 0" in out and "PARENT-OK" in out, out + r.stderr
    assert "CHILD soc_name ForkedError True" in out, out
    assert "CHILD supports_bfloat16 ForkedError True" in out, out
    assert "CHILD backend True emulator" in out, out
    assert f"CHILD bf16 by name {supports_bfloat16()}" in out, out   # the parent's part's
    assert "CHILD raw.lib True" in out, out
    assert "CHILD info emulator None True" in out, out
    assert "CHILD-CALLS {}" in out, out + r.stderr
