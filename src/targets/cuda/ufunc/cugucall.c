/*
 * cugucall.c - a cuda gufunc's call: what NumPy's gufunc machinery does on
 * the host, for the GPU; the gufunc's kind (gufunc_kind) of the call
 * skeleton in call.c, whose device side is cugulaunch.c.
 *
 *   - inputs (and outputs given positionally or as out=) are sorted into
 *     device arrays (ours, CAI, DLPack), host arrays and scalars
 *     (cu_classify); axes=/axis= replace them by views with their core
 *     dimensions last (move_core);
 *   - the first signature every input reaches is chosen: a device array
 *     must have its exact dtype, a host array must cast safely, a Python
 *     scalar by kind (NEP 50); a dynamic gufunc compiles the operands'
 *     own kinds when no loop has them;
 *   - core dimensions are bound from the operands' trailing dimensions
 *     (checked against each other and against frozen sizes), the loop
 *     dimensions of every operand are broadcast without copies (stride 0);
 *   - host operands are copied to the device in the signature's dtype,
 *     outputs are allocated there (or taken from out=), the descriptor
 *     (kernels.c) is copied next to them and the entry is launched on
 *     `stream`;
 *   - with bounds checks on, the status word comes back: IndexError;
 *   - a call with a device operand returns device arrays; a host call
 *     returns host arrays, and writes the inputs the kernel wrote back; a
 *     new output under axes= comes back as the view that puts its core
 *     dimensions where axes= says;
 *   - keepdims=True (layouts whose inputs share one number of core
 *     dimensions and whose outputs have none): each output is taken, and
 *     given back, with that many dimensions of size 1 where axes=/axis=
 *     put them (drop_kept: the kernel sees the output without them);
 *   - '?' dimensions (flex_dims): one missing from an input is missing from
 *     every operand; the kernel sees it of size 1 (views with it put back)
 *     and the outputs come back without it;
 *   - device operands of another dtype reach a loop as host arrays do
 *     (safe casting in, same-kind out); the kernel works on a copy in the
 *     loop's dtype, cast on the device (place), and outputs and written
 *     inputs are cast back after it (cast_back).
 *
 *   - a large host call goes through the cuda ufunc's staged pipeline
 *     (staging.c), chunked by outer iteration, when every input is either
 *     of the loop shape or the same for every iteration (cu_gu_stage_plan).
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ---- a call ---- */

static CuGuCall *
gu(CuCall *call)
{
    return (CuGuCall *)call; /* the first member */
}

/* What the gufunc's part of a call holds (call.c clears the operands). */
static void
gufunc_clear(CuCall *call)
{
    CuGuCall *c = gu(call);
    for (int k = 0; k < c->call.nops; k++) {
        Py_CLEAR(c->dev[k]);
        Py_CLEAR(c->host[k]);
        Py_CLEAR(c->given[k]);
        Py_CLEAR(c->res[k]);
    }
}

/* The core dimensions operand k has for the caller: its layout's, or under
 * keepdims an output's kept ones (as many as each input has). */
static int
caller_core(const CuGuCall *c, int k)
{
    const GuLayout *L = &c->f->layout;
    return c->keepdims && k >= L->nin && L->nin > 0 ? L->ndims[0] : L->ndims[k];
}

/* Whether the layout has a '?' dimension. */
static int
has_flexible(const GuLayout *L)
{
    for (int ix = 0; ix < L->ndimnames; ix++) {
        if (L->optional[ix]) {
            return 1;
        }
    }
    return 0;
}

/* keepdims=True: NumPy's rule, and its message.  0/-1. */
static int
check_keepdims(CuGuCall *c)
{
    const GuLayout *L = &c->f->layout;
    if ((c->keepdims || c->axes != NULL || c->axis != NULL) && has_flexible(L)) {
        PyErr_Format(PyExc_NotImplementedError,
                     "%s(): axes=, axis= and keepdims= with flexible ('?') core dimensions are "
                     "not supported on cuda yet",
                     cu_gu_name(c));
        return -1;
    }
    for (int k = 0; c->keepdims && k < L->nargs; k++) {
        int want = k < L->nin ? L->ndims[0] : 0;
        if (L->ndims[k] != want) {
            PyErr_Format(PyExc_TypeError,
                         "%s does not support keepdims: its signature %s requires %s %d to have "
                         "%d core dimensions, but keepdims can only be used when all inputs "
                         "have the same number of core dimensions and all outputs have no core "
                         "dimensions.",
                         cu_gu_name(c), L->text, k < L->nin ? "input" : "output",
                         k < L->nin ? k : k - L->nin, L->ndims[k]);
            return -1;
        }
    }
    return 0;
}

/* One operand's entry of axes= (a tuple of ints, or an int for one core
 * dimension) into c->core_at[k].  0/-1. */
static int
axes_entry(CuGuCall *c, int k, PyObject *entry)
{
    int nc = caller_core(c, k);
    PyObject *seq = PyLong_Check(entry) ? PyTuple_Pack(1, entry) : PySequence_Tuple(entry);
    if (seq == NULL || PyTuple_Size(seq) != nc) {
        Py_XDECREF(seq);
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s(): axes item %d should be a tuple of %d axis indices (its core "
                     "dimensions in %s)",
                     cu_gu_name(c), k, nc, c->f->layout.text);
        return -1;
    }
    for (int j = 0; j < nc; j++) {
        long a = PyLong_AsLong(PyTuple_GetItem(seq, j));
        if (a == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        c->core_at[k][j] = (int)(a < INT_MIN ? INT_MIN : a > INT_MAX ? INT_MAX : a);
    }
    Py_DECREF(seq);
    c->moved[k] = nc > 0;
    return 0;
}

/* axes= (one entry per operand; outputs without core dimensions may be
 * left out) or axis= (the one shared core dimension) into core_at.  The
 * axes are normalised against each operand's rank in move_core. */
static int
parse_axes(CuGuCall *c)
{
    const GuLayout *L = &c->f->layout;
    if (c->axes != NULL && c->axis != NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot specify both 'axis' and 'axes'");
        return -1;
    }
    if (c->axis != NULL) {
        for (int k = 0; k < L->nargs; k++) {
            if (L->ndims[k] > 1 || (L->ndims[k] == 1 && L->dim[k][0] != L->dim[0][0])) {
                PyErr_Format(PyExc_TypeError,
                             "%s: axis can only be used with a single shared core dimension, "
                             "not with the %s signature",
                             cu_gu_name(c), L->text);
                return -1;
            }
            if (caller_core(c, k) == 1 && axes_entry(c, k, c->axis) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (c->axes == NULL) {
        return 0;
    }
    if (!PyList_Check(c->axes)) {
        PyErr_SetString(PyExc_TypeError, "axes should be a list");
        return -1;
    }
    Py_ssize_t n = PyList_Size(c->axes);
    if (n > L->nargs) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): axes should be a list with an entry for each of "
                     "the %d operands",
                     cu_gu_name(c), L->nargs);
        return -1;
    }
    for (int k = 0; k < L->nargs; k++) {
        if (k >= n) {
            if (L->ndims[k] > 0) { /* kept dimensions may be left out: they go last */
                PyErr_Format(PyExc_ValueError,
                             "%s(): axes has no entry for operand %d, which has core "
                             "dimensions",
                             cu_gu_name(c), k);
                return -1;
            }
            continue;
        }
        if (axes_entry(c, k, PyList_GetItem(c->axes, k)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The permutation of an nd-dimensional operand k that puts its core
 * dimensions (core_at[k]) last, in core order; checks the axes. */
static int
core_last(CuGuCall *c, int k, int nd, int *perm)
{
    int nc = caller_core(c, k), used[NPY_MAXDIMS] = {0}, at = 0;
    if (nd < nc) {
        return 0; /* bind_dims reports it */
    }
    for (int j = 0; j < nc; j++) {
        int a = c->core_at[k][j];
        a = a < 0 ? a + nd : a;
        if (a < 0 || a >= nd || used[a]) {
            PyErr_Format(PyExc_ValueError,
                         "%s(): axes item %d: axis %d is out of bounds for "
                         "an operand of %d dimensions, or repeated",
                         cu_gu_name(c), k, c->core_at[k][j], nd);
            return -1;
        }
        used[a] = 1;
    }
    for (int d = 0; d < nd; d++) {
        if (!used[d]) {
            perm[at++] = d;
        }
    }
    for (int j = 0; j < nc; j++) {
        int a = c->core_at[k][j];
        perm[at++] = a < 0 ? a + nd : a;
    }
    return 0;
}

/* A view of device array obj with its dimensions permuted (perm[d]: the
 * dimension of obj that becomes d); keeps obj alive.  New reference. */
static PyObject *
device_permuted(PyObject *obj, int nd, const int *perm)
{
    DaInfo info;
    if (da_info(obj, &info) < 0) {
        return NULL;
    }
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = info.shape[perm[d]];
        strides[d] = info.strides[perm[d]];
    }
    Py_INCREF(info.dtype);
    return da_wrap(info.dtype, nd, shape, strides, info.ptr, obj, info.readonly);
}

/* axes=: an operand the caller gave (input or out=) is replaced by a view
 * with its core dimensions last, which is what the kernel walks.  0/-1. */
static int
move_core(CuGuCall *c)
{
    for (int k = 0; k < c->call.nops; k++) {
        CuOperand *op = &c->call.ops[k];
        int perm[NPY_MAXDIMS];
        if (!c->moved[k] || op->obj == NULL || op->nd < caller_core(c, k)) {
            continue;
        }
        if (core_last(c, k, op->nd, perm) < 0) {
            return -1;
        }
        PyObject *v;
        if (op->what == CU_OP_DEVICE) {
            v = device_permuted(op->obj, op->nd, perm);
        } else {
            npy_intp pp[NPY_MAXDIMS];
            for (int d = 0; d < op->nd; d++) {
                pp[d] = perm[d];
            }
            PyArray_Dims p = {pp, op->nd};
            v = PyArray_Transpose((PyArrayObject *)op->obj, &p);
        }
        if (v == NULL) {
            return -1;
        }
        c->given[k] = op->obj; /* what result_of returns for an out= */
        op->obj = v;
        Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
        for (int d = 0; d < op->nd; d++) {
            shape[d] = op->shape[perm[d]];
            strides[d] = op->strides[perm[d]];
        }
        memcpy(op->shape, shape, sizeof(Py_ssize_t) * (size_t)op->nd);
        memcpy(op->strides, strides, sizeof(Py_ssize_t) * (size_t)op->nd);
    }
    return 0;
}

/* A view of obj (host or device array) with its first nd dimensions of
 * shape and strides; keeps obj alive.  New reference. */
static PyObject *
view_of(PyObject *obj, int device, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides)
{
    if (device) {
        DaInfo info;
        if (da_info(obj, &info) < 0) {
            return NULL;
        }
        Py_INCREF(info.dtype);
        return da_wrap(info.dtype, nd, shape, strides, info.ptr, obj, info.readonly);
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    npy_intp sh[NPY_MAXDIMS], st[NPY_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        sh[d] = shape[d];
        st[d] = strides[d];
    }
    PyArray_Descr *descr = PyArray_DESCR(a);
    Py_INCREF(descr);
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, descr, nd, sh, st, PyArray_DATA(a),
                                       PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE, NULL);
    if (v != NULL && PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(obj)) < 0) {
        Py_CLEAR(v);
    }
    return v;
}

/* keepdims=: an out= (its kept dimensions last by now, move_core) is
 * replaced by the view without them, which is what the kernel writes; they
 * must have size 1.  0/-1. */
static int
drop_kept(CuGuCall *c)
{
    const GuLayout *L = &c->f->layout;
    for (int k = L->nin; c->keepdims && k < c->call.nops; k++) {
        CuOperand *op = &c->call.ops[k];
        int nc = caller_core(c, k), ok = op->obj != NULL && op->nd >= nc;
        if (op->obj == NULL || nc == 0) {
            continue;
        }
        for (int j = 0; ok && j < nc; j++) {
            ok = op->shape[op->nd - nc + j] == 1;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError,
                         "%s: output operand %d should have its %d kept dimension%s of size 1 "
                         "(keepdims=True, gufunc signature %s)",
                         cu_gu_name(c), k - L->nin, nc, nc == 1 ? "" : "s", L->text);
            return -1;
        }
        PyObject *v =
            view_of(op->obj, op->what == CU_OP_DEVICE, op->nd - nc, op->shape, op->strides);
        if (v == NULL) {
            return -1;
        }
        if (c->given[k] == NULL) {
            c->given[k] = op->obj; /* what result_of returns */
        } else {
            Py_DECREF(op->obj); /* move_core's view; given[k] holds the out= */
        }
        op->obj = v;
        op->nd -= nc;
    }
    return 0;
}

/* '?' dimensions, as NumPy's: an input with too few dimensions for its core
 * leaves out its first flexible dimensions (as many as it lacks), and a
 * dimension left out by one input is missing from every operand.  A missing
 * dimension has size 1 for the kernel: each operand given (inputs, out=) is
 * replaced by its view with the missing dimensions put back (size 1, stride
 * 0; a Python number becomes a 0-d array of the loop's type first), new
 * outputs are made with them, and result_of gives those back without them.
 * Runs once the loop is chosen.  0/-1. */
static int
flex_dims(CuGuCall *c)
{
    const GuLayout *L = &c->f->layout;
    if (!has_flexible(L)) {
        return 0;
    }
    for (int k = 0; k < L->nin; k++) {
        int want = 0;
        for (int j = 0; j < L->ndims[k]; j++) {
            want += !c->missing[L->dim[k][j]];
        }
        for (int j = 0; j < L->ndims[k] && c->call.ops[k].nd < want; j++) {
            int ix = L->dim[k][j];
            if (L->optional[ix] && !c->missing[ix]) {
                c->missing[ix] = 1;
                want--;
            }
        }
    }
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    for (int k = 0; k < c->call.nops; k++) {
        CuOperand *op = &c->call.ops[k];
        int gone = 0;
        for (int j = 0; j < L->ndims[k]; j++) {
            gone += c->missing[L->dim[k][j]];
        }
        int lnd = op->nd - (L->ndims[k] - gone); /* its loop dimensions */
        if (op->obj == NULL || gone == 0 || lnd < 0) {
            continue; /* a new output; nothing missing; bind_dims reports too few */
        }
        if (op->what == CU_OP_PYSCALAR) {
            PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(sig->args[k].kind));
            PyObject *a = d ? PyArray_FromAny(op->obj, d, 0, 0, 0, NULL) : NULL;
            if (a == NULL) {
                return -1;
            }
            Py_DECREF(op->obj);
            op->obj = a;
            op->what = CU_OP_SCALAR;
        }
        Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
        int nd = lnd, at = lnd;
        if (lnd + L->ndims[k] > NPY_MAXDIMS) {
            PyErr_Format(PyExc_ValueError, "%s(): an operand would have more than %d dimensions",
                         cu_gu_name(c), NPY_MAXDIMS);
            return -1;
        }
        memcpy(shape, op->shape, sizeof(Py_ssize_t) * (size_t)lnd);
        memcpy(strides, op->strides, sizeof(Py_ssize_t) * (size_t)lnd);
        for (int j = 0; j < L->ndims[k]; j++, nd++) {
            int gap = c->missing[L->dim[k][j]];
            shape[nd] = gap ? 1 : op->shape[at];
            strides[nd] = gap ? 0 : op->strides[at];
            at += !gap;
        }
        PyObject *v = view_of(op->obj, op->what == CU_OP_DEVICE, nd, shape, strides);
        if (v == NULL) {
            return -1;
        }
        if (k >= L->nin && c->given[k] == NULL) {
            c->given[k] = op->obj; /* what result_of returns */
        } else {
            Py_DECREF(op->obj);
        }
        op->obj = v;
        op->nd = nd;
        memcpy(op->shape, shape, sizeof(Py_ssize_t) * (size_t)nd);
        memcpy(op->strides, strides, sizeof(Py_ssize_t) * (size_t)nd);
        if (op->what != CU_OP_DEVICE) {
            op->what = CU_OP_HOST;
            op->dtype = PyArray_DESCR((PyArrayObject *)v);
        }
    }
    return 0;
}

/* f(*inputs[, *outputs], out=None, axes=None, axis=None, keepdims=False,
 * stream=None).  0/-1. */
static int
gufunc_parse(CuCall *call, PyObject *args, PyObject *kwargs)
{
    CuGuCall *c = gu(call);
    const GuLayout *L = &c->f->layout;
    Py_ssize_t npos = PyTuple_Size(args);
    if (npos != L->nin && npos != L->nargs) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d input%s%s, %zd given", cu_gu_name(c), L->nin,
                     L->nin == 1 ? "" : "s", L->nout > 0 ? " (and optionally its outputs)" : "",
                     npos);
        return -1;
    }
    PyObject *outs[TS_MAXARGS] = {NULL};
    for (Py_ssize_t k = L->nin; k < npos; k++) {
        outs[k] = PyTuple_GetItem(args, k);
    }
    if (kwargs != NULL) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            if (PyUnicode_CompareWithASCIIString(key, "stream") == 0) {
                c->call.stream = value;
            } else if (PyUnicode_CompareWithASCIIString(key, "axes") == 0) {
                c->axes = value;
            } else if (PyUnicode_CompareWithASCIIString(key, "axis") == 0) {
                c->axis = value;
            } else if (PyUnicode_CompareWithASCIIString(key, "keepdims") == 0) {
                if (!PyBool_Check(value)) {
                    PyErr_SetString(PyExc_TypeError, "'keepdims' must be a boolean");
                    return -1;
                }
                c->keepdims = value == Py_True;
            } else if (PyUnicode_CompareWithASCIIString(key, "out") == 0) {
                if (npos > L->nin) {
                    PyErr_SetString(PyExc_TypeError,
                                    "cannot specify 'out' as both a positional and keyword "
                                    "argument");
                    return -1;
                }
                if (L->nout == 0) {
                    PyErr_Format(PyExc_TypeError, "%s() has no outputs: out= is not taken",
                                 cu_gu_name(c));
                    return -1;
                }
                int is_tuple = PyTuple_Check(value);
                if (is_tuple ? PyTuple_Size(value) != L->nout : L->nout != 1) {
                    PyErr_Format(PyExc_ValueError, "out= takes %s%d array%s for %s()'s %d output%s",
                                 L->nout > 1 ? "a tuple of " : "", L->nout, L->nout == 1 ? "" : "s",
                                 cu_gu_name(c), L->nout, L->nout == 1 ? "" : "s");
                    return -1;
                }
                for (int k = 0; k < L->nout; k++) {
                    PyObject *o = is_tuple ? PyTuple_GetItem(value, k) : value;
                    outs[L->nin + k] = o == Py_None ? NULL : o;
                }
            } else {
                PyErr_Format(PyExc_TypeError,
                             "%s() got an unexpected keyword argument '%U' (a cuda gufunc "
                             "takes out=, axes=, axis=, keepdims= and stream=)",
                             cu_gu_name(c), key);
                return -1;
            }
        }
    }
    for (int k = 0; k < L->nargs; k++) {
        PyObject *obj = k < L->nin ? PyTuple_GetItem(args, k) : outs[k];
        c->given_out[k] = k >= L->nin && obj != NULL;
        if (c->given_out[k] && !PyArray_Check(obj) && !da_is_device_array(obj)
            && !PyObject_HasAttrString(obj, "__cuda_array_interface__")
            && !PyObject_HasAttrString(obj, "__dlpack__")) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): output %d must be a NumPy array or a device array, not %R",
                         cu_gu_name(c), k - L->nin, (PyObject *)Py_TYPE(obj));
            return -1;
        }
        if (obj != NULL && cu_classify(obj, &c->call.ops[k]) < 0) {
            return -1;
        }
        c->call.device |= c->call.ops[k].what == CU_OP_DEVICE;
    }
    return cuda_stream_arg(c->call.stream, &c->call.s) < 0 || check_keepdims(c) < 0
                   || parse_axes(c) < 0
               ? -1
               : 0;
}

/* Whether device arrays of dtype d can be cast on the device (one of our
 * kinds, native byte order: what numbavec.cuda._cast_ufunc takes). */
static int
device_castable(PyArray_Descr *d)
{
    TsKind k;
    return PyArray_ISNBO(d->byteorder) && ts_kind_from_typenum(d->type_num, &k) == 0;
}

/* Whether operand op may be passed to an argument of kind k. */
static int
reaches(const CuOperand *op, TsKind k)
{
    PyArray_Descr *want = PyArray_DescrFromType(ts_kind_typenum(k));
    int ok = 0;
    if (want == NULL) {
        PyErr_Clear();
        return 0;
    }
    switch (op->what) {
    case CU_OP_DEVICE:
        ok = PyArray_EquivTypes(op->dtype, want)
             || (device_castable(op->dtype)
                 && PyArray_CanCastTypeTo(op->dtype, want, NPY_SAFE_CASTING));
        break;
    case CU_OP_HOST:
    case CU_OP_SCALAR:
        ok = PyArray_CanCastTypeTo(op->dtype, want, NPY_SAFE_CASTING);
        break;
    default: /* a Python number: NEP 50's weak scalar, by kind */
        if (PyBool_Check(op->obj)) {
            ok = 1;
        } else if (PyLong_Check(op->obj)) {
            ok = k != TS_BOOL;
        } else if (PyFloat_Check(op->obj)) {
            ok = ts_is_float(k) || ts_is_complex(k);
        } else {
            ok = ts_is_complex(k);
        }
    }
    Py_DECREF(want);
    return ok;
}

/* The kind a dynamic gufunc compiles for operand op (a Python number: its
 * NumPy default, as NumPy 2 gives a lone Python scalar). */
static TsKind
operand_kind(const CuOperand *op)
{
    TsKind k = TS_INFER;
    if (op->dtype != NULL) {
        if (ts_kind_from_typenum(op->dtype->type_num, &k) < 0) {
            k = TS_INFER;
        }
        return k;
    }
    return PyBool_Check(op->obj)      ? TS_BOOL
           : PyLong_Check(op->obj)    ? TS_INT64
           : PyFloat_Check(op->obj)   ? TS_FLOAT64
           : PyComplex_Check(op->obj) ? TS_COMPLEX128
                                      : TS_INFER;
}

enum { BY_CAST, BY_INPUTS, BY_KINDS };

/* Whether an output given takes a loop's result of dtype d: a same-kind
 * cast (a device array: its own dtype, or one the device casts to). */
static int
output_takes(const CuOperand *op, PyArray_Descr *d)
{
    return op->what == CU_OP_DEVICE
               ? PyArray_EquivTypes(d, op->dtype)
                     || (device_castable(op->dtype)
                         && PyArray_CanCastTypeTo(d, op->dtype, NPY_SAME_KIND_CASTING))
               : PyArray_CanCastTypeTo(d, op->dtype, NPY_SAME_KIND_CASTING);
}

/* The first loop the operands reach, -1 (no exception) when none does:
 * BY_INPUTS by the inputs' own kinds exactly (NumPy's dispatch takes a
 * loop of the inputs' dtypes before it promotes: i4 with types ['d->d',
 * 'i->i'] takes 'i->i'), BY_CAST by safe casts of the inputs; neither
 * looks at the outputs given, as NumPy's does not (outputs_take checks
 * them after).  BY_KINDS: every operand given by its own kind (a dynamic
 * gufunc's loops). */
static Py_ssize_t
find_loop(CuGuCall *c, int mode)
{
    CuGuFunc *f = c->f;
    for (Py_ssize_t i = 0; i < f->nloops; i++) {
        const TsSignature *sig = &f->loops[i]->sig;
        int ok = 1;
        for (int k = 0; ok && k < c->call.nops; k++) {
            const CuOperand *op = &c->call.ops[k];
            if (k >= f->layout.nin && (!c->given_out[k] || mode != BY_KINDS)) {
                continue;
            }
            if (mode == BY_KINDS) {
                ok = operand_kind(op) == sig->args[k].kind;
            } else if (mode == BY_INPUTS) {
                ok = op->what != CU_OP_PYSCALAR && operand_kind(op) == sig->args[k].kind;
            } else {
                ok = reaches(op, sig->args[k].kind);
            }
        }
        if (ok) {
            return i;
        }
    }
    return -1;
}

/* Loop i, found by the inputs, must cast into the outputs given (same
 * kind; a device output: its dtype, or one the device casts to): else
 * NumPy's TypeError.  0/-1. */
static int
outputs_take(CuGuCall *c, Py_ssize_t i)
{
    const TsSignature *sig = &c->f->loops[i]->sig;
    for (int k = c->f->layout.nin; k < c->call.nops; k++) {
        if (!c->given_out[k]) {
            continue;
        }
        PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(sig->args[k].kind));
        if (d == NULL) {
            return -1;
        }
        int ok = output_takes(&c->call.ops[k], d);
        if (!ok) {
            /* NumPy's words: the operand's index, none for the only output */
            char at[16] = "";
            if (c->call.nops - c->f->layout.nin > 1) {
                snprintf(at, sizeof(at), " %d", k);
            }
            PyErr_Format(PyExc_TypeError,
                         "Cannot cast ufunc '%s' output%s from %R to %R with casting rule "
                         "'same_kind'",
                         cu_gu_name(c), at, (PyObject *)d, (PyObject *)c->call.ops[k].dtype);
        }
        Py_DECREF(d);
        if (!ok) {
            return -1;
        }
    }
    return 0;
}

/* A dynamic gufunc's new loop for the operands' kinds (an output not
 * given takes what the kernel stores into it): its index, or -1. */
static Py_ssize_t
compile_for_call(CuGuCall *c)
{
    CuGuFunc *f = c->f;
    const GuLayout *L = &f->layout;
    TsSignature sig;
    memset(&sig, 0, sizeof(sig));
    sig.ret.kind = TS_VOID;
    sig.nargs = L->nargs;
    for (int k = 0; k < L->nargs; k++) {
        int given = k < L->nin || c->given_out[k];
        sig.args[k].kind = given ? operand_kind(&c->call.ops[k]) : TS_INFER;
        if (given && sig.args[k].kind == TS_INFER) {
            PyErr_Format(PyExc_TypeError, "%s(): argument %d has no type a kernel can take",
                         cu_gu_name(c), k);
            return -1;
        }
        /* an output () is a 1-element view, as declared in a signature */
        sig.args[k].ndim = L->ndims[k] == 0 && k >= L->nin ? 1 : L->ndims[k];
    }
    CuGuLoop **grown = PyMem_Realloc(f->loops, sizeof(CuGuLoop *) * (size_t)(f->nloops + 1));
    CuGuLoop *l = PyMem_Calloc(1, sizeof(CuGuLoop));
    if (grown != NULL) {
        f->loops = grown;
    }
    if (grown == NULL || l == NULL) {
        PyMem_Free(l);
        PyErr_NoMemory();
        return -1;
    }
    l->sig = sig;
    if (cu_gu_compile_loop(f, l, f->nloops, f->arch) < 0) {
        cu_gu_loop_free(l);
        return -1;
    }
    f->loops[f->nloops] = l;
    return f->nloops++;
}

static int
resolve(CuGuCall *c)
{
    CuGuFunc *f = c->f;
    /* a dynamic gufunc compiles the operands' own kinds; signatures given
     * are reached as NumPy reaches a ufunc's loops */
    Py_ssize_t i = find_loop(c, f->lazy ? BY_KINDS : BY_INPUTS);
    if (i < 0 && !f->lazy) {
        i = find_loop(c, BY_CAST);
    }
    if (i >= 0 && !f->lazy && outputs_take(c, i) < 0) {
        return -1;
    }
    if (i < 0 && f->lazy) {
        i = compile_for_call(c);
    }
    if (i >= 0) {
        c->call.loop = i;
        return 0;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *types = PyList_New(0);
    for (int k = 0; types != NULL && k < f->layout.nin; k++) {
        const CuOperand *op = &c->call.ops[k];
        PyObject *t = op->dtype != NULL
                          ? PyObject_Str((PyObject *)op->dtype)
                          : PyObject_GetAttrString((PyObject *)Py_TYPE(op->obj), "__name__");
        if (t == NULL || PyList_Append(types, t) < 0) {
            Py_CLEAR(types);
        }
        Py_XDECREF(t);
    }
    if (types != NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): no signature takes these inputs (%R)%s; a device array must "
                     "have the signature's dtype exactly, a host array must cast to it safely",
                     cu_gu_name(c), types, c->call.device ? " on the device" : "");
        Py_DECREF(types);
    }
    return -1;
}

/* "Input operand 1", "Output operand 0": as NumPy names them */
static void
operand_name(const CuGuCall *c, int k, char *buf, size_t size)
{
    const GuLayout *L = &c->f->layout;
    snprintf(buf, size, "%s operand %d", k < L->nin ? "Input" : "Output",
             k < L->nin ? k : k - L->nin);
}

/* Binds the core sizes and broadcasts the loop dimensions.  0/-1. */
static int
bind_dims(CuGuCall *c)
{
    const GuLayout *L = &c->f->layout;
    for (int ix = 0; ix < L->ndimnames; ix++) {
        c->core[ix] = c->missing[ix] ? 1 : L->fixed[ix] > 0 ? (Py_ssize_t)L->fixed[ix] : -1;
    }
    c->lnd = 0;
    for (int k = 0; k < c->call.nops; k++) {
        const CuOperand *op = &c->call.ops[k];
        if (op->obj == NULL) {
            continue; /* an output to allocate */
        }
        int nc = L->ndims[k];
        if (op->nd < nc) {
            char what[32];
            operand_name(c, k, what, sizeof(what));
            PyErr_Format(PyExc_ValueError,
                         "%s: %s does not have enough dimensions (has %d, gufunc core with "
                         "signature %s requires %d)",
                         cu_gu_name(c), what, op->nd, L->text, nc);
            return -1;
        }
        for (int j = 0; j < nc; j++) {
            int ix = L->dim[k][j];
            Py_ssize_t size = op->shape[op->nd - nc + j];
            if (c->core[ix] < 0) {
                c->core[ix] = size;
            } else if (c->core[ix] != size) {
                char what[32];
                operand_name(c, k, what, sizeof(what));
                PyErr_Format(PyExc_ValueError,
                             "%s: %s has a mismatch in its core dimension %d, with gufunc "
                             "signature %s (size %zd is different from %zd)",
                             cu_gu_name(c), what, j, L->text, size, c->core[ix]);
                return -1;
            }
        }
        int lnd = op->nd - nc;
        if (k >= L->nin) {
            continue; /* an output's loop dimensions are checked against the result */
        }
        /* broadcast the loop dimensions, right-aligned */
        if (lnd > c->lnd) {
            memmove(c->lshape + (lnd - c->lnd), c->lshape, sizeof(Py_ssize_t) * (size_t)c->lnd);
            for (int d = 0; d < lnd - c->lnd; d++) {
                c->lshape[d] = 1;
            }
            c->lnd = lnd;
        }
        for (int d = 0; d < lnd; d++) {
            Py_ssize_t have = c->lshape[c->lnd - lnd + d], got = op->shape[d];
            if (have == 1) {
                c->lshape[c->lnd - lnd + d] = got;
            } else if (got != 1 && got != have) {
                PyErr_Format(PyExc_ValueError,
                             "%s: operands could not be broadcast together: loop dimension "
                             "of size %zd against %zd (gufunc signature %s)",
                             cu_gu_name(c), got, have, L->text);
                return -1;
            }
        }
    }
    for (int k = L->nin; k < c->call.nops; k++) {
        for (int j = 0; j < L->ndims[k]; j++) {
            if (c->core[L->dim[k][j]] < 0) {
                char what[32];
                operand_name(c, k, what, sizeof(what));
                PyErr_Format(PyExc_ValueError,
                             "%s: %s has core dimension %d unspecified, with gufunc signature "
                             "%s",
                             cu_gu_name(c), what, j, L->text);
                return -1;
            }
        }
        const CuOperand *op = &c->call.ops[k];
        if (op->obj != NULL) {
            int ok = op->nd == c->lnd + L->ndims[k];
            for (int d = 0; ok && d < c->lnd; d++) {
                ok = op->shape[d] == c->lshape[d];
            }
            if (!ok) {
                char what[32];
                operand_name(c, k, what, sizeof(what));
                PyErr_Format(PyExc_ValueError,
                             "%s: %s does not have the shape of the loop dimensions "
                             "followed by its core dimensions (gufunc signature %s)",
                             cu_gu_name(c), what, L->text);
                return -1;
            }
        }
    }
    return 0;
}

/* 1 when a device input read in place (argument k) shares bytes with a
 * device operand the kernel writes (a given output, a written input)
 * other than as the same elements in the same order (out= the input
 * itself: NumPy runs that in place too).  NumPy's gufuncs then work on a
 * copy of the input, so that the writes cannot reach what is still to be
 * read (out= the input reversed, or shifted by a row). */
static int
meets_written(const CuGuCall *c, int k)
{
    const CuOperand *in = &c->call.ops[k];
    uintptr_t ilo, ihi, wlo, whi;
    cu_operand_extent(in, (uintptr_t)in->ptr, &ilo, &ihi);
    for (int j = 0; j < c->call.nops; j++) {
        const CuOperand *w = &c->call.ops[j];
        if (j == k || w->what != CU_OP_DEVICE
            || !(j >= c->f->layout.nin ? c->given_out[j] : c->f->written[j])) {
            continue;
        }
        cu_operand_extent(w, (uintptr_t)w->ptr, &wlo, &whi);
        if (ilo >= whi || wlo >= ihi) {
            continue;
        }
        int same = in->ptr == w->ptr && in->nd == w->nd
                   && PyDataType_ELSIZE(in->dtype) == PyDataType_ELSIZE(w->dtype);
        for (int d = 0; same && d < in->nd; d++) {
            same = in->shape[d] == w->shape[d] && in->strides[d] == w->strides[d];
        }
        if (!same) {
            return 1;
        }
    }
    return 0;
}

/* The device array argument k works on (c->dev[k]): the operand itself,
 * its copy on the device, or a new output.  0/-1. */
static int
place(CuGuCall *c, int k)
{
    const GuLayout *L = &c->f->layout;
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    TsKind kind = sig->args[k].kind;
    CuOperand *op = &c->call.ops[k];
    int copy = op->what == CU_OP_DEVICE && k < L->nin && !c->f->written[k] && meets_written(c, k);
    if (op->what == CU_OP_DEVICE && cu_is_kind(op->dtype, kind) && !copy) {
        c->dev[k] = Py_NewRef(op->obj);
        return 0;
    }
    if (op->what == CU_OP_DEVICE) { /* another dtype, or met by a write: the kernel works on a
                                  * copy in the loop's dtype */
        PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
        c->dev[k] = d ? da_empty(d, op->nd, op->shape, c->call.stream) : NULL;
        if (c->dev[k] == NULL
            || (k < L->nin && cu_device_cast(op->obj, c->dev[k], c->call.stream) < 0)) {
            return -1;
        }
        c->cast_back[k] = k >= L->nin || c->f->written[k];
        return 0;
    }
    if (op->obj != NULL && k < L->nin) { /* a host input: its copy, in the loop's dtype */
        c->dev[k] = cu_to_device(op->obj, kind, c->call.stream);
    } else { /* an output: the loop dimensions, then its core dimensions */
        Py_ssize_t shape[NPY_MAXDIMS];
        int nd = c->lnd + L->ndims[k];
        memcpy(shape, c->lshape, sizeof(Py_ssize_t) * (size_t)c->lnd);
        for (int j = 0; j < L->ndims[k]; j++) {
            shape[c->lnd + j] = c->core[L->dim[k][j]];
        }
        PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
        c->dev[k] = d ? da_empty(d, nd, shape, c->call.stream) : NULL;
    }
    if (c->dev[k] == NULL) {
        return -1;
    }
    /* host arrays the kernel writes: a given host output (0-d too), a
     * written host input */
    if (op->obj != NULL && PyArray_Check(op->obj) && (k >= L->nin || c->f->written[k])) {
        c->host[k] = Py_NewRef(op->obj);
    }
    return 0;
}

/* Host arrays the kernel wrote get their values back (cast as NumPy
 * casts into an out=).  0/-1. */
/* The copies of device operands of another dtype that the kernel wrote,
 * cast into them (on the call's stream).  0/-1. */
static int
cast_back(CuGuCall *c)
{
    for (int k = 0; k < c->call.nops; k++) {
        if (c->cast_back[k] && cu_device_cast(c->dev[k], c->call.ops[k].obj, c->call.stream) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
write_back(CuGuCall *c)
{
    for (int k = 0; k < c->call.nops; k++) {
        if (c->host[k] == NULL) {
            continue;
        }
        PyObject *h = PyObject_CallMethod(c->dev[k], "copy_to_host", "OO", Py_None, c->call.stream);
        if (h == NULL) {
            return -1;
        }
        int rc = PyArray_CopyInto((PyArrayObject *)c->host[k], (PyArrayObject *)h);
        Py_DECREF(h);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* The call's value for output k: the out= given, the device array, or
 * (host call) its host copy, a scalar when it has no dimension. */
static PyObject *
result_of(CuGuCall *c, int k)
{
    if (c->given_out[k]) {
        return Py_NewRef(c->given[k] != NULL ? c->given[k] : c->call.ops[k].obj);
    }
    PyObject *r = c->call.device      ? Py_NewRef(c->dev[k])
                  : c->res[k] != NULL ? Py_NewRef(c->res[k]) /* a staged call's */
                                      : PyObject_CallMethod(c->dev[k], "copy_to_host", "OO",
                                                            Py_None, c->call.stream);
    int kept = caller_core(c, k) - c->f->layout.ndims[k];
    if (r != NULL && kept > 0) {
        /* keepdims=: the reduced dimensions come back, of size 1 */
        Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
        DaInfo info;
        if (c->call.device && da_info(r, &info) < 0) {
            Py_DECREF(r);
            return NULL;
        }
        for (int d = 0; d < c->lnd + kept; d++) {
            shape[d] = d < c->lnd ? c->lshape[d] : 1;
            strides[d] = d >= c->lnd      ? 0
                         : c->call.device ? info.strides[d]
                                          : PyArray_STRIDE((PyArrayObject *)r, d);
        }
        PyObject *v = view_of(r, c->call.device, c->lnd + kept, shape, strides);
        Py_DECREF(r);
        r = v;
    }
    if (r != NULL && c->moved[k]) {
        /* axes=: the core dimensions go where the caller asked for them */
        int nd = c->lnd + caller_core(c, k), perm[NPY_MAXDIMS], back[NPY_MAXDIMS];
        if (core_last(c, k, nd, perm) < 0) {
            Py_DECREF(r);
            return NULL;
        }
        for (int d = 0; d < nd; d++) {
            back[perm[d]] = d;
        }
        PyObject *v;
        if (c->call.device) {
            v = device_permuted(r, nd, back);
        } else {
            npy_intp pp[NPY_MAXDIMS];
            for (int d = 0; d < nd; d++) {
                pp[d] = back[d];
            }
            PyArray_Dims p = {pp, nd};
            v = PyArray_Transpose((PyArrayObject *)r, &p);
        }
        Py_DECREF(r);
        r = v;
    }
    int gone = 0;
    for (int j = 0; j < c->f->layout.ndims[k]; j++) {
        gone += c->missing[c->f->layout.dim[k][j]];
    }
    if (r != NULL && gone > 0) {
        /* '?': the missing dimensions (last, size 1) are left out */
        DaInfo info;
        if (c->call.device && da_info(r, &info) < 0) {
            Py_DECREF(r);
            return NULL;
        }
        Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
        int nd = 0;
        for (int d = 0; d < c->lnd + c->f->layout.ndims[k]; d++) {
            if (d >= c->lnd && c->missing[c->f->layout.dim[k][d - c->lnd]]) {
                continue;
            }
            shape[nd] = c->call.device ? info.shape[d] : PyArray_DIM((PyArrayObject *)r, d);
            strides[nd++] =
                c->call.device ? info.strides[d] : PyArray_STRIDE((PyArrayObject *)r, d);
        }
        PyObject *v = view_of(r, c->call.device, nd, shape, strides);
        Py_DECREF(r);
        r = v;
    }
    return r != NULL && !c->call.device ? PyArray_Return((PyArrayObject *)r) : r;
}

/* The loop and the shapes, after parse: axes=/keepdims= views, the loop,
 * '?' dimensions, core and loop dimensions, the outer iterations. */
static int
gufunc_resolve(CuCall *call)
{
    CuGuCall *c = gu(call);
    if (move_core(c) < 0 || drop_kept(c) < 0 || resolve(c) < 0 || flex_dims(c) < 0
        || bind_dims(c) < 0) {
        return -1;
    }
    c->n = 1;
    for (int d = 0; d < c->lnd; d++) {
        c->n *= c->lshape[d];
    }
    return 0;
}

static int
gufunc_load(CuCall *call)
{
    CuGuCall *c = gu(call);
    return cu_gu_ensure_loaded(c->f, c->f->loops[c->call.loop], c->call.loop);
}

static int
gufunc_stage(CuCall *call, CudaStaged *job)
{
    return cu_gu_stage_plan(gu(call), gu(call)->n, job);
}

static int
gufunc_staged(CuCall *call, CudaStaged *job)
{
    return cu_gu_staged_call(gu(call), gu(call)->n, job);
}

static int
gufunc_place(CuCall *call)
{
    for (int k = 0; k < call->nops; k++) {
        if (place(gu(call), k) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The kernel (none for no outer iteration), then the copies of operands of
 * another dtype cast back into them and host arrays it wrote copied back. */
static int
gufunc_launch(CuCall *call)
{
    CuGuCall *c = gu(call);
    return (c->n > 0 && cu_gu_launch(c, c->n) < 0) || cast_back(c) < 0 || write_back(c) < 0 ? -1
                                                                                            : 0;
}

/* None, the output, or a tuple of them. */
static PyObject *
gufunc_finish(CuCall *call)
{
    CuGuCall *c = gu(call);
    const GuLayout *L = &c->f->layout;
    PyObject *result = NULL;
    if (L->nout == 0) {
        result = Py_NewRef(Py_None);
    } else if (L->nout == 1) {
        result = result_of(c, L->nin);
    } else if ((result = PyTuple_New(L->nout)) != NULL) {
        for (int k = 0; k < L->nout; k++) {
            PyObject *r = result_of(c, L->nin + k);
            if (r == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyTuple_SetItem(result, k, r);
        }
    }
    return result;
}

static const CuCallKind gufunc_kind = {
    .parse = gufunc_parse,
    .resolve = gufunc_resolve,
    .load = gufunc_load,
    .stage = gufunc_stage,
    .staged = gufunc_staged,
    .place = gufunc_place,
    .launch = gufunc_launch,
    .finish = gufunc_finish,
    .clear = gufunc_clear,
};

/* c empty, for a call of f. */
static void
gufunc_call_init(CuGuCall *c, CuGuFunc *f)
{
    memset(c, 0, sizeof(*c));
    cu_call_init(&c->call, &gufunc_kind, f->layout.nin, f->layout.nargs);
    c->f = f;
}

PyObject *
cu_gufunc_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuGuCall c;
    gufunc_call_init(&c, (CuGuFunc *)self);
    return cu_call_run(&c.call, args, kwargs);
}

/* Test hook: g._plan(*args, **kwargs) -> {'staged': outer iterations a
 * chunk (0: not staged), 'chunked': arguments in chunks, 'whole':
 * arguments uploaded once, 'direct': outputs written in place, 'loop': the
 * index in g.types of the loop chosen, 'waits': whether the call waits for
 * the kernel's status word (cu_gu_can_fail)}.  The host
 * side of a call up to the device: runs without a GPU. */
PyObject *
cu_gufunc_plan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuGuCall c;
    PyObject *result = NULL;
    gufunc_call_init(&c, (CuGuFunc *)self);
    if (cu_call_host(&c.call, args, kwargs) < 0) {
        goto done;
    }
    CudaStaged job;
    int staged = gufunc_stage(&c.call, &job);
    PyObject *lists[3] = {PyList_New(0), PyList_New(0), PyList_New(0)};
    for (int k = 0; k < c.call.nops && lists[0] && lists[1] && lists[2]; k++) {
        int which = !staged ? -1 : job.unit[k] > 0 ? 0 : c.whole[k] ? 1 : -1;
        PyObject *i = PyLong_FromLong(k);
        if (i == NULL || (which >= 0 && PyList_Append(lists[which], i) < 0)
            || (staged && c.direct[k] && PyList_Append(lists[2], i) < 0)) {
            Py_CLEAR(lists[0]);
        }
        Py_XDECREF(i);
    }
    if (lists[0] && lists[1] && lists[2]) {
        result = Py_BuildValue("{s:n,s:O,s:O,s:O,s:n,s:O}", "staged",
                               staged ? cuda_stage_chunk(&job) : (Py_ssize_t)0, "chunked", lists[0],
                               "whole", lists[1], "direct", lists[2], "loop", c.call.loop, "waits",
                               cu_gu_can_fail(&c) ? Py_True : Py_False);
    }
    for (int j = 0; j < 3; j++) {
        Py_XDECREF(lists[j]);
    }
done:
    cu_call_clear(&c.call);
    return result;
}
