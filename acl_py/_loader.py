"""Finds the CANN libraries (real or emulated), opens them, and binds each declared function
to the library that must export it.

Backend choice, from ACL_PY_BACKEND:
  auto      (default) real CANN when its libraries are found, else the embedded emulator
  cann      real CANN only; an error lists every place that was searched
  emulator  the emulator built into acl_py/_emulator (or ACL_PY_EMULATOR_PREFIX)

Libraries are opened by absolute path only. A search root given as a relative path is
ignored (and reported), so a library planted in the current directory is never loaded.

A CANN install is driven the way the vendor's ``set_env.sh`` sets it up: the loader cannot
change ``LD_LIBRARY_PATH`` for the process it runs in (the dynamic linker read it at start),
so a library whose dependencies are not on it fails to open with an error naming the script
to source; the variables the vendor's libraries read at run time (``ASCEND_HOME_PATH``,
``ASCEND_OPP_PATH``, ``ASCEND_AICPU_PATH``) are given set_env.sh's values when unset.
"""
from __future__ import annotations

import os
import platform
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ._ffi import LIBRARY_OF, ffi

# Search roots, in the order the vendor's tools look (hicann/runtime
# example/common/resolve_cann_env.sh): the variables set_env.sh exports, then the install
# locations of a user's (non-root) install under $HOME and of a root install.
ROOT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_CUSTOM_PATH")
DEFAULT_ROOTS = ("~/Ascend/cann", "~/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann",
                 "/usr/local/Ascend/ascend-toolkit/latest", "/opt/Ascend/cann")

# Library role -> file names, tried in order. The operator library is found by
# operator_libraries() (libopapi_nn.so, or libopapi.so in releases before the split). The
# runtime's API (acl_rt.h: aclInit, aclrt*, aclGetRecentErrMsg) is libacl_rt.so's, which the
# vendor's docs and samples link; libascendcl.so is its compatibility library, kept first for
# the installs acl-py has always loaded, and optional in the runtime package (hicann/runtime
# scripts/package/module/ascend/RuntimeSo.xml: libacl_rt.so required, libascendcl.so
# optional="true"; docs/zh/api_ref/01_overview.md), so an install may have libacl_rt.so only.
LIBRARY_FILES = {
    "ascendcl": ("libascendcl.so", "libacl_rt.so"),
    "nnopbase": ("libnnopbase.so",),
    "opapi": ("libopapi_nn.so", "libopapi.so"),
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
    # Variables the loader set, unset before, to set_env.sh's values (install_environment)
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def is_emulator(self) -> bool:
        return self.name == "emulator"


def operator_libraries(lib_dir: Path) -> list[Path]:
    """The operator libraries of one install's library directory, the one set a process may
    load: the split ``libopapi_<domain>.so`` (``libopapi_nn.so`` first) when there is any,
    else ``libopapi.so``. The vendor deprecates the all-in-one libopapi.so and does not
    support using it together with the split libraries (hicann/ops-nn docs/zh/op_api_list.md),
    so the two kinds are never mixed."""
    split = sorted(p for p in lib_dir.glob("libopapi_*.so") if p.is_file())
    if split:
        nn = lib_dir / "libopapi_nn.so"
        return [p for p in split if p == nn] + [p for p in split if p != nn]
    single = lib_dir / "libopapi.so"
    return [single] if single.is_file() else []


def split_operator_libraries(opened: Path) -> list[Path]:
    """The other operator libraries of the opened one's set (:func:`operator_libraries`), in
    name order: the other domains of a split install, none beside libopapi.so."""
    return [p for p in operator_libraries(opened.parent) if p != opened]


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
    for p in DEFAULT_ROOTS:
        p = os.path.expanduser(p)
        if os.path.isabs(p):  # "~/..." without a usable $HOME stays relative: skipped
            roots.append(Path(p))
    return roots, notes


def find_in_root(root: Path, searched: list[str]) -> dict[str, Path] | None:
    """The libraries of every role under one install root ({role: path}), or None when a
    role is missing; every path tried is appended to ``searched`` (for the error message)."""
    for lib_dir in _lib_dirs(root):
        found: dict[str, Path] = {}
        for role in ROLES:
            for fname in LIBRARY_FILES[role]:
                searched.append(str(lib_dir / fname))
            if role == "opapi":
                searched.append(str(lib_dir / "libopapi_<domain>.so"))
                ops = operator_libraries(lib_dir)
                if ops:
                    found[role] = ops[0]
                continue
            for fname in LIBRARY_FILES[role]:
                path = lib_dir / fname
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
            "ACL_PY_BACKEND=cann but the CANN libraries (libascendcl.so or libacl_rt.so, "
            "libnnopbase.so, and libopapi_nn.so, another libopapi_<domain>.so or libopapi.so) "
            "were not found. "
            "Searched:\n  " + listing +
            "\nSource the toolkit's set_env.sh or set ASCEND_HOME_PATH to the install root.")
    return _emulator_backend("ACL_PY_BACKEND=auto: no CANN install found, using the emulator",
                             searched)


# What set_env.sh exports that the vendor's libraries read at run time, and its value relative
# to the install root (hicann/runtime scripts/package/runtime/set_env.sh): the operator
# libraries find their kernels through ASCEND_OPP_PATH and ASCEND_HOME_PATH (hicann/opbase
# src/nnopbase/composite_op/aclnn_engine/kernel_utils.cpp, GetOppKernelPath: an operator call
# fails with ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND without them).
INSTALL_VARIABLES = (("ASCEND_HOME_PATH", ""), ("ASCEND_OPP_PATH", "opp"),
                     ("ASCEND_AICPU_PATH", ""))


def install_environment(root: Path) -> dict[str, str]:
    """Gives each unset variable of :data:`INSTALL_VARIABLES` set_env.sh's value for ``root``
    (an install with an operator package, ``<root>/opp``), before the vendor's libraries read
    them; returns what was set. A variable already set is never changed."""
    if not (root / "opp").is_dir():
        return {}
    done = {}
    for var, sub in INSTALL_VARIABLES:
        if not os.environ.get(var):
            os.environ[var] = done[var] = str(root / sub) if sub else str(root)
    return done


def environment_script(root: Path) -> Path | None:
    """The vendor's environment script of an install root: ``<root>/set_env.sh`` (a release
    directory), ``<root>/../set_env.sh`` (``ascend-toolkit/set_env.sh`` beside ``latest/``) or
    ``<root>/bin/setenv.bash``."""
    for p in (root / "set_env.sh", root.parent / "set_env.sh", root / "bin" / "setenv.bash"):
        if p.is_file():
            return p
    return None


# The NPU driver's library, which the runtime links (hicann/runtime src/runtime/cmake/
# runtime.cmake links ascend_hal_stub, cmake/stub/CMakeLists.txt names it ascend_hal), and
# where the driver installs it (set_env.sh; /etc/ascend_install.info names another base).
DRIVER_LIBRARY = "libascend_hal.so"
DRIVER_INSTALL_INFO = "/etc/ascend_install.info"


def driver_library() -> Path | None:
    """The driver's libascend_hal.so where the driver installs it, or None."""
    bases = []
    try:
        with open(DRIVER_INSTALL_INFO, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition("=")
                if key.strip().lower() == "driver_install_path_param" and value.strip():
                    bases.append(Path(value.strip()))
    except OSError:
        pass
    bases.append(Path("/usr/local/Ascend"))
    for base in bases:
        for sub in ("driver/lib64/driver", "driver/lib64", "driver/lib64/common"):
            if (base / sub / DRIVER_LIBRARY).is_file():
                return base / sub / DRIVER_LIBRARY
    return None


def mapped_driver_library() -> Path | None:
    """The driver library (libascend_hal.so) this process has mapped, which the vendor's
    runtime links, or None (the emulator, or not loaded)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].rstrip("\n").endswith("/" + DRIVER_LIBRARY):
                    return Path(fields[5].rstrip("\n"))
    except OSError:
        pass
    return None


def driver_stub_note() -> str | None:
    """When the mapped driver library is the toolkit's link-time stub (``devlib/``, which
    set_env.sh puts on LD_LIBRARY_PATH when it finds no driver: hicann/runtime set_env.sh,
    cmake/package.cmake), which has no device: what it is and what to do."""
    p = mapped_driver_library()
    if p is None or "devlib" not in p.parts:
        return None
    return (f"the NPU driver library in use is the toolkit's stub {p}, which has no device "
            f"(set_env.sh puts devlib/ on LD_LIBRARY_PATH when it finds no driver): install "
            f"the Ascend driver, then source set_env.sh again in a new shell; on a machine "
            f"without NPUs, ACL_PY_BACKEND=emulator uses the CPU emulator")


_MISSING_DEPENDENCY = re.compile(r"([^\s:'\"]+\.so[\w.]*): cannot open shared object file")


def open_failure(backend: Backend, path: Path, error: str) -> str:
    """The message for a library of ``backend`` that dlopen refused with ``error``: for a
    dependency missing from the linker's search path, which one, and what to do about it."""
    msg = f"cannot open {path}: {error}"
    m = _MISSING_DEPENDENCY.search(error)
    if backend.is_emulator or m is None or Path(m.group(1)) == path:
        return msg
    dep = Path(m.group(1)).name
    script = environment_script(backend.root)
    source = (f"source {script}" if script is not None
              else f"source the set_env.sh of the CANN install under {backend.root}")
    if dep == DRIVER_LIBRARY:
        driver = driver_library()
        where = (f"the NPU driver's library: it is installed at {driver} but that directory is "
                 f"not on LD_LIBRARY_PATH" if driver is not None else
                 "the NPU driver's library, and no driver was found under "
                 "/usr/local/Ascend/driver: install the Ascend driver (`npu-smi info` lists "
                 "the NPUs once it is loaded)")
        msg += f"\n{dep} is {where}."
    else:
        msg += (f"\n{dep}, a library it needs, is not on LD_LIBRARY_PATH: the CANN "
                f"environment is not set up in this shell.")
    return (msg + f"\nRun `{source}` and start Python again (the dynamic linker reads "
            f"LD_LIBRARY_PATH when a process starts; it cannot be set from inside Python), "
            f"or set ACL_PY_BACKEND=emulator to use the CPU emulator.")


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
        if not backend.is_emulator:
            backend.environment.update(install_environment(backend.root))
        self._handles = {}
        for role in ROLES:
            path = backend.libraries[role]
            try:
                self._handles[role] = ffi.dlopen(str(path), flags)
            except OSError as e:
                raise LibraryNotFoundError(open_failure(backend, path, str(e))) from None
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


def _new_lock_in_forked_child() -> None:
    # Another thread of the parent may have held the lock when this one forked (opening the
    # libraries): the child's only thread would wait for it for ever.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_forked_child)
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
