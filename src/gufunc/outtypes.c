/*
 * outtypes.c - a dynamic gufunc's output arrays type its outputs, as in
 * Numba: `gu(a, out)` with an int32 out compiles a loop that stores int32.
 *
 * The loops of a dynamic gufunc are compiled by the lazy backend's promoter
 * (vectorize/dufunc.c), inside NumPy's dispatch.  NumPy (2.2 to 2.5) clears
 * the outputs' DTypes before it calls a promoter unless signature= or
 * dtype= fixed them, and casts an out= descriptor to the chosen loop's
 * DType before resolve_descriptors: no hook of the dispatch sees out='s
 * dtype.  So the call is met before the dispatch: the ufunc's own
 * vectorcall (a field of NumPy's public PyUFuncObject) is replaced by
 * typed_call, which, when the caller gives output arrays and neither dtype=
 * nor signature=, adds signature=(None, ..., out's DType, ...) and hands
 * the call on to NumPy's.  NumPy then passes those DTypes to the promoter
 * and keys its dispatch cache by them, so a call without out= keeps the
 * loop it had.  Calls without outputs pay one scan of the keyword names.
 */
#include "gufunc/gufunc.h"

#include "vectorize/vectorize.h"

#include <string.h>

typedef PyObject *(*VectorcallFn)(PyObject *, PyObject *const *, size_t, PyObject *);

/* CPython's PY_VECTORCALL_ARGUMENTS_OFFSET (stable ABI; in the limited API
 * from 3.12 only). */
#define ARGS_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))
/* Operands and keywords one call may have here (NumPy's own limit on
 * operands is 64; keywords are at most its ten). */
#define MAX_ITEMS 80

/* NumPy's ufunc vectorcall, the same for every ufunc: set once, read only. */
static VectorcallFn numpy_call;

/* Whether the lazy backend compiles for this descriptor's DType: bool,
 * integers, float32/64, complex64/128. */
static int
compilable(PyArray_Descr *d)
{
    int t = d->type_num;
    return t == NPY_BOOL || (t >= NPY_BYTE && t <= NPY_ULONGLONG) || t == NPY_FLOAT
           || t == NPY_DOUBLE || t == NPY_CFLOAT || t == NPY_CDOUBLE;
}

/* An array's DType where it is one the loop compiles for (borrowed: NumPy
 * keeps its DTypes), else NULL. */
static PyArray_DTypeMeta *
array_dtype(PyObject *o)
{
    PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)o);
    return compilable(d) ? (PyArray_DTypeMeta *)Py_TYPE(d) : NULL;
}

/* The keywords that decide the outputs' types (borrowed, NULL if absent). */
typedef struct Keywords {
    PyObject *out, *dtype;
    int signature; /* signature= given: the caller's types stand */
} Keywords;

static Keywords
keywords_of(PyObject *const *kwvalues, PyObject *kwnames)
{
    Keywords kw = {NULL, NULL, 0};
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GetItem(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(name, "out") == 0) {
            kw.out = kwvalues[i];
        } else if (PyUnicode_CompareWithASCIIString(name, "dtype") == 0) {
            kw.dtype = kwvalues[i] == Py_None ? NULL : kwvalues[i];
        } else if (PyUnicode_CompareWithASCIIString(name, "signature") == 0) {
            kw.signature = 1;
        }
    }
    return kw;
}

/* Output k as the call gives it (borrowed, NULL if not): positional, or
 * out= (an array, or a tuple of arrays and None). */
static PyObject *
output_given(int nin, int nout, int k, PyObject *const *args, Py_ssize_t nargs, PyObject *out)
{
    if (out == NULL) {
        return nin + k < nargs ? args[nin + k] : NULL;
    }
    if (PyTuple_Check(out)) {
        return k < PyTuple_Size(out) ? PyTuple_GetItem(out, k) : NULL;
    }
    return nout == 1 ? out : NULL;
}

/*
 * The DType each output is given (borrowed; NULL where none is): dtype=
 * for all of them, else each output array's own.  Returns how many it
 * found; 0 leaves the call to NumPy as it is, including every call NumPy
 * refuses (both forms of out, too many arguments, an unknown dtype=).
 */
static int
output_dtypes(int nin, int nout, PyObject *const *args, Py_ssize_t nargs, const Keywords *kw,
              PyArray_DTypeMeta **dtypes)
{
    PyArray_Descr *given = NULL;
    int n = 0;
    if (kw->signature || nout == 0 || nargs > nin + nout || (kw->out != NULL && nargs > nin)) {
        return 0;
    }
    if (kw->dtype != NULL && !PyArray_DescrConverter2(kw->dtype, &given)) {
        PyErr_Clear(); /* NumPy says what is wrong with it */
        return 0;
    }
    for (int k = 0; k < nout; k++) {
        PyObject *o = output_given(nin, nout, k, args, nargs, kw->out);
        dtypes[k] = given != NULL && compilable(given) ? (PyArray_DTypeMeta *)Py_TYPE(given)
                    : given == NULL && o != NULL && PyArray_Check(o) ? array_dtype(o)
                                                                     : NULL;
        n += dtypes[k] != NULL;
    }
    Py_XDECREF(given);
    return n;
}

/* What input_dtypes finds. */
enum { INPUTS_CONCRETE, INPUTS_WEAK, INPUTS_OTHER };

/*
 * Each input's DType as NumPy's dispatch will see it (borrowed), where it
 * is concrete: an array's, a NumPy scalar's, a bool's.  INPUTS_WEAK if a
 * Python int, float or complex is among the rest (a weak DType, which the
 * promoter always changes, so NumPy finds the loop it compiles);
 * INPUTS_OTHER if anything else is (NumPy's to convert).  -1 on error.
 */
static int
input_dtypes(int nin, PyObject *const *args, Py_ssize_t nargs, PyArray_DTypeMeta **dtypes)
{
    int found = INPUTS_CONCRETE;
    for (int k = 0; k < nin && k < nargs; k++) {
        PyObject *o = args[k];
        if (PyArray_Check(o)) {
            dtypes[k] = (PyArray_DTypeMeta *)Py_TYPE(PyArray_DESCR((PyArrayObject *)o));
        } else if (PyArray_IsScalar(o, Generic) || PyBool_Check(o)) {
            PyArray_Descr *d = PyArray_DescrFromScalar(o);
            if (d == NULL) {
                return -1;
            }
            dtypes[k] = (PyArray_DTypeMeta *)Py_TYPE(d);
            Py_DECREF(d);
        } else if (PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyComplex_CheckExact(o)) {
            found = INPUTS_WEAK;
        } else {
            return INPUTS_OTHER;
        }
    }
    return nargs < nin ? INPUTS_OTHER : found;
}

/* signature=(None, ..., the outputs' DTypes): new reference or NULL. */
static PyObject *
output_signature(int nin, int nout, PyArray_DTypeMeta *const *dtypes)
{
    PyObject *sig = PyTuple_New(nin + nout);
    if (sig == NULL) {
        return NULL;
    }
    for (int k = 0; k < nin + nout; k++) {
        PyObject *item =
            k >= nin && dtypes[k - nin] != NULL ? (PyObject *)dtypes[k - nin] : Py_None;
        PyTuple_SetItem(sig, k, Py_NewRef(item));
    }
    return sig;
}

/* NumPy's call with signature= added after the caller's keywords. */
static PyObject *
call_with_signature(PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                    PyObject *sig)
{
    PyObject *items[MAX_ITEMS], *names = NULL, *name = NULL, *result = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    if (nargs + nkw + 1 > MAX_ITEMS) {
        return numpy_call(ufunc, args, (size_t)nargs, kwnames); /* NumPy refuses it */
    }
    if ((names = PyTuple_New(nkw + 1)) == NULL
        || (name = PyUnicode_FromString("signature")) == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyTuple_SetItem(names, i, Py_NewRef(PyTuple_GetItem(kwnames, i)));
    }
    PyTuple_SetItem(names, nkw, name);
    memcpy(items, args, (size_t)(nargs + nkw) * sizeof(PyObject *));
    items[nargs + nkw] = sig;
    result = numpy_call(ufunc, items, (size_t)nargs, names);
error:
    if (names == NULL) {
        Py_XDECREF(name);
    }
    Py_XDECREF(names);
    return result;
}

/*
 * Compiles what the call needs first where NumPy would find only DTypes it
 * has already (vz_lazy_prepare).  1 if the outputs' types may go to NumPy's
 * dispatch, 0 if not (an input NumPy converts, whose DType is not known
 * here: NumPy's own rules apply), -1 on error.
 */
static int
prepare(PyObject *ufunc, int nin, int nout, PyObject *const *args, Py_ssize_t nargs,
        PyArray_DTypeMeta *const *outs)
{
    PyArray_DTypeMeta *all[MAX_ITEMS];
    int found = input_dtypes(nin, args, nargs, all);
    if (found < 0 || found == INPUTS_OTHER) {
        return found < 0 ? -1 : 0;
    }
    memcpy(all + nin, outs, (size_t)nout * sizeof(PyArray_DTypeMeta *));
    if (found == INPUTS_CONCRETE && vz_lazy_prepare(ufunc, all) < 0) {
        return -1;
    }
    return 1;
}

/* The dynamic gufunc's vectorcall: NumPy's, with the outputs' types given
 * to its dispatch. */
static PyObject *
typed_call(PyObject *ufunc, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    PyArray_DTypeMeta *outs[MAX_ITEMS];
    Py_ssize_t nargs = (Py_ssize_t)(nargsf & ~ARGS_OFFSET);
    Keywords kw = keywords_of(args + nargs, kwnames);
    if (uf->nargs > MAX_ITEMS || output_dtypes(uf->nin, uf->nout, args, nargs, &kw, outs) == 0) {
        return numpy_call(ufunc, args, nargsf, kwnames);
    }
    int typed = prepare(ufunc, uf->nin, uf->nout, args, nargs, outs);
    if (typed < 0) {
        return NULL;
    }
    if (typed == 0 || kw.dtype != NULL) {
        return numpy_call(ufunc, args, nargsf, kwnames);
    }
    PyObject *sig = output_signature(uf->nin, uf->nout, outs);
    if (sig == NULL) {
        return NULL;
    }
    PyObject *result = call_with_signature(ufunc, args, nargs, kwnames, sig);
    Py_DECREF(sig);
    return result;
}

void
gu_type_outputs_by_out(PyObject *ufunc)
{
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    VectorcallFn own = (VectorcallFn)uf->vectorcall;
    if (numpy_call == NULL) {
        numpy_call = own;
    }
    if (own == numpy_call && own != NULL) {
        uf->vectorcall = (void *)typed_call;
    }
}
