/*
 * host.h - the host layer: what the factories (vectorize/, gufunc/) call at
 * run time, beneath them, and what the targets (targets/: cpu, parallel,
 * cuda) register into at module init from above.
 *
 *   target.c   the target interface: TgTarget, the table of registered
 *              targets, tg_for
 *   quick.c    the quick-code budget of a signature whose code waits
 *              (TgQuickFirst), beside CcCode's quick code
 *   pool.c     the persistent pthread pool (pool.h)
 *
 * A target says what makes the objects the decorators return on it (its
 * factories: the host ufunc and gufunc factories for cpu and parallel,
 * the cuda ufunc for cuda), and the host targets receive the serial inner
 * loop JIT-compiled for one signature and return the function and data
 * NumPy should call.  Callers never test which target they hold.
 */
#ifndef NV_HOST_H
#define NV_HOST_H

#include "common.h"
#include "compiler/compiler.h"
#include "typesig/typesig.h"

#include <stdatomic.h>

/* Runs the indices [start, stop) of a range; ctx is the caller's. */
typedef void (*TgRangeFn)(void *ctx, npy_intp start, npy_intp stop);

/* What a decorator asks a target to make (references borrowed). */
typedef struct TgRequest {
    CcKernel *kernel;        /* api.c's: borrowed, and taken by the object made
                              * (the factory then sets it NULL) */
    const TsSignature *sigs; /* the signatures given */
    Py_ssize_t nsigs;        /* 0: compiled on call, for the types it meets */
    int nin;                 /* the kernel's arity */
    PyObject *identity;
    const char *doc;
    PyObject *layout, *writable; /* guvectorize: the layout, writable_args */
    const char *arch;            /* cuda: the PTX arch (NULL: its default) */
    PyObject *backend;           /* cuda: 'nvvm', 'llvm' or None */
} TgRequest;

struct TgTarget;

/* The factories of a target: a new reference, or NULL with an exception. */
typedef struct TgFactories {
    PyObject *(*vectorize)(const struct TgTarget *t, TgRequest *r);
    PyObject *(*guvectorize)(const struct TgTarget *t, TgRequest *r); /* NULL: not yet */
} TgFactories;

typedef struct TgTarget {
    const char *name;
    const TgFactories *make;
    /*
     * serial: the JIT'd loop for sig, or NULL while its machine code waits
     * for the first call: lazy is then its code (cc_code_entry), and quick
     * says whether its first calls may run its quick code (vz_quick_first,
     * TgQuickFirst); cost: an
     * estimate of the serial loop's nanoseconds per element (rough: the
     * parallel target refines it by measurement).  Sets *fn and *data (data
     * freed with free_data).  0/-1 with an exception.
     */
    int (*wrap_loop)(PyUFuncGenericFunction serial, CcCode *lazy, int quick, const TsSignature *sig,
                     double cost, PyUFuncGenericFunction *fn, void **data);
    void (*free_data)(void *data);
    /*
     * gufuncs: runs fn(ctx, start, stop) over [0, n) - at once (cpu), or
     * in chunks on the pool when n x cost_ns (estimated nanoseconds per
     * index) passes the parallel threshold.  fn must allow disjoint chunks
     * to run concurrently.  Called without the GIL.
     */
    void (*run_range)(TgRangeFn fn, void *ctx, npy_intp n, double cost_ns);
} TgTarget;


/* ---- quick.c ---- */

/*
 * A signature whose code waits to be made (a ufunc's loop on the cpu
 * target, a gufunc's body): its first calls run quick code
 * (cc_code_quick_entry) until they have run
 * TG_QUICK_WORK elements, or TG_QUICK_NS nanoseconds, in all; the call
 * that reaches either, and every call after, runs the optimised code, made
 * then.  A first call of that many elements makes the optimised code at
 * once.  (The time bounds what quick code costs a kernel heavy per element,
 * a loop of math calls for one.)
 */
typedef struct TgQuickFirst {
    CcCode *code;      /* borrowed: its compiled signature owns it */
    int quick;         /* 0: the optimised code at the first call */
    atomic_llong work; /* elements the quick code was asked to run */
    atomic_llong ns;   /* and the time it took */
} TgQuickFirst;
#define TG_QUICK_WORK 65536
#define TG_QUICK_NS   2000000

/* The cpu target's NumPy loop of a signature whose code waits: data is a
 * TgQuickFirst.  When memory is short for the optimised code, the call
 * runs quick code (tg_quick_instead); a failure to make any code leaves
 * the exception set and cc_site_failed raised, for the ufunc's
 * ArrayMethod loop to return -1. */
void tg_quick_first_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data);
/* Whether quick code may run at all: not with NUMBAVEC_QUICK=0. */
int tg_quick_allowed(void);
void tg_quick_init(TgQuickFirst *q, CcCode *code, int quick);
/* Whether a call of `work` units (elements; a gufunc's: outer iterations
 * times core sizes) runs q's quick code: its code waits, and the calls so
 * far stayed within the budget.  Counts the work. */
int tg_quick_take(TgQuickFirst *q, long long work);
void tg_quick_ran(TgQuickFirst *q, double ns); /* the time quick code took */
/* Runs a ufunc loop's call on q's quick code, made if it waits, and counts
 * its time; a failure to make it leaves the exception set and
 * cc_site_failed raised. */
void tg_quick_run_loop(TgQuickFirst *q, char **args, const npy_intp *dims, const npy_intp *steps);
/* After cc_code_entry failed (GIL not held): 1 when its exception was a
 * MemoryError and q has quick code to run instead, which then serves
 * another budget before the optimised code is tried again (the exception
 * cleared); else 0, the exception left. */
int tg_quick_instead(TgQuickFirst *q);

/* ---- target.c ---- */

/* Registers t under name (a target's init, GIL held, before any
 * decoration); the order of registration is the order error messages list
 * the choices in.  0, or -1 with an exception. */
int tg_register(const char *name, const TgTarget *t);
/* The target `name` ("cpu", "parallel", "cuda" or its alias "gpu") for what
 * who ("vectorize", "guvectorize") makes; NULL with ValueError naming the
 * choices, or NotImplementedError for a target without that factory yet. */
const TgTarget *tg_for(const char *name, const char *who);

#endif /* NV_HOST_H */
