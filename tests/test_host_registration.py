"""acl_py.HostRegistration: host memory registered with the runtime (aclrtHostRegisterV2,
aclrtHostGetDevicePointer, aclrtHostUnregister) as an RAII object: registered once,
unregistered exactly once (close, with, the garbage collector, the teardown), after the stream
work marked on it, before the memory it registers is freed; typed errors naming the argument,
nothing left registered by a failure."""
from __future__ import annotations

import gc
import mmap

import numpy as np
import pytest

import acl_py
from acl_py import HostRegisterFlag, HostRegistration
from acl_py.errors import AclArgumentError, AclError, AclTypeError, ClosedError
from acl_py.raw import ffi, lib

PAGE = 4096


def registrations(emulator):
    return emulator.live_objects()["host_registrations"]


def pages(n=2):
    """n pages of pageable memory, page aligned, as a NumPy array over an anonymous mapping."""
    return np.frombuffer(mmap.mmap(-1, n * PAGE), np.uint8)


def unregisters(emulator):
    return emulator.call_counts().get("aclrtHostUnregister", 0)


def test_a_registration_maps_the_memory_and_ends_once(emulator):
    before = registrations(emulator)
    memory = pages()
    emulator.reset_call_counts()
    r = HostRegistration(memory)
    assert registrations(emulator) == before + 1
    assert r.flags == HostRegisterFlag.MAPPED and r.nbytes == 2 * PAGE and not r.closed
    assert int(ffi.cast("uintptr_t", r.host_ptr)) == memory.ctypes.data
    p = ffi.new("void **")
    assert lib.aclrtHostGetDevicePointer(r.host_ptr, p, 0) == 0
    assert r.device_address == int(ffi.cast("uintptr_t", p[0]))
    assert int(r.device) == 0
    r.close()
    r.close()
    assert r.closed and registrations(emulator) == before
    assert unregisters(emulator) == 1
    for use in (lambda: r.device_ptr, lambda: r.host_ptr, lambda: r.allocation):
        with pytest.raises(ClosedError):
            use()
    assert "closed" in repr(r)
    # the range may be registered again once the registration ended
    with HostRegistration(memory) as again:
        assert registrations(emulator) == before + 1 and not again.closed
    assert again.closed and registrations(emulator) == before
    assert unregisters(emulator) == 2


def test_the_garbage_collector_ends_a_dropped_registration_once(emulator):
    before = registrations(emulator)
    emulator.reset_call_counts()
    HostRegistration(pages(), flags=HostRegisterFlag.MAPPED | HostRegisterFlag.PINNED)
    gc.collect()
    assert registrations(emulator) == before
    assert unregisters(emulator) == 1


def test_a_pinned_only_registration_has_no_device_address(emulator):
    with HostRegistration(pages(1), flags=HostRegisterFlag.PINNED) as r:
        with pytest.raises(AclArgumentError, match="without HostRegisterFlag.MAPPED") as e:
            r.device_ptr
        assert e.value.argument == "flags"


def test_bad_arguments_are_typed_errors_naming_them_and_register_nothing(emulator):
    before = registrations(emulator)
    emulator.reset_call_counts()
    cases = [
        (lambda: HostRegistration(np.zeros(PAGE + 8, np.uint8)[8:]), AclArgumentError,
         "memory", "not on a 4 KB page"),
        (lambda: HostRegistration(pages()[:0]), AclArgumentError, "memory", "empty"),
        (lambda: HostRegistration(bytes(PAGE)), AclTypeError, "memory", "writable"),
        (lambda: HostRegistration([1, 2]), AclTypeError, "memory", "list"),
        (lambda: HostRegistration(pages(), flags=0), AclArgumentError, "flags", "0x0"),
        (lambda: HostRegistration(pages(), flags=0x4), AclArgumentError, "flags", "0x4"),
        (lambda: HostRegistration(pages(), flags=True), AclTypeError, "flags", "bool"),
        (lambda: HostRegistration(pages(), flags="MAPPED"), AclTypeError, "flags", "str"),
        (lambda: HostRegistration(pages(), device=99), AclArgumentError, "device", "99"),
    ]
    for make, kind, argument, words in cases:
        with pytest.raises(kind, match=words) as e:
            make()
        assert e.value.argument == argument
    assert registrations(emulator) == before
    assert emulator.call_counts().get("aclrtHostRegisterV2", 0) == 0


def test_an_overlapping_registration_is_refused_naming_memory(emulator):
    memory = pages(4)
    before = registrations(emulator)
    with HostRegistration(memory[PAGE:3 * PAGE]) as first:
        with pytest.raises(AclArgumentError, match="overlaps host memory registered") as e:
            HostRegistration(memory[2 * PAGE:])
        assert e.value.argument == "memory" and e.value.code == 507910
        assert e.value.call == "aclrtHostRegisterV2"
        assert isinstance(e.value.__cause__, AclError)
        assert registrations(emulator) == before + 1 and not first.closed
        first.device_ptr    # intact
    assert registrations(emulator) == before


def test_a_host_buffer_is_registered_mapped_and_outlives_its_close(emulator):
    host_before = emulator.live_objects()["host_allocations"]
    buf = acl_py.HostBuffer(2 * PAGE)
    with pytest.raises(AclArgumentError, match="pinned already") as e:
        HostRegistration(buf, flags=HostRegisterFlag.PINNED)
    assert e.value.argument == "flags"
    r = HostRegistration(buf)
    assert int(ffi.cast("uintptr_t", r.host_ptr)) == buf.address
    buf.close()     # registered: its memory stays until the registration ends
    assert emulator.live_objects()["host_allocations"] == host_before + 1
    r.close()
    assert emulator.live_objects()["host_allocations"] == host_before
    closed = acl_py.HostBuffer(PAGE)
    closed.close()
    with pytest.raises(ClosedError):
        HostRegistration(closed)


def test_the_unregistration_waits_for_the_stream_work_marked_on_it(emulator):
    before = registrations(emulator)
    with acl_py.Stream() as stream:
        r = HostRegistration(pages())
        word = acl_py.DeviceBuffer(8)
        emulator.set_faults("aclrtMemsetAsync:1:hang")   # work that is still running
        word.memset(0, stream=stream)
        assert stream.mark_used(r) > 0
        r.close()
        assert r.closed and registrations(emulator) == before + 1
        emulator.set_faults(None)                         # releases the hang
        stream.synchronize()
        assert registrations(emulator) == before
        word.close()


def test_failures_leave_nothing_registered_and_a_failed_end_is_retried_once(emulator):
    before = registrations(emulator)
    with emulator.inject_faults("aclrtHostRegisterV2:1"):
        with pytest.raises(AclError) as e:
            HostRegistration(pages())
        assert e.value.call == "aclrtHostRegisterV2"
    assert registrations(emulator) == before
    # the device address cannot be had: the registration is undone, once
    with emulator.inject_faults("aclrtHostGetDevicePointer:1"):
        with pytest.raises(AclError) as e:
            HostRegistration(pages())
        assert e.value.call == "aclrtHostGetDevicePointer"
        assert unregisters(emulator) == 1
    assert registrations(emulator) == before
    # a failed unregistration raises and leaves it registered; close() again ends it, once
    r = HostRegistration(pages())
    with emulator.inject_faults("aclrtHostUnregister:1"):
        with pytest.raises(AclError) as e:
            r.close()
        assert e.value.call == "aclrtHostUnregister"
        assert not r.closed and registrations(emulator) == before + 1
        r.close()
        assert r.closed and registrations(emulator) == before
        assert unregisters(emulator) == 2   # the failed call and the one that ended it
        r.close()
        assert unregisters(emulator) == 2


def test_the_teardown_ends_registrations_before_freeing_their_memory(run_python):
    r = run_python("""
        import mmap, numpy as np, acl_py
        from acl_py import emulator
        acl_py.init()
        buf = acl_py.HostBuffer(8192)
        keep = [acl_py.HostRegistration(buf), acl_py.HostRegistration(
            np.frombuffer(mmap.mmap(-1, 4096), np.uint8), flags=acl_py.HostRegisterFlag.PINNED)]
        print(emulator.live_objects()["host_registrations"])
        emulator.reset_call_counts()
        acl_py.finalize()
        counts = emulator.call_counts()
        print(counts.get("aclrtHostUnregister"), counts.get("aclrtFreeHost"))
        order = [name for name in counts if name in ("aclrtHostUnregister", "aclrtFreeHost")]
        print(order)
        print(all(k.closed for k in keep))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["2", "2 1", "['aclrtHostUnregister', 'aclrtFreeHost']",
                                     "True"]
