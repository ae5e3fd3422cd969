/*
 * layout.c - the layout grammar of @guvectorize and its check against the
 * signatures.
 *
 * The grammar is NumPy's gufunc signature (numpy/_core/src/umath/
 * ufunc_object.c, _parse_signature), with one extension: the '->' part may
 * be left out, and then every argument is an input that the kernel may
 * write (Numba's "(n),(n)" STREAM kernels):
 *
 *     layout     := arguments ['->' arguments]
 *     arguments  := argument (',' argument)*
 *     argument   := '(' [dimension (',' dimension)*] ')'
 *     dimension  := (name | positive integer) ['?']
 *
 * Dimension indices follow NumPy's numbering (first appearance, frozen
 * sizes matched by value), since the loop receives core sizes in that
 * order.  Errors are ValueErrors that quote the layout and point at the
 * offending character; NumPy parses the same text again when the ufunc is
 * made, which can only agree.
 */
#include "gufunc/gufunc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A distinct dimension: a name (len characters at `at` in the layout, any
 * length) or a frozen size (size > 0, matched by value: (03) is (3)). */
typedef struct DimName {
    const char *at;
    int len;
    long long size;
    int optional;
} DimName;

typedef struct Parser {
    const char *s;
    int pos;
    GuLayout *out;
    DimName names[GU_MAXCORE];
} Parser;

static int
fail(Parser *p, const char *what)
{
    /* the caret line's blanks made here: PyErr_Format takes no %*s before
     * Python 3.12 (it printed "%*s^") */
    char *pad = ts_caret_padding(p->s, p->s + p->pos);
    if (pad == NULL) {
        return -1;
    }
    /* "bad token in signature": Numba's words, which its users' tests match */
    const char *token = strncmp(what, "expected", 8) == 0 ? "bad token in signature: " : "";
    PyErr_Format(PyExc_ValueError,
                 "invalid gufunc layout '%s': %s%s at position %d\n"
                 "    %s\n    %s^",
                 p->s, token, what, p->pos, p->s, pad);
    PyMem_Free(pad);
    return -1;
}

static void
skip_space(Parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t') {
        p->pos++;
    }
}

static int
same_dimension(const DimName *a, const DimName *b)
{
    if (a->size > 0 || b->size > 0) {
        return a->size == b->size;
    }
    return a->len == b->len && memcmp(a->at, b->at, (size_t)a->len) == 0;
}

/* dimension := (name | positive integer) ['?'] */
static int
dimension(Parser *p, int arg)
{
    int start = p->pos;
    int frozen = isdigit((unsigned char)p->s[p->pos]);
    if (!frozen && !(isalpha((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_')) {
        return fail(p, "expected a dimension name or a size");
    }
    while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_') {
        p->pos++;
    }
    DimName d = {p->s + start, p->pos - start, 0, 0};
    if (frozen) {
        char *end;
        errno = 0;
        d.size = strtoll(d.at, &end, 10);
        if (end != p->s + p->pos || d.size <= 0 || errno == ERANGE) {
            p->pos = start;
            return fail(p, errno == ERANGE ? "a fixed size is too large"
                                           : "a fixed size must be a positive integer");
        }
    }
    d.optional = p->s[p->pos] == '?';
    p->pos += d.optional;
    GuLayout *L = p->out;
    int ix;
    for (ix = 0; ix < L->ndimnames && !same_dimension(&p->names[ix], &d); ix++) {
    }
    if (ix == L->ndimnames) {
        if (ix == GU_MAXCORE) {
            return fail(p, "too many dimension names");
        }
        p->names[ix] = d;
        L->fixed[ix] = d.size > 0 ? d.size : 0;
        L->optional[ix] = (unsigned char)d.optional;
        L->ndimnames++;
    } else if (p->names[ix].optional != d.optional) {
        return fail(p, d.optional ? "'?' on a dimension already used without it"
                                  : "a dimension used with '?' must always have it");
    }
    if (L->ndims[arg] == TS_MAXDIMS) {
        return fail(p, "too many dimensions");
    }
    L->dim[arg][L->ndims[arg]++] = ix;
    return 0;
}

/* argument := '(' [dimension (',' dimension)*] ')' */
static int
argument(Parser *p)
{
    GuLayout *L = p->out;
    if (L->nargs == TS_MAXARGS) {
        return fail(p, "too many arguments");
    }
    int arg = L->nargs++;
    skip_space(p);
    if (p->s[p->pos] != '(') {
        return fail(p, "expected '('");
    }
    p->pos++;
    skip_space(p);
    if (p->s[p->pos] == ')') {
        p->pos++;
        return 0;
    }
    for (;;) {
        skip_space(p);
        if (dimension(p, arg) < 0) {
            return -1;
        }
        skip_space(p);
        if (p->s[p->pos] == ')') {
            p->pos++;
            return 0;
        }
        if (p->s[p->pos] != ',') {
            return fail(p, "expected ',' or ')'");
        }
        p->pos++;
    }
}

/* arguments := argument (',' argument)* */
static int
arguments(Parser *p)
{
    for (;;) {
        if (argument(p) < 0) {
            return -1;
        }
        skip_space(p);
        if (p->s[p->pos] != ',') {
            return 0;
        }
        p->pos++;
    }
}

int
gu_parse_layout(PyObject *obj, GuLayout *out)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "a gufunc layout is a str such as '(n),(n)->(n)', "
                     "not %R",
                     obj);
        return -1;
    }
    Py_ssize_t size;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &size);
    if (s == NULL) {
        return -1;
    }
    memset(out, 0, sizeof(*out));
    if ((size_t)size != strlen(s)) {
        PyErr_SetString(PyExc_ValueError, "a gufunc layout cannot contain a NUL character");
        return -1;
    }
    if ((size_t)size >= sizeof(out->text)) {
        PyErr_Format(PyExc_ValueError, "gufunc layout too long (%zd characters; the limit is %zu)",
                     size, sizeof(out->text) - 1);
        return -1;
    }
    Parser p = {s, 0, out};
    if (arguments(&p) < 0) {
        return -1;
    }
    out->nin = out->nargs;
    skip_space(&p);
    if (s[p.pos] == '-' && s[p.pos + 1] == '>') {
        p.pos += 2;
        if (arguments(&p) < 0) {
            return -1;
        }
        skip_space(&p);
    }
    if (s[p.pos] != '\0') {
        return fail(&p, "expected ',' or '->'");
    }
    out->nout = out->nargs - out->nin;
    snprintf(out->text, sizeof(out->text), "%s", s);
    return 0;
}

/* ---- signatures against the layout ---- */

/* Raises type with Numba's exact words as its message (its users' tests
 * compare them whole) and numbavec's explanation as a PEP 678 note, which
 * tracebacks show from Python 3.11 (on 3.10 it is only in __notes__). */
static int
fail_in_numbas_words(PyObject *type, const char *words, const char *explanation)
{
    PyObject *exc_type = NULL, *exc = NULL, *tb = NULL, *notes = NULL;
    PyErr_SetString(type, words);
    PyErr_Fetch(&exc_type, &exc, &tb);
    PyErr_NormalizeException(&exc_type, &exc, &tb);
    notes = exc != NULL ? Py_BuildValue("[s]", explanation) : NULL;
    if (notes == NULL || PyObject_SetAttrString(exc, "__notes__", notes) < 0) {
        PyErr_Clear(); /* the message alone is still the right error */
    }
    Py_XDECREF(notes);
    PyErr_Restore(exc_type, exc, tb);
    return -1;
}

int
gu_check_signature(const GuLayout *layout, const TsSignature *sig, const unsigned char *written,
                   TsSignature *kernel)
{
    char buf[TS_STRSIZE], tbuf[128], words[256], why[TS_STRSIZE + 1280];
    if (sig->ret.kind != TS_VOID && sig->ret.kind != TS_INFER) {
        PyErr_Format(PyExc_TypeError,
                     "a guvectorize signature returns void: '%s' returns "
                     "%s (results are written into output arrays)",
                     ts_signature_str(sig, buf, sizeof(buf)), ts_kind_name(sig->ret.kind));
        return -1;
    }
    if (sig->nargs != layout->nargs) {
        PyErr_Format(PyExc_ValueError,
                     "signature '%s' has %d argument(s) but layout '%s' "
                     "has %d",
                     ts_signature_str(sig, buf, sizeof(buf)), sig->nargs, layout->text,
                     layout->nargs);
        return -1;
    }
    *kernel = *sig;
    kernel->ret.kind = TS_VOID;
    kernel->ret.ndim = 0;
    for (int i = 0; i < sig->nargs; i++) {
        const TsType *t = &sig->args[i];
        int core = layout->ndims[i];
        if (t->kind >= TS_NSCALAR) {
            PyErr_Format(PyExc_TypeError,
                         "argument %d of '%s' must be a number type or an "
                         "array of one",
                         i + 1, ts_signature_str(sig, buf, sizeof(buf)));
            return -1;
        }
        if (t->ndim == core) {
            if (core == 0 && written[i]) {
                PyErr_Format(PyExc_ValueError,
                             "argument %d of '%s' is written (an output "
                             "or a writable input) with layout (): declare it as an array, "
                             "%s[:], and write res[0] = ...",
                             i + 1, ts_signature_str(sig, buf, sizeof(buf)), ts_kind_name(t->kind));
                return -1;
            }
            continue;
        }
        if (core == 0 && t->ndim == 1) {
            continue; /* the 1-element view of a () argument */
        }
        if (t->ndim == 0) {
            /* Numba's words (TypeError), which its users' tests match */
            char colons[3 * TS_MAXDIMS] = ":";
            for (int d = 1; d < core && d < TS_MAXDIMS; d++) {
                strcat(colons, ", :");
            }
            snprintf(words, sizeof(words), "scalar type %s given for non scalar argument #%d",
                     ts_type_str(t, tbuf, sizeof(tbuf)), i + 1);
            snprintf(why, sizeof(why),
                     "argument #%d of '%s': its layout in '%s' has %d core dimension(s): "
                     "declare it %s[%s]",
                     i + 1, ts_signature_str(sig, buf, sizeof(buf)), layout->text, core,
                     ts_kind_name(t->kind), colons);
            return fail_in_numbas_words(PyExc_TypeError, words, why);
        }
        snprintf(words, sizeof(words), "type and shape signature mismatch for arg #%d", i + 1);
        snprintf(why, sizeof(why),
                 "argument %d of '%s' is %s (%d dimension(s)) but its "
                 "layout in '%s' has %d core dimension(s)",
                 i + 1, ts_signature_str(sig, buf, sizeof(buf)), ts_type_str(t, tbuf, sizeof(tbuf)),
                 t->ndim, layout->text, core);
        return fail_in_numbas_words(PyExc_TypeError, words, why);
    }
    return 0;
}
