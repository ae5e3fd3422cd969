/*
 * lowernp.c - the calls of NumPy functions whose arguments the compiler
 * reads when it lowers them, not as values: np.linalg.norm's ord= and
 * axis= (constants), np.array's list or tuple display of scalars; and a
 * list display stored into a view (out[i] = [lo, hi]), which is the same
 * np.array.  Their typing and emission are in arrays/ (linalg.c, views.c).
 */
#include "compiler/lower.h"

#include <math.h>
#include <string.h>

/* ---- np.linalg.norm(x, ord=None, axis=None) ---- */

/* The ord of a norm as its node keeps it (CcNode.ival: 0 None, 1 a number
 * in fval, 2 'fro', 3 'nuc').  0/-1. */
static int
norm_ord(Lower *L, PyObject *ast, CcNode *n)
{
    PyObject *c = lw_ast_kind(ast) == A_CONSTANT ? lw_get(ast, "value") : NULL;
    const char *s = c != NULL && PyUnicode_Check(c) ? PyUnicode_AsUTF8AndSize(c, NULL) : NULL;
    int none = c == Py_None;
    Py_XDECREF(c);
    if (none) {
        return 0;
    }
    if (s != NULL && (strcmp(s, "fro") == 0 || strcmp(s, "nuc") == 0)) {
        n->ival = strcmp(s, "fro") == 0 ? 2 : 3;
        return 0;
    }
    CcNode *v = s == NULL ? lw_lower_expr(L, ast) : NULL;
    int neg = v != NULL && v->kind == ND_UNARY && v->op == OP_NEG;
    CcNode *k = neg ? v->lhs : v;
    if (v == NULL && PyErr_Occurred() && s == NULL) {
        return -1;
    }
    if (k == NULL || k->kind != ND_CONST || k->big
        || (k->ty->kind != CT_WEAK_INT && k->ty->kind != CT_WEAK_FLOAT)) {
        PyErr_Clear();
        return cc_error(L->fn, lw_loc_of(L, ast),
                        "np.linalg.norm() takes ord= as a constant in a kernel (None, a number, "
                        "np.inf, -np.inf or 'fro')");
    }
    double d = k->ty->kind == CT_WEAK_INT ? (double)k->ival : k->fval;
    n->ival = 1;
    n->fval = neg ? -d : d;
    return 0;
}

/* axis=k: n->index 1 and n->ihigh k (may be negative); None: 0.  0/-1. */
static int
norm_axis(Lower *L, PyObject *ast, CcNode *n)
{
    PyObject *c = lw_ast_kind(ast) == A_CONSTANT ? lw_get(ast, "value") : NULL;
    int none = c == Py_None;
    Py_XDECREF(c);
    if (none) {
        return 0;
    }
    CcNode *v = lw_lower_expr(L, ast);
    int neg = v != NULL && v->kind == ND_UNARY && v->op == OP_NEG;
    CcNode *k = neg ? v->lhs : v;
    if (k == NULL || k->kind != ND_CONST || k->ty->kind != CT_WEAK_INT || k->big) {
        if (k == NULL && PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
        return cc_error(L->fn, lw_loc_of(L, ast),
                        "np.linalg.norm() takes axis= as an integer constant in a kernel");
    }
    n->index = 1; /* an axis, in ihigh (linalg.c checks it) */
    n->ihigh = neg ? -k->ival : k->ival;
    return 0;
}

/* np.linalg.norm(x, ord, axis, keepdims): x lowered, ord and axis kept. */
static CcNode *
lower_norm(Lower *L, PyObject *node, int builtin, PyObject *args, PyObject *keywords)
{
    Py_ssize_t n = PyList_Size(args);
    if (n < 1 || n > 3) {
        cc_error(L->fn, lw_loc_of(L, node), "np.linalg.norm() takes 1 to 3 arguments, %zd given",
                 n);
        return NULL;
    }
    CcNode **xs = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
    if (xs == NULL || (xs[0] = lw_lower_expr(L, PyList_GetItem(args, 0))) == NULL) {
        return NULL;
    }
    CcNode *call = lw_new_node(L, ND_CALL, node);
    if (call == NULL) {
        return NULL;
    }
    *call = (CcNode){.kind = ND_CALL, .loc = call->loc, .builtin = builtin, .args = xs, .nargs = 1};
    if ((n > 1 && norm_ord(L, PyList_GetItem(args, 1), call) < 0)
        || (n > 2 && norm_axis(L, PyList_GetItem(args, 2), call) < 0)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
        PyObject *kw = PyList_GetItem(keywords, i);
        const char *name = lw_get_str(L, kw, "arg");
        PyObject *value = name != NULL ? lw_get(kw, "value") : NULL;
        int rc = value == NULL               ? -1
                 : strcmp(name, "ord") == 0  ? norm_ord(L, value, call)
                 : strcmp(name, "axis") == 0 ? norm_axis(L, value, call)
                 : strcmp(name, "keepdims") == 0
                     ? cc_error(L->fn, lw_loc_of(L, kw),
                                "np.linalg.norm() takes no keepdims= in a kernel yet")
                     : cc_error(L->fn, lw_loc_of(L, kw),
                                "np.linalg.norm() got an unexpected keyword argument '%s'", name);
        Py_XDECREF(value);
        if (rc < 0) {
            return NULL;
        }
    }
    return call;
}

/* ---- np.array([x, y, z]), np.array((a, b)), out[i] = [lo, hi] ---- */

/* Whether node is a list or tuple display. */
int
lw_is_display(PyObject *node)
{
    const AstClass *c = lw_ast_class(node);
    return c != NULL && (c->kind == A_TUPLE || strcmp(c->name, "List") == 0);
}

/* A new 1-d array of the scalars of the display `list` (a List or Tuple
 * node) at `at`. */
CcNode *
lw_array_display(Lower *L, PyObject *at, PyObject *list)
{
    int count;
    PyObject *items = lw_get(list, "elts");
    for (Py_ssize_t i = 0; items != NULL && i < PyList_Size(items); i++) {
        if (lw_is_display(PyList_GetItem(items, i))) {
            Py_DECREF(items);
            cc_error(L->fn, lw_loc_of(L, at),
                     "np.array() of nested sequences (a 2-d array) is not supported in a kernel "
                     "yet: a list or tuple of scalars is");
            return NULL;
        }
    }
    Py_XDECREF(items);
    CcNode **elts = lw_lower_expr_list(L, list, "elts", &count);
    if (elts == NULL) {
        return NULL;
    }
    int builtin = cc_builtin_by_name("numpy.array");
    CcNode *call = lw_new_node(L, ND_CALL, at);
    if (call != NULL) {
        call->builtin = builtin;
        call->args = elts;
        call->nargs = count;
    }
    return call;
}

/* The value of the assignment node: a list or tuple display stored into
 * one subscript (out[i] = [lo, hi], out[:] = (1.0, 2.0)) is np.array of
 * it, which the store broadcasts as NumPy does. */
CcNode *
lw_lower_stored_value(Lower *L, PyObject *node, PyObject *targets)
{
    PyObject *value = lw_get(node, "value");
    if (value == NULL) {
        return NULL;
    }
    int display = PyList_Size(targets) == 1
                  && lw_ast_kind(PyList_GetItem(targets, 0)) == A_SUBSCRIPT && lw_is_display(value);
    CcNode *n = display ? lw_array_display(L, value, value) : lw_lower_expr(L, value);
    Py_DECREF(value);
    return n;
}

/* np.array(display[, dtype]): the display's scalars; a tuple value is
 * typed later (its items).  */
static CcNode *
lower_array(Lower *L, PyObject *node, PyObject *args, PyObject *keywords)
{
    if (PyList_Size(args) != 1 || PyList_Size(keywords) > 0) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "np.array() takes one list or tuple of scalars in a kernel (no dtype= or "
                 "other arguments yet)");
        return NULL;
    }
    PyObject *a = PyList_GetItem(args, 0);
    if (lw_is_display(a)) {
        return lw_array_display(L, node, a);
    }
    CcNode **one = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
    CcNode *call = one != NULL ? lw_new_node(L, ND_CALL, node) : NULL;
    if (call == NULL || (one[0] = lw_lower_expr(L, a)) == NULL) {
        return NULL;
    }
    call->builtin = cc_builtin_by_name("numpy.array");
    call->args = one;
    call->nargs = 1;
    call->index = 1; /* one value: a tuple's items (views.c) */
    return call;
}

/* ---- for i, x in enumerate(a.flat[, start]) ---- */

PyObject *
lw_enumerated_flat(Lower *L, PyObject *iter, PyObject **start)
{
    PyObject *args = lw_get(iter, "args"), *keywords = lw_get(iter, "keywords");
    PyObject *flat = NULL, *base = NULL;
    Py_ssize_t n = args != NULL ? PyList_Size(args) : 0;
    if (n >= 1 && n <= 2 && keywords != NULL && PyList_Size(keywords) == 0
        && (base = lw_flat_base(L, PyList_GetItem(args, 0))) != NULL) {
        flat = Py_NewRef(PyList_GetItem(args, 0));
        *start = Py_NewRef(n == 2 ? PyList_GetItem(args, 1) : Py_None);
    }
    PyErr_Clear();
    Py_XDECREF(base);
    Py_XDECREF(args);
    Py_XDECREF(keywords);
    return flat;
}

CcNode *
lw_enumerated(Lower *L, PyObject *at, CcNode *k, PyObject *start, CcNode *item)
{
    CcNode *index = k;
    if (start != Py_None && (index = lw_new_node(L, ND_BINOP, at)) != NULL) {
        index->op = OP_ADD;
        index->lhs = k;
        if ((index->rhs = lw_lower_expr(L, start)) == NULL) {
            return NULL;
        }
    }
    CcNode *t = index != NULL ? lw_new_node(L, ND_TUPLE, at) : NULL;
    CcNode **two = t != NULL ? cc_alloc(L->fn->arena, sizeof(CcNode *) * 3) : NULL;
    if (two == NULL) {
        return NULL;
    }
    two[0] = index;
    two[1] = item;
    t->args = two;
    t->nargs = 2;
    return t;
}

/* ---- np.cov(m, y, rowvar, bias, ddof), np.corrcoef(m, y, rowvar) ---- */

/* A constant argument's Python value (new reference), or NULL with a
 * TypingError naming what it is.  With `runtime`, an argument the kernel
 * computes (its variables, an expression) is NULL without an error and
 * *runtime set. */
static PyObject *
const_arg(Lower *L, PyObject *ast, const char *fname, const char *param, int *runtime)
{
    int local = 0;
    PyObject *v = lw_ast_kind(ast) == A_CONSTANT ? lw_get(ast, "value")
                  : lw_ast_kind(ast) == A_NAME || lw_ast_kind(ast) == A_ATTRIBUTE
                      ? lw_resolve_object(L, ast, &local)
                      : NULL;
    if (v == NULL && (local || !PyErr_Occurred())) {
        PyErr_Clear();
        if (runtime != NULL) {
            *runtime = 1;
            return NULL;
        }
        cc_error(L->fn, lw_loc_of(L, ast), "%s() takes %s= as a constant in a kernel", fname,
                 param);
    }
    return v;
}

/* Parameter i of np.cov (m, y, rowvar, bias, ddof) set from ast; a bias
 * that is not a constant is args[1]. */
static int
cov_param(Lower *L, CcNode *n, int i, PyObject *ast, const char *fname)
{
    static const char *const names[] = {"m", "y", "rowvar", "bias", "ddof"};
    if (i == 0) {
        return (n->args[0] = lw_lower_expr(L, ast)) != NULL ? 0 : -1;
    }
    int runtime = 0;
    PyObject *v = i == 1 && lw_ast_kind(ast) != A_CONSTANT
                      ? Py_NewRef(Py_True)
                      : const_arg(L, ast, fname, names[i], i == 3 ? &runtime : NULL);
    if (runtime) {
        /* bias= known when the kernel runs (scoringrules passes a '()'
         * argument): its truth picks the ddof (stats.c) */
        n->nargs = 2;
        return (n->args[1] = lw_lower_expr(L, ast)) != NULL ? 0 : -1;
    }
    if (v == NULL) {
        return -1;
    }
    int rc = 0, truth = v != Py_None ? PyObject_IsTrue(v) : 0;
    if (i == 1 && v != Py_None) {
        rc = cc_error(L->fn, lw_loc_of(L, ast),
                      "%s() of two arrays (y=) is not supported in a kernel yet", fname);
    } else if (i == 2 || i == 3) {
        long long bit = i == 2 ? 1 : 2;
        n->ival = truth ? n->ival | bit : n->ival & ~bit;
    } else if (i == 4 && v != Py_None) {
        int overflow;
        n->ihigh = PyLong_Check(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
        n->index = 1;
        rc = PyLong_Check(v) && !overflow && !PyErr_Occurred()
                 ? 0
                 : cc_error(L->fn, lw_loc_of(L, ast), "%s() takes ddof= as an integer", fname);
    }
    Py_DECREF(v);
    return rc;
}

static CcNode *
lower_cov(Lower *L, PyObject *node, int builtin, PyObject *args, PyObject *keywords)
{
    static const char *const names[] = {"m", "y", "rowvar", "bias", "ddof"};
    const char *fname = cc_builtin(builtin)->op ? "np.corrcoef" : "np.cov";
    int most = cc_builtin(builtin)->op ? 3 : 5;
    CcNode **one = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
    CcNode *n = one != NULL ? lw_new_node(L, ND_CALL, node) : NULL;
    if (n == NULL) {
        return NULL;
    }
    n->builtin = builtin;
    n->args = one;
    n->nargs = 1;
    n->ival = 1; /* rowvar=True */
    Py_ssize_t count = PyList_Size(args);
    if (count < 1 || count > most) {
        cc_error(L->fn, lw_loc_of(L, node), "%s() takes 1 to %d arguments, %zd given", fname, most,
                 count);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (cov_param(L, n, (int)i, PyList_GetItem(args, i), fname) < 0) {
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
        PyObject *kw = PyList_GetItem(keywords, i);
        const char *name = lw_get_str(L, kw, "arg");
        int k = 1;
        while (name != NULL && k < most && strcmp(names[k], name) != 0) {
            k++;
        }
        if (name != NULL && k == most) {
            cc_error(L->fn, lw_loc_of(L, kw), "%s() takes no keyword argument '%s' in a kernel",
                     fname, name);
            return NULL;
        }
        PyObject *value = name != NULL ? lw_get(kw, "value") : NULL;
        int rc = value != NULL ? cov_param(L, n, k, value, fname) : -1;
        Py_XDECREF(value);
        if (rc < 0) {
            return NULL;
        }
    }
    return n;
}

/* np.histogram(a, bins=10, range=None): a, bins and range lowered
 * (args[2] only with a range); density= and weights= are refused. */
static CcNode *
lower_histogram(Lower *L, PyObject *node, int builtin, PyObject *args, PyObject *keywords)
{
    static const char *const names[] = {"a", "bins", "range"};
    Py_ssize_t count = PyList_Size(args);
    PyObject *given[3] = {NULL, NULL, NULL};
    if (count < 1 || count > 3) {
        cc_error(L->fn, lw_loc_of(L, node), "np.histogram() takes 1 to 3 arguments, %zd given",
                 count);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        given[i] = PyList_GetItem(args, i);
    }
    for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
        PyObject *kw = PyList_GetItem(keywords, i);
        const char *name = lw_get_str(L, kw, "arg");
        int k = 1;
        while (name != NULL && k < 3 && strcmp(names[k], name) != 0) {
            k++;
        }
        if (name == NULL || k == 3 || given[k] != NULL) {
            cc_error(L->fn, lw_loc_of(L, kw),
                     "np.histogram() takes a, bins and range= in a kernel%s%s%s",
                     name != NULL ? ", not " : "", name != NULL ? name : "",
                     name != NULL ? "= (not supported yet, or given twice)" : "");
            return NULL;
        }
        given[k] = kw; /* its value, below */
    }
    CcNode **three = cc_alloc(L->fn->arena, sizeof(CcNode *) * 4);
    CcNode *n = three != NULL ? lw_new_node(L, ND_CALL, node) : NULL;
    if (n == NULL) {
        return NULL;
    }
    n->builtin = builtin;
    n->args = three;
    n->nargs = 2;
    for (int k = 0; k < 3; k++) {
        PyObject *ast = given[k] == NULL ? NULL
                        : k < count      ? Py_NewRef(given[k])
                                         : lw_get(given[k], "value");
        PyObject *c = ast != NULL && lw_ast_kind(ast) == A_CONSTANT ? lw_get(ast, "value") : NULL;
        int none = c == Py_None;
        Py_XDECREF(c);
        if (ast != NULL && !none && (three[k] = lw_lower_expr(L, ast)) == NULL) {
            Py_DECREF(ast);
            return NULL;
        }
        Py_XDECREF(ast);
        n->nargs = k == 2 && three[2] != NULL ? 3 : n->nargs;
    }
    if (three[1] == NULL && (three[1] = lw_new_node(L, ND_CONST, node)) != NULL) {
        three[1]->ty = cc_weak_type(CT_WEAK_INT); /* bins=10 */
        three[1]->ival = 10;
    }
    return three[1] != NULL ? n : NULL;
}

/* The call of a builtin this file lowers (flavor FL_NORM, FL_ARRAY, FL_COV,
 * FL_HIST). */
CcNode *
lw_lower_np_call(Lower *L, PyObject *node, int builtin, PyObject *keywords)
{
    PyObject *args = lw_get(node, "args");
    if (args == NULL) {
        return NULL;
    }
    CcFlavor f = cc_builtin(builtin)->flavor;
    CcNode *n = f == FL_NORM   ? lower_norm(L, node, builtin, args, keywords)
                : f == FL_COV  ? lower_cov(L, node, builtin, args, keywords)
                : f == FL_HIST ? lower_histogram(L, node, builtin, args, keywords)
                               : lower_array(L, node, args, keywords);
    Py_DECREF(args);
    return n;
}
