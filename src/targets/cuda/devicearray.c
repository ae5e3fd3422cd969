#include "targets/cuda/cuda.h"
PyObject *cuda_devicearray_type = NULL;
int cuda_devicearray_init(PyObject *module) { return 0; }
