"""Build numbavec._core: one C extension, limited API (abi3), LLVM linked statically.

LLVM is found through ``llvm-config`` (``LLVM_CONFIG`` overrides; the newest
``llvm-config-NN`` for NN in 20..17 otherwise).  Only the components the
compiler needs are linked, statically, and their symbols are hidden, so the
built module needs no LLVM at run time.

Environment switches:
  NUMBAVEC_DEBUG=1        -O0 -g with -fsanitize=address,undefined
  NUMBAVEC_LLVM_SHARED=1  link libLLVM dynamically (fast links while developing)
"""
import glob
import os
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup

LLVM_COMPONENTS = ["core", "orcjit", "native", "nvptx", "passes", "bitreader",
                   "bitwriter", "irreader", "linker", "target"]
LLVM_VERSIONS = (20, 19, 18, 17)


def find_llvm_config():
    explicit = os.environ.get("LLVM_CONFIG")
    if explicit:
        return explicit
    for v in LLVM_VERSIONS:
        for cand in (f"llvm-config-{v}", f"/usr/lib/llvm-{v}/bin/llvm-config"):
            if shutil.which(cand):
                return cand
    if shutil.which("llvm-config"):
        return "llvm-config"
    sys.exit("numbavec: llvm-config not found (install llvm-19-dev or set LLVM_CONFIG)")


def llvm(cfg, *args):
    return subprocess.check_output([cfg, *args], text=True).split()


shared = bool(os.environ.get("NUMBAVEC_LLVM_SHARED"))


def llvm_flags():
    cfg = find_llvm_config()
    version = llvm(cfg, "--version")[0]
    major = int(version.split(".")[0])
    if not 17 <= major <= 20:
        sys.exit(f"numbavec: LLVM {version} from {cfg}; LLVM 17-20 is required")
    cflags = [f for f in llvm(cfg, "--cflags") if f.startswith(("-I", "-D"))]
    libdir = llvm(cfg, "--libdir")[0]
    if shared:
        link = [f"-L{libdir}", f"-Wl,-rpath,{libdir}", *llvm(cfg, "--link-shared", "--libs")]
    else:
        libs = llvm(cfg, "--link-static", "--libs", *LLVM_COMPONENTS)
        system = llvm(cfg, "--link-static", "--system-libs")
        # Hide every LLVM symbol: only PyInit__core leaves the module.
        # --as-needed drops the system libraries LLVM lists but our subset
        # never calls (libz3, libxml2), so the module needs only libc, libm,
        # libstdc++ and the compression libraries at run time.
        link = [f"-L{libdir}", "-Wl,--exclude-libs,ALL", "-Wl,--as-needed", *libs, *system,
                "-lstdc++"]
    return version, cflags, link


def sources():
    return sorted(glob.glob("src/**/*.c", recursive=True))


version, llvm_cflags, llvm_link = llvm_flags()
debug = bool(os.environ.get("NUMBAVEC_DEBUG"))
cflags = ["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter",
          "-Wno-missing-field-initializers", "-Wno-cast-function-type", *llvm_cflags]
ldflags = ["-Wl,--gc-sections"] if not debug else []
if debug:
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    cflags += ["-O0", "-g", *san]
    ldflags += san
else:
    cflags += ["-O2", "-ffunction-sections", "-fdata-sections"]
    ldflags += ["-s"]

core = Extension(
    "numbavec._core",
    sources=sources(),
    include_dirs=["src", numpy.get_include()],
    define_macros=[("Py_LIMITED_API", "0x030A0000"),
                   ("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"),
                   ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION"),
                   ("NUMBAVEC_LLVM_VERSION_STRING", f'"{version}"')],
    extra_compile_args=cflags,
    # libm: the test hooks' loops (sin, exp); pthread: the parallel pool.
    extra_link_args=ldflags + llvm_link + ["-lm", "-lpthread"],
    py_limited_api=True,
)

# Each way of building gets its own build directory: setuptools reuses object
# files and the linked module it finds there, so a development build (shared
# LLVM, or sanitizers) must never be picked up by `pip install .`.
flavour = ("debug-" if debug else "") + ("llvm-shared" if shared else "llvm-static")
setup(ext_modules=[core],
      options={"bdist_wheel": {"py_limited_api": "cp310"},
               "build": {"build_base": os.path.join("build", flavour)}})
