/*
 * target.h - the targets, one const vtable each, registered into the host
 * layer (host/host.h: the interface they implement) at module init.
 *
 *   cpu.c        the serial loop itself
 *   parallel.c   a trampoline that splits the loop over the thread pool
 *                (host/pool.c)
 *   cuda/        the cuda target (cuda.h)
 */
#ifndef NV_TARGET_H
#define NV_TARGET_H

#include "host/host.h"

extern const TgTarget tg_cpu;
extern const TgTarget tg_parallel;
extern const TgTarget tg_cuda;              /* targets/cuda/cufunc.c */
extern const TgFactories tg_host_factories; /* cpu.c: vectorize.c's and gufunc.c's */

/* Registers cpu and parallel (host/target.c) and adds set_num_threads & co.;
 * 0/-1. */
int tg_init_module(PyObject *module);

/* testhooks.c: adds _parallel_test_ufunc, _pool_stats, _pool_force_parallel; 0/-1. */
int tg_init_testhooks(PyObject *module);

#endif /* NV_TARGET_H */
