/*
 * arena.c - the memory of one compilation.
 *
 * Every IR node, variable, string and type made while compiling one
 * signature comes from the arena, and so do the Python references the IR
 * holds (frozen constants, builtin objects); cc_arena_free releases all of
 * them at once, after success or failure alike.
 */
#include "compiler/compiler.h"

#include <string.h>

enum { ARENA_BLOCK = 16 * 1024 };

typedef struct Block {
    struct Block *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} Block;

struct CcArena {
    Block *blocks;
    PyObject *kept; /* list of references owned by the arena */
};

CcArena *
cc_arena_new(void)
{
    CcArena *arena = PyMem_Calloc(1, sizeof(CcArena));
    if (arena == NULL) {
        PyErr_NoMemory();
    }
    return arena;
}

void
cc_arena_free(CcArena *arena)
{
    if (arena == NULL) {
        return;
    }
    Block *b = arena->blocks;
    while (b != NULL) {
        Block *next = b->next;
        PyMem_Free(b);
        b = next;
    }
    Py_XDECREF(arena->kept);
    PyMem_Free(arena);
}

static Block *
new_block(CcArena *arena, size_t need)
{
    size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
    Block *b = PyMem_Malloc(sizeof(Block) + size);
    if (b == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    b->next = arena->blocks;
    b->used = 0;
    b->size = size;
    arena->blocks = b;
    return b;
}

void *
cc_alloc(CcArena *arena, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    Block *b = arena->blocks;
    if (b == NULL || b->size - b->used < size) {
        b = new_block(arena, size);
        if (b == NULL) {
            return NULL;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *
cc_strdup(CcArena *arena, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cc_alloc(arena, n);
    if (p != NULL) {
        memcpy(p, s, n);
    }
    return p;
}

int
cc_arena_keep(CcArena *arena, PyObject *obj)
{
    if (arena->kept == NULL) {
        arena->kept = PyList_New(0);
        if (arena->kept == NULL) {
            return -1;
        }
    }
    return PyList_Append(arena->kept, obj);
}
