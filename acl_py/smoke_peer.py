"""The peer-copy part of ``acl-py smoke --devices LIST`` (two devices or more): for every pair
of the tested devices, whether each can access the other (``aclrtDeviceCanAccessPeer``),
then, where both can, peer access enabled both ways (as the vendor's sample,
hicann/runtime example/1_basic_features/device/2_device_P2P, does), a byte pattern copied
each way, queued on a stream of the source's device and on one of the destination's, read back
and compared, and peer access disabled again. A pair the server does not link is reported as
such (``no-link``), not as a failure: some servers link only the devices of one PCIe switch. A
pair whose enable, copy or comparison fails is a failure.

Every wait is bounded (:mod:`acl_py.smoke_wait`): the pattern's upload, the copy and the
read-back are queued on streams (``aclrtMemcpyAsync`` between two devices is a
``ACL_MEMCPY_DEVICE_TO_DEVICE`` copy like any other once peer access is enabled, on a stream of
the device current for the call: hicann/runtime docs/zh/dev_guide/02-01_data_copy.md and
05_multi_device_programming.md), never made by the synchronous ``aclrtMemcpy``, which CANN
cannot bound. A copy whose stream does not finish within ``--timeout`` is ``hung``: the device
of that stream is reported hung, its streams are left open (see ``smoke_wait.abandon``), and
the pairs with a hung device are not checked (``not-run``).

:func:`check_pairs` gives one :class:`PairResult` per pair; :func:`format_pairs` renders them,
``PairResult.to_json`` is the report's form.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from . import smoke_wait

QUICK_SIZES = (1 << 20,)                 # bytes copied each way
FULL_SIZES = (1 << 20, 16 << 20)
# The device whose stream runs the copy: the source's, the destination's.
MODES = ("src-stream", "dst-stream")


@dataclass
class PeerCopy:
    """One copy of the pattern between the pair's devices."""
    src: int
    dst: int
    nbytes: int
    mode: str               # "src-stream" or "dst-stream": the device whose stream copies
    ok: bool = False
    seconds: float = 0.0
    error: str | None = None
    hung_device: int | None = None  # a wait for this device's stream ran out of time

    @property
    def hung(self) -> bool:
        return self.hung_device is not None

    def to_json(self) -> dict:
        return {"src": self.src, "dst": self.dst, "bytes": self.nbytes, "mode": self.mode,
                "ok": self.ok, "seconds": self.seconds, "error": self.error,
                "hung": self.hung, "hung_device": self.hung_device}


@dataclass
class PairResult:
    """Devices ``a`` < ``b``: what each can access, the copies made, the verdict."""
    a: int
    b: int
    can_access: tuple[bool | None, bool | None] = (None, None)   # a -> b, b -> a
    copies: list[PeerCopy] = field(default_factory=list)
    error: str | None = None     # the check could not run to its end
    not_run: str | None = None   # why the pair was not checked (a device hung before)

    @property
    def hung_devices(self) -> list[int]:
        return sorted({c.hung_device for c in self.copies if c.hung_device is not None})

    @property
    def status(self) -> str:
        """``pass``, ``no-link`` (the server does not link them: reported, not a failure),
        ``fail``, ``hung`` (a copy did not finish within --timeout) or ``not-run``."""
        if self.not_run is not None:
            return "not-run"
        if self.hung_devices:
            return "hung"
        if self.error is not None or any(not c.ok for c in self.copies):
            return "fail"
        if not all(self.can_access):
            return "no-link"
        return "pass" if self.copies else "fail"

    @property
    def failed(self) -> bool:
        return self.status in ("fail", "hung")

    @property
    def seconds(self) -> float:
        return sum(c.seconds for c in self.copies)

    def to_json(self) -> dict:
        return {"devices": [self.a, self.b], "can_access": list(self.can_access),
                "status": self.status, "copies": [c.to_json() for c in self.copies],
                "error": self.error or self.not_run, "seconds": self.seconds,
                "hung_devices": self.hung_devices}


def _pattern(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def _copy_once(src: int, dst: int, nbytes: int, mode: str, seed: int) -> PeerCopy:
    """Copies a pattern from a buffer of ``src`` into one of ``dst`` on the stream ``mode``
    names and compares; every step queued on a stream and waited for within --timeout."""
    from .memory import DeviceBuffer
    from .stream import Stream
    rec = PeerCopy(src, dst, nbytes, mode)
    expected = _pattern(nbytes, seed)
    got = np.empty(nbytes, dtype=np.uint8)
    streams: dict[int, Stream] = {}
    buffers: list[DeviceBuffer] = []

    def wait(device: int) -> None:
        try:
            smoke_wait.synchronize(streams[device])
        except TimeoutError:
            rec.hung_device = device
            raise

    try:
        for device in (src, dst):
            streams[device] = Stream(device)
            buffers.append(DeviceBuffer(nbytes, device))
        a, b = buffers
        a.copy_from_host_async(expected, streams[src])
        b.memset(0, stream=streams[dst])
        wait(src)
        wait(dst)
        copier = src if mode == "src-stream" else dst
        t0 = time.perf_counter()
        b.copy_from(a, stream=streams[copier])
        wait(copier)
        rec.seconds = time.perf_counter() - t0
        b.copy_to_host_async(got, streams[dst])
        wait(dst)
        bad = np.flatnonzero(got != expected)
        if bad.size:
            rec.error = (f"{bad.size} of {nbytes} bytes differ after the copy (first at "
                         f"byte {int(bad[0])}: {int(got[bad[0]])}, expected "
                         f"{int(expected[bad[0]])})")
        else:
            rec.ok = True
    except Exception as e:  # noqa: BLE001 - a copy that fails is a finding
        rec.error = f"{type(e).__name__}: {e}"
    # Buffers a hung stream may still use are freed once it passes that work (never here);
    # its streams stay open: closing one waits for its work.
    notes, timed_out = smoke_wait.release([*buffers, *streams.values()], rec.hung)
    if notes:
        rec.ok = False
        rec.error = rec.error or notes[0]
    for obj in timed_out:
        if isinstance(obj, Stream):
            rec.hung_device = obj.state.device
    return rec


def check_pair(a: int, b: int, sizes: Sequence[int] = QUICK_SIZES) -> PairResult:
    """Checks devices ``a`` and ``b`` (see the module doc); leaves peer access as it found
    it (acl-py's record: only what this check enabled is disabled)."""
    from .device import Device
    res = PairResult(a, b)
    da, db = Device(a), Device(b)
    enabled = []
    try:
        res.can_access = (da.can_access_peer(b), db.can_access_peer(a))
        if not all(res.can_access):
            return res
        for dev, peer in ((da, b), (db, a)):
            if not dev.peer_access_enabled(peer):
                dev.enable_peer_access(peer)
                enabled.append((dev, peer))
        seed = a * 1000 + b
        for nbytes in sizes:
            for src, dst in ((a, b), (b, a)):
                for mode in MODES:
                    seed += 1
                    res.copies.append(_copy_once(src, dst, nbytes, mode, seed))
                    if res.copies[-1].hung:
                        return res  # later copies would queue behind the hung work
    except Exception as e:  # noqa: BLE001 - reported per pair
        res.error = f"{type(e).__name__}: {e}"
    finally:
        for dev, peer in enabled:
            try:
                dev.disable_peer_access(peer)
            except Exception as e:  # noqa: BLE001
                res.error = res.error or f"{type(e).__name__}: {e}"
    return res


def check_pairs(devices: Sequence[int], quick: bool = False) -> list[PairResult]:
    """:func:`check_pair` for every pair of ``devices`` (in order), on the calling thread; a
    pair with a device that hung in an earlier pair is not checked (``not-run``)."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    results: list[PairResult] = []
    hung: set[int] = set()
    for a, b in itertools.combinations(sorted(devices), 2):
        stuck = sorted(hung & {a, b})
        if stuck:
            results.append(PairResult(a, b, not_run=f"not checked: device "
                                      f"{stuck[0]} hung in an earlier peer copy"))
            continue
        results.append(check_pair(a, b, sizes))
        hung.update(results[-1].hung_devices)
    return results


def _yes(v: bool | None) -> str:
    return "?" if v is None else ("yes" if v else "no")


def format_pairs(results: Sequence[PairResult]) -> str:
    """The table: per pair, what each device can access, each direction's copies, the
    status, the time of the copies."""
    head = ("pair", "a->b access", "b->a access", "a->b copies", "b->a copies", "result",
            "time")
    rows = []
    for r in results:
        def way(src: int, dst: int) -> str:
            cs = [c for c in r.copies if c.src == src and c.dst == dst]
            if not cs:
                return "-"
            return f"{sum(c.ok for c in cs)}/{len(cs)} ok"
        t = r.seconds
        rows.append((f"{r.a}-{r.b}", _yes(r.can_access[0]), _yes(r.can_access[1]),
                     way(r.a, r.b), way(r.b, r.a), r.status,
                     (f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s") if r.copies else "-"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(head), line(["-" * w for w in widths])] + [line(row) for row in rows]
    for r in results:
        if r.error or r.not_run:
            out.append(f"  {r.a}-{r.b}: {r.error or r.not_run}")
        for c in r.copies:
            if c.error:
                out.append(f"  {c.src}->{c.dst} {c.mode} {c.nbytes} bytes: {c.error}")
    return "\n".join(out)
