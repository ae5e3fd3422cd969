/*
 * runtime.c: what compiled kernels call that is better written once in C
 * than emitted per kernel: np.sort, argsort, partition, median, quantile,
 * unique and searchsorted; print()'s line; a raise's site.
 *
 * The kernels reach these functions by name: jit.c defines each name in
 * the JIT's symbol table (cc_runtime_symbols), so that code loaded from the
 * cache links to this process's copy (random.c's generator functions are
 * in the same table).  The sorting functions take a kind
 * (TsKind) and raw element pointers, hold no state and take no lock: the
 * parallel target calls them from many threads at once.  print keeps its
 * line per thread, and takes one lock to write it.
 *
 * Order.  Everything sorts as NumPy does: NaNs last, and complex values
 * lexicographically with the NaN-holding ones after the others, in the
 * order R + Rj < R + nanj < nan + Rj < nan + nanj.  argsort is stable
 * (NumPy's kind='stable'); sort is not, which only shows in the order of
 * equal values (0.0 and -0.0).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiler.h"

typedef struct {
    float re, im;
} Cf;
typedef struct {
    double re, im;
} Cd;

/* a < b, NaNs last */
#define LT_INT(a, b) ((a) < (b))
/* isless: a quiet compare (NumPy's sort raises no 'invalid' flag on NaNs) */
#define LT_FLT(a, b) (isless(a, b) || ((b) != (b) && (a) == (a)))
/* complex: the NaN class (re NaN: 2, im NaN: 1) first, then the parts that
 * are numbers, real before imaginary */
#define NANCLASS(z) (((z).re != (z).re) * 2 + ((z).im != (z).im))
#define LT_CPX(a, b)                                                                               \
    (NANCLASS(a) != NANCLASS(b)                                                                    \
         ? NANCLASS(a) < NANCLASS(b)                                                               \
         : ((a).re == (a).re && (a).re != (b).re ? (a).re < (b).re                                 \
                                                 : (a).im == (a).im && (a).im < (b).im))
#define EQ_INT(a, b) ((a) == (b))
#define EQ_FLT(a, b) ((a) == (b) || ((a) != (a) && (b) != (b)))
#define EQ_CPX(a, b) (NANCLASS(a) != 0 ? NANCLASS(b) != 0 : (a).re == (b).re && (a).im == (b).im)
#define NAN_NONE(x)  0
#define NAN_FLT(x)   ((x) != (x))
#define NAN_CPX(x)   (NANCLASS(x) != 0)

#define SMALL 16

/* Partitions before introsort/introselect falls back to heapsort: 2 log2 n. */
static int
depth_limit(int64_t n)
{
    int depth = 0;
    for (; n > 1; n >>= 1) {
        depth += 2;
    }
    return depth;
}

/*
 * For each element type T (suffix S, order LT, equality EQ, NaN test ISNAN):
 *   sort_S(v, n)          introsort in place (quicksort, median of three,
 *                         heapsort past 2 log2 n levels, insertion below SMALL)
 *   select_S(v, n, k)     v[k] is the k-th smallest, smaller ones before it,
 *                         larger after (introselect, same partition)
 *   argsort_S(v, idx, tmp, n)  idx sorted stably by v[idx] (merge sort; tmp
 *                         holds n / 2 + 1 indices)
 *   unique_S(v, n)        v sorted, equal values (all NaNs) kept once: the count
 *   search_S(a, n, as, x, right)  the first i with x < a[i] (right) or
 *                         !(a[i] < x) (left), a sorted with byte stride as
 */
#define DEFINE_ORDER(S, T, LT, EQ, ISNAN)                                                          \
    static void insertion_##S(T *v, int64_t n)                                                     \
    {                                                                                              \
        for (int64_t i = 1; i < n; i++) {                                                          \
            T x = v[i];                                                                            \
            int64_t j = i;                                                                         \
            for (; j > 0 && LT(x, v[j - 1]); j--) {                                                \
                v[j] = v[j - 1];                                                                   \
            }                                                                                      \
            v[j] = x;                                                                              \
        }                                                                                          \
    }                                                                                              \
    static void sift_##S(T *v, int64_t i, int64_t n)                                               \
    {                                                                                              \
        T x = v[i];                                                                                \
        for (int64_t c; (c = 2 * i + 1) < n; i = c) {                                              \
            if (c + 1 < n && LT(v[c], v[c + 1])) {                                                 \
                c++;                                                                               \
            }                                                                                      \
            if (!LT(x, v[c])) {                                                                    \
                break;                                                                             \
            }                                                                                      \
            v[i] = v[c];                                                                           \
        }                                                                                          \
        v[i] = x;                                                                                  \
    }                                                                                              \
    static void heapsort_##S(T *v, int64_t n)                                                      \
    {                                                                                              \
        for (int64_t i = n / 2; i-- > 0;) {                                                        \
            sift_##S(v, i, n);                                                                     \
        }                                                                                          \
        for (int64_t end = n - 1; end > 0; end--) {                                                \
            T t = v[0];                                                                            \
            v[0] = v[end];                                                                         \
            v[end] = t;                                                                            \
            sift_##S(v, 0, end);                                                                   \
        }                                                                                          \
    }                                                                                              \
    /* Partitions v[0:n] (n > SMALL) around the median of three: returns p, \
     * with v[:p] <= v[p] <= v[p+1:] */                      \
    static int64_t partition_##S(T *v, int64_t n)                                                  \
    {                                                                                              \
        T t;                                                                                       \
        int64_t m = n / 2;                                                                         \
        if (LT(v[m], v[0])) {                                                                      \
            t = v[m], v[m] = v[0], v[0] = t;                                                       \
        }                                                                                          \
        if (LT(v[n - 1], v[m])) {                                                                  \
            t = v[m], v[m] = v[n - 1], v[n - 1] = t;                                               \
            if (LT(v[m], v[0])) {                                                                  \
                t = v[m], v[m] = v[0], v[0] = t;                                                   \
            }                                                                                      \
        }                                                                                          \
        T pivot = v[m];                                                                            \
        v[m] = v[n - 2], v[n - 2] = pivot;                                                         \
        int64_t i = 0, j = n - 2;                                                                  \
        for (;;) {                                                                                 \
            do {                                                                                   \
                i++;                                                                               \
            } while (LT(v[i], pivot));                                                             \
            do {                                                                                   \
                j--;                                                                               \
            } while (LT(pivot, v[j]));                                                             \
            if (i >= j) {                                                                          \
                break;                                                                             \
            }                                                                                      \
            t = v[i], v[i] = v[j], v[j] = t;                                                       \
        }                                                                                          \
        v[n - 2] = v[i], v[i] = pivot;                                                             \
        return i;                                                                                  \
    }                                                                                              \
    static void sort_##S(T *v, int64_t n)                                                          \
    {                                                                                              \
        int depth = depth_limit(n);                                                                \
        while (n > SMALL) {                                                                        \
            if (depth-- == 0) {                                                                    \
                heapsort_##S(v, n);                                                                \
                return;                                                                            \
            }                                                                                      \
            int64_t p = partition_##S(v, n);                                                       \
            /* the smaller side by recursion (at most log2 n deep), the \
             * larger by the loop */                          \
            if (p < n - 1 - p) {                                                                   \
                sort_##S(v, p);                                                                    \
                v += p + 1, n -= p + 1;                                                            \
            } else {                                                                               \
                sort_##S(v + p + 1, n - p - 1);                                                    \
                n = p;                                                                             \
            }                                                                                      \
        }                                                                                          \
        insertion_##S(v, n);                                                                       \
    }                                                                                              \
    static void select_##S(T *v, int64_t n, int64_t k)                                             \
    {                                                                                              \
        int depth = depth_limit(n);                                                                \
        while (n > SMALL) {                                                                        \
            if (depth-- == 0) {                                                                    \
                heapsort_##S(v, n);                                                                \
                return;                                                                            \
            }                                                                                      \
            int64_t p = partition_##S(v, n);                                                       \
            if (k == p) {                                                                          \
                return;                                                                            \
            }                                                                                      \
            if (k < p) {                                                                           \
                n = p;                                                                             \
            } else {                                                                               \
                v += p + 1, n -= p + 1, k -= p + 1;                                                \
            }                                                                                      \
        }                                                                                          \
        insertion_##S(v, n);                                                                       \
    }                                                                                              \
    static void argsort_##S(const T *v, int64_t *idx, int64_t *tmp, int64_t n)                     \
    {                                                                                              \
        if (n <= SMALL) {                                                                          \
            for (int64_t i = 1; i < n; i++) {                                                      \
                int64_t x = idx[i], j = i;                                                         \
                for (; j > 0 && LT(v[x], v[idx[j - 1]]); j--) {                                    \
                    idx[j] = idx[j - 1];                                                           \
                }                                                                                  \
                idx[j] = x;                                                                        \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        int64_t h = n / 2;                                                                         \
        argsort_##S(v, idx, tmp, h);                                                               \
        argsort_##S(v, idx + h, tmp, n - h);                                                       \
        if (!LT(v[idx[h]], v[idx[h - 1]])) {                                                       \
            return; /* already in order */                                                         \
        }                                                                                          \
        memcpy(tmp, idx, sizeof(int64_t) * (size_t)h);                                             \
        int64_t i = 0, j = h, o = 0;                                                               \
        while (i < h && j < n) {                                                                   \
            idx[o++] = LT(v[idx[j]], v[tmp[i]]) ? idx[j++] : tmp[i++];                             \
        }                                                                                          \
        while (i < h) {                                                                            \
            idx[o++] = tmp[i++];                                                                   \
        }                                                                                          \
    }                                                                                              \
    static int64_t unique_##S(T *v, int64_t n)                                                     \
    {                                                                                              \
        sort_##S(v, n);                                                                            \
        int64_t k = 0;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                          \
            if (k == 0 || !(EQ(v[k - 1], v[i]) || (ISNAN(v[k - 1]) && ISNAN(v[i])))) {             \
                v[k++] = v[i];                                                                     \
            }                                                                                      \
        }                                                                                          \
        return k;                                                                                  \
    }                                                                                              \
    static int64_t search_##S(const char *a, int64_t n, int64_t as, T x, int right)                \
    {                                                                                              \
        int64_t lo = 0, hi = n;                                                                    \
        while (lo < hi) {                                                                          \
            int64_t mid = lo + (hi - lo) / 2;                                                      \
            T y;                                                                                   \
            memcpy(&y, a + mid * as, sizeof(T));                                                   \
            if (right ? !LT(x, y) : LT(y, x)) {                                                    \
                lo = mid + 1;                                                                      \
            } else {                                                                               \
                hi = mid;                                                                          \
            }                                                                                      \
        }                                                                                          \
        return lo;                                                                                 \
    }

DEFINE_ORDER(b, uint8_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(i8, int8_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(i16, int16_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(i32, int32_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(i64, int64_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(u8, uint8_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(u16, uint16_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(u32, uint32_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(u64, uint64_t, LT_INT, EQ_INT, NAN_NONE)
DEFINE_ORDER(f32, float, LT_FLT, EQ_FLT, NAN_FLT)
DEFINE_ORDER(f64, double, LT_FLT, EQ_FLT, NAN_FLT)
DEFINE_ORDER(c64, Cf, LT_CPX, EQ_CPX, NAN_CPX)
DEFINE_ORDER(c128, Cd, LT_CPX, EQ_CPX, NAN_CPX)

/* One switch over the kinds: CALL(suffix, type) for kind k. */
#define DISPATCH(k, CALL)                                                                          \
    switch ((TsKind)(k)) {                                                                         \
    case TS_BOOL:                                                                                  \
        CALL(b, uint8_t);                                                                          \
        break;                                                                                     \
    case TS_INT8:                                                                                  \
        CALL(i8, int8_t);                                                                          \
        break;                                                                                     \
    case TS_INT16:                                                                                 \
        CALL(i16, int16_t);                                                                        \
        break;                                                                                     \
    case TS_INT32:                                                                                 \
        CALL(i32, int32_t);                                                                        \
        break;                                                                                     \
    case TS_INT64:                                                                                 \
        CALL(i64, int64_t);                                                                        \
        break;                                                                                     \
    case TS_UINT8:                                                                                 \
        CALL(u8, uint8_t);                                                                         \
        break;                                                                                     \
    case TS_UINT16:                                                                                \
        CALL(u16, uint16_t);                                                                       \
        break;                                                                                     \
    case TS_UINT32:                                                                                \
        CALL(u32, uint32_t);                                                                       \
        break;                                                                                     \
    case TS_UINT64:                                                                                \
        CALL(u64, uint64_t);                                                                       \
        break;                                                                                     \
    case TS_FLOAT32:                                                                               \
        CALL(f32, float);                                                                          \
        break;                                                                                     \
    case TS_FLOAT64:                                                                               \
        CALL(f64, double);                                                                         \
        break;                                                                                     \
    case TS_COMPLEX64:                                                                             \
        CALL(c64, Cf);                                                                             \
        break;                                                                                     \
    case TS_COMPLEX128:                                                                            \
        CALL(c128, Cd);                                                                            \
        break;                                                                                     \
    default:                                                                                       \
        break;                                                                                     \
    }

static size_t
itemsize(int kind)
{
    return (size_t)ts_itemsize((TsKind)kind);
}

/*
 * Calls row(ctx, data, k) for each row (1-d along the last axis) of the
 * ndim-d array (data, shape, strides), k counting the rows in C order.
 */
typedef int (*RowFn)(void *ctx, char *row, int64_t k);

static int
each_row(int ndim, char *data, const int64_t *shape, const int64_t *strides, RowFn row, void *ctx)
{
    int64_t rows = 1, at[TS_MAXDIMS] = {0};
    for (int d = 0; d < ndim - 1; d++) {
        rows *= shape[d];
    }
    if (shape[ndim - 1] == 0) {
        return 0;
    }
    for (int64_t k = 0; k < rows; k++) {
        char *p = data;
        for (int d = 0; d < ndim - 1; d++) {
            p += at[d] * strides[d];
        }
        int st = row(ctx, p, k);
        if (st != 0) {
            return st;
        }
        for (int d = ndim - 2; d >= 0 && ++at[d] == shape[d]; d--) {
            at[d] = 0;
        }
    }
    return 0;
}

typedef struct SortRows {
    int kind;
    int64_t n, stride; /* a row's length and byte stride */
    int64_t kth;       /* partition: the position placed; sort: -1 */
    char *buf;         /* a contiguous copy of a strided row */
    int64_t *idx, *tmp;
    int64_t *out; /* argsort: the indices, C order */
} SortRows;

static void
sort_contiguous(const SortRows *s, char *v)
{
#define SORT(S, T)                                                                                 \
    if (s->kth < 0) {                                                                              \
        sort_##S((T *)v, s->n);                                                                    \
    } else {                                                                                       \
        select_##S((T *)v, s->n, s->kth);                                                          \
    }
    DISPATCH(s->kind, SORT)
#undef SORT
}

static void
gather(char *dst, const char *src, int64_t n, int64_t stride, size_t size)
{
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + (size_t)i * size, src + i * stride, size);
    }
}

static void
scatter(char *dst, const char *src, int64_t n, int64_t stride, size_t size)
{
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + i * stride, src + (size_t)i * size, size);
    }
}

static int
sort_row(void *ctx, char *row, int64_t k)
{
    const SortRows *s = ctx;
    size_t size = itemsize(s->kind);
    if (s->buf == NULL) {
        sort_contiguous(s, row);
        return 0;
    }
    gather(s->buf, row, s->n, s->stride, size);
    sort_contiguous(s, s->buf);
    scatter(row, s->buf, s->n, s->stride, size);
    return 0;
}

/*
 * Sorts each row of the array along its last axis in place (kth < 0), or
 * partitions it so that position kth (already in range) holds what sorting
 * would put there.  A status (CC_STATUS_NOMEM when a strided row's copy
 * cannot be made).
 */
int
numbavec_rt_sort(int kind, int ndim, char *data, const int64_t *shape, const int64_t *strides,
                 int64_t kth)
{
    SortRows s = {.kind = kind, .n = shape[ndim - 1], .stride = strides[ndim - 1], .kth = kth};
    if (s.stride != (int64_t)itemsize(kind) && s.n > 1) {
        if ((s.buf = malloc((size_t)s.n * itemsize(kind))) == NULL) {
            return CC_STATUS_NOMEM;
        }
    }
    int st = each_row(ndim, data, shape, strides, sort_row, &s);
    free(s.buf);
    return st;
}

static int
argsort_row(void *ctx, char *row, int64_t k)
{
    const SortRows *s = ctx;
    int64_t *idx = s->out + k * s->n;
    gather(s->buf, row, s->n, s->stride, itemsize(s->kind));
    for (int64_t i = 0; i < s->n; i++) {
        idx[i] = i;
    }
#define ARGSORT(S, T) argsort_##S((const T *)s->buf, idx, s->tmp, s->n)
    DISPATCH(s->kind, ARGSORT)
#undef ARGSORT
    return 0;
}

/* out (C order, the array's shape): each row's indices in the order that
 * sorts it, stably. */
int
numbavec_rt_argsort(int kind, int ndim, char *data, const int64_t *shape, const int64_t *strides,
                    int64_t *out)
{
    SortRows s = {.kind = kind, .n = shape[ndim - 1], .stride = strides[ndim - 1], .out = out};
    s.buf = malloc((size_t)s.n * itemsize(kind) + 1);
    s.tmp = malloc(sizeof(int64_t) * (size_t)(s.n / 2 + 1));
    int st = s.buf == NULL || s.tmp == NULL ? CC_STATUS_NOMEM
                                            : each_row(ndim, data, shape, strides, argsort_row, &s);
    free(s.buf);
    free(s.tmp);
    return st;
}

/* v[k] as a double (ints, floats). */
static double
as_double(int kind, const char *v, int64_t k)
{
    double x = 0;
#define LOAD(S, T)                                                                                 \
    do {                                                                                           \
        T y;                                                                                       \
        memcpy(&y, v + (size_t)k * sizeof(T), sizeof(T));                                          \
        x = (double)y;                                                                             \
    } while (0)
#define LOAD_REAL(S, T) LOAD(S, T)
    switch ((TsKind)kind) {
    case TS_BOOL:
        LOAD(b, uint8_t);
        break;
    case TS_INT8:
        LOAD(i8, int8_t);
        break;
    case TS_INT16:
        LOAD(i16, int16_t);
        break;
    case TS_INT32:
        LOAD(i32, int32_t);
        break;
    case TS_INT64:
        LOAD(i64, int64_t);
        break;
    case TS_UINT8:
        LOAD(u8, uint8_t);
        break;
    case TS_UINT16:
        LOAD(u16, uint16_t);
        break;
    case TS_UINT32:
        LOAD(u32, uint32_t);
        break;
    case TS_UINT64:
        LOAD(u64, uint64_t);
        break;
    case TS_FLOAT32:
        LOAD(f32, float);
        break;
    case TS_FLOAT64:
        LOAD(f64, double);
        break;
    default:
        break;
    }
#undef LOAD
#undef LOAD_REAL
    return x;
}

/*
 * The q-th quantile (0 <= q <= 1) of the n elements of v (contiguous, of
 * a real kind; reordered here), into *result (float32 for float32, else
 * float64), as NumPy computes it:
 *   median (mode & CC_Q_MEDIAN): the middle element, or the mean of the
 *     two middle ones, in the result's kind;
 *   quantile: NumPy's 'linear' method, v[i] + (v[i+1] - v[i]) * g at the
 *     virtual index (n - 1) q = i + g, computed from the far end when
 *     g >= 0.5 (NumPy's _lerp), in float64 and rounded once (NumPy 2.2
 *     does so for float32 too; 2.5 computes in float32, which can differ
 *     in the last bit);
 *   a NaN among the elements makes the result NaN, unless mode &
 *   CC_Q_SKIPNAN, which leaves the NaNs out (all NaN, or none: NaN).
 * A status: CC_STATUS_QUANTILE for q outside [0, 1], CC_STATUS_INDEX for
 * the quantile (not median, not nan*) of no elements, as NumPy's.
 */
int
numbavec_rt_quantile(int kind, int64_t n, char *v, double q, int mode, void *result)
{
    int f32 = kind == TS_FLOAT32;
    if (!(isgreaterequal(q, 0.0) && islessequal(q, 1.0))) {
        return CC_STATUS_QUANTILE;
    }
    if (n == 0 && !(mode & (CC_Q_MEDIAN | CC_Q_SKIPNAN))) {
        return CC_STATUS_INDEX; /* NumPy's quantile of nothing: an IndexError */
    }
    double r = NAN;
    if (kind == TS_FLOAT32 || kind == TS_FLOAT64) {
        /* the NaNs to the end: counted, then left out or the answer */
        int64_t nans = 0;
        if (kind == TS_FLOAT32) {
            float *x = (float *)v;
            for (int64_t i = 0; i < n; i++) {
                float t = x[i];
                x[i - nans] = t;
                nans += t != t;
            }
        } else {
            double *x = (double *)v;
            for (int64_t i = 0; i < n; i++) {
                double t = x[i];
                x[i - nans] = t;
                nans += t != t;
            }
        }
        if (nans > 0 && !(mode & CC_Q_SKIPNAN)) {
            n = 0; /* the answer is NaN */
        }
        n -= nans > 0 && (mode & CC_Q_SKIPNAN) ? nans : 0;
    }
    if (n > 0) {
        double pos = (mode & CC_Q_MEDIAN) ? (double)(n - 1) / 2 : (double)(n - 1) * q;
        int64_t i = (int64_t)floor(pos);
        if (i > n - 1) {
            i = n - 1;
        }
        int64_t j = i + 1 < n ? i + 1 : n - 1;
        double g = pos - (double)i;
#define SELECT(S, T)                                                                               \
    do {                                                                                           \
        select_##S((T *)v, n, i);                                                                  \
        if (j > i) {                                                                               \
            select_##S((T *)v + i + 1, n - i - 1, 0); /* the next is the least of the rest */      \
        }                                                                                          \
    } while (0)
        DISPATCH(kind, SELECT)
#undef SELECT
        if (f32 && (mode & CC_Q_MEDIAN)) {
            /* NumPy's mean of the middle two: in float32 */
            float a = ((float *)v)[i], b = ((float *)v)[j];
            *(float *)result = j > i && (n % 2) == 0 ? (a + b) / 2 : a;
            return 0;
        }
        double a = as_double(kind, v, i), b = as_double(kind, v, j);
        if (mode & CC_Q_MEDIAN) {
            r = (n % 2) == 0 ? (a + b) / 2 : a;
        } else {
            double d = b - a;
            r = g >= 0.5 ? b - d * (1 - g) : a + d * g;
        }
    }
    if (f32) {
        *(float *)result = (float)r;
    } else {
        *(double *)result = r;
    }
    return 0;
}

/* Sorts the n elements of v (contiguous) and keeps each value once (all
 * NaNs as one, as NumPy's equal_nan=True): the count kept. */
int64_t
numbavec_rt_unique(int kind, int64_t n, char *v)
{
    int64_t k = n;
#define UNIQUE(S, T) k = unique_##S((T *)v, n)
    DISPATCH(kind, UNIQUE)
#undef UNIQUE
    return k;
}

/* For each of the m values x (byte stride xs), the index at which it would
 * be inserted into the sorted a (n elements, byte stride as) to keep it
 * sorted: before equal elements, or after them (right). */
void
numbavec_rt_searchsorted(int kind, const char *a, int64_t n, int64_t as, const char *x, int64_t m,
                         int64_t xs, int64_t *out, int right)
{
#define SEARCH(S, T)                                                                               \
    for (int64_t i = 0; i < m; i++) {                                                              \
        T y;                                                                                       \
        memcpy(&y, x + i * xs, sizeof(T));                                                         \
        out[i] = search_##S(a, n, as, y, right);                                                   \
    }
    DISPATCH(kind, SEARCH)
#undef SEARCH
}

/* ---- raise ---- */

/* The first site a kernel raised at on this thread (compiler.h). */
static _Thread_local const char *raised_site;

const char cc_site_failed[] = "(no machine code)";

void
numbavec_raise(const char *site)
{
    if (raised_site == NULL) {
        raised_site = site;
    }
}

const char *
cc_take_raised(void)
{
    const char *site = raised_site;
    raised_site = NULL;
    return site;
}

void
cc_put_raised(const char *site)
{
    numbavec_raise(site);
}

/* ---- print ---- */

/*
 * A thread's line so far (emitprint.c: a print's pieces come in one
 * straight run of calls), written whole by numbavec_print_end.  The first
 * LINE_INLINE bytes live here; a longer line moves to the heap, freed once
 * written.  A line that cannot be held (no memory) is dropped whole.
 */
enum { LINE_INLINE = 4096 };

static _Thread_local struct {
    char inline_text[LINE_INLINE];
    char *heap; /* the line when longer, or NULL */
    size_t len, cap;
    int lost; /* a piece could not be held: the line is dropped */
} line;

/* One line at a time on stdout, from every thread (a write of more than
 * PIPE_BUF bytes to a pipe, or one written in parts, could mix with
 * another's); a child forked while a thread held it gets it free. */
static pthread_mutex_t stdout_lock = PTHREAD_MUTEX_INITIALIZER;

static void
lock_before_fork(void)
{
    pthread_mutex_lock(&stdout_lock);
}

static void
unlock_after_fork(void)
{
    pthread_mutex_unlock(&stdout_lock);
}

static char *
line_text(void)
{
    return line.heap != NULL ? line.heap : line.inline_text;
}

/* Room for n more bytes, or lost. */
static int
make_room(size_t n)
{
    size_t cap = line.heap != NULL ? line.cap : sizeof(line.inline_text);
    if (line.len + n <= cap) {
        return 1;
    }
    size_t want = cap * 2 > line.len + n ? cap * 2 : line.len + n;
    char *grown = realloc(line.heap, want);
    if (grown == NULL) {
        line.lost = 1;
        return 0;
    }
    if (line.heap == NULL) {
        memcpy(grown, line.inline_text, line.len);
    }
    line.heap = grown;
    line.cap = want;
    return 1;
}

static void
append(const char *s, size_t n)
{
    if (!line.lost && make_room(n)) {
        memcpy(line_text() + line.len, s, n);
        line.len += n;
    }
}

/* Writes text[0:len] to stdout whole (EINTR resumed); nowhere to write: dropped, as print's
 * line would be. */
static void
write_whole(const char *text, size_t len)
{
    pthread_mutex_lock(&stdout_lock);
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(1, text + done, len - done);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        done += (size_t)w;
    }
    pthread_mutex_unlock(&stdout_lock);
}

void
numbavec_print_str(const char *s)
{
    append(s, strlen(s));
}

void
numbavec_print_int(int64_t v, int is_unsigned)
{
    char buf[32];
    int n = is_unsigned ? snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v)
                        : snprintf(buf, sizeof(buf), "%lld", (long long)v);
    append(buf, (size_t)n);
}

void
numbavec_print_bool(int v)
{
    numbavec_print_str(v ? "True" : "False");
}

/* Where NumPy's str of a float32 turns to d.ddde+XX: 1e16 before NumPy 2.3,
 * 1e6 since (cc_runtime_init asks the NumPy this process runs). */
static double float32_limit = 1e16;

int
cc_runtime_init(void)
{
    static int at_fork; /* registered once: the JIT is made once */
    if (!at_fork && pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork) == 0) {
        at_fork = 1;
    }
    cc_random_init();
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *v = np ? PyObject_CallMethod(np, "float32", "d", 1e6) : NULL;
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *text = s ? PyUnicode_AsUTF8AndSize(s, NULL) : NULL;
    if (text != NULL) {
        float32_limit = strchr(text, 'e') != NULL ? 1e6 : 1e16;
    }
    Py_XDECREF(np);
    Py_XDECREF(v);
    Py_XDECREF(s);
    return text != NULL ? 0 : -1;
}

/*
 * Python's repr of a float (NumPy's str of a float32, single): the fewest
 * significant digits that read back as v, positional from 1e-4 up to 1e16
 * (float32_limit for a float32), else d.ddde+XX; a float always shows a
 * decimal point.
 */
static void
format_float(double v, int single, char *out, size_t size)
{
    if (isnan(v)) {
        snprintf(out, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, v < 0 ? "-inf" : "inf");
        return;
    }
    char sci[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(sci, sizeof(sci), "%.*e", prec, v);
        if (single ? strtof(sci, NULL) == (float)v : strtod(sci, NULL) == v) {
            break;
        }
    }
    /* sci: [-]d[.ddd]e[+-]XX */
    char digits[24];
    size_t nd = 0;
    const char *p = sci;
    int negative = *p == '-';
    p += negative;
    for (; *p != 'e'; p++) {
        if (*p != '.') {
            digits[nd++] = *p;
        }
    }
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') {
        nd--;
    }
    size_t at = 0;
    if (negative) {
        out[at++] = '-';
    }
    double a = fabs(v);
    if (a != 0.0 && (a < 1e-4 || a >= (single ? float32_limit : 1e16))) {
        out[at++] = digits[0];
        if (nd > 1) {
            out[at++] = '.';
            memcpy(out + at, digits + 1, nd - 1);
            at += nd - 1;
        }
        snprintf(out + at, size - at, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        return;
    }
    if (exp < 0) {
        out[at++] = '0';
        out[at++] = '.';
        for (int z = -1; z > exp; z--) {
            out[at++] = '0';
        }
        memcpy(out + at, digits, nd);
        at += nd;
    } else {
        for (int i = 0; i <= exp; i++) {
            out[at++] = (size_t)i < nd ? digits[i] : '0';
        }
        out[at++] = '.';
        if ((size_t)exp + 1 < nd) {
            memcpy(out + at, digits + exp + 1, nd - (size_t)exp - 1);
            at += nd - (size_t)exp - 1;
        } else {
            out[at++] = '0';
        }
    }
    out[at] = '\0';
}

void
numbavec_print_float(double v, int single)
{
    char buf[64];
    format_float(v, single, buf, sizeof(buf));
    numbavec_print_str(buf);
}

/* Python's repr of a complex: "(re+imj)", or "imj" when re is +0.0 */
void
numbavec_print_complex(double re, double im, int single)
{
    char r[64], i[64];
    format_float(im, single, i, sizeof(i));
    /* the imaginary part shows no ".0" when it is integral */
    size_t n = strlen(i);
    if (n > 2 && strcmp(i + n - 2, ".0") == 0) {
        i[n - 2] = '\0';
    }
    if (re == 0.0 && !signbit(re)) {
        numbavec_print_str(i);
        numbavec_print_str("j");
        return;
    }
    format_float(re, single, r, sizeof(r));
    n = strlen(r);
    if (n > 2 && strcmp(r + n - 2, ".0") == 0) {
        r[n - 2] = '\0';
    }
    numbavec_print_str("(");
    numbavec_print_str(r);
    if (i[0] != '-') {
        numbavec_print_str("+");
    }
    numbavec_print_str(i);
    numbavec_print_str("j)");
}

void
numbavec_print_end(const char *end)
{
    numbavec_print_str(end);
    if (!line.lost) {
        write_whole(line_text(), line.len);
    }
    free(line.heap);
    line.heap = NULL;
    line.len = line.cap = 0;
    line.lost = 0;
}

/*
 * a.reshape(): NumPy's view of an array that is not C-contiguous, where one
 * exists (its _attempt_nocopy_reshape, C order).  Dimensions of one are left
 * out of the old shape; then runs of old and new dimensions whose products
 * meet are grouped, each run of old ones must be contiguous in itself, and
 * the new ones in it take strides from its last old stride down; new
 * dimensions of one after the last run take the last stride.  Writes the
 * new strides and returns 1, or returns 0 (a copy is needed).  The sizes
 * are equal and not zero (reshape.c: an empty array is C-contiguous).
 */
int64_t
numbavec_rt_nocopy_reshape(int64_t ndim, const int64_t *dims, const int64_t *strides, int64_t newnd,
                           const int64_t *newdims, int64_t *newstrides, int64_t itemsize)
{
    int64_t od[TS_MAXDIMS], os[TS_MAXDIMS];
    int64_t oldnd = 0;
    for (int64_t i = 0; i < ndim && i < TS_MAXDIMS; i++) {
        if (dims[i] != 1) {
            od[oldnd] = dims[i];
            os[oldnd] = strides[i];
            oldnd++;
        }
    }
    int64_t oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < newnd && oi < oldnd) {
        int64_t np_ = newdims[ni], op = od[oi];
        while (np_ != op) {
            if (np_ < op) {
                if (nj >= newnd) {
                    return 0; /* sizes that do not meet: not for a view */
                }
                np_ *= newdims[nj++];
            } else {
                if (oj >= oldnd) {
                    return 0;
                }
                op *= od[oj++];
            }
        }
        for (int64_t ok = oi; ok < oj - 1; ok++) {
            if (os[ok] != od[ok + 1] * os[ok + 1]) {
                return 0;
            }
        }
        newstrides[nj - 1] = os[oj - 1];
        for (int64_t nk = nj - 1; nk > ni; nk--) {
            newstrides[nk - 1] = newstrides[nk] * newdims[nk];
        }
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni >= 1 ? newstrides[ni - 1] : itemsize;
    for (int64_t nk = ni; nk < newnd; nk++) {
        newstrides[nk] = last;
    }
    return 1;
}

const CcRuntimeSymbol cc_runtime_symbols[] = {
    {"numbavec_print_str", (void *)numbavec_print_str},
    {"numbavec_print_int", (void *)numbavec_print_int},
    {"numbavec_print_float", (void *)numbavec_print_float},
    {"numbavec_print_complex", (void *)numbavec_print_complex},
    {"numbavec_print_bool", (void *)numbavec_print_bool},
    {"numbavec_print_end", (void *)numbavec_print_end},
    {"numbavec_raise", (void *)numbavec_raise},
    {"numbavec_rt_sort", (void *)numbavec_rt_sort},
    {"numbavec_rt_argsort", (void *)numbavec_rt_argsort},
    {"numbavec_rt_quantile", (void *)numbavec_rt_quantile},
    {"numbavec_rt_unique", (void *)numbavec_rt_unique},
    {"numbavec_rt_searchsorted", (void *)numbavec_rt_searchsorted},
    {"numbavec_rt_nocopy_reshape", (void *)numbavec_rt_nocopy_reshape},
    {"numbavec_random_state", (void *)numbavec_random_state},
    {"numbavec_random_seed", (void *)numbavec_random_seed},
    {"numbavec_random_refill", (void *)numbavec_random_refill},
    {NULL, NULL},
};
