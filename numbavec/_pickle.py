"""Pickling what the decorators make, so that it travels to other processes.

By reference where the receiving process can find it by name: its module
is importable and its qualified name leads back to the object, as pickle
does for a function.  By value otherwise (defined in ``__main__``, in a
notebook, inside a function): the function's source (or, for a kernel
compiled from its bytecode, its marshalled code object, which the receiver
reads only if it runs the same Python version), the values of the
globals and closure variables it reads (modules by name, device functions
and numbavec ufuncs by the same rule), and the factory with its
signatures, layout and options.  The receiving process decorates the
function again, which compiles it or loads it from its cache, once per
process however often the object is unpickled there (dask sends a task's
function with every task).

A ``numpy.ufunc`` is pickled through ``copyreg``'s table, which pickle
consults before any ``__reduce__``: the reducer installed here answers for
numbavec's ufuncs and hands every other ufunc to NumPy's own.
"""
import builtins
import copyreg
import importlib
import importlib.util
import linecache
import marshal
import sys
import types
import uuid
import weakref

import numpy as np


class Recipe:
    """How a decorated object was made: ``factory(*args, **kwargs)(function)``.

    ``token`` names the object across processes: given when it is first
    pickled by value, and kept by the copy made from it, so that a
    process makes one copy however often the object reaches it.
    """

    __slots__ = ("factory", "args", "kwargs", "token", "obj", "frozen", "__weakref__")

    def __init__(self, factory, args, kwargs):
        self.factory, self.args, self.kwargs = factory, tuple(args), dict(kwargs)
        self.token = self.obj = self.frozen = None

    def freeze(self, obj, pyfunc, funcdef):
        """Keeps the values the names pyfunc reads have now, when its code is
        compiled (eager signatures): another process gets those, not what
        the names are bound to when it is pickled."""
        self.frozen = _frozen_names(obj, pyfunc, funcdef)


def _by_reference(obj):
    """Whether another process finds obj by its module and qualified name."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) \
            or module in ("__main__", "__mp_main__") or "<locals>" in qualname:
        return False
    found = sys.modules.get(module)
    try:
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:  # noqa: BLE001 - any failure to look it up means "not by name"
        return False
    return found is obj


def reduce_object(obj):
    """``__reduce__`` of whatever the decorators made (the cuda objects' too)."""
    recipe = getattr(obj, "_numbavec_recipe", None)
    if _by_reference(obj) or not isinstance(recipe, Recipe):
        return obj.__qualname__     # pickle looks the dotted name up in obj.__module__
    return _by_value(obj, obj.__wrapped__, recipe)


def reduce_device_function(device):
    if _by_reference(device):
        return device.__qualname__
    recipe = device.__dict__.setdefault("_numbavec_recipe", Recipe("jit", (), {}))
    return _by_value(device, device.py_func, recipe)


_numpy_reduce = copyreg.dispatch_table.get(np.ufunc)


def _reduce_ufunc(ufunc):
    if getattr(ufunc, "_numbavec_recipe", None) is None:
        return _numpy_reduce(ufunc) if _numpy_reduce is not None else ufunc.__name__
    return reduce_object(ufunc)


copyreg.pickle(np.ufunc, _reduce_ufunc)


def _by_value(obj, pyfunc, recipe):
    if recipe.token is None:
        recipe.token = uuid.uuid4().hex
        # what comes back here is this object again; the cycle obj -> recipe
        # -> obj is the collector's, so pickling it keeps nothing alive
        recipe.obj = obj
        _sent[recipe.token] = recipe
    return _rebuild, (recipe.token, recipe.factory, recipe.args, recipe.kwargs,
                      _function_state(obj, pyfunc))


_SELF = "self"          # the object being pickled (a recursive device function)
_MODULE = "module"      # a module, imported by name
_VALUE = "value"        # anything else, pickled as it is


def _function_state(obj, pyfunc):
    """(source, name, qualname, module, frozen names) of pyfunc: the text
    the compiler parsed, from its ``def`` line (decorators left out), and
    what the names it reads are bound to now, as the compiler reads them."""
    from numbavec._source import KernelSource

    src = KernelSource(pyfunc)
    funcdef, (_, first, lines, offset) = src.funcdef, src.location
    if src.from_bytecode:
        # no source: the code object itself travels, which only the same
        # Python version can read (checked by _function_from_bytecode)
        text = (_BYTECODE, importlib.util.MAGIC_NUMBER, marshal.dumps(pyfunc.__code__),
                "%d.%d" % sys.version_info[:2])
    elif pyfunc.__name__ == "<lambda>":
        import ast
        body = funcdef.body[0].value
        text = f"_numbavec_lambda = lambda {ast.unparse(funcdef.args)}: {ast.unparse(body)}\n"
    else:
        text = "".join(lines[max(0, funcdef.lineno + offset - first):])
        if text[:1] in (" ", "\t"):
            text = "if 1:\n" + text     # indentation kept: the cache key reads it
    recipe = getattr(obj, "_numbavec_recipe", None)
    frozen = recipe.frozen if isinstance(recipe, Recipe) and recipe.frozen is not None \
        else _frozen_names(obj, pyfunc, funcdef)
    return (text, pyfunc.__name__, pyfunc.__qualname__, pyfunc.__module__, frozen,
            pyfunc.__defaults__, pyfunc.__kwdefaults__)


def _frozen_names(obj, pyfunc, funcdef):
    """[(name, kind, value)] of the globals and closure variables pyfunc reads."""
    from numbavec.cache import _lookup, _referenced_names

    names, _ = _referenced_names(funcdef)
    frozen = []
    for name in sorted(names - set(pyfunc.__code__.co_varnames)):
        found, value = _lookup(pyfunc, name)
        if not found or (name not in pyfunc.__globals__ and name not in pyfunc.__code__.co_freevars):
            continue        # a builtin: the other process has it
        if value is obj or value is pyfunc:
            frozen.append((name, _SELF, None))
        elif isinstance(value, types.ModuleType):
            frozen.append((name, _MODULE, value.__name__))
        else:
            frozen.append((name, _VALUE, value))
    return frozen


_BYTECODE = "bytecode"  # a kernel without source, shipped as its marshalled code


def _function_from_bytecode(text, name, qualname, namespace, defaults):
    """The function of a kernel shipped as bytecode (its sender had no
    source), its closure cells holding the frozen values."""
    _, magic, data, version = text
    if magic != importlib.util.MAGIC_NUMBER:
        here = "%d.%d" % sys.version_info[:2]
        raise TypeError(
            f"cannot unpickle the numbavec kernel {qualname!r}: it has no source, so it "
            f"travels as Python {version} bytecode, which Python {here} cannot read (use "
            f"the same Python version on both sides, or define the kernel in a module)")
    code = marshal.loads(data)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"cannot unpickle the numbavec kernel {qualname!r}: not a code object")
    closure = tuple(types.CellType(namespace[v]) if v in namespace else types.CellType()
                    for v in code.co_freevars) or None
    return types.FunctionType(code, namespace, name, defaults, closure)


# token -> the object made from it in this process: kept, as a module keeps
# what it defines, so that a worker receiving it with every task compiles
# it once (one entry per object received)
_made = {}
# token -> the recipe of an object of this process pickled by value
_sent = weakref.WeakValueDictionary()


def _rebuild(token, factory, args, kwargs, state):
    obj = _made.get(token)
    if obj is None:
        sent = _sent.get(token)
        obj = sent.obj if sent is not None else None
    if obj is not None:
        return obj
    from numbavec import decorators

    text, name, qualname, module, frozen, defaults, kwdefaults = state
    namespace = {"__name__": module, "__builtins__": builtins}
    selves = []
    for key, kind, value in frozen:
        if kind == _MODULE:
            namespace[key] = importlib.import_module(value)
        elif kind == _SELF:
            selves.append(key)
        else:
            namespace[key] = value
    if isinstance(text, tuple) and text[:1] == (_BYTECODE,):
        pyfunc = _function_from_bytecode(text, name, qualname, namespace, defaults)
    else:
        filename = f"<numbavec: {module}.{qualname} {token[:12]}>"
        # inspect (and so numbavec's compiler) reads source from linecache, as
        # for any code without a file; an entry without mtime is never dropped
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - the sender's own kernel
        pyfunc = namespace["_numbavec_lambda" if name == "<lambda>" else name]
    pyfunc.__qualname__ = qualname
    pyfunc.__defaults__, pyfunc.__kwdefaults__ = defaults, kwdefaults
    make = getattr(decorators, factory)
    obj = make(pyfunc) if factory == "jit" else make(*args, **kwargs)(pyfunc)
    for key in selves:
        namespace[key] = obj
    if name != "<lambda>":
        namespace[name] = obj   # as a decorated def is bound in its module
    recipe = getattr(obj, "_numbavec_recipe", None)
    if recipe is None:      # a device function's is made when it is pickled
        recipe = obj._numbavec_recipe = Recipe(factory, args, kwargs)
    recipe.token = token
    _made[token] = obj
    return obj
