/*
 * api.h - the _core entry points (api.c).
 */
#ifndef NV_API_H
#define NV_API_H

#include "common.h"

/* Adds vectorize, guvectorize, the lazy ufunc's and the thread counts'
 * functions to the module; 0/-1. */
int nv_api_init(PyObject *module);

#endif /* NV_API_H */
