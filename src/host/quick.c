/*
 * quick.c - the quick-code budget: a signature whose code waits to be made
 * runs its quick code (cc_code_quick_entry, compiler/code.c) for its first
 * calls, within a budget of work and time (TgQuickFirst, host.h), then its
 * optimised code.  Called on every call of such a signature, by the cpu
 * target's loop (below), the parallel target's trampoline and the gufunc
 * call (gufunc/call.c), without the GIL.
 */
#include "host/host.h"
#include "host/pool.h" /* tg_now_ns */

#include <stdlib.h>
#include <string.h>

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
    NV_ASSERT(!q->quick || q->code != NULL); /* tg_quick_init */
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
