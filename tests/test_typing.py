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
from acl_py import aclnn, arguments, cli, smoke

def _public_surface():
    """Every function of ``acl_py.__all__`` and every public method and property of its
    classes (with what they inherit from acl_py's classes, not from builtins), walked rather than listed, so that a new
    public name without hints fails here."""
    funcs, props = [], []
    for name in acl_py.__all__:
        obj = getattr(acl_py, name)
        if inspect.isclass(obj):
            inherited = {}  # acl_py's own bases too (DeviceBuffer's methods live in _Buffer)
            for base in reversed(obj.__mro__):
                if base.__module__.startswith("acl_py"):
                    inherited.update(vars(base))
            for k, v in inherited.items():
                if k.startswith("_") and k not in ("__init__", "__call__", "__enter__",
                                                   "__exit__"):
                    continue
                if isinstance(v, property):
                    props.append((obj, k))
                elif isinstance(v, (staticmethod, classmethod)) or inspect.isfunction(v):
                    funcs.append(getattr(obj, k))
        elif inspect.isfunction(obj):
            funcs.append(obj)
    return funcs, props


_FUNCS, _PROPS = _public_surface()
# Public modules outside acl_py.__all__: the CLI, smoke, the generic operator layer and the
# argument helpers.
PUBLIC = _FUNCS + [
    arguments.natural_dtype, arguments.scalar_bytes, arguments.as_sequence,
    aclnn.operator, aclnn.operators, aclnn.catalog, aclnn.AclnnOperator.__call__,
    aclnn.AclnnOperator.prepare, aclnn.AclnnOperator.help, aclnn.run_ops,
    aclnn._catalog.Catalog.spec, aclnn._catalog.Catalog.names, aclnn._catalog.Catalog.library_of,
    cli.main, smoke.main, smoke.run_smoke, smoke.run_case, smoke.run_cases, smoke.run_devices,
    smoke.build_cases, smoke.environment, smoke.report,
]
# Properties made with operator.attrgetter (DeviceTensor.shape, dtype, strides, offset: read on
# every call, C-level getters) carry no annotations; their types are in their docs.
PROPERTIES = [(cls, k) for cls, k in _PROPS
              if inspect.isfunction(inspect.getattr_static(cls, k).fget)]


def test_the_walk_finds_the_surface():
    names = {_name(f) for f in PUBLIC}
    # A few that must be there (the walk cannot silently come back empty).
    for expected in ("layer_norm", "DeviceTensor.from_numpy", "Stream.synchronize",
                     "Scalar.__init__", "MemoryPool.malloc", "LayerNorm.__init__"):
        assert expected in names
    assert (acl_py.LayerNorm, "mean") in PROPERTIES and len(PUBLIC) > 100


def _name(f) -> str:
    return getattr(f, "__qualname__", repr(f))


@pytest.mark.parametrize("func", PUBLIC, ids=_name)
def test_public_function_is_annotated_and_hints_resolve(func):
    sig = inspect.signature(func)
    params = list(sig.parameters.items())
    if "." in _name(func) and not inspect.ismethod(func) and params:
        # A method taken from its class: the first parameter is the instance (named `op`
        # where an operator has a parameter called `self`). Classmethods come bound.
        params = params[1:]
    missing = [p for p, v in params if v.annotation is inspect.Parameter.empty]
    assert missing == [], f"{_name(func)}: parameters without a hint: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{_name(func)}: no return hint"
    # The strings resolve (a typo in a hint would only show up in a user's type checker).
    module = inspect.getmodule(func)
    typing.get_type_hints(func, globalns={**vars(typing), **vars(module), **_extra_names()})


@pytest.mark.parametrize("cls,name", PROPERTIES, ids=lambda x: getattr(x, "__name__", x))
def test_public_properties_are_annotated(cls, name):
    prop = inspect.getattr_static(cls, name)
    assert "return" in prop.fget.__annotations__, f"{cls.__name__}.{name}: no return hint"


def _extra_names() -> dict:
    # Names imported only under TYPE_CHECKING in the modules (no import cycles at run time).
    import argparse
    from collections.abc import Sequence
    from pathlib import Path

    import numpy as np
    import numpy.typing as npt
    from acl_py import _loader, device, memory, stream, tensor
    from acl_py.aclnn import _catalog, _header
    from acl_py.ops import _two_phase
    return {"argparse": argparse, "Sequence": Sequence, "Path": Path, "Spec": _catalog.Spec,
            "Prototype": _header.Prototype, "CParam": _header.CParam,
            "Executor": _two_phase.Executor, "ArgumentObject": arguments.ArgumentObject,
"np": np, "ArrayLike": npt.ArrayLike, "DTypeLike": npt.DTypeLike,
            "Backend": _loader.Backend, "Device": device.Device,
            "DeviceLike": device.DeviceLike, "MemInfo": device.MemInfo,
            "Stream": stream.Stream, "Event": stream.Event, "MemoryPool": memory.MemoryPool,
            "DeviceBuffer": memory.DeviceBuffer, "DeviceTensor": tensor.DeviceTensor,
            "Case": smoke.Case, "CaseResult": smoke.CaseResult, "DeviceRun": smoke.DeviceRun}


def test_py_typed_marker_is_in_the_package():
    assert (Path(acl_py.__file__).parent / "py.typed").is_file()
