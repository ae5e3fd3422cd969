/*
 * ufunc.c - real numpy.ufunc objects around JIT-compiled loops.
 *
 * Last step of every ufunc factory (vectorize.c, gufunc.c, dufunc.c, the
 * cuda resolver and the test hooks).  NumPy does not copy the arrays a
 * legacy ufunc is created from (functions, data, types, name, doc), so they
 * are copied into one PyArray_malloc block stored in the ufunc's `ptr`
 * field, which ufunc_dealloc releases with PyArray_free (numpy/_core/src/
 * umath/ufunc_object.c).
 *
 * What the loops run (the JIT'd code, a lazy ufunc's state) is the ufunc's
 * *owner*, kept in its `obj` field: NumPy's dealloc releases it and its
 * traverse visits it, and no attribute reaches it, so nothing done from
 * Python can drop or replace it while a loop may still run (a ufunc's
 * __dict__ is writable by anyone).  _core._code_of(ufunc) gives the tests
 * and the decorators the Library behind it.
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

/* The block's layout: funcs, data, types, name, doc (pointers first, so
 * that they are aligned). */
typedef struct Block {
    PyUFuncGenericFunction *funcs;
    void **data;
    char *types, *name, *doc;
} Block;

/* One PyArray_malloc block with copies of spec's tables and strings. */
static void *
copy_tables(const VzUfuncSpec *spec, Block *b)
{
    int nargs = spec->nin + spec->nout;
    const char *doc = spec->doc != NULL ? spec->doc : "";
    size_t nfuncs = (size_t)spec->ntypes * sizeof(PyUFuncGenericFunction);
    size_t ndata = (size_t)spec->ntypes * sizeof(void *);
    size_t ntypechars = (size_t)spec->ntypes * (size_t)nargs;
    size_t name_len = strlen(spec->name) + 1, doc_len = strlen(doc) + 1;
    char *block = PyArray_malloc(nfuncs + ndata + ntypechars + name_len + doc_len + 1);
    if (block == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    b->funcs = (PyUFuncGenericFunction *)block;
    b->data = (void **)(block + nfuncs);
    b->types = block + nfuncs + ndata;
    b->name = b->types + ntypechars;
    b->doc = b->name + name_len;
    if (spec->ntypes > 0) {
        memcpy(b->funcs, spec->funcs, nfuncs);
        memcpy(b->data, spec->data, ndata);
        memcpy(b->types, spec->types, ntypechars);
    }
    memcpy(b->name, spec->name, name_len);
    memcpy(b->doc, doc, doc_len);
    return block;
}

/*
 * The ufunc keeps `owner` in its `obj` field.  NumPy creates ufuncs
 * untracked by the garbage collector (only frompyfunc, which also sets
 * `obj`, tracks them); tracked, a cycle through the owner (a kernel whose
 * globals hold its own ufunc) is collected like any other.
 */
static void
adopt_owner(PyObject *ufunc, PyObject *owner)
{
    if (owner == NULL) {
        return;
    }
    ((PyUFuncObject *)ufunc)->obj = Py_NewRef(owner);
    if (!PyObject_GC_IsTracked(ufunc)) {
        PyObject_GC_Track(ufunc);
    }
}

PyObject *
vz_make_ufunc(const VzUfuncSpec *spec)
{
    PyObject *value = NULL;
    Block b;
    int code;
    if (identity_code(spec->identity, &code, &value) < 0) {
        return NULL;
    }
    void *block = copy_tables(spec, &b);
    if (block == NULL) {
        return NULL;
    }
    /* Tables NumPy must not wrap are handed over empty (see vectorize.h). */
    int wrapped = spec->methods ? 0 : spec->ntypes;
    PyObject *ufunc = PyUFunc_FromFuncAndDataAndSignatureAndIdentity(
        b.funcs, b.data, b.types, wrapped, spec->nin, spec->nout, code, b.name, b.doc, 0,
        spec->signature, value);
    if (ufunc == NULL) {
        PyArray_free(block);
        return NULL;
    }
    /* From here the ufunc owns the block: its dealloc frees `ptr`. */
    ((PyUFuncObject *)ufunc)->ptr = block;
    adopt_owner(ufunc, spec->owner);
    return ufunc;
}

void
vz_publish_types(PyObject *ufunc, int ntypes)
{
    ((PyUFuncObject *)ufunc)->ntypes = ntypes;
}

PyObject *
vz_ufunc_owner(PyObject *ufunc)
{
    if (!PyObject_TypeCheck(ufunc, &PyUFunc_Type)) {
        return NULL;
    }
    return ((PyUFuncObject *)ufunc)->obj;
}

/* ---- the fields we use, checked once at import ---- */

static void
probe_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
}

/*
 * numbavec reads and writes fields of NumPy's PyUFuncObject (the public
 * struct: types, ntypes, functions, data, op_flags, obj, ptr, identity),
 * at offsets fixed when it was built.  A NumPy whose struct moved them
 * would be written to blindly, so a ufunc made here is compared field by
 * field with what NumPy itself reports; a mismatch fails the import.
 */
int
vz_check_ufunc_layout(void)
{
    static PyUFuncGenericFunction funcs[2] = {probe_loop, probe_loop};
    static void *data[2] = {(void *)funcs, (void *)data};
    static const char types[6] = {NPY_DOUBLE, NPY_DOUBLE, NPY_DOUBLE,
                                  NPY_FLOAT,  NPY_FLOAT,  NPY_FLOAT};
    PyObject *u = PyUFunc_FromFuncAndDataAndSignature(funcs, data, (char *)types, 2, 2, 1,
                                                      PyUFunc_Zero, "numbavec_probe", "", 0, NULL);
    if (u == NULL) {
        return -1;
    }
    PyUFuncObject *uf = (PyUFuncObject *)u;
    PyObject *ntypes = PyObject_GetAttrString(u, "ntypes");
    PyObject *nargs = PyObject_GetAttrString(u, "nargs");
    long nt = ntypes != NULL ? PyLong_AsLong(ntypes) : -1;
    long na = nargs != NULL ? PyLong_AsLong(nargs) : -1;
    int ok = nt == 2 && na == 3 && uf->nin == 2 && uf->nout == 1 && uf->nargs == 3
             && uf->ntypes == 2 && uf->identity == PyUFunc_Zero && uf->functions == funcs
             && uf->data == data && uf->types == types && uf->obj == NULL && uf->ptr == NULL
             && uf->op_flags != NULL && uf->op_flags[0] == 0 && uf->name != NULL
             && strcmp(uf->name, "numbavec_probe") == 0;
    Py_XDECREF(ntypes);
    Py_XDECREF(nargs);
    Py_DECREF(u);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ImportError,
                        "numbavec: this NumPy's ufunc object is laid out differently from the "
                        "NumPy numbavec was built against (its public PyUFuncObject fields "
                        "moved); rebuild numbavec for this NumPy");
        return -1;
    }
    return 0;
}
