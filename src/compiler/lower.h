/*
 * lower.h - what the files of the lowering pass share (compiler.h's
 * cc_lower is all that the rest of the compiler sees of them):
 *
 *   astkind.c  the node classes of Python's `ast` module, as AstKinds
 *   lower.c    the pass: Python `ast` objects -> untyped IR (CcNode)
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

#endif /* NV_COMPILER_LOWER_H */
