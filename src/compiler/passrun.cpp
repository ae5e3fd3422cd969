/*
 * passrun.cpp - a pass pipeline, run as LLVMRunPasses runs it but with
 * nothing in the frame the exception would cross.
 *
 * LLVMRunPasses keeps its pass builder, analysis managers and standard
 * instrumentations on its stack.  The instrumentations hold two TimerGroups
 * (the pass-timing handler, made whether timing is on or not), and a
 * TimerGroup links itself into LLVM's process-wide list of groups when it is
 * made and unlinks itself when it is destroyed.  When operator new throws
 * inside a pass (guard.h: out of memory under RLIMIT_AS), LLVM's frames have
 * no cleanup, so those groups stay in the list while their frame is reused:
 * the next TimerGroup anyone makes or destroys writes its list pointers
 * into whatever lives there by then.  That was "free(): invalid pointer"
 * (or SIGSEGV) at the end of the next optimisation, after a MemoryError
 * (docs/HISTORY.md, "Out of memory in LLVM").
 *
 * Here everything the run needs is one object on the heap, made without
 * the timing handler (timing is never on in numbavec) and with the one
 * instrumentation whose absence would change what runs, optnone's: freed
 * after a run that returns, and left (leaked, as the context is) when the
 * run throws.  The default tuning options are those LLVMRunPasses is given
 * by LLVMCreatePassBuilderOptions.
 */
#include "compiler/passrun.h"

#include <llvm/IR/Module.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/CBindingWrapping.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>

namespace {

/* What one run needs, in the order it is made (and destroyed backwards). */
struct Run {
    llvm::PassInstrumentationCallbacks pic;
    llvm::PassBuilder builder;
    llvm::LoopAnalysisManager loops;
    llvm::FunctionAnalysisManager functions;
    llvm::CGSCCAnalysisManager sccs;
    llvm::ModuleAnalysisManager modules;
    llvm::OptNoneInstrumentation optnone{false};
    llvm::ModulePassManager passes;

    explicit Run(llvm::TargetMachine *tm)
        : builder(tm, llvm::PipelineTuningOptions(), std::nullopt, &pic)
    {
        builder.registerLoopAnalyses(loops);
        builder.registerFunctionAnalyses(functions);
        builder.registerCGSCCAnalyses(sccs);
        builder.registerModuleAnalyses(modules);
        builder.crossRegisterProxies(loops, functions, sccs, modules);
        optnone.registerCallbacks(pic);
    }
};

} // namespace

extern "C" LLVMErrorRef
cc_run_passes(LLVMModuleRef mod, const char *pipeline, LLVMTargetMachineRef tm)
{
    /* a raw pointer: when a pass throws, nothing here is destroyed */
    Run *run = new Run(reinterpret_cast<llvm::TargetMachine *>(tm));
    llvm::Error err = run->builder.parsePassPipeline(run->passes, pipeline);
    if (!err) {
        run->passes.run(*llvm::unwrap(mod), run->modules);
    }
    delete run;
    return llvm::wrap(std::move(err));
}
