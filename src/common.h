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

/* The package's exceptions, created in module.c (borrowed references). */
extern PyObject *nv_TypingError;

#endif /* NV_COMMON_H */
