/*
 * types.c - the scalar kinds and the Python-visible type objects.
 *
 * Owns the tables every area reads about a TsKind (name, NumPy typenum,
 * size), the two Python classes numbavec._core.Type and
 * numbavec._core.Signature, the module attributes float32, f4, void, ...
 * and the module functions parse_signature / parse_signatures that expose
 * parse.c to the Python side.  It sits at the very start of the pipeline:
 * whatever the user wrote as a signature ends up here as a TsSignature.
 */
#include "typesig/typesig.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- scalar kinds ---- */

typedef struct KindInfo {
    const char *name;
    int typenum;
    int itemsize;
} KindInfo;

static const KindInfo kind_info[TS_NSCALAR] = {
    [TS_BOOL] = {"bool", NPY_BOOL, 1},
    [TS_INT8] = {"int8", NPY_INT8, 1},
    [TS_INT16] = {"int16", NPY_INT16, 2},
    [TS_INT32] = {"int32", NPY_INT32, 4},
    [TS_INT64] = {"int64", NPY_INT64, 8},
    [TS_UINT8] = {"uint8", NPY_UINT8, 1},
    [TS_UINT16] = {"uint16", NPY_UINT16, 2},
    [TS_UINT32] = {"uint32", NPY_UINT32, 4},
    [TS_UINT64] = {"uint64", NPY_UINT64, 8},
    [TS_FLOAT32] = {"float32", NPY_FLOAT32, 4},
    [TS_FLOAT64] = {"float64", NPY_FLOAT64, 8},
    [TS_COMPLEX64] = {"complex64", NPY_COMPLEX64, 8},
    [TS_COMPLEX128] = {"complex128", NPY_COMPLEX128, 16},
};

static int
is_scalar(TsKind k)
{
    return (int)k >= 0 && k < TS_NSCALAR;
}

const char *
ts_kind_name(TsKind kind)
{
    if (is_scalar(kind)) {
        return kind_info[kind].name;
    }
    if (kind == TS_VOID) {
        return "void";
    }
    return kind == TS_INFER ? "<inferred>" : "<invalid>";
}

/* NPY_FLOAT32 ...; -1 for void and for an inferred return type. */
int
ts_kind_typenum(TsKind kind)
{
    return is_scalar(kind) ? kind_info[kind].typenum : -1;
}

/* 0 for void and for an inferred return type. */
int
ts_itemsize(TsKind kind)
{
    return is_scalar(kind) ? kind_info[kind].itemsize : 0;
}

int
ts_is_int(TsKind k)
{
    return k >= TS_INT8 && k <= TS_UINT64;
}

int
ts_is_signed(TsKind k)
{
    return k >= TS_INT8 && k <= TS_INT64;
}

int
ts_is_float(TsKind k)
{
    return k == TS_FLOAT32 || k == TS_FLOAT64;
}

int
ts_is_complex(TsKind k)
{
    return k == TS_COMPLEX64 || k == TS_COMPLEX128;
}

int
ts_bits(TsKind k)
{
    int bits = 8 * ts_itemsize(k);
    return ts_is_complex(k) ? bits / 2 : bits;
}

static int
int_kind(int size, int is_signed, TsKind *out)
{
    static const TsKind signed_kinds[] = {TS_INT8, TS_INT16, TS_INT32, TS_INT64};
    static const TsKind unsigned_kinds[] = {TS_UINT8, TS_UINT16, TS_UINT32, TS_UINT64};
    int i;
    switch (size) {
    case 1:
        i = 0;
        break;
    case 2:
        i = 1;
        break;
    case 4:
        i = 2;
        break;
    case 8:
        i = 3;
        break;
    default:
        return -1;
    }
    *out = is_signed ? signed_kinds[i] : unsigned_kinds[i];
    return 0;
}

/*
 * NumPy names the C types (NPY_LONG, NPY_LONGLONG, ...); several of them are
 * the same width, so the kind follows from the C type's size, not its name.
 * NPY_INTP/NPY_UINTP are aliases of one of these numbers.
 */
int
ts_kind_from_typenum(int typenum, TsKind *out)
{
    switch (typenum) {
    case NPY_BOOL:
        *out = TS_BOOL;
        return 0;
    case NPY_BYTE:
        return int_kind(1, 1, out);
    case NPY_UBYTE:
        return int_kind(1, 0, out);
    case NPY_SHORT:
        return int_kind(NPY_SIZEOF_SHORT, 1, out);
    case NPY_USHORT:
        return int_kind(NPY_SIZEOF_SHORT, 0, out);
    case NPY_INT:
        return int_kind(NPY_SIZEOF_INT, 1, out);
    case NPY_UINT:
        return int_kind(NPY_SIZEOF_INT, 0, out);
    case NPY_LONG:
        return int_kind(NPY_SIZEOF_LONG, 1, out);
    case NPY_ULONG:
        return int_kind(NPY_SIZEOF_LONG, 0, out);
    case NPY_LONGLONG:
        return int_kind(NPY_SIZEOF_LONGLONG, 1, out);
    case NPY_ULONGLONG:
        return int_kind(NPY_SIZEOF_LONGLONG, 0, out);
    case NPY_FLOAT:
        *out = TS_FLOAT32;
        return 0;
    case NPY_DOUBLE:
        *out = TS_FLOAT64;
        return 0;
    case NPY_CFLOAT:
        *out = TS_COMPLEX64;
        return 0;
    case NPY_CDOUBLE:
        *out = TS_COMPLEX128;
        return 0;
    default:
        return -1;
    }
}

/* ---- names ---- */

#define TS_INTP  (sizeof(void *) == 8 ? TS_INT64 : TS_INT32)
#define TS_UINTP (sizeof(void *) == 8 ? TS_UINT64 : TS_UINT32)

/*
 * Every name a signature may use, Numba's spellings and NumPy's short
 * codes.  `exported` names become module attributes; "bool" is only
 * accepted in strings, so that numbavec.bool does not shadow the builtin.
 */
static const struct {
    const char *name;
    TsKind kind;
    int exported;
} type_names[] = {
    {"bool", TS_BOOL, 0},
    {"boolean", TS_BOOL, 1},
    {"bool_", TS_BOOL, 1},
    {"b1", TS_BOOL, 1},
    {"int8", TS_INT8, 1},
    {"int16", TS_INT16, 1},
    {"int32", TS_INT32, 1},
    {"int64", TS_INT64, 1},
    {"i1", TS_INT8, 1},
    {"i2", TS_INT16, 1},
    {"i4", TS_INT32, 1},
    {"i8", TS_INT64, 1},
    {"uint8", TS_UINT8, 1},
    {"uint16", TS_UINT16, 1},
    {"uint32", TS_UINT32, 1},
    {"uint64", TS_UINT64, 1},
    {"u1", TS_UINT8, 1},
    {"u2", TS_UINT16, 1},
    {"u4", TS_UINT32, 1},
    {"u8", TS_UINT64, 1},
    {"byte", TS_UINT8, 1},
    {"intp", TS_INTP, 1},
    {"uintp", TS_UINTP, 1},
    {"float32", TS_FLOAT32, 1},
    {"float64", TS_FLOAT64, 1},
    {"f4", TS_FLOAT32, 1},
    {"f8", TS_FLOAT64, 1},
    {"double", TS_FLOAT64, 1},
    {"complex64", TS_COMPLEX64, 1},
    {"complex128", TS_COMPLEX128, 1},
    {"c8", TS_COMPLEX64, 1},
    {"c16", TS_COMPLEX128, 1},
    {"void", TS_VOID, 1},
};

#define N_TYPE_NAMES (sizeof(type_names) / sizeof(type_names[0]))

int
ts_kind_from_name(const char *name, size_t len, TsKind *out)
{
    for (size_t i = 0; i < N_TYPE_NAMES; i++) {
        if (strlen(type_names[i].name) == len && memcmp(type_names[i].name, name, len) == 0) {
            *out = type_names[i].kind;
            return 0;
        }
    }
    return -1;
}

/* ---- text ---- */

/* A bounded string builder: output is cut at the buffer's end, never overrun. */
typedef struct StrBuf {
    char *buf;
    size_t size;
    size_t len;
} StrBuf;

static void
sb_add(StrBuf *sb, const char *s)
{
    size_t n = strlen(s);
    if (sb->len + 1 >= sb->size) {
        return;
    }
    if (n > sb->size - 1 - sb->len) {
        n = sb->size - 1 - sb->len;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void
sb_add_type(StrBuf *sb, const TsType *t)
{
    sb_add(sb, ts_kind_name(t->kind));
    if (t->ndim == 0) {
        return;
    }
    sb_add(sb, "[");
    for (int i = 0; i < t->ndim; i++) {
        sb_add(sb, i > 0 ? ", " : "");
        sb_add(sb, (t->contig && i == t->ndim - 1) ? "::1" : ":");
    }
    sb_add(sb, "]");
}

const char *
ts_type_str(const TsType *t, char *buf, size_t size)
{
    StrBuf sb = {buf, size, 0};
    if (size > 0) {
        buf[0] = '\0';
    }
    sb_add_type(&sb, t);
    return buf;
}

const char *
ts_signature_str(const TsSignature *sig, char *buf, size_t size)
{
    StrBuf sb = {buf, size, 0};
    if (size > 0) {
        buf[0] = '\0';
    }
    if (sig->ret.kind != TS_INFER) {
        sb_add_type(&sb, &sig->ret);
    }
    sb_add(&sb, "(");
    for (int i = 0; i < sig->nargs; i++) {
        sb_add(&sb, i > 0 ? ", " : "");
        sb_add_type(&sb, &sig->args[i]);
    }
    sb_add(&sb, ")");
    return buf;
}

/* ---- the Python classes ---- */

typedef struct TypeObject {
    PyObject_HEAD TsType t;
} TypeObject;

typedef struct SignatureObject {
    PyObject_HEAD TsSignature sig;
} SignatureObject;

/*
 * The classes and the canonical scalar objects.  The module is single-phase
 * (m_size -1, initialised once per process), so one static context is its
 * state; these are strong references kept for the process's life.
 */
static struct {
    PyTypeObject *type_class;
    PyTypeObject *signature_class;
    PyObject *canonical[TS_NSCALAR + 1]; /* scalars and void, by kind */
    PyObject *parse_type_fn;             /* _core._parse_type, for pickling */
    PyObject *parse_signature_fn;        /* _core.parse_signature */
} ts_ctx;

static PyObject *
alloc_instance(PyTypeObject *cls)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot(cls, Py_tp_alloc);
    return alloc(cls, 0);
}

/* New reference; scalars and void are the canonical objects. */
PyObject *
ts_type_to_object(const TsType *t)
{
    if (t->ndim == 0 && (int)t->kind >= 0 && t->kind <= TS_VOID
        && ts_ctx.canonical[t->kind] != NULL) {
        Py_INCREF(ts_ctx.canonical[t->kind]);
        return ts_ctx.canonical[t->kind];
    }
    TypeObject *self = (TypeObject *)alloc_instance(ts_ctx.type_class);
    if (self == NULL) {
        return NULL;
    }
    self->t = *t;
    return (PyObject *)self;
}

/* New reference. */
PyObject *
ts_signature_to_object(const TsSignature *sig)
{
    SignatureObject *self = (SignatureObject *)alloc_instance(ts_ctx.signature_class);
    if (self == NULL) {
        return NULL;
    }
    self->sig = *sig;
    return (PyObject *)self;
}

int
ts_type_check(PyObject *obj, TsType *out)
{
    if (ts_ctx.type_class == NULL || !PyObject_TypeCheck(obj, ts_ctx.type_class)) {
        return 0;
    }
    *out = ((TypeObject *)obj)->t;
    return 1;
}

int
ts_signature_check(PyObject *obj, TsSignature *out)
{
    if (ts_ctx.signature_class == NULL || !PyObject_TypeCheck(obj, ts_ctx.signature_class)) {
        return 0;
    }
    *out = ((SignatureObject *)obj)->sig;
    return 1;
}

static int
type_equal(const TsType *a, const TsType *b)
{
    return a->kind == b->kind && a->ndim == b->ndim && a->contig == b->contig;
}

static Py_uhash_t
type_hash_value(const TsType *t)
{
    return (Py_uhash_t)t->kind * 1000003u + (Py_uhash_t)t->ndim * 31u
           + (Py_uhash_t)(t->contig != 0);
}

static Py_hash_t
fix_hash(Py_uhash_t h)
{
    return h == (Py_uhash_t)-1 ? -2 : (Py_hash_t)h;
}

/* ---- Type ---- */

static PyObject *
type_repr(PyObject *self)
{
    char buf[TS_STRSIZE];
    return PyUnicode_FromString(ts_type_str(&((TypeObject *)self)->t, buf, sizeof buf));
}

static Py_hash_t
type_hash(PyObject *self)
{
    return fix_hash(type_hash_value(&((TypeObject *)self)->t));
}

static PyObject *
type_richcompare(PyObject *a, PyObject *b, int op)
{
    TsType ta, tb;
    if ((op != Py_EQ && op != Py_NE) || !ts_type_check(a, &ta) || !ts_type_check(b, &tb)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyBool_FromLong(type_equal(&ta, &tb) == (op == Py_EQ));
}

/*
 * One argument of a Type called as a function: a Type or a type name.
 * `what` names the call in the message ("float32(...)").
 */
static int
call_argument(PyObject *arg, int index, TsType *out)
{
    if (PyUnicode_Check(arg)) {
        const char *text = PyUnicode_AsUTF8AndSize(arg, NULL);
        if (text == NULL || ts_parse_type_str(text, out) < 0) {
            return -1;
        }
    } else if (!ts_type_check(arg, out)) {
        PyErr_Format(PyExc_TypeError,
                     "argument %d of a signature must be a numbavec type or a type "
                     "name, not %R",
                     index + 1, arg);
        return -1;
    }
    if (out->kind == TS_VOID) {
        PyErr_Format(PyExc_TypeError,
                     "void is not a valid argument type (argument %d): only a "
                     "return type may be void",
                     index + 1);
        return -1;
    }
    return 0;
}

/* float32(x) of a value x (a number, an array): NumPy's np.float32(x), the
 * cast the same call is in a kernel (as Numba's types do), so that py_func
 * computes what the kernel does.  NULL without an exception when the call
 * is not one. */
static PyObject *
type_cast(const TsType *t, PyObject *args)
{
    PyObject *arg = PyTuple_Size(args) == 1 ? PyTuple_GetItem(args, 0) : NULL;
    TsType ignored;
    if (arg == NULL || t->ndim > 0 || t->kind >= TS_NSCALAR || PyUnicode_Check(arg)
        || ts_type_check(arg, &ignored) || !PyNumber_Check(arg)) {
        return NULL;
    }
    PyObject *scalar_type = PyArray_TypeObjectFromType(ts_kind_typenum(t->kind));
    if (scalar_type == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(scalar_type, arg, NULL);
    Py_DECREF(scalar_type);
    return r;
}

/* float32(float32, float32) -> Signature; float64[:](...) is refused;
 * float32(value) is a cast (type_cast). */
static PyObject *
type_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    TsSignature sig;
    sig.ret = ((TypeObject *)self)->t;
    if (kwargs != NULL && PyObject_Length(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "a signature takes no keyword arguments");
        return NULL;
    }
    PyObject *cast = type_cast(&sig.ret, args);
    if (cast != NULL || PyErr_Occurred()) {
        return cast;
    }
    /* an array return type makes a helper's signature (float64[:](float64[:]));
     * a ufunc's signatures refuse it when parsed (ts_parse_signature) */
    Py_ssize_t n = PyTuple_Size(args);
    if (n > TS_MAXARGS) {
        PyErr_Format(PyExc_ValueError, "a signature takes at most %d arguments, not %zd",
                     TS_MAXARGS, n);
        return NULL;
    }
    sig.nargs = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (call_argument(PyTuple_GetItem(args, i), (int)i, &sig.args[i]) < 0) {
            return NULL;
        }
    }
    return ts_signature_to_object(&sig);
}

static int
is_int_one(PyObject *obj)
{
    if (!PyLong_Check(obj)) {
        return 0;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    return overflow == 0 && v == 1;
}

/* 0 for ':', 1 for '::1', -1 (no exception) for anything else. */
static int
slice_layout(PyObject *key)
{
    static const char *const attrs[] = {"start", "stop", "step"};
    PyObject *parts[3] = {NULL, NULL, NULL};
    int result = -1;
    if (!PySlice_Check(key)) {
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        parts[i] = PyObject_GetAttrString(key, attrs[i]);
        if (parts[i] == NULL) {
            PyErr_Clear();
            goto done;
        }
    }
    if (parts[0] == Py_None && parts[1] == Py_None) {
        if (parts[2] == Py_None) {
            result = 0;
        } else if (is_int_one(parts[2])) {
            result = 1;
        }
    }
done:
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(parts[i]);
    }
    return result;
}

static PyObject *
subscript_error(const TsType *t, const char *why)
{
    char buf[TS_STRSIZE];
    PyErr_Format(PyExc_TypeError,
                 "invalid array type %s[...]: %s; write %s[:], %s[:, :], %s[::1] "
                 "or %s[:, ::1]",
                 ts_type_str(t, buf, sizeof buf), why, ts_kind_name(t->kind), ts_kind_name(t->kind),
                 ts_kind_name(t->kind), ts_kind_name(t->kind));
    return NULL;
}

/* float64[:], float64[:, ::1]: each dimension ':' , '::1' only last. */
static PyObject *
type_subscript(PyObject *self, PyObject *key)
{
    TsType t = ((TypeObject *)self)->t;
    char buf[TS_STRSIZE];
    if (t.kind == TS_VOID || t.ndim > 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s cannot be subscripted: only scalar types "
                     "make array types",
                     ts_type_str(&t, buf, sizeof buf));
        return NULL;
    }
    int single = !PyTuple_Check(key);
    Py_ssize_t n = single ? 1 : PyTuple_Size(key);
    if (n == 0) {
        return subscript_error(&t, "no dimensions");
    }
    if (n > TS_MAXDIMS) {
        return subscript_error(&t, "too many dimensions");
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int layout = slice_layout(single ? key : PyTuple_GetItem(key, i));
        if (layout < 0) {
            return subscript_error(&t, "each dimension must be ':' or '::1'");
        }
        if (layout == 1 && i != n - 1) {
            return subscript_error(&t, "'::1' (C-contiguous) may only be the last dimension");
        }
        t.contig = layout;
    }
    t.ndim = (int)n;
    return ts_type_to_object(&t);
}

static PyObject *
type_get_dtype(PyObject *self, void *closure)
{
    int typenum = ts_kind_typenum(((TypeObject *)self)->t.kind);
    if (typenum < 0) {
        Py_RETURN_NONE;
    }
    return (PyObject *)PyArray_DescrFromType(typenum);
}

static PyObject *
type_get_ndim(PyObject *self, void *closure)
{
    return PyLong_FromLong(((TypeObject *)self)->t.ndim);
}

static PyObject *
type_get_contig(PyObject *self, void *closure)
{
    return PyBool_FromLong(((TypeObject *)self)->t.contig);
}

static PyObject *
type_get_name(PyObject *self, void *closure)
{
    return type_repr(self);
}

static PyObject *
type_reduce(PyObject *self, PyObject *unused)
{
    PyObject *text = type_repr(self);
    if (text == NULL) {
        return NULL;
    }
    return Py_BuildValue("O(N)", ts_ctx.parse_type_fn, text);
}

static PyGetSetDef type_getset[] = {
    {"dtype", type_get_dtype, NULL,
     "The NumPy dtype of the scalar or of the "
     "array's elements; None for void.",
     NULL},
    {"ndim", type_get_ndim, NULL, "0 for a scalar, else the array's dimensions.", NULL},
    {"contig", type_get_contig, NULL, "True when the last dimension is '::1'.", NULL},
    {"name", type_get_name, NULL, "The type as written: 'float64[:, ::1]'.", NULL},
    {NULL},
};

static PyMethodDef type_methods[] = {
    {"__reduce__", type_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyType_Slot type_slots[] = {
    {Py_tp_doc, "A numbavec type: a scalar kind (float32), void, or an array of a "
                "scalar kind (float64[:, ::1]).  Call it to make a signature: "
                "float32(float32, float32)."},
    {Py_tp_repr, type_repr},
    {Py_tp_hash, type_hash},
    {Py_tp_richcompare, type_richcompare},
    {Py_tp_call, type_call},
    {Py_mp_subscript, type_subscript},
    {Py_tp_getset, type_getset},
    {Py_tp_methods, type_methods},
    {0, NULL},
};

static PyType_Spec type_spec = {
    .name = "numbavec.Type",
    .basicsize = sizeof(TypeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = type_slots,
};

/* ---- Signature ---- */

static PyObject *
signature_repr(PyObject *self)
{
    char buf[TS_STRSIZE];
    return PyUnicode_FromString(ts_signature_str(&((SignatureObject *)self)->sig, buf, sizeof buf));
}

static int
signature_equal(const TsSignature *a, const TsSignature *b)
{
    if (a->nargs != b->nargs || !type_equal(&a->ret, &b->ret)) {
        return 0;
    }
    for (int i = 0; i < a->nargs; i++) {
        if (!type_equal(&a->args[i], &b->args[i])) {
            return 0;
        }
    }
    return 1;
}

static Py_hash_t
signature_hash(PyObject *self)
{
    const TsSignature *sig = &((SignatureObject *)self)->sig;
    Py_uhash_t h = type_hash_value(&sig->ret) ^ (Py_uhash_t)sig->nargs;
    for (int i = 0; i < sig->nargs; i++) {
        h = h * 1000003u ^ type_hash_value(&sig->args[i]);
    }
    return fix_hash(h);
}

static PyObject *
signature_richcompare(PyObject *a, PyObject *b, int op)
{
    TsSignature sa, sb;
    if ((op != Py_EQ && op != Py_NE) || !ts_signature_check(a, &sa)
        || !ts_signature_check(b, &sb)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyBool_FromLong(signature_equal(&sa, &sb) == (op == Py_EQ));
}

static PyObject *
signature_get_return_type(PyObject *self, void *closure)
{
    const TsSignature *sig = &((SignatureObject *)self)->sig;
    if (sig->ret.kind == TS_INFER) {
        Py_RETURN_NONE;
    }
    return ts_type_to_object(&sig->ret);
}

static PyObject *
signature_get_args(PyObject *self, void *closure)
{
    const TsSignature *sig = &((SignatureObject *)self)->sig;
    PyObject *args = PyTuple_New(sig->nargs);
    if (args == NULL) {
        return NULL;
    }
    for (int i = 0; i < sig->nargs; i++) {
        PyObject *t = ts_type_to_object(&sig->args[i]);
        if (t == NULL || PyTuple_SetItem(args, i, t) < 0) {
            Py_DECREF(args);
            return NULL;
        }
    }
    return args;
}

static PyObject *
signature_reduce(PyObject *self, PyObject *unused)
{
    PyObject *text = signature_repr(self);
    if (text == NULL) {
        return NULL;
    }
    return Py_BuildValue("O(N)", ts_ctx.parse_signature_fn, text);
}

static PyGetSetDef signature_getset[] = {
    {"return_type", signature_get_return_type, NULL,
     "The return Type, or None when it is left for the compiler to infer.", NULL},
    {"args", signature_get_args, NULL, "The argument Types, a tuple.", NULL},
    {NULL},
};

static PyMethodDef signature_methods[] = {
    {"__reduce__", signature_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyType_Slot signature_slots[] = {
    {Py_tp_doc, "A kernel signature: return type (or None: inferred) and argument "
                "types.  Made by calling a type, float32(float32, float32), or by "
                "parse_signature('f4(f4, f4)')."},
    {Py_tp_repr, signature_repr},
    {Py_tp_hash, signature_hash},
    {Py_tp_richcompare, signature_richcompare},
    {Py_tp_getset, signature_getset},
    {Py_tp_methods, signature_methods},
    {0, NULL},
};

static PyType_Spec signature_spec = {
    .name = "numbavec.Signature",
    .basicsize = sizeof(SignatureObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = signature_slots,
};

/* ---- module functions ---- */

static PyObject *
py_parse_signature(PyObject *module, PyObject *obj)
{
    TsSignature sig;
    if (ts_parse_signature(obj, &sig) < 0) {
        return NULL;
    }
    return ts_signature_to_object(&sig);
}

static PyObject *
signature_list(PyObject *obj, int helper)
{
    TsSignature *sigs = NULL;
    Py_ssize_t count = 0;
    PyObject *list = NULL;
    if ((helper ? ts_parse_helper_signature_list : ts_parse_signature_list)(obj, &sigs, &count)
        < 0) {
        return NULL;
    }
    list = PyList_New(count);
    if (list == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *sig = ts_signature_to_object(&sigs[i]);
        if (sig == NULL || PyList_SetItem(list, i, sig) < 0) {
            goto error;
        }
    }
    PyMem_Free(sigs);
    return list;
error:
    Py_XDECREF(list);
    PyMem_Free(sigs);
    return NULL;
}

static PyObject *
py_parse_signatures(PyObject *module, PyObject *obj)
{
    return signature_list(obj, 0);
}

static PyObject *
py_parse_helper_signatures(PyObject *module, PyObject *obj)
{
    return signature_list(obj, 1);
}

static PyObject *
py_parse_type(PyObject *module, PyObject *arg)
{
    TsType t;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "a type name must be a str, not %R", arg);
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (text == NULL || ts_parse_type_str(text, &t) < 0) {
        return NULL;
    }
    return ts_type_to_object(&t);
}

static PyMethodDef ts_functions[] = {
    {"parse_signature", py_parse_signature, METH_O,
     "parse_signature(obj) -> Signature: a str, a Signature or a tuple of "
     "argument types."},
    {"parse_signatures", py_parse_signatures, METH_O,
     "parse_signatures(obj) -> list of Signature: one signature or a list of them."},
    {"_parse_helper_signatures", py_parse_helper_signatures, METH_O,
     "_parse_helper_signatures(obj) -> list of Signature: a helper's, whose return may be an "
     "array."},
    {"_parse_type", py_parse_type, METH_O, "_parse_type('f8[:, ::1]') -> Type."},
    {NULL},
};

/* ---- registration ---- */

static int
make_canonical_types(PyObject *module)
{
    PyObject *scalars = PyTuple_New(TS_NSCALAR);
    if (scalars == NULL) {
        return -1;
    }
    for (int k = 0; k <= TS_VOID; k++) {
        TsType t = {(TsKind)k, 0, 0};
        ts_ctx.canonical[k] = ts_type_to_object(&t);
        if (ts_ctx.canonical[k] == NULL) {
            goto error;
        }
        if (k < TS_NSCALAR) {
            Py_INCREF(ts_ctx.canonical[k]);
            PyTuple_SetItem(scalars, k, ts_ctx.canonical[k]);
        }
    }
    for (size_t i = 0; i < N_TYPE_NAMES; i++) {
        if (type_names[i].exported
            && PyModule_AddObjectRef(module, type_names[i].name,
                                     ts_ctx.canonical[type_names[i].kind])
                   < 0) {
            goto error;
        }
    }
    if (PyModule_AddObject(module, "scalar_types", scalars) < 0) {
        goto error;
    }
    return 0;
error:
    Py_DECREF(scalars);
    return -1;
}

int
ts_init_module(PyObject *module)
{
    ts_ctx.type_class = (PyTypeObject *)PyType_FromSpec(&type_spec);
    if (ts_ctx.type_class == NULL
        || PyModule_AddObjectRef(module, "Type", (PyObject *)ts_ctx.type_class) < 0) {
        return -1;
    }
    ts_ctx.signature_class = (PyTypeObject *)PyType_FromSpec(&signature_spec);
    if (ts_ctx.signature_class == NULL
        || PyModule_AddObjectRef(module, "Signature", (PyObject *)ts_ctx.signature_class) < 0) {
        return -1;
    }
    if (PyModule_AddFunctions(module, ts_functions) < 0) {
        return -1;
    }
    ts_ctx.parse_type_fn = PyObject_GetAttrString(module, "_parse_type");
    ts_ctx.parse_signature_fn = PyObject_GetAttrString(module, "parse_signature");
    if (ts_ctx.parse_type_fn == NULL || ts_ctx.parse_signature_fn == NULL) {
        return -1;
    }
    return make_canonical_types(module);
}
