/*
 * stack.c - how much C stack the compiling thread has, and a thread with
 * enough of it for work that recurses with the depth of user code.
 *
 * Every pass over a kernel recurses once per level of nesting (lower.c
 * bounds that by cc_stack_room), and so does CPython's own ast.parse, which
 * numbavec's decorator calls on the user's thread: on a thread made with
 * threading.stack_size(512 * 1024), CPython 3.13 parses and converts a
 * 3000-level expression by recursing past the end of the stack (a segfault
 * in the interpreter, not in us).  CPython tunes its recursion limits for a
 * main thread's 8 MB stack, so such work runs here or, when this thread has
 * less room, on a fresh thread with a stack of the size asked for.
 */
#include "compiler/compiler.h"

#include <pthread.h>

/* The lowest address of this thread's stack, or NULL when unknown (read
 * once per thread: pthread_getattr_np reads /proc for the main thread). */
static char *
stack_low(void)
{
    static _Thread_local char *low;
    static _Thread_local int known;
    if (!known) {
        pthread_attr_t attr;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &addr, &size) != 0) {
                addr = NULL;
            }
            pthread_attr_destroy(&attr);
        }
        low = addr;
        known = 1;
    }
    return low;
}

size_t
cc_stack_room(void)
{
    char here;
    char *low = stack_low();
    if (low == NULL || &here <= low) {
        return SIZE_MAX;
    }
    return (size_t)(&here - low);
}

/*
 * Every pass over the tree (lower, typeinfer, emit) recurses once per level
 * of nesting, so the depth of a kernel is bounded: by CC_MAX_DEPTH, and by
 * what the stack of the compiling thread has room for.  STACK_PER_LEVEL is
 * about twice what the deepest pass was measured to use per level;
 * STACK_RESERVE is left for LLVM and the calls around us.
 */
#define STACK_PER_LEVEL 640
#define STACK_RESERVE   (128 * 1024)

int
cc_depth_budget(void)
{
    size_t room = cc_stack_room();
    size_t levels = room > STACK_RESERVE ? (room - STACK_RESERVE) / STACK_PER_LEVEL : 0;
    return levels < CC_MAX_DEPTH ? (int)levels : CC_MAX_DEPTH;
}

/* ---- a call on a thread of its own ---- */

typedef struct StackJob {
    PyObject *callable, *args; /* borrowed from the caller, who waits */
    PyObject *result;          /* new reference, or NULL with the error below */
    PyObject *etype, *evalue, *etb;
} StackJob;

static void *
stack_job_run(void *arg)
{
    StackJob *job = arg;
    PyGILState_STATE gil = PyGILState_Ensure();
    job->result = PyObject_CallObject(job->callable, job->args);
    if (job->result == NULL) {
        PyErr_Fetch(&job->etype, &job->evalue, &job->etb);
    }
    PyGILState_Release(gil);
    return NULL;
}

PyObject *
cc_call_with_stack(size_t stack, PyObject *callable, PyObject *args)
{
    if (cc_stack_room() >= stack) {
        return PyObject_CallObject(callable, args);
    }
    StackJob job = {.callable = callable, .args = args};
    pthread_attr_t attr;
    pthread_t thread;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        rc = pthread_attr_setstacksize(&attr, stack);
        if (rc == 0) {
            rc = pthread_create(&thread, &attr, stack_job_run, &job);
        }
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) {
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_BEGIN_ALLOW_THREADS pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS if (job.result == NULL)
    {
        PyErr_Restore(job.etype, job.evalue, job.etb);
    }
    return job.result;
}

/* ---- the module's functions ---- */

static PyObject *
call_with_stack(PyObject *module, PyObject *args)
{
    Py_ssize_t n = PyTuple_Size(args);
    if (n < 2) {
        PyErr_SetString(PyExc_TypeError, "_call_with_stack(bytes, callable, *args)");
        return NULL;
    }
    size_t stack = PyLong_AsSize_t(PyTuple_GetItem(args, 0));
    if (stack == (size_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    if (stack < 64 * 1024 || stack > ((size_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "_call_with_stack: a stack of 64 KiB to 1 GiB");
        return NULL;
    }
    PyObject *rest = PyTuple_GetSlice(args, 2, n);
    if (rest == NULL) {
        return NULL;
    }
    PyObject *result = cc_call_with_stack(stack, PyTuple_GetItem(args, 1), rest);
    Py_DECREF(rest);
    return result;
}

static PyObject *
stack_room(PyObject *module, PyObject *unused)
{
    size_t room = cc_stack_room();
    return room == SIZE_MAX ? Py_NewRef(Py_None) : PyLong_FromSize_t(room);
}

static PyObject *
depth_budget(PyObject *module, PyObject *unused)
{
    return PyLong_FromLong(cc_depth_budget());
}

static PyMethodDef stack_functions[] = {
    {"_depth_budget", depth_budget, METH_NOARGS,
     "The levels of nesting a kernel compiled on this thread may have."},
    {"_call_with_stack", call_with_stack, METH_VARARGS,
     "_call_with_stack(bytes, callable, *args): callable(*args), on this thread when its stack "
     "has that many bytes of room, else on a new thread with a stack of that size."},
    {"_stack_room", stack_room, METH_NOARGS,
     "Bytes of C stack left below the caller on this thread (None: unknown)."},
    {NULL, NULL, 0, NULL},
};

int
cc_init_module(PyObject *module)
{
    return PyModule_AddFunctions(module, stack_functions) < 0 ? -1 : cc_init_inline(module);
}
