/*
 * parse.c - user signatures -> TsSignature.
 *
 * Owns the string grammar ("float32(float32, f4[:, ::1])", "(i8, f8)", and
 * Numba's bare argument list "f8[:], f8") and
 * the Python forms a decorator accepts: a str, a Signature made by calling a
 * type, an argument tuple with the return type left out, or a list of any of
 * them.  Everything else in numbavec sees only the TsSignature values made
 * here.  Errors quote the whole string and put a caret under the bad part,
 * as a compiler does, because signatures are typed by hand.
 *
 * The parser is a recursive descent straight over the characters: the
 * tokens (names, '(', ')', ',', '[', ']', ':', '1') are all one character
 * or an identifier, so a separate tokenizer would not pay for itself.
 */
#include "typesig/typesig.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct Parser {
    const char *text; /* the whole string, quoted in messages */
    const char *p;    /* the next character */
    const char *end;
    const char *what; /* "signature" or "type", for messages */
    int array_ret;    /* a helper's signature: its return may be an array */
} Parser;

/* ---- errors ---- */

char *
ts_caret_padding(const char *text, const char *at)
{
    char *pad = PyMem_Malloc((size_t)(at - text) + 1);
    size_t n = 0;
    if (pad == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (const char *c = text; c < at; c++) {
        if (((unsigned char)*c & 0xC0) != 0x80) {
            pad[n++] = *c == '\t' ? '\t' : ' ';
        }
    }
    pad[n] = '\0';
    return pad;
}

/* Raises ValueError pointing at `at`; always returns -1. */
static int
parse_error(Parser *ps, const char *at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *pad = ts_caret_padding(ps->text, at);
    if (pad == NULL) {
        return -1;
    }
    PyErr_Format(PyExc_ValueError, "invalid %s '%s': %s\n    %s\n    %s^", ps->what, ps->text, msg,
                 ps->text, pad);
    PyMem_Free(pad);
    return -1;
}

/* ---- characters ---- */

static void
skip_space(Parser *ps)
{
    while (ps->p < ps->end && isspace((unsigned char)*ps->p)) {
        ps->p++;
    }
}

/* Skips blanks, then consumes c if it is next; 1 if it did. */
static int
consume(Parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

static int
at_end(Parser *ps)
{
    skip_space(ps);
    return ps->p >= ps->end;
}

static int
is_name_char(char c, int first)
{
    return isalpha((unsigned char)c) || c == '_' || (!first && isdigit((unsigned char)c));
}

/* ---- the grammar ---- */

/* name := an identifier from the table of type names (ts_kind_from_name) */
static int
parse_name(Parser *ps, TsKind *kind)
{
    skip_space(ps);
    const char *start = ps->p;
    while (ps->p < ps->end && is_name_char(*ps->p, ps->p == start)) {
        ps->p++;
    }
    size_t len = (size_t)(ps->p - start);
    if (len == 0) {
        if (start >= ps->end) {
            return parse_error(ps, start, "expected a type name, found the end");
        }
        if (*start & 0x80) {
            /* Not ASCII: the caret shows it; one byte of it would not print. */
            return parse_error(ps, start, "expected a type name");
        }
        return parse_error(ps, start, "expected a type name, found '%c'", *start);
    }
    if (ts_kind_from_name(start, len, kind) < 0) {
        return parse_error(ps, start, "unknown type '%.*s'", (int)len, start);
    }
    return 0;
}

/* dim := ':' | ':' ':' '1' */
static int
parse_dim(Parser *ps, int *contig)
{
    skip_space(ps);
    const char *start = ps->p;
    if (!consume(ps, ':')) {
        return parse_error(ps, start, "a dimension must be ':' or '::1'");
    }
    *contig = 0;
    if (consume(ps, ':')) {
        skip_space(ps);
        if (!consume(ps, '1')) {
            return parse_error(ps, ps->p,
                               "a dimension must be ':' or '::1' "
                               "(only a step of 1 is allowed)");
        }
        *contig = 1;
    }
    return 0;
}

/* dims := dim (',' dim)* ']'     -- '::1' only as the last dim */
static int
parse_dims(Parser *ps, TsType *t)
{
    for (;;) {
        skip_space(ps);
        const char *start = ps->p;
        int contig;
        if (t->ndim == TS_MAXDIMS) {
            return parse_error(ps, start, "more than %d dimensions", TS_MAXDIMS);
        }
        if (parse_dim(ps, &contig) < 0) {
            return -1;
        }
        t->ndim++;
        t->contig = contig;
        if (consume(ps, ']')) {
            return 0;
        }
        if (!consume(ps, ',')) {
            if (at_end(ps)) {
                return parse_error(ps, ps->p, "missing ']'");
            }
            return parse_error(ps, ps->p,
                               "a dimension must be ':' or '::1', "
                               "separated by ','");
        }
        if (contig) {
            return parse_error(ps, start,
                               "'::1' (C-contiguous) is allowed only on "
                               "the last dimension");
        }
    }
}

/* type := name ['[' dims] */
static int
parse_type(Parser *ps, TsType *t)
{
    t->ndim = 0;
    t->contig = 0;
    if (parse_name(ps, &t->kind) < 0) {
        return -1;
    }
    skip_space(ps);
    const char *bracket = ps->p;
    if (!consume(ps, '[')) {
        return 0;
    }
    if (t->kind == TS_VOID) {
        return parse_error(ps, bracket, "void cannot be an array type");
    }
    return parse_dims(ps, t);
}

/* arg := type, not void */
static int
parse_arg(Parser *ps, TsSignature *sig)
{
    skip_space(ps);
    const char *start = ps->p;
    if (sig->nargs == TS_MAXARGS) {
        return parse_error(ps, start, "more than %d arguments", TS_MAXARGS);
    }
    TsType *t = &sig->args[sig->nargs];
    if (parse_type(ps, t) < 0) {
        return -1;
    }
    if (t->kind == TS_VOID) {
        return parse_error(ps, start, "void is not a valid argument type");
    }
    sig->nargs++;
    return 0;
}

/* args := [arg (',' arg)* [',']] ')' */
static int
parse_args(Parser *ps, TsSignature *sig)
{
    sig->nargs = 0;
    if (consume(ps, ')')) {
        return 0;
    }
    for (;;) {
        if (parse_arg(ps, sig) < 0) {
            return -1;
        }
        if (consume(ps, ')')) {
            return 0;
        }
        if (!consume(ps, ',')) {
            if (at_end(ps)) {
                return parse_error(ps, ps->p, "missing ')'");
            }
            return parse_error(ps, ps->p, "expected ',' or ')' after an argument type");
        }
        if (consume(ps, ')')) {
            return 0;
        }
    }
}

/* bare := arg (',' arg)+ [','] to the end: Numba's argument list without
 * parentheses ("f8[:], f8, f8[:]"), the return type left out as in
 * "(f8[:], f8, f8[:])".  One type alone stays an error (a forgotten '('). */
static int
parse_bare_args(Parser *ps, TsSignature *sig)
{
    sig->nargs = 0;
    for (;;) {
        if (parse_arg(ps, sig) < 0) {
            return -1;
        }
        if (at_end(ps)) {
            return 0;
        }
        if (!consume(ps, ',')) {
            return parse_error(ps, ps->p, "expected ',' after an argument type");
        }
        if (at_end(ps)) {
            return 0;
        }
    }
}

/* Whether the rest of the text is a bare argument list: a ',' and no '('. */
static int
is_bare_list(const Parser *ps)
{
    size_t n = (size_t)(ps->end - ps->p);
    return memchr(ps->p, '(', n) == NULL && memchr(ps->p, ',', n) != NULL;
}

/* return := type, a scalar or void (an array too for a helper's) */
static int
parse_return(Parser *ps, TsType *ret)
{
    skip_space(ps);
    const char *start = ps->p;
    if (parse_type(ps, ret) < 0) {
        return -1;
    }
    if (ret->ndim > 0 && !ps->array_ret) {
        return parse_error(ps, start,
                           "an array cannot be a return type: a ufunc "
                           "returns scalars and a gufunc returns void, writing its "
                           "outputs into array arguments");
    }
    return 0;
}

/* signature := [return] '(' args end | bare */
static int
parse_signature_text(Parser *ps, TsSignature *sig)
{
    if (at_end(ps)) {
        return parse_error(ps, ps->p, "empty signature");
    }
    sig->ret.kind = TS_INFER;
    sig->ret.ndim = 0;
    sig->ret.contig = 0;
    if (is_bare_list(ps)) {
        return parse_bare_args(ps, sig);
    }
    if (*ps->p != '(' && parse_return(ps, &sig->ret) < 0) {
        return -1;
    }
    if (!consume(ps, '(')) {
        if (at_end(ps)) {
            return parse_error(ps, ps->p, "missing '(' and the argument types");
        }
        return parse_error(ps, ps->p, "expected '(' after the return type");
    }
    if (parse_args(ps, sig) < 0) {
        return -1;
    }
    if (!at_end(ps)) {
        return parse_error(ps, ps->p, "unexpected text after the signature");
    }
    return 0;
}

static void
parser_init(Parser *ps, const char *text, size_t len, const char *what)
{
    ps->text = text;
    ps->p = text;
    ps->end = text + len;
    ps->what = what;
    ps->array_ret = 0;
}

int
ts_parse_type_str(const char *text, TsType *out)
{
    Parser ps;
    parser_init(&ps, text, strlen(text), "type");
    if (at_end(&ps)) {
        return parse_error(&ps, ps.p, "empty type name");
    }
    if (parse_type(&ps, out) < 0) {
        return -1;
    }
    if (!at_end(&ps)) {
        return parse_error(&ps, ps.p, "unexpected text after the type");
    }
    return 0;
}

/* ---- Python objects ---- */

/* The UTF-8 of a str, refusing NUL characters (they would cut messages). */
static const char *
str_text(PyObject *str, Py_ssize_t *len)
{
    const char *text = PyUnicode_AsUTF8AndSize(str, len);
    if (text != NULL && strlen(text) != (size_t)*len) {
        PyErr_SetString(PyExc_ValueError, "a signature must not contain NUL characters");
        return NULL;
    }
    return text;
}

static int
parse_signature_str(PyObject *str, TsSignature *out, int array_ret)
{
    Py_ssize_t len;
    Parser ps;
    const char *text = str_text(str, &len);
    if (text == NULL) {
        return -1;
    }
    parser_init(&ps, text, (size_t)len, "signature");
    ps.array_ret = array_ret;
    return parse_signature_text(&ps, out);
}

/* The name of obj's class, for messages: "int".  New reference or NULL. */
static PyObject *
class_name(PyObject *obj)
{
    return PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
}

static int
wrong_object(PyObject *obj, const char *expected)
{
    PyObject *name = class_name(obj);
    if (name != NULL) {
        PyErr_Format(PyExc_TypeError, "%s, not %U", expected, name);
        Py_DECREF(name);
    }
    return -1;
}

/* A Type where a signature was expected: say how to write one. */
static int
lone_type_error(const TsType *t)
{
    char name[TS_STRSIZE];
    ts_type_str(t, name, sizeof name);
    if (t->kind == TS_VOID || t->ndim > 0) {
        const char *arg = t->ndim > 0 ? name : "float64[:]";
        PyErr_Format(PyExc_TypeError,
                     "%s is a type, not a signature; write void(%s) "
                     "or 'void(%s)'",
                     name, arg, arg);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "%s is a type, not a signature; write %s(%s) "
                     "or '%s(%s)'",
                     name, name, name, name, name);
    }
    return -1;
}

/* One item of an argument tuple: a Type or a type name, not void. */
static int
tuple_item_type(PyObject *item, Py_ssize_t index, TsType *out)
{
    if (PyUnicode_Check(item)) {
        Py_ssize_t len;
        const char *text = str_text(item, &len);
        if (text == NULL || ts_parse_type_str(text, out) < 0) {
            return -1;
        }
    } else if (!ts_type_check(item, out)) {
        return wrong_object(item, "an argument tuple holds numbavec types or type names");
    }
    if (out->kind == TS_VOID) {
        PyErr_Format(PyExc_ValueError,
                     "void is not a valid argument type "
                     "(item %zd of the argument tuple)",
                     index + 1);
        return -1;
    }
    return 0;
}

/* (float32, 'f8[:]') -> "(float32, float64[:])", the return type inferred. */
static int
parse_arg_tuple(PyObject *tuple, TsSignature *out)
{
    Py_ssize_t n = PyTuple_Size(tuple);
    if (n > TS_MAXARGS) {
        PyErr_Format(PyExc_ValueError, "a signature takes at most %d arguments, not %zd",
                     TS_MAXARGS, n);
        return -1;
    }
    out->ret.kind = TS_INFER;
    out->ret.ndim = 0;
    out->ret.contig = 0;
    out->nargs = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tuple_item_type(PyTuple_GetItem(tuple, i), i, &out->args[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* One signature; array_ret: a helper's, whose return may be an array. */
static int
parse_one(PyObject *obj, TsSignature *out, int array_ret)
{
    TsType t;
    if (PyUnicode_Check(obj)) {
        return parse_signature_str(obj, out, array_ret);
    }
    if (ts_signature_check(obj, out)) {
        if (out->ret.ndim > 0 && !array_ret) {
            char buf[TS_STRSIZE];
            PyErr_Format(PyExc_TypeError,
                         "%s cannot be a return type: a ufunc returns scalars and a gufunc "
                         "returns void, writing its outputs into array arguments (a helper's "
                         "signature may return an array)",
                         ts_type_str(&out->ret, buf, sizeof buf));
            return -1;
        }
        return 0;
    }
    if (PyTuple_Check(obj)) {
        return parse_arg_tuple(obj, out);
    }
    if (ts_type_check(obj, &t)) {
        return lone_type_error(&t);
    }
    return wrong_object(obj, "a signature must be a str, a Signature or a tuple of "
                             "argument types");
}

int
ts_parse_signature(PyObject *obj, TsSignature *out)
{
    return parse_one(obj, out, 0);
}

int
ts_parse_helper_signature(PyObject *obj, TsSignature *out)
{
    return parse_one(obj, out, 1);
}

/*
 * A tuple is one argument tuple when every item is a Type or a str without
 * '(' (a type name, even a misspelt one, so that its error names it);
 * otherwise it is a tuple of signatures.  1/0.
 */
static int
is_arg_tuple(PyObject *tuple)
{
    Py_ssize_t n = PyTuple_Size(tuple);
    TsType t;
    if (n == 0) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GetItem(tuple, i);
        if (PyUnicode_Check(item)) {
            Py_ssize_t len;
            const char *text = PyUnicode_AsUTF8AndSize(item, &len);
            if (text == NULL) {
                PyErr_Clear();
                return 0;
            }
            if (memchr(text, '(', (size_t)len) != NULL) {
                return 0;
            }
        } else if (!ts_type_check(item, &t)) {
            return 0;
        }
    }
    return 1;
}

static int
parse_list(PyObject *obj, TsSignature **out, Py_ssize_t *count, int array_ret)
{
    TsSignature *sigs = NULL;
    Py_ssize_t n = 1;
    /* [] and () are no signatures (a lazy ufunc); '' is a bad one */
    int none = (PyList_Check(obj) || PyTuple_Check(obj)) && PySequence_Size(obj) == 0;
    int many = none || PyList_Check(obj) || (PyTuple_Check(obj) && !is_arg_tuple(obj));
    *out = NULL;
    *count = 0;
    if (many) {
        n = none ? 0 : PyList_Check(obj) ? PyList_Size(obj) : PyTuple_Size(obj);
    }
    /* One element at least, so that an empty list is not a NULL result. */
    sigs = PyMem_Malloc(sizeof(TsSignature) * (size_t)(n > 0 ? n : 1));
    if (sigs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = !many               ? obj
                         : PyList_Check(obj) ? PyList_GetItem(obj, i)
                                             : PyTuple_GetItem(obj, i);
        if (item == NULL || parse_one(item, &sigs[i], array_ret) < 0) {
            goto error;
        }
    }
    *out = sigs;
    *count = n;
    return 0;
error:
    PyMem_Free(sigs);
    return -1;
}

int
ts_parse_signature_list(PyObject *obj, TsSignature **out, Py_ssize_t *count)
{
    return parse_list(obj, out, count, 0);
}

int
ts_parse_helper_signature_list(PyObject *obj, TsSignature **out, Py_ssize_t *count)
{
    return parse_list(obj, out, count, 1);
}
