/* numbavec's portable wheel: libstdc++ 12 includes <sys/single_threaded.h>
 * (glibc 2.32) where it exists; zig's glibc 2.28 headers refuse it.  This
 * stand-in, first on the C++ files' include path (setup.py, cxx_args), says
 * "never single-threaded": libstdc++ then always uses atomic reference
 * counts, which is what it did before glibc 2.32, and no 2.32 symbol is
 * referenced.  (LLVM's prebuilt archives reference the real symbol; that
 * one comes from tools/portable/glibc228.c.) */
#ifndef NUMBAVEC_PORTABLE_SINGLE_THREADED_H
#define NUMBAVEC_PORTABLE_SINGLE_THREADED_H
static const char __libc_single_threaded = 0;
#endif
