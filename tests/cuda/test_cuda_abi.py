"""src/targets/cuda/driver/drvapi.h declares the part of the CUDA driver API we call,
so that building needs no CUDA header.  Here it is checked against the
toolkit's own cuda.h, where one is installed: every enum value, the layout
of every struct we pass, and the versioned symbol (``_v2``) each entry point
resolves -- the mistakes that would otherwise show only on a GPU."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
DRIVER_H = SRC / "targets" / "cuda" / "driver" / "drvapi.h"
CUDA_H = next((Path(p) / "include" / "cuda.h" for p in
               (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
               if p and (Path(p) / "include" / "cuda.h").exists()), None)
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(not (DRIVER_H.exists() and CUDA_H and CC),
                                reason="needs the sources, the CUDA toolkit's cuda.h and a C compiler")

# entry points whose newest version the header names, where we call the
# older one, which every driver since CUDA 11.2 exports with this signature
# (cuEventElapsedTime_v2 needs a CUDA 12.8 driver; the header keeps the
# first version's declaration, same parameters)
OLDER_ON_PURPOSE = {"cuEventElapsedTime"}

STRUCTS = {
    "CUDA_MEMCPY2D": ["srcXInBytes", "srcY", "srcMemoryType", "srcHost", "srcDevice", "srcArray",
                      "srcPitch", "dstXInBytes", "dstY", "dstMemoryType", "dstHost", "dstDevice",
                      "dstArray", "dstPitch", "WidthInBytes", "Height"],
    "CUmemPoolProps": ["allocType", "handleTypes", "location", "location.type", "location.id",
                       "win32SecurityAttributes", "maxSize", "usage", "reserved"],
}


def declared():
    text = DRIVER_H.read_text()
    enums = re.findall(r"\b((?:CUDA|CU)_[A-Z0-9_]+) = (\d+)", text)
    entries = re.findall(r'X\((\w+), "(\w+)"', text)
    return enums, entries


def run_c(tmp_path, name, source, include):
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    exe = tmp_path / name
    r = subprocess.run([CC, "-std=c11", f"-I{include}", str(c), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def layout_lines(size_only_for):
    lines = []
    for struct, fields in STRUCTS.items():
        if struct not in size_only_for:
            lines.append(f'printf("sizeof:{struct} %zu\\n", sizeof({struct}));')
        for f in fields:
            lines.append(f'printf("{struct}.{f} %zu %zu\\n", offsetof({struct}, {f}), '
                         f'sizeof((({struct} *)0)->{f}));')
    return lines


def test_driver_h_matches_the_toolkit(tmp_path):
    enums, entries = declared()
    assert len(enums) > 15 and len(entries) > 30
    # ours: reserved is deliberately longer, so CUmemPoolProps' size differs
    ours = run_c(tmp_path, "ours", "\n".join([
        "#include <stddef.h>", "#include <stdio.h>", '#include "targets/cuda/driver/drvapi.h"',
        "int main(void) {",
        *[f'printf("{n} %d\\n", (int){n});' for n, _ in enums],
        *layout_lines({"CUmemPoolProps"}),
        "return 0; }"]), SRC)
    theirs = run_c(tmp_path, "theirs", "\n".join([
        "#include <stddef.h>", "#include <stdio.h>", "#include <cuda.h>",
        "#define STR(x) #x", "#define XSTR(x) STR(x)",
        "int main(void) {",
        *[f'printf("{n} %d\\n", (int){n});' for n, _ in enums],
        *layout_lines({"CUmemPoolProps"}),
        *[f'printf("symbol:{field} %s\\n", XSTR(cu{field}));' for field, _ in entries],
        "return 0; }"]), CUDA_H.parent)
    want = dict(line.split(" ", 1) for line in theirs.splitlines())
    got = dict(line.split(" ", 1) for line in ours.splitlines())
    for key, value in got.items():
        if key == "CUmemPoolProps.reserved":
            offset, size = map(int, value.split())
            t_offset, t_size = map(int, want[key].split())
            assert offset == t_offset and size >= t_size, (key, value, want[key])
        else:
            assert want[key] == value, (key, value, want[key])
    wrong = [(field, symbol, want[f"symbol:{field}"]) for field, symbol in entries
             if want[f"symbol:{field}"] != symbol and symbol not in OLDER_ON_PURPOSE]
    assert not wrong
