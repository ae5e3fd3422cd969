/* parallel.c - placeholder until the pool lands: runs serially. */
#include "targets/target.h"

static int
par_wrap_loop(PyUFuncGenericFunction serial, const TsSignature *sig, double cost,
              PyUFuncGenericFunction *fn, void **data)
{
    *fn = serial;
    *data = NULL;
    return 0;
}

static void
par_free_data(void *data)
{
}

const TgTarget tg_parallel = {"parallel", par_wrap_loop, par_free_data};

int
tg_init_module(PyObject *module)
{
    return 0;
}
