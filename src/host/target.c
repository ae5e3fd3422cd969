/*
 * target.c - the target interface's table: the targets register themselves
 * here at module init (targets/cpu.c and parallel.c through tg_init_module,
 * the cuda target from cuda's init), and the factories find the one a
 * decorator names with tg_for, without knowing which targets exist.
 */
#include "host/host.h"

#include <stdio.h>
#include <string.h>

/*
 * Filled once at module init, in the order the targets register (cpu,
 * parallel, then cuda and its alias gpu), with the GIL held; only read
 * after that.
 */
enum { MAX_TARGETS = 8 };
static struct {
    const char *name;
    const TgTarget *target;
} targets[MAX_TARGETS];
static size_t ntargets;
#define NTARGETS ntargets

int
tg_register(const char *name, const TgTarget *t)
{
    for (size_t i = 0; i < ntargets; i++) {
        if (strcmp(targets[i].name, name) == 0) {
            targets[i].target = t; /* the module initialised again */
            return 0;
        }
    }
    if (ntargets == MAX_TARGETS) {
        PyErr_Format(PyExc_RuntimeError, "numbavec: no room to register target '%s'", name);
        return -1;
    }
    targets[ntargets].name = name;
    targets[ntargets].target = t;
    ntargets++;
    return 0;
}

/* Whether target t makes what who asks for. */
static int
makes(const TgTarget *t, const char *who)
{
    return strcmp(who, "guvectorize") == 0 ? t->make->guvectorize != NULL
                                           : t->make->vectorize != NULL;
}

/* "'cpu', 'parallel' or 'cuda'": the names of the targets who may name. */
static void
choices(const char *who, char *buf, size_t size)
{
    size_t at = 0, n = 0, count = 0;
    for (size_t i = 0; i < NTARGETS; i++) {
        count += makes(targets[i].target, who);
    }
    buf[0] = '\0';
    for (size_t i = 0; i < NTARGETS && at < size; i++) {
        if (!makes(targets[i].target, who)) {
            continue;
        }
        n++;
        const char *sep = n == 1 ? "" : n == count ? " or " : ", ";
        at += (size_t)snprintf(buf + at, size - at, "%s'%s'", sep, targets[i].name);
    }
}

const TgTarget *
tg_for(const char *name, const char *who)
{
    char offered[128];
    choices(who, offered, sizeof(offered));
    for (size_t i = 0; i < NTARGETS; i++) {
        if (strcmp(targets[i].name, name) != 0) {
            continue;
        }
        if (makes(targets[i].target, who)) {
            return targets[i].target;
        }
        PyErr_Format(PyExc_NotImplementedError,
                     "%s() does not support target='%s' yet; it supports target %s", who, name,
                     offered);
        return NULL;
    }
    PyErr_Format(PyExc_ValueError, "%s(): unknown target '%s' (choose %s)", who, name, offered);
    return NULL;
}
