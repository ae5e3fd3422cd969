/*
 * guard.h - LLVM's C++ behind numbavec's C: what it throws stops at the
 * guard (guard.cpp).
 *
 * LLVM is C++ built without exceptions, but what it calls is not: operator
 * new throws std::bad_alloc when memory runs out (ulimit -v, RLIMIT_AS), and
 * LLVM's own out-of-memory and fatal-error paths print and end the process
 * unless a handler is installed.  guard.cpp installs handlers that throw
 * instead, and cg_run catches whatever comes out of a step: every call into
 * LLVM that can allocate (IR building, verifying, optimising, code
 * generation, cloning, bitcode and IR reading, the ORC JIT's linking,
 * libNVVM) runs inside a cg_run, so that a Python exception comes back where
 * an abort or std::terminate used to.
 *
 * What a thrown step leaves (docs/HISTORY.md, "Out of memory in LLVM"): LLVM
 * has no cleanup code, so the frames the exception crossed released nothing
 * and may have left value handles pointing into their stack.  The LLVM
 * context the step worked in is therefore never touched again: the caller
 * marks its CcModule tainted, and cc_module_dispose leaks it instead of
 * freeing it.
 */
#ifndef NV_COMPILER_GUARD_H
#define NV_COMPILER_GUARD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What cg_run returns when LLVM threw inside the step: MemoryError is set
 * (RuntimeError for an LLVM fatal error), and the context the step used
 * must not be touched again. */
#define CG_THREW (-2)

typedef int (*CgStep)(void *arg);

/* Installs LLVM's bad-alloc and fatal-error handlers (once; GIL held). */
void cg_init(void);
/* step(arg)'s result, or CG_THREW.  GIL held. */
int cg_run(CgStep step, void *arg);
/* 0 when `bytes` of address space can be had now, else -1 with
 * MemoryError: asked before a step that should not fail halfway. */
int cg_headroom(size_t bytes);
/* Steps LLVM threw in, each of which left its context unfreed (_jit_info). */
long cg_thrown(void);

#ifdef __cplusplus
}
#endif

#endif
