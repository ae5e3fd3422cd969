"""Dynamic gufuncs: @guvectorize(layout) with no signatures, on every target.

A loop is compiled inside NumPy's dispatch for each new combination of input
dtypes.  Outputs the call gives no type take the type of what the kernel
stores into them (Numba raises "Too few arguments" there); out= arrays,
dtype= and signature= give them one, as Numba's out arguments do, while the
inputs keep their own types.  Results are checked against py_func run by
the interpreter on the same arrays.
"""
import threading

import numpy as np
import pytest

from conftest import kernel_from_source
from numbavec import TypingError, guvectorize


@pytest.fixture(autouse=True)
def force_parallel(forced):
    """Every test here: the parallel target splits even small calls."""


def add_const(a, c, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + c


def total(a, res):
    s = 0
    for i in range(a.shape[0]):
        s += a[i]
    res[0] = s


def test_layout_alone_makes_a_dynamic_gufunc(target):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    assert isinstance(gu, np.ufunc)
    assert gu.signature == '(n),()->(n)'
    assert (gu.nin, gu.nout) == (2, 1)
    assert gu.types == []                   # nothing compiled before the first call
    assert gu.py_func is add_const


@pytest.mark.parametrize("dtype, expected_types", [
    (np.float64, ['dd->d']), (np.float32, ['ff->f']), (np.int32, ['ii->i']),
    (np.int8, ['bb->b']), (np.complex128, ['DD->D']), (np.uint16, ['HH->H']),
])
def test_output_type_follows_the_stores(target, dtype, expected_types):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    a = (np.arange(12) % 7).astype(dtype).reshape(3, 4)
    c = dtype(3)
    got = gu(a, c)
    expected = np.empty_like(a)
    for row in range(3):
        add_const(a[row], c, expected[row])
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert gu.types == expected_types


def test_one_loop_per_input_combination(target):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    x = np.arange(6.0)
    gu(x, 1.0)
    gu(x[::2], 2.0)                        # same dtypes: no new loop
    gu(x.reshape(2, 3), np.array([1.0, 2.0])[:, None])
    assert gu.types == ['dd->d']
    gu(x.astype(np.float32), np.float32(1))
    assert gu.types == ['dd->d', 'ff->f']


def test_weak_python_scalars_keep_the_array_type(target):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    got = gu(np.arange(4, dtype=np.float32), 1.5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.arange(4, dtype=np.float32) + np.float32(1.5))


def rotate(a, k, out):
    n = a.shape[0]
    for i in range(n):
        out[i] = a[(i + k) % n]


def by_rows(py, a, *scalars, dtype):
    """py run by the interpreter on each row of a."""
    expected = np.zeros(a.shape, dtype=dtype)
    for row in range(a.shape[0]):
        py(a[row], *scalars, expected[row])
    return expected


def test_a_python_int_stays_int64_among_float_inputs(target):
    """Each input keeps its own type: a Python int used as an index beside
    float arrays is int64, not float64 (then `a[(i + k) % n]` was a
    TypingError, "arrays are indexed by integers")."""
    gu = guvectorize('(n),()->(n)', target=target)(rotate)
    a = np.arange(10.0).reshape(2, 5) ** 2
    got = gu(a, 2)
    np.testing.assert_array_equal(got, by_rows(rotate, a, 2, dtype=np.float64))
    assert gu.types == ['dl->d']
    added = guvectorize('(n),()->(n)', target=target)(add_const)
    got = added(a.astype(np.float32), 3)
    assert added.types == ['fl->d']     # float32 + int64: float64, as in the interpreter
    np.testing.assert_array_equal(got, by_rows(add_const, a.astype(np.float32), np.int64(3),
                                               dtype=np.float64))


@pytest.mark.parametrize("dtype, scalar, expected_types", [
    (np.int8, 2, ['bb->b']),            # within its family a Python scalar is weak (NEP 50)
    (np.float32, 1.5, ['ff->f']),
    (np.int32, 1.5, ['id->d']),         # a float beside integers: float64 either way
    (np.float32, 2j, ['fF->F']),
    (np.complex64, 2.0, ['Fd->D']),     # a float beside complex: float64, its own
    (np.float64, True, ['d?->d']),      # a bool keeps its own type too
])
def test_python_scalars_are_promoted_within_their_family_only(target, dtype, scalar,
                                                              expected_types):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    a = np.arange(6).astype(dtype).reshape(2, 3)
    got = gu(a, scalar)
    assert gu.types == expected_types
    typed = np.dtype(expected_types[0][1]).type(scalar)   # as the loop took it
    assert got.dtype == np.dtype(expected_types[0][-1])
    np.testing.assert_array_equal(got, by_rows(add_const, a, typed, dtype=got.dtype))


HALF_SUM = '''
def k(inp, out):
    tmp = 0.
    for i in range(inp.shape[0]):
        tmp += inp[i] * 0.5
    out[()] = tmp
'''


def scalar_rows(py, a, dtype):
    expected = np.zeros(a.shape[0], dtype=dtype)
    for row in range(a.shape[0]):
        py(a[row], expected[row:row + 1].reshape(()))
    return expected


@pytest.mark.parametrize("form", ["positional", "keyword", "tuple"])
def test_out_types_the_output(target, form):
    """Numba types a dynamic gufunc's output by the out= array: a float
    stored into an int32 out= is truncated there, not refused by NumPy's
    same_kind cast of a float64 loop's result.  The loop with the inferred
    output is compiled beside it, so that a later call without out= (which
    NumPy would match to any loop of its inputs) still gets float64."""
    py = kernel_from_source(HALF_SUM)
    gu = guvectorize('(n)->()', target=target)(py)
    inp = np.arange(30, dtype=np.int32).reshape(10, 3)
    out = np.zeros(10, dtype=np.int32)
    res = {"positional": lambda: gu(inp, out), "keyword": lambda: gu(inp, out=out),
           "tuple": lambda: gu(inp, out=(out,))}[form]()
    assert res is out
    np.testing.assert_array_equal(out, scalar_rows(py, inp, np.int32))
    assert gu.types == ['i->d', 'i->i']
    got = gu(inp)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, scalar_rows(py, inp, np.float64))
    gu(inp, out=out)                               # NumPy's cache keeps the two apart
    np.testing.assert_array_equal(out, scalar_rows(py, inp, np.int32))


def test_out_after_a_call_without_out(target):
    py = kernel_from_source(HALF_SUM)
    gu = guvectorize('(n)->()', target=target)(py)
    inp = np.arange(12, dtype=np.int16).reshape(4, 3)
    np.testing.assert_array_equal(gu(inp), scalar_rows(py, inp, np.float64))
    out = np.zeros(4, dtype=np.uint8)
    gu(inp, out)
    np.testing.assert_array_equal(out, scalar_rows(py, inp, np.uint8))
    assert gu.types == ['h->d', 'h->B']
    np.testing.assert_array_equal(gu(inp), scalar_rows(py, inp, np.float64))


def test_out_keeps_the_inputs_types(target):
    """An int32 out= beside float64 inputs and a Python int: the inputs keep
    their own types (NumPy's dtype= rule would cast them to int32)."""
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    a = np.linspace(0, 3, 8).reshape(2, 4)
    out = np.zeros((2, 4), dtype=np.int32)
    gu(a, 2, out=out)
    np.testing.assert_array_equal(out, by_rows(add_const, a, 2, dtype=np.int32))
    assert gu.types == ['dl->d', 'dl->i']
    gu(a, np.float32(0.25), out=out)
    np.testing.assert_array_equal(out, by_rows(add_const, a, np.float32(0.25), dtype=np.int32))
    assert gu.types[2:] == ['df->d', 'df->i']


def test_out_of_several_outputs(target):
    src = '''
def k(a, lo, hi):
    lo[0] = a[0] * 1.5
    hi[0] = a[0] * 1.5
    for i in range(a.shape[0]):
        lo[0] = min(lo[0], a[i] * 1.5)
        hi[0] = max(hi[0], a[i] * 1.5)
'''
    py = kernel_from_source(src)
    gu = guvectorize('(n)->(),()', target=target)(py)
    a = np.array([[3, 1, 2], [9, 7, 8]], dtype=np.int64)
    lo, hi = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.float32)
    res = gu(a, out=(lo, None))                    # hi as inferred: float64
    assert res[0] is lo and res[1].dtype == np.float64
    np.testing.assert_array_equal(lo, [1, 10])
    np.testing.assert_array_equal(res[1], [4.5, 13.5])
    gu(a, lo, hi)
    np.testing.assert_array_equal(hi, [4.5, 13.5])
    assert gu.types == ['l->dd', 'l->ld', 'l->lf']


def test_out_with_a_list_input_is_cast_into(target):
    """An input NumPy converts (a list) has a DType numbavec cannot know
    before NumPy's dispatch: NumPy's rule then, the out= array cast into."""
    gu = guvectorize('(n)->()', target=target)(kernel_from_source(HALF_SUM))
    out = np.zeros(1)
    gu([1, 2, 3], out=out)
    np.testing.assert_array_equal(out, [3.0])
    assert gu.types == ['l->d']


def test_scalar_output_reduction(target):
    gu = guvectorize('(n)->()', target=target)(total)
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(gu(a), a.sum(axis=-1))
    assert gu.types == ['d->d']
    i16 = np.arange(12, dtype=np.int16).reshape(3, 4)
    got = gu(i16)
    # the interpreter: 0 + np.int16 stays int16 (NEP 50), so the result is int16
    ref = np.empty(3, dtype=np.int16)
    for row in range(3):
        cell = np.empty(1, dtype=np.int16)
        total(i16[row], cell)
        ref[row] = cell[0]
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, ref)


def test_promotion_of_several_stores(target):
    src = '''
def k(a, out):
    out[0] = 0
    for i in range(a.shape[0]):
        out[0] += a[i] * 0.5
'''
    gu = guvectorize('(n)->()', target=target)(kernel_from_source(src))
    got = gu(np.arange(10, dtype=np.int32).reshape(2, 5))
    assert got.dtype == np.float64          # int stored, then int32 * 0.5 (float64)
    np.testing.assert_array_equal(got, [5.0, 17.5])


def test_several_outputs_each_inferred(target):
    src = '''
def k(a, lo, hi, count):
    lo[0] = a[0]
    hi[0] = a[0]
    n = 0
    for i in range(a.shape[0]):
        lo[0] = min(lo[0], a[i])
        hi[0] = max(hi[0], a[i])
        n += 1
    count[0] = n
'''
    gu = guvectorize('(n)->(),(),()', target=target)(kernel_from_source(src))
    a = np.array([[3, 1, 2], [9, 7, 8]], dtype=np.uint8)
    lo, hi, count = gu(a)
    assert (lo.dtype, hi.dtype, count.dtype) == (np.uint8, np.uint8, np.int64)
    np.testing.assert_array_equal(lo, [1, 7])
    np.testing.assert_array_equal(hi, [3, 9])
    np.testing.assert_array_equal(count, [3, 3])


def test_dtype_gives_the_output_type(target):
    """dtype= types the outputs only, as out= does (one meaning for NumPy's
    dispatch cache, which keys both the same): the inputs keep theirs."""
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    x = np.arange(5.0)
    got = gu(x, 1.0, dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, by_rows(add_const, x[None], 1.0, dtype=np.float32)[0])
    assert gu(x, 1.0).dtype == np.float64
    assert gu.types == ['dd->d', 'dd->f']


def test_dtype_then_no_dtype_with_array_inputs(target):
    """All inputs arrays: NumPy's dispatch would pick the dtype= loop for a
    later call that fixes no output (it matches any loop of its inputs)."""
    src = """
def k(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * b[i] + 0.5
"""
    py = kernel_from_source(src)
    gu = guvectorize('(n),(n)->(n)', target=target)(py)
    a = np.arange(8, dtype=np.int32).reshape(2, 4)

    def expected(dtype):
        e = np.zeros(a.shape, dtype=dtype)
        for row in range(a.shape[0]):
            py(a[row], a[row], e[row])
        return e
    got = gu(a, a, dtype=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected(np.int32))
    got = gu(a, a)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected(np.float64))
    assert gu.types == ['ii->d', 'ii->i']


WHOLE_STORES = [  # (body of k(a, out) for '(n)->(n)', the inferred dtype for int32 a)
    ("out[:] = a * 2", np.int32),
    ("out[...] = a * 0.5", np.float64),
    ("out[:] = 0\n    out[1:] = a[:-1] + a[1:]", np.int32),        # 0 is weak (NEP 50)
    ("out[::2] = a[::2]\n    out[1::2] = np.float32(1.5)", np.float64),
    ("out[:] = np.sqrt(a)\n    out[0] = 7", np.float64),
    ("out[a > 2] = 1\n    out[a <= 2] = a[a <= 2]", np.int32),
    ("out[:] = a[::-1] > 3", np.bool_),
]


@pytest.mark.parametrize("body, dtype", WHOLE_STORES)
@pytest.mark.slow
def test_output_type_follows_whole_array_and_slice_stores(target, body, dtype):
    """A dynamic output's type is the promotion of what is stored into it,
    whole arrays and slices as elements (issue 34: 'cannot store an array
    into one element')."""
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    a = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], dtype=np.int32)
    expected = np.zeros(a.shape, dtype=dtype)
    for row in range(2):
        py(a[row], expected[row])
    got = guvectorize('(n)->(n)', target=target)(py)(a)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    out = np.full(a.shape, -1.0)                     # out= given: cast into, as NumPy does
    gu = guvectorize('(n)->(n)', target=target)(py)
    assert gu(a, out=out) is out
    np.testing.assert_array_equal(out, expected.astype(np.float64))


def test_out_of_another_dtype_types_the_loop_keeping_its_values(target):
    src = '''
def k(a, out):
    for i in range(0, a.shape[0], 2):
        out[i] = a[i] * 2
'''
    gu = guvectorize('(n)->(n)', target=target)(kernel_from_source(src))
    a = np.arange(6.0)
    out = np.full(6, -1, dtype=np.float32)
    res = gu(a, out=out)
    assert res is out
    np.testing.assert_array_equal(out, [0, -1, 4, -1, 8, -1])
    assert gu.types == ['d->d', 'd->f']     # the inferred loop too: see below


def test_out_given_first_then_inferred_share_one_loop(target):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    x = np.arange(4.0)
    out = np.zeros(4)
    gu(x, 1.0, out=out)
    np.testing.assert_array_equal(out, x + 1)
    np.testing.assert_array_equal(gu(x, 2.0), x + 2)
    np.testing.assert_array_equal(gu(x, 3.0, dtype=np.float64), x + 3)
    assert gu.types == ['dd->d']


def test_no_output_layout_writes_inputs(target):
    src = '''
def k(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] * 3
'''
    gu = guvectorize('(n),(n)', target=target)(kernel_from_source(src))
    a = np.zeros((2, 3), dtype=np.int64)
    gu(a, np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3) * 3)
    assert gu.types == ['ll->'] or gu.types == ['qq->']


def test_a_written_scalar_input_is_a_one_element_view(target):
    """A () input the kernel writes (a[0] = ...) was passed as a scalar on
    the first compilation, which then failed: whether it is written is
    known only from the kernel."""
    src = '''
def k(a, b):
    a[0] = b * 2
'''
    k = kernel_from_source(src)
    gu = guvectorize('(),()', target=target)(k)
    a = np.zeros(3)
    gu(a, np.arange(3.0))
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0])
    gu = guvectorize('(),()', target=target)(k)
    b = np.zeros(2, dtype=np.int32)
    gu(b, np.array([5, 6], dtype=np.int32))
    np.testing.assert_array_equal(b, [10, 12])


def test_an_output_never_stored_is_a_typing_error(target):
    src = '''
def k(a, out):
    for i in range(a.shape[0]):
        out[i] = out[i]
'''
    gu = guvectorize('(n)->(n)', target=target)(kernel_from_source(src))
    with pytest.raises(TypingError, match="type of 'out' cannot be inferred"):
        gu(np.arange(3.0))
    assert gu.types == []
    # with a type from the call it compiles
    assert gu(np.arange(3.0), dtype=np.float64).shape == (3,)
    assert gu.types == ['d->d']


def test_storing_a_tuple_is_a_typing_error(target):
    src = '''
def k(a, out):
    out[0] = (a[0], a[0])
'''
    gu = guvectorize('(n)->()', target=target)(kernel_from_source(src))
    with pytest.raises(TypingError, match="cannot store"):
        gu(np.arange(3.0))


def test_typing_errors_reach_the_caller_and_register_nothing(target):
    src = '''
def k(a, out):
    out[0] = a.nope
'''
    gu = guvectorize('(n)->()', target=target)(kernel_from_source(src))
    for _ in range(2):
        with pytest.raises(TypingError):
            gu(np.arange(3.0))
    assert gu.types == []


def test_index_error_from_a_dynamic_loop(target):
    src = '''
def k(a, out):
    out[0] = a[a.shape[0]]
'''
    gu = guvectorize('(n)->()', target=target)(kernel_from_source(src))
    with pytest.raises(IndexError):
        gu(np.arange(3.0))


def test_matches_the_eager_gufunc(target):
    eager = guvectorize(['void(f8[:], f8, f8[:])'], '(n),()->(n)', target=target)(add_const)
    lazy = guvectorize('(n),()->(n)', target=target)(add_const)
    rng = np.random.default_rng(3)
    a, c = rng.random((4, 5, 6)), rng.random((4, 1))
    np.testing.assert_array_equal(lazy(a, c), eager(a, c))


def test_empty_signature_list_and_layout_keyword(target):
    gu1 = guvectorize([], '(n)->()', target=target)(total)
    gu2 = guvectorize(layout='(n)->()', target=target)(total)
    for gu in (gu1, gu2):
        np.testing.assert_array_equal(gu(np.ones((2, 3))), [3.0, 3.0])
        assert gu.types == ['d->d']


def test_threads_compiling_the_same_types_at_once(target):
    gu = guvectorize('(n),()->(n)', target=target)(add_const)
    x = np.arange(100.0)
    results, errors = [], []
    barrier = threading.Barrier(8)

    def call(dtype):
        try:
            barrier.wait()
            results.append(gu(x.astype(dtype), dtype(1)))
        except Exception as e:     # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(dt,))
               for dt in [np.float64, np.float32] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(gu.types) == ['dd->d', 'ff->f']
    for r in results:
        np.testing.assert_array_equal(r, np.arange(100) + 1)


def test_no_attribute_can_free_or_corrupt_a_gufunc_s_code(target):
    """As for ufuncs (test_lazy): the loops own their code, eager or dynamic."""
    import gc

    lazy = guvectorize('(n),()->(n)', target=target)(add_const)
    eager = guvectorize(['void(f8[:], f8, f8[:])'], '(n),()->(n)', target=target)(add_const)
    for gu in (lazy, eager):
        gu(np.arange(3.0), 1.0)
        for name in list(vars(gu)):
            delattr(gu, name)
        for name in ("_numbavec_lazy", "_numbavec_code", "py_func", "inspect_llvm"):
            setattr(gu, name, 42)
        gc.collect()
        np.testing.assert_array_equal(gu(np.arange(3.0), 2.0), [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(lazy(np.arange(3, dtype=np.int16), np.int16(1)), [1, 2, 3])


_REENTRANT = []


def test_compiling_a_dynamic_gufunc_may_call_it_with_other_types(target):
    """A kernel whose compilation (a global's property) calls the same
    gufunc with other types: the inner call compiles its own loop first."""
    src = """
def k(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * SCALE.value
"""
    class CallsBack:
        gu = None
        calls = 0

        @property
        def value(self):
            if self.calls == 0 and self.gu is not None:
                self.calls += 1
                _REENTRANT.append(self.gu(np.arange(3, dtype=np.int32)))
            return 2

    scale = CallsBack()
    k = kernel_from_source(src)
    k.__globals__["SCALE"] = scale
    gu = guvectorize('(n)->(n)', target=target)(k)
    scale.gu = gu
    _REENTRANT.clear()
    np.testing.assert_array_equal(gu(np.arange(3.0)), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(_REENTRANT[0], [0, 2, 4])
    assert sorted(gu.types) == ['d->d', 'i->i']


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_signature_string_is_an_error_not_a_dynamic_gufunc(target, empty):
    """'' was falsy and so made a lazy ufunc or a dynamic gufunc silently
    (the signature fuzzer found it); only [] and () mean no signatures."""
    from numbavec import vectorize

    with pytest.raises(ValueError, match="empty signature"):
        guvectorize(empty, '(n)->()', target=target)(total)
    with pytest.raises(ValueError, match="empty signature"):
        vectorize(empty, target=target)(lambda x: x)
