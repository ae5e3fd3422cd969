"""Language rules Numba accepts (issue 36), on kernels written as Numba users write them.

- A name may be bound again to a value of another type, array arguments
  included: each binding is its own variable, as in Numba's SSA form
  (``obs = obs[0]``, ``v = v.sum(axis=0)``, ``x = 1`` then ``x = 2.5``).
  Where bindings meet (after an if/else, around a loop) they are one
  variable, typed by NumPy's promotion as before.
- A for loop's variable may be read after its loop: it holds its last value;
  when the loop ran no iteration, the read raises UnboundLocalError with
  Python's message (Numba reads garbage there).

Every kernel is checked against ``py_func`` (results, and the exception type
and message where it raises), on cpu and parallel.
"""
import re

import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source
from numbavec import guvectorize, vectorize


def outcome(call):
    """('ok', value) or (exception type, message) of call()."""
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 - compared with the kernel's
        return type(e), str(e)


def check_vectorize(ufunc, py_func, *columns):
    """ufunc(*columns) against py_func on each row of NumPy scalars: the same
    values, or the same exception (the first row that raises)."""
    dtypes = [np.dtype(c) for c in ufunc.types[0].split("->")[0]]
    arrays = [np.array(c, dtype=d) for c, d in zip(columns, dtypes)]
    rows = [outcome(lambda row=row: py_func(*row)) for row in zip(*arrays)]
    got = outcome(lambda: ufunc(*arrays))
    raised = [r for r in rows if r[0] != "ok"]
    if raised:
        assert got == raised[0]
        return
    assert got[0] == "ok", got
    expected = np.array([r[1] for r in rows])
    np.testing.assert_array_equal(got[1], expected.astype(got[1].dtype))
    assert got[1].dtype == expected.dtype


def core(a, i):
    """Outer row i of a as a kernel sees it: a 1-element view for a '()'
    operand (a has the outer dimension alone), else the row."""
    return a[i:i + 1] if a.ndim == 1 else a[i]


def check_gufunc(gufunc, py_func, ins, outs):
    """gufunc(*ins, out=outs) against py_func over the outer loop (one outer
    dimension): the same outputs, or the same exception."""
    want = [o.copy() for o in outs]
    got = [o.copy() for o in outs]
    expected = outcome(lambda: [py_func(*[core(a, i) for a in ins], *[core(o, i) for o in want])
                                for i in range(len(ins[0]))])
    result = outcome(lambda: gufunc(*ins, out=tuple(got)))
    if expected[0] != "ok":
        assert result == expected
        return
    assert result[0] == "ok", result
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- rebinding

def crps_ensemble(obs, fc, out):
    """The CRPS of an ensemble, as scoringrules writes it: a '()' argument
    declared float64[:] and rebound to its element."""
    obs = obs[0]
    m = fc.shape[-1]
    if np.isnan(obs):
        out[0] = np.nan
        return
    e_1 = 0.0
    e_2 = 0.0
    for i in range(m):
        e_1 += abs(fc[i] - obs)
        for j in range(m):
            e_2 += abs(fc[i] - fc[j])
    out[0] = e_1 / m - 0.5 * e_2 / (m ** 2)


def test_an_array_argument_rebound_to_its_element(target):
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(),(n)->()",
                     target=target)(crps_ensemble)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=6)
    obs[2] = np.nan
    fc = rng.normal(size=(6, 7))
    check_gufunc(gu, crps_ensemble, [obs, fc], [np.zeros(6)])


@pytest.mark.parametrize("sigs", [None, ["void(float64, float64[:], float64[:])"]],
                         ids=["dynamic", "scalar_signature"])
def test_a_scalar_core_argument_read_as_its_element(target, sigs):
    """Numba passes a '()' argument as an array of one element, so kernels
    read obs[0] (scoringrules' `ow = ow[0]`); where numbavec passes the value
    (no signatures, or a scalar type in them) obs[0] is that value.  The
    interpreter runs the kernel on arrays of one element, as Numba does."""
    args = (sigs, "(),(n)->()") if sigs else ("(),(n)->()",)
    gu = guvectorize(*args, target=target)(crps_ensemble)
    rng = np.random.default_rng(1)
    obs = rng.normal(size=5)
    obs[3] = np.nan
    fc = rng.normal(size=(5, 6))
    want = np.zeros(5)
    for i in range(5):
        crps_ensemble(obs[i:i + 1], fc[i], want[i:i + 1])
    np.testing.assert_array_equal(gu(obs, fc), want)


def column_means(v, out):
    """The sum along an axis, bound to the array's own name."""
    m = v.shape[0]
    v = v.sum(axis=0)
    for j in range(v.shape[0]):
        out[j] = v[j] / m


def test_a_sum_along_an_axis_rebinds_the_name(target):
    gu = guvectorize(["void(float64[:, :], float64[:])", "void(int32[:, :], float64[:])"],
                     "(m,n)->(n)", target=target)(column_means)
    v = np.arange(24.0).reshape(2, 3, 4)
    check_gufunc(gu, column_means, [v], [np.zeros((2, 4))])
    vi = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 11
    check_gufunc(gu, column_means, [vi], [np.zeros((2, 4))])


def last_row_scaled(a, scale, out):
    """An argument array rebound to one of its rows, then to a scaled copy."""
    a = a[a.shape[0] - 1]
    a = a * scale[0]
    for j in range(a.shape[0]):
        out[j] = a[j]


def test_an_argument_rebound_to_a_row(target):
    gu = guvectorize(["void(float32[:, :], float64[:], float64[:])"], "(m,n),()->(n)",
                     target=target)(last_row_scaled)
    a = np.arange(30, dtype=np.float32).reshape(2, 3, 5)
    check_gufunc(gu, last_row_scaled, [a, np.array([0.5, 3.0])], [np.zeros((2, 5))])


def bucket_fraction(n, nbuckets):
    """A name holding an int (its bitwise or needs one), then a float."""
    b = n % nbuckets
    b = b | 1
    b = b / nbuckets
    return b


def test_a_scalar_rebound_from_int_to_float(target):
    u = vectorize(["float64(int64, int64)", "float64(int32, int32)"],
                  target=target)(bucket_fraction)
    n = [0, 5, 17, 1000, -7, 123456]
    check_vectorize(u, bucket_fraction, n, [8, 8, 3, 7, 4, 1000])
    lazy = vectorize(target=target)(bucket_fraction)
    np.testing.assert_array_equal(lazy(np.array(n), 8),
                                  [bucket_fraction(np.int64(k), 8) for k in n])


def running_total(x, k):
    """x, an argument, bound again in straight-line code and in a loop: the
    bindings in and after the loop meet (one promoted variable), the first
    does not."""
    x = x // 2
    total = 0
    for i in range(k):
        total = total + x
        x = x * 0.5
    return total + x


def test_bindings_that_meet_are_promoted(target):
    u = vectorize(["float64(int64, int64)"], target=target)(running_total)
    check_vectorize(u, running_total, [7, 100, -9, 0], [0, 3, 2, 5])


def halve_if_positive(x):
    if x > 0:
        x = x / 2
    return x


def test_an_argument_meeting_its_rebinding_promotes(target):
    """The argument and x / 2 meet at the return: Numba unifies int64 and
    float64 there (1.5 for 3); numbavec kept the argument's int64 (1)."""
    u = vectorize(["float64(int64)"], target=target)(halve_if_positive)
    check_vectorize(u, halve_if_positive, [3, -1, 0, 9])


def sign_label(x):
    s = 1
    if x < 0:
        s = -1
    else:
        s = 2.5
    return s


def test_branches_meet_as_one_promoted_variable(target):
    u = vectorize(["float64(float64)"], target=target)(sign_label)
    check_vectorize(u, sign_label, [-1.0, 3.0])


def shadowed_output(a, out):
    """The output's name bound to a new array: the writes go to that array,
    and the real output is not written (Python's and Numba's rule)."""
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = a[i] * 2


def reversed_output(a, out):
    """The output's name bound to a view of it: the writes reach it."""
    out = out[::-1]
    for i in range(a.shape[0]):
        out[i] = a[i] * 2


@pytest.mark.parametrize("kernel", [shadowed_output, reversed_output])
def test_an_output_argument_rebound(target, kernel):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(kernel)
    a = np.arange(8.0).reshape(2, 4)
    check_gufunc(gu, kernel, [a], [np.full((2, 4), 7.0)])


def swap_rows(a, b, out):
    """Two arguments swapped by a tuple assignment, then read."""
    a, b = b, a
    for j in range(a.shape[0]):
        out[j] = a[j] - b[j]


def test_arguments_swapped(target):
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->(n)",
                     target=target)(swap_rows)
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    check_gufunc(gu, swap_rows, [a, b], [np.zeros((2, 3))])


# ---------------------------------------------------------------- a loop's variable after it

def first_crossing(a, t, out):
    """The index where a running sum first passes t: the loop's variable,
    read after the loop (its length 0 raises UnboundLocalError)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
        if s > t[0]:
            break
    out[0] = i


def test_a_range_variable_after_its_loop(target):
    gu = guvectorize(["void(float64[:], float64[:], int64[:])"], "(n),()->()",
                     target=target)(first_crossing)
    a = np.arange(12.0).reshape(3, 4)
    check_gufunc(gu, first_crossing, [a, np.array([2.5, 100.0, -1.0])],
                 [np.zeros(3, dtype=np.int64)])
    check_gufunc(gu, first_crossing, [np.zeros((2, 0)), np.zeros(2)],
                 [np.zeros(2, dtype=np.int64)])


def last_below(n, limit):
    for i in range(n):
        if i * i > limit:
            break
    return i


def test_a_range_variable_after_its_loop_in_a_ufunc(target):
    u = vectorize(["int64(int64, int64)"], target=target)(last_below)
    check_vectorize(u, last_below, [5, 10, 1, 3], [100, 10, 0, 2])
    # the third row runs no iteration: UnboundLocalError, as py_func raises
    check_vectorize(u, last_below, [5, 10, 0, 3], [100, 10, 0, 2])
    with pytest.raises(UnboundLocalError, match="local variable 'i'"):
        u(np.array([4, 0]), 1)


def last_member(fct, t, out):
    """The ensemble member the loop over the array stopped at, as the
    forecast-scoring kernels read it after the loop."""
    for f in fct:
        if f > t[0]:
            break
    out[0] = f


def test_an_array_loop_variable_after_its_loop(target):
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),()->()",
                     target=target)(last_member)
    fct = np.array([[0.5, 2.0, 3.0], [0.1, 0.2, 0.3]])
    check_gufunc(gu, last_member, [fct, np.array([1.0, 1.0])], [np.zeros(2)])
    check_gufunc(gu, last_member, [np.zeros((2, 0)), np.zeros(2)], [np.zeros(2)])


def enumerate_last(a, out):
    """Both targets of an enumerate loop, and its else clause, after the loop."""
    for k, x in enumerate(a):
        if x < 0:
            break
    else:
        k = k + 100
    out[0] = k + x


def test_enumerate_targets_after_their_loop(target):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(enumerate_last)
    a = np.array([[1.0, -2.0, 3.0], [1.0, 2.0, 3.0]])
    check_gufunc(gu, enumerate_last, [a], [np.zeros(2)])
    check_gufunc(gu, enumerate_last, [np.zeros((2, 0))], [np.zeros(2)])


def bound_before_the_loop(n, c):
    """A binding before the loop on one path: the read is fine when either
    that binding or an iteration ran."""
    if c > 0:
        i = -5
    for i in range(n):
        pass
    return i


def test_a_binding_before_the_loop_counts(target):
    u = vectorize(["int64(int64, int64)"], target=target)(bound_before_the_loop)
    check_vectorize(u, bound_before_the_loop, [0, 3, 2], [1, 0, 1])
    check_vectorize(u, bound_before_the_loop, [0, 3, 0], [1, 0, 0])


def read_only_if_it_ran(n):
    """A conditional expression that reads the variable only where the loop
    ran raises nothing."""
    for i in range(n):
        pass
    return i * 10 if n > 0 else -1


def test_a_guarded_read_after_an_empty_loop(target):
    u = vectorize(["int64(int64)"], target=target)(read_only_if_it_ran)
    check_vectorize(u, read_only_if_it_ran, [0, 1, 4, -3])


def counted(n):
    for i in range(n):
        pass
    i += 1
    return i


def test_an_augmented_assignment_after_the_loop(target):
    u = vectorize(["int64(int64)"], target=target)(counted)
    check_vectorize(u, counted, [1, 4])
    check_vectorize(u, counted, [1, 0])


@numbavec.jit
def last_index(n):
    for i in range(n):
        pass
    return i


def sum_of_last_indices(n):
    """A helper whose loop variable is read after its loop, called in a loop:
    each call starts unbound (the last call's loop runs no iteration)."""
    s = 0
    for k in range(n, -1, -1):
        s += last_index(k)
    return s


def test_a_helpers_loop_variable_each_call(target):
    u = vectorize(["int64(int64)"], target=target)(sum_of_last_indices)
    with pytest.raises(UnboundLocalError):
        sum_of_last_indices(3)
    check_vectorize(u, sum_of_last_indices, [3, 1])
    with pytest.raises(UnboundLocalError):
        u(np.array([3]))


def test_the_message_is_pythons(target):
    u = vectorize(["int64(int64, int64)"], target=target)(last_below)
    with pytest.raises(UnboundLocalError) as got:
        u(np.array([0]), np.array([1]))
    with pytest.raises(UnboundLocalError) as want:
        last_below(0, 1)
    assert str(got.value) == str(want.value)


def last_positive(a, out):
    """A name the loop's body binds on every way out of an iteration (here
    its end and its break), read after the loop."""
    for i in range(a.shape[0]):
        v = a[i]
        if v > 0:
            break
    out[0] = v


def test_a_name_the_body_binds_after_the_loop(target):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(last_positive)
    a = np.array([[-1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]])
    check_gufunc(gu, last_positive, [a], [np.zeros(2)])
    check_gufunc(gu, last_positive, [np.zeros((2, 0))], [np.zeros(2)])


def nested_last(n):
    """The inner loop's variable after the outer loop: unbound when no
    outer iteration ran the inner loop (n is 0 or 1)."""
    for i in range(n):
        for j in range(i):
            pass
    return i * 100 + j


def test_an_inner_loops_variable_after_the_outer_loop(target):
    u = vectorize(["int64(int64)"], target=target)(nested_last)
    check_vectorize(u, nested_last, [2, 5, 3])
    check_vectorize(u, nested_last, [2, 1, 3])


def halvings(x):
    """while loops: a name bound by every iteration, read after."""
    while x > 1.0:
        steps = x
        x = x / 2
    return steps


def until_small(x):
    while True:
        y = x * 0.5
        if y < 1.0:
            break
        x = y
    return y


def test_names_a_while_loop_binds(target):
    u = vectorize(["float64(float64)"], target=target)(halvings)
    check_vectorize(u, halvings, [3.0, 100.0, 1.5])
    check_vectorize(u, halvings, [3.0, 0.5, 1.5])  # no iteration: UnboundLocalError
    w = vectorize(["float64(float64)"], target=target)(until_small)
    check_vectorize(w, until_small, [3.0, 100.0, 0.25])


def branch_only(x):
    if x > 0:
        y = 1.0
    return y


def test_a_name_bound_on_one_branch_raises_where_unbound(target):
    """Numba compiles it and reads garbage where the branch did not run; the
    interpreter raises UnboundLocalError there, and so does the kernel."""
    u = vectorize(["float64(float64)"], target=target)(branch_only)
    check_vectorize(u, branch_only, [2.0, 3.5])
    with pytest.raises(UnboundLocalError):
        u(np.array([2.0, -1.0]))


def ibs_diagonal(gt, out):
    """sgkit's allele matching: p_ibs bound in a branch of a loop, read after
    the loop under the same condition (always bound there)."""
    out[0] = 0.0
    for s0 in range(gt.shape[0]):
        for s1 in range(s0 + 1):
            num = 0
            denom = 0
            for i in range(gt.shape[1]):
                if gt[s0, i] >= 0 and gt[s1, i] >= 0:
                    denom += 1
                    if gt[s0, i] == gt[s1, i]:
                        num += 1
            if denom > 0:
                p_ibs = num / denom
                out[0] += 2 * p_ibs
        if denom > 0:
            out[0] -= p_ibs


def test_a_name_bound_in_a_loops_branch_read_after_it(target):
    gu = guvectorize(["void(int8[:, :], float64[:])"], "(n,p)->()", target=target)(ibs_diagonal)
    gt = np.random.default_rng(2).integers(-1, 3, (4, 5, 2)).astype(np.int8)
    gt[1, 3] = -1                                     # a sample with no call
    check_gufunc(gu, ibs_diagonal, [gt], [np.zeros(4)])


def ordered_span(lo, hi):
    """A parameter bound again to a tuple, indexed by constants (a
    parameter's subscripts were taken for array indexing)."""
    lo = (lo, hi) if lo <= hi else (hi, lo)
    return lo[1] - lo[0]


def pair_of_ends(a, out):
    a = (a[0], a[a.shape[0] - 1])
    out[0] = a[1] - a[0]


def test_a_parameter_rebound_to_a_tuple(target):
    u = vectorize(["float64(float64, float64)"], target=target)(ordered_span)
    check_vectorize(u, ordered_span, [1.0, 5.0, -2.0], [3.0, 2.0, -2.0])
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(pair_of_ends)
    check_gufunc(gu, pair_of_ends, [np.array([[1.0, 4.0, 9.0], [2.0, 0.0, -1.0]])],
                 [np.zeros(2)])


# ---------------------------------------------------------------- unpacking

def ends_of_sorted(a, idx, out):
    """numbagg's nanquantile: two elements picked by an index array, then
    unpacked into names."""
    s = np.sort(a)
    lo, hi = s[idx]
    out[0] = lo + (hi - lo) * 0.25


def test_a_1d_array_unpacks_into_its_elements(target):
    gu = guvectorize(["void(float64[:], int32[:], float64[:])"], "(n),(m)->()",
                     target=target)(ends_of_sorted)
    a = np.array([[3.0, 1.0, 2.0, 8.0], [0.5, -1.0, 4.0, 2.5]])
    idx = np.array([[0, 3], [1, 2]], dtype=np.int32)
    check_gufunc(gu, ends_of_sorted, [a, idx], [np.zeros(2)])


@pytest.mark.parametrize("n", [1, 3])
def test_unpacking_an_array_of_another_length_is_a_value_error(target, n):
    gu = guvectorize(["void(float64[:], int32[:], float64[:])"], "(n),(m)->()",
                     target=target)(ends_of_sorted)
    a, idx = np.arange(4.0), np.arange(n, dtype=np.int32)
    with pytest.raises(ValueError, match="values to unpack"):
        ends_of_sorted(a, idx, np.zeros(1))
    with pytest.raises(ValueError, match="values to unpack"):
        gu(a, idx)


@numbavec.jit
def _two_ends(a):
    return a + 1.0, a * 2.0


def items_as_targets(a, b, y, z):
    """neutralocean's and respy's `y[0], z[0] = helper(...)`: array items
    (and nested tuples of them) as targets, assigned left to right."""
    y[0], z[0] = _two_ends(a)
    i = 0
    z[i], i = z[i] + 5.0, 1  # z[0], indexed with i's old value
    (y[1], (z[1], w)), q = (b[0], (b[1], 3)), 4
    y[2] = w + q
    y[3], y[4] = b[4], b[3]
    y[3], y[4] = y[4], y[3]  # the right side is evaluated first: a swap
    z[2:4], z[4] = b[:2], i


def test_array_items_as_targets_of_a_tuple_assignment(target):
    gu = guvectorize(["void(float64, float64[:], float64[:], float64[:])"], "(),(n)->(n),(n)",
                     target=target)(items_as_targets)
    b = np.array([[7.0, 8.0, 9.0, 10.0, 11.0], [1.0, -2.0, 3.0, -4.0, 5.0]])
    y, z = gu(np.array([2.0, -1.0]), b)
    for k in range(2):
        want_y, want_z = np.zeros(5), np.zeros(5)
        items_as_targets(np.float64([2.0, -1.0][k]), b[k], want_y, want_z)
        np.testing.assert_array_equal(y[k], want_y)
        np.testing.assert_array_equal(z[k], want_z)


def membership(x, a, out):
    """xsdba's `if 0 in [n1, n2]:`: membership in a display of values."""
    n = a.shape[0]
    out[0] = 1.0 if 0 in [n, x.shape[0] - 2] else 0.0
    out[1] = 1.0 if x[0] in (1.5, a[0], np.inf) else 0.0
    out[2] = 1.0 if x[1] * 2 not in {4.0, -1.0} else 0.0
    out[3] = 1.0 if a[n - 1] + 1 in () else 0.0
    out[4] = 1.0 if -x[0] not in [n, 2.5] and x[1] in (x[0], x[1]) else 0.0


def test_membership_in_a_display_of_values(target):
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(m)->(k)",
                     target=target)(membership)
    x = np.array([[1.5, 2.0], [3.0, -0.5], [-2.5, 7.0]])
    a = np.array([[3.0, 0.0], [3.0, 1.0], [0.0, 9.0]])
    got = gu(x, a, out=np.zeros((3, 5)))
    for k in range(3):
        want = np.zeros(5)
        membership(x[k], a[k], want)
        np.testing.assert_array_equal(got[k], want)


def test_membership_of_a_computed_value_names_the_fix():
    with pytest.raises(numbavec.TypingError, match="assign the left operand to a name first"):
        @guvectorize(["void(float64[:], float64[:])"], "(n)->()")
        def k(x, out):
            out[0] = 1.0 if np.sum(x) in (1.0, 2.0) else 0.0


def test_a_kernels_default_values_are_ignored_and_prange_is_range(target):
    """SeqPro's `def k(seq, res=None)` and `for i in nb.prange(n)`: the
    ufunc passes every argument, so a default is never used (as in Numba),
    and numbavec.prange is range."""
    @guvectorize(["void(uint8[:], uint8[:])"], "(n)->(n)", target=target)
    def k(seq, res=None):
        for i in numbavec.prange(len(seq)):
            res[i] = seq[len(seq) - 1 - i]

    seq = np.arange(12, dtype=np.uint8).reshape(3, 4)
    np.testing.assert_array_equal(k(seq), seq[:, ::-1])
    assert numbavec.prange is range


def test_a_kernels_keyword_only_parameter_is_a_typing_error():
    with pytest.raises(numbavec.TypingError, match="keyword-only parameters are not supported"):
        @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")
        def k(x, *, out):
            out[:] = x


@numbavec.njit
def _scaled_pair(x, X):
    if np.isnan(x):
        return np.nan, np.nan  # Python floats, where the other return has float64s
    if x < 0:
        return 0, X[1] * x  # an int, promoted with the float64 item
    return X[0] * x, X[1] * x


def pair_sum(x, X, y):
    a, c = _scaled_pair(x, X)
    t = (1, x)
    if x > 1.0:
        t = (X[0], np.float32(2.0))  # a tuple variable rebound: item by item
    y[0] = a + c + t[0] * t[1]


def test_tuples_of_promotable_items_meet_item_by_item(target):
    """neutralocean's helper returns (np.nan, np.nan) on one path and two
    float64s on another: as in Numba, a variable (a return) holding both is
    their promotion item by item."""
    gu = guvectorize(["void(float64, float64[:], float64[:])", "void(float32, float32[:], float32[:])"],
                     "(),(n)->()", target=target)(pair_sum)
    for dtype in (np.float64, np.float32):
        x = np.array([1.0, np.nan, -2.0, 3.5], dtype)
        X = np.array([2.0, 3.0], dtype)
        got = gu(x, X)
        ref = []
        for v in x:
            out = np.zeros(1, dtype)
            pair_sum(v, X, out)
            ref.append(out[0])
        np.testing.assert_allclose(got, np.array(ref, dtype), rtol=1e-6)
        assert got.dtype == dtype


def test_a_helper_passed_to_a_helper_is_inlined_there():
    """neutralocean passes a jit function to another (`ppinterp(_pchip_coeffs, ...)`):
    the callee's calls of it inline it; as a value anywhere else, the error
    says functions are not values yet, not an internal type's name."""
    @numbavec.njit
    def twice(x):
        return 2 * x

    @numbavec.njit
    def apply(f, x):
        return f(x) + f(x=1.0)

    @vectorize(["float64(float64)"])
    def k(x):
        return apply(twice, x)

    check_vectorize(k, k.py_func, [1.0, -2.5, 4.0])
    with pytest.raises(numbavec.TypingError, match="can only be called in a kernel, not passed "
                                                   "as a value") as info:
        @vectorize(["float64(float64)"])
        def stored(x):
            f = twice
            return f(x)
    assert "Inline" not in str(info.value)


def test_a_2d_array_does_not_unpack(target):
    src = "def k(a, out):\n    x, y = a\n    out[0] = 1.0\n"
    with pytest.raises(numbavec.TypingError, match="a 1-d array unpacks into its elements"):
        guvectorize(["void(float64[:, :], float64[:])"], "(n,m)->()", target=target)(
            kernel_from_source(src))


# ------------------------------------------------ the truth value of an array

@numbavec.jit
def comb_with_replacement(n, k):
    r = 1
    for d in range(1, k + 1):
        r = r * (n + k - d) // d
    return r


def index_as_genotype(index, _, out):
    """sgkit's: a '()' argument declared int64[:] is an array of one element,
    compared and tested in a while (the truth value of a size-1 array) and
    updated in place."""
    ploidy = len(out)
    remainder = index
    for index in range(ploidy):
        p = ploidy - index
        n = -1
        new = 0
        prev = 0
        while new <= remainder:
            n += 1
            prev = new
            new = comb_with_replacement(n, p)
        n -= 1
        remainder -= prev
        out[p - 1] = n


def test_the_truth_value_of_an_array_of_one_element_is_its_elements(target):
    gu = guvectorize(["void(int64[:], int8[:], int8[:])", "void(int64[:], int64[:], int64[:])"],
                     "(),(k)->(k)", target=target)(index_as_genotype)
    for dtype in (np.int8, np.int64):
        index = np.arange(10)
        want = np.zeros((10, 3), dtype)
        for i in range(10):
            index_as_genotype(index[i:i + 1].copy(), None, want[i])
        np.testing.assert_array_equal(gu(index.copy(), np.zeros(3, dtype)), want)


def count_up_to(index, _, out):
    remainder = index
    n = 0
    while n <= remainder:
        n += 1
    out[0] = n


def test_an_array_condition_in_a_loop_allocates_nothing(target):
    """`while n <= remainder` of a one-element array made a new array of
    the comparison at each test (malloc and free per iteration, 50x slower
    on sgkit's loop); the element is computed in place now."""
    gu = guvectorize(["void(int64[:], int64[:], int64[:])"], "(),(k)->(k)",
                     target=target)(count_up_to)
    index = np.arange(7) * 3
    check_gufunc(gu, count_up_to, [index, np.zeros((7, 1), np.int64)], [np.zeros((7, 1), np.int64)])
    ir = gu.inspect_llvm(gu.types[0])
    assert re.search(r"call \S+ @(malloc|free)\(", ir) is None


def truth_of(a, out):
    if a > 0.5:
        out[0] = 1.0 if a < 2.0 else 2.0
    else:
        out[0] = -1.0


@pytest.mark.parametrize("n", [1, 2, 0])
def test_an_if_on_an_array_needs_one_element(target, n):
    """NumPy's rule: an array of one element is its element's truth, any
    other size is a ValueError (for no element too, since NumPy 2.2)."""
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(truth_of)
    a = np.array([[0.25] * n, [1.0] * n, [3.0] * n])
    if n == 1:
        check_gufunc(gu, truth_of, [a], [np.zeros(3)])
        return
    with pytest.raises(ValueError, match="truth value of an (empty )?array"):
        truth_of(a[0], np.zeros(1))
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        gu(a)


# ------------------------------------ branches known when the kernel compiles

DEBUG = False


@numbavec.jit
def first_element(a):
    """Generic over ndim, as Numba's dead-branch pruning lets helpers be."""
    if a.ndim == 1:
        return a[0]
    elif a.ndim == 2:
        return a[0, 0]
    else:
        return a[0, 0, 0]


@numbavec.jit
def halved(a):
    return a * 0.5 if a.dtype.kind == "f" else a // 2


def corners(v, m, out):
    out[0] = first_element(v) + first_element(m) + halved(v)[0] + halved(m)[0, 0]
    if DEBUG:
        print("corners", np.fft.fft(v))  # not in the kernel language: never compiled


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_a_branch_known_when_compiling_is_the_only_one_typed(target, dtype):
    """Only the branch an `if` (or a conditional expression) takes is typed
    and compiled when its condition is known at compile time: an array's
    ndim, a dtype test, a global constant, and not/and/or of those (Numba's
    dead-branch pruning).  The other may index past the array's dimensions
    or call what a kernel cannot."""
    gu = guvectorize("(n),(k,k)->()", target=target)(corners)
    v = np.arange(1, 13, dtype=dtype).reshape(3, 4)
    m = np.arange(1, 13, dtype=dtype).reshape(3, 2, 2) * 3
    check_gufunc(gu, corners, [v, m], [np.zeros(3)])


def signed_step(x):
    if not DEBUG and x > 0:
        return x
    elif DEBUG or x == 0:
        return 0.0
    return -x


def test_a_condition_known_only_in_part_still_runs(target):
    u = vectorize(["float64(float64)"], target=target)(signed_step)
    check_vectorize(u, signed_step, [-2.0, 0.0, 3.5])


def bound_when_debugging(x):
    if DEBUG:
        y = x
    return y


def test_a_name_bound_only_in_a_branch_never_taken_is_a_typing_error(target):
    with pytest.raises(numbavec.TypingError, match="'y'"):
        vectorize(["float64(float64)"], target=target)(bound_when_debugging)


# ---------------------------------------------------------------- reversed(range(...))

def countdown(a, b, s, out):
    """The values of reversed(range(a, b, s)), its else clause and the loop's
    variable after it (its last value: the range's first)."""
    out[:] = -99
    j = 0
    for i in reversed(range(a, b, s)):
        out[j] = i
        j += 1
        if j == out.shape[0] - 2:
            break
    else:
        out[out.shape[0] - 2] = j
    if j > 0:
        out[out.shape[0] - 1] = i


@pytest.mark.parametrize("step", [-3, -1, 1, 2, 5])
def test_reversed_range_gives_the_range_from_its_end(target, step):
    gu = guvectorize(["void(int64, int64, int64, int64[:])"], "(),(),(),(m)",
                     target=target)(countdown)
    ends = np.array([-7, -1, 0, 1, 4, 9, 1000, 1003])
    a, b = (x.ravel() for x in np.meshgrid(ends, ends))
    got = np.zeros((a.size, 24), np.int64)
    gu(a, b, step, got)
    for k in range(a.size):
        want = np.zeros(24, np.int64)
        countdown(a[k], b[k], step, want)
        np.testing.assert_array_equal(got[k], want, err_msg=f"range({a[k]}, {b[k]}, {step})")


def test_reversed_range_at_int64s_ends():
    """Ranges whose offsets from their start pass int64's range: each value
    is still the range's own."""
    gu = guvectorize(["void(int64, int64, int64, int64[:])"], "(),(),(),(m)")(countdown)
    lo, hi = -2**63, 2**63 - 1
    for a, b, s in [(lo, hi, hi), (lo, hi, 2**62), (hi, lo, -2**62), (hi, lo, lo)]:
        got, want = np.zeros(8, np.int64), np.zeros(8, np.int64)
        gu(a, b, s, got)
        countdown(a, b, s, want)
        np.testing.assert_array_equal(got, want)


def constant_starts(n, out):
    """reversed(range()) from a constant start, each step: the values in
    order, after one another in out."""
    out[:] = -99
    j = 0
    for i in reversed(range(n)):
        out[j] = i
        j += 1
    for i in reversed(range(3, n)):
        out[j] = i
        j += 1
    for i in reversed(range(4, n, -1)):
        out[j] = i
        j += 1
    for i in reversed(range(-2, n, 1)):
        out[j] = i
        j += 1
    out[out.shape[0] - 1] = j


@pytest.mark.parametrize("n", [-5, -3, -1, 0, 1, 3, 4, 5, 7])
def test_reversed_range_from_a_constant_start(target, n):
    gu = guvectorize(["void(int64, int64[:])"], "(),(m)", target=target)(constant_starts)
    got, want = np.zeros(40, np.int64), np.zeros(40, np.int64)
    gu(n, got)
    constant_starts(n, want)
    np.testing.assert_array_equal(got, want)


def suffix_sums(a, out):
    """The backward recurrence Numba users write with reversed(range(n))."""
    acc = 0.0
    for i in reversed(range(a.shape[0])):
        acc += a[i]
        out[i] = acc


def test_a_backward_recurrence_over_reversed_range(target):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(suffix_sums)
    a = np.random.default_rng(5).standard_normal((4, 9))
    want = np.zeros_like(a)
    for k in range(4):
        suffix_sums(a[k], want[k])
    np.testing.assert_array_equal(gu(a), want)


def test_reversed_of_anything_but_a_range_names_the_fix():
    def backwards(a, out):
        s = 0.0
        for x in reversed(a):
            s = 0.5 * s + x
        out[0] = s

    with pytest.raises(numbavec.TypingError,
                       match=r"reversed\(\) is supported over a range\(\).*a\[::-1\]"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()")(backwards)


# ---------------------------------------------------------------- a ufunc given its output

def exp_shifted(a, b, out):
    """Numba-style ufunc calls that name their output."""
    np.exp(a, out)
    np.add(out, b, out=out)
    np.sqrt(out, out=(out,))
    np.multiply(out, 2, out)


def test_a_ufunc_statement_writes_its_output(target):
    gu = guvectorize(["void(float64[:], float64, float64[:])",
                      "void(float32[:], float32, float32[:])"], "(n),()->(n)",
                     target=target)(exp_shifted)
    rng = np.random.default_rng(6)
    for dtype in (np.float64, np.float32):
        a, b = rng.random((3, 5)).astype(dtype), rng.random(3).astype(dtype)
        want = np.zeros_like(a)
        for k in range(3):
            exp_shifted(a[k], b[k], want[k])
        got = gu(a, b)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=2e-7 if dtype == np.float32 else 1e-15)


def test_a_ufunc_output_broadcasts_into_a_matrix(target):
    @guvectorize(["void(float64[:,:], float64[:], float64[:,:])"], "(n,m),(m)->(n,m)",
                 target=target)
    def scaled(a, w, out):
        np.multiply(a, w, out=out)

    a, w = np.random.default_rng(7).random((2, 3, 4)), np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(scaled(a, w), a * w[:, None, :])


@pytest.mark.parametrize("statement, message", [
    ("np.exp(a, out=out, where=a > 0)", r"np.exp\(\.\.\., out=\) takes no other keyword.*where="),
    ("np.exp(a, out, out=out)", r"np.exp\(\) got its output both as an argument and as out="),
    ("x = np.exp(a, out=out)", r"np.exp\(\) with its output is supported as a statement of "
                               r"its own.*res\[\.\.\.\] = np.exp"),
    ("out[0] = np.add(a, a, out)[0]", r"np.add\(\) with its output is supported as a statement"),
])
def test_a_ufunc_output_outside_a_statement_names_the_fix(statement, message):
    k = kernel_from_source(f"def k(a, out):\n    {statement}\n", "k", {"np": np})
    with pytest.raises(numbavec.TypingError, match=message):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")(k)


# ---------------------------------------------------------------- np.finfo, np.iinfo; NumPy scalars

def tolerances(x, out):
    out[0] = np.finfo(np.float64).eps * x
    out[1] = np.finfo(np.float32).eps + np.finfo(numbavec.float32).tiny * 0
    out[2] = np.iinfo(np.int32).max + np.iinfo(np.int8).min
    out[3] = np.finfo(np.float32).max - np.iinfo(np.uint64).max


def test_finfo_and_iinfo_of_a_named_type_are_constants(target):
    gu = guvectorize(["void(float64, float64[:])"], "()->(n)", target=target)(tolerances)
    want = np.zeros(4)
    tolerances(3.0, want)
    np.testing.assert_array_equal(gu(3.0, np.zeros(4)), want)


def test_finfo_of_an_arrays_dtype_names_the_fix():
    def k(a, out):
        out[0] = np.finfo(a.dtype).eps

    with pytest.raises(numbavec.TypingError,
                       match=r"np.finfo\(\) in a kernel takes a type named when compiling, "
                             r"such as np.finfo\(np.float64\).eps"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()")(k)


E64 = np.float64(0.1)
C128 = np.complex128(0.1 + 0.2j)


def scaled_by_numpy_scalars(x):
    return x * E64 + (x * C128).real


def test_a_global_float64_scalar_is_typed_not_weak(target):
    """np.float64 and np.complex128 are subclasses of Python's float and
    complex, but NumPy scalars: float32 * np.float64(0.1) is float64 (NEP 50),
    not float32 as float32 * 0.1 is."""
    u = vectorize(["float64(float32)"], target=target)(scaled_by_numpy_scalars)
    x = np.array([3, 1e-3, 7e5], np.float32)
    want = np.array([scaled_by_numpy_scalars(v) for v in x])
    assert want.dtype == np.float64
    np.testing.assert_array_equal(u(x), want)


# ---------------------------------------------------------------- functions nested in a kernel

def smoothed(a, scale, out):
    """Closures as Numba-written kernels use them: a def and a lambda in the
    body, reading the kernel's variables when called (late binding, as
    Python's closures), with defaults and keyword arguments."""
    shift = 1.0

    def weight(v, power=2):
        return (v + shift) ** power * scale

    square = lambda v: v * v  # noqa: E731 - as kernels write them
    for i in range(a.shape[0]):
        out[i] = weight(a[i]) + square(a[i]) + weight(a[i], power=1)
    shift = 10.0
    out[0] = weight(a[0])


def test_nested_functions_read_the_kernels_variables_when_called(target):
    gu = guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)",
                     target=target)(smoothed)
    a = np.random.default_rng(8).random((3, 5))
    want = np.zeros_like(a)
    for k in range(3):
        smoothed(a[k], 2.5, want[k])
    np.testing.assert_allclose(gu(a, 2.5), want, rtol=1e-15)


def twice_shifted(x):
    def outer(t):
        def inner(s):
            return s + x  # x: two scopes out

        return inner(t) * 2

    return outer(x) + outer(1.0)


def test_a_nested_function_in_a_nested_function(target):
    u = vectorize(["float64(float64)"], target=target)(twice_shifted)
    check_vectorize(u, twice_shifted, [1.0, -2.5, 7.0])


def fill_rows(a, out):
    """A nested function that writes into the kernel's output, and its own
    variable of the same name as the kernel's."""
    t = 3.0

    def put(i, v):
        t = v * 2  # the function's own t
        out[i] = t

    for i in range(a.shape[0]):
        put(i, a[i])
    out[0] += t


def test_a_nested_function_writes_the_kernels_arrays(target):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(fill_rows)
    a = np.arange(8.0).reshape(2, 4)
    want = np.zeros_like(a)
    for k in range(2):
        fill_rows(a[k], want[k])
    np.testing.assert_array_equal(gu(a), want)


@pytest.mark.parametrize("body, message", [
    ("def f(v):\n        return f(v)\n    out[0] = f(a[0])",
     r"recursion is not supported in a kernel.*f -> f"),
    ("def f(v):\n        return v\n    g = f\n    out[0] = g(a[0])",
     r"'f' is a function nested in the kernel: a kernel calls it"),
    ("def f(v):\n        return v + w\n    out[0] = f(a[0])\n    w = 1.0",
     r"local variable 'w' may be used before it is assigned"),
    ("def f(v, p=np.ones(2)):\n        return v\n    out[0] = f(a[0])",
     r"a default value of a function nested in a kernel must be a constant"),
    ("@np.vectorize\n    def f(v):\n        return v\n    out[0] = f(a[0])",
     r"a function nested in a kernel takes no decorator"),
])
def test_nested_function_refusals_name_themselves(body, message):
    k = kernel_from_source(f"def k(a, out):\n    {body}\n", "k", {"np": np})
    with pytest.raises(numbavec.TypingError, match=message):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()")(k)


ODD_NESTED = [
    # each: a kernel body using a nested function in a form users write, or
    # try; it runs as py_func does, or is a TypingError (never another error)
    "f = lambda v, w=2.0: v * w\n    out[0] = f(a[0]) + f(a[1], w=3.0)",
    "f = lambda *vs: vs[0]\n    out[0] = f(a[0], a[1])",
    "f = lambda v, *, k=1.0: v + k\n    out[0] = f(a[0], k=2.0)",
    "for i in range(2):\n        def g(v):\n            return v + i\n        out[i] = g(a[i])",
    "def g(v):\n        return v\n    def g(v):\n        return -v\n    out[0] = g(a[0])",
    "def g(v):\n        def g(w):\n            return w * 3\n        return g(v)\n    out[0] = g(a[0])",
    "def g(v):\n        return v\n    out[0] = g(g(g(a[0])))",
    "def g(v, f=len):\n        return v\n    out[0] = g(a[0])",
    "def g(**kw):\n        return 1.0\n    out[0] = g(x=1)",
    "def g(v):\n        nonlocal_v = v\n        return nonlocal_v\n    out[0] = g(a[0])",
    "g = lambda v: h(v)\n    h = lambda v: v + 1\n    out[0] = g(a[0])",
    "def g(v):\n        yield v\n    out[0] = 1.0",
    "class C:\n        pass\n    out[0] = 1.0",
    "def g(v):\n        return g\n    out[0] = 1.0",
]


@pytest.mark.parametrize("body", ODD_NESTED)
def test_odd_nested_functions_run_as_python_or_are_refused_by_name(body):
    k = kernel_from_source(f"def k(a, out):\n    out[:] = 0.0\n    {body}\n", "k", {"np": np})
    a = np.array([1.5, -2.0, 4.0])
    try:
        gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")(k)
    except numbavec.TypingError:
        return
    want = np.zeros(3)
    k(a, want)
    np.testing.assert_array_equal(gu(a), want)
