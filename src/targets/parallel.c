/*
 * parallel.c - the parallel target: a trampoline NumPy calls in place of
 * the serial inner loop, which cuts the 1-d loop into chunks for the pool
 * (pool.c).  Each chunk runs the serial loop itself, so its contiguous
 * SIMD fast path still applies.  Also registers set_num_threads,
 * get_num_threads and get_pool_size on _core.
 *
 * When a call stays serial (the caller runs the loop alone):
 *   - the calling thread's thread count is 1, or it is a pool worker;
 *   - the loop is sequential: the output step is 0 (a reduction into one
 *     element), the output overlaps itself, or an input's address range
 *     overlaps the output's without being the very same pointer and step
 *     (accumulate reads what the previous element wrote);
 *   - the work is too small: see worth_parallel();
 *   - the pool is busy with another caller's job.
 */
#include "targets/pool.h"
#include "targets/target.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Chunk boundaries are multiples of this many elements: a 64-byte cache
 * line of float32, so two threads rarely write to one line. */
#define GRAIN 16

/* No job on any machine costs less than this to wake and join; below it
 * the pool is not even started. */
#define MIN_PARALLEL_NS 2000.0

/* Serial runs shorter than this are not timed (the clock would weigh). */
#define MIN_TIMED_ELEMENTS 1024

#define MAX_OPERANDS (TS_MAXARGS + 1)

typedef struct ParLoop {
    PyUFuncGenericFunction serial; /* NULL while quick.code waits */
    TgQuickFirst quick;            /* its code (borrowed) and its first calls */
    int nops;                      /* inputs and the output (last) */
    int itemsize[MAX_OPERANDS];
    _Atomic double cost_ns; /* per element; refined by measurement */
} ParLoop;

/* One call of the trampoline; lives on the caller's stack. */
typedef struct Call {
    const ParLoop *loop;
    PyUFuncGenericFunction serial;
    char **args;
    const npy_intp *steps;
    double caller_ns;  /* time the caller spent in its chunks */
    npy_intp caller_n; /* and the elements it did */
} Call;

/* ---- is the loop safe to split? ---- */

static void
byte_span(const char *p, npy_intp step, npy_intp n, int size, uintptr_t *lo, uintptr_t *hi)
{
    intptr_t last = (intptr_t)(n - 1) * (intptr_t)step;
    uintptr_t base = (uintptr_t)p;
    *lo = last < 0 ? base + (uintptr_t)last : base;
    *hi = (last < 0 ? base : base + (uintptr_t)last) + (uintptr_t)size;
}

static int
parallel_safe(const ParLoop *pl, char **args, const npy_intp *steps, npy_intp n)
{
    int out = pl->nops - 1;
    npy_intp ostep = steps[out];
    if (ostep == 0 || (ostep < 0 ? -ostep : ostep) < pl->itemsize[out]) {
        return 0;
    }
    uintptr_t olo, ohi;
    byte_span(args[out], ostep, n, pl->itemsize[out], &olo, &ohi);
    for (int k = 0; k < out; k++) {
        if (args[k] == args[out] && steps[k] == ostep) {
            continue; /* in place: element i reads only what i writes */
        }
        uintptr_t lo, hi;
        byte_span(args[k], steps[k], n, pl->itemsize[k], &lo, &hi);
        if (lo < ohi && olo < hi) {
            return 0;
        }
    }
    return 1;
}

/* ---- is it worth it? ---- */

/*
 * The work threshold.  With T = n x cost (the serial loop's estimated
 * time), p threads and W the pool's measured wake-and-join time, the
 * parallel call takes about W + T/p.  It is taken only when the time it
 * saves, T(1 - 1/p), is at least twice W:
 *
 *     T (p - 1) >= 2 p W        (p = 2: T >= 4 W)
 *
 * so a W twice what start-up measured still costs nothing against serial,
 * and near the threshold a parallel call is never slower than cpu.
 */
static int
worth_time(double t, int p)
{
    if (tg_pool_force_parallel()) {
        return 1;
    }
    if (t < MIN_PARALLEL_NS) {
        return 0;
    }
    double w = tg_pool_overhead_ns();
    return w >= 0.0 && t * (p - 1) >= 2.0 * p * w;
}

static int
worth_parallel(const ParLoop *pl, npy_intp n, int p)
{
    return worth_time((double)n * atomic_load_explicit(&pl->cost_ns, memory_order_relaxed), p);
}

/*
 * Moves the estimate towards what was measured: half-way down, but up by
 * at most an eighth.  The upward surprises are mostly noise (a page fault
 * storm on a fresh output, a core taken by another process) and one of
 * them must not make small calls go parallel; a loop that really is
 * dearer than the compiler guessed gets there in a dozen calls.
 */
static void
refine_cost(ParLoop *pl, double ns, npy_intp n)
{
    if (n < MIN_TIMED_ELEMENTS || !(ns > 0.0)) {
        return;
    }
    double measured = ns / (double)n;
    double old = atomic_load_explicit(&pl->cost_ns, memory_order_relaxed);
    double next =
        measured < old ? old + (measured - old) * 0.5 : old + fmin(measured - old, old) * 0.125;
    atomic_store_explicit(&pl->cost_ns, next, memory_order_relaxed);
}

/* ---- running ---- */

static void
run_range(void *ctx, npy_intp start, npy_intp stop)
{
    Call *c = ctx;
    const ParLoop *pl = c->loop;
    char *args[MAX_OPERANDS];
    for (int k = 0; k < pl->nops; k++) {
        args[k] = c->args[k] + start * c->steps[k];
    }
    npy_intp len = stop - start;
    if (tg_pool_in_worker()) {
        c->serial(args, &len, c->steps, NULL);
        return;
    }
    double t0 = tg_now_ns();
    c->serial(args, &len, c->steps, NULL);
    c->caller_ns += tg_now_ns() - t0;
    c->caller_n += len;
}

/* The serial loop, timed (to refine the cost) when long enough to measure. */
static void
run_serial(ParLoop *pl, PyUFuncGenericFunction serial, char **args, const npy_intp *dims,
           const npy_intp *steps)
{
    if (dims[0] < MIN_TIMED_ELEMENTS) {
        serial(args, dims, steps, NULL);
        return;
    }
    double t0 = tg_now_ns();
    serial(args, dims, steps, NULL);
    refine_cost(pl, tg_now_ns() - t0, dims[0]);
}

/* What NumPy calls (maybe from several threads at once, GIL released). */
static void
par_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    ParLoop *pl = data;
    npy_intp n = dims[0];
    /* made here, in NumPy's thread, never in a worker: making takes the
     * GIL, which NumPy's thread may hold while it waits for the workers.
     * Quick code runs its calls here, unsplit (they are small, or the code
     * would be optimised); not when the tests force every call to split. */
    PyUFuncGenericFunction serial = pl->serial;
    if (serial == NULL && !tg_pool_force_parallel() && tg_quick_take(&pl->quick, n)) {
        tg_quick_run_loop(&pl->quick, args, dims, steps);
        return;
    }
    if (serial == NULL
        && (serial = (PyUFuncGenericFunction)cc_code_entry(pl->quick.code, 0)) == NULL) {
        if (tg_quick_instead(&pl->quick)) {
            tg_quick_run_loop(&pl->quick, args, dims, steps); /* no memory for the other */
        } else {
            cc_put_raised(cc_site_failed); /* the ArrayMethod's loop returns -1 */
        }
        return;
    }
    int p = tg_pool_threads_here();
    if (p < 2 || n < 2 * GRAIN || !parallel_safe(pl, args, steps, n)) {
        serial(args, dims, steps, NULL);
        return;
    }
    if (!worth_parallel(pl, n, p)) {
        run_serial(pl, serial, args, dims, steps);
        return;
    }
    Call c = {.loop = pl, .serial = serial, .args = args, .steps = steps};
    if (tg_pool_run(run_range, &c, n, GRAIN, p) < 0) {
        run_serial(pl, serial, args, dims, steps);
        return;
    }
    refine_cost(pl, c.caller_ns, c.caller_n);
}

/* ---- the target ---- */

static int
par_wrap_loop(PyUFuncGenericFunction serial, CcCode *lazy, int quick, const TsSignature *sig,
              double cost, PyUFuncGenericFunction *fn, void **data)
{
    if (sig->nargs < 0 || sig->nargs + 1 > MAX_OPERANDS) {
        PyErr_Format(PyExc_ValueError, "parallel target: %d arguments is too many", sig->nargs);
        return -1;
    }
    ParLoop *pl = calloc(1, sizeof(*pl));
    if (pl == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    pl->serial = serial;
    tg_quick_init(&pl->quick, lazy, quick);
    pl->nops = sig->nargs + 1;
    for (int k = 0; k < sig->nargs; k++) {
        pl->itemsize[k] = ts_itemsize(sig->args[k].kind);
    }
    pl->itemsize[sig->nargs] = ts_itemsize(sig->ret.kind);
    atomic_init(&pl->cost_ns, isfinite(cost) && cost > 0.0 ? cost : 1.0);
    *fn = par_loop;
    *data = pl;
    return 0;
}

/* calloc/free: the limited API has no PyMem_Raw*, and data may be freed
 * by whoever drops the last ufunc, GIL or not. */
static void
par_free_data(void *data)
{
    free(data);
}

/*
 * gufuncs: the outer range (every loop dimension, flattened by NumPy) in
 * chunks of whole kernel calls, under the same threshold as ufunc loops:
 * T = n x cost, with cost the estimated time of one kernel call.
 */
static void
par_run_range(TgRangeFn fn, void *ctx, npy_intp n, double cost_ns)
{
    int p = tg_pool_threads_here();
    if (p > n) {
        p = (int)n;
    }
    if (p < 2 || !worth_time((double)n * cost_ns, p) || tg_pool_run(fn, ctx, n, 1, p) < 0) {
        fn(ctx, 0, n);
    }
}

const TgTarget tg_parallel = {
    .name = "parallel",
    .make = &tg_host_factories,
    .wrap_loop = par_wrap_loop,
    .free_data = par_free_data,
    .run_range = par_run_range,
};

/* ---- _core.set_num_threads & co. ---- */

static PyObject *
set_num_threads(PyObject *self, PyObject *arg)
{
    if (!PyLong_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_num_threads() takes an integer");
        return NULL;
    }
    int overflow;
    long n = PyLong_AsLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow || n < 1 || n > tg_pool_size() || tg_pool_set_num_threads((int)n) < 0) {
        PyErr_Format(PyExc_ValueError, "number of threads must be between 1 and %d (the pool size)",
                     tg_pool_size());
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
get_num_threads(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(tg_pool_get_num_threads());
}

static PyObject *
get_pool_size(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(tg_pool_size());
}

static PyMethodDef pool_methods[] = {
    {"set_num_threads", set_num_threads, METH_O,
     "set_num_threads(n): threads the parallel target uses for calls made "
     "from this thread (1 <= n <= get_pool_size())."},
    {"get_num_threads", get_num_threads, METH_NOARGS,
     "get_num_threads(): this thread's thread count for the parallel target."},
    {"get_pool_size", get_pool_size, METH_NOARGS,
     "get_pool_size(): threads in the pool, the caller included "
     "(NUMBAVEC_NUM_THREADS, else OMP_NUM_THREADS, else the usable cores)."},
    {NULL, NULL, 0, NULL},
};

int
tg_init_module(PyObject *module)
{
    if (tg_pool_configure() < 0 || PyModule_AddFunctions(module, pool_methods) < 0) {
        return -1;
    }
    return tg_init_testhooks(module);
}
