/*
 * testhooks.c - internals of the loop and JIT layers exposed to the tests.
 *
 * Lets tests/ufunc/test_loops.py build a ufunc from hand-written LLVM IR, without
 * the kernel compiler, so that the loop wrappers (loops.c), the JIT (jit.c)
 * and ufunc creation (ufunc.c) are tested on their own:
 *
 *   _core._ufunc_from_ir(ir, kernel, types, name="f", identity=None)
 *   _core._code_llvm(code) / _core._code_asm(code)   code: _core._code_of(f)
 *   _core._jit_info()  -> {cpu, features, llvm_version, libmvec, live_codes,
 *                          compilations, object_loads, pending, quick,
 *                          llvm_threw: steps LLVM threw in (guard.h),
 *                          outlined: functions long kernels were cut into}
 */
#include "vectorize/vectorize.h"

#include "compiler/guard.h"

#include <string.h>

#include <llvm-c/IRReader.h>

#define CODE_CAPSULE "numbavec._core.CcCode"
#define LOOP_NAME    "numbavec_loop"

/* NumPy type characters the hooks accept. */
static const struct {
    char c;
    TsKind kind;
    int typenum;
} type_chars[] = {
    {'?', TS_BOOL, NPY_BOOL},          {'b', TS_INT8, NPY_BYTE},
    {'B', TS_UINT8, NPY_UBYTE},        {'h', TS_INT16, NPY_SHORT},
    {'H', TS_UINT16, NPY_USHORT},      {'i', TS_INT32, NPY_INT},
    {'I', TS_UINT32, NPY_UINT},        {'l', TS_INT64, NPY_LONG},
    {'L', TS_UINT64, NPY_ULONG},       {'q', TS_INT64, NPY_LONGLONG},
    {'Q', TS_UINT64, NPY_ULONGLONG},   {'f', TS_FLOAT32, NPY_FLOAT},
    {'d', TS_FLOAT64, NPY_DOUBLE},     {'F', TS_COMPLEX64, NPY_CFLOAT},
    {'D', TS_COMPLEX128, NPY_CDOUBLE},
};

static int
type_char(char c, TsKind *kind, char *typenum)
{
    for (size_t i = 0; i < sizeof(type_chars) / sizeof(type_chars[0]); i++) {
        if (type_chars[i].c == c) {
            *kind = type_chars[i].kind;
            *typenum = (char)type_chars[i].typenum;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "unsupported type character '%c'", c);
    return -1;
}

/* "ff->f" into sig and NumPy's type numbers (nin + 1 of them).  0/-1. */
static int
parse_types(const char *types, TsSignature *sig, char *typenums)
{
    const char *arrow = strstr(types, "->");
    if (arrow == NULL || strlen(arrow + 2) != 1 || arrow - types > TS_MAXARGS) {
        PyErr_Format(PyExc_ValueError, "types must look like 'ff->f', not '%s'", types);
        return -1;
    }
    memset(sig, 0, sizeof(*sig));
    sig->nargs = (int)(arrow - types);
    for (int k = 0; k < sig->nargs; k++) {
        if (type_char(types[k], &sig->args[k].kind, &typenums[k]) < 0) {
            return -1;
        }
    }
    return type_char(arrow[2], &sig->ret.kind, &typenums[sig->nargs]);
}

/* Replaces m's empty module by the parsed text, keeping triple and layout. */
static int
parse_ir_into(CcModule *m, const char *ir, Py_ssize_t len, const char *name)
{
    LLVMModuleRef parsed = NULL;
    char *msg = NULL;
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, (size_t)len, name);
    if (LLVMParseIRInContext(m->ctx, buf, &parsed, &msg)) { /* consumes buf */
        PyErr_Format(PyExc_ValueError, "invalid LLVM IR: %s", msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMSetTarget(parsed, LLVMGetTarget(m->mod));
    LLVMSetDataLayout(parsed, LLVMGetDataLayoutStr(m->mod));
    LLVMSetModuleIdentifier(parsed, name, strlen(name));
    LLVMDisposeModule(m->mod);
    m->mod = parsed;
    return 0;
}

static void
code_capsule_destructor(PyObject *capsule)
{
    cc_code_free(PyCapsule_GetPointer(capsule, CODE_CAPSULE));
}

/* Compiles the loop around `kernel` in m (consumed); a new capsule or NULL. */
static PyObject *
compile_loop(CcModule *m, const char *kernel, const TsSignature *sig, void **loop)
{
    LLVMValueRef fn = LLVMGetNamedFunction(m->mod, kernel);
    if (fn == NULL) {
        PyErr_Format(PyExc_ValueError, "the IR defines no function '%s'", kernel);
        cc_module_dispose(m);
        return NULL;
    }
    if (vz_emit_loop(m->mod, fn, sig, LOOP_NAME) == NULL) {
        cc_module_dispose(m);
        return NULL;
    }
    const char *names[1] = {LOOP_NAME};
    CcCode *code = cc_jit_add(m, names, loop, 1);
    if (code == NULL) {
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(code, CODE_CAPSULE, code_capsule_destructor);
    if (capsule == NULL) {
        cc_code_free(code);
    }
    return capsule;
}

static PyObject *
ufunc_from_ir(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ir", "kernel", "types", "name", "identity", NULL};
    const char *ir, *kernel, *types, *name = "f";
    Py_ssize_t ir_len;
    PyObject *identity = Py_None;
    TsSignature sig;
    char typenums[TS_MAXARGS + 1];
    CcModule m;
    void *loop = NULL;
    /* "s" and strlen, not "s#": an abi3 build against CPython 3.13's
     * headers calls the PyArg function that, on 3.10-3.12, refuses '#'
     * formats (PY_SSIZE_T_CLEAN no longer selects the _SizeT one) */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sss|sO:_ufunc_from_ir", kwlist, &ir, &kernel,
                                     &types, &name, &identity)) {
        return NULL;
    }
    ir_len = (Py_ssize_t)strlen(ir);
    if (parse_types(types, &sig, typenums) < 0 || cc_module_new(&m, name) < 0) {
        return NULL;
    }
    if (parse_ir_into(&m, ir, ir_len, name) < 0) {
        cc_module_dispose(&m);
        return NULL;
    }
    PyObject *capsule = compile_loop(&m, kernel, &sig, &loop);
    if (capsule == NULL) {
        return NULL;
    }
    PyUFuncGenericFunction func = (PyUFuncGenericFunction)loop;
    void *data = NULL;
    VzUfuncSpec spec = {.name = name,
                        .doc = "A ufunc built from LLVM IR (test hook).",
                        .nin = sig.nargs,
                        .nout = 1,
                        .ntypes = 1,
                        .funcs = &func,
                        .data = &data,
                        .types = typenums,
                        .identity = identity,
                        .owner = capsule};
    PyObject *ufunc = vz_make_ufunc(&spec);
    Py_DECREF(capsule);
    return ufunc;
}

static CcCode *
code_from_capsule(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, CODE_CAPSULE); /* NULL with an exception */
}

static PyObject *
code_llvm(PyObject *self, PyObject *capsule)
{
    CcCode *code = code_from_capsule(capsule);
    const char *ir = code != NULL ? cc_code_llvm(code) : NULL;
    return ir != NULL ? PyUnicode_FromString(ir) : NULL;
}

static PyObject *
code_asm(PyObject *self, PyObject *capsule)
{
    CcCode *code = code_from_capsule(capsule);
    return code == NULL ? NULL : cc_code_asm(code);
}

static PyObject *
jit_info(PyObject *self, PyObject *unused)
{
    if (cc_jit_init() < 0) {
        return NULL;
    }
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:O,s:n,s:n,s:n,s:n,s:n,s:l,s:n}", "cpu", cc_host_cpu_name(), "features",
        cc_host_cpu_features(), "llvm_version", NUMBAVEC_LLVM_VERSION_STRING, "libmvec",
        cc_jit_has_libmvec() ? Py_True : Py_False, "live_codes", cc_jit_live_codes(),
        "compilations", cc_jit_compilations(), "object_loads", cc_jit_object_loads(), "pending",
        cc_jit_pending(), "quick", cc_jit_quick_compilations(), "llvm_threw", cg_thrown(),
        "outlined", cc_jit_outlined());
}

static PyMethodDef testhook_methods[] = {
    {"_ufunc_from_ir", (PyCFunction)(void (*)(void))ufunc_from_ir, METH_VARARGS | METH_KEYWORDS,
     "_ufunc_from_ir(ir, kernel, types, name='f', identity=None)\n"
     "A ufunc whose loop calls the internal function `kernel` of `ir` (tests)."},
    {"_code_llvm", code_llvm, METH_O, "Optimised LLVM IR of _code_of(ufunc) (a test hook's)."},
    {"_code_asm", code_asm, METH_O, "Assembly of _code_of(ufunc) (a test hook's)."},
    {"_jit_info", jit_info, METH_NOARGS,
     "The host JIT: cpu, features, llvm_version, "
     "libmvec, live_codes."},
    {NULL, NULL, 0, NULL},
};

int
vz_init_testhooks(PyObject *module)
{
    return PyModule_AddFunctions(module, testhook_methods);
}
