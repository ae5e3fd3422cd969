"""The compiled-code cache on disk (``cache=True``).

One entry per compiled signature: the object code of the kernel and its
loop wrapper, its optimised IR (for ``inspect_llvm``), its return type, cost
estimate and variable types.  A warm start links the stored object code and
runs no LLVM pass at all (``_core.vectorize`` calls :meth:`FunctionCache.load`
and :meth:`FunctionCache.store`; everything that compiles stays in C).

The key of an entry is a SHA-256 over everything the code depends on: the
function's source; the values of the globals and closure variables it reads
(names taken from its AST, and the attribute chains through them), or for a
kernel compiled from its bytecode (no source) its code object's
instructions, constants and names, recursively; the
source of the device functions it calls, as parsed when the compiler
inlines them, and what they read (followed transitively); the
signature; the target and options; the host CPU's name and features; the
LLVM version, numbavec's version and its compiled module's size and mtime
(a rebuild with the same version).  Changing any of them misses.  It is
computed each time a signature is compiled, not at decoration: a lazy ufunc
compiles at its first call, with the names bound by then (a global or a
device function defined below the kernel, a closure cell rebound).

Files: ``<dir>/<key>.nvc`` = MAGIC + mac + payload, where payload is
``marshal.dumps((meta, entry))`` and mac the HMAC-SHA256 of MAGIC, the file
name and the payload under the directory's secret key: 32 random bytes in
``<dir>/mac.key`` (mode 0600), made by the first process that stores an
entry there (written whole, then linked into place: of processes racing to
make it, one wins and the others read its key).  Writes go to a temporary
file in the same directory, then ``os.replace``: readers see a whole entry
or none, and concurrent writers of one entry each replace it with a whole,
equal entry.  A truncated or corrupt file, an entry of another format, or
one whose MAC fails (written without this key, or moved from another key's
name) is absent: it is compiled and rewritten.

Trust: only what this user (or root) wrote is run.  The cache directory
(made 0700, with the parents numbavec makes) and each entry must belong to
this user or root and be writable by no one else, as ssh's StrictModes asks
of ~/.ssh; the key file must also be readable by no one else.  An entry is
opened ``O_NOFOLLOW | O_NONBLOCK`` relative to the checked directory's
descriptor, and must be a regular file of at most ``MAX_ENTRY_BYTES``: a
symbolic link, a FIFO, a device or a larger file is refused without being
read.  A refused entry is compiled instead (then replaced); a refused
directory or key file leaves the directory unused, neither read nor
written.  Each, or a directory that cannot be written, degrades to
compiling, with one ``NumbavecCacheWarning`` per directory and process.
POSIX only (``O_NOFOLLOW``, ``geteuid``), as numbavec is.  The threat model
is in README.md, "The compiled-code cache: what it trusts".
"""
import ast
import builtins
import errno
import hashlib
import hmac
import marshal
import os
import stat
import sys
import types
import warnings
import weakref

import numpy as np

MAGIC = b"NVCACHE2"               # 1 had a bare SHA-256, which anyone could write
FORMAT = 4                         # bump when the entry layout changes
SUFFIX = ".nvc"
KEY_FILE = "mac.key"               # in the cache directory, 0600
MAX_ENTRY_BYTES = 32 << 20         # entries are KiBs: anything larger is refused unread
_MAC_BYTES = 32                    # HMAC-SHA256
_SECRET_BYTES = 32


class NumbavecCacheWarning(RuntimeWarning):
    """The cache directory cannot be used, or something in it is not to be
    trusted; code is compiled instead."""


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
    """What every key shares: versions, the build, the host CPU (computed once)."""
    global _environment
    if _environment is None:
        from numbavec import __version__, _core

        info = _core._jit_info()
        # the compiler's own file: a rebuild or reinstall with the same
        # version string (a development build) may compile differently
        core = os.stat(_core.__file__)
        _environment = (f"format={FORMAT}\nnumbavec={__version__}\n"
                        f"core={core.st_size}-{core.st_mtime_ns}\n"
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
    """(found, value) of a name pyfunc reads, where resolve.c's lw_resolve_global
    finds it: a closure cell, else a global (an empty cell too), else a builtin."""
    code = pyfunc.__code__
    if name in code.co_freevars and pyfunc.__closure__ is not None:
        try:
            return True, pyfunc.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:      # an empty cell: resolve.c's lw_closure_values leaves it out
            pass
    if name in pyfunc.__globals__:
        return True, pyfunc.__globals__[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


def _describe(value, seen):
    """A text that changes whenever the compiled code could."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if _is_device_function(value):
        return "jit " + _device_text(value, seen)
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
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    try:
        qualname, module = (getattr(value, "__qualname__", None),
                            getattr(value, "__module__", None) or "")
    except Exception:  # noqa: BLE001 - a __getattr__ raising something else
        qualname = None
    if callable(value) and isinstance(qualname, str):
        # a function object of another kind: NumPy's array functions (np.sort,
        # np.where, ...) are dispatchers whose repr holds their address
        return f"{kind} {module}.{qualname}"
    if type(value).__repr__ is object.__repr__:
        # a namespace: a kernel reads its attributes (keyed as chains), and
        # the default repr's address would differ in every process
        return f"{kind} instance"
    try:
        return f"{kind} {value!r}"
    except Exception:  # noqa: BLE001 - not a value a kernel can use: its attributes are keyed
        return f"{kind} <no repr>"


def _is_device_function(value):
    """As inline.c tells them (PyObject_HasAttrString: any error is a no)."""
    try:
        return not isinstance(value, type) and hasattr(value, "_numbavec_device_source")
    except Exception:  # noqa: BLE001 - a __getattr__ raising something else
        return False


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


def _code_text(code):
    """What a code object computes, as text (a kernel rebuilt from its
    bytecode has no source text to key on): its instructions, constants
    (code objects recursively) and names; not its file or line numbers."""
    consts = [f"<code {_code_text(c)}>" if isinstance(c, types.CodeType)
              else f"{type(c).__name__} {c!r}" for c in code.co_consts]
    return (f"bytecode {code.co_code.hex()} args {code.co_argcount} "
            f"{code.co_posonlyargcount} {code.co_kwonlyargcount} flags {code.co_flags} "
            f"names {code.co_names} vars {code.co_varnames} free {code.co_freevars} "
            f"cells {code.co_cellvars} consts [{', '.join(consts)}]")


def _source_text(pyfunc, funcdef, location, seen):
    # From the `def` line on: the decorators (and so the signature list,
    # keyed per entry) are not part of what a signature's code depends on.
    _, first, lines, offset = location
    code = getattr(funcdef, "_numbavec_code", None)
    if code is not None:
        parts = [_code_text(code)]      # rebuilt from its bytecode (numbavec/_bytecode.py)
    else:
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


# -- what is trusted -------------------------------------------------------

class _Refused(Exception):
    """A directory or file of the cache that is not to be trusted (str() says why)."""


# O_NONBLOCK: a FIFO in an entry's place opens at once (and is then refused)
# instead of waiting for a writer; O_NOFOLLOW: a symbolic link is refused.
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CREATE_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_warned_dirs = set()


def _warn(directory, why):
    """One NumbavecCacheWarning per directory and process."""
    if directory in _warned_dirs:
        return
    _warned_dirs.add(directory)
    warnings.warn(f"numbavec does not use its cache in {directory!r}: {why}; "
                  f"compiling without it", NumbavecCacheWarning, stacklevel=4)


def _check_owner(st, what):
    """Refuses what unless this user (or root) owns it and no one else may write it."""
    if st.st_uid not in (os.geteuid(), 0):
        raise _Refused(f"{what} belongs to uid {st.st_uid}")
    if st.st_mode & 0o022:
        raise _Refused(f"{what} is writable by group or others")


def _open_file(dirfd, name):
    """(descriptor, stat) of the regular file name in directory dirfd.

    FileNotFoundError when absent; _Refused for anything else that is not a
    regular file (a symbolic link, a FIFO, a device, a directory), or not
    this user's own (_check_owner).
    """
    try:
        fd = os.open(name, _OPEN_FILE, dir_fd=dirfd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise _Refused(f"{name} cannot be opened ({why})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Refused(f"{name} is not a regular file")
        _check_owner(st, name)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_and_close(fd, size):
    """At most size bytes of fd (fewer at its end); closes fd."""
    try:
        chunks = []
        while size > 0:
            chunk = os.read(fd, size)
            if not chunk:
                break
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _make_private_dirs(path):
    """Makes path and its missing parents, each 0700 (os.makedirs gives the
    parents the umask's mode, usually 0755)."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass                # made meanwhile, by a process racing this one


def _read_secret(dirfd):
    """The MAC key in the directory.  FileNotFoundError when there is none;
    _Refused unless it is a regular file of this user's (or root's) that no
    one else may read or write, of the right size."""
    fd, st = _open_file(dirfd, KEY_FILE)
    if st.st_mode & 0o077:
        os.close(fd)
        raise _Refused(f"{KEY_FILE} can be read or written by group or others")
    secret = _read_and_close(fd, _SECRET_BYTES + 1)
    if len(secret) != _SECRET_BYTES:
        raise _Refused(f"{KEY_FILE} is not {_SECRET_BYTES} bytes long "
                       f"(remove it to make a new one)")
    return secret


def _make_secret(dirfd):
    """Makes the directory's MAC key if it has none; returns the one it has.

    Written whole into a temporary file, then linked to its name: a reader
    never sees half a key, and link, unlike rename, never replaces one.  Of
    processes racing here the first to link wins, and the others read its key.
    """
    tmp = _temp_name()
    fd = os.open(tmp, _CREATE_FILE, 0o600, dir_fd=dirfd)
    try:
        with open(fd, "wb") as fh:
            fh.write(os.urandom(_SECRET_BYTES))
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp, dir_fd=dirfd)
    return _read_secret(dirfd)


def _secret(dirfd, create):
    """The directory's MAC key; None when it has none and create is false."""
    try:
        return _read_secret(dirfd)
    except FileNotFoundError:
        if not create:
            return None
    return _make_secret(dirfd)


class _Root:
    """The cache directory, open and checked for one load or store (a
    context manager): this user's (or root's), writable by no one else, and
    its MAC key (None when it has none yet, unless create makes one).

    Entries are opened relative to its descriptor, so the directory checked
    is the one read.  _Refused when it is not to be trusted; OSError when
    it cannot be opened (or, with create, made).
    """

    __slots__ = ("fd", "secret")

    def __init__(self, path, create):
        if create:
            _make_private_dirs(os.path.abspath(path))
        self.fd = os.open(path, _OPEN_DIR)
        try:
            _check_owner(os.fstat(self.fd), "the directory")
            self.secret = _secret(self.fd, create)
        except BaseException:
            os.close(self.fd)
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        os.close(self.fd)


# -- entries ---------------------------------------------------------------

def _read_entry(root, name):
    """The (meta, entry) in the file name, or None when absent or damaged.

    _Refused for a file that is not to be read (see _open_file), or larger
    than MAX_ENTRY_BYTES (refused before reading it; at most that much is
    read).  Damaged includes a MAC that fails: not written with this key.
    """
    if root.secret is None:
        return None             # no key yet: nothing here was written by this user
    try:
        fd, st = _open_file(root.fd, name)
    except FileNotFoundError:
        return None
    if st.st_size > MAX_ENTRY_BYTES:
        os.close(fd)
        raise _Refused(f"{name} is larger than {MAX_ENTRY_BYTES} bytes")
    # as large as fstat said: a file grown since is cut short, and fails its MAC
    data = _read_and_close(fd, st.st_size)
    return _unpack(root.secret, name, data)


def _mac(secret, name, payload):
    """The HMAC-SHA256 of an entry, under its file name too: an entry moved
    into another key's place fails it."""
    message = MAGIC + os.fsencode(name) + b"\0" + payload
    return hmac.new(secret, message, hashlib.sha256).digest()


def _unpack(secret, name, data):
    head = len(MAGIC) + _MAC_BYTES
    if len(data) <= head or data[:len(MAGIC)] != MAGIC:
        return None
    payload = data[head:]
    if not hmac.compare_digest(_mac(secret, name, payload), data[len(MAGIC):head]):
        return None
    try:
        # only what this user wrote gets here: marshal trusts its input
        meta, entry = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if not (isinstance(meta, dict) and _entry_ok(entry)):
        return None
    return meta, entry


def _entry_ok(entry):
    """(code, IR text, return kind, cost, {variable: type}, written-parameter mask):
    what src/compiler/driver.c stores and loads."""
    return (isinstance(entry, tuple) and len(entry) == 6 and isinstance(entry[0], (bytes, str))
            and isinstance(entry[1], str) and isinstance(entry[2], str)
            and isinstance(entry[3], float) and isinstance(entry[4], dict)
            and isinstance(entry[5], int))


def _temp_name():
    return f".tmp-{os.urandom(8).hex()}{SUFFIX}"


def _write_entry(root, name, meta, entry):
    """Atomic: a new temporary file in the directory, then os.replace (which
    also replaces whatever was refused in the entry's place)."""
    payload = marshal.dumps((meta, entry))
    data = MAGIC + _mac(root.secret, name, payload) + payload
    if len(data) > MAX_ENTRY_BYTES:
        return      # it would be refused when read
    tmp = _temp_name()
    fd = os.open(tmp, _CREATE_FILE, 0o600, dir_fd=root.fd)
    try:
        with open(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, name, src_dir_fd=root.fd, dst_dir_fd=root.fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=root.fd)
        except OSError:
            pass
        raise


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
        decoration are the ones compiled.  What the names are bound to is
        looked up at every call, so a name rebound between two signatures is
        seen too.
        """
        text = function_key_text(self._pyfunc, self._src, self._target, self._options)
        data = f"{text}signature={signature}\n".encode("utf-8", "surrogatepass")
        key = hashlib.sha256(data).hexdigest()
        self._signatures[key] = signature
        return key

    def load(self, key):
        """The stored entry of key, or None: absent, damaged, or refused (with
        one warning per directory).  Never raises for what is on disk."""
        try:
            with _Root(self._dir, create=False) as root:
                found = _read_entry(root, key + SUFFIX)
        except _Refused as why:
            _warn(self._dir, why)
            return None
        except OSError:
            return None         # no directory yet, or none to use: store says
        return None if found is None else found[1]

    def store(self, key, entry):
        """Stores entry; a directory that cannot be written, or is refused,
        gives its one warning instead of raising."""
        meta = dict(self._meta, signature=self._signatures.get(key, "?"))
        try:
            with _Root(self._dir, create=True) as root:
                _write_entry(root, key + SUFFIX, meta, entry)
        except (_Refused, OSError) as why:
            _warn(self._dir, why)


# -- maintenance -----------------------------------------------------------

def _entry_names(dirfd):
    """The names ending in SUFFIX in the directory (temporary files included)."""
    return sorted(n for n in os.listdir(dirfd) if n.endswith(SUFFIX))


def info(directory=None):
    """{'dir', 'entries', 'bytes', 'damaged', 'functions': {name: count}}.

    Damaged: every file that would not be loaded (corrupt, or refused).
    """
    directory = directory or cache_dir()
    out = {"dir": directory, "entries": 0, "bytes": 0, "damaged": 0, "functions": {}}
    try:
        with _Root(directory, create=False) as root:
            for name in _entry_names(root.fd):
                if not name.startswith(".tmp-"):
                    _count_entry(root, name, out)
    except _Refused as why:
        _warn(directory, why)
    except OSError:
        pass
    return out


def _count_entry(root, name, out):
    try:
        out["bytes"] += os.stat(name, dir_fd=root.fd, follow_symlinks=False).st_size
        found = _read_entry(root, name)
    except FileNotFoundError:
        return                  # removed meanwhile
    except _Refused as why:
        _warn(out["dir"], why)
        found = None
    if found is None:
        out["damaged"] += 1
        return
    out["entries"] += 1
    function = found[0].get("function", "?")
    out["functions"][function] = out["functions"].get(function, 0) + 1


def clear(directory=None):
    """Removes every entry (and stale temporary files), from a refused
    directory too; returns how many."""
    removed = 0
    try:
        dirfd = os.open(directory or cache_dir(), _OPEN_DIR)
    except OSError:
        return 0
    try:
        for name in _entry_names(dirfd):
            try:
                os.unlink(name, dir_fd=dirfd)
                removed += 1
            except OSError:     # removed meanwhile, or a directory
                pass
    finally:
        os.close(dirfd)
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
