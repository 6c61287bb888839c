"""acl_py.Context: an explicit aclrtContext, its lifetime (close, with, finalizer, teardown)
and bad input. The emulator counts live contexts (aclemuGetLiveObjects), so every path is
checked to destroy what it made, once."""
from __future__ import annotations

import gc
import threading

import pytest

import acl_py
from acl_py import AclArgumentError, AclTypeError, ClosedError
from acl_py.raw import ffi, lib


def live_contexts(emulator):
    return emulator.live_objects()["contexts"]


def current_context():
    out = ffi.new("aclrtContext *")
    assert lib.aclrtGetCurrentContext(out) == 0
    return out[0]


def test_create_close_and_the_handle(emulator):
    acl_py.Device(0).use()
    before, current = live_contexts(emulator), current_context()
    ctx = acl_py.Context(0)
    assert live_contexts(emulator) == before + 1
    assert ctx.handle != ffi.NULL and ctx.handle != current
    assert ctx.device == acl_py.Device(0) and not ctx.closed
    # CANN's create makes the new context current; acl-py puts the thread's back
    assert current_context() == current
    ctx.close()
    assert live_contexts(emulator) == before and ctx.closed
    ctx.close()                                     # a second close does nothing
    with pytest.raises(ClosedError):
        ctx.handle
    with pytest.raises(ClosedError):
        ctx.set_current()
    assert "closed" in repr(ctx)


def test_set_current_is_for_c_calls_and_acl_py_returns_to_the_default(emulator):
    acl_py.Device(0).use()
    default = current_context()
    with acl_py.Context() as ctx:
        ctx.set_current()
        assert current_context() == ctx.handle
        # a C call runs in it: a stream made now belongs to ctx
        s = ffi.new("aclrtStream *")
        assert lib.aclrtCreateStream(s) == 0
        assert lib.aclrtDestroyStream(s[0]) == 0
        with acl_py.DeviceBuffer(16):                # acl-py's next call: the default again
            assert current_context() == default
    assert ctx.closed


def test_with_closes_on_an_exception(emulator):
    before = live_contexts(emulator)
    with pytest.raises(KeyError):
        with acl_py.Context(0):
            raise KeyError("x")
    assert live_contexts(emulator) == before


def test_the_finalizer_destroys_an_unreferenced_context(emulator):
    before = live_contexts(emulator)
    ctx = acl_py.Context(0)
    assert live_contexts(emulator) == before + 1
    del ctx
    gc.collect()
    assert live_contexts(emulator) == before


def test_closing_the_current_context_leaves_acl_py_working(emulator):
    ctx = acl_py.Context(0)
    ctx.set_current()
    ctx.close()                       # CANN leaves no context current on this thread
    with acl_py.DeviceBuffer(8) as b:
        b.copy_from_host(bytes(range(8)))
        assert bytes(b.copy_to_host()) == bytes(range(8))


def test_a_context_closed_on_another_thread(emulator):
    before = live_contexts(emulator)
    ctx = acl_py.Context(0)
    t = threading.Thread(target=ctx.close)
    t.start()
    t.join()
    assert ctx.closed and live_contexts(emulator) == before


@pytest.mark.parametrize("device,error", [(-1, AclArgumentError), (64, AclArgumentError),
                                          ("0", AclTypeError), (1.0, AclTypeError),
                                          (True, AclTypeError)])
def test_bad_device(emulator, device, error):
    before = live_contexts(emulator)
    with pytest.raises(error) as e:
        acl_py.Context(device)
    assert e.value.argument == "device"
    assert live_contexts(emulator) == before


def test_a_refused_create_raises_its_status_and_leaks_nothing(emulator):
    before = live_contexts(emulator)
    emulator.set_faults("aclrtCreateContext:1")
    try:
        with pytest.raises(acl_py.DeviceMemoryError) as e:
            acl_py.Context(0)
    finally:
        emulator.set_faults(None)
    assert e.value.code == 207001 and e.value.call == "aclrtCreateContext"
    assert live_contexts(emulator) == before


def test_a_refused_destroy_keeps_the_context_for_a_retry(emulator):
    before = live_contexts(emulator)
    ctx = acl_py.Context(0)
    emulator.set_faults("aclrtDestroyContext:1")
    try:
        with pytest.raises(acl_py.AclError) as e:
            ctx.close()
    finally:
        emulator.set_faults(None)
    assert e.value.call == "aclrtDestroyContext" and not ctx.closed
    ctx.close()
    assert ctx.closed and live_contexts(emulator) == before


def test_teardown_destroys_open_contexts_before_the_devices(run_python):
    r = run_python("""
        import acl_py
        from acl_py import emulator
        ctx = acl_py.Context(0)
        s = acl_py.Stream()
        print(emulator.live_objects()["contexts"])
        acl_py.finalize()
        print(acl_py.runtime.last_teardown_errors)
        try:
            ctx.handle
        except acl_py.FinalizedError:
            print("FinalizedError")
        ctx.close()                  # after the teardown: nothing left to do
        acl_py.init()
        print(emulator.live_objects()["contexts"])
        acl_py.finalize()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == ["1", "[]", "FinalizedError", "0"], r.stdout
