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
 * Definite assignment is checked on the way: a local read on a path where
 * it may not be assigned is a TypingError at that line.
 *
 * The pass is split by what a node is: lowerexpr.c (expressions),
 * lowercall.c (calls, constants, tuples, subscripts) and lowerstmt.c
 * (statements and control flow).  This file holds its entry (cc_lower and
 * the parameters) and what they share: the context, the variables,
 * definite assignment and the depth budget.
 *
 * Each lowering function carries the Python grammar it accepts above it.
 */
#include "compiler/lower.h"

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
        /* said once: the statements after it are not lowered either */
        if (L->fn->nnodes == MAX_NODES + 1 && !PyErr_Occurred()) {
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

int
lw_unsupported(Lower *L, PyObject *node, const char *context)
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

CcVar *
lw_find_var(CcFunction *fn, const char *name)
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
    CcVar *v = lw_find_var(fn, name);
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

Lower *
lw_var_owner(Lower *L, const char *name)
{
    for (Lower *S = L; S != NULL; S = S->enclosing) {
        const char *s = lw_scoped(S, name);
        if (s != NULL && lw_find_var(S->fn, s) != NULL) {
            return S;
        }
    }
    return NULL;
}

/* name's variable in L, or in the scopes a nested function's body reads. */
CcVar *
lw_local_var(Lower *L, const char *name)
{
    Lower *S = lw_var_owner(L, name);
    return S != NULL ? lw_find_var(S->fn, lw_scoped(S, name)) : NULL;
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

int
lw_is_numpy_named(PyObject *obj, const char *name)
{
    PyObject *np = obj != NULL ? PyImport_ImportModule("numpy") : NULL;
    PyObject *f = np != NULL ? PyObject_GetAttrString(np, name) : NULL;
    int same = f != NULL && obj == f;
    Py_XDECREF(f);
    Py_XDECREF(np);
    PyErr_Clear();
    return same;
}

int
lw_ufunc_nin(PyObject *obj)
{
    PyObject *np = obj != NULL ? PyImport_ImportModule("numpy") : NULL;
    PyObject *ufunc_t = np != NULL ? PyObject_GetAttrString(np, "ufunc") : NULL;
    PyObject *nin = ufunc_t != NULL && PyObject_IsInstance(obj, ufunc_t) == 1
                        ? PyObject_GetAttrString(obj, "nin")
                        : NULL;
    int n = nin != NULL && PyLong_Check(nin) ? (int)PyLong_AsLong(nin) : -1;
    Py_XDECREF(nin);
    Py_XDECREF(ufunc_t);
    Py_XDECREF(np);
    PyErr_Clear();
    return n;
}

/* "np.fft.fft()": a call's callee as its source spells it (ast.unparse), or
 * NULL (no exception) for a callee too long to quote. */
PyObject *
lw_callee_spelling(PyObject *func)
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

/* Every name stored to anywhere in the function is local (Python's rule);
 * not those of the functions (and lambdas) nested in it, which are theirs
 * (numbavec/_forms.py's scope_nodes walks the function's own nodes). */
int
lw_collect_locals(Lower *L, PyObject *funcdef)
{
    PyObject *ast = PyImport_ImportModule("numbavec._forms");
    PyObject *walk = ast ? PyObject_CallMethod(ast, "scope_nodes", "O", funcdef) : NULL;
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

char *
lw_save_assigned(Lower *L)
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
void
lw_merge_assigned(Lower *L, const char *a, int a_term, const char *b, int b_term)
{
    for (int i = 0; i < L->nassigned; i++) {
        L->assigned[i] = a_term ? b[i] : b_term ? a[i] : lw_weaker(a[i], b[i]);
    }
    L->terminated = a_term && b_term;
}

/* ---- how deep a tree may be (cc_depth_budget) ---- */

/* One more level of nesting at node; -1 with a TypingError past the budget. */
int
lw_enter(Lower *L, PyObject *node)
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
        /* a kernel's default values are never used (the ufunc passes every
         * argument), as in Numba: accepted and ignored */
        if (PyList_Size(kwonly) > 0 && L->prefix == NULL) {
            cc_error(L->fn, lw_loc_of(L, funcdef),
                     "keyword-only parameters are not supported in a kernel's own parameters "
                     "(a @numbavec.jit helper may have them)");
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
