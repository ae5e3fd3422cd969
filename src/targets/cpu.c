/*
 * cpu.c - the cpu target: NumPy calls the JIT-compiled serial loop directly.
 */
#include "targets/target.h"

#include <string.h>

static int
cpu_wrap_loop(PyUFuncGenericFunction serial, const TsSignature *sig, double cost,
              PyUFuncGenericFunction *fn, void **data)
{
    *fn = serial;
    *data = NULL;
    return 0;
}

static void
cpu_free_data(void *data)
{
}

static void
cpu_run_range(TgRangeFn fn, void *ctx, npy_intp n, double cost_ns)
{
    fn(ctx, 0, n);
}

const TgTarget tg_cpu = {"cpu", cpu_wrap_loop, cpu_free_data, cpu_run_range};

const TgTarget *
tg_lookup(const char *name)
{
    static const TgTarget *const all[] = {&tg_cpu, &tg_parallel};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(all[i]->name, name) == 0) {
            return all[i];
        }
    }
    if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) {
        /* cuda ufuncs are made by cufunc.c, not from host loops */
        PyErr_Format(PyExc_ValueError,
                     "target '%s' has no host loops: cuda ufuncs come from "
                     "vectorize(target='cuda'), and gufuncs do not support cuda yet "
                     "(host loops run on 'cpu' or 'parallel')",
                     name);
        return NULL;
    }
    PyErr_Format(PyExc_ValueError, "unknown target '%s' (choose 'cpu' or 'parallel')", name);
    return NULL;
}
