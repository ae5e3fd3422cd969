/*
 * inline.c - device functions (@numbavec.jit), inlined where they are
 * called.
 *
 * lower.c hands over a call whose callee is a device function.  Its
 * ast.FunctionDef (parsed once, kept by the object) is lowered here into
 * the caller's IR as one ND_INLINE expression, through a Lower context of
 * its own: its variables are the caller's renamed apart ("name@n.var"),
 * its names resolve in its own module (resolve.c), its nodes point into
 * its own source (for carets), and the chain of contexts is what recursion
 * is checked against.  Typing happens later, at each call site, so there
 * is no calling convention and every call gets the types of its own
 * arguments.
 */
#include "compiler/lower.h"

/* A @numbavec.jit object: it can hand over its parsed source. */
int
lw_is_device_function(PyObject *obj)
{
    return !PyType_Check(obj) && PyObject_HasAttrString(obj, "_numbavec_device_source");
}

/* Recursion cannot be inlined: a TypingError naming the cycle "f -> g -> f". */
static int
check_recursion(Lower *L, PyObject *node, PyObject *callee, const char *name)
{
    int found = 0;
    for (Lower *p = L; p != NULL && !found; p = p->parent) {
        found = p->device == callee;
    }
    if (!found) {
        return 0;
    }
    char chain[512] = "";
    size_t used = 0;
    const char *names[64];
    int k = 0;
    for (Lower *p = L; p != NULL && k < 64; p = p->parent) {
        names[k++] = p->name;
        if (p->device == callee) {
            break;
        }
    }
    for (int i = k - 1; i >= 0 && used < sizeof(chain); i--) {
        used += (size_t)snprintf(chain + used, sizeof(chain) - used, "%s -> ", names[i]);
    }
    if (used < sizeof(chain)) {
        snprintf(chain + used, sizeof(chain) - used, "%s", name);
    }
    return cc_error(L->fn, lw_loc_of(L, node),
                    "recursion is not supported in a kernel "
                    "(device functions are inlined): %s",
                    chain);
}

/* The CcSource of a device function from its (pyfunc, funcdef, location). */
static CcSource *
device_source(Lower *L, PyObject *info, PyObject **pyfunc, PyObject **funcdef)
{
    PyObject *filename, *lines;
    CcSource *src = cc_alloc(L->fn->arena, sizeof(CcSource));
    if (src == NULL) {
        return NULL;
    }
    if (!PyArg_ParseTuple(info, "OO(UiO!i)", pyfunc, funcdef, &filename, &src->first_line,
                          &PyList_Type, &lines, &src->line_offset)) {
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8AndSize(filename, NULL);
    PyObject *name = PyObject_GetAttrString(*pyfunc, "__name__");
    const char *nm = name != NULL ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    src->filename = fname ? cc_strdup(L->fn->arena, fname) : NULL;
    src->name = nm ? cc_strdup(L->fn->arena, nm) : NULL;
    Py_XDECREF(name);
    src->lines = lines;
    /* the arena keeps everything the IR points into */
    if (src->filename == NULL || src->name == NULL || cc_arena_keep(L->fn->arena, info) < 0) {
        return NULL;
    }
    return src;
}

/* The inlined body: parameters assigned the arguments, then the statements. */
static CcNode *
inline_body(Lower *D, PyObject *node, PyObject *funcdef, CcNode **args, int nargs)
{
    CcVar *params[TS_MAXARGS];
    int nparams = 0;
    if (lw_lower_params(D, funcdef, params, &nparams) < 0) {
        return NULL;
    }
    if (nparams != nargs) {
        D->src = NULL; /* the caller's mistake: point at the call */
        cc_error(D->fn, lw_loc_of(D->parent, node), "%s() takes %d argument(s), %d given", D->name,
                 nparams, nargs);
        return NULL;
    }
    if (lw_collect_locals(D, funcdef) < 0) {
        return NULL;
    }
    D->nassigned = D->fn->nvars;
    D->assigned = cc_alloc(D->fn->arena, (size_t)D->nassigned + 1);
    CcNode *body = D->assigned ? lw_new_node(D, ND_BLOCK, funcdef) : NULL;
    if (body == NULL
        || (body->args = cc_alloc(D->fn->arena, sizeof(CcNode *) * (size_t)(nparams + 1)))
               == NULL) {
        return NULL;
    }
    for (int i = 0; i < nparams; i++) {
        CcNode *a = lw_new_node(D->parent, ND_ASSIGN, node);
        if (a == NULL) {
            return NULL;
        }
        a->var = params[i];
        a->rhs = args[i];
        body->args[i] = a;
        D->assigned[params[i]->index] = 1;
    }
    if ((body->args[nparams] = lw_lower_block(D, funcdef, "body")) == NULL) {
        return NULL;
    }
    body->args[nparams]->loc = body->loc; /* "can end without returning" points at the def */
    body->nargs = nparams + 1;
    return body;
}

/*
 * call := device_function '(' args ')'
 *   The device function's body is lowered here, into variables of its own
 *   ("name@n.var"), as an ND_INLINE expression: its parameters are assigned
 *   the arguments, each return assigns the result variable and leaves the
 *   body.  Typing happens where it is inlined, so every call site gets the
 *   types of its own arguments.  Its names resolve in its own module.
 */
CcNode *
lw_lower_device_call(Lower *L, PyObject *node, PyObject *callee)
{
    Lower D = {0};
    PyObject *info = NULL, *funcdef = NULL;
    CcNode *n = NULL;
    int nargs;
    CcNode **args = lw_lower_expr_list(L, node, "args", &nargs);
    if (args == NULL
        || (info = PyObject_CallMethod(callee, "_numbavec_device_source", NULL)) == NULL) {
        goto done;
    }
    D.fn = L->fn;
    D.parent = L;
    D.device = callee;
    if ((D.src = device_source(L, info, &D.pyfunc, &funcdef)) == NULL) {
        goto done;
    }
    D.name = D.src->name;
    if (check_recursion(L, node, callee, D.name) < 0) {
        goto done;
    }
    if (nargs > TS_MAXARGS) {
        cc_error(L->fn, lw_loc_of(L, node), "too many arguments for %s()", D.name);
        goto done;
    }
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%.64s@%d.", D.name, ++L->fn->ninline);
    D.prefix = cc_strdup(L->fn->arena, prefix);
    D.result = D.prefix ? lw_add_var(L->fn, lw_scoped(&D, "return")) : NULL;
    if (D.result == NULL) {
        goto done;
    }
    D.globals = lw_get(D.pyfunc, "__globals__");
    D.closure = D.globals ? lw_closure_values(D.pyfunc) : NULL;
    if (D.globals == NULL || D.closure == NULL) {
        goto done;
    }
    if (lw_ast_kind(funcdef) != A_FUNCTIONDEF) {
        PyErr_SetString(PyExc_TypeError, "numbavec: a device function's source must be an "
                                         "ast.FunctionDef");
        goto done;
    }
    n = lw_new_node(L, ND_INLINE, node);
    if (n != NULL) {
        n->var = D.result;
        n->then = inline_body(&D, node, funcdef, args, nargs);
        n = n->then ? n : NULL;
    }
done:
    Py_XDECREF(D.globals);
    Py_XDECREF(D.closure);
    Py_XDECREF(info);
    return n;
}
