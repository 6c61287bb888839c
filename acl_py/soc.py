"""The part (SoC) the backend runs on, and what it computes.

``soc_name()`` is ``aclrtGetSocName()``: the vendor's part name ("Ascend910B2",
"Ascend910_9391", "Ascend310P3", ...), the same string CANN's sample builds take as
SOC_VERSION. Like the vendor's runtime it needs no ``aclInit`` and no current device; the
emulator reports the part named by ``ACL_EMU_SOC`` (default Ascend910B2, an Atlas A2 part).

``supports_bfloat16()`` answers whether a part computes BFLOAT16: the Atlas training series
(Ascend910A, Ascend910B, Ascend910ProA/ProB/PremiumA: the first generation) and the Atlas
inference series (Ascend310P*) do not; Atlas A2/A3 (Ascend910B1-4, Ascend910_93xx) and later
parts do. The vendor's operators choose their supported dtype lists by the same split (NPU
architecture DAV_2201 or newer), e.g. hicann/ops-nn norm/layer_norm_grad_v3's docs.
"""
from __future__ import annotations

from . import errors

__all__ = ["soc_name", "supports_bfloat16"]

# Parts without BFLOAT16, by exact name ("Ascend910B" is a first-generation Atlas training
# part; the Atlas A2 parts are Ascend910B1..B4), and by prefix.
_NO_BF16_NAMES = frozenset({"Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB",
                            "Ascend910PremiumA"})
_NO_BF16_PREFIXES = ("Ascend310P",)


def soc_name() -> str:
    """``aclrtGetSocName()``: the name of the part the backend runs on. Raises
    :class:`acl_py.errors.InternalError` (the call has no status code: it returns NULL) with
    the runtime's message when the name cannot be read."""
    from ._loader import library
    from ._ffi import ffi
    p = library().aclrtGetSocName()
    if p == ffi.NULL:
        raise errors.InternalError(errors.CODES["ACL_ERROR_INTERNAL_ERROR"], "aclrtGetSocName",
                                   errors.recent_message() or "returned NULL")
    return ffi.string(p).decode("ascii", "replace")


def supports_bfloat16(soc: str | None = None) -> bool:
    """Whether the part ``soc`` (default: :func:`soc_name`) computes BFLOAT16. A part this
    table does not know is taken to be newer than Atlas A2, i.e. to have it."""
    if soc is None:
        soc = soc_name()
    return not (soc in _NO_BF16_NAMES or soc.startswith(_NO_BF16_PREFIXES))
