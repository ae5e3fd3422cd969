/*
 * dufunc.c - lazy ufuncs: a real numpy.ufunc that compiles a loop for each
 * new combination of input types, inside NumPy's own dispatch.
 *
 * The ufunc is created with no loops and one *promoter* (NumPy 2's public
 * DType API, PyUFunc_AddPromoter) registered for every DType, (None, ...).
 * NumPy's dispatcher prefers an exactly matching loop and consults a
 * promoter only when none matches; ours then resolves the concrete types
 * (Python scalars are NumPy 2's weak abstract DTypes, resolved as
 * np.result_type would against the array arguments), compiles them,
 * registers the loop as an ArrayMethod (PyUFunc_AddLoopFromSpec) and returns
 * its DTypes, and NumPy retries with them and caches the result under the
 * original DTypes.  A later call with those types therefore never reaches
 * numbavec's code before the loop: it is a plain ufunc call.  Because it
 * all happens in NumPy's dispatch, __call__, reduce, accumulate, reduceat,
 * outer, at and __array_ufunc__ containers (dask, xarray: they call the
 * ufunc back on NumPy chunks) all compile what they need.
 *
 * The loops are also published in the legacy tables (functions, data,
 * types, ntypes), so ufunc.types and ufunc.ntypes list them; the get_loop
 * of each ArrayMethod finds its function there by type numbers, exactly as
 * NumPy's own wrapping of legacy loops does.  Replaced tables are kept
 * until the ufunc dies: a reader may be part way through one.
 *
 * What compiles a signature is a VzLazyBackend (vectorize.h): the Library
 * of vectorize.c for @vectorize; a gufunc supplies its own to reuse this.
 *
 * The state is the ufunc's owner (ufunc.c), out of reach of Python code.
 * One compilation runs at a time per ufunc.  A compilation runs Python
 * (the cache, attributes of globals), which may call the same ufunc again:
 * with other types, that compiles them first (the lock is re-entrant for
 * its thread); with the types being compiled, it is an error, not endless
 * recursion.  A child forked while another thread held the lock finds it
 * held by a thread that does not exist there, and starts a fresh one.
 */
#include "vectorize/vectorize.h"

#include <numpy/dtype_api.h>
#include <pthread.h>
#include <pythread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROMOTER_CAPSULE "numpy._ufunc_promoter"

/* ---- the state of one lazy ufunc ---- */

typedef struct Tables {
    struct Tables *prev; /* retired tables, freed with the state */
    PyUFuncGenericFunction *funcs;
    void **data;
    char *types;
} Tables;

/* A compilation under way (on the C stack of the thread holding the lock). */
typedef struct Compiling {
    const TsKind *kinds;
    struct Compiling *outer;
} Compiling;

typedef struct LazyState {
    PyObject_HEAD const VzLazyBackend *backend;
    PyObject *compiler; /* owned: the backend's object (a Library) */
    int nin, nout;
    int reorderable;         /* identity is not None */
    PyObject *identity;      /* owned: None or the identity value */
    PyThread_type_lock lock; /* one compilation at a time */
    unsigned long owner;     /* thread holding lock, or 0 */
    unsigned long lock_fork; /* fork_generation when lock was made */
    Compiling *compiling;    /* the owner's compilations, innermost first */
    Tables *tables;          /* current first, then retired ones */
    int frozen;              /* disable_compile(): no new loops */
    int eager;               /* its loops are its signatures', in order: NumPy's
                              * legacy type resolution picks one (the promoter
                              * changes nothing), as for a legacy ufunc */
} LazyState;

static int
state_traverse(PyObject *self, visitproc visit, void *arg)
{
    LazyState *st = (LazyState *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(st->compiler);
    Py_VISIT(st->identity);
    return 0;
}

static int
state_clear(PyObject *self)
{
    LazyState *st = (LazyState *)self;
    Py_CLEAR(st->compiler);
    Py_CLEAR(st->identity);
    return 0;
}

static void
state_dealloc(PyObject *self)
{
    LazyState *st = (LazyState *)self;
    PyObject_GC_UnTrack(self);
    state_clear(self);
    while (st->tables != NULL) {
        Tables *t = st->tables;
        st->tables = t->prev;
        PyMem_Free(t);
    }
    if (st->lock != NULL) {
        PyThread_free_lock(st->lock);
    }
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot state_slots[] = {
    {Py_tp_dealloc, state_dealloc},
    {Py_tp_traverse, state_traverse},
    {Py_tp_clear, state_clear},
    {Py_tp_doc, "What a lazy numbavec ufunc compiles new loops with (internal)."},
    {0, NULL},
};

static PyType_Spec state_spec = {
    "numbavec._core.LazyState",
    sizeof(LazyState),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    state_slots,
};

/* ---- the lock ---- */

/*
 * Counts the forks this process came out of as a child (pthread_atfork).
 * In a child no other thread exists, so a lock made before the fork may
 * be held for ever by a thread the child does not have -- including one
 * that had just taken it without the GIL and had not yet said so.  A
 * state whose lock is older than the last fork makes a new one.
 */
static volatile unsigned long fork_generation;

static void
count_fork(void)
{
    fork_generation++;
}

/* The child takes a new lock (the old one is left, perhaps held, for ever)
 * and forgets the compilations of the thread that held it, whose entries
 * were never added.  0/-1. */
static int
renew_after_fork(LazyState *st)
{
    if (st->lock_fork == fork_generation) {
        return 0;
    }
    PyThread_type_lock lock = PyThread_allocate_lock();
    if (lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    st->lock = lock;
    st->lock_fork = fork_generation;
    st->owner = 0;
    st->compiling = NULL;
    return 0;
}

/*
 * Taken without the GIL: a thread waiting for it while holding the GIL
 * would deadlock with the compiling thread, which needs the GIL back (the
 * cache and the compiler call Python, where the interpreter may switch
 * threads).  Re-entrant for its owner, so that a compilation reaching the
 * same ufunc again cannot deadlock itself.  *taken: the lock taken here,
 * or NULL (the caller held it already).  0/-1.
 */
static int
state_lock(LazyState *st, PyThread_type_lock *taken)
{
    unsigned long me = PyThread_get_thread_ident();
    *taken = NULL;
    if (renew_after_fork(st) < 0) {
        return -1;
    }
    if (st->owner == me) {
        return 0;
    }
    PyThread_type_lock lock = st->lock;
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    st->owner = me;
    *taken = lock;
    return 0;
}

/* Releases the lock state_lock took (the one it took, should the state
 * have made a new one since, after a fork). */
static void
state_unlock(LazyState *st, PyThread_type_lock taken)
{
    if (taken != NULL) {
        if (st->lock == taken) {
            st->owner = 0;
        }
        PyThread_release_lock(taken);
    }
}

/* The state behind a lazy ufunc (borrowed), or NULL with TypeError. */
static LazyState *
state_of(PyObject *ufunc)
{
    PyObject *owner = vz_ufunc_owner(ufunc);
    if (owner == NULL || Py_TYPE(owner) != (PyTypeObject *)nv_state.lazy_state_type) {
        PyErr_Format(PyExc_TypeError, "%R is not a lazy numbavec ufunc", ufunc);
        return NULL;
    }
    return (LazyState *)owner;
}

PyObject *
vz_lazy_compiler(PyObject *owner)
{
    if (owner == NULL || nv_state.lazy_state_type == NULL
        || Py_TYPE(owner) != (PyTypeObject *)nv_state.lazy_state_type) {
        return NULL;
    }
    return ((LazyState *)owner)->compiler;
}

/* ---- DTypes and kinds ---- */

static const int builtin_typenums[] = {
    NPY_BOOL,      NPY_BYTE,  NPY_UBYTE,  NPY_SHORT,  NPY_USHORT,
    NPY_INT,       NPY_UINT,  NPY_LONG,   NPY_ULONG,  NPY_LONGLONG,
    NPY_ULONGLONG, NPY_FLOAT, NPY_DOUBLE, NPY_CFLOAT, NPY_CDOUBLE,
};
#define N_BUILTIN (sizeof(builtin_typenums) / sizeof(builtin_typenums[0]))

/* The DType class of each builtin type number (borrowed: NumPy keeps them). */
static PyArray_DTypeMeta *builtin_dtypes[N_BUILTIN];
static PyArray_DTypeMeta *kind_dtypes[TS_NSCALAR];

static int
init_dtypes(void)
{
    for (size_t i = 0; i < N_BUILTIN; i++) {
        PyArray_Descr *d = PyArray_DescrFromType(builtin_typenums[i]);
        if (d == NULL) {
            return -1;
        }
        builtin_dtypes[i] = (PyArray_DTypeMeta *)Py_TYPE(d);
        Py_DECREF(d);
    }
    for (int k = 0; k < TS_NSCALAR; k++) {
        PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum((TsKind)k));
        if (d == NULL) {
            return -1;
        }
        kind_dtypes[k] = (PyArray_DTypeMeta *)Py_TYPE(d);
        Py_DECREF(d);
    }
    return 0;
}

/* The kind of a concrete builtin DType: 0, or -1 (no exception). */
static int
dtype_kind(PyArray_DTypeMeta *dt, TsKind *kind)
{
    for (size_t i = 0; i < N_BUILTIN; i++) {
        if (builtin_dtypes[i] == dt) {
            return ts_kind_from_typenum(builtin_typenums[i], kind);
        }
    }
    return -1;
}

static int
is_python_scalar(PyArray_DTypeMeta *dt)
{
    return dt == &PyArray_PyLongDType || dt == &PyArray_PyFloatDType
           || dt == &PyArray_PyComplexDType;
}

/* Integers (and bool), floats, complex: what promotion may not leave. */
static int
same_family(TsKind a, TsKind b)
{
    return ts_is_float(a) == ts_is_float(b) && ts_is_complex(a) == ts_is_complex(b);
}

/* A Python scalar alone is typed as np.asarray types it. */
static TsKind
python_scalar_default(PyArray_DTypeMeta *dt)
{
    return dt == &PyArray_PyLongDType    ? TS_INT64
           : dt == &PyArray_PyFloatDType ? TS_FLOAT64
                                         : TS_COMPLEX128;
}

static int
unsupported_dtype(PyObject *ufunc, PyArray_DTypeMeta *dt)
{
    PyErr_Format(PyExc_TypeError,
                 "ufunc %R: numbavec cannot compile a loop for %R (supported: bool, "
                 "integers, float32/64, complex64/128)",
                 ufunc, (PyObject *)dt);
    return -1;
}

/*
 * The input kinds to compile for.  Fixed signature DTypes win; then each
 * concrete input's own kind; a Python scalar (weak, NEP 50) takes the
 * common DType of itself and the concrete inputs, as np.result_type would;
 * a missing input (the first operand of a reduction) takes the common
 * DType of the others.  When only outputs are fixed (dtype=...), the inputs
 * are computed in that type, as NumPy's own ufuncs do.  With own_kind (a
 * gufunc's backend), the inputs keep their own types whatever the outputs'
 * (dtype= or out= types only those, as in Numba), and a Python scalar is
 * promoted only within its family (integers, floats, complex): 3 among
 * float arrays stays int64.  0/-1.
 */
static int
resolve_inputs(PyObject *ufunc, int nin, int nargs, PyArray_DTypeMeta *const op[],
               PyArray_DTypeMeta *const signature[], int own_kind, TsKind *kinds)
{
    PyArray_DTypeMeta *concrete[VZ_MAXOPERANDS], *common = NULL, *fixed_out = NULL;
    int nconcrete = 0, nfixed_in = 0, rc = -1;
    for (int i = 0; i < nin; i++) {
        nfixed_in += signature[i] != NULL;
        PyArray_DTypeMeta *dt = signature[i] ? signature[i] : op[i];
        if (dt != NULL && !is_python_scalar(dt)) {
            concrete[nconcrete++] = dt;
        }
    }
    for (int i = nin; i < nargs; i++) {
        fixed_out = fixed_out ? fixed_out : signature[i];
    }
    if (nconcrete > 0 && (common = PyArray_PromoteDTypeSequence(nconcrete, concrete)) == NULL) {
        return -1;
    }
    for (int i = 0; i < nin; i++) {
        PyArray_DTypeMeta *dt = signature[i] ? signature[i] : op[i], *own = NULL;
        if (nfixed_in == 0 && fixed_out != NULL && !own_kind) {
            dt = fixed_out;
        } else if (dt == NULL) {
            if (common == NULL) {
                PyErr_Format(PyExc_TypeError, "ufunc %R: no input type to compile for", ufunc);
                goto done;
            }
            dt = common;
        } else if (is_python_scalar(dt) && common != NULL) {
            TsKind alone = python_scalar_default(dt);
            if ((dt = own = PyArray_CommonDType(common, dt)) == NULL) {
                goto done;
            }
            if (own_kind && dtype_kind(dt, &kinds[i]) == 0 && !same_family(kinds[i], alone)) {
                Py_DECREF(own); /* 3 with float arrays stays int64: an index, a count */
                kinds[i] = alone;
                continue;
            }
        } else if (is_python_scalar(dt)) {
            kinds[i] = python_scalar_default(dt);
            continue;
        }
        int bad = dtype_kind(dt, &kinds[i]) < 0;
        if (bad) {
            unsupported_dtype(ufunc, dt);
        }
        Py_XDECREF(own);
        if (bad) {
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(common);
    return rc;
}

/* The output kinds the call gives (dtype= fixes them, an out= array has
 * its own): the backend may compile for them (a gufunc's loop then writes
 * into out= as it is); TS_INFER where the call gives none. */
static void
resolve_outputs(int nin, int nargs, PyArray_DTypeMeta *const op[],
                PyArray_DTypeMeta *const signature[], TsKind *kinds)
{
    for (int k = nin; k < nargs; k++) {
        PyArray_DTypeMeta *dt = signature[k] ? signature[k] : op[k];
        if (dt == NULL || dtype_kind(dt, &kinds[k]) < 0) {
            kinds[k] = TS_INFER;
        }
    }
}

/* ---- the loop NumPy calls ---- */

typedef struct LoopData {
    NpyAuxData base;
    PyUFuncGenericFunction fn;
    void *data;
} LoopData;

/* libc's allocator: NumPy may free loop data without the GIL. */
static void
loopdata_free(NpyAuxData *aux)
{
    free(aux);
}

static NpyAuxData *
loopdata_clone(NpyAuxData *aux)
{
    LoopData *copy = malloc(sizeof(LoopData));
    if (copy != NULL) {
        memcpy(copy, aux, sizeof(LoopData));
    }
    return (NpyAuxData *)copy;
}

static int
strided_loop(PyArrayMethod_Context *context, char *const data[], npy_intp const dims[],
             npy_intp const strides[], NpyAuxData *aux)
{
    LoopData *d = (LoopData *)aux;
    d->fn((char **)data, (npy_intp *)dims, (npy_intp *)strides, d->data);
    /* a kernel's raise (on this thread, or passed here by the pool), or
     * machine code that could not be made (its exception set already) */
    const char *site = cc_take_raised();
    if (site != NULL) {
        PyGILState_STATE gil = PyGILState_Ensure();
        if (site != cc_site_failed) {
            cc_raise_site(site);
        }
        PyGILState_Release(gil);
        return -1;
    }
    return 0;
}

/* pandas' DataFrame.__array_ufunc__ and DataFrame.apply call a ufunc on
 * each block's 2-d values (columns by rows) from Block.apply, as if it
 * were elementwise: a gufunc's core dimensions then run over the block's
 * rows, and pandas rebuilds a frame of the wrong shape.  Nothing else
 * sees the call come from there: the module of the calling frame. */
int
vz_called_by_pandas_blocks(PyObject *ufunc)
{
    static const char internals[] = "pandas.core.internals.";
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    if (uf == NULL || !uf->core_enabled || uf->core_num_dim_ix == 0) {
        return 0;
    }
    PyObject *globals = PyEval_GetGlobals(); /* borrowed; NULL: no frame */
    PyObject *name = globals != NULL ? PyDict_GetItemString(globals, "__name__") : NULL;
    const char *text =
        name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    PyErr_Clear();
    return text != NULL && strncmp(text, internals, sizeof(internals) - 1) == 0;
}

int
vz_pandas_refused_loop(PyArrayMethod_Context *context, char *const *NV_UNUSED(data),
                       const npy_intp *NV_UNUSED(dims), const npy_intp *NV_UNUSED(strides),
                       NpyAuxData *NV_UNUSED(aux))
{
    PyUFuncObject *uf = (PyUFuncObject *)context->caller;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyErr_Format(PyExc_TypeError,
                 "gufunc '%s' (%s) was called by pandas on a DataFrame's blocks, as if it were "
                 "elementwise: its core dimensions would run over the wrong axis. Call it on the "
                 "array instead: pd.Series(f(df.to_numpy()), index=df.index) for a (n)->() "
                 "layout, or df.apply(lambda row: f(row.to_numpy()), axis=1)",
                 uf->name, uf->core_signature);
    PyGILState_Release(gil);
    return -1;
}

/*
 * Finds the loop in the ufunc's legacy tables by the operands' type
 * numbers, as NumPy's wrapping of legacy loops does.  The descriptors are
 * canonical (the default resolve_descriptors made them so).
 */
static int
get_loop(PyArrayMethod_Context *context, int aligned, int move_references, const npy_intp *strides,
         PyArrayMethod_StridedLoop **out_loop, NpyAuxData **out_aux, NPY_ARRAYMETHOD_FLAGS *flags)
{
    PyUFuncObject *uf = (PyUFuncObject *)context->caller;
    if (uf == NULL || !PyObject_TypeCheck((PyObject *)uf, &PyUFunc_Type)) {
        PyErr_SetString(PyExc_RuntimeError, "a numbavec loop needs its ufunc as caller");
        return -1;
    }
    if (vz_called_by_pandas_blocks((PyObject *)uf)) {
        *out_loop = vz_pandas_refused_loop;
        *out_aux = NULL;
        *flags = 0;
        return 0;
    }
    int nargs = uf->nin + uf->nout;
    for (int i = 0; i < uf->ntypes; i++) {
        const char *t = uf->types + (size_t)i * (size_t)nargs;
        int k = 0;
        while (k < nargs && t[k] == context->descriptors[k]->type_num) {
            k++;
        }
        if (k < nargs) {
            continue;
        }
        LoopData *d = malloc(sizeof(LoopData));
        if (d == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(&d->base, 0, sizeof(d->base));
        d->base.free = loopdata_free;
        d->base.clone = loopdata_clone;
        d->fn = uf->functions[i];
        d->data = uf->data[i];
        *out_loop = strided_loop;
        *out_aux = &d->base;
        *flags = 0; /* no Python in the loop; NumPy checks the FP flags */
        return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "ufunc '%s': its numbavec loop is missing", uf->name);
    return -1;
}

/* The ufunc's identity as the reduction's first value (reorderable ones). */
static int
reduction_initial(PyArrayMethod_Context *context, npy_bool reduction_is_empty, void *initial)
{
    LazyState *st = state_of(context->caller);
    if (st == NULL) {
        return -1;
    }
    PyObject *identity = st->identity;
    return identity == Py_None                                            ? 0
           : PyArray_Pack(context->descriptors[0], initial, identity) < 0 ? -1
                                                                          : 1;
}

/* ---- registering a compiled signature ---- */

/* Registers the loop of the operand kinds `kinds` with NumPy.  0/-1. */
static int
add_array_method(PyObject *ufunc, LazyState *st, const TsKind *kinds)
{
    PyArray_DTypeMeta *dtypes[VZ_MAXOPERANDS];
    char name[256];
    int nargs = st->nin + st->nout;
    for (int k = 0; k < nargs; k++) {
        dtypes[k] = kind_dtypes[kinds[k]];
    }
    PyType_Slot slots[] = {
        {NPY_METH_get_loop, (void *)get_loop},
        {st->reorderable && st->nin == 2 && st->nout == 1 ? NPY_METH_get_reduction_initial : 0,
         (void *)reduction_initial},
        {0, NULL},
    };
    snprintf(name, sizeof(name), "numbavec_%s", ((PyUFuncObject *)ufunc)->name);
    PyArrayMethod_Spec spec = {
        .name = name,
        .nin = st->nin,
        .nout = st->nout,
        .casting = NPY_NO_CASTING,
        .flags = st->reorderable ? NPY_METH_IS_REORDERABLE : 0,
        .dtypes = dtypes,
        .slots = slots,
    };
    return PyUFunc_AddLoopFromSpec(ufunc, &spec);
}

/* New legacy tables with every compiled entry; the old ones are retired. */
static int
publish_tables(PyObject *ufunc, LazyState *st)
{
    Py_ssize_t n = st->backend->size(st->compiler);
    int nargs = st->nin + st->nout;
    size_t nf = (size_t)n * sizeof(PyUFuncGenericFunction), nd = (size_t)n * sizeof(void *);
    Tables *t = PyMem_Malloc(sizeof(Tables) + nf + nd + (size_t)n * (size_t)nargs);
    if (t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->funcs = (PyUFuncGenericFunction *)(t + 1);
    t->data = (void **)((char *)t->funcs + nf);
    t->types = (char *)t->data + nd;
    for (Py_ssize_t i = 0; i < n; i++) {
        TsKind kinds[VZ_MAXOPERANDS];
        st->backend->entry(st->compiler, i, &t->funcs[i], &t->data[i], kinds);
        for (int k = 0; k < nargs; k++) {
            t->types[i * nargs + k] = (char)ts_kind_typenum(kinds[k]);
        }
    }
    t->prev = st->tables;
    st->tables = t;
    /* No Python runs between these stores: readers hold the GIL. */
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    uf->functions = t->funcs;
    uf->data = t->data;
    uf->types = t->types;
    uf->ntypes = (int)n;
    return 0;
}

/* Whether the lock's owner is compiling kinds already (0/1). */
static int
compiling_now(const LazyState *st, const TsKind *kinds)
{
    for (const Compiling *c = st->compiling; c != NULL; c = c->outer) {
        if (memcmp(c->kinds, kinds, (size_t)st->nin * sizeof(TsKind)) == 0) {
            return 1;
        }
    }
    return 0;
}

static void
recursion_error(PyObject *ufunc, const LazyState *st, const TsKind *kinds)
{
    char buf[TS_STRSIZE] = "";
    size_t at = 0;
    for (int k = 0; k < st->nin && at < sizeof(buf); k++) {
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", k ? ", " : "",
                               ts_kind_name(kinds[k]));
    }
    PyErr_Format(PyExc_RecursionError,
                 "ufunc %R was called with the types (%s) while compiling its loop for them", ufunc,
                 buf);
}

/* Compiles kinds (the lock held), then publishes and registers the loop. */
static Py_ssize_t
compile_loop(PyObject *ufunc, LazyState *st, const TsKind *kinds)
{
    if (compiling_now(st, kinds)) {
        recursion_error(ufunc, st, kinds);
        return -1;
    }
    Compiling frame = {kinds, st->compiling};
    st->compiling = &frame;
    Py_ssize_t i = st->backend->compile(st->compiler, kinds, st->nin);
    st->compiling = frame.outer;
    return i;
}

/* Makes entry i, new, known to NumPy.  0/-1. */
static int
register_loop(PyObject *ufunc, LazyState *st, Py_ssize_t i)
{
    TsKind all[VZ_MAXOPERANDS];
    PyUFuncGenericFunction fn;
    void *data;
    st->backend->entry(st->compiler, i, &fn, &data, all);
    /* Tables first: once NumPy knows the method, get_loop may run. */
    if (publish_tables(ufunc, st) < 0) {
        return -1;
    }
    if (st->backend->add_method != NULL) {
        return st->backend->add_method(ufunc, st->compiler, i, all);
    }
    return add_array_method(ufunc, st, all);
}

/* The entry for kinds, compiled and registered now if it is new. */
static Py_ssize_t
ensure_loop(PyObject *ufunc, LazyState *st, const TsKind *kinds)
{
    PyThread_type_lock taken;
    Py_ssize_t i = st->backend->find(st->compiler, kinds, st->nin);
    if (i >= 0) {
        return i;
    }
    if (state_lock(st, &taken) < 0) {
        return -1;
    }
    /* Another thread may have compiled it while this one waited.  A
     * compilation may also turn out to give an entry that exists already
     * (a dynamic gufunc's inferred outputs): that one is registered. */
    i = st->backend->find(st->compiler, kinds, st->nin);
    Py_ssize_t before = st->backend->size(st->compiler);
    if (i < 0 && (i = compile_loop(ufunc, st, kinds)) >= before
        && register_loop(ufunc, st, i) < 0) {
        i = -1;
    }
    state_unlock(st, taken);
    return i;
}

/*
 * The entry for kinds where the call fixes some outputs' kinds (out=,
 * dtype=), after the entry with those inferred: NumPy matches a call that
 * fixes no output to any loop of its inputs, and only when two match does
 * it ask the promoter, which then picks the inferred one.  A kernel whose
 * outputs cannot be inferred (a TypingError) has the fixed entry alone.
 */
static Py_ssize_t
ensure_loops(PyObject *ufunc, LazyState *st, const TsKind *kinds)
{
    TsKind inferred[VZ_MAXOPERANDS];
    int nargs = st->nin + st->nout, fixed = 0;
    for (int k = 0; k < nargs; k++) {
        inferred[k] = k < st->nin ? kinds[k] : TS_INFER;
        fixed |= k >= st->nin && kinds[k] != TS_INFER;
    }
    if (fixed && !st->backend->kernel_outputs && ensure_loop(ufunc, st, inferred) < 0) {
        if (!PyErr_ExceptionMatches(nv_state.typing_error)) {
            return -1;
        }
        PyErr_Clear();
    }
    return ensure_loop(ufunc, st, kinds);
}

/*
 * The promoter: NumPy calls it for DTypes no loop matches.  It sets
 * new_op_dtypes (new references) to the DTypes of the loop compiled for
 * them, which NumPy then looks up and caches under op_dtypes.
 */
static int
promoter(PyObject *ufunc, PyArray_DTypeMeta *const op_dtypes[],
         PyArray_DTypeMeta *const signature[], PyArray_DTypeMeta *new_op_dtypes[])
{
    TsKind kinds[VZ_MAXOPERANDS], all[VZ_MAXOPERANDS];
    LazyState *st = state_of(ufunc);
    if (st == NULL) {
        return -1;
    }
    int nargs = st->nin + st->nout, changed = 0;
    PyUFuncGenericFunction fn;
    void *data;
    /* an eager ufunc's call (not a reduction, whose first operand NumPy
     * leaves unset) goes to NumPy's legacy resolution, which takes the
     * first loop the inputs cast to safely, as for a legacy ufunc */
    int unchanged = st->eager && op_dtypes[0] != NULL;
    if (!unchanged
        && resolve_inputs(ufunc, st->nin, nargs, op_dtypes, signature,
                          st->backend->own_scalar_kinds, kinds)
               < 0) {
        return -1;
    }
    if (!unchanged) {
        resolve_outputs(st->nin, nargs, op_dtypes, signature, kinds);
        for (int k = st->nin; st->backend->kernel_outputs && k < nargs; k++) {
            kinds[k] = TS_INFER; /* the kernel's result decides, whatever out= is */
        }
    }
    if (unchanged || (st->frozen && st->backend->find(st->compiler, kinds, st->nin) < 0)) {
        /* disable_compile(): a promoter that changes nothing makes NumPy
         * raise its own "no loop matching" error, as for any ufunc */
        for (int k = 0; k < nargs; k++) {
            new_op_dtypes[k] = (PyArray_DTypeMeta *)Py_XNewRef((PyObject *)op_dtypes[k]);
        }
        return 0;
    }
    Py_ssize_t i = ensure_loops(ufunc, st, kinds);
    if (i < 0) {
        return -1;
    }
    st->backend->entry(st->compiler, i, &fn, &data, all);
    for (int k = 0; k < nargs; k++) {
        PyArray_DTypeMeta *dt = k >= st->nin && signature[k] ? signature[k] : kind_dtypes[all[k]];
        new_op_dtypes[k] = (PyArray_DTypeMeta *)Py_NewRef((PyObject *)dt);
        changed |= dt != op_dtypes[k];
    }
    /*
     * NumPy gives up if a promoter changes nothing (all types already
     * concrete, out= given, and this loop is new): unset outputs match any
     * loop, so leaving them out makes it look the new loop up.
     */
    for (int k = st->nin; !changed && k < nargs; k++) {
        Py_CLEAR(new_op_dtypes[k]);
    }
    return 0;
}

int
vz_lazy_prepare(PyObject *ufunc, PyArray_DTypeMeta *const dtypes[])
{
    TsKind kinds[VZ_MAXOPERANDS];
    PyArray_DTypeMeta *signature[VZ_MAXOPERANDS];
    LazyState *st = state_of(ufunc);
    if (st == NULL) {
        return -1;
    }
    int nargs = st->nin + st->nout;
    if (st->frozen || st->eager) {
        return 0; /* NumPy's dispatch decides, as for any call */
    }
    for (int k = 0; k < nargs; k++) {
        signature[k] = k < st->nin ? NULL : dtypes[k];
    }
    if (resolve_inputs(ufunc, st->nin, nargs, dtypes, signature, st->backend->own_scalar_kinds,
                       kinds)
        < 0) {
        return -1;
    }
    resolve_outputs(st->nin, nargs, dtypes, signature, kinds);
    return ensure_loops(ufunc, st, kinds) < 0 ? -1 : 0;
}

/* ---- creation ---- */

PyObject *
vz_make_lazy_ufunc(const char *name, const char *doc, int nin, int nout, PyObject *identity,
                   const VzLazyBackend *backend, PyObject *compiler, const char *core_signature)
{
    PyObject *ufunc = NULL, *capsule = NULL, *wildcard = NULL;
    LazyState *st = NULL;
    if (kind_dtypes[0] == NULL && init_dtypes() < 0) {
        return NULL;
    }
    allocfunc alloc =
        (allocfunc)PyType_GetSlot((PyTypeObject *)nv_state.lazy_state_type, Py_tp_alloc);
    if ((st = (LazyState *)alloc((PyTypeObject *)nv_state.lazy_state_type, 0)) == NULL) {
        return NULL;
    }
    st->backend = backend;
    st->compiler = Py_NewRef(compiler);
    st->nin = nin;
    st->nout = nout;
    st->identity = Py_NewRef(identity);
    st->lock = PyThread_allocate_lock();
    st->lock_fork = fork_generation;
    if (st->lock == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    VzUfuncSpec spec = {.name = name,
                        .doc = doc,
                        .nin = nin,
                        .nout = nout,
                        .identity = identity,
                        .owner = (PyObject *)st,
                        .signature = core_signature};
    ufunc = vz_make_ufunc(&spec);
    if (ufunc == NULL) {
        goto error;
    }
    st->reorderable = ((PyUFuncObject *)ufunc)->identity != PyUFunc_None;
    if (((PyUFuncObject *)ufunc)->identity != PyUFunc_IdentityValue) {
        /* 0, 1, -1: the value reduction_initial packs. */
        PyObject *value = PyObject_GetAttrString(ufunc, "identity");
        if (value == NULL) {
            goto error;
        }
        Py_DECREF(st->identity);
        st->identity = value;
    }
    capsule = PyCapsule_New((void *)promoter, PROMOTER_CAPSULE, NULL);
    wildcard = PyTuple_New(nin + nout);
    if (capsule == NULL || wildcard == NULL) {
        goto error;
    }
    for (int k = 0; k < nin + nout; k++) {
        PyTuple_SetItem(wildcard, k, Py_NewRef(Py_None));
    }
    if (PyUFunc_AddPromoter(ufunc, wildcard, capsule) < 0) {
        goto error;
    }
    Py_DECREF(capsule);
    Py_DECREF(wildcard);
    Py_DECREF(st);
    return ufunc;
error:
    Py_XDECREF(capsule);
    Py_XDECREF(wildcard);
    Py_XDECREF(ufunc);
    Py_XDECREF(st);
    return NULL;
}

/* Whether entry i has the n operand kinds of an earlier entry. */
static int
same_as_earlier(const VzLazyBackend *backend, PyObject *compiler, Py_ssize_t i, int n)
{
    TsKind mine[VZ_MAXOPERANDS], theirs[VZ_MAXOPERANDS];
    PyUFuncGenericFunction fn;
    void *data;
    backend->entry(compiler, i, &fn, &data, mine);
    for (Py_ssize_t j = 0; j < i; j++) {
        backend->entry(compiler, j, &fn, &data, theirs);
        if (memcmp(mine, theirs, (size_t)n * sizeof(TsKind)) == 0) {
            return 1;
        }
    }
    return 0;
}

PyObject *
vz_make_frozen_ufunc(const char *name, const char *doc, int nin, PyObject *identity,
                     const VzLazyBackend *backend, PyObject *compiler)
{
    PyObject *ufunc = vz_make_lazy_ufunc(name, doc, nin, 1, identity, backend, compiler, NULL);
    LazyState *st = ufunc ? state_of(ufunc) : NULL;
    for (Py_ssize_t i = 0; st != NULL && i < backend->size(compiler); i++) {
        /* a signature the same as an earlier one ('(f8, f8)' and
         * 'f8(f8, f8)'): the first serves both, as NumPy's legacy search
         * takes the first loop, and NumPy refuses a second method */
        if (!same_as_earlier(backend, compiler, i, nin + 1) && register_loop(ufunc, st, i) < 0) {
            st = NULL;
        }
    }
    if (st == NULL) {
        Py_XDECREF(ufunc);
        return NULL;
    }
    st->frozen = st->eager = 1;
    return ufunc;
}

/* The kinds of every operand add(sig) names (TS_INFER for outputs it
 * leaves to the kernel), checked against the ufunc's arity.  0, or -1 with
 * TypeError. */
static int
added_kinds(PyObject *ufunc, const LazyState *st, const TsSignature *sig, TsKind *all)
{
    int nargs = st->nin + st->nout;
    if (st->backend->kernel_outputs) {
        if (sig->nargs != st->nin || sig->ret.kind == TS_VOID) {
            PyErr_Format(PyExc_TypeError,
                         sig->ret.kind == TS_VOID
                             ? "ufunc %R returns a value: its signatures are not void"
                             : "ufunc %R takes %d arguments, not %d",
                         ufunc, st->nin, sig->nargs);
            return -1;
        }
    } else if ((sig->nargs != st->nin && sig->nargs != nargs)
               || (sig->ret.kind != TS_VOID && sig->ret.kind != TS_INFER)) {
        PyErr_Format(PyExc_TypeError,
                     "gufunc %R takes %d arguments, not %d: a void signature of its inputs, "
                     "or of its inputs and outputs",
                     ufunc, st->nin, sig->nargs);
        return -1;
    }
    for (int k = 0; k < nargs; k++) {
        all[k] = k < sig->nargs ? sig->args[k].kind : TS_INFER;
    }
    if (st->backend->kernel_outputs) {
        all[st->nin] = sig->ret.kind; /* TS_INFER when the signature names none */
    }
    return 0;
}

/* TypeError unless the entry for kinds' inputs, compiled already, has the
 * outputs kinds names (TS_INFER: any).  0/-1. */
static int
same_outputs(PyObject *ufunc, const LazyState *st, Py_ssize_t i, const TsKind *kinds)
{
    TsKind has[VZ_MAXOPERANDS];
    PyUFuncGenericFunction fn;
    void *data;
    st->backend->entry(st->compiler, i, &fn, &data, has);
    for (int k = st->nin; k < st->nin + st->nout; k++) {
        if (kinds[k] != TS_INFER && kinds[k] != has[k]) {
            PyErr_Format(PyExc_TypeError,
                         "ufunc %R has a loop for these input types already, whose output %d is "
                         "%s, not %s",
                         ufunc, k - st->nin, ts_kind_name(has[k]), ts_kind_name(kinds[k]));
            return -1;
        }
    }
    return 0;
}

PyObject *
vz_lazy_add(PyObject *ufunc, const TsSignature *sig)
{
    LazyState *st = state_of(ufunc);
    TsKind all[VZ_MAXOPERANDS];
    if (st == NULL || added_kinds(ufunc, st, sig, all) < 0) {
        return NULL;
    }
    if (st->frozen) {
        PyErr_Format(PyExc_RuntimeError, "compilation disabled for %R (disable_compile())", ufunc);
        return NULL;
    }
    Py_ssize_t i = ensure_loop(ufunc, st, all);
    return i < 0 || same_outputs(ufunc, st, i, all) < 0 ? NULL : Py_NewRef(Py_None);
}

PyObject *
vz_lazy_disable(PyObject *module, PyObject *ufunc)
{
    LazyState *st = state_of(ufunc);
    if (st == NULL) {
        return NULL;
    }
    st->frozen = 1;
    return Py_NewRef(Py_None);
}

PyObject *
vz_lazy_disabled(PyObject *module, PyObject *ufunc)
{
    LazyState *st = state_of(ufunc);
    return st != NULL ? PyBool_FromLong(st->frozen) : NULL;
}

int
vz_init_dufunc(PyObject *module)
{
    if (pthread_atfork(NULL, NULL, count_fork) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "numbavec: pthread_atfork failed");
        return -1;
    }
    nv_state.lazy_state_type = PyType_FromSpec(&state_spec);
    return nv_state.lazy_state_type != NULL ? 0 : -1;
}
