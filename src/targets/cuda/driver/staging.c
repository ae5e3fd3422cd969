/*
 * staging.c - host arrays through a cuda ufunc or gufunc in chunks (of
 * elements, or of a gufunc's outer iterations): pinned staging buffers on
 * two streams, so that copies in, kernels and copies out of consecutive
 * chunks overlap.
 *
 * A copy from pageable memory is synchronous and runs through the driver's
 * own small staging buffer, one memcpy at a time; a call on host arrays
 * then costs copy-in + kernel + copy-out in sequence, plus the device
 * allocations.  Here each of two slots owns a stream, an event and, per
 * operand, a pinned host buffer and a device buffer of one chunk.  Chunk i
 * goes to slot i % 2: wait for the slot's previous chunk (its event), copy
 * that chunk's results out of the pinned buffers into the result arrays,
 * copy chunk i's inputs into the pinned buffers, then queue H2D copies, the
 * launch (which may first copy its own aux bytes over: a gufunc's
 * descriptor) and the D2H copies on the slot's stream.  The CPU copies of one slot
 * run while the GPU works on the other; H2D of one slot and D2H of the
 * other use the two copy engines at once.  The CPU copies are split across
 * the parallel target's thread pool (one thread cannot keep up with PCIe).
 *
 * The slots are process-wide, grown on demand and kept (a second call pays
 * no cuMemHostAlloc), and used by one call at a time (a mutex, taken
 * without the GIL).  Everything between the first copy and the last wait
 * runs without the GIL; errors travel back as a CUresult and the name of
 * what failed, and become exceptions once the GIL is held again.
 */
#include "targets/cuda/driver/driver.h"
#include "host/pool.h"

#include <pthread.h>
#include <string.h>

enum { STAGE_SLOTS = 2, STAGE_ALIGN = 256 };
#define STAGE_OPERAND_BYTES ((size_t)8 << 20)  /* one operand's buffer */
#define STAGE_SLOT_BYTES    ((size_t)64 << 20) /* all operands of one slot */
#define STAGE_PAR_BYTES     ((size_t)1 << 20)  /* CPU copies split from here */

typedef struct Slot {
    CUstream s;
    CUevent done; /* after the slot's last D2H copy */
    char *host;   /* pinned: one buffer per operand */
    CUdeviceptr dev;
    Py_ssize_t off, n; /* the chunk whose results wait in host (n 0: none) */
} Slot;

static struct {
    pthread_mutex_t lock;
    int ready;   /* streams and events exist */
    size_t size; /* bytes of each slot's host and device memory */
    Slot slot[STAGE_SLOTS];
    int disabled; /* _cuda_staging(False): benchmarks compare */
} stage = {PTHREAD_MUTEX_INITIALIZER};

Py_ssize_t
cuda_stage_chunk(const CudaStaged *job)
{
    size_t widest = 0, total = 0;
    for (int k = 0; k < job->nops; k++) {
        if (job->unit[k] > 0) {
            size_t u = (size_t)job->unit[k];
            widest = u > widest ? u : widest;
            total += u;
        }
    }
    if (widest == 0 || job->aux >= STAGE_SLOT_BYTES / 2) {
        return 0;
    }
    size_t chunk = STAGE_OPERAND_BYTES / widest;
    if (chunk > (STAGE_SLOT_BYTES - job->aux) / total) {
        chunk = (STAGE_SLOT_BYTES - job->aux) / total;
    }
    /* whole multiples of 256 elements; fewer would leave most of the GPU
     * idle (a gufunc's thread runs one row): rows over 32 KiB copy whole
     * arrays */
    return (Py_ssize_t)(chunk / STAGE_ALIGN * STAGE_ALIGN);
}

int
cuda_stage_worth(const CudaStaged *job)
{
    Py_ssize_t chunk = cuda_stage_chunk(job);
    return !stage.disabled && chunk > 0 && job->n > chunk;
}

static size_t
round_up(size_t bytes)
{
    return (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN;
}

/* Byte offset of operand k's buffer in a slot (k == nops: the aux bytes). */
static size_t
buffer_offset(const CudaStaged *job, Py_ssize_t chunk, int k)
{
    size_t off = 0;
    for (int j = 0; j < k; j++) {
        if (job->unit[j] > 0) {
            off += round_up((size_t)chunk * (size_t)job->unit[j]);
        }
    }
    return off;
}

/* Streams, events and buffers of `size` bytes per slot.  0/-1 (GIL held). */
static int
ensure_slots(size_t size)
{
    if (!stage.ready) { /* what a failed attempt made is kept for the next */
        for (int i = 0; i < STAGE_SLOTS; i++) {
            Slot *sl = &stage.slot[i];
            if ((sl->s == NULL
                 && cuda_check(cuda_drv->StreamCreate(&sl->s, CU_STREAM_NON_BLOCKING),
                               "cuStreamCreate (staging)")
                        < 0)
                || (sl->done == NULL
                    && cuda_check(cuda_drv->EventCreate(&sl->done, CU_EVENT_DISABLE_TIMING),
                                  "cuEventCreate (staging)")
                           < 0)) {
                return -1;
            }
        }
        stage.ready = 1;
    }
    if (stage.size >= size) {
        return 0;
    }
    for (int i = 0; i < STAGE_SLOTS; i++) { /* idle: every call drains both */
        Slot *sl = &stage.slot[i];
        if (sl->host != NULL) {
            cuda_drv->MemFreeHost(sl->host);
            sl->host = NULL;
        }
        if (sl->dev != 0) {
            cuda_drv->MemFree(sl->dev);
            sl->dev = 0;
        }
    }
    stage.size = 0;
    for (int i = 0; i < STAGE_SLOTS; i++) {
        Slot *sl = &stage.slot[i];
        void *h = NULL;
        CUresult rc = cuda_drv->MemHostAlloc(&h, size, CU_MEMHOSTALLOC_PORTABLE);
        if (cuda_check(rc, "cuMemHostAlloc (staging)") < 0) {
            return -1;
        }
        sl->host = h;
        rc = cuda_drv->MemAlloc(&sl->dev, size);
        if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
            cuda_mem_trim();
            rc = cuda_drv->MemAlloc(&sl->dev, size);
        }
        if (cuda_check(rc, "cuMemAlloc (staging)") < 0) {
            sl->dev = 0;
            return -1;
        }
    }
    stage.size = size;
    return 0;
}

/* ---- the CPU copies, split across the pool ---- */

typedef struct Copy {
    char *dst;
    const char *src;
} Copy;

static void
copy_range(void *ctx, npy_intp start, npy_intp stop)
{
    Copy *c = ctx;
    memcpy(c->dst + start, c->src + start, (size_t)(stop - start));
}

static void
copy(char *dst, const char *src, size_t bytes)
{
    Copy c = {dst, src};
    int p = tg_pool_threads_here();
    if (bytes < STAGE_PAR_BYTES || p < 2
        || tg_pool_run(copy_range, &c, (npy_intp)bytes, 64 << 10, p) < 0) {
        memcpy(dst, src, bytes);
    }
}

/* ---- the pipeline (no GIL) ---- */

typedef struct Failure {
    CUresult rc;
    const char *what;
} Failure;

static int
failed(Failure *e, CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS && e->rc == CUDA_SUCCESS) {
        e->rc = rc;
        e->what = what;
    }
    return rc != CUDA_SUCCESS;
}

/* Waits for the slot's chunk and copies its results into the outputs. */
static int
drain(const CudaStaged *job, Slot *sl, const size_t *offs, Failure *e)
{
    if (sl->n == 0) {
        return 0;
    }
    Py_ssize_t n = sl->n;
    sl->n = 0;
    if (failed(e, cuda_drv->EventSynchronize(sl->done), "cuEventSynchronize (staging)")) {
        return -1;
    }
    for (int k = job->nin; k < job->nops; k++) {
        if (job->unit[k] > 0) {
            copy(job->data[k] + (size_t)sl->off * (size_t)job->unit[k], sl->host + offs[k],
                 (size_t)n * (size_t)job->unit[k]);
        }
    }
    return 0;
}

/* Queues chunk [off, off + m) on slot sl: inputs into pinned memory and
 * over, the launch, the results back.  0/-1 (e set). */
static int
queue_chunk(const CudaStaged *job, Slot *sl, const size_t *offs, Py_ssize_t off, Py_ssize_t m,
            Failure *e)
{
    CUdeviceptr dev[TS_MAXARGS + 1];
    for (int k = 0; k < job->nops; k++) {
        dev[k] = job->unit[k] > 0 ? sl->dev + offs[k] : 0;
        size_t bytes = (size_t)m * (size_t)job->unit[k];
        if (k >= job->nin || bytes == 0) {
            continue;
        }
        copy(sl->host + offs[k], job->data[k] + (size_t)off * (size_t)job->unit[k], bytes);
        if (failed(e, cuda_drv->MemcpyHtoDAsync(dev[k], sl->host + offs[k], bytes, sl->s),
                   "cuMemcpyHtoDAsync (staging)")) {
            return -1;
        }
    }
    size_t aux = offs[job->nops];
    if (failed(e, job->launch(job->ctx, dev, sl->host + aux, sl->dev + aux, m, sl->s),
               "cuLaunchKernel (staging)")) {
        return -1;
    }
    for (int k = job->nin; k < job->nops; k++) {
        size_t bytes = (size_t)m * (size_t)job->unit[k];
        if (bytes > 0
            && failed(e, cuda_drv->MemcpyDtoHAsync(sl->host + offs[k], dev[k], bytes, sl->s),
                      "cuMemcpyDtoHAsync (staging)")) {
            return -1;
        }
    }
    return failed(e, cuda_drv->EventRecord(sl->done, sl->s), "cuEventRecord (staging)") ? -1 : 0;
}

static void
pipeline(const CudaStaged *job, Py_ssize_t chunk, Failure *e)
{
    size_t offs[TS_MAXARGS + 2];
    for (int k = 0; k <= job->nops; k++) {
        offs[k] = buffer_offset(job, chunk, k);
    }
    Py_ssize_t off = 0;
    int i = 0;
    for (; off < job->n; i++) {
        Slot *sl = &stage.slot[i % STAGE_SLOTS];
        Py_ssize_t m = job->n - off < chunk ? job->n - off : chunk;
        if (drain(job, sl, offs, e) < 0 || queue_chunk(job, sl, offs, off, m, e) < 0) {
            break;
        }
        sl->off = off;
        sl->n = m;
        off += m;
    }
    /* the chunks still in flight, oldest first; after a failure only waited
     * for, so that nothing writes into the buffers once the call returns */
    for (int j = 0; j < STAGE_SLOTS; j++) {
        Slot *sl = &stage.slot[(i + j) % STAGE_SLOTS];
        if (e->rc == CUDA_SUCCESS) {
            drain(job, sl, offs, e);
        } else {
            cuda_drv->StreamSynchronize(sl->s);
            sl->n = 0;
        }
    }
}

int
cuda_stage_run(const CudaStaged *job)
{
    Py_ssize_t chunk = cuda_stage_chunk(job);
    if (chunk <= 0) {
        return 1; /* not a job for the slots (cuda_stage_worth says so first) */
    }
    size_t size = buffer_offset(job, chunk, job->nops) + round_up(job->aux);
    PyThreadState *ts = PyEval_SaveThread(); /* never wait for the lock holding the GIL */
    pthread_mutex_lock(&stage.lock);
    PyEval_RestoreThread(ts);
    if (ensure_slots(size) < 0) {
        pthread_mutex_unlock(&stage.lock);
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear(); /* no pinned or device memory for the slots */
            return 1;
        }
        return -1;
    }
    Failure e = {CUDA_SUCCESS, NULL};
    ts = PyEval_SaveThread();
    pipeline(job, chunk, &e);
    PyEval_RestoreThread(ts);
    pthread_mutex_unlock(&stage.lock);
    return cuda_check(e.rc, e.what ? e.what : "staging");
}

/* _cuda_staging(on=None) -> bool: whether large host calls are staged. */
PyObject *
cuda_staging_py(PyObject *module, PyObject *args)
{
    PyObject *on = Py_None;
    if (!PyArg_ParseTuple(args, "|O:_cuda_staging", &on)) {
        return NULL;
    }
    int was = !stage.disabled;
    if (on != Py_None) {
        int v = PyObject_IsTrue(on);
        if (v < 0) {
            return NULL;
        }
        stage.disabled = !v;
    }
    return PyBool_FromLong(was);
}
