"""The part (SoC) the backend runs on, and what it computes.

``soc_name()`` is ``aclrtGetSocName()``: the vendor's part name ("Ascend910B2",
"Ascend910_9391", "Ascend310P3", ...), the same string CANN's sample builds take as
SOC_VERSION. Like the vendor's runtime it needs no ``aclInit`` and no current device; the
emulator reports the part named by ``ACL_EMU_SOC`` (default Ascend910B2, an Atlas A2 part).

``supports_bfloat16()`` answers whether a part computes BFLOAT16: the Atlas training series
(Ascend910A, Ascend910B, Ascend910ProA/ProB/PremiumA: the first generation), the Atlas
inference series (Ascend310P*), Atlas 200I/500 A2 (Ascend310B*) and Ascend031/035* do not;
Atlas A2/A3 (Ascend910B1-4, Ascend910_93xx), Ascend950 and Ascend350 parts do. The split is
the vendor's platform configuration's: only the latter's files set ``support_bf16=1``
(hicann/runtime src/platform/platform_config/cann*/<part>.ini), and the operators choose
their dtype lists by it (e.g. hicann/ops-nn norm/layer_norm_grad_v3's docs).

``short_soc_version(soc)`` is the part's family as the vendor's platform configuration names it
(its ``Short_SoC_version``: "Ascend910B" for every Atlas A2 part, "Ascend310P", ...); an
operator's definition configures its kernels per family, lower-cased (the ``AddConfig`` lists
of hicann/ops-nn's ``op_host/*_def.cpp``), which is what ``acl_py.ops.configured`` reads.

``cann_attributes()`` is ``aclGetCannAttributeList()`` by name: what the install's runtime
and the part offer of ``INF_NAN``, ``BF16`` and ``JIT_COMPILE``.
"""
from __future__ import annotations

from . import errors
from . import runtime as _rt

__all__ = ["soc_name", "supports_bfloat16", "short_soc_version", "cann_attributes"]

# aclCannAttr's names, by value (acl/acl_base_rt.h)
_CANN_ATTRIBUTES = ("INF_NAN", "BF16", "JIT_COMPILE")

# The Atlas training series (Short_SoC_version Ascend910) by exact name: "Ascend910B" is one of
# them, the Atlas A2 parts are Ascend910B1..B4 (family Ascend910B).
_ATLAS_TRAINING = frozenset({"Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB",
                             "Ascend910PremiumA"})
# The other families: each is the prefix of its parts' names ("Ascend910_9391",
# "Ascend310P3"; hicann/runtime src/platform/platform_config/cann*/<part>.ini,
# Short_SoC_version), tried in this order.
_FAMILIES = ("Ascend910_93", "Ascend910B", "Ascend310P", "Ascend310B", "Ascend950",
             "Ascend350", "Ascend031", "Ascend035")

# Parts without BFLOAT16 (no support_bf16=1 in their platform configuration), by family.
_NO_BF16_FAMILIES = frozenset({"Ascend910", "Ascend310P", "Ascend310B", "Ascend031",
                               "Ascend035"})

def soc_name() -> str:
    """``aclrtGetSocName()``: the name of the part the backend runs on. Raises
    :class:`acl_py.errors.InternalError` (the call has no status code: it returns NULL) with
    the runtime's message when the name cannot be read, and :class:`acl_py.ForkedError` in
    a process forked from an initialized one (the runtime there is the parent's copy)."""
    _rt.refuse_if_forked("acl_py.soc_name()")
    from ._loader import library
    from ._ffi import ffi
    p = library().aclrtGetSocName()
    if p == ffi.NULL:
        raise errors.InternalError(errors.CODES["ACL_ERROR_INTERNAL_ERROR"], "aclrtGetSocName",
                                   errors.recent_message() or "returned NULL")
    return ffi.string(p).decode("ascii", "replace")


def supports_bfloat16(soc: str | None = None) -> bool:
    """Whether the part ``soc`` (default: :func:`soc_name`) computes BFLOAT16. A part this
    table does not know is taken to be newer than the vendor's platform configurations, i.e.
    to have it."""
    if soc is None:
        soc = soc_name()
    return short_soc_version(soc) not in _NO_BF16_FAMILIES


def short_soc_version(soc: str) -> str | None:
    """The family of the part named ``soc`` as the vendor's platform configuration names it
    (``Short_SoC_version``: "Ascend910" for the Atlas training series, "Ascend910B" for Atlas
    A2, "Ascend910_93" for A3, "Ascend310P" for the Atlas inference series, "Ascend310B" for
    Atlas 200I/500 A2, "Ascend950", ...); None for a name this table does not know."""
    if soc in _ATLAS_TRAINING:
        return "Ascend910"
    for family in _FAMILIES:
        if soc.startswith(family):
            return family
    return None


def cann_attributes() -> tuple[str, ...]:
    """The CANN attributes available with this install and part (``aclGetCannAttributeList``),
    by name, in the runtime's order: of ``"INF_NAN"``, ``"BF16"``, ``"JIT_COMPILE"`` (a value
    this list does not know is given as its number). Needs no ``aclInit``. Raises the
    runtime's typed error when it cannot tell (500000 when the install records no runtime
    version)."""
    _rt.refuse_if_forked("acl_py.cann_attributes()")
    from ._loader import library
    from ._ffi import ffi
    listed, count = ffi.new("aclCannAttr **"), ffi.new("size_t *")
    status = library().aclGetCannAttributeList(listed, count)
    if status:
        raise errors.make_error(status, "aclGetCannAttributeList")
    values = [int(listed[0][i]) for i in range(count[0])]
    return tuple(_CANN_ATTRIBUTES[v] if 0 <= v < len(_CANN_ATTRIBUTES) else str(v)
                 for v in values)
