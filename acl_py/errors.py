"""Every status code of the CANN runtime (``aclError``) and the operator library
(``aclnnStatus``) mapped, in one table, to its name and an exception class.

Exception families (all derive from :class:`AclError`, which carries ``code``, ``name``,
``call`` and ``message``, the text of ``aclGetRecentErrMsg()`` read on the failing thread right
after the failing call):

==============================  ==============================================================
class                           codes
==============================  ==============================================================
InvalidParameterError           100000 INVALID_PARAM, 107000 RT_PARAM_INVALID,
                                100003 INVALID_FILE, 100006 PARSE_FILE (aclInit's config),
                                107016 RT_INVALID_MEMORY_TYPE,
                                107006 RT_EVENT_TIMESTAMP_INVALID (an event's record not
                                complete yet)
  InvalidHandleError            107017 RT_INVALID_HANDLE, 200005 INVALID_RESOURCE_HANDLE
NotInitializedError             100001 UNINITIALIZE (also raised by acl-py after ``finalize()``),
                                100037 REPEAT_FINALIZE
AlreadyInitializedError         100002 REPEAT_INITIALIZE
DeviceError                     107001 RT_INVALID_DEVICEID, 107002 RT_CONTEXT_NULL,
                                107003 RT_STREAM_CONTEXT, 200002 INVALID_DEVICE,
                                207005 RT_RESOURCE_ALLOC_FAIL (e.g. too many streams),
                                507007 RT_CONTEXT_RELEASE_ERROR (reset of a device not set);
                                the driver's (hicann/runtime errcode_manage.cc): 207004
                                RT_NO_DEVICE, 207006 RT_NO_PERMISSION, 507033
                                RT_DEV_SETUP_ERROR, 507010 RT_LOST_HEARTBEAT, 507899
                                RT_DRV_INTERNAL_ERROR
DeviceMemoryError (MemoryError) 200000 BAD_ALLOC, 207001 RT_MEMORY_ALLOCATION,
                                207018 RT_DEVICE_OOM, 300000 STORAGE_OVER_LIMIT
NotSupportedError               200001 API_NOT_SUPPORT, 207000 RT_FEATURE_NOT_SUPPORT
OperatorParameterError          161001 / 161002 / 561002 (subclasses below)
  OperatorNullPointerError      161001 ACLNN_ERR_PARAM_NULLPTR
  OperatorInvalidParameterError 161002 ACLNN_ERR_PARAM_INVALID
  OperatorTilingError           561002 ACLNN_ERR_INNER_TILING_ERROR (an operator's tiling
                                refused its shapes or attributes: the vendor's docs give it
                                for arguments that break their rules, e.g. aclnnRmsNorm's)
RuntimeFailure                  361001 ACLNN_ERR_RUNTIME_ERROR, 500001 FAILURE
AclTimeoutError (TimeoutError)  507046 RT_STREAM_SYNC_TIMEOUT, 507047 RT_EVENT_SYNC_TIMEOUT
                                (a bounded synchronize ran out of time; the work stays
                                queued)
InternalError                   500000 INTERNAL_ERROR, 507000 RT_INTERNAL_ERROR,
                                561000 ACLNN_ERR_INNER, 561101 .._CREATE_EXECUTOR,
                                561103 .._INNER_NULLPTR; an install without the operators'
                                kernels: 561003 .._FIND_KERNEL_ERROR, 561107
                                .._OPP_PATH_NOT_FOUND, 561112 .._OPP_KERNEL_PKG_NOT_FOUND
CreateFailedError               a create function (aclCreateTensor, ...) returned NULL
==============================  ==============================================================

Other codes raise a plain :class:`AclError` named as acl-py's headers declare them (the
vendor's ``ACL_ERROR_*`` and ``ACLNN_ERR_*``), else ``UNKNOWN``.

Mistakes caught in Python are not ``AclError``\\ s: they are :class:`AclArgumentError` (a
``ValueError``) or :class:`AclTypeError` (a ``TypeError``), naming the argument; when an
operator's phase one refused first, they carry its ``code``, ``call`` and ``message`` too
(only a rule whose ``codes``, the statuses the vendor refuses it with, allow that code:
:meth:`AclArgumentError.explains`).
Using an object after ``close()`` raises :class:`ClosedError` (a ``ValueError``, like I/O on a
closed file). An exception raised inside a host function (``Stream.launch_host_func``) comes
back as :class:`HostFunctionError` from the next synchronize of that stream.
"""
from __future__ import annotations

from typing import Iterable


class AclError(Exception):
    """A CANN call returned a failure status.

    Attributes: ``code`` (int, or None for a create function that returned NULL), ``name``
    (e.g. ``"ACL_ERROR_RT_MEMORY_ALLOCATION"``), ``call`` (the C function), ``message`` (the
    runtime's explanation from ``aclGetRecentErrMsg()``, possibly empty), ``parameter`` (the
    operator parameter the message names, where acl-py could tell; else None)."""

    def __init__(self, code: int | None, call: str = "", message: str | None = "",
                 name: str | None = None) -> None:
        self.parameter: str | None = None
        self.code = code
        self.call = call
        self.message = message or ""
        self.name = name if name is not None else code_name(code)
        super().__init__(code, call, self.message)

    def __str__(self):
        what = f"{self.call} failed" if self.call else "CANN call failed"
        if self.code is None:
            text = f"{what}: returned NULL"
        else:
            text = f"{what}: {self.name} ({self.code})"
        return f"{text}: {self.message}" if self.message else text

    def __reduce__(self):  # picklable with its fields (multiprocessing, pytest-xdist)
        return (_rebuild, (type(self), self.code, self.call, self.message, self.name))


def _rebuild(cls, code, call, message, name):
    return cls(code, call, message, name)


class InvalidParameterError(AclError):
    """A runtime argument was rejected (100000, 107000)."""


class InvalidHandleError(InvalidParameterError):
    """A stream, event or context handle that is not live (107017, 200005)."""


class NotInitializedError(AclError):
    """The runtime is not initialized (100001), or acl-py was finalized."""


class AlreadyInitializedError(AclError):
    """aclInit was called while the runtime was initialized (100002)."""


class DeviceError(AclError):
    """Device selection problems: bad id, no device set on the thread, a stream of another
    device, a device reset that was not set; a device out of resources such as streams
    (107001, 107002, 107003, 200002, 207005, 507007)."""


class DeviceMemoryError(AclError, MemoryError):
    """Device (or pinned host) memory could not be allocated (200000, 207001, 300000). Also a
    ``MemoryError``, so generic out-of-memory handlers catch it."""


class NotSupportedError(AclError):
    """The API or feature is not supported here (200001, 207000)."""


class OperatorParameterError(AclError):
    """An aclnn operator rejected its arguments (161001, 161002, 561002)."""


class OperatorNullPointerError(OperatorParameterError):
    """A required operator argument was NULL (161001 ACLNN_ERR_PARAM_NULLPTR)."""


class OperatorInvalidParameterError(OperatorParameterError):
    """An operator argument broke a rule: dtype, shape, length (161002 ACLNN_ERR_PARAM_INVALID)."""


class OperatorTilingError(OperatorParameterError):
    """An operator's tiling refused its arguments (561002 ACLNN_ERR_INNER_TILING_ERROR): the
    code generated operators (aclnnRmsNorm, aclnnRmsNormGrad, ...) return when their shapes
    or attributes break the rules of their docs, which run in the tiling there."""


class RuntimeFailure(AclError):
    """Work could not be run: stream/launch problems (361001, 500001)."""


class AclTimeoutError(AclError, TimeoutError):
    """A bounded wait (``synchronize(timeout=...)``) ran out of time (507046 stream or device,
    507047 event). The work is still queued and may still run: the objects stay usable, and
    memory the work uses is not released until a later synchronize gets past it. Also a
    ``TimeoutError``, so ``except TimeoutError`` catches it."""


class InternalError(AclError):
    """An internal failure of the runtime or operator library (500000, 507000, 561xxx)."""


class CreateFailedError(AclError):
    """A create function (aclCreateTensor, aclCreateIntArray, aclCreateBoolArray) returned
    NULL; ``code`` is None and ``message`` says why."""


# ---- Python-boundary errors (naming the argument) ---------------------------------------

class AclArgumentError(ValueError):
    """A bad argument, named by ``argument``: detected in Python before any C call, or by
    the Python checks an operator runs after its library refused the call. In that case
    ``code``, ``call`` and ``message`` are the refusal's (status code, C function,
    ``aclGetRecentErrMsg()`` text, also in the exception text) and the refusal, a
    :class:`OperatorParameterError`, is its ``__cause__``; otherwise ``code`` is None.
    ``codes``: the status codes the vendor refuses the rule with, where the operator states
    them (a rule its tiling checks: 561103, 561002), else None."""

    code: int | None = None
    call: str = ""
    message: str = ""

    def __init__(self, argument: str | None, problem: str, *,
                 codes: "Iterable[int] | None" = None) -> None:
        self.argument = argument
        self.problem = problem
        # the status codes the vendor refuses this rule with (a rule its tiling or an L0 op
        # checks, after the op_api's checks): None, not stated (any refusal may be it)
        self.codes = None if codes is None else frozenset(codes)
        super().__init__(f"{argument}: {problem}" if argument else problem)

    def explains(self, code: int | None) -> bool:
        """Whether this rule may be what a refusal with status ``code`` is about: its
        ``codes`` hold ``code``, or state nothing (or ``code`` is None: nothing refused yet).
        A rule the vendor checks at a later stage (the tiling's) cannot explain an earlier
        stage's refusal (the op_api's 161002), which the device returns before reaching it."""
        return self.codes is None or code is None or code in self.codes

    def refused(self, error: BaseException) -> None:
        """Attaches the status of ``error`` (an AclError: the library's refusal)."""
        if isinstance(error, AclError) and error.code is not None:
            self.code = error.code
            self.call = error.call
            self.message = error.message

    def __str__(self) -> str:
        text = super().__str__()
        if self.code is None:
            return text
        status = f"{self.call} returned {code_name(self.code)} ({self.code})"
        return f"{text} [{status}: {self.message}]" if self.message else f"{text} [{status}]"

    def __reduce__(self):
        return (_rebuild_argument, (type(self), self.argument, self.problem, self.code,
                                    self.call, self.message, self.codes))


def _rebuild_argument(cls: type[AclArgumentError], argument: str | None, problem: str,
                      code: int | None, call: str, message: str,
                      codes: "frozenset[int] | None" = None) -> AclArgumentError:
    e = cls(argument, problem, codes=codes)
    if code is not None:
        e.code, e.call, e.message = code, call, message
    return e


class AclTypeError(AclArgumentError, TypeError):
    """An argument of the wrong type (or an unsupported dtype). Both a ``ValueError`` and a
    ``TypeError``: catch whichever reads better."""


class ClosedError(ValueError):
    """An acl-py object was used after ``close()`` (or after ``acl_py.finalize()``)."""


class HostFunctionError(RuntimeError):
    """A Python function queued with :meth:`acl_py.Stream.launch_host_func` raised; raised by
    the first synchronize that learns the stream ran it. The exception the function raised is
    ``__cause__`` (and ``error``)."""

    def __init__(self, function: object, error: BaseException) -> None:
        self.function = function
        self.error = error
        super().__init__(f"host function {function!r} raised {type(error).__name__}: {error}")


class EmulatorOnlyError(RuntimeError):
    """An ``acl_py.emulator`` helper was called while the backend is real CANN."""


# ---- the table ----------------------------------------------------------------------------

# code -> (name, class). Values are the ABI's (bindings/include: acl/acl_base.h,
# acl/error_codes/rt_error_codes.h, aclnn/opdev/op_errno.h).
STATUS = {
    0: ("ACL_SUCCESS", None),
    100000: ("ACL_ERROR_INVALID_PARAM", InvalidParameterError),
    100001: ("ACL_ERROR_UNINITIALIZE", NotInitializedError),
    100002: ("ACL_ERROR_REPEAT_INITIALIZE", AlreadyInitializedError),
    100003: ("ACL_ERROR_INVALID_FILE", InvalidParameterError),
    100006: ("ACL_ERROR_PARSE_FILE", InvalidParameterError),
    100037: ("ACL_ERROR_REPEAT_FINALIZE", NotInitializedError),
    200000: ("ACL_ERROR_BAD_ALLOC", DeviceMemoryError),
    200001: ("ACL_ERROR_API_NOT_SUPPORT", NotSupportedError),
    200002: ("ACL_ERROR_INVALID_DEVICE", DeviceError),
    200005: ("ACL_ERROR_INVALID_RESOURCE_HANDLE", InvalidHandleError),
    300000: ("ACL_ERROR_STORAGE_OVER_LIMIT", DeviceMemoryError),
    500000: ("ACL_ERROR_INTERNAL_ERROR", InternalError),
    500001: ("ACL_ERROR_FAILURE", RuntimeFailure),
    107000: ("ACL_ERROR_RT_PARAM_INVALID", InvalidParameterError),
    107001: ("ACL_ERROR_RT_INVALID_DEVICEID", DeviceError),
    107002: ("ACL_ERROR_RT_CONTEXT_NULL", DeviceError),
    107003: ("ACL_ERROR_RT_STREAM_CONTEXT", DeviceError),
    107006: ("ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID", InvalidParameterError),
    107016: ("ACL_ERROR_RT_INVALID_MEMORY_TYPE", InvalidParameterError),
    107017: ("ACL_ERROR_RT_INVALID_HANDLE", InvalidHandleError),
    207000: ("ACL_ERROR_RT_FEATURE_NOT_SUPPORT", NotSupportedError),
    207001: ("ACL_ERROR_RT_MEMORY_ALLOCATION", DeviceMemoryError),
    207004: ("ACL_ERROR_RT_NO_DEVICE", DeviceError),
    207005: ("ACL_ERROR_RT_RESOURCE_ALLOC_FAIL", DeviceError),
    207006: ("ACL_ERROR_RT_NO_PERMISSION", DeviceError),
    207018: ("ACL_ERROR_RT_DEVICE_OOM", DeviceMemoryError),
    507010: ("ACL_ERROR_RT_LOST_HEARTBEAT", DeviceError),
    507033: ("ACL_ERROR_RT_DEV_SETUP_ERROR", DeviceError),
    507899: ("ACL_ERROR_RT_DRV_INTERNAL_ERROR", DeviceError),
    507000: ("ACL_ERROR_RT_INTERNAL_ERROR", InternalError),
    507046: ("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", AclTimeoutError),
    507047: ("ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", AclTimeoutError),
    507007: ("ACL_ERROR_RT_CONTEXT_RELEASE_ERROR", DeviceError),
    161001: ("ACLNN_ERR_PARAM_NULLPTR", OperatorNullPointerError),
    161002: ("ACLNN_ERR_PARAM_INVALID", OperatorInvalidParameterError),
    561002: ("ACLNN_ERR_INNER_TILING_ERROR", OperatorTilingError),
    361001: ("ACLNN_ERR_RUNTIME_ERROR", RuntimeFailure),
    561000: ("ACLNN_ERR_INNER", InternalError),
    561101: ("ACLNN_ERR_INNER_CREATE_EXECUTOR", InternalError),
    561103: ("ACLNN_ERR_INNER_NULLPTR", InternalError),
    561003: ("ACLNN_ERR_INNER_FIND_KERNEL_ERROR", InternalError),
    561107: ("ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND", InternalError),
    561112: ("ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND", InternalError),
}

# name -> code, e.g. CODES["ACL_ERROR_RT_MEMORY_ALLOCATION"] == 207001
CODES = {name: code for code, (name, _cls) in STATUS.items()}


_declared: dict[int, str] | None = None


def _declared_names() -> dict[int, str]:
    """code -> name of every status code acl-py's headers declare (the vendor's full lists),
    read once from the declarations (no library needed: dlopen(None) is the process)."""
    global _declared
    if _declared is None:
        from ._ffi import ffi
        lib = ffi.dlopen(None)
        names: dict[int, str] = {}
        for n in sorted(dir(lib)):
            # one alias, the deprecated misspelling (hicann/opbase op_errno.h), sorts first:
            # the later name wins
            if n.startswith(("ACL_ERROR_", "ACLNN_ERR_")):
                names[int(getattr(lib, n))] = n
        _declared = names
    return _declared


def code_name(code):
    if code is None:
        return "NULL"
    entry = STATUS.get(code)
    if entry:
        return entry[0]
    return _declared_names().get(code, "UNKNOWN")


def error_class(code):
    """The exception class for a status code (AclError for codes outside the table)."""
    entry = STATUS.get(code)
    return entry[1] if entry and entry[1] is not None else AclError


def recent_message():
    """``aclGetRecentErrMsg()`` of the calling thread as text ('' when there is none). Reading
    it consumes it, so it is read once, right after the failing call."""
    try:
        from ._loader import library
        p = library().aclGetRecentErrMsg()
    except Exception:  # the library cannot even be asked: no message, but keep the code
        return ""
    if not p:
        return ""
    from ._ffi import ffi
    return ffi.string(p).decode("utf-8", "replace")


def make_error(status, call):
    """The exception for a failed call, with the thread's recent message attached."""
    status = int(status)
    return error_class(status)(status, call, recent_message())


def raise_error(status, call):
    raise make_error(status, call)


def check(status, call):
    """Raises the typed error when ``status`` is not success. Call it on the thread that made
    the call, before any other CANN call, so the message is the right one."""
    if status:
        raise make_error(status, call)


def check_create(ptr, call):
    """For the create functions that return NULL on failure: returns ``ptr`` or raises
    :class:`CreateFailedError` with the runtime's message."""
    if not ptr:
        raise CreateFailedError(None, call, recent_message())
    return ptr


__all__ = [
    "AclError", "InvalidParameterError", "InvalidHandleError", "NotInitializedError",
    "AlreadyInitializedError", "DeviceError", "DeviceMemoryError", "NotSupportedError",
    "OperatorParameterError", "OperatorNullPointerError", "OperatorInvalidParameterError",
    "OperatorTilingError",
    "RuntimeFailure", "AclTimeoutError", "InternalError", "CreateFailedError", "AclArgumentError", "AclTypeError",
    "ClosedError", "EmulatorOnlyError", "STATUS", "CODES", "code_name", "error_class",
    "check", "check_create", "make_error", "raise_error", "recent_message",
]
