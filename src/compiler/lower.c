/*
 * lower.c - Python `ast` objects -> the untyped IR tree.
 *
 * The decorator hands over the FunctionDef node parsed from the function's
 * source.  This pass walks it (switching on the node classes astkind.c
 * maps to AstKinds), builds CcNodes in the arena, and resolves every
 * name: a local variable (any name stored to in the function, as in
 * Python), else a closure cell, a global or a builtin whose value is frozen
 * now - a number, a NumPy scalar, a module (for `math.exp`) or a function
 * that builtins.c knows.  It also checks definite assignment: a local read
 * on a path where it may not be assigned is a TypingError at that line.
 *
 * Each lowering function carries the Python grammar it accepts above it.
 */
#include "compiler/lower.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

/* ---- the lowering context ---- */

/*
 * One function being lowered: the kernel, or a device function inlined
 * into it (then prefix names its variables apart, src points at its own
 * source, result is the variable its returns assign, and parent is the
 * caller's context: the chain that recursion is checked against).
 */
typedef struct Lower {
    CcFunction *fn;
    PyObject *pyfunc;  /* borrowed */
    PyObject *globals; /* owned: pyfunc.__globals__ */
    PyObject *closure; /* owned: {free variable name: value} */
    char *assigned;    /* definite assignment, one flag per variable */
    int nassigned;     /* variables that existed when assigned was made */
    int terminated;    /* the current path ended (return/break/continue) */
    int loop_depth;
    const char *name;    /* the function's name, for messages */
    const CcSource *src; /* NULL for the kernel */
    const char *prefix;  /* "name@n." for an inlined function, else NULL */
    CcVar *result;       /* inlined: the variable returns assign */
    PyObject *device;    /* inlined: the device function object (borrowed) */
    struct Lower *parent;
} Lower;

/* node.attr (new reference), or NULL.  Nothing is looked up while an
 * exception is pending: lowering goes on after a failed step only to
 * unwind, and Python must not be entered with an exception set (it may
 * replace or drop it). */
static PyObject *
get(PyObject *node, const char *attr)
{
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyObject_GetAttrString(node, attr);
}

/* Where node is; {0, 0} when it says nothing.  An exception pending when
 * it is called stays pending (callers report errors at a location). */
static CcLoc
loc_of(Lower *L, PyObject *node)
{
    CcLoc loc = {0, 0};
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *line = get(node, "lineno"), *col = get(node, "col_offset");
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

static CcNode *
new_node(Lower *L, CcNodeKind kind, PyObject *ast)
{
    if (++L->fn->nnodes > MAX_NODES) {
        if (!PyErr_Occurred()) {
            cc_error(L->fn,
                     ast != NULL   ? loc_of(L, ast)
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
        n->loc = ast != NULL ? loc_of(L, ast) : L->fn->body ? L->fn->body->loc : (CcLoc){0, 0};
    }
    return n;
}

static int
unsupported(Lower *L, PyObject *node, const char *context)
{
    const AstClass *c = lw_ast_class(node);
    CcLoc loc = loc_of(L, node);
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

/* ---- variables ---- */

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

static CcVar *
add_var(CcFunction *fn, const char *name)
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
static const char *
scoped(Lower *L, const char *name)
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

static CcVar *
local_var(Lower *L, const char *name)
{
    const char *s = scoped(L, name);
    return s != NULL ? find_var(L->fn, s) : NULL;
}

/* A str attribute of node copied into the arena (e.g. Name.id). */
static const char *
get_str(Lower *L, PyObject *node, const char *attr)
{
    PyObject *s = get(node, attr);
    if (s == NULL) {
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8AndSize(s, NULL);
    char *copy = text != NULL ? cc_strdup(L->fn->arena, text) : NULL;
    Py_DECREF(s);
    return copy;
}

/* Every name stored to anywhere in the function is local (Python's rule). */
static int
collect_locals(Lower *L, PyObject *funcdef)
{
    PyObject *ast = PyImport_ImportModule("ast");
    PyObject *walk = ast ? PyObject_CallMethod(ast, "walk", "O", funcdef) : NULL;
    PyObject *it = walk ? PyObject_GetIter(walk) : NULL;
    PyObject *node;
    int rc = it ? 0 : -1;
    while (rc == 0 && (node = PyIter_Next(it)) != NULL) {
        if (lw_ast_kind(node) == A_NAME) {
            PyObject *ctx = get(node, "ctx");
            if (ctx == NULL) {
                rc = -1;
            } else if (lw_ast_kind(ctx) == A_STORE) {
                const char *name = get_str(L, node, "id");
                name = scoped(L, name);
                rc = (name == NULL || add_var(L->fn, name) == NULL) ? -1 : 0;
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
 * on; a terminated path does not go on. */
static void
merge_assigned(Lower *L, const char *a, int a_term, const char *b, int b_term)
{
    for (int i = 0; i < L->nassigned; i++) {
        L->assigned[i] = a_term ? b[i] : b_term ? a[i] : (char)(a[i] && b[i]);
    }
    L->terminated = a_term && b_term;
}

/* ---- frozen globals ---- */

/* The value of a non-local name: closure cell, global, builtin.  New ref. */
static PyObject *
resolve_global(Lower *L, const char *name, CcLoc loc)
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
            cc_error(L->fn, loc, "name '%s' is not defined", name);
        }
        return b;
    }
    Py_INCREF(v);
    return v;
}

static CcNode *
const_node(Lower *L, PyObject *ast, const CcType *ty)
{
    CcNode *n = new_node(L, ND_CONST, ast);
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
        if (overflow < 0 || e < 0) {
            return 1; /* a float, or no shift: Python decides */
        }
        need = overflow ? LLONG_MAX : op == OP_LSHIFT ? abits + e : (abits <= 1 ? 1 : abits * e);
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
static CcNode *
fold_int_op(Lower *L, CcNode *n)
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
        cc_error(L->fn, loc_of(L, ast), "a NumPy scalar of this dtype cannot be used in a kernel");
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
static CcNode *
value_const(Lower *L, PyObject *ast, PyObject *value)
{
    if (PyBool_Check(value)) {
        CcNode *n = const_node(L, ast, cc_scalar_type(TS_BOOL));
        if (n != NULL) {
            n->ival = value == Py_True;
        }
        return n;
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
    if (PyArray_IsScalar(value, Generic)) {
        return numpy_const(L, ast, value);
    }
    return NULL;
}

/* ---- expressions ---- */

static CcNode *lower_expr(Lower *L, PyObject *node);

/* Lowers node.attr (an expression) into *out. */
static CcNode *
lower_attr_expr(Lower *L, PyObject *node, const char *attr)
{
    PyObject *value = get(node, attr);
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lower_expr(L, value);
    Py_DECREF(value);
    return n;
}

/* Lowers the list node.attr into a new arena array; *count gets its size. */
static CcNode **
lower_expr_list(Lower *L, PyObject *node, const char *attr, int *count)
{
    PyObject *list = get(node, attr);
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
        cc_error(L->fn, loc_of(L, at), "the '%s' operator is not supported in a kernel", c->what);
        return -1;
    }
    return c->op;
}

static int
node_op(Lower *L, PyObject *node)
{
    PyObject *op = get(node, "op");
    if (op == NULL) {
        return -1;
    }
    int rc = lower_op(L, op, node);
    Py_DECREF(op);
    return rc;
}

/* binop := expr op expr */
static CcNode *
lower_binop(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_BINOP, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lower_attr_expr(L, node, "left");
    n->rhs = n->lhs ? lower_attr_expr(L, node, "right") : NULL;
    return n->rhs ? fold_int_op(L, n) : NULL;
}

/* unary := ('-' | '+' | '~' | 'not') expr */
static CcNode *
lower_unary(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_UNARY, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    n->lhs = lower_attr_expr(L, node, "operand");
    return n->lhs ? fold_int_op(L, n) : NULL;
}

/* boolop := expr ('and' | 'or') expr ... */
static CcNode *
lower_boolop(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_BOOLOP, node);
    int op = node_op(L, node);
    if (n == NULL || op < 0) {
        return NULL;
    }
    n->op = (CcOp)op;
    /* only the first operand is always evaluated */
    char *before = save_assigned(L);
    n->args = lower_expr_list(L, node, "values", &n->nargs);
    if (before != NULL) {
        memcpy(L->assigned, before, (size_t)L->nassigned);
    }
    return n->args ? n : NULL;
}

/* compare := expr (cmpop expr)+ */
static CcNode *
lower_compare(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_COMPARE, node);
    PyObject *ops = get(node, "ops"), *comparators = get(node, "comparators");
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
    CcNode *n = new_node(L, ND_IFEXP, node);
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

/*
 * The Python object an expression names, for names and attribute chains
 * that are not locals: `math`, `math.pi`, `np.float32`.  New reference;
 * NULL with a TypingError.  *local is set instead when the base is a local.
 */
static PyObject *
resolve_object(Lower *L, PyObject *node, int *local)
{
    AstKind kind = lw_ast_kind(node);
    *local = 0;
    if (kind == A_NAME) {
        const char *name = get_str(L, node, "id");
        if (name == NULL) {
            return NULL;
        }
        if (local_var(L, name) != NULL) {
            *local = 1;
            return NULL;
        }
        return resolve_global(L, name, loc_of(L, node));
    }
    if (kind == A_ATTRIBUTE) {
        PyObject *base_node = get(node, "value");
        if (base_node == NULL) {
            return NULL;
        }
        PyObject *base = resolve_object(L, base_node, local);
        Py_DECREF(base_node);
        const char *attr = get_str(L, node, "attr");
        if (base == NULL || attr == NULL) {
            Py_XDECREF(base);
            return NULL;
        }
        PyObject *v = PyObject_GetAttrString(base, attr);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            cc_error(L->fn, loc_of(L, node), "'%s' has no attribute '%s'",
                     PyModule_Check(base) ? PyModule_GetName(base) : "object", attr);
        } else if (v == NULL) {
            char what[128];
            snprintf(what, sizeof(what), "reading attribute '%.64s'", attr);
            cc_error_raised(L->fn, loc_of(L, node), what);
        }
        Py_DECREF(base);
        return v;
    }
    *local = 1; /* any other expression: its value is computed */
    return NULL;
}

/* The frozen value of a global or attribute chain, as a constant. */
static CcNode *
lower_frozen(Lower *L, PyObject *node, PyObject *value)
{
    CcNode *n = value_const(L, node, value);
    if (n != NULL || PyErr_Occurred()) {
        return n;
    }
    PyObject *tname = PyObject_GetAttrString((PyObject *)Py_TYPE(value), "__name__");
    const char *s = tname != NULL ? PyUnicode_AsUTF8AndSize(tname, NULL) : NULL;
    if (cc_builtin_lookup(value) >= 0 || PyModule_Check(value)) {
        cc_error(L->fn, loc_of(L, node),
                 "a %s can only be called or used for its "
                 "attributes in a kernel",
                 s != NULL ? s : "function");
    } else {
        cc_error(L->fn, loc_of(L, node),
                 "a value of type '%s' cannot be used in a kernel "
                 "(only numbers, NumPy scalars, math/cmath/numpy and their functions)",
                 s != NULL ? s : "?");
    }
    Py_XDECREF(tname);
    return NULL;
}

/* name := identifier   (a local, or a frozen global/closure value) */
static CcNode *
lower_name(Lower *L, PyObject *node)
{
    const char *name = get_str(L, node, "id");
    if (name == NULL) {
        return NULL;
    }
    CcVar *var = local_var(L, name);
    if (var != NULL) {
        if (!L->assigned[var->index] && !L->terminated) {
            cc_error(L->fn, loc_of(L, node),
                     "local variable '%s' may be used before it is "
                     "assigned",
                     name);
            return NULL;
        }
        CcNode *n = new_node(L, ND_VAR, node);
        if (n != NULL) {
            n->var = var;
        }
        return n;
    }
    PyObject *value = resolve_global(L, name, loc_of(L, node));
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = lower_frozen(L, node, value);
    Py_DECREF(value);
    return n;
}

/*
 * abs(), int(), min() and max() of Python int constants, folded exactly as
 * Python computes them (abs(-2**63) is 2**63, not int64's -2**63); n
 * unchanged otherwise.  NULL with an exception.
 */
static CcNode *
fold_int_call(Lower *L, CcNode *n, CcFlavor flavor)
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

static CcNode *
builtin_call(Lower *L, PyObject *at, int builtin, CcNode **args, int nargs)
{
    const CcBuiltin *b = cc_builtin(builtin);
    if (nargs < b->min_args || nargs > b->max_args) {
        cc_error(L->fn, loc_of(L, at), "%s() takes %d%s argument(s), %d given", b->name,
                 b->min_args, b->max_args > b->min_args ? " or more" : "", nargs);
        return NULL;
    }
    CcNode *n = new_node(L, ND_CALL, at);
    if (n != NULL) {
        n->builtin = builtin;
        n->args = args;
        n->nargs = nargs;
    }
    return n != NULL ? fold_int_call(L, n, b->flavor) : NULL;
}

/* ---- arrays (gufunc kernels) ---- */

/* Nonzero when node is the name of a parameter: only parameters can be
 * arrays, so only their subscripts are array indexing. */
static int
is_param_name(Lower *L, PyObject *node)
{
    if (lw_ast_kind(node) != A_NAME) {
        return 0;
    }
    const char *name = get_str(L, node, "id");
    CcVar *var = name != NULL ? find_var(L->fn, name) : NULL;
    PyErr_Clear();
    return var != NULL && var->is_param;
}

/* index := name '[' expr (',' expr)* ']'     (typeinfer checks it is an array) */
static CcNode *
lower_index(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_INDEX, node);
    PyObject *slice = get(node, "slice");
    CcNode *result = NULL;
    if (n == NULL || slice == NULL || (n->lhs = lower_attr_expr(L, node, "value")) == NULL) {
        goto done;
    }
    if (lw_ast_kind(slice) == A_TUPLE) {
        n->args = lower_expr_list(L, slice, "elts", &n->nargs);
    } else if ((n->args = cc_alloc(L->fn->arena, sizeof(CcNode *))) != NULL) {
        n->nargs = 1;
        n->args[0] = lower_expr(L, slice);
        if (n->args[0] == NULL) {
            n->args = NULL;
        }
    }
    result = n->args != NULL ? n : NULL;
done:
    Py_XDECREF(slice);
    return result;
}

/* The attributes of an array: a.shape, a.size, a.ndim (and len(a)). */
static CcNode *
array_attr(Lower *L, PyObject *at, CcArrayAttr which, CcNode *array)
{
    CcNode *n = new_node(L, ND_ARRAYATTR, at);
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
    PyObject *value = resolve_object(L, node, &local);
    if (value != NULL) {
        CcNode *n = lower_frozen(L, node, value);
        Py_DECREF(value);
        return n;
    }
    if (!local) {
        return NULL;
    }
    const char *attr = get_str(L, node, "attr");
    if (attr == NULL) {
        return NULL;
    }
    static const char *const array_attrs[] = {"shape", "size", "ndim"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(attr, array_attrs[i]) == 0) {
            CcNode *array = lower_attr_expr(L, node, "value");
            return array != NULL ? array_attr(L, node, (CcArrayAttr)i, array) : NULL;
        }
    }
    CcFlavor flavor = strcmp(attr, "real") == 0 ? FL_REAL : FL_IMAG;
    if (strcmp(attr, "real") != 0 && strcmp(attr, "imag") != 0) {
        cc_error(L->fn, loc_of(L, node),
                 "attribute '%s' is not supported on a value in a "
                 "kernel (only .real and .imag)",
                 attr);
        return NULL;
    }
    CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *));
    if (args == NULL || (args[0] = lower_attr_expr(L, node, "value")) == NULL) {
        return NULL;
    }
    return builtin_call(L, node, cc_builtin_attr(flavor), args, 1);
}

/* ---- device functions ---- */

static CcNode *lower_block(Lower *L, PyObject *node, const char *attr);
static int lower_params(Lower *L, PyObject *funcdef, CcVar **params, int *nparams);
static int collect_locals(Lower *L, PyObject *funcdef);
static PyObject *closure_values(PyObject *pyfunc);

/* A @numbavec.jit object: it can hand over its parsed source. */
static int
is_device_function(PyObject *obj)
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
    return cc_error(L->fn, loc_of(L, node),
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
    if (lower_params(D, funcdef, params, &nparams) < 0) {
        return NULL;
    }
    if (nparams != nargs) {
        D->src = NULL; /* the caller's mistake: point at the call */
        cc_error(D->fn, loc_of(D->parent, node), "%s() takes %d argument(s), %d given", D->name,
                 nparams, nargs);
        return NULL;
    }
    if (collect_locals(D, funcdef) < 0) {
        return NULL;
    }
    D->nassigned = D->fn->nvars;
    D->assigned = cc_alloc(D->fn->arena, (size_t)D->nassigned + 1);
    CcNode *body = D->assigned ? new_node(D, ND_BLOCK, funcdef) : NULL;
    if (body == NULL
        || (body->args = cc_alloc(D->fn->arena, sizeof(CcNode *) * (size_t)(nparams + 1)))
               == NULL) {
        return NULL;
    }
    for (int i = 0; i < nparams; i++) {
        CcNode *a = new_node(D->parent, ND_ASSIGN, node);
        if (a == NULL) {
            return NULL;
        }
        a->var = params[i];
        a->rhs = args[i];
        body->args[i] = a;
        D->assigned[params[i]->index] = 1;
    }
    if ((body->args[nparams] = lower_block(D, funcdef, "body")) == NULL) {
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
static CcNode *
lower_device_call(Lower *L, PyObject *node, PyObject *callee)
{
    Lower D = {0};
    PyObject *info = NULL, *funcdef = NULL;
    CcNode *n = NULL;
    int nargs;
    CcNode **args = lower_expr_list(L, node, "args", &nargs);
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
        cc_error(L->fn, loc_of(L, node), "too many arguments for %s()", D.name);
        goto done;
    }
    char prefix[96];
    snprintf(prefix, sizeof(prefix), "%.64s@%d.", D.name, ++L->fn->ninline);
    D.prefix = cc_strdup(L->fn->arena, prefix);
    D.result = D.prefix ? add_var(L->fn, scoped(&D, "return")) : NULL;
    if (D.result == NULL) {
        goto done;
    }
    D.globals = get(D.pyfunc, "__globals__");
    D.closure = D.globals ? closure_values(D.pyfunc) : NULL;
    if (D.globals == NULL || D.closure == NULL) {
        goto done;
    }
    if (lw_ast_kind(funcdef) != A_FUNCTIONDEF) {
        PyErr_SetString(PyExc_TypeError, "numbavec: a device function's source must be an "
                                         "ast.FunctionDef");
        goto done;
    }
    n = new_node(L, ND_INLINE, node);
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

/* call := func '(' args ')'    func: a builtin, len, a device function, a type
 *                              (a cast), or expr '.conjugate' */
static CcNode *
lower_call(Lower *L, PyObject *node)
{
    PyObject *func = get(node, "func"), *keywords = get(node, "keywords");
    CcNode *n = NULL;
    if (func == NULL || keywords == NULL) {
        goto done;
    }
    if (PyList_Size(keywords) > 0) {
        cc_error(L->fn, loc_of(L, node), "keyword arguments are not supported in a kernel");
        goto done;
    }
    int local, nargs;
    PyObject *callee = resolve_object(L, func, &local);
    if (callee == NULL && local && lw_ast_kind(func) == A_ATTRIBUTE) {
        const char *attr = get_str(L, func, "attr");
        if (attr != NULL && strcmp(attr, "conjugate") == 0) {
            CcNode **args = cc_alloc(L->fn->arena, sizeof(CcNode *));
            if (args != NULL && (args[0] = lower_attr_expr(L, func, "value")) != NULL) {
                n = builtin_call(L, node, cc_builtin_attr(FL_CONJ), args, 1);
            }
            goto done;
        }
        cc_error(L->fn, loc_of(L, func),
                 "method calls are not supported in a kernel "
                 "(only .conjugate())");
        goto done;
    }
    if (callee == NULL) {
        if (local) {
            cc_error(L->fn, loc_of(L, func), "only builtin functions can be called in a kernel");
        }
        goto done;
    }
    if (is_device_function(callee)) {
        n = lower_device_call(L, node, callee);
        Py_DECREF(callee);
        goto done;
    }
    if (is_builtin_len(callee)) {
        Py_DECREF(callee);
        CcNode **args = lower_expr_list(L, node, "args", &nargs);
        if (args != NULL && nargs != 1) {
            cc_error(L->fn, loc_of(L, node), "len() takes 1 argument, %d given", nargs);
        } else if (args != NULL) {
            n = array_attr(L, node, AA_LEN, args[0]);
        }
        goto done;
    }
    int builtin = cc_builtin_lookup(callee);
    TsType cast;
    if (builtin == -1 && ts_type_check(callee, &cast) && cast.ndim == 0 && cast.kind < TS_NSCALAR) {
        builtin = cc_builtin_cast(cast.kind); /* numbavec.float32(x): a cast */
    }
    if (builtin < 0) {
        if (builtin == -1) {
            PyObject *r = PyObject_Repr(callee);
            const char *s = r != NULL ? PyUnicode_AsUTF8AndSize(r, NULL) : NULL;
            cc_error(L->fn, loc_of(L, func), "%s cannot be called in a kernel%s", s ? s : "this",
                     PyObject_HasAttrString(callee, "__code__")
                         ? " (decorate it with @numbavec.jit)"
                         : "");
            Py_XDECREF(r);
        }
        Py_DECREF(callee);
        goto done;
    }
    Py_DECREF(callee);
    CcNode **args = lower_expr_list(L, node, "args", &nargs);
    if (args != NULL) {
        n = builtin_call(L, node, builtin, args, nargs);
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
    PyObject *value = get(node, "value");
    if (value == NULL) {
        return NULL;
    }
    CcNode *n = value_const(L, node, value);
    if (n == NULL && !PyErr_Occurred()) {
        const char *what = PyUnicode_Check(value) ? "strings"
                           : value == Py_None     ? "None"
                           : PyBytes_Check(value) ? "bytes"
                                                  : "this constant";
        cc_error(L->fn, loc_of(L, node), "%s %s not supported in a kernel", what,
                 value == Py_None ? "is" : "are");
    }
    Py_DECREF(value);
    return n;
}

/* tuple := '(' expr, ... ')' */
static CcNode *
lower_tuple(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_TUPLE, node);
    if (n == NULL || (n->args = lower_expr_list(L, node, "elts", &n->nargs)) == NULL) {
        return NULL;
    }
    return n;
}

/* subscript := expr '[' integer constant ']'     (tuples)
 *            | index                             (arrays: a parameter) */
static CcNode *
lower_subscript(Lower *L, PyObject *node)
{
    PyObject *base = get(node, "value");
    int array = base != NULL && is_param_name(L, base);
    Py_XDECREF(base);
    if (array) {
        return lower_index(L, node);
    }
    CcNode *n = new_node(L, ND_GETITEM, node);
    PyObject *slice = get(node, "slice");
    PyObject *value = NULL;
    if (n == NULL || slice == NULL) {
        goto error;
    }
    /* a constant index, possibly negated */
    int negate = 0;
    if (lw_ast_kind(slice) == A_UNARYOP) {
        PyObject *op = get(slice, "op"), *operand = get(slice, "operand");
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
    if (lw_ast_kind(slice) != A_CONSTANT || (value = get(slice, "value")) == NULL
        || !PyLong_Check(value) || PyBool_Check(value)) {
        PyErr_Clear();
        cc_error(L->fn, loc_of(L, node),
                 "only tuples indexed by an integer constant are "
                 "supported in a kernel");
        goto error;
    }
    int overflow;
    long long index = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || index > INT_MAX || index < -(long long)INT_MAX) {
        PyErr_Clear();
        cc_error(L->fn, loc_of(L, node), "tuple index out of range");
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
        cc_error(L->fn, loc_of(L, node),
                 "the kernel is nested too deeply for this thread's stack (more than %d levels "
                 "here; compile it on a thread with a larger stack)",
                 L->fn->max_depth);
    } else {
        cc_error(L->fn, loc_of(L, node),
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

static CcNode *lower_block(Lower *L, PyObject *node, const char *attr);

static CcVar *
target_var(Lower *L, PyObject *target)
{
    if (lw_ast_kind(target) != A_NAME) {
        if (lw_ast_kind(target) == A_SUBSCRIPT) {
            cc_error(L->fn, loc_of(L, target),
                     "item assignment is not supported in a "
                     "vectorize kernel");
        } else {
            cc_error(L->fn, loc_of(L, target), "only names can be assigned to in a kernel");
        }
        return NULL;
    }
    const char *name = get_str(L, target, "id");
    return name != NULL ? local_var(L, name) : NULL;
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
    CcNode *n = new_node(L, ND_SETITEM, stmt);
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
        PyObject *base = get(target, "value");
        int array = base != NULL && is_param_name(L, base);
        Py_XDECREF(base);
        if (array) {
            return lower_setitem(L, stmt, target, value);
        }
    }
    if (lw_ast_kind(target) == A_TUPLE) {
        PyObject *elts = get(target, "elts");
        if (elts == NULL) {
            return NULL;
        }
        CcNode *n = new_node(L, ND_UNPACK, stmt);
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
    CcNode *n = var != NULL ? new_node(L, ND_ASSIGN, stmt) : NULL;
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
    PyObject *targets = get(node, "targets");
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
    CcNode *block = new_node(L, ND_BLOCK, node);
    if (block == NULL
        || (block->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)k)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *t = PyList_GetItem(targets, i);
        CcNode *v = value;
        if (i > 0) {
            if (lw_ast_kind(PyList_GetItem(targets, 0)) != A_NAME) {
                cc_error(L->fn, loc_of(L, node),
                         "chained assignment to tuples is not "
                         "supported in a kernel");
                goto done;
            }
            v = new_node(L, ND_VAR, node);
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
    PyObject *target = get(node, "target");
    CcNode *result = NULL;
    if (target == NULL) {
        return NULL;
    }
    CcNode *lhs = lower_expr(L, target); /* reads the variable: checks assignment */
    CcNode *op = new_node(L, ND_BINOP, node);
    int opcode = node_op(L, node);
    if (lhs != NULL && op != NULL && opcode >= 0 && lhs->kind == ND_INDEX) {
        /* a[i] op= v: a[i] = a[i] op v (indices are pure: evaluating them
         * twice is only a common subexpression for LLVM) */
        op->op = (CcOp)opcode;
        op->lhs = lhs;
        if ((op->rhs = lower_attr_expr(L, node, "value")) != NULL) {
            result = lower_setitem(L, node, target, op);
        }
        goto done;
    }
    if (lhs == NULL || op == NULL || opcode < 0 || lhs->kind != ND_VAR) {
        if (lhs != NULL && lhs->kind != ND_VAR && !PyErr_Occurred()) {
            cc_error(L->fn, loc_of(L, node), "only local variables can be updated in a kernel");
        }
        goto done;
    }
    op->op = (CcOp)opcode;
    op->lhs = lhs;
    if ((op->rhs = lower_attr_expr(L, node, "value")) != NULL) {
        result = assign_to(L, node, target, op);
    }
done:
    Py_DECREF(target);
    return result;
}

/* annassign := name ':' annotation ['=' expr]   (the annotation is ignored) */
static CcNode *
lower_annassign(Lower *L, PyObject *node)
{
    PyObject *target = get(node, "target"), *value = get(node, "value");
    CcNode *result = NULL;
    if (target != NULL && value != NULL) {
        if (value == Py_None) {
            result = new_node(L, ND_BLOCK, node); /* a bare declaration */
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
    PyObject *value = get(node, "value");
    CcNode *n = NULL;
    if (value == Py_None) {
        if (L->result != NULL) {
            cc_error(L->fn, loc_of(L, node), "a device function must return a value");
        } else {
            /* a bare return: typeinfer allows it in gufunc kernels only */
            n = new_node(L, ND_RETURN, node);
        }
    } else if (value != NULL && (n = new_node(L, ND_RETURN, node)) != NULL) {
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

/* if := 'if' expr ':' block ['elif' ... | 'else' ':' block] */
static CcNode *
lower_if(Lower *L, PyObject *node)
{
    CcNode *n = new_node(L, ND_IF, node);
    if (n == NULL || (n->cond = lower_attr_expr(L, node, "test")) == NULL) {
        return NULL;
    }
    char *before = save_assigned(L);
    int term_before = L->terminated;
    if (before == NULL || (n->then = lower_block(L, node, "body")) == NULL) {
        return NULL;
    }
    char *after_then = save_assigned(L);
    int then_term = L->terminated;
    memcpy(L->assigned, before, (size_t)L->nassigned);
    L->terminated = term_before;
    if (after_then == NULL || (n->els = lower_block(L, node, "orelse")) == NULL) {
        return NULL;
    }
    merge_assigned(L, after_then, then_term, save_assigned(L), L->terminated);
    return n;
}

/* Lowers a loop body: assignments in it may not happen; break/continue
 * end the path inside, not after the loop. */
static CcNode *
loop_body(Lower *L, PyObject *node, const char **before_out)
{
    char *before = save_assigned(L);
    if (before == NULL) {
        return NULL;
    }
    L->loop_depth++;
    CcNode *body = lower_block(L, node, "body");
    L->loop_depth--;
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
    CcNode *n = new_node(L, ND_WHILE, node);
    if (n == NULL || (n->cond = lower_attr_expr(L, node, "test")) == NULL
        || (n->then = loop_body(L, node, &before)) == NULL
        || (n->els = lower_block(L, node, "orelse")) == NULL) {
        return NULL;
    }
    memcpy(L->assigned, before, (size_t)L->nassigned);
    L->terminated = 0;
    return n;
}

/* for := 'for' name 'in' 'range' '(' expr [',' expr [',' expr]] ')' ':' block
 *        ['else' ':' block] */
static CcNode *
lower_for(Lower *L, PyObject *node)
{
    PyObject *target = get(node, "target"), *iter = get(node, "iter");
    PyObject *func = NULL;
    CcNode *n = new_node(L, ND_FOR_RANGE, node);
    CcNode *result = NULL;
    if (n == NULL || target == NULL || iter == NULL) {
        goto done;
    }
    int local = 0, ok = 0;
    if (lw_ast_kind(iter) == A_CALL && (func = get(iter, "func")) != NULL) {
        PyObject *callee = resolve_object(L, func, &local);
        PyObject *builtins = PyImport_ImportModule("builtins");
        PyObject *range = builtins ? PyObject_GetAttrString(builtins, "range") : NULL;
        ok = callee != NULL && callee == range;
        Py_XDECREF(callee);
        Py_XDECREF(range);
        Py_XDECREF(builtins);
        if (PyErr_Occurred()) {
            goto done;
        }
    }
    if (!ok) {
        cc_error(L->fn, loc_of(L, iter),
                 "only 'for ... in range(...)' loops are supported "
                 "in a kernel");
        goto done;
    }
    if ((n->args = lower_expr_list(L, iter, "args", &n->nargs)) == NULL) {
        goto done;
    }
    if (n->nargs < 1 || n->nargs > 3) {
        cc_error(L->fn, loc_of(L, iter), "range() takes 1 to 3 arguments, %d given", n->nargs);
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
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    if (n->then == NULL || (n->els = lower_block(L, node, "orelse")) == NULL) {
        goto done;
    }
    memcpy(L->assigned, saved, (size_t)L->nassigned);
    L->terminated = 0;
    result = n;
done:
    Py_XDECREF(target);
    Py_XDECREF(iter);
    Py_XDECREF(func);
    return result;
}

static CcNode *
lower_jump(Lower *L, PyObject *node, CcNodeKind kind)
{
    if (L->loop_depth == 0) {
        cc_error(L->fn, loc_of(L, node), "'%s' outside a loop",
                 kind == ND_BREAK ? "break" : "continue");
        return NULL;
    }
    L->terminated = 1;
    return new_node(L, kind, node);
}

/* A statement that is only a string constant (a docstring) does nothing. */
static int
is_docstring(PyObject *node)
{
    PyObject *value = get(node, "value");
    int doc = 0;
    if (value != NULL && lw_ast_kind(value) == A_CONSTANT) {
        PyObject *c = get(value, "value");
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
        return new_node(L, ND_BLOCK, node);
    case A_EXPR: {
        if (is_docstring(node)) {
            return new_node(L, ND_BLOCK, node);
        }
        CcNode *n = new_node(L, ND_EXPR, node);
        if (n == NULL || (n->lhs = lower_attr_expr(L, node, "value")) == NULL) {
            return NULL;
        }
        return n;
    }
    case A_FUNCTIONDEF:
        cc_error(L->fn, loc_of(L, node),
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

/* block := statement+     (node.attr is a list of statements) */
static CcNode *
lower_block(Lower *L, PyObject *node, const char *attr)
{
    PyObject *list = get(node, attr);
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t k = PyList_Size(list);
    CcNode *b = new_node(L, ND_BLOCK, k > 0 ? PyList_GetItem(list, 0) : node);
    if (b != NULL) {
        b->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * (size_t)(k + 1));
    }
    for (Py_ssize_t i = 0; b != NULL && i < k; i++) {
        if (b->args == NULL || (b->args[i] = lower_stmt(L, PyList_GetItem(list, i))) == NULL) {
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
static int
lower_params(Lower *L, PyObject *funcdef, CcVar **params, int *nparams)
{
    PyObject *args = get(funcdef, "args");
    int rc = -1;
    if (args == NULL) {
        return -1;
    }
    static const char *const forbidden[] = {"vararg", "kwarg"};
    for (int i = 0; i < 2; i++) {
        PyObject *v = get(args, forbidden[i]);
        int bad = v != NULL && v != Py_None;
        Py_XDECREF(v);
        if (bad) {
            cc_error(L->fn, loc_of(L, funcdef),
                     "*args and **kwargs are not supported in a "
                     "kernel");
            goto done;
        }
    }
    PyObject *kwonly = get(args, "kwonlyargs"), *defaults = get(args, "defaults");
    PyObject *posonly = get(args, "posonlyargs"), *plain = get(args, "args");
    if (kwonly && defaults && posonly && plain) {
        if (PyList_Size(kwonly) > 0 || PyList_Size(defaults) > 0) {
            cc_error(L->fn, loc_of(L, funcdef),
                     "keyword-only parameters and default values "
                     "are not supported in a kernel");
        } else {
            rc = 0;
            PyObject *lists[2] = {posonly, plain};
            for (int j = 0; rc == 0 && j < 2; j++) {
                for (Py_ssize_t i = 0; rc == 0 && i < PyList_Size(lists[j]); i++) {
                    const char *name = scoped(L, get_str(L, PyList_GetItem(lists[j], i), "arg"));
                    CcVar *v = name ? add_var(L->fn, name) : NULL;
                    rc = v != NULL ? 0 : -1;
                    if (v != NULL && L->prefix == NULL) {
                        v->is_param = 1; /* an inlined function's are plain locals */
                    }
                    if (params != NULL && v != NULL && *nparams == TS_MAXARGS) {
                        cc_error(L->fn, loc_of(L, funcdef),
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

/* {free variable name: cell contents} of pyfunc (empty cells left out). */
static PyObject *
closure_values(PyObject *pyfunc)
{
    PyObject *code = get(pyfunc, "__code__");
    PyObject *names = code ? get(code, "co_freevars") : NULL;
    PyObject *cells = get(pyfunc, "__closure__");
    PyObject *result = PyDict_New();
    Py_ssize_t n = names ? PyTuple_Size(names) : 0;
    for (Py_ssize_t i = 0; result != NULL && cells != NULL && cells != Py_None && i < n; i++) {
        PyObject *contents = get(PyTuple_GetItem(cells, i), "cell_contents");
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
    fn->body = new_node(&L, ND_BLOCK, funcdef);
    if (fn->body == NULL) {
        return -1;
    }
    L.globals = get(pyfunc, "__globals__");
    L.closure = closure_values(pyfunc);
    if (L.globals == NULL || L.closure == NULL) {
        goto done;
    }
    if (lw_ast_kind(funcdef) != A_FUNCTIONDEF) {
        PyErr_SetString(PyExc_TypeError, "numbavec: expected an ast.FunctionDef");
        goto done;
    }
    if (lower_params(&L, funcdef, NULL, NULL) < 0 || collect_locals(&L, funcdef) < 0) {
        goto done;
    }
    L.nassigned = fn->nvars;
    L.assigned = cc_alloc(fn->arena, (size_t)fn->nvars + 1);
    if (L.assigned == NULL) {
        goto done;
    }
    memset(L.assigned, 1, (size_t)fn->nparams);
    CcNode *body = lower_block(&L, funcdef, "body");
    if (body != NULL) {
        body->loc = fn->body->loc;
        fn->body = body;
        rc = 0;
    }
done:
    Py_XDECREF(L.globals);
    Py_XDECREF(L.closure);
    return rc;
}
