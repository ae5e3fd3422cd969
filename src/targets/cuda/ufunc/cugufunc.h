/*
 * cugufunc.h - what the files of a cuda gufunc share: cugufunc.c (the
 * CUDAGUFunc object, its compilation and loading) and cugucall.c (its call
 * protocol).  The rest of numbavec sees cuda gufuncs through cuda.h's
 * factory, cuda_make_guvectorize.
 */
#ifndef NV_CUDA_CUGUFUNC_H
#define NV_CUDA_CUGUFUNC_H

#include "gufunc/gufunc.h"
#include "targets/cuda/ufunc/cufunc.h"

typedef struct CuGuLoop {
    TsSignature sig;  /* as declared */
    TsSignature ksig; /* the kernel's view (arrays, 1-element views) */
    PyObject *ptx, *llvm, *var_types;
    char entry[CC_NAME_SIZE + 8];
    CUmodule mod;
    CUfunction fn;
    int block;
    unsigned fails;        /* the statuses the kernel may return (CcCompiled.fails) */
    int silent;            /* its PTX never reads the status word's parameter */
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

/* ---- a call (cugucall.c's host side, cugulaunch.c's device side) ---- */

typedef struct GuCall {
    CuGuFunc *f;
    int nargs, given_out[TS_MAXARGS];
    Operand ops[TS_MAXARGS];
    PyObject *stream;
    CUstream s;
    Py_ssize_t loop;
    int device; /* a device operand: the results stay on the device */
    /* the loop dimensions and the core sizes */
    int lnd;
    Py_ssize_t lshape[NPY_MAXDIMS];
    Py_ssize_t core[GU_MAXCORE];
    /* per argument, on the device */
    PyObject *dev[TS_MAXARGS];  /* owned: what the kernel reads or writes */
    PyObject *host[TS_MAXARGS]; /* owned: a host array to write back into (or NULL) */
    /* axes=/axis=: where each operand's core dimensions are (-1: at the end) */
    PyObject *axes, *axis;               /* borrowed */
    int core_at[TS_MAXARGS][TS_MAXDIMS]; /* the axes, normalised, in core order */
    int moved[TS_MAXARGS];               /* operand k's core dimensions are elsewhere */
    PyObject *given[TS_MAXARGS];         /* owned: an out= as the caller gave it */
    int keepdims;                        /* outputs keep the reduced dimensions */
    unsigned char missing[GU_MAXCORE];   /* a '?' dimension the operands left out */
    int cast_back[TS_MAXARGS];           /* dev[k] is a copy to cast into the operand */
    /* a staged host call (stage_plan) */
    unsigned char whole[TS_MAXARGS];  /* an input the same for every iteration: uploaded once */
    unsigned char direct[TS_MAXARGS]; /* a host out= the pipeline writes into */
    PyObject *res[TS_MAXARGS];        /* owned: the host array chunks come from or go to */
} GuCall;

/* The kernel's name, for messages. */
static inline const char *
cg_fname(const GuCall *c)
{
    return c->f->kernel->name;
}

/* ---- cugucall.c ---- */

/* f(*inputs[, *outputs], out=None, axes=None, axis=None, stream=None) */
PyObject *cg_call(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: g._plan(*args, **kwargs) -> how a call would be staged (a
 * dict); the host side only, so it runs without a GPU. */
PyObject *cg_plan(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- cugulaunch.c ---- */

/* Launches the entry over c->dev for n outer iterations; when the kernel
 * can fail, waits for its status and raises it.  0/-1. */
int cg_launch(GuCall *c, Py_ssize_t n);
/* Whether the call's kernel can fail (an index out of bounds, checked unless
 * boundscheck=False; a raise, a division by zero ...) and its PTX reads the
 * status word: then the call gives the kernel one and waits for it. */
int cg_can_fail(const GuCall *c);
/* Whether a host call of n outer iterations goes through the staged
 * pipeline; fills job (but its data pointers) and c->whole/c->direct.
 * Needs no GPU. */
int cg_stage_plan(GuCall *c, Py_ssize_t n, CudaStaged *job);
/* The staged call cg_stage_plan chose: 0; 1 when the staging slots could
 * not be allocated (nothing done: copy whole arrays instead); -1 with an
 * exception.  Outputs are left in c->res (or the out= given). */
int cg_staged_call(GuCall *c, Py_ssize_t n, CudaStaged *job);

#endif /* NV_CUDA_CUGUFUNC_H */
