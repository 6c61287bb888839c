"""Status checks of raw C calls for the emulator's tests: the status returned and the thread's
message (aclGetRecentErrMsg), which must name the call."""
from __future__ import annotations

from acl_py.raw import ffi, lib


def errmsg():
    p = lib.aclGetRecentErrMsg()
    return None if p == ffi.NULL else ffi.string(p).decode()


def expect(rc, code, call, *words):
    """rc must be `code`, and the thread's message must name `call` and contain `words`."""
    msg = errmsg()
    assert rc == code, f"{call}: expected {code}, got {rc} ({msg})"
    assert msg is not None and msg.startswith(call + ":"), msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


def ok(rc, call="call"):
    assert rc == 0, f"{call} returned {rc}: {errmsg()}"
