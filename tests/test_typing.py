"""The typed API (PEP 561): numbavec ships py.typed and stubs, and a user
script with the README's examples passes ``mypy --strict``: the decorated
objects are numpy.ufuncs (with numbavec's introspection) on cpu and
parallel, numbavec.cuda.CUDAUFunc/CUDAGUFunc on cuda."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import numbavec

pytestmark = pytest.mark.slow  # mypy --strict over the stubs and an example

HERE = Path(__file__).parent


def test_the_package_ships_its_types():
    root = Path(numbavec.__file__).parent
    for name in ("py.typed", "__init__.pyi", "cuda/__init__.pyi"):
        assert (root / name).is_file(), name


def run_mypy(tmp_path, *files):
    pytest.importorskip("mypy")
    # the package as the interpreter finds it: installed, mypy finds it in
    # site-packages through py.typed (PEP 561); a checkout, through MYPYPATH
    root = Path(numbavec.__file__).parent.parent
    env = dict(os.environ)
    if root.name not in ("site-packages", "dist-packages"):
        env["MYPYPATH"] = str(root)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), *map(str, files)],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)


def test_readme_examples_pass_mypy_strict(tmp_path):
    out = run_mypy(tmp_path, HERE / "typing" / "readme_examples.py")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_types_are_the_targets_objects(tmp_path):
    script = tmp_path / "reveal.py"
    script.write_text(
        "import numpy as np\n"
        "import numbavec\n"
        "f = numbavec.vectorize(['f8(f8)'])(lambda x: x)\n"
        "g = numbavec.vectorize(lambda x: x)\n"
        "c = numbavec.vectorize(['f4(f4)'], target='cuda')(lambda x: x)\n"
        "u = numbavec.guvectorize(['void(f8[:], f8[:])'], '(n)->()')(lambda a, o: None)\n"
        "cu = numbavec.guvectorize('(n)->()', target='gpu')(lambda a, o: None)\n"
        "ok: np.ufunc = f\n"
        "reveal_type(f)\nreveal_type(g)\nreveal_type(c)\nreveal_type(u)\nreveal_type(cu)\n"
        "f.no_such_attribute\n")
    out = run_mypy(tmp_path, script)
    revealed = [line.split("Revealed type is ")[1].strip('"')
                for line in out.stdout.splitlines() if "Revealed type" in line]
    assert revealed == ["numbavec.UFunc", "numbavec.LazyUFunc", "numbavec.cuda.CUDAUFunc",
                        "numbavec.UFunc", "numbavec.cuda.CUDAGUFunc"]
    assert '"UFunc" has no attribute "no_such_attribute"' in out.stdout


@pytest.mark.parametrize("module", ["numbavec", "numbavec.cuda"])
def test_the_stubs_declare_every_public_name(module):
    """A name the package exports but its stub does not declare would be an
    error for every typed user of it."""
    import ast
    import importlib

    mod = importlib.import_module(module)
    stub = Path(mod.__file__).with_suffix(".pyi")
    declared = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            declared.update(a.asname or a.name for a in node.names)
    missing = [name for name in mod.__all__ if name not in declared]
    assert missing == []


def run_pyright(tmp_path, *files):
    """pyright in strict mode (pip's pyright wrapper; skipped without it)."""
    pytest.importorskip("pyright")
    root = Path(numbavec.__file__).parent.parent
    extra = [] if root.name in ("site-packages", "dist-packages") else [str(root)]
    (tmp_path / "pyrightconfig.json").write_text(
        '{"typeCheckingMode": "strict", "reportUnusedImport": false, "extraPaths": %s}'
        % str(extra).replace("'", '"'))
    out = subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, *map(str, files)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if "error" not in out.stdout and out.returncode != 0:
        pytest.skip(f"pyright did not run: {out.stdout[-500:]}{out.stderr[-500:]}")
    return out


def test_readme_examples_pass_pyright_strict(tmp_path):
    script = tmp_path / "readme_examples.py"
    script.write_text((HERE / "typing" / "readme_examples.py").read_text())
    out = run_pyright(tmp_path, script)
    assert out.returncode == 0, out.stdout + out.stderr


# What each spelling is at run time, as both checkers must type it: an
# options-only decoration is lazy; a target in a str variable is either kind.
REVEAL = """\
import numbavec

def k(x: float) -> float:
    return x

def make(t: str) -> None:
    reveal_type(numbavec.vectorize()(k))
    reveal_type(numbavec.vectorize(target="parallel")(k))
    reveal_type(numbavec.vectorize(target="cuda")(k))
    reveal_type(numbavec.vectorize(k, target=t))
    reveal_type(numbavec.vectorize(["f8(f8)"], target=t)(k))
    reveal_type(numbavec.vectorize(target=t)(k))
    reveal_type(numbavec.guvectorize("(n)->()", target=t)(k))
    reveal_type(numbavec.guvectorize(["void(f8[:], f8[:])"], "(n)->()", target=t)(k))
    reveal_type(numbavec.cache.clear())
    reveal_type(numbavec.cache.info()["functions"])
    numbavec.vectorize(target="parallel")(k).add("f8(f8)")
"""
EXPECTED = ["LazyUFunc", "LazyUFunc", "CUDAUFunc", "LazyUFunc | CUDAUFunc", "UFunc | CUDAUFunc",
            "LazyUFunc | CUDAUFunc", "LazyUFunc | CUDAGUFunc", "UFunc | CUDAGUFunc", "int",
            "dict[str, int]"]


def short(revealed):
    return revealed.replace("numbavec.cuda.", "").replace("numbavec.", "") \
        .replace("builtins.", "")


def test_options_only_and_str_targets_type_as_they_run_mypy(tmp_path):
    script = tmp_path / "reveal.py"
    script.write_text(REVEAL)
    out = run_mypy(tmp_path, script)
    revealed = [short(line.split("Revealed type is ")[1].strip('"'))
                for line in out.stdout.splitlines() if "Revealed type" in line]
    assert revealed == EXPECTED, out.stdout
    assert "error" not in out.stdout.replace("Found 0 errors", ""), out.stdout


def test_options_only_and_str_targets_type_as_they_run_pyright(tmp_path):
    script = tmp_path / "reveal.py"
    script.write_text(REVEAL)
    out = run_pyright(tmp_path, script)
    revealed = [short(line.split(' is "')[1].rstrip('"'))
                for line in out.stdout.splitlines() if "information: Type of" in line]
    assert revealed == EXPECTED, out.stdout
    assert " error:" not in out.stdout, out.stdout


def test_ufunc_and_lazyufunc_tell_numbavecs_ufuncs_apart():
    """At run time the names are isinstance checks: np.add is neither."""
    import numpy as np

    def k(a, o):
        o[0] = a[0]

    eager = numbavec.vectorize(["f8(f8)"])(lambda x: x + 1)
    lazy = numbavec.vectorize(lambda x: x + 1)
    dynamic = numbavec.guvectorize("(n)->()")(k)
    gufunc = numbavec.guvectorize(["void(f8[:], f8[:])"], "(n)->()")(k)
    for obj, is_ufunc, is_lazy in [(np.add, False, False), (np.matmul, False, False),
                                   (eager, True, False), (gufunc, True, False),
                                   (lazy, True, True), (dynamic, True, True), (k, False, False)]:
        assert isinstance(obj, numbavec.UFunc) == is_ufunc, obj
        assert isinstance(obj, numbavec.LazyUFunc) == is_lazy, obj
    assert issubclass(numbavec.LazyUFunc, numbavec.UFunc)
    assert not issubclass(np.ufunc, numbavec.UFunc)
    np.testing.assert_array_equal(lazy(np.arange(3.0)), [1, 2, 3])
