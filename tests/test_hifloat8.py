"""HIFLOAT8: acl_py.dtypes' decoding of the 256 codes against the format's published facts and
the values built forward from its definition, and the emulator's float -> HIFLOAT8 conversion
(emulator/src/ops/half.h aclemu_f32_to_hif8_sat, run through tests/c/hif8_convert.c) bit for
bit against an independent implementation (acl_py.dtypes.float32_to_hifloat8: the nearest
value of the decoded table, ties away from zero, saturating) on every code's value, every
midpoint between neighbours and the floats beside it, the saturation and underflow
boundaries, the special values, and ~1.4 M binary32 patterns (every upper half with five lower
halves, plus random ones).
"""
from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest

from acl_py import dtypes
from acl_py.errors import AclTypeError

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "c" / "hif8_convert.c"
HALF_H = ROOT / "emulator" / "src" / "ops" / "half.h"
F32 = np.dtype(np.float32)
MAX = 32768.0


@pytest.fixture(scope="module")
def convert():
    """float32 array -> uint8 codes through the emulator's C conversion."""
    spec = importlib.util.spec_from_file_location("acl_py_emulator_build",
                                                  ROOT / "emulator" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    exe = ROOT / "tests" / ".build" / "hif8_convert"
    if not exe.exists() or exe.stat().st_mtime < max(SOURCE.stat().st_mtime,
                                                     HALF_H.stat().st_mtime):
        exe.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", *mod.CFLAGS, *(f"-I{p}" for p in mod.INCLUDES), "-g0", "-o",
                        str(exe), str(SOURCE)], check=True)

    def run(values):
        bits = np.ascontiguousarray(np.asarray(values, F32)).view(np.uint32)
        r = subprocess.run([str(exe)], input=bits.tobytes(), capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return np.frombuffer(r.stdout, np.uint8).reshape(bits.shape)
    return run


def test_the_256_codes_decode_to_the_published_values():
    """The format's facts (arXiv 2409.16626; the runtime's decoder): one zero (0x00), NaN 0x80,
    +-Inf 0x6F/0xEF, largest 2^15 (0x6E), smallest normal 2^-15 (0x7E), denormals 2^-22..2^-16
    (0x01..0x07), 1.0 = 0x08 and its neighbour 1.125; 7 exponents with 3 mantissa bits (|e| <=
    3), 8 with 2 (4..7), 16 with 1 (8..15); every finite code a distinct value; the negative
    codes the positive ones negated."""
    t = dtypes.hifloat8_table()
    assert t[0x00] == 0 and np.isnan(t[0x80])
    assert t[0x6F] == np.inf and t[0xEF] == -np.inf
    assert t[0x6E] == MAX and np.nanmax(t[np.isfinite(t)]) == MAX
    assert t[0x7E] == 2.0 ** -15 and t[0x7F] == 1.5 * 2.0 ** -15
    assert [t[c] for c in range(1, 8)] == [2.0 ** k for k in range(-22, -15)]
    assert t[0x08] == 1.0 and t[0x09] == 1.125 and t[0x0F] == 1.875
    finite = t[np.isfinite(t)]
    assert len(np.unique(finite)) == 253
    normal = finite[np.abs(finite) >= 2.0 ** -15]
    exps, counts = np.unique(np.floor(np.log2(np.abs(normal[normal > 0]))), return_counts=True)
    per_exp = dict(zip(exps.astype(int), counts))
    assert sorted(per_exp) == list(range(-15, 16))
    assert all(per_exp[e] == (8 if abs(e) <= 3 else 4 if abs(e) <= 7 else 2) - (e == 15)
               for e in per_exp)          # 1.5 * 2^15 is Inf's code
    for c in range(1, 128):
        if c != 0x6F:
            assert t[c | 0x80] == -t[c]
    assert dtypes.hifloat8_to_float32(np.array([0x08, 0x88], np.uint8)).tolist() == [1.0, -1.0]
    from acl_py.raw import lib
    assert dtypes.ACL_HIFLOAT8 == lib.ACL_HIFLOAT8 == 34
    with pytest.raises(AclTypeError, match="codes"):
        dtypes.hifloat8_to_float32(np.zeros(2, np.float32))


def _neighbour_points():
    """Every finite value, the midpoints between neighbours (ties) and the floats on each side
    of them and of the values, both signs."""
    t = dtypes.hifloat8_table()
    v = np.unique(t[:128][np.isfinite(t[:128])])
    mids = (v[:-1] + v[1:]) / 2
    pts = np.concatenate([v, mids, [MAX * 1.25, MAX * 1.5, MAX * 2, 2.0 ** -23]]).astype(F32)
    pts = np.concatenate([pts, np.nextafter(pts, F32.type(np.inf)),
                          np.nextafter(pts, F32.type(0))])
    return np.concatenate([pts, -pts])


def test_round_trip_ties_and_boundaries_match_the_independent_model(convert):
    pts = _neighbour_points()
    got = convert(pts)
    assert np.array_equal(got, dtypes.float32_to_hifloat8(pts))
    t = dtypes.hifloat8_table()
    codes = np.array([c for c in range(256) if np.isfinite(t[c])], np.uint8)
    assert np.array_equal(convert(t[codes].astype(F32)), codes)           # round trips
    # ties go away from zero: 1.0625 (between 1 and 1.125) up, -1.0625 down; 3 * 2^-22 (between
    # the denormals 2^-21 and 2^-20) up; 2^-23 (between 0 and 2^-22) up, just below it to 0;
    # 28672 (between 1.5 * 2^14 and 2^15) up
    ties = np.array([1.0625, -1.0625, 3 * 2.0 ** -22, 2.0 ** -23, 28672.0], F32)
    dec = t[convert(ties)]
    assert dec.tolist() == [1.125, -1.125, 2.0 ** -20, 2.0 ** -22, MAX]
    below = np.nextafter(F32.type(2.0 ** -23), F32.type(0))
    assert convert(np.array([below, -below, -0.0, 0.0], F32)).tolist() == [0, 0, 0, 0]


def test_saturation_and_special_values(convert):
    """At and above 2^15 (the midpoint towards Inf's slot 1.5 * 2^15 included), +-Inf and
    FLT_MAX give +-2^15; NaN gives 0x80."""
    big = np.array([MAX, 40960.0, 49152.0, 65536.0, np.inf, np.finfo(F32).max, 1e30], F32)
    assert (convert(big) == 0x6E).all() and (convert(-big) == 0xEE).all()
    assert (dtypes.float32_to_hifloat8(big) == 0x6E).all()
    nan = np.array([np.nan, -np.nan], F32)
    assert (convert(nan) == 0x80).all()
    just_below = np.nextafter(F32.type(MAX), F32.type(0))
    assert convert(np.array([just_below], F32))[0] == 0x6E      # 32767.998 rounds up to 2^15
    assert convert(np.array([28671.0], F32))[0] == 0x6D          # 1.5 * 2^14 below the midpoint


def test_binary32_sweep_matches_the_independent_model(convert):
    """Every binary32 upper half with lower halves 0, 1, 0x7fff, 0x8000, 0xffff (NaNs
    included), and 2^20 random patterns."""
    hi = np.arange(65536, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0xFFFF], np.uint32)
    rng = np.random.default_rng(8)
    pats = np.concatenate([(hi[:, None] | lows[None, :]).reshape(-1),
                           rng.integers(0, 2 ** 32, 2 ** 20, dtype=np.uint32)])
    vals = pats.view(F32)
    got = convert(vals)
    exp = dtypes.float32_to_hifloat8(vals)
    bad = np.flatnonzero(got != exp)
    assert bad.size == 0, [(hex(pats[i]), hex(got[i]), hex(exp[i])) for i in bad[:10]]


def _hifloat8_values_by_construction():
    """{code: value} built forward from the format's definition (arXiv 2409.16626), not by
    parsing codes: for each dot (its prefix bits, then D exponent bits, the remaining bits
    of the seven the mantissa), every exponent sign-magnitude with the implicit leading
    magnitude bit (|e| in [2^(D-1), 2^D - 1]), every mantissa; the denormals 2^(m - 23); 0x00
    zero, 0x80 NaN, 0x6F / 0xEF (what would be 1.5 * 2^15) +-Inf."""
    values = {0x00: 0.0, 0x80: float("nan")}
    dots = [("11", 4), ("10", 3), ("01", 2), ("001", 1), ("0001", 0)]
    for prefix, width in dots:
        mbits = 7 - len(prefix) - width
        exps = [0] if width == 0 else [
            s * m for s in (1, -1) for m in range(2 ** (width - 1), 2 ** width)]
        for e in exps:
            field = "" if width == 0 else (
                ("1" if e < 0 else "0") + format(abs(e) - 2 ** (width - 1), f"0{width - 1}b")
                if width > 1 else ("1" if e < 0 else "0"))
            for m in range(2 ** mbits):
                code = int(prefix + field + format(m, f"0{mbits}b"), 2)
                v = 2.0 ** e * (1 + m / 2 ** mbits)
                values[code], values[code | 0x80] = v, -v
    for m in range(1, 8):
        values[m], values[m | 0x80] = 2.0 ** (m - 23), -(2.0 ** (m - 23))
    values[0x6F], values[0xEF] = float("inf"), float("-inf")
    return values


def test_every_code_decodes_as_the_format_constructs_it():
    """acl_py.dtypes' decoder (parsing each code) against the values built forward from the
    definition, on all 256 codes; the float32 decode is exact."""
    built = _hifloat8_values_by_construction()
    assert sorted(built) == list(range(256))
    t = dtypes.hifloat8_table()
    for code in range(256):
        assert t[code] == built[code] or (np.isnan(t[code]) and np.isnan(built[code])), code
    f32 = dtypes.hifloat8_to_float32(np.arange(256, dtype=np.uint8))
    assert np.array_equal(f32.astype(np.float64), t, equal_nan=True)
