/*
 * vectorize.c - _core.vectorize(): from a Python function to a numpy.ufunc.
 *
 * For each signature: lower the function's AST, infer types, emit the
 * kernel and its inner-loop wrapper into a module of its own, JIT it, and
 * let the target wrap the serial loop.  The compiled code of all signatures
 * is owned by a Library object, the ufunc's owner (ufunc.c), so it lives
 * exactly as long as the ufunc; the Library also answers inspect_llvm,
 * inspect_asm and inspect_types.  A failed compile registers nothing and
 * frees everything it made.  Entries never move once added: a loop NumPy
 * runs, or a compilation that re-enters the Library (a lazy ufunc called
 * while one of its own signatures compiles), may hold a pointer to one.
 *
 * The Library keeps the function's source, so that a lazy ufunc (dufunc.c)
 * can compile more signatures later, and optionally a cache object
 * (numbavec/cache.py): each signature is then first looked up on disk, and
 * a miss stores the object code, IR and types it compiled.
 */
#include "vectorize/vectorize.h"

#include "host/host.h"

#include <string.h>

/* ---- the Library: compiled code of one ufunc ---- */

typedef VzCompiled Compiled;
typedef VzLibrary Library;

static void
compiled_free(Compiled *c)
{
    if (c->data != NULL && c->free_data != NULL) {
        c->free_data(c->data);
    }
    cc_compiled_clear(&c->cc);
    PyMem_Free(c);
}

static int
library_traverse(PyObject *self, visitproc visit, void *arg)
{
    Library *lib = (Library *)self;
    Py_VISIT(Py_TYPE(self));
    return cc_kernel_traverse(lib->kernel, visit, arg);
}

/* Only the Python references: the compiled code stays until dealloc, since
 * a ufunc may still run it while a cycle is being broken. */
static int
library_clear(PyObject *self)
{
    cc_kernel_clear(((Library *)self)->kernel);
    return 0;
}

static void
library_dealloc(PyObject *self)
{
    Library *lib = (Library *)self;
    PyObject_GC_UnTrack(self);
    for (Py_ssize_t i = 0; i < lib->n; i++) {
        compiled_free(lib->items[i]);
    }
    PyMem_Free(lib->items);
    cc_kernel_free(lib->kernel);
    if (lib->extra != NULL && lib->free_extra != NULL) {
        lib->free_extra(lib->extra);
    }
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
    TsKind kinds[TS_MAXARGS];
    if (ts_parse_signature(which, &want) < 0) {
        return NULL;
    }
    for (int k = 0; k < want.nargs; k++) {
        kinds[k] = want.args[k].kind;
    }
    Py_ssize_t i = vz_library_find(lib, kinds, want.nargs);
    if (i < 0) {
        PyErr_Format(PyExc_KeyError, "no compiled signature matches %R", which);
        return NULL;
    }
    return lib->items[i];
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
        PyObject *key = sig_key(&lib->items[i]->cc.sig);
        PyObject *value = key ? getter(lib->items[i]) : NULL;
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
    if (c->cc.code == NULL) {
        return Py_NewRef(c->cc.llvm != NULL ? c->cc.llvm : Py_None);
    }
    const char *ir = cc_code_llvm(c->cc.code); /* made now if it waits */
    return ir != NULL ? PyUnicode_FromString(ir) : NULL;
}

static PyObject *
get_asm(Compiled *c)
{
    if (c->cc.code == NULL) {
        return Py_NewRef(c->cc.text != NULL ? c->cc.text : Py_None);
    }
    return cc_code_asm(c->cc.code);
}

static PyObject *
get_types(Compiled *c)
{
    return Py_NewRef(c->cc.var_types);
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
        PyObject *s = sig_key(&lib->items[i]->cc.sig);
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
    {"signatures", library_signatures, NULL, "the compiled signatures, in ufunc loop order", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot library_slots[] = {
    {Py_tp_dealloc, library_dealloc},
    {Py_tp_traverse, library_traverse},
    {Py_tp_clear, library_clear},
    {Py_tp_methods, library_methods},
    {Py_tp_getset, library_getset},
    {Py_tp_doc, "The compiled code behind a numbavec ufunc (one entry per signature)."},
    {0, NULL},
};

static PyType_Spec library_spec = {
    "numbavec._core.Library",
    sizeof(Library),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    library_slots,
};

/* Grows the table of entries so that one more fits (the entries
 * themselves stay where they are).  0/-1. */
static int
library_reserve(Library *lib)
{
    if (lib->n < lib->cap) {
        return 0;
    }
    Py_ssize_t cap = lib->cap ? lib->cap * 2 : 4;
    Compiled **items = PyMem_Realloc(lib->items, (size_t)cap * sizeof(Compiled *));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    lib->items = items;
    lib->cap = cap;
    return 0;
}

Py_ssize_t
vz_library_append(VzLibrary *lib, VzCompiled *c)
{
    if (library_reserve(lib) < 0) {
        compiled_free(c);
        return -1;
    }
    lib->items[lib->n] = c;
    return lib->n++;
}

void
vz_library_drop_last(VzLibrary *lib)
{
    compiled_free(lib->items[--lib->n]);
}

VzCompiled *
vz_compiled_new(void)
{
    VzCompiled *c = PyMem_Calloc(1, sizeof(VzCompiled));
    if (c == NULL) {
        PyErr_NoMemory();
    }
    return c;
}

void
vz_compiled_free(VzCompiled *c)
{
    if (c != NULL) {
        compiled_free(c);
    }
}

/* ---- the ufunc loop: the builder the driver wraps around the kernel ---- */

static int
loop_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
          const TsSignature *ksig, CcEntries *e)
{
    return vz_emit_loop(mod, kernels[0], ksig, e->names[0]) != NULL ? 0 : -1;
}

static const char *const loop_suffix[] = {".loop"};

static const CcBuilder loop_builder = {
    .what = "ufunc-loop",
    .form = CC_SCALAR_KERNEL,
    .nentries = 1,
    .suffixes = loop_suffix,
    .wrap = loop_wrap,
};

int
vz_quick_first(const VzLibrary *lib, const CcCompiled *cc)
{
    return tg_quick_allowed() && lib->kernel->cache == NULL && cc->lazy && cc->code != NULL
           && !cc_code_made(cc->code);
}

VzCompiled *
vz_library_compile(VzLibrary *lib, const TsSignature *sig, const CcBuilder *builder)
{
    char base[64]; /* "nv.<name>": the JIT makes exports unique (process-wide id or cache key) */
    Compiled *c = vz_compiled_new();
    if (c == NULL) {
        return NULL;
    }
    snprintf(base, sizeof(base), "nv.%.48s", lib->kernel->name);
    if (cc_compile(lib->kernel, sig, builder, &cc_host_backend, base, &c->cc) < 0) {
        compiled_free(c);
        return NULL;
    }
    return c;
}

/* Compiled into an entry of its own, appended only when whole: Python code
 * run by the compiler may add entries meanwhile. */
Py_ssize_t
vz_library_add(VzLibrary *lib, const TsSignature *sig)
{
    Compiled *c = vz_library_compile(lib, sig, &loop_builder);
    if (c == NULL) {
        return -1;
    }
    PyUFuncGenericFunction serial = (PyUFuncGenericFunction)c->cc.addrs[0];
    /* quick code first: a first result costs about a fifth of the
     * optimised code's making, which waits until the calls repay it */
    if (lib->target->wrap_loop(serial, serial != NULL ? NULL : c->cc.code,
                               serial == NULL && vz_quick_first(lib, &c->cc), &c->cc.sig,
                               c->cc.cost_ns, &c->fn, &c->data)
        < 0) {
        compiled_free(c);
        return -1;
    }
    c->free_data = lib->target->free_data;
    return vz_library_append(lib, c);
}

Py_ssize_t
vz_library_find(VzLibrary *lib, const TsKind *args, int nargs)
{
    for (Py_ssize_t i = 0; i < lib->n; i++) {
        const TsSignature *s = &lib->items[i]->cc.sig;
        int same = s->nargs == nargs;
        for (int k = 0; same && k < nargs; k++) {
            same = s->args[k].kind == args[k];
        }
        if (same) {
            return i;
        }
    }
    return -1;
}

void
vz_library_entry(VzLibrary *lib, Py_ssize_t i, PyUFuncGenericFunction *fn, void **data,
                 const TsSignature **sig)
{
    *fn = lib->items[i]->fn;
    *data = lib->items[i]->data;
    *sig = &lib->items[i]->cc.sig;
}

Py_ssize_t
vz_library_size(VzLibrary *lib)
{
    return lib->n;
}

/* ---- _core.vectorize ---- */

VzLibrary *
vz_library_new(const TgTarget *target, CcKernel *kernel)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)nv_state.library_type, Py_tp_alloc);
    Library *lib = (Library *)alloc((PyTypeObject *)nv_state.library_type, 0);
    if (lib == NULL) {
        return NULL;
    }
    lib->target = target;
    lib->kernel = kernel;
    return lib;
}

PyObject *
vz_library_ufunc(VzLibrary *lib, VzUfuncSpec *spec)
{
    Py_ssize_t n = lib->n;
    int nargs = spec->nin + spec->nout;
    PyUFuncGenericFunction *funcs = PyMem_Calloc((size_t)n + 1, sizeof(*funcs));
    void **data = PyMem_Calloc((size_t)n + 1, sizeof(void *));
    char *types = PyMem_Calloc((size_t)(n * nargs + 1), 1);
    PyObject *ufunc = NULL;
    if (funcs == NULL || data == NULL || types == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const TsSignature *sig = &lib->items[i]->cc.sig;
        funcs[i] = lib->items[i]->fn;
        data[i] = lib->items[i]->data;
        for (int k = 0; k < sig->nargs; k++) {
            types[i * nargs + k] = (char)ts_kind_typenum(sig->args[k].kind);
        }
        if (sig->ret.kind != TS_VOID) {
            types[i * nargs + sig->nargs] = (char)ts_kind_typenum(sig->ret.kind);
        }
    }
    spec->ntypes = (int)n;
    spec->funcs = funcs;
    spec->data = data;
    spec->types = types;
    spec->owner = (PyObject *)lib;
    ufunc = vz_make_ufunc(spec);
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

/* ---- lazy ufuncs: the Library as a dufunc.c backend ---- */

static Py_ssize_t
lazy_find(PyObject *compiler, const TsKind *args, int nin)
{
    return vz_library_find((Library *)compiler, args, nin);
}

static Py_ssize_t
lazy_compile(PyObject *compiler, const TsKind *args, int nin)
{
    TsSignature sig;
    memset(&sig, 0, sizeof(sig));
    sig.ret.kind = args[nin]; /* TS_INFER but from add(sig), which may name it */
    sig.nargs = nin;
    for (int k = 0; k < nin; k++) {
        sig.args[k].kind = args[k];
    }
    return vz_library_add((Library *)compiler, &sig);
}

static void
lazy_entry(PyObject *compiler, Py_ssize_t i, PyUFuncGenericFunction *fn, void **data, TsKind *kinds)
{
    const TsSignature *sig;
    vz_library_entry((Library *)compiler, i, fn, data, &sig);
    for (int k = 0; k < sig->nargs; k++) {
        kinds[k] = sig->args[k].kind;
    }
    kinds[sig->nargs] = sig->ret.kind;
}

static Py_ssize_t
lazy_size(PyObject *compiler)
{
    return vz_library_size((Library *)compiler);
}

static const VzLazyBackend library_backend = {
    lazy_find, lazy_compile, lazy_entry, lazy_size, NULL, .kernel_outputs = 1,
};

/* ---- what api.c's _code_of and _origin_of read ---- */

PyObject *
vz_code_of(PyObject *ufunc)
{
    PyObject *owner = vz_ufunc_owner(ufunc), *lazy = vz_lazy_compiler(owner);
    if (lazy != NULL) {
        return Py_NewRef(lazy);
    }
    if (owner != NULL
        && (Py_TYPE(owner) == (PyTypeObject *)nv_state.library_type
            || PyCapsule_CheckExact(owner))) {
        return Py_NewRef(owner);
    }
    PyErr_Format(PyExc_TypeError, "%R is not a numbavec ufunc", ufunc);
    return NULL;
}

PyObject *
vz_origin_of(PyObject *obj)
{
    PyObject *owner = vz_ufunc_owner(obj), *lazy = vz_lazy_compiler(owner);
    PyObject *lib = lazy != NULL ? lazy : owner;
    if (lib == NULL || Py_TYPE(lib) != (PyTypeObject *)nv_state.library_type) {
        Py_RETURN_NONE;
    }
    return cc_kernel_origin(((Library *)lib)->kernel);
}

/* ---- the host factory: what vectorize makes on cpu and parallel ---- */

int
vz_refuse_cuda_options(const TgTarget *t, TgRequest *r)
{
    if (r->arch != NULL || (r->backend != NULL && r->backend != Py_None)) {
        PyErr_Format(PyExc_TypeError, "arch= and backend= are options of the cuda target, not '%s'",
                     t->name);
        return -1;
    }
    return 0;
}

PyObject *
vz_make_vectorize(const TgTarget *t, TgRequest *r)
{
    if (vz_refuse_cuda_options(t, r) < 0) {
        return NULL;
    }
    if (cc_jit_init() < 0 || (r->nsigs > 0 && check_signatures(r->sigs, r->nsigs) < 0)) {
        return NULL;
    }
    if (r->nsigs == 0 && (r->nin < 1 || r->nin > TS_MAXARGS)) {
        PyErr_Format(PyExc_TypeError, "a ufunc takes 1 to %d arguments, not %d", TS_MAXARGS,
                     r->nin);
        return NULL;
    }
    Library *lib = vz_library_new(t, r->kernel);
    if (lib == NULL) {
        return NULL;
    }
    r->kernel = NULL; /* lib's now (api.c) */
    PyObject *ufunc = NULL;
    lib->kernel->lazy = 1; /* machine code at each signature's first call */
    if (r->nsigs == 0) {
        ufunc = vz_make_lazy_ufunc(lib->kernel->name, r->doc, r->nin, 1, r->identity,
                                   &library_backend, (PyObject *)lib, NULL);
    } else {
        Py_ssize_t i = 0;
        while (i < r->nsigs && vz_library_add(lib, &r->sigs[i]) >= 0) {
            i++;
        }
        for (Py_ssize_t k = 1; k < r->nsigs; k++) {
            NV_ASSERT(r->sigs[k].nargs == r->sigs[0].nargs); /* check_signatures */
        }
        VzUfuncSpec spec = {.name = lib->kernel->name,
                            .doc = r->doc,
                            .nin = r->sigs[0].nargs, /* all alike: see below */
                            .nout = 1,
                            .identity = r->identity};
        /* a loop that may fail (a kernel's raise, machine code that cannot
         * be made for lack of memory) needs an ArrayMethod: NumPy never asks
         * a legacy loop whether it failed */
        int may_fail = 0;
        for (Py_ssize_t k = 0; k < lib->n; k++) {
            may_fail |= (lib->items[k]->cc.fails >> CC_STATUS_RAISE) & 1;
            may_fail |= lib->items[k]->cc.code != NULL && !cc_code_made(lib->items[k]->cc.code);
        }
        if (i < r->nsigs) {
            ufunc = NULL;
        } else if (may_fail) {
            ufunc = vz_make_frozen_ufunc(spec.name, spec.doc, spec.nin, spec.identity,
                                         &library_backend, (PyObject *)lib);
        } else {
            ufunc = vz_library_ufunc(lib, &spec);
        }
    }
    Py_DECREF(lib);
    return ufunc;
}

int
vz_init_module(PyObject *module)
{
    nv_state.library_type = PyType_FromSpec(&library_spec);
    if (nv_state.library_type == NULL || vz_check_ufunc_layout() < 0
        || vz_init_testhooks(module) < 0 || vz_init_dufunc(module) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Library", nv_state.library_type);
}
