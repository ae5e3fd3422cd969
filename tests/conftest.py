"""Shared fixtures: the targets every ufunc test runs on, and small helpers.

A new target (cuda, ...) plugs in by adding its name to ``TARGETS`` (or by
skipping itself in ``target`` when the machine lacks it).
"""
import numpy as np
import pytest

from numbavec import vectorize

TARGETS = ["cpu", "parallel"]


@pytest.fixture(params=TARGETS)
def target(request):
    """The name of a target; every ufunc test takes it."""
    return request.param


def compile_ufunc(pyfunc, signatures, target, **options):
    """``vectorize(signatures, target=target, **options)(pyfunc)``."""
    return vectorize(signatures, target=target, **options)(pyfunc)


def type_string(*dtypes):
    """NumPy's ``ufunc.types`` entry for a loop: type_string('f4', 'f4', 'f4') == 'ff->f'."""
    *ins, out = (np.dtype(d).char for d in dtypes)
    return "".join(ins) + "->" + out


def assert_same(got, expected):
    """Equal values (NaN equal to NaN), same dtype, same shape, same kind of result."""
    np.testing.assert_array_equal(got, expected, strict=True)
    assert type(got) is type(expected), (type(got), type(expected))
