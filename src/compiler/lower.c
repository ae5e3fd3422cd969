/*
 * lower.c - Python `ast` objects -> the untyped IR tree.
 *
 * The decorator hands over the FunctionDef node parsed from the function's
 * source.  This pass walks it (switching on the AstKinds of astkind.c),
 * builds CcNodes in the arena, and resolves every name: a local variable
 * (any name stored to in the function, as in Python), else a closure cell,
 * a global or a builtin whose value is frozen now - a number, a NumPy
 * scalar, a module (for `math.exp`) or a function that builtins.c knows.
 * resolve.c reads and freezes those and folds arithmetic on Python int
 * constants; inline.c lowers a device function's body where it is called.
 * This file also checks definite assignment: a local read on a path where
 * it may not be assigned is a TypingError at that line.
 *
 * Each lowering function carries the Python grammar it accepts above it.
 */
#include "compiler/lower.h"

#include <limits.h>
#include <string.h>

/* ---- the lowering context ---- */

/* node.attr (new reference), or NULL.  Nothing is looked up while an
 * exception is pending: lowering goes on after a failed step only to
 * unwind, and Python must not be entered with an exception set (it may
 * replace or drop it). */
PyObject *
lw_get(PyObject *node, const char *attr)
{
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyObject_GetAttrString(node, attr);
}

/* Where node is; {0, 0} when it says nothing.  An exception pending when
 * it is called stays pending (callers report errors at a location). */
CcLoc
lw_loc_of(Lower *L, PyObject *node)
{
    CcLoc loc = {0, 0};
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *line = lw_get(node, "lineno"), *col = lw_get(node, "col_offset");
    if (line != NULL && col != NULL) {
        loc.line = (int)PyLong_AsLong(line) + (L->src ? L->src->line_offset : L->fn->line_offset);
        loc.col = (int)PyLong_AsLong(col);
        loc.src = L->src;
    }
    Py_XDECREF(line);
    Py_XDECREF(col);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return loc;
}

/*
 * The most IR nodes a kernel may have once its device functions are
 * inlined.  Compile time grows faster than the size of a function (LLVM's
 * scheduling of one long block), and inlining can make a small source
 * large (a helper calling the one below it twice, 20 levels deep): this
 * bound keeps every compilation to seconds.  A real kernel has hundreds.
 */
#define MAX_NODES 100000

CcNode *
lw_new_node(Lower *L, CcNodeKind kind, PyObject *ast)
{
    if (++L->fn->nnodes > MAX_NODES) {
        if (!PyErr_Occurred()) {
            cc_error(L->fn,
                     ast != NULL   ? lw_loc_of(L, ast)
                     : L->fn->body ? L->fn->body->loc
                                   : (CcLoc){0, 0},
                     "the kernel is too large: more than %d operations once its device functions "
                     "are inlined",
                     MAX_NODES);
        }
        return NULL;
    }
    CcNode *n = cc_alloc(L->fn->arena, sizeof(CcNode));
    if (n != NULL) {
        n->kind = kind;
        n->loc = ast != NULL ? lw_loc_of(L, ast) : L->fn->body ? L->fn->body->loc : (CcLoc){0, 0};
    }
    return n;
}

int
cc_node_any(const CcNode *n, int (*visit)(const CcNode *n, void *ctx), void *ctx)
{
    if (n == NULL) {
        return 0;
    }
    int r = visit(n, ctx);
    const CcNode *kids[5] = {n->lhs, n->rhs, n->cond, n->then, n->els};
    for (int i = 0; r == 0 && i < 5; i++) {
        r = cc_node_any(kids[i], visit, ctx);
    }
    for (int i = 0; r == 0 && n->args != NULL && i < n->nargs; i++) {
        r = cc_node_any(n->args[i], visit, ctx);
    }
    return r;
}

/* Adds the names an import statement binds to L->unbound.  0/-1. */
static int
note_unbound(Lower *L, PyObject *node)
{
    PyObject *aliases = lw_get(node, "names");
    if (aliases == NULL || (L->unbound == NULL && (L->unbound = PySet_New(NULL)) == NULL)) {
        Py_XDECREF(aliases);
        return -1;
    }
    PyObject *dot = PyUnicode_FromString(".");
    int rc = dot != NULL ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_Size(aliases); i++) {
        PyObject *alias = PyList_GetItem(aliases, i);
        PyObject *as = lw_get(alias, "asname");
        PyObject *name = as == NULL ? NULL : as != Py_None ? Py_NewRef(as) : lw_get(alias, "name");
        /* `import a.b` binds a */
        PyObject *parts = name != NULL ? PyUnicode_Split(name, dot, 1) : NULL;
        rc = parts != NULL && PySet_Add(L->unbound, PyList_GetItem(parts, 0)) == 0 ? 0 : -1;
        Py_XDECREF(parts);
        Py_XDECREF(name);
        Py_XDECREF(as);
    }
    Py_XDECREF(dot);
    Py_DECREF(aliases);
    return rc;
}

static int
unsupported(Lower *L, PyObject *node, const char *context)
{
    const AstClass *c = lw_ast_class(node);
    CcLoc loc = lw_loc_of(L, node);
    if (c != NULL && strncmp(c->name, "Import", 6) == 0 && L->prefix == NULL
        && note_unbound(L, node) < 0) {
        return -1;
    }
    if (c != NULL && c->what != NULL) {
        return cc_error(L->fn, loc, "%s are not supported in a kernel", c->what);
    }
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(node), "__name__");
    const char *s = name != NULL ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    int rc =
        cc_error(L->fn, loc, "%s '%s' is not supported in a kernel", context, s != NULL ? s : "?");
    Py_XDECREF(name);
    return rc;
}

/* ---- variables: an array in creation order, found by name through a
 * hash index (inlining a device function adds its variables, renamed) ---- */

static size_t
name_hash(const char *name)
{
    size_t h = 14695981039346656037ULL; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h = (h ^ *c) * 1099511628211ULL;
    }
    return h;
}

/* The slot of name in the index: its variable, or the empty slot for it. */
static CcVar **
var_slot(CcFunction *fn, const char *name)
{
    size_t mask = (size_t)fn->var_index_cap - 1;
    for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
        CcVar **slot = &fn->var_index[i];
        if (*slot == NULL || strcmp((*slot)->name, name) == 0) {
            return slot;
        }
    }
}

static CcVar *
find_var(CcFunction *fn, const char *name)
{
    return fn->var_index_cap > 0 ? *var_slot(fn, name) : NULL;
}

/* Makes room for one more variable: the array doubles, the index stays at
 * most half full.  0/-1. */
static int
grow_vars(CcFunction *fn)
{
    if (fn->nvars == fn->cap_vars) {
        int cap = fn->cap_vars ? 2 * fn->cap_vars : 16;
        CcVar **vars = cc_alloc(fn->arena, sizeof(CcVar *) * (size_t)cap);
        if (vars == NULL) {
            return -1;
        }
        if (fn->nvars) {
            memcpy(vars, fn->vars, sizeof(CcVar *) * (size_t)fn->nvars);
        }
        fn->vars = vars;
        fn->cap_vars = cap;
    }
    if (2 * (fn->nvars + 1) > fn->var_index_cap) {
        int cap = fn->var_index_cap ? 2 * fn->var_index_cap : 32;
        CcVar **index = cc_alloc(fn->arena, sizeof(CcVar *) * (size_t)cap);
        if (index == NULL) {
            return -1;
        }
        fn->var_index = index;
        fn->var_index_cap = cap;
        for (int i = 0; i < fn->nvars; i++) {
            *var_slot(fn, fn->vars[i]->name) = fn->vars[i];
        }
    }
    return 0;
}

/*
 * The most variables a kernel may have once its device functions are
 * inlined (each inlined call adds its own).  LLVM's register allocation
 * grows faster than linearly with values live across a loop (5,000 in one
 * loop take seconds): this bound, with MAX_NODES, keeps every compilation
 * to seconds.
 */
#define MAX_VARS 5000

CcVar *
lw_add_var(CcFunction *fn, const char *name)
{
    CcVar *v = find_var(fn, name);
    if (v != NULL) {
        return v;
    }
    if (fn->nvars >= MAX_VARS) {
        cc_error(fn, fn->body != NULL ? fn->body->loc : (CcLoc){0, 0},
                 "the kernel has more than %d variables once its device functions are inlined",
                 MAX_VARS);
        return NULL;
    }
    if (grow_vars(fn) < 0) {
        return NULL;
    }
    v = cc_alloc(fn->arena, sizeof(CcVar));
    if (v == NULL || (v->name = cc_strdup(fn->arena, name)) == NULL) {
        return NULL;
    }
    *var_slot(fn, v->name) = v;
    v->index = fn->nvars;
    fn->vars[fn->nvars++] = v;
    return v;
}

/* A local's name as stored: an inlined function's locals carry its prefix
 * so that they never meet the caller's (or another inlining's). */
const char *
lw_scoped(Lower *L, const char *name)
{
    if (L->prefix == NULL || name == NULL) {
        return name;
    }
    size_t n = strlen(L->prefix) + strlen(name) + 1;
    char *s = cc_alloc(L->fn->arena, n);
    if (s != NULL) {
        snprintf(s, n, "%s%s", L->prefix, name);
    }
    return s;
}

CcVar *
lw_local_var(Lower *L, const char *name)
{
    const char *s = lw_scoped(L, name);
    return s != NULL ? find_var(L->fn, s) : NULL;
}

/* A str attribute of node copied into the arena (e.g. Name.id). */
const char *
lw_get_str(Lower *L, PyObject *node, const char *attr)
{
    PyObject *s = lw_get(node, attr);
    if (s == NULL) {
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8AndSize(s, NULL);
    char *copy = text != NULL ? cc_strdup(L->fn->arena, text) : NULL;
    Py_DECREF(s);
    return copy;
}

/* "np.fft.fft()": a call's callee as its source spells it (ast.unparse), or
 * NULL (no exception) for a callee too long to quote. */
static PyObject *
callee_spelling(PyObject *func)
{
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *text = ast != NULL ? PyObject_CallMethod(ast, "unparse", "O", func) : NULL;
    Py_XDECREF(ast);
    PyObject *r = text != NULL && PyUnicode_Check(text) && PyUnicode_GetLength(text) <= 60
                      ? PyUnicode_FromFormat("%U()", text)
                      : NULL;
    Py_XDECREF(text);
    PyErr_Clear();
    return r;
}

/* Every name stored to anywhere in the function is local (Python's rule). */
int
lw_collect_locals(Lower *L, PyObject *funcdef)
{
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *walk = ast ? PyObject_CallMethod(ast, "walk", "O", funcdef) : NULL;
    PyObject *it = walk ? PyObject_GetIter(walk) : NULL;
    PyObject *node;
    int rc = it ? 0 : -1;
    while (rc == 0 && (node = PyIter_Next(it)) != NULL) {
        if (lw_ast_kind(node) == A_NAME) {
            PyObject *ctx = lw_get(node, "ctx");
            if (ctx == NULL) {
                rc = -1;
            } else if (lw_ast_kind(ctx) == A_STORE) {
                const char *name = lw_get_str(L, node, "id");
                name = lw_scoped(L, name);
                CcVar *v = name != NULL ? lw_add_var(L->fn, name) : NULL;
                rc = v == NULL ? -1 : 0;
                if (v != NULL && v->is_param) {
                    v->rebound = 1; /* its name may hold a tuple (is_param_name) */
                }
            }
            Py_XDECREF(ctx);
        }
        Py_DECREF(node);
    }
    if (rc == 0 && PyErr_Occurred()) {
        rc = -1;
    }
    Py_XDECREF(it);
    Py_XDECREF(walk);
    Py_XDECREF(ast);
    return rc;
}

/* ---- definite assignment ---- */

static char *
save_assigned(Lower *L)
{
    char *copy = cc_alloc(L->fn->arena, (size_t)L->nassigned + 1);
    if (copy != NULL) {
        memcpy(copy, L->assigned, (size_t)L->nassigned);
    }
    return copy;
}

/* After a branch, a variable is assigned if it is on every path that goes
 * on; a terminated path does not go on.  LW_UNLESS_EMPTY on one path
 * (bound unless a loop ran no iteration) stays that (lw_weaker). */
static void
merge_assigned(Lower *L, const char *a, int a_term, const char *b, int b_term)
{
    for (int i = 0; i < L->nassigned; i++) {
        L->assigned[i] = a_term ? b[i] : b_term ? a[i] : lw_weaker(a[i], b[i]);
    }
    L->terminated = a_term && b_term;
}

/* ---- expressions ---- */

static CcNode *lower_expr(Lower *L, PyObject *node);

/* Lowers node.attr (an expression) into *out. */
static CcNode *
lower_attr_expr(Lower *L, PyObject *node, const char *attr)
{
    PyObject *value = lw_get(node, attr);
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lower_expr(L, value);
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
        out[i] = lower_expr(L, PyList_GetItem(list, i));
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
        unsupported(L, op, "operator");
        return -1;
    }
    if (c->op < 0) {
        cc_error(L->fn, lw_loc_of(L, at), "the '%s' operator is not supported in a kernel",
                 c->what);
        return -1;
    }
    return c->op;
}

static int
node_op(Lower *L, PyObject *node)
{
    PyObject *op = lw_get(node, "op");
    if (op == NULL) {
        return -1;
    }
    int rc = lower_op(L, op, node);
    Py_DECREF(op);
    return rc;
}

static CcNode *builtin_call(Lower *L, PyObject *at, int builtin, CcNode **args, int nargs);

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
        if (args == NULL || (args[0] = lower_attr_expr(L, node, "left")) == NULL
            || (args[1] = lower_attr_expr(L, node, "right")) == NULL) {
            return NULL;
        }
        return builtin_call(L, node, cc_builtin_by_name("numpy.matmul"), args, 2);
    }
    CcNode *n = lw_new_node(L, ND_BINOP, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lower_attr_expr(L, node, "left");
    n->rhs = n->lhs ? lower_attr_expr(L, node, "right") : NULL;
    return n->rhs ? lw_fold_int_op(L, n) : NULL;
}

/* unary := ('-' | '+' | '~' | 'not') expr */
static CcNode *
lower_unary(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_UNARY, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lower_attr_expr(L, node, "operand");
    return n->lhs ? lw_fold_int_op(L, n) : NULL;
}

/* boolop := expr ('and' | 'or') expr ... */
static CcNode *
lower_boolop(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_BOOLOP, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    /* only the first operand is always evaluated */
    char *before = save_assigned(L);
    n->args = lw_lower_expr_list(L, node, "values", &n->nargs);
    if (before != NULL) {
        memcpy(L->assigned, before, (size_t)L->nassigned);
    }
    return n->args ? n : NULL;
}

static int dtype_kind(Lower *L, PyObject *at, PyObject *obj, TsKind *out);
static CcNode *array_attr(Lower *L, PyObject *at, CcArrayAttr which, CcNode *array);

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
        } else if (dtype_kind(L, rhs, dt, &k) < 0) {
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
        CcNode *array = lower_expr(L, array_node);
        n = array != NULL ? array_attr(L, node, kind ? AA_KIND_IS : AA_DTYPE_IS, array) : NULL;
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

/* compare := expr (cmpop expr)+ */
static CcNode *
lower_compare(Lower *L, PyObject *node)
{
    int err;
    CcNode *test = lower_dtype_test(L, node, &err);
    if (test != NULL || err) {
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
        || (n->args[0] = lower_attr_expr(L, node, "left")) == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        int op = lower_op(L, PyList_GetItem(ops, i), node);
        if (op < 0 || (n->args[i + 1] = lower_expr(L, PyList_GetItem(comparators, i))) == NULL) {
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
    if (n == NULL || (n->cond = lower_attr_expr(L, node, "test")) == NULL) {
        return NULL;
    }
    char *before = save_assigned(L);
    if (before == NULL || (n->then = lower_attr_expr(L, node, "body")) == NULL) {
        return NULL;
    }
    memcpy(L->assigned, before, (size_t)L->nassigned);
    n->els = lower_attr_expr(L, node, "orelse");
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
    if (var != NULL) {
        if (!L->assigned[var->index] && !L->terminated) {
            cc_error(L->fn, lw_loc_of(L, node),
                     "local variable '%s' may be used before it is "
                     "assigned",
                     name);
            return NULL;
        }
        if (L->assigned[var->index] == LW_UNLESS_EMPTY && !L->terminated) {
            return lw_checked_read(L, node, var, name); /* a loop's, after it */
        }
        CcNode *n = lw_new_node(L, ND_VAR, node);
        if (n != NULL) {
            n->var = var;
        }
        return n;
    }
    PyObject *value = lw_resolve_global(L, name, lw_loc_of(L, node));
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lw_lower_frozen(L, node, value);
    Py_DECREF(value);
    return n;
}

static CcNode *
builtin_call(Lower *L, PyObject *at, int builtin, CcNode **args, int nargs)
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
static int
is_param_name(Lower *L, PyObject *node)
{
    if (lw_ast_kind(node) != A_NAME) {
        return 0;
    }
    const char *name = lw_get_str(L, node, "id");
    CcVar *var = name != NULL ? find_var(L->fn, name) : NULL;
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
        n = lower_expr(L, v);
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
            PyErr_Clear(); /* lower_expr reports it again, or it is a local */
        }
        int none = value == Py_None, ellipsis = value == Py_Ellipsis;
        Py_XDECREF(value);
        if (none || ellipsis) {
            return lw_new_node(L, none ? ND_NEWAXIS : ND_ELLIPSIS, item);
        }
    }
    return lower_expr(L, item);
}

static CcNode *hidden_call(Lower *L, PyObject *at, const char *name, CcNode **args, int nargs);

/* The array `x` of an `x.flat` node (new reference), or NULL (no error). */
static PyObject *
flat_base(Lower *L, PyObject *node)
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
static CcNode *
flat_element(Lower *L, PyObject *at, PyObject *base, CcNode *k)
{
    CcNode *n = lw_new_node(L, ND_INDEX, at);
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3);
    CcNode *a = lower_expr(L, base), *shape_of = a != NULL ? lower_expr(L, base) : NULL;
    CcNode *shape = shape_of != NULL ? array_attr(L, at, AA_SHAPE, shape_of) : NULL;
    if (n == NULL || args == NULL || shape == NULL || k == NULL) {
        return NULL;
    }
    args[0] = k;
    args[1] = shape;
    n->lhs = a;
    n->nargs = 1;
    if ((n->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (n->args[0] = hidden_call(L, at, ".flatindex", args, 2)) == NULL) {
        return NULL;
    }
    return n;
}

/* a.flat[k]: flat_element; NULL without an error when node is not one. */
static CcNode *
lower_flat_index(Lower *L, PyObject *node, int *err)
{
    PyObject *value = lw_get(node, "value");
    PyObject *base = flat_base(L, value);
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
        n = flat_element(L, node, base, lower_expr(L, slice));
    }
    *err = n == NULL;
    Py_XDECREF(slice);
    Py_DECREF(base);
    return n;
}

/* index := expr '[' item (',' item)* ']'     item: expr | slice | None | ...
 *   (typeinfer checks that expr is an array) */
static CcNode *
lower_index(Lower *L, PyObject *node)
{
    int flat_err;
    CcNode *flat = lower_flat_index(L, node, &flat_err);
    if (flat != NULL || flat_err) {
        return flat;
    }
    CcNode *n = lw_new_node(L, ND_INDEX, node);
    PyObject *slice = lw_get(node, "slice");
    PyObject *elts = NULL;
    CcNode *result = NULL;
    if (n == NULL || slice == NULL || (n->lhs = lower_attr_expr(L, node, "value")) == NULL) {
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
static CcNode *
array_attr(Lower *L, PyObject *at, CcArrayAttr which, CcNode *array)
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
            CcNode *array = lower_attr_expr(L, node, "value");
            return array != NULL ? array_attr(L, node, array_attrs[i].which, array) : NULL;
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
        cc_error(L->fn, lw_loc_of(L, node),
                 "attribute '%s' is not supported on a value in a kernel (only .real, .imag, "
                 "and on arrays .shape, .size, .ndim, .T, .strides and .itemsize)",
                 attr);
        return NULL;
    }
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *));
    if (args == NULL || (args[0] = lower_attr_expr(L, node, "value")) == NULL) {
        return NULL;
    }
    return builtin_call(L, node, cc_builtin_attr(flavor), args, 1);
}

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
static int
dtype_kind(Lower *L, PyObject *at, PyObject *obj, TsKind *out)
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
        rc = dtype_kind(L, value, obj, &k);
        n->index = 1 + (int)k;
        Py_DECREF(obj);
    } else if (local && attr != NULL && strcmp(attr, "dtype") == 0) {
        PyErr_Clear();
        n->rhs = lower_attr_expr(L, value, "value");
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
        CcNode *e = v != NULL ? lower_expr(L, v) : NULL;
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
            CcNode *k = none ? NULL : lower_expr(L, value);
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
    if (args == NULL || (args[0] = lower_attr_expr(L, func, "value")) == NULL) {
        return NULL;
    }
    CcNode *n = builtin_call(L, node, cc_builtin_by_name("numpy.copy"), args, 1);
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
        if (args != NULL && (n->rhs = lower_attr_expr(L, owner, "value")) != NULL) {
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
                 ".partition(), .searchsorted() and .copy())",
                 attr);
        return NULL;
    }
    int nargs;
    CcNode **rest = lw_lower_expr_list(L, node, "args", &nargs);
    CcNode **args =
        rest != NULL ? cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(nargs + 2)) : NULL;
    if (args == NULL || (args[0] = lower_attr_expr(L, func, "value")) == NULL) {
        return NULL;
    }
    memcpy(args + 1, rest, sizeof(CcNode *) * (size_t)nargs);
    CcNode *n = builtin_call(L, node, builtin, args, nargs + 1);
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
        if ((out[i] = lower_expr(L, PyList_GetItem(list, i))) == NULL) {
            out = NULL;
        }
    }
    Py_DECREF(list); /* the node holds the list, and the list *dtype */
    *count = (int)n;
    return out;
}

/* call := func '(' args ')'    func: a builtin, len, a device function, a type
 *                              (a cast), or a method (method_call) */
static CcNode *
lower_call(Lower *L, PyObject *node)
{
    PyObject *func = lw_get(node, "func"), *keywords = lw_get(node, "keywords"), *dtype = NULL;
    CcNode *n = NULL;
    if (func == NULL || keywords == NULL) {
        goto done;
    }
    int local, nargs;
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
            || cc_builtin(builtin)->flavor == FL_ARANGE);
    if (PyList_Size(keywords) > 0 && !kw_ok && !lw_is_device_function(callee)) {
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
            n = array_attr(L, node, AA_LEN, args[0]);
        }
        goto done;
    }
    TsType cast;
    if (builtin == -1 && ts_type_check(callee, &cast) && cast.ndim == 0 && cast.kind < TS_NSCALAR) {
        builtin = cc_builtin_cast(cast.kind); /* numbavec.float32(x): a cast */
    }
    if (builtin < 0) {
        if (builtin == -1) {
            PyObject *mod = PyObject_GetAttrString(callee, "__module__");
            PyObject *fname = PyObject_GetAttrString(callee, "__name__");
            PyErr_Clear();
            int numpy = mod != NULL && PyUnicode_Check(mod)
                        && strncmp(PyUnicode_AsUTF8AndSize(mod, NULL), "numpy", 5) == 0;
            /* as written (np.fft.fft(), not np.fft() or <function fft at 0x...>) */
            PyObject *r = callee_spelling(func);
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
        n = builtin_call(L, node, builtin, args, nargs);
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
static CcNode *
lower_constant(Lower *L, PyObject *node)
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
static CcNode *
lower_tuple(Lower *L, PyObject *node)
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
static CcNode *
lower_subscript(Lower *L, PyObject *node)
{
    int flat_err;
    CcNode *flat = lower_flat_index(L, node, &flat_err);
    if (flat != NULL || flat_err) {
        return flat;
    }
    PyObject *base = lw_get(node, "value");
    int array = base != NULL && (is_param_name(L, base) || !is_constant_subscript(node));
    Py_XDECREF(base);
    if (array) {
        return lower_index(L, node);
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
    if ((n->lhs = lower_attr_expr(L, node, "value")) == NULL) {
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

CcNode *
lw_lower_expr(Lower *L, PyObject *node)
{
    return lower_expr(L, node);
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
        return lower_call(L, node);
    case A_CONSTANT:
        return lower_constant(L, node);
    case A_NAME:
        return lower_name(L, node);
    case A_ATTRIBUTE:
        return lower_attribute(L, node);
    case A_TUPLE:
        return lower_tuple(L, node);
    case A_SUBSCRIPT:
        return lower_subscript(L, node);
    default:
        unsupported(L, node, "expression");
        return NULL;
    }
}

/* ---- how deep a tree may be (cc_depth_budget) ---- */

/* One more level of nesting at node; -1 with a TypingError past the budget. */
static int
enter(Lower *L, PyObject *node)
{
    if (++L->fn->depth <= L->fn->max_depth) {
        return 0;
    }
    if (L->fn->max_depth < CC_MAX_DEPTH) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "the kernel is nested too deeply for this thread's stack (more than %d levels "
                 "here; compile it on a thread with a larger stack)",
                 L->fn->max_depth);
    } else {
        cc_error(L->fn, lw_loc_of(L, node),
                 "the kernel is nested too deeply (more than %d levels of expressions, "
                 "statements and inlined device functions)",
                 CC_MAX_DEPTH);
    }
    return -1;
}

static CcNode *
lower_expr(Lower *L, PyObject *node)
{
    CcNode *n = enter(L, node) == 0 ? lower_expr_kind(L, node) : NULL;
    L->fn->depth--;
    return n;
}

/* ---- statements ---- */

static CcVar *
target_var(Lower *L, PyObject *target)
{
    if (lw_ast_kind(target) != A_NAME) {
        if (lw_ast_kind(target) == A_SUBSCRIPT) {
            cc_error(L->fn, lw_loc_of(L, target),
                     "array items cannot be targets of a tuple assignment in a kernel "
                     "(assign them one by one)");
        } else {
            cc_error(L->fn, lw_loc_of(L, target), "only names can be assigned to in a kernel");
        }
        return NULL;
    }
    const char *name = lw_get_str(L, target, "id");
    return name != NULL ? lw_local_var(L, name) : NULL;
}

static void
mark_assigned(Lower *L, CcVar *var)
{
    L->assigned[var->index] = 1;
}

/* setitem := name '[' expr (',' expr)* ']' '=' expr     (arrays) */
static CcNode *
lower_setitem(Lower *L, PyObject *stmt, PyObject *target, CcNode *value)
{
    CcNode *n = lw_new_node(L, ND_SETITEM, stmt);
    if (n == NULL || (n->lhs = lower_index(L, target)) == NULL) {
        return NULL;
    }
    n->rhs = value;
    return n;
}

/* Assigns value (already lowered) to target: a name, a tuple of names, or
 * an element of an array parameter. */
static CcNode *
assign_to(Lower *L, PyObject *stmt, PyObject *target, CcNode *value)
{
    if (lw_ast_kind(target) == A_SUBSCRIPT) {
        return lower_setitem(L, stmt, target, value); /* a[...] = v: typeinfer checks a */
    }
    if (lw_ast_kind(target) == A_TUPLE) {
        PyObject *elts = lw_get(target, "elts");
        if (elts == NULL) {
            return NULL;
        }
        CcNode *n = lw_new_node(L, ND_UNPACK, stmt);
        Py_ssize_t k = PyList_Size(elts);
        if (n != NULL) {
            n->vars = cc_alloc(L->fn->arena, sizeof(CcVar *) * (size_t)(k + 1));
        }
        for (Py_ssize_t i = 0; n != NULL && i < k; i++) {
            if (n->vars == NULL || (n->vars[i] = target_var(L, PyList_GetItem(elts, i))) == NULL) {
                n = NULL;
            }
        }
        Py_DECREF(elts);
        if (n == NULL) {
            return NULL;
        }
        n->nargs = (int)k;
        n->rhs = value;
        for (int i = 0; i < n->nargs; i++) {
            mark_assigned(L, n->vars[i]);
        }
        return n;
    }
    CcVar *var = target_var(L, target);
    CcNode *n = var != NULL ? lw_new_node(L, ND_ASSIGN, stmt) : NULL;
    if (n != NULL) {
        n->var = var;
        n->rhs = value;
        mark_assigned(L, var);
    }
    return n;
}

/* assign := (target '=')+ expr       target: name | name, name, ... */
static CcNode *
lower_assign(Lower *L, PyObject *node)
{
    PyObject *targets = lw_get(node, "targets");
    CcNode *value = targets ? lower_attr_expr(L, node, "value") : NULL;
    CcNode *result = NULL;
    if (value == NULL) {
        goto done;
    }
    Py_ssize_t k = PyList_Size(targets);
    if (k == 1) {
        result = assign_to(L, node, PyList_GetItem(targets, 0), value);
        goto done;
    }
    /* a = b = value: evaluate once into the first target, copy to the rest */
    CcNode *block = lw_new_node(L, ND_BLOCK, node);
    if (block == NULL
        || (block->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)k)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *t = PyList_GetItem(targets, i);
        CcNode *v = value;
        if (i > 0) {
            if (lw_ast_kind(PyList_GetItem(targets, 0)) != A_NAME) {
                cc_error(L->fn, lw_loc_of(L, node),
                         "chained assignment to tuples is not "
                         "supported in a kernel");
                goto done;
            }
            v = lw_new_node(L, ND_VAR, node);
            if (v == NULL) {
                goto done;
            }
            v->var = block->args[0]->var;
        }
        if ((block->args[i] = assign_to(L, node, t, v)) == NULL) {
            goto done;
        }
    }
    block->nargs = (int)k;
    result = block;
done:
    Py_XDECREF(targets);
    return result;
}

/* augassign := (name | name '[' exprs ']') op '=' expr */
static CcNode *
lower_augassign(Lower *L, PyObject *node)
{
    PyObject *target = lw_get(node, "target");
    CcNode *result = NULL;
    if (target == NULL) {
        return NULL;
    }
    CcNode *lhs = lower_expr(L, target); /* reads the variable: checks assignment */
    CcNode *op = lw_new_node(L, ND_BINOP, node);
    int opcode = node_op(L, node);
    if (lhs != NULL && op != NULL && opcode >= 0
        && (lhs->kind == ND_INDEX || lhs->kind == ND_GETITEM)) {
        /* a[i] op= v: a[i] = a[i] op v (indices are pure: evaluating them
         * twice is only a common subexpression for LLVM); t[0] op= v of a
         * local array t too (a tuple's item, typing finds, cannot be set) */
        op->op = (CcOp)opcode;
        op->lhs = lhs;
        if ((op->rhs = lower_attr_expr(L, node, "value")) != NULL
            && (result = lower_setitem(L, node, target, op)) != NULL) {
            result->index = 1; /* in place: an array target follows same_kind (typeinfer) */
        }
        goto done;
    }
    if (lhs == NULL || op == NULL || opcode < 0
        || (lhs->kind != ND_VAR && lhs->kind != ND_INLINE)) { /* a checked read: a name */
        if (lhs != NULL && lhs->kind != ND_VAR && !PyErr_Occurred()) {
            cc_error(L->fn, lw_loc_of(L, node), "only local variables can be updated in a kernel");
        }
        goto done;
    }
    op->op = (CcOp)opcode;
    op->lhs = lhs;
    if ((op->rhs = lower_attr_expr(L, node, "value")) != NULL) {
        result = assign_to(L, node, target, op);
    }
    if (result != NULL) {
        result->index = 1; /* augmented: an array variable is updated in place (typeinfer) */
    }
done:
    Py_DECREF(target);
    return result;
}

/* annassign := name ':' annotation ['=' expr]   (the annotation is ignored) */
static CcNode *
lower_annassign(Lower *L, PyObject *node)
{
    PyObject *target = lw_get(node, "target"), *value = lw_get(node, "value");
    CcNode *result = NULL;
    if (target != NULL && value != NULL) {
        if (value == Py_None) {
            result = lw_new_node(L, ND_BLOCK, node); /* a bare declaration */
        } else {
            CcNode *v = lower_expr(L, value);
            result = v ? assign_to(L, node, target, v) : NULL;
        }
    }
    Py_XDECREF(target);
    Py_XDECREF(value);
    return result;
}

/* return := 'return' [expr] */
static CcNode *
lower_return(Lower *L, PyObject *node)
{
    PyObject *value = lw_get(node, "value");
    CcNode *n = NULL;
    if (value == Py_None) {
        /* a bare return: typeinfer allows it in gufunc kernels, and in device
         * functions called for their effect (fill(out, 0)) */
        if ((n = lw_new_node(L, ND_RETURN, node)) != NULL) {
            n->var = L->result;
        }
    } else if (value != NULL && (n = lw_new_node(L, ND_RETURN, node)) != NULL) {
        n->lhs = lower_expr(L, value);
        n->var = L->result; /* inlined: assign the result, leave the body */
        n = n->lhs ? n : NULL;
    }
    Py_XDECREF(value);
    if (n != NULL) {
        L->terminated = 1;
    }
    return n;
}

/* ---- raise and assert ---- */

/* Whether cls is found again by its module and qualified name (what
 * cc_raise_site looks up, maybe in another process, from a cached kernel). */
static int
found_by_name(PyObject *cls, PyObject *module, PyObject *qualname)
{
    PyObject *found = PyImport_Import(module), *dot = PyUnicode_FromString(".");
    PyObject *parts = found && dot ? PyUnicode_Split(qualname, dot, -1) : NULL;
    Py_XDECREF(dot);
    for (Py_ssize_t i = 0; parts != NULL && found != NULL && i < PyList_Size(parts); i++) {
        PyObject *next = PyObject_GetAttr(found, PyList_GetItem(parts, i));
        Py_DECREF(found);
        found = next;
    }
    Py_XDECREF(parts);
    PyErr_Clear();
    int same = found == cls;
    Py_XDECREF(found);
    return same;
}

/* repr(obj) in buf, for an error message (cc_error formats as C does). */
static const char *
repr_in(PyObject *obj, char *buf, size_t size)
{
    PyObject *r = PyObject_Repr(obj);
    const char *s = r ? PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
    snprintf(buf, size, "%s", s ? s : "?");
    Py_XDECREF(r);
    PyErr_Clear();
    return buf;
}

/* The arguments of the exception a raise makes: a tuple of constants (str,
 * bytes, numbers, bools, None) whose repr reads back as itself.  New
 * reference, or NULL with a TypingError. */
static PyObject *
raise_arguments(Lower *L, PyObject *call, PyObject *node)
{
    PyObject *args = lw_get(call, "args"), *keywords = lw_get(call, "keywords");
    PyObject *values = NULL;
    if (args == NULL || keywords == NULL) {
        goto done;
    }
    if (PyList_Size(keywords) > 0) {
        cc_error(L->fn, lw_loc_of(L, call),
                 "an exception raised in a kernel takes no keyword "
                 "arguments");
        goto done;
    }
    values = PyTuple_New(PyList_Size(args));
    PyObject *ast = values ? PyImport_ImportModule("ast") : NULL;
    for (Py_ssize_t i = 0; ast != NULL && i < PyList_Size(args); i++) {
        /* a literal, as ast.literal_eval reads it: "message", -1, 2.5, None */
        PyObject *arg = PyList_GetItem(args, i);
        PyObject *v = PyObject_CallMethod(ast, "literal_eval", "O", arg);
        if (v == NULL) {
            PyErr_Clear();
            cc_error(L->fn, lw_loc_of(L, arg),
                     "the arguments of an exception raised in a kernel must be constants "
                     "(a message string, numbers): the kernel reports it after the loop");
            Py_CLEAR(values);
            break;
        }
        PyTuple_SetItem(values, i, v);
    }
    if (ast == NULL) {
        Py_CLEAR(values);
    }
    Py_XDECREF(ast);
done:
    Py_XDECREF(args);
    Py_XDECREF(keywords);
    return values;
}

/*
 * An ND_RAISE of cls(*args): its text is "module\x1fqualname\x1frepr(args)",
 * which cc_raise_site makes the exception from after the loop.  Ends the
 * path (as a return does).
 */
static CcNode *
raise_node(Lower *L, PyObject *node, PyObject *cls, PyObject *args)
{
    CcNode *n = NULL;
    PyObject *module = PyObject_GetAttrString(cls, "__module__");
    PyObject *qualname = module ? PyObject_GetAttrString(cls, "__qualname__") : NULL;
    PyObject *repr = qualname ? PyObject_Repr(args) : NULL;
    PyObject *ast = repr ? PyImport_ImportModule("ast") : NULL;
    PyObject *back = ast ? PyObject_CallMethod(ast, "literal_eval", "O", repr) : NULL;
    char what[160];
    PyErr_Clear();
    if (repr == NULL || !PyUnicode_Check(module) || !PyUnicode_Check(qualname)
        || !found_by_name(cls, module, qualname)) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "the exception %s raised in a kernel must be found by its module and name "
                 "(a builtin, or a class defined at a module's top level)",
                 repr_in(cls, what, sizeof(what)));
    } else if (back == NULL || PyObject_RichCompareBool(back, args, Py_EQ) != 1) {
        PyErr_Clear();
        cc_error(L->fn, lw_loc_of(L, node),
                 "the arguments of an exception raised in a kernel must be constants that read "
                 "back as themselves (strings, finite numbers, bools, None)");
    } else {
        /* the class read now is the one raised, whatever its name is bound to then */
        PyObject *text = PyUnicode_FromFormat("%U\x1f%U\x1f%U", module, qualname, repr);
        int generation = 0;
        const char *s = text ? cc_raise_register(L->fn->arena, text, cls, &generation) : NULL;
        if (s != NULL && (n = lw_new_node(L, ND_RAISE, node)) != NULL) {
            n->text = s;
            if (generation > L->fn->raise_gen) {
                L->fn->raise_gen = generation;
            }
        }
        Py_XDECREF(text);
    }
    Py_XDECREF(module);
    Py_XDECREF(qualname);
    Py_XDECREF(repr);
    Py_XDECREF(ast);
    Py_XDECREF(back);
    if (n != NULL) {
        L->terminated = 1;
        L->fn->raises = 1;
    }
    return n;
}

/* raise := 'raise' exception ['(' constant, ... ')']   (a class or an instance) */
static CcNode *
lower_raise(Lower *L, PyObject *node)
{
    PyObject *exc = lw_get(node, "exc"), *cause = lw_get(node, "cause");
    PyObject *target = NULL, *value = NULL, *args = NULL;
    CcNode *n = NULL;
    int local = 0;
    if (exc == NULL || cause == NULL) {
        goto done;
    }
    if (exc == Py_None) {
        cc_error(L->fn, lw_loc_of(L, node),
                 "a bare 'raise' (re-raising) is not supported in a "
                 "kernel: raise an exception class or instance");
        goto done;
    }
    if (cause != Py_None) {
        cc_error(L->fn, lw_loc_of(L, node), "'raise ... from ...' is not supported in a kernel");
        goto done;
    }
    int call = lw_ast_kind(exc) == A_CALL;
    target = call ? lw_get(exc, "func") : Py_NewRef(exc);
    if (target == NULL || (value = lw_resolve_object(L, target, &local)) == NULL) {
        if (local) {
            cc_error(L->fn, lw_loc_of(L, target),
                     "a kernel raises an exception class (or an "
                     "instance) named by a global, not a computed "
                     "value");
        }
        goto done;
    }
    char what[160];
    if (PyType_Check(value)
        && PyType_IsSubtype((PyTypeObject *)value, (PyTypeObject *)PyExc_BaseException)) {
        args = call ? raise_arguments(L, exc, node) : PyTuple_New(0);
        n = args ? raise_node(L, node, value, args) : NULL;
    } else if (!call && PyObject_IsInstance(value, PyExc_BaseException) == 1) {
        /* a global exception instance: its class and arguments */
        args = PyObject_GetAttrString(value, "args");
        n = args ? raise_node(L, node, (PyObject *)Py_TYPE(value), args) : NULL;
    } else {
        cc_error(L->fn, lw_loc_of(L, target),
                 "a kernel can only raise exceptions (classes deriving from BaseException), "
                 "not %s",
                 repr_in(value, what, sizeof(what)));
    }
done:
    Py_XDECREF(exc);
    Py_XDECREF(cause);
    Py_XDECREF(target);
    Py_XDECREF(value);
    Py_XDECREF(args);
    return n;
}

/* assert := 'assert' test [',' message]: if not test: raise AssertionError(message) */
static CcNode *
lower_assert(Lower *L, PyObject *node)
{
    PyObject *msg = lw_get(node, "msg"), *args = NULL;
    CcNode *n = lw_new_node(L, ND_IF, node), *not = lw_new_node(L, ND_UNARY, node);
    CcNode *then = lw_new_node(L, ND_BLOCK, node);
    int terminated = L->terminated;
    if (msg == NULL || n == NULL || not == NULL || then == NULL) {
        goto fail;
    }
    if (msg == Py_None) {
        args = PyTuple_New(0);
    } else if (lw_ast_kind(msg) == A_CONSTANT) {
        PyObject *v = lw_get(msg, "value");
        args = v ? PyTuple_Pack(1, v) : NULL;
        Py_XDECREF(v);
    } else {
        cc_error(L->fn, lw_loc_of(L, msg),
                 "an assert's message in a kernel must be a constant "
                 "(the kernel reports it after the loop)");
        goto fail;
    }
    not ->op = OP_NOT;
    if (args == NULL || (not ->lhs = lower_attr_expr(L, node, "test")) == NULL
        || (then->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (then->args[0] = raise_node(L, node, PyExc_AssertionError, args)) == NULL) {
        goto fail;
    }
    then->nargs = 1;
    n->cond = not ;
    n->then = then;
    L->terminated = terminated; /* the raise ends its branch only */
    Py_DECREF(msg);
    Py_DECREF(args);
    return n;
fail:
    Py_XDECREF(msg);
    Py_XDECREF(args);
    return NULL;
}

/* ---- print ---- */

/* A string constant for print (an ND_CONST with text), or NULL. */
static CcNode *
print_string(Lower *L, PyObject *ast, PyObject *value)
{
    const char *s = PyUnicode_AsUTF8AndSize(value, NULL);
    CcNode *n = s ? lw_new_node(L, ND_CONST, ast) : NULL;
    if (n != NULL && (n->text = cc_strdup(L->fn->arena, s)) == NULL) {
        n = NULL;
    }
    return n;
}

/* print := 'print' '(' (number | string constant), ... [sep=str] [end=str] ')' */
static CcNode *
lower_print(Lower *L, PyObject *call)
{
    PyObject *args = lw_get(call, "args"), *keywords = lw_get(call, "keywords");
    CcNode *n = args && keywords ? lw_new_node(L, ND_PRINT, call) : NULL;
    Py_ssize_t na = n ? PyList_Size(args) : 0;
    if (n != NULL
        && (n->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(na + 1))) == NULL) {
        n = NULL;
    }
    for (Py_ssize_t i = 0; n != NULL && i < na; i++) {
        PyObject *arg = PyList_GetItem(args, i);
        PyObject *v = lw_ast_kind(arg) == A_CONSTANT ? lw_get(arg, "value") : NULL;
        PyErr_Clear();
        n->args[i] = v && PyUnicode_Check(v) ? print_string(L, arg, v) : lw_lower_expr(L, arg);
        Py_XDECREF(v);
        if (n->args[i] == NULL) {
            n = NULL;
        }
    }
    if (n != NULL) {
        n->nargs = (int)na;
    }
    for (Py_ssize_t k = 0; n != NULL && k < PyList_Size(keywords); k++) {
        PyObject *kw = PyList_GetItem(keywords, k), *name = lw_get(kw, "arg");
        PyObject *value = lw_get(kw, "value");
        PyObject *v = value && lw_ast_kind(value) == A_CONSTANT ? lw_get(value, "value") : NULL;
        PyErr_Clear();
        const char *which =
            name && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : "";
        int sep = which && strcmp(which, "sep") == 0, end = which && strcmp(which, "end") == 0;
        if ((!sep && !end) || v == NULL || !PyUnicode_Check(v)) {
            cc_error(L->fn, lw_loc_of(L, kw),
                     "print() in a kernel takes sep= and end= as "
                     "string constants, and no other keyword");
            n = NULL;
        } else if ((*(sep ? &n->lhs : &n->rhs) = print_string(L, kw, v)) == NULL) {
            n = NULL;
        }
        Py_XDECREF(name);
        Py_XDECREF(value);
        Py_XDECREF(v);
    }
    Py_XDECREF(args);
    Py_XDECREF(keywords);
    return n;
}

/* Whether node (an expression statement's value) calls the builtin print. */
static int
is_print_call(Lower *L, PyObject *node)
{
    if (lw_ast_kind(node) != A_CALL) {
        return 0;
    }
    PyObject *func = lw_get(node, "func"), *builtins = PyImport_ImportModule("builtins");
    int local = 0;
    PyObject *callee = func && builtins ? lw_resolve_object(L, func, &local) : NULL;
    PyObject *print = callee ? PyObject_GetAttrString(builtins, "print") : NULL;
    int found = callee != NULL && callee == print;
    Py_XDECREF(func);
    Py_XDECREF(callee);
    Py_XDECREF(print);
    Py_XDECREF(builtins);
    PyErr_Clear();
    return found;
}

/* if := 'if' expr ':' block ['elif' ... | 'else' ':' block] */
static CcNode *
lower_if(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_IF, node);
    if (n == NULL || (n->cond = lower_attr_expr(L, node, "test")) == NULL) {
        return NULL;
    }
    char *before = save_assigned(L);
    int term_before = L->terminated;
    if (before == NULL || (n->then = lw_lower_block(L, node, "body")) == NULL) {
        return NULL;
    }
    char *after_then = save_assigned(L);
    int then_term = L->terminated;
    memcpy(L->assigned, before, (size_t)L->nassigned);
    L->terminated = term_before;
    if (after_then == NULL || (n->els = lw_lower_block(L, node, "orelse")) == NULL) {
        return NULL;
    }
    merge_assigned(L, after_then, then_term, save_assigned(L), L->terminated);
    return n;
}

/* Lowers a loop body: assignments in it may not happen; break/continue
 * end the path inside, not after the loop.  L->ran: what one iteration
 * binds on every way out of it (lw_bound_after_loop). */
static CcNode *
loop_body(Lower *L, PyObject *node, const char **before_out)
{
    char *before = save_assigned(L), *outer = L->jumped;
    if (before == NULL) {
        return NULL;
    }
    L->loop_depth++;
    L->jumped = NULL;
    CcNode *body = lw_lower_block(L, node, "body");
    L->loop_depth--;
    if (body != NULL && lw_meet_jump(L) < 0) { /* the body's end: the back edge */
        body = NULL;
    }
    L->ran = L->jumped;
    L->jumped = outer;
    memcpy(L->assigned, before, (size_t)L->nassigned);
    L->terminated = 0;
    *before_out = before;
    return body;
}

/* while := 'while' expr ':' block ['else' ':' block] */
static CcNode *
lower_while(Lower *L, PyObject *node)
{
    const char *before;
    CcNode *n = lw_new_node(L, ND_WHILE, node);
    if (n == NULL || (n->cond = lower_attr_expr(L, node, "test")) == NULL
        || (n->then = loop_body(L, node, &before)) == NULL) {
        return NULL;
    }
    const char *ran = L->ran;
    lw_bound_after_loop(L, ran); /* in the else block, then after the loop */
    if ((n->els = lw_lower_block(L, node, "orelse")) == NULL) {
        return NULL;
    }
    memcpy(L->assigned, before, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran);
    L->terminated = 0;
    return n;
}

/* A hidden variable (a name no Python code can spell), not subject to the
 * definite-assignment check: the lowering assigns it before every use. */
static CcVar *
hidden_var(Lower *L, const char *what)
{
    char name[64];
    snprintf(name, sizeof(name), "%s.%d", what, L->fn->nnodes);
    const char *scoped = lw_scoped(L, name);
    return scoped != NULL ? lw_add_var(L->fn, scoped) : NULL;
}

static CcNode *
var_node(Lower *L, PyObject *at, CcVar *var)
{
    CcNode *n = lw_new_node(L, ND_VAR, at);
    if (n != NULL) {
        n->var = var;
    }
    return n;
}

static CcNode *
assign_node(Lower *L, PyObject *at, CcVar *var, CcNode *value)
{
    CcNode *n = value != NULL ? lw_new_node(L, ND_ASSIGN, at) : NULL;
    if (n != NULL) {
        n->var = var;
        n->rhs = value;
    }
    return n;
}

/* The Python object a call's function names (new reference), or NULL
 * without an exception when it names none (a local, a method). */
static PyObject *
callee_of(Lower *L, PyObject *call)
{
    if (lw_ast_kind(call) != A_CALL) {
        return NULL;
    }
    int local;
    PyObject *func = lw_get(call, "func");
    PyObject *callee = func != NULL ? lw_resolve_object(L, func, &local) : NULL;
    Py_XDECREF(func);
    PyErr_Clear();
    return callee;
}

static int
is_builtin_named(PyObject *obj, const char *name)
{
    PyObject *builtins = PyImport_ImportModule("builtins");
    PyObject *f = builtins != NULL ? PyObject_GetAttrString(builtins, name) : NULL;
    int same = obj != NULL && f != NULL && obj == f;
    Py_XDECREF(f);
    Py_XDECREF(builtins);
    PyErr_Clear();
    return same;
}

/*
 * for := 'for' target 'in' iterable ':' block ['else' ':' block]
 *   iterable: an array (its rows, or elements when it is 1-d), enumerate(a[,
 *   start]) or zip(a, b, ...), lowered to a range loop over hidden variables:
 *     it = a;  for i in range(len(it)): x = it[i]; block
 */
static CcNode *
lower_for_each(Lower *L, PyObject *node, CcNode *loop, PyObject *target, PyObject *iter)
{
    PyObject *callee = callee_of(L, iter);
    int enumerate = is_builtin_named(callee, "enumerate"), zip = is_builtin_named(callee, "zip");
    Py_XDECREF(callee);
    PyObject *iters = NULL, *targets = NULL;
    CcNode *result = NULL;
    int nargs = 1, first = enumerate; /* the first target that takes an item */
    if (enumerate || zip) {
        if ((iters = lw_get(iter, "args")) == NULL) {
            return NULL;
        }
        nargs = (int)PyList_Size(iters);
        if (enumerate && (nargs < 1 || nargs > 2)) {
            cc_error(L->fn, lw_loc_of(L, iter), "enumerate() takes 1 or 2 arguments, %d given",
                     nargs);
            goto done;
        }
        if (zip && (nargs < 1 || nargs > 16)) {
            cc_error(L->fn, lw_loc_of(L, iter), "zip() of 1 to 16 arrays is supported, not %d",
                     nargs);
            goto done;
        }
        if (lw_ast_kind(target) != A_TUPLE || (targets = lw_get(target, "elts")) == NULL
            || PyList_Size(targets) != (enumerate ? 2 : nargs)) {
            PyErr_Clear();
            cc_error(L->fn, lw_loc_of(L, target), "unpack %s's items into %d names",
                     enumerate ? "enumerate()" : "zip()", enumerate ? 2 : nargs);
            goto done;
        }
    }
    int nseq = enumerate ? 1 : nargs;
    CcVar *counter = hidden_var(L, "for.i");
    CcNode *pre = lw_new_node(L, ND_BLOCK, node), *body = lw_new_node(L, ND_BLOCK, node);
    CcNode *len = NULL;
    if (counter == NULL || pre == NULL || body == NULL
        || (pre->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(nseq + 2))) == NULL
        || (body->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(nseq + 3))) == NULL) {
        goto done;
    }
    CcNode **lens = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(nseq + 1));
    if (lens == NULL) {
        goto done;
    }
    for (int k = 0; k < nseq; k++) {
        PyObject *src = iters != NULL ? PyList_GetItem(iters, k) : iter;
        CcVar *it = hidden_var(L, "for.it");
        if (it != NULL) {
            it->iterable = 1; /* typeinfer names the loop when it is not an array */
        }
        CcNode *value = it != NULL ? lower_expr(L, src) : NULL;
        if ((pre->args[pre->nargs] = assign_node(L, src, it, value)) == NULL) {
            goto done;
        }
        pre->nargs++;
        CcNode *ref = var_node(L, src, it);
        if (ref == NULL || (lens[k] = array_attr(L, src, AA_LEN, ref)) == NULL) {
            goto done;
        }
        /* the item: it[i] */
        CcNode *item = lw_new_node(L, ND_INDEX, src);
        if (item == NULL || (item->lhs = var_node(L, src, it)) == NULL
            || (item->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
            || (item->args[0] = var_node(L, src, counter)) == NULL) {
            goto done;
        }
        item->nargs = 1;
        PyObject *t = targets != NULL ? PyList_GetItem(targets, first + k) : target;
        CcVar *x = target_var(L, t);
        if (x == NULL || (body->args[body->nargs] = assign_node(L, t, x, item)) == NULL) {
            goto done;
        }
        body->nargs++;
    }
    if (nseq == 1) {
        len = lens[0];
    } else if ((len = lw_new_node(L, ND_CALL, iter)) != NULL) {
        len->builtin = cc_builtin_by_name("min"); /* zip stops at the shortest */
        len->args = lens;
        len->nargs = nseq;
    }
    if (len == NULL || (loop->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL) {
        goto done;
    }
    loop->args[0] = len;
    loop->nargs = 1;
    loop->var = counter;
    if (enumerate) {
        /* j = i (+ start) */
        PyObject *t = PyList_GetItem(targets, 0);
        CcVar *j = target_var(L, t);
        CcNode *value = var_node(L, t, counter);
        if (j != NULL && value != NULL && nargs == 2) {
            CcNode *add = lw_new_node(L, ND_BINOP, t);
            if (add != NULL) {
                add->op = OP_ADD;
                add->lhs = value;
                add->rhs = lower_expr(L, PyList_GetItem(iters, 1));
            }
            value = add != NULL && add->rhs != NULL ? add : NULL;
        }
        if (j == NULL || (body->args[body->nargs] = assign_node(L, t, j, value)) == NULL) {
            goto done;
        }
        body->nargs++;
    }
    const char *before;
    char *saved = save_assigned(L);
    if (saved == NULL) {
        goto done;
    }
    for (int i = 0; i < body->nargs; i++) {
        mark_assigned(L, body->args[i]->var); /* inside the body only */
    }
    CcNode *user = loop_body(L, node, &before);
    const char *ran = L->ran;
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran); /* in the else block, then after the loop */
    if (user == NULL || (loop->els = lw_lower_block(L, node, "orelse")) == NULL) {
        goto done;
    }
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran);
    L->terminated = 0;
    body->args[body->nargs++] = user;
    loop->then = body;
    pre->args[pre->nargs++] = loop;
    result = pre;
done:
    Py_XDECREF(iters);
    Py_XDECREF(targets);
    return result;
}

static CcNode *assign_to(Lower *L, PyObject *stmt, PyObject *target, CcNode *value);

static CcNode *
hidden_call(Lower *L, PyObject *at, const char *name, CcNode **args, int nargs)
{
    CcNode *n = lw_new_node(L, ND_CALL, at);
    if (n != NULL) {
        n->builtin = cc_builtin_by_name(name);
        n->args = args;
        n->nargs = nargs;
    }
    return n;
}

/*
 * The body of a range loop over a flat index (np.ndindex, a.flat): body
 * (room for 2) gets `target = item`, then the user's statements; the else
 * block follows.  The target counts as assigned inside the body only.
 * 0/-1.
 */
static int
index_loop_body(Lower *L, PyObject *node, CcNode *loop, CcNode *body, PyObject *target,
                CcNode *item)
{
    const char *before;
    char *saved = save_assigned(L);
    if (saved == NULL || item == NULL
        || (body->args[0] = assign_to(L, node, target, item)) == NULL) {
        return -1;
    }
    CcNode *user = loop_body(L, node, &before);
    const char *ran = L->ran;
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran);
    if (user == NULL || (loop->els = lw_lower_block(L, node, "orelse")) == NULL) {
        return -1;
    }
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran);
    L->terminated = 0;
    body->args[1] = user;
    body->nargs = 2;
    loop->then = body;
    return 0;
}

/*
 * for idx in np.ndindex(shape)   (or np.ndindex(d0, d1, ...)): the indices
 * of shape in C order, lowered to a range loop over the flat index:
 *   sh = shape;  for k in range(.ndsize(sh)): idx = .unravel(k, sh); block
 * (the shape's length, so the index tuple's, is known only once typed)
 */
static CcNode *
lower_for_ndindex(Lower *L, PyObject *node, CcNode *loop, PyObject *target, PyObject *iter)
{
    int nargs;
    CcNode **dims = lw_lower_expr_list(L, iter, "args", &nargs);
    if (dims == NULL) {
        return NULL;
    }
    if (nargs == 0) {
        cc_error(L->fn, lw_loc_of(L, iter), "np.ndindex() needs a shape");
        return NULL;
    }
    CcNode *shape = dims[0];
    if (nargs > 1 && (shape = lw_new_node(L, ND_TUPLE, iter)) != NULL) {
        shape->args = dims;
        shape->nargs = nargs;
    }
    CcVar *sh = hidden_var(L, "for.shape"), *k = hidden_var(L, "for.k");
    CcNode *pre = lw_new_node(L, ND_BLOCK, node), *body = lw_new_node(L, ND_BLOCK, node);
    CcNode **size_args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
    CcNode **idx_args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3);
    if (shape == NULL || sh == NULL || k == NULL || pre == NULL || body == NULL || size_args == NULL
        || idx_args == NULL || (pre->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3)) == NULL
        || (body->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3)) == NULL
        || (loop->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (pre->args[0] = assign_node(L, iter, sh, shape)) == NULL
        || (size_args[0] = var_node(L, iter, sh)) == NULL
        || (loop->args[0] = hidden_call(L, iter, ".ndsize", size_args, 1)) == NULL
        || (idx_args[0] = var_node(L, iter, k)) == NULL
        || (idx_args[1] = var_node(L, iter, sh)) == NULL) {
        return NULL;
    }
    pre->nargs = 1;
    loop->nargs = 1;
    loop->var = k;
    if (index_loop_body(L, node, loop, body, target, hidden_call(L, iter, ".unravel", idx_args, 2))
        < 0) {
        return NULL;
    }
    pre->args[pre->nargs++] = loop;
    return pre;
}

/*
 * for x in a.flat: a's elements in C order, lowered to a range loop:
 *   for k in range(a.size): x = a[.flatindex(k, a.shape)]; block
 */
static CcNode *
lower_for_flat(Lower *L, PyObject *node, CcNode *loop, PyObject *target, PyObject *iter,
               PyObject *base)
{
    CcVar *k = hidden_var(L, "for.k");
    CcNode *body = lw_new_node(L, ND_BLOCK, node), *a = lower_expr(L, base);
    if (k == NULL || body == NULL || a == NULL
        || (body->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3)) == NULL
        || (loop->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (loop->args[0] = array_attr(L, iter, AA_SIZE, a)) == NULL) {
        return NULL;
    }
    loop->nargs = 1;
    loop->var = k;
    if (index_loop_body(L, node, loop, body, target,
                        flat_element(L, iter, base, var_node(L, iter, k)))
        < 0) {
        return NULL;
    }
    return loop;
}

/* Whether obj is numpy's `name`. */
static int
is_numpy_named(PyObject *obj, const char *name)
{
    PyObject *np = obj != NULL ? PyImport_ImportModule("numpy") : NULL;
    PyObject *f = np != NULL ? PyObject_GetAttrString(np, name) : NULL;
    int same = f != NULL && obj == f;
    Py_XDECREF(f);
    Py_XDECREF(np);
    PyErr_Clear();
    return same;
}

/* for := 'for' name 'in' 'range' '(' expr [',' expr [',' expr]] ')' ':' block
 *        ['else' ':' block]
 *      | 'for' target 'in' iterable ...        (lower_for_each) */
static CcNode *
lower_for(Lower *L, PyObject *node)
{
    PyObject *target = lw_get(node, "target"), *iter = lw_get(node, "iter");
    CcNode *n = lw_new_node(L, ND_FOR_RANGE, node);
    CcNode *result = NULL;
    if (n == NULL || target == NULL || iter == NULL) {
        goto done;
    }
    PyObject *callee = callee_of(L, iter);
    int range = is_builtin_named(callee, "range"), ndindex = is_numpy_named(callee, "ndindex");
    Py_XDECREF(callee);
    if (ndindex) {
        result = lower_for_ndindex(L, node, n, target, iter);
        goto done;
    }
    PyObject *flat = flat_base(L, iter);
    if (flat != NULL) {
        result = lower_for_flat(L, node, n, target, iter, flat);
        Py_DECREF(flat);
        goto done;
    }
    if (!range) {
        result = lower_for_each(L, node, n, target, iter);
        goto done;
    }
    if ((n->args = lw_lower_expr_list(L, iter, "args", &n->nargs)) == NULL) {
        goto done;
    }
    if (n->nargs < 1 || n->nargs > 3) {
        cc_error(L->fn, lw_loc_of(L, iter), "range() takes 1 to 3 arguments, %d given", n->nargs);
        goto done;
    }
    if ((n->var = target_var(L, target)) == NULL) {
        goto done;
    }
    const char *before;
    char *saved = save_assigned(L);
    if (saved == NULL) {
        goto done;
    }
    mark_assigned(L, n->var); /* inside the body only */
    n->then = loop_body(L, node, &before);
    const char *ran = L->ran;
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran); /* in the else block, then after the loop */
    if (n->then == NULL || (n->els = lw_lower_block(L, node, "orelse")) == NULL) {
        goto done;
    }
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    lw_bound_after_loop(L, ran);
    L->terminated = 0;
    result = n;
done:
    Py_XDECREF(target);
    Py_XDECREF(iter);
    return result;
}

static CcNode *
lower_jump(Lower *L, PyObject *node, CcNodeKind kind)
{
    if (L->loop_depth == 0) {
        cc_error(L->fn, lw_loc_of(L, node), "'%s' outside a loop",
                 kind == ND_BREAK ? "break" : "continue");
        return NULL;
    }
    if (lw_meet_jump(L) < 0) { /* leaves this iteration */
        return NULL;
    }
    L->terminated = 1;
    return lw_new_node(L, kind, node);
}

/* A statement that is only a string constant (a docstring) does nothing. */
static int
is_docstring(PyObject *node)
{
    PyObject *value = lw_get(node, "value");
    int doc = 0;
    if (value != NULL && lw_ast_kind(value) == A_CONSTANT) {
        PyObject *c = lw_get(value, "value");
        doc = c != NULL && PyUnicode_Check(c);
        Py_XDECREF(c);
    }
    Py_XDECREF(value);
    PyErr_Clear();
    return doc;
}

static CcNode *
lower_stmt_kind(Lower *L, PyObject *node)
{
    switch (lw_ast_kind(node)) {
    case A_ASSIGN:
        return lower_assign(L, node);
    case A_AUGASSIGN:
        return lower_augassign(L, node);
    case A_ANNASSIGN:
        return lower_annassign(L, node);
    case A_RETURN:
        return lower_return(L, node);
    case A_IF:
        return lower_if(L, node);
    case A_WHILE:
        return lower_while(L, node);
    case A_FOR:
        return lower_for(L, node);
    case A_BREAK:
        return lower_jump(L, node, ND_BREAK);
    case A_CONTINUE:
        return lower_jump(L, node, ND_CONTINUE);
    case A_PASS:
        return lw_new_node(L, ND_BLOCK, node);
    case A_RAISE:
        return lower_raise(L, node);
    case A_ASSERT:
        return lower_assert(L, node);
    case A_EXPR: {
        if (is_docstring(node)) {
            return lw_new_node(L, ND_BLOCK, node);
        }
        PyObject *value = lw_get(node, "value");
        int print = value && is_print_call(L, value);
        CcNode *p = print ? lower_print(L, value) : NULL;
        Py_XDECREF(value);
        if (print) {
            return p;
        }
        CcNode *n = lw_new_node(L, ND_EXPR, node);
        if (n == NULL || (n->lhs = lower_attr_expr(L, node, "value")) == NULL) {
            return NULL;
        }
        return n;
    }
    case A_FUNCTIONDEF:
        cc_error(L->fn, lw_loc_of(L, node),
                 "nested functions are not supported in a kernel "
                 "(use a module-level @numbavec.jit function)");
        return NULL;
    default:
        unsupported(L, node, "statement");
        return NULL;
    }
}

static CcNode *
lower_stmt(Lower *L, PyObject *node)
{
    CcNode *n = enter(L, node) == 0 ? lower_stmt_kind(L, node) : NULL;
    L->fn->depth--;
    return n;
}

/*
 * A statement of the kernel failed with a TypingError: its message is kept
 * in L->errors and lowering goes on with the next statement, every variable
 * counted as assigned from here (what the statement assigned is unknown, and
 * "referenced before assignment" would follow from its failure alone).
 * 1 when kept; 0 (the error pending) for any other error, past CC_MAX_ERRORS,
 * and in an inlined function (its errors are its call's).
 */
static int
keep_error(Lower *L)
{
    if (L->errors == NULL || L->prefix != NULL || PyList_Size(L->errors) >= CC_MAX_ERRORS
        || !PyErr_ExceptionMatches(nv_state.typing_error)) {
        return 0;
    }
    if (L->cascade) {
        PyErr_Clear(); /* follows from a refused import, which was reported */
        L->cascade = 0;
    } else if (cc_keep_error(L->errors) < 0) {
        return 0;
    }
    memset(L->assigned, 1, (size_t)L->nassigned);
    L->terminated = 0;
    return 1;
}

/* block := statement+     (node.attr is a list of statements) */
CcNode *
lw_lower_block(Lower *L, PyObject *node, const char *attr)
{
    PyObject *list = lw_get(node, attr);
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t k = PyList_Size(list);
    CcNode *b = lw_new_node(L, ND_BLOCK, k > 0 ? PyList_GetItem(list, 0) : node);
    if (b != NULL) {
        b->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(k + 1));
    }
    for (Py_ssize_t i = 0; b != NULL && i < k; i++) {
        PyObject *stmt = PyList_GetItem(list, i);
        if (b->args != NULL && (b->args[i] = lower_stmt(L, stmt)) == NULL && keep_error(L)) {
            b->args[i] = lw_new_node(L, ND_BLOCK, stmt); /* empty: the kernel is refused */
        }
        if (b->args == NULL || b->args[i] == NULL) {
            b = NULL;
        }
    }
    Py_DECREF(list);
    if (b != NULL) {
        b->nargs = (int)k;
    }
    return b;
}

/* ---- the function ---- */

/* parameters := name (',' name)*     no defaults, *args, **kwargs or keyword-only
 * params (room for TS_MAXARGS) and *nparams receive the variables if given. */
int
lw_lower_params(Lower *L, PyObject *funcdef, CcVar **params, int *nparams)
{
    PyObject *args = lw_get(funcdef, "args");
    int rc = -1;
    if (args == NULL) {
        return -1;
    }
    static const char *const forbidden[] = {"vararg", "kwarg"};
    for (int i = 0; i < 2; i++) {
        PyObject *v = lw_get(args, forbidden[i]);
        int bad = v != NULL && v != Py_None;
        Py_XDECREF(v);
        if (bad) {
            cc_error(L->fn, lw_loc_of(L, funcdef),
                     "*args and **kwargs are not supported in a "
                     "kernel");
            goto done;
        }
    }
    PyObject *kwonly = lw_get(args, "kwonlyargs"), *defaults = lw_get(args, "defaults");
    PyObject *posonly = lw_get(args, "posonlyargs"), *plain = lw_get(args, "args");
    if (kwonly && defaults && posonly && plain) {
        if ((PyList_Size(kwonly) > 0 || PyList_Size(defaults) > 0) && L->prefix == NULL) {
            cc_error(L->fn, lw_loc_of(L, funcdef),
                     "keyword-only parameters and default values are not supported in a "
                     "kernel's own parameters (a @numbavec.jit helper may have them)");
        } else {
            rc = 0;
            /* a device function's keyword-only parameters come last */
            PyObject *lists[3] = {posonly, plain, kwonly};
            for (int j = 0; rc == 0 && j < 3; j++) {
                for (Py_ssize_t i = 0; rc == 0 && i < PyList_Size(lists[j]); i++) {
                    const char *name =
                        lw_scoped(L, lw_get_str(L, PyList_GetItem(lists[j], i), "arg"));
                    CcVar *v = name ? lw_add_var(L->fn, name) : NULL;
                    rc = v != NULL ? 0 : -1;
                    if (v != NULL && L->prefix == NULL) {
                        v->is_param = 1; /* an inlined function's are plain locals */
                    }
                    if (params != NULL && v != NULL && *nparams == TS_MAXARGS) {
                        cc_error(L->fn, lw_loc_of(L, funcdef),
                                 "a device function takes at most %d parameters", TS_MAXARGS);
                        rc = -1;
                    } else if (params != NULL && v != NULL) {
                        params[(*nparams)++] = v;
                    }
                }
            }
            if (L->prefix == NULL) {
                L->fn->nparams = L->fn->nvars;
            }
        }
    }
    Py_XDECREF(kwonly);
    Py_XDECREF(defaults);
    Py_XDECREF(posonly);
    Py_XDECREF(plain);
done:
    Py_DECREF(args);
    return rc;
}

int
cc_lower(CcFunction *fn, PyObject *funcdef, PyObject *pyfunc)
{
    if (lw_ast_init() < 0) {
        return -1;
    }
    Lower L = {0};
    L.fn = fn;
    L.pyfunc = pyfunc;
    L.name = fn->name;
    fn->depth = 0;
    fn->max_depth = cc_depth_budget();
    fn->nnodes = 0;
    int rc = -1;
    fn->body = lw_new_node(&L, ND_BLOCK, funcdef);
    if (fn->body == NULL) {
        return -1;
    }
    L.globals = lw_get(pyfunc, "__globals__");
    L.closure = lw_closure_values(pyfunc);
    if (L.globals == NULL || L.closure == NULL) {
        goto done;
    }
    if (lw_ast_kind(funcdef) != A_FUNCTIONDEF) {
        PyErr_SetString(PyExc_TypeError, "numbavec: expected an ast.FunctionDef");
        goto done;
    }
    if (lw_lower_params(&L, funcdef, NULL, NULL) < 0 || lw_collect_locals(&L, funcdef) < 0) {
        goto done;
    }
    L.nassigned = fn->nvars;
    L.assigned = cc_alloc(fn->arena, (size_t)fn->nvars + 1);
    if (L.assigned == NULL) {
        goto done;
    }
    memset(L.assigned, 1, (size_t)fn->nparams);
    if ((L.errors = PyList_New(0)) == NULL) {
        goto done;
    }
    CcNode *body = lw_lower_block(&L, funcdef, "body");
    if (body == NULL && PyList_Size(L.errors) > 0
        && PyErr_ExceptionMatches(nv_state.typing_error)) {
        (void)cc_keep_error(L.errors); /* past CC_MAX_ERRORS: the last one too */
    }
    if (!PyErr_Occurred() && PyList_Size(L.errors) > 0) {
        /* every statement that failed, one message (and caret) each */
        cc_raise_errors(L.errors);
        body = NULL;
    }
    if (body != NULL) {
        body->loc = fn->body->loc;
        fn->body = body;
        rc = lw_rebind(fn); /* each binding its own variable where they never meet */
    }
done:
    Py_XDECREF(L.errors);
    Py_XDECREF(L.unbound);
    Py_XDECREF(L.globals);
    Py_XDECREF(L.closure);
    return rc;
}
