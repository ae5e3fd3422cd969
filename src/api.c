/*
 * api.c - the _core entry points the decorators and the Python package
 * call: argument parsing, and ownership of the kernel a decoration makes.
 *
 * vectorize and guvectorize parse their arguments, find the target
 * (host/: tg_for), parse the signatures (typesig/), make the kernel
 * (compiler/: cc_kernel_new) and hand all of it to the target's factory
 * (vectorize/, gufunc/, targets/cuda/) as a TgRequest.  The kernel stays
 * this file's until the object the factory makes takes it (make(), below);
 * a failed factory leaves it here to free.  Also the lazy ufunc's entry
 * points and the parallel target's thread counts.  Sits at the top, beside
 * module.c, which calls nv_api_init.
 */
#include "api.h"
#include "gufunc/gufunc.h"
#include "host/pool.h"
#include "vectorize/vectorize.h"

/* ---- the decorators ---- */

/*
 * The kernel is api.c's: a factory and the checks it runs borrow it, and
 * the object it makes takes it over on success (the factory then clears
 * r->kernel).  When the factory fails, what it did not hand on is freed
 * here, once.
 */
static PyObject *
make(const TgTarget *t, PyObject *(*factory)(const TgTarget *, TgRequest *), TgRequest *r)
{
    PyObject *made = factory(t, r);
    NV_ASSERT(made == NULL || r->kernel == NULL); /* taken over, or still ours */
    if (made == NULL) {
        cc_kernel_free(r->kernel);
    }
    return made;
}

PyDoc_STRVAR(vectorize_doc,
             "vectorize(pyfunc, funcdef, source, signatures, target='cpu', identity=None,\n"
             "          fastmath=False, name=None, doc=None, cache=None, nin=-1, arch=None,\n"
             "          backend=None, origin=None) -> numpy.ufunc or numbavec.cuda.CUDAUFunc\n\n"
             "What @vectorize makes: pyfunc (whose ast.FunctionDef is funcdef; source is\n"
             "(filename, first_line, lines, line_offset)) compiled for each signature by\n"
             "the target's factory; no signatures: compiled on call for the types it\n"
             "meets (nin: the kernel's arity).  cache: a numbavec.cache.FunctionCache,\n"
             "or None.  arch, backend: the cuda target's.  origin: numbavec's Origin\n"
             "(numbavec/_capture.py), which the object keeps: what each compilation reads.");

static PyObject *
vectorize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc",   "funcdef",  "source",  "signatures", "target",
                             "identity", "fastmath", "name",    "doc",        "cache",
                             "nin",      "arch",     "backend", "origin",     NULL};
    PyObject *pyfunc, *funcdef, *source, *sigobj, *identity = Py_None, *cache = Py_None;
    PyObject *backend = Py_None, *origin = Py_None;
    const char *target_name = "cpu", *name = NULL, *doc = NULL, *arch = NULL;
    int fastmath = 0, nin = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O|sOpzzOizOO", kwlist, &pyfunc, &funcdef,
                                     &PyTuple_Type, &source, &sigobj, &target_name, &identity,
                                     &fastmath, &name, &doc, &cache, &nin, &arch, &backend,
                                     &origin)) {
        return NULL;
    }
    TgRequest r = {.nin = nin, .identity = identity, .doc = doc, .arch = arch, .backend = backend};
    TsSignature *sigs = NULL;
    const TgTarget *t = tg_for(target_name, "vectorize");
    if (t == NULL || ts_parse_signature_list(sigobj, &sigs, &r.nsigs) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    r.sigs = sigs;
    r.kernel = cc_kernel_new(pyfunc, funcdef, source, name, fastmath, 1, cache, origin);
    if (r.kernel != NULL) {
        result = make(t, t->make->vectorize, &r);
    }
    PyMem_Free(sigs);
    return result;
}

PyDoc_STRVAR(guvectorize_doc,
             "guvectorize(pyfunc, funcdef, source, signatures, layout, target='cpu',\n"
             "            identity=None, writable_args=(), fastmath=False, boundscheck=True,\n"
             "            name=None, doc=None, cache=None, arch=None, backend=None,\n"
             "            origin=None) -> numpy.ufunc (a gufunc)\n\n"
             "Compiles pyfunc for each signature into a generalized ufunc with the core\n"
             "signature `layout`; a layout without '->' has no outputs (the kernel\n"
             "writes into its inputs).");


static PyObject *
guvectorize(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef",  "source",        "signatures", "layout",
                             "target", "identity", "writable_args", "fastmath",   "boundscheck",
                             "name",   "doc",      "cache",         "arch",       "backend",
                             "origin", NULL};
    PyObject *pyfunc, *funcdef, *source, *sigobj, *layout, *identity = Py_None;
    PyObject *writable = NULL, *cache = Py_None, *backend = NULL, *origin = Py_None;
    const char *target_name = "cpu", *name = NULL, *doc = NULL, *arch = NULL;
    int fastmath = 0, boundscheck = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OO|sOOppzzOzOO", kwlist, &pyfunc, &funcdef,
                                     &PyTuple_Type, &source, &sigobj, &layout, &target_name,
                                     &identity, &writable, &fastmath, &boundscheck, &name, &doc,
                                     &cache, &arch, &backend, &origin)) {
        return NULL;
    }
    TgRequest r = {.identity = identity,
                   .doc = doc,
                   .layout = layout,
                   .writable = writable,
                   .arch = arch,
                   .backend = backend};
    TsSignature *sigs = NULL;
    const TgTarget *t = tg_for(target_name, "guvectorize");
    if (t == NULL || ts_parse_signature_list(sigobj, &sigs, &r.nsigs) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    r.sigs = sigs;
    r.kernel = cc_kernel_new(pyfunc, funcdef, source, name, fastmath, boundscheck, cache, origin);
    if (r.kernel != NULL) {
        result = make(t, t->make->guvectorize, &r);
    }
    PyMem_Free(sigs);
    return result;
}

/* ---- lazy ufuncs ---- */

PyDoc_STRVAR(lazy_add_doc,
             "_lazy_add(ufunc, signature): compile a lazy ufunc's loop for signature now:\n"
             "its argument types, and its return type when it names one (else the\n"
             "kernel's); a gufunc's void signature may give its outputs' types too.");

static PyObject *
lazy_add(PyObject *module, PyObject *args)
{
    PyObject *ufunc, *sigobj;
    TsSignature sig;
    if (!PyArg_ParseTuple(args, "OO", &ufunc, &sigobj) || ts_parse_signature(sigobj, &sig) < 0) {
        return NULL;
    }
    return vz_lazy_add(ufunc, &sig);
}

PyDoc_STRVAR(code_of_doc,
             "_code_of(ufunc): the compiled code behind a numbavec ufunc (a Library, or a\n"
             "test hook's code capsule).  TypeError for any other object.");

static PyObject *
code_of(PyObject *module, PyObject *ufunc)
{
    return vz_code_of(ufunc);
}

PyDoc_STRVAR(origin_of_doc,
             "_origin_of(obj): the Origin a numbavec ufunc keeps (what it was made from and\n"
             "what its compilations read: numbavec/_capture.py), or None for any other\n"
             "object.  Held by its Library, out of reach of its attributes.");

static PyObject *
origin_of(PyObject *module, PyObject *obj)
{
    return vz_origin_of(obj);
}

/* ---- the parallel target's thread counts ---- */

static PyObject *
set_num_threads(PyObject *self, PyObject *arg)
{
    if (!PyLong_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_num_threads() takes an integer");
        return NULL;
    }
    int overflow;
    long n = PyLong_AsLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow || n < 1 || n > tg_pool_size() || tg_pool_set_num_threads((int)n) < 0) {
        PyErr_Format(PyExc_ValueError, "number of threads must be between 1 and %d (the pool size)",
                     tg_pool_size());
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
get_num_threads(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(tg_pool_get_num_threads());
}

static PyObject *
get_pool_size(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(tg_pool_size());
}

static PyMethodDef api_functions[] = {
    {"_code_of", code_of, METH_O, code_of_doc},
    {"_origin_of", origin_of, METH_O, origin_of_doc},
    {"_lazy_disabled", vz_lazy_disabled, METH_O,
     "_lazy_disabled(ufunc): whether disable_compile() was called on a lazy ufunc."},
    {"_lazy_add", lazy_add, METH_VARARGS, lazy_add_doc},
    {"_lazy_disable", vz_lazy_disable, METH_O,
     "_lazy_disable(ufunc): a lazy ufunc compiles no more loops (disable_compile)."},
    {"vectorize", (PyCFunction)(void (*)(void))vectorize, METH_VARARGS | METH_KEYWORDS,
     vectorize_doc},
    {"guvectorize", (PyCFunction)(void (*)(void))guvectorize, METH_VARARGS | METH_KEYWORDS,
     guvectorize_doc},
    {"set_num_threads", set_num_threads, METH_O,
     "set_num_threads(n): threads the parallel target uses for calls made "
     "from this thread (1 <= n <= get_pool_size())."},
    {"get_num_threads", get_num_threads, METH_NOARGS,
     "get_num_threads(): this thread's thread count for the parallel target."},
    {"get_pool_size", get_pool_size, METH_NOARGS,
     "get_pool_size(): threads in the pool, the caller included "
     "(NUMBAVEC_NUM_THREADS, else OMP_NUM_THREADS, else the usable cores)."},
    {NULL, NULL, 0, NULL},
};

int
nv_api_init(PyObject *module)
{
    return PyModule_AddFunctions(module, api_functions);
}
