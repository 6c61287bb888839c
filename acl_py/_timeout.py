"""Timeouts for people: acl-py takes seconds (a float, like ``threading`` and ``subprocess``),
CANN's bounded waits take milliseconds in an ``int32_t``, -1 meaning no limit
(hicann/runtime include/external/acl/acl_rt.h, ``aclrtSynchronizeStreamWithTimeout``).

A wait made without a timeout (a ``synchronize()`` without one, and the waits acl-py makes on
its own: a synchronous copy's wait for the streams using its buffer, a pool's or the
allocator's wait before freeing, a stream's close) waits without a limit, unless a caller has
set one for the process with :func:`wait_limit` (``acl-py smoke --timeout`` does, so that no
wait of a smoke run can block for ever on a hung device). Past the limit such a wait raises
:class:`~acl_py.errors.AclTimeoutError` as a bounded wait would; a stream whose close timed
out is not destroyed (its work is still queued) and stays owned, so the close can be retried.
A synchronous ``aclrtMemcpy`` has no timeout in CANN: code that must not block queues its
copies on a stream instead.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

from .errors import AclArgumentError, AclTypeError

# The longest wait the C argument holds: 2**31 - 1 ms, about 24.8 days.
MAX_SECONDS = (2**31 - 1) / 1000


# CANN's timeout of the waits made without one: -1 (no limit) unless wait_limit() set one.
limit_ms = -1


@contextlib.contextmanager
def wait_limit(seconds: float | None) -> Iterator[None]:
    """Inside, every wait made without a timeout (see the module doc) waits at most
    ``seconds`` (None: no limit); the limit before is restored on the way out. The limit is
    the process's (the waits of every thread), for a command that owns the process, such as
    ``acl-py smoke``."""
    global limit_ms
    ms = to_milliseconds(seconds, "seconds") if seconds is not None else -1
    before, limit_ms = limit_ms, ms
    try:
        yield
    finally:
        limit_ms = before


def to_milliseconds(timeout: float | None, argument: str = "timeout") -> int:
    """CANN's timeout for ``timeout`` seconds: for None the limit of waits made without a
    timeout (-1, no limit, unless :func:`wait_limit` set one); else rounded up to whole
    milliseconds, at least 1 (CANN's runtime refuses 0, src/runtime/api/impl/api_error.cc), so
    a wait never ends before the time asked. Negative, non-finite or too long values raise
    AclArgumentError naming ``argument``; anything but a real number AclTypeError."""
    if timeout is None:
        return limit_ms
    seconds = _seconds(timeout, argument, MAX_SECONDS, "longest timeout")
    return max(1, math.ceil(seconds * 1000))


def _seconds(timeout: float, argument: str, maximum: float, longest: str) -> float:
    """``timeout`` as float seconds, checked: a real number (else AclTypeError), finite, >= 0
    and at most ``maximum`` (the runtime's ``longest``; else AclArgumentError), each naming
    ``argument``."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise AclTypeError(argument, f"expected seconds as a float (or None for no limit), got "
                           f"{type(timeout).__name__}")
    seconds = float(timeout)
    if not math.isfinite(seconds) or seconds < 0:
        raise AclArgumentError(argument, f"{timeout!r} seconds: a timeout is a finite number "
                               f"of seconds >= 0 (None waits without a limit)")
    if seconds > maximum:
        raise AclArgumentError(argument, f"{timeout!r} seconds is longer than the runtime's "
                               f"{longest}, {maximum} s (None waits without a limit)")
    return seconds


# A device-side wait's timeout (the task fails when it runs out): whole seconds, as CANN's
# aclrtStreamWaitEventWithTimeout (int32_t) and aclrtWaitAndResetNotify take them.
MAX_DEVICE_SECONDS = 2**31 - 1


def to_device_seconds(timeout: float | None, argument: str = "timeout") -> int:
    """CANN's device-side wait timeout for ``timeout`` seconds: 0 (no limit) for None; else
    rounded up to whole seconds, at least 1, so the wait never ends before the time asked.
    Negative, non-finite or too long values raise AclArgumentError naming ``argument``;
    anything but a real number AclTypeError."""
    if timeout is None:
        return 0
    seconds = _seconds(timeout, argument, MAX_DEVICE_SECONDS, "longest wait timeout")
    return max(1, math.ceil(seconds))
