/*
 * guard.cpp - where what LLVM throws stops (guard.h says why).
 *
 * The only C++ of numbavec besides outline.cpp.  It owns the two handlers
 * LLVM calls on its way to ending the process, and the try/catch that every
 * step into LLVM runs inside:
 *
 *   report_bad_alloc_error  (safe_malloc, safe_realloc and others when
 *                           malloc returns NULL): without a handler LLVM
 *                           built without exceptions writes "LLVM ERROR: out
 *                           of memory" and aborts; ours throws
 *                           std::bad_alloc, as operator new does.
 *   report_fatal_error      (a code generator that cannot select an
 *                           instruction, an object it cannot write): without
 *                           a handler LLVM prints and exits; ours throws
 *                           its reason, which becomes a RuntimeError.
 *
 * Both handlers are LLVM's process-wide ones; they are installed once, at
 * the first cg_init (the JIT's or the PTX back end's first use).  An
 * exception thrown outside any cg_run still ends the process
 * (std::terminate), as the handlers' absence did: every entry point into
 * LLVM runs inside one.
 */
#include "compiler/guard.h"

#include <Python.h>

#include <new>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <llvm/Support/ErrorHandling.h>

namespace {

/* report_fatal_error's reason, carried to cg_run. */
struct LlvmFatal {
    char reason[512];
};

bool installed;
long thrown;

[[noreturn]] void
on_bad_alloc(void *, const char *, bool)
{
    throw std::bad_alloc();
}

[[noreturn]] void
on_fatal_error(void *, const char *reason, bool)
{
    LlvmFatal f;
    snprintf(f.reason, sizeof(f.reason), "%s", reason != nullptr ? reason : "unknown error");
    throw f;
}

} // namespace

extern "C" void
cg_init(void)
{
    if (installed) {
        return;
    }
    installed = true;
    llvm::install_bad_alloc_error_handler(on_bad_alloc, nullptr);
    llvm::install_fatal_error_handler(on_fatal_error, nullptr);
}

extern "C" int
cg_run(CgStep step, void *arg)
{
    try {
        return step(arg);
    } catch (const std::bad_alloc &) {
        PyErr_NoMemory();
    } catch (const LlvmFatal &f) {
        PyErr_Format(PyExc_RuntimeError, "LLVM failed: %s", f.reason);
    } catch (...) {
        /* another library's exception (libNVVM's own C++) */
        PyErr_SetString(PyExc_RuntimeError, "an exception escaped from the compiler's libraries");
    }
    thrown++;
    return CG_THREW;
}

extern "C" int
cg_headroom(size_t bytes)
{
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        PyErr_NoMemory();
        return -1;
    }
    munmap(p, bytes);
    return 0;
}

extern "C" long
cg_thrown(void)
{
    return thrown;
}
