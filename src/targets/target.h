/*
 * target.h - the execution targets, one const vtable each.
 *
 * A target receives the serial inner loop JIT-compiled for one signature and
 * returns the function and data NumPy should call.  Callers never test which
 * target they hold.
 *
 *   cpu.c        the serial loop itself
 *   parallel.c   a trampoline that splits the loop over the thread pool
 *   pool.c       the persistent pthread pool (pool.h)
 */
#ifndef NV_TARGET_H
#define NV_TARGET_H

#include "common.h"
#include "typesig/typesig.h"

/* Runs the indices [start, stop) of a range; ctx is the caller's. */
typedef void (*TgRangeFn)(void *ctx, npy_intp start, npy_intp stop);

typedef struct TgTarget {
    const char *name;
    /*
     * serial: the JIT'd loop for sig; cost: an estimate of the serial
     * loop's nanoseconds per element (rough: the parallel target refines
     * it by measurement).  Sets *fn and *data (data freed with
     * free_data).  0/-1 with an exception.
     */
    int (*wrap_loop)(PyUFuncGenericFunction serial, const TsSignature *sig, double cost,
                     PyUFuncGenericFunction *fn, void **data);
    void (*free_data)(void *data);
    /*
     * gufuncs: runs fn(ctx, start, stop) over [0, n) - at once (cpu), or
     * in chunks on the pool when n x cost_ns (estimated nanoseconds per
     * index) passes the parallel threshold.  fn must allow disjoint chunks
     * to run concurrently.  Called without the GIL.
     */
    void (*run_range)(TgRangeFn fn, void *ctx, npy_intp n, double cost_ns);
} TgTarget;

extern const TgTarget tg_cpu;
extern const TgTarget tg_parallel;

/* "cpu", "parallel" (the host targets); NULL with ValueError naming the
 * choices ('cuda' has no host loops: cufunc.c makes its ufuncs). */
const TgTarget *tg_lookup(const char *name);

int tg_init_module(PyObject *module); /* set_num_threads & co.; 0/-1 */

#endif /* NV_TARGET_H */
