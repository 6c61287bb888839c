"""Devices: which one is current on each thread, and the per-device calls.

The current device is per thread, as in CANN. ``Device(i)`` as a context manager (or
``Device(i).use()``) makes ``i`` the calling thread's device for acl-py; objects created with
``device=None`` go to it (device 0 when the thread never chose one). Before any C call that
needs a device, acl-py makes the object's device current on the calling thread
(:func:`activate`: one ``aclrtSetDevice`` per change), so a finalizer or a stream can be used
from any thread. acl-py keeps every device it set until teardown, so the runtime never
destroys a device's streams under live objects; the teardown resets each as many times as
acl-py set it. Code mixing raw ``aclrtSetDevice`` calls with acl-py on one thread should know
that acl-py may change the thread's current device.

Peer access (P2P) between devices: ``Device(a).can_access_peer(b)`` asks the runtime whether
device ``a`` can reach device ``b``'s memory; ``Device(a).enable_peer_access(b)`` enables it,
one way, as CANN keeps it (per current device and peer); ``disable_peer_access`` undoes it.
acl-py keeps a record of what it enabled: enabling twice or disabling what it did not enable
does nothing, and the teardown disables what is still enabled before it resets the devices
(the vendor's sample disables before its resets). A device-to-device copy between two devices
(``DeviceBuffer.copy_from``, ``DeviceTensor.copy_to``) needs peer access between them; the
vendor's data-copy guide enables it on the destination for the source, the smoke enables both.

``Device.default_stream`` and ``Device.memory_pool`` are provided by the stream and memory
modules (:func:`provide`), which sit above this one.
"""
from __future__ import annotations

import enum
import operator
import threading
import uuid as _uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Union

from ._ffi import ffi
from ._integers import as_int
from . import _ordering
from . import runtime as _rt
from ._timeout import to_milliseconds
from .errors import AclArgumentError, AclTypeError, make_error

if TYPE_CHECKING:
    from .memory import MemoryPool
    from .stream import Stream

# What a ``device=`` argument takes: an id, a Device, or None for the current device.
DeviceLike = Union[int, "Device", None]

_set_counts: dict = {}  # device id -> aclrtSetDevice calls acl-py made this session
_device_count = None
# (device, peer) pairs whose peer access acl-py enabled this session, in order.
_peers_enabled: dict = {}


class _TLS(threading.local):
    dev: int | None = None      # device acl-py last made current on this thread (C level)
    user: int | None = None     # device the user chose for this thread (None: device 0)
    stack: list[int | None] | None = None    # Device context-manager stack


# This thread's devices. Read-only for other modules: a launch path may test
# ``thread_state.dev == device and runtime.ready`` before calling activate().
thread_state = _TLS()


def _set_device(dev):
    """Makes ``dev`` current on the calling thread (C level)."""
    L = _rt.ensure()
    st = L.aclrtSetDevice(dev)
    if st:
        raise make_error(st, "aclrtSetDevice")
    with _rt.lock:
        _set_counts[dev] = _set_counts.get(dev, 0) + 1
    thread_state.dev = dev


def activate(dev):
    """Ensures ``dev`` is the calling thread's current device before a C call needing one."""
    if thread_state.dev != dev or not _rt.ready:
        _set_device(dev)


@contextmanager
def restoring(dev=None):
    """Makes ``dev`` current (when given) for the block, and the calling thread's device of
    before current again after it, if the block switched it: a release the garbage collector
    runs inside another operation of the thread (at any allocation) must leave the
    operation's device as it found it, since the runtime refuses an enqueue on a stream of
    another device than the current one. For release paths (not timed)."""
    before = thread_state.dev
    if dev is not None:
        activate(dev)
    try:
        yield
    finally:
        if before is not None and thread_state.dev != before and _rt.ready:
            _set_device(before)


def current_device_id():
    d = thread_state.user
    return 0 if d is None else d


def device_count() -> int:
    """Number of devices the runtime sees."""
    global _device_count
    n = _device_count
    if n is None or not _rt.ready:
        L = _rt.ensure()
        p = ffi.new("uint32_t *")
        st = L.aclrtGetDeviceCount(p)
        if st:
            raise make_error(st, "aclrtGetDeviceCount")
        n = _device_count = int(p[0])
    return n


def _as_device_id(device, argument="device"):
    if device is None:
        return current_device_id()
    if isinstance(device, Device):
        return device.id
    if isinstance(device, bool):
        raise AclTypeError(argument, f"expected a device id (int) or Device, got {device!r}")
    try:
        dev = operator.index(device)
    except TypeError:
        raise AclTypeError(argument, f"expected a device id (int) or Device, got "
                           f"{type(device).__name__}") from None
    if dev < 0:
        raise AclArgumentError(argument, f"device id must be >= 0, got {dev}")
    n = device_count()
    if dev >= n:
        raise AclArgumentError(argument, f"device {dev} does not exist: the runtime sees "
                               f"{n} device(s), ids 0..{n - 1}")
    return dev


def resolve_device(device: DeviceLike, argument: str = "device") -> int:
    """Device id for a ``device=`` argument (None: the calling thread's current device)."""
    if device is None:
        d = thread_state.user
        return 0 if d is None else d
    return _as_device_id(device, argument)


class MemInfo(NamedTuple):
    """A device's memory, in bytes."""
    free: int
    total: int


class DeviceAttributes(NamedTuple):
    """What a device is (``aclrtGetDeviceInfo``): core counts, memory and L2 cache in bytes,
    NPU architecture (e.g. 2201: Atlas A2/A3). ``cube_cores`` is what the runtime's platform
    configuration says, which a cube limit (:meth:`Device.limit_cores`) rewrites; None on
    parts whose configuration has no count (Atlas training and inference series: their AI
    cores are their cube units)."""
    ai_cpu_cores: int
    ai_cores: int
    cube_cores: int | None
    vector_cores: int
    total_memory: int
    l2_cache_size: int
    npu_arch: int


# aclrtDevAttr of each DeviceAttributes field, in order (the vendor's acl_rt.h).
_ATTRIBUTE_CODES = (1, 101, 102, 201, 301, 302, 601)
_PARAM_INVALID = 107000   # ACL_ERROR_RT_PARAM_INVALID: the runtime refused an argument
_CUBE_CORE_NUM = 102      # ACL_DEV_ATTR_CUBE_CORE_NUM


class StreamPriorityRange(NamedTuple):
    """Stream priorities a device takes: ``greatest`` (the highest priority) is the smaller
    number."""
    least: int
    greatest: int


class Utilization(NamedTuple):
    """How busy a device is, in percent; None where the device does not measure it."""
    cube: int | None
    vector: int | None
    aicpu: int | None
    memory: int | None


class Topology(enum.IntFlag):
    """How two devices are linked (``aclrtGetDevicesTopo``, one bit): ``HCCS`` (Huawei's
    chip-to-chip links), ``PIX`` (one PCIe switch), ``PIB`` (reserved), ``PHB`` (through a
    CPU's PCIe host bridge), ``SYS`` (across NUMA nodes), ``SIO`` (the two dies of one chip),
    ``HCCS_SW`` (through an HCCS switch). A bit a newer driver adds keeps its value."""
    HCCS = 0x01
    PIX = 0x02
    PIB = 0x04
    PHB = 0x08
    SYS = 0x10
    SIO = 0x20
    HCCS_SW = 0x40


_NOT_SUPPORTED = 207000   # ACL_ERROR_RT_FEATURE_NOT_SUPPORT: the part has no such thing
_INVALID_DEVICE = 107001  # ACL_ERROR_RT_INVALID_DEVICEID


# The readers of what a device is, shared by Device's properties and ``acl-py info`` (which
# probes through the library without starting acl-py's runtime): ``lib`` is the loaded
# library, ``device`` a device id of the process. None where the part has no such id.

def read_uuid(lib, device: int) -> _uuid.UUID | None:
    """The device's UUID (``aclrtDeviceGetUuid``); None on parts without one (the Atlas
    training and inference series)."""
    out = ffi.new("aclrtUuid *")
    st = lib.aclrtDeviceGetUuid(device, out)
    if st == _NOT_SUPPORTED:
        return None
    if st:
        raise make_error(st, "aclrtDeviceGetUuid")
    return _uuid.UUID(bytes=bytes(ffi.buffer(out.bytes)))


def read_pci_bus_id(lib, device: int) -> str | None:
    """The device's PCI bus id, ``"dddd:bb:dd.f"`` (``aclrtDeviceGetPCIBusId``); None on parts
    without one (as for :func:`read_uuid`)."""
    out = ffi.new("char[16]")
    st = lib.aclrtDeviceGetPCIBusId(device, out, 16)
    if st == _NOT_SUPPORTED:
        return None
    if st:
        raise make_error(st, "aclrtDeviceGetPCIBusId")
    return ffi.string(out).decode("ascii", "replace")


def read_physical_id(lib, device: int) -> int:
    """The machine's (physical) id of the process's device ``device``
    (``aclrtGetPhyDevIdByUserDevId``): the same unless ``ASCEND_RT_VISIBLE_DEVICES``
    renumbers."""
    out = ffi.new("int32_t *")
    st = lib.aclrtGetPhyDevIdByUserDevId(device, out)
    if st:
        raise make_error(st, "aclrtGetPhyDevIdByUserDevId")
    return int(out[0])


def read_topology(lib, device: int, other: int) -> Topology:
    """How ``device`` and ``other`` are linked (``aclrtGetDevicesTopo``)."""
    out = ffi.new("uint64_t *")
    st = lib.aclrtGetDevicesTopo(device, other, out)
    if st:
        raise make_error(st, "aclrtGetDevicesTopo")
    return Topology(int(out[0]))


class MemoryUsage(NamedTuple):
    """One module's device memory (``aclrtGetMemUsageInfo``), in bytes: ``module`` is the
    driver's name for who allocated it (``"APP"``: the program's ``aclrtMalloc``)."""
    module: str
    current: int
    peak: int


# The driver's table holds this many modules (its header: the array passed must hold 128).
_MEMORY_MODULES = 128


def read_memory_usage(lib, device: int) -> list[MemoryUsage] | None:
    """Device ``device``'s memory per module, the largest first (``aclrtGetMemUsageInfo``:
    modules using none left out); None on parts that do not report it (Ascend 950). Needs a
    current device on the calling thread."""
    out = ffi.new("aclrtMemUsageInfo[]", _MEMORY_MODULES)
    n = ffi.new("size_t *")
    st = lib.aclrtGetMemUsageInfo(device, out, _MEMORY_MODULES, n)
    if st == _NOT_SUPPORTED:
        return None
    if st:
        raise make_error(st, "aclrtGetMemUsageInfo")
    return [MemoryUsage(ffi.string(out[i].name).decode("utf-8", "replace"),
                        int(out[i].curMemSize), int(out[i].memPeakSize))
            for i in range(min(int(n[0]), _MEMORY_MODULES))]


class CoreLimits(NamedTuple):
    """The cube (AI) and vector cores this process's work on a device may use."""
    cube: int
    vector: int

_device_objects: dict = {}
_providers: dict = {}


def provide(name, fn):
    """Registers ``fn(device_id)`` as the provider of ``Device.<name>`` (``default_stream``,
    ``memory_pool``): the modules owning those concepts import this one, not the reverse."""
    _providers[name] = fn


class Device:
    """A device id, usable as a context manager that makes it the calling thread's device::

        with acl_py.Device(1) as dev:
            t = acl_py.DeviceTensor.from_numpy(x)     # on device 1
            dev.synchronize()

    Stateless apart from the id (one object per id), so it stays valid across sessions."""

    __slots__ = ("id",)
    id: int

    def __new__(cls, device: DeviceLike = None) -> Device:
        if isinstance(device, Device):
            return device
        dev = _as_device_id(device)
        obj = _device_objects.get(dev)
        if obj is None:
            obj = object.__new__(cls)
            obj.id = dev
            obj = _device_objects.setdefault(dev, obj)
        return obj

    def use(self) -> Device:
        """Makes this device the calling thread's current device (without a ``with``)."""
        activate(self.id)
        thread_state.user = self.id
        return self

    def __enter__(self) -> Device:
        tls = thread_state
        if tls.stack is None:
            tls.stack = []
        tls.stack.append(tls.user)
        self.use()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        tls = thread_state
        prev = tls.stack.pop() if tls.stack else None
        tls.user = prev
        # Back on the previous device for C-level calls too (cheap when unchanged); a thread
        # that had none stays on this one (CANN has no "unset").
        if prev is not None and _rt.ready:
            activate(prev)
        return False

    def synchronize(self, timeout: float | None = None) -> None:
        """Waits for all work on every stream of this device (``aclrtSynchronizeDevice``) and
        runs the streams' deferred releases. ``timeout``: at most that many seconds for all
        the streams together (None: no limit, unless one is set for the process:
        ``acl_py._timeout.wait_limit``); past it
        :class:`~acl_py.errors.AclTimeoutError` is raised and nothing is released."""
        ms = to_milliseconds(timeout)
        L = _rt.ensure()
        activate(self.id)
        marks = _ordering.marks_of_device(self.id)
        if ms < 0:
            st = L.aclrtSynchronizeDevice()
            if st:
                raise make_error(st, "aclrtSynchronizeDevice")
        else:
            st = L.aclrtSynchronizeDeviceWithTimeout(ms)
            if st:
                raise make_error(st, "aclrtSynchronizeDeviceWithTimeout")
        errs = _ordering.complete_marks(marks)
        if errs:
            raise errs[0]

    @property
    def default_stream(self) -> Stream:
        """The device's default stream (the NULL stream)."""
        return _providers["default_stream"](self.id)

    @property
    def memory_pool(self) -> MemoryPool:
        """The device's default :class:`MemoryPool` (tensor storage, workspaces)."""
        return _providers["memory_pool"](self.id)

    # ---- peer access ----

    def _peer(self, peer):
        """The id of a ``peer`` argument: another device."""
        p = _as_device_id(peer, "peer")
        if p == self.id:
            raise AclArgumentError("peer", f"device {p} is this device: a device is not its "
                                   f"own peer")
        return p

    def can_access_peer(self, peer: DeviceLike) -> bool:
        """Whether this device can access ``peer``'s memory (``aclrtDeviceCanAccessPeer``):
        the server's links decide; on some servers only devices of one PCIe switch can."""
        p = self._peer(peer)
        L = _rt.ensure()
        out = ffi.new("int32_t *")
        st = L.aclrtDeviceCanAccessPeer(out, self.id, p)
        if st:
            raise make_error(st, "aclrtDeviceCanAccessPeer")
        return bool(out[0])

    def enable_peer_access(self, peer: DeviceLike) -> None:
        """Enables this device's access to ``peer`` (``aclrtDeviceEnablePeerAccess`` with
        this device current), one way; for copies both ways enable it on each device. Does
        nothing if acl-py enabled it already. A pair without a link raises the runtime's
        error (:class:`NotSupportedError` on the emulator)."""
        p = self._peer(peer)
        key = (self.id, p)
        if key in _peers_enabled:
            return
        L = _rt.ensure()
        with restoring(self.id):
            st = L.aclrtDeviceEnablePeerAccess(p, 0)
            if st:
                raise make_error(st, "aclrtDeviceEnablePeerAccess")
        with _rt.lock:
            _peers_enabled[key] = True

    def disable_peer_access(self, peer: DeviceLike) -> None:
        """Disables what :meth:`enable_peer_access` enabled (``aclrtDeviceDisablePeerAccess``
        with this device current); does nothing if acl-py has not enabled it. Copies already
        queued on a stream are not affected; later copies between the two devices need
        access the other way, or enabling again."""
        p = self._peer(peer)
        key = (self.id, p)
        if key not in _peers_enabled:
            return
        L = _rt.ensure()
        with restoring(self.id):
            st = L.aclrtDeviceDisablePeerAccess(p)
            if st:
                raise make_error(st, "aclrtDeviceDisablePeerAccess")
        with _rt.lock:
            _peers_enabled.pop(key, None)

    def peer_access_enabled(self, peer: DeviceLike) -> bool:
        """Whether acl-py has enabled this device's access to ``peer`` (its own record: access
        enabled through raw C calls is not seen)."""
        return (self.id, self._peer(peer)) in _peers_enabled

    # ---- what the device is (aclrtGetDeviceInfo and friends) ----

    @property
    def attributes(self) -> DeviceAttributes:
        """The device's figures (``aclrtGetDeviceInfo``): core counts, memory, L2 cache, NPU
        architecture. A real device reports its own; the emulator, its part's
        (``ACL_EMU_SOC``), from the vendor's platform configuration (docs/emulator.md)."""
        L = _rt.ensure()
        out = ffi.new("int64_t *")

        def get(attr):
            st = L.aclrtGetDeviceInfo(self.id, attr, out)
            if st == _PARAM_INVALID and attr == _CUBE_CORE_NUM:
                return None     # the part's configuration has no cube core count
            if st:
                raise make_error(st, "aclrtGetDeviceInfo")
            return int(out[0])
        return DeviceAttributes(*(get(a) for a in _ATTRIBUTE_CODES))

    @property
    def status(self) -> Literal["normal", "abnormal"]:
        """``"normal"``, or ``"abnormal"`` once the runtime's watchdog saw the device fail
        (``aclrtQueryDeviceStatus``)."""
        L = _rt.ensure()
        out = ffi.new("aclrtDeviceStatus *")
        st = L.aclrtQueryDeviceStatus(self.id, out)
        if st:
            raise make_error(st, "aclrtQueryDeviceStatus")
        return "normal" if out[0] == 0 else "abnormal"

    @property
    def stream_priority_range(self) -> StreamPriorityRange:
        """``StreamPriorityRange(least, greatest)`` (``aclrtDeviceGetStreamPriorityRange``):
        a smaller number is a higher priority (CANN: 7 and 0)."""
        L = _rt.ensure()
        out = ffi.new("int32_t[2]")
        st = L.aclrtDeviceGetStreamPriorityRange(out, out + 1)
        if st:
            raise make_error(st, "aclrtDeviceGetStreamPriorityRange")
        return StreamPriorityRange(int(out[0]), int(out[1]))

    def utilization(self) -> Utilization:
        """How busy the device is now, in percent (``aclrtGetDeviceUtilizationRate``, asked
        with this device current); None for what the device does not measure (memory, on
        every CANN release so far)."""
        L = _rt.ensure()
        info = ffi.new("aclrtUtilizationInfo *")
        with restoring(self.id):
            st = L.aclrtGetDeviceUtilizationRate(self.id, info)
        if st:
            raise make_error(st, "aclrtGetDeviceUtilizationRate")
        return Utilization(*(None if v < 0 else int(v) for v in
                             (info.cubeUtilization, info.vectorUtilization,
                              info.aicpuUtilization, info.memoryUtilization)))

    # ---- the process's core limits ----

    @property
    def core_limits(self) -> CoreLimits:
        """``CoreLimits(cube, vector)``: the cores this process's work on the device may use
        (``aclrtGetDeviceResLimit``); the device's totals unless :meth:`limit_cores` set
        less."""
        L = _rt.ensure()
        out = ffi.new("uint32_t *")
        activate(self.id)  # the limits belong to a device the process holds

        def get(kind):
            st = L.aclrtGetDeviceResLimit(self.id, kind, out)
            if st:
                raise make_error(st, "aclrtGetDeviceResLimit")
            return int(out[0])
        return CoreLimits(get(0), get(1))

    def limit_cores(self, cube: int | None = None, vector: int | None = None) -> None:
        """Lets this process's work on the device use at most ``cube`` cube (AI) cores and
        ``vector`` vector cores (``aclrtSetDeviceResLimit``; None leaves a limit as it is).
        A count the device refuses (above its total) raises :class:`AclArgumentError`
        naming it, with the runtime's status, and changes nothing. The limits last until
        :meth:`reset_core_limits` or the device's reset at teardown."""
        wanted = []
        for name, kind, value in (("cube", 0, cube), ("vector", 1, vector)):
            if value is None:
                continue
            n = as_int(value, name, "a core count (int)")
            if not 0 <= n < 2 ** 32:
                raise AclArgumentError(name, f"a core count is >= 0, got {n}")
            wanted.append((name, kind, n))
        L = _rt.ensure()
        before = self.core_limits   # also makes the device current: the limits are its
        for name, kind, n in wanted:
            st = L.aclrtSetDeviceResLimit(self.id, kind, n)
            if st:
                err = make_error(st, "aclrtSetDeviceResLimit")
                for k, v in enumerate(before):   # changes nothing: the first one undone
                    L.aclrtSetDeviceResLimit(self.id, k, v)
                if st != _PARAM_INVALID:
                    raise err
                arg = AclArgumentError(name, f"{n} {name} cores: the device refuses more than "
                                       f"it has")
                arg.refused(err)
                raise arg from err

    def reset_core_limits(self) -> None:
        """Back to the device's totals (``aclrtResetDeviceResLimit``)."""
        L = _rt.ensure()
        activate(self.id)
        st = L.aclrtResetDeviceResLimit(self.id)
        if st:
            raise make_error(st, "aclrtResetDeviceResLimit")

    def mem_info(self) -> MemInfo:
        """``MemInfo(free, total)`` in bytes (``aclrtGetMemInfo(ACL_HBM_MEM)``)."""
        return mem_info(self.id)

    def memory_usage(self) -> list[MemoryUsage] | None:
        """Who uses the device's memory: a :class:`MemoryUsage` (module, current and peak
        bytes) per module using any, the largest first (``aclrtGetMemUsageInfo``); None on
        parts that do not report it (Ascend 950)."""
        L = _rt.ensure()
        activate(self.id)  # the runtime needs a current device for it
        return read_memory_usage(L, self.id)

    # ---- which device it is ----

    @property
    def uuid(self) -> _uuid.UUID | None:
        """The device's unique id (``aclrtDeviceGetUuid``) as a :class:`uuid.UUID`; None on
        parts without one (the Atlas training and inference series). The emulator's are
        ``41434c45-4d55-4000-8000-0000000000mm`` (``mm``: the machine's device id)."""
        return read_uuid(_rt.ensure(), self.id)

    @property
    def pci_bus_id(self) -> str | None:
        """The device's PCI bus id, ``"dddd:bb:dd.f"`` in lowercase hex
        (``aclrtDeviceGetPCIBusId``); None where :attr:`uuid` is."""
        return read_pci_bus_id(_rt.ensure(), self.id)

    @property
    def physical_id(self) -> int:
        """The machine's id of this device (``aclrtGetPhyDevIdByUserDevId``): ``id`` itself
        unless ``ASCEND_RT_VISIBLE_DEVICES`` renumbers the process's devices (or a container
        maps them)."""
        return read_physical_id(_rt.ensure(), self.id)

    def topology(self, other: DeviceLike) -> Topology:
        """How this device and ``other`` are linked (``aclrtGetDevicesTopo``): a
        :class:`Topology` bit, e.g. ``Topology.HCCS`` between the NPUs of an Atlas A2
        server."""
        o = _as_device_id(other, "other")
        return read_topology(_rt.ensure(), self.id, o)

    @classmethod
    def from_pci_bus_id(cls, bus_id: str) -> Device:
        """The device with PCI bus id ``bus_id`` (``aclrtDeviceGetByPCIBusId``), written as
        :attr:`pci_bus_id` gives it (the runtime compares the text exactly). No such device,
        or one ``ASCEND_RT_VISIBLE_DEVICES`` hides: :class:`AclArgumentError` naming
        ``bus_id``, with the runtime's status."""
        if not isinstance(bus_id, str):
            raise AclTypeError("bus_id", f"expected a PCI bus id such as '0000:c1:00.0' (str), "
                                         f"got {type(bus_id).__name__}")
        if "\0" in bus_id or not bus_id.isascii():
            raise AclArgumentError("bus_id", f"{bus_id!r} is no PCI bus id (ASCII "
                                             f"'dddd:bb:dd.f')")
        L = _rt.ensure()
        out = ffi.new("int32_t *")
        st = L.aclrtDeviceGetByPCIBusId(bus_id.encode("ascii"), out)
        if st in (_PARAM_INVALID, _INVALID_DEVICE):
            err = make_error(st, "aclrtDeviceGetByPCIBusId")
            arg = AclArgumentError("bus_id", f"{bus_id!r}: " + (
                "no device has this PCI bus id" if st == _PARAM_INVALID else
                "the device with this PCI bus id is not one of this process's "
                "(ASCEND_RT_VISIBLE_DEVICES)"))
            arg.refused(err)
            raise arg from err
        if st:
            raise make_error(st, "aclrtDeviceGetByPCIBusId")
        return cls(int(out[0]))

    @classmethod
    def from_physical_id(cls, physical_id: int) -> Device:
        """The process's device that is the machine's device ``physical_id``
        (``aclrtGetUserDevIdByPhyDevId``). A machine device the process does not have (hidden
        by ``ASCEND_RT_VISIBLE_DEVICES``, or none): :class:`AclArgumentError` naming
        ``physical_id``, with the runtime's status."""
        phy = as_int(physical_id, "physical_id", "a device id (int)")
        if not 0 <= phy < 2 ** 31:
            raise AclArgumentError("physical_id", f"a device id is >= 0, got {phy}")
        L = _rt.ensure()
        out = ffi.new("int32_t *")
        st = L.aclrtGetUserDevIdByPhyDevId(phy, out)
        if st == _INVALID_DEVICE:
            err = make_error(st, "aclrtGetUserDevIdByPhyDevId")
            arg = AclArgumentError("physical_id", f"machine device {phy} is not one of this "
                                   f"process's devices")
            arg.refused(err)
            raise arg from err
        if st:
            raise make_error(st, "aclrtGetUserDevIdByPhyDevId")
        return cls(int(out[0]))

    def __index__(self) -> int:
        return self.id

    __int__ = __index__

    def __repr__(self):
        return f"<acl_py.Device {self.id}>"

    def __reduce__(self):
        return (Device, (self.id,))


def current_device() -> Device:
    """The calling thread's current :class:`Device` (device 0 unless one was chosen)."""
    return Device(current_device_id())


def set_device(device: DeviceLike) -> Device:
    """Makes ``device`` the calling thread's device; same as ``Device(device).use()``."""
    return Device(device).use()


def mem_info(device: DeviceLike = None) -> MemInfo:
    """``MemInfo(free, total)`` of a device's memory, in bytes."""
    dev = resolve_device(device)
    L = _rt.ensure()
    activate(dev)
    f = ffi.new("size_t[2]")
    st = L.aclrtGetMemInfo(1, f, f + 1)  # ACL_HBM_MEM: the device's own memory
    if st:
        raise make_error(st, "aclrtGetMemInfo")
    return MemInfo(int(f[0]), int(f[1]))


def run_mode() -> Literal["host", "device"]:
    """``"host"`` for a program on a server driving its devices, ``"device"`` for one running
    on the device's own CPU (``aclrtGetRunMode``; no initialization needed)."""
    _rt.refuse_if_forked("acl_py.run_mode()")
    from ._loader import library
    out = ffi.new("aclrtRunMode *")
    st = library().aclrtGetRunMode(out)
    if st:
        raise make_error(st, "aclrtGetRunMode")
    return "device" if out[0] == 0 else "host"


def synchronize(device: DeviceLike = None, timeout: float | None = None) -> None:
    """Waits for all work on a device (default: current) and runs deferred releases; see
    :meth:`Device.synchronize` for ``timeout``."""
    Device(resolve_device(device)).synchronize(timeout)


def peer_access_hint(dst, src):
    """For a failed copy from device ``src`` to device ``dst``: what to call, when acl-py has
    enabled peer access between them neither way; else None."""
    if (dst, src) in _peers_enabled or (src, dst) in _peers_enabled:
        return None
    return (f"peer access between device {src} and device {dst} is not enabled: call "
            f"acl_py.Device({dst}).enable_peer_access({src}) first (and "
            f"Device({dst}).can_access_peer({src}) to see whether the server links them)")


def _disable_peers():
    """Teardown: what acl-py enabled is disabled, each on its device, before the resets."""
    global _peers_enabled
    errs = []
    lib = _rt.lib
    for dev, peer in list(_peers_enabled):
        st = lib.aclrtSetDevice(dev)
        if st:
            errs.append(make_error(st, "aclrtSetDevice"))
            continue
        st = lib.aclrtDeviceDisablePeerAccess(peer)
        if st:
            errs.append(make_error(st, "aclrtDeviceDisablePeerAccess"))
        st = lib.aclrtResetDevice(dev)
        if st:
            errs.append(make_error(st, "aclrtResetDevice"))
    _peers_enabled = {}
    return errs


def _reset_devices():
    """Teardown: peer access acl-py enabled is disabled; each device is reset as many times
    as acl-py set it; threads forget theirs."""
    global _set_counts, _device_count, thread_state
    errs = _disable_peers()
    for dev, n in sorted(_set_counts.items()):
        for _ in range(n):
            st = _rt.lib.aclrtResetDevice(dev)
            if st:
                errs.append(make_error(st, "aclrtResetDevice"))
                break
    _set_counts = {}
    _device_count = None
    thread_state = _TLS()
    return errs


def _drop_after_fork():
    """Forked child: the devices were set by the parent's threads, not this process's."""
    global _set_counts, _device_count, thread_state, _peers_enabled
    _set_counts = {}
    _peers_enabled = {}
    _device_count = None
    thread_state = _TLS()


_rt.register_step("devices", _reset_devices)
_rt.register_step("fork", _drop_after_fork)

class DeviceObject(_rt.ClosedByReleaser):
    """An object of one device whose state ``_st`` (its ``device``, ``closed`` and ``gen``)
    its Releaser ``_rel`` releases: closed, it raises ClosedError on use (the
    ClosedByReleaser's close() and context manager)."""

    __slots__ = ()
    _st: Any

    def _live(self) -> Any:
        st = self._st
        if st.closed:
            raise _rt.closed_error(st.gen, repr(self))
        return st

    @property
    def device(self) -> Device:
        return Device(self._st.device)

    @property
    def closed(self) -> bool:
        return self._st.closed


__all__ = ["Device", "current_device", "set_device", "device_count", "mem_info",
           "synchronize", "MemInfo", "activate", "restoring", "resolve_device", "provide",
           "run_mode", "DeviceAttributes", "StreamPriorityRange", "Utilization", "CoreLimits"]
