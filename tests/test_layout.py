"""The shape of the source tree (issue 35): no file in src/ or numbavec/ over
1,500 lines, and every ``#include "..."`` in src/ going down the layers
that docs/DESIGN-NOTES.md ("Layers and the include direction") draws:

    module.c, api.c             the _core entry points
    targets/                    cpu, parallel, cuda: register themselves
    gufunc/                     may use vectorize/'s shared lazy backend ...
    vectorize/                  ... never the reverse
    host/                       the target interface, quick-code budget, pool
    compiler/                   (compiler/arrays/ included)
    typesig/
    common.h

and inside targets/cuda/: its root files (cuda.h, cudamodule.c) over
ufunc/, which may use codegen/, array/ and driver/; codegen/ and array/
use only driver/; driver/ uses none of them.

A file may include what is in its own layer or below.  Where the code does
not keep a rule yet, the exception is named below with its reason; an
exception that no longer happens fails too, so that it is removed when the
work that ends it lands.  The tree is read from the checkout (the tests'
parent folder), so this runs against the installed package as well.
"""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAX_LINES = 1500

# file -> why it may be longer for now
SIZE_EXCEPTIONS = {}   # a file past the limit while its split is in flight: path -> why

# the layers, top to bottom: (name, path prefixes relative to src/)
LAYERS = [
    ("entry", ["module.c", "api.c", "api.h"]),
    ("targets", ["targets/"]),
    ("gufunc", ["gufunc/"]),
    ("vectorize", ["vectorize/"]),
    ("host", ["host/"]),
    ("compiler", ["compiler/"]),
    ("typesig", ["typesig/"]),
    ("common", ["common.h"]),
]

# inside targets/cuda/: the folder of a file ("" for its root) -> what it may include
CUDA_MAY_USE = {
    "": {"", "ufunc", "codegen", "array", "driver"},
    "ufunc": {"ufunc", "codegen", "array", "driver"},
    "codegen": {"codegen", "driver"},
    "array": {"array", "driver"},
    "driver": {"driver"},
}

# (including file, included file), both relative to src/ -> why, for now
INCLUDE_EXCEPTIONS = {}   # (includer, included) -> why, while an upward include is mended

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

pytestmark = pytest.mark.skipif(not SRC.is_dir(), reason="no src/ beside tests/")


def layer_of(rel):
    """The index in LAYERS (0 is the top) of a path relative to src/."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in prefixes):
            return index
    raise AssertionError(f"src/{rel} is in no layer: add its folder to LAYERS in "
                         "tests/test_layout.py and to docs/DESIGN-NOTES.md's layers")


def cuda_part(rel):
    """The folder of targets/cuda/ a path is in ("" for the root), or None."""
    if not rel.startswith("targets/cuda/"):
        return None
    rest = rel[len("targets/cuda/"):]
    return rest.split("/")[0] if "/" in rest else ""


def upward(includer, included):
    """Why including `included` from `includer` (both relative to src/)
    goes up, or None where it goes down or across its own layer."""
    a, b = layer_of(includer), layer_of(included)
    if b < a:
        return f"{LAYERS[a][0]} includes {LAYERS[b][0]}, a layer above it"
    ca, cb = cuda_part(includer), cuda_part(included)
    if ca is not None and cb is not None:
        allowed = CUDA_MAY_USE.get(ca)
        if allowed is None or cb not in allowed:
            return f"targets/cuda/{ca or '.'} may not use targets/cuda/{cb or '.'}"
    return None


def source_files():
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h", ".cpp"))


def resolve(path, name):
    """A quoted include as the compiler finds it: beside the file, then in
    src/ (setup.py's include_dirs); None where neither holds it."""
    for base in (path.parent, SRC):
        found = (base / name).resolve()
        if found.is_file():
            return found.relative_to(SRC.resolve()).as_posix()
    return None


def includes():
    """(includer, included) for every quoted include in src/."""
    pairs = []
    for path in source_files():
        rel = path.relative_to(SRC).as_posix()
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            target = resolve(path, name)
            assert target is not None, f"src/{rel}: #include \"{name}\" is not in src/"
            pairs.append((rel, target))
    return pairs


def test_no_file_over_1500_lines():
    over, stale = [], []
    for folder in ("src", "numbavec"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".c", ".h", ".cpp", ".py", ".pyi"):
                continue
            rel = path.relative_to(ROOT).as_posix()
            n = len(path.read_text(errors="replace").splitlines())
            if n > MAX_LINES and rel not in SIZE_EXCEPTIONS:
                over.append(f"{rel}: {n} lines")
            if n <= MAX_LINES and rel in SIZE_EXCEPTIONS:
                stale.append(f"{rel} is {n} lines now: remove it from SIZE_EXCEPTIONS")
    assert not over, "split these along their seams (STYLE.md: files <= 1,500 lines):\n" + \
        "\n".join(over)
    assert not stale, "\n".join(stale)
    missing = [f for f in SIZE_EXCEPTIONS if not (ROOT / f).exists()]
    assert not missing, f"SIZE_EXCEPTIONS names files that are gone: {missing}"


def test_includes_go_down_the_layers():
    pairs = includes()
    assert len(pairs) > 100          # the walk found the tree
    wrong, used = [], set()
    for includer, included in pairs:
        why = upward(includer, included)
        if why is None:
            continue
        if (includer, included) in INCLUDE_EXCEPTIONS:
            used.add((includer, included))
            continue
        wrong.append(f"src/{includer} -> {included}: {why}")
    assert not wrong, "includes going up the layers (docs/DESIGN-NOTES.md):\n" + "\n".join(wrong)
    stale = sorted(set(INCLUDE_EXCEPTIONS) - used)
    assert not stale, f"no longer included upward: remove from INCLUDE_EXCEPTIONS: {stale}"


@pytest.mark.parametrize("includer, included, up", [
    ("compiler/jit.c", "compiler/compiler.h", False),
    ("compiler/arrays/views.c", "compiler/arrays/arrays.h", False),
    ("compiler/jit.c", "vectorize/vectorize.h", True),
    ("compiler/jit.c", "host/host.h", True),
    ("typesig/types.c", "compiler/compiler.h", True),
    ("gufunc/call.c", "vectorize/vectorize.h", False),
    ("vectorize/dufunc.c", "gufunc/gufunc.h", True),
    ("vectorize/vectorize.c", "host/host.h", False),
    ("targets/cpu.c", "gufunc/gufunc.h", False),
    ("host/pool.c", "targets/target.h", True),
    ("api.c", "targets/cuda/cuda.h", False),
    ("targets/cuda/ufunc/cufunc.c", "targets/cuda/driver/driver.h", False),
    ("targets/cuda/ufunc/ufunc.h", "targets/cuda/array/array.h", False),
    ("targets/cuda/array/array.h", "targets/cuda/driver/driver.h", False),
    ("targets/cuda/array/interop.c", "targets/cuda/ufunc/ufunc.h", True),
    ("targets/cuda/codegen/ptx.c", "targets/cuda/array/array.h", True),
    ("targets/cuda/driver/launch.c", "targets/cuda/codegen/codegen.h", True),
    ("targets/cuda/driver/launch.c", "targets/cuda/cuda.h", True),
    ("targets/cuda/cudamodule.c", "targets/cuda/ufunc/ufunc.h", False),
    ("targets/cuda/driver/staging.c", "host/pool.h", False),
])
def test_the_rule_itself(includer, included, up):
    """The rule the walk applies, on pairs that keep it and pairs that break it."""
    assert (upward(includer, included) is not None) == up


def test_a_file_outside_every_layer_is_refused():
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("runtime/new.c")
