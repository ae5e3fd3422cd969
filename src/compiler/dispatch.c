/*
 * dispatch.c - which of a helper's signatures a call takes, as Numba's
 * dispatcher chooses it.
 *
 * A helper given signatures (`@numbavec.jit(['f8(f8)', 'f4(f4)'])`, or a
 * function left on Numba's `@njit([...])`) is inlined like any helper, but
 * its parameters and result take the types of one signature: inline.c
 * (dispatch_loops) writes the signatures into the ND_INLINE node, and
 * typeinfer asks here, once the arguments' types are known.  The choice is
 * Numba's: each argument reaches its parameter exactly, by a promotion
 * (within a kind, wider), a safe conversion or an unsafe one, or not at
 * all; the signature with the fewest unsafe conversions, then safe ones,
 * then promotions wins, the first of equals.  Arrays must match their
 * parameter's dtype and ndim.  The arguments are then cast to it (the
 * parameters are declared variables) and so is the result.
 */
#include "compiler/compiler.h"

#include <string.h>

enum { CV_EXACT, CV_PROMOTE, CV_SAFE, CV_UNSAFE, CV_NONE };

/* Numba's conversion from each scalar kind (row) to each (column), in
 * TsKind order: bool, int8..int64, uint8..uint64, float32, float64,
 * complex64, complex128 (read from numba.core.typeconv's rules). */
#define E CV_EXACT
#define P CV_PROMOTE
#define S CV_SAFE
#define U CV_UNSAFE
#define N CV_NONE
static const unsigned char conversion[TS_NSCALAR][TS_NSCALAR] = {
    {E, S, S, S, S, S, S, S, S, S, S, S, S}, /* bool */
    {U, E, P, P, P, U, U, U, U, S, S, S, S}, /* int8 */
    {U, U, E, P, P, U, U, U, U, S, S, S, S}, /* int16 */
    {U, U, U, E, P, U, U, U, U, U, S, U, S}, /* int32 */
    {U, U, U, U, E, U, U, U, U, U, S, U, S}, /* int64 */
    {U, U, S, S, S, E, P, P, P, S, S, S, S}, /* uint8 */
    {U, U, U, S, S, U, E, P, P, U, S, U, S}, /* uint16 */
    {U, U, U, U, S, U, U, E, P, U, S, U, S}, /* uint32 */
    {U, U, U, U, U, U, U, U, E, U, S, U, S}, /* uint64 */
    {U, U, U, U, U, U, U, U, U, E, P, S, S}, /* float32 */
    {U, U, U, U, U, U, U, U, U, U, E, U, S}, /* float64 */
    {N, N, N, N, N, N, N, N, N, N, N, E, P}, /* complex64 */
    {N, N, N, N, N, N, N, N, N, N, N, U, E}, /* complex128 */
};
#undef E
#undef P
#undef S
#undef U
#undef N

/* Slot k of signature i in n->text (after the '!'): kind and ndim. */
static void
slot(const CcNode *n, int np, int i, int k, TsKind *kind, int *ndim)
{
    const char *at = n->text + 1 + (size_t)i * 2 * (size_t)(np + 1) + 2 * (size_t)k;
    *kind = (TsKind)(at[0] - 'a');
    *ndim = at[1] - '0';
}

/* How an argument of type arg reaches a parameter of kind/ndim: CV_*. */
static int
conversion_of(const CcType *arg, TsKind kind, int ndim)
{
    if (cc_is_array(arg)) {
        return ndim == arg->n && kind == arg->scalar ? CV_EXACT : CV_NONE;
    }
    if (ndim != 0 || arg->kind == CT_TUPLE || kind >= TS_NSCALAR) {
        return CV_NONE;
    }
    /* a Python number is typed as Numba types it: int64, float64, complex128 */
    return conversion[cc_storage(arg)][kind];
}

/* The rank of signature i for args (lower is better), or -1 when one
 * argument cannot reach its parameter: (unsafe, safe, promote) counts. */
static long
rank(const CcNode *n, int np, int i, const CcType **args)
{
    long counts[CV_NONE] = {0};
    for (int k = 0; k < np; k++) {
        TsKind kind;
        int ndim;
        slot(n, np, i, k, &kind, &ndim);
        int c = conversion_of(args[k], kind, ndim);
        if (c == CV_NONE) {
            return -1;
        }
        counts[c]++;
    }
    return (counts[CV_UNSAFE] * TS_MAXARGS + counts[CV_SAFE]) * TS_MAXARGS + counts[CV_PROMOTE];
}

/* The type slot k of signature i gives its variable (arg: the argument's,
 * for an array), or UNKNOWN (NULL) for a result inferred from the body. */
static const CcType *
slot_type(const CcNode *n, int np, int i, int k, const CcType *arg)
{
    TsKind kind;
    int ndim;
    slot(n, np, i, k, &kind, &ndim);
    if (kind >= TS_NSCALAR) {
        return NULL;
    }
    if (ndim != 0) {
        return arg != NULL ? arg : cc_array_type(kind, ndim);
    }
    return cc_scalar_type(kind);
}

/* Slot k of signature i as text ("float64", "float64[:, :]", "void"), appended at buf + *at. */
static void
slot_text(const CcNode *n, int np, int i, int k, char *buf, size_t size, size_t *at)
{
    TsKind kind;
    int ndim;
    slot(n, np, i, k, &kind, &ndim);
    if (*at >= size) {
        return;
    }
    *at += (size_t)snprintf(buf + *at, size - *at, "%s",
                            kind == TS_VOID     ? "void"
                            : kind < TS_NSCALAR ? ts_kind_name(kind)
                                                : "?");
    for (int d = 0; d < ndim && *at < size; d++) {
        *at += (size_t)snprintf(buf + *at, size - *at, "%s%s%s", d ? "" : "[", d ? ", :" : ":",
                                d == ndim - 1 ? "]" : "");
    }
}

/* "float64(float64[:], int64), float32(...)": the signatures, for errors. */
static void
signatures_text(const CcNode *n, int np, int nsig, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < nsig && at < size; i++) {
        if (i) {
            at += (size_t)snprintf(buf + at, size - at, ", ");
        }
        slot_text(n, np, i, np, buf, size, &at);
        for (int k = 0; k < np && at < size; k++) {
            at += (size_t)snprintf(buf + at, size - at, k ? ", " : "(");
            slot_text(n, np, i, k, buf, size, &at);
        }
        if (at < size) {
            at += (size_t)snprintf(buf + at, size - at, np ? ")" : "()");
        }
    }
}

/* TypingError: no signature takes these arguments. */
static int
no_signature(CcFunction *fn, const CcNode *n, int np, int nsig, const CcType **args)
{
    char got[512] = "", sigs[1024], name[96];
    size_t at = 0;
    for (int k = 0; k < np && at < sizeof(got); k++) {
        at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%s", k ? ", " : "",
                               cc_type_name(args[k], name, sizeof(name)));
    }
    signatures_text(n, np, nsig, sigs, sizeof(sigs));
    const char *helper = n->var->name, *end = strchr(helper, '@');
    return cc_error(fn, n->loc,
                    "no signature of %.*s() takes (%s): its signatures are %s (as Numba's "
                    "dispatcher, numbavec converts the arguments to one of them; none is "
                    "reached from these types)",
                    (int)(end != NULL ? end - helper : (long)strlen(helper)), helper, got, sigs);
}

int
cc_dispatch_types(CcFunction *fn, CcNode *n, const CcType **args, int np, int *changed)
{
    int nsig = (int)(strlen(n->text) - 1) / (2 * (np + 1)), best = -1;
    long best_rank = 0;
    for (int i = 0; i < nsig; i++) {
        long r = rank(n, np, i, args);
        if (r >= 0 && (best < 0 || r < best_rank)) {
            best = i;
            best_rank = r;
        }
    }
    if (best < 0) {
        return no_signature(fn, n, np, nsig, args);
    }
    for (int k = 0; k <= np; k++) {
        CcVar *v = k < np ? n->then->args[k]->var : n->var;
        const CcType *t = slot_type(n, np, best, k, k < np ? args[k] : NULL);
        if (t != NULL && v->declared && v->ty != t) {
            v->ty = t;
            *changed = 1;
        }
    }
    return 0;
}
