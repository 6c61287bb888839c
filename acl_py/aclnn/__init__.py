"""Every aclnn operator of the active backend, declared at run time from its header.

``acl_py.aclnn.Add(self, other, alpha, out, stream=None)`` calls ``aclnnAdd``: the
parameters are the header's, by position or by name, converted by their C type (see
``acl_py.aclnn._convert``); outputs are passed by the caller. One call is phase one, the
workspace (from the device's memory pool), phase two on ``stream`` (default: the device's
default stream), with the executor and every argument kept exactly as long as the
hand-written operators keep theirs (the same operator layer, ``acl_py.ops._two_phase``).
The call returns once the work is queued, unless NumPy arrays were passed for outputs: those
are copied back after the stream synchronizes.

Nothing is read when ``acl_py`` is imported. The first use of an operator finds its header
(``<root>/include/aclnnop/aclnn_*.h`` of the backend's install or the emulator prefix),
reads its two prototypes, binds them to the operator library that exports them
(``libopapi.so`` or a split ``libopapi_<domain>.so``) as cffi function pointers, and caches
the result. ``help(acl_py.aclnn.Add)`` shows the C prototypes; :func:`operators` lists what
the backend offers (``acl-py ops``).

Errors: an argument acl-py cannot convert raises :class:`~acl_py.AclTypeError` /
:class:`~acl_py.AclArgumentError` naming the parameter; a status from the library raises its
typed :class:`~acl_py.AclError` (code, ``aclGetRecentErrMsg()``), with the call named and
``parameter`` set to the parameter the library's message names (None when it names none);
an operator no header declares raises :class:`OperatorNotFoundError` (an AttributeError);
one whose symbols no library exports raises :class:`SymbolNotExportedError` naming the
symbol and the libraries searched.
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from .. import device as _device
from .. import stream as _stream
from ..errors import AclArgumentError, AclError, AclTypeError
from ..ops import _two_phase
from ..ops._two_phase import Executor
from ..tensor import DeviceTensor
from . import _convert
from ._catalog import Catalog, OperatorNotFoundError, SymbolNotExportedError, function_pointer

if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Sequence

    from ..stream import Stream
    from ._catalog import Spec

__all__ = ["operator", "operators", "catalog", "AclnnOperator", "OperatorNotFoundError",
           "SymbolNotExportedError"]

_lock = threading.Lock()


def _new_lock_in_forked_child() -> None:
    # Another thread of the parent may have held the lock when this one forked: the child's
    # only thread would wait for it for ever.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_forked_child)
_catalogs: dict[str, Catalog] = {}                    # backend root -> Catalog
_operators: dict[tuple[str, str], AclnnOperator] = {}  # (root, name) -> AclnnOperator


def catalog() -> Catalog:
    """The :class:`~acl_py.aclnn._catalog.Catalog` of the active backend."""
    from .._loader import library
    backend = library().backend
    key = str(backend.root)
    c = _catalogs.get(key)
    if c is None:
        with _lock:
            c = _catalogs.get(key)
            if c is None:
                c = _catalogs[key] = Catalog(backend.root, backend.libraries.get("opapi"))
    return c


class AclnnOperator:
    """One aclnn operator, callable (see the module doc). ``name`` (``"Add"``),
    ``parameters`` (the header's, without workspaceSize/executor), ``library`` (the file
    exporting it), ``header``, ``prototype`` (the C text)."""

    def __init__(self, spec: Spec, library: Path, phase_one: Any, phase_two: Any) -> None:
        self.name = spec.name
        self.header = spec.header
        self.library = library
        self.spec = spec
        self.parameters = tuple(p.name for p in spec.params)
        self.prototype = spec.prototype()
        self._positions = {n: i for i, n in enumerate(self.parameters)}
        self._n = len(self.parameters)
        self._converters = tuple(_convert.converter_for(p) for p in spec.params)
        kinds = {"tensor": _two_phase.tensor, "object": _two_phase.argument,
                 "value": _two_phase.value}
        self._op = _two_phase.Operator(
            "aclnn" + spec.name, [kinds[_convert.kind_of(p)](p.name) for p in spec.params],
            functions=(phase_one, phase_two))
        self.__name__ = spec.name
        self.__qualname__ = spec.name
        self.__doc__ = (f"aclnn{spec.name} from {spec.header.name} ({library.name}).\n\n"
                        f"{self.prototype}\n\n"
                        f"Call: {spec.name}({', '.join(self.parameters)}, stream=None); "
                        f"see help(acl_py.aclnn) for how arguments are converted.")

    def __repr__(self) -> str:
        return f"<acl_py.aclnn.{self.name} ({self.library.name})>"

    def _bind_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        n = len(self.parameters)
        if len(args) > n:
            raise AclArgumentError("args", f"aclnn{self.name} takes {n} arguments "
                                   f"({', '.join(self.parameters)}), got {len(args)}")
        values = list(args) + [_MISSING] * (n - len(args))
        for k, v in kwargs.items():
            i = self._positions.get(k)
            if i is None:
                raise AclTypeError(k, f"aclnn{self.name} has no parameter {k!r} (its "
                                   f"parameters: {', '.join(self.parameters)})")
            if values[i] is not _MISSING:
                raise AclTypeError(k, f"aclnn{self.name}: {k} given twice")
            values[i] = v
        missing = [self.parameters[i] for i, v in enumerate(values) if v is _MISSING]
        if missing:
            raise AclTypeError(missing[0], f"aclnn{self.name}: missing argument(s) "
                               f"{', '.join(missing)} (pass None for an absent optional one)")
        return values

    # `op` is positional-only: operators have parameters named `self`.
    def __call__(op, /, *args: Any, stream: Stream | None = None, **kwargs: Any) -> None:
        values = args if not kwargs and len(args) == op._n else op._bind_args(args, kwargs)
        device = _device_of(values, stream)
        sst = _stream.state_for(stream, device)     # also makes the device current
        call = _convert.Call(op._op.name, device, stream)
        try:
            try:
                cargs = [conv(v, call) for conv, v in zip(op._converters, values)]
                op._op.enqueue(cargs, call.allocs, device, sst)
            except BaseException as e:
                err = _abandoned(call, e, op)
                if err is None:
                    raise
                raise err from None
            for t, arr in call.copy_back:
                arr[...] = t.to_numpy(stream)
        finally:
            for t in call.staged:   # freed once the stream is past the launch
                t.close()

    def prepare(op, /, *args: Any, **kwargs: Any) -> Executor:
        """Phase one once, with a repeatable executor: an :class:`acl_py.ops.Executor` whose
        ``run(stream=None)`` is phase two on the same arguments (kept with it: see
        :meth:`acl_py.ops.Operator.prepare`), closed by
        ``close()``/``with``. Tensor parameters take DeviceTensors (or None) here: a NumPy
        array would need a copy over and back at every run."""
        values = args if not kwargs and len(args) == op._n else op._bind_args(args, kwargs)
        for p, v in zip(op.spec.params, values):
            if p.base == "aclTensor*" and not (v is None or isinstance(v, DeviceTensor)):
                raise AclTypeError(p.name, f"aclnn{op.name}.prepare: expected a DeviceTensor "
                                   f"or None, got {type(v).__name__}")
        device = _device_of(values, None)
        call = _convert.Call(op._op.name, device, None, own=True)
        try:
            cargs = [conv(v, call) for conv, v in zip(op._converters, values)]
            return Executor(op._op, cargs, call.allocs, call.keep, device)
        except BaseException as e:
            err = _abandoned(call, e, op)
            if err is None:
                raise
            raise err from None

    def help(self) -> str:
        return self.__doc__ or ""


_MISSING = object()


def _device_of(values: Sequence[Any], stream: Stream | None) -> int:
    for v in values:
        if type(v) is DeviceTensor or isinstance(v, DeviceTensor):
            return v.allocation.device
    if stream is not None and isinstance(stream, _stream.Stream):
        return stream.state.device
    return _device.current_device_id()


def _abandoned(call: _convert.Call, exc: BaseException, op: AclnnOperator) -> AclError | None:
    """A call (or prepare) that failed before anything was queued: closes what it created
    now, not when the exception (and the frames it holds) is collected. Returns the library's
    error with its parameter named, or None to re-raise ``exc`` as it is."""
    for o in call.created:
        _close_quietly(o)
    return _named(exc, op) if isinstance(exc, AclError) else None


def _close_quietly(obj: Any) -> None:
    try:
        obj.close()
    except Exception:  # the call's own error is the one to raise
        pass


def _named(err: AclError, op: AclnnOperator) -> AclError:
    """The library's error, with the parameter it names (when its message names one)."""
    msg = err.message or ""
    for p in op.parameters:
        if msg and (f" {p} " in msg or f" {p}:" in msg or f": {p} " in msg or
                    msg.endswith(f" {p}")):
            err.parameter = p
            break
    else:
        err.parameter = None
    return err


def operator(name: str) -> AclnnOperator:
    """The :class:`AclnnOperator` ``aclnn<name>`` of the active backend (cached)."""
    c = catalog()
    key = (str(c.root), name)
    op = _operators.get(key)
    if op is None:
        spec = c.spec(name)
        path, a1, a2 = c.library_of(spec)
        op = AclnnOperator(spec, path, function_pointer(spec.phase_one, a1),
                           function_pointer(spec.phase_two, a2))
        with _lock:
            op = _operators.setdefault(key, op)
    return op


def operators() -> list[dict[str, Any]]:
    """[{name, library, header, parameters: [{name, type}]}] for every operator the backend's
    headers declare. ``library`` is None (and ``error`` says why) when no library exports it."""
    c = catalog()
    out = []
    for name in c.names():
        entry: dict[str, Any] = {"name": name, "library": None, "header": None, "parameters": []}
        try:
            spec = c.spec(name)
        except OperatorNotFoundError:
            continue  # a name a header only mentions
        except ValueError as e:
            entry["error"] = str(e)
            out.append(entry)
            continue
        entry["header"] = str(spec.header)
        entry["parameters"] = [{"name": p.name, "type": p.ctype} for p in spec.params]
        try:
            entry["library"] = str(c.library_of(spec)[0])
        except SymbolNotExportedError as e:
            entry["error"] = str(e)
        out.append(entry)
    return out


# ---- `acl-py ops` -------------------------------------------------------------------------------

def add_ops_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (for scripts) instead of text")


def run_ops(args: argparse.Namespace) -> int:
    import json
    import sys
    from .._loader import LibraryNotFoundError
    try:
        ops = operators()
        root = str(catalog().root)
    except LibraryNotFoundError as e:
        print(f"acl-py: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"root": root, "operators": ops}, indent=2))
    else:
        print(f"{len(ops)} operators under {root}")
        for o in ops:
            where = o["library"].rsplit("/", 1)[-1] if o["library"] else \
                f"NOT EXPORTED: {o.get('error')}"
            params = ", ".join(f"{p['type']}{'' if p['type'].endswith('*') else ' '}"
                               f"{p['name']}" for p in o["parameters"])
            print(f"{o['name']:<28} {where}\n    ({params})")
    return 0 if all(o["library"] for o in ops) else 1


def __getattr__(name: str) -> AclnnOperator:
    if name.startswith("_") or not name[:1].isupper():
        raise AttributeError(f"module 'acl_py.aclnn' has no attribute {name!r}")
    return operator(name)


def __dir__() -> list[str]:
    names = list(__all__)
    try:
        names += catalog().names()
    except Exception:  # dir() must not fail because no backend can be loaded
        pass
    return sorted(set(names))
