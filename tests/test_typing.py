"""The public API carries type hints (PEP 561: acl_py/py.typed ships in the wheel, see
tests/test_packaging.py), and they resolve to real types at run time. `make typecheck` (part of
`make test`) runs mypy over the package; this test keeps the annotated surface from shrinking
without notice. The list is explicit: code added later is checked by mypy, not by this list."""
from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

import acl_py
from acl_py import cli, smoke

PUBLIC = [
    acl_py.init, acl_py.finalize, acl_py.backend, acl_py.release_unused, acl_py.device_count,
    acl_py.current_device, acl_py.set_device, acl_py.mem_info, acl_py.synchronize,
    acl_py.default_stream, acl_py.get_pool, acl_py.soc_name, acl_py.supports_bfloat16,
    acl_py.Device.use, acl_py.Device.synchronize, acl_py.Device.mem_info,
    acl_py.Stream.__init__, acl_py.Stream.synchronize, acl_py.Stream.close,
    acl_py.Stream.__enter__, acl_py.Event.__init__, acl_py.Event.record,
    acl_py.Event.synchronize, acl_py.Event.elapsed_ms,
    acl_py.DeviceBuffer.__init__, acl_py.DeviceBuffer.copy_from_host,
    acl_py.DeviceBuffer.copy_to_host, acl_py.DeviceBuffer.copy_from_host_async,
    acl_py.DeviceBuffer.copy_to_host_async, acl_py.DeviceBuffer.copy_from,
    acl_py.DeviceBuffer.memset, acl_py.HostBuffer.__init__, acl_py.HostBuffer.numpy,
    acl_py.MemoryPool.malloc, acl_py.MemoryPool.used_bytes,
    acl_py.DeviceTensor.__init__, acl_py.DeviceTensor.empty, acl_py.DeviceTensor.zeros,
    acl_py.DeviceTensor.from_numpy, acl_py.DeviceTensor.to_numpy,
    acl_py.DeviceTensor.copy_from_numpy, acl_py.DeviceTensor.transpose,
    acl_py.DeviceTensor.reshape, acl_py.DeviceTensor.__getitem__, acl_py.DeviceTensor.__iter__,
    acl_py.IntArray.__init__, acl_py.BoolArray.__init__,
    acl_py.layer_norm, acl_py.layer_norm_backward, acl_py.LayerNorm.__init__,
    acl_py.LayerNormBackward.__init__,
    cli.main, smoke.main, smoke.run_smoke, smoke.run_case, smoke.run_cases, smoke.run_devices,
    smoke.build_cases, smoke.environment, smoke.report,
]
PROPERTIES = [
    # (shape, dtype, strides and offset are C-level attribute getters: read on every call)
    (acl_py.DeviceTensor, ("ndim", "size", "nbytes", "device", "is_contiguous", "closed")),
    (acl_py.DeviceBuffer, ("nbytes", "address", "closed", "device")),
    (acl_py.Stream, ("device", "closed", "is_default")),
]


def _name(f) -> str:
    return getattr(f, "__qualname__", repr(f))


@pytest.mark.parametrize("func", PUBLIC, ids=_name)
def test_public_function_is_annotated_and_hints_resolve(func):
    sig = inspect.signature(func)
    missing = [p for p, v in sig.parameters.items()
               if p not in ("self", "cls") and v.annotation is inspect.Parameter.empty]
    assert missing == [], f"{_name(func)}: parameters without a hint: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{_name(func)}: no return hint"
    # The strings resolve (a typo in a hint would only show up in a user's type checker).
    module = inspect.getmodule(func)
    typing.get_type_hints(func, globalns={**vars(typing), **vars(module), **_extra_names()})


@pytest.mark.parametrize("cls,names", PROPERTIES, ids=lambda x: getattr(x, "__name__", ""))
def test_public_properties_are_annotated(cls, names):
    for name in names:
        prop = inspect.getattr_static(cls, name)
        assert isinstance(prop, property), f"{cls.__name__}.{name}"
        assert "return" in prop.fget.__annotations__, f"{cls.__name__}.{name}: no return hint"


def _extra_names() -> dict:
    # Names imported only under TYPE_CHECKING in the modules (no import cycles at run time).
    import numpy as np
    import numpy.typing as npt
    from acl_py import _loader, device, memory, stream, tensor
    return {"np": np, "ArrayLike": npt.ArrayLike, "DTypeLike": npt.DTypeLike,
            "Backend": _loader.Backend, "Device": device.Device,
            "DeviceLike": device.DeviceLike, "MemInfo": device.MemInfo,
            "Stream": stream.Stream, "Event": stream.Event, "MemoryPool": memory.MemoryPool,
            "DeviceBuffer": memory.DeviceBuffer, "DeviceTensor": tensor.DeviceTensor,
            "Case": smoke.Case, "CaseResult": smoke.CaseResult, "DeviceRun": smoke.DeviceRun}


def test_py_typed_marker_is_in_the_package():
    assert (Path(acl_py.__file__).parent / "py.typed").is_file()
