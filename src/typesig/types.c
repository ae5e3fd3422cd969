/* types.c - placeholder */
#include "typesig/typesig.h"
int ts_init_module(PyObject *module) { return 0; }
