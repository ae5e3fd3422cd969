/*
 * timing.c - NUMBAVEC_DUMP=time: the time each stage of the compilation
 * under way took, which the driver (driver.c: cc_compile's line) and the
 * JIT (passes.c, jit.c; code.c's line for code made at a call) both add
 * to, from below either.  One counter a process, used with the GIL held.
 */
#include "compiler/compiler.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double stage_ns[CC_T_N];

double
cc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void
cc_time_add(CcStage stage, double ns)
{
    stage_ns[stage] += ns;
}

void
cc_time_reset(void)
{
    memset(stage_ns, 0, sizeof(stage_ns));
}

static const char *const stage_names[CC_T_N] = {"lower", "type", "emit", "opt", "codegen", "link"};

void
cc_time_format(char *line, size_t size, int from, int to)
{
    size_t at = 0;
    line[0] = '\0';
    for (int s = from; s < to && at < size; s++) {
        at += (size_t)snprintf(line + at, size - at, " %s %.2f", stage_names[s], stage_ns[s] / 1e6);
    }
}

void
cc_time_print_made(const char *module, const char *what, double t0)
{
    char line[256];
    double total = cc_now_ns() - t0;
    cc_time_format(line, sizeof(line), CC_T_OPT, CC_T_N);
    fprintf(stderr, "numbavec time: %s %s at a call:%s, total %.2f ms\n", module, what, line,
            total / 1e6);
    fflush(stderr);
}
