/*
 * cuda.h - the cuda target (src/targets/cuda/) as the rest of numbavec sees
 * it: numbavec.cuda's functions, types and exceptions, registered by
 * cudamodule.c (the cuda target itself, tg_cuda, is declared in target.h).
 *
 * Inside, four folders, each with one header as its interface and a header
 * comment saying what it owns (after Numba's cuda package: cudadrv/, the
 * device arrays, the code generation and the ufunc dispatch apart).  Calls
 * go down this list, never up:
 *
 *   ufunc/    the cuda ufunc and gufunc, their calls and reduce    ufunc.h
 *   codegen/  kernels -> entry points in LLVM IR -> PTX, no GPU     codegen.h
 *   array/    DeviceNDArray and foreign device arrays             array.h
 *   driver/   libcuda, streams, the toolkit, staged transfers     driver.h
 *
 * ufunc/ uses the three others; codegen/ and array/ use driver/ alone (not
 * each other); driver/ uses none of them.  Nothing here needs CUDA to build
 * or import: the driver and libNVVM are opened with dlopen on first use.
 */
#ifndef NV_CUDA_H
#define NV_CUDA_H

#include "common.h"

/* ---- cudamodule.c: numbavec.cuda's functions and exceptions (in nv_state) ---- */

int cuda_init_module(PyObject *module); /* 0/-1 */

#endif /* NV_CUDA_H */
