"""How ``acl-py smoke`` waits for devices: never without a limit (``--timeout``), so that a hung
device is reported, not waited for.

* :func:`synchronize` is the smoke's one way to wait for a stream it queued work on (the case
  runners' and the peer copies'): bounded by :data:`wait_timeout`; an
  :class:`~acl_py.errors.AclTimeoutError` (a ``TimeoutError``) there makes the device hung.
* :func:`bounded` sets the same limit for the process's other waits while the smoke runs
  (``acl_py._timeout.wait_limit``): the waits acl-py makes on its own (a stream's close, the
  allocator giving back memory when a device is out of it, a pool emptying its cache, a
  synchronous copy's wait for the streams using its buffer) then end too.
* A synchronous ``aclrtMemcpy`` cannot be bounded (CANN has no timeout for it), so the smoke
  makes none: every copy is queued on a stream and waited for with :func:`synchronize`.
* :func:`abandon` keeps what a hung device still uses (its streams) alive and unclosed: their
  release would wait for the hung work. The process then exits without the runtime's teardown
  (``acl_py.smoke.run_smoke``). :func:`release` closes what a case or a peer copy made, and
  abandons its streams instead when their work hung.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

from . import _timeout

if TYPE_CHECKING:
    from .stream import Stream

# Seconds every wait may take (--timeout); None: no limit.
DEFAULT_TIMEOUT = 60.0
wait_timeout: float | None = DEFAULT_TIMEOUT

# Objects of a hung device: never closed nor collected (see abandon).
_abandoned: list = []


def synchronize(stream: Stream) -> None:
    """Waits for ``stream``'s work, at most :data:`wait_timeout` seconds."""
    stream.synchronize(timeout=wait_timeout)


@contextlib.contextmanager
def bounded(timeout: float | None) -> Iterator[None]:
    """Inside: :data:`wait_timeout` is ``timeout``, and so is the limit of every other wait
    of the process (restored on the way out)."""
    global wait_timeout
    before = wait_timeout
    wait_timeout = timeout
    try:
        with _timeout.wait_limit(timeout):
            yield
    finally:
        wait_timeout = before


def abandon(obj: object) -> None:
    """Keeps ``obj`` (a stream whose work hung) open until the process ends."""
    _abandoned.append(obj)


def release(objects: list, hung: bool) -> tuple[list[str], list]:
    """Closes ``objects`` (tensors, buffers, streams) in order; a stream is abandoned instead
    when ``hung`` (its work hung). Returns a note per close that failed, and the objects whose
    close ran out of time (their work hung; abandoned too). Releasing is part of a smoke
    check: a failure here would leak device memory in a real job."""
    from .stream import Stream
    notes: list[str] = []
    timed_out: list = []
    for obj in objects:
        if hung and isinstance(obj, Stream):
            abandon(obj)
            continue
        try:
            obj.close()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            if isinstance(e, TimeoutError):
                timed_out.append(obj)
                abandon(obj)
            notes.append(f"releasing a {type(obj).__name__} failed: {type(e).__name__}: {e}")
    return notes, timed_out
