/*
 * passrun.h - the C interface of passrun.cpp: a pass pipeline run so that
 * a throw inside it leaves nothing of it behind outside its context (why:
 * passrun.cpp).
 */
#ifndef NV_COMPILER_PASSRUN_H
#define NV_COMPILER_PASSRUN_H

#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LLVMRunPasses(mod, pipeline, tm, default options) without its standard
 * instrumentations: NULL, or the pipeline's parse error.  Runs inside a
 * cg_run (guard.h). */
LLVMErrorRef cc_run_passes(LLVMModuleRef mod, const char *pipeline, LLVMTargetMachineRef tm);

#ifdef __cplusplus
}
#endif

#endif
