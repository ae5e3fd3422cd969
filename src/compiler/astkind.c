/*
 * astkind.c - the node classes of Python's `ast` module, as AstKinds.
 *
 * The lowering pass (lower.c, resolve.c, inline.c) never asks Python what a
 * node is: it looks the node's class up in a dict built once from the ast
 * module and the table below, and switches on the kind.  The table also
 * names the constructs a kernel refuses ("list comprehensions"), so that the
 * error says what the user wrote rather than an ast class name.
 */
#include "compiler/lower.h"

static const AstClass ast_classes[] = {
    {"FunctionDef", A_FUNCTIONDEF, 0, NULL},
    {"Return", A_RETURN, 0, NULL},
    {"Assign", A_ASSIGN, 0, NULL},
    {"AugAssign", A_AUGASSIGN, 0, NULL},
    {"AnnAssign", A_ANNASSIGN, 0, NULL},
    {"If", A_IF, 0, NULL},
    {"While", A_WHILE, 0, NULL},
    {"For", A_FOR, 0, NULL},
    {"Break", A_BREAK, 0, NULL},
    {"Continue", A_CONTINUE, 0, NULL},
    {"Pass", A_PASS, 0, NULL},
    {"Expr", A_EXPR, 0, NULL},
    {"BinOp", A_BINOP, 0, NULL},
    {"UnaryOp", A_UNARYOP, 0, NULL},
    {"BoolOp", A_BOOLOP, 0, NULL},
    {"Compare", A_COMPARE, 0, NULL},
    {"IfExp", A_IFEXP, 0, NULL},
    {"Call", A_CALL, 0, NULL},
    {"Constant", A_CONSTANT, 0, NULL},
    {"Name", A_NAME, 0, NULL},
    {"Attribute", A_ATTRIBUTE, 0, NULL},
    {"Tuple", A_TUPLE, 0, NULL},
    {"Subscript", A_SUBSCRIPT, 0, NULL},
    {"Slice", A_SLICE, 0, NULL},
    {"Store", A_STORE, 0, NULL},
    {"Add", A_OPERATOR, OP_ADD, "+"},
    {"Sub", A_OPERATOR, OP_SUB, "-"},
    {"Mult", A_OPERATOR, OP_MUL, "*"},
    {"Div", A_OPERATOR, OP_DIV, "/"},
    {"FloorDiv", A_OPERATOR, OP_FLOORDIV, "//"},
    {"Mod", A_OPERATOR, OP_MOD, "%"},
    {"Pow", A_OPERATOR, OP_POW, "**"},
    {"LShift", A_OPERATOR, OP_LSHIFT, "<<"},
    {"RShift", A_OPERATOR, OP_RSHIFT, ">>"},
    {"BitAnd", A_OPERATOR, OP_BITAND, "&"},
    {"BitOr", A_OPERATOR, OP_BITOR, "|"},
    {"BitXor", A_OPERATOR, OP_BITXOR, "^"},
    {"MatMult", A_OPERATOR, -1, "@"},
    {"USub", A_OPERATOR, OP_NEG, "-"},
    {"UAdd", A_OPERATOR, OP_POS, "+"},
    {"Invert", A_OPERATOR, OP_INVERT, "~"},
    {"Not", A_OPERATOR, OP_NOT, "not"},
    {"And", A_OPERATOR, OP_AND, "and"},
    {"Or", A_OPERATOR, OP_OR, "or"},
    {"Eq", A_OPERATOR, OP_EQ, "=="},
    {"NotEq", A_OPERATOR, OP_NE, "!="},
    {"Lt", A_OPERATOR, OP_LT, "<"},
    {"LtE", A_OPERATOR, OP_LE, "<="},
    {"Gt", A_OPERATOR, OP_GT, ">"},
    {"GtE", A_OPERATOR, OP_GE, ">="},
    {"Is", A_OPERATOR, -1, "is"},
    {"IsNot", A_OPERATOR, -1, "is not"},
    {"In", A_OPERATOR, -1, "in"},
    {"NotIn", A_OPERATOR, -1, "not in"},
    /* named so that errors say what the construct is */
    {"List", A_UNSUPPORTED, 0, "list displays"},
    {"Dict", A_UNSUPPORTED, 0, "dict displays"},
    {"Set", A_UNSUPPORTED, 0, "set displays"},
    {"ListComp", A_UNSUPPORTED, 0, "list comprehensions"},
    {"DictComp", A_UNSUPPORTED, 0, "dict comprehensions"},
    {"SetComp", A_UNSUPPORTED, 0, "set comprehensions"},
    {"GeneratorExp", A_UNSUPPORTED, 0, "generator expressions"},
    {"Lambda", A_UNSUPPORTED, 0, "lambda expressions"},
    {"JoinedStr", A_UNSUPPORTED, 0, "f-strings"},
    {"Yield", A_UNSUPPORTED, 0, "generators (yield)"},
    {"YieldFrom", A_UNSUPPORTED, 0, "generators (yield from)"},
    {"Await", A_UNSUPPORTED, 0, "await expressions"},
    {"Starred", A_UNSUPPORTED, 0, "starred expressions (*args)"},
    {"NamedExpr", A_UNSUPPORTED, 0, "assignment expressions (:=)"},
    {"Try", A_UNSUPPORTED, 0, "'try' statements (exceptions)"},
    {"TryStar", A_UNSUPPORTED, 0, "'try' statements (exceptions)"},
    {"Raise", A_RAISE, 0, NULL},
    {"Assert", A_ASSERT, 0, NULL},
    {"With", A_UNSUPPORTED, 0, "'with' statements"},
    {"AsyncWith", A_UNSUPPORTED, 0, "'async with' statements"},
    {"AsyncFor", A_UNSUPPORTED, 0, "'async for' loops"},
    {"AsyncFunctionDef", A_UNSUPPORTED, 0, "nested functions"},
    {"ClassDef", A_UNSUPPORTED, 0, "class definitions"},
    {"Delete", A_UNSUPPORTED, 0, "'del' statements"},
    {"Import", A_UNSUPPORTED, 0, "imports (import at the top of the module)"},
    {"ImportFrom", A_UNSUPPORTED, 0, "imports (import at the top of the module)"},
    {"Global", A_UNSUPPORTED, 0, "'global' declarations"},
    {"Nonlocal", A_UNSUPPORTED, 0, "'nonlocal' declarations"},
    {"Match", A_UNSUPPORTED, 0, "'match' statements"},
};

enum { NCLASSES = sizeof(ast_classes) / sizeof(ast_classes[0]) };

/* nv_state.ast_kinds: {ast class: index into ast_classes}, built once from
 * the ast module. */
static int
build_ast_table(void)
{
    PyObject *ast = PyImport_ImportModule("ast");
    if (ast == NULL) {
        return -1;
    }
    PyObject *table = PyDict_New();
    for (int i = 0; table != NULL && i < NCLASSES; i++) {
        PyObject *cls = PyObject_GetAttrString(ast, ast_classes[i].name);
        if (cls == NULL) {
            PyErr_Clear(); /* e.g. TryStar before 3.11 */
            continue;
        }
        PyObject *idx = PyLong_FromLong(i);
        if (idx == NULL || PyDict_SetItem(table, cls, idx) < 0) {
            Py_CLEAR(table);
        }
        Py_XDECREF(idx);
        Py_DECREF(cls);
    }
    Py_DECREF(ast);
    nv_state.ast_kinds = table;
    return table == NULL ? -1 : 0;
}

int
lw_ast_init(void)
{
    return nv_state.ast_kinds != NULL ? 0 : build_ast_table();
}

const AstClass *
lw_ast_class(PyObject *node)
{
    PyObject *idx = PyDict_GetItem(nv_state.ast_kinds, (PyObject *)Py_TYPE(node));
    return idx == NULL ? NULL : &ast_classes[PyLong_AsLong(idx)];
}

AstKind
lw_ast_kind(PyObject *node)
{
    const AstClass *c = lw_ast_class(node);
    return c == NULL ? A_UNSUPPORTED : c->kind;
}
