/*
 * driver.c - the one compile driver: a decorated function, parsed once, and
 * one signature of it compiled into code through the passes.
 *
 * Every factory (the ufunc and gufunc factories, the cuda ufunc,
 * compile_ptx) compiles here.  It describes a decorated function once as a
 * CcKernel and asks cc_compile for each signature, supplying only
 *
 *   a CcBuilder   what wraps the kernel: a NumPy inner loop, a gufunc core
 *                 loop, grid-stride entries; it is given the emitted kernel
 *                 and touches nothing but the module;
 *   a CcBackend   where the code runs: the host JIT (jit.c), or PTX for a
 *                 GPU (targets/cuda/ptx.c).
 *
 * cc_compile runs lower -> typeinfer -> emit -> builder -> back end, and
 * goes through the kernel's cache when it has one: a hit links stored code
 * and runs no LLVM pass.  The call path only goes down: the passes and the
 * builder return to the driver, which returns to the factory.
 */
#include "compiler/compiler.h"
#include "compiler/guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the kernel ---- */

CcKernel *
cc_kernel_new(PyObject *pyfunc, PyObject *funcdef, PyObject *source, const char *name, int fastmath,
              int boundscheck, PyObject *cache, PyObject *origin)
{
    PyObject *filename;
    int first_line, line_offset;
    PyObject *lines;
    if (!PyArg_ParseTuple(source, "UiO!i", &filename, &first_line, &PyList_Type, &lines,
                          &line_offset)) {
        return NULL;
    }
    CcKernel *k = PyMem_Calloc(1, sizeof(CcKernel));
    if (k == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    k->pyfunc = Py_NewRef(pyfunc);
    k->funcdef = Py_NewRef(funcdef);
    k->lines = Py_NewRef(lines);
    k->filename_obj = Py_NewRef(filename);
    k->cache = cache != NULL && cache != Py_None ? Py_NewRef(cache) : NULL;
    k->origin = origin != NULL && origin != Py_None ? Py_NewRef(origin) : NULL;
    k->name_obj = PyUnicode_FromString(name != NULL ? name : "kernel");
    k->first_line = first_line;
    k->line_offset = line_offset;
    k->fastmath = fastmath;
    k->boundscheck = boundscheck;
    if (k->name_obj == NULL || (k->name = PyUnicode_AsUTF8AndSize(k->name_obj, NULL)) == NULL
        || (k->filename = PyUnicode_AsUTF8AndSize(filename, NULL)) == NULL) {
        cc_kernel_free(k);
        return NULL;
    }
    return k;
}

int
cc_kernel_traverse(const CcKernel *k, visitproc visit, void *arg)
{
    if (k != NULL) {
        Py_VISIT(k->pyfunc);
        Py_VISIT(k->funcdef);
        Py_VISIT(k->cache);
        Py_VISIT(k->origin);
    }
    return 0;
}

PyObject *
cc_kernel_pyfunc(const CcKernel *k)
{
    return Py_NewRef(k != NULL && k->pyfunc != NULL ? k->pyfunc : Py_None);
}

PyObject *
cc_kernel_origin(const CcKernel *k)
{
    return Py_NewRef(k != NULL && k->origin != NULL ? k->origin : Py_None);
}

void
cc_kernel_clear(CcKernel *k)
{
    if (k != NULL) {
        Py_CLEAR(k->pyfunc);
        Py_CLEAR(k->funcdef);
        Py_CLEAR(k->cache);
        Py_CLEAR(k->origin);
    }
}

void
cc_kernel_free(CcKernel *k)
{
    if (k == NULL) {
        return;
    }
    cc_kernel_clear(k);
    Py_XDECREF(k->lines);
    Py_XDECREF(k->filename_obj);
    Py_XDECREF(k->name_obj);
    PyMem_Free(k);
}

/* ---- timing: NUMBAVEC_DUMP=time and compile records (timing.c counts) ---- */

/* The record of a compilation that started at t0 (cache_hit: its code
 * came from the cache), and with NUMBAVEC_DUMP=time one line on stderr
 * with its back end and what its builder makes; lazy: its machine code
 * waits for the first call (cc_time_made). */
static void
record_stages(const CcKernel *k, const CcCompiled *out, const CcBuilder *b, const CcBackend *be,
              double t0, int cache_hit)
{
    char sigbuf[TS_STRSIZE], line[512], where[96];
    double total = cc_now_ns() - t0;
    int lazy = out->code != NULL && !cc_code_made(out->code);
    ts_signature_str(&out->sig, sigbuf, sizeof(sigbuf));
    snprintf(where, sizeof(where), "%s, %s", be->name, b->what);
    if (cc_dump_flags() & CC_DUMP_TIME) {
        cc_time_format(line, sizeof(line), 0, CC_T_N);
        fprintf(stderr, "numbavec time: %s %s (%s):%s, total %.2f ms%s\n", k->name, sigbuf, where,
                line, total / 1e6, lazy ? ", machine code at the first call" : "");
        fflush(stderr);
    }
    cc_time_record("signature", k->name, k->origin, out->code, sigbuf, where, t0, total, lazy,
                   cache_hit);
}

/* ---- results ---- */

void
cc_compiled_clear(CcCompiled *c)
{
    if (c->code != NULL) {
        cc_code_free(c->code);
    }
    Py_XDECREF(c->var_types);
    Py_XDECREF(c->text);
    Py_XDECREF(c->llvm);
    Py_XDECREF(c->raise_sites);
    memset(c, 0, sizeof(*c));
}

/* {variable: type name} of fn's variables, and "<return>". */
static PyObject *
variable_types(const CcFunction *fn)
{
    PyObject *d = PyDict_New();
    char buf[256];
    for (int i = 0; d != NULL && i < fn->nvars; i++) {
        if (fn->vars[i]->ty == NULL) {
            continue;
        }
        PyObject *t = PyUnicode_FromString(cc_type_name(fn->vars[i]->ty, buf, sizeof(buf)));
        if (t == NULL || PyDict_SetItemString(d, fn->vars[i]->name, t) < 0) {
            Py_CLEAR(d);
        }
        Py_XDECREF(t);
    }
    const char *ret = fn->ret != NULL ? cc_type_name(fn->ret, buf, sizeof(buf)) : "none";
    PyObject *r = d ? PyUnicode_FromString(ret) : NULL;
    if (r == NULL || PyDict_SetItemString(d, "<return>", r) < 0) {
        Py_CLEAR(d);
    }
    Py_XDECREF(r);
    return d;
}

/* A rough cost in ns of one kernel call, from its instructions (calls of
 * math functions dominate): the parallel target's threshold starts there. */
static double
estimate_cost(LLVMValueRef kernel)
{
    double cost = 0.3;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(kernel); bb;
         bb = LLVMGetNextBasicBlock(bb)) {
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            LLVMOpcode op = LLVMGetInstructionOpcode(i);
            cost += op == LLVMCall                                                           ? 3.0
                    : (op == LLVMFDiv || op == LLVMSDiv || op == LLVMUDiv || op == LLVMFRem) ? 1.0
                                                                                             : 0.05;
        }
    }
    return cost;
}

/* ---- the passes ---- */

/* Starts compiling k: fn zeroed, with an arena, k's name and location. */
static int
function_init(CcFunction *fn, const CcKernel *k)
{
    memset(fn, 0, sizeof(*fn));
    if ((fn->arena = cc_arena_new()) == NULL) {
        return -1;
    }
    fn->name = k->name;
    fn->filename = k->filename;
    fn->source_lines = k->lines;
    fn->first_line = k->first_line;
    fn->line_offset = k->line_offset;
    fn->boundscheck = k->boundscheck;
    return 0;
}

/* The entries' names: base + the builder's suffixes. */
static int
entry_names(const CcBuilder *b, const char *base, CcEntries *e)
{
    memset(e, 0, sizeof(*e));
    e->n = b->nentries;
    for (int i = 0; i < e->n; i++) {
        const char *suffix = b->suffixes != NULL ? b->suffixes[i] : "";
        if ((size_t)snprintf(e->names[i], sizeof(e->names[i]), "%s%s", base, suffix)
            >= sizeof(e->names[i])) {
            PyErr_Format(PyExc_ValueError, "entry name too long: %s%s", base, suffix);
            return -1;
        }
    }
    return 0;
}

/* Emits the kernel version(s) the builder wraps; 0/-1. */
static int
emit_kernels(CcFunction *fn, const CcKernel *k, const CcBuilder *b, const CcBackend *be,
             const TsSignature *ksig, LLVMModuleRef mod, const char *base, LLVMValueRef *kernels,
             int *nk)
{
    char name[CC_NAME_SIZE + 32];
    if (b->form == CC_SCALAR_KERNEL) {
        snprintf(name, sizeof(name), "%s.kernel", base);
        kernels[0] = cc_emit_function_for(fn, ksig, mod, name, k->fastmath, be->target);
        *nk = 1;
        return kernels[0] != NULL ? 0 : -1;
    }
    unsigned long long masks[2];
    fn->device = be != &cc_host_backend;
    *nk = b->variants(b->ctx, ksig, masks);
    for (int v = 0; v < *nk; v++) {
        snprintf(name, sizeof(name), "%s.kernel%s", base, v ? ".contig" : "");
        kernels[v] = cc_emit_gufunc_kernel(fn, ksig, mod, name, k->fastmath, masks[v], be->target);
        if (kernels[v] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* What emit_step makes: the module, the kernel(s) and the builder's entries. */
typedef struct Emission {
    CcFunction *fn;
    const CcKernel *k;
    const CcBuilder *b;
    const CcBackend *be;
    const TsSignature *ksig;
    const char *base;
    CcModule *m;
    CcEntries *e;
    LLVMValueRef *kernels;
    int *nk;
} Emission;

static int
emit_step(void *arg)
{
    Emission *a = arg;
    if (a->be->module_new(a->be, a->m, a->base) < 0
        || emit_kernels(a->fn, a->k, a->b, a->be, a->ksig, a->m->mod, a->base, a->kernels, a->nk)
               < 0) {
        return -1;
    }
    return a->b->wrap(a->b->ctx, a->m->mod, a->kernels, *a->nk, a->ksig, a->e);
}

/* emit_step under the guard (guard.h): the module is tainted when LLVM
 * threw while it was built (out of memory). */
static int
emit_module(Emission *a)
{
    int rc = cg_run(emit_step, a);
    a->m->tainted |= rc == CG_THREW;
    return rc < 0 ? -1 : 0;
}

/*
 * Puts the kernel, its file and line and the signature in front of the
 * message of the exception being raised (a back end's failure after type
 * inference: an invalid module, libNVVM), for back ends that ask for it.
 * The exception keeps its type and attributes: only a one-string args is
 * rewritten.  TypingErrors point at the source already; they and
 * MemoryError are left as they are.
 */
static void
name_kernel_in_error(const CcKernel *k, const CcBackend *be, const TsSignature *sig)
{
    if (!be->name_errors || !PyErr_Occurred() || PyErr_ExceptionMatches(nv_state.typing_error)
        || PyErr_ExceptionMatches(PyExc_MemoryError)) {
        return;
    }
    PyObject *type, *value, *tb, *args = NULL, *qualname = NULL, *text = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL || (args = PyObject_GetAttrString(value, "args")) == NULL
        || !PyTuple_Check(args) || PyTuple_Size(args) != 1
        || !PyUnicode_Check(PyTuple_GetItem(args, 0))) {
        goto done;
    }
    if (k->pyfunc == NULL || (qualname = PyObject_GetAttrString(k->pyfunc, "__qualname__")) == NULL
        || !PyUnicode_Check(qualname)) {
        goto done;
    }
    char sigbuf[TS_STRSIZE];
    text = PyUnicode_FromFormat(
        "%s kernel '%U' (%s:%d) for %s: %U", be->name, qualname, k->filename, k->first_line,
        ts_signature_str(sig, sigbuf, sizeof(sigbuf)), PyTuple_GetItem(args, 0));
    PyObject *new_args = text != NULL ? PyTuple_Pack(1, text) : NULL;
    if (new_args != NULL) {
        PyObject_SetAttrString(value, "args", new_args);
        Py_DECREF(new_args);
    }
done:
    PyErr_Clear(); /* a failure here keeps the original message */
    Py_XDECREF(args);
    Py_XDECREF(qualname);
    Py_XDECREF(text);
    PyErr_Restore(type, value, tb);
}

/*
 * The parameters a kernel writes: those some a[...] = v stores into, a being
 * the parameter or a view of it kept in a variable (row = out[i]; row[:] = 0),
 * through any chain of assignments.  An array's augmented assignment (a +=
 * 1) is a store once typeinfer has made it one (cc_compile runs this before
 * and after typing; the second adds what only types tell).
 */
typedef unsigned long long ParamMask;

/* The parameters whose memory the value of n may be a view of. */
static ParamMask
views_of(const CcNode *n, const ParamMask *alias)
{
    if (n == NULL) {
        return 0;
    }
    switch (n->kind) {
    case ND_VAR:
        return n->var->is_param ? (n->var->index < 64 ? 1ULL << n->var->index : 0)
                                : alias[n->var->index];
    case ND_INDEX:
    case ND_GETITEM:
        return views_of(n->lhs, alias);
    case ND_ARRAYATTR:
        return n->index == AA_T ? views_of(n->lhs, alias) : 0;
    case ND_CALL: /* a.reshape(), a.ravel(): a view of a where NumPy gives one */
        return cc_builtin(n->builtin)->flavor == FL_RESHAPE ? views_of(n->args[0], alias) : 0;
    case ND_INLINE:
        return alias[n->var->index];
    case ND_IFEXP:
        return views_of(n->then, alias) | views_of(n->els, alias);
    case ND_TUPLE: {
        ParamMask m = 0;
        for (int i = 0; i < n->nargs; i++) {
            m |= views_of(n->args[i], alias);
        }
        return m;
    }
    default:
        return 0; /* scalars, and the new arrays of calls and array expressions */
    }
}

/* One pass over n: variables take the views of what is assigned to them
 * (*changed when one grows); stores mark their parameters in *written. */
static void
flow_views(const CcNode *n, ParamMask *alias, ParamMask *written, int *changed)
{
    if (n == NULL) {
        return;
    }
    ParamMask m;
    switch (n->kind) {
    case ND_ASSIGN:
        m = views_of(n->rhs, alias);
        if ((alias[n->var->index] | m) != alias[n->var->index]) {
            alias[n->var->index] |= m;
            *changed = 1;
        }
        break;
    case ND_UNPACK:
        m = views_of(n->rhs, alias);
        for (int i = 0; i < n->nargs; i++) {
            if ((alias[n->vars[i]->index] | m) != alias[n->vars[i]->index]) {
                alias[n->vars[i]->index] |= m;
                *changed = 1;
            }
        }
        break;
    case ND_RETURN:
        if (n->var != NULL
            && (alias[n->var->index] | views_of(n->lhs, alias)) != alias[n->var->index]) {
            alias[n->var->index] |= views_of(n->lhs, alias);
            *changed = 1;
        }
        break;
    case ND_SETITEM:
        *written |= views_of(n->lhs->lhs, alias);
        break;
    case ND_CALL:
        if (cc_builtin(n->builtin)->flavor == FL_SORT
            && (cc_builtin(n->builtin)->op == S_SORT_IN_PLACE
                || cc_builtin(n->builtin)->op == S_PARTITION_IN_PLACE)) {
            *written |= views_of(n->args[0], alias); /* a.sort() */
        }
        break;
    default:
        break;
    }
    const CcNode *kids[5] = {n->lhs, n->rhs, n->cond, n->then, n->els};
    for (int i = 0; i < 5; i++) {
        flow_views(kids[i], alias, written, changed);
    }
    for (int i = 0; n->args != NULL && i < n->nargs; i++) {
        flow_views(n->args[i], alias, written, changed);
    }
}

void
cc_written_params(const CcFunction *fn, unsigned char *written)
{
    ParamMask *alias = PyMem_Calloc((size_t)fn->nvars + 1, sizeof(ParamMask)), mask = 0;
    int changed = 1;
    for (int pass = 0; changed && pass <= 64 + fn->nvars; pass++) {
        changed = 0;
        mask = 0;
        flow_views(fn->body, alias != NULL ? alias : &mask, &mask, &changed);
        if (alias == NULL) {
            break; /* no memory for the flow: direct stores only */
        }
    }
    PyMem_Free(alias);
    for (int i = 0; i < TS_MAXARGS && i < 64; i++) {
        written[i] |= (unsigned char)((mask >> i) & 1);
    }
}

/* The kernel's view of sig (the builder's, or sig itself) and the
 * parameters it writes; 0/-1. */
static int
kernel_signature(const CcBuilder *b, CcFunction *fn, const TsSignature *sig, CcCompiled *out)
{
    memset(out->written, 0, sizeof(out->written));
    cc_written_params(fn, out->written);
    if (b->kernel_signature == NULL) {
        out->ksig = *sig;
        return 0;
    }
    return b->kernel_signature(b->ctx, sig, out->written, &out->ksig);
}

/*
 * Types, emits and compiles fn (lowered) for out->ksig into out, through the
 * back end; key (may be NULL) names code that may be stored, and *blob then
 * receives what to store.
 */
static int
compile_lowered(CcFunction *fn, CcKernel *k, const CcBuilder *b, const CcBackend *be,
                const char *base, const char *key, PyObject **blob, CcCompiled *out)
{
    CcModule m = {0};
    CcEntries e;
    LLVMValueRef kernels[2];
    int nk = 0, rc = -1;
    fn->device = be != &cc_host_backend; /* typing refuses what a device lacks */
    fn->fails = 0;
    double t0 = cc_now_ns();
    if (cc_typeinfer(fn, &out->ksig) < 0 || entry_names(b, base, &e) < 0) {
        return -1;
    }
    cc_time_add(CC_T_TYPE, cc_now_ns() - t0);
    /* typing made a += 1 on arrays stores: the arrays they write (a ()
     * parameter's kind was settled by the first analysis, and stays) */
    unsigned char typed[TS_MAXARGS] = {0};
    cc_written_params(fn, typed);
    for (int i = 0; i < out->ksig.nargs; i++) {
        out->written[i] |= out->ksig.args[i].ndim > 0 ? typed[i] : 0;
    }
    if (cc_dump_flags() & CC_DUMP_IR) {
        char label[CC_NAME_SIZE + TS_STRSIZE + 8], sigbuf[TS_STRSIZE];
        snprintf(label, sizeof(label), "%s %s", k->name,
                 ts_signature_str(&out->ksig, sigbuf, sizeof(sigbuf)));
        cc_dump_ir(fn, label);
    }
    if (out->ksig.ret.kind != TS_VOID) {
        out->sig.ret.kind = out->ksig.ret.kind = cc_storage(fn->ret);
    }
    t0 = cc_now_ns();
    Emission em = {fn, k, b, be, &out->ksig, base, &m, &e, kernels, &nk};
    if (emit_module(&em) < 0) {
        goto done;
    }
    cc_time_add(CC_T_EMIT, cc_now_ns() - t0);
    out->cost_ns = estimate_cost(kernels[0]);
    out->fails = fn->fails;
    if ((out->var_types = variable_types(fn)) == NULL) {
        goto done;
    }
    if (fn->nraise_sites > 0) {
        /* a device kernel's raise sites, which its cache entry could not
         * carry: such a kernel is compiled, never stored */
        key = NULL;
        blob = NULL;
        if ((out->raise_sites = PyTuple_New(fn->nraise_sites)) == NULL) {
            goto done;
        }
        for (int i = 0; i < fn->nraise_sites; i++) {
            PyObject *s = PyUnicode_FromString(fn->raise_sites[i]);
            if (s == NULL) {
                goto done;
            }
            PyTuple_SetItem(out->raise_sites, i, s);
        }
    }
    rc = be->finish(be, &m, &e, key, blob, out);
done:
    cc_module_dispose(&m);
    return rc;
}

/* ---- what a gufunc kernel's status means ---- */

/* The raise registry: {site text: class}, the classes kernels read when
 * they compiled, kept for the process (nv_state.raise_classes). */
static PyObject *
raise_classes(void)
{
    if (nv_state.raise_classes == NULL) {
        nv_state.raise_classes = PyDict_New();
    }
    return nv_state.raise_classes;
}

const char *
cc_raise_register(CcArena *arena, PyObject *text, PyObject *cls, int *generation)
{
    PyObject *classes = raise_classes(), *site = classes ? Py_NewRef(text) : NULL;
    const char *s = NULL;
    for (int n = 0; site != NULL; n++) {
        PyObject *kept = PyDict_GetItemWithError(classes, site);
        if (kept == NULL && PyErr_Occurred()) {
            break;
        }
        if (kept == NULL && PyDict_SetItem(classes, site, cls) < 0) {
            break;
        }
        if (kept == NULL || kept == cls) {
            const char *utf8 = PyUnicode_AsUTF8AndSize(site, NULL);
            s = utf8 != NULL ? cc_strdup(arena, utf8) : NULL;
            *generation = n;
            break;
        }
        Py_DECREF(site);
        site = PyUnicode_FromFormat("%U\x1f%d", text, n + 1);
    }
    Py_XDECREF(site);
    return s;
}

/* The class the kernel of site read (a new reference), or NULL with no
 * exception: the one registered for the site, else for the site without
 * its generation (code another process made and stored, this process
 * having compiled it without one), else the class found by its name. */
static PyObject *
site_class(PyObject *site, PyObject *fields)
{
    PyObject *classes = raise_classes(), *cls = NULL;
    if (classes != NULL && (cls = PyDict_GetItemWithError(classes, site)) == NULL
        && !PyErr_Occurred() && PyList_Size(fields) == 4) {
        PyObject *base = PyUnicode_FromFormat("%U\x1f%U\x1f%U", PyList_GetItem(fields, 0),
                                              PyList_GetItem(fields, 1), PyList_GetItem(fields, 2));
        cls = base != NULL ? PyDict_GetItemWithError(classes, base) : NULL;
        Py_XDECREF(base);
    }
    if (cls != NULL || PyErr_Occurred()) {
        return Py_XNewRef(cls);
    }
    PyObject *dot = PyUnicode_FromString(".");
    PyObject *names = dot ? PyUnicode_Split(PyList_GetItem(fields, 1), dot, -1) : NULL;
    cls = names ? PyImport_Import(PyList_GetItem(fields, 0)) : NULL;
    for (Py_ssize_t i = 0; cls != NULL && i < PyList_Size(names); i++) {
        PyObject *next = PyObject_GetAttr(cls, PyList_GetItem(names, i));
        Py_DECREF(cls);
        cls = next;
    }
    Py_XDECREF(dot);
    Py_XDECREF(names);
    return cls;
}

int
cc_raise_site(const char *site)
{
    /* "module\x1fqualname\x1frepr(args)[\x1fgeneration]": the class kept
     * when the kernel compiled (cc_raise_register), the arguments read back */
    PyObject *text = PyUnicode_FromString(site), *sep = PyUnicode_FromString("\x1f");
    PyObject *fields = text && sep ? PyUnicode_Split(text, sep, 3) : NULL;
    PyObject *cls = NULL, *args = NULL;
    Py_XDECREF(sep);
    Py_ssize_t nfields = fields != NULL ? PyList_Size(fields) : 0;
    if (nfields == 3 || nfields == 4) {
        PyObject *ast = PyImport_ImportModule("ast");
        cls = site_class(text, fields);
        args = cls && ast ? PyObject_CallMethod(ast, "literal_eval", "O", PyList_GetItem(fields, 2))
                          : NULL;
        Py_XDECREF(ast);
    }
    if (args != NULL && PyTuple_Check(args) && PyExceptionClass_Check(cls)) {
        PyErr_SetObject(cls, args);
    } else {
        /* only a class no longer found there (cached code in another program) */
        PyErr_Clear();
        PyErr_Format(PyExc_RuntimeError, "a kernel raised %s, which cannot be made here", site);
    }
    Py_XDECREF(text);
    Py_XDECREF(fields);
    Py_XDECREF(cls);
    Py_XDECREF(args);
    return -1;
}

void
cc_raise_status(int status)
{
    const char *site = cc_take_raised();
    switch (status) {
    case CC_STATUS_RAISE:
        if (site != NULL) {
            cc_raise_site(site);
        } else {
            PyErr_SetString(PyExc_SystemError, "a kernel raised, but where was lost");
        }
        break;
    case CC_STATUS_INDEX:
        PyErr_SetString(PyExc_IndexError,
                        "index out of bounds, or a boolean index whose shape is not the array's, "
                        "in a guvectorize kernel (the check is on by default; boundscheck=False "
                        "turns it off)");
        break;
    case CC_STATUS_OVERFLOW:
        PyErr_SetString(PyExc_OverflowError,
                        "a uint64 index too large for an index (past int64) in a guvectorize "
                        "kernel");
        break;
    case CC_STATUS_SHAPE:
        PyErr_SetString(PyExc_ValueError,
                        "could not broadcast together the shapes of an array assignment or "
                        "expression in a guvectorize kernel");
        break;
    case CC_STATUS_VALUE:
        PyErr_SetString(PyExc_ValueError,
                        "a guvectorize kernel asked for a negative dimension, an array too big "
                        "for its size in bytes to fit int64, a zero slice step, an np.arange() "
                        "whose length cannot be computed (NaN) or is too large, or a reduction "
                        "of an empty (zero-size) array that has no identity");
        break;
    case CC_STATUS_KTH:
        PyErr_SetString(PyExc_ValueError, "kth out of bounds in np.partition() in a guvectorize "
                                          "kernel");
        break;
    case CC_STATUS_UNPACK:
        PyErr_SetString(PyExc_ValueError, "too many or not enough values to unpack: an array "
                                          "unpacked into names (a, b = row) is not that long, in "
                                          "a guvectorize kernel");
        break;
    case CC_STATUS_TRUTH:
        PyErr_SetString(PyExc_ValueError,
                        "The truth value of an array with more than one element, or none, is "
                        "ambiguous (an if, while or conditional expression in a guvectorize "
                        "kernel). Use a.any() or a.all()");
        break;
    case CC_STATUS_RESHAPE:
        PyErr_SetString(PyExc_ValueError,
                        "cannot reshape an array into a shape of another size, or with more than "
                        "one unknown (negative) dimension, in a guvectorize kernel (in a cuda "
                        "kernel also: an array that needs a copy to take the shape, not "
                        "C-contiguous)");
        break;
    case CC_STATUS_ZERO:
        PyErr_SetString(PyExc_ZeroDivisionError, "np.arange() with a step of zero in a "
                                                 "guvectorize kernel");
        break;
    case CC_STATUS_QUANTILE:
        PyErr_SetString(PyExc_ValueError, "Quantiles must be in the range [0, 1] (percentiles "
                                          "in [0, 100]) in a guvectorize kernel");
        break;
    default: /* CC_STATUS_NOMEM, or a copy that could not be made */
        PyErr_NoMemory();
    }
}

/* ---- the cache ---- */

/*
 * A stored entry, as numbavec/cache.py keeps it: (blob, IR text, return
 * kind, cost, {variable: type}, written-parameter mask | the statuses the
 * kernel may return << 32).  Links it through
 * the back end.  0, or -1 with an exception (the caller then compiles).
 */
static int
load_entry(const CcBackend *be, const CcBuilder *b, const char *base, PyObject *entry,
           const char *key, CcCompiled *out)
{
    PyObject *blob, *var_types;
    const char *ir, *ret;
    unsigned long long written;
    TsKind kind;
    CcEntries e;
    if (!PyArg_ParseTuple(entry, "OssdO!K", &blob, &ir, &ret, &out->cost_ns, &PyDict_Type,
                          &var_types, &written)) {
        return -1;
    }
    if (ts_kind_from_name(ret, strlen(ret), &kind) < 0) {
        PyErr_Format(PyExc_ValueError, "cache entry with an unknown return type '%s'", ret);
        return -1;
    }
    if (entry_names(b, base, &e) < 0 || be->load(be, key, blob, ir, &e, out) < 0) {
        return -1;
    }
    if (out->ksig.ret.kind != TS_VOID) {
        out->sig.ret.kind = out->ksig.ret.kind = kind;
    }
    for (int i = 0; i < TS_MAXARGS && i < 32; i++) {
        out->written[i] = (unsigned char)((written >> i) & 1);
    }
    out->fails = (unsigned)(written >> 32);
    out->var_types = Py_NewRef(var_types);
    return 0;
}

/* What a cache entry holds besides the code: (cache, key, return type,
 * cost, variable types, written parameters and failures), for store_made. */
static PyObject *
entry_context(PyObject *cache, PyObject *key, const CcCompiled *c)
{
    unsigned long long written = (unsigned long long)c->fails << 32;
    for (int i = 0; i < TS_MAXARGS && i < 32; i++) {
        written |= (unsigned long long)(c->written[i] != 0) << i;
    }
    TsKind ret = c->ksig.ret.kind == TS_VOID ? TS_VOID : c->sig.ret.kind;
    return Py_BuildValue("(OOsdOK)", cache, key, ts_kind_name(ret), c->cost_ns, c->var_types,
                         written);
}

/* Stores the object file and IR of compiled code under the entry_context
 * ctx (a CcStoreFn: called now, or by the code once made).  0/-1. */
static int
store_made(PyObject *ctx, PyObject *blob, const char *ir)
{
    PyObject *cache, *key, *cost, *var_types, *written;
    const char *ret;
    if (!PyArg_ParseTuple(ctx, "OOsOOO", &cache, &key, &ret, &cost, &var_types, &written)) {
        return -1;
    }
    PyObject *r = PyObject_CallMethod(cache, "store", "O(OssOOO)", key, blob, ir, ret, cost,
                                      var_types, written);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* cc_compile through k's cache: a hit links stored code and runs no LLVM
 * pass (1); a miss compiles and stores, now or (code made on demand) when
 * its machine code is made (0).  -1 with an exception. */
static int
compile_cached(CcFunction *fn, CcKernel *k, PyObject *capture, const CcBuilder *b,
               const CcBackend *be, const char *base, CcCompiled *out)
{
    PyObject *key = NULL, *entry = NULL, *blob = NULL, *ctx = NULL;
    int rc = -1;
    char sigbuf[TS_STRSIZE], label[TS_STRSIZE + 96], raises[32] = "";
    if (fn->raise_gen > 0) {
        /* its raise sites name classes kept apart from others of their name
         * (cc_raise_register): not the code of a kernel whose sites do not */
        snprintf(raises, sizeof(raises), "/raise-generation-%d", fn->raise_gen);
    }
    snprintf(label, sizeof(label), "%s/%s/%s/%s%s", be->name, be->variant ? be->variant : "",
             b->what, ts_signature_str(&out->sig, sigbuf, sizeof(sigbuf)), raises);
    key = PyObject_CallMethod(k->cache, "key", "sO", label, capture);
    const char *hex = key ? PyUnicode_AsUTF8AndSize(key, NULL) : NULL;
    if (hex == NULL || (entry = PyObject_CallMethod(k->cache, "load", "O", key)) == NULL) {
        goto done;
    }
    if (entry != Py_None) {
        CcCompiled hit = *out;
        if (load_entry(be, b, base, entry, hex, &hit) == 0) {
            *out = hit;
            rc = 1; /* a hit */
            goto done;
        }
        /* An entry that does not link is as good as a corrupt one. */
        PyErr_Clear();
        cc_compiled_clear(&hit);
    }
    if (compile_lowered(fn, k, b, be, base, hex, &blob, out) < 0) {
        goto done;
    }
    rc = 0;
    if (blob != NULL) {
        const char *ir = out->code != NULL ? cc_code_llvm(out->code)
                         : out->llvm != NULL && PyUnicode_Check(out->llvm)
                             ? PyUnicode_AsUTF8AndSize(out->llvm, NULL)
                             : "";
        rc = ir != NULL && (ctx = entry_context(k->cache, key, out)) != NULL
                 ? store_made(ctx, blob, ir)
                 : -1;
    } else if (out->code != NULL && !cc_code_made(out->code) && out->raise_sites == NULL) {
        if ((ctx = entry_context(k->cache, key, out)) == NULL) {
            rc = -1;
        } else {
            cc_code_store_when_made(out->code, store_made, ctx);
        }
    }
done:
    Py_XDECREF(key);
    Py_XDECREF(entry);
    Py_XDECREF(blob);
    Py_XDECREF(ctx);
    return rc;
}

/* ---- cc_compile ---- */

/*
 * Whether host code may wait for its first call.  Not when NUMBAVEC_DUMP
 * prints modules (their text comes at decoration, where it always did), nor
 * with NUMBAVEC_EAGER=1: a process that forks workers after decorating, for
 * one, compiles once in the parent instead of once in every child.
 */
static int
lazy_allowed(void)
{
    static int allowed = -1;
    if (allowed < 0) {
        const char *eager = getenv("NUMBAVEC_EAGER");
        allowed = !(eager != NULL && eager[0] != '\0' && strcmp(eager, "0") != 0);
    }
    return allowed && !(cc_dump_flags() & (CC_DUMP_LLVM | CC_DUMP_OPT | CC_DUMP_ASM));
}

/* sig with the kinds of its TS_INFER arrays (a dynamic gufunc's outputs
 * the call gave no type) found by typing fn for it, so that the cache key,
 * the builder and the ufunc's loop see ordinary kinds.  0/-1. */
static int
resolve_signature(CcFunction *fn, const TsSignature *sig, TsSignature *resolved)
{
    *resolved = *sig;
    for (int i = 0; i < sig->nargs; i++) {
        if (sig->args[i].kind == TS_INFER && sig->args[i].ndim > 0) {
            if (cc_typeinfer(fn, sig) < 0) {
                return -1;
            }
            cc_inferred_signature(fn, resolved);
            return 0;
        }
    }
    return 0;
}

/* ---- what a compilation reads ---- */

/*
 * What one compilation of k reads: the origin's environment(), i.e. the
 * capture it compiles from (*capture) and the function whose globals and
 * closure the compiler resolves names in (*env); without an origin, None
 * and k's own function.  New references; 0/-1.
 */
static int
environment(const CcKernel *k, PyObject **capture, PyObject **env)
{
    if (k->origin == NULL) {
        *capture = Py_NewRef(Py_None);
        *env = Py_NewRef(k->pyfunc);
        return 0;
    }
    PyObject *pair = PyObject_CallMethod(k->origin, "environment", NULL);
    if (pair == NULL) {
        return -1;
    }
    if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "numbavec: an origin's environment() is a pair");
        return -1;
    }
    *capture = Py_NewRef(PyTuple_GetItem(pair, 0));
    *env = Py_NewRef(PyTuple_GetItem(pair, 1));
    Py_DECREF(pair);
    return 0;
}

/* Tells k's origin that a signature compiled from capture (its first such
 * call fixes what every later compilation reads).  0/-1. */
static int
tell_compiled(const CcKernel *k, PyObject *capture)
{
    if (k->origin == NULL) {
        return 0;
    }
    PyObject *r = PyObject_CallMethod(k->origin, "compiled", "O", capture);
    Py_XDECREF(r);
    return r != NULL ? 0 : -1;
}

int
cc_compile(CcKernel *k, const TsSignature *sig, const CcBuilder *b, const CcBackend *be,
           const char *base, CcCompiled *out)
{
    CcFunction fn;
    TsSignature resolved;
    PyObject *capture = NULL, *env = NULL;
    int rc = -1, hit = 0;
    memset(out, 0, sizeof(*out));
    out->sig = *sig;
    out->lazy = k->lazy && lazy_allowed();
    if (k->pyfunc == NULL || k->funcdef == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "numbavec: the kernel's function was released");
        return -1;
    }
    if (environment(k, &capture, &env) < 0) {
        return -1;
    }
    if (function_init(&fn, k) < 0) {
        goto done;
    }
    double t0 = cc_now_ns();
    cc_time_reset();
    if (cc_lower(&fn, k->funcdef, env) < 0 || resolve_signature(&fn, sig, &resolved) < 0
        || kernel_signature(b, &fn, &resolved, out) < 0) {
        goto done;
    }
    cc_time_add(CC_T_LOWER, cc_now_ns() - t0);
    out->sig = resolved;
    if (k->cache != NULL && be->load != NULL) {
        rc = compile_cached(&fn, k, capture, b, be, base, out);
        hit = rc == 1;
        rc = rc < 0 ? -1 : 0;
    } else {
        rc = compile_lowered(&fn, k, b, be, base, NULL, NULL, out);
    }
    if (rc == 0) {
        rc = tell_compiled(k, capture);
    }
done:
    if (rc < 0) {
        name_kernel_in_error(k, be, sig);
        cc_compiled_clear(out);
    } else {
        record_stages(k, out, b, be, t0, hit);
    }
    cc_arena_free(fn.arena);
    Py_XDECREF(capture);
    Py_XDECREF(env);
    return rc;
}
