/*
 * call.c - the call protocol that a cuda ufunc and a cuda gufunc share:
 * from the Python arguments of f(...) to the call's value, in steps whose
 * kind-specific parts (CuCallKind) cucall.c supplies for a ufunc and
 * cugucall.c (with cugulaunch.c) for a gufunc.
 *
 *   1. parse    the arguments into operands (cu_classify), out=, the kind's
 *               keywords, stream=;
 *   2. resolve  the loop, the shapes, and every check that needs no device
 *               (the test hooks _plan and _resolve stop here, so that they
 *               run on every machine);
 *   3. load     the loop's module in the context: without a GPU, a call
 *               ends here with CudaSupportError; then every operand over
 *               another library's memory is checked (cu_check_foreign),
 *               before anything is copied, cast or launched;
 *   4. stage    a large host call in chunks through staging.c (pinned
 *               buffers, two streams); when the slots cannot be had, the
 *               call goes on as in 5;
 *   5. place    the operands on the device (host ones copied in, casts, new
 *               outputs), then launch: the kernel, and what it wrote back
 *               into the operands given (out=, written inputs);
 *   6. finish   the call's value: new outputs (copied to the host for a
 *               host call), and the exception the kernel raised;
 *   7. clear    what the call holds, on every path.
 */
#include "targets/cuda/ufunc/ufunc.h"

void
cu_call_init(CuCall *c, const CuCallKind *kind, int nin, int nops)
{
    c->kind = kind;
    c->nin = nin;
    c->nops = nops;
    c->stream = Py_None;
    c->s = NULL;
    c->loop = -1;
    c->device = 0;
    for (int k = 0; k < nops; k++) { /* what clear releases, from the start */
        cu_operand_reset(&c->ops[k]);
    }
}

int
cu_call_host(CuCall *c, PyObject *args, PyObject *kwargs)
{
    return c->kind->parse(c, args, kwargs) < 0 || c->kind->resolve(c) < 0 ? -1 : 0;
}

PyObject *
cu_call_run(CuCall *c, PyObject *args, PyObject *kwargs)
{
    const CuCallKind *k = c->kind;
    PyObject *result = NULL;
    CudaStaged job;
    int whole = 1; /* whole arrays on the device: not staged, or no slots for it */
    if (cu_call_host(c, args, kwargs) < 0 || k->load(c) < 0
        || cu_check_foreign(c->ops, c->nops) < 0) {
        goto done;
    }
    if (k->stage(c, &job) && (whole = k->staged(c, &job)) < 0) {
        goto done;
    }
    if (whole && (k->place(c) < 0 || k->launch(c) < 0)) {
        goto done;
    }
    result = k->finish(c);
done:
    cu_call_clear(c);
    return result;
}

void
cu_call_clear(CuCall *c)
{
    cu_operands_clear(c->ops, c->nops);
    c->kind->clear(c);
}
