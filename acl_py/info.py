"""What ``acl-py info`` reports: the backend and why it was chosen, the libraries actually
opened (and the NPU driver's, named when it is the toolkit's stub), the variables the loader
set, the runtime package's version (``aclsysGetVersionStr``, or why it is unknown), the part
(SoC), the devices, their memory and who uses it (``aclrtGetMemUsageInfo``; a device that
cannot be opened with its error, the others still probed), which device each is (its machine
id, PCI bus id and UUID, where the part has them), with two devices or more which can access
which (``aclrtDeviceCanAccessPeer``: the P2P links) and how they are linked
(``aclrtGetDevicesTopo``), and which machine device each device id is when
``ASCEND_RT_VISIBLE_DEVICES`` is set.

:func:`collect` returns a plain dict (the ``--json`` form); :func:`format_text` renders it for a
person. Collecting initializes the runtime only if nobody has, and then finalizes it again, so
calling it leaves the process as it found it. Devices are probed on a short-lived thread of
their own: the current device is per thread in CANN, so the caller's current device and the
devices' reference counts are untouched.
"""
from __future__ import annotations

import os
import platform
import threading
from pathlib import Path

from . import _loader
from ._ffi import LIBRARY_OF, ffi
from . import errors
from . import runtime as _rt
from .device import (read_memory_usage, read_pci_bus_id, read_physical_id, read_topology,
                     read_uuid)
from ._units import human_size
from .soc import cann_attributes, soc_name, supports_bfloat16
from .install import cann_version

# aclrtGetMemInfo attributes tried per device: HBM (Atlas training parts) first, then DDR
# (inference parts, which have no HBM and report a zero total for it).
_MEMORY_ATTRS = (("HBM", "ACL_HBM_MEM"), ("DDR", "ACL_DDR_MEM"))


# The runtime's device remapping: device i of the process is the machine's device ids[i]
# (hicann/runtime src/runtime/core/src/runtime.cc, GetVisibleDevices and SplitString).
VISIBLE_DEVICES = "ASCEND_RT_VISIBLE_DEVICES"


def visible_devices(value: str | None = None) -> list[int] | None:
    """The machine's device ids that ``ASCEND_RT_VISIBLE_DEVICES`` (default: the environment's)
    makes the process's devices 0, 1, ..., read as the vendor's runtime reads it: digit runs
    separated by single commas from the first character on, up to anything else. None when
    the variable is unset. The runtime also drops the ids from the first one past the
    machine's last device, and refuses (aclrtGetDeviceCount fails) an empty list, ids out of
    ascending order or repeated; the process's device count says how many were kept."""
    if value is None:
        value = os.environ.get(VISIBLE_DEVICES)
        if value is None:
            return None
    ids: list[int] = []
    for token in value.split(","):
        digits = token[:len(token) - len(token.lstrip("0123456789"))]
        if not digits:
            break                     # empty (",,", a leading ",") or not a number
        ids.append(int(digits))
        if digits != token:
            break                     # "2;3": the run ends at the first other character
    return ids


def visible_note(count: int | None) -> str | None:
    """What ``ASCEND_RT_VISIBLE_DEVICES`` does to this process's device ids (None: unset),
    for ``info`` and ``smoke``: which machine device each device id is, or why the runtime
    refuses the value."""
    value = os.environ.get(VISIBLE_DEVICES)
    if value is None:
        return None
    ids = visible_devices(value)
    setting = f"{VISIBLE_DEVICES}={value!r}"
    if ids and ids == sorted(set(ids)):
        pairs = ", ".join(f"{i} -> {d}" for i, d in enumerate(ids[:count] if count else ids))
        return f"{setting}: device ids here are the machine's {pairs}"
    return (f"{setting}: the runtime takes a comma-separated list of the machine's device "
            f"ids, ascending, each once (e.g. 0,3,5)")


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("acl-py")
    except Exception:  # running from a source tree that was never installed
        return "unknown"


def _probe_device(lib, device: int, missing=()) -> dict:
    """Memory of one device and who uses it, measured on the calling thread (set, query,
    reset)."""
    errors.check(lib.aclrtSetDevice(device), "aclrtSetDevice")
    try:
        entry: dict = {"id": device, "memory": _memory(lib)}
        usage = (None if "aclrtGetMemUsageInfo" in missing else
                 read_memory_usage(lib, device))
        entry["memory_usage"] = None if usage is None else [u._asdict() for u in usage]
        return entry
    finally:
        errors.check(lib.aclrtResetDevice(device), "aclrtResetDevice")


def _memory(lib) -> dict | None:
    """The current device's memory: the first kind with a total (see _MEMORY_ATTRS)."""
    free = ffi.new("size_t *")
    total = ffi.new("size_t *")
    last = None
    for label, attr in _MEMORY_ATTRS:
        status = lib.aclrtGetMemInfo(getattr(lib, attr), free, total)
        if status == 0 and total[0] > 0:
            return {"kind": label, "free": int(free[0]), "total": int(total[0])}
        last = errors.make_error(status, "aclrtGetMemInfo") if status else None
    if last is not None:
        raise last
    return None


def _on_own_thread(fn, *args):
    result: dict = {}

    def run():
        try:
            result["value"] = fn(*args)
        except BaseException as e:  # re-raised on the caller's thread
            result["error"] = e

    t = threading.Thread(target=run, name="acl-py-info")
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


# Which device it is: (field, the C function it needs, its reader). None where the part has
# no such id; not asked when the library lacks the function (an older CANN).
_IDENTITY = (("physical_id", "aclrtGetPhyDevIdByUserDevId", read_physical_id),
             ("pci_bus_id", "aclrtDeviceGetPCIBusId", read_pci_bus_id),
             ("uuid", "aclrtDeviceGetUuid", read_uuid))


def _identity(lib, device: int, missing) -> dict:
    """The device's ids (no device needs to be set for them); the first failure in
    ``identity_error`` (None when all answered)."""
    out: dict = {"identity_error": None}
    for field, function, read in _IDENTITY:
        out[field] = None
        if function in missing:
            continue
        try:
            value = read(lib, device)
        except errors.AclError as e:
            out["identity_error"] = out["identity_error"] or str(e)
            continue
        out[field] = None if value is None else value if isinstance(value, int) else str(value)
    return out


def _probe_or_report(lib, device: int, missing=()) -> dict:
    """One device's entry: its memory, or the error that kept it from being probed (a device
    another process holds, a failed one), so that the other devices are still reported; and
    its ids."""
    try:
        entry = _on_own_thread(_probe_device, lib, device, missing)
    except errors.AclError as e:
        entry = {"id": device, "memory": None, "memory_usage": None, "error": str(e)}
    entry.update(_identity(lib, device, missing))
    return entry


def _topology_matrix(lib, count: int) -> dict | None:
    """``{"matrix": rows, "error": first failure or None}``: ``rows[i][j]`` names how devices
    ``i`` and ``j`` are linked (``aclrtGetDevicesTopo``: ``"HCCS"``, ``"PIX"``, ...; the hex
    value for a bit acl-py does not name; None where the call failed). None with fewer than
    two devices."""
    if count < 2:
        return None
    rows: list[list[str | None]] = []
    first_error = None
    for i in range(count):
        row: list[str | None] = []
        for j in range(count):
            try:
                link = read_topology(lib, i, j)
            except errors.AclError as e:
                first_error = first_error or str(e)
                row.append(None)
                continue
            row.append(link.name if link.name else hex(int(link)))
        rows.append(row)
    return {"matrix": rows, "error": first_error}


def _peer_matrix(lib, count: int) -> dict | None:
    """``{"matrix": rows, "error": first failure or None}``: ``rows[i][j]`` is whether device
    ``i`` can access device ``j`` (``aclrtDeviceCanAccessPeer``; None on the diagonal and
    where the call failed). None with fewer than two devices."""
    if count < 2:
        return None
    out = ffi.new("int32_t *")
    rows: list[list[bool | None]] = []
    first_error = None
    for i in range(count):
        row: list[bool | None] = []
        for j in range(count):
            if i == j:
                row.append(None)
                continue
            status = lib.aclrtDeviceCanAccessPeer(out, i, j)
            if status:
                first_error = first_error or str(
                    errors.make_error(status, "aclrtDeviceCanAccessPeer"))
                row.append(None)
            else:
                row.append(bool(out[0]))
        rows.append(row)
    return {"matrix": rows, "error": first_error}


def _probe_runtime(lib, missing) -> tuple[int, list[dict], dict | None, dict | None]:
    status = lib.aclInit(ffi.NULL)
    # Already initialized (by acl_py's object layer or the caller): use it and leave it be.
    owned = status == 0
    if status not in (0, lib.ACL_ERROR_REPEAT_INITIALIZE):
        errors.raise_error(status, "aclInit")
    try:
        count = ffi.new("uint32_t *")
        errors.check(lib.aclrtGetDeviceCount(count), "aclrtGetDeviceCount")
        devices = [_probe_or_report(lib, d, missing) for d in range(count[0])]
        peers = (_peer_matrix(lib, count[0]) if "aclrtDeviceCanAccessPeer" not in missing
                 else None)
        topology = (_topology_matrix(lib, count[0]) if "aclrtGetDevicesTopo" not in missing
                    else None)
        return int(count[0]), devices, peers, topology
    finally:
        if owned:
            errors.check(lib.aclFinalize(), "aclFinalize")


def _runtime_version() -> dict:
    """The runtime package's version (aclsysGetVersionStr, no aclInit needed), or why not."""
    try:
        return {"runtime": cann_version("runtime"), "error": None}
    except errors.AclError as e:
        return {"runtime": None, "error": str(e)}


def _cann_attributes() -> dict:
    """The install's CANN attributes (aclGetCannAttributeList, no aclInit needed), or why
    not."""
    try:
        return {"available": list(cann_attributes()), "error": None}
    except errors.AclError as e:
        return {"available": None, "error": str(e)}


def collect() -> dict:
    """Everything ``info`` reports, as JSON-ready data. Raises
    :class:`acl_py._loader.LibraryNotFoundError` when no backend can be loaded; a runtime
    failure after loading is reported in the ``"error"`` field instead, so the library part
    is still shown."""
    lib = _loader.library()
    backend = lib.backend
    _roots, notes = _loader.search_roots()
    notes += [f"set {var}={value} (unset; set_env.sh's value)"
              for var, value in backend.environment.items()]
    info: dict = {
        "acl_py_version": _version(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "package_dir": str(Path(__file__).resolve().parent),
        "backend": backend.name,
        "reason": backend.reason,
        "root": str(backend.root),
        "libraries": {role: str(path) for role, path in backend.libraries.items()},
        "notes": notes,
        "functions": sum(1 for role in LIBRARY_OF.values() if role != "emulator"),
        "missing_symbols": lib.check_symbols(),
        "emulator": None,
        "cann_version": None,
        "soc": None,
        "bfloat16": None,
        "cann_attributes": None,
        "device_count": None,
        "devices": [],
        "peer_access": None,
        "topology": None,
        "error": None,
    }
    if backend.is_emulator:
        info["emulator"] = {
            "version": ffi.string(lib.aclemuVersion()).decode(),
            "threads": int(lib.aclemuGetNumThreads()),
            "environment": {k: v for k, v in sorted(os.environ.items())
                            if k.startswith("ACL_EMU_")},
        }
    try:
        # A forked child's runtime is its parent's copy: reported as the error, not probed
        _rt.refuse_if_forked("acl-py info (the runtime probe)")
        # aclrtGetSocName needs no aclInit (as the vendor's runtime): asked first, it still
        # answers when the runtime below cannot start
        if "aclsysGetVersionStr" not in info["missing_symbols"]:
            info["cann_version"] = _runtime_version()
        if "aclrtGetSocName" not in info["missing_symbols"]:
            info["soc"] = soc_name()
            info["bfloat16"] = supports_bfloat16(info["soc"])
        if "aclGetCannAttributeList" not in info["missing_symbols"]:
            info["cann_attributes"] = _cann_attributes()
        (info["device_count"], info["devices"], info["peer_access"],
         info["topology"]) = _probe_runtime(lib, set(info["missing_symbols"]))
    except errors.AclError as e:
        info["error"] = str(e)
    info["visible_devices"] = visible_note(info["device_count"])
    driver = _loader.mapped_driver_library()
    info["driver"] = None if driver is None else str(driver)
    stub = _loader.driver_stub_note()
    if stub is not None:
        info["notes"].append(stub)
    return info


def format_text(info: dict) -> str:
    lines = [f"acl-py {info['acl_py_version']} ({info['python']}, {info['package_dir']})",
             f"backend    {info['backend']}",
             f"  reason   {info['reason']}",
             f"root       {info['root']}",
             "libraries"]
    width = max(len(r) for r in info["libraries"])
    for role, path in info["libraries"].items():
        lines.append(f"  {role:<{width}}  {path}")
    if info.get("driver"):
        lines.append(f"driver     {info['driver']}")
    for note in info["notes"]:
        lines.append(f"note       {note}")
    missing = info["missing_symbols"]
    if missing:
        lines.append(f"symbols    MISSING {len(missing)} of {info['functions']}: "
                     + ", ".join(missing))
    else:
        lines.append(f"symbols    all {info['functions']} declared functions resolved")
    emu = info["emulator"]
    if emu is not None:
        env = " ".join(f"{k}={v}" for k, v in emu["environment"].items())
        lines.append(f"emulator   {emu['version']}, {emu['threads']} kernel threads"
                     + (f" ({env})" if env else ""))
    cann = info.get("cann_version")
    if cann is not None:
        lines.append(f"cann       runtime {cann['runtime']}" if cann["runtime"] else
                     f"cann       runtime version unknown: {cann['error']}")
    if info["soc"] is not None:
        lines.append(f"soc        {info['soc']} (BFLOAT16 "
                     f"{'supported' if info['bfloat16'] else 'not supported'})")
    attrs = info.get("cann_attributes")
    if attrs is not None:
        lines.append(f"attributes {', '.join(attrs['available']) or 'none'}"
                     if attrs["available"] is not None else
                     f"attributes unknown: {attrs['error']}")
    if info["device_count"] is not None:
        lines.append(f"devices    {info['device_count']}")
        for dev in info["devices"]:
            mem = dev["memory"]
            text = (f"ERROR {dev['error']}" if dev.get("error") else
                    "memory unknown" if mem is None else
                    f"{human_size(mem['total'])} {mem['kind']} total, "
                    f"{human_size(mem['free'])} free ({mem['free']} / {mem['total']} bytes)")
            lines.append(f"  device {dev['id']}  {text}")
            ids = format_identity(dev)
            if ids:
                lines.append(f"            {ids}")
            if dev.get("memory_usage"):
                lines.append("            in use: " + ", ".join(
                    f"{u['module']} {human_size(u['current'])} (peak {human_size(u['peak'])})"
                    for u in dev["memory_usage"]))
    peer = info.get("peer_access")
    if peer is not None:
        lines += format_peer_matrix(peer["matrix"])
        if peer["error"]:
            lines.append(f"  peer     ERROR {peer['error']}")
    topology = info.get("topology")
    if topology is not None:
        lines += format_topology(topology["matrix"])
        if topology["error"]:
            lines.append(f"  topology ERROR {topology['error']}")
    if info.get("visible_devices"):
        lines.append(f"visible    {info['visible_devices']}")
    if info["error"]:
        lines.append(f"error      {info['error']}")
    return "\n".join(lines)


def format_identity(dev: dict) -> str:
    """A device's ids on one line: machine id, PCI bus id, UUID (each where known), or why
    not."""
    parts = []
    if dev.get("physical_id") is not None:
        parts.append(f"machine device {dev['physical_id']}")
    if dev.get("pci_bus_id") is not None:
        parts.append(f"PCI {dev['pci_bus_id']}")
    if dev.get("uuid") is not None:
        parts.append(f"UUID {dev['uuid']}")
    if dev.get("identity_error"):
        parts.append(f"ERROR {dev['identity_error']}")
    return ", ".join(parts)


def format_topology(matrix: list) -> list[str]:
    """The topology matrix as text lines: how the row and column devices are linked
    (``?`` where the query failed)."""
    n = len(matrix)
    w = max(len(str(n - 1)), *(len(v) for row in matrix for v in row if v)) + 1
    lines = ["topology   how row and column are linked (aclrtGetDevicesTopo)",
             "  " + " " * 9 + "".join(f"{j:>{w}}" for j in range(n))]
    for i, row in enumerate(matrix):
        cells = "".join(f"{'?' if v is None else v:>{w}}" for v in row)
        lines.append(f"  device {i:<2}{cells}")
    return lines


def format_peer_matrix(matrix: list) -> list[str]:
    """The P2P matrix as text lines: row device can access column device (``y``/``n``,
    ``?`` where the query failed)."""
    n = len(matrix)
    w = max(2, len(str(n - 1)) + 1)
    lines = ["peer       row can access column (aclrtDeviceCanAccessPeer)",
             "  " + " " * 9 + "".join(f"{j:>{w}}" for j in range(n))]
    for i, row in enumerate(matrix):
        cells = "".join(f"{'-' if i == j else '?' if v is None else 'y' if v else 'n':>{w}}"
                        for j, v in enumerate(row))
        lines.append(f"  device {i:<2}{cells}")
    return lines


def ok(info: dict) -> bool:
    """True when the backend is fully usable: every symbol resolved, the runtime answered and
    every device could be probed."""
    return (not info["missing_symbols"] and info["error"] is None
            and not any(d.get("error") for d in info["devices"]))
