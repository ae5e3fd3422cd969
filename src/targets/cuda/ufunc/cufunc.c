/*
 * cufunc.c - numbavec.cuda's ufunc: @vectorize(..., target='cuda'), the
 * object and its loops.
 *
 * A CuFunc holds, per signature, the PTX compiled at decoration time
 * (kernels.c entries through ptx.c) and, once a call needs it, the loaded
 * CUmodule with its functions and their occupancy block sizes.  No GPU is
 * needed until the first call.  A call's loop is NumPy's own choice
 * (resolve_dtypes on a no-op numpy.ufunc with the same loops, once per
 * distinct key of dtypes and weak Python scalar types, cached); a
 * signature-less ufunc compiles a loop for new input types there.
 *
 * This file: compiling, loading and choosing loops, the Python type (slots,
 * getters, inspect_*) and _cuda_vectorize.  What a call does with the loop
 * it chose is cucall.c (on call.c's skeleton, with operand.c's operands);
 * reduce is cureduce.c; ufunc.h is what they share.
 */
#include "targets/cuda/ufunc/ufunc.h"
#include "targets/target.h" /* tg_cuda, registered here */

#include "vectorize/vectorize.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* ---- compiling and loading ---- */

static void
noop_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data)
{
    /* the resolver ufunc is never run: NumPy only resolves its types */
}

/* Replaces the resolver by one with the current loops; clears the cache. */
static int
rebuild_resolver(CuFunc *f)
{
    Py_ssize_t n = f->nloops;
    int nin = f->nin;
    PyUFuncGenericFunction *funcs = PyMem_Calloc((size_t)n + 1, sizeof(*funcs));
    void **data = PyMem_Calloc((size_t)n + 1, sizeof(void *));
    char *types = PyMem_Calloc((size_t)(n * (nin + 1)) + 1, 1);
    PyObject *r = NULL;
    if (funcs == NULL || data == NULL || types == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        funcs[i] = noop_loop;
        for (int k = 0; k < nin; k++) {
            types[i * (nin + 1) + k] = (char)ts_kind_typenum(f->loops[i]->sig.args[k].kind);
        }
        types[i * (nin + 1) + nin] = (char)ts_kind_typenum(f->loops[i]->sig.ret.kind);
    }
    VzUfuncSpec spec = {.name = PyUnicode_AsUTF8AndSize(f->name, NULL),
                        .nin = nin,
                        .nout = 1,
                        .ntypes = (int)n,
                        .funcs = funcs,
                        .data = data,
                        .types = types,
                        .identity = f->reorderable ? Py_None : f->identity};
    r = spec.name != NULL ? vz_make_ufunc(&spec) : NULL;
done:
    PyMem_Free(funcs);
    PyMem_Free(data);
    PyMem_Free(types);
    if (r == NULL) {
        return -1;
    }
    Py_XDECREF(f->resolver);
    f->resolver = r;
    PyDict_Clear(f->cache);
    return 0;
}

int
cu_can_reduce(CuFunc *f)
{
    return f->nin == 2 && (f->reorderable || f->identity != Py_None);
}

/* The symbol prefix of loop i's entries: nv_<name>_<i>, name made an identifier. */
static void
loop_name(CuFunc *f, Py_ssize_t i, char *buf, size_t size)
{
    const char *pyname = PyUnicode_AsUTF8AndSize(f->name, NULL);
    snprintf(buf, size, "nv_%.80s_%d", pyname ? pyname : "ufunc", (int)i);
    for (char *p = buf; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            *p = '_';
        }
    }
}

/* Compiles sig (ret may be TS_INFER) into a new loop.  0/-1. */
static int
add_loop(CuFunc *f, TsSignature *sig)
{
    CuLoop **loops = PyMem_Realloc(f->loops, sizeof(CuLoop *) * (size_t)(f->nloops + 1));
    if (loops == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    f->loops = loops;
    CuLoop *l = PyMem_Calloc(1, sizeof(CuLoop));
    if (l == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    l->index = (int)f->nloops;
    char name[128];
    loop_name(f, f->nloops, name, sizeof(name));
    /* the reduce kernel only for a (T, T) -> T loop */
    int reduce = cu_can_reduce(f) && sig->nargs == 2 && sig->ret.kind != TS_INFER
                 && sig->args[0].kind == sig->ret.kind && sig->args[1].kind == sig->ret.kind;
    if (ptx_compile_ufunc(f->kernel, sig, f->arch, f->backend, reduce, name, &l->code) < 0) {
        PyMem_Free(l);
        return -1;
    }
    l->sig = *sig;
    loops[f->nloops++] = l;
    return 0;
}

/* Loop l compiled again for arch (and backend, when not NULL).  0/-1. */
static int
recompile(CuFunc *f, CuLoop *l, const char *arch, PyObject *backend)
{
    char name[128];
    TsSignature sig = l->sig;
    PtxCode code;
    loop_name(f, l->index, name, sizeof(name));
    if (ptx_compile_ufunc(f->kernel, &sig, arch, backend ? backend : f->backend,
                          l->code.reduce_ptx != NULL, name, &code)
        < 0) {
        return -1;
    }
    ptx_code_clear(&l->code);
    l->code = code;
    return 0;
}

/* The device's compute capability as sm_NN's NN; -1 with an exception. */
int
cu_device_sm(void)
{
    static int sm = 0;
    int major = 0, minor = 0;
    if (sm == 0) {
        if (cuda_check(cuda_drv->DeviceGetAttribute(
                           &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cuda_device()),
                       "cuDeviceGetAttribute")
                < 0
            || cuda_check(cuda_drv->DeviceGetAttribute(
                              &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cuda_device()),
                          "cuDeviceGetAttribute")
                   < 0) {
            return -1;
        }
        sm = major * 10 + minor;
    }
    return sm;
}

size_t
cu_reduce_smem(int block)
{
    return (size_t)block * 16; /* the widest item: complex128 */
}

/* The CUresult of loading ptx (no exception), or -1 with one. */
static CUresult
load_ptx(PyObject *ptx, CUmodule *mod)
{
    const char *text = PyUnicode_AsUTF8AndSize(ptx, NULL);
    if (text == NULL) {
        return -1;
    }
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS rc = cuda_drv->ModuleLoadDataEx(mod, text, 0, NULL, NULL);
    Py_END_ALLOW_THREADS return rc;
}

static int
load_module(PyObject *ptx, CUmodule *mod)
{
    CUresult rc = load_ptx(ptx, mod);
    return rc == -1 ? -1 : cuda_check(rc, "cuModuleLoadDataEx (cuda ufunc)");
}

/*
 * Loads loop l's elementwise module.  PTX is compiled at decoration for
 * f->arch (no GPU needed then); a device of a lower compute capability gets
 * the loop compiled again for its own, and a driver too old for the PTX
 * ISA libNVVM wrote (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) gets LLVM's NVPTX
 * back end, whose PTX ISA is older.
 */
static int
load_loop(CuFunc *f, CuLoop *l)
{
    int sm = cu_device_sm();
    if (sm < 0) {
        return -1;
    }
    char arch[16];
    if (sm < f->sm || (f->arch_suffix[0] && sm != f->sm)) {
        snprintf(arch, sizeof(arch), "sm_%d", sm);
        if (recompile(f, l, arch, NULL) < 0) {
            return -1;
        }
    }
    CUmodule mod = NULL; /* loaded without the GIL: stored only once it is back */
    CUresult rc = load_ptx(l->code.ptx, &mod);
    if (rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
        /* LLVM 19's NVPTX knows targets up to sm_90, whose PTX newer devices load */
        int target = sm < f->sm ? sm : f->sm;
        snprintf(arch, sizeof(arch), "sm_%d", target < 90 ? target : 90);
        PyObject *llvm = PyUnicode_FromString("llvm");
        int ok = llvm != NULL && recompile(f, l, arch, llvm) == 0;
        Py_XDECREF(llvm);
        if (!ok) {
            return -1;
        }
        rc = load_ptx(l->code.ptx, &mod);
    }
    if (rc == -1 || cuda_check(rc, "cuModuleLoadDataEx (cuda ufunc)") < 0) {
        return -1;
    }
    if (l->mod != NULL) { /* another thread loaded it meanwhile */
        cuda_drv->ModuleUnload(mod);
    } else {
        l->mod = mod;
    }
    return 0;
}

/* Loads loop l's module and resolves its entries (first call only). */
int
cu_ensure_loaded(CuFunc *f, CuLoop *l, int want_reduce)
{
    static const char *const suffix[PTX_NENTRIES] = {"_c32", "_c64", "_s32", "_s64"};
    if (cuda_driver() == NULL || cuda_enter() < 0) {
        return -1;
    }
    if (l->mod == NULL && load_loop(f, l) < 0) {
        return -1;
    }
    if (l->fn[0] == NULL) {
        char base[128];
        loop_name(f, l->index, base, sizeof(base));
        for (int v = 0; v < PTX_NENTRIES; v++) {
            char name[160];
            int mg = 0;
            snprintf(name, sizeof(name), "%s%s", base, suffix[v]);
            if (cuda_check(cuda_drv->ModuleGetFunction(&l->fn[v], l->mod, name),
                           "cuModuleGetFunction")
                    < 0
                || cuda_check(cuda_drv->OccupancyMaxPotentialBlockSize(&mg, &l->block[v], l->fn[v],
                                                                       NULL, 0, 0),
                              "cuOccupancyMaxPotentialBlockSize")
                       < 0) {
                l->fn[0] = NULL;
                return -1;
            }
        }
        if (l->code.reduce_ptx != NULL) {
            char name[160];
            int mg = 0, b = 0;
            snprintf(name, sizeof(name), "%s_r", base);
            if (load_module(l->code.reduce_ptx, &l->rmod) < 0
                || cuda_check(cuda_drv->ModuleGetFunction(&l->red, l->rmod, name),
                              "cuModuleGetFunction")
                       < 0
                || cuda_check(cuda_drv->OccupancyMaxPotentialBlockSize(&mg, &b, l->red,
                                                                       cu_reduce_smem, 0, 1024),
                              "cuOccupancyMaxPotentialBlockSize")
                       < 0) {
                return -1;
            }
            int p2 = 32;
            while (p2 * 2 <= b) {
                p2 *= 2;
            }
            l->red_block = p2;
        }
    }
    if (want_reduce && l->red == NULL) {
        PyErr_SetString(PyExc_TypeError, "reduce needs a (T, T) -> T loop");
        return -1;
    }
    return 0;
}

int
cu_check_raised(CuLoop *l, int reduce)
{
    PyObject *sites = l->code.raise_sites;
    CUmodule mod = reduce ? l->rmod : l->mod;
    if (sites == NULL || mod == NULL) {
        return 0;
    }
    CUdeviceptr word;
    size_t bytes;
    int st = 0, zero = 0;
    /* the kernels of the call may be on any of its streams: all of them */
    if (cuda_check(cuda_drv->ModuleGetGlobal(&word, &bytes, mod, CC_DEVICE_STATUS),
                   "cuModuleGetGlobal")
            < 0
        || cuda_check(cuda_drv->CtxSynchronize(), "cuCtxSynchronize") < 0
        || cuda_check(cuda_drv->MemcpyDtoHAsync(&st, word, sizeof(st), NULL), "cuMemcpyDtoH") < 0
        || cuda_check(cuda_drv->StreamSynchronize(NULL), "cuStreamSynchronize") < 0) {
        return -1;
    }
    if (st == 0) {
        return 0;
    }
    if (cuda_check(cuda_drv->MemcpyHtoDAsync(word, &zero, sizeof(zero), NULL), "cuMemcpyHtoD") < 0
        || cuda_check(cuda_drv->StreamSynchronize(NULL), "cuStreamSynchronize") < 0) {
        return -1;
    }
    Py_ssize_t i = (Py_ssize_t)st - CC_STATUS_USER;
    const char *site = i >= 0 && i < PyTuple_Size(sites)
                           ? PyUnicode_AsUTF8AndSize(PyTuple_GetItem(sites, i), NULL)
                           : NULL;
    if (site != NULL) {
        return cc_raise_site(site);
    }
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError, "a cuda ufunc's kernel failed (status %d)", st);
    }
    return -1;
}

int
cu_sm_count(void)
{
    static int count = 0;
    if (count == 0) {
        int v = 0;
        if (cuda_check(cuda_drv->DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                    cuda_device()),
                       "cuDeviceGetAttribute")
            < 0) {
            return -1;
        }
        count = v;
    }
    return count;
}

/* ---- choosing a loop ---- */

/* The resolution key: each input's dtype, or int/float/complex (weak). */
static PyObject *
resolve_key(const CuOperand *ops, int nin)
{
    PyObject *key = PyTuple_New(nin + 1);
    if (key == NULL) {
        return NULL;
    }
    for (int k = 0; k < nin; k++) {
        PyObject *item = ops[k].what == CU_OP_PYSCALAR ? (PyObject *)Py_TYPE(ops[k].obj)
                                                       : (PyObject *)ops[k].dtype;
        if (ops[k].what == CU_OP_PYSCALAR) {
            item = PyLong_Check(ops[k].obj)    ? (PyObject *)&PyLong_Type
                   : PyFloat_Check(ops[k].obj) ? (PyObject *)&PyFloat_Type
                                               : (PyObject *)&PyComplex_Type;
        }
        PyTuple_SetItem(key, k, Py_NewRef(item));
    }
    PyTuple_SetItem(key, nin, Py_NewRef(Py_None));
    return key;
}

/* The loop whose types equal NumPy's resolution, or -1 (no exception). */
static Py_ssize_t
loop_of(CuFunc *f, PyObject *dtypes)
{
    for (Py_ssize_t i = 0; i < f->nloops; i++) {
        int same = 1;
        for (int k = 0; same && k <= f->nin; k++) {
            TsKind kind = k < f->nin ? f->loops[i]->sig.args[k].kind : f->loops[i]->sig.ret.kind;
            PyArray_Descr *d = (PyArray_Descr *)PyTuple_GetItem(dtypes, k);
            same = d->type_num == ts_kind_typenum(kind);
        }
        if (same) {
            return i;
        }
    }
    return -1;
}

/* Signature-less: a loop for the inputs' own dtypes (weak scalars: defaults). */
static int
compile_for(CuFunc *f, const CuOperand *ops)
{
    TsSignature sig;
    memset(&sig, 0, sizeof(sig));
    sig.nargs = f->nin;
    for (int k = 0; k < f->nin; k++) {
        int tn = ops[k].what != CU_OP_PYSCALAR ? ops[k].dtype->type_num
                 : PyLong_Check(ops[k].obj)    ? NPY_INT64
                 : PyFloat_Check(ops[k].obj)   ? NPY_FLOAT64
                                               : NPY_COMPLEX128;
        if (ts_kind_from_typenum(tn, &sig.args[k].kind) < 0) {
            PyErr_Format(PyExc_TypeError,
                         "ufunc '%U' not supported for the input types: "
                         "no CUDA kernel for dtype %R",
                         f->name, ops[k].dtype ? (PyObject *)ops[k].dtype : Py_None);
            return -1;
        }
    }
    sig.ret.kind = TS_INFER;
    return add_loop(f, &sig) < 0 ? -1 : rebuild_resolver(f);
}

/* NumPy's choice of loop for these operands (cached per key).  -1 on error. */
Py_ssize_t
cu_resolve(CuFunc *f, const CuOperand *ops, int lazy)
{
    PyObject *key = resolve_key(ops, f->nin);
    if (key == NULL) {
        return -1;
    }
    PyObject *hit = PyDict_GetItemWithError(f->cache, key);
    if (hit != NULL) {
        Py_DECREF(key);
        return PyLong_AsSsize_t(hit);
    }
    Py_ssize_t idx = -1;
    PyObject *dtypes =
        f->nloops ? PyObject_CallMethod(f->resolver, "resolve_dtypes", "(O)", key) : NULL;
    if (f->nloops == 0) {
        PyErr_SetString(PyExc_TypeError, "no loop");
    }
    if (dtypes == NULL && lazy && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        if (compile_for(f, ops) == 0) {
            dtypes = PyObject_CallMethod(f->resolver, "resolve_dtypes", "(O)", key);
        }
    }
    if (dtypes != NULL) {
        idx = loop_of(f, dtypes);
        PyObject *v = PyLong_FromSsize_t(idx);
        if (v == NULL || PyDict_SetItem(f->cache, key, v) < 0) {
            idx = -1;
        }
        Py_XDECREF(v);
        Py_DECREF(dtypes);
        if (idx < 0 && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "internal error: resolved loop not found");
        }
    }
    Py_DECREF(key);
    return idx;
}

/* ---- attributes ---- */

static PyObject *
get_nin(PyObject *self, void *c)
{
    return PyLong_FromLong(((CuFunc *)self)->nin);
}

static PyObject *
get_nout(PyObject *self, void *c)
{
    return PyLong_FromLong(1);
}

static PyObject *
get_nargs(PyObject *self, void *c)
{
    return PyLong_FromLong(((CuFunc *)self)->nin + 1);
}

static PyObject *
get_ntypes(PyObject *self, void *c)
{
    return PyLong_FromSsize_t(((CuFunc *)self)->nloops);
}

static PyObject *
get_types(PyObject *self, void *c)
{
    CuFunc *f = (CuFunc *)self;
    return f->resolver ? PyObject_GetAttrString(f->resolver, "types") : PyList_New(0);
}

static PyObject *
get_identity(PyObject *self, void *c)
{
    CuFunc *f = (CuFunc *)self;
    return f->resolver ? PyObject_GetAttrString(f->resolver, "identity") : Py_NewRef(Py_None);
}

static PyObject *
get_name(PyObject *self, void *c)
{
    return Py_NewRef(((CuFunc *)self)->name);
}

static PyObject *
get_doc(PyObject *self, void *c)
{
    return Py_NewRef(((CuFunc *)self)->doc);
}

static PyObject *
get_pyfunc(PyObject *self, void *closure)
{
    return cc_kernel_pyfunc(((CuFunc *)self)->kernel);
}

static PyObject *
get_signatures(PyObject *self, void *c)
{
    CuFunc *f = (CuFunc *)self;
    PyObject *l = PyList_New(f->nloops);
    for (Py_ssize_t i = 0; l && i < f->nloops; i++) {
        PyObject *s = ts_signature_to_object(&f->loops[i]->sig);
        if (s == NULL) {
            Py_CLEAR(l);
            break;
        }
        PyList_SetItem(l, i, s);
    }
    return l;
}

Py_ssize_t
cu_signature_index(PyObject *which, const TsSignature *(*sig_of)(void *loops, Py_ssize_t i),
                   void *loops, Py_ssize_t n)
{
    if (which == NULL || which == Py_None) {
        if (n == 1) {
            return 0;
        }
        PyErr_SetString(PyExc_TypeError, "this ufunc has several signatures: name one");
        return -1;
    }
    TsSignature want;
    if (ts_parse_signature(which, &want) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const TsSignature *s = sig_of(loops, i);
        int same = s->nargs == want.nargs;
        for (int k = 0; same && k < s->nargs; k++) {
            same = s->args[k].kind == want.args[k].kind;
        }
        if (same) {
            return i;
        }
    }
    PyErr_Format(PyExc_KeyError, "no compiled signature matches %R", which);
    return -1;
}

static const TsSignature *
loop_sig(void *loops, Py_ssize_t i)
{
    return &((CuLoop **)loops)[i]->sig;
}

/* The loop for a signature (its argument types decide); KeyError. */
static CuLoop *
loop_for(CuFunc *f, PyObject *which)
{
    Py_ssize_t i = cu_signature_index(which, loop_sig, f->loops, f->nloops);
    return i < 0 ? NULL : f->loops[i];
}

static PyObject *
inspect_ptx(PyObject *self, PyObject *args)
{
    PyObject *which = Py_None;
    int reduce = 0;
    if (!PyArg_ParseTuple(args, "|Op", &which, &reduce)) {
        return NULL;
    }
    CuLoop *l = loop_for((CuFunc *)self, which);
    if (l == NULL) {
        return NULL;
    }
    PyObject *r = reduce ? l->code.reduce_ptx : l->code.ptx;
    return Py_NewRef(r ? r : Py_None);
}

static PyObject *
inspect_llvm(PyObject *self, PyObject *args)
{
    PyObject *which = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &which)) {
        return NULL;
    }
    CuLoop *l = loop_for((CuFunc *)self, which);
    return l ? Py_NewRef(l->code.llvm) : NULL;
}

/* variable_types(sig=None): {variable: type} of one signature, or a dict of
 * all by signature (the protocol of a host ufunc's Library). */
static PyObject *
variable_types(PyObject *self, PyObject *args)
{
    CuFunc *f = (CuFunc *)self;
    PyObject *which = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &which)) {
        return NULL;
    }
    if (which != Py_None) {
        CuLoop *l = loop_for(f, which);
        return l ? Py_NewRef(l->code.var_types) : NULL;
    }
    PyObject *all = PyDict_New();
    for (Py_ssize_t i = 0; all != NULL && i < f->nloops; i++) {
        char buf[TS_STRSIZE];
        PyObject *key = PyUnicode_FromString(ts_signature_str(&f->loops[i]->sig, buf, sizeof(buf)));
        if (key == NULL || PyDict_SetItem(all, key, f->loops[i]->code.var_types) < 0) {
            Py_CLEAR(all);
        }
        Py_XDECREF(key);
    }
    return all;
}

static PyObject *
cufunc_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<numbavec cuda ufunc '%U'>", ((CuFunc *)self)->name);
}

static int
cufunc_traverse(PyObject *self, visitproc visit, void *arg)
{
    CuFunc *f = (CuFunc *)self;
    Py_VISIT(Py_TYPE(self));
    if (cc_kernel_traverse(f->kernel, visit, arg) < 0) {
        return -1;
    }
    Py_VISIT(f->identity);
    Py_VISIT(f->resolver);
    Py_VISIT(f->cache);
    Py_VISIT(f->dict);
    return 0;
}

static int
cufunc_clear(PyObject *self)
{
    CuFunc *f = (CuFunc *)self;
    cc_kernel_clear(f->kernel);
    Py_CLEAR(f->identity);
    Py_CLEAR(f->resolver);
    Py_CLEAR(f->cache);
    Py_CLEAR(f->dict);
    return 0;
}

static void
cufunc_dealloc(PyObject *self)
{
    CuFunc *f = (CuFunc *)self;
    PyObject *et, *ev, *tb;
    /* a dealloc may run while an exception is pending (a temporary ufunc) */
    PyErr_Fetch(&et, &ev, &tb);
    PyObject_GC_UnTrack(self);
    cufunc_clear(self);
    for (Py_ssize_t i = 0; i < f->nloops; i++) {
        CuLoop *l = f->loops[i];
        if ((l->mod || l->rmod) && cuda_drv != NULL && cuda_enter() == 0) {
            if (l->mod) {
                cuda_drv->ModuleUnload(l->mod);
            }
            if (l->rmod) {
                cuda_drv->ModuleUnload(l->rmod);
            }
        }
        PyErr_Clear();
        ptx_code_clear(&l->code);
        PyMem_Free(l);
    }
    PyErr_Restore(et, ev, tb);
    PyMem_Free(f->loops);
    cc_kernel_free(f->kernel);
    Py_CLEAR(f->name);
    Py_CLEAR(f->doc);
    Py_CLEAR(f->backend);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free(self);
    Py_DECREF(tp);
}

static PyGetSetDef cufunc_getset[] = {
    {"nin", get_nin, NULL, NULL, NULL},
    {"nout", get_nout, NULL, NULL, NULL},
    {"nargs", get_nargs, NULL, NULL, NULL},
    {"ntypes", get_ntypes, NULL, NULL, NULL},
    {"types", get_types, NULL, NULL, NULL},
    {"identity", get_identity, NULL, NULL, NULL},
    {"__name__", get_name, NULL, NULL, NULL},
    {"__doc__", get_doc, NULL, NULL, NULL},
    {"py_func", get_pyfunc, NULL, NULL, NULL},
    {"signatures", get_signatures, NULL, NULL, NULL},
    {NULL},
};

/* By reference where another process finds it by name, else by value
 * (numbavec/_pickle.py, which numbavec's ufuncs share). */
PyObject *
cu_pickle_reduce(PyObject *self, PyObject *unused)
{
    PyObject *module = PyImport_ImportModule("numbavec._pickle");
    if (module == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_CallMethod(module, "reduce_object", "O", self);
    Py_DECREF(module);
    return result;
}

static PyMethodDef cufunc_methods[] = {
    {"__reduce__", cu_pickle_reduce, METH_NOARGS,
     "Pickled by reference where another process can import it, else by value."},
    {"reduce", (PyCFunction)(void (*)(void))cu_reduce, METH_VARARGS | METH_KEYWORDS,
     "reduce(array, axis=0, stream=None): a tree reduction on the device"},
    {"inspect_ptx", inspect_ptx, METH_VARARGS,
     "inspect_ptx(signature=None, reduce=False): the PTX of one signature"},
    {"inspect_llvm", inspect_llvm, METH_VARARGS,
     "inspect_llvm(signature=None): the LLVM IR handed to the PTX back end"},
    {"inspect_asm", inspect_ptx, METH_VARARGS,
     "inspect_asm(signature=None): the GPU's assembly, PTX (as inspect_ptx)"},
    {"variable_types", variable_types, METH_VARARGS,
     "variable_types(signature=None): {variable: type} of one signature, or of all"},
    {"_plan", (PyCFunction)(void (*)(void))cu_ufunc_plan, METH_VARARGS | METH_KEYWORDS,
     "Test hook: the launch plan of a call, without a GPU."},
    {"_resolve", cu_resolve_hook, METH_VARARGS, "Test hook: the loop a call would use."},
    {"_reduce_plan", (PyCFunction)(void (*)(void))cu_reduce_plan, METH_VARARGS | METH_KEYWORDS,
     "Test hook: the reduce launches, without a GPU."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef cufunc_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(CuFunc, dict), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot cufunc_slots[] = {
    {Py_tp_dealloc, cufunc_dealloc},
    {Py_tp_traverse, cufunc_traverse},
    {Py_tp_clear, cufunc_clear},
    {Py_tp_call, cu_ufunc_call},
    {Py_tp_repr, cufunc_repr},
    {Py_tp_getset, cufunc_getset},
    {Py_tp_methods, cufunc_methods},
    {Py_tp_members, cufunc_members},
    {0, NULL},
};

static PyType_Spec cufunc_spec = {
    "numbavec.cuda.CUDAUFunc",
    sizeof(CuFunc),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    cufunc_slots,
};

/*
 * The cuda target's vectorize factory (target.h): a CUDAUFunc with a loop
 * for each signature, or none yet (compiled on call for the input types).
 */
static PyObject *
make_vectorize(const TgTarget *t, TgRequest *r)
{
    CuFunc *f = PyObject_GC_New(CuFunc, (PyTypeObject *)nv_state.cufunc_type);
    if (f == NULL) {
        return NULL;
    }
    f->kernel = r->kernel;
    f->name = Py_NewRef(r->kernel->name_obj);
    r->kernel = NULL; /* f's now (api.c) */
    f->doc = r->doc != NULL ? PyUnicode_FromString(r->doc) : Py_NewRef(Py_None);
    f->backend = Py_NewRef(r->backend != NULL ? r->backend : Py_None);
    f->reorderable = PyUnicode_Check(r->identity)
                     && PyUnicode_CompareWithASCIIString(r->identity, "reorderable") == 0;
    f->identity = Py_NewRef(r->identity);
    f->resolver = NULL;
    f->cache = PyDict_New();
    f->dict = NULL;
    f->loops = NULL;
    f->nloops = 0;
    f->nin = r->nsigs > 0 ? r->sigs[0].nargs : r->nin;
    f->lazy = r->nsigs == 0;
    snprintf(f->arch, sizeof(f->arch), "%s", r->arch != NULL ? r->arch : "sm_90");
    PyObject_GC_Track((PyObject *)f);
    if (f->doc == NULL || f->cache == NULL || ptx_parse_arch(f->arch, &f->sm, f->arch_suffix) < 0) {
        goto error;
    }
    if (f->nin < 1) {
        PyErr_SetString(PyExc_TypeError, "a cuda ufunc takes at least one argument");
        goto error;
    }
    for (Py_ssize_t i = 0; i < r->nsigs; i++) {
        if (r->sigs[i].nargs != f->nin) {
            PyErr_SetString(PyExc_TypeError, "all signatures must take the same number of "
                                             "arguments");
            goto error;
        }
        TsSignature sig = r->sigs[i];
        if (add_loop(f, &sig) < 0) {
            goto error;
        }
    }
    if (rebuild_resolver(f) < 0) {
        goto error;
    }
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}

static const TgFactories target_factories = {make_vectorize, cu_make_guvectorize};

/* cuda has no host loops: its factory makes CUDAUFuncs. */
const TgTarget tg_cuda = {.name = "cuda", .make = &target_factories};

static PyMethodDef cufunc_functions[] = {
    {"_cuda_staging", cuda_staging_py, METH_VARARGS,
     "_cuda_staging(on=None): whether large host calls are staged (the previous setting)"},
    {"_cuda_gufunc_geometry", cu_gu_geometry_py, METH_VARARGS,
     "_cuda_gufunc_geometry(block, sms, n, lines) -> (grid, block) of a cuda gufunc launch"},
    {NULL, NULL, 0, NULL},
};

int
cu_ufunc_init(PyObject *module)
{
    nv_state.cufunc_type = PyType_FromSpec(&cufunc_spec);
    if (nv_state.cufunc_type == NULL
        || PyModule_AddObjectRef(module, "CUDAUFunc", nv_state.cufunc_type) < 0
        || PyModule_AddFunctions(module, cufunc_functions) < 0 || tg_register("cuda", &tg_cuda) < 0
        || tg_register("gpu", &tg_cuda) < 0) { /* gpu: Numba's alias */
        return -1;
    }
    return 0;
}
