/*
 * gufunc.h - the gufunc factory: @guvectorize kernels as real gufuncs.
 *
 *   layout.c   the layout grammar ("(m,n),(n)->(m)", "(n),(n)"), checked
 *              against the signatures
 *   loops.c    emits the body NumPy's gufunc loop runs: the outer loop over
 *              a range, core dimensions and strides unpacked per argument,
 *              a contiguous specialisation of the kernel
 *   call.c     the C inner loop NumPy calls: [::1] checks and copies, the
 *              target's split of the outer range, errors from the status
 *   gufunc.c   _core.guvectorize(): compile each signature, build the ufunc
 *              (writable inputs through the ufunc's op_flags)
 *   outtypes.c a dynamic gufunc's out= arrays type its outputs (its call
 *              adds their DTypes as signature= before NumPy's dispatch)
 */
#ifndef NV_GUFUNC_H
#define NV_GUFUNC_H

#include "common.h"
#include "compiler/compiler.h"
#include "host/host.h"

/* ---- layout.c ---- */

#define GU_MAXCORE 64 /* core dimensions of all arguments together */

typedef struct GuLayout {
    int nin, nout; /* nout == 0: no '->', the kernel writes its inputs */
    int nargs;
    int ndims[TS_MAXARGS];              /* core dimensions of each argument */
    int dim[TS_MAXARGS][TS_MAXDIMS];    /* their indices among the distinct names */
    int ndimnames;                      /* distinct dimension names (NumPy's core_num_dim_ix) */
    long long fixed[GU_MAXCORE];        /* a frozen dimension's size ((3)), else 0 */
    unsigned char optional[GU_MAXCORE]; /* a '?' dimension */
    char text[1024];                    /* the layout, as NumPy parses it */
} GuLayout;

/* Parses a layout str; 0, or -1 with ValueError pointing at the bad part. */
int gu_parse_layout(PyObject *obj, GuLayout *out);

/*
 * Checks sig against the layout (argument counts, array ranks against core
 * dimensions) and writes the kernel's view of it into *kernel: arrays keep
 * their rank; a () argument declared as a scalar stays one, declared as a
 * 1-d array it becomes a 1-element view (Numba's res[0] = ...).  ret is
 * TS_VOID.  0, or -1 with ValueError/TypeError naming the argument.
 */
int gu_check_signature(const GuLayout *layout, const TsSignature *sig, const unsigned char *written,
                       TsSignature *kernel);

/*
 * The kernel's half of a gufunc builder (CcBuilder.kernel_signature and
 * .variants), for the host factory here and the cuda target's: the
 * signature checked against the layout with every written argument
 * (base_written: outputs, writable_args; written: what the kernel assigns
 * to), and the unit-stride versions worth emitting.
 */
int gu_kernel_signature(const GuLayout *layout, const unsigned char *base_written, int dynamic,
                        const TsSignature *sig, const unsigned char *written, TsSignature *ksig);
int gu_kernel_variants(const GuLayout *layout, const TsSignature *ksig,
                       unsigned long long masks[2]);

/* writable_args: a sequence of argument indices (the decorator turns names
 * into indices), each marked in written.  0, or -1 with TypeError/ValueError. */
int gu_parse_writable(PyObject *obj, const GuLayout *layout, unsigned char *written);

/* ---- loops.c ---- */

/*
 * The body of a gufunc loop, as emitted by gu_emit_body:
 *     int32 body(char **args, npy_intp *dims, npy_intp *steps,
 *                npy_intp start, npy_intp stop)
 * runs the kernel for outer indices [start, stop) with NumPy's dims and
 * steps (outer count, core sizes; outer steps, core strides).  Returns 0,
 * or the first nonzero kernel status (the range stops there).
 */
typedef int (*GuBodyFn)(char **args, const npy_intp *dims, const npy_intp *steps, npy_intp start,
                        npy_intp stop);

/*
 * Emits `name` (a GuBodyFn) into mod around the two versions of a kernel:
 * `general` (any strides) and `contig` (unit element stride in the last
 * dimension of every array; may be NULL).  The body tests the strides
 * once per call.  contig_only (with a contig version): a body of the contig
 * version alone, which returns GU_STATUS_GENERAL, before any work, for the
 * strides it does not take; general is then deleted from mod.  Returns the
 * function or NULL with an exception.
 */
LLVMValueRef gu_emit_body(LLVMModuleRef mod, LLVMValueRef general, LLVMValueRef contig,
                          const GuLayout *layout, const TsSignature *kernel, const char *name,
                          int contig_only);

/* What a contig-only body returns for strides it does not take: the whole
 * body must run the call.  No kernel status is this. */
enum { GU_STATUS_GENERAL = CC_STATUS_USER - 1 };

/* ---- call.c ---- */

/* What one compiled signature's loop needs; owned by the Library entry. */
typedef struct GuLoop {
    CcCode *code; /* borrowed: its compiled signature owns it; the body is entry 0 */
    /* the contig-only body (gu_emit_body), while the whole body's code waits
     * to be made: a first call on contiguous cores makes only the half of the
     * machine code it runs.  Owned (vz_compiled_free), or NULL. */
    struct VzCompiled *contig_body;
    CcCode *contig_code; /* borrowed: contig_body's code */
    /* quick code first (cc_code_quick_entry), in place of a contig-only
     * body, when vz_quick_first allows it; else quick.code is NULL */
    TgQuickFirst quick;
    const TgTarget *target;
    GuLayout layout;
    TsSignature kernel; /* the kernel's view of the signature */
    int itemsize[TS_MAXARGS];
    unsigned char contig[TS_MAXARGS];  /* declared [::1]: checked per call */
    unsigned char written[TS_MAXARGS]; /* outputs and writable inputs */
    /* a dynamic gufunc's: the outputs whose kinds are what the kernel's
     * stores infer (so a call that gives them no type may use this loop) */
    unsigned char inferred[TS_MAXARGS];
    double cost_ns; /* one kernel call per unit of core work */
} GuLoop;

/* NumPy's gufunc inner loop, legacy signature; data is a GuLoop. */
void gu_legacy_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data);

/* Registers an ArrayMethod for each of the first ntypes entries of ufunc's
 * legacy tables (made with VzUfuncSpec.methods; their data are GuLoops), so
 * that errors raised inside a loop (IndexError) reach the caller, then
 * publishes the tables.  0/-1. */
int gu_register_methods(PyObject *ufunc, int ntypes);
/* Registers the ArrayMethod of entry t of ufunc's legacy tables (published
 * or not: a lazy gufunc's, one at a time).  0/-1. */
int gu_register_method(PyObject *ufunc, int t);

/* ---- outtypes.c ---- */

/* Makes the output arrays a call to this dynamic gufunc gives type the loop
 * it compiles (Numba's rule), where the caller gives no dtype= or
 * signature=.  Leaves the ufunc as it is if its call is not NumPy's. */
void gu_type_outputs_by_out(PyObject *ufunc);

/* ---- gufunc.c ---- */

/* The host targets' guvectorize factory (target.h).  New reference or NULL. */
PyObject *gu_make_guvectorize(const TgTarget *t, TgRequest *r);

#endif /* NV_GUFUNC_H */
