/*
 * code.c - code objects: the machine code of a host module, kept alive by a
 * CcCode until it is freed.
 *
 * The last stage of the cpu pipeline: emit.c and vectorize/loops.c fill a
 * CcModule; cc_jit_add verifies it, runs it through passes.c and links the
 * object file into the JIT (jit.c), and cc_jit_add_object links stored bytes
 * without running any LLVM pass.  Code is keyed (shared by key, one copy a
 * process), lazy (cc_jit_add_lazy: the verified module is kept, and
 * optimised, compiled and linked at its first cc_code_entry, so that a
 * decoration costs typing and IR only and a signature never called never
 * costs machine code) or quick (cc_code_quick_entry: barely optimised code
 * for the first calls while the optimised code waits).  Also the host back
 * end of the driver (cc_host_backend).
 */
#include "compiler/jit.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>

/* ---- code objects ---- */

static CcCode *
code_new(const char *name, size_t len)
{
    CcCode *code = PyMem_Calloc(1, sizeof(*code));
    if (code == NULL || (code->name = PyMem_Malloc(len + 1)) == NULL) {
        PyMem_Free(code);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(code->name, name, len);
    code->name[len] = '\0';
    code->refs = 1;
    cc_jit.live_codes++;
    return code;
}

/* ---- keyed code: one copy per process ---- */

/*
 * Code added under a key (the cache key of a signature) has the same
 * exported names in every process, so adding it twice to the one JITDylib
 * would define them twice: the same function decorated twice, or a module
 * reloaded.  Live keyed code is therefore shared, with a reference count.
 */
static CcCode *
keyed_find(const char *key)
{
    for (CcCode *c = cc_jit.keyed; c != NULL; c = c->next) {
        if (strcmp(c->key, key) == 0) {
            c->refs++;
            return c;
        }
    }
    return NULL;
}

static int
keyed_register(CcCode *code, const char *key)
{
    if ((code->key = cc_jit_strdup(key)) == NULL) {
        return -1;
    }
    code->next = cc_jit.keyed;
    cc_jit.keyed = code;
    return 0;
}

static void
keyed_unlink(CcCode *code)
{
    for (CcCode **p = &cc_jit.keyed; *p != NULL; p = &(*p)->next) {
        if (*p == code) {
            *p = code->next;
            return;
        }
    }
}

/* ---- lazy code ---- */

/* Marks code's addresses valid, for cc_code_entry's readers. */
static void
set_made(CcCode *code)
{
    atomic_store_explicit(&code->made, 1, memory_order_release);
}

/* Forgets code's pending module and its bitcode (made, or never to be). */
static void
pending_dispose(CcCode *code)
{
    if (code->pending.mod != NULL) {
        cc_jit.pending--;
    }
    cc_module_dispose(&code->pending);
    if (code->pending_bc != NULL) {
        LLVMDisposeMemoryBuffer(code->pending_bc);
        code->pending_bc = NULL;
    }
}

typedef struct Copy {
    CcCode *code;
    CcModule *to;
} Copy;

/* The pending module's bitcode, written while nothing has yet run in its
 * context, so that no later step has to read a tainted one. */
static int
snapshot_step(void *arg)
{
    CcCode *code = arg;
    code->pending_bc = LLVMWriteBitcodeToMemoryBuffer(code->pending.mod);
    return 0;
}

/* The pending module read back from its bitcode into a context of its own:
 * the way out of a context LLVM threw in, which is never touched again
 * (guard.h; even reading it may insert into its half-grown tables). */
static int
restore_step(void *arg)
{
    Copy *c = arg;
    c->to->tsctx = LLVMOrcCreateNewThreadSafeContext();
    c->to->ctx = LLVMOrcThreadSafeContextGetContext(c->to->tsctx);
    if (LLVMParseBitcodeInContext2(c->to->ctx, c->code->pending_bc, &c->to->mod)) {
        c->to->mod = NULL;
        PyErr_SetString(PyExc_RuntimeError, "numbavec: cannot read back its own bitcode");
        return -1;
    }
    return 0;
}

/* A copy of the pending module in its context, for the passes to work on. */
static int
clone_step(void *arg)
{
    Copy *c = arg;
    c->to->mod = LLVMCloneModule(c->code->pending.mod);
    return 0;
}

/* to = a copy of code's pending module: in its context (clone_step) or, if
 * that context is tainted, in a fresh one read from the pending bitcode,
 * which becomes the pending module's (the tainted one is left).  The
 * pending module is tainted when LLVM threw in its context. */
static int
copy_pending(CcCode *code, CcModule *to)
{
    CcModule fresh = {0};
    memset(to, 0, sizeof(*to));
    if (code->pending.tainted) {
        Copy c = {code, &fresh};
        int rc = cg_run(restore_step, &c);
        if (rc < 0) {
            fresh.tainted = rc == CG_THREW;
            cc_module_dispose(&fresh);
            return -1;
        }
        cc_module_dispose(&code->pending); /* forgotten: it is tainted */
        code->pending = fresh;
    }
    Copy c = {code, to};
    if (cg_run(clone_step, &c) == CG_THREW) {
        code->pending.tainted = 1;
        return -1;
    }
    return 0;
}

/* Before making code's machine code from its pending module: -1 with an
 * exception when LLVM threw while linking it before; else the start time in
 * *t0 (and the timed stages reset). */
static int
start_making(CcCode *code, double *t0)
{
    if (code->pending.mod == NULL || code->link_broken) {
        PyErr_Format(PyExc_RuntimeError, "numbavec: the machine code of '%s' could not be made",
                     code->name);
        return -1;
    }
    *t0 = cc_now_ns();
    cc_time_reset();
    return 0;
}

/* After a failure to make code (its exception set): anything but a
 * MemoryError would come again, so the pending module goes, and the code
 * is not tried again; a MemoryError may pass.  Returns -1. */
static int
give_up_unless_memory(CcCode *code)
{
    if (!PyErr_ExceptionMatches(PyExc_MemoryError)) {
        pending_dispose(code);
    }
    return -1;
}

/*
 * Makes the machine code of lazily added code (cc_jit_add_lazy): optimises
 * and compiles a copy of its pending module, links it, resolves its entries
 * and, when asked to, hands the object file to its store.  The GIL is held:
 * it serialises this with every other use of the JIT.  0, or -1 with an
 * exception; after a MemoryError the pending module stays for the next
 * try, unless LLVM threw while linking.
 */
static int
code_make(CcCode *code)
{
    LLVMMemoryBufferRef obj = NULL;
    PyObject *blob = NULL;
    CcModule work;
    double t0;
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return 0;
    }
    if (start_making(code, &t0) < 0 || copy_pending(code, &work) < 0) {
        return -1;
    }
    int rc = cc_jit_compile_module(code, &work, &obj, 1);
    code->pending.tainted |= work.tainted; /* one context */
    cc_module_dispose(&work);
    if (rc < 0) {
        return give_up_unless_memory(code);
    }
    if (code->store != NULL
        && (blob = PyBytes_FromStringAndSize(LLVMGetBufferStart(obj),
                                             (Py_ssize_t)LLVMGetBufferSize(obj)))
               == NULL) {
        LLVMDisposeMemoryBuffer(obj);
        return -1;
    }
    if (cc_jit_link(code, &code->tracker, obj, code->unique, code->addrs, &code->link_broken) < 0) {
        Py_XDECREF(blob);
        return give_up_unless_memory(code);
    }
    set_made(code);
    pending_dispose(code);
    cc_time_made(code, code->name, "machine code made", t0);
    if (code->store != NULL) {
        /* the code runs whatever the store does: a store that fails is
         * reported, and the call goes on */
        if (code->store(code->store_ctx, blob, code->ir) < 0) {
            PyErr_WriteUnraisable(code->store_ctx);
        }
        code->store = NULL;
        Py_CLEAR(code->store_ctx);
    }
    Py_XDECREF(blob);
    return 0;
}

/* Resolves code's entries into addrs, making code first if it waits. */
static int
code_addresses(CcCode *code, void **addrs, int n)
{
    if (code_make(code) < 0) {
        return -1;
    }
    for (int i = 0; i < n && i < code->n; i++) {
        addrs[i] = code->addrs[i];
    }
    return 0;
}

CcCode *
cc_jit_add_keyed(CcModule *m, const char *const *names, void **addrs, int n, const char *key,
                 PyObject **object)
{
    CcCode *code = NULL;
    LLVMMemoryBufferRef obj = NULL;
    char(*unique)[128] = NULL;
    if (object != NULL) {
        *object = NULL;
    }
    if (cc_jit_init() < 0) {
        goto error;
    }
    if ((unique = cc_jit_unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if (key != NULL && (code = keyed_find(key)) != NULL) {
        cc_module_dispose(m); /* already in the JIT: nothing to compile */
        if (code_addresses(code, addrs, n) < 0) {
            goto error;
        }
        PyMem_Free(unique);
        return code;
    }
    if (cc_jit_rename(m, names, n, unique, 0) < 0) {
        goto error;
    }
    size_t len = 0;
    const char *name = LLVMGetModuleIdentifier(m->mod, &len);
    if ((code = code_new(name, len)) == NULL || cc_jit_compile_module(code, m, &obj, 0) < 0) {
        goto error;
    }
    cc_module_dispose(m);
    if (object != NULL
        && (*object = PyBytes_FromStringAndSize(LLVMGetBufferStart(obj),
                                                (Py_ssize_t)LLVMGetBufferSize(obj)))
               == NULL) {
        goto error;
    }
    LLVMMemoryBufferRef consumed = obj;
    obj = NULL;
    code->n = n;
    if (cc_jit_link(code, &code->tracker, consumed, unique, code->addrs, &code->link_broken) < 0
        || (key != NULL && keyed_register(code, key) < 0)) {
        goto error;
    }
    set_made(code);
    memcpy(addrs, code->addrs, sizeof(void *) * (size_t)n);
    PyMem_Free(unique);
    return code;
error:
    if (object != NULL) {
        Py_CLEAR(*object);
    }
    if (obj != NULL) {
        LLVMDisposeMemoryBuffer(obj);
    }
    PyMem_Free(unique);
    cc_module_dispose(m);
    cc_code_free(code);
    return NULL;
}

CcCode *
cc_jit_add_lazy(CcModule *m, const char *const *names, int n, const char *key)
{
    CcCode *code = NULL;
    char(*unique)[128] = NULL;
    if (cc_jit_init() < 0 || (unique = cc_jit_unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if (key != NULL && (code = keyed_find(key)) != NULL) {
        cc_module_dispose(m); /* already in the JIT, made or waiting */
        PyMem_Free(unique);
        return code;
    }
    if (cc_jit_rename(m, names, n, unique, 1) < 0) {
        goto error;
    }
    size_t len = 0;
    const char *name = LLVMGetModuleIdentifier(m->mod, &len);
    if ((code = code_new(name, len)) == NULL) {
        goto error;
    }
    code->n = n;
    code->unique = unique;
    unique = NULL;
    code->pending = *m;
    memset(m, 0, sizeof(*m));
    cc_jit.pending++;
    if (cg_run(snapshot_step, code) == CG_THREW) {
        code->pending.tainted = 1;
        goto error;
    }
    if (key != NULL && keyed_register(code, key) < 0) {
        goto error;
    }
    return code;
error:
    PyMem_Free(unique);
    cc_module_dispose(m);
    cc_code_free(code);
    return NULL;
}

int
cc_code_made(CcCode *code)
{
    return atomic_load_explicit(&code->made, memory_order_acquire);
}

void *
cc_code_entry(CcCode *code, int i)
{
    NV_ASSERT(i >= 0 && i < code->n);
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return code->addrs[i];
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = code_make(code);
    PyGILState_Release(gil);
    return rc == 0 ? code->addrs[i] : NULL;
}

static int
code_make_quick(CcCode *code)
{
    LLVMMemoryBufferRef obj = NULL;
    char(*names)[128] = NULL;
    const char *old[CC_MAXENTRIES];
    CcModule work = {0};
    double t0;
    if (code->quick_broken) {
        return code_make(code); /* LLVM threw while linking quick code */
    }
    if (start_making(code, &t0) < 0 || copy_pending(code, &work) < 0) {
        return -1;
    }
    if ((names = PyMem_Malloc(sizeof(*names) * (size_t)code->n)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (int i = 0; i < code->n; i++) {
        old[i] = code->unique[i];
        int len = snprintf(names[i], sizeof(names[i]), "%s.quick", code->unique[i]);
        if (len < 0 || len >= (int)sizeof(names[i])) {
            PyErr_Format(PyExc_ValueError, "function name too long: '%s'", code->unique[i]);
            goto error;
        }
    }
    int rc = cc_jit_rename(&work, old, code->n, names, 0);
    if (rc < 0 || (rc = cc_jit_compile_quick(&work, &obj)) < 0) {
        work.tainted |= rc == CG_THREW;
        goto error;
    }
    cc_module_dispose(&work);
    if (cc_jit_link(code, &code->quick_tracker, obj, names, code->quick, &code->quick_broken) < 0) {
        goto error;
    }
    atomic_store_explicit(&code->quick_made, 1, memory_order_release);
    cc_jit.quick_compilations++;
    cc_time_made(code, code->name, "quick machine code made", t0);
    PyMem_Free(names);
    return 0;
error:
    code->pending.tainted |= work.tainted; /* one context */
    cc_module_dispose(&work);
    PyMem_Free(names);
    return -1;
}

void *
cc_code_quick_entry(CcCode *code, int i)
{
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return code->addrs[i];
    }
    if (atomic_load_explicit(&code->quick_made, memory_order_acquire)) {
        return code->quick[i];
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = 0;
    if (!cc_code_made(code) && !atomic_load_explicit(&code->quick_made, memory_order_acquire)) {
        /* keyed code is stored when made: it has no quick code */
        rc = code->key != NULL ? code_make(code) : code_make_quick(code);
    }
    PyGILState_Release(gil);
    if (rc < 0) {
        return NULL;
    }
    return cc_code_made(code) ? code->addrs[i] : code->quick[i];
}

Py_ssize_t
cc_jit_quick_compilations(void)
{
    return cc_jit.quick_compilations;
}

void
cc_code_store_when_made(CcCode *code, CcStoreFn store, PyObject *ctx)
{
    if (cc_code_made(code) || code->store != NULL) {
        return; /* made (and stored) already, or someone will store it */
    }
    code->store = store;
    code->store_ctx = Py_NewRef(ctx);
}

CcCode *
cc_jit_add(CcModule *m, const char *const *names, void **addrs, int n)
{
    return cc_jit_add_keyed(m, names, addrs, n, NULL, NULL);
}

CcCode *
cc_jit_add_object(const char *key, const char *bytes, size_t size, const char *ir,
                  const char *const *names, void **addrs, int n)
{
    CcCode *code = NULL;
    char(*unique)[128] = NULL;
    if (cc_jit_init() < 0) {
        return NULL;
    }
    if ((unique = cc_jit_unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if ((code = keyed_find(key)) == NULL) {
        if ((code = code_new(key, strlen(key))) == NULL || (code->ir = cc_jit_strdup(ir)) == NULL) {
            goto error;
        }
        LLVMMemoryBufferRef obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, size, key);
        code->n = n;
        if (obj == NULL) { /* the one allocation there, made nothrow */
            PyErr_NoMemory();
            goto error;
        }
        if (cc_jit_link(code, &code->tracker, obj, unique, code->addrs, &code->link_broken) < 0
            || keyed_register(code, key) < 0) {
            goto error;
        }
        cc_jit.object_loads++;
        set_made(code);
    }
    if (code_addresses(code, addrs, n) < 0) {
        goto error;
    }
    PyMem_Free(unique);
    return code;
error:
    PyMem_Free(unique);
    cc_code_free(code);
    return NULL;
}

void
cc_code_free(CcCode *code)
{
    if (code == NULL || --code->refs > 0) {
        return;
    }
    if (code->key != NULL) {
        keyed_unlink(code);
    }
    cc_jit_remove_tracker(code->tracker);
    cc_jit_remove_tracker(code->quick_tracker);
    pending_dispose(code);
    Py_XDECREF(code->store_ctx);
    PyMem_Free(code->unique);
    PyMem_Free(code->ir);
    PyMem_Free(code->key);
    PyMem_Free(code->name);
    PyMem_Free(code);
    cc_jit.live_codes--;
}

const char *
cc_code_llvm(CcCode *code)
{
    return code_make(code) == 0 ? code->ir : NULL;
}

typedef struct Asm {
    const char *ir;
    PyObject *text;
} Asm;

static int
asm_step(void *arg)
{
    Asm *a = arg;
    a->text = cc_jit_asm_from_ir(a->ir);
    return a->text != NULL ? 0 : -1;
}

PyObject *
cc_code_asm(CcCode *code)
{
    if (code_make(code) < 0) {
        return NULL;
    }
    Asm a = {code->ir, NULL};
    return cg_run(asm_step, &a) == 0 ? a.text : NULL;
}

/* ---- the host back end of the driver ---- */

static int
host_module_new(const CcBackend *be, CcModule *m, const char *name)
{
    return cc_module_new(m, name);
}

static void
entry_name_list(const CcEntries *e, const char **names)
{
    for (int i = 0; i < e->n; i++) {
        names[i] = e->names[i];
    }
}

static int
host_finish(const CcBackend *be, CcModule *m, const CcEntries *e, const char *key, PyObject **blob,
            CcCompiled *out)
{
    const char *names[CC_MAXENTRIES];
    entry_name_list(e, names);
    out->code = out->lazy ? cc_jit_add_lazy(m, names, e->n, key)
                          : cc_jit_add_keyed(m, names, out->addrs, e->n, key, blob);
    return out->code != NULL ? 0 : -1;
}

static int
host_load(const CcBackend *be, const char *key, PyObject *blob, const char *ir, const CcEntries *e,
          CcCompiled *out)
{
    const char *names[CC_MAXENTRIES];
    char *bytes;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(blob, &bytes, &size) < 0) {
        return -1;
    }
    entry_name_list(e, names);
    out->code = cc_jit_add_object(key, bytes, (size_t)size, ir, names, out->addrs, e->n);
    return out->code != NULL ? 0 : -1;
}

const CcBackend cc_host_backend = {
    .name = "host",
    .target = &cc_host_target,
    .module_new = host_module_new,
    .finish = host_finish,
    .load = host_load,
};
