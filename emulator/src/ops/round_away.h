/*
 * The CAST_ROUND of the Atlas A2/A3 AscendC kernels (round to nearest, ties away from zero)
 * for a float32 buffer about to be narrowed to a 16-bit dtype: GroupNorm's and
 * GroupNormBackward's kernels use it. BF16 has its own ties-away store (convert.h,
 * ACLEMU_TIES_AWAY); FLOAT16 narrowing in convert.h is to even, so its ties are settled here.
 */
#ifndef ACLEMU_OPS_ROUND_AWAY_H_
#define ACLEMU_OPS_ROUND_AWAY_H_

#include <math.h>
#include <stdint.h>

#include "convert.h"

/* Rounds each value to FLOAT16 to nearest with ties away from zero and widens it back. A
 * value halfway between two FLOAT16 neighbours w (its round to even) and 2v - w (exact in
 * double) takes the one of larger magnitude. */
static inline void round_half_ties_away(float *buf, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = buf[i], w = v;
        aclemu_round_floats(ACL_FLOAT16, ACLEMU_TIES_EVEN, &w, 1);
        if (w == v || !isfinite(w))
            { buf[i] = w; continue; }
        double other = 2.0 * (double)v - (double)w;
        float o = (float)other, ro = o;
        aclemu_round_floats(ACL_FLOAT16, ACLEMU_TIES_EVEN, &ro, 1);
        buf[i] = ((double)o == other && ro == o && fabsf(o) > fabsf(w)) ? o : w;
    }
}

/* buf rounded to dt as a CAST_ROUND (ties away) narrowing does, widened back (FLOAT: as is). */
static inline void round_ties_away(aclDataType dt, float *buf, int64_t n)
{
    if (dt == ACL_FLOAT16)
        round_half_ties_away(buf, n);
    else
        aclemu_round_floats(dt, ACLEMU_TIES_AWAY, buf, n);
}

#endif /* ACLEMU_OPS_ROUND_AWAY_H_ */
