"""Raw runtime objects for the emulator's tests: the live counts (aclemuGetLiveObjects), the
body of a fixture that sets device 0 and checks the counts after the test, and the fixtures
``dev``, ``events`` and ``streams`` of the raw event tests (a module imports them)."""
from __future__ import annotations

import pytest

from acl_py.raw import ffi, lib

from _emu_status import ok


def live_objects(*kinds):
    """The emulator's live counts of ``kinds`` (aclemuLiveObjects fields), as a tuple."""
    out = ffi.new("aclemuLiveObjects *")
    ok(lib.aclemuGetLiveObjects(out))
    return tuple(getattr(out, k) for k in kinds)


def allocated_bytes(size, exact_policy=False):
    """The bytes an ``aclrtMalloc`` of ``size`` gives on this part: CANN's runtime adds 32 and
    the part's padding (32; none on Ascend 950 or for the 1 GiB huge-page policies,
    ``exact_policy``) and rounds down to 32 (hicann/runtime src/acl/aclrt_impl/memory.cpp
    GetAlignedAndPaddingSize). A device's kernels and copies may use all of them."""
    soc = ffi.string(lib.aclrtGetSocName()).decode()
    padding = 0 if exact_policy or soc.startswith("Ascend950") else 32
    return (size + 32 + padding - 1) // 32 * 32


def device_zero(live, leaked, synchronize=True):
    """A fixture's body: device 0 set for the test and reset after it; ``live()`` (the counts
    the test must leave as it found them) is the same after as before (``leaked`` says
    otherwise), once the device has synchronized if ``synchronize``."""
    ok(lib.aclrtSetDevice(0), "aclrtSetDevice")
    before = live()
    yield 0
    if synchronize:
        lib.aclrtSynchronizeDevice()
    assert live() == before, leaked
    ok(lib.aclrtResetDevice(0), "aclrtResetDevice")


RUNTIME_OBJECTS = ("device_allocations", "streams", "events", "notifies")


@pytest.fixture
def dev():
    """Device 0 for the test; the RUNTIME_OBJECTS it made must be gone after it."""
    yield from device_zero(lambda: live_objects(*RUNTIME_OBJECTS),
                           "runtime objects leaked by the test")


@pytest.fixture
def events(dev):
    """events(flag=None, ex=False) -> a new event of aclrtCreateEventWithFlag (ex:
    aclrtCreateEventExWithFlag), or of aclrtCreateEvent for flag None; destroyed after the
    test, once the device has synchronized."""
    made = []

    def make(flag=None, ex=False):
        p = ffi.new("aclrtEvent *")
        if flag is None:
            ok(lib.aclrtCreateEvent(p), "aclrtCreateEvent")
        elif ex:
            ok(lib.aclrtCreateEventExWithFlag(p, flag), "aclrtCreateEventExWithFlag")
        else:
            ok(lib.aclrtCreateEventWithFlag(p, flag), "aclrtCreateEventWithFlag")
        made.append(p[0])
        return p[0]
    yield make
    lib.aclrtSynchronizeDevice()
    for e in made:
        ok(lib.aclrtDestroyEvent(e), "aclrtDestroyEvent")


@pytest.fixture
def streams(dev):
    """streams() -> a new stream, synchronized and destroyed after the test (a failed wait's
    status is the test's, not the synchronize's)."""
    made = []

    def make():
        p = ffi.new("aclrtStream *")
        ok(lib.aclrtCreateStream(p))
        made.append(p[0])
        return p[0]
    yield make
    for s in made:
        lib.aclrtSynchronizeStream(s)
        ok(lib.aclrtDestroyStream(s), "aclrtDestroyStream")
