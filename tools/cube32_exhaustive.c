/*
 * tools/cube32_exhaustive.c: float32 x * x * x against powf(x, 3) over every
 * non-negative float32 (the sign is symmetric): the ulp distance and the
 * flags (overflow, invalid, divide-by-zero).  fpow.c's float32_cube rests on
 * its result: one value, 0x1.965feap+42, differs (overflow against
 * FLT_MAX), every other is within 1 ulp with the same flags.
 *
 *   gcc -O2 -ffp-contract=off -o /tmp/cube32 tools/cube32_exhaustive.c -lm && /tmp/cube32
 *
 * About 6 minutes on one core; not a test (CI does not run it).
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <fenv.h>
int
main(void)
{
    long bad = 0, flagbad = 0;
    uint32_t first = 0;
    for (uint64_t u = 0; u < 0x7f800000u + 1; u++) {
        float x;
        uint32_t b = (uint32_t)u;
        memcpy(&x, &b, 4);
        volatile float vx = x;
        feclearexcept(FE_ALL_EXCEPT);
        float n = vx * vx * vx;
        int fn = fetestexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO);
        feclearexcept(FE_ALL_EXCEPT);
        float p = powf(vx, 3.0f);
        int fp = fetestexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO);
        int32_t bn, bp;
        memcpy(&bn, &n, 4);
        memcpy(&bp, &p, 4);
        long d = (long)bn - (long)bp;
        if (d < 0)
            d = -d;
        if (d > 1 || isinf(n) != isinf(p)) {
            if (!bad)
                first = b;
            bad++;
        }
        if (fn != fp) {
            flagbad++;
            if (flagbad < 4)
                printf("flags differ at %a: %d %d\n", x, fn, fp);
        }
    }
    float f;
    memcpy(&f, &first, 4);
    printf("values more than 1 ulp (or inf-ness) from powf: %ld (first %a = %g); flag differences "
           "%ld\n",
           bad, f, f, flagbad);
    return 0;
}
