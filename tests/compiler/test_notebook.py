"""A TypingError in a kernel defined in a notebook names the cell as
IPython's own tracebacks do, ``Cell In[4], line 5`` (issue 38), not the
cell's temporary file (ipykernel's /tmp/ipykernel_<pid>/<hash>.py): through
IPython's InteractiveShell, and in a real notebook run by nbclient."""
import json
import os
import re

import pytest

from conftest import run_python

CELLS = [
    "import numpy as np\nimport numbavec",
    "x = np.arange(4.0)",
    # cell 3: decorated with a signature, so it compiles (and fails) here
    "@numbavec.vectorize(['f8(f8)'])\n"
    "def bad(x):\n"
    "    y = [1, 2]\n"
    "    return x + y",
    # cell 4: lazy, compiled (and failing) at its first call in cell 5
    "@numbavec.vectorize\n"
    "def lazy_bad(x):\n"
    "    return x + 'a'",
    "lazy_bad(x)",
    # cell 6: a good kernel still compiles and runs
    "@numbavec.vectorize(['f8(f8)'])\n"
    "def good(x):\n"
    "    return x + 1\n"
    "print(good(x).tolist())",
]


def test_interactive_shell_names_the_cell():
    pytest.importorskip("IPython")
    code = ("import json\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "shell = InteractiveShell.instance()\n"
            f"cells = {CELLS!r}\n"
            "out = []\n"
            "for cell in cells:\n"
            "    r = shell.run_cell(cell, store_history=True)\n"
            "    e = r.error_in_exec or r.error_before_exec\n"
            "    out.append(None if e is None else [type(e).__name__, str(e)])\n"
            "print('RESULT', json.dumps(out))\n")
    r = run_python(code, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.split("RESULT ", 1)[1])
    check(out)


def check(errors):
    assert errors[:2] == [None, None]
    name, text = errors[2]
    assert name == "TypingError"
    assert text.startswith("Cell In[3], line 3: list displays are not supported"), text
    assert "    y = [1, 2]\n" in text and text.endswith("^")
    assert errors[3] is None
    name, text = errors[4]
    assert name == "TypingError" and text.startswith("Cell In[4], line 3: "), text
    assert errors[5] is None
    assert not re.search(r"ipykernel_|ipython-input", "".join(str(e) for e in errors))


def test_a_real_notebook_names_the_cell(tmp_path):
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    code = ("import json, sys, nbformat\n"
            "from nbclient import NotebookClient\n"
            f"cells = {CELLS!r}\n"
            "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])\n"
            "nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3',\n"
            "                             'language': 'python'}\n"
            "NotebookClient(nb, timeout=240, allow_errors=True, kernel_name='python3').execute()\n"
            "out = []\n"
            "for cell in nb.cells:\n"
            "    errs = [o for o in cell.outputs if o.output_type == 'error']\n"
            "    out.append([errs[0].ename, errs[0].evalue] if errs else None)\n"
            "prints = [o.text for o in nb.cells[5].outputs if o.output_type == 'stream']\n"
            "print('RESULT', json.dumps([out, prints, sys.executable]))\n")
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1")
    r = run_python(code, env=env, timeout=400)
    if r.returncode != 0 and "No such kernel" in r.stderr:
        pytest.skip("no python3 kernel for this interpreter")
    assert r.returncode == 0, r.stderr[-3000:]
    errors, prints, _ = json.loads(r.stdout.split("RESULT ", 1)[1])
    check(errors)
    assert prints == ["[1.0, 2.0, 3.0, 4.0]\n"]
