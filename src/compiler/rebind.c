/*
 * rebind.c - names bound more than once, and names a loop binds read
 * after the loop (issue 36).  The last step of lowering: cc_lower calls
 * lw_rebind on the whole tree, device functions inlined, before typing.
 *
 *  - Each binding of a name is its own variable, as in Numba's SSA form.
 *    The bindings that reach one read (through an if/else, a loop's back
 *    edge, a break) are one variable, which typeinfer.c types by the
 *    promotion of what they assign, as before; bindings that never meet
 *    are apart, so `obs = obs[0]` (obs an array argument), `v =
 *    v.sum(axis=0)` or `x = 1 ... x = 2.5` give each binding its own type.
 *    The algorithm, on the structured tree:
 *      1. the candidates: names bound twice or more (an argument counts as
 *         bound at entry); a device function's result is never split;
 *      2. one walk in execution order keeps, for each candidate, the
 *         binding (or join) that reaches here; where paths meet (after an
 *         if, at a loop's head, after a loop's breaks, at an inlined
 *         function's returns) two different ones make a join (a phi);
 *      3. a read unites what reaches it: a join, once read, unites with
 *         everything it joins, and so on through joins of joins (union-
 *         find); an augmented assignment unites with what it reads, so an
 *         array's `a += 1` stays in place;
 *      4. each set of bindings is a variable: the set of the first binding
 *         keeps the name's variable, the others get new ones of the same
 *         name.  A kernel parameter bound again where its argument also
 *         reaches a read gets a new local, copied from the argument first,
 *         so the argument keeps its signature's type and the local
 *         promotes (Numba unifies there too).
 *  - A name bound on some of the paths that reach a read but not all (a
 *    loop's variable after a loop that may run no iteration, a name one
 *    branch binds): lower.c marks it LW_UNLESS_EMPTY (maybe bound), and
 *    the read (lw_checked_read) tests a flag that every binding of the
 *    name sets, cleared where the function (or inlined body) starts,
 *    raising UnboundLocalError with Python's message when it is clear
 *    (Numba reads garbage there).  A name bound on no path that reaches
 *    the read stays a TypingError.
 */
#include "compiler/lower.h"

#include <stdio.h>
#include <string.h>

/* ---- reads after a loop (called while lowering) ---- */

/* Bound on both paths, on neither, or (LW_UNLESS_EMPTY) maybe. */
char
lw_weaker(char a, char b)
{
    if (a == 0 && b == 0) {
        return 0;
    }
    return a == 1 && b == 1 ? 1 : LW_UNLESS_EMPTY;
}

int
lw_meet_jump(Lower *L)
{
    if (L->terminated) {
        return 0;
    }
    if (L->jumped == NULL) {
        if ((L->jumped = cc_alloc(L->fn->arena, (size_t)L->nassigned + 1)) == NULL) {
            return -1;
        }
        memcpy(L->jumped, L->assigned, (size_t)L->nassigned);
        return 0;
    }
    for (int i = 0; i < L->nassigned; i++) {
        L->jumped[i] = lw_weaker(L->jumped[i], L->assigned[i]);
    }
    return 0;
}

void
lw_bound_after_loop(Lower *L, const char *ran)
{
    for (int i = 0; ran != NULL && i < L->nassigned; i++) {
        if (L->assigned[i] == 0 && ran[i] != 0) {
            L->assigned[i] = LW_UNLESS_EMPTY;
        }
    }
}

/* The raise site of UnboundLocalError for name, in the words of the
 * Python running (3.11 changed them), or NULL with an exception. */
static const char *
unbound_site(Lower *L, const char *name)
{
    CcFunction *fn = L->fn;
    PyObject *info = PySys_GetObject("version_info"); /* borrowed */
    PyObject *minor = info != NULL ? PySequence_GetItem(info, 1) : NULL;
    long m = minor != NULL ? PyLong_AsLong(minor) : -1;
    Py_XDECREF(minor);
    if (m < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "numbavec: sys.version_info is missing");
        }
        return NULL;
    }
    PyObject *msg = m >= 11 ? PyUnicode_FromFormat("cannot access local variable '%s' where it "
                                                   "is not associated with a value",
                                                   name)
                            : PyUnicode_FromFormat("local variable '%s' referenced before "
                                                   "assignment",
                                                   name);
    PyObject *args = msg != NULL ? PyTuple_Pack(1, msg) : NULL;
    PyObject *repr = args != NULL ? PyObject_Repr(args) : NULL;
    PyObject *text =
        repr != NULL ? PyUnicode_FromFormat("builtins\x1fUnboundLocalError\x1f%U", repr) : NULL;
    int generation = 0;
    const char *site =
        text != NULL ? cc_raise_register(fn->arena, text, PyExc_UnboundLocalError, &generation)
                     : NULL;
    Py_XDECREF(msg);
    Py_XDECREF(args);
    Py_XDECREF(repr);
    Py_XDECREF(text);
    if (site != NULL) {
        fn->raises = 1;
        if (generation > fn->raise_gen) {
            fn->raise_gen = generation;
        }
    }
    return site;
}

/* A new variable "<var's name><what><n>" (n: the nodes made so far). */
static CcVar *
var_named(Lower *L, CcVar *var, const char *what)
{
    size_t size = strlen(var->name) + strlen(what) + 16;
    char *name = cc_alloc(L->fn->arena, size);
    if (name == NULL) {
        return NULL;
    }
    snprintf(name, size, "%s%s%d", var->name, what, L->fn->nnodes);
    return lw_add_var(L->fn, name);
}

/*
 * The read of var (the local `name`) at node, where it is bound unless a
 * for loop ran no iteration: an inlined body that raises when var's flag
 * is clear, else returns var:
 *   INLINE(r) { if not var.bound: raise UnboundLocalError(...); return var }
 */
CcNode *
lw_checked_read(Lower *L, PyObject *node, CcVar *var, const char *name)
{
    CcArena *arena = L->fn->arena;
    if (var->bound == NULL && (var->bound = var_named(L, var, ".bound.")) == NULL) {
        return NULL;
    }
    CcVar *result = var_named(L, var, ".read.");
    const char *site = result != NULL ? unbound_site(L, name) : NULL;
    CcNode *n = site != NULL ? lw_new_node(L, ND_INLINE, node) : NULL;
    CcNode *body = n != NULL ? lw_new_node(L, ND_BLOCK, node) : NULL;
    CcNode *test = body != NULL ? lw_new_node(L, ND_IF, node) : NULL;
    CcNode *not = test != NULL ? lw_new_node(L, ND_UNARY, node) : NULL;
    CcNode *flag = not != NULL ? lw_new_node(L, ND_VAR, node) : NULL;
    CcNode *then = flag != NULL ? lw_new_node(L, ND_BLOCK, node) : NULL;
    CcNode *els = then != NULL ? lw_new_node(L, ND_BLOCK, node) : NULL;
    CcNode *raise = els != NULL ? lw_new_node(L, ND_RAISE, node) : NULL;
    CcNode *ret = raise != NULL ? lw_new_node(L, ND_RETURN, node) : NULL;
    CcNode *read = ret != NULL ? lw_new_node(L, ND_VAR, node) : NULL;
    if (read == NULL || (body->args = cc_alloc(arena, 2 * sizeof(CcNode *))) == NULL
        || (then->args = cc_alloc(arena, sizeof(CcNode *))) == NULL) {
        return NULL;
    }
    flag->var = var->bound;
    not ->op = OP_NOT;
    not ->lhs = flag;
    raise->text = site;
    then->args[0] = raise;
    then->nargs = 1;
    test->cond = not ;
    test->then = then;
    test->els = els;
    read->var = var;
    ret->lhs = read;
    ret->var = result;
    body->args[0] = test;
    body->args[1] = ret;
    body->nargs = 2;
    n->then = body;
    n->var = result;
    return n;
}

/* ---- after lowering: the flags those reads test ---- */

typedef struct Clear {
    CcNode *scope; /* the block that starts the function owning the flag */
    CcVar *flag;
} Clear;

typedef struct Flags {
    CcFunction *fn;
    unsigned char *placed; /* by variable index: its flag's clearing is listed */
    Clear *clears;
    int nclears, cap_clears;
} Flags;

static CcNode *
node_at(CcFunction *fn, CcNodeKind kind, CcLoc loc)
{
    CcNode *n = cc_alloc(fn->arena, sizeof(CcNode));
    if (n != NULL) {
        n->kind = kind;
        n->loc = loc;
    }
    return n;
}

/* flag = value, at loc */
static CcNode *
set_flag(CcFunction *fn, CcVar *flag, int value, CcLoc loc)
{
    CcNode *n = node_at(fn, ND_ASSIGN, loc), *c = node_at(fn, ND_CONST, loc);
    if (n == NULL || c == NULL) {
        return NULL;
    }
    c->ty = cc_scalar_type(TS_BOOL);
    c->ival = value;
    n->var = flag;
    n->rhs = c;
    return n;
}

/* Lists the clearing of v's flag at the start of scope, once.  0/-1. */
static int
note_clear(Flags *F, CcVar *v, CcNode *scope)
{
    if (F->placed[v->index]) {
        return 0;
    }
    F->placed[v->index] = 1;
    if (F->nclears == F->cap_clears) {
        int cap = F->cap_clears ? 2 * F->cap_clears : 8;
        Clear *c = PyMem_Realloc(F->clears, sizeof(Clear) * (size_t)cap);
        if (c == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        F->clears = c;
        F->cap_clears = cap;
    }
    F->clears[F->nclears++] = (Clear){scope, v->bound};
    return 0;
}

/* n (a binding of flagged variables) becomes { n; flag = True ... }, in
 * place, so that the block holding it need not change.  0/-1. */
static int
then_set_flags(Flags *F, CcNode *n, CcNode *scope)
{
    int k = n->kind == ND_UNPACK ? n->nargs : 1, nflags = 0;
    CcNode **args = cc_alloc(F->fn->arena, sizeof(CcNode *) * (size_t)(k + 1));
    CcNode *copy = cc_alloc(F->fn->arena, sizeof(CcNode));
    if (args == NULL || copy == NULL) {
        return -1;
    }
    *copy = *n;
    args[nflags++] = copy;
    for (int i = 0; i < k; i++) {
        CcVar *v = n->kind == ND_UNPACK ? n->vars[i] : n->var;
        if (v->bound == NULL) {
            continue;
        }
        if (note_clear(F, v, scope) < 0
            || (args[nflags++] = set_flag(F->fn, v->bound, 1, n->loc)) == NULL) {
            return -1;
        }
    }
    memset(n, 0, sizeof(*n));
    n->kind = ND_BLOCK;
    n->loc = copy->loc;
    n->args = args;
    n->nargs = nflags;
    return 0;
}

static int
binds_flagged(const CcNode *n)
{
    if (n->kind == ND_ASSIGN) {
        return n->var->bound != NULL;
    }
    for (int i = 0; n->kind == ND_UNPACK && i < n->nargs; i++) {
        if (n->vars[i]->bound != NULL) {
            return 1;
        }
    }
    return 0;
}

/* The statements of an inlined body (after its parameters' assignments). */
static CcNode *
inline_scope(CcNode *n, CcNode *outer)
{
    CcNode *last = n->then->nargs > 0 ? n->then->args[n->then->nargs - 1] : NULL;
    return last != NULL && last->kind == ND_BLOCK ? last : outer;
}

static int
place_flags(Flags *F, CcNode *n, CcNode *scope)
{
    if (n == NULL) {
        return 0;
    }
    if (n->kind == ND_INLINE) {
        scope = inline_scope(n, scope);
    } else if (n->kind == ND_FOR_RANGE && n->var->bound != NULL) {
        /* the loop binds its variable as each iteration starts */
        CcNode *body = node_at(F->fn, ND_BLOCK, n->loc);
        CcNode **args = cc_alloc(F->fn->arena, 2 * sizeof(CcNode *));
        if (body == NULL || args == NULL || note_clear(F, n->var, scope) < 0
            || (args[0] = set_flag(F->fn, n->var->bound, 1, n->loc)) == NULL) {
            return -1;
        }
        args[1] = n->then;
        body->args = args;
        body->nargs = 2;
        n->then = body;
    } else if ((n->kind == ND_ASSIGN || n->kind == ND_UNPACK) && binds_flagged(n)) {
        if (place_flags(F, n->rhs, scope) < 0) {
            return -1;
        }
        return then_set_flags(F, n, scope);
    }
    CcNode *kids[5] = {n->lhs, n->rhs, n->cond, n->then, n->els};
    for (int i = 0; i < 5; i++) {
        if (place_flags(F, kids[i], scope) < 0) {
            return -1;
        }
    }
    for (int i = 0; n->args != NULL && i < n->nargs; i++) {
        if (place_flags(F, n->args[i], scope) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Each listed flag = False where its scope starts.  0/-1. */
static int
clear_flags(Flags *F)
{
    for (int i = 0; i < F->nclears; i++) {
        CcNode *scope = F->clears[i].scope;
        CcNode *set = set_flag(F->fn, F->clears[i].flag, 0, scope->loc);
        CcNode **args = cc_alloc(F->fn->arena, sizeof(CcNode *) * (size_t)(scope->nargs + 1));
        if (set == NULL || args == NULL) {
            return -1;
        }
        args[0] = set;
        if (scope->nargs > 0) {
            memcpy(args + 1, scope->args, sizeof(CcNode *) * (size_t)scope->nargs);
        }
        scope->args = args;
        scope->nargs++;
    }
    return 0;
}

static int
flags_needed(CcFunction *fn)
{
    for (int i = 0; i < fn->nvars; i++) {
        if (fn->vars[i]->bound != NULL) {
            return 1;
        }
    }
    return 0;
}

static int
add_flags(CcFunction *fn)
{
    if (!flags_needed(fn)) {
        return 0;
    }
    Flags F = {.fn = fn};
    int rc = -1;
    if ((F.placed = PyMem_Calloc((size_t)fn->nvars + 1, 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (place_flags(&F, fn->body, fn->body) == 0 && clear_flags(&F) == 0) {
        rc = 0;
    }
    PyMem_Free(F.placed);
    PyMem_Free(F.clears);
    return rc;
}

/* ---- after lowering: bindings that meet, as variables ---- */

#define NONE (-1)
/* Past this many candidates times branches and loops, names stay whole
 * (each variable one type, as before): the walk keeps a state per
 * candidate at each of them. */
#define MAX_STATE_WORK 8000000LL

typedef struct RbId {
    int parent;   /* union-find */
    int first;    /* a join: its first operand link, or NONE */
    int cand;     /* a binding: its candidate */
    int slot;     /* a binding: -1 node->var, k node->vars[k]; -2 an argument */
    CcNode *node; /* a binding: where */
    unsigned char join, live;
} RbId;

typedef struct RbLink {
    int next, to;
} RbLink;

typedef struct RbUse {
    CcNode *node;
    int id;
} RbUse;

/* The paths that meet somewhere: their states joined. */
typedef struct Acc {
    int *state;
    int has;
} Acc;

typedef struct RbLoop {
    Acc brk, cont;
    struct RbLoop *outer;
} RbLoop;

typedef struct Rb {
    CcFunction *fn;
    int ncand;
    int *cand;    /* by variable index: its candidate, or NONE */
    CcVar **cvar; /* by candidate */
    int *state;   /* by candidate: the binding or join reaching here, or NONE */
    int dead;     /* this path ended (return, raise, break, continue) */
    RbId *ids;
    int nids, cap_ids;
    RbLink *links;
    int nlinks, cap_links;
    RbUse *uses;
    int nuses, cap_uses;
    int *work;
    int cap_work;
    RbLoop *loop;
    Acc *ret; /* the innermost inlined body's returns */
} Rb;

/* Room for need items of size in *p (capacity *cap).  0/-1. */
static int
reserve(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap) {
        return 0;
    }
    int n = *cap ? 2 * *cap : 64;
    while (n < need) {
        n *= 2;
    }
    void *q = PyMem_Realloc(*p, size * (size_t)n);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = n;
    return 0;
}

static int
new_id(Rb *R, int join)
{
    if (reserve((void **)&R->ids, &R->cap_ids, R->nids + 1, sizeof(RbId)) < 0) {
        return NONE;
    }
    R->ids[R->nids] = (RbId){.parent = R->nids, .first = NONE, .cand = NONE, .join = join};
    return R->nids++;
}

static int
find(Rb *R, int x)
{
    while (R->ids[x].parent != x) {
        R->ids[x].parent = R->ids[R->ids[x].parent].parent;
        x = R->ids[x].parent;
    }
    return x;
}

static void
unite(Rb *R, int a, int b)
{
    a = find(R, a);
    b = find(R, b);
    if (a != b) {
        R->ids[a > b ? a : b].parent = a < b ? a : b;
    }
}

/* x is read: a join not read before unites with what it joins, and so on
 * down (a worklist: joins of joins may be deep).  0/-1. */
static int
activate(Rb *R, int x)
{
    int top = 0;
    if (x == NONE) {
        return 0;
    }
    if (reserve((void **)&R->work, &R->cap_work, 1, sizeof(int)) < 0) {
        return -1;
    }
    R->work[top++] = x;
    while (top > 0) {
        int j = R->work[--top];
        if (!R->ids[j].join || R->ids[j].live) {
            continue;
        }
        R->ids[j].live = 1;
        for (int l = R->ids[j].first; l != NONE; l = R->links[l].next) {
            unite(R, j, R->links[l].to);
            if (reserve((void **)&R->work, &R->cap_work, top + 1, sizeof(int)) < 0) {
                return -1;
            }
            R->work[top++] = R->links[l].to;
        }
    }
    return 0;
}

/* o joins at the join j (o may be NONE: a path where nothing is bound).
 * 0/-1. */
static int
add_operand(Rb *R, int j, int o)
{
    if (o == NONE || o == j) {
        return 0;
    }
    if (reserve((void **)&R->links, &R->cap_links, R->nlinks + 1, sizeof(RbLink)) < 0) {
        return -1;
    }
    R->links[R->nlinks] = (RbLink){R->ids[j].first, o};
    R->ids[j].first = R->nlinks++;
    if (R->ids[j].live) {
        unite(R, j, o);
        return activate(R, o);
    }
    return 0;
}

/* What reaches where a and b meet; NONE and -2 (memory) as ids. */
static int
meet(Rb *R, int a, int b)
{
    if (a == b || b == NONE) {
        return a;
    }
    if (a == NONE) {
        return b;
    }
    int j = new_id(R, 1);
    if (j == NONE || add_operand(R, j, a) < 0 || add_operand(R, j, b) < 0) {
        return -2;
    }
    return j;
}

static int *
copy_state(Rb *R)
{
    int *s = PyMem_Malloc(sizeof(int) * (size_t)(R->ncand + 1));
    if (s == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(s, R->state, sizeof(int) * (size_t)R->ncand);
    return s;
}

/* into = into met with from, candidate by candidate.  0/-1. */
static int
meet_states(Rb *R, int *into, const int *from)
{
    for (int c = 0; c < R->ncand; c++) {
        if ((into[c] = meet(R, into[c], from[c])) == -2) {
            return -1;
        }
    }
    return 0;
}

/* The current path (unless it ended) goes to where acc meets.  0/-1. */
static int
acc_add(Rb *R, Acc *acc)
{
    if (R->dead) {
        return 0;
    }
    if (!acc->has) {
        acc->has = 1;
        return (acc->state = copy_state(R)) != NULL ? 0 : -1;
    }
    return meet_states(R, acc->state, R->state);
}

/* Goes on from where acc met (a dead path when nothing reached it). */
static void
acc_resume(Rb *R, const Acc *acc)
{
    R->dead = !acc->has;
    if (acc->has) {
        memcpy(R->state, acc->state, sizeof(int) * (size_t)R->ncand);
    }
}

/* n binds v (slot: see RbId); an augmented assignment unites with what
 * it reads.  0/-1. */
static int
bind(Rb *R, CcNode *n, int slot, CcVar *v, int augmented)
{
    int c = R->cand[v->index];
    if (c == NONE) {
        return 0;
    }
    int d = new_id(R, 0);
    if (d == NONE) {
        return -1;
    }
    R->ids[d].cand = c;
    R->ids[d].slot = slot;
    R->ids[d].node = n;
    if (augmented && R->state[c] != NONE) {
        if (activate(R, R->state[c]) < 0) {
            return -1;
        }
        unite(R, d, R->state[c]);
    }
    R->state[c] = d;
    return 0;
}

static int
read_var(Rb *R, CcNode *n)
{
    int c = R->cand[n->var->index];
    if (c == NONE) {
        return 0;
    }
    if (reserve((void **)&R->uses, &R->cap_uses, R->nuses + 1, sizeof(RbUse)) < 0) {
        return -1;
    }
    R->uses[R->nuses++] = (RbUse){n, R->state[c]};
    return activate(R, R->state[c]);
}

static int walk(Rb *R, CcNode *n);

static int
walk_kids(Rb *R, CcNode *n)
{
    CcNode *kids[5] = {n->cond, n->lhs, n->rhs, n->then, n->els};
    for (int i = 0; i < 5; i++) {
        if (walk(R, kids[i]) < 0) {
            return -1;
        }
    }
    for (int i = 0; n->args != NULL && i < n->nargs; i++) {
        if (walk(R, n->args[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* if: the two branches meet after it. */
static int
walk_if(Rb *R, CcNode *n)
{
    int rc = -1, dead_then;
    int *before = NULL, *after_then = NULL;
    if (walk(R, n->cond) < 0 || (before = copy_state(R)) == NULL) {
        goto done;
    }
    int dead_before = R->dead;
    if (walk(R, n->then) < 0 || (after_then = copy_state(R)) == NULL) {
        goto done;
    }
    dead_then = R->dead;
    memcpy(R->state, before, sizeof(int) * (size_t)R->ncand);
    R->dead = dead_before;
    if (walk(R, n->els) < 0) {
        goto done;
    }
    if (R->dead) {
        memcpy(R->state, after_then, sizeof(int) * (size_t)R->ncand);
        R->dead = dead_then;
    } else if (!dead_then && meet_states(R, R->state, after_then) < 0) {
        goto done;
    }
    rc = 0;
done:
    PyMem_Free(before);
    PyMem_Free(after_then);
    return rc;
}

/* while and for: a join at the head for each candidate, which the end of
 * the body and its continues reach again; the loop ends from its head
 * (after a while's test), then runs its else, and meets its breaks. */
static int
walk_loop(Rb *R, CcNode *n)
{
    RbLoop loop = {.outer = R->loop};
    int rc = -1;
    int *heads = NULL, *exit = NULL;
    for (int i = 0; n->kind == ND_FOR_RANGE && i < n->nargs; i++) {
        if (walk(R, n->args[i]) < 0) {
            return -1;
        }
    }
    if ((heads = PyMem_Malloc(sizeof(int) * (size_t)(R->ncand + 1))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int c = 0; c < R->ncand; c++) {
        if ((heads[c] = new_id(R, 1)) == NONE || add_operand(R, heads[c], R->state[c]) < 0) {
            goto done;
        }
        R->state[c] = heads[c];
    }
    if ((n->kind == ND_WHILE && walk(R, n->cond) < 0) || (exit = copy_state(R)) == NULL) {
        goto done;
    }
    int dead_exit = R->dead;
    if (n->kind == ND_FOR_RANGE && bind(R, n, -1, n->var, 0) < 0) {
        goto done;
    }
    R->loop = &loop;
    rc = walk(R, n->then);
    R->loop = loop.outer;
    if (rc < 0 || (rc = acc_add(R, &loop.cont)) < 0) {
        goto done;
    }
    rc = -1;
    for (int c = 0; loop.cont.has && c < R->ncand; c++) {
        if (add_operand(R, heads[c], loop.cont.state[c]) < 0) {
            goto done;
        }
    }
    memcpy(R->state, exit, sizeof(int) * (size_t)R->ncand);
    R->dead = dead_exit;
    if (walk(R, n->els) < 0 || acc_add(R, &loop.brk) < 0) {
        goto done;
    }
    acc_resume(R, &loop.brk);
    rc = 0;
done:
    PyMem_Free(heads);
    PyMem_Free(exit);
    PyMem_Free(loop.brk.state);
    PyMem_Free(loop.cont.state);
    return rc;
}

/* An inlined body: its returns meet at its end. */
static int
walk_inline(Rb *R, CcNode *n)
{
    Acc ret = {0}, *outer = R->ret;
    R->ret = &ret;
    int rc = walk(R, n->then);
    R->ret = outer;
    if (rc == 0 && (rc = acc_add(R, &ret)) == 0) {
        acc_resume(R, &ret);
    }
    PyMem_Free(ret.state);
    return rc;
}

/* Statements and expressions, in the order they run. */
static int
walk(Rb *R, CcNode *n)
{
    if (n == NULL) {
        return 0;
    }
    switch (n->kind) {
    case ND_VAR:
        return read_var(R, n);
    case ND_ASSIGN:
        if (walk(R, n->rhs) < 0) {
            return -1;
        }
        return bind(R, n, -1, n->var, n->index == 1);
    case ND_UNPACK:
        if (walk(R, n->rhs) < 0) {
            return -1;
        }
        for (int k = 0; k < n->nargs; k++) {
            if (bind(R, n, k, n->vars[k], 0) < 0) {
                return -1;
            }
        }
        return 0;
    case ND_IF:
        return walk_if(R, n);
    case ND_WHILE:
    case ND_FOR_RANGE:
        return walk_loop(R, n);
    case ND_INLINE:
        return walk_inline(R, n);
    case ND_RETURN:
        if (walk(R, n->lhs) < 0 || (R->ret != NULL && acc_add(R, R->ret) < 0)) {
            return -1;
        }
        R->dead = 1;
        return 0;
    case ND_BREAK:
    case ND_CONTINUE:
        if (R->loop != NULL
            && acc_add(R, n->kind == ND_BREAK ? &R->loop->brk : &R->loop->cont) < 0) {
            return -1;
        }
        R->dead = 1;
        return 0;
    case ND_RAISE:
        R->dead = 1;
        return 0;
    default:
        return walk_kids(R, n);
    }
}

/* A new variable of v's name (its bindings apart from v's), appended to
 * fn's variables; not in lower.c's index by name, which is done with. */
static CcVar *
new_var(CcFunction *fn, const CcVar *v)
{
    if (fn->nvars == fn->cap_vars) {
        int cap = fn->cap_vars ? 2 * fn->cap_vars : 16;
        CcVar **vars = cc_alloc(fn->arena, sizeof(CcVar *) * (size_t)cap);
        if (vars == NULL) {
            return NULL;
        }
        if (fn->nvars > 0) {
            memcpy(vars, fn->vars, sizeof(CcVar *) * (size_t)fn->nvars);
        }
        fn->vars = vars;
        fn->cap_vars = cap;
    }
    CcVar *w = cc_alloc(fn->arena, sizeof(CcVar));
    if (w == NULL) {
        return NULL;
    }
    w->name = v->name;
    w->iterable = v->iterable;
    w->index = fn->nvars;
    fn->vars[fn->nvars++] = w;
    return w;
}

/* `local = param` first in the kernel: the argument's own variable stays
 * its signature's type.  0/-1. */
static int
copy_argument(CcFunction *fn, CcVar *local, CcVar *param)
{
    CcNode *n = node_at(fn, ND_ASSIGN, fn->body->loc), *arg = node_at(fn, ND_VAR, fn->body->loc);
    CcNode **args = cc_alloc(fn->arena, sizeof(CcNode *) * (size_t)(fn->body->nargs + 1));
    if (n == NULL || arg == NULL || args == NULL) {
        return -1;
    }
    arg->var = param;
    n->var = local;
    n->rhs = arg;
    args[0] = n;
    if (fn->body->nargs > 0) {
        memcpy(args + 1, fn->body->args, sizeof(CcNode *) * (size_t)fn->body->nargs);
    }
    fn->body->args = args;
    fn->body->nargs++;
    return 0;
}

/* The variable of each set of bindings (var_of, by root id).  0/-1. */
static int
choose_vars(Rb *R, CcVar **var_of)
{
    int *size = PyMem_Calloc((size_t)R->nids + 1, sizeof(int));
    unsigned char *kept = PyMem_Calloc((size_t)R->ncand + 1, 1);
    int rc = size != NULL && kept != NULL ? 0 : -1;
    for (int d = 0; rc == 0 && d < R->nids; d++) {
        size[find(R, d)] += !R->ids[d].join;
    }
    /* in binding order (the arguments first): the first set keeps the name's variable */
    for (int d = 0; rc == 0 && d < R->nids; d++) {
        int r = find(R, d), c = R->ids[d].cand;
        if (R->ids[d].join || var_of[r] != NULL) {
            continue;
        }
        CcVar *v = R->cvar[c];
        if (R->ids[d].slot == -2 && size[r] > 1) {
            var_of[r] = new_var(R->fn, v);
            rc = var_of[r] != NULL ? copy_argument(R->fn, var_of[r], v) : -1;
        } else {
            var_of[r] = kept[c] ? new_var(R->fn, v) : v;
            rc = var_of[r] != NULL ? 0 : -1;
        }
        kept[c] = 1;
    }
    if (size == NULL || kept == NULL) {
        PyErr_NoMemory();
    }
    PyMem_Free(size);
    PyMem_Free(kept);
    return rc;
}

/* Every binding and read takes its set's variable.  0/-1. */
static int
split_vars(Rb *R)
{
    CcVar **var_of = PyMem_Calloc((size_t)R->nids + 1, sizeof(CcVar *));
    if (var_of == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = choose_vars(R, var_of);
    for (int d = 0; rc == 0 && d < R->nids; d++) {
        CcVar *v = var_of[find(R, d)];
        if (R->ids[d].join || R->ids[d].slot == -2) {
            continue;
        }
        if (R->ids[d].slot == -1) {
            R->ids[d].node->var = v;
        } else {
            R->ids[d].node->vars[R->ids[d].slot] = v;
        }
    }
    for (int u = 0; rc == 0 && u < R->nuses; u++) {
        CcVar *v = R->uses[u].id != NONE ? var_of[find(R, R->uses[u].id)] : NULL;
        if (v != NULL) {
            R->uses[u].node->var = v;
        }
    }
    PyMem_Free(var_of);
    return rc;
}

/* Counts each variable's bindings, marks a device function's results (never
 * split), and counts the places the walk keeps a state at. */
static void
count_binds(const CcNode *n, int *binds, unsigned char *pinned, long long *branches)
{
    if (n == NULL) {
        return;
    }
    switch (n->kind) {
    case ND_ASSIGN:
        binds[n->var->index]++;
        break;
    case ND_UNPACK:
        for (int k = 0; k < n->nargs; k++) {
            binds[n->vars[k]->index]++;
        }
        break;
    case ND_FOR_RANGE:
        binds[n->var->index]++;
        (*branches)++;
        break;
    case ND_IF:
    case ND_WHILE:
    case ND_INLINE:
        (*branches)++;
        if (n->kind == ND_INLINE) {
            pinned[n->var->index] = 1;
        }
        break;
    case ND_RETURN:
        if (n->var != NULL) {
            pinned[n->var->index] = 1;
        }
        break;
    default:
        break;
    }
    const CcNode *kids[5] = {n->lhs, n->rhs, n->cond, n->then, n->els};
    for (int i = 0; i < 5; i++) {
        count_binds(kids[i], binds, pinned, branches);
    }
    for (int i = 0; n->args != NULL && i < n->nargs; i++) {
        count_binds(n->args[i], binds, pinned, branches);
    }
}

/* The candidates: variables bound twice or more, a parameter's argument
 * counting as one binding.  How many; -1 with an exception. */
static int
find_candidates(Rb *R)
{
    CcFunction *fn = R->fn;
    int *binds = PyMem_Calloc((size_t)fn->nvars + 1, sizeof(int));
    unsigned char *pinned = PyMem_Calloc((size_t)fn->nvars + 1, 1);
    R->cand = PyMem_Malloc(sizeof(int) * (size_t)(fn->nvars + 1));
    R->cvar = PyMem_Malloc(sizeof(CcVar *) * (size_t)(fn->nvars + 1));
    if (binds == NULL || pinned == NULL || R->cand == NULL || R->cvar == NULL) {
        PyMem_Free(binds);
        PyMem_Free(pinned);
        PyErr_NoMemory();
        return -1;
    }
    long long branches = 0;
    count_binds(fn->body, binds, pinned, &branches);
    for (int i = 0; i < fn->nvars; i++) {
        int b = binds[i] + (i < fn->nparams);
        R->cand[i] = b >= 2 && !pinned[i] ? R->ncand : NONE;
        if (R->cand[i] != NONE) {
            R->cvar[R->ncand++] = fn->vars[i];
        }
    }
    PyMem_Free(binds);
    PyMem_Free(pinned);
    if ((long long)R->ncand * (branches + 1) > MAX_STATE_WORK) {
        R->ncand = 0; /* too large to follow: each name stays one variable */
    }
    return R->ncand;
}

static int
split_bindings(CcFunction *fn)
{
    Rb R = {.fn = fn};
    int rc = find_candidates(&R);
    if (rc > 0) {
        rc = (R.state = PyMem_Malloc(sizeof(int) * (size_t)R.ncand)) != NULL ? 0 : -1;
        for (int c = 0; rc == 0 && c < R.ncand; c++) {
            R.state[c] = NONE;
        }
        for (int i = 0; rc == 0 && i < fn->nparams; i++) {
            rc = bind(&R, NULL, -2, fn->vars[i], 0);
        }
        if (rc == 0 && (rc = walk(&R, fn->body)) == 0) {
            rc = split_vars(&R);
        }
        if (R.state == NULL) {
            PyErr_NoMemory();
        }
    }
    PyMem_Free(R.cand);
    PyMem_Free(R.cvar);
    PyMem_Free(R.state);
    PyMem_Free(R.ids);
    PyMem_Free(R.links);
    PyMem_Free(R.uses);
    PyMem_Free(R.work);
    return rc < 0 ? -1 : 0;
}

int
lw_rebind(CcFunction *fn)
{
    if (add_flags(fn) < 0) {
        return -1;
    }
    return split_bindings(fn);
}
