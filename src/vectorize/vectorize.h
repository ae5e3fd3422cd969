/*
 * vectorize.h - the ufunc factory.
 *
 *   loops.c      emits the inner-loop wrapper around a kernel: contiguous
 *                fast paths (vectorizable), scalar-broadcast paths (step 0)
 *                and the general strided path
 *   ufunc.c      creates real numpy.ufunc objects that own their loops
 *   testhooks.c  _core._ufunc_from_ir & co.: loops from hand-written IR (tests)
 *   vectorize.c  _core.vectorize(): compile each signature, build the ufunc
 */
#ifndef NV_VECTORIZE_H
#define NV_VECTORIZE_H

#include "common.h"
#include "compiler/compiler.h"
#include "targets/target.h"

/* ---- loops.c ---- */

/*
 * Emits into mod the NumPy inner loop
 *     void name(char **args, npy_intp *dims, npy_intp *steps, void *data)
 * which calls kernel (value types of sig, returning sig->ret) per element.
 * The fast paths are taken only when every step, the output's included,
 * allows them.  Returns the function, or NULL with an exception.
 */
LLVMValueRef vz_emit_loop(LLVMModuleRef mod, LLVMValueRef kernel,
                          const TsSignature *sig, const char *name);

/* ---- ufunc.c ---- */

/*
 * Creates a numpy.ufunc with ntypes loops.  funcs, data, types (NumPy
 * type numbers, ntypes * (nin + nout) of them, as chars), name and doc are
 * copied into one block owned by the ufunc (its `ptr`); `keep` (borrowed:
 * the ufunc takes its own reference; may be NULL) is stored in the ufunc's
 * __dict__ as "_numbavec_code" so that what the loops need lives as long as
 * the ufunc.  identity: None -> PyUFunc_None, "reorderable", the ints 0, 1,
 * -1, or any other value (PyUFunc_IdentityValue); another str: ValueError.
 * Returns a new reference or NULL.
 */
PyObject *vz_make_ufunc(const char *name, const char *doc, int nin, int nout,
                        int ntypes, PyUFuncGenericFunction *funcs, void **data,
                        const char *types, PyObject *identity, PyObject *keep);

/* ---- testhooks.c ---- */

/* Adds _ufunc_from_ir, _code_llvm, _code_asm and _jit_info (tests); 0/-1. */
int vz_init_testhooks(PyObject *module);

/* A ufunc with a core signature (gufunc; NULL: a plain ufunc); otherwise
 * as vz_make_ufunc.  nout may be 0.  Returns a new reference or NULL. */
PyObject *vz_make_gufunc(const char *name, const char *doc, int nin, int nout,
                         int ntypes, PyUFuncGenericFunction *funcs, void **data,
                         const char *types, PyObject *identity, PyObject *keep,
                         const char *signature);

/* ---- vectorize.c ---- */

int vz_init_module(PyObject *module);

/* The compiled code of one signature (an entry of a Library). */
typedef struct VzCompiled {
    TsSignature sig;        /* with the return type resolved */
    CcCode *code;
    void *target_data;      /* freed with the Library's target->free_data */
    PyUFuncGenericFunction fn;
    PyObject *var_types;    /* {name: type name} of the kernel's variables */
} VzCompiled;

/* What a ufunc's loops need, kept in its __dict__ as "_numbavec_code";
 * also answers inspect_llvm/inspect_asm/variable_types.  gufunc.c shares it. */
typedef struct VzLibrary {
    PyObject_HEAD
    const TgTarget *target;
    Py_ssize_t n;           /* entries made so far: a failure frees them */
    VzCompiled *items;      /* PyMem array */
} VzLibrary;

/* Where a kernel's source comes from (the decorator's `source` tuple). */
typedef struct VzSource {
    PyObject *pyfunc, *funcdef;     /* borrowed */
    const char *name, *filename;
    PyObject *lines;                /* borrowed */
    int first_line, line_offset;
    int fastmath;
} VzSource;

VzLibrary *vz_library_new(const TgTarget *target, Py_ssize_t n);   /* new ref, room for n */
int vz_parse_source(PyObject *source, VzSource *src);   /* (filename, first, lines, offset) */
PyObject *vz_var_types(CcFunction *fn);                 /* new ref: {variable: type} */
double vz_estimate_cost(LLVMValueRef kernel);           /* rough ns per kernel call */

#endif /* NV_VECTORIZE_H */
