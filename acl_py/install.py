"""The versions of the installed CANN packages, as the runtime reads them.

``cann_version(package)`` is ``aclsysGetVersionStr``: the version an install records for
``package`` (``"runtime"``, ``"opbase"``, ``"ops-nn"``, ``"ops_math"``, ...) in
``$ASCEND_HOME_PATH/share/info/<package>/version.info``, which the vendor's ``set_env.sh``
points at the install (acl-py sets an unset ``ASCEND_HOME_PATH`` to the root of the CANN
install it loads, when that has an operator package; the emulator's prefix records the
versions it follows, and is read when ``ASCEND_HOME_PATH`` names it). Needs no ``aclInit``.
"""
from __future__ import annotations

from . import errors
from . import runtime as _rt

__all__ = ["cann_version"]


def cann_version(package: str = "runtime") -> str:
    """The installed version of the CANN package ``package`` (e.g. ``"9.1.0"``). Raises
    :class:`acl_py.errors.InvalidParameterError` (``ACL_ERROR_INVALID_FILE``, 100003) when the
    install has no such package or ``ASCEND_HOME_PATH`` names no install."""
    if not isinstance(package, str) or not package or "\0" in package:
        raise errors.AclTypeError("package", f"expected a package name such as 'runtime', got "
                                             f"{package!r}")
    _rt.refuse_if_forked("acl_py.cann_version()")
    from ._loader import library
    from ._ffi import ffi
    lib = library()
    out = ffi.new("char[]", lib.ACL_PKG_VERSION_MAX_SIZE)
    errors.check(lib.aclsysGetVersionStr(ffi.new("char[]", package.encode()), out),
                 "aclsysGetVersionStr")
    return ffi.string(out).decode("utf-8", "replace")
