/*
 * lowerexpr.c - expressions, for the lowering pass (lower.h): operators,
 * boolean operators and compares (a dtype test `x.dtype.kind in 'fc'`
 * folded to a constant), conditional expressions, names, the builtin calls
 * that operators become, array indexing and attributes (a[i, j:k],
 * a.flat[k], a.shape), and lw_lower_expr, which dispatches on the node's
 * AstKind.  Calls, constants, tuples and subscripts are lowercall.c's.
 */
#include "compiler/lower.h"

#include <string.h>

/* ---- expressions ---- */

/* Lowers node.attr (an expression) into *out. */
CcNode *
lw_lower_attr_expr(Lower *L, PyObject *node, const char *attr)
{
    PyObject *value = lw_get(node, attr);
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lw_lower_expr(L, value);
    Py_DECREF(value);
    return n;
}

/* Lowers the list node.attr into a new arena array; *count gets its size. */
CcNode **
lw_lower_expr_list(Lower *L, PyObject *node, const char *attr, int *count)
{
    PyObject *list = lw_get(node, attr);
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_Size(list);
    CcNode **out = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(n + 1));
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        out[i] = lw_lower_expr(L, PyList_GetItem(list, i));
        if (out[i] == NULL) {
            out = NULL;
        }
    }
    Py_DECREF(list);
    *count = (int)n;
    return out;
}

/* The CcOp of an operator node (ast.Add() ...), or -1 with an error. */
static int
lower_op(Lower *L, PyObject *op, PyObject *at)
{
    const AstClass *c = lw_ast_class(op);
    if (c == NULL || c->kind != A_OPERATOR) {
        lw_unsupported(L, op, "operator");
        return -1;
    }
    if (c->op < 0) {
        cc_error(L->fn, lw_loc_of(L, at), "the '%s' operator is not supported in a kernel",
                 c->what);
        return -1;
    }
    return c->op;
}

int
lw_node_op(Lower *L, PyObject *node)
{
    PyObject *op = lw_get(node, "op");
    if (op == NULL) {
        return -1;
    }
    int rc = lower_op(L, op, node);
    Py_DECREF(op);
    return rc;
}

/* binop := expr op expr  (a @ b: np.matmul(a, b)) */
static CcNode *
lower_binop(Lower *L, PyObject *node)
{
    PyObject *opnode = lw_get(node, "op");
    const AstClass *c = opnode != NULL ? lw_ast_class(opnode) : NULL;
    Py_XDECREF(opnode);
    if (c != NULL && strcmp(c->what, "@") == 0) {
        /* a @ b: np.matmul(a, b) */
        CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
        if (args == NULL || (args[0] = lw_lower_attr_expr(L, node, "left")) == NULL
            || (args[1] = lw_lower_attr_expr(L, node, "right")) == NULL) {
            return NULL;
        }
        return lw_builtin_call(L, node, cc_builtin_by_name("numpy.matmul"), args, 2);
    }
    CcNode *n = lw_new_node(L, ND_BINOP, node);
    int op = lw_node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lw_lower_attr_expr(L, node, "left");
    n->rhs = n->lhs ? lw_lower_attr_expr(L, node, "right") : NULL;
    return n->rhs ? lw_fold_int_op(L, n) : NULL;
}

/* unary := ('-' | '+' | '~' | 'not') expr */
static CcNode *
lower_unary(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_UNARY, node);
    int op = lw_node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lw_lower_attr_expr(L, node, "operand");
    return n->lhs ? lw_fold_int_op(L, n) : NULL;
}

/* boolop := expr ('and' | 'or') expr ... */
static CcNode *
lower_boolop(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_BOOLOP, node);
    int op = lw_node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    /* only the first operand is always evaluated */
    char *before = lw_save_assigned(L);
    n->args = lw_lower_expr_list(L, node, "values", &n->nargs);
    if (before != NULL) {
        memcpy(L->assigned, before, (size_t)L->nassigned);
    }
    return n->args ? n : NULL;
}


/* The letters "biufc" present in the str s, as bits. */
static long long
kind_letters(const char *s)
{
    long long mask = 0;
    for (; *s != '\0'; s++) {
        const char *at = strchr("biufc", *s);
        mask |= at != NULL ? 1LL << (at - "biufc") : 0;
    }
    return mask;
}

/*
 * a.dtype.kind == 'f' (!=, in 'fc', in ('f', 'c'), not in) and a.dtype ==
 * np.float32 (!=): questions about a's element kind, which typing answers
 * (AA_KIND_IS, AA_DTYPE_IS).  NULL without an error when node is not one;
 * *err on a TypingError.
 */
static CcNode *
lower_dtype_test(Lower *L, PyObject *node, int *err)
{
    PyObject *left = lw_get(node, "left"), *ops = lw_get(node, "ops");
    PyObject *cmps = lw_get(node, "comparators");
    CcNode *n = NULL;
    *err = 0;
    if (left == NULL || ops == NULL || cmps == NULL || PyList_Size(ops) != 1
        || lw_ast_kind(left) != A_ATTRIBUTE) {
        goto done;
    }
    const char *attr = lw_get_str(L, left, "attr");
    PyObject *owner = lw_get(left, "value");
    int kind = attr != NULL && strcmp(attr, "kind") == 0;
    PyObject *array_node = NULL;
    if (kind && owner != NULL && lw_ast_kind(owner) == A_ATTRIBUTE) {
        const char *oa = lw_get_str(L, owner, "attr");
        array_node = oa != NULL && strcmp(oa, "dtype") == 0 ? lw_get(owner, "value") : NULL;
    } else if (attr != NULL && strcmp(attr, "dtype") == 0) {
        array_node = Py_XNewRef(owner);
    }
    Py_XDECREF(owner);
    int local = 0;
    PyObject *obj = array_node != NULL ? lw_resolve_object(L, array_node, &local) : NULL;
    Py_XDECREF(obj);
    PyErr_Clear();
    if (array_node == NULL || !local) {
        Py_XDECREF(array_node);
        goto done;
    }
    const AstClass *c = lw_ast_class(PyList_GetItem(ops, 0));
    const char *op = c != NULL ? c->what : "";
    int eq = strcmp(op, "==") == 0, ne = strcmp(op, "!=") == 0;
    int in = strcmp(op, "in") == 0, not_in = strcmp(op, "not in") == 0;
    PyObject *rhs = PyList_GetItem(cmps, 0);
    long long value = -1;
    if (kind && (eq || ne || in || not_in)) {
        PyObject *str = lw_ast_kind(rhs) == A_CONSTANT ? lw_get(rhs, "value") : NULL;
        PyObject *items = lw_ast_kind(rhs) == A_TUPLE ? lw_get(rhs, "elts") : NULL;
        if (str != NULL && PyUnicode_Check(str)) {
            const char *s = PyUnicode_AsUTF8AndSize(str, NULL);
            value = (eq || ne) && strlen(s) != 1 ? 0 : kind_letters(s);
        } else if (items != NULL && (in || not_in)) {
            value = 0;
            for (Py_ssize_t i = 0; value >= 0 && i < PyList_Size(items); i++) {
                PyObject *e = PyList_GetItem(items, i);
                PyObject *v = lw_ast_kind(e) == A_CONSTANT ? lw_get(e, "value") : NULL;
                const char *s =
                    v != NULL && PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, NULL) : NULL;
                value = s == NULL ? -1 : strlen(s) == 1 ? value | kind_letters(s) : value;
                Py_XDECREF(v);
            }
        }
        Py_XDECREF(str);
        Py_XDECREF(items);
        PyErr_Clear();
        if (value < 0) {
            *err = 1;
            cc_error(L->fn, lw_loc_of(L, node),
                     "a.dtype.kind can be compared with a string constant only (== 'f', "
                     "in 'iu', in ('f', 'c'))");
        }
    } else if (!kind && (eq || ne)) {
        int rlocal;
        PyObject *dt = lw_ast_kind(rhs) == A_CONSTANT ? lw_get(rhs, "value")
                                                      : lw_resolve_object(L, rhs, &rlocal);
        TsKind k = TS_BOOL;
        if (dt == NULL) {
            PyErr_Clear();
            *err = 1;
            cc_error(L->fn, lw_loc_of(L, rhs),
                     "a.dtype can be compared with a dtype only (np.float32, 'f8' ...)");
        } else if (lw_dtype_kind(L, rhs, dt, &k) < 0) {
            *err = 1;
        }
        value = *err ? -1 : (long long)k;
        Py_XDECREF(dt);
    } else {
        *err = 1;
        cc_error(L->fn, lw_loc_of(L, node), "%s can only be tested with %s in a kernel",
                 kind ? "a.dtype.kind" : "a.dtype", kind ? "==, !=, in and not in" : "== and !=");
    }
    if (!*err) {
        CcNode *array = lw_lower_expr(L, array_node);
        n = array != NULL ? lw_array_attr(L, node, kind ? AA_KIND_IS : AA_DTYPE_IS, array) : NULL;
        *err = n == NULL;
        if (n != NULL) {
            n->ival = value | (ne || not_in ? CC_DTYPE_NEGATE : 0);
        }
    }
    Py_DECREF(array_node);
done:
    Py_XDECREF(left);
    Py_XDECREF(ops);
    Py_XDECREF(cmps);
    return n;
}

/* Whether an expression reads values only (names, constants, attributes,
 * subscripts and operators of those), so that lowering it twice computes
 * the same value. */
static int
pure_expr(PyObject *node)
{
    static const char *const parts[] = {"value",   "slice", "left",  "right",
                                        "operand", "lower", "upper", "step"};
    AstKind k = lw_ast_kind(node);
    if (node == Py_None || k == A_NAME || k == A_CONSTANT) {
        return 1;
    }
    if (k != A_ATTRIBUTE && k != A_SUBSCRIPT && k != A_BINOP && k != A_UNARYOP && k != A_SLICE
        && k != A_TUPLE) {
        return 0;
    }
    int pure = 1;
    for (size_t i = 0; pure && i < sizeof(parts) / sizeof(parts[0]); i++) {
        PyObject *p = PyObject_HasAttrString(node, parts[i]) ? lw_get(node, parts[i]) : NULL;
        pure = p == NULL || pure_expr(p);
        Py_XDECREF(p);
    }
    PyObject *elts = k == A_TUPLE ? lw_get(node, "elts") : NULL;
    for (Py_ssize_t i = 0; pure && elts != NULL && i < PyList_Size(elts); i++) {
        pure = pure_expr(PyList_GetItem(elts, i));
    }
    Py_XDECREF(elts);
    PyErr_Clear();
    return pure;
}

/*
 * x in (a, b, c), x in [a, b], x in {a, b} (and not in): x == a or x == b
 * ... (x != a and x != b ...), as Python tests a display's items, for an x
 * that only reads values (lowered once per item).  NULL without an error
 * when node is not one; *err on an error.
 */
static CcNode *
lower_membership(Lower *L, PyObject *node, int *err)
{
    PyObject *ops = lw_get(node, "ops"), *cmps = lw_get(node, "comparators");
    PyObject *left = lw_get(node, "left");
    const AstClass *c =
        ops != NULL && PyList_Size(ops) == 1 ? lw_ast_class(PyList_GetItem(ops, 0)) : NULL;
    const char *op = c != NULL ? c->what : "";
    int in = strcmp(op, "in") == 0, not_in = strcmp(op, "not in") == 0;
    PyObject *display = cmps != NULL && PyList_Size(cmps) == 1 ? PyList_GetItem(cmps, 0) : NULL;
    const AstClass *dc = display != NULL ? lw_ast_class(display) : NULL;
    PyObject *elts = NULL;
    CcNode *n = NULL;
    *err = 0;
    if ((!in && !not_in) || dc == NULL
        || (dc->kind != A_TUPLE && strcmp(dc->name, "List") != 0 && strcmp(dc->name, "Set") != 0)
        || (elts = lw_get(display, "elts")) == NULL) {
        goto done;
    }
    if (!pure_expr(left)) {
        *err = 1;
        cc_error(L->fn, lw_loc_of(L, node),
                 "'%s' a display needs a name (or a value read from one) on its left in a "
                 "kernel: assign the left operand to a name first",
                 op);
        goto done;
    }
    Py_ssize_t k = PyList_Size(elts);
    if (k == 0) {
        n = lw_new_node(L, ND_CONST, node); /* x in (): False */
        if (n != NULL) {
            n->ty = cc_scalar_type(TS_BOOL);
            n->ival = not_in;
            n->fval = not_in;
        }
        *err = n == NULL;
        goto done;
    }
    n = lw_new_node(L, ND_BOOLOP, node);
    if (n == NULL || (n->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)k)) == NULL) {
        *err = 1;
        n = NULL;
        goto done;
    }
    n->op = in ? OP_OR : OP_AND;
    for (Py_ssize_t i = 0; i < k; i++) {
        CcNode *t = lw_new_node(L, ND_COMPARE, node);
        if (t == NULL || (t->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2)) == NULL
            || (t->ops = cc_alloc(L->fn->arena, sizeof(CcOp))) == NULL
            || (t->args[0] = lw_lower_expr(L, left)) == NULL
            || (t->args[1] = lw_lower_expr(L, PyList_GetItem(elts, i))) == NULL) {
            *err = 1;
            n = NULL;
            goto done;
        }
        t->nargs = 2;
        t->ops[0] = in ? OP_EQ : OP_NE;
        n->args[n->nargs++] = t;
    }
done:
    Py_XDECREF(ops);
    Py_XDECREF(cmps);
    Py_XDECREF(left);
    Py_XDECREF(elts);
    return n;
}

/* compare := expr (cmpop expr)+ */
static CcNode *
lower_compare(Lower *L, PyObject *node)
{
    int err;
    CcNode *test = lower_dtype_test(L, node, &err);
    if (test != NULL || err) {
        return test;
    }
    if ((test = lower_membership(L, node, &err)) != NULL || err) {
        return test;
    }
    CcNode *n = lw_new_node(L, ND_COMPARE, node);
    PyObject *ops = lw_get(node, "ops"), *comparators = lw_get(node, "comparators");
    if (n == NULL || ops == NULL || comparators == NULL) {
        goto error;
    }
    Py_ssize_t k = PyList_Size(ops);
    n->nargs = (int)k + 1;
    n->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(k + 1));
    n->ops = cc_alloc(L->fn->arena, sizeof(CcOp) * (size_t)(k + 1));
    if (n->args == NULL || n->ops == NULL
        || (n->args[0] = lw_lower_attr_expr(L, node, "left")) == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        int op = lower_op(L, PyList_GetItem(ops, i), node);
        if (op < 0 || (n->args[i + 1] = lw_lower_expr(L, PyList_GetItem(comparators, i))) == NULL) {
            goto error;
        }
        n->ops[i] = (CcOp)op;
    }
    Py_DECREF(ops);
    Py_DECREF(comparators);
    return n;
error:
    Py_XDECREF(ops);
    Py_XDECREF(comparators);
    return NULL;
}

/* ifexp := expr 'if' expr 'else' expr */
static CcNode *
lower_ifexp(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_IFEXP, node);
    if (n == NULL || (n->cond = lw_lower_attr_expr(L, node, "test")) == NULL) {
        return NULL;
    }
    char *before = lw_save_assigned(L);
    if (before == NULL || (n->then = lw_lower_attr_expr(L, node, "body")) == NULL) {
        return NULL;
    }
    memcpy(L->assigned, before, (size_t)L->nassigned);
    n->els = lw_lower_attr_expr(L, node, "orelse");
    return n->els ? n : NULL;
}

/* name := identifier   (a local, or a frozen global/closure value) */
static CcNode *
lower_name(Lower *L, PyObject *node)
{
    const char *name = lw_get_str(L, node, "id");
    if (name == NULL) {
        return NULL;
    }
    CcVar *var = lw_local_var(L, name);
    /* a nested function's free name: bound where the function is called */
    const char *assigned = var != NULL ? lw_var_owner(L, name)->assigned : NULL;
    Lower *scope;
    if (var != NULL && !assigned[var->index] && lw_find_nested(L, name, &scope) != NULL) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "'%s' was given a function: a kernel calls it (%s(...)) or passes it on to "
                 "a function, but functions are not values in a kernel yet",
                 name, name);
        return NULL;
    }
    if (var != NULL) {
        if (!assigned[var->index] && !L->terminated) {
            cc_error(L->fn, lw_loc_of(L, node),
                     "local variable '%s' may be used before it is "
                     "assigned",
                     name);
            return NULL;
        }
        if (assigned[var->index] == LW_UNLESS_EMPTY && !L->terminated) {
            return lw_checked_read(L, node, var, name); /* a loop's, after it */
        }
        CcNode *n = lw_new_node(L, ND_VAR, node);
        if (n != NULL) {
            n->var = var;
        }
        return n;
    }
    if (lw_find_nested(L, name, &scope) != NULL) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "'%s' is a function nested in the kernel: a kernel calls it (%s(...)), but "
                 "functions are not values in a kernel yet",
                 name, name);
        return NULL;
    }
    PyObject *value = lw_resolve_global(L, name, lw_loc_of(L, node));
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lw_lower_frozen(L, node, value);
    Py_DECREF(value);
    return n;
}

CcNode *
lw_builtin_call(Lower *L, PyObject *at, int builtin, CcNode **args, int nargs)
{
    const CcBuiltin *b = cc_builtin(builtin);
    if (nargs < b->min_args || nargs > b->max_args) {
        cc_error(L->fn, lw_loc_of(L, at), "%s() takes %d%s argument(s), %d given", b->name,
                 b->min_args, b->max_args > b->min_args ? " or more" : "", nargs);
        return NULL;
    }
    if (b->flavor == FL_OPERATOR) {
        /* np.add(a, b) is a + b, np.less(a, b) is a < b, np.negative(a) is -a */
        CcOp op = (CcOp)b->op;
        int compare = op >= OP_EQ && op <= OP_GE;
        CcNode *n = lw_new_node(L, compare ? ND_COMPARE : nargs == 1 ? ND_UNARY : ND_BINOP, at);
        if (n == NULL) {
            return NULL;
        }
        n->op = op;
        n->lhs = args[0];
        if (compare) {
            if ((n->ops = cc_alloc(L->fn->arena, sizeof(CcOp))) == NULL) {
                return NULL;
            }
            n->ops[0] = op;
            n->args = args;
            n->nargs = 2;
            return n;
        }
        n->rhs = nargs == 2 ? args[1] : NULL;
        return lw_fold_int_op(L, n);
    }
    CcNode *n = lw_new_node(L, ND_CALL, at);
    if (n != NULL) {
        n->builtin = builtin;
        n->args = args;
        n->nargs = nargs;
        if (b->flavor == FL_SORT) {
            n->ival = b->op == S_SEARCHSORTED ? 0 : -1; /* side='left'; axis=-1 */
        }
    }
    return n != NULL ? lw_fold_int_call(L, n, b->flavor) : NULL;
}

/* ---- arrays ---- */

/* Nonzero when node is the name of a parameter never bound again: a
 * parameter's subscripts are always array indexing (a gufunc's arrays);
 * other subscripts by a constant are tuple items until typeinfer finds an
 * array there. */
int
lw_is_param_name(Lower *L, PyObject *node)
{
    if (lw_ast_kind(node) != A_NAME) {
        return 0;
    }
    const char *name = lw_get_str(L, node, "id");
    CcVar *var = name != NULL ? lw_find_var(L->fn, name) : NULL;
    PyErr_Clear();
    return var != NULL && var->is_param && !var->rebound;
}

/* A part of a slice (start, stop or step): NULL when left out (*ok stays 1). */
static CcNode *
slice_part(Lower *L, PyObject *slice, const char *attr, int *ok)
{
    PyObject *v = lw_get(slice, attr);
    if (v == NULL) {
        *ok = 0;
        return NULL;
    }
    CcNode *n = NULL;
    if (v != Py_None) {
        n = lw_lower_expr(L, v);
        *ok = n != NULL;
    }
    Py_DECREF(v);
    return n;
}

/* One index of a subscript: an expression, a slice, None/np.newaxis or `...`. */
static CcNode *
lower_index_item(Lower *L, PyObject *item)
{
    AstKind kind = lw_ast_kind(item);
    if (kind == A_SLICE) {
        int ok = 1;
        CcNode *n = lw_new_node(L, ND_SLICE, item);
        if (n == NULL) {
            return NULL;
        }
        n->lhs = slice_part(L, item, "lower", &ok);
        n->rhs = ok ? slice_part(L, item, "upper", &ok) : NULL;
        n->cond = ok ? slice_part(L, item, "step", &ok) : NULL;
        return ok ? n : NULL;
    }
    if (kind == A_CONSTANT || kind == A_NAME || kind == A_ATTRIBUTE) {
        PyObject *value = NULL;
        int local = 0;
        if (kind == A_CONSTANT) {
            value = lw_get(item, "value");
        } else if ((value = lw_resolve_object(L, item, &local)) == NULL) {
            PyErr_Clear(); /* lw_lower_expr reports it again, or it is a local */
        }
        int none = value == Py_None, ellipsis = value == Py_Ellipsis;
        Py_XDECREF(value);
        if (none || ellipsis) {
            return lw_new_node(L, none ? ND_NEWAXIS : ND_ELLIPSIS, item);
        }
    }
    return lw_lower_expr(L, item);
}

/* The array `x` of an `x.flat` node (new reference), or NULL (no error). */
PyObject *
lw_flat_base(Lower *L, PyObject *node)
{
    if (node == NULL || lw_ast_kind(node) != A_ATTRIBUTE) {
        return NULL;
    }
    const char *attr = lw_get_str(L, node, "attr");
    PyErr_Clear();
    return attr != NULL && strcmp(attr, "flat") == 0 ? lw_get(node, "value") : NULL;
}

/* a[.flatindex(k, a.shape)] for base (the array `a` of a.flat) and k:
 * the element k in C order, negative from the end. */
CcNode *
lw_flat_element(Lower *L, PyObject *at, PyObject *base, CcNode *k)
{
    CcNode *n = lw_new_node(L, ND_INDEX, at);
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3);
    CcNode *a = lw_lower_expr(L, base), *shape_of = a != NULL ? lw_lower_expr(L, base) : NULL;
    CcNode *shape = shape_of != NULL ? lw_array_attr(L, at, AA_SHAPE, shape_of) : NULL;
    if (n == NULL || args == NULL || shape == NULL || k == NULL) {
        return NULL;
    }
    args[0] = k;
    args[1] = shape;
    n->lhs = a;
    n->nargs = 1;
    if ((n->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (n->args[0] = lw_hidden_call(L, at, ".flatindex", args, 2)) == NULL) {
        return NULL;
    }
    return n;
}

/* a.flat[k]: lw_flat_element; NULL without an error when node is not one. */
CcNode *
lw_lower_flat_index(Lower *L, PyObject *node, int *err)
{
    PyObject *value = lw_get(node, "value");
    PyObject *base = lw_flat_base(L, value);
    Py_XDECREF(value);
    *err = 0;
    if (base == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *slice = lw_get(node, "slice");
    CcNode *n = NULL;
    AstKind k = slice != NULL ? lw_ast_kind(slice) : A_TUPLE;
    if (k == A_TUPLE || k == A_SLICE) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a.flat takes one integer index in a kernel (a.flat[k]; to loop, for x in "
                 "a.flat)");
    } else {
        n = lw_flat_element(L, node, base, lw_lower_expr(L, slice));
    }
    *err = n == NULL;
    Py_XDECREF(slice);
    Py_DECREF(base);
    return n;
}

/* index := expr '[' item (',' item)* ']'     item: expr | slice | None | ...
 *   (typeinfer checks that expr is an array) */
CcNode *
lw_lower_index(Lower *L, PyObject *node)
{
    int flat_err;
    CcNode *flat = lw_lower_flat_index(L, node, &flat_err);
    if (flat != NULL || flat_err) {
        return flat;
    }
    CcNode *n = lw_new_node(L, ND_INDEX, node);
    PyObject *slice = lw_get(node, "slice");
    PyObject *elts = NULL;
    CcNode *result = NULL;
    if (n == NULL || slice == NULL || (n->lhs = lw_lower_attr_expr(L, node, "value")) == NULL) {
        goto done;
    }
    if (lw_ast_kind(slice) == A_TUPLE) {
        if ((elts = lw_get(slice, "elts")) == NULL) {
            goto done;
        }
        n->nargs = (int)PyList_Size(elts);
    } else {
        n->nargs = 1;
    }
    if ((n->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(n->nargs + 1))) == NULL) {
        goto done;
    }
    for (int i = 0; i < n->nargs; i++) {
        PyObject *item = elts != NULL ? PyList_GetItem(elts, i) : slice;
        if ((n->args[i] = lower_index_item(L, item)) == NULL) {
            goto done;
        }
    }
    result = n;
done:
    Py_XDECREF(slice);
    Py_XDECREF(elts);
    return result;
}

/* The attributes of an array: a.shape, a.size, a.ndim (and len(a)). */
CcNode *
lw_array_attr(Lower *L, PyObject *at, CcArrayAttr which, CcNode *array)
{
    CcNode *n = lw_new_node(L, ND_ARRAYATTR, at);
    if (n != NULL) {
        n->index = which;
        n->lhs = array;
    }
    return n;
}

/* attribute := expr '.' ('real' | 'imag' | 'shape' | 'size' | 'ndim')  |  module '.' name */
static CcNode *
lower_attribute(Lower *L, PyObject *node)
{
    int local;
    PyObject *value = lw_resolve_object(L, node, &local);
    if (value != NULL) {
        CcNode *n = lw_lower_frozen(L, node, value);
        Py_DECREF(value);
        return n;
    }
    if (!local) {
        return NULL;
    }
    const char *attr = lw_get_str(L, node, "attr");
    if (attr == NULL) {
        return NULL;
    }
    static const struct {
        const char *name;
        CcArrayAttr which;
    } array_attrs[] = {{"shape", AA_SHAPE}, {"size", AA_SIZE},       {"ndim", AA_NDIM},
                       {"T", AA_T},         {"strides", AA_STRIDES}, {"itemsize", AA_ITEMSIZE}};
    for (size_t i = 0; i < sizeof(array_attrs) / sizeof(array_attrs[0]); i++) {
        if (strcmp(attr, array_attrs[i].name) == 0) {
            CcNode *array = lw_lower_attr_expr(L, node, "value");
            return array != NULL ? lw_array_attr(L, node, array_attrs[i].which, array) : NULL;
        }
    }
    if (strcmp(attr, "flat") == 0) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a.flat can be indexed (a.flat[k]) or looped over (for x in a.flat) in a "
                 "kernel, not used as a value");
        return NULL;
    }
    CcFlavor flavor = strcmp(attr, "real") == 0 ? FL_REAL : FL_IMAG;
    if (strcmp(attr, "real") != 0 && strcmp(attr, "imag") != 0) {
        /* the value's own error first (P(x).x, P a jitclass): it names the construct */
        if (lw_lower_attr_expr(L, node, "value") != NULL) {
            cc_error(L->fn, lw_loc_of(L, node),
                     "attribute '%s' is not supported on a value in a kernel (only .real, .imag, "
                     "and on arrays .shape, .size, .ndim, .T, .strides and .itemsize)",
                     attr);
        }
        return NULL;
    }
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *));
    if (args == NULL || (args[0] = lw_lower_attr_expr(L, node, "value")) == NULL) {
        return NULL;
    }
    return lw_builtin_call(L, node, cc_builtin_attr(flavor), args, 1);
}

static CcNode *
lower_expr_kind(Lower *L, PyObject *node)
{
    switch (lw_ast_kind(node)) {
    case A_BINOP:
        return lower_binop(L, node);
    case A_UNARYOP:
        return lower_unary(L, node);
    case A_BOOLOP:
        return lower_boolop(L, node);
    case A_COMPARE:
        return lower_compare(L, node);
    case A_IFEXP:
        return lower_ifexp(L, node);
    case A_CALL:
        return lw_lower_call(L, node);
    case A_CONSTANT:
        return lw_lower_constant(L, node);
    case A_NAME:
        return lower_name(L, node);
    case A_ATTRIBUTE:
        return lower_attribute(L, node);
    case A_TUPLE:
        return lw_lower_tuple(L, node);
    case A_SUBSCRIPT:
        return lw_lower_subscript(L, node);
    default:
        lw_unsupported(L, node, "expression");
        return NULL;
    }
}

CcNode *
lw_lower_expr(Lower *L, PyObject *node)
{
    CcNode *n = lw_enter(L, node) == 0 ? lower_expr_kind(L, node) : NULL;
    L->fn->depth--;
    return n;
}
