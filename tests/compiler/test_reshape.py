"""a.reshape(), np.reshape(), a.ravel(), np.ravel() in kernels: NumPy's views
where NumPy gives views, copies where it copies.

Which one a kernel gets decides whether writing through the result reaches
the array, so each kernel here writes through it and is compared with its
py_func run by the interpreter on the same views: the values read, and the
array after the write.
"""
import itertools

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize

TABLE = np.arange(12.0)


def reads(a, out):
    """Every spelling, read."""
    n = a.size
    out[0] = a.ravel()[n - 1] + np.ravel(a)[0]
    out[1] = a.reshape(-1)[1] + a.reshape(n)[2] + a.reshape((n,))[3]
    out[2] = a.reshape(2, -1)[1, 0] + np.reshape(a, (-1, 2))[0, 1]
    out[3] = a.reshape(a.shape[1], a.shape[0])[0, 1] + a.reshape(1, n, 1)[0, n - 1, 0]
    out[4] = a.ravel(order="C").sum() + a.reshape((2, 2, -1), order="C").sum()


@pytest.mark.parametrize("view", ["whole", "rows_stepped", "columns_stepped", "transposed"])
def test_every_spelling_reads_numpys_values(target, view):
    gu = guvectorize(["void(float64[:,:], float64[:])"], "(n,m)->(k)", target=target)(reads)
    base = np.random.default_rng(1).standard_normal((3, 8, 12))
    x = {"whole": base[:, :4, :6], "rows_stepped": base[:, ::2, :6],
         "columns_stepped": base[:, :4, ::2], "transposed": base[:, :6, :4].transpose(0, 2, 1)}[view]
    got = gu(x, np.zeros((3, 5)))
    want = np.zeros((3, 5))
    for k in range(3):
        reads(x[k], want[k])
    np.testing.assert_allclose(got, want, rtol=1e-14)  # .sum(): NumPy's is pairwise


def mark_through(a, shape, out):
    """out gets a's values, then -1 written through out reshaped to `shape`
    (the 3-d shape read from the second argument), at its last element."""
    out[...] = a
    r = out.reshape(shape.shape[0], shape.shape[1], shape.shape[2])
    r[shape.shape[0] - 1, shape.shape[1] - 1, shape.shape[2] - 1] = -1.0


def ravel_through(a, out):
    out[...] = a
    r = out.ravel()
    r[r.shape[0] - 1] = -1.0


def factorizations(n):
    return [(p, q, n // (p * q)) for p in range(1, n + 1) for q in range(1, n + 1)
            if n % (p * q) == 0]


def views_of(base):
    """Views of a 3-d base: steps, transposes, unit and empty dimensions."""
    yield base
    yield base[:, ::2]
    yield base[::2, :, 1:]
    yield base.transpose(1, 0, 2)
    yield base[:, :, ::3]
    yield base[:, :1, :]
    yield base[:1, ::-1, :1]
    yield base[:, ::2, ::2].transpose(2, 1, 0)


@pytest.mark.parametrize("case", range(8))
def test_writes_through_reach_the_array_exactly_when_numpys_do(case):
    """Every factorization of each view's size into three dimensions: the
    kernel's output array is that view (out= of the view), so whether the
    write through the reshape reaches it is what NumPy decides."""
    base_shape = (4, 6, 6)
    size = list(views_of(np.zeros(base_shape)))[case].size
    for shape in factorizations(size):
        base = np.zeros(base_shape)
        view = list(views_of(base))[case]
        a = np.arange(1.0, view.size + 1).reshape(view.shape)
        gu = guvectorize(["void(float64[:,:,:], int8[:,:,:], float64[:,:,:])"],
                         "(p,q,r),(s,t,u)->(p,q,r)")(mark_through)
        expected_base = np.zeros(base_shape)
        mark_through(a, np.zeros(shape, np.int8), list(views_of(expected_base))[case])
        gu(a, np.zeros(shape, np.int8), out=view)
        np.testing.assert_array_equal(base, expected_base, err_msg=f"view {case} to {shape}")


@pytest.mark.parametrize("case", range(8))
def test_ravel_copies_what_is_not_c_contiguous(case):
    base = np.zeros((4, 6, 6))
    view = list(views_of(base))[case]
    gu = guvectorize(["void(float64[:,:,:], float64[:,:,:])"], "(p,q,r)->(p,q,r)")(ravel_through)
    expected_base = np.zeros((4, 6, 6))
    a = np.arange(1.0, view.size + 1).reshape(view.shape)
    ravel_through(a, list(views_of(expected_base))[case])
    gu(a, out=view)
    np.testing.assert_array_equal(base, expected_base)


def test_a_stepped_row_ravels_to_a_copy_and_reshapes_to_a_view(target):
    """NumPy: a[::2].ravel() copies (not contiguous), a[::2].reshape(-1) is
    a view (one dimension groups with itself)."""
    @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
    def both(a, out):
        out[:] = a
        out[::2].ravel()[0] = -1.0
        out[::2].reshape(-1)[1] = -2.0

    a = np.arange(12.0).reshape(2, 6)
    want = a.copy()
    want[:, 2] = -2.0
    np.testing.assert_array_equal(both(a), want)


@pytest.mark.parametrize("dims", [(5, -1), (-1, -1), (7, 1), (0, -1)])
def test_a_shape_of_another_size_is_numpys_value_error(target, dims):
    @guvectorize(["void(float64[:], int64, int64, float64[:])"], "(n),(),()->()",
                 target=target)
    def first(a, p, q, out):
        out[0] = a.reshape(p, q)[0, 0]

    a = np.arange(6.0)
    with pytest.raises(ValueError) as numpy_error:
        a.reshape(*dims)
    with pytest.raises(ValueError, match="cannot reshape an array into a shape of another "
                                         "size, or with more than one unknown"):
        first(a, *dims)
    assert "reshape" in str(numpy_error.value) or "unknown" in str(numpy_error.value)


def test_any_negative_dimension_is_the_unknown_one(target):
    @guvectorize(["void(float64[:], int64, float64[:,:])"], "(n),()->(p,q)", target=target)
    def grid(a, p, out):
        out[:, :] = a.reshape(p, -3)

    a = np.arange(12.0)
    np.testing.assert_array_equal(grid(a, 3, np.zeros((3, 4))), a.reshape(3, -3))


def test_reshape_refusals_name_themselves():
    def fortran(a, out):
        out[0] = a.reshape(-1, order="F")[0]

    def of_a_scalar(a, out):
        out[0] = a[0].reshape(1)[0]

    def into_a_global(a, out):
        t = TABLE.reshape(3, 4)
        t[0, 0] = a[0]
        out[0] = t[1, 1]

    for k, message in [(fortran, r"\.reshape\(order=\) takes 'C'"),
                       (of_a_scalar, r"\.reshape\(\) of float64: it takes an array"),
                       (into_a_global, "cannot write into a global NumPy array")]:
        with pytest.raises(numbavec.TypingError, match=message):
            guvectorize(["void(float64[:], float64[:])"], "(n)->()")(k)


def test_a_global_table_reshaped_is_read(target):
    @guvectorize(["void(int64, float64[:])"], "()->()", target=target)
    def cell(i, out):
        out[0] = TABLE.reshape(3, 4)[i % 3, i % 4] + TABLE.ravel()[i]

    i = np.arange(12)
    np.testing.assert_array_equal(cell(i), TABLE.reshape(3, 4)[i % 3, i % 4] + TABLE[i])


@pytest.mark.parametrize("dtype", ["int8", "complex128", "bool"])
def test_every_kind_reshapes(target, dtype):
    @guvectorize("(n,m)->(m,n)", target=target)
    def swapped_shape(a, out):
        out[:, :] = a.reshape(a.shape[1], a.shape[0])

    a = (np.arange(2 * 3 * 4) % 5).astype(dtype).reshape(2, 3, 4)
    got = swapped_shape(a, np.zeros((2, 4, 3), dtype))
    for k in range(2):
        np.testing.assert_array_equal(got[k], a[k].reshape(4, 3), strict=True)


def test_nocopy_grouping_matches_numpy_on_random_views():
    """NumPy's no-copy rule on random strided views and random targets:
    for each, whether the kernel's write through the reshape reaches the
    view, and the values it reads."""
    rng = np.random.default_rng(7)
    gu = guvectorize(["void(float64[:,:,:], int8[:,:,:], float64[:,:,:])"],
                     "(p,q,r),(s,t,u)->(p,q,r)")(mark_through)
    for _ in range(200):
        base_shape = tuple(rng.integers(1, 7, 3))
        base = np.zeros(base_shape)
        steps = [slice(None, None, int(s)) for s in rng.integers(1, 3, 3)]
        view = base[tuple(steps)].transpose(rng.permutation(3))
        shape = factorizations(view.size)[rng.integers(len(factorizations(view.size)))]
        expected = np.zeros(base_shape)
        a = rng.standard_normal(view.shape)
        mark_through(a, np.zeros(shape, np.int8), _same_view(expected, base, view))
        gu(a, np.zeros(shape, np.int8), out=view)
        np.testing.assert_array_equal(base, expected)


def _same_view(other, base, view):
    """The view of `other` that `view` is of `base` (same offset, shape, strides)."""
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return np.lib.stride_tricks.as_strided(other.reshape(-1)[offset // 8:], view.shape,
                                           view.strides)
