/*
 * Checks that every conversion path of emulator/src/ops/convert.c the CPU can run gives
 * the portable path's bits (tests/test_conversions.py builds and runs this).
 *
 *   widening:  all 65536 FLOAT16 and all 65536 BF16 patterns
 *   narrowing: every binary32 pattern (--exhaustive), or by default every pattern whose
 *              low 13 bits are one of a set of rounding-sensitive tails (ties, just above and
 *              below them, zero, all ones) plus pseudo-random ones: 2^19 x 16 patterns
 *   with MXCSR set to flush-to-zero + denormals-are-zero + round toward zero, as a host
 *   process may leave it: the results must not change
 *   run lengths 1..40 at every alignment, so the masked and scalar tails are covered
 *   BF16 narrowing with ties away from zero as well as to even, and both on hand-worked ties
 *
 * It also reports (information, not a failure) how AVX-512 BF16's VCVTNEPS2BF16 differs
 * from the portable BF16 rounding, which is why convert.c does not use it.
 * Exit status 0 when every check passed. Usage: convert_check [--exhaustive]
 */
#include "../../emulator/src/ops/convert.c"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#if CVT_X86
#include <xmmintrin.h>
#endif

#define BLOCK 4096

static const cvt_path *paths[3];
static int npaths;
static long failures;

static void fail(const char *what, const char *name, uint32_t in, uint32_t got, uint32_t want)
{
    if (failures++ < 20)
        fprintf(stderr, "MISMATCH %s on %s: input 0x%08x gives 0x%08x, portable 0x%08x\n",
                what, name, in, got, want);
}

static void set_hostile_mxcsr(int on);

static void check_widening(void)
{
    static uint16_t h[65536];
    static float want[65536], got[65536];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    for (int dt = 0; dt < 2; dt++) {
        const char *what = dt == 0 ? "FLOAT16 widening" : "BF16 widening";
        (dt == 0 ? PATH_PORTABLE.f16_load : PATH_PORTABLE.bf16_load)(h, 65536, want);
        for (int hostile = 0; hostile < 2; hostile++) {
            if (hostile)
                set_hostile_mxcsr(1);
            for (int p = 0; p < npaths; p++) {
                (dt == 0 ? paths[p]->f16_load : paths[p]->bf16_load)(h, 65536, got);
                for (uint32_t i = 0; i < 65536; i++)
                    if (aclemu_f32_bits(got[i]) != aclemu_f32_bits(want[i]))
                        fail(what, paths[p]->name, i, aclemu_f32_bits(got[i]),
                             aclemu_f32_bits(want[i]));
            }
            if (hostile)
                set_hostile_mxcsr(0);
        }
    }
}

/* Narrows one block of binary32 patterns on every path and compares with want (the
 * portable results, computed under the default MXCSR). */
static void narrow_block(const float *in, int n, const uint16_t *want16, const uint16_t *wantbf,
                         const uint16_t *wantaway)
{
    uint16_t got[BLOCK];
    for (int p = 0; p < npaths; p++) {
        paths[p]->bf16_store_away(in, n, got);
        for (int i = 0; i < n; i++)
            if (got[i] != wantaway[i])
                fail("BF16 narrowing, ties away", paths[p]->name, aclemu_f32_bits(in[i]),
                     got[i], wantaway[i]);
        paths[p]->f16_store(in, n, got);
        for (int i = 0; i < n; i++)
            if (got[i] != want16[i])
                fail("FLOAT16 narrowing", paths[p]->name, aclemu_f32_bits(in[i]), got[i],
                     want16[i]);
        paths[p]->bf16_store(in, n, got);
        for (int i = 0; i < n; i++)
            if (got[i] != wantbf[i])
                fail("BF16 narrowing", paths[p]->name, aclemu_f32_bits(in[i]), got[i],
                     wantbf[i]);
    }
}

static void set_hostile_mxcsr(int on)
{
#if CVT_X86
    static unsigned saved;
    if (on) {
        saved = _mm_getcsr();
        _mm_setcsr(saved | 0x8040u /* FTZ, DAZ */ | 0x6000u /* round toward zero */);
    } else {
        _mm_setcsr(saved);
    }
#else
    (void)on;
#endif
}

#if CVT_X86
__attribute__((target("avx512bf16,avx512f"))) static void cvt16(const float *in, uint16_t *out)
{
    __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(in));
    memcpy(out, &r, 32);
}
#endif

static uint64_t bf16_hw_diffs, bf16_hw_diffs_subnormal, bf16_hw_checked;

static void bf16_instruction_block(const float *in, int n, const uint16_t *wantbf)
{
#if CVT_X86
    if (!__builtin_cpu_supports("avx512bf16"))
        return;
    for (int i = 0; i + 16 <= n; i += 16) {
        uint16_t got[16];
        cvt16(in + i, got);
        for (int l = 0; l < 16; l++) {
            bf16_hw_checked++;
            if (got[l] != wantbf[i + l]) {
                uint32_t a = aclemu_f32_bits(in[i + l]) & 0x7fffffffu;
                bf16_hw_diffs++;
                bf16_hw_diffs_subnormal += a != 0 && a < 0x00800000u;
            }
        }
    }
#else
    (void)in, (void)n, (void)wantbf;
#endif
}

static void narrow_patterns(const uint32_t *bits, int n)
{
    float in[BLOCK];
    uint16_t want16[BLOCK], wantbf[BLOCK], wantaway[BLOCK];
    memcpy(in, bits, (size_t)n * 4);
    for (int i = 0; i < n; i++) {
        want16[i] = aclemu_f32_to_f16(in[i]);
        wantbf[i] = aclemu_f32_to_bf16(in[i]);
        wantaway[i] = aclemu_f32_to_bf16_ties(in[i], 1u);
    }
    narrow_block(in, n, want16, wantbf, wantaway);
    set_hostile_mxcsr(1);
    narrow_block(in, n, want16, wantbf, wantaway);
    set_hostile_mxcsr(0);
    bf16_instruction_block(in, n, wantbf);
}

static void check_narrowing(int exhaustive)
{
    uint32_t bits[BLOCK];
    int n = 0;
    if (exhaustive) {
        uint64_t u = 0;
        do {
            bits[n++] = (uint32_t)u;
            if (n == BLOCK) {
                narrow_patterns(bits, n);
                n = 0;
            }
        } while (++u <= 0xffffffffu);
    } else {
        static const uint32_t tails[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff,
                                         0x07ff, 0x0800, 0x0801, 0x17ff, 0x1800, 0x1801};
        uint32_t rnd = 2026;
        for (uint32_t hi = 0; hi < (1u << 19); hi++) {
            for (size_t t = 0; t < sizeof tails / sizeof tails[0] + 4; t++) {
                uint32_t low;
                if (t < sizeof tails / sizeof tails[0]) {
                    low = tails[t];
                } else {
                    rnd = rnd * 1103515245u + 12345u;
                    low = (rnd >> 8) & 0x1fffu;
                }
                bits[n++] = (hi << 13) | low;
                if (n == BLOCK) {
                    narrow_patterns(bits, n);
                    n = 0;
                }
            }
        }
    }
    if (n)
        narrow_patterns(bits, n);
}

/* The portable BF16 rounding itself, on hand-worked cases: (input, to even, away). */
static void check_bf16_ties(void)
{
    static const uint32_t cases[][3] = {
        {0x3f808000u, 0x3f80u, 0x3f81u}, /* 1 + 2^-8: a tie, kept bit even */
        {0xbf808000u, 0xbf80u, 0xbf81u}, /* the same, negative: away grows the magnitude */
        {0x3f818000u, 0x3f82u, 0x3f82u}, /* a tie, kept bit odd: both go up */
        {0x3f807fffu, 0x3f80u, 0x3f80u}, /* just below a tie */
        {0x3f808001u, 0x3f81u, 0x3f81u}, /* just above */
        {0x7f7f8000u, 0x7f80u, 0x7f80u}, /* the largest finite tie: Inf */
        {0x7f7e8000u, 0x7f7eu, 0x7f7fu}, /* a tie below it, kept bit even */
        {0x00008000u, 0x0000u, 0x0001u}, /* a subnormal tie */
        {0x7f800001u, 0x7fc0u, 0x7fc0u}, /* signalling NaN: quieted, not Inf */
        {0xff800000u, 0xff80u, 0xff80u}, /* -Inf */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f = aclemu_f32_from_bits(cases[i][0]);
        uint16_t even = aclemu_f32_to_bf16(f), away = aclemu_f32_to_bf16_ties(f, 1u);
        if (even != cases[i][1])
            fail("BF16 ties to even (hand-worked)", "portable", cases[i][0], even, cases[i][1]);
        if (away != cases[i][2])
            fail("BF16 ties away (hand-worked)", "portable", cases[i][0], away, cases[i][2]);
    }
}

/* Short runs at every alignment: the vector loops' tails. */
static void check_tails(void)
{
    float in[64];
    uint16_t h[64], want16[64], wantbf[64], got[64];
    float wf[64], gf[64];
    for (int i = 0; i < 64; i++) {
        in[i] = (float)(i * 7 - 200) * 0.3713f;
        h[i] = aclemu_f32_to_f16(in[i]);
    }
    for (int p = 0; p < npaths; p++) {
        for (int off = 0; off < 16; off++) {
            for (int n = 1; n + off <= 56 && n <= 40; n++) {
                memset(got, 0xab, sizeof got);
                paths[p]->f16_store(in + off, n, got + off);
                f16_store_portable(in + off, n, want16 + off);
                for (int i = 0; i < 64; i++) {
                    bool inside = i >= off && i < off + n;
                    if (inside ? got[i] != want16[i] : got[i] != 0xabab)
                        fail("FLOAT16 narrowing run", paths[p]->name, (uint32_t)(off * 100 + n),
                             got[i], inside ? want16[i] : 0xabab);
                }
                memset(gf, 0xab, sizeof gf);
                paths[p]->f16_load(h + off, n, gf + off);
                f16_load_portable(h + off, n, wf + off);
                for (int i = 0; i < 64; i++) {
                    bool inside = i >= off && i < off + n;
                    uint32_t g = aclemu_f32_bits(gf[i]);
                    uint32_t w = inside ? aclemu_f32_bits(wf[i]) : 0xabababab;
                    if (g != w)
                        fail("FLOAT16 widening run", paths[p]->name, (uint32_t)(off * 100 + n),
                             g, w);
                }
                paths[p]->bf16_store(in + off, n, got + off);
                bf16_store_portable(in + off, n, wantbf + off);
                for (int i = off; i < off + n; i++)
                    if (got[i] != wantbf[i])
                        fail("BF16 narrowing run", paths[p]->name, (uint32_t)(off * 100 + n),
                             got[i], wantbf[i]);
            }
        }
    }
}

int main(int argc, char **argv)
{
    int exhaustive = argc > 1 && strcmp(argv[1], "--exhaustive") == 0;
    paths[npaths++] = &PATH_PORTABLE;
#if CVT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v3"))
        paths[npaths++] = &PATH_F16C;
    if (__builtin_cpu_supports("x86-64-v4"))
        paths[npaths++] = &PATH_AVX512;
#endif
    printf("paths:");
    for (int p = 0; p < npaths; p++)
        printf(" %s", paths[p]->name);
    printf(" (selected: %s)\n", aclemu_convert_path());
    check_widening();
    check_bf16_ties();
    check_tails();
    check_narrowing(exhaustive);
    printf("narrowing patterns: %s\n", exhaustive ? "all 2^32" : "2^19 x 16");
    if (bf16_hw_checked)
        printf("VCVTNEPS2BF16 vs portable BF16: %llu of %llu patterns differ, %llu of them "
               "binary32 subnormals (the instruction flushes them to zero)\n",
               (unsigned long long)bf16_hw_diffs, (unsigned long long)bf16_hw_checked,
               (unsigned long long)bf16_hw_diffs_subnormal);
    if (failures) {
        printf("FAILED: %ld mismatches\n", failures);
        return 1;
    }
    printf("OK: every path gives the portable bits\n");
    return 0;
}
