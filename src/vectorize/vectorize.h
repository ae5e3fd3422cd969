/*
 * vectorize.h - the ufunc factory.
 *
 *   loops.c      emits the inner-loop wrapper around a kernel: contiguous
 *                fast paths (vectorizable), scalar-broadcast paths (step 0)
 *                and the general strided path
 *   ufunc.c      creates real numpy.ufunc objects that own their loops
 *   testhooks.c  _core._ufunc_from_ir & co.: loops from hand-written IR (tests)
 *   vectorize.c  _core.vectorize(): compile each signature, build the ufunc
 */
#ifndef NV_VECTORIZE_H
#define NV_VECTORIZE_H

#include "common.h"
#include "compiler/compiler.h"
#include "host/host.h"

/* ---- loops.c ---- */

/*
 * Emits into mod the NumPy inner loop
 *     void name(char **args, npy_intp *dims, npy_intp *steps, void *data)
 * which calls kernel (value types of sig, returning sig->ret) per element.
 * The fast paths are taken only when every step, the output's included,
 * allows them.  Returns the function, or NULL with an exception.
 */
LLVMValueRef vz_emit_loop(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig,
                          const char *name);

/* ---- ufunc.c ---- */

/*
 * What a ufunc is made of.  funcs, data and types (NumPy type numbers,
 * ntypes * (nin + nout) of them, as chars), name and doc are copied into
 * one block the ufunc owns (its `ptr`).  identity: None -> PyUFunc_None,
 * "reorderable", the ints 0, 1, -1, or any other value
 * (PyUFunc_IdentityValue); another str: ValueError.  owner (borrowed, may
 * be NULL): what the loops run; the ufunc keeps a reference to it that no
 * Python code can reach.  signature: a gufunc's core signature, or NULL.
 *
 * methods: 0, NumPy wraps the legacy loops itself; 1, the ufunc is made
 * with none visible (ntypes 0: NumPy >= 2.4 would otherwise register a
 * wrapper per loop at once, and no ArrayMethod could then be added for the
 * same DTypes), the caller registers an ArrayMethod per entry and then
 * calls vz_publish_types, after which ufunc.types lists the entries and
 * NumPy's legacy type resolution finds them (a resolved entry dispatches
 * to the registered method).
 */
typedef struct VzUfuncSpec {
    const char *name, *doc;
    int nin, nout, ntypes;
    PyUFuncGenericFunction *funcs;
    void **data;
    const char *types;
    PyObject *identity;
    PyObject *owner;
    const char *signature;
    int methods;
} VzUfuncSpec;

/* A new reference, or NULL with an exception. */
PyObject *vz_make_ufunc(const VzUfuncSpec *spec);
/* Makes the first ntypes entries of the ufunc's tables visible (methods=1). */
void vz_publish_types(PyObject *ufunc, int ntypes);
/* 1 when ufunc is a gufunc with core dimensions that pandas calls on each
 * block of a DataFrame (as it calls every ufunc, elementwise), else 0; GIL
 * held, in get_loop.  Such a call then gets vz_pandas_refused_loop, which
 * raises a TypeError saying what to write instead (NumPy 2.4 turns an
 * error from a gufunc's get_loop into a SystemError; a loop's is right). */
int vz_called_by_pandas_blocks(PyObject *ufunc);
int vz_pandas_refused_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dims,
                           const npy_intp *strides, NpyAuxData *aux);
/* The owner given to vz_make_ufunc (borrowed), or NULL (no exception) when
 * ufunc is not a ufunc or has none. */
PyObject *vz_ufunc_owner(PyObject *ufunc);
/* Checks, at import, that the PyUFuncObject fields numbavec uses are where
 * it was built to find them.  0, or -1 with ImportError. */
int vz_check_ufunc_layout(void);

/* ---- dufunc.c ---- */

#define VZ_MAXOPERANDS (TS_MAXARGS + 8)

/*
 * What a lazy ufunc compiles with.  `compiler` is the backend's object (the
 * Library of @vectorize or of @guvectorize), which then reuses the whole of
 * dufunc.c: the promoter, the lock, registration.  kinds are those of all
 * nin + nout operands: an output's is the type the call gave it (out=,
 * dtype=) or TS_INFER; a backend whose kernel decides its outputs
 * (vectorize) ignores them.  All run with the GIL held.
 *   find        the entry compiled for kinds, or -1 (no exception)
 *   compile     compiles kinds and appends it: its index, or -1 with an exception
 *   entry       entry i's loop and data, and the kinds of all its operands
 *   size        the number of entries
 *   add_method  registers entry i (operand kinds `kinds`) with NumPy, its
 *               legacy tables published already; NULL: an ArrayMethod that
 *               calls the legacy loop.  0/-1.
 *   kernel_outputs  1: the kernel's result decides its output's type
 *               (vectorize), so a call's out= or dtype= does not: compile
 *               sees TS_INFER there, except from add(), whose signature's
 *               return type is the loop's (Numba's DUFunc.add); 0: the
 *               outputs' kinds come from the call or the void signature
 */
typedef struct VzLazyBackend {
    Py_ssize_t (*find)(PyObject *compiler, const TsKind *kinds, int nin);
    Py_ssize_t (*compile)(PyObject *compiler, const TsKind *kinds, int nin);
    void (*entry)(PyObject *compiler, Py_ssize_t i, PyUFuncGenericFunction *fn, void **data,
                  TsKind *kinds);
    Py_ssize_t (*size)(PyObject *compiler);
    int (*add_method)(PyObject *ufunc, PyObject *compiler, Py_ssize_t i, const TsKind *kinds);
    int kernel_outputs;
    int own_scalar_kinds; /* a Python scalar input is promoted within its family only */
} VzLazyBackend;

/*
 * A real numpy.ufunc with no loops that compiles one, through backend, for
 * each new combination of input types it is called with (see dufunc.c).
 * name, doc, identity: as vz_make_ufunc.  compiler: borrowed (the ufunc's
 * owner, its lazy state, keeps a reference).  New reference or NULL.
 */
PyObject *vz_make_lazy_ufunc(const char *name, const char *doc, int nin, int nout,
                             PyObject *identity, const VzLazyBackend *backend, PyObject *compiler,
                             const char *core_signature);
/* Compiles now, if it is new, the loop a call of lazy ufunc with these
 * operand DTypes needs (all inputs concrete; an output NULL where the call
 * fixes none), before NumPy's dispatch sees the call: the promoter cannot
 * make NumPy look up a loop whose DTypes are all the call's already,
 * without the cleared outputs that key NumPy's cache by the inputs alone.
 * 0/-1. */
int vz_lazy_prepare(PyObject *ufunc, PyArray_DTypeMeta *const dtypes[]);
/* An eager ufunc with ArrayMethod loops, each of compiler's entries in
 * order, that compiles nothing more: what a kernel that may raise needs
 * (NumPy's wrapping of a legacy loop never asks whether it raised). */
PyObject *vz_make_frozen_ufunc(const char *name, const char *doc, int nin, PyObject *identity,
                               const VzLazyBackend *backend, PyObject *compiler);
/* The backend's object behind a lazy ufunc's owner (borrowed), or NULL
 * (no exception) when owner is not a lazy state. */
PyObject *vz_lazy_compiler(PyObject *owner);
/* Compiles and registers sig now (ufunc.add(sig)): its inputs, and the
 * output types it names (a return type where the kernel decides them, a
 * void signature's outputs for a gufunc).  A signature of another arity,
 * or naming other outputs than a loop of its inputs has, is a TypeError.
 * None or NULL. */
PyObject *vz_lazy_add(PyObject *ufunc, const TsSignature *sig);
/* A lazy ufunc compiles nothing more (disable_compile()): None or NULL. */
PyObject *vz_lazy_disable(PyObject *module, PyObject *ufunc);
/* Whether disable_compile() was called (a bool), or NULL with TypeError
 * for an object that is not a lazy ufunc. */
PyObject *vz_lazy_disabled(PyObject *module, PyObject *ufunc);
int vz_init_dufunc(PyObject *module);

/* ---- testhooks.c ---- */

/* Adds _ufunc_from_ir, _code_llvm, _code_asm and _jit_info (tests); 0/-1. */
int vz_init_testhooks(PyObject *module);


/* ---- vectorize.c ---- */

/* One compiled signature, an entry of a Library: what the driver made, and
 * the loop NumPy calls with its data, which the entry owns and frees with
 * its own free_data (the target's wrapper, a gufunc's GuLoop ...). */
typedef struct VzCompiled {
    CcCompiled cc;
    PyUFuncGenericFunction fn;
    void *data;
    void (*free_data)(void *data); /* may be NULL */
} VzCompiled;

/*
 * The compiled code of one ufunc, one entry per signature: a Python object,
 * numbavec._core.Library, the ufunc's owner (or its lazy state's compiler);
 * _core._code_of(ufunc) returns it, and it answers inspect_llvm,
 * inspect_asm and variable_types.  It holds the decorated function (a
 * CcKernel: a lazy ufunc compiles more signatures later).  Entries are
 * allocated one by one and never move.
 */
typedef struct VzLibrary {
    PyObject_HEAD const TgTarget *target;
    Py_ssize_t n, cap;
    VzCompiled **items; /* PyMem array of cap, n used; each entry PyMem */
    CcKernel *kernel;   /* owned */
    void *extra;        /* the factory's own (a gufunc's layout), or NULL */
    void (*free_extra)(void *extra);
} VzLibrary;

/*
 * Whether cc, compiled for lib, may run quick code first (cc_code_quick_entry,
 * tg_quick_take): its code waits for its first call, and lib's kernel has
 * no cache (whose first process makes and stores the optimised code for
 * the others), and NUMBAVEC_QUICK is not 0.
 */
int vz_quick_first(const VzLibrary *lib, const CcCompiled *cc);

/* What api.c's _code_of and _origin_of return: the compiled code behind a
 * numbavec ufunc (TypeError for any other object), and the Origin it keeps
 * (None for any other object).  New references. */
PyObject *vz_code_of(PyObject *ufunc);
PyObject *vz_origin_of(PyObject *obj);

/* The ufunc of lib's entries in order: spec gives the rest (name, doc,
 * nin, nout, identity, signature, methods); its tables and owner (lib)
 * are filled here.  New reference or NULL. */
PyObject *vz_library_ufunc(VzLibrary *lib, VzUfuncSpec *spec);
/* A new, empty library running on target; takes kernel over on success
 * only (on failure the caller still owns it).  New reference or NULL. */
VzLibrary *vz_library_new(const TgTarget *target, CcKernel *kernel);
/* Compiles sig as a ufunc loop through the driver, lets the target wrap
 * the loop and appends it: its index, or -1 with an exception. */
Py_ssize_t vz_library_add(VzLibrary *lib, const TsSignature *sig);
/* Appends c (from vz_compiled_new; the library takes it over, and frees it
 * on failure): its index, or -1 with an exception. */
Py_ssize_t vz_library_append(VzLibrary *lib, VzCompiled *c);
/* Frees the last entry, which nothing has published yet (a compilation
 * that turned out to repeat an entry). */
void vz_library_drop_last(VzLibrary *lib);
VzCompiled *vz_compiled_new(void); /* zeroed; NULL with MemoryError */
void vz_compiled_free(VzCompiled *c);
/* The entry whose argument kinds are args, or -1 (no exception). */
Py_ssize_t vz_library_find(VzLibrary *lib, const TsKind *args, int nargs);
/* Entry i's loop, its data and its signature (return type resolved). */
void vz_library_entry(VzLibrary *lib, Py_ssize_t i, PyUFuncGenericFunction *fn, void **data,
                      const TsSignature **sig);
Py_ssize_t vz_library_size(VzLibrary *lib);
/* sig compiled for the host through the driver with builder, into a new
 * entry that is not appended yet (the caller finishes it, then
 * vz_library_append or vz_compiled_free); NULL with an exception. */
VzCompiled *vz_library_compile(VzLibrary *lib, const TsSignature *sig, const CcBuilder *builder);

/* A host factory's first check: arch= and backend= are the cuda target's
 * (TypeError, and r->kernel freed).  0/-1. */
int vz_refuse_cuda_options(const TgTarget *t, TgRequest *r);
/* The host targets' vectorize factory (target.h): an eager ufunc for the
 * request's signatures, or a lazy one without.  New reference or NULL. */
PyObject *vz_make_vectorize(const TgTarget *t, TgRequest *r);

int vz_init_module(PyObject *module);

#endif /* NV_VECTORIZE_H */
