/*
 * random.c: the generator behind np.random's functions in kernels (the
 * calls themselves are lowered, typed and emitted in nprandom.c).
 *
 * The algorithms are NumPy's legacy RandomState ones, written from their
 * published descriptions, so that a kernel that seeds and then draws gives
 * the numbers the same Python code gives under the interpreter:
 *   - MT19937 (Matsumoto and Nishimura, 1998), seed(s) by the 2002
 *     reference's init_genrand recurrence (NumPy's seeding of an int seed);
 *   - a double from two 32-bit draws: (a >> 5) * 2**26 + (b >> 6), over
 *     2**53;
 *   - normal deviates by Marsaglia's polar method, two per round: the
 *     second is kept for the next call, and seed() forgets it;
 *   - randint by masked rejection: the draw masked to the smallest
 *     2**k - 1 >= the range, drawn again while it is past the range, on
 *     one 32-bit draw when the range fits 32 bits, else on a 64-bit draw
 *     (the first 32-bit draw its high half).
 *
 * State.  One generator per thread (thread-local): kernels take its address
 * once (numbavec_random_state, which LLVM may hoist out of the loop: the
 * address is the same wherever a thread asks) and hand it to each draw,
 * since a lookup of dynamic TLS is a call that costs as much as a draw.
 * The parallel target's
 * workers draw without locks and without sharing, and each Python thread
 * that calls a cpu kernel has its own.  It is not NumPy's global generator:
 * np.random.seed() in Python does not seed it, nor the reverse.  A
 * thread's generator is seeded from the OS's entropy (getentropy, through
 * init_by_array) at its first draw unless the kernel seeded it first.  In
 * a forked child the forking thread's generator is marked unseeded
 * (pthread_atfork), so the child draws a stream of its own from fresh
 * entropy, even where the parent had seeded; the pool's workers in the
 * child are new threads with new generators.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>
#endif
#include <math.h>

#include "compiler/compiler.h"

enum { MT_N = 624, MT_M = 397 };

typedef struct {
    uint32_t key[MT_N];
    int pos;       /* the next word of key; MT_N: regenerate first */
    int seeded;    /* 0: seeded from entropy at the first draw */
    int has_gauss; /* the polar method's second deviate is kept */
    double gauss;
} MtState;

static _Thread_local MtState mt;

/* The 2002 reference's init_genrand: key[i] from key[i - 1]. */
static void
seed_words(MtState *s, uint32_t seed)
{
    s->key[0] = seed;
    for (uint32_t i = 1; i < MT_N; i++) {
        uint32_t prev = s->key[i - 1];
        s->key[i] = 1812433253u * (prev ^ (prev >> 30)) + i;
    }
    s->pos = MT_N;
    s->seeded = 1;
    s->has_gauss = 0;
}

/* The 2002 reference's init_by_array: init_genrand(19650218), then the
 * words of init mixed in, and the top bit set so the state is never 0. */
static void
seed_array(MtState *s, const uint32_t *init, uint32_t n)
{
    seed_words(s, 19650218u);
    uint32_t *k = s->key, i = 1, j = 0;
    for (uint32_t c = MT_N > n ? MT_N : n; c > 0; c--) {
        k[i] = (k[i] ^ ((k[i - 1] ^ (k[i - 1] >> 30)) * 1664525u)) + init[j] + j;
        i++, j++;
        if (i >= MT_N) {
            k[0] = k[MT_N - 1], i = 1;
        }
        j = j >= n ? 0 : j;
    }
    for (uint32_t c = MT_N - 1; c > 0; c--) {
        k[i] = (k[i] ^ ((k[i - 1] ^ (k[i - 1] >> 30)) * 1566083941u)) - i;
        if (++i >= MT_N) {
            k[0] = k[MT_N - 1], i = 1;
        }
    }
    k[0] = 0x80000000u;
}

/* A thread's first draw without a seed: 256 bits of the OS's entropy, or,
 * where it has none to give, the time, the process and the thread. */
static void
seed_from_entropy(MtState *s)
{
    uint32_t words[8] = {0};
    if (getentropy(words, sizeof(words)) != 0) {
        struct timespec ts = {0, 0};
        clock_gettime(CLOCK_REALTIME, &ts);
        words[0] = (uint32_t)ts.tv_nsec;
        words[1] = (uint32_t)ts.tv_sec;
        words[2] = (uint32_t)getpid();
        words[3] = (uint32_t)(uintptr_t)s;
        words[4] = (uint32_t)((uint64_t)(uintptr_t)s >> 32);
    }
    seed_array(s, words, 8);
}

/* Word i of the next state: its top bit and word i + 1's low bits,
 * twisted by the matrix A, into word i + M (indices modulo N). */
static inline uint32_t
twist(uint32_t top, uint32_t low, uint32_t far)
{
    uint32_t y = (top & 0x80000000u) | (low & 0x7fffffffu);
    return far ^ (y >> 1) ^ (-(y & 1u) & 0x9908b0dfu);
}

/* The next 624 words, in three runs so that no index wraps. */
static void
regenerate(MtState *s)
{
    uint32_t *k = s->key;
    int i = 0;
    for (; i < MT_N - MT_M; i++) {
        k[i] = twist(k[i], k[i + 1], k[i + MT_M]);
    }
    for (; i < MT_N - 1; i++) {
        k[i] = twist(k[i], k[i + 1], k[i + MT_M - MT_N]);
    }
    k[MT_N - 1] = twist(k[MT_N - 1], k[0], k[MT_M - 1]);
    s->pos = 0;
}

/* The slow path of a draw: a thread's first (seeded from entropy), or the
 * end of the 624 words. */
__attribute__((noinline, cold)) static void
refill(MtState *s)
{
    if (!s->seeded) {
        seed_from_entropy(s);
    }
    regenerate(s);
}

static inline uint32_t
next32(MtState *s)
{
    if (__builtin_expect(s->pos >= MT_N || !s->seeded, 0)) {
        refill(s);
    }
    uint32_t y = s->key[s->pos++];
    /* tempering */
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static inline double
next_double(MtState *s)
{
    uint32_t a = next32(s) >> 5;
    uint32_t b = next32(s) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

/* This thread's state.  Its address is looked up once per call (a dynamic
 * TLS lookup is a call of __tls_get_addr), and the empty asm keeps the
 * compiler from looking it up again after each call the draws make. */
static inline MtState *
this_thread(void)
{
    MtState *s = &mt;
    __asm__("" : "+r"(s));
    return s;
}

void *
numbavec_random_state(void)
{
    return this_thread();
}

void
numbavec_random_seed(void *state, uint32_t seed)
{
    seed_words(state, seed);
}

double
numbavec_random_double(void *state)
{
    return next_double(state);
}

/* A standard normal deviate: Marsaglia's polar method on a point drawn in
 * the unit disc (not its centre); returns f * x2 and keeps f * x1. */
double
numbavec_random_gauss(void *state)
{
    MtState *s = state;
    if (s->has_gauss) {
        s->has_gauss = 0;
        return s->gauss;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * next_double(s) - 1.0;
        x2 = 2.0 * next_double(s) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = sqrt(-2.0 * log(r2) / r2);
    s->gauss = f * x1;
    s->has_gauss = 1;
    return f * x2;
}

/* low + a draw in [0, range] (range inclusive, as an unsigned width): the
 * masked rejection above; the sum wraps as int64's does not. */
int64_t
numbavec_random_bounded(void *state, int64_t low, uint64_t range)
{
    MtState *s = state;
    if (range == 0) {
        return low;
    }
    uint64_t mask = ~0ull >> __builtin_clzll(range); /* range != 0 */
    uint64_t v;
    if (range <= 0xffffffffu) {
        do {
            v = next32(s) & mask;
        } while (v > range);
    } else {
        do {
            uint64_t hi = next32(s);
            v = ((hi << 32) | next32(s)) & mask;
        } while (v > range);
    }
    return (int64_t)((uint64_t)low + v);
}

static void
unseed_in_child(void)
{
    mt.seeded = 0;
}

void
cc_random_init(void)
{
    static int at_fork; /* registered once: cc_runtime_init runs once */
    if (!at_fork && pthread_atfork(NULL, NULL, unseed_in_child) == 0) {
        at_fork = 1;
    }
}
