"""The compiled-code cache (cache=True): hits, misses on every key part, damage,
concurrent writers, an unwritable directory; the key made from what the
compiler reads, when it reads it; what the cache trusts (owners and modes,
traps in an entry's place, planted entries, the MAC key).

Each test writes a kernel module into a temporary directory and imports it in
a fresh subprocess with NUMBAVEC_CACHE_DIR pointing at its own cache, so that
"a warm start" is a real new process.  Hits and misses are read from the
counters of _core._jit_info(): LLVM compilations and stored objects linked.
"""
import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numbavec import cache as nvcache

from conftest import NUMBAVEC_ROOT as ROOT  # noqa: E402  where the tested numbavec lives

pytestmark = pytest.mark.slow  # nearly every test runs child interpreters

KERNEL = '''
import math
import numpy as np
import numbavec
from numbavec import vectorize

SCALE = {scale}

@numbavec.jit
def helper(x):
    return {helper}

@vectorize({sigs}, target={target!r}, cache=True)
def kern(x, y):
    return math.exp(-x) * SCALE + y
'''

RUN = '''
import json, sys, warnings
import numpy as np
sys.path.insert(0, {moddir!r})
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import kmod
    x = np.linspace(0, 1, 5)
    result = kmod.kern(x, x).tolist()   # a lazy ufunc compiles here, an eager one makes its code
    llvm = kmod.kern.inspect_llvm()     # makes (and stores) every signature's code
from numbavec import _core
info = _core._jit_info()
print(json.dumps({{
    "compilations": info["compilations"], "object_loads": info["object_loads"],
    "result": result, "types": kmod.kern.types,
    "llvm": len(llvm),
    "warnings": [str(w.category.__name__) for w in caught]}}))
'''


def write_module(moddir, scale="2.0", helper="x + 1", sigs="['f8(f8, f8)', 'f4(f4, f4)']",
                 target="cpu", body=KERNEL, **names):
    os.makedirs(moddir, exist_ok=True)
    with open(os.path.join(moddir, "kmod.py"), "w") as fh:
        fh.write(body.format(scale=scale, helper=helper, sigs=sigs, target=target, **names))


def _limit_memory():
    # A read without end (of /dev/zero, of a huge file) then fails with a
    # MemoryError instead of taking the machine's memory.  Not under ASan,
    # which reserves terabytes of address space.
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def run(moddir, cachedir, trapped=False, root=ROOT):
    """Runs RUN in a fresh interpreter, with numbavec from root.  trapped:
    the cache may hold a trap, so a hang fails after 60 s and memory is limited."""
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir),
               PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    limit = trapped and "asan" not in os.environ.get("LD_PRELOAD", "")
    try:
        # cwd: `python -c` puts it first on sys.path, before root
        out = subprocess.run([sys.executable, "-c", RUN.format(moddir=str(moddir))], env=env,
                             cwd=str(moddir), capture_output=True, text=True,
                             timeout=60 if trapped else 120,
                             preexec_fn=_limit_memory if limit else None)
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung on what was in the cache")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def key_of(fn, signature="float64(float64, float64)", target="cpu", options=None):
    """The cache key of fn's signature, captured now as a compilation would."""
    from numbavec._capture import capture_function
    from numbavec._source import KernelSource

    captured = capture_function(fn, KernelSource(fn))
    return nvcache.FunctionCache(target, options or {}).key(signature, captured)


def entry_paths(cachedir):
    return sorted(str(cachedir / n) for n in os.listdir(cachedir) if n.endswith(".nvc"))


def expected(scale=2.0):
    x = np.linspace(0, 1, 5)
    return (np.exp(-x) * scale + x).tolist()


@pytest.fixture
def dirs(tmp_path):
    return tmp_path / "mod", tmp_path / "cache"


def test_cold_then_warm(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    cold = run(moddir, cachedir)
    assert (cold["compilations"], cold["object_loads"]) == (2, 0)
    warm = run(moddir, cachedir)
    assert (warm["compilations"], warm["object_loads"]) == (0, 2)
    assert warm["result"] == cold["result"]
    np.testing.assert_allclose(warm["result"], expected())
    assert warm["types"] == cold["types"] == ["dd->d", "ff->f"]
    assert warm["llvm"] == 2          # inspect_llvm works from the entry's IR
    assert nvcache.info(str(cachedir))["entries"] == 2


LAZY_RUN = """
import json, sys, threading
import numpy as np
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
call = {call!r}
if call == "thread":  # the first call in another thread, without the GIL (a long array)
    x = np.linspace(0, 1, 100_000)
    t = threading.Thread(target=kmod.kern, args=(x, x))
    t.start()
    t.join()
elif call:
    x = np.linspace(0, 1, 5).astype(call)
    kmod.kern(x, x)
info = _core._jit_info()
print(json.dumps([info["compilations"], info["object_loads"]]))
"""


def lazy_run(moddir, cachedir, call):
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir), NUMBAVEC_EAGER="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", LAZY_RUN.format(moddir=str(moddir), call=call)],
                         env=env, cwd=str(moddir), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def test_code_made_at_its_first_call_is_stored_then(dirs):
    """Machine code is made at a signature's first call, and stored then: a
    decoration alone stores nothing; a warm start links what was stored and
    makes, and stores, only what was not."""
    moddir, cachedir = dirs
    write_module(moddir)
    assert lazy_run(moddir, cachedir, None) == (0, 0)
    assert not os.path.exists(cachedir) or entry_paths(cachedir) == []
    assert lazy_run(moddir, cachedir, "float64") == (1, 0)
    assert len(entry_paths(cachedir)) == 1
    assert lazy_run(moddir, cachedir, "float64") == (0, 1)  # linked at decoration
    assert lazy_run(moddir, cachedir, "float32") == (1, 1)
    assert len(entry_paths(cachedir)) == 2
    assert lazy_run(moddir, cachedir, "float32") == (0, 2)


SORTING_KERNEL = """
import numpy as np
from numbavec import guvectorize

@guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", cache=True)
def kern(a, out):
    out[:] = np.clip(np.sort(a), np.quantile(a, 0.25), np.median(a))
"""


def test_a_kernel_calling_numpy_array_functions_hits(dirs):
    """np.sort, np.quantile, np.median are dispatcher objects whose repr
    holds an address: the key names them, so a warm start hits."""
    moddir, cachedir = dirs
    write_module(moddir, body=SORTING_KERNEL)
    assert lazy_run(moddir, cachedir, "float64") == (1, 0)
    assert lazy_run(moddir, cachedir, "float64") == (0, 1)
    assert len(entry_paths(cachedir)) == 1


GUFUNC_KERNEL = """
from numbavec import guvectorize

@guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", cache=True)
def kern(a, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc
"""

GUFUNC_RUN = """
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
a = np.arange(12.0).reshape(3, 4)
got = kmod.kern(a if {contiguous!r} else a[:, ::2])
assert np.allclose(got, np.cumsum(a if {contiguous!r} else a[:, ::2], axis=1))
info = _core._jit_info()
print(json.dumps([info["compilations"], info["object_loads"]]))
"""


def gufunc_run(moddir, cachedir, contiguous):
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir), NUMBAVEC_EAGER="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = GUFUNC_RUN.format(moddir=str(moddir), contiguous=contiguous)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(moddir),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_gufunc_s_two_bodies_are_stored_as_they_are_made(dirs):
    """A call on contiguous cores makes (and stores) the contig-only body; a
    call with other strides, the whole body; a warm start links both, and a
    gufunc whose whole body is linked needs no other."""
    moddir, cachedir = dirs
    write_module(moddir, body=GUFUNC_KERNEL)
    assert gufunc_run(moddir, cachedir, True) == (1, 0)
    assert len(entry_paths(cachedir)) == 1
    assert gufunc_run(moddir, cachedir, True) == (0, 1)
    assert gufunc_run(moddir, cachedir, False) == (1, 1)
    assert len(entry_paths(cachedir)) == 2
    assert gufunc_run(moddir, cachedir, False) == (0, 1)
    assert gufunc_run(moddir, cachedir, True) == (0, 1)


def test_code_made_in_a_thread_without_the_gil_is_stored(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    assert lazy_run(moddir, cachedir, "thread") == (1, 0)
    assert len(entry_paths(cachedir)) == 1
    assert lazy_run(moddir, cachedir, "thread") == (0, 1)


def test_targets_have_their_own_entries(dirs, target):
    moddir, cachedir = dirs
    write_module(moddir, target=target)
    assert run(moddir, cachedir)["compilations"] == 2
    warm = run(moddir, cachedir)
    assert warm["compilations"] == 0
    np.testing.assert_allclose(warm["result"], expected())


@pytest.mark.parametrize("change", [
    {"scale": "3.0"},                                       # a global's value
    {"scale": "np.float32(2.0)"},                           # its type
    {"body": KERNEL.replace("* SCALE + y", "* SCALE + y * 1")},   # the source
    {"target": "parallel"},                                 # the target
])
def test_each_key_part_misses(dirs, change):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    write_module(moddir, **change)
    again = run(moddir, cachedir)
    assert again["compilations"] == 2 and again["object_loads"] == 0


def test_a_rebuilt_core_misses(dirs, tmp_path):
    # A build of _core with the same version string (a development build, a
    # reinstall) may compile differently: its file is part of the key.
    import shutil

    from numbavec import _core

    moddir, cachedir = dirs
    package = os.path.dirname(_core.__file__)
    shutil.copytree(package, tmp_path / "lib" / "numbavec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    copied = tmp_path / "lib" / "numbavec" / os.path.basename(_core.__file__)
    write_module(moddir)
    run(moddir, cachedir, root=tmp_path / "lib")
    assert run(moddir, cachedir, root=tmp_path / "lib")["object_loads"] == 2
    st = os.stat(copied)
    os.utime(copied, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = run(moddir, cachedir, root=tmp_path / "lib")
    assert (again["compilations"], again["object_loads"]) == (2, 0)


def test_a_new_signature_misses_only_itself(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    write_module(moddir, sigs="['f8(f8, f8)', 'f4(f4, f4)', 'i8(i8, i8)']")
    again = run(moddir, cachedir)
    assert (again["compilations"], again["object_loads"]) == (1, 2)


def _kernel_key(moddir, name, helper):
    """The cache key of kmod.kern's f8 signature, the module written anew."""
    import importlib.util

    body = KERNEL.replace("math.exp(-x) * SCALE + y", "helper(x) * SCALE + y").replace(
        "@vectorize({sigs}, target={target!r}, cache=True)\n", "")
    write_module(moddir, body=body, helper=helper)
    spec = importlib.util.spec_from_file_location(name, os.path.join(moddir, "kmod.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return key_of(mod.kern)


def test_a_called_function_changing_misses(tmp_path):
    moddir = tmp_path / "mod"
    k1 = _kernel_key(moddir, "kmod_a", "x + 1")
    assert _kernel_key(moddir, "kmod_b", "x + 1") == k1
    assert _kernel_key(moddir, "kmod_c", "x + 2") != k1


def test_a_device_function_without_source_compiles_and_is_keyed():
    ns = {}
    exec(textwrap.dedent('''
        import numbavec
        @numbavec.jit
        def inner(x):
            return x + 1
    '''), ns)
    from numbavec import vectorize

    def kern(x):
        return inner(x)

    kern.__globals__["inner"] = ns["inner"]
    # no source for exec'd code: its def is rebuilt from its bytecode, and
    # the key is made of that text (stable, never an exception)
    f = vectorize(["float64(float64)"], cache=True)(kern)
    assert f(np.float64(2.0)) == 3.0
    del kern.__globals__["inner"]


def _key_of(pyfunc):
    from numbavec._capture import Capturer
    from numbavec._source import KernelSource
    from numbavec.cache import function_key_text

    src = KernelSource(pyfunc)
    assert src.from_bytecode
    c = Capturer().function(id(pyfunc), pyfunc, pyfunc.__code__, src.funcdef, src.location)
    return function_key_text(c, "cpu", {})


def test_kernels_without_source_are_keyed_on_their_rebuilt_def():
    """Two exec'd kernels of one name and globals, differing in their code
    only, have different keys; the same code has the same key."""
    def make(body):
        ns = {}
        exec(f"def k(x):\n    return {body}\n", ns)
        return ns["k"]

    keys = [_key_of(make(body)) for body in ("x + 1", "x + 2", "x + 1")]
    assert keys[0] != keys[1] and keys[0] == keys[2]


def test_corrupt_and_truncated_entries_are_recompiled_and_rewritten(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    paths = sorted(str(cachedir / n) for n in os.listdir(cachedir))
    with open(paths[0], "r+b") as fh:              # flip a byte of the payload
        fh.seek(-10, os.SEEK_END)
        byte = fh.read(1)
        fh.seek(-10, os.SEEK_END)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with open(paths[1], "r+b") as fh:              # cut it short
        fh.truncate(40)
    assert nvcache.info(str(cachedir))["damaged"] == 2
    again = run(moddir, cachedir)
    assert (again["compilations"], again["object_loads"]) == (2, 0)
    np.testing.assert_allclose(again["result"], expected())
    assert nvcache.info(str(cachedir))["damaged"] == 0
    assert run(moddir, cachedir)["object_loads"] == 2


def test_concurrent_writer_processes(dirs):
    moddir, cachedir = dirs
    sigs = repr([f"{t}({t}, {t})" for t in ("f8", "f4", "i8", "i4", "i2", "u8")])
    write_module(moddir, sigs=sigs)
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", RUN.format(moddir=str(moddir))], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1])["result"],
                                   expected())
    stats = nvcache.info(str(cachedir))
    assert (stats["entries"], stats["damaged"]) == (6, 0)
    assert not [n for n in os.listdir(cachedir) if n.startswith(".tmp-")]
    assert run(moddir, cachedir)["compilations"] == 0


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes into read-only directories")
def test_read_only_directory_compiles_with_one_warning(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    os.makedirs(cachedir)
    os.chmod(cachedir, 0o500)
    try:
        out = run(moddir, cachedir)
    finally:
        os.chmod(cachedir, 0o700)
    assert out["compilations"] == 2
    assert out["warnings"] == ["NumbavecCacheWarning"]


def test_unwritable_cache_path_compiles_with_one_warning(dirs, tmp_path):
    # Works as root too: the cache "directory" is a regular file.
    moddir, _ = dirs
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    write_module(moddir)
    out = run(moddir, blocker / "cache")
    assert out["compilations"] == 2
    assert out["warnings"] == ["NumbavecCacheWarning"]
    np.testing.assert_allclose(out["result"], expected())


LAZY = KERNEL.replace("@vectorize({sigs}, target={target!r}, cache=True)",
                      "@vectorize(target={target!r}, cache=True)")


def test_lazy_ufunc_caches_each_compiled_signature(dirs):
    moddir, cachedir = dirs
    write_module(moddir, body=LAZY)
    cold = run(moddir, cachedir)
    assert (cold["compilations"], cold["object_loads"], cold["types"]) == (1, 0, ["dd->d"])
    warm = run(moddir, cachedir)
    assert (warm["compilations"], warm["object_loads"]) == (0, 1)
    np.testing.assert_allclose(warm["result"], expected())


def test_same_function_twice_in_one_process_shares_the_code(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "c"))
    from numbavec import _core, vectorize

    def twice(x):
        return x * 3

    import gc

    # ufuncs are collected in cycles: earlier tests' garbage, freed by a
    # collection in between, would change the count
    gc.collect()
    gc.disable()
    try:
        live = _core._jit_info()["live_codes"]
        a = vectorize(["f8(f8)"], cache=True)(twice)
        b = vectorize(["f8(f8)"], cache=True)(twice)
        assert _core._jit_info()["live_codes"] == live + 1
    finally:
        gc.enable()
    np.testing.assert_array_equal(a(np.arange(3.0)), b(np.arange(3.0)))
    del a
    np.testing.assert_array_equal(b(np.arange(3.0)), [0, 3, 6])


def test_clear_and_cli(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    info = subprocess.run([sys.executable, "-m", "numbavec", "--cache-info"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and "kmod.kern" in info.stdout and "2" in info.stdout
    cleared = subprocess.run([sys.executable, "-m", "numbavec", "--cache-clear"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert cleared.returncode == 0
    assert nvcache.info(str(cachedir))["entries"] == 0
    run(moddir, cachedir)
    assert nvcache.clear(str(cachedir)) == 2


# -- the key is what the compiler reads, when it reads it -------------------

# A lazy kernel compiles at its first call: by then the names defined below it
# are bound, and the compiler reads them (a global, an attribute chain, a
# device function calling another).
BELOW = '''
import numbavec
from numbavec import vectorize

@vectorize(target={target!r}, cache=True)
def kern(x, y):     # {tag}
    return helper(x) * SCALE + y + Consts.OFFSET

SCALE = {scale}

class Consts:
    OFFSET = {offset}

@numbavec.jit
def helper(x):
    return inner(x) + 1.0

@numbavec.jit
def inner(x):
    return {helper}
'''

# The same names above an eager kernel (below it, they would not be bound
# when it compiles, at decoration).
ABOVE = '''
import numbavec
from numbavec import vectorize

SCALE = {scale}

class Consts:
    OFFSET = {offset}

@numbavec.jit
def inner(x):
    return {helper}

@numbavec.jit
def helper(x):
    return inner(x) + 1.0

@vectorize({sigs}, target={target!r}, cache=True)
def kern(x, y):     # {tag}
    return helper(x) * SCALE + y + Consts.OFFSET
'''

# tag: a comment in the kernel's source, unique to each test, so that no
# other test's live code of the same key is shared (and nothing stored).
NAMES = {"scale": "2.0", "offset": "0.5", "helper": "x + 1.0"}
EDITS = [{"scale": "3.0"}, {"offset": "0.25"}, {"helper": "x * 4.0"}]


def import_file(path, name):
    """Imports the module at path under name, in this process."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def names_result(scale, offset, helper, tag=None):
    x = np.linspace(0, 1, 5)
    return (eval(helper, {"x": x}) + 1.0) * float(scale) + x + float(offset)


@pytest.mark.parametrize("edit", EDITS, ids=["global", "attribute", "device-of-device"])
@pytest.mark.parametrize("body", [BELOW, ABOVE], ids=["lazy-below", "eager-above"])
def test_an_edited_name_misses_in_a_fresh_process(dirs, monkeypatch, body, edit):
    moddir, cachedir = dirs
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(cachedir))
    names = dict(NAMES, tag=str(moddir))
    write_module(moddir, body=body, sigs="['f8(f8, f8)']", **names)
    mod = import_file(moddir / "kmod.py", f"kmod_names_{id(dirs)}")
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(mod.kern(x, x), names_result(**names))
    assert nvcache.info(str(cachedir))["entries"] == 1

    write_module(moddir, body=body, sigs="['f8(f8, f8)']", **dict(names, **edit))
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (1, 0)
    np.testing.assert_allclose(out["result"], names_result(**dict(names, **edit)))


CLOSURES = '''
from numbavec import vectorize

def late():
    k = 2.0
    @vectorize(cache=True)
    def kern(x, y):
        return x * k + y
    k = 3.0             # the kernel compiles at its first call, with this
    return kern

def fixed():
    k = 2.0
    @vectorize(cache=True)
    def kern(x, y):
        return x * k + y
    return kern
'''


def test_a_closure_variable_is_keyed_as_compiled(tmp_path, monkeypatch):
    # Two kernels of the same source: one closure cell is rebound after
    # decoration.  Keyed at decoration, the second would run the first's code.
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "closures.py").write_text(CLOSURES)
    mod = import_file(tmp_path / "closures.py", f"closures_{id(tmp_path)}")
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(mod.late()(x, x), 3.0 * x + x)
    np.testing.assert_allclose(mod.fixed()(x, x), 2.0 * x + x)
    assert nvcache.info(str(tmp_path / "cache"))["entries"] == 2


STALE_SOURCE = '''
import numbavec
from numbavec import vectorize

@numbavec.jit
def helper(x):
    return {helper}

@vectorize(['f8(f8)'])
def first(x):           # compiled at import: helper's source is parsed now
    return helper(x)

@vectorize(cache=True)
def kern(x, y):
    return helper(x) + y
'''


def test_a_device_function_is_keyed_from_the_source_compiled(dirs, monkeypatch):
    # The file is edited after the device function was parsed: the compiler
    # inlines the parsed source, so the key must describe that one, not the
    # file on disk (else a fresh process with the edit would load old code).
    moddir, cachedir = dirs
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(cachedir))
    write_module(moddir, body=STALE_SOURCE, helper="x + 1.0")
    mod = import_file(moddir / "kmod.py", f"kmod_stale_{id(dirs)}")
    write_module(moddir, body=STALE_SOURCE, helper="x + 100.0")
    x = np.linspace(0, 1, 5)
    np.testing.assert_allclose(mod.kern(x, x), x + 1.0 + x)
    assert nvcache.info(str(cachedir))["entries"] == 1
    out = run(moddir, cachedir)
    assert out["object_loads"] == 0
    np.testing.assert_allclose(out["result"], x + 100.0 + x)


def test_key_follows_a_rebinding_between_two_calls(dirs):
    # a capture may remember what a parsed function reads, never what it is bound to.
    moddir, _ = dirs
    undecorated = ABOVE.replace("@vectorize({sigs}, target={target!r}, cache=True)\n", "")
    write_module(moddir, body=undecorated, **dict(NAMES, tag="rebind"))
    mod = import_file(moddir / "kmod.py", f"kmod_rebind_{id(dirs)}")
    first = key_of(mod.kern)
    mod.SCALE = 3.0
    assert key_of(mod.kern) != first
    mod.SCALE = 2.0
    assert key_of(mod.kern) == first
    mod.Consts.OFFSET = 1.5
    assert key_of(mod.kern) != first


# -- what the cache trusts ---------------------------------------------------

def _sparse_64_gib(path):
    with open(path, "wb") as fh:
        fh.truncate(64 << 30)


TRAPS = {
    "fifo": os.mkfifo,                                      # an open() that blocks
    "symlink-to-dev-zero": lambda path: os.symlink("/dev/zero", path),   # a read without end
    "sparse-64-GiB": _sparse_64_gib,                        # too large to read
}


@pytest.mark.parametrize("trap", TRAPS.values(), ids=TRAPS.keys())
def test_a_trap_in_place_of_an_entry_is_refused_promptly(dirs, trap):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    for path in entry_paths(cachedir):
        os.unlink(path)
        trap(path)
    out = run(moddir, cachedir, trapped=True)
    assert (out["compilations"], out["object_loads"]) == (2, 0)
    assert out["warnings"] == ["NumbavecCacheWarning"]
    np.testing.assert_allclose(out["result"], expected())
    # the traps were replaced by the entries compiled
    assert run(moddir, cachedir)["object_loads"] == 2


ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
as_root = pytest.mark.skipif(not ROOT_USER, reason="only root can give a file to another user")


def _give_to_nobody(path):
    os.chown(path, 65534, 65534, follow_symlinks=False)


def test_the_cache_directory_and_the_parents_it_makes_are_private(dirs, tmp_path):
    moddir, _ = dirs
    cachedir = tmp_path / "made" / "by" / "numbavec"
    write_module(moddir)
    old_umask = os.umask(0o022)            # what os.makedirs would leave: 0755
    try:
        run(moddir, cachedir)
    finally:
        os.umask(old_umask)
    for path in (tmp_path / "made", tmp_path / "made" / "by", cachedir):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
    for path in entry_paths(cachedir):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def _snapshot(cachedir):
    return {n: (cachedir / n).read_bytes() for n in os.listdir(cachedir)}


DIRECTORY_FAULTS = {
    "group-writable": lambda path: os.chmod(path, 0o770),
    "other-writable": lambda path: os.chmod(path, 0o703),
    "of-another-user": pytest.param(_give_to_nobody, marks=as_root),
}


@pytest.mark.parametrize("fault", DIRECTORY_FAULTS.values(), ids=DIRECTORY_FAULTS.keys())
def test_a_directory_others_can_write_is_not_used(dirs, fault):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    before = _snapshot(cachedir)
    fault(cachedir)
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (2, 0)
    assert out["warnings"] == ["NumbavecCacheWarning"]
    np.testing.assert_allclose(out["result"], expected())
    assert _snapshot(cachedir) == before         # nothing read, nothing written
    os.chown(cachedir, os.geteuid(), os.getegid())
    os.chmod(cachedir, 0o700)
    assert run(moddir, cachedir)["object_loads"] == 2


ENTRY_FAULTS = {
    "group-writable": lambda path: os.chmod(path, 0o620),
    "other-writable": lambda path: os.chmod(path, 0o602),
    "of-another-user": pytest.param(_give_to_nobody, marks=as_root),
}


@pytest.mark.parametrize("fault", ENTRY_FAULTS.values(), ids=ENTRY_FAULTS.keys())
def test_an_entry_others_can_write_is_not_loaded(dirs, fault):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    for path in entry_paths(cachedir):
        fault(path)
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (2, 0)
    assert out["warnings"] == ["NumbavecCacheWarning"]
    np.testing.assert_allclose(out["result"], expected())
    assert run(moddir, cachedir)["object_loads"] == 2      # replaced by the compiled ones


# -- entries are authenticated -------------------------------------------------

ONE_SIG = "['f8(f8, f8)']"


def _two_entries(moddir, cachedir):
    """The entry of kmod.kern with SCALE = 2.0, then the one with 3.0 (the
    module is left at 3.0)."""
    write_module(moddir, sigs=ONE_SIG, scale="2.0")
    run(moddir, cachedir)
    [old] = entry_paths(cachedir)
    write_module(moddir, sigs=ONE_SIG, scale="3.0")
    run(moddir, cachedir)
    [new] = [p for p in entry_paths(cachedir) if p != old]
    return old, new


def _plant(source, target, fmt):
    """Writes at target the code of the entry at source, its symbols renamed
    to target's key, as someone without the MAC key could write it: format
    1's bare checksum, or format 2 with a MAC under a key of their own."""
    import hashlib
    import marshal

    payload = open(source, "rb").read()[len(nvcache.MAGIC) + 32:]
    meta, (obj, ir, *rest) = marshal.loads(payload)
    old, new = (os.path.basename(p)[:-len(nvcache.SUFFIX)] for p in (source, target))
    payload = marshal.dumps((meta, (obj.replace(old.encode(), new.encode()),
                                    ir.replace(old, new), *rest)))
    if fmt == 1:
        head = b"NVCACHE1" + hashlib.sha256(payload).digest()
    else:
        head = nvcache.MAGIC + nvcache._mac(os.urandom(32), os.path.basename(target), payload)
    with open(target, "wb") as fh:
        fh.write(head + payload)


@pytest.mark.parametrize("fmt", [1, 2], ids=["bare-checksum", "mac-under-another-key"])
def test_a_planted_entry_is_not_run(dirs, fmt):
    # The planted code computes with SCALE = 2.0 where 3.0 is compiled.
    moddir, cachedir = dirs
    old, new = _two_entries(moddir, cachedir)
    _plant(old, new, fmt)
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (1, 0)
    np.testing.assert_allclose(out["result"], expected(3.0))


def test_an_entry_moved_into_another_key_s_slot_is_not_loaded(dirs):
    # Both are this user's own entries: the name under the MAC tells them
    # apart, before the linker is given the object (whose symbols carry the
    # key it was compiled for).
    moddir, cachedir = dirs
    old, new = _two_entries(moddir, cachedir)
    os.replace(old, new)
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (1, 0)
    np.testing.assert_allclose(out["result"], expected(3.0))


def _old_format(path):
    """Rewrites the entry at path as format 1 wrote it: a bare SHA-256."""
    import hashlib

    data = open(path, "rb").read()
    payload = data[len(nvcache.MAGIC) + 32:]
    with open(path, "wb") as fh:
        fh.write(b"NVCACHE1" + hashlib.sha256(payload).digest() + payload)


def test_an_entry_without_this_directory_s_mac_is_not_loaded(dirs, tmp_path):
    # An entry as someone without the key would write it: a bare checksum
    # (format 1's), or a MAC under another directory's key.
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    [first, second] = entry_paths(cachedir)
    _old_format(first)
    elsewhere = tmp_path / "elsewhere"
    run(moddir, elsewhere)
    os.replace(elsewhere / os.path.basename(second), second)
    assert nvcache.info(str(cachedir))["damaged"] == 2
    out = run(moddir, cachedir)
    assert (out["compilations"], out["object_loads"]) == (2, 0)
    assert out["warnings"] == []                  # damaged, not refused: recompiled quietly
    np.testing.assert_allclose(out["result"], expected())
    stats = nvcache.info(str(cachedir))
    assert (stats["entries"], stats["damaged"]) == (2, 0)


def test_the_mac_key_is_private_and_a_new_one_fails_every_entry(dirs):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    keyfile = cachedir / nvcache.KEY_FILE
    st = os.lstat(keyfile)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_size == 32 and st.st_uid == os.geteuid()
    keyfile.write_bytes(os.urandom(32))
    stats = nvcache.info(str(cachedir))
    assert (stats["entries"], stats["damaged"]) == (0, 2)
    out = run(moddir, cachedir)
    assert (out["compilations"], out["warnings"]) == (2, [])
    assert nvcache.info(str(cachedir))["entries"] == 2


def _symlink_to_a_copy(path):
    copy = str(path) + ".copy"
    os.replace(path, copy)
    os.symlink(copy, path)


def _fifo_instead(path):
    os.unlink(path)
    os.mkfifo(path)


KEY_FAULTS = {
    "group-readable": lambda path: os.chmod(path, 0o640),
    "other-readable": lambda path: os.chmod(path, 0o604),
    "group-writable": lambda path: os.chmod(path, 0o620),
    "symlink": _symlink_to_a_copy,
    "fifo": _fifo_instead,
    "short": lambda path: open(path, "r+b").truncate(16),
    "of-another-user": pytest.param(_give_to_nobody, marks=as_root),
}


@pytest.mark.parametrize("fault", KEY_FAULTS.values(), ids=KEY_FAULTS.keys())
def test_a_key_file_not_private_to_this_user_leaves_the_cache_unused(dirs, fault):
    moddir, cachedir = dirs
    write_module(moddir)
    run(moddir, cachedir)
    fault(cachedir / nvcache.KEY_FILE)
    before = _snapshot_entries(cachedir)
    out = run(moddir, cachedir, trapped=True)
    assert (out["compilations"], out["object_loads"]) == (2, 0)
    assert out["warnings"] == ["NumbavecCacheWarning"]
    np.testing.assert_allclose(out["result"], expected())
    assert _snapshot_entries(cachedir) == before      # nothing written either


def _snapshot_entries(cachedir):
    return {os.path.basename(p): open(p, "rb").read() for p in entry_paths(cachedir)}


AGREE = '''
import os, sys, time
sys.path.insert(0, {root!r})
from numbavec import cache
print("ready", flush=True)
while not os.path.exists({go!r}):
    pass
with cache._Root({cachedir!r}, create=True) as root:
    print(root.secret.hex())
'''


def test_processes_racing_to_make_the_key_agree_on_one(tmp_path):
    cachedir, go = tmp_path / "cache", tmp_path / "go"
    code = AGREE.format(root=ROOT, go=str(go), cachedir=str(cachedir))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    for p in procs:
        assert p.stdout.readline() == "ready\n"
    go.write_text("")
    keys = set()
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        keys.add(out.strip())
    assert keys == {(cachedir / nvcache.KEY_FILE).read_bytes().hex()}
    assert sorted(os.listdir(cachedir)) == [nvcache.KEY_FILE]     # no temporary file left


def test_the_loser_of_the_race_to_make_the_key_reads_the_winner_s(tmp_path):
    # What the processes above race through, with the outcome fixed: the key
    # file appears between this process finding none and linking its own.
    cachedir = tmp_path / "cache"
    cachedir.mkdir(mode=0o700)
    winner = os.urandom(32)
    (cachedir / nvcache.KEY_FILE).write_bytes(winner)
    os.chmod(cachedir / nvcache.KEY_FILE, 0o600)
    dirfd = os.open(cachedir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert nvcache._make_secret(dirfd) == winner
    finally:
        os.close(dirfd)
    assert sorted(os.listdir(cachedir)) == [nvcache.KEY_FILE]


ODD_NAMESPACE = '''
from numbavec import vectorize

class Odd:
    K = 2.0
    def __getattr__(self, name):        # only for names the class lacks
        raise RuntimeError("no such thing")

cfg = Odd()

@vectorize(['f8(f8, f8)'], cache=True)
def kern(x, y):
    return x * cfg.K + y
'''


def test_a_namespace_whose_getattr_raises_compiles_as_without_the_cache(dirs):
    # The compiler only reads cfg.K; asking cfg whether it is a device
    # function must not raise in key() either.
    moddir, cachedir = dirs
    write_module(moddir, body=ODD_NAMESPACE)
    out = run(moddir, cachedir)
    np.testing.assert_allclose(out["result"], 3 * np.linspace(0, 1, 5))
    assert run(moddir, cachedir)["object_loads"] == 1


CLOSURE_DEVICE = '''
import numbavec

def scaled_by(k):
    @numbavec.jit
    def scaled(x):
        return x * k
    return scaled

helper = scaled_by(2.0)

def kern(x, y):
    return helper(x) + y
'''


def test_a_device_function_s_closure_is_keyed(tmp_path):
    (tmp_path / "cdev.py").write_text(CLOSURE_DEVICE)
    mod = import_file(tmp_path / "cdev.py", f"cdev_{id(tmp_path)}")
    first = key_of(mod.kern)
    mod.helper = mod.scaled_by(3.0)             # the same source, another cell
    assert key_of(mod.kern) != first
    mod.helper = mod.scaled_by(2.0)
    assert key_of(mod.kern) == first


EMPTY_CELL = '''
k = 2.0

def make():
    def kern(x, y):
        return x * k + y
    return kern
    k = 0.0             # never runs: kern's cell for k stays empty
'''


def test_an_empty_closure_cell_is_keyed_as_the_global_the_compiler_reads(tmp_path):
    (tmp_path / "cell.py").write_text(EMPTY_CELL)
    mod = import_file(tmp_path / "cell.py", f"cell_{id(tmp_path)}")
    kern = mod.make()
    first = key_of(kern)
    mod.k = 3.0
    assert key_of(kern) != first


# ---- guvectorize: eager and dynamic gufuncs go through the same cache ----

GU_KERNEL = '''
import numpy as np
from numbavec import guvectorize

@guvectorize({sigs}, {layout!r}, target={target!r}, cache=True, boundscheck={boundscheck})
def kern(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0 + y[{index}]
'''

GU_RUN = '''
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
x = np.linspace(0, 1, 6).reshape(2, 3)
try:
    result = kmod.kern(x, x).tolist()       # a dynamic gufunc compiles here
    result += kmod.kern(x.astype(np.float32), x.astype(np.float32)).tolist()
except IndexError as e:
    result = "IndexError"
info = _core._jit_info()
print(json.dumps({{"compilations": info["compilations"], "object_loads": info["object_loads"],
                   "result": result, "types": kmod.kern.types,
                   "llvm": len(kmod.kern.inspect_llvm())}}))
'''


def run_gu(moddir, cachedir, sigs="[]", layout="(n),(n)->(n)", target="cpu",
           boundscheck=True, index="i"):
    write_module(moddir, body=GU_KERNEL, sigs=sigs, layout=layout, target=target,
                 boundscheck=boundscheck, index=index)
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", GU_RUN.format(moddir=str(moddir))], env=env,
                         cwd=str(moddir), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def gu_expected():
    x = np.linspace(0, 1, 6).reshape(2, 3)
    x32 = x.astype(np.float32)
    return (x * 2.0 + x).tolist() + (x32 * np.float32(2.0) + x32).tolist()


@pytest.mark.parametrize("sigs", ["[]", "['void(f8[:], f8[:], f8[:])', 'void(f4[:], f4[:], f4[:])']"])
def test_gufunc_cold_then_warm(dirs, target, sigs):
    moddir, cachedir = dirs
    cold = run_gu(moddir, cachedir, sigs=sigs, target=target)
    assert (cold["compilations"], cold["object_loads"]) == (2, 0)
    warm = run_gu(moddir, cachedir, sigs=sigs, target=target)
    assert (warm["compilations"], warm["object_loads"]) == (0, 2)     # no LLVM pass at all
    assert warm["result"] == cold["result"] == gu_expected()
    assert warm["types"] == cold["types"] == ["dd->d", "ff->f"]
    assert warm["llvm"] == 2


@pytest.mark.parametrize("change", [
    {"layout": "(n),(m)->(n)"},          # the same signatures, another layout
    {"boundscheck": False},              # the code without its bounds checks
    {"index": "i + 0"},                  # the source
])
def test_gufunc_each_key_part_misses(dirs, change):
    moddir, cachedir = dirs
    run_gu(moddir, cachedir)
    again = run_gu(moddir, cachedir, **change)
    assert (again["compilations"], again["object_loads"]) == (2, 0)


def test_gufunc_bounds_checks_are_not_loaded_from_an_entry_without_them(dirs):
    moddir, cachedir = dirs
    # y[i + 1] reads past the end: without checks the read goes unnoticed ...
    run_gu(moddir, cachedir, boundscheck=False, index="i + 1")
    # ... and with them the same source must raise, not load that code
    again = run_gu(moddir, cachedir, boundscheck=True, index="i + 1")
    assert again["result"] == "IndexError"


# ---- the cuda target: PTX through the same cache (no GPU needed) ----

CUDA_KERNEL = '''
from numbavec import vectorize

@vectorize({sigs}, target="cuda", cache=True)
def kern(x, y):
    return x * y + {const}
'''

CUDA_RUN = '''
import json, sys
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
info = _core._cuda_ptx_info()
print(json.dumps({{"compilations": info["compilations"], "loads": info["loads"],
                   "types": kmod.kern.types,
                   "ptx": [kmod.kern.inspect_ptx(t) for t in ("f8(f8, f8)", "f4(f4, f4)")]}}))
'''


def run_cuda(moddir, cachedir, sigs="['f8(f8, f8)', 'f4(f4, f4)']", const="1"):
    write_module(moddir, body=CUDA_KERNEL, sigs=sigs, const=const)
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", CUDA_RUN.format(moddir=str(moddir))], env=env,
                         cwd=str(moddir), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cuda_ufunc_cold_then_warm(dirs):
    """The cache is a layer of the compile driver: the cuda target's PTX is
    stored and taken back as the host's machine code is."""
    moddir, cachedir = dirs
    cold = run_cuda(moddir, cachedir)
    assert (cold["compilations"], cold["loads"]) == (2, 0)
    assert len(entry_paths(cachedir)) == 2
    warm = run_cuda(moddir, cachedir)
    assert (warm["compilations"], warm["loads"]) == (0, 2)
    assert warm["ptx"] == cold["ptx"] and warm["types"] == cold["types"] == ["dd->d", "ff->f"]
    changed = run_cuda(moddir, cachedir, const="2")       # the source is in the key
    assert (changed["compilations"], changed["loads"]) == (2, 0)
    assert changed["ptx"] != cold["ptx"]


# ---- every input of a compilation is in the key (issue 34, first fault) ----

# One kernel reading every kind of input compilation reads: a global, a
# closure cell, an attribute of a class and of a module, a device function (its source, a global it reads, its defaults, the device
# function it calls) and a numbavec ufunc (its loops, its source, a global it
# reads), under every option.  Each case changes one of them: the kernel
# must compile anew (not run the other's code), and compute what py_func does.
EVERY_INPUT = '''
import types
import numpy as np
import numbavec
from numbavec import vectorize

SCALE = {scale}

class Consts:
    OFFSET = {offset}

cfg = types.ModuleType("kcfg")
cfg.N = {cfg_n}

S, T = {default}, {kwdefault}

@numbavec.jit
def leaf(x):
    return x * {leaf}

@numbavec.jit
def helper(x, s=S, *, t=T):
    return leaf(x) + s + t + HG

HG = {helper_global}

IG = {inner_global}

@vectorize([{inner_sig}])
def inner(x):
    return x / {inner_body} + IG

def make():
    k = {cell}
    @vectorize({sigs}, target={target!r}, fastmath={fastmath}, identity={identity}, cache=True)
    def kern(x, y):   # {tag}
        return inner(x) * 3.0 - x + (SCALE + helper(y) + Consts.OFFSET + cfg.N + k) * 1e-3{extra}
    return kern

kern = make()
'''

EVERY_BASE = dict(scale="2.0", offset="0.5", cfg_n="1.0", default="1.0", kwdefault="0.25",
                  leaf="2.0", helper_global="0.125", inner_sig="'float64(float64)'",
                  inner_body="3.0", inner_global="0.0", cell="4.0", sigs="['f4(f4, f4)']",
                  target="cpu", fastmath="False", identity="None", extra="")

EVERY_CHANGE = {
    "global-value": {"scale": "3.0"},
    "global-type": {"scale": "np.float32(2.0)"},
    "closure-cell": {"cell": "5.0"},
    "class-attribute": {"offset": "0.75"},
    "module-attribute": {"cfg_n": "2.0"},
    "kernel-source": {"extra": " + 0.0"},
    "device-source": {"leaf": "3.0"},
    "device-global": {"helper_global": "0.5"},
    "device-default": {"default": "2.0"},
    "device-kwdefault": {"kwdefault": "0.5"},
    "ufunc-signature": {"inner_sig": "'float32(float32)'"},
    "ufunc-source": {"inner_body": "4.0"},
    "ufunc-global": {"inner_global": "0.125"},
    "fastmath-on": {"fastmath": "True"},
    "fastmath-off": ({"fastmath": "True"}, {"fastmath": "False"}),
    "identity": {"identity": "0"},
    "target": {"target": "parallel"},
    "signature": {"sigs": "['f8(f8, f8)']"},
}


def _jit_counts():
    from numbavec import _core

    info = _core._jit_info()
    return info["compilations"], info["object_loads"]


def _compiled(tmp_path, name, names):
    """(kern, compilations, loads) of kmod written with names and imported as
    name, its code made (by a call)."""
    (tmp_path / f"{name}.py").write_text(EVERY_INPUT.format(**names))
    before = _jit_counts()
    mod = import_file(tmp_path / f"{name}.py", name)
    x = np.linspace(0.1, 1, 7).astype(np.float32)
    out = mod.kern(x, x)
    after = _jit_counts()
    return mod.kern, out, after[0] - before[0], after[1] - before[1]


@pytest.mark.parametrize("case", EVERY_CHANGE)
def test_each_input_of_a_compilation_misses(tmp_path, monkeypatch, case):
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "cache"))
    change = EVERY_CHANGE[case]
    base, change = change if isinstance(change, tuple) else ({}, change)
    names = dict(EVERY_BASE, tag=f"{case} {tmp_path}", **base)
    name = f"every_{id(tmp_path)}"        # the same module, written again
    _compiled(tmp_path, name, names)
    kern, out, compiled, loaded = _compiled(tmp_path, name, dict(names, **change))
    assert (compiled, loaded) == (1, 0), "the changed kernel ran the other's code"
    x = np.linspace(0.1, 1, 7).astype(np.float32)
    if case not in ("fastmath-on",):
        want = kern.py_func(x.astype(out.dtype), x.astype(out.dtype))
        np.testing.assert_allclose(out, want, rtol=1e-6)
    if case == "ufunc-signature":
        # the float32 loop's rounding: what NumPy computes calling the new inner
        np.testing.assert_array_equal(out, want.astype(out.dtype))


def test_the_environment_of_every_key():
    """What no test can change here is in every key all the same."""
    text = nvcache._environment_text()
    from numbavec import __version__, _core

    for part in (f"numbavec={__version__}", f"llvm={_core.llvm_version}", "cpu=", "features=",
                 f"numpy={np.__version__}", "python=", "core="):
        assert part in text
    gpu = nvcache.function_key_text(None, "cuda", {})
    assert "toolkit=nvvm=" in gpu and "libdevice=" in gpu
    assert "toolkit=" not in nvcache.function_key_text(None, "cpu", {})


FASTMATH_KERNEL = '''
from numbavec import vectorize

@vectorize(["f8(f8)"], fastmath={fastmath}, cache=True)
def kern(x):
    return x * 0.0
'''

FASTMATH_RUN = '''
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
with np.errstate(invalid="ignore"):
    result = kmod.kern(np.float64([np.inf, 1.0])).tolist()
info = _core._jit_info()
print(json.dumps([info["compilations"], info["object_loads"], repr(result)]))
'''


def test_fastmath_is_in_the_key(dirs):
    """x * 0.0 at inf is NaN (NumPy's and py_func's answer); with fastmath
    (no NaN or inf assumed) LLVM folds it to 0.0.  Either entry in the cache
    must not be loaded for the other."""
    moddir, cachedir = dirs
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def fresh(fastmath):
        write_module(moddir, body=FASTMATH_KERNEL, fastmath=fastmath)
        out = subprocess.run([sys.executable, "-c", FASTMATH_RUN.format(moddir=str(moddir))],
                             env=env, cwd=str(moddir), capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        return tuple(json.loads(out.stdout.strip().splitlines()[-1]))

    assert fresh(False) == (1, 0, "[nan, 0.0]")
    assert fresh(True) == (1, 0, "[0.0, 0.0]")
    assert fresh(False) == (0, 1, "[nan, 0.0]")
    assert fresh(True) == (0, 1, "[0.0, 0.0]")


INNER_SIGNATURE = '''
import numpy as np
from numbavec import vectorize

@vectorize([{inner_sig}])
def inner(x):
    return x / 3.0

@vectorize(["f4(f4)"], cache=True)
def kern(x):
    return inner(x) * 3.0 - x
'''

INNER_RUN = '''
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import kmod
from numbavec import _core
x = np.linspace(0.1, 1, 7).astype(np.float32)
ok = np.array_equal(kmod.kern(x), kmod.kern.py_func(x))
info = _core._jit_info()
print(json.dumps([info["compilations"], info["object_loads"], ok]))
'''


def test_a_called_ufunc_s_signatures_are_in_the_key(dirs):
    """inner's loop decides the precision of its inlined call: float32
    instead of float64 must not load the float64 code."""
    moddir, cachedir = dirs
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def fresh(inner_sig):
        write_module(moddir, body=INNER_SIGNATURE, inner_sig=inner_sig)
        out = subprocess.run([sys.executable, "-c", INNER_RUN.format(moddir=str(moddir))],
                             env=env, cwd=str(moddir), capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert fresh("'float64(float64)'")[1:] == [0, True]
    compiled, loaded, ok = fresh("'float32(float32)'")
    assert (loaded, ok) == (0, True) and compiled >= 1


GU_EVERY = '''
import numpy as np
from numbavec import guvectorize

@guvectorize(["void(f8[:], f8[:], f8[:])"], {layout!r}, writable_args={writable},
             boundscheck={boundscheck}, fastmath={fastmath}, cache=True)
def gkern(a, b, out):    # {tag}
    for i in range(a.shape[0]):
        out[i] = a[i] * 0.0 + b[0]
'''

GU_CHANGE = {
    "layout": {"layout": "(n),(m)->(n)"},
    "writable_args": {"writable": "(1,)"},
    "boundscheck": {"boundscheck": "False"},
    "fastmath": {"fastmath": "True"},
}


@pytest.mark.parametrize("case", GU_CHANGE)
def test_each_gufunc_option_misses(tmp_path, monkeypatch, case):
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "cache"))
    names = dict(layout="(n),(n)->(n)", writable="()", boundscheck="True", fastmath="False",
                 tag=f"{case} {tmp_path}")
    counts = []
    for more in ({}, GU_CHANGE[case]):
        path = tmp_path / f"gevery_{id(tmp_path)}.py"
        path.write_text(GU_EVERY.format(**dict(names, **more)))
        before = _jit_counts()
        mod = import_file(path, path.stem)
        mod.gkern(np.ones(3), np.ones(3))
        after = _jit_counts()
        counts.append((after[0] - before[0], after[1] - before[1]))
    assert counts[1] == (1, 0)
