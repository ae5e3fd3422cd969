/*
 * ufunc.h - cuda/ufunc/: the cuda ufunc and gufunc (what @vectorize and
 * @guvectorize with target='cuda' make), their calls and the ufunc's
 * reduce (Numba's cuda/vectorizers.py and deviceufunc.py).  The interface
 * of this folder, with a section per file; cudamodule.c includes it (the
 * registration, and the cuda target's factories for target.h), and it
 * includes the three folders below it and src/gufunc (layouts, bodies).
 *
 *   operand.c     the operands of a call: what an argument is, its extent, its device copies
 *   call.c        the skeleton of a call (parse, resolve, load, stage or place and
 *                 launch, finish, clear), which both kinds follow
 *   cufunc.c      the cuda ufunc object and its loops: compiled, loaded, chosen
 *   cucall.c      a cuda ufunc's kind of call: broadcasting, launch plan, out=, copies
 *   cureduce.c    its reduce
 *   cugufunc.c    the cuda gufunc object, its compilation and loading
 *   cugucall.c    a cuda gufunc's kind of call, the host side: axes=, loop, dimensions
 *   cugulaunch.c  its device side: the descriptor, the launch, staged host calls
 *
 * Cross-file names take the prefix cu_ (types Cu, constants CU_; the
 * driver's own constants are drvapi.h's CU_DEVICE_ATTRIBUTE_... and the
 * like, none of them CU_OP_ or CU_GU_).
 */
#ifndef NV_CUDA_UFUNC_H
#define NV_CUDA_UFUNC_H

#include "gufunc/gufunc.h"
#include "targets/cuda/array/array.h"
#include "targets/cuda/codegen/codegen.h"
#include "targets/cuda/driver/driver.h"

enum { CU_GRID_PER_SM = 32 };
/* A cuda gufunc launch whose threads walk rows of their own keeps, an SM,
 * at most CU_GU_L1_ROWS bytes of their L1 lines (CU_L1_LINE each) in
 * use, when that is fewer threads than CU_GU_L1_FREE (cugulaunch.c,
 * geometry): a quarter of an H100's L1, best of the budgets measured. */
enum { CU_L1_LINE = 128, CU_GU_L1_ROWS = 64 * 1024, CU_GU_L1_FREE = 1024 };

typedef struct CuLoop {
    int index; /* in f->loops: the symbol names' suffix */
    TsSignature sig;
    PtxCode code;
    CUmodule mod, rmod;
    CUfunction fn[PTX_NENTRIES], red;
    int block[PTX_NENTRIES], red_block;
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

enum { CU_OP_PYSCALAR, CU_OP_SCALAR, CU_OP_HOST, CU_OP_DEVICE };

/* One argument of a call (operand.c): what it is, its array geometry, and
 * where the kernel finds it. */
typedef struct CuOperand {
    int what;             /* CU_OP_*: a Python number, a 0-d host value, host or device array */
    PyObject *obj;        /* owned: the ndarray, device array or scalar */
    PyArray_Descr *dtype; /* borrowed from obj; NULL for Python scalars */
    int nd;
    int foreign; /* a device array over another library's memory */
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS]; /* strides: the device copy's once made */
    CUdeviceptr ptr;             /* a device array's data, or its device copy's */
    unsigned long long words[2]; /* a scalar's bytes in the loop's type (a kernel parameter) */
    PyObject *dev;               /* owned: the device copy of a host array, or a cast copy */
} CuOperand;

/* ---- a call (call.c runs it; cucall.c, cugucall.c supply its kinds) ---- */

typedef struct CuCall CuCall;

/*
 * What one kind of call supplies to call.c's skeleton (cucall.c's for a
 * cuda ufunc, cugucall.c's for a cuda gufunc), in the order the skeleton
 * runs them; 0/-1 each unless said.
 */
typedef struct CuCallKind {
    /* The Python arguments into operands (cu_classify), out=, the kind's
     * keywords and stream=. */
    int (*parse)(CuCall *c, PyObject *args, PyObject *kwargs);
    /* The loop, the shapes and every check that needs no device. */
    int (*resolve)(CuCall *c);
    /* The loop's module in the context (the driver loaded first). */
    int (*load)(CuCall *c);
    /* 1 when a host call goes through staging.c, with job filled (but its
     * data pointers); 0 when not.  Needs no GPU. */
    int (*stage)(CuCall *c, CudaStaged *job);
    /* The staged call: 0; 1 when the staging slots could not be allocated
     * (nothing left done: the call goes on with whole arrays); -1. */
    int (*staged)(CuCall *c, CudaStaged *job);
    /* The operands on the device: host ones copied in, device ones of
     * another dtype cast, new outputs allocated. */
    int (*place)(CuCall *c);
    /* The kernel, then what it wrote back into the operands given (out=,
     * written inputs), cast on the device or copied to the host. */
    int (*launch)(CuCall *c);
    /* The call's value (new outputs; a host call's copied back) and the
     * exception the kernel raised: a new reference, or NULL. */
    PyObject *(*finish)(CuCall *c);
    /* Releases what the kind's part of the call holds (not the operands). */
    void (*clear)(CuCall *c);
} CuCallKind;

/* One call: what both kinds keep, the first member of each kind's own
 * struct (cucall.c's CuUfCall, CuGuCall below), so that a pointer to the
 * one is a pointer to the other. */
struct CuCall {
    const CuCallKind *kind;
    int nin, nops;                 /* inputs; operands (inputs, then outputs) */
    CuOperand ops[TS_MAXARGS + 1]; /* owned; an output not given has no obj */
    PyObject *stream;              /* borrowed: stream= */
    CUstream s;
    Py_ssize_t loop; /* the loop resolve chose (-1 before) */
    int device;      /* a device operand: the results stay on the device */
};

/* ---- call.c ---- */

/* c empty, for kind, with nin inputs and nops operands. */
void cu_call_init(CuCall *c, const CuCallKind *kind, int nin, int nops);
/* The host side of a call, parse and resolve (what the test hooks run):
 * 0/-1, c to be cleared either way. */
int cu_call_host(CuCall *c, PyObject *args, PyObject *kwargs);
/* The whole call, c cleared after: a new reference, or NULL. */
PyObject *cu_call_run(CuCall *c, PyObject *args, PyObject *kwargs);
/* Releases what c holds: its operands, its kind's part. */
void cu_call_clear(CuCall *c);

/* ---- cufunc.c: registration; the loops, for cucall.c and cureduce.c ---- */

/* The type, its functions (_cuda_staging, _cuda_gufunc_geometry) and the
 * cuda target (tg_cuda, target.h), registered as "cuda" and "gpu".  0/-1. */
int cu_ufunc_init(PyObject *module);
int cu_can_reduce(CuFunc *f);     /* binary, with an identity or reorderable */
size_t cu_reduce_smem(int block); /* dynamic shared memory of a reduce block */
int cu_sm_count(void);            /* the device's SMs; -1 with an exception */
/* Loads loop l (and its reduce entry when want_reduce).  0/-1. */
int cu_ensure_loaded(CuFunc *f, CuLoop *l, int want_reduce);
/* NumPy's choice of loop for ops (lazy: may compile one); -1 on error. */
Py_ssize_t cu_resolve(CuFunc *f, const CuOperand *ops, int lazy);
/* The device's compute capability as sm (90 for 9.0), or -1 with an error. */
int cu_device_sm(void);
/* After a call of loop l (its reduce kernel when reduce): the raise its
 * kernel stored in its module's status word, as that exception (the word
 * cleared; waits for the device).  0 (none, or a kernel that cannot
 * raise), or -1 with the exception. */
int cu_check_raised(CuLoop *l, int reduce);
/* Which of n compiled signatures `which` names (any spelling of one, or
 * None when there is only one): its index, or -1 with TypeError/KeyError.
 * sig_of(loops, i) is the i-th signature (cuda ufuncs and gufuncs). */
Py_ssize_t cu_signature_index(PyObject *which,
                              const TsSignature *(*sig_of)(void *loops, Py_ssize_t i), void *loops,
                              Py_ssize_t n);
/* __reduce__ of the cuda ufunc and gufunc: numbavec._pickle.reduce_object,
 * by name where another process can import it, else by value. */
PyObject *cu_pickle_reduce(PyObject *self, PyObject *unused);

/* ---- operand.c: the operands of a call (cucall.c, cugucall.c, cureduce.c) ---- */

void cu_operands_clear(CuOperand *ops, int n);
/* An empty operand (shape and strides are left: nd is 0). */
void cu_operand_reset(CuOperand *op);
int cu_classify(PyObject *obj, CuOperand *op); /* 0/-1 */
/* dev (a device array; the reference is stolen) as operand op.  0/-1. */
int cu_device_operand(CuOperand *op, PyObject *dev);
int cu_is_kind(PyArray_Descr *d, TsKind k); /* d holds kind k's values, natively */
/* The bytes [lo, hi) an array at ptr spans (nd dimensions of shape and
 * strides, itemsize bytes an element): 0; 1 when it has no element (lo ==
 * hi); -1 when the extent does not fit an address (a foreign array's
 * strides). */
int cu_extent(uintptr_t ptr, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
              Py_ssize_t itemsize, uintptr_t *lo, uintptr_t *hi);
/* cu_extent of operand op at ptr; all addresses when it does not fit. */
void cu_operand_extent(const CuOperand *op, uintptr_t ptr, uintptr_t *lo, uintptr_t *hi);
/* Each of the n operands over another library's memory must lie in a live
 * allocation (da_check_foreign_memory); run after the context is entered,
 * before anything launches.  0/-1. */
int cu_check_foreign(const CuOperand *ops, int n);
/* Device copies in kind k, queued on stream, that op then points at
 * (op->dev): a device operand cast, a host operand uploaded.  0/-1. */
int cu_cast_input(CuOperand *op, TsKind kind, PyObject *stream);
/* dst[...] = src[...] converted (device arrays of any shapes NumPy
 * broadcasts, dtypes of ours), queued on stream by the identity cuda ufunc
 * numbavec.cuda._cast_ufunc(src.dtype, dst.dtype).  0/-1. */
int cu_device_cast(PyObject *src, PyObject *dst, PyObject *stream);
/* obj (a host array, scalar or number) as a new C-contiguous device array
 * of kind, copied on stream (NumPy converts it first).  New reference. */
PyObject *cu_to_device(PyObject *obj, TsKind kind, PyObject *stream);
int cu_upload(CuOperand *op, TsKind kind, PyObject *stream);

/* ---- cucall.c: a call, for cufunc.c (its slots) and cureduce.c ---- */

/* f(*inputs, out=None, stream=None), the type's tp_call: new reference. */
PyObject *cu_ufunc_call(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._plan(*args, out=None, sm_count=132, block=256) -> dict. */
PyObject *cu_ufunc_plan(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._resolve(*args) -> the chosen loop as 'ff->f'. */
PyObject *cu_resolve_hook(PyObject *self, PyObject *args);

/* The test hooks' keywords without sm_count= and block= (default 132, 256),
 * which go to *sms and *block: a new dict, or NULL with an exception. */
PyObject *cu_hook_kwargs(PyObject *kwargs, int *sms, int *block);

/* ---- cureduce.c ---- */

/* f.reduce(array, axis=0, stream=None) */
PyObject *cu_reduce(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: f._reduce_plan(array, axis=0, sm_count=132, block=256). */
PyObject *cu_reduce_plan(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- the cuda gufunc (cugufunc.c, cugucall.c, cugulaunch.c) ---- */

typedef struct CuGuLoop {
    TsSignature sig;  /* as declared */
    TsSignature ksig; /* the kernel's view (arrays, 1-element views) */
    PyObject *ptx, *llvm, *var_types;
    char entry[CC_NAME_SIZE + 8];
    CUmodule mod;
    CUfunction fn;
    int block;
    unsigned fails;        /* the statuses the kernel may return (CcCompiled.fails) */
    int silent;            /* its PTX never reads the status word's parameter */
    PyObject *raise_sites; /* CcCompiled.raise_sites, or NULL */
} CuGuLoop;

typedef struct CuGuFunc {
    PyObject_HEAD PyObject *name, *doc, *dict, *backend;
    CcKernel *kernel;
    GuLayout layout;
    unsigned char written[TS_MAXARGS]; /* outputs, writable_args, what the kernel writes */
    char arch[16];
    int sm;
    char arch_suffix[4];
    CuGuLoop **loops;
    Py_ssize_t nloops;
    int lazy; /* no signatures given: a call compiles its input types */
} CuGuFunc;

/* ---- cugufunc.c ---- */

struct TgTarget;
struct TgRequest;
/* The cuda target's guvectorize factory (target.h).  New reference or NULL. */
PyObject *cu_make_guvectorize(const struct TgTarget *t, struct TgRequest *r);
int cu_gufunc_init(PyObject *module);
/* Compiles l->sig of f for arch into l (PTX, IR, types; l->sig resolved:
 * a dynamic gufunc's outputs take the kinds the kernel stores).  0/-1. */
int cu_gu_compile_loop(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index, const char *arch);
void cu_gu_loop_free(CuGuLoop *l);
/* Loads l's module on first use (compiled again for an older device).  0/-1. */
int cu_gu_ensure_loaded(CuGuFunc *f, CuGuLoop *l, Py_ssize_t index);

/* ---- a call (cugucall.c's host side, cugulaunch.c's device side) ---- */

typedef struct CuGuCall {
    CuCall call; /* call.c's part: operands, stream=, the loop (first) */
    CuGuFunc *f;
    int given_out[TS_MAXARGS];
    Py_ssize_t n; /* outer iterations: the product of the loop dimensions */
    /* the loop dimensions and the core sizes */
    int lnd;
    Py_ssize_t lshape[NPY_MAXDIMS];
    Py_ssize_t core[GU_MAXCORE];
    /* per argument, on the device */
    PyObject *dev[TS_MAXARGS];  /* owned: what the kernel reads or writes */
    PyObject *host[TS_MAXARGS]; /* owned: a host array to write back into (or NULL) */
    /* axes=/axis=: where each operand's core dimensions are (-1: at the end) */
    PyObject *axes, *axis;               /* borrowed */
    int core_at[TS_MAXARGS][TS_MAXDIMS]; /* the axes, normalised, in core order */
    int moved[TS_MAXARGS];               /* operand k's core dimensions are elsewhere */
    PyObject *given[TS_MAXARGS];         /* owned: an out= as the caller gave it */
    int keepdims;                        /* outputs keep the reduced dimensions */
    unsigned char missing[GU_MAXCORE];   /* a '?' dimension the operands left out */
    int cast_back[TS_MAXARGS];           /* dev[k] is a copy to cast into the operand */
    /* a staged host call (stage_plan) */
    unsigned char whole[TS_MAXARGS];  /* an input the same for every iteration: uploaded once */
    unsigned char direct[TS_MAXARGS]; /* a host out= the pipeline writes into */
    PyObject *res[TS_MAXARGS];        /* owned: the host array chunks come from or go to */
} CuGuCall;

/* The kernel's name, for messages. */
static inline const char *
cu_gu_name(const CuGuCall *c)
{
    return c->f->kernel->name;
}

/* ---- cugucall.c ---- */

/* f(*inputs[, *outputs], out=None, axes=None, axis=None, stream=None) */
PyObject *cu_gufunc_call(PyObject *self, PyObject *args, PyObject *kwargs);
/* Test hook: g._plan(*args, **kwargs) -> how a call would be staged (a
 * dict); the host side only, so it runs without a GPU. */
PyObject *cu_gufunc_plan(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- cugulaunch.c ---- */

/* Launches the entry over c->dev for n outer iterations; when the kernel
 * can fail, waits for its status and raises it.  0/-1. */
int cu_gu_launch(CuGuCall *c, Py_ssize_t n);
/* Whether the call's kernel can fail (an index out of bounds, checked unless
 * boundscheck=False; a raise, a division by zero ...) and its PTX reads the
 * status word: then the call gives the kernel one and waits for it. */
int cu_gu_can_fail(const CuGuCall *c);
/* Whether a host call of n outer iterations goes through the staged
 * pipeline; fills job (but its data pointers) and c->whole/c->direct.
 * Needs no GPU. */
int cu_gu_stage_plan(CuGuCall *c, Py_ssize_t n, CudaStaged *job);
/* The staged call cu_gu_stage_plan chose: 0; 1 when the staging slots could
 * not be allocated (nothing done: copy whole arrays instead); -1 with an
 * exception.  Outputs are left in c->res (or the out= given). */
int cu_gu_staged_call(CuGuCall *c, Py_ssize_t n, CudaStaged *job);

/* Test hook _cuda_gufunc_geometry(block, sms, n, lines) -> (grid, block):
 * a cuda gufunc launch's shape (cugulaunch.c, geometry). */
PyObject *cu_gu_geometry_py(PyObject *module, PyObject *args);

#endif /* NV_CUDA_UFUNC_H */
