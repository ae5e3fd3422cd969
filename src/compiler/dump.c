/*
 * dump.c - NUMBAVEC_DUMP: which stages to print (cc_dump_flags), and the
 * typed IR as text, for NUMBAVEC_DUMP=ir.
 *
 * Runs after typeinfer: one line per node, indented by depth, with the
 * node's kind, its operator, variable or builtin, and its type.  Inlined
 * device functions show as `inline` with their body indented below.
 */
#include "compiler/compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [ND_CONST] = "const",         [ND_VAR] = "var",
    [ND_BINOP] = "binop",         [ND_UNARY] = "unary",
    [ND_COMPARE] = "compare",     [ND_BOOLOP] = "boolop",
    [ND_IFEXP] = "ifexp",         [ND_CALL] = "call",
    [ND_TUPLE] = "tuple",         [ND_GETITEM] = "getitem",
    [ND_INLINE] = "inline",       [ND_BLOCK] = "block",
    [ND_ASSIGN] = "assign",       [ND_UNPACK] = "unpack",
    [ND_RETURN] = "return",       [ND_IF] = "if",
    [ND_WHILE] = "while",         [ND_FOR_RANGE] = "for-range",
    [ND_BREAK] = "break",         [ND_CONTINUE] = "continue",
    [ND_EXPR] = "expr",           [ND_RAISE] = "raise",
    [ND_PRINT] = "print",         [ND_INDEX] = "index",
    [ND_ARRAYATTR] = "arrayattr", [ND_SETITEM] = "setitem",
    [ND_SLICE] = "slice",         [ND_NEWAXIS] = "newaxis",
    [ND_ELLIPSIS] = "ellipsis",
};
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == ND_ELLIPSIS + 1,
               "a name for every node kind");

static const char *const op_names[] = {
    [OP_ADD] = "+",       [OP_SUB] = "-",    [OP_MUL] = "*",    [OP_DIV] = "/",
    [OP_FLOORDIV] = "//", [OP_MOD] = "%",    [OP_POW] = "**",   [OP_LSHIFT] = "<<",
    [OP_RSHIFT] = ">>",   [OP_BITAND] = "&", [OP_BITOR] = "|",  [OP_BITXOR] = "^",
    [OP_NEG] = "-",       [OP_POS] = "+",    [OP_INVERT] = "~", [OP_NOT] = "not",
    [OP_EQ] = "==",       [OP_NE] = "!=",    [OP_LT] = "<",     [OP_LE] = "<=",
    [OP_GT] = ">",        [OP_GE] = ">=",    [OP_AND] = "and",  [OP_OR] = "or",
};

const char *
cc_op_name(CcOp op)
{
    return op_names[op];
}

/* What distinguishes a node of its kind: "+", "x", "math.exp", "3". */
static void
detail(const CcNode *n, char *buf, size_t size)
{
    buf[0] = '\0';
    switch (n->kind) {
    case ND_CONST:
        if (n->ty != NULL && ts_is_complex(cc_storage(n->ty))) {
            snprintf(buf, size, "%.17g%+.17gj", n->fval, n->fimag);
        } else if (n->ty != NULL && ts_is_float(cc_storage(n->ty))) {
            snprintf(buf, size, "%.17g", n->fval);
        } else {
            snprintf(buf, size, "%lld", n->ival);
        }
        break;
    case ND_BINOP:
    case ND_UNARY:
    case ND_BOOLOP:
        snprintf(buf, size, "%s", op_names[n->op]);
        break;
    case ND_COMPARE: {
        size_t used = 0;
        for (int i = 0; i + 1 < n->nargs && used < size; i++) {
            used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "",
                                     op_names[n->ops[i]]);
        }
        break;
    }
    case ND_CALL:
        snprintf(buf, size, "%s", cc_builtin(n->builtin)->name);
        break;
    case ND_GETITEM:
        snprintf(buf, size, "[%d]", n->index);
        break;
    case ND_UNPACK: {
        size_t used = 0;
        for (int i = 0; i < n->nargs && used < size; i++) {
            used +=
                (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", n->vars[i]->name);
        }
        break;
    }
    case ND_VAR:
    case ND_ASSIGN:
    case ND_FOR_RANGE:
    case ND_INLINE:
    case ND_RETURN:
        if (n->var != NULL) {
            snprintf(buf, size, "%s%s%s", n->kind == ND_RETURN ? "-> " : "", n->var->name,
                     n->kind == ND_FOR_RANGE && n->index ? " reversed" : "");
        }
        break;
    default:
        break;
    }
}

static void
dump_node(const CcNode *n, int depth)
{
    char what[256], ty[256] = "";
    if (n == NULL) {
        return;
    }
    detail(n, what, sizeof(what));
    if (n->ty != NULL) {
        char name[200];
        snprintf(ty, sizeof(ty), " : %s", cc_type_name(n->ty, name, sizeof(name)));
    } else if (n->var != NULL && n->var->ty != NULL
               && (n->kind == ND_ASSIGN || n->kind == ND_FOR_RANGE)) {
        char name[200];
        snprintf(ty, sizeof(ty), " : %s", cc_type_name(n->var->ty, name, sizeof(name)));
    }
    fprintf(stderr, "%*s%s%s%s%s   @%d\n", 2 * depth, "", kind_names[n->kind], what[0] ? " " : "",
            what, ty, n->loc.line);
    /* children in source order */
    dump_node(n->cond, depth + 1);
    dump_node(n->lhs, depth + 1);
    for (int i = 0; i < n->nargs && n->kind != ND_UNPACK; i++) {
        dump_node(n->args[i], depth + 1);
    }
    dump_node(n->rhs, depth + 1);
    dump_node(n->then, depth + 1);
    if (n->els != NULL) {
        fprintf(stderr, "%*selse\n", 2 * depth, "");
        dump_node(n->els, depth + 1);
    }
}

void
cc_dump_ir(const CcFunction *fn, const char *label)
{
    char name[200];
    fprintf(stderr, "; ---- typed IR: %s ----\n", label);
    for (int i = 0; i < fn->nvars; i++) {
        const CcVar *v = fn->vars[i];
        fprintf(stderr, "; %s %s : %s\n", v->is_param ? "param" : "local", v->name,
                v->ty ? cc_type_name(v->ty, name, sizeof(name)) : "?");
    }
    if (fn->ret != NULL) {
        fprintf(stderr, "; returns %s\n", cc_type_name(fn->ret, name, sizeof(name)));
    }
    dump_node(fn->body, 0);
    fflush(stderr);
}

/* ---- NUMBAVEC_DUMP's words ---- */

static int
dump_flag(const char *word, size_t len)
{
    static const struct {
        const char *name;
        int flag;
    } names[] = {
        {"ir", CC_DUMP_IR},
        {"llvm", CC_DUMP_LLVM},
        {"opt", CC_DUMP_OPT},
        {"asm", CC_DUMP_ASM},
        {"ptx", CC_DUMP_PTX},
        {"time", CC_DUMP_TIME},
        {"all", CC_DUMP_IR | CC_DUMP_LLVM | CC_DUMP_OPT | CC_DUMP_ASM | CC_DUMP_PTX},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == len && strncmp(names[i].name, word, len) == 0) {
            return names[i].flag;
        }
    }
    return 0; /* unknown words are ignored: a dump switch must never fail */
}

int
cc_dump_flags(void)
{
    static int read = -1; /* read once (GIL held) */
    if (read >= 0) {
        return read;
    }
    int flags = 0;
    const char *s = getenv("NUMBAVEC_DUMP");
    while (s != NULL && *s != '\0') {
        size_t len = strcspn(s, ", ");
        flags |= dump_flag(s, len);
        s += len;
        s += strspn(s, ", ");
    }
    read = flags;
    return flags;
}
