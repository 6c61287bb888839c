/*
 * Loads and stores of contiguous FLOAT / FLOAT16 / BF16 runs as float vectors, for the row
 * kernels compiled once per x86-64 level (layer_norm_rows.h, layer_norm_backward_rows.h):
 * FLOAT16 and BF16 are converted in registers as they are loaded and stored, so a kernel
 * reads and writes its rows once, with no conversion buffers.
 *
 * Two parts:
 * - the element kinds and their scalar load/store (ld1/st1), once (include guard);
 * - the vector part, at every inclusion with RK_SFX defined (row_levels.h: one copy per
 *   x86-64 level, under that level's `#pragma GCC target`, RK_SFX naming the copy and
 *   RK_LEVEL numbering it): RK(name)
 *   is name_<RK_SFX>; RK_W floats per vector (16 on x86-64-v4, 8 on x86-64-v3, 4 on the
 *   baseline); types VF (float) and VU (uint32_t) of that width; RK(ld), RK(st) and
 *   RK(st_fence). Each copy redefines these macros; an inclusion without RK_SFX clears
 *   them (row_levels.h's last).
 *
 * FLOAT16 goes through VCVTPH2PS/VCVTPS2PH (the rounding in the immediate, as convert.c),
 * BF16 through integer vector code with the formula of half.h; the baseline converts each
 * lane with half.h's functions. Widening is exact and narrowing rounds as half.h does, so
 * every copy stores the same bits (tests/test_kernel_clones.py).
 *
 * Expects from the includer: INLINE, <string.h>, and on x86-64 <immintrin.h>.
 */
#ifndef ACLEMU_OPS_ROW_VECTORS_KINDS_
#define ACLEMU_OPS_ROW_VECTORS_KINDS_

#include <stdint.h>
#include <string.h>

#include "half.h"

/* Element kinds of a contiguous run: FLOAT, FLOAT16, BF16. */
enum { LD_F32, LD_F16, LD_BF16 };

/* Element i of a contiguous run of the kind's dtype, as float. */
INLINE float ld1(const void *p, int64_t i, const int kind)
{
    if (kind == LD_F16)
        return aclemu_f16_to_f32(((const uint16_t *)p)[i]);
    if (kind == LD_BF16)
        return aclemu_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* Stores v as element i of a contiguous run of the kind's dtype; away: BF16 ties go away from
 * zero (1) or to even (0). */
INLINE void st1(void *p, int64_t i, float v, const int kind, uint32_t away)
{
    if (kind == LD_F16)
        ((uint16_t *)p)[i] = aclemu_f32_to_f16(v);
    else if (kind == LD_BF16)
        ((uint16_t *)p)[i] = aclemu_f32_to_bf16_ties(v, away);
    else
        ((float *)p)[i] = v;
}

#endif /* ACLEMU_OPS_ROW_VECTORS_KINDS_ */

/* ---- the vector part: one copy per inclusion with RK_SFX defined ------------------------- */
/* the previous copy's names (an inclusion without RK_SFX only clears them) */
#undef RK_CAT2
#undef RK_CAT
#undef RK
#undef RK_W
#undef RK_RNE
#undef VF
#undef VU
#ifdef RK_SFX

#define RK_CAT2(a, b) a##_##b
#define RK_CAT(a, b) RK_CAT2(a, b)
#define RK(name) RK_CAT(name, RK_SFX)

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define RK_W 16
#elif defined(__AVX2__) && defined(__F16C__)
#define RK_W 8
#else
#define RK_W 4
#endif
/* VCVTPS2PH immediate: to nearest even whatever MXCSR says, no exceptions (as convert.c) */
#define RK_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

typedef float RK(vf) __attribute__((vector_size(RK_W * 4)));
typedef uint32_t RK(vu) __attribute__((vector_size(RK_W * 4)));
#define VF RK(vf)
#define VU RK(vu)

/* This level's functions, once per translation unit (row_levels.h may copy several kernel
 * files into one): RK_LEVEL (4, 3 or 0, with RK_SFX) names the level. */
#if (RK_LEVEL == 4 && !defined(ROW_VECTORS_FNS_4)) || \
    (RK_LEVEL == 3 && !defined(ROW_VECTORS_FNS_3)) || (RK_LEVEL == 0 && !defined(ROW_VECTORS_FNS_0))
#if RK_LEVEL == 4
#define ROW_VECTORS_FNS_4
#elif RK_LEVEL == 3
#define ROW_VECTORS_FNS_3
#else
#define ROW_VECTORS_FNS_0
#endif

/* W elements from p + i (elements of the kind's dtype) as floats. */
INLINE VF RK(ld)(const void *p, int64_t i, const int kind)
{
    VF v;
    if (kind == LD_F32) {
        memcpy(&v, (const float *)p + i, sizeof v);
        return v;
    }
#if RK_W == 16
    if (kind == LD_F16)
        return (VF)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
#elif RK_W == 8
    if (kind == LD_F16)
        return (VF)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
#endif
#if RK_W == 16 /* BF16: the 16 bits become the upper half (gcc's own widening takes 4 steps) */
    if (kind == LD_BF16)
        return (VF)_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i))),
            16);
#elif RK_W == 8
    if (kind == LD_BF16)
        return (VF)_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i))),
            16);
#endif
    for (int l = 0; l < RK_W; l++) /* the baseline: lane by lane, half.h */
        v[l] = ld1(p, i + l, kind);
    return v;
}

/* Stores the W floats of v as elements p + i of the kind's dtype; away: how BF16 ties round
 * (FLOAT16 always to even); nt: a non-temporal store (p + i aligned to the store's size; the
 * baseline ignores it). */
INLINE void RK(st)(void *p, int64_t i, VF v, const int kind, uint32_t away, const bool nt)
{
    if (kind == LD_F32) {
#if RK_W == 16
        if (nt) {
            _mm512_stream_ps((float *)p + i, (__m512)v);
            return;
        }
#elif RK_W == 8
        if (nt) {
            _mm256_stream_ps((float *)p + i, (__m256)v);
            return;
        }
#endif
        memcpy((float *)p + i, &v, sizeof v);
        return;
    }
#if RK_W == 16
    __m256i *const d16 = (__m256i *)((uint16_t *)p + i);
    if (kind == LD_F16) {
        __m256i h = _mm512_cvtps_ph((__m512)v, RK_RNE);
        if (nt)
            _mm256_stream_si256(d16, h);
        else
            _mm256_storeu_si256(d16, h);
        return;
    }
#elif RK_W == 8
    __m128i *const d16 = (__m128i *)((uint16_t *)p + i);
    if (kind == LD_F16) {
        __m128i h = _mm256_cvtps_ph((__m256)v, RK_RNE);
        if (nt)
            _mm_stream_si128(d16, h);
        else
            _mm_storeu_si128(d16, h);
        return;
    }
#endif
#if RK_W == 16
    if (kind == LD_BF16) { /* half.h's aclemu_f32_to_bf16_ties, on 32-bit lanes then narrowed */
        const __m512i u = _mm512_castps_si512((__m512)v);
        /* + just under half an ulp, + 1 for a tie that goes up: always (away) or when the
         * lowest kept bit is set (to even) */
        __m512i r = _mm512_add_epi32(u, _mm512_set1_epi32(away ? 0x8000 : 0x7fff));
        if (!away)
            r = _mm512_mask_add_epi32(r, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000)),
                                      r, _mm512_set1_epi32(1));
        /* NaN lanes (VFPCLASSPS: quiet or signaling): sign and upper payload, quiet bit set */
        r = _mm512_mask_or_epi32(r, _mm512_fpclass_ps_mask((__m512)v, 0x81), u,
                                 _mm512_set1_epi32(0x00400000));
        /* the upper halves of the 16 lanes, in order, into the low 256 bits (one VPERMW) */
        const __m512i upper = _mm512_setr_epi32(0x00030001, 0x00070005, 0x000b0009, 0x000f000d,
                                                0x00130011, 0x00170015, 0x001b0019, 0x001f001d,
                                                0, 0, 0, 0, 0, 0, 0, 0);
        __m256i h = _mm512_castsi512_si256(_mm512_permutexvar_epi16(upper, r));
        if (nt)
            _mm256_stream_si256(d16, h);
        else
            _mm256_storeu_si256(d16, h);
        return;
    }
#elif RK_W == 8
    if (kind == LD_BF16) { /* half.h's aclemu_f32_to_bf16_ties on every lane */
        const __m256i u = _mm256_castps_si256((__m256)v);
        const __m256i hi = _mm256_srli_epi32(u, 16);
        /* + just under half an ulp, + 1 for a tie that goes up: always (away) or when the
         * lowest kept bit is set (to even) */
        const __m256i up = away ? _mm256_set1_epi32(1)
                                : _mm256_and_si256(hi, _mm256_set1_epi32(1));
        __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), up), 16);
        /* NaN lanes (unordered with themselves): sign and upper payload, quiet bit set */
        r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x0040)),
                               _mm256_castps_si256(_mm256_cmp_ps((__m256)v, (__m256)v,
                                                                 _CMP_UNORD_Q)));
        /* every lane < 2^16: the unsigned saturating pack keeps each value */
        __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
        if (nt)
            _mm_stream_si128(d16, h);
        else
            _mm_storeu_si128(d16, h);
        return;
    }
#endif
    for (int l = 0; l < RK_W; l++)
        st1(p, i + l, v[l], kind, away);
}

/* The non-temporal stores of a copy reach memory before its caller reports the work done. */
INLINE void RK(st_fence)(void)
{
#if RK_W > 4
    _mm_sfence();
#endif
}

#endif /* this level's functions */
#endif /* RK_SFX */
