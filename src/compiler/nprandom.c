/*
 * nprandom.c - np.random's functions in kernels: their calls lowered (every
 * parameter in its place, defaults filled in), typed and emitted.  The
 * generator they draw from is random.c's, one per thread.
 *
 *   np.random.seed(seed)                      None; seed an integer in [0, 2**32)
 *   np.random.random() random_sample() rand() sample()    float64 in [0, 1)
 *   np.random.uniform(low=0.0, high=1.0)      float64
 *   np.random.normal(loc=0.0, scale=1.0)      float64
 *   np.random.randn() standard_normal()       float64
 *   np.random.randint(low, high=None)         int64 in [low, high) ([0, low))
 *
 * Each draws one value: size= may only be None (an array of draws is not
 * supported), randint's dtype= is not taken.  The arguments NumPy refuses
 * raise NumPy's exception with NumPy's message: a seed outside [0, 2**32)
 * and randint's low >= high (ValueError), a negative scale (ValueError,
 * -0.0 included, as NumPy's sign-bit test), a uniform range that is not
 * finite (OverflowError).  The calls are plain calls of random.c's
 * functions, which LLVM knows nothing of: never folded, hoisted or merged.
 * There is no generator on the cuda target: its calls are TypingErrors.
 */
#include "compiler/arrays/arrays.h"
#include "compiler/lower.h"
#include "compiler/typeinfer.h"

#include <string.h>

/* The parameters of each function as NumPy names them: the values first
 * (nvalues), then size= and dtype=, which must be None or absent. */
typedef struct {
    const char *params[4];
    int nvalues;
    int required;
} RandomSpec;

static const RandomSpec specs[] = {
    [RN_SEED] = {{"seed"}, 1, 1},
    [RN_RANDOM] = {{"size"}, 0, 0},
    [RN_UNIFORM] = {{"low", "high", "size"}, 2, 0},
    [RN_NORMAL] = {{"loc", "scale", "size"}, 2, 0},
    [RN_GAUSS] = {{"size"}, 0, 0},
    [RN_RANDINT] = {{"low", "high", "size", "dtype"}, 2, 1},
};

/* "random.uniform", for messages that say np.random.uniform() */
static const char *
short_name(const CcBuiltin *b)
{
    return b->name + strlen("numpy.");
}

/* rand() and randn() take dimensions, not size=: any argument is an array */
static int
takes_dims(const CcBuiltin *b)
{
    return strcmp(b->name, "numpy.random.rand") == 0 || strcmp(b->name, "numpy.random.randn") == 0;
}

static int
is_none(PyObject *ast)
{
    PyObject *c = lw_ast_kind(ast) == A_CONSTANT ? lw_get(ast, "value") : NULL;
    int none = c == Py_None;
    Py_XDECREF(c);
    PyErr_Clear();
    return none;
}

/* The arguments given, by parameter (borrowed ASTs, NULL where not given).
 * 0/-1. */
static int
given_args(Lower *L, PyObject *node, const CcBuiltin *b, PyObject *args, PyObject *keywords,
           PyObject **given)
{
    const RandomSpec *s = &specs[b->op];
    int nparams = 0;
    while (nparams < 4 && s->params[nparams] != NULL) {
        nparams++;
    }
    Py_ssize_t count = PyList_Size(args);
    if (takes_dims(b) && count > 0) {
        return cc_error(L->fn, lw_loc_of(L, node),
                        "np.%s() draws one value in a kernel: dimensions (an array of draws) "
                        "are not supported",
                        short_name(b));
    }
    if (count > nparams) {
        return cc_error(L->fn, lw_loc_of(L, node), "np.%s() takes at most %d arguments, %zd given",
                        short_name(b), nparams, count);
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        given[i] = PyList_GetItem(args, i);
    }
    for (Py_ssize_t i = 0; i < PyList_Size(keywords); i++) {
        PyObject *kw = PyList_GetItem(keywords, i);
        const char *name = lw_get_str(L, kw, "arg");
        int k = 0;
        while (name != NULL && k < nparams && strcmp(s->params[k], name) != 0) {
            k++;
        }
        if (name == NULL || k == nparams || given[k] != NULL) {
            PyErr_Clear();
            return cc_error(L->fn, lw_loc_of(L, kw), "np.%s() got %s%s%s", short_name(b),
                            name == NULL   ? "**kwargs"
                            : k == nparams ? "an unexpected keyword '"
                                           : "",
                            name != NULL && k == nparams ? name : "",
                            name == NULL   ? ", which a kernel does not take"
                            : k == nparams ? "'"
                                           : "a parameter twice");
        }
        PyObject *value = lw_get(kw, "value");
        if (value == NULL) {
            return -1;
        }
        given[k] = value; /* borrowed: kw holds it */
        Py_DECREF(value);
    }
    return 0;
}

/* A float constant (a default: uniform's 0.0 and 1.0). */
static CcNode *
float_const(Lower *L, PyObject *at, double v)
{
    CcNode *c = lw_new_node(L, ND_CONST, at);
    if (c != NULL) {
        c->ty = cc_weak_type(CT_WEAK_FLOAT);
        c->fval = v;
    }
    return c;
}

static CcNode *
int_const(Lower *L, PyObject *at, long long v)
{
    CcNode *c = lw_new_node(L, ND_CONST, at);
    if (c != NULL) {
        c->ty = cc_weak_type(CT_WEAK_INT);
        c->ival = v;
    }
    return c;
}

/* The value parameters lowered into n->args, defaults filled in. 0/-1. */
static int
value_args(Lower *L, PyObject *node, const CcBuiltin *b, PyObject **given, CcNode *n)
{
    const RandomSpec *s = &specs[b->op];
    for (int k = 0; k < s->nvalues; k++) {
        int missing = given[k] == NULL || is_none(given[k]);
        if (missing && k < s->required) {
            return cc_error(L->fn, lw_loc_of(L, node), "np.%s() needs %s", short_name(b),
                            s->params[k]);
        }
        n->args[k] = !missing              ? lw_lower_expr(L, given[k])
                     : b->op == RN_RANDINT ? NULL /* high=None: [0, low) */
                                           : float_const(L, node, k == 0 ? 0.0 : 1.0);
        if (n->args[k] == NULL && (b->op != RN_RANDINT || !missing)) {
            return -1;
        }
    }
    if (b->op == RN_RANDINT && n->args[1] == NULL) {
        n->ival = 1; /* randint(low): messages still call it low */
        n->args[1] = n->args[0];
        if ((n->args[0] = int_const(L, node, 0)) == NULL) {
            return -1;
        }
    }
    n->nargs = s->nvalues;
    return 0;
}

CcNode *
lw_lower_random_call(Lower *L, PyObject *node, int builtin, PyObject *keywords)
{
    const CcBuiltin *b = cc_builtin(builtin);
    const RandomSpec *s = &specs[b->op];
    PyObject *given[4] = {NULL, NULL, NULL, NULL};
    PyObject *args = lw_get(node, "args");
    CcNode *n = args != NULL ? lw_new_node(L, ND_CALL, node) : NULL;
    int rc = n != NULL ? given_args(L, node, b, args, keywords, given) : -1;
    for (int k = s->nvalues; rc == 0 && k < 4 && s->params[k] != NULL; k++) {
        if (given[k] != NULL && !is_none(given[k])) {
            rc = cc_error(L->fn, lw_loc_of(L, given[k]),
                          "np.%s() draws one value in a kernel: %s= is not supported%s",
                          short_name(b), s->params[k],
                          strcmp(s->params[k], "size") == 0 ? " (draw in a loop)"
                                                            : " (the result is int64)");
        }
    }
    if (rc == 0) {
        n->builtin = builtin;
        n->args = cc_alloc(L->fn->arena, sizeof(CcNode *) * 2);
        rc = n->args != NULL ? value_args(L, node, b, given, n) : -1;
    }
    Py_XDECREF(args);
    /* the checks of seed, uniform, normal and randint raise as NumPy does */
    L->fn->raises |= b->op != RN_RANDOM && b->op != RN_GAUSS;
    return rc == 0 ? n : NULL;
}

/* ======== typing ======== */

/* Argument i: a real number (to float64) or an integer (to int64). */
static int
scalar_arg(Infer *in, CcNode *n, int i, int integer)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    const CcType *t;
    if (ti_expr(in, n->args[i], &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    char name[96];
    const char *param = b->op == RN_RANDINT && n->ival == 1 ? "low" : specs[b->op].params[i];
    if (cc_is_array(t) || ti_is_tuple(t) || ti_is_complex_type(t)
        || (integer && !ti_is_integral(t) && !ti_is_bool(t))) {
        return cc_error(
            in->fn, n->args[i]->loc, "np.%s() takes %s %s in a kernel, not %s%s", short_name(b),
            integer ? "an integer" : "a real number", param, cc_type_name(t, name, sizeof(name)),
            cc_is_array(t) ? " (it draws one value: arrays of draws are not supported)" : "");
    }
    return ti_fit_const(in, n->args[i], cc_scalar_type(integer ? TS_INT64 : TS_FLOAT64));
}

int
ti_random_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    *out = UNKNOWN;
    if (in->fn->device) {
        return cc_error(in->fn, n->loc,
                        "np.%s() is not available on the cuda target (np.random draws from a "
                        "host generator, one per thread; there is none on a GPU)",
                        short_name(b));
    }
    if (b->op == RN_SEED && !(n->index & 2)) {
        return cc_error(in->fn, n->loc,
                        "np.random.seed() returns None: call it as a statement in a kernel");
    }
    int integer = b->op == RN_SEED || b->op == RN_RANDINT;
    for (int i = 0; i < n->nargs; i++) {
        if (scalar_arg(in, n, i, integer) < 0) {
            return -1;
        }
    }
    *out = cc_scalar_type(b->op == RN_SEED      ? TS_BOOL /* None, never read */
                          : b->op == RN_RANDINT ? TS_INT64
                                                : TS_FLOAT64);
    return 0;
}

/* ======== emission ======== */

#define RAISE(cls, msg) "builtins\x1f" cls "\x1f('" msg "',)"

/* State is the generator's own memory: the pointer the kernel gets is
 * `noalias` (like malloc's: no array the kernel reads or writes is that
 * memory) and random.c's functions do not keep it (`nocapture`).  Without
 * it a store into an output could be the generator's count of words left,
 * which would then travel through memory at every draw of a gufunc's loop
 * (2.5x Numba's time); with it LLVM keeps the count in a register.  One
 * call per kernel, so that no two results of it, each claimed distinct,
 * meet in a path. */

/* This thread's generator: a call that reads no memory and always
 * returns, made once in the kernel's entry block (LLVM hoists it out of
 * the loops the kernel is inlined into). */
static LLVMValueRef
state_of(Emit *E)
{
    if (E->random_state != NULL) {
        return E->random_state;
    }
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    LLVMBuilderRef here = E->b;
    E->b = em_entry_builder(E);
    E->random_state = em_runtime_call(E, "numbavec_random_state", ptr, NULL, 0);
    LLVMDisposeBuilder(E->b);
    E->b = here;
    LLVMValueRef f = LLVMGetNamedFunction(E->mod, "numbavec_random_state");
    cc_add_fn_attr(f, "memory"); /* memory(none): its value 0 */
    cc_add_fn_attr(f, "willreturn");
    cc_add_fn_attr(f, "speculatable");
    cc_add_attr(f, LLVMAttributeReturnIndex, "noalias");
    return E->random_state;
}

/* random.c's function name(state, ...): it reads and writes the state
 * and keeps no pointer to it. */
static LLVMValueRef
state_call(Emit *E, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n)
{
    LLVMValueRef r = em_runtime_call(E, name, ret, args, n);
    cc_add_attr(LLVMGetNamedFunction(E->mod, name), 1, "nocapture");
    return r;
}

/* random.c's function name(this thread's state, arg) */
static LLVMValueRef
call(Emit *E, const char *name, LLVMTypeRef ret, LLVMValueRef arg)
{
    LLVMValueRef all[2] = {state_of(E), arg};
    return state_call(E, name, ret, all, arg != NULL ? 2 : 1);
}

static LLVMValueRef
i32c(Emit *E, unsigned long long v)
{
    return LLVMConstInt(LLVMInt32TypeInContext(E->ctx), v, 0);
}

static LLVMValueRef
field(Emit *E, LLVMValueRef state, LLVMValueRef at, const char *name)
{
    LLVMTypeRef i8 = LLVMInt8TypeInContext(E->ctx);
    return LLVMBuildGEP2(E->b, i8, state, &at, 1, name);
}

/* The next 32-bit word of this thread's generator, in line: the word at
 * 624 - left, left counted down, random.c's refill when none is left;
 * then MT19937's tempering. */
static LLVMValueRef
next32(Emit *E)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx);
    LLVMValueRef state = state_of(E);
    LLVMValueRef at = field(E, state, em_i64c(E, (long long)cc_random_left_at), "mt.left.at");
    LLVMValueRef left = LLVMBuildLoad2(E->b, i32, at, "mt.left");
    LLVMBasicBlockRef from = em_current_block(E);
    LLVMBasicBlockRef refill = em_new_block(E, "mt.refill"), draw = em_new_block(E, "mt.draw");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, left, i32c(E, 0), "mt.empty"), refill,
                    draw);
    LLVMPositionBuilderAtEnd(E->b, refill);
    state_call(E, "numbavec_random_refill", LLVMVoidTypeInContext(E->ctx), &state, 1);
    LLVMBuildBr(E->b, draw);
    LLVMPositionBuilderAtEnd(E->b, draw);
    LLVMValueRef n = em_join(E, left, from, i32c(E, CC_RANDOM_WORDS), refill, "mt.n");
    LLVMBuildStore(E->b, LLVMBuildSub(E->b, n, i32c(E, 1), "mt.rest"), at);
    LLVMValueRef k = LLVMBuildZExt(E->b, LLVMBuildSub(E->b, i32c(E, CC_RANDOM_WORDS), n, "mt.k"),
                                   em_i64_type(E), "mt.k64");
    LLVMValueRef off = LLVMBuildAdd(E->b, em_i64c(E, (long long)cc_random_key_at),
                                    LLVMBuildShl(E->b, k, em_i64c(E, 2), "mt.k4"), "mt.off");
    LLVMValueRef y = LLVMBuildLoad2(E->b, i32, field(E, state, off, "mt.word.at"), "mt.word");
    static const struct {
        int left;
        unsigned shift, mask;
    } temper[4] = {
        {0, 11, 0xffffffffu}, {1, 7, 0x9d2c5680u}, {1, 15, 0xefc60000u}, {0, 18, 0xffffffffu}};
    for (int i = 0; i < 4; i++) {
        LLVMValueRef s = temper[i].left ? LLVMBuildShl(E->b, y, i32c(E, temper[i].shift), "")
                                        : LLVMBuildLShr(E->b, y, i32c(E, temper[i].shift), "");
        y = LLVMBuildXor(E->b, y, LLVMBuildAnd(E->b, s, i32c(E, temper[i].mask), ""), "mt.y");
    }
    return y;
}

/* [0, 1): (a >> 5) * 2**26 + (b >> 6), over 2**53, a drawn first */
static LLVMValueRef
next_double(Emit *E)
{
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(E->ctx);
    LLVMValueRef a = LLVMBuildLShr(E->b, next32(E), i32c(E, 5), "u.a");
    LLVMValueRef b = LLVMBuildLShr(E->b, next32(E), i32c(E, 6), "u.b");
    LLVMValueRef hi = LLVMBuildFMul(E->b, LLVMBuildUIToFP(E->b, a, f64, ""),
                                    LLVMConstReal(f64, 67108864.0), "u.hi");
    LLVMValueRef sum = LLVMBuildFAdd(E->b, hi, LLVMBuildUIToFP(E->b, b, f64, ""), "u.53");
    return LLVMBuildFDiv(E->b, sum, LLVMConstReal(f64, 9007199254740992.0), "u");
}

/* A standard normal deviate, in line: the one the last draw kept, else
 * Marsaglia's polar method on a point drawn in the unit disc (not its
 * centre), which keeps f * x1 and gives f * x2, as NumPy's legacy gauss. */
static LLVMValueRef
gauss(Emit *E)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx), f64 = LLVMDoubleTypeInContext(E->ctx);
    LLVMValueRef state = state_of(E);
    LLVMValueRef has_at =
        field(E, state, em_i64c(E, (long long)cc_random_has_gauss_at), "mt.has.gauss.at");
    LLVMValueRef kept_at =
        field(E, state, em_i64c(E, (long long)cc_random_gauss_at), "mt.gauss.at");
    LLVMBasicBlockRef kept = em_new_block(E, "gauss.kept"), disc = em_new_block(E, "gauss.disc");
    LLVMBasicBlockRef done = em_new_block(E, "gauss.done");
    LLVMValueRef has = LLVMBuildLoad2(E->b, i32, has_at, "mt.has.gauss");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntNE, has, i32c(E, 0), "gauss.has"), kept, disc);
    LLVMPositionBuilderAtEnd(E->b, kept);
    LLVMValueRef old = LLVMBuildLoad2(E->b, f64, kept_at, "gauss.old");
    LLVMBuildStore(E->b, i32c(E, 0), has_at);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, disc);
    LLVMValueRef one = LLVMConstReal(f64, 1.0), two = LLVMConstReal(f64, 2.0);
    LLVMValueRef x[2];
    for (int i = 0; i < 2; i++) {
        x[i] = LLVMBuildFSub(E->b, LLVMBuildFMul(E->b, two, next_double(E), ""), one, "gauss.x");
    }
    LLVMValueRef r2 = LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, x[0], x[0], ""),
                                    LLVMBuildFMul(E->b, x[1], x[1], ""), "gauss.r2");
    LLVMValueRef out =
        LLVMBuildOr(E->b, LLVMBuildFCmp(E->b, LLVMRealOGE, r2, one, "gauss.out"),
                    LLVMBuildFCmp(E->b, LLVMRealOEQ, r2, LLVMConstReal(f64, 0.0), "gauss.centre"),
                    "gauss.again");
    LLVMBasicBlockRef accept = em_new_block(E, "gauss.accept");
    LLVMBuildCondBr(E->b, out, disc, accept);
    LLVMPositionBuilderAtEnd(E->b, accept);
    LLVMValueRef ln = em_libm(E, "log", TS_FLOAT64, &r2, 1);
    LLVMValueRef q =
        LLVMBuildFDiv(E->b, LLVMBuildFMul(E->b, LLVMConstReal(f64, -2.0), ln, ""), r2, "gauss.q");
    LLVMValueRef f = em_float_intrinsic(E, "llvm.sqrt", TS_FLOAT64, &q, 1);
    LLVMBuildStore(E->b, LLVMBuildFMul(E->b, f, x[0], "gauss.keep"), kept_at);
    LLVMBuildStore(E->b, i32c(E, 1), has_at);
    LLVMValueRef fresh = LLVMBuildFMul(E->b, f, x[1], "gauss.new");
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return em_join(E, old, kept, fresh, accept, "gauss");
}

/* An integer argument as int64; one of uint64 past int64 raises, as NumPy
 * finds it out of int64's bounds. */
static LLVMValueRef
int64_arg(Emit *E, CcNode *a, const char *site)
{
    LLVMValueRef v = em_expr(E, a);
    if (v == NULL) {
        return NULL;
    }
    TsKind k = cc_storage(a->ty);
    LLVMValueRef wide = em_convert(E, v, k, TS_INT64);
    if (k == TS_UINT64) {
        em_raise_if(E, LLVMBuildICmp(E->b, LLVMIntSLT, wide, em_i64c(E, 0), "past.int64"), site);
    }
    return wide;
}

static LLVMValueRef
emit_seed(Emit *E, CcNode *n)
{
    LLVMValueRef s =
        int64_arg(E, n->args[0], RAISE("ValueError", "Seed must be between 0 and 2**32 - 1"));
    if (s == NULL) {
        return NULL;
    }
    LLVMValueRef big = LLVMBuildICmp(E->b, LLVMIntUGE, s, em_i64c(E, 1LL << 32), "seed.range");
    em_raise_if(E, big, RAISE("ValueError", "Seed must be between 0 and 2**32 - 1"));
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx);
    LLVMValueRef word = LLVMBuildTrunc(E->b, s, i32, "seed");
    call(E, "numbavec_random_seed", LLVMVoidTypeInContext(E->ctx), word);
    return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
}

/* One masked draw: a 32-bit word, or a 64-bit one (the first word its
 * high half). */
static LLVMValueRef
masked_draw(Emit *E, int wide, LLVMValueRef mask)
{
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef v = LLVMBuildZExt(E->b, next32(E), i64, "w.hi");
    if (wide) {
        v = LLVMBuildShl(E->b, v, em_i64c(E, 32), "w.hi32");
        v = LLVMBuildOr(E->b, v, LLVMBuildZExt(E->b, next32(E), i64, "w.lo"), "w.64");
    }
    return LLVMBuildAnd(E->b, v, mask, "w.masked");
}

/* A draw in [0, width] by masked rejection (NumPy's legacy randint): the
 * draw masked to the smallest 2**k - 1 >= width, drawn again while past
 * width, on 32-bit draws where width fits 32 bits, else on 64-bit ones;
 * width 0 draws nothing. */
static LLVMValueRef
bounded(Emit *E, LLVMValueRef width)
{
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef zc[2] = {width, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0)};
    LLVMValueRef lead = em_intrinsic(E, "llvm.ctlz", &i64, 1, zc, 2);
    /* width 0: lead 64, a shift past the width (poison), never used */
    LLVMValueRef mask = LLVMBuildLShr(E->b, em_i64c(E, -1), lead, "mask");
    LLVMBasicBlockRef from = em_current_block(E), done = em_new_block(E, "w.done");
    LLVMBasicBlockRef loops[2] = {em_new_block(E, "w.32"), em_new_block(E, "w.64")};
    LLVMBasicBlockRef draw = em_new_block(E, "w.draw");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, width, em_i64c(E, 0), "w.none"), done,
                    draw);
    LLVMPositionBuilderAtEnd(E->b, draw);
    LLVMBuildCondBr(E->b,
                    LLVMBuildICmp(E->b, LLVMIntULE, width, em_i64c(E, 0xffffffffLL), "w.fits32"),
                    loops[0], loops[1]);
    LLVMValueRef got[3] = {em_i64c(E, 0), NULL, NULL};
    LLVMBasicBlockRef at[3] = {from, NULL, NULL};
    for (int wide = 0; wide < 2; wide++) {
        LLVMPositionBuilderAtEnd(E->b, loops[wide]);
        got[1 + wide] = masked_draw(E, wide, mask);
        at[1 + wide] = em_current_block(E);
        LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntUGT, got[1 + wide], width, "w.past"),
                        loops[wide], done);
    }
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef v = LLVMBuildPhi(E->b, i64, "w");
    LLVMAddIncoming(v, got, at, 3);
    return v;
}

static LLVMValueRef
emit_randint(Emit *E, CcNode *n)
{
    LLVMValueRef lo =
        int64_arg(E, n->args[0], RAISE("ValueError", "low is out of bounds for int64"));
    LLVMValueRef hi = lo != NULL ? int64_arg(E, n->args[1],
                                             RAISE("ValueError", "high is out of bounds for int64"))
                                 : NULL;
    if (hi == NULL) {
        return NULL;
    }
    em_raise_if(E, LLVMBuildICmp(E->b, LLVMIntSGE, lo, hi, "empty"),
                RAISE("ValueError", "low >= high"));
    /* the inclusive width high - 1 - low, unsigned: it may pass int64 */
    LLVMValueRef width =
        LLVMBuildSub(E->b, LLVMBuildSub(E->b, hi, em_i64c(E, 1), "last"), lo, "width");
    return LLVMBuildAdd(E->b, lo, bounded(E, width), "randint");
}

/* uniform: low + (high - low) * u; normal: loc + scale * g. */
static LLVMValueRef
emit_real(Emit *E, CcNode *n, CcRandomOp op)
{
    LLVMValueRef a = em_expr_as(E, n->args[0], TS_FLOAT64);
    LLVMValueRef b = a != NULL ? em_expr_as(E, n->args[1], TS_FLOAT64) : NULL;
    if (b == NULL) {
        return NULL;
    }
    LLVMValueRef scale = b;
    if (op == RN_UNIFORM) {
        scale = LLVMBuildFSub(E->b, b, a, "range");
        LLVMValueRef d = LLVMBuildFSub(E->b, scale, scale, "inf.or.nan"); /* NaN unless finite */
        em_raise_if(E, LLVMBuildFCmp(E->b, LLVMRealUNO, d, d, "not.finite"),
                    RAISE("OverflowError", "Range exceeds valid bounds"));
    } else {
        /* NumPy refuses a scale with its sign bit set that is not a NaN */
        LLVMValueRef bits = LLVMBuildBitCast(E->b, b, em_i64_type(E), "scale.bits");
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, bits, em_i64c(E, 0), "scale.sign");
        LLVMValueRef num = LLVMBuildFCmp(E->b, LLVMRealORD, b, b, "scale.num");
        em_raise_if(E, LLVMBuildAnd(E->b, neg, num, "scale.neg"), RAISE("ValueError", "scale < 0"));
    }
    LLVMValueRef draw = op == RN_UNIFORM ? next_double(E) : gauss(E);
    return LLVMBuildFAdd(E->b, a, LLVMBuildFMul(E->b, scale, draw, "scaled"), "drawn");
}

LLVMValueRef
ec_random_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)out;
    switch ((CcRandomOp)b->op) {
    case RN_SEED:
        return emit_seed(E, n);
    case RN_RANDOM:
        return next_double(E);
    case RN_GAUSS:
        return gauss(E);
    case RN_RANDINT:
        return emit_randint(E, n);
    default:
        return emit_real(E, n, (CcRandomOp)b->op);
    }
}

/* ======== what is refused by name ======== */

int
lw_random_instance_method(PyObject *callee)
{
    PyObject *self = PyObject_GetAttrString(callee, "__self__");
    PyObject *mod =
        self != NULL ? PyObject_GetAttrString((PyObject *)Py_TYPE(self), "__module__") : NULL;
    const char *s = mod != NULL && PyUnicode_Check(mod) ? PyUnicode_AsUTF8AndSize(mod, NULL) : NULL;
    int yes = s != NULL && strncmp(s, "numpy.random", 12) == 0 && !PyModule_Check(self);
    PyErr_Clear();
    Py_XDECREF(self);
    Py_XDECREF(mod);
    return yes;
}
