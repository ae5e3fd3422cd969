/*
 * launch.c - loading PTX into the primary context and launching a kernel
 * from C: the per-call path the cuda target will use, exposed for tests and
 * for benchmarks/bench_cuda_transfer.py (the cost of a minimal launch).
 *
 * A CudaModule owns one CUmodule (unloaded when collected).  launch()
 * packs device arrays as their pointers, ints as int64 and floats as
 * double, as the entry points of ptx.c take them.
 */
#include "targets/cuda/driver/driver.h"

typedef struct Module {
    PyObject_HEAD CUmodule handle;
} Module;

enum { MAX_PARAMS = 64 };

static void
module_dealloc(PyObject *self)
{
    Module *m = (Module *)self;
    if (m->handle != NULL && cuda_drv != NULL && cuda_enter() == 0) {
        cuda_drv->ModuleUnload(m->handle);
    }
    PyErr_Clear();
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static int
get_function(Module *m, PyObject *name, CUfunction *f)
{
    const char *s = PyUnicode_AsUTF8AndSize(name, NULL);
    return s ? cuda_check(cuda_drv->ModuleGetFunction(f, m->handle, s), "cuModuleGetFunction") : -1;
}

/* One parameter: its storage and the pointer cuLaunchKernel reads. */
typedef union Param {
    unsigned long long u;
    long long i;
    double d;
} Param;

static int
pack(PyObject *arg, Param *p)
{
    if (PyObject_TypeCheck(arg, (PyTypeObject *)nv_state.devicearray_type)) {
        PyObject *ptr = PyObject_GetAttrString(arg, "device_pointer");
        p->u = ptr ? PyLong_AsUnsignedLongLong(ptr) : 0;
        Py_XDECREF(ptr);
    } else if (PyFloat_Check(arg)) {
        p->d = PyFloat_AsDouble(arg);
    } else {
        p->i = PyLong_AsLongLong(arg);
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* launch(name, grid, block, *args, stream=None, repeat=1) */
static PyObject *
module_launch(PyObject *self, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t n = PyTuple_Size(args);
    unsigned grid, block;
    long repeat = 1;
    CUstream s = NULL;
    CUfunction f;
    Param params[MAX_PARAMS];
    void *ptrs[MAX_PARAMS];
    if (n < 3 || n - 3 > MAX_PARAMS) {
        PyErr_SetString(PyExc_TypeError, "launch(name, grid, block, *args, stream=None, "
                                         "repeat=1)");
        return NULL;
    }
    grid = (unsigned)PyLong_AsUnsignedLong(PyTuple_GetItem(args, 1));
    block = (unsigned)PyLong_AsUnsignedLong(PyTuple_GetItem(args, 2));
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (kwargs != NULL) {
        PyObject *st = PyDict_GetItemString(kwargs, "stream"); /* borrowed */
        PyObject *rp = PyDict_GetItemString(kwargs, "repeat");
        if ((st && cuda_stream_arg(st, &s) < 0) || (rp && (repeat = PyLong_AsLong(rp)) < 0)) {
            return NULL;
        }
    }
    for (Py_ssize_t k = 3; k < n; k++) {
        if (pack(PyTuple_GetItem(args, k), &params[k - 3]) < 0) {
            return NULL;
        }
        ptrs[k - 3] = &params[k - 3];
    }
    if (cuda_enter() < 0 || get_function((Module *)self, PyTuple_GetItem(args, 0), &f) < 0) {
        return NULL;
    }
    CUresult rc = CUDA_SUCCESS;
    for (long r = 0; r < repeat && rc == CUDA_SUCCESS; r++) {
        rc = cuda_drv->LaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, ptrs, NULL);
    }
    if (cuda_check(rc, "cuLaunchKernel") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* max_block_size(name) -> (min_grid, block) from the occupancy API */
static PyObject *
module_max_block_size(PyObject *self, PyObject *name)
{
    CUfunction f;
    int min_grid = 0, block = 0;
    if (cuda_enter() < 0 || get_function((Module *)self, name, &f) < 0
        || cuda_check(cuda_drv->OccupancyMaxPotentialBlockSize(&min_grid, &block, f, NULL, 0, 0),
                      "cuOccupancyMaxPotentialBlockSize")
               < 0) {
        return NULL;
    }
    return Py_BuildValue("(ii)", min_grid, block);
}

static PyMethodDef module_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))module_launch, METH_VARARGS | METH_KEYWORDS,
     "launch(name, grid, block, *args, stream=None, repeat=1)"},
    {"max_block_size", module_max_block_size, METH_O,
     "max_block_size(name): (min_grid, block) for full occupancy"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot module_slots[] = {
    {Py_tp_dealloc, module_dealloc},
    {Py_tp_methods, module_methods},
    {Py_tp_doc, "PTX loaded into the primary context (numbavec internal)."},
    {0, NULL},
};

static PyType_Spec module_spec = {
    "numbavec.cuda.CudaModule", sizeof(Module), 0, Py_TPFLAGS_DEFAULT, module_slots,
};

/* _cuda_load_ptx(ptx) -> CudaModule */
static PyObject *
load_ptx(PyObject *unused, PyObject *text)
{
    const char *ptx = PyUnicode_AsUTF8AndSize(text, NULL);
    if (ptx == NULL || cuda_enter() < 0) {
        return NULL;
    }
    Module *m = PyObject_New(Module, (PyTypeObject *)nv_state.cuda_module_type);
    if (m == NULL) {
        return NULL;
    }
    m->handle = NULL;
    if (cuda_check(cuda_drv->ModuleLoadDataEx(&m->handle, ptx, 0, NULL, NULL), "cuModuleLoadDataEx")
        < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}

static PyMethodDef launch_functions[] = {
    {"_cuda_load_ptx", load_ptx, METH_O, "_cuda_load_ptx(ptx): a CudaModule"},
    {NULL, NULL, 0, NULL},
};

int
cuda_launch_init(PyObject *module)
{
    nv_state.cuda_module_type = PyType_FromSpec(&module_spec);
    if (nv_state.cuda_module_type == NULL
        || PyModule_AddObjectRef(module, "CudaModule", nv_state.cuda_module_type) < 0
        || PyModule_AddFunctions(module, launch_functions) < 0) {
        return -1;
    }
    return 0;
}
