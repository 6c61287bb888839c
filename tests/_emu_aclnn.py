"""Raw two-phase aclnn calls for the emulator's operator tests (the norm family's): phase one
with its workspace size and executor out-pointers, phase two on the arena's stream, the rstd
shape. (A file's tests on other parts: tests/_part_runs.py.)"""
from __future__ import annotations

from acl_py.raw import ffi, lib

from test_emulator_op import BF16, F16, F32, INVALID, NULLPTR, OK, last_msg, live

SOC = ffi.string(lib.aclrtGetSocName()).decode()


def phase_one(p1, *args, ws=True, ex=True):
    """``p1(*args, workspaceSize, executor)``: a view (anything with a ``handle``) passes its
    handle, None a NULL, a number itself; ``ws``/``ex`` False pass NULL out-pointers.
    Returns (status, workspace size or None, executor or None)."""
    wsp = ffi.new("uint64_t *", 99) if ws else ffi.NULL
    exp = ffi.new("aclOpExecutor **") if ex else ffi.NULL
    handles = [ffi.NULL if a is None else getattr(a, "handle", a) for a in args]
    rc = p1(*handles, wsp, exp)
    return rc, (wsp[0] if ws else None), (exp[0] if ex else None)


def refused_by(phase_one, call, args, code, *words, **kw):
    """``phase_one(*args, **kw)`` refuses with status ``code``, no executor, and a message
    that starts with ``call`` and holds every one of ``words``; returns the message."""
    rc, _, ex = phase_one(*args, **kw)
    msg = last_msg()
    assert rc == code, (rc, msg)
    assert ex == ffi.NULL
    assert msg.startswith(call + ": "), msg
    for w in words:
        assert w in msg, msg
    return msg


def refusal_check(call):
    """An operator's phase-one tests' ``expect(args, code, *words, **kw)``: ``args.call(**kw)``
    (the tests' argument set) is refused by ``call`` as :func:`refused_by` says."""
    def expect(args, code, *words, **kw):
        return refused_by(lambda: args.call(**kw), call, (), code, *words)
    return expect


def passes(args):
    """``args.call()`` (an operator test's argument set) passes phase one; the executor it
    made is destroyed. (Its workspace size is the workspace-size tests' to check.)"""
    rc, _, ex = args.call()
    assert rc == OK, (rc, last_msg())
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def run_phase_two(arena, p2, phase_one_result):
    """Phase one must have passed; phase two runs with a workspace of the size it reported
    (NULL when 0) on the arena's stream, synchronized; the workspace is freed after."""
    rc, ws, ex = phase_one_result
    assert rc == OK, (rc, last_msg())
    wsp = ffi.new("void **")
    if ws:
        assert lib.aclrtMalloc(wsp, ws, 0) == 0
    try:
        assert p2(wsp[0], ws, ex, arena.stream) == OK, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == 0
    finally:
        if ws:
            assert lib.aclrtFree(wsp[0]) == 0


def workspace_attempt(arena, p2, ex, ws, attempt):
    """Phase two of executor ``ex``, whose phase one reported ``ws`` (> 0) bytes, on the
    arena's stream: "null" (a NULL workspace) is refused 161001 and "short" (one byte short)
    161002, each releasing the executor and leaking nothing; "exact" runs, synchronized.
    Returns whether it ran (the caller then checks the numbers)."""
    wsp = arena.malloc(ws)
    before = live()
    if attempt == "exact":
        assert p2(wsp, ws, ex, arena.stream) == OK, last_msg()
        assert lib.aclrtSynchronizeStream(arena.stream) == OK
        return True
    if attempt == "null":
        assert p2(ffi.NULL, ws, ex, arena.stream) == NULLPTR
        assert "workspace is NULL" in last_msg()
    else:
        assert p2(wsp, ws - 1, ex, arena.stream) == INVALID
        assert "less than" in last_msg()
    after = live()
    assert after["executors"] == before["executors"] - 1
    assert after["device_bytes"] == before["device_bytes"]
    return False


def both_phases_without_a_device(p1, p2, args, stream, workspace=None):
    """Phase one of ``args`` (views) and its phase two on ``stream`` (a handle, or NULL), both
    on a new thread that never set a device; phase two gets ``workspace`` (device memory the
    caller allocated, at least phase one's size) with the reported size, or NULL and 0.
    Returns (phase one's status, workspace size, phase two's status or None when phase one
    failed, the thread's last message)."""
    import threading
    got = []

    def body():
        rc, ws, ex = phase_one(p1, *args)
        given = (workspace, ws) if workspace is not None else (ffi.NULL, 0)
        rc2 = p2(*given, ex, stream) if rc == OK else None
        got.append((rc, ws, rc2, last_msg()))
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return got[0]


def check_part_dtype_table(pairs, bf16_part, phase_one_of):
    """Phase one (``phase_one_of(x dtype, gamma dtype)`` -> its result) for the vendor's
    (x, gamma) ``pairs`` and four pairs outside them: it passes (the executor destroyed) for
    exactly the part's table (a part without BF16 has no BF16 pair, nor FLOAT16 x with float32
    gamma), else returns INVALID naming the part or gamma's dtype."""
    for xdt, gdt in pairs + [(F32, F16), (F32, BF16), (F16, BF16), (BF16, F16)]:
        in_table = (xdt, gdt) in pairs and (bf16_part or (BF16 not in (xdt, gdt) and
                                                          (xdt, gdt) != (F16, F32)))
        rc, _, ex = phase_one_of(xdt, gdt)
        assert (rc == OK) == in_table, (SOC, xdt, gdt, rc, last_msg())
        if rc == OK:
            assert lib.aclDestroyAclOpExecutor(ex) == OK
        else:
            msg = last_msg()
            assert rc == INVALID and ("not supported on" in msg or "gamma dtype" in msg), msg


def rstd_shape(shape, gdims):
    """rstd's shape: x's with its last ``gdims`` (gamma's) dimensions 1."""
    return tuple(shape[:len(shape) - gdims]) + (1,) * gdims

