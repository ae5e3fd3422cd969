/*
 * common.h - what every area of numbavec._core includes first.
 *
 * The extension is built against the limited API (abi3) and NumPy's C API.
 * Only this header pulls in Python.h and NumPy, so the macros that select
 * the API level are set in one place (setup.py adds the -D flags).
 */
#ifndef NV_COMMON_H
#define NV_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Every translation unit but module.c sees NumPy's API table as extern. */
#define PY_ARRAY_UNIQUE_SYMBOL numbavec_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL numbavec_UFUNC_API
#ifndef NV_IMPORT_NUMPY
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#define NV_HIDDEN __attribute__((visibility("hidden")))
#define NV_UNUSED __attribute__((unused))

/*
 * NV_ASSERT(cond): an invariant the code relies on and no input can break
 * (a caller's promise, what an earlier check established), checked in the
 * debug build (NUMBAVEC_DEBUG=1 in setup.py, the ASan + UBSan build), where
 * a broken one stops the process with its file and line; nothing otherwise,
 * not even the evaluation of cond.  Never for what a user can cause: that
 * is an exception.
 */
#ifdef NUMBAVEC_DEBUG
#include <stdio.h>
#include <stdlib.h>
#define NV_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "numbavec: invariant broken at %s:%d: %s\n", __FILE__, __LINE__,       \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
#else
#define NV_ASSERT(cond) ((void)0)
#endif

/*
 * The module's Python-level state, in one place: its classes, exceptions
 * and lookup tables.  Each area's *_init_module fills its fields (the
 * tables on first use); they are strong references kept for the process's
 * life.  The module is single-phase (m_size -1): it is initialised once per
 * process and CPython refuses to load it into a subinterpreter, which is
 * right, because what it runs on is process-wide (the JIT, the pool, the
 * CUDA driver: docs/DESIGN-NOTES.md, section 6).
 */
typedef struct NvState {
    PyObject *typing_error;       /* numbavec.TypingError (module.c) */
    PyObject *cuda_error;         /* numbavec.cuda.CudaError (cudamodule.c) */
    PyObject *cuda_support_error; /* numbavec.cuda.CudaSupportError */
    PyObject *library_type;       /* _core.Library: a ufunc's code (vectorize.c) */
    PyObject *lazy_state_type;    /* a lazy ufunc's owner (dufunc.c) */
    PyObject *cufunc_type;        /* numbavec.cuda's ufunc (cufunc.c) */
    PyObject *cugufunc_type;      /* numbavec.cuda's gufunc (cugufunc.c) */
    PyObject *stream_type;        /* numbavec.cuda.Stream (stream.c) */
    PyObject *event_type;         /* numbavec.cuda.Event */
    PyObject *devicearray_type;   /* numbavec.cuda.DeviceNDArray (devicearray.c) */
    PyObject *cuda_module_type;   /* _core.CudaModule: loaded PTX (launch.c) */
    PyObject *ast_kinds;          /* ast node class -> CcAstKind (astkind.c) */
    PyObject *builtin_ids;        /* Python object -> builtin id (builtins.c) */
    PyObject *inline_type;        /* _core.Inline: a callee as kernels inline it (inline.c) */
    PyObject *raise_classes;      /* raise site text -> the class compiled (driver.c) */
} NvState;

extern NvState nv_state;

#endif /* NV_COMMON_H */
