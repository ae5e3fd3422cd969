/*
 * resolve.c - what a kernel takes from Python at compile time: the names
 * that are not locals, and the values they hold, as constants.
 *
 * lowerexpr.c lowers a Name or an attribute chain here when it is not a local
 * variable: a closure cell, else a global of the function's module, else a
 * builtin, read now and frozen (globals are not read again at run time, as
 * Numba does).  A number or NumPy scalar becomes an ND_CONST; a module or a
 * builtins.c function is what a call or an attribute resolves through.
 * Arithmetic on Python int constants is done here too, by Python, so that
 * `x / 10**20` means what it means in Python.  Device functions (inline.c)
 * resolve their names in their own module the same way.
 */
#include "compiler/lower.h"

#include <limits.h>
#include <string.h>

/* ---- names that are not locals ---- */

/* {free variable name: cell contents} of pyfunc (empty cells left out). */
PyObject *
lw_closure_values(PyObject *pyfunc)
{
    PyObject *code = lw_get(pyfunc, "__code__");
    PyObject *names = code ? lw_get(code, "co_freevars") : NULL;
    PyObject *cells = lw_get(pyfunc, "__closure__");
    PyObject *result = PyDict_New();
    Py_ssize_t n = names ? PyTuple_Size(names) : 0;
    for (Py_ssize_t i = 0; result != NULL && cells != NULL && cells != Py_None && i < n; i++) {
        PyObject *contents = lw_get(PyTuple_GetItem(cells, i), "cell_contents");
        if (contents == NULL) {
            PyErr_Clear(); /* an empty cell: the name is simply undefined */
            continue;
        }
        if (PyDict_SetItem(result, PyTuple_GetItem(names, i), contents) < 0) {
            Py_CLEAR(result);
        }
        Py_DECREF(contents);
    }
    Py_XDECREF(code);
    Py_XDECREF(names);
    Py_XDECREF(cells);
    if (PyErr_Occurred()) {
        Py_CLEAR(result);
    }
    return result;
}

/*
 * A value the capture refused (numbavec._capture.Refused, standing for a
 * Numba jitclass and its instances): a TypingError at loc saying what it
 * is.  0 when v is not one, -1 with the error.
 */
static int
check_refused(Lower *L, PyObject *v, CcLoc loc)
{
    static PyObject *refused_type; /* looked up once; the module stays imported */
    if (refused_type == NULL) {
        PyObject *mod = PyImport_ImportModule("numbavec._capture");
        refused_type = mod != NULL ? PyObject_GetAttrString(mod, "Refused") : NULL;
        Py_XDECREF(mod);
        if (refused_type == NULL) {
            return -1;
        }
    }
    int is = PyObject_IsInstance(v, refused_type);
    if (is <= 0) {
        return is;
    }
    PyObject *why = PyObject_Str(v);
    const char *text = why != NULL ? PyUnicode_AsUTF8AndSize(why, NULL) : NULL;
    if (text != NULL) {
        cc_error(L->fn, loc, "%s", text);
    }
    Py_XDECREF(why);
    return -1;
}

/* The value of a non-local name: closure cell, global, builtin.  New ref. */
PyObject *
lw_resolve_global(Lower *L, const char *name, CcLoc loc)
{
    PyObject *v = L->closure ? PyDict_GetItemString(L->closure, name) : NULL;
    if (v == NULL) {
        v = PyDict_GetItemString(L->globals, name);
    }
    if (v == NULL) {
        PyObject *builtins = PyImport_ImportModule("builtins");
        if (builtins == NULL) {
            return NULL;
        }
        PyObject *b = PyObject_GetAttrString(builtins, name);
        Py_DECREF(builtins);
        if (b == NULL) {
            PyErr_Clear();
            if (L->prefix == NULL && L->unbound != NULL) {
                PyObject *key = PyUnicode_FromString(name);
                int found = key != NULL ? PySet_Contains(L->unbound, key) : -1;
                Py_XDECREF(key);
                if (found < 0) {
                    return NULL;
                }
                L->cascade = found; /* the import's error says it */
            }
            cc_error(L->fn, loc, "name '%s' is not defined", name);
        }
        return b;
    }
    if (check_refused(L, v, loc) < 0) {
        return NULL;
    }
    Py_INCREF(v);
    return v;
}

/* The attributes of a global NumPy array read now, as Python values (its
 * dtype, and the numbers a kernel may fold); the others (.shape, .T, its
 * methods) are the constant array's, as a local array's would be. */
static int
frozen_array_attr(const char *attr)
{
    static const char *const frozen[] = {"dtype", "size", "ndim", "itemsize", "nbytes"};
    for (size_t i = 0; i < sizeof(frozen) / sizeof(frozen[0]); i++) {
        if (strcmp(attr, frozen[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/*
 * np.finfo(t) and np.iinfo(t) of a type named when compiling (np.float32,
 * np.int64, numbavec.float64): the object NumPy gives, so that
 * np.finfo(np.float64).eps is a constant.  Any other call is computed
 * (*local); np.finfo(x.dtype) is reported.
 */
static PyObject *
type_info(Lower *L, PyObject *node, int *local)
{
    PyObject *func = lw_get(node, "func"), *args = lw_get(node, "args");
    PyObject *keywords = lw_get(node, "keywords"), *f = NULL, *t = NULL, *info = NULL;
    int inner = 0, which = 0;
    *local = 1;
    if (func == NULL || args == NULL || keywords == NULL
        || (f = lw_resolve_object(L, func, &inner)) == NULL
        || !(which = lw_is_numpy_named(f, "finfo")   ? 1
                     : lw_is_numpy_named(f, "iinfo") ? 2
                                                     : 0)) {
        PyErr_Clear();
        goto done;
    }
    *local = 0;
    const char *name = which == 1 ? "finfo" : "iinfo";
    if (PyList_Size(args) != 1 || PyList_Size(keywords) != 0
        || (t = lw_resolve_object(L, PyList_GetItem(args, 0), &inner)) == NULL) {
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, node),
                 "np.%s() in a kernel takes a type named when compiling, such as np.%s(%s)%s "
                 "(not an array's dtype)",
                 name, name, which == 1 ? "np.float64" : "np.int64", which == 1 ? ".eps" : ".max");
        goto done;
    }
    TsType ts;
    if (ts_type_check(t, &ts) && ts.ndim == 0 && ts.kind < TS_NSCALAR) {
        /* a numbavec type: NumPy's of that name */
        info = PyObject_CallFunction(f, "s", ts_kind_name(ts.kind));
    } else {
        info = PyObject_CallFunctionObjArgs(f, t, NULL);
    }
    if (info == NULL) {
        cc_error_raised(L->fn, lw_loc_of(L, node),
                        which == 1 ? "calling np.finfo()" : "calling np.iinfo()");
    }
done:
    Py_XDECREF(t);
    Py_XDECREF(f);
    Py_XDECREF(func);
    Py_XDECREF(args);
    Py_XDECREF(keywords);
    return info;
}

/*
 * The Python object an expression names, for names and attribute chains
 * that are not locals: `math`, `math.pi`, `np.float32`.  New reference;
 * NULL with a TypingError.  *local is set instead when the base is a local.
 */
PyObject *
lw_resolve_object(Lower *L, PyObject *node, int *local)
{
    AstKind kind = lw_ast_kind(node);
    *local = 0;
    if (kind == A_NAME) {
        const char *name = lw_get_str(L, node, "id");
        if (name == NULL) {
            return NULL;
        }
        if (lw_local_var(L, name) != NULL) {
            *local = 1;
            return NULL;
        }
        return lw_resolve_global(L, name, lw_loc_of(L, node));
    }
    if (kind == A_ATTRIBUTE) {
        PyObject *base_node = lw_get(node, "value");
        if (base_node == NULL) {
            return NULL;
        }
        PyObject *base = lw_resolve_object(L, base_node, local);
        Py_DECREF(base_node);
        const char *attr = lw_get_str(L, node, "attr");
        if (base == NULL || attr == NULL) {
            Py_XDECREF(base);
            return NULL;
        }
        if (PyArray_Check(base) && !frozen_array_attr(attr)) {
            Py_DECREF(base); /* TABLE.shape, TABLE.sum(): of the constant array */
            *local = 1;
            return NULL;
        }
        PyObject *v = PyObject_GetAttrString(base, attr);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            cc_error(L->fn, lw_loc_of(L, node), "'%s' has no attribute '%s'",
                     PyModule_Check(base) ? PyModule_GetName(base) : "object", attr);
        } else if (v == NULL) {
            char what[128];
            snprintf(what, sizeof(what), "reading attribute '%.64s'", attr);
            cc_error_raised(L->fn, lw_loc_of(L, node), what);
        } else if (check_refused(L, v, lw_loc_of(L, node)) < 0) {
            Py_CLEAR(v);
        }
        Py_DECREF(base);
        return v;
    }
    if (kind == A_CALL) {
        return type_info(L, node, local);
    }
    *local = 1; /* any other expression: its value is computed */
    return NULL;
}

/* ---- Python values as constants ---- */

static CcNode *
const_node(Lower *L, PyObject *ast, const CcType *ty)
{
    CcNode *n = lw_new_node(L, ND_CONST, ast);
    if (n != NULL) {
        n->ty = ty;
    }
    return n;
}

/* The largest Python int a kernel's constants may hold, in bits: enough for
 * any float64 (2**1024) with room, small enough that no constant
 * expression can take long to compute. */
#define MAX_INT_BITS 16384

/* The number of bits of the Python int value (its bit_length()), or -1. */
static long
int_bits(PyObject *value)
{
    PyObject *bits = PyObject_CallMethod(value, "bit_length", NULL);
    long n = bits != NULL ? PyLong_AsLong(bits) : -1;
    Py_XDECREF(bits);
    return n;
}

/* (ihigh:ival) := value clamped to int128, in two's complement.  0/-1. */
static int
int128_words(PyObject *value, long long *high, long long *low)
{
    PyObject *lo = NULL, *hi = NULL, *shift = PyLong_FromLong(64);
    PyObject *lim = PyLong_FromLong(127), *one = PyLong_FromLong(1);
    PyObject *max = lim && one ? PyNumber_Lshift(one, lim) : NULL; /* 2**127 */
    PyObject *top = max ? PyNumber_Subtract(max, one) : NULL;
    PyObject *bottom = max ? PyNumber_Negative(max) : NULL;
    PyObject *v = NULL;
    int rc = -1;
    if (top != NULL && bottom != NULL) {
        v = PyObject_RichCompareBool(value, top, Py_GT) == 1      ? Py_NewRef(top)
            : PyObject_RichCompareBool(value, bottom, Py_LT) == 1 ? Py_NewRef(bottom)
                                                                  : Py_NewRef(value);
    }
    if (v != NULL && !PyErr_Occurred() && (hi = PyNumber_Rshift(v, shift)) != NULL) {
        *low = (long long)PyLong_AsUnsignedLongLongMask(v);
        *high = (long long)PyLong_AsUnsignedLongLongMask(hi);
        rc = PyErr_Occurred() ? -1 : 0;
    }
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    Py_XDECREF(v);
    Py_XDECREF(shift);
    Py_XDECREF(lim);
    Py_XDECREF(one);
    Py_XDECREF(max);
    Py_XDECREF(top);
    Py_XDECREF(bottom);
    return rc;
}

/*
 * A Python int as a weak constant, exactly: an int64 in ival, or, outside
 * int64, an int128 in (ihigh:ival) and the value itself (see CcNode.big).
 */
static CcNode *
int_const(Lower *L, PyObject *ast, PyObject *value)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return NULL;
    }
    CcNode *n = const_node(L, ast, cc_weak_type(CT_WEAK_INT));
    if (n == NULL || !overflow) {
        if (n != NULL) {
            n->ival = v;
        }
        return n;
    }
    long bits = int_bits(value);
    if (bits < 0) {
        return NULL;
    }
    if (bits > MAX_INT_BITS) {
        cc_error(L->fn, n->loc,
                 "integer constant of %ld bits is too large for a kernel (the limit is %d bits)",
                 bits, MAX_INT_BITS);
        return NULL;
    }
    if (int128_words(value, &n->ihigh, &n->ival) < 0 || cc_arena_keep(L->fn->arena, value) < 0) {
        return NULL;
    }
    n->big = 1;
    n->pyint = value;
    return n;
}

static int
get_double(PyObject *obj, const char *attr, double *out)
{
    PyObject *part = attr ? PyObject_GetAttrString(obj, attr) : (Py_INCREF(obj), obj);
    if (part == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(part);
    Py_DECREF(part);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* A NumPy scalar as a constant of its own kind. */
static CcNode *
numpy_const(Lower *L, PyObject *ast, PyObject *value)
{
    PyArray_Descr *descr = PyArray_DescrFromScalar(value);
    TsKind kind;
    if (descr == NULL) {
        return NULL;
    }
    int ok = ts_kind_from_typenum(descr->type_num, &kind) == 0;
    Py_DECREF(descr);
    if (!ok) {
        cc_error(L->fn, lw_loc_of(L, ast),
                 "a NumPy scalar of this dtype cannot be used in a kernel");
        return NULL;
    }
    CcNode *n = const_node(L, ast, cc_scalar_type(kind));
    if (n == NULL) {
        return NULL;
    }
    if (ts_is_complex(kind)) {
        if (get_double(value, "real", &n->fval) < 0 || get_double(value, "imag", &n->fimag) < 0) {
            return NULL;
        }
    } else if (ts_is_float(kind)) {
        if (get_double(value, NULL, &n->fval) < 0) {
            return NULL;
        }
    } else if (kind == TS_BOOL) {
        int truth = PyObject_IsTrue(value);
        if (truth < 0) {
            return NULL;
        }
        n->ival = truth;
    } else {
        PyObject *i = PyNumber_Index(value);
        if (i == NULL) {
            return NULL;
        }
        n->ival =
            kind == TS_UINT64 ? (long long)PyLong_AsUnsignedLongLong(i) : PyLong_AsLongLong(i);
        Py_DECREF(i);
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return n;
}

/*
 * A frozen Python value as a constant: bool (typed), int, float, complex
 * (weak), or a NumPy scalar (typed).  Returns NULL without an exception
 * when value is none of these.
 */
CcNode *
lw_value_const(Lower *L, PyObject *ast, PyObject *value)
{
    if (PyBool_Check(value)) {
        CcNode *n = const_node(L, ast, cc_scalar_type(TS_BOOL));
        if (n != NULL) {
            n->ival = value == Py_True;
        }
        return n;
    }
    if (PyArray_IsScalar(value, Generic)) {
        /* before float and complex: np.float64 and np.complex128 are their
         * subclasses, and typed (NEP 50), not weak as Python's numbers */
        return numpy_const(L, ast, value);
    }
    if (PyLong_Check(value)) {
        return int_const(L, ast, value);
    }
    if (PyFloat_Check(value)) {
        CcNode *n = const_node(L, ast, cc_weak_type(CT_WEAK_FLOAT));
        if (n != NULL) {
            n->fval = PyFloat_AsDouble(value);
        }
        return n;
    }
    if (PyComplex_Check(value)) {
        CcNode *n = const_node(L, ast, cc_weak_type(CT_WEAK_COMPLEX));
        if (n != NULL) {
            n->fval = PyComplex_RealAsDouble(value);
            n->fimag = PyComplex_ImagAsDouble(value);
        }
        return n;
    }
    return NULL;
}

/*
 * The IndexError a scalar kernel raises when it indexes a global array out
 * of its bounds (views.c's em_check: a gufunc returns a status instead),
 * registered once per kernel.  0/-1.
 */
static int
index_site(Lower *L)
{
    if (L->fn->index_site != NULL) {
        return 0;
    }
    PyObject *text = PyUnicode_FromString(
        "builtins\x1fIndexError\x1f('index out of bounds of a global NumPy array',)");
    int generation = 0;
    const char *s =
        text ? cc_raise_register(L->fn->arena, text, PyExc_IndexError, &generation) : NULL;
    Py_XDECREF(text);
    if (s == NULL) {
        return -1;
    }
    L->fn->index_site = s;
    L->fn->raises = 1;
    if (generation > L->fn->raise_gen) {
        L->fn->raise_gen = generation;
    }
    return 0;
}

/*
 * A global NumPy array as a constant, frozen now as Numba does: an ND_CONST
 * of array type whose pyint is a C-contiguous copy in native byte order
 * (kept by the arena), which views.c emits as a read-only global of the
 * module.  Writes into it are TypingErrors (ti_readonly).
 */
static CcNode *
array_const(Lower *L, PyObject *ast, PyObject *value)
{
    PyArrayObject *a = (PyArrayObject *)value;
    TsKind kind;
    int nd = PyArray_NDIM(a);
    if (ts_kind_from_typenum(PyArray_TYPE(a), &kind) < 0 || nd < 1 || nd > TS_MAXDIMS) {
        PyObject *dt = PyObject_Str((PyObject *)PyArray_DESCR(a));
        const char *s = dt != NULL ? PyUnicode_AsUTF8AndSize(dt, NULL) : NULL;
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, ast),
                 "a global NumPy array of %d dimension(s) and dtype %s cannot be read in a "
                 "kernel (arrays of 1 to %d dimensions of numbers and bools can)",
                 nd, s != NULL ? s : "?", TS_MAXDIMS);
        Py_XDECREF(dt);
        return NULL;
    }
    PyObject *frozen = PyArray_FROM_OTF(value, PyArray_TYPE(a), NPY_ARRAY_CARRAY_RO);
    CcNode *n = frozen != NULL ? const_node(L, ast, cc_array_type(kind, nd)) : NULL;
    if (n == NULL || cc_arena_keep(L->fn->arena, frozen) < 0) {
        Py_XDECREF(frozen);
        return NULL;
    }
    n->pyint = frozen;
    Py_DECREF(frozen); /* the arena holds it */
    return index_site(L) < 0 ? NULL : n;
}

/* The frozen value of a global or attribute chain, as a constant. */
CcNode *
lw_lower_frozen(Lower *L, PyObject *node, PyObject *value)
{
    CcNode *n = lw_value_const(L, node, value);
    if (n != NULL || PyErr_Occurred()) {
        return n;
    }
    if (PyArray_Check(value)) {
        return array_const(L, node, value);
    }
    PyObject *tname = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__name__");
    const char *s = tname != NULL ? PyUnicode_AsUTF8AndSize(tname, NULL) : NULL;
    if (cc_builtin_lookup(value) >= 0 || PyModule_Check(value)) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a %s can only be called or used for its "
                 "attributes in a kernel",
                 s != NULL ? s : "function");
    } else if (lw_is_device_function(value)) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a helper (or ufunc) can only be called in a kernel, not passed as a value: "
                 "functions are not values of the kernel language yet (call it where it is "
                 "used, or pass what it computes)");
    } else {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a value of type '%s' cannot be used in a kernel "
                 "(only numbers, NumPy scalars and arrays, math/cmath/numpy and their functions)",
                 s != NULL ? s : "?");
    }
    Py_XDECREF(tname);
    return NULL;
}

/* ---- Python int constants, folded as Python computes them ---- */

/* The exact Python int of a weak int constant (new reference), or NULL
 * (no exception) when n is not one. */
static PyObject *
const_int_value(const CcNode *n)
{
    if (n->kind != ND_CONST || n->ty->kind != CT_WEAK_INT) {
        return NULL;
    }
    return n->big ? Py_NewRef(n->pyint) : PyLong_FromLongLong(n->ival);
}

/* Whether a op b of Python ints may be computed now: operands that give a
 * result of at most MAX_INT_BITS (an estimate, from their sizes). */
static int
fold_in_bounds(Lower *L, CcOp op, PyObject *a, PyObject *b, CcLoc loc)
{
    long abits = int_bits(a), bbits = int_bits(b);
    if (abits < 0 || bbits < 0) {
        return -1;
    }
    long long need = abits > bbits ? abits : bbits;
    if (op == OP_MUL) {
        need = (long long)abits + bbits;
    } else if (op == OP_POW || op == OP_LSHIFT) {
        int overflow;
        long long e = PyLong_AsLongLongAndOverflow(b, &overflow);
        if (overflow < 0 || (!overflow && e < 0)) {
            return 1; /* a float, or no shift: Python decides */
        }
        /* an exponent or shift beyond int64 (e is -1 then): only 0, 1 and -1
         * stay small, and Python would compute the rest for ever */
        int small = op == OP_LSHIFT ? abits == 0 : abits <= 1;
        need = overflow          ? (small ? 1 : LLONG_MAX)
               : op == OP_LSHIFT ? abits + e
               : abits <= 1      ? 1
                                 : abits * e;
        if (op == OP_POW && abits > 1 && e > 0 && need / e != abits) {
            need = LLONG_MAX;
        }
    }
    if (need > MAX_INT_BITS) {
        cc_error(L->fn, loc,
                 "integer constant expression too large for a kernel "
                 "(more than %d bits)",
                 MAX_INT_BITS);
        return -1;
    }
    return 1;
}

/* Python's a op b on two ints: a new reference (an int, or a float for /
 * and negative powers), or NULL with an exception. */
static PyObject *
python_int_op(CcOp op, PyObject *a, PyObject *b)
{
    switch (op) {
    case OP_ADD:
        return PyNumber_Add(a, b);
    case OP_SUB:
        return PyNumber_Subtract(a, b);
    case OP_MUL:
        return PyNumber_Multiply(a, b);
    case OP_DIV:
        return PyNumber_TrueDivide(a, b);
    case OP_FLOORDIV:
        return PyNumber_FloorDivide(a, b);
    case OP_MOD:
        return PyNumber_Remainder(a, b);
    case OP_POW:
        return PyNumber_Power(a, b, Py_None);
    case OP_LSHIFT:
        return PyNumber_Lshift(a, b);
    case OP_RSHIFT:
        return PyNumber_Rshift(a, b);
    case OP_BITAND:
        return PyNumber_And(a, b);
    case OP_BITOR:
        return PyNumber_Or(a, b);
    case OP_BITXOR:
        return PyNumber_Xor(a, b);
    case OP_NEG:
        return PyNumber_Negative(a);
    case OP_POS:
        return PyNumber_Positive(a);
    case OP_INVERT:
        return PyNumber_Invert(a);
    default:
        return Py_NewRef(Py_NotImplemented);
    }
}

/*
 * Constant folding of Python ints, exactly as Python computes them, so
 * that `x / 10**20` or `2**70 // 2**68` mean what they mean in Python (the
 * kernel computes Python ints in int64 otherwise).  Returns n unchanged
 * when its operands are not both int constants, or when Python raises (a
 * division by zero keeps the kernel's own semantics); NULL with a
 * TypingError for a result too large.
 */
CcNode *
lw_fold_int_op(Lower *L, CcNode *n)
{
    PyObject *a = const_int_value(n->lhs), *b = NULL, *r = NULL;
    CcNode *out = n;
    if (a == NULL || (n->kind == ND_BINOP && (b = const_int_value(n->rhs)) == NULL)) {
        goto done;
    }
    if (b != NULL) {
        int ok = fold_in_bounds(L, n->op, a, b, n->loc);
        if (ok <= 0) {
            out = NULL;
            goto done;
        }
    }
    r = python_int_op(n->op, a, b);
    if (r == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            out = NULL;
        }
        PyErr_Clear();
        goto done;
    }
    if (PyLong_Check(r)) {
        out = int_const(L, NULL, r);
    } else if (PyFloat_Check(r)) {
        out = const_node(L, NULL, cc_weak_type(CT_WEAK_FLOAT));
        if (out != NULL) {
            out->fval = PyFloat_AsDouble(r);
        }
    }
    if (out != NULL && out != n) {
        out->loc = n->loc;
    }
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(r);
    return out;
}

/*
 * abs(), int(), min() and max() of Python int constants, folded exactly as
 * Python computes them (abs(-2**63) is 2**63, not int64's -2**63); n
 * unchanged otherwise.  NULL with an exception.
 */
CcNode *
lw_fold_int_call(Lower *L, CcNode *n, CcFlavor flavor)
{
    if (flavor != FL_ABS && flavor != FL_INT && flavor != FL_MIN && flavor != FL_MAX) {
        return n;
    }
    PyObject *r = NULL;
    for (int i = 0; i < n->nargs; i++) {
        PyObject *v = const_int_value(n->args[i]);
        if (v == NULL) {
            Py_XDECREF(r);
            return n;
        }
        if (r == NULL) {
            r = flavor == FL_ABS ? PyNumber_Absolute(v) : Py_NewRef(v);
        } else {
            int later = PyObject_RichCompareBool(v, r, flavor == FL_MIN ? Py_LT : Py_GT);
            if (later != 0) {
                Py_DECREF(r);
                r = later > 0 ? Py_NewRef(v) : NULL;
            }
        }
        Py_DECREF(v);
        if (r == NULL) {
            return NULL;
        }
    }
    CcNode *out = int_const(L, NULL, r);
    Py_DECREF(r);
    if (out != NULL) {
        out->loc = n->loc;
    }
    return out;
}
