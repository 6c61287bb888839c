"""Low-level access for people porting C code line by line: the cffi ``ffi`` object and the
bound library ``lib`` (every declared function and constant, e.g. ``lib.aclrtMalloc``,
``lib.ACL_FLOAT``), and :func:`delete_array`, C++'s ``delete[]`` for the arrays CANN hands
out. Nothing here checks status codes or owns anything."""
from __future__ import annotations

import threading
from typing import Any

import cffi

from ._ffi import ffi
from ._loader import library

# operator delete[](void *) by its Itanium C++ ABI name: what a C++ program's `delete[] p`
# calls for an array of a type without a destructor (int64_t).
_CXX = cffi.FFI()
_CXX.cdef("void _ZdaPv(void *);")
_delete_lock = threading.Lock()
_operator_delete_array: Any = None


def _delete_array_function() -> Any:
    global _operator_delete_array
    with _delete_lock:
        if _operator_delete_array is None:
            library()   # CANN's libnnopbase.so brings libstdc++, opened RTLD_GLOBAL
            try:
                # The process's global scope, where a C++ program's delete[] binds too (a
                # sanitizer's replacement, preloaded, comes first there).
                _operator_delete_array = _CXX.dlopen(None)._ZdaPv
            except (AttributeError, _CXX.error, OSError):
                raise RuntimeError(
                    "operator delete[] (_ZdaPv) is not loaded in this process: the CANN "
                    "libraries bring the C++ runtime (libstdc++) with them, and none of "
                    "those opened did") from None
        return _operator_delete_array


def delete_array(pointer: Any) -> None:
    """``delete[] pointer`` for an array CANN allocated with C++'s ``new[]`` and handed to
    the caller to release: ``aclGetViewShape``, ``aclGetStorageShape`` and
    ``aclGetViewStrides`` (their docs end with ``delete[] viewDims;``). ``pointer`` is the
    cdata the call filled in (e.g. ``dims[0]`` of ``dims = ffi.new("int64_t **")``). NULL does
    nothing, as in C++. Releasing it any other way (``free``, twice) is undefined."""
    if pointer == ffi.NULL:
        return
    _delete_array_function()(pointer)


def __getattr__(name):
    if name == "lib":
        return library()
    raise AttributeError(name)


__all__ = ["ffi", "lib", "delete_array"]
