"""What numbavec's decorators return says where it was defined, as the
function does (__module__, __qualname__, __wrapped__), and pickles by
reference: unpickled in this process it is the same object, and a fresh
interpreter that can import its module gets it back by name (how
multiprocessing's spawn, joblib and dask ship a module-level ufunc).
Objects no other process can import go by value: test_pickle_by_value.py."""

import inspect
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numbavec import cuda

from conftest import NUMBAVEC_ROOT as ROOT

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None

MODULE = '''
from numbavec import vectorize, guvectorize

@vectorize(["f8(f8)", "f4(f4)"], target={target!r})
def inc(x):
    return x + 1

@vectorize(target={target!r})
def lazy_inc(x):
    return x + 1

@guvectorize(["void(f8[:], f8[:])"], "(n)->()", target={target!r})
def first(a, out):
    out[0] = a[0]

@guvectorize("(n)->()", target={target!r})
def dyn_first(a, out):
    out[0] = a[0]
'''

NAMES = ["inc", "lazy_inc", "first", "dyn_first"]


@pytest.fixture
def module(tmp_path, request):
    target = request.param
    name = f"nv_pickled_{target}"
    (tmp_path / f"{name}.py").write_text(MODULE.format(target=target))
    sys.path.insert(0, str(tmp_path))
    try:
        mod = __import__(name)
        yield mod, tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


TARGETS = ["cpu", "parallel"] + (["cuda"] if HAVE_LIBDEVICE else [])


@pytest.mark.parametrize("module", TARGETS, indirect=True)
def test_every_object_says_where_it_was_defined(module):
    mod, _ = module
    for name in NAMES:
        obj = getattr(mod, name)
        assert obj.__module__ == mod.__name__
        assert obj.__qualname__ == name
        assert inspect.unwrap(obj) is obj.py_func and obj.__wrapped__.__name__ == name


@pytest.mark.parametrize("module", TARGETS, indirect=True)
def test_pickled_by_reference_in_this_process(module):
    mod, _ = module
    for name in NAMES:
        obj = getattr(mod, name)
        assert pickle.loads(pickle.dumps(obj)) is obj


@pytest.mark.parametrize("module", ["cpu", "parallel"], indirect=True)
def test_unpickled_by_a_fresh_interpreter(module):
    """The bytes go to another process, as spawn sends them; it imports the
    module by name and computes with what it unpickled."""
    mod, moddir = module
    blob = pickle.dumps([getattr(mod, n) for n in NAMES])
    child = textwrap.dedent('''
        import pickle, sys
        import numpy as np
        inc, lazy_inc, first, dyn_first = pickle.loads(sys.stdin.buffer.read())
        x = np.arange(6.0).reshape(2, 3)
        print(inc(x).sum(), lazy_inc(np.int32(4)), first(x).tolist(), dyn_first(x).tolist())
    ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(moddir), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", child], input=blob, env=env,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["21.0", "5", "[0.0,", "3.0]", "[0.0,", "3.0]"]
