"""Build numbavec._core: one C extension, limited API (abi3), LLVM linked statically.

LLVM is found through ``llvm-config`` (``LLVM_CONFIG`` overrides; the newest
``llvm-config-NN`` for NN in 20..17 otherwise).  Only the components the
compiler needs are linked, statically, and their symbols are hidden, so the
built module needs no LLVM at run time.

Environment switches:
  NUMBAVEC_DEBUG=1        -O0 -g with -fsanitize=address,undefined
  NUMBAVEC_LLVM_SHARED=1  link libLLVM dynamically (fast links while developing)
  NUMBAVEC_ZIG_TARGET=x86_64-linux-gnu.2.28
                          the portable build (tools/manylinux-wheel): compile
                          and link with `python -m ziglang cc` for that glibc,
                          libstdc++ and zstd (NUMBAVEC_ZSTD_C: zstd's
                          single-file source) linked in, glibc shims from
                          tools/portable/glibc228.c
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
        link = [f"-L{libdir}", f"-Wl,-rpath,{libdir}", *llvm(cfg, "--link-shared", "--libs"),
                "-lstdc++"]
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
    return sorted(glob.glob("src/**/*.c", recursive=True) + glob.glob("src/**/*.cpp", recursive=True))


debug = bool(os.environ.get("NUMBAVEC_DEBUG"))
# -fexceptions: what LLVM throws crosses C frames on its way to guard.cpp
cflags = ["-std=c11", "-D_GNU_SOURCE", "-fexceptions", "-fvisibility=hidden", "-Wall", "-Wextra",
          "-Wno-unused-parameter", "-Wno-missing-field-initializers", "-Wno-cast-function-type"]
ldflags = ["-Wl,--gc-sections"] if not debug else []
if debug:
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    cflags += ["-O0", "-g", "-DNUMBAVEC_DEBUG", *san]  # NV_ASSERT on (common.h)
    ldflags += san
else:
    cflags += ["-O2", "-ffunction-sections", "-fdata-sections"]
    ldflags += ["-s"]


zig_target = os.environ.get("NUMBAVEC_ZIG_TARGET")


def gcc_file(name):
    """The path gcc links for name (libstdc++.a, libgcc_s.so.1, ...)."""
    return subprocess.check_output(["gcc", f"-print-file-name={name}"], text=True).strip()


def portable_link(llvm_link):
    """What the zig-linked module links: LLVM's archives (not the system
    libraries llvm-config lists), libstdc++ and libgcc statically, libgcc_s
    and libz (the manylinux policy lists both) dynamically; one exported
    symbol."""
    libs = [f for f in llvm_link if f.startswith(("-L", "-lLLVM"))]
    return ["-Wl,--version-script=tools/portable/export.map", *libs,
            gcc_file("libstdc++.a"), gcc_file("libgcc.a"), gcc_file("libgcc_s.so.1"),
            gcc_file("libz.so"), "-ldl", "-lrt"]


def cxx_args(args):
    """The C flags for the C++ files (guard.cpp, outline.cpp): C++17 as LLVM's
    headers need, no RTTI as LLVM is built, exceptions on (catching them is
    what guard.cpp is for); with zig's clang, libstdc++'s headers, which
    LLVM's archives were compiled against.  Those are given with -I, not
    -isystem: zig puts its glibc 2.28 headers on the system path, and
    libstdc++'s `#include_next <stdlib.h>` only finds what comes after it
    (its headers mark themselves as system headers); before them, a stand-in
    for glibc 2.32's <sys/single_threaded.h>, which libstdc++ 12 includes and
    zig's 2.28 headers refuse (tools/portable/include)."""
    out = [a for a in args if a != "-std=c11"] + ["-std=c++17", "-fno-rtti", "-fexceptions"]
    if zig_target:
        shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "portable",
                            "include")
        out += ["-nostdinc++", f"-I{shim}", *(f"-I{d}" for d in libstdcxx_include_dirs())]
    return out


def libstdcxx_include_dirs():
    """The include directories g++ searches for libstdc++'s headers."""
    proc = subprocess.run(["g++", "-xc++", "-E", "-v", "-"], input="", capture_output=True,
                          text=True)
    lines = proc.stderr.splitlines()
    start = lines.index("#include <...> search starts here:") + 1
    dirs = [ln.strip() for ln in lines[start:lines.index("End of search list.")]]
    return [d for d in dirs if "c++" in d]


class build_ext_with_llvm(build_ext):
    """Finds LLVM (and NumPy's headers) only when the extension is built:
    making the sdist, or reading the metadata, needs neither."""

    def build_extensions(self):
        import numpy

        version, llvm_cflags, llvm_link = llvm_flags()
        if zig_target:
            zig = [sys.executable, "-m", "ziglang", "cc", "-target", zig_target]
            # linker_exe(_cxx) too: a C++ link (guard.cpp, outline.cpp) swaps
            # the linker's first words for compiler_cxx, as many as
            # linker_exe_cxx (linker_exe in older setuptools) has
            self.compiler.set_executables(compiler=zig, compiler_so=[*zig, "-fPIC"],
                                          compiler_cxx=zig, linker_so=[*zig, "-shared"],
                                          linker_exe=zig)
            if hasattr(self.compiler, "compiler_so_cxx"):
                self.compiler.set_executables(compiler_so_cxx=[*zig, "-fPIC"],
                                              linker_so_cxx=[*zig, "-shared"],
                                              linker_exe_cxx=zig)
            llvm_link = portable_link(llvm_link)
        compile_one = self.compiler._compile

        def compile_c_or_cxx(obj, src, ext, cc_args, extra_postargs, pp_opts):
            if src.endswith(".cpp"):
                extra_postargs = cxx_args(extra_postargs)
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = compile_c_or_cxx
        for ext in self.extensions:
            ext.include_dirs.append(numpy.get_include())
            ext.define_macros.append(("NUMBAVEC_LLVM_VERSION_STRING", f'"{version}"'))
            ext.extra_compile_args += llvm_cflags
            if zig_target:
                ext.sources += ["tools/portable/glibc228.c", os.environ["NUMBAVEC_ZSTD_C"]]
            # libm: the test hooks' loops (sin, exp); pthread: the parallel pool
            ext.extra_link_args = ldflags + llvm_link + ["-lm", "-lpthread"]
        super().build_extensions()


core = Extension(
    "numbavec._core",
    sources=sources(),
    # any header changed rebuilds every source: setuptools otherwise reuses
    # objects compiled against the old one (a struct grown, say)
    depends=sorted(glob.glob("src/**/*.h", recursive=True)),
    include_dirs=["src"],
    define_macros=[("Py_LIMITED_API", "0x030A0000"),
                   ("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION"),
                   ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION")],
    extra_compile_args=cflags,    # LLVM's flags and libraries: build_ext_with_llvm
    py_limited_api=True,
)

# Each way of building gets its own build directory: setuptools reuses object
# files and the linked module it finds there, so a development build (shared
# LLVM, or sanitizers) must never be picked up by `pip install .`.
flavour = ("debug-" if debug else "") + ("llvm-shared" if shared else "llvm-static") + (
    f"-{zig_target}" if zig_target else "")
setup(ext_modules=[core],
      cmdclass={"build_ext": build_ext_with_llvm},
      options={"bdist_wheel": {"py_limited_api": "cp310"},
               "build": {"build_base": os.path.join("build", flavour)}})
