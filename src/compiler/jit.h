/*
 * jit.h - internal to the host JIT's three files, from the bottom up:
 *
 *   jit.c     the target machine, ORC's LLJIT (cc_jit), symbols and linking
 *   passes.c  the pass pipeline: optimisation, the rewrites before code
 *             generation (prepare.c), code generation to an object file
 *   code.c    CcCode: machine code kept alive, keyed, lazy or quick
 *
 * compiler.h is what the rest of the compiler and the factories see; this
 * header is for these files (and prepare.c's two passes) only.
 */
#ifndef NUMBAVEC_COMPILER_JIT_H
#define NUMBAVEC_COMPILER_JIT_H

#include "compiler/compiler.h"
#include "compiler/guard.h"

#include <stdatomic.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

struct CcCode {
    LLVMOrcResourceTrackerRef tracker; /* owns the machine code in the JIT */
    char *name;                        /* the module's name (PyMem) */
    char *ir;                          /* optimised IR (PyMem) */
    char *key;                         /* keyed code: its key (PyMem), else NULL */
    Py_ssize_t refs;                   /* keyed code is shared: see keyed_find */
    CcCode *next;                      /* in jit.keyed */
    int n;                             /* its entries */
    void *addrs[CC_MAXENTRIES];        /* and their addresses, once made */
    atomic_int made;                   /* 1: addrs are valid (release/acquire) */
    /* code generation left for the first call (cc_jit_add_lazy) */
    CcModule pending; /* the verified module, until made (a failure keeps it) */
    /* its bitcode, written when it was added: what a pending module whose
     * context is tainted is read back from (never from that context) */
    LLVMMemoryBufferRef pending_bc;
    int link_broken;     /* LLVM threw while linking it: not tried again */
    char (*unique)[128]; /* the entries' exported names (PyMem) */
    CcStoreFn store;     /* called with the object file once made, or NULL */
    PyObject *store_ctx; /* owned: its first argument */
    /* quick code (cc_code_quick_entry): a copy of the pending module made
     * without optimisation, kept until code is freed (a thread may still be
     * running it when the optimised code is made) */
    LLVMOrcResourceTrackerRef quick_tracker;
    void *quick[CC_MAXENTRIES];
    atomic_int quick_made; /* 1: quick is valid (release/acquire) */
    int quick_broken;      /* LLVM threw while linking the quick code */
};

/*
 * The process-wide JIT state, in one place.  `ready` is set once everything
 * below it exists; a failed initialisation releases what it made and may
 * be retried.  `options_parsed` is separate because LLVM's command line can
 * be parsed only once per process.
 */
typedef struct CcJit {
    int ready;
    int options_parsed;
    int libmvec;                   /* libmvec.so.1 loaded: vector math on */
    Py_ssize_t live_codes;         /* CcCode objects not yet freed */
    Py_ssize_t compilations;       /* modules optimised and code-generated */
    Py_ssize_t quick_compilations; /* quick code made (cc_code_quick_entry) */
    Py_ssize_t pending;            /* modules whose code waits for a first call */
    Py_ssize_t object_loads;       /* stored objects linked (cache hits) */
    Py_ssize_t outlined;           /* functions outline.cpp cut long kernels into */
    unsigned long long next_id;    /* makes exported names unique */
    CcCode *keyed;                 /* live keyed code, to share (list) */
    char *cpu;                     /* LLVMGetHostCPUName */
    char *features;                /* LLVMGetHostCPUFeatures */
    char *triple;                  /* LLVMGetDefaultTargetTriple */
    LLVMTargetMachineRef tm;       /* optimisation (TTI) and assembly */
    LLVMTargetMachineRef quick_tm; /* quick code: no optimisation */
    LLVMOrcLLJITRef lljit;
    LLVMOrcJITDylibRef main; /* borrowed from lljit */
    char session_error[512]; /* last error ORC reported, or "" */
} CcJit;

extern CcJit cc_jit;

/* ---- jit.c ---- */

/* Consumes err; raises exc "what: <LLVM's message>" (MemoryError when ORC
 * could not map memory).  Returns -1. */
int cc_jit_error(PyObject *exc, const char *what, LLVMErrorRef err);
/* Raises exc with a message LLVM allocated, then frees it.  Returns -1. */
int cc_jit_message(PyObject *exc, const char *what, char *msg);
/* NUMBAVEC_DUMP: one stage's text of a module on stderr. */
void cc_jit_dump(const char *what, const char *module, const char *text);
int cc_jit_verify(LLVMModuleRef mod); /* 0, or -1 with a RuntimeError */
char *cc_jit_strdup(const char *s);   /* PyMem copy, or NULL with MemoryError */
/* names made unique in the one JITDylib: ".<key>" or ".<id>" appended
 * (new PyMem array, or NULL with an exception) */
char (*cc_jit_unique_names(const char *const *names, int n, const char *key))[128];
/* m's names[i] renamed unique[i] (and m verified when check), m tainted if
 * LLVM threw */
int cc_jit_rename(CcModule *m, const char *const *names, int n, char (*unique)[128], int check);
/* code generation of mod by tm into an in-memory object file */
int cc_jit_emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMMemoryBufferRef *out);
/* obj (consumed) linked under a new *tracker, names resolved into addrs */
int cc_jit_link(CcCode *code, LLVMOrcResourceTrackerRef *tracker, LLVMMemoryBufferRef obj,
                char (*names)[128], void **addrs, int *broken);
void cc_jit_remove_tracker(LLVMOrcResourceTrackerRef tracker); /* tracker may be NULL */

/* ---- passes.c ---- */

/* m optimised (its IR text kept in code->ir) and code-generated into *obj,
 * under the guard (m tainted when LLVM threw).  Does not consume m. */
int cc_jit_compile_module(CcCode *code, CcModule *m, LLVMMemoryBufferRef *obj, int verified);
/* quick code of work (a copy of a pending module): the quick pipeline and
 * code generation, under the guard; returns cg_run's code (CG_THREW) */
int cc_jit_compile_quick(CcModule *work, LLVMMemoryBufferRef *obj);
/* assembly of IR text, through a fresh context (new reference) */
PyObject *cc_jit_asm_from_ir(const char *ir);

/* ---- selectfold.c: the last step of optimisation ---- */

/* c ? x + y : x made x + (c ? y : -0.0), which takes the select out of a
 * loop-carried chain */
void cc_pass_select_identity(LLVMModuleRef mod);

/* ---- prepare.c: the two passes passes.c runs before code generation ---- */

void cc_pass_fast_codegen(LLVMModuleRef mod);
/* float compares made quiet, in the form the host's features allow */
void cc_pass_quiet_compares(LLVMModuleRef mod, const char *features);

/* Whether select or branch in carries branch weights (branchhint.c's:
 * code generation is to make it a branch) */
int cc_weighted(LLVMValueRef in);

/* What a pass does with one instruction (b: a builder to make others
 * with); it may replace or erase it, and returns the instruction to go on
 * from, or NULL for the one that followed it. */
typedef LLVMValueRef (*CcVisit)(LLVMBuilderRef b, LLVMValueRef in, void *ctx);
/* visit on every instruction of mod whose opcode is op, in order */
void cc_each_instruction(LLVMModuleRef mod, LLVMOpcode op, CcVisit visit, void *ctx);

#endif
