"""Low-level access for people porting C code line by line: the cffi ``ffi`` object and the
bound library ``lib`` (every declared function and constant, e.g. ``lib.aclrtMalloc``,
``lib.ACL_FLOAT``). Nothing here checks status codes or owns anything."""
from ._ffi import ffi
from ._loader import library


def __getattr__(name):
    if name == "lib":
        return library()
    raise AttributeError(name)


__all__ = ["ffi", "lib"]
