/* vectorize.c - placeholder */
#include "vectorize/vectorize.h"
int vz_init_module(PyObject *module) { return vz_init_testhooks(module); }
