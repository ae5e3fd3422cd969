/*
 * inline.c - device functions (@numbavec.jit) and numbavec ufuncs, inlined
 * where a kernel calls them.
 *
 * A kernel reaches a callee only as an Inline object (_core.Inline): what
 * numbavec's Python side captured of it when the kernel's compilation read
 * its name (numbavec/_capture.py): the function whose globals and closure
 * its names resolve in, its ast.FunctionDef, its source, and a ufunc's
 * loops.  The Inline is the compiler's own, fixed when made: nothing done
 * to the user's objects afterwards (an attribute rebound) reaches it.
 *
 * lowercall.c hands over a call whose callee is an Inline.  Its FunctionDef is
 * lowered here into the caller's IR as one ND_INLINE expression, through a
 * Lower context of its own: its variables are the caller's renamed apart
 * ("name@n.var"), its names resolve in its own environment (resolve.c),
 * its parameters' defaults are the values its function holds (not their
 * expressions, evaluated again), its nodes point into its own source (for
 * carets), and the chain of contexts is what recursion is checked against.
 * Typing happens later, at each call site, so there is no calling
 * convention and every call gets the types of its own arguments.
 */
#include "compiler/lower.h"

/* ---- the Inline object ---- */

typedef struct Inline {
    PyObject_HEAD PyObject *pyfunc; /* its names resolve in its globals and closure */
    PyObject *funcdef;              /* ast.FunctionDef */
    PyObject *location;             /* (filename, first_line, lines, line_offset) */
    PyObject *loops;                /* None, or a ufunc's loops: a tuple of signatures */
    int dispatch; /* loops are a helper's signatures, chosen as Numba's dispatcher does */
} Inline;

/* Checks one loop of a ufunc: a signature of numbers (its arity is checked
 * where it is inlined); a helper's signature (dispatch) may also take and
 * return arrays, return nothing, or leave its result out (inferred).  0, or
 * -1 with TypeError (or the parser's error). */
static int
check_loop(PyObject *loop, int dispatch)
{
    TsSignature sig;
    if ((dispatch ? ts_parse_helper_signature : ts_parse_signature)(loop, &sig) < 0) {
        return -1;
    }
    for (int k = 0; k <= sig.nargs; k++) {
        const TsType *t = k < sig.nargs ? &sig.args[k] : &sig.ret;
        int number = t->kind >= 0 && t->kind < TS_NSCALAR;
        if (dispatch && (number || k == sig.nargs)) {
            continue;
        }
        if (!number || t->ndim != 0) {
            PyErr_SetString(PyExc_TypeError, "numbavec: a ufunc's loops take and return numbers");
            return -1;
        }
    }
    return 0;
}

/* What Inline(pyfunc, funcdef, location, loops) is given, checked. */
static int
check_inline(PyObject *pyfunc, PyObject *funcdef, PyObject *location, PyObject *loops, int dispatch)
{
    PyObject *globals = lw_get(pyfunc, "__globals__"), *filename, *lines;
    int first_line, line_offset, ok = globals != NULL && PyDict_Check(globals);
    Py_XDECREF(globals);
    PyErr_Clear();
    if (!ok || lw_ast_init() < 0 || lw_ast_kind(funcdef) != A_FUNCTIONDEF) {
        PyErr_SetString(PyExc_TypeError,
                        "Inline(pyfunc, funcdef, location, loops): a function and its "
                        "ast.FunctionDef");
        return -1;
    }
    if (!PyTuple_Check(location)
        || !PyArg_ParseTuple(location, "UiO!i", &filename, &first_line, &PyList_Type, &lines,
                             &line_offset)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "Inline: location is (filename, first_line, lines, line_offset)");
        return -1;
    }
    if (loops != Py_None && !PyTuple_Check(loops)) {
        PyErr_SetString(PyExc_TypeError, "Inline: loops is None or a tuple of signatures");
        return -1;
    }
    for (Py_ssize_t i = 0; loops != Py_None && i < PyTuple_Size(loops); i++) {
        if (check_loop(PyTuple_GetItem(loops, i), dispatch) < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *
inline_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef", "location", "loops", "dispatch", NULL};
    PyObject *pyfunc, *funcdef, *location, *loops = Py_None;
    int dispatch = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|Op", kwlist, &pyfunc, &funcdef, &location,
                                     &loops, &dispatch)
        || check_inline(pyfunc, funcdef, location, loops, dispatch) < 0) {
        return NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    Inline *self = (Inline *)alloc(type, 0);
    if (self != NULL) {
        self->pyfunc = Py_NewRef(pyfunc);
        self->funcdef = Py_NewRef(funcdef);
        self->location = Py_NewRef(location);
        self->loops = Py_NewRef(loops);
        self->dispatch = dispatch;
    }
    return (PyObject *)self;
}

static int
inline_traverse(PyObject *self, visitproc visit, void *arg)
{
    Inline *in = (Inline *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(in->pyfunc);
    Py_VISIT(in->funcdef);
    Py_VISIT(in->location);
    Py_VISIT(in->loops);
    return 0;
}

static int
inline_clear(PyObject *self)
{
    Inline *in = (Inline *)self;
    Py_CLEAR(in->pyfunc);
    Py_CLEAR(in->funcdef);
    Py_CLEAR(in->location);
    Py_CLEAR(in->loops);
    return 0;
}

static void
inline_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    inline_clear(self);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot inline_slots[] = {
    {Py_tp_new, inline_new},
    {Py_tp_dealloc, inline_dealloc},
    {Py_tp_traverse, inline_traverse},
    {Py_tp_clear, inline_clear},
    {Py_tp_doc, "Inline(pyfunc, funcdef, location, loops=None, dispatch=False): a callee as "
                "kernels inline it; loops: a ufunc's (NumPy's choice), or with dispatch a "
                "helper's signatures (Numba's dispatcher's choice) (internal: "
                "numbavec/_capture.py makes them)."},
    {0, NULL},
};

static PyType_Spec inline_spec = {
    "numbavec._core.Inline",
    sizeof(Inline),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    inline_slots,
};

int
cc_init_inline(PyObject *module)
{
    nv_state.inline_type = PyType_FromSpec(&inline_spec);
    if (nv_state.inline_type == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Inline", nv_state.inline_type);
}

/* ---- inlining ---- */

int
lw_is_device_function(PyObject *obj)
{
    return nv_state.inline_type != NULL && Py_TYPE(obj) == (PyTypeObject *)nv_state.inline_type;
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

/* The CcSource of the Inline in (whose location check_inline checked). */
static CcSource *
device_source(Lower *L, const Inline *in)
{
    PyObject *filename, *lines;
    CcSource *src = cc_alloc(L->fn->arena, sizeof(CcSource));
    if (src == NULL) {
        return NULL;
    }
    if (!PyArg_ParseTuple(in->location, "UiO!i", &filename, &src->first_line, &PyList_Type, &lines,
                          &src->line_offset)) {
        return NULL;
    }
    const char *fname = PyUnicode_AsUTF8AndSize(filename, NULL);
    PyObject *name = PyObject_GetAttrString(in->pyfunc, "__name__");
    const char *nm =
        name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    src->filename = fname ? cc_strdup(L->fn->arena, fname) : NULL;
    src->name = nm ? cc_strdup(L->fn->arena, nm) : NULL;
    Py_XDECREF(name);
    src->lines = lines;
    /* the arena keeps everything the IR points into */
    if (src->filename == NULL || src->name == NULL
        || cc_arena_keep(L->fn->arena, (PyObject *)in) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "numbavec: an inlined function without a name");
        }
        return NULL;
    }
    return src;
}

/* The name of parameter i of funcdef's arguments (positional ones, then
 * keyword-only ones), or NULL. */
static const char *
param_name(Lower *D, PyObject *fargs, int i, int *keyword_only, int *positional_only)
{
    const char *lists[3] = {"posonlyargs", "args", "kwonlyargs"};
    for (int j = 0; j < 3; j++) {
        PyObject *list = lw_get(fargs, lists[j]);
        Py_ssize_t n = list != NULL ? PyList_Size(list) : 0;
        if (i < n) {
            const char *name = lw_get_str(D, PyList_GetItem(list, i), "arg");
            *keyword_only = j == 2;
            *positional_only = j == 0;
            Py_XDECREF(list);
            return name;
        }
        i -= (int)n;
        Py_XDECREF(list);
    }
    return NULL;
}

/*
 * The default of parameter i of the inlined function (npos of its
 * parameters positional): the value its function holds, __defaults__ or
 * __kwdefaults__, as Python binds it (a new reference), or NULL with no
 * exception when it has none.  Values, not the expressions of the source:
 * those were evaluated once, when the def ran, as Python does.
 */
static PyObject *
default_value(Lower *D, PyObject *fargs, int i, int npos)
{
    PyObject *v = NULL;
    if (i < npos) {
        PyObject *defaults = lw_get(D->pyfunc, "__defaults__");
        Py_ssize_t first =
            defaults != NULL && PyTuple_Check(defaults) ? npos - PyTuple_Size(defaults) : npos;
        if (first >= 0 && i >= first) {
            v = Py_NewRef(PyTuple_GetItem(defaults, i - first));
        }
        Py_XDECREF(defaults);
        return v;
    }
    int kw_only, pos_only;
    const char *name = param_name(D, fargs, i, &kw_only, &pos_only);
    PyObject *kwdefaults = name != NULL ? lw_get(D->pyfunc, "__kwdefaults__") : NULL;
    if (kwdefaults != NULL && PyDict_Check(kwdefaults)) {
        v = Py_XNewRef(PyDict_GetItemString(kwdefaults, name));
    }
    Py_XDECREF(kwdefaults);
    return v;
}

/* A default value as a constant at ast (its expression in the source, or
 * the def): a number, a NumPy scalar or a tuple of them.  NULL with an error. */
static CcNode *
lower_default(Lower *D, PyObject *ast, PyObject *value, const char *param)
{
    CcNode *n = lw_value_const(D, ast, value);
    if (n != NULL || PyErr_Occurred()) {
        return n;
    }
    if (PyTuple_Check(value)) {
        int count = (int)PyTuple_Size(value);
        n = lw_new_node(D, ND_TUPLE, ast);
        if (n == NULL
            || (n->args = cc_alloc(D->fn->arena, sizeof(CcNode *) * (size_t)(count + 1))) == NULL) {
            return NULL;
        }
        for (n->nargs = 0; n->nargs < count; n->nargs++) {
            PyObject *item = PyTuple_GetItem(value, n->nargs);
            if ((n->args[n->nargs] = lower_default(D, ast, item, param)) == NULL) {
                return NULL;
            }
        }
        return n;
    }
    PyObject *tname = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__name__");
    const char *s = tname != NULL ? PyUnicode_AsUTF8AndSize(tname, NULL) : NULL;
    PyErr_Clear();
    cc_error(D->fn, lw_loc_of(D, ast),
             "the default value of '%s' (of type '%s') cannot be used in a kernel (only numbers, "
             "NumPy scalars and tuples of them)",
             param, s != NULL ? s : "?");
    Py_XDECREF(tname);
    return NULL;
}

/* The expression of parameter i's default in the source (new reference),
 * for carets: defaults or kw_defaults, else the def itself. */
static PyObject *
default_ast(PyObject *funcdef, PyObject *fargs, int i, int npos)
{
    PyObject *list = lw_get(fargs, i < npos ? "defaults" : "kw_defaults"), *ast = NULL;
    Py_ssize_t n = list != NULL ? PyList_Size(list) : 0;
    Py_ssize_t at = i < npos ? i - (npos - n) : i - npos;
    if (at >= 0 && at < n && PyList_GetItem(list, at) != Py_None) {
        ast = Py_NewRef(PyList_GetItem(list, at));
    }
    Py_XDECREF(list);
    return ast != NULL ? ast : Py_NewRef(funcdef);
}

static PyObject *nested_default(Lower *D, PyObject *funcdef, PyObject *fargs, int i, int npos);

/* A parameter's name as the function's source spells it (its variable's
 * name without the inlined prefix). */
static const char *
param_spelling(Lower *D, const CcVar *param)
{
    size_t k = D->prefix != NULL ? strlen(D->prefix) : 0;
    return strlen(param->name) >= k ? param->name + k : NULL;
}

/*
 * The arguments of a call bound to funcdef's nparams parameters, as Python
 * binds them: args (nargs positional), then keywords (kwnames[i] =
 * kwvalues[i]), then the defaults, the values the inlined function holds.
 * A missing, unexpected or repeated argument is a TypingError at the call.
 * 0/-1.
 */
static int
bind_arguments(Lower *D, PyObject *node, PyObject *funcdef, int nparams, CcNode **args, int nargs,
               const char **kwnames, CcNode **kwvalues, int nkw, CcNode **bound)
{
    PyObject *fargs = lw_get(funcdef, "args");
    PyObject *kwonly = fargs != NULL ? lw_get(fargs, "kwonlyargs") : NULL;
    int rc = -1;
    if (kwonly == NULL) {
        goto done;
    }
    int npos = nparams - (int)PyList_Size(kwonly);
    CcLoc at = lw_loc_of(D->parent, node);
    const CcSource *src = D->src;
    D->src = NULL; /* the caller's mistakes: errors point at the call */
    if (nargs > npos) {
        cc_error(D->fn, at, "%s() takes %d positional argument(s), %d given", D->name, npos, nargs);
        goto restore;
    }
    for (int i = 0; i < nparams; i++) {
        bound[i] = i < nargs ? args[i] : NULL;
    }
    for (int k = 0; k < nkw; k++) {
        int found = -1, kw_only, pos_only;
        for (int i = 0; found < 0 && i < nparams; i++) {
            const char *name = param_name(D, fargs, i, &kw_only, &pos_only);
            if (name != NULL && !pos_only && strcmp(name, kwnames[k]) == 0) {
                found = i;
            }
        }
        PyErr_Clear();
        if (found < 0 || bound[found] != NULL) {
            cc_error(D->fn, at,
                     found < 0 ? "%s() got an unexpected keyword argument '%s'"
                               : "%s() got multiple values for argument '%s'",
                     D->name, kwnames[k]);
            goto restore;
        }
        bound[found] = kwvalues[k];
    }
    D->src = src;
    for (int i = 0; i < nparams; i++) {
        if (bound[i] != NULL) {
            continue;
        }
        int kw_only, pos_only;
        const char *name = param_name(D, fargs, i, &kw_only, &pos_only);
        PyObject *value = D->nested_defaults ? nested_default(D, funcdef, fargs, i, npos)
                                             : default_value(D, fargs, i, npos);
        if (value == NULL) {
            if (!PyErr_Occurred()) {
                D->src = NULL;
                cc_error(D->fn, at, "%s() missing required argument '%s'", D->name,
                         name != NULL ? name : "?");
            }
            goto restore;
        }
        PyObject *ast = default_ast(funcdef, fargs, i, npos);
        bound[i] = lower_default(D, ast, value, name != NULL ? name : "?");
        Py_DECREF(ast);
        Py_DECREF(value);
        if (bound[i] == NULL) {
            goto restore;
        }
    }
    rc = 0;
restore:
    D->src = src;
done:
    Py_XDECREF(fargs);
    Py_XDECREF(kwonly);
    return rc;
}

/* What marks an argument that is a function (FnValue in the node's view). */
static const char FN_ARGUMENT[] = "a function given as an argument";

static int
is_fn_argument(const CcNode *n)
{
    return n != NULL && n->text == FN_ARGUMENT;
}

/* The function an argument's expression names (a helper, a Numba-decorated
 * function, a nested def, or a function a parameter was given), kept in an
 * FnValue; else NULL without an exception (an ordinary argument). */
static FnValue *
function_argument(Lower *L, PyObject *ast)
{
    AstKind kind = lw_ast_kind(ast);
    if (kind != A_NAME && kind != A_ATTRIBUTE) {
        return NULL;
    }
    PyObject *func = NULL;
    Lower *scope = NULL;
    const char *name = kind == A_NAME ? lw_get_str(L, ast, "id") : NULL;
    if (name != NULL) {
        func = lw_find_nested(L, name, &scope);
    }
    if (func == NULL && (name == NULL || lw_local_var(L, name) == NULL)) {
        int local = 0;
        PyObject *obj = lw_resolve_object(L, ast, &local);
        if (obj != NULL && lw_is_device_function(obj) && cc_arena_keep(L->fn->arena, obj) == 0) {
            func = obj; /* the arena keeps it */
        }
        Py_XDECREF(obj);
        PyErr_Clear();
    }
    FnValue *fv = func != NULL ? cc_alloc(L->fn->arena, sizeof(FnValue)) : NULL;
    if (fv != NULL) {
        *fv = (FnValue){NULL, func, scope};
    }
    return fv;
}

/* A call's positional arguments: each lowered, or a function marked. */
static CcNode **
call_arguments(Lower *L, PyObject *node, int *count)
{
    PyObject *list = lw_get(node, "args");
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_Size(list);
    CcNode **out = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(n + 1));
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *ast = PyList_GetItem(list, i);
        FnValue *fv = function_argument(L, ast);
        if (fv != NULL && (out[i] = lw_new_node(L, ND_BLOCK, ast)) != NULL) {
            out[i]->text = FN_ARGUMENT;
            out[i]->view = fv;
        } else if (fv == NULL && !PyErr_Occurred()) {
            out[i] = lw_lower_expr(L, ast);
        } else {
            out[i] = NULL;
        }
        if (out[i] == NULL) {
            out = NULL;
        }
    }
    Py_DECREF(list);
    *count = (int)n;
    return out;
}

/* A call's keyword arguments: their names, and their values lowered (or
 * functions marked, as call_arguments marks them).  0/-1. */
static int
call_keywords(Lower *L, PyObject *node, const char **names, CcNode **values, int *count)
{
    PyObject *keywords = lw_get(node, "keywords");
    Py_ssize_t n = keywords != NULL ? PyList_Size(keywords) : -1;
    int rc = n < 0 ? -1 : 0;
    for (Py_ssize_t k = 0; rc == 0 && k < n; k++) {
        PyObject *kw = PyList_GetItem(keywords, k);
        const char *name = lw_get_str(L, kw, "arg");
        if (name == NULL || k >= TS_MAXARGS) {
            PyErr_Clear();
            rc = cc_error(L->fn, lw_loc_of(L, kw),
                          name == NULL ? "**kwargs are not supported in a kernel"
                                       : "too many keyword arguments");
            break;
        }
        names[k] = name;
        PyObject *value = lw_get(kw, "value");
        FnValue *fv = value != NULL ? function_argument(L, value) : NULL;
        if (fv != NULL && (values[k] = lw_new_node(L, ND_BLOCK, value)) != NULL) {
            values[k]->text = FN_ARGUMENT;
            values[k]->view = fv;
        } else {
            values[k] =
                value != NULL && !PyErr_Occurred() && fv == NULL ? lw_lower_expr(L, value) : NULL;
        }
        Py_XDECREF(value);
        rc = values[k] != NULL ? 0 : -1;
    }
    Py_XDECREF(keywords);
    *count = (int)(n > 0 ? n : 0);
    return rc;
}

/* D, the context of a function inlined at node (nargs positional
 * arguments; its device and name set): recursion checked, its prefix and
 * its result variable made.  0/-1. */
static int
enter_inlined(Lower *L, PyObject *node, Lower *D, int nargs)
{
    if (check_recursion(L, node, D->device, D->name) < 0) {
        return -1;
    }
    if (nargs > TS_MAXARGS) {
        return cc_error(L->fn, lw_loc_of(L, node), "too many arguments for %s()", D->name);
    }
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%.64s@%d.", D->name, ++L->fn->ninline);
    D->prefix = cc_strdup(L->fn->arena, prefix);
    D->result = D->prefix ? lw_add_var(L->fn, lw_scoped(D, "return")) : NULL;
    return D->result != NULL ? 0 : -1;
}

/* The inlined body: parameters assigned the arguments, then the statements. */
static CcNode *
inline_body(Lower *D, PyObject *node, PyObject *funcdef, CcNode **given, int nargs,
            const char **kwnames, CcNode **kwvalues, int nkw)
{
    CcVar *params[TS_MAXARGS];
    CcNode *args[TS_MAXARGS];
    int nparams = 0;
    if (lw_lower_params(D, funcdef, params, &nparams) < 0
        || bind_arguments(D, node, funcdef, nparams, given, nargs, kwnames, kwvalues, nkw, args)
               < 0) {
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
    if ((D->fnvalues = cc_alloc(D->fn->arena, sizeof(FnValue) * (size_t)(nparams + 1))) == NULL) {
        return NULL;
    }
    for (int i = 0; i < nparams; i++) {
        if (is_fn_argument(args[i])) {
            /* a function: calls of the parameter inline it; no variable */
            FnValue *fv = &D->fnvalues[D->nfnvalues++];
            *fv = *(const FnValue *)args[i]->view;
            fv->name = param_spelling(D, params[i]);
            if ((body->args[i] = lw_new_node(D->parent, ND_BLOCK, node)) == NULL
                || fv->name == NULL) {
                return NULL;
            }
            continue;
        }
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
 * A helper with signatures (numbavec.jit's or Numba's): n->text is '!', then
 * per signature two letters a slot (its parameters, then its result):
 * 'a' + TsKind and '0' + ndim.  typeinfer picks one as Numba's dispatcher
 * does (cc_dispatch_types); the parameters are declared (set to it), the
 * result too when every signature returns a number.  Arity: bind_arguments.
 */
static int
dispatch_loops(Lower *L, CcNode *n, const Inline *in)
{
    Py_ssize_t nl = PyTuple_Size(in->loops);
    int np = n->then->nargs - 1, numbers = 1;
    size_t per = 2 * (size_t)(np + 1);
    char *text = cc_alloc(L->fn->arena, (size_t)nl * per + 2);
    if (text == NULL) {
        return -1;
    }
    text[0] = '!';
    for (Py_ssize_t i = 0; i < nl; i++) {
        TsSignature sig;
        if (ts_parse_helper_signature(PyTuple_GetItem(in->loops, i), &sig) < 0) {
            return -1;
        }
        if (sig.nargs != np) {
            /* decorators.py checks it at decoration, as Numba does */
            PyErr_Format(PyExc_TypeError, "numbavec: a signature of %d arguments for %d parameters",
                         sig.nargs, np);
            return -1;
        }
        for (int k = 0; k <= np; k++) {
            const TsType *t = k < np ? &sig.args[k] : &sig.ret;
            text[1 + (size_t)i * per + 2 * (size_t)k] = (char)('a' + t->kind);
            text[2 + (size_t)i * per + 2 * (size_t)k] = (char)('0' + t->ndim);
        }
        numbers &= sig.ret.kind < TS_NSCALAR && sig.ret.ndim == 0;
    }
    text[1 + (size_t)nl * per] = '\0';
    n->text = text;
    n->var->declared = numbers;
    for (int k = 0; k < np; k++) {
        n->then->args[k]->var->declared = 1;
    }
    return 0;
}

/*
 * A numbavec ufunc called in a kernel is its Python function inlined, in the
 * types of the loop NumPy would choose (the Inline's loops: its signatures,
 * checked when it was made, or None for a lazy ufunc, whose loop for any
 * types is the function typed with them): n->text lists the loops, and the
 * parameters and the result are declared variables whose types
 * inline_call sets.  A helper with signatures (dispatch) is dispatch_loops'.
 */
static int
ufunc_loops(Lower *L, CcNode *n, const Inline *in)
{
    if (in->loops == Py_None) {
        return 0;
    }
    if (in->dispatch) {
        return dispatch_loops(L, n, in);
    }
    Py_ssize_t nl = PyTuple_Size(in->loops);
    int np = n->then->nargs - 1;
    if (nl == 0) {
        n->text = ""; /* a lazy ufunc: any types (typeinfer lifts it over arrays) */
        return 0;
    }
    char *text = cc_alloc(L->fn->arena, (size_t)(nl * (np + 1) + 1));
    for (Py_ssize_t i = 0; text != NULL && i < nl; i++) {
        TsSignature sig;
        if (ts_parse_signature(PyTuple_GetItem(in->loops, i), &sig) < 0) {
            return -1;
        }
        if (sig.nargs != np) {
            PyErr_Format(PyExc_TypeError, "numbavec: a loop of %d inputs for %d parameters",
                         sig.nargs, np);
            return -1;
        }
        for (int k = 0; k <= np; k++) {
            text[i * (np + 1) + k] = (char)('a' + (k < np ? sig.args[k].kind : sig.ret.kind));
        }
    }
    if (text == NULL) {
        return -1;
    }
    n->text = text;
    n->var->declared = 1;
    for (int k = 0; k < np; k++) {
        n->then->args[k]->var->declared = 1;
    }
    return 0;
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
    const Inline *in = (const Inline *)callee;
    PyObject *funcdef = NULL;
    CcNode *n = NULL;
    int nargs, nkw = 0;
    const char *kwnames[TS_MAXARGS];
    CcNode *kwvalues[TS_MAXARGS];
    CcNode **args = call_arguments(L, node, &nargs);
    if (args == NULL || call_keywords(L, node, kwnames, kwvalues, &nkw) < 0) {
        goto done;
    }
    D.fn = L->fn;
    D.parent = L;
    D.device = callee;
    D.pyfunc = in->pyfunc;
    funcdef = in->funcdef;
    if ((D.src = device_source(L, in)) == NULL) {
        goto done;
    }
    D.name = D.src->name;
    if (enter_inlined(L, node, &D, nargs) < 0) {
        goto done;
    }
    D.globals = lw_get(D.pyfunc, "__globals__");
    D.closure = D.globals ? lw_closure_values(D.pyfunc) : NULL;
    if (D.globals == NULL || D.closure == NULL) {
        goto done;
    }
    n = lw_new_node(L, ND_INLINE, node);
    if (n != NULL) {
        n->var = D.result;
        n->then = inline_body(&D, node, funcdef, args, nargs, kwnames, kwvalues, nkw);
        n = n->then && ufunc_loops(L, n, in) == 0 ? n : NULL;
    }
done:
    Py_XDECREF(D.globals);
    Py_XDECREF(D.closure);
    return n;
}

/* ---- nested functions ---- */

int
lw_define_nested(Lower *L, const char *name, PyObject *funcdef)
{
    PyObject *decorators = lw_get(funcdef, "decorator_list");
    Py_ssize_t nd = decorators != NULL ? PyList_Size(decorators) : -1;
    Py_XDECREF(decorators);
    if (nd != 0) {
        return nd < 0 ? -1
                      : cc_error(L->fn, lw_loc_of(L, funcdef),
                                 "a function nested in a kernel takes no decorator (it is "
                                 "inlined where it is called)");
    }
    if (L->nested == NULL) {
        PyObject *d = PyDict_New();
        if (d == NULL || cc_arena_keep(L->fn->arena, d) < 0) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d); /* the arena holds it */
        L->nested = d;
    }
    return PyDict_SetItemString(L->nested, name, funcdef);
}

PyObject *
lw_find_nested(Lower *L, const char *name, Lower **scope)
{
    for (Lower *S = L; S != NULL; S = S->enclosing) {
        for (int i = 0; i < S->nfnvalues; i++) {
            if (strcmp(S->fnvalues[i].name, name) == 0) {
                *scope = S->fnvalues[i].scope;
                return S->fnvalues[i].func;
            }
        }
        PyObject *f = S->nested != NULL ? PyDict_GetItemString(S->nested, name) : NULL;
        if (f != NULL) {
            *scope = S;
            return f;
        }
        if (S != L && lw_var_owner(S, name) == S) {
            return NULL; /* a variable of that scope hides outer functions */
        }
    }
    return NULL;
}

/*
 * A nested function's defaults are expressions its def evaluated; a kernel
 * takes constants there (numbers, and -numbers), given as lower_default
 * takes values.  The kernel's other defaults come from function objects,
 * which a nested def has none of.
 */
static PyObject *
nested_default(Lower *D, PyObject *funcdef, PyObject *fargs, int i, int npos)
{
    PyObject *ast = default_ast(funcdef, fargs, i, npos);
    if (ast == funcdef) {
        Py_DECREF(ast);
        return NULL; /* none */
    }
    PyObject *mod = PyImport_ImportModule("ast");
    PyObject *v = mod != NULL ? PyObject_CallMethod(mod, "literal_eval", "O", ast) : NULL;
    Py_XDECREF(mod);
    if (v == NULL) {
        PyErr_Clear();
        cc_error(D->fn, lw_loc_of(D, ast),
                 "a default value of a function nested in a kernel must be a constant");
    }
    Py_DECREF(ast);
    return v;
}

CcNode *
lw_lower_nested_call(Lower *L, PyObject *node, PyObject *funcdef, Lower *scope)
{
    Lower D = {0};
    int nargs, nkw = 0;
    const char *kwnames[TS_MAXARGS];
    CcNode *kwvalues[TS_MAXARGS];
    CcNode *n = NULL;
    CcNode **args = call_arguments(L, node, &nargs);
    if (args == NULL || call_keywords(L, node, kwnames, kwvalues, &nkw) < 0) {
        return NULL;
    }
    D.fn = L->fn;
    D.parent = L;
    D.enclosing = scope;
    D.device = funcdef; /* what recursion is checked against */
    D.pyfunc = scope->pyfunc;
    D.src = scope->src;
    D.nested_defaults = 1;
    D.name = lw_get_str(L, funcdef, "name");
    if (D.name == NULL || enter_inlined(L, node, &D, nargs) < 0) {
        return NULL;
    }
    D.globals = Py_NewRef(scope->globals);
    D.closure = Py_NewRef(scope->closure);
    n = lw_new_node(L, ND_INLINE, node);
    if (n != NULL) {
        n->var = D.result;
        n->then = inline_body(&D, node, funcdef, args, nargs, kwnames, kwvalues, nkw);
        n = n->then != NULL ? n : NULL;
    }
    Py_XDECREF(D.globals);
    Py_XDECREF(D.closure);
    return n;
}
