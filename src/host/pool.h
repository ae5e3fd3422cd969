/*
 * pool.h - the persistent pthread pool behind the parallel target.
 *
 * One pool per process, created on first use (after os.fork() the child
 * starts over with none).  Its workers sleep on a condition variable
 * between jobs.  A job is a range [0, n) cut into chunks; the calling
 * thread claims chunks like any worker, so it never just waits.  Workers
 * clear the floating-point flags before each chunk and hand the ones a
 * chunk raised back to the caller, who raises them in its own thread.
 *
 * Every tg_pool_ function may be called without the GIL except
 * tg_pool_configure, and only that one sets a Python exception.
 */
#ifndef NV_HOST_POOL_H
#define NV_HOST_POOL_H

#include "common.h"

#define TG_POOL_MAX_THREADS 256

#include "host/host.h" /* TgRangeFn */

/*
 * Reads NUMBAVEC_NUM_THREADS (else OMP_NUM_THREADS, else counts the usable
 * cores) and installs the fork handlers; no thread is started.  Called once, with the GIL, from
 * tg_init_module.  0, or -1 with an exception.
 */
int tg_pool_configure(void);
/* A monotonic clock in nanoseconds (the pool's and the trampoline's timings). */
double tg_now_ns(void);

/* The number of threads the pool has (or will have), caller included. */
int tg_pool_size(void);

/* The calling thread's thread count (default: the pool size). */
int tg_pool_get_num_threads(void);

/* Sets it for the calling thread; 0, or -1 when n is not in 1..size. */
int tg_pool_set_num_threads(int n);

/* Nonzero on a pool worker: a call made from there must run serially. */
int tg_pool_in_worker(void);
/* The threads a job started here may use: 1 on a worker, else the calling
 * thread's count. */
int tg_pool_threads_here(void);

/*
 * The measured cost of one empty job on every thread (wake the workers,
 * claim the chunks, join), in nanoseconds.  Starts the pool if needed;
 * -1.0 when it cannot be started (the caller then stays serial).
 */
double tg_pool_overhead_ns(void);

/*
 * Runs fn over [0, n) on up to nthreads threads, the caller included, in
 * contiguous chunks whose boundaries are multiples of grain.  Returns when
 * every chunk has run, with the workers' floating-point flags raised in the
 * calling thread.  Returns -1 without running anything when the pool is
 * busy with another caller's job or cannot be started: the caller then
 * runs the range itself.
 */
int tg_pool_run(TgRangeFn fn, void *ctx, npy_intp n, npy_intp grain, int nthreads);

/* ---- for the test hooks ---- */

/* Nonzero: the parallel target ignores its work threshold (tests only). */
int tg_pool_force_parallel(void);
void tg_pool_set_force_parallel(int on);

typedef struct TgPoolStats {
    int size;             /* threads, caller included */
    int started;          /* the workers exist in this process */
    unsigned long jobs;   /* parallel jobs run since the pool started */
    double overhead_ns;   /* -1 until started */
    int startup_give_ups; /* start-up timing jobs a worker never joined */
} TgPoolStats;

void tg_pool_stats(TgPoolStats *out);

#endif /* NV_HOST_POOL_H */
