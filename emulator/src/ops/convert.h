/*
 * Element runs of an operator dtype (FLOAT, FLOAT16, BF16) <-> float, for any operator
 * kernel: a kernel loads a tile of its inputs as floats, computes in float, and stores the
 * tile in the output's dtype.
 *
 * FLOAT16 goes through the CPU's conversion instructions where it has them (x86-64:
 * AVX-512 16 lanes, else F16C 8 lanes), picked once at run time; otherwise through the
 * portable code of half.h. Every path gives the same bits: widening is exact, narrowing
 * rounds to nearest, ties to even, whatever MXCSR's rounding mode and FTZ/DAZ bits, NaN stays
 * NaN (quieted, top payload kept), subnormals are produced and consumed exactly
 * (tests/test_conversions.py checks the paths against each other). BF16 is integer code
 * compiled for each path's vector width: AVX-512 BF16's VCVTNEPS2BF16 is not used because it
 * flushes binary32 subnormals to zero, which the device does not.
 */
#ifndef ACLEMU_OPS_CONVERT_H_
#define ACLEMU_OPS_CONVERT_H_

#include <stdint.h>

#include "acl/acl_base.h"

#define ACLEMU_CONVERT_API __attribute__((visibility("hidden")))

/* dst[i] = element i of the run as float, for i < n. The run starts at src and steps by
 * stride elements of dt (any sign; 1 is the fast case). */
ACLEMU_CONVERT_API void aclemu_load_floats(aclDataType dt, const void *src, int64_t stride,
                                           int64_t n, float *dst);

/* How narrowing to BF16 breaks a tie: to even (IEEE, and every FLOAT16 narrowing), or away
 * from zero (the CAST_ROUND of some device kernels). */
typedef enum { ACLEMU_TIES_EVEN = 0, ACLEMU_TIES_AWAY = 1 } aclemu_ties;

/* Element i of the run (dst, stride in elements of dt) = src[i] rounded to dt, for i < n;
 * ties only matters for BF16. */
ACLEMU_CONVERT_API void aclemu_store_floats(aclDataType dt, aclemu_ties ties, void *dst,
                                            int64_t stride, int64_t n, const float *src);

/* buf[i] = buf[i] rounded to dt and widened back (identity for FLOAT): a result the device
 * computes in dt before it is cast to another dtype. */
ACLEMU_CONVERT_API void aclemu_round_floats(aclDataType dt, aclemu_ties ties, float *buf,
                                            int64_t n);

/* The conversion path in use: "avx512", "f16c" or "portable". */
ACLEMU_CONVERT_API const char *aclemu_convert_path(void);

#endif /* ACLEMU_OPS_CONVERT_H_ */
