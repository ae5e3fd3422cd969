"""The built extension: abi3 file name, LLVM linked in statically, the
LLVM version it reports, and ``python -m numbavec --sysinfo``."""
import os
import shutil
import subprocess
import sys

import pytest

import numbavec
from numbavec import _core

PKG_DIR = os.path.dirname(os.path.abspath(numbavec.__file__))
PKG_PARENT = os.path.dirname(PKG_DIR)


def in_source_checkout():
    """True when numbavec is imported from a source tree (in-place build),
    where NUMBAVEC_LLVM_SHARED=1 or NUMBAVEC_DEBUG=1 builds are usual."""
    return os.path.exists(os.path.join(PKG_PARENT, "setup.py"))


def test_extension_is_abi3():
    assert os.path.basename(_core.__file__).endswith(".abi3.so"), _core.__file__


def test_installed_package_is_tested():
    # .ci/install-and-test sets this: the suite must not pick up the
    # source tree's numbavec/ (which has no built _core there).
    if not os.environ.get("NUMBAVEC_TEST_INSTALLED"):
        pytest.skip("NUMBAVEC_TEST_INSTALLED is not set")
    assert not in_source_checkout(), f"numbavec imported from {PKG_DIR}"


@pytest.mark.skipif(shutil.which("ldd") is None, reason="ldd not found")
def test_no_llvm_at_run_time():
    if in_source_checkout():
        pytest.skip("in-place build (may use NUMBAVEC_LLVM_SHARED=1)")
    out = subprocess.run(["ldd", _core.__file__], capture_output=True, text=True,
                         check=True).stdout
    assert "libLLVM" not in out, out
    assert "not found" not in out, out


def test_llvm_version():
    version = _core.llvm_version
    major = int(version.split(".")[0])
    assert 17 <= major <= 20, version


def test_sysinfo_command(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (PKG_PARENT, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "numbavec", "--sysinfo"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _core.llvm_version in proc.stdout
    assert "cpu" in proc.stdout and "parallel" in proc.stdout


def test_help_command(tmp_path):
    env = dict(os.environ, PYTHONPATH=PKG_PARENT)
    proc = subprocess.run([sys.executable, "-m", "numbavec", "--help"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--sysinfo" in proc.stdout


def test_the_oldest_numpy_is_named_alike_everywhere():
    """pyproject's requirement, the oldest NumPy CI tests and the README
    name one version (they once said 2.1, 2.0 and nothing)."""
    import re

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(checkout, "pyproject.toml")):
        pytest.skip("tests outside their checkout")

    def read(*parts):
        with open(os.path.join(checkout, *parts)) as fh:
            return fh.read()

    required = re.search(r'dependencies = \["numpy>=([0-9.]+)"\]', read("pyproject.toml")).group(1)
    tested = re.search(r'OLDEST_NUMPY="numpy==([0-9.]+)\.\*"', read(".ci", "install-and-test"))
    assert tested.group(1) == required
    readme = read("README.md")
    assert f"NumPy {required})" in readme and f"NumPy >= {required}" in readme


def test_no_argument_format_takes_a_length():
    """The wheel is abi3 for CPython 3.10 and later, whatever builds it;
    built against 3.13's headers, PyArg_Parse* and Py_BuildValue refuse
    '#' formats (s#, y#, ...) on 3.10-3.12 with SystemError, whatever
    PY_SSIZE_T_CLEAN says."""
    import glob
    import re

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = glob.glob(os.path.join(checkout, "src", "**", "*.c"), recursive=True)
    if not sources:
        pytest.skip("tests outside their checkout")
    call = re.compile(r'(PyArg_Parse\w*|Py_BuildValue|PyObject_Call(Function|Method)\w*)'
                      r'\s*\([^"]*"([^"]*)"')
    found = []
    for path in sources:
        with open(path) as fh:
            for m in call.finditer(fh.read()):
                if "#" in m.group(3):
                    found.append(f"{os.path.relpath(path, checkout)}: {m.group(1)} \"{m.group(3)}\"")
    assert not found, found


def test_the_numbavec_command(tmp_path):
    """`numbavec -s`, the console script (as `numba -s`), where installed."""
    if not os.environ.get("NUMBAVEC_TEST_INSTALLED"):
        pytest.skip("the console script is made when the package is installed (CI)")
    script = os.path.join(os.path.dirname(sys.executable), "numbavec")
    proc = subprocess.run([script, "-s"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("numbavec system information")
    assert _core.llvm_version in proc.stdout


def test_the_demo_shows_its_kernel_and_the_next_steps(tmp_path):
    env = dict(os.environ, PYTHONPATH=PKG_PARENT)
    proc = subprocess.run([sys.executable, "-m", "numbavec"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "def gaussian_pdf(x, mean, sigma):" in out and "np.exp(" in out
    for row in ("NumPy expression", "numbavec 'cpu'", "numbavec 'parallel'"):
        assert row in out
    assert "DISAGREES" not in out
    try:
        import numba
        assert "Numba @vectorize 'cpu'" in out
        # the Numba row says what it is
        assert f"the Numba row: Numba {numba.__version__}'s @vectorize of the same " in out
    except ImportError:
        assert "pip install numba" in out
    assert out.rstrip().splitlines()[-4] == "Next:" and "numbavec -s" in out
    if not numbavec.cuda.is_available() and "libcuda" in out:
        # the missing driver is said once, not on two lines
        assert sum("libcuda.so.1" in line for line in out.splitlines()) == 1


def test_the_benchmark_pictures(tmp_path):
    """benchmarks/plot.py draws speed-up over NumPy against N from a run's
    results: a valid SVG with a line per implementation."""
    import importlib.util
    import xml.etree.ElementTree as ET

    plot = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "benchmarks", "plot.py")
    if not os.path.exists(plot):
        pytest.skip("tests outside their checkout")
    spec = importlib.util.spec_from_file_location("nv_bench_plot", plot)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    results = [{"kernel": "saxpy", "impl": impl, "n": n, "t_out": t * n, "t_alloc": 2 * t * n}
               for n in (1000, 100000) for impl, t in
               (("NumPy", 2.0), ("numbavec cpu", 1.0), ("Numba cpu", 1.5))]
    paths = mod.write_pictures(results, str(tmp_path / "run"))
    assert sorted(os.path.basename(p) for p in paths) == ["run-saxpy-alloc.svg",
                                                          "run-saxpy-out.svg"]
    root = ET.parse(paths[0]).getroot()
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 3
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"NumPy", "numbavec cpu", "Numba cpu"} <= set(texts)



def run_cli(tmp_path, *args, pythonpath=PKG_PARENT):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-m", "numbavec", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_version_and_the_system_summary_as_json(tmp_path):
    import json

    proc = run_cli(tmp_path, "--version")
    assert proc.returncode == 0 and proc.stdout == f"numbavec {numbavec.__version__}\n"
    for args in (["-s", "--json"], ["--json"]):
        proc = run_cli(tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
        info = json.loads(proc.stdout)
        assert info["llvm_version"] == _core.llvm_version
        assert info["numbavec"] == numbavec.__version__
        assert info["num_threads"] == numbavec.get_num_threads()


def test_a_source_checkout_without_its_extension_says_so(tmp_path):
    """Importing numbavec/ of a checkout that was never built names the
    checkout and what to do, not a circular import."""
    src = tmp_path / "checkout"
    shutil.copytree(PKG_DIR, src / "numbavec",
                    ignore=shutil.ignore_patterns("_core.*", "__pycache__"))
    (src / "setup.py").write_text("")
    proc = run_cli(tmp_path, "--version", pythonpath=str(src))
    assert proc.returncode != 0
    assert (f"numbavec: you are importing the source checkout at {src}, which has no built "
            "extension") in proc.stderr, proc.stderr
    assert "install it (pip install .)" in proc.stderr and "circular" not in proc.stderr


def test_the_demo_kernel_cites_what_exists():
    from numbavec import sysinfo

    doc = sysinfo.gaussian_pdf.__doc__
    assert "EXAMPLES.md" not in doc and "benchmarks/bench_vectorize.py" in doc


def test_the_readme_picture(tmp_path):
    """plot.py --readme: saxpy and the Gaussian pdf side by side, the
    implementations the README compares, the machine and date under them."""
    import json
    import xml.etree.ElementTree as ET

    plot = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "benchmarks", "plot.py")
    if not os.path.exists(plot):
        pytest.skip("tests outside their checkout")
    impls = [("NumPy", 2.0), ("numbavec cpu", 1.0), ("numbavec parallel", 0.5),
             ("Numba cpu", 1.5), ("Numba parallel", 1.2), ("C loop", 1.0)]
    run = {"date": "2026-11-27", "load": [0.1, 0.2], "numba": "0.68.1",
           "sysinfo": {"cpu_model": "Test CPU", "num_threads": 4, "numpy": "2.4.0"},
           "throughput": [{"kernel": k, "impl": impl, "n": n, "t_out": t * n}
                          for k in ("saxpy", "gaussian_pdf") for n in (1000, 100000)
                          for impl, t in impls]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    out = tmp_path / "readme.svg"
    proc = subprocess.run([sys.executable, plot, "--readme", str(out), str(tmp_path / "run.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out).getroot()
    svg = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{svg}svg")) == 2                      # two panels
    assert len(list(root.iter(f"{svg}polyline"))) == 10             # 5 lines each, no C loop
    texts = [t.text for t in root.iter(f"{svg}text")]
    assert "Test CPU, 4 threads; NumPy 2.4.0, Numba 0.68.1; measured 2026-11-27" in texts
