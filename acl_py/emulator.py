"""Emulator-only helpers (the ``aclemu*`` API of ``aclemu/aclemu.h``). Each raises
:class:`acl_py.errors.EmulatorOnlyError` when the backend is real CANN."""
from __future__ import annotations

import contextlib

from ._ffi import ffi
from .errors import AclArgumentError, AclTypeError, EmulatorOnlyError, check

LIVE_KEYS = ("device_allocations", "host_allocations", "tensors", "int_arrays", "bool_arrays",
             "executors", "streams", "events", "contexts", "device_bytes", "scalars",
             "float_arrays", "tensor_lists", "scalar_lists", "data_buffers",
             "notifies", "host_registrations")


def _lib():
    from ._loader import library
    L = library()
    if not L.backend.is_emulator:
        raise EmulatorOnlyError(
            f"acl_py.emulator needs the emulator backend; the active backend is "
            f"{L.backend.name} ({L.backend.reason})")
    return L


def is_active():
    """True when the emulator is the active backend (opens the libraries)."""
    from ._loader import library
    return library().backend.is_emulator


def prefix():
    """The emulator's install prefix (``<prefix>/lib64``, ``<prefix>/include``)."""
    return _lib().backend.root


def version():
    return ffi.string(_lib().aclemuVersion()).decode()


def live_objects():
    """Live counts by kind: device_allocations, host_allocations, tensors, int_arrays,
    bool_arrays, executors, streams, events, contexts, device_bytes, scalars, float_arrays,
    tensor_lists, scalar_lists (a list's elements count as tensors/scalars), data_buffers, notifies,
    host_registrations (aclrtHostRegister / V2 ranges not unregistered)."""
    L = _lib()
    out = ffi.new("aclemuLiveObjects *")
    check(L.aclemuGetLiveObjects(out), "aclemuGetLiveObjects")
    return {k: int(getattr(out, k)) for k in LIVE_KEYS}


def _spec(spec):
    if spec is None:
        return ""
    if isinstance(spec, str):
        return spec
    items = spec.items() if isinstance(spec, dict) else spec
    parts = []
    try:
        for name, n in items:
            parts.append(f"{name}:{int(n)}")
    except (TypeError, ValueError):
        raise AclTypeError("spec", "expected 'name:n,...', a dict {name: n} or pairs") from None
    return ",".join(parts)


def set_faults(spec):
    """Arms fault injection: the n-th call (counted from now) of each named function fails
    with its documented status. ``spec``: "aclrtMalloc:3,aclCreateTensor:1", a dict or pairs;
    None or "" clears. Resets the call counters."""
    L = _lib()
    text = _spec(spec)
    st = L.aclemuSetFaults(text.encode() if text else ffi.NULL)
    if st:
        raise AclArgumentError("spec", f"malformed fault spec {text!r} (status {st})")


@contextlib.contextmanager
def inject_faults(spec):
    """``with inject_faults("aclrtMalloc:1"): ...``: faults armed inside, cleared after."""
    set_faults(spec)
    try:
        yield
    finally:
        set_faults(None)


def call_counts():
    """{function name: calls since the last set_faults / reset_call_counts}."""
    L = _lib()
    n = L.aclemuGetCallCounts(ffi.NULL, 0)
    buf = ffi.new("char[]", n + 1)
    L.aclemuGetCallCounts(buf, n + 1)
    text = ffi.string(buf).decode()
    out = {}
    for item in filter(None, text.split(",")):
        name, _, count = item.rpartition(":")
        out[name] = int(count)
    return out


def reset_call_counts():
    _lib().aclemuResetCallCounts()


def set_num_threads(n):
    """Kernel threads (n < 1 restores the default). Results never depend on it."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise AclTypeError("n", f"expected an int, got {n!r}")
    _lib().aclemuSetNumThreads(n)


def num_threads():
    return int(_lib().aclemuGetNumThreads())


__all__ = ["is_active", "prefix", "version", "live_objects", "set_faults", "inject_faults",
           "call_counts", "reset_call_counts", "set_num_threads", "num_threads", "LIVE_KEYS"]
