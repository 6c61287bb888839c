/*
 * Element runs of FLOAT/FLOAT16/BF16 <-> float (convert.h): one conversion path per CPU
 * level, chosen once at run time.
 *
 *   avx512    x86-64-v4: VCVTPH2PS/VCVTPS2PH on 16 lanes, tails under a mask
 *   f16c      x86-64-v3: the same instructions on 8 lanes, tails in portable code
 *   portable  half.h's integer code, everywhere else
 *
 * BF16 is half.h's integer code on every path, compiled for the path's vector width.
 * The narrowing instructions get their rounding from the immediate (nearest even), never
 * from MXCSR, and neither conversion looks at FTZ/DAZ for these operands: a binary32
 * subnormal is far below half the smallest binary16 subnormal, so it becomes a signed zero
 * either way, and binary16 subnormals widen to normal binary32 numbers.
 *
 * Builds with -DACLEMU_NO_CLONES (tests/test_kernel_clones.py), or compilers other than GCC,
 * pick the path at compile time from the -march flags instead, so the test can build each.
 */
#include <stddef.h>
#include <string.h>

#include "convert.h"
#include "half.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define CVT_X86 1
#define V4 __attribute__((target("arch=x86-64-v4")))
#define V3 __attribute__((target("arch=x86-64-v3")))
#else
#define CVT_X86 0
#endif
#if CVT_X86 && !defined(ACLEMU_NO_CLONES)
#define CVT_DISPATCH 1
#else
#define CVT_DISPATCH 0
#endif

/* VCVTPS2PH immediate: round to nearest even (bit 2 clear: not MXCSR's mode), no exceptions */
#define CVT_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

typedef void (*load_fn)(const uint16_t *restrict src, int64_t n, float *restrict dst);
typedef void (*store_fn)(const float *restrict src, int64_t n, uint16_t *restrict dst);

typedef struct {
    const char *name;
    load_fn f16_load, bf16_load;
    store_fn f16_store, bf16_store, bf16_store_away;
} cvt_path;

/* ---- portable -------------------------------------------------------------------------- */

static void f16_load_portable(const uint16_t *restrict s, int64_t n, float *restrict d)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = aclemu_f16_to_f32(s[i]);
}

static void f16_store_portable(const float *restrict s, int64_t n, uint16_t *restrict d)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = aclemu_f32_to_f16(s[i]);
}

#define BF16_LOOPS(SFX, ATTR)                                                               \
    ATTR static void bf16_load_##SFX(const uint16_t *restrict s, int64_t n,                 \
                                     float *restrict d)                                     \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++)                                                     \
            d[i] = aclemu_bf16_to_f32(s[i]);                                                \
    }                                                                                       \
    ATTR static void bf16_store_##SFX(const float *restrict s, int64_t n,                   \
                                      uint16_t *restrict d)                                 \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++)                                                     \
            d[i] = aclemu_f32_to_bf16_ties(s[i], 0u);                                       \
    }                                                                                       \
    ATTR static void bf16_store_away_##SFX(const float *restrict s, int64_t n,              \
                                           uint16_t *restrict d)                            \
    {                                                                                       \
        for (int64_t i = 0; i < n; i++)                                                     \
            d[i] = aclemu_f32_to_bf16_ties(s[i], 1u);                                       \
    }

BF16_LOOPS(portable, )

static const cvt_path PATH_PORTABLE __attribute__((unused)) = {
    "portable", f16_load_portable, bf16_load_portable, f16_store_portable, bf16_store_portable,
    bf16_store_away_portable,
};

#if CVT_X86
/* ---- x86-64-v3: F16C, 8 lanes ---------------------------------------------------------- */

V3 static void f16_load_f16c(const uint16_t *restrict s, int64_t n, float *restrict d)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++)
        d[i] = aclemu_f16_to_f32(s[i]);
}

V3 static void f16_store_f16c(const float *restrict s, int64_t n, uint16_t *restrict d)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), CVT_RNE));
    for (; i < n; i++)
        d[i] = aclemu_f32_to_f16(s[i]);
}

BF16_LOOPS(f16c, V3)

static const cvt_path PATH_F16C __attribute__((unused)) = {
    "f16c", f16_load_f16c, bf16_load_f16c, f16_store_f16c, bf16_store_f16c,
    bf16_store_away_f16c,
};

/* ---- x86-64-v4: AVX-512, 16 lanes ------------------------------------------------------- */

V4 static void f16_load_avx512(const uint16_t *restrict s, int64_t n, float *restrict d)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(d + i, k, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, s + i)));
    }
}

V4 static void f16_store_avx512(const float *restrict s, int64_t n, uint16_t *restrict d)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(s + i), CVT_RNE));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        _mm256_mask_storeu_epi16(d + i, k, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(k, s + i),
                                                           CVT_RNE));
    }
}

BF16_LOOPS(avx512, V4)

static const cvt_path PATH_AVX512 __attribute__((unused)) = {
    "avx512", f16_load_avx512, bf16_load_avx512, f16_store_avx512, bf16_store_avx512,
    bf16_store_away_avx512,
};
#endif /* CVT_X86 */

static const cvt_path *select_path(void)
{
#if CVT_DISPATCH
    __builtin_cpu_init(); /* may run before libgcc's constructor has */
    if (__builtin_cpu_supports("x86-64-v4"))
        return &PATH_AVX512;
    if (__builtin_cpu_supports("x86-64-v3"))
        return &PATH_F16C;
    return &PATH_PORTABLE;
#elif CVT_X86 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    return &PATH_AVX512;
#elif CVT_X86 && defined(__F16C__) && defined(__AVX2__)
    return &PATH_F16C;
#else
    return &PATH_PORTABLE;
#endif
}

static const cvt_path *path(void)
{
    static const cvt_path *chosen;
    const cvt_path *p = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (!p) { /* racing first calls pick the same path */
        p = select_path();
        __atomic_store_n(&chosen, p, __ATOMIC_RELEASE);
    }
    return p;
}

const char *aclemu_convert_path(void)
{
    return path()->name;
}

/* ---- runs ------------------------------------------------------------------------------- */

/* Strided 16-bit runs are gathered/scattered through this many elements on the stack, so
 * the conversion itself always runs on contiguous memory. */
#define CHUNK 256

void aclemu_load_floats(aclDataType dt, const void *src, int64_t stride, int64_t n,
                        float *dst)
{
    if (dt == ACL_FLOAT) {
        const float *s = src;
        if (stride == 1) {
            memcpy(dst, s, (size_t)n * sizeof(float));
        } else {
            for (int64_t i = 0; i < n; i++)
                dst[i] = s[i * stride];
        }
        return;
    }
    const cvt_path *p = path();
    load_fn load = dt == ACL_FLOAT16 ? p->f16_load : p->bf16_load;
    const uint16_t *s = src;
    if (stride == 1) {
        load(s, n, dst);
        return;
    }
    uint16_t buf[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (int64_t i = 0; i < c; i++)
            buf[i] = s[(i0 + i) * stride];
        load(buf, c, dst + i0);
    }
}

void aclemu_store_floats(aclDataType dt, aclemu_ties ties, void *dst, int64_t stride,
                         int64_t n, const float *src)
{
    if (dt == ACL_FLOAT) {
        float *d = dst;
        if (stride == 1) {
            memcpy(d, src, (size_t)n * sizeof(float));
        } else {
            for (int64_t i = 0; i < n; i++)
                d[i * stride] = src[i];
        }
        return;
    }
    const cvt_path *p = path();
    store_fn store = dt == ACL_FLOAT16           ? p->f16_store
                     : ties == ACLEMU_TIES_AWAY ? p->bf16_store_away
                                                : p->bf16_store;
    uint16_t *d = dst;
    if (stride == 1) {
        store(src, n, d);
        return;
    }
    uint16_t buf[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        store(src + i0, c, buf);
        for (int64_t i = 0; i < c; i++)
            d[(i0 + i) * stride] = buf[i];
    }
}

void aclemu_round_floats(aclDataType dt, aclemu_ties ties, float *buf, int64_t n)
{
    if (dt == ACL_FLOAT)
        return;
    uint16_t h[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        aclemu_store_floats(dt, ties, h, 1, c, buf + i0);
        aclemu_load_floats(dt, h, 1, c, buf + i0);
    }
}
