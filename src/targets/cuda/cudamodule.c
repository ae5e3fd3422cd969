/*
 * cudamodule.c - the cuda functions and exceptions of numbavec._core.
 *
 * numbavec/cuda/__init__.py re-exports them under their public names; the
 * underscore names here are internal.  Importing needs no CUDA: every
 * function that needs the driver raises CudaSupportError when it is absent.
 */
#include "targets/cuda/cuda.h"

#include "targets/cuda/array/array.h"
#include "targets/cuda/codegen/codegen.h"
#include "targets/cuda/driver/driver.h"
#include "targets/cuda/ufunc/ufunc.h"

static PyObject *
is_available(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(cuda_is_available());
}

static PyObject *
unavailable_reason(PyObject *module, PyObject *unused)
{
    return cuda_unavailable_reason();
}

static PyObject *
detect(PyObject *module, PyObject *unused)
{
    return cuda_detect();
}

static PyObject *
toolkit(PyObject *module, PyObject *unused)
{
    return cuda_toolkit_info();
}

static PyObject *
synchronize(PyObject *module, PyObject *unused)
{
    if (cuda_enter() < 0) {
        return NULL;
    }
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS rc = cuda_drv->CtxSynchronize();
    Py_END_ALLOW_THREADS if (cuda_check(rc, "cuCtxSynchronize") < 0)
    {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
mem_info(PyObject *module, PyObject *unused)
{
    size_t free_bytes = 0, total = 0;
    if (cuda_enter() < 0
        || cuda_check(cuda_drv->MemGetInfo(&free_bytes, &total), "cuMemGetInfo") < 0) {
        return NULL;
    }
    return Py_BuildValue("(KK)", (unsigned long long)free_bytes, (unsigned long long)total);
}

/* The Origin a cuda ufunc or gufunc keeps (new reference), or None for any
 * other object: what numbavec's pickling and inlining read, out of reach of
 * the object's __dict__ (the kernel holds it). */
static PyObject *
origin_of(PyObject *module, PyObject *obj)
{
    if (nv_state.cufunc_type != NULL && Py_TYPE(obj) == (PyTypeObject *)nv_state.cufunc_type) {
        return cc_kernel_origin(((CuFunc *)obj)->kernel);
    }
    if (nv_state.cugufunc_type != NULL && Py_TYPE(obj) == (PyTypeObject *)nv_state.cugufunc_type) {
        return cc_kernel_origin(((CuGuFunc *)obj)->kernel);
    }
    Py_RETURN_NONE;
}

/* Test hook: a failing CUresult as the exception cuda_check makes of it. */
static PyObject *
check_error(PyObject *module, PyObject *arg)
{
    long rc = PyLong_AsLong(arg);
    if (rc == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (cuda_check((CUresult)rc, "test") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/*
 * Test hook: [(name, min_args, max_args), ...] for every scalar builtin the
 * compiler offers ("math.exp", "numpy.fmin", "abs", ".real"), so that the
 * PTX tests cover a builtin as soon as it is added to the table.  The array
 * functions (np.zeros, np.sum, np.sort ...) are not listed: they take arrays.
 */
static PyObject *
test_builtins(PyObject *module, PyObject *unused)
{
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < cc_builtin_count(); i++) {
        const CcBuiltin *b = cc_builtin(i);
        if (b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_REDUCE
            || b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL || b->flavor == FL_SORT
            || b->flavor == FL_DOT || b->flavor == FL_ARANGE || b->flavor == FL_NORM
            || b->flavor == FL_ARRAY || b->flavor == FL_COV || b->flavor == FL_HIST
            || b->flavor == FL_RESHAPE) {
            continue; /* array functions: tests/compiler/test_arrays.py, test_sorting.py */
        }
        PyObject *row = Py_BuildValue("(sii)", b->name, b->min_args, b->max_args);
        if (row == NULL || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(row);
    }
    return list;
}

/* Test hook: ptx_check_resolved on a PTX text; None, or the CudaError. */
static PyObject *
test_check_ptx(PyObject *module, PyObject *ptx)
{
    if (!PyUnicode_Check(ptx)) {
        PyErr_SetString(PyExc_TypeError, "_test_check_ptx(ptx): a str");
        return NULL;
    }
    if (ptx_check_resolved(ptx) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef cuda_functions[] = {
    {"_cuda_is_available", is_available, METH_NOARGS,
     "True when the CUDA driver loads and reports a device."},
    {"_cuda_unavailable_reason", unavailable_reason, METH_NOARGS,
     "Why CUDA is unavailable (str), or None."},
    {"_cuda_detect", detect, METH_NOARGS, "The driver version and the devices."},
    {"_cuda_toolkit", toolkit, METH_NOARGS, "The libNVVM and libdevice found."},
    {"_cuda_synchronize", synchronize, METH_NOARGS, "Waits for all work on the device."},
    {"_cuda_mem_info", mem_info, METH_NOARGS, "(free, total) device memory in bytes."},
    {"_cuda_stream", cuda_stream_new, METH_NOARGS, "A new CUDA stream."},
    {"_cuda_event", cuda_event_new, METH_VARARGS, "event(timing=True): a new CUDA event."},
    {"_cuda_ptx", (PyCFunction)(void (*)(void))ptx_compile_py, METH_VARARGS | METH_KEYWORDS,
     "_cuda_ptx(pyfunc, funcdef, source, signature, arch='sm_90', backend=None, "
     "fastmath=False): PTX of a grid-stride kernel out[i] = f(x0[i], ...)."},
    {"_cuda_origin_of", origin_of, METH_O,
     "_cuda_origin_of(obj): the Origin a cuda ufunc or gufunc keeps, or None."},
    {"_cuda_check_error", check_error, METH_O, "Test hook: raise what a CUresult becomes."},
    {"_cuda_ptx_info", ptx_info_py, METH_NOARGS,
     "Test hook: {compilations, loads} of the PTX back end in this process."},
    {"_test_builtins", test_builtins, METH_NOARGS,
     "Test hook: (name, min_args, max_args) of every builtin a kernel may call."},
    {"_test_check_ptx", test_check_ptx, METH_O,
     "Test hook: CudaError when a PTX text calls a function outside itself."},
    {NULL, NULL, 0, NULL},
};

static int
add_exception(PyObject *m, const char *name, const char *doc, PyObject *base, PyObject **out)
{
    char qualname[96];
    snprintf(qualname, sizeof(qualname), "numbavec.cuda.%s", name);
    *out = PyErr_NewExceptionWithDoc(qualname, doc, base, NULL);
    if (*out == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(m, name, *out);
}

int
cuda_init_module(PyObject *m)
{
    if (add_exception(m, "CudaSupportError",
                      "CUDA cannot be used here: no driver, no device or no toolkit "
                      "piece (the message says which).",
                      PyExc_RuntimeError, &nv_state.cuda_support_error)
            < 0
        || add_exception(m, "CudaError",
                         "A CUDA driver call failed; .name is the driver's error name.",
                         PyExc_RuntimeError, &nv_state.cuda_error)
               < 0
        || PyModule_AddFunctions(m, cuda_functions) < 0 || cuda_stream_init_types(m) < 0
        || da_init_module(m) < 0 || cuda_launch_init(m) < 0 || cu_ufunc_init(m) < 0
        || cu_gufunc_init(m) < 0) {
        return -1;
    }
    return 0;
}
