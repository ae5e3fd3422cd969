/*
 * module.c - numbavec._core: module creation and the package's exceptions.
 *
 * Each area registers its own types (ts_init_module, vz_init_module,
 * tg_init_module: the host targets, cuda_init_module: the cuda target);
 * the entry points that parse Python arguments are api.c's (nv_api_init).
 * This file only imports NumPy and wires them together.  PyInit__core is
 * the one exported symbol.
 */
#define NV_IMPORT_NUMPY
#include "common.h"
#include "api.h"

#include "compiler/compiler.h"
#include "targets/cuda/cuda.h"
#include "targets/target.h"
#include "typesig/typesig.h"
#include "vectorize/vectorize.h"

NvState nv_state;

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "numbavec._core",
    .m_doc = "numbavec's compiler, loops and targets (internal).",
    .m_size = -1,
};

static int
add_exceptions(PyObject *m)
{
    nv_state.typing_error = PyErr_NewExceptionWithDoc(
        "numbavec.TypingError",
        "A kernel could not be compiled: an unsupported construct or types "
        "that do not fit.  The message gives file:line:col and a caret.",
        PyExc_TypeError, NULL);
    if (nv_state.typing_error == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(m, "TypingError", nv_state.typing_error);
}

__attribute__((visibility("default"))) PyMODINIT_FUNC
PyInit__core(void)
{
    import_array();
    import_umath();
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddStringConstant(m, "llvm_version", NUMBAVEC_LLVM_VERSION_STRING) < 0
        || add_exceptions(m) < 0 || cc_init_module(m) < 0 || ts_init_module(m) < 0
        || vz_init_module(m) < 0 || tg_init_module(m) < 0 || nv_api_init(m) < 0
        || cuda_init_module(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
