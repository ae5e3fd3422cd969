/*
 * builtins.c - the functions a kernel may call.
 *
 * A kernel names a builtin through any Python object that is one: `abs`,
 * `math.exp`, `np.exp`, `from math import exp`, `np.float32`.  Names are
 * resolved to objects by resolve.c (globals and closures are frozen at compile
 * time), and objects to builtin ids here, through a dict built on first use
 * from the table below.  A builtin's flavor selects its row of
 * cc_flavor_ops, at the end: how typecalls.c (or arrays/) types the call
 * and how emitcall.c (or arrays/) emits it (calls.h).
 */
#include "compiler/calls.h"

#include <string.h>

/* id order: the enum-free index into `builtins` */
/* clang-format off: one table row per Python name reads best */
static const CcBuiltin builtins[] = {
    {"abs", FL_ABS, M_NONE, 1, 1},
    {"min", FL_MIN, M_NONE, 2, 64},
    {"max", FL_MAX, M_NONE, 2, 64},
    {"int", FL_INT, M_NONE, 1, 1},
    {"float", FL_FLOAT, M_NONE, 1, 1},
    {"complex", FL_COMPLEX, M_NONE, 1, 2},
    {"bool", FL_BOOL, M_NONE, 1, 1},
    {"round", FL_ROUND, M_NONE, 1, 2},
    {".real", FL_REAL, M_NONE, 1, 1},
    {".imag", FL_IMAG, M_NONE, 1, 1},
    {".conjugate", FL_CONJ, M_NONE, 1, 1},
#define CAST(name, kind)                                                                           \
    {                                                                                              \
        name, FL_CAST, kind, 1, 1                                                                  \
    }
    CAST("numpy.bool_", TS_BOOL),
    CAST("numpy.int8", TS_INT8),
    CAST("numpy.int16", TS_INT16),
    CAST("numpy.int32", TS_INT32),
    CAST("numpy.int64", TS_INT64),
    CAST("numpy.uint8", TS_UINT8),
    CAST("numpy.uint16", TS_UINT16),
    CAST("numpy.uint32", TS_UINT32),
    CAST("numpy.uint64", TS_UINT64),
    CAST("numpy.float32", TS_FLOAT32),
    CAST("numpy.float64", TS_FLOAT64),
    CAST("numpy.complex64", TS_COMPLEX64),
    CAST("numpy.complex128", TS_COMPLEX128),
    /* aliases that are distinct type objects on some platforms */
    CAST("numpy.longlong", TS_INT64),
    CAST("numpy.ulonglong", TS_UINT64),
    CAST("numpy.intc", TS_INT32),
    CAST("numpy.uintc", TS_UINT32),
#undef CAST
#define MATH(name, op, n)                                                                          \
    {                                                                                              \
        "math." name, FL_MATH, op, n, n                                                            \
    }
    MATH("exp", M_EXP, 1),
    MATH("expm1", M_EXPM1, 1),
    MATH("log", M_LOG, 1),
    MATH("log2", M_LOG2, 1),
    MATH("log10", M_LOG10, 1),
    MATH("log1p", M_LOG1P, 1),
    MATH("sqrt", M_SQRT, 1),
    MATH("sin", M_SIN, 1),
    MATH("cos", M_COS, 1),
    MATH("tan", M_TAN, 1),
    MATH("asin", M_ASIN, 1),
    MATH("acos", M_ACOS, 1),
    MATH("atan", M_ATAN, 1),
    MATH("sinh", M_SINH, 1),
    MATH("cosh", M_COSH, 1),
    MATH("tanh", M_TANH, 1),
    MATH("asinh", M_ASINH, 1),
    MATH("acosh", M_ACOSH, 1),
    MATH("atanh", M_ATANH, 1),
    MATH("erf", M_ERF, 1),
    MATH("erfc", M_ERFC, 1),
    MATH("gamma", M_GAMMA, 1),
    MATH("lgamma", M_LGAMMA, 1),
    MATH("fabs", M_FABS, 1),
    MATH("degrees", M_DEGREES, 1),
    MATH("radians", M_RADIANS, 1),
    MATH("pow", M_POW, 2),
    MATH("atan2", M_ATAN2, 2),
    MATH("hypot", M_HYPOT, 2),
    MATH("copysign", M_COPYSIGN, 2),
    MATH("fmod", M_FMOD, 2),
    MATH("ldexp", M_LDEXP, 2),
#undef MATH
    {"math.floor", FL_MATH_INT, M_FLOOR, 1, 1},
    {"math.ceil", FL_MATH_INT, M_CEIL, 1, 1},
    {"math.trunc", FL_MATH_INT, M_TRUNC, 1, 1},
    {"math.gcd", FL_GCD, 0, 2, 2},
    {"math.lcm", FL_GCD, 1, 2, 2},
    {"numpy.gcd", FL_GCD, 0, 2, 2},
    {"numpy.lcm", FL_GCD, 1, 2, 2},
    {"math.isnan", FL_MATH_PRED, M_ISNAN, 1, 1},
    {"math.isinf", FL_MATH_PRED, M_ISINF, 1, 1},
    {"math.isfinite", FL_MATH_PRED, M_ISFINITE, 1, 1},
#define NP(name, op, n)                                                                            \
    {                                                                                              \
        "numpy." name, FL_NP, op, n, n                                                             \
    }
    NP("exp", M_EXP, 1),
    NP("expm1", M_EXPM1, 1),
    NP("log", M_LOG, 1),
    NP("log2", M_LOG2, 1),
    NP("log10", M_LOG10, 1),
    NP("log1p", M_LOG1P, 1),
    NP("sqrt", M_SQRT, 1),
    NP("sin", M_SIN, 1),
    NP("cos", M_COS, 1),
    NP("tan", M_TAN, 1),
    NP("arcsin", M_ASIN, 1),
    NP("arccos", M_ACOS, 1),
    NP("arctan", M_ATAN, 1),
    NP("sinh", M_SINH, 1),
    NP("cosh", M_COSH, 1),
    NP("tanh", M_TANH, 1),
    NP("arcsinh", M_ASINH, 1),
    NP("arccosh", M_ACOSH, 1),
    NP("arctanh", M_ATANH, 1),
    NP("fabs", M_FABS, 1),
    NP("floor", M_FLOOR, 1),
    NP("ceil", M_CEIL, 1),
    NP("trunc", M_TRUNC, 1),
    NP("rint", M_RINT, 1),
    NP("degrees", M_DEGREES, 1),
    NP("radians", M_RADIANS, 1),
    NP("square", M_SQUARE, 1),
    NP("power", M_POW, 2),
    NP("arctan2", M_ATAN2, 2),
    NP("hypot", M_HYPOT, 2),
    NP("copysign", M_COPYSIGN, 2),
    NP("fmod", M_FMOD, 2),
    NP("ldexp", M_LDEXP, 2),
#undef NP
    {"numpy.isnan", FL_NP_PRED, M_ISNAN, 1, 1},
    {"numpy.isinf", FL_NP_PRED, M_ISINF, 1, 1},
    {"numpy.isfinite", FL_NP_PRED, M_ISFINITE, 1, 1},
    {"numpy.minimum", FL_NP_MINMAX, M_MINIMUM, 2, 2},
    {"numpy.maximum", FL_NP_MINMAX, M_MAXIMUM, 2, 2},
    {"numpy.fmin", FL_NP_MINMAX, M_FMIN, 2, 2},
    {"numpy.fmax", FL_NP_MINMAX, M_FMAX, 2, 2},
    {"numpy.absolute", FL_ABS, M_NONE, 1, 1},
    {"numpy.sign", FL_NP_SIGN, M_NONE, 1, 1},
    {"numpy.where", FL_WHERE, M_NONE, 3, 3},
    {"numpy.clip", FL_CLIP, M_NONE, 3, 3},
#define OPERATOR(name, op, n)                                                                      \
    {                                                                                              \
        "numpy." name, FL_OPERATOR, op, n, n                                                       \
    }
    OPERATOR("add", OP_ADD, 2),
    OPERATOR("subtract", OP_SUB, 2),
    OPERATOR("multiply", OP_MUL, 2),
    OPERATOR("divide", OP_DIV, 2),
    OPERATOR("true_divide", OP_DIV, 2),
    OPERATOR("floor_divide", OP_FLOORDIV, 2),
    OPERATOR("remainder", OP_MOD, 2),
    OPERATOR("mod", OP_MOD, 2),
    OPERATOR("bitwise_and", OP_BITAND, 2),
    OPERATOR("bitwise_or", OP_BITOR, 2),
    OPERATOR("bitwise_xor", OP_BITXOR, 2),
    OPERATOR("left_shift", OP_LSHIFT, 2),
    OPERATOR("right_shift", OP_RSHIFT, 2),
    OPERATOR("negative", OP_NEG, 1),
    OPERATOR("positive", OP_POS, 1),
    OPERATOR("invert", OP_INVERT, 1),
    OPERATOR("bitwise_not", OP_INVERT, 1),
    OPERATOR("equal", OP_EQ, 2),
    OPERATOR("not_equal", OP_NE, 2),
    OPERATOR("less", OP_LT, 2),
    OPERATOR("less_equal", OP_LE, 2),
    OPERATOR("greater", OP_GT, 2),
    OPERATOR("greater_equal", OP_GE, 2),
#undef OPERATOR
#define CMATH(name, op, n)                                                                         \
    {                                                                                              \
        "cmath." name, FL_CMATH, op, n, n                                                          \
    }
    CMATH("exp", M_EXP, 1),
    CMATH("log", M_LOG, 1),
    CMATH("sqrt", M_SQRT, 1),
    CMATH("sin", M_SIN, 1),
    CMATH("cos", M_COS, 1),
    CMATH("tan", M_TAN, 1),
    CMATH("asin", M_ASIN, 1),
    CMATH("acos", M_ACOS, 1),
    CMATH("atan", M_ATAN, 1),
    CMATH("sinh", M_SINH, 1),
    CMATH("cosh", M_COSH, 1),
    CMATH("tanh", M_TANH, 1),
    CMATH("asinh", M_ASINH, 1),
    CMATH("acosh", M_ACOSH, 1),
    CMATH("atanh", M_ATANH, 1),
    CMATH("phase", M_PHASE, 1),
    CMATH("polar", M_POLAR, 1),
    CMATH("rect", M_RECT, 2),
    CMATH("isnan", M_ISNAN, 1),
    CMATH("isinf", M_ISINF, 1),
    CMATH("isfinite", M_ISFINITE, 1),
#undef CMATH
    {"numpy.empty", FL_ALLOC, AL_EMPTY, 1, 1},
    {"numpy.zeros", FL_ALLOC, AL_ZEROS, 1, 1},
    {"numpy.ones", FL_ALLOC, AL_ONES, 1, 1},
    {"numpy.full", FL_ALLOC, AL_FULL, 2, 2},
    {"numpy.empty_like", FL_LIKE, AL_EMPTY, 1, 1},
    {"numpy.zeros_like", FL_LIKE, AL_ZEROS, 1, 1},
    {"numpy.ones_like", FL_LIKE, AL_ONES, 1, 1},
    {"numpy.full_like", FL_LIKE, AL_FULL, 2, 2},
    {"numpy.copy", FL_LIKE, AL_COPY, 1, 1},
    {".flatten", FL_LIKE, AL_FLATTEN, 1, 1},
    {"numpy.reshape", FL_RESHAPE, RS_RESHAPE, 2, 2},
    {".reshape", FL_RESHAPE, RS_RESHAPE, 2, 1 + TS_MAXDIMS},
    {"numpy.ravel", FL_RESHAPE, RS_RAVEL, 1, 1},
    {".ravel", FL_RESHAPE, RS_RAVEL, 1, 1},
#define REDUCE(name, op)                                                                           \
    {                                                                                              \
        "numpy." name, FL_REDUCE, op, 1, 2                                                         \
    }
    REDUCE("sum", R_SUM),
    REDUCE("prod", R_PROD),
    REDUCE("min", R_MIN),
    REDUCE("max", R_MAX),
    REDUCE("amin", R_MIN),
    REDUCE("amax", R_MAX),
    REDUCE("mean", R_MEAN),
    REDUCE("any", R_ANY),
    REDUCE("all", R_ALL),
    REDUCE("nansum", R_NANSUM),
    REDUCE("nanprod", R_NANPROD),
    REDUCE("nanmin", R_NANMIN),
    REDUCE("nanmax", R_NANMAX),
    REDUCE("nanmean", R_NANMEAN),
    REDUCE("argmin", R_ARGMIN),
    REDUCE("argmax", R_ARGMAX),
    REDUCE("var", R_VAR),
    REDUCE("std", R_STD),
    REDUCE("cumsum", R_CUMSUM),
    REDUCE("cumprod", R_CUMPROD),
#undef REDUCE
    {"numpy.sort", FL_SORT, S_SORT, 1, 1},
    {"numpy.argsort", FL_SORT, S_ARGSORT, 1, 1},
    {"numpy.partition", FL_SORT, S_PARTITION, 1, 2}, /* kth may be a keyword */
    {"numpy.median", FL_SORT, S_MEDIAN, 1, 1},
    {"numpy.nanmedian", FL_SORT, S_NANMEDIAN, 1, 1},
    {"numpy.quantile", FL_SORT, S_QUANTILE, 1, 2}, /* q may be a keyword */
    {"numpy.nanquantile", FL_SORT, S_NANQUANTILE, 1, 2},
    {"numpy.percentile", FL_SORT, S_PERCENTILE, 1, 2},
    {"numpy.nanpercentile", FL_SORT, S_NANPERCENTILE, 1, 2},
    {"numpy.unique", FL_SORT, S_UNIQUE, 1, 1},
    {"numpy.searchsorted", FL_SORT, S_SEARCHSORTED, 1, 2}, /* v may be a keyword */
    {"numpy.arange", FL_ARANGE, 0, 1, 3},
    {"numpy.dot", FL_DOT, 0, 2, 2},
    {"numpy.matmul", FL_DOT, 1, 2, 2}, /* a @ b lowers to it */
    {"numpy.linalg.norm", FL_NORM, 0, 1, 3},
    {"numpy.array", FL_ARRAY, 0, 0, 64},
    {"numpy.cov", FL_COV, 0, 1, 5},
    {"numpy.corrcoef", FL_COV, 1, 1, 3},
    {"numpy.histogram", FL_HIST, 0, 1, 2},
    /* np.random: nprandom.c checks their arguments (arity here unused) */
    {"numpy.random.seed", FL_RANDOM, RN_SEED, 1, 1},
    {"numpy.random.random", FL_RANDOM, RN_RANDOM, 0, 0},
    {"numpy.random.random_sample", FL_RANDOM, RN_RANDOM, 0, 0},
    {"numpy.random.rand", FL_RANDOM, RN_RANDOM, 0, 0},
    {"numpy.random.sample", FL_RANDOM, RN_RANDOM, 0, 0},
    {"numpy.random.uniform", FL_RANDOM, RN_UNIFORM, 0, 2},
    {"numpy.random.normal", FL_RANDOM, RN_NORMAL, 0, 2},
    {"numpy.random.randn", FL_RANDOM, RN_GAUSS, 0, 0},
    {"numpy.random.standard_normal", FL_RANDOM, RN_GAUSS, 0, 0},
    {"numpy.random.randint", FL_RANDOM, RN_RANDINT, 1, 2},
    /* the in-place methods: a.sort(), a.partition(kth) */
    {".sort", FL_SORT, S_SORT_IN_PLACE, 1, 1},
    {".partition", FL_SORT, S_PARTITION_IN_PLACE, 1, 2},
    /* for idx in np.ndindex(shape) lowers to a range loop over these */
    {".ndsize", FL_NDSIZE, M_NONE, 1, 1},
    {".unravel", FL_UNRAVEL, M_NONE, 2, 2},
    /* a.flat[k]: the same, k negative from the end and checked (op 1) */
    {".flatindex", FL_UNRAVEL, 1, 2, 2},
};
/* clang-format on */

enum { NBUILTINS = sizeof(builtins) / sizeof(builtins[0]) };

const CcBuiltin *
cc_builtin(int id)
{
    return &builtins[id];
}

int
cc_builtin_count(void)
{
    return NBUILTINS;
}

int
cc_flavor_elementwise(CcFlavor f)
{
    switch (f) {
    case FL_ABS:
    case FL_CAST:
    case FL_NP:
    case FL_NP_PRED:
    case FL_NP_MINMAX:
    case FL_NP_SIGN:
    case FL_WHERE:
    case FL_CLIP:
    case FL_REAL:
    case FL_IMAG:
    case FL_CONJ:
        return 1;
    default:
        return 0;
    }
}

int
cc_builtin_by_name(const char *name)
{
    for (int i = 0; i < NBUILTINS; i++) {
        if (strcmp(builtins[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

int
cc_builtin_attr(CcFlavor flavor)
{
    for (int i = 0; i < NBUILTINS; i++) {
        if (builtins[i].flavor == flavor) {
            return i;
        }
    }
    return -1;
}

int
cc_math_arity(CcMathOp op)
{
    switch (op) {
    case M_POW:
    case M_ATAN2:
    case M_HYPOT:
    case M_COPYSIGN:
    case M_FMOD:
    case M_MINIMUM:
    case M_MAXIMUM:
    case M_FMIN:
    case M_FMAX:
    case M_LDEXP:
    case M_RECT:
        return 2;
    default:
        return 1;
    }
}

int
cc_builtin_cast(TsKind k)
{
    for (int i = 0; i < NBUILTINS; i++) {
        if (builtins[i].flavor == FL_CAST && builtins[i].op == (int)k) {
            return i;
        }
    }
    return -1;
}

/* Resolves "module.attr" (module "builtins" when there is no dot). */
static PyObject *
resolve_name(const char *dotted)
{
    const char *dot = strrchr(dotted, '.'); /* numpy.linalg.norm: in numpy.linalg */
    if (dotted[0] == '.') {
        return NULL; /* attribute builtins have no object */
    }
    char modname[32] = "builtins";
    const char *attr = dotted;
    if (dot != NULL) {
        size_t n = (size_t)(dot - dotted);
        memcpy(modname, dotted, n);
        modname[n] = '\0';
        attr = dot + 1;
    }
    PyObject *mod = PyImport_ImportModule(modname);
    if (mod == NULL) {
        return NULL;
    }
    PyObject *obj = PyObject_GetAttrString(mod, attr);
    Py_DECREF(mod);
    return obj;
}

static int
build_table(void)
{
    PyObject *table = PyDict_New();
    if (table == NULL) {
        return -1;
    }
    for (int i = 0; i < NBUILTINS; i++) {
        if (builtins[i].name[0] == '.') {
            continue;
        }
        PyObject *obj = resolve_name(builtins[i].name);
        if (obj == NULL) {
            /* a missing attribute in an older NumPy is not fatal */
            PyErr_Clear();
            continue;
        }
        PyObject *id = PyLong_FromLong(i);
        int rc = id == NULL ? -1 : PyDict_SetItem(table, obj, id);
        Py_XDECREF(id);
        Py_DECREF(obj);
        if (rc < 0) {
            Py_DECREF(table);
            return -1;
        }
    }
    /* {builtin object: id}, built on first lookup; lives as long as the
     * process (its keys are module-level functions and types) */
    nv_state.builtin_ids = table;
    return 0;
}

int
cc_builtin_lookup(PyObject *obj)
{
    if (nv_state.builtin_ids == NULL && build_table() < 0) {
        return -2;
    }
    PyObject *id = PyDict_GetItemWithError(nv_state.builtin_ids, obj);
    if (id == NULL) {
        if (PyErr_Occurred()) {
            /* unhashable objects are simply not builtins */
            PyErr_Clear();
        }
        return -1;
    }
    return (int)PyLong_AsLong(id);
}

/* ---- what each flavor does in typecalls.c and emitcall.c (arrays/) ---- */

/* One row per flavor, in columns. */
/* clang-format off */
const CcFlavorOps cc_flavor_ops[FL_COUNT] = {
    [FL_ABS]       = {ti_abs,       ec_abs,       FIT_RESULT},
    [FL_MIN]       = {ti_minmax,    ec_minmax,    FIT_BY_VALUE},
    [FL_MAX]       = {ti_minmax,    ec_minmax,    FIT_BY_VALUE},
    [FL_INT]       = {ti_int_float, ec_convert,   FIT_RESULT},
    [FL_FLOAT]     = {ti_int_float, ec_convert,   FIT_FLOAT},
    [FL_COMPLEX]   = {ti_complex,   ec_complex,   FIT_FLOAT},
    [FL_BOOL]      = {ti_predicate, ec_bool,      FIT_TRUTH},
    [FL_CAST]      = {ti_cast,      ec_convert,   FIT_RESULT},
    [FL_MATH]      = {ti_math,      ec_math,      FIT_FLOAT},
    [FL_MATH_INT]  = {ti_math_int,  ec_math,      FIT_RESULT},
    [FL_MATH_PRED] = {ti_predicate, ec_math,      FIT_FLOAT},
    [FL_NP]        = {ti_np,        ec_math,      FIT_RESULT},
    [FL_NP_PRED]   = {ti_predicate, ec_math,      FIT_FLOAT},
    [FL_NP_MINMAX] = {ti_np,        ec_np_minmax, FIT_RESULT},
    [FL_REAL]      = {ti_part,      ec_part,      FIT_RESULT},
    [FL_IMAG]      = {ti_part,      ec_part,      FIT_RESULT},
    [FL_CONJ]      = {ti_same,      ec_part,      FIT_RESULT},
    [FL_CMATH]     = {ti_cmath,     ec_cmath,     FIT_FLOAT},
    [FL_ROUND]     = {ti_round,     ec_round,     FIT_RESULT},
    [FL_NP_SIGN]   = {ti_np_sign,   ec_sign,      FIT_RESULT},
    [FL_WHERE]     = {ti_where,     ec_where,     FIT_RESULT},
    [FL_CLIP]      = {ti_minmax,    ec_clip,      FIT_RESULT},
    /* lower.c makes these calls operators: their rows are never used */
    [FL_OPERATOR]  = {ti_same,      ec_convert,   FIT_RESULT},
    [FL_ALLOC]     = {ti_array_call, ec_array_call, FIT_RESULT},
    [FL_LIKE]      = {ti_array_call, ec_array_call, FIT_RESULT},
    [FL_REDUCE]    = {ti_array_call, ec_array_call, FIT_RESULT},
    [FL_NDSIZE]    = {ti_array_call, ec_array_call, FIT_RESULT},
    [FL_UNRAVEL]   = {ti_array_call, ec_array_call, FIT_RESULT},
    [FL_SORT]      = {ti_array_call, ec_sort_call,  FIT_RESULT},
    [FL_DOT]       = {ti_array_call, ec_dot_call,   FIT_RESULT},
    [FL_NORM]      = {ti_array_call, ec_dot_call,   FIT_RESULT}, /* rewritten when typed */
    [FL_ARRAY]     = {ti_array_call, ec_dot_call,   FIT_RESULT}, /* a view: never a scalar */
    [FL_COV]       = {ti_array_call, ec_dot_call,   FIT_RESULT}, /* rewritten when typed */
    [FL_HIST] = {ti_array_call, ec_histogram_call, FIT_RESULT},
    [FL_ARANGE]    = {ti_array_call, ec_arange_call, FIT_RESULT},
    [FL_RANDOM]    = {ti_array_call, ec_random_call, FIT_RESULT}, /* typed by ti_random_call */
    [FL_GCD]       = {ti_gcd,       ec_gcd,       FIT_RESULT},
    [FL_RESHAPE]   = {ti_array_call, ec_dot_call,   FIT_RESULT}, /* a view: never a scalar */
};
/* clang-format on */
