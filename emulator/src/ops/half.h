/*
 * IEEE binary16 (FLOAT16) and bfloat16 <-> binary32 conversions for the operator kernels.
 * Written with integer bit operations only, so results do not depend on the FPU's
 * flush-to-zero / denormals-are-zero modes (which a host process such as PyTorch may set),
 * and the loops that call them can be vectorized (no table lookups, few branches).
 * Narrowing rounds to nearest, ties to even (binary16 also to odd: aclemu_f32_to_f16_odd);
 * NaN stays NaN (quieted), +-Inf stays Inf, subnormals are produced and consumed exactly.
 */
#ifndef ACLEMU_OPS_HALF_H_
#define ACLEMU_OPS_HALF_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t aclemu_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float aclemu_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- bfloat16: the upper half of a binary32 ------------------------------------------- */

static inline float aclemu_bf16_to_f32(uint16_t h)
{
    return aclemu_f32_from_bits((uint32_t)h << 16);
}

/* To nearest; a tie goes to even (away = 0, IEEE) or away from zero (away = 1, the CAST_ROUND
 * some device kernels use). away is a run-time value, loop-invariant in the callers' loops,
 * so they stay branch-free and vectorized. */
static inline uint16_t aclemu_f32_to_bf16_ties(float f, uint32_t away)
{
    uint32_t u = aclemu_f32_bits(f);
    /* NaN: keep sign and upper payload, force the quiet bit so truncation cannot make Inf. */
    uint32_t nan = (u >> 16) | 0x0040u;
    /* Add just under half an ulp, plus one for a tie that must go up: the lowest kept bit
     * (to even) or always (away: the magnitude grows, whatever the sign). A carry into the
     * exponent is the correct result (the largest finite values round up to Inf). */
    uint32_t rounded = (u + 0x7fffu + (((u >> 16) & 1u) | away)) >> 16;
    return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? nan : rounded);
}

static inline uint16_t aclemu_f32_to_bf16(float f)
{
    return aclemu_f32_to_bf16_ties(f, 0u);
}

/* ---- binary16 ---------------------------------------------------------------------------- */

static inline float aclemu_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t em = (uint32_t)h & 0x7fffu;   /* exponent and mantissa */
    /* Normal: move the fields into place and rebias the exponent by 127 - 15 = 112. */
    uint32_t normal = (em << 13) + (112u << 23);
    /* Inf/NaN (exponent 31): exponent becomes 255, payload kept; a NaN is quieted, as the
     * conversion instructions (F16C, AVX-512) do, so every path gives the same bits. */
    uint32_t infnan = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x00400000u : 0u);
    /* Zero/subnormal: m * 2^-24. The int -> float conversion is exact (m < 1024) and the
     * product is a normal binary32, so no denormal arithmetic is involved. */
    uint32_t sub = aclemu_f32_bits((float)em * 0x1p-24f);
    /* selects written as masks: keeps the loops that call this branch-free (vectorized) */
    uint32_t big = em >= 0x7c00u ? infnan : normal;
    uint32_t is_sub = 0u - (uint32_t)(em < 0x0400u);
    return aclemu_f32_from_bits(sign | (sub & is_sub) | (big & ~is_sub));
}

/* Branch-free (every case computed, then selected) so the portable loops vectorize where
 * the vector unit has per-lane shifts (AVX2, NEON, SVE). */
static inline uint16_t aclemu_f32_to_f16(float f)
{
    uint32_t u = aclemu_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    /* NaN: quiet, keep the top payload bits */
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
    /* >= 2^-14, normal binary16: rebias the exponent, RNE on the 13 dropped bits; a carry
     * bumps the exponent, which is right (up to Inf for >= 65520, the tie above 65504) */
    uint32_t r = a - (112u << 23);
    uint32_t normal = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
    /* Subnormal binary16: the value in units of 2^-24 is m >> (126 - e), rounded to even.
     * e is clamped to [101, 112] so the shift stays in [14, 25] in every lane; below 2^-25
     * (e <= 101) the result is 0, and exactly 2^-25 ties to 0 as well. q == 0x400 is the
     * smallest normal: also right. */
    uint32_t e = a >> 23;
    e = e < 101u ? 101u : (e > 112u ? 112u : e);
    uint32_t shift = 126u - e;
    uint32_t m = (a & 0x007fffffu) | 0x00800000u;
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    q += (uint32_t)(rem > half) | ((uint32_t)(rem == half) & q & 1u);
    uint32_t mag = a > 0x7f800000u ? nan
                 : a >= 0x477ff000u ? 0x7c00u /* >= 65520 (Inf itself included) */
                 : a >= 0x38800000u ? normal
                 : q;
    return (uint16_t)(sign | mag);
}

/* Rounded to odd (the device's CAST_ODD narrowing): the value truncated toward zero to
 * binary16, with the lowest mantissa bit set when anything was dropped, so a later rounding
 * to fewer bits is never a double rounding's tie. Finite values never become Inf (anything at
 * or above 65504 truncates to 65504, whose last bit is already set); a nonzero value below the
 * smallest subnormal becomes it; NaN stays NaN (quieted), +-Inf stays Inf. */
static inline uint16_t aclemu_f32_to_f16_odd(float f)
{
    uint32_t u = aclemu_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    uint32_t mag;
    if (a > 0x7f800000u) {
        mag = 0x7e00u | ((a >> 13) & 0x03ffu);
    } else if (a == 0x7f800000u) {
        mag = 0x7c00u;
    } else if (a >= 0x38800000u) { /* >= 2^-14: a normal binary16 unless it overflows */
        uint32_t r = a - (112u << 23);
        mag = r >> 13;
        uint32_t dropped = (r & 0x1fffu) != 0u;
        if (mag >= 0x7c00u) {
            mag = 0x7bffu;
            dropped = 0u; /* already odd */
        }
        mag |= dropped;
    } else if (a >= (101u << 23)) { /* [2^-26, 2^-14): subnormal, in units of 2^-24 */
        uint32_t shift = 126u - (a >> 23);
        uint32_t m = (a & 0x007fffffu) | 0x00800000u;
        mag = (m >> shift) | (uint32_t)((m & ((1u << shift) - 1u)) != 0u);
    } else {
        mag = a != 0u; /* below 2^-26: 0, or the smallest subnormal */
    }
    return (uint16_t)(sign | mag);
}

/* ---- 8-bit floats (FLOAT8_E4M3FN, FLOAT8_E5M2) -------------------------------------------- */

/* float to an 8-bit float of mbits mantissa bits and exponent bias `bias` (E4M3FN: 3, 7; E5M2:
 * 2, 15) to nearest, ties to even, saturating: a magnitude at or above the largest finite
 * value max_code encodes (E4M3FN 0x7e = 448, E5M2 0x7b = 57344), +-Inf included, gives it;
 * NaN gives nan_code; subnormals are produced exactly. Integer bit operations only. */
static inline uint8_t aclemu_f32_to_fp8_sat(float f, uint32_t mbits, uint32_t bias,
                                            uint32_t max_code, uint32_t nan_code)
{
    uint32_t u = aclemu_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint8_t)(sign | nan_code);
    /* the largest finite value as binary32 bits: exponent field max_code >> mbits */
    uint32_t max_bits = (((max_code >> mbits) + 127u - bias) << 23) |
                        ((max_code & ((1u << mbits) - 1u)) << (23u - mbits));
    if (a >= max_bits)
        return (uint8_t)(sign | max_code);
    uint32_t e = a >> 23;
    uint32_t code;
    if (e >= 128u - bias) { /* normal: rebias, round the dropped 23 - mbits bits to even */
        uint32_t shift = 23u - mbits;
        uint32_t r = a - ((127u - bias) << 23);
        code = (r + (1u << (shift - 1u)) - 1u + ((r >> shift) & 1u)) >> shift;
    } else { /* subnormal: the value in units of 2^(1 - bias - mbits), rounded to even */
        uint32_t shift = 151u - bias - mbits - (e ? e : 1u);
        uint32_t m = (a & 0x007fffffu) | (e ? 0x00800000u : 0u);
        if (shift > 31u) {
            code = 0u;
        } else {
            uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
            code = q + (uint32_t)(rem > half || (rem == half && (q & 1u)));
        }
    }
    return (uint8_t)(sign | (code > max_code ? max_code : code));
}

/* ---- HIFLOAT8 (HiF8: tapered 8-bit float) -------------------------------------------------- */

/* HiF8's fields after the sign bit: a prefix-coded "dot" giving the exponent's width D (11: 4,
 * 10: 3, 01: 2, 001: 1, 0001: 0; 0000: denormal), then the exponent in sign-magnitude with its
 * leading magnitude 1 implicit (exponents +-[2^(D-1), 2^D - 1], 0 for D = 0), then the mantissa
 * in what is left: 3 bits for |e| <= 3, 2 for |e| <= 7, 1 for |e| <= 15. Denormals 0000 M are
 * 2^(M - 23), M = 1..7. 0x00 is zero (the only one), 0x80 NaN, 0x6F / 0xEF +-Inf (where
 * 1.5 * 2^15 would be), so the largest finite value is 2^15 = 32768 (0x6E). The tables this
 * rests on: hicann/runtime src/dfx/adump/adump/printf/hifloat.cpp (the decoding) and
 * hicann/ops-math math/cast/op_kernel_aicpu/cast_aicpu.cpp (the field layout per exponent). */

/* The HiF8 code of exponent e (|e| <= 15) with its mantissa field f (already rounded to the
 * width the exponent leaves). */
static inline uint32_t aclemu_hif8_normal_code(int32_t e, uint32_t f)
{
    uint32_t ae = (uint32_t)(e < 0 ? -e : e), neg = e < 0;
    if (ae == 0u)
        return 0x08u | f;                                      /* 0 0001 fff */
    if (ae == 1u)
        return 0x10u | (neg << 3) | f;                         /* 0 001 s fff */
    if (ae <= 3u)
        return 0x20u | (neg << 4) | ((ae - 2u) << 3) | f;      /* 0 01 s e fff */
    if (ae <= 7u)
        return 0x40u | (neg << 4) | ((ae - 4u) << 2) | f;      /* 0 10 s ee ff */
    return 0x60u | (neg << 4) | ((ae - 8u) << 1) | f;          /* 0 11 s eee f */
}

/* float to HiF8 as the device's Cast with CAST_ROUND and SatMode::SAT (overflow mode CTRL[60] 0)
 * converts it: to nearest, ties away from zero, at the precision of the value's binade (the
 * mantissa width its exponent leaves; a carry into the next binade is that binade's 1.0);
 * denormals to the nearest power of two 2^-22..2^-16 (1.5 * 2^k, the midpoint, goes up), below
 * 2^-23 to zero (2^-23 itself, the midpoint of 0 and 2^-22, up); magnitudes at or above 32768,
 * +-Inf included, saturate to +-32768; NaN gives NaN (0x80); zero and negative results that
 * round to zero give 0x00 (HiF8 has no negative zero). Integer bit operations only. */
static inline uint8_t aclemu_f32_to_hif8_sat(float f)
{
    uint32_t u = aclemu_f32_bits(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0x80u;
    if (a >= 0x47000000u) /* >= 2^15 */
        return (uint8_t)(sign | 0x6eu);
    if (a < 0x34000000u)  /* < 2^-23 */
        return 0u;
    int32_t e = (int32_t)(a >> 23) - 127;
    if (e < -15) {
        /* the nearest power of two: up when the mantissa is at least 1.5 */
        int32_t k = e + (int32_t)((a >> 22) & 1u);
        if (k < -22)
            k = -22;
        return (uint8_t)(sign | (k == -15 ? aclemu_hif8_normal_code(-15, 0u)
                                          : (uint32_t)(k + 23)));
    }
    int32_t ae = e < 0 ? -e : e;
    uint32_t mbits = ae <= 3 ? 3u : ae <= 7 ? 2u : 1u;
    uint32_t shift = 23u - mbits;
    /* half an ulp added to the magnitude, then truncated: ties go up, away from zero; a carry
     * moves into the exponent and leaves a zero mantissa */
    uint32_t r = (a + (1u << (shift - 1u))) >> shift;
    int32_t e2 = (int32_t)(r >> mbits) - 127;
    return (uint8_t)(sign | aclemu_hif8_normal_code(e2, r & ((1u << mbits) - 1u)));
}

/* The two 8-bit floats the kernels write (castTraitFp322Fp8: to nearest even, saturating). */
static inline uint8_t aclemu_f32_to_e4m3fn_sat(float f)
{
    return aclemu_f32_to_fp8_sat(f, 3, 7, 0x7e, 0x7f);
}

static inline uint8_t aclemu_f32_to_e5m2_sat(float f)
{
    return aclemu_f32_to_fp8_sat(f, 2, 15, 0x7b, 0x7e);
}

/* ---- float -> integer ----------------------------------------------------------------- */

/* To the nearest integer, ties to even, of a finite float of magnitude below 2^23, whatever
 * the floating-point environment's rounding mode (the host process may have changed it). */
static inline float aclemu_round_half_even(float v)
{
    float f = floorf(v), d = v - f;
    if (d > 0.5f || (d == 0.5f && fmodf(f, 2.0f) != 0.0f))
        f += 1.0f;
    return f;
}

/* The AscendC quantizing kernels' float -> INT8 chain (to INT32 ties to even, to FLOAT16, to
 * INT8), every conversion taken to saturate: the nearest integer, ties to even, clamped to
 * [-128, 127]; NaN gives 0. */
static inline int8_t aclemu_f32_to_int8_sat(float t)
{
    if (isnan(t))
        return 0;
    if (t <= -128.0f)
        return -128;
    if (t >= 127.0f)
        return 127;
    return (int8_t)aclemu_round_half_even(t);
}

#endif /* ACLEMU_OPS_HALF_H_ */
