/*
 * testhooks.c - test-only entry points into the parallel target.
 *
 * tests/host/test_pool.py and benchmarks/bench_pool_hooks.py exercise the pool
 * without the compiler: _core._parallel_test_ufunc(name) returns a real
 * numpy.ufunc whose one loop, written here in C, is wrapped by a target
 * exactly as a JIT-compiled loop would be.  _core._pool_stats() and
 * _core._pool_force_parallel() let the tests see and steer the pool.
 *
 * The loops' funcs/data/types arrays are static and made once per name;
 * every ufunc made for that name shares them, so no ufunc owns memory that
 * NumPy would have to free.
 */
#include "host/pool.h"
#include "targets/target.h"

#include <math.h>
#include <string.h>

/* ---- the loops (NumPy's inner-loop signature, data unused) ---- */

static void
saxpy_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    npy_intp n = dims[0];
    if (steps[0] == 4 && steps[1] == 4 && steps[2] == 4 && steps[3] == 4) {
        /* contiguous: indexed so that the C compiler vectorizes it */
        const float *a = (const float *)args[0], *x = (const float *)args[1];
        const float *y = (const float *)args[2];
        float *out = (float *)args[3];
        for (npy_intp i = 0; i < n; i++) {
            out[i] = a[i] * x[i] + y[i];
        }
        return;
    }
    char *a = args[0], *x = args[1], *y = args[2], *out = args[3];
    for (npy_intp i = 0; i < n; i++) {
        *(float *)out = *(float *)a * *(float *)x + *(float *)y;
        a += steps[0];
        x += steps[1];
        y += steps[2];
        out += steps[3];
    }
}

static void
heavy_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    char *in = args[0], *out = args[1];
    for (npy_intp i = 0; i < dims[0]; i++) {
        double x = *(double *)in;
        *(double *)out = sin(x) * exp(x) + sqrt(fabs(x));
        in += steps[0];
        out += steps[1];
    }
}

static void
divide_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    char *x = args[0], *y = args[1], *out = args[2];
    for (npy_intp i = 0; i < dims[0]; i++) {
        *(double *)out = *(double *)x / *(double *)y;
        x += steps[0];
        y += steps[1];
        out += steps[2];
    }
}

/* ---- the table of test ufuncs ---- */

typedef struct HookUfunc {
    const char *name;
    const TgTarget *target;
    PyUFuncGenericFunction loop;
    double cost; /* ns per element, as the compiler guesses */
    int nin;
    TsKind kind; /* of every operand */
    char types[4];
    /* made on first request, kept for the life of the process */
    int made;
    PyUFuncGenericFunction funcs[1];
    void *data[1];
} HookUfunc;

static HookUfunc hook_ufuncs[] = {
    {"saxpy",
     &tg_parallel,
     saxpy_loop,
     0.5,
     3,
     TS_FLOAT32,
     {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT}},
    {"heavy", &tg_parallel, heavy_loop, 20.0, 1, TS_FLOAT64, {NPY_DOUBLE, NPY_DOUBLE}},
    {"divide", &tg_parallel, divide_loop, 1.0, 2, TS_FLOAT64, {NPY_DOUBLE, NPY_DOUBLE, NPY_DOUBLE}},
    {"serial",
     &tg_cpu,
     saxpy_loop,
     0.5,
     3,
     TS_FLOAT32,
     {NPY_FLOAT, NPY_FLOAT, NPY_FLOAT, NPY_FLOAT}},
    {"heavy_serial", &tg_cpu, heavy_loop, 20.0, 1, TS_FLOAT64, {NPY_DOUBLE, NPY_DOUBLE}},
};

#define N_HOOK_UFUNCS (sizeof(hook_ufuncs) / sizeof(hook_ufuncs[0]))

static int
make_loop(HookUfunc *h)
{
    if (h->made) {
        return 0;
    }
    TsSignature sig;
    memset(&sig, 0, sizeof(sig));
    sig.nargs = h->nin;
    sig.ret.kind = h->kind;
    for (int k = 0; k < h->nin; k++) {
        sig.args[k].kind = h->kind;
    }
    if (h->target->wrap_loop(h->loop, NULL, 0, &sig, h->cost, &h->funcs[0], &h->data[0]) < 0) {
        return -1;
    }
    h->made = 1;
    return 0;
}

/* _parallel_test_ufunc(name) -> new reference to a numpy.ufunc */
static PyObject *
parallel_test_ufunc(PyObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (name == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < N_HOOK_UFUNCS; i++) {
        HookUfunc *h = &hook_ufuncs[i];
        if (strcmp(h->name, name) != 0) {
            continue;
        }
        if (make_loop(h) < 0) {
            return NULL;
        }
        return PyUFunc_FromFuncAndData(h->funcs, h->data, h->types, 1, h->nin, 1, PyUFunc_None,
                                       h->name, "numbavec test ufunc (parallel target)", 0);
    }
    PyErr_Format(PyExc_ValueError,
                 "no test ufunc '%s' (saxpy, heavy, divide, serial, heavy_serial)", name);
    return NULL;
}

/* _pool_stats() -> new dict: size, started, jobs, overhead_ns, startup_give_ups */
static PyObject *
pool_stats(PyObject *self, PyObject *unused)
{
    TgPoolStats st;
    tg_pool_stats(&st);
    return Py_BuildValue("{s:i,s:O,s:k,s:d,s:i}", "size", st.size, "started",
                         st.started ? Py_True : Py_False, "jobs", st.jobs, "overhead_ns",
                         st.overhead_ns, "startup_give_ups", st.startup_give_ups);
}

/* _pool_force_parallel(on) -> the previous setting (bool) */
static PyObject *
pool_force_parallel(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    int old = tg_pool_force_parallel();
    tg_pool_set_force_parallel(on);
    return PyBool_FromLong(old);
}

static PyMethodDef testhook_methods[] = {
    {"_parallel_test_ufunc", parallel_test_ufunc, METH_O,
     "Test only: a ufunc with a C loop wrapped by a target."},
    {"_pool_stats", pool_stats, METH_NOARGS, "Test only: the pool's state."},
    {"_pool_force_parallel", pool_force_parallel, METH_O,
     "Test only: ignore the parallel target's work threshold."},
    {NULL, NULL, 0, NULL},
};

int
tg_init_testhooks(PyObject *module)
{
    return PyModule_AddFunctions(module, testhook_methods);
}
