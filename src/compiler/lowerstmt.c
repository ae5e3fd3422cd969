/*
 * lowerstmt.c - statements and control flow, for the lowering pass
 * (lower.h): assignments (unpacking, augmented, annotated, to an array
 * item), return, raise and assert (the exception frozen with its
 * arguments), print, if, while, the for loops (range, zip, enumerate,
 * np.ndindex, a.flat, an array's rows), break and continue, and blocks,
 * where a statement's TypingError is kept so that one error names every
 * unsupported construct.  Definite assignment is followed through each
 * branch (lower.c's lw_save_assigned, lw_merge_assigned).
 */
#include "compiler/lower.h"

#include <string.h>

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
    if (n == NULL || (n->lhs = lw_lower_index(L, target)) == NULL) {
        return NULL;
    }
    n->rhs = value;
    return n;
}

static CcVar *hidden_var(Lower *L, const char *what);
static CcNode *var_node(Lower *L, PyObject *at, CcVar *var);
static CcNode *assign_to(Lower *L, PyObject *stmt, PyObject *target, CcNode *value);

/* Whether a tuple target is names only (else it has items or tuples). */
static int
names_only(PyObject *elts)
{
    for (Py_ssize_t i = 0; i < PyList_Size(elts); i++) {
        if (lw_ast_kind(PyList_GetItem(elts, i)) != A_NAME) {
            return 0;
        }
    }
    return 1;
}

/* y[0], z[0] = f(a) (or a, (b, c[i]) = ...): the value unpacked into
 * hidden variables, then each target assigned from its own, left to right,
 * as Python does (so b[a], a = ... indexes with a's old value). */
static CcNode *
assign_through_temps(Lower *L, PyObject *stmt, PyObject *elts, CcNode *value)
{
    Py_ssize_t k = PyList_Size(elts);
    CcNode *block = lw_new_node(L, ND_BLOCK, stmt), *unpack = lw_new_node(L, ND_UNPACK, stmt);
    if (block == NULL || unpack == NULL
        || (block->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(k + 1))) == NULL
        || (unpack->vars = cc_alloc(L->fn->arena, sizeof(CcVar *) * (size_t)(k + 1))) == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        char what[32];
        snprintf(what, sizeof(what), "unpack%d", (int)i);
        if ((unpack->vars[i] = hidden_var(L, what)) == NULL) {
            return NULL;
        }
    }
    unpack->nargs = (int)k;
    unpack->rhs = value;
    block->args[block->nargs++] = unpack;
    for (Py_ssize_t i = 0; i < k; i++) {
        CcNode *v = var_node(L, stmt, unpack->vars[i]);
        if (v == NULL
            || (block->args[block->nargs++] = assign_to(L, stmt, PyList_GetItem(elts, i), v))
                   == NULL) {
            return NULL;
        }
    }
    return block;
}

/* Assigns value (already lowered) to target: a name, a tuple of targets, or
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
        if (!names_only(elts)) {
            CcNode *n = assign_through_temps(L, stmt, elts, value);
            Py_DECREF(elts);
            return n;
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

/* name = lambda args: expr: the nested function def name(args): return expr
 * (numbavec/_forms.py's lambda_as_def).  1 when node is one (defined), 0
 * when it is not, -1 on error. */
static int
define_lambda(Lower *L, PyObject *node)
{
    PyObject *targets = lw_get(node, "targets"), *value = lw_get(node, "value");
    const AstClass *c = value != NULL ? lw_ast_class(value) : NULL;
    int rc = 0;
    if (targets != NULL && PyList_Size(targets) == 1 && c != NULL && strcmp(c->name, "Lambda") == 0
        && lw_ast_kind(PyList_GetItem(targets, 0)) == A_NAME) {
        PyObject *target = PyList_GetItem(targets, 0);
        const char *name = lw_get_str(L, target, "id");
        PyObject *mod = name != NULL ? PyImport_ImportModule("numbavec._forms") : NULL;
        PyObject *def =
            mod != NULL ? PyObject_CallMethod(mod, "lambda_as_def", "sO", name, value) : NULL;
        rc = def != NULL && lw_define_nested(L, name, def) == 0 ? 1 : -1;
        Py_XDECREF(def);
        Py_XDECREF(mod);
    }
    Py_XDECREF(targets);
    Py_XDECREF(value);
    return rc;
}

/* assign := (target '=')+ expr       target: name | name, name, ... */
static CcNode *
lower_assign(Lower *L, PyObject *node)
{
    int defined = define_lambda(L, node);
    if (defined != 0) {
        return defined > 0 ? lw_new_node(L, ND_BLOCK, node) : NULL;
    }
    PyObject *targets = lw_get(node, "targets");
    CcNode *value = targets ? lw_lower_stored_value(L, node, targets) : NULL;
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
    CcNode *lhs = lw_lower_expr(L, target); /* reads the variable: checks assignment */
    CcNode *op = lw_new_node(L, ND_BINOP, node);
    int opcode = lw_node_op(L, node);
    if (lhs != NULL && op != NULL && opcode >= 0
        && (lhs->kind == ND_INDEX || lhs->kind == ND_GETITEM)) {
        /* a[i] op= v: a[i] = a[i] op v (indices are pure: evaluating them
         * twice is only a common subexpression for LLVM); t[0] op= v of a
         * local array t too (a tuple's item, typing finds, cannot be set) */
        op->op = (CcOp)opcode;
        op->lhs = lhs;
        if ((op->rhs = lw_lower_attr_expr(L, node, "value")) != NULL
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
    if ((op->rhs = lw_lower_attr_expr(L, node, "value")) != NULL) {
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
            CcNode *v = lw_lower_expr(L, value);
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
        n->lhs = lw_lower_expr(L, value);
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
    if (args == NULL || (not ->lhs = lw_lower_attr_expr(L, node, "test")) == NULL
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

/* ---- control flow: if, while, for ---- */

/* if := 'if' expr ':' block ['elif' ... | 'else' ':' block] */
static CcNode *
lower_if(Lower *L, PyObject *node)
{
    CcNode *n = lw_new_node(L, ND_IF, node);
    if (n == NULL || (n->cond = lw_lower_attr_expr(L, node, "test")) == NULL) {
        return NULL;
    }
    int known = cc_known_truth(n->cond);
    if (known >= 0) {
        /* `if DEBUG:` of a global constant: the branch not taken is not
         * lowered, so what it calls need not be in the kernel language
         * (prune.c) */
        CcNode *taken = lw_lower_block(L, node, known ? "body" : "orelse");
        CcNode *empty = taken != NULL ? lw_new_node(L, ND_BLOCK, node) : NULL;
        if (empty == NULL) {
            return NULL;
        }
        cc_keep_branch(n, taken, empty);
        return n;
    }
    char *before = lw_save_assigned(L);
    int term_before = L->terminated;
    if (before == NULL || (n->then = lw_lower_block(L, node, "body")) == NULL) {
        return NULL;
    }
    char *after_then = lw_save_assigned(L);
    int then_term = L->terminated;
    memcpy(L->assigned, before, (size_t)L->nassigned);
    L->terminated = term_before;
    if (after_then == NULL || (n->els = lw_lower_block(L, node, "orelse")) == NULL) {
        return NULL;
    }
    lw_merge_assigned(L, after_then, then_term, lw_save_assigned(L), L->terminated);
    return n;
}

/* Lowers a loop body: assignments in it may not happen; break/continue
 * end the path inside, not after the loop.  L->ran: what one iteration
 * binds on every way out of it (lw_bound_after_loop). */
static CcNode *
loop_body(Lower *L, PyObject *node, const char **before_out)
{
    char *before = lw_save_assigned(L), *outer = L->jumped;
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
    if (n == NULL || (n->cond = lw_lower_attr_expr(L, node, "test")) == NULL
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
        CcNode *value = it != NULL ? lw_lower_expr(L, src) : NULL;
        if ((pre->args[pre->nargs] = assign_node(L, src, it, value)) == NULL) {
            goto done;
        }
        pre->nargs++;
        CcNode *ref = var_node(L, src, it);
        if (ref == NULL || (lens[k] = lw_array_attr(L, src, AA_LEN, ref)) == NULL) {
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
                add->rhs = lw_lower_expr(L, PyList_GetItem(iters, 1));
            }
            value = add != NULL && add->rhs != NULL ? add : NULL;
        }
        if (j == NULL || (body->args[body->nargs] = assign_node(L, t, j, value)) == NULL) {
            goto done;
        }
        body->nargs++;
    }
    const char *before;
    char *saved = lw_save_assigned(L);
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

CcNode *
lw_hidden_call(Lower *L, PyObject *at, const char *name, CcNode **args, int nargs)
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
    char *saved = lw_save_assigned(L);
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
        || (loop->args[0] = lw_hidden_call(L, iter, ".ndsize", size_args, 1)) == NULL
        || (idx_args[0] = var_node(L, iter, k)) == NULL
        || (idx_args[1] = var_node(L, iter, sh)) == NULL) {
        return NULL;
    }
    pre->nargs = 1;
    loop->nargs = 1;
    loop->var = k;
    if (index_loop_body(L, node, loop, body, target,
                        lw_hidden_call(L, iter, ".unravel", idx_args, 2))
        < 0) {
        return NULL;
    }
    pre->args[pre->nargs++] = loop;
    return pre;
}

/*
 * for x in a.flat: a's elements in C order, lowered to a range loop:
 *   for k in range(a.size): x = a[.flatindex(k, a.shape)]; block
 * for i, x in enumerate(a.flat[, start]) (start: its AST, Py_None without
 * one; NULL: no enumerate): the target is (k + start, a[...]).
 */
static CcNode *
lower_for_flat(Lower *L, PyObject *node, CcNode *loop, PyObject *target, PyObject *iter,
               PyObject *base, PyObject *start)
{
    CcVar *k = hidden_var(L, "for.k");
    CcNode *body = lw_new_node(L, ND_BLOCK, node), *a = lw_lower_expr(L, base);
    if (k == NULL || body == NULL || a == NULL
        || (body->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 3)) == NULL
        || (loop->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) == NULL
        || (loop->args[0] = lw_array_attr(L, iter, AA_SIZE, a)) == NULL) {
        return NULL;
    }
    loop->nargs = 1;
    loop->var = k;
    CcNode *item = lw_flat_element(L, iter, base, var_node(L, iter, k));
    if (start != NULL && item != NULL) { /* enumerate: (k [+ start], item) */
        item = lw_enumerated(L, iter, var_node(L, iter, k), start, item);
    }
    if (index_loop_body(L, node, loop, body, target, item) < 0) {
        return NULL;
    }
    return loop;
}

/* The range() call of reversed(range(...)) (new reference), or NULL with
 * the error reported: reversed() of anything else is not in the language. */
static PyObject *
reversed_range(Lower *L, PyObject *iter)
{
    PyObject *args = lw_get(iter, "args"), *keywords = lw_get(iter, "keywords");
    PyObject *inner = NULL;
    if (args != NULL && keywords != NULL && PyList_Size(args) == 1 && PyList_Size(keywords) == 0) {
        PyObject *arg = PyList_GetItem(args, 0);
        PyObject *callee = callee_of(L, arg);
        if (is_builtin_named(callee, "range")) {
            inner = Py_NewRef(arg);
        }
        Py_XDECREF(callee);
    }
    Py_XDECREF(args);
    Py_XDECREF(keywords);
    if (inner == NULL && !PyErr_Occurred()) {
        cc_error(L->fn, lw_loc_of(L, iter),
                 "reversed() is supported over a range() in a for loop (for i in "
                 "reversed(range(n))); for an array, index it backwards: a[::-1]");
    }
    return inner;
}

/* for := 'for' name 'in' ['reversed' '('] 'range' '(' expr [',' expr [',' expr]] ')'
 *        [')'] ':' block ['else' ':' block]
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
    if (is_builtin_named(callee, "reversed")) {
        Py_XDECREF(callee);
        PyObject *inner = reversed_range(L, iter);
        if (inner == NULL) {
            goto done;
        }
        Py_DECREF(iter);
        iter = inner;
        n->index = 1; /* emit.c's for_stmt runs the range from its end */
        callee = callee_of(L, iter);
    }
    int range = is_builtin_named(callee, "range"), ndindex = lw_is_numpy_named(callee, "ndindex");
    PyObject *start = NULL, *flat_of = is_builtin_named(callee, "enumerate")
                                           ? lw_enumerated_flat(L, iter, &start)
                                           : NULL;
    Py_XDECREF(callee);
    if (flat_of != NULL) {
        PyObject *base = lw_flat_base(L, flat_of);
        result = lower_for_flat(L, node, n, target, flat_of, base, start);
        Py_DECREF(flat_of);
        Py_DECREF(start);
        Py_XDECREF(base);
        goto done;
    }
    if (ndindex) {
        result = lower_for_ndindex(L, node, n, target, iter);
        goto done;
    }
    PyObject *flat = lw_flat_base(L, iter);
    if (flat != NULL) {
        result = lower_for_flat(L, node, n, target, iter, flat, NULL);
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
    char *saved = lw_save_assigned(L);
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

/* ---- break and continue; a statement; a block ---- */

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

/*
 * A statement that calls a NumPy ufunc with its output (np.exp(a, out),
 * np.add(a, b, out=res)): the assignment res[...] = np.add(a, b) that
 * numbavec/_forms.py writes for it.  NULL with *err 0 when the statement is
 * no such call; NULL with *err 1 when it failed (reported).
 */
static CcNode *
lower_ufunc_out(Lower *L, PyObject *stmt, int *err)
{
    PyObject *call = lw_get(stmt, "value");
    PyObject *callee = call != NULL ? callee_of(L, call) : NULL;
    PyObject *form = NULL;
    CcNode *n = NULL;
    if (lw_ufunc_nin(callee) >= 0) {
        PyObject *mod = PyImport_ImportModule("numbavec._forms");
        form = mod != NULL
                   ? PyObject_CallMethod(mod, "ufunc_out_assignment", "OOO", stmt, call, callee)
                   : NULL;
        Py_XDECREF(mod);
        if (form == NULL) {
            *err = 1;
        } else if (PyUnicode_Check(form)) {
            *err = 1;
            cc_error(L->fn, lw_loc_of(L, call), "%s", PyUnicode_AsUTF8AndSize(form, NULL));
        } else if (form != Py_None) {
            *err = (n = lower_assign(L, form)) == NULL;
        }
    }
    if (!*err) {
        PyErr_Clear();
    }
    Py_XDECREF(form);
    Py_XDECREF(callee);
    Py_XDECREF(call);
    return n;
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
        int err = 0;
        CcNode *n = lower_ufunc_out(L, node, &err);
        if (n != NULL || err) {
            return n;
        }
        n = lw_new_node(L, ND_EXPR, node);
        if (n == NULL || (n->lhs = lw_lower_attr_expr(L, node, "value")) == NULL) {
            return NULL;
        }
        return n;
    }
    case A_FUNCTIONDEF: {
        const char *name = lw_get_str(L, node, "name");
        if (name == NULL || lw_define_nested(L, name, node) < 0) {
            return NULL;
        }
        return lw_new_node(L, ND_BLOCK, node);
    }
    default:
        lw_unsupported(L, node, "statement");
        return NULL;
    }
}

static CcNode *
lower_stmt(Lower *L, PyObject *node)
{
    CcNode *n = lw_enter(L, node) == 0 ? lower_stmt_kind(L, node) : NULL;
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
