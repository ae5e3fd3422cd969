/*
 * cufunc.h - what the files of the cuda ufunc share (private to cufunc.c,
 * the object and its loops; cucall.c, its elementwise calls; cureduce.c,
 * its reduce).
 */
#ifndef NV_CUDA_CUFUNC_H
#define NV_CUDA_CUFUNC_H

#include "targets/cuda/cuda.h"

enum { CUDA_GRID_PER_SM = 32 };
/* A cuda gufunc launch whose threads walk rows of their own keeps, an SM,
 * at most CUDA_GU_L1_ROWS bytes of their L1 lines (CUDA_L1_LINE each) in
 * use, when that is fewer threads than CUDA_GU_L1_FREE (cugulaunch.c,
 * geometry): a quarter of an H100's L1, best of the budgets measured. */
enum { CUDA_L1_LINE = 128, CUDA_GU_L1_ROWS = 64 * 1024, CUDA_GU_L1_FREE = 1024 };

typedef struct CuLoop {
    int index; /* in f->loops: the symbol names' suffix */
    TsSignature sig;
    CudaCode code;
    CUmodule mod, rmod;
    CUfunction fn[CUDA_NENTRIES], red;
    int block[CUDA_NENTRIES], red_block;
} CuLoop;

typedef struct CuFunc {
    PyObject_HEAD PyObject *name, *doc, *identity, *backend;
    CcKernel *kernel;   /* owned: the decorated function, what every loop compiles */
    PyObject *resolver; /* numpy.ufunc with our loops and no-op bodies */
    PyObject *cache;    /* key tuple -> loop index */
    PyObject *dict;     /* __dict__: the decorator's inspect_types lives there */
    int nin, reorderable;
    int lazy; /* no signatures given: new input types compile new loops */
    char arch[16];
    int sm;              /* arch's number (90 for sm_90) */
    char arch_suffix[4]; /* "a" for sm_90a: that PTX loads on sm_90 alone */
    CuLoop **loops;      /* each its own allocation: a loop never moves (calls keep
                     * pointers across code that can add loops, or without the GIL) */
    Py_ssize_t nloops;
} CuFunc;

/* ---- operands ---- */

enum { OP_PYSCALAR, OP_SCALAR, OP_HOST, OP_DEVICE };

typedef struct Operand {
    int what;
    PyObject *obj;        /* owned: the ndarray, device array or scalar */
    PyArray_Descr *dtype; /* borrowed from obj; NULL for Python scalars */
    int nd;
    int foreign; /* a device array over another library's memory */
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    CUdeviceptr ptr;
    unsigned long long words[2];
    PyObject *dev; /* owned: the device copy of a host array */
} Operand;

/* ---- a call ---- */

typedef struct Call {
    CuFunc *f;
    int nin;
    Operand ops[TS_MAXARGS + 1]; /* inputs, then out (when given) */
    int have_out;
    PyObject *out_arg; /* borrowed */
    PyObject *stream;  /* borrowed */
    CUstream s;
    Py_ssize_t loop;
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS];
    int device; /* result on the device */
} Call;

/* ---- cufunc.c: the loops, for cucall.c and cureduce.c ---- */

int cf_can_reduce(CuFunc *f);     /* binary, with an identity or reorderable */
size_t cf_reduce_smem(int block); /* dynamic shared memory of a reduce block */
int cf_sm_count(void);            /* the device's SMs; -1 with an exception */
/* Loads loop l (and its reduce entry when want_reduce).  0/-1. */
int cf_ensure_loaded(CuFunc *f, CuLoop *l, int want_reduce);
/* NumPy's choice of loop for ops (lazy: may compile one); -1 on error. */
Py_ssize_t cf_resolve(CuFunc *f, const Operand *ops, int lazy);

/* ---- cucall.c: a call, for cufunc.c (its slots) and cureduce.c ---- */

/* f(*inputs, out=None, stream=None), the type's tp_call: new reference. */
PyObject *cf_call(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._plan(*args, out=None, sm_count=132, block=256) -> dict. */
PyObject *cf_plan(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._resolve(*args) -> the chosen loop as 'ff->f'. */
PyObject *cf_resolve_hook(PyObject *self, PyObject *args);
void cf_operands_clear(Operand *ops, int n);
int cf_classify(PyObject *obj, Operand *op); /* 0/-1 */
/* Each of the n operands over another library's memory must lie in a live
 * allocation (cuda_check_foreign_memory); run after the context is entered,
 * before anything launches.  0/-1. */
int cf_check_foreign(const Operand *ops, int n);
/* The bytes [lo, hi) an array at ptr spans (nd dimensions of shape and
 * strides, itemsize bytes an element): 0; 1 when it has no element (lo ==
 * hi); -1 when the extent does not fit an address (a foreign array's
 * strides). */
int cuda_extent(uintptr_t ptr, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
                Py_ssize_t itemsize, uintptr_t *lo, uintptr_t *hi);
/* cuda_extent of operand op at ptr; all addresses when it does not fit. */
void cf_extent(const Operand *op, uintptr_t ptr, uintptr_t *lo, uintptr_t *hi);
/* Which of n compiled signatures `which` names (any spelling of one, or
 * None when there is only one): its index, or -1 with TypeError/KeyError.
 * sig_of(loops, i) is the i-th signature (cuda ufuncs and gufuncs). */
Py_ssize_t cf_signature_index(PyObject *which,
                              const TsSignature *(*sig_of)(void *loops, Py_ssize_t i), void *loops,
                              Py_ssize_t n);
/* __reduce__ of the cuda ufunc and gufunc: numbavec._pickle.reduce_object,
 * by name where another process can import it, else by value. */
PyObject *cf_pickle_reduce(PyObject *self, PyObject *unused);
/* After a call of loop l (its reduce kernel when reduce): the raise its
 * kernel stored in its module's status word, as that exception (the word
 * cleared; waits for the device).  0 (none, or a kernel that cannot
 * raise), or -1 with the exception. */
int cf_check_raised(CuLoop *l, int reduce);
/* The device's compute capability as sm (90 for 9.0), or -1 with an error. */
int cf_device_sm(void);
int cf_is_kind(PyArray_Descr *d, TsKind k); /* d holds kind k's values, natively */
/* Device copies in kind k: a device operand cast, a host operand uploaded.
 * Both use c->stream alone. 0/-1. */
int cf_cast_input(Call *c, Operand *op, TsKind kind);
/* dst[...] = src[...] converted (device arrays of any shapes NumPy
 * broadcasts, dtypes of ours), queued on stream by the identity cuda ufunc
 * numbavec.cuda._cast_ufunc(src.dtype, dst.dtype).  0/-1. */
int cf_device_cast(PyObject *src, PyObject *dst, PyObject *stream);
/* obj (a host array, scalar or number) as a new C-contiguous device array
 * of kind, copied on stream (NumPy converts it first).  New reference. */
PyObject *cf_to_device(PyObject *obj, TsKind kind, PyObject *stream);
int cf_upload(Call *c, Operand *op, TsKind kind);

/* The test hooks' keywords without sm_count= and block= (default 132, 256),
 * which go to *sms and *block: a new dict, or NULL with an exception. */
PyObject *cf_hook_kwargs(PyObject *kwargs, int *sms, int *block);

/* ---- cureduce.c ---- */

/* f.reduce(array, axis=0, stream=None) */
PyObject *cf_reduce(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._reduce_plan(array, axis=0, sm_count=132, block=256). */
PyObject *cf_reduce_plan(PyObject *self, PyObject *args, PyObject *kwargs);

#endif /* NV_CUDA_CUFUNC_H */
