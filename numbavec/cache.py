"""The compiled-code cache on disk (``cache=True``).

One entry per compiled signature: the object code of the kernel and its
loop wrapper, its optimised IR (for ``inspect_llvm``), its return type, cost
estimate and variable types.  A warm start links the stored object code and
runs no LLVM pass at all (``_core.vectorize`` calls :meth:`FunctionCache.load`
and :meth:`FunctionCache.store`; everything that compiles stays in C).

The key of an entry is a SHA-256 over everything the code depends on: the
function's source; the values of the globals and closure variables it reads
(names taken from its AST, and the attribute chains through them); the
source of the device functions it calls, as parsed when the compiler
inlines them, and what they read (followed transitively); the
signature; the target and options; the host CPU's name and features; the
LLVM version and numbavec's version.  Changing any of them misses.  It is
computed each time a signature is compiled, not at decoration: a lazy ufunc
compiles at its first call, with the names bound by then (a global or a
device function defined below the kernel, a closure cell rebound).

Files: ``<dir>/<key>.nvc`` = MAGIC + sha256(payload) + payload, where payload
is ``marshal.dumps((meta, entry))``.  Writes go to a temporary file in the
same directory, then ``os.replace``: readers see a whole entry or none, and
concurrent writers of one entry each replace it with a whole, equal entry.
A truncated or corrupt file fails the checksum and is compiled and
rewritten.  A directory that cannot be written degrades to compiling, with
one ``NumbavecCacheWarning`` per directory and process.
"""
import ast
import builtins
import hashlib
import marshal
import os
import sys
import types
import warnings
import weakref

import numpy as np

MAGIC = b"NVCACHE1"
FORMAT = 1                       # bump when the entry layout changes
SUFFIX = ".nvc"
_DIGEST = 32


class NumbavecCacheWarning(RuntimeWarning):
    """The cache directory cannot be used; code is compiled instead."""


def cache_dir():
    """NUMBAVEC_CACHE_DIR, else $XDG_CACHE_HOME/numbavec, else ~/.cache/numbavec."""
    explicit = os.environ.get("NUMBAVEC_CACHE_DIR")
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "numbavec")


# -- the key ---------------------------------------------------------------

_environment = None


def _environment_text():
    """What every key shares: versions and the host CPU (computed once)."""
    global _environment
    if _environment is None:
        from numbavec import __version__, _core

        info = _core._jit_info()
        _environment = (f"format={FORMAT}\nnumbavec={__version__}\n"
                        f"llvm={_core.llvm_version}\ncpu={info['cpu']}\n"
                        f"features={info['features']}\n")
    return _environment


# {ast.FunctionDef: (names, chains)}: what a parsed function's text reads
# does not change (what the names are bound to does, and is looked up anew)
_names_of = weakref.WeakKeyDictionary()


def _referenced_names(funcdef):
    """Names read in the function, and the dotted chains rooted at them.

    The decorators are left out: they run once, and are not compiled.
    """
    found = _names_of.get(funcdef)
    if found is None:
        found = _names_of[funcdef] = _walk_names(funcdef)
    return found


def _walk_names(funcdef):
    names, chains = set(), set()
    nodes = [funcdef.args, *funcdef.body] if isinstance(funcdef, ast.FunctionDef) else [funcdef]
    for node in (n for root in nodes for n in ast.walk(root)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if isinstance(node, ast.Name):
                chains.add((node.id, *reversed(parts)))
    return names, chains


def _lookup(pyfunc, name):
    code = pyfunc.__code__
    if name in code.co_freevars and pyfunc.__closure__ is not None:
        try:
            return True, pyfunc.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:      # an empty cell
            return False, None
    if name in pyfunc.__globals__:
        return True, pyfunc.__globals__[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


def _describe(value, seen):
    """A text that changes whenever the compiled code could."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if not isinstance(value, type) and hasattr(value, "_numbavec_device_source"):
        return "jit " + _device_text(value, seen)      # inlined: as lower.c tells them
    if isinstance(value, types.FunctionType):
        # not compiled (only a device function is inlined): its identity is
        # all a kernel can depend on, when it is one of the known builtins
        return f"function {value.__module__}.{value.__qualname__}"
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"ndarray {value.dtype.str} {value.shape} {digest}"
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__} {sorted(map(repr, value))}"
    if isinstance(value, (types.BuiltinFunctionType, type, np.ufunc)):
        module = getattr(value, "__module__", None) or ""
        return f"{type(value).__name__} {module}.{getattr(value, '__qualname__', repr(value))}"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - not a value a kernel can use: its attributes are keyed
        text = "<no repr>"
    return f"{type(value).__module__}.{type(value).__qualname__} {text}"


def _device_text(device, seen):
    """The source a device function is inlined from, and what it reads.

    The parsed source the device function hands the compiler, not its file
    as it is now: the file may have been edited since it was parsed.
    """
    try:
        pyfunc, funcdef, location = device._numbavec_device_source()
    except Exception:  # noqa: BLE001 - the compiler will say why, not the key
        return f"<no source {getattr(device, '__qualname__', '?')}>"
    if pyfunc in seen:
        return f"<recursive {pyfunc.__qualname__}>"
    seen.add(pyfunc)
    return _source_text(pyfunc, funcdef, location, seen)


def _source_text(pyfunc, funcdef, location, seen):
    # From the `def` line on: the decorators (and so the signature list,
    # keyed per entry) are not part of what a signature's code depends on.
    _, first, lines, offset = location
    start = max(0, getattr(funcdef, "lineno", 1) + offset - first)
    parts = ["".join(lines[start:])]
    names, chains = _referenced_names(funcdef)
    local = set(pyfunc.__code__.co_varnames)
    for name in sorted(names - local):
        found, value = _lookup(pyfunc, name)
        parts.append(f"{name} = {_describe(value, seen) if found else '<unbound>'}")
    for chain in sorted(chains):
        if chain[0] in local:
            continue
        found, value = _lookup(pyfunc, chain[0])
        for attr in chain[1:]:
            if not found:
                break
            try:
                value = getattr(value, attr)
            except Exception:  # noqa: BLE001 - an attribute the kernel cannot use
                found = False
        if found and not isinstance(value, types.ModuleType):
            parts.append(f"{'.'.join(chain)} = {_describe(value, seen)}")
    return "\n".join(parts)


def function_key_text(pyfunc, src, target, options):
    """Everything a function's entries depend on, but the signature."""
    opts = ",".join(f"{k}={options[k]!r}" for k in sorted(options))
    return (f"{_environment_text()}target={target}\noptions={opts}\n"
            f"{_source_text(pyfunc, src.funcdef, src.location, {pyfunc})}\n")


# -- entries ---------------------------------------------------------------

_warned_dirs = set()


def _warn_unwritable(directory, exc):
    if directory in _warned_dirs:
        return
    _warned_dirs.add(directory)
    warnings.warn(f"numbavec cannot write its cache in {directory!r} ({exc}); "
                  f"compiling without the cache", NumbavecCacheWarning, stacklevel=4)


def _read(path):
    """The (meta, entry) stored at path, or None if absent or damaged."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    head = len(MAGIC) + _DIGEST
    if len(data) <= head or data[:len(MAGIC)] != MAGIC:
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC):head]:
        return None
    try:
        meta, entry = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if not (isinstance(meta, dict) and _entry_ok(entry)):
        return None
    return meta, entry


def _entry_ok(entry):
    return (isinstance(entry, tuple) and len(entry) == 5 and isinstance(entry[0], bytes)
            and isinstance(entry[1], str) and isinstance(entry[2], str)
            and isinstance(entry[3], float) and isinstance(entry[4], dict))


def _write(directory, path, meta, entry):
    """Atomic: a temporary file in the same directory, then os.replace."""
    import tempfile     # only when writing: a warm start never needs it

    payload = marshal.dumps((meta, entry))
    data = MAGIC + hashlib.sha256(payload).digest() + payload
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=directory)
    except OSError as exc:
        _warn_unwritable(directory, exc)
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _warn_unwritable(directory, exc)


class FunctionCache:
    """The cache entries of one decorated function (what _core calls)."""

    __slots__ = ("_pyfunc", "_src", "_target", "_options", "_dir", "_meta", "_signatures")

    def __init__(self, pyfunc, src, target, options):
        self._pyfunc, self._src = pyfunc, src
        self._target, self._options = target, dict(options)
        self._dir = cache_dir()
        self._meta = {"function": f"{pyfunc.__module__}.{pyfunc.__qualname__}",
                      "file": src.location[0], "target": target}
        self._signatures = {}

    def key(self, signature):
        """The hex key of one signature (as _core spells it).

        Computed here, just before the compiler reads the function, and not
        at decoration: a lazy ufunc compiles at its first call, when the
        globals, closure cells and device functions defined or rebound since
        decoration are the ones compiled.  Nothing is remembered between
        calls, so a name rebound between two signatures is seen too.
        """
        text = function_key_text(self._pyfunc, self._src, self._target, self._options)
        data = f"{text}signature={signature}\n".encode("utf-8", "surrogatepass")
        key = hashlib.sha256(data).hexdigest()
        self._signatures[key] = signature
        return key

    def _path(self, key):
        return os.path.join(self._dir, key + SUFFIX)

    def load(self, key):
        """The stored entry of key, or None (absent, truncated, corrupt)."""
        found = _read(self._path(key))
        return None if found is None else found[1]

    def store(self, key, entry):
        """Stores entry; never raises for a directory that cannot be written."""
        meta = dict(self._meta)
        meta["signature"] = self._signatures.get(key, "?")
        _write(self._dir, self._path(key), meta, entry)


# -- maintenance -----------------------------------------------------------

def _entries(directory):
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.endswith(SUFFIX))


def info(directory=None):
    """{'dir', 'entries', 'bytes', 'damaged', 'functions': {name: count}}."""
    directory = directory or cache_dir()
    out = {"dir": directory, "entries": 0, "bytes": 0, "damaged": 0, "functions": {}}
    for path in _entries(directory):
        if os.path.basename(path).startswith(".tmp-"):
            continue
        try:
            out["bytes"] += os.path.getsize(path)
        except OSError:
            continue
        found = _read(path)
        if found is None:
            out["damaged"] += 1
            continue
        out["entries"] += 1
        name = found[0].get("function", "?")
        out["functions"][name] = out["functions"].get(name, 0) + 1
    return out


def clear(directory=None):
    """Removes every entry (and stale temporary files); returns how many."""
    removed = 0
    for path in _entries(directory or cache_dir()):
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def format_info(stats):
    lines = [f"numbavec cache: {stats['dir']}",
             f"  entries  {stats['entries']} ({stats['bytes'] / 1024:.1f} KiB)"
             + (f", {stats['damaged']} damaged" if stats["damaged"] else "")]
    for name, count in sorted(stats["functions"].items()):
        lines.append(f"  {count:>4}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(format_info(info()))
    sys.exit(0)
