/*
 * cpu.c - the cpu target: NumPy calls the JIT-compiled serial loop
 * directly, or, while its code waits, the quick-first loop (host/quick.c).
 */
#include "targets/target.h"

#include "gufunc/gufunc.h"
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
