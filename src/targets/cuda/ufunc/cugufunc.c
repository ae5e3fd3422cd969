/*
 * cugufunc.c - @guvectorize(target='cuda'): the CUDAGUFunc object, its
 * compilation and loading; cugucall.c is its call protocol.
 *
 * Compilation is the host gufunc's, through the same driver: the kernel is
 * typed and emitted with array arguments (gu_kernel_signature and
 * gu_kernel_variants, gufunc.c), gufunc/loops.c emits the body that runs
 * one outer iteration, and kernels.c puts a grid-stride entry around it:
 * one GPU thread per element of the loop dimensions.  PTX comes from the
 * PTX back end (ptx_compile_with), at decoration, or (a dynamic gufunc,
 * no signatures) at the first call of new operand kinds.
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <ctype.h>

#include <stdio.h>
#include <string.h>
#include <structmember.h>

/* ---- compiling: the builder ---- */

typedef struct GuCtx {
    const GuLayout *layout;
    const unsigned char *written;
    int dynamic; /* a signature from a call: a written () input is a 1-element view */
    int aligned; /* LLVM's NVPTX back end: the entry's aligned copy of the body */
} GuCtx;

static int
kernel_signature(const void *ctx, const TsSignature *sig, const unsigned char *written,
                 TsSignature *ksig)
{
    const GuCtx *c = ctx;
    return gu_kernel_signature(c->layout, c->written, c->dynamic, sig, written, ksig);
}

static int
kernel_variants(const void *ctx, const TsSignature *ksig, unsigned long long masks[2])
{
    return gu_kernel_variants(((const GuCtx *)ctx)->layout, ksig, masks);
}

static int
wrap_entry(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
           const TsSignature *ksig, CcEntries *e)
{
    const GuCtx *c = ctx;
    char body_name[CC_NAME_SIZE + 16];
    snprintf(body_name, sizeof(body_name), "%s_body", e->names[0]);
    LLVMValueRef body =
        gu_emit_body(mod, kernels[0], nk > 1 ? kernels[1] : NULL, c->layout, ksig, body_name, 0);
    if (body == NULL) {
        return -1;
    }
    LLVMSetLinkage(body, LLVMInternalLinkage);
    e->fns[0] = ptx_build_gufunc_entry(mod, body, c->layout->nargs, c->layout->ndims,
                                       c->layout->ndimnames, c->aligned, e->names[0]);
    return 0;
}

static const char *const entry_suffix[] = {"_gu"};

void
cu_gu_loop_free(CuGuLoop *l)
{
    if (l == NULL) {
        return;
    }
    if (l->mod != NULL && cuda_drv != NULL && cuda_enter() == 0) {
        cuda_drv->ModuleUnload(l->mod);
    }
    Py_XDECREF(l->ptx);
    Py_XDECREF(l->llvm);
    Py_XDECREF(l->var_types);
    Py_XDECREF(l->raise_sites);
    PyMem_Free(l);
}

/* 1 when the PTX of entry names its second parameter (the status word)
 * once only, where it declares it: the optimiser proved every check away,
 * so a call needs no status word and need not wait for the kernel.  0
 * otherwise (any other mention, a load or its address taken, is a use). */
static int
status_unread(PyObject *ptx, const char *entry)
{
    char param[CC_NAME_SIZE + 24];
    const char *text = PyUnicode_AsUTF8AndSize(ptx, NULL);
    if (text == NULL) {
        PyErr_Clear();
        return 0;
    }
    int len = snprintf(param, sizeof(param), "%s_param_1", entry), seen = 0;
    for (const char *at = strstr(text, param); at != NULL; at = strstr(at + len, param)) {
        unsigned char next = (unsigned char)at[len];
        unsigned char before = at == text ? ' ' : (unsigned char)at[-1];
        seen += !(isalnum(next) || next == '_' || next == '$')
                && !(isalnum(before) || before == '_' || before == '$');
    }
    return seen == 1;
}

int
cu_gu_compile_loop(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index, const char *arch)
{
    int aligned = ptx_loops_take_nvptx(arch, f->backend);
    if (aligned < 0) {
        return -1;
    }
    GuCtx ctx = {&f->layout, f->written, f->lazy, aligned};
    CcBuilder builder = {
        .what = "cuda-gufunc",
        .form = CC_GUFUNC_KERNEL,
        .nentries = 1,
        .suffixes = entry_suffix,
        .kernel_signature = kernel_signature,
        .variants = kernel_variants,
        .wrap = wrap_entry,
        .ctx = &ctx,
    };
    char base[CC_NAME_SIZE], name[CC_NAME_SIZE];
    ptx_symbol_base(f->kernel->name, base, sizeof(base));
    snprintf(name, sizeof(name), "%.100s_%zd", base, index);
    CcCompiled c;
    if (ptx_compile_with(f->kernel, &l->sig, arch, f->backend, &builder, name, &c) < 0) {
        return -1;
    }
    for (int k = 0; k < TS_MAXARGS; k++) {
        f->written[k] |= c.written[k];
    }
    Py_XDECREF(l->ptx);
    Py_XDECREF(l->llvm);
    Py_XDECREF(l->var_types);
    Py_XDECREF(l->raise_sites);
    l->raise_sites = Py_XNewRef(c.raise_sites);
    l->ptx = Py_NewRef(c.text);
    l->llvm = Py_NewRef(c.llvm);
    l->var_types = Py_NewRef(c.var_types);
    l->sig = c.sig; /* outputs of a dynamic gufunc: the kinds the kernel stores */
    l->fails = c.fails;
    l->ksig = c.ksig;
    snprintf(l->entry, sizeof(l->entry), "%s%s", name, entry_suffix[0]);
    l->silent = status_unread(l->ptx, l->entry);
    cc_compiled_clear(&c);
    return 0;
}

int
cu_gu_ensure_loaded(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index)
{
    if (cuda_driver() == NULL || cuda_enter() < 0) {
        return -1;
    }
    if (l->fn != NULL) {
        return 0;
    }
    int sm = cu_device_sm();
    if (sm < 0) {
        return -1;
    }
    if (sm < f->sm || (f->arch_suffix[0] && sm != f->sm)) {
        char arch[16];
        snprintf(arch, sizeof(arch), "sm_%d", sm);
        if (cu_gu_compile_loop(f, l, index, arch) < 0) {
            return -1;
        }
    }
    const char *text = PyUnicode_AsUTF8AndSize(l->ptx, NULL);
    if (text == NULL) {
        return -1;
    }
    CUmodule mod = NULL;
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS rc = cuda_drv->ModuleLoadDataEx(&mod, text, 0, NULL, NULL);
    Py_END_ALLOW_THREADS if (cuda_check(rc, "cuModuleLoadDataEx (cuda gufunc)") < 0)
    {
        return -1;
    }
    CUfunction fn;
    int min_grid = 0, block = 0;
    if (cuda_check(cuda_drv->ModuleGetFunction(&fn, mod, l->entry), "cuModuleGetFunction") < 0
        || cuda_check(cuda_drv->OccupancyMaxPotentialBlockSize(&min_grid, &block, fn, NULL, 0, 0),
                      "cuOccupancyMaxPotentialBlockSize")
               < 0) {
        cuda_drv->ModuleUnload(mod);
        return -1;
    }
    if (l->fn != NULL) { /* loaded meanwhile, by a thread that ran while we waited */
        cuda_drv->ModuleUnload(mod);
        return 0;
    }
    l->mod = mod;
    l->fn = fn;
    l->block = block > 0 ? block : 128;
    return 0;
}

/* ---- the object ---- */

static const TsSignature *
loop_sig(void *loops, Py_ssize_t i)
{
    return &((CuGuLoop **)loops)[i]->sig;
}

/* The loop a signature argument names (NULL or None: the only one). */
static CuGuLoop *
loop_named(CuGuFunc *f, PyObject *args)
{
    PyObject *which = NULL;
    if (!PyArg_ParseTuple(args, "|O", &which)) {
        return NULL;
    }
    Py_ssize_t i = cu_signature_index(which, loop_sig, f->loops, f->nloops);
    return i < 0 ? NULL : f->loops[i];
}

static PyObject *
inspect_ptx(PyObject *self, PyObject *args)
{
    CuGuLoop *l = loop_named((CuGuFunc *)self, args);
    return l ? Py_NewRef(l->ptx) : NULL;
}

static PyObject *
inspect_llvm(PyObject *self, PyObject *args)
{
    CuGuLoop *l = loop_named((CuGuFunc *)self, args);
    return l ? Py_NewRef(l->llvm) : NULL;
}

static PyObject *
variable_types(PyObject *self, PyObject *args)
{
    CuGuFunc *f = (CuGuFunc *)self;
    if (PyTuple_Size(args) > 0 && PyTuple_GetItem(args, 0) != Py_None) {
        CuGuLoop *l = loop_named(f, args);
        return l ? PyDict_Copy(l->var_types) : NULL;
    }
    PyObject *all = PyDict_New();
    for (Py_ssize_t i = 0; all != NULL && i < f->nloops; i++) {
        char buf[TS_STRSIZE];
        PyObject *key = PyUnicode_FromString(ts_signature_str(&f->loops[i]->sig, buf, sizeof(buf)));
        if (key == NULL || PyDict_SetItem(all, key, f->loops[i]->var_types) < 0) {
            Py_CLEAR(all);
        }
        Py_XDECREF(key);
    }
    return all;
}

static PyObject *
get_types(PyObject *self, void *closure)
{
    CuGuFunc *f = (CuGuFunc *)self;
    PyObject *list = PyList_New(f->nloops);
    for (Py_ssize_t i = 0; list != NULL && i < f->nloops; i++) {
        const TsSignature *s = &f->loops[i]->sig;
        char buf[2 * TS_MAXARGS + 3];
        int at = 0;
        for (int k = 0; k < s->nargs; k++) {
            PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(s->args[k].kind));
            if (d == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            buf[at++] = d->type;
            Py_DECREF(d);
            if (k + 1 == f->layout.nin) {
                buf[at++] = '-';
                buf[at++] = '>';
            }
        }
        buf[at] = '\0';
        PyObject *t = PyUnicode_FromString(buf);
        if (t == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, i, t);
    }
    return list;
}

static PyObject *
get_signature(PyObject *self, void *closure)
{
    return PyUnicode_FromString(((CuGuFunc *)self)->layout.text);
}

static PyObject *
get_nin(PyObject *self, void *closure)
{
    return PyLong_FromLong(((CuGuFunc *)self)->layout.nin);
}

static PyObject *
get_nout(PyObject *self, void *closure)
{
    return PyLong_FromLong(((CuGuFunc *)self)->layout.nout);
}

static PyObject *
get_nargs(PyObject *self, void *closure)
{
    return PyLong_FromLong(((CuGuFunc *)self)->layout.nargs);
}

static PyObject *
get_ntypes(PyObject *self, void *closure)
{
    return PyLong_FromSsize_t(((CuGuFunc *)self)->nloops);
}

static PyObject *
get_pyfunc(PyObject *self, void *closure)
{
    return cc_kernel_pyfunc(((CuGuFunc *)self)->kernel);
}

static PyObject *
gufunc_repr(PyObject *self)
{
    CuGuFunc *f = (CuGuFunc *)self;
    return PyUnicode_FromFormat("<numbavec cuda gufunc '%U' %s>", f->name, f->layout.text);
}

static int
gufunc_traverse(PyObject *self, visitproc visit, void *arg)
{
    CuGuFunc *f = (CuGuFunc *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(f->dict);
    Py_VISIT(f->backend);
    return cc_kernel_traverse(f->kernel, visit, arg);
}

/* Breaks cycles through the kernel's function (its globals hold this
 * object when it is defined at module level). */
static int
gufunc_clear(PyObject *self)
{
    CuGuFunc *f = (CuGuFunc *)self;
    cc_kernel_clear(f->kernel);
    Py_CLEAR(f->dict);
    return 0;
}

static void
gufunc_dealloc(PyObject *self)
{
    CuGuFunc *f = (CuGuFunc *)self;
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    gufunc_clear(self);
    for (Py_ssize_t i = 0; i < f->nloops; i++) {
        cu_gu_loop_free(f->loops[i]);
    }
    PyMem_Free(f->loops);
    Py_XDECREF(f->name);
    Py_XDECREF(f->doc);
    Py_XDECREF(f->backend);
    if (f->kernel != NULL) {
        cc_kernel_free(f->kernel);
    }
    freefunc free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free(self);
    Py_DECREF(tp);
}

static PyGetSetDef gufunc_getset[] = {
    {"nin", get_nin, NULL, NULL, NULL},        {"nout", get_nout, NULL, NULL, NULL},
    {"nargs", get_nargs, NULL, NULL, NULL},    {"ntypes", get_ntypes, NULL, NULL, NULL},
    {"types", get_types, NULL, NULL, NULL},    {"signature", get_signature, NULL, NULL, NULL},
    {"py_func", get_pyfunc, NULL, NULL, NULL}, {NULL},
};

static PyMethodDef gufunc_methods[] = {
    {"__reduce__", cu_pickle_reduce, METH_NOARGS,
     "Pickled by reference where another process can import it, else by value."},
    {"inspect_ptx", inspect_ptx, METH_VARARGS, "inspect_ptx(signature=None): the PTX of one"},
    {"inspect_llvm", inspect_llvm, METH_VARARGS,
     "inspect_llvm(signature=None): the LLVM IR handed to the PTX back end"},
    {"inspect_asm", inspect_ptx, METH_VARARGS,
     "inspect_asm(signature=None): the GPU's assembly, PTX (as inspect_ptx)"},
    {"variable_types", variable_types, METH_VARARGS,
     "variable_types(signature=None): {variable: type} of one signature, or of all"},
    {"_plan", (PyCFunction)(void (*)(void))cu_gufunc_plan, METH_VARARGS | METH_KEYWORDS,
     "test hook: how a call would be staged (the host side, without a GPU)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef gufunc_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(CuGuFunc, dict), READONLY, NULL},
    {"__name__", T_OBJECT, offsetof(CuGuFunc, name), READONLY, NULL},
    {"__doc__", T_OBJECT, offsetof(CuGuFunc, doc), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot gufunc_slots[] = {
    {Py_tp_dealloc, gufunc_dealloc},
    {Py_tp_traverse, gufunc_traverse},
    {Py_tp_clear, gufunc_clear},
    {Py_tp_call, cu_gufunc_call},
    {Py_tp_repr, gufunc_repr},
    {Py_tp_getset, gufunc_getset},
    {Py_tp_methods, gufunc_methods},
    {Py_tp_members, gufunc_members},
    {0, NULL},
};

static PyType_Spec gufunc_spec = {
    "numbavec.cuda.CUDAGUFunc",
    sizeof(CuGuFunc),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    gufunc_slots,
};

/* The cuda target's guvectorize factory (target.h): a CUDAGUFunc with a
 * loop for each signature, compiled to PTX now. */
PyObject *
cu_make_guvectorize(const struct TgTarget *t, TgRequest *r)
{
    CuGuFunc *f = PyObject_GC_New(CuGuFunc, (PyTypeObject *)nv_state.cugufunc_type);
    if (f == NULL) {
        return NULL;
    }
    f->kernel = r->kernel;
    f->name = Py_NewRef(r->kernel->name_obj);
    r->kernel = NULL; /* f's now (api.c) */
    f->doc = r->doc != NULL ? PyUnicode_FromString(r->doc) : Py_NewRef(Py_None);
    f->backend = Py_NewRef(r->backend != NULL ? r->backend : Py_None);
    f->dict = NULL;
    f->loops = NULL;
    f->nloops = 0;
    f->lazy = r->nsigs == 0;
    memset(f->written, 0, sizeof(f->written));
    snprintf(f->arch, sizeof(f->arch), "%s", r->arch != NULL ? r->arch : "sm_90");
    PyObject_GC_Track((PyObject *)f);
    if (f->doc == NULL || gu_parse_layout(r->layout, &f->layout) < 0
        || ptx_parse_arch(f->arch, &f->sm, f->arch_suffix) < 0) {
        goto error;
    }
    const GuLayout *L = &f->layout;
    for (int k = L->nin; k < L->nargs; k++) {
        f->written[k] = 1;
    }
    if (r->writable != NULL && r->writable != Py_None
        && gu_parse_writable(r->writable, L, f->written) < 0) {
        goto error;
    }
    if (r->nsigs > 0 && (f->loops = PyMem_Calloc((size_t)r->nsigs, sizeof(CuGuLoop *))) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        CuGuLoop *l = PyMem_Calloc(1, sizeof(CuGuLoop));
        if (l == NULL) {
            PyErr_NoMemory();
            goto error;
        }
        l->sig = r->sigs[i];
        f->loops[f->nloops++] = l;
        if (cu_gu_compile_loop(f, l, i, f->arch) < 0) {
            goto error;
        }
    }
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}

int
cu_gufunc_init(PyObject *module)
{
    nv_state.cugufunc_type = PyType_FromSpec(&gufunc_spec);
    if (nv_state.cugufunc_type == NULL
        || PyModule_AddObjectRef(module, "CUDAGUFunc", nv_state.cugufunc_type) < 0) {
        return -1;
    }
    return 0;
}
