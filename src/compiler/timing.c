/*
 * timing.c - the time each stage of the compilation under way took, which
 * the driver (driver.c: cc_compile's record) and the JIT (passes.c, jit.c;
 * code.c's record for code made at a call) both add to, from below either;
 * the records go to numbavec.events (f.stats, the numbavec logger,
 * listeners) and, with NUMBAVEC_DUMP=time, a line to stderr.  One counter
 * a process, used with the GIL held.
 */
#include "compiler/compiler.h"

#include <stdint.h>
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

/* numbavec.events._record, imported at the first record and kept: where
 * every compile record goes (f.stats, the numbavec logger, listeners).
 * NULL (once reported) when it cannot be imported. */
static PyObject *
record_function(void)
{
    static PyObject *fn;
    static int failed;
    if (fn == NULL && !failed) {
        PyObject *mod = PyImport_ImportModule("numbavec.events");
        fn = mod != NULL ? PyObject_GetAttrString(mod, "_record") : NULL;
        Py_XDECREF(mod);
        if (fn == NULL) {
            failed = 1;
            PyErr_WriteUnraisable(NULL);
        }
    }
    return fn;
}

void
cc_time_record(const char *kind, const char *name, PyObject *origin, const void *code,
               const char *sig, const char *where, double t0, double total, int lazy, int hit)
{
    PyObject *fn = record_function();
    if (fn == NULL) {
        return;
    }
    PyObject *r = PyObject_CallFunction(
        fn, "ssOKzz(dddddd)ddii", kind, name, origin != NULL ? origin : Py_None,
        (unsigned long long)(uintptr_t)code, sig, where, stage_ns[0], stage_ns[1], stage_ns[2],
        stage_ns[3], stage_ns[4], stage_ns[5], t0, total, lazy, hit);
    if (r == NULL) {
        PyErr_WriteUnraisable(fn);
    }
    Py_XDECREF(r);
}

void
cc_time_made(const void *code, const char *module, const char *what, double t0)
{
    char line[256];
    double total = cc_now_ns() - t0;
    if (cc_dump_flags() & CC_DUMP_TIME) {
        cc_time_format(line, sizeof(line), CC_T_OPT, CC_T_N);
        fprintf(stderr, "numbavec time: %s %s at a call:%s, total %.2f ms\n", module, what, line,
                total / 1e6);
        fflush(stderr);
    }
    cc_time_record(what, module, NULL, code, NULL, NULL, t0, total, 0, 0);
}
