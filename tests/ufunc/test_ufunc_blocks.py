"""The ufunc inner loop's block path and the parallel pool's chunks, with
operands of different item sizes.

loops.c runs a call whose inputs are contiguous or of step 0 (a scalar, a
1-element operand) block by block: each step-0 input is replicated into a
stack buffer, and the contiguous loop runs over `block` elements at a time,
every other operand advanced by block x its own item size.  The block is
16384 bytes over the inputs' item sizes together, rounded down to a
multiple of 16 (block_length below), so only calls several blocks long, with
item sizes that differ, show an operand advanced by another's size.  The
parallel target cuts the same calls into chunks (multiples of 16 elements)
for the pool, each of which runs the block path on its own.

Every result is compared with NumPy computing the same expression on the
same dtypes (NEP 50: the literal 3 takes each operand's type), bit for bit.
"""
import numpy as np
import pytest

from numbavec import _core, vectorize

BCAST_BYTES = 16384


def block_length(in_dtypes):
    """Elements per block of loops.c's bcast path for these input dtypes."""
    size = sum(np.dtype(d).itemsize for d in in_dtypes)
    block = BCAST_BYTES // size
    return 16 if block < 16 else block & ~15


# Several blocks of the longest block of any signature here (two one-byte
# inputs would make 8192), and not a multiple of any of them.
N = 3 * 8192 + 37


def k2(a, b):
    return a * 3 + b


def k3(a, b, c):
    return a * 3 + b * c


def halve_add(a, b):
    return a * 0.5 + b


def expected2(a, b):
    return np.asarray(a * 3 + b)


def expected3(a, b, c):
    return np.asarray(a * 3 + b * c)


# (signature, input dtypes, output dtype): every order of narrow and wide
SIGS2 = [
    ("f8(f4,f8)", ("f4", "f8"), "f8"),
    ("f8(f8,f4)", ("f8", "f4"), "f8"),
    ("i8(i1,i8)", ("i1", "i8"), "i8"),
    ("i1(i8,i1)", ("i8", "i1"), "i1"),
    ("c16(i1,c16)", ("i1", "c16"), "c16"),
    ("c16(c16,i1)", ("c16", "i1"), "c16"),
    ("f4(f8,f8)", ("f8", "f8"), "f4"),
]
SIGS3 = [
    ("c16(i1,f4,c16)", ("i1", "f4", "c16"), "c16"),
    ("f8(f8,i1,f4)", ("f8", "i1", "f4"), "f8"),
]

_made = {}


def ufunc(sig, target):
    key = (sig, target)
    if key not in _made:
        kernel = k3 if sig.count(",") == 2 else k2
        _made[key] = vectorize([sig], target=target)(kernel)
    return _made[key]


def values(dtype, n, shift=0):
    """Position-dependent values, small enough that no integer result wraps."""
    dtype = np.dtype(dtype)
    i = np.arange(n) + shift
    if dtype.kind in "iu":
        return ((i * 7) % 23 - 11).astype(dtype)
    re = (i % 1009) * 0.25 - 100.0
    if dtype.kind == "c":
        return (re + 1j * ((i * 13) % 997 - 400.0)).astype(dtype)
    return re.astype(dtype)


def one(dtype, form, shift):
    """A step-0 operand: a NumPy scalar, a 0-d array or a 1-element array."""
    v = values(dtype, 1, shift + 5)
    if form == "scalar":
        return v[0]
    if form == "0d":
        return v.reshape(())
    return v


def operands(ins, n, step0, form):
    return [one(d, form, k) if k == step0 else values(d, n, 17 * k) for k, d in enumerate(ins)]


def reference(args, out_dtype, n):
    want = expected3(*args) if len(args) == 3 else expected2(*args)
    return np.broadcast_to(want.astype(out_dtype), (n,))


def assert_bits(got, want):
    np.testing.assert_array_equal(got, want, strict=True)


@pytest.fixture
def target_forced(target):
    """The target, with the parallel one splitting every call it can."""
    old = _core._pool_force_parallel(True)
    try:
        yield target
    finally:
        _core._pool_force_parallel(old)


@pytest.mark.parametrize("form", ["scalar", "0d", "1elem"])
@pytest.mark.parametrize("sig,ins,out", SIGS2 + SIGS3, ids=[s[0] for s in SIGS2 + SIGS3])
def test_step0_operand_in_each_position(target_forced, sig, ins, out, form):
    """A scalar or 1-element operand in each position, many blocks long:
    each other operand is advanced by its own item size."""
    f = ufunc(sig, target_forced)
    for step0 in range(len(ins)):
        args = operands(ins, N, step0, form)
        assert_bits(f(*args), reference(args, out, N))


@pytest.mark.parametrize("sig,ins,out", SIGS2 + SIGS3, ids=[s[0] for s in SIGS2 + SIGS3])
def test_all_arrays_and_all_but_one_step0(target_forced, sig, ins, out):
    f = ufunc(sig, target_forced)
    args = operands(ins, N, None, None)
    assert_bits(f(*args), reference(args, out, N))
    # every input of step 0 but the last: the buffers of several inputs at once
    args = [one(d, "1elem", k) for k, d in enumerate(ins[:-1])] + [values(ins[-1], N)]
    assert_bits(f(*args), reference(args, out, N))


@pytest.mark.parametrize("sig,ins,out", SIGS2 + SIGS3, ids=[s[0] for s in SIGS2 + SIGS3])
def test_whole_blocks_write_nothing_past_the_output(target, sig, ins, out):
    """n an exact multiple of the block: the block loop stops there (one
    more 0-element block would still write one element past the end)."""
    f = ufunc(sig, target)
    block = block_length(ins)
    for n in (block, 4 * block, 4 * block + 1, 4 * block - 1):
        args = operands(ins, n, 0, "scalar")
        buf = np.full(n + 8, 99, out)
        f(*args, out=buf[:n])
        assert_bits(buf[:n], reference(args, out, n))
        assert_bits(buf[n:], np.full(8, 99, out))


@pytest.mark.parametrize("sig,ins,out", SIGS2 + SIGS3, ids=[s[0] for s in SIGS2 + SIGS3])
def test_strided_out(target_forced, sig, ins, out):
    """out= with steps of 2, of input 0's item size, and negative: the
    general loop, with a step-0 input or without."""
    f = ufunc(sig, target_forced)
    size0, osize = np.dtype(ins[0]).itemsize, np.dtype(out).itemsize
    for every in sorted({2, max(size0 // osize, 2), -1}):
        for step0 in (None, 0, len(ins) - 1):
            args = operands(ins, N, step0, "scalar")
            buf = np.full(abs(every) * N, 99, out)
            view = buf[::every] if every > 0 else buf[::-1]
            assert f(*args, out=view) is view
            assert_bits(view, reference(args, out, N))
            if every > 1:
                rest = np.delete(buf, np.arange(0, every * N, every))
                assert (rest == 99).all()


@pytest.mark.parametrize("sig,ins,out", SIGS2 + SIGS3, ids=[s[0] for s in SIGS2 + SIGS3])
def test_strided_inputs_of_another_item_size(target_forced, sig, ins, out):
    """An input viewed with the step of input 0's item size (f4 [::2] next to
    an f8 input 0) is strided, not contiguous."""
    f = ufunc(sig, target_forced)
    size0 = np.dtype(ins[0]).itemsize
    for k in range(1, len(ins)):
        size = np.dtype(ins[k]).itemsize
        every = max(size0 // size, 2)
        for step0 in (None, 0):
            if step0 == k:
                continue
            args = operands(ins, N, step0, "scalar")
            args[k] = values(ins[k], every * N, 3)[::every]
            assert_bits(f(*args), reference(args, out, N))


@pytest.mark.parametrize("sig,ins,out", SIGS2, ids=[s[0] for s in SIGS2])
def test_cast_out_takes_numpy_buffers(target_forced, sig, ins, out):
    """An out= of another dtype: NumPy casts through buffers of 8192
    elements, each a call of the block path."""
    f = ufunc(sig, target_forced)
    other = "c16" if np.dtype(out).kind == "c" else "f8" if out != "f8" else "c16"
    args = operands(ins, N, 1, "scalar")
    got = np.empty(N, other)
    f(*args, out=got, casting="unsafe")
    assert_bits(got, reference(args, out, N).astype(other))


def test_reduce_with_mixed_item_sizes(target_forced):
    """reduce through a 'df->d' loop (accumulator f8, items f4), over a
    broadcast operand (inner step 0) and a plain one."""
    f = ufunc("f8(f8,f4)", target_forced)
    rows = values("f4", 7, 1)
    m = np.broadcast_to(rows[:, None], (7, N))
    want = np.full(N, np.float64(rows[0]))
    for r in rows[1:]:
        want = want * 3 + r
    assert_bits(f.reduce(m, axis=0), want)
    col = values("f4", N, 2)
    want = np.float64(col[0])
    for v in col[1:40]:
        want = want * 3 + v
    assert f.reduce(col[:40]) == want
    grid = np.stack([values("f4", N, s) for s in range(5)])
    want = grid[0].astype("f8")
    for r in grid[1:]:
        want = want * 3 + r
    assert_bits(f.reduce(grid, axis=0), want)


def test_accumulate_with_step0_rows(target_forced):
    """accumulate along axis 0 of rows that are each one broadcast value:
    every inner call has a step-0 input and reads the previous row."""
    f = vectorize(["f8(f8,f8)", "f4(f4,f4)"], target=target_forced)(halve_add)
    for dtype in ("f8", "f4"):
        rows = values(dtype, 6, 4)
        m = np.broadcast_to(rows[:, None], (6, N))
        want = np.empty((6, N), dtype)
        want[0] = rows[0]
        for i in range(1, 6):
            want[i] = want[i - 1] * 0.5 + rows[i]
        assert_bits(f.accumulate(m, axis=0), want)
        # and along the one axis: a loop-carried dependence, in order
        x = values(dtype, 50, 8)
        want = np.empty(50, dtype)
        want[0] = x[0]
        for i in range(1, 50):
            want[i] = want[i - 1] * 0.5 + x[i]
        assert_bits(f.accumulate(x), want)


def test_accumulate_into_a_reversed_out(target_forced):
    """out= a reversed view: accumulate's shifted input overlaps the output
    with negative steps, which keeps the loop sequential (never split into
    chunks) and in order."""
    f = vectorize(["f8(f8,f8)"], target=target_forced)(halve_add)
    n = 1_000_003
    x = values("f8", n, 2)
    want, acc = [], 0.0
    for v in x.tolist():
        acc = acc * 0.5 + v if want else v
        want.append(acc)
    buf = np.full(n, np.nan)
    jobs = _core._pool_stats()["jobs"]
    f.accumulate(x, out=buf[::-1])
    assert _core._pool_stats()["jobs"] == jobs
    assert_bits(buf[::-1], np.array(want))


@pytest.mark.parametrize("n", [33, 1000, 4099, N])
def test_parallel_chunks_stop_at_the_end(forced, n):
    """Each chunk of the pool covers [start, stop) of the call, the last one
    clamped to n: nothing is written past the output."""
    f = ufunc("f8(f4,f8)", "parallel")
    jobs = _core._pool_stats()["jobs"]
    for step0 in (None, 0, 1):
        args = operands(("f4", "f8"), n, step0, "scalar")
        buf = np.full(n + 40, 99.0)
        f(*args, out=buf[:n])
        assert_bits(buf[:n], reference(args, "f8", n))
        assert_bits(buf[n:], np.full(40, 99.0))
    if _core.get_num_threads() > 1:
        assert _core._pool_stats()["jobs"] > jobs      # really split


SMALL_STACK = '''
import threading
import numpy as np
from numbavec import vectorize

def k3(a, b, c):
    return a * 3 + b * c

f = vectorize(["c16(i1,c16,c16)", "f8(i1,f8,f8)"], target={target!r})(k3)
cases = [(np.int8(2), np.arange(100_000).astype("c16"), np.complex128(1 + 2j)),
         (np.int8(2), np.arange(100_000).astype("f8"), np.float64(1.5))]
wants = [f(*args) for args in cases]       # code made here, in the main thread
got = []
threading.stack_size(192 * 1024)
t = threading.Thread(target=lambda: got.extend(f(*args) for args in cases))
t.start()
t.join()
assert all((g == w).all() for g, w in zip(got, wants)) and len(got) == 2
print("ok")
'''


def test_block_buffers_fit_a_small_thread_stack(target):
    """The step-0 inputs' block buffers take 16 KiB of stack in all (block
    length from the inputs' item sizes together), so a call runs in a
    thread with a 192 KiB stack; one byte-sized input 0 must not make the
    blocks as long as 16384 elements of every input."""
    from conftest import run_python

    proc = run_python(SMALL_STACK.format(target=target), as_file=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
