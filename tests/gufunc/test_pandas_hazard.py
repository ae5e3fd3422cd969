"""pandas calls every ufunc on a DataFrame block by block, as if it were
elementwise (DataFrame.__array_ufunc__, DataFrame.apply): a gufunc's core
dimensions would then run down the columns and pandas would rebuild a
broken frame.  A numbavec gufunc with core dimensions refuses such a call
with a TypeError naming the spellings that work (issue 38)."""
import numpy as np
import pytest

from numbavec import guvectorize, vectorize

pd = pytest.importorskip("pandas")


def row_total(x, res):
    acc = 0.0
    for v in x:
        acc += v
    res[0] = acc


def make(kind, target):
    if kind == "eager":
        return guvectorize(["void(f8[:], f8[:])"], "(n)->()", target=target)(row_total)
    return guvectorize("(n)->()", target=target)(row_total)


@pytest.fixture
def frame():
    return pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0], "c": [0.5, 0.25, 0.0]})


def expected(df):
    out = np.zeros(len(df))
    for i, row in enumerate(df.to_numpy()):
        r = np.zeros(1)
        row_total(row, r)
        out[i] = r[0]
    return out


@pytest.mark.parametrize("kind", ["eager", "dynamic"])
def test_a_gufunc_called_by_pandas_on_blocks_raises(kind, target, frame):
    f = make(kind, target)
    for call in (lambda: f(frame), lambda: frame.apply(f, axis=1),
                 lambda: frame.apply(f, axis=1, raw=True)):
        with pytest.raises(TypeError, match=r"called by pandas on a DataFrame's blocks.*"
                                            r"df\.to_numpy\(\)"):
            call()


@pytest.mark.parametrize("kind", ["eager", "dynamic"])
def test_the_spellings_that_work(kind, target, frame):
    f = make(kind, target)
    by_array = pd.Series(f(frame.to_numpy()), index=frame.index)
    by_rows = frame.apply(lambda row: f(row.to_numpy()), axis=1)
    np.testing.assert_array_equal(by_array.to_numpy(), expected(frame))
    np.testing.assert_array_equal(by_rows.to_numpy(), expected(frame))
    # a Series is one array: its core dimension is the Series, as NumPy's
    assert f(frame["b"]) == 60.0


def test_elementwise_ufuncs_on_frames_are_untouched(target, frame):
    u = vectorize(["f8(f8)"], target=target)(lambda x: 2 * x + 1)
    got = u(frame)
    assert isinstance(got, pd.DataFrame)
    np.testing.assert_array_equal(got.to_numpy(), 2 * frame.to_numpy() + 1)
    # a gufunc without core dimensions is elementwise: pandas' way is right
    halve = guvectorize(["void(f8, f8[:])"], "()->()", target=target)(halve_kernel)
    got = halve(frame)
    assert isinstance(got, pd.DataFrame)
    np.testing.assert_array_equal(got.to_numpy(), frame.to_numpy() / 2)


def halve_kernel(x, out):
    out[0] = x / 2
