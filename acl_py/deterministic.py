"""Deterministic computation: the runtime's process-wide ``ACL_OPT_DETERMINISTIC`` option.

CANN's operators read the option when an operator call builds its executor (phase one,
``aclnnXxxGetWorkspaceSize``) through ``aclrtGetSysParamOpt`` (hicann/opbase
src/nnopbase/individual_op/executor/indv_executor_utils.h GetGlobalDeterministic), and the
executor keeps that level for its launch: set it before the calls it should govern. The
tilings that honour it pick fixed summation orders and may ask for more workspace (e.g.
RmsNormGrad, AddLayerNormGrad); the others behave the same at every level.

The levels (hicann/runtime include/external/acl/acl_base_rt.h): 0 off (the default),
1 deterministic, 2 strong consistency, 3 batch consistency. The runtime refuses any other
value with 107000 (ACL_ERROR_RT_PARAM_INVALID), raised as
:class:`~acl_py.errors.InvalidParameterError` whose ``parameter`` is ``"level"``.

The setting is the process's, for every thread and device (``aclrtSetSysParamOpt``); it
survives ``aclrtResetDevice``. Needs no device: only the runtime's library.
"""
from __future__ import annotations

import contextlib
import enum
import operator
from typing import Iterator, SupportsIndex

from . import errors
from . import runtime as _rt
from ._ffi import ffi

__all__ = ["Deterministic", "deterministic", "get_deterministic", "set_deterministic"]

_INT64 = (-(1 << 63), (1 << 63) - 1)


class Deterministic(enum.IntEnum):
    """The levels of ``ACL_OPT_DETERMINISTIC``."""

    OFF = 0
    ON = 1
    STRONG_CONSISTENCY = 2
    BATCH_CONSISTENCY = 3


def _level(level: SupportsIndex | bool) -> int:
    try:
        value = operator.index(level)
    except TypeError:
        raise errors.AclTypeError(
            "level", f"expected an int or Deterministic, got {type(level).__name__}") from None
    if not _INT64[0] <= value <= _INT64[1]:
        raise errors.AclArgumentError("level", f"{value} does not fit int64_t")
    return value


def set_deterministic(level: SupportsIndex | bool = Deterministic.ON) -> None:
    """Sets the process's deterministic level (``aclrtSetSysParamOpt``): ``True``/``1`` on,
    ``False``/``0`` off, 2 and 3 the consistency levels. Raises InvalidParameterError
    (107000, ``parameter == "level"``) for a value the runtime refuses."""
    value = _level(level)
    lib = _rt.ensure()
    status = lib.aclrtSetSysParamOpt(lib.ACL_OPT_DETERMINISTIC, value)
    if status:
        err = errors.make_error(status, "aclrtSetSysParamOpt")
        err.parameter = "level"
        raise err


def get_deterministic() -> Deterministic | int:
    """The process's deterministic level (``aclrtGetSysParamOpt``; 0 until set), as a
    :class:`Deterministic` (a level this enum does not know is given as its int)."""
    lib = _rt.ensure()
    out = ffi.new("int64_t *")
    errors.check(lib.aclrtGetSysParamOpt(lib.ACL_OPT_DETERMINISTIC, out), "aclrtGetSysParamOpt")
    try:
        return Deterministic(out[0])
    except ValueError:
        return int(out[0])


@contextlib.contextmanager
def deterministic(level: SupportsIndex | bool = Deterministic.ON) -> Iterator[None]:
    """``with acl_py.deterministic():`` sets the level for the block and puts the previous one
    back after it (process-wide: other threads see it too)."""
    previous = get_deterministic()
    set_deterministic(level)
    try:
        yield
    finally:
        set_deterministic(previous)
