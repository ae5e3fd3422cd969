/*
 * cpu.c - the cpu target (NumPy calls the JIT-compiled serial loop
 * directly), and the table of every target the decorators may name.
 */
#include "targets/target.h"

#include "gufunc/gufunc.h"
#include "targets/pool.h"
#include "vectorize/vectorize.h"

#include <stdlib.h>
#include <string.h>

static int
cpu_wrap_loop(PyUFuncGenericFunction serial, CcCode *lazy, int quick, const TsSignature *sig,
              double cost, PyUFuncGenericFunction *fn, void **data)
{
    *fn = serial;
    *data = NULL;
    if (serial == NULL) {
        /* calloc/free: data may be freed by whoever drops the last ufunc */
        TgQuickFirst *q = calloc(1, sizeof(*q));
        if (q == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        tg_quick_init(q, lazy, quick);
        *fn = tg_quick_first_loop;
        *data = q;
    }
    return 0;
}

int
tg_quick_allowed(void)
{
    static int allowed = -1; /* read once, at a decoration (GIL held) */
    if (allowed < 0) {
        const char *quick = getenv("NUMBAVEC_QUICK");
        allowed = quick == NULL || strcmp(quick, "0") != 0;
    }
    return allowed;
}

void
tg_quick_init(TgQuickFirst *q, CcCode *code, int quick)
{
    q->code = code;
    q->quick = quick && code != NULL;
    atomic_init(&q->work, 0);
    atomic_init(&q->ns, 0);
}

int
tg_quick_take(TgQuickFirst *q, long long work)
{
    return q->quick && !cc_code_made(q->code)
           && atomic_load_explicit(&q->ns, memory_order_relaxed) < TG_QUICK_NS
           && atomic_fetch_add_explicit(&q->work, work, memory_order_relaxed) + work
                  < TG_QUICK_WORK;
}

void
tg_quick_ran(TgQuickFirst *q, double ns)
{
    atomic_fetch_add_explicit(&q->ns, (long long)ns, memory_order_relaxed);
}

int
tg_quick_instead(TgQuickFirst *q)
{
    if (!q->quick) {
        return 0;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int memory = PyErr_ExceptionMatches(PyExc_MemoryError);
    if (memory) {
        PyErr_Clear();
    }
    PyGILState_Release(gil);
    if (memory) { /* a budget more of quick code, then another try */
        atomic_store_explicit(&q->work, 0, memory_order_relaxed);
        atomic_store_explicit(&q->ns, 0, memory_order_relaxed);
    }
    return memory;
}

void
tg_quick_run_loop(TgQuickFirst *q, char **args, const npy_intp *dims, const npy_intp *steps)
{
    PyUFuncGenericFunction loop = (PyUFuncGenericFunction)cc_code_quick_entry(q->code, 0);
    if (loop == NULL) {
        cc_put_raised(cc_site_failed); /* the ArrayMethod's loop returns -1 */
        return;
    }
    double t0 = tg_now_ns();
    loop(args, dims, steps, NULL);
    tg_quick_ran(q, tg_now_ns() - t0);
}

void
tg_quick_first_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    TgQuickFirst *p = data;
    if (tg_quick_take(p, dims[0])) {
        tg_quick_run_loop(p, args, dims, steps);
        return;
    }
    PyUFuncGenericFunction loop = (PyUFuncGenericFunction)cc_code_entry(p->code, 0);
    if (loop != NULL) {
        loop(args, dims, steps, NULL);
    } else if (tg_quick_instead(p)) {
        tg_quick_run_loop(p, args, dims, steps);
    } else {
        cc_put_raised(cc_site_failed);
    }
}

static void
cpu_free_data(void *data)
{
    free(data);
}

static void
cpu_run_range(TgRangeFn fn, void *ctx, npy_intp n, double cost_ns)
{
    fn(ctx, 0, n);
}

/* The host targets make real NumPy ufuncs and gufuncs around host loops. */
const TgFactories tg_host_factories = {vz_make_vectorize, gu_make_guvectorize};

const TgTarget tg_cpu = {
    .name = "cpu",
    .make = &tg_host_factories,
    .wrap_loop = cpu_wrap_loop,
    .free_data = cpu_free_data,
    .run_range = cpu_run_range,
};

/* ---- the table of targets ---- */

static const struct {
    const char *name;
    const TgTarget *target;
} targets[] = {
    {"cpu", &tg_cpu},
    {"parallel", &tg_parallel},
    {"cuda", &tg_cuda},
    {"gpu", &tg_cuda}, /* Numba's alias */
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* Whether target t makes what who asks for. */
static int
makes(const TgTarget *t, const char *who)
{
    return strcmp(who, "guvectorize") == 0 ? t->make->guvectorize != NULL
                                           : t->make->vectorize != NULL;
}

/* "'cpu', 'parallel' or 'cuda'": the names of the targets who may name. */
static void
choices(const char *who, char *buf, size_t size)
{
    size_t at = 0, n = 0, count = 0;
    for (size_t i = 0; i < NTARGETS; i++) {
        count += makes(targets[i].target, who);
    }
    buf[0] = '\0';
    for (size_t i = 0; i < NTARGETS && at < size; i++) {
        if (!makes(targets[i].target, who)) {
            continue;
        }
        n++;
        const char *sep = n == 1 ? "" : n == count ? " or " : ", ";
        at += (size_t)snprintf(buf + at, size - at, "%s'%s'", sep, targets[i].name);
    }
}

const TgTarget *
tg_for(const char *name, const char *who)
{
    char offered[128];
    choices(who, offered, sizeof(offered));
    for (size_t i = 0; i < NTARGETS; i++) {
        if (strcmp(targets[i].name, name) != 0) {
            continue;
        }
        if (makes(targets[i].target, who)) {
            return targets[i].target;
        }
        PyErr_Format(PyExc_NotImplementedError,
                     "%s() does not support target='%s' yet; it supports target %s", who, name,
                     offered);
        return NULL;
    }
    PyErr_Format(PyExc_ValueError, "%s(): unknown target '%s' (choose %s)", who, name, offered);
    return NULL;
}
