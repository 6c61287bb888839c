"""Timeouts for people: acl-py takes seconds (a float, like ``threading`` and ``subprocess``),
CANN's bounded waits take milliseconds in an ``int32_t``, -1 meaning no limit
(hicann/runtime include/external/acl/acl_rt.h, ``aclrtSynchronizeStreamWithTimeout``)."""
from __future__ import annotations

import math

from .errors import AclArgumentError, AclTypeError

# The longest wait the C argument holds: 2**31 - 1 ms, about 24.8 days.
MAX_SECONDS = (2**31 - 1) / 1000


def to_milliseconds(timeout: float | None, argument: str = "timeout") -> int:
    """CANN's timeout for ``timeout`` seconds: -1 for None (no limit); else rounded up to whole
    milliseconds, at least 1 (CANN's runtime refuses 0, src/runtime/api/impl/api_error.cc), so
    a wait never ends before the time asked. Negative, non-finite or too long values raise
    AclArgumentError naming ``argument``; anything but a real number AclTypeError."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise AclTypeError(argument, f"expected seconds as a float (or None for no limit), got "
                           f"{type(timeout).__name__}")
    seconds = float(timeout)
    if not math.isfinite(seconds) or seconds < 0:
        raise AclArgumentError(argument, f"{timeout!r} seconds: a timeout is a finite number "
                               f"of seconds >= 0 (None waits without a limit)")
    if seconds > MAX_SECONDS:
        raise AclArgumentError(argument, f"{timeout!r} seconds is longer than the runtime's "
                               f"longest timeout, {MAX_SECONDS} s (None waits without a limit)")
    return max(1, math.ceil(seconds * 1000))
