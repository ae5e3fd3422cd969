"""Shared fixtures: the targets every ufunc test runs on, and small helpers.

A new target (cuda, ...) plugs in by adding its name to ``TARGETS`` (or by
skipping itself in ``target`` when the machine lacks it).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import numbavec
from numbavec import vectorize

# The directory the tested numbavec was imported from (site-packages in CI, the
# checkout after an in-place build): child interpreters must import the same.
NUMBAVEC_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(numbavec.__file__)))

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


def run_python(code, env=None, timeout=300):
    """Runs ``python -c code`` importing the numbavec under test; returns the
    CompletedProcess (text output).  The child runs in an empty directory, so
    the checkout's source tree cannot shadow an installed numbavec."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(
        [NUMBAVEC_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
