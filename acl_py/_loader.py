"""Finds the CANN libraries (real or emulated), opens them, and binds each declared function
to the library that must export it.

Backend choice, from ACL_PY_BACKEND:
  auto      (default) real CANN when its libraries are found, else the embedded emulator
  cann      real CANN only; an error lists every place that was searched
  emulator  the emulator built into acl_py/_emulator (or ACL_PY_EMULATOR_PREFIX)

Libraries are opened by absolute path only. A search root given as a relative path is
ignored (and reported), so a library planted in the current directory is never loaded.
"""
from __future__ import annotations

import os
import platform
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ._ffi import LIBRARY_OF, ffi

# Search roots, in the order the vendor's tools look.
ROOT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CUSTOM_PATH")
DEFAULT_ROOTS = ("/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest")

# Library role -> file names, tried in order. The operator library was split by domain in newer
# releases (libopapi_nn.so); older ones ship everything in libopapi.so.
LIBRARY_FILES = {
    "ascendcl": ("libascendcl.so",),
    "nnopbase": ("libnnopbase.so",),
    "opapi": ("libopapi.so", "libopapi_nn.so"),
}
# Load order: dependencies first.
ROLES = ("ascendcl", "nnopbase", "opapi")

PACKAGE_EMULATOR_PREFIX = Path(__file__).resolve().parent / "_emulator"


class LibraryNotFoundError(ImportError):
    """The CANN libraries (or the emulator) could not be found or opened."""


class SymbolNotFoundError(AttributeError):
    """A declared function is missing from the library that must export it."""


@dataclass
class Backend:
    name: str                       # "cann" or "emulator"
    root: Path                      # install root (the emulator's prefix for the emulator)
    libraries: dict[str, Path]      # role -> absolute path of the opened file
    reason: str                     # why this backend was chosen
    searched: list[str] = field(default_factory=list)

    @property
    def is_emulator(self) -> bool:
        return self.name == "emulator"


def split_operator_libraries(opened: Path) -> list[Path]:
    """The operator libraries beside the opened one (libopapi.so, libopapi_<domain>.so), in
    name order, the opened one excluded."""
    d = opened.parent
    return [p for p in [d / "libopapi.so"] + sorted(d.glob("libopapi_*.so"))
            if p.is_file() and p != opened]


def _lib_dirs(root: Path) -> list[Path]:
    arch = platform.machine()
    return [root / "lib64", root / f"{arch}-linux" / "lib64"]


def search_roots() -> tuple[list[Path], list[str]]:
    """The absolute roots to search, and a note for each candidate skipped or used."""
    roots: list[Path] = []
    notes: list[str] = []
    for var in ROOT_VARIABLES:
        value = os.environ.get(var)
        if not value:
            continue
        if not os.path.isabs(value):
            notes.append(f"${var}={value!r}: ignored, not an absolute path")
            continue
        roots.append(Path(value))
    roots += [Path(p) for p in DEFAULT_ROOTS]
    return roots, notes


def find_in_root(root: Path, searched: list[str]) -> dict[str, Path] | None:
    """The libraries of every role under one install root ({role: path}), or None when a
    role is missing; every path tried is appended to ``searched`` (for the error message)."""
    for lib_dir in _lib_dirs(root):
        found: dict[str, Path] = {}
        for role in ROLES:
            for fname in LIBRARY_FILES[role]:
                path = lib_dir / fname
                searched.append(str(path))
                if path.is_file():
                    found[role] = path
                    break
        if len(found) == len(ROLES):
            return found
    return None


def find_cann() -> tuple[Path | None, dict[str, Path] | None, list[str]]:
    """Searches the CANN install roots. Returns (root, libraries, searched paths and notes)."""
    roots, searched = search_roots()
    for root in roots:
        libs = find_in_root(root, searched)
        if libs is not None:
            return root, libs, searched
    return None, None, searched


def emulator_prefix() -> Path:
    value = os.environ.get("ACL_PY_EMULATOR_PREFIX")
    if value:
        if not os.path.isabs(value):
            raise LibraryNotFoundError(
                f"ACL_PY_EMULATOR_PREFIX={value!r} is not an absolute path")
        return Path(value)
    return PACKAGE_EMULATOR_PREFIX


def _emulator_backend(reason: str, searched: list[str]) -> Backend:
    prefix = emulator_prefix()
    searched = list(searched)
    libs = find_in_root(prefix, searched)
    if libs is None:
        raise LibraryNotFoundError(
            f"the acl-py emulator is not built under {prefix}: run `make build` "
            f"(or `python emulator/build.py`) in the source tree, or reinstall acl-py "
            f"with a C compiler present")
    return Backend("emulator", prefix, libs, reason, searched)


def choose_backend() -> Backend:
    choice = os.environ.get("ACL_PY_BACKEND", "auto").strip().lower() or "auto"
    if choice not in ("auto", "cann", "emulator"):
        raise LibraryNotFoundError(
            f"ACL_PY_BACKEND={choice!r}: expected one of auto, cann, emulator")
    if choice == "emulator":
        return _emulator_backend("ACL_PY_BACKEND=emulator", [])
    root, libs, searched = find_cann()
    if root is not None and libs is not None:
        return Backend("cann", root, libs,
                       f"ACL_PY_BACKEND={choice}: CANN found under {root}", searched)
    if choice == "cann":
        listing = "\n  ".join(searched)
        raise LibraryNotFoundError(
            "ACL_PY_BACKEND=cann but the CANN libraries (libascendcl.so, libnnopbase.so, "
            "libopapi.so or libopapi_nn.so) were not found. Searched:\n  " + listing +
            "\nSource the toolkit's set_env.sh or set ASCEND_HOME_PATH to the install root.")
    return _emulator_backend("ACL_PY_BACKEND=auto: no CANN install found, using the emulator",
                             searched)


class Library:
    """The bound CANN API: every declared function as an attribute, resolved from the library
    that must export it, plus every declared constant. Emulator-only functions (aclemu*) exist
    only on the emulator backend."""

    def __init__(self, backend: Backend):
        self.backend = backend
        # NODELETE: the libraries stay mapped after cffi's handles are collected at interpreter
        # exit, so their own threads (stream workers) never run unmapped code, and sanitizer
        # leak reports at exit can still name the library an allocation came from.
        flags = ffi.RTLD_NOW | ffi.RTLD_GLOBAL | ffi.RTLD_NODELETE
        self._handles = {}
        for role in ROLES:
            path = backend.libraries[role]
            try:
                self._handles[role] = ffi.dlopen(str(path), flags)
            except OSError as e:
                raise LibraryNotFoundError(f"cannot open {path}: {e}") from None
        if backend.is_emulator:
            self._handles["emulator"] = self._handles["ascendcl"]
        self._split = {}  # other operator libraries, opened on first need

    def __getattr__(self, name: str):
        role = LIBRARY_OF.get(name)
        if role is None:
            # A constant (enum value, status code): any handle knows them.
            return getattr(self._handles["ascendcl"], name)
        handle = self._handles.get(role)
        if handle is None:
            raise SymbolNotFoundError(
                f"{name} is emulator-only and the active backend is {self.backend.name}")
        try:
            func = getattr(handle, name)
        except (AttributeError, ffi.error):  # cffi raises ffi.error for a missing symbol
            func = self._from_split_library(role, name)
        setattr(self, name, func)  # cache: later lookups skip __getattr__
        return func

    def _from_split_library(self, role, name):
        """An operator function the opened operator library lacks, from the other
        ``libopapi*.so`` beside it (newer releases split operators by domain:
        libopapi_nn.so, libopapi_math.so, ...), each opened on first need."""
        main = self.backend.libraries.get(role, role)
        searched = [str(main)]
        if role == "opapi":
            for path in split_operator_libraries(Path(main)):
                searched.append(str(path))
                handle = self._split.get(path)
                if handle is None:
                    try:
                        handle = self._split[path] = ffi.dlopen(
                            str(path), ffi.RTLD_NOW | ffi.RTLD_GLOBAL | ffi.RTLD_NODELETE)
                    except OSError:
                        continue
                try:
                    return getattr(handle, name)
                except (AttributeError, ffi.error):
                    continue
        raise SymbolNotFoundError(f"symbol {name} not found in {', '.join(searched)}")

    def check_symbols(self) -> list[str]:
        """Names of declared functions the opened libraries do not export (should be empty)."""
        missing = []
        for name, role in LIBRARY_OF.items():
            if role in self._handles:
                try:
                    getattr(self, name)
                except SymbolNotFoundError:
                    missing.append(name)
        return missing


_lock = threading.Lock()
_library: Library | None = None


def library() -> Library:
    """The process-wide bound library, opened on first use."""
    global _library
    lib = _library
    if lib is None:
        with _lock:
            if _library is None:
                _library = Library(choose_backend())
            lib = _library
    return lib
