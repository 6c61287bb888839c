/*
 * Row kernels once per x86-64 level, and the run-time choice among them: the includer
 * defines ROWS_HEADER (a kernel file, which defines its kernels as RK(name), name_<RK_SFX>,
 * from row_vectors.h's vector part) and gets each kernel three times, name_v4 (x86-64-v4:
 * AVX-512, 16 lanes), name_v3 (x86-64-v3: AVX2 + F16C + FMA, 8 lanes) and name_base (the
 * build's baseline: 4 lanes with half.h's conversions; with -march flags, whatever they
 * allow); ROW_KERNEL(name) is the copy the CPU runs best, the level picked at first use. A
 * plain function pointer, not an ifunc, so the sanitizer build has the levels too. gcc only
 * (its target pragmas); other compilers get the baseline. Every copy gives the same bits:
 * -std=c11 keeps contraction off and the kernels' sums run in source order
 * (tests/test_kernel_clones.py).
 *
 * Include it once per kernel file (a translation unit may include it again with another
 * ROWS_HEADER), after what ROWS_HEADER expects from its includer.
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
#else
#define ROW_LEVELS 0
#endif

/* The x86-64 level whose copies run here, picked at first use. */
enum { ROW_LEVEL_BASE, ROW_LEVEL_V3, ROW_LEVEL_V4 };

static inline int row_level(void)
{
#if ROW_LEVELS
    static int chosen = -1;
    int level = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (level < 0) { /* racing first calls pick the same one */
        __builtin_cpu_init();
        level = __builtin_cpu_supports("x86-64-v4")   ? ROW_LEVEL_V4
                : __builtin_cpu_supports("x86-64-v3") ? ROW_LEVEL_V3
                                                      : ROW_LEVEL_BASE;
        __atomic_store_n(&chosen, level, __ATOMIC_RELEASE);
    }
    return level;
#else
    return ROW_LEVEL_BASE;
#endif
}

/* The copy of kernel `name` (an aclemu_range_fn) the CPU runs best. */
#if ROW_LEVELS
#define ROW_KERNEL(name)                                                                     \
    (row_level() == ROW_LEVEL_V4   ? name##_v4                                               \
     : row_level() == ROW_LEVEL_V3 ? name##_v3                                               \
                                   : name##_base)
#else
#define ROW_KERNEL(name) name##_base
#endif

#endif /* ACLEMU_OPS_ROW_LEVELS_H_ */

/* ---- the copies of ROWS_HEADER's kernels: at every inclusion --------------------------------- */
#if ROW_LEVELS
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define RK_SFX v4
#define RK_LEVEL 4
#include ROWS_HEADER
#undef RK_LEVEL
#undef RK_SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define RK_SFX v3
#define RK_LEVEL 3
#include ROWS_HEADER
#undef RK_LEVEL
#undef RK_SFX
#pragma GCC pop_options
#endif
#define RK_SFX base
#define RK_LEVEL 0
#include ROWS_HEADER
#undef RK_LEVEL
#undef RK_SFX
#include "row_vectors.h" /* without RK_SFX: clears the last copy's names */
