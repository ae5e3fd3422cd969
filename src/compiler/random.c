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
 *   - randint by masked rejection (emitted in line by nprandom.c).
 *
 * Kernels draw 32-bit words in line (nprandom.c), from the state's
 * address (numbavec_random_state, taken once per loop: LLVM hoists it,
 * since a lookup of dynamic TLS is a call that costs as much as a draw)
 * and the offsets of its words (cc_random_left_at, cc_random_key_at), and
 * normal deviates in line too (the kept one at cc_random_gauss_at); they
 * call numbavec_random_refill when no word is left, and this file for the
 * seed.  (A ufunc's loop puts those loads and
 * stores in its parallel-access group; the refill call, which LLVM knows
 * nothing of, keeps the loop from being vectorized, as print's calls do.)
 *
 * State.  One generator per thread (thread-local): the parallel target's
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
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/random.h>
#endif

#include "compiler/compiler.h"

enum { MT_N = 624, MT_M = 397 };

/* The fields kernels read and write themselves first (nprandom.c inlines
 * a 32-bit draw at the offsets below). */
typedef struct {
    int32_t left;      /* words of key not drawn yet; 0: refill first */
    int32_t seeded;    /* 0: seeded from entropy at the first refill */
    int32_t has_gauss; /* the polar method's second deviate is kept */
    double gauss;
    uint32_t key[MT_N];
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
    s->left = 0; /* regenerate at the next draw */
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

/* Four words at once (GCC's and clang's vector extension, SSE2 on any
 * x86-64): the build's -O2 leaves the loops below scalar, which made a
 * seeded row of draws 0.7 of Numba's speed (its helper is built at -O3). */
typedef uint32_t Words4 __attribute__((vector_size(16)));

static inline Words4
words4(const uint32_t *p)
{
    Words4 v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline void
twist4(uint32_t *k, int i, int far)
{
    Words4 y = (words4(k + i) & 0x80000000u) | (words4(k + i + 1) & 0x7fffffffu);
    Words4 v = words4(k + far) ^ (y >> 1) ^ (-(y & 1u) & 0x9908b0dfu);
    memcpy(k + i, &v, sizeof(v));
}

/* Words i .. end - 1 twisted, each with the word off places on,
 * four at a time then one: a step reads words i + 1 .. i + 4 before it
 * writes i .. i + 3, and words before i were written a step or more
 * before.  Returns end. */
static int
twist_run(uint32_t *k, int i, int end, int off)
{
    for (; i + 4 <= end; i += 4) {
        twist4(k, i, i + off);
    }
    for (; i < end; i++) {
        k[i] = twist(k[i], k[i + 1], k[i + off]);
    }
    return i;
}

/* The next 624 words, in three runs so that no index wraps. */
static void
regenerate(MtState *s)
{
    uint32_t *k = s->key;
    int i = twist_run(k, 0, MT_N - MT_M, MT_M);
    twist_run(k, i, MT_N - 1, MT_M - MT_N);
    k[MT_N - 1] = twist(k[MT_N - 1], k[0], k[MT_M - 1]);
    s->left = MT_N;
}

/* The slow path of a draw: a thread's first (seeded from entropy), or the
 * end of the 624 words. */
__attribute__((noinline, cold)) void
numbavec_random_refill(void *state)
{
    MtState *s = state;
    if (!s->seeded) {
        seed_from_entropy(s);
    }
    regenerate(s);
}

void *
numbavec_random_state(void)
{
    return &mt;
}

void
numbavec_random_seed(void *state, uint32_t seed)
{
    seed_words(state, seed);
}

static void
unseed_in_child(void)
{
    mt.seeded = 0;
    mt.left = 0;
}

const size_t cc_random_left_at = offsetof(MtState, left);
const size_t cc_random_key_at = offsetof(MtState, key);
const size_t cc_random_has_gauss_at = offsetof(MtState, has_gauss);
const size_t cc_random_gauss_at = offsetof(MtState, gauss);

void
cc_random_init(void)
{
    static int at_fork; /* registered once: cc_runtime_init runs once */
    if (!at_fork && pthread_atfork(NULL, NULL, unseed_in_child) == 0) {
        at_fork = 1;
    }
}
