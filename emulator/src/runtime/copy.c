/*
 * The bytes of a copy task (aclrtMemcpy, aclrtMemcpyAsync): what the device's DMA engine does,
 * done by the CPU.
 *
 * A copy far larger than the caches goes to memory whatever stores write it, so it is
 * written with non-temporal stores: no read of the destination's lines before they are
 * overwritten, no eviction of what the cache holds. And it must not depend on how the two
 * addresses lie against each other: glibc's memmove takes a slower loop when the destination
 * starts a little past the source modulo 4 KiB (its guard against 4K aliasing), which is how
 * a download into a NumPy array (16 bytes into its page) lies against device memory (page
 * aligned). Measured on an AMD EPYC (Zen 3), 256 MiB, best of four: memmove 117-146 ms with
 * the destination 8-64 bytes ahead against 32-34 ms otherwise; this loop 30-40 ms at every
 * offset.
 *
 * Smaller copies, and overlapping ones, are memmove's.
 */
#include <string.h>

#include "rt_internal.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define RT_STREAM_COPY 1
#else
#define RT_STREAM_COPY 0
#endif

#if RT_STREAM_COPY
/* Far larger than the cores' own caches (the kernels' rule for their outputs: LNB_STREAM_BYTES
 * in ops/layer_norm_backward.c, LN_STREAM_BYTES in ops/layer_norm.c). Not the last-level
 * cache's size: a virtual machine may report its host's (256 MiB on the AMD EPYC above, whose
 * lscpu says 32 MiB). */
#define STREAM_COPY_BYTES ((size_t)8 << 20)

/* Unaligned 16-byte loads, non-temporal stores to the 64-byte aligned destination lines;
 * the ragged ends through memcpy. */
static void stream_copy(char *d, const char *s, size_t n) {
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
        _mm_stream_si128((__m128i *)(void *)(d + i), a);
        _mm_stream_si128((__m128i *)(void *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + i + 48), e);
    }
    _mm_sfence(); /* the stores are visible before the task counts as done */
    memcpy(d + i, s + i, n - i);
}
#endif

RT_HIDDEN void rt_copy_bytes(void *dst, const void *src, size_t n) {
#if RT_STREAM_COPY
    const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    const bool apart = d + n <= s || s + n <= d;
    if (apart && n >= STREAM_COPY_BYTES) {
        stream_copy(dst, src, n);
        return;
    }
#endif
    memmove(dst, src, n);
}
