/*
 * typesig.h - numbavec's type objects and the signature grammar.
 *
 * Owns: the scalar kinds (TsKind) shared by every area, the Python-visible
 * type objects (numbavec.float32, float64[:], void, ...) and the parsing of
 * user signatures (strings, type objects called as functions, argument
 * tuples, lists of any of them) into TsSignature values.
 *
 *   types.c   TsKind tables, the Type and Signature Python classes
 *   parse.c   the string grammar: "float32(float32, f4[:, ::1])", "(i8, f8)"
 */
#ifndef NV_TYPESIG_H
#define NV_TYPESIG_H

#include "common.h"

/* Scalar kinds, in NumPy's promotion order within each family. */
typedef enum TsKind {
    TS_BOOL,
    TS_INT8,
    TS_INT16,
    TS_INT32,
    TS_INT64,
    TS_UINT8,
    TS_UINT16,
    TS_UINT32,
    TS_UINT64,
    TS_FLOAT32,
    TS_FLOAT64,
    TS_COMPLEX64,
    TS_COMPLEX128,
    TS_NSCALAR,           /* number of scalar kinds */
    TS_VOID = TS_NSCALAR, /* a gufunc's result */
    TS_INFER,             /* return type left out: inferred by the compiler */
} TsKind;

#define TS_MAXARGS 32 /* NPY_MAXARGS is 64; a kernel takes fewer */
#define TS_MAXDIMS 32
#define TS_STRSIZE 4096 /* fits any signature written by ts_signature_str */

/* A scalar (ndim == 0) or an array of scalars (gufunc arguments). */
typedef struct TsType {
    TsKind kind;
    int ndim;   /* 0: scalar */
    int contig; /* 1: the last dimension was written "::1" */
} TsType;

typedef struct TsSignature {
    TsType ret; /* kind TS_INFER when the return type was left out */
    int nargs;
    TsType args[TS_MAXARGS];
} TsSignature;

/* ---- types.c ---- */

int ts_init_module(PyObject *module);               /* adds the type objects; 0/-1 */
const char *ts_kind_name(TsKind kind);              /* "float32" */
int ts_kind_typenum(TsKind kind);                   /* NPY_FLOAT32 ...; -1 for void */
int ts_kind_from_typenum(int typenum, TsKind *out); /* 0, or -1 (no exception) */
/*
 * The blanks of a caret line under `text` up to `at`: one per character,
 * tabs kept so that the caret lines up, UTF-8 continuation bytes skipped
 * (one column per code point).  New PyMem string, or NULL with MemoryError.
 */
char *ts_caret_padding(const char *text, const char *at);
int ts_itemsize(TsKind kind); /* 0 for void */
int ts_is_int(TsKind k);      /* signed or unsigned, not bool */
int ts_is_signed(TsKind k);
int ts_is_float(TsKind k);
int ts_is_complex(TsKind k);
int ts_bits(TsKind k); /* 8..64; complex: of one part */
/* Writes "float32(float32, float64[:, ::1])" into buf; returns buf. */
const char *ts_signature_str(const TsSignature *sig, char *buf, size_t size);
/* Writes "float64[:, ::1]" into buf; returns buf. */
const char *ts_type_str(const TsType *t, char *buf, size_t size);
/* Looks up a type name ("float32", "f4", "intp", ...); 0, or -1 (no exception). */
int ts_kind_from_name(const char *name, size_t len, TsKind *out);
/* New references to Python Type / Signature objects; NULL with an exception. */
PyObject *ts_type_to_object(const TsType *t);
PyObject *ts_signature_to_object(const TsSignature *sig);
/* If obj is a Type (a Signature), copies it into *out and returns 1; else 0. */
int ts_type_check(PyObject *obj, TsType *out);
int ts_signature_check(PyObject *obj, TsSignature *out);

/* ---- parse.c ---- */

/*
 * Parses one signature: a str, a Signature object, a tuple of types or
 * type names (return type left out), or a single Type (a return type with
 * no arguments is not a signature: TypeError).  0 on success, -1 with
 * TypeError/ValueError quoting the string and pointing at the bad part.
 */
int ts_parse_signature(PyObject *obj, TsSignature *out);

/*
 * Parses a signature or a list/tuple-of-signatures into a new PyMem array
 * (*out, *count); the caller frees it with PyMem_Free.  A bare tuple of
 * types is one signature, not a list; [] and () are none (count 0), and
 * '' is an error.  0/-1.
 */
int ts_parse_signature_list(PyObject *obj, TsSignature **out, Py_ssize_t *count);
/* The same for a helper's signatures (@numbavec.jit, numba.njit), whose
 * return may be an array: float64[:](float64[:]). */
int ts_parse_helper_signature(PyObject *obj, TsSignature *out);
int ts_parse_helper_signature_list(PyObject *obj, TsSignature **out, Py_ssize_t *count);

/* Parses a single type name such as "f4" or "float64[::1]"; 0/-1. */
int ts_parse_type_str(const char *text, TsType *out);

#endif /* NV_TYPESIG_H */
