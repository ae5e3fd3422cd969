"""Pickling what the decorators make, so that it travels to other processes.

By reference where the receiving process can find it by name: its module
is importable and its qualified name (as decorated) leads back to the
object, as pickle does for a function.  By value otherwise (defined in
``__main__``, in a notebook, inside a function): the factory with its
signatures, layout and options, and the object's capture
(numbavec/_capture.py): the source text it compiled from and the values of
what it read, the device functions and ufuncs it inlines with theirs,
taken when its first signature compiled (or now, if none has), the same
graph its own compilations read.  A lazy ufunc also sends the loops it has
compiled and whether compilation is disabled.  The receiving process
decorates the text again with that capture fixed, which compiles it or
loads it from its cache, once per process however often the object is
unpickled there (dask sends a task's function with every task).

What is sent is read from the Origin the object's C code holds, never from
its attributes: rebinding ``f.__wrapped__``, or anything else in its
``__dict__``, changes nothing of it.

A ``numpy.ufunc`` is pickled through ``copyreg``'s table, which pickle
consults before any ``__reduce__``: the reducer installed here answers for
numbavec's ufuncs and hands every other ufunc to NumPy's own.
"""
import builtins
import copyreg
import importlib
import linecache
import sys
import types
import uuid
import weakref

import numpy as np

from numbavec import _capture
from numbavec._capture import Capturer, origin_of


def _by_reference(obj, module=None, qualname=None):
    """Whether another process finds obj by its module and qualified name
    (those it was decorated with, when given)."""
    module = module if module is not None else getattr(obj, "__module__", None)
    qualname = qualname if qualname is not None else getattr(obj, "__qualname__", None)
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


def _by_name(module, qualname):
    """What pickle's by-name reduction gives: a global looked up in module."""
    return _global, (module, qualname)


def _global(module, qualname):
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def reduce_object(obj):
    """``__reduce__`` of whatever the decorators made (the cuda objects' too)."""
    origin = origin_of(obj)
    if origin is None:
        return obj.__qualname__     # made below the decorators: pickle looks its name up
    if _by_reference(obj, origin.module, origin.qualname):
        return _by_name(origin.module, origin.qualname)
    captured = origin.freeze()
    loops, disabled = _lazy_state(obj, origin)
    return _rebuild, (_token(origin, obj), origin.recipe(), captured, loops, disabled)


def _lazy_state(obj, origin):
    """(loops compiled, disable_compile() called) of a lazy NumPy ufunc: the
    loops travel, so that a disabled one has the same ones there, and one
    add() gave another return type than the kernel's keeps it."""
    from numbavec import _core
    from numbavec.decorators import signature_text

    if origin.eager() or not isinstance(obj, np.ufunc):
        return (), False
    gufunc = origin.factory == "guvectorize"
    return (tuple(signature_text(t, gufunc) for t in obj.types),
            bool(_core._lazy_disabled(obj)))


def reduce_device_function(device, state):
    """A device function: by name, or its capture taken now (it has no
    compilation of its own to fix one)."""
    pyfunc = state.py_func
    if _by_reference(device, pyfunc.__module__, pyfunc.__qualname__):
        return _by_name(pyfunc.__module__, pyfunc.__qualname__)
    token = _device_tokens.get(device)
    if token is None:
        token = _device_tokens[device] = uuid.uuid4().hex
        _device_sent[token] = device
    return _rebuild_device, (token, state.capture(Capturer()))


_numpy_reduce = copyreg.dispatch_table.get(np.ufunc)


def _reduce_ufunc(ufunc):
    if origin_of(ufunc) is None:
        return _numpy_reduce(ufunc) if _numpy_reduce is not None else ufunc.__name__
    return reduce_object(ufunc)


copyreg.pickle(np.ufunc, _reduce_ufunc)


def _token(origin, obj):
    if origin.token is None:
        origin.token = uuid.uuid4().hex
        # what comes back here is this object again; the cycle obj -> origin
        # -> obj is the collector's, so pickling it keeps nothing alive
        origin.obj = obj
        _sent[origin.token] = origin
    return origin.token


# token -> the object made from it in this process: kept, as a module keeps
# what it defines, so that a worker receiving it with every task compiles
# it once (one entry per object received)
_made = {}
# token -> the Origin of an object of this process pickled by value
_sent = weakref.WeakValueDictionary()
# the same for device functions
_device_tokens = weakref.WeakKeyDictionary()
_device_sent = weakref.WeakValueDictionary()


def _rebuild(token, recipe, captured, loops, disabled):
    obj = _made.get(token)
    if obj is None:
        sent = _sent.get(token)
        obj = sent.obj if sent is not None else None
    if obj is not None:
        return obj
    obj = _Receiver().make(recipe, captured, token)
    for signature in loops:
        obj.add(signature)      # in the sender's order; one it has already is left as it is
    if disabled:
        obj.disable_compile()
    return obj


def _rebuild_device(token, captured):
    obj = _made.get(token, _device_sent.get(token))
    if obj is None:
        obj = _made[token] = _Receiver().device(captured)
    return obj


class _Receiver:
    """Makes a capture's functions again in this process: each text is
    compiled into a function of its own (its source registered with
    linecache, where inspect, and so the compiler, reads it), then the
    objects are made (each compiling from the capture, which does not need
    the functions' globals), then the functions' globals are filled, so
    that ``py_func`` calls what the sender's did."""

    def __init__(self):
        self.functions = {}     # id(Captured) -> (function, its globals)
        self.objects = {}       # id(Captured) -> the object made of it
        self.todo = []          # Captured whose globals are still to fill

    def make(self, recipe, captured, token):
        from numbavec import decorators

        self._materialize(captured)
        make = getattr(decorators, recipe.factory)(*recipe.args, **recipe.kwargs)
        obj = make(self.functions[id(captured)][0], captured=captured)
        origin_of(obj).token = token
        _made[token] = obj
        self.objects[id(captured)] = obj
        self._fill()
        return obj

    def device(self, captured):
        self._materialize(captured)
        obj = self._object((_capture.DEVICE, captured))
        self._fill()
        return obj

    def _materialize(self, c):
        """Every function of the graph from c compiled from its text, and
        the capture given its code and parse."""
        todo = [c]
        while todo:
            c = todo.pop()
            if id(c) in self.functions:
                continue
            self.functions[id(c)] = _function_of(c)
            self.todo.append(c)
            todo.extend(_callees(c.names.values()))

    def _fill(self):
        while self.todo:
            c = self.todo.pop()
            fn, scope = self.functions[id(c)]
            for name, entry in c.names.items():
                value = self._object(entry)
                if value is not _ABSENT:
                    scope[name] = value

    def _object(self, entry):
        """What a name of py_func is bound to here."""
        from numbavec import decorators

        kind = entry[0]
        if kind == _capture.VALUE:
            return entry[1]
        if kind in (_capture.DEVICE, _capture.UFUNC):
            c = entry[1]
            obj = self.objects.get(id(c))
            if obj is None:
                fn = self.functions[id(c)][0]
                if kind == _capture.DEVICE:
                    obj = decorators.DeviceFunction(fn, c.signatures)
                else:
                    recipe = entry[3]
                    obj = getattr(decorators, recipe.factory)(*recipe.args, **recipe.kwargs)(
                        fn, captured=c)
                self.objects[id(c)] = obj
            return obj
        if kind == _capture.MODULE:
            try:
                return importlib.import_module(entry[1])
            except ImportError:
                pass
        if kind in (_capture.MODULE, _capture.OBJECT):
            made = types.SimpleNamespace()
            for attr, sub in entry[2].items():
                value = self._object(sub)
                if value is not _ABSENT:
                    setattr(made, attr, value)
            return made
        return _ABSENT


_ABSENT = object()


class _Unbound(dict):
    """Where a capture's text is run: a name it reads there that is not a
    builtin is None."""

    def __missing__(self, name):
        if hasattr(builtins, name):
            raise KeyError(name)
        return None


def _callees(entries):
    for entry in entries:
        if entry[0] in (_capture.DEVICE, _capture.UFUNC):
            yield entry[1]
        elif entry[0] in (_capture.MODULE, _capture.OBJECT):
            yield from _callees(entry[2].values())


def _function_of(c):
    """(function, globals) compiled from c's text; c takes its code and parse."""
    from numbavec._source import KernelSource

    text = c.text
    if text[:1] in (" ", "\t"):
        text = "if 1:\n" + text     # an indented def: kept as it was parsed
    filename = f"<numbavec: {c.module}.{c.qualname} {uuid.uuid4().hex[:12]}>"
    # inspect (and so numbavec's compiler) reads source from linecache, as
    # for any code without a file; an entry without mtime is never dropped
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    scope = {"__name__": c.module, "__builtins__": builtins}
    # the def's defaults and annotations are evaluated as it runs: names the
    # body does not read are not captured, and the values are set below
    made = _Unbound()
    try:
        code = compile(text, filename, "exec")
    except SyntaxError:
        code = None
    if code is not None:
        exec(code, scope, made)  # noqa: S102 - the sender's own kernel
    fn = dict.get(made, "_lambda_" if c.name == "<lambda>" else c.name)
    if not isinstance(fn, types.FunctionType):
        # the sender had no source, and the def it rebuilt from the bytecode
        # holds a construct numbavec refuses, written as text that is not
        # Python (_capture.source_text): it could not compile it either
        from numbavec._core import TypingError

        raise TypingError(f"{c.module}.{c.qualname} cannot be made again from its pickle: its "
                          "source was not available where it was pickled, and what numbavec "
                          "rebuilt from its bytecode holds a construct kernels cannot use "
                          "(the sender could not compile it either)")
    fn.__qualname__ = c.qualname
    fn.__defaults__, fn.__kwdefaults__ = c.defaults, c.kwdefaults
    src = KernelSource(fn)
    c.code, c.funcdef, c.location = fn.__code__, src.funcdef, src.location
    return fn, scope
