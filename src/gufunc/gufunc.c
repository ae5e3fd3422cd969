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
    int dynamic; /* signatures come from calls: a written () is a 1-element view */
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

int
gu_kernel_signature(const GuLayout *layout, const unsigned char *base_written, int dynamic,
                    const TsSignature *sig, const unsigned char *written, TsSignature *ksig)
{
    unsigned char all[TS_MAXARGS];
    TsSignature views = *sig;
    for (int k = 0; k < TS_MAXARGS; k++) {
        all[k] = base_written[k] | written[k];
        if (dynamic && k < views.nargs && all[k] && layout->ndims[k] == 0) {
            views.args[k].ndim = 1;
        }
    }
    return gu_check_signature(layout, &views, all, ksig);
}

/* The kernel's view of sig: checked against the layout, with what the
 * kernel itself writes added to the outputs and writable_args.  A dynamic
 * gufunc's signature says nothing of how a () argument is passed: one the
 * kernel writes (res[0] = ...) is a 1-element view, as users declare it. */
static int
body_signature(const void *ctx, const TsSignature *sig, const unsigned char *written,
               TsSignature *ksig)
{
    const Options *o = ctx;
    return gu_kernel_signature(o->layout, o->written, o->dynamic, sig, written, ksig);
}

int
gu_kernel_variants(const GuLayout *layout, const TsSignature *ksig, unsigned long long masks[2])
{
    unsigned long long declared = array_mask(ksig, 1), all = array_mask(ksig, 0);
    /* 1-element views of () arguments have stride 0: unit stride is as good */
    for (int i = 0; i < ksig->nargs && i < 64; i++) {
        if (layout->ndims[i] == 0 && ksig->args[i].ndim > 0) {
            declared |= 1ULL << i;
        }
    }
    masks[0] = declared;
    masks[1] = all;
    return all != declared ? 2 : 1;
}

/* Two versions of the kernel: the general one (unit stride where declared
 * [::1]), and one with unit stride in every array's last dimension, when
 * that differs. */
static int
body_variants(const void *ctx, const TsSignature *ksig, unsigned long long masks[2])
{
    return gu_kernel_variants(((const Options *)ctx)->layout, ksig, masks);
}

/* The body around the kernel versions (gu_emit_body); 0/-1. */
static int
wrap_body(const Options *o, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
          const TsSignature *ksig, CcEntries *e, int contig_only)
{
    LLVMValueRef contig = nk > 1 ? kernels[1] : NULL;
    LLVMValueRef body =
        gu_emit_body(mod, kernels[0], contig, o->layout, ksig, e->names[0], contig_only);
    return body != NULL ? 0 : -1;
}

static int
body_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
          const TsSignature *ksig, CcEntries *e)
{
    return wrap_body(ctx, mod, kernels, nk, ksig, e, 0);
}

static int
contig_body_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
                 const TsSignature *ksig, CcEntries *e)
{
    return wrap_body(ctx, mod, kernels, nk, ksig, e, 1);
}

static const char *const body_suffix[] = {".gufunc"};
static const char *const contig_body_suffix[] = {".gufunc.contig"};

static void
free_loop(void *data)
{
    GuLoop *gl = data;
    if (gl->contig_body != NULL) {
        vz_compiled_free(gl->contig_body);
    }
    free(gl);
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
    gl->code = cc->code;
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

/*
 * The contig-only body of sig, whose whole body c waits for its first call
 * with two kernel versions: NULL when there is none to make (c's code is
 * made, as a cache hit or NUMBAVEC_EAGER=1 makes it; one version only; a
 * dynamic gufunc, which calls at once), or with an exception.
 */
static VzCompiled *
compile_contig_body(VzLibrary *lib, Options *o, const TsSignature *sig, const VzCompiled *c,
                    const CcBuilder *whole)
{
    unsigned long long masks[2];
    if (o->dynamic || !c->cc.lazy || c->cc.code == NULL || cc_code_made(c->cc.code)
        || gu_kernel_variants(o->layout, &c->cc.ksig, masks) < 2) {
        return NULL;
    }
    CcBuilder builder = *whole;
    builder.what = "gufunc-contig-body";
    builder.suffixes = contig_body_suffix;
    builder.wrap = contig_body_wrap;
    VzCompiled *f = vz_library_compile(lib, sig, &builder);
    int same = f != NULL && f->cc.ksig.nargs == c->cc.ksig.nargs;
    for (int k = 0; same && k < c->cc.ksig.nargs; k++) {
        const TsType *a = &f->cc.ksig.args[k], *b = &c->cc.ksig.args[k];
        same = a->kind == b->kind && a->ndim == b->ndim && a->contig == b->contig;
    }
    if (f != NULL && !same) {
        vz_compiled_free(f); /* typed otherwise: the whole body serves alone */
        return NULL;
    }
    return f;
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
    VzCompiled *c = vz_library_compile(lib, sig, &builder);
    if (c == NULL) {
        return -1;
    }
    GuLoop *gl = new_loop(o, &c->cc);
    if (gl == NULL) {
        vz_compiled_free(c);
        return -1;
    }
    c->data = gl;
    c->free_data = free_loop;
    tg_quick_init(&gl->quick, c->cc.code, !o->dynamic && vz_quick_first(lib, &c->cc));
    gl->contig_body = gl->quick.quick ? NULL : compile_contig_body(lib, o, sig, c, &builder);
    if (gl->contig_body == NULL && PyErr_Occurred()) {
        vz_compiled_free(c);
        return -1;
    }
    gl->contig_code = gl->contig_body != NULL ? gl->contig_body->cc.code : NULL;
    c->fn = gu_legacy_loop;
    c->cc.sig.ret.kind = TS_VOID;
    c->cc.sig.ret.ndim = 0;
    for (int k = 0; k < TS_MAXARGS; k++) {
        o->written[k] |= c->cc.written[k];
    }
    return vz_library_append(lib, c) < 0 ? -1 : 0;
}

/* ---- the ufunc ---- */

/*
 * Written operands: read, written, and copied back when NumPy had to cast
 * or copy them (see the file comment).  NumPy adds its input flags to an
 * input's; an output's replace NumPy's defaults, which are kept but for
 * write-only.  No NPY_ITER_OVERLAP_ASSUME_ELEMENTWISE: a kernel reads its
 * core blocks in any order, so an out= that is an input itself is written
 * over a copy of that input, as NumPy's own gufuncs and Numba's do.
 */
static void
set_writable(PyObject *ufunc, const GuLayout *layout, const unsigned char *written)
{
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    for (int k = 0; k < layout->nargs; k++) {
        if (k >= layout->nin) {
            uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY | NPY_ITER_ALIGNED
                              | NPY_ITER_ALLOCATE | NPY_ITER_NO_BROADCAST | NPY_ITER_NO_SUBTYPE;
        } else if (written[k]) {
            uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY;
            /* With no core dimension at all NumPy runs a gufunc elementwise,
             * through buffers that are never copied back into an input:
             * a cast input lost the kernel's writes.  Its gufunc path
             * (unbuffered, UPDATEIFCOPY) takes zero core dimensions too. */
            uf->core_enabled = 1;
        }
    }
}

int
gu_parse_writable(PyObject *obj, const GuLayout *layout, unsigned char *written)
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

/* ---- dynamic gufuncs: the Library as a dufunc.c backend ---- */

/* What a lazy gufunc keeps for its later compilations (the Library's
 * extra): its layout and what it writes. */
typedef struct Lazy {
    GuLayout layout;
    Options o; /* o.layout points at layout */
} Lazy;

static Options *
lazy_options(PyObject *compiler)
{
    return &((Lazy *)((VzLibrary *)compiler)->extra)->o;
}

/* The entry for these kinds: the inputs', and each output's where the call
 * gave it a type; an output given none takes the kind the kernel infers. */
static Py_ssize_t
gu_lazy_find(PyObject *compiler, const TsKind *kinds, int nin)
{
    VzLibrary *lib = (VzLibrary *)compiler;
    int nargs = lazy_options(compiler)->layout->nargs;
    for (Py_ssize_t i = 0; i < lib->n; i++) {
        const TsSignature *s = &lib->items[i]->cc.sig;
        const GuLoop *gl = lib->items[i]->data;
        int same = 1;
        for (int k = 0; same && k < nargs; k++) {
            same = k >= nin && kinds[k] == TS_INFER ? gl->inferred[k] : s->args[k].kind == kinds[k];
        }
        if (same) {
            return i;
        }
    }
    return -1;
}

/* Compiles the kinds as a signature of the layout's arrays; an output of
 * no given type takes the type the kernel stores into it.  When inference
 * gives the kinds of an entry compiled already (for an out= of that type),
 * the new code is dropped and that entry serves both. */
static Py_ssize_t
gu_lazy_compile(PyObject *compiler, const TsKind *kinds, int nin)
{
    VzLibrary *lib = (VzLibrary *)compiler;
    Options *o = lazy_options(compiler);
    TsSignature sig;
    memset(&sig, 0, sizeof(sig));
    sig.ret.kind = TS_VOID;
    sig.nargs = o->layout->nargs;
    for (int k = 0; k < sig.nargs; k++) {
        int ndim = o->layout->ndims[k];
        sig.args[k].kind = kinds[k];
        /* an output is a 1-element view already here: inference of its
         * kind types it as an array (a written input is one in
         * body_signature, once the kernel says it writes it) */
        sig.args[k].ndim = ndim == 0 && k >= nin ? 1 : ndim;
    }
    if (compile_one(lib, o, &sig) < 0) {
        return -1;
    }
    Py_ssize_t i = lib->n - 1;
    TsKind last[TS_MAXARGS];
    for (int k = 0; k < sig.nargs; k++) {
        last[k] = lib->items[i]->cc.sig.args[k].kind;
    }
    Py_ssize_t earlier = vz_library_find(lib, last, sig.nargs); /* i, or one before it */
    GuLoop *gl = lib->items[i]->data;
    for (int k = nin; k < sig.nargs; k++) {
        gl->inferred[k] = kinds[k] == TS_INFER;
    }
    if (earlier < i) {
        GuLoop *kept = lib->items[earlier]->data;
        for (int k = nin; k < sig.nargs; k++) {
            kept->inferred[k] |= gl->inferred[k];
        }
        vz_library_drop_last(lib);
        return earlier;
    }
    return i;
}

static void
gu_lazy_entry(PyObject *compiler, Py_ssize_t i, PyUFuncGenericFunction *fn, void **data,
              TsKind *kinds)
{
    VzCompiled *c = ((VzLibrary *)compiler)->items[i];
    *fn = c->fn;
    *data = c->data;
    for (int k = 0; k < c->cc.sig.nargs; k++) {
        kinds[k] = c->cc.sig.args[k].kind;
    }
}

static Py_ssize_t
gu_lazy_size(PyObject *compiler)
{
    return ((VzLibrary *)compiler)->n;
}

static void set_writable(PyObject *ufunc, const GuLayout *layout, const unsigned char *written);

/* The entry's ArrayMethod (errors reach the caller), and the inputs the
 * kernel writes made read-write (what this compilation found). */
static int
gu_lazy_add_method(PyObject *ufunc, PyObject *compiler, Py_ssize_t i, const TsKind *kinds)
{
    Options *o = lazy_options(compiler);
    VzLibrary *lib = (VzLibrary *)compiler;
    memcpy(((GuLoop *)lib->items[i]->data)->written, o->written, sizeof(o->written));
    set_writable(ufunc, o->layout, o->written);
    return gu_register_method(ufunc, (int)i);
}

static const VzLazyBackend gufunc_backend = {
    gu_lazy_find,       gu_lazy_compile,       gu_lazy_entry, gu_lazy_size,
    gu_lazy_add_method, .own_scalar_kinds = 1, /* a scalar argument may be an index or a count */
};

static void
lazy_free(void *extra)
{
    PyMem_Free(extra);
}

/* A gufunc with no loops yet: each call with new types compiles one. */
static PyObject *
make_lazy(VzLibrary *lib, const Options *o, TgRequest *r)
{
    Lazy *lazy = PyMem_Calloc(1, sizeof(Lazy));
    if (lazy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    lazy->layout = *o->layout;
    lazy->o = *o;
    lazy->o.layout = &lazy->layout;
    lazy->o.dynamic = 1;
    lib->extra = lazy;
    lib->free_extra = lazy_free;
    PyObject *ufunc =
        vz_make_lazy_ufunc(lib->kernel->name, r->doc, lazy->layout.nin, lazy->layout.nout,
                           r->identity, &gufunc_backend, (PyObject *)lib, lazy->layout.text);
    if (ufunc != NULL) {
        set_writable(ufunc, &lazy->layout, lazy->o.written);
        gu_type_outputs_by_out(ufunc);
    }
    return ufunc;
}

PyObject *
gu_make_guvectorize(const TgTarget *t, TgRequest *r)
{
    GuLayout layout;
    Options o = {.target = t, .layout = &layout};
    VzLibrary *lib = NULL;
    PyObject *ufunc = NULL, *result = NULL;
    if (vz_refuse_cuda_options(t, r) < 0) {
        return NULL;
    }
    if (gu_parse_layout(r->layout, &layout) < 0 || cc_jit_init() < 0) {
        return NULL;
    }
    if ((lib = vz_library_new(t, r->kernel)) == NULL) {
        return NULL;
    }
    r->kernel = NULL; /* lib's now (api.c) */
    for (int k = layout.nin; k < layout.nargs; k++) {
        o.written[k] = 1;
    }
    if (r->writable != NULL && r->writable != Py_None
        && gu_parse_writable(r->writable, &layout, o.written) < 0) {
        goto done;
    }
    if (r->nsigs == 0) {
        result = make_lazy(lib, &o, r);
        goto done;
    }
    lib->kernel->lazy = 1; /* machine code at each signature's first call */
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        if (compile_one(lib, &o, &r->sigs[i]) < 0) {
            goto done;
        }
    }
    /* every loop writes what any of them writes (the same source) */
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        memcpy(((GuLoop *)lib->items[i]->data)->written, o.written, sizeof(o.written));
    }
    VzUfuncSpec spec = {.name = lib->kernel->name,
                        .doc = r->doc,
                        .nin = layout.nin,
                        .nout = layout.nout,
                        .identity = r->identity,
                        .signature = layout.text,
                        .methods = 1};
    ufunc = vz_library_ufunc(lib, &spec);
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
