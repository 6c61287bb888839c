/*
 * Runs emulator/src/ops/half.h's float -> HIFLOAT8 conversion (aclemu_f32_to_hif8_sat) over
 * binary32 patterns: reads native uint32 patterns from stdin, writes one code byte per pattern
 * to stdout. tests/test_hifloat8.py builds it and compares its output with an independent
 * implementation (acl_py.dtypes.float32_to_hifloat8: a nearest-value search over the decoded
 * code table).
 */
#include "../../emulator/src/ops/half.h"

#include <stdio.h>

int main(void)
{
    uint32_t in[4096];
    uint8_t out[4096];
    size_t n;
    while ((n = fread(in, sizeof in[0], 4096, stdin)) > 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = aclemu_f32_to_hif8_sat(aclemu_f32_from_bits(in[i]));
        if (fwrite(out, 1, n, stdout) != n)
            return 1;
    }
    return 0;
}
