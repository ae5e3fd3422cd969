/*
 * vectorize.c - _core.vectorize(): from a Python function to a numpy.ufunc.
 *
 * For each signature: lower the function's AST, infer types, emit the
 * kernel and its inner-loop wrapper into a module of its own, JIT it, and
 * let the target wrap the serial loop.  The compiled code of all signatures
 * is owned by a Library object stored in the ufunc's __dict__, so it lives
 * exactly as long as the ufunc; the Library also answers inspect_llvm,
 * inspect_asm and inspect_types.  A failed compile registers nothing and
 * frees everything it made.
 */
#include "vectorize/vectorize.h"

#include "targets/target.h"

#include <string.h>

/* ---- the Library: compiled code of one ufunc ---- */

typedef VzCompiled Compiled;
typedef VzLibrary Library;

static PyObject *library_type = NULL;

static void
compiled_clear(Library *lib, Compiled *c)
{
    if (c->target_data != NULL) {
        lib->target->free_data(c->target_data);
        c->target_data = NULL;
    }
    if (c->code != NULL) {
        cc_code_free(c->code);
        c->code = NULL;
    }
    Py_CLEAR(c->var_types);
}

static void
library_dealloc(PyObject *self)
{
    Library *lib = (Library *)self;
    for (Py_ssize_t i = 0; i < lib->n; i++) {
        compiled_clear(lib, &lib->items[i]);
    }
    PyMem_Free(lib->items);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free(self);
    Py_DECREF(tp);
}

static PyObject *
sig_key(const TsSignature *sig)
{
    char buf[TS_STRSIZE];
    return PyUnicode_FromString(ts_signature_str(sig, buf, sizeof(buf)));
}

/* The compiled signature matching `which`: a signature (its argument types
 * decide), or NULL for "all" (*all set). */
static Compiled *
find_compiled(Library *lib, PyObject *which)
{
    TsSignature want;
    if (ts_parse_signature(which, &want) < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < lib->n; i++) {
        const TsSignature *s = &lib->items[i].sig;
        int same = s->nargs == want.nargs;
        for (int k = 0; same && k < s->nargs; k++) {
            same = s->args[k].kind == want.args[k].kind;
        }
        if (same) {
            return &lib->items[i];
        }
    }
    PyErr_Format(PyExc_KeyError, "no compiled signature matches %R", which);
    return NULL;
}

typedef PyObject *(*CompiledGetter)(Compiled *c);

/* getter(sig) for one signature, or {signature: getter(...)} for all. */
static PyObject *
per_signature(Library *lib, PyObject *args, CompiledGetter getter)
{
    PyObject *which = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &which)) {
        return NULL;
    }
    if (which != Py_None) {
        Compiled *c = find_compiled(lib, which);
        return c ? getter(c) : NULL;
    }
    PyObject *result = PyDict_New();
    for (Py_ssize_t i = 0; result != NULL && i < lib->n; i++) {
        PyObject *key = sig_key(&lib->items[i].sig);
        PyObject *value = key ? getter(&lib->items[i]) : NULL;
        if (value == NULL || PyDict_SetItem(result, key, value) < 0) {
            Py_CLEAR(result);
        }
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return result;
}

static PyObject *
get_llvm(Compiled *c)
{
    return PyUnicode_FromString(cc_code_llvm(c->code));
}

static PyObject *
get_asm(Compiled *c)
{
    return cc_code_asm(c->code);
}

static PyObject *
get_types(Compiled *c)
{
    Py_INCREF(c->var_types);
    return c->var_types;
}

static PyObject *
library_inspect_llvm(PyObject *self, PyObject *args)
{
    return per_signature((Library *)self, args, get_llvm);
}

static PyObject *
library_inspect_asm(PyObject *self, PyObject *args)
{
    return per_signature((Library *)self, args, get_asm);
}

static PyObject *
library_types(PyObject *self, PyObject *args)
{
    return per_signature((Library *)self, args, get_types);
}

static PyObject *
library_signatures(PyObject *self, void *closure)
{
    Library *lib = (Library *)self;
    PyObject *list = PyList_New(lib->n);
    for (Py_ssize_t i = 0; list != NULL && i < lib->n; i++) {
        PyObject *s = sig_key(&lib->items[i].sig);
        if (s == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, i, s);
    }
    return list;
}

static PyMethodDef library_methods[] = {
    {"inspect_llvm", library_inspect_llvm, METH_VARARGS,
     "inspect_llvm(sig=None): the optimised LLVM IR of one signature, or a dict of all."},
    {"inspect_asm", library_inspect_asm, METH_VARARGS,
     "inspect_asm(sig=None): the host assembly of one signature, or a dict of all."},
    {"variable_types", library_types, METH_VARARGS,
     "variable_types(sig=None): {variable: type} of one signature, or a dict of all."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef library_getset[] = {
    {"signatures", library_signatures, NULL, "the compiled signatures, in ufunc loop order",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot library_slots[] = {
    {Py_tp_dealloc, library_dealloc},
    {Py_tp_methods, library_methods},
    {Py_tp_getset, library_getset},
    {Py_tp_doc, "The compiled code behind a numbavec ufunc (one entry per signature)."},
    {0, NULL},
};

static PyType_Spec library_spec = {
    "numbavec._core.Library", sizeof(Library), 0, Py_TPFLAGS_DEFAULT, library_slots,
};

static Library *
library_new(const TgTarget *target, Py_ssize_t n)
{
    Library *lib = PyObject_New(Library, (PyTypeObject *)library_type);
    if (lib == NULL) {
        return NULL;
    }
    lib->target = target;
    lib->n = 0;
    lib->items = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Compiled));
    if (lib->items == NULL) {
        Py_DECREF(lib);
        PyErr_NoMemory();
        return NULL;
    }
    return lib;
}

VzLibrary *
vz_library_new(const TgTarget *target, Py_ssize_t n)
{
    return library_new(target, n);
}

/* ---- compiling one signature ---- */

typedef VzSource Source;

static PyObject *collect_var_types(CcFunction *fn);
static double estimate_cost(LLVMValueRef kernel);
static int parse_source(PyObject *source, Source *src);

PyObject *
vz_var_types(CcFunction *fn)
{
    return collect_var_types(fn);
}

static PyObject *
collect_var_types(CcFunction *fn)
{
    PyObject *d = PyDict_New();
    char buf[256];
    for (int i = 0; d != NULL && i < fn->nvars; i++) {
        if (fn->vars[i]->ty == NULL) {
            continue;
        }
        PyObject *t = PyUnicode_FromString(cc_type_name(fn->vars[i]->ty, buf, sizeof(buf)));
        if (t == NULL || PyDict_SetItemString(d, fn->vars[i]->name, t) < 0) {
            Py_CLEAR(d);
        }
        Py_XDECREF(t);
    }
    const char *ret = fn->ret != NULL ? cc_type_name(fn->ret, buf, sizeof(buf)) : "none";
    PyObject *r = d ? PyUnicode_FromString(ret) : NULL;
    if (r == NULL || PyDict_SetItemString(d, "<return>", r) < 0) {
        Py_CLEAR(d);
    }
    Py_XDECREF(r);
    return d;
}

/* A rough serial cost in ns per element: the parallel target's threshold
 * starts from it (calls of math functions dominate). */
double
vz_estimate_cost(LLVMValueRef kernel)
{
    return estimate_cost(kernel);
}

static double
estimate_cost(LLVMValueRef kernel)
{
    double cost = 0.3;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(kernel); bb; bb = LLVMGetNextBasicBlock(bb)) {
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            LLVMOpcode op = LLVMGetInstructionOpcode(i);
            cost += op == LLVMCall ? 3.0
                    : (op == LLVMFDiv || op == LLVMSDiv || op == LLVMUDiv || op == LLVMFRem) ? 1.0
                    : 0.05;
        }
    }
    return cost;
}

static unsigned long long symbol_counter = 0;   /* guarded by the GIL */

static int
compile_one(const Source *src, const TsSignature *sig, Compiled *out, double *cost)
{
    CcFunction fn = {0};
    CcModule m = {0};
    int have_module = 0, rc = -1;
    fn.arena = cc_arena_new();
    if (fn.arena == NULL) {
        return -1;
    }
    fn.name = src->name;
    fn.filename = src->filename;
    fn.source_lines = src->lines;
    fn.first_line = src->first_line;
    fn.line_offset = src->line_offset;
    if (cc_lower(&fn, src->funcdef, src->pyfunc) < 0 || cc_typeinfer(&fn, sig) < 0) {
        goto done;
    }
    if (cc_dump_flags() & CC_DUMP_IR) {
        char label[TS_STRSIZE + 64], sigbuf[TS_STRSIZE];
        snprintf(label, sizeof(label), "%.48s %s", src->name,
                 ts_signature_str(sig, sigbuf, sizeof(sigbuf)));
        cc_dump_ir(&fn, label);
    }
    out->sig = *sig;
    out->sig.ret.kind = cc_storage(fn.ret);
    char kname[96], lname[96];
    unsigned long long id = ++symbol_counter;
    snprintf(kname, sizeof(kname), "nv.%.48s.%llu.kernel", src->name, id);
    snprintf(lname, sizeof(lname), "nv.%.48s.%llu.loop", src->name, id);
    if (cc_module_new(&m, lname) < 0) {
        goto done;
    }
    have_module = 1;
    LLVMValueRef kernel = cc_emit_function(&fn, &out->sig, m.mod, kname, src->fastmath);
    if (kernel == NULL || vz_emit_loop(m.mod, kernel, &out->sig, lname) == NULL) {
        goto done;
    }
    *cost = estimate_cost(kernel);
    if ((out->var_types = collect_var_types(&fn)) == NULL) {
        goto done;
    }
    const char *names[1] = {lname};
    void *addrs[1] = {NULL};
    have_module = 0;        /* cc_jit_add consumes it */
    out->code = cc_jit_add(&m, names, addrs, 1);
    if (out->code == NULL) {
        goto done;
    }
    out->fn = (PyUFuncGenericFunction)addrs[0];
    rc = 0;
done:
    if (have_module) {
        cc_module_dispose(&m);
    }
    cc_arena_free(fn.arena);
    return rc;
}

/* ---- _core.vectorize ---- */

int
vz_parse_source(PyObject *source, VzSource *src)
{
    return parse_source(source, src);
}

static int
parse_source(PyObject *source, Source *src)
{
    PyObject *filename;
    if (!PyArg_ParseTuple(source, "UiO!i", &filename, &src->first_line, &PyList_Type,
                          &src->lines, &src->line_offset)) {
        return -1;
    }
    src->filename = PyUnicode_AsUTF8AndSize(filename, NULL);
    return src->filename ? 0 : -1;
}

static PyObject *
make_ufunc(Library *lib, const Source *src, PyObject *identity, const char *doc)
{
    Py_ssize_t n = lib->n;
    int nin = n ? lib->items[0].sig.nargs : 0;
    PyUFuncGenericFunction *funcs = PyMem_Calloc((size_t)n, sizeof(*funcs));
    void **data = PyMem_Calloc((size_t)n, sizeof(void *));
    char *types = PyMem_Calloc((size_t)(n * (nin + 1)), 1);
    PyObject *ufunc = NULL;
    if (funcs == NULL || data == NULL || types == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Compiled *c = &lib->items[i];
        funcs[i] = c->fn;
        data[i] = c->target_data;
        for (int k = 0; k < nin; k++) {
            types[i * (nin + 1) + k] = (char)ts_kind_typenum(c->sig.args[k].kind);
        }
        types[i * (nin + 1) + nin] = (char)ts_kind_typenum(c->sig.ret.kind);
    }
    ufunc = vz_make_ufunc(src->name, doc, nin, 1, (int)n, funcs, data, types, identity,
                          (PyObject *)lib);
done:
    PyMem_Free(funcs);
    PyMem_Free(data);
    PyMem_Free(types);
    return ufunc;
}

static int
check_signatures(const TsSignature *sigs, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sigs[i].nargs != sigs[0].nargs) {
            PyErr_SetString(PyExc_TypeError, "all signatures of a ufunc must take the same "
                            "number of arguments");
            return -1;
        }
        if (sigs[i].nargs == 0) {
            PyErr_SetString(PyExc_TypeError, "a ufunc needs at least one argument");
            return -1;
        }
        if (sigs[i].ret.kind == TS_VOID) {
            PyErr_SetString(PyExc_TypeError, "a vectorize signature returns a scalar, not void "
                            "(void signatures are for guvectorize)");
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(vectorize_doc,
"vectorize(pyfunc, funcdef, source, signatures, target='cpu', identity=None,\n"
"          fastmath=False, name=None, doc=None) -> numpy.ufunc\n\n"
"Compiles pyfunc (whose ast.FunctionDef is funcdef; source is (filename,\n"
"first_line, lines, line_offset)) for each signature into a real ufunc.\n"
"The ufunc's __dict__['_numbavec_code'] is the Library owning the code.");

static PyObject *
vectorize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef", "source", "signatures", "target", "identity",
                             "fastmath", "name", "doc", NULL};
    PyObject *pyfunc, *funcdef, *source, *sigobj, *identity = Py_None;
    const char *target_name = "cpu", *name = NULL, *doc = NULL;
    int fastmath = 0;
    Source src = {0};
    TsSignature *sigs = NULL;
    Py_ssize_t nsigs = 0;
    Library *lib = NULL;
    PyObject *ufunc = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O|sOpzz", kwlist, &pyfunc, &funcdef,
                                     &PyTuple_Type, &source, &sigobj, &target_name, &identity,
                                     &fastmath, &name, &doc)) {
        return NULL;
    }
    const TgTarget *target = tg_lookup(target_name);
    if (target == NULL || parse_source(source, &src) < 0 || cc_jit_init() < 0
        || ts_parse_signature_list(sigobj, &sigs, &nsigs) < 0) {
        goto done;
    }
    if (nsigs == 0) {
        PyErr_SetString(PyExc_TypeError, "vectorize needs at least one signature");
        goto done;
    }
    if (check_signatures(sigs, nsigs) < 0) {
        goto done;
    }
    src.pyfunc = pyfunc;
    src.funcdef = funcdef;
    src.name = name ? name : "kernel";
    src.fastmath = fastmath;
    if ((lib = library_new(target, nsigs)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nsigs; i++) {
        Compiled *c = &lib->items[i];
        double cost = 1.0;
        lib->n = i + 1;     /* so that a failure frees what was made */
        if (compile_one(&src, &sigs[i], c, &cost) < 0
            || target->wrap_loop(c->fn, &c->sig, cost, &c->fn, &c->target_data) < 0) {
            goto done;
        }
    }
    ufunc = make_ufunc(lib, &src, identity, doc);
done:
    Py_XDECREF(lib);
    PyMem_Free(sigs);
    return ufunc;
}

static PyMethodDef vectorize_methods[] = {
    {"vectorize", (PyCFunction)(void (*)(void))vectorize, METH_VARARGS | METH_KEYWORDS,
     vectorize_doc},
    {NULL, NULL, 0, NULL},
};

int
vz_init_module(PyObject *module)
{
    library_type = PyType_FromSpec(&library_spec);
    if (library_type == NULL || PyModule_AddFunctions(module, vectorize_methods) < 0
        || vz_init_testhooks(module) < 0) {
        return -1;
    }
    Py_INCREF(library_type);
    if (PyModule_AddObject(module, "Library", library_type) < 0) {
        Py_DECREF(library_type);
        return -1;
    }
    return 0;
}
