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
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int nvvmResult;
enum { NVVM_ERROR_OUT_OF_MEMORY = 1 }; /* nvvm.h's value */
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
        if (n > 0 && fp != NULL) { /* read whole, but no memory to hold it */
            PyErr_NoMemory();
        } else {
            PyErr_Format(nv_state.cuda_support_error, "cannot read %s", path);
        }
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
        const char *why = dlerror();
        snprintf(toolkit.nvvm_error, sizeof(toolkit.nvvm_error), "cannot load %s: %s", path, why);
        /* no memory to map it (ulimit -v): tried again next time */
        toolkit.nvvm_tried = why == NULL || strstr(why, "map") == NULL;
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

/* ---- a compilation ---- */

/* What one libNVVM compilation gave: the PTX, or the failing step's result
 * and the program's log.  Made without the Python C API (nvvm_run may run
 * in a forked child); text is malloc'd. */
typedef struct NvvmRun {
    int r;    /* 0, or the failing call's nvvmResult */
    int step; /* which call failed: nvvm_steps */
    char *text;
    size_t size;
} NvvmRun;

static const char *const nvvm_steps[] = {
    "nvvmCreateProgram", "adding the kernel module",  "adding libdevice",
    "compilation",       "nvvmGetCompiledResultSize", "nvvmGetCompiledResult",
};

/* The log of prog into run->text (none when it cannot be had). */
static void
take_log(nvvmProgram prog, NvvmRun *run)
{
    size_t size = 0;
    if (prog != NULL && toolkit.nvvm.GetProgramLogSize(prog, &size) == 0 && size > 1
        && (run->text = malloc(size)) != NULL) {
        if (toolkit.nvvm.GetProgramLog(prog, run->text) != 0) {
            run->text[0] = '\0';
        }
        run->size = strlen(run->text);
    }
}

static void
nvvm_run(const char *ir, size_t size, const char *ld, size_t ld_size, int argc, const char **argv,
         NvvmRun *run)
{
    nvvmProgram prog = NULL;
    memset(run, 0, sizeof(*run));
    nvvmResult r = toolkit.nvvm.CreateProgram(&prog);
    if (r == 0 && (run->step = 1)) {
        r = toolkit.nvvm.AddModuleToProgram(prog, ir, size, "kernel");
    }
    if (r == 0 && (run->step = 2)) {
        r = toolkit.nvvm.LazyAddModuleToProgram(prog, ld, ld_size, "libdevice");
    }
    if (r == 0 && (run->step = 3)) {
        r = toolkit.nvvm.CompileProgram(prog, argc, argv);
    }
    if (r == 0 && (run->step = 4)) {
        r = toolkit.nvvm.GetCompiledResultSize(prog, &run->size);
    }
    if (r == 0 && (run->step = 5)) {
        run->text = malloc(run->size + 1);
        r = run->text == NULL ? NVVM_ERROR_OUT_OF_MEMORY
                              : toolkit.nvvm.GetCompiledResult(prog, run->text);
    }
    if (r == 0) {
        run->text[run->size] = '\0';
        run->size = strlen(run->text);
    } else {
        free(run->text);
        run->text = NULL;
        run->size = 0;
        run->r = r;
        take_log(prog, run);
    }
    if (prog != NULL) {
        toolkit.nvvm.DestroyProgram(&prog);
    }
}

/* The PTX of a run, or NULL with its error (frees run->text). */
static PyObject *
run_result(NvvmRun *run)
{
    PyObject *ptx = NULL;
    if (run->r == 0) {
        ptx = PyUnicode_FromStringAndSize(run->text, (Py_ssize_t)run->size);
    } else if (run->r == NVVM_ERROR_OUT_OF_MEMORY) {
        PyErr_NoMemory();
    } else {
        PyErr_Format(nv_state.cuda_error, "libNVVM %s failed: %s%s%s", nvvm_steps[run->step],
                     toolkit.nvvm.GetErrorString(run->r), run->size ? "\n" : "",
                     run->text ? run->text : "");
    }
    free(run->text);
    run->text = NULL;
    return ptx;
}

/* ---- in a forked child, where malloc can fail ---- */

/*
 * libNVVM has an LLVM of its own, whose out-of-memory path writes "LLVM
 * ERROR: out of memory" and aborts: no handler of ours reaches it.  Where
 * malloc can fail (an address-space or data limit: ulimit -v), the
 * compilation runs in a child forked for it, which writes the run into a
 * pipe; a child that dies is the parent's MemoryError (its stderr said it
 * ran out of memory) or CudaError.  Without a limit, malloc does not fail
 * (the kernel's overcommit), and libNVVM runs here, as it always did.
 */
static int
memory_limited(void)
{
    struct rlimit as, data;
    return (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
           || (getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY);
}

/* Writes all of buf to fd (the child's side); 0/-1. */
static int
write_all(int fd, const void *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        done += (size_t)w;
    }
    return 0;
}

/* Reads fd to its end into a malloc'd buffer, *size bytes and a '\0';
 * NULL without memory. */
static char *
read_all(int fd, size_t *size)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (len + 1 >= cap) {
            char *grown = realloc(buf, cap *= 2);
            if (grown == NULL) {
                free(buf);
                return NULL;
            }
            buf = grown;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            buf[len] = '\0';
            *size = len;
            break;
        }
        len += (size_t)got;
    }
    return buf;
}

/* The child: the run into fd as (r, step, size, text); never returns. */
static void
child_run(int fd, const char *ir, size_t size, const char *ld, size_t ld_size, int argc,
          const char **argv)
{
    NvvmRun run;
    nvvm_run(ir, size, ld, ld_size, argc, argv, &run);
    int head[2] = {run.r, run.step};
    int ok = write_all(fd, head, sizeof(head)) == 0 && write_all(fd, &run.size, sizeof(size_t)) == 0
             && write_all(fd, run.text != NULL ? run.text : "", run.size) == 0;
    _exit(ok ? 0 : 1);
}

/* What ended a child that wrote no run: MemoryError when it ran out of
 * memory (its stderr, in errfd, says so, or it could not start), else
 * CudaError with what it wrote. */
static PyObject *
child_died(int status, int errfd)
{
    size_t n = 0;
    char *err = NULL;
    if (lseek(errfd, 0, SEEK_SET) == 0) {
        err = read_all(errfd, &n);
    }
    if (err == NULL || strstr(err, "out of memory") != NULL || strstr(err, "bad_alloc") != NULL) {
        PyErr_NoMemory();
    } else {
        PyErr_Format(nv_state.cuda_error, "libNVVM ended (status %d): %s", status, err);
    }
    free(err);
    return NULL;
}

static PyObject *
run_in_child(const char *ir, size_t size, const char *ld, size_t ld_size, int argc,
             const char **argv)
{
    int fds[2], errfd = memfd_create("numbavec-nvvm-stderr", MFD_CLOEXEC);
    if (errfd < 0 || pipe2(fds, O_CLOEXEC) < 0) {
        if (errfd >= 0) {
            close(errfd);
        }
        return PyErr_NoMemory();
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(errfd, 2);
        child_run(fds[1], ir, size, ld, ld_size, argc, argv);
    }
    close(fds[1]);
    size_t got = 0;
    char *all = pid > 0 ? read_all(fds[0], &got) : NULL;
    close(fds[0]);
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    PyObject *ptx = NULL;
    NvvmRun run = {0};
    size_t head = 2 * sizeof(int) + sizeof(size_t);
    if (all != NULL && got >= head && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        memcpy(&run.r, all, sizeof(int));
        memcpy(&run.step, all + sizeof(int), sizeof(int));
        memcpy(&run.size, all + 2 * sizeof(int), sizeof(size_t));
        if (run.size == got - head && (run.text = malloc(run.size + 1)) != NULL) {
            memcpy(run.text, all + head, run.size);
            run.text[run.size] = '\0';
            ptx = run_result(&run);
        } else {
            PyErr_NoMemory();
        }
    } else {
        child_died(status, errfd);
    }
    free(all);
    close(errfd);
    return ptx;
}

PyObject *
cuda_nvvm_compile(const char *ir, size_t size, const char *arch, const char *const *opts)
{
    if (load_nvvm() < 0) {
        if (toolkit.nvvm_tried) {
            PyErr_SetString(nv_state.cuda_support_error, toolkit.nvvm_error);
        } else {
            PyErr_NoMemory(); /* load_nvvm: no memory to map it */
        }
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
    if (memory_limited()) {
        return run_in_child(ir, size, ld, ld_size, argc, argv);
    }
    NvvmRun run;
    nvvm_run(ir, size, ld, ld_size, argc, argv, &run);
    return run_result(&run);
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
