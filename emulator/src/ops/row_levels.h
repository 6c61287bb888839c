/*
 * A row kernel once per x86-64 level, and the run-time choice among them: the includer
 * defines ROWS_HEADER (the kernel's file, which defines rows_body_<RK_SFX> from row_vectors.h's
 * vector part) and gets rows_body_v4 (x86-64-v4: AVX-512, 16 lanes), rows_body_v3 (x86-64-v3:
 * AVX2 + F16C, 8 lanes), rows_body_base (the build's baseline: 4 lanes with half.h's
 * conversions; with -march flags, whatever they allow) and rows_kernel(), the best the CPU
 * runs, picked at first use. A plain function pointer, not an ifunc, so the sanitizer build has
 * the levels too. gcc only (its target pragmas); other compilers get the baseline. Every copy
 * gives the same bits: -std=c11 keeps contraction off and the kernels' sums run in source
 * order (tests/test_kernel_clones.py).
 *
 * Include it once per translation unit, after what ROWS_HEADER expects from its includer.
 */
#ifndef ACLEMU_OPS_ROW_LEVELS_H_
#define ACLEMU_OPS_ROW_LEVELS_H_

#if defined(__x86_64__) && defined(__GNUC__) /* gcc and clang: the intrinsics of each level */
#include <immintrin.h>
#endif

/* row_vectors.h's first part (element kinds, scalar loads/stores) before the levels'
 * pragmas: compiled for the baseline, which every level can inline */
#include "row_vectors.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(ACLEMU_NO_CLONES)
#define ROW_LEVELS 1
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define RK_SFX v4
#include ROWS_HEADER
#undef RK_SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define RK_SFX v3
#include ROWS_HEADER
#undef RK_SFX
#pragma GCC pop_options
#else
#define ROW_LEVELS 0
#endif
#define RK_SFX base
#include ROWS_HEADER
#undef RK_SFX
#include "row_vectors.h" /* without RK_SFX: clears the last copy's names */

static aclemu_range_fn rows_kernel(void)
{
#if ROW_LEVELS
    static aclemu_range_fn chosen;
    aclemu_range_fn f = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (!f) { /* racing first calls pick the same one */
        __builtin_cpu_init();
        f = __builtin_cpu_supports("x86-64-v4")   ? rows_body_v4
            : __builtin_cpu_supports("x86-64-v3") ? rows_body_v3
                                                  : rows_body_base;
        __atomic_store_n(&chosen, f, __ATOMIC_RELEASE);
    }
    return f;
#else
    return rows_body_base;
#endif
}

#endif /* ACLEMU_OPS_ROW_LEVELS_H_ */
