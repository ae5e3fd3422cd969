/*
 * glibc 2.28 shims for the portable (manylinux_2_28) build: the symbols newer
 * than 2.28 that LLVM's and libstdc++'s static archives, compiled against the
 * build machine's glibc (Debian 12: 2.36), still reference once zig's glibc
 * 2.28 libraries are linked (stat and the pthread functions resolve to their
 * 2.28 versions by themselves).  Each is defined here, hidden, from what 2.28
 * has; setup.py adds this file when NUMBAVEC_ZIG_TARGET is set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* libstdc++ (GCC 11+) reads it to skip atomics in a single-threaded process:
 * 0 keeps them always, which is right in any process. */
char __libc_single_threaded __attribute__((visibility("hidden"))) = 0;

/* LLVM's Process::GetMallocUsage: the same numbers from glibc 2.28's mallinfo
 * (struct mallinfo2, glibc 2.33's layout: ten size_t). */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct mallinfo2 __attribute__((visibility("hidden"))) mallinfo2(void)
{
    struct mallinfo m = mallinfo();
    struct mallinfo2 r = {0};
    r.arena = (size_t)(unsigned)m.arena;
    r.ordblks = (size_t)(unsigned)m.ordblks;
    r.hblkhd = (size_t)(unsigned)m.hblkhd;
    r.uordblks = (size_t)(unsigned)m.uordblks;
    r.fordblks = (size_t)(unsigned)m.fordblks;
    r.keepcost = (size_t)(unsigned)m.keepcost;
    return r;
}

/* std::random_device and LLVM's seeds: the kernel's random numbers. */
uint32_t __attribute__((visibility("hidden"))) arc4random(void)
{
    uint32_t v = 0;
    while (syscall(SYS_getrandom, &v, sizeof(v), 0) != (long)sizeof(v)) {
        if (errno != EINTR) {
            break;
        }
    }
    return v;
}
