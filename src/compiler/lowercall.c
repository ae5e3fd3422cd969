/*
 * lowercall.c - calls, constants, tuples and subscripts, for the lowering
 * pass (lower.h): a call of a builtin, len, a type (a cast), a device
 * function or a method (a.astype, a.sort ...), with its keywords checked
 * against what the builtin takes (dtype=, kind=, axis= ...); number and
 * boolean constants; tuples; and subscripts, a tuple's item or an array's
 * index (lowerexpr.c's lw_lower_index).
 */
#include "compiler/lower.h"

#include <limits.h>
#include <string.h>

/* ---- calls, constants, tuples, subscripts ---- */

static int
is_builtin_len(PyObject *callee)
{
    PyObject *builtins = PyImport_ImportModule("builtins");
    PyObject *len = builtins != NULL ? PyObject_GetAttrString(builtins, "len") : NULL;
    int same = len != NULL && callee == len;
    Py_XDECREF(len);
    Py_XDECREF(builtins);
    PyErr_Clear();
    return same;
}

/* The kind of the dtype object obj (np.float32, np.dtype('f4'), 'f4', float
 * ...) as NumPy's dtype() reads it; -1 with a TypingError at `at`. */
int
lw_dtype_kind(Lower *L, PyObject *at, PyObject *obj, TsKind *out)
{
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *dt = np != NULL ? PyObject_CallMethod(np, "dtype", "O", obj) : NULL;
    PyObject *num = dt != NULL ? PyObject_GetAttrString(dt, "num") : NULL;
    long typenum = num != NULL ? PyLong_AsLong(num) : -1;
    Py_XDECREF(np);
    Py_XDECREF(dt);
    Py_XDECREF(num);
    if (typenum < 0 || ts_kind_from_typenum((int)typenum, out) < 0) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) {
            return -1; /* KeyboardInterrupt ... */
        }
        PyErr_Clear();
        PyObject *r = PyObject_Repr(obj);
        const char *text = r != NULL ? PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
        cc_error(L->fn, lw_loc_of(L, at), "dtype=%.80s is not a dtype a kernel supports",
                 text != NULL ? text : "?");
        Py_XDECREF(r);
        return -1;
    }
    return 0;
}

/* The dtype of an array constructor (dtype= or positional): a dtype
 * object (n->index = 1 + its kind) or an array's .dtype (n->rhs: the
 * array, typed later).  0/-1. */
static int
dtype_arg(Lower *L, PyObject *value, CcNode *n)
{
    int local, rc = 0;
    const char *attr = lw_ast_kind(value) == A_ATTRIBUTE ? lw_get_str(L, value, "attr") : NULL;
    PyObject *obj = NULL;
    if (lw_ast_kind(value) == A_CONSTANT) {
        obj = lw_get(value, "value"); /* 'f4', 'int32' */
        local = obj == NULL;
    } else {
        obj = lw_resolve_object(L, value, &local);
    }
    if (obj != NULL) {
        TsKind k;
        rc = lw_dtype_kind(L, value, obj, &k);
        n->index = 1 + (int)k;
        Py_DECREF(obj);
    } else if (local && attr != NULL && strcmp(attr, "dtype") == 0) {
        PyErr_Clear();
        n->rhs = lw_lower_attr_expr(L, value, "value");
        rc = n->rhs != NULL ? 0 : -1;
    } else {
        if (local) {
            PyErr_Clear();
            cc_error(L->fn, lw_loc_of(L, value),
                     "dtype= must be a dtype (np.float32, 'f8' ...) or an array's .dtype");
        }
        rc = -1;
    }
    return rc;
}

/* The string constant a keyword's value is, or NULL (no exception). */
static const char *
keyword_str(Lower *L, PyObject *kw, PyObject **hold)
{
    PyObject *v = lw_get(kw, "value");
    *hold = v != NULL && lw_ast_kind(v) == A_CONSTANT ? lw_get(v, "value") : NULL;
    Py_XDECREF(v);
    PyErr_Clear();
    return *hold != NULL && PyUnicode_Check(*hold) ? PyUnicode_AsUTF8AndSize(*hold, NULL) : NULL;
}

/*
 * The keyword arguments of np.sort and its kin: axis= (a constant int or
 * None, in n->ival), kind= (any of NumPy's: the result is the same),
 * side= of searchsorted (n->ival 1: right), method= of the quantiles (only
 * 'linear'), and the second argument by its name (kth=, q=, v=).
 */
static int
sort_keyword(Lower *L, PyObject *kw, const char *name, const CcBuiltin *b, CcNode *n)
{
    CcSortOp op = (CcSortOp)b->op;
    PyObject *hold = NULL;
    int ok = 1;
    const char *second = op == S_PARTITION || op == S_PARTITION_IN_PLACE ? "kth"
                         : op == S_SEARCHSORTED                          ? "v"
                         : op >= S_QUANTILE && op <= S_NANPERCENTILE     ? "q"
                                                                         : NULL;
    if (second != NULL && strcmp(name, second) == 0) {
        PyObject *v = lw_get(kw, "value");
        CcNode *e = v != NULL ? lw_lower_expr(L, v) : NULL;
        Py_XDECREF(v);
        if (e == NULL) {
            return -1;
        }
        CcNode **args = n->nargs == 1 ? cc_alloc(L->fn->arena, sizeof(CcNode *) * 2) : NULL;
        if (args == NULL) {
            return n->nargs == 1
                       ? -1
                       : cc_error(L->fn, lw_loc_of(L, kw), "%s() got %s twice", b->name, second);
        }
        args[0] = n->args[0];
        args[1] = e;
        n->args = args;
        n->nargs = 2;
        return 0;
    }
    if (strcmp(name, "axis") == 0 && op != S_UNIQUE && op != S_SEARCHSORTED) {
        PyObject *v = lw_get(kw, "value");
        int neg = v != NULL && lw_ast_kind(v) == A_UNARYOP;
        PyObject *operand = neg ? lw_get(v, "operand") : NULL;
        PyObject *c = NULL, *from = neg ? operand : v;
        if (from != NULL && lw_ast_kind(from) == A_CONSTANT) {
            c = lw_get(from, "value");
        }
        if (c == Py_None && !neg) {
            n->ival = CC_AXIS_NONE;
        } else if (c != NULL && PyLong_Check(c) && !PyBool_Check(c)) {
            n->ival = PyLong_AsLongLong(c) * (neg ? -1 : 1);
        } else {
            ok = 0;
        }
        if (neg && ok) {
            /* -k is USub only: ~k or +k would have another value */
            PyObject *unop = lw_get(v, "op");
            PyObject *cls = unop != NULL ? PyObject_GetAttrString(unop, "__class__") : NULL;
            PyObject *cname = cls != NULL ? PyObject_GetAttrString(cls, "__name__") : NULL;
            ok = cname != NULL && PyUnicode_Check(cname)
                 && strcmp(PyUnicode_AsUTF8AndSize(cname, NULL), "USub") == 0;
            Py_XDECREF(unop);
            Py_XDECREF(cls);
            Py_XDECREF(cname);
        }
        int median =
            op == S_MEDIAN || op == S_NANMEDIAN || (op >= S_QUANTILE && op <= S_NANPERCENTILE);
        if (median && ok && n->ival != CC_AXIS_NONE) {
            ok = 0;
        }
        Py_XDECREF(c);
        Py_XDECREF(operand);
        Py_XDECREF(v);
        PyErr_Clear();
        if (!ok) {
            return cc_error(L->fn, lw_loc_of(L, kw), "%s() takes axis=%s in a kernel", b->name,
                            median ? "None only (the whole array)" : "an integer constant or None");
        }
        if (median) {
            n->ival = -1;
        }
        return 0;
    }
    const char *s = keyword_str(L, kw, &hold);
    if (strcmp(name, "kind") == 0 && (op == S_SORT || op == S_ARGSORT || op == S_SORT_IN_PLACE)) {
        ok = s != NULL
             && (strcmp(s, "quicksort") == 0 || strcmp(s, "mergesort") == 0
                 || strcmp(s, "heapsort") == 0 || strcmp(s, "stable") == 0);
        ok = ok || hold == Py_None;
    } else if (strcmp(name, "kind") == 0 && (op == S_PARTITION || op == S_PARTITION_IN_PLACE)) {
        ok = s != NULL && strcmp(s, "introselect") == 0;
    } else if (strcmp(name, "side") == 0 && op == S_SEARCHSORTED) {
        ok = s != NULL && (strcmp(s, "left") == 0 || strcmp(s, "right") == 0);
        n->ival = ok && strcmp(s, "right") == 0;
    } else if (strcmp(name, "method") == 0 && op >= S_QUANTILE && op <= S_NANPERCENTILE) {
        ok = s != NULL && strcmp(s, "linear") == 0;
    } else {
        Py_XDECREF(hold);
        return cc_error(L->fn, lw_loc_of(L, kw), "%s() takes no keyword argument '%s' in a kernel",
                        b->name, name);
    }
    if (!ok) {
        cc_error(L->fn, lw_loc_of(L, kw), "%s() takes %s=%s in a kernel", b->name, name,
                 strcmp(name, "side") == 0     ? "'left' or 'right'"
                 : strcmp(name, "method") == 0 ? "'linear' only (NumPy's default)"
                 : op == S_PARTITION || op == S_PARTITION_IN_PLACE
                     ? "'introselect'"
                     : "'quicksort', 'mergesort', 'heapsort' or 'stable' (all give NumPy's order)");
    }
    Py_XDECREF(hold);
    return ok ? 0 : -1;
}

/*
 * The keyword arguments of a call of builtin b: only dtype= of the array
 * constructors, which is a dtype object (n->index = 1 + its kind) or the
 * .dtype of an array (n->rhs: the array, typed later).  0/-1.
 */
static int
call_keywords(Lower *L, PyObject *node, PyObject *keywords, const CcBuiltin *b, CcNode *n)
{
    for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
        PyObject *kw = PyList_GetItem(keywords, i);
        const char *name = lw_get_str(L, kw, "arg");
        if (name == NULL) {
            PyErr_Clear();
            return cc_error(L->fn, lw_loc_of(L, kw), "**kwargs are not supported in a kernel");
        }
        if (b->flavor == FL_SORT) {
            if (sort_keyword(L, kw, name, b, n) < 0) {
                return -1;
            }
            continue;
        }
        if (b->flavor == FL_RESHAPE && strcmp(name, "order") == 0) {
            /* C order, NumPy's default, is the kernel's only one */
            PyObject *hold = NULL;
            const char *order = keyword_str(L, kw, &hold);
            int c = order != NULL && strcmp(order, "C") == 0;
            Py_XDECREF(hold);
            if (!c) {
                return cc_error(L->fn, lw_loc_of(L, kw),
                                "%s(order=) takes 'C' in a kernel (C order, NumPy's default)",
                                b->name);
            }
            continue;
        }
        int axis = b->flavor == FL_REDUCE && strcmp(name, "axis") == 0;
        if (b->flavor == FL_REDUCE && (b->op == R_VAR || b->op == R_STD)
            && strcmp(name, "ddof") == 0) {
            /* ddof=k: a constant, kept in the call */
            PyObject *v = lw_get(kw, "value");
            PyObject *c = v != NULL && lw_ast_kind(v) == A_CONSTANT ? lw_get(v, "value") : NULL;
            int ok = c != NULL && PyLong_Check(c) && !PyBool_Check(c);
            n->ival = ok ? PyLong_AsLongLong(c) : 0;
            Py_XDECREF(c);
            Py_XDECREF(v);
            if (!ok || PyErr_Occurred()) {
                PyErr_Clear();
                return cc_error(L->fn, lw_loc_of(L, kw), "ddof= must be an integer constant");
            }
            continue;
        }
        if (!axis
            && ((b->flavor != FL_ALLOC && b->flavor != FL_LIKE && b->flavor != FL_ARANGE)
                || strcmp(name, "dtype") != 0)) {
            return cc_error(L->fn, lw_loc_of(L, kw),
                            "%s() takes no keyword argument '%s' in a kernel%s", b->name, name,
                            b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_ARANGE
                                ? " (only dtype=)"
                            : b->flavor == FL_REDUCE ? " (only axis=, and ddof= of var and std)"
                                                     : "");
        }
        PyObject *value = lw_get(kw, "value");
        if (value == NULL) {
            return -1;
        }
        if (axis) {
            /* axis=k: a second argument, as np.sum(a, k) has it; axis=None: none */
            PyObject *c = lw_ast_kind(value) == A_CONSTANT ? lw_get(value, "value") : NULL;
            int none = c == Py_None;
            Py_XDECREF(c);
            PyErr_Clear();
            CcNode *k = none ? NULL : lw_lower_expr(L, value);
            Py_DECREF(value);
            if (none) {
                continue;
            }
            if (k == NULL) {
                return -1;
            }
            if (n->nargs != 1) {
                return cc_error(L->fn, lw_loc_of(L, kw), "%s() got the axis twice", b->name);
            }
            CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3);
            if (args == NULL) {
                return -1;
            }
            args[0] = n->args[0];
            args[1] = k;
            n->args = args;
            n->nargs = 2;
            continue;
        }
        int rc = dtype_arg(L, value, n);
        Py_DECREF(value);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* a.astype(dtype): np.copy(a, dtype=dtype), a new array of that kind. */
static CcNode *
astype_call(Lower *L, PyObject *node, PyObject *func, PyObject *keywords)
{
    PyObject *list = lw_get(node, "args");
    PyObject *dtype = list != NULL && PyList_Size(list) == 1 ? PyList_GetItem(list, 0) : NULL;
    Py_XDECREF(list); /* node holds it */
    if (dtype == NULL || PyList_Size(keywords) > 0) {
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, node),
                 "a.astype() takes one argument in a kernel, the dtype (and no keywords)");
        return NULL;
    }
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
    if (args == NULL || (args[0] = lw_lower_attr_expr(L, func, "value")) == NULL) {
        return NULL;
    }
    CcNode *n = lw_builtin_call(L, node, cc_builtin_by_name("numpy.copy"), args, 1);
    return n != NULL && dtype_arg(L, dtype, n) == 0 ? n : NULL;
}

/* The methods of values: x.conjugate(), and of arrays a.sum(), a.copy() ...
 * (the NumPy function of that name, the array first). */
static CcNode *
method_call(Lower *L, PyObject *node, PyObject *func, PyObject *keywords)
{
    static const char *const methods[] = {
        "sum",    "prod", "min", "max", "mean",   "any",     "all",     "argmin",
        "argmax", "copy", "var", "std", "cumsum", "cumprod", "argsort", "searchsorted"};
    const char *attr = lw_get_str(L, func, "attr");
    if (attr == NULL) {
        return NULL;
    }
    int builtin = -1;
    if (strcmp(attr, "conjugate") == 0) {
        builtin = cc_builtin_attr(FL_CONJ);
    } else if (strcmp(attr, "sort") == 0 || strcmp(attr, "partition") == 0) {
        builtin = cc_builtin_by_name(attr[0] == 's' ? ".sort" : ".partition");
    } else if (strcmp(attr, "flatten") == 0 || strcmp(attr, "reshape") == 0
               || strcmp(attr, "ravel") == 0) {
        char name[16];
        snprintf(name, sizeof(name), ".%s", attr);
        builtin = cc_builtin_by_name(name);
    }
    PyObject *owner = lw_get(func, "value");
    const char *owner_attr =
        owner != NULL && lw_ast_kind(owner) == A_ATTRIBUTE ? lw_get_str(L, owner, "attr") : NULL;
    if (strcmp(attr, "type") == 0 && owner_attr != NULL && strcmp(owner_attr, "dtype") == 0) {
        /* a.dtype.type(x): x cast to a's element kind, which typeinfer knows */
        int nargs;
        CcNode *n = lw_new_node(L, ND_CALL, node);
        CcNode **args = n != NULL ? lw_lower_expr_list(L, node, "args", &nargs) : NULL;
        if (args != NULL && nargs != 1) {
            cc_error(L->fn, lw_loc_of(L, node), "dtype.type() takes 1 argument, %d given", nargs);
            args = NULL;
        }
        if (args != NULL && (n->rhs = lw_lower_attr_expr(L, owner, "value")) != NULL) {
            n->builtin = cc_builtin_cast(TS_FLOAT64); /* until typed */
            n->args = args;
            n->nargs = 1;
        }
        Py_DECREF(owner);
        return args != NULL && n->rhs != NULL ? n : NULL;
    }
    Py_XDECREF(owner);
    PyErr_Clear();
    if (strcmp(attr, "astype") == 0) {
        return astype_call(L, node, func, keywords);
    }
    for (size_t i = 0; builtin < 0 && i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strcmp(attr, methods[i]) == 0) {
            char name[32];
            snprintf(name, sizeof(name), "numpy.%s", attr);
            builtin = cc_builtin_by_name(name);
        }
    }
    if (builtin < 0) {
        cc_error(L->fn, lw_loc_of(L, func),
                 "the method .%s() is not supported in a kernel (only .conjugate(), and on "
                 "arrays .sum(), .prod(), .min(), .max(), .mean(), .any(), .all(), .argmin(), "
                 ".argmax(), .var(), .std(), .cumsum(), .cumprod(), .sort(), .argsort(), "
                 ".partition(), .searchsorted(), .copy(), .flatten(), .reshape() and .ravel())",
                 attr);
        return NULL;
    }
    int nargs;
    CcNode **rest = lw_lower_expr_list(L, node, "args", &nargs);
    CcNode **args =
        rest != NULL ? cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(nargs + 2)) : NULL;
    if (args == NULL || (args[0] = lw_lower_attr_expr(L, func, "value")) == NULL) {
        return NULL;
    }
    memcpy(args + 1, rest, sizeof(CcNode *) * (size_t)nargs);
    CcNode *n = lw_builtin_call(L, node, builtin, args, nargs + 1);
    if (n != NULL && n->kind == ND_CALL && cc_builtin(builtin)->flavor == FL_REDUCE) {
        n->index = 1; /* a method: of arrays only (np.sum(x) takes a scalar too) */
    }
    if (n != NULL && n->kind == ND_CALL
        && call_keywords(L, node, keywords, cc_builtin(builtin), n) < 0) {
        return NULL;
    }
    return n;
}

/* A call's arguments; the dtype an array constructor takes after its own
 * (np.zeros(n, np.int32), np.full(n, 0, 'f4')) is left out and set in
 * *dtype (borrowed from node), for dtype_arg. */
static CcNode **
lower_args_dtype(Lower *L, PyObject *node, const CcBuiltin *b, int *count, PyObject **dtype)
{
    PyObject *list = lw_get(node, "args");
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_Size(list);
    *dtype = NULL;
    if ((b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_ARANGE)
        && b->op != AL_COPY && n == b->max_args + 1) {
        *dtype = PyList_GetItem(list, --n);
    }
    CcNode **out = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(n + 1));
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        if ((out[i] = lw_lower_expr(L, PyList_GetItem(list, i))) == NULL) {
            out = NULL;
        }
    }
    Py_DECREF(list); /* the node holds the list, and the list *dtype */
    *count = (int)n;
    return out;
}

/* Whether node calls the NumPy ufunc callee with its output (out= or one
 * argument more than its inputs) inside an expression, reported: only a
 * statement of its own takes one (lowerstmt.c, numbavec/_forms.py). */
static int
ufunc_output_in_expression(Lower *L, PyObject *node, PyObject *callee, PyObject *keywords)
{
    int nin = lw_ufunc_nin(callee);
    if (nin < 0) {
        return 0;
    }
    PyObject *args = lw_get(node, "args"), *name = NULL;
    int out = 0;
    if (args != NULL) {
        out = PyList_Size(args) == nin + 1;
        for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
            PyObject *arg = lw_get(PyList_GetItem(keywords, i), "arg");
            out |= arg != NULL && PyUnicode_Check(arg)
                   && PyUnicode_CompareWithASCIIString(arg, "out") == 0;
            Py_XDECREF(arg);
        }
    }
    name = out ? PyObject_GetAttrString(callee, "__name__") : NULL;
    const char *s =
        name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    PyErr_Clear();
    if (out) {
        s = s != NULL ? s : "ufunc";
        cc_error(L->fn, lw_loc_of(L, node),
                 "np.%s() with its output is supported as a statement of its own "
                 "(np.%s(..., out=res)); in an expression, assign the result: "
                 "res[...] = np.%s(...)",
                 s, s, s);
    }
    Py_XDECREF(name);
    Py_XDECREF(args);
    return out;
}

/* call := func '(' args ')'    func: a builtin, len, a device function, a type
 *                              (a cast), or a method (method_call) */
CcNode *
lw_lower_call(Lower *L, PyObject *node)
{
    PyObject *func = lw_get(node, "func"), *keywords = lw_get(node, "keywords"), *dtype = NULL;
    CcNode *n = NULL;
    if (func == NULL || keywords == NULL) {
        goto done;
    }
    int local, nargs;
    Lower *scope;
    const char *fname = lw_ast_kind(func) == A_NAME ? lw_get_str(L, func, "id") : NULL;
    PyObject *nested = fname != NULL ? lw_find_nested(L, fname, &scope) : NULL;
    if (nested != NULL) { /* a nested def, or a function a parameter was given */
        n = lw_is_device_function(nested) ? lw_lower_device_call(L, node, nested)
                                          : lw_lower_nested_call(L, node, nested, scope);
        goto done;
    }
    PyObject *callee = lw_resolve_object(L, func, &local);
    if (callee == NULL && local && lw_ast_kind(func) == A_ATTRIBUTE) {
        n = method_call(L, node, func, keywords);
        goto done;
    }
    if (callee == NULL) {
        if (local) {
            cc_error(L->fn, lw_loc_of(L, func), "only builtin functions can be called in a kernel");
        }
        goto done;
    }
    int builtin =
        lw_is_device_function(callee) || is_builtin_len(callee) ? -1 : cc_builtin_lookup(callee);
    int kw_ok =
        builtin >= 0
        && (cc_builtin(builtin)->flavor == FL_ALLOC || cc_builtin(builtin)->flavor == FL_LIKE
            || cc_builtin(builtin)->flavor == FL_REDUCE || cc_builtin(builtin)->flavor == FL_SORT
            || cc_builtin(builtin)->flavor == FL_ARANGE
            || cc_builtin(builtin)->flavor == FL_RESHAPE);
    CcFlavor flavor = builtin >= 0 ? cc_builtin(builtin)->flavor : FL_COUNT;
    if (flavor == FL_NORM || flavor == FL_ARRAY || flavor == FL_COV || flavor == FL_HIST) {
        Py_DECREF(callee); /* lowernp.c reads their arguments */
        n = lw_lower_np_call(L, node, builtin, keywords);
        goto done;
    }
    if (flavor == FL_RANDOM) {
        Py_DECREF(callee);
        n = lw_lower_random_call(L, node, builtin, keywords);
        goto done;
    }
    if (ufunc_output_in_expression(L, node, callee, keywords)) {
        Py_DECREF(callee);
        goto done;
    }
    TsType cast;
    /* an unsupported function is reported as such below, keywords or not */
    int unknown = builtin == -1 && !lw_is_device_function(callee) && !is_builtin_len(callee)
                  && !(ts_type_check(callee, &cast) && cast.ndim == 0 && cast.kind < TS_NSCALAR);
    if (PyList_Size(keywords) > 0 && !kw_ok && !lw_is_device_function(callee) && !unknown) {
        cc_error(L->fn, lw_loc_of(L, node), "keyword arguments are not supported in a kernel%s",
                 builtin >= 0 ? " for this function" : "");
        Py_DECREF(callee);
        goto done;
    }
    if (lw_is_device_function(callee)) {
        n = lw_lower_device_call(L, node, callee);
        Py_DECREF(callee);
        goto done;
    }
    if (is_builtin_len(callee)) {
        Py_DECREF(callee);
        CcNode **args = lw_lower_expr_list(L, node, "args", &nargs);
        if (args != NULL && nargs != 1) {
            cc_error(L->fn, lw_loc_of(L, node), "len() takes 1 argument, %d given", nargs);
        } else if (args != NULL) {
            n = lw_array_attr(L, node, AA_LEN, args[0]);
        }
        goto done;
    }
    if (builtin == -1 && ts_type_check(callee, &cast) && cast.ndim == 0 && cast.kind < TS_NSCALAR) {
        builtin = cc_builtin_cast(cast.kind); /* numbavec.float32(x): a cast */
    }
    if (builtin == -1 && lw_random_instance_method(callee)) {
        cc_error(L->fn, lw_loc_of(L, func),
                 "np.random.Generator and RandomState objects are not supported in a kernel: "
                 "call np.random's functions (np.random.seed(), random(), uniform(), normal(), "
                 "randint() ...), which draw from the kernel's own generator, one per thread");
        builtin = -2; /* reported */
    }
    if (builtin < 0) {
        if (builtin == -1) {
            PyObject *mod = PyObject_GetAttrString(callee, "__module__");
            PyObject *fname = PyObject_GetAttrString(callee, "__name__");
            PyErr_Clear();
            int numpy = mod != NULL && PyUnicode_Check(mod)
                        && strncmp(PyUnicode_AsUTF8AndSize(mod, NULL), "numpy", 5) == 0;
            /* as written (np.fft.fft(), not np.fft() or <function fft at 0x...>) */
            PyObject *r = lw_callee_spelling(func);
            if (r == NULL) {
                r = numpy && fname != NULL && PyUnicode_Check(fname)
                        ? PyUnicode_FromFormat("np.%U()", fname)
                        : PyObject_Repr(callee);
            }
            Py_XDECREF(fname);
            const char *s = r != NULL ? PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
            Py_XDECREF(mod);
            PyErr_Clear();
            cc_error(L->fn, lw_loc_of(L, func), "%s cannot be called in a kernel%s", s ? s : "this",
                     numpy ? " (this NumPy function is not supported yet)"
                     : PyObject_HasAttrString(callee, "__code__")
                         ? " (decorate it with @numbavec.jit)"
                         : "");
            Py_XDECREF(r);
        }
        Py_DECREF(callee);
        goto done;
    }
    Py_DECREF(callee);
    CcNode **args = lower_args_dtype(L, node, cc_builtin(builtin), &nargs, &dtype);
    if (args != NULL) {
        n = lw_builtin_call(L, node, builtin, args, nargs);
    }
    if (n != NULL && n->kind == ND_CALL && dtype != NULL && dtype_arg(L, dtype, n) < 0) {
        n = NULL;
    }
    if (n != NULL && n->kind == ND_CALL && kw_ok
        && call_keywords(L, node, keywords, cc_builtin(builtin), n) < 0) {
        n = NULL;
    }
done:
    Py_XDECREF(func);
    Py_XDECREF(keywords);
    return n;
}

/* constant := number | True | False */
CcNode *
lw_lower_constant(Lower *L, PyObject *node)
{
    PyObject *value = lw_get(node, "value");
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lw_value_const(L, node, value);
    if (n == NULL && !PyErr_Occurred()) {
        const char *what = PyUnicode_Check(value) ? "strings"
                           : value == Py_None     ? "None"
                           : PyBytes_Check(value) ? "bytes"
                                                  : "this constant";
        cc_error(L->fn, lw_loc_of(L, node), "%s %s not supported in a kernel", what,
                 value == Py_None ? "is" : "are");
    }
    Py_DECREF(value);
    return n;
}

/* tuple := '(' expr, ... ')' */
CcNode *
lw_lower_tuple(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_TUPLE, node);
    if (n == NULL || (n->args = lw_lower_expr_list(L, node, "elts", &n->nargs)) == NULL) {
        return NULL;
    }
    return n;
}

/* A subscript by a constant integer (possibly negated). */
static int
is_constant_subscript(PyObject *node)
{
    PyObject *slice = lw_get(node, "slice");
    if (slice != NULL && lw_ast_kind(slice) == A_UNARYOP) {
        PyObject *operand = lw_get(slice, "operand");
        Py_DECREF(slice);
        slice = operand;
    }
    PyObject *value =
        slice != NULL && lw_ast_kind(slice) == A_CONSTANT ? lw_get(slice, "value") : NULL;
    int yes = value != NULL && PyLong_Check(value) && !PyBool_Check(value);
    Py_XDECREF(slice);
    Py_XDECREF(value);
    PyErr_Clear();
    return yes;
}

/* subscript := expr '[' integer constant ']'     (tuples; arrays too, as
 *                                                 typeinfer finds)
 *            | index                             (arrays) */
CcNode *
lw_lower_subscript(Lower *L, PyObject *node)
{
    int flat_err;
    CcNode *flat = lw_lower_flat_index(L, node, &flat_err);
    if (flat != NULL || flat_err) {
        return flat;
    }
    PyObject *base = lw_get(node, "value");
    int array = base != NULL && (lw_is_param_name(L, base) || !is_constant_subscript(node));
    Py_XDECREF(base);
    if (array) {
        return lw_lower_index(L, node);
    }
    CcNode *n = lw_new_node(L, ND_GETITEM, node);
    PyObject *slice = lw_get(node, "slice");
    PyObject *value = NULL;
    if (n == NULL || slice == NULL) {
        goto error;
    }
    /* a constant index, possibly negated */
    int negate = 0;
    if (lw_ast_kind(slice) == A_UNARYOP) {
        PyObject *op = lw_get(slice, "op"), *operand = lw_get(slice, "operand");
        const AstClass *c = op ? lw_ast_class(op) : NULL;
        if (c != NULL && c->kind == A_OPERATOR && c->op == OP_NEG && operand != NULL) {
            negate = 1;
            Py_DECREF(slice);
            slice = operand;
            operand = NULL;
        }
        Py_XDECREF(op);
        Py_XDECREF(operand);
    }
    if (lw_ast_kind(slice) != A_CONSTANT || (value = lw_get(slice, "value")) == NULL
        || !PyLong_Check(value) || PyBool_Check(value)) {
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, node),
                 "only tuples indexed by an integer constant are "
                 "supported in a kernel");
        goto error;
    }
    int overflow;
    long long index = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || index > INT_MAX || index < -(long long)INT_MAX) {
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, node), "tuple index out of range");
        goto error;
    }
    n->index = (int)index * (negate ? -1 : 1);
    if ((n->lhs = lw_lower_attr_expr(L, node, "value")) == NULL) {
        goto error;
    }
    Py_DECREF(slice);
    Py_DECREF(value);
    return n;
error:
    Py_XDECREF(slice);
    Py_XDECREF(value);
    return NULL;
}
