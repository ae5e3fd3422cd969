/*
 * ufunc.c - real numpy.ufunc objects around JIT-compiled loops.
 *
 * Last step of the ufunc factory: vectorize.c (and the test hooks) pass the
 * loops of every signature here.  NumPy does not copy the arrays a legacy
 * ufunc is created from (functions, data, types, name, doc), so they are
 * copied into one PyArray_malloc block stored in the ufunc's `ptr` field,
 * which ufunc_dealloc releases with PyArray_free (numpy/_core/src/umath/
 * ufunc_object.c).  What the loops themselves need (the JIT'd code) is
 * kept alive through the ufunc's __dict__.
 */
#include "vectorize/vectorize.h"

#include <string.h>

/*
 * NumPy frees `ptr` with PyArray_free, i.e. PyMem_RawFree, so the block must
 * come from PyMem_RawMalloc (PyArray_malloc).  Both functions exist in every
 * CPython >= 3.4 but joined the limited API only in 3.13.
 */
#if defined(Py_LIMITED_API) && Py_LIMITED_API + 0 < 0x030D0000
PyAPI_FUNC(void *) PyMem_RawMalloc(size_t size);
PyAPI_FUNC(void) PyMem_RawFree(void *ptr);
#endif

/* Sets *code for PyUFunc_FromFuncAndData...AndIdentity and, for
 * PyUFunc_IdentityValue, *value (borrowed).  0, or -1 with ValueError.
 * (NumPy's codes are small negative and positive ints: no sentinel.) */
static int
identity_code(PyObject *identity, int *code, PyObject **value)
{
    *value = NULL;
    *code = PyUFunc_None;
    if (identity == NULL || identity == Py_None) {
        return 0;
    }
    if (PyUnicode_Check(identity)) {
        const char *s = PyUnicode_AsUTF8AndSize(identity, NULL);
        if (s == NULL) {
            return -1;
        }
        if (strcmp(s, "reorderable") == 0) {
            *code = PyUFunc_ReorderableNone;
            return 0;
        }
        PyErr_Format(PyExc_ValueError, "identity must be None, 'reorderable' or a number, not '%s'",
                     s);
        return -1;
    }
    if (PyLong_CheckExact(identity)) {
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(identity, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (!overflow && v >= -1 && v <= 1) {
            *code = v == 0 ? PyUFunc_Zero : v == 1 ? PyUFunc_One : PyUFunc_MinusOne;
            return 0;
        }
    }
    *code = PyUFunc_IdentityValue;
    *value = identity;
    return 0;
}

/*
 * One block: funcs[ntypes], data[ntypes], types[ntypes * nargs], name, doc.
 * The pointer arrays come first so that they are aligned.
 */
static void *
copy_tables(const char *name, const char *doc, int nargs, int ntypes, PyUFuncGenericFunction *funcs,
            void **data, const char *types, PyUFuncGenericFunction **funcs_out, void ***data_out,
            char **types_out, char **name_out, char **doc_out)
{
    size_t nfuncs = (size_t)ntypes * sizeof(PyUFuncGenericFunction);
    size_t ndata = (size_t)ntypes * sizeof(void *);
    size_t ntypechars = (size_t)ntypes * (size_t)nargs;
    size_t name_len = strlen(name) + 1, doc_len = strlen(doc) + 1;
    char *block = PyArray_malloc(nfuncs + ndata + ntypechars + name_len + doc_len);
    if (block == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *funcs_out = memcpy(block, funcs, nfuncs);
    *data_out = memcpy(block + nfuncs, data, ndata);
    *types_out = memcpy(block + nfuncs + ndata, types, ntypechars);
    *name_out = memcpy(*types_out + ntypechars, name, name_len);
    *doc_out = memcpy(*name_out + name_len, doc, doc_len);
    return block;
}

PyObject *
vz_make_ufunc(const char *name, const char *doc, int nin, int nout, int ntypes,
              PyUFuncGenericFunction *funcs, void **data, const char *types, PyObject *identity,
              PyObject *keep)
{
    return vz_make_gufunc(name, doc, nin, nout, ntypes, funcs, data, types, identity, keep, NULL);
}

PyObject *
vz_make_gufunc(const char *name, const char *doc, int nin, int nout, int ntypes,
               PyUFuncGenericFunction *funcs, void **data, const char *types, PyObject *identity,
               PyObject *keep, const char *signature)
{
    PyObject *ufunc = NULL;
    PyObject *value = NULL;
    PyUFuncGenericFunction *f;
    void **d;
    char *t, *n, *ds;
    int code;
    if (identity_code(identity, &code, &value) < 0) {
        return NULL;
    }
    void *block = copy_tables(name, doc != NULL ? doc : "", nin + nout, ntypes, funcs, data, types,
                              &f, &d, &t, &n, &ds);
    if (block == NULL) {
        return NULL;
    }
    ufunc = PyUFunc_FromFuncAndDataAndSignatureAndIdentity(f, d, t, ntypes, nin, nout, code, n, ds,
                                                           0, signature, value);
    if (ufunc == NULL) {
        PyArray_free(block);
        return NULL;
    }
    /* From here the ufunc owns the block: its dealloc frees `ptr`. */
    ((PyUFuncObject *)ufunc)->ptr = block;
    if (keep != NULL && PyObject_SetAttrString(ufunc, "_numbavec_code", keep) < 0) {
        Py_DECREF(ufunc);
        return NULL;
    }
    return ufunc;
}
