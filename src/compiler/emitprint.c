/*
 * emitprint.c - print(...) in a kernel: the calls that write one line.
 *
 * A print writes its whole line or nothing, as the interpreter's does:
 * every argument is evaluated first (one of them may raise, an index out
 * of bounds, and then nothing is printed), and only then are the pieces
 * handed to the runtime, in a straight line of calls that cannot leave
 * the kernel halfway.
 *
 *   host  each piece into the thread's line (runtime.c's numbavec_print_*),
 *         which numbavec_print_end writes whole, of any length, with one
 *         lock held: lines from the pool's threads never mix.
 *   GPU   one vprintf(format, arguments): the constants in the format
 *         ('%' doubled), %lld/%llu for integers, %.9g/%.17g for
 *         float32/float64, "(%.17g%+.17gj)" for complex, %s of
 *         "True"/"False"; the arguments in a stack struct of 8-byte slots
 *         (vprintf's layout).
 */
#include "compiler/emit.h"

#include <string.h>

/* ---- the host ---- */

/* An argument's value and what it is printed as, once evaluated. */
typedef struct Piece {
    const char *text; /* a string constant, or NULL: a number in v */
    LLVMValueRef v;
    TsKind kind;
} Piece;

static void
print_text(Emit *E, const char *text)
{
    LLVMValueRef s = LLVMBuildGlobalString(E->b, text, "print.text");
    em_runtime_call(E, "numbavec_print_str", LLVMVoidTypeInContext(E->ctx), &s, 1);
}

static void
print_number(Emit *E, LLVMValueRef v, TsKind k)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx), f64 = LLVMDoubleTypeInContext(E->ctx);
    LLVMTypeRef none = LLVMVoidTypeInContext(E->ctx);
    LLVMValueRef args[3];
    if (k == TS_BOOL) {
        args[0] = LLVMBuildZExt(E->b, v, i32, "print.bool");
        em_runtime_call(E, "numbavec_print_bool", none, args, 1);
    } else if (ts_is_complex(k)) {
        TsKind part = em_part_kind(k);
        args[0] = em_convert(E, LLVMBuildExtractValue(E->b, v, 0, "print.re"), part, TS_FLOAT64);
        args[1] = em_convert(E, LLVMBuildExtractValue(E->b, v, 1, "print.im"), part, TS_FLOAT64);
        args[2] = LLVMConstInt(i32, k == TS_COMPLEX64, 0);
        em_runtime_call(E, "numbavec_print_complex", none, args, 3);
    } else if (ts_is_float(k)) {
        args[0] = k == TS_FLOAT64 ? v : LLVMBuildFPExt(E->b, v, f64, "print.f64");
        args[1] = LLVMConstInt(i32, k == TS_FLOAT32, 0);
        em_runtime_call(E, "numbavec_print_float", none, args, 2);
    } else {
        int is_unsigned = !ts_is_signed(k);
        args[0] = em_convert(E, v, k, is_unsigned ? TS_UINT64 : TS_INT64);
        args[1] = LLVMConstInt(i32, (unsigned long long)is_unsigned, 0);
        em_runtime_call(E, "numbavec_print_int", none, args, 2);
    }
}

/* Every argument of n evaluated into pieces (nargs of them); -1 with an
 * exception (a compile error). */
static int
evaluate(Emit *E, CcNode *n, Piece *pieces)
{
    for (int i = 0; i < n->nargs; i++) {
        CcNode *a = n->args[i];
        pieces[i].text = a->text;
        if (a->text == NULL) {
            if ((pieces[i].v = em_expr(E, a)) == NULL) {
                return -1;
            }
            pieces[i].kind = cc_storage(a->ty);
        }
    }
    return 0;
}

static int
print_host(Emit *E, CcNode *n)
{
    Piece *pieces = PyMem_Calloc((size_t)n->nargs + 1, sizeof(Piece));
    if (pieces == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (evaluate(E, n, pieces) < 0) {
        PyMem_Free(pieces);
        return -1;
    }
    for (int i = 0; i < n->nargs; i++) {
        if (i > 0) {
            print_text(E, n->lhs ? n->lhs->text : " ");
        }
        if (pieces[i].text != NULL) {
            print_text(E, pieces[i].text);
        } else {
            print_number(E, pieces[i].v, pieces[i].kind);
        }
    }
    PyMem_Free(pieces);
    LLVMValueRef end = LLVMBuildGlobalString(E->b, n->rhs ? n->rhs->text : "\n", "print.end");
    em_runtime_call(E, "numbavec_print_end", LLVMVoidTypeInContext(E->ctx), &end, 1);
    return 0;
}

/* ---- a GPU ---- */

/* A format being built: grows as it needs (no limit on a line's length). */
typedef struct Format {
    char *text; /* PyMem */
    size_t len, cap;
} Format;

/* Appends text to f, each '%' doubled when `literal`; 0/-1 (MemoryError). */
static int
format_add(Format *f, const char *text, int literal)
{
    size_t n = strlen(text);
    if (f->len + 2 * n + 1 > f->cap) {
        size_t cap = f->cap * 2 > f->len + 2 * n + 1 ? f->cap * 2 : f->len + 2 * n + 1;
        char *grown = PyMem_Realloc(f->text, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        f->text = grown;
        f->cap = cap;
    }
    for (; *text; text++) {
        f->text[f->len++] = *text;
        if (literal && *text == '%') {
            f->text[f->len++] = '%';
        }
    }
    f->text[f->len] = '\0';
    return 0;
}

/* A constant string for the GPU (addrspace 1), as a generic pointer. */
static LLVMValueRef
device_string(Emit *E, const char *text, const char *name)
{
    size_t len = strlen(text);
    LLVMValueRef init = LLVMConstStringInContext(E->ctx, text, (unsigned)len, 0);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(E->mod, LLVMTypeOf(init), name, 1);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return LLVMBuildAddrSpaceCast(E->b, g, LLVMPointerTypeInContext(E->ctx, 0), name);
}

enum { MAX_SLOTS = 2 * TS_MAXARGS + 2 };

/* A number's conversion spec, and its value(s) as vprintf slots (8 bytes
 * each) appended to vals/tys at *nv. */
static const char *
device_slots(Emit *E, LLVMValueRef v, TsKind k, LLVMValueRef *vals, LLVMTypeRef *tys, int *nv)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx), f64 = LLVMDoubleTypeInContext(E->ctx);
    if (k == TS_BOOL) {
        tys[*nv] = LLVMPointerTypeInContext(E->ctx, 0);
        vals[(*nv)++] = LLVMBuildSelect(E->b, v, device_string(E, "True", "print.true"),
                                        device_string(E, "False", "print.false"), "print.bool");
        return "%s";
    }
    if (ts_is_complex(k)) {
        for (unsigned p = 0; p < 2; p++) {
            tys[*nv] = f64;
            vals[(*nv)++] = em_convert(E, LLVMBuildExtractValue(E->b, v, p, "print.part"),
                                       em_part_kind(k), TS_FLOAT64);
        }
        return k == TS_COMPLEX64 ? "(%.9g%+.9gj)" : "(%.17g%+.17gj)";
    }
    if (ts_is_float(k)) {
        tys[*nv] = f64;
        vals[(*nv)++] = em_convert(E, v, k, TS_FLOAT64);
        return k == TS_FLOAT32 ? "%.9g" : "%.17g";
    }
    int is_unsigned = !ts_is_signed(k);
    tys[*nv] = i64;
    vals[(*nv)++] = em_convert(E, v, k, is_unsigned ? TS_UINT64 : TS_INT64);
    return is_unsigned ? "%llu" : "%lld";
}

/* The vprintf call of format f with the nv slots. */
static void
call_vprintf(Emit *E, const char *format, LLVMValueRef *vals, LLVMTypeRef *tys, int nv)
{
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    LLVMValueRef args = LLVMConstNull(ptr);
    if (nv > 0) {
        LLVMTypeRef st = LLVMStructTypeInContext(E->ctx, tys, (unsigned)nv, 0);
        args = em_entry_alloca(E, st, "print.args");
        for (int i = 0; i < nv; i++) {
            LLVMBuildStore(E->b, vals[i],
                           LLVMBuildStructGEP2(E->b, st, args, (unsigned)i, "print.slot"));
        }
    }
    LLVMTypeRef params[2] = {ptr, ptr};
    LLVMTypeRef fty = LLVMFunctionType(LLVMInt32TypeInContext(E->ctx), params, 2, 0);
    LLVMValueRef f = LLVMGetNamedFunction(E->mod, "vprintf");
    if (f == NULL) {
        f = LLVMAddFunction(E->mod, "vprintf", fty);
    }
    LLVMValueRef call_args[2] = {device_string(E, format, "print.format"), args};
    LLVMBuildCall2(E->b, fty, f, call_args, 2, "");
}

static int
print_device(Emit *E, CcNode *n)
{
    LLVMValueRef vals[MAX_SLOTS];
    LLVMTypeRef tys[MAX_SLOTS];
    int nv = 0, rc = -1;
    Format f = {NULL, 0, 0};
    Piece *pieces = PyMem_Calloc((size_t)n->nargs + 1, sizeof(Piece));
    if (pieces == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (evaluate(E, n, pieces) < 0 || format_add(&f, "", 0) < 0) {
        goto done;
    }
    for (int i = 0; i < n->nargs; i++) {
        if (i > 0 && format_add(&f, n->lhs ? n->lhs->text : " ", 1) < 0) {
            goto done;
        }
        if (pieces[i].text != NULL) {
            if (format_add(&f, pieces[i].text, 1) < 0) {
                goto done;
            }
            continue;
        }
        if (nv + 2 > MAX_SLOTS) {
            cc_error(E->fn, n->args[i]->loc, "print() on cuda takes at most %d numbers",
                     MAX_SLOTS / 2);
            goto done;
        }
        if (format_add(&f, device_slots(E, pieces[i].v, pieces[i].kind, vals, tys, &nv), 0) < 0) {
            goto done;
        }
    }
    if (format_add(&f, n->rhs ? n->rhs->text : "\n", 1) < 0) {
        goto done;
    }
    call_vprintf(E, f.text, vals, tys, nv);
    rc = 0;
done:
    PyMem_Free(f.text);
    PyMem_Free(pieces);
    return rc;
}

int
em_print(Emit *E, CcNode *n)
{
    return E->fn->device ? print_device(E, n) : print_host(E, n);
}
