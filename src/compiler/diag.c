/*
 * diag.c - the compiler's TypingErrors: "file:line:col: message", then the
 * source line and a caret under the column, as a C compiler prints them (a
 * notebook cell's "Cell In[4], line 5: message", as IPython prints it).
 *
 * Every pass reports here (lower.c and its helpers while lowering,
 * typeinfer.c and emit.c after), at the CcLoc of a node.  A node of an
 * inlined device function carries that function's own source (CcLoc.src),
 * so an error inside a helper points into the helper's file.  Nothing here
 * knows the IR beyond CcFunction and CcLoc.
 */
#include "compiler/compiler.h"

#include <stdarg.h>
#include <string.h>

/* lines[line - first_line] without its line ending, into buf; -1 (no
 * exception) when there is no such line: the message then goes without. */
static int
source_line(PyObject *lines, int first_line, int line, char *buf, size_t size)
{
    Py_ssize_t idx = line - first_line;
    if (lines == NULL || idx < 0 || idx >= PyList_Size(lines)) {
        return -1;
    }
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(PyList_GetItem(lines, idx), &n);
    if (text == NULL) {
        PyErr_Clear();
        return -1;
    }
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) {
        n--;
    }
    snprintf(buf, size, "%.*s", (int)n, text);
    return 0;
}

int
cc_error(const CcFunction *fn, CcLoc loc, const char *fmt, ...)
{
    char msg[512], line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (PyErr_Occurred()) {
        return -1; /* keep the first, more precise error */
    }
    /* a node of an inlined device function points into that function's file */
    const char *filename = loc.src ? loc.src->filename : fn->filename;
    PyObject *lines = loc.src ? loc.src->lines : fn->source_lines;
    int first = loc.src ? loc.src->first_line : fn->first_line;
    char where[512];
    if (filename != NULL && strncmp(filename, "Cell In[", 8) == 0) {
        /* a notebook cell, labelled as IPython's tracebacks label it
         * (numbavec/_source.py): "Cell In[4], line 5" */
        snprintf(where, sizeof(where), "%s, line %d", filename, loc.line);
    } else if (loc.col < 0) {
        snprintf(where, sizeof(where), "%s:%d", filename, loc.line);
    } else {
        snprintf(where, sizeof(where), "%s:%d:%d", filename, loc.line, loc.col + 1);
    }
    if (source_line(lines, first, loc.line, line, sizeof(line)) < 0) {
        /* a kernel rebuilt from its bytecode (numbavec/_bytecode.py) has no
         * source lines, and before 3.11 no columns */
        const char *note = lines != NULL && PyList_Size(lines) == 0
                               ? "\n    (the source is not available: numbavec compiled this "
                                 "kernel from its bytecode)"
                               : "";
        PyErr_Format(nv_state.typing_error, "%s: %s%s", where, msg, note);
        return -1;
    }
    /* col is a byte offset (Python's col_offset) */
    size_t col = loc.col >= 0 && (size_t)loc.col <= strlen(line) ? (size_t)loc.col : 0;
    char *pad = ts_caret_padding(line, line + col);
    if (pad != NULL) {
        PyErr_Format(nv_state.typing_error, "%s: %s\n    %s\n    %s^", where, msg, line, pad);
        PyMem_Free(pad);
    }
    return -1;
}

int
cc_error_raised(const CcFunction *fn, CcLoc loc, const char *what)
{
    PyObject *type, *value, *tb;
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        return -1;
    }
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    PyObject *text = PyObject_Str(value), *name = PyObject_GetAttrString(type, "__name__");
    const char *msg = text != NULL ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
    const char *tname = name != NULL ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    PyErr_Clear();
    cc_error(fn, loc, "%s raised %s: %.200s", what, tname != NULL ? tname : "an exception",
             msg != NULL ? msg : "?");
    Py_XDECREF(text);
    Py_XDECREF(name);
    PyObject *etype, *err, *etb;
    PyErr_Fetch(&etype, &err, &etb);
    PyErr_NormalizeException(&etype, &err, &etb);
    if (err != NULL) {
        PyException_SetCause(err, Py_NewRef(value)); /* steals the reference */
    }
    PyErr_Restore(etype, err, etb);
    Py_DECREF(type);
    Py_DECREF(value);
    Py_XDECREF(tb);
    return -1;
}

/* Whether errors holds an error of the same text as value: the same
 * construct of a helper inlined at several call sites, reported once.
 * 1/0, -1 with an exception. */
static int
already_kept(PyObject *errors, PyObject *value)
{
    PyObject *text = PyObject_Str(value);
    int found = text != NULL ? 0 : -1;
    for (Py_ssize_t i = 0; found == 0 && i < PyList_Size(errors); i++) {
        PyObject *other = PyObject_Str(PyList_GetItem(errors, i));
        found = other != NULL ? PyObject_RichCompareBool(text, other, Py_EQ) : -1;
        Py_XDECREF(other);
    }
    Py_XDECREF(text);
    return found;
}

int
cc_keep_error(PyObject *errors)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    int kept = value != NULL ? already_kept(errors, value) : -1;
    if (kept < 0 || (!kept && PyList_Append(errors, value) < 0)) {
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return -1;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return 0;
}

void
cc_raise_errors(PyObject *errors)
{
    PyObject *first = PyList_GetItem(errors, 0);
    if (PyList_Size(errors) == 1) {
        PyErr_SetObject((PyObject *)Py_TYPE(first), first);
        return;
    }
    PyObject *texts = PyList_New(0);
    for (Py_ssize_t i = 0; texts != NULL && i < PyList_Size(errors); i++) {
        PyObject *t = PyObject_Str(PyList_GetItem(errors, i));
        if (t == NULL || PyList_Append(texts, t) < 0) {
            Py_CLEAR(texts);
        }
        Py_XDECREF(t);
    }
    PyObject *sep = texts != NULL ? PyUnicode_FromString("\n") : NULL;
    PyObject *all = sep != NULL ? PyUnicode_Join(sep, texts) : NULL;
    PyObject *exc =
        all != NULL ? PyObject_CallFunctionObjArgs(nv_state.typing_error, all, NULL) : NULL;
    if (exc != NULL) {
        PyObject *cause = PyException_GetCause(first);
        if (cause != NULL) {
            PyException_SetCause(exc, cause); /* steals */
        }
        PyErr_SetObject(nv_state.typing_error, exc);
    }
    Py_XDECREF(texts);
    Py_XDECREF(sep);
    Py_XDECREF(all);
    Py_XDECREF(exc);
}
