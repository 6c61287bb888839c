"""Which operators the active backend offers, and where their code is.

Headers: ``<root>/include/aclnnop/aclnn_*.h`` (and ``<root>/<arch>-linux/include/aclnnop``)
of the backend's install root, the emulator's prefix included. An operator ``Foo`` is found
from its name first (``aclnn_foo.h``), else by scanning every header once for
``aclnnFooGetWorkspaceSize``.

Libraries: the operator library the loader opened (``libopapi_nn.so`` or, before the
split, ``libopapi.so``) and the other libraries of its set (``_loader.operator_libraries``:
the other ``libopapi_<domain>.so``, never libopapi.so beside them), each opened on first
need. An operator's two functions are bound to the first library that exports both, as cffi
function pointers typed from the header's prototypes (ABI mode: nothing is compiled).

Custom operator packages, where the vendor's tools put them (hicann/ops-math
scripts/build_example.sh): each directory of ``$ASCEND_CUSTOM_OPP_PATH`` (colon-separated),
else the packages of ``<opp>/vendors`` that its ``config.ini`` lists, in its
``load_priority`` order (``<opp>``: ``$ASCEND_OPP_PATH``, else ``<root>/opp``; a package the
file does not list, or no file, is not loaded, as the vendor's operator library does:
hicann/opbase src/nnopbase/composite_op/aclnn_engine/op_kernel_lib.cpp, GetVendorNames),
adds its ``op_api/include/aclnn_*.h`` headers (after the install's) and its
``op_api/lib/libcust_opapi.so`` (after the install's libraries)."""
from __future__ import annotations

import ctypes
import os
import platform
import re
import threading
from pathlib import Path
from typing import Any

from .. import _loader
from .._ffi import ffi
from . import _header

_PHASE_TWO_TYPES = ("void*", "uint64_t", "aclOpExecutor*", "aclrtStream")


class OperatorNotFoundError(AttributeError):
    """No header of the active backend declares this operator."""


class SymbolNotExportedError(LookupError):
    """A header declares an operator that no operator library of the backend exports."""


def custom_operator_packages(root: str | os.PathLike[str]) -> list[Path]:
    """The custom operator package directories (see the module doc); relative paths in
    ``$ASCEND_CUSTOM_OPP_PATH`` are ignored, as the loader ignores relative roots."""
    value = os.environ.get("ASCEND_CUSTOM_OPP_PATH")
    if value:
        return [Path(p) for p in value.split(":") if p and os.path.isabs(p)]
    vendors = Path(os.environ.get("ASCEND_OPP_PATH") or Path(root) / "opp") / "vendors"
    return [p for p in (vendors / name for name in vendor_priority(vendors / "config.ini"))
            if p.is_dir()]


def vendor_priority(config: Path) -> list[str]:
    """The package names of a vendors ``config.ini``, in load order: the value of its first
    line naming a priority (``load_priority=customize,mdc``), split at commas; [] without the
    file. Read as the vendor's GetVendorNames reads it: comment lines start with ``#``, only
    line ends are trimmed."""
    try:
        text = config.read_text(errors="replace")
    except OSError:
        return []
    for line in text.split("\n"):
        line = line.strip("\r\n")
        if not line or line.startswith("#") or "priority" not in line:
            continue
        if "=" not in line:
            break
        return [n for n in line.split("=", 1)[1].split(",") if n]
    return []


def _snake(name: str) -> str:
    """``LayerNormBackward`` -> ``layer_norm_backward`` (the vendor's header naming)."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return s.lower()


def _header_stems(name: str) -> list[str]:
    """Header names (``aclnn_<stem>.h``) likely to declare operator ``name``, most likely
    first, so that most operators are found without scanning every header: the vendor groups
    variants with their base operator (``InplaceAdd``, ``Adds``, ``InplaceAdds`` in
    ``aclnn_add.h``; ``ClampMinTensor`` in ``aclnn_clamp.h``) and sometimes joins words
    (``ArgMax`` in ``aclnn_argmax.h``)."""
    base = name[len("Inplace"):] if name.startswith("Inplace") and len(name) > 7 else name
    stems = []
    for n in (name, base, base[:-1] if base.endswith("s") and len(base) > 2 else None):
        if not n:
            continue
        words = _snake(n).split("_")
        for k in range(len(words), 0, -1):  # longest prefix first
            stems += ["_".join(words[:k]), "".join(words[:k])]
    return list(dict.fromkeys(stems))


class Spec:
    """One operator as its header declares it: ``name`` (``Add``), the header, and the
    phase-one prototype's operator parameters (without ``workspaceSize``/``executor``)."""

    __slots__ = ("name", "header", "phase_one", "phase_two", "params")

    def __init__(self, name: str, header: Path, phase_one: _header.Prototype,
                 phase_two: _header.Prototype) -> None:
        self.name = name
        self.header = header
        self.phase_one = phase_one
        self.phase_two = phase_two
        self.params = phase_one.params[:-2]

    def prototype(self) -> str:
        return f"{self.phase_one};\n{self.phase_two};"


class Catalog:
    """The operator headers and libraries of one backend (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str],
                 opapi_library: str | os.PathLike[str] | None = None,
                 custom_packages: list[Path] | None = None) -> None:
        self.root = Path(root)
        arch = platform.machine()
        if custom_packages is None:
            custom_packages = custom_operator_packages(self.root)
        self.include_dirs = [d for d in (self.root / "include" / "aclnnop",
                                         self.root / f"{arch}-linux" / "include" / "aclnnop",
                                         *(p / "op_api" / "include" for p in custom_packages))
                             if d.is_dir()]
        lib_dirs: list[Path] = []
        if opapi_library is not None:
            lib_dirs.append(Path(opapi_library).parent)
        for d in (self.root / "lib64", self.root / f"{arch}-linux" / "lib64"):
            if d.is_dir() and d not in lib_dirs:
                lib_dirs.append(d)
        libs: list[Path] = [] if opapi_library is None else [Path(opapi_library)]
        for d in lib_dirs:
            for p in _loader.operator_libraries(d):  # never libopapi.so with split ones
                if p not in libs:
                    libs.append(p)
        for pkg in custom_packages:
            p = pkg / "op_api" / "lib" / "libcust_opapi.so"
            if p.is_file() and p not in libs:
                libs.append(p)
        self.libraries = libs
        self._lock = threading.RLock()
        self._index: dict[str, Path] | None = None         # name -> header (after a full scan)
        self._texts: dict[Path, dict[str, _header.Prototype]] = {}   # header -> its prototypes
        self._specs: dict[str, Spec] = {}
        self._opened: dict[Path, ctypes.CDLL] = {}

    # ---- headers ----

    def headers(self) -> list[Path]:
        """The operator headers, the first of each file name in ``include_dirs`` order."""
        seen: set[str] = set()
        out: list[Path] = []
        for d in self.include_dirs:
            for p in sorted(d.glob("aclnn_*.h")):
                if p.name not in seen:
                    seen.add(p.name)
                    out.append(p)
        return out

    def index(self) -> dict[str, Path]:
        """{operator name: header} over every header (scanned once)."""
        with self._lock:
            if self._index is None:
                idx: dict[str, Path] = {}
                for h in self.headers():
                    try:
                        raw = h.read_bytes()
                    except OSError:
                        continue
                    for name in _header.operator_names(raw):
                        idx.setdefault(name, h)
                self._index = idx
            return self._index

    def _prototypes(self, header: Path) -> dict[str, _header.Prototype]:
        protos = self._texts.get(header)
        if protos is None:
            protos = self._texts[header] = _header.prototypes(header.read_text(errors="replace"))
        return protos

    def _header_of(self, name: str) -> Path | None:
        for stem in _header_stems(name):  # the vendor's naming, without a scan
            for d in self.include_dirs:
                h = d / f"aclnn_{stem}.h"
                if h.is_file() and f"aclnn{name}GetWorkspaceSize" in self._prototypes(h):
                    return h
        return self.index().get(name)

    def spec(self, name: str) -> Spec:
        """The :class:`Spec` of operator ``name`` (``Add``); OperatorNotFoundError when no
        header declares it, ValueError when its header is not a two-phase pair."""
        with self._lock:
            s = self._specs.get(name)
            if s is not None:
                return s
            if not re.fullmatch(r"[A-Z]\w*", name):
                raise OperatorNotFoundError(f"aclnn{name}: not an operator name (they start "
                                            f"with a capital letter, e.g. Add)")
            header = self._header_of(name)
            if header is None:
                where = ", ".join(str(d) for d in self.include_dirs) or \
                    f"{self.root}/include/aclnnop (absent)"
                raise OperatorNotFoundError(f"aclnn{name}: no operator header declares "
                                            f"aclnn{name}GetWorkspaceSize (searched {where})")
            protos = self._prototypes(header)
            p1 = protos.get(f"aclnn{name}GetWorkspaceSize")
            p2 = protos.get(f"aclnn{name}")
            if p1 is None:  # only mentioned there (a comment)
                raise OperatorNotFoundError(f"aclnn{name}: {header} mentions "
                                            f"aclnn{name}GetWorkspaceSize but declares no "
                                            f"such aclnnStatus function")
            if p2 is None:
                raise ValueError(f"{header}: declares aclnn{name}GetWorkspaceSize but not its "
                                 f"phase two, aclnn{name}")
            tail = [p.base for p in p1.params[-2:]]
            if tail != ["uint64_t*", "aclOpExecutor**"]:
                raise ValueError(f"{header}: {p1.name} does not end with (uint64_t "
                                 f"*workspaceSize, aclOpExecutor **executor)")
            if tuple(p.base for p in p2.params) != _PHASE_TWO_TYPES:
                raise ValueError(f"{header}: {p2.name} is not (void *workspace, uint64_t "
                                 f"workspaceSize, aclOpExecutor *executor, aclrtStream stream)")
            s = self._specs[name] = Spec(name, header, p1, p2)
            return s

    def names(self) -> list[str]:
        return sorted(self.index())

    # ---- libraries ----

    def _open(self, path: Path) -> ctypes.CDLL:
        lib = self._opened.get(path)
        if lib is None:
            # The libraries it needs (libnnopbase, libascendcl) are already loaded by
            # absolute path; their SONAMEs match, so nothing is searched for again.
            lib = self._opened[path] = ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        return lib

    def _address(self, path: Path, symbol: str) -> int | None:
        try:
            fn = getattr(self._open(path), symbol)
        except AttributeError:
            return None
        except OSError:
            return None  # a library that cannot be opened exports nothing for us
        return ctypes.cast(fn, ctypes.c_void_p).value

    def library_of(self, spec: Spec) -> tuple[Path, int, int]:
        """(library path, phase-one address, phase-two address) of the first library that
        exports both functions; SymbolNotExportedError naming the symbol and the libraries
        searched otherwise."""
        with self._lock:
            for path in self.libraries:
                a1 = self._address(path, spec.phase_one.name)
                if a1 is None:
                    continue
                a2 = self._address(path, spec.phase_two.name)
                if a2 is None:
                    raise SymbolNotExportedError(
                        f"{spec.phase_two.name} (declared in {spec.header}) is not exported by "
                        f"{path}, which exports {spec.phase_one.name}")
                return path, a1, a2
            searched = ", ".join(str(p) for p in self.libraries) or "no libopapi*.so found"
            raise SymbolNotExportedError(
                f"{spec.phase_one.name} (declared in {spec.header}) is not exported by any "
                f"operator library of the backend; searched: {searched}")


def function_pointer(proto: _header.Prototype, address: int) -> Any:
    """A cffi function pointer of ``proto``'s type at ``address``. Pointers to types acl-py
    does not declare are passed as ``void *`` (the same ABI)."""
    types = []
    for p in proto.params:
        t = p.ctype
        try:
            ffi.typeof(t)
        except (ffi.error, TypeError, KeyError, ValueError):
            if not t.endswith("*"):
                raise TypeError(f"{proto.name}: parameter {p.name} has type {t}, which acl-py "
                                f"cannot pass (not a pointer, and not declared)") from None
            t = "void *"
        types.append(t)
    fptr = ffi.typeof(f"aclnnStatus(*)({', '.join(types)})")
    return ffi.cast(fptr, address)
