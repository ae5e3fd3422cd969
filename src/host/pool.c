/*
 * pool.c - the persistent pthread pool (see pool.h).
 *
 * Owns the one pool of the process, the per-thread thread counts and the
 * fork handlers.  parallel.c cuts NumPy inner loops into jobs for it.
 *
 * A job is published under the pool mutex with a new generation number and
 * the workers are woken with one broadcast.  Chunks are then claimed from
 * an atomic word holding (generation << 32 | next chunk): a worker that
 * wakes late, after its job was finished and another published, fails the
 * compare-and-swap instead of running a chunk of a job that is gone.  The
 * caller claims chunks too, then waits until every chunk is done; only
 * then may its job's context (on its stack) disappear.
 *
 * One job runs at a time.  A caller that finds the pool busy (another
 * Python thread's job, NumPy having released the GIL) is told so at once
 * and runs its loop alone: no queue, no deadlock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "host/pool.h"

#include "compiler/compiler.h" /* cc_take_raised, cc_put_raised */

#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Chunks per participating thread: enough to even out a core that another
 * process steals for a while, few enough that claiming stays negligible. */
#define CHUNKS_PER_THREAD 4

/* Empty jobs timed at start-up; the median is the overhead. */
#define OVERHEAD_RUNS   15
#define OVERHEAD_WARMUP 2

typedef struct Pool {
    int nworkers;            /* threads besides the caller */
    pthread_mutex_t mu;      /* guards generation and the job below */
    pthread_cond_t wake;     /* workers wait here for a new generation */
    pthread_cond_t finished; /* the caller waits here for its chunks */
    pthread_mutex_t submit;  /* held by the caller whose job runs */

    /* The current job, written under mu before generation moves on. */
    uint32_t generation;
    int nhelpers; /* workers with index < nhelpers take part */
    TgRangeFn fn;
    void *ctx;
    npy_intp n;
    npy_intp chunk;
    uint32_t nchunks;

    _Atomic uint64_t claim; /* generation << 32 | next chunk */
    _Atomic uint32_t done;  /* chunks finished */
    _Atomic int fpflags;    /* FE_* flags raised on workers */
    /* the site a kernel raised at in the lowest chunk (under mu): the one
     * the caller's thread gets, as if the loop had run in order */
    const char *raised;
    int64_t raised_chunk;
    _Atomic unsigned long jobs;
    double overhead_ns;
    int startup_give_ups; /* timing jobs a worker never came to (tests) */
} Pool;

/* A worker's copy of the job it woke up for. */
typedef struct Job {
    uint32_t generation;
    TgRangeFn fn;
    void *ctx;
    npy_intp n;
    npy_intp chunk;
    uint32_t nchunks;
} Job;

typedef struct WorkerArg {
    Pool *pool;
    int index;
    uint32_t generation; /* the pool's when it was spawned: jobs after it are new */
} WorkerArg;

/* Everything the process knows about its pool, in one place. */
static struct PoolContext {
    int size; /* configured: threads, caller included */
    int configured;
    _Atomic int start_failed; /* read outside create_lock */
    _Atomic int force_parallel;
    pthread_mutex_t create_lock; /* serializes the start of the pool */
    Pool *_Atomic pool;          /* NULL until started in this process */
} pool_ctx = {.size = 1, .create_lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int tls_num_threads; /* 0: the pool size */
static _Thread_local int tls_in_worker;

/* ---- configuration ---- */

static int
usable_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        return CPU_COUNT(&set);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The child of a fork has none of the workers: it starts a pool of its own
 * on first use.  The parent's Pool is left behind (its memory is the
 * child's copy, and its mutexes may be held by threads that are gone). */
static void
atfork_prepare(void)
{
    pthread_mutex_lock(&pool_ctx.create_lock);
}

static void
atfork_parent(void)
{
    pthread_mutex_unlock(&pool_ctx.create_lock);
}

static void
atfork_child(void)
{
    pthread_mutex_init(&pool_ctx.create_lock, NULL);
    atomic_store(&pool_ctx.pool, NULL);
    pool_ctx.start_failed = 0;
}

/* OMP_NUM_THREADS's first number ("4" or OpenMP's nested "4,2") in *size
 * when it is one in 1..TG_POOL_MAX_THREADS: the limit dask's workers, job
 * schedulers and users set for every pool of a process.  Any other value
 * is OpenMP's to complain about, and leaves *size. */
static void
parse_omp_size(int *size)
{
    const char *text = getenv("OMP_NUM_THREADS");
    if (text == NULL || *text == '\0') {
        return;
    }
    char *end;
    long n = strtol(text, &end, 10);
    if (end != text && (*end == '\0' || *end == ',') && n >= 1 && n <= TG_POOL_MAX_THREADS) {
        *size = (int)n;
    }
}

/* NUMBAVEC_NUM_THREADS in *size, else OMP_NUM_THREADS; a bad
 * NUMBAVEC_NUM_THREADS warns (-1 when the warning is an error). */
static int
parse_env_size(int *size)
{
    const char *text = getenv("NUMBAVEC_NUM_THREADS");
    if (text == NULL || *text == '\0') {
        parse_omp_size(size);
        return 0;
    }
    char *end;
    long n = strtol(text, &end, 10);
    if (*end != '\0' || n < 1 || n > TG_POOL_MAX_THREADS) {
        return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                                "NUMBAVEC_NUM_THREADS=%s is not an integer in 1..%d; "
                                "using the %d usable cores",
                                text, TG_POOL_MAX_THREADS, *size);
    }
    *size = (int)n;
    return 0;
}

int
tg_pool_configure(void)
{
    if (pool_ctx.configured) {
        return 0;
    }
    int size = usable_cores();
    if (size > TG_POOL_MAX_THREADS) {
        size = TG_POOL_MAX_THREADS;
    }
    if (parse_env_size(&size) < 0) {
        return -1;
    }
    int rc = pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (rc != 0) {
        errno = rc;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    pool_ctx.size = size;
    pool_ctx.configured = 1;
    return 0;
}

int
tg_pool_size(void)
{
    return pool_ctx.size;
}

int
tg_pool_get_num_threads(void)
{
    int n = tls_num_threads;
    return (n >= 1 && n <= pool_ctx.size) ? n : pool_ctx.size;
}

int
tg_pool_threads_here(void)
{
    return tg_pool_in_worker() ? 1 : tg_pool_get_num_threads();
}

int
tg_pool_set_num_threads(int n)
{
    if (n < 1 || n > pool_ctx.size) {
        return -1;
    }
    tls_num_threads = n;
    return 0;
}

int
tg_pool_in_worker(void)
{
    return tls_in_worker;
}

int
tg_pool_force_parallel(void)
{
    return atomic_load_explicit(&pool_ctx.force_parallel, memory_order_relaxed);
}

void
tg_pool_set_force_parallel(int on)
{
    atomic_store(&pool_ctx.force_parallel, on != 0);
}

/* ---- running chunks (workers and caller alike) ---- */

/* Claims the next chunk of job j; -1 when there is none left (or the job
 * is not the current one any more). */
static int64_t
claim_chunk(Pool *p, const Job *j)
{
    uint64_t v = atomic_load_explicit(&p->claim, memory_order_acquire);
    do {
        if ((uint32_t)(v >> 32) != j->generation || (uint32_t)v >= j->nchunks) {
            return -1;
        }
    } while (!atomic_compare_exchange_weak_explicit(&p->claim, &v, v + 1, memory_order_acq_rel,
                                                    memory_order_acquire));
    return (int64_t)(uint32_t)v;
}

static void
signal_finished(Pool *p)
{
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->finished);
    pthread_mutex_unlock(&p->mu);
}

/* Keeps the site chunk k raised at when it is the lowest so far. */
static void
note_raised(Pool *p, const char *site, int64_t k)
{
    pthread_mutex_lock(&p->mu);
    if (p->raised == NULL || k < p->raised_chunk) {
        p->raised = site;
        p->raised_chunk = k;
    }
    pthread_mutex_unlock(&p->mu);
}

/*
 * A worker clears its flags before each chunk and passes on what the chunk
 * raised; the caller keeps its own flags where they are (NumPy reads them
 * from the caller's thread after the loop).  A site a kernel raised at is
 * taken after every chunk, the caller's too, so that the lowest chunk's wins.
 */
static void
run_chunks(Pool *p, const Job *j, int on_worker)
{
    int64_t k;
    while ((k = claim_chunk(p, j)) >= 0) {
        npy_intp start = (npy_intp)k * j->chunk;
        npy_intp stop = start + j->chunk < j->n ? start + j->chunk : j->n;
        if (on_worker) {
            feclearexcept(FE_ALL_EXCEPT);
        }
        j->fn(j->ctx, start, stop);
        if (on_worker) {
            int raised = fetestexcept(FE_ALL_EXCEPT);
            if (raised) {
                atomic_fetch_or(&p->fpflags, raised);
            }
        }
        const char *site = cc_take_raised();
        if (site != NULL) {
            note_raised(p, site, k);
        }
        uint32_t done = atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1;
        if (on_worker && done == j->nchunks) {
            signal_finished(p);
        }
    }
}

static void
copy_job(const Pool *p, Job *j)
{
    j->generation = p->generation;
    j->fn = p->fn;
    j->ctx = p->ctx;
    j->n = p->n;
    j->chunk = p->chunk;
    j->nchunks = p->nchunks;
}

static void *
worker_main(void *raw)
{
    WorkerArg arg = *(WorkerArg *)raw;
    free(raw);
    Pool *p = arg.pool;
    tls_in_worker = 1;
    pthread_mutex_lock(&p->mu);
    /* not p->generation now: a job published between the spawn and this
     * lock (the start-up's first timing job, say) would count as seen, and
     * its caller would wait for this worker in vain */
    uint32_t seen = arg.generation;
    for (;;) {
        while (p->generation == seen) {
            pthread_cond_wait(&p->wake, &p->mu);
        }
        seen = p->generation;
        if (arg.index >= p->nhelpers) {
            continue;
        }
        Job j;
        copy_job(p, &j);
        pthread_mutex_unlock(&p->mu);
        run_chunks(p, &j, 1);
        pthread_mutex_lock(&p->mu);
    }
    return NULL;
}

/* ---- the caller's side of a job ---- */

static void
wait_finished(Pool *p, uint32_t nchunks)
{
    /* The last chunks are usually a few microseconds from done: look a few
     * times before paying for a sleep and a wake-up. */
    for (int i = 0; i < 200; i++) {
        if (atomic_load_explicit(&p->done, memory_order_acquire) == nchunks) {
            return;
        }
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->done, memory_order_acquire) != nchunks) {
        pthread_cond_wait(&p->finished, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
}

/* The caller holds p->submit.  Publishes the job, works on it, joins. */
static void
run_job(Pool *p, TgRangeFn fn, void *ctx, npy_intp n, npy_intp chunk, int nthreads)
{
    Job j;
    pthread_mutex_lock(&p->mu);
    p->generation++;
    p->nhelpers = nthreads - 1;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->nchunks = (uint32_t)((n + chunk - 1) / chunk);
    atomic_store(&p->done, 0);
    atomic_store(&p->fpflags, 0);
    p->raised = NULL;
    atomic_store(&p->claim, (uint64_t)p->generation << 32);
    copy_job(p, &j);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_chunks(p, &j, 0);
    wait_finished(p, j.nchunks);
    int raised = atomic_load(&p->fpflags);
    if (raised) {
        feraiseexcept(raised);
    }
    pthread_mutex_lock(&p->mu);
    if (p->raised != NULL) {
        cc_put_raised(p->raised);
    }
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add_explicit(&p->jobs, 1, memory_order_relaxed);
}

/* ---- start-up ---- */

/* The timing job: every thread takes one chunk and waits in it until all
 * have arrived, so the time covers waking every worker and joining them
 * (an empty job would be finished by the caller before anyone woke). */
typedef struct Rendezvous {
    _Atomic int arrived;
    int expected;
    _Atomic int gave_up;
} Rendezvous;

double
tg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void
rendezvous_chunk(void *ctx, npy_intp start, npy_intp stop)
{
    Rendezvous *r = ctx;
    atomic_fetch_add(&r->arrived, 1);
    /* Bounded: a thread that never comes cannot hang the start-up. */
    double give_up = tg_now_ns() + 50e6;
    while (atomic_load(&r->arrived) < r->expected) {
        if (tg_now_ns() >= give_up) {
            atomic_store(&r->gave_up, 1);
            return;
        }
        sched_yield();
    }
}

static int
compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
measure_overhead(Pool *p)
{
    int nthreads = p->nworkers + 1;
    double t[OVERHEAD_RUNS];
    for (int i = 0; i < OVERHEAD_WARMUP + OVERHEAD_RUNS; i++) {
        Rendezvous r = {.expected = nthreads};
        double t0 = tg_now_ns();
        run_job(p, rendezvous_chunk, &r, nthreads, 1, nthreads);
        p->startup_give_ups += atomic_load(&r.gave_up);
        if (i >= OVERHEAD_WARMUP) {
            t[i - OVERHEAD_WARMUP] = tg_now_ns() - t0;
        }
    }
    qsort(t, OVERHEAD_RUNS, sizeof(double), compare_doubles);
    return t[OVERHEAD_RUNS / 2];
}

static int
init_sync(Pool *p)
{
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        return -1;
    }
    if (pthread_mutex_init(&p->submit, NULL) != 0) {
        return -1;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        return -1;
    }
    return pthread_cond_init(&p->finished, NULL) != 0 ? -1 : 0;
}

/* Workers get every signal blocked, so that Ctrl-C and friends reach a
 * thread Python knows about and never interrupt a chunk. */
static int
spawn_workers(Pool *p, int want)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int made = 0;
    for (; made < want; made++) {
        WorkerArg *arg = malloc(sizeof(*arg));
        if (arg == NULL) {
            break;
        }
        arg->pool = p;
        arg->index = made;
        arg->generation = p->generation;
        pthread_t tid;
        if (pthread_create(&tid, NULL, worker_main, arg) != 0) {
            free(arg);
            break;
        }
        pthread_detach(tid);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return made;
}

/* A pool that fails to start is never freed if any worker exists (they
 * hold a pointer to it); the process runs serially from then on. */
static Pool *
start_pool(int size)
{
    Pool *p = calloc(1, sizeof(*p));
    if (p == NULL || init_sync(p) < 0) {
        free(p);
        return NULL;
    }
    p->nworkers = spawn_workers(p, size - 1);
    p->overhead_ns = p->nworkers > 0 ? measure_overhead(p) : -1.0;
    atomic_store(&p->jobs, 0); /* the timing jobs do not count */
    return p;
}

static Pool *
get_pool(void)
{
    Pool *p = atomic_load_explicit(&pool_ctx.pool, memory_order_acquire);
    if (p != NULL || pool_ctx.start_failed) {
        return p;
    }
    pthread_mutex_lock(&pool_ctx.create_lock);
    p = atomic_load(&pool_ctx.pool);
    if (p == NULL && !pool_ctx.start_failed) {
        p = start_pool(pool_ctx.size);
        if (p == NULL || p->nworkers == 0) {
            pool_ctx.start_failed = 1;
            p = NULL;
        }
        atomic_store_explicit(&pool_ctx.pool, p, memory_order_release);
    }
    pthread_mutex_unlock(&pool_ctx.create_lock);
    return p;
}

/* ---- the public side ---- */

double
tg_pool_overhead_ns(void)
{
    if (pool_ctx.size < 2 || tls_in_worker) {
        return -1.0;
    }
    Pool *p = get_pool();
    return p == NULL ? -1.0 : p->overhead_ns;
}

static npy_intp
choose_chunk(npy_intp n, npy_intp grain, int nthreads)
{
    npy_intp want = nthreads * CHUNKS_PER_THREAD;
    npy_intp chunk = (n + want - 1) / want;
    chunk = (chunk + grain - 1) / grain * grain;
    /* The claim word counts chunks in 32 bits. */
    while ((n + chunk - 1) / chunk > (npy_intp)UINT32_MAX / 2) {
        chunk *= 2;
    }
    return chunk;
}

int
tg_pool_run(TgRangeFn fn, void *ctx, npy_intp n, npy_intp grain, int nthreads)
{
    if (nthreads < 2 || n <= 0 || grain < 1 || tls_in_worker) {
        return -1;
    }
    Pool *p = get_pool();
    if (p == NULL) {
        return -1;
    }
    if (nthreads > p->nworkers + 1) {
        nthreads = p->nworkers + 1;
    }
    npy_intp chunk = choose_chunk(n, grain, nthreads);
    if (chunk >= n) {
        return -1; /* one chunk: nothing to share */
    }
    if (pthread_mutex_trylock(&p->submit) != 0) {
        return -1;
    }
    run_job(p, fn, ctx, n, chunk, nthreads);
    pthread_mutex_unlock(&p->submit);
    return 0;
}

void
tg_pool_stats(TgPoolStats *out)
{
    Pool *p = atomic_load(&pool_ctx.pool);
    out->size = pool_ctx.size;
    out->started = p != NULL;
    out->jobs = p != NULL ? atomic_load(&p->jobs) : 0;
    out->overhead_ns = p != NULL ? p->overhead_ns : -1.0;
    out->startup_give_ups = p != NULL ? p->startup_give_ups : 0;
}
