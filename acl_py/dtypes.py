"""NumPy dtypes <-> ``aclDataType``.

Every CANN dtype that NumPy (with ``ml_dtypes`` for bfloat16 and the two float8 formats) can
hold: float32, float16, bfloat16, float64, int8/16/32/64, uint8/16/32/64, bool, complex64,
complex128, float8_e4m3fn, float8_e5m2. The enum values are the ABI's;
``tests/test_tensor.py`` checks them against the declarations.

Two device dtypes have no NumPy dtype: :data:`HIFLOAT8` and :data:`INT4` (:class:`AclDtype`).
A DeviceTensor of one of them keeps its bytes in a NumPy storage dtype (uint8) and its
aclDataType beside it. On the host a HIFLOAT8 tensor reads as its uint8 codes
(:func:`hifloat8_to_float32` decodes them, :func:`float32_to_hifloat8` is the device's
conversion to them); an INT4 tensor (two values to a byte, the first in the lower nibble)
reads as its values unpacked to int8 (:func:`unpack_int4`, :func:`pack_int4`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import AclArgumentError, AclTypeError

# aclDataType values (bindings/include/acl/acl_base.h). Plain ints so that importing this
# module opens nothing.
ACL_FLOAT = 0
ACL_FLOAT16 = 1
ACL_INT8 = 2
ACL_INT32 = 3
ACL_UINT8 = 4
ACL_INT16 = 6
ACL_UINT16 = 7
ACL_UINT32 = 8
ACL_INT64 = 9
ACL_UINT64 = 10
ACL_DOUBLE = 11
ACL_BOOL = 12
ACL_COMPLEX64 = 16
ACL_COMPLEX128 = 17
ACL_BF16 = 27
ACL_INT4 = 29       # no NumPy dtype: two values to a byte, the first in the lower nibble (INT4)
ACL_HIFLOAT8 = 34   # no NumPy dtype: held as uint8 codes (HIFLOAT8, hifloat8_to_float32)
ACL_FLOAT8_E5M2 = 35
ACL_FLOAT8_E4M3FN = 36

# (aclDataType value, enum name, numpy type); a str names an ml_dtypes type (loaded on first
# use: see _tables).
_TABLE: list[tuple[int, str, Any]] = [
    (ACL_FLOAT, "ACL_FLOAT", np.float32),
    (ACL_FLOAT16, "ACL_FLOAT16", np.float16),
    (ACL_BF16, "ACL_BF16", "bfloat16"),
    (ACL_DOUBLE, "ACL_DOUBLE", np.float64),
    (ACL_INT8, "ACL_INT8", np.int8),
    (ACL_INT16, "ACL_INT16", np.int16),
    (ACL_INT32, "ACL_INT32", np.int32),
    (ACL_INT64, "ACL_INT64", np.int64),
    (ACL_UINT8, "ACL_UINT8", np.uint8),
    (ACL_UINT16, "ACL_UINT16", np.uint16),
    (ACL_UINT32, "ACL_UINT32", np.uint32),
    (ACL_UINT64, "ACL_UINT64", np.uint64),
    (ACL_BOOL, "ACL_BOOL", np.bool_),
    (ACL_COMPLEX64, "ACL_COMPLEX64", np.complex64),
    (ACL_COMPLEX128, "ACL_COMPLEX128", np.complex128),
    (ACL_FLOAT8_E4M3FN, "ACL_FLOAT8_E4M3FN", "float8_e4m3fn"),
    (ACL_FLOAT8_E5M2, "ACL_FLOAT8_E5M2", "float8_e5m2"),
]

_to_acl: dict | None = None      # np.dtype -> aclDataType
_from_acl: dict | None = None    # aclDataType -> np.dtype
_with_bfloat16 = False           # whether the tables hold ml_dtypes' types yet
_names: dict = {code: name for code, name, _t in _TABLE}
_names.update({ACL_INT4: "ACL_INT4", ACL_HIFLOAT8: "ACL_HIFLOAT8"})
_ML_DTYPES = frozenset(code for code, _n, t in _TABLE if isinstance(t, str))


def _tables(bfloat16: bool = False):
    """``(to_acl, from_acl)``, with ml_dtypes' types (bfloat16, the float8 formats) once they
    were asked for: a lookup that misses asks (a bfloat16 array, its name, ACL_BF16).
    Importing ml_dtypes takes over a second (0.7.0, registering its casts), which a process
    that never meets one of them (``acl-py info``, a float32 script) should not pay."""
    global _to_acl, _from_acl, _with_bfloat16
    if _to_acl is None or (bfloat16 and not _with_bfloat16):
        ml_types = None
        if bfloat16:
            import ml_dtypes
            ml_types = ml_dtypes
        to, frm = {}, {}
        for code, _name, t in _TABLE:
            dt: np.dtype | None
            if isinstance(t, str):
                dt = None if ml_types is None else np.dtype(getattr(ml_types, t))
            else:
                dt = np.dtype(t)
            if dt is not None:
                to[dt] = code
                frm[code] = dt
        # Whole tables replace the old ones: a thread reading them sees one or the other.
        _from_acl, _to_acl, _with_bfloat16 = frm, to, bfloat16
    return _to_acl, _from_acl


class AclDtype:
    """A device dtype no NumPy dtype holds (:data:`HIFLOAT8`, :data:`INT4`): its aclDataType
    ``code``, ``name``, the NumPy ``storage`` dtype of its bytes, ``per_byte`` elements to a
    byte, and ``host``, the NumPy dtype a tensor of it reads as (``to_numpy``): HIFLOAT8's
    uint8 codes, INT4's values unpacked to int8. Compared by identity: there is one of each."""

    __slots__ = ("code", "name", "storage", "per_byte", "host")

    def __init__(self, code, name, storage, per_byte, host):
        self.code, self.name = code, name
        self.storage, self.per_byte, self.host = np.dtype(storage), per_byte, np.dtype(host)

    def storage_bytes(self, elements: int) -> int:
        """Bytes holding ``elements`` consecutive elements from a byte boundary."""
        return -(-elements // self.per_byte)

    def __repr__(self):
        return f"acl_py.dtypes.{self.name.upper()}"

    def __reduce__(self):
        return self.name.upper()     # pickles as the module's constant


HIFLOAT8 = AclDtype(ACL_HIFLOAT8, "hifloat8", np.uint8, 1, np.uint8)
# INT4's layout: two values to a byte, the element of even index in the lower nibble (the
# emulator's kernels: emulator/src/ops/rms_norm_quant.c int4_pair); n elements take ceil(n / 2)
# bytes (hicann/opbase src/nnopbase/common/utils/data_type_utils.cpp CalcShapeBytes: a
# sub-byte type's size in bits, rounded up to bytes), so an odd count is no error there.
# ml_dtypes.int4 is not it: one byte per value.
INT4 = AclDtype(ACL_INT4, "int4", np.uint8, 2, np.int8)
_ACL_ONLY = {ACL_HIFLOAT8: HIFLOAT8, ACL_INT4: INT4, "hifloat8": HIFLOAT8, "int4": INT4}


def element_type(dtype, argument="dtype"):
    """:data:`HIFLOAT8` or :data:`INT4` for themselves, their aclDataType values
    (:data:`ACL_HIFLOAT8`, :data:`ACL_INT4`) or names (``"hifloat8"``, ``"int4"``); otherwise
    :func:`as_dtype`'s NumPy dtype (``ml_dtypes.int4``, one byte per value, is not INT4 and
    is refused as a dtype without an aclDataType)."""
    if type(dtype) is AclDtype:
        return dtype
    if isinstance(dtype, (str, int, np.integer)) and not isinstance(dtype, (bool, np.bool_)):
        try:
            found = _ACL_ONLY.get(dtype.lower() if isinstance(dtype, str) else int(dtype))
        except TypeError:
            found = None
        if found is not None:
            return found
    return as_dtype(dtype, argument)


def dtype_name(dtype) -> str:
    """The name of a NumPy dtype (or anything ``np.dtype`` takes) or an :class:`AclDtype`:
    ``"float16"``, ``"hifloat8"``."""
    return dtype.name if type(dtype) is AclDtype else np.dtype(dtype).name


def pack_int4(values) -> np.ndarray:
    """INT4's bytes (uint8) of integer ``values`` in [-8, 7] (any shape, read in C order; an
    odd count gets a zero upper nibble last): element 2k in byte k's lower nibble, element
    2k + 1 in its upper one."""
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        raise AclTypeError("values", f"dtype {v.dtype} must be an integer dtype (INT4 values)")
    if v.size and (v.min() < -8 or v.max() > 7):
        raise AclArgumentError("values", f"INT4 values lie in [-8, 7], got [{v.min()}, "
                               f"{v.max()}]")
    nib = (v.reshape(-1).astype(np.int16) & 0xF).astype(np.uint8)
    if nib.size % 2:
        nib = np.append(nib, np.uint8(0))
    return nib[0::2] | (nib[1::2] << 4)


def unpack_int4(packed, count: int | None = None) -> np.ndarray:
    """The int8 values of INT4's bytes ``packed`` (uint8/int8, read in C order): the first
    ``count`` (default: two per byte) of the lower, upper nibble of each byte, sign-extended."""
    b = np.asarray(packed)
    if b.dtype not in (np.uint8, np.int8):
        raise AclTypeError("packed", f"dtype {b.dtype} must be uint8 or int8 (INT4 bytes)")
    b = b.reshape(-1).view(np.uint8)
    out = np.empty(2 * b.size, np.int8)
    out[0::2] = (b << 4).view(np.int8) >> 4
    out[1::2] = b.view(np.int8) >> 4
    if count is not None:
        if not 0 <= count <= out.size:
            raise AclArgumentError("count", f"{count} is not in [0, {out.size}] (two values "
                                   f"to each of {b.size} bytes)")
        out = out[:count]
    return out


def bfloat16():
    """``np.dtype(ml_dtypes.bfloat16)``."""
    return _tables(bfloat16=True)[1][ACL_BF16]


def as_dtype(dtype, argument="dtype"):
    """Normalizes ``dtype`` (anything ``np.dtype`` accepts, e.g. ``"float16"``,
    ``ml_dtypes.bfloat16`` or ``ml_dtypes.float8_e4m3fn``) to a supported NumPy dtype, or raises :class:`AclTypeError` naming
    ``argument``. Plain ints are refused: ``0`` could be ACL_FLOAT or a typo."""
    to, _ = _tables()
    if isinstance(dtype, np.dtype) and dtype in to:
        return dtype
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        raise AclTypeError(argument, f"{dtype!r} is an int; give a NumPy dtype "
                           f"(use dtypes.from_acl() for aclDataType values)")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        # "bfloat16" (or "float8_e5m2") names a dtype only once ml_dtypes is imported.
        to, _ = _tables(bfloat16=True)
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise AclTypeError(argument, f"{dtype!r} is not a dtype") from None
    if dt not in to:
        to, _ = _tables(bfloat16=True)
    if dt not in to:
        if not dt.isnative and dt.newbyteorder("=") in to:
            # Device memory holds the host's byte order: ">f4" is float32 the other way round.
            raise AclTypeError(argument, f"dtype {dt.str} is {dt.newbyteorder('=')} in "
                               f"non-native byte order; device tensors use the native order "
                               f"(convert with .astype({dt.newbyteorder('=').name!r}))")
        supported = ", ".join(str(d) for d in to)
        raise AclTypeError(argument, f"dtype {dt} has no aclDataType; supported: {supported}")
    return dt


def native(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself, or a copy in the host's byte order if its dtype is byte-swapped (a
    ``">f4"`` array from a file format): what is copied to device memory must be in the
    order the device reads."""
    dt = arr.dtype
    if dt.isnative:
        return arr
    return arr.astype(dt.newbyteorder("="))


def to_acl(dtype, argument="dtype"):
    """aclDataType value of a NumPy dtype or an :class:`AclDtype` (raises AclTypeError for
    unsupported ones)."""
    to, _ = _tables()
    code = to.get(dtype) if isinstance(dtype, np.dtype) else None
    if code is None:
        if type(dtype) is AclDtype:
            return dtype.code
        dt = as_dtype(dtype, argument)      # may take bfloat16 into the tables
        code = _tables()[0][dt]
    return code


def from_acl(code):
    """NumPy dtype of an aclDataType value."""
    _, frm = _tables(bfloat16=code in _ML_DTYPES)
    try:
        return frm[code]
    except (KeyError, TypeError):
        raise AclTypeError("dtype", f"aclDataType {code!r} ({name(code)}) has no NumPy "
                           f"equivalent here") from None


def name(code):
    """Enum name of an aclDataType value, e.g. ``name(27) == "ACL_BF16"``."""
    return _names.get(code, "UNKNOWN")


def itemsize(dtype):
    """Element size in bytes of a NumPy dtype or aclDataType value."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        return from_acl(int(dtype)).itemsize
    return as_dtype(dtype).itemsize


def supported():
    """The supported NumPy dtypes, in table order."""
    return list(_tables(bfloat16=True)[0])


# ---- HIFLOAT8 ----------------------------------------------------------------------------------
# HiF8 (Huawei's tapered 8-bit float) has no NumPy or ml_dtypes type: a HIFLOAT8 result is read as
# its uint8 codes and decoded with hifloat8_to_float32. After the sign bit a prefix-coded "dot"
# gives the exponent field's width D; the exponent is sign-magnitude with its leading magnitude
# bit implicit; the mantissa takes the bits left (hicann/runtime src/dfx/adump/adump/printf/
# hifloat.cpp decodes it so; the format's paper: arXiv 2409.16626). 0x00 is the only zero, 0x80
# NaN, 0x6F/0xEF +-Inf; the largest finite value is 2^15.
_HIF8_DOTS = (("11", 4), ("10", 3), ("01", 2), ("001", 1), ("0001", 0))
_HIF8_DENORMAL_BIAS = 23     # dot 0000, mantissa M: 2^(M - 23)
_hif8_table = None           # float64 value of each of the 256 codes


def _hifloat8_value(code: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    bits = format(code & 0x7F, "07b")
    if bits == "0000000":
        return float("nan") if code & 0x80 else 0.0
    if bits == "1101111":
        return sign * float("inf")
    for dot, width in _HIF8_DOTS:
        if bits.startswith(dot):
            exp_bits, man_bits = bits[len(dot):len(dot) + width], bits[len(dot) + width:]
            exponent = 0
            if width:
                magnitude = int("1" + exp_bits[1:], 2)
                exponent = -magnitude if exp_bits[0] == "1" else magnitude
            fraction = int(man_bits, 2) / (1 << len(man_bits))
            return sign * 2.0 ** exponent * (1.0 + fraction)
    return sign * 2.0 ** (int(bits[4:], 2) - _HIF8_DENORMAL_BIAS)


def hifloat8_table() -> np.ndarray:
    """float64 values of the 256 HIFLOAT8 codes, indexed by code (read-only)."""
    global _hif8_table
    if _hif8_table is None:
        table = np.array([_hifloat8_value(c) for c in range(256)], np.float64)
        table.flags.writeable = False
        _hif8_table = table
    return _hif8_table


def hifloat8_to_float32(codes) -> np.ndarray:
    """The values of HIFLOAT8 codes (a uint8/int8 array, e.g. a HIFLOAT8 result read as bytes)
    as float32 (every HiF8 value is exact in float32)."""
    codes = np.asarray(codes)
    if codes.dtype not in (np.uint8, np.int8):
        raise AclTypeError("codes", f"dtype {codes.dtype} must be uint8 or int8 (HIFLOAT8 codes)")
    return hifloat8_table()[codes.view(np.uint8)].astype(np.float32)


def float32_to_hifloat8(values) -> np.ndarray:
    """uint8 HIFLOAT8 codes of float32 ``values`` as the device's saturating conversion gives
    them (AscendC Cast with CAST_ROUND and SatMode::SAT, the overflow mode CTRL[60] 0): the
    nearest HiF8 value, ties away from zero; magnitudes of 2^15 and above, +-Inf included,
    give +-2^15; NaN gives NaN (0x80); a result of zero is 0x00."""
    with np.errstate(invalid="ignore"):      # a signalling NaN's widening
        v = np.asarray(values, np.float32).astype(np.float64)
    table = hifloat8_table()
    positive = np.arange(128)
    finite = positive[np.isfinite(table[:128])]
    order = finite[np.argsort(table[finite])]            # codes of 0 .. 2^15, ascending
    grid = table[order]
    mag = np.minimum(np.abs(v), grid[-1])
    upper = np.clip(np.searchsorted(grid, mag, side="left"), 1, len(grid) - 1)
    lower = upper - 1
    take_upper = (grid[upper] - mag) <= (mag - grid[lower])   # a tie goes away from zero
    code = np.where(take_upper, order[upper], order[lower]).astype(np.uint8)
    code = np.where((v < 0) & (code != 0), code | 0x80, code)
    return np.where(np.isnan(v), np.uint8(0x80), code).astype(np.uint8)


__all__ = ["AclDtype", "HIFLOAT8", "INT4", "element_type", "dtype_name", "pack_int4", "unpack_int4",
           "as_dtype", "to_acl", "from_acl", "name", "itemsize", "supported", "bfloat16",
           "native", "hifloat8_table", "hifloat8_to_float32", "float32_to_hifloat8"]
