/*
 * ndindex.c - the index tuple of np.ndindex's loop, carried from one
 * iteration to the next.
 *
 * lower.c lowers `for idx in np.ndindex(shape)` to a range loop over a flat
 * k with `idx = .unravel(k, shape)` as the body's first statement, so the
 * tuple is asked for k = 0, 1, 2, ... in order, once each (the name cannot
 * be written by a user).  Unravelling k by division cost one or two 64-bit
 * divisions an element: a grouped reduction over np.ndindex ran at 0.5-0.7
 * of Numba's speed.  Here the tuple lives in a slot of the function's entry
 * block and each call adds one to the previous tuple in C order, carrying
 * into the dimension before (k = 0 starts from zeros).
 */
#include "compiler/emit.h"

LLVMValueRef
em_ndindex_next(Emit *E, LLVMTypeRef tuple_t, LLVMValueRef k, LLVMValueRef *dims, int nd)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef slot = em_entry_alloca(E, tuple_t, "ndindex.slot");
    LLVMValueRef prev = LLVMBuildLoad2(E->b, tuple_t, slot, "ndindex.prev");
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntEQ, k, zero, "ndindex.first");
    LLVMValueRef carry = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
    LLVMValueRef t = LLVMGetUndef(tuple_t);
    for (int i = nd - 1; i >= 0; i--) {
        LLVMValueRef c = LLVMBuildExtractValue(E->b, prev, (unsigned)i, "ndindex.c");
        LLVMValueRef inc =
            LLVMBuildAdd(E->b, c, LLVMBuildZExt(E->b, carry, i64, ""), "ndindex.inc");
        LLVMValueRef wrap =
            LLVMBuildAnd(E->b, carry, LLVMBuildICmp(E->b, LLVMIntEQ, inc, dims[i], "ndindex.end"),
                         "ndindex.wrap");
        LLVMValueRef v = LLVMBuildSelect(E->b, wrap, zero, inc, "ndindex.v");
        v = LLVMBuildSelect(E->b, first, zero, v, "ndindex.v0");
        /* an index is never negative: with its sign bit known clear, the
         * negative-index wrap of a[idx] folds away */
        v = LLVMBuildAnd(E->b, v, LLVMConstInt(i64, 0x7FFFFFFFFFFFFFFFULL, 0), "ndindex.i");
        t = LLVMBuildInsertValue(E->b, t, v, (unsigned)i, "index");
        carry = wrap;
    }
    LLVMBuildStore(E->b, t, slot);
    return t;
}
