"""What a kernel's compilation reads, captured once and kept by the object.

A kernel compiles from its parsed source and from what the names in it are
bound to: globals and closure cells, the attributes read through them
(``Consts.OFFSET``, ``cfg.n``, ``np.pi``), the device functions and numbavec
ufuncs it calls (their sources and what they read, transitively, and a
ufunc's loops), and those callees' parameter defaults.  :class:`Capturer`
takes all of it at one moment into a graph of :class:`Captured`, and that
one graph is then

- what the compiler reads: ``Captured.env()`` is a function whose globals
  and closure hold the captured values, the callees as ``_core.Inline``
  objects, the namespaces read through attributes as stand-ins holding the
  attributes read (src/compiler/driver.c lowers with it, not with the
  user's function);
- what the cache keys (``Captured.key_text()``, numbavec/cache.py);
- what pickling ships (numbavec/_pickle.py), and what the receiver
  compiles from.

So what runs, what is keyed and what travels cannot differ, and nothing
done to the user's objects afterwards (a global rebound, an attribute of
the ufunc rebound, the file edited) reaches any of them.

When (``Origin``, one per decorated object, held by its compiled code in C
where no attribute reaches it): the first compilation that succeeds fixes
the capture it compiled from, and so does an earlier pickling.  An eager
object therefore captures at decoration; a lazy one when its first loop
compiles (names defined below the kernel are bound by then), and every
later signature compiles from that same capture, in this process and
wherever the object is unpickled.  A compilation that fails fixes nothing:
the next one captures again.  A numbavec ufunc inlined into a kernel that
compiles is fixed with what that kernel read of it.  A device function
(``numbavec.jit``) has no compilation of its own: each kernel captures it
anew, with the kernel's own capture.
"""
import ast
import builtins
import hashlib
import types
import weakref

import numpy as np

from numbavec import _core, _numba_compat

# -- what a function's text reads --------------------------------------------

# {ast.FunctionDef: Reads}: what a parsed text reads does not change (what the
# names are bound to does, and is looked up at each capture)
_reads_of = weakref.WeakKeyDictionary()


class Reads:
    """The names a function body reads that are not its locals.

    ``tree`` maps each name to a :class:`Path`: whether the name is used
    on its own (``bare``), and the attributes read through it (``attrs``,
    a Path each), for ``cfg.a.b`` the path cfg -> a -> b.
    """

    __slots__ = ("tree",)

    def __init__(self, funcdef, local):
        self.tree = {}
        for node, parent in _walk(funcdef):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id not in local:
                path = self.tree.setdefault(node.id, Path())
                if not (isinstance(parent, ast.Attribute) and parent.value is node):
                    path.bare = True
            elif isinstance(node, ast.Attribute) and not (
                    isinstance(parent, ast.Attribute) and parent.value is node):
                chain = []
                while isinstance(node, ast.Attribute):
                    chain.append(node.attr)
                    node = node.value
                if isinstance(node, ast.Name) and node.id not in local:
                    path = self.tree.setdefault(node.id, Path())
                    for attr in reversed(chain):
                        path = path.attrs.setdefault(attr, Path())
                    path.bare = True


class Path:
    __slots__ = ("bare", "attrs")

    def __init__(self):
        self.bare, self.attrs = False, {}


def _walk(funcdef):
    """(node, parent) of the body: the decorators ran once, and the defaults
    are read as the values the function holds (__defaults__)."""
    todo = [(stmt, funcdef) for stmt in funcdef.body]
    while todo:
        node, parent = todo.pop()
        yield node, parent
        todo.extend((child, node) for child in ast.iter_child_nodes(node))


def _stored(funcdef):
    """The names the function binds (Python's rule for its locals)."""
    names = {a.arg for a in ast.walk(funcdef.args) if isinstance(a, ast.arg)}
    declared = set()
    for node, _ in _walk(funcdef):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
    return names - declared


def reads(funcdef, code):
    found = _reads_of.get(funcdef)
    if found is None:
        local = _stored(funcdef) | set(code.co_varnames)
        found = _reads_of[funcdef] = Reads(funcdef, local)
    return found


def lookup(code, closure, globals_, name):
    """(found, value) of a name, where src/compiler/resolve.c finds it: a
    closure cell, else a global (an empty cell too), else a builtin."""
    if closure is not None and name in code.co_freevars:
        try:
            return True, closure[code.co_freevars.index(name)].cell_contents
        except (ValueError, IndexError):    # an empty cell: as if it were not there
            pass
    if name in globals_:
        return True, globals_[name]
    if hasattr(builtins, name):
        return True, getattr(builtins, name)
    return False, None


# -- the captured graph --------------------------------------------------------

# An entry: what one name (or attribute) was bound to when captured.
VALUE = "value"      # (VALUE, v): any value, kept as it is (numbers, classes, builtins)
MODULE = "module"    # (MODULE, name, {attr: entry}): a module, and what is read through it
OBJECT = "object"    # (OBJECT, type name, {attr: entry}): read only through attributes
DEVICE = "device"    # (DEVICE, Captured): a numbavec.jit function
UFUNC = "ufunc"      # (UFUNC, Captured, loops, Recipe): a numbavec ufunc, inlined
UNBOUND = "unbound"  # (UNBOUND,): not bound (the compiler says so if it reads it)
MISSING = "missing"  # (MISSING,): an attribute that was not there
RAISED = "raised"    # (RAISED, exception): an attribute whose reading raised it

_PLAIN = (int, float, complex, bool, str, bytes, tuple, type(None), np.generic)


class Captured:
    """What compiling one function read: its text, its defaults and the
    entry of every name it reads.  ``code``, ``funcdef`` and ``location``
    are this process's (the function's code object and the parse the
    compiler reads); the rest travels."""

    __slots__ = ("name", "qualname", "module", "text", "defaults", "kwdefaults", "names",
                 "signatures", "code", "funcdef", "location", "pins", "_env", "_inline", "_key",
                 "__weakref__")

    def __init__(self, name, qualname, module, text, defaults, kwdefaults):
        self.name, self.qualname, self.module, self.text = name, qualname, module, text
        self.defaults, self.kwdefaults = defaults, kwdefaults
        self.names = {}
        self.signatures = ()    # a helper's, as texts: a call takes one (dispatch.c)
        self.code = self.funcdef = self.location = None
        self.pins = ()
        self._env = self._inline = self._key = None

    def __reduce__(self):
        return _captured, (self.name, self.qualname, self.module, self.text, self.defaults,
                           self.kwdefaults), (self.names, self.signatures)

    def __setstate__(self, state):
        self.names, self.signatures = state

    def env(self):
        """The function the compiler resolves this one's names in (made once)."""
        if self._env is None:
            _Environment().build(self)
        return self._env

    def key_text(self):
        """A text that changes whenever what is compiled from this could."""
        if self._key is None:
            self._key = _describe_captured(self, set())
        return self._key


def _captured(name, qualname, module, text, defaults, kwdefaults):
    return Captured(name, qualname, module, text, defaults, kwdefaults)


def source_text(funcdef, location, name):
    """The text a function compiles from: its lines from the ``def`` on (the
    decorators ran once; indentation kept), or a lambda as an assignment.
    A function without source (its def rebuilt from its bytecode,
    numbavec/_bytecode.py) is the rebuilt def written out: the text the
    compiler reads, which another process (of any Python version) compiles
    back into a function whose code matches it."""
    if name == "<lambda>":
        body = funcdef.body[0].value
        return f"_lambda_ = lambda {ast.unparse(funcdef.args)}: {ast.unparse(body)}\n"
    _, first, lines, offset = location
    if not lines:
        try:
            return ast.unparse(funcdef) + "\n"
        except (AttributeError, TypeError, ValueError):
            # a construct the rebuilder names but cannot write (the compiler
            # refuses it): a text that keys it and compiles to nothing
            return f"# {ast.dump(funcdef)}\n"
    return "".join(lines[max(0, funcdef.lineno + offset - first):])


class Capturer:
    """One capture: the functions it reaches, each captured once (cycles
    and shared callees are one node)."""

    def __init__(self):
        self.done = {}          # id(origin or device state) -> Captured
        self.keep = []          # what done's ids refer to, alive while capturing
        self.pins = []          # (Origin, Captured) of callees fixed if the kernel compiles

    def function(self, key, pyfunc, code, funcdef, location, keep=None):
        """The Captured of a function (pyfunc gives the values: its globals,
        closure and defaults; code, funcdef, location what was parsed)."""
        found = self.done.get(key)
        if found is not None:
            return found
        name = pyfunc.__name__
        c = Captured(name, getattr(pyfunc, "__qualname__", name),
                     getattr(pyfunc, "__module__", None), source_text(funcdef, location, name),
                     pyfunc.__defaults__, dict(pyfunc.__kwdefaults__ or {}) or None)
        c.code, c.funcdef, c.location = code, funcdef, location
        self.done[key] = c
        self.keep.append(keep)
        closure, globals_ = pyfunc.__closure__, pyfunc.__globals__
        for name, path in reads(funcdef, code).tree.items():
            found, value = lookup(code, closure, globals_, name)
            c.names[name] = self.entry(value, path) if found else (UNBOUND,)
        return c

    def entry(self, value, path):
        from numbavec.decorators import device_state

        if isinstance(value, types.ModuleType):
            return (MODULE, value.__name__, self.attrs(value, path))
        value = _in_kernel_language(value)
        state = device_state(value)
        if state is not None:
            return (DEVICE, state.capture(self))
        origin = origin_of(value)
        if origin is not None and origin.factory == "vectorize":
            return (UFUNC, origin.captured_by(self), origin.loops(value), origin.recipe())
        if not isinstance(value, _PLAIN):
            found = self.numba(value)
            if found is not None:
                return found
        if path.attrs and not path.bare and not isinstance(value, _PLAIN + (np.ndarray,)):
            kind = f"{type(value).__module__}.{type(value).__qualname__}"
            return (OBJECT, kind, self.attrs(value, path))
        return (VALUE, value)

    def numba(self, value):
        """The entry of an object Numba's decorators made, or None
        (numbavec/_numba_compat.py recognises them): a dispatcher is a
        device function (with its signatures, if fixed), a DUFunc a ufunc
        inlined, a jitclass refused where the kernel reads it."""
        why = _numba_compat.refusal(value)
        if why is not None:
            return (VALUE, Refused(why))
        instead = _numba_compat.stand_in(value)
        if instead is not None:
            return (VALUE, instead)
        state = _numba_compat.numba_device_state(value)
        if state is not None:
            return (DEVICE, state.capture(self))
        parts = _numba_compat.dufunc_parts(value)
        if parts is None:
            return None
        pyfunc, loops, identity = parts
        src = _numba_compat.dufunc_source(value, pyfunc)
        c = self.function(id(value), pyfunc, pyfunc.__code__, src.funcdef, src.location, value)
        return (UFUNC, c, loops, Recipe("vectorize", (list(loops or ()),), {"identity": identity}))

    def attrs(self, value, path):
        out = {}
        for attr, sub in path.attrs.items():
            try:
                found = getattr(value, attr)
            except AttributeError:
                out[attr] = (MISSING,)
            except Exception as exc:  # noqa: BLE001 - the compiler says where, and why
                out[attr] = (RAISED, exc)
            else:
                out[attr] = self.entry(found, sub)
        return out


def _in_kernel_language(value):
    """The numbavec.jit helper that numbavec/_kernel_numpy.py writes a NumPy
    function as (np.linalg.inv ...), captured in its place; else value."""
    from numbavec._kernel_numpy import FUNCTIONS

    try:
        return FUNCTIONS.get(value, value)
    except Exception:  # noqa: BLE001 - unhashable (or its hash raises): not one of them
        return value


class Refused:
    """What a kernel's capture holds for a value it cannot compile (a Numba
    jitclass): src/compiler/resolve.c reports its message where the
    kernel reads the name."""

    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message

    def __reduce__(self):
        return Refused, (self.message,)

    def __str__(self):
        return self.message

    __repr__ = __str__


def capture_function(pyfunc, src):
    """A capture of a function no Origin keeps (compile_ptx; tests): what
    it reads now."""
    return Capturer().function(id(pyfunc), pyfunc, pyfunc.__code__, src.funcdef, src.location,
                               pyfunc)


def origin_of(obj):
    """The Origin numbavec's C code keeps for obj (a ufunc, a cuda ufunc or
    gufunc), or None: never an attribute, so nothing rebinds it."""
    try:
        found = _core._origin_of(obj)
        return found if found is not None else _core._cuda_origin_of(obj)
    except Exception:  # noqa: BLE001 - not one of numbavec's objects
        return None


# -- the environment the compiler reads -----------------------------------------

class _Environment:
    """Makes the functions the compiler resolves names in, for a graph of
    Captured: each a function of the captured code over a globals dict
    (and closure cells) holding the captured values.  Each is made first
    and filled after, and each Captured has one Inline, so that cycles (a
    ufunc calling itself, device functions calling each other) are the
    same Inline objects, which the compiler's recursion check compares."""

    def __init__(self):
        self.unfilled = []

    def build(self, c):
        fn = self.function(c)
        while self.unfilled:
            self.fill(*self.unfilled.pop())
        return fn

    def function(self, c):
        if c._env is None:
            code = c.code
            cells = tuple(types.CellType() for _ in code.co_freevars)
            scope = {"__name__": c.module, "__builtins__": builtins}
            fn = types.FunctionType(code, scope, c.name, c.defaults, cells or None)
            fn.__kwdefaults__ = c.kwdefaults
            fn.__qualname__ = c.qualname
            c._env = fn
            self.unfilled.append((c, scope, cells))
        return c._env

    def fill(self, c, scope, cells):
        freevars = c.code.co_freevars
        for name, entry in c.names.items():
            value = self.value(entry)
            if value is _ABSENT:
                continue
            scope[name] = value
            if name in freevars:
                cells[freevars.index(name)].cell_contents = value

    def inline(self, c, loops):
        if c._inline is None:
            c._inline = _core.Inline(self.function(c), c.funcdef, c.location, loops,
                                     dispatch=bool(c.signatures))
        return c._inline

    def value(self, entry):
        kind = entry[0]
        if kind == VALUE:
            return entry[1]
        if kind == DEVICE:
            c = entry[1]
            return self.inline(c, c.signatures or None)
        if kind == UFUNC:
            # a lazy ufunc's loops are (): any types, lifted over arrays
            return self.inline(entry[1], entry[2] if entry[2] is not None else ())
        if kind in (MODULE, OBJECT):
            made = types.ModuleType(entry[1]) if kind == MODULE else _Namespace()
            raised = {}
            for attr, sub in entry[2].items():
                if sub[0] == RAISED:
                    raised[attr] = sub[1]
                    continue
                value = self.value(sub)
                if value is not _ABSENT:
                    setattr(made, attr, value)
            if raised:
                # read, the attribute raises again what it raised when captured
                made.__getattr__ = _Raiser(raised)
            return made
        return _ABSENT


_ABSENT = object()


class _Raiser:
    """A stand-in's __getattr__: the attributes whose reading raised."""

    __slots__ = ("raised",)

    def __init__(self, raised):
        self.raised = raised

    def __call__(self, name):
        if name in self.raised:
            raise self.raised[name]
        raise AttributeError(name)


class _Namespace:
    """An object read through its attributes, as the kernel read them."""

    def __getattr__(self, name):
        raiser = self.__dict__.get("__getattr__")
        if raiser is None:
            raise AttributeError(name)
        return raiser(name)


# -- the key ---------------------------------------------------------------------

def _describe_captured(c, seen):
    if id(c) in seen:
        return f"<recursive {c.qualname}>"
    seen = seen | {id(c)}
    parts = [c.text, f"defaults = {_describe_value(c.defaults)}",
             f"kwdefaults = {_describe_value(c.kwdefaults)}"]
    if c.signatures:
        parts.append(f"signatures = {', '.join(c.signatures)}")
    for name in sorted(c.names):
        parts.append(f"{name} = {_describe_entry(c.names[name], seen)}")
    return "\n".join(parts)


def _describe_entry(entry, seen):
    kind = entry[0]
    if kind == VALUE:
        return _describe_value(entry[1])
    if kind in (MODULE, OBJECT):
        attrs = ", ".join(f"{a}: {_describe_entry(e, seen)}" for a, e in sorted(entry[2].items()))
        return f"{kind} {entry[1]} {{{attrs}}}"
    if kind == DEVICE:
        return "jit {\n" + _describe_captured(entry[1], seen) + "\n}"
    if kind == UFUNC:
        recipe = entry[3]
        return (f"ufunc loops={entry[2]!r} {_describe_value(recipe.options())} {{\n"
                + _describe_captured(entry[1], seen) + "\n}")
    if kind == RAISED:
        return f"<raised {type(entry[1]).__qualname__}>"
    return f"<{kind}>"


def _describe_value(value):
    """A text that changes whenever code compiled with value could."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_describe_value(v) for v in value)
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        inner = ", ".join(f"{k!r}: {_describe_value(v)}" for k, v in sorted(value.items()))
        return f"dict({inner})"
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
        # the default repr's address differs in every process; a kernel can
        # use such an object only through its attributes, captured apart
        return f"{kind} instance"
    try:
        return f"{kind} {value!r}"
    except Exception:  # noqa: BLE001 - not a value a kernel can use
        return f"{kind} <no repr>"


# -- what a decorated object keeps -------------------------------------------------

class Recipe:
    """How a decorated object is made again: ``factory(*args, **kwargs)``."""

    __slots__ = ("factory", "args", "kwargs")

    def __init__(self, factory, args, kwargs):
        self.factory, self.args, self.kwargs = factory, tuple(args), dict(kwargs)

    def __reduce__(self):
        return Recipe, (self.factory, self.args, self.kwargs)

    def options(self):
        """What the factory compiles with (an inlined ufunc's body compiles
        with its caller's options, but they are keyed all the same)."""
        return {k: v for k, v in sorted(self.kwargs.items()) if k != "cache"}


class Origin:
    """What a decorated object was made from, and the capture its code
    compiles from (module docstring: when it is taken).

    The object's C code holds it (``_core._origin_of``), so no attribute of
    the object reaches it.  ``py_func``, ``code`` and ``src`` are those of
    decoration: the function, its code object and the parse the compiler
    reads, kept here rather than looked up again.  ``token`` names the
    object across processes (numbavec/_pickle.py).
    """

    __slots__ = ("recipe_", "py_func", "code", "src", "name", "qualname", "module", "frozen",
                 "token", "obj", "__weakref__")

    def __init__(self, factory, args, kwargs, pyfunc, src, frozen=None):
        self.recipe_ = Recipe(factory, args, kwargs)
        self.py_func, self.code, self.src = pyfunc, pyfunc.__code__, src
        self.name, self.module = pyfunc.__name__, pyfunc.__module__
        self.qualname = getattr(pyfunc, "__qualname__", pyfunc.__name__)
        self.frozen = frozen
        self.token = self.obj = None

    @property
    def factory(self):
        return self.recipe_.factory

    def recipe(self):
        return self.recipe_

    def eager(self):
        return bool(self.recipe_.args and self.recipe_.args[0])

    def captured_by(self, capturer, fix=True):
        """This function's Captured in capturer's graph: the fixed one, or
        captured now (and fixed, by pin, if the kernel capturing it compiles)."""
        if self.frozen is not None:
            return self.frozen
        first = id(self) not in capturer.done
        c = capturer.function(id(self), self.py_func, self.code, self.src.funcdef,
                              self.src.location, self)
        if first and fix:
            capturer.pins.append((self, c))
        return c

    def environment(self):
        """(capture, function the compiler resolves names in): what a
        compilation reads (src/compiler/driver.c asks before each)."""
        if self.frozen is not None:
            return self.frozen, self.frozen.env()
        capturer = Capturer()
        c = self.captured_by(capturer, fix=False)
        c.pins = tuple(capturer.pins)
        return c, c.env()

    def compiled(self, captured):
        """A signature compiled from captured: the first fixes it, and the
        ufuncs it inlined are fixed with what it read of them."""
        if self.frozen is None and captured is not None:
            self.fix(captured)

    def fix(self, captured):
        self.frozen = captured
        for origin, c in captured.pins:
            if origin.frozen is None:
                origin.frozen = c
        captured.pins = ()

    def freeze(self):
        """The capture, fixed now if no compilation fixed it (pickling)."""
        if self.frozen is None:
            c, _ = self.environment()
            self.fix(c)
        return self.frozen

    def loops(self, obj):
        """What inlining the ufunc types a call with: its loops (an eager
        ufunc), or None (a lazy one: the function typed with the call's types)."""
        if not self.eager():
            return None
        from numbavec.decorators import signature_text

        return tuple(signature_text(t) for t in obj.types)
