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

/* The Library frees each entry's target_data through its target's
 * free_data; for gufuncs that is a GuLoop (which names the real target). */
static void
free_loop(void *data)
{
    free(data);
}

static const TgTarget loop_owner = {"gufunc", NULL, free_loop, NULL};

/* ---- which parameters a kernel writes ---- */

/* Sets written[i] for every parameter i that the tree n assigns to. */
static void
mark_written(const CcNode *n, unsigned char *written)
{
    if (n == NULL) {
        return;
    }
    if (n->kind == ND_SETITEM && n->lhs->lhs->kind == ND_VAR && n->lhs->lhs->var->is_param) {
        written[n->lhs->lhs->var->index] = 1;
    }
    const CcNode *kids[5] = {n->lhs, n->rhs, n->cond, n->then, n->els};
    for (int i = 0; i < 5; i++) {
        mark_written(kids[i], written);
    }
    for (int i = 0; n->args != NULL && i < n->nargs; i++) {
        mark_written(n->args[i], written);
    }
}

/* ---- compiling one signature ---- */

typedef struct Options {
    const GuLayout *layout;
    const TgTarget *target;
    int boundscheck;
    unsigned char written[TS_MAXARGS]; /* outputs and writable_args; grows */
} Options;

static unsigned long long symbol_counter = 0; /* guarded by the GIL */

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

static GuLoop *
new_loop(const Options *o, const TsSignature *kernel, double cost)
{
    GuLoop *gl = calloc(1, sizeof(GuLoop));
    if (gl == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    gl->target = o->target;
    gl->layout = *o->layout;
    gl->kernel = *kernel;
    gl->cost_ns = cost > 0.0 ? cost : 1.0;
    for (int k = 0; k < kernel->nargs; k++) {
        gl->itemsize[k] = ts_itemsize(kernel->args[k].kind);
        gl->contig[k] = (unsigned char)(kernel->args[k].contig && kernel->args[k].ndim > 0);
    }
    return gl;
}

/* Emits the two kernels and the body into m; returns the general kernel. */
static LLVMValueRef
emit_all(CcFunction *fn, const VzSource *src, const Options *o, const TsSignature *ksig,
         CcModule *m, const char *bname)
{
    char gname[128], cname[128];
    snprintf(gname, sizeof(gname), "%s.kernel", bname);
    snprintf(cname, sizeof(cname), "%s.kernel.contig", bname);
    unsigned long long declared = array_mask(ksig, 1), all = array_mask(ksig, 0);
    /* 1-element views of () arguments have stride 0: unit stride is as good */
    for (int i = 0; i < ksig->nargs && i < 64; i++) {
        if (o->layout->ndims[i] == 0 && ksig->args[i].ndim > 0) {
            declared |= 1ULL << i;
        }
    }
    LLVMValueRef general = cc_emit_gufunc_kernel(fn, ksig, m->mod, gname, src->fastmath, declared);
    LLVMValueRef contig = NULL;
    if (general != NULL && all != declared) {
        contig = cc_emit_gufunc_kernel(fn, ksig, m->mod, cname, src->fastmath, all);
        if (contig == NULL) {
            return NULL;
        }
    }
    if (general == NULL || gu_emit_body(m->mod, general, contig, o->layout, ksig, bname) == NULL) {
        return NULL;
    }
    return general;
}

static int
compile_one(const VzSource *src, Options *o, const TsSignature *sig, VzCompiled *out)
{
    CcFunction fn = {0};
    CcModule m = {0};
    TsSignature ksig;
    int rc = -1;
    if (gu_check_signature(o->layout, sig, o->written, &ksig) < 0) {
        return -1;
    }
    if (vz_function_init(&fn, src) < 0) {
        return -1;
    }
    fn.boundscheck = o->boundscheck;
    if (cc_lower(&fn, src->funcdef, src->pyfunc) < 0 || cc_typeinfer(&fn, &ksig) < 0) {
        goto done;
    }
    mark_written(fn.body, o->written);
    out->sig = *sig;
    out->sig.ret.kind = TS_VOID;
    out->sig.ret.ndim = 0;
    char bname[96];
    snprintf(bname, sizeof(bname), "nv.%.48s.%llu.gufunc", src->name, ++symbol_counter);
    if (cc_module_new(&m, bname) < 0) {
        goto done;
    }
    LLVMValueRef general = emit_all(&fn, src, o, &ksig, &m, bname);
    if (general == NULL || (out->var_types = vz_var_types(&fn)) == NULL) {
        goto done;
    }
    GuLoop *gl = new_loop(o, &ksig, vz_estimate_cost(general));
    if (gl == NULL) {
        goto done;
    }
    out->target_data = gl;
    const char *names[1] = {bname};
    void *addrs[1] = {NULL};
    if ((out->code = cc_jit_add(&m, names, addrs, 1)) == NULL) {
        goto done;
    }
    gl->body = (GuBodyFn)addrs[0];
    out->fn = gu_legacy_loop;
    rc = 0;
done:
    cc_module_dispose(&m);
    cc_arena_free(fn.arena);
    return rc;
}

/* ---- the ufunc ---- */

static PyObject *
make_ufunc(VzLibrary *lib, const VzSource *src, const GuLayout *layout, PyObject *identity,
           const char *doc)
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
        data[i] = lib->items[i]->target_data;
        for (int k = 0; k < nargs; k++) {
            types[i * nargs + k] = (char)ts_kind_typenum(lib->items[i]->sig.args[k].kind);
        }
    }
    VzUfuncSpec spec = {.name = src->name,
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
             "            name=None, doc=None) -> numpy.ufunc (a gufunc)\n\n"
             "Compiles pyfunc for each signature into a generalized ufunc with the core\n"
             "signature `layout`; a layout without '->' has no outputs (the kernel\n"
             "writes into its inputs).");

static PyObject *
guvectorize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {
        "pyfunc",        "funcdef",  "source",      "signatures", "layout", "target", "identity",
        "writable_args", "fastmath", "boundscheck", "name",       "doc",    NULL};
    PyObject *pyfunc, *funcdef, *source, *sigobj, *layout_obj, *identity = Py_None;
    PyObject *writable = NULL;
    const char *target_name = "cpu", *name = NULL, *doc = NULL;
    int fastmath = 0, boundscheck = 1;
    VzSource src = {0};
    GuLayout layout;
    Options o = {0};
    TsSignature *sigs = NULL;
    Py_ssize_t nsigs = 0;
    VzLibrary *lib = NULL;
    PyObject *ufunc = NULL, *result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OO|sOOppzz", kwlist, &pyfunc, &funcdef,
                                     &PyTuple_Type, &source, &sigobj, &layout_obj, &target_name,
                                     &identity, &writable, &fastmath, &boundscheck, &name, &doc)) {
        return NULL;
    }
    o.target = tg_lookup(target_name);
    if (o.target == NULL || o.target->run_range == NULL || vz_parse_source(source, &src) < 0
        || gu_parse_layout(layout_obj, &layout) < 0 || cc_jit_init() < 0
        || ts_parse_signature_list(sigobj, &sigs, &nsigs) < 0) {
        goto done;
    }
    if (nsigs == 0) {
        PyErr_SetString(PyExc_TypeError, "guvectorize needs at least one signature");
        goto done;
    }
    o.layout = &layout;
    o.boundscheck = boundscheck;
    for (int k = layout.nin; k < layout.nargs; k++) {
        o.written[k] = 1;
    }
    if (writable != NULL && writable != Py_None
        && parse_writable(writable, &layout, o.written) < 0) {
        goto done;
    }
    src.pyfunc = pyfunc;
    src.funcdef = funcdef;
    src.name = name ? name : "kernel";
    src.fastmath = fastmath;
    if ((lib = vz_library_alloc(&loop_owner)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < nsigs; i++) {
        VzCompiled *c = PyMem_Calloc(1, sizeof(VzCompiled));
        if (c == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        /* appended even when it fails: the library frees what was made */
        int failed = compile_one(&src, &o, &sigs[i], c) < 0;
        if (vz_library_append(lib, c) < 0 || failed) {
            goto done;
        }
    }
    /* every loop writes what any of them writes (the same source) */
    for (Py_ssize_t i = 0; i < nsigs; i++) {
        memcpy(((GuLoop *)lib->items[i]->target_data)->written, o.written, sizeof(o.written));
    }
    ufunc = make_ufunc(lib, &src, &layout, identity, doc);
    if (ufunc == NULL) {
        goto done;
    }
    set_writable(ufunc, &layout, o.written);
    if (gu_register_methods(ufunc, (int)nsigs) < 0) {
        goto done;
    }
    result = ufunc;
    ufunc = NULL;
done:
    Py_XDECREF(ufunc);
    Py_XDECREF(lib);
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
