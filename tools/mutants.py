"""The mutants of tools/mutate.py: one realistic bug each.

A mutant replaces the one occurrence of `find` in `file` by `replace`
(`nth` picks among several).  `why` says what bug it stands for and how it
would show; `tests` narrows or widens the file's test selection
(FILE_TESTS); `gpu` marks one that only a launch on a GPU can show.

EQUIVALENT lists mutants that change nothing observable (speed at most),
each with the reason; they are not counted and are run only with
`mutate.py run --equivalent`, to confirm that they do survive.

Keep the patterns short but unique: `mutate.py check` verifies them after
the code moves.
"""
from collections import namedtuple

Mutant = namedtuple("Mutant", "id file find replace why tests nth gpu",
                    defaults=(None, None, False))

# The tests that exercise each file: fast (seconds), and broad enough that a
# survivor is a real gap (test_lazy.py and test_arrays.py were added after
# issue 34's first round: its wide check found them killing T04 and the
# first F03).  NEW: the tests written against the survivors of
# issue 34's round (absent in its 'before' round).
UFUNC = ["tests/ufunc/test_loops.py", "tests/ufunc/test_vectorize.py", "tests/host/test_parallel.py",
         "tests/compiler/test_raise.py"]
GUFUNC = ["tests/gufunc/test_guvectorize.py", "tests/gufunc/test_gufunc_dynamic.py", "tests/compiler/test_raise.py",
          "tests/compiler/test_arrays.py"]
POOL = ["tests/host/test_parallel.py", "tests/host/test_pool.py", "tests/compiler/test_raise.py",
        "tests/gufunc/test_guvectorize.py", "tests/ufunc/test_loops.py"]
TYPES = ["tests/test_typing.py", "tests/ufunc/test_vectorize.py", "tests/ufunc/test_lazy.py",
         "tests/compiler/test_language.py", "tests/ufunc/test_numba_compat.py"]
CUDA = ["tests/cuda/test_cuda_vectorize.py", "tests/cuda/test_cuda_gufunc.py", "tests/cuda/test_cuda_interop.py"]

NEW = {
    "ufunc": ["tests/ufunc/test_ufunc_blocks.py"],
    "gufunc": ["tests/gufunc/test_gufunc_limits.py"],
    "types": ["tests/compiler/test_promotion.py", "tests/compiler/test_arith_edges.py"],
    "cache": ["tests/cache/test_cache_key.py"],
    "cuda": ["tests/cuda/test_cuda_plan_edges.py"],
}


def _with(base, *extra):
    """The new test files that exist (the 'before' round has none), then
    base: the fast new files first, so that a kill under -x comes early."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    more = [p for e in extra for p in NEW[e] if os.path.exists(os.path.join(root, p))]
    return more + base


FILE_TESTS = {
    "src/vectorize/loops.c": _with(UFUNC, "ufunc"),
    "src/vectorize/dufunc.c": _with(["tests/ufunc/test_vectorize.py", "tests/ufunc/test_lazy.py",
                                     "tests/ufunc/test_loops.py"], "ufunc", "types"),
    "src/gufunc/loops.c": _with(GUFUNC, "gufunc"),
    "src/gufunc/call.c": _with(GUFUNC, "gufunc"),
    "src/gufunc/layout.c": _with(GUFUNC + ["tests/cuda/test_cuda_gufunc.py"], "gufunc"),
    "src/gufunc/gufunc.c": _with(GUFUNC, "gufunc"),
    "src/host/pool.c": _with(POOL, "ufunc", "gufunc"),
    "src/targets/parallel.c": _with(POOL, "ufunc", "gufunc"),
    "src/compiler/cctype.c": _with(TYPES, "types"),
    "src/compiler/arith.c": _with(TYPES + ["tests/ufunc/test_loops.py"], "types"),
    "numbavec/cache.py": _with(["tests/cache/test_cache.py"], "cache"),
    "numbavec/_capture.py": _with(["tests/cache/test_cache.py", "tests/cache/test_pickle_by_value.py"],
                                  "cache"),
    "src/targets/cuda/ufunc/cucall.c": _with(CUDA, "cuda"),
    "src/targets/cuda/ufunc/cugucall.c": _with(CUDA, "cuda"),
    "src/targets/cuda/driver/launch.c": _with(CUDA, "cuda"),
}

# The wide selection (mutate.py run --wide) that a survivor of the file's own
# selection is checked against before it counts as one: every other test
# file but the slow ones that cannot reach these files (PTX assembly, the
# language's and the device functions' front end, pickling by value), which
# a file's own selection keeps where they can.
WIDE_EXCLUDE = ["tests/cuda/test_cuda_ptx.py", "tests/compiler/test_language.py",
                "tests/compiler/test_devicefuncs.py", "tests/cache/test_pickle_by_value.py"]


def wide_tests(path):
    """Every test file but WIDE_EXCLUDE and the file's own selection (which
    the survivor passed already)."""
    import glob
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    every = sorted(os.path.relpath(p, root)
                   for p in glob.glob(os.path.join(root, "tests", "**", "test_*.py"), recursive=True))
    own = FILE_TESTS.get(path, [])
    return [p for p in every if p not in WIDE_EXCLUDE and p not in own]


LOOPS = "src/vectorize/loops.c"
GLOOPS = "src/gufunc/loops.c"
GCALL = "src/gufunc/call.c"
LAYOUT = "src/gufunc/layout.c"
GUFUNC_C = "src/gufunc/gufunc.c"
POOL_C = "src/host/pool.c"
PAR = "src/targets/parallel.c"
CCTYPE = "src/compiler/cctype.c"
ARITH = "src/compiler/arith.c"
DUFUNC = "src/vectorize/dufunc.c"
CACHE = "numbavec/cache.py"
CAPTURE = "numbavec/_capture.py"
CUCALL = "src/targets/cuda/ufunc/cucall.c"
CUGU = "src/targets/cuda/ufunc/cugucall.c"
LAUNCH = "src/targets/cuda/driver/launch.c"

MUTANTS = [
    # ---- the ufunc inner loop (src/vectorize/loops.c) ----
    Mutant("L01", LOOPS,
           "LLVMValueRef off = LLVMBuildMul(g->b, j, intp_const(g, ts_itemsize(g->kind[k])), \"\");",
           "LLVMValueRef off = LLVMBuildMul(g->b, j, intp_const(g, ts_itemsize(g->kind[0])), \"\");",
           "bcast block offset of every operand from input 0's item size (issue 34): wrong "
           "elements from the second block on when item sizes differ"),
    Mutant("L02", LOOPS,
           "LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, ts_itemsize(g->kind[k])), \"\");",
           "LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, ts_itemsize(g->kind[0])), \"\");",
           "layout check compares input k's step with input 0's item size: a strided f4 "
           "input of step 8 next to an f8 input 0 passes as contiguous"),
    Mutant("L03", LOOPS,
           "intp_const(g, ts_itemsize(g->kind[g->nin])), \"out.contig\");",
           "intp_const(g, ts_itemsize(g->kind[0])), \"out.contig\");",
           "output's contiguity checked against input 0's item size: f4(f8, f8) into a "
           "strided out= of step 8 takes the contiguous path"),
    Mutant("L04", LOOPS,
           "(unsigned)(g->block * ts_itemsize(g->kind[k])));",
           "(unsigned)(g->block * ts_itemsize(g->kind[0])));",
           "a step-0 input's block buffer sized by input 0's item size: a wider later input "
           "overflows its stack buffer"),
    Mutant("L05", LOOPS,
           "LLVMValueRef first = LLVMBuildSelect(g->b, small, g->n, block, \"fill.n\");",
           "LLVMValueRef first = LLVMBuildSelect(g->b, small, block, g->n, \"fill.n\");",
           "fill count min(n, block) inverted: buffers filled with n elements when n > block "
           "(stack overflow) and too few when n < block"),
    Mutant("L06", LOOPS,
           "LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, g->n, \"\");",
           "LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLE, next, g->n, \"\");",
           "block loop runs once more when n is a multiple of the block: a 0-element contig "
           "call still runs its first iteration, one element past the end"),
    Mutant("L07", LOOPS,
           "LLVMValueRef total = LLVMBuildMul(g->b, count, intp_const(g, size), \"bytes\");",
           "LLVMValueRef total = LLVMBuildMul(g->b, count, intp_const(g, 1), \"bytes\");",
           "replication counts elements as bytes: only count/size elements of the buffer hold "
           "the scalar"),
    Mutant("L08", LOOPS,
           "ok = LLVMBuildAnd(g->b, ok, safe, \"alias.ok\");",
           "ok = safe;",
           "overlap check keeps only the last input's verdict: accumulate's shifted input 0 "
           "takes the vectorized path"),
    Mutant("L09", LOOPS,
           "LLVMValueRef offset = LLVMBuildNSWMul(g->b, i, g->step[k], \"\");",
           "LLVMValueRef offset = LLVMBuildNSWMul(g->b, i, intp_const(g, ts_itemsize(g->kind[k])), \"\");",
           "strided path steps by the item size instead of the operand's step"),
    Mutant("L10", LOOPS,
           "LLVMValueRef hv[2] = {intp_const(g, size), next};",
           "LLVMValueRef hv[2] = {intp_const(g, 1), next};",
           "replication starts as if one byte were there: the scalar's bytes are smeared"),
    Mutant("L11", LOOPS,
           "LLVMValueRef before = LLVMBuildICmp(g->b, LLVMIntULE, end, out_start, \"\");",
           "LLVMValueRef before = LLVMBuildICmp(g->b, LLVMIntULE, start, out_start, \"\");",
           "overlap check: an input starting below the output counts as disjoint whatever "
           "its end (accumulate on a reversed view)"),

    Mutant("L12", LOOPS,
           "npy_intp block = bytes ? BCAST_BYTES / bytes : 16;",
           "npy_intp block = bytes ? BCAST_BYTES / ts_itemsize(g->kind[0]) : 16;",
           "block length from input 0's item size alone: the buffers outgrow BCAST_BYTES "
           "(528 KiB of stack for i1, c16, c16), past a small thread stack (first listed as "
           "equivalent, a test showed it is not)"),

    # ---- the gufunc body (src/gufunc/loops.c) ----
    Mutant("G01", GLOOPS,
           "LLVMConstInt(g->i64, (unsigned long long)ts_itemsize(g->kernel->args[k].kind), 0), \"\");",
           "LLVMConstInt(g->i64, (unsigned long long)ts_itemsize(g->kernel->args[0].kind), 0), \"\");",
           "contig check of argument k against argument 0's item size: an f4 view of step 8 "
           "next to an f8 argument 0 takes the unit-stride kernel"),
    Mutant("G02", GLOOPS,
           "g->stride[k][j] = load_at(g, g->i64, steps, core++, name);",
           "g->stride[k][j] = load_at(g, g->i64, steps, core + j, name);",
           "core strides indexed without advancing past earlier arguments: every argument "
           "gets the first one's strides"),
    Mutant("G03", GLOOPS,
           "out[n++] = g->size[L->dim[k][j]];",
           "out[n++] = g->size[j];",
           "core sizes by position in the argument instead of by dimension name"),
    Mutant("G04", GLOOPS,
           "LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, inext, g->stop, \"more\");",
           "LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLE, inext, g->stop, \"more\");",
           "outer loop runs one iteration past stop (writes past the output)"),
    Mutant("G05", GLOOPS,
           "LLVMValueRef off = LLVMBuildNSWMul(g->b, i, g->outer[k], \"\");",
           "LLVMValueRef off = LLVMBuildNSWMul(g->b, i, g->outer[0], \"\");",
           "outer step of argument 0 used for every argument (broadcast operands)"),

    Mutant("G06", GLOOPS,
           "LLVMValueRef one = LLVMBuildICmp(g->b, LLVMIntSLE, g->size[L->dim[k][c - 1]],",
           "LLVMValueRef one = LLVMBuildICmp(g->b, LLVMIntSLT, g->size[L->dim[k][c - 1]],",
           "a size-1 last core dimension no longer counts as contiguous: results are the "
           "same, but the contiguous-only body gives such calls back and the whole body is "
           "made and cached too (listed as equivalent at first; a cache test counts entries)"),

    # ---- the gufunc call (src/gufunc/call.c) ----
    Mutant("C01", GCALL,
           "if (gl->written[k] && steps[k] == 0) {",
           "if (k >= gl->layout.nin && steps[k] == 0) {",
           "split check looks at outputs only: a written input broadcast over the loop "
           "(outer step 0) is updated by several threads at once"),
    Mutant("C02", GCALL,
           "return core_stride(L, steps, k, c - 1) != gl->itemsize[k]",
           "return core_stride(L, steps, k, 0) != gl->itemsize[k]",
           "[::1] check looks at the first core dimension: a Fortran-ordered 2-d argument "
           "reaches the kernel uncopied"),
    Mutant("C03", GCALL,
           "for (int a = 0; a < k; a++) {",
           "for (int a = 0; a <= k; a++) {",
           "core stride index of argument k skips its own dimensions"),
    Mutant("C04", GCALL,
           "lsteps[at + j] = copy[k] ? bytes : steps[at + j];",
           "lsteps[at + j] = copy[k] ? gl->itemsize[k] : steps[at + j];",
           "copied [::1] buffer described with unit stride in every dimension"),
    Mutant("C05", GCALL,
           "copy_block(buf[k], local[k], size[k], stride[k], L->ndims[k], gl->itemsize[k], 0);",
           "copy_block(buf[k], local[k], size[k], stride[k], L->ndims[k], gl->itemsize[k], 1);",
           "write-back of a copied [::1] output goes the wrong way: the kernel's writes are lost"),
    Mutant("C06", GCALL,
           "for (npy_intp i = 0; status == 0 && i < dims[0]; i++) {",
           "for (npy_intp i = 0; status == 0 && i < dims[0] - 1; i++) {",
           "the copying path skips the last outer iteration"),

    Mutant("C07", GCALL,
           "if (copy[k] && gl->written[k]) {",
           "if (copy[k]) {",
           "a copied [::1] input the kernel only reads is copied back: a write into "
           "memory mapped read-only (np.memmap mode='r') crashes (first listed as "
           "equivalent, a test showed it is not)"),

    # ---- layouts (src/gufunc/layout.c) ----
    Mutant("Y01", LAYOUT,
           "if (L->ndims[arg] == TS_MAXDIMS) {",
           "if (L->ndims[arg] > TS_MAXDIMS) {",
           "core-dimension limit off by one (issue 34): 33 dimensions accepted, one written "
           "past the dimension array"),
    Mutant("Y02", LAYOUT,
           "if (ix == GU_MAXCORE) {",
           "if (ix > GU_MAXCORE) {",
           "distinct-name limit off by one: the 65th name is written past names[]"),
    Mutant("Y03", LAYOUT,
           "if (L->nargs == TS_MAXARGS) {",
           "if (L->nargs > TS_MAXARGS) {",
           "argument limit off by one: a 33rd argument is written past ndims[]"),
    Mutant("Y04", LAYOUT,
           "if (end != p->s + p->pos || d.size <= 0 || errno == ERANGE) {",
           "if (end != p->s + p->pos || d.size < 0 || errno == ERANGE) {",
           "a frozen size of 0 accepted"),
    Mutant("Y05", LAYOUT,
           "if ((size_t)size >= sizeof(out->text)) {",
           "if ((size_t)size > sizeof(out->text)) {",
           "layout length limit off by one: a layout of 1024 characters is cut to 1023"),
    Mutant("Y06", LAYOUT,
           "if (core == 0 && t->ndim == 1) {",
           "if (core == 0 && t->ndim >= 1) {",
           "a () argument declared as a 2-d array is accepted"),
    Mutant("Y07", LAYOUT,
           "L->optional[ix] = (unsigned char)d.optional;",
           "L->optional[ix] = 0;",
           "'?' dimensions are not recorded as optional"),

    # ---- iterator flags (src/gufunc/gufunc.c) ----
    Mutant("F01", GUFUNC_C,
           "uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY | NPY_ITER_ALIGNED",
           "uf->op_flags[k] = NPY_ITER_WRITEONLY | NPY_ITER_UPDATEIFCOPY | NPY_ITER_ALIGNED",
           "outputs write-only: a cast out='s copy starts uninitialised"),
    Mutant("F02", GUFUNC_C,
           "| NPY_ITER_ALLOCATE | NPY_ITER_NO_BROADCAST | NPY_ITER_NO_SUBTYPE",
           "| NPY_ITER_ALLOCATE | NPY_ITER_NO_SUBTYPE",
           "outputs may be broadcast: an out= of one row takes every row's result"),
    Mutant("F03", GUFUNC_C,
           "| NPY_ITER_ALLOCATE | NPY_ITER_NO_BROADCAST | NPY_ITER_NO_SUBTYPE;",
           "| NPY_ITER_ALLOCATE | NPY_ITER_NO_BROADCAST | NPY_ITER_NO_SUBTYPE"
           " | NPY_ITER_OVERLAP_ASSUME_ELEMENTWISE;",
           "outputs assumed elementwise: out= an input itself is not copied, and a kernel "
           "reading its row out of order reads what it wrote (the code had this until "
           "this round; its 'before' mutant was the flag dropped, which is the fix)"),
    Mutant("F04", GUFUNC_C,
           "uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY;",
           "uf->op_flags[k] = NPY_ITER_READWRITE;",
           "a written input that NumPy must cast gets no write-back copy"),
    Mutant("F05", GUFUNC_C,
           "uf->core_enabled = 1;",
           ";",
           "a written () input is run elementwise through buffers never copied back"),
    Mutant("F06", GUFUNC_C,
           "uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_UPDATEIFCOPY | NPY_ITER_ALIGNED",
           "uf->op_flags[k] = NPY_ITER_READWRITE | NPY_ITER_ALIGNED",
           "outputs without UPDATEIFCOPY: a cast or misaligned out= is refused or not written"),

    # ---- the pool (src/host/pool.c) ----
    Mutant("P01", POOL_C,
           "chunk = (chunk + grain - 1) / grain * grain;",
           "chunk = chunk / grain * grain;",
           "chunk rounded down to the grain: 0 for small calls (division by zero)"),
    Mutant("P02", POOL_C,
           "npy_intp stop = start + j->chunk < j->n ? start + j->chunk : j->n;",
           "npy_intp stop = start + j->chunk;",
           "the last chunk is not clamped to n: it runs past the end"),
    Mutant("P03", POOL_C,
           "p->nchunks = (uint32_t)((n + chunk - 1) / chunk);",
           "p->nchunks = (uint32_t)(n / chunk);",
           "chunk count rounded down: a partial last chunk is never run"),
    Mutant("P04", POOL_C,
           "(uint32_t)v >= j->nchunks) {",
           "(uint32_t)v > j->nchunks) {",
           "one chunk too many claimed: done overshoots nchunks (hang) or an empty chunk runs"),
    Mutant("P05", POOL_C,
           "if (p->raised == NULL || k < p->raised_chunk) {",
           "if (p->raised == NULL || k > p->raised_chunk) {",
           "the raise of the highest chunk wins instead of the first in order"),
    Mutant("P06", POOL_C,
           "atomic_fetch_or(&p->fpflags, raised);",
           "(void)raised;",
           "floating-point flags raised on workers are dropped"),
    Mutant("P07", POOL_C,
           "    p->raised = NULL;\n",
           "",
           "the raised site is not reset per job: a later clean job raises again"),

    # ---- the parallel target (src/targets/parallel.c) ----
    Mutant("R01", PAR,
           "args[k] = c->args[k] + start * c->steps[k];",
           "args[k] = c->args[k] + start * pl->itemsize[k];",
           "chunk start by item size instead of step: broadcast and strided operands read "
           "the wrong elements"),
    Mutant("R02", PAR,
           "npy_intp len = stop - start;",
           "npy_intp len = stop - start + 1;",
           "each chunk one element longer: the last runs past the end"),
    Mutant("R03", PAR,
           "*lo = last < 0 ? base + (uintptr_t)last : base;",
           "*lo = base;",
           "byte span of a negative step starts at its first element: overlap with a "
           "reversed output is missed"),

    # ---- promotion (src/compiler/cctype.c) ----
    Mutant("T01", CCTYPE,
           "if (ts_bits(s) > ts_bits(u)) {",
           "if (ts_bits(s) >= ts_bits(u)) {",
           "int8 with uint8 promotes to int8 instead of int16"),
    Mutant("T02", CCTYPE,
           "return ts_bits(u) < 64 ? int_kind(1, 2 * ts_bits(u)) : TS_FLOAT64;",
           "return ts_bits(u) < 64 ? int_kind(1, 2 * ts_bits(u)) : TS_INT64;",
           "int64 with uint64 promotes to int64 instead of float64"),
    Mutant("T03", CCTYPE,
           "int need = ts_bits(i) <= 16 ? 32 : 64;",
           "int need = ts_bits(i) <= 8 ? 32 : 64;",
           "int16 with float32 promotes to float64 instead of float32"),
    Mutant("T04", CCTYPE,
           "return part_bits <= 32 ? TS_COMPLEX64 : TS_COMPLEX128;",
           "return part_bits < 32 ? TS_COMPLEX64 : TS_COMPLEX128;",
           "complex64 with float32 promotes to complex128"),
    Mutant("T05", CCTYPE,
           "return k == TS_BOOL ? TS_INT64 : k;",
           "return k;",
           "bool with a Python int stays bool"),
    Mutant("T06", CCTYPE,
           "return ts_is_float(k) || ts_is_complex(k) ? k : TS_FLOAT64;",
           "return ts_is_float(k) ? k : TS_FLOAT64;",
           "complex64 with a Python float becomes float64 (imaginary part lost)"),
    Mutant("T07", CCTYPE,
           "return k == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;",
           "return TS_COMPLEX128;",
           "float32 with a Python complex promotes to complex128 instead of complex64"),
    Mutant("T08", CCTYPE,
           "return a->kind > b->kind ? a : b;",
           "return a->kind < b->kind ? a : b;",
           "two Python numbers promote to the narrower kind (int with float: int)"),
    Mutant("T09", CCTYPE,
           "return ts_bits(a) > ts_bits(b) ? a : b;",
           "return ts_bits(a) < ts_bits(b) ? a : b;",
           "two signed ints promote to the narrower"),

    # ---- arithmetic (src/compiler/arith.c) ----
    Mutant("A01", ARITH,
           "LLVMValueRef in_range = LLVMBuildICmp(E->b, LLVMIntULT, b, width, \"sh.ok\");",
           "LLVMValueRef in_range = LLVMBuildICmp(E->b, LLVMIntULE, b, width, \"sh.ok\");",
           "a shift by exactly the width is taken as in range (x86 masks the count)"),
    Mutant("A02", ARITH,
           "LLVMValueRef fill = LLVMBuildAShr(E->b, a, em_int_const(E, k, ts_bits(k) - 1), \"shr.fill\");",
           "LLVMValueRef fill = LLVMBuildAShr(E->b, a, em_int_const(E, k, ts_bits(k)), \"shr.fill\");",
           "over-wide >> of a negative value fills with poison instead of -1"),
    Mutant("A03", ARITH,
           "return LLVMBuildSelect(E->b, is_zero, zero, LLVMBuildSelect(E->b, is_m1, neg, q2, \"q.m1\"),",
           "return LLVMBuildSelect(E->b, is_zero, zero, q2,",
           "a // -1 is a instead of -a"),
    Mutant("A04", ARITH,
           "LLVMValueRef m1_pow = LLVMBuildSelect(bld, b_odd, m1, one, \"m1.pow\");",
           "LLVMValueRef m1_pow = LLVMBuildSelect(bld, b_odd, one, m1, \"m1.pow\");",
           "(-1) ** negative odd is 1 and ** negative even is -1"),
    Mutant("A05", ARITH,
           "LLVMBuildCondBr(E->b, em_quiet_fcmp(E, LLVMRealOGE, ac, ad, \"re.larger\"), bb_re, bb_im);",
           "LLVMBuildCondBr(E->b, em_quiet_fcmp(E, LLVMRealOGT, ac, ad, \"re.larger\"), bb_re, bb_im);",
           "complex division by 0j takes Smith's branch (0/0 ratio) instead of the zero case"),
    Mutant("A06", ARITH,
           "LLVMBuildICmp(E->b, LLVMIntSLT, LLVMBuildXor(E->b, r, b, \"r.xor.b\"), zero, \"sign.differs\");",
           "LLVMBuildICmp(E->b, LLVMIntSGT, LLVMBuildXor(E->b, r, b, \"r.xor.b\"), zero, \"sign.differs\");",
           "integer floor division/modulo adjust on the wrong sign"),

    # ---- the lazy ufunc's loop choice (src/vectorize/dufunc.c) ----
    Mutant("D01", DUFUNC,
           "if (nfixed_in == 0 && fixed_out != NULL) {",
           "if (fixed_out != NULL) {",
           "signature= fixing inputs and output: the inputs are compiled in the output's type"),
    Mutant("D02", DUFUNC,
           "if ((dt = own = PyArray_CommonDType(common, dt)) == NULL) {",
           "if ((dt = own = (PyArray_DTypeMeta *)Py_NewRef(common)) == NULL) {",
           "a Python scalar takes the arrays' common DType without its own kind (int array "
           "+ 1.5 compiled as int64)"),
    Mutant("D03", DUFUNC,
           "return dt == &PyArray_PyLongDType    ? TS_INT64",
           "return dt == &PyArray_PyLongDType    ? TS_INT32",
           "a lone Python int compiles as int32"),
    Mutant("D04", DUFUNC,
           "while (k < nargs && t[k] == context->descriptors[k]->type_num) {",
           "while (k < nargs - 1 && t[k] == context->descriptors[k]->type_num) {",
           "get_loop matches the inputs only: loops that differ in the output type are mixed up"),
    Mutant("D05", DUFUNC,
           ".flags = st->reorderable ? NPY_METH_IS_REORDERABLE : 0,",
           ".flags = 0,",
           "loops with an identity not reorderable: reduce over several axes refused"),
    Mutant("D06", DUFUNC,
           "{st->reorderable && st->nin == 2 && st->nout == 1 ? NPY_METH_get_reduction_initial : 0,",
           "{0,",
           "no reduction initial: an empty reduce does not give the identity"),

    # ---- the cache key (numbavec/cache.py) ----
    Mutant("K01", CACHE,
           "{toolkit}target={target}\\noptions",
           "{toolkit}options",
           "target left out of the key: cpu and parallel share entries"),
    Mutant("K02", CACHE,
           "data = f\"{text}signature={signature}\\n\"",
           "data = f\"{text}\\n\"",
           "signature left out of the key: every signature loads the first one's code"),
    Mutant("K04", CAPTURE,
           "    if closure is not None and name in code.co_freevars:",
           "    if False:",
           "closure cells not looked up: the key reads a global of the same name (or none)"),
    Mutant("K05", CAPTURE,
           "return \"jit {\\n\" + _describe_captured(entry[1], seen) + \"\\n}\"",
           "return f\"jit {entry[1].qualname}\"",
           "a device function keyed by name only: editing it loads stale code"),
    Mutant("K06", CACHE,
           "f\"core={core.st_size}-{core.st_mtime_ns}\\n\"",
           "f\"core={core.st_size}\\n\"",
           "the module's mtime left out: a rebuild of the same size loads stale code"),
    Mutant("K07", CAPTURE,
           "return f\"{kind} {entry[1]} {{{attrs}}}\"",
           "return f\"{kind} {entry[1]}\"",
           "what is read through a module or an object (ns.a, np.pi, cfg.scale) left out of the "
           "key: editing it loads stale code"),

    # ---- cuda ufunc call protocol (src/targets/cuda/ufunc/cucall.c) ----
    Mutant("U01", CUCALL,
           "merge = st[k][d] == p->strides[k][m - 1] * p->shape[m - 1];",
           "merge = st[k][d] == p->strides[k][m - 1];",
           "plan merges dimensions whose strides are merely equal"),
    Mutant("U02", CUCALL,
           "ext < ((Py_ssize_t)1 << 31) && (Py_ssize_t)itemsize[k] * p->n < ((Py_ssize_t)1 << 31);",
           "ext <= ((Py_ssize_t)1 << 31) && (Py_ssize_t)itemsize[k] * p->n <= ((Py_ssize_t)1 << 31);",
           "32-bit index plan taken for an extent of exactly 2^31 bytes"),
    Mutant("U03", CUCALL,
           "int narrow = p->n + (Py_ssize_t)p->grid * p->block < ((Py_ssize_t)1 << 31);",
           "int narrow = p->n < ((Py_ssize_t)1 << 31);",
           "32-bit indices without room for the grid-stride loop's last step past n"),
    Mutant("U04", CUCALL,
           "Py_ssize_t warps = (p->n + 31) / 32 * 32;",
           "Py_ssize_t warps = p->n / 32 * 32;",
           "a small call's block rounded down to whole warps"),
    Mutant("U05", CUCALL,
           "return blocks < 1 ? 1 : blocks > cap ? cap : blocks;",
           "return blocks < 1 ? 1 : blocks;",
           "grid not capped per SM"),
    Mutant("U06", CUCALL,
           "s = od >= 0 && o->shape[od] != 1 ? o->strides[od] : 0;",
           "s = od >= 0 ? o->strides[od] : 0;",
           "a size-1 dimension broadcast with its own stride instead of 0"),
    Mutant("U07", CUCALL,
           "if (ilo >= ohi || olo >= ihi) {",
           "if (ilo > ohi || olo > ihi) {",
           "an out= that ends where an input starts counts as overlapping (written through a "
           "temporary)"),
    Mutant("U08", CUCALL,
           "int castable = ret && PyArray_CanCastTypeTo(ret, o->dtype, NPY_SAME_KIND_CASTING);",
           "int castable = ret && PyArray_CanCastTypeTo(ret, o->dtype, NPY_UNSAFE_CASTING);",
           "out= of another kind accepted (float result into int)"),
    Mutant("U09", CUCALL,
           "for (int k = 0; k < c->call.nin + c->have_out; k++) {",
           "for (int k = 0; k < c->call.nin; k++) {",
           "a device out= of a dtype with no device cast is not refused"),
    Mutant("U10", CUCALL,
           "PUSH(d < p->ndim ? p->strides[k][d] : 0);",
           "PUSH(d < p->ndim ? p->strides[k][d] : 1);",
           "unused strided dimensions get stride 1 (launch parameters)", None, None, True),
    Mutant("U11", CUCALL,
           "pm->ptrs[np++] = (void *)&ops[k].words[1];",
           "pm->ptrs[np++] = (void *)&ops[k].words[0];",
           "a scalar input's second word (complex imaginary part) passed as the first",
           None, None, True),
    Mutant("U12", CUCALL,
           "        for (int k = 0; k <= nin; k++) {\n            for (int d = 0; d < dims; d++) {",
           "        for (int k = 0; k < nin; k++) {\n            for (int d = 0; d < dims; d++) {",
           "the output's strides are not passed to the strided kernel", None, None, True),

    # ---- cuda gufunc call (src/targets/cuda/ufunc/cugucall.c) ----
    Mutant("V01", CUGU,
           "Py_ssize_t size = op->shape[op->nd - nc + j];",
           "Py_ssize_t size = op->shape[j];",
           "core sizes bound from the leading dimensions instead of the trailing ones"),
    Mutant("V02", CUGU,
           "} else if (got != 1 && got != have) {",
           "} else if (got != have) {",
           "a loop dimension of 1 does not broadcast against a larger one"),
    Mutant("V03", CUGU,
           "ok = ts_is_float(k) || ts_is_complex(k);",
           "ok = ts_is_float(k);",
           "a Python float does not reach a complex signature"),
    Mutant("V04", CUGU,
           "if (n > L->nargs) {",
           "if (n >= L->nargs) {",
           "axes= with an entry for every operand refused"),
    Mutant("V05", CUGU,
           "if (a < 0 || a >= nd || used[a]) {",
           "if (a < 0 || a > nd || used[a]) {",
           "axes= entry equal to the operand's rank accepted (reads past its shape)"),
    Mutant("V06", CUGU,
           "same = in->shape[d] == w->shape[d] && in->strides[d] == w->strides[d];",
           "same = in->shape[d] == w->shape[d];",
           "out= the input reversed counts as the same elements: read in place while written",
           None, None, True),
    Mutant("V07", CUGU,
           "ok = op->what != CU_OP_PYSCALAR && operand_kind(op) == sig->args[k].kind;",
           "ok = operand_kind(op) == sig->args[k].kind;",
           "a Python scalar picks a loop by its default kind before safe casts are tried"),

    # ---- cuda launch (src/targets/cuda/driver/launch.c) ----
    Mutant("W01", LAUNCH,
           "p->d = PyFloat_AsDouble(arg);",
           "p->i = (long long)PyFloat_AsDouble(arg);",
           "a float launch argument packed as an integer", None, None, True),
    Mutant("W02", LAUNCH,
           "if (n < 3 || n - 3 > MAX_PARAMS) {",
           "if (n < 3 || n - 3 > MAX_PARAMS + 1) {",
           "one launch parameter more than the array holds accepted", None, None, True),
    Mutant("K03", CAPTURE,
           "return f\"ndarray {value.dtype.str} {value.shape} {digest}\"",
           "return f\"ndarray {value.dtype.str} {value.shape}\"",
           "a global array's values left out of the key: a lookup table edited between "
           "runs loads the code compiled with the old table (global arrays are read-only "
           "constants since issue 36)"),
]

EQUIVALENT = [
    Mutant("D07", DUFUNC,
           "PyArray_DTypeMeta *dt = k >= st->nin && signature[k] ? signature[k] : kind_dtypes[all[k]];",
           "PyArray_DTypeMeta *dt = kind_dtypes[all[k]];",
           "the promoter returns the loop's output DType instead of a fixed one: they differ "
           "only when signature= fixes inputs and an output the kernel does not return, "
           "which NumPy refuses either way (no such loop); run in issue 34's first round"),
    Mutant("E01", LOOPS,
           "bit = LLVMBuildShl(g->b, bit, LLVMConstInt(LLVMInt32TypeInContext(g->ctx), k, 0), \"\");",
           "bit = LLVMBuildShl(g->b, bit, LLVMConstInt(LLVMInt32TypeInContext(g->ctx), 0, 0), \"\");",
           "the step-0 mask is only compared with 0 (bcast or not); which input is step 0 is "
           "read from its step again per operand"),
    Mutant("E04", GCALL,
           "work *= dims[1 + ix] > 1 ? (double)dims[1 + ix] : 1.0;",
           "work *= (double)dims[1 + ix];",
           "the cost estimate only decides whether a call is split"),
    Mutant("E05", POOL_C,
           "if (chunk >= n) {\n        return -1; /* one chunk: nothing to share */",
           "if (chunk > n) {\n        return -1; /* one chunk: nothing to share */",
           "a single chunk of n then runs as a job: same elements, same order"),
    Mutant("E06", PAR,
           "if (lo < ohi && olo < hi) {",
           "if (lo < ohi && olo <= hi) {",
           "adjacent spans counted as overlapping: the call stays serial, same result"),
    Mutant("E07", ARITH,
           "return LLVMBuildSelect(E->b, special, zero, r2, \"mod\");",
           "return LLVMBuildSelect(E->b, is_zero, zero, r2, \"mod\");",
           "a % -1: with b.safe = 1 the remainder and its adjustment are 0 already"),
    Mutant("E08", LAYOUT,
           "if (a->size > 0 || b->size > 0) {",
           "if (a->size > 0 && b->size > 0) {",
           "a frozen size against a name: their texts differ anyway (a name never starts "
           "with a digit)"),
    Mutant("E10", PAR,
           "if (p < 2 || n < 2 * GRAIN || !parallel_safe(pl, args, steps, n)) {",
           "if (p < 2 || n < GRAIN || !parallel_safe(pl, args, steps, n)) {",
           "small calls may be split: the chunks compute the same elements"),
]
