"""Objects another process cannot import by name (made in a function, in
__main__, a lambda, a class attribute of __main__) pickle by value: the
kernel's source, the values of what it reads, the factory and its options.
The receiving process decorates it again (or loads it from the cache),
once however often it receives it, and computes what the sender does.
The last tests ship ufuncs defined in a script's __main__ through what
users ship them with: multiprocessing's spawn, ProcessPoolExecutor,
joblib's loky backend and a dask.distributed cluster."""

import math
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import numbavec
from numbavec import cuda, guvectorize, jit, vectorize

from conftest import NUMBAVEC_ROOT as ROOT
from conftest import TEST_PATHS

pytestmark = pytest.mark.slow  # child interpreters, multiprocessing, joblib and a dask cluster

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None
OFFSET = np.float64(0.25)      # a global the kernels read: its value travels


def child(code, blob, timeout=180, env=None):
    """Runs code as the __main__ script of a fresh interpreter (a file: before
    3.13, inspect cannot read the source of ``python -c``), with blob on its
    stdin; its stdout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    with tempfile.TemporaryDirectory() as where:
        script = os.path.join(where, "main.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        out = subprocess.run([sys.executable, script], input=blob, env=env,
                             capture_output=True, timeout=timeout)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    return out.stdout


def make_objects(target, scale):
    """Kernels of every kind, local to this function (so not importable),
    reading a closure variable, a module global, a module and a device
    function that is itself local."""
    @jit
    def helper(x):
        return x * scale + OFFSET

    @vectorize(["float64(float64)", "float32(float32)"], target=target)
    def eager(x):
        return helper(x) + math.sqrt(abs(x))

    lazy = vectorize(target=target)(lambda x, y: x * y - scale)

    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def total(a, out):
        s = 0.0
        for v in a:
            s += helper(v)
        out[0] = s

    @guvectorize("(n)->(n)", target=target)
    def dyn_cumsum(a, out):
        s = a[0] - a[0]
        for i in range(a.shape[0]):
            s += a[i]
            out[i] = s

    return {"eager": eager, "lazy": lazy, "total": total, "dyn_cumsum": dyn_cumsum,
            "helper": helper}


def results(objs):
    x = np.arange(6.0).reshape(2, 3)
    return {"eager": objs["eager"](x), "eager32": objs["eager"](x.astype(np.float32)),
            "lazy": objs["lazy"](x, 3), "total": objs["total"](x),
            "dyn_cumsum": objs["dyn_cumsum"](x.astype(np.int32)), "helper": objs["helper"](2.0)}


def assert_results_equal(got, want):
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        assert np.asarray(got[key]).dtype == np.asarray(want[key]).dtype, key


@pytest.mark.parametrize("target", ["cpu", "parallel"])
def test_a_fresh_interpreter_computes_what_the_sender_does(target):
    objs = make_objects(target, 1.5)
    blob = pickle.dumps(objs)
    out = child('''
        import pickle, sys
        sys.path[:0] = {tests!r}
        from test_pickle_by_value import results
        objs = pickle.loads(sys.stdin.buffer.read())
        sys.stdout.buffer.write(pickle.dumps(results(objs)))
    '''.format(tests=[os.path.dirname(os.path.abspath(__file__)), *TEST_PATHS]), blob)
    assert_results_equal(pickle.loads(out), results(objs))


def test_by_value_keeps_the_options_and_the_names():
    @vectorize(["int64(int64, int64)"], identity=0, target="parallel")
    def add(x, y):
        return x + y

    blob = pickle.dumps(add)
    out = child('''
        import pickle, sys
        import numpy as np
        f = pickle.loads(sys.stdin.buffer.read())
        print(f.identity, f.types, f.__module__, f.__qualname__, f.__name__,
              f.reduce(np.arange(10)), f.reduce(np.zeros(0, np.int64)))
    ''', blob)
    assert out.decode().split() == [
        "0", "['ll->l']", __name__,
        "test_by_value_keeps_the_options_and_the_names.<locals>.add", "add", "45", "0"]


def test_received_again_it_is_the_same_object_and_compiles_once():
    objs = make_objects("cpu", 2.0)
    blob = pickle.dumps(objs["eager"])
    out = child('''
        import pickle, sys
        blob = sys.stdin.buffer.read()
        first = pickle.loads(blob)
        print(all(pickle.loads(blob) is first for _ in range(5)))
        sys.stdout.flush()
        sys.stdout.buffer.write(pickle.dumps(first))
    ''', blob)
    same, _, back = out.partition(b"\n")
    assert same == b"True"
    # it comes back to the sender as the object it sent
    assert pickle.loads(back) is objs["eager"]
    # and in this process a round trip is the object itself
    assert pickle.loads(blob) is objs["eager"]


def test_a_class_attribute_and_device_functions_calling_each_other():
    @jit
    def square(n):
        return n * n

    @jit
    def poly(n):
        return square(n) + n

    class Holder:
        f = vectorize(["int64(int64)"])(lambda n: poly(n) + 1)

    blob = pickle.dumps(Holder.f)
    out = child('''
        import pickle, sys
        import numpy as np
        f = pickle.loads(sys.stdin.buffer.read())
        print(f(np.arange(6)).tolist(), f.__qualname__)
    ''', blob)
    expected = Holder.f(np.arange(6)).tolist()
    assert expected == [1, 3, 7, 13, 21, 31]
    assert out.decode().startswith(str(expected))
    assert out.decode().split()[-1].endswith("Holder.<lambda>")


@pytest.mark.parametrize("signatures, expected", [('["f8(f8)"]', "2.0"), ("", "10.0")])
def test_the_values_travel_as_the_code_read_them(signatures, expected):
    """An eager ufunc's code read its globals at decoration: another process
    gets those values, and computes what the sender does.  A lazy one
    compiles each signature with what the names are bound to then: it
    takes their values when it is pickled."""
    blob = child('''
        import pickle, sys
        import numbavec
        K = 2.0
        @numbavec.vectorize(%s)
        def f(x):
            return x * K
        K = 10.0
        sys.stdout.buffer.write(pickle.dumps(f))
    ''' % signatures, b"")
    out = child('''
        import pickle, sys
        f = pickle.loads(sys.stdin.buffer.read())
        print(f(1.0), f.__module__)
    ''', blob)
    assert out.decode().split() == [expected, "__main__"]


def test_a_cached_kernel_is_loaded_from_the_cache_by_the_receiver(tmp_path):
    env = {"NUMBAVEC_CACHE_DIR": str(tmp_path)}
    blob = child('''
        import pickle, sys
        import numpy as np
        import numbavec
        @numbavec.vectorize(["f8(f8)", "f4(f4)"], cache=True)
        def g(x):
            return x * 3 + 1
        @numbavec.guvectorize(["void(f8[:], f8[:])"], "(n)->()", cache=True)
        def first(a, out):
            out[0] = a[0]
        # machine code is made, and stored, at a signature's first call
        g(np.float64(1)), g(np.float32(1)), first(np.ones(2))
        sys.stdout.buffer.write(pickle.dumps((g, first)))
    ''', b"", env=env)
    entries = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".nvc")
    assert len(entries) == 3
    out = child('''
        import pickle, sys
        import numpy as np
        g, first = pickle.loads(sys.stdin.buffer.read())
        print(g(np.float32(2)), first(np.arange(4.0).reshape(2, 2)).tolist())
    ''', blob, env=env)
    assert out.decode().split() == ["7.0", "[0.0,", "2.0]"]
    # nothing new was compiled and stored: the sender's entries were loaded
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".nvc") == entries


def test_dufunc_methods_travel():
    """So do the loops compiled (add()'s among them): the receiver has them."""
    f = vectorize(lambda x: x + 1)
    f.add("float32(float32)")
    blob = pickle.dumps(f)
    out = child('''
        import pickle, sys
        import numpy as np
        f = pickle.loads(sys.stdin.buffer.read())
        print(f(np.int16(3)), f.ufunc is f, ",".join(f.types))
    ''', blob)
    assert out.decode().split() == ["4", "True", "f->f,h->h"]


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="no libdevice (CUDA toolkit)")
def test_cuda_objects_travel_by_value():
    """Up to the PTX: the receiver compiles the same kernels (no GPU needed)."""
    objs = make_objects("cuda", 1.5)
    objs.pop("helper")
    blob = pickle.dumps(objs)
    out = child('''
        import pickle, sys
        objs = pickle.loads(sys.stdin.buffer.read())
        sys.stdout.buffer.write(pickle.dumps(
            {k: (type(o).__name__, o.types, o.__qualname__) for k, o in objs.items()}))
    ''', blob)
    got = pickle.loads(out)
    for key, obj in objs.items():
        assert got[key] == (type(obj).__name__, obj.types, obj.__qualname__)


def test_importable_objects_still_go_by_name():
    assert pickle.dumps(numbavec.vectorize) == pickle.dumps(vectorize)
    import numbavec._pickle as nvpickle
    assert nvpickle._by_reference(np.add) is True     # NumPy's own ufuncs untouched
    assert pickle.loads(pickle.dumps(np.add)) is np.add
    assert pickle.loads(pickle.dumps(np.linalg.matmul)) is np.linalg.matmul


# -- what users ship ufuncs with -------------------------------------------

SCRIPT = '''
import sys
import numpy as np
import numbavec as nv

SCALE = 3.0

@nv.jit
def helper(x):
    return x * SCALE

@nv.vectorize(["float64(float64)", "float32(float32)"], target=sys.argv[2])
def scaled(x):
    return helper(x) + np.sqrt(abs(x))

@nv.guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=sys.argv[2])
def total(x, out):
    s = 0.0
    for v in x:
        s += v
    out[0] = s

lazy = nv.vectorize(lambda x, y: x * y + SCALE)


def check(got, want):
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def apply(f, x):
    return f(x)


def main(how):
    x = np.arange(12.0).reshape(3, 4)
    want = [scaled(x), total(x), lazy(x, 2.0)]
    if how in ("spawn", "executor"):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        if how == "spawn":
            with ctx.Pool(2) as pool:
                got = pool.starmap(apply, [(scaled, x), (total, x)])
                got.append(pool.apply(lazy, (x, 2.0)))
        else:
            import concurrent.futures as cf
            with cf.ProcessPoolExecutor(2, mp_context=ctx) as ex:
                got = list(ex.map(apply, [scaled, total], [x, x]))
                got.append(ex.submit(lazy, x, 2.0).result())
    elif how == "loky":
        import joblib
        got = joblib.Parallel(n_jobs=2, backend="loky")(
            [joblib.delayed(scaled)(x), joblib.delayed(total)(x), joblib.delayed(lazy)(x, 2.0)])
    else:
        import dask.array as da
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            got = [client.submit(scaled, x).result(), client.submit(total, x).result(),
                   client.submit(lazy, x, 2.0).result()]
            d = da.from_array(np.arange(100.0), chunks=25)
            check([scaled(d).compute(scheduler=client.get)], [scaled(np.arange(100.0))])
    check(got, want)
    print("ok", how)


if __name__ == "__main__":
    main(sys.argv[1])
'''


@pytest.mark.parametrize("how", ["spawn", "executor", "loky", "dask"])
def test_defined_in_main_and_shipped_to_workers(tmp_path, how):
    if how == "loky":
        pytest.importorskip("joblib")
    if how == "dask":
        pytest.importorskip("distributed")
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    for target in ("cpu", "parallel") if how != "dask" else ("cpu",):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, str(script), how, target], env=env,
                             capture_output=True, timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr.decode()[-3000:]
        assert out.stdout.decode().split()[-2:] == ["ok", how]


# -- what travels is what the sender compiled (issue 34, second fault) ------

EDITED = '''
import numbavec

K = 2.0

@numbavec.jit
def helper(x):
    return x * H

H = 3.0

@numbavec.vectorize(["f8(f8)", "f4(f4)"])
def eager(x):
    return helper(x) + K

@numbavec.vectorize
def lazy(x):
    return helper(x) - K
'''


def import_file(path, name):
    """The module at path, imported under name but not registered: no other
    process finds it by name, so what it defines travels by value."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("edits", [("file",), ("globals",), ("attributes",),
                                   ("file", "globals", "attributes")])
def test_what_travels_is_what_the_sender_compiled(tmp_path, edits):
    """After the first compilation: the file edited, the globals the kernel
    and its helper read rebound, the attributes pickling used to read
    rebound.  The sender keeps computing what it compiled (a lazy ufunc's
    new signature too, from the capture of its first), and so does the
    receiver."""
    path = tmp_path / "edited.py"
    path.write_text(EDITED)
    mod = import_file(path, f"edited_{id(tmp_path)}")
    x = np.arange(3.0)
    np.testing.assert_array_equal(mod.lazy(x), x * 3.0 - 2.0)
    if "file" in edits:
        path.write_text(EDITED.replace("+ K", "* 100 + K").replace("- K", "* 100 - K"))
    if "globals" in edits:
        mod.K, mod.H = 50.0, 70.0
    if "attributes" in edits:
        mod.eager.__wrapped__ = mod.lazy.__wrapped__ = lambda x: x * 1000
        mod.eager._numbavec_recipe = mod.lazy._numbavec_recipe = "anything"
        mod.helper.__wrapped__ = lambda x: x * 1000
    want = {"eager": mod.eager(x), "eager32": mod.eager(x.astype(np.float32)),
            "lazy": mod.lazy(x), "lazy32": mod.lazy(x.astype(np.float32)),
            "helper": mod.helper(2.0)}
    np.testing.assert_array_equal(want["lazy32"], (x * 3.0 - 2.0).astype(np.float32))
    np.testing.assert_array_equal(want["eager"], x * 3.0 + 2.0)
    blob = pickle.dumps((mod.eager, mod.lazy, mod.helper))
    out = child('''
        import pickle, sys
        import numpy as np
        eager, lazy, helper = pickle.loads(sys.stdin.buffer.read())
        x = np.arange(3.0)
        sys.stdout.buffer.write(pickle.dumps({
            "eager": eager(x), "eager32": eager(x.astype(np.float32)),
            "lazy": lazy(x), "lazy32": lazy(x.astype(np.float32)), "helper": helper(2.0)}))
    ''', blob)
    assert_results_equal(pickle.loads(out), want)


def test_a_lazy_ufunc_pickled_before_compiling_fixes_what_it_reads_then():
    """Pickled before any call, a lazy ufunc takes its values then, for the
    receiver and for itself: both compute the same afterwards."""
    scale = [2.0]

    def make():
        k = scale[0]
        f = vectorize(lambda x: x * k)
        return f, (lambda: None)

    f, _ = make()
    blob = pickle.dumps(f)
    out = child('''
        import pickle, sys
        f = pickle.loads(sys.stdin.buffer.read())
        print(f(1.5))
    ''', blob)
    assert out.decode().split() == [str(f(1.5))] == ["3.0"]


def test_a_disabled_lazy_ufunc_travels_disabled(target):
    f = vectorize(lambda x: x + 1, target=target)
    f(np.float32(1.0))
    f.add("float64(int16)")
    f.disable_compile()
    blob = pickle.dumps(f)
    out = child('''
        import pickle, sys
        import numpy as np
        f = pickle.loads(sys.stdin.buffer.read())
        got = [",".join(f.types), repr(f(np.int16(3))), repr(f(np.float32(2.0)))]
        try:
            f(np.complex128(1j))
            got.append("compiled")
        except TypeError:
            got.append("TypeError")
        print(" ".join(got))
    ''', blob)
    assert out.decode().split() == ["f->f,h->d", "np.float64(4.0)", "np.float32(3.0)",
                                    "TypeError"]


def test_nothing_of_numbavec_s_is_in_an_object_s_dict():
    objs = make_objects("cpu", 1.0)
    if HAVE_LIBDEVICE:
        objs.update({f"cuda_{k}": v for k, v in make_objects("cuda", 1.0).items()})
    for name, obj in objs.items():
        own = set(dir(obj)) | set(getattr(obj, "__dict__", {}))
        assert not [k for k in own if "numbavec" in k], name
        for old in ("_numbavec_recipe", "_numbavec_device_source", "_numbavec_loops"):
            assert not hasattr(obj, old), (name, old)


def test_no_numbavec_attribute_is_left_in_the_code():
    """What the package sets or reads by an attribute name of its own: none."""
    import pathlib

    package = pathlib.Path(numbavec.__file__).parent
    roots = [package, package.parent / "src"]
    for path in (p for root in roots if root.is_dir() for p in root.rglob("*")
                 if p.suffix in (".py", ".c", ".h")):
        assert "_numbavec_" not in path.read_text(), path


def test_rebinding_attributes_changes_nothing_that_travels():
    objs = make_objects("cpu", 1.5)
    before = {k: pickle.dumps(v) for k, v in objs.items()}
    for obj in objs.values():
        for name in ("__wrapped__", "py_func", "__module__", "__qualname__",
                     "_numbavec_recipe", "_numbavec_device_source", "_numbavec_loops"):
            try:
                setattr(obj, name, "rebound")
            except (AttributeError, TypeError):
                pass        # read-only where the type says so
    for key, obj in objs.items():
        assert pickle.dumps(obj) == before[key], key


# ---- kernels without source travel as their rebuilt def ----

NO_SOURCE = '''
import numpy as np, numbavec
SCALE = 3.0
def outer(k):
    def kern(x):
        return x * SCALE + k if x > 0 else -x
    return kern
exec_ns = {"SCALE": SCALE}
exec("def twice(x):\\n    return 2 * x * SCALE\\n", exec_ns)
uf = numbavec.vectorize(["f8(f8)"])(outer(1.5))
lazy = numbavec.vectorize(exec_ns["twice"])
'''


def test_kernels_without_source_travel_as_their_rebuilt_def():
    """A closure and an exec'd function (no source anywhere) pickled by
    value: the def rebuilt from their bytecode travels as text, with the
    captured globals and cells, and the receiver compiles it."""
    ns = {}
    exec(NO_SOURCE, ns)
    from numbavec._source import KernelSource
    assert KernelSource(ns["uf"].py_func).from_bytecode
    blob = pickle.dumps((ns["uf"], ns["lazy"]))
    x = np.array([-2.0, 0.5, 4.0])
    out = child("import pickle, sys, numpy as np\n"
                "uf, lazy = pickle.loads(sys.stdin.buffer.read())\n"
                "x = np.array([-2.0, 0.5, 4.0])\n"
                "print(uf(x).tolist(), lazy(x).tolist())\n", blob).decode()
    assert out.strip() == f"{ns['uf'](x).tolist()} {ns['lazy'](x).tolist()}"


def test_a_kernel_without_source_travels_as_text():
    """What travels for a kernel without source is its rebuilt def as
    Python text, which any Python version reads (no marshalled code)."""
    ns = {}
    exec(NO_SOURCE, ns)
    blob = pickle.dumps(ns["uf"])
    assert b"def kern(x)" in blob and b"marshal" not in blob


@pytest.mark.parametrize("text", ["# FunctionDef(name='k', ...)\n", "def k(x):\n    with :\n"])
def test_a_capture_whose_text_is_not_python_is_a_typing_error_on_the_receiver(text):
    """A def rebuilt from bytecode that ast.unparse cannot write is captured
    as a comment (numbavec/_capture.py, source_text); one it writes with a
    refused construct's hole may not parse.  The receiver said KeyError or
    SyntaxError; it is the TypingError the sender would give."""
    from numbavec import _capture, _pickle

    c = _capture.Captured("k", "k", "__main__", text, None, None)
    with pytest.raises(numbavec.TypingError, match="cannot be made again from its pickle"):
        _pickle._function_of(c)
