/*
 * outline.h - the C interface of outline.cpp: a long kernel cut into
 * functions of bounded size before optimisation (why: outline.cpp).
 */
#ifndef NV_COMPILER_OUTLINE_H
#define NV_COMPILER_OUTLINE_H

#include <llvm-c/Types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Modules larger than this many instructions are cut (passes.c's optimise),
 * into pieces of about CC_OUTLINE_PIECE at most. */
enum { CC_OUTLINE_ABOVE = 6000, CC_OUTLINE_PIECE = 500 };

/* Every function of mod larger than `piece` instructions cut into noinline
 * functions of about that size, called in turn.  How many were made. */
int cc_outline(LLVMModuleRef mod, unsigned piece);
/* mod's instructions, all functions together. */
unsigned cc_module_size(LLVMModuleRef mod);

#ifdef __cplusplus
}
#endif

#endif
