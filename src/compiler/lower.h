/*
 * lower.h - what the files of the lowering pass share (compiler.h's
 * cc_lower is all that the rest of the compiler sees of them):
 *
 *   astkind.c   the node classes of Python's `ast` module, as AstKinds
 *   lower.c     the pass: Python `ast` objects -> untyped IR (CcNode); its
 *               entry, the context, variables, definite assignment, depth
 *   lowerexpr.c expressions: operators, compares, names, array indexing
 *   lowercall.c calls (builtins, methods, keywords), constants, tuples,
 *               subscripts
 *   lowerstmt.c statements and control flow: assignments, raise, assert,
 *               print, if, while, for, blocks
 *   resolve.c   names that are not locals, frozen into constants; Python
 *               int arithmetic on constants, folded
 *   inline.c    device functions, inlined at each call
 *   rebind.c    each binding of a name its own variable (SSA-like webs);
 *               a name a loop binds, read after the loop, checked
 *
 * Cross-file functions carry the prefix lw_; everything else stays static
 * in its file.  Each section below belongs to one .c file.
 */
#ifndef NV_COMPILER_LOWER_H
#define NV_COMPILER_LOWER_H

#include "compiler/compiler.h"

/* ---- astkind.c ---- */

typedef enum AstKind {
    A_UNSUPPORTED = 0,
    A_FUNCTIONDEF,
    A_RETURN,
    A_ASSIGN,
    A_AUGASSIGN,
    A_ANNASSIGN,
    A_IF,
    A_WHILE,
    A_FOR,
    A_BREAK,
    A_CONTINUE,
    A_PASS,
    A_EXPR,
    A_RAISE,
    A_ASSERT,
    A_BINOP,
    A_UNARYOP,
    A_BOOLOP,
    A_COMPARE,
    A_IFEXP,
    A_CALL,
    A_CONSTANT,
    A_NAME,
    A_ATTRIBUTE,
    A_TUPLE,
    A_SUBSCRIPT,
    A_SLICE,
    A_STORE,
    /* operators: their CcOp follows from the table */
    A_OPERATOR,
} AstKind;

typedef struct AstClass {
    const char *name;
    AstKind kind;
    int op;           /* CcOp for A_OPERATOR, -1 if the operator is unsupported */
    const char *what; /* A_UNSUPPORTED: how the error names it */
} AstClass;

int lw_ast_init(void); /* builds the class table once; 0/-1 */
/* The table entry of node's class, or NULL for classes not listed. */
const AstClass *lw_ast_class(PyObject *node);
AstKind lw_ast_kind(PyObject *node); /* A_UNSUPPORTED for classes not listed */

/* ---- lower.c ---- */

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
    /* the kernel's: the TypingErrors of the statements that failed (a list
     * of messages), so that one error names every unsupported construct */
    PyObject *errors;
    /* the kernel's: the names its refused imports would have bound (a set,
     * or NULL), and whether the pending error is only that such a name is
     * not defined, which follows from the import's error alone */
    PyObject *unbound;
    int cascade;
    /* rebind.c: the states at the ways out of the loop iteration being
     * lowered (lw_meet_jump; NULL: none yet), and what loop_body leaves:
     * their meet once the body is lowered (lw_bound_after_loop) */
    char *jumped;
    const char *ran;
    /* nested functions (inline.c): those defined in this scope so far, {name:
     * ast.FunctionDef} (borrowed: the arena keeps it; NULL: none), and for a
     * nested function's own body the scope it was defined in, whose
     * variables its free names read (as Python's closures do, when called) */
    PyObject *nested;
    struct Lower *enclosing;
    int nested_defaults; /* a nested function's: defaults are its def's constants */
    /* an inlined function's parameters that were given functions (a helper,
     * a Numba-decorated function, a nested def): calls of them inline those */
    struct FnValue *fnvalues;
    int nfnvalues;
} Lower;

/* A function given as an argument (inline.c): func is an Inline (scope
 * NULL) or a nested def's ast.FunctionDef, defined in scope. */
typedef struct FnValue {
    const char *name;
    PyObject *func;
    Lower *scope;
} FnValue;

/* node.attr: a new reference, or NULL.  NULL at once while an exception is
 * pending (lowering unwinds without entering Python). */
PyObject *lw_get(PyObject *node, const char *attr);
/* Where node is ({0, 0}: nowhere); an exception pending stays pending. */
CcLoc lw_loc_of(Lower *L, PyObject *node);
/* A zeroed node in the arena at ast's location (NULL: the body's); NULL
 * with a TypingError past the kernel's node limit, or a MemoryError. */
CcNode *lw_new_node(Lower *L, CcNodeKind kind, PyObject *ast);
/* The str node.attr copied into the arena (Name.id), or NULL. */
const char *lw_get_str(Lower *L, PyObject *node, const char *attr);
/* The variable name of fn, added when new; NULL with a TypingError past
 * the kernel's variable limit, or a MemoryError. */
CcVar *lw_add_var(CcFunction *fn, const char *name);
/* name as L's function stores it: with L's prefix when it is inlined
 * (in the arena; NULL when name is NULL or memory runs out). */
const char *lw_scoped(Lower *L, const char *name);
/* The local variable `name` as L's function sees it, or NULL. */
CcVar *lw_local_var(Lower *L, const char *name);
/* Adds every name funcdef stores to as a variable (Python's rule).  0/-1. */
int lw_collect_locals(Lower *L, PyObject *funcdef);
/* The variable name of fn, or NULL when it has none. */
CcVar *lw_find_var(CcFunction *fn, const char *name);
/* The TypingError for node, a construct that a kernel does not support
 * (context names its sort: "expression", "statement"); an import's names
 * are noted as unbound first.  -1. */
int lw_unsupported(Lower *L, PyObject *node, const char *context);
/* "np.fft.fft()": a call's callee as its source spells it (ast.unparse), or
 * NULL (no exception) for a callee too long to quote. */
PyObject *lw_callee_spelling(PyObject *func);
/* Whether obj is numpy.<name> (no exception). */
int lw_is_numpy_named(PyObject *obj, const char *name);
/* The number of inputs of a NumPy ufunc obj (NumPy's or a numbavec one), or
 * -1 when obj is none (no exception). */
int lw_ufunc_nin(PyObject *obj);
/* L->assigned copied into the arena (NULL without memory), to merge after
 * a branch. */
char *lw_save_assigned(Lower *L);
/* After a branch, a variable is assigned if it is on every path that goes
 * on; a terminated path does not go on. */
void lw_merge_assigned(Lower *L, const char *a, int a_term, const char *b, int b_term);
/* One more level of nesting at node (cc_depth_budget); -1 with a
 * TypingError past the budget.  The caller leaves it (fn->depth--) either
 * way. */
int lw_enter(Lower *L, PyObject *node);
/* The parameters of funcdef as variables (into params, room for
 * TS_MAXARGS, and *nparams, when params is not NULL): positional ones,
 * then a device function's keyword-only ones; the kernel's also set
 * fn->nparams.  0/-1 with a TypingError. */
int lw_lower_params(Lower *L, PyObject *funcdef, CcVar **params, int *nparams);

/* ---- lowerexpr.c ---- */

/* The expression node, lowered (NULL with an error). */
CcNode *lw_lower_expr(Lower *L, PyObject *node);
/* The expression node.attr, lowered (NULL with an error). */
CcNode *lw_lower_attr_expr(Lower *L, PyObject *node, const char *attr);
/* The expressions of the list node.attr, in a new arena array (*count: how
 * many), or NULL. */
CcNode **lw_lower_expr_list(Lower *L, PyObject *node, const char *attr, int *count);
/* The CcOp of node.op, or -1 with a TypingError. */
int lw_node_op(Lower *L, PyObject *node);
/* The call of builtin on args (an operator's ufunc becomes the operator),
 * or NULL with a TypingError. */
CcNode *lw_builtin_call(Lower *L, PyObject *at, int builtin, CcNode **args, int nargs);
/* Nonzero when node is the name of a parameter: a parameter's subscripts are
 * always array indexing (a gufunc's arrays); other subscripts by a constant
 * are tuple items until typeinfer finds an array there. */
int lw_is_param_name(Lower *L, PyObject *node);
/* The array `x` of an `x.flat` node (new reference), or NULL (no error). */
PyObject *lw_flat_base(Lower *L, PyObject *node);
/* a[.flatindex(k, a.shape)] for base (the array `a` of a.flat) and k:
 * the element k in C order, negative from the end. */
CcNode *lw_flat_element(Lower *L, PyObject *at, PyObject *base, CcNode *k);
/* a.flat[k]: lw_flat_element; NULL without an error when node is not one. */
CcNode *lw_lower_flat_index(Lower *L, PyObject *node, int *err);
/* expr '[' item (',' item)* ']' on an array, or NULL. */
CcNode *lw_lower_index(Lower *L, PyObject *node);
/* The attributes of an array: a.shape, a.size, a.ndim (and len(a)). */
CcNode *lw_array_attr(Lower *L, PyObject *at, CcArrayAttr which, CcNode *array);

/* ---- lowercall.c ---- */

/* The kind of the dtype object obj (np.float32, np.dtype('f4'), 'f4', float
 * ...) as NumPy's dtype() reads it; -1 with a TypingError at `at`. */
int lw_dtype_kind(Lower *L, PyObject *at, PyObject *obj, TsKind *out);
/* The expressions of each kind, lowered (NULL with an error): a call, a
 * constant, a tuple, a subscript. */
CcNode *lw_lower_call(Lower *L, PyObject *node);

/* ---- lowernp.c ---- */

/* The call of np.linalg.norm, np.array, np.cov or np.corrcoef (flavors
 * FL_NORM, FL_ARRAY, FL_COV). */
CcNode *lw_lower_np_call(Lower *L, PyObject *node, int builtin, PyObject *keywords);
/* nprandom.c: np.random.f(...) with its parameters in place, defaults filled in */
CcNode *lw_lower_random_call(Lower *L, PyObject *node, int builtin, PyObject *keywords);
/* Whether callee is a method of a Generator or RandomState object (not the
 * module's functions): refused by name (no exception). */
int lw_random_instance_method(PyObject *callee);
/* The value of the assignment node: a list or tuple display stored into
 * one subscript (out[i] = [lo, hi]) is np.array of it. */
CcNode *lw_lower_stored_value(Lower *L, PyObject *node, PyObject *targets);
/* for i, x in enumerate(a.flat[, start]): the `a.flat` node of iter (a
 * call of enumerate), with *start its start (Py_None without one), new
 * references; NULL when iter is not that. */
PyObject *lw_enumerated_flat(Lower *L, PyObject *iter, PyObject **start);
/* The tuple (k + start, item) an enumerate of a.flat gives. */
CcNode *lw_enumerated(Lower *L, PyObject *at, CcNode *k, PyObject *start, CcNode *item);
/* Whether node is a list or tuple display. */
int lw_is_display(PyObject *node);
/* np.array(list): a new 1-d array of the display's scalars, at `at`. */
CcNode *lw_array_display(Lower *L, PyObject *at, PyObject *list);
CcNode *lw_lower_constant(Lower *L, PyObject *node);
CcNode *lw_lower_tuple(Lower *L, PyObject *node);
CcNode *lw_lower_subscript(Lower *L, PyObject *node);

/* ---- lowerstmt.c ---- */

/* The statements of the list node.attr as an ND_BLOCK, or NULL. */
CcNode *lw_lower_block(Lower *L, PyObject *node, const char *attr);
/* A call of the hidden builtin name (".flatindex") on args, or NULL. */
CcNode *lw_hidden_call(Lower *L, PyObject *at, const char *name, CcNode **args, int nargs);

/* ---- resolve.c ---- */

/* {free variable name: cell contents} of pyfunc (borrowed): a new dict,
 * or NULL with an exception. */
PyObject *lw_closure_values(PyObject *pyfunc);
/* The frozen value of the non-local `name`: a new reference, or NULL with
 * a TypingError at loc when it is not defined. */
PyObject *lw_resolve_global(Lower *L, const char *name, CcLoc loc);
/* The object a Name or attribute chain names when its base is not a local
 * (`math.pi`): a new reference.  NULL with a TypingError, or NULL with
 * *local set (no exception) when the expression is computed at run time. */
PyObject *lw_resolve_object(Lower *L, PyObject *node, int *local);
/* value (borrowed) as an ND_CONST at ast; NULL with an exception, or
 * without one when value is not a number or a NumPy scalar. */
CcNode *lw_value_const(Lower *L, PyObject *ast, PyObject *value);
/* The same for a frozen global, NULL with a TypingError saying why a
 * value of its type cannot be used. */
CcNode *lw_lower_frozen(Lower *L, PyObject *node, PyObject *value);
/* n (ND_BINOP, ND_UNARY; or an abs/int/min/max call) of Python int
 * constants, folded as Python computes it; n itself when it is not one.
 * NULL with a TypingError when the result would be too large. */
CcNode *lw_fold_int_op(Lower *L, CcNode *n);
CcNode *lw_fold_int_call(Lower *L, CcNode *n, CcFlavor flavor);

/* ---- inline.c ---- */

/* Whether obj is an Inline (_core.Inline): a device function or a numbavec
 * ufunc as the capture of a kernel's names made it for the compiler. */
int lw_is_device_function(PyObject *obj);
/* The call `node` of callee (an Inline, borrowed) as an ND_INLINE
 * expression: the callee's body lowered in place.  NULL with an exception. */
CcNode *lw_lower_device_call(Lower *L, PyObject *node, PyObject *callee);
/* A def (or name = lambda) in a function's body: the nested function is
 * kept for the calls after it, which inline it.  0/-1. */
int lw_define_nested(Lower *L, const char *name, PyObject *funcdef);
/* The nested function name stands for in L (its defining scope in *scope),
 * or the function a parameter was given (an Inline: *scope NULL), or NULL
 * (no exception). */
PyObject *lw_find_nested(Lower *L, const char *name, Lower **scope);
/* A call of a nested function: its body inlined, its free names read from
 * the scope that defined it. */
CcNode *lw_lower_nested_call(Lower *L, PyObject *node, PyObject *funcdef, Lower *scope);
/* The scope (L or one enclosing it) whose variable name is, or NULL. */
Lower *lw_var_owner(Lower *L, const char *name);

/* ---- rebind.c ---- */

/* L->assigned's third state: maybe bound (by one path, by a loop unless
 * it ran no iteration); a read then raises UnboundLocalError where it is
 * not (lw_checked_read). */
#define LW_UNLESS_EMPTY 2
/* Where two paths meet: 0 if neither is bound, bound if both are, else
 * LW_UNLESS_EMPTY. */
char lw_weaker(char a, char b);
/* The current state (unless the path ended) meets L->jumped, the states
 * of the ways out of the loop's iteration being lowered.  0/-1. */
int lw_meet_jump(Lower *L);
/* After a loop: each variable ran binds (the states one iteration leaves
 * on every way out of it; NULL: none) is LW_UNLESS_EMPTY where nothing
 * else bound it. */
void lw_bound_after_loop(Lower *L, const char *ran);
/* The read at node of var (the local `name`, LW_UNLESS_EMPTY here), which
 * raises UnboundLocalError when no binding of it ran; NULL with an error. */
CcNode *lw_checked_read(Lower *L, PyObject *node, CcVar *var, const char *name);
/* The last step of cc_lower: sets the flags lw_checked_read tests, and
 * splits each variable into the sets of its bindings that meet.  0/-1. */
int lw_rebind(CcFunction *fn);

#endif /* NV_COMPILER_LOWER_H */
