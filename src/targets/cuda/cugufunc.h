/*
 * cugufunc.h - what the files of a cuda gufunc share: cugufunc.c (the
 * CUDAGUFunc object, its compilation and loading) and cugucall.c (its call
 * protocol).  The rest of numbavec sees cuda gufuncs through cuda.h's
 * factory, cuda_make_guvectorize.
 */
#ifndef NV_CUDA_CUGUFUNC_H
#define NV_CUDA_CUGUFUNC_H

#include "gufunc/gufunc.h"
#include "targets/cuda/cufunc.h"

typedef struct CuGuLoop {
    TsSignature sig;  /* as declared */
    TsSignature ksig; /* the kernel's view (arrays, 1-element views) */
    PyObject *ptx, *llvm, *var_types;
    char entry[CC_NAME_SIZE + 8];
    CUmodule mod;
    CUfunction fn;
    int block;
    unsigned fails;        /* the statuses the kernel may return (CcCompiled.fails) */
    PyObject *raise_sites; /* CcCompiled.raise_sites, or NULL */
} CuGuLoop;

typedef struct CuGuFunc {
    PyObject_HEAD PyObject *name, *doc, *dict, *backend;
    CcKernel *kernel;
    GuLayout layout;
    unsigned char written[TS_MAXARGS]; /* outputs, writable_args, what the kernel writes */
    char arch[16];
    int sm;
    char arch_suffix[4];
    CuGuLoop **loops;
    Py_ssize_t nloops;
    int lazy; /* no signatures given: a call compiles its input types */
} CuGuFunc;

/* ---- cugufunc.c ---- */

/* Compiles l->sig of f for arch into l (PTX, IR, types; l->sig resolved:
 * a dynamic gufunc's outputs take the kinds the kernel stores).  0/-1. */
int cg_compile_loop(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index, const char *arch);
void cg_loop_free(CuGuLoop *l);
/* Loads l's module on first use (compiled again for an older device).  0/-1. */
int cg_ensure_loaded(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index);

/* ---- cugucall.c ---- */

/* f(*inputs[, *outputs], out=None, axes=None, axis=None, stream=None) */
PyObject *cg_call(PyObject *self, PyObject *args, PyObject *kwargs);

#endif /* NV_CUDA_CUGUFUNC_H */
