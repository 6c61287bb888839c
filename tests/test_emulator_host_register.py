"""The emulator's host memory registration through the raw cffi binding, against
docs/emulator.md ("Host memory registration"): aclrtHostRegister, aclrtHostRegisterV2,
aclrtHostGetDevicePointer and aclrtHostUnregister, with the rules and codes of hicann/runtime
src/acl/aclrt_impl/memory.cpp, src/runtime/api/impl/api_error.cc, api_impl.cc and
core/src/common/register_memory.cc."""
from __future__ import annotations

import mmap

import pytest

from acl_py.raw import ffi, lib

from _emu_objects import device_zero, live_objects
from _emu_status import expect, ok

pytestmark = pytest.mark.skipif(not lib.backend.is_emulator,
                                reason="emulator-only: aclemuGetLiveObjects counts them")

INVALID_PARAM, PARAM_INVALID, CONTEXT_NULL, FEATURE_NOT_SUPPORT = 100000, 107000, 107002, 207000
ALREADY_REGISTERED, NOT_REGISTERED = 507910, 507911
MAPPED, IOMEMORY, READONLY, PINNED = 0x2, 0x4, 0x8, 0x10000000
PAGE = 4096


def live():
    return live_objects("host_registrations", "host_allocations", "device_allocations")


@pytest.fixture
def dev():
    yield from device_zero(live, "registrations or allocations leaked by the test",
                           synchronize=False)


@pytest.fixture
def pinned(dev):
    """pinned(nbytes) -> an aclrtMallocHost block (page aligned), freed after the test."""
    made = []

    def make(nbytes=4 * PAGE):
        p = ffi.new("void **")
        ok(lib.aclrtMallocHost(p, nbytes))
        assert int(ffi.cast("uintptr_t", p[0])) % PAGE == 0
        made.append(p[0])
        return p[0]
    yield make
    for p in made:
        ok(lib.aclrtFreeHost(p))


@pytest.fixture
def pageable():
    """4 pages of pageable memory (an anonymous mapping: page aligned), as a void *."""
    m = mmap.mmap(-1, 4 * PAGE)
    buf = ffi.from_buffer(m)
    yield ffi.cast("void *", buf)
    del buf
    m.close()


def at(p, offset):
    return ffi.cast("void *", int(ffi.cast("uintptr_t", p)) + offset)


def test_the_declarations_are_the_vendors():
    assert (lib.ACL_HOST_REG_MAPPED, lib.ACL_HOST_REG_IOMEMORY, lib.ACL_HOST_REG_READONLY,
            lib.ACL_HOST_REG_PINNED) == (MAPPED, IOMEMORY, READONLY, PINNED)
    assert (lib.ACL_HOST_REGISTER_MAPPED, lib.ACL_HOST_REGISTER_IOMEMORY,
            lib.ACL_HOST_REGISTER_READONLY) == (0, 4, 8)


def test_v2_mapped_gives_the_device_address_of_the_base(pinned):
    h = pinned()
    before = live()
    ok(lib.aclrtHostRegisterV2(h, 4 * PAGE, MAPPED))
    assert live()[0] == before[0] + 1
    d = ffi.new("void **")
    ok(lib.aclrtHostGetDevicePointer(h, d, 0))
    assert d[0] != ffi.NULL and d[0] == h      # the emulated device reads host memory
    # only the base address is looked up (register_memory.cc GetMappedDevicePointer)
    expect(lib.aclrtHostGetDevicePointer(at(h, PAGE), d, 0), PARAM_INVALID,
           "aclrtHostGetDevicePointer", "not the base address")
    expect(lib.aclrtHostUnregister(at(h, PAGE)), NOT_REGISTERED, "aclrtHostUnregister")
    ok(lib.aclrtHostUnregister(h))
    assert live() == before
    expect(lib.aclrtHostUnregister(h), NOT_REGISTERED, "aclrtHostUnregister",
           "not the base address of a registered host range")
    expect(lib.aclrtHostGetDevicePointer(h, d, 0), PARAM_INVALID, "aclrtHostGetDevicePointer")


def test_v1_registers_and_returns_the_device_address(pinned, pageable):
    for h in (pinned(), pageable):
        d = ffi.new("void **")
        ok(lib.aclrtHostRegister(h, 2 * PAGE, lib.ACL_HOST_REGISTER_MAPPED, d))
        assert d[0] == h
        g = ffi.new("void **")
        ok(lib.aclrtHostGetDevicePointer(h, g, 0))
        assert g[0] == d[0]
        ok(lib.aclrtHostUnregister(h))


def test_a_pinned_only_registration_has_no_device_address(pageable, dev):
    ok(lib.aclrtHostRegisterV2(pageable, 4 * PAGE, PINNED))
    expect(lib.aclrtHostGetDevicePointer(pageable, ffi.new("void **"), 0), PARAM_INVALID,
           "aclrtHostGetDevicePointer", "ACL_HOST_REG_MAPPED")
    ok(lib.aclrtHostUnregister(pageable))
    ok(lib.aclrtHostRegisterV2(pageable, 4 * PAGE, PINNED | MAPPED))
    ok(lib.aclrtHostGetDevicePointer(pageable, ffi.new("void **"), 0))
    ok(lib.aclrtHostUnregister(pageable))


def test_overlapping_ranges_are_refused(pinned):
    h = pinned(4 * PAGE)
    ok(lib.aclrtHostRegisterV2(h, 2 * PAGE, MAPPED))
    try:
        for p, n in ((h, 2 * PAGE), (h, PAGE), (at(h, PAGE), PAGE), (at(h, PAGE), 3 * PAGE)):
            expect(lib.aclrtHostRegisterV2(p, n, MAPPED), ALREADY_REGISTERED,
                   "aclrtHostRegisterV2", "overlaps a range registered already")
        expect(lib.aclrtHostRegister(h, PAGE, 0, ffi.new("void **")), ALREADY_REGISTERED,
               "aclrtHostRegister")
        ok(lib.aclrtHostRegisterV2(at(h, 2 * PAGE), 2 * PAGE, MAPPED))   # adjacent: fine
        ok(lib.aclrtHostUnregister(at(h, 2 * PAGE)))
    finally:
        ok(lib.aclrtHostUnregister(h))


def test_pinned_takes_pageable_memory_only(pinned):
    expect(lib.aclrtHostRegisterV2(pinned(), PAGE, PINNED), PARAM_INVALID,
           "aclrtHostRegisterV2", "ACL_HOST_REG_PINNED", "aclrtMallocHost")


def test_device_memory_and_unaligned_pointers_are_refused(pinned):
    d = ffi.new("void **")
    ok(lib.aclrtMalloc(d, 4 * PAGE, 0))
    try:
        expect(lib.aclrtHostRegisterV2(d[0], PAGE, MAPPED), PARAM_INVALID,
               "aclrtHostRegisterV2", "device memory")
        expect(lib.aclrtHostRegister(d[0], PAGE, 0, ffi.new("void **")), PARAM_INVALID,
               "aclrtHostRegister", "device memory")
    finally:
        ok(lib.aclrtFree(d[0]))
    expect(lib.aclrtHostRegisterV2(at(pinned(), 64), PAGE, MAPPED), PARAM_INVALID,
           "aclrtHostRegisterV2", "4 KB page aligned")


@pytest.mark.parametrize("flag", [0, 1, 0x10, 0x20000000, MAPPED | 0x100])
def test_v2_flags_outside_the_four_are_refused(pinned, flag):
    expect(lib.aclrtHostRegisterV2(pinned(), PAGE, flag), PARAM_INVALID,
           "aclrtHostRegisterV2", "is not an OR of ACL_HOST_REG_MAPPED")


def test_reserved_registrations_are_refused(pinned):
    h = pinned()
    for flag in (IOMEMORY, READONLY, MAPPED | READONLY):
        expect(lib.aclrtHostRegisterV2(h, PAGE, flag), FEATURE_NOT_SUPPORT,
               "aclrtHostRegisterV2", "reserved")
    for t in (IOMEMORY, READONLY):
        expect(lib.aclrtHostRegister(h, PAGE, t, ffi.new("void **")), FEATURE_NOT_SUPPORT,
               "aclrtHostRegister", "reserved")
    # bits the runtime does not know: its own code, 207000
    expect(lib.aclrtHostRegister(h, PAGE, 2, ffi.new("void **")), FEATURE_NOT_SUPPORT,
           "aclrtHostRegister", "type 2")


def test_null_arguments_and_zero_sizes(pinned):
    h, d = pinned(), ffi.new("void **")
    for fn, args, call, words in [
            (lib.aclrtHostRegister, (ffi.NULL, PAGE, 0, d), "aclrtHostRegister", "ptr is NULL"),
            (lib.aclrtHostRegister, (h, PAGE, 0, ffi.NULL), "aclrtHostRegister",
             "devPtr is NULL"),
            (lib.aclrtHostRegister, (h, 0, 0, d), "aclrtHostRegister", "size"),
            (lib.aclrtHostRegisterV2, (ffi.NULL, PAGE, MAPPED), "aclrtHostRegisterV2",
             "ptr is NULL"),
            (lib.aclrtHostRegisterV2, (h, 0, MAPPED), "aclrtHostRegisterV2", "size"),
            (lib.aclrtHostUnregister, (ffi.NULL,), "aclrtHostUnregister", "ptr is NULL"),
            (lib.aclrtHostGetDevicePointer, (ffi.NULL, d, 0), "aclrtHostGetDevicePointer",
             "pHost is NULL"),
            (lib.aclrtHostGetDevicePointer, (h, ffi.NULL, 0), "aclrtHostGetDevicePointer",
             "pDevice is NULL"),
            (lib.aclrtHostGetDevicePointer, (h, d, 1), "aclrtHostGetDevicePointer",
             "reserved")]:
        expect(fn(*args), INVALID_PARAM, call, words)


def test_each_call_needs_a_device_after_its_argument_checks(run_python):
    r = run_python("""
        import mmap
        from acl_py.raw import ffi, lib
        assert lib.aclInit(ffi.NULL) == 0
        m = mmap.mmap(-1, 4096)
        p = ffi.cast("void *", ffi.from_buffer(m))
        d = ffi.new("void **")
        print(lib.aclrtHostRegister(p, 4096, 0, d), lib.aclrtHostRegisterV2(p, 4096, 2),
              lib.aclrtHostGetDevicePointer(p, d, 0), lib.aclrtHostUnregister(p))
        print(lib.aclrtHostRegisterV2(p, 4096, 0), lib.aclrtHostGetDevicePointer(p, d, 1))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(CONTEXT_NULL)] * 4 + [str(PARAM_INVALID),
                                                         str(INVALID_PARAM)]


def test_finalize_drops_the_registrations(run_python):
    r = run_python("""
        from acl_py.raw import ffi, lib
        live = ffi.new("aclemuLiveObjects *")
        assert lib.aclInit(ffi.NULL) == 0 and lib.aclrtSetDevice(0) == 0
        p = ffi.new("void **")
        assert lib.aclrtMallocHost(p, 4096) == 0
        assert lib.aclrtHostRegisterV2(p[0], 4096, 2) == 0
        lib.aclemuGetLiveObjects(live)
        print(live.host_registrations)
        assert lib.aclFinalize() == 0
        lib.aclemuGetLiveObjects(live)
        print(live.host_registrations)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "0"]
