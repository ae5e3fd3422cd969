/*
 * toolkit.c - the parts of the CUDA toolkit PTX generation uses: libNVVM and
 * libdevice.10.bc, found at run time and opened with dlopen.
 *
 * Searched, first match wins: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda,
 * /usr/local/cuda-*, and NVIDIA's pip wheels (site-packages/nvidia/cuda_nvcc,
 * nvidia/cu13, nvidia/cu12) on sys.path; in each root the usual nvvm/lib64
 * and also nvvm/lib, nvvm/bin, lib64 and lib (CUDA 13 tarballs put
 * libnvvm.so in lib/).  The finding is done once and kept in `toolkit`.
 */
#include "targets/cuda/driver/driver.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>

typedef int nvvmResult;
typedef struct _nvvmProgram *nvvmProgram;

typedef struct Nvvm {
    nvvmResult (*Version)(int *major, int *minor);
    nvvmResult (*IRVersion)(int *ir_major, int *ir_minor, int *dbg_major, int *dbg_minor);
    nvvmResult (*CreateProgram)(nvvmProgram *p);
    nvvmResult (*DestroyProgram)(nvvmProgram *p);
    nvvmResult (*AddModuleToProgram)(nvvmProgram p, const char *buf, size_t size, const char *name);
    nvvmResult (*LazyAddModuleToProgram)(nvvmProgram p, const char *buf, size_t size,
                                         const char *name);
    nvvmResult (*CompileProgram)(nvvmProgram p, int nopts, const char **opts);
    nvvmResult (*GetCompiledResultSize)(nvvmProgram p, size_t *size);
    nvvmResult (*GetCompiledResult)(nvvmProgram p, char *buf);
    nvvmResult (*GetProgramLogSize)(nvvmProgram p, size_t *size);
    nvvmResult (*GetProgramLog)(nvvmProgram p, char *buf);
    const char *(*GetErrorString)(nvvmResult r);
} Nvvm;

/* What was found, once per process (guarded by the GIL). */
static struct {
    int searched;
    char libnvvm[1024], libdevice[1024];
    int nvvm_tried;
    void *nvvm_handle;
    Nvvm nvvm;
    char nvvm_error[2200];
    char *libdevice_bytes;
    size_t libdevice_size;
} toolkit;

/* ---- search ---- */

static int
first_match(const char *root, const char *const *patterns, char *out, size_t size)
{
    for (size_t k = 0; patterns[k] != NULL; k++) {
        char pat[1024];
        glob_t g;
        snprintf(pat, sizeof(pat), "%s/%s", root, patterns[k]);
        if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
            /* the last in sorted order: the newest libnvvm.so.N */
            snprintf(out, size, "%s", g.gl_pathv[g.gl_pathc - 1]);
            globfree(&g);
            return 1;
        }
        globfree(&g);
    }
    return 0;
}

static const char *const nvvm_patterns[] = {
    "nvvm/lib64/libnvvm.so*", "nvvm/lib/libnvvm.so*", "nvvm/bin/libnvvm.so*",
    "lib64/libnvvm.so*",      "lib/libnvvm.so*",      NULL,
};
static const char *const libdevice_patterns[] = {
    "nvvm/libdevice/libdevice.10.bc",
    "nvvm/libdevice/libdevice*.bc",
    NULL,
};

static void
search_root(const char *root)
{
    if (root == NULL || root[0] == '\0') {
        return;
    }
    if (toolkit.libnvvm[0] == '\0') {
        first_match(root, nvvm_patterns, toolkit.libnvvm, sizeof(toolkit.libnvvm));
    }
    if (toolkit.libdevice[0] == '\0') {
        first_match(root, libdevice_patterns, toolkit.libdevice, sizeof(toolkit.libdevice));
    }
}

/* NVIDIA's wheels: <site-packages>/nvidia/{cuda_nvcc,cu13,cu12} on sys.path. */
static void
search_wheels(void)
{
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (path == NULL || !PyList_Check(path)) {
        return;
    }
    static const char *const subdirs[] = {"nvidia/cuda_nvcc", "nvidia/cu13", "nvidia/cu12", NULL};
    for (Py_ssize_t i = 0; i < PyList_Size(path); i++) {
        PyObject *item = PyList_GetItem(path, i);
        const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, NULL) : NULL;
        if (dir == NULL) {
            PyErr_Clear();
            continue;
        }
        for (size_t k = 0; subdirs[k] != NULL; k++) {
            char root[1024];
            snprintf(root, sizeof(root), "%s/%s", dir, subdirs[k]);
            search_root(root);
        }
    }
}

static void
search(void)
{
    if (toolkit.searched) {
        return;
    }
    toolkit.searched = 1;
    search_root(getenv("CUDA_HOME"));
    search_root(getenv("CUDA_PATH"));
    search_root("/usr/local/cuda");
    glob_t g;
    if (glob("/usr/local/cuda-*", 0, NULL, &g) == 0) {
        for (size_t k = g.gl_pathc; k-- > 0;) { /* newest version first */
            search_root(g.gl_pathv[k]);
        }
    }
    globfree(&g);
    search_wheels();
}

const char *
cuda_libnvvm_path(void)
{
    search();
    return toolkit.libnvvm[0] ? toolkit.libnvvm : NULL;
}

const char *
cuda_libdevice_path(void)
{
    search();
    return toolkit.libdevice[0] ? toolkit.libdevice : NULL;
}

const char *
cuda_libdevice_bytes(size_t *size)
{
    if (toolkit.libdevice_bytes != NULL) {
        *size = toolkit.libdevice_size;
        return toolkit.libdevice_bytes;
    }
    const char *path = cuda_libdevice_path();
    if (path == NULL) {
        PyErr_SetString(nv_state.cuda_support_error,
                        "libdevice.10.bc not found (searched CUDA_HOME, CUDA_PATH, "
                        "/usr/local/cuda*/nvvm/libdevice and NVIDIA's pip wheels): "
                        "install the CUDA toolkit or nvidia-cuda-nvcc");
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    char *buf = NULL;
    long n = -1;
    if (fp != NULL && fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0
        && fseek(fp, 0, SEEK_SET) == 0 && (buf = PyMem_Malloc((size_t)n)) != NULL
        && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        PyMem_Free(buf);
        buf = NULL;
    }
    if (fp != NULL) {
        fclose(fp);
    }
    if (buf == NULL) {
        PyErr_Format(nv_state.cuda_support_error, "cannot read %s", path);
        return NULL;
    }
    toolkit.libdevice_bytes = buf;
    toolkit.libdevice_size = (size_t)n;
    *size = toolkit.libdevice_size;
    return buf;
}

/* ---- libNVVM ---- */

static int
load_nvvm(void)
{
    if (toolkit.nvvm_tried) {
        return toolkit.nvvm_handle != NULL ? 0 : -1;
    }
    toolkit.nvvm_tried = 1;
    const char *path = cuda_libnvvm_path();
    if (path == NULL) {
        snprintf(toolkit.nvvm_error, sizeof(toolkit.nvvm_error),
                 "libNVVM not found (searched CUDA_HOME, CUDA_PATH, /usr/local/cuda*/"
                 "{nvvm/lib64,nvvm/lib,nvvm/bin,lib64,lib} and NVIDIA's pip wheels)");
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(toolkit.nvvm_error, sizeof(toolkit.nvvm_error), "cannot load %s: %s", path,
                 dlerror());
        return -1;
    }
    static const char *const names[] = {
        "nvvmVersion",
        "nvvmIRVersion",
        "nvvmCreateProgram",
        "nvvmDestroyProgram",
        "nvvmAddModuleToProgram",
        "nvvmLazyAddModuleToProgram",
        "nvvmCompileProgram",
        "nvvmGetCompiledResultSize",
        "nvvmGetCompiledResult",
        "nvvmGetProgramLogSize",
        "nvvmGetProgramLog",
        "nvvmGetErrorString",
    };
    void **slots = (void **)&toolkit.nvvm;
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if ((slots[k] = dlsym(h, names[k])) == NULL) {
            snprintf(toolkit.nvvm_error, sizeof(toolkit.nvvm_error), "%s lacks %s", path, names[k]);
            dlclose(h);
            return -1;
        }
    }
    toolkit.nvvm_handle = h;
    return 0;
}

int
cuda_nvvm_available(void)
{
    return load_nvvm() == 0;
}

static int
nvvm_check(nvvmResult r, nvvmProgram prog, const char *what)
{
    if (r == 0) {
        return 0;
    }
    size_t size = 0;
    char *log = NULL;
    if (prog != NULL && toolkit.nvvm.GetProgramLogSize(prog, &size) == 0 && size > 1
        && (log = PyMem_Malloc(size)) != NULL && toolkit.nvvm.GetProgramLog(prog, log) != 0) {
        log[0] = '\0';
    }
    PyErr_Format(nv_state.cuda_error, "libNVVM %s failed: %s%s%s", what,
                 toolkit.nvvm.GetErrorString(r), log && log[0] ? "\n" : "", log ? log : "");
    PyMem_Free(log);
    return -1;
}

PyObject *
cuda_nvvm_compile(const char *ir, size_t size, const char *arch, const char *const *opts)
{
    if (load_nvvm() < 0) {
        PyErr_SetString(nv_state.cuda_support_error, toolkit.nvvm_error);
        return NULL;
    }
    size_t ld_size;
    const char *ld = cuda_libdevice_bytes(&ld_size);
    if (ld == NULL) {
        return NULL;
    }
    const char *argv[16];
    char arch_opt[64];
    int argc = 0;
    snprintf(arch_opt, sizeof(arch_opt), "-arch=%s", arch);
    argv[argc++] = arch_opt;
    for (int k = 0; opts != NULL && opts[k] != NULL && argc < 16; k++) {
        argv[argc++] = opts[k];
    }
    nvvmProgram prog = NULL;
    PyObject *result = NULL;
    char *ptx = NULL;
    size_t ptx_size = 0;
    if (nvvm_check(toolkit.nvvm.CreateProgram(&prog), NULL, "nvvmCreateProgram") < 0) {
        return NULL;
    }
    if (nvvm_check(toolkit.nvvm.AddModuleToProgram(prog, ir, size, "kernel"), prog,
                   "adding the kernel module")
            < 0
        || nvvm_check(toolkit.nvvm.LazyAddModuleToProgram(prog, ld, ld_size, "libdevice"), prog,
                      "adding libdevice")
               < 0
        || nvvm_check(toolkit.nvvm.CompileProgram(prog, argc, argv), prog, "compilation") < 0
        || nvvm_check(toolkit.nvvm.GetCompiledResultSize(prog, &ptx_size), prog,
                      "nvvmGetCompiledResultSize")
               < 0) {
        goto error;
    }
    if ((ptx = PyMem_Malloc(ptx_size + 1)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    if (nvvm_check(toolkit.nvvm.GetCompiledResult(prog, ptx), prog, "nvvmGetCompiledResult") < 0) {
        goto error;
    }
    ptx[ptx_size] = '\0';
    result = PyUnicode_FromString(ptx);
error:
    PyMem_Free(ptx);
    toolkit.nvvm.DestroyProgram(&prog);
    return result;
}

PyObject *
cuda_toolkit_info(void)
{
    PyObject *d = PyDict_New();
    if (d == NULL) {
        return NULL;
    }
    const char *nvvm = cuda_libnvvm_path(), *ld = cuda_libdevice_path();
    PyObject *version = Py_None, *ir_version = Py_None;
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    int major, minor, dmaj, dmin;
    if (load_nvvm() == 0 && toolkit.nvvm.Version(&major, &minor) == 0) {
        Py_DECREF(version);
        version = Py_BuildValue("(ii)", major, minor);
    }
    if (toolkit.nvvm_handle && toolkit.nvvm.IRVersion(&major, &minor, &dmaj, &dmin) == 0) {
        Py_DECREF(ir_version);
        ir_version = Py_BuildValue("(ii)", major, minor);
    }
    PyObject *nvvm_s = nvvm ? PyUnicode_FromString(nvvm) : Py_NewRef(Py_None);
    PyObject *ld_s = ld ? PyUnicode_FromString(ld) : Py_NewRef(Py_None);
    PyObject *err =
        toolkit.nvvm_handle ? Py_NewRef(Py_None) : PyUnicode_FromString(toolkit.nvvm_error);
    if (version == NULL || ir_version == NULL || nvvm_s == NULL || ld_s == NULL || err == NULL
        || PyDict_SetItemString(d, "libnvvm", nvvm_s) < 0
        || PyDict_SetItemString(d, "libdevice", ld_s) < 0
        || PyDict_SetItemString(d, "nvvm_version", version) < 0
        || PyDict_SetItemString(d, "nvvm_ir_version", ir_version) < 0
        || PyDict_SetItemString(d, "nvvm_error", err) < 0) {
        Py_CLEAR(d);
    }
    Py_XDECREF(version);
    Py_XDECREF(ir_version);
    Py_XDECREF(nvvm_s);
    Py_XDECREF(ld_s);
    Py_XDECREF(err);
    return d;
}
