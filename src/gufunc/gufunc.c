/*
 * gufunc.c - _core.guvectorize(): from a Python kernel to a numpy gufunc.
 *
 * For each signature: check it against the layout, lower and type the
 * kernel with array arguments, emit it twice (general strides; unit
 * stride in every array's last dimension), emit the body around both
 * (loops.c), JIT it, and describe the loop in a GuLoop for call.c.  The
 * code is owned by a Library (vectorize.h), the ufunc's owner, so
 * inspect_llvm/inspect_asm/variable_types work as for vectorize.
 *
 * Written operands (outputs; inputs of layouts without '->',
 * writable_args, and any input the kernel assigns to) get
 * NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY in the ufunc's op_flags:
 * when NumPy must cast or copy one, its iterator fills the copy from the
 * caller's array first and writes it back afterwards (WRITEBACKIFCOPY), so
 * writes are never lost and what the kernel leaves alone keeps the
 * caller's values, whatever the dtype or the strides of what was passed.
 * (NumPy's default for outputs is write-only: the copy would start as
 * uninitialised memory, and that would reach the caller.)
 */
#include "gufunc/gufunc.h"

#include "vectorize/vectorize.h"

#include <stdlib.h>
#include <string.h>

/* ---- the gufunc core loop: the builder the driver wraps around the kernel ---- */

typedef struct Options {
    const GuLayout *layout;
    const TgTarget *target;
    unsigned char written[TS_MAXARGS]; /* outputs and writable_args; grows */
} Options;

static unsigned long long
array_mask(const TsSignature *k, int declared_only)
{
    unsigned long long m = 0;
    for (int i = 0; i < k->nargs && i < 64; i++) {
        if (k->args[i].ndim > 0 && (!declared_only || k->args[i].contig)) {
            m |= 1ULL << i;
        }
    }
    return m;
}

/* The kernel's view of sig: checked against the layout, with what the
 * kernel itself writes added to the outputs and writable_args. */
static int
body_signature(const void *ctx, const TsSignature *sig, const unsigned char *written,
               TsSignature *ksig)
{
    const Options *o = ctx;
    unsigned char all[TS_MAXARGS];
    for (int k = 0; k < TS_MAXARGS; k++) {
        all[k] = o->written[k] | written[k];
    }
    return gu_check_signature(o->layout, sig, all, ksig);
}

/* Two versions of the kernel: the general one (unit stride where declared
 * [::1]), and one with unit stride in every array's last dimension, when
 * that differs. */
static int
body_variants(const void *ctx, const TsSignature *ksig, unsigned long long masks[2])
{
    const Options *o = ctx;
    unsigned long long declared = array_mask(ksig, 1), all = array_mask(ksig, 0);
    /* 1-element views of () arguments have stride 0: unit stride is as good */
    for (int i = 0; i < ksig->nargs && i < 64; i++) {
        if (o->layout->ndims[i] == 0 && ksig->args[i].ndim > 0) {
            declared |= 1ULL << i;
        }
    }
    masks[0] = declared;
    masks[1] = all;
    return all != declared ? 2 : 1;
}

static int
body_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
          const TsSignature *ksig, CcEntries *e)
{
    const Options *o = ctx;
    LLVMValueRef contig = nk > 1 ? kernels[1] : NULL;
    return gu_emit_body(mod, kernels[0], contig, o->layout, ksig, e->names[0]) != NULL ? 0 : -1;
}

static const char *const body_suffix[] = {".gufunc"};

static void
free_loop(void *data)
{
    free(data);
}

static GuLoop *
new_loop(const Options *o, const CcCompiled *cc)
{
    GuLoop *gl = calloc(1, sizeof(GuLoop));
    if (gl == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    const TsSignature *kernel = &cc->ksig;
    gl->body = (GuBodyFn)cc->addrs[0];
    gl->target = o->target;
    gl->layout = *o->layout;
    gl->kernel = *kernel;
    gl->cost_ns = cc->cost_ns > 0.0 ? cc->cost_ns : 1.0;
    for (int k = 0; k < kernel->nargs; k++) {
        gl->itemsize[k] = ts_itemsize(kernel->args[k].kind);
        gl->contig[k] = (unsigned char)(kernel->args[k].contig && kernel->args[k].ndim > 0);
    }
    return gl;
}

/* Compiles sig through the driver into a new entry of lib. */
static int
compile_one(VzLibrary *lib, Options *o, const TsSignature *sig)
{
    CcBuilder builder = {
        .what = "gufunc-body",
        .form = CC_GUFUNC_KERNEL,
        .nentries = 1,
        .suffixes = body_suffix,
        .kernel_signature = body_signature,
        .variants = body_variants,
        .wrap = body_wrap,
        .ctx = o,
    };
    char base[64];
    VzCompiled *c = vz_compiled_new();
    if (c == NULL) {
        return -1;
    }
    vz_symbol_base(lib, base, sizeof(base));
    if (cc_compile(lib->kernel, sig, &builder, &cc_host_backend, base, &c->cc) < 0
        || (c->data = new_loop(o, &c->cc)) == NULL) {
        vz_compiled_free(c);
        return -1;
    }
    c->fn = gu_legacy_loop;
    c->free_data = free_loop;
    c->cc.sig.ret.kind = TS_VOID;
    c->cc.sig.ret.ndim = 0;
    for (int k = 0; k < TS_MAXARGS; k++) {
        o->written[k] |= c->cc.written[k];
    }
    return vz_library_append(lib, c) < 0 ? -1 : 0;
}

/* ---- the ufunc ---- */

static PyObject *
make_ufunc(VzLibrary *lib, const GuLayout *layout, PyObject *identity, const char *doc)
{
    Py_ssize_t n = lib->n;
    int nargs = layout->nargs;
    PyUFuncGenericFunction *funcs = PyMem_Calloc((size_t)n, sizeof(*funcs));
    void **data = PyMem_Calloc((size_t)n, sizeof(void *));
    char *types = PyMem_Calloc((size_t)(n * nargs + 1), 1);
    PyObject *ufunc = NULL;
    if (funcs == NULL || data == NULL || types == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        funcs[i] = lib->items[i]->fn;
        data[i] = lib->items[i]->data;
        for (int k = 0; k < nargs; k++) {
            types[i * nargs + k] = (char)ts_kind_typenum(lib->items[i]->cc.sig.args[k].kind);
        }
    }
    VzUfuncSpec spec = {.name = lib->kernel->name,
                        .doc = doc,
                        .nin = layout->nin,
                        .nout = layout->nout,
                        .ntypes = (int)n,
                        .funcs = funcs,
                        .data = data,
                        .types = types,
                        .identity = identity,
                        .owner = (PyObject *)lib,
                        .signature = layout->text,
                        .methods = 1};
    ufunc = vz_make_ufunc(&spec);
done:
    PyMem_Free(funcs);
    PyMem_Free(data);
    PyMem_Free(types);
    return ufunc;
}

/*
 * Written operands: read, written, and copied back when NumPy had to cast
 * or copy them (see the file comment).  NumPy adds its input flags to an
 * input's; an output's replace NumPy's defaults, which are kept but for
 * write-only.
 */
static void
set_writable(PyObject *ufunc, const GuLayout *layout, const unsigned char *written)
{
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    for (int k = 0; k < layout->nargs; k++) {
        if (k >= layout->nin) {
            uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY | NPY_ITER_ALIGNED
                              | NPY_ITER_ALLOCATE | NPY_ITER_NO_BROADCAST | NPY_ITER_NO_SUBTYPE
                              | NPY_ITER_OVERLAP_ASSUME_ELEMENTWISE;
        } else if (written[k]) {
            uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY;
        }
    }
}

/* writable_args: a sequence of argument indices (the decorator turns names
 * into indices). */
static int
parse_writable(PyObject *obj, const GuLayout *layout, unsigned char *written)
{
    Py_ssize_t n = PySequence_Size(obj);
    if (n < 0) {
        PyErr_SetString(PyExc_TypeError, "writable_args must be a sequence of argument indices");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(obj, i);
        long k = item != NULL ? PyLong_AsLong(item) : -1;
        Py_XDECREF(item);
        if (k == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (k < 0 || k >= layout->nargs) {
            PyErr_Format(PyExc_ValueError,
                         "writable_args: argument index %ld out of range "
                         "(the layout has %d arguments)",
                         k, layout->nargs);
            return -1;
        }
        written[k] = 1;
    }
    return 0;
}

PyDoc_STRVAR(guvectorize_doc,
             "guvectorize(pyfunc, funcdef, source, signatures, layout, target='cpu',\n"
             "            identity=None, writable_args=(), fastmath=False, boundscheck=True,\n"
             "            name=None, doc=None, cache=None) -> numpy.ufunc (a gufunc)\n\n"
             "Compiles pyfunc for each signature into a generalized ufunc with the core\n"
             "signature `layout`; a layout without '->' has no outputs (the kernel\n"
             "writes into its inputs).");

PyObject *
gu_make_guvectorize(const TgTarget *t, TgRequest *r)
{
    GuLayout layout;
    Options o = {.target = t, .layout = &layout};
    VzLibrary *lib = NULL;
    PyObject *ufunc = NULL, *result = NULL;
    if (gu_parse_layout(r->layout, &layout) < 0 || cc_jit_init() < 0) {
        cc_kernel_free(r->kernel);
        return NULL;
    }
    if ((lib = vz_library_new(t, r->kernel)) == NULL) {
        return NULL;
    }
    if (r->nsigs == 0) {
        PyErr_SetString(PyExc_TypeError, "guvectorize needs at least one signature");
        goto done;
    }
    for (int k = layout.nin; k < layout.nargs; k++) {
        o.written[k] = 1;
    }
    if (r->writable != NULL && r->writable != Py_None
        && parse_writable(r->writable, &layout, o.written) < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        if (compile_one(lib, &o, &r->sigs[i]) < 0) {
            goto done;
        }
    }
    /* every loop writes what any of them writes (the same source) */
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        memcpy(((GuLoop *)lib->items[i]->data)->written, o.written, sizeof(o.written));
    }
    ufunc = make_ufunc(lib, &layout, r->identity, r->doc);
    if (ufunc == NULL) {
        goto done;
    }
    set_writable(ufunc, &layout, o.written);
    if (gu_register_methods(ufunc, (int)r->nsigs) < 0) {
        goto done;
    }
    result = ufunc;
    ufunc = NULL;
done:
    Py_XDECREF(ufunc);
    Py_XDECREF(lib);
    return result;
}

static PyObject *
guvectorize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef",  "source",        "signatures", "layout",
                             "target", "identity", "writable_args", "fastmath",   "boundscheck",
                             "name",   "doc",      "cache",         NULL};
    PyObject *pyfunc, *funcdef, *source, *sigobj, *layout, *identity = Py_None;
    PyObject *writable = NULL, *cache = Py_None;
    const char *target_name = "cpu", *name = NULL, *doc = NULL;
    int fastmath = 0, boundscheck = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OO|sOOppzzO", kwlist, &pyfunc, &funcdef,
                                     &PyTuple_Type, &source, &sigobj, &layout, &target_name,
                                     &identity, &writable, &fastmath, &boundscheck, &name, &doc,
                                     &cache)) {
        return NULL;
    }
    TgRequest r = {.identity = identity, .doc = doc, .layout = layout, .writable = writable};
    TsSignature *sigs = NULL;
    const TgTarget *t = tg_for(target_name, "guvectorize");
    if (t == NULL || ts_parse_signature_list(sigobj, &sigs, &r.nsigs) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    r.sigs = sigs;
    r.kernel = cc_kernel_new(pyfunc, funcdef, source, name, fastmath, boundscheck, cache);
    if (r.kernel != NULL) {
        result = t->make->guvectorize(t, &r);
    }
    PyMem_Free(sigs);
    return result;
}

static PyMethodDef gufunc_methods[] = {
    {"guvectorize", (PyCFunction)(void (*)(void))guvectorize, METH_VARARGS | METH_KEYWORDS,
     guvectorize_doc},
    {NULL, NULL, 0, NULL},
};

int
gu_init_module(PyObject *module)
{
    return PyModule_AddFunctions(module, gufunc_methods);
}
