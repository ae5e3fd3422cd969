"""Every Python block of the README runs as written, alone, in a fresh
interpreter (issue 38): a reader copies one block, not the page.  A block
importing a package this machine lacks (xarray, pandas) is skipped."""
import ast
import importlib.util
import re
from pathlib import Path

import pytest

from conftest import run_python

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks():
    if not README.is_file():
        return []
    text = README.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


def missing_imports(code):
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


BLOCKS = python_blocks()


def test_the_readme_has_its_blocks():
    if not README.is_file():
        pytest.skip("no README beside the tests (an installed package alone)")
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_a_readme_block_runs_alone(line, code, tmp_path):
    missing = missing_imports(code)
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    r = run_python(code, as_file=True, timeout=600)
    assert r.returncode == 0, f"README.md line {line}:\n{code}\n{r.stderr[-3000:]}"
