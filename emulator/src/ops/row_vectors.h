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
 *   baseline); types VF (float) and VU (uint32_t) of that width; RK(ld), RK(st),
 *   RK(st_fence), RK(add)/RK(mul)/RK(add1) (operands in source order, NaNs included), and
 *   the device's ReduceSum tree a level at a time (RK(pair_level), RK(reduce_repeat),
 *   RK(fold_repeats)), the same adds whatever the width. Each copy redefines these macros;
 *   an inclusion without RK_SFX clears them (row_levels.h's last).
 *
 * FLOAT16 goes through VCVTPH2PS/VCVTPS2PH (the rounding in the immediate, as convert.c),
 * BF16 through integer vector code with the formula of half.h; the baseline converts each
 * lane with half.h's functions. Widening is exact and narrowing rounds as half.h does, so
 * every copy stores the same bits (tests/test_kernel_clones.py).
 *
 * Expects from the includer: INLINE, <string.h>, NR_VECTOR_LANES (norm_rows.h), and on x86-64
 * <immintrin.h>.
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

/* 4 KiB aliasing. A load whose address agrees in its low 12 bits with an older store still
 * in flight waits for that store's data. So a loop that stores dst[i] from src[i] and meets
 * dst = src + d vectors (mod 4 KiB) makes each load of src wait for the store d iterations
 * before it, which waits for its own loads: the iterations run d at a time. Measured on an
 * Intel Xeon (AVX-512) storing FLOAT16 gradInput rows non-temporally (LayerNormBackward's
 * pass 2, [512,16384]): 5.8x the CPU time at d = 1, 2.4x at d = 4, 1.6x at d = 8, 1.2x at
 * d = 12, none from 16; run downwards, the loop takes the mirror cases (dst = src - d).
 * Where tensors sit is the caller's: a user allocating gradOut, input and gradInput one after
 * another got gradInput 128 bytes past input (4 vectors). */
enum { ROW_UPWARDS, ROW_DOWNWARDS, ROW_ALIASED };
#define ROW_ALIAS_VECS 16 /* nearer than this (vectors), a load stream chains on the stores */

/* The direction for a loop storing a run at dst while loading nsrc runs src[], each advancing
 * vec_bytes per iteration as dst does: the one with no load stream fewer than ROW_ALIAS_VECS
 * vectors ahead of the stores (mod 4 KiB), upwards first; ROW_ALIASED when neither has (a
 * load stream close on each side: then upwards, with stores that leave the store buffer
 * soonest). The direction changes no bit: each iteration's element is computed alone. */
INLINE int row_store_order(const void *dst, const void *const *src, int nsrc, int64_t vec_bytes)
{
    int64_t up = 4096, down = 4096; /* bytes to the nearest load stream ahead, each way */
    for (int k = 0; k < nsrc; k++) {
        const int64_t r = (int64_t)(((uintptr_t)dst - (uintptr_t)src[k]) & 4095u);
        if (r > 0 && r < up)
            up = r;
        if (r > 0 && 4096 - r < down)
            down = 4096 - r;
    }
    const int64_t near = ROW_ALIAS_VECS * vec_bytes;
    return up >= near ? ROW_UPWARDS : down >= near ? ROW_DOWNWARDS : ROW_ALIASED;
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
#undef RK_REP_NV
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
#define RK_REP_NV (NR_VECTOR_LANES / RK_W) /* vectors per repeat of the device's vector unit */

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

/* ---- operand order: the first operand's NaN, on every level -------------------------------- */

/* a + b and a * b with their operands in this order whatever the level: when both are NaN,
 * x86 returns the first one's, and gcc may swap the operands of its own + and * (it takes
 * them as commutative), so a NaN's sign or payload would depend on the copy. */
INLINE VF RK(add)(VF a, VF b)
{
#if defined(__x86_64__) && defined(__AVX__)
    VF r;
    __asm__("vaddps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
#elif defined(__x86_64__)
    __asm__("addps %1, %0" : "+x"(a) : "x"(b));
    return a;
#else
    return a + b;
#endif
}

INLINE VF RK(mul)(VF a, VF b)
{
#if defined(__x86_64__) && defined(__AVX__)
    VF r;
    __asm__("vmulps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
#elif defined(__x86_64__)
    __asm__("mulps %1, %0" : "+x"(a) : "x"(b));
    return a;
#else
    return a * b;
#endif
}

/* The scalar a + b, likewise (in this copy's encoding: no SSE/AVX transitions). */
INLINE float RK(add1)(float a, float b)
{
#if defined(__x86_64__) && defined(__AVX__)
    float r;
    __asm__("vaddss %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
#elif defined(__x86_64__)
    __asm__("addss %1, %0" : "+x"(a) : "x"(b));
    return a;
#else
    return a + b;
#endif
}

/* s in every lane. */
INLINE VF RK(splat)(float s)
{
    VF v;
    for (int l = 0; l < RK_W; l++)
        v[l] = s;
    return v;
}

/* ---- Atlas A2/A3's ReduceSum tree (norm_rows.h nr_fold_vector_lanes), lane for lane ---------- */

/* One level of nr_fold_vector_lanes' adjacent-pair tree over the 2W lanes of a then b:
 * lane i of the result is lane 2i plus lane 2i + 1 (in that order: RK(add)). */
INLINE VF RK(pair_level)(VF a, VF b)
{
#if RK_W == 8 && defined(__AVX2__)
    /* SHUFPS pairs within each 128-bit half ([a01 a23 b01 b23 | a45 a67 b45 b67]), then one
     * VPERMPD puts the 64-bit pairs in order: 4 instructions where gcc's own two-source
     * shuffle takes 7 (4 VPERMD, 2 blends and the add) */
    const VF s = RK(add)((VF)_mm256_shuffle_ps((__m256)a, (__m256)b, 0x88),
                         (VF)_mm256_shuffle_ps((__m256)a, (__m256)b, 0xdd));
    return (VF)_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd((__m256)s), 0xd8));
#elif defined(__GNUC__) && !defined(__clang__)
#if RK_W == 16
    const VU even = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    const VU odd = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
#elif RK_W == 8
    const VU even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = {1, 3, 5, 7, 9, 11, 13, 15};
#else
    const VU even = {0, 2, 4, 6}, odd = {1, 3, 5, 7};
#endif
    return RK(add)(__builtin_shuffle(a, b, even), __builtin_shuffle(a, b, odd));
#else
    float l[2 * RK_W];
    VF even, odd;
    memcpy(l, &a, sizeof a);
    memcpy(l + RK_W, &b, sizeof b);
    for (int i = 0; i < RK_W; i++) {
        even[i] = l[2 * i];
        odd[i] = l[2 * i + 1];
    }
    return RK(add)(even, odd);
#endif
}

/* The first levels of nr_fold_vector_lanes' tree (norm_rows.h) over one repeat held in
 * RK_REP_NV vectors, lanes in order, which it overwrites: down to one vector of W partial
 * sums. */
INLINE VF RK(reduce_repeat)(VF *restrict t)
{
    for (int n = RK_REP_NV; n > 1; n /= 2)
        for (int j = 0; j < n / 2; j++)
            t[j] = RK(pair_level)(t[2 * j], t[2 * j + 1]);
    return t[0];
}

/* The remaining levels for count (a power of two) repeats at once, each given as
 * reduce_repeat's vector (overwritten): a level pairs lanes within one repeat only, so two
 * repeats' vectors share one shuffle; out[k] is repeat k's tree. */
INLINE void RK(fold_repeats)(VF *restrict v, int count, float *restrict out)
{
    const int n = count;
    for (int lanes = RK_W; lanes > 1; lanes /= 2) {
        if (count > 1) {
            for (int j = 0; j < count / 2; j++)
                v[j] = RK(pair_level)(v[2 * j], v[2 * j + 1]);
            count /= 2;
        } else {
            v[0] = RK(pair_level)(v[0], v[0]); /* the lower half holds the level */
        }
    }
    memcpy(out, v, n * sizeof(float));
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
